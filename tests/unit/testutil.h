/* SPDX-License-Identifier: ISC */
/*
 * testutil.h - small helpers shared by the Check suites.
 */
#ifndef VCPUSCHED_TESTUTIL_H
#define VCPUSCHED_TESTUTIL_H

#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "sim.h"

#define MS(x)  ((uint64_t)(x)*NSEC_PER_MSEC)
#define US(x)  ((uint64_t)(x)*NSEC_PER_USEC)
#define SEC(x) ((uint64_t)(x)*NSEC_PER_SEC)

/* Start a simulator or fail the test with the policy's message. */
#define sim_start(s, policy, ncpu, params)                                                         \
    do {                                                                                           \
        char err_[POLICY_ERRLEN] = "";                                                             \
        int r_ = sim_init((s), (policy), (ncpu), NULL, (params), err_);                            \
        ck_assert_msg(r_ == 0, "sim_init: %s", err_);                                              \
    } while (0)

/* Attach a domain or fail the test. */
static inline struct pool_dom *
sim_add_ok(struct sim *s, const char *name, unsigned int n, struct sim_demand d, const char *params)
{
    char err[POLICY_ERRLEN] = "";
    struct pool_dom *dom = sim_dom_add(s, name, n, d, 0, params, err);

    ck_assert_msg(dom != NULL, "attach %s: %s", name, err);
    return dom;
}

/* Share of vCPU 0 of d, within tol (absolute, 0..1). */
#define ck_assert_share(s, d, expect, tol)                                                         \
    do {                                                                                           \
        double got_ = sim_share((s), sim_vcpu((d), 0));                                            \
        ck_assert_msg(got_ > (expect) - (tol) && got_ < (expect) + (tol),                          \
                      "%s: share %.4f, expected %.4f +- %.4f", (d)->name, got_, (double)(expect),  \
                      (double)(tol));                                                              \
    } while (0)

#define ck_assert_no_violations(s)                                                                 \
    ck_assert_msg(sim_violations(s) == 0, "contract violations: %s", (s)->pool.last_violation)

/* Run one suite and exit with its status (main() of every test file). */
static inline int
run_suite(Suite *suite)
{
    SRunner *sr = srunner_create(suite);
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif /* VCPUSCHED_TESTUTIL_H */
