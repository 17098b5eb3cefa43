/* SPDX-License-Identifier: ISC */
/*
 * credit2_runq.c - Credit2 runqueues: how pool CPUs are grouped into
 * runqueues from their topology, the credit-sorted queue itself, the
 * idle/tickled/SMT-idle masks, max_weight, and runq_tickle (which CPU a
 * queued vCPU should wake). Ported from xen/common/sched/credit2.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "credit2_priv.h"

static const char *const arrangement_names[] = {
    [CREDIT2_RUNQ_CPU] = "cpu",   [CREDIT2_RUNQ_CORE] = "core", [CREDIT2_RUNQ_SOCKET] = "socket",
    [CREDIT2_RUNQ_NODE] = "node", [CREDIT2_RUNQ_ALL] = "all",
};

const char *
credit2_runq_arrangement_name(enum credit2_arrangement a)
{
    return arrangement_names[a];
}

int
credit2_runq_arrangement_parse(const char *s, enum credit2_arrangement *out)
{
    for (unsigned int i = 0; i < sizeof(arrangement_names) / sizeof(arrangement_names[0]); i++) {
        if (strcmp(s, arrangement_names[i]) == 0) {
            *out = (enum credit2_arrangement)i;
            return 0;
        }
    }
    return -EINVAL;
}

/* --- Arrangement (cpu_add_to_runqueue) --------------------------------- */

static bool
same_core(const struct policy_cpu *a, const struct policy_cpu *b)
{
    return a->socket == b->socket && a->core == b->core;
}

static bool
runq_match(enum credit2_arrangement arr, const struct policy_cpu *peer, const struct policy_cpu *c)
{
    return arr == CREDIT2_RUNQ_ALL || (arr == CREDIT2_RUNQ_CORE && same_core(peer, c)) ||
           (arr == CREDIT2_RUNQ_SOCKET && peer->socket == c->socket) ||
           (arr == CREDIT2_RUNQ_NODE && peer->node == c->node);
}

/* SMT siblings of `cpu` among the pool's CPUs, itself included. */
static struct cpuset
pool_siblings(const struct policy *pol, unsigned int cpu)
{
    struct cpuset m;

    cpuset_zero(&m);
    for (unsigned int c = 0; c < pol->nr_cpus; c++)
        if (same_core(&pol->cpus[c], &pol->cpus[cpu]))
            cpuset_set(&m, c);
    return m;
}

/*
 * Xen's cpu_runqueue_siblings_match: would `cpu` and all its siblings fit
 * in rqd, counting every sibling of the CPUs already there?
 */
static bool
siblings_fit(const struct policy *pol, const struct credit2_runq *rqd, unsigned int cpu,
             unsigned int max_cpus_runq)
{
    struct cpuset seen, sib, own = pool_siblings(pol, cpu);
    unsigned int tot = 0;
    int c;

    cpuset_zero(&seen);
    cpuset_for_each(c, &rqd->active)
    {
        sib = pool_siblings(pol, (unsigned int)c);
        if (!cpuset_intersects(&sib, &seen)) {
            cpuset_or(&seen, &sib);
            tot += cpuset_count(&sib);
        }
    }
    return tot + cpuset_count(&own) <= max_cpus_runq;
}

/* The runqueue `cpu` joins: a matching one with its siblings, else the least full. */
static struct credit2_runq *
arrange_find(const struct policy *pol, struct credit2_priv *prv, unsigned int cpu,
             unsigned int max_cpus_runq)
{
    struct cpuset sib = pool_siblings(pol, cpu);
    struct credit2_runq *valid = NULL;

    for (unsigned int i = 0; i < prv->nr_runqs; i++) {
        struct credit2_runq *rqd = &prv->runqs[i];

        if (!runq_match(prv->arrangement, &pol->cpus[rqd->first_cpu], &pol->cpus[cpu]))
            continue;
        if (cpuset_intersects(&rqd->active, &sib))
            return rqd; /* siblings stay together, even past the limit */
        if (rqd->nr_cpus < max_cpus_runq && siblings_fit(pol, rqd, cpu, max_cpus_runq) &&
            (valid == NULL || rqd->nr_cpus < valid->nr_cpus))
            valid = rqd;
    }
    return valid;
}

/*
 * Group the pool's CPUs into runqueues, in CPU order, as Xen does when
 * CPUs join a pool: by the arrangement, at most max_cpus_runq CPUs each
 * where max_cpus_runq spreads the CPUs evenly under the 16-CPU limit, SMT
 * siblings always together. prv->runqs has room for nr_cpus runqueues.
 */
int
credit2_runq_arrange(struct policy *pol, char *err)
{
    struct credit2_priv *prv = credit2_priv(pol);
    unsigned int min_rqs = (pol->nr_cpus - 1) / CREDIT2_MAX_CPUS_RUNQ + 1;
    unsigned int max_cpus_runq = pol->nr_cpus / min_rqs;

    (void)err;
    for (unsigned int cpu = 0; cpu < pol->nr_cpus; cpu++) {
        struct credit2_runq *rqd = arrange_find(pol, prv, cpu, max_cpus_runq);

        if (rqd == NULL) {
            rqd = &prv->runqs[prv->nr_runqs];
            rqd->id = (int)prv->nr_runqs++;
            TAILQ_INIT(&rqd->runq);
            TAILQ_INIT(&rqd->svc);
            rqd->max_weight = 1;
            rqd->first_cpu = cpu;
            rqd->pick_bias = cpu;
        }
        cpuset_set(&rqd->active, cpu);
        cpuset_set(&rqd->idle, cpu);
        cpuset_set(&rqd->smt_idle, cpu);
        rqd->nr_cpus++;
        prv->cpu[cpu].rqd = rqd;
    }
    for (unsigned int cpu = 0; cpu < pol->nr_cpus; cpu++) {
        prv->cpu[cpu].sibling_mask = pool_siblings(pol, cpu);
        cpuset_and(&prv->cpu[cpu].sibling_mask, &prv->cpu[cpu].rqd->active);
    }
    return 0;
}

/* --- Masks ------------------------------------------------------------ */

/* Next CPU after `cpu` in mask, wrapping (cpumask_cycle); -1u if empty. */
unsigned int
credit2_runq_cycle(unsigned int cpu, const struct cpuset *mask)
{
    return (unsigned int)cpuset_cycle(mask, cpu);
}

/* `cpu` itself if in mask, else the next one (cpumask_test_or_cycle). */
static unsigned int
test_or_cycle(unsigned int cpu, const struct cpuset *mask)
{
    return cpuset_has(mask, cpu) ? cpu : credit2_runq_cycle(cpu, mask);
}

/* If all of cpu's siblings are idle and untickled, mark the whole core SMT-idle. */
static void
smt_idle_mask_set(const struct credit2_pcpu *pc, struct credit2_runq *rqd)
{
    struct cpuset idlers;

    cpuset_andnot2(&idlers, &rqd->idle, &rqd->tickled);
    if (cpuset_subset(&pc->sibling_mask, &idlers))
        cpuset_or(&rqd->smt_idle, &pc->sibling_mask);
}

static void
smt_idle_mask_clear(const struct credit2_pcpu *pc, struct cpuset *mask)
{
    if (cpuset_subset(&pc->sibling_mask, mask))
        cpuset_andnot(mask, &pc->sibling_mask);
}

/* Ask `cpu` to pick again (Xen's IPI), and keep the masks right. */
void
credit2_runq_tickle_cpu(struct policy *pol, struct credit2_runq *rqd, unsigned int cpu)
{
    cpuset_set(&rqd->tickled, cpu);
    smt_idle_mask_clear(&credit2_priv(pol)->cpu[cpu], &rqd->smt_idle);
    policy_tickle(pol, cpu);
}

/* Start of a pick: the CPU is no longer "tickled and not yet scheduled". */
void
credit2_runq_pick_started(struct credit2_runq *rqd, const struct credit2_pcpu *pc, unsigned int cpu)
{
    if (cpuset_has(&rqd->tickled, cpu)) {
        cpuset_clear(&rqd->tickled, cpu);
        smt_idle_mask_set(pc, rqd);
    }
}

/* The CPU starts running a vCPU (busy) or idles. */
void
credit2_runq_set_busy(struct credit2_runq *rqd, const struct credit2_pcpu *pc, unsigned int cpu,
                      bool busy)
{
    if (busy && cpuset_has(&rqd->idle, cpu)) {
        cpuset_clear(&rqd->idle, cpu);
        smt_idle_mask_clear(pc, &rqd->smt_idle);
    } else if (!busy && !cpuset_has(&rqd->idle, cpu)) {
        cpuset_set(&rqd->idle, cpu);
        smt_idle_mask_set(pc, rqd);
    }
}

/*
 * Keep max_weight, the largest weight assigned to the runqueue (sleepers
 * included): quick when the new weight is larger or the old one was not
 * the maximum, a scan otherwise (update_max_weight).
 */
void
credit2_runq_max_weight(struct credit2_runq *rqd, unsigned int new_weight, unsigned int old_weight)
{
    if (new_weight > rqd->max_weight) {
        rqd->max_weight = new_weight;
    } else if (old_weight == rqd->max_weight) {
        struct credit2_vcpu *svc;
        unsigned int max = 1;

        TAILQ_FOREACH(svc, &rqd->svc, rqd_elem)
        if (svc->weight > max)
            max = svc->weight;
        rqd->max_weight = max;
    }
}

/* --- The queue ------------------------------------------------------- */

/* Insert by credit, highest first, after the entries with equal credit. */
void
credit2_runq_insert(struct credit2_vcpu *svc)
{
    struct credit2_vcpu *iter;

    TAILQ_FOREACH(iter, &svc->rqd->runq, runq_elem)
    {
        if (svc->credit > iter->credit) {
            TAILQ_INSERT_BEFORE(iter, svc, runq_elem);
            svc->on_runq = true;
            return;
        }
    }
    TAILQ_INSERT_TAIL(&svc->rqd->runq, svc, runq_elem);
    svc->on_runq = true;
}

void
credit2_runq_remove(struct credit2_vcpu *svc)
{
    TAILQ_REMOVE(&svc->rqd->runq, svc, runq_elem);
    svc->on_runq = false;
}

/* --- Tickling (runq_tickle, tickle_score) ------------------------------- */

/* Has the runner been on its CPU long enough for a tickle to matter? */
static bool
is_preemptable(const struct credit2_vcpu *cur, uint64_t now, int64_t ratelimit_ns)
{
    if (ratelimit_ns <= CREDIT2_RATELIMIT_TICKLE_TOLERANCE_NS)
        return true;
    return (int64_t)(now - cur->state_entry) > ratelimit_ns - CREDIT2_RATELIMIT_TICKLE_TOLERANCE_NS;
}

/*
 * Score for `new` preempting what runs on `cpu`: negative if it may not.
 * The runner's credit is current (the core charged it before this call).
 * Every CPU is in every vCPU's soft affinity here (Xen's default), so a
 * positive score always gets the one soft-affinity bonus, which keeps the
 * order of candidates unchanged.
 */
static int64_t
tickle_score(struct policy *pol, uint64_t now, const struct credit2_vcpu *new, unsigned int cpu)
{
    const struct credit2_priv *prv = credit2_priv(pol);
    const struct credit2_vcpu *cur = prv->cpu[cpu].cur;
    int64_t score;

    if (cur == NULL || !is_preemptable(cur, now, (int64_t)prv->ratelimit_us * NSEC_PER_USEC))
        return -1;
    score = new->credit - cur->credit;
    if (new->v->cpu != cpu)
        score -= CREDIT2_MIGRATE_RESIST_NS;
    if (score > 0)
        score += CREDIT2_CREDIT_INIT;
    return score;
}

/* Among idle CPUs of `hard`: the vCPU's own, else the next one. */
static int
tickle_idle(const struct credit2_runq *rqd, unsigned int cpu, const struct cpuset *hard)
{
    struct cpuset m;
    unsigned int i;

    cpuset_and2(&m, &rqd->smt_idle, hard);
    i = test_or_cycle(cpu, &m);
    if (i == -1u) {
        cpuset_andnot2(&m, &rqd->idle, &rqd->tickled);
        cpuset_and(&m, hard);
        i = test_or_cycle(cpu, &m);
    }
    return i == -1u ? -1 : (int)i;
}

/* The busy, untickled CPU new should preempt, or -1: own CPU first. */
static int
tickle_busy(struct policy *pol, const struct credit2_vcpu *new, const struct cpuset *hard,
            uint64_t now)
{
    const struct credit2_runq *rqd = new->rqd;
    unsigned int cpu = new->v->cpu;
    struct cpuset mask;
    int64_t max = 0;
    int ipid = -1, i;

    cpuset_andnot2(&mask, &rqd->active, &rqd->idle);
    cpuset_andnot(&mask, &rqd->tickled);
    cpuset_and(&mask, hard);
    if (cpuset_has(&mask, cpu)) {
        cpuset_clear(&mask, cpu);
        if (tickle_score(pol, now, new, cpu) > 0)
            return (int)cpu; /* in its soft affinity: take it at once */
    }
    cpuset_for_each(i, &mask)
    {
        int64_t score = tickle_score(pol, now, new, (unsigned int)i);

        if (score > max) {
            max = score;
            ipid = i;
        }
    }
    return ipid;
}

/*
 * Which CPU should pick up `new`, just queued: an exclusively pinned vCPU's
 * idle CPU; else a fully idle core, then any idle untickled CPU (its own
 * preferred); else the busy CPU whose runner it beats by the most credit.
 * Nobody is tickled if none qualifies: a CPU of the runqueue will find it
 * at its next pick.
 */
void
credit2_runq_tickle(struct policy *pol, struct credit2_vcpu *new, uint64_t now)
{
    struct credit2_runq *rqd = new->rqd;
    unsigned int cpu = new->v->cpu;
    struct cpuset hard;
    int ipid;

    cpuset_and2(&hard, &new->v->affinity, &rqd->active);
    if (new->pinned && cpuset_has(&rqd->idle, cpu) && !cpuset_has(&rqd->tickled, cpu))
        ipid = (int)cpu;
    else if ((ipid = tickle_idle(rqd, cpu, &hard)) < 0)
        ipid = tickle_busy(pol, new, &hard, now);
    if (ipid < 0)
        return;
    credit2_runq_tickle_cpu(pol, rqd, (unsigned int)ipid);
    new->tickled_cpu = ipid;
}
