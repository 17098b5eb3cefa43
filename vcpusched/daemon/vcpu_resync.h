/* SPDX-License-Identifier: ISC */
/*
 * vcpu_resync.h - the daemon's thread that picks up vCPU hot-plug and
 * unplug of domains attached through libvirt or QMP (vcpu_resync.c).
 */
#ifndef VCPUSCHED_VCPU_RESYNC_H
#define VCPUSCHED_VCPU_RESYNC_H

#include <stddef.h>

#include "handlers.h"

struct vcpu_resync;

/* Start the thread (d must outlive it). 0, or -errno with err. */
int vcpu_resync_start(struct vcpu_resync **out, struct daemon_ctx *d, char *err, size_t errlen);
/* Stop and free it (NULL: nothing to do). */
void vcpu_resync_stop(struct vcpu_resync *r);

#endif /* VCPUSCHED_VCPU_RESYNC_H */
