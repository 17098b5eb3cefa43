/* SPDX-License-Identifier: ISC */
/*
 * ctl_json.h - read the members of protocol results (docs/protocol.md) by
 * name, forgiving what is missing or of another type: a client of an older
 * or newer daemon still gets something to show. Used by vcpuschedctl's
 * tables, `top` and the metrics formatter. And the one strict parse of
 * JSON text, for the protocol's lines and the daemon's live record.
 */
#ifndef VCPUSCHED_CTL_JSON_H
#define VCPUSCHED_CTL_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_object;

/* The member `key` of object `o`, or NULL (o NULL, not an object, no such key). */
struct json_object *ctl_json_get(struct json_object *o, const char *key);
/* The member if it is an array, else NULL. */
struct json_object *ctl_json_array(struct json_object *o, const char *key);
/* The member if it is an object, else NULL. */
struct json_object *ctl_json_object(struct json_object *o, const char *key);
/* A string member, or "" when missing or not a string. */
const char *ctl_json_str(struct json_object *o, const char *key);
/* An integer member in *out: true if present and an integer (else *out = 0). */
bool ctl_json_int(struct json_object *o, const char *key, int64_t *out);

/*
 * text[0, len) as exactly one JSON value followed by blanks only, parsed
 * strictly (json-c's extensions refused, UTF-8 checked), nested at most
 * `depth` deep. 0 with *out (NULL for a bare `null`); -ENOMEM; -E2BIG (len
 * past json-c's int); -EPROTO, not JSON, json-c's reason in *why; -EBADMSG,
 * characters after the value.
 */
int ctl_json_parse_whole(const char *text, size_t len, int depth, struct json_object **out,
                         const char **why);

#endif /* VCPUSCHED_CTL_JSON_H */
