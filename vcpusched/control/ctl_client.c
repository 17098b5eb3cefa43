/* SPDX-License-Identifier: ISC */
/*
 * ctl_client.c - connect, send a request line, read the response line,
 * with poll(2) against one monotonic deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctl_client.h"

#define CTL_CLIENT_CHUNK 65536 /* first buffer and growth step: most replies fit once */

static uint64_t
now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* Milliseconds left until the deadline, rounded up; 0 once it has passed. */
static int
ms_left(const struct ctl_client *cl)
{
    uint64_t now = now_ns();

    if (now >= cl->deadline_ns)
        return 0;
    return (int)((cl->deadline_ns - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC);
}

const char *
ctl_client_socket_path(const char *path)
{
    const char *env = getenv(CTL_SOCKET_ENV);

    if (path != NULL)
        return path;
    return env != NULL && env[0] != '\0' ? env : CTL_SOCKET_DEFAULT;
}

/*
 * A blocking connect bounded by SO_SNDTIMEO (which AF_UNIX applies to a
 * connect waiting on a full backlog); the socket is non-blocking after.
 */
int
ctl_client_connect(struct ctl_client *cl, const char *path, int timeout_ms, char *err,
                   size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    int r;

    memset(cl, 0, sizeof(*cl));
    cl->deadline_ns = now_ns() + (uint64_t)timeout_ms * NSEC_PER_MSEC;
    if (strlen(path) >= sizeof(sa.sun_path)) {
        snprintf(err, errlen, "socket path longer than %zu bytes", sizeof(sa.sun_path) - 1);
        cl->fd = -1;
        return -ENAMETOOLONG;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    cl->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (cl->fd < 0 || setsockopt(cl->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
        connect(cl->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        fcntl(cl->fd, F_SETFL, O_NONBLOCK) < 0) {
        r = errno == EAGAIN || errno == EINPROGRESS ? ETIMEDOUT : errno;
        snprintf(err, errlen, "%s", strerror(r));
        ctl_client_close(cl);
        return -r;
    }
    return 0;
}

static int
wait_fd(struct ctl_client *cl, short events, char *err, size_t errlen)
{
    struct pollfd pfd = {.fd = cl->fd, .events = events};
    int n;

    do {
        n = poll(&pfd, 1, ms_left(cl));
    } while (n < 0 && errno == EINTR);
    if (n == 0) {
        snprintf(err, errlen, "no reply in time");
        return -ETIMEDOUT;
    }
    return n < 0 ? -errno : 0;
}

static int
send_all(struct ctl_client *cl, const char *line, char *err, size_t errlen)
{
    size_t off = 0, len = strlen(line);
    int r;

    while (off < len) {
        ssize_t n = send(cl->fd, line + off, len - off, MSG_NOSIGNAL);

        if (n >= 0) {
            off += (size_t)n;
        } else if (errno == EAGAIN) {
            if ((r = wait_fd(cl, POLLOUT, err, errlen)) < 0)
                return r;
        } else if (errno != EINTR) {
            r = errno;
            snprintf(err, errlen, "send: %s", strerror(r));
            return -r;
        }
    }
    return 0;
}

/* Receive more bytes into the buffer, growing it up to CTL_REPLY_MAX. */
static int
recv_more(struct ctl_client *cl, char *err, size_t errlen)
{
    ssize_t n;
    int r;

    if (cl->cap - cl->len < 2) {
        size_t cap = cl->cap + CTL_CLIENT_CHUNK;
        char *b;

        if (cl->cap >= CTL_REPLY_MAX) {
            snprintf(err, errlen, "reply longer than %d bytes", CTL_REPLY_MAX);
            return -E2BIG;
        }
        if ((b = realloc(cl->buf, cap)) == NULL) {
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        cl->buf = b;
        cl->cap = cap;
    }
    if ((r = wait_fd(cl, POLLIN, err, errlen)) < 0)
        return r;
    n = recv(cl->fd, cl->buf + cl->len, cl->cap - cl->len - 1, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        snprintf(err, errlen, "connection closed before a reply");
        return -ECONNRESET;
    }
    cl->len += n > 0 ? (size_t)n : 0;
    return 0;
}

/*
 * Send a request line and read the response line. A server that refused
 * the connection (EBUSY: every slot taken) has written its answer and
 * closed before our request went out: the send then fails, and that
 * answer is still there to read, so the caller sees EBUSY, not EPIPE.
 */
int
ctl_client_call(struct ctl_client *cl, const char *line, const char **reply, size_t *len, char *err,
                size_t errlen)
{
    char *nl;
    int r;

    r = send_all(cl, line, err, errlen);
    if (r < 0 && r != -EPIPE && r != -ECONNRESET)
        return r;
    /* Drop the previous reply. */
    if (cl->used > 0)
        memmove(cl->buf, cl->buf + cl->used, cl->len - cl->used);
    cl->len -= cl->used;
    cl->used = 0;
    while ((nl = cl->len > 0 ? memchr(cl->buf, '\n', cl->len) : NULL) == NULL) {
        int rr = recv_more(cl, r < 0 ? NULL : err, r < 0 ? 0 : errlen);

        if (rr < 0)
            return r < 0 ? r : rr; /* no answer either: the send's error */
    }
    *nl = '\0';
    cl->used = (size_t)(nl - cl->buf) + 1;
    *reply = cl->buf;
    *len = (size_t)(nl - cl->buf);
    return 0;
}

void
ctl_client_close(struct ctl_client *cl)
{
    if (cl->fd >= 0)
        close(cl->fd);
    free(cl->buf);
    memset(cl, 0, sizeof(*cl));
    cl->fd = -1;
}

int
ctl_client_request(const char *path, int timeout_ms, const struct ctl_request *req,
                   struct json_object **result, int *errnum, char *msg, size_t msglen)
{
    struct ctl_client cl;
    const char *reply;
    char *line;
    size_t len;
    int r;

    *result = NULL;
    *errnum = 0;
    line = ctl_request_format(req);
    if (line == NULL) {
        snprintf(msg, msglen, "cannot format the request");
        return -ENOMEM;
    }
    r = ctl_client_connect(&cl, path, timeout_ms, msg, msglen);
    if (r == 0)
        r = ctl_client_call(&cl, line, &reply, &len, msg, msglen);
    if (r == 0)
        r = ctl_response_parse(reply, len, result, errnum, msg, msglen);
    ctl_client_close(&cl);
    free(line);
    return r;
}
