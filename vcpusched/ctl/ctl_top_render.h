/* SPDX-License-Identifier: ISC */
/*
 * ctl_top_render.h - a frame of `vcpuschedctl top` as plain text: a
 * header with the daemon's and the host's totals, a table of pools and
 * one of domains with their vCPUs. The same text goes to a terminal
 * (clipped to its size) and, in batch mode, to a pipe.
 */
#ifndef VCPUSCHED_CTL_TOP_RENDER_H
#define VCPUSCHED_CTL_TOP_RENDER_H

#include <stdbool.h>
#include <stdio.h>

#include "ctl_top_model.h"

struct top_view {
    enum top_sort sort;
    bool vcpus;         /* a row per vCPU under its domain */
    double delay_s;     /* the refresh interval, as shown */
    const char *status; /* a line under the totals (an error, the keys); NULL: none */
};

/* Write the frame, each line ending in '\n'. Returns 0 or -ENOMEM. */
int top_render(FILE *f, const struct top_sample *s, const struct top_view *v);

#endif /* VCPUSCHED_CTL_TOP_RENDER_H */
