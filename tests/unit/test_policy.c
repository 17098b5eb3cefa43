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
    uint64_t aff[2] = {1ULL << 5, 0};

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

static Suite *
policy_suite(void)
{
    Suite *s = suite_create("policy");
    TCase *tc = tcase_create("params");

    tcase_add_loop_test(tc, test_values_parse, 0, sizeof(parse_cases) / sizeof(parse_cases[0]));
    tcase_add_test(tc, test_values_defaults_and_set);
    tcase_add_test(tc, test_registry);
    suite_add_tcase(s, tc);
    tc = tcase_create("pool");
    tcase_add_test(tc, test_pool_attach_rules);
    tcase_add_test(tc, test_pool_switch_atomic);
    tcase_add_test(tc, test_pool_detach_reattach);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(policy_suite());
}
