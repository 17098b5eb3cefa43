/* SPDX-License-Identifier: ISC */
/*
 * test_policy.c - the policy registry, parameter parsing, and the pool
 * layer (attach rules, parameter store, atomic policy switches).
 */
#include <string.h>

#include "testutil.h"

static const struct policy_param schema[] = {
    {"weight", POLICY_PARAM_INT, 1, 65535, 256, "w"},
    {"boost", POLICY_PARAM_BOOL, 0, 1, 1, "b"},
    {"name", POLICY_PARAM_STR, 0, 8, 0, "n"},
    {NULL, 0, 0, 0, 0, NULL},
};

struct parse_case {
    const char *line;
    int ret;
    const char *msg; /* substring of the error, or of nothing */
};

static const struct parse_case parse_cases[] = {
    {"", 0, ""},
    {"weight=512", 0, ""},
    {"weight=1 boost=off name=abc", 0, ""},
    {"weight=0", -EINVAL, "out of range"},
    {"weight=65536", -EINVAL, "out of range"},
    {"weight=-5", -EINVAL, "out of range"},
    {"weight=12x", -EINVAL, "not an integer"},
    {"weight=", -EINVAL, "not an integer"},
    {"weight=99999999999999999999999", -EINVAL, "not an integer"},
    {"boost=maybe", -EINVAL, "on/off"},
    {"name=toolongname", -EINVAL, "characters"},
    {"cap=5", -EINVAL, "unknown parameter"},
    {"weight=5 weight=6", -EINVAL, "twice"},
    {"weight", -EINVAL, "not key=value"},
    {"=5", -EINVAL, "not key=value"},
};

START_TEST(test_values_parse)
{
    const struct parse_case *pc = &parse_cases[_i];
    struct kv kv[VS_PARAMS_MAX];
    struct policy_values v;
    char buf[128], err[POLICY_ERRLEN] = "";
    size_t n;
    int r;

    snprintf(buf, sizeof(buf), "%s", pc->line);
    r = kv_split(buf, kv, VS_PARAMS_MAX, &n, err, POLICY_ERRLEN);
    if (r == 0)
        r = policy_values_parse(schema, kv, n, false, &v, err);
    ck_assert_msg(r == pc->ret, "'%s': got %d (%s)", pc->line, r, err);
    ck_assert_msg(strstr(err, pc->msg) != NULL, "'%s': message '%s'", pc->line, err);
}
END_TEST

START_TEST(test_values_defaults_and_set)
{
    struct kv kv[] = {{"boost", "off"}, {"other", "x"}};
    struct policy_values v;
    char err[POLICY_ERRLEN];

    ck_assert_int_eq(policy_values_parse(schema, kv, 2, true, &v, err), 0);
    ck_assert_uint_eq(v.set, 1U << 1);
    ck_assert_int_eq(v.i[0], 256);
    ck_assert_int_eq(v.i[1], 0);
}
END_TEST

START_TEST(test_registry)
{
    char err[POLICY_ERRLEN] = "";

    ck_assert_msg(policy_registry_check(err) == 0, "%s", err);
    ck_assert_ptr_nonnull(policy_find("rr"));
    ck_assert_ptr_nonnull(policy_find("table"));
    ck_assert_ptr_null(policy_find("nosuch"));
}
END_TEST

/* Attach rules: names, duplicates, vCPU counts, affinity outside the pool. */
START_TEST(test_pool_attach_rules)
{
    struct sim s;
    char err[POLICY_ERRLEN];
    struct cpuset aff[2] = {cpuset_of_word(1ULL << 5), cpuset_of_word(0)};

    sim_start(&s, "rr", 2, NULL);
    sim_add_ok(&s, "web-1.example", 1, sim_busy(), NULL);
    ck_assert_ptr_null(sim_dom_add(&s, "web-1.example", 1, sim_busy(), 0, NULL, err));
    ck_assert_ptr_nonnull(strstr(err, "already attached"));
    ck_assert_ptr_null(sim_dom_add(&s, "bad name", 1, sim_busy(), 0, NULL, err));
    ck_assert_ptr_null(sim_dom_add(&s, "", 1, sim_busy(), 0, NULL, err));
    ck_assert_ptr_null(sim_dom_add(&s, "x/y", 1, sim_busy(), 0, NULL, err));
    ck_assert_int_eq(pool_dom_add(&s.pool, "z", 0, NULL, NULL, 0, s.now, NULL, err), -EINVAL);
    ck_assert_int_eq(pool_dom_add(&s.pool, "z", 2, aff, NULL, 0, s.now, NULL, err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "may not use"));
    ck_assert_uint_eq(s.pool.nr_doms, 1);
    sim_fini(&s);
}
END_TEST

/* A failed switch leaves the pool exactly as it was; a good one keeps all. */
START_TEST(test_pool_switch_atomic)
{
    struct sim s;
    struct pool_dom *a, *b;
    char err[POLICY_ERRLEN];

    sim_start(&s, "rr", 1, "slice_us=1000");
    a = sim_add_ok(&s, "A", 1, sim_busy(), NULL);
    b = sim_add_ok(&s, "B", 1, sim_busy(), NULL);
    sim_run(&s, MS(10));
    ck_assert_int_eq(sim_switch(&s, "table", "slot_us=100", err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "required"));
    ck_assert_int_eq(sim_switch(&s, "nosuch", NULL, err), -EINVAL);
    ck_assert_str_eq(pool_policy_name(&s.pool), "rr");
    sim_reset_stats(&s);
    sim_run(&s, MS(10));
    ck_assert_share(&s, a, 0.5, 0.001);

    ck_assert_int_eq(sim_switch(&s, "table", "table=A,A,A,B slot_us=100", err), 0);
    ck_assert_str_eq(pool_policy_name(&s.pool), "table");
    sim_reset_stats(&s);
    sim_run(&s, MS(100));
    ck_assert_share(&s, a, 0.75, 0.001);
    ck_assert_share(&s, b, 0.25, 0.001);
    ck_assert_int_eq(sim_switch(&s, "rr", NULL, err), 0);
    sim_reset_stats(&s);
    sim_run(&s, MS(100));
    ck_assert_share(&s, a, 0.5, 0.001);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* A move's parameters: the domain's own that the new policy knows, given keys on top. */
START_TEST(test_pool_dom_params_for)
{
    struct sim s;
    struct pool_dom *d;
    struct kv out[VS_PARAMS_MAX], cap[] = {{"cap", "25"}}, bad[] = {{"weight", "0"}},
                                  odd[] = {{"slice_us", "5"}};
    char err[POLICY_ERRLEN] = "";
    int n;

    sim_start(&s, "credit", 1, NULL);
    d = sim_add_ok(&s, "A", 2, sim_busy(), "weight=512 cap=50");
    /* To credit2 (same keys): both carried. */
    n = pool_dom_params_for(d, policy_find("credit2"), NULL, 0, out, err);
    ck_assert_int_eq(n, 2);
    ck_assert_str_eq(out[0].key, "weight");
    ck_assert_str_eq(out[0].val, "512");
    ck_assert_str_eq(out[1].key, "cap");
    /* A given key replaces the carried one, once. */
    n = pool_dom_params_for(d, policy_find("credit2"), cap, 1, out, err);
    ck_assert_int_eq(n, 2);
    ck_assert_str_eq(out[0].key, "weight");
    ck_assert_str_eq(out[1].key, "cap");
    ck_assert_str_eq(out[1].val, "25");
    /* To rr (no domain parameters): none carried, any given one refused. */
    ck_assert_int_eq(pool_dom_params_for(d, policy_find("rr"), NULL, 0, out, err), 0);
    ck_assert_int_eq(pool_dom_params_for(d, policy_find("rr"), odd, 1, out, err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "slice_us"));
    /* Given values are checked strictly against the new policy. */
    ck_assert_int_eq(pool_dom_params_for(d, policy_find("credit2"), bad, 1, out, err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "weight"));
    /* Nothing of the domain changed. */
    ck_assert_uint_eq(d->params.n, 2);
    ck_assert_str_eq(d->params.kv[1].val, "50");
    sim_fini(&s);
}
END_TEST

/* Removing a domain mid-run, then re-attaching under the same name. */
START_TEST(test_pool_detach_reattach)
{
    struct sim s;
    struct pool_dom *a;

    sim_start(&s, "rr", 1, NULL);
    a = sim_add_ok(&s, "A", 2, sim_duty(US(300), US(700)), NULL);
    sim_add_ok(&s, "B", 1, sim_busy(), NULL);
    sim_run(&s, MS(5));
    sim_dom_remove(&s, a);
    a = sim_add_ok(&s, "A", 1, sim_busy(), NULL);
    sim_run(&s, MS(20));
    ck_assert_uint_eq(s.pool.nr_doms, 2);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * A policy with only the mandatory ops (one CPU, vCPUs run in turn, no
 * parameters): the optional ones take their defaults through the
 * wrappers, and the ops check refuses tables that lack a mandatory op.
 */
struct mini_priv {
    struct policy_vcpu *v[4];
    unsigned int n, next;
};

static int
mini_init(struct policy *pol, const struct policy_values *pv, char *err)
{
    (void)pv, (void)err;
    pol->priv = calloc(1, sizeof(struct mini_priv));
    return pol->priv != NULL ? 0 : -ENOMEM;
}

static void
mini_vcpu_add(struct policy *pol, struct policy_vcpu *v, uint64_t now)
{
    struct mini_priv *p = pol->priv;

    (void)now;
    if (p->n < 4)
        p->v[p->n++] = v;
}

static void
mini_vcpu_remove(struct policy *pol, struct policy_vcpu *v, uint64_t now)
{
    struct mini_priv *p = pol->priv;

    (void)now;
    for (unsigned int i = 0; i < p->n; i++)
        if (p->v[i] == v)
            p->v[i] = p->v[--p->n];
}

static void
mini_event(struct policy *pol, struct policy_vcpu *v, uint64_t now)
{
    (void)v, (void)now;
    policy_tickle(pol, 0);
}

static void
mini_pick(struct policy *pol, unsigned int cpu, uint64_t now, struct policy_decision *out)
{
    struct mini_priv *p = pol->priv;

    (void)cpu;
    for (unsigned int k = 0; k < p->n; k++) {
        struct policy_vcpu *v = p->v[(p->next + k) % p->n];

        if (v->runnable) {
            p->next = (p->next + k + 1) % p->n;
            out->vcpu = v;
            out->until = now + NSEC_PER_MSEC;
            return;
        }
    }
}

static const struct policy_ops mini_ops = {
    .name = "mini",
    .init = mini_init,
    .vcpu_add = mini_vcpu_add,
    .vcpu_remove = mini_vcpu_remove,
    .wake = mini_event,
    .sleep = mini_event,
    .pick = mini_pick,
};

START_TEST(test_optional_ops_default)
{
    static const struct policy_cpu cpu0 = {0, 0, 0, 0};
    struct policy_ops no_pick = mini_ops, params_no_set = mini_ops;
    static const struct policy_param one[] = {{"x", POLICY_PARAM_INT, 0, 9, 0, "x"},
                                              {NULL, 0, 0, 0, 0, NULL}};
    struct policy_dom d = {.id = 1, .name = "d", .nr_vcpus = 1};
    struct policy_vcpu v = {.id = 1, .dom = &d};
    struct policy_vcpu *vs[1] = {&v};
    struct policy_decision out = {NULL, POLICY_NEVER};
    struct policy_values none = {0};
    char err[POLICY_ERRLEN] = "";
    struct policy pol;

    ck_assert_msg(policy_ops_check(&mini_ops, err) == 0, "%s", err);
    no_pick.pick = NULL;
    ck_assert_int_eq(policy_ops_check(&no_pick, err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "mandatory op missing"));
    params_no_set.pool_params = one;
    ck_assert_int_eq(policy_ops_check(&params_no_set, err), -EINVAL);
    d.vcpus = vs;
    cpuset_fill(&v.affinity, 1);
    ck_assert_int_eq(policy_create(&pol, &mini_ops, &cpu0, 1, NULL, 0, err), 0);
    ck_assert_int_eq(policy_dom_add(&pol, &d, &none, err), 0); /* default: accept */
    mini_ops.vcpu_add(&pol, &v, 0);
    v.runnable = true;
    policy_charge(&pol, &v, 1000, 1); /* default: ignored */
    policy_yield(&pol, &v, 2);        /* default: nothing */
    policy_timer(&pol, 3);            /* default: nothing */
    ck_assert_int_eq(policy_set_params(&pol, NULL, &none, 4, err), 0);
    policy_get_params(&pol, NULL, NULL); /* default: writes nothing (no sink used) */
    policy_vcpu_stats(&pol, &v, NULL);
    mini_ops.pick(&pol, 0, 5, &out);
    ck_assert_ptr_eq(out.vcpu, &v);
    mini_ops.vcpu_remove(&pol, &v, 6);
    policy_dom_remove(&pol, &d); /* default: nothing */
    policy_destroy(&pol);        /* default fini: frees pol->priv (ASan checks the leak) */
}
END_TEST

static Suite *
policy_suite(void)
{
    Suite *s = suite_create("policy");
    TCase *tc = tcase_create("params");

    tcase_add_loop_test(tc, test_values_parse, 0, sizeof(parse_cases) / sizeof(parse_cases[0]));
    tcase_add_test(tc, test_values_defaults_and_set);
    tcase_add_test(tc, test_registry);
    tcase_add_test(tc, test_optional_ops_default);
    suite_add_tcase(s, tc);
    tc = tcase_create("pool");
    tcase_add_test(tc, test_pool_attach_rules);
    tcase_add_test(tc, test_pool_switch_atomic);
    tcase_add_test(tc, test_pool_dom_params_for);
    tcase_add_test(tc, test_pool_detach_reattach);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(policy_suite());
}
