/* SPDX-License-Identifier: ISC */
/*
 * simtool.h - the scenario language of vcpusched-sim: words, durations,
 * demands and vCPU references (simtool_parse.c), shared with the command
 * interpreter (simtool.c).
 */
#ifndef VCPUSCHED_SIMTOOL_H
#define VCPUSCHED_SIMTOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim.h"

#define SIMTOOL_MAX_WORDS 64   /* words on one scenario line */
#define SIMTOOL_MAX_LINE  1024 /* bytes on one scenario line */
#define SIMTOOL_ERRLEN    256

/* One scenario line split into blank-separated words (modified in place). */
struct simtool_words {
    char *w[SIMTOOL_MAX_WORDS];
    size_t n;
};

int simtool_split(char *line, struct simtool_words *out, char *err);

/* "250us", "1.5ms", "3s", "0": durations need a unit unless zero. */
int simtool_duration(const char *s, uint64_t *ns, char *err);
/* Non-negative decimal integer, at most `max`. */
int simtool_uint(const char *s, uint64_t max, uint64_t *out, char *err);
/* CPU list "0,2-3" of a pool of nr_cpus into a mask. */
int simtool_cpulist(const char *s, unsigned int nr_cpus, struct cpuset *mask, char *err);

/*
 * A demand: "busy", "idle", "manual", "duty run=D sleep=D [phase=D]",
 * "periodic period=D run=D [phase=D]". w[0] is the kind; the keys may
 * follow in any order. Words used are flagged in `used`.
 */
int simtool_demand(const struct simtool_words *ws, size_t first, bool *used, struct sim_demand *out,
                   char *err);

/* "dom/2" or "dom" (vCPU 0; every vCPU when `all` is given). */
int simtool_vcpus(struct sim *s, const char *ref, bool all, struct sim_vcpu **out, size_t max,
                  size_t *n, char *err);

#endif /* VCPUSCHED_SIMTOOL_H */
