/* SPDX-License-Identifier: ISC */
/*
 * test_wait.c - how long a vCPU waited while runnable (core/sched_wait.c)
 * on a simulated clock: the kernel's run_delay since attach plus the wait
 * under way, never going back; a reused thread id or a gone thread keeps
 * its last total; the recent part of each sample interval.
 */
#include "core/sched_priv.h"
#include "testutil.h"

/* A thread attached when the kernel's run_delay was 100 ms. */
static struct sched_thread
attached(void)
{
    return (struct sched_thread){.wait_base_ns = MS(100)};
}

START_TEST(kernel_delay_since_attach)
{
    struct sched_thread th = attached();

    ck_assert_uint_eq(sched_wait_total(&th, (int64_t)MS(100), MS(1000)), 0);
    ck_assert_uint_eq(sched_wait_total(&th, (int64_t)MS(350), MS(2000)), MS(250));
}
END_TEST

/* The kernel counts a wait when it ends: the one under way comes from the events. */
START_TEST(wait_under_way_counts)
{
    struct sched_thread th = attached();

    th.queued_ts = MS(1000); /* woken (or preempted) at 1 s, not running since */
    ck_assert_uint_eq(sched_wait_total(&th, (int64_t)MS(100), MS(1600)), MS(600));
    /* It ran at 1.8 s: the kernel's figure has it now, the event closed it. */
    th.queued_ts = 0;
    ck_assert_uint_eq(sched_wait_total(&th, (int64_t)MS(900), MS(2000)), MS(800));
}
END_TEST

/*
 * Read just after the kernel counted a wait but before its RUN record was
 * applied, the figure counts it twice for a moment; it never goes back.
 */
START_TEST(never_goes_back)
{
    struct sched_thread th = attached();

    th.queued_ts = MS(1000);
    ck_assert_uint_eq(sched_wait_total(&th, (int64_t)MS(600), MS(1500)), MS(1000));
    th.queued_ts = 0;
    ck_assert_uint_eq(sched_wait_total(&th, (int64_t)MS(600), MS(1600)), MS(1000));
    ck_assert_uint_eq(sched_wait_total(&th, (int64_t)MS(1200), MS(3000)), MS(1100));
}
END_TEST

/* Unread, a reused id (less than at attach) or gone: the last total stays. */
START_TEST(unreadable_reused_or_gone_keeps_the_total)
{
    struct sched_thread th = attached();

    ck_assert_uint_eq(sched_wait_total(&th, (int64_t)MS(400), MS(1000)), MS(300));
    ck_assert_uint_eq(sched_wait_total(&th, -1, MS(2000)), MS(300));
    ck_assert_uint_eq(sched_wait_total(&th, (int64_t)MS(5), MS(2000)), MS(300));
    th.gone = true;
    th.queued_ts = MS(1500);
    ck_assert_uint_eq(sched_wait_total(&th, (int64_t)MS(900), MS(3000)), MS(300));
}
END_TEST

/* wait_recent: the part of each sample interval spent waiting. */
START_TEST(recent_part_of_each_interval)
{
    struct sched_thread th = attached();

    sched_wait_sample(&th, (int64_t)MS(100), MS(1000));
    ck_assert_uint_eq(th.wait_recent_ppm, 0); /* no interval yet */
    sched_wait_sample(&th, (int64_t)MS(600), MS(2000));
    ck_assert_uint_eq(th.wait_recent_ppm, 500000);
    th.queued_ts = MS(2000); /* it never got to run since */
    sched_wait_sample(&th, (int64_t)MS(600), MS(3000));
    ck_assert_uint_eq(th.wait_recent_ppm, 1000000);
    th.queued_ts = 0;
    sched_wait_sample(&th, (int64_t)MS(1600), MS(4000)); /* the kernel's figure catches up */
    ck_assert_uint_eq(th.wait_recent_ppm, 0);
    ck_assert_uint_eq(th.wait_ns, MS(1500));
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("wait");
    TCase *tc = tcase_create("wait");

    tcase_add_test(tc, kernel_delay_since_attach);
    tcase_add_test(tc, wait_under_way_counts);
    tcase_add_test(tc, never_goes_back);
    tcase_add_test(tc, unreadable_reused_or_gone_keeps_the_total);
    tcase_add_test(tc, recent_part_of_each_interval);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
