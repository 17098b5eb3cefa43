/* SPDX-License-Identifier: ISC */
/*
 * credit2_load.c - Credit2 load tracking and balancing between runqueues:
 * the decaying load averages of runqueues and vCPUs, placement of a new
 * vCPU on the least loaded runqueue (res_pick), balance_load (push, pull
 * or swap right after a credit reset) and moving a vCPU to another
 * runqueue. Ported from xen/common/sched/credit2.c.
 */
#include "credit2_priv.h"

#define LOAD_P CREDIT2_LOAD_PRECISION_SHIFT
#define LOAD_W CREDIT2_LOAD_WINDOW_SHIFT

/*
 * One step of the windowed average (update_runq_load): over the last
 * `delta` of a window W the load was `load`, before that `avg`, so
 * avg += delta*load/W - delta*avg/W in fixed point; after more than a
 * whole window the history is dropped. Time is in 2^10 ns units.
 */
static int64_t
load_decay(int64_t avg, int64_t load, int64_t last, int64_t now)
{
    int64_t delta = now - last;

    if (last + (1LL << LOAD_W) < now)
        return load << LOAD_P;
    if (delta < 0)
        delta = 0; /* time went backwards: treat as no time */
    return avg + ((delta * (load << LOAD_P)) >> LOAD_W) - ((delta * avg) >> LOAD_W);
}

static void
runq_load_update(struct credit2_runq *rqd, int change, uint64_t now)
{
    int64_t t = (int64_t)(now >> CREDIT2_LOAD_GRANULARITY_SHIFT);

    if (rqd->load_last_update + (1LL << LOAD_W) < t) {
        rqd->avgload = (int64_t)rqd->load << LOAD_P;
        rqd->b_avgload = (int64_t)rqd->load << LOAD_P;
    } else {
        rqd->avgload = load_decay(rqd->avgload, rqd->load, rqd->load_last_update, t);
        rqd->b_avgload = load_decay(rqd->b_avgload, rqd->load, rqd->load_last_update, t);
    }
    rqd->load += change;
    rqd->load_last_update = t;
}

/*
 * A vCPU's own average. `change` says what it was until now: +1 (it was
 * not runnable, it becomes so), -1 (it was), 0 (as it is now).
 */
static void
svc_load_update(struct credit2_vcpu *svc, int change, uint64_t now)
{
    int64_t t = (int64_t)(now >> CREDIT2_LOAD_GRANULARITY_SHIFT);
    int64_t load;

    if (change == -1)
        load = 1;
    else if (change == 1)
        load = 0;
    else
        load = svc->v->runnable && !svc->v->parked;
    svc->avgload = load_decay(svc->avgload, load, svc->load_last_update, t);
    svc->load_last_update = t;
}

/* svc's average decayed to `now`, in % of one vCPU, without updating it. */
int64_t
credit2_load_pct(const struct credit2_vcpu *svc, uint64_t now)
{
    int64_t t = (int64_t)(now >> CREDIT2_LOAD_GRANULARITY_SHIFT);
    int64_t avg = svc->avgload;

    if (t > svc->load_last_update)
        avg = load_decay(avg, svc->v->runnable && !svc->v->parked, svc->load_last_update, t);
    return (avg * 100) >> LOAD_P;
}

/* Account a change of the runqueue's instantaneous load (and svc's). */
void
credit2_load_update(struct credit2_runq *rqd, struct credit2_vcpu *svc, int change, uint64_t now)
{
    runq_load_update(rqd, change, now);
    if (svc != NULL)
        svc_load_update(svc, change, now);
}

/* Assign to a runqueue: weight and expected load follow (_runq_assign). */
void
credit2_load_assign(struct credit2_vcpu *svc, struct credit2_runq *rqd)
{
    svc->rqd = rqd;
    TAILQ_INSERT_TAIL(&rqd->svc, svc, rqd_elem);
    credit2_runq_max_weight(rqd, svc->weight, 0);
    rqd->b_avgload += svc->avgload;
}

void
credit2_load_deassign(struct credit2_vcpu *svc)
{
    struct credit2_runq *rqd = svc->rqd;

    TAILQ_REMOVE(&rqd->svc, svc, rqd_elem);
    credit2_runq_max_weight(rqd, 0, svc->weight);
    rqd->b_avgload = rqd->b_avgload > svc->avgload ? rqd->b_avgload - svc->avgload : 0;
    svc->rqd = NULL;
}

/*
 * res_pick: the runqueue with the lowest expected load among those the
 * vCPU may use (its own counted without its share, for impartiality), and
 * a CPU of it in round-robin from the runqueue's pick_bias. Used when a
 * vCPU is added; runq_tickle chooses the CPU that actually runs it.
 */
unsigned int
credit2_load_res_pick(struct policy *pol, struct credit2_vcpu *svc)
{
    struct credit2_priv *prv = credit2_priv(pol);
    const struct cpuset *hard = &svc->v->affinity;
    struct credit2_runq *min_rqd = NULL;
    int64_t min_avgload = INT64_MAX;
    struct cpuset fit;
    unsigned int cpu;

    for (unsigned int i = 0; i < prv->nr_runqs; i++) {
        struct credit2_runq *rqd = &prv->runqs[i];
        int64_t avg = rqd->b_avgload;

        if (!cpuset_intersects(hard, &rqd->active))
            continue;
        if (rqd == svc->rqd)
            avg = avg > svc->avgload ? avg - svc->avgload : 0;
        if (avg < min_avgload) {
            min_avgload = avg;
            min_rqd = rqd;
        }
    }
    if (min_rqd == NULL) /* cannot happen: the core gives a non-empty affinity */
        return 0;
    cpuset_and2(&fit, hard, &min_rqd->active);
    cpu = credit2_runq_cycle(min_rqd->pick_bias, &fit);
    min_rqd->pick_bias = cpu;
    return cpu;
}

/*
 * Move a vCPU that is not elected to runqueue trqd, onto a CPU of it in
 * round-robin; a queued one is re-queued and tickled there (migrate()).
 */
void
credit2_load_move(struct policy *pol, struct credit2_vcpu *svc, struct credit2_runq *trqd,
                  uint64_t now)
{
    bool queued = svc->on_runq;
    struct cpuset fit;
    unsigned int cpu;

    if (queued) {
        credit2_runq_remove(svc);
        credit2_load_update(svc->rqd, NULL, -1, now);
    }
    credit2_load_deassign(svc);
    cpuset_and2(&fit, &svc->v->affinity, &trqd->active);
    cpu = credit2_runq_cycle(trqd->pick_bias, &fit);
    trqd->pick_bias = cpu;
    if (svc->v->cpu != cpu) {
        policy_vcpu_move(pol, svc->v, cpu);
        svc->migrations++;
    }
    credit2_load_assign(svc, trqd);
    if (queued) {
        credit2_load_update(trqd, NULL, 1, now);
        credit2_runq_insert(svc);
        credit2_runq_tickle(pol, svc, now);
    }
}

/* An elected vCPU is asked to leave at its next pick; others go now. */
static void
migrate(struct policy *pol, struct credit2_vcpu *svc, struct credit2_runq *trqd, uint64_t now)
{
    struct credit2_priv *prv = credit2_priv(pol);

    if (svc->on_cpu >= 0) {
        svc->migrate_rqd = trqd;
        svc->migrate_request = true;
        /* The CPU inside pick() handles it itself (see credit2_pick). */
        if (svc->on_cpu != prv->picking_cpu)
            credit2_runq_tickle_cpu(pol, svc->rqd, (unsigned int)svc->on_cpu);
    } else {
        credit2_load_move(pol, svc, trqd, now);
    }
}

static bool
is_migrateable(const struct credit2_vcpu *svc, const struct credit2_runq *rqd)
{
    return !svc->migrate_request && cpuset_intersects(&svc->v->affinity, &rqd->active);
}

/* Working state of the pair search (Xen's balance_state_t). */
struct balance_state {
    int64_t load_delta;
    struct credit2_vcpu *push, *pull;
    const struct credit2_runq *lrqd, *orqd;
};

/* Keep (push, pull) if it leaves the two runqueues closer than the best so far. */
static void
consider(struct balance_state *st, struct credit2_vcpu *push, struct credit2_vcpu *pull)
{
    int64_t l = st->lrqd->b_avgload, o = st->orqd->b_avgload, delta;

    if (push != NULL) {
        l -= push->avgload;
        o += push->avgload;
    }
    if (pull != NULL) {
        l += pull->avgload;
        o -= pull->avgload;
    }
    delta = l > o ? l - o : o - l;
    if (delta < st->load_delta) {
        st->load_delta = delta;
        st->push = push;
        st->pull = pull;
    }
}

/* The other runqueue whose expected load differs most from lrqd's. */
static struct credit2_runq *
balance_farthest(struct credit2_priv *prv, struct credit2_runq *lrqd, uint64_t now,
                 int64_t *load_delta)
{
    struct credit2_runq *max_rqd = NULL;

    *load_delta = 0;
    for (unsigned int i = 0; i < prv->nr_runqs; i++) {
        struct credit2_runq *rqd = &prv->runqs[i];
        int64_t delta;

        if (rqd == lrqd)
            continue;
        runq_load_update(rqd, 0, now);
        delta = lrqd->b_avgload - rqd->b_avgload;
        if (delta < 0)
            delta = -delta;
        if (delta > *load_delta) {
            *load_delta = delta;
            max_rqd = rqd;
        }
    }
    return max_rqd;
}

/*
 * Worth it? Below 100 % busy (the busier of the two) only a gap of a
 * whole vCPU counts; above, an eighth of one. Xen reads load_max and
 * cpus_max from the last runqueue of its loop, not necessarily the chosen
 * one (an oversight); this uses the chosen one.
 */
static bool
balance_worth(const struct credit2_runq *l, const struct credit2_runq *o, int64_t delta)
{
    int64_t load_max = l->b_avgload > o->b_avgload ? l->b_avgload : o->b_avgload;
    unsigned int cpus_max = l->nr_cpus > o->nr_cpus ? l->nr_cpus : o->nr_cpus;

    if (load_max < ((int64_t)cpus_max << LOAD_P))
        return delta >= (1LL << (LOAD_P + CREDIT2_BALANCE_UNDER));
    return delta >= (1LL << (LOAD_P + CREDIT2_BALANCE_OVER));
}

/* O(n^2) search of the push, pull or swap that best evens the two out. */
static void
balance_search(struct balance_state *st, struct credit2_runq *lrqd, struct credit2_runq *orqd,
               uint64_t now)
{
    struct credit2_vcpu *push, *pull;
    bool inner_updated = false;

    TAILQ_FOREACH(push, &lrqd->svc, rqd_elem)
    {
        svc_load_update(push, 0, now);
        if (!is_migrateable(push, orqd))
            continue;
        TAILQ_FOREACH(pull, &orqd->svc, rqd_elem)
        {
            if (!inner_updated)
                svc_load_update(pull, 0, now);
            if (is_migrateable(pull, lrqd))
                consider(st, push, pull);
        }
        inner_updated = true;
        consider(st, push, NULL);
    }
    TAILQ_FOREACH(pull, &orqd->svc, rqd_elem)
    if (is_migrateable(pull, lrqd))
        consider(st, NULL, pull);
}

/*
 * balance_load, run by `cpu` right after a credit reset of its runqueue:
 * find the runqueue farthest from ours in expected load and, past the
 * threshold, push, pull or swap the vCPUs that minimise the difference.
 */
void
credit2_load_balance(struct policy *pol, unsigned int cpu, uint64_t now)
{
    struct credit2_priv *prv = credit2_priv(pol);
    struct credit2_runq *lrqd = prv->cpu[cpu].rqd, *orqd;
    struct balance_state st = {0};

    runq_load_update(lrqd, 0, now);
    orqd = balance_farthest(prv, lrqd, now, &st.load_delta);
    if (orqd == NULL || !balance_worth(lrqd, orqd, st.load_delta))
        return;
    st.lrqd = lrqd;
    st.orqd = orqd;
    balance_search(&st, lrqd, orqd, now);
    if (st.push != NULL)
        migrate(pol, st.push, orqd, now);
    if (st.pull != NULL)
        migrate(pol, st.pull, lrqd, now);
}
