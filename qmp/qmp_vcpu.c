/* SPDX-License-Identifier: ISC */
/*
 * qmp_vcpu.c - vCPU discovery: the reply of query-cpus-fast (from our own
 * connection, or as text from libvirt's virDomainQemuMonitorCommand) ->
 * a list of {cpu-index, host thread id, qom-path, topology}, checked to be
 * schedulable one vCPU per thread.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "qmp_priv.h"

/* x86 QEMU 7.2 allows at most 1024 vCPUs (q35 with x2APIC); keep margin. */
#define VCPU_MAX 16384

/* An optional integer member in [0, INT32_MAX]; -1 when absent. */
static int
vcpu_get_id(struct json_object *obj, const char *key, bool required, int *out)
{
    struct json_object *v;
    int64_t x;

    *out = -1;
    if (!json_object_object_get_ex(obj, key, &v))
        return required ? -EPROTO : 0;
    if (!json_object_is_type(v, json_type_int))
        return -EPROTO;
    x = json_object_get_int64(v);
    if (x < 0 || x > INT32_MAX)
        return -EPROTO;
    *out = (int)x;
    return 0;
}

/* A string member that must fit in `size` bytes; "" when absent. */
static int
vcpu_get_str(struct json_object *obj, const char *key, char *buf, size_t size)
{
    struct json_object *v;
    const char *s;

    buf[0] = '\0';
    if (!json_object_object_get_ex(obj, key, &v))
        return 0;
    if (!json_object_is_type(v, json_type_string))
        return -EPROTO;
    s = json_object_get_string(v);
    if (strlen(s) >= size)
        return -EPROTO;
    memcpy(buf, s, strlen(s) + 1);
    return 0;
}

/* Topology members; a missing one stays -1 (QEMU lists only what the machine has). */
static const char *
vcpu_parse_props(struct json_object *props, struct qmp_cpu_props *p)
{
    static const struct {
        const char *key;
        size_t off;
    } ids[] = {
        {"node-id", offsetof(struct qmp_cpu_props, node_id)},
        {"socket-id", offsetof(struct qmp_cpu_props, socket_id)},
        {"die-id", offsetof(struct qmp_cpu_props, die_id)},
        {"cluster-id", offsetof(struct qmp_cpu_props, cluster_id)},
        {"core-id", offsetof(struct qmp_cpu_props, core_id)},
        {"thread-id", offsetof(struct qmp_cpu_props, thread_id)},
    };

    *p = (struct qmp_cpu_props){-1, -1, -1, -1, -1, -1};
    if (props == NULL)
        return NULL;
    if (!json_object_is_type(props, json_type_object))
        return "props";
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        if (vcpu_get_id(props, ids[i].key, false, (int *)((char *)p + ids[i].off)) < 0)
            return ids[i].key;
    }
    return NULL;
}

/* One CpuInfoFast object. Returns NULL, or the name of the offending member. */
static const char *
vcpu_parse_one(struct json_object *e, struct qmp_vcpu *v)
{
    struct json_object *props = NULL;
    int tid;

    if (vcpu_get_id(e, "cpu-index", true, &v->cpu_index) < 0)
        return "cpu-index";
    if (vcpu_get_id(e, "thread-id", true, &tid) < 0 || tid == 0)
        return "thread-id";
    v->thread_id = (pid_t)tid;
    if (vcpu_get_str(e, "qom-path", v->qom_path, sizeof(v->qom_path)) < 0)
        return "qom-path";
    if (vcpu_get_str(e, "target", v->target, sizeof(v->target)) < 0)
        return "target";
    json_object_object_get_ex(e, "props", &props);
    return vcpu_parse_props(props, &v->props);
}

static int
vcpu_parse_all(struct json_object *ret, struct qmp_vcpus *vs, char *errbuf, size_t errlen)
{
    struct json_object *e;
    const char *bad;

    for (size_t i = 0; i < vs->n; i++) {
        e = json_object_array_get_idx(ret, i);
        if (!json_object_is_type(e, json_type_object)) {
            qmp_errf(errbuf, errlen, "query-cpus-fast: entry %zu is not an object", i);
            return -EPROTO;
        }
        bad = vcpu_parse_one(e, &vs->v[i]);
        if (bad != NULL) {
            qmp_errf(errbuf, errlen,
                     "query-cpus-fast: entry %zu: %s missing, mistyped or out of range", i, bad);
            return -EPROTO;
        }
    }
    return 0;
}

static int
vcpu_cmp_index(const void *a, const void *b)
{
    const struct qmp_vcpu *x = a, *y = b;

    return (x->cpu_index > y->cpu_index) - (x->cpu_index < y->cpu_index);
}

struct vcpu_tid {
    pid_t tid;
    int cpu_index;
};

static int
vcpu_cmp_tid(const void *a, const void *b)
{
    const struct vcpu_tid *x = a, *y = b;

    if (x->tid != y->tid)
        return (x->tid > y->tid) - (x->tid < y->tid);
    return (x->cpu_index > y->cpu_index) - (x->cpu_index < y->cpu_index);
}

/*
 * Thread ids must be unique. With single-threaded TCG every vCPU reports
 * the one "ALL CPUs/TCG" thread; elevating it would run all vCPUs
 * together, so refuse it here rather than let the daemon manage one
 * thread as several vCPUs. Sorting a copy keeps this O(n log n).
 */
static int
vcpu_check_tids(const struct qmp_vcpus *vs, char *errbuf, size_t errlen)
{
    struct vcpu_tid *t = calloc(vs->n, sizeof(*t));
    int r = 0;

    if (t == NULL) {
        qmp_errf(errbuf, errlen, "query-cpus-fast: out of memory checking %zu thread ids", vs->n);
        return -ENOMEM;
    }
    for (size_t i = 0; i < vs->n; i++)
        t[i] = (struct vcpu_tid){vs->v[i].thread_id, vs->v[i].cpu_index};
    qsort(t, vs->n, sizeof(*t), vcpu_cmp_tid);
    for (size_t i = 1; i < vs->n && r == 0; i++) {
        if (t[i].tid != t[i - 1].tid)
            continue;
        qmp_errf(errbuf, errlen,
                 "query-cpus-fast: vcpus %d and %d share thread %d (single-threaded TCG?); "
                 "they cannot be scheduled one by one",
                 t[i - 1].cpu_index, t[i].cpu_index, (int)t[i].tid);
        r = -ENOTUNIQ;
    }
    free(t);
    return r;
}

/* After sorting by cpu-index: each index once, each thread once. */
static int
vcpu_check_unique(const struct qmp_vcpus *vs, char *errbuf, size_t errlen)
{
    for (size_t i = 1; i < vs->n; i++) {
        if (vs->v[i].cpu_index == vs->v[i - 1].cpu_index) {
            qmp_errf(errbuf, errlen, "query-cpus-fast: cpu-index %d listed twice",
                     vs->v[i].cpu_index);
            return -EPROTO;
        }
    }
    return vcpu_check_tids(vs, errbuf, errlen);
}

int
qmp_vcpus_from_json(struct json_object *ret, struct qmp_vcpus *out, char *errbuf, size_t errlen)
{
    size_t n;
    int r;

    memset(out, 0, sizeof(*out));
    if (ret == NULL || !json_object_is_type(ret, json_type_array)) {
        qmp_errf(errbuf, errlen, "query-cpus-fast: return value is not an array");
        return -EPROTO;
    }
    n = json_object_array_length(ret);
    if (n == 0 || n > VCPU_MAX) {
        qmp_errf(errbuf, errlen, "query-cpus-fast: %zu vcpus listed (expected 1 to %d)", n,
                 VCPU_MAX);
        return -EPROTO;
    }
    out->v = calloc(n, sizeof(*out->v));
    if (out->v == NULL) {
        qmp_errf(errbuf, errlen, "query-cpus-fast: out of memory for %zu vcpus", n);
        return -ENOMEM;
    }
    out->n = n;
    r = vcpu_parse_all(ret, out, errbuf, errlen);
    if (r == 0) {
        qsort(out->v, n, sizeof(*out->v), vcpu_cmp_index);
        r = vcpu_check_unique(out, errbuf, errlen);
    }
    if (r < 0)
        qmp_vcpus_free(out);
    return r;
}

int
qmp_vcpus_parse_reply(const char *json, struct qmp_vcpus *out, char *errbuf, size_t errlen)
{
    struct qmp_msg msg;
    int r;

    memset(out, 0, sizeof(*out));
    if (json == NULL) {
        qmp_errf(errbuf, errlen, "query-cpus-fast: no reply");
        return -EINVAL;
    }
    r = qmp_msg_parse(json, strlen(json), &msg, errbuf, errlen);
    if (r < 0)
        return r;
    if (msg.kind == QMP_MSG_ERROR) {
        qmp_msg_format_error(&msg, "query-cpus-fast", errbuf, errlen);
        r = -EREMOTEIO;
    } else if (msg.kind != QMP_MSG_RETURN) {
        qmp_errf(errbuf, errlen, "query-cpus-fast: text is not a reply");
        r = -EPROTO;
    } else {
        r = qmp_vcpus_from_json(msg.value, out, errbuf, errlen);
    }
    qmp_msg_free(&msg);
    return r;
}

int
qmp_query_vcpus(struct qmp_conn *c, struct qmp_vcpus *out, char *errbuf, size_t errlen)
{
    struct json_object *ret;
    int r;

    memset(out, 0, sizeof(*out));
    r = qmp_execute(c, "query-cpus-fast", NULL, &ret, errbuf, errlen);
    if (r < 0)
        return r;
    r = qmp_vcpus_from_json(ret, out, errbuf, errlen);
    json_object_put(ret);
    return r;
}

void
qmp_vcpus_free(struct qmp_vcpus *vs)
{
    if (vs == NULL)
        return;
    free(vs->v);
    vs->v = NULL;
    vs->n = 0;
}
