/* SPDX-License-Identifier: ISC */
/*
 * topology.h - host CPU topology: the host's online CPUs and the
 * description of pool CPUs (core, package, NUMA node) that policies
 * arrange their runqueues from. Reads sysfs and asks
 * libnuma; without libnuma, or where it says NUMA is unavailable, every
 * CPU is on node 0. Never logs: errors come back with a message.
 */
#ifndef VCPUSCHED_TOPOLOGY_H
#define VCPUSCHED_TOPOLOGY_H

#include <stddef.h>

#include "common/cpuset.h"
#include "policy/policy.h"

/* Where the kernel describes CPUs; tests pass a directory of their own. */
#define TOPOLOGY_SYSFS_CPU "/sys/devices/system/cpu"

/* The host's online CPUs (sysfs "online"). */
int topology_online_cpus(struct cpuset *out, char *err, size_t errlen);

/*
 * Describe host CPUs cpus[0..n) as out[0..n): core id and package id from
 * sysfs topology, NUMA node from libnuma. Fails with -ENOENT if a CPU does
 * not exist or is offline, -EIO if its topology cannot be read.
 */
int topology_describe(const int *cpus, unsigned int n, struct policy_cpu *out, char *err,
                      size_t errlen);

/*
 * The same against another sysfs CPU directory (a test seam): "online",
 * "cpuN/topology/{core_id,physical_package_id}", and the node from the
 * "cpuN/nodeK" entry the kernel creates (0 if there is none).
 */
int topology_describe_at(const char *cpu_dir, const int *cpus, unsigned int n,
                         struct policy_cpu *out, char *err, size_t errlen);

#endif /* VCPUSCHED_TOPOLOGY_H */
