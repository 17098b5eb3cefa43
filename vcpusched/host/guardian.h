/* SPDX-License-Identifier: ISC */
/*
 * guardian.h - a small process, forked before the daemon starts any
 * thread, that outlives it. It restores every thread still listed in the
 * state file under its daemon's generation, and sched_rt_runtime_us:
 *  - when the daemon's end of a pipe closes (clean exit, crash, kill -9);
 *  - when the daemon lives but is stuck (stopped, a dispatcher spinning or
 *    blocked): every WATCHDOG_PERIOD_NS it reads the dispatchers'
 *    heartbeats and, on a CPU whose dispatcher made no pass for the bound
 *    (the state file's watch->bound_ms) while a managed thread there waited
 *    to run for as long (watchdog.h), it stops the daemon (SIGSTOP),
 *    restores as on its death, counts the trip in the state file, and
 *    ends it (SIGKILL) for its service manager to restart; at its death it
 *    restores again, in case a daemon thread stuck in the kernel finished
 *    a change meanwhile.
 * Then it lets the daemon's v1 hold group go (act_park_hold). So no
 * managed thread is left at SCHED_FIFO, pinned or frozen. It restores
 * only its own generation's threads and only while no newer daemon owns
 * the file (statefile.h). It runs at a real-time priority above the
 * dispatchers' all along, so that neither an overloaded housekeeping CPU
 * nor a dedicated dispatcher spinning there delays it.
 */
#ifndef VCPUSCHED_GUARDIAN_H
#define VCPUSCHED_GUARDIAN_H

#include <sched.h>
#include <stddef.h>
#include <sys/types.h>

#include "statefile.h"

struct guardian {
    pid_t pid;
    int fd; /* the daemon's end of the pipe */
};

/*
 * Fork the guardian; it shares the state file mapping `sf` (of generation
 * sf->gen). It runs in its own session (a signal to the daemon's process
 * group does not reach it), at SCHED_FIFO `rt_prio` (refused in a cpu
 * cgroup without real-time runtime: then as it was, and it says so), on
 * the CPUs in `cpus` (NULL: unchanged).
 * `hold`: the daemon's v1 hold group (NULL or "": none).
 */
int guardian_start(struct guardian *g, struct statefile *sf, const cpu_set_t *cpus, int rt_prio,
                   const char *hold, char *err, size_t errlen);
/* Clean stop: the daemon has restored everything; close and reap. */
void guardian_stop(struct guardian *g);
/* True if the guardian process is still there (to restart it otherwise). */
int guardian_alive(const struct guardian *g);

#endif /* VCPUSCHED_GUARDIAN_H */
