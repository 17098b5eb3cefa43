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

#define TOPOLOGY_LINE_MAX 4096 /* a sysfs CPU list of 1024 CPUs fits easily */

/* --- CPU lists ------------------------------------------------------- */

/* One decimal CPU number at *p (advanced past it). */
static int
parse_cpu(const char **p, const char *whole, int *out, char *err, size_t errlen)
{
    const char *s = *p;
    long v = 0;

    if (!isdigit((unsigned char)*s)) {
        snprintf(err, errlen, "cpu list '%.64s': expected a CPU number at '%.16s'", whole, s);
        return -EINVAL;
    }
    for (; isdigit((unsigned char)*s); s++) {
        v = v * 10 + (*s - '0');
        if (v >= TOPOLOGY_CPU_LIMIT) {
            while (isdigit((unsigned char)*s))
                s++;
            snprintf(err, errlen, "cpu list '%.64s': CPU %.*s is beyond %d", whole,
                     (int)(s - *p > 20 ? 20 : s - *p), *p, TOPOLOGY_CPU_LIMIT - 1);
            return -ERANGE;
        }
    }
    *p = s;
    *out = (int)v;
    return 0;
}

/* Parse one "a" or "a-b" at *p into [*lo, *hi]. */
static int
parse_range(const char **p, const char *whole, int *lo, int *hi, char *err, size_t errlen)
{
    int r = parse_cpu(p, whole, lo, err, errlen);

    if (r < 0)
        return r;
    *hi = *lo;
    if (**p != '-')
        return 0;
    (*p)++;
    r = parse_cpu(p, whole, hi, err, errlen);
    if (r < 0)
        return r;
    if (*hi < *lo) {
        snprintf(err, errlen, "cpu list '%.64s': range %d-%d is descending", whole, *lo, *hi);
        return -EINVAL;
    }
    return 0;
}

/* Mark [lo, hi] in the seen bitmap; a CPU given twice is an error. */
static int
mark_range(uint64_t *seen, int lo, int hi, unsigned int *count, const char *whole, char *err,
           size_t errlen)
{
    for (int c = lo; c <= hi; c++) {
        if (seen[c / 64] & (1ULL << (c % 64))) {
            snprintf(err, errlen, "cpu list '%.64s': CPU %d is listed twice", whole, c);
            return -EINVAL;
        }
        seen[c / 64] |= 1ULL << (c % 64);
        (*count)++;
    }
    return 0;
}

int
topology_parse_cpulist(const char *s, int *cpus, unsigned int max, unsigned int *n, char *err,
                       size_t errlen)
{
    uint64_t seen[TOPOLOGY_CPU_LIMIT / 64] = {0};
    size_t len = strlen(s);
    unsigned int count = 0;
    const char *p = s;
    char buf[TOPOLOGY_LINE_MAX];

    *n = 0;
    if (len >= sizeof(buf)) {
        snprintf(err, errlen, "cpu list is longer than %zu bytes", sizeof(buf) - 1);
        return -EINVAL;
    }
    memcpy(buf, s, len + 1);
    if (len > 0 && buf[len - 1] == '\n')
        buf[--len] = '\0'; /* as sysfs writes it */
    for (p = buf; *p != '\0';) {
        int lo, hi, r;

        r = parse_range(&p, buf, &lo, &hi, err, errlen);
        if (r == 0)
            r = mark_range(seen, lo, hi, &count, buf, err, errlen);
        if (r < 0)
            return r;
        if (*p == ',' && p[1] != '\0')
            p++;
        else if (*p != '\0') {
            snprintf(err, errlen, "cpu list '%.64s': unexpected '%.16s'", buf, p);
            return -EINVAL;
        }
    }
    if (count > max) {
        snprintf(err, errlen, "cpu list '%.64s': %u CPUs, at most %u allowed", buf, count, max);
        return -E2BIG;
    }
    for (int c = 0; c < TOPOLOGY_CPU_LIMIT; c++)
        if (seen[c / 64] & (1ULL << (c % 64)))
            cpus[(*n)++] = c;
    return 0;
}

char *
topology_format_cpulist(const int *cpus, unsigned int n, char *buf, size_t len)
{
    size_t off = 0;

    if (len == 0)
        return buf;
    buf[0] = '\0';
    for (unsigned int i = 0; i < n && off < len;) {
        unsigned int j = i;
        int w;

        while (j + 1 < n && cpus[j + 1] == cpus[j] + 1)
            j++;
        if (j == i)
            w = snprintf(buf + off, len - off, "%s%d", i ? "," : "", cpus[i]);
        else
            w = snprintf(buf + off, len - off, "%s%d-%d", i ? "," : "", cpus[i], cpus[j]);
        if (w < 0)
            break;
        off += (size_t)w;
        i = j + 1;
    }
    return buf;
}

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
online_at(const char *cpu_dir, int *cpus, unsigned int max, unsigned int *n, char *err,
          size_t errlen)
{
    char path[PATH_MAX], line[TOPOLOGY_LINE_MAX];
    int r;

    snprintf(path, sizeof(path), "%s/online", cpu_dir);
    r = read_line(path, line, sizeof(line), err, errlen);
    if (r < 0)
        return r;
    return topology_parse_cpulist(line, cpus, max, n, err, errlen);
}

int
topology_online_cpus(int *cpus, unsigned int max, unsigned int *n, char *err, size_t errlen)
{
    return online_at(TOPOLOGY_SYSFS_CPU, cpus, max, n, err, errlen);
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

static bool
is_listed(const int *cpus, unsigned int n, int cpu)
{
    for (unsigned int i = 0; i < n; i++)
        if (cpus[i] == cpu)
            return true;
    return false;
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
    int online[TOPOLOGY_CPU_LIMIT];
    unsigned int nr_online;
    int r = online_at(cpu_dir, online, TOPOLOGY_CPU_LIMIT, &nr_online, err, errlen);

    if (r < 0)
        return r;
    for (unsigned int i = 0; i < n; i++) {
        if (cpus[i] < 0 || !is_listed(online, nr_online, cpus[i])) {
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
