/* SPDX-License-Identifier: ISC */
/*
 * sim.h - a deterministic simulator that drives any policy, through the
 * same pool layer as the daemon, on a simulated clock.
 *
 * It models the kernel under the elevation trick: on each CPU the elected
 * vCPU runs if it is runnable and not parked; otherwise (work-conserving,
 * as SCHED_FIFO LOW threads do) the lowest-id runnable, unparked vCPU
 * living on that CPU runs; otherwise the CPU idles. Every nanosecond a
 * vCPU runs is measured and charged, exactly. vCPU demand is scripted:
 * busy loops, duty cycles, periodic wakes with a CPU burst (a ping
 * server), or explicit wake/sleep calls.
 *
 * Results: per-vCPU share, wake-to-run latency samples, run lengths,
 * switch counts, an optional timeline, and every contract violation.
 */
#ifndef VCPUSCHED_SIM_H
#define VCPUSCHED_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "policy/pool.h"

#define SIM_MAX_VCPUS VS_THREADS_MAX

enum sim_kind {
    SIM_IDLE,     /* never runnable unless sim_wake() is called */
    SIM_BUSY,     /* always runnable: a CPU hog */
    SIM_DUTY,     /* run `run_ns` of CPU, sleep `sleep_ns` of wall time, repeat */
    SIM_PERIODIC, /* every `period_ns` (from `phase_ns`) needs `run_ns` more CPU */
    SIM_MANUAL,   /* runnable exactly between sim_wake() and sim_sleep() */
};

struct sim_demand {
    enum sim_kind kind;
    uint64_t run_ns;
    uint64_t sleep_ns;
    uint64_t period_ns;
    uint64_t phase_ns;
};

/* A growable array of samples (ns). */
struct sim_samples {
    uint64_t *v;
    size_t n, cap;
};

struct sim_vcpu {
    struct pool_vcpu *pv;
    struct sim_demand demand;
    char label[VS_NAME_SIZE + 8]; /* "dom/index" */
    uint64_t pending_ns;          /* CPU still needed before it blocks */
    uint64_t next_wake;           /* absolute, or POLICY_NEVER */
    uint64_t wake_at;             /* last wake not yet followed by a run, or POLICY_NEVER */
    int running_on;               /* CPU, or -1 */
    uint64_t run_start;
    /* Counters since the last sim_reset_stats(). */
    uint64_t run_ns;
    uint64_t wakes;
    uint64_t runs; /* times it started running */
    uint64_t parks;
    uint64_t migrations;
    struct sim_samples lat;     /* wake-to-run latencies */
    struct sim_samples lengths; /* lengths of uninterrupted runs */
    /* Placement book-keeping. */
    bool placed;
    unsigned int last_cpu;
    bool was_parked;
};

struct sim_seg {
    unsigned int cpu;
    int vcpu; /* index in sim.vcpus, -1 = idle */
    uint64_t start, end;
};

struct sim_cpu {
    struct sim_vcpu *running;
    uint64_t since;
    uint64_t switches; /* changes of the running vCPU (idle counts) */
};

struct sim {
    struct pool pool;
    uint64_t now;
    uint64_t stats_start;
    uint64_t pick_delay_ns; /* tickle-to-pick latency of the modelled core */
    /*
     * Timer lateness: the policy timer and each slice end fire a
     * pseudo-random 0..late_max_ns after their deadline (Xen's timer_slop,
     * interrupt latency, an emulated CPU's late timers). 0 = exact.
     * late_what limits it to the slice ends or to the policy timer.
     */
    uint64_t late_max_ns;
    enum {
        SIM_LATE_ALL,
        SIM_LATE_SLICES,
        SIM_LATE_TIMER
    } late_what;
    uint64_t late_rng;
    uint64_t late_due[CPUSET_MAX + 1]; /* deadline seen: per CPU's slice, then the timer */
    uint64_t late_fire[CPUSET_MAX + 1];
    uint64_t repick_at[CPUSET_MAX];
    struct sim_cpu cpu[CPUSET_MAX];
    struct sim_vcpu *vcpus[SIM_MAX_VCPUS];
    unsigned int nr_vcpus;
    bool record; /* keep a timeline of runs */
    struct sim_seg *timeline;
    size_t nr_seg, cap_seg;
    uint64_t events;
};

/*
 * Create a simulator of `nr_cpus` CPUs (one core each, one socket, one
 * node unless `cpus` is given) running `policy` with pool parameters
 * "k=v ..." (may be NULL).
 */
int sim_init(struct sim *s, const char *policy, unsigned int nr_cpus, const struct policy_cpu *cpus,
             const char *params, char *err);
void sim_fini(struct sim *s);

/*
 * Attach a domain of nr_vcpus vCPUs, all with `demand`, parameters
 * "k=v ..." (may be NULL), `affinity` the allowed pool CPUs (empty or
 * NULL: all). Returns the domain, or NULL with err filled.
 */
struct pool_dom *sim_dom_add_set(struct sim *s, const char *name, unsigned int nr_vcpus,
                                 struct sim_demand demand, const struct cpuset *affinity,
                                 const char *params, char *err);
/* The same with CPUs 0..63 as a word (0 = all), for small pools written by hand. */
struct pool_dom *sim_dom_add(struct sim *s, const char *name, unsigned int nr_vcpus,
                             struct sim_demand demand, uint64_t affinity, const char *params,
                             char *err);
void sim_dom_remove(struct sim *s, struct pool_dom *d);
/* Hot-plug one vCPU with `demand` into d (pool_vcpu_add); NULL with err. */
struct sim_vcpu *sim_vcpu_plug(struct sim *s, struct pool_dom *d, struct sim_demand demand,
                               char *err);
/* Hot-unplug vCPU v (pool_vcpu_remove); -EBUSY for a domain's last. */
int sim_vcpu_unplug(struct sim *s, struct sim_vcpu *v);
/* The simulator's record of vCPU i of a domain. */
struct sim_vcpu *sim_vcpu(struct pool_dom *d, unsigned int i);
/* Change a vCPU's demand from now on. */
void sim_set_demand(struct sim *s, struct sim_vcpu *v, struct sim_demand demand);
/* SIM_MANUAL control. */
void sim_wake(struct sim *s, struct sim_vcpu *v);
void sim_sleep(struct sim *s, struct sim_vcpu *v);
void sim_yield(struct sim *s, struct sim_vcpu *v);

/* Parameters for a domain (d) or the pool (NULL), "k=v ...". */
int sim_set(struct sim *s, struct pool_dom *d, const char *params, char *err);
int sim_switch(struct sim *s, const char *policy, const char *params, char *err);
/* The pool's CPUs changed (pool_resize; aff as there), with what the daemon does around it. */
int sim_resize(struct sim *s, const struct policy_cpu *cpus, unsigned int n,
               const struct cpuset *aff, char *err);

/* Advance the clock by `ns`, processing every event on the way. */
void sim_run(struct sim *s, uint64_t ns);
void sim_reset_stats(struct sim *s);

/* Share of the CPU time since the last reset, 0..1 (of one CPU). */
double sim_share(const struct sim *s, const struct sim_vcpu *v);
/* Nearest-rank percentile (0..100) of samples; 0 if there are none. */
uint64_t sim_percentile(const struct sim_samples *x, double pct);
uint64_t sim_max(const struct sim_samples *x);
double sim_mean(const struct sim_samples *x);
/* Contract violations seen so far (must be 0 for a correct policy). */
uint64_t sim_violations(const struct sim *s);

/* A human-readable report of every vCPU and of the pool counters. */
void sim_report(struct sim *s, FILE *f);

/* Convenience constructors. */
struct sim_demand sim_busy(void);
struct sim_demand sim_duty(uint64_t run_ns, uint64_t sleep_ns);
struct sim_demand sim_periodic(uint64_t period_ns, uint64_t run_ns, uint64_t phase_ns);
struct sim_demand sim_manual(void);

#endif /* VCPUSCHED_SIM_H */
