/* SPDX-License-Identifier: ISC */
/*
 * liverec.h - the live record's format: what a restarted daemon takes up
 * again (docs/lifecycle.md), as JSON, parsed strictly. Pure: text in,
 * structures out (livefile.c reads and writes the file; restore.c acts on
 * it).
 *
 *   {"vcpusched_live": 1, "boot_id": "...", "written_by": "0.1.0+git...",
 *    "pools": [{"name": "p2", "cpus": "2-3", "policy": "credit2",
 *               "params": {"ratelimit_us": "500"}}],
 *    "domains": [{"name": "web1", "source": "qmp", "origin": "/run/vm/web1.qmp",
 *                 "pid": 4242, "start_time": 123456, "exe_dev": 2049, "exe_ino": 1234,
 *                 "qmp_dev": 25, "qmp_ino": 5678, "pool": "main",
 *                 "params": {"weight": "512", "class": "background"}}]}
 *
 * `pools` are the pools made at run time (the configuration makes the
 * others); `domains` every attached domain: how it was found (`source`:
 * pid, tids with `tids`, qmp with the socket `origin` and its device and
 * inode, libvirt with the libvirt domain `origin`), who its process was
 * (pid, start time, executable), its pool and its parameters as given.
 * Anything else (an unknown key, a wrong type, a value out of range, a
 * name twice, another version) refuses the whole record with a message
 * naming the field: a record that is not exactly what a daemon writes is
 * not acted on.
 */
#ifndef VCPUSCHED_LIVEREC_H
#define VCPUSCHED_LIVEREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/cpuset.h"
#include "common/kv.h"
#include "common/limits.h"
#include "host/procid.h"

#define LIVEREC_VERSION   1
#define LIVEREC_MAX_BYTES (16 * 1024 * 1024) /* 4096 domains of 16 long parameters fit */
#define LIVEREC_MAX_POOLS 16                 /* SCHED_MAX_POOLS */
#define LIVEREC_MAX_DOMS  4096               /* STATEFILE_SLOTS: one thread each at least */

struct json_object;

struct liverec_pool {
    const char *name;
    const char *cpus_text;
    struct cpuset cpus;
    const char *policy;
    struct kv params[VS_PARAMS_MAX];
    size_t nr_params;
};

struct liverec_dom {
    const char *name;
    const char *source; /* pid, tids, qmp, libvirt */
    const char *origin; /* qmp: the socket; libvirt: the domain; else "" */
    pid_t pid;
    struct procid ident;
    uint64_t qmp_dev, qmp_ino; /* qmp: the socket's */
    pid_t tids[VS_THREADS_MAX];
    unsigned int nr_tids; /* tids only */
    const char *pool;
    struct kv params[VS_PARAMS_MAX];
    size_t nr_params;
};

struct liverec {
    struct json_object *root; /* the strings above point into it */
    char boot_id[PROCID_BOOT_ID_SIZE];
    const char *written_by; /* the daemon's version ("" if absent) */
    struct liverec_pool *pools;
    unsigned int nr_pools;
    struct liverec_dom *doms;
    unsigned int nr_doms;
};

/*
 * Parse text[0..len) into *rec (liverec_free it). -EINVAL (or -EPROTO for
 * what is not JSON, -ENOTSUP for another version, -ENOMEM) with a message
 * naming the first bad field, and *rec empty.
 */
int liverec_parse(const char *text, size_t len, struct liverec *rec, char *err, size_t errlen);
void liverec_free(struct liverec *rec);
/* Whether `name` is a configured pool, conf[0..n): the configuration's, never the record's. */
bool liverec_conf_has(char (*conf)[VS_NAME_SIZE], unsigned int n, const char *name);

#endif /* VCPUSCHED_LIVEREC_H */
