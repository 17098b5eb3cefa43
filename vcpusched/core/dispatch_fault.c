/* SPDX-License-Identifier: ISC */
/*
 * dispatch_fault.c - faults injected into a dispatcher, compiled in only
 * with VCPUSCHED_FAULTS (the tests' builds; never Release or the Debian
 * package): the watchdog's integration tests make one CPU's dispatcher
 * spin at its real-time priority, or sleep in the kernel, while it holds
 * its pool lock, as a bug or a stuck system call would; or sleep without
 * it (the rest of the daemon goes on: its sd_notify watchdog must see it).
 */
#include <errno.h>
#include <unistd.h>

#include "sched_priv.h"

int
sched_fault_arm(struct sched *s, int cpu, enum sched_fault fault)
{
    bool managed;

    pthread_mutex_lock(&s->lock);
    managed = sched_cpu_is_managed(s, cpu);
    pthread_mutex_unlock(&s->lock);
    if (!managed)
        return -ENOENT;
    atomic_store(&s->fault_cpu, cpu);
    atomic_store(&s->fault, (int)fault);
    return 0;
}

void
dispatch_fault_point(struct sched_pool *sp, const struct sched_cpu *c, bool locked)
{
    struct sched *s = sp->s;
    int fault = atomic_load_explicit(&s->fault, memory_order_relaxed);

    if (fault == SCHED_FAULT_NONE || atomic_load(&s->fault_cpu) != c->host ||
        (fault == SCHED_FAULT_STALL) == locked)
        return;
    for (;;) {
        if (fault != SCHED_FAULT_SPIN)
            pause();
        else
            __builtin_ia32_pause();
    }
}
