/* SPDX-License-Identifier: ISC */
/*
 * test_bigpool.c - pools beyond a 64-bit word: 256 CPUs in 2 sockets (two
 * NUMA nodes) of 64 two-thread cores, under every policy, on the
 * simulator. Demand beyond the CPUs keeps every CPU busy with no contract
 * violation; the policies that balance (Credit's stealing, Credit2's
 * runqueues, the table's turns) give every vCPU its share; rr places once
 * and never balances, so it only promises that nobody starves. vCPUs
 * pinned to CPUs 130 and 200 run there and nowhere else (and, but for the
 * table, which runs only what it lists, they do run).
 */
#include <stdio.h>
#include <string.h>

#include "testutil.h"

#define BIG_CPUS  256
#define BIG_VCPUS 320 /* 1.25 per CPU */

static const struct big_case {
    const char *policy;
    const char *params;
    uint64_t run_ns;
    double share_tol; /* around BIG_CPUS / BIG_VCPUS; 0: only "nobody starves" */
    bool pins_run;    /* the pinned domains get CPU (the table runs only what it lists) */
} cases[] = {
    {"credit", NULL, SEC(3), 0.05, true},
    {"credit2", NULL, SEC(2), 0.05, true},
    {"table", "table=big slot_us=1000", SEC(1), 0.05, false},
    {"rr", NULL, SEC(1), 0, true},
};

/* 2 sockets = 2 nodes, 64 cores each, 2 SMT threads per core. */
static void
big_topology(struct policy_cpu *cpus)
{
    for (unsigned int c = 0; c < BIG_CPUS; c++)
        cpus[c] = (struct policy_cpu){.cpu = (int)c,
                                      .socket = (int)(c / 128),
                                      .node = (int)(c / 128),
                                      .core = (int)((c % 128) / 2)};
}

START_TEST(test_256_cpus)
{
    const struct big_case *bc = &cases[_i];
    static struct policy_cpu cpus[BIG_CPUS];
    static struct sim s;
    struct pool_dom *big, *p130, *p200;
    struct cpuset only;
    char err[POLICY_ERRLEN] = "";
    double total = 0, min = 1, max = 0;

    big_topology(cpus);
    ck_assert_msg(sim_init(&s, bc->policy, BIG_CPUS, cpus, bc->params, err) == 0, "%s: %s",
                  bc->policy, err);
    big = sim_add_ok(&s, "big", BIG_VCPUS, sim_busy(), NULL);
    cpuset_zero(&only);
    cpuset_set(&only, 130);
    p130 = sim_dom_add_set(&s, "p130", 1, sim_busy(), &only, NULL, err);
    cpuset_zero(&only);
    cpuset_set(&only, 200);
    p200 = sim_dom_add_set(&s, "p200", 1, sim_busy(), &only, NULL, err);
    ck_assert_msg(p130 != NULL && p200 != NULL, "%s: pinned domains: %s", bc->policy, err);
    sim_run(&s, MS(300));
    sim_reset_stats(&s);
    s.record = true;
    sim_run(&s, bc->run_ns);
    ck_assert_no_violations(&s);
    for (unsigned int i = 0; i < BIG_VCPUS; i++) {
        double x = sim_share(&s, sim_vcpu(big, i));

        total += x;
        min = x < min ? x : min;
        max = x > max ? x : max;
    }
    total += sim_share(&s, sim_vcpu(p130, 0)) + sim_share(&s, sim_vcpu(p200, 0));
    /* Every CPU busy: 256 CPUs' worth of run time, give or take a pick. */
    ck_assert_msg(total > BIG_CPUS - 0.5, "%s: %.2f CPUs used of %d", bc->policy, total, BIG_CPUS);
    if (bc->share_tol > 0) {
        double want = (double)BIG_CPUS / (BIG_VCPUS + 2);

        ck_assert_msg(min > want - bc->share_tol && max < want + bc->share_tol,
                      "%s: shares %.3f..%.3f, expected %.3f +- %.2f", bc->policy, min, max, want,
                      bc->share_tol);
    } else {
        ck_assert_msg(min > 0.4, "%s: a vCPU got only %.3f", bc->policy, min);
    }
    /* The pinned vCPUs ran, and only on their CPU. */
    if (bc->pins_run) {
        ck_assert_msg(sim_share(&s, sim_vcpu(p130, 0)) > 0.2, "%s: p130 starved", bc->policy);
        ck_assert_msg(sim_share(&s, sim_vcpu(p200, 0)) > 0.2, "%s: p200 starved", bc->policy);
    }
    for (size_t k = 0; k < s.nr_seg; k++) {
        const struct sim_seg *g = &s.timeline[k];

        if (g->vcpu < 0)
            continue;
        if (s.vcpus[g->vcpu] == sim_vcpu(p130, 0))
            ck_assert_uint_eq(g->cpu, 130);
        if (s.vcpus[g->vcpu] == sim_vcpu(p200, 0))
            ck_assert_uint_eq(g->cpu, 200);
    }
    sim_fini(&s);
}
END_TEST

/* 1024 CPUs, the largest pool, under the policy whose topology code is the heaviest. */
START_TEST(test_1024_cpus_credit2)
{
    static struct sim s;

    sim_start(&s, "credit2", CPUSET_MAX, NULL);
    sim_add_ok(&s, "all", CPUSET_MAX, sim_busy(), NULL);
    sim_run(&s, MS(200));
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

static Suite *
bigpool_suite(void)
{
    Suite *s = suite_create("bigpool");
    TCase *tc = tcase_create("bigpool");

    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_256_cpus, 0, (int)(sizeof(cases) / sizeof(cases[0])));
    tcase_add_test(tc, test_1024_cpus_credit2);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(bigpool_suite());
}
