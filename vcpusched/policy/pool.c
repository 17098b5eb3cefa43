/* SPDX-License-Identifier: ISC */
/*
 * pool.c - sequencing of policy calls for one pool; see pool.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/assert.h"
#include "common/names.h"
#include "pool_priv.h"

/* After a contract violation the CPU idles this long before a retry. */
#define POOL_VIOLATION_RETRY_NS NSEC_PER_MSEC

/* --- Parameter store ------------------------------------------------ */

void
pool_kvs_clear(struct pool_kvs *s)
{
    for (unsigned int i = 0; i < s->n; i++) {
        free(s->kv[i].key);
        free(s->kv[i].val);
    }
    s->n = 0;
}

/*
 * Merge kv into s (a given key replaces the stored one). All-or-nothing:
 * the copies are made first. Parsing has already bounded n by the schema.
 */
int
pool_kvs_merge(struct pool_kvs *s, const struct kv *kv, size_t n)
{
    char *k[VS_PARAMS_MAX] = {0}, *v[VS_PARAMS_MAX] = {0};
    size_t i;

    if (n > VS_PARAMS_MAX)
        return -EINVAL;
    for (i = 0; i < n; i++) {
        k[i] = strdup(kv[i].key);
        v[i] = strdup(kv[i].val);
        if (k[i] == NULL || v[i] == NULL)
            goto fail;
    }
    for (i = 0; i < n; i++) {
        unsigned int j;

        for (j = 0; j < s->n && strcmp(s->kv[j].key, k[i]) != 0; j++)
            ;
        if (j == s->n) {
            if (s->n == VS_PARAMS_MAX)
                goto fail; /* cannot happen: keys come from one schema */
            s->kv[s->n++].key = k[i];
        } else {
            free(k[i]);
            free(s->kv[j].val);
        }
        s->kv[j].val = v[i];
        k[i] = v[i] = NULL;
    }
    return 0;
fail:
    for (i = 0; i < n; i++) {
        free(k[i]);
        free(v[i]);
    }
    return -ENOMEM;
}

size_t
pool_kvs_view(const struct pool_kvs *s, struct kv *out)
{
    for (unsigned int i = 0; i < s->n; i++) {
        out[i].key = s->kv[i].key;
        out[i].val = s->kv[i].val;
    }
    return s->n;
}

/* --- Policy-side headers of a domain ---------------------------------- */

void
pool_hdr_free(struct policy_dom *pd)
{
    if (pd == NULL)
        return;
    for (unsigned int i = 0; pd->vcpus != NULL && i < pd->nr_vcpus; i++) {
        if (pd->vcpus[i] != NULL)
            free(pd->vcpus[i]->priv);
        free(pd->vcpus[i]);
    }
    free(pd->vcpus);
    free(pd->priv);
    free(pd);
}

/* Fresh headers (and zeroed private data) of `d` for a policy `ops`. */
struct policy_dom *
pool_hdr_new(const struct policy_ops *ops, struct pool_dom *d, uint32_t first_vcpu_id)
{
    struct policy_dom *pd = calloc(1, sizeof(*pd));

    if (pd == NULL)
        return NULL;
    pd->id = d->id;
    pd->name = d->name;
    pd->nr_vcpus = d->nr_vcpus;
    pd->core = d;
    pd->vcpus = calloc(d->nr_vcpus, sizeof(pd->vcpus[0]));
    pd->priv = calloc(1, ops->dom_priv_size ? ops->dom_priv_size : 1);
    if (pd->vcpus == NULL || pd->priv == NULL)
        goto fail;
    for (unsigned int i = 0; i < d->nr_vcpus; i++) {
        struct policy_vcpu *pv = calloc(1, sizeof(*pv));

        if (pv == NULL)
            goto fail;
        pd->vcpus[i] = pv;
        /* A switch keeps each vCPU's id (hot-plugged ones are not in a run). */
        pv->id = d->vcpus[i]->pv != NULL ? d->vcpus[i]->pv->id : first_vcpu_id + i;
        pv->index = d->vcpus[i]->index;
        pv->dom = pd;
        pv->affinity = d->vcpus[i]->affinity;
        pv->core = d->vcpus[i];
        pv->priv = calloc(1, ops->vcpu_priv_size ? ops->vcpu_priv_size : 1);
        if (pv->priv == NULL)
            goto fail;
    }
    return pd;
fail:
    pool_hdr_free(pd);
    return NULL;
}

/* Add a domain and its vCPUs to a policy instance. */
int
pool_inst_add(struct policy *pol, struct policy_dom *pd, const struct policy_values *dv,
              uint64_t now, char *err)
{
    int r = policy_dom_add(pol, pd, dv, err);

    if (r < 0)
        return r;
    for (unsigned int i = 0; i < pd->nr_vcpus; i++) {
        pol->ops->vcpu_add(pol, pd->vcpus[i], now);
        policy_vcpu_mark_dirty(pol, pd->vcpus[i]); /* the caller pins new vCPUs */
    }
    return 0;
}

/* Drop every dirty-list entry belonging to pd (it is going away). */
static void
dirty_purge(struct policy *pol, struct policy_dom *pd)
{
    struct policy_vcpu **pp = &pol->dirty;

    while (*pp != NULL) {
        if ((*pp)->dom == pd) {
            struct policy_vcpu *gone = *pp;

            *pp = gone->next_dirty;
            gone->dirty = false;
            gone->next_dirty = NULL;
        } else {
            pp = &(*pp)->next_dirty;
        }
    }
}

void
pool_inst_remove(struct policy *pol, struct policy_dom *pd, uint64_t now)
{
    for (unsigned int i = 0; i < pd->nr_vcpus; i++)
        pol->ops->vcpu_remove(pol, pd->vcpus[i], now);
    policy_dom_remove(pol, pd);
    dirty_purge(pol, pd);
}

/* --- Pool ------------------------------------------------------------ */

void
pool_collect(struct pool *p)
{
    cpuset_or(&p->need_pick, &p->pol.tickled);
    cpuset_zero(&p->pol.tickled);
}

/*
 * Report the measured CPU time to the policy before a hot-path call (the
 * ops contract: charge first), and keep the policy's clock from going
 * back: dispatchers of one pool read the clock before taking its lock,
 * so a call may arrive stamped a little before the previous one. Returns
 * the time to give the policy.
 */
uint64_t
pool_flush_charges(struct pool *p, uint64_t now)
{
    struct pool_vcpu *v;

    if (now < p->last_now) {
        p->stats.clock_clamps++;
        now = p->last_now;
    }
    p->last_now = now;
    while ((v = p->charge_list) != NULL) {
        p->charge_list = v->next_charge;
        v->next_charge = NULL;
        v->on_charge_list = false;
        if (v->uncharged_ns > 0 && !v->cls.held) /* a held vCPU ran in time given away */
            policy_charge(&p->pol, v->pv, v->uncharged_ns, now);
        v->uncharged_ns = 0;
    }
    VS_ASSERT(p->charge_list == NULL);
    return now;
}

static void
charge_list_remove(struct pool *p, struct pool_vcpu *v)
{
    struct pool_vcpu **pp = &p->charge_list;

    while (*pp != NULL && *pp != v)
        pp = &(*pp)->next_charge;
    if (*pp == v) {
        *pp = v->next_charge;
        v->next_charge = NULL;
        v->on_charge_list = false;
    }
}

int
pool_init(struct pool *p, const char *name, const char *policy, const struct policy_cpu *cpus,
          unsigned int nr_cpus, const struct kv *kv, size_t n, char *err)
{
    const struct policy_ops *ops = policy_find(policy);
    struct kv pk[VS_PARAMS_MAX], ck[VS_PARAMS_MAX];
    size_t pn, cn;
    int r;

    memset(p, 0, sizeof(*p));
    if (ops == NULL) {
        snprintf(err, POLICY_ERRLEN, "unknown policy '%.32s'", policy);
        return -EINVAL;
    }
    if (strlen(name) == 0 || strlen(name) >= VS_NAME_SIZE) {
        snprintf(err, POLICY_ERRLEN, "pool name must be 1..%d bytes", VS_NAME_SIZE - 1);
        return -EINVAL;
    }
    if (nr_cpus == 0 || nr_cpus > CPUSET_MAX) {
        snprintf(err, POLICY_ERRLEN, "a pool needs 1..%d CPUs", CPUSET_MAX);
        return -EINVAL;
    }
    if (n > VS_PARAMS_MAX) {
        snprintf(err, POLICY_ERRLEN, "more than %d parameters", VS_PARAMS_MAX);
        return -E2BIG;
    }
    bgclass_init(&p->cls, nr_cpus);
    bgclass_split(kv, n, false, pk, &pn, ck, &cn);
    r = bgclass_pool_check(&p->cls, ck, cn, err);
    if (r < 0)
        return r;
    p->cpus = calloc(nr_cpus, sizeof(*cpus));
    if (p->cpus == NULL) {
        snprintf(err, POLICY_ERRLEN, "out of memory");
        return -ENOMEM;
    }
    memcpy(p->cpus, cpus, nr_cpus * sizeof(*cpus));
    p->nr_cpus = nr_cpus;
    r = policy_create(&p->pol, ops, p->cpus, nr_cpus, pk, pn, err);
    if (r == 0 && pool_kvs_merge(&p->params, pk, pn) < 0) {
        policy_destroy(&p->pol);
        snprintf(err, POLICY_ERRLEN, "out of memory");
        r = -ENOMEM;
    }
    if (r < 0) {
        free(p->cpus);
        memset(p, 0, sizeof(*p));
        return r;
    }
    bgclass_pool_apply(p, ck, cn);
    snprintf(p->name, sizeof(p->name), "%s", name);
    TAILQ_INIT(&p->doms);
    for (unsigned int c = 0; c < nr_cpus; c++) {
        p->cpu[c].elected = NULL;
        p->cpu[c].until = POLICY_NEVER;
    }
    return 0;
}

static void
dom_free(struct pool_dom *d)
{
    pool_hdr_free(d->pd);
    pool_kvs_clear(&d->params);
    for (unsigned int i = 0; d->vcpus != NULL && i < d->nr_vcpus; i++)
        free(d->vcpus[i]);
    free(d->vcpus);
    free(d);
}

void
pool_fini(struct pool *p, uint64_t now)
{
    struct pool_dom *d;

    while ((d = TAILQ_FIRST(&p->doms)) != NULL)
        pool_dom_remove(p, d, now);
    policy_destroy(&p->pol);
    pool_kvs_clear(&p->params);
    bgclass_fini(&p->cls);
    free(p->cpus);
    memset(p, 0, sizeof(*p));
}

struct pool_dom *
pool_dom_find(struct pool *p, const char *name)
{
    struct pool_dom *d;

    TAILQ_FOREACH(d, &p->doms, link)
    if (strcmp(d->name, name) == 0)
        return d;
    return NULL;
}

/* Names end up in table specs, JSON and logs: keep them plain. */
static int
dom_check(struct pool *p, const char *name, unsigned int nr_vcpus, const struct cpuset *affinity,
          char *err)
{
    struct cpuset all;

    cpuset_fill(&all, p->nr_cpus);
    if (!names_valid(name)) {
        snprintf(err, POLICY_ERRLEN, "bad domain name '%.32s': 1..%d of " NAMES_CHARS, name,
                 VS_NAME_SIZE - 1);
        return -EINVAL;
    }
    if (pool_dom_find(p, name) != NULL) {
        snprintf(err, POLICY_ERRLEN, "domain %s is already attached", name);
        return -EEXIST;
    }
    if (nr_vcpus == 0 || nr_vcpus > VS_THREADS_MAX) {
        snprintf(err, POLICY_ERRLEN, "domain %s: 1..%d vCPUs, not %u", name, VS_THREADS_MAX,
                 nr_vcpus);
        return -EINVAL;
    }
    for (unsigned int i = 0; affinity != NULL && i < nr_vcpus; i++) {
        if (!cpuset_empty(&affinity[i]) && !cpuset_intersects(&affinity[i], &all)) {
            snprintf(err, POLICY_ERRLEN, "domain %s: vCPU %u may not use any CPU of pool %s", name,
                     i, p->name);
            return -EINVAL;
        }
    }
    return 0;
}

int
pool_dom_add(struct pool *p, const char *name, unsigned int nr_vcpus, const struct cpuset *affinity,
             const struct kv *kv, size_t n, uint64_t now, struct pool_dom **out, char *err)
{
    struct kv pk[VS_PARAMS_MAX], ck[VS_PARAMS_MAX];
    struct policy_values dv;
    struct cpuset all;
    struct pool_dom *d;
    size_t pn, cn;
    int r, bg;

    r = dom_check(p, name, nr_vcpus, affinity, err);
    if (r < 0)
        return r;
    cpuset_fill(&all, p->nr_cpus);
    if (n > VS_PARAMS_MAX) {
        snprintf(err, POLICY_ERRLEN, "more than %d parameters", VS_PARAMS_MAX);
        return -E2BIG;
    }
    bgclass_split(kv, n, true, pk, &pn, ck, &cn);
    r = bgclass_dom_parse(ck, cn, &bg, err);
    if (r == 0 && bg > 0)
        r = bgclass_prepare(p, err);
    if (r == 0)
        r = policy_values_parse(p->pol.ops->dom_params, pk, pn, false, &dv, err);
    if (r < 0)
        return r;
    d = calloc(1, sizeof(*d));
    if (d == NULL || (d->vcpus = calloc(nr_vcpus, sizeof(d->vcpus[0]))) == NULL)
        goto nomem;
    d->id = p->next_dom_id++;
    snprintf(d->name, sizeof(d->name), "%s", name);
    d->nr_vcpus = nr_vcpus;
    for (unsigned int i = 0; i < nr_vcpus; i++) {
        struct pool_vcpu *v = d->vcpus[i] = calloc(1, sizeof(*v));

        if (v == NULL)
            goto nomem;

        v->dom = d;
        v->index = i;
        v->affinity = all;
        if (affinity != NULL && !cpuset_empty(&affinity[i]))
            cpuset_and(&v->affinity, &affinity[i]);
        v->elected_on = -1;
    }
    if (pool_kvs_merge(&d->params, pk, pn) < 0)
        goto nomem;
    d->pd = pool_hdr_new(p->pol.ops, d, p->next_vcpu_id);
    if (d->pd == NULL)
        goto nomem;
    for (unsigned int i = 0; i < nr_vcpus; i++)
        d->vcpus[i]->pv = d->pd->vcpus[i];
    r = pool_inst_add(&p->pol, d->pd, &dv, now, err);
    if (r < 0) {
        dom_free(d);
        return r;
    }
    p->next_vcpu_id += nr_vcpus;
    TAILQ_INSERT_TAIL(&p->doms, d, link);
    p->nr_doms++;
    bgclass_dom_join(p, d, bg > 0, now);
    bgclass_sync(p, NULL, now);
    pool_collect(p);
    if (out != NULL)
        *out = d;
    return 0;
nomem:
    if (d != NULL)
        dom_free(d);
    snprintf(err, POLICY_ERRLEN, "out of memory");
    return -ENOMEM;
}

void
pool_dom_remove(struct pool *p, struct pool_dom *d, uint64_t now)
{
    now = pool_flush_charges(p, now);
    for (unsigned int i = 0; i < d->nr_vcpus; i++) {
        struct pool_vcpu *v = d->vcpus[i];

        if (v->elected_on >= 0) {
            p->cpu[v->elected_on].elected = NULL;
            cpuset_set(&p->need_pick, (unsigned int)v->elected_on);
            v->elected_on = -1;
        }
        charge_list_remove(p, v);
    }
    bgclass_dom_leave(p, d, now);
    pool_inst_remove(&p->pol, d->pd, now);
    TAILQ_REMOVE(&p->doms, d, link);
    p->nr_doms--;
    dom_free(d);
    bgclass_sync(p, NULL, now);
    pool_collect(p);
}

/* Drop v from the dirty list (it is going away). */
static void
dirty_purge_vcpu(struct policy *pol, struct policy_vcpu *v)
{
    struct policy_vcpu **pp = &pol->dirty;

    while (*pp != NULL && *pp != v)
        pp = &(*pp)->next_dirty;
    if (*pp == v) {
        *pp = v->next_dirty;
        v->dirty = false;
        v->next_dirty = NULL;
    }
}

int
pool_vcpu_add(struct pool *p, struct pool_dom *d, const struct cpuset *affinity, uint64_t now,
              struct pool_vcpu **out, char *err)
{
    const struct policy_ops *ops = p->pol.ops;
    unsigned int n = d->nr_vcpus, index = 0;
    struct pool_vcpu *v = NULL, **vs = NULL;
    struct policy_vcpu *pv = NULL, **pvs = NULL;
    struct cpuset all;

    cpuset_fill(&all, p->nr_cpus);
    if (n >= VS_THREADS_MAX) {
        snprintf(err, POLICY_ERRLEN, "domain %s: at most %d vCPUs", d->name, VS_THREADS_MAX);
        return -E2BIG;
    }
    if (affinity != NULL && !cpuset_empty(affinity) && !cpuset_intersects(affinity, &all)) {
        snprintf(err, POLICY_ERRLEN, "domain %s: the new vCPU may not use any CPU of pool %s",
                 d->name, p->name);
        return -EINVAL;
    }
    /* Everything that can fail first: the domain changes only below. */
    v = calloc(1, sizeof(*v));
    pv = calloc(1, sizeof(*pv));
    vs = calloc(n + 1, sizeof(*vs));
    pvs = calloc(n + 1, sizeof(*pvs));
    if (pv != NULL)
        pv->priv = calloc(1, ops->vcpu_priv_size ? ops->vcpu_priv_size : 1);
    if (v == NULL || pv == NULL || pv->priv == NULL || vs == NULL || pvs == NULL) {
        if (pv != NULL)
            free(pv->priv);
        free(v);
        free(pv);
        free(vs);
        free(pvs);
        snprintf(err, POLICY_ERRLEN, "out of memory");
        return -ENOMEM;
    }
    for (unsigned int i = 0; i < n; i++)
        index = d->vcpus[i]->index >= index ? d->vcpus[i]->index + 1 : index;
    v->dom = d;
    v->index = index;
    v->affinity = all;
    if (affinity != NULL && !cpuset_empty(affinity))
        cpuset_and(&v->affinity, affinity);
    v->elected_on = -1;
    v->pv = pv;
    pv->id = p->next_vcpu_id++;
    pv->index = index;
    pv->dom = d->pd;
    pv->affinity = v->affinity;
    pv->core = v;
    memcpy(vs, d->vcpus, n * sizeof(*vs));
    memcpy(pvs, d->pd->vcpus, n * sizeof(*pvs));
    vs[n] = v;
    pvs[n] = pv;
    free(d->vcpus);
    free(d->pd->vcpus);
    d->vcpus = vs;
    d->pd->vcpus = pvs;
    d->nr_vcpus = d->pd->nr_vcpus = n + 1;
    now = pool_flush_charges(p, now);
    ops->vcpu_add(&p->pol, pv, now);
    policy_vcpu_mark_dirty(&p->pol, pv); /* the caller pins it */
    bgclass_vcpu_join(p, v, d->background, now);
    bgclass_sync(p, NULL, now);
    pool_collect(p);
    if (out != NULL)
        *out = v;
    return 0;
}

int
pool_vcpu_remove(struct pool *p, struct pool_vcpu *v, uint64_t now)
{
    struct pool_dom *d = v->dom;
    unsigned int i;

    if (d->nr_vcpus <= 1)
        return -EBUSY;
    now = pool_flush_charges(p, now);
    if (v->elected_on >= 0) {
        p->cpu[v->elected_on].elected = NULL;
        cpuset_set(&p->need_pick, (unsigned int)v->elected_on);
        v->elected_on = -1;
    }
    charge_list_remove(p, v);
    bgclass_vcpu_leave(p, v, now);
    p->pol.ops->vcpu_remove(&p->pol, v->pv, now);
    dirty_purge_vcpu(&p->pol, v->pv);
    for (i = 0; d->vcpus[i] != v; i++)
        ;
    /* Same position in both arrays (hdr_new, pool_vcpu_add keep them so). */
    VS_ASSERT(d->pd->vcpus[i] == v->pv);
    memmove(&d->vcpus[i], &d->vcpus[i + 1], (d->nr_vcpus - i - 1) * sizeof(d->vcpus[0]));
    memmove(&d->pd->vcpus[i], &d->pd->vcpus[i + 1],
            (d->nr_vcpus - i - 1) * sizeof(d->pd->vcpus[0]));
    d->nr_vcpus = d->pd->nr_vcpus = d->nr_vcpus - 1;
    free(v->pv->priv);
    free(v->pv);
    free(v);
    bgclass_sync(p, NULL, now);
    pool_collect(p);
    return 0;
}

int
pool_dom_params_for(const struct pool_dom *d, const struct policy_ops *ops, const struct kv *kv,
                    size_t n, struct kv *out, char *err)
{
    static const struct kv background = {BGCLASS_KEY, "background"};
    struct kv pk[VS_PARAMS_MAX], ck[VS_PARAMS_MAX], own[VS_PARAMS_MAX];
    struct policy_values val;
    size_t nown = pool_kvs_view(&d->params, own), k = 0, pn, cn;
    int r, bg;

    if (n > VS_PARAMS_MAX) {
        snprintf(err, POLICY_ERRLEN, "more than %d parameters", VS_PARAMS_MAX);
        return -E2BIG;
    }
    bgclass_split(kv, n, true, pk, &pn, ck, &cn);
    r = bgclass_dom_parse(ck, cn, &bg, err);
    if (r == 0)
        r = policy_values_parse(ops->dom_params, pk, pn, false, &val, err);
    if (r < 0)
        return r;
    for (size_t i = 0; i < nown; i++) {
        bool given = false;

        for (size_t j = 0; j < pn && !given; j++)
            given = strcmp(pk[j].key, own[i].key) == 0;
        if (!given && policy_param_index(ops->dom_params, own[i].key) >= 0)
            out[k++] = own[i];
    }
    /* Every key is in one schema (parsing refuses duplicates): k + n fits. */
    for (size_t j = 0; j < pn && k < VS_PARAMS_MAX; j++)
        out[k++] = pk[j];
    /* The class goes along unless kv says otherwise. */
    if (cn > 0 && k < VS_PARAMS_MAX)
        out[k++] = ck[cn - 1];
    else if (d->background && k < VS_PARAMS_MAX)
        out[k++] = background;
    return (int)k;
}

/*
 * The policy's part of pool_set: store first (it may fail for memory),
 * then apply; the store is restored if the policy refuses.
 */
static int
set_policy(struct pool *p, struct pool_dom *d, const struct kv *kv, size_t n,
           const struct policy_values *val, uint64_t now, char *err)
{
    struct pool_kvs *store = d ? &d->params : &p->params;
    struct pool_kvs backup = {0};
    int r;

    for (unsigned int i = 0; i < store->n; i++) {
        backup.kv[i].key = strdup(store->kv[i].key);
        backup.kv[i].val = strdup(store->kv[i].val);
        backup.n = i + 1;
        if (backup.kv[i].key == NULL || backup.kv[i].val == NULL)
            goto nomem;
    }
    if (pool_kvs_merge(store, kv, n) < 0)
        goto nomem;
    r = policy_set_params(&p->pol, d ? d->pd : NULL, val, now, err);
    if (r < 0) {
        pool_kvs_clear(store);
        *store = backup;
        return r;
    }
    pool_kvs_clear(&backup);
    return 0;
nomem:
    pool_kvs_clear(&backup);
    snprintf(err, POLICY_ERRLEN, "out of memory");
    return -ENOMEM;
}

int
pool_set(struct pool *p, struct pool_dom *d, const struct kv *kv, size_t n, uint64_t now, char *err)
{
    const struct policy_param *schema = d ? p->pol.ops->dom_params : p->pol.ops->pool_params;
    struct kv pk[VS_PARAMS_MAX], ck[VS_PARAMS_MAX];
    struct policy_values val;
    size_t pn, cn;
    int r, bg = -1;

    if (n > VS_PARAMS_MAX) {
        snprintf(err, POLICY_ERRLEN, "more than %d parameters", VS_PARAMS_MAX);
        return -E2BIG;
    }
    /* The class layer's keys are checked first; nothing changes until all pass. */
    bgclass_split(kv, n, d != NULL, pk, &pn, ck, &cn);
    r = d ? bgclass_dom_parse(ck, cn, &bg, err) : bgclass_pool_check(&p->cls, ck, cn, err);
    if (r == 0 && bg > 0)
        r = bgclass_prepare(p, err);
    if (r == 0)
        r = policy_values_parse(schema, pk, pn, false, &val, err);
    if (r < 0)
        return r;
    now = pool_flush_charges(p, now);
    if (pn > 0 || cn == 0) { /* a request of class keys alone leaves the policy alone */
        r = set_policy(p, d, pk, pn, &val, now, err);
        if (r < 0)
            return r;
    }
    if (d != NULL && bg >= 0)
        bgclass_dom_set(p, d, bg > 0, now);
    else if (d == NULL)
        bgclass_pool_apply(p, ck, cn);
    bgclass_sync(p, NULL, now);
    pool_collect(p);
    return 0;
}

void
pool_account(struct pool *p, struct pool_vcpu *v, uint64_t ran_ns)
{
    v->run_ns += ran_ns;
    v->uncharged_ns += ran_ns;
    if (!v->on_charge_list) {
        v->on_charge_list = true;
        v->next_charge = p->charge_list;
        p->charge_list = v;
    }
}

void
pool_wake(struct pool *p, struct pool_vcpu *v, uint64_t now)
{
    if (v->runnable)
        return;
    now = pool_flush_charges(p, now);
    v->runnable = true;
    v->wakes++;
    p->stats.wakes++;
    if (!bgclass_wake(p, v, now)) { /* a held vCPU stays asleep to the policy */
        v->pv->runnable = true;
        p->pol.ops->wake(&p->pol, v->pv, now);
    }
    bgclass_sync(p, v, now);
    pool_collect(p);
}

void
pool_sleep(struct pool *p, struct pool_vcpu *v, uint64_t now)
{
    if (!v->runnable)
        return;
    now = pool_flush_charges(p, now);
    v->runnable = false;
    v->sleeps++;
    p->stats.sleeps++;
    if (!bgclass_sleep(p, v, now)) { /* a held vCPU was asleep to the policy */
        v->pv->runnable = false;
        p->pol.ops->sleep(&p->pol, v->pv, now);
    }
    if (v->elected_on >= 0)
        cpuset_set(&p->need_pick, (unsigned int)v->elected_on);
    bgclass_sync(p, v, now);
    pool_collect(p);
}

void
pool_yield(struct pool *p, struct pool_vcpu *v, uint64_t now)
{
    if (!v->runnable || v->cls.held || p->pol.ops->yield == NULL)
        return; /* nothing would change (the policy does not know a held vCPU) */
    now = pool_flush_charges(p, now);
    policy_yield(&p->pol, v->pv, now);
    if (v->elected_on >= 0)
        cpuset_set(&p->need_pick, (unsigned int)v->elected_on);
    bgclass_sync(p, NULL, now);
    pool_collect(p);
}

void
pool_timer(struct pool *p, uint64_t now)
{
    if (now < p->pol.timer)
        return;
    now = pool_flush_charges(p, now);
    p->pol.timer = POLICY_NEVER;
    p->stats.timers++;
    policy_timer(&p->pol, now);
    bgclass_sync(p, NULL, now);
    pool_collect(p);
}

/* Returns NULL if d respects the ops contract, else what it broke. */
static const char *
decision_check(const struct pool *p, unsigned int cpu, uint64_t now,
               const struct policy_decision *d)
{
    const struct pool_vcpu *v;

    if (d->vcpu == NULL)
        return d->until != POLICY_NEVER && d->until <= now ? "idle until the past" : NULL;
    v = d->vcpu->core;
    if (v == NULL || v->pv != d->vcpu)
        return "unknown vCPU";
    if (!v->runnable)
        return "vCPU not runnable";
    if (d->vcpu->parked)
        return "vCPU parked";
    if (!policy_vcpu_allowed(d->vcpu, cpu))
        return "CPU outside the vCPU's affinity";
    if (d->vcpu->cpu != cpu)
        return "vCPU not moved to the CPU";
    if (v->elected_on >= 0 && v->elected_on != (int)cpu)
        return "vCPU elected on another CPU";
    if (d->until <= now)
        return "slice ends in the past";
    (void)p;
    return NULL;
}

/*
 * With background domains the class layer decides (bgclass.c), asking
 * the policy when needed: the policy's own answer is checked, then the
 * decision.
 */
static const char *
pick_with_class(struct pool *p, unsigned int cpu, uint64_t now, struct policy_decision *d)
{
    struct policy_decision raw;
    const char *bad = bgclass_pick(p, cpu, now, &raw, d);

    if (bad == NULL && raw.until != 0)
        bad = decision_check(p, cpu, now, &raw);
    return bad != NULL ? bad : decision_check(p, cpu, now, d);
}

const struct pool_cpu *
pool_pick(struct pool *p, unsigned int cpu, uint64_t now)
{
    struct policy_decision d = {NULL, POLICY_NEVER};
    struct pool_cpu *c = &p->cpu[cpu];
    struct pool_vcpu *next;
    const char *bad;

    now = pool_flush_charges(p, now);
    VS_ASSERT(cpu < p->nr_cpus);
    VS_ASSERT(c->elected == NULL || c->elected->elected_on == (int)cpu);
    if (bgclass_active(&p->cls)) {
        bad = pick_with_class(p, cpu, now, &d);
    } else {
        p->pol.ops->pick(&p->pol, cpu, now, &d);
        bad = decision_check(p, cpu, now, &d);
    }
    p->stats.picks++;
    if (bad != NULL) {
        p->stats.violations++;
        snprintf(p->last_violation, sizeof(p->last_violation), "%s on cpu %u: %s", p->pol.ops->name,
                 cpu, bad);
        d.vcpu = NULL;
        d.until = now + POOL_VIOLATION_RETRY_NS;
    }
    next = d.vcpu ? d.vcpu->core : NULL;
    if (c->elected != next) {
        p->stats.switches++;
        if (c->elected != NULL)
            c->elected->elected_on = -1;
        if (next != NULL) {
            next->elected_on = (int)cpu;
            next->elections++;
        }
    }
    c->elected = next;
    c->until = d.until;
    pool_collect(p);
    cpuset_clear(&p->need_pick, cpu); /* a pick that tickles itself is moot */
    return c;
}

uint64_t
pool_next_deadline(const struct pool *p)
{
    uint64_t t = p->pol.timer;

    for (unsigned int c = 0; c < p->nr_cpus; c++)
        if (p->cpu[c].until < t)
            t = p->cpu[c].until;
    return t;
}

struct pool_vcpu *
pool_take_dirty(struct pool *p)
{
    struct policy_vcpu *pv = policy_take_dirty(&p->pol);

    return pv != NULL ? pv->core : NULL;
}

void
pool_get_params(struct pool *p, struct pool_dom *d, struct policy_sink *sk)
{
    policy_get_params(&p->pol, d ? d->pd : NULL, sk);
    if (d == NULL)
        bgclass_get_params(&p->cls, sk);
    else if (d->background)
        sk->put_str(sk, BGCLASS_KEY, "background");
}

void
pool_vcpu_stats(struct pool *p, struct pool_vcpu *v, struct policy_sink *sk)
{
    policy_vcpu_stats(&p->pol, v->pv, sk);
}

const char *
pool_policy_name(const struct pool *p)
{
    return p->pol.ops->name;
}
