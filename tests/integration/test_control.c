/* SPDX-License-Identifier: ISC */
/*
 * test_control.c - the control socket server (control.c) on real UNIX
 * sockets, with a handler that records what reaches it: framing and size
 * limits, malformed input, timeouts, client limits, slow readers, socket
 * file handling, and SO_PEERCRED rights of peers forked as `nobody`.
 * Needs root for the peer tests (setuid); exits 77 otherwise.
 */
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "control/ctl_client.h"
#include "margins.h"
#include "test_control_lib.h"

#define NOBODY     65534
#define TEST_GROUP 4242 /* a group nobody is not in unless a test says so */
#define NELEM(a)   (sizeof(a) / sizeof((a)[0]))

#define REQ_VERSION "{\"v\":1,\"cmd\":\"version\"}\n"
#define REQ_LIST    "{\"v\":1,\"cmd\":\"list\"}\n"
#define REQ_ATTACH  "{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"web1\",\"pid\":1}}\n"

/* What reached the handler. */
struct record {
    pthread_mutex_t lock;
    unsigned int calls;
    enum ctl_cmd cmd;
    char name[VS_NAME_SIZE];
    struct control_peer peer;
    atomic_bool big; /* answer list with a reply of 8 MiB */
};

static int
record_handler(void *ctx, const struct ctl_request *req, const struct control_peer *peer,
               struct json_object **result, char *err, size_t errlen)
{
    struct record *rec = ctx;
    char *big;

    pthread_mutex_lock(&rec->lock);
    rec->calls++;
    rec->cmd = req->cmd;
    snprintf(rec->name, sizeof(rec->name), "%s", req->name);
    rec->peer = *peer;
    pthread_mutex_unlock(&rec->lock);
    switch (req->cmd) {
    case CTL_VERSION:
        *result = json_object_new_object();
        json_object_object_add(*result, "version", json_object_new_string("test"));
        return 0;
    case CTL_LIST:
        *result = json_object_new_object();
        if (atomic_load(&rec->big)) {
            big = malloc(8 << 20);
            memset(big, 'x', (8 << 20) - 1);
            big[(8 << 20) - 1] = '\0';
            json_object_object_add(*result, "big", json_object_new_string(big));
            free(big);
        }
        json_object_object_add(*result, "domains", json_object_new_array());
        return 0;
    case CTL_SET:
        snprintf(err, errlen, "weight: 0 is out of range [1, 65535]");
        return -EINVAL;
    case CTL_DETACH:
        *result = json_object_new_object(); /* set, then an error: control.c must put it */
        snprintf(err, errlen, "%s: not attached", req->name);
        return -ENOENT;
    default:
        return 0;
    }
}

static struct record rec;
static struct tserver srv;

static void
start(gid_t group, uint64_t timeout_ns)
{
    memset(&rec, 0, sizeof(rec));
    pthread_mutex_init(&rec.lock, NULL);
    tserver_start(&srv, group, record_handler, &rec, timeout_ns);
}

/* Stats are published after each dispatch: wait up to 2 s for `cond` to hold. */
#define wait_stats(st, cond)                                                                       \
    do {                                                                                           \
        for (int i_ = 0; i_ < 200; i_++) {                                                         \
            tserver_stats(&srv, &(st));                                                            \
            if (cond)                                                                              \
                break;                                                                             \
            usleep(10 * 1000);                                                                     \
        }                                                                                          \
    } while (0)

static struct control_peer
last_peer(void)
{
    struct control_peer p;

    pthread_mutex_lock(&rec.lock);
    p = rec.peer;
    pthread_mutex_unlock(&rec.lock);
    return p;
}

static unsigned int
calls(void)
{
    unsigned int n;

    pthread_mutex_lock(&rec.lock);
    n = rec.calls;
    pthread_mutex_unlock(&rec.lock);
    return n;
}

/* --- Framing and errors. --- */

START_TEST(test_version_and_peer)
{
    struct json_object *res = NULL;
    struct tconn *c;
    char msg[256];

    start(CONTROL_GROUP_ROOT, 0);
    c = tconn_open(srv.path);
    ck_assert_int_eq(tconn_call(c, REQ_VERSION, &res, msg, sizeof(msg)), 0);
    ck_assert_str_eq(json_object_get_string(json_object_object_get(res, "version")), "test");
    json_object_put(res);
    ck_assert_uint_eq(calls(), 1);
    ck_assert_int_eq(last_peer().pid, getpid());
    ck_assert_int_eq(last_peer().uid, 0);
    ck_assert(last_peer().privileged);
    tconn_close(c);
    tserver_stop(&srv);
}
END_TEST

/* Malformed lines get an error; the connection stays usable; the handler never sees them. */
START_TEST(test_malformed_keeps_connection)
{
    static const struct {
        const char *line;
        int errnum;
        const char *msg;
    } cases[] = {
        {"hello\n", EPROTO, "not JSON"},
        {"[1]\n", EPROTO, "not a JSON object"},
        {"{\"v\":1,\"cmd\":\"list\"} {}\n", EPROTO, "trailing"},
        {"{\"v\":2,\"cmd\":\"list\"}\n", EPROTO, "version 2"},
        {"{\"v\":1,\"cmd\":\"reboot\"}\n", EINVAL, "unknown command"},
        {"{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"a b\",\"pid\":1}}\n", EINVAL, "name:"},
        {"\n", EPROTO, "not JSON"},
    };
    struct json_object *res = NULL;
    struct tconn *c;
    char msg[256];

    start(CONTROL_GROUP_ROOT, 0);
    c = tconn_open(srv.path);
    for (size_t i = 0; i < NELEM(cases); i++) {
        ck_assert_int_eq(tconn_call(c, cases[i].line, &res, msg, sizeof(msg)), cases[i].errnum);
        ck_assert_msg(strstr(msg, cases[i].msg) != NULL, "%s: %s", cases[i].line, msg);
        ck_assert_ptr_null(res);
    }
    ck_assert_uint_eq(calls(), 0);
    ck_assert_int_eq(tconn_errno(c, REQ_VERSION), 0);
    ck_assert_uint_eq(calls(), 1);
    tconn_close(c);
    tserver_stop(&srv);
}
END_TEST

/* Handler errors become error replies with errno names; a result set anyway is dropped. */
START_TEST(test_handler_errors)
{
    struct json_object *res = NULL;
    struct tconn *c;
    char msg[256];

    start(CONTROL_GROUP_ROOT, 0);
    c = tconn_open(srv.path);
    ck_assert_int_eq(tconn_call(c,
                                "{\"v\":1,\"cmd\":\"set\",\"args\":{\"name\":\"web1\",\"params\":"
                                "{\"weight\":\"0\"}}}\n",
                                &res, msg, sizeof(msg)),
                     EINVAL);
    ck_assert_str_eq(msg, "weight: 0 is out of range [1, 65535]");
    ck_assert_int_eq(tconn_call(c, "{\"v\":1,\"cmd\":\"detach\",\"args\":{\"name\":\"db\"}}\n",
                                &res, msg, sizeof(msg)),
                     ENOENT);
    ck_assert_str_eq(msg, "db: not attached");
    ck_assert_ptr_null(res);
    ck_assert_uint_eq(calls(), 2);
    tconn_close(c);
    tserver_stop(&srv);
}
END_TEST

/* Several requests in one write are answered in order (more than one burst). */
START_TEST(test_pipelined)
{
    char *many = malloc(100 * sizeof(REQ_VERSION) + 64), line[1024];
    struct tconn *c;

    start(CONTROL_GROUP_ROOT, 0);
    c = tconn_open(srv.path);
    many[0] = '\0';
    for (int i = 0; i < 100; i++)
        strcat(many, i == 50 ? "junk\n" : REQ_VERSION);
    tconn_send(c, many);
    for (int i = 0; i < 100; i++) {
        ck_assert_int_gt(tconn_line(c, line, sizeof(line), 5000), 0);
        ck_assert_msg(strstr(line, i == 50 ? "\"EPROTO\"" : "\"ok\":true") != NULL, "%d: %s", i,
                      line);
    }
    ck_assert_uint_eq(calls(), 99);
    free(many);
    tconn_close(c);
    tserver_stop(&srv);
}
END_TEST

/* A line of 65536 bytes with its newline is fine; one more byte is answered E2BIG, then closed. */
START_TEST(test_oversize_line)
{
    char *line = malloc(CTL_LINE_MAX + 16);
    struct control_stats st;
    struct tconn *c;
    char msg[256];
    struct json_object *res = NULL;

    start(CONTROL_GROUP_ROOT, 0);
    c = tconn_open(srv.path);
    memset(line, ' ', CTL_LINE_MAX);
    memcpy(line, REQ_VERSION, strlen(REQ_VERSION) - 1);
    line[CTL_LINE_MAX - 1] = '\n';
    line[CTL_LINE_MAX] = '\0';
    ck_assert_int_eq(tconn_call(c, line, &res, msg, sizeof(msg)), 0);
    json_object_put(res);
    line[CTL_LINE_MAX - 1] = ' ';
    line[CTL_LINE_MAX] = '\n';
    line[CTL_LINE_MAX + 1] = '\0';
    ck_assert_int_eq(tconn_call(c, line, &res, msg, sizeof(msg)), E2BIG);
    ck_assert_ptr_nonnull(strstr(msg, "longer than 65536"));
    ck_assert(tconn_eof(c, 2000));
    wait_stats(st, st.oversize > 0);
    ck_assert_uint_eq(st.oversize, 1);
    ck_assert_uint_eq(calls(), 1);
    free(line);
    tconn_close(c);
    tserver_stop(&srv);
}
END_TEST

/*
 * A partial line is dropped after the line timeout (ETIMEDOUT first); a
 * connection with nothing started is kept until the idle timeout, then
 * closed too: neither holds a slot for long.
 */
START_TEST(test_partial_line_timeout)
{
    struct tconn *idle, *slow;
    struct control_stats st;
    struct json_object *res = NULL;
    char msg[256], line[512];
    uint64_t t0;

    start(CONTROL_GROUP_ROOT, 300 * NSEC_PER_MSEC);
    idle = tconn_open(srv.path);
    ck_assert_int_eq(tconn_errno(idle, REQ_VERSION), 0);
    slow = tconn_open(srv.path);
    t0 = tnow_ms();
    tconn_send(slow, "{\"v\":1,\"cmd\"");
    ck_assert_int_gt(tconn_line(slow, line, sizeof(line), 3000), 0);
    ck_assert_uint_ge(tnow_ms() - t0, 250);
    ck_assert_int_eq(ctl_response_parse(line, strlen(line), &res, &(int){0}, msg, sizeof(msg)), 0);
    ck_assert_ptr_nonnull(strstr(line, "ETIMEDOUT"));
    ck_assert(tconn_eof(slow, 2000));
    wait_stats(st, st.timeouts > 0);
    ck_assert_uint_ge(st.timeouts, 1);
    /* The idle one (it spoke at the start, then nothing) goes at its idle timeout. */
    ck_assert(tconn_eof(idle, 2000));
    wait_stats(st, st.timeouts > 1);
    ck_assert_uint_eq(st.timeouts, 2);
    ck_assert_uint_eq(st.clients, 0);
    tconn_close(idle);
    tconn_close(slow);
    idle = tconn_open(srv.path);
    ck_assert_int_eq(tconn_errno(idle, REQ_VERSION), 0);
    tconn_close(idle);
    tserver_stop(&srv);
}
END_TEST

/* The last line may lack its newline if the client shuts down its side. */
START_TEST(test_eof_after_unterminated_line)
{
    char line[512];
    struct tconn *c;

    start(CONTROL_GROUP_ROOT, 0);
    c = tconn_open(srv.path);
    tconn_send(c, "{\"v\":1,\"cmd\":\"version\"}");
    shutdown(c->fd, SHUT_WR);
    ck_assert_int_gt(tconn_line(c, line, sizeof(line), 2000), 0);
    ck_assert_ptr_nonnull(strstr(line, "\"ok\":true"));
    ck_assert(tconn_eof(c, 2000));
    tconn_close(c);
    tserver_stop(&srv);
}
END_TEST

/*
 * A client that never reads an 8 MiB reply is dropped after the timeout;
 * meanwhile others are served at once: the daemon loop never blocks. A
 * loop that did would serve the other only when the stuck one is dropped,
 * the timeout less the 100 ms head start: the bound stays below that, and
 * both stretch under a sanitizer (an ASan build beside the rig took 673 ms
 * to build and send a reply, against a bound of 400).
 */
START_TEST(test_slow_reader_dropped)
{
    struct control_stats st;
    struct tconn *stuck, *other;
    uint64_t t0, timeout_ms = margin_stretch_ms(500);
    long got;

    start(CONTROL_GROUP_ROOT, timeout_ms * NSEC_PER_MSEC);
    atomic_store(&rec.big, true);
    stuck = tconn_open(srv.path);
    tconn_send(stuck, REQ_LIST);
    usleep(100 * 1000);
    other = tconn_open(srv.path);
    t0 = tnow_ms();
    ck_assert_int_eq(tconn_errno(other, REQ_VERSION), 0);
    MARGIN_MS_AT_MOST("test_slow_reader_dropped",
                      "another client served beside a stuck reader (ms)", tnow_ms() - t0,
                      timeout_ms - 100, "served before the stuck one is dropped");
    wait_stats(st, st.timeouts > 0);
    ck_assert_uint_eq(st.timeouts, 1);
    ck_assert_uint_eq(st.clients, 1);
    got = tconn_drain(stuck, 2000); /* part of the reply, then EOF or reset */
    ck_assert_int_ge(got, 0);
    ck_assert_int_lt(got, 8 << 20);
    ck_assert_int_eq(tconn_errno(other, REQ_VERSION), 0);
    tconn_close(stuck);
    tconn_close(other);
    tserver_stop(&srv);
}
END_TEST

/*
 * One request through the client library (ctl_client.c), as vcpuschedctl
 * and the hook send it: the daemon's errno, -1 if no answer came. A full
 * server answers EBUSY before our request goes out; the library must
 * still read that answer.
 */
static int
lib_call(const char *path, const char *line, char *msg, size_t msglen)
{
    struct json_object *res = NULL;
    struct ctl_client cl;
    const char *reply;
    int errnum = -1, r;
    size_t len;

    r = ctl_client_connect(&cl, path, 2000, msg, msglen);
    if (r == 0)
        r = ctl_client_call(&cl, line, &reply, &len, msg, msglen);
    if (r == 0 && ctl_response_parse(reply, len, &res, &errnum, msg, msglen) < 0)
        errnum = -1;
    json_object_put(res);
    ctl_client_close(&cl);
    return r < 0 ? -1 : errnum;
}

/*
 * Root may hold every slot, the reserve included; the next connection gets
 * EBUSY and is closed; the library reports that EBUSY; a freed slot is reused.
 */
START_TEST(test_client_limit)
{
    struct tconn *c[CONTROL_MAX_CLIENTS + CONTROL_ROOT_RESERVE], *extra;
    struct control_stats st;
    char line[512], msg[256];

    start(CONTROL_GROUP_ROOT, 0);
    for (int i = 0; i < CONTROL_MAX_CLIENTS + CONTROL_ROOT_RESERVE; i++) {
        c[i] = tconn_open(srv.path);
        ck_assert_int_eq(tconn_errno(c[i], REQ_VERSION), 0);
    }
    extra = tconn_open(srv.path);
    ck_assert_int_gt(tconn_line(extra, line, sizeof(line), 2000), 0);
    ck_assert_ptr_nonnull(strstr(line, "\"EBUSY\""));
    ck_assert(tconn_eof(extra, 2000));
    tconn_close(extra);
    ck_assert_int_eq(lib_call(srv.path, REQ_VERSION, msg, sizeof(msg)), EBUSY);
    ck_assert_msg(strstr(msg, "every connection slot is taken") != NULL, "%s", msg);
    wait_stats(st, st.refused_full > 1);
    ck_assert_uint_eq(st.refused_full, 2);
    tconn_close(c[0]);
    usleep(100 * 1000);
    extra = tconn_open(srv.path);
    ck_assert_int_eq(tconn_errno(extra, REQ_VERSION), 0);
    tconn_close(extra);
    for (int i = 1; i < CONTROL_MAX_CLIENTS + CONTROL_ROOT_RESERVE; i++)
        tconn_close(c[i]);
    tserver_stop(&srv);
}
END_TEST

/*
 * Slow senders (one byte, then silence) cannot lock root out: they hold
 * every slot only until the line timeout (1 s), are answered ETIMEDOUT
 * and closed; root, refused with a clear EBUSY meanwhile, then gets in.
 */
START_TEST(test_slow_senders_released)
{
    enum {
        N = CONTROL_MAX_CLIENTS + CONTROL_ROOT_RESERVE + 6
    };
    struct control_stats st;
    struct tconn *c[N];
    char msg[256];
    uint64_t t0;

    start(CONTROL_GROUP_ROOT, 0); /* the real timeouts: line 1 s, idle 10 s */
    for (int i = 0; i < N; i++) {
        c[i] = tconn_open(srv.path);
        /* A refused one may be closed already: its send fails, as intended. */
        (void)send(c[i]->fd, "{", 1, MSG_NOSIGNAL);
    }
    wait_stats(st,
               st.clients == CONTROL_MAX_CLIENTS + CONTROL_ROOT_RESERVE && st.refused_full == 6);
    ck_assert_uint_eq(st.refused_full, 6);
    ck_assert_int_eq(lib_call(srv.path, REQ_VERSION, msg, sizeof(msg)), EBUSY);
    t0 = tnow_ms();
    for (int i = 0; i < 300 && lib_call(srv.path, REQ_VERSION, msg, sizeof(msg)) != 0; i++)
        usleep(10 * 1000);
    ck_assert_int_eq(lib_call(srv.path, REQ_VERSION, msg, sizeof(msg)), 0);
    /* At the line timeout (1 s), long before the idle timeout (10 s). */
    MARGIN_MS_AT_MOST("test_slow_senders_released", "a refused client gets a slot (ms)",
                      tnow_ms() - t0, margin_stretch_ms(1500),
                      "the line timeout, 1 s, not the idle one, 10 s");
    wait_stats(st, st.timeouts >= CONTROL_MAX_CLIENTS + CONTROL_ROOT_RESERVE);
    ck_assert_uint_ge(st.timeouts, CONTROL_MAX_CLIENTS + CONTROL_ROOT_RESERVE);
    for (int i = 0; i < N; i++)
        tconn_close(c[i]);
    tserver_stop(&srv);
}
END_TEST

/*
 * The reserve is root's: with the shared slots full, a privileged peer
 * that is not root (the control group) gets EBUSY, root is served.
 */
START_TEST(test_root_reserve)
{
    static const gid_t supp[] = {TEST_GROUP};
    struct tconn *c[CONTROL_MAX_CLIENTS];
    char msg[256];
    int status;
    pid_t pid;

    start(TEST_GROUP, 0);
    for (int i = 0; i < CONTROL_MAX_CLIENTS; i++) {
        c[i] = tconn_open(srv.path);
        ck_assert_int_eq(tconn_errno(c[i], REQ_VERSION), 0);
    }
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (setgroups(1, supp) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
            _exit(100);
        _exit(lib_call(srv.path, REQ_VERSION, msg, sizeof(msg)) == EBUSY ? 0 : 1);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_int_eq(lib_call(srv.path, REQ_VERSION, msg, sizeof(msg)), 0);
    for (int i = 0; i < CONTROL_MAX_CLIENTS; i++)
        tconn_close(c[i]);
    tserver_stop(&srv);
}
END_TEST

/* A client vanishing with a request in flight does not disturb the others. */
START_TEST(test_peer_vanishes)
{
    struct tconn *gone, *c;

    start(CONTROL_GROUP_ROOT, 0);
    c = tconn_open(srv.path);
    for (int i = 0; i < 20; i++) {
        gone = tconn_open(srv.path);
        tconn_send(gone, REQ_VERSION REQ_VERSION REQ_VERSION);
        tconn_close(gone);
    }
    ck_assert_int_eq(tconn_errno(c, REQ_VERSION), 0);
    tconn_close(c);
    tserver_stop(&srv);
}
END_TEST

/* --- The socket file. --- */

START_TEST(test_socket_mode_root_only)
{
    struct stat st;
    char dir[160];

    start(CONTROL_GROUP_ROOT, 0);
    ck_assert_int_eq(stat(srv.path, &st), 0);
    ck_assert(S_ISSOCK(st.st_mode));
    ck_assert_uint_eq(st.st_mode & 07777, 0600);
    ck_assert_uint_eq(st.st_uid, 0);
    snprintf(dir, sizeof(dir), "%s/run", srv.dir);
    ck_assert_int_eq(stat(dir, &st), 0);
    ck_assert_uint_eq(st.st_mode & 07777, 0755);
    tserver_stop(&srv);
}
END_TEST

START_TEST(test_socket_mode_group)
{
    struct stat st;

    start(TEST_GROUP, 0);
    ck_assert_int_eq(stat(srv.path, &st), 0);
    ck_assert_uint_eq(st.st_mode & 07777, 0660);
    ck_assert_uint_eq(st.st_gid, TEST_GROUP);
    tserver_stop(&srv);
}
END_TEST

/* A socket left behind by a dead daemon is replaced. */
START_TEST(test_stale_socket_replaced)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    char dir[160], err[256];
    struct tconn *c;
    int fd;

    tserver_paths(&srv);
    snprintf(dir, sizeof(dir), "%s/run", srv.dir);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", srv.path);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    close(fd); /* the file stays; nobody listens */
    memset(&rec, 0, sizeof(rec));
    pthread_mutex_init(&rec.lock, NULL);
    ck_assert_msg(control_open(&srv.ctl, srv.path, CONTROL_GROUP_ROOT, record_handler, &rec, err,
                               sizeof(err)) == 0,
                  "%s", err);
    ck_assert_int_eq(pthread_create(&srv.thread, NULL, tserver_run, &srv), 0);
    c = tconn_open(srv.path);
    ck_assert_int_eq(tconn_errno(c, REQ_VERSION), 0);
    tconn_close(c);
    tserver_stop(&srv);
}
END_TEST

/* A second daemon on the same path is refused and leaves the first one's socket alone. */
START_TEST(test_second_daemon_refused)
{
    struct control *second = NULL;
    char err[256] = "";
    struct tconn *c;

    start(CONTROL_GROUP_ROOT, 0);
    ck_assert_int_eq(
        control_open(&second, srv.path, CONTROL_GROUP_ROOT, record_handler, &rec, err, sizeof(err)),
        -EADDRINUSE);
    ck_assert_ptr_null(second);
    ck_assert_msg(strstr(err, srv.path) != NULL && strstr(err, "another daemon") != NULL, "%s",
                  err);
    c = tconn_open(srv.path);
    ck_assert_int_eq(tconn_errno(c, REQ_VERSION), 0);
    tconn_close(c);
    tserver_stop(&srv);
}
END_TEST

/* Something else at the path (a regular file) is never removed. */
START_TEST(test_not_a_socket_kept)
{
    struct control *ctl = NULL;
    char dir[160], err[256] = "";
    struct stat st;
    FILE *f;

    tserver_paths(&srv);
    snprintf(dir, sizeof(dir), "%s/run", srv.dir);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    f = fopen(srv.path, "w");
    fputs("precious\n", f);
    fclose(f);
    ck_assert_int_eq(
        control_open(&ctl, srv.path, CONTROL_GROUP_ROOT, record_handler, &rec, err, sizeof(err)),
        -EEXIST);
    ck_assert_ptr_nonnull(strstr(err, "not a socket"));
    ck_assert_int_eq(stat(srv.path, &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_int_eq(st.st_size, 9);
    unlink(srv.path);
    rmdir(dir);
    rmdir(srv.dir);
}
END_TEST

/* control_close removes its socket, but not a file that replaced it meanwhile. */
START_TEST(test_close_unlinks_own_socket_only)
{
    struct control *ctl = NULL;
    char err[256], dir[160];
    struct stat st;
    FILE *f;

    tserver_paths(&srv);
    ck_assert_int_eq(
        control_open(&ctl, srv.path, CONTROL_GROUP_ROOT, record_handler, &rec, err, sizeof(err)),
        0);
    control_close(ctl);
    ck_assert_int_eq(stat(srv.path, &st), -1);
    ck_assert_int_eq(
        control_open(&ctl, srv.path, CONTROL_GROUP_ROOT, record_handler, &rec, err, sizeof(err)),
        0);
    unlink(srv.path);
    f = fopen(srv.path, "w");
    fclose(f);
    control_close(ctl);
    ck_assert_int_eq(stat(srv.path, &st), 0);
    unlink(srv.path);
    snprintf(dir, sizeof(dir), "%s/run", srv.dir);
    ck_assert_int_eq(rmdir(dir), 0);
    ck_assert_int_eq(rmdir(srv.dir), 0);
}
END_TEST

START_TEST(test_path_too_long)
{
    struct control *ctl = NULL;
    char path[200], err[256] = "";

    memset(path, 'a', sizeof(path) - 1);
    path[0] = '/';
    path[sizeof(path) - 1] = '\0';
    ck_assert_int_eq(
        control_open(&ctl, path, CONTROL_GROUP_ROOT, record_handler, &rec, err, sizeof(err)),
        -ENAMETOOLONG);
    ck_assert_ptr_nonnull(strstr(err, "socket path"));
}
END_TEST

/* --- Rights of peers (SO_PEERCRED). --- */

/* One request from a child process: its errno, or -1 if the exchange failed. */
static int
child_call(const char *path, const char *line)
{
    struct json_object *res = NULL;
    char buf[4096], msg[256];
    int fd = tconn_open_fd(path), errnum = -1;
    size_t len = 0;
    ssize_t n;

    if (fd < 0)
        return -1;
    if (send(fd, line, strlen(line), MSG_NOSIGNAL) != (ssize_t)strlen(line))
        goto out;
    while (len < sizeof(buf) - 1 && memchr(buf, '\n', len) == NULL &&
           (n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0)) > 0)
        len += (size_t)n;
    if (ctl_response_parse(buf, len, &res, &errnum, msg, sizeof(msg)) < 0)
        errnum = -1;
    json_object_put(res);
out:
    close(fd);
    return errnum;
}

/*
 * Fork a peer with the given identity; it runs `lines` and exits with the
 * index + 1 of the first whose errno differs from `expect`, or 0.
 */
static int
run_peer(uid_t uid, gid_t gid, const gid_t *groups, size_t nr_groups, const char *const *lines,
         const int *expect, size_t n)
{
    pid_t pid = fork();
    int status;

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (setgroups(nr_groups, groups) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
            _exit(100);
        for (size_t i = 0; i < n; i++)
            if (child_call(srv.path, lines[i]) != expect[i])
                _exit((int)i + 1);
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static const char *const all_lines[] = {
    REQ_VERSION,
    REQ_LIST,
    "{\"v\":1,\"cmd\":\"stats\"}\n",
    "{\"v\":1,\"cmd\":\"pool\",\"args\":{\"op\":\"list\"}}\n",
    REQ_ATTACH,
    "{\"v\":1,\"cmd\":\"detach\",\"args\":{\"name\":\"web1\"}}\n",
    "{\"v\":1,\"cmd\":\"set\",\"args\":{\"name\":\"web1\",\"params\":{\"weight\":\"1\"}}}\n",
    ("{\"v\":1,\"cmd\":\"pool\",\"args\":{\"op\":\"create\",\"name\":\"p\",\"cpus\":\"1\","
     "\"policy\":\"rr\"}}\n"),
    "{\"v\":1,\"cmd\":\"pool\",\"args\":{\"op\":\"set\",\"name\":\"p\",\"policy\":\"rr\"}}\n",
    "{\"v\":1,\"cmd\":\"pool\",\"args\":{\"op\":\"destroy\",\"name\":\"p\"}}\n",
    "garbage\n",
};
/* What the record handler answers a privileged peer. */
static const int privileged_expect[] = {0, 0, 0, 0, 0, ENOENT, EINVAL, 0, 0, 0, EPROTO};
/* Unprivileged: read-only commands pass, the rest is EPERM before the handler runs. */
static const int unprivileged_expect[] = {0,     0,     0,     0,     EPERM, EPERM,
                                          EPERM, EPERM, EPERM, EPERM, EPROTO};

START_TEST(test_unprivileged_peer)
{
    struct control_stats st;

    start(CONTROL_GROUP_ROOT, 0);
    ck_assert_int_eq(chmod(srv.path, 0666), 0); /* let nobody connect; rights are control.c's */
    ck_assert_int_eq(
        run_peer(NOBODY, NOBODY, NULL, 0, all_lines, unprivileged_expect, NELEM(all_lines)), 0);
    ck_assert_uint_eq(calls(), 4); /* version, list, stats, pool list */
    ck_assert_uint_eq(last_peer().uid, NOBODY);
    ck_assert(!last_peer().privileged);
    wait_stats(st, st.denied >= 6);
    ck_assert_uint_eq(st.denied, 6);
    tserver_stop(&srv);
}
END_TEST

/* Membership of the configured group, as a supplementary or the primary group, is privilege. */
START_TEST(test_group_member_peer)
{
    static const gid_t supp[] = {100, TEST_GROUP};

    start(TEST_GROUP, 0);
    ck_assert_int_eq(
        run_peer(NOBODY, NOBODY, supp, NELEM(supp), all_lines, privileged_expect, NELEM(all_lines)),
        0);
    ck_assert(last_peer().privileged);
    ck_assert_int_eq(
        run_peer(NOBODY, TEST_GROUP, NULL, 0, all_lines, privileged_expect, NELEM(all_lines)), 0);
    ck_assert_uint_eq(last_peer().gid, TEST_GROUP);
    ck_assert(last_peer().privileged);
    tserver_stop(&srv);
}
END_TEST

/* The socket's mode keeps out who is in neither group; root always gets in. */
START_TEST(test_group_mode_enforced)
{
    static const char *const one[] = {REQ_VERSION};
    static const int refused[] = {-1}, ok[] = {0};

    start(TEST_GROUP, 0);
    ck_assert_int_eq(run_peer(NOBODY, NOBODY, NULL, 0, one, refused, 1), 0);
    ck_assert_int_eq(run_peer(0, 0, NULL, 0, one, ok, 1), 0);
    tserver_stop(&srv);
}
END_TEST

/* Unprivileged peers get at most CONTROL_MAX_UNPRIV slots, so root always finds one. */
static int
hog_slots(const char *path)
{
    int fds[CONTROL_MAX_UNPRIV + 1];
    char buf[512];
    ssize_t n;

    for (int i = 0; i <= CONTROL_MAX_UNPRIV; i++)
        if ((fds[i] = tconn_open_fd(path)) < 0)
            return 10;
    /* The last one is refused with EBUSY. */
    n = recv(fds[CONTROL_MAX_UNPRIV], buf, sizeof(buf) - 1, 0);
    if (n <= 0)
        return 11;
    buf[n] = '\0';
    if (strstr(buf, "EBUSY") == NULL)
        return 12;
    pause(); /* hold the other slots until killed */
    return 0;
}

START_TEST(test_unprivileged_slots_bounded)
{
    struct tconn *c;
    int status;
    pid_t pid;

    start(CONTROL_GROUP_ROOT, 0);
    ck_assert_int_eq(chmod(srv.path, 0666), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
            _exit(100);
        _exit(hog_slots(srv.path));
    }
    for (int i = 0; i < 200 && waitpid(pid, &status, WNOHANG) == 0; i++) {
        struct control_stats st;

        tserver_stats(&srv, &st);
        if (st.refused_full > 0)
            break;
        usleep(10 * 1000);
    }
    ck_assert_int_eq(waitpid(pid, &status, WNOHANG), 0); /* still holding its slots */
    c = tconn_open(srv.path);
    ck_assert_int_eq(tconn_errno(c, REQ_ATTACH), 0);
    tconn_close(c);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    tserver_stop(&srv);
}
END_TEST

static Suite *
control_suite(void)
{
    Suite *s = suite_create("control");
    TCase *tc = tcase_create("framing");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_version_and_peer);
    tcase_add_test(tc, test_malformed_keeps_connection);
    tcase_add_test(tc, test_handler_errors);
    tcase_add_test(tc, test_pipelined);
    tcase_add_test(tc, test_oversize_line);
    tcase_add_test(tc, test_partial_line_timeout);
    tcase_add_test(tc, test_eof_after_unterminated_line);
    tcase_add_test(tc, test_slow_reader_dropped);
    tcase_add_test(tc, test_client_limit);
    tcase_add_test(tc, test_slow_senders_released);
    tcase_add_test(tc, test_peer_vanishes);
    suite_add_tcase(s, tc);
    tc = tcase_create("socket");
    tcase_add_test(tc, test_socket_mode_root_only);
    tcase_add_test(tc, test_socket_mode_group);
    tcase_add_test(tc, test_stale_socket_replaced);
    tcase_add_test(tc, test_second_daemon_refused);
    tcase_add_test(tc, test_not_a_socket_kept);
    tcase_add_test(tc, test_close_unlinks_own_socket_only);
    tcase_add_test(tc, test_path_too_long);
    suite_add_tcase(s, tc);
    tc = tcase_create("peers");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_unprivileged_peer);
    tcase_add_test(tc, test_group_member_peer);
    tcase_add_test(tc, test_group_mode_enforced);
    tcase_add_test(tc, test_unprivileged_slots_bounded);
    tcase_add_test(tc, test_root_reserve);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr;
    int failed;

    if (geteuid() != 0) {
        fprintf(stderr, "test_control: needs root (peers are forked as nobody); skipped\n");
        return 77;
    }
    signal(SIGPIPE, SIG_IGN);
    sr = srunner_create(control_suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
