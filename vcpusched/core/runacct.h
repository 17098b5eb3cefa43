/* SPDX-License-Identifier: ISC */
/*
 * runacct.h - what one managed thread is charged for running: the kernel's
 * own run time (STOP and EXIT records, proc CHARGE), and, while a run is
 * open, the time since its RUN, so that a policy sees a running vCPU burn.
 * Pure arithmetic on a caller's clock; the caller serialises (pool lock).
 */
#ifndef VCPUSCHED_RUNACCT_H
#define VCPUSCHED_RUNACCT_H

#include <stdbool.h>
#include <stdint.h>

/*
 * The records of a thread reach the core late (they wait in the ring and
 * in another dispatcher's drain) while every dispatcher charges open runs
 * up to its own `now`. Run time is therefore charged against a running
 * total, never per interval: what is charged never exceeds the kernel's
 * total plus the one open run, so a stale open run, a RUN stamped before
 * the last provisional charge, or a forgotten run costs no more than the
 * thread ran (a provisional charge the kernel did not confirm is owed back
 * out of the thread's next runs).
 */
struct runacct {
    uint64_t kernel_ns;  /* run time the kernel reported, in total */
    uint64_t charged_ns; /* charged to the policy, in total */
    uint64_t run_from;   /* ts of the open run's RUN */
    uint64_t ahead_ns;   /* charged_ns - kernel_ns after the last report, or 0 */
    bool open;           /* a RUN with no STOP yet */
};

/* A RUN at ts: the thread runs from then (a run still open is dropped). */
void runacct_run(struct runacct *a, uint64_t ts);

/* Charge for the open run up to now; returns the ns to charge (0 if none). */
uint64_t runacct_now(struct runacct *a, uint64_t now);

/*
 * The kernel reports ran_ns more run time (a STOP or EXIT, which closes the
 * run, or a proc CHARGE). Returns the ns to charge; *overshoot_ns gets how
 * much the provisional charges of the open run went beyond what the kernel
 * confirmed (owed back, not charged again).
 */
uint64_t runacct_report(struct runacct *a, uint64_t ran_ns, bool closes, uint64_t *overshoot_ns);

/* The run is no longer followed (switch records lost, thread moved). */
void runacct_forget(struct runacct *a);

#endif /* VCPUSCHED_RUNACCT_H */
