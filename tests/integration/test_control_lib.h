/* SPDX-License-Identifier: ISC */
/*
 * test_control_lib.h - a real control server (control.c) on a thread of
 * the test process, and a line-oriented client, for test_control.c and
 * test_control_cli.c. The server thread runs the daemon's pattern: wait
 * for control_fd() to become readable, control_dispatch(), repeat.
 */
#ifndef VCPUSCHED_TEST_CONTROL_LIB_H
#define VCPUSCHED_TEST_CONTROL_LIB_H

#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "control/control.h"

struct tserver {
    char dir[64];   /* mkdtemp'd */
    char path[128]; /* dir/run/control.sock: the run/ level is created by control_open */
    struct control *ctl;
    pthread_t thread;
    atomic_bool stop;
    pthread_mutex_t lock;    /* guards st */
    struct control_stats st; /* published after every dispatch */
};

static inline uint64_t
tnow_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline void *
tserver_run(void *arg)
{
    struct tserver *ts = arg;

    while (!atomic_load(&ts->stop)) {
        struct pollfd pfd = {.fd = control_fd(ts->ctl), .events = POLLIN};

        if (poll(&pfd, 1, 20) > 0)
            control_dispatch(ts->ctl);
        pthread_mutex_lock(&ts->lock);
        control_get_stats(ts->ctl, &ts->st);
        pthread_mutex_unlock(&ts->lock);
    }
    return NULL;
}

/* A temporary directory and the socket path inside it (not created yet). */
static inline void
tserver_paths(struct tserver *ts)
{
    memset(ts, 0, sizeof(*ts));
    snprintf(ts->dir, sizeof(ts->dir), "/tmp/vcpusched-ctl-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(ts->dir));
    ck_assert_int_eq(chmod(ts->dir, 0755), 0); /* let forked unprivileged peers in */
    snprintf(ts->path, sizeof(ts->path), "%s/run/control.sock", ts->dir);
    pthread_mutex_init(&ts->lock, NULL);
}

static inline void
tserver_start(struct tserver *ts, gid_t group, control_handler_fn fn, void *ctx,
              uint64_t timeout_ns)
{
    char err[256] = "";
    int r;

    tserver_paths(ts);
    r = control_open(&ts->ctl, ts->path, group, fn, ctx, err, sizeof(err));
    ck_assert_msg(r == 0, "control_open: %s", err);
    if (timeout_ns != 0)
        control_set_timeout(ts->ctl, timeout_ns);
    ck_assert_int_eq(pthread_create(&ts->thread, NULL, tserver_run, ts), 0);
}

static inline void
tserver_stats(struct tserver *ts, struct control_stats *st)
{
    pthread_mutex_lock(&ts->lock);
    *st = ts->st;
    pthread_mutex_unlock(&ts->lock);
}

static inline void
tserver_stop(struct tserver *ts)
{
    char cmd[160];

    atomic_store(&ts->stop, true);
    pthread_join(ts->thread, NULL);
    control_close(ts->ctl);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", ts->dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* --- A client that reads whole lines. --- */

struct tconn {
    int fd;
    char buf[1 << 16];
    size_t len;
};

static inline int
tconn_open_fd(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        if (fd >= 0)
            close(fd);
        return -errno;
    }
    return fd;
}

static inline struct tconn *
tconn_open(const char *path)
{
    struct tconn *c = calloc(1, sizeof(*c));

    ck_assert_ptr_nonnull(c);
    c->fd = tconn_open_fd(path);
    ck_assert_msg(c->fd >= 0, "connect %s: %s", path, strerror(-c->fd));
    return c;
}

static inline void
tconn_close(struct tconn *c)
{
    close(c->fd);
    free(c);
}

static inline void
tconn_send_len(struct tconn *c, const char *s, size_t len)
{
    size_t off = 0;

    while (off < len) {
        ssize_t n = send(c->fd, s + off, len - off, MSG_NOSIGNAL);

        ck_assert_msg(n > 0, "send: %s", strerror(errno));
        off += (size_t)n;
    }
}

static inline void
tconn_send(struct tconn *c, const char *s)
{
    tconn_send_len(c, s, strlen(s));
}

/*
 * The next line (without '\n') into out[outlen]; returns its length, -1
 * at EOF, -2 on timeout. Waits at most timeout_ms.
 */
static inline int
tconn_line(struct tconn *c, char *out, size_t outlen, int timeout_ms)
{
    uint64_t end = tnow_ms() + (uint64_t)timeout_ms;

    for (;;) {
        char *nl = memchr(c->buf, '\n', c->len);
        struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
        ssize_t n;

        if (nl != NULL) {
            size_t l = (size_t)(nl - c->buf);

            ck_assert_uint_lt(l, outlen);
            memcpy(out, c->buf, l);
            out[l] = '\0';
            memmove(c->buf, nl + 1, c->len - l - 1);
            c->len -= l + 1;
            return (int)l;
        }
        ck_assert_uint_lt(c->len, sizeof(c->buf));
        if (tnow_ms() >= end || poll(&pfd, 1, (int)(end - tnow_ms())) == 0)
            return -2;
        n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
        if (n <= 0)
            return -1;
        c->len += (size_t)n;
    }
}

/* Send one request line and parse the reply: 0 (result set) or the error errno. */
static inline int
tconn_call(struct tconn *c, const char *line, struct json_object **result, char *msg, size_t msglen)
{
    char reply[1 << 16];
    int errnum, n;

    tconn_send(c, line);
    n = tconn_line(c, reply, sizeof(reply), 5000);
    ck_assert_msg(n >= 0, "no reply to %s (%d)", line, n);
    ck_assert_msg(ctl_response_parse(reply, (size_t)n, result, &errnum, msg, msglen) == 0,
                  "bad reply: %s", reply);
    return errnum;
}

/* Like tconn_call, for callers that only want the errno (0 = ok). */
static inline int
tconn_errno(struct tconn *c, const char *line)
{
    struct json_object *res = NULL;
    char msg[256];
    int e = tconn_call(c, line, &res, msg, sizeof(msg));

    json_object_put(res);
    return e;
}

/* True if the server closes the connection within timeout_ms. */
static inline bool
tconn_eof(struct tconn *c, int timeout_ms)
{
    char line[1 << 16];
    int n;

    while ((n = tconn_line(c, line, sizeof(line), timeout_ms)) >= 0)
        ;
    return n == -1;
}

/* Read and discard until EOF or reset: the byte count, or -2 on timeout. */
static inline long
tconn_drain(struct tconn *c, int timeout_ms)
{
    uint64_t end = tnow_ms() + (uint64_t)timeout_ms;
    long total = (long)c->len;
    char buf[65536];

    for (;;) {
        struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
        ssize_t n;

        if (tnow_ms() >= end || poll(&pfd, 1, (int)(end - tnow_ms())) == 0)
            return -2;
        n = recv(c->fd, buf, sizeof(buf), 0);
        if (n <= 0)
            return total;
        total += n;
    }
}

#endif /* VCPUSCHED_TEST_CONTROL_LIB_H */
