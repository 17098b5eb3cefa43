/* SPDX-License-Identifier: ISC */
/*
 * credit_priv.h - private state of the Credit policy, shared by credit.c
 * (runqueues, wake, pick, stealing, parameters) and credit_acct.c
 * (accounting, ticks, parking). Nothing outside policy/credit*.c uses it.
 */
#ifndef VCPUSCHED_CREDIT_PRIV_H
#define VCPUSCHED_CREDIT_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "policies.h"

#define CREDIT_PER_MSEC         10 /* CSCHED_CREDITS_PER_MSEC: 1 credit = 100 us */
#define CREDIT_TICKS_PER_TSLICE 3  /* CSCHED_TICKS_PER_TSLICE: 10 ms of 30 */

/* Priorities (credit.c:65-68): a higher number runs first. */
enum credit_pri {
    CREDIT_PRI_BOOST = 0,  /* woken while UNDER, until a tick sees it run */
    CREDIT_PRI_UNDER = -1, /* credit >= 0 at the last accounting */
    CREDIT_PRI_OVER = -2,  /* credit < 0 */
    CREDIT_PRI_IDLE = -64, /* the idle vCPU: what an empty queue yields */
};

/* Flags (credit.c:78-81), plus Xen's generic _VPF_migrating as KICKED. */
#define CREDIT_F_PARKED    (1U << 0) /* over its cap: paused until credit >= 0 */
#define CREDIT_F_YIELD     (1U << 1) /* yielded; kept until dequeued (Xen >= 4.18) */
#define CREDIT_F_MIGRATING (1U << 2) /* just placed: its next wake is not boosted */
#define CREDIT_F_KICKED    (1U << 3) /* elected, asked to leave for a better CPU */
#define CREDIT_F_THAWING   (1U << 4) /* unparked while blocked: its next wake is the thaw */

struct credit_dom;

struct credit_vcpu {
    TAILQ_ENTRY(credit_vcpu) runq_link;   /* on its CPU's runqueue */
    TAILQ_ENTRY(credit_vcpu) active_link; /* on its domain's active list */
    struct policy_vcpu *v;
    struct credit_dom *dom;
    int64_t credit;
    uint64_t residual;  /* burn remainder, in ns x CREDIT_PER_MSEC */
    uint64_t unseen_ns; /* CPU used since a tick (or sighting) last saw it */
    int pri;
    unsigned int flags;
    bool queued;
    bool elected; /* the pick's answer on v->cpu */
    bool active;  /* on the domain's active list: earns credit */
    /* Counters, for vcpu_stats. */
    uint64_t run_ns;
    uint64_t wakes, boosts, yields, parks, steals, migrations, picks;
    uint64_t ticks, sightings, activations, clamps;
};
TAILQ_HEAD(credit_vcpu_list, credit_vcpu);

struct credit_dom {
    TAILQ_ENTRY(credit_dom) active_link; /* on the pool's active list */
    struct credit_vcpu_list active;      /* its active vCPUs */
    struct policy_dom *d;
    unsigned int active_count;
    unsigned int weight;
    unsigned int cap;
    bool on_active_list;
};
TAILQ_HEAD(credit_dom_list, credit_dom);

struct credit_pcpu {
    struct credit_vcpu_list runq;
    unsigned int nr_queued;
    struct credit_vcpu *cur; /* elected vCPU, NULL = idle */
    uint64_t cur_since;      /* when cur started its run (Xen's state_entry_time) */
    uint64_t next_tick;      /* POLICY_NEVER while idle */
    uint32_t sort_epoch;     /* last accounting epoch it sorted for */
    unsigned int idle_bias;
    unsigned int last_tickle;
    bool balanced; /* has balanced at least once */
    uint64_t last_balance;
    uint64_t tickles, ratelimited, balances;
    /* Topology. */
    struct cpuset sibling_mask; /* same core and socket, itself included */
    struct cpuset socket_mask;
    unsigned int node; /* index into credit_priv.nodes */
};

/* A NUMA node of the pool (dense index): its CPUs and balancing state. */
struct credit_node {
    struct cpuset mask;
    unsigned int first;
    unsigned int balance_bias;
};

struct credit_priv {
    /* Parameters. */
    unsigned int tslice_ms;
    uint64_t tslice_ns;
    uint64_t tick_ns;
    uint64_t ratelimit_ns;
    uint64_t balance_ratelimit_ns;
    bool boost;
    /* Accounting (csched_private). */
    int64_t credits_per_tslice;
    int64_t credit; /* credits shared out per period: 300 x CPUs */
    int64_t credit_balance;
    int64_t credit_balance_next; /* summed during a pass */
    uint64_t weight;             /* sum of the weights of active vCPUs */
    uint32_t runq_sort;
    struct credit_dom_list active_doms;
    bool started;
    uint64_t acct_next;
    /* CPUs. */
    unsigned int nr_cpus;
    struct cpuset all;
    struct cpuset idlers;
    struct credit_node *nodes; /* nr_nodes of them (at most nr_cpus) */
    unsigned int nr_nodes;
    struct credit_pcpu cpu[];
};

static inline struct credit_priv *
credit_priv(struct policy *pol)
{
    return pol->priv;
}

static inline struct credit_vcpu *
credit_vcpu(const struct policy_vcpu *v)
{
    return v->priv;
}

static inline struct credit_dom *
credit_dom(const struct policy_dom *d)
{
    return d->priv;
}

/* credit.c */
unsigned int credit_mask_cycle(const struct cpuset *mask, unsigned int n);
void credit_runq_insert(struct credit_pcpu *pc, struct credit_vcpu *cv);
void credit_runq_remove(struct credit_pcpu *pc, struct credit_vcpu *cv);
unsigned int credit_cpu_pick(struct policy *pol, const struct credit_vcpu *cv, bool commit);
void credit_wake_vcpu(struct policy *pol, struct credit_vcpu *cv);

/* credit_acct.c */
void credit_clock_start(struct policy *pol, uint64_t now);
void credit_timer(struct policy *pol, uint64_t now);
void credit_vcpu_seen(struct policy *pol, struct credit_vcpu *cv);
void credit_acct_stop(struct credit_priv *p, struct credit_vcpu *cv);

#endif /* VCPUSCHED_CREDIT_PRIV_H */
