/* SPDX-License-Identifier: ISC */
/*
 * ctl_top_model.c - samples, rates and order for `vcpuschedctl top`
 * (ctl_top_model.h). A vCPU is the same one in two samples when its
 * domain's name, its index and its thread id match; anything else starts
 * its rates afresh, as does a counter that went back.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "control/ctl_json.h"
#include "ctl_show.h"
#include "ctl_top_model.h"

static const char *const sort_names[] = {
    [TOP_SORT_CPU] = "cpu",
    [TOP_SORT_NAME] = "name",
    [TOP_SORT_WAKES] = "wakes",
    [TOP_SORT_POOL] = "pool",
};

int
top_sort_parse(const char *name)
{
    for (size_t i = 0; i < sizeof(sort_names) / sizeof(sort_names[0]); i++)
        if (strcmp(name, sort_names[i]) == 0)
            return (int)i;
    return -1;
}

const char *
top_sort_name(enum top_sort key)
{
    return sort_names[key];
}

static int64_t
jint(struct json_object *o, const char *key, int64_t missing)
{
    int64_t v;

    return ctl_json_int(o, key, &v) ? v : missing;
}

static void
vcpu_build(struct top_vcpu *v, struct json_object *o)
{
    struct json_object *pol = ctl_json_object(o, "policy");

    v->index = jint(o, "index", -1);
    v->tid = jint(o, "tid", -1);
    v->cpu = jint(o, "cpu", -1);
    v->state = ctl_json_str(o, "state");
    v->elevated = strcmp(ctl_json_str(o, "level"), "mid") == 0;
    v->boosted = strcmp(ctl_json_str(pol, "pri"), "BOOST") == 0;
    v->run_ns = jint(o, "run_ns", -1);
    v->wait_ns = jint(o, "wait_ns", -1);
    v->wakes = jint(o, "wakes", -1);
    v->boosts = jint(pol, "boosts", -1);
    v->resets = jint(pol, "resets", -1);
}

static int
dom_build(struct top_dom *d, struct json_object *o)
{
    struct json_object *vcpus = ctl_json_array(o, "vcpus");

    d->name = ctl_json_str(o, "name");
    d->pool = ctl_json_str(o, "pool");
    d->policy = ctl_json_str(o, "policy");
    d->params = ctl_show_kv(ctl_json_object(o, "params"));
    d->nr_vcpus = vcpus != NULL ? json_object_array_length(vcpus) : 0;
    d->vcpus = calloc(d->nr_vcpus + 1, sizeof(*d->vcpus));
    if (d->params == NULL || d->vcpus == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < d->nr_vcpus; i++) {
        vcpu_build(&d->vcpus[i], json_object_array_get_idx(vcpus, i));
        d->parked += strcmp(d->vcpus[i].state, "parked") == 0;
        d->boosted += d->vcpus[i].boosted;
    }
    return 0;
}

static int
pool_build(struct top_pool *p, struct json_object *o)
{
    struct json_object *cpus = ctl_json_array(o, "cpus");

    p->name = ctl_json_str(o, "name");
    p->policy = ctl_json_str(o, "policy");
    p->pattern = ctl_json_str(o, "pattern");
    ctl_show_cpus(p->cpus, sizeof(p->cpus), cpus);
    p->nr_cpus = cpus != NULL ? (int64_t)json_object_array_length(cpus) : 0;
    p->params = ctl_show_kv(ctl_json_object(o, "params"));
    p->domains = jint(o, "domains", 0);
    p->vcpus = jint(o, "vcpus", 0);
    p->picks = jint(o, "picks", -1);
    p->dispatcher_cpu_ns = jint(o, "dispatcher_cpu_ns", -1);
    p->p50_ns = jint(o, "wake_to_mid_p50_ns", -1);
    p->p99_ns = jint(o, "wake_to_mid_p99_ns", -1);
    return p->params != NULL ? 0 : -ENOMEM;
}

int
top_sample_build(struct top_sample *s, struct json_object *stats, struct json_object *list,
                 uint64_t client_now_ns)
{
    struct json_object *pools = ctl_json_array(stats, "pools");
    struct json_object *doms = ctl_json_array(list, "domains");
    int64_t now = jint(list, "now_ns", 0);
    int r = 0;

    memset(s, 0, sizeof(*s));
    s->stats = stats;
    s->list = list;
    if (pools == NULL || doms == NULL)
        return -EPROTO;
    s->now_ns = now > 0 ? (uint64_t)now : client_now_ns;
    s->uptime_ns = jint(stats, "uptime_ns", -1);
    s->managed_threads = jint(stats, "managed_threads", -1);
    s->events = ctl_json_str(stats, "events");
    s->nr_pools = json_object_array_length(pools);
    s->nr_doms = json_object_array_length(doms);
    s->pools = calloc(s->nr_pools + 1, sizeof(*s->pools));
    s->doms = calloc(s->nr_doms + 1, sizeof(*s->doms));
    if (s->pools == NULL || s->doms == NULL) {
        s->nr_pools = s->nr_doms = 0;
        return -ENOMEM;
    }
    for (size_t i = 0; i < s->nr_pools && r == 0; i++) {
        r = pool_build(&s->pools[i], json_object_array_get_idx(pools, i));
        s->nr_cpus += s->pools[i].nr_cpus;
    }
    for (size_t i = 0; i < s->nr_doms && r == 0; i++) {
        r = dom_build(&s->doms[i], json_object_array_get_idx(doms, i));
        s->nr_vcpus += (int64_t)s->doms[i].nr_vcpus;
    }
    top_sample_rates(s, NULL);
    return r;
}

void
top_sample_free(struct top_sample *s)
{
    for (size_t i = 0; i < s->nr_doms; i++) {
        free(s->doms[i].params);
        free(s->doms[i].vcpus);
    }
    for (size_t i = 0; i < s->nr_pools; i++)
        free(s->pools[i].params);
    free(s->doms);
    free(s->pools);
    json_object_put(s->stats);
    json_object_put(s->list);
    memset(s, 0, sizeof(*s));
}

/* --- Rates. --- */

/* Per second over dt_s; NAN if either count is unknown or it went back. */
static double
rate(int64_t cur, int64_t prev, double dt_s)
{
    if (cur < 0 || prev < 0 || cur < prev || !(dt_s > 0))
        return NAN;
    return (double)(cur - prev) / dt_s;
}

/* Sum of the known values: NAN until one is known. */
static void
add(double *acc, double v)
{
    if (isnan(v))
        return;
    *acc = isnan(*acc) ? v : *acc + v;
}

/* Domains usually keep their order between samples: try the same place first. */
static const struct top_dom *
dom_find(const struct top_sample *s, const char *name, size_t hint)
{
    if (hint < s->nr_doms && strcmp(s->doms[hint].name, name) == 0)
        return &s->doms[hint];
    for (size_t i = 0; i < s->nr_doms; i++)
        if (strcmp(s->doms[i].name, name) == 0)
            return &s->doms[i];
    return NULL;
}

static const struct top_vcpu *
vcpu_find(const struct top_dom *d, const struct top_vcpu *v, size_t hint)
{
    for (size_t k = 0; d != NULL && k < d->nr_vcpus; k++) {
        const struct top_vcpu *p = &d->vcpus[(hint + k) % d->nr_vcpus];

        if (p->index == v->index && p->tid == v->tid)
            return p;
    }
    return NULL;
}

static void
vcpu_rates(struct top_vcpu *v, const struct top_vcpu *p, double dt_s)
{
    v->cpu_pct = v->wait_pct = v->wakes_s = v->boosts_s = v->resets_s = NAN;
    if (p == NULL)
        return;
    /* ns of CPU per second of wall time: 1e9 is one whole CPU, 100 %. */
    v->cpu_pct = rate(v->run_ns, p->run_ns, dt_s) / 1e7;
    /* ns waited while runnable per second: 100 % is a vCPU that never got to run. */
    v->wait_pct = rate(v->wait_ns, p->wait_ns, dt_s) / 1e7;
    v->wakes_s = rate(v->wakes, p->wakes, dt_s);
    v->boosts_s = rate(v->boosts, p->boosts, dt_s);
    v->resets_s = rate(v->resets, p->resets, dt_s);
}

static void
dom_rates(struct top_dom *d, const struct top_dom *p, double dt_s)
{
    d->cpu_pct = d->wait_pct = d->wakes_s = d->boosts_s = d->resets_s = NAN;
    for (size_t i = 0; i < d->nr_vcpus; i++) {
        struct top_vcpu *v = &d->vcpus[i];

        vcpu_rates(v, vcpu_find(p, v, i), dt_s);
        add(&d->cpu_pct, v->cpu_pct);
        add(&d->wait_pct, v->wait_pct);
        add(&d->wakes_s, v->wakes_s);
        add(&d->boosts_s, v->boosts_s);
        add(&d->resets_s, v->resets_s);
    }
}

static const struct top_pool *
pool_find(const struct top_sample *s, const char *name)
{
    for (size_t i = 0; s != NULL && i < s->nr_pools; i++)
        if (strcmp(s->pools[i].name, name) == 0)
            return &s->pools[i];
    return NULL;
}

static void
pool_rates(struct top_pool *pl, const struct top_sample *cur, const struct top_sample *prev,
           double dt_s)
{
    const struct top_pool *p = pool_find(prev, pl->name);

    pl->cpu_pct = pl->disp_pct = pl->picks_s = NAN;
    if (p == NULL)
        return;
    pl->disp_pct = rate(pl->dispatcher_cpu_ns, p->dispatcher_cpu_ns, dt_s) / 1e7;
    pl->picks_s = rate(pl->picks, p->picks, dt_s);
    pl->cpu_pct = 0;
    for (size_t i = 0; i < cur->nr_doms; i++)
        if (strcmp(cur->doms[i].pool, pl->name) == 0)
            add(&pl->cpu_pct, cur->doms[i].cpu_pct);
}

void
top_sample_rates(struct top_sample *cur, const struct top_sample *prev)
{
    double dt_s =
        prev != NULL && cur->now_ns > prev->now_ns ? (double)(cur->now_ns - prev->now_ns) / 1e9 : 0;

    if (!(dt_s > 0))
        prev = NULL; /* no interval: nothing is known */
    for (size_t i = 0; i < cur->nr_doms; i++)
        dom_rates(&cur->doms[i], prev != NULL ? dom_find(prev, cur->doms[i].name, i) : NULL, dt_s);
    cur->cpu_pct = cur->disp_pct = cur->picks_s = NAN;
    for (size_t i = 0; i < cur->nr_pools; i++) {
        pool_rates(&cur->pools[i], cur, prev, dt_s);
        add(&cur->cpu_pct, cur->pools[i].cpu_pct);
        add(&cur->disp_pct, cur->pools[i].disp_pct);
        add(&cur->picks_s, cur->pools[i].picks_s);
    }
}

/* --- Order. --- */

/* Descending, unknown last. */
static int
cmp_desc(double a, double b)
{
    a = isnan(a) ? -1 : a;
    b = isnan(b) ? -1 : b;
    return a > b ? -1 : a < b ? 1 : 0;
}

static int
dom_cmp(const void *pa, const void *pb, void *key)
{
    const struct top_dom *a = pa, *b = pb;
    int c = 0;

    switch (*(const enum top_sort *)key) {
    case TOP_SORT_CPU:
        c = cmp_desc(a->cpu_pct, b->cpu_pct);
        break;
    case TOP_SORT_WAKES:
        c = cmp_desc(a->wakes_s, b->wakes_s);
        break;
    case TOP_SORT_POOL:
        c = strcmp(a->pool, b->pool);
        c = c != 0 ? c : cmp_desc(a->cpu_pct, b->cpu_pct);
        break;
    case TOP_SORT_NAME:
        break;
    }
    return c != 0 ? c : strcmp(a->name, b->name);
}

void
top_sample_sort(struct top_sample *s, enum top_sort key)
{
    if (s->nr_doms > 1)
        qsort_r(s->doms, s->nr_doms, sizeof(*s->doms), dom_cmp, &key);
}
