/* SPDX-License-Identifier: ISC */
/*
 * ctl_show.c - render control results as tables (ctl_columns.c). Only the
 * field names of docs/protocol.md are known here; everything is looked up
 * by name, so unknown extra fields are ignored and missing ones print "-".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "control/ctl_json.h"
#include "ctl_columns.h"
#include "ctl_show.h"

#define SHOW_FIELD_MAX 64 /* a formatted number, time or short name */

/* An integer member, or 0 when missing or not an integer. */
static int64_t
jint(struct json_object *o, const char *key)
{
    int64_t v;

    (void)ctl_json_int(o, key, &v);
    return v;
}

const char *
ctl_show_ns(char *buf, size_t len, int64_t ns)
{
    if (ns < 0)
        snprintf(buf, len, "-");
    else if (ns < 1000)
        snprintf(buf, len, "%" PRId64 "ns", ns);
    else if (ns < 1000000)
        snprintf(buf, len, "%.2fus", (double)ns / 1e3);
    else if (ns < 1000000000)
        snprintf(buf, len, "%.2fms", (double)ns / 1e6);
    else
        snprintf(buf, len, "%.2fs", (double)ns / 1e9);
    return buf;
}

/* A scalar as text; objects and arrays as "-". */
static const char *
fmt_scalar(char *buf, size_t len, struct json_object *v)
{
    switch (v != NULL ? json_object_get_type(v) : json_type_null) {
    case json_type_int:
        snprintf(buf, len, "%" PRId64, json_object_get_int64(v));
        break;
    case json_type_double:
        snprintf(buf, len, "%.1f", json_object_get_double(v));
        break;
    case json_type_boolean:
        snprintf(buf, len, "%s", json_object_get_boolean(v) ? "yes" : "no");
        break;
    case json_type_string:
        snprintf(buf, len, "%s", json_object_get_string(v));
        break;
    default:
        snprintf(buf, len, "-");
    }
    return buf;
}

static void
cell_field(struct ctl_columns *t, struct json_object *o, const char *key)
{
    char buf[SHOW_FIELD_MAX];

    ctl_columns_cell(t, "%s", fmt_scalar(buf, sizeof(buf), ctl_json_get(o, key)));
}

static void
cell_ns(struct ctl_columns *t, struct json_object *o, const char *key)
{
    struct json_object *v = ctl_json_get(o, key);
    char buf[SHOW_FIELD_MAX];

    if (v != NULL && json_object_is_type(v, json_type_int))
        ctl_columns_cell(t, "%s", ctl_show_ns(buf, sizeof(buf), json_object_get_int64(v)));
    else
        ctl_columns_cell(t, "-");
}

static int64_t
int_at(struct json_object *arr, size_t i)
{
    return json_object_get_int64(json_object_array_get_idx(arr, i));
}

const char *
ctl_show_cpus(char *buf, size_t len, struct json_object *arr)
{
    size_t n = arr != NULL && json_object_is_type(arr, json_type_array)
                   ? json_object_array_length(arr)
                   : 0;
    size_t o = 0;

    snprintf(buf, len, "-");
    for (size_t i = 0; i < n && o + 44 < len; i++) {
        int64_t lo = int_at(arr, i), hi = lo;

        while (i + 1 < n && int_at(arr, i + 1) == hi + 1) {
            hi++;
            i++;
        }
        /* Each piece is under 44 bytes: o stays below len. */
        o += (size_t)snprintf(buf + o, len - o, "%s%" PRId64, o > 0 ? "," : "", lo);
        if (hi > lo)
            o += (size_t)snprintf(buf + o, len - o, "-%" PRId64, hi);
    }
    return buf;
}

static void
cell_cpus(struct ctl_columns *t, struct json_object *arr)
{
    char buf[256];

    ctl_columns_cell(t, "%s", ctl_show_cpus(buf, sizeof(buf), arr));
}

char *
ctl_show_kv(struct json_object *obj)
{
    char *text = NULL, buf[SHOW_FIELD_MAX];
    size_t len = 0; /* open_memstream's; the text ends at its NUL */
    FILE *m;

    if (obj == NULL || !json_object_is_type(obj, json_type_object) ||
        json_object_object_length(obj) == 0)
        return strdup("-");
    m = open_memstream(&text, &len);
    if (m == NULL)
        return NULL;
    json_object_object_foreach(obj, key, val)
    {
        const char *s = json_object_is_type(val, json_type_string)
                            ? json_object_get_string(val)
                            : fmt_scalar(buf, sizeof(buf), val);

        fprintf(m, "%s%s=%s", ftell(m) > 0 ? " " : "", key, s);
    }
    if (fclose(m) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

static void
cell_kv(struct ctl_columns *t, struct json_object *obj)
{
    char *text = ctl_show_kv(obj);

    ctl_columns_cell(t, "%s", text != NULL ? text : "-");
    free(text);
}

/* --- list --- */

#define LIST_VCPU_HEAD                                                                             \
    "DOMAIN POOL POLICY >VCPU >TID >CPU STATE LEVEL CLASS >RUN >SWITCHES >WAKES COUNTERS"
#define LIST_DOM_HEAD "DOMAIN SOURCE >PID >VCPUS PARAMS"

/* fg, or bg:normal / bg:batch (the mode of its CPU); "-" from an older daemon. */
static void
cell_class(struct ctl_columns *t, struct json_object *v)
{
    const char *cls = ctl_json_str(v, "class"), *mode = ctl_json_str(v, "mode");

    if (strcmp(cls, "foreground") == 0)
        ctl_columns_cell(t, "fg");
    else if (strcmp(cls, "background") == 0)
        ctl_columns_cell(t, "bg:%s", mode[0] != '\0' ? mode : "-");
    else
        ctl_columns_cell(t, "-");
}

static void
list_vcpu_rows(struct ctl_columns *t, struct json_object *dom)
{
    struct json_object *vcpus = ctl_json_array(dom, "vcpus");
    size_t n = vcpus != NULL ? json_object_array_length(vcpus) : 0;

    for (size_t i = 0; i < n; i++) {
        struct json_object *v = json_object_array_get_idx(vcpus, i);

        ctl_columns_row(t);
        cell_field(t, dom, "name");
        cell_field(t, dom, "pool");
        cell_field(t, dom, "policy");
        cell_field(t, v, "index");
        cell_field(t, v, "tid");
        cell_field(t, v, "cpu");
        cell_field(t, v, "state");
        cell_field(t, v, "level");
        cell_class(t, v);
        cell_ns(t, v, "run_ns");
        cell_field(t, v, "switches");
        cell_field(t, v, "wakes");
        cell_kv(t, ctl_json_get(v, "policy"));
    }
}

static void
list_dom_row(struct ctl_columns *t, struct json_object *dom)
{
    struct json_object *vcpus = ctl_json_array(dom, "vcpus");

    ctl_columns_row(t);
    cell_field(t, dom, "name");
    cell_field(t, dom, "source");
    cell_field(t, dom, "pid");
    ctl_columns_cell(t, "%zu", vcpus != NULL ? json_object_array_length(vcpus) : 0);
    cell_kv(t, ctl_json_get(dom, "params"));
}

/* One table of vCPUs, then one of domains (source, pid, parameters). */
static int
show_domains(FILE *f, struct json_object **doms, size_t n)
{
    struct ctl_columns vt, dt;
    int r;

    ctl_columns_init(&vt, LIST_VCPU_HEAD);
    ctl_columns_init(&dt, LIST_DOM_HEAD);
    for (size_t i = 0; i < n; i++) {
        list_vcpu_rows(&vt, doms[i]);
        list_dom_row(&dt, doms[i]);
    }
    r = ctl_columns_print(&vt, f, "");
    if (n > 0) {
        fputc('\n', f);
        r |= ctl_columns_print(&dt, f, "");
    }
    ctl_columns_free(&vt);
    ctl_columns_free(&dt);
    return r < 0 ? -ENOMEM : 0;
}

int
ctl_show_list(FILE *f, struct json_object *result)
{
    struct json_object *arr = ctl_json_array(result, "domains");
    struct json_object **doms;
    size_t n;
    int r;

    if (arr == NULL)
        return -EPROTO;
    n = json_object_array_length(arr);
    doms = calloc(n + 1, sizeof(*doms));
    if (doms == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        doms[i] = json_object_array_get_idx(arr, i);
    r = show_domains(f, doms, n);
    free(doms);
    return r;
}

int
ctl_show_domain(FILE *f, struct json_object *dom)
{
    if (dom == NULL || !json_object_is_type(dom, json_type_object) ||
        ctl_json_get(dom, "name") == NULL)
        return -EPROTO;
    return show_domains(f, &dom, 1);
}

/* --- stats and pool list --- */

#define STATS_HEAD                                                                                 \
    "POOL POLICY PATTERN CPUS >DOMAINS >VCPUS >DECISIONS/S >SYSCALLS >EVENTS >DISPATCHER_CPU "     \
    ">VIOLATIONS"
#define POOLS_HEAD "POOL POLICY PATTERN CPUS >DOMAINS >VCPUS PARAMS"

/* The first columns, shared by stats and pool list. */
static void
pool_cells(struct ctl_columns *t, struct json_object *p)
{
    ctl_columns_row(t);
    cell_field(t, p, "name");
    cell_field(t, p, "policy");
    cell_field(t, p, "pattern");
    cell_cpus(t, ctl_json_get(p, "cpus"));
    cell_field(t, p, "domains");
    cell_field(t, p, "vcpus");
}

/*
 * Daemon-wide scalars on one line, in the daemon's order: `*_ns` fields
 * as durations without the suffix ("uptime 5.00s"), others as they are.
 */
static void
stats_header(FILE *f, struct json_object *result)
{
    char buf[SHOW_FIELD_MAX];
    bool first = true;

    json_object_object_foreach(result, key, val)
    {
        size_t kl = strlen(key);
        json_type type = json_object_get_type(val);

        if (type == json_type_array || type == json_type_object || type == json_type_null)
            continue;
        fputs(first ? "" : "  ", f);
        first = false;
        if (kl > 3 && strcmp(key + kl - 3, "_ns") == 0 && type == json_type_int)
            fprintf(f, "%.*s %s", (int)(kl - 3), key,
                    ctl_show_ns(buf, sizeof(buf), json_object_get_int64(val)));
        else
            fprintf(f, "%s %s", key, fmt_scalar(buf, sizeof(buf), val));
    }
    if (!first)
        fputc('\n', f);
}

/* Opted-in libvirt domains the daemon does not manage: one line each, with why. */
static void
show_unattached(FILE *f, struct json_object *doms)
{
    size_t n = doms != NULL ? json_object_array_length(doms) : 0;

    for (size_t i = 0; i < n; i++) {
        struct json_object *d = json_object_array_get_idx(doms, i);

        fprintf(f, "libvirt domain %s: opted in, not managed for %" PRId64 " s (%s): %s\n",
                ctl_json_str(d, "domain"), jint(d, "since_s"), ctl_json_str(d, "reason"),
                ctl_json_str(d, "error"));
    }
}

int
ctl_show_stats(FILE *f, struct json_object *result)
{
    struct json_object *pools = ctl_json_array(result, "pools");
    struct ctl_columns t;
    size_t n = pools != NULL ? json_object_array_length(pools) : 0;
    int r;

    if (pools == NULL)
        return -EPROTO;
    stats_header(f, result);
    fputc('\n', f);
    ctl_columns_init(&t, STATS_HEAD);
    for (size_t i = 0; i < n; i++) {
        struct json_object *p = json_object_array_get_idx(pools, i);

        pool_cells(&t, p);
        cell_field(&t, p, "decisions_per_s");
        cell_field(&t, p, "syscalls");
        cell_field(&t, p, "events");
        cell_ns(&t, p, "dispatcher_cpu_ns");
        cell_field(&t, p, "violations");
    }
    r = ctl_columns_print(&t, f, "");
    ctl_columns_free(&t);
    for (size_t i = 0; i < n; i++) {
        struct json_object *p = json_object_array_get_idx(pools, i),
                           *e = ctl_json_get(p, "last_error");

        if (jint(p, "bg_domains") > 0 || jint(p, "bg_batch_enters") > 0)
            fprintf(f,
                    "pool %s: background class: %" PRId64 " domain(s), batch mode entered %" PRId64
                    ", left %" PRId64 ", alpha slices %" PRId64 ", gap slices %" PRId64 "\n",
                    ctl_json_str(p, "name"), jint(p, "bg_domains"), jint(p, "bg_batch_enters"),
                    jint(p, "bg_batch_exits"), jint(p, "bg_alpha_slices"),
                    jint(p, "bg_gap_slices"));
        if (e != NULL && json_object_is_type(e, json_type_string))
            fprintf(f, "pool %s: last error: %s\n", json_object_get_string(ctl_json_get(p, "name")),
                    json_object_get_string(e));
        if (jint(p, "foreign_threads") > 0)
            fprintf(f,
                    "pool %s: %" PRId64 " thread(s) vcpusched does not schedule runnable on its "
                    "CPUs (the log names them)\n",
                    ctl_json_str(p, "name"), jint(p, "foreign_threads"));
    }
    show_unattached(f, ctl_json_array(ctl_json_object(result, "libvirt_unattached"), "domains"));
    return r;
}

int
ctl_show_pools(FILE *f, struct json_object *result)
{
    struct json_object *pools = ctl_json_array(result, "pools");
    struct ctl_columns t;
    int r;

    if (pools == NULL)
        return -EPROTO;
    ctl_columns_init(&t, POOLS_HEAD);
    for (size_t i = 0; i < json_object_array_length(pools); i++) {
        struct json_object *p = json_object_array_get_idx(pools, i);

        pool_cells(&t, p);
        cell_kv(&t, ctl_json_get(p, "params"));
    }
    r = ctl_columns_print(&t, f, "");
    ctl_columns_free(&t);
    return r;
}

/* --- help --- */

/* One parameter: {name, type, min, max, default, help} (docs/protocol.md). */
static void
schema_row(struct ctl_columns *t, struct json_object *p)
{
    const char *type = ctl_json_str(p, "type");

    ctl_columns_row(t);
    ctl_columns_cell(t, "%s", ctl_json_str(p, "name"));
    ctl_columns_cell(t, "%s", type);
    if (strcmp(type, "int") == 0) {
        ctl_columns_cell(t, "%" PRId64 "..%" PRId64, jint(p, "min"), jint(p, "max"));
        ctl_columns_cell(t, "%" PRId64, jint(p, "default"));
    } else if (strcmp(type, "bool") == 0) {
        ctl_columns_cell(t, "on/off");
        ctl_columns_cell(t, "%s", jint(p, "default") ? "on" : "off");
    } else {
        ctl_columns_cell(t, "1..%" PRId64 " chars", jint(p, "max"));
        ctl_columns_cell(t, "-");
    }
    ctl_columns_cell(t, "%s", ctl_json_str(p, "help"));
}

static int
show_schema(FILE *f, const char *what, struct json_object *schema)
{
    struct ctl_columns t;
    int r;

    if (schema == NULL || json_object_array_length(schema) == 0) {
        fprintf(f, "  %s parameters: none\n", what);
        return 0;
    }
    fprintf(f, "  %s parameters:\n", what);
    ctl_columns_init(&t, "NAME TYPE RANGE DEFAULT DESCRIPTION");
    for (size_t i = 0; i < json_object_array_length(schema); i++)
        schema_row(&t, json_object_array_get_idx(schema, i));
    r = ctl_columns_print(&t, f, "    ");
    ctl_columns_free(&t);
    return r;
}

int
ctl_show_policies(FILE *f, struct json_object *result)
{
    struct json_object *all = ctl_json_array(result, "policies");
    int r = 0;

    if (all == NULL)
        return -EPROTO;
    for (size_t i = 0; i < json_object_array_length(all); i++) {
        struct json_object *p = json_object_array_get_idx(all, i);

        fprintf(f, "%s%s: %s\n", i > 0 ? "\n" : "", ctl_json_str(p, "name"),
                ctl_json_str(p, "summary"));
        r |= show_schema(f, "pool", ctl_json_array(p, "pool_params"));
        r |= show_schema(f, "domain", ctl_json_array(p, "dom_params"));
    }
    return r;
}
