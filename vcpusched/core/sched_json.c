/* SPDX-License-Identifier: ISC */
/*
 * sched_json.c - the `list`, `stats` and `pool list` views of the control
 * protocol (docs/protocol.md), built from the live scheduler state.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sched_priv.h"

static void
sink_int(struct policy_sink *sk, const char *key, int64_t val)
{
    json_object_object_add(sk->ctx, key, json_object_new_int64(val));
}

static void
sink_str(struct policy_sink *sk, const char *key, const char *val)
{
    json_object_object_add(sk->ctx, key, json_object_new_string(val));
}

/* Parameters as strings, as they travel in the protocol. */
static void
sink_param_int(struct policy_sink *sk, const char *key, int64_t val)
{
    char buf[32];

    snprintf(buf, sizeof(buf), "%lld", (long long)val);
    json_object_object_add(sk->ctx, key, json_object_new_string(buf));
}

static struct json_object *
params_json(struct sched_pool *sp, struct pool_dom *pd)
{
    struct json_object *o = json_object_new_object();
    struct policy_sink sk = {sink_param_int, sink_str, o};

    pool_get_params(&sp->pool, pd, &sk);
    return o;
}

static const char *
thread_state(const struct sched_thread *th)
{
    if (th->gone)
        return "gone";
    if (th->pv->pv->parked)
        return "parked";
    if (th->on_cpu >= 0)
        return "running";
    return th->pv->runnable ? "runnable" : "blocked";
}

static struct json_object *
vcpu_json(struct sched_pool *sp, struct sched_thread *th)
{
    struct json_object *o = json_object_new_object(), *pol = json_object_new_object();
    struct policy_sink sk = {sink_int, sink_str, pol};

    json_object_object_add(o, "index", json_object_new_int((int)th->pv->index));
    json_object_object_add(o, "tid", json_object_new_int(th->act->tid));
    json_object_object_add(o, "cpu", json_object_new_int(th->act->cpu));
    json_object_object_add(o, "state", json_object_new_string(thread_state(th)));
    json_object_object_add(o, "level", json_object_new_string(th->mid_on >= 0 ? "mid" : "low"));
    json_object_object_add(o, "class",
                           json_object_new_string(th->pv->cls.bg ? "background" : "foreground"));
    if (bgclass_vcpu_mode(&sp->pool, th->pv) != NULL)
        json_object_object_add(o, "mode",
                               json_object_new_string(bgclass_vcpu_mode(&sp->pool, th->pv)));
    json_object_object_add(o, "run_ns", json_object_new_int64((int64_t)th->pv->run_ns));
    json_object_object_add(o, "switches", json_object_new_int64((int64_t)th->switches));
    json_object_object_add(o, "wait_ns", json_object_new_int64((int64_t)th->wait_ns));
    json_object_object_add(o, "wait_recent",
                           json_object_new_double((double)th->wait_recent_ppm / 1e6));
    json_object_object_add(o, "wakes", json_object_new_int64((int64_t)th->pv->wakes));
    json_object_object_add(o, "sleeps", json_object_new_int64((int64_t)th->pv->sleeps));
    json_object_object_add(o, "elections", json_object_new_int64((int64_t)th->pv->elections));
    pool_vcpu_stats(&sp->pool, th->pv, &sk);
    json_object_object_add(o, "policy", pol);
    return o;
}

static struct json_object *
dom_json(struct sched_dom *d)
{
    struct sched_pool *sp = d->sp;
    struct json_object *o = json_object_new_object(), *vcpus = json_object_new_array();

    sched_pool_lock(sp);
    json_object_object_add(o, "name", json_object_new_string(d->name));
    json_object_object_add(o, "pool", json_object_new_string(sp->pool.name));
    json_object_object_add(o, "policy", json_object_new_string(pool_policy_name(&sp->pool)));
    json_object_object_add(o, "source", json_object_new_string(d->source));
    json_object_object_add(o, "class",
                           json_object_new_string(d->pd->background ? "background" : "foreground"));
    json_object_object_add(o, "pid", json_object_new_int(d->pid));
    json_object_object_add(o, "params", params_json(sp, d->pd));
    for (unsigned int i = 0; i < d->nr_threads; i++)
        json_object_array_add(vcpus, vcpu_json(sp, d->threads[i]));
    json_object_object_add(o, "vcpus", vcpus);
    sched_pool_unlock(sp);
    /* Its process's other threads (sched_place.c): kept off the pools' CPUs, or pinned there. */
    if (d->place != NULL) {
        struct json_object *others = json_object_new_object();

        json_object_object_add(others, "kept_off", json_object_new_int((int)d->place->n));
        json_object_object_add(others, "pinned", json_object_new_int((int)d->place->npinned));
        json_object_object_add(o, "others", others);
    }
    return o;
}

struct json_object *
sched_json_domain(struct sched *s, const char *name)
{
    struct json_object *o = NULL;
    struct sched_dom *d;

    pthread_mutex_lock(&s->lock);
    d = sched_dom_find(s, name);
    if (d != NULL)
        o = dom_json(d);
    pthread_mutex_unlock(&s->lock);
    return o;
}

struct json_object *
sched_json_list(struct sched *s)
{
    struct json_object *o = json_object_new_object(), *arr = json_object_new_array();
    struct sched_dom *d;

    pthread_mutex_lock(&s->lock);
    TAILQ_FOREACH(d, &s->doms, link)
    json_object_array_add(arr, dom_json(d));
    pthread_mutex_unlock(&s->lock);
    json_object_object_add(o, "domains", arr);
    /* CLOCK_MONOTONIC of the report: clients turn counter deltas into rates. */
    json_object_object_add(o, "now_ns", json_object_new_int64((int64_t)sched_now()));
    return o;
}

/* CPU time of a dispatcher thread so far, in ns. */
static uint64_t
thread_cpu_ns(pthread_t t)
{
    struct timespec ts;
    clockid_t cid;

    if (pthread_getcpuclockid(t, &cid) != 0 || clock_gettime(cid, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* Percentile of the log2 latency histogram, as the bucket's upper bound. */
static int64_t
lat_percentile(const uint64_t *b, double pct)
{
    uint64_t total = 0, acc = 0;

    for (int i = 0; i < SCHED_LAT_BUCKETS; i++)
        total += b[i];
    for (int i = 0; i < SCHED_LAT_BUCKETS && total > 0; i++) {
        acc += b[i];
        if ((double)acc >= pct / 100.0 * (double)total)
            return (int64_t)(2ULL << i);
    }
    return 0;
}

/* The log2 histogram itself: [i] counts latencies in [2^i, 2^(i+1)) ns. */
static struct json_object *
lat_hist_json(const uint64_t *b)
{
    struct json_object *arr = json_object_new_array();

    for (int i = 0; i < SCHED_LAT_BUCKETS; i++)
        json_object_array_add(arr, json_object_new_int64((int64_t)b[i]));
    return arr;
}

static struct json_object *
pool_json(struct sched_pool *sp)
{
    struct json_object *o = json_object_new_object(), *cpus = json_object_new_array();
    uint64_t now = sched_now(), cpu_ns = 0, vcpus = 0;
    double secs;

    sched_pool_lock(sp);
    secs = (double)(now - sp->st.created_ns) / 1e9;
    for (unsigned int i = 0; i < sp->nr_cpus; i++) {
        json_object_array_add(cpus, json_object_new_int(sp->cpus[i].host));
        if (sp->cpus[i].started)
            cpu_ns += thread_cpu_ns(sp->cpus[i].thread);
    }
    if (sp->dstarted)
        cpu_ns += thread_cpu_ns(sp->dthread);
    for (struct pool_dom *pd = TAILQ_FIRST(&sp->pool.doms); pd; pd = TAILQ_NEXT(pd, link))
        vcpus += pd->nr_vcpus;
    json_object_object_add(o, "name", json_object_new_string(sp->pool.name));
    json_object_object_add(o, "policy", json_object_new_string(pool_policy_name(&sp->pool)));
    json_object_object_add(
        o, "pattern", json_object_new_string(sp->pattern == SCHED_SHARED ? "shared" : "dedicated"));
    json_object_object_add(o, "cpus", cpus);
    json_object_object_add(o, "params", params_json(sp, NULL));
    json_object_object_add(o, "domains", json_object_new_int((int)sp->pool.nr_doms));
    json_object_object_add(o, "vcpus", json_object_new_int64((int64_t)vcpus));
    json_object_object_add(o, "picks", json_object_new_int64((int64_t)sp->pool.stats.picks));
    json_object_object_add(o, "switches", json_object_new_int64((int64_t)sp->pool.stats.switches));
    json_object_object_add(
        o, "decisions_per_s",
        json_object_new_double(secs > 0 ? (double)sp->pool.stats.picks / secs : 0));
    json_object_object_add(o, "syscalls", json_object_new_int64((int64_t)sp->st.syscalls));
    json_object_object_add(o, "actuator_errors", json_object_new_int64((int64_t)sp->st.act_errors));
    json_object_object_add(o, "wakes", json_object_new_int64((int64_t)sp->pool.stats.wakes));
    json_object_object_add(o, "sleeps", json_object_new_int64((int64_t)sp->pool.stats.sleeps));
    json_object_object_add(o, "events", json_object_new_int64((int64_t)sp->st.events));
    json_object_object_add(o, "charge_overshoot_ns",
                           json_object_new_int64((int64_t)sp->st.charge_overshoot_ns));
    json_object_object_add(o, "charge_overshoot_max_ns",
                           json_object_new_int64((int64_t)sp->st.charge_overshoot_max_ns));
    json_object_object_add(o, "charge_stale_runs",
                           json_object_new_int64((int64_t)sp->st.charge_stale_runs));
    json_object_object_add(o, "violations",
                           json_object_new_int64((int64_t)sp->pool.stats.violations));
    if (sp->pool.last_violation[0] != '\0')
        json_object_object_add(o, "last_violation",
                               json_object_new_string(sp->pool.last_violation));
    json_object_object_add(o, "policy_switches",
                           json_object_new_int64((int64_t)sp->pool.stats.policy_switches));
    json_object_object_add(o, "resizes", json_object_new_int64((int64_t)sp->pool.stats.resizes));
    json_object_object_add(o, "timers", json_object_new_int64((int64_t)sp->pool.stats.timers));
    json_object_object_add(o, "clock_clamps",
                           json_object_new_int64((int64_t)sp->pool.stats.clock_clamps));
    json_object_object_add(o, "bg_domains", json_object_new_int((int)sp->pool.cls.nr_bg_doms));
    json_object_object_add(o, "bg_batch_enters",
                           json_object_new_int64((int64_t)sp->pool.cls.stats.batch_enters));
    json_object_object_add(o, "bg_batch_exits",
                           json_object_new_int64((int64_t)sp->pool.cls.stats.batch_exits));
    json_object_object_add(o, "bg_alpha_slices",
                           json_object_new_int64((int64_t)sp->pool.cls.stats.alpha_slices));
    json_object_object_add(o, "bg_gap_slices",
                           json_object_new_int64((int64_t)sp->pool.cls.stats.gap_slices));
    json_object_object_add(o, "decisions", json_object_new_int64((int64_t)sp->st.decisions));
    json_object_object_add(o, "dispatcher_cpu_ns", json_object_new_int64((int64_t)cpu_ns));
    json_object_object_add(o, "control_waits", json_object_new_int64((int64_t)sp->st.ctl_waits));
    json_object_object_add(o, "control_wait_ns",
                           json_object_new_int64((int64_t)sp->st.ctl_wait_sum_ns));
    json_object_object_add(o, "control_wait_max_ns",
                           json_object_new_int64((int64_t)sp->st.ctl_wait_max_ns));
    json_object_object_add(o, "foreign_threads", json_object_new_int((int)sp->st.foreign_now));
    json_object_object_add(o, "foreign_sightings",
                           json_object_new_int64((int64_t)sp->st.foreign_seen));
    json_object_object_add(o, "wake_to_mid_p50_ns",
                           json_object_new_int64(lat_percentile(sp->st.lat, 50)));
    json_object_object_add(o, "wake_to_mid_p99_ns",
                           json_object_new_int64(lat_percentile(sp->st.lat, 99)));
    json_object_object_add(o, "wake_to_mid_hist", lat_hist_json(sp->st.lat));
    json_object_object_add(o, "wake_to_mid_sum_ns",
                           json_object_new_int64((int64_t)sp->st.lat_sum_ns));
    if (sp->last_error[0] != '\0')
        json_object_object_add(o, "last_error", json_object_new_string(sp->last_error));
    sched_pool_unlock(sp);
    return o;
}

struct json_object *
sched_json_pools(struct sched *s)
{
    struct json_object *o = json_object_new_object(), *arr = json_object_new_array();

    pthread_mutex_lock(&s->lock);
    for (unsigned int i = 0; i < s->nr_pools; i++)
        json_object_array_add(arr, pool_json(s->pools[i]));
    pthread_mutex_unlock(&s->lock);
    json_object_object_add(o, "pools", arr);
    return o;
}

/* The event source's own counters. */
static struct json_object *
events_json(struct sched *s)
{
    static const char *const types[EVENTS_NTYPES] = {
        [EVENTS_WAKE] = "wake", [EVENTS_RUN] = "run",       [EVENTS_STOP] = "stop",
        [EVENTS_EXIT] = "exit", [EVENTS_CHARGE] = "charge", [EVENTS_LOST] = "lost"};
    struct json_object *o = json_object_new_object(), *by = json_object_new_object();
    struct events_stats st;

    events_stats(s->ev, &st);
    json_object_object_add(o, "backend", json_object_new_string(events_backend(s->ev)));
    json_object_object_add(o, "wakeup", json_object_new_boolean(s->ev_wakeup));
    json_object_object_add(o, "records", json_object_new_int64((int64_t)st.records));
    for (int t = 0; t < EVENTS_NTYPES; t++)
        if (types[t] != NULL)
            json_object_object_add(by, types[t], json_object_new_int64((int64_t)st.by_type[t]));
    json_object_object_add(o, "by_type", by);
    json_object_object_add(o, "lost", json_object_new_int64((int64_t)st.lost));
    json_object_object_add(o, "inferred", json_object_new_int64((int64_t)st.inferred));
    json_object_object_add(o, "polls", json_object_new_int64((int64_t)st.polls));
    json_object_object_add(o, "proc_reads", json_object_new_int64((int64_t)st.proc_reads));
    json_object_object_add(o, "ring_bytes", json_object_new_int64((int64_t)st.ring_bytes));
    json_object_object_add(o, "watched", json_object_new_int((int)st.watched));
    json_object_object_add(o, "resyncs", json_object_new_int64((int64_t)s->resyncs));
    json_object_object_add(o, "missed_wakes", json_object_new_int64((int64_t)s->missed_wakes));
    return o;
}

/* The walks of /proc for threads not ours on the pools' CPUs (sched_foreign.c). */
static struct json_object *
foreign_scan_json(struct sched *s)
{
    struct json_object *o = json_object_new_object();

    pthread_mutex_lock(&s->lock);
    json_object_object_add(o, "scans", json_object_new_int64((int64_t)s->foreign_scan.scans));
    json_object_object_add(o, "last_us",
                           json_object_new_int64((int64_t)(s->foreign_scan.last_ns / 1000)));
    json_object_object_add(o, "max_us",
                           json_object_new_int64((int64_t)(s->foreign_scan.max_ns / 1000)));
    json_object_object_add(o, "gap_ms", json_object_new_int((int)s->foreign_scan.gap_ms));
    pthread_mutex_unlock(&s->lock);
    return o;
}

struct json_object *
sched_json_stats(struct sched *s)
{
    struct json_object *o = sched_json_pools(s);
    int64_t rt = 0;

    json_object_object_add(o, "uptime_ns",
                           json_object_new_int64((int64_t)(sched_now() - s->start_ns)));
    json_object_object_add(o, "events", json_object_new_string(events_backend(s->ev)));
    /* How caps park threads: the backend, and the hierarchy it freezes in. */
    json_object_object_add(o, "parking",
                           json_object_new_string(cgroup_backend_name(s->cfg.park.backend)));
    if (s->cfg.park.backend != CGROUP_BACKEND_NONE)
        json_object_object_add(o, "parking_mount", json_object_new_string(s->cfg.park.mount));
    json_object_object_add(o, "event_source", events_json(s));
    if (rt_runtime_read(&rt) == 0)
        json_object_object_add(o, "rt_runtime_us", json_object_new_int64(rt));
    json_object_object_add(o, "managed_threads", json_object_new_int(statefile_count(s->sf)));
    json_object_object_add(o, "foreign_scan", foreign_scan_json(s));
    return o;
}

/* A policy's schema and the background class's, as [{name, type, min, max, default, help}]. */
static struct json_object *
schema_json(const struct policy_param *schema, const struct policy_param *cls)
{
    static const char *const types[] = {
        [POLICY_PARAM_INT] = "int", [POLICY_PARAM_BOOL] = "bool", [POLICY_PARAM_STR] = "string"};
    struct json_object *arr = json_object_new_array();

    for (int k = 0; k < 2; k++, schema = cls) {
        for (size_t i = 0; schema != NULL && schema[i].name != NULL; i++) {
            const struct policy_param *p = &schema[i];
            struct json_object *o = json_object_new_object();

            json_object_object_add(o, "name", json_object_new_string(p->name));
            json_object_object_add(o, "type", json_object_new_string(types[p->type]));
            json_object_object_add(o, "min", json_object_new_int64(p->min));
            json_object_object_add(o, "max", json_object_new_int64(p->max));
            json_object_object_add(o, "default", json_object_new_int64(p->def));
            json_object_object_add(o, "help", json_object_new_string(p->help ? p->help : ""));
            json_object_array_add(arr, o);
        }
    }
    return arr;
}

struct json_object *
sched_json_policies(const char *name)
{
    const struct policy_ops *const *all = policy_all();
    struct json_object *o, *arr = json_object_new_array();

    for (size_t i = 0; all[i] != NULL; i++) {
        if (name != NULL && strcmp(all[i]->name, name) != 0)
            continue;
        o = json_object_new_object();
        json_object_object_add(o, "name", json_object_new_string(all[i]->name));
        json_object_object_add(o, "summary",
                               json_object_new_string(all[i]->summary ? all[i]->summary : ""));
        json_object_object_add(o, "pool_params",
                               schema_json(all[i]->pool_params, bgclass_pool_params()));
        json_object_object_add(o, "dom_params",
                               schema_json(all[i]->dom_params, bgclass_dom_params()));
        json_object_array_add(arr, o);
    }
    if (json_object_array_length(arr) == 0) {
        json_object_put(arr);
        return NULL;
    }
    o = json_object_new_object();
    json_object_object_add(o, "policies", arr);
    return o;
}
