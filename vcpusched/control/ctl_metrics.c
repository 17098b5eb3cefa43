/* SPDX-License-Identifier: ISC */
/*
 * ctl_metrics.c - `stats` and `list` results as metric families. The
 * families are tables of {JSON member, name, type, scale}; each family is
 * written whole (its samples gathered first, its metadata only if it has
 * any), as both text formats want a family's samples together. Names follow
 * Prometheus conventions: the vcpusched_ prefix, base units (seconds, bytes)
 * in the name, counters ending in _total, one label per dimension.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "ctl_json.h"
#include "ctl_metrics.h"

#define PREFIX      "vcpusched_"
#define LABELS_SIZE 512 /* pool, domain, vcpu and a few short labels, escaped */
#define VALUE_SIZE  48
#define KEY_SIZE    32 /* the object part of an "object.member" key */
/*
 * The daemon's wake-to-MID histogram has log2 buckets from 1 ns; the
 * ones below 1.024 us (bucket 9) are folded into it: no wake is raised
 * that fast, and 30 buckets per pool are enough.
 */
#define HIST_FIRST_BUCKET 9
#define HIST_BUCKETS_MAX  63 /* 2 << 62 still fits in 64 bits */

enum mtype {
    M_GAUGE,
    M_COUNTER,
    M_INFO,
    M_HISTOGRAM,
};

struct family {
    const char *name; /* after the prefix, without _total or _info */
    enum mtype type;
    const char *help;
};

/* A family whose samples are one member of each row's object. */
struct field {
    const char *key; /* member, or "object.member" */
    struct family fam;
    int decimals;   /* the value is member * 10^-decimals: 9 turns _ns into seconds */
    const char *is; /* not NULL: 1 if the string member equals this, else 0 */
};

struct labels {
    char s[LABELS_SIZE];
    size_t len;
    bool cut; /* did not fit: its samples are left out */
};

/* An object of the result and the labels of its series. */
struct row {
    struct json_object *obj;
    struct labels labels;
};

struct writer {
    FILE *out;
    enum ctl_metrics_format fmt;
    const struct family *fam;
    FILE *m; /* the current family's samples */
    char *buf;
    size_t len;
    bool oom;
};

/* --- Daemon-wide (stats): one row, no labels. --- */

static const struct field daemon_fields[] = {
    {"uptime_ns", {"uptime_seconds", M_GAUGE, "Time since the daemon started."}, 9, NULL},
    {"managed_threads",
     {"managed_threads", M_GAUGE,
      "Threads its state file records now (vCPUs, and their processes' other threads kept off the "
      "pools)."},
     0,
     NULL},
    {"rt_runtime_us",
     {"rt_runtime_seconds", M_GAUGE,
      "sched_rt_runtime_us: real-time time allowed per period; absent when unlimited (-1)."},
     6,
     NULL},
    {"foreign_scan.scans",
     {"foreign_scans", M_COUNTER,
      "Walks of /proc for threads vcpusched does not schedule runnable on the pools' CPUs."},
     0,
     NULL},
    {"foreign_scan.last_us",
     {"foreign_scan_seconds", M_GAUGE,
      "What the last walk of /proc took; the next waits max(2 s, 100 times that), at most 60 s."},
     6,
     NULL},
    {"event_source.lost",
     {"event_lost", M_COUNTER, "Event records dropped on a full ring (each triggers a resync)."},
     0,
     NULL},
    {"event_source.inferred",
     {"event_inferred", M_COUNTER, "Thread transitions reconstructed from the next record."},
     0,
     NULL},
    {"event_source.polls", {"event_polls", M_COUNTER, "Polls of the event source."}, 0, NULL},
    {"event_source.proc_reads",
     {"event_proc_reads", M_COUNTER, "Reads of /proc by the proc event backend."},
     0,
     NULL},
    {"event_source.resyncs",
     {"event_resyncs", M_COUNTER, "Resynchronisations of thread states from /proc."},
     0,
     NULL},
    {"event_source.missed_wakes",
     {"event_missed_wakes", M_COUNTER,
      "Runnable threads the pool believed blocked, woken by housekeeping."},
     0,
     NULL},
    {"event_source.watched",
     {"event_watched_threads", M_GAUGE, "Threads the event source watches."},
     0,
     NULL},
    {"event_source.ring_bytes",
     {"event_ring_bytes", M_GAUGE, "Size of the BPF ring buffer."},
     0,
     NULL},
    {"control.clients",
     {"control_clients", M_GAUGE, "Clients connected to the control socket."},
     0,
     NULL},
    {"control.accepted", {"control_accepted", M_COUNTER, "Control connections accepted."}, 0, NULL},
    {"control.refused_full",
     {"control_refused", M_COUNTER, "Control connections refused: every slot taken (EBUSY)."},
     0,
     NULL},
    {"control.requests",
     {"control_requests", M_COUNTER, "Control request lines received."},
     0,
     NULL},
    {"control.errors",
     {"control_errors", M_COUNTER, "Control requests answered with an error."},
     0,
     NULL},
    {"control.denied",
     {"control_denied", M_COUNTER, "Control requests refused to the peer (EPERM)."},
     0,
     NULL},
    {"control.oversize",
     {"control_oversize", M_COUNTER, "Control request lines over the size limit."},
     0,
     NULL},
    {"control.timeouts",
     {"control_timeouts", M_COUNTER, "Control connections dropped on a timeout."},
     0,
     NULL},
    {"control.io_errors",
     {"control_io_errors", M_COUNTER, "Control connections dropped on an I/O error."},
     0,
     NULL},
    {"watchdog.bound_ms",
     {"watchdog_bound_seconds", M_GAUGE, "The guardian's watchdog bound (watchdog-ms); 0: off."},
     3,
     NULL},
    {"watchdog.trips",
     {"watchdog_trips", M_COUNTER,
      "Stuck daemons the guardian's watchdog gave the threads back from and ended, since boot."},
     0,
     NULL},
    {"watchdog.oldest_beat_ms",
     {"watchdog_oldest_heartbeat_seconds", M_GAUGE,
      "Age of the oldest dispatcher heartbeat (a live dispatcher passes every 100 ms)."},
     3,
     NULL},
};

/* --- Per pool (stats.pools[]): label pool. --- */

static const struct field pool_fields[] = {
    {"domains", {"pool_domains", M_GAUGE, "Domains attached to the pool."}, 0, NULL},
    {"vcpus", {"pool_vcpus", M_GAUGE, "vCPUs attached to the pool."}, 0, NULL},
    {"picks", {"pool_picks", M_COUNTER, "Scheduling decisions of the policy (picks)."}, 0, NULL},
    {"switches",
     {"pool_switches", M_COUNTER, "Changes of the elected vCPU on the pool's CPUs."},
     0,
     NULL},
    {"decisions",
     {"pool_decisions", M_COUNTER, "Dispatcher passes over the pool's CPUs."},
     0,
     NULL},
    {"syscalls", {"pool_syscalls", M_COUNTER, "System calls made to enforce decisions."}, 0, NULL},
    {"actuator_errors",
     {"pool_actuator_errors", M_COUNTER, "System calls that failed to enforce a decision."},
     0,
     NULL},
    {"wakes", {"pool_wakes", M_COUNTER, "vCPU wake-ups seen by the pool."}, 0, NULL},
    {"sleeps", {"pool_sleeps", M_COUNTER, "vCPU blocks seen by the pool."}, 0, NULL},
    {"events", {"pool_events", M_COUNTER, "Events of managed threads processed."}, 0, NULL},
    {"violations",
     {"pool_violations", M_COUNTER, "Policy decisions that broke the contract (should be 0)."},
     0,
     NULL},
    {"policy_switches",
     {"pool_policy_switches", M_COUNTER, "Live policy switches of the pool."},
     0,
     NULL},
    {"resizes", {"pool_resizes", M_COUNTER, "Live changes of the pool's CPUs."}, 0, NULL},
    {"timers",
     {"pool_timers", M_COUNTER, "Policy timer calls (ticks, accounting, budget refills)."},
     0,
     NULL},
    {"clock_clamps",
     {"pool_clock_clamps", M_COUNTER, "Policy calls stamped before the previous one."},
     0,
     NULL},
    {"bg_domains",
     {"pool_background_domains", M_GAUGE, "Domains of the pool in the background class."},
     0,
     NULL},
    {"bg_batch_enters",
     {"pool_background_batch_enters", M_COUNTER, "Background class: batch mode entered."},
     0,
     NULL},
    {"bg_batch_exits",
     {"pool_background_batch_exits", M_COUNTER, "Background class: batch mode left."},
     0,
     NULL},
    {"bg_alpha_slices",
     {"pool_background_alpha_slices", M_COUNTER,
      "Background class: slices given to background vCPUs every alpha."},
     0,
     NULL},
    {"bg_gap_slices",
     {"pool_background_gap_slices", M_COUNTER,
      "Background class: slices background vCPUs took in foreground gaps."},
     0,
     NULL},
    {"dispatcher_cpu_ns",
     {"pool_dispatcher_cpu_seconds", M_COUNTER, "CPU time of the pool's dispatcher threads."},
     9,
     NULL},
    {"control_waits",
     {"pool_control_waits", M_COUNTER, "Times the control path took the pool's lock."},
     0,
     NULL},
    {"control_wait_ns",
     {"pool_control_wait_seconds", M_COUNTER, "Time the control path waited for the pool's lock."},
     9,
     NULL},
    {"control_wait_max_ns",
     {"pool_control_wait_max_seconds", M_GAUGE,
      "Longest wait of the control path for the pool's lock."},
     9,
     NULL},
    {"foreign_threads",
     {"pool_foreign_threads", M_GAUGE,
      "Threads vcpusched does not schedule found runnable on the pool's CPUs (last scan)."},
     0,
     NULL},
    {"foreign_sightings",
     {"pool_foreign_sightings", M_COUNTER,
      "Threads vcpusched does not schedule found runnable on the pool's CPUs, summed over "
      "scans (every 2 s)."},
     0,
     NULL},
};

/* --- Per vCPU (list.domains[].vcpus[]): labels pool, domain, vcpu. --- */

static const struct field vcpu_fields[] = {
    {"cpu", {"vcpu_cpu", M_GAUGE, "Host CPU the vCPU thread is pinned to."}, 0, NULL},
    {"run_ns",
     {"vcpu_run_seconds", M_COUNTER, "CPU time the vCPU thread used while managed."},
     9,
     NULL},
    {"switches",
     {"vcpu_switches", M_COUNTER, "Times the vCPU thread was switched in on its CPU."},
     0,
     NULL},
    {"wait_ns",
     {"vcpu_wait_seconds", M_COUNTER,
      "Time the vCPU thread waited while runnable (woken or preempted, not running)."},
     9,
     NULL},
    {"wakes", {"vcpu_wakes", M_COUNTER, "Wake-ups of the vCPU thread."}, 0, NULL},
    {"sleeps", {"vcpu_sleeps", M_COUNTER, "Blocks of the vCPU thread."}, 0, NULL},
    {"elections", {"vcpu_elections", M_COUNTER, "Times the policy elected the vCPU."}, 0, NULL},
    {"level",
     {"vcpu_elevated", M_GAUGE, "1 while the vCPU is the one elected (MID) on its CPU."},
     0,
     "mid"},
    {"policy.pri",
     {"vcpu_boosted", M_GAUGE, "Credit: 1 while the vCPU has BOOST priority."},
     0,
     "BOOST"},
    {"policy.boosts",
     {"vcpu_boosts", M_COUNTER, "Credit: wake-ups boosted to BOOST priority."},
     0,
     NULL},
    {"policy.parks",
     {"vcpu_parks", M_COUNTER, "Credit, Credit2: times parked for exceeding the cap."},
     0,
     NULL},
    {"policy.resets",
     {"vcpu_credit_resets", M_COUNTER, "Credit2: credit resets of the vCPU's runqueue seen."},
     0,
     NULL},
    {"policy.steals", {"vcpu_steals", M_COUNTER, "Credit: times stolen by another CPU."}, 0, NULL},
    {"policy.yields", {"vcpu_yields", M_COUNTER, "Credit: yields."}, 0, NULL},
    {"policy.migrations",
     {"vcpu_migrations", M_COUNTER, "Credit, Credit2: moves to another CPU or runqueue."},
     0,
     NULL},
    {"policy.picks", {"vcpu_picks", M_COUNTER, "rr, table: times picked."}, 0, NULL},
};

static const struct family event_source_info = {"event_source", M_INFO,
                                                "The event backend: bpf or proc."};
static const struct family event_records = {"event_records", M_COUNTER,
                                            "Event records delivered, by type."};
static const struct family libvirt_unattached = {
    "libvirt_unattached", M_GAUGE,
    "A running libvirt domain opted in by its metadata and not managed (1), by reason: "
    "metadata, pool, threads or attach."};
static const struct family pool_info = {"pool", M_INFO, "A pool: its policy and pattern."};
static const struct family pool_cpus = {"pool_cpus", M_GAUGE, "Host CPUs in the pool."};
static const struct family pool_param = {"pool_param", M_GAUGE,
                                         "Numeric pool parameters of the policy (on/off as 1/0)."};
static const struct family pool_latency = {
    "pool_wake_to_mid_seconds", M_HISTOGRAM,
    "Latency from a vCPU's wake-up to its election (MID) on a CPU."};
static const struct family domain_info = {
    "domain", M_INFO, "An attached domain: its policy, how its threads were found, its pid."};
static const struct family domain_param = {"domain_param", M_GAUGE,
                                           "Numeric domain parameters (weight, cap, ...)."};
static const struct family vcpu_info = {"vcpu", M_INFO, "A managed vCPU and its thread id."};
static const struct family vcpu_state = {
    "vcpu_state", M_GAUGE, "1 for the vCPU's scheduling state now, 0 for the others."};

static const char *const vcpu_states[] = {"running", "runnable", "blocked", "parked", "gone"};

/* --- Text. --- */

/* Escape for a label value or HELP: backslash, quote (label values and OpenMetrics), newline. */
static void
escape(char *dst, size_t cap, const char *src, bool quote, bool *cut)
{
    size_t n = 0;

    for (; *src != '\0'; src++) {
        unsigned char c = (unsigned char)*src;
        const char *e = c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '"' && quote ? "\\\"" : NULL;
        size_t need = e != NULL ? 2 : 1;

        if (n + need >= cap) {
            *cut = true;
            break;
        }
        if (e != NULL) {
            memcpy(dst + n, e, 2);
        } else {
            dst[n] = c < 0x20 || c == 0x7f ? '?' : (char)c;
        }
        n += need;
    }
    dst[n] = '\0';
}

static void
label_add(struct labels *l, const char *name, const char *val)
{
    char esc[LABELS_SIZE];
    size_t room = sizeof(l->s) - l->len;
    int r;

    escape(esc, sizeof(esc), val, true, &l->cut);
    r = snprintf(l->s + l->len, room, "%s%s=\"%s\"", l->len > 0 ? "," : "", name, esc);
    if (r < 0 || (size_t)r >= room) {
        l->cut = true;
        l->s[l->len] = '\0';
        return;
    }
    l->len += (size_t)r;
}

/* A string or integer member as a label; nothing if it is neither. */
static void
label_member(struct labels *l, const char *name, struct json_object *o, const char *key)
{
    struct json_object *v = ctl_json_get(o, key);
    char buf[VALUE_SIZE];

    if (v != NULL && json_object_is_type(v, json_type_int)) {
        snprintf(buf, sizeof(buf), "%" PRId64, json_object_get_int64(v));
        label_add(l, name, buf);
    } else if (v != NULL && json_object_is_type(v, json_type_string)) {
        label_add(l, name, json_object_get_string(v));
    }
}

/* v * 10^-decimals, exactly (1234567 ns with 9 decimals: 0.001234567). */
static const char *
fmt_fixed(char *buf, size_t len, int64_t v, int decimals)
{
    uint64_t mag = v < 0 ? -(uint64_t)v : (uint64_t)v, div = 1;
    size_t n;

    for (int i = 0; i < decimals; i++)
        div *= 10;
    if (mag % div == 0) {
        snprintf(buf, len, "%s%" PRIu64, v < 0 ? "-" : "", mag / div);
        return buf;
    }
    snprintf(buf, len, "%s%" PRIu64 ".%0*" PRIu64, v < 0 ? "-" : "", mag / div, decimals,
             mag % div);
    n = strlen(buf);
    while (n > 0 && buf[n - 1] == '0')
        buf[--n] = '\0';
    return buf;
}

/* Seconds from ns in the shortest form that reads back the same ("1.024e-06"). */
static const char *
fmt_le(char *buf, size_t len, uint64_t ns)
{
    double s = (double)ns / 1e9;

    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, s);
        if (strtod(buf, NULL) == s)
            break;
    }
    return buf;
}

/* --- Families. --- */

static void
fam_begin(struct writer *w, const struct family *fam)
{
    w->fam = fam;
    w->buf = NULL;
    w->len = 0;
    w->m = open_memstream(&w->buf, &w->len);
    if (w->m == NULL)
        w->oom = true;
}

static const char *
sample_suffix(enum mtype t)
{
    return t == M_COUNTER ? "_total" : t == M_INFO ? "_info" : "";
}

/*
 * The metadata. OpenMetrics names a family without its sample suffixes and
 * has UNIT and info; Prometheus 0.0.4 names counters and info gauges by
 * their sample names and knows neither (node_exporter refuses "info").
 */
static void
fam_meta(struct writer *w)
{
    static const char *const om_types[] = {"gauge", "counter", "info", "histogram"};
    static const char *const prom_types[] = {"gauge", "counter", "gauge", "histogram"};
    const struct family *fm = w->fam;
    bool om = w->fmt == CTL_METRICS_OPENMETRICS;
    const char *suffix = om ? "" : sample_suffix(fm->type);
    const char *unit = NULL;
    size_t nl = strlen(fm->name);
    char help[256];
    bool cut = false;

    if (nl > 8 && strcmp(fm->name + nl - 8, "_seconds") == 0)
        unit = "seconds";
    else if (nl > 6 && strcmp(fm->name + nl - 6, "_bytes") == 0)
        unit = "bytes";
    escape(help, sizeof(help), fm->help, om, &cut);
    if (om) {
        fprintf(w->out, "# TYPE " PREFIX "%s %s\n", fm->name, om_types[fm->type]);
        if (unit != NULL)
            fprintf(w->out, "# UNIT " PREFIX "%s %s\n", fm->name, unit);
        fprintf(w->out, "# HELP " PREFIX "%s %s\n", fm->name, help);
    } else {
        fprintf(w->out, "# HELP " PREFIX "%s%s %s\n", fm->name, suffix, help);
        fprintf(w->out, "# TYPE " PREFIX "%s%s %s\n", fm->name, suffix, prom_types[fm->type]);
    }
}

/* The family's metadata and samples, if it has any. */
static void
fam_end(struct writer *w)
{
    if (w->m == NULL)
        return;
    if (fclose(w->m) != 0)
        w->oom = true;
    w->m = NULL;
    if (w->len > 0) {
        fam_meta(w);
        fwrite(w->buf, 1, w->len, w->out);
    }
    free(w->buf);
    w->buf = NULL;
}

/* One sample; `suffix` NULL: the family type's own (_total, _info). */
static void
sample(struct writer *w, const char *suffix, const struct labels *l, const char *value)
{
    if (w->m == NULL || l->cut)
        return;
    fprintf(w->m, PREFIX "%s%s%s%s%s %s\n", w->fam->name,
            suffix != NULL ? suffix : sample_suffix(w->fam->type), l->len > 0 ? "{" : "", l->s,
            l->len > 0 ? "}" : "", value);
}

/* A member by "key" or "object.key". */
static struct json_object *
member(struct json_object *o, const char *path)
{
    const char *dot = strchr(path, '.');
    char head[KEY_SIZE];

    if (dot == NULL || (size_t)(dot - path) >= sizeof(head))
        return ctl_json_get(o, path);
    memcpy(head, path, (size_t)(dot - path));
    head[dot - path] = '\0';
    return ctl_json_get(ctl_json_object(o, head), dot + 1);
}

/*
 * One field of every row. Counters and durations are never negative: a
 * negative one (rt_runtime_us -1, unlimited) leaves its series out.
 */
static void
emit_field(struct writer *w, const struct field *fd, const struct row *rows, size_t n)
{
    char val[VALUE_SIZE];

    fam_begin(w, &fd->fam);
    for (size_t i = 0; i < n; i++) {
        struct json_object *v = member(rows[i].obj, fd->key);
        int64_t x;

        if (fd->is != NULL) {
            if (v == NULL || !json_object_is_type(v, json_type_string))
                continue;
            sample(w, NULL, &rows[i].labels,
                   strcmp(json_object_get_string(v), fd->is) == 0 ? "1" : "0");
            continue;
        }
        if (v == NULL || !json_object_is_type(v, json_type_int))
            continue;
        x = json_object_get_int64(v);
        if (x < 0 && (fd->fam.type == M_COUNTER || fd->decimals > 0))
            continue;
        sample(w, NULL, &rows[i].labels, fmt_fixed(val, sizeof(val), x, fd->decimals));
    }
    fam_end(w);
}

static void
emit_fields(struct writer *w, const struct field *fds, size_t nfds, const struct row *rows,
            size_t n)
{
    for (size_t i = 0; i < nfds; i++)
        emit_field(w, &fds[i], rows, n);
}

/* An info family: value 1, the row's labels plus the members `keys` (NULL-ended). */
static void
emit_info(struct writer *w, const struct family *fam, const struct row *rows, size_t n,
          const char *const *keys)
{
    fam_begin(w, fam);
    for (size_t i = 0; i < n; i++) {
        struct labels l = rows[i].labels;

        for (size_t k = 0; keys[k] != NULL; k++)
            label_member(&l, keys[k], rows[i].obj, keys[k]);
        sample(w, NULL, &l, "1");
    }
    fam_end(w);
}

/* Parameters travel as strings: integers, and on/off for booleans. */
static bool
param_number(struct json_object *v, int64_t *out)
{
    const char *s = json_object_get_string(v);
    char *end;

    if (json_object_is_type(v, json_type_int)) {
        *out = json_object_get_int64(v);
        return true;
    }
    if (!json_object_is_type(v, json_type_string) || s[0] == '\0')
        return false;
    if (strcmp(s, "on") == 0 || strcmp(s, "off") == 0) {
        *out = strcmp(s, "on") == 0;
        return true;
    }
    errno = 0;
    *out = strtoll(s, &end, 10);
    return *end == '\0' && errno == 0;
}

static void
emit_params(struct writer *w, const struct family *fam, const struct row *rows, size_t n)
{
    char val[VALUE_SIZE];

    fam_begin(w, fam);
    for (size_t i = 0; i < n; i++) {
        struct json_object *params = ctl_json_object(rows[i].obj, "params");
        int64_t x;

        if (params == NULL)
            continue;
        json_object_object_foreach(params, key, v)
        {
            struct labels l = rows[i].labels;

            if (!param_number(v, &x))
                continue;
            label_add(&l, "param", key);
            sample(w, NULL, &l, fmt_fixed(val, sizeof(val), x, 0));
        }
    }
    fam_end(w);
}

/* Each pool's CPU count (the length of its cpus array). */
static void
emit_pool_cpus(struct writer *w, const struct row *rows, size_t n)
{
    char val[VALUE_SIZE];

    fam_begin(w, &pool_cpus);
    for (size_t i = 0; i < n; i++) {
        struct json_object *cpus = ctl_json_array(rows[i].obj, "cpus");

        if (cpus != NULL)
            sample(w, NULL, &rows[i].labels,
                   fmt_fixed(val, sizeof(val), (int64_t)json_object_array_length(cpus), 0));
    }
    fam_end(w);
}

/*
 * wake_to_mid_hist[i] counts latencies in [2^i, 2^(i+1)) ns, the last
 * bucket open-ended: cumulative buckets le=2^(i+1) ns, then +Inf. _count
 * and _sum only with wake_to_mid_sum_ns (OpenMetrics wants both or none).
 */
static void
emit_latency(struct writer *w, const struct row *rows, size_t n)
{
    char val[VALUE_SIZE], le[VALUE_SIZE];

    fam_begin(w, &pool_latency);
    for (size_t i = 0; i < n; i++) {
        struct json_object *hist = ctl_json_array(rows[i].obj, "wake_to_mid_hist");
        size_t nb = hist != NULL ? json_object_array_length(hist) : 0;
        struct labels l;
        uint64_t cum = 0;
        int64_t sum;

        if (hist == NULL)
            continue;
        for (size_t b = 0; b < nb; b++) {
            int64_t c = json_object_get_int64(json_object_array_get_idx(hist, b));

            cum += c > 0 ? (uint64_t)c : 0;
            if (b < HIST_FIRST_BUCKET || b + 1 >= nb || b >= HIST_BUCKETS_MAX)
                continue;
            l = rows[i].labels;
            label_add(&l, "le", fmt_le(le, sizeof(le), 2ULL << b));
            sample(w, "_bucket", &l, fmt_fixed(val, sizeof(val), (int64_t)cum, 0));
        }
        l = rows[i].labels;
        label_add(&l, "le", "+Inf");
        sample(w, "_bucket", &l, fmt_fixed(val, sizeof(val), (int64_t)cum, 0));
        if (ctl_json_int(rows[i].obj, "wake_to_mid_sum_ns", &sum) && sum >= 0) {
            sample(w, "_count", &rows[i].labels, fmt_fixed(val, sizeof(val), (int64_t)cum, 0));
            sample(w, "_sum", &rows[i].labels, fmt_fixed(val, sizeof(val), sum, 9));
        }
    }
    fam_end(w);
}

/* Every record type's count, labelled type. */
static void
emit_event_records(struct writer *w, struct json_object *stats)
{
    struct json_object *by = ctl_json_object(ctl_json_object(stats, "event_source"), "by_type");
    struct labels none = {.len = 0};
    char val[VALUE_SIZE];

    fam_begin(w, &event_records);
    if (by != NULL) {
        json_object_object_foreach(by, type, v)
        {
            struct labels l = none;

            if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
                continue;
            label_add(&l, "type", type);
            sample(w, NULL, &l, fmt_fixed(val, sizeof(val), json_object_get_int64(v), 0));
        }
    }
    fam_end(w);
}

/* One sample per opted-in domain the daemon does not manage, labelled domain and reason. */
static void
emit_unattached(struct writer *w, struct json_object *stats)
{
    struct json_object *doms =
        ctl_json_array(ctl_json_object(stats, "libvirt_unattached"), "domains");
    size_t n = doms != NULL ? json_object_array_length(doms) : 0;

    fam_begin(w, &libvirt_unattached);
    for (size_t i = 0; i < n; i++) {
        struct json_object *d = json_object_array_get_idx(doms, i);
        struct labels l = {.len = 0};

        if (ctl_json_str(d, "domain")[0] == '\0')
            continue;
        label_member(&l, "domain", d, "domain");
        label_member(&l, "reason", d, "reason");
        sample(w, NULL, &l, "1");
    }
    fam_end(w);
}

/* 1 for the vCPU's state, 0 for the others; a state this build does not know is added. */
static void
emit_states(struct writer *w, const struct row *rows, size_t n)
{
    const size_t ns = sizeof(vcpu_states) / sizeof(vcpu_states[0]);

    fam_begin(w, &vcpu_state);
    for (size_t i = 0; i < n; i++) {
        const char *state = ctl_json_str(rows[i].obj, "state");
        bool known = false;
        struct labels l;

        if (state[0] == '\0')
            continue;
        for (size_t s = 0; s < ns; s++) {
            l = rows[i].labels;
            label_add(&l, "state", vcpu_states[s]);
            known = known || strcmp(state, vcpu_states[s]) == 0;
            sample(w, NULL, &l, strcmp(state, vcpu_states[s]) == 0 ? "1" : "0");
        }
        if (!known) {
            l = rows[i].labels;
            label_add(&l, "state", state);
            sample(w, NULL, &l, "1");
        }
    }
    fam_end(w);
}

/* --- Rows. --- */

static struct row *
pool_rows(struct json_object *pools, size_t *n)
{
    struct row *rows;

    *n = json_object_array_length(pools);
    rows = calloc(*n + 1, sizeof(*rows));
    for (size_t i = 0; rows != NULL && i < *n; i++) {
        rows[i].obj = json_object_array_get_idx(pools, i);
        label_add(&rows[i].labels, "pool", ctl_json_str(rows[i].obj, "name"));
    }
    return rows;
}

static struct row *
domain_rows(struct json_object *doms, size_t *n)
{
    struct row *rows;

    *n = json_object_array_length(doms);
    rows = calloc(*n + 1, sizeof(*rows));
    for (size_t i = 0; rows != NULL && i < *n; i++) {
        rows[i].obj = json_object_array_get_idx(doms, i);
        label_add(&rows[i].labels, "pool", ctl_json_str(rows[i].obj, "pool"));
        label_add(&rows[i].labels, "domain", ctl_json_str(rows[i].obj, "name"));
    }
    return rows;
}

/* Every vCPU of every domain, labelled with its domain's labels and its index. */
static struct row *
vcpu_rows(const struct row *doms, size_t ndoms, size_t *n)
{
    struct row *rows;
    size_t k = 0;

    *n = 0;
    for (size_t d = 0; d < ndoms; d++) {
        struct json_object *v = ctl_json_array(doms[d].obj, "vcpus");

        *n += v != NULL ? json_object_array_length(v) : 0;
    }
    rows = calloc(*n + 1, sizeof(*rows));
    for (size_t d = 0; rows != NULL && d < ndoms; d++) {
        struct json_object *v = ctl_json_array(doms[d].obj, "vcpus");
        size_t nv = v != NULL ? json_object_array_length(v) : 0;

        for (size_t i = 0; i < nv; i++, k++) {
            rows[k].obj = json_object_array_get_idx(v, i);
            rows[k].labels = doms[d].labels;
            label_member(&rows[k].labels, "vcpu", rows[k].obj, "index");
        }
    }
    return rows;
}

static void
emit_daemon(struct writer *w, struct json_object *stats)
{
    static const char *const backend[] = {"backend", NULL};
    struct row daemon = {.obj = stats}, source = {.obj = ctl_json_object(stats, "event_source")};

    emit_fields(w, daemon_fields, sizeof(daemon_fields) / sizeof(daemon_fields[0]), &daemon, 1);
    emit_info(w, &event_source_info, &source, source.obj != NULL, backend);
    emit_event_records(w, stats);
    emit_unattached(w, stats);
}

static void
emit_pools(struct writer *w, const struct row *rows, size_t n)
{
    static const char *const info[] = {"policy", "pattern", NULL};

    emit_info(w, &pool_info, rows, n, info);
    emit_pool_cpus(w, rows, n);
    emit_params(w, &pool_param, rows, n);
    emit_fields(w, pool_fields, sizeof(pool_fields) / sizeof(pool_fields[0]), rows, n);
    emit_latency(w, rows, n);
}

static void
emit_domains(struct writer *w, const struct row *doms, size_t ndoms, const struct row *vcpus,
             size_t nvcpus)
{
    static const char *const dinfo[] = {"policy", "source", "pid", NULL};
    static const char *const vinfo[] = {"tid", NULL};

    emit_info(w, &domain_info, doms, ndoms, dinfo);
    emit_params(w, &domain_param, doms, ndoms);
    emit_info(w, &vcpu_info, vcpus, nvcpus, vinfo);
    emit_states(w, vcpus, nvcpus);
    emit_fields(w, vcpu_fields, sizeof(vcpu_fields) / sizeof(vcpu_fields[0]), vcpus, nvcpus);
}

int
ctl_metrics_write(FILE *f, struct json_object *stats, struct json_object *list,
                  enum ctl_metrics_format fmt)
{
    struct json_object *pools = ctl_json_array(stats, "pools");
    struct json_object *doms = ctl_json_array(list, "domains");
    struct writer w = {.out = f, .fmt = fmt};
    struct row *prows, *drows = NULL, *vrows = NULL;
    size_t np, nd = 0, nv = 0;

    if (pools == NULL || (list != NULL && doms == NULL))
        return -EPROTO;
    prows = pool_rows(pools, &np);
    if (doms != NULL && (drows = domain_rows(doms, &nd)) != NULL)
        vrows = vcpu_rows(drows, nd, &nv);
    if (prows == NULL || (doms != NULL && (drows == NULL || vrows == NULL))) {
        free(prows);
        free(drows);
        free(vrows);
        return -ENOMEM;
    }
    emit_daemon(&w, stats);
    emit_pools(&w, prows, np);
    if (doms != NULL)
        emit_domains(&w, drows, nd, vrows, nv);
    if (fmt == CTL_METRICS_OPENMETRICS)
        fputs("# EOF\n", f);
    free(prows);
    free(drows);
    free(vrows);
    if (w.oom)
        return -ENOMEM;
    return ferror(f) ? -EIO : 0;
}
