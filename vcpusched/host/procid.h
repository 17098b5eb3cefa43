/* SPDX-License-Identifier: ISC */
/*
 * procid.h - who a process is, beyond its pid: a pid is reused once its
 * process exits, so a process named again after a restart (the daemon's
 * live record) is known by its start time (/proc/<pid>/stat field 22,
 * clock ticks after boot: two processes of one boot that share a pid never
 * share it) and its executable's device and inode (those of a binary
 * deleted or replaced since, as QEMU's after an upgrade, stay), within
 * the boot that /proc/sys/kernel/random/boot_id names.
 */
#ifndef VCPUSCHED_PROCID_H
#define VCPUSCHED_PROCID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROCID_BOOT_ID_SIZE 37 /* a UUID and its NUL */

struct procid {
    uint64_t start_time;
    uint64_t exe_dev, exe_ino; /* 0, 0: not readable (a kernel thread, no permission) */
};

/* Process `pid` now: -ESRCH if there is none. */
int procid_read(pid_t pid, struct procid *id);
bool procid_same(const struct procid *a, const struct procid *b);
/*
 * Why b is not a (the first field that differs), for a log line; ""
 * when they are the same.
 */
const char *procid_differs(const struct procid *a, const struct procid *b);
/* This boot's id into out[PROCID_BOOT_ID_SIZE]. */
int procid_boot_id(char *out, size_t len);

#endif /* VCPUSCHED_PROCID_H */
