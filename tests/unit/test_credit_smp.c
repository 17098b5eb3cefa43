/* SPDX-License-Identifier: ISC */
/*
 * test_credit_smp.c - the Credit policy on 2 and 4 simulated CPUs:
 * xen-sched.md section 6 behaviour 10 (work stealing and its ratelimit),
 * tickling of idle CPUs, no boost after a migration (behaviour 9),
 * SMT-aware placement, fairness across CPUs, and policy switches.
 */
#include "credit_testutil.h"

#define CPU0 (1ULL << 0)
#define CPU1 (1ULL << 1)
#define CPU2 (1ULL << 2)
#define CPU3 (1ULL << 3)

/*
 * Behaviour 10: an idle CPU steals a queued vCPU of any priority, OVER
 * included. W (weight 1) runs one slice on CPU 0 and is OVER after the
 * 60 ms pass, queued behind H0; when P1 leaves CPU 1 idle, CPU 1 takes W.
 */
START_TEST(test_credit_idle_cpu_steals_over)
{
    struct sim s;
    struct sim_vcpu *w, *p1, *h0;

    sim_start(&s, "credit", 2, NULL);
    h0 = sim_vcpu(sim_add_aff(&s, "H0", 1, sim_busy(), CPU0, NULL), 0);
    p1 = sim_vcpu(sim_add_aff(&s, "P1", 1, sim_manual(), CPU1, NULL), 0);
    sim_wake(&s, p1);
    w = sim_vcpu(sim_add_ok(&s, "W", 1, sim_manual(), "weight=1"), 0);
    ck_assert_uint_eq(vcpu_home(w), 0); /* no idle CPU: it stays where it starts */
    sim_until(&s, MS(1));
    sim_wake(&s, w); /* first wake: UNDER, queued behind H0 */
    ck_assert_int_eq(w->running_on, -1);
    sim_until(&s, TSLICE);
    ck_assert_int_eq(w->running_on, 0);
    sim_until(&s, 2 * TSLICE);
    ck_assert_str_eq(stat_pri(&s, w), "OVER");
    ck_assert_int_eq(h0->running_on, 0);
    ck_assert_int_eq(w->running_on, -1);
    sim_until(&s, 2 * TSLICE + MS(1));
    sim_sleep(&s, p1);
    ck_assert_int_eq(w->running_on, 1);
    ck_assert_uint_eq(vcpu_home(w), 1);
    ck_assert_int_eq(stat_int(&s, w, "steals"), 1);
    ck_assert_str_eq(stat_pri(&s, w), "OVER");
    ck_assert_int_eq(h0->running_on, 0); /* running vCPUs are not taken */
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * Behaviour 10: a CPU whose next local vCPU is OVER steals a queued UNDER
 * (or BOOST) vCPU; one whose next is UNDER never steals. X (cap 90, on
 * CPU 1 from 5 ms) is UNDER at its 35 ms slice end and OVER at 65 ms.
 * U waits on CPU 0 behind H0 (UNDER: its first wake at 31 ms, and with
 * boost off at 61 ms), or behind a running BOOST vCPU B (BOOST).
 */
START_TEST(test_credit_over_next_steals)
{
    bool boost = _i == 1;
    struct sim_vcpu *x, *u, *p1, *b = NULL;
    struct sim s;

    sim_start(&s, "credit", 2, boost ? NULL : "boost=off");
    sim_add_aff(&s, "H0", 1, sim_busy(), CPU0, NULL);
    x = sim_vcpu(sim_add_aff(&s, "X", 1, sim_manual(), CPU1, "cap=90"), 0);
    p1 = sim_vcpu(sim_add_aff(&s, "P1", 1, sim_manual(), CPU1, NULL), 0);
    sim_wake(&s, p1); /* CPU 1 busy: U is placed on CPU 0 */
    u = sim_vcpu(sim_add_ok(&s, "U", 1, sim_manual(), NULL), 0);
    if (boost) {
        b = sim_vcpu(sim_add_aff(&s, "B", 1, sim_manual(), CPU0, NULL), 0);
        sim_wake(&s, b); /* spend the first wakes (not boosted) */
        sim_sleep(&s, b);
    }
    ck_assert_uint_eq(vcpu_home(u), 0);
    sim_until(&s, MS(4));
    sim_sleep(&s, p1);
    sim_until(&s, MS(5));
    sim_wake(&s, x);
    /* UNDER next: U queued on CPU 0 at 31 ms is left alone at 35 ms. */
    sim_until(&s, MS(31));
    sim_wake(&s, u);
    sim_until(&s, MS(35));
    ck_assert_str_eq(stat_pri(&s, x), "UNDER");
    ck_assert_int_eq(x->running_on, 1);
    ck_assert_int_eq(u->running_on, -1);
    ck_assert_int_eq(stat_int(&s, u, "steals"), 0);
    sim_sleep(&s, u);
    /* OVER next at 65 ms: U, queued on CPU 0 at 61 ms, is stolen. */
    sim_until(&s, MS(61));
    if (boost)
        sim_wake(&s, b); /* BOOST, preempts H0 */
    sim_wake(&s, u);
    ck_assert_str_eq(stat_pri(&s, u), boost ? "BOOST" : "UNDER");
    ck_assert_int_eq(u->running_on, -1);
    sim_until(&s, MS(65));
    ck_assert_str_eq(stat_pri(&s, x), "OVER");
    ck_assert_int_eq(u->running_on, 1);
    ck_assert_int_eq(x->running_on, -1);
    ck_assert_int_eq(stat_int(&s, u, "steals"), 1);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * Behaviour 10: a running vCPU is never stolen, nor one its affinity
 * keeps away: CPU 0 runs A with B (pinned) queued, CPU 1 goes idle and
 * balances, and finds nothing to take.
 */
START_TEST(test_credit_running_not_stolen)
{
    struct sim_vcpu *a, *b, *p1;
    struct sim s;

    sim_start(&s, "credit", 2, NULL);
    a = sim_vcpu(sim_add_ok(&s, "A", 1, sim_busy(), NULL), 0);
    p1 = sim_vcpu(sim_add_aff(&s, "P1", 1, sim_manual(), CPU1, NULL), 0);
    b = sim_vcpu(sim_add_aff(&s, "B", 1, sim_manual(), CPU0, NULL), 0);
    sim_wake(&s, p1);
    sim_until(&s, MS(3));
    sim_wake(&s, b);
    ck_assert_int_eq(a->running_on, 0);
    ck_assert_int_eq(b->running_on, -1);
    sim_until(&s, MS(5));
    sim_sleep(&s, p1); /* CPU 1 balances: A runs, B may not move */
    ck_assert_int_eq(a->running_on, 0);
    ck_assert_uint_eq(vcpu_home(a), 0);
    ck_assert_int_eq(b->running_on, -1);
    ck_assert_ptr_null(s.cpu[1].running);
    ck_assert_int_eq(stat_int(&s, a, "steals"), 0);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * Behaviour 10: a yielded vCPU waiting in a queue is never stolen (Xen
 * >= 4.18). On CPU 0, R yields to Y and waits with the YIELD flag; CPU 1
 * goes idle and balances, and leaves R alone. Once R is dequeued the
 * flag is gone.
 */
START_TEST(test_credit_yielded_not_stolen)
{
    struct sim_vcpu *r, *y, *z;
    struct sim s;

    sim_start(&s, "credit", 2, NULL);
    r = sim_vcpu(sim_add_ok(&s, "R", 1, sim_manual(), NULL), 0);
    y = sim_vcpu(sim_add_ok(&s, "Y", 1, sim_manual(), NULL), 0);
    z = sim_vcpu(sim_add_aff(&s, "Z", 1, sim_manual(), CPU1, NULL), 0);
    ck_assert_uint_eq(vcpu_home(r), 0);
    ck_assert_uint_eq(vcpu_home(y), 0);
    sim_until(&s, MS(2));
    sim_wake(&s, r);
    sim_wake(&s, z); /* CPU 1 busy: Y's wake cannot go there */
    sim_wake(&s, y);
    ck_assert_int_eq(r->running_on, 0);
    ck_assert_int_eq(y->running_on, -1);
    sim_until(&s, MS(4));
    sim_yield(&s, r);
    ck_assert_int_eq(y->running_on, 0);
    ck_assert_int_eq(r->running_on, -1);
    sim_until(&s, MS(6));
    sim_sleep(&s, z); /* CPU 1 balances */
    ck_assert_ptr_null(s.cpu[1].running);
    ck_assert_int_eq(r->running_on, -1);
    ck_assert_uint_eq(vcpu_home(r), 0);
    ck_assert_int_eq(stat_int(&s, r, "steals"), 0);
    /* After it ran once, R is an ordinary vCPU again. */
    sim_sleep(&s, y);
    ck_assert_int_eq(r->running_on, 0);
    sim_until(&s, MS(8));
    sim_wake(&s, y); /* queued behind R on CPU 0, CPU 1 idle: stolen */
    ck_assert_int_eq(y->running_on, 1);
    ck_assert_int_eq(stat_int(&s, y, "steals"), 1);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * Behaviour 10: a peer with one runnable vCPU is skipped. W wakes on idle
 * CPU 1, which is tickled but picks only 50 us later (pick_delay); CPU 0
 * balances in between and does not take W from it.
 */
START_TEST(test_credit_single_runnable_peer_skipped)
{
    struct sim_vcpu *w, *a;
    struct sim s;

    sim_start(&s, "credit", 2, NULL);
    s.pick_delay_ns = US(50);
    a = sim_vcpu(sim_add_aff(&s, "A", 1, sim_manual(), CPU0, NULL), 0);
    sim_wake(&s, a);
    sim_until(&s, MS(1));
    w = sim_vcpu(sim_add_aff(&s, "W", 1, sim_manual(), CPU0 | CPU1, NULL), 0);
    ck_assert_int_eq(a->running_on, 0);
    ck_assert_uint_eq(vcpu_home(w), 1);
    sim_until(&s, MS(5));
    sim_wake(&s, w);
    sim_sleep(&s, a); /* CPU 0 picks (and balances) at 5.05 ms too */
    sim_until(&s, MS(5) + US(50));
    ck_assert_int_eq(w->running_on, 1);
    ck_assert_ptr_eq(s.pool.cpu[1].elected, w->pv);
    ck_assert_ptr_null(s.cpu[0].running);
    ck_assert_int_eq(stat_int(&s, w, "steals"), 0);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * Behaviour 10: a CPU balances at most once per balance_ratelimit_us
 * (1 ms, strictly more than 1 ms since the last attempt). CPU 1 balances
 * when P1 leaves it at 5 ms; W then wakes on CPU 0 behind H0 and CPU 1
 * is tickled: it steals W only if more than 1 ms has passed.
 */
static const struct {
    uint64_t wake_after;
    bool stolen;
} balance_cases[] = {
    {US(500), false},
    {MS(1), false},
    {MS(1) + 1, true},
    {US(1500), true},
};

START_TEST(test_credit_balance_ratelimit)
{
    struct sim_vcpu *w, *p1, *h0;
    struct sim s;

    sim_start(&s, "credit", 2, NULL);
    h0 = sim_vcpu(sim_add_aff(&s, "H0", 1, sim_busy(), CPU0, NULL), 0);
    p1 = sim_vcpu(sim_add_aff(&s, "P1", 1, sim_manual(), CPU1, NULL), 0);
    sim_wake(&s, p1);
    w = sim_vcpu(sim_add_ok(&s, "W", 1, sim_manual(), NULL), 0);
    ck_assert_uint_eq(vcpu_home(w), 0);
    sim_until(&s, MS(5));
    sim_sleep(&s, p1);
    sim_run(&s, balance_cases[_i].wake_after);
    sim_wake(&s, w);
    if (balance_cases[_i].stolen) {
        ck_assert_int_eq(w->running_on, 1);
        ck_assert_int_eq(stat_int(&s, w, "steals"), 1);
    } else {
        ck_assert_int_eq(w->running_on, -1);
        ck_assert_ptr_null(s.cpu[1].running); /* CPU 1 went back to idle */
        ck_assert_uint_eq(vcpu_home(w), 0);
        /* H0's slice ends at 30 ms: W (queued first, both UNDER) runs. */
        sim_until(&s, TSLICE - 1);
        ck_assert_int_eq(w->running_on, -1);
        sim_until(&s, TSLICE);
        ck_assert_int_eq(w->running_on, 0);
        ck_assert_int_eq(h0->running_on, -1);
    }
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* balance_ratelimit_us=0 lifts the limit. */
START_TEST(test_credit_balance_ratelimit_off)
{
    struct sim_vcpu *w, *p1;
    struct sim s;

    sim_start(&s, "credit", 2, "balance_ratelimit_us=0");
    sim_add_aff(&s, "H0", 1, sim_busy(), CPU0, NULL);
    p1 = sim_vcpu(sim_add_aff(&s, "P1", 1, sim_manual(), CPU1, NULL), 0);
    sim_wake(&s, p1);
    w = sim_vcpu(sim_add_ok(&s, "W", 1, sim_manual(), NULL), 0);
    sim_until(&s, MS(5));
    sim_sleep(&s, p1);
    sim_wake(&s, w);
    ck_assert_int_eq(w->running_on, 1);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * Tickling (__runq_tickle): a waker whose CPU is busy wakes an idle CPU
 * it may use, round-robin, which steals it; the running vCPU is left
 * alone. 4 CPUs: H0, H1 pinned on CPUs 0 and 1, W1 and W2 placed on CPU
 * 0 while every CPU was busy; CPUs 2 and 3 then go idle.
 */
START_TEST(test_credit_tickle_idle_first)
{
    struct sim_vcpu *h0, *w1, *w2, *p2, *p3;
    struct sim s;

    sim_start(&s, "credit", 4, NULL);
    h0 = sim_vcpu(sim_add_aff(&s, "H0", 1, sim_busy(), CPU0, NULL), 0);
    sim_add_aff(&s, "H1", 1, sim_busy(), CPU1, NULL);
    p2 = sim_vcpu(sim_add_aff(&s, "P2", 1, sim_manual(), CPU2, NULL), 0);
    p3 = sim_vcpu(sim_add_aff(&s, "P3", 1, sim_manual(), CPU3, NULL), 0);
    sim_wake(&s, p2);
    sim_wake(&s, p3);
    w1 = sim_vcpu(sim_add_ok(&s, "W1", 1, sim_manual(), NULL), 0);
    w2 = sim_vcpu(sim_add_ok(&s, "W2", 1, sim_manual(), NULL), 0);
    ck_assert_uint_eq(vcpu_home(w1), 0);
    ck_assert_uint_eq(vcpu_home(w2), 0);
    sim_until(&s, MS(2));
    sim_sleep(&s, p2);
    sim_sleep(&s, p3);
    sim_until(&s, MS(5));
    sim_wake(&s, w1);
    ck_assert_int_eq(w1->running_on, 2);
    sim_wake(&s, w2);
    ck_assert_int_eq(w2->running_on, 3);
    ck_assert_int_eq(h0->running_on, 0);
    ck_assert_uint_eq(sim_max(&w1->lat), 0);
    ck_assert_uint_eq(sim_max(&w2->lat), 0);
    ck_assert_int_eq(stat_int(&s, w1, "steals") + stat_int(&s, w2, "steals"), 2);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * Behaviour 9 (migration) and the kick: B, pinned to CPU 0, wakes BOOST
 * while A runs there and CPU 1 is idle. No idle CPU fits B, so B preempts
 * A, and A, which may use the idle CPU, is sent there: a migration, whose
 * wake is not boosted although A is UNDER.
 */
START_TEST(test_credit_kick_no_boost)
{
    struct sim_vcpu *a, *b;
    struct sim s;

    sim_start(&s, "credit", 2, NULL);
    a = sim_vcpu(sim_add_ok(&s, "A", 1, sim_busy(), NULL), 0);
    b = sim_vcpu(sim_add_aff(&s, "B", 1, sim_manual(), CPU0, NULL), 0);
    sim_wake(&s, b); /* first wake: UNDER, queued behind A */
    sim_sleep(&s, b);
    ck_assert_int_eq(a->running_on, 0);
    sim_until(&s, MS(15));
    sim_wake(&s, b);
    ck_assert_str_eq(stat_pri(&s, b), "BOOST");
    ck_assert_int_eq(b->running_on, 0);
    ck_assert_int_eq(a->running_on, 1);
    ck_assert_str_eq(stat_pri(&s, a), "UNDER");
    ck_assert_int_eq(stat_int(&s, a, "boosts"), 0);
    ck_assert_int_eq(stat_int(&s, a, "migrations"), 1);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * The tick moves a running vCPU to an idle CPU (csched_unit_acct): A runs
 * on CPU 0 with B (pinned) queued behind it and CPU 1 idle. The 20 ms
 * tick (A active since 10 ms) sends A to CPU 1, not boosted, and B runs.
 */
START_TEST(test_credit_tick_migration)
{
    struct sim_vcpu *a, *b;
    struct sim s;

    sim_start(&s, "credit", 2, NULL);
    a = sim_vcpu(sim_add_ok(&s, "A", 1, sim_busy(), NULL), 0);
    b = sim_vcpu(sim_add_aff(&s, "B", 1, sim_manual(), CPU0, NULL), 0);
    sim_until(&s, MS(15));
    sim_wake(&s, b); /* first wake: UNDER, no preemption, no idler fits */
    ck_assert_int_eq(b->running_on, -1);
    sim_until(&s, MS(20) - 1);
    ck_assert_int_eq(a->running_on, 0);
    sim_until(&s, MS(20));
    ck_assert_int_eq(a->running_on, 1);
    ck_assert_int_eq(b->running_on, 0);
    ck_assert_int_eq(stat_int(&s, a, "boosts"), 0);
    ck_assert_int_eq(stat_int(&s, a, "migrations"), 1);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * _csched_cpu_pick on SMT: 2 cores x 2 threads. A second hog goes to the
 * other core (CPU 2), not to A's sibling; the third to a free thread.
 */
START_TEST(test_credit_smt_placement)
{
    struct policy_cpu cpus[4];
    char err[POLICY_ERRLEN] = "";
    struct sim_vcpu *a, *b, *c;
    struct sim s;

    for (int i = 0; i < 4; i++)
        cpus[i] = (struct policy_cpu){.cpu = i, .core = i / 2, .socket = 0, .node = 0};
    ck_assert_int_eq(sim_init(&s, "credit", 4, cpus, NULL, err), 0);
    a = sim_vcpu(sim_add_ok(&s, "A", 1, sim_busy(), NULL), 0);
    b = sim_vcpu(sim_add_ok(&s, "B", 1, sim_busy(), NULL), 0);
    c = sim_vcpu(sim_add_ok(&s, "C", 1, sim_busy(), NULL), 0);
    ck_assert_int_eq(a->running_on, 0);
    ck_assert_int_eq(b->running_on, 2);
    ck_assert_int_eq(c->running_on == 1 || c->running_on == 3, 1);
    sim_run(&s, SEC(1));
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* A domain's vCPUs spread over idle CPUs when attached. */
START_TEST(test_credit_spread_on_attach)
{
    struct pool_dom *d;
    struct sim s;

    sim_start(&s, "credit", 4, NULL);
    d = sim_add_ok(&s, "D", 4, sim_busy(), NULL);
    for (unsigned int i = 0; i < 4; i++)
        ck_assert_int_eq(sim_vcpu(d, i)->running_on, (int)i);
    sim_reset_stats(&s);
    sim_run(&s, SEC(1));
    for (unsigned int i = 0; i < 4; i++)
        ck_assert_uint_eq(sim_vcpu(d, i)->migrations, 0);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * Fairness across CPUs comes from global credit plus stealing: hogs
 * more than CPUs still share evenly (approximately; Xen gives no exact
 * bound), and weights hold across CPUs.
 */
static const struct {
    unsigned int cpus, hogs;
    double tol;
} smp_fair_cases[] = {
    {2, 3, 0.02},
    {4, 5, 0.02},
    {4, 6, 0.02},
    {4, 8, 0.01},
};

START_TEST(test_credit_smp_fairness)
{
    unsigned int ncpu = smp_fair_cases[_i].cpus, n = smp_fair_cases[_i].hogs;
    double expect = (double)ncpu / n;
    struct pool_dom *d[8];
    struct sim s;

    sim_start(&s, "credit", ncpu, NULL);
    for (unsigned int i = 0; i < n; i++) {
        char name[8];

        snprintf(name, sizeof(name), "H%u", i);
        d[i] = sim_add_ok(&s, name, 1, sim_busy(), NULL);
    }
    sim_run(&s, SEC(1));
    sim_reset_stats(&s);
    sim_run(&s, SEC(5));
    for (unsigned int i = 0; i < n; i++)
        ck_assert_share(&s, d[i], expect, smp_fair_cases[_i].tol);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* Weights across 2 CPUs: 512 gets a whole CPU (its peak), 256s half each. */
START_TEST(test_credit_smp_weights)
{
    struct pool_dom *a, *b, *c;
    struct sim s;

    sim_start(&s, "credit", 2, NULL);
    a = sim_add_ok(&s, "A", 1, sim_busy(), "weight=512");
    b = sim_add_ok(&s, "B", 1, sim_busy(), NULL);
    c = sim_add_ok(&s, "C", 1, sim_busy(), NULL);
    sim_run(&s, SEC(1));
    sim_reset_stats(&s);
    sim_run(&s, SEC(5));
    ck_assert_share(&s, a, 1.0, 0.03);
    ck_assert_share(&s, b, 0.5, 0.03);
    ck_assert_share(&s, c, 0.5, 0.03);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * A mixed load with I/O vCPUs on 4 CPUs: no violations, and with more
 * hogs than CPUs no CPU time is lost.
 */
START_TEST(test_credit_smp_mixed)
{
    struct sim s;
    double total = 0;

    sim_start(&s, "credit", 4, NULL);
    sim_add_ok(&s, "H", 5, sim_busy(), NULL);
    sim_add_ok(&s, "C", 2, sim_busy(), "cap=50");
    sim_add_ok(&s, "IO", 4, sim_periodic(MS(7), US(300), MS(1)), NULL);
    sim_add_ok(&s, "D", 2, sim_duty(MS(4), MS(6)), "weight=512");
    sim_run(&s, SEC(1));
    sim_reset_stats(&s);
    sim_run(&s, SEC(3));
    for (unsigned int i = 0; i < s.nr_vcpus; i++)
        total += sim_share(&s, s.vcpus[i]);
    ck_assert_msg(total > 3.99, "CPU use %f of 4", total); /* hogs fill the CPUs */
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* Switching to and from credit keeps running and stays within the contract. */
START_TEST(test_credit_policy_switch)
{
    char err[POLICY_ERRLEN] = "";
    struct pool_dom *a, *b;
    struct sim s;

    sim_start(&s, "rr", 2, NULL);
    a = sim_add_ok(&s, "A", 2, sim_busy(), NULL);
    b = sim_add_ok(&s, "B", 1, sim_periodic(MS(10), MS(1), 0), NULL);
    sim_run(&s, MS(100));
    ck_assert_int_eq(sim_switch(&s, "credit", "tslice_ms=10", err), 0);
    ck_assert_int_eq(param_int(&s, a, "weight"), 256);
    sim_run(&s, MS(500));
    ck_assert_int_eq(sim_set(&s, a, "weight=512", err), 0);
    sim_reset_stats(&s);
    sim_run(&s, SEC(2));
    ck_assert_share(&s, b, 0.1, 0.005);
    ck_assert_int_eq(sim_switch(&s, "rr", NULL, err), 0);
    sim_run(&s, MS(100));
    ck_assert_int_eq(sim_switch(&s, "credit", NULL, err), 0);
    sim_run(&s, MS(100));
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* xorshift64: a deterministic stream for the event storm below. */
static uint64_t
storm_next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* One random event: wake, sleep, yield, or a parameter change. */
static void
storm_event(struct sim *s, struct pool_dom **d, unsigned int nd, uint64_t *rng)
{
    static const char *const pool_sets[] = {
        "ratelimit_us=0",
        "ratelimit_us=1000",
        "tslice_ms=10",
        "tslice_ms=30",
        "boost=off",
        "boost=on",
        "balance_ratelimit_us=0",
        "balance_ratelimit_us=1000",
    };
    struct pool_dom *dom = d[storm_next(rng) % nd];
    struct sim_vcpu *v = sim_vcpu(dom, (unsigned int)(storm_next(rng) % dom->nr_vcpus));
    char err[POLICY_ERRLEN], buf[48];

    switch (storm_next(rng) % 8) {
    case 0:
    case 1:
    case 2:
        sim_wake(s, v);
        break;
    case 3:
    case 4:
        sim_sleep(s, v);
        break;
    case 5:
        sim_yield(s, v);
        break;
    case 6:
        snprintf(buf, sizeof(buf), "weight=%u cap=%u", (unsigned int)(1 + storm_next(rng) % 1000),
                 (unsigned int)(storm_next(rng) % 3 == 0 ? 10 + storm_next(rng) % 90 : 0));
        ck_assert_int_eq(sim_set(s, dom, buf, err), 0);
        break;
    default:
        ck_assert_int_eq(sim_set(s, NULL, pool_sets[storm_next(rng) % 8], err), 0);
        break;
    }
}

/*
 * An event storm on 4 CPUs: manual vCPUs with random affinities, caps and
 * weights woken, blocked and yielding at random, parameters changed
 * live, a domain removed and re-added, with and without a tickle-to-pick
 * delay. Every decision must respect the contract.
 */
START_TEST(test_credit_event_storm)
{
    uint64_t rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(_i + 1);
    struct pool_dom *d[6];
    struct sim s;

    sim_start(&s, "credit", 4, NULL);
    s.pick_delay_ns = _i % 2 ? US(20) : 0;
    for (unsigned int i = 0; i < 6; i++) {
        char name[8];
        uint64_t aff = storm_next(&rng) % 16;

        snprintf(name, sizeof(name), "D%u", i);
        d[i] = sim_add_aff(&s, name, 1 + i % 3, i < 4 ? sim_manual() : sim_busy(), aff,
                           i == 1 ? "cap=50" : NULL);
    }
    for (unsigned int step = 0; step < 20000; step++) {
        sim_run(&s, US(1 + storm_next(&rng) % 400));
        storm_event(&s, d, 4, &rng);
        if (step == 10000) {
            char err[POLICY_ERRLEN];

            sim_dom_remove(&s, d[2]);
            d[2] = sim_dom_add(&s, "D2", 3, sim_manual(), CPU2 | CPU3, "weight=64", err);
            ck_assert_ptr_nonnull(d[2]);
        }
    }
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

static Suite *
credit_smp_suite(void)
{
    Suite *s = suite_create("credit_smp");
    TCase *tc = tcase_create("smp");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_credit_idle_cpu_steals_over);
    tcase_add_loop_test(tc, test_credit_over_next_steals, 0, 2);
    tcase_add_test(tc, test_credit_running_not_stolen);
    tcase_add_test(tc, test_credit_yielded_not_stolen);
    tcase_add_test(tc, test_credit_single_runnable_peer_skipped);
    tcase_add_loop_test(tc, test_credit_balance_ratelimit, 0,
                        sizeof(balance_cases) / sizeof(balance_cases[0]));
    tcase_add_test(tc, test_credit_balance_ratelimit_off);
    tcase_add_test(tc, test_credit_tickle_idle_first);
    tcase_add_test(tc, test_credit_kick_no_boost);
    tcase_add_test(tc, test_credit_tick_migration);
    tcase_add_test(tc, test_credit_smt_placement);
    tcase_add_test(tc, test_credit_spread_on_attach);
    tcase_add_loop_test(tc, test_credit_smp_fairness, 0,
                        sizeof(smp_fair_cases) / sizeof(smp_fair_cases[0]));
    tcase_add_test(tc, test_credit_smp_weights);
    tcase_add_test(tc, test_credit_smp_mixed);
    tcase_add_test(tc, test_credit_policy_switch);
    tcase_add_loop_test(tc, test_credit_event_storm, 0, 6);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(credit_smp_suite());
}
