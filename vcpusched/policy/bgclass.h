/* SPDX-License-Identifier: ISC */
/*
 * bgclass.h - the background class: a layer between the pool and its
 * policy that holds background vCPUs back while foreground ones want a
 * CPU (one slice every alpha), and hands them to the policy (batch mode)
 * after beta without foreground demand. Pure, like the pool; the design
 * is in bgclass.c's header comment and docs/design.md.
 */
#ifndef VCPUSCHED_BGCLASS_H
#define VCPUSCHED_BGCLASS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "policy.h"

struct pool;
struct pool_dom;
struct pool_vcpu;

#define BGCLASS_KEY "class" /* the domain parameter */

enum bgclass_mode {
    BGCLASS_NORMAL, /* background vCPUs held: gaps and one slice per alpha */
    BGCLASS_BATCH,  /* background vCPUs scheduled by the policy */
};

enum bgclass_unit {
    BGCLASS_UNIT_NONE,
    BGCLASS_UNIT_ALPHA, /* a slice released by the alpha clock: not preempted */
    BGCLASS_UNIT_GAP,   /* a slice of time no foreground vCPU wants: preempted */
};

/* Per vCPU (in struct pool_vcpu). */
struct bgclass_vcpu {
    bool bg;                     /* its domain is in the background class */
    bool held;                   /* runnable but hidden from the policy (asleep to it) */
    bool counted;                /* foreground: counted in fg_demand of `home` */
    bool counted_ready;          /* foreground: counted in fg_ready of `home` */
    unsigned int home;           /* CPU it is counted or queued on */
    TAILQ_ENTRY(pool_vcpu) link; /* held queue of `home` */
};
TAILQ_HEAD(bgclass_queue, pool_vcpu);

/* Per pool CPU, while the layer is active. */
struct bgclass_cpu {
    enum bgclass_mode mode;
    unsigned int fg_demand;    /* runnable foreground vCPUs living here */
    unsigned int fg_ready;     /* ... of which not parked */
    uint64_t fg_idle_since;    /* when fg_demand last fell to 0 */
    struct bgclass_queue held; /* held vCPUs living here, longest waiting first */
    unsigned int nr_held;
    uint64_t bg_off;        /* alpha clock: background last stopped running, or began waiting */
    enum bgclass_unit unit; /* the background slice running now, if any */
    uint64_t unit_end;
    struct pool_vcpu *pol_cur; /* the policy's latest answer for this CPU */
    uint64_t pol_until;
    bool pick_pending; /* a pick was asked for during an alpha slice */
};

struct bgclass_stats {
    uint64_t batch_enters; /* normal -> batch switches */
    uint64_t batch_exits;  /* batch -> normal switches (a foreground wake) */
    uint64_t alpha_slices; /* slices released by the alpha clock */
    uint64_t gap_slices;   /* slices given in foreground idle time */
};

struct bgclass {
    uint64_t alpha_ns, beta_ns, slice_ns;
    unsigned int nr_bg_doms; /* the layer is active while > 0 */
    unsigned int nr_cpus;
    struct bgclass_cpu *cpu; /* allocated at the first activation, kept */
    struct cpuset asked;     /* CPUs a pick was asked for (the caller may run it late) */
    struct bgclass_stats stats;
};

/* The layer's pool and domain parameters (every policy accepts them), for `help`. */
const struct policy_param *bgclass_pool_params(void);
const struct policy_param *bgclass_dom_params(void);

static inline bool
bgclass_active(const struct bgclass *cls)
{
    return cls->nr_bg_doms > 0;
}

/* --- parameters (control path) --- */

/* Defaults for `nr_cpus` CPUs; nothing is allocated. */
void bgclass_init(struct bgclass *cls, unsigned int nr_cpus);
void bgclass_fini(struct bgclass *cls);
/*
 * Move the layer's keys of kv[0..n) (bg_* for a pool, class for a domain)
 * to ours[], the rest to theirs[] (the policy's), order kept.
 */
void bgclass_split(const struct kv *kv, size_t n, bool dom, struct kv *theirs, size_t *nt,
                   struct kv *ours, size_t *no);
/* Validate pool values (merged over the current ones) without applying. */
int bgclass_pool_check(const struct bgclass *cls, const struct kv *kv, size_t n, char *err);
/* Apply checked pool values; CPUs whose deadlines depend on them re-pick. */
void bgclass_pool_apply(struct pool *p, const struct kv *kv, size_t n);
/* A domain's class from its layer keys: 1 background, 0 foreground, -1 not given. */
int bgclass_dom_parse(const struct kv *kv, size_t n, int *bg, char *err);
/* Make room for an activation (the per-CPU state), before anything changes. */
int bgclass_prepare(struct pool *p, char *err);

/* --- membership (control path) --- */

/* A domain was attached (its vCPUs not runnable yet); bg: its class. */
void bgclass_dom_join(struct pool *p, struct pool_dom *d, bool bg, uint64_t now);
/* A domain is about to leave the pool (before the policy forgets it). */
void bgclass_dom_leave(struct pool *p, struct pool_dom *d, uint64_t now);
/* The same for one vCPU (vCPU hotplug), with its domain's class. */
void bgclass_vcpu_join(struct pool *p, struct pool_vcpu *v, bool bg, uint64_t now);
void bgclass_vcpu_leave(struct pool *p, struct pool_vcpu *v, uint64_t now);
/* Change an attached domain's class (prepare first). */
void bgclass_dom_set(struct pool *p, struct pool_dom *d, bool bg, uint64_t now);
/*
 * A live policy switch: before the new instance is woken, every runnable
 * background vCPU is held (the new policy is not told it runs); after,
 * the counts are rebuilt from the new policy's placement. Every CPU
 * starts in normal mode and beta counts from the switch.
 */
void bgclass_switch_begin(struct pool *p);
void bgclass_switch_end(struct pool *p, uint64_t now);
/*
 * A change of the pool's CPUs (inside a switch's begin and end): per-CPU
 * state for `nr_cpus` CPUs, allocated before anything changes if the
 * layer has any (*out NULL if not), then taken in place of the old.
 */
int bgclass_cpus_prepare(const struct bgclass *cls, unsigned int nr_cpus, struct bgclass_cpu **out,
                         char *err);
void bgclass_cpus_commit(struct bgclass *cls, unsigned int nr_cpus, struct bgclass_cpu *cpu);

/* --- hot path --- */

/* v woke; true if the layer holds it (the policy is not told). */
bool bgclass_wake(struct pool *p, struct pool_vcpu *v, uint64_t now);
/* v slept; true if it was held (the policy thought it asleep already). */
bool bgclass_sleep(struct pool *p, struct pool_vcpu *v, uint64_t now);
/*
 * After every pool operation: what the policy changed (placement,
 * parking: the dirty list) and v's new state (NULL: none), in counts,
 * modes and held vCPUs.
 */
void bgclass_sync(struct pool *p, struct pool_vcpu *v, uint64_t now);
/*
 * Decide for `cpu`, asking the policy when needed. *raw gets the
 * policy's own answer (vcpu NULL, until 0 when it was not asked), *out
 * the decision. Returns NULL, or what the policy's answer broke.
 */
const char *bgclass_pick(struct pool *p, unsigned int cpu, uint64_t now,
                         struct policy_decision *raw, struct policy_decision *out);

/* --- output --- */

/* "normal" or "batch" for a background vCPU (the mode of its CPU), else NULL. */
const char *bgclass_vcpu_mode(const struct pool *p, const struct pool_vcpu *v);
void bgclass_get_params(const struct bgclass *cls, struct policy_sink *sk);

#endif /* VCPUSCHED_BGCLASS_H */
