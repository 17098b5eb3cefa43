/* SPDX-License-Identifier: ISC */
/*
 * sched_wait.c - how long each managed vCPU waited while runnable (woken
 * or preempted, not yet running again): the starvation an operator must
 * be able to see. The kernel keeps it exactly, per thread, as run_delay
 * (/proc/<tid>/schedstat, second field, CONFIG_SCHED_INFO), but adds a
 * wait only when it ends: a vCPU that never gets the CPU shows nothing.
 * So the wait under way is added from the events (a WAKE or a preempting
 * STOP opens it, the RUN closes it: dispatch.c), and the total reported
 * never goes back (a RUN record is read a little after the kernel has
 * counted the wait it ends). Since the attach, like run_ns.
 */
#include <stdlib.h>

#include "sched_priv.h"

uint64_t
sched_wait_base(pid_t pid, pid_t tid)
{
    struct act_schedstat st;

    return act_read_schedstat(pid, tid, &st) == 0 ? st.delay_ns : 0;
}

uint64_t
sched_wait_total(struct sched_thread *th, int64_t delay_ns, uint64_t now)
{
    uint64_t w;

    if (th->gone || delay_ns < 0 || (uint64_t)delay_ns < th->wait_base_ns)
        return th->wait_ns; /* gone (or a reused id): its last total stays */
    w = (uint64_t)delay_ns - th->wait_base_ns;
    if (th->queued_ts != 0 && now > th->queued_ts)
        w += now - th->queued_ts;
    if (w > th->wait_ns)
        th->wait_ns = w;
    return th->wait_ns;
}

void
sched_wait_sample(struct sched_thread *th, int64_t delay_ns, uint64_t now)
{
    uint64_t w = sched_wait_total(th, delay_ns, now);

    if (th->wait_sample_at != 0 && now > th->wait_sample_at) {
        double part = (double)(w - th->wait_sample_ns) / (double)(now - th->wait_sample_at);

        th->wait_recent_ppm = part >= 1.0 ? 1000000u : (uint32_t)(part * 1e6 + 0.5);
    }
    th->wait_sample_ns = w;
    th->wait_sample_at = now;
}

/* One domain: the kernel's figures first, then the pool lock to combine them. */
static void
sample_dom(struct sched_dom *d)
{
    int64_t *delay = calloc(d->nr_threads + 1, sizeof(*delay));
    struct act_schedstat st;

    if (delay == NULL)
        return;
    for (unsigned int i = 0; i < d->nr_threads; i++)
        delay[i] = act_read_schedstat(d->pid, d->threads[i]->act->tid, &st) == 0
                       ? (int64_t)st.delay_ns
                       : -1;
    sched_pool_lock(d->sp);
    for (unsigned int i = 0; i < d->nr_threads; i++)
        sched_wait_sample(d->threads[i], delay[i], sched_now());
    sched_pool_unlock(d->sp);
    free(delay);
}

void
sched_sample_waits(struct sched *s)
{
    struct sched_dom *d;

    pthread_mutex_lock(&s->lock);
    TAILQ_FOREACH(d, &s->doms, link)
    sample_dom(d);
    pthread_mutex_unlock(&s->lock);
}
