/* SPDX-License-Identifier: ISC */
/*
 * sched_core.c - the control path of the scheduler core: pools, attach, detach,
 * parameters. Everything here runs on the daemon's control thread; the
 * dispatchers (dispatch.c) run beside it. See sched_priv.h for locking.
 *
 * Attach is write-ahead: each thread gets a state-file slot before its
 * first change, so the guardian can restore it whatever happens next, and
 * a failure at any step restores what was done and changes nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "sched_priv.h"

void
sched_pool_lock(struct sched_pool *sp)
{
    uint64_t t0 = sched_now(), waited;

    atomic_fetch_add(&sp->ctl_waiting, 1);
    pthread_mutex_lock(&sp->lock);
    sched_pool_locked_by_me(sp, true);
    waited = sched_now() - t0;
    sp->st.ctl_waits++;
    sp->st.ctl_wait_sum_ns += waited;
    if (waited > sp->st.ctl_wait_max_ns)
        sp->st.ctl_wait_max_ns = waited;
    /* Held: the dispatchers that stood aside may queue again (and lend us their priority). */
    pthread_mutex_lock(&sp->ctl_mx);
    if (atomic_fetch_sub(&sp->ctl_waiting, 1) == 1)
        pthread_cond_broadcast(&sp->ctl_cv);
    pthread_mutex_unlock(&sp->ctl_mx);
}

void
sched_pool_unlock(struct sched_pool *sp)
{
    struct cpuset kick;

    cpuset_andnot2(&kick, pool_need_pick(&sp->pool), &sp->kicked);
    dispatch_kick(sp, &kick);
    cpuset_or(&sp->kicked, pool_need_pick(&sp->pool));
    sched_pool_locked_by_me(sp, false);
    pthread_mutex_unlock(&sp->lock);
}

int
sched_create(struct sched **out, const struct sched_config *cfg, struct statefile *sf,
             struct events *ev, char *err, size_t errlen)
{
    struct sched *s = calloc(1, sizeof(*s));

    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    if (!(cfg->prio.low < cfg->prio.mid && cfg->prio.mid < cfg->prio.high && cfg->prio.low >= 1 &&
          cfg->prio.high <= 99)) {
        snprintf(err, errlen, "priorities must satisfy 1 <= low < mid < high <= 99");
        free(s);
        return -EINVAL;
    }
    s->cfg = *cfg;
    s->sf = sf;
    s->ev = ev;
    /* A busy-polling dispatcher never sleeps on the ring: no forced wake-ups. */
    s->ev_wakeup = cfg->pattern != SCHED_DEDICATED;
    events_set_wakeup(ev, s->ev_wakeup);
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->ev_lock, NULL);
    TAILQ_INIT(&s->doms);
    s->start_ns = sched_now();
    *out = s;
    return 0;
}

struct sched_pool *
sched_pool_find(struct sched *s, const char *name)
{
    for (unsigned int i = 0; i < s->nr_pools; i++)
        if (name == NULL || strcmp(s->pools[i]->pool.name, name) == 0)
            return s->pools[i];
    return NULL;
}

bool
sched_cpu_is_managed(const struct sched *s, int cpu)
{
    for (unsigned int i = 0; i < s->nr_pools; i++)
        for (unsigned int c = 0; c < s->pools[i]->nr_cpus; c++)
            if (s->pools[i]->cpus[c].host == cpu)
                return true;
    return false;
}

struct sched_dom *
sched_dom_find(struct sched *s, const char *name)
{
    struct sched_dom *d;

    TAILQ_FOREACH(d, &s->doms, link)
    if (strcmp(d->name, name) == 0)
        return d;
    return NULL;
}

/*
 * Free a pool whose threads have all left and whose dispatchers stopped.
 * A dispatcher of another pool may still hold it from a record drained
 * before its last thread left: drains kick under ev_lock (dispatch.c), so
 * taking ev_lock once waits for that kick to be made.
 */
static void
pool_free(struct sched *s, struct sched_pool *sp)
{
    pthread_mutex_lock(&s->ev_lock);
    pthread_mutex_unlock(&s->ev_lock);
    for (unsigned int i = 0; i < sp->nr_cpus; i++)
        sched_cpu_close(&sp->cpus[i]);
    pthread_mutex_destroy(&sp->lock);
    pthread_mutex_destroy(&sp->ctl_mx);
    pthread_cond_destroy(&sp->ctl_cv);
    free(sp);
}

int
sched_cpus_check(struct sched *s, const struct sched_pool *own, const struct policy_cpu *cpus,
                 unsigned int n, char *err, size_t errlen)
{
    for (unsigned int i = 0; i < n; i++) {
        if (sched_cpu_is_managed(s, cpus[i].cpu) && !sched_pool_has_cpu(own, cpus[i].cpu)) {
            snprintf(err, errlen, "cpu %d already belongs to a pool", cpus[i].cpu);
            return -EBUSY;
        }
        if (s->cfg.pattern == SCHED_DEDICATED && cpus[i].cpu == s->cfg.dedicated_cpu) {
            snprintf(err, errlen, "cpu %d runs the dedicated dispatcher: it cannot be managed",
                     cpus[i].cpu);
            return -EINVAL;
        }
        for (unsigned int j = 0; j < i; j++) {
            if (cpus[j].cpu == cpus[i].cpu) {
                snprintf(err, errlen, "cpu %d listed twice", cpus[i].cpu);
                return -EINVAL;
            }
        }
    }
    return 0;
}

bool
sched_pool_has_cpu(const struct sched_pool *sp, int host)
{
    for (unsigned int i = 0; sp != NULL && i < sp->nr_cpus; i++)
        if (sp->cpus[i].host == host)
            return true;
    return false;
}

int
sched_cpu_open(struct sched_cpu *c, char *err, size_t errlen)
{
    c->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    c->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (c->kick_fd < 0 || c->timer_fd < 0) {
        int e = errno;

        snprintf(err, errlen, "cpu %d: %s", c->host, strerror(e));
        sched_cpu_close(c);
        return -e;
    }
    return 0;
}

void
sched_cpu_close(struct sched_cpu *c)
{
    if (c->kick_fd >= 0)
        close(c->kick_fd);
    if (c->timer_fd >= 0)
        close(c->timer_fd);
    c->kick_fd = c->timer_fd = -1;
}

static int
pool_fds(struct sched_pool *sp, char *err, size_t errlen)
{
    for (unsigned int i = 0; i < sp->nr_cpus; i++) {
        int r = sched_cpu_open(&sp->cpus[i], err, errlen);

        if (r < 0)
            return r;
    }
    return 0;
}

int
sched_pool_create(struct sched *s, const char *name, const struct policy_cpu *cpus,
                  unsigned int nr_cpus, const char *policy, const struct kv *kv, size_t n,
                  char *err, size_t errlen)
{
    pthread_mutexattr_t ma;
    struct sched_pool *sp;
    char perr[POLICY_ERRLEN];
    int r;

    pthread_mutex_lock(&s->lock);
    r = -EEXIST;
    if (sched_pool_find(s, name) != NULL) {
        snprintf(err, errlen, "pool %s already exists", name);
        goto out;
    }
    r = -ENOSPC;
    if (s->nr_pools == SCHED_MAX_POOLS) {
        snprintf(err, errlen, "at most %d pools", SCHED_MAX_POOLS);
        goto out;
    }
    r = sched_cpus_check(s, NULL, cpus, nr_cpus, err, errlen);
    if (r < 0)
        goto out;
    r = -ENOMEM;
    sp = calloc(1, sizeof(*sp));
    if (sp == NULL) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    r = pool_init(&sp->pool, name, policy, cpus, nr_cpus, kv, n, perr);
    if (r < 0) {
        snprintf(err, errlen, "%s", perr);
        free(sp);
        goto out;
    }
    sp->s = s;
    sp->pattern = s->cfg.pattern;
    sp->nr_cpus = nr_cpus;
    sp->st.created_ns = sched_now();
    atomic_store(&sp->next_due, 0);
    pthread_mutexattr_init(&ma);
    /* SCHED_FIFO dispatchers wait on it: the holder inherits their priority. */
    pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);
    pthread_mutex_init(&sp->lock, &ma);
    pthread_mutex_init(&sp->ctl_mx, &ma);
    pthread_mutexattr_destroy(&ma);
    pthread_cond_init(&sp->ctl_cv, NULL);
    for (unsigned int i = 0; i < nr_cpus; i++) {
        sp->cpus[i] = (struct sched_cpu){
            .sp = sp, .index = i, .host = cpus[i].cpu, .kick_fd = -1, .timer_fd = -1};
    }
    /* Every CPU takes its first decision as its dispatcher starts. */
    cpuset_fill(&sp->pool.need_pick, nr_cpus);
    r = pool_fds(sp, err, errlen);
    if (r == 0)
        r = dispatch_start(sp, err, errlen);
    if (r < 0) {
        pool_fini(&sp->pool, sched_now());
        pool_free(s, sp);
        goto out;
    }
    s->pools[s->nr_pools++] = sp;
    sched_changed(s);
out:
    pthread_mutex_unlock(&s->lock);
    return r;
}

int
sched_pool_set(struct sched *s, const char *name, const char *policy, const struct kv *kv, size_t n,
               char *err, size_t errlen)
{
    struct sched_pool *sp;
    char perr[POLICY_ERRLEN];
    int r;

    pthread_mutex_lock(&s->lock);
    sp = sched_pool_find(s, name);
    if (sp == NULL) {
        snprintf(err, errlen, "no pool %s", name);
        pthread_mutex_unlock(&s->lock);
        return -ENOENT;
    }
    sched_pool_lock(sp);
    if (policy != NULL)
        r = pool_switch(&sp->pool, policy, kv, n, sched_now(), perr);
    else
        r = pool_set(&sp->pool, NULL, kv, n, sched_now(), perr);
    if (r < 0)
        snprintf(err, errlen, "pool %s: %s", name, perr);
    else
        dispatch_apply(sp, sched_now());
    sched_pool_unlock(sp);
    if (r == 0)
        sched_changed(s);
    pthread_mutex_unlock(&s->lock);
    return r;
}

int
sched_pool_destroy(struct sched *s, const char *name, char *err, size_t errlen)
{
    struct sched_pool *sp;
    unsigned int i;

    pthread_mutex_lock(&s->lock);
    sp = sched_pool_find(s, name);
    if (sp == NULL) {
        snprintf(err, errlen, "no pool %s", name);
        pthread_mutex_unlock(&s->lock);
        return -ENOENT;
    }
    if (sp->pool.nr_doms > 0) {
        snprintf(err, errlen, "pool %s has %u domain(s) attached", name, sp->pool.nr_doms);
        pthread_mutex_unlock(&s->lock);
        return -EBUSY;
    }
    dispatch_stop(sp);
    for (i = 0; s->pools[i] != sp; i++)
        ;
    memmove(&s->pools[i], &s->pools[i + 1], (s->nr_pools - i - 1) * sizeof(s->pools[0]));
    s->nr_pools--;
    pool_fini(&sp->pool, sched_now());
    pool_free(s, sp);
    sched_changed(s);
    pthread_mutex_unlock(&s->lock);
    return 0;
}

/* --- attach and detach ---------------------------------------------------- */

/*
 * Give threads ths[0..n) back, free their slots and records. They must not
 * be in a pool any more; their events are unwatched here.
 */
void
sched_threads_release(struct sched *s, struct sched_thread **ths, unsigned int n)
{
    for (unsigned int i = 0; i < n; i++) {
        if (ths[i] == NULL || ths[i]->slot < 0)
            continue;
        (void)act_restore(ths[i]->act);
        events_unwatch(s->ev, ths[i]->act->tid);
    }
    /* Records already taken from the ring are applied under ev_lock. */
    pthread_mutex_lock(&s->ev_lock);
    for (unsigned int i = 0; i < n; i++)
        if (ths[i] != NULL && ths[i]->slot >= 0)
            atomic_store(&s->threads[ths[i]->slot], NULL);
    pthread_mutex_unlock(&s->ev_lock);
    for (unsigned int i = 0; i < n; i++) {
        if (ths[i] != NULL && ths[i]->slot >= 0)
            statefile_release(s->sf, ths[i]->slot);
        free(ths[i]);
    }
}

static void
dom_release(struct sched *s, struct sched_dom *d)
{
    sched_threads_release(s, d->threads, d->nr_threads);
    free(d->threads);
    free(d);
}

struct sched_thread *
sched_thread_new(struct sched_dom *d)
{
    struct sched_thread *th = calloc(1, sizeof(*th));

    if (th != NULL) {
        th->dom = d;
        th->slot = -1;
        th->on_cpu = th->mid_on = -1;
    }
    return th;
}

int
sched_thread_open(struct sched *s, struct sched_thread *th, pid_t tid, struct cpuset *aff,
                  char *err, size_t errlen)
{
    struct sched_pool *sp = th->dom->sp;
    int hosts[CPUSET_MAX];
    int r;

    for (unsigned int i = 0; i < sp->nr_cpus; i++)
        hosts[i] = sp->cpus[i].host;
    th->slot = statefile_alloc(s->sf);
    if (th->slot < 0) {
        snprintf(err, errlen, "too many managed threads (%d)", STATEFILE_SLOTS);
        return -ENOSPC;
    }
    th->act = statefile_act(s->sf, th->slot);
    th->wait_base_ns = sched_wait_base(th->dom->pid, tid);
    r = act_thread_open(th->act, th->dom->pid, tid, err, errlen);
    if (r == 0) {
        r = act_probe_cpus(th->act, hosts, sp->nr_cpus, aff);
        if (r >= 0 && cpuset_empty(aff)) {
            snprintf(err, errlen, "thread %d may not run on any cpu of pool %s (its cgroup cpuset)",
                     (int)tid, sp->pool.name);
            r = -EINVAL;
        }
    }
    if (r >= 0)
        r = events_watch(s->ev, th->dom->pid, tid, (uint32_t)th->slot, err, errlen);
    return r < 0 ? r : 0;
}

/* Record, probe and watch each thread: nothing scheduled yet. */
static int
dom_open_threads(struct sched *s, struct sched_dom *d, const pid_t *tids, struct cpuset *aff,
                 char *err, size_t errlen)
{
    for (unsigned int i = 0; i < d->nr_threads; i++) {
        int r = sched_thread_open(s, d->threads[i], tids[i], &aff[i], err, errlen);

        if (r < 0)
            return r;
    }
    return 0;
}

/* With the pool lock: pin, set LOW, and tell the policy who is runnable. */
static int
dom_start(struct sched_pool *sp, struct sched_dom *d, uint64_t now, char *err, size_t errlen)
{
    struct sched *s = sp->s;
    int r;

    VS_ASSERT(sched_pool_held(sp));
    for (unsigned int i = 0; i < d->nr_threads; i++) {
        struct sched_thread *th = d->threads[i];

        th->pv = d->pd->vcpus[i];
        th->pv->owner = th;
        th->on_cpu = th->mid_on = -1;
        atomic_store(&s->threads[th->slot], th);
    }
    dispatch_apply(sp, now); /* pins every new vCPU to its home CPU */
    for (unsigned int i = 0; i < d->nr_threads; i++) {
        struct sched_thread *th = d->threads[i];
        char state = 'S';

        r = act_set_level(th->act, &s->cfg.prio, ACT_LEVEL_LOW, s->cfg.move_rt_cgroup, err, errlen);
        if (r < 0)
            return r;
        sp->st.syscalls += (uint64_t)r;
        if (act_read_stat(d->pid, th->act->tid, &state, NULL) == 0 && state == 'R')
            pool_wake(&sp->pool, th->pv, now);
    }
    return 0;
}

static void
dom_unschedule(struct sched_pool *sp, struct sched_dom *d)
{
    for (unsigned int i = 0; i < d->nr_threads; i++) {
        d->threads[i]->detached = true;
        dispatch_forget(sp, d->threads[i]);
    }
    pool_dom_remove(&sp->pool, d->pd, sched_now());
    d->pd = NULL;
}

int
sched_attach(struct sched *s, const char *name, const char *pool, pid_t pid, const pid_t *tids,
             unsigned int n, const struct kv *kv, size_t nkv, const char *source,
             const char *origin, char *err, size_t errlen)
{
    struct cpuset *aff = NULL;
    char perr[POLICY_ERRLEN];
    struct sched_dom *d;
    struct sched_pool *sp;
    int r;

    pthread_mutex_lock(&s->lock);
    r = -EEXIST;
    if (sched_dom_find(s, name) != NULL) {
        snprintf(err, errlen, "domain %s is already attached", name);
        goto out;
    }
    r = -ENOENT;
    sp = sched_pool_find(s, pool);
    if (sp == NULL) {
        snprintf(err, errlen, pool ? "no pool %s" : "no pool%s", pool ? pool : "");
        goto out;
    }
    r = -EINVAL;
    if (n == 0 || n > VS_THREADS_MAX) {
        snprintf(err, errlen, "1..%d threads per domain, not %u", VS_THREADS_MAX, n);
        goto out;
    }
    r = -ENOMEM;
    d = calloc(1, sizeof(*d));
    aff = calloc(n, sizeof(*aff));
    if (d == NULL || aff == NULL || (d->threads = calloc(n, sizeof(d->threads[0]))) == NULL) {
        free(d);
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    snprintf(d->name, sizeof(d->name), "%s", name);
    snprintf(d->source, sizeof(d->source), "%s", source);
    snprintf(d->origin, sizeof(d->origin), "%s", origin != NULL ? origin : "");
    d->pid = pid;
    (void)procid_read(pid, &d->ident); /* a process gone fails below, at its threads */
    d->sp = sp;
    d->nr_threads = n;
    r = 0;
    for (unsigned int i = 0; i < n && r == 0; i++)
        if ((d->threads[i] = sched_thread_new(d)) == NULL) {
            snprintf(err, errlen, "out of memory");
            r = -ENOMEM;
        }
    if (r == 0)
        r = dom_open_threads(s, d, tids, aff, err, errlen);
    if (r < 0) {
        dom_release(s, d);
        goto out;
    }
    sched_pool_lock(sp);
    r = pool_dom_add(&sp->pool, name, n, aff, kv, nkv, sched_now(), &d->pd, perr);
    if (r < 0) {
        snprintf(err, errlen, "%s", perr);
    } else {
        r = dom_start(sp, d, sched_now(), err, errlen);
        if (r < 0)
            dom_unschedule(sp, d);
    }
    sched_pool_unlock(sp);
    if (r < 0) {
        dom_release(s, d);
        goto out;
    }
    TAILQ_INSERT_TAIL(&s->doms, d, link);
    sched_place_scan(s, d);
    sched_changed(s);
out:
    pthread_mutex_unlock(&s->lock);
    free(aff);
    return r;
}

static void
dom_detach(struct sched *s, struct sched_dom *d)
{
    struct sched_pool *sp = d->sp;

    sched_pool_lock(sp);
    dom_unschedule(sp, d);
    /* Restore while no dispatcher can raise them again. */
    for (unsigned int i = 0; i < d->nr_threads; i++)
        (void)act_restore(d->threads[i]->act);
    sched_pool_unlock(sp);
    sched_place_release(s, d);
    TAILQ_REMOVE(&s->doms, d, link);
    dom_release(s, d);
    sched_changed(s);
}

int
sched_detach(struct sched *s, const char *name, char *err, size_t errlen)
{
    struct sched_dom *d;

    pthread_mutex_lock(&s->lock);
    d = sched_dom_find(s, name);
    if (d == NULL) {
        snprintf(err, errlen, "domain %s is not attached", name);
        pthread_mutex_unlock(&s->lock);
        return -ENOENT;
    }
    dom_detach(s, d);
    pthread_mutex_unlock(&s->lock);
    return 0;
}

int
sched_set(struct sched *s, const char *name, const struct kv *kv, size_t n, char *err,
          size_t errlen)
{
    char perr[POLICY_ERRLEN];
    struct sched_dom *d;
    int r;

    pthread_mutex_lock(&s->lock);
    d = sched_dom_find(s, name);
    if (d == NULL) {
        snprintf(err, errlen, "domain %s is not attached", name);
        pthread_mutex_unlock(&s->lock);
        return -ENOENT;
    }
    sched_pool_lock(d->sp);
    r = pool_set(&d->sp->pool, d->pd, kv, n, sched_now(), perr);
    if (r < 0)
        snprintf(err, errlen, "%s: %s", name, perr);
    else
        dispatch_apply(d->sp, sched_now());
    sched_pool_unlock(d->sp);
    if (r == 0)
        sched_changed(s);
    pthread_mutex_unlock(&s->lock);
    return r;
}

static bool
dom_all_gone(struct sched_dom *d)
{
    bool gone = true;

    sched_pool_lock(d->sp);
    for (unsigned int i = 0; i < d->nr_threads; i++)
        gone = gone && d->threads[i]->gone;
    sched_pool_unlock(d->sp);
    return gone;
}

/*
 * True once the domain's process has exited or is being killed: a zombie
 * leader, no process, or a leader with SIGKILL pending (a leader that is
 * itself a parked vCPU thread, frozen in the v1 freezer, cannot exit).
 */
static bool
dom_process_exited(const struct sched_dom *d)
{
    char state;

    return act_read_stat(d->pid, d->pid, &state, NULL) < 0 || state == 'Z' || state == 'X' ||
           act_thread_killed(d->pid, d->pid);
}

/*
 * The process is gone or dying: mark its vanished threads gone (their exit
 * events may never come, e.g. lost, or not yet read), and thaw the parked
 * ones, which cannot finish dying while frozen.
 */
static void
dom_collect_exited(struct sched_dom *d)
{
    uint64_t now = sched_now();

    sched_pool_lock(d->sp);
    for (unsigned int i = 0; i < d->nr_threads; i++) {
        struct sched_thread *th = d->threads[i];

        if (th->gone)
            continue;
        if (!act_thread_alive(d->pid, th->act->tid, th->act->start_time))
            dispatch_thread_gone(d->sp, th, now);
        else if (th->act->frozen)
            (void)act_thaw(th->act);
    }
    dispatch_apply(d->sp, now);
    sched_pool_unlock(d->sp);
}

int
sched_reap(struct sched *s)
{
    struct sched_dom *d, *next;
    int n = 0;

    pthread_mutex_lock(&s->lock);
    for (d = TAILQ_FIRST(&s->doms); d != NULL; d = next) {
        next = TAILQ_NEXT(d, link);
        if (dom_process_exited(d))
            dom_collect_exited(d);
        if (dom_all_gone(d)) {
            dom_detach(s, d);
            n++;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return n;
}

/* Make the pool's view of one thread match the kernel's (pool lock held). */
static int
thread_resync(struct sched_pool *sp, struct sched_thread *th, uint64_t now)
{
    char state;

    VS_ASSERT(sched_pool_held(sp));
    if (th->gone || th->act->frozen || act_read_stat(th->dom->pid, th->act->tid, &state, NULL) < 0)
        return 0;
    dispatch_forget_running(sp, th);
    if (state == 'R' && !th->pv->runnable) {
        pool_wake(&sp->pool, th->pv, now);
        return 1;
    }
    if (state != 'R' && th->pv->runnable) {
        pool_sleep(&sp->pool, th->pv, now);
        return 1;
    }
    return 0;
}

int
sched_wake_missed(struct sched *s)
{
    struct sched_dom *d;
    int n = 0;

    pthread_mutex_lock(&s->lock);
    TAILQ_FOREACH(d, &s->doms, link)
    {
        sched_pool_lock(d->sp);
        for (unsigned int i = 0; i < d->nr_threads; i++) {
            struct sched_thread *th = d->threads[i];
            char state;

            if (th->gone || th->act->frozen || (th->pv->runnable && th->on_cpu < 0) ||
                act_read_stat(d->pid, th->act->tid, &state, NULL) < 0)
                continue;
            if (th->on_cpu >= 0 && state != 'R') {
                /* Its switch-out is late or unreported: stop charging the run. */
                dispatch_forget_running(d->sp, th);
                d->sp->st.charge_stale_runs++;
            }
            if (th->pv->runnable || state != 'R')
                continue;
            pool_wake(&d->sp->pool, th->pv, sched_now());
            n++;
        }
        sched_pool_unlock(d->sp);
    }
    s->missed_wakes += (uint64_t)n;
    pthread_mutex_unlock(&s->lock);
    return n;
}

int
sched_resync(struct sched *s)
{
    struct sched_dom *d;
    int n = 0;

    if (!atomic_exchange(&s->resync, false))
        return 0;
    pthread_mutex_lock(&s->lock);
    s->resyncs++;
    TAILQ_FOREACH(d, &s->doms, link)
    {
        sched_pool_lock(d->sp);
        for (unsigned int i = 0; i < d->nr_threads; i++)
            n += thread_resync(d->sp, d->threads[i], sched_now());
        sched_pool_unlock(d->sp);
    }
    pthread_mutex_unlock(&s->lock);
    return n;
}

void
sched_destroy(struct sched *s)
{
    struct sched_dom *d;

    if (s == NULL)
        return;
    pthread_mutex_lock(&s->lock);
    while ((d = TAILQ_FIRST(&s->doms)) != NULL)
        dom_detach(s, d);
    for (unsigned int i = 0; i < s->nr_pools; i++) {
        dispatch_stop(s->pools[i]);
        pool_fini(&s->pools[i]->pool, sched_now());
        pool_free(s, s->pools[i]);
    }
    s->nr_pools = 0;
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->ev_lock);
    free(s);
}
