/* SPDX-License-Identifier: ISC */
/*
 * stat_testutil.h - read one statistic or parameter a policy reports
 * through its sink (pool_vcpu_stats, pool_get_params), for unit tests.
 */
#ifndef VCPUSCHED_STAT_TESTUTIL_H
#define VCPUSCHED_STAT_TESTUTIL_H

#include <string.h>

#include "testutil.h"

struct find_sink {
    const char *key;
    int64_t ival;
    const char *sval;
    bool found;
};

static inline void
find_int(struct policy_sink *sk, const char *key, int64_t val)
{
    struct find_sink *f = sk->ctx;

    if (strcmp(key, f->key) == 0) {
        f->ival = val;
        f->found = true;
    }
}

static inline void
find_str(struct policy_sink *sk, const char *key, const char *val)
{
    struct find_sink *f = sk->ctx;

    if (strcmp(key, f->key) == 0) {
        f->sval = val;
        f->found = true;
    }
}

/* A per-vCPU statistic; found is false if the policy has no such key. */
static inline struct find_sink
find_vstat(struct sim *s, struct sim_vcpu *v, const char *key)
{
    struct find_sink f = {key, 0, NULL, false};
    struct policy_sink sk = {find_int, find_str, &f};

    pool_vcpu_stats(&s->pool, v->pv, &sk);
    return f;
}

/* A per-vCPU integer statistic that must exist. */
static inline int64_t
vstat(struct sim *s, struct sim_vcpu *v, const char *key)
{
    struct find_sink f = find_vstat(s, v, key);

    ck_assert_msg(f.found, "no statistic %s", key);
    return f.ival;
}

/* A parameter of the pool (d == NULL) or of a domain, which must exist. */
static inline struct find_sink
param(struct sim *s, struct pool_dom *d, const char *key)
{
    struct find_sink f = {key, 0, NULL, false};
    struct policy_sink sk = {find_int, find_str, &f};

    pool_get_params(&s->pool, d, &sk);
    ck_assert_msg(f.found, "no parameter %s", key);
    return f;
}

#endif /* VCPUSCHED_STAT_TESTUTIL_H */
