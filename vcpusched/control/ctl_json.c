/* SPDX-License-Identifier: ISC */
/*
 * ctl_json.c - lenient accessors for protocol results, and the strict
 * parse of JSON text (ctl_json.h).
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>

#include "ctl_json.h"

struct json_object *
ctl_json_get(struct json_object *o, const char *key)
{
    struct json_object *v = NULL;

    if (o == NULL || !json_object_is_type(o, json_type_object) ||
        !json_object_object_get_ex(o, key, &v))
        return NULL;
    return v;
}

struct json_object *
ctl_json_array(struct json_object *o, const char *key)
{
    struct json_object *a = ctl_json_get(o, key);

    return a != NULL && json_object_is_type(a, json_type_array) ? a : NULL;
}

struct json_object *
ctl_json_object(struct json_object *o, const char *key)
{
    struct json_object *v = ctl_json_get(o, key);

    return v != NULL && json_object_is_type(v, json_type_object) ? v : NULL;
}

const char *
ctl_json_str(struct json_object *o, const char *key)
{
    struct json_object *v = ctl_json_get(o, key);

    return v != NULL && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
}

bool
ctl_json_int(struct json_object *o, const char *key, int64_t *out)
{
    struct json_object *v = ctl_json_get(o, key);
    bool ok = v != NULL && json_object_is_type(v, json_type_int);

    *out = ok ? json_object_get_int64(v) : 0;
    return ok;
}

static bool
is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int
ctl_json_parse_whole(const char *text, size_t len, int depth, struct json_object **out,
                     const char **why)
{
    struct json_tokener *tok;
    enum json_tokener_error jerr;
    struct json_object *o;
    size_t end;

    *out = NULL;
    if (len > INT32_MAX)
        return -E2BIG;
    if ((tok = json_tokener_new_ex(depth)) == NULL)
        return -ENOMEM;
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS |
                                    JSON_TOKENER_VALIDATE_UTF8);
    o = json_tokener_parse_ex(tok, text, (int)len);
    jerr = json_tokener_get_error(tok);
    end = json_tokener_get_parse_end(tok);
    /* The NUL fed after the input ends a bare number at its end. */
    if (o == NULL && jerr == json_tokener_continue) {
        o = json_tokener_parse_ex(tok, "", 1);
        jerr = json_tokener_get_error(tok);
        end = len;
    }
    json_tokener_free(tok);
    if (o == NULL && jerr != json_tokener_success) {
        *why = json_tokener_error_desc(jerr);
        return -EPROTO;
    }
    if (o == NULL) /* json-c parses "null" as success with no object */
        return 0;
    while (end < len && is_blank(text[end]))
        end++;
    if (end < len) {
        json_object_put(o);
        return -EBADMSG;
    }
    *out = o;
    return 0;
}
