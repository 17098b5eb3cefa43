/* SPDX-License-Identifier: ISC */
/*
 * kv.c - splitting "key=value" words (kv.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kv.h"

int
kv_split(char *s, struct kv *kv, size_t max, size_t *n, char *err, size_t errlen)
{
    char *save = NULL, *tok;

    *n = 0;
    for (tok = strtok_r(s, " \t\n", &save); tok != NULL; tok = strtok_r(NULL, " \t\n", &save)) {
        char *eq = strchr(tok, '=');

        if (eq == NULL || eq == tok) {
            snprintf(err, errlen, "'%.32s' is not key=value", tok);
            return -EINVAL;
        }
        if (*n == max) {
            snprintf(err, errlen, "more than %zu parameters", max);
            return -E2BIG;
        }
        *eq = '\0';
        kv[*n].key = tok;
        kv[*n].val = eq + 1;
        (*n)++;
    }
    return 0;
}
