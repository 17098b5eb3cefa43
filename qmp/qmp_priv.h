/* SPDX-License-Identifier: ISC */
/*
 * qmp_priv.h - helpers shared by the libqmp source files; not installed,
 * not part of the API in qmp.h.
 */
#ifndef QMP_PRIV_H
#define QMP_PRIV_H

#include <stddef.h>

#include "qmp.h"

/*
 * QMP_ASSERT: the library's own invariants, on where vcpusched's
 * VS_ASSERT is (VS_ASSERTIONS); libqmp stands alone, so its own copy.
 */
#if defined(VS_ASSERTIONS) && VS_ASSERTIONS
#include <stdio.h>
#include <stdlib.h>
#define QMP_ASSERT(cond)                                                                           \
    ((cond)                                                                                        \
         ? (void)0                                                                                 \
         : (fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond), abort()))
#else
#define QMP_ASSERT(cond) ((void)sizeof(!(cond)))
#endif

/* printf into the caller's errbuf (NULL or zero-sized: do nothing). */
void qmp_errf(char *errbuf, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* QMP_PRIV_H */
