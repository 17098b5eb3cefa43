/* SPDX-License-Identifier: ISC */
/*
 * housekeeping.h - the CPUs the daemon leaves to the host when a pool
 * does not name its CPUs (pure; unit-tested on described topologies).
 *
 * The rule: in each NUMA node, its first ceil(n/8) online CPUs (n: the
 * node's online CPUs), at least one, together with their SMT siblings
 * unless that would leave nothing to manage; every other CPU is managed.
 * So the host keeps about an eighth of every node, wherever its emulator
 * and I/O threads, vhost workers, interrupts and the daemon's own control
 * thread run: 1 CPU of 2 to 8 (CPU 0 on a small host), 8 of 64, 16 of 128,
 * and a CPU near each node's memory. The packaged service never relies on
 * it: its configuration must name the managed CPUs (vcpuschedd.conf(5)).
 */
#ifndef VCPUSCHED_HOUSEKEEPING_H
#define VCPUSCHED_HOUSEKEEPING_H

#include "common/cpuset.h"
#include "host/topology.h"

/* One CPU in this many, per NUMA node, stays with the host. */
#define HOUSEKEEPING_ONE_IN 8

/*
 * The default housekeeping CPUs of a host whose online CPUs are
 * cpus[0..n) (host CPU, core, package, node) into *hk. Returns how many
 * CPUs that leaves to manage (0 with a single online CPU).
 */
unsigned int housekeeping_default(const struct policy_cpu *cpus, unsigned int n, struct cpuset *hk);

#endif /* VCPUSCHED_HOUSEKEEPING_H */
