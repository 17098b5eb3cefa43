/* SPDX-License-Identifier: ISC */
/*
 * qmp_conn.c - the QMP transport: a non-blocking UNIX socket, CRLF line
 * framing with a maximum line size, greeting and capabilities negotiation,
 * commands matched to replies by a per-connection id, and a bounded queue
 * of the events that arrive in between. Every wait is a poll() against an
 * absolute deadline on CLOCK_MONOTONIC, so no call can block forever.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "qmp_priv.h"

/* First receive buffer; grows by doubling up to max_line + CRLF. */
#define CONN_RBUF_INITIAL 4096
/* Retry step while the listener's backlog is full (connect gives EAGAIN). */
#define CONN_BACKLOG_RETRY_MS 10
/* First event ring allocation; doubles up to max_events. */
#define CONN_EVQ_INITIAL 16

struct qmp_conn {
    int fd;
    int timeout_ms;
    size_t max_line;
    size_t max_events;
    int dead; /* sticky -errno once the stream is unusable, else 0 */
    char dead_msg[QMP_ERRLEN];
    int64_t next_id;
    /* Received bytes: [rstart, rlen) are pending, [rstart, rscan) hold no '\n'. */
    char *rbuf;
    size_t rcap, rstart, rlen, rscan;
    /* Event ring: evq_len events from evq_head, in arrival order. */
    struct qmp_msg *evq;
    size_t evq_cap, evq_head, evq_len;
    struct qmp_stats stats;
    struct qmp_greeting greeting;
};

static int64_t
now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t
deadline_after(int timeout_ms)
{
    return now_ns() + (int64_t)timeout_ms * 1000000;
}

/* Milliseconds left before `deadline`, rounded up so poll() never wakes early. */
static int
ms_left(int64_t deadline)
{
    int64_t left = deadline - now_ns();

    return left <= 0 ? 0 : (int)((left + 999999) / 1000000);
}

/* Wait for `events` on the socket; 0 when ready (or hung up), -ETIMEDOUT. */
static int
conn_wait(int fd, short events, int64_t deadline)
{
    struct pollfd p = {.fd = fd, .events = events};

    for (;;) {
        int n = poll(&p, 1, ms_left(deadline));

        if (n > 0)
            return 0;
        if (n == 0)
            return -ETIMEDOUT;
        if (errno != EINTR)
            return -errno;
    }
}

/* Mark the stream unusable; every later call reports the same error. */
static int
conn_fail(struct qmp_conn *c, int err, char *errbuf, size_t errlen, const char *msg)
{
    c->dead = err;
    qmp_errf(c->dead_msg, sizeof(c->dead_msg), "%s", msg);
    qmp_errf(errbuf, errlen, "%s", msg);
    return err;
}

static int
conn_check_alive(const struct qmp_conn *c, char *errbuf, size_t errlen)
{
    if (c->dead == 0)
        return 0;
    qmp_errf(errbuf, errlen, "%s", c->dead_msg);
    return c->dead;
}

/*
 * connect() on a non-blocking UNIX socket; returns 0 or an errno value.
 * It completes at once, or fails with EAGAIN while the listener's backlog
 * is full (retried in small steps until the deadline); EINPROGRESS and
 * EINTR (the connection then completes in the background) are waited for.
 */
static int
conn_connect_unix(int fd, const struct sockaddr_un *sa, int64_t deadline)
{
    socklen_t len = sizeof(int);
    int err;

    for (;;) {
        if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
            return 0;
        err = errno;
        if (err == EAGAIN && ms_left(deadline) == 0)
            return ETIMEDOUT;
        if (err == EAGAIN) {
            poll(NULL, 0, CONN_BACKLOG_RETRY_MS);
            continue;
        }
        if (err != EINPROGRESS && err != EINTR)
            return err;
        if (conn_wait(fd, POLLOUT, deadline) < 0)
            return ETIMEDOUT;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            return errno;
        return err;
    }
}

static int
conn_open(struct qmp_conn *c, const char *path, int64_t deadline, char *errbuf, size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int err;

    if (strlen(path) >= sizeof(sa.sun_path)) {
        qmp_errf(errbuf, errlen, "qmp: socket path too long: %s", path);
        return -ENAMETOOLONG;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    err = c->fd < 0 ? errno : conn_connect_unix(c->fd, &sa, deadline);
    if (err != 0)
        qmp_errf(errbuf, errlen, "qmp: connect %s: %s", path, strerror(err));
    return -err;
}

/* Send all of buf before the deadline. MSG_NOSIGNAL: a dead peer is -EPIPE, not SIGPIPE. */
static int
conn_send(struct qmp_conn *c, const char *buf, size_t len, int64_t deadline, const char *what,
          char *errbuf, size_t errlen)
{
    char msg[QMP_ERRLEN];
    size_t off = 0;
    ssize_t n;
    int err;

    while (off < len) {
        n = send(c->fd, buf + off, len - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (conn_wait(c->fd, POLLOUT, deadline) != -ETIMEDOUT)
                continue;
            qmp_errf(msg, sizeof(msg), "qmp: %s: send timed out", what);
            /* Half a command left in QEMU's parser would corrupt the next one. */
            if (off == 0) {
                qmp_errf(errbuf, errlen, "%s", msg);
                return -ETIMEDOUT;
            }
            return conn_fail(c, -ETIMEDOUT, errbuf, errlen, msg);
        }
        err = n < 0 ? errno : EPIPE;
        qmp_errf(msg, sizeof(msg), "qmp: %s: send: %s", what, strerror(err));
        return conn_fail(c, -err, errbuf, errlen, msg);
    }
    return 0;
}

/*
 * Take the next complete line out of the buffer (without its LF). Returns
 * 1 with *line and *len set, 0 if no complete line is buffered yet, or a
 * sticky -EMSGSIZE once the pending line exceeds max_line (plus its CR):
 * there is no resynchronising in the middle of an oversize JSON text.
 */
static int
conn_take_line(struct qmp_conn *c, const char **line, size_t *len, char *errbuf, size_t errlen)
{
    /* rbuf is NULL until the first read: no memchr() on it then. */
    char *nl;
    char msg[QMP_ERRLEN];
    size_t content;

    /* The buffer's marks: consumed <= scanned <= received <= capacity. */
    QMP_ASSERT(c->rstart <= c->rscan && c->rscan <= c->rlen && c->rlen <= c->rcap);
    nl = c->rlen > c->rscan ? memchr(c->rbuf + c->rscan, '\n', c->rlen - c->rscan) : NULL;
    if (nl == NULL) {
        c->rscan = c->rlen;
        content = c->rlen - c->rstart;
        if (content <= c->max_line + 1)
            return 0;
    } else {
        *line = c->rbuf + c->rstart;
        *len = (size_t)(nl - *line);
        content = *len - (*len > 0 && (*line)[*len - 1] == '\r');
        c->rstart = c->rscan = (size_t)(nl + 1 - c->rbuf);
        if (content <= c->max_line)
            return 1;
    }
    qmp_errf(msg, sizeof(msg), "qmp: server line longer than %zu bytes", c->max_line);
    return conn_fail(c, -EMSGSIZE, errbuf, errlen, msg);
}

/* Room for one more read: drop consumed bytes, then grow up to max_line + CRLF. */
static int
conn_make_room(struct qmp_conn *c)
{
    size_t limit = c->max_line + 2, ncap;
    char *nb;

    if (c->rstart > 0) {
        memmove(c->rbuf, c->rbuf + c->rstart, c->rlen - c->rstart);
        c->rlen -= c->rstart;
        c->rscan -= c->rstart;
        c->rstart = 0;
    }
    QMP_ASSERT(c->rstart == 0 && c->rscan <= c->rlen && c->rlen <= c->rcap);
    if (c->rlen < c->rcap)
        return 0;
    if (c->rcap >= limit)
        return -EMSGSIZE; /* unreachable: conn_take_line() fails first */
    ncap = c->rcap == 0 ? CONN_RBUF_INITIAL : c->rcap * 2;
    ncap = ncap > limit ? limit : ncap;
    nb = realloc(c->rbuf, ncap);
    if (nb == NULL)
        return -ENOMEM;
    c->rbuf = nb;
    c->rcap = ncap;
    return 0;
}

/* One read(): > 0 bytes added, -EAGAIN if none are ready, or a sticky error. */
static int
conn_fill(struct qmp_conn *c, char *errbuf, size_t errlen)
{
    char msg[QMP_ERRLEN];
    ssize_t n;
    int r = conn_make_room(c);

    if (r < 0) {
        qmp_errf(errbuf, errlen, "qmp: receive buffer: %s", strerror(-r));
        return r;
    }
    n = recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen, 0);
    if (n > 0) {
        c->rlen += (size_t)n;
        return (int)n;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return -EAGAIN;
    if (n == 0 && c->rlen > c->rstart)
        return conn_fail(c, -ECONNRESET, errbuf, errlen, "qmp: connection closed mid-message");
    if (n == 0)
        return conn_fail(c, -ECONNRESET, errbuf, errlen, "qmp: connection closed by peer");
    r = -errno;
    qmp_errf(msg, sizeof(msg), "qmp: receive: %s", strerror(-r));
    return conn_fail(c, r, errbuf, errlen, msg);
}

static bool
is_blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return false;
    return true;
}

/*
 * Next server message, waiting until the deadline (a deadline in the past
 * still reads whatever is ready). Returns 0 with *msg filled, -ETIMEDOUT
 * without touching errbuf (the caller knows what it was waiting for), or
 * another error. Blank lines are skipped.
 */
static int
conn_read_msg(struct qmp_conn *c, int64_t deadline, struct qmp_msg *msg, char *errbuf,
              size_t errlen)
{
    const char *line;
    size_t len;
    int r;

    for (;;) {
        r = conn_take_line(c, &line, &len, errbuf, errlen);
        if (r < 0)
            return r;
        if (r == 1 && is_blank(line, len))
            continue;
        if (r == 1)
            return qmp_msg_parse(line, len, msg, errbuf, errlen);
        r = conn_fill(c, errbuf, errlen);
        if (r != -EAGAIN && r < 0)
            return r;
        if (r == -EAGAIN)
            r = conn_wait(c->fd, POLLIN, deadline);
        if (r < 0 && r != -ETIMEDOUT)
            qmp_errf(errbuf, errlen, "qmp: poll: %s", strerror(-r));
        if (r < 0)
            return r;
    }
}

/* Grow the ring (keeping order) up to max_events. */
static int
evq_grow(struct qmp_conn *c)
{
    size_t ncap = c->evq_cap == 0 ? CONN_EVQ_INITIAL : c->evq_cap * 2;
    struct qmp_msg *nq;

    ncap = ncap > c->max_events ? c->max_events : ncap;
    nq = calloc(ncap, sizeof(*nq));
    if (nq == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < c->evq_len; i++)
        nq[i] = c->evq[(c->evq_head + i) % c->evq_cap];
    free(c->evq);
    c->evq = nq;
    c->evq_cap = ncap;
    c->evq_head = 0;
    return 0;
}

/* Queue an event (taking it over); when full, the oldest one is dropped and counted. */
static void
evq_push(struct qmp_conn *c, struct qmp_msg *ev)
{
    if (c->evq_len == c->max_events) {
        qmp_msg_free(&c->evq[c->evq_head]);
        c->evq_head = (c->evq_head + 1) % c->evq_cap;
        c->evq_len--;
        c->stats.events_dropped++;
    }
    if (c->evq_len == c->evq_cap && evq_grow(c) < 0) {
        qmp_msg_free(ev);
        c->stats.events_dropped++;
        return;
    }
    c->evq[(c->evq_head + c->evq_len) % c->evq_cap] = *ev;
    c->evq_len++;
    c->stats.events_queued++;
    memset(ev, 0, sizeof(*ev));
}

int
qmp_next_event(struct qmp_conn *c, struct qmp_msg *ev)
{
    if (c->evq_len == 0) {
        memset(ev, 0, sizeof(*ev));
        return -EAGAIN;
    }
    *ev = c->evq[c->evq_head];
    memset(&c->evq[c->evq_head], 0, sizeof(*ev));
    c->evq_head = (c->evq_head + 1) % c->evq_cap;
    c->evq_len--;
    return 0;
}

/*
 * Route one message that is not the awaited reply: events are queued,
 * replies nobody waits for (late answers to timed-out commands) counted.
 * Returns -EPROTO for a greeting in mid-session.
 */
static int
conn_route(struct qmp_conn *c, struct qmp_msg *msg, char *errbuf, size_t errlen)
{
    int r = 0;

    if (msg->kind == QMP_MSG_EVENT) {
        evq_push(c, msg);
        return 0;
    }
    if (msg->kind == QMP_MSG_GREETING) {
        qmp_errf(errbuf, errlen, "qmp: unexpected greeting in mid-session");
        r = -EPROTO;
    } else if (msg->id == NULL && msg->kind == QMP_MSG_ERROR) {
        c->stats.errors_stray++;
    } else {
        c->stats.replies_stray++;
    }
    qmp_msg_free(msg);
    return r;
}

/*
 * Take in everything that is ready, without blocking: events are queued,
 * stray replies counted. A line that does not parse is counted, dropped,
 * and the pump goes on: no complete line may stay behind in the buffer,
 * where the caller's poll() on the socket would never see it. Returns the
 * first -EPROTO met, a sticky error, or 0.
 */
static int
conn_pump(struct qmp_conn *c, char *errbuf, size_t errlen)
{
    char err[QMP_ERRLEN];
    struct qmp_msg msg;
    int r, first = 0;

    for (;;) {
        err[0] = '\0';
        r = conn_read_msg(c, 0, &msg, err, sizeof(err));
        if (r == 0)
            r = conn_route(c, &msg, err, sizeof(err));
        if (r == 0)
            continue;
        if (r == -ETIMEDOUT)
            return first;
        if (r != -EPROTO || first == 0)
            qmp_errf(errbuf, errlen, "%s", err);
        if (r != -EPROTO)
            return r;
        c->stats.lines_invalid++;
        first = r;
    }
}

/*
 * Wait for the reply to command `id`. QEMU answers in order but events
 * come in between (STOP arrives before stop's return), and replies to
 * commands that timed out earlier may still arrive: skip those by id. An
 * id-less error is QEMU failing to parse what was just sent, so it is ours.
 */
static int
conn_await_reply(struct qmp_conn *c, struct json_object *id, const char *cmd, int64_t deadline,
                 struct qmp_msg *reply, char *errbuf, size_t errlen)
{
    int r;

    for (;;) {
        r = conn_read_msg(c, deadline, reply, errbuf, errlen);
        if (r == -EPROTO)
            c->stats.lines_invalid++;
        if (r == -ETIMEDOUT)
            qmp_errf(errbuf, errlen, "qmp: %s: no reply within %d ms", cmd, c->timeout_ms);
        if (r < 0)
            return r;
        if (reply->kind == QMP_MSG_ERROR && reply->id == NULL)
            return 0;
        if (reply->kind == QMP_MSG_RETURN && reply->id == NULL) {
            qmp_errf(errbuf, errlen, "qmp: %s: reply without id", cmd);
            qmp_msg_free(reply);
            return -EPROTO;
        }
        if (reply->id != NULL && json_object_equal(reply->id, id))
            return 0;
        r = conn_route(c, reply, errbuf, errlen);
        if (r < 0)
            return r;
    }
}

/* qmp_execute() with an explicit deadline (qmp_connect() shares one). */
static int
conn_execute(struct qmp_conn *c, const char *cmd, struct json_object *args,
             struct json_object **ret, int64_t deadline, char *errbuf, size_t errlen)
{
    struct qmp_msg reply;
    struct json_object *id;
    char *line = NULL;
    size_t len;
    int r = conn_check_alive(c, errbuf, errlen);

    if (r < 0)
        return r;
    id = json_object_new_int64(++c->next_id);
    if (id == NULL) {
        qmp_errf(errbuf, errlen, "qmp: %s: out of memory", cmd);
        return -ENOMEM;
    }
    r = qmp_msg_format_command(cmd, args, id, &line, &len, errbuf, errlen);
    if (r == 0)
        r = conn_send(c, line, len, deadline, cmd, errbuf, errlen);
    free(line);
    if (r == 0)
        r = conn_await_reply(c, id, cmd, deadline, &reply, errbuf, errlen);
    json_object_put(id);
    /* Lines that came with the reply: queue them now (see conn_pump). */
    if (c->dead == 0)
        conn_pump(c, NULL, 0);
    if (r < 0)
        return r;
    if (reply.kind == QMP_MSG_ERROR) {
        qmp_msg_format_error(&reply, cmd, errbuf, errlen);
        r = -EREMOTEIO;
    } else if (ret != NULL) {
        *ret = json_object_get(reply.value);
    }
    qmp_msg_free(&reply);
    return r;
}

int
qmp_execute(struct qmp_conn *c, const char *cmd, struct json_object *args, struct json_object **ret,
            char *errbuf, size_t errlen)
{
    if (ret != NULL)
        *ret = NULL;
    return conn_execute(c, cmd, args, ret, deadline_after(c->timeout_ms), errbuf, errlen);
}

int
qmp_poll_events(struct qmp_conn *c, char *errbuf, size_t errlen)
{
    uint64_t before = c->stats.events_queued;
    int r = conn_check_alive(c, errbuf, errlen);

    if (r == 0)
        r = conn_pump(c, errbuf, errlen);
    return r < 0 ? r : (int)(c->stats.events_queued - before);
}

int
qmp_wait_event(struct qmp_conn *c, int timeout_ms, char *errbuf, size_t errlen)
{
    int64_t deadline = deadline_after(timeout_ms < 0 ? 0 : timeout_ms);
    struct qmp_msg msg;
    int r = 0;

    if (c->evq_len == 0)
        r = conn_check_alive(c, errbuf, errlen);
    while (r == 0 && c->evq_len == 0) {
        r = conn_read_msg(c, deadline, &msg, errbuf, errlen);
        if (r == 0)
            r = conn_route(c, &msg, errbuf, errlen);
        else if (r == -EPROTO)
            c->stats.lines_invalid++;
    }
    if (r == -ETIMEDOUT)
        qmp_errf(errbuf, errlen, "qmp: no event within %d ms", timeout_ms);
    if (c->dead == 0)
        conn_pump(c, NULL, 0);
    return r < 0 ? r : (int)c->evq_len;
}

static int
conn_set_opts(struct qmp_conn *c, const struct qmp_opts *o, char *errbuf, size_t errlen)
{
    struct qmp_opts d = {0};

    if (o == NULL)
        o = &d;
    if (o->timeout_ms < 0 || o->max_line > SIZE_MAX / 4 ||
        o->max_events > SIZE_MAX / 4 / sizeof(struct qmp_msg)) {
        qmp_errf(errbuf, errlen, "qmp: invalid connection options");
        return -EINVAL;
    }
    c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : QMP_TIMEOUT_MS_DEFAULT;
    c->max_line = o->max_line > 0 ? o->max_line : QMP_MAX_LINE_DEFAULT;
    c->max_events = o->max_events > 0 ? o->max_events : QMP_MAX_EVENTS_DEFAULT;
    return 0;
}

/* Greeting, then qmp_capabilities: until then QEMU refuses every command. */
static int
conn_handshake(struct qmp_conn *c, int64_t deadline, char *errbuf, size_t errlen)
{
    struct qmp_msg msg;
    int r = conn_read_msg(c, deadline, &msg, errbuf, errlen);

    if (r == -ETIMEDOUT)
        qmp_errf(errbuf, errlen,
                 "qmp: no greeting within %d ms (is another client connected to this monitor?)",
                 c->timeout_ms);
    if (r < 0)
        return r;
    r = qmp_msg_greeting(&msg, &c->greeting, errbuf, errlen);
    qmp_msg_free(&msg);
    if (r < 0)
        return r;
    return conn_execute(c, "qmp_capabilities", NULL, NULL, deadline, errbuf, errlen);
}

int
qmp_connect(struct qmp_conn **cp, const char *path, const struct qmp_opts *opts, char *errbuf,
            size_t errlen)
{
    struct qmp_conn *c;
    int64_t deadline;
    int r;

    *cp = NULL;
    if (path == NULL) {
        qmp_errf(errbuf, errlen, "qmp: connect: no socket path given");
        return -EINVAL;
    }
    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        qmp_errf(errbuf, errlen, "qmp: connect %s: out of memory", path);
        return -ENOMEM;
    }
    c->fd = -1;
    r = conn_set_opts(c, opts, errbuf, errlen);
    deadline = deadline_after(c->timeout_ms);
    if (r == 0)
        r = conn_open(c, path, deadline, errbuf, errlen);
    if (r == 0)
        r = conn_handshake(c, deadline, errbuf, errlen);
    if (r < 0) {
        qmp_close(c);
        return r;
    }
    *cp = c;
    return 0;
}

void
qmp_close(struct qmp_conn *c)
{
    struct qmp_msg ev;

    if (c == NULL)
        return;
    while (qmp_next_event(c, &ev) == 0)
        qmp_msg_free(&ev);
    if (c->fd >= 0)
        close(c->fd);
    free(c->evq);
    free(c->rbuf);
    free(c);
}

int
qmp_fd(const struct qmp_conn *c)
{
    return c->fd;
}

const struct qmp_greeting *
qmp_greeting(const struct qmp_conn *c)
{
    return &c->greeting;
}

void
qmp_get_stats(const struct qmp_conn *c, struct qmp_stats *st)
{
    *st = c->stats;
}
