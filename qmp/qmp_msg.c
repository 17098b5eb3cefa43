/* SPDX-License-Identifier: ISC */
/*
 * qmp_msg.c - QMP messages: one server line -> a classified json-c tree,
 * and a command -> one client line. No I/O, no state: this is the part the
 * unit tests feed with captured replies and the fuzzer with random bytes.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "qmp_priv.h"

void
qmp_errf(char *errbuf, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (errbuf == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(errbuf, errlen, fmt, ap);
    va_end(ap);
}

static bool
is_blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
            return false;
    return true;
}

/*
 * Text -> tree. Strict mode: QEMU emits plain RFC 8259 JSON, so anything
 * json-c would only accept leniently is a sign of a broken peer. The whole
 * line must be one value; a second value or junk after it is an error.
 */
static int
msg_parse_json(const char *line, size_t len, struct json_object **out, char *errbuf, size_t errlen)
{
    struct json_tokener *tok;
    struct json_object *obj;
    enum json_tokener_error jerr;
    size_t used;

    *out = NULL;
    if (len > INT32_MAX) {
        qmp_errf(errbuf, errlen, "qmp: line of %zu bytes is too long to parse", len);
        return -EPROTO;
    }
    tok = json_tokener_new();
    if (tok == NULL) {
        qmp_errf(errbuf, errlen, "qmp: out of memory parsing a server line");
        return -ENOMEM;
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    obj = json_tokener_parse_ex(tok, line, (int)len);
    jerr = json_tokener_get_error(tok);
    used = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (jerr != json_tokener_success) {
        json_object_put(obj);
        qmp_errf(errbuf, errlen, "qmp: server sent a line that is not JSON: %s",
                 jerr == json_tokener_continue ? "truncated" : json_tokener_error_desc(jerr));
        return -EPROTO;
    }
    if (obj == NULL) { /* json-c's null */
        qmp_errf(errbuf, errlen, "qmp: server sent null JSON, not an object");
        return -EPROTO;
    }
    if (!is_blank(line + used, len - used)) {
        json_object_put(obj);
        qmp_errf(errbuf, errlen, "qmp: server sent bytes after the JSON value");
        return -EPROTO;
    }
    *out = obj;
    return 0;
}

/* A member that must be a string when present; *s stays NULL when absent. */
static int
get_string(struct json_object *obj, const char *key, const char **s)
{
    struct json_object *v;

    *s = NULL;
    if (!json_object_object_get_ex(obj, key, &v))
        return 0;
    if (!json_object_is_type(v, json_type_string))
        return -EPROTO;
    *s = json_object_get_string(v);
    return 0;
}

static int
msg_classify_error(struct qmp_msg *msg, struct json_object *err, char *errbuf, size_t errlen)
{
    if (!json_object_is_type(err, json_type_object) ||
        get_string(err, "class", &msg->error_class) < 0 ||
        get_string(err, "desc", &msg->error_desc) < 0 || msg->error_class == NULL ||
        msg->error_desc == NULL) {
        qmp_errf(errbuf, errlen, "qmp: error reply without string class and desc");
        return -EPROTO;
    }
    msg->kind = QMP_MSG_ERROR;
    return 0;
}

/* Timestamps are optional for us (we never rely on them) but must be sane. */
static int
msg_parse_timestamp(struct qmp_msg *msg, char *errbuf, size_t errlen)
{
    struct json_object *ts, *sec, *usec;

    msg->ts_sec = -1;
    msg->ts_usec = -1;
    if (!json_object_object_get_ex(msg->root, "timestamp", &ts))
        return 0;
    if (!json_object_is_type(ts, json_type_object) ||
        !json_object_object_get_ex(ts, "seconds", &sec) ||
        !json_object_object_get_ex(ts, "microseconds", &usec) ||
        !json_object_is_type(sec, json_type_int) || !json_object_is_type(usec, json_type_int)) {
        qmp_errf(errbuf, errlen, "qmp: event %s has a malformed timestamp", msg->event);
        return -EPROTO;
    }
    msg->ts_sec = json_object_get_int64(sec);
    msg->ts_usec = json_object_get_int64(usec);
    return 0;
}

static int
msg_classify_event(struct qmp_msg *msg, char *errbuf, size_t errlen)
{
    struct json_object *data;

    if (get_string(msg->root, "event", &msg->event) < 0 || msg->event == NULL) {
        qmp_errf(errbuf, errlen, "qmp: event name is not a string");
        return -EPROTO;
    }
    if (json_object_object_get_ex(msg->root, "data", &data)) {
        if (!json_object_is_type(data, json_type_object)) {
            qmp_errf(errbuf, errlen, "qmp: event %s has non-object data", msg->event);
            return -EPROTO;
        }
        msg->value = data;
    }
    msg->kind = QMP_MSG_EVENT;
    return msg_parse_timestamp(msg, errbuf, errlen);
}

/*
 * Decide what a top-level object is. Exactly one of the four keys that
 * name a kind must be present: a message that is both a reply and an
 * event (or neither) cannot be routed safely, so it is a protocol error.
 */
static int
msg_classify(struct qmp_msg *msg, char *errbuf, size_t errlen)
{
    struct json_object *root = msg->root, *greet, *ret, *err, *ev;
    bool has_greet = json_object_object_get_ex(root, "QMP", &greet);
    bool has_ret = json_object_object_get_ex(root, "return", &ret);
    bool has_err = json_object_object_get_ex(root, "error", &err);
    bool has_ev = json_object_object_get_ex(root, "event", &ev);

    if (has_greet + has_ret + has_err + has_ev != 1) {
        qmp_errf(errbuf, errlen, "qmp: server message is %s",
                 has_greet + has_ret + has_err + has_ev == 0 ? "of no known kind" : "ambiguous");
        return -EPROTO;
    }
    if (has_ret || has_err)
        json_object_object_get_ex(root, "id", &msg->id);
    if (has_greet) {
        if (!json_object_is_type(greet, json_type_object)) {
            qmp_errf(errbuf, errlen, "qmp: greeting is not an object");
            return -EPROTO;
        }
        msg->kind = QMP_MSG_GREETING;
        msg->value = greet;
        return 0;
    }
    if (has_ret) {
        msg->kind = QMP_MSG_RETURN;
        msg->value = ret;
        return 0;
    }
    if (has_err)
        return msg_classify_error(msg, err, errbuf, errlen);
    return msg_classify_event(msg, errbuf, errlen);
}

int
qmp_msg_parse(const char *line, size_t len, struct qmp_msg *msg, char *errbuf, size_t errlen)
{
    int r;

    memset(msg, 0, sizeof(*msg));
    if (line == NULL)
        return -EINVAL;
    r = msg_parse_json(line, len, &msg->root, errbuf, errlen);
    if (r < 0)
        return r;
    if (!json_object_is_type(msg->root, json_type_object)) {
        qmp_errf(errbuf, errlen, "qmp: server sent %s JSON, not an object",
                 json_type_to_name(json_object_get_type(msg->root)));
        qmp_msg_free(msg);
        return -EPROTO;
    }
    r = msg_classify(msg, errbuf, errlen);
    if (r < 0)
        qmp_msg_free(msg);
    return r;
}

void
qmp_msg_free(struct qmp_msg *msg)
{
    if (msg == NULL)
        return;
    json_object_put(msg->root);
    memset(msg, 0, sizeof(*msg));
}

/* An integer member in [0, INT32_MAX], or -EPROTO. */
static int
get_small_int(struct json_object *obj, const char *key, int *out)
{
    struct json_object *v;
    int64_t x;

    if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_int))
        return -EPROTO;
    x = json_object_get_int64(v);
    if (x < 0 || x > INT32_MAX)
        return -EPROTO;
    *out = (int)x;
    return 0;
}

static bool
greeting_has_oob(struct json_object *qmp)
{
    struct json_object *caps, *c;

    if (!json_object_object_get_ex(qmp, "capabilities", &caps) ||
        !json_object_is_type(caps, json_type_array))
        return false;
    for (size_t i = 0; i < json_object_array_length(caps); i++) {
        c = json_object_array_get_idx(caps, i);
        if (json_object_is_type(c, json_type_string) &&
            strcmp(json_object_get_string(c), "oob") == 0)
            return true;
    }
    return false;
}

int
qmp_msg_greeting(const struct qmp_msg *msg, struct qmp_greeting *g, char *errbuf, size_t errlen)
{
    struct json_object *ver, *qemu, *pkg;

    memset(g, 0, sizeof(*g));
    if (msg->kind != QMP_MSG_GREETING) {
        qmp_errf(errbuf, errlen, "qmp: expected a greeting from the server");
        return -EPROTO;
    }
    if (!json_object_object_get_ex(msg->value, "version", &ver) ||
        !json_object_is_type(ver, json_type_object) ||
        !json_object_object_get_ex(ver, "qemu", &qemu) ||
        !json_object_is_type(qemu, json_type_object) ||
        get_small_int(qemu, "major", &g->major) < 0 ||
        get_small_int(qemu, "minor", &g->minor) < 0 ||
        get_small_int(qemu, "micro", &g->micro) < 0) {
        qmp_errf(errbuf, errlen, "qmp: greeting has no integer version.qemu.{major,minor,micro}");
        return -EPROTO;
    }
    if (json_object_object_get_ex(ver, "package", &pkg) &&
        json_object_is_type(pkg, json_type_string))
        snprintf(g->package, sizeof(g->package), "%s", json_object_get_string(pkg));
    g->oob = greeting_has_oob(msg->value);
    return 0;
}

/* Add a member; json_object_object_add() takes over one reference. */
static int
cmd_add(struct json_object *cmd, const char *key, struct json_object *val, bool borrowed)
{
    if (val == NULL)
        return -ENOMEM;
    if (borrowed)
        json_object_get(val);
    if (json_object_object_add(cmd, key, val) < 0) {
        json_object_put(val);
        return -ENOMEM;
    }
    return 0;
}

int
qmp_msg_format_command(const char *cmd, struct json_object *args, struct json_object *id,
                       char **out, size_t *out_len, char *errbuf, size_t errlen)
{
    struct json_object *o;
    const char *s;
    size_t len;
    int r = -ENOMEM;

    *out = NULL;
    *out_len = 0;
    if (cmd == NULL || cmd[0] == '\0' ||
        (args != NULL && !json_object_is_type(args, json_type_object))) {
        qmp_errf(errbuf, errlen, "qmp: a command needs a name and object arguments");
        return -EINVAL;
    }
    o = json_object_new_object();
    if (o == NULL)
        goto out;
    if (cmd_add(o, "execute", json_object_new_string(cmd), false) < 0 ||
        (args != NULL && cmd_add(o, "arguments", args, true) < 0) ||
        (id != NULL && cmd_add(o, "id", id, true) < 0))
        goto out;
    s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    if (s == NULL)
        goto out;
    len = strlen(s);
    *out = malloc(len + 2);
    if (*out == NULL)
        goto out;
    memcpy(*out, s, len);
    memcpy(*out + len, "\n", 2);
    *out_len = len + 1;
    r = 0;
out:
    if (r < 0)
        qmp_errf(errbuf, errlen, "qmp: %s: out of memory", cmd);
    json_object_put(o);
    return r;
}

void
qmp_msg_format_error(const struct qmp_msg *msg, const char *context, char *errbuf, size_t errlen)
{
    const char *cls = msg->error_class != NULL ? msg->error_class : "?";
    const char *desc = msg->error_desc != NULL ? msg->error_desc : "";

    if (context != NULL)
        qmp_errf(errbuf, errlen, "%s: %s: %s", context, cls, desc);
    else
        qmp_errf(errbuf, errlen, "%s: %s", cls, desc);
}
