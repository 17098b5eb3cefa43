/* SPDX-License-Identifier: ISC */
/*
 * test_table.c - the table-driven policy on the simulated clock.
 */
#include "testutil.h"

static int
seg_owner(const struct sim *s, size_t i)
{
    return s->timeline[i].vcpu;
}

/* A,B,A,C with 50 us slots: that exact sequence, A 50 %, B and C 25 %. */
START_TEST(test_table_abac_sequence)
{
    struct sim s;
    struct pool_dom *a, *b, *c;

    sim_start(&s, "table", 1, "table=A,B,A,C slot_us=50");
    s.record = true;
    a = sim_add_ok(&s, "A", 1, sim_busy(), NULL);
    b = sim_add_ok(&s, "B", 1, sim_busy(), NULL);
    c = sim_add_ok(&s, "C", 1, sim_busy(), NULL);
    sim_run(&s, MS(1000));
    ck_assert_no_violations(&s);
    ck_assert_share(&s, a, 0.50, 0.001);
    ck_assert_share(&s, b, 0.25, 0.001);
    ck_assert_share(&s, c, 0.25, 0.001);
    /* vcpus[] order is A=0, B=1, C=2; every segment is one 50 us slot. */
    for (size_t i = 0; i < 40; i++) {
        static const int want[] = {0, 1, 0, 2};

        ck_assert_int_eq(seg_owner(&s, i), want[i % 4]);
        ck_assert_uint_eq(s.timeline[i].end - s.timeline[i].start, US(50));
    }
    sim_fini(&s);
}
END_TEST

/* A,A,B,C: A still 50 %, but in runs of two slots. */
START_TEST(test_table_aabc_share)
{
    struct sim s;
    struct pool_dom *a;

    sim_start(&s, "table", 1, "table=A,A,B,C slot_us=50");
    a = sim_add_ok(&s, "A", 1, sim_busy(), NULL);
    sim_add_ok(&s, "B", 1, sim_busy(), NULL);
    sim_add_ok(&s, "C", 1, sim_busy(), NULL);
    sim_run(&s, MS(1000));
    ck_assert_no_violations(&s);
    ck_assert_share(&s, a, 0.50, 0.001);
    ck_assert_uint_eq(sim_mean(&sim_vcpu(a, 0)->lengths), US(100));
    sim_fini(&s);
}
END_TEST

/*
 * The paper's point (3.3): a server A that needs the CPU at random times
 * waits at most one slot with A-B-A-C and up to two with A-A-B-C.
 */
static uint64_t
worst_wait(const char *table)
{
    char params[64];
    struct sim s;
    struct pool_dom *a;
    uint64_t worst;

    snprintf(params, sizeof(params), "table=%s slot_us=50", table);
    sim_start(&s, "table", 1, params);
    /* Wakes every 37 us (coprime with the 200 us table), 5 us of work. */
    a = sim_add_ok(&s, "A", 1, sim_periodic(US(37), US(5), 0), NULL);
    sim_add_ok(&s, "B", 1, sim_busy(), NULL);
    sim_add_ok(&s, "C", 1, sim_busy(), NULL);
    sim_run(&s, MS(500));
    ck_assert_no_violations(&s);
    worst = sim_max(&sim_vcpu(a, 0)->lat);
    sim_fini(&s);
    return worst;
}

START_TEST(test_table_abac_beats_aabc_latency)
{
    uint64_t abac = worst_wait("A,B,A,C");
    uint64_t aabc = worst_wait("A,A,B,C");

    ck_assert_uint_le(abac, US(50));
    ck_assert_uint_gt(aabc, US(50));
    ck_assert_uint_le(aabc, US(100));
}
END_TEST

/* Entries name one vCPU with "dom/N"; absent owners leave the slot idle. */
START_TEST(test_table_vcpu_entries_and_absent)
{
    struct sim s;
    struct pool_dom *d;

    sim_start(&s, "table", 1, "table=D/1,X,D/0 slot_us=100");
    d = sim_add_ok(&s, "D", 2, sim_busy(), NULL);
    sim_run(&s, MS(300));
    ck_assert_no_violations(&s);
    /* X is not attached: its slot goes to the lowest-id runnable thread,
     * D/0 (work-conserving LOW level), so D/0 gets 2/3 and D/1 1/3. */
    ck_assert_msg(sim_share(&s, sim_vcpu(d, 1)) > 0.333 && sim_share(&s, sim_vcpu(d, 1)) < 0.334,
                  "D/1 %f", sim_share(&s, sim_vcpu(d, 1)));
    ck_assert_msg(sim_share(&s, sim_vcpu(d, 0)) > 0.666 && sim_share(&s, sim_vcpu(d, 0)) < 0.667,
                  "D/0 %f", sim_share(&s, sim_vcpu(d, 0)));
    sim_fini(&s);
}
END_TEST

/* Bad specs are refused and change nothing; a good one applies live. */
START_TEST(test_table_params)
{
    static const char *const bad[] = {
        "table=A,,B", "table=", "table=A/x", "table=/1", "table=A/99999", "slot_us=0",
    };
    char err[POLICY_ERRLEN];
    struct sim s;
    struct pool_dom *a, *b;

    ck_assert_int_eq(sim_init(&s, "table", 1, NULL, "slot_us=50", err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "required"));
    sim_start(&s, "table", 1, "table=A,B slot_us=100");
    a = sim_add_ok(&s, "A", 1, sim_busy(), NULL);
    b = sim_add_ok(&s, "B", 1, sim_busy(), NULL);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(sim_set(&s, NULL, bad[i], err) == -EINVAL, "accepted %s", bad[i]);
    sim_run(&s, MS(100));
    ck_assert_share(&s, a, 0.5, 0.001);
    ck_assert_int_eq(sim_set(&s, NULL, "table=A,A,A,B", err), 0);
    sim_reset_stats(&s);
    sim_run(&s, MS(100));
    ck_assert_share(&s, a, 0.75, 0.001);
    ck_assert_share(&s, b, 0.25, 0.001);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

static Suite *
table_suite(void)
{
    Suite *s = suite_create("table");
    TCase *tc = tcase_create("sim");

    tcase_add_test(tc, test_table_abac_sequence);
    tcase_add_test(tc, test_table_aabc_share);
    tcase_add_test(tc, test_table_abac_beats_aabc_latency);
    tcase_add_test(tc, test_table_vcpu_entries_and_absent);
    tcase_add_test(tc, test_table_params);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(table_suite());
}
