/* SPDX-License-Identifier: ISC */
/*
 * events.h - wake, block, switch and exit events of managed threads.
 *
 * Two backends behind one API. "bpf": a BPF program on the raw tracepoints
 * sched_wakeup(_new), sched_switch and sched_process_exit, filtered in the
 * kernel by a map of watched TIDs, writing kernel-timestamped records to a
 * ring buffer. "proc": /proc/<pid>/task/<tid>/{stat,schedstat} read at each
 * poll, for hosts where BPF cannot be loaded (see events_proc.c for its
 * limits).
 *
 * Per thread, the bpf backend delivers a state machine in kernel order:
 *
 *     [WAKE] RUN STOP(blocked=1) WAKE RUN STOP(blocked=0) RUN ... EXIT
 *
 * WAKE comes only after STOP(blocked=1), or as the first record after
 * events_watch (the thread's state is unknown until its first switch, so
 * one WAKE of an already runnable thread may arrive then: policy wake must
 * be idempotent). RUN comes after WAKE or STOP(blocked=0) (or first), STOP
 * and EXIT only after RUN (or first: the thread was on a CPU at watch
 * time). EXIT is the last record of a tid; the tid is unwatched by then
 * (events_unwatch returns -ENOENT), so its cookie may be reused at once.
 * The kernel does not always fire its tracepoints (on the project's 6.18
 * host about 0.2% of switch-ins, mostly from idle, and some wakes go
 * unreported, to ftrace as well); the program then infers the missing
 * records when the next transition arrives and marks them `inferred`, so
 * the order above always holds.
 *
 * ran_ns (STOP, EXIT) is the kernel's own accounting of the thread's run
 * time (se.sum_exec_runtime, the first field of /proc/<tid>/schedstat)
 * since its previous STOP or since events_watch: exact even when a RUN was
 * missed. A run still open is now_ns - the RUN's ts_ns.
 *
 * The proc backend delivers WAKE, STOP(blocked=1), CHARGE and EXIT only,
 * stamped with the poll's now_ns; run time comes only as CHARGE.
 *
 * Threads: events_poll from one thread at a time (the caller serialises);
 * events_watch, events_unwatch and events_stats from any thread, also while
 * a poll runs. Callbacks run with no lock of this module held. Records
 * already taken from the kernel may still be delivered after
 * events_unwatch returns: match (cookie, tid) before trusting one.
 */
#ifndef VCPUSCHED_EVENTS_H
#define VCPUSCHED_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum events_type {
    EVENTS_WAKE,   /* tid became runnable (sched_wakeup, sched_wakeup_new) */
    EVENTS_RUN,    /* tid switched in on `cpu` at ts_ns */
    EVENTS_STOP,   /* tid switched out at ts_ns after running ran_ns since its RUN;
                      blocked = 1 if it left the runqueue (slept), 0 if preempted */
    EVENTS_EXIT,   /* tid exited; bpf: ran_ns is its run since the last STOP */
    EVENTS_CHARGE, /* proc fallback only: tid consumed ran_ns since its previous CHARGE */
    EVENTS_LOST,   /* bpf: ran_ns records were dropped (ring full) since the last
                      LOST; tid -1, cookie UINT32_MAX. Any thread's records may be
                      missing before it, so the order above may look broken: resync */
};
#define EVENTS_NTYPES 6

/*
 * One record. ts_ns is CLOCK_MONOTONIC (bpf_ktime_get_ns; the poll's now_ns
 * in proc mode). cpu: RUN and STOP the CPU switched on; WAKE the CPU the
 * thread was queued on; -1 where unknown (proc). cookie is the value given
 * to events_watch. The layout is shared with the BPF program (do not
 * reorder: events_bpf.c checks it at compile time).
 */
struct events_rec {
    uint64_t ts_ns;
    uint64_t ran_ns;
    uint32_t cookie;
    int32_t tid;
    int32_t cpu;
    uint8_t type;     /* enum events_type */
    uint8_t blocked;  /* STOP only */
    uint8_t inferred; /* bpf: the kernel did not report this transition; it was
                         inferred from the next one, at that one's ts_ns */
};

enum events_mode {
    EVENTS_AUTO, /* bpf, else proc with the reason in err */
    EVENTS_BPF,
    EVENTS_PROC,
};

/* Most threads watched at once (the BPF map and the proc table). */
#define EVENTS_MAX_THREADS 4096

struct events_stats {
    uint64_t records; /* delivered to callbacks */
    uint64_t by_type[EVENTS_NTYPES];
    uint64_t lost;        /* bpf: dropped because the ring was full */
    uint64_t inferred;    /* bpf: records with `inferred` set */
    uint64_t polls;       /* events_poll calls */
    uint64_t proc_reads;  /* proc: pread calls on stat/schedstat */
    uint64_t ring_bytes;  /* bpf: ring buffer size */
    unsigned int watched; /* threads watched now */
};

struct events;

/*
 * Open an event source. AUTO tries bpf and falls back to proc, leaving the
 * reason in err (err is "" when bpf loaded). BPF fails rather than falling
 * back. Setting the environment variable VCPUSCHED_NO_BPF=1 makes bpf
 * unavailable (a test seam and an operator's escape hatch). Needs root (or
 * CAP_BPF + CAP_PERFMON) for bpf. Returns 0 or -errno; *out is set only on
 * success.
 */
int events_open(struct events **out, enum events_mode mode, char *err, size_t errlen);

/* "bpf" or "proc". */
const char *events_backend(const struct events *ev);

/*
 * Start delivering records of thread tid of process pid, each carrying
 * cookie. Returns 0, -ESRCH if the thread is gone or exiting (or not a
 * thread of pid), -EEXIST if tid is already watched, -ENOSPC when
 * EVENTS_MAX_THREADS are watched, -EINVAL for a bad pid/tid; err says why.
 * On error nothing changed. Control path: may do a few system calls.
 */
int events_watch(struct events *ev, pid_t pid, pid_t tid, uint32_t cookie, char *err,
                 size_t errlen);

/* Stop watching tid: 0, or -ENOENT if it is not watched (or exited). */
int events_unwatch(struct events *ev, pid_t tid);

/*
 * A file descriptor that becomes readable (EPOLLIN) when a WAKE,
 * STOP(blocked=1) or EXIT is waiting (bpf: the ring buffer's epoll fd;
 * see events_set_wakeup); -1 for proc, which has nothing to wait on: call
 * events_poll at each decision instead.
 */
int events_fd(const struct events *ev);

/*
 * Deliver waiting records to cb, in kernel order, without blocking.
 * Returns the number delivered, or -errno. bpf: no system call when the
 * ring is empty (it reads shared memory), so a busy-polling loop may call
 * it freely. proc: two preads per watched thread; records are stamped
 * now_ns (CLOCK_MONOTONIC). No allocation.
 */
int events_poll(struct events *ev, uint64_t now_ns,
                void (*cb)(void *ctx, const struct events_rec *r), void *ctx);

/*
 * bpf: whether records wake up a waiter on events_fd (default on). Only
 * the records to act on at once do: WAKE, STOP(blocked=1), EXIT; RUN and
 * STOP(blocked=0) carry accounting and are delivered at the next poll
 * (they wake the waiter only when the ring is half full). Each wake-up
 * costs the producing CPU an irq_work (a self-IPI: ~5-8 us on the
 * project's nested VM, ~1 us on bare metal), so a busy-polling consumer
 * that never sleeps on the fd turns it off. No-op for proc.
 */
void events_set_wakeup(struct events *ev, bool on);

void events_stats(const struct events *ev, struct events_stats *st);

/* Detach the BPF program (or close the proc fds) and free everything. */
void events_close(struct events *ev);

#endif /* VCPUSCHED_EVENTS_H */
