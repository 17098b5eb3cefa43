/* SPDX-License-Identifier: ISC */
/*
 * reload.h - what SIGHUP applies to a running daemon from its re-read
 * configuration (vcpuschedd(8), RELOAD): pools and their policies and
 * parameters, and the log level; everything else waits for a restart.
 */
#ifndef VCPUSCHED_RELOAD_H
#define VCPUSCHED_RELOAD_H

#include <sched.h>

#include "config.h"
#include "handlers.h"

struct reload_result {
    unsigned int applied; /* changes made */
    unsigned int refused; /* changes found but not made (each one logged) */
};

/*
 * Apply `next` (defaults, file, then the command line, as at start-up)
 * to the daemon that started with `started`, on the control thread:
 * - the log level;
 * - each pool `next` names: created if missing; its policy switched if
 *   it differs from the running one (its parameters then are exactly
 *   the file's, defaults for the rest); else the parameters whose running
 *   value differs from the file's are set (parameters the file does not
 *   name keep their values); its CPUs changed live where they differ
 *   (daemon_pool_resize);
 * - pools `next` does not name are kept;
 * - any other setting that differs from `started` is refused: it needs
 *   a restart.
 * Every change and every refusal is logged; a refused pool is unchanged.
 */
void reload_apply(struct daemon_ctx *ctx, const struct config *started, const struct config *next,
                  const cpu_set_t *online, struct reload_result *res);

#endif /* VCPUSCHED_RELOAD_H */
