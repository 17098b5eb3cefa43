/* SPDX-License-Identifier: ISC */
/*
 * test_unattached.c - opted-in libvirt domains the daemon does not manage
 * (daemon/unattached.c): listed once each with the latest reason and the
 * first time, taken off when managed, pruned when libvirt no longer runs
 * them, and bounded with the oldest giving way.
 */
#include <stdio.h>
#include <string.h>

#include "daemon/unattached.h"
#include "testutil.h"

static struct json_object *
domains(struct json_object *o)
{
    return json_object_object_get(o, "domains");
}

static const char *
member(struct json_object *a, size_t i, const char *key)
{
    return json_object_get_string(json_object_object_get(json_object_array_get_idx(a, i), key));
}

static int64_t
since(struct json_object *a, size_t i)
{
    return json_object_get_int64(
        json_object_object_get(json_object_array_get_idx(a, i), "since_s"));
}

START_TEST(set_update_clear)
{
    struct unattached *u;
    struct json_object *o;

    ck_assert_int_eq(unattached_create(&u), 0);
    unattached_set(u, "web1", UNATTACHED_POOL, "policy: no pool runs policy rr", (int64_t)SEC(10));
    unattached_set(u, "db", UNATTACHED_METADATA, "weight: 'lots'", (int64_t)SEC(11));
    /* Again with another reason: one entry, the new reason, the first time. */
    unattached_set(u, "web1", UNATTACHED_ATTACH, "too many threads", (int64_t)SEC(20));
    o = unattached_json(u, (int64_t)SEC(30), NULL, NULL);
    ck_assert_uint_eq(json_object_array_length(domains(o)), 2);
    ck_assert_str_eq(member(domains(o), 0, "domain"), "web1");
    ck_assert_str_eq(member(domains(o), 0, "reason"), "attach");
    ck_assert_str_eq(member(domains(o), 0, "error"), "too many threads");
    ck_assert_int_eq(since(domains(o), 0), 20);
    ck_assert_str_eq(member(domains(o), 1, "reason"), "metadata");
    json_object_put(o);

    unattached_clear(u, "web1");
    unattached_clear(u, "never-listed");
    o = unattached_json(u, (int64_t)SEC(30), NULL, NULL);
    ck_assert_uint_eq(json_object_array_length(domains(o)), 1);
    ck_assert_str_eq(member(domains(o), 0, "domain"), "db");
    json_object_put(o);
    unattached_destroy(u);
}
END_TEST

static bool
gone_db(void *arg, const char *domain)
{
    (*(int *)arg)++;
    return strcmp(domain, "db") == 0;
}

/* A domain destroyed while libvirt's events were lost goes at the next read. */
START_TEST(gone_domains_pruned)
{
    struct unattached *u;
    struct json_object *o;
    int asked = 0;

    ck_assert_int_eq(unattached_create(&u), 0);
    unattached_set(u, "db", UNATTACHED_THREADS, "no status file", 0);
    unattached_set(u, "web", UNATTACHED_POOL, "no pools", 0);
    o = unattached_json(u, 0, gone_db, &asked);
    ck_assert_int_eq(asked, 2);
    ck_assert_uint_eq(json_object_array_length(domains(o)), 1);
    ck_assert_str_eq(member(domains(o), 0, "domain"), "web");
    json_object_put(o);
    o = unattached_json(u, 0, NULL, NULL);
    ck_assert_uint_eq(json_object_array_length(domains(o)), 1);
    json_object_put(o);
    unattached_destroy(u);
}
END_TEST

/* Past the bound the oldest gives way, counted. */
START_TEST(bounded_oldest_dropped)
{
    struct unattached *u;
    struct json_object *o;
    char name[32];

    ck_assert_int_eq(unattached_create(&u), 0);
    for (int i = 0; i < UNATTACHED_MAX + 3; i++) {
        snprintf(name, sizeof(name), "d%d", i);
        unattached_set(u, name, UNATTACHED_POOL, "no pools", (int64_t)SEC(i));
    }
    o = unattached_json(u, (int64_t)SEC(UNATTACHED_MAX + 3), NULL, NULL);
    ck_assert_uint_eq(json_object_array_length(domains(o)), UNATTACHED_MAX);
    ck_assert_str_eq(member(domains(o), 0, "domain"), "d3");
    ck_assert_int_eq(json_object_get_int64(json_object_object_get(o, "dropped")), 3);
    json_object_put(o);
    unattached_destroy(u);
}
END_TEST

START_TEST(reason_names)
{
    ck_assert_str_eq(unattached_reason_name(UNATTACHED_METADATA), "metadata");
    ck_assert_str_eq(unattached_reason_name(UNATTACHED_POOL), "pool");
    ck_assert_str_eq(unattached_reason_name(UNATTACHED_THREADS), "threads");
    ck_assert_str_eq(unattached_reason_name(UNATTACHED_ATTACH), "attach");
    ck_assert_str_eq(unattached_reason_name((enum unattached_reason)42), "unknown");
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("unattached");
    TCase *tc = tcase_create("unattached");

    tcase_add_test(tc, set_update_clear);
    tcase_add_test(tc, gone_domains_pruned);
    tcase_add_test(tc, bounded_oldest_dropped);
    tcase_add_test(tc, reason_names);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
