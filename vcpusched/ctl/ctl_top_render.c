/* SPDX-License-Identifier: ISC */
/*
 * ctl_top_render.c - the text of a `top` frame (ctl_top_render.h), laid
 * out by ctl_columns like every other table of vcpuschedctl. Rates that
 * cannot be known yet (the first frame, a counter the policy does not
 * keep) show as "-".
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "ctl_columns.h"
#include "ctl_show.h"
#include "ctl_top_render.h"

#define POOL_HEAD                                                                                  \
    "POOL POLICY PATTERN CPUS >DOMAINS >VCPUS >CPU% >DISP% >PICKS/S >WAKE_P50 >WAKE_P99 PARAMS"
#define DOM_HEAD                                                                                   \
    "DOMAIN POOL POLICY >VCPUS >TID >CPU >CPU% >WAIT% >WAKES/S >BOOSTS/S >RESETS/S STATE PARAMS"

/* One decimal, and `unit`; "-" when unknown. */
static const char *
fmt_rate(char *buf, size_t len, double x, const char *unit)
{
    if (isnan(x))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.1f%s", x, unit);
    return buf;
}

static void
cell_rate(struct ctl_columns *t, double x)
{
    char buf[32];

    ctl_columns_cell(t, "%s", fmt_rate(buf, sizeof(buf), x, ""));
}

static void
cell_int(struct ctl_columns *t, int64_t x)
{
    if (x < 0)
        ctl_columns_cell(t, "-");
    else
        ctl_columns_cell(t, "%" PRId64, x);
}

static void
cell_ns(struct ctl_columns *t, int64_t ns)
{
    char buf[32];

    ctl_columns_cell(t, "%s", ctl_show_ns(buf, sizeof(buf), ns));
}

/* 3:04:05, or 2d 03:04:05 past a day. */
static const char *
fmt_uptime(char *buf, size_t len, int64_t ns)
{
    int64_t s = ns / 1000000000, d = s / 86400;

    if (ns < 0)
        snprintf(buf, len, "?");
    else if (d > 0)
        snprintf(buf, len, "%" PRId64 "d %02d:%02d:%02d", d, (int)(s % 86400 / 3600),
                 (int)(s % 3600 / 60), (int)(s % 60));
    else
        snprintf(buf, len, "%d:%02d:%02d", (int)(s / 3600), (int)(s % 3600 / 60), (int)(s % 60));
    return buf;
}

/* Two lines: the daemon, then the totals of every pool (the managed part of the host). */
static void
header(FILE *f, const struct top_sample *s, const struct top_view *v)
{
    char up[32], c[32], d[32], p[32];

    fprintf(f,
            "vcpuschedctl top - vcpuschedd up %s, events %s, %" PRId64
            " managed threads, every %.1fs, sorted by %s\n",
            fmt_uptime(up, sizeof(up), s->uptime_ns), s->events[0] ? s->events : "?",
            s->managed_threads, v->delay_s, top_sort_name(v->sort));
    fprintf(f,
            "%zu pools, %" PRId64 " cpus, %zu domains, %" PRId64
            " vcpus: vcpus %s cpu, dispatchers %s cpu, %s picks/s\n",
            s->nr_pools, s->nr_cpus, s->nr_doms, s->nr_vcpus,
            fmt_rate(c, sizeof(c), s->cpu_pct, "%"), fmt_rate(d, sizeof(d), s->disp_pct, "%"),
            fmt_rate(p, sizeof(p), s->picks_s, ""));
    if (v->status != NULL)
        fprintf(f, "%s\n", v->status);
}

static void
pool_row(struct ctl_columns *t, const struct top_pool *p)
{
    ctl_columns_row(t);
    ctl_columns_cell(t, "%s", p->name);
    ctl_columns_cell(t, "%s", p->policy);
    ctl_columns_cell(t, "%s", p->pattern);
    ctl_columns_cell(t, "%s", p->cpus);
    cell_int(t, p->domains);
    cell_int(t, p->vcpus);
    cell_rate(t, p->cpu_pct);
    cell_rate(t, p->disp_pct);
    cell_rate(t, p->picks_s);
    cell_ns(t, p->p50_ns);
    cell_ns(t, p->p99_ns);
    ctl_columns_cell(t, "%s", p->params);
}

static void
dom_row(struct ctl_columns *t, const struct top_dom *d)
{
    char state[64] = "-", boosted[32] = "";

    if (d->boosted > 0)
        snprintf(boosted, sizeof(boosted), "%u boosted", d->boosted);
    if (d->parked > 0)
        snprintf(state, sizeof(state), "%u parked%s%s", d->parked, boosted[0] ? " " : "", boosted);
    else if (boosted[0] != '\0')
        snprintf(state, sizeof(state), "%s", boosted);
    ctl_columns_row(t);
    ctl_columns_cell(t, "%s", d->name);
    ctl_columns_cell(t, "%s", d->pool);
    ctl_columns_cell(t, "%s", d->policy);
    ctl_columns_cell(t, "%zu", d->nr_vcpus);
    ctl_columns_cell(t, "%s", "");
    ctl_columns_cell(t, "%s", "");
    cell_rate(t, d->cpu_pct);
    cell_rate(t, d->wait_pct);
    cell_rate(t, d->wakes_s);
    cell_rate(t, d->boosts_s);
    cell_rate(t, d->resets_s);
    ctl_columns_cell(t, "%s", state);
    ctl_columns_cell(t, "%s", d->params);
}

/* Under its domain: "  vcpu0", its thread, CPU, rates and "running mid boost". */
static void
vcpu_row(struct ctl_columns *t, const struct top_vcpu *v)
{
    ctl_columns_row(t);
    ctl_columns_cell(t, "  vcpu%" PRId64, v->index);
    ctl_columns_cell(t, "%s", "");
    ctl_columns_cell(t, "%s", "");
    ctl_columns_cell(t, "%s", "");
    cell_int(t, v->tid);
    cell_int(t, v->cpu);
    cell_rate(t, v->cpu_pct);
    cell_rate(t, v->wait_pct);
    cell_rate(t, v->wakes_s);
    cell_rate(t, v->boosts_s);
    cell_rate(t, v->resets_s);
    ctl_columns_cell(t, "%s%s%s", v->state[0] ? v->state : "?", v->elevated ? " mid" : "",
                     v->boosted ? " boost" : "");
}

int
top_render(FILE *f, const struct top_sample *s, const struct top_view *v)
{
    struct ctl_columns pt, dt;
    int r;

    header(f, s, v);
    fputc('\n', f);
    ctl_columns_init(&pt, POOL_HEAD);
    for (size_t i = 0; i < s->nr_pools; i++)
        pool_row(&pt, &s->pools[i]);
    r = ctl_columns_print(&pt, f, "");
    ctl_columns_free(&pt);
    fputc('\n', f);
    ctl_columns_init(&dt, DOM_HEAD);
    for (size_t i = 0; i < s->nr_doms; i++) {
        dom_row(&dt, &s->doms[i]);
        for (size_t k = 0; v->vcpus && k < s->doms[i].nr_vcpus; k++)
            vcpu_row(&dt, &s->doms[i].vcpus[k]);
    }
    r |= ctl_columns_print(&dt, f, "");
    ctl_columns_free(&dt);
    return r < 0 ? -ENOMEM : 0;
}
