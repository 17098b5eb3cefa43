/* SPDX-License-Identifier: ISC */
/*
 * ctl_json.c - lenient accessors for protocol results (ctl_json.h).
 */
#include <json-c/json.h>

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
