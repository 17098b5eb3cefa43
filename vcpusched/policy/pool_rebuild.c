/* SPDX-License-Identifier: ISC */
/*
 * pool_rebuild.c - a pool's policy instance built again beside the running
 * one, then swapped in: a policy switch (pool_switch) and a change of the
 * pool's CPUs (pool_resize), Xen's cpupool scheduler change and
 * cpupool-cpu-add/-remove; see pool.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool_priv.h"

/* Undo a partly built instance (newpd[0..k) added to np, newpd[0..total) allocated). */
static void
rebuild_unwind(struct policy *np, struct policy_dom **newpd, unsigned int k, unsigned int total,
               uint64_t now)
{
    for (unsigned int i = 0; i < total; i++) {
        if (i < k)
            pool_inst_remove(np, newpd[i], now);
        pool_hdr_free(newpd[i]);
    }
    free(newpd);
    policy_destroy(np);
}

/*
 * Build an instance of `ops` on cpus[0..nr_cpus) (the instance keeps the
 * array) with pool parameters pk[0..pn), and every domain's headers in it
 * with the parameters `ops` knows, each vCPU on its affinity as it is now.
 * The running instance is untouched; on error nothing is left.
 */
static int
rebuild_prepare(struct pool *p, const struct policy_ops *ops, struct policy_cpu *cpus,
                unsigned int nr_cpus, const struct kv *pk, size_t pn, struct policy *np,
                struct policy_dom ***out, uint64_t now, char *err)
{
    struct policy_dom **newpd;
    struct pool_dom *d;
    unsigned int k = 0;
    int r;

    r = policy_create(np, ops, cpus, nr_cpus, pk, pn, err);
    if (r < 0)
        return r;
    newpd = calloc(p->nr_doms + 1, sizeof(*newpd));
    if (newpd == NULL) {
        policy_destroy(np);
        snprintf(err, POLICY_ERRLEN, "out of memory");
        return -ENOMEM;
    }
    TAILQ_FOREACH(d, &p->doms, link)
    {
        struct kv dkv[VS_PARAMS_MAX];
        size_t dn = pool_kvs_view(&d->params, dkv);
        struct policy_values dv;
        char why[POLICY_ERRLEN];

        newpd[k] = pool_hdr_new(ops, d, 0);
        if (newpd[k] == NULL) {
            snprintf(why, sizeof(why), "out of memory");
            r = -ENOMEM;
        } else {
            r = policy_values_parse(ops->dom_params, dkv, dn, true, &dv, why);
            if (r == 0)
                r = pool_inst_add(np, newpd[k], &dv, now, why);
        }
        if (r < 0) {
            snprintf(err, POLICY_ERRLEN, "domain %s: %s", d->name, why);
            rebuild_unwind(np, newpd, k, k + 1, now);
            return r;
        }
        k++;
    }
    *out = newpd;
    return 0;
}

/*
 * The point of no return: the old instance goes, the domains take their
 * new headers and the pool `np`; no CPU has an elected vCPU. The caller
 * then sets what else changed and calls rebuild_wake.
 */
static void
rebuild_commit(struct pool *p, struct policy *np, struct policy_dom **newpd, uint64_t now)
{
    struct pool_dom *d;
    unsigned int k = 0;

    TAILQ_FOREACH(d, &p->doms, link)
    {
        pool_inst_remove(&p->pol, d->pd, now);
        pool_hdr_free(d->pd);
        d->pd = newpd[k++];
        for (unsigned int i = 0; i < d->nr_vcpus; i++)
            d->vcpus[i]->pv = d->pd->vcpus[i];
    }
    free(newpd);
    policy_destroy(&p->pol);
    p->pol = *np;
    for (unsigned int c = 0; c < CPUSET_MAX; c++) {
        if (p->cpu[c].elected != NULL)
            p->cpu[c].elected->elected_on = -1;
        p->cpu[c].elected = NULL;
        p->cpu[c].until = POLICY_NEVER;
    }
    bgclass_switch_begin(p);
}

/* The new instance learns which vCPUs are runnable; every CPU re-picks. */
static void
rebuild_wake(struct pool *p, uint64_t now)
{
    struct pool_dom *d;

    cpuset_fill(&p->need_pick, p->nr_cpus);
    TAILQ_FOREACH(d, &p->doms, link)
    {
        for (unsigned int i = 0; i < d->nr_vcpus; i++) {
            struct pool_vcpu *v = d->vcpus[i];

            if (v->runnable && !v->cls.held) {
                v->pv->runnable = true;
                p->pol.ops->wake(&p->pol, v->pv, now);
            }
        }
    }
    bgclass_switch_end(p, now);
}

int
pool_switch(struct pool *p, const char *policy, const struct kv *kv, size_t n, uint64_t now,
            char *err)
{
    const struct policy_ops *ops = policy_find(policy);
    struct kv pk[VS_PARAMS_MAX], ck[VS_PARAMS_MAX];
    struct policy_dom **newpd;
    struct pool_kvs newparams = {0};
    struct policy np;
    size_t pn, cn;
    int r;

    if (ops == NULL) {
        snprintf(err, POLICY_ERRLEN, "unknown policy '%.32s'", policy);
        return -EINVAL;
    }
    if (n > VS_PARAMS_MAX) {
        snprintf(err, POLICY_ERRLEN, "more than %d parameters", VS_PARAMS_MAX);
        return -E2BIG;
    }
    bgclass_split(kv, n, false, pk, &pn, ck, &cn);
    r = bgclass_pool_check(&p->cls, ck, cn, err);
    if (r < 0)
        return r;
    if (pool_kvs_merge(&newparams, pk, pn) < 0) {
        pool_kvs_clear(&newparams);
        snprintf(err, POLICY_ERRLEN, "out of memory");
        return -ENOMEM;
    }
    r = rebuild_prepare(p, ops, p->cpus, p->nr_cpus, pk, pn, &np, &newpd, now, err);
    if (r < 0) {
        pool_kvs_clear(&newparams);
        return r;
    }
    now = pool_flush_charges(p, now);
    rebuild_commit(p, &np, newpd, now);
    pool_kvs_clear(&p->params);
    p->params = newparams;
    rebuild_wake(p, now);
    bgclass_pool_apply(p, ck, cn);
    p->stats.policy_switches++;
    bgclass_sync(p, NULL, now);
    pool_collect(p);
    return 0;
}

/* The CPUs for a resize: 1..CPUSET_MAX, each listed once. */
static int
resize_check(const struct pool *p, const struct policy_cpu *cpus, unsigned int n, char *err)
{
    if (n == 0 || n > CPUSET_MAX) {
        snprintf(err, POLICY_ERRLEN, "pool %s: a pool needs 1..%d CPUs", p->name, CPUSET_MAX);
        return -EINVAL;
    }
    for (unsigned int i = 0; i < n; i++) {
        for (unsigned int j = 0; j < i; j++) {
            if (cpus[j].cpu == cpus[i].cpu) {
                snprintf(err, POLICY_ERRLEN, "pool %s: cpu %d listed twice", p->name, cpus[i].cpu);
                return -EINVAL;
            }
        }
    }
    return 0;
}

/*
 * Each vCPU's affinity on the new CPUs (aff[k], k counting vCPUs in domain
 * order; empty: all of them) into v->affinity, the old ones kept in
 * old[k]. A vCPU left without a CPU refuses the change.
 */
static int
resize_affinity(struct pool *p, unsigned int n, const struct cpuset *aff, struct cpuset *old,
                char *err)
{
    struct cpuset all;
    struct pool_dom *d;
    unsigned int k = 0;

    cpuset_fill(&all, n);
    TAILQ_FOREACH(d, &p->doms, link)
    {
        for (unsigned int i = 0; i < d->nr_vcpus; i++, k++) {
            if (aff != NULL && !cpuset_empty(&aff[k]) && !cpuset_intersects(&aff[k], &all)) {
                snprintf(err, POLICY_ERRLEN,
                         "pool %s: vCPU %u of domain %s may not use any of the new CPUs", p->name,
                         i, d->name);
                return -EINVAL;
            }
        }
    }
    k = 0;
    TAILQ_FOREACH(d, &p->doms, link)
    {
        for (unsigned int i = 0; i < d->nr_vcpus; i++, k++) {
            struct pool_vcpu *v = d->vcpus[i];

            old[k] = v->affinity;
            v->affinity = all;
            if (aff != NULL && !cpuset_empty(&aff[k]))
                cpuset_and(&v->affinity, &aff[k]);
        }
    }
    return 0;
}

static void
resize_affinity_undo(struct pool *p, const struct cpuset *old)
{
    struct pool_dom *d;
    unsigned int k = 0;

    TAILQ_FOREACH(d, &p->doms, link)
    {
        for (unsigned int i = 0; i < d->nr_vcpus; i++)
            d->vcpus[i]->affinity = old[k++];
    }
}

unsigned int
pool_nr_vcpus(const struct pool *p)
{
    const struct pool_dom *d;
    unsigned int n = 0;

    TAILQ_FOREACH(d, &p->doms, link)
    n += d->nr_vcpus;
    return n;
}

int
pool_resize(struct pool *p, const struct policy_cpu *cpus, unsigned int n, const struct cpuset *aff,
            uint64_t now, char *err)
{
    struct kv pk[VS_PARAMS_MAX];
    size_t pn = pool_kvs_view(&p->params, pk);
    struct bgclass_cpu *clscpu = NULL;
    struct policy_dom **newpd;
    struct policy_cpu *ncpus;
    struct cpuset *old;
    struct policy np;
    int r;

    r = resize_check(p, cpus, n, err);
    if (r < 0)
        return r;
    ncpus = calloc(n, sizeof(*ncpus));
    old = calloc(pool_nr_vcpus(p) + 1, sizeof(*old));
    if (ncpus == NULL || old == NULL) {
        snprintf(err, POLICY_ERRLEN, "out of memory");
        r = -ENOMEM;
    } else {
        memcpy(ncpus, cpus, n * sizeof(*cpus));
        r = bgclass_cpus_prepare(&p->cls, n, &clscpu, err);
    }
    if (r == 0)
        r = resize_affinity(p, n, aff, old, err);
    if (r == 0) {
        r = rebuild_prepare(p, p->pol.ops, ncpus, n, pk, pn, &np, &newpd, now, err);
        if (r < 0)
            resize_affinity_undo(p, old);
    }
    free(old);
    if (r < 0) {
        free(ncpus);
        free(clscpu);
        return r;
    }
    now = pool_flush_charges(p, now);
    rebuild_commit(p, &np, newpd, now);
    free(p->cpus);
    p->cpus = ncpus;
    p->nr_cpus = n;
    bgclass_cpus_commit(&p->cls, n, clscpu);
    rebuild_wake(p, now);
    p->stats.resizes++;
    bgclass_sync(p, NULL, now);
    pool_collect(p);
    return 0;
}
