/* SPDX-License-Identifier: ISC */
/*
 * metrics_file.h - the daemon's metrics as a file for node_exporter's
 * textfile collector (--metrics-file, docs/metrics.md): what `vcpuschedctl
 * stats --prometheus` prints, rewritten every period from the control
 * loop and replaced atomically, so a scrape never reads half a file.
 */
#ifndef VCPUSCHED_METRICS_FILE_H
#define VCPUSCHED_METRICS_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "handlers.h"

struct metrics_file {
    char path[256]; /* "": no metrics file */
    uint64_t period_ns;
    uint64_t next_ns; /* CLOCK_MONOTONIC of the next write */
    bool failing;     /* the last write failed: said once until one succeeds */
};

/*
 * Whether a file can be written next to `path` (a temporary one is made
 * and removed), so that a wrong path stops the daemon at start-up before
 * it changes anything. 0 or -errno with `err` saying why.
 */
int metrics_file_check(const char *path, char *err, size_t errlen);
/* Start writing `path` every `period_s` seconds, the first time now. */
void metrics_file_start(struct metrics_file *mf, struct daemon_ctx *ctx, const char *path,
                        unsigned int period_s);
/* From the housekeeping loop: write if the period has passed. */
void metrics_file_tick(struct metrics_file *mf, struct daemon_ctx *ctx);
/* At exit: remove the file, so that nothing stale is exported for a stopped daemon. */
void metrics_file_stop(struct metrics_file *mf);

#endif /* VCPUSCHED_METRICS_FILE_H */
