/* SPDX-License-Identifier: ISC */
/*
 * topology.c - kernel CPU lists, online CPUs and the topology of pool
 * CPUs, from sysfs and libnuma; see topology.h.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef VCPUSCHED_HAVE_LIBNUMA
#include <numa.h>
#endif

#include "topology.h"

#define TOPOLOGY_LINE_MAX CPULIST_TEXT_MAX

/* --- sysfs ----------------------------------------------------------- */

/* Read the first line of a small file into buf (newline kept). */
static int
read_line(const char *path, char *buf, size_t len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    int saved;

    if (f == NULL) {
        saved = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(saved));
        return -saved;
    }
    if (fgets(buf, (int)len, f) == NULL) {
        saved = ferror(f) ? EIO : ENODATA;
        fclose(f);
        snprintf(err, errlen, "%s: cannot read", path);
        return -saved;
    }
    fclose(f);
    return 0;
}

/* A file holding one (possibly negative) decimal number. */
static int
read_int(const char *path, int *out, char *err, size_t errlen)
{
    char buf[64], *end;
    long v;
    int r = read_line(path, buf, sizeof(buf), err, errlen);

    if (r < 0)
        return -EIO;
    errno = 0;
    v = strtol(buf, &end, 10);
    if (end == buf || (*end != '\n' && *end != '\0') || errno != 0 || v < INT_MIN || v > INT_MAX) {
        snprintf(err, errlen, "%s: '%.20s' is not a number", path, buf);
        return -EIO;
    }
    *out = (int)v;
    return 0;
}

static int
online_at(const char *cpu_dir, struct cpuset *out, char *err, size_t errlen)
{
    char path[PATH_MAX], line[TOPOLOGY_LINE_MAX], msg[128];
    int r;

    snprintf(path, sizeof(path), "%s/online", cpu_dir);
    r = read_line(path, line, sizeof(line), err, errlen);
    if (r < 0)
        return r;
    r = cpulist_parse(line, out, msg, sizeof(msg));
    if (r < 0)
        snprintf(err, errlen, "%s: %s", path, msg);
    return r;
}

int
topology_online_cpus(struct cpuset *out, char *err, size_t errlen)
{
    return online_at(TOPOLOGY_SYSFS_CPU, out, err, errlen);
}

/* Node of `cpu` from libnuma; node 0 when libnuma is absent or says no. */
static int
node_of_cpu_numa(int cpu)
{
#ifdef VCPUSCHED_HAVE_LIBNUMA
    if (numa_available() >= 0) {
        int node = numa_node_of_cpu(cpu);

        return node >= 0 ? node : 0;
    }
#endif
    (void)cpu;
    return 0;
}

/* Node of `cpu` from the "nodeK" entry of its sysfs directory, else 0. */
static int
node_of_cpu_dir(const char *cpu_dir, int cpu)
{
    char path[PATH_MAX];
    struct dirent *e;
    int node = 0;
    DIR *dir;

    snprintf(path, sizeof(path), "%s/cpu%d", cpu_dir, cpu);
    dir = opendir(path);
    if (dir == NULL)
        return 0;
    while ((e = readdir(dir)) != NULL) {
        char *end;
        long k;

        if (strncmp(e->d_name, "node", 4) != 0 || !isdigit((unsigned char)e->d_name[4]))
            continue;
        k = strtol(e->d_name + 4, &end, 10);
        if (*end == '\0' && k >= 0 && k <= INT_MAX) {
            node = (int)k;
            break;
        }
    }
    closedir(dir);
    return node;
}

/* Core and package of one online CPU. */
static int
describe_one(const char *cpu_dir, int cpu, struct policy_cpu *out, char *err, size_t errlen)
{
    char path[PATH_MAX];

    out->cpu = cpu;
    snprintf(path, sizeof(path), "%s/cpu%d/topology/core_id", cpu_dir, cpu);
    if (read_int(path, &out->core, err, errlen) < 0)
        return -EIO;
    snprintf(path, sizeof(path), "%s/cpu%d/topology/physical_package_id", cpu_dir, cpu);
    if (read_int(path, &out->socket, err, errlen) < 0)
        return -EIO;
    return 0;
}

static int
describe(const char *cpu_dir, bool numa, const int *cpus, unsigned int n, struct policy_cpu *out,
         char *err, size_t errlen)
{
    struct cpuset online;
    int r = online_at(cpu_dir, &online, err, errlen);

    if (r < 0)
        return r;
    for (unsigned int i = 0; i < n; i++) {
        if (cpus[i] < 0 || !cpuset_has(&online, (unsigned int)cpus[i])) {
            snprintf(err, errlen, "cpu %d does not exist or is offline", cpus[i]);
            return -ENOENT;
        }
        r = describe_one(cpu_dir, cpus[i], &out[i], err, errlen);
        if (r < 0)
            return r;
        out[i].node = numa ? node_of_cpu_numa(cpus[i]) : node_of_cpu_dir(cpu_dir, cpus[i]);
    }
    return 0;
}

int
topology_describe(const int *cpus, unsigned int n, struct policy_cpu *out, char *err, size_t errlen)
{
    return describe(TOPOLOGY_SYSFS_CPU, true, cpus, n, out, err, errlen);
}

int
topology_describe_at(const char *cpu_dir, const int *cpus, unsigned int n, struct policy_cpu *out,
                     char *err, size_t errlen)
{
    return describe(cpu_dir, false, cpus, n, out, err, errlen);
}
