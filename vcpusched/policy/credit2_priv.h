/* SPDX-License-Identifier: ISC */
/*
 * credit2_priv.h - Credit2's private state, shared by the files of the
 * policy: credit2.c (credits, decisions, parameters), credit2_runq.c
 * (runqueues, tickling, arrangement), credit2_budget.c (caps) and
 * credit2_load.c (load tracking, placement, balancing). Nothing outside
 * vcpusched/policy/ includes it.
 */
#ifndef VCPUSCHED_CREDIT2_PRIV_H
#define VCPUSCHED_CREDIT2_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "policies.h"

/* Constants of xen/common/sched/credit2.c (Xen 4.22), in ns unless named. */
#define CREDIT2_DEFAULT_WEIGHT 256 /* CSCHED2_DEFAULT_WEIGHT */
/* Shortest slice, to keep switching overhead bounded. */
#define CREDIT2_MIN_TIMER_NS ((int64_t)500 * (int64_t)NSEC_PER_USEC)
/* Credit a vCPU starts with and gains at each reset: 10 ms for max weight. */
#define CREDIT2_CREDIT_INIT ((int64_t)10 * (int64_t)NSEC_PER_MSEC)
/* Floor: tracking deeper debt makes no sense (Xen >= 4.14). */
#define CREDIT2_CREDIT_MIN (-CREDIT2_CREDIT_INIT)
/* Credit of the idle "vCPU": below anything a real one can have. */
#define CREDIT2_IDLE_CREDIT (CREDIT2_CREDIT_MIN - 1)
/* Extra credit a sleeper may carry past a reset. */
#define CREDIT2_CARRYOVER_MAX CREDIT2_MIN_TIMER_NS
/* Cross-CPU pull resistance (boot option sched_credit2_migrate_resist). */
#define CREDIT2_MIGRATE_RESIST_NS ((int64_t)500 * (int64_t)NSEC_PER_USEC)
/* Credit given to a vCPU pulled from another CPU, for its cold cache. */
#define CREDIT2_MIGRATE_COMPENSATION_NS ((int64_t)50 * (int64_t)NSEC_PER_USEC)
/* Do not tickle a runner the ratelimit would keep anyway (4b6923acff). */
#define CREDIT2_RATELIMIT_TICKLE_TOLERANCE_NS ((int64_t)50 * (int64_t)NSEC_PER_USEC)
/* A reset happens when the best credit is at or below this. */
#define CREDIT2_CREDIT_RESET 0
/* Longest slice: what the max-weight vCPU earns per epoch. */
#define CREDIT2_MAX_TIMER_NS CREDIT2_CREDIT_INIT
/* Budget replenishment period of capped domains (credit2_cap_period_ms). */
#define CREDIT2_BDGT_REPL_PERIOD_NS ((int64_t)10 * (int64_t)NSEC_PER_MSEC)
/* Budget of a vCPU of an uncapped domain (Xen's STIME_MAX). */
#define CREDIT2_NO_BUDGET INT64_MAX
/* CPUs per runqueue (sched_credit2_max_cpus_runqueue, Xen >= 4.14). */
#define CREDIT2_MAX_CPUS_RUNQ 16
/* Load samples are taken in units of 2^10 ns (~1 us). */
#define CREDIT2_LOAD_GRANULARITY_SHIFT 10
/* Decay window 2^30 ns (~1.07 s), expressed in sample units. */
#define CREDIT2_LOAD_WINDOW_SHIFT (30 - CREDIT2_LOAD_GRANULARITY_SHIFT)
/* Fixed point: one always-runnable vCPU is 2^18. */
#define CREDIT2_LOAD_PRECISION_SHIFT 18
/* Balance when the load gap is >= 2^(P+under) below 100 %, 2^(P+over) above. */
#define CREDIT2_BALANCE_UNDER        0
#define CREDIT2_BALANCE_OVER         (-3)
#define CREDIT2_DEFAULT_RATELIMIT_US 1000   /* sched_ratelimit_us */
#define CREDIT2_RATELIMIT_MIN_US     100    /* XEN_SYSCTL_SCHED_RATELIMIT_MIN */
#define CREDIT2_RATELIMIT_MAX_US     500000 /* XEN_SYSCTL_SCHED_RATELIMIT_MAX */
#define CREDIT2_MAX_CAP              65535  /* Xen keeps the cap in a uint16_t */

/* Runqueue arrangements (credit2_runqueue=). */
enum credit2_arrangement {
    CREDIT2_RUNQ_CPU,
    CREDIT2_RUNQ_CORE,
    CREDIT2_RUNQ_SOCKET,
    CREDIT2_RUNQ_NODE,
    CREDIT2_RUNQ_ALL,
};

struct credit2_runq;
struct credit2_dom;

/* Xen's csched2_unit. */
struct credit2_vcpu {
    TAILQ_ENTRY(credit2_vcpu) runq_elem;   /* on rqd->runq while queued */
    TAILQ_ENTRY(credit2_vcpu) rqd_elem;    /* on rqd->svc: assigned, sleeping or not */
    TAILQ_ENTRY(credit2_vcpu) parked_elem; /* on sdom->parked while parked */
    struct policy_vcpu *v;
    struct credit2_dom *sdom;
    struct credit2_runq *rqd;
    int64_t credit;
    unsigned int weight;
    uint64_t residual;    /* remainder of the weighted burn */
    int64_t budget;       /* CREDIT2_NO_BUDGET unless capped */
    int64_t budget_quota; /* what one grab takes from the domain */
    int on_cpu;           /* CPU it is elected on, or -1 (Xen: scheduled) */
    uint64_t state_entry; /* when it was elected on on_cpu (ratelimit) */
    int tickled_cpu;      /* CPU tickled to pick it, or -1 */
    bool on_runq;
    bool on_parked;
    bool yield;
    bool pinned;          /* hard affinity is one CPU */
    bool migrate_request; /* elected, and balancing wants it on migrate_rqd */
    struct credit2_runq *migrate_rqd;
    int64_t load_last_update; /* in 2^10 ns units */
    int64_t avgload;          /* decaying, fixed point (P) */
    /* Counters for vcpu_stats. */
    uint64_t run_ns;
    uint64_t resets;
    int64_t reset_from; /* credit before the last reset */
    uint64_t parks;
    uint64_t migrations;
};
TAILQ_HEAD(credit2_vcpu_list, credit2_vcpu);

/* Xen's csched2_dom. */
struct credit2_dom {
    struct policy_dom *d;
    unsigned int weight;
    unsigned int cap;   /* % of one CPU, 0 = none */
    int64_t tot_budget; /* per period */
    int64_t budget;     /* pool the vCPUs grab from */
    uint64_t next_repl; /* next replenishment (absolute) */
    bool repl_armed;    /* on priv->capped, timer running */
    struct credit2_vcpu_list parked;
    TAILQ_ENTRY(credit2_dom) repl_elem; /* on priv->capped, by next_repl */
};
TAILQ_HEAD(credit2_dom_list, credit2_dom);

/* Xen's csched2_runqueue_data (masks are over pool CPU indexes). */
struct credit2_runq {
    int id;
    struct credit2_vcpu_list runq; /* runnable, not elected, by credit */
    struct credit2_vcpu_list svc;  /* every vCPU assigned here */
    unsigned int nr_cpus;
    struct cpuset active;   /* CPUs of the runqueue */
    struct cpuset idle;     /* CPUs running nothing */
    struct cpuset tickled;  /* CPUs asked to pick and that have not yet */
    struct cpuset smt_idle; /* CPUs whose whole core is idle and untickled */
    int load;               /* instantaneous: queued + elected vCPUs */
    int64_t load_last_update;
    int64_t avgload;
    int64_t b_avgload; /* the balancer's view, adjusted on (de)assignment */
    unsigned int max_weight;
    unsigned int pick_bias; /* last CPU chosen for placement */
    unsigned int first_cpu; /* topology reference for matching */
};

struct credit2_pcpu {
    struct credit2_runq *rqd;
    struct cpuset sibling_mask; /* SMT siblings in the same runqueue, itself included */
    struct credit2_vcpu *cur;   /* elected vCPU, NULL when idle */
};

struct credit2_priv {
    unsigned int ratelimit_us;
    bool inflight; /* slices end at the switched-out vCPU's credit too (Xen >= 4.21) */
    enum credit2_arrangement arrangement;
    int picking_cpu;   /* CPU inside pick(), or -1 */
    uint64_t last_now; /* latest time seen, for statistics only */
    unsigned int nr_runqs;
    struct credit2_runq *runqs;     /* nr_runqs entries, by id */
    struct credit2_dom_list capped; /* domains with a budget timer */
    struct credit2_pcpu cpu[];
};

static inline struct credit2_priv *
credit2_priv(const struct policy *pol)
{
    return pol->priv;
}

static inline struct credit2_vcpu *
credit2_vcpu(const struct policy_vcpu *v)
{
    return v->priv;
}

static inline struct credit2_dom *
credit2_dom(const struct policy_dom *d)
{
    return d->priv;
}

static inline bool
credit2_has_cap(const struct credit2_vcpu *svc)
{
    return svc->budget != CREDIT2_NO_BUDGET;
}

/* Xen's unit_runnable_state: runnable, not parked, not being migrated. */
static inline bool
credit2_runnable(const struct credit2_vcpu *svc)
{
    return svc->v->runnable && !svc->v->parked && !svc->migrate_request;
}

/* credit2_runq.c: runqueues, tickling and arrangement. */
int credit2_runq_arrange(struct policy *pol, char *err);
void credit2_runq_insert(struct credit2_vcpu *svc);
void credit2_runq_remove(struct credit2_vcpu *svc);
void credit2_runq_tickle_cpu(struct policy *pol, struct credit2_runq *rqd, unsigned int cpu);
void credit2_runq_tickle(struct policy *pol, struct credit2_vcpu *svc, uint64_t now);
void credit2_runq_pick_started(struct credit2_runq *rqd, const struct credit2_pcpu *pc,
                               unsigned int cpu);
void credit2_runq_set_busy(struct credit2_runq *rqd, const struct credit2_pcpu *pc,
                           unsigned int cpu, bool busy);
void credit2_runq_max_weight(struct credit2_runq *rqd, unsigned int new_weight,
                             unsigned int old_weight);
unsigned int credit2_runq_cycle(unsigned int cpu, const struct cpuset *mask);
const char *credit2_runq_arrangement_name(enum credit2_arrangement a);
int credit2_runq_arrangement_parse(const char *s, enum credit2_arrangement *out);

/* credit2_load.c: load averages, placement, balancing, migration. */
void credit2_load_update(struct credit2_runq *rqd, struct credit2_vcpu *svc, int change,
                         uint64_t now);
void credit2_load_assign(struct credit2_vcpu *svc, struct credit2_runq *rqd);
void credit2_load_deassign(struct credit2_vcpu *svc);
unsigned int credit2_load_res_pick(struct policy *pol, struct credit2_vcpu *svc);
int64_t credit2_load_pct(const struct credit2_vcpu *svc, uint64_t now);
void credit2_load_balance(struct policy *pol, unsigned int cpu, uint64_t now);
void credit2_load_move(struct policy *pol, struct credit2_vcpu *svc, struct credit2_runq *trqd,
                       uint64_t now);

/* credit2_budget.c: caps. */
bool credit2_budget_grab(struct policy *pol, struct credit2_vcpu *svc, uint64_t now);
void credit2_budget_return(struct policy *pol, struct credit2_vcpu *svc, uint64_t now);
void credit2_budget_unpark(struct policy *pol, struct credit2_dom *sdom, uint64_t now);
void credit2_budget_vcpu_init(struct policy *pol, struct credit2_vcpu *svc, uint64_t now);
void credit2_budget_vcpu_fini(struct credit2_vcpu *svc);
void credit2_budget_set_cap(struct policy *pol, struct credit2_dom *sdom, unsigned int cap,
                            uint64_t now);
void credit2_budget_dom_fini(struct policy *pol, struct credit2_dom *sdom);
void credit2_budget_timer(struct policy *pol, uint64_t now);

#endif /* VCPUSCHED_CREDIT2_PRIV_H */
