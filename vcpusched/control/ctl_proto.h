/* SPDX-License-Identifier: ISC */
/*
 * ctl_proto.h - the control protocol codec (docs/protocol.md): JSON lines
 * <-> checked C structs. Pure: no I/O, no logging, no global state, so the
 * daemon, vcpuschedctl, the libvirt hook, the unit tests and the fuzzer all
 * share one definition of what a valid request is.
 */
#ifndef VCPUSCHED_CTL_PROTO_H
#define VCPUSCHED_CTL_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/cpuset.h"
#include "common/kv.h"
#include "common/limits.h"

struct json_object;

#define CTL_PROTO_VERSION 1

#define CTL_LINE_MAX  65536              /* request line, newline included (protocol.md) */
#define CTL_REPLY_MAX (16 * 1024 * 1024) /* response line: a list of many big VMs */
#define CTL_CPUS_SIZE CPULIST_TEXT_MAX   /* kernel CPU list text */
#define CTL_QMP_SIZE  108                /* sizeof(sun_path): the QMP socket path must fit */
#define CTL_ERRLEN    256                /* a message buffer large enough for every codec message */
#define CTL_XML_SIZE  CTL_LINE_MAX       /* a domain definition that fits in a request line */

enum ctl_cmd {
    CTL_VERSION,
    CTL_ATTACH,
    CTL_DETACH,
    CTL_SET,
    CTL_LIST,
    CTL_STATS,
    CTL_POOL,
    CTL_HELP,
    CTL_MOVE,
    CTL_HOOK,
};

/* The libvirt hook's operations that matter (docs/libvirt.md). */
enum ctl_hook_op {
    CTL_HOOK_STARTED,   /* started begin */
    CTL_HOOK_RECONNECT, /* reconnect begin (libvirtd restarted) */
    CTL_HOOK_STOPPED,   /* stopped end */
    CTL_HOOK_RELEASE,   /* release end */
};

enum ctl_pool_op {
    CTL_POOL_LIST,
    CTL_POOL_CREATE,
    CTL_POOL_SET,
    CTL_POOL_DESTROY,
};

/* How attach finds the threads (exactly one per request). */
enum ctl_target {
    CTL_TARGET_NONE,
    CTL_TARGET_PID,     /* every thread of `pid` */
    CTL_TARGET_TIDS,    /* tids[0..nr_tids), in vCPU index order */
    CTL_TARGET_QMP,     /* QEMU's vCPU threads via the QMP socket `qmp` */
    CTL_TARGET_LIBVIRT, /* the vCPU threads of libvirt domain `libvirt` */
};

/*
 * A request. After a successful ctl_request_parse every field is checked
 * against docs/protocol.md: strings are NUL-terminated and within their
 * sizes, names match their charset, tids are positive and distinct, params
 * keys are well-formed (their meaning is checked later against the policy
 * schema by the daemon). Fields a command does not use are zero/empty.
 *
 * Each field holds the args member of the same name; `name` is the domain
 * for attach/detach/set and the pool for pool create/set/destroy. Use:
 *   attach       name, target + pid/tids/qmp/libvirt, pool ("" = first), any_process,
 *                params
 *   detach       name
 *   set          name, params (at least one)
 *   pool list    -
 *   pool create  name, cpus, policy, params
 *   pool set     name, policy ("" = keep), params (policy or params given)
 *   pool destroy name
 *   help         policy ("" = every policy)
 *   move         name, pool, params
 *   hook         name, hook_op, xml ("" = not sent)
 *
 * params[i].key/val point into param_keys/param_vals after a parse, so a
 * request must not be copied by assignment. ctl_request_format only reads
 * params[i] pointers: a caller building a request may point them anywhere.
 */
struct ctl_request {
    enum ctl_cmd cmd;
    enum ctl_pool_op pool_op;
    char name[VS_NAME_SIZE];
    char pool[VS_NAME_SIZE];
    char policy[VS_KEY_SIZE];
    char cpus[CTL_CPUS_SIZE];
    struct cpuset cpuset; /* cpus, parsed */
    enum ctl_target target;
    pid_t pid;
    pid_t tids[VS_THREADS_MAX];
    unsigned int nr_tids;
    char qmp[CTL_QMP_SIZE];
    char libvirt[VS_NAME_SIZE];
    bool any_process; /* attach by pid/tids: not only QEMU or the caller's own processes */
    struct kv params[VS_PARAMS_MAX];
    size_t nr_params;
    char param_keys[VS_PARAMS_MAX][VS_KEY_SIZE];
    char param_vals[VS_PARAMS_MAX][VS_VALUE_SIZE];
    enum ctl_hook_op hook_op;
    char xml[CTL_XML_SIZE]; /* hook: the domain definition libvirt gave it, or "" */
};

/*
 * Parse one request line (`len` bytes, the trailing newline optional;
 * trailing blanks are ignored). On error `req` is unspecified and `err`
 * holds a lower-case message naming the offending field:
 *   -EPROTO  not JSON, not an object, trailing garbage, NUL byte, bad `v` value
 *   -EINVAL  a missing, unknown, mistyped or out-of-range field
 *   -E2BIG   the line, tids or params are over their limits
 */
int ctl_request_parse(const char *line, size_t len, struct ctl_request *req, char *err,
                      size_t errlen);

/*
 * The request as a JSON line ending in '\n' (malloc'd; NULL on ENOMEM or
 * an invalid cmd). It does not validate: run the line through
 * ctl_request_parse to check a request built by hand, as vcpuschedctl does.
 */
char *ctl_request_format(const struct ctl_request *req);

/*
 * Append a parameter to a request built by hand (the CLI's key=value
 * words, libvirt metadata), copying both strings into the request.
 * -E2BIG past VS_PARAMS_MAX, -EINVAL if the key or value does not fit;
 * the full checks happen when the formatted line is parsed.
 */
int ctl_request_add_param(struct ctl_request *req, const char *key, const char *val, char *err,
                          size_t errlen);

/* Command name ("attach", "pool", ...) or NULL. */
const char *ctl_cmd_name(enum ctl_cmd cmd);
const char *ctl_pool_op_name(enum ctl_pool_op op);
/* "started", ... or NULL; ctl_hook_op_parse: 0 and *op, or -EINVAL. */
const char *ctl_hook_op_name(enum ctl_hook_op op);
int ctl_hook_op_parse(const char *name, enum ctl_hook_op *op);
/* "pool create" style name of the request for messages. */
const char *ctl_request_name(const struct ctl_request *req);

/* True for the commands any local user may run (version, list, stats, pool list, help). */
bool ctl_request_is_readonly(const struct ctl_request *req);

/*
 * Responses. format_ok takes over the caller's reference to `result`
 * (NULL: an empty object). Both return a malloc'd line ending in '\n',
 * or NULL on ENOMEM. format_error takes a positive or negative errno.
 */
char *ctl_response_format_ok(struct json_object *result);
char *ctl_response_format_error(int errnum, const char *message);

/*
 * Parse a response line. Returns 0 for a well-formed response: then either
 * *errnum = 0 and *result is a new reference to the result object (the
 * caller puts it), or *errnum > 0 (the errno of the error code, EIO for a
 * name this build does not know), *result = NULL and `msg` holds the
 * message. Returns -EPROTO with `msg` saying why for anything else.
 */
int ctl_response_parse(const char *line, size_t len, struct json_object **result, int *errnum,
                       char *msg, size_t msglen);

/* "EINVAL" for EINVAL or -EINVAL; "EIO" for an errno outside the table. */
const char *ctl_errno_name(int errnum);
/* EINVAL for "EINVAL"; 0 for an unknown name. */
int ctl_errno_value(const char *name);

#endif /* VCPUSCHED_CTL_PROTO_H */
