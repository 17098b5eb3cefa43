/* SPDX-License-Identifier: ISC */
/*
 * test_credit2_cap.c - Credit2 caps on the simulated clock (xen-sched.md
 * behaviour 17): budget per 10 ms period, quotas, parking, refills that
 * never accumulate, overruns paid back, live cap changes, refusals.
 */
#include <string.h>

#include "stat_testutil.h"

static int64_t
dparam(struct sim *s, struct pool_dom *d, const char *key)
{
    return param(s, d, key).ival;
}

static bool
has_stat(struct sim *s, struct sim_vcpu *v, const char *key)
{
    return find_vstat(s, v, key).found;
}

static struct sim_vcpu *
v0(struct pool_dom *d)
{
    return sim_vcpu(d, 0);
}

static double
dom_share(const struct sim *s, struct pool_dom *d)
{
    double sum = 0;

    for (unsigned int i = 0; i < d->nr_vcpus; i++)
        sum += sim_share(s, sim_vcpu(d, i));
    return sum;
}

#define ck_assert_near(got, want, tol)                                                             \
    do {                                                                                           \
        double g_ = (double)(got), w_ = (double)(want), t_ = (double)(tol);                        \
        ck_assert_msg(g_ >= w_ - t_ && g_ <= w_ + t_, "%s = %.4f, want %.4f +- %.4f", #got, g_,    \
                      w_, t_);                                                                     \
    } while (0)

/*
 * A lone cap=50 hog on an idle CPU: runs 5 ms, parked 5 ms, every 10 ms
 * period; 50 %. The CPU idles meanwhile (the simulated kernel would run
 * the vCPU if it were merely deprioritised), so parking stops CPU use.
 */
START_TEST(test_credit2_cap_lone_50)
{
    struct sim s;
    struct pool_dom *a;
    struct sim_vcpu *v;

    sim_start(&s, "credit2", 1, NULL);
    s.record = true;
    a = sim_add_ok(&s, "A", 1, sim_busy(), "cap=50");
    v = v0(a);
    sim_run(&s, SEC(3));
    ck_assert_no_violations(&s);
    ck_assert_share(&s, a, 0.50, 0.01);
    ck_assert_uint_eq(v->parks, 300);
    ck_assert_uint_eq(sim_percentile(&v->lengths, 0), MS(5));
    ck_assert_uint_eq(sim_max(&v->lengths), MS(5));
    for (size_t i = 0; i < 20; i++) {
        ck_assert_int_eq(s.timeline[i].vcpu, i % 2 ? -1 : 0);
        ck_assert_uint_eq(s.timeline[i].start, MS(5) * i);
        ck_assert_uint_eq(s.timeline[i].end, MS(5) * (i + 1));
    }
    sim_fini(&s);
}
END_TEST

struct quota_case {
    unsigned int nr_vcpus;
    const char *params;
    int64_t quota;
    int64_t first; /* budget the first runner holds: quota, or all there is */
};

static const struct quota_case quota_cases[] = {
    {1, "cap=50", MS(5), MS(5)},
    {4, "cap=10", US(500), US(500)}, /* 250 us, raised to the 500 us floor */
    {3, "cap=1", US(500), US(100)},  /* the pool holds only 100 us */
    {4, "cap=200", MS(5), MS(5)},
    {2, "cap=150", US(7500), US(7500)},
    {8, "cap=100", US(1250), US(1250)},
};

/* quota = max(tot_budget / nr_vCPUs, 500 us); a grab takes one quota. */
START_TEST(test_credit2_cap_quota)
{
    const struct quota_case *c = &quota_cases[_i];
    struct sim s;
    struct pool_dom *d;

    sim_start(&s, "credit2", 1, NULL);
    d = sim_add_ok(&s, "D", c->nr_vcpus, sim_busy(), c->params);
    for (unsigned int i = 0; i < c->nr_vcpus; i++)
        ck_assert_int_eq(vstat(&s, sim_vcpu(d, i), "quota_ns"), c->quota);
    /* The vCPU running at t=0 holds one quota (or the pool's rest). */
    for (unsigned int i = 0; i < c->nr_vcpus; i++) {
        struct sim_vcpu *v = sim_vcpu(d, i);

        if (v->running_on >= 0)
            ck_assert_int_eq(vstat(&s, v, "budget_ns"), c->first);
    }
    sim_run(&s, SEC(1));
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * Refills never accumulate: an idle capped domain holds at most one
 * period's budget, and on waking runs one quota before it parks.
 */
START_TEST(test_credit2_cap_no_accumulation)
{
    struct sim s;
    struct pool_dom *a;
    struct sim_vcpu *v;

    sim_start(&s, "credit2", 1, NULL);
    a = sim_add_ok(&s, "A", 1, sim_manual(), "cap=50");
    v = v0(a);
    for (int i = 0; i < 100; i++) {
        sim_run(&s, US(1300));
        ck_assert_int_le(vstat(&s, v, "dom_budget_ns"), MS(5));
    }
    ck_assert_int_eq(vstat(&s, v, "dom_budget_ns"), MS(5));
    sim_set_demand(&s, v, sim_busy());
    sim_reset_stats(&s);
    sim_run(&s, MS(6));
    ck_assert_uint_eq(v->run_ns, MS(5));
    ck_assert_uint_eq(v->parks, 1);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * Overrun paid back: cap=5 gives 500 us per period but the ratelimit
 * makes every run 1 ms; the 500 us debt empties the next refill, so the
 * vCPU runs 1 ms in 20 ms: still 5 %.
 */
START_TEST(test_credit2_cap_overrun_paid_back)
{
    struct sim s;
    struct pool_dom *a;

    sim_start(&s, "credit2", 1, NULL);
    a = sim_add_ok(&s, "A", 1, sim_busy(), "cap=5");
    sim_run(&s, SEC(3));
    ck_assert_no_violations(&s);
    ck_assert_share(&s, a, 0.05, 0.002);
    ck_assert_uint_eq(sim_percentile(&v0(a)->lengths, 0), MS(1));
    ck_assert_uint_eq(sim_max(&v0(a)->lengths), MS(1));
    ck_assert_uint_eq(v0(a)->runs, 151); /* at 0, 20, ..., 3000 ms */
    sim_fini(&s);
}
END_TEST

/* Cap 25 next to an uncapped hog: 25 % / 75 %. */
START_TEST(test_credit2_cap_next_to_hog)
{
    struct sim s;
    struct pool_dom *a, *b;

    sim_start(&s, "credit2", 1, NULL);
    a = sim_add_ok(&s, "A", 1, sim_busy(), "cap=25");
    b = sim_add_ok(&s, "B", 1, sim_busy(), NULL);
    sim_run(&s, SEC(3));
    ck_assert_no_violations(&s);
    ck_assert_share(&s, a, 0.25, 0.01);
    ck_assert_share(&s, b, 0.75, 0.01);
    sim_fini(&s);
}
END_TEST

/* Caps are per domain: 150 % over 2 vCPUs on 2 CPUs is 1.5 CPUs. */
START_TEST(test_credit2_cap_multi_vcpu)
{
    struct sim s;
    struct pool_dom *a;

    sim_start(&s, "credit2", 2, NULL);
    a = sim_add_ok(&s, "A", 2, sim_busy(), "cap=150");
    sim_run(&s, MS(100));
    sim_reset_stats(&s);
    sim_run(&s, SEC(3));
    ck_assert_no_violations(&s);
    ck_assert_near(dom_share(&s, a), 1.5, 0.03);
    sim_fini(&s);
}
END_TEST

/* A cap set on a running hog takes effect; removing it frees the vCPU. */
START_TEST(test_credit2_cap_live)
{
    char err[POLICY_ERRLEN] = "";
    struct sim s;
    struct pool_dom *a;

    sim_start(&s, "credit2", 1, NULL);
    a = sim_add_ok(&s, "A", 1, sim_busy(), NULL);
    ck_assert(!has_stat(&s, v0(a), "budget_ns"));
    sim_run(&s, US(3500));
    ck_assert_int_eq(sim_set(&s, a, "cap=30", err), 0);
    /* Charged up to now: none of the past run is taken as budget. */
    ck_assert_int_eq(vstat(&s, v0(a), "budget_ns"), US(3000));
    ck_assert_int_eq(vstat(&s, v0(a), "dom_budget_ns"), 0);
    sim_reset_stats(&s);
    sim_run(&s, SEC(2));
    ck_assert_share(&s, a, 0.30, 0.01);
    ck_assert_int_eq(sim_set(&s, a, "cap=60", err), 0);
    sim_reset_stats(&s);
    sim_run(&s, SEC(2));
    ck_assert_share(&s, a, 0.60, 0.01);
    ck_assert_int_eq(sim_set(&s, a, "cap=0", err), 0);
    ck_assert(!v0(a)->pv->pv->parked);
    ck_assert(!has_stat(&s, v0(a), "budget_ns"));
    sim_reset_stats(&s);
    sim_run(&s, SEC(1));
    ck_assert_share(&s, a, 1.0, 0.001);
    ck_assert_uint_eq(v0(a)->parks, 0);
    ck_assert_uint_eq(s.pool.pol.timer, POLICY_NEVER);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* cap > 100 x vCPUs is refused, at attach and later; nothing changes. */
START_TEST(test_credit2_cap_refused)
{
    char err[POLICY_ERRLEN] = "";
    struct sim s;
    struct pool_dom *a;

    sim_start(&s, "credit2", 1, NULL);
    ck_assert_ptr_null(sim_dom_add(&s, "X", 1, sim_busy(), 0, "cap=101", err));
    ck_assert_msg(strstr(err, "cap") != NULL, "%s", err);
    ck_assert_ptr_null(pool_dom_find(&s.pool, "X"));
    a = sim_add_ok(&s, "A", 2, sim_busy(), "cap=200");
    ck_assert_int_eq(sim_set(&s, a, "cap=201", err), -EINVAL);
    ck_assert_int_eq(dparam(&s, a, "cap"), 200);
    ck_assert_int_eq(sim_set(&s, a, "cap=100", err), 0);
    ck_assert_int_eq(dparam(&s, a, "cap"), 100);
    sim_run(&s, SEC(1));
    ck_assert_near(dom_share(&s, a), 1.0, 0.01);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* A capped sleeper that wakes while parked waits for the refill. */
START_TEST(test_credit2_cap_wake_while_parked)
{
    struct sim s;
    struct pool_dom *a;
    struct sim_vcpu *v;

    sim_start(&s, "credit2", 1, NULL);
    a = sim_add_ok(&s, "A", 1, sim_duty(US(4000), US(500)), "cap=30");
    v = v0(a);
    sim_run(&s, SEC(2));
    ck_assert_share(&s, a, 0.30, 0.01);
    ck_assert_uint_gt(v->parks, 100);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * Budget returned by a vCPU that blocks can unpark a sibling that wants
 * the CPU just left idle: it runs there at once (Xen's IPI to itself).
 * D's 3 vCPUs share 1 ms per period, quota 500 us: A on CPU 0 and C on
 * CPU 1 hold the budget, B (on CPU 1) parks at CPU 0's next pick.
 */
START_TEST(test_credit2_cap_unpark_on_idle_cpu)
{
    struct sim_vcpu *a, *b, *c;
    struct pool_dom *d;
    struct sim s;

    sim_start(&s, "credit2", 2, NULL);
    d = sim_add_ok(&s, "D", 3, sim_manual(), "cap=10");
    c = sim_vcpu(d, 0);
    a = sim_vcpu(d, 1);
    b = sim_vcpu(d, 2);
    ck_assert_uint_eq(a->pv->pv->cpu, 0);
    ck_assert_uint_eq(b->pv->pv->cpu, 1);
    sim_wake(&s, a);
    sim_wake(&s, c);
    ck_assert_int_eq(a->running_on, 0);
    ck_assert_int_eq(c->running_on, 1);
    ck_assert_int_eq(vstat(&s, a, "dom_budget_ns"), 0);
    sim_run(&s, US(100));
    sim_wake(&s, b); /* no budget left, and no CPU to preempt yet */
    sim_run(&s, US(100));
    sim_sleep(&s, a); /* 300 us go back: B gets them on CPU 0 */
    ck_assert_int_eq(b->running_on, 0);
    ck_assert_int_eq(vstat(&s, b, "budget_ns"), US(300));
    ck_assert_int_eq(vstat(&s, b, "parks"), 1);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

static Suite *
credit2_cap_suite(void)
{
    Suite *s = suite_create("credit2_cap");
    TCase *tc = tcase_create("cap");

    tcase_set_timeout(tc, 120); /* long simulations under ASan on a busy machine */
    tcase_add_test(tc, test_credit2_cap_lone_50);
    tcase_add_loop_test(tc, test_credit2_cap_quota, 0,
                        sizeof(quota_cases) / sizeof(quota_cases[0]));
    tcase_add_test(tc, test_credit2_cap_no_accumulation);
    tcase_add_test(tc, test_credit2_cap_overrun_paid_back);
    tcase_add_test(tc, test_credit2_cap_next_to_hog);
    tcase_add_test(tc, test_credit2_cap_multi_vcpu);
    tcase_add_test(tc, test_credit2_cap_live);
    tcase_add_test(tc, test_credit2_cap_refused);
    tcase_add_test(tc, test_credit2_cap_wake_while_parked);
    tcase_add_test(tc, test_credit2_cap_unpark_on_idle_cpu);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(credit2_cap_suite());
}
