/* SPDX-License-Identifier: ISC */
/*
 * test_runacct.c - run time charged to a thread (core/runacct.c) on
 * replayed record sequences and a simulated clock: a thread is charged
 * what the kernel says it ran however late its records are applied while
 * other dispatchers charge its open run, and a running one is charged as
 * it goes.
 */
#include "core/runacct.h"
#include "testutil.h"

struct acct_sim {
    struct runacct a;
    uint64_t charged;   /* sum of what runacct returned */
    uint64_t overshoot; /* sum of *overshoot_ns */
};

static void
now_at(struct acct_sim *t, uint64_t now)
{
    t->charged += runacct_now(&t->a, now);
}

static void
stop(struct acct_sim *t, uint64_t ran_ns)
{
    uint64_t over = 0;

    t->charged += runacct_report(&t->a, ran_ns, true, &over);
    t->overshoot += over;
}

/*
 * A vCPU thread that runs 50 us and blocks 50 us (a TCG vCPU on the BQL),
 * 10000 times. Its records reach the core `lag_ns` after they happened,
 * and between its RUN and its STOP being applied another dispatcher
 * charges the open run up to its own now (what the rig's 3-CPU pool did
 * while one dispatcher drained the ring). Charged per interval, each
 * cycle cost the lag: 10000 x 5 ms = 50 s for 0.5 s of running.
 */
START_TEST(test_late_records_charge_what_ran)
{
    const uint64_t run = US(50), cycle = US(100), lag = MS(5);
    struct acct_sim t = {0};
    uint64_t ts = SEC(1);

    for (int k = 0; k < 10000; k++, ts += cycle) {
        runacct_run(&t.a, ts);      /* RUN at ts, applied at ts + lag */
        now_at(&t, ts + run + lag); /* a dispatcher's pass, STOP not applied yet */
        stop(&t, run);              /* STOP at ts + run, applied now */
    }
    ck_assert_uint_ge(t.charged, 10000 * run);
    ck_assert_uint_le(t.charged, 10000 * run + lag + run);
    ck_assert_uint_eq(t.a.kernel_ns, 10000 * run);
}
END_TEST

/*
 * A RUN applied after a pass charged past its stamp (another CPU's pass
 * ran between the kernel's switch and the drain): the overlap is charged
 * once.
 */
START_TEST(test_run_stamped_before_last_charge)
{
    struct acct_sim t = {0};

    runacct_run(&t.a, MS(0));
    now_at(&t, MS(10)); /* STOP at 5 and RUN at 6 still in the ring */
    ck_assert_uint_eq(t.charged, MS(10));
    stop(&t, MS(5));
    ck_assert_uint_eq(t.overshoot, MS(5));
    runacct_run(&t.a, MS(6));
    now_at(&t, MS(12));
    ck_assert_uint_eq(t.charged, MS(11)); /* 5 ran + 6 since the RUN at 6 */
    stop(&t, MS(7));                      /* ran 6..13 */
    ck_assert_uint_eq(t.charged, MS(12));
    ck_assert_uint_eq(t.a.charged_ns, t.a.kernel_ns);
}
END_TEST

/* A spinner charged by every pass: what elapsed, then exactly what it ran. */
START_TEST(test_running_thread_charged_as_it_goes)
{
    struct acct_sim t = {0};

    runacct_run(&t.a, MS(100));
    for (uint64_t now = MS(101); now <= MS(1100); now += MS(1)) {
        now_at(&t, now);
        ck_assert_uint_eq(t.charged, now - MS(100));
    }
    now_at(&t, MS(1100)); /* the same now twice: nothing more */
    ck_assert_uint_eq(t.charged, SEC(1));
    stop(&t, SEC(1) + MS(2)); /* it ran 2 ms after the last pass */
    ck_assert_uint_eq(t.charged, SEC(1) + MS(2));
    ck_assert_uint_eq(t.overshoot, 0);
}
END_TEST

/*
 * The kernel ran it less than the wall time of its open run (the host
 * took the CPU): the difference is owed back out of the next runs.
 */
START_TEST(test_unconfirmed_charge_is_owed_back)
{
    struct acct_sim t = {0};

    runacct_run(&t.a, 0);
    now_at(&t, MS(10));
    stop(&t, MS(2));
    ck_assert_uint_eq(t.charged, MS(10));
    ck_assert_uint_eq(t.overshoot, MS(8));
    runacct_run(&t.a, MS(20));
    now_at(&t, MS(25)); /* 2 + 5 < 10: still owed */
    stop(&t, MS(5));
    ck_assert_uint_eq(t.charged, MS(10));
    runacct_run(&t.a, MS(30));
    stop(&t, MS(5));
    ck_assert_uint_eq(t.charged, MS(12));
    ck_assert_uint_eq(t.overshoot, MS(8)); /* counted once */
}
END_TEST

/* A run no longer followed (records lost, resync) is not charged on. */
START_TEST(test_forgotten_run_stops_charging)
{
    struct acct_sim t = {0};

    runacct_run(&t.a, 0);
    now_at(&t, MS(5));
    runacct_forget(&t.a);
    now_at(&t, SEC(100));
    ck_assert_uint_eq(t.charged, MS(5));
    stop(&t, MS(20)); /* its STOP, when it comes, settles it */
    ck_assert_uint_eq(t.charged, MS(20));
    /* A RUN with the previous run still open: that run is dropped. */
    runacct_run(&t.a, SEC(1));
    runacct_run(&t.a, SEC(2));
    now_at(&t, SEC(2) + MS(1));
    ck_assert_uint_eq(t.charged, MS(21));
}
END_TEST

/* The /proc fallback: CHARGE records only, charged as they come. */
START_TEST(test_proc_charges)
{
    struct acct_sim t = {0};
    uint64_t over = 0;

    for (int k = 1; k <= 100; k++) {
        t.charged += runacct_report(&t.a, MS(3), false, &over);
        ck_assert_uint_eq(over, 0);
        ck_assert_uint_eq(t.charged, (uint64_t)k * MS(3));
    }
    now_at(&t, SEC(1000)); /* no open run */
    ck_assert_uint_eq(t.charged, MS(300));
}
END_TEST

static Suite *
runacct_suite(void)
{
    Suite *s = suite_create("runacct");
    TCase *tc = tcase_create("replay");

    tcase_add_test(tc, test_late_records_charge_what_ran);
    tcase_add_test(tc, test_run_stamped_before_last_charge);
    tcase_add_test(tc, test_running_thread_charged_as_it_goes);
    tcase_add_test(tc, test_unconfirmed_charge_is_owed_back);
    tcase_add_test(tc, test_forgotten_run_stops_charging);
    tcase_add_test(tc, test_proc_charges);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(runacct_suite());
}
