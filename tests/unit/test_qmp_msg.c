/* SPDX-License-Identifier: ISC */
/*
 * test_qmp_msg.c - the QMP message layer on replies and events captured
 * from QEMU 7.2 (tests/fixtures/qmp/), a whole captured session with
 * events between commands and replies, and a table of malformed lines.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "qmp.h"
#include "qmp_testlib.h"

/* What each captured fixture must parse into. */
struct fixture_case {
    const char *file;
    enum qmp_msg_kind kind;
    const char *name; /* ERROR: class; EVENT: event name */
    const char *id;   /* the id as JSON text, NULL if none */
    bool has_ts;      /* EVENT with a timestamp */
    json_type value;  /* type of msg.value (json_type_null: NULL) */
};

static const struct fixture_case fixture_cases[] = {
    {"greeting.json", QMP_MSG_GREETING, NULL, NULL, false, json_type_object},
    {"capabilities-return.json", QMP_MSG_RETURN, NULL, NULL, false, json_type_object},
    {"error-no-negotiation.json", QMP_MSG_ERROR, "CommandNotFound", NULL, false, json_type_null},
    {"error-already-negotiated.json", QMP_MSG_ERROR, "CommandNotFound", "1", false, json_type_null},
    {"error-command-not-found.json", QMP_MSG_ERROR, "CommandNotFound", "7", false, json_type_null},
    {"error-parse-noid.json", QMP_MSG_ERROR, "GenericError", NULL, false, json_type_null},
    {"reply-object-id.json", QMP_MSG_RETURN, NULL, "{ \"seq\": 42, \"client\": \"vcpusched\" }",
     false, json_type_object},
    {"query-cpus-fast-1.json", QMP_MSG_RETURN, NULL, "\"q1\"", false, json_type_array},
    {"query-cpus-fast-4.json", QMP_MSG_RETURN, NULL, "2", false, json_type_array},
    {"query-cpus-fast-numa.json", QMP_MSG_RETURN, NULL, NULL, false, json_type_array},
    {"event-stop.json", QMP_MSG_EVENT, "STOP", NULL, true, json_type_null},
    {"event-resume.json", QMP_MSG_EVENT, "RESUME", NULL, true, json_type_null},
    {"event-reset-host.json", QMP_MSG_EVENT, "RESET", NULL, true, json_type_object},
    {"event-shutdown.json", QMP_MSG_EVENT, "SHUTDOWN", NULL, true, json_type_object},
};

START_TEST(test_msg_fixture)
{
    const struct fixture_case *fc = &fixture_cases[_i];
    char err[QMP_ERRLEN] = "";
    struct qmp_msg msg;
    size_t len;
    char *text = qmp_fixture(fc->file, &len);
    int r = qmp_msg_parse(text, len, &msg, err, sizeof(err));

    ck_assert_msg(r == 0, "%s: %d %s", fc->file, r, err);
    ck_assert_int_eq(msg.kind, fc->kind);
    if (fc->kind == QMP_MSG_ERROR) {
        ck_assert_str_eq(msg.error_class, fc->name);
        ck_assert_ptr_nonnull(msg.error_desc);
    }
    if (fc->kind == QMP_MSG_EVENT)
        ck_assert_str_eq(msg.event, fc->name);
    if (fc->has_ts) {
        /* Captured in 2026 or later, microseconds in range. */
        ck_assert_int_gt(msg.ts_sec, 1767225600);
        ck_assert_int_ge(msg.ts_usec, 0);
        ck_assert_int_lt(msg.ts_usec, 1000000);
    } else {
        ck_assert_int_eq(msg.ts_sec, 0);
    }
    if (fc->id == NULL)
        ck_assert_ptr_null(msg.id);
    else
        ck_assert_str_eq(json_object_to_json_string(msg.id), fc->id);
    if (fc->value == json_type_null)
        ck_assert_ptr_null(msg.value);
    else
        ck_assert_int_eq(json_object_get_type(msg.value), fc->value);
    qmp_msg_free(&msg);
    qmp_msg_free(&msg); /* idempotent */
    free(text);
}
END_TEST

START_TEST(test_msg_greeting_fields)
{
    struct qmp_greeting g;
    struct qmp_msg msg;
    size_t len;
    char *text = qmp_fixture("greeting.json", &len);

    ck_assert_int_eq(qmp_msg_parse(text, len, &msg, NULL, 0), 0);
    ck_assert_int_eq(qmp_msg_greeting(&msg, &g, NULL, 0), 0);
    ck_assert_int_eq(g.major, 7);
    ck_assert_int_eq(g.minor, 2);
    ck_assert_int_eq(g.micro, 22);
    ck_assert_str_eq(g.package, "Debian 1:7.2+dfsg-7+deb12u18+b3");
    ck_assert(g.oob);
    qmp_msg_free(&msg);
    free(text);
}
END_TEST

/* Greetings that parse as JSON but lack an integer version. */
static const char *const bad_greetings[] = {
    "{\"QMP\": {}}",
    "{\"QMP\": {\"version\": 7}}",
    "{\"QMP\": {\"version\": {\"qemu\": {\"major\": \"7\", \"minor\": 2, \"micro\": 0}}}}",
    "{\"QMP\": {\"version\": {\"qemu\": {\"major\": -7, \"minor\": 2, \"micro\": 0}}}}",
    "{\"QMP\": {\"version\": {\"qemu\": {\"minor\": 2, \"micro\": 0}}}}",
    "{\"return\": {}}",
};

START_TEST(test_msg_bad_greeting)
{
    char err[QMP_ERRLEN] = "";
    struct qmp_greeting g;
    struct qmp_msg msg;

    ck_assert_int_eq(qmp_msg_parse(bad_greetings[_i], strlen(bad_greetings[_i]), &msg, NULL, 0), 0);
    ck_assert_int_eq(qmp_msg_greeting(&msg, &g, err, sizeof(err)), -EPROTO);
    ck_assert_msg(strstr(err, "greeting") != NULL, "%s", err);
    qmp_msg_free(&msg);
}
END_TEST

/* Lines that must be rejected, with a word the message must contain. */
struct bad_case {
    const char *line;
    size_t len; /* 0: strlen(line) */
    const char *msg;
};

static const struct bad_case bad_cases[] = {
    {"", 0, "truncated"},
    {"   \r\n", 0, "truncated"},
    {"not json", 0, "not JSON"},
    {"{\"return\": {", 0, "truncated"},
    {"{\"return\": {},}", 0, "not JSON"}, /* trailing comma */
    {"[1, 2]", 0, "array JSON"},
    {"\"str\"", 0, "string JSON"},
    {"42", 0, "not JSON"}, /* json-c waits for the number's end: truncated */
    {"42\r\n", 0, "int JSON"},
    {"null\r\n", 0, "null JSON"},
    {"{}", 0, "no known kind"},
    {"{\"foo\": 1, \"id\": 3}", 0, "no known kind"},
    {"{\"return\": {}, \"error\": {\"class\": \"C\", \"desc\": \"d\"}}", 0, "ambiguous"},
    {"{\"return\": {}, \"event\": \"STOP\"}", 0, "ambiguous"},
    {"{\"QMP\": {}, \"event\": \"STOP\"}", 0, "ambiguous"},
    {"{\"QMP\": 5}", 0, "greeting is not an object"},
    {"{\"error\": \"boom\"}", 0, "class and desc"},
    {"{\"error\": {\"class\": 1, \"desc\": \"d\"}}", 0, "class and desc"},
    {"{\"error\": {\"class\": \"C\"}}", 0, "class and desc"},
    {"{\"error\": {\"desc\": \"d\"}}", 0, "class and desc"},
    {"{\"event\": 5}", 0, "event name"},
    {"{\"event\": null}", 0, "event name"},
    {"{\"event\": \"X\", \"data\": 5}", 0, "non-object data"},
    {"{\"event\": \"X\", \"timestamp\": 5}", 0, "timestamp"},
    {"{\"event\": \"X\", \"timestamp\": {\"seconds\": \"1\", \"microseconds\": 2}}", 0,
     "timestamp"},
    {"{\"event\": \"X\", \"timestamp\": {\"seconds\": 1}}", 0, "timestamp"},
    {"{\"return\": {}} {\"return\": {}}", 0, "not JSON"}, /* strict mode stops here */
    {"{\"return\": {}} x", 0, "not JSON"},
    {"{\"return\": {}}\0junk", 19, "after the JSON"},
    {"{\"return\": \"a\0b\"}", 17, "not JSON"},
};

START_TEST(test_msg_malformed)
{
    const struct bad_case *bc = &bad_cases[_i];
    size_t len = bc->len != 0 ? bc->len : strlen(bc->line);
    char err[QMP_ERRLEN] = "";
    struct qmp_msg msg;

    ck_assert_int_eq(qmp_msg_parse(bc->line, len, &msg, err, sizeof(err)), -EPROTO);
    ck_assert_msg(strstr(err, bc->msg) != NULL, "case %d: \"%s\" lacks \"%s\"", _i, err, bc->msg);
    ck_assert_ptr_null(msg.root);
    ck_assert_int_eq(qmp_msg_parse(bc->line, len, &msg, NULL, 0), -EPROTO); /* no errbuf: fine */
}
END_TEST

/* Nesting deeper than json-c's limit (32) is an error, not a stack overflow. */
START_TEST(test_msg_deep_nesting)
{
    char line[2 * 1000 + 1], err[QMP_ERRLEN] = "";
    struct qmp_msg msg;

    memset(line, '[', 1000);
    memset(line + 1000, ']', 1000);
    line[2000] = '\0';
    ck_assert_int_eq(qmp_msg_parse(line, 2000, &msg, err, sizeof(err)), -EPROTO);
    ck_assert_msg(strstr(err, "not JSON") != NULL, "%s", err);
}
END_TEST

/* Unknown keys are ignored and optional parts may be absent, as the spec asks. */
START_TEST(test_msg_lenient_where_spec_says)
{
    static const char line[] = "{\"event\": \"X\", \"future\": [1], \"data\": {}}\r\n";
    struct qmp_msg msg;

    ck_assert_int_eq(qmp_msg_parse(line, sizeof(line) - 1, &msg, NULL, 0), 0);
    ck_assert_str_eq(msg.event, "X");
    ck_assert_int_eq(msg.ts_sec, -1);
    ck_assert_int_eq(msg.ts_usec, -1);
    qmp_msg_free(&msg);
    ck_assert_int_eq(qmp_msg_parse(NULL, 0, &msg, NULL, 0), -EINVAL);
}
END_TEST

/*
 * The captured session, line by line: events land between a command and
 * its reply (RESUME before cont's return, STOP before stop's return).
 */
START_TEST(test_msg_session_transcript)
{
    static const char *const want[] = {
        "G",  "R1",      "R2", "E:RESUME", "R3",         "E:STOP",
        "R4", "E:RESET", "R5", "R6",       "E:SHUTDOWN", "R7",
    };
    char *text = qmp_fixture("session-events.txt", NULL), *line = text, *nl;
    char got[32], err[QMP_ERRLEN] = "";
    struct qmp_msg msg;
    size_t n = 0;

    while ((nl = strchr(line, '\n')) != NULL) {
        ck_assert_uint_lt(n, sizeof(want) / sizeof(want[0]));
        ck_assert_msg(qmp_msg_parse(line, (size_t)(nl - line), &msg, err, sizeof(err)) == 0,
                      "line %zu: %s", n, err);
        if (msg.kind == QMP_MSG_EVENT)
            snprintf(got, sizeof(got), "E:%s", msg.event);
        else if (msg.kind == QMP_MSG_RETURN)
            snprintf(got, sizeof(got), "R%s", json_object_to_json_string(msg.id));
        else
            snprintf(got, sizeof(got), "G");
        ck_assert_str_eq(got, want[n]);
        qmp_msg_free(&msg);
        line = nl + 1;
        n++;
    }
    ck_assert_uint_eq(n, sizeof(want) / sizeof(want[0]));
    free(text);
}
END_TEST

START_TEST(test_msg_format_command)
{
    struct json_object *args = json_object_new_object(), *id = json_object_new_object(), *o, *v;
    char err[QMP_ERRLEN] = "", *out;
    size_t len;

    json_object_object_add(args, "enable", json_object_new_array());
    json_object_object_add(id, "seq", json_object_new_int(42));
    ck_assert_int_eq(
        qmp_msg_format_command("qmp_capabilities", args, id, &out, &len, err, sizeof(err)), 0);
    ck_assert_uint_eq(len, strlen(out));
    ck_assert_int_eq(out[len - 1], '\n');
    ck_assert_ptr_null(strchr(out, '\r'));
    ck_assert_ptr_eq(strchr(out, '\n'), out + len - 1); /* one line */
    o = json_tokener_parse(out);
    ck_assert(json_object_object_get_ex(o, "execute", &v));
    ck_assert_str_eq(json_object_get_string(v), "qmp_capabilities");
    ck_assert(json_object_object_get_ex(o, "arguments", &v));
    ck_assert(json_object_equal(v, args));
    ck_assert(json_object_object_get_ex(o, "id", &v));
    ck_assert(json_object_equal(v, id));
    json_object_put(o);
    free(out);
    ck_assert_int_eq(qmp_msg_format_command("stop", NULL, NULL, &out, &len, NULL, 0), 0);
    ck_assert_str_eq(out, "{\"execute\":\"stop\"}\n");
    free(out);
    ck_assert_int_eq(qmp_msg_format_command("", NULL, NULL, &out, &len, err, sizeof(err)), -EINVAL);
    ck_assert_int_eq(qmp_msg_format_command("x", id, NULL, &out, &len, NULL, 0), 0);
    free(out);
    o = json_object_new_array();
    ck_assert_int_eq(qmp_msg_format_command("x", o, NULL, &out, &len, NULL, 0), -EINVAL);
    ck_assert_ptr_null(out);
    json_object_put(o);
    json_object_put(args);
    json_object_put(id);
}
END_TEST

START_TEST(test_msg_format_error)
{
    char err[QMP_ERRLEN] = "", small[16];
    struct qmp_msg msg;
    size_t len;
    char *text = qmp_fixture("error-command-not-found.json", &len);

    ck_assert_int_eq(qmp_msg_parse(text, len, &msg, NULL, 0), 0);
    qmp_msg_format_error(&msg, "no-such-cmd", err, sizeof(err));
    ck_assert_str_eq(err,
                     "no-such-cmd: CommandNotFound: The command no-such-cmd has not been found");
    qmp_msg_format_error(&msg, NULL, err, sizeof(err));
    ck_assert_str_eq(err, "CommandNotFound: The command no-such-cmd has not been found");
    qmp_msg_format_error(&msg, "x", small, sizeof(small));
    ck_assert_str_eq(small, "x: CommandNotFo");
    qmp_msg_free(&msg);
    free(text);
}
END_TEST

static Suite *
qmp_msg_suite(void)
{
    Suite *s = suite_create("qmp_msg");
    TCase *tc = tcase_create("parse");

    tcase_add_loop_test(tc, test_msg_fixture, 0,
                        (int)(sizeof(fixture_cases) / sizeof(fixture_cases[0])));
    tcase_add_test(tc, test_msg_greeting_fields);
    tcase_add_loop_test(tc, test_msg_bad_greeting, 0,
                        (int)(sizeof(bad_greetings) / sizeof(bad_greetings[0])));
    tcase_add_loop_test(tc, test_msg_malformed, 0, (int)(sizeof(bad_cases) / sizeof(bad_cases[0])));
    tcase_add_test(tc, test_msg_deep_nesting);
    tcase_add_test(tc, test_msg_lenient_where_spec_says);
    tcase_add_test(tc, test_msg_session_transcript);
    suite_add_tcase(s, tc);
    tc = tcase_create("format");
    tcase_add_test(tc, test_msg_format_command);
    tcase_add_test(tc, test_msg_format_error);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(qmp_msg_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
