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

#endif /* VCPUSCHED_DISCOVER_H */
