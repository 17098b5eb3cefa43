/* SPDX-License-Identifier: ISC */
/*
 * watchdog.h - the guardian's judgement that its daemon is alive but
 * stuck: pure (no system call, no clock; time is an argument), so that it
 * is unit-tested on recorded samples (tests/unit/test_watchdog.c).
 *
 * Two facts must hold together, each for longer than the bound:
 *  - a CPU's dispatcher made no progress: its heartbeat (statefile.h) is
 *    older than the bound. A live dispatcher passes at least every
 *    WATCHDOG_BEAT_NS, busy or idle (an idle one wakes from epoll for it),
 *    so an old heartbeat means stopped, spinning without finishing a pass,
 *    blocked, or starved by something above its priority;
 *  - a managed thread of that CPU waited to run all along: runnable ('R'
 *    in /proc/TID/stat) while its run time and run count in
 *    /proc/TID/schedstat did not move between samples.
 * A long wait behind a live dispatcher (Credit's queue of 30 ms slices, a
 * background vCPU held up to alpha) has fresh heartbeats; a parked thread
 * is frozen, not runnable; an idle CPU has no waiting thread. None trips.
 *
 * Threads are sampled only on a CPU whose heartbeat is older than
 * WATCHDOG_SUSPECT_NS, so a healthy host costs the guardian a read of the
 * heartbeats per round and no /proc access. A thread's wait is counted
 * from the first sample of such a streak, so a trip comes about
 * bound + WATCHDOG_SUSPECT_NS + one period after the dispatcher stopped.
 *
 * A running thread's run time moves at every scheduler tick. On a
 * nohz_full CPU a lone FIFO thread may see its run time updated only once
 * a second (the remote tick): it may look waiting, but then its CPU's
 * dispatcher must also have been silent for the bound to trip, and that
 * dispatcher is stuck whatever the thread does.
 */
#ifndef VCPUSCHED_WATCHDOG_H
#define VCPUSCHED_WATCHDOG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/limits.h"

/* A live dispatcher passes at least this often (core/dispatch.c). */
#define WATCHDOG_BEAT_NS (100 * NSEC_PER_MSEC)
/* The guardian's round (and sampling) period. */
#define WATCHDOG_PERIOD_NS (100 * NSEC_PER_MSEC)
/* A heartbeat this old makes its CPU's threads worth sampling. */
#define WATCHDOG_SUSPECT_NS (3 * WATCHDOG_BEAT_NS)
/* The bound: default and accepted range (config key watchdog-ms; 0 = off). */
#define WATCHDOG_BOUND_MS_DEFAULT 1000
#define WATCHDOG_BOUND_MS_MIN     500
#define WATCHDOG_BOUND_MS_MAX     60000

/* What /proc says of a thread at one sample. */
struct watchdog_sample {
    char state;       /* /proc/TID/stat field 3 ('R' runnable or running) */
    uint64_t exec_ns; /* /proc/TID/schedstat: time run */
    uint64_t pcount;  /* and times switched in */
};

/* A thread as the guardian follows it between samples. */
struct watchdog_thread {
    pid_t tid;        /* 0: not followed */
    uint64_t exec_ns; /* at the last sample */
    uint64_t pcount;
    uint64_t since_ns; /* the first sample of its waiting streak; 0: not runnable */
};

/* True if a CPU whose dispatcher last passed at pass_ns is worth sampling at now. */
bool watchdog_cpu_suspect(uint64_t pass_ns, uint64_t now);
/* Fold in a sample of thread tid taken at now (a new tid starts afresh). */
void watchdog_thread_update(struct watchdog_thread *t, pid_t tid, const struct watchdog_sample *s,
                            uint64_t now);
/* Stop following (its CPU's dispatcher passes again, or it went away). */
void watchdog_thread_forget(struct watchdog_thread *t);
/* How long the thread has waited to run, as seen at now (0: not runnable). */
uint64_t watchdog_waited(const struct watchdog_thread *t, uint64_t now);
/*
 * The trip: a thread of a CPU whose dispatcher last passed at pass_ns has
 * waited waited_ns at now, against bound_ns (0: never).
 */
bool watchdog_trips(uint64_t bound_ns, uint64_t now, uint64_t pass_ns, uint64_t waited_ns);
/*
 * One round for one thread, as the guardian does it: on a CPU whose
 * dispatcher last passed at pass_ns, with sample s (NULL: not taken, the
 * thread is gone). A CPU that is not suspect forgets its threads. Returns
 * how long the thread has waited if it trips, else 0.
 */
uint64_t watchdog_thread_round(struct watchdog_thread *t, pid_t tid, uint64_t pass_ns,
                               const struct watchdog_sample *s, uint64_t now, uint64_t bound_ns);

#endif /* VCPUSCHED_WATCHDOG_H */
