/* SPDX-License-Identifier: ISC */
/*
 * libvirt_vcpus.c - vCPU threads of a running libvirt domain from libvirt's
 * status file (/run/libvirt/qemu/NAME.xml, root-only, written before the
 * `started` hook runs), falling back to QEMU's thread names, which libvirt
 * always turns on (-name ...,debug-threads=on). Never calls libvirt.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libvirt_vcpus.h"

/* Read a whole file of at most LIBVIRT_XML_MAX bytes (malloc'd, NUL-terminated). */
static int
file_read(const char *path, char **out, size_t *len)
{
    size_t cap = 16384, n = 0;
    char *buf = malloc(cap + 1);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

    if (buf == NULL || fd < 0) {
        int e = buf == NULL ? ENOMEM : errno;

        free(buf);
        if (fd >= 0)
            close(fd);
        return -e;
    }
    for (;;) {
        ssize_t r;

        if (n == cap) {
            char *nb = cap >= LIBVIRT_XML_MAX ? NULL : realloc(buf, cap * 2 + 1);

            if (nb == NULL) {
                free(buf);
                close(fd);
                return cap >= LIBVIRT_XML_MAX ? -E2BIG : -ENOMEM;
            }
            buf = nb;
            cap *= 2;
        }
        r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int e = r < 0 ? errno : 0;

            close(fd);
            if (e != 0) {
                free(buf);
                return -e;
            }
            break;
        }
        n += (size_t)r;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

/* QEMU's pid from DIR/NAME.pid (when the status file is not usable). */
static int
pid_read(const char *dir, const char *name, pid_t *pid)
{
    char path[512], *buf, *end;
    size_t len;
    long v;
    int r;

    snprintf(path, sizeof(path), "%s/%s.pid", dir, name);
    if ((r = file_read(path, &buf, &len)) < 0)
        return r;
    v = strtol(buf, &end, 10);
    r = (v > 0 && v <= 4194304 && (*end == '\0' || *end == '\n')) ? 0 : -EINVAL;
    *pid = (pid_t)v;
    free(buf);
    return r;
}

/* vCPU index of a thread named "CPU n/TCG" or "CPU n/KVM"; -2 "ALL CPUs/TCG"; else -1. */
static long
comm_vcpu(pid_t pid, const char *tid)
{
    char path[128], comm[32] = "", accel[8];
    unsigned int idx;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)pid, tid);
    f = fopen(path, "re");
    if (f == NULL)
        return -1;
    if (fgets(comm, sizeof(comm), f) == NULL)
        comm[0] = '\0';
    fclose(f);
    comm[strcspn(comm, "\n")] = '\0';
    if (strcmp(comm, "ALL CPUs/TCG") == 0)
        return -2;
    if (sscanf(comm, "CPU %u/%3s", &idx, accel) == 2 &&
        (strcmp(accel, "TCG") == 0 || strcmp(accel, "KVM") == 0))
        return (long)idx;
    return -1;
}

/* Insert (idx, tid) into idxs/tids[0..*n) sorted by idx. */
static int
insert_sorted(long *idxs, pid_t *tids, unsigned int max, unsigned int *n, long idx, pid_t tid)
{
    unsigned int i = *n;

    if (*n == max)
        return -E2BIG;
    while (i > 0 && idxs[i - 1] > idx) {
        idxs[i] = idxs[i - 1];
        tids[i] = tids[i - 1];
        i--;
    }
    idxs[i] = idx;
    tids[i] = tid;
    (*n)++;
    return 0;
}

/* The vCPU threads of QEMU `pid` by name (see libvirt_vcpus_find). */
static int
comm_scan(pid_t pid, pid_t *tids, unsigned int max, unsigned int *n, char *err, size_t errlen)
{
    char path[64];
    long *idxs = calloc(max + 1, sizeof(*idxs));
    pid_t single = 0;
    struct dirent *de;
    int r = 0;
    DIR *d;

    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    d = opendir(path);
    if (idxs == NULL || d == NULL) {
        r = idxs == NULL ? -ENOMEM : -ESRCH;
        snprintf(err, errlen, "qemu pid %d: %s", (int)pid, strerror(-r));
        free(idxs);
        if (d != NULL)
            closedir(d);
        return r;
    }
    *n = 0;
    while (r == 0 && (de = readdir(d)) != NULL) {
        long idx = de->d_name[0] == '.' ? -1 : comm_vcpu(pid, de->d_name);

        if (idx == -2)
            single = (pid_t)atoi(de->d_name);
        else if (idx >= 0)
            r = insert_sorted(idxs, tids, max, n, idx, (pid_t)atoi(de->d_name));
    }
    closedir(d);
    free(idxs);
    if (r == 0 && *n == 0 && single > 0 && max > 0)
        tids[(*n)++] = single;
    if (r == 0 && *n == 0) {
        snprintf(err, errlen, "qemu pid %d: no thread named 'CPU n/TCG' or 'CPU n/KVM'", (int)pid);
        r = -ESRCH;
    }
    if (r == -E2BIG)
        snprintf(err, errlen, "qemu pid %d: more than %u vcpu threads", (int)pid, max);
    return r;
}

/* The status file into st; -ENOENT when the domain is not running. */
static int
status_load(const char *dir, const char *name, struct libvirt_status *st, char *err, size_t errlen)
{
    char path[512], *xml;
    size_t len;
    int r;

    snprintf(path, sizeof(path), "%s/%s.xml", dir, name);
    r = file_read(path, &xml, &len);
    if (r < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(-r));
        return r;
    }
    r = libvirt_meta_parse_status(xml, len, st, err, errlen);
    free(xml);
    return r;
}

int
libvirt_vcpus_find(const char *dir, const char *name, pid_t *pid, pid_t *tids, unsigned int max,
                   unsigned int *n, const char **how, struct libvirt_meta *meta, char *err,
                   size_t errlen)
{
    struct libvirt_status *st;
    int r;

    *n = 0;
    *pid = 0;
    *how = "status";
    if (!names_valid(name)) {
        snprintf(err, errlen, "libvirt: not a domain name vcpusched accepts");
        return -EINVAL;
    }
    dir = dir != NULL ? dir : LIBVIRT_RUN_DIR;
    st = calloc(1, sizeof(*st));
    if (st == NULL)
        return -ENOMEM;
    r = status_load(dir, name, st, err, errlen);
    if (meta != NULL)
        *meta = st->meta;
    if (r == 0 && st->nr_vcpus > max) {
        snprintf(err, errlen, "domain %s: more than %u vcpus", name, max);
        r = -E2BIG;
    } else if (r == 0) {
        *pid = st->pid;
        *n = st->nr_vcpus;
        memcpy(tids, st->tids, st->nr_vcpus * sizeof(*tids));
    } else if (r == -ESRCH || (r == -ENOENT && pid_read(dir, name, &st->pid) == 0)) {
        /* No ids in the status file, or no status file but a pid file. */
        *how = "comm";
        *pid = st->pid;
        r = comm_scan(st->pid, tids, max, n, err, errlen);
    }
    free(st);
    return r;
}
