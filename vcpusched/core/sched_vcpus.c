/* SPDX-License-Identifier: ISC */
/*
 * sched_vcpus.c - vCPU hot-plug and unplug of an attached domain
 * (sched_dom_update): a new vCPU thread becomes a vCPU of the domain with
 * its parameters (pool_vcpu_add), a vanished one is dropped
 * (pool_vcpu_remove); the domain's other vCPUs keep their policy state.
 * Control path: s->lock held throughout; see sched_priv.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_priv.h"

/*
 * A thread id in the domain, gone or not: a reused id waits until the gone
 * record is dropped (both would watch one tid). th->gone is written by
 * dispatchers: these run under the pool lock.
 */
bool
sched_dom_has_tid(const struct sched_dom *d, pid_t tid)
{
    for (unsigned int i = 0; i < d->nr_threads; i++)
        if (d->threads[i]->act->tid == tid)
            return true;
    return false;
}

static bool
listed(const struct sched_thread *th, const pid_t *tids, unsigned int n)
{
    for (unsigned int i = 0; i < n && !th->gone; i++)
        if (tids[i] == th->act->tid)
            return true;
    return false;
}

/*
 * Take vCPU i out of its pool and give its thread back (pool lock held),
 * while no dispatcher can raise it again. The record is freed by the
 * caller with sched_threads_release, once the lock is dropped.
 */
static struct sched_thread *
vcpu_take_out(struct sched_dom *d, unsigned int i, uint64_t now)
{
    struct sched_pool *sp = d->sp;
    struct sched_thread *th = d->threads[i];

    VS_ASSERT(sched_pool_held(sp));
    th->detached = true;
    dispatch_forget(sp, th);
    (void)pool_vcpu_remove(&sp->pool, th->pv, now);
    th->pv = NULL;
    if (!th->gone)
        (void)act_restore(th->act);
    memmove(&d->threads[i], &d->threads[i + 1], (d->nr_threads - i - 1) * sizeof(d->threads[0]));
    d->nr_threads--;
    dispatch_apply(sp, now); /* vcpu_remove may have re-homed others */
    return th;
}

/* Thread `tid` of d's process as a new vCPU: pinned, LOW, woken if running. */
static int
vcpu_plug(struct sched *s, struct sched_dom *d, pid_t tid, char *err, size_t errlen)
{
    struct sched_pool *sp = d->sp;
    struct sched_thread *th, **ths;
    char perr[POLICY_ERRLEN], state = 'S';
    struct pool_vcpu *pv;
    struct cpuset aff;
    uint64_t now;
    int r;

    if (d->nr_threads >= VS_THREADS_MAX) {
        snprintf(err, errlen, "domain %s: at most %d vcpus", d->name, VS_THREADS_MAX);
        return -E2BIG;
    }
    th = sched_thread_new(d);
    ths = realloc(d->threads, (d->nr_threads + 1) * sizeof(*ths));
    if (ths != NULL)
        d->threads = ths; /* only the control path reads the array (s->lock) */
    if (th == NULL || ths == NULL) {
        free(th);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    r = sched_thread_open(s, th, tid, &aff, err, errlen);
    if (r < 0) {
        sched_threads_release(s, &th, 1);
        return r;
    }
    sched_pool_lock(sp);
    now = sched_now();
    r = pool_vcpu_add(&sp->pool, d->pd, &aff, now, &pv, perr);
    if (r < 0) {
        snprintf(err, errlen, "domain %s: %s", d->name, perr);
        sched_pool_unlock(sp);
        sched_threads_release(s, &th, 1);
        return r;
    }
    th->pv = pv;
    pv->owner = th;
    d->threads[d->nr_threads++] = th;
    atomic_store(&s->threads[th->slot], th);
    dispatch_apply(sp, now); /* pins it to its home CPU */
    r = act_set_level(th->act, &s->cfg.prio, ACT_LEVEL_LOW, s->cfg.move_rt_cgroup, err, errlen);
    if (r >= 0) {
        sp->st.syscalls += (uint64_t)r;
        if (act_read_stat(d->pid, tid, &state, NULL) == 0 && state == 'R')
            pool_wake(&sp->pool, pv, now);
        r = 0;
    } else {
        th = vcpu_take_out(d, d->nr_threads - 1, now);
    }
    sched_pool_unlock(sp);
    if (r < 0)
        sched_threads_release(s, &th, 1);
    return r;
}

int
sched_dom_update(struct sched *s, const char *name, pid_t pid, const pid_t *tids, unsigned int n,
                 char *err, size_t errlen)
{
    struct sched_dom *d;
    int r = 0, changes = 0;
    char msg[256];

    pthread_mutex_lock(&s->lock);
    d = sched_dom_find(s, name);
    if (d == NULL) {
        snprintf(err, errlen, "domain %s is not attached", name);
        r = -ENOENT;
        goto out;
    }
    if (d->pid != pid) {
        snprintf(err, errlen, "domain %s: its vcpus belong to process %d, not %d", name,
                 (int)d->pid, (int)pid);
        r = -ESRCH;
        goto out;
    }
    /* Plug first: the domain never runs out of vCPUs on the way. */
    for (unsigned int i = 0; i < n; i++) {
        bool known;
        int e;

        sched_pool_lock(d->sp);
        known = sched_dom_has_tid(d, tids[i]);
        sched_pool_unlock(d->sp);
        if (known)
            continue;
        e = vcpu_plug(s, d, tids[i], msg, sizeof(msg));
        if (e == 0)
            changes++;
        else if (r == 0) {
            r = e;
            snprintf(err, errlen, "%s", msg);
        }
    }
    for (unsigned int i = 0; n > 0 && i < d->nr_threads;) {
        struct sched_thread *th = NULL;

        sched_pool_lock(d->sp);
        if (!listed(d->threads[i], tids, n) && d->nr_threads > 1)
            th = vcpu_take_out(d, i, sched_now());
        else
            i++;
        sched_pool_unlock(d->sp);
        if (th != NULL) {
            sched_threads_release(s, &th, 1);
            changes++;
        }
    }
    if (changes > 0)
        sched_changed(s);
out:
    pthread_mutex_unlock(&s->lock);
    return r < 0 ? r : changes;
}

unsigned int
sched_dom_targets(struct sched *s, struct sched_target *out, unsigned int max)
{
    struct sched_dom *d;
    unsigned int n = 0;

    pthread_mutex_lock(&s->lock);
    TAILQ_FOREACH(d, &s->doms, link)
    {
        if (d->origin[0] == '\0')
            continue;
        if (n < max) {
            snprintf(out[n].name, sizeof(out[n].name), "%s", d->name);
            snprintf(out[n].source, sizeof(out[n].source), "%s", d->source);
            snprintf(out[n].origin, sizeof(out[n].origin), "%s", d->origin);
            out[n].pid = d->pid;
            out[n].nr_gone = 0;
            sched_pool_lock(d->sp); /* `gone` is written by dispatchers */
            for (unsigned int i = 0; i < d->nr_threads; i++)
                out[n].nr_gone += d->threads[i]->gone;
            sched_pool_unlock(d->sp);
        }
        n++;
    }
    pthread_mutex_unlock(&s->lock);
    return n;
}
