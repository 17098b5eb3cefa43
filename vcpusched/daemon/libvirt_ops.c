/* SPDX-License-Identifier: ISC */
/*
 * libvirt_ops.c - libvirt domains in the daemon: the watcher's ops
 * (libvirt_watch.h, on the watcher's thread) and the hook's one message
 * (`hook`, on the control thread), both made of the core's calls. Never
 * calls libvirt: vCPU threads come from libvirt's status file, metadata
 * from the watcher or the hook, so a hook waiting on us cannot deadlock.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "handlers.h"
#include "libvirt/libvirt_vcpus.h"
#include "unattached.h"

/* The pool for metadata `m` among the daemon's pools (`current`: where it is now, or NULL). */
static int
pool_choose(struct daemon_ctx *d, const struct libvirt_meta *m, const char *current, char *pool,
            size_t len, char *err, size_t errlen)
{
    struct sched_pool_info info[SCHED_MAX_POOLS];
    struct libvirt_pool pools[SCHED_MAX_POOLS];
    unsigned int n = sched_pool_list(d->sched, info, SCHED_MAX_POOLS);

    for (unsigned int i = 0; i < n; i++)
        pools[i] = (struct libvirt_pool){info[i].name, info[i].policy};
    return libvirt_meta_choose_pool(m, pools, n, current, pool, len, err, errlen);
}

/*
 * Attach running domain `name` per metadata `m` (NULL: its running
 * definition's, from the status file), its threads from the status file:
 * the one thread-id look-up. 1 if the metadata has no <vs:sched>. A refusal
 * is listed as unattached with its reason; an attach or "not opted in"
 * takes the domain off that list.
 */
static int
lv_attach(struct daemon_ctx *d, const char *name, const struct libvirt_meta *m, char *err,
          size_t errlen)
{
    enum unattached_reason why = UNATTACHED_THREADS;
    struct libvirt_meta *own = calloc(1, sizeof(*own));
    pid_t *tids = calloc(VS_THREADS_MAX, sizeof(*tids));
    char pool[VS_NAME_SIZE];
    struct kv kv[VS_PARAMS_MAX];
    unsigned int n = 0;
    pid_t pid = 0;
    int r = 1;

    if (m != NULL && !m->present)
        goto out;
    r = -ENOMEM;
    if (own == NULL || tids == NULL) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    r = daemon_libvirt_threads(d, name, &pid, tids, &n, own, false, err, errlen);
    if (r < 0)
        goto out;
    m = m != NULL ? m : own;
    r = 1;
    if (!m->present)
        goto out;
    why = UNATTACHED_POOL;
    r = pool_choose(d, m, NULL, pool, sizeof(pool), err, errlen);
    if (r < 0)
        goto out;
    libvirt_meta_kv(m, kv);
    why = UNATTACHED_ATTACH;
    r = sched_attach(d->sched, name, pool, pid, tids, n, kv, m->nr_params, "libvirt", name, err,
                     errlen);
out:
    m = m != NULL ? m : own;
    /* EEXIST: attached meanwhile (the hook and the watcher race at a start). */
    if (r < 0 && r != -EEXIST && m != NULL && m->present)
        unattached_set(d->unattached, name, why, err, clock_mono_ns());
    else if (r >= 0 || r == -EEXIST)
        unattached_clear(d->unattached, name);
    free(own);
    free(tids);
    return r;
}

/* libvirt_watch_ops.sync: attach, set, move or detach per the metadata. */
static int
lv_sync(void *ctx, const char *name, const struct libvirt_meta *m, enum libvirt_sync mode,
        char *what, size_t whatlen, char *err, size_t errlen)
{
    struct daemon_ctx *d = ctx;
    char cur[VS_NAME_SIZE], pool[VS_NAME_SIZE];
    struct kv kv[VS_PARAMS_MAX];
    int r;

    what[0] = '\0';
    if (sched_dom_pool(d->sched, name, cur, sizeof(cur)) < 0) {
        if (!m->present) {
            unattached_clear(d->unattached, name);
            return 0;
        }
        r = lv_attach(d, name, m, err, errlen);
        if (r == 0)
            snprintf(what, whatlen, "attached");
        return r < 0 ? r : 0;
    }
    if (mode == LIBVIRT_SYNC_ATTACH_ONLY)
        return 0;
    if (!m->present) {
        snprintf(what, whatlen, "metadata removed: detached");
        return sched_detach(d->sched, name, err, errlen);
    }
    r = pool_choose(d, m, cur, pool, sizeof(pool), err, errlen);
    if (r < 0)
        return r;
    libvirt_meta_kv(m, kv);
    if (strcmp(pool, cur) != 0) {
        snprintf(what, whatlen, "moved from pool %s to pool %s", cur, pool);
        return sched_move(d->sched, name, pool, kv, m->nr_params, err, errlen);
    }
    snprintf(what, whatlen, "updated");
    return m->nr_params > 0 ? sched_set(d->sched, name, kv, m->nr_params, err, errlen) : 0;
}

static int
lv_stopped(void *ctx, const char *name, char *err, size_t errlen)
{
    struct daemon_ctx *d = ctx;

    unattached_clear(d->unattached, name);
    return sched_detach(d->sched, name, err, errlen);
}

/* libvirt_watch_ops.invalid: listed as unattached unless it runs managed (then kept as it was). */
static void
lv_invalid(void *ctx, const char *name, const char *err)
{
    struct daemon_ctx *d = ctx;
    char cur[VS_NAME_SIZE];

    if (sched_dom_pool(d->sched, name, cur, sizeof(cur)) < 0)
        unattached_set(d->unattached, name, UNATTACHED_METADATA, err, clock_mono_ns());
}

const struct libvirt_watch_ops daemon_libvirt_ops = {
    .sync = lv_sync,
    .stopped = lv_stopped,
    .invalid = lv_invalid,
};

int
daemon_libvirt_hook(struct daemon_ctx *d, const struct ctl_request *req, struct json_object **res,
                    char *err, size_t errlen)
{
    struct libvirt_meta *m = NULL;
    const char *done;
    int r;

    switch (req->hook_op) {
    case CTL_HOOK_STOPPED:
    case CTL_HOOK_RELEASE:
        unattached_clear(d->unattached, req->name);
        r = sched_detach(d->sched, req->name, err, errlen);
        done = r == 0 ? "detached" : "not attached";
        r = r == -ENOENT ? 0 : r;
        break;
    default:
        if (req->xml[0] != '\0') {
            m = calloc(1, sizeof(*m));
            r = m == NULL ? -ENOMEM
                          : libvirt_meta_parse_domain(req->xml, strlen(req->xml), m, err, errlen);
            if (r < 0) {
                if (r != -ENOMEM)
                    lv_invalid(d, req->name, err);
                break;
            }
        }
        if (sched_dom_pool(d->sched, req->name, (char[VS_NAME_SIZE]){0}, VS_NAME_SIZE) == 0) {
            done = "already attached";
            r = 0;
            break;
        }
        r = lv_attach(d, req->name, m, err, errlen);
        /* EEXIST: the watcher's Started event came first. */
        done = r == 1 ? "not opted in" : r == -EEXIST ? "already attached" : "attached";
        r = r == 1 || r == -EEXIST ? 0 : r;
        break;
    }
    free(m);
    if (r < 0)
        return r;
    *res = json_object_new_object();
    json_object_object_add(*res, "done", json_object_new_string(done));
    return 0;
}
