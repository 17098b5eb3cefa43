/* SPDX-License-Identifier: ISC */
/*
 * handlers.h - the daemon side of the control protocol.
 */
#ifndef VCPUSCHED_HANDLERS_H
#define VCPUSCHED_HANDLERS_H

#include <sched.h>

#include "control/control.h"
#include "control/ctl_proto.h"
#include "core/sched_core.h"
#include "libvirt/libvirt_meta.h"
#include "libvirt/libvirt_watch.h"

#include "common/version.h"

/*
 * Shared by the control thread and the libvirt watcher's thread (through
 * daemon_libvirt_ops): the core locks itself; the rest is written by the
 * control thread only, guardian_pid atomically as the watcher reads it.
 */
struct daemon_ctx {
    struct sched *sched;
    cpu_set_t housekeeping;        /* CPUs left to the host, the daemon and QEMU's other threads */
    const char *libvirt_dir;       /* libvirt's status files (NULL: LIBVIRT_RUN_DIR) */
    _Atomic pid_t guardian_pid;    /* never managed; main.c keeps it current */
    struct control *ctl;           /* for its counters in `stats` */
    struct statefile *sf;          /* the watchdog's record, for `stats` */
    struct unattached *unattached; /* opted-in libvirt domains not managed, and why */
    /*
     * Called after each request, before its answer (control thread): the
     * live record is written before a client hears that something changed.
     */
    void (*changed)(void *arg);
    void *changed_arg;
};

/* control_handler_fn for the daemon (see control.h). */
int daemon_handle(void *ctx, const struct ctl_request *req, const struct control_peer *peer,
                  struct json_object **res, char *err, size_t errlen);
/*
 * The QEMU and vCPU threads of running libvirt domain `domain` from
 * libvirt's status file, checked as for any attach; `meta` (or NULL) gets
 * its running definition's metadata. With `live_only`, thread ids of
 * threads that have exited are left out instead of refused (libvirt may
 * keep an unplugged vCPU in the file when QEMU does not report its
 * removal). Never calls libvirt.
 */
int daemon_libvirt_threads(struct daemon_ctx *d, const char *domain, pid_t *pid, pid_t *tids,
                           unsigned int *n, struct libvirt_meta *meta, bool live_only, char *err,
                           size_t errlen);

/* libvirt_ops.c: the watcher's ops (ctx: the daemon_ctx) and the `hook` request. */
extern const struct libvirt_watch_ops daemon_libvirt_ops;
int daemon_libvirt_hook(struct daemon_ctx *d, const struct ctl_request *req,
                        struct json_object **res, char *err, size_t errlen);
/*
 * Attach running libvirt domain `name` per its <vs:sched> element, as the
 * hook does (threads and metadata from libvirt's status file). 1 if it has
 * no such element (nothing done).
 */
int daemon_libvirt_attach(struct daemon_ctx *d, const char *name, char *err, size_t errlen);

int daemon_check_pool_cpus(struct daemon_ctx *d, const int *cpus, unsigned int n, char *err,
                           size_t errlen);
/*
 * Create a pool on host CPUs hosts[0..n) as `vcpuschedctl pool create`
 * does: refused if it would take the last housekeeping CPU; the
 * housekeeping set follows.
 */
int daemon_pool_create(struct daemon_ctx *d, const char *name, const int *hosts, unsigned int n,
                       const char *policy, const struct kv *kv, size_t nkv, char *err,
                       size_t errlen);
/* A running pool's CPUs changed (sched_pool_resize), the housekeeping CPUs following. */
int daemon_pool_resize(struct daemon_ctx *d, const char *name, const int *hosts, unsigned int n,
                       char *err, size_t errlen);
int daemon_pool_cpus(const char *list, const cpu_set_t *online, int *cpus, unsigned int *n,
                     char *err, size_t errlen);

#endif /* VCPUSCHED_HANDLERS_H */
