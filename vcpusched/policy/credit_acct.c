/* SPDX-License-Identifier: ISC */
/*
 * credit_acct.c - the Credit policy's clock work: the accounting pass
 * every tslice (csched_acct), the per-CPU ticks (csched_tick), the active
 * set, cap parking and the runqueue re-sort. All of it runs from the one
 * pool timer; see credit.c for the design.
 */
#include "credit_priv.h"

/* Both timers start with the first event that brings a time. */
void
credit_clock_start(struct policy *pol, uint64_t now)
{
    struct credit_priv *p = credit_priv(pol);

    if (p->started)
        return;
    p->started = true;
    p->acct_next = now + p->tslice_ns;
    policy_timer_arm(pol, p->acct_next);
}

/* __csched_unit_acct_start: the vCPU earns credit from the next pass. */
static void
credit_acct_start(struct credit_priv *p, struct credit_vcpu *cv)
{
    struct credit_dom *cd = cv->dom;

    cv->active = true;
    cv->activations++;
    cd->active_count++;
    TAILQ_INSERT_HEAD(&cd->active, cv, active_link);
    p->weight += cd->weight;
    if (!cd->on_active_list) {
        TAILQ_INSERT_HEAD(&p->active_doms, cd, active_link);
        cd->on_active_list = true;
    }
}

void
credit_acct_stop(struct credit_priv *p, struct credit_vcpu *cv)
{
    struct credit_dom *cd = cv->dom;

    cv->active = false;
    cd->active_count--;
    TAILQ_REMOVE(&cd->active, cv, active_link);
    p->weight -= cd->weight;
    if (TAILQ_EMPTY(&cd->active)) {
        TAILQ_REMOVE(&p->active_doms, cd, active_link);
        cd->on_active_list = false;
    }
}

/*
 * What a tick finding cv running tells (csched_unit_acct): it uses real
 * CPU, so BOOST ends and it joins the active set. Returns whether it was
 * already active.
 */
static bool
credit_vcpu_seen_running(struct policy *pol, struct credit_vcpu *cv)
{
    cv->unseen_ns = 0;
    if (cv->pri == CREDIT_PRI_BOOST)
        cv->pri = CREDIT_PRI_UNDER;
    if (cv->active)
        return true;
    credit_acct_start(credit_priv(pol), cv);
    return false;
}

void
credit_vcpu_seen(struct policy *pol, struct credit_vcpu *cv)
{
    (void)credit_vcpu_seen_running(pol, cv);
}

/*
 * csched_runq_sort, once per accounting epoch: a stable pass moving every
 * BOOST or UNDER entry in front of the OVER ones.
 */
static void
credit_runq_sort(struct credit_priv *p, struct credit_pcpu *pc)
{
    struct credit_vcpu *e, *next, *last_under = NULL;

    if (pc->sort_epoch == p->runq_sort)
        return;
    pc->sort_epoch = p->runq_sort;
    for (e = TAILQ_FIRST(&pc->runq); e != NULL; e = next) {
        next = TAILQ_NEXT(e, runq_link);
        if (e->pri < CREDIT_PRI_UNDER)
            continue;
        if (TAILQ_PREV(e, credit_vcpu_list, runq_link) != last_under) {
            TAILQ_REMOVE(&pc->runq, e, runq_link);
            if (last_under == NULL)
                TAILQ_INSERT_HEAD(&pc->runq, e, runq_link);
            else
                TAILQ_INSERT_AFTER(&pc->runq, last_under, e, runq_link);
        }
        last_under = e;
    }
}

/*
 * csched_tick on `cpu`: account the running vCPU, and if it was already
 * active, ask it to leave if the CPU choice now prefers another CPU (an
 * idle one); then re-sort after a new accounting pass.
 */
static void
credit_tick(struct policy *pol, unsigned int cpu, uint64_t now)
{
    struct credit_priv *p = credit_priv(pol);
    struct credit_pcpu *pc = &p->cpu[cpu];
    struct credit_vcpu *cur = pc->cur;

    if (cur == NULL) {
        pc->next_tick = POLICY_NEVER;
        return;
    }
    if (cur->v->runnable && !(cur->flags & CREDIT_F_PARKED)) {
        cur->ticks++;
        if (credit_vcpu_seen_running(pol, cur) && credit_cpu_pick(pol, cur, false) != cpu) {
            cur->flags |= CREDIT_F_KICKED;
            policy_tickle(pol, cpu);
        }
    }
    credit_runq_sort(p, pc);
    pc->next_tick = now + p->tick_ns;
}

/* Pause a vCPU over its cap: it leaves its queue, or its CPU re-picks. */
static void
credit_park(struct policy *pol, struct credit_vcpu *cv)
{
    struct credit_priv *p = credit_priv(pol);

    cv->flags |= CREDIT_F_PARKED;
    cv->parks++;
    policy_vcpu_park(pol, cv->v, true);
    if (cv->queued)
        credit_runq_remove(&p->cpu[cv->v->cpu], cv);
    else if (cv->elected)
        policy_tickle(pol, cv->v->cpu);
}

/*
 * Unpause, then clear PARKED: the wake sees PARKED and is not boosted
 * (Xen fix 5c8c0ae7c4). A frozen thread was seen to block, and the thaw
 * wakes it only later, once PARKED is gone: THAWING keeps that wake from
 * being boosted too (a boosted thaw, which no wake preempts, can hold a
 * waking vCPU behind a capped one for a whole slice).
 */
static void
credit_unpark(struct policy *pol, struct credit_vcpu *cv)
{
    policy_vcpu_park(pol, cv->v, false);
    if (cv->v->runnable && !cv->queued && !cv->elected)
        credit_wake_vcpu(pol, cv);
    else if (!cv->v->runnable)
        cv->flags |= CREDIT_F_THAWING;
    cv->flags &= ~CREDIT_F_PARKED;
}

/* Per-vCPU step of the pass: grant, priority, park/unpark, bounds. */
static void
credit_acct_vcpu(struct policy *pol, struct credit_vcpu *cv, int64_t grant, int64_t cap_v)
{
    struct credit_priv *p = credit_priv(pol);

    cv->credit += grant;
    if (cv->credit < 0) {
        cv->pri = CREDIT_PRI_OVER;
        if (cv->dom->cap != 0 && cv->credit < -cap_v && !(cv->flags & CREDIT_F_PARKED))
            credit_park(pol, cv);
        if (cv->credit < -p->credits_per_tslice) {
            cv->credit = -p->credits_per_tslice;
            cv->clamps++;
        }
    } else {
        cv->pri = CREDIT_PRI_UNDER;
        if (cv->flags & CREDIT_F_PARKED)
            credit_unpark(pol, cv);
        if (cv->credit > p->credits_per_tslice) {
            /* Halved, not zeroed: it restarts a little ahead (c92d5f4e0f). */
            credit_acct_stop(p, cv);
            cv->credit /= 2;
        }
    }
    p->credit_balance_next += cv->credit;
}

/* Ceiling of a / b for non-negative a, positive b. */
static int64_t
credit_div_up(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/*
 * One domain of the pass. Its fair share by weight is limited to its peak
 * (one period per active vCPU, more if the pool's balance is negative) and
 * its cap; what it cannot use goes to the domains not yet processed, and
 * a saturated domain processed after an unsaturated one moves to the head
 * for the next passes (credit_xtra). Returns the new credit_total.
 */
static int64_t
credit_acct_dom(struct policy *pol, struct credit_dom *cd, int64_t total, uint64_t weight_total,
                uint64_t *weight_left, bool *xtra)
{
    struct credit_priv *p = credit_priv(pol);
    int64_t n = cd->active_count, w = cd->weight, wt = (int64_t)weight_total;
    int64_t peak = n * p->credits_per_tslice, fair, cap_v = 0;
    struct credit_vcpu *cv, *next;

    *weight_left -= (uint64_t)(w * n);
    if (p->credit_balance < 0)
        peak += credit_div_up(-p->credit_balance * w * n, wt);
    if (cd->cap != 0) {
        int64_t cap = credit_div_up((int64_t)cd->cap * p->credits_per_tslice, 100);

        if (cap < peak)
            peak = cap;
        cap_v = credit_div_up(cap, n);
    }
    fair = credit_div_up(total * w * n, wt);
    if (fair < peak) {
        *xtra = true;
    } else {
        if (*weight_left != 0)
            total += credit_div_up((fair - peak) * wt, (int64_t)*weight_left);
        if (*xtra) {
            TAILQ_REMOVE(&p->active_doms, cd, active_link);
            TAILQ_INSERT_HEAD(&p->active_doms, cd, active_link);
        }
        fair = peak;
    }
    fair = credit_div_up(fair, n);
    for (cv = TAILQ_FIRST(&cd->active); cv != NULL; cv = next) {
        next = TAILQ_NEXT(cv, active_link);
        credit_acct_vcpu(pol, cv, fair, cap_v);
    }
    return total;
}

/* csched_acct: share the period's credit among the active domains. */
static void
credit_acct(struct policy *pol)
{
    struct credit_priv *p = credit_priv(pol);
    uint64_t weight_total = p->weight, weight_left = p->weight;
    int64_t total = p->credit;
    struct credit_dom *cd, *next;
    bool xtra = false;

    if (p->credit_balance < 0)
        total -= p->credit_balance; /* converge the balance towards 0 */
    if (weight_total == 0) {
        p->credit_balance = 0;
        return;
    }
    p->credit_balance_next = 0;
    for (cd = TAILQ_FIRST(&p->active_doms); cd != NULL; cd = next) {
        next = TAILQ_NEXT(cd, active_link);
        total = credit_acct_dom(pol, cd, total, weight_total, &weight_left, &xtra);
    }
    p->credit_balance = p->credit_balance_next;
    p->runq_sort++;
}

/*
 * The pool timer: the accounting pass if due, then every due tick (a
 * pass and a tick at one instant: the pass first, so the tick re-sorts at
 * once). Re-armed for the earliest of them.
 */
void
credit_timer(struct policy *pol, uint64_t now)
{
    struct credit_priv *p = credit_priv(pol);
    uint64_t next;

    if (p->acct_next <= now) {
        credit_acct(pol);
        p->acct_next = now + p->tslice_ns;
    }
    next = p->acct_next;
    for (unsigned int c = 0; c < p->nr_cpus; c++) {
        if (p->cpu[c].next_tick <= now)
            credit_tick(pol, c, now);
        if (p->cpu[c].next_tick < next)
            next = p->cpu[c].next_tick;
    }
    policy_timer_arm(pol, next);
}
