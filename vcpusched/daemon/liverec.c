/* SPDX-License-Identifier: ISC */
/*
 * liverec.c - the live record's strict parser; see liverec.h.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/names.h"
#include "control/ctl_json.h"
#include "liverec.h"

#define PATH_SIZE 108     /* sun_path: a QMP socket path */
#define PID_MAX   4194304 /* the kernel's PID_MAX_LIMIT */
#define DEPTH_MAX 8

__attribute__((format(printf, 4, 5))) static int
fail(char *err, size_t errlen, int r, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return r;
}

/* Every key of o is one of keys[] (NULL-terminated). */
static int
only_keys(struct json_object *o, const char *const *keys, const char *where, char *err,
          size_t errlen)
{
    json_object_object_foreach(o, key, val)
    {
        bool known = false;

        (void)val;
        for (size_t i = 0; keys[i] != NULL && !known; i++)
            known = strcmp(keys[i], key) == 0;
        if (!known)
            return fail(err, errlen, -EINVAL, "%s: unknown key \"%.32s\"", where, key);
    }
    return 0;
}

/* No control character, at most max bytes, at least min. */
static bool
text_ok(const char *s, size_t min, size_t max)
{
    size_t n = strlen(s);

    if (n < min || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

enum kind {
    K_NAME,
    K_KEY,
    K_TEXT,
    K_CPUS /* a CPU list: longer than a value on a host of many CPUs */
};

/* A string member; *out points into o. */
static int
get_str(struct json_object *o, const char *key, bool required, enum kind k, const char *where,
        const char **out, char *err, size_t errlen)
{
    struct json_object *v;
    const char *s;
    bool ok;

    *out = "";
    if (!json_object_object_get_ex(o, key, &v))
        return required ? fail(err, errlen, -EINVAL, "%s.%s: missing", where, key) : 0;
    if (!json_object_is_type(v, json_type_string))
        return fail(err, errlen, -EINVAL, "%s.%s: must be a string", where, key);
    s = json_object_get_string(v);
    ok = (size_t)json_object_get_string_len(v) == strlen(s) &&
         (k == K_NAME   ? names_valid(s)
          : k == K_KEY  ? names_key_valid(s)
          : k == K_CPUS ? text_ok(s, 1, CPULIST_TEXT_MAX - 1)
                        : text_ok(s, 1, VS_VALUE_SIZE - 1));
    if (!ok)
        return fail(err, errlen, -EINVAL, "%s.%s: not a valid %s", where, key,
                    k == K_NAME  ? "name (" NAMES_CHARS ")"
                    : k == K_KEY ? "key (" NAMES_KEY_CHARS ")"
                                 : "text");
    *out = s;
    return 0;
}

/* An integer member in [min, max]. */
static int
get_int(struct json_object *o, const char *key, int64_t min, int64_t max, const char *where,
        int64_t *out, char *err, size_t errlen)
{
    struct json_object *v;

    if (!json_object_object_get_ex(o, key, &v))
        return fail(err, errlen, -EINVAL, "%s.%s: missing", where, key);
    errno = 0;
    if (!json_object_is_type(v, json_type_int) || (*out = json_object_get_int64(v), errno != 0) ||
        *out < min || *out > max)
        return fail(err, errlen, -EINVAL, "%s.%s: must be an integer in %lld..%lld", where, key,
                    (long long)min, (long long)max);
    return 0;
}

static int
get_u64(struct json_object *o, const char *key, const char *where, uint64_t *out, char *err,
        size_t errlen)
{
    int64_t v;
    int r = get_int(o, key, 0, INT64_MAX, where, &v, err, errlen);

    *out = (uint64_t)v;
    return r;
}

/* "params": an object of at most VS_PARAMS_MAX keys with string values. */
static int
get_params(struct json_object *o, const char *where, struct kv *kv, size_t *n, char *err,
           size_t errlen)
{
    struct json_object *p;

    *n = 0;
    if (!json_object_object_get_ex(o, "params", &p))
        return fail(err, errlen, -EINVAL, "%s.params: missing", where);
    if (!json_object_is_type(p, json_type_object))
        return fail(err, errlen, -EINVAL, "%s.params: must be an object", where);
    json_object_object_foreach(p, key, val)
    {
        const char *s;

        if (*n == VS_PARAMS_MAX)
            return fail(err, errlen, -EINVAL, "%s.params: more than %d", where, VS_PARAMS_MAX);
        if (!names_key_valid(key))
            return fail(err, errlen, -EINVAL, "%s.params: key \"%.32s\" is not " NAMES_KEY_CHARS,
                        where, key);
        if (!json_object_is_type(val, json_type_string) ||
            !text_ok(s = json_object_get_string(val), 1, VS_VALUE_SIZE - 1) ||
            (size_t)json_object_get_string_len(val) != strlen(s))
            return fail(err, errlen, -EINVAL, "%s.params.%s: must be a string of 1..%d bytes",
                        where, key, VS_VALUE_SIZE - 1);
        kv[*n].key = key;
        kv[(*n)++].val = s;
    }
    return 0;
}

static int
get_array(struct json_object *o, const char *key, size_t max, struct json_object **arr,
          const char *where, char *err, size_t errlen)
{
    if (!json_object_object_get_ex(o, key, arr))
        return fail(err, errlen, -EINVAL, "%s%s: missing", where, key);
    if (!json_object_is_type(*arr, json_type_array))
        return fail(err, errlen, -EINVAL, "%s%s: must be an array", where, key);
    if (json_object_array_length(*arr) > max)
        return fail(err, errlen, -EINVAL, "%s%s: more than %zu", where, key, max);
    return 0;
}

static const char *const pool_keys[] = {"name", "cpus", "policy", "params", NULL};

static int
parse_pool(struct json_object *o, const char *where, struct liverec_pool *p, char *err,
           size_t errlen)
{
    char msg[128];
    int r;

    if (!json_object_is_type(o, json_type_object))
        return fail(err, errlen, -EINVAL, "%s: must be an object", where);
    if ((r = only_keys(o, pool_keys, where, err, errlen)) < 0 ||
        (r = get_str(o, "name", true, K_NAME, where, &p->name, err, errlen)) < 0 ||
        (r = get_str(o, "cpus", true, K_CPUS, where, &p->cpus_text, err, errlen)) < 0 ||
        (r = get_str(o, "policy", true, K_KEY, where, &p->policy, err, errlen)) < 0 ||
        (r = get_params(o, where, p->params, &p->nr_params, err, errlen)) < 0)
        return r;
    if (cpulist_parse(p->cpus_text, &p->cpus, msg, sizeof(msg)) < 0 || cpuset_empty(&p->cpus))
        return fail(err, errlen, -EINVAL, "%s.cpus: %s", where,
                    cpuset_empty(&p->cpus) ? "an empty list" : msg);
    return 0;
}

static const char *const dom_keys[] = {"name",    "source",  "origin",  "pid",     "start_time",
                                       "exe_dev", "exe_ino", "qmp_dev", "qmp_ino", "tids",
                                       "pool",    "params",  NULL};

static int
parse_tids(struct json_object *o, const char *where, struct liverec_dom *d, char *err,
           size_t errlen)
{
    struct json_object *arr;
    char w[64];
    int r;

    snprintf(w, sizeof(w), "%s.", where);
    if ((r = get_array(o, "tids", VS_THREADS_MAX, &arr, w, err, errlen)) < 0)
        return r;
    d->nr_tids = (unsigned int)json_object_array_length(arr);
    for (unsigned int i = 0; i < d->nr_tids; i++) {
        struct json_object *v = json_object_array_get_idx(arr, i);
        int64_t t = json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : 0;

        if (t < 1 || t > PID_MAX)
            return fail(err, errlen, -EINVAL, "%s.tids[%u]: must be an integer in 1..%d", where, i,
                        PID_MAX);
        d->tids[i] = (pid_t)t;
        for (unsigned int j = 0; j < i; j++)
            if (d->tids[j] == d->tids[i])
                return fail(err, errlen, -EINVAL, "%s.tids: %d appears twice", where, (int)t);
    }
    return 0;
}

/* What each source brings: origin, the socket's identity, tids. */
static int
parse_source(struct json_object *o, const char *where, struct liverec_dom *d, char *err,
             size_t errlen)
{
    bool qmp = strcmp(d->source, "qmp") == 0, lv = strcmp(d->source, "libvirt") == 0;
    bool tids = strcmp(d->source, "tids") == 0;
    int r;

    if (!qmp && !lv && !tids && strcmp(d->source, "pid") != 0)
        return fail(err, errlen, -EINVAL, "%s.source: \"%.16s\" is not pid, tids, qmp or libvirt",
                    where, d->source);
    if ((!qmp && (json_object_object_get_ex(o, "qmp_dev", NULL) ||
                  json_object_object_get_ex(o, "qmp_ino", NULL))) ||
        (!tids && json_object_object_get_ex(o, "tids", NULL)) ||
        (!qmp && !lv && json_object_object_get_ex(o, "origin", NULL)))
        return fail(err, errlen, -EINVAL, "%s: a key source %s does not take", where, d->source);
    if (tids)
        return parse_tids(o, where, d, err, errlen);
    if (lv)
        return get_str(o, "origin", true, K_NAME, where, &d->origin, err, errlen);
    if (!qmp)
        return 0;
    if ((r = get_str(o, "origin", true, K_TEXT, where, &d->origin, err, errlen)) < 0 ||
        (r = get_u64(o, "qmp_dev", where, &d->qmp_dev, err, errlen)) < 0 ||
        (r = get_u64(o, "qmp_ino", where, &d->qmp_ino, err, errlen)) < 0)
        return r;
    if (d->origin[0] != '/' || strlen(d->origin) >= PATH_SIZE)
        return fail(err, errlen, -EINVAL, "%s.origin: a QMP socket path, absolute, under %d bytes",
                    where, PATH_SIZE);
    return 0;
}

static int
parse_dom(struct json_object *o, const char *where, struct liverec_dom *d, char *err, size_t errlen)
{
    int64_t pid;
    int r;

    d->origin = "";
    if (!json_object_is_type(o, json_type_object))
        return fail(err, errlen, -EINVAL, "%s: must be an object", where);
    if ((r = only_keys(o, dom_keys, where, err, errlen)) < 0 ||
        (r = get_str(o, "name", true, K_NAME, where, &d->name, err, errlen)) < 0 ||
        (r = get_str(o, "source", true, K_KEY, where, &d->source, err, errlen)) < 0 ||
        (r = get_int(o, "pid", 1, PID_MAX, where, &pid, err, errlen)) < 0 ||
        (r = get_u64(o, "start_time", where, &d->ident.start_time, err, errlen)) < 0 ||
        (r = get_u64(o, "exe_dev", where, &d->ident.exe_dev, err, errlen)) < 0 ||
        (r = get_u64(o, "exe_ino", where, &d->ident.exe_ino, err, errlen)) < 0 ||
        (r = get_str(o, "pool", true, K_NAME, where, &d->pool, err, errlen)) < 0 ||
        (r = get_params(o, where, d->params, &d->nr_params, err, errlen)) < 0)
        return r;
    d->pid = (pid_t)pid;
    return parse_source(o, where, d, err, errlen);
}

/* The whole text as one JSON value (blanks after it allowed), or NULL with err. */
static struct json_object *
parse_json(const char *text, size_t len, char *err, size_t errlen)
{
    struct json_object *o;
    const char *why = "";
    int r = ctl_json_parse_whole(text, len, DEPTH_MAX, &o, &why);

    if (r == -ENOMEM || r == -E2BIG)
        fail(err, errlen, 0, "out of memory");
    else if (r < 0 || o == NULL)
        fail(err, errlen, 0, "not JSON: %s",
             r == -EBADMSG  ? "trailing characters"
             : r == -EPROTO ? why
                            : "null");
    return r < 0 ? NULL : o;
}

static int
parse_top(struct liverec *rec, char *err, size_t errlen)
{
    static const char *const keys[] = {"vcpusched_live", "boot_id", "written_by",
                                       "pools",          "domains", NULL};
    struct json_object *o = rec->root, *pools, *doms;
    const char *boot;
    int64_t version;
    int r;

    if (!json_object_is_type(o, json_type_object))
        return fail(err, errlen, -EINVAL, "not a JSON object");
    r = get_int(o, "vcpusched_live", 1, INT32_MAX, "record", &version, err, errlen);
    if (r == 0 && version != LIVEREC_VERSION)
        return fail(err, errlen, -ENOTSUP,
                    "record.vcpusched_live: version %lld (this daemon reads version %d)",
                    (long long)version, LIVEREC_VERSION);
    if (r < 0 || (r = only_keys(o, keys, "record", err, errlen)) < 0 ||
        (r = get_str(o, "boot_id", true, K_TEXT, "record", &boot, err, errlen)) < 0 ||
        (r = get_str(o, "written_by", false, K_TEXT, "record", &rec->written_by, err, errlen)) <
            0 ||
        (r = get_array(o, "pools", LIVEREC_MAX_POOLS, &pools, "record.", err, errlen)) < 0 ||
        (r = get_array(o, "domains", LIVEREC_MAX_DOMS, &doms, "record.", err, errlen)) < 0)
        return r;
    if (strlen(boot) != PROCID_BOOT_ID_SIZE - 1 ||
        strspn(boot, "0123456789abcdef-") != strlen(boot))
        return fail(err, errlen, -EINVAL, "record.boot_id: not a boot id");
    snprintf(rec->boot_id, sizeof(rec->boot_id), "%s", boot);
    rec->nr_pools = (unsigned int)json_object_array_length(pools);
    rec->nr_doms = (unsigned int)json_object_array_length(doms);
    rec->pools = calloc(rec->nr_pools + 1, sizeof(*rec->pools));
    rec->doms = calloc(rec->nr_doms + 1, sizeof(*rec->doms));
    if (rec->pools == NULL || rec->doms == NULL)
        return fail(err, errlen, -ENOMEM, "out of memory");
    for (unsigned int i = 0; i < rec->nr_pools; i++) {
        char where[32];

        snprintf(where, sizeof(where), "pools[%u]", i);
        if ((r = parse_pool(json_object_array_get_idx(pools, i), where, &rec->pools[i], err,
                            errlen)) < 0)
            return r;
        for (unsigned int j = 0; j < i; j++)
            if (strcmp(rec->pools[j].name, rec->pools[i].name) == 0)
                return fail(err, errlen, -EINVAL, "%s.name: pool %s appears twice", where,
                            rec->pools[i].name);
    }
    for (unsigned int i = 0; i < rec->nr_doms; i++) {
        char where[32];

        snprintf(where, sizeof(where), "domains[%u]", i);
        if ((r = parse_dom(json_object_array_get_idx(doms, i), where, &rec->doms[i], err, errlen)) <
            0)
            return r;
        for (unsigned int j = 0; j < i; j++)
            if (strcmp(rec->doms[j].name, rec->doms[i].name) == 0)
                return fail(err, errlen, -EINVAL, "%s.name: domain %s appears twice", where,
                            rec->doms[i].name);
    }
    return 0;
}

int
liverec_parse(const char *text, size_t len, struct liverec *rec, char *err, size_t errlen)
{
    int r;

    memset(rec, 0, sizeof(*rec));
    rec->written_by = "";
    if (len > LIVEREC_MAX_BYTES)
        return fail(err, errlen, -E2BIG, "larger than %d bytes", LIVEREC_MAX_BYTES);
    if (memchr(text, '\0', len) != NULL)
        return fail(err, errlen, -EPROTO, "contains a NUL byte");
    rec->root = parse_json(text, len, err, errlen);
    if (rec->root == NULL)
        return -EPROTO;
    r = parse_top(rec, err, errlen);
    if (r < 0)
        liverec_free(rec);
    return r;
}

void
liverec_free(struct liverec *rec)
{
    json_object_put(rec->root);
    free(rec->pools);
    free(rec->doms);
    memset(rec, 0, sizeof(*rec));
    rec->written_by = "";
}

bool
liverec_conf_has(char (*conf)[VS_NAME_SIZE], unsigned int n, const char *name)
{
    for (unsigned int i = 0; i < n; i++)
        if (strcmp(conf[i], name) == 0)
            return true;
    return false;
}
