/* SPDX-License-Identifier: ISC */
/*
 * policy.c - the table of built-in policies, instance set-up, and the
 * schema-driven parsing of "key=value" parameters shared by all of them.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy.h"
#include "policies.h"

/* The order is the order of `vcpuschedctl help`. */
static const struct policy_ops *const policies[] = {
    &credit_ops, &credit2_ops, &rr_ops, &table_ops, NULL,
};

const struct policy_ops *const *
policy_all(void)
{
    return policies;
}

const struct policy_ops *
policy_find(const char *name)
{
    for (size_t i = 0; policies[i] != NULL; i++)
        if (strcmp(policies[i]->name, name) == 0)
            return policies[i];
    return NULL;
}

static int
schema_check(const struct policy_ops *ops, const struct policy_param *schema, char *err)
{
    size_t n = 0;

    for (; schema != NULL && schema[n].name != NULL; n++) {
        if (policy_param_index(schema, schema[n].name) != (int)n) {
            snprintf(err, POLICY_ERRLEN, "policy %s: duplicate parameter %s", ops->name,
                     schema[n].name);
            return -EINVAL;
        }
    }
    if (n > VS_PARAMS_MAX) {
        snprintf(err, POLICY_ERRLEN, "policy %s: too many parameters", ops->name);
        return -EINVAL;
    }
    return 0;
}

/*
 * Like Xen's scheduler_init: refuse a table with duplicate names or a
 * missing mandatory op, once, before anything uses it.
 */
static bool
schema_empty(const struct policy_param *schema)
{
    return schema == NULL || schema[0].name == NULL;
}

int
policy_ops_check(const struct policy_ops *o, char *err)
{
    if (o->name == NULL || o->init == NULL || o->vcpu_add == NULL || o->vcpu_remove == NULL ||
        o->wake == NULL || o->sleep == NULL || o->pick == NULL ||
        (o->set_params == NULL && !(schema_empty(o->pool_params) && schema_empty(o->dom_params)))) {
        snprintf(err, POLICY_ERRLEN, "policy %s: mandatory op missing", o->name ? o->name : "?");
        return -EINVAL;
    }
    if (schema_check(o, o->pool_params, err) < 0 || schema_check(o, o->dom_params, err) < 0)
        return -EINVAL;
    return 0;
}

int
policy_registry_check(char *err)
{
    for (size_t i = 0; policies[i] != NULL; i++) {
        const struct policy_ops *o = policies[i];

        if (policy_ops_check(o, err) < 0)
            return -EINVAL;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(policies[j]->name, o->name) == 0) {
                snprintf(err, POLICY_ERRLEN, "policy %s: registered twice", o->name);
                return -EINVAL;
            }
        }
    }
    return 0;
}

int
policy_param_index(const struct policy_param *schema, const char *name)
{
    for (int i = 0; schema != NULL && schema[i].name != NULL; i++)
        if (strcmp(schema[i].name, name) == 0)
            return i;
    return -1;
}

void
policy_values_defaults(const struct policy_param *schema, struct policy_values *out)
{
    memset(out, 0, sizeof(*out));
    for (int i = 0; schema != NULL && schema[i].name != NULL; i++)
        out->i[i] = schema[i].def;
}

static int
parse_int(const struct policy_param *p, const char *val, int64_t *out, char *err)
{
    char *end;
    long long x;

    errno = 0;
    x = strtoll(val, &end, 10);
    if (val[0] == '\0' || *end != '\0' || errno == ERANGE) {
        snprintf(err, POLICY_ERRLEN, "%s: '%.32s' is not an integer", p->name, val);
        return -EINVAL;
    }
    if (x < p->min || x > p->max) {
        snprintf(err, POLICY_ERRLEN, "%s: %lld is out of range [%" PRId64 ", %" PRId64 "]", p->name,
                 x, p->min, p->max);
        return -EINVAL;
    }
    *out = x;
    return 0;
}

static int
parse_bool(const struct policy_param *p, const char *val, int64_t *out, char *err)
{
    static const char *const yes[] = {"on", "true", "yes", "1"};
    static const char *const no[] = {"off", "false", "no", "0"};

    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcasecmp(val, yes[i]) == 0) {
            *out = 1;
            return 0;
        }
        if (strcasecmp(val, no[i]) == 0) {
            *out = 0;
            return 0;
        }
    }
    snprintf(err, POLICY_ERRLEN, "%s: '%.32s' is not on/off", p->name, val);
    return -EINVAL;
}

int
policy_values_parse(const struct policy_param *schema, const struct kv *kv, size_t n,
                    bool ignore_unknown, struct policy_values *out, char *err)
{
    policy_values_defaults(schema, out);
    for (size_t k = 0; k < n; k++) {
        int i = policy_param_index(schema, kv[k].key);
        const struct policy_param *p;

        if (i < 0) {
            if (ignore_unknown)
                continue;
            snprintf(err, POLICY_ERRLEN, "unknown parameter '%.32s'", kv[k].key);
            return -EINVAL;
        }
        p = &schema[i];
        if (out->set & (1U << i)) {
            snprintf(err, POLICY_ERRLEN, "%s: given twice", p->name);
            return -EINVAL;
        }
        switch (p->type) {
        case POLICY_PARAM_INT:
            if (parse_int(p, kv[k].val, &out->i[i], err) < 0)
                return -EINVAL;
            break;
        case POLICY_PARAM_BOOL:
            if (parse_bool(p, kv[k].val, &out->i[i], err) < 0)
                return -EINVAL;
            break;
        case POLICY_PARAM_STR:
            if (strlen(kv[k].val) > (size_t)p->max || kv[k].val[0] == '\0') {
                snprintf(err, POLICY_ERRLEN, "%s: must be 1..%" PRId64 " characters", p->name,
                         p->max);
                return -EINVAL;
            }
            out->s[i] = kv[k].val;
            break;
        }
        out->set |= 1U << i;
    }
    return 0;
}

int
policy_create(struct policy *pol, const struct policy_ops *ops, const struct policy_cpu *cpus,
              unsigned int nr_cpus, const struct kv *kv, size_t n, char *err)
{
    struct policy_values pv;
    int r;

    if (nr_cpus == 0 || nr_cpus > CPUSET_MAX) {
        snprintf(err, POLICY_ERRLEN, "a pool needs 1..%d CPUs, not %u", CPUSET_MAX, nr_cpus);
        return -EINVAL;
    }
    r = policy_values_parse(ops->pool_params, kv, n, false, &pv, err);
    if (r < 0)
        return r;
    memset(pol, 0, sizeof(*pol));
    pol->ops = ops;
    pol->nr_cpus = nr_cpus;
    pol->cpus = cpus;
    pol->timer = POLICY_NEVER;
    r = ops->init(pol, &pv, err);
    if (r < 0)
        memset(pol, 0, sizeof(*pol));
    return r;
}

void
policy_destroy(struct policy *pol)
{
    if (pol->ops != NULL && pol->ops->fini != NULL)
        pol->ops->fini(pol);
    else if (pol->ops != NULL)
        free(pol->priv);
    memset(pol, 0, sizeof(*pol));
}

struct policy_vcpu *
policy_take_dirty(struct policy *pol)
{
    struct policy_vcpu *v = pol->dirty;

    if (v != NULL) {
        pol->dirty = v->next_dirty;
        v->next_dirty = NULL;
        v->dirty = false;
    }
    return v;
}
