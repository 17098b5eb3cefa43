/* SPDX-License-Identifier: ISC */
/*
 * simtool_parse.c - the small parsers of the vcpusched-sim scenario
 * language: words, durations, CPU lists, demands and vCPU references.
 * Every parser fills a message (no file:line; the caller adds it).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simtool.h"

int
simtool_split(char *line, struct simtool_words *out, char *err)
{
    char *save = NULL, *tok;

    out->n = 0;
    for (tok = strtok_r(line, " \t\r\n", &save); tok != NULL;
         tok = strtok_r(NULL, " \t\r\n", &save)) {
        if (tok[0] == '#')
            break;
        if (out->n == SIMTOOL_MAX_WORDS) {
            snprintf(err, SIMTOOL_ERRLEN, "more than %d words on a line", SIMTOOL_MAX_WORDS);
            return -EINVAL;
        }
        out->w[out->n++] = tok;
    }
    return 0;
}

int
simtool_uint(const char *s, uint64_t max, uint64_t *out, char *err)
{
    uint64_t x = 0;

    if (*s == '\0') {
        snprintf(err, SIMTOOL_ERRLEN, "empty number");
        return -EINVAL;
    }
    for (const char *c = s; *c != '\0'; c++) {
        if (*c < '0' || *c > '9' || x > (max - (uint64_t)(*c - '0')) / 10) {
            snprintf(err, SIMTOOL_ERRLEN, "'%.40s' is not a number in 0..%llu", s,
                     (unsigned long long)max);
            return -EINVAL;
        }
        x = x * 10 + (uint64_t)(*c - '0');
    }
    *out = x;
    return 0;
}

static const struct {
    const char *name;
    uint64_t ns;
} simtool_units[] = {
    {"ns", 1},
    {"us", NSEC_PER_USEC},
    {"ms", NSEC_PER_MSEC},
    {"s", NSEC_PER_SEC},
};

/* Exact: "1.25ms" is 1250000 ns; at most 9 decimals, at most ~10^6 s. */
int
simtool_duration(const char *s, uint64_t *ns, char *err)
{
    uint64_t ip = 0, frac = 0, scale = 1;
    const char *c = s;

    for (; *c >= '0' && *c <= '9' && ip < 1000000000ULL; c++)
        ip = ip * 10 + (uint64_t)(*c - '0');
    if (*c == '.')
        for (c++; *c >= '0' && *c <= '9' && scale < NSEC_PER_SEC; c++, scale *= 10)
            frac = frac * 10 + (uint64_t)(*c - '0');
    if (c == s || (c[-1] < '0' || c[-1] > '9')) {
        snprintf(err, SIMTOOL_ERRLEN, "'%.40s' is not a duration (e.g. 250us, 1.5ms, 3s)", s);
        return -EINVAL;
    }
    if (*c == '\0' && ip == 0 && frac == 0) {
        *ns = 0;
        return 0;
    }
    for (size_t i = 0; i < sizeof(simtool_units) / sizeof(simtool_units[0]); i++) {
        if (strcmp(c, simtool_units[i].name) == 0) {
            *ns = ip * simtool_units[i].ns + frac * simtool_units[i].ns / scale;
            return 0;
        }
    }
    snprintf(err, SIMTOOL_ERRLEN, "'%.40s': a duration needs a unit: ns, us, ms or s", s);
    return -EINVAL;
}

/* A kernel CPU list (common/cpuset.h's parser) of pool CPUs 0..nr_cpus-1, not empty. */
int
simtool_cpulist(const char *s, unsigned int nr_cpus, struct cpuset *mask, char *err)
{
    char msg[128];
    struct cpuset all;

    if (cpulist_parse(s, mask, msg, sizeof(msg)) < 0) {
        snprintf(err, SIMTOOL_ERRLEN, "bad CPU list '%.40s': %s", s, msg);
        return -EINVAL;
    }
    cpuset_fill(&all, nr_cpus);
    if (cpuset_empty(mask) || !cpuset_subset(mask, &all)) {
        snprintf(err, SIMTOOL_ERRLEN, "bad CPU list '%.40s' (CPUs are 0..%u)", s, nr_cpus - 1);
        return -EINVAL;
    }
    return 0;
}

/* Take "key=DURATION" among the words after `first` into *val. */
static int
simtool_demand_key(const struct simtool_words *ws, size_t first, bool *used, const char *key,
                   bool required, uint64_t *val, char *err)
{
    size_t klen = strlen(key);

    for (size_t i = first; i < ws->n; i++) {
        if (strncmp(ws->w[i], key, klen) == 0 && ws->w[i][klen] == '=') {
            used[i] = true;
            return simtool_duration(ws->w[i] + klen + 1, val, err);
        }
    }
    if (required) {
        snprintf(err, SIMTOOL_ERRLEN, "%s needs %s=DURATION", ws->w[first], key);
        return -EINVAL;
    }
    *val = 0;
    return 0;
}

int
simtool_demand(const struct simtool_words *ws, size_t first, bool *used, struct sim_demand *out,
               char *err)
{
    const char *kind = ws->w[first];
    uint64_t a = 0, b = 0, phase = 0;

    used[first] = true;
    if (strcmp(kind, "busy") == 0) {
        *out = sim_busy();
    } else if (strcmp(kind, "idle") == 0) {
        *out = (struct sim_demand){.kind = SIM_IDLE};
    } else if (strcmp(kind, "manual") == 0) {
        *out = sim_manual();
    } else if (strcmp(kind, "duty") == 0) {
        if (simtool_demand_key(ws, first, used, "run", true, &a, err) < 0 ||
            simtool_demand_key(ws, first, used, "sleep", true, &b, err) < 0 ||
            simtool_demand_key(ws, first, used, "phase", false, &phase, err) < 0)
            return -EINVAL;
        *out = sim_duty(a, b);
        out->phase_ns = phase;
    } else if (strcmp(kind, "periodic") == 0) {
        if (simtool_demand_key(ws, first, used, "period", true, &a, err) < 0 ||
            simtool_demand_key(ws, first, used, "run", true, &b, err) < 0 ||
            simtool_demand_key(ws, first, used, "phase", false, &phase, err) < 0)
            return -EINVAL;
        if (a == 0) {
            snprintf(err, SIMTOOL_ERRLEN, "periodic needs a period above 0");
            return -EINVAL;
        }
        *out = sim_periodic(a, b, phase);
    } else {
        snprintf(err, SIMTOOL_ERRLEN, "unknown demand '%.40s' (busy, idle, manual, duty, periodic)",
                 kind);
        return -EINVAL;
    }
    if ((out->kind == SIM_DUTY && out->run_ns == 0)) {
        snprintf(err, SIMTOOL_ERRLEN, "duty needs run above 0");
        return -EINVAL;
    }
    return 0;
}

/* Find the domain named by the part of `ref` before any '/'. */
static struct pool_dom *
simtool_find_dom(struct sim *s, const char *ref, size_t len)
{
    struct pool_dom *d;

    TAILQ_FOREACH(d, &s->pool.doms, link)
    if (strlen(d->name) == len && strncmp(d->name, ref, len) == 0)
        return d;
    return NULL;
}

int
simtool_vcpus(struct sim *s, const char *ref, bool all, struct sim_vcpu **out, size_t max,
              size_t *n, char *err)
{
    const char *slash = strchr(ref, '/');
    size_t len = slash ? (size_t)(slash - ref) : strlen(ref);
    struct pool_dom *d = simtool_find_dom(s, ref, len);
    uint64_t idx;

    *n = 0;
    if (d == NULL) {
        snprintf(err, SIMTOOL_ERRLEN, "no domain '%.*s'", (int)(len > 40 ? 40 : len), ref);
        return -ENOENT;
    }
    if (slash != NULL) {
        if (simtool_uint(slash + 1, d->nr_vcpus - 1, &idx, err) < 0) {
            snprintf(err, SIMTOOL_ERRLEN, "domain %s has vCPUs 0..%u, not '%.20s'", d->name,
                     d->nr_vcpus - 1, slash + 1);
            return -ENOENT;
        }
        out[(*n)++] = sim_vcpu(d, (unsigned int)idx);
        return 0;
    }
    for (unsigned int i = 0; i < (all ? d->nr_vcpus : 1) && *n < max; i++)
        out[(*n)++] = sim_vcpu(d, i);
    return 0;
}
