/* SPDX-License-Identifier: ISC */
/*
 * ctl_proto.c - the control protocol codec: every check docs/protocol.md
 * makes on a request happens here, once, for the daemon and the clients.
 * Requests are parsed strictly (unknown keys are errors, so a typo never
 * silently does nothing); responses leniently (a newer daemon may add keys).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/names.h"
#include "ctl_json.h"
#include "ctl_proto.h"

#define CTL_PID_MAX    4194304 /* the kernel's PID_MAX_LIMIT: no thread id is larger */
#define CTL_ESCAPE_MAX 40      /* bytes of outside text quoted in a message */

enum charset {
    CS_NAME, /* domain, pool and libvirt names */
    CS_KEY,  /* policy names and parameter keys */
    CS_TEXT, /* parameter values, paths, CPU lists: anything but control bytes */
    CS_XML,  /* a document: CS_TEXT plus tab, newline and carriage return */
};

static const struct ctl_errno_entry {
    int value;
    const char *name;
    const char *text; /* lower-case, for a handler that gave no message */
} errnos[] = {
    {EPERM, "EPERM", "operation not permitted"},
    {ENOENT, "ENOENT", "no such object"},
    {ESRCH, "ESRCH", "no such process"},
    {EINTR, "EINTR", "interrupted"},
    {EIO, "EIO", "input/output error"},
    {E2BIG, "E2BIG", "too big"},
    {EBADF, "EBADF", "bad file descriptor"},
    {EAGAIN, "EAGAIN", "try again"},
    {ENOMEM, "ENOMEM", "out of memory"},
    {EACCES, "EACCES", "permission denied"},
    {EBUSY, "EBUSY", "busy"},
    {EEXIST, "EEXIST", "already exists"},
    {ENODEV, "ENODEV", "no such device"},
    {EINVAL, "EINVAL", "invalid argument"},
    {ENOSPC, "ENOSPC", "no space left"},
    {ERANGE, "ERANGE", "out of range"},
    {ENOSYS, "ENOSYS", "not implemented"},
    {ENAMETOOLONG, "ENAMETOOLONG", "name too long"},
    {ENOTSUP, "ENOTSUP", "not supported"},
    {EPROTO, "EPROTO", "protocol error"},
    {EOVERFLOW, "EOVERFLOW", "value too large"},
    {ECONNREFUSED, "ECONNREFUSED", "connection refused"},
    {ETIMEDOUT, "ETIMEDOUT", "timed out"},
    {EADDRINUSE, "EADDRINUSE", "address in use"},
    {EALREADY, "EALREADY", "already in progress"},
    {ECANCELED, "ECANCELED", "canceled"},
};

static const char *const cmd_names[] = {
    [CTL_VERSION] = "version", [CTL_ATTACH] = "attach", [CTL_DETACH] = "detach",
    [CTL_SET] = "set",         [CTL_LIST] = "list",     [CTL_STATS] = "stats",
    [CTL_POOL] = "pool",       [CTL_HELP] = "help",     [CTL_MOVE] = "move",
    [CTL_HOOK] = "hook",
};

static const char *const hook_op_names[] = {
    [CTL_HOOK_STARTED] = "started",
    [CTL_HOOK_RECONNECT] = "reconnect",
    [CTL_HOOK_STOPPED] = "stopped",
    [CTL_HOOK_RELEASE] = "release",
};

static const char *const pool_op_names[] = {
    [CTL_POOL_LIST] = "list",
    [CTL_POOL_CREATE] = "create",
    [CTL_POOL_SET] = "set",
    [CTL_POOL_DESTROY] = "destroy",
};

static const char *const pool_req_names[] = {
    [CTL_POOL_LIST] = "pool list",
    [CTL_POOL_CREATE] = "pool create",
    [CTL_POOL_SET] = "pool set",
    [CTL_POOL_DESTROY] = "pool destroy",
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* --- Names and errno codes. --- */

const char *
ctl_cmd_name(enum ctl_cmd cmd)
{
    return (unsigned int)cmd < NELEM(cmd_names) ? cmd_names[cmd] : NULL;
}

const char *
ctl_pool_op_name(enum ctl_pool_op op)
{
    return (unsigned int)op < NELEM(pool_op_names) ? pool_op_names[op] : NULL;
}

const char *
ctl_hook_op_name(enum ctl_hook_op op)
{
    return (unsigned int)op < NELEM(hook_op_names) ? hook_op_names[op] : NULL;
}

int
ctl_hook_op_parse(const char *name, enum ctl_hook_op *op)
{
    for (size_t i = 0; i < NELEM(hook_op_names); i++) {
        if (strcmp(name, hook_op_names[i]) == 0) {
            *op = (enum ctl_hook_op)i;
            return 0;
        }
    }
    return -EINVAL;
}

const char *
ctl_request_name(const struct ctl_request *req)
{
    if (req->cmd == CTL_POOL && (unsigned int)req->pool_op < NELEM(pool_req_names))
        return pool_req_names[req->pool_op];
    return ctl_cmd_name(req->cmd) != NULL ? ctl_cmd_name(req->cmd) : "?";
}

bool
ctl_request_is_readonly(const struct ctl_request *req)
{
    switch (req->cmd) {
    case CTL_VERSION:
    case CTL_LIST:
    case CTL_STATS:
    case CTL_HELP:
        return true;
    case CTL_POOL:
        return req->pool_op == CTL_POOL_LIST;
    default:
        return false;
    }
}

static const struct ctl_errno_entry *
errno_find(int errnum)
{
    if (errnum < 0)
        errnum = -errnum;
    for (size_t i = 0; i < NELEM(errnos); i++)
        if (errnos[i].value == errnum)
            return &errnos[i];
    return NULL;
}

const char *
ctl_errno_name(int errnum)
{
    const struct ctl_errno_entry *e = errno_find(errnum);

    return e != NULL ? e->name : "EIO";
}

int
ctl_errno_value(const char *name)
{
    for (size_t i = 0; i < NELEM(errnos); i++)
        if (strcmp(errnos[i].name, name) == 0)
            return errnos[i].value;
    return 0;
}

/* --- Messages. --- */

__attribute__((format(printf, 4, 5))) static int
fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
    va_list ap;

    if (errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

/*
 * Quote outside text for a message: printable ASCII as is, anything else
 * as \xHH (tmux's stravis), cut to CTL_ESCAPE_MAX bytes with "...", so a
 * message can go to a terminal or a log without surprises.
 */
static const char *
escape(const char *s, size_t n, char *out, size_t outlen)
{
    size_t o = 0;

    for (size_t i = 0; i < n && o + 8 < outlen; i++) {
        unsigned char c = (unsigned char)s[i];

        if (i == CTL_ESCAPE_MAX) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", c);
    }
    out[o] = '\0';
    return out;
}

#define ESCBUF (CTL_ESCAPE_MAX * 4 + 8)

/* --- Framing: one line -> one JSON value. --- */

/* `len` bytes as exactly one JSON object followed by blanks only (ctl_json_parse_whole). */
static int
line_to_json(const char *line, size_t len, size_t max, struct json_object **out, char *err,
             size_t errlen)
{
    const char *why = "";
    int r;

    *out = NULL;
    if (len >= max)
        return fail(err, errlen, -E2BIG, "line longer than %zu bytes", max);
    if (memchr(line, '\0', len) != NULL)
        return fail(err, errlen, -EPROTO, "line contains a NUL byte");
    r = ctl_json_parse_whole(line, len, JSON_TOKENER_DEFAULT_DEPTH, out, &why);
    if (r == -ENOMEM || r == -E2BIG)
        return fail(err, errlen, -ENOMEM, "out of memory");
    if (r == -EPROTO)
        return fail(err, errlen, -EPROTO, "not JSON: %s", why);
    if (r == -EBADMSG)
        return fail(err, errlen, -EPROTO, "trailing characters after the JSON value");
    if (*out == NULL || !json_object_is_type(*out, json_type_object)) {
        json_object_put(*out);
        *out = NULL;
        return fail(err, errlen, -EPROTO, "not a JSON object");
    }
    return 0;
}

/* --- Field checks. --- */

static bool
char_ok(enum charset cs, unsigned char c)
{
    switch (cs) {
    case CS_NAME:
        return names_char_ok(c);
    case CS_KEY:
        return names_key_char_ok(c);
    case CS_TEXT:
        return c >= 0x20 && c != 0x7f;
    case CS_XML:
        return (c >= 0x20 && c != 0x7f) || c == '\t' || c == '\n' || c == '\r';
    }
    return false;
}

static const char *
charset_desc(enum charset cs)
{
    return cs == CS_NAME  ? NAMES_CHARS
           : cs == CS_KEY ? NAMES_KEY_CHARS
           : cs == CS_XML ? "printable characters, tab and line ends"
                          : "printable characters";
}

/*
 * Copy a JSON string into dst[size] after checking type, embedded NULs,
 * length (1..size-1 bytes) and charset. `field` names it in messages.
 */
static int
copy_string(struct json_object *v, const char *field, enum charset cs, char *dst, size_t size,
            char *err, size_t errlen)
{
    char esc[ESCBUF];
    const char *s;
    size_t n;

    if (!json_object_is_type(v, json_type_string))
        return fail(err, errlen, -EINVAL, "%s: must be a string", field);
    s = json_object_get_string(v);
    n = (size_t)json_object_get_string_len(v);
    if (strlen(s) != n)
        return fail(err, errlen, -EINVAL, "%s: contains a NUL character", field);
    if (n == 0)
        return fail(err, errlen, -EINVAL, "%s: must not be empty", field);
    if (n >= size)
        return fail(err, errlen, -EINVAL, "%s: longer than %zu bytes", field, size - 1);
    for (size_t i = 0; i < n; i++)
        if (!char_ok(cs, (unsigned char)s[i]))
            return fail(err, errlen, -EINVAL, "%s: \"%s\" has a character outside %s", field,
                        escape(s, n, esc, sizeof(esc)), charset_desc(cs));
    memcpy(dst, s, n + 1);
    return 0;
}

/* An optional or required string member of `obj`. */
static int
get_string(struct json_object *obj, const char *key, bool required, enum charset cs, char *dst,
           size_t size, char *err, size_t errlen)
{
    struct json_object *v;

    if (!json_object_object_get_ex(obj, key, &v))
        return required ? fail(err, errlen, -EINVAL, "%s: missing", key) : 0;
    return copy_string(v, key, cs, dst, size, err, errlen);
}

/* A JSON integer (never a double or a string) in [min, max]. */
static int
get_int(struct json_object *v, const char *field, int64_t min, int64_t max, int64_t *out, char *err,
        size_t errlen)
{
    int64_t x;

    if (!json_object_is_type(v, json_type_int))
        return fail(err, errlen, -EINVAL, "%s: must be an integer", field);
    /* json-c clamps numbers beyond int64 to its ends: out of range too. */
    x = json_object_get_int64(v);
    if (x < min || x > max)
        return fail(err, errlen, -EINVAL,
                    "%s: %" PRId64 " is out of range [%" PRId64 ", %" PRId64 "]", field, x, min,
                    max);
    *out = x;
    return 0;
}

/* Every key of `obj` must be in the NULL-terminated `keys`. */
static int
check_keys(struct json_object *obj, const char *const *keys, const char *where, char *err,
           size_t errlen)
{
    char esc[ESCBUF];

    json_object_object_foreach(obj, key, val)
    {
        size_t i = 0;

        (void)val;
        while (keys[i] != NULL && strcmp(keys[i], key) != 0)
            i++;
        if (keys[i] == NULL)
            return fail(err, errlen, -EINVAL, "%s: unknown key \"%s\"", where,
                        escape(key, strlen(key), esc, sizeof(esc)));
    }
    return 0;
}

/* --- Arguments. --- */

static int
parse_params(struct json_object *args, struct ctl_request *req, char *err, size_t errlen)
{
    struct json_object *p;
    char field[VS_KEY_SIZE + 16], esc[ESCBUF];
    int r;

    if (!json_object_object_get_ex(args, "params", &p))
        return 0;
    if (!json_object_is_type(p, json_type_object))
        return fail(err, errlen, -EINVAL, "params: must be an object");
    if (json_object_object_length(p) > VS_PARAMS_MAX)
        return fail(err, errlen, -E2BIG, "params: more than %d keys", VS_PARAMS_MAX);
    json_object_object_foreach(p, key, val)
    {
        size_t i = req->nr_params, klen = strlen(key);

        if (klen == 0 || klen >= VS_KEY_SIZE)
            return fail(err, errlen, -EINVAL, "params: key \"%s\" is not 1..%d bytes",
                        escape(key, klen, esc, sizeof(esc)), VS_KEY_SIZE - 1);
        for (size_t k = 0; k < klen; k++)
            if (!char_ok(CS_KEY, (unsigned char)key[k]))
                return fail(err, errlen, -EINVAL,
                            "params: key \"%s\" has a character outside " NAMES_KEY_CHARS,
                            escape(key, klen, esc, sizeof(esc)));
        memcpy(req->param_keys[i], key, klen + 1);
        snprintf(field, sizeof(field), "params.%s", key);
        r = copy_string(val, field, CS_TEXT, req->param_vals[i], VS_VALUE_SIZE, err, errlen);
        if (r < 0)
            return r;
        req->params[i].key = req->param_keys[i];
        req->params[i].val = req->param_vals[i];
        req->nr_params++;
    }
    return 0;
}

static int
pid_cmp(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

    return (x > y) - (x < y);
}

static int
parse_tids(struct json_object *v, struct ctl_request *req, char *err, size_t errlen)
{
    pid_t sorted[VS_THREADS_MAX];
    char field[32];
    size_t n;
    int64_t x;
    int r;

    if (!json_object_is_type(v, json_type_array))
        return fail(err, errlen, -EINVAL, "tids: must be an array");
    n = json_object_array_length(v);
    if (n == 0)
        return fail(err, errlen, -EINVAL, "tids: must not be empty");
    if (n > VS_THREADS_MAX)
        return fail(err, errlen, -E2BIG, "tids: more than %d threads", VS_THREADS_MAX);
    for (size_t i = 0; i < n; i++) {
        snprintf(field, sizeof(field), "tids[%zu]", i);
        r = get_int(json_object_array_get_idx(v, i), field, 1, CTL_PID_MAX, &x, err, errlen);
        if (r < 0)
            return r;
        req->tids[i] = sorted[i] = (pid_t)x;
    }
    qsort(sorted, n, sizeof(sorted[0]), pid_cmp);
    for (size_t i = 1; i < n; i++)
        if (sorted[i] == sorted[i - 1])
            return fail(err, errlen, -EINVAL, "tids: %d appears twice", (int)sorted[i]);
    req->nr_tids = (unsigned int)n;
    return 0;
}

/* Which of pid/tids/qmp/libvirt is given; exactly one must be. */
static int
attach_target(struct json_object *args, enum ctl_target *t, char *err, size_t errlen)
{
    static const char *const keys[] = {
        [CTL_TARGET_PID] = "pid",
        [CTL_TARGET_TIDS] = "tids",
        [CTL_TARGET_QMP] = "qmp",
        [CTL_TARGET_LIBVIRT] = "libvirt",
    };

    *t = CTL_TARGET_NONE;
    for (int i = CTL_TARGET_PID; i <= CTL_TARGET_LIBVIRT; i++) {
        if (!json_object_object_get_ex(args, keys[i], NULL))
            continue;
        if (*t != CTL_TARGET_NONE)
            return fail(err, errlen, -EINVAL, "%s and %s: give only one of pid, tids, qmp, libvirt",
                        keys[*t], keys[i]);
        *t = (enum ctl_target)i;
    }
    if (*t == CTL_TARGET_NONE)
        return fail(err, errlen, -EINVAL, "attach needs one of pid, tids, qmp, libvirt");
    return 0;
}

static int
parse_attach(struct json_object *args, struct ctl_request *req, char *err, size_t errlen)
{
    struct json_object *v;
    int64_t pid;
    int r;

    if ((r = get_string(args, "name", true, CS_NAME, req->name, VS_NAME_SIZE, err, errlen)) < 0 ||
        (r = get_string(args, "pool", false, CS_NAME, req->pool, VS_NAME_SIZE, err, errlen)) < 0 ||
        (r = attach_target(args, &req->target, err, errlen)) < 0)
        return r;
    switch (req->target) {
    case CTL_TARGET_PID:
        json_object_object_get_ex(args, "pid", &v);
        r = get_int(v, "pid", 1, CTL_PID_MAX, &pid, err, errlen);
        req->pid = (pid_t)pid;
        break;
    case CTL_TARGET_TIDS:
        json_object_object_get_ex(args, "tids", &v);
        r = parse_tids(v, req, err, errlen);
        break;
    case CTL_TARGET_QMP:
        r = get_string(args, "qmp", true, CS_TEXT, req->qmp, CTL_QMP_SIZE, err, errlen);
        if (r == 0 && req->qmp[0] != '/')
            r = fail(err, errlen, -EINVAL, "qmp: must be an absolute path");
        break;
    case CTL_TARGET_LIBVIRT:
        r = get_string(args, "libvirt", true, CS_NAME, req->libvirt, VS_NAME_SIZE, err, errlen);
        break;
    case CTL_TARGET_NONE:
        break;
    }
    if (r == 0 && json_object_object_get_ex(args, "any_process", &v)) {
        if (!json_object_is_type(v, json_type_boolean))
            return fail(err, errlen, -EINVAL, "any_process: must be true or false");
        if (req->target != CTL_TARGET_PID && req->target != CTL_TARGET_TIDS)
            return fail(err, errlen, -EINVAL, "any_process: only with pid or tids");
        req->any_process = json_object_get_boolean(v);
    }
    return r < 0 ? r : parse_params(args, req, err, errlen);
}

static int
parse_name_only(struct json_object *args, struct ctl_request *req, char *err, size_t errlen)
{
    return get_string(args, "name", true, CS_NAME, req->name, VS_NAME_SIZE, err, errlen);
}

static int
parse_set(struct json_object *args, struct ctl_request *req, char *err, size_t errlen)
{
    int r = parse_name_only(args, req, err, errlen);

    if (r == 0 && !json_object_object_get_ex(args, "params", NULL))
        r = fail(err, errlen, -EINVAL, "params: missing");
    if (r == 0)
        r = parse_params(args, req, err, errlen);
    if (r == 0 && req->nr_params == 0)
        r = fail(err, errlen, -EINVAL, "params: must not be empty");
    return r;
}

static int
parse_move(struct json_object *args, struct ctl_request *req, char *err, size_t errlen)
{
    int r = parse_name_only(args, req, err, errlen);

    if (r == 0)
        r = get_string(args, "pool", true, CS_NAME, req->pool, VS_NAME_SIZE, err, errlen);
    return r < 0 ? r : parse_params(args, req, err, errlen);
}

static int
parse_hook(struct json_object *args, struct ctl_request *req, char *err, size_t errlen)
{
    char op[16], esc[ESCBUF];
    int r = parse_name_only(args, req, err, errlen);

    if (r == 0)
        r = get_string(args, "op", true, CS_KEY, op, sizeof(op), err, errlen);
    if (r == 0 && ctl_hook_op_parse(op, &req->hook_op) < 0)
        r = fail(err, errlen, -EINVAL, "op: unknown hook operation \"%s\" (%s, %s, %s, %s)",
                 escape(op, strlen(op), esc, sizeof(esc)), hook_op_names[0], hook_op_names[1],
                 hook_op_names[2], hook_op_names[3]);
    if (r == 0)
        r = get_string(args, "xml", false, CS_XML, req->xml, CTL_XML_SIZE, err, errlen);
    return r;
}

static int
parse_cpus(struct json_object *args, struct ctl_request *req, char *err, size_t errlen)
{
    char msg[CTL_ERRLEN];
    int r;

    r = get_string(args, "cpus", true, CS_TEXT, req->cpus, CTL_CPUS_SIZE, err, errlen);
    if (r < 0)
        return r;
    r = cpulist_parse(req->cpus, &req->cpuset, msg, sizeof(msg));
    if (r < 0)
        return fail(err, errlen, -EINVAL, "cpus: %s", msg);
    if (cpuset_empty(&req->cpuset))
        return fail(err, errlen, -EINVAL, "cpus: an empty list");
    return 0;
}

static const char *const pool_keys[][6] = {
    [CTL_POOL_LIST] = {"op", NULL},
    [CTL_POOL_CREATE] = {"op", "name", "cpus", "policy", "params", NULL},
    [CTL_POOL_SET] = {"op", "name", "cpus", "policy", "params", NULL},
    [CTL_POOL_DESTROY] = {"op", "name", NULL},
};

static int
parse_pool_op(struct json_object *args, struct ctl_request *req, char *err, size_t errlen)
{
    char esc[ESCBUF];
    struct json_object *v;

    if (!json_object_object_get_ex(args, "op", &v))
        return fail(err, errlen, -EINVAL, "op: missing");
    if (!json_object_is_type(v, json_type_string))
        return fail(err, errlen, -EINVAL, "op: must be a string");
    for (size_t i = 0; i < NELEM(pool_op_names); i++) {
        if (strcmp(json_object_get_string(v), pool_op_names[i]) == 0 &&
            strlen(pool_op_names[i]) == (size_t)json_object_get_string_len(v)) {
            req->pool_op = (enum ctl_pool_op)i;
            return 0;
        }
    }
    return fail(
        err, errlen, -EINVAL, "op: unknown pool operation \"%s\" (list, create, set, destroy)",
        escape(json_object_get_string(v), (size_t)json_object_get_string_len(v), esc, sizeof(esc)));
}

static int
parse_pool(struct json_object *args, struct ctl_request *req, char *err, size_t errlen)
{
    bool create;
    int r;

    if ((r = parse_pool_op(args, req, err, errlen)) < 0 ||
        (r = check_keys(args, pool_keys[req->pool_op], ctl_request_name(req), err, errlen)) < 0)
        return r;
    if (req->pool_op == CTL_POOL_LIST)
        return 0;
    r = get_string(args, "name", true, CS_NAME, req->name, VS_NAME_SIZE, err, errlen);
    if (r < 0 || req->pool_op == CTL_POOL_DESTROY)
        return r;
    create = req->pool_op == CTL_POOL_CREATE;
    if (((create || json_object_object_get_ex(args, "cpus", NULL)) &&
         (r = parse_cpus(args, req, err, errlen)) < 0) ||
        (r = get_string(args, "policy", create, CS_KEY, req->policy, VS_KEY_SIZE, err, errlen)) <
            0 ||
        (r = parse_params(args, req, err, errlen)) < 0)
        return r;
    if (create)
        return 0;
    if (req->cpus[0] != '\0' && (req->policy[0] != '\0' || req->nr_params > 0))
        return fail(err, errlen, -EINVAL,
                    "pool set: cpus change alone (then the policy or params, a second set)");
    if (req->cpus[0] == '\0' && req->policy[0] == '\0' && req->nr_params == 0)
        return fail(err, errlen, -EINVAL, "pool set needs cpus, a policy or params");
    return 0;
}

/* --- Requests. --- */

static const char *const no_keys[] = {NULL};
static const char *const attach_keys[] = {"name", "pid",    "tids",        "qmp", "libvirt",
                                          "pool", "params", "any_process", NULL};
static const char *const name_keys[] = {"name", NULL};
static const char *const set_keys[] = {"name", "params", NULL};
static const char *const help_keys[] = {"policy", NULL};
static const char *const move_keys[] = {"name", "pool", "params", NULL};
static const char *const hook_keys[] = {"name", "op", "xml", NULL};

static int
parse_help(struct json_object *args, struct ctl_request *req, char *err, size_t errlen)
{
    return get_string(args, "policy", false, CS_KEY, req->policy, VS_KEY_SIZE, err, errlen);
}

/*
 * What each command accepts. `keys` NULL: args checked by `parse` itself
 * (pool, whose keys depend on its op). `parse` NULL: the command takes no
 * arguments. `args` may be omitted when the command takes none or when
 * every one is optional.
 */
static const struct ctl_cmd_desc {
    const char *const *keys;
    int (*parse)(struct json_object *args, struct ctl_request *req, char *err, size_t errlen);
    bool args_optional;
} cmds[] = {
    [CTL_VERSION] = {no_keys, NULL, false},
    [CTL_ATTACH] = {attach_keys, parse_attach, false},
    [CTL_DETACH] = {name_keys, parse_name_only, false},
    [CTL_SET] = {set_keys, parse_set, false},
    [CTL_LIST] = {no_keys, NULL, false},
    [CTL_STATS] = {no_keys, NULL, false},
    [CTL_POOL] = {NULL, parse_pool, false},
    [CTL_HELP] = {help_keys, parse_help, true},
    [CTL_MOVE] = {move_keys, parse_move, false},
    [CTL_HOOK] = {hook_keys, parse_hook, false},
};

static int
parse_version(struct json_object *o, char *err, size_t errlen)
{
    struct json_object *v;
    int64_t x;

    if (!json_object_object_get_ex(o, "v", &v))
        return fail(err, errlen, -EINVAL, "v: missing");
    if (!json_object_is_type(v, json_type_int))
        return fail(err, errlen, -EINVAL, "v: must be an integer");
    x = json_object_get_int64(v);
    if (x != CTL_PROTO_VERSION)
        return fail(err, errlen, -EPROTO,
                    "v: protocol version %" PRId64 " is not supported (%d is)", x,
                    CTL_PROTO_VERSION);
    return 0;
}

static int
parse_cmd(struct json_object *o, enum ctl_cmd *cmd, char *err, size_t errlen)
{
    char esc[ESCBUF];
    struct json_object *v;
    const char *s;

    if (!json_object_object_get_ex(o, "cmd", &v))
        return fail(err, errlen, -EINVAL, "cmd: missing");
    if (!json_object_is_type(v, json_type_string))
        return fail(err, errlen, -EINVAL, "cmd: must be a string");
    s = json_object_get_string(v);
    for (size_t i = 0; i < NELEM(cmd_names); i++) {
        if (strcmp(s, cmd_names[i]) == 0 && strlen(s) == (size_t)json_object_get_string_len(v)) {
            *cmd = (enum ctl_cmd)i;
            return 0;
        }
    }
    return fail(err, errlen, -EINVAL, "cmd: unknown command \"%s\"",
                escape(s, (size_t)json_object_get_string_len(v), esc, sizeof(esc)));
}

static int
parse_request(struct json_object *o, struct ctl_request *req, char *err, size_t errlen)
{
    static const char *const top_keys[] = {"v", "cmd", "args", NULL};
    const struct ctl_cmd_desc *d;
    struct json_object *args = NULL;
    bool have_args;
    int r;

    if ((r = check_keys(o, top_keys, "request", err, errlen)) < 0 ||
        (r = parse_version(o, err, errlen)) < 0 || (r = parse_cmd(o, &req->cmd, err, errlen)) < 0)
        return r;
    d = &cmds[req->cmd];
    have_args = json_object_object_get_ex(o, "args", &args);
    if (!have_args && d->parse != NULL && !d->args_optional)
        return fail(err, errlen, -EINVAL, "args: missing");
    if (!have_args)
        return 0;
    if (!json_object_is_type(args, json_type_object))
        return fail(err, errlen, -EINVAL, "args: must be an object");
    if (d->keys != NULL && (r = check_keys(args, d->keys, "args", err, errlen)) < 0)
        return r;
    return d->parse != NULL ? d->parse(args, req, err, errlen) : 0;
}

int
ctl_request_parse(const char *line, size_t len, struct ctl_request *req, char *err, size_t errlen)
{
    struct json_object *o;
    int r;

    memset(req, 0, offsetof(struct ctl_request, param_keys));
    req->hook_op = CTL_HOOK_STARTED;
    req->xml[0] = '\0';
    if (errlen > 0)
        err[0] = '\0';
    r = line_to_json(line, len, CTL_LINE_MAX, &o, err, errlen);
    if (r < 0)
        return r;
    r = parse_request(o, req, err, errlen);
    json_object_put(o);
    return r;
}

/* --- Formatting. --- */

int
ctl_request_add_param(struct ctl_request *req, const char *key, const char *val, char *err,
                      size_t errlen)
{
    size_t i = req->nr_params, klen = strlen(key), vlen = strlen(val);
    char esc[ESCBUF];

    if (i >= VS_PARAMS_MAX)
        return fail(err, errlen, -E2BIG, "params: more than %d keys", VS_PARAMS_MAX);
    if (klen >= VS_KEY_SIZE)
        return fail(err, errlen, -EINVAL, "params: key \"%s\" is not 1..%d bytes",
                    escape(key, klen, esc, sizeof(esc)), VS_KEY_SIZE - 1);
    if (vlen >= VS_VALUE_SIZE)
        return fail(err, errlen, -EINVAL, "params.%s: longer than %d bytes",
                    escape(key, klen, esc, sizeof(esc)), VS_VALUE_SIZE - 1);
    memcpy(req->param_keys[i], key, klen + 1);
    memcpy(req->param_vals[i], val, vlen + 1);
    req->params[i].key = req->param_keys[i];
    req->params[i].val = req->param_vals[i];
    req->nr_params++;
    return 0;
}

/* A malloc'd copy of o's text plus '\n'; puts o. */
static char *
json_to_line(struct json_object *o)
{
    const char *s;
    char *line = NULL;
    size_t n;

    if (o == NULL)
        return NULL;
    s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    if (s != NULL) {
        n = strlen(s);
        line = malloc(n + 2);
        if (line != NULL) {
            memcpy(line, s, n);
            line[n] = '\n';
            line[n + 1] = '\0';
        }
    }
    json_object_put(o);
    return line;
}

static void
add_str(struct json_object *o, const char *key, const char *val)
{
    if (val[0] != '\0')
        json_object_object_add(o, key, json_object_new_string(val));
}

static void
add_params(struct json_object *args, const struct ctl_request *req)
{
    struct json_object *p;

    if (req->nr_params == 0)
        return;
    p = json_object_new_object();
    for (size_t i = 0; i < req->nr_params && i < VS_PARAMS_MAX; i++)
        json_object_object_add(p, req->params[i].key, json_object_new_string(req->params[i].val));
    json_object_object_add(args, "params", p);
}

static void
add_target(struct json_object *args, const struct ctl_request *req)
{
    struct json_object *a;

    switch (req->target) {
    case CTL_TARGET_PID:
        json_object_object_add(args, "pid", json_object_new_int(req->pid));
        break;
    case CTL_TARGET_TIDS:
        a = json_object_new_array();
        for (unsigned int i = 0; i < req->nr_tids && i < VS_THREADS_MAX; i++)
            json_object_array_add(a, json_object_new_int(req->tids[i]));
        json_object_object_add(args, "tids", a);
        break;
    case CTL_TARGET_QMP:
        json_object_object_add(args, "qmp", json_object_new_string(req->qmp));
        break;
    case CTL_TARGET_LIBVIRT:
        json_object_object_add(args, "libvirt", json_object_new_string(req->libvirt));
        break;
    case CTL_TARGET_NONE:
        break;
    }
}

/* The args object of `req`, or NULL for a command without arguments. */
static struct json_object *
format_args(const struct ctl_request *req)
{
    struct json_object *args = json_object_new_object();

    switch (req->cmd) {
    case CTL_ATTACH:
        add_str(args, "name", req->name);
        add_target(args, req);
        add_str(args, "pool", req->pool);
        if (req->any_process)
            json_object_object_add(args, "any_process", json_object_new_boolean(1));
        add_params(args, req);
        break;
    case CTL_DETACH:
    case CTL_SET:
        add_str(args, "name", req->name);
        add_params(args, req);
        break;
    case CTL_POOL:
        json_object_object_add(args, "op", json_object_new_string(pool_op_names[req->pool_op]));
        add_str(args, "name", req->name);
        add_str(args, "cpus", req->cpus);
        add_str(args, "policy", req->policy);
        add_params(args, req);
        break;
    case CTL_HELP:
        add_str(args, "policy", req->policy);
        break;
    case CTL_MOVE:
        add_str(args, "name", req->name);
        add_str(args, "pool", req->pool);
        add_params(args, req);
        break;
    case CTL_HOOK:
        add_str(args, "name", req->name);
        if (ctl_hook_op_name(req->hook_op) != NULL)
            add_str(args, "op", ctl_hook_op_name(req->hook_op));
        add_str(args, "xml", req->xml);
        break;
    default:
        json_object_put(args);
        args = NULL;
    }
    return args;
}

char *
ctl_request_format(const struct ctl_request *req)
{
    struct json_object *o, *args;

    if (ctl_cmd_name(req->cmd) == NULL ||
        (req->cmd == CTL_POOL && ctl_pool_op_name(req->pool_op) == NULL))
        return NULL;
    o = json_object_new_object();
    if (o == NULL)
        return NULL;
    json_object_object_add(o, "v", json_object_new_int(CTL_PROTO_VERSION));
    json_object_object_add(o, "cmd", json_object_new_string(cmd_names[req->cmd]));
    args = format_args(req);
    if (args != NULL)
        json_object_object_add(o, "args", args);
    return json_to_line(o);
}

char *
ctl_response_format_ok(struct json_object *result)
{
    struct json_object *o = json_object_new_object();

    if (o == NULL) {
        json_object_put(result);
        return NULL;
    }
    if (result == NULL)
        result = json_object_new_object();
    json_object_object_add(o, "v", json_object_new_int(CTL_PROTO_VERSION));
    json_object_object_add(o, "ok", json_object_new_boolean(1));
    json_object_object_add(o, "result", result);
    return json_to_line(o);
}

char *
ctl_response_format_error(int errnum, const char *message)
{
    const struct ctl_errno_entry *e = errno_find(errnum);
    struct json_object *o = json_object_new_object(), *error = json_object_new_object();

    if (message == NULL || message[0] == '\0')
        message = e != NULL ? e->text : "failed";
    json_object_object_add(error, "code", json_object_new_string(ctl_errno_name(errnum)));
    json_object_object_add(error, "message", json_object_new_string(message));
    json_object_object_add(o, "v", json_object_new_int(CTL_PROTO_VERSION));
    json_object_object_add(o, "ok", json_object_new_boolean(0));
    json_object_object_add(o, "error", error);
    return json_to_line(o);
}

/* --- Responses. --- */

static int
parse_error_member(struct json_object *o, int *errnum, char *msg, size_t msglen)
{
    struct json_object *e, *code, *m;

    if (!json_object_object_get_ex(o, "error", &e) || !json_object_is_type(e, json_type_object) ||
        !json_object_object_get_ex(e, "code", &code) ||
        !json_object_is_type(code, json_type_string) ||
        !json_object_object_get_ex(e, "message", &m) || !json_object_is_type(m, json_type_string))
        return fail(msg, msglen, -EPROTO, "response: error must be {\"code\", \"message\"}");
    *errnum = ctl_errno_value(json_object_get_string(code));
    if (*errnum == 0)
        *errnum = EIO;
    if (msglen > 0)
        snprintf(msg, msglen, "%s", json_object_get_string(m));
    return 0;
}

int
ctl_response_parse(const char *line, size_t len, struct json_object **result, int *errnum,
                   char *msg, size_t msglen)
{
    struct json_object *o, *v, *ok, *res;
    char buf[CTL_ERRLEN];
    int r;

    *result = NULL;
    *errnum = 0;
    r = line_to_json(line, len, CTL_REPLY_MAX, &o, buf, sizeof(buf));
    if (r < 0)
        return fail(msg, msglen, -EPROTO, "response: %s", buf);
    r = -EPROTO;
    if (!json_object_object_get_ex(o, "v", &v) || !json_object_is_type(v, json_type_int) ||
        json_object_get_int64(v) != CTL_PROTO_VERSION)
        fail(msg, msglen, r, "response: v must be %d", CTL_PROTO_VERSION);
    else if (!json_object_object_get_ex(o, "ok", &ok) ||
             !json_object_is_type(ok, json_type_boolean))
        fail(msg, msglen, r, "response: ok must be a boolean");
    else if (!json_object_get_boolean(ok))
        r = parse_error_member(o, errnum, msg, msglen);
    else if (!json_object_object_get_ex(o, "result", &res) ||
             !json_object_is_type(res, json_type_object))
        fail(msg, msglen, r, "response: result must be an object");
    else {
        *result = json_object_get(res);
        r = 0;
    }
    json_object_put(o);
    return r;
}
