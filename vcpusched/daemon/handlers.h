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

#include "common/version.h"

/* Finds a libvirt domain's QEMU and vCPU threads (libvirt_vcpus.c). */
typedef int (*daemon_libvirt_fn)(void *ctx, const char *domain, pid_t *pid, pid_t *tids,
                                 unsigned int max, unsigned int *n, char *err, size_t errlen);

struct daemon_ctx {
    struct sched *sched;
    cpu_set_t housekeeping; /* CPUs left to the host, the daemon and QEMU's other threads */
    daemon_libvirt_fn libvirt_vcpus;
    void *libvirt_ctx;
    pid_t guardian_pid;  /* never managed; main.c keeps it current */
    struct control *ctl; /* for its counters in `stats` */
};

/* control_handler_fn for the daemon (see control.h). */
int daemon_handle(void *ctx, const struct ctl_request *req, const struct control_peer *peer,
                  struct json_object **res, char *err, size_t errlen);
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
int daemon_pool_cpus(const char *list, const cpu_set_t *online, int *cpus, unsigned int *n,
                     char *err, size_t errlen);

#endif /* VCPUSCHED_HANDLERS_H */
