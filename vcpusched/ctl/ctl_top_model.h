/* SPDX-License-Identifier: ISC */
/*
 * ctl_top_model.h - what `vcpuschedctl top` shows, as numbers: a sample
 * of the daemon (`stats` and `list`), rates from the counter deltas
 * between two samples, and the order of the domains. Pure: no I/O, no
 * clock, so the unit tests drive it with canned results.
 */
#ifndef VCPUSCHED_CTL_TOP_MODEL_H
#define VCPUSCHED_CTL_TOP_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_object;

/* The order of the domains (their vCPUs stay in index order). */
enum top_sort {
    TOP_SORT_CPU,   /* CPU% descending */
    TOP_SORT_NAME,  /* domain name */
    TOP_SORT_WAKES, /* wakes/s descending */
    TOP_SORT_POOL,  /* pool, then CPU% descending */
};

/*
 * A rate is NAN when it cannot be known: the first sample, a counter the
 * policy does not keep (boosts under Credit2), a counter that went back
 * (a new thread, a restarted daemon).
 */
struct top_vcpu {
    int64_t index, tid, cpu;
    const char *state; /* running, runnable, blocked, parked, gone */
    bool elevated;     /* elected (MID) on its CPU */
    bool boosted;      /* Credit's BOOST priority */
    int64_t run_ns, wait_ns, wakes;
    int64_t boosts, resets; /* -1: the policy keeps no such counter */
    double cpu_pct, wait_pct, wakes_s, boosts_s, resets_s;
};

struct top_dom {
    const char *name, *pool, *policy;
    char *params; /* "weight=256 cap=0" */
    struct top_vcpu *vcpus;
    size_t nr_vcpus;
    unsigned int parked, boosted;                          /* vCPUs in that state now */
    double cpu_pct, wait_pct, wakes_s, boosts_s, resets_s; /* sums over its vCPUs */
};

struct top_pool {
    const char *name, *policy, *pattern;
    char cpus[256]; /* "1-3,5" */
    char *params;
    int64_t nr_cpus, domains, vcpus;
    int64_t picks, dispatcher_cpu_ns, p50_ns, p99_ns;
    double cpu_pct;  /* its domains' sum */
    double disp_pct; /* its dispatchers' CPU time */
    double picks_s;
};

struct top_sample {
    struct json_object *stats, *list; /* held: the strings above point into them */
    uint64_t now_ns; /* the daemon's CLOCK_MONOTONIC at `list`, else the caller's */
    int64_t uptime_ns, managed_threads;
    const char *events; /* the event backend */
    struct top_pool *pools;
    size_t nr_pools;
    struct top_dom *doms;
    size_t nr_doms;
    int64_t nr_cpus, nr_vcpus;         /* over every pool and domain */
    double cpu_pct, disp_pct, picks_s; /* the pools' sums */
};

/*
 * Build a sample from a `stats` and a `list` result, taking over the
 * caller's references to both (they are put by top_sample_free, even on
 * failure). `client_now_ns` stands in for a daemon that does not report
 * `now_ns`. Rates start unknown. Returns 0, -EPROTO (no pools or domains
 * array) or -ENOMEM.
 */
int top_sample_build(struct top_sample *s, struct json_object *stats, struct json_object *list,
                     uint64_t client_now_ns);
/* Rates of `cur` from the counters of `prev` (NULL: all unknown). */
void top_sample_rates(struct top_sample *cur, const struct top_sample *prev);
void top_sample_sort(struct top_sample *s, enum top_sort key);
void top_sample_free(struct top_sample *s);

/* "cpu", "name", "wakes", "pool" and back; -1 for an unknown name. */
int top_sort_parse(const char *name);
const char *top_sort_name(enum top_sort key);

#endif /* VCPUSCHED_CTL_TOP_MODEL_H */
