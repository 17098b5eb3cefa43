/* SPDX-License-Identifier: ISC */
/*
 * live.h - the live record of what runs (livefile.h), kept current from
 * the control loop and taken up again at start (restore.h): a restart,
 * a crash or an upgrade keeps the domains, however attached, with their
 * parameters, and the pools made at run time (docs/lifecycle.md).
 */
#ifndef VCPUSCHED_LIVE_H
#define VCPUSCHED_LIVE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "handlers.h"

struct live {
    struct daemon_ctx *ctx;
    char path[PATH_MAX];
    char conf[SCHED_MAX_POOLS][VS_NAME_SIZE]; /* the pools the configuration makes */
    unsigned int nr_conf;
    uint64_t saved; /* sched_changes when last written */
    bool ok;        /* the last write succeeded */
};

/*
 * At start, after the configured pools (cfg's) and before the libvirt
 * watcher and READY: take up what the previous daemon left beside state
 * file `state`, then write what runs now. A record that cannot be read
 * or is refused is set aside (STATE.live.bad) and nothing is taken up.
 */
void live_restore(struct live *l, struct daemon_ctx *ctx, const char *state,
                  const struct config *cfg);
/* The configuration's pools changed (a reload): those are not recorded. */
void live_conf_pools(struct live *l, const struct config *cfg);
/*
 * Write the record again if pools or domains changed since: after each
 * request (daemon_ctx.changed) and at each housekeeping tick (the
 * watcher's and the reaper's changes). Never while stopping, so the
 * record lists what the next daemon takes up.
 */
void live_save(struct live *l);
/* daemon_ctx.changed: live_save(arg). */
void live_changed(void *arg);

#endif /* VCPUSCHED_LIVE_H */
