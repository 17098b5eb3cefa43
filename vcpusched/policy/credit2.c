/* SPDX-License-Identifier: ISC */
/*
 * credit2.c - Xen's Credit2 scheduler (Xen 4.22 behaviour) as a pure
 * policy: credits, the scheduling decision, parameters and the ops table.
 * Runqueues and tickling live in credit2_runq.c, caps in credit2_budget.c,
 * load tracking and balancing in credit2_load.c.
 *
 * Design. vCPUs "burn" credit as they run, weighted: the highest-weight
 * vCPU of a runqueue burns 1 credit per ns, one of half that weight 2. A
 * runqueue is shared by a group of CPUs (a socket by default, at most 16
 * CPUs) and keeps its runnable vCPUs sorted by credit, highest first. A
 * CPU runs the head, for as long as it takes its credit to fall to that of
 * the best waiter (converted to its own burn rate), at least 500 us or the
 * ratelimit, at most 10 ms. An epoch ends when the best credit of the
 * runqueue is <= 0: every vCPU assigned to it, sleepers included, gains
 * 10 ms of credit, clipped at 10.5 ms, so a vCPU that mostly sleeps wakes
 * with more credit than the CPU hogs and preempts them; there is no boost
 * and no priority class. A waking vCPU prefers idle CPUs (fully idle cores
 * first), else preempts the runner it beats by the most credit, once that
 * runner has run the ratelimit; a vCPU last run on another CPU is pulled
 * only with 500 us more credit than the local candidate, and gets 50 us.
 *
 * Accounting. Credit is burned only from measured run time, the
 * charge() of the core, which comes before every other call; so "burn the
 * runner up to now" of Xen's tickle, schedule and reset is already done
 * when they run here. Time a vCPU runs while not elected (the kernel ran
 * it when the elected one blocked) is charged like any other, and a
 * queued vCPU so charged is re-queued by its new credit. Slices use
 * the Xen >= 4.21 rule: the best waiter is the runqueue head or the vCPU
 * being switched out, if it stays runnable (the "in-flight" credit of
 * commit ae648e9f80), so two equal hogs on a CPU alternate about every
 * 1 ms (the ratelimit) rather than in 10 / 9.5 / 0.5 ms runs as before.
 * inflight=0 gives the older rule (the head only): that is what Xen 4.17,
 * the reference rig of bench/xen, does, and it matters for caps next to a
 * hog: with 10 ms slices an unparked capped vCPU may wait out the hog's
 * slice and lose part of its period's budget (cap 50 next to a hog: Xen
 * 4.17 45-48%; here on host threads 47% with inflight=0, 50% with 1; the
 * simulator, whose timers are exact, 50% with either).
 * Load is a decaying average of runnable vCPUs per runqueue and per vCPU
 * (window 2^30 ns, 18 fractional bits); right after a reset the runqueue
 * balances with the one farthest from it in load.
 *
 * Parameters. Pool: ratelimit_us (0 = off, or 100..500000; default 1000),
 * runqueue=cpu|core|socket|node|all (default socket; fixed for the life
 * of the instance: a live change is refused, switch the pool to credit2
 * again with the new value), inflight (1, Xen >= 4.21, the default; 0,
 * Xen <= 4.20). Domain: weight (1..65535, default 256, per vCPU), cap (%
 * of one CPU, 0 = none, at most 100 x nr_vcpus): a budget of cap% x 10 ms
 * per 10 ms period, refilled by a per-domain timer.
 *
 * Limitations (deviations from Xen, each deliberate):
 * - No soft affinity: every CPU is soft-affine (Xen's default), so the
 *   soft-affinity steps and score bonuses reduce to their hard versions.
 * - Pick is atomic: Xen's CSFLAG_scheduled / delayed_runq_add / context
 *   saved steps happen inside pick(); a vCPU balancing pushes while its
 *   CPU is picking it is sent to its new runqueue at once (Xen would run
 *   it until the IPI lands). Tasklets do not exist.
 * - Runqueues are built from the pool's CPUs (pol->cpus), not from every
 *   online host CPU, for both the 16-CPU spread and sibling counting.
 * - Every runqueue is always visible: Xen's trylock failures and its
 *   fallback CPU never happen.
 * - The balance threshold uses the chosen runqueue's load and size; Xen
 *   uses the last runqueue of its loop (see credit2_load.c).
 * - A pick that tickles its own CPU (switching out the previous vCPU
 *   unparked one that wants it) decides again at once, up to 4 times,
 *   where Xen would take an IPI.
 * - Reproduced as in Xen, not fixed: a CPU may idle while a vCPU waits
 *   in its runqueue (runq_candidate stops at the first eligible entry even
 *   if it parks it; a vCPU left for a tickled CPU that took another). Xen
 *   closes the gap at the next tickle or slice end; under the elevation
 *   trick the kernel also runs such a vCPU as a non-elected thread on its
 *   CPU, and that time is charged like any other.
 * - Xen's boot-time knobs are constants: migrate resistance 500 us, cap
 *   period 10 ms, 16 CPUs per runqueue, load shifts 30/18, tolerances 0/-3.
 * - Caps are u16 as in Xen (<= 65535).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "credit2_priv.h"

/* Re-decisions of a pick that tickled its own CPU (one is the rule). */
#define CREDIT2_PICK_ROUNDS 4
/* Burn at most this much per charge: beyond, every vCPU is at the floor. */
#define CREDIT2_BURN_MAX_NS ((uint64_t)NSEC_PER_SEC)

enum {
    C2_P_RATELIMIT_US,
    C2_P_RUNQUEUE,
    C2_P_INFLIGHT
};
static const struct policy_param credit2_pool_params[] = {
    [C2_P_RATELIMIT_US] = {"ratelimit_us", POLICY_PARAM_INT, 0, CREDIT2_RATELIMIT_MAX_US,
                           CREDIT2_DEFAULT_RATELIMIT_US,
                           "minimum run before preemption, us (0 = off, else 100..500000)"},
    [C2_P_RUNQUEUE] = {"runqueue", POLICY_PARAM_STR, 0, 6, 0,
                       "CPUs sharing a runqueue: cpu, core, socket (default), node or all"},
    [C2_P_INFLIGHT] = {"inflight", POLICY_PARAM_INT, 0, 1, 1,
                       "slices also end at the switched-out vCPU's credit: 1 (Xen >= 4.21) "
                       "or 0 (Xen <= 4.20)"},
    {NULL, 0, 0, 0, 0, NULL},
};

enum {
    C2_D_WEIGHT,
    C2_D_CAP
};
static const struct policy_param credit2_dom_params[] = {
    [C2_D_WEIGHT] = {"weight", POLICY_PARAM_INT, 1, 65535, CREDIT2_DEFAULT_WEIGHT,
                     "relative share per vCPU (1..65535)"},
    [C2_D_CAP] = {"cap", POLICY_PARAM_INT, 0, CREDIT2_MAX_CAP, 0,
                  "at most this % of one CPU (0 = none, <= 100 x vCPUs)"},
    {NULL, 0, 0, 0, 0, NULL},
};

static bool
value_given(const struct policy_values *val, int i)
{
    return (val->set & (1U << i)) != 0;
}

static int
check_ratelimit(int64_t us, char *err)
{
    if (us != 0 && us < CREDIT2_RATELIMIT_MIN_US) {
        snprintf(err, POLICY_ERRLEN, "ratelimit_us: %lld is below %d (use 0 to disable, or %d..%d)",
                 (long long)us, CREDIT2_RATELIMIT_MIN_US, CREDIT2_RATELIMIT_MIN_US,
                 CREDIT2_RATELIMIT_MAX_US);
        return -EINVAL;
    }
    return 0;
}

static int
check_arrangement(const struct policy_values *pv, enum credit2_arrangement *arr, char *err)
{
    *arr = CREDIT2_RUNQ_SOCKET;
    if (value_given(pv, C2_P_RUNQUEUE) &&
        credit2_runq_arrangement_parse(pv->s[C2_P_RUNQUEUE], arr) < 0) {
        snprintf(err, POLICY_ERRLEN, "runqueue: '%.16s' is not cpu, core, socket, node or all",
                 pv->s[C2_P_RUNQUEUE]);
        return -EINVAL;
    }
    return 0;
}

static int
credit2_init(struct policy *pol, const struct policy_values *pv, char *err)
{
    enum credit2_arrangement arr;
    struct credit2_priv *prv;

    if (check_ratelimit(pv->i[C2_P_RATELIMIT_US], err) < 0 || check_arrangement(pv, &arr, err) < 0)
        return -EINVAL;
    prv = calloc(1, sizeof(*prv) + pol->nr_cpus * sizeof(prv->cpu[0]));
    if (prv == NULL || (prv->runqs = calloc(pol->nr_cpus, sizeof(prv->runqs[0]))) == NULL) {
        free(prv);
        snprintf(err, POLICY_ERRLEN, "credit2: out of memory");
        return -ENOMEM;
    }
    prv->ratelimit_us = (unsigned int)pv->i[C2_P_RATELIMIT_US];
    prv->inflight = pv->i[C2_P_INFLIGHT] != 0;
    prv->arrangement = arr;
    prv->picking_cpu = -1;
    TAILQ_INIT(&prv->capped);
    pol->priv = prv;
    return credit2_runq_arrange(pol, err);
}

static void
credit2_fini(struct policy *pol)
{
    struct credit2_priv *prv = credit2_priv(pol);

    free(prv->runqs);
    free(prv);
    pol->priv = NULL;
}

static int
check_cap(const struct policy_dom *d, int64_t cap, char *err)
{
    if (cap > 100 * (int64_t)d->nr_vcpus) {
        snprintf(err, POLICY_ERRLEN, "cap: %lld is above 100 x %u vCPUs", (long long)cap,
                 d->nr_vcpus);
        return -EINVAL;
    }
    return 0;
}

/* A capped domain's budget starts with its first vCPU (no clock here). */
static int
credit2_dom_add(struct policy *pol, struct policy_dom *d, const struct policy_values *dv, char *err)
{
    struct credit2_dom *sdom = credit2_dom(d);

    (void)pol;
    if (check_cap(d, dv->i[C2_D_CAP], err) < 0)
        return -EINVAL;
    sdom->d = d;
    sdom->weight = (unsigned int)dv->i[C2_D_WEIGHT];
    sdom->cap = (unsigned int)dv->i[C2_D_CAP];
    sdom->tot_budget = CREDIT2_BDGT_REPL_PERIOD_NS * (int64_t)sdom->cap / 100;
    TAILQ_INIT(&sdom->parked);
    return 0;
}

static void
credit2_dom_remove(struct policy *pol, struct policy_dom *d)
{
    credit2_budget_dom_fini(pol, credit2_dom(d));
}

/* New vCPU: 10 ms of credit, half a vCPU of load, least loaded runqueue. */
static void
credit2_vcpu_add(struct policy *pol, struct policy_vcpu *v, uint64_t now)
{
    struct credit2_priv *prv = credit2_priv(pol);
    struct credit2_vcpu *svc = credit2_vcpu(v);
    unsigned int cpu;

    svc->v = v;
    svc->sdom = credit2_dom(v->dom);
    svc->credit = CREDIT2_CREDIT_INIT;
    svc->weight = svc->sdom->weight;
    svc->avgload = 1LL << (CREDIT2_LOAD_PRECISION_SHIFT - 1);
    svc->load_last_update = (int64_t)(now >> CREDIT2_LOAD_GRANULARITY_SHIFT);
    svc->tickled_cpu = -1;
    svc->on_cpu = -1;
    svc->pinned = cpuset_count(&v->affinity) == 1;
    credit2_budget_vcpu_init(pol, svc, now);
    cpu = credit2_load_res_pick(pol, svc);
    policy_vcpu_move(pol, v, cpu);
    credit2_load_assign(svc, prv->cpu[cpu].rqd);
}

static void
credit2_vcpu_remove(struct policy *pol, struct policy_vcpu *v, uint64_t now)
{
    struct credit2_priv *prv = credit2_priv(pol);
    struct credit2_vcpu *svc = credit2_vcpu(v);

    if (svc->on_runq) {
        credit2_runq_remove(svc);
        credit2_load_update(svc->rqd, svc, -1, now);
    } else if (svc->on_cpu >= 0) {
        struct credit2_pcpu *pc = &prv->cpu[svc->on_cpu];

        /* Its CPU idles until the core re-picks it. */
        pc->cur = NULL;
        credit2_runq_set_busy(pc->rqd, pc, (unsigned int)svc->on_cpu, false);
        svc->on_cpu = -1;
        credit2_load_update(svc->rqd, svc, -1, now);
        if (credit2_has_cap(svc) && svc->budget > 0)
            credit2_budget_return(pol, svc, now);
    }
    credit2_budget_vcpu_fini(svc);
    credit2_load_deassign(svc);
}

/* Queue by credit and tickle; an elected, queued or parked vCPU stays put. */
static void
credit2_wake(struct policy *pol, struct policy_vcpu *v, uint64_t now)
{
    struct credit2_vcpu *svc = credit2_vcpu(v);

    credit2_priv(pol)->last_now = now;
    if (svc->on_cpu >= 0 || svc->on_runq || v->parked)
        return;
    credit2_load_update(svc->rqd, svc, 1, now);
    credit2_runq_insert(svc);
    credit2_runq_tickle(pol, svc, now);
}

static void
credit2_sleep(struct policy *pol, struct policy_vcpu *v, uint64_t now)
{
    struct credit2_vcpu *svc = credit2_vcpu(v);

    credit2_priv(pol)->last_now = now;
    if (svc->on_cpu >= 0) {
        credit2_runq_tickle_cpu(pol, svc->rqd, (unsigned int)svc->on_cpu);
    } else if (svc->on_runq) {
        credit2_load_update(svc->rqd, svc, -1, now);
        credit2_runq_remove(svc);
    }
}

static void
credit2_yield(struct policy *pol, struct policy_vcpu *v, uint64_t now)
{
    struct credit2_vcpu *svc = credit2_vcpu(v);

    (void)pol, (void)now;
    if (svc->on_cpu >= 0)
        svc->yield = true;
}

/*
 * Burn measured run time (t2c_update): time x max_weight / weight
 * credits, keeping the remainder, floored at CREDIT_MIN; a capped vCPU
 * also spends the same wall time of budget. Unlike in Xen, a queued vCPU
 * can be charged (it ran while not elected), so it is re-queued by credit.
 */
static void
credit2_charge(struct policy *pol, struct policy_vcpu *v, uint64_t ran_ns, uint64_t now)
{
    struct credit2_vcpu *svc = credit2_vcpu(v);
    uint64_t t = ran_ns < CREDIT2_BURN_MAX_NS ? ran_ns : CREDIT2_BURN_MAX_NS;
    uint64_t val = t * svc->rqd->max_weight + svc->residual;
    int64_t credit;

    credit2_priv(pol)->last_now = now;
    svc->run_ns += ran_ns;
    svc->residual = val % svc->weight;
    credit = svc->credit - (int64_t)(val / svc->weight);
    svc->credit = credit < CREDIT2_CREDIT_MIN ? CREDIT2_CREDIT_MIN : credit;
    if (credit2_has_cap(svc))
        svc->budget -= (int64_t)ran_ns;
    /* It ran while queued (the kernel ran it for an idle CPU): re-sort. */
    if (svc->on_runq) {
        credit2_runq_remove(svc);
        credit2_runq_insert(svc);
    }
}

/* Credit to time for svc: c2t. */
static int64_t
c2t(const struct credit2_runq *rqd, int64_t credit, const struct credit2_vcpu *svc)
{
    return credit * (int64_t)svc->weight / (int64_t)rqd->max_weight;
}

/*
 * End of an epoch (reset_credit): every vCPU assigned to the runqueue
 * gains CREDIT_INIT (twice if snext sits at the floor, so that it gets
 * back in the black), clipped at INIT + CARRYOVER. A runner of another
 * CPU that is out of budget has its CPU tickled.
 */
static void
reset_credit(struct policy *pol, struct credit2_runq *rqd, const struct credit2_vcpu *snext,
             unsigned int cpu)
{
    int64_t reset = CREDIT2_CREDIT_INIT;
    struct credit2_vcpu *svc;

    if (snext->credit == CREDIT2_CREDIT_MIN)
        reset += CREDIT2_CREDIT_INIT;
    TAILQ_FOREACH(svc, &rqd->svc, rqd_elem)
    {
        if (svc->on_cpu >= 0 && svc->on_cpu != (int)cpu && credit2_has_cap(svc) && svc->budget <= 0)
            credit2_runq_tickle_cpu(pol, rqd, (unsigned int)svc->on_cpu);
        svc->reset_from = svc->credit;
        svc->credit += reset;
        if (svc->credit > CREDIT2_CREDIT_INIT + CREDIT2_CARRYOVER_MAX)
            svc->credit = CREDIT2_CREDIT_INIT + CREDIT2_CARRYOVER_MAX;
        svc->resets++;
    }
}

/*
 * runq_candidate: the current vCPU if the ratelimit keeps it; else the
 * first runqueue entry that may run here (hard affinity, not waiting for
 * the CPU tickled for it, migration resistance, budget) if it has more
 * credit than the current one (any credit when yielding); else the
 * current one if still runnable; else NULL (idle).
 */
static struct credit2_vcpu *
runq_candidate(struct policy *pol, struct credit2_runq *rqd, struct credit2_vcpu *scurr,
               unsigned int cpu, uint64_t now)
{
    const struct credit2_priv *prv = credit2_priv(pol);
    struct credit2_vcpu *snext = NULL, *svc;
    int64_t snext_credit = CREDIT2_IDLE_CREDIT;
    bool yield = false;

    if (scurr != NULL) {
        yield = scurr->yield;
        scurr->yield = false;
        if (!yield && prv->ratelimit_us != 0 && credit2_runnable(scurr) &&
            now - scurr->state_entry < (uint64_t)prv->ratelimit_us * NSEC_PER_USEC)
            return scurr;
        if (credit2_runnable(scurr)) {
            snext = scurr;
            snext_credit = scurr->credit;
        }
    }
    TAILQ_FOREACH(svc, &rqd->runq, runq_elem)
    {
        if (!credit2_runnable(svc) || !policy_vcpu_allowed(svc->v, cpu))
            continue;
        if (svc->tickled_cpu >= 0 && svc->tickled_cpu != (int)cpu &&
            cpuset_has(&rqd->tickled, (unsigned int)svc->tickled_cpu))
            continue;
        if (svc->v->cpu != cpu && snext_credit + CREDIT2_MIGRATE_RESIST_NS > svc->credit)
            continue;
        if ((yield || svc->credit > snext_credit) &&
            (!credit2_has_cap(svc) || credit2_budget_grab(pol, svc, now)))
            snext = svc;
        break;
    }
    return snext;
}

/*
 * How long snext runs (csched2_runtime): until its credit falls to that
 * of the best waiter, the runqueue head or the vCPU switched out if it
 * stays runnable (Xen >= 4.21), converted to snext's burn rate; within
 * its budget if capped; clamped to [max(MIN_TIMER, ratelimit left), MAX].
 */
static int64_t
credit2_runtime(const struct credit2_priv *prv, const struct credit2_runq *rqd,
                const struct credit2_vcpu *snext, bool continuing,
                const struct credit2_vcpu *inflight, uint64_t now)
{
    const struct credit2_vcpu *head = TAILQ_FIRST(&rqd->runq);
    int64_t min_time = CREDIT2_MIN_TIMER_NS, rt_credit = snext->credit, time;
    int64_t swait = CREDIT2_IDLE_CREDIT;

    if (prv->ratelimit_us != 0) {
        int64_t rl = (int64_t)prv->ratelimit_us * (int64_t)NSEC_PER_USEC;

        if (continuing)
            rl = (int64_t)(snext->state_entry - now) + rl;
        if (rl > min_time)
            min_time = rl;
    }
    if (head != NULL)
        swait = head->credit;
    if (inflight != NULL && inflight->credit > swait)
        swait = inflight->credit;
    if (swait > 0)
        rt_credit = snext->credit - swait;
    time = rt_credit > 0 ? c2t(rqd, rt_credit, snext) : 0;
    if (credit2_has_cap(snext) && snext->budget < time)
        time = snext->budget;
    if (time < min_time)
        time = min_time;
    else if (time > CREDIT2_MAX_TIMER_NS)
        time = CREDIT2_MAX_TIMER_NS;
    return time;
}

/*
 * A vCPU leaving its CPU for the runqueue balancing chose: off the old
 * runqueue's load, moved, and queued there if it can run.
 */
static void
send_away(struct policy *pol, struct credit2_vcpu *svc, uint64_t now)
{
    struct credit2_runq *trqd = svc->migrate_rqd;

    svc->migrate_request = false;
    svc->migrate_rqd = NULL;
    credit2_load_update(svc->rqd, svc, -1, now);
    credit2_load_move(pol, svc, trqd, now);
    if (credit2_runnable(svc)) {
        credit2_load_update(svc->rqd, svc, 1, now);
        credit2_runq_insert(svc);
        credit2_runq_tickle(pol, svc, now);
    }
}

/*
 * prev stopped running on its CPU (csched2_context_saved): unused budget
 * goes back, then it is re-queued and tickled if still runnable, sent to
 * its new runqueue if balancing asked, or leaves the load; last, parked
 * vCPUs of its domain get a chance at the returned budget.
 */
static void
context_saved(struct policy *pol, struct credit2_vcpu *prev, uint64_t now)
{
    struct credit2_dom *sdom = prev->sdom;
    bool unpark = false;

    prev->on_cpu = -1;
    if (credit2_has_cap(prev) && prev->budget > 0) {
        credit2_budget_return(pol, prev, now);
        unpark = sdom->budget > 0;
    }
    if (prev->migrate_request) {
        send_away(pol, prev, now);
    } else if (credit2_runnable(prev)) {
        credit2_runq_insert(prev);
        credit2_runq_tickle(pol, prev, now);
    } else {
        credit2_load_update(prev->rqd, prev, -1, now);
    }
    if (unpark)
        credit2_budget_unpark(pol, sdom, now);
}

/*
 * snext is chosen for cpu: off the queue, CPU busy, and if the best
 * credit of the runqueue is now <= 0 the epoch ends (reset, then balance).
 */
static void
elect(struct policy *pol, struct credit2_runq *rqd, struct credit2_vcpu *snext, unsigned int cpu,
      uint64_t now)
{
    struct credit2_priv *prv = credit2_priv(pol);
    const struct credit2_vcpu *head;
    int64_t top;

    if (snext->on_runq) {
        credit2_runq_remove(snext);
        snext->state_entry = now;
    }
    snext->on_cpu = (int)cpu;
    credit2_runq_set_busy(rqd, &prv->cpu[cpu], cpu, true);
    head = TAILQ_FIRST(&rqd->runq);
    top = head != NULL && head->credit > snext->credit ? head->credit : snext->credit;
    if (top <= CREDIT2_CREDIT_RESET) {
        reset_credit(pol, rqd, snext, cpu);
        credit2_load_balance(pol, cpu, now);
    }
}

/* Choose snext (NULL = idle); scurr is cleared if balancing sent it away. */
static struct credit2_vcpu *
pick_choose(struct policy *pol, struct credit2_runq *rqd, struct credit2_vcpu **scurr,
            unsigned int cpu, uint64_t now)
{
    struct credit2_vcpu *snext;

    for (;;) {
        snext = runq_candidate(pol, rqd, *scurr, cpu, now);
        if (snext == NULL)
            return NULL;
        elect(pol, rqd, snext, cpu, now);
        if (!snext->migrate_request)
            return snext;
        /*
         * The balance of that reset pushed the vCPU about to run: it is
         * switched out at once (budget back, sent to its new runqueue).
         */
        context_saved(pol, snext, now);
        if (snext == *scurr) {
            credit2_priv(pol)->cpu[cpu].cur = NULL;
            *scurr = NULL;
        }
    }
}

/*
 * csched2_schedule, once. The current vCPU, charged up to now, first
 * takes budget if it ran out (or is parked); then the candidate is
 * elected; a vCPU from another CPU gets the migration compensation and
 * moves here; last, the previous vCPU is switched out (context_saved).
 */
static void
pick_once(struct policy *pol, unsigned int cpu, uint64_t now, struct policy_decision *out)
{
    struct credit2_priv *prv = credit2_priv(pol);
    struct credit2_pcpu *pc = &prv->cpu[cpu];
    struct credit2_runq *rqd = pc->rqd;
    struct credit2_vcpu *scurr = pc->cur, *snext;
    const struct credit2_vcpu *inflight;

    credit2_runq_pick_started(rqd, pc, cpu);
    if (scurr != NULL && scurr->budget <= 0)
        credit2_budget_grab(pol, scurr, now);
    snext = pick_choose(pol, rqd, &scurr, cpu, now);
    out->vcpu = NULL;
    out->until = POLICY_NEVER;
    if (snext == NULL) {
        credit2_runq_set_busy(rqd, pc, cpu, false);
        credit2_load_update(rqd, NULL, 0, now);
    } else {
        snext->tickled_cpu = -1;
        if (snext->v->cpu != cpu) {
            snext->credit += CREDIT2_MIGRATE_COMPENSATION_NS;
            policy_vcpu_move(pol, snext->v, cpu);
            snext->migrations++;
        }
        inflight = prv->inflight && scurr != snext && scurr != NULL && credit2_runnable(scurr)
                       ? scurr
                       : NULL;
        out->vcpu = snext->v;
        out->until =
            now + (uint64_t)credit2_runtime(prv, rqd, snext, snext == scurr, inflight, now);
    }
    pc->cur = snext;
    if (scurr != NULL && scurr != snext)
        context_saved(pol, scurr, now);
}

/*
 * Switching the previous vCPU out can tickle this very CPU (budget it
 * returned unparked a vCPU that wants the now idle CPU). Xen's IPI would
 * reschedule at once; the pool drops a CPU's tickles of itself during its
 * pick, so the decision is simply taken again, a bounded number of times.
 */
static void
credit2_pick(struct policy *pol, unsigned int cpu, uint64_t now, struct policy_decision *out)
{
    struct credit2_priv *prv = credit2_priv(pol);
    struct credit2_pcpu *pc = &prv->cpu[cpu];

    prv->picking_cpu = (int)cpu;
    prv->last_now = now;
    for (int round = 0; round < CREDIT2_PICK_ROUNDS; round++) {
        pick_once(pol, cpu, now, out);
        if (!cpuset_has(&pc->rqd->tickled, cpu))
            break;
    }
    credit2_runq_pick_started(pc->rqd, pc, cpu);
    prv->picking_cpu = -1;
}

static void
credit2_timer(struct policy *pol, uint64_t now)
{
    credit2_priv(pol)->last_now = now;
    credit2_budget_timer(pol, now);
}

static int
set_pool_params(struct policy *pol, const struct policy_values *val, char *err)
{
    struct credit2_priv *prv = credit2_priv(pol);
    enum credit2_arrangement arr;

    if (value_given(val, C2_P_RATELIMIT_US) && check_ratelimit(val->i[C2_P_RATELIMIT_US], err) < 0)
        return -EINVAL;
    if (check_arrangement(val, &arr, err) < 0)
        return -EINVAL;
    if (value_given(val, C2_P_RUNQUEUE) && arr != prv->arrangement) {
        snprintf(err, POLICY_ERRLEN,
                 "runqueue: cannot change a running pool (it is %s); switch the pool to "
                 "credit2 with runqueue=%s",
                 credit2_runq_arrangement_name(prv->arrangement),
                 credit2_runq_arrangement_name(arr));
        return -EINVAL;
    }
    if (value_given(val, C2_P_RATELIMIT_US))
        prv->ratelimit_us = (unsigned int)val->i[C2_P_RATELIMIT_US];
    if (value_given(val, C2_P_INFLIGHT))
        prv->inflight = val->i[C2_P_INFLIGHT] != 0;
    return 0;
}

/* New weight for every vCPU of the domain, and each runqueue's maximum. */
static void
set_weight(struct credit2_dom *sdom, unsigned int weight)
{
    struct policy_dom *d = sdom->d;

    sdom->weight = weight;
    for (unsigned int i = 0; i < d->nr_vcpus; i++) {
        struct credit2_vcpu *svc = credit2_vcpu(d->vcpus[i]);
        unsigned int old = svc->weight;

        svc->weight = weight;
        credit2_runq_max_weight(svc->rqd, weight, old);
    }
}

static int
credit2_set_params(struct policy *pol, struct policy_dom *d, const struct policy_values *val,
                   uint64_t now, char *err)
{
    struct credit2_dom *sdom;

    if (d == NULL)
        return set_pool_params(pol, val, err);
    sdom = credit2_dom(d);
    if (value_given(val, C2_D_CAP) && check_cap(d, val->i[C2_D_CAP], err) < 0)
        return -EINVAL;
    if (value_given(val, C2_D_WEIGHT))
        set_weight(sdom, (unsigned int)val->i[C2_D_WEIGHT]);
    if (value_given(val, C2_D_CAP))
        credit2_budget_set_cap(pol, sdom, (unsigned int)val->i[C2_D_CAP], now);
    return 0;
}

static void
credit2_get_params(struct policy *pol, struct policy_dom *d, struct policy_sink *sk)
{
    const struct credit2_priv *prv = credit2_priv(pol);

    if (d == NULL) {
        sk->put_int(sk, "ratelimit_us", prv->ratelimit_us);
        sk->put_str(sk, "runqueue", credit2_runq_arrangement_name(prv->arrangement));
        sk->put_int(sk, "inflight", prv->inflight);
        return;
    }
    sk->put_int(sk, "weight", credit2_dom(d)->weight);
    sk->put_int(sk, "cap", credit2_dom(d)->cap);
}

static void
credit2_vcpu_stats(struct policy *pol, struct policy_vcpu *v, struct policy_sink *sk)
{
    const struct credit2_vcpu *svc = credit2_vcpu(v);

    sk->put_int(sk, "credit_ns", svc->credit);
    sk->put_int(sk, "weight", svc->weight);
    if (credit2_has_cap(svc)) {
        sk->put_int(sk, "budget_ns", svc->budget);
        sk->put_int(sk, "quota_ns", svc->budget_quota);
        sk->put_int(sk, "dom_budget_ns", svc->sdom->budget);
    }
    sk->put_int(sk, "load_pct", credit2_load_pct(svc, credit2_priv(pol)->last_now));
    sk->put_int(sk, "runqueue", svc->rqd->id);
    sk->put_int(sk, "resets", (int64_t)svc->resets);
    sk->put_int(sk, "reset_from_ns", svc->reset_from);
    sk->put_int(sk, "parks", (int64_t)svc->parks);
    sk->put_int(sk, "migrations", (int64_t)svc->migrations);
    sk->put_int(sk, "run_ns", (int64_t)svc->run_ns);
}

const struct policy_ops credit2_ops = {
    .name = "credit2",
    .summary = "Xen's Credit2: weighted credits, 10 ms epochs, budget caps (Xen 4.22)",
    .pool_params = credit2_pool_params,
    .dom_params = credit2_dom_params,
    .dom_priv_size = sizeof(struct credit2_dom),
    .vcpu_priv_size = sizeof(struct credit2_vcpu),
    .init = credit2_init,
    .fini = credit2_fini,
    .dom_add = credit2_dom_add,
    .dom_remove = credit2_dom_remove,
    .vcpu_add = credit2_vcpu_add,
    .vcpu_remove = credit2_vcpu_remove,
    .wake = credit2_wake,
    .sleep = credit2_sleep,
    .yield = credit2_yield,
    .charge = credit2_charge,
    .pick = credit2_pick,
    .timer = credit2_timer,
    .set_params = credit2_set_params,
    .get_params = credit2_get_params,
    .vcpu_stats = credit2_vcpu_stats,
};
