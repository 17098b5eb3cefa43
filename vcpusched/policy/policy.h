/* SPDX-License-Identifier: ISC */
/*
 * policy.h - the contract between the scheduling core and a policy.
 *
 * A policy is a pure decision function over events. It never calls the
 * kernel, never reads a clock (time arrives as `now`, ns, monotonic), never
 * logs and keeps no global state. The same inputs give the same decisions,
 * so a policy runs unchanged in unit tests, in the simulator (tests/sim)
 * and on the real host (sched_core.c, dispatch.c, actuator_linux.c).
 *
 * Modelled on Xen's `struct scheduler` and the sched_ext ops: one const
 * `struct policy_ops` per policy, one `struct policy` per pool.
 */
#ifndef VCPUSCHED_POLICY_H
#define VCPUSCHED_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cpuset.h"
#include "common/kv.h"
#include "common/limits.h"

#define POLICY_NEVER  UINT64_MAX /* "no deadline" for timers and slices */
#define POLICY_ERRLEN 160        /* size of every errbuf handed to a policy */

struct policy;

/*
 * A pCPU of the pool, as the topology module found it. Pool-local index i
 * (0..nr_cpus-1) is what policies use everywhere; `cpu` is the host CPU.
 */
struct policy_cpu {
    int cpu;    /* host CPU number */
    int core;   /* host core id (SMT siblings share it) */
    int socket; /* physical package id */
    int node;   /* NUMA node */
};

/* A domain (a VM, or a process attached with --pid). Owned by the core. */
struct policy_dom {
    uint32_t id;                /* core: unique in the pool, never reused while attached */
    const char *name;           /* core */
    unsigned int nr_vcpus;      /* core */
    struct policy_vcpu **vcpus; /* core: nr_vcpus entries */
    void *core;                 /* core: its own record of the domain */
    void *priv;                 /* policy */
};

/*
 * A vCPU: one managed thread. The core owns the header; the fields marked
 * "policy" are written only through the helpers below, so that the core
 * sees every change (it turns them into affinity and freeze calls).
 */
struct policy_vcpu {
    uint32_t id;                    /* core: unique in the pool */
    unsigned int index;             /* core: vCPU number within its domain */
    struct policy_dom *dom;         /* core */
    struct cpuset affinity;         /* core: pool CPUs it may use (hard affinity), never empty */
    bool runnable;                  /* core: true between wake and sleep */
    unsigned int cpu;               /* policy: pool CPU it lives on while not elected */
    bool parked;                    /* policy: must consume no CPU at all (caps) */
    bool dirty;                     /* core: on the pool's dirty list */
    struct policy_vcpu *next_dirty; /* core */
    void *core;                     /* core: its own record of the vCPU */
    void *priv;                     /* policy */
};

/* What pick() answers: run `vcpu` (NULL: idle) on the CPU until `until`. */
struct policy_decision {
    struct policy_vcpu *vcpu;
    uint64_t until; /* absolute ns; POLICY_NEVER = until tickled */
};

/*
 * Parameters. Each policy declares its pool-wide and per-domain keys as a
 * schema; policy.c parses "key=value" strings against it (type, range) so
 * every policy refuses bad input the same way, and hands the policy typed
 * values. Cross-field rules (ratelimit <= tslice, cap <= 100 x vCPUs) stay
 * in the policy's set_params, which must refuse before changing anything.
 */
enum policy_param_type {
    POLICY_PARAM_INT,  /* decimal integer in [min, max] */
    POLICY_PARAM_BOOL, /* on/off, true/false, yes/no, 1/0 */
    POLICY_PARAM_STR,  /* free text, at most `max` bytes */
};

struct policy_param {
    const char *name;
    enum policy_param_type type;
    int64_t min, max;
    int64_t def;      /* default for INT and BOOL */
    const char *help; /* one line, shown by `vcpuschedctl help` */
};

/* Parsed values, indexed like the schema; `set` has bit i for given keys. */
struct policy_values {
    uint32_t set;
    int64_t i[VS_PARAMS_MAX];
    const char *s[VS_PARAMS_MAX];
};

/*
 * A sink for get_params and stats output: the core writes JSON, the
 * simulator a table. Keys are short snake_case names with units.
 */
struct policy_sink {
    void (*put_int)(struct policy_sink *sk, const char *key, int64_t val);
    void (*put_str)(struct policy_sink *sk, const char *key, const char *val);
    void *ctx;
};

/*
 * The ops table. Unless stated, a callback is mandatory. All callbacks of
 * one pool are serialised by the core (the pool lock), run with `now`
 * non-decreasing across calls, and must not block, allocate on the hot
 * path, or make system calls.
 *
 * Charging. Before any hot-path callback at time `now`, the core reports
 * with charge() the CPU time each vCPU really consumed since its previous
 * charge, measured from kernel switch events (or schedstat). Measured
 * time is not necessarily what the policy elected: a non-elected vCPU runs
 * when the elected one blocks and the core has not yet re-picked.
 *
 * Rescheduling. pick(cpu) is called when `until` of the CPU's previous
 * decision is reached, when the policy tickled the CPU (policy_tickle), and
 * right after sleep() or vcpu_remove() of the vCPU elected on that CPU.
 */
struct policy_ops {
    const char *name;
    const char *summary;                    /* one line for `vcpuschedctl help` */
    const struct policy_param *pool_params; /* NULL-name terminated, or NULL: none */
    const struct policy_param *dom_params;  /* NULL-name terminated, or NULL: none */
    /*
     * Sizes of the private data the core allocates (zeroed) behind
     * d->priv and v->priv before dom_add/vcpu_add and frees after
     * dom_remove/vcpu_remove, so membership ops never fail for memory.
     */
    size_t dom_priv_size;
    size_t vcpu_priv_size;

    /* Set up pol->priv for pol->nr_cpus CPUs with validated pool values. */
    int (*init)(struct policy *pol, const struct policy_values *pv, char *err);
    /* Optional: release pol->priv. Default: free(pol->priv). */
    void (*fini)(struct policy *pol);

    /*
     * Membership: control path, may allocate. dom_add (optional, default:
     * accept) gets validated domain values and must refuse (leaving
     * nothing behind) on a bad combination; dom_remove (optional, default:
     * nothing) undoes it. vcpu_add runs after dom_add for each vCPU, which
     * arrives not runnable (v->cpu = 0); it must place the vCPU
     * (policy_vcpu_move) on a CPU of its affinity, where the core then
     * pins it. vcpu_remove may be called for a runnable or elected vCPU;
     * the core re-picks its CPU afterwards.
     */
    int (*dom_add)(struct policy *pol, struct policy_dom *d, const struct policy_values *dv,
                   char *err);
    void (*dom_remove)(struct policy *pol, struct policy_dom *d);
    void (*vcpu_add)(struct policy *pol, struct policy_vcpu *v, uint64_t now);
    void (*vcpu_remove)(struct policy *pol, struct policy_vcpu *v, uint64_t now);

    /*
     * Hot path. v->runnable is already updated when wake/sleep run.
     * yield is optional (default: nothing, the vCPU runs on); charge is
     * optional (default: the measured time is not looked at).
     */
    void (*wake)(struct policy *pol, struct policy_vcpu *v, uint64_t now);
    void (*sleep)(struct policy *pol, struct policy_vcpu *v, uint64_t now);
    void (*yield)(struct policy *pol, struct policy_vcpu *v, uint64_t now);
    void (*charge)(struct policy *pol, struct policy_vcpu *v, uint64_t ran_ns, uint64_t now);
    /*
     * Choose what `cpu` runs from now on. The answer must be runnable, not
     * parked, allowed on `cpu`, and not elected on another CPU; the policy
     * moves it to `cpu` (policy_vcpu_move) if it lived elsewhere. `until`
     * must be > now unless the answer is idle with POLICY_NEVER.
     */
    void (*pick)(struct policy *pol, unsigned int cpu, uint64_t now, struct policy_decision *out);
    /*
     * Optional: the pool timer (Credit's tick and accounting, Credit2's
     * budget refills). Called when now >= pol->timer, which the core
     * resets to POLICY_NEVER first; re-arm with policy_timer_arm().
     * Default: nothing (a policy without one never arms the timer).
     */
    void (*timer)(struct policy *pol, uint64_t now);

    /*
     * Control plane. set_params applies values for a domain (d != NULL)
     * or the pool (d == NULL); on error it fills err and changes nothing.
     * It is mandatory for a policy with parameters; one without may leave
     * it out. get_params (optional, default: nothing) writes every current
     * value; vcpu_stats (optional, default: nothing) the per-vCPU counters.
     */
    int (*set_params)(struct policy *pol, struct policy_dom *d, const struct policy_values *val,
                      uint64_t now, char *err);
    void (*get_params)(struct policy *pol, struct policy_dom *d, struct policy_sink *sk);
    void (*vcpu_stats)(struct policy *pol, struct policy_vcpu *v, struct policy_sink *sk);
};

/* A policy instance: one per pool. */
struct policy {
    const struct policy_ops *ops;
    void *priv;
    unsigned int nr_cpus;
    const struct policy_cpu *cpus; /* nr_cpus entries, owned by the core */
    /* Outputs to the core, written only through the helpers below. */
    struct cpuset tickled;     /* CPUs whose pick() must run again now */
    uint64_t timer;            /* absolute ns of the next timer() call */
    struct policy_vcpu *dirty; /* vCPUs whose cpu or parked changed */
};

/* --- Helpers for policies (inline: no call cost on the hot path). --- */

/* Ask the core to call pick(cpu) as soon as it can (Xen's tickle/IPI). */
static inline void
policy_tickle(struct policy *pol, unsigned int cpu)
{
    cpuset_set(&pol->tickled, cpu);
}

/* Arm the pool timer for `when`, keeping an earlier deadline if armed. */
static inline void
policy_timer_arm(struct policy *pol, uint64_t when)
{
    if (when < pol->timer)
        pol->timer = when;
}

static inline void
policy_vcpu_mark_dirty(struct policy *pol, struct policy_vcpu *v)
{
    if (!v->dirty) {
        v->dirty = true;
        v->next_dirty = pol->dirty;
        pol->dirty = v;
    }
}

/* Re-home a vCPU (migration, stealing, balancing, initial placement). */
static inline void
policy_vcpu_move(struct policy *pol, struct policy_vcpu *v, unsigned int cpu)
{
    if (v->cpu != cpu) {
        v->cpu = cpu;
        policy_vcpu_mark_dirty(pol, v);
    }
}

/* Stop (parked = true) or allow (false) any CPU use by the vCPU. */
static inline void
policy_vcpu_park(struct policy *pol, struct policy_vcpu *v, bool parked)
{
    if (v->parked != parked) {
        v->parked = parked;
        policy_vcpu_mark_dirty(pol, v);
    }
}

static inline bool
policy_vcpu_allowed(const struct policy_vcpu *v, unsigned int cpu)
{
    return cpuset_has(&v->affinity, cpu);
}

/*
 * --- Calls into a policy, with the defaults of the optional ops. The core
 * (pool.c) calls policies only through these.
 */

static inline int
policy_dom_add(struct policy *pol, struct policy_dom *d, const struct policy_values *dv, char *err)
{
    return pol->ops->dom_add != NULL ? pol->ops->dom_add(pol, d, dv, err) : 0;
}

static inline void
policy_dom_remove(struct policy *pol, struct policy_dom *d)
{
    if (pol->ops->dom_remove != NULL)
        pol->ops->dom_remove(pol, d);
}

static inline void
policy_yield(struct policy *pol, struct policy_vcpu *v, uint64_t now)
{
    if (pol->ops->yield != NULL)
        pol->ops->yield(pol, v, now);
}

static inline void
policy_charge(struct policy *pol, struct policy_vcpu *v, uint64_t ran_ns, uint64_t now)
{
    if (pol->ops->charge != NULL)
        pol->ops->charge(pol, v, ran_ns, now);
}

static inline void
policy_timer(struct policy *pol, uint64_t now)
{
    if (pol->ops->timer != NULL)
        pol->ops->timer(pol, now);
}

static inline int
policy_set_params(struct policy *pol, struct policy_dom *d, const struct policy_values *val,
                  uint64_t now, char *err)
{
    return pol->ops->set_params != NULL ? pol->ops->set_params(pol, d, val, now, err) : 0;
}

static inline void
policy_get_params(struct policy *pol, struct policy_dom *d, struct policy_sink *sk)
{
    if (pol->ops->get_params != NULL)
        pol->ops->get_params(pol, d, sk);
}

static inline void
policy_vcpu_stats(struct policy *pol, struct policy_vcpu *v, struct policy_sink *sk)
{
    if (pol->ops->vcpu_stats != NULL)
        pol->ops->vcpu_stats(pol, v, sk);
}

/* --- Registry and parameter handling (policy.c). --- */

const struct policy_ops *policy_find(const char *name);
/* NULL-terminated list of every built-in policy, for help output. */
const struct policy_ops *const *policy_all(void);
/*
 * An ops table's mandatory parts: name, init, vcpu_add, vcpu_remove, wake,
 * sleep, pick, and set_params when it has parameters; well-formed schemas.
 */
int policy_ops_check(const struct policy_ops *ops, char *err);
/* Checks the built-in table once (duplicate names, each table's ops). */
int policy_registry_check(char *err);

/*
 * Parse kv[0..n) against `schema` into `out`. Unknown keys, duplicates,
 * bad types and out-of-range values fail with -EINVAL and a message that
 * names the key; `out` is then unspecified. With `ignore_unknown`, keys not
 * in the schema are skipped (used when a pool switches policy and a
 * domain's old parameters are carried over).
 */
int policy_values_parse(const struct policy_param *schema, const struct kv *kv, size_t n,
                        bool ignore_unknown, struct policy_values *out, char *err);
/* Fill `out` with the schema defaults, none marked as set. */
void policy_values_defaults(const struct policy_param *schema, struct policy_values *out);
/* Index of `name` in `schema`, or -1. */
int policy_param_index(const struct policy_param *schema, const char *name);

/*
 * Instance lifecycle: policy_create validates pool parameters and calls
 * init; policy_destroy calls fini. `cpus` must outlive the instance.
 */
int policy_create(struct policy *pol, const struct policy_ops *ops, const struct policy_cpu *cpus,
                  unsigned int nr_cpus, const struct kv *kv, size_t n, char *err);
void policy_destroy(struct policy *pol);

/* Pop the dirty list (the core actuates each entry). */
struct policy_vcpu *policy_take_dirty(struct policy *pol);

#endif /* VCPUSCHED_POLICY_H */
