// SPDX-License-Identifier: GPL-2.0-only
/*
 * vcpusched.bpf.c - wake, switch and exit events of watched threads.
 *
 * Raw tracepoints (tp_btf/fentry are not available everywhere we run):
 * every sched_wakeup, sched_switch and sched_process_exit on the host runs
 * this, so an unwatched thread costs one hash lookup and nothing else. A
 * watched one gets a record in the ring buffer, stamped with
 * bpf_ktime_get_ns (CLOCK_MONOTONIC). GPL because the tracing helpers are.
 *
 * Run time is the kernel's own accounting, se.sum_exec_runtime (what
 * /proc/<tid>/schedstat shows), read at each switch-out: a STOP carries
 * what the thread ran since its previous STOP, exact even if a switch-in
 * went unreported.
 *
 * The map value keeps where each thread is (events_shared.h) so that the
 * stream is a clean state machine per thread. A wake of a thread that never
 * left the runqueue is dropped. The kernel does not always fire the
 * tracepoints (seen on 6.18: ~0.2% of the switch-ins from idle, some
 * wakes); a transition it skipped is inferred when the next one arrives
 * and sent with `inferred` set, so consumers never see an impossible
 * order. The state is updated even when the ring is full, so losing records
 * never corrupts what follows; losses are counted per CPU in .bss, which
 * the loader reads through the mmapped map without a system call.
 */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "events_shared.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader: the kernel passes prev_state as sched_switch's 4th
 * argument (5.18+); otherwise the task's state field is read. */
const volatile bool evb_state_arg = true;

/*
 * Written by user space: 1 when the consumer busy-polls and never sleeps
 * on the ring's fd. Otherwise the records a consumer must act on at once
 * (WAKE, STOP(blocked), EXIT) wake it, forced, since pending records would
 * defeat the ring's adaptive wake-up; RUN and STOP(preempted) only carry
 * accounting and wait for the next poll (unless the ring is half full). Waking a dispatcher for
 * those feeds back: its own wake-up preempts a vCPU and makes more records.
 */
volatile __u32 evb_quiet;

struct evb_lost evb_lost[EVB_LOST_SLOTS];

/* Watched threads that exited (the program removed them from the map). */
__u64 evb_exits;

/* Transitions the kernel did not report, inferred (rare: one counter). */
__u64 evb_inferred;

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096); /* EVENTS_MAX_THREADS */
    __type(key, __s32);
    __type(value, struct evb_watch);
} evb_watched SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 4 << 20); /* the loader sets the real size */
} evb_ring SEC(".maps");

/* Before 5.14 the state field was `long state`. */
struct task_struct___old {
    long state;
} __attribute__((preserve_access_index));

static __always_inline __u64
task_state(struct task_struct *t)
{
    if (bpf_core_field_exists(t->__state))
        return BPF_CORE_READ(t, __state);
    return BPF_CORE_READ((struct task_struct___old *)t, state);
}

/* The CPU a task is queued on: thread_info.cpu since 5.16, else wake_cpu. */
static __always_inline __s32
task_cpu(struct task_struct *t)
{
    if (bpf_core_field_exists(t->thread_info.cpu))
        return BPF_CORE_READ(t, thread_info.cpu);
    return BPF_CORE_READ(t, wake_cpu);
}

/* Run time the kernel accounted to t since the last call (or the watch). */
static __always_inline __u64
ran_since(struct evb_watch *w, struct task_struct *t)
{
    __u64 sum = BPF_CORE_READ(t, se.sum_exec_runtime);
    __u64 ran = sum > w->sum_ns ? sum - w->sum_ns : 0;

    w->sum_ns = sum;
    return ran;
}

static __always_inline void
emit(__u8 type, __s32 tid, const struct evb_watch *w, __u64 ts, __u64 ran, __s32 cpu, __u8 blocked,
     __u8 inferred)
{
    struct evb_rec *r = bpf_ringbuf_reserve(&evb_ring, sizeof(*r), 0);
    bool urgent;

    if (inferred)
        __sync_fetch_and_add(&evb_inferred, 1);
    if (r == NULL) {
        __u32 slot = bpf_get_smp_processor_id() % EVB_LOST_SLOTS;

        __sync_fetch_and_add(&evb_lost[slot].n, 1);
        return;
    }
    r->ts_ns = ts;
    r->ran_ns = ran;
    r->cookie = w->cookie;
    r->tid = tid;
    r->cpu = cpu;
    r->type = type;
    r->blocked = blocked;
    r->inferred = inferred;
    r->pad = 0;
    /* A ring half full is urgent too: drain it before records are lost. */
    urgent = type == EVB_WAKE || type == EVB_EXIT || (type == EVB_STOP && blocked) ||
             bpf_ringbuf_query(&evb_ring, BPF_RB_AVAIL_DATA) >
                 bpf_ringbuf_query(&evb_ring, BPF_RB_RING_SIZE) / 2;
    bpf_ringbuf_submit(r, urgent && !evb_quiet ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

/* Before a RUN: a thread seen running was switched out unreported (we
 * cannot tell whether it slept: say preempted), one seen asleep was woken
 * unreported. */
static __always_inline void
infer_before_run(struct evb_watch *w, __s32 tid, struct task_struct *t, __u64 now, __s32 cpu)
{
    if (w->state == EVB_RUNNING) {
        emit(EVB_STOP, tid, w, now, ran_since(w, t), cpu, 0, 1);
        w->state = EVB_RUNNABLE;
    }
    if (w->state == EVB_SLEEPING) {
        emit(EVB_WAKE, tid, w, now, 0, cpu, 0, 1);
        w->state = EVB_RUNNABLE;
    }
}

/* Before a STOP or EXIT: the thread was running, whatever we saw. */
static __always_inline void
infer_before_stop(struct evb_watch *w, __s32 tid, __u64 now, __s32 cpu)
{
    if (w->state == EVB_SLEEPING) {
        emit(EVB_WAKE, tid, w, now, 0, cpu, 0, 1);
        w->state = EVB_RUNNABLE;
    }
    if (w->state == EVB_RUNNABLE) {
        emit(EVB_RUN, tid, w, now, 0, cpu, 0, 1);
        w->state = EVB_RUNNING;
    }
}

static __always_inline int
on_wake(struct task_struct *p)
{
    __s32 tid = BPF_CORE_READ(p, pid);
    struct evb_watch *w = bpf_map_lookup_elem(&evb_watched, &tid);

    if (w == NULL)
        return 0;
    if (w->state == EVB_RUNNING || w->state == EVB_RUNNABLE)
        return 0; /* never left the runqueue */
    w->state = EVB_RUNNABLE;
    emit(EVB_WAKE, tid, w, bpf_ktime_get_ns(), 0, task_cpu(p), 0, 0);
    return 0;
}

SEC("raw_tp/sched_wakeup")
int
BPF_PROG(evb_wakeup, struct task_struct *p)
{
    return on_wake(p);
}

SEC("raw_tp/sched_wakeup_new")
int
BPF_PROG(evb_wakeup_new, struct task_struct *p)
{
    return on_wake(p);
}

/*
 * A switch stops prev and runs next. prev blocked if it was not preempted
 * and its state was not TASK_RUNNING (0): the scheduler then took it off
 * the runqueue (a pending signal resets the state to running first).
 */
SEC("raw_tp/sched_switch")
int
BPF_PROG(evb_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
    __s32 ptid = BPF_CORE_READ(prev, pid);
    __s32 ntid = BPF_CORE_READ(next, pid);
    __s32 cpu = bpf_get_smp_processor_id();
    struct evb_watch *w;
    __u64 now = 0;

    w = ptid != 0 ? bpf_map_lookup_elem(&evb_watched, &ptid) : NULL;
    if (w != NULL) {
        __u64 state = evb_state_arg ? (__u32)ctx[3] : task_state(prev);
        __u8 blocked = !preempt && state != 0;

        now = bpf_ktime_get_ns();
        infer_before_stop(w, ptid, now, cpu);
        w->state = blocked ? EVB_SLEEPING : EVB_RUNNABLE;
        emit(EVB_STOP, ptid, w, now, ran_since(w, prev), cpu, blocked, 0);
    }
    w = ntid != 0 ? bpf_map_lookup_elem(&evb_watched, &ntid) : NULL;
    if (w != NULL) {
        if (now == 0)
            now = bpf_ktime_get_ns();
        infer_before_run(w, ntid, next, now, cpu);
        w->state = EVB_RUNNING;
        emit(EVB_RUN, ntid, w, now, 0, cpu, 0, 0);
    }
    return 0;
}

/*
 * The last record of a thread: it is unwatched here, so its final switch
 * (and a cookie the consumer may reuse at once) never follows. Only the
 * side whose delete succeeds (this or events_unwatch) counts the thread
 * out, so the watched count stays exact. ran_ns: what the kernel has
 * accounted since the last STOP (up to its last update, at most a tick).
 */
SEC("raw_tp/sched_process_exit")
int
BPF_PROG(evb_exit, struct task_struct *p)
{
    __s32 tid = BPF_CORE_READ(p, pid);
    __s32 cpu = bpf_get_smp_processor_id();
    struct evb_watch *w = bpf_map_lookup_elem(&evb_watched, &tid);
    struct evb_watch copy;
    __u64 now, ran;

    if (w == NULL)
        return 0;
    now = bpf_ktime_get_ns();
    infer_before_stop(w, tid, now, cpu);
    ran = ran_since(w, p);
    copy = *w;
    if (bpf_map_delete_elem(&evb_watched, &tid) != 0)
        return 0;
    __sync_fetch_and_add(&evb_exits, 1);
    emit(EVB_EXIT, tid, &copy, now, ran, cpu, 0, 0);
    return 0;
}
