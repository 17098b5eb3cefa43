/* SPDX-License-Identifier: ISC */
/*
 * libvirt_vcpus.h - the QEMU process and vCPU threads of a running libvirt
 * domain, found without calling libvirt (so it is safe inside a hook, which
 * runs under libvirt's domain lock, and on the daemon's control thread):
 * libvirt's status file, else the QEMU's thread names. No logging.
 */
#ifndef VCPUSCHED_LIBVIRT_VCPUS_H
#define VCPUSCHED_LIBVIRT_VCPUS_H

#include <stddef.h>
#include <sys/types.h>

#include "libvirt_meta.h"

#define LIBVIRT_RUN_DIR "/run/libvirt/qemu" /* status files of the qemu driver */

/*
 * Domain `name` (checked with names_valid) under `dir` (NULL:
 * LIBVIRT_RUN_DIR): the QEMU pid and vCPU threads tids[0..*n) in vCPU id
 * order from DIR/NAME.xml; when that file lists no thread ids (libvirt
 * drops them for single-threaded TCG), the threads of that QEMU named
 * "CPU n/TCG" or "CPU n/KVM" in index order, else its one "ALL CPUs/TCG"
 * thread. *how is "status" or "comm". `meta`, if not NULL, receives the
 * metadata of the running definition. Errors: -ENOENT (not running: no
 * status file), -EACCES, -EINVAL (malformed), -ESRCH (no vCPU threads),
 * -E2BIG (more than `max`).
 */
int libvirt_vcpus_find(const char *dir, const char *name, pid_t *pid, pid_t *tids, unsigned int max,
                       unsigned int *n, const char **how, struct libvirt_meta *meta, char *err,
                       size_t errlen);

#endif /* VCPUSCHED_LIBVIRT_VCPUS_H */
