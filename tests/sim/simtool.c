/* SPDX-License-Identifier: ISC */
/*
 * simtool.c - vcpusched-sim: run a scenario file through the simulator
 * (tests/sim) with any policy, and print what happened: per-vCPU share,
 * wake-to-run latency percentiles, run lengths, switch counts and the
 * policy's own per-vCPU counters. `expect` lines make a scenario check
 * itself (the exit status is 1 if one fails), so scenarios run in ctest.
 * The language is in usage() below; errors are reported as file:line.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simtool.h"

#define SIMTOOL_MAX_AT   4096 /* pending `at` commands */
#define SIMTOOL_MAX_REFS SIM_MAX_VCPUS

struct simtool_at {
    uint64_t when;
    unsigned int line;
    char text[SIMTOOL_MAX_LINE];
};

struct simtool {
    const char *file;
    unsigned int line; /* line of the command being run */
    bool quiet;
    /* Set-up, fixed once the simulator starts. */
    char policy[64];
    char pool_params[SIMTOOL_MAX_LINE];
    unsigned int policy_line; /* where pool parameters were given */
    unsigned int nr_cpus, smt, sockets;
    uint64_t pick_delay_ns;
    uint64_t late_max_ns;
    int late_what;
    bool started;
    struct sim sim;
    /* `at` commands, sorted by time then by file order. */
    struct simtool_at *at;
    size_t nr_at;
    unsigned int failures;
};

struct simtool_cmd {
    const char *name;
    int (*fn)(struct simtool *t, struct simtool_words *ws, char *err);
    bool setup; /* only before the simulation starts */
    const char *usage;
};

static const struct simtool_cmd *simtool_find(const char *name);

/* --- helpers ------------------------------------------------------------ */

/* Join w[first..] that look like key=value into "k=v k=v" (others: error). */
static int
simtool_join_kv(const struct simtool_words *ws, size_t first, const bool *skip, char *out,
                size_t len, char *err)
{
    size_t off = 0;

    out[0] = '\0';
    for (size_t i = first; i < ws->n; i++) {
        if (skip != NULL && skip[i])
            continue;
        if (strchr(ws->w[i], '=') == NULL) {
            snprintf(err, SIMTOOL_ERRLEN, "'%.40s' is not key=value", ws->w[i]);
            return -EINVAL;
        }
        off += (size_t)snprintf(out + off, len - off, "%s%s", off ? " " : "", ws->w[i]);
        if (off >= len) {
            snprintf(err, SIMTOOL_ERRLEN, "parameters too long");
            return -EINVAL;
        }
    }
    return 0;
}

static int
simtool_start(struct simtool *t, char *err)
{
    struct policy_cpu cpus[CPUSET_MAX];
    unsigned int per_socket = t->nr_cpus / t->sockets;
    char perr[POLICY_ERRLEN];

    if (t->started)
        return 0;
    for (unsigned int c = 0; c < t->nr_cpus; c++)
        cpus[c] = (struct policy_cpu){.cpu = (int)c,
                                      .core = (int)(c / t->smt),
                                      .socket = (int)(c / per_socket),
                                      .node = (int)(c / per_socket)};
    if (sim_init(&t->sim, t->policy, t->nr_cpus, cpus, t->pool_params[0] ? t->pool_params : NULL,
                 perr) < 0) {
        if (t->policy_line != 0)
            t->line = t->policy_line; /* report the line that set them */
        snprintf(err, SIMTOOL_ERRLEN, "policy %s: %s", t->policy, perr);
        return -EINVAL;
    }
    t->sim.pick_delay_ns = t->pick_delay_ns;
    t->sim.late_max_ns = t->late_max_ns;
    t->sim.late_what = t->late_what;
    t->started = true;
    return 0;
}

static int
simtool_need_words(const struct simtool_words *ws, size_t n, const char *usage, char *err)
{
    if (ws->n < n) {
        snprintf(err, SIMTOOL_ERRLEN, "usage: %s", usage);
        return -EINVAL;
    }
    return 0;
}

static struct pool_dom *
simtool_dom(struct simtool *t, const char *name, char *err)
{
    struct pool_dom *d = pool_dom_find(&t->sim.pool, name);

    if (d == NULL)
        snprintf(err, SIMTOOL_ERRLEN, "no domain '%.40s'", name);
    return d;
}

/* --- set-up commands -------------------------------------------------------- */

static int
cmd_policy(struct simtool *t, struct simtool_words *ws, char *err)
{
    if (policy_find(ws->w[1]) == NULL) {
        snprintf(err, SIMTOOL_ERRLEN, "unknown policy '%.40s'", ws->w[1]);
        return -EINVAL;
    }
    snprintf(t->policy, sizeof(t->policy), "%s", ws->w[1]);
    t->policy_line = t->line;
    return simtool_join_kv(ws, 2, NULL, t->pool_params, sizeof(t->pool_params), err);
}

static int
cmd_cpus(struct simtool *t, struct simtool_words *ws, char *err)
{
    uint64_t n, v;

    if (simtool_uint(ws->w[1], CPUSET_MAX, &n, err) < 0 || n == 0) {
        snprintf(err, SIMTOOL_ERRLEN, "cpus: 1..%d CPUs", CPUSET_MAX);
        return -EINVAL;
    }
    t->nr_cpus = (unsigned int)n;
    t->smt = t->sockets = 1;
    for (size_t i = 2; i < ws->n; i++) {
        bool smt = strncmp(ws->w[i], "smt=", 4) == 0;

        if (!smt && strncmp(ws->w[i], "sockets=", 8) != 0) {
            snprintf(err, SIMTOOL_ERRLEN, "cpus: unknown option '%.40s' (smt=, sockets=)",
                     ws->w[i]);
            return -EINVAL;
        }
        if (simtool_uint(strchr(ws->w[i], '=') + 1, n, &v, err) < 0 || v == 0 || n % v != 0) {
            snprintf(err, SIMTOOL_ERRLEN, "cpus: %.40s must divide %u", ws->w[i], t->nr_cpus);
            return -EINVAL;
        }
        *(smt ? &t->smt : &t->sockets) = (unsigned int)v;
    }
    if ((t->nr_cpus / t->sockets) % t->smt != 0) {
        snprintf(err, SIMTOOL_ERRLEN, "cpus: smt=%u does not divide a socket", t->smt);
        return -EINVAL;
    }
    return 0;
}

static int
cmd_pick_delay(struct simtool *t, struct simtool_words *ws, char *err)
{
    return simtool_duration(ws->w[1], &t->pick_delay_ns, err);
}

/* timer_late MAX [slices|timer]: which deadlines are late (default both). */
static int
cmd_timer_late(struct simtool *t, struct simtool_words *ws, char *err)
{
    static const char *const what[] = {"all", "slices", "timer"};

    if (ws->n > 3) {
        snprintf(err, SIMTOOL_ERRLEN, "usage: timer_late MAX_DURATION [all|slices|timer]");
        return -EINVAL;
    }
    t->late_what = 0;
    if (ws->n == 3) {
        t->late_what = -1;
        for (int i = 0; i < 3; i++)
            if (strcmp(ws->w[2], what[i]) == 0)
                t->late_what = i;
        if (t->late_what < 0) {
            snprintf(err, SIMTOOL_ERRLEN, "timer_late: %.40s is not all, slices or timer",
                     ws->w[2]);
            return -EINVAL;
        }
    }
    return simtool_duration(ws->w[1], &t->late_max_ns, err);
}

/* --- domains and parameters ------------------------------------------------- */

/* dom NAME [vcpus=N] [cpus=LIST] DEMAND [demand keys] [policy k=v ...] */
static int
cmd_dom(struct simtool *t, struct simtool_words *ws, char *err)
{
    bool used[SIMTOOL_MAX_WORDS] = {false};
    struct sim_demand dem = sim_busy();
    uint64_t nv = 1;
    struct cpuset aff;
    char params[SIMTOOL_MAX_LINE], perr[POLICY_ERRLEN];
    bool have_demand = false;

    if (strcmp(ws->w[1], "pool") == 0) {
        snprintf(err, SIMTOOL_ERRLEN, "'pool' is reserved (set pool ...)");
        return -EINVAL;
    }
    used[0] = used[1] = true;
    cpuset_zero(&aff);
    for (size_t i = 2; i < ws->n; i++) {
        if (used[i])
            continue;
        if (strncmp(ws->w[i], "vcpus=", 6) == 0) {
            used[i] = true;
            if (simtool_uint(ws->w[i] + 6, SIM_MAX_VCPUS, &nv, err) < 0 || nv == 0)
                return -EINVAL;
        } else if (strncmp(ws->w[i], "cpus=", 5) == 0) {
            used[i] = true;
            if (simtool_cpulist(ws->w[i] + 5, t->nr_cpus, &aff, err) < 0)
                return -EINVAL;
        } else if (strchr(ws->w[i], '=') == NULL && !have_demand) {
            if (simtool_demand(ws, i, used, &dem, err) < 0)
                return -EINVAL;
            have_demand = true;
        }
    }
    if (simtool_join_kv(ws, 2, used, params, sizeof(params), err) < 0)
        return -EINVAL;
    if (sim_dom_add_set(&t->sim, ws->w[1], (unsigned int)nv, dem, &aff, params[0] ? params : NULL,
                        perr) == NULL) {
        snprintf(err, SIMTOOL_ERRLEN, "dom %.40s: %s", ws->w[1], perr);
        return -EINVAL;
    }
    return 0;
}

static int
cmd_remove(struct simtool *t, struct simtool_words *ws, char *err)
{
    struct pool_dom *d = simtool_dom(t, ws->w[1], err);

    if (d == NULL)
        return -ENOENT;
    sim_dom_remove(&t->sim, d);
    return 0;
}

/* set DOM|pool k=v ... */
static int
cmd_set(struct simtool *t, struct simtool_words *ws, char *err)
{
    struct pool_dom *d = NULL;
    char params[SIMTOOL_MAX_LINE], perr[POLICY_ERRLEN];

    if (strcmp(ws->w[1], "pool") != 0 && (d = simtool_dom(t, ws->w[1], err)) == NULL)
        return -ENOENT;
    if (simtool_join_kv(ws, 2, NULL, params, sizeof(params), err) < 0)
        return -EINVAL;
    if (sim_set(&t->sim, d, params, perr) < 0) {
        snprintf(err, SIMTOOL_ERRLEN, "set %.40s: %s", ws->w[1], perr);
        return -EINVAL;
    }
    return 0;
}

static int
cmd_switch(struct simtool *t, struct simtool_words *ws, char *err)
{
    char params[SIMTOOL_MAX_LINE], perr[POLICY_ERRLEN];

    if (simtool_join_kv(ws, 2, NULL, params, sizeof(params), err) < 0)
        return -EINVAL;
    if (sim_switch(&t->sim, ws->w[1], params[0] ? params : NULL, perr) < 0) {
        snprintf(err, SIMTOOL_ERRLEN, "switch %.40s: %s", ws->w[1], perr);
        return -EINVAL;
    }
    return 0;
}

/* demand DOM[/i] DEMAND ... : every vCPU of DOM when no index is given. */
static int
cmd_demand(struct simtool *t, struct simtool_words *ws, char *err)
{
    bool used[SIMTOOL_MAX_WORDS] = {false};
    struct sim_vcpu *v[SIMTOOL_MAX_REFS];
    struct sim_demand dem;
    size_t n;

    if (simtool_vcpus(&t->sim, ws->w[1], true, v, SIMTOOL_MAX_REFS, &n, err) < 0 ||
        simtool_demand(ws, 2, used, &dem, err) < 0)
        return -EINVAL;
    for (size_t i = 3; i < ws->n; i++) {
        if (!used[i]) {
            snprintf(err, SIMTOOL_ERRLEN, "demand: unexpected '%.40s'", ws->w[i]);
            return -EINVAL;
        }
    }
    for (size_t i = 0; i < n; i++)
        sim_set_demand(&t->sim, v[i], dem);
    return 0;
}

/* wake, sleep, yield DOM[/i]: every vCPU of DOM when no index is given. */
static int
cmd_event(struct simtool *t, struct simtool_words *ws, char *err)
{
    struct sim_vcpu *v[SIMTOOL_MAX_REFS];
    size_t n;

    if (simtool_vcpus(&t->sim, ws->w[1], true, v, SIMTOOL_MAX_REFS, &n, err) < 0)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (v[i]->demand.kind != SIM_MANUAL && strcmp(ws->w[0], "yield") != 0) {
            snprintf(err, SIMTOOL_ERRLEN, "%s: %s is not 'manual'", ws->w[0], v[i]->label);
            return -EINVAL;
        }
        if (strcmp(ws->w[0], "wake") == 0)
            sim_wake(&t->sim, v[i]);
        else if (strcmp(ws->w[0], "sleep") == 0)
            sim_sleep(&t->sim, v[i]);
        else
            sim_yield(&t->sim, v[i]);
    }
    return 0;
}

/* --- time ------------------------------------------------------------------- */

static int simtool_exec(struct simtool *t, char *text, char *err);

/* at TIME CMD ...: TIME is absolute simulated time, not in the past. */
static int
cmd_at(struct simtool *t, struct simtool_words *ws, char *err)
{
    struct simtool_at *a;
    uint64_t when;
    size_t pos, off = 0;

    if (simtool_duration(ws->w[1], &when, err) < 0)
        return -EINVAL;
    if (when < t->sim.now) {
        snprintf(err, SIMTOOL_ERRLEN, "at %s is in the past (now %.6f s)", ws->w[1],
                 (double)t->sim.now / 1e9);
        return -EINVAL;
    }
    if (simtool_find(ws->w[2]) == NULL || simtool_find(ws->w[2])->setup ||
        strcmp(ws->w[2], "at") == 0 || strcmp(ws->w[2], "run") == 0) {
        snprintf(err, SIMTOOL_ERRLEN, "at: '%.40s' cannot be scheduled", ws->w[2]);
        return -EINVAL;
    }
    if (t->nr_at == SIMTOOL_MAX_AT) {
        snprintf(err, SIMTOOL_ERRLEN, "more than %d pending 'at' commands", SIMTOOL_MAX_AT);
        return -E2BIG;
    }
    for (pos = t->nr_at; pos > 0 && t->at[pos - 1].when > when; pos--)
        ;
    memmove(&t->at[pos + 1], &t->at[pos], (t->nr_at - pos) * sizeof(t->at[0]));
    t->nr_at++;
    a = &t->at[pos];
    a->when = when;
    a->line = t->line;
    a->text[0] = '\0';
    for (size_t i = 2; i < ws->n; i++)
        off += (size_t)snprintf(a->text + off, sizeof(a->text) - off, "%s%s", i > 2 ? " " : "",
                                ws->w[i]);
    return 0;
}

/* run DUR: advance, running the `at` commands that fall due on the way. */
static int
cmd_run(struct simtool *t, struct simtool_words *ws, char *err)
{
    uint64_t dur, end;
    unsigned int line = t->line;

    if (simtool_duration(ws->w[1], &dur, err) < 0)
        return -EINVAL;
    end = t->sim.now + dur;
    while (t->nr_at > 0 && t->at[0].when <= end) {
        struct simtool_at a = t->at[0];

        memmove(&t->at[0], &t->at[1], (t->nr_at - 1) * sizeof(t->at[0]));
        t->nr_at--;
        sim_run(&t->sim, a.when - t->sim.now);
        t->line = a.line;
        if (simtool_exec(t, a.text, err) < 0)
            return -EINVAL;
    }
    t->line = line;
    sim_run(&t->sim, end - t->sim.now);
    return 0;
}

static int
cmd_reset(struct simtool *t, struct simtool_words *ws, char *err)
{
    (void)ws, (void)err;
    sim_reset_stats(&t->sim);
    return 0;
}

/* --- output ----------------------------------------------------------------- */

/* Run lengths and CPU switches: what sim_report does not show. */
static void
simtool_report_runs(struct sim *s, FILE *f)
{
    fprintf(f, "%-16s %9s %9s %9s   (run lengths)\n", "vcpu", "run_p50", "run_p99", "run_max");
    for (unsigned int i = 0; i < s->nr_vcpus; i++) {
        struct sim_vcpu *v = s->vcpus[i];

        fprintf(f, "%-16s %8.3fm %8.3fm %8.3fm\n", v->label,
                (double)sim_percentile(&v->lengths, 50) / 1e6,
                (double)sim_percentile(&v->lengths, 99) / 1e6, (double)sim_max(&v->lengths) / 1e6);
    }
    fprintf(f, "cpu switches:");
    for (unsigned int c = 0; c < s->pool.nr_cpus; c++)
        fprintf(f, " cpu%u=%" PRIu64, c, s->cpu[c].switches);
    fprintf(f, "\n");
}

static int
cmd_report(struct simtool *t, struct simtool_words *ws, char *err)
{
    (void)ws, (void)err;
    printf("--- report at %.6f s (%s:%u)\n", (double)t->sim.now / 1e9, t->file, t->line);
    sim_report(&t->sim, stdout);
    simtool_report_runs(&t->sim, stdout);
    return 0;
}

/* timeline on | off | print [max=N] */
static int
cmd_timeline(struct simtool *t, struct simtool_words *ws, char *err)
{
    struct sim *s = &t->sim;
    uint64_t max = UINT64_MAX;

    if (strcmp(ws->w[1], "on") == 0 || strcmp(ws->w[1], "off") == 0) {
        s->record = strcmp(ws->w[1], "on") == 0;
        return 0;
    }
    if (strcmp(ws->w[1], "print") != 0 ||
        (ws->n > 2 && (strncmp(ws->w[2], "max=", 4) != 0 ||
                       simtool_uint(ws->w[2] + 4, UINT64_MAX, &max, err) < 0))) {
        snprintf(err, SIMTOOL_ERRLEN, "usage: timeline on | off | print [max=N]");
        return -EINVAL;
    }
    for (size_t i = 0; i < s->nr_seg && i < max; i++) {
        const struct sim_seg *g = &s->timeline[i];

        printf("%12.6f %12.6f cpu%u %s\n", (double)g->start / 1e6, (double)g->end / 1e6, g->cpu,
               g->vcpu >= 0 && (unsigned int)g->vcpu < s->nr_vcpus ? s->vcpus[g->vcpu]->label
                                                                   : "-");
    }
    return 0;
}

static int
cmd_echo(struct simtool *t, struct simtool_words *ws, char *err)
{
    (void)t, (void)err;
    for (size_t i = 1; i < ws->n; i++)
        printf("%s%s", ws->w[i], i + 1 < ws->n ? " " : "\n");
    return 0;
}

/* --- expect ------------------------------------------------------------------- */

struct simtool_capture {
    const char *key;
    bool found;
    int64_t val;
};

static void
capture_int(struct policy_sink *sk, const char *key, int64_t val)
{
    struct simtool_capture *c = sk->ctx;

    if (strcmp(key, c->key) == 0) {
        c->found = true;
        c->val = val;
    }
}

static void
capture_str(struct policy_sink *sk, const char *key, const char *val)
{
    (void)sk, (void)key, (void)val;
}

/* The value of a vCPU metric; durations in ns. */
static int
simtool_metric(struct simtool *t, const char *m, struct sim_vcpu *v, double *out, char *err)
{
    static const struct {
        const char *name;
        double pct; /* percentile of latencies (or -1) */
    } lat[] = {{"lat_p50", 50}, {"lat_p99", 99}, {"lat_p999", 99.9}};

    for (size_t i = 0; i < sizeof(lat) / sizeof(lat[0]); i++)
        if (strcmp(m, lat[i].name) == 0)
            return *out = (double)sim_percentile(&v->lat, lat[i].pct), 0;
    if (strcmp(m, "share") == 0)
        *out = sim_share(&t->sim, v);
    else if (strcmp(m, "lat_max") == 0)
        *out = (double)sim_max(&v->lat);
    else if (strcmp(m, "run_p50") == 0)
        *out = (double)sim_percentile(&v->lengths, 50);
    else if (strcmp(m, "run_max") == 0)
        *out = (double)sim_max(&v->lengths);
    else if (strcmp(m, "runs") == 0)
        *out = (double)v->runs;
    else if (strcmp(m, "parks") == 0)
        *out = (double)v->parks;
    else if (strncmp(m, "stat:", 5) == 0) {
        struct simtool_capture c = {m + 5, false, 0};
        struct policy_sink sk = {capture_int, capture_str, &c};

        pool_vcpu_stats(&t->sim.pool, v->pv, &sk);
        if (!c.found) {
            snprintf(err, SIMTOOL_ERRLEN, "policy %s has no integer stat '%.40s'",
                     pool_policy_name(&t->sim.pool), m + 5);
            return -EINVAL;
        }
        *out = (double)c.val;
    } else {
        snprintf(err, SIMTOOL_ERRLEN,
                 "unknown metric '%.40s' (share, lat_p50, lat_p99, lat_p999, lat_max, "
                 "run_p50, run_max, runs, parks, stat:KEY, violations)",
                 m);
        return -EINVAL;
    }
    return 0;
}

/* A value in the metric's unit: durations for lat_ and run_, else numbers. */
static int
simtool_value(const char *metric, const char *s, double *out, char *err)
{
    uint64_t ns;
    char *end;

    if (strncmp(metric, "lat_", 4) == 0 || strncmp(metric, "run_", 4) == 0) {
        if (simtool_duration(s, &ns, err) < 0)
            return -EINVAL;
        *out = (double)ns;
        return 0;
    }
    *out = strtod(s, &end);
    if (end == s || (*end != '\0' && strcmp(end, "%") != 0)) {
        snprintf(err, SIMTOOL_ERRLEN, "'%.40s' is not a number", s);
        return -EINVAL;
    }
    if (*end == '%')
        *out /= 100;
    return 0;
}

/* A metric value as text: durations in us, shares as fractions. */
static void
simtool_format(const char *metric, double val, char *buf, size_t len)
{
    if (strncmp(metric, "lat_", 4) == 0 || strncmp(metric, "run_", 4) == 0)
        snprintf(buf, len, "%.1fus", val / 1e3);
    else
        snprintf(buf, len, "%.6g", val);
}

static bool
simtool_compare(double got, const char *op, double want, double tol, bool *known)
{
    *known = true;
    if (strcmp(op, "<") == 0)
        return got < want;
    if (strcmp(op, "<=") == 0)
        return got <= want;
    if (strcmp(op, ">") == 0)
        return got > want;
    if (strcmp(op, ">=") == 0)
        return got >= want;
    if (strcmp(op, "==") == 0)
        return got == want;
    if (strcmp(op, "~") == 0)
        return got >= want - tol && got <= want + tol;
    *known = false;
    return false;
}

/* expect METRIC VCPU OP VALUE [TOL]  |  expect violations OP N */
static int
cmd_expect(struct simtool *t, struct simtool_words *ws, char *err)
{
    bool global = strcmp(ws->w[1], "violations") == 0, known, ok;
    size_t k = global ? 2 : 3;
    struct sim_vcpu *v = NULL;
    double got, want, tol = 0;
    char sgot[32], swant[32], stol[32];
    size_t n;

    if (ws->n < k + 2 || (strcmp(ws->w[k], "~") == 0 && ws->n < k + 3)) {
        snprintf(err, SIMTOOL_ERRLEN, "usage: expect METRIC VCPU OP VALUE [TOL]");
        return -EINVAL;
    }
    if (global)
        got = (double)sim_violations(&t->sim);
    else if (simtool_vcpus(&t->sim, ws->w[2], false, &v, 1, &n, err) < 0 ||
             simtool_metric(t, ws->w[1], v, &got, err) < 0)
        return -EINVAL;
    if (simtool_value(ws->w[1], ws->w[k + 1], &want, err) < 0 ||
        (ws->n > k + 2 && simtool_value(ws->w[1], ws->w[k + 2], &tol, err) < 0))
        return -EINVAL;
    ok = simtool_compare(got, ws->w[k], want, tol, &known);
    if (!known) {
        snprintf(err, SIMTOOL_ERRLEN, "unknown operator '%.8s' (<, <=, >, >=, ==, ~)", ws->w[k]);
        return -EINVAL;
    }
    simtool_format(ws->w[1], got, sgot, sizeof(sgot));
    simtool_format(ws->w[1], want, swant, sizeof(swant));
    simtool_format(ws->w[1], tol, stol, sizeof(stol));
    if (!ok) {
        t->failures++;
        fprintf(stderr, "%s:%u: expect failed: %s %s is %s, wanted %s %s%s%s\n", t->file, t->line,
                ws->w[1], global ? "" : ws->w[2], sgot, ws->w[k], swant, tol != 0 ? " +- " : "",
                tol != 0 ? stol : "");
    }
    if (!t->quiet || !ok)
        printf("expect %s %s = %s: %s\n", ws->w[1], global ? "" : ws->w[2], sgot,
               ok ? "ok" : "FAILED");
    return 0;
}

/* --- interpreter ------------------------------------------------------------ */

static const struct simtool_cmd simtool_cmds[] = {
    {"policy", cmd_policy, true, "policy NAME [key=value ...]"},
    {"cpus", cmd_cpus, true, "cpus N [smt=S] [sockets=K]"},
    {"pick_delay", cmd_pick_delay, true, "pick_delay DURATION"},
    {"timer_late", cmd_timer_late, true, "timer_late MAX_DURATION [all|slices|timer]"},
    {"dom", cmd_dom, false, "dom NAME [vcpus=N] [cpus=LIST] DEMAND [key=value ...]"},
    {"remove", cmd_remove, false, "remove DOM"},
    {"set", cmd_set, false, "set DOM|pool key=value ..."},
    {"switch", cmd_switch, false, "switch POLICY [key=value ...]"},
    {"demand", cmd_demand, false, "demand DOM[/i] DEMAND"},
    {"wake", cmd_event, false, "wake DOM[/i]"},
    {"sleep", cmd_event, false, "sleep DOM[/i]"},
    {"yield", cmd_event, false, "yield DOM[/i]"},
    {"at", cmd_at, false, "at TIME COMMAND ..."},
    {"run", cmd_run, false, "run DURATION"},
    {"reset", cmd_reset, false, "reset"},
    {"report", cmd_report, false, "report"},
    {"timeline", cmd_timeline, false, "timeline on|off|print [max=N]"},
    {"echo", cmd_echo, false, "echo TEXT"},
    {"expect", cmd_expect, false, "expect METRIC [VCPU] OP VALUE [TOL]"},
    {NULL, NULL, false, NULL},
};

static const struct simtool_cmd *
simtool_find(const char *name)
{
    for (const struct simtool_cmd *c = simtool_cmds; c->name != NULL; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

/* Minimum words of each command: its usage's words before any option. */
static size_t
simtool_min_words(const struct simtool_cmd *c)
{
    size_t n = 1;

    for (const char *s = c->usage; (s = strchr(s, ' ')) != NULL; s++) {
        if (s[1] == '[' || s[1] == '.')
            break;
        n++;
    }
    return n;
}

static int
simtool_exec(struct simtool *t, char *text, char *err)
{
    struct simtool_words ws;
    const struct simtool_cmd *c;

    if (simtool_split(text, &ws, err) < 0)
        return -EINVAL;
    if (ws.n == 0)
        return 0;
    c = simtool_find(ws.w[0]);
    if (c == NULL) {
        snprintf(err, SIMTOOL_ERRLEN, "unknown command '%.40s'", ws.w[0]);
        return -EINVAL;
    }
    if (simtool_need_words(&ws, simtool_min_words(c), c->usage, err) < 0)
        return -EINVAL;
    if (c->setup && t->started) {
        snprintf(err, SIMTOOL_ERRLEN, "'%s' must come before the simulation starts", c->name);
        return -EINVAL;
    }
    if (!c->setup && simtool_start(t, err) < 0)
        return -EINVAL;
    return c->fn(t, &ws, err);
}

static int
simtool_file(struct simtool *t, FILE *f)
{
    char buf[SIMTOOL_MAX_LINE + 2], err[SIMTOOL_ERRLEN];

    while (fgets(buf, sizeof(buf), f) != NULL) {
        t->line++;
        if (strchr(buf, '\n') == NULL && !feof(f)) {
            fprintf(stderr, "%s:%u: line longer than %d bytes\n", t->file, t->line,
                    SIMTOOL_MAX_LINE);
            return -1;
        }
        err[0] = '\0';
        if (simtool_exec(t, buf, err) < 0) {
            fprintf(stderr, "%s:%u: %s\n", t->file, t->line, err);
            return -1;
        }
    }
    if (t->nr_at > 0)
        fprintf(stderr, "%s: %zu 'at' command(s) after the last run never ran\n", t->file,
                t->nr_at);
    return 0;
}

static void
usage(FILE *f)
{
    fprintf(f, "usage: vcpusched-sim [-q] SCENARIO\n"
               "Runs a scenario on the deterministic simulator. One command per line, '#'\n"
               "starts a comment, durations take ns/us/ms/s (1.5ms). Commands:\n");
    for (const struct simtool_cmd *c = simtool_cmds; c->name != NULL; c++)
        fprintf(f, "  %s\n", c->usage);
    fprintf(f, "DEMAND: busy | idle | manual | duty run=D sleep=D [phase=D]\n"
               "        | periodic period=D run=D [phase=D]\n"
               "Set-up commands (policy, cpus, pick_delay, timer_late) come first; the default is\n"
               "'policy credit' on 'cpus 1'. 'at' times are absolute simulated times.\n"
               "expect metrics: share, lat_p50, lat_p99, lat_p999, lat_max, run_p50,\n"
               "run_max, runs, parks, stat:KEY (a policy counter), violations;\n"
               "operators <, <=, >, >=, ==, ~ (with a tolerance). -q hides passing expects.\n");
}

int
main(int argc, char **argv)
{
    struct simtool *t = calloc(1, sizeof(*t));
    int argi = 1, r;
    FILE *f;

    if (t == NULL || (t->at = calloc(SIMTOOL_MAX_AT, sizeof(t->at[0]))) == NULL) {
        fprintf(stderr, "vcpusched-sim: out of memory\n");
        return 2;
    }
    if (argc > 1 && strcmp(argv[1], "-q") == 0)
        t->quiet = true, argi++;
    if (argc - argi != 1 || argv[argi][0] == '-') {
        usage(argc > 1 && strcmp(argv[1], "-h") == 0 ? stdout : stderr);
        return argc > 1 && strcmp(argv[1], "-h") == 0 ? 0 : 2;
    }
    t->file = argv[argi];
    f = fopen(t->file, "r");
    if (f == NULL) {
        fprintf(stderr, "vcpusched-sim: %s: %s\n", t->file, strerror(errno));
        return 2;
    }
    snprintf(t->policy, sizeof(t->policy), "credit");
    t->nr_cpus = t->smt = t->sockets = 1;
    r = simtool_file(t, f);
    fclose(f);
    if (t->started && sim_violations(&t->sim) > 0)
        fprintf(stderr, "%s: %" PRIu64 " contract violation(s): %s\n", t->file,
                sim_violations(&t->sim), t->sim.pool.last_violation);
    if (t->started && sim_violations(&t->sim) > 0)
        r = -1;
    if (t->failures > 0)
        r = -1;
    if (t->started)
        sim_fini(&t->sim);
    free(t->at);
    free(t);
    return r < 0 ? 1 : 0;
}
