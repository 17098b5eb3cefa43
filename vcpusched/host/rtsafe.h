/* SPDX-License-Identifier: ISC */
/*
 * rtsafe.h - whether real-time throttling may be turned off on the running
 * kernel, judged from text (pure; unit-tested on inputs).
 *
 * With throttling off (sched_rt_runtime_us -1, or a runtime as long as the
 * period), a SCHED_FIFO thread that never blocks keeps its CPU for good.
 * Since Linux 6.12 the fair server (a deadline server for the fair class)
 * still gives SCHED_OTHER tasks, the kernel's per-CPU threads among them,
 * a share of every CPU. Before it (Debian 12's 6.1), nothing does: the
 * per-CPU kworkers and RCU's threads of a busy managed CPU never run, and
 * RCU stalls hang the host (the real-host rig did, tests/rig/README.md).
 */
#ifndef VCPUSCHED_RTSAFE_H
#define VCPUSCHED_RTSAFE_H

#include <stdbool.h>
#include <stdint.h>

/* Where debugfs shows the fair server (6.12+, when debugfs is mounted). */
#define RTSAFE_FAIR_SERVER_PATH "/sys/kernel/debug/sched/fair_server"
#define RTSAFE_DEBUGFS_SCHED    "/sys/kernel/debug/sched"

/*
 * True if the kernel has the fair server: `debugfs` says so when it could
 * be read (1: RTSAFE_FAIR_SERVER_PATH exists, 0: RTSAFE_DEBUGFS_SCHED is
 * readable without it, -1: unreadable: not mounted, or no permission), else
 * `release` (uname -r, "6.1.0-28-cloud-amd64") is 6.12 or later.
 */
bool rtsafe_fair_server(const char *release, int debugfs);
/* True if runtime_us turns throttling off: negative, or at least the period. */
bool rtsafe_unlimited(int64_t runtime_us, int64_t period_us);

#endif /* VCPUSCHED_RTSAFE_H */
