/* SPDX-License-Identifier: ISC */
/*
 * restore.h - what a starting daemon takes up again from its
 * predecessor's live record (docs/lifecycle.md): the pools made at run
 * time, then every domain, however it was attached, with the parameters
 * it had, once its process is known to be the same one.
 */
#ifndef VCPUSCHED_RESTORE_H
#define VCPUSCHED_RESTORE_H

#include "handlers.h"
#include "liverec.h"

struct restore_result {
    unsigned int pools;   /* pools made again */
    unsigned int domains; /* domains attached again */
    unsigned int dropped; /* entries not acted on (each logged, and why) */
};

/*
 * On the control thread at start-up, after the configured pools and
 * before the libvirt watcher. `conf[0..n)` names the configured pools:
 * the record's pools of those names are the configuration's now and are
 * not made again. A record of another boot is not acted on at all.
 * Domains:
 * - pid, tids: the process must still be the one attached (start time,
 *   executable); every thread of it, or the listed ones, are attached;
 * - qmp: the socket must be the same (device, inode), its peer the same
 *   process, and the vCPU threads are QMP's now;
 * - libvirt: the domain's QEMU (libvirt's status file) must be the same
 *   process; one whose running definition has a <vs:sched> element is
 *   attached per that element, as the hook would (the definition wins
 *   over the record), any other with the record's pool and parameters.
 * Parameters the pool's policy does not know are left out (and logged).
 * Every entry not taken up is logged with the reason.
 */
void restore_run(struct daemon_ctx *ctx, const struct liverec *rec, char (*conf)[VS_NAME_SIZE],
                 unsigned int n, struct restore_result *res);

#endif /* VCPUSCHED_RESTORE_H */
