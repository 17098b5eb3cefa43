/* SPDX-License-Identifier: ISC */
/*
 * guardian.h - a small process, forked before the daemon starts any
 * thread, that outlives it. It waits on a pipe; when the daemon's end
 * closes (clean exit, crash, kill -9), it restores every thread still
 * listed in the state file under its daemon's generation, and
 * sched_rt_runtime_us, lets the daemon's v1 hold group go
 * (act_park_hold), then exits. So no managed thread is left at
 * SCHED_FIFO, pinned or frozen. It restores only if no newer daemon owns
 * the file (statefile.h), and at a real-time priority, so that an
 * overloaded housekeeping CPU does not delay it.
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
 * group does not reach it), at SCHED_OTHER while it waits, SCHED_FIFO
 * `rt_prio` while it restores, on the CPUs in `cpus` (NULL: unchanged).
 * `hold`: the daemon's v1 hold group (NULL or "": none).
 */
int guardian_start(struct guardian *g, struct statefile *sf, const cpu_set_t *cpus, int rt_prio,
                   const char *hold, char *err, size_t errlen);
/* Clean stop: the daemon has restored everything; close and reap. */
void guardian_stop(struct guardian *g);
/* True if the guardian process is still there (to restart it otherwise). */
int guardian_alive(const struct guardian *g);

#endif /* VCPUSCHED_GUARDIAN_H */
