/* SPDX-License-Identifier: ISC */
/*
 * pool.h - a pool (Xen's cpupool): a set of CPUs, one policy instance, and
 * the domains attached to it.
 *
 * This layer is pure, like the policies: it sequences policy calls
 * (charge before every hot-path call, re-pick after the elected vCPU
 * sleeps or leaves), keeps parameters so they survive a policy switch, and
 * checks every decision against the ops contract. It makes no system call.
 * The daemon (sched_core.c, dispatch.c) drives it with kernel events and turns its outputs
 * into priority, affinity and freeze calls; the simulator (tests/sim)
 * drives it with a model of the kernel. Both see exactly the same
 * decisions for the same events.
 *
 * Outputs after any call: pool_need_pick() CPUs to re-pick now, and
 * pool_take_dirty() vCPUs whose home CPU or parked state changed.
 */
#ifndef VCPUSCHED_POOL_H
#define VCPUSCHED_POOL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "bgclass.h"
#include "policy.h"

/* Parameters as given ("key=value"), kept to carry them across switches. */
struct pool_kvs {
    unsigned int n;
    struct {
        char *key;
        char *val;
    } kv[VS_PARAMS_MAX];
};

struct pool_vcpu {
    struct policy_vcpu *pv; /* header of the current policy instance */
    struct pool_dom *dom;
    unsigned int index;     /* vCPU number within its domain */
    struct cpuset affinity; /* pool CPUs it may use */
    bool runnable;
    int elected_on;        /* CPU it is elected on, or -1 */
    uint64_t uncharged_ns; /* measured, not yet reported to the policy */
    struct pool_vcpu *next_charge;
    bool on_charge_list;
    void *owner; /* the caller's record (thread, simulated vCPU) */
    /* Counters for `vcpuschedctl list`. */
    uint64_t run_ns;
    uint64_t wakes;
    uint64_t sleeps;
    uint64_t elections;
    struct bgclass_vcpu cls; /* the background class layer's (bgclass.c) */
};

struct pool_dom {
    uint32_t id;
    char name[VS_NAME_SIZE];
    struct policy_dom *pd;
    unsigned int nr_vcpus;
    struct pool_vcpu **vcpus; /* each allocated alone: addresses survive hot-plug */
    struct pool_kvs params;
    bool background; /* class=background (bgclass.c) */
    void *owner;
    TAILQ_ENTRY(pool_dom) link;
};
TAILQ_HEAD(pool_dom_list, pool_dom);

struct pool_cpu {
    struct pool_vcpu *elected;
    uint64_t until;
};

struct pool_stats {
    uint64_t picks;
    uint64_t switches; /* picks that changed the elected vCPU */
    uint64_t wakes;
    uint64_t sleeps;
    uint64_t timers;
    uint64_t violations; /* decisions that broke the ops contract */
    uint64_t policy_switches;
    uint64_t resizes;      /* changes of the pool's CPUs */
    uint64_t clock_clamps; /* calls stamped before the previous one, given its time */
};

struct pool {
    char name[VS_NAME_SIZE];
    struct policy pol;
    struct policy_cpu *cpus; /* nr_cpus entries */
    unsigned int nr_cpus;
    struct pool_cpu cpu[CPUSET_MAX];
    struct pool_dom_list doms;
    unsigned int nr_doms;
    uint32_t next_dom_id;
    uint32_t next_vcpu_id;
    struct pool_kvs params;  /* pool parameters of the current policy */
    struct cpuset need_pick; /* CPUs to re-pick */
    struct pool_vcpu *charge_list;
    uint64_t last_now; /* the latest time given to the policy */
    struct pool_stats stats;
    char last_violation[POLICY_ERRLEN];
    struct bgclass cls; /* the background class layer (bgclass.c) */
};

/*
 * Create a pool running `policy` on `cpus` (copied). Pool parameters are
 * validated against the policy's schema and the background class's
 * (bg_*, bgclass.h); on error nothing is allocated.
 */
int pool_init(struct pool *p, const char *name, const char *policy, const struct policy_cpu *cpus,
              unsigned int nr_cpus, const struct kv *kv, size_t n, char *err);
/* Remove every domain and free everything (the caller released threads). */
void pool_fini(struct pool *p, uint64_t now);

/*
 * Attach a domain with `nr_vcpus` vCPUs, `affinity[i]` the pool CPUs vCPU
 * i may use (empty, or affinity NULL: all). Parameters are checked
 * strictly (the policy's, and class=foreground|background). On success
 * the vCPUs are placed (dirty) and not runnable; the caller then reports
 * wakes.
 */
int pool_dom_add(struct pool *p, const char *name, unsigned int nr_vcpus,
                 const struct cpuset *affinity, const struct kv *kv, size_t n, uint64_t now,
                 struct pool_dom **out, char *err);
void pool_dom_remove(struct pool *p, struct pool_dom *d, uint64_t now);
/*
 * vCPU hot-plug: one more vCPU for domain d, numbered one above its highest
 * index, allowed on `affinity` (NULL or empty: every CPU of the pool; else
 * it must meet the pool). Added to the policy with vcpu_add like a vCPU of
 * a new domain: placed (dirty), not runnable. Nothing else of the domain
 * or the other vCPUs changes. -E2BIG past VS_THREADS_MAX vCPUs, -EINVAL,
 * -ENOMEM; on error nothing changed.
 */
int pool_vcpu_add(struct pool *p, struct pool_dom *d, const struct cpuset *affinity, uint64_t now,
                  struct pool_vcpu **out, char *err);
/*
 * vCPU hot-unplug: remove v (runnable or elected: its CPU is re-picked)
 * with the policy's vcpu_remove; the others keep their index and state.
 * -EBUSY for a domain's last vCPU (detach the domain instead).
 */
int pool_vcpu_remove(struct pool *p, struct pool_vcpu *v, uint64_t now);
struct pool_dom *pool_dom_find(struct pool *p, const char *name);

/*
 * The parameters domain `d` takes into a pool running `ops` (a move): its
 * own that `ops` knows (the others are dropped, as in pool_switch), each
 * replaced by the same key of kv[0..n), plus the other keys of kv. kv is
 * checked strictly against `ops` first. out[] points into d's store and
 * kv. Returns how many (at most VS_PARAMS_MAX), or -EINVAL with `err`.
 */
int pool_dom_params_for(const struct pool_dom *d, const struct policy_ops *ops, const struct kv *kv,
                        size_t n, struct kv *out, char *err);

/* Change domain (d != NULL) or pool parameters; nothing changes on error. */
int pool_set(struct pool *p, struct pool_dom *d, const struct kv *kv, size_t n, uint64_t now,
             char *err);
/*
 * Switch the pool to another policy with pool parameters kv. The new
 * instance is built completely beside the old one (domains carry the
 * parameters the new policy knows), so a failure leaves the pool as it
 * was. On success every CPU needs a pick and every vCPU is dirty.
 */
int pool_switch(struct pool *p, const char *policy, const struct kv *kv, size_t n, uint64_t now,
                char *err);

/*
 * Change the pool's CPUs to cpus[0..n) (Xen's cpupool-cpu-add and
 * -remove), every domain staying. aff[k] (k counting vCPUs in domain
 * order, pool_nr_vcpus of them; NULL, or an entry empty: every new CPU)
 * is where each vCPU may run, in indexes of the new CPUs. The instance is
 * built again on the new CPUs as for a switch (same policy, parameters
 * kept), so a failure, a vCPU left without a CPU among them, leaves the
 * pool as it was. On success every CPU needs a pick and every vCPU is
 * dirty (placed anew).
 */
int pool_resize(struct pool *p, const struct policy_cpu *cpus, unsigned int n,
                const struct cpuset *aff, uint64_t now, char *err);
unsigned int pool_nr_vcpus(const struct pool *p);

/* Events. Duplicates (a wake of a runnable vCPU) are ignored. */
void pool_wake(struct pool *p, struct pool_vcpu *v, uint64_t now);
void pool_sleep(struct pool *p, struct pool_vcpu *v, uint64_t now);
void pool_yield(struct pool *p, struct pool_vcpu *v, uint64_t now);
/* Measured CPU time of v; reported to the policy before its next call. */
void pool_account(struct pool *p, struct pool_vcpu *v, uint64_t ran_ns);
/* Run the policy timer if it is due. */
void pool_timer(struct pool *p, uint64_t now);
/* Re-pick `cpu`; returns its new decision. */
const struct pool_cpu *pool_pick(struct pool *p, unsigned int cpu, uint64_t now);

/* Earliest of the CPU slice ends and the policy timer. */
uint64_t pool_next_deadline(const struct pool *p);
static inline const struct cpuset *
pool_need_pick(const struct pool *p)
{
    return &p->need_pick;
}
struct pool_vcpu *pool_take_dirty(struct pool *p);

/* Output of parameters and counters through a sink. */
void pool_get_params(struct pool *p, struct pool_dom *d, struct policy_sink *sk);
void pool_vcpu_stats(struct pool *p, struct pool_vcpu *v, struct policy_sink *sk);
const char *pool_policy_name(const struct pool *p);

#endif /* VCPUSCHED_POOL_H */
