/* SPDX-License-Identifier: ISC */
/*
 * ctl_top.h - `vcpuschedctl top`: a live view of the daemon's domains,
 * vCPUs and pools on a terminal, refreshed every interval, or frames one
 * after another on stdout in batch mode (-b), as top(1) and xentop(1) do.
 */
#ifndef VCPUSCHED_CTL_TOP_H
#define VCPUSCHED_CTL_TOP_H

#include <stdbool.h>
#include <stddef.h>

#include "ctl_top_model.h"

#define TOP_USAGE                                                                                  \
    "[-b|--batch] [-n|--iterations N] [-d|--delay SECONDS] [-s|--sort cpu|name|wakes|pool] "       \
    "[--no-vcpus]"

struct top_opts {
    double delay_s;     /* -d: between refreshes */
    bool batch;         /* -b: frames to stdout, no terminal control */
    long iterations;    /* -n: frames before exiting; 0: until q */
    enum top_sort sort; /* -s */
    bool vcpus;         /* a row per vCPU (--no-vcpus: domains only) */
};

/*
 * The words after `top` (argv[0] is "top"). Returns 0, or -EINVAL with
 * `err` saying what is wrong.
 */
int ctl_top_parse(struct top_opts *o, int argc, char **argv, char *err, size_t errlen);

/*
 * Run against the daemon at `path`; a sample may take `timeout_ms` (at
 * most 2 s, so that q and Ctrl-C stay prompt). Returns vcpuschedctl's
 * exit status: 0, 1 (the daemon answered with an error), 2 (not a
 * terminal without -b) or 3 (no daemon, or garbage, at the start or, in
 * batch mode, at any sample). On a terminal a daemon lost later is shown
 * in the status line and asked again at every refresh.
 */
int ctl_top_run(const struct top_opts *o, const char *path, int timeout_ms);

#endif /* VCPUSCHED_CTL_TOP_H */
