/* SPDX-License-Identifier: ISC */
/*
 * assert.c - what a broken invariant does (assert.h): say where, then abort
 * (a core dump beats running on with a corrupt state; the guardian then
 * restores every managed thread).
 */
#include <stdio.h>
#include <stdlib.h>

#include "assert.h"

#if defined(VS_ASSERTIONS) && VS_ASSERTIONS
void
vs_assert_fail(const char *cond, const char *file, int line, const char *func)
{
    fprintf(stderr, "%s:%d: %s: invariant broken: %s\n", file, line, func, cond);
    abort();
}
#endif
