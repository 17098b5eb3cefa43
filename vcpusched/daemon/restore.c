/* SPDX-License-Identifier: ISC */
/*
 * restore.c - taking up a predecessor's live record; see restore.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "host/discover.h"
#include "host/procid.h"
#include "policy/policy.h"
#include "libvirt/libvirt_meta.h"
#include "policy/bgclass.h"
#include "restore.h"

static void
restore_pools(struct daemon_ctx *ctx, const struct liverec *rec, char (*conf)[VS_NAME_SIZE],
              unsigned int n, struct restore_result *res)
{
    for (unsigned int i = 0; i < rec->nr_pools; i++) {
        const struct liverec_pool *p = &rec->pools[i];
        int hosts[CPUSET_MAX];
        unsigned int nh;
        char err[256];

        if (liverec_conf_has(conf, n, p->name)) {
            log_info("live record: pool %s: the configuration's now, not made from the record",
                     p->name);
            continue;
        }
        if (cpuset_to_array(&p->cpus, hosts, CPUSET_MAX, &nh) < 0 ||
            daemon_pool_create(ctx, p->name, hosts, nh, p->policy, p->params, p->nr_params, err,
                               sizeof(err)) < 0) {
            log_warnx("live record: pool %s (cpus %s, policy %s): not made again: %s", p->name,
                      p->cpus_text, p->policy, err);
            res->dropped++;
            continue;
        }
        log_info("live record: pool %s made again: policy %s on cpu(s) %s", p->name, p->policy,
                 p->cpus_text);
        res->pools++;
    }
}

/* The policy pool `name` runs, or NULL if there is no such pool. */
static const struct policy_ops *
pool_policy(struct daemon_ctx *ctx, const char *name)
{
    struct sched_pool_info info[SCHED_MAX_POOLS];
    unsigned int n = sched_pool_list(ctx->sched, info, SCHED_MAX_POOLS);

    for (unsigned int i = 0; i < n; i++)
        if (strcmp(info[i].name, name) == 0)
            return policy_find(info[i].policy);
    return NULL;
}

/* The record's parameters the policy (and the background class) knows, into kv. */
static size_t
known_params(const struct liverec_dom *rd, const struct policy_ops *ops, struct kv *kv)
{
    size_t k = 0;

    for (size_t i = 0; i < rd->nr_params; i++) {
        if (strcmp(rd->params[i].key, BGCLASS_KEY) == 0 ||
            (ops->dom_params != NULL &&
             policy_param_index(ops->dom_params, rd->params[i].key) >= 0))
            kv[k++] = rd->params[i];
        else
            log_warnx("live record: domain %s: %s=%s left out: pool %s runs %s, which has no "
                      "such parameter",
                      rd->name, rd->params[i].key, rd->params[i].val, rd->pool, ops->name);
    }
    return k;
}

/* Is process rd->pid still the one the record names? "" if so, else why not. */
static const char *
same_process(const struct liverec_dom *rd)
{
    struct procid now;

    if (procid_read(rd->pid, &now) < 0)
        return "it has exited";
    return procid_differs(&rd->ident, &now);
}

/* The threads to attach for a pid, tids or qmp entry, once its process is checked. */
static int
entry_threads(const struct liverec_dom *rd, pid_t *tids, unsigned int *n, char *err, size_t errlen)
{
    struct stat st;
    pid_t pid = rd->pid;
    int r;

    if (strcmp(rd->source, "pid") == 0)
        return discover_process(rd->pid, tids, VS_THREADS_MAX, n, err, errlen);
    if (strcmp(rd->source, "tids") == 0) {
        pid_t left[VS_THREADS_MAX];
        unsigned int k = 0;
        char path[64];

        /* The listed threads that are still the process's (one may have ended). */
        for (unsigned int i = 0; i < rd->nr_tids; i++) {
            snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)rd->pid, (int)rd->tids[i]);
            if (access(path, F_OK) == 0)
                left[k++] = rd->tids[i];
        }
        if (k == 0) {
            snprintf(err, errlen, "none of its threads is left");
            return -ESRCH;
        }
        return discover_tids(&pid, left, k, tids, VS_THREADS_MAX, n, err, errlen);
    }
    /* qmp: the very socket QEMU made, and QEMU at its other end. */
    if (stat(rd->origin, &st) < 0 || !S_ISSOCK(st.st_mode) || (uint64_t)st.st_dev != rd->qmp_dev ||
        (uint64_t)st.st_ino != rd->qmp_ino) {
        snprintf(err, errlen, "QMP socket %s is gone or another one", rd->origin);
        return -ESRCH;
    }
    r = discover_qmp(rd->origin, &pid, tids, VS_THREADS_MAX, n, err, errlen);
    if (r == 0 && pid != rd->pid) {
        snprintf(err, errlen, "QMP socket %s is served by process %d, not %d", rd->origin, (int)pid,
                 (int)rd->pid);
        r = -ESRCH;
    }
    return r;
}

/* Never pid 1, a kernel thread, the daemon or its guardian (as for any attach). */
static int
entry_allowed(struct daemon_ctx *ctx, pid_t pid, char *err, size_t errlen)
{
    struct discover_rules rules = {.daemon = getpid(), .guardian = ctx->guardian_pid};

    return discover_check_target(pid, false, &rules, err, errlen);
}

/*
 * A libvirt entry whose QEMU is the same: per its <vs:sched> element if it
 * has one, as the hook would attach it (the definition wins over the
 * record: metadata is declarative), else as recorded (`attach --libvirt`).
 * 1 when the element was applied.
 */
static int
libvirt_entry(struct daemon_ctx *ctx, const struct liverec_dom *rd, pid_t *tids, unsigned int *n,
              char *err, size_t errlen)
{
    struct libvirt_meta *meta = calloc(1, sizeof(*meta));
    pid_t pid = 0;
    const char *why;
    int r;

    r = meta == NULL
            ? -ENOMEM
            : daemon_libvirt_threads(ctx, rd->origin, &pid, tids, n, meta, true, err, errlen);
    if (r == 0 && pid != rd->pid) {
        snprintf(err, errlen, "libvirt domain %s runs in process %d now, not %d: it restarted",
                 rd->origin, (int)pid, (int)rd->pid);
        r = -ESRCH;
    } else if (r == 0 && (why = same_process(rd))[0] != '\0') {
        snprintf(err, errlen, "process %d: %s", (int)rd->pid, why);
        r = -ESRCH;
    }
    if (r == 0 && meta->present) {
        r = daemon_libvirt_attach(ctx, rd->origin, err, errlen);
        r = r < 0 ? r : 1;
    }
    free(meta);
    return r;
}

static int
restore_domain(struct daemon_ctx *ctx, const struct liverec_dom *rd, char *err, size_t errlen)
{
    const struct policy_ops *ops = pool_policy(ctx, rd->pool);
    pid_t *tids = calloc(VS_THREADS_MAX, sizeof(*tids));
    struct kv kv[VS_PARAMS_MAX];
    bool lv = strcmp(rd->source, "libvirt") == 0;
    const char *why;
    unsigned int n = 0;
    int r = 0;

    if (tids == NULL) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    if (ops == NULL) {
        snprintf(err, errlen, "pool %s is gone", rd->pool);
        r = -ENOENT;
    } else if (lv) {
        r = libvirt_entry(ctx, rd, tids, &n, err, errlen);
    } else if ((why = same_process(rd))[0] != '\0') {
        snprintf(err, errlen, "pid %d: %s (not the process attached)", (int)rd->pid, why);
        r = -ESRCH;
    } else {
        r = entry_threads(rd, tids, &n, err, errlen);
    }
    if (r == 0)
        r = entry_allowed(ctx, rd->pid, err, errlen);
    if (r == 0) {
        size_t nkv = known_params(rd, ops, kv);

        r = sched_attach(ctx->sched, rd->name, rd->pool, rd->pid, tids, n, kv, nkv, rd->source,
                         rd->origin[0] != '\0' ? rd->origin : NULL, err, errlen);
    }
    free(tids);
    return r;
}

/* The parameters as a log line: "weight=512 class=background". */
static const char *
params_text(const struct liverec_dom *rd, char *buf, size_t len)
{
    size_t k = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < rd->nr_params && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%s=%s", i ? " " : "", rd->params[i].key,
                              rd->params[i].val);
    return rd->nr_params ? buf : "defaults";
}

void
restore_run(struct daemon_ctx *ctx, const struct liverec *rec, char (*conf)[VS_NAME_SIZE],
            unsigned int n, struct restore_result *res)
{
    char boot[PROCID_BOOT_ID_SIZE] = "";

    memset(res, 0, sizeof(*res));
    if (procid_boot_id(boot, sizeof(boot)) < 0 || strcmp(boot, rec->boot_id) != 0) {
        log_warnx("live record: written in another boot (%s): nothing taken up from it",
                  rec->boot_id);
        res->dropped = rec->nr_pools + rec->nr_doms;
        return;
    }
    restore_pools(ctx, rec, conf, n, res);
    for (unsigned int i = 0; i < rec->nr_doms; i++) {
        const struct liverec_dom *rd = &rec->doms[i];
        char err[512] = "", params[512];
        int r = restore_domain(ctx, rd, err, sizeof(err));

        if (r < 0) {
            log_warnx("live record: domain %s (%s%s%s, pid %d): not attached again: %s", rd->name,
                      rd->source, rd->origin[0] ? " " : "", rd->origin, (int)rd->pid, err);
            res->dropped++;
        } else if (r == 1) {
            log_info("live record: domain %s: the setting its libvirt definition declares applied",
                     rd->origin);
            res->domains++;
        } else {
            log_info("live record: domain %s (%s%s%s, pid %d) attached again to pool %s with %s",
                     rd->name, rd->source, rd->origin[0] ? " " : "", rd->origin, (int)rd->pid,
                     rd->pool, params_text(rd, params, sizeof(params)));
            res->domains++;
        }
    }
}
