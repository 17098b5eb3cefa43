/* SPDX-License-Identifier: ISC */
/*
 * test_qmp_vcpu.c - query-cpus-fast replies -> vCPU lists: captured
 * replies (1 and 4 vCPUs, NUMA/dies, a hot-plugged CPU, single-threaded
 * TCG), error replies, and a table of malformed entries.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qmp.h"
#include "qmp_testlib.h"

/* Parse a fixture reply as text, the way libvirt hands it over. */
static int
parse_fixture(const char *file, struct qmp_vcpus *vs, char *err, size_t errlen)
{
    char *text = qmp_fixture(file, NULL);
    int r = qmp_vcpus_parse_reply(text, vs, err, errlen);

    free(text);
    return r;
}

START_TEST(test_vcpu_one)
{
    char err[QMP_ERRLEN] = "";
    struct qmp_vcpus vs;

    ck_assert_int_eq(parse_fixture("query-cpus-fast-1.json", &vs, err, sizeof(err)), 0);
    ck_assert_uint_eq(vs.n, 1);
    ck_assert_int_eq(vs.v[0].cpu_index, 0);
    ck_assert_int_gt(vs.v[0].thread_id, 1);
    ck_assert_str_eq(vs.v[0].qom_path, "/machine/unattached/device[0]");
    ck_assert_str_eq(vs.v[0].target, "x86_64");
    ck_assert_int_eq(vs.v[0].props.socket_id, 0);
    ck_assert_int_eq(vs.v[0].props.core_id, 0);
    ck_assert_int_eq(vs.v[0].props.thread_id, 0);
    ck_assert_int_eq(vs.v[0].props.node_id, -1);
    ck_assert_int_eq(vs.v[0].props.die_id, -1);
    ck_assert_int_eq(vs.v[0].props.cluster_id, -1);
    qmp_vcpus_free(&vs);
    ck_assert_ptr_null(vs.v);
    qmp_vcpus_free(&vs); /* idempotent */
}
END_TEST

START_TEST(test_vcpu_four)
{
    char err[QMP_ERRLEN] = "";
    struct qmp_vcpus vs;

    ck_assert_int_eq(parse_fixture("query-cpus-fast-4.json", &vs, err, sizeof(err)), 0);
    ck_assert_uint_eq(vs.n, 4);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(vs.v[i].cpu_index, i);
        /* QEMU creates the vCPU threads in order, one after the other. */
        ck_assert_int_eq(vs.v[i].thread_id, vs.v[0].thread_id + i);
        ck_assert_int_eq(vs.v[i].props.core_id, i);
        ck_assert_int_eq(vs.v[i].props.socket_id, 0);
    }
    ck_assert_str_eq(vs.v[1].qom_path, "/machine/unattached/device[2]");
    qmp_vcpus_free(&vs);
}
END_TEST

START_TEST(test_vcpu_numa_dies)
{
    static const int node[] = {0, 0, 1, 1}, die[] = {0, 1, 0, 1}, sock[] = {0, 0, 1, 1};
    char err[QMP_ERRLEN] = "";
    struct qmp_vcpus vs;

    ck_assert_int_eq(parse_fixture("query-cpus-fast-numa.json", &vs, err, sizeof(err)), 0);
    ck_assert_uint_eq(vs.n, 4);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(vs.v[i].props.node_id, node[i]);
        ck_assert_int_eq(vs.v[i].props.die_id, die[i]);
        ck_assert_int_eq(vs.v[i].props.socket_id, sock[i]);
        ck_assert_int_eq(vs.v[i].props.cluster_id, -1);
    }
    qmp_vcpus_free(&vs);
}
END_TEST

START_TEST(test_vcpu_hotplugged)
{
    char err[QMP_ERRLEN] = "";
    struct qmp_vcpus vs;

    ck_assert_int_eq(parse_fixture("query-cpus-fast-hotplug.json", &vs, err, sizeof(err)), 0);
    ck_assert_uint_eq(vs.n, 3);
    ck_assert_str_eq(vs.v[2].qom_path, "/machine/peripheral/cpu2");
    ck_assert_int_eq(vs.v[2].props.core_id, 2);
    qmp_vcpus_free(&vs);
}
END_TEST

/* Single-threaded TCG: one TID for all four vCPUs. Refused, by name. */
START_TEST(test_vcpu_single_threaded_tcg)
{
    char err[QMP_ERRLEN] = "";
    struct qmp_vcpus vs;

    ck_assert_int_eq(parse_fixture("query-cpus-fast-4-single-tcg.json", &vs, err, sizeof(err)),
                     -ENOTUNIQ);
    ck_assert_msg(strstr(err, "vcpus 0 and 1 share thread ") != NULL, "%s", err);
    ck_assert_msg(strstr(err, "(single-threaded TCG?)") != NULL, "%s", err);
    ck_assert_uint_eq(vs.n, 0);
    ck_assert_ptr_null(vs.v);
}
END_TEST

/* Replies that are not a query-cpus-fast success. */
struct reply_case {
    const char *file;
    int err;
    const char *msg;
};

static const struct reply_case reply_cases[] = {
    {"error-command-not-found.json", -EREMOTEIO,
     "query-cpus-fast: CommandNotFound: The command no-such-cmd has not been found"},
    {"error-no-negotiation.json", -EREMOTEIO, "Expecting capabilities negotiation"},
    {"event-stop.json", -EPROTO, "not a reply"},
    {"greeting.json", -EPROTO, "not a reply"},
    {"capabilities-return.json", -EPROTO, "not an array"},
    {"reply-object-id.json", -EPROTO, "not an array"},
};

START_TEST(test_vcpu_not_a_vcpu_reply)
{
    const struct reply_case *rc = &reply_cases[_i];
    char err[QMP_ERRLEN] = "";
    struct qmp_vcpus vs;

    ck_assert_int_eq(parse_fixture(rc->file, &vs, err, sizeof(err)), rc->err);
    ck_assert_msg(strstr(err, rc->msg) != NULL, "%s: \"%s\" lacks \"%s\"", rc->file, err, rc->msg);
    ck_assert_uint_eq(vs.n, 0);
}
END_TEST

/* One good entry, for building bad lists around it. */
#define GOOD   "{\"thread-id\": 100, \"props\": {\"core-id\": 0}, \"cpu-index\": 0}"
#define LONG64 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

struct bad_case {
    const char *json;
    int err;
    const char *msg;
};

static const struct bad_case bad_cases[] = {
    {"not json", -EPROTO, "not JSON"},
    {"{\"return\": []}", -EPROTO, "0 vcpus listed"},
    {"{\"return\": [1]}", -EPROTO, "entry 0 is not an object"},
    {"{\"return\": [" GOOD ", {\"thread-id\": 101}]}", -EPROTO, "entry 1: cpu-index"},
    {"{\"return\": [{\"cpu-index\": 0}]}", -EPROTO, "entry 0: thread-id"},
    {"{\"return\": [{\"cpu-index\": 0, \"thread-id\": 0}]}", -EPROTO, "thread-id"},
    {"{\"return\": [{\"cpu-index\": 0, \"thread-id\": -5}]}", -EPROTO, "thread-id"},
    {"{\"return\": [{\"cpu-index\": 0, \"thread-id\": \"100\"}]}", -EPROTO, "thread-id"},
    {"{\"return\": [{\"cpu-index\": 0, \"thread-id\": 1099511627776}]}", -EPROTO, "thread-id"},
    {"{\"return\": [{\"cpu-index\": 0, \"thread-id\": 1.5}]}", -EPROTO, "thread-id"},
    {"{\"return\": [{\"cpu-index\": -1, \"thread-id\": 100}]}", -EPROTO, "cpu-index"},
    {"{\"return\": [{\"cpu-index\": 0, \"thread-id\": 100, \"qom-path\": 5}]}", -EPROTO,
     "qom-path"},
    {"{\"return\": [{\"cpu-index\": 0, \"thread-id\": 100, \"qom-path\": \"/" LONG64 LONG64 LONG64
         LONG64 "\"}]}",
     -EPROTO, "qom-path"},
    {"{\"return\": [{\"cpu-index\": 0, \"thread-id\": 100, \"target\": [\"x86_64\"]}]}", -EPROTO,
     "target"},
    {"{\"return\": [{\"cpu-index\": 0, \"thread-id\": 100, \"props\": 3}]}", -EPROTO, "props"},
    {"{\"return\": [{\"cpu-index\": 0, \"thread-id\": 100, \"props\": {\"core-id\": \"1\"}}]}",
     -EPROTO, "core-id"},
    {"{\"return\": [{\"cpu-index\": 0, \"thread-id\": 100, \"props\": {\"node-id\": -2}}]}",
     -EPROTO, "node-id"},
    {"{\"return\": [" GOOD ", " GOOD "]}", -EPROTO, "cpu-index 0 listed twice"},
    {"{\"return\": [" GOOD ", {\"cpu-index\": 5, \"thread-id\": 100}]}", -ENOTUNIQ,
     "vcpus 0 and 5 share thread 100"},
    {"{\"return\": {\"cpu-index\": 0, \"thread-id\": 100}}", -EPROTO, "not an array"},
    {"{\"return\": null}", -EPROTO, "not an array"},
};

START_TEST(test_vcpu_malformed)
{
    const struct bad_case *bc = &bad_cases[_i];
    char err[QMP_ERRLEN] = "";
    struct qmp_vcpus vs;

    ck_assert_int_eq(qmp_vcpus_parse_reply(bc->json, &vs, err, sizeof(err)), bc->err);
    ck_assert_msg(strstr(err, bc->msg) != NULL, "case %d: \"%s\" lacks \"%s\"", _i, err, bc->msg);
    ck_assert_uint_eq(vs.n, 0);
    ck_assert_ptr_null(vs.v);
}
END_TEST

/* QEMU's order is not promised: the list comes back sorted by cpu-index. */
START_TEST(test_vcpu_sorted_and_lenient)
{
    static const char json[] = "{\"return\": [{\"cpu-index\": 2, \"thread-id\": 30, \"x-new\": 1},"
                               " {\"cpu-index\": 0, \"thread-id\": 10},"
                               " {\"cpu-index\": 1, \"thread-id\": 20, \"props\": {}}], \"id\": 9}";
    struct qmp_vcpus vs;

    ck_assert_int_eq(qmp_vcpus_parse_reply(json, &vs, NULL, 0), 0);
    ck_assert_uint_eq(vs.n, 3);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(vs.v[i].cpu_index, i);
        ck_assert_int_eq(vs.v[i].thread_id, 10 * (i + 1));
        ck_assert_str_eq(vs.v[i].qom_path, "");
        ck_assert_int_eq(vs.v[i].props.core_id, -1);
    }
    qmp_vcpus_free(&vs);
    ck_assert_int_eq(qmp_vcpus_parse_reply(NULL, &vs, NULL, 0), -EINVAL);
    ck_assert_int_eq(qmp_vcpus_from_json(NULL, &vs, NULL, 0), -EPROTO);
}
END_TEST

static Suite *
qmp_vcpu_suite(void)
{
    Suite *s = suite_create("qmp_vcpu");
    TCase *tc = tcase_create("captured");

    tcase_add_test(tc, test_vcpu_one);
    tcase_add_test(tc, test_vcpu_four);
    tcase_add_test(tc, test_vcpu_numa_dies);
    tcase_add_test(tc, test_vcpu_hotplugged);
    tcase_add_test(tc, test_vcpu_single_threaded_tcg);
    tcase_add_loop_test(tc, test_vcpu_not_a_vcpu_reply, 0,
                        (int)(sizeof(reply_cases) / sizeof(reply_cases[0])));
    suite_add_tcase(s, tc);
    tc = tcase_create("malformed");
    tcase_add_loop_test(tc, test_vcpu_malformed, 0,
                        (int)(sizeof(bad_cases) / sizeof(bad_cases[0])));
    tcase_add_test(tc, test_vcpu_sorted_and_lenient);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(qmp_vcpu_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
