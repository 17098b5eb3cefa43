/* SPDX-License-Identifier: ISC */
/*
 * dispatch.c - the dispatchers: the priority elevation trick.
 *
 * A dispatcher runs at SCHED_FIFO HIGH. For each decision it raises the
 * elected thread to MID (pinning it to the CPU first) before lowering the
 * previous one to LOW, so the CPU never falls to a third thread in
 * between, and it makes no system call when the decision is unchanged.
 *
 * Shared pattern: one dispatcher per managed CPU, pinned there, asleep in
 * epoll on its timer (the slice end), its kick eventfd (a tickle from
 * another dispatcher or the control path) and the event ring; when it
 * wakes it preempts whatever runs, decides, and sleeps again.
 * Dedicated pattern: one dispatcher for every pool, on a CPU of its own,
 * busy polling the clock, the ring (no system call while it is empty) and
 * the pools' deadlines.
 *
 * Progress: each dispatcher publishes a heartbeat per CPU it serves in the
 * state file (a relaxed store, no system call) after every pass, and an
 * idle shared dispatcher wakes every DISPATCH_BEAT_MS to say it lives;
 * the guardian's watchdog reads them (host/watchdog.h).
 *
 * Run time charged to the policy is what the kernel reports (switch
 * events, or schedstat in the /proc fallback), including time a LOW
 * thread ran because the elected one was blocked; an open run is charged
 * as it goes, against the kernel's total (runacct.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "host/watchdog.h"
#include "sched_priv.h"

/* An idle shared dispatcher's heartbeat period (host/watchdog.h). */
#define DISPATCH_BEAT_MS ((int)(WATCHDOG_BEAT_NS / NSEC_PER_MSEC))
/* The dedicated poller refreshes a pool's heartbeats at most this often. */
#define DEDICATED_BEAT_NS NSEC_PER_MSEC

uint64_t
sched_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static struct sched_thread *
owner(const struct pool_vcpu *v)
{
    return v ? v->owner : NULL;
}

static bool
proc_mode(const struct sched *s)
{
    return events_fd(s->ev) < 0;
}

static void
lat_add(struct sched_pool_stats *st, uint64_t ns)
{
    unsigned int b = ns ? 63 - (unsigned int)__builtin_clzll(ns) : 0;

    st->lat[b < SCHED_LAT_BUCKETS ? b : SCHED_LAT_BUCKETS - 1]++;
    st->lat_sum_ns += ns;
}

/*
 * A dispatcher takes the pool lock. A PI unlock hands the lock to its
 * highest-priority waiter: while two dispatchers keep taking it, a
 * control thread queued at SCHED_OTHER never gets it. So a dispatcher
 * does not queue while the control path waits: it sleeps until the
 * control path holds the lock, then queues behind it (lending it its
 * priority). The control path waits for at most the dispatchers already
 * queued; nobody waiting costs one atomic load. Called with no pool lock
 * held (the control path may hold another pool's lock while it waits).
 */
static void
dispatch_lock(struct sched_pool *sp)
{
    if (atomic_load_explicit(&sp->ctl_waiting, memory_order_relaxed) > 0) {
        pthread_mutex_lock(&sp->ctl_mx);
        while (atomic_load(&sp->ctl_waiting) > 0)
            pthread_cond_wait(&sp->ctl_cv, &sp->ctl_mx);
        pthread_mutex_unlock(&sp->ctl_mx);
    }
    pthread_mutex_lock(&sp->lock);
    sched_pool_locked_by_me(sp, true);
}

static void
dispatch_unlock(struct sched_pool *sp)
{
    sched_pool_locked_by_me(sp, false);
    pthread_mutex_unlock(&sp->lock);
}

/*
 * Book an actuator result: count syscalls, remember failures (with the
 * actuator's own message when it gave one in `err`).
 */
static void
act_book(struct sched_pool *sp, struct sched_thread *th, int r, const char *what, const char *err)
{
    if (r > 0) {
        sp->st.syscalls += (uint64_t)r;
        return;
    }
    if (r == 0)
        return;
    sp->st.act_errors++;
    if (r == -ESRCH) {
        th->gone = true; /* vanished mid-decision: the reaper detaches it */
    }
    if (err != NULL && err[0] != '\0')
        snprintf(sp->last_error, sizeof(sp->last_error), "%s", err);
    else
        snprintf(sp->last_error, sizeof(sp->last_error), "thread %d: %s: %s", (int)th->act->tid,
                 what, strerror(-r));
}

/* --- measured run time ------------------------------------------------- */

/* Charge threads running right now up to `now` (their run is not over). */
static void
account_running(struct sched_pool *sp, uint64_t now)
{
    for (unsigned int i = 0; i < sp->nr_cpus; i++) {
        struct sched_thread *th = sp->cpus[i].running;
        uint64_t d = th != NULL ? runacct_now(&th->acct, now) : 0;

        if (d > 0)
            pool_account(&sp->pool, th->pv, d);
    }
}

/* The kernel reports ran_ns more run time of th (closes: its run ended). */
static void
account_report(struct sched_pool *sp, struct sched_thread *th, uint64_t ran_ns, bool closes)
{
    uint64_t over, d = runacct_report(&th->acct, ran_ns, closes, &over);

    if (d > 0)
        pool_account(&sp->pool, th->pv, d);
    sp->st.charge_overshoot_ns += over;
    if (over > sp->st.charge_overshoot_max_ns)
        sp->st.charge_overshoot_max_ns = over;
}

/* th is off its CPU (its run ended, or is no longer followed). */
static void
off_cpu(struct sched_pool *sp, struct sched_thread *th)
{
    if (th->on_cpu >= 0 && sp->cpus[th->on_cpu].running == th)
        sp->cpus[th->on_cpu].running = NULL;
    th->on_cpu = -1;
}

static int
pool_cpu_of(const struct sched_pool *sp, int host)
{
    for (unsigned int i = 0; i < sp->nr_cpus; i++)
        if (sp->cpus[i].host == host)
            return (int)i;
    return -1;
}

void
dispatch_thread_gone(struct sched_pool *sp, struct sched_thread *th, uint64_t now)
{
    VS_ASSERT(sched_pool_held(sp));
    th->gone = true;                    /* maybe already, by an actuation that met ESRCH */
    pool_sleep(&sp->pool, th->pv, now); /* a no-op if it sleeps already */
}

/* Apply one kernel event to a thread (pool lock held). */
static void
apply_record(struct sched_pool *sp, struct sched_thread *th, const struct events_rec *r,
             uint64_t now)
{
    bool frozen = th->act->frozen;

    VS_ASSERT(sched_pool_held(sp));
    sp->st.events++;
    switch (r->type) {
    case EVENTS_WAKE:
        if (!frozen && !th->gone) {
            if (!th->pv->runnable)
                th->wake_ts = r->ts_ns;
            if (th->queued_ts == 0 && th->on_cpu < 0)
                th->queued_ts = r->ts_ns; /* a wait opens (sched_wait.c) */
            pool_wake(&sp->pool, th->pv, now);
        }
        break;
    case EVENTS_RUN:
        off_cpu(sp, th);
        th->queued_ts = 0;
        th->on_cpu = pool_cpu_of(sp, r->cpu);
        runacct_run(&th->acct, r->ts_ns);
        th->switches++;
        if (th->on_cpu >= 0)
            sp->cpus[th->on_cpu].running = th;
        break;
    case EVENTS_STOP:
        off_cpu(sp, th);
        account_report(sp, th, r->ran_ns, true);
        /* Preempted, it waits from here; asleep or frozen, it does not. */
        th->queued_ts = !r->blocked && !frozen && !th->gone ? r->ts_ns : 0;
        if (r->blocked && !frozen && !th->gone)
            pool_sleep(&sp->pool, th->pv, now);
        break;
    case EVENTS_EXIT:
        th->queued_ts = 0;
        off_cpu(sp, th);
        account_report(sp, th, r->ran_ns, true);
        dispatch_thread_gone(sp, th, now);
        break;
    case EVENTS_CHARGE:
        account_report(sp, th, r->ran_ns, false);
        break;
    default:
        break;
    }
}

struct drain_ctx {
    struct sched *s;
    uint64_t now;
    struct cpuset kick[SCHED_MAX_POOLS];
    struct sched_pool *pools[SCHED_MAX_POOLS];
    unsigned int nr;
};

/* Add to *out the CPUs of sp that need a pick and were not kicked yet (pool lock held). */
static void
take_kicks(struct sched_pool *sp, struct cpuset *out)
{
    struct cpuset need;

    VS_ASSERT(sched_pool_held(sp));
    cpuset_andnot2(&need, pool_need_pick(&sp->pool), &sp->kicked);
    cpuset_or(&sp->kicked, &need);
    cpuset_or(out, &need);
}

static void
drain_one(void *arg, const struct events_rec *r)
{
    struct drain_ctx *c = arg;
    struct sched_thread *th;
    struct sched_pool *sp;
    unsigned int k;

    if (r->type == EVENTS_LOST) {
        /* Records were dropped: thread states may be stale until resync. */
        atomic_store(&c->s->resync, true);
        return;
    }
    if (r->cookie >= STATEFILE_SLOTS)
        return;
    th = atomic_load(&c->s->threads[r->cookie]);
    if (th == NULL || th->act->tid != r->tid)
        return; /* a record of a thread detached since */
    sp = th->dom->sp;
    dispatch_lock(sp);
    if (th->pv != NULL && !th->detached)
        apply_record(sp, th, r, c->now);
    for (k = 0; k < c->nr && c->pools[k] != sp; k++)
        ;
    if (k == c->nr && c->nr < SCHED_MAX_POOLS) {
        c->pools[c->nr++] = sp;
        cpuset_zero(&c->kick[k]);
    }
    if (k < c->nr)
        take_kicks(sp, &c->kick[k]);
    dispatch_unlock(sp);
}

/*
 * Drain the event ring (one dispatcher at a time; the others carry on:
 * whoever holds it delivers their events and kicks them). The kicks too
 * are made under ev_lock: a pool found by a record is freed only once its
 * destroyer has taken ev_lock after the pool's last thread left
 * (sched_core.c), so no kick reaches a pool freed, or fds closed, meanwhile.
 * Returns the number of records, or -EAGAIN if another dispatcher was
 * draining.
 */
static int
drain_events(struct sched *s, uint64_t now, struct sched_cpu *self)
{
    struct drain_ctx c = {.s = s, .now = now};
    int n;

    if (pthread_mutex_trylock(&s->ev_lock) != 0)
        return -EAGAIN;
    n = events_poll(s->ev, now, drain_one, &c);
    for (unsigned int k = 0; k < c.nr; k++) {
        if (self != NULL && c.pools[k] == self->sp)
            cpuset_clear(&c.kick[k], self->index); /* we decide right after */
        dispatch_kick(c.pools[k], &c.kick[k]);
    }
    pthread_mutex_unlock(&s->ev_lock);
    return n;
}

/* --- actuation ------------------------------------------------------------ */

static void
apply_dirty(struct sched_pool *sp)
{
    struct pool_vcpu *v;
    char err[SCHED_ERRLEN];

    while ((v = pool_take_dirty(&sp->pool)) != NULL) {
        struct sched_thread *th = owner(v);

        if (th == NULL || th->gone)
            continue;
        err[0] = '\0';
        if (v->pv->parked && !th->act->frozen)
            act_book(sp, th, act_freeze(th->act, &sp->s->cfg.park, err, sizeof(err)), "freeze",
                     err);
        else if (!v->pv->parked && th->act->frozen)
            act_book(sp, th, act_thaw(th->act), "thaw", NULL);
        /* A thread at MID is re-pinned when it is lowered. */
        if (th->mid_on < 0)
            act_book(sp, th, act_set_cpu(th->act, sp->cpus[v->pv->cpu].host), "set affinity", NULL);
    }
}

/* Make the kernel run what the pool elected on CPU c; true if it raised a thread. */
static bool
actuate_cpu(struct sched_pool *sp, struct sched_cpu *c)
{
    const struct act_prio *prio = &sp->s->cfg.prio;
    struct sched_thread *want = owner(sp->pool.cpu[c->index].elected);
    struct sched_thread *cur = c->mid;

    VS_ASSERT(sched_pool_held(sp));
    /* The thread at MID here is MID here, and a thread of this pool. */
    VS_ASSERT(cur == NULL || (cur->mid_on == (int)c->index && cur->dom->sp == sp));
    char err[SCHED_ERRLEN];

    if (want != NULL && want->gone)
        want = NULL;
    if (want == cur)
        return false;
    if (want != NULL) {
        /* Still MID on another CPU after a policy switch: that CPU loses it. */
        if (want->mid_on >= 0 && want->mid_on != (int)c->index)
            sp->cpus[want->mid_on].mid = NULL;
        err[0] = '\0';
        act_book(sp, want, act_set_cpu(want->act, c->host), "set affinity", NULL);
        act_book(sp, want,
                 act_set_level(want->act, prio, ACT_LEVEL_MID, sp->s->cfg.move_rt_cgroup, err,
                               sizeof(err)),
                 "raise to MID", err);
        want->mid_on = (int)c->index;
        if (want->wake_ts != 0) {
            uint64_t t = sched_now();

            lat_add(&sp->st, t > want->wake_ts ? t - want->wake_ts : 0);
            want->wake_ts = 0;
        }
    }
    /* Lower cur only if it is still ours (else raised elsewhere since). */
    if (cur != NULL && cur->mid_on != (int)c->index)
        cur = NULL;
    if (cur != NULL)
        cur->mid_on = -1;
    if (cur != NULL && !cur->gone) {
        err[0] = '\0';
        act_book(sp, cur,
                 act_set_level(cur->act, prio, ACT_LEVEL_LOW, sp->s->cfg.move_rt_cgroup, err,
                               sizeof(err)),
                 "lower to LOW", err);
        act_book(sp, cur, act_set_cpu(cur->act, sp->cpus[cur->pv->pv->cpu].host), "set affinity",
                 NULL);
    }
    c->mid = want;
    return want != NULL;
}

void
dispatch_apply(struct sched_pool *sp, uint64_t now)
{
    (void)now;
    VS_ASSERT(sched_pool_held(sp));
    apply_dirty(sp);
}

void
dispatch_lower_all(struct sched_pool *sp)
{
    const struct act_prio *prio = &sp->s->cfg.prio;
    char err[SCHED_ERRLEN];

    VS_ASSERT(sched_pool_held(sp));
    for (unsigned int i = 0; i < sp->nr_cpus; i++) {
        struct sched_thread *th = sp->cpus[i].mid;

        sp->cpus[i].mid = NULL;
        if (th == NULL || th->mid_on != (int)i)
            continue;
        th->mid_on = -1;
        if (th->gone)
            continue;
        err[0] = '\0';
        act_book(sp, th,
                 act_set_level(th->act, prio, ACT_LEVEL_LOW, sp->s->cfg.move_rt_cgroup, err,
                               sizeof(err)),
                 "lower to LOW", err);
    }
}

void
dispatch_forget(struct sched_pool *sp, struct sched_thread *th)
{
    VS_ASSERT(sched_pool_held(sp));
    for (unsigned int i = 0; i < sp->nr_cpus; i++) {
        if (sp->cpus[i].mid == th)
            sp->cpus[i].mid = NULL;
        if (sp->cpus[i].running == th)
            sp->cpus[i].running = NULL;
    }
    th->on_cpu = -1;
    th->mid_on = -1;
    runacct_forget(&th->acct);
}

void
dispatch_forget_running(struct sched_pool *sp, struct sched_thread *th)
{
    VS_ASSERT(sched_pool_held(sp));
    off_cpu(sp, th);
    runacct_forget(&th->acct);
}

void
dispatch_kick(struct sched_pool *sp, const struct cpuset *cpus)
{
    static const uint64_t one = 1;
    int i;

    if (cpuset_empty(cpus))
        return;
    if (sp->pattern != SCHED_SHARED) {
        atomic_store(&sp->poke, true);
        return;
    }
    cpuset_for_each(i, cpus)
    {
        if ((unsigned int)i < sp->nr_cpus)
            (void)!write(sp->cpus[i].kick_fd, &one, sizeof(one));
    }
}

static void
dispatch_kick_all(struct sched_pool *sp)
{
    struct cpuset all;

    cpuset_fill(&all, sp->nr_cpus);
    dispatch_kick(sp, &all);
}

/*
 * Shared pattern: the slice the policy gave starts at the pick's `now`,
 * but the dispatcher's own pass keeps the CPU until it sleeps, whether it
 * raised a new thread or kept the same one with a new slice. On a slow
 * host a pass costs more than a short slice, so the deadline had passed
 * before the thread ran at all. The slice starts at the sleep instead
 * (shared_main re-bases it with slice_ns). The policy is not told; it
 * sees the real time at its next call.
 * Dedicated pattern: nothing to move. A slot begins when its pass lowers
 * the previous thread and ends when the next pass lowers it, the same
 * time after each pass's start; a slice shorter than a pass gets a pass.
 */
static void
cpu_deadline(struct sched_pool *sp, struct sched_cpu *c, bool raised, uint64_t now)
{
    const struct pool_cpu *pc = &sp->pool.cpu[c->index];
    bool fresh = raised || pc->until != c->pool_until;

    c->pool_until = pc->until;
    c->slice_ns = 0;
    if (raised)
        c->raised_ns = sched_now();
    if (!fresh)
        return; /* the same slice: keep its start */
    c->until = pc->until;
    if (sp->pattern == SCHED_SHARED && c->mid != NULL && pc->until != POLICY_NEVER)
        c->slice_ns = pc->until > now ? pc->until - now : 1;
}

/* Dedicated: how long to wait for the switch to a raised thread to be seen. */
#define SWITCH_WAIT_NS (200 * NSEC_PER_USEC)

/*
 * Dedicated pattern: has the kernel switched c to the thread raised there?
 * A pass raises one thread and lowers the other by remote system calls;
 * the switch follows a reschedule IPI (~10 us on the nested test host).
 * A pass before it would undo it: at slices shorter than that, the same
 * thread ran on for milliseconds. Seen through switch events; without
 * them (/proc), or if none comes (a higher priority runs there), assumed
 * after SWITCH_WAIT_NS. A block or a wake re-picks anyway (need_pick).
 */
static bool
switch_seen(const struct sched_pool *sp, const struct sched_cpu *c, uint64_t now)
{
    return sp->pattern == SCHED_SHARED || c->mid == NULL || c->running == c->mid ||
           proc_mode(sp->s) || now - c->raised_ns >= SWITCH_WAIT_NS;
}

/*
 * One decision pass for CPU c at `now` (pool lock held): charge, run the
 * pool timer (CPU 0 of the pool owns it), re-pick if due or tickled,
 * actuate. Returns the next deadline of this CPU; *kick gets the other
 * CPUs to wake. Open runs are charged only by a pass that drained the
 * ring (`drained`): while another dispatcher drains, the runs this pool
 * believes open may have ended long ago (its records wait in that drain,
 * slow when the host takes that dispatcher's CPU).
 */
static uint64_t
cpu_step(struct sched_pool *sp, struct sched_cpu *c, uint64_t now, bool drained,
         struct cpuset *kick)
{
    uint64_t next;

    VS_ASSERT(sched_pool_held(sp));
    sp->st.decisions++;
    if (drained)
        account_running(sp, now);
    if (c->index == 0)
        pool_timer(&sp->pool, now);
    if (cpuset_has(pool_need_pick(&sp->pool), c->index) ||
        (c->until <= now && switch_seen(sp, c, now))) {
        pool_pick(&sp->pool, c->index, now);
        cpuset_clear(&sp->kicked, c->index);
    }
    apply_dirty(sp);
    cpu_deadline(sp, c, actuate_cpu(sp, c), now);
    cpuset_zero(kick);
    take_kicks(sp, kick);
    cpuset_clear(kick, c->index);
    next = c->until;
    if (c->index == 0 && sp->pool.pol.timer < next)
        next = sp->pool.pol.timer;
    if (proc_mode(sp->s) && now + sp->s->cfg.proc_poll_ns < next)
        next = now + sp->s->cfg.proc_poll_ns;
    return next;
}

/* --- shared pattern ------------------------------------------------------ */

/* Smoothing of the arming cost: 1/8 of each sample, as TCP's srtt. */
#define ARM_COST_SHIFT  3
#define ARM_COST_MAX_NS (100 * NSEC_PER_USEC) /* a sample beyond is a preemption */

/*
 * Arm c's timer for `when`, unless it is armed there and yet to fire.
 * Reprogramming the timer is a trap into the hypervisor on a VM (7-20 us
 * on the nested test host): its measured cost feeds slice_start.
 */
static void
timer_arm(struct sched_cpu *c, uint64_t when)
{
    struct itimerspec its = {0};
    uint64_t t0, cost;

    if (when == c->armed && (when == POLICY_NEVER || when > sched_now()))
        return;
    c->armed = when;
    if (when != POLICY_NEVER) {
        its.it_value.tv_sec = (time_t)(when / NSEC_PER_SEC);
        its.it_value.tv_nsec = (long)(when % NSEC_PER_SEC);
        if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
            its.it_value.tv_nsec = 1; /* zero would disarm */
    }
    t0 = sched_now();
    (void)timerfd_settime(c->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
    cost = sched_now() - t0;
    cost = cost < ARM_COST_MAX_NS ? cost : ARM_COST_MAX_NS;
    c->arm_ns = c->arm_ns - (c->arm_ns >> ARM_COST_SHIFT) + (cost >> ARM_COST_SHIFT);
}

/*
 * Shared pattern: the elected thread runs once the dispatcher sleeps,
 * after arming its timer. Start its slice there, so that it runs for the
 * slice even when the pass took longer. Returns the new `next`.
 */
static uint64_t
slice_start(struct sched_cpu *c, uint64_t next)
{
    uint64_t until = sched_now() + c->arm_ns + c->slice_ns;

    if (next == c->until)
        next = until; /* else an earlier deadline (pool timer, poll) comes first */
    c->until = until;
    c->slice_ns = 0;
    return next;
}

static void *
shared_main(void *arg)
{
    struct sched_cpu *c = arg;
    struct sched_pool *sp = c->sp;
    struct epoll_event ev[4];
    uint64_t buf;
    pid_t tid = gettid();
    int ep = epoll_create1(EPOLL_CLOEXEC);

    if (ep < 0)
        return NULL;
    ev[0] = (struct epoll_event){.events = EPOLLIN, .data.fd = c->kick_fd};
    epoll_ctl(ep, EPOLL_CTL_ADD, c->kick_fd, &ev[0]);
    ev[0] = (struct epoll_event){.events = EPOLLIN, .data.fd = c->timer_fd};
    epoll_ctl(ep, EPOLL_CTL_ADD, c->timer_fd, &ev[0]);
    if (events_fd(sp->s->ev) >= 0) {
        /* Wake one dispatcher per event batch, not all (where allowed). */
        ev[0] = (struct epoll_event){.events = EPOLLIN | EPOLLEXCLUSIVE,
                                     .data.fd = events_fd(sp->s->ev)};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, events_fd(sp->s->ev), &ev[0]) < 0) {
            ev[0].events = EPOLLIN;
            epoll_ctl(ep, EPOLL_CTL_ADD, events_fd(sp->s->ev), &ev[0]);
        }
    }
    statefile_beat(sp->s->sf, c->host, tid, sched_now());
    while (!atomic_load(&sp->stop)) {
        struct cpuset kick;
        uint64_t next, now;
        bool drained;
        int n = epoll_wait(ep, ev, 4, DISPATCH_BEAT_MS);

        if (n == 0) { /* nothing due: only say it lives */
            dispatch_fault_point(sp, c, false);
            statefile_beat(sp->s->sf, c->host, tid, sched_now());
            continue;
        }
        for (int i = 0; i < n; i++)
            if (ev[i].data.fd == c->kick_fd || ev[i].data.fd == c->timer_fd)
                (void)!read(ev[i].data.fd, &buf, sizeof(buf));
        drained = drain_events(sp->s, sched_now(), c) >= 0;
        dispatch_fault_point(sp, c, false);
        dispatch_lock(sp);
        dispatch_fault_point(sp, c, true);
        now = sched_now();
        next = cpu_step(sp, c, now, drained, &kick);
        dispatch_unlock(sp);
        dispatch_kick(sp, &kick);
        if (c->slice_ns != 0)
            next = slice_start(c, next);
        timer_arm(c, next);
        statefile_beat(sp->s->sf, c->host, tid, now);
    }
    close(ep);
    return NULL;
}

/* --- dedicated pattern ---------------------------------------------------- */

/*
 * Step every CPU of sp if it is due or poked and the control path does
 * not want its lock. Returns true if it stepped.
 */
enum dedicated_result {
    DEDICATED_STEPPED,
    DEDICATED_NOT_DUE, /* nothing to do: healthy */
    DEDICATED_BUSY,    /* the control path has (or wants) the pool: no progress */
};

static enum dedicated_result
dedicated_step(struct sched_pool *sp, uint64_t now)
{
    uint64_t next = POLICY_NEVER;
    struct cpuset kick;

    if (!atomic_load(&sp->poke) && now < atomic_load(&sp->next_due))
        return DEDICATED_NOT_DUE;
    if (atomic_load(&sp->ctl_waiting) > 0 || pthread_mutex_trylock(&sp->lock) != 0)
        return DEDICATED_BUSY;
    sched_pool_locked_by_me(sp, true);
    for (unsigned int i = 0; i < sp->nr_cpus; i++)
        dispatch_fault_point(sp, &sp->cpus[i], true);
    atomic_store(&sp->poke, false);
    for (unsigned int i = 0; i < sp->nr_cpus; i++) {
        uint64_t t = cpu_step(sp, &sp->cpus[i], sched_now(), true, &kick);

        if (t < next)
            next = t;
    }
    atomic_store(&sp->next_due, next);
    dispatch_unlock(sp);
    return DEDICATED_STEPPED;
}

/* The poller's heartbeats of sp's CPUs, refreshed at most every DEDICATED_BEAT_NS. */
static void
dedicated_beat(struct sched_pool *sp, pid_t tid, uint64_t now)
{
    if (now - sp->beat_ns < DEDICATED_BEAT_NS)
        return;
    sp->beat_ns = now;
    for (unsigned int i = 0; i < sp->nr_cpus; i++)
        statefile_beat(sp->s->sf, sp->cpus[i].host, tid, now);
}

static void *
dedicated_main(void *arg)
{
    struct sched *s = arg;
    uint64_t last_proc = 0;
    pid_t tid = gettid();

    while (!atomic_load(&s->dstop)) {
        uint64_t now = sched_now();
        bool stepped = false;

        if (!proc_mode(s) || now - last_proc >= s->cfg.proc_poll_ns) {
            drain_events(s, now, NULL);
            last_proc = now;
        }
        for (unsigned int i = 0; i < SCHED_MAX_POOLS; i++) {
            struct sched_pool *sp = atomic_load(&s->dpools[i]);
            enum dedicated_result r = sp != NULL ? dedicated_step(sp, now) : DEDICATED_BUSY;

            stepped = stepped || r == DEDICATED_STEPPED;
            if (r != DEDICATED_BUSY)
                dedicated_beat(sp, tid, now);
        }
        atomic_fetch_add(&s->dloops, 1); /* no pool pointer is held past here */
        if (!stepped)
            __builtin_ia32_pause();
    }
    return NULL;
}

/* --- start and stop ------------------------------------------------------- */

/* Create a SCHED_FIFO HIGH thread pinned to `cpu` (EPERM if refused). */
static int
spawn(pthread_t *t, int cpu, int prio, void *(*fn)(void *), void *arg)
{
    struct sched_param sp = {.sched_priority = prio};
    pthread_attr_t attr;
    cpu_set_t set;
    int r;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_attr_init(&attr);
    pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
    pthread_attr_setschedparam(&attr, &sp);
    pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
    r = pthread_create(t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    return -r;
}

/* Why a dispatcher did not start; EPERM is most often an RT cgroup. */
static void
spawn_error(const struct sched_pool *sp, int cpu, int r, char *err, size_t errlen)
{
    snprintf(err, errlen, "pool %s: dispatcher on cpu %d: %s%s", sp->pool.name, cpu, strerror(-r),
             r == -EPERM ? " (SCHED_FIFO refused: is the daemon in a cpu cgroup without "
                           "real-time runtime? see CONFIG_RT_GROUP_SCHED in the start-up log)"
                         : "");
}

/* Hand sp to the dedicated dispatcher, starting it for the first pool. */
static int
dedicated_add(struct sched_pool *sp, char *err, size_t errlen)
{
    struct sched *s = sp->s;
    unsigned int i;
    int r;

    for (i = 0; i < SCHED_MAX_POOLS && atomic_load(&s->dpools[i]) != NULL; i++)
        ;
    if (i == SCHED_MAX_POOLS) {
        snprintf(err, errlen, "pool %s: no dispatcher slot", sp->pool.name);
        return -ENOSPC;
    }
    if (!s->dstarted) {
        atomic_store(&s->dstop, false);
        r = spawn(&s->dthread, s->cfg.dedicated_cpu, s->cfg.prio.high, dedicated_main, s);
        if (r < 0) {
            spawn_error(sp, s->cfg.dedicated_cpu, r, err, errlen);
            return r;
        }
        s->dstarted = true;
    }
    sp->dthread = s->dthread;
    sp->dstarted = true;
    sp->beat_ns = 0;
    atomic_store(&sp->next_due, 0);
    atomic_store(&s->dpools[i], sp);
    return 0;
}

/*
 * Take sp from the dedicated dispatcher: once a whole loop has ended after
 * its slot was cleared, no step of it is running or can start. The last
 * pool stops the dispatcher.
 */
static void
dedicated_remove(struct sched_pool *sp)
{
    struct sched *s = sp->s;
    const struct timespec tick = {0, 20000};
    bool others = false;
    uint64_t loops;

    for (unsigned int i = 0; i < SCHED_MAX_POOLS; i++) {
        if (atomic_load(&s->dpools[i]) == sp)
            atomic_store(&s->dpools[i], NULL);
        else if (atomic_load(&s->dpools[i]) != NULL)
            others = true;
    }
    if (!sp->dstarted)
        return;
    sp->dstarted = false;
    if (!others) {
        atomic_store(&s->dstop, true);
        pthread_join(s->dthread, NULL);
        s->dstarted = false;
    } else {
        loops = atomic_load(&s->dloops);
        while (atomic_load(&s->dloops) == loops)
            nanosleep(&tick, NULL);
    }
    for (unsigned int i = 0; i < sp->nr_cpus; i++)
        statefile_beat_stop(s->sf, sp->cpus[i].host);
}

int
dispatch_start(struct sched_pool *sp, char *err, size_t errlen)
{
    const struct sched_config *cfg = &sp->s->cfg;
    int r;

    atomic_store(&sp->stop, false);
    if (sp->pattern == SCHED_DEDICATED)
        return dedicated_add(sp, err, errlen);
    for (unsigned int i = 0; i < sp->nr_cpus; i++) {
        struct sched_cpu *c = &sp->cpus[i];

        r = spawn(&c->thread, c->host, cfg->prio.high, shared_main, c);
        if (r < 0) {
            spawn_error(sp, c->host, r, err, errlen);
            dispatch_stop(sp);
            return r;
        }
        c->started = true;
    }
    dispatch_kick_all(sp);
    return 0;
}

void
dispatch_stop(struct sched_pool *sp)
{
    if (sp->pattern == SCHED_DEDICATED) {
        dedicated_remove(sp);
        return;
    }
    atomic_store(&sp->stop, true);
    dispatch_kick_all(sp);
    for (unsigned int i = 0; i < sp->nr_cpus; i++) {
        if (sp->cpus[i].started)
            pthread_join(sp->cpus[i].thread, NULL);
        sp->cpus[i].started = false;
        statefile_beat_stop(sp->s->sf, sp->cpus[i].host);
    }
}
