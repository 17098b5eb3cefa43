/* SPDX-License-Identifier: ISC */
/*
 * credit2_budget.c - Credit2 caps. A capped domain owns a budget pool of
 * cap% x 10 ms, refilled every 10 ms by its own timer (all domains' timers
 * share the pool timer); a vCPU grabs a quota from it before it runs,
 * gives back what it did not use when it stops, and is parked (frozen,
 * off the runqueue) while the pool is empty. Ported from
 * xen/common/sched/credit2.c (unit_grab_budget, replenish_domain_budget).
 */
#include "credit2_priv.h"

/* Quota a vCPU grabs: an even share of a period, at least a minimum slice. */
static int64_t
budget_quota(const struct credit2_dom *sdom)
{
    int64_t q = sdom->tot_budget / (int64_t)sdom->d->nr_vcpus;

    return q > CREDIT2_MIN_TIMER_NS ? q : CREDIT2_MIN_TIMER_NS;
}

/* Keep priv->capped sorted by next replenishment; re-arm the pool timer. */
static void
capped_insert(struct policy *pol, struct credit2_dom *sdom)
{
    struct credit2_priv *prv = credit2_priv(pol);
    struct credit2_dom *iter;

    TAILQ_FOREACH(iter, &prv->capped, repl_elem)
    {
        if (sdom->next_repl < iter->next_repl) {
            TAILQ_INSERT_BEFORE(iter, sdom, repl_elem);
            break;
        }
    }
    if (iter == NULL)
        TAILQ_INSERT_TAIL(&prv->capped, sdom, repl_elem);
    sdom->repl_armed = true;
    policy_timer_arm(pol, sdom->next_repl);
}

static void
capped_remove(struct policy *pol, struct credit2_dom *sdom)
{
    if (sdom->repl_armed) {
        TAILQ_REMOVE(&credit2_priv(pol)->capped, sdom, repl_elem);
        sdom->repl_armed = false;
    }
}

/*
 * No budget for svc: it must not use any CPU until there is some. It
 * leaves the runqueue (load -1) and waits on the domain's parked list. A
 * parked vCPU elected on a CPU other than the one picking gets that CPU
 * tickled so that it stops.
 */
static void
park(struct policy *pol, struct credit2_vcpu *svc, uint64_t now)
{
    struct credit2_priv *prv = credit2_priv(pol);

    policy_vcpu_park(pol, svc->v, true);
    svc->parks++;
    if (svc->on_runq) {
        credit2_runq_remove(svc);
        credit2_load_update(svc->rqd, svc, -1, now);
    }
    TAILQ_INSERT_HEAD(&svc->sdom->parked, svc, parked_elem);
    svc->on_parked = true;
    if (svc->on_cpu >= 0 && svc->on_cpu != prv->picking_cpu)
        credit2_runq_tickle_cpu(pol, svc->rqd, (unsigned int)svc->on_cpu);
}

/*
 * Make sure svc holds budget before it runs (unit_grab_budget). An
 * overrun (budget < 0) is paid back to the domain first; then the vCPU
 * takes its quota, or what is left, or is parked if nothing is.
 */
bool
credit2_budget_grab(struct policy *pol, struct credit2_vcpu *svc, uint64_t now)
{
    struct credit2_dom *sdom = svc->sdom;

    if (svc->budget > 0)
        return true;
    sdom->budget += svc->budget;
    if (sdom->budget > 0) {
        int64_t b = sdom->budget >= svc->budget_quota ? svc->budget_quota : sdom->budget;

        svc->budget = b;
        sdom->budget -= b;
    } else {
        svc->budget = 0;
        park(pol, svc, now);
    }
    return svc->budget > 0;
}

/*
 * svc stops running: unused budget goes back to the domain. The caller
 * unparks the domain's parked vCPUs afterwards if the pool is positive
 * (unit_return_budget; Xen unparks after re-queueing the stopped vCPU).
 */
void
credit2_budget_return(struct policy *pol, struct credit2_vcpu *svc, uint64_t now)
{
    (void)pol, (void)now;
    svc->sdom->budget += svc->budget;
    svc->budget = 0;
}

/* Let every parked vCPU of the domain compete for budget again. */
void
credit2_budget_unpark(struct policy *pol, struct credit2_dom *sdom, uint64_t now)
{
    struct credit2_vcpu *svc;

    while ((svc = TAILQ_FIRST(&sdom->parked)) != NULL) {
        TAILQ_REMOVE(&sdom->parked, svc, parked_elem);
        svc->on_parked = false;
        policy_vcpu_park(pol, svc->v, false);
        if (svc->on_cpu < 0 && svc->v->runnable && !svc->on_runq) {
            credit2_load_update(svc->rqd, svc, 1, now);
            credit2_runq_insert(svc);
            credit2_runq_tickle(pol, svc, now);
        }
    }
}

/* Start budget accounting of a capped domain: full pool, timer armed. */
static void
budget_start(struct policy *pol, struct credit2_dom *sdom, uint64_t now)
{
    sdom->budget = sdom->tot_budget;
    sdom->next_repl = now + (uint64_t)CREDIT2_BDGT_REPL_PERIOD_NS;
    capped_insert(pol, sdom);
}

/*
 * A vCPU joins: uncapped, it has unlimited budget; capped, it starts
 * with none and must grab. The first vCPU of a domain capped at attach
 * time starts the domain's budget (dom_add has no clock).
 */
void
credit2_budget_vcpu_init(struct policy *pol, struct credit2_vcpu *svc, uint64_t now)
{
    struct credit2_dom *sdom = svc->sdom;

    if (sdom->cap == 0) {
        svc->budget = CREDIT2_NO_BUDGET;
        svc->budget_quota = 0;
        return;
    }
    svc->budget = 0;
    svc->budget_quota = budget_quota(sdom);
    if (!sdom->repl_armed)
        budget_start(pol, sdom, now);
}

void
credit2_budget_vcpu_fini(struct credit2_vcpu *svc)
{
    if (svc->on_parked) {
        TAILQ_REMOVE(&svc->sdom->parked, svc, parked_elem);
        svc->on_parked = false;
    }
}

void
credit2_budget_dom_fini(struct policy *pol, struct credit2_dom *sdom)
{
    capped_remove(pol, sdom);
}

/* Enable a cap on a domain without one (csched2_dom_cntl). */
static void
cap_enable(struct policy *pol, struct credit2_dom *sdom, uint64_t now)
{
    struct credit2_priv *prv = credit2_priv(pol);
    struct policy_dom *d = sdom->d;

    budget_start(pol, sdom, now);
    for (unsigned int i = 0; i < d->nr_vcpus; i++) {
        struct credit2_vcpu *svc = credit2_vcpu(d->vcpus[i]);

        /*
         * A running vCPU has been charged up to now (the core charges
         * before every call), so none of its past run counts as budget;
         * with budget 0 its next pick makes it grab, or park it.
         */
        if (svc->on_cpu >= 0 && svc->on_cpu != prv->picking_cpu)
            credit2_runq_tickle_cpu(pol, svc->rqd, (unsigned int)svc->on_cpu);
        svc->budget = 0;
    }
}

static void
cap_disable(struct policy *pol, struct credit2_dom *sdom, uint64_t now)
{
    struct policy_dom *d = sdom->d;

    capped_remove(pol, sdom);
    for (unsigned int i = 0; i < d->nr_vcpus; i++) {
        struct credit2_vcpu *svc = credit2_vcpu(d->vcpus[i]);

        svc->budget = CREDIT2_NO_BUDGET;
        svc->budget_quota = 0;
    }
    sdom->cap = 0;
    credit2_budget_unpark(pol, sdom, now);
}

/*
 * Change a domain's cap (0 = none); the caller validated it. Without
 * vCPUs' clock yet (at attach) only the figures are set, see vcpu_init.
 */
void
credit2_budget_set_cap(struct policy *pol, struct credit2_dom *sdom, unsigned int cap, uint64_t now)
{
    struct policy_dom *d = sdom->d;

    if (cap == 0) {
        if (sdom->cap != 0)
            cap_disable(pol, sdom, now);
        return;
    }
    sdom->tot_budget = CREDIT2_BDGT_REPL_PERIOD_NS * (int64_t)cap / 100;
    for (unsigned int i = 0; i < d->nr_vcpus; i++)
        credit2_vcpu(d->vcpus[i])->budget_quota = budget_quota(sdom);
    if (sdom->cap == 0)
        cap_enable(pol, sdom, now);
    sdom->cap = cap;
}

/*
 * One replenishment (replenish_domain_budget): a period's budget for
 * each period that has started, never more than one period's worth in
 * the pool; a debt larger than a period keeps the vCPUs parked.
 */
static void
replenish(struct policy *pol, struct credit2_dom *sdom, uint64_t now)
{
    do {
        sdom->next_repl += (uint64_t)CREDIT2_BDGT_REPL_PERIOD_NS;
        sdom->budget += sdom->tot_budget;
    } while (sdom->next_repl <= now);
    if (sdom->budget <= 0)
        return;
    if (sdom->budget > sdom->tot_budget)
        sdom->budget = sdom->tot_budget;
    credit2_budget_unpark(pol, sdom, now);
}

/* The pool timer: refill every domain whose period ended, re-arm. */
void
credit2_budget_timer(struct policy *pol, uint64_t now)
{
    struct credit2_priv *prv = credit2_priv(pol);
    struct credit2_dom *sdom;

    while ((sdom = TAILQ_FIRST(&prv->capped)) != NULL && sdom->next_repl <= now) {
        TAILQ_REMOVE(&prv->capped, sdom, repl_elem);
        replenish(pol, sdom, now);
        capped_insert(pol, sdom);
    }
    if (sdom != NULL)
        policy_timer_arm(pol, sdom->next_repl);
}
