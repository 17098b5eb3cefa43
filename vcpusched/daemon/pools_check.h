/* SPDX-License-Identifier: ISC */
/*
 * pools_check.h - the configured pools, checked before anything changes:
 * at start-up (a refusal is exit 2) and at a reload (nothing changes).
 */
#ifndef VCPUSCHED_POOLS_CHECK_H
#define VCPUSCHED_POOLS_CHECK_H

#include <sched.h>
#include <stddef.h>

#include "config.h"

/*
 * Each pool of `c` (defaulted: pools_default) as it would be created on
 * the CPUs `online` allows: its CPU list, policy and parameters go through
 * the same pure code that creates it (pool_init), so every refusal a start
 * or a reload would meet later is found here. 0, or -errno with `err`
 * naming the pool's line ("FILE:LINE: pool main: tslice_ms: ...").
 */
int pools_check(const struct config *c, const cpu_set_t *online, char *err, size_t errlen);

#endif /* VCPUSCHED_POOLS_CHECK_H */
