/* SPDX-License-Identifier: ISC */
/*
 * table.c - table-driven scheduling: a fixed cyclic table of slots.
 *
 * Design. The paper's table-driven scheduling (seeds-digest 000, 3.3): the
 * pool parameter `table` lists slot owners, e.g. "A,B,A,C", each slot
 * `slot_us` long, repeated for ever. An owner is a domain name ("A": its
 * runnable vCPUs in turn) or one vCPU of it ("A/1"). Slots are aligned on
 * the monotonic clock (slot k covers [k*slot, (k+1)*slot)), so the table
 * is deterministic and the same on every run. With several CPUs, CPU c
 * runs entry (k + c) mod len, so a one-vCPU domain is never wanted by two
 * CPUs in the same slot of a table that lists it once.
 *
 * A slot whose owner is absent or not runnable leaves the CPU to the
 * kernel (idle decision): non-elected threads pinned there may run, which
 * is the work-conserving behaviour of the elevation trick.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies.h"

#define TABLE_MAX_ENTRIES 256
#define TABLE_MAX_SPEC    2048
#define TABLE_NAME_MAX    64

struct table_entry {
    char name[TABLE_NAME_MAX];
    int vcpu_index; /* -1: any vCPU of the domain */
    struct policy_dom *dom;
};

struct table_dom {
    unsigned int cursor; /* round-robin over the domain's vCPUs */
};

struct table_vcpu {
    int on_cpu; /* CPU it is elected on, or -1 */
    uint64_t run_ns;
    uint64_t picks;
};

struct table_priv {
    uint64_t slot_ns;
    unsigned int len;
    struct table_entry ent[TABLE_MAX_ENTRIES];
    char spec[TABLE_MAX_SPEC + 1];
    struct policy_dom **doms; /* attached domains, for name lookup */
    unsigned int nr_doms;
    struct policy_vcpu *cur[];
};

enum {
    TABLE_P_TABLE,
    TABLE_P_SLOT_US
};
static const struct policy_param table_pool_params[] = {
    [TABLE_P_TABLE] = {"table", POLICY_PARAM_STR, 0, TABLE_MAX_SPEC, 0,
                       "slot owners in order, e.g. A,B,A,C (domain or domain/vCPU)"},
    [TABLE_P_SLOT_US] = {"slot_us", POLICY_PARAM_INT, 1, 1000000, 1000,
                         "slot length in microseconds"},
    {NULL, 0, 0, 0, 0, NULL},
};

static const struct policy_param table_dom_params[] = {
    {NULL, 0, 0, 0, 0, NULL},
};

static struct table_priv *
table_priv(struct policy *pol)
{
    return pol->priv;
}

static struct table_vcpu *
table_vcpu(const struct policy_vcpu *v)
{
    return v->priv;
}

/* Parse one entry "name" or "name/N" of at most TABLE_NAME_MAX-1 bytes. */
static int
table_parse_entry(const char *s, size_t n, struct table_entry *e, char *err)
{
    const char *slash = memchr(s, '/', n);
    size_t namelen = slash ? (size_t)(slash - s) : n;

    if (namelen == 0 || namelen >= TABLE_NAME_MAX) {
        snprintf(err, POLICY_ERRLEN, "table: entry '%.*s' needs a name of 1..%d bytes",
                 (int)(n > 32 ? 32 : n), s, TABLE_NAME_MAX - 1);
        return -EINVAL;
    }
    memcpy(e->name, s, namelen);
    e->name[namelen] = '\0';
    e->vcpu_index = -1;
    e->dom = NULL;
    if (slash != NULL) {
        char num[12];
        size_t k = n - namelen - 1;
        char *end;
        long idx;

        if (k == 0 || k >= sizeof(num)) {
            snprintf(err, POLICY_ERRLEN, "table: bad vCPU number in '%.*s'", (int)n, s);
            return -EINVAL;
        }
        memcpy(num, slash + 1, k);
        num[k] = '\0';
        idx = strtol(num, &end, 10);
        if (*end != '\0' || idx < 0 || idx > 4095) {
            snprintf(err, POLICY_ERRLEN, "table: bad vCPU number in '%.*s'", (int)n, s);
            return -EINVAL;
        }
        e->vcpu_index = (int)idx;
    }
    return 0;
}

/*
 * Parse "A,B,A,C" into ent[]. The first pass only validates, the second
 * fills, so a bad spec changes nothing.
 */
static int
table_parse(struct table_priv *p, const char *spec, char *err)
{
    for (int commit = 0; commit < 2; commit++) {
        unsigned int len = 0;
        const char *s = spec;

        for (;;) {
            const char *comma = strchr(s, ',');
            size_t n = comma ? (size_t)(comma - s) : strlen(s);
            struct table_entry e;

            if (len == TABLE_MAX_ENTRIES) {
                snprintf(err, POLICY_ERRLEN, "table: more than %d entries", TABLE_MAX_ENTRIES);
                return -EINVAL;
            }
            if (table_parse_entry(s, n, &e, err) < 0)
                return -EINVAL;
            if (commit)
                p->ent[len] = e;
            len++;
            if (comma == NULL)
                break;
            s = comma + 1;
        }
        if (commit)
            p->len = len;
    }
    snprintf(p->spec, sizeof(p->spec), "%s", spec);
    return 0;
}

/* Point every entry at its attached domain (or NULL). */
static void
table_resolve(struct table_priv *p)
{
    for (unsigned int i = 0; i < p->len; i++) {
        p->ent[i].dom = NULL;
        for (unsigned int d = 0; d < p->nr_doms; d++)
            if (strcmp(p->doms[d]->name, p->ent[i].name) == 0)
                p->ent[i].dom = p->doms[d];
    }
}

static int
table_init(struct policy *pol, const struct policy_values *pv, char *err)
{
    struct table_priv *p;

    if (!(pv->set & (1U << TABLE_P_TABLE))) {
        snprintf(err, POLICY_ERRLEN, "table: parameter 'table' is required (e.g. table=A,B,A,C)");
        return -EINVAL;
    }
    p = calloc(1, sizeof(*p) + pol->nr_cpus * sizeof(p->cur[0]));
    if (p == NULL) {
        snprintf(err, POLICY_ERRLEN, "table: out of memory");
        return -ENOMEM;
    }
    if (table_parse(p, pv->s[TABLE_P_TABLE], err) < 0) {
        free(p);
        return -EINVAL;
    }
    p->slot_ns = (uint64_t)pv->i[TABLE_P_SLOT_US] * NSEC_PER_USEC;
    pol->priv = p;
    return 0;
}

static void
table_fini(struct policy *pol)
{
    struct table_priv *p = table_priv(pol);

    free(p->doms);
    free(p);
    pol->priv = NULL;
}

static int
table_dom_add(struct policy *pol, struct policy_dom *d, const struct policy_values *dv, char *err)
{
    struct table_priv *p = table_priv(pol);
    struct policy_dom **nd;

    (void)dv;
    nd = realloc(p->doms, (p->nr_doms + 1) * sizeof(*nd));
    if (nd == NULL) {
        snprintf(err, POLICY_ERRLEN, "table: out of memory");
        return -ENOMEM;
    }
    p->doms = nd;
    p->doms[p->nr_doms++] = d;
    table_resolve(p);
    return 0;
}

static void
table_dom_remove(struct policy *pol, struct policy_dom *d)
{
    struct table_priv *p = table_priv(pol);

    for (unsigned int i = 0; i < p->nr_doms; i++) {
        if (p->doms[i] == d) {
            p->doms[i] = p->doms[--p->nr_doms];
            break;
        }
    }
    table_resolve(p);
}

static void
table_vcpu_add(struct policy *pol, struct policy_vcpu *v, uint64_t now)
{
    unsigned int c = 0;

    (void)now;
    table_vcpu(v)->on_cpu = -1;
    while (!policy_vcpu_allowed(v, c))
        c++;
    policy_vcpu_move(pol, v, c);
}

static void
table_vcpu_remove(struct policy *pol, struct policy_vcpu *v, uint64_t now)
{
    struct table_vcpu *tv = table_vcpu(v);

    (void)now;
    if (tv->on_cpu >= 0)
        table_priv(pol)->cur[tv->on_cpu] = NULL;
    tv->on_cpu = -1;
}

/* Tickle idle CPUs: the waker may own their current slot. */
static void
table_wake(struct policy *pol, struct policy_vcpu *v, uint64_t now)
{
    struct table_priv *p = table_priv(pol);

    (void)now;
    for (unsigned int c = 0; c < pol->nr_cpus; c++)
        if (p->cur[c] == NULL && policy_vcpu_allowed(v, c))
            policy_tickle(pol, c);
}

static void
table_sleep(struct policy *pol, struct policy_vcpu *v, uint64_t now)
{
    (void)pol, (void)v, (void)now;
}

static void
table_charge(struct policy *pol, struct policy_vcpu *v, uint64_t ran_ns, uint64_t now)
{
    (void)pol, (void)now;
    table_vcpu(v)->run_ns += ran_ns;
}

static bool
table_eligible(const struct table_priv *p, const struct policy_vcpu *v, unsigned int cpu)
{
    int on = table_vcpu(v)->on_cpu;

    (void)p;
    return v->runnable && !v->parked && policy_vcpu_allowed(v, cpu) && (on < 0 || on == (int)cpu);
}

/* The vCPU an entry names, or the domain's next eligible one. */
static struct policy_vcpu *
table_choose(struct table_priv *p, const struct table_entry *e, unsigned int cpu)
{
    struct policy_dom *d = e->dom;
    struct table_dom *td;

    if (d == NULL)
        return NULL;
    if (e->vcpu_index >= 0) {
        for (unsigned int i = 0; i < d->nr_vcpus; i++)
            if ((int)d->vcpus[i]->index == e->vcpu_index && table_eligible(p, d->vcpus[i], cpu))
                return d->vcpus[i];
        return NULL;
    }
    td = d->priv;
    for (unsigned int k = 0; k < d->nr_vcpus; k++) {
        unsigned int i = (td->cursor + k) % d->nr_vcpus;

        if (table_eligible(p, d->vcpus[i], cpu)) {
            td->cursor = (i + 1) % d->nr_vcpus;
            return d->vcpus[i];
        }
    }
    return NULL;
}

static void
table_pick(struct policy *pol, unsigned int cpu, uint64_t now, struct policy_decision *out)
{
    struct table_priv *p = table_priv(pol);
    uint64_t slot = now / p->slot_ns;
    const struct table_entry *e = &p->ent[(slot + cpu) % p->len];
    struct policy_vcpu *prev = p->cur[cpu], *next;

    if (prev != NULL)
        table_vcpu(prev)->on_cpu = -1;
    next = table_choose(p, e, cpu);
    p->cur[cpu] = next;
    out->vcpu = next;
    out->until = (slot + 1) * p->slot_ns;
    if (next != NULL) {
        table_vcpu(next)->on_cpu = (int)cpu;
        table_vcpu(next)->picks++;
        policy_vcpu_move(pol, next, cpu);
    }
}

static int
table_set_params(struct policy *pol, struct policy_dom *d, const struct policy_values *val,
                 uint64_t now, char *err)
{
    struct table_priv *p = table_priv(pol);

    (void)now;
    if (d != NULL)
        return 0;
    if (val->set & (1U << TABLE_P_TABLE)) {
        if (table_parse(p, val->s[TABLE_P_TABLE], err) < 0)
            return -EINVAL;
        table_resolve(p);
    }
    if (val->set & (1U << TABLE_P_SLOT_US))
        p->slot_ns = (uint64_t)val->i[TABLE_P_SLOT_US] * NSEC_PER_USEC;
    for (unsigned int c = 0; c < pol->nr_cpus; c++)
        policy_tickle(pol, c);
    return 0;
}

static void
table_get_params(struct policy *pol, struct policy_dom *d, struct policy_sink *sk)
{
    struct table_priv *p = table_priv(pol);

    if (d != NULL)
        return;
    sk->put_str(sk, "table", p->spec);
    sk->put_int(sk, "slot_us", (int64_t)(p->slot_ns / NSEC_PER_USEC));
}

static void
table_vcpu_stats(struct policy *pol, struct policy_vcpu *v, struct policy_sink *sk)
{
    (void)pol;
    sk->put_int(sk, "run_ns", (int64_t)table_vcpu(v)->run_ns);
    sk->put_int(sk, "picks", (int64_t)table_vcpu(v)->picks);
}

const struct policy_ops table_ops = {
    .name = "table",
    .summary = "fixed cyclic slot table, e.g. table=A,B,A,C slot_us=50",
    .pool_params = table_pool_params,
    .dom_params = table_dom_params,
    .dom_priv_size = sizeof(struct table_dom),
    .vcpu_priv_size = sizeof(struct table_vcpu),
    .init = table_init,
    .fini = table_fini,
    .dom_add = table_dom_add,
    .dom_remove = table_dom_remove,
    .vcpu_add = table_vcpu_add,
    .vcpu_remove = table_vcpu_remove,
    .wake = table_wake,
    .sleep = table_sleep,
    .charge = table_charge,
    .pick = table_pick,
    .set_params = table_set_params,
    .get_params = table_get_params,
    .vcpu_stats = table_vcpu_stats,
};
