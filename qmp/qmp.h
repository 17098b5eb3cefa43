/* SPDX-License-Identifier: ISC */
/*
 * qmp.h - libqmp, a small QEMU Machine Protocol client on json-c.
 *
 * Three layers, usable on their own: messages (qmp_msg_*: text <-> json-c,
 * no I/O), the connection (qmp_connect, qmp_execute, events; one UNIX
 * socket, every wait bounded by a deadline) and vCPU discovery
 * (qmp_vcpus_*: query-cpus-fast -> thread ids). No dependency on the rest
 * of vcpusched, no logging, no global state.
 *
 * Errors: every function that can fail returns 0 (or a count) on success
 * and -errno on failure, and writes a one-line, lower-case reason to the
 * caller's errbuf (which may be NULL). The codes mean:
 *   -ENOENT, -ECONNREFUSED  no socket at the path, or nobody listening
 *   -ECONNRESET, -EPIPE     the peer closed the connection (mid-message too)
 *   -EPROTO                 a line that is not JSON, or JSON of the wrong shape
 *   -EREMOTEIO              QEMU answered {"error": {class, desc}}; both are in errbuf
 *   -EMSGSIZE               a server line longer than the maximum line size
 *   -ETIMEDOUT              no complete answer before the deadline
 *   -ENOMEM, -EINVAL        out of memory, bad argument
 *
 * A connection is not thread-safe: use it from one thread, or lock around it.
 */
#ifndef QMP_H
#define QMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct json_object;

/* Enough for every message this library writes; QEMU's desc is cut to fit. */
#define QMP_ERRLEN 256
/* QEMU 7.2's largest reply (query-qmp-schema) is 207 kB: 20x headroom. */
#define QMP_MAX_LINE_DEFAULT ((size_t)4 << 20)
/* A local QEMU answers in microseconds; seconds mean it is stuck. */
#define QMP_TIMEOUT_MS_DEFAULT 5000
/* Events are rare (run state, devices); a caller that never drains them
 * must not make the daemon grow without bound. */
#define QMP_MAX_EVENTS_DEFAULT 1024
/* QOM paths are /machine/unattached/device[N] or /machine/peripheral/<id>. */
#define QMP_QOM_PATH_MAX 256
/* "x86_64", "aarch64", "s390x", ... */
#define QMP_TARGET_MAX 32
/* A QEMU package string ("Debian 1:7.2+dfsg-7+deb12u18+b3"). */
#define QMP_PACKAGE_MAX 128

/* ---------------------------------------------------------------------
 * Messages (qmp_msg.c): one server line <-> json-c. No I/O.
 */

enum qmp_msg_kind {
    QMP_MSG_GREETING, /* {"QMP": {"version": ..., "capabilities": [...]}} */
    QMP_MSG_RETURN,   /* {"return": ANY, "id"?: ANY} */
    QMP_MSG_ERROR,    /* {"error": {"class": S, "desc": S}, "id"?: ANY} */
    QMP_MSG_EVENT,    /* {"event": S, "timestamp"?: {...}, "data"?: {...}} */
};

/*
 * One parsed server message. `root` owns the whole JSON tree; every other
 * pointer borrows from it and lives until qmp_msg_free().
 */
struct qmp_msg {
    enum qmp_msg_kind kind;
    struct json_object *root;  /* owned */
    struct json_object *id;    /* RETURN/ERROR: the echoed id, NULL if none */
    struct json_object *value; /* RETURN: the return value; EVENT: data or NULL;
                                  GREETING: the "QMP" object */
    const char *error_class;   /* ERROR: e.g. "CommandNotFound" */
    const char *error_desc;    /* ERROR: human-readable, not to be parsed */
    const char *event;         /* EVENT: e.g. "STOP" */
    int64_t ts_sec;            /* EVENT: timestamp, -1 if absent */
    int64_t ts_usec;
};

/* QEMU's version and capabilities, from the greeting. */
struct qmp_greeting {
    int major, minor, micro;
    char package[QMP_PACKAGE_MAX]; /* cut to fit */
    bool oob;                      /* the server offers out-of-band execution */
};

/*
 * Parse one server line (`len` bytes, no NUL needed; a trailing CR/LF and
 * whitespace are allowed) and classify it. On success fills *msg, which the
 * caller releases with qmp_msg_free(). Unknown keys are ignored, as the QMP
 * spec asks. Errors: -EPROTO (not JSON, trailing bytes, not an object, no
 * or ambiguous kind, a known key of the wrong type), -ENOMEM. On error *msg
 * is zeroed and owns nothing.
 */
int qmp_msg_parse(const char *line, size_t len, struct qmp_msg *msg, char *errbuf, size_t errlen);

/* Release a message from qmp_msg_parse() or qmp_next_event(); idempotent. */
void qmp_msg_free(struct qmp_msg *msg);

/*
 * Read version and capabilities out of a GREETING message. Errors: -EPROTO
 * if `msg` is not a greeting or its version is missing or not integers.
 */
int qmp_msg_greeting(const struct qmp_msg *msg, struct qmp_greeting *g, char *errbuf,
                     size_t errlen);

/*
 * Serialize a command as one line: {"execute": cmd, "arguments": args,
 * "id": id}\n. `args` (an object, or NULL for none) and `id` (any JSON, or
 * NULL for none) are borrowed. On success *out is a malloc'd NUL-terminated
 * string of *out_len bytes, newline included; the caller frees it.
 * Errors: -EINVAL (empty command, args not an object), -ENOMEM.
 */
int qmp_msg_format_command(const char *cmd, struct json_object *args, struct json_object *id,
                           char **out, size_t *out_len, char *errbuf, size_t errlen);

/*
 * Write "CONTEXT: CLASS: desc" for an ERROR message into errbuf, the text
 * every -EREMOTEIO carries. `context` (e.g. the command) may be NULL.
 */
void qmp_msg_format_error(const struct qmp_msg *msg, const char *context, char *errbuf,
                          size_t errlen);

/* ---------------------------------------------------------------------
 * Connection (qmp_conn.c): a UNIX socket to one QMP monitor.
 */

struct qmp_conn;

/* Connection options; a zero field (or a NULL struct) takes the default. */
struct qmp_opts {
    int timeout_ms;    /* deadline of each blocking call; QMP_TIMEOUT_MS_DEFAULT */
    size_t max_line;   /* longest accepted server line; QMP_MAX_LINE_DEFAULT */
    size_t max_events; /* event queue bound; QMP_MAX_EVENTS_DEFAULT */
};

/* Counters a daemon can expose; nothing here is ever logged. */
struct qmp_stats {
    uint64_t events_queued;  /* events received and queued */
    uint64_t events_dropped; /* oldest events dropped because the queue was full */
    uint64_t replies_stray;  /* replies matching no command (late after a timeout) */
    uint64_t errors_stray;   /* id-less error replies with no command in flight */
    uint64_t lines_invalid;  /* server lines dropped as not JSON or of no known shape */
};

/*
 * Connect to the QMP socket at `path`, read the greeting and negotiate
 * capabilities (no extra capability is enabled), all within opts->timeout_ms.
 * On success *cp is a ready connection for qmp_close(). Errors: -ENOENT,
 * -ECONNREFUSED, -ENAMETOOLONG (path), -ETIMEDOUT (no greeting: QEMU serves
 * one client at a time, so another client may hold the monitor), -EPROTO,
 * -EREMOTEIO, -ECONNRESET, -EMSGSIZE, -ENOMEM, -EINVAL (no path, bad options);
 * each with a message in errbuf.
 */
int qmp_connect(struct qmp_conn **cp, const char *path, const struct qmp_opts *opts, char *errbuf,
                size_t errlen);

/* Close the socket and free the connection and any queued event; NULL is fine. */
void qmp_close(struct qmp_conn *c);

/*
 * The socket, for the caller's poll/epoll loop: when it is readable, call
 * qmp_poll_events(). The connection owns it; do not read from or close it.
 */
int qmp_fd(const struct qmp_conn *c);

/* QEMU's version and capabilities, as read from the greeting. */
const struct qmp_greeting *qmp_greeting(const struct qmp_conn *c);

/* Read the counters. */
void qmp_get_stats(const struct qmp_conn *c, struct qmp_stats *st);

/*
 * Run command `cmd` with arguments `args` (an object or NULL; borrowed) and
 * wait, up to the connection's timeout, for the reply carrying this call's
 * unique id. Events that arrive meanwhile are queued, replies to earlier
 * timed-out commands are discarded. On success, if `ret` is not NULL,
 * *ret is a new reference to the return value (caller json_object_put()s).
 * Errors: -EREMOTEIO (QEMU's error, also an id-less parse error, with class
 * and desc in errbuf), -ETIMEDOUT (the connection stays usable; the late
 * reply will be skipped), -EPROTO (a non-JSON or odd line; stays usable),
 * -ECONNRESET, -EPIPE, -EMSGSIZE and -ETIMEDOUT in the middle of sending a
 * command (these are sticky: the stream is unusable and every later call
 * returns the same code and message at once), -EINVAL, -ENOMEM.
 */
int qmp_execute(struct qmp_conn *c, const char *cmd, struct json_object *args,
                struct json_object **ret, char *errbuf, size_t errlen);

/*
 * Non-blocking pump for an event loop: read everything the socket holds
 * now, queue complete events, and return how many were queued (>= 0).
 * Never blocks. Use it with a level-triggered poll/epoll on qmp_fd(); every
 * call here (qmp_execute too) leaves no complete line unread behind, so a
 * readable socket is the only sign of new events, but do drain
 * qmp_next_event() after each call, as events arrive during commands.
 * Errors: -ECONNRESET when QEMU went away (whatever came before it, e.g.
 * SHUTDOWN, stays queued), -EMSGSIZE, and -EPROTO for a bad line (dropped
 * and counted; the lines after it are still read).
 */
int qmp_poll_events(struct qmp_conn *c, char *errbuf, size_t errlen);

/*
 * Block until at least one event is queued, or `timeout_ms` elapses
 * (0: just check what is queued or readable now). Returns the number of
 * queued events (>= 1), even on a dead connection. Errors: -ETIMEDOUT,
 * and those of qmp_poll_events().
 */
int qmp_wait_event(struct qmp_conn *c, int timeout_ms, char *errbuf, size_t errlen);

/*
 * Pop the oldest queued event into *ev (the caller qmp_msg_free()s it).
 * Returns 0, or -EAGAIN if the queue is empty. Never does I/O.
 */
int qmp_next_event(struct qmp_conn *c, struct qmp_msg *ev);

/* ---------------------------------------------------------------------
 * vCPUs (qmp_vcpu.c): query-cpus-fast -> vCPU threads.
 */

/* Topology of a vCPU ("props" of query-cpus-fast); -1 where QEMU omits it. */
struct qmp_cpu_props {
    int node_id, socket_id, die_id, cluster_id, core_id;
    int thread_id; /* SMT thread within the core, not a host thread */
};

struct qmp_vcpu {
    int cpu_index;                   /* QEMU's cpu-index */
    pid_t thread_id;                 /* host thread (TID) running this vCPU */
    char qom_path[QMP_QOM_PATH_MAX]; /* e.g. /machine/unattached/device[0] */
    char target[QMP_TARGET_MAX];     /* e.g. x86_64 */
    struct qmp_cpu_props props;
};

/* A vCPU list sorted by cpu_index, from one of the functions below. */
struct qmp_vcpus {
    size_t n;
    struct qmp_vcpu *v;
};

/*
 * Convert the return value of query-cpus-fast (a JSON array, borrowed)
 * into *out, sorted by cpu_index. Errors: -EPROTO (not an array, an entry
 * missing cpu-index or thread-id, a value of the wrong type or out of
 * range, a duplicate cpu-index, an empty list, a qom-path or target too
 * long), -ENOTUNIQ (two vCPUs share one thread: single-threaded TCG, which
 * cannot be scheduled per vCPU), -ENOMEM. On error *out is empty.
 */
int qmp_vcpus_from_json(struct json_object *ret, struct qmp_vcpus *out, char *errbuf,
                        size_t errlen);

/*
 * Same from a complete reply as text ({"return": [...], "id": ...}), as
 * libvirt's virDomainQemuMonitorCommand() hands it over. Errors: those of
 * qmp_vcpus_from_json(), -EPROTO for text that is not a reply, -EREMOTEIO
 * for an {"error": ...} reply, -EINVAL for a NULL string.
 */
int qmp_vcpus_parse_reply(const char *json, struct qmp_vcpus *out, char *errbuf, size_t errlen);

/*
 * Run query-cpus-fast on a connection and convert the reply. Errors: those
 * of qmp_execute() and qmp_vcpus_from_json().
 */
int qmp_query_vcpus(struct qmp_conn *c, struct qmp_vcpus *out, char *errbuf, size_t errlen);

/* Free the list and leave it empty; idempotent. */
void qmp_vcpus_free(struct qmp_vcpus *vs);

#endif /* QMP_H */
