/* SPDX-License-Identifier: ISC */
/*
 * discover.h - find the threads to manage: every thread of a process, a
 * list of thread ids checked against their process, or the vCPU threads
 * of a QEMU found through QMP.
 *
 * All functions fill tids[0..*n) (at most `max`) and the owning process,
 * or fail with -errno and a message: -ESRCH for a missing process or
 * thread, -EINVAL for threads of several processes or duplicates.
 */
#ifndef VCPUSCHED_DISCOVER_H
#define VCPUSCHED_DISCOVER_H

#include <stdbool.h>
#include <sched.h>
#include <stddef.h>
#include <sys/types.h>

#define DISCOVER_QMP_TIMEOUT_MS 3000

int discover_process(pid_t pid, pid_t *tids, unsigned int max, unsigned int *n, char *err,
                     size_t errlen);
/* *pid may be 0 (found from the threads) or the expected process. */
int discover_tids(pid_t *pid, const pid_t *in, unsigned int nin, pid_t *tids, unsigned int max,
                  unsigned int *n, char *err, size_t errlen);
/*
 * Ask QEMU at QMP socket `path` for its vCPU threads (query-cpus-fast). The
 * process is the socket's peer (SO_PEERCRED); every thread id must be a
 * distinct live thread of it, other than its main thread.
 */
int discover_qmp(const char *path, pid_t *pid, pid_t *tids, unsigned int max, unsigned int *n,
                 char *err, size_t errlen);
/* Check vCPU thread ids reported for QEMU process `pid` (same rules). */
int discover_check_vcpus(pid_t pid, const pid_t *tids, unsigned int n, char *err, size_t errlen);

/* Who asks for an attach, and who must never be managed. */
struct discover_rules {
    pid_t daemon;     /* the daemon itself */
    pid_t guardian;   /* its guardian (0: none) */
    pid_t caller;     /* the peer asking (SO_PEERCRED), 0 if unknown */
    bool any_process; /* attach --any-process: drop the QEMU-or-caller's rule */
};

/*
 * May process `pid` be managed? Never pid 1, a kernel thread, the daemon
 * or its guardian (-EPERM with the reason). For a target named by pid or
 * thread ids (`named`), also only a QEMU or a process started from where
 * the caller runs (a strict descendant of the caller's parent: the shell
 * or test that runs vcpuschedctl, not that shell itself), unless
 * `any_process`. QMP and libvirt targets are QEMU's vCPU threads already.
 * Reads /proc only.
 */
int discover_check_target(pid_t pid, bool named, const struct discover_rules *rules, char *err,
                          size_t errlen);

/* A thread discover_runnable_on found. */
struct discover_runnable {
    pid_t pid, tid;
    int cpu;
    char comm[16];
};
/*
 * The user threads (kernel threads left out) /proc shows runnable ('R') on
 * a CPU of `cpus`, their process and CPU: up to `max` in out. Returns how
 * many it found (more than `max`: only `max` written), or -errno. A walk
 * of /proc/<pid>/task/<tid>/stat: about 5 us a thread.
 */
int discover_runnable_on(const cpu_set_t *cpus, struct discover_runnable *out, unsigned int max);

/* A vhost worker that is a kernel thread, and the process it works for. */
struct discover_vhost {
    pid_t owner, tid;
};
/*
 * The vhost workers that are kernel threads: before Linux 6.4, a QEMU's
 * vhost-net (vsock, scsi) devices are served by kthreadd's children named
 * "vhost-<QEMU's pid>", not by threads of the QEMU (discover_process finds
 * those since 6.4). Up to `max` in out; returns how many it found (more
 * than `max`: only `max` written), or -errno. Reads kthreadd's children
 * list (/proc/2/task/2/children, else every /proc entry) and each one's
 * stat: a few microseconds a kernel thread.
 */
int discover_vhost_kthreads(struct discover_vhost *out, unsigned int max);
#endif /* VCPUSCHED_DISCOVER_H */
