/* SPDX-License-Identifier: ISC */
/*
 * ctl_metrics.h - the results of `stats` and `list` (docs/protocol.md) as
 * Prometheus metrics, in the OpenMetrics text format (`vcpuschedctl stats
 * --openmetrics`) or the Prometheus text format 0.0.4 that node_exporter's
 * textfile collector reads (the daemon's --metrics-file). One formatter, so
 * both give the same names, labels and values (docs/metrics.md).
 */
#ifndef VCPUSCHED_CTL_METRICS_H
#define VCPUSCHED_CTL_METRICS_H

#include <stdio.h>

struct json_object;

enum ctl_metrics_format {
    CTL_METRICS_OPENMETRICS, /* application/openmetrics-text 1.0.0: # UNIT, info, # EOF */
    CTL_METRICS_PROMETHEUS,  /* text/plain 0.0.4: what node_exporter's textfile collector reads */
};

/*
 * Write the daemon-wide and per-pool metrics of `stats` (a `stats` result)
 * and, when `list` (a `list` result) is not NULL, the per-domain and
 * per-vCPU ones to `f`. Fields the formatter does not know are ignored and
 * missing ones leave their series out, so another daemon version still
 * gives valid output. Returns 0, -EPROTO if `stats` has no pools array or
 * `list` no domains array (nothing is written then), -ENOMEM, or -EIO if
 * writing to `f` failed.
 */
int ctl_metrics_write(FILE *f, struct json_object *stats, struct json_object *list,
                      enum ctl_metrics_format fmt);

#endif /* VCPUSCHED_CTL_METRICS_H */
