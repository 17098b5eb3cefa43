/* SPDX-License-Identifier: ISC */
/*
 * control.c - the control socket server (docs/protocol.md), after vmd's
 * control.c: a listener, a bounded set of non-blocking clients, and one
 * epoll fd for the daemon's loop. Each client has a 64 KiB line buffer and
 * at most one reply in flight: a client that does not read its replies
 * stops being read (and is dropped after the timeout), so no client can
 * make the daemon buffer without bound or block.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "control.h"

#define CONTROL_BACKLOG      16 /* listen(2) queue: clients are served in microseconds */
#define CONTROL_ACCEPT_BURST 16 /* connections accepted per dispatch */
#define CONTROL_EVENTS       32 /* epoll events taken per dispatch; the rest stay pending */
#define CONTROL_PAUSE_NS     (100 * NSEC_PER_MSEC) /* accept back-off when out of fds */
#define CONTROL_SLOTS        (CONTROL_MAX_CLIENTS + CONTROL_ROOT_RESERVE)

/* epoll tags: the listener, the timer, then client slot i as CONTROL_TAG_CLIENT + i. */
enum {
    CONTROL_TAG_LISTENER,
    CONTROL_TAG_TIMER,
    CONTROL_TAG_CLIENT,
};

struct control_client {
    int fd;
    unsigned int slot;
    uint32_t events; /* epoll interest registered now */
    struct control_peer peer;
    char *in; /* CTL_LINE_MAX bytes; unserved input is in[in_off..in_len) */
    size_t in_off, in_len;
    size_t scanned;         /* in[0..scanned) has been searched for '\n' */
    uint64_t line_start_ns; /* arrival of the partial line's first bytes */
    uint64_t idle_since_ns; /* nothing pending since: accept, or the last reply written */
    char *out;              /* the reply being written, or NULL */
    size_t out_len, out_off;
    uint64_t out_start_ns;
    bool eof;         /* the peer shut down its side */
    bool close_after; /* close once `out` is written (oversize, timeout) */
    bool backlog;     /* served CONTROL_BURST lines: maybe more are waiting */
};

struct control {
    int lfd, epfd, tfd;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    dev_t dev; /* the socket file we bound, so that close never unlinks another's */
    ino_t ino;
    gid_t group;
    control_handler_fn fn;
    void *ctx;
    uint64_t timeout_ns;      /* replies and idle connections */
    uint64_t line_timeout_ns; /* a started request line */
    uint64_t accept_paused_until;
    unsigned int nr_unpriv;
    struct control_client *clients[CONTROL_SLOTS];
    struct control_stats st;
    struct ctl_request req; /* one request is handled at a time */
};

static uint64_t
now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static int
syserr(char *err, size_t errlen, const char *what, const char *path)
{
    int e = errno;

    snprintf(err, errlen, "%s: %s: %s", path, what, strerror(e));
    return -e;
}

/* --- Peers. --- */

/* Supplementary groups from /proc, for kernels without SO_PEERGROUPS (< 4.13). */
static bool
proc_in_group(pid_t pid, gid_t group)
{
    char path[64], line[4096];
    bool found = false;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "re");
    if (f == NULL)
        return false;
    while (!found && fgets(line, sizeof(line), f) != NULL) {
        char *p = line + 7, *end;

        if (strncmp(line, "Groups:", 7) != 0)
            continue;
        for (unsigned long g = strtoul(p, &end, 10); end != p; g = strtoul(p, &end, 10)) {
            found |= g == group;
            p = end;
        }
        break;
    }
    fclose(f);
    return found;
}

/*
 * Is `group` among the peer's supplementary groups? SO_PEERGROUPS gives
 * them as of connect(), race-free; /proc/<pid>/status is the fallback.
 */
static bool
peer_in_group(int fd, pid_t pid, gid_t group)
{
    gid_t small[64], *g = small;
    socklen_t len = sizeof(small);
    bool found = false;

    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len) < 0) {
        if (errno == ENOPROTOOPT)
            return pid > 0 && proc_in_group(pid, group);
        if (errno != ERANGE || (g = malloc(len)) == NULL)
            return false;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len) < 0)
            len = 0;
    }
    for (size_t i = 0; i < len / sizeof(gid_t); i++)
        found |= g[i] == group;
    if (g != small)
        free(g);
    return found;
}

static int
peer_read(int fd, gid_t group, struct control_peer *p)
{
    struct ucred uc;
    socklen_t len = sizeof(uc);

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
        return -errno;
    p->pid = uc.pid;
    p->uid = uc.uid;
    p->gid = uc.gid;
    p->privileged = uc.uid == 0 || (group != CONTROL_GROUP_ROOT &&
                                    (uc.gid == group || peer_in_group(fd, uc.pid, group)));
    return 0;
}

/* --- Clients. --- */

static void
client_close(struct control *c, struct control_client *cl)
{
    epoll_ctl(c->epfd, EPOLL_CTL_DEL, cl->fd, NULL);
    close(cl->fd);
    if (!cl->peer.privileged)
        c->nr_unpriv--;
    c->clients[cl->slot] = NULL;
    c->st.clients--;
    free(cl->in);
    free(cl->out);
    free(cl);
}

/* Register what the client needs next: a reply written, or more input. */
static void
client_interest(struct control *c, struct control_client *cl)
{
    struct epoll_event ev = {.data.u64 = CONTROL_TAG_CLIENT + cl->slot};

    if (cl->out != NULL)
        ev.events = EPOLLOUT;
    else if (!cl->eof && !cl->close_after && !cl->backlog)
        ev.events = EPOLLIN;
    if (ev.events != cl->events && epoll_ctl(c->epfd, EPOLL_CTL_MOD, cl->fd, &ev) == 0)
        cl->events = ev.events;
}

/* Queue `line` (malloc'd, or NULL: out of memory) as the client's reply. */
static void
client_reply(struct control_client *cl, char *line, uint64_t now)
{
    static const char nomem[] =
        "{\"v\":1,\"ok\":false,\"error\":{\"code\":\"ENOMEM\",\"message\":\"out of memory\"}}\n";

    if (line == NULL)
        line = strdup(nomem);
    if (line == NULL) {
        cl->close_after = true; /* nothing can be said: hang up */
        return;
    }
    cl->out = line;
    cl->out_len = strlen(line);
    cl->out_off = 0;
    cl->out_start_ns = now;
}

static void
client_error(struct control *c, struct control_client *cl, int errnum, const char *msg,
             uint64_t now)
{
    c->st.errors++;
    client_reply(cl, ctl_response_format_error(errnum, msg), now);
}

/*
 * Answer one line: parse, check the peer's rights (the allow-list of
 * read-only commands for unprivileged peers), run the handler.
 */
static void
client_request(struct control *c, struct control_client *cl, const char *line, size_t len,
               uint64_t now)
{
    struct json_object *result = NULL;
    char err[CTL_ERRLEN] = "";
    char *reply;
    int r;

    c->st.requests++;
    r = ctl_request_parse(line, len, &c->req, err, sizeof(err));
    if (r == 0 && !cl->peer.privileged && !ctl_request_is_readonly(&c->req)) {
        snprintf(err, sizeof(err),
                 "%s: permission denied (uid %u is neither root nor in the "
                 "control group)",
                 ctl_request_name(&c->req), (unsigned int)cl->peer.uid);
        c->st.denied++;
        r = -EPERM;
    }
    if (r == 0) {
        r = c->fn(c->ctx, &c->req, &cl->peer, &result, err, sizeof(err));
        if (r < 0)
            json_object_put(result);
    }
    if (r < 0) {
        client_error(c, cl, r, err, now);
        return;
    }
    reply = ctl_response_format_ok(result);
    if (reply != NULL && strlen(reply) >= CTL_REPLY_MAX) {
        free(reply);
        client_error(c, cl, E2BIG, "result longer than 16 MiB", now);
        return;
    }
    client_reply(cl, reply, now);
}

/*
 * The next complete line (without its '\n'), consumed from the buffer; the
 * pointer stays valid until the next read. At EOF an unterminated last
 * line counts as complete (printf ... | socat works).
 */
static bool
client_take_line(struct control_client *cl, uint64_t now, const char **line, size_t *len)
{
    char *nl = memchr(cl->in + cl->scanned, '\n', cl->in_len - cl->scanned);

    if (nl == NULL) {
        cl->scanned = cl->in_len;
        if (!cl->eof || cl->in_off == cl->in_len)
            return false;
        nl = cl->in + cl->in_len;
    }
    *line = cl->in + cl->in_off;
    *len = (size_t)(nl - *line);
    cl->in_off = cl->scanned = nl == cl->in + cl->in_len ? cl->in_len : (size_t)(nl - cl->in) + 1;
    cl->line_start_ns = now; /* of what remains, if anything */
    return true;
}

static void
client_discard_input(struct control_client *cl)
{
    cl->in_off = cl->in_len = cl->scanned = 0;
}

/*
 * Read what fits. Complete lines are always served before the next read,
 * so the buffer holds one partial line here; if that fills all of it, the
 * line is too long to frame: answer E2BIG and hang up.
 */
static int
client_read(struct control *c, struct control_client *cl, uint64_t now)
{
    ssize_t n;

    if (cl->in_off > 0) {
        memmove(cl->in, cl->in + cl->in_off, cl->in_len - cl->in_off);
        cl->in_len -= cl->in_off;
        cl->scanned -= cl->in_off;
        cl->in_off = 0;
    }
    n = recv(cl->fd, cl->in + cl->in_len, CTL_LINE_MAX - cl->in_len, MSG_DONTWAIT);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : -errno;
    if (n == 0) {
        cl->eof = true;
        return 0;
    }
    if (cl->in_len == 0)
        cl->line_start_ns = now;
    cl->in_len += (size_t)n;
    if (cl->in_len == CTL_LINE_MAX && memchr(cl->in, '\n', CTL_LINE_MAX) == NULL) {
        c->st.oversize++;
        client_error(c, cl, E2BIG, "request line longer than 65536 bytes", now);
        cl->close_after = true;
        client_discard_input(cl);
    }
    return 0;
}

static int
client_flush(struct control_client *cl, uint64_t now)
{
    while (cl->out != NULL) {
        ssize_t n = send(cl->fd, cl->out + cl->out_off, cl->out_len - cl->out_off,
                         MSG_DONTWAIT | MSG_NOSIGNAL);

        if (n < 0)
            return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        cl->out_off += (size_t)n;
        if (cl->out_off == cl->out_len) {
            free(cl->out);
            cl->out = NULL;
            cl->idle_since_ns = now;
        }
    }
    return 0;
}

/*
 * Read, then alternately write the pending reply and serve the next line
 * until the client would block, has nothing complete left, or has had
 * CONTROL_BURST lines (then `backlog` gets it served next dispatch).
 */
static void
client_service(struct control *c, struct control_client *cl, uint32_t events, uint64_t now)
{
    unsigned int served = 0;
    const char *line;
    size_t len;
    int r = 0;

    if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && (cl->events & EPOLLIN))
        r = client_read(c, cl, now);
    cl->backlog = false;
    while (r == 0 && (r = client_flush(cl, now)) == 0 && cl->out == NULL && !cl->close_after) {
        if (served == CONTROL_BURST) {
            cl->backlog = true;
            break;
        }
        if (!client_take_line(cl, now, &line, &len))
            break;
        client_request(c, cl, line, len, now);
        served++;
    }
    if (r < 0) {
        c->st.io_errors++;
        client_close(c, cl);
    } else if (cl->out == NULL && (cl->close_after || (cl->eof && cl->in_off == cl->in_len))) {
        client_close(c, cl);
    } else {
        client_interest(c, cl);
    }
}

enum client_wait {
    CLIENT_BACKLOG, /* lines are waiting: serve now */
    CLIENT_REPLY,   /* an unread reply */
    CLIENT_LINE,    /* a started line */
    CLIENT_IDLE,    /* nothing started */
};

/* When `cl` must be looked at again, and what it is waiting for. */
static uint64_t
client_deadline(const struct control *c, const struct control_client *cl, enum client_wait *w)
{
    if (cl->backlog) {
        *w = CLIENT_BACKLOG;
        return 0;
    }
    if (cl->out != NULL) {
        *w = CLIENT_REPLY;
        return cl->out_start_ns + c->timeout_ns;
    }
    if (cl->in_off < cl->in_len) {
        *w = CLIENT_LINE;
        return cl->line_start_ns + c->line_timeout_ns;
    }
    *w = CLIENT_IDLE;
    return cl->idle_since_ns + c->timeout_ns;
}

/*
 * Close clients past their deadline: an unread reply, a line not finished
 * in time (answered ETIMEDOUT first), a connection that never says anything.
 */
static void
clients_expire(struct control *c, uint64_t now)
{
    for (unsigned int i = 0; i < CONTROL_SLOTS; i++) {
        struct control_client *cl = c->clients[i];
        enum client_wait w;

        if (cl == NULL || client_deadline(c, cl, &w) > now || w == CLIENT_BACKLOG)
            continue;
        c->st.timeouts++;
        if (w == CLIENT_LINE) {
            client_error(c, cl, ETIMEDOUT, "request line incomplete: timed out", now);
            cl->close_after = true;
            client_discard_input(cl);
            client_service(c, cl, 0, now);
        } else {
            client_close(c, cl);
        }
    }
}

/* --- The listener. --- */

static int
client_add(struct control *c, int fd, const struct control_peer *peer, uint64_t now)
{
    struct control_client *cl;
    struct epoll_event ev;
    unsigned int slot = 0;

    /* The last CONTROL_ROOT_RESERVE slots are root's alone. */
    if ((peer->uid != 0 && c->st.clients >= CONTROL_MAX_CLIENTS) ||
        (!peer->privileged && c->nr_unpriv >= CONTROL_MAX_UNPRIV))
        return -EBUSY;
    while (slot < CONTROL_SLOTS && c->clients[slot] != NULL)
        slot++;
    if (slot == CONTROL_SLOTS)
        return -EBUSY;
    cl = calloc(1, sizeof(*cl));
    if (cl == NULL || (cl->in = malloc(CTL_LINE_MAX)) == NULL) {
        free(cl);
        return -ENOMEM;
    }
    cl->fd = fd;
    cl->slot = slot;
    cl->peer = *peer;
    cl->events = EPOLLIN;
    cl->idle_since_ns = now;
    ev.events = EPOLLIN;
    ev.data.u64 = CONTROL_TAG_CLIENT + slot;
    if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        free(cl->in);
        free(cl);
        return -errno;
    }
    c->clients[slot] = cl;
    c->nr_unpriv += !peer->privileged;
    c->st.clients++;
    c->st.accepted++;
    return 0;
}

/* Turn a connection away with one best-effort error line. */
static void
refuse(struct control *c, int fd, int errnum)
{
    char *line = ctl_response_format_error(
        errnum, errnum == EBUSY ? "too many clients: every connection slot is taken, try again"
                                : "cannot accept: out of memory");

    c->st.refused_full += errnum == EBUSY;
    if (line != NULL && send(fd, line, strlen(line), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
        c->st.io_errors++;
    free(line);
    close(fd);
}

static void
listener_pause(struct control *c, bool pause, uint64_t now)
{
    struct epoll_event ev = {.events = pause ? 0 : EPOLLIN, .data.u64 = CONTROL_TAG_LISTENER};

    c->accept_paused_until = pause ? now + CONTROL_PAUSE_NS : 0;
    epoll_ctl(c->epfd, EPOLL_CTL_MOD, c->lfd, &ev);
}

static void
listener_accept(struct control *c, uint64_t now)
{
    struct control_peer peer;

    for (int i = 0; i < CONTROL_ACCEPT_BURST; i++) {
        int fd = accept4(c->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), r;

        if (fd < 0) {
            /* Out of fds: the listener would stay readable; back off. */
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                listener_pause(c, true, now);
            if (errno != ECONNABORTED && errno != EINTR)
                return;
            continue;
        }
        r = peer_read(fd, c->group, &peer);
        if (r < 0) {
            c->st.io_errors++;
            close(fd);
            continue;
        }
        r = client_add(c, fd, &peer, now);
        if (r < 0)
            refuse(c, fd, -r);
    }
}

/* --- The timer: the earliest deadline, or now if a client has a backlog. --- */

static void
timer_arm(struct control *c)
{
    struct itimerspec its = {{0, 0}, {0, 0}};
    uint64_t when = UINT64_MAX;
    int flags = TFD_TIMER_ABSTIME;

    for (unsigned int i = 0; i < CONTROL_SLOTS; i++) {
        const struct control_client *cl = c->clients[i];
        enum client_wait w;
        uint64_t t;

        if (cl != NULL && (t = client_deadline(c, cl, &w)) < when)
            when = t;
    }
    if (c->accept_paused_until != 0 && c->accept_paused_until < when)
        when = c->accept_paused_until;
    if (when == 0) {
        flags = 0; /* relative 1 ns: expire at once (0 would disarm) */
        when = 1;
    }
    if (when != UINT64_MAX) {
        its.it_value.tv_sec = (time_t)(when / NSEC_PER_SEC);
        its.it_value.tv_nsec = (long)(when % NSEC_PER_SEC);
    }
    timerfd_settime(c->tfd, flags, &its, NULL);
}

void
control_dispatch(struct control *c)
{
    struct epoll_event ev[CONTROL_EVENTS];
    uint64_t now = now_ns(), ticks;
    int n = epoll_wait(c->epfd, ev, CONTROL_EVENTS, 0);

    for (int i = 0; i < n; i++) {
        uint64_t tag = ev[i].data.u64;

        if (tag == CONTROL_TAG_LISTENER) {
            listener_accept(c, now);
        } else if (tag == CONTROL_TAG_TIMER) {
            if (read(c->tfd, &ticks, sizeof(ticks)) < 0)
                ticks = 0; /* EAGAIN: the timer was re-armed meanwhile */
        } else if (c->clients[tag - CONTROL_TAG_CLIENT] != NULL) {
            client_service(c, c->clients[tag - CONTROL_TAG_CLIENT], ev[i].events, now);
        }
    }
    for (unsigned int i = 0; i < CONTROL_SLOTS; i++)
        if (c->clients[i] != NULL && c->clients[i]->backlog)
            client_service(c, c->clients[i], 0, now);
    if (c->accept_paused_until != 0 && now >= c->accept_paused_until)
        listener_pause(c, false, now);
    clients_expire(c, now);
    timer_arm(c);
}

/* --- Set-up. --- */

/*
 * Create the socket's directory 0755 if it is missing (one level). One of
 * ours that others cannot enter (the state file's, made 0700) is opened
 * to the control group for traversal only (0710): its members must reach
 * the socket, and still cannot list or change the directory.
 */
static int
socket_dir(const char *path, gid_t group, char *err, size_t errlen)
{
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
    struct stat st;
    char *slash;

    snprintf(dir, sizeof(dir), "%s", path);
    slash = strrchr(dir, '/');
    if (slash == NULL || slash == dir)
        return 0;
    *slash = '\0';
    if (mkdir(dir, 0755) == 0)
        return chmod(dir, 0755) < 0 ? syserr(err, errlen, "chmod", dir) : 0;
    if (errno != EEXIST)
        return syserr(err, errlen, "mkdir", dir);
    if (group == CONTROL_GROUP_ROOT || stat(dir, &st) < 0 || st.st_uid != geteuid() ||
        (st.st_mode & S_IXOTH) || (st.st_gid == group && (st.st_mode & S_IXGRP)))
        return 0;
    if (chown(dir, (uid_t)-1, group) < 0 || chmod(dir, (st.st_mode & 0700) | 0010) < 0)
        return syserr(err, errlen, "open to the control group", dir);
    return 0;
}

/*
 * Is a daemon already answering at `path`? Connecting tells: a live
 * listener accepts (or has a full backlog), a stale socket refuses.
 * Returns 0 when the path is free (a stale socket is removed).
 */
static int
socket_claim(const struct sockaddr_un *sa, char *err, size_t errlen)
{
    struct stat st;
    int fd, r;

    if (lstat(sa->sun_path, &st) < 0)
        return errno == ENOENT ? 0 : syserr(err, errlen, "stat", sa->sun_path);
    if (!S_ISSOCK(st.st_mode)) {
        snprintf(err, errlen, "%s: exists and is not a socket", sa->sun_path);
        return -EEXIST;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return syserr(err, errlen, "socket", sa->sun_path);
    r = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 ? errno : 0;
    close(fd);
    if (r == 0 || r == EAGAIN || r == EINPROGRESS) {
        snprintf(err, errlen, "%s: another daemon is listening there", sa->sun_path);
        return -EADDRINUSE;
    }
    if (r != ECONNREFUSED) {
        errno = r;
        return syserr(err, errlen, "connect", sa->sun_path);
    }
    if (unlink(sa->sun_path) < 0 && errno != ENOENT)
        return syserr(err, errlen, "unlink stale socket", sa->sun_path);
    return 0;
}

/* Bind 0600 (umask 0177), then open it up to `group` with 0660. */
static int
socket_bind(struct control *c, const struct sockaddr_un *sa, char *err, size_t errlen)
{
    struct stat st;
    mode_t old;
    int r;

    c->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->lfd < 0)
        return syserr(err, errlen, "socket", sa->sun_path);
    old = umask(0177);
    r = bind(c->lfd, (const struct sockaddr *)sa, sizeof(*sa));
    umask(old);
    if (r < 0)
        return syserr(err, errlen, "bind", sa->sun_path);
    if (lstat(sa->sun_path, &st) < 0)
        return syserr(err, errlen, "stat", sa->sun_path);
    c->dev = st.st_dev;
    c->ino = st.st_ino;
    if (c->group != CONTROL_GROUP_ROOT &&
        (chown(sa->sun_path, (uid_t)-1, c->group) < 0 || chmod(sa->sun_path, 0660) < 0))
        return syserr(err, errlen, "set group and mode", sa->sun_path);
    if (listen(c->lfd, CONTROL_BACKLOG) < 0)
        return syserr(err, errlen, "listen", sa->sun_path);
    return 0;
}

static int
epoll_add_tag(struct control *c, int fd, uint64_t tag)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag};

    return epoll_ctl(c->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static int
control_setup(struct control *c, char *err, size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int r;

    memcpy(sa.sun_path, c->path, strlen(c->path) + 1);
    if ((r = socket_dir(c->path, c->group, err, errlen)) < 0 ||
        (r = socket_claim(&sa, err, errlen)) < 0 || (r = socket_bind(c, &sa, err, errlen)) < 0)
        return r;
    c->epfd = epoll_create1(EPOLL_CLOEXEC);
    c->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (c->epfd < 0 || c->tfd < 0 || epoll_add_tag(c, c->lfd, CONTROL_TAG_LISTENER) < 0 ||
        epoll_add_tag(c, c->tfd, CONTROL_TAG_TIMER) < 0)
        return syserr(err, errlen, "epoll", c->path);
    return 0;
}

int
control_open(struct control **out, const char *path, gid_t group, control_handler_fn fn, void *ctx,
             char *err, size_t errlen)
{
    struct control *c = calloc(1, sizeof(*c));
    int r;

    *out = NULL;
    if (path[0] == '\0' || strlen(path) >= sizeof(c->path)) {
        snprintf(err, errlen, "%.40s: socket path must be 1..%zu bytes", path, sizeof(c->path) - 1);
        free(c);
        return -ENAMETOOLONG;
    }
    if (c == NULL) {
        snprintf(err, errlen, "control: out of memory");
        return -ENOMEM;
    }
    c->lfd = c->epfd = c->tfd = -1;
    c->group = group;
    c->fn = fn;
    c->ctx = ctx;
    c->timeout_ns = CONTROL_TIMEOUT_NS;
    c->line_timeout_ns = CONTROL_LINE_TIMEOUT_NS;
    snprintf(c->path, sizeof(c->path), "%s", path);
    r = control_setup(c, err, errlen);
    if (r < 0) {
        control_close(c);
        return r;
    }
    *out = c;
    return 0;
}

int
control_fd(const struct control *c)
{
    return c->epfd;
}

void
control_close(struct control *c)
{
    struct stat st;

    if (c == NULL)
        return;
    for (unsigned int i = 0; i < CONTROL_SLOTS; i++)
        if (c->clients[i] != NULL)
            client_close(c, c->clients[i]);
    if (c->lfd >= 0) {
        close(c->lfd);
        if (lstat(c->path, &st) == 0 && st.st_dev == c->dev && st.st_ino == c->ino)
            unlink(c->path);
    }
    if (c->tfd >= 0)
        close(c->tfd);
    if (c->epfd >= 0)
        close(c->epfd);
    free(c);
}

void
control_get_stats(const struct control *c, struct control_stats *out)
{
    *out = c->st;
}

void
control_set_timeout(struct control *c, uint64_t timeout_ns)
{
    c->timeout_ns = timeout_ns;
    c->line_timeout_ns =
        timeout_ns < CONTROL_LINE_TIMEOUT_NS ? timeout_ns : CONTROL_LINE_TIMEOUT_NS;
}
