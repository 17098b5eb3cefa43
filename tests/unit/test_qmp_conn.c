/* SPDX-License-Identifier: ISC */
/*
 * test_qmp_conn.c - the QMP transport against a scripted fake server:
 * handshake, id matching, events between commands and replies, the
 * non-blocking pump, and every transport failure (refused, closed
 * mid-line, oversize line, silence, garbage), each a clean error.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <json-c/json.h>

#include "qmp.h"
#include "qmp_testlib.h"

/* Short deadlines for the cases that must time out; nothing waits longer. */
#define SHORT_MS 200

#define ck_assert_err(r, want, err, substr)                                                        \
    do {                                                                                           \
        ck_assert_msg((r) == (want), "got %d (%s), want %d", (r), (err), (want));                  \
        ck_assert_msg(strstr((err), (substr)) != NULL, "errbuf \"%s\" lacks \"%s\"", (err),        \
                      (substr));                                                                   \
    } while (0)

/* Connect to the fake server or fail the test. */
static struct qmp_conn *
connect_ok(const struct fake_server *fs, const struct qmp_opts *opts)
{
    char err[QMP_ERRLEN] = "";
    struct qmp_conn *c;
    int r = qmp_connect(&c, fs->path, opts, err, sizeof(err));

    ck_assert_msg(r == 0, "connect: %d %s", r, err);
    return c;
}

/*
 * Failure table. `cmd` NULL: the failure comes from qmp_connect(); else
 * from qmp_execute(cmd) after a good handshake. `sticky`: the connection
 * is dead afterwards and a second call fails alike without any I/O.
 */
struct fail_case {
    const char *name;
    struct fake_step script[8];
    struct qmp_opts opts;
    const char *cmd;
    int err;
    const char *msg;
    bool sticky;
};

static const struct fail_case fail_cases[] = {
    {"no greeting",
     {{FAKE_HANG, NULL, 0}},
     {.timeout_ms = SHORT_MS},
     NULL,
     -ETIMEDOUT,
     "no greeting within 200 ms",
     false},
    {"greeting not json",
     {{FAKE_SEND, "hello qemu\r\n", 0}, {FAKE_END, NULL, 0}},
     {0},
     NULL,
     -EPROTO,
     "not JSON",
     false},
    {"event before greeting",
     {{FAKE_SEND_FIXTURE, "event-stop.json", 0}, {FAKE_END, NULL, 0}},
     {0},
     NULL,
     -EPROTO,
     "expected a greeting",
     false},
    {"greeting without version",
     {{FAKE_SEND, "{\"QMP\": {\"capabilities\": []}}\r\n", 0}, {FAKE_END, NULL, 0}},
     {0},
     NULL,
     -EPROTO,
     "version",
     false},
    {"closed before greeting",
     {{FAKE_CLOSE, NULL, 0}},
     {0},
     NULL,
     -ECONNRESET,
     "closed by peer",
     false},
    {"closed mid-greeting",
     {{FAKE_SEND, "{\"QMP\": {\"vers", 0}, {FAKE_CLOSE, NULL, 0}},
     {0},
     NULL,
     -ECONNRESET,
     "mid-message",
     false},
    {"oversize greeting",
     {{FAKE_SEND_FIXTURE, "greeting.json", 0}, {FAKE_END, NULL, 0}},
     {.max_line = 64},
     NULL,
     -EMSGSIZE,
     "longer than 64 bytes",
     false},
    {"capabilities refused",
     {{FAKE_SEND_FIXTURE, "greeting.json", 0},
      {FAKE_EXPECT, "qmp_capabilities", 0},
      {FAKE_REPLY,
       "{\"error\": {\"class\": \"GenericError\", \"desc\": \"nope\"}, \"id\": %ID%}\r\n", 0},
      {FAKE_END, NULL, 0}},
     {0},
     NULL,
     -EREMOTEIO,
     "qmp_capabilities: GenericError: nope",
     false},
    {"capabilities unanswered",
     {{FAKE_SEND_FIXTURE, "greeting.json", 0},
      {FAKE_EXPECT, "qmp_capabilities", 0},
      {FAKE_HANG, NULL, 0}},
     {.timeout_ms = SHORT_MS},
     NULL,
     -ETIMEDOUT,
     "qmp_capabilities: no reply",
     false},
    {"reply not json",
     {FAKE_HANDSHAKE,
      {FAKE_EXPECT, "query-status", 0},
      {FAKE_SEND, "garbage\r\n", 0},
      {FAKE_END, NULL, 0}},
     {0},
     "query-status",
     -EPROTO,
     "not JSON",
     false},
    {"reply truncated json",
     {FAKE_HANDSHAKE,
      {FAKE_EXPECT, "query-status", 0},
      {FAKE_SEND, "{\"return\": {\r\n", 0},
      {FAKE_END, NULL, 0}},
     {0},
     "query-status",
     -EPROTO,
     "truncated",
     false},
    {"reply is an array",
     {FAKE_HANDSHAKE,
      {FAKE_EXPECT, "query-status", 0},
      {FAKE_SEND, "[1, 2]\r\n", 0},
      {FAKE_END, NULL, 0}},
     {0},
     "query-status",
     -EPROTO,
     "array JSON, not an object",
     false},
    {"reply of no kind",
     {FAKE_HANDSHAKE,
      {FAKE_EXPECT, "query-status", 0},
      {FAKE_SEND, "{\"foo\": 1, \"id\": 2}\r\n", 0},
      {FAKE_END, NULL, 0}},
     {0},
     "query-status",
     -EPROTO,
     "of no known kind",
     false},
    {"error reply",
     {FAKE_HANDSHAKE,
      {FAKE_EXPECT, "query-status", 0},
      {FAKE_REPLY_FIXTURE, "error-command-not-found.json", 0},
      {FAKE_END, NULL, 0}},
     {0},
     "query-status",
     -EREMOTEIO,
     "query-status: CommandNotFound: The command no-such-cmd has not been found",
     false},
    {"parse error without id",
     {FAKE_HANDSHAKE,
      {FAKE_EXPECT, "query-status", 0},
      {FAKE_SEND_FIXTURE, "error-parse-noid.json", 0},
      {FAKE_END, NULL, 0}},
     {0},
     "query-status",
     -EREMOTEIO,
     "GenericError: JSON parse error, invalid keyword 'not'",
     false},
    {"return without id",
     {FAKE_HANDSHAKE,
      {FAKE_EXPECT, "query-status", 0},
      {FAKE_SEND_FIXTURE, "capabilities-return.json", 0},
      {FAKE_END, NULL, 0}},
     {0},
     "query-status",
     -EPROTO,
     "reply without id",
     false},
    {"greeting mid-session",
     {FAKE_HANDSHAKE,
      {FAKE_EXPECT, "query-status", 0},
      {FAKE_SEND_FIXTURE, "greeting.json", 0},
      {FAKE_END, NULL, 0}},
     {0},
     "query-status",
     -EPROTO,
     "unexpected greeting",
     false},
    {"closed mid-line",
     {FAKE_HANDSHAKE,
      {FAKE_EXPECT, "query-status", 0},
      {FAKE_SEND, "{\"return\": {\"sta", 0},
      {FAKE_CLOSE, NULL, 0}},
     {0},
     "query-status",
     -ECONNRESET,
     "closed mid-message",
     true},
    {"closed at line end",
     {FAKE_HANDSHAKE, {FAKE_EXPECT, "query-status", 0}, {FAKE_CLOSE, NULL, 0}},
     {0},
     "query-status",
     -ECONNRESET,
     "closed by peer",
     true},
    {"oversize line, default max",
     {FAKE_HANDSHAKE,
      {FAKE_EXPECT, "query-status", 0},
      {FAKE_SEND_BIG, NULL, (size_t)5 << 20},
      {FAKE_HANG, NULL, 0}},
     {0},
     "query-status",
     -EMSGSIZE,
     "longer than 4194304 bytes",
     true},
    {"oversize terminated line",
     {FAKE_HANDSHAKE,
      {FAKE_EXPECT, "query-status", 0},
      {FAKE_SEND_BIG, "lf", 2000},
      {FAKE_END, NULL, 0}},
     {.max_line = 1024},
     "query-status",
     -EMSGSIZE,
     "longer than 1024 bytes",
     true},
    {"never answers",
     {FAKE_HANDSHAKE, {FAKE_EXPECT, "query-status", 0}, {FAKE_HANG, NULL, 0}},
     {.timeout_ms = SHORT_MS},
     "query-status",
     -ETIMEDOUT,
     "query-status: no reply within 200 ms",
     false},
};

START_TEST(test_conn_fails_cleanly)
{
    const struct fail_case *fc = &fail_cases[_i];
    char err[QMP_ERRLEN] = "", err2[QMP_ERRLEN] = "";
    struct fake_server fs;
    struct qmp_conn *c;
    int r;

    fake_start(&fs, fc->script);
    if (fc->cmd == NULL) {
        r = qmp_connect(&c, fs.path, &fc->opts, err, sizeof(err));
        ck_assert_ptr_null(c);
    } else {
        c = connect_ok(&fs, &fc->opts);
        r = qmp_execute(c, fc->cmd, NULL, NULL, err, sizeof(err));
    }
    ck_assert_err(r, fc->err, err, fc->msg);
    if (fc->sticky) {
        ck_assert_int_eq(qmp_execute(c, "query-status", NULL, NULL, err2, sizeof(err2)), r);
        ck_assert_str_eq(err2, err);
        ck_assert_int_eq(qmp_poll_events(c, NULL, 0), r);
    }
    qmp_close(c);
    fake_kill(&fs);
}
END_TEST

START_TEST(test_conn_no_socket)
{
    char err[QMP_ERRLEN] = "", path[200];
    struct qmp_conn *c;

    ck_assert_err(qmp_connect(&c, "/nonexistent/qmp.sock", NULL, err, sizeof(err)), -ENOENT, err,
                  "connect /nonexistent/qmp.sock: No such file or directory");
    ck_assert_ptr_null(c);
    memset(path, 'x', sizeof(path) - 1);
    path[0] = '/';
    path[sizeof(path) - 1] = '\0';
    ck_assert_err(qmp_connect(&c, path, NULL, err, sizeof(err)), -ENAMETOOLONG, err, "too long");
    ck_assert_int_eq(qmp_connect(&c, NULL, NULL, NULL, 0), -EINVAL);
    ck_assert_err(qmp_connect(&c, NULL, NULL, err, sizeof(err)), -EINVAL, err, "no socket path");
    ck_assert_ptr_null(c);
    err[0] = '\0';
    ck_assert_err(qmp_connect(&c, "/x", &(struct qmp_opts){.timeout_ms = -1}, err, sizeof(err)),
                  -EINVAL, err, "invalid connection options");
}
END_TEST

/* A socket file nobody listens on (bound, then closed): -ECONNREFUSED. */
START_TEST(test_conn_refused)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    char dir[] = "/tmp/qmp-refused-XXXXXX", err[QMP_ERRLEN] = "";
    struct qmp_conn *c;
    int fd;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/qmp.sock", dir);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    close(fd);
    ck_assert_err(qmp_connect(&c, sa.sun_path, NULL, err, sizeof(err)), -ECONNREFUSED, err,
                  "Connection refused");
    unlink(sa.sun_path);
    rmdir(dir);
}
END_TEST

/* The handshake reads QEMU's version; a command returns its value. */
START_TEST(test_conn_handshake_and_execute)
{
    static const struct fake_step script[] = {
        FAKE_HANDSHAKE,
        {FAKE_EXPECT, "query-status", 0},
        {FAKE_REPLY,
         "{\"return\": {\"status\": \"prelaunch\", \"running\": false}, \"id\": %ID%}\r\n", 0},
        {FAKE_END, NULL, 0},
    };
    char err[QMP_ERRLEN] = "";
    struct json_object *ret, *st;
    struct fake_server fs;
    struct qmp_conn *c;

    fake_start(&fs, script);
    c = connect_ok(&fs, NULL);
    ck_assert_int_ge(qmp_fd(c), 0);
    ck_assert_int_eq(qmp_greeting(c)->major, 7);
    ck_assert_int_eq(qmp_greeting(c)->minor, 2);
    ck_assert_str_eq(qmp_greeting(c)->package, "Debian 1:7.2+dfsg-7+deb12u18+b3");
    ck_assert_int_eq(qmp_execute(c, "query-status", NULL, &ret, err, sizeof(err)), 0);
    ck_assert(json_object_object_get_ex(ret, "status", &st));
    ck_assert_str_eq(json_object_get_string(st), "prelaunch");
    json_object_put(ret);
    qmp_close(c);
    ck_assert_int_eq(fake_stop(&fs), 0);
}
END_TEST

/* Arguments reach the server; the client sent exactly what the script expects. */
START_TEST(test_conn_execute_with_arguments)
{
    static const struct fake_step script[] = {
        FAKE_HANDSHAKE,
        {FAKE_EXPECT, "human-monitor-command", 0},
        {FAKE_REPLY, "{\"return\": \"ok\\r\\n\", \"id\": %ID%}\r\n", 0},
        {FAKE_END, NULL, 0},
    };
    struct json_object *args = json_object_new_object(), *ret;
    char err[QMP_ERRLEN] = "";
    struct fake_server fs;
    struct qmp_conn *c;

    json_object_object_add(args, "command-line", json_object_new_string("info cpus"));
    fake_start(&fs, script);
    c = connect_ok(&fs, NULL);
    ck_assert_int_eq(qmp_execute(c, "human-monitor-command", args, &ret, err, sizeof(err)), 0);
    ck_assert_str_eq(json_object_get_string(ret), "ok\r\n");
    json_object_put(ret);
    json_object_put(args);
    ck_assert_int_eq(qmp_execute(c, "", NULL, NULL, err, sizeof(err)), -EINVAL);
    qmp_close(c);
    ck_assert_int_eq(fake_stop(&fs), 0);
}
END_TEST

/* STOP and RESUME arrive before stop's reply (as QEMU sends them): queued in order. */
START_TEST(test_conn_events_between_command_and_reply)
{
    static const struct fake_step script[] = {
        FAKE_HANDSHAKE,
        {FAKE_EXPECT, "stop", 0},
        {FAKE_SEND_FIXTURE, "event-stop.json", 0},
        {FAKE_SEND_FIXTURE, "event-resume.json", 0},
        {FAKE_REPLY, "{\"return\": {}, \"id\": %ID%}\r\n", 0},
        {FAKE_END, NULL, 0},
    };
    char err[QMP_ERRLEN] = "";
    struct fake_server fs;
    struct qmp_conn *c;
    struct qmp_stats st;
    struct qmp_msg ev;

    fake_start(&fs, script);
    c = connect_ok(&fs, NULL);
    ck_assert_int_eq(qmp_execute(c, "stop", NULL, NULL, err, sizeof(err)), 0);
    ck_assert_int_eq(qmp_next_event(c, &ev), 0);
    ck_assert_str_eq(ev.event, "STOP");
    ck_assert_int_gt(ev.ts_sec, 0);
    ck_assert_int_gt(ev.ts_usec, 0);
    qmp_msg_free(&ev);
    ck_assert_int_eq(qmp_next_event(c, &ev), 0);
    ck_assert_str_eq(ev.event, "RESUME");
    qmp_msg_free(&ev);
    ck_assert_int_eq(qmp_next_event(c, &ev), -EAGAIN);
    ck_assert_ptr_null(ev.root);
    qmp_get_stats(c, &st);
    ck_assert_uint_eq(st.events_queued, 2);
    ck_assert_uint_eq(st.events_dropped, 0);
    qmp_close(c);
    ck_assert_int_eq(fake_stop(&fs), 0);
}
END_TEST

/*
 * A command times out; the connection stays usable; the late reply (old
 * id) and a reply with a foreign object id are skipped, the right one taken.
 */
START_TEST(test_conn_late_reply_skipped)
{
    static const struct fake_step script[] = {
        FAKE_HANDSHAKE,
        {FAKE_EXPECT, "query-status", 0},
        {FAKE_EXPECT, "query-name", 0},
        {FAKE_REPLY, "{\"return\": {\"status\": \"late\"}, \"id\": %PREV%}\r\n", 0},
        {FAKE_SEND, "{\"return\": {}, \"id\": {\"seq\": 42, \"client\": \"vcpusched\"}}\r\n", 0},
        {FAKE_REPLY, "{\"return\": {\"name\": \"vm1\"}, \"id\": %ID%}\r\n", 0},
        {FAKE_END, NULL, 0},
    };
    char err[QMP_ERRLEN] = "";
    struct json_object *ret, *name;
    struct fake_server fs;
    struct qmp_conn *c;
    struct qmp_stats st;

    fake_start(&fs, script);
    c = connect_ok(&fs, &(struct qmp_opts){.timeout_ms = SHORT_MS});
    ck_assert_err(qmp_execute(c, "query-status", NULL, NULL, err, sizeof(err)), -ETIMEDOUT, err,
                  "no reply");
    ck_assert_int_eq(qmp_execute(c, "query-name", NULL, &ret, err, sizeof(err)), 0);
    ck_assert(json_object_object_get_ex(ret, "name", &name));
    ck_assert_str_eq(json_object_get_string(name), "vm1");
    json_object_put(ret);
    qmp_get_stats(c, &st);
    ck_assert_uint_eq(st.replies_stray, 2);
    qmp_close(c);
    ck_assert_int_eq(fake_stop(&fs), 0);
}
END_TEST

/* Every line split across one-byte reads, and a line of exactly max_line bytes. */
START_TEST(test_conn_split_reads_and_exact_max_line)
{
    static const struct fake_step script[] = {
        {FAKE_SEND_BYTES,
         "{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 0, \"minor\": 0, \"major\": 9}, "
         "\"package\": \"\"}, \"capabilities\": []}}\r\n",
         0},
        {FAKE_EXPECT, "qmp_capabilities", 0},
        {FAKE_REPLY, "{\"return\": {}, \"id\": %ID%}\r\n", 0},
        {FAKE_EXPECT, "query-status", 0},
        {FAKE_SEND_BIG, "lf", 1000},
        {FAKE_END, NULL, 0},
    };
    char err[QMP_ERRLEN] = "";
    struct fake_server fs;
    struct qmp_conn *c;
    struct qmp_stats st;

    fake_start(&fs, script);
    c = connect_ok(&fs, &(struct qmp_opts){.max_line = 1000});
    ck_assert_int_eq(qmp_greeting(c)->major, 9);
    ck_assert(!qmp_greeting(c)->oob);
    /* The 1000-byte line is accepted (it has no id: a -EPROTO, not -EMSGSIZE). */
    ck_assert_err(qmp_execute(c, "query-status", NULL, NULL, err, sizeof(err)), -EPROTO, err,
                  "without id");
    qmp_get_stats(c, &st);
    ck_assert_uint_eq(st.replies_stray, 0);
    qmp_close(c);
    ck_assert_int_eq(fake_stop(&fs), 0);
}
END_TEST

/* The daemon's way: poll() on qmp_fd(), then the non-blocking pump. */
START_TEST(test_conn_poll_events_nonblocking)
{
    static const struct fake_step script[] = {
        FAKE_HANDSHAKE,
        {FAKE_EXPECT, "cont", 0},
        {FAKE_REPLY, "{\"return\": {}, \"id\": %ID%}\r\n", 0},
        {FAKE_SEND_FIXTURE, "event-reset-host.json", 0},
        {FAKE_SEND, "{\"return\": {}, \"id\": 12345}\r\n", 0},
        {FAKE_SEND_BYTES, "{\"timestamp\": {\"seconds\": 1, \"microseconds\": 2}, \"event\": ", 0},
        {FAKE_SEND, "\"POWERDOWN\"}\r\n", 0},
        {FAKE_END, NULL, 0},
    };
    char err[QMP_ERRLEN] = "", names[2][16];
    struct fake_server fs;
    struct qmp_conn *c;
    struct qmp_stats st;
    struct qmp_msg ev;
    int got = 0;

    fake_start(&fs, script);
    c = connect_ok(&fs, NULL);
    ck_assert_int_eq(qmp_poll_events(c, err, sizeof(err)), 0);
    ck_assert_int_eq(qmp_execute(c, "cont", NULL, NULL, err, sizeof(err)), 0);
    /* Drain the queue after every call, then sleep on the socket. */
    for (;;) {
        struct pollfd p = {.fd = qmp_fd(c), .events = POLLIN};

        while (got < 2 && qmp_next_event(c, &ev) == 0) {
            snprintf(names[got++], sizeof(names[0]), "%s", ev.event);
            ck_assert_int_eq(ev.value == NULL, strcmp(ev.event, "POWERDOWN") == 0);
            qmp_msg_free(&ev);
        }
        if (got == 2)
            break;
        ck_assert_int_eq(poll(&p, 1, 3000), 1);
        ck_assert_msg(qmp_poll_events(c, err, sizeof(err)) >= 0, "poll_events: %s", err);
    }
    ck_assert_str_eq(names[0], "RESET");
    ck_assert_str_eq(names[1], "POWERDOWN");
    ck_assert_int_eq(qmp_poll_events(c, err, sizeof(err)), 0);
    ck_assert_int_eq(qmp_next_event(c, &ev), -EAGAIN);
    qmp_get_stats(c, &st);
    ck_assert_uint_eq(st.replies_stray, 1);
    qmp_close(c);
    ck_assert_int_eq(fake_stop(&fs), 0);
}
END_TEST

/* The pump drops and counts bad lines, and still reads the events behind them. */
START_TEST(test_conn_pump_survives_bad_lines)
{
    static const struct fake_step script[] = {
        FAKE_HANDSHAKE,
        {FAKE_SEND, "garbage\r\n{\"foo\": 1}\r\n", 0},
        {FAKE_SEND_FIXTURE, "event-stop.json", 0},
        {FAKE_END, NULL, 0},
    };
    char err[QMP_ERRLEN] = "";
    struct fake_server fs;
    struct qmp_conn *c;
    struct qmp_stats st = {0};
    struct qmp_msg ev;
    int r;

    fake_start(&fs, script);
    c = connect_ok(&fs, NULL);
    /* The lines may come with the handshake's reply or later: both pump. */
    for (qmp_get_stats(c, &st); st.events_queued == 0; qmp_get_stats(c, &st)) {
        struct pollfd p = {.fd = qmp_fd(c), .events = POLLIN};

        ck_assert_int_eq(poll(&p, 1, 3000), 1);
        r = qmp_poll_events(c, err, sizeof(err));
        ck_assert_msg(r >= 0 || r == -EPROTO, "poll_events: %d %s", r, err);
        if (r == -EPROTO)
            ck_assert_msg(strstr(err, "not JSON") || strstr(err, "no known kind"), "%s", err);
    }
    ck_assert_uint_eq(st.lines_invalid, 2);
    ck_assert_int_eq(qmp_next_event(c, &ev), 0);
    ck_assert_str_eq(ev.event, "STOP");
    qmp_msg_free(&ev);
    qmp_close(c);
    ck_assert_int_eq(fake_stop(&fs), 0);
}
END_TEST

/* A full queue drops the oldest events and counts them. */
START_TEST(test_conn_event_queue_bound)
{
    static const struct fake_step script[] = {
        FAKE_HANDSHAKE,
        {FAKE_EXPECT, "stop", 0},
        {FAKE_SEND_FIXTURE, "event-stop.json", 0},
        {FAKE_SEND_FIXTURE, "event-resume.json", 0},
        {FAKE_SEND_FIXTURE, "event-reset-host.json", 0},
        {FAKE_SEND_FIXTURE, "event-shutdown.json", 0},
        {FAKE_REPLY, "{\"return\": {}, \"id\": %ID%}\r\n", 0},
        {FAKE_END, NULL, 0},
    };
    char err[QMP_ERRLEN] = "";
    struct fake_server fs;
    struct qmp_conn *c;
    struct qmp_stats st;
    struct qmp_msg ev;

    fake_start(&fs, script);
    c = connect_ok(&fs, &(struct qmp_opts){.max_events = 2});
    ck_assert_int_eq(qmp_execute(c, "stop", NULL, NULL, err, sizeof(err)), 0);
    qmp_get_stats(c, &st);
    ck_assert_uint_eq(st.events_queued, 4);
    ck_assert_uint_eq(st.events_dropped, 2);
    ck_assert_int_eq(qmp_next_event(c, &ev), 0);
    ck_assert_str_eq(ev.event, "RESET");
    qmp_msg_free(&ev);
    ck_assert_int_eq(qmp_next_event(c, &ev), 0);
    ck_assert_str_eq(ev.event, "SHUTDOWN");
    qmp_msg_free(&ev);
    ck_assert_int_eq(qmp_next_event(c, &ev), -EAGAIN);
    qmp_close(c);
    ck_assert_int_eq(fake_stop(&fs), 0);
}
END_TEST

/* quit: SHUTDOWN, the reply, then EOF. The event survives the error. */
START_TEST(test_conn_eof_after_shutdown)
{
    static const struct fake_step script[] = {
        FAKE_HANDSHAKE,
        {FAKE_EXPECT, "quit", 0},
        {FAKE_SEND_FIXTURE, "event-shutdown.json", 0},
        {FAKE_REPLY, "{\"return\": {}, \"id\": %ID%}\r\n", 0},
        {FAKE_CLOSE, NULL, 0},
    };
    char err[QMP_ERRLEN] = "";
    struct fake_server fs;
    struct qmp_conn *c;
    struct qmp_msg ev;

    fake_start(&fs, script);
    c = connect_ok(&fs, NULL);
    ck_assert_int_eq(qmp_execute(c, "quit", NULL, NULL, err, sizeof(err)), 0);
    /* One event queued, and success writes no message. */
    ck_assert_int_eq(qmp_wait_event(c, 5000, err, sizeof(err)), 1);
    ck_assert_str_eq(err, "");
    ck_assert_int_eq(fake_stop(&fs), 0);
    ck_assert_err(qmp_poll_events(c, err, sizeof(err)), -ECONNRESET, err, "closed by peer");
    ck_assert_int_eq(qmp_wait_event(c, 0, err, sizeof(err)), 1); /* queued events first */
    ck_assert_int_eq(qmp_next_event(c, &ev), 0);
    ck_assert_str_eq(ev.event, "SHUTDOWN");
    qmp_msg_free(&ev);
    ck_assert_err(qmp_wait_event(c, 0, err, sizeof(err)), -ECONNRESET, err, "closed by peer");
    qmp_close(c);
}
END_TEST

/* The peer is gone before we write: -EPIPE, never SIGPIPE. */
START_TEST(test_conn_send_to_closed_peer)
{
    static const struct fake_step script[] = {FAKE_HANDSHAKE, {FAKE_CLOSE, NULL, 0}};
    char err[QMP_ERRLEN] = "";
    struct fake_server fs;
    struct qmp_conn *c;
    int r;

    fake_start(&fs, script);
    c = connect_ok(&fs, NULL);
    ck_assert_int_eq(fake_stop(&fs), 0);
    r = qmp_execute(c, "query-status", NULL, NULL, err, sizeof(err));
    ck_assert_msg(r == -EPIPE || r == -ECONNRESET, "got %d %s", r, err);
    ck_assert_int_eq(qmp_execute(c, "query-status", NULL, NULL, NULL, 0), r);
    qmp_close(c);
}
END_TEST

START_TEST(test_conn_wait_event_timeout)
{
    static const struct fake_step script[] = {FAKE_HANDSHAKE, {FAKE_END, NULL, 0}};
    char err[QMP_ERRLEN] = "";
    struct fake_server fs;
    struct qmp_conn *c;

    fake_start(&fs, script);
    c = connect_ok(&fs, NULL);
    ck_assert_err(qmp_wait_event(c, SHORT_MS, err, sizeof(err)), -ETIMEDOUT, err,
                  "no event within 200 ms");
    ck_assert_int_eq(qmp_wait_event(c, 0, NULL, 0), -ETIMEDOUT);
    qmp_close(c);
    ck_assert_int_eq(fake_stop(&fs), 0);
}
END_TEST

/* query-cpus-fast through the transport, on a captured reply. */
START_TEST(test_conn_query_vcpus)
{
    static const struct fake_step script[] = {
        FAKE_HANDSHAKE,
        {FAKE_EXPECT, "query-cpus-fast", 0},
        {FAKE_REPLY_FIXTURE, "query-cpus-fast-4.json", 0},
        {FAKE_EXPECT, "query-cpus-fast", 0},
        {FAKE_REPLY_FIXTURE, "error-command-not-found.json", 0},
        {FAKE_END, NULL, 0},
    };
    char err[QMP_ERRLEN] = "";
    struct fake_server fs;
    struct qmp_vcpus vs;
    struct qmp_conn *c;

    fake_start(&fs, script);
    c = connect_ok(&fs, NULL);
    ck_assert_int_eq(qmp_query_vcpus(c, &vs, err, sizeof(err)), 0);
    ck_assert_uint_eq(vs.n, 4);
    ck_assert_int_eq(vs.v[3].cpu_index, 3);
    ck_assert_int_eq(vs.v[3].thread_id, vs.v[0].thread_id + 3);
    qmp_vcpus_free(&vs);
    ck_assert_err(qmp_query_vcpus(c, &vs, err, sizeof(err)), -EREMOTEIO, err,
                  "query-cpus-fast: CommandNotFound");
    ck_assert_uint_eq(vs.n, 0);
    qmp_close(c);
    ck_assert_int_eq(fake_stop(&fs), 0);
}
END_TEST

static Suite *
qmp_conn_suite(void)
{
    Suite *s = suite_create("qmp_conn");
    TCase *tc = tcase_create("failures");

    tcase_add_loop_test(tc, test_conn_fails_cleanly, 0,
                        (int)(sizeof(fail_cases) / sizeof(fail_cases[0])));
    tcase_add_test(tc, test_conn_no_socket);
    tcase_add_test(tc, test_conn_refused);
    tcase_add_test(tc, test_conn_send_to_closed_peer);
    tcase_add_test(tc, test_conn_wait_event_timeout);
    suite_add_tcase(s, tc);
    tc = tcase_create("session");
    tcase_add_test(tc, test_conn_handshake_and_execute);
    tcase_add_test(tc, test_conn_execute_with_arguments);
    tcase_add_test(tc, test_conn_events_between_command_and_reply);
    tcase_add_test(tc, test_conn_late_reply_skipped);
    tcase_add_test(tc, test_conn_split_reads_and_exact_max_line);
    tcase_add_test(tc, test_conn_poll_events_nonblocking);
    tcase_add_test(tc, test_conn_pump_survives_bad_lines);
    tcase_add_test(tc, test_conn_event_queue_bound);
    tcase_add_test(tc, test_conn_eof_after_shutdown);
    tcase_add_test(tc, test_conn_query_vcpus);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(qmp_conn_suite());
    int failed;

    fake_base_create();
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    fake_base_remove();
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
