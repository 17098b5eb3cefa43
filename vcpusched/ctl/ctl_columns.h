/* SPDX-License-Identifier: ISC */
/*
 * ctl_columns.h - plain-text tables for vcpuschedctl: columns as wide as
 * their widest cell, two spaces apart, numbers right-aligned, no trailing
 * blanks, so the output both reads well and survives `grep` and `awk`.
 */
#ifndef VCPUSCHED_CTL_COLUMNS_H
#define VCPUSCHED_CTL_COLUMNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CTL_COLUMNS_MAX      16  /* the widest table (stats) has 12 */
#define CTL_COLUMNS_SPEC_MAX 256 /* header specs are short literals */

struct ctl_columns {
    size_t nr_cols;
    char spec[CTL_COLUMNS_SPEC_MAX]; /* header names point in here */
    const char *head[CTL_COLUMNS_MAX];
    bool right[CTL_COLUMNS_MAX]; /* right-aligned (numbers) */
    char **cells;                /* nr_rows * nr_cols, row-major */
    size_t nr_rows, cap_rows;
    size_t col; /* next cell of the last row */
    bool oom;
};

/*
 * Start a table from a header spec: names separated by blanks, a name
 * starting with '>' is right-aligned ("DOMAIN POOL >CPU >RUN").
 */
void ctl_columns_init(struct ctl_columns *t, const char *spec);
/* Start a new row; cells fill it left to right. */
void ctl_columns_row(struct ctl_columns *t);
/* The next cell of the current row; control bytes are shown as '?'. */
void ctl_columns_cell(struct ctl_columns *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Print with `indent` before each line; -ENOMEM if a cell was lost. */
int ctl_columns_print(const struct ctl_columns *t, FILE *f, const char *indent);
void ctl_columns_free(struct ctl_columns *t);

#endif /* VCPUSCHED_CTL_COLUMNS_H */
