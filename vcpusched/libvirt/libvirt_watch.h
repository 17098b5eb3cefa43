/* SPDX-License-Identifier: ISC */
/*
 * libvirt_watch.h - the daemon's libvirt watcher (docs/libvirt.md): a thread of
 * its own that follows libvirt's metadata-change and lifecycle events and
 * hands each domain's <vs:sched> metadata to the daemon through a small
 * ops table (the daemon implements it with the core's calls: this folder
 * never includes core/). It reconnects with back-off when libvirtd goes
 * away and, on every (re)connect, offers every running domain for attach.
 */
#ifndef VCPUSCHED_LIBVIRT_WATCH_H
#define VCPUSCHED_LIBVIRT_WATCH_H

#include <stddef.h>

#include "libvirt_meta.h"

struct libvirt_watch;

#define LIBVIRT_DEFAULT_URI "qemu:///system"

enum libvirt_sync {
    LIBVIRT_SYNC_FULL,        /* a metadata change: attach, update, move or detach */
    LIBVIRT_SYNC_ATTACH_ONLY, /* start, resync: attach if opted in and not attached */
};

/*
 * What the watcher asks of the daemon. Called on the watcher's thread, one
 * call at a time; each must return promptly and never call libvirt (the
 * watcher's connection is single-threaded and a hook may hold a domain's
 * lock) nor wait on the control thread.
 */
struct libvirt_watch_ops {
    /*
     * Bring running domain `name` in line with its metadata `m` (m->present
     * false: no element). 0 with `what` a few words for the log
     * ("attached", "moved to pool p2"; "": nothing to do), or -errno with
     * `err`; a refusal changes nothing.
     */
    int (*sync)(void *ctx, const char *name, const struct libvirt_meta *m, enum libvirt_sync mode,
                char *what, size_t whatlen, char *err, size_t errlen);
    /* Domain `name` stopped: detach it. 0, -ENOENT if it was not attached. */
    int (*stopped)(void *ctx, const char *name, char *err, size_t errlen);
    /* Running domain `name` has a <vs:sched> element that does not parse (`err`). */
    void (*invalid)(void *ctx, const char *name, const char *err);
};

/*
 * Start watching `uri`, handing changes to ops (with `ctx`), which must
 * outlive the watcher. libvirtd being down is not an error (the watcher
 * retries). Call after signals are blocked. Returns 0, or -ENOTSUP
 * (built without libvirt) / -errno with `err`.
 */
int libvirt_watch_start(struct libvirt_watch **out, const char *uri,
                        const struct libvirt_watch_ops *ops, void *ctx, char *err, size_t errlen);

/* Stop the thread and close the connection (NULL: nothing to do). */
void libvirt_watch_stop(struct libvirt_watch *w);

#endif /* VCPUSCHED_LIBVIRT_WATCH_H */
