/* SPDX-License-Identifier: ISC */
/*
 * reload.c - see reload.h. Pools are compared with what runs (the
 * core's own view), not with the file as last read, so that a reload
 * also undoes what `vcpuschedctl pool set` changed on a pool the file
 * names.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "common/kv.h"
#include "common/log.h"
#include "reload.h"

/* Settings that only take effect at start-up, compared byte for byte. */
#define RESTART_KEY(name, field)                                                                   \
    {                                                                                              \
        name, offsetof(struct config, field), sizeof(((struct config *)0)->field)                  \
    }
static const struct restart_key {
    const char *name;
    size_t off, len;
} restart_keys[] = {
    RESTART_KEY("socket", socket),
    RESTART_KEY("group", group),
    RESTART_KEY("state", state),
    RESTART_KEY("pidfile", pidfile),
    RESTART_KEY("pattern", pattern),
    RESTART_KEY("dispatcher-cpu", dedicated_cpu),
    RESTART_KEY("priority-base", prio_base),
    RESTART_KEY("rt-runtime-us", rt_runtime_set),
    RESTART_KEY("rt-runtime-us", rt_runtime_us),
    RESTART_KEY("rt-runtime-unsafe", rt_runtime_unsafe),
    RESTART_KEY("events", events),
    RESTART_KEY("rt-cgroup", move_rt_cgroup),
    RESTART_KEY("park", park),
    RESTART_KEY("proc-poll-us", proc_poll_us),
    RESTART_KEY("libvirt", libvirt),
    RESTART_KEY("metrics-file", metrics_file),
    RESTART_KEY("metrics-period", metrics_period_s),
    RESTART_KEY("watchdog-ms", watchdog_ms),
};

static void
restart_keys_check(const struct config *a, const struct config *b, struct reload_result *res)
{
    const char *last = "";

    for (size_t i = 0; i < sizeof(restart_keys) / sizeof(restart_keys[0]); i++) {
        const struct restart_key *k = &restart_keys[i];

        if (memcmp((const char *)a + k->off, (const char *)b + k->off, k->len) == 0 ||
            strcmp(k->name, last) == 0)
            continue;
        log_warnx("reload: %s changed: not applied, it takes effect at the next restart", k->name);
        res->refused++;
        last = k->name;
    }
}

/* The running pool called `name` in sched_json_pools' answer, or NULL. */
static struct json_object *
live_pool(struct json_object *pools, const char *name)
{
    struct json_object *arr, *p, *n;

    if (!json_object_object_get_ex(pools, "pools", &arr))
        return NULL;
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        p = json_object_array_get_idx(arr, i);
        if (json_object_object_get_ex(p, "name", &n) &&
            strcmp(json_object_get_string(n), name) == 0)
            return p;
    }
    return NULL;
}

static const char *
live_str(struct json_object *pool, const char *key)
{
    struct json_object *v;

    return json_object_object_get_ex(pool, key, &v) ? json_object_get_string(v) : "";
}

static bool
same_cpus(struct json_object *pool, const int *cpus, unsigned int n)
{
    struct json_object *arr;

    if (!json_object_object_get_ex(pool, "cpus", &arr) || json_object_array_length(arr) != n)
        return false;
    for (unsigned int i = 0; i < n; i++)
        if (json_object_get_int(json_object_array_get_idx(arr, i)) != cpus[i])
            return false;
    return true;
}

/* Keep the pairs of kv whose value differs from the running parameter. */
static size_t
changed_params(struct json_object *pool, struct kv *kv, size_t n)
{
    struct json_object *params, *v;
    size_t k = 0;

    if (!json_object_object_get_ex(pool, "params", &params))
        return n;
    for (size_t i = 0; i < n; i++)
        if (!json_object_object_get_ex(params, kv[i].key, &v) ||
            strcmp(json_object_get_string(v), kv[i].val) != 0)
            kv[k++] = kv[i];
    return k;
}

/* One configured pool: 1 if changed, 0 if nothing to do, -errno if refused (logged). */
static int
reload_pool(struct daemon_ctx *ctx, struct json_object *pools, const struct config_pool *p,
            const cpu_set_t *online)
{
    char params[sizeof(p->params)], err[256];
    struct kv kv[VS_PARAMS_MAX];
    int cpus[CPUSET_MAX], r;
    struct json_object *live;
    unsigned int n;
    size_t nkv;
    int changed = 0;

    snprintf(params, sizeof(params), "%s", p->params);
    r = daemon_pool_cpus(p->cpus, online, cpus, &n, err, sizeof(err));
    if (r == 0)
        r = kv_split(params, kv, VS_PARAMS_MAX, &nkv, err, sizeof(err));
    if (r < 0)
        goto refused;
    live = live_pool(pools, p->name);
    if (live == NULL) {
        r = daemon_pool_create(ctx, p->name, cpus, n, p->policy, kv, nkv, err, sizeof(err));
        if (r < 0)
            goto refused;
        log_info("reload: pool %s: created, policy %s on cpu(s) %s", p->name, p->policy,
                 p->cpus[0] ? p->cpus : "(the default)");
        return 1;
    }
    if (!same_cpus(live, cpus, n)) {
        r = daemon_pool_resize(ctx, p->name, cpus, n, err, sizeof(err));
        if (r < 0)
            goto refused;
        log_info("reload: pool %s: cpus -> %s", p->name, p->cpus);
        changed = 1;
    }
    if (strcmp(live_str(live, "policy"), p->policy) != 0) {
        r = sched_pool_set(ctx->sched, p->name, p->policy, kv, nkv, err, sizeof(err));
        if (r < 0)
            goto refused;
        log_info("reload: pool %s: policy %s -> %s%s%s", p->name, live_str(live, "policy"),
                 p->policy, p->params[0] ? " with " : "", p->params);
        return 1;
    }
    nkv = changed_params(live, kv, nkv);
    if (nkv == 0)
        return changed;
    r = sched_pool_set(ctx->sched, p->name, NULL, kv, nkv, err, sizeof(err));
    if (r < 0)
        goto refused;
    for (size_t i = 0; i < nkv; i++)
        log_info("reload: pool %s: %s=%s", p->name, kv[i].key, kv[i].val);
    return 1;
refused:
    log_warnx("reload: pool %s: %s", p->name, err);
    return r;
}

/* Running pools the configuration does not name stay: say so. */
static void
pools_unnamed(struct json_object *pools, const struct config *next)
{
    struct json_object *arr, *n;

    if (!json_object_object_get_ex(pools, "pools", &arr))
        return;
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        const char *name = json_object_object_get_ex(json_object_array_get_idx(arr, i), "name", &n)
                               ? json_object_get_string(n)
                               : "";
        bool named = false;

        for (unsigned int k = 0; k < next->nr_pools && !named; k++)
            named = strcmp(next->pools[k].name, name) == 0;
        if (!named)
            log_info("reload: pool %s is not in the configuration: kept as it runs "
                     "(vcpuschedctl pool destroy removes it)",
                     name);
    }
}

void
reload_apply(struct daemon_ctx *ctx, const struct config *started, const struct config *next,
             const cpu_set_t *online, struct reload_result *res)
{
    static const char *const level_names[] = {"warning", "info", "debug"}; /* LOG_VERBOSE_* */
    struct json_object *pools;
    int level = config_verbosity(next);

    memset(res, 0, sizeof(*res));
    restart_keys_check(started, next, res);
    if (level != log_verbosity()) {
        log_set_verbosity(level);
        if (level >= LOG_VERBOSE_INFO)
            log_info("reload: log level %s", level_names[level]);
        else /* the only kind still shown */
            log_warnx("reload: log level %s", level_names[level]);
        res->applied++;
    }
    pools = sched_json_pools(ctx->sched);
    for (unsigned int i = 0; i < next->nr_pools; i++) {
        int r = reload_pool(ctx, pools, &next->pools[i], online);

        res->applied += r > 0;
        res->refused += r < 0;
    }
    pools_unnamed(pools, next);
    json_object_put(pools);
}
