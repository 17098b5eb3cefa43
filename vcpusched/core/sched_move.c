/* SPDX-License-Identifier: ISC */
/*
 * sched_move.c - moving an attached domain to another pool, all or nothing
 * (sched_move), and the look-ups a caller needs to decide a move (which
 * pool a domain is in, which pools run which policy). Control path: every
 * function takes s->lock; see sched_priv.h for the other locks.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_priv.h"

int
sched_probe_cpus(struct sched_dom *d, const int *hosts, unsigned int n, const char *what,
                 struct cpuset *aff, char *err, size_t errlen)
{
    struct sched_pool *from = d->sp;
    int r = 0;

    sched_pool_lock(from);
    for (unsigned int i = 0; i < d->nr_threads && r >= 0; i++) {
        struct act_thread *a = d->threads[i]->act;
        int was = a->cpu;

        if (d->threads[i]->gone)
            continue; /* aff[i] empty: any CPU */
        r = act_probe_cpus(a, hosts, n, &aff[i]);
        if (was >= 0)
            (void)act_set_cpu(a, was);
        if (r < 0)
            snprintf(err, errlen, "thread %d: %s", (int)a->tid, strerror(-r));
        else if (cpuset_empty(&aff[i])) {
            snprintf(err, errlen, "%s: thread %d may not run on any cpu of %s (its cgroup cpuset)",
                     d->name, (int)a->tid, what);
            r = -EINVAL;
        }
    }
    sched_pool_unlock(from);
    return r < 0 ? r : 0;
}

/* Which CPUs of pool `to` each of d's threads may use (sched_probe_cpus). */
static int
move_probe(struct sched_dom *d, struct sched_pool *to, struct cpuset *aff, char *err, size_t errlen)
{
    int hosts[CPUSET_MAX];
    char what[VS_NAME_SIZE + 8];

    for (unsigned int i = 0; i < to->nr_cpus; i++)
        hosts[i] = to->cpus[i].host;
    snprintf(what, sizeof(what), "pool %s", to->pool.name);
    return sched_probe_cpus(d, hosts, to->nr_cpus, what, aff, err, errlen);
}

/*
 * The point of no return, with ev_lock and both pools' locks held: the
 * domain's record in `to` (npd) is complete; the old one goes and the
 * threads follow. What is left are system calls on threads that already
 * had these attributes (LOW, a pin); a failure there is counted as for
 * any dispatcher action, as the domain is in its new pool either way.
 */
static void
move_commit(struct sched_dom *d, struct sched_pool *to, struct pool_dom *npd, bool *run)
{
    struct sched_pool *from = d->sp;
    const struct sched_config *cfg = &from->s->cfg;
    uint64_t now = sched_now();
    char err[POLICY_ERRLEN];

    VS_ASSERT(sched_pool_held(from) && sched_pool_held(to));
    for (unsigned int i = 0; i < d->nr_threads; i++) {
        run[i] = d->threads[i]->pv->runnable;
        dispatch_forget(from, d->threads[i]);
    }
    pool_dom_remove(&from->pool, d->pd, now);
    dispatch_apply(from, now);
    d->pd = npd;
    d->sp = to;
    for (unsigned int i = 0; i < d->nr_threads; i++) {
        struct sched_thread *th = d->threads[i];
        int r;

        th->pv = npd->vcpus[i];
        th->pv->owner = th;
        th->wake_ts = 0;
        if (th->gone)
            continue;
        /* Lowered before it is pinned: never MID on a CPU of `to`. */
        r = act_set_level(th->act, &cfg->prio, ACT_LEVEL_LOW, cfg->move_rt_cgroup, err,
                          sizeof(err));
        if (r < 0)
            to->st.act_errors++;
        else
            to->st.syscalls += (uint64_t)r;
    }
    dispatch_apply(to, now); /* pins every vCPU to its home CPU in `to` */
    for (unsigned int i = 0; i < d->nr_threads; i++)
        if (run[i] && !d->threads[i]->gone)
            pool_wake(&to->pool, d->threads[i]->pv, now);
}

int
sched_move(struct sched *s, const char *name, const char *pool, const struct kv *kv, size_t nkv,
           char *err, size_t errlen)
{
    struct kv use[VS_PARAMS_MAX];
    char perr[POLICY_ERRLEN];
    struct sched_pool *from, *to;
    struct pool_dom *npd = NULL;
    struct cpuset *aff = NULL;
    struct sched_dom *d;
    bool *run = NULL;
    int r, n;

    pthread_mutex_lock(&s->lock);
    r = -ENOENT;
    if ((d = sched_dom_find(s, name)) == NULL) {
        snprintf(err, errlen, "domain %s is not attached", name);
        goto out;
    }
    if ((to = sched_pool_find(s, pool)) == NULL) {
        snprintf(err, errlen, "no pool %s", pool);
        goto out;
    }
    from = d->sp;
    r = -EEXIST;
    if (to == from) {
        snprintf(err, errlen, "domain %s is in pool %s already", name, pool);
        goto out;
    }
    /* The parameters first: refused here, no thread was touched. */
    n = pool_dom_params_for(d->pd, to->pool.pol.ops, kv, nkv, use, perr);
    if (n < 0) {
        snprintf(err, errlen, "%s: pool %s runs %s: %s", name, pool, pool_policy_name(&to->pool),
                 perr);
        r = n;
        goto out;
    }
    r = -ENOMEM;
    aff = calloc(d->nr_threads, sizeof(*aff));
    run = calloc(d->nr_threads, sizeof(*run));
    if (aff == NULL || run == NULL) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    r = move_probe(d, to, aff, err, errlen);
    if (r < 0)
        goto out;
    /* No event is applied to a thread half-way between pools (drain_one). */
    pthread_mutex_lock(&s->ev_lock);
    /* Dispatchers never hold two pool locks; one order for every move. */
    if ((uintptr_t)from < (uintptr_t)to) {
        sched_pool_lock(from);
        sched_pool_lock(to);
    } else {
        sched_pool_lock(to);
        sched_pool_lock(from);
    }
    r = pool_dom_add(&to->pool, name, d->nr_threads, aff, use, (size_t)n, sched_now(), &npd, perr);
    if (r == 0) {
        move_commit(d, to, npd, run);
        sched_changed(s);
    } else
        snprintf(err, errlen, "%s: %s", name, perr);
    sched_pool_unlock(to);
    sched_pool_unlock(from);
    pthread_mutex_unlock(&s->ev_lock);
out:
    pthread_mutex_unlock(&s->lock);
    free(aff);
    free(run);
    return r;
}

int
sched_dom_pool(struct sched *s, const char *name, char *pool, size_t len)
{
    struct sched_dom *d;

    pthread_mutex_lock(&s->lock);
    d = sched_dom_find(s, name);
    if (d != NULL)
        snprintf(pool, len, "%s", d->sp->pool.name);
    pthread_mutex_unlock(&s->lock);
    return d != NULL ? 0 : -ENOENT;
}

unsigned int
sched_pool_list(struct sched *s, struct sched_pool_info *out, unsigned int max)
{
    unsigned int n;

    pthread_mutex_lock(&s->lock);
    for (n = 0; n < s->nr_pools && n < max; n++) {
        snprintf(out[n].name, sizeof(out[n].name), "%s", s->pools[n]->pool.name);
        snprintf(out[n].policy, sizeof(out[n].policy), "%s", pool_policy_name(&s->pools[n]->pool));
    }
    pthread_mutex_unlock(&s->lock);
    return n;
}
