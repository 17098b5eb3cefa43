/* SPDX-License-Identifier: ISC */
/*
 * qmp_priv.h - helpers shared by the libqmp source files; not installed,
 * not part of the API in qmp.h.
 */
#ifndef QMP_PRIV_H
#define QMP_PRIV_H

#include <stddef.h>

#include "qmp.h"

/* printf into the caller's errbuf (NULL or zero-sized: do nothing). */
void qmp_errf(char *errbuf, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* QMP_PRIV_H */
