/* SPDX-License-Identifier: ISC */
/*
 * ctl_client.h - the client side of the control socket for vcpuschedctl
 * and the libvirt hook: connect, send one request line, read one response
 * line, all under one deadline so that a hung daemon never hangs a caller.
 */
#ifndef VCPUSCHED_CTL_CLIENT_H
#define VCPUSCHED_CTL_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "ctl_proto.h"

#define CTL_SOCKET_DEFAULT "/run/vcpusched/control.sock"
#define CTL_SOCKET_ENV     "VCPUSCHED_SOCKET"

struct ctl_client {
    int fd;
    uint64_t deadline_ns; /* CLOCK_MONOTONIC: connect time + timeout */
    char *buf;            /* bytes received, possibly past the last reply */
    size_t len, cap;
    size_t used; /* buf[0..used) is the reply handed out last */
};

/* `path` if not NULL, else $VCPUSCHED_SOCKET if set and not empty, else the default. */
const char *ctl_client_socket_path(const char *path);

/*
 * Connect to `path`; every later call on `cl` must finish within
 * `timeout_ms` of now. Returns 0 or -errno (ENOENT, ECONNREFUSED, EACCES,
 * ETIMEDOUT, ...) with `err` saying why (the caller names the path).
 */
int ctl_client_connect(struct ctl_client *cl, const char *path, int timeout_ms, char *err,
                       size_t errlen);

/*
 * Send `line` (ending in '\n') and wait for one response line. Returns 0
 * with *reply pointing at it (NUL-terminated, newline removed, valid until
 * the next call) and *len its length; or -errno: ETIMEDOUT, ECONNRESET
 * (closed before a full reply), E2BIG (reply over CTL_REPLY_MAX).
 */
int ctl_client_call(struct ctl_client *cl, const char *line, const char **reply, size_t *len,
                    char *err, size_t errlen);

void ctl_client_close(struct ctl_client *cl);

/*
 * One request, start to end, for callers like the hook. Returns -errno if
 * the daemon could not be reached or answered garbage (`msg` says why);
 * else 0 with *errnum and *result as ctl_response_parse leaves them.
 */
int ctl_client_request(const char *path, int timeout_ms, const struct ctl_request *req,
                       struct json_object **result, int *errnum, char *msg, size_t msglen);

#endif /* VCPUSCHED_CTL_CLIENT_H */
