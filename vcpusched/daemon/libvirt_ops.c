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
#include "common/log.h"
#include "libvirt/libvirt_vcpus.h"
#include "policy/bgclass.h"
#include "unattached.h"

/* A domain's whole setting in one pool, from its metadata. */
struct lv_setting {
    char pool[VS_NAME_SIZE];
    char note[256]; /* the policy named is not the pool's: said, with what was left out */
    struct kv kv[VS_PARAMS_MAX];
    size_t n;
    char defaults[VS_PARAMS_MAX][24]; /* the values of defaulted keys */
};

static bool
setting_has(const struct lv_setting *st, const char *key)
{
    for (size_t i = 0; i < st->n; i++)
        if (strcmp(st->kv[i].key, key) == 0)
            return true;
    return false;
}

static int
setting_add(struct lv_setting *st, const char *key, const char *val, char *err, size_t errlen)
{
    if (st->n >= VS_PARAMS_MAX) {
        snprintf(err, errlen, "more than %d parameters", VS_PARAMS_MAX);
        return -E2BIG;
    }
    st->kv[st->n++] = (struct kv){key, val};
    return 0;
}

/* Each key of `schema` the setting lacks, at its default (free text has none). */
static int
setting_defaults(struct lv_setting *st, const struct policy_param *schema, char *err, size_t errlen)
{
    for (const struct policy_param *p = schema; p != NULL && p->name != NULL; p++) {
        char *v;

        if (p->type == POLICY_PARAM_STR || setting_has(st, p->name))
            continue;
        if (st->n >= VS_PARAMS_MAX)
            return setting_add(st, p->name, "", err, errlen); /* -E2BIG, said */
        v = st->defaults[st->n]; /* one slot per kv entry: never shared */
        if (p->type == POLICY_PARAM_BOOL)
            snprintf(v, sizeof(st->defaults[0]), "%s", p->def ? "on" : "off");
        else
            snprintf(v, sizeof(st->defaults[0]), "%lld", (long long)p->def);
        if (setting_add(st, p->name, v, err, errlen) < 0)
            return -E2BIG;
    }
    return 0;
}

/*
 * Metadata `m` as the domain's whole setting (docs/libvirt.md, metadata is
 * declarative): the pool (libvirt_meta_choose_pool; `current`: where it is
 * now, or NULL), the parameters the element gives and, for each one of the
 * pool's policy it omits, the policy's default, and the class foreground
 * unless given. When the pool runs another policy than the one named, keys
 * its policy does not know are left out, as the note says, rather than
 * refused: a pool that changed policy never leaves a domain unmanaged.
 */
static int
lv_setting(struct daemon_ctx *d, const struct libvirt_meta *m, const char *current,
           struct lv_setting *st, char *err, size_t errlen)
{
    struct sched_pool_info info[SCHED_MAX_POOLS];
    struct libvirt_pool pools[SCHED_MAX_POOLS];
    unsigned int np = sched_pool_list(d->sched, info, SCHED_MAX_POOLS);
    const struct policy_ops *ops = NULL;
    size_t left = 0;
    int r;

    for (unsigned int i = 0; i < np; i++)
        pools[i] = (struct libvirt_pool){info[i].name, info[i].policy};
    r = libvirt_meta_choose_pool(m, pools, np, current, st->pool, sizeof(st->pool), st->note,
                                 sizeof(st->note));
    if (r < 0) {
        snprintf(err, errlen, "%s", st->note);
        return r;
    }
    for (unsigned int i = 0; i < np; i++)
        if (strcmp(info[i].name, st->pool) == 0)
            ops = policy_find(info[i].policy);
    st->n = 0;
    for (size_t i = 0; i < m->nr_params; i++) {
        bool known = strcmp(m->keys[i], BGCLASS_KEY) == 0 ||
                     (ops != NULL && ops->dom_params != NULL &&
                      policy_param_index(ops->dom_params, m->keys[i]) >= 0);

        if (r == 1 && !known) {
            left +=
                (size_t)snprintf(st->note + strlen(st->note), sizeof(st->note) - strlen(st->note),
                                 "%s%s", left ? " " : "; left out: ", m->keys[i]);
            continue;
        }
        if (setting_add(st, m->keys[i], m->vals[i], err, errlen) < 0)
            return -E2BIG;
    }
    if (setting_defaults(st, ops != NULL ? ops->dom_params : NULL, err, errlen) < 0)
        return -E2BIG;
    if (!setting_has(st, BGCLASS_KEY))
        return setting_add(st, BGCLASS_KEY, "foreground", err, errlen);
    return 0;
}

/* The note of a setting whose pool runs another policy than the one named. */
static void
lv_note(const char *name, const struct lv_setting *st)
{
    if (st->note[0] != '\0')
        log_info("libvirt domain %s: %s", name, st->note);
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
    struct lv_setting *st = calloc(1, sizeof(*st));
    unsigned int n = 0;
    pid_t pid = 0;
    int r = 1;

    if (m != NULL && !m->present)
        goto out;
    r = -ENOMEM;
    if (own == NULL || tids == NULL || st == NULL) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    r = daemon_libvirt_threads(d, name, &pid, tids, &n, own, false, err, errlen);
    m = m != NULL ? m : own;
    if (r < 0)
        goto out;
    r = 1;
    if (!m->present)
        goto out;
    why = UNATTACHED_POOL;
    r = lv_setting(d, m, NULL, st, err, errlen);
    if (r < 0)
        goto out;
    why = UNATTACHED_ATTACH;
    r = sched_attach(d->sched, name, st->pool, pid, tids, n, st->kv, st->n, "libvirt", name, err,
                     errlen);
    if (r == 0)
        lv_note(name, st);
out:
    /* m: the metadata that applies (NULL when out of memory before the look-up). */
    m = m != NULL ? m : own;
    /* EEXIST: attached meanwhile (the hook and the watcher race at a start). */
    if (r < 0 && r != -EEXIST && m != NULL && m->present)
        unattached_set(d->unattached, name, why, err, clock_mono_ns());
    else if (r >= 0 || r == -EEXIST)
        unattached_clear(d->unattached, name);
    free(own);
    free(tids);
    free(st);
    return r;
}

/* libvirt_watch_ops.sync: attach, set, move or detach per the metadata. */
static int
lv_sync(void *ctx, const char *name, const struct libvirt_meta *m, enum libvirt_sync mode,
        char *what, size_t whatlen, char *err, size_t errlen)
{
    struct daemon_ctx *d = ctx;
    char cur[VS_NAME_SIZE];
    struct lv_setting st;
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
    r = lv_setting(d, m, cur, &st, err, errlen);
    if (r < 0)
        return r;
    if (strcmp(st.pool, cur) != 0) {
        snprintf(what, whatlen, "moved from pool %s to pool %s", cur, st.pool);
        r = sched_move(d->sched, name, st.pool, st.kv, st.n, err, errlen);
    } else {
        snprintf(what, whatlen, "updated");
        r = sched_set(d->sched, name, st.kv, st.n, err, errlen);
    }
    if (r == 0)
        lv_note(name, &st);
    return r;
}

int
daemon_libvirt_attach(struct daemon_ctx *d, const char *name, char *err, size_t errlen)
{
    return lv_attach(d, name, NULL, err, errlen);
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
    /* Said here too: a hook that gave up waiting (HOOK_TIMEOUT_MS) does not say it. */
    log_info("libvirt hook: domain %s %s: %s", req->name, ctl_hook_op_name(req->hook_op), done);
    *res = json_object_new_object();
    json_object_object_add(*res, "done", json_object_new_string(done));
    return 0;
}
