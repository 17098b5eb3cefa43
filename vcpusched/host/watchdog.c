/* SPDX-License-Identifier: ISC */
/*
 * watchdog.c - the pure judgement of a stuck daemon; see watchdog.h.
 */
#include <string.h>

#include "watchdog.h"

bool
watchdog_cpu_suspect(uint64_t pass_ns, uint64_t now)
{
    return now > pass_ns && now - pass_ns >= WATCHDOG_SUSPECT_NS;
}

void
watchdog_thread_update(struct watchdog_thread *t, pid_t tid, const struct watchdog_sample *s,
                       uint64_t now)
{
    /*
     * A streak: samples that find it runnable with the same run time and
     * run count. A run that ended in between would have moved the run time
     * (the kernel accounts it at every switch out and every tick), so from
     * the streak's first sample on the thread has waited to run.
     */
    bool same = t->tid == tid && s->exec_ns == t->exec_ns && s->pcount == t->pcount;

    if (s->state != 'R')
        t->since_ns = 0;
    else if (!same || t->since_ns == 0)
        t->since_ns = now;
    t->tid = tid;
    t->exec_ns = s->exec_ns;
    t->pcount = s->pcount;
}

void
watchdog_thread_forget(struct watchdog_thread *t)
{
    memset(t, 0, sizeof(*t));
}

uint64_t
watchdog_waited(const struct watchdog_thread *t, uint64_t now)
{
    return t->since_ns != 0 && now > t->since_ns ? now - t->since_ns : 0;
}

bool
watchdog_trips(uint64_t bound_ns, uint64_t now, uint64_t pass_ns, uint64_t waited_ns)
{
    return bound_ns != 0 && now > pass_ns && now - pass_ns >= bound_ns && waited_ns >= bound_ns;
}

uint64_t
watchdog_thread_round(struct watchdog_thread *t, pid_t tid, uint64_t pass_ns,
                      const struct watchdog_sample *s, uint64_t now, uint64_t bound_ns)
{
    uint64_t waited;

    if (s == NULL || !watchdog_cpu_suspect(pass_ns, now)) {
        watchdog_thread_forget(t);
        return 0;
    }
    watchdog_thread_update(t, tid, s, now);
    waited = watchdog_waited(t, now);
    return watchdog_trips(bound_ns, now, pass_ns, waited) ? waited : 0;
}
