/* SPDX-License-Identifier: ISC */
/*
 * runacct.c - run time charged to one thread: the kernel's total plus its
 * open run, charged as the growth of that sum (see runacct.h for why).
 */
#include "runacct.h"

void
runacct_run(struct runacct *a, uint64_t ts)
{
    a->open = true;
    a->run_from = ts;
}

uint64_t
runacct_now(struct runacct *a, uint64_t now)
{
    uint64_t target;

    if (!a->open || now <= a->run_from)
        return 0;
    target = a->kernel_ns + (now - a->run_from);
    if (target <= a->charged_ns)
        return 0; /* a provisional charge of earlier runs is still owed */
    target -= a->charged_ns;
    a->charged_ns += target;
    return target;
}

uint64_t
runacct_report(struct runacct *a, uint64_t ran_ns, bool closes, uint64_t *overshoot_ns)
{
    uint64_t ahead, d = 0;

    if (closes)
        a->open = false;
    a->kernel_ns += ran_ns;
    if (a->kernel_ns > a->charged_ns) {
        d = a->kernel_ns - a->charged_ns;
        a->charged_ns = a->kernel_ns;
    }
    /* Still open (proc CHARGE): its provisional part is not settled yet. */
    ahead = a->open ? 0 : a->charged_ns - a->kernel_ns;
    *overshoot_ns = ahead > a->ahead_ns ? ahead - a->ahead_ns : 0;
    if (!a->open)
        a->ahead_ns = ahead;
    return d;
}

void
runacct_forget(struct runacct *a)
{
    a->open = false;
}
