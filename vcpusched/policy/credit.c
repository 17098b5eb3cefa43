/* SPDX-License-Identifier: ISC */
/*
 * credit.c - Xen's Credit (Credit1) scheduler, re-implemented as a pure
 * policy: per-CPU priority runqueues, BOOST on wake, credits burned from
 * measured run time, periodic accounting, cap parking and work stealing.
 * The reference is xen/common/sched/credit.c of Xen 4.22 (design notes:
 * xen-sched.md section 1); accounting and ticks are in credit_acct.c.
 *
 * Design. Each pool CPU has one runqueue sorted by priority only, BOOST >
 * UNDER > OVER (> IDLE), FIFO inside a level (credit_runq_insert). The
 * vCPU elected on a CPU is not queued. A pick puts the current vCPU back
 * (behind every entry of its level, so equal vCPUs round-robin) and takes
 * the head for a slice of `tslice_ms` (30 ms): CPU hogs switch every 30
 * ms. A wake queues the vCPU on the CPU it last ran on and boosts it to
 * BOOST if it is UNDER, not parked and not just placed or migrated
 * (csched_unit_wake); then credit_tickle asks an idle CPU to come and
 * steal it, or, if none fits and the waker has a higher priority than the
 * running vCPU, preempts that one. BOOST preempts UNDER and OVER; nothing
 * preempts BOOST, and UNDER does not preempt UNDER. The ratelimit (1 ms)
 * keeps a vCPU elected until it has run that long: a preempting pick
 * answers "keep it until exactly then". When the next local candidate is
 * OVER or idle, the CPU first looks for strictly better queued work on
 * busy peers and steals the first match (csched_load_balance), at most
 * once per `balance_ratelimit_us` (Xen >= 4.18). A yielding vCPU goes one
 * position behind the first lower-priority entry, skips the ratelimit and
 * is never stolen while it waits.
 *
 * Accounting. 10 credits per ms of CPU. Credit is burned in charge() from
 * the MEASURED run time the core reports, with the ns remainder kept, so
 * a vCPU cannot hide from sampling. Every tslice the accounting pass
 * (credit_acct) shares 300 credits per CPU among the active vCPUs by
 * weight, capped per domain at one CPU per active vCPU and at its cap,
 * with the surplus re-offered (credit_xtra) and a negative balance fed
 * back; it recomputes UNDER (credit >= 0) and OVER, clamps at -300, parks
 * capped vCPUs below -cap and unparks them at >= 0, and retires a vCPU
 * above +300 from the active set with its credit halved. A 10 ms tick on
 * each busy CPU (tslice / 3, re-armed on the next multiple when the CPU
 * leaves idle) demotes a running BOOST vCPU to UNDER, activates an
 * inactive vCPU found running, asks a running active vCPU to move to a
 * better (idle) CPU, and re-sorts the queue after a pass. It burns
 * nothing itself: the core charges measured time before every timer call.
 * Ticks and accounting all live in the one pool timer.
 *
 * Parameters. Pool: tslice_ms (1..1000, 30), ratelimit_us (0 = off or
 * 100..500000, at most the tslice, 1000), boost (on), balance_ratelimit_us
 * (0..1000000, 1000). Domain: weight (1..65535, 256; it applies to each
 * vCPU, so a 2-vCPU domain gets twice a 1-vCPU one) and cap (% of one
 * CPU, 0 = none, at most 100 x vCPUs). All can change live.
 *
 * Deviations from Xen, and why:
 * - Activation and BOOST demotion also happen when a vCPU has consumed
 *   more than one tick period of measured CPU since a tick last saw it
 *   ("measured sightings", credit_charge). Xen only samples the running
 *   vCPU at ticks, so a guest that sleeps across every tick is never
 *   activated: it keeps UNDER/BOOST whatever it burns and takes ~90% of a
 *   CPU next to a hog of equal weight (the classic exploit; ~50% here).
 *   For an honest vCPU the rate is that of random tick hits.
 * - `boost` can be turned off (wakes never boost), to compare.
 * - The ratelimit answer is exact: Xen never arms a timer under 100 us
 *   and, by a quirk, uses 100 us whenever the vCPU has run less than that.
 * - The idle vCPU is not a queue entry, and a pick that tickles itself is
 *   moot here, so a vCPU that leaves its CPU at a pick (tick migration,
 *   kicked by a waker) is only moved if it goes to another CPU.
 * - A waker that preempts may mark the running vCPU to leave for an idle
 *   CPU it may use; Xen >= 4.13 tests the waker's affinity there, which
 *   makes the path dead code; we test the running vCPU's, as intended.
 * - The first balance is allowed at once (Xen counts from CPU bring-up),
 *   and balance_ratelimit_us=0 allows several balances at one instant.
 * - The own CPU counts as idle for the CPU choice only for its elected
 *   vCPU (Xen looks at the queue only, so an inserted vCPU may stay on a
 *   busy CPU while others idle).
 * - The arithmetic is 64-bit, so large weights cannot overflow.
 *
 * Limitations. No soft affinity, migration delay (Xen's default is 0),
 * tasklets or SMT power savings. The accounting runs on the pool timer,
 * not on a master CPU, and comes before the ticks due at the same instant.
 * As in Xen, stored credit is bounded at +-1 period, which blurs weights
 * with short tslices (768:256 gives 73:27 at tslice_ms=3) and when slices
 * end late (Xen 4.17 under TCG: bench/README.md). With exact timers the
 * phase of passes, ticks and slice ends never drifts, and on 2 CPUs it
 * decides the shares (tests/sim/scenarios/credit_smp512_*.sim).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credit_priv.h"

#define CREDIT_DEFAULT_WEIGHT       256     /* CSCHED_DEFAULT_WEIGHT */
#define CREDIT_MAX_WEIGHT           65535   /* u16 in Xen; libxl refuses more */
#define CREDIT_CAP_PER_VCPU         100     /* libxl: cap <= 100 x nr_vCPUs */
#define CREDIT_DEFAULT_RATELIMIT_US 1000    /* Xen's sched_ratelimit_us */
#define CREDIT_RATELIMIT_MIN_US     100     /* XEN_SYSCTL_SCHED_RATELIMIT_MIN */
#define CREDIT_RATELIMIT_MAX_US     500000  /* XEN_SYSCTL_SCHED_RATELIMIT_MAX */
#define CREDIT_TSLICE_MIN_MS        1       /* XEN_SYSCTL_CSCHED_TSLICE_MIN */
#define CREDIT_TSLICE_MAX_MS        1000    /* XEN_SYSCTL_CSCHED_TSLICE_MAX */
#define CREDIT_DEFAULT_TSLICE_MS    30      /* CSCHED_DEFAULT_TSLICE_MS */
#define CREDIT_DEFAULT_BALANCE_US   1000    /* CSCHED_DEFAULT_LOAD_BALANCE_RATELIMIT_US */
#define CREDIT_MAX_BALANCE_US       1000000 /* CSCHED_MAX_LOAD_BALANCE_RATELIMIT_US */

enum {
    CREDIT_P_TSLICE_MS,
    CREDIT_P_RATELIMIT_US,
    CREDIT_P_BOOST,
    CREDIT_P_BALANCE_US,
};
static const struct policy_param credit_pool_params[] = {
    [CREDIT_P_TSLICE_MS] = {"tslice_ms", POLICY_PARAM_INT, CREDIT_TSLICE_MIN_MS,
                            CREDIT_TSLICE_MAX_MS, CREDIT_DEFAULT_TSLICE_MS,
                            "time slice and accounting period in ms (tick = tslice/3)"},
    [CREDIT_P_RATELIMIT_US] = {"ratelimit_us", POLICY_PARAM_INT, 0, CREDIT_RATELIMIT_MAX_US,
                               CREDIT_DEFAULT_RATELIMIT_US,
                               "minimum run time before preemption in us (0 = off, or 100..)"},
    [CREDIT_P_BOOST] = {"boost", POLICY_PARAM_BOOL, 0, 1, 1,
                        "boost waking UNDER vCPUs (off: a non-Xen comparison knob)"},
    [CREDIT_P_BALANCE_US] = {"balance_ratelimit_us", POLICY_PARAM_INT, 0, CREDIT_MAX_BALANCE_US,
                             CREDIT_DEFAULT_BALANCE_US,
                             "minimum time between work-stealing attempts of a CPU in us"},
    {NULL, 0, 0, 0, 0, NULL},
};

enum {
    CREDIT_D_WEIGHT,
    CREDIT_D_CAP,
};
static const struct policy_param credit_dom_params[] = {
    [CREDIT_D_WEIGHT] = {"weight", POLICY_PARAM_INT, 1, CREDIT_MAX_WEIGHT, CREDIT_DEFAULT_WEIGHT,
                         "relative share of each vCPU (256 = default)"},
    [CREDIT_D_CAP] = {"cap", POLICY_PARAM_INT, 0, CREDIT_MAX_WEIGHT, 0,
                      "CPU limit in % of one CPU (0 = none, at most 100 x vCPUs)"},
    {NULL, 0, 0, 0, 0, NULL},
};

/* --- Runqueues ------------------------------------------------------- */

/* Next CPU of `mask` after n, wrapping (Xen's cpumask_cycle); CPUSET_MAX if empty. */
unsigned int
credit_mask_cycle(const struct cpuset *mask, unsigned int n)
{
    int c = cpuset_cycle(mask, n);

    return c < 0 ? CPUSET_MAX : (unsigned int)c;
}

/*
 * Xen's __runq_insert: behind every entry of the same or higher priority.
 * A yielding vCPU goes one further, behind the first lower-priority entry
 * if there is one. (Xen's queue ends with the idle vCPU, which a yield
 * never passes; it is not a queue entry here.)
 */
void
credit_runq_insert(struct credit_pcpu *pc, struct credit_vcpu *cv)
{
    struct credit_vcpu *it;

    for (it = TAILQ_FIRST(&pc->runq); it != NULL; it = TAILQ_NEXT(it, runq_link))
        if (cv->pri > it->pri)
            break;
    if ((cv->flags & CREDIT_F_YIELD) && it != NULL)
        it = TAILQ_NEXT(it, runq_link);
    if (it != NULL)
        TAILQ_INSERT_BEFORE(it, cv, runq_link);
    else
        TAILQ_INSERT_TAIL(&pc->runq, cv, runq_link);
    cv->queued = true;
    pc->nr_queued++;
}

/* Leaving the queue ends a yield (Xen >= 4.18 keeps YIELD until then). */
void
credit_runq_remove(struct credit_pcpu *pc, struct credit_vcpu *cv)
{
    TAILQ_REMOVE(&pc->runq, cv, runq_link);
    cv->queued = false;
    cv->flags &= ~CREDIT_F_YIELD;
    pc->nr_queued--;
}

/* Xen's nr_runnable: queued vCPUs plus the elected one. */
static unsigned int
credit_nr_runnable(const struct credit_pcpu *pc)
{
    return pc->nr_queued + (pc->cur != NULL);
}

static bool
credit_vcpu_can_run(const struct credit_vcpu *cv)
{
    return cv->v->runnable && !(cv->flags & CREDIT_F_PARKED);
}

/* --- CPU choice (_csched_cpu_pick) ----------------------------------- */

/* How many CPUs of `group` (a core or a socket) are idle. */
static unsigned int
credit_idle_count(const struct cpuset *idlers, const struct cpuset *group)
{
    struct cpuset both;

    cpuset_and2(&both, idlers, group);
    return cpuset_count(&both);
}

/*
 * Prefer the vCPU's own CPU, else an idle one, and among idle CPUs the one
 * whose core (same socket) or socket (factor 2 across sockets) has more
 * idle siblings. The own CPU counts as idle when the vCPU is its only
 * runnable vCPU (it is elected there and nothing is queued; Xen only
 * looks at the queue, so it also counts a busy CPU as idle for a vCPU
 * being inserted there). `commit` records the rotation bias.
 */
unsigned int
credit_cpu_pick(struct policy *pol, const struct credit_vcpu *cv, bool commit)
{
    struct credit_priv *p = credit_priv(pol);
    unsigned int home = cv->v->cpu, cpu;
    struct cpuset cpus, idlers, m;
    int spc = -1;

    cpuset_and2(&cpus, &cv->v->affinity, &p->all);
    cpuset_and2(&idlers, &p->idlers, &p->all);
    cpu = cpuset_has(&cpus, home) ? home : credit_mask_cycle(&cpus, home);
    if (cpu == home && cv->elected && TAILQ_EMPTY(&p->cpu[cpu].runq))
        cpuset_set(&idlers, cpu);
    cpuset_and(&cpus, &idlers);
    if (!cpuset_has(&cpus, cpu) && !cpuset_empty(&cpus))
        cpu = credit_mask_cycle(&cpus, cpu);
    cpuset_clear(&cpus, cpu);
    while (!cpuset_empty(&cpus)) {
        unsigned int nxt = credit_mask_cycle(&cpus, cpu), factor = 1;
        const struct cpuset *cgrp = &p->cpu[cpu].sibling_mask, *ngrp = &p->cpu[nxt].sibling_mask;

        if (!cpuset_has(&p->cpu[cpu].socket_mask, nxt)) {
            factor = 2;
            cgrp = &p->cpu[cpu].socket_mask;
            ngrp = &p->cpu[nxt].socket_mask;
        }
        if (credit_idle_count(&idlers, cgrp) * factor < credit_idle_count(&idlers, ngrp)) {
            spc = (int)nxt;
            cpuset_and2(&m, &idlers, ngrp);
            cpuset_and(&m, &cpus);
            cpu = credit_mask_cycle(&m, p->cpu[nxt].idle_bias);
            cpuset_andnot(&cpus, &p->cpu[cpu].sibling_mask);
        } else {
            cpuset_and2(&m, &idlers, ngrp);
            cpuset_andnot(&cpus, &m);
        }
    }
    if (commit && spc >= 0)
        p->cpu[spc].idle_bias = cpu;
    return cpu;
}

/* --- Wake and tickle ------------------------------------------------- */

/* Tickle `cpu` and take it out of the idlers (it is about to pick). */
static void
credit_tickle_cpu(struct policy *pol, unsigned int cpu)
{
    struct credit_priv *p = credit_priv(pol);

    cpuset_clear(&p->idlers, cpu);
    p->cpu[cpu].tickles++;
    policy_tickle(pol, cpu);
}

/*
 * Xen's __runq_tickle for a vCPU just queued on its CPU: an idle home CPU
 * runs it; else, if idle CPUs exist, wake one it may use (round-robin) so
 * that it steals the vCPU, and leave the running vCPU alone; else preempt
 * only if the newcomer has a strictly higher priority.
 */
static void
credit_tickle(struct policy *pol, struct credit_vcpu *cv)
{
    struct credit_priv *p = credit_priv(pol);
    unsigned int cpu = cv->v->cpu;
    struct credit_pcpu *pc = &p->cpu[cpu];
    int cur_pri = pc->cur != NULL ? pc->cur->pri : CREDIT_PRI_IDLE;
    struct cpuset idle, fit, allowed;
    bool pinned;

    cpuset_and2(&idle, &p->idlers, &p->all);
    cpuset_and2(&fit, &cv->v->affinity, &idle);
    cpuset_and2(&allowed, &cv->v->affinity, &p->all);
    pinned = cpuset_count(&allowed) == 1;
    if (pinned && cpuset_has(&idle, cpu)) {
        credit_tickle_cpu(pol, cpu);
    } else if (cur_pri == CREDIT_PRI_IDLE || (cpuset_empty(&idle) && cv->pri > cur_pri)) {
        credit_tickle_cpu(pol, cpu);
    } else if (!cpuset_empty(&idle) && cpuset_empty(&fit) && cv->pri > cur_pri) {
        /* No idler for the newcomer: preempt, and send cur to one if it may. */
        if (cpuset_intersects(&pc->cur->v->affinity, &idle))
            pc->cur->flags |= CREDIT_F_KICKED;
        credit_tickle_cpu(pol, cpu);
    } else if (!cpuset_empty(&fit)) {
        pc->last_tickle = credit_mask_cycle(&fit, pc->last_tickle);
        credit_tickle_cpu(pol, pc->last_tickle);
    }
}

/*
 * csched_unit_wake for a vCPU that is runnable, not parked, not queued
 * and not elected: boost it unless it was just placed or migrated, or is
 * the thaw of an unpark (the flags are consumed), is OVER, or is being
 * unparked; queue it; tickle.
 */
void
credit_wake_vcpu(struct policy *pol, struct credit_vcpu *cv)
{
    struct credit_priv *p = credit_priv(pol);
    bool unboosted = cv->flags & (CREDIT_F_MIGRATING | CREDIT_F_THAWING);

    cv->flags &= ~(CREDIT_F_MIGRATING | CREDIT_F_THAWING);
    if (!unboosted && cv->pri == CREDIT_PRI_UNDER && !(cv->flags & CREDIT_F_PARKED) && p->boost) {
        cv->pri = CREDIT_PRI_BOOST;
        cv->boosts++;
    }
    credit_runq_insert(&p->cpu[cv->v->cpu], cv);
    credit_tickle(pol, cv);
}

static void
credit_wake(struct policy *pol, struct policy_vcpu *v, uint64_t now)
{
    struct credit_vcpu *cv = credit_vcpu(v);

    credit_clock_start(pol, now);
    cv->wakes++;
    /* Already running or queued; or paused for its cap (Xen never calls). */
    if (cv->elected || cv->queued || (cv->flags & CREDIT_F_PARKED))
        return;
    credit_wake_vcpu(pol, cv);
}

/* The elected vCPU blocking is handled by the pick the core runs next. */
static void
credit_sleep(struct policy *pol, struct policy_vcpu *v, uint64_t now)
{
    struct credit_vcpu *cv = credit_vcpu(v);

    (void)now;
    if (cv->queued)
        credit_runq_remove(&credit_priv(pol)->cpu[v->cpu], cv);
}

static void
credit_yield(struct policy *pol, struct policy_vcpu *v, uint64_t now)
{
    (void)pol, (void)now;
    credit_vcpu(v)->flags |= CREDIT_F_YIELD;
    credit_vcpu(v)->yields++;
}

/* --- Work stealing --------------------------------------------------- */

/*
 * csched_runq_steal: the first queued vCPU of `peer` with a strictly
 * higher priority than `pri`, not yielding, allowed on `cpu`. Queued
 * vCPUs are never running (the elected one is not queued).
 */
static struct credit_vcpu *
credit_runq_steal(struct policy *pol, unsigned int peer, unsigned int cpu, int pri)
{
    struct credit_pcpu *ppc = &credit_priv(pol)->cpu[peer];
    struct credit_vcpu *sv;

    if (ppc->cur == NULL) /* an idle peer is about to run its own queue */
        return NULL;
    for (sv = TAILQ_FIRST(&ppc->runq); sv != NULL; sv = TAILQ_NEXT(sv, runq_link)) {
        if (sv->pri <= pri)
            break;
        if ((sv->flags & CREDIT_F_YIELD) || !policy_vcpu_allowed(sv->v, cpu))
            continue;
        credit_runq_remove(ppc, sv);
        policy_vcpu_move(pol, sv->v, cpu);
        sv->steals++;
        return sv;
    }
    return NULL;
}

/*
 * csched_load_balance: visit the busy peers node by node (own node
 * first), each node's round-robin from its balance bias, skipping peers
 * with at most one runnable vCPU; stop at the first steal.
 */
static struct credit_vcpu *
credit_load_balance(struct policy *pol, unsigned int cpu, int pri)
{
    struct credit_priv *p = credit_priv(pol);
    unsigned int n0 = p->cpu[cpu].node;
    struct cpuset workers, peers;

    cpuset_andnot2(&workers, &p->all, &p->idlers);
    cpuset_clear(&workers, cpu);
    p->cpu[cpu].balances++;
    for (unsigned int k = 0; k < p->nr_nodes; k++) {
        struct credit_node *node = &p->nodes[(n0 + k) % p->nr_nodes];
        unsigned int first, peer;

        cpuset_and2(&peers, &workers, &node->mask);
        if (cpuset_empty(&peers))
            continue;
        first = peer = credit_mask_cycle(&peers, node->balance_bias);
        do {
            struct credit_vcpu *sv = NULL;

            if (credit_nr_runnable(&p->cpu[peer]) > 1)
                sv = credit_runq_steal(pol, peer, cpu, pri);
            if (sv != NULL) {
                node->balance_bias = peer;
                return sv;
            }
            peer = credit_mask_cycle(&peers, peer);
        } while (peer != first);
    }
    return NULL;
}

static bool
credit_balance_allowed(const struct credit_priv *p, const struct credit_pcpu *pc, uint64_t now)
{
    return !pc->balanced || p->balance_ratelimit_ns == 0 ||
           now - pc->last_balance > p->balance_ratelimit_ns;
}

/* Dequeue the local head, or steal better work when it is OVER or idle. */
static struct credit_vcpu *
credit_runq_next(struct policy *pol, unsigned int cpu, uint64_t now)
{
    struct credit_priv *p = credit_priv(pol);
    struct credit_pcpu *pc = &p->cpu[cpu];
    struct credit_vcpu *snext = TAILQ_FIRST(&pc->runq);
    int pri = snext != NULL ? snext->pri : CREDIT_PRI_IDLE;

    if (pri <= CREDIT_PRI_OVER && credit_balance_allowed(p, pc, now)) {
        struct credit_vcpu *sv;

        pc->balanced = true;
        pc->last_balance = now;
        sv = credit_load_balance(pol, cpu, pri);
        if (sv != NULL)
            return sv;
    }
    if (snext != NULL)
        credit_runq_remove(pc, snext);
    return snext;
}

/* --- Pick (csched_schedule) ------------------------------------------ */

/*
 * The elected vCPU was asked to leave (tick migration, or kicked by a
 * waker towards an idle CPU). As Xen's _VPF_migrating, it is descheduled
 * whatever the ratelimit. Returns the CPU it goes to, or `cpu` to stay.
 */
static unsigned int
credit_pick_leave(struct policy *pol, struct credit_vcpu *cur, unsigned int cpu)
{
    unsigned int target;

    cur->flags &= ~CREDIT_F_KICKED;
    target = credit_cpu_pick(pol, cur, true);
    if (target != cpu && !credit_vcpu_can_run(cur)) {
        /* Blocked meanwhile: Xen still moves it, and its next wake is no boost. */
        cur->flags |= CREDIT_F_MIGRATING;
        policy_vcpu_move(pol, cur->v, target);
        cur->migrations++;
        return cpu;
    }
    return target;
}

/* vcpu_migrate after the switch: placed (no boost on this wake) and queued. */
static void
credit_pick_migrate(struct policy *pol, struct credit_vcpu *cv, unsigned int target)
{
    cv->flags |= CREDIT_F_MIGRATING;
    policy_vcpu_move(pol, cv->v, target);
    cv->migrations++;
    credit_wake_vcpu(pol, cv);
}

/* Elect snext on cpu: idlers, per-CPU tick start/stop, run-start time. */
static void
credit_pick_commit(struct policy *pol, unsigned int cpu, struct credit_vcpu *snext, uint64_t now)
{
    struct credit_priv *p = credit_priv(pol);
    struct credit_pcpu *pc = &p->cpu[cpu];
    struct credit_vcpu *cur = pc->cur;

    if (snext == NULL)
        cpuset_set(&p->idlers, cpu);
    else
        cpuset_clear(&p->idlers, cpu);
    if (cur == NULL && snext != NULL) {
        pc->next_tick = now + p->tick_ns - now % p->tick_ns;
        policy_timer_arm(pol, pc->next_tick);
    } else if (cur != NULL && snext == NULL) {
        pc->next_tick = POLICY_NEVER;
    }
    if (snext != cur)
        pc->cur_since = now;
    if (cur != NULL)
        cur->elected = false;
    pc->cur = snext;
    if (snext != NULL) {
        snext->elected = true;
        snext->flags &= ~CREDIT_F_KICKED; /* a request to a former cur is void */
        snext->picks++;
        policy_vcpu_move(pol, snext->v, cpu);
    }
}

/*
 * Keep the elected vCPU if the ratelimit holds it (until exactly the end
 * of its minimum run); else requeue it and take the local head, or
 * stolen work. Non-idle picks get a full tslice.
 */
static void
credit_pick(struct policy *pol, unsigned int cpu, uint64_t now, struct policy_decision *out)
{
    struct credit_priv *p = credit_priv(pol);
    struct credit_pcpu *pc = &p->cpu[cpu];
    struct credit_vcpu *cur = pc->cur, *snext;
    bool keep = cur != NULL && credit_vcpu_can_run(cur);
    unsigned int target = cpu;

    credit_clock_start(pol, now);
    if (cur != NULL && (cur->flags & CREDIT_F_KICKED))
        target = credit_pick_leave(pol, cur, cpu);
    else if (keep && !(cur->flags & CREDIT_F_YIELD) && p->ratelimit_ns != 0 &&
             now - pc->cur_since < p->ratelimit_ns) {
        pc->ratelimited++;
        out->vcpu = cur->v;
        out->until = pc->cur_since + p->ratelimit_ns;
        return;
    }
    if (keep && target == cpu)
        credit_runq_insert(pc, cur);
    snext = credit_runq_next(pol, cpu, now);
    if (keep && target != cpu)
        credit_pick_migrate(pol, cur, target);
    credit_pick_commit(pol, cpu, snext, now);
    out->vcpu = snext != NULL ? snext->v : NULL;
    out->until = snext != NULL ? now + p->tslice_ns : POLICY_NEVER;
}

/* --- Charging -------------------------------------------------------- */

/*
 * burn_credits on measured time: 10 credits per ms, the remainder kept in
 * `residual` (units of ns x 10), so nothing is lost between charges. Then
 * the measured sighting (see the header): past one tick period of CPU
 * unseen by a tick, do what a tick finding it running would do.
 */
static void
credit_charge(struct policy *pol, struct policy_vcpu *v, uint64_t ran_ns, uint64_t now)
{
    struct credit_priv *p = credit_priv(pol);
    struct credit_vcpu *cv = credit_vcpu(v);
    uint64_t val = ran_ns * CREDIT_PER_MSEC + cv->residual;

    (void)now;
    cv->credit -= (int64_t)(val / NSEC_PER_MSEC);
    cv->residual = val % NSEC_PER_MSEC;
    cv->run_ns += ran_ns;
    cv->unseen_ns += ran_ns;
    if (cv->unseen_ns > p->tick_ns) {
        cv->sightings++;
        credit_vcpu_seen(pol, cv);
    }
}

/* --- Membership ------------------------------------------------------ */

static int
credit_check_cap(const struct policy_dom *d, int64_t cap, char *err)
{
    if (cap > (int64_t)CREDIT_CAP_PER_VCPU * d->nr_vcpus) {
        snprintf(err, POLICY_ERRLEN, "cap: %lld is above 100 x %u vCPUs of domain %s",
                 (long long)cap, d->nr_vcpus, d->name);
        return -EINVAL;
    }
    return 0;
}

static int
credit_dom_add(struct policy *pol, struct policy_dom *d, const struct policy_values *dv, char *err)
{
    struct credit_dom *cd = credit_dom(d);

    (void)pol;
    if (credit_check_cap(d, dv->i[CREDIT_D_CAP], err) < 0)
        return -EINVAL;
    cd->d = d;
    cd->weight = (unsigned int)dv->i[CREDIT_D_WEIGHT];
    cd->cap = (unsigned int)dv->i[CREDIT_D_CAP];
    TAILQ_INIT(&cd->active);
    return 0;
}

static void
credit_dom_remove(struct policy *pol, struct policy_dom *d)
{
    struct credit_dom *cd = credit_dom(d);

    if (cd->on_active_list) {
        TAILQ_REMOVE(&credit_priv(pol)->active_doms, cd, active_link);
        cd->on_active_list = false;
    }
}

/* The vCPU before v in its domain (vCPU i-1 at creation; a hot-plugged one comes last), or NULL. */
static const struct policy_vcpu *
vcpu_prev(const struct policy_vcpu *v)
{
    for (unsigned int i = 1; i < v->dom->nr_vcpus; i++)
        if (v->dom->vcpus[i] == v)
            return v->dom->vcpus[i - 1];
    return NULL;
}

/*
 * csched_unit_insert: new vCPUs are UNDER with 0 credit and inactive,
 * placed by the CPU choice (which marks them MIGRATING: the first wake is
 * not boosted). Like Xen's domain builder, vCPU i > 0 starts its search
 * after vCPU i-1's CPU, so a domain's vCPUs spread over idle CPUs.
 */
static void
credit_vcpu_add(struct policy *pol, struct policy_vcpu *v, uint64_t now)
{
    struct credit_vcpu *cv = credit_vcpu(v);
    struct credit_priv *p = credit_priv(pol);
    const struct policy_vcpu *prev = vcpu_prev(v);
    struct cpuset allowed;

    cv->v = v;
    cv->dom = credit_dom(v->dom);
    cv->pri = CREDIT_PRI_UNDER;
    credit_clock_start(pol, now);
    cpuset_and2(&allowed, &v->affinity, &p->all);
    if (prev != NULL)
        policy_vcpu_move(pol, v, credit_mask_cycle(&allowed, prev->cpu));
    cv->flags |= CREDIT_F_MIGRATING;
    policy_vcpu_move(pol, v, credit_cpu_pick(pol, cv, true));
}

static void
credit_vcpu_remove(struct policy *pol, struct policy_vcpu *v, uint64_t now)
{
    struct credit_priv *p = credit_priv(pol);
    struct credit_vcpu *cv = credit_vcpu(v);

    (void)now;
    if (cv->flags & CREDIT_F_PARKED) {
        cv->flags &= ~CREDIT_F_PARKED;
        policy_vcpu_park(pol, v, false);
    }
    if (cv->queued)
        credit_runq_remove(&p->cpu[v->cpu], cv);
    if (cv->elected) {
        p->cpu[v->cpu].cur = NULL;
        cv->elected = false;
    }
    if (cv->active)
        credit_acct_stop(p, cv);
}

/* --- Parameters ------------------------------------------------------ */

static bool
credit_is_set(const struct policy_values *val, int i)
{
    return (val->set >> i) & 1;
}

/* Pool values, merged over the current ones, checked across fields. */
static int
credit_check_pool(const struct policy_values *val, int64_t tslice_ms, int64_t ratelimit_us,
                  char *err)
{
    if (credit_is_set(val, CREDIT_P_TSLICE_MS))
        tslice_ms = val->i[CREDIT_P_TSLICE_MS];
    if (credit_is_set(val, CREDIT_P_RATELIMIT_US))
        ratelimit_us = val->i[CREDIT_P_RATELIMIT_US];
    if (ratelimit_us != 0 && ratelimit_us < CREDIT_RATELIMIT_MIN_US) {
        snprintf(err, POLICY_ERRLEN, "ratelimit_us: %lld is too short: use 0 (off) or %d..%d",
                 (long long)ratelimit_us, CREDIT_RATELIMIT_MIN_US, CREDIT_RATELIMIT_MAX_US);
        return -EINVAL;
    }
    if (ratelimit_us > tslice_ms * 1000) {
        snprintf(err, POLICY_ERRLEN, "ratelimit_us: %lld is longer than tslice_ms %lld",
                 (long long)ratelimit_us, (long long)tslice_ms);
        return -EINVAL;
    }
    return 0;
}

/* __csched_set_tslice: the tick is a third of it (all of it under 3 ms). */
static void
credit_set_tslice(struct credit_priv *p, unsigned int tslice_ms)
{
    unsigned int ticks = tslice_ms < CREDIT_TICKS_PER_TSLICE ? 1 : CREDIT_TICKS_PER_TSLICE;

    p->tslice_ms = tslice_ms;
    p->tslice_ns = (uint64_t)tslice_ms * NSEC_PER_MSEC;
    p->tick_ns = (uint64_t)(tslice_ms * 1000 / ticks) * NSEC_PER_USEC;
    p->credits_per_tslice = CREDIT_PER_MSEC * (int64_t)tslice_ms;
    p->credit = p->credits_per_tslice * p->nr_cpus;
}

static void
credit_apply_pool(struct credit_priv *p, const struct policy_values *val)
{
    if (credit_is_set(val, CREDIT_P_TSLICE_MS))
        credit_set_tslice(p, (unsigned int)val->i[CREDIT_P_TSLICE_MS]);
    if (credit_is_set(val, CREDIT_P_RATELIMIT_US))
        p->ratelimit_ns = (uint64_t)val->i[CREDIT_P_RATELIMIT_US] * NSEC_PER_USEC;
    if (credit_is_set(val, CREDIT_P_BOOST))
        p->boost = val->i[CREDIT_P_BOOST] != 0;
    if (credit_is_set(val, CREDIT_P_BALANCE_US))
        p->balance_ratelimit_ns = (uint64_t)val->i[CREDIT_P_BALANCE_US] * NSEC_PER_USEC;
}

/* csched_dom_cntl: a new weight changes the pool's total for active vCPUs. */
static int
credit_set_dom(struct policy *pol, struct policy_dom *d, const struct policy_values *val, char *err)
{
    struct credit_priv *p = credit_priv(pol);
    struct credit_dom *cd = credit_dom(d);

    if (credit_is_set(val, CREDIT_D_CAP) && credit_check_cap(d, val->i[CREDIT_D_CAP], err) < 0)
        return -EINVAL;
    if (credit_is_set(val, CREDIT_D_WEIGHT)) {
        unsigned int w = (unsigned int)val->i[CREDIT_D_WEIGHT];

        p->weight -= (uint64_t)cd->weight * cd->active_count;
        p->weight += (uint64_t)w * cd->active_count;
        cd->weight = w;
    }
    if (credit_is_set(val, CREDIT_D_CAP))
        cd->cap = (unsigned int)val->i[CREDIT_D_CAP];
    return 0;
}

static int
credit_set_params(struct policy *pol, struct policy_dom *d, const struct policy_values *val,
                  uint64_t now, char *err)
{
    struct credit_priv *p = credit_priv(pol);

    (void)now;
    if (d != NULL)
        return credit_set_dom(pol, d, val, err);
    if (credit_check_pool(val, p->tslice_ms, (int64_t)(p->ratelimit_ns / NSEC_PER_USEC), err) < 0)
        return -EINVAL;
    credit_apply_pool(p, val);
    return 0;
}

static void
credit_get_params(struct policy *pol, struct policy_dom *d, struct policy_sink *sk)
{
    struct credit_priv *p = credit_priv(pol);

    if (d != NULL) {
        sk->put_int(sk, "weight", credit_dom(d)->weight);
        sk->put_int(sk, "cap", credit_dom(d)->cap);
        return;
    }
    sk->put_int(sk, "tslice_ms", p->tslice_ms);
    sk->put_int(sk, "ratelimit_us", (int64_t)(p->ratelimit_ns / NSEC_PER_USEC));
    sk->put_int(sk, "boost", p->boost);
    sk->put_int(sk, "balance_ratelimit_us", (int64_t)(p->balance_ratelimit_ns / NSEC_PER_USEC));
}

static const char *
credit_pri_name(int pri)
{
    switch (pri) {
    case CREDIT_PRI_BOOST:
        return "BOOST";
    case CREDIT_PRI_UNDER:
        return "UNDER";
    case CREDIT_PRI_OVER:
        return "OVER";
    default:
        return "IDLE";
    }
}

static void
credit_vcpu_stats(struct policy *pol, struct policy_vcpu *v, struct policy_sink *sk)
{
    struct credit_vcpu *cv = credit_vcpu(v);

    (void)pol;
    sk->put_int(sk, "credit", cv->credit);
    sk->put_str(sk, "pri", credit_pri_name(cv->pri));
    sk->put_int(sk, "active", cv->active);
    sk->put_int(sk, "parked", (cv->flags & CREDIT_F_PARKED) != 0);
    sk->put_int(sk, "cpu", v->cpu);
    sk->put_int(sk, "boosts", (int64_t)cv->boosts);
    sk->put_int(sk, "parks", (int64_t)cv->parks);
    sk->put_int(sk, "steals", (int64_t)cv->steals);
    sk->put_int(sk, "yields", (int64_t)cv->yields);
    sk->put_int(sk, "migrations", (int64_t)cv->migrations);
    sk->put_int(sk, "ticks", (int64_t)cv->ticks);
    sk->put_int(sk, "sightings", (int64_t)cv->sightings);
    sk->put_int(sk, "activations", (int64_t)cv->activations);
    sk->put_int(sk, "clamps", (int64_t)cv->clamps);
    sk->put_int(sk, "run_ns", (int64_t)cv->run_ns);
}

/* --- Lifecycle ------------------------------------------------------- */

/* Topology masks: SMT siblings (same core and socket), socket, node. */
static void
credit_init_topology(struct policy *pol, struct credit_priv *p)
{
    for (unsigned int c = 0; c < pol->nr_cpus; c++) {
        const struct policy_cpu *a = &pol->cpus[c];
        struct credit_pcpu *pc = &p->cpu[c];
        unsigned int first_of_node = c;

        for (unsigned int o = 0; o < pol->nr_cpus; o++) {
            const struct policy_cpu *b = &pol->cpus[o];

            if (a->socket == b->socket) {
                cpuset_set(&pc->socket_mask, o);
                if (a->core == b->core)
                    cpuset_set(&pc->sibling_mask, o);
            }
            if (a->node == b->node && o < first_of_node)
                first_of_node = o;
        }
        if (first_of_node == c) {
            p->nodes[p->nr_nodes].first = c;
            p->nodes[p->nr_nodes].balance_bias = c;
            pc->node = p->nr_nodes++;
        } else {
            pc->node = p->cpu[first_of_node].node;
        }
        cpuset_set(&p->nodes[pc->node].mask, c);
    }
}

static int
credit_init(struct policy *pol, const struct policy_values *pv, char *err)
{
    struct policy_values all;
    struct credit_priv *p;

    if (credit_check_pool(pv, pv->i[CREDIT_P_TSLICE_MS], pv->i[CREDIT_P_RATELIMIT_US], err) < 0)
        return -EINVAL;
    p = calloc(1, sizeof(*p) + pol->nr_cpus * sizeof(p->cpu[0]));
    if (p == NULL || (p->nodes = calloc(pol->nr_cpus, sizeof(p->nodes[0]))) == NULL) {
        free(p);
        snprintf(err, POLICY_ERRLEN, "credit: out of memory");
        return -ENOMEM;
    }
    p->nr_cpus = pol->nr_cpus;
    cpuset_fill(&p->all, pol->nr_cpus);
    p->idlers = p->all; /* every CPU starts idle */
    p->acct_next = POLICY_NEVER;
    TAILQ_INIT(&p->active_doms);
    all = *pv;
    all.set = ~0U; /* apply defaults too */
    credit_apply_pool(p, &all);
    for (unsigned int c = 0; c < pol->nr_cpus; c++) {
        TAILQ_INIT(&p->cpu[c].runq);
        p->cpu[c].idle_bias = pol->nr_cpus - 1;
        p->cpu[c].next_tick = POLICY_NEVER;
    }
    credit_init_topology(pol, p);
    pol->priv = p;
    return 0;
}

static void
credit_fini(struct policy *pol)
{
    struct credit_priv *p = credit_priv(pol);

    free(p->nodes);
    free(pol->priv);
    pol->priv = NULL;
}

const struct policy_ops credit_ops = {
    .name = "credit",
    .summary = "Xen Credit (credit1): weights, caps, BOOST, 30 ms slices, work stealing",
    .pool_params = credit_pool_params,
    .dom_params = credit_dom_params,
    .dom_priv_size = sizeof(struct credit_dom),
    .vcpu_priv_size = sizeof(struct credit_vcpu),
    .init = credit_init,
    .fini = credit_fini,
    .dom_add = credit_dom_add,
    .dom_remove = credit_dom_remove,
    .vcpu_add = credit_vcpu_add,
    .vcpu_remove = credit_vcpu_remove,
    .wake = credit_wake,
    .sleep = credit_sleep,
    .yield = credit_yield,
    .charge = credit_charge,
    .pick = credit_pick,
    .timer = credit_timer,
    .set_params = credit_set_params,
    .get_params = credit_get_params,
    .vcpu_stats = credit_vcpu_stats,
};
