/* SPDX-License-Identifier: ISC */
/*
 * test_safe_defaults.c - the pure choices behind the daemon's safe
 * defaults: whether real-time throttling may be turned off on a kernel
 * (host/rtsafe.c) and the CPUs a default pool leaves to the host
 * (host/housekeeping.c), on described hosts from 1 to 128 CPUs.
 */
#include <stdio.h>
#include <string.h>

#include "common/cpuset.h"
#include "host/housekeeping.h"
#include "host/rtsafe.h"
#include "testutil.h"

START_TEST(fair_server)
{
    /* debugfs, when readable, says; else the version. */
    ck_assert(rtsafe_fair_server("6.1.0-28-cloud-amd64", 1));
    ck_assert(!rtsafe_fair_server("6.18.44", 0));
    ck_assert(!rtsafe_fair_server("6.1.0-28-cloud-amd64", -1)); /* Debian 12 */
    ck_assert(!rtsafe_fair_server("6.11.9", -1));
    ck_assert(rtsafe_fair_server("6.12.0", -1));
    ck_assert(rtsafe_fair_server("6.18.44-fc-v657", -1));
    ck_assert(rtsafe_fair_server("7.0", -1));
    ck_assert(!rtsafe_fair_server("5.14.0-427.el9.x86_64", -1)); /* RHEL 9 */
    ck_assert(!rtsafe_fair_server("garbage", -1));
    ck_assert(!rtsafe_fair_server("", -1));
    ck_assert(!rtsafe_fair_server(NULL, -1));
}
END_TEST

START_TEST(unlimited)
{
    ck_assert(rtsafe_unlimited(-1, 1000000));
    ck_assert(rtsafe_unlimited(1000000, 1000000));
    ck_assert(!rtsafe_unlimited(950000, 1000000));
    ck_assert(!rtsafe_unlimited(999999, 1000000));
    ck_assert(!rtsafe_unlimited(0, 1000000));
}
END_TEST

/* A host of `nodes` nodes, `per` CPUs each, `smt` threads per core, CPUs numbered node by node. */
static unsigned int
host(struct policy_cpu *cpus, int nodes, int per, int smt)
{
    unsigned int n = 0;

    for (int node = 0; node < nodes; node++)
        for (int i = 0; i < per; i++, n++)
            cpus[n] = (struct policy_cpu){
                .cpu = (int)n, .core = (node * per + i) / smt, .socket = node, .node = node};
    return n;
}

/* The housekeeping set of a described host, as a CPU list; *managed gets what is left. */
static const char *
hk_of(const struct policy_cpu *cpus, unsigned int n, unsigned int *managed, char *buf, size_t len)
{
    struct cpuset hk;

    *managed = housekeeping_default(cpus, n, &hk);
    return cpulist_format(&hk, buf, len);
}

START_TEST(default_housekeeping)
{
    static const struct {
        int nodes, per, smt;
        const char *hk;
        unsigned int managed;
    } hosts[] = {
        {1, 2, 1, "0", 1},            /* the 2-CPU test machine: CPU 1 managed */
        {1, 1, 1, "0", 0},            /* one CPU: nothing to manage */
        {2, 2, 1, "0,2", 2},          /* 2 nodes of 2: one each */
        {1, 8, 1, "0", 7},            /* 8 CPUs, one node: 1 */
        {1, 9, 1, "0-1", 7},          /* 9: 2 */
        {2, 32, 1, "0-3,32-35", 56},  /* 64 in 2 nodes: 4 per node, 8 of 64 */
        {2, 64, 2, "0-7,64-71", 112}, /* 128 with SMT, 2 nodes: 16, whole cores */
        {1, 6, 2, "0-1", 4},          /* 3 cores of 2: CPU 0 and its sibling */
        {1, 2, 2, "0", 1},            /* one core of 2: siblings would leave nothing */
    };
    static struct policy_cpu cpus[CPUSET_MAX];
    unsigned int managed;
    char buf[256];

    for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
        unsigned int n = host(cpus, hosts[i].nodes, hosts[i].per, hosts[i].smt);

        ck_assert_str_eq(hk_of(cpus, n, &managed, buf, sizeof(buf)), hosts[i].hk);
        ck_assert_uint_eq(managed, hosts[i].managed);
    }
    /* Any order in, the lowest CPUs of each node out. */
    {
        unsigned int n = host(cpus, 2, 2, 1);
        struct policy_cpu rev[4] = {cpus[3], cpus[2], cpus[1], cpus[0]};

        ck_assert_str_eq(hk_of(rev, n, &managed, buf, sizeof(buf)), "0,2");
        ck_assert_uint_eq(managed, 2);
    }
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("safe_defaults");
    TCase *tc = tcase_create("safe_defaults");

    tcase_add_test(tc, fair_server);
    tcase_add_test(tc, unlimited);
    tcase_add_test(tc, default_housekeeping);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
