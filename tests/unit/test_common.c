/* SPDX-License-Identifier: ISC */
/*
 * test_common.c - what every layer shares (vcpusched/common/): the one CPU
 * list parser (valid and malformed), its formatter, CPU set operations on
 * sets wider than a word, the name rule and key=value splitting.
 */
#include <stdio.h>
#include <string.h>

#include "common/cpuset.h"
#include "common/kv.h"
#include "common/names.h"
#include "testutil.h"

#define ERRLEN 256

struct list_case {
    const char *in;
    int ret;
    unsigned int n;
    int cpus[8]; /* first n (at most 8) */
};

static const struct list_case list_cases[] = {
    {"1", 0, 1, {1}},
    {"0", 0, 1, {0}},
    {"1-3,5,7-8", 0, 6, {1, 2, 3, 5, 7, 8}},
    {"0-1\n", 0, 2, {0, 1}}, /* as sysfs writes it */
    {"", 0, 0, {0}},
    {"\n", 0, 0, {0}},
    {"5,1", 0, 2, {1, 5}}, /* sorted */
    {"3-3", 0, 1, {3}},
    {"1023", 0, 1, {1023}},
    {"007", 0, 1, {7}},
    /* Malformed. */
    {"1-", -EINVAL, 0, {0}},
    {"-1", -EINVAL, 0, {0}},
    {"3-1", -EINVAL, 0, {0}},
    {"1,,2", -EINVAL, 0, {0}},
    {"1,", -EINVAL, 0, {0}},
    {",1", -EINVAL, 0, {0}},
    {"a", -EINVAL, 0, {0}},
    {"1 2", -EINVAL, 0, {0}},
    {" 1", -EINVAL, 0, {0}},
    {"+1", -EINVAL, 0, {0}},
    {"1-2-3", -EINVAL, 0, {0}},
    {"0-7:2/4", -EINVAL, 0, {0}},
    {"1,1", -EINVAL, 0, {0}},
    {"1-3,2", -EINVAL, 0, {0}},
    {"1\n\n", -EINVAL, 0, {0}},
    {"0x1", -EINVAL, 0, {0}},
    /* Out of range; a long list. */
    {"1024", -ERANGE, 0, {0}},
    {"99999999999999999999", -ERANGE, 0, {0}},
    {"0-1024", -ERANGE, 0, {0}},
    {"0-8", 0, 9, {0, 1, 2, 3, 4, 5, 6, 7}}, /* first 8 checked */
};

START_TEST(test_cpulist_parse_table)
{
    const struct list_case *c = &list_cases[_i];
    char err[ERRLEN] = "";
    struct cpuset set;
    int cpus[CPUSET_MAX];
    unsigned int n = 99;
    int r = cpulist_parse(c->in, &set, err, sizeof(err));

    ck_assert_msg(r == c->ret, "'%s': got %d (%s), want %d", c->in, r, err, c->ret);
    if (r < 0) {
        ck_assert_msg(err[0] != '\0', "'%s': no message", c->in);
        return;
    }
    ck_assert_int_eq(cpuset_to_array(&set, cpus, CPUSET_MAX, &n), 0);
    ck_assert_uint_eq(n, c->n);
    for (unsigned int i = 0; i < n && i < 8; i++)
        ck_assert_int_eq(cpus[i], c->cpus[i]);
}
END_TEST

START_TEST(test_cpulist_format)
{
    static const char *const lists[] = {"1-3,5,7-8", "0", "", "0-1023", "63-64,127-128,1023"};
    char buf[CPULIST_TEXT_MAX], err[ERRLEN];
    struct cpuset s;

    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        ck_assert_msg(cpulist_parse(lists[i], &s, err, sizeof(err)) == 0, "%s", err);
        ck_assert_str_eq(cpulist_format(&s, buf, sizeof(buf)), lists[i]);
    }
}
END_TEST

/* Sets wider than a word: iteration, counts and the set operations. */
START_TEST(test_cpuset_ops)
{
    struct cpuset a, b, c;
    int cpu, n = 0, seen[4];
    unsigned int k;
    char err[ERRLEN];

    ck_assert_int_eq(cpulist_parse("0,63,64,1023", &a, err, sizeof(err)), 0);
    cpuset_for_each(cpu, &a)
    {
        ck_assert_int_lt(n, 4);
        seen[n++] = cpu;
    }
    ck_assert_int_eq(n, 4);
    ck_assert_int_eq(seen[1], 63);
    ck_assert_int_eq(seen[2], 64);
    ck_assert_int_eq(seen[3], 1023);
    ck_assert_int_eq(cpuset_next(&a, 65), 1023);
    ck_assert_int_eq(cpuset_next(&a, 1024), -1);
    ck_assert(!cpuset_has(&a, 1024));
    cpuset_fill(&b, 256);
    ck_assert_uint_eq(cpuset_count(&b), 256);
    ck_assert(cpuset_has(&b, 255) && !cpuset_has(&b, 256));
    ck_assert(cpuset_intersects(&a, &b));
    c = a;
    cpuset_and(&c, &b);
    ck_assert_uint_eq(cpuset_count(&c), 3);
    ck_assert(cpuset_subset(&c, &a) && cpuset_subset(&c, &b) && !cpuset_subset(&a, &b));
    cpuset_andnot(&a, &b);
    ck_assert_uint_eq(cpuset_count(&a), 1);
    cpuset_or(&a, &c);
    ck_assert_uint_eq(cpuset_count(&a), 4);
    cpuset_clear(&a, 1023);
    ck_assert(cpuset_equal(&a, &c));
    cpuset_zero(&a);
    ck_assert(cpuset_empty(&a));
    ck_assert_int_eq(cpuset_to_array(&b, seen, 4, &k), -E2BIG);
}
END_TEST

START_TEST(test_names)
{
    static const char *const good[] = {
        "web1", "a", "A.b:c+d@e-f_g",
        "123456789012345678901234567890123456789012345678901234567890123"};
    static const char *const bad[] = {
        "",    "a b",
        "a/b", "caf\xc3\xa9",
        "a\n", "1234567890123456789012345678901234567890123456789012345678901234"};

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        ck_assert_msg(names_valid(good[i]), "'%s' refused", good[i]);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(!names_valid(bad[i]), "'%s' accepted", bad[i]);
    ck_assert(names_key_valid("ratelimit_us"));
    ck_assert(!names_key_valid("Weight"));
    ck_assert(!names_key_valid("a-b"));
    ck_assert(!names_key_valid(""));
    ck_assert(!names_key_valid("abcdefghijklmnopqrstuvwxyz0123456"));
}
END_TEST

START_TEST(test_kv_split)
{
    struct kv kv[2];
    char buf[] = "a=1\tb= c=3", err[ERRLEN];
    char bad[] = "a=1 b", empty[] = "=1";
    size_t n;

    ck_assert_int_eq(kv_split(buf, kv, 2, &n, err, sizeof(err)), -E2BIG);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(kv[0].key, "a");
    ck_assert_str_eq(kv[1].val, "");
    ck_assert_int_eq(kv_split(bad, kv, 2, &n, err, sizeof(err)), -EINVAL);
    ck_assert_msg(strstr(err, "'b' is not key=value") != NULL, "%s", err);
    ck_assert_int_eq(kv_split(empty, kv, 2, &n, err, sizeof(err)), -EINVAL);
}
END_TEST

static Suite *
common_suite(void)
{
    Suite *s = suite_create("common");
    TCase *tc = tcase_create("common");

    tcase_add_loop_test(tc, test_cpulist_parse_table, 0,
                        (int)(sizeof(list_cases) / sizeof(list_cases[0])));
    tcase_add_test(tc, test_cpulist_format);
    tcase_add_test(tc, test_cpuset_ops);
    tcase_add_test(tc, test_names);
    tcase_add_test(tc, test_kv_split);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(common_suite());
}
