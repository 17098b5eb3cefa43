/* SPDX-License-Identifier: ISC */
/*
 * topology.h - host CPU topology: kernel CPU lists ("1-3,5"), the host's
 * online CPUs, and the description of pool CPUs (core, package, NUMA
 * node) that policies arrange their runqueues from. Reads sysfs and asks
 * libnuma; without libnuma, or where it says NUMA is unavailable, every
 * CPU is on node 0. Never logs: errors come back with a message.
 */
#ifndef VCPUSCHED_TOPOLOGY_H
#define VCPUSCHED_TOPOLOGY_H

#include <stddef.h>

#include "policy/policy.h"

/* Where the kernel describes CPUs; tests pass a directory of their own. */
#define TOPOLOGY_SYSFS_CPU "/sys/devices/system/cpu"
/* Highest CPU number + 1 accepted: the size of the daemon's cpu_set_t. */
#define TOPOLOGY_CPU_LIMIT 1024

/*
 * Parse a kernel CPU list ("1", "0-3,5,7-8"; a trailing newline, as sysfs
 * writes it, is allowed; an empty list is valid) into cpus[0..*n), sorted
 * ascending. Strict: only decimal numbers, ',' and ascending 'a-b' ranges,
 * no blanks, no stride ("0-7:2/4"), no CPU twice. Errors: -EINVAL
 * (malformed, descending range, duplicate), -ERANGE (a CPU number >=
 * TOPOLOGY_CPU_LIMIT), -E2BIG (more than `max` CPUs); err says which.
 */
int topology_parse_cpulist(const char *s, int *cpus, unsigned int max, unsigned int *n, char *err,
                           size_t errlen);

/* Write cpus[0..n) (ascending) as a kernel CPU list; returns buf. */
char *topology_format_cpulist(const int *cpus, unsigned int n, char *buf, size_t len);

/* The host's online CPUs (sysfs "online"), as topology_parse_cpulist. */
int topology_online_cpus(int *cpus, unsigned int max, unsigned int *n, char *err, size_t errlen);

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
