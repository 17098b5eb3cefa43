/* SPDX-License-Identifier: ISC */
/*
 * test_rr.c - the round-robin policy on the simulated clock.
 */
#include "testutil.h"

/* Three hogs, 1 ms slices: exact A-B-C rotation and exact thirds. */
START_TEST(test_rr_three_hogs_rotate)
{
    struct sim s;
    struct pool_dom *a, *b, *c;

    sim_start(&s, "rr", 1, "slice_us=1000");
    s.record = true;
    a = sim_add_ok(&s, "A", 1, sim_busy(), NULL);
    b = sim_add_ok(&s, "B", 1, sim_busy(), NULL);
    c = sim_add_ok(&s, "C", 1, sim_busy(), NULL);
    sim_run(&s, MS(3000));
    ck_assert_no_violations(&s);
    ck_assert_share(&s, a, 1.0 / 3, 0.001);
    ck_assert_share(&s, b, 1.0 / 3, 0.001);
    ck_assert_share(&s, c, 1.0 / 3, 0.001);
    /* The timeline is A,B,C,A,B,C... in 1 ms slots. */
    ck_assert_uint_ge(s.nr_seg, 30);
    for (size_t i = 0; i < 30; i++) {
        ck_assert_int_eq(s.timeline[i].vcpu, (int)(i % 3));
        ck_assert_uint_eq(s.timeline[i].end - s.timeline[i].start, MS(1));
    }
    sim_fini(&s);
}
END_TEST

/* Microsecond slices are honoured exactly. */
START_TEST(test_rr_microsecond_slices)
{
    struct sim s;
    struct pool_dom *a, *b;

    sim_start(&s, "rr", 1, "slice_us=5");
    a = sim_add_ok(&s, "A", 1, sim_busy(), NULL);
    b = sim_add_ok(&s, "B", 1, sim_busy(), NULL);
    sim_run(&s, MS(10));
    ck_assert_no_violations(&s);
    ck_assert_share(&s, a, 0.5, 0.001);
    ck_assert_share(&s, b, 0.5, 0.001);
    /* Events at the end instant are handled: the 1001st run starts at 10 ms. */
    ck_assert_uint_eq(sim_vcpu(a, 0)->runs, 1001);
    ck_assert_uint_eq(sim_mean(&sim_vcpu(a, 0)->lengths), US(5));
    sim_fini(&s);
}
END_TEST

/* A wake does not cut the running slice; an idle CPU runs the waker now. */
START_TEST(test_rr_wake_waits_for_slice)
{
    struct sim s;
    struct pool_dom *a, *w;
    struct sim_vcpu *wv;

    sim_start(&s, "rr", 1, "slice_us=10000");
    w = sim_add_ok(&s, "W", 1, sim_manual(), NULL);
    wv = sim_vcpu(w, 0);
    sim_wake(&s, wv);
    ck_assert_int_eq(wv->running_on, 0); /* idle CPU: runs at once */
    ck_assert_uint_eq(sim_max(&wv->lat), 0);
    sim_sleep(&s, wv);
    a = sim_add_ok(&s, "A", 1, sim_busy(), NULL);
    sim_run(&s, MS(3));
    sim_wake(&s, wv); /* A is 3 ms into a 10 ms slice */
    ck_assert_int_eq(wv->running_on, -1);
    sim_run(&s, MS(7));
    ck_assert_int_eq(wv->running_on, 0);
    ck_assert_uint_eq(sim_max(&wv->lat), MS(7));
    ck_assert_no_violations(&s);
    (void)a;
    sim_fini(&s);
}
END_TEST

/* Placement spreads vCPUs over CPUs; a CPU with one hog never switches. */
START_TEST(test_rr_placement)
{
    struct sim s;
    struct pool_dom *d;

    sim_start(&s, "rr", 2, NULL);
    d = sim_add_ok(&s, "D", 4, sim_busy(), NULL);
    sim_run(&s, MS(100));
    ck_assert_no_violations(&s);
    for (unsigned int i = 0; i < 4; i++) {
        double sh = sim_share(&s, sim_vcpu(d, i));

        ck_assert_msg(sh > 0.49 && sh < 0.51, "vcpu %u share %f", i, sh);
        ck_assert_uint_eq(d->vcpus[i]->pv->cpu, i % 2);
    }
    sim_fini(&s);
}
END_TEST

/* Removing the running vCPU re-picks its CPU at once. */
START_TEST(test_rr_remove_running)
{
    struct sim s;
    struct pool_dom *a, *b;

    sim_start(&s, "rr", 1, "slice_us=10000");
    a = sim_add_ok(&s, "A", 1, sim_busy(), NULL);
    b = sim_add_ok(&s, "B", 1, sim_busy(), NULL);
    sim_run(&s, MS(2));
    ck_assert_ptr_eq(s.cpu[0].running, sim_vcpu(a, 0));
    sim_dom_remove(&s, a);
    ck_assert_ptr_eq(s.cpu[0].running, sim_vcpu(b, 0));
    sim_reset_stats(&s);
    sim_run(&s, MS(50));
    ck_assert_share(&s, b, 1.0, 0.001);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* Live slice change, and refusal of bad values with no change. */
START_TEST(test_rr_params)
{
    struct sim s;
    char err[POLICY_ERRLEN];
    struct pool_dom *a;

    sim_start(&s, "rr", 1, "slice_us=1000");
    a = sim_add_ok(&s, "A", 1, sim_busy(), NULL);
    sim_add_ok(&s, "B", 1, sim_busy(), NULL);
    ck_assert_int_eq(sim_set(&s, NULL, "slice_us=0", err), -EINVAL);
    ck_assert_int_eq(sim_set(&s, NULL, "slice_us=abc", err), -EINVAL);
    ck_assert_int_eq(sim_set(&s, NULL, "weight=5", err), -EINVAL);
    ck_assert_int_eq(sim_set(&s, a, "weight=5", err), -EINVAL);
    sim_run(&s, MS(10));
    ck_assert_uint_eq(sim_vcpu(a, 0)->runs, 6); /* at 0, 2, 4, 6, 8 and 10 ms */
    ck_assert_int_eq(sim_set(&s, NULL, "slice_us=2000", err), 0);
    sim_reset_stats(&s);
    sim_run(&s, MS(20));
    ck_assert_uint_le(sim_vcpu(a, 0)->runs, 6);
    ck_assert_uint_ge(sim_vcpu(a, 0)->runs, 5);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

static Suite *
rr_suite(void)
{
    Suite *s = suite_create("rr");
    TCase *tc = tcase_create("sim");

    tcase_add_test(tc, test_rr_three_hogs_rotate);
    tcase_add_test(tc, test_rr_microsecond_slices);
    tcase_add_test(tc, test_rr_wake_waits_for_slice);
    tcase_add_test(tc, test_rr_placement);
    tcase_add_test(tc, test_rr_remove_running);
    tcase_add_test(tc, test_rr_params);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(rr_suite());
}
