/* SPDX-License-Identifier: ISC */
/*
 * credit_testutil.h - helpers of the Credit suites (test_credit.c,
 * test_credit_smp.c): reading the policy's per-vCPU counters, running the
 * simulator to an absolute time, and the Xen constants the tests check.
 */
#ifndef VCPUSCHED_CREDIT_TESTUTIL_H
#define VCPUSCHED_CREDIT_TESTUTIL_H

#include <string.h>

#include "testutil.h"

#define TSLICE    MS(30) /* accounting period and slice */
#define TICK      MS(10) /* tslice / 3 */
#define RATELIMIT MS(1)

struct stat_capture {
    const char *key;
    bool found;
    int64_t ival;
    char sval[16];
};

static inline void
stat_put_int(struct policy_sink *sk, const char *key, int64_t val)
{
    struct stat_capture *c = sk->ctx;

    if (strcmp(key, c->key) == 0) {
        c->found = true;
        c->ival = val;
    }
}

static inline void
stat_put_str(struct policy_sink *sk, const char *key, const char *val)
{
    struct stat_capture *c = sk->ctx;

    if (strcmp(key, c->key) == 0) {
        c->found = true;
        snprintf(c->sval, sizeof(c->sval), "%s", val);
    }
}

/* A per-vCPU counter of the policy (vcpu_stats), or fail the test. */
static inline int64_t
stat_int(struct sim *s, struct sim_vcpu *v, const char *key)
{
    struct stat_capture c = {key, false, 0, ""};
    struct policy_sink sk = {stat_put_int, stat_put_str, &c};

    pool_vcpu_stats(&s->pool, v->pv, &sk);
    ck_assert_msg(c.found, "no stat %s", key);
    return c.ival;
}

/* The priority as text: BOOST, UNDER, OVER. */
static inline const char *
stat_pri(struct sim *s, struct sim_vcpu *v)
{
    static struct stat_capture c;
    struct policy_sink sk = {stat_put_int, stat_put_str, &c};

    c = (struct stat_capture){"pri", false, 0, ""};
    pool_vcpu_stats(&s->pool, v->pv, &sk);
    ck_assert(c.found);
    return c.sval;
}

/* A pool (d == NULL) or domain parameter as get_params reports it. */
static inline int64_t
param_int(struct sim *s, struct pool_dom *d, const char *key)
{
    struct stat_capture c = {key, false, 0, ""};
    struct policy_sink sk = {stat_put_int, stat_put_str, &c};

    pool_get_params(&s->pool, d, &sk);
    ck_assert_msg(c.found, "no parameter %s", key);
    return c.ival;
}

/* Run the simulation up to absolute time t (events at t included). */
static inline void
sim_until(struct sim *s, uint64_t t)
{
    ck_assert_uint_ge(t, s->now);
    sim_run(s, t - s->now);
}

/* Attach with an affinity mask, or fail the test. */
static inline struct pool_dom *
sim_add_aff(struct sim *s, const char *name, unsigned int n, struct sim_demand d, uint64_t aff,
            const char *params)
{
    char err[POLICY_ERRLEN] = "";
    struct pool_dom *dom = sim_dom_add(s, name, n, d, aff, params, err);

    ck_assert_msg(dom != NULL, "attach %s: %s", name, err);
    return dom;
}

/* Home CPU the policy keeps for v. */
static inline unsigned int
vcpu_home(struct sim_vcpu *v)
{
    return v->pv->pv->cpu;
}

#endif /* VCPUSCHED_CREDIT_TESTUTIL_H */
