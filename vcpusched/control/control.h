/* SPDX-License-Identifier: ISC */
/*
 * control.h - the daemon's control socket (docs/protocol.md): a UNIX
 * stream socket speaking JSON lines, served from the daemon's own event
 * loop without ever blocking it. It frames and checks every request
 * (ctl_proto.c), enforces who may do what (SO_PEERCRED), and hands valid,
 * permitted requests to one handler supplied by the daemon.
 *
 * Use (single-threaded: every call from the daemon's control thread):
 *
 *   control_open(&c, "/run/vcpusched/control.sock", gid, handle, ctx, err, len);
 *   add control_fd(c) to the loop's epoll set (EPOLLIN);
 *   when it is readable: control_dispatch(c);
 *   control_close(c);
 */
#ifndef VCPUSCHED_CONTROL_H
#define VCPUSCHED_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ctl_proto.h"

struct json_object;
struct control;

#define CONTROL_MAX_CLIENTS 64 /* connections at once: the CLI and hook use one each, briefly */
#define CONTROL_MAX_UNPRIV  32 /* of which unprivileged: root always finds a free slot */
/* Beyond the 64, for uid 0 only: root (the hook, the operator) gets in when others filled them. */
#define CONTROL_ROOT_RESERVE 8
/* A reply must be read, and a connection with nothing started must speak, within 10 s. */
#define CONTROL_TIMEOUT_NS (10 * NSEC_PER_SEC)
/* A request line, once started, must be complete within 1 s: slow senders free their slot. */
#define CONTROL_LINE_TIMEOUT_NS (1 * NSEC_PER_SEC)
#define CONTROL_BURST           32          /* requests served per client per dispatch (fairness) */
#define CONTROL_GROUP_ROOT      ((gid_t)-1) /* control_open group: root only, mode 0600 */

/* Who is on the other end, read once with SO_PEERCRED at accept. */
struct control_peer {
    pid_t pid;
    uid_t uid;
    gid_t gid;
    bool privileged; /* uid 0, or the configured group is its primary or supplementary group */
};

/*
 * The daemon's handler. Called once per valid request the peer may make
 * (control.c has already answered malformed and forbidden ones), in
 * order, on the control thread; it should return quickly, since every
 * other client waits meanwhile.
 *
 * Returns 0 with *result set to a new JSON object (or left NULL for {}),
 * which control.c sends and puts; or -errno with `err` holding a
 * lower-case message naming the problem ("weight: 0 is out of range
 * [1, 65535]"). An empty `err` is replaced by the errno's description.
 * On error a *result that was set anyway is put.
 */
typedef int (*control_handler_fn)(void *ctx, const struct ctl_request *req,
                                  const struct control_peer *peer, struct json_object **result,
                                  char *err, size_t errlen);

/* Counters for `stats`: control.c never logs per-request events. */
struct control_stats {
    uint64_t accepted;     /* connections accepted */
    uint64_t refused_full; /* connections turned away: no free slot (EBUSY) */
    uint64_t requests;     /* lines received */
    uint64_t errors;       /* error replies (malformed, forbidden, handler errors) */
    uint64_t denied;       /* of which EPERM for unprivileged peers */
    uint64_t oversize;     /* lines over CTL_LINE_MAX: answered, then closed */
    uint64_t timeouts;     /* closed: partial line or unread reply older than the timeout */
    uint64_t io_errors;    /* closed: read/write failed (peer reset, ...) */
    unsigned int clients;  /* connected now */
};

/*
 * Create the socket at `path` and start listening.
 *
 * The parent directory is created 0755 if missing (not recursively). If
 * something answers on `path` the call fails with -EADDRINUSE (another
 * daemon runs); a stale socket is replaced; any other kind of file is left
 * alone (-EEXIST). The socket is bound under umask 0177 and then set to
 * group `group` and mode 0660, or left 0600 with CONTROL_GROUP_ROOT. The
 * umask is process-wide: call this before starting threads.
 * Returns 0 or -errno with `err` saying what failed.
 */
int control_open(struct control **out, const char *path, gid_t group, control_handler_fn fn,
                 void *ctx, char *err, size_t errlen);

/*
 * One epoll fd covering the listener, every client and the timeouts; it
 * is readable whenever control_dispatch has work.
 */
int control_fd(const struct control *c);

/*
 * Non-blocking: accept new clients, read what has arrived, answer every
 * complete line (at most CONTROL_BURST per client, the rest next time:
 * the fd stays readable), write pending replies, close timed-out clients.
 */
void control_dispatch(struct control *c);

/* Close every client and the listener; unlink the socket if it is still ours. */
void control_close(struct control *c);

void control_get_stats(const struct control *c, struct control_stats *out);

/* Tests: replace CONTROL_TIMEOUT_NS (the line timeout becomes the smaller of the two). */
void control_set_timeout(struct control *c, uint64_t timeout_ns);

#endif /* VCPUSCHED_CONTROL_H */
