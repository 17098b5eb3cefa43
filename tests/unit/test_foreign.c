/* SPDX-License-Identifier: ISC */
/*
 * test_foreign.c - how often the daemon walks /proc for threads it does
 * not schedule on the pools' CPUs (core/sched_foreign.c): every 2 s while a
 * walk is cheap, so a busy thread is reported within 2 s; paced by its cost
 * where it is not (1 % of the control thread); never blind for more than a
 * minute.
 */
#include "core/sched_core.h"
#include "testutil.h"

START_TEST(cheap_walks_every_two_seconds)
{
    ck_assert_uint_eq(sched_foreign_gap_ms(0), 2000);
    ck_assert_uint_eq(sched_foreign_gap_ms(MS(3)), 2000); /* a small host: ~1 ms */
    ck_assert_uint_eq(sched_foreign_gap_ms(MS(20)), 2000);
}
END_TEST

START_TEST(dear_walks_paced_by_their_cost)
{
    ck_assert_uint_eq(sched_foreign_gap_ms(MS(21)), 2100);
    ck_assert_uint_eq(sched_foreign_gap_ms(MS(150)), 15000); /* tens of thousands of threads */
    ck_assert_uint_eq(sched_foreign_gap_ms(MS(150) + 999999), 15000);
}
END_TEST

START_TEST(never_blind_for_more_than_a_minute)
{
    ck_assert_uint_eq(sched_foreign_gap_ms(MS(600)), 60000);
    ck_assert_uint_eq(sched_foreign_gap_ms(MS(5000)), 60000);
    ck_assert_uint_eq(sched_foreign_gap_ms(UINT64_MAX), 60000);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("foreign");
    TCase *tc = tcase_create("foreign");

    tcase_add_test(tc, cheap_walks_every_two_seconds);
    tcase_add_test(tc, dear_walks_paced_by_their_cost);
    tcase_add_test(tc, never_blind_for_more_than_a_minute);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
