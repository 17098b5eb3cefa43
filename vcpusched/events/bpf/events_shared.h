/* SPDX-License-Identifier: ISC */
/*
 * events_shared.h - what the BPF program (vcpusched.bpf.c) and its loader
 * (events_bpf.c) agree on: the ring record, the watched-thread map value
 * and the loss counters. Include after vmlinux.h (BPF) or <linux/types.h>.
 * The record has the layout of struct events_rec (events.h); events_bpf.c
 * checks that at compile time, so records are handed out in place.
 */
#ifndef VCPUSCHED_EVENTS_SHARED_H
#define VCPUSCHED_EVENTS_SHARED_H

/* Record types: the values of enum events_type. */
#define EVB_WAKE 0
#define EVB_RUN  1
#define EVB_STOP 2
#define EVB_EXIT 3

/* Where a watched thread is, as far as the program has seen. */
#define EVB_UNKNOWN  0 /* just watched: no switch seen yet */
#define EVB_RUNNING  1 /* switched in */
#define EVB_RUNNABLE 2 /* preempted, or woken and queued */
#define EVB_SLEEPING 3 /* switched out off the runqueue */

/* Loss counter slots: one cache line per CPU, indexed cpu % this. */
#define EVB_LOST_SLOTS 512

struct evb_rec {
    __u64 ts_ns;
    __u64 ran_ns;
    __u32 cookie;
    __s32 tid;
    __s32 cpu;
    __u8 type;
    __u8 blocked;
    __u8 inferred;
    __u8 pad;
};

/* Value of the watched map, keyed by tid. sum_ns: the thread's
 * se.sum_exec_runtime at its last STOP (at the watch: its schedstat). */
struct evb_watch {
    __u64 sum_ns;
    __u32 cookie;
    __u32 state;
};

struct evb_lost {
    __u64 n;
    __u64 pad[7];
};

#endif /* VCPUSCHED_EVENTS_SHARED_H */
