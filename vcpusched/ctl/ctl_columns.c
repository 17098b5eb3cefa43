/* SPDX-License-Identifier: ISC */
/*
 * ctl_columns.c - column layout for vcpuschedctl's tables.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_columns.h"

void
ctl_columns_init(struct ctl_columns *t, const char *spec)
{
    char *save = NULL, *tok;

    memset(t, 0, sizeof(*t));
    snprintf(t->spec, sizeof(t->spec), "%s", spec);
    for (tok = strtok_r(t->spec, " ", &save); tok != NULL && t->nr_cols < CTL_COLUMNS_MAX;
         tok = strtok_r(NULL, " ", &save)) {
        t->right[t->nr_cols] = tok[0] == '>';
        t->head[t->nr_cols++] = tok + (tok[0] == '>');
    }
}

void
ctl_columns_row(struct ctl_columns *t)
{
    if (t->nr_rows == t->cap_rows) {
        size_t cap = t->cap_rows ? 2 * t->cap_rows : 16;
        char **c = realloc(t->cells, cap * t->nr_cols * sizeof(*c));

        if (c == NULL) {
            t->oom = true;
            return;
        }
        t->cells = c;
        t->cap_rows = cap;
    }
    for (size_t i = 0; i < t->nr_cols; i++)
        t->cells[t->nr_rows * t->nr_cols + i] = NULL;
    t->nr_rows++;
    t->col = 0;
}

void
ctl_columns_cell(struct ctl_columns *t, const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    int n;

    if (t->nr_rows == 0 || t->col >= t->nr_cols)
        return;
    va_start(ap, fmt);
    n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0) {
        t->oom = true;
        s = NULL;
    }
    for (char *p = s; p != NULL && *p != '\0'; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    t->cells[(t->nr_rows - 1) * t->nr_cols + t->col++] = s;
}

static const char *
cell(const struct ctl_columns *t, size_t row, size_t col)
{
    const char *s = t->cells[row * t->nr_cols + col];

    return s != NULL ? s : "";
}

static void
print_line(const struct ctl_columns *t, FILE *f, const char *indent, const size_t *width,
           const char *const *text)
{
    size_t last = t->nr_cols;

    /* Trailing empty left-aligned cells would only add blanks. */
    while (last > 0 && !t->right[last - 1] && text[last - 1][0] == '\0')
        last--;
    fputs(indent, f);
    for (size_t c = 0; c < last; c++) {
        int pad = (int)(width[c] - strlen(text[c]));

        if (c > 0)
            fputs("  ", f);
        if (t->right[c])
            fprintf(f, "%*s%s", pad, "", text[c]);
        else if (c + 1 < last)
            fprintf(f, "%s%*s", text[c], pad, "");
        else
            fputs(text[c], f);
    }
    fputc('\n', f);
}

int
ctl_columns_print(const struct ctl_columns *t, FILE *f, const char *indent)
{
    size_t width[CTL_COLUMNS_MAX];
    const char *text[CTL_COLUMNS_MAX];

    for (size_t c = 0; c < t->nr_cols; c++) {
        width[c] = strlen(t->head[c]);
        for (size_t r = 0; r < t->nr_rows; r++)
            if (strlen(cell(t, r, c)) > width[c])
                width[c] = strlen(cell(t, r, c));
    }
    print_line(t, f, indent, width, t->head);
    for (size_t r = 0; r < t->nr_rows; r++) {
        for (size_t c = 0; c < t->nr_cols; c++)
            text[c] = cell(t, r, c);
        print_line(t, f, indent, width, text);
    }
    return t->oom ? -ENOMEM : 0;
}

void
ctl_columns_free(struct ctl_columns *t)
{
    for (size_t i = 0; i < t->nr_rows * t->nr_cols; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof(*t));
}
