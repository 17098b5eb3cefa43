/* SPDX-License-Identifier: ISC */
/*
 * sched_priv.h - internals shared by sched_core.c (control path), dispatch.c
 * (dispatchers and events) and sched_json.c (reports).
 *
 * Locking. s->lock guards the structure (pools, domains) and is taken only
 * by the control thread. Each pool's lock (priority-inheriting, since
 * SCHED_FIFO dispatchers wait on it) guards its pool layer, its threads'
 * event state and its actuation state; a dispatcher does not queue on it
 * while the control path waits (ctl_waiting). s->ev_lock lets one dispatcher at a
 * time drain the event ring and kick the pools its records name; it is
 * never taken while holding a pool lock. A thread record is freed only
 * under it, after its events are unwatched, and a pool only after taking
 * it, so no drain still names a pool being freed.
 */
#ifndef VCPUSCHED_SCHED_PRIV_H
#define VCPUSCHED_SCHED_PRIV_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/queue.h>

#include "common/assert.h"
#include "host/procid.h"
#include "policy/pool.h"
#include "runacct.h"
#include "sched_core.h"

#define SCHED_LAT_BUCKETS 40  /* log2 ns buckets of wake-to-MID latency */
#define SCHED_ERRLEN      512 /* an actuator message: cgroup paths and why */

struct sched_pool;

struct sched_thread {
    struct act_thread *act; /* lives in the state file */
    int slot;               /* state file slot, also the events cookie */
    struct sched_dom *dom;
    struct pool_vcpu *pv;
    /* Measured by events (pool lock). */
    int on_cpu;          /* pool CPU it runs on now, -1 */
    int mid_on;          /* pool CPU where it is actuated at MID, -1 */
    bool detached;       /* being detached: ignore its events */
    struct runacct acct; /* run time charged */
    uint64_t wake_ts;    /* kernel time of a wake not yet elevated, 0 */
    uint64_t switches;   /* times it was switched in */
    bool gone;
    /* Waiting while runnable (sched_wait.c; pool lock). */
    uint64_t queued_ts;       /* kernel time since which it is runnable, not running; 0 */
    uint64_t wait_base_ns;    /* the kernel's run_delay at attach */
    uint64_t wait_ns;         /* waited since attach, as last reported (never goes back) */
    uint64_t wait_sample_ns;  /* wait_ns at the last sample */
    uint64_t wait_sample_at;  /* when (sched_now), 0: none yet */
    uint32_t wait_recent_ppm; /* part of the last sample interval spent waiting */
};

/*
 * The other threads of a domain's process, kept off the reserved CPUs
 * (sched_place.c): their state file slots, and the threads looked at that
 * needed nothing or could not be moved (said once), until the pools change.
 */
#define SCHED_PLACE_TIDS_MAX 256
struct sched_place {
    int *slots; /* state file slots of the threads kept off (act.placed) */
    unsigned int n, cap;
    uint64_t kept_off; /* threads moved off since attach */
    cpu_set_t off;     /* the reserved CPUs of the last scan */
    pid_t seen[SCHED_PLACE_TIDS_MAX];
    unsigned int nseen;
    pid_t pinned[SCHED_PLACE_TIDS_MAX]; /* only allowed on reserved CPUs: left there */
    unsigned int npinned;
    bool full_said; /* no state file slot left: logged */
};

struct sched_dom {
    char name[VS_NAME_SIZE];
    char source[16];
    char origin[SCHED_ORIGIN_SIZE]; /* where its vCPUs are found again, or "" */
    pid_t pid;
    struct procid ident; /* pid's process when attached (the live record) */
    struct sched_pool *sp;
    struct pool_dom *pd;
    unsigned int nr_threads;
    struct sched_thread **threads; /* in vCPU order, like pd->vcpus; each allocated alone */
    struct sched_place *place;     /* its process's other threads, or NULL */
    TAILQ_ENTRY(sched_dom) link;
};
TAILQ_HEAD(sched_dom_list, sched_dom);

struct sched_cpu {
    struct sched_pool *sp;
    unsigned int index; /* in the pool */
    int host;
    int kick_fd; /* eventfd: wake this CPU's dispatcher */
    int timer_fd;
    pthread_t thread;
    bool started;
    struct sched_thread *mid;     /* at MID on this CPU (actuated) */
    struct sched_thread *running; /* on the CPU now, per events */
    /*
     * Owned by the dispatcher serving this CPU. `until` is the slice end it
     * enforces: the pool's, moved in the shared pattern so that a slice
     * starts when its thread can run (see cpu_deadline).
     */
    uint64_t until;
    uint64_t pool_until; /* the pool's `until` that `until` was derived from */
    uint64_t slice_ns;   /* shared: a slice just given, to start at sleep; 0 */
    uint64_t raised_ns;  /* dedicated: when `mid` was raised */
    uint64_t armed;      /* shared: the timer's expiry */
    uint64_t arm_ns;     /* shared: average cost of arming the timer */
};

struct sched_pool_stats {
    uint64_t syscalls;
    uint64_t act_errors;
    uint64_t events;
    uint64_t decisions;               /* dispatcher passes */
    uint64_t lat[SCHED_LAT_BUCKETS];  /* wake -> elevated to MID */
    uint64_t lat_sum_ns;              /* of every latency in lat[] (a histogram's _sum) */
    uint64_t charge_overshoot_ns;     /* open runs charged beyond what the kernel then
                                         reported: owed back (runacct.h) */
    uint64_t charge_overshoot_max_ns; /* the largest of those, one run */
    uint64_t charge_stale_runs; /* open runs housekeeping found off the CPU (sched_wake_missed) */
    uint64_t ctl_waits;         /* control-path lock acquisitions */
    uint64_t ctl_wait_sum_ns;   /* their waits for the lock */
    uint64_t ctl_wait_max_ns;
    uint64_t created_ns;
    unsigned int
        foreign_now;       /* threads not ours runnable on its CPUs, last scan (sched_foreign.c) */
    uint64_t foreign_seen; /* the sum of those over every scan */
};

struct sched_pool {
    struct sched *s;
    pthread_mutex_t lock;
    _Atomic unsigned long lock_owner; /* pthread_self() of the holder (VS_ASSERT), or 0 */
    struct pool pool;
    enum sched_pattern pattern;
    unsigned int nr_cpus;
    struct sched_cpu cpus[CPUSET_MAX];
    /* SCHED_DEDICATED: the dispatcher serving it (shared by every pool). */
    pthread_t dthread;
    bool dstarted;
    atomic_bool stop;     /* SCHED_SHARED: its dispatchers exit */
    struct cpuset kicked; /* CPUs kicked and not yet picked */
    /* Dedicated pattern: the poller locks only when poked or due. */
    atomic_bool poke;
    _Atomic uint64_t next_due;
    uint64_t beat_ns; /* the poller's last heartbeat of this pool's CPUs */
    /*
     * Control paths waiting for `lock` (not yet holding it). A PI unlock
     * hands the lock to its highest-priority waiter, so a SCHED_OTHER
     * control thread queued behind FIFO dispatchers never gets it while
     * two of them keep taking it: dispatchers do not queue while this is
     * non-zero. They wait on ctl_cv (under ctl_mx) until it drops, when the
     * control path holds the lock; the dedicated poller skips the pool.
     */
    atomic_int ctl_waiting;
    pthread_mutex_t ctl_mx;
    pthread_cond_t ctl_cv;
    struct sched_pool_stats st;
    char last_error[SCHED_ERRLEN]; /* actuator messages name cgroup paths */
};

#define SCHED_FOREIGN_SAID 256
struct sched {
    struct sched_config cfg;
    struct statefile *sf;
    struct events *ev;
    pthread_mutex_t lock;
    pthread_mutex_t ev_lock;
    struct sched_pool *pools[SCHED_MAX_POOLS];
    unsigned int nr_pools;
    struct sched_dom_list doms;
    struct sched_thread *_Atomic threads[STATEFILE_SLOTS]; /* by slot */
    atomic_bool resync; /* events were lost: re-read thread states */
    uint64_t resyncs;
    uint64_t missed_wakes; /* runnable threads found blocked to the pool (sched_wake_missed) */
    bool ev_wakeup;        /* the event ring wakes a waiter (not in the dedicated pattern) */
    uint64_t start_ns;
    /*
     * SCHED_DEDICATED: one busy-polling dispatcher serves every pool (two
     * FIFO pollers on one CPU: the second would never run). It walks
     * dpools; a pool leaves once `dloops` shows a whole loop after its
     * slot was cleared (control thread: the rest).
     */
    struct sched_pool *_Atomic dpools[SCHED_MAX_POOLS];
    _Atomic uint64_t dloops;
    atomic_bool dstop;
    pthread_t dthread;
    bool dstarted;
    pid_t foreign_said[SCHED_FOREIGN_SAID]; /* threads sched_foreign_scan logged, a ring */
    unsigned int foreign_next;
    struct {
        uint64_t scans, last_ns, max_ns; /* walks of /proc and what they took */
        unsigned int gap_ms;             /* the pause after the last one */
    } foreign_scan;
    atomic_int fault; /* test builds: enum sched_fault (dispatch_fault.c) */
    atomic_int fault_cpu;
    _Atomic uint64_t changes; /* pools and domains changed (sched_changes) */
};

/* A pool or domain changed: what sched_json_record shows. */
static inline void
sched_changed(struct sched *s)
{
    atomic_fetch_add(&s->changes, 1);
}

/*
 * Test builds (VCPUSCHED_FAULTS): where a dispatcher meets an armed fault
 * (dispatch_fault.c), holding the pool lock (`locked`) or about to take
 * it; nothing elsewhere.
 */
#if VCPUSCHED_FAULTS
void dispatch_fault_point(struct sched_pool *sp, const struct sched_cpu *c, bool locked);
#else
static inline void
dispatch_fault_point(struct sched_pool *sp, const struct sched_cpu *c, bool locked)
{
    (void)sp, (void)c, (void)locked;
}
#endif

/* sched_wait.c: the kernel's run_delay of a thread now (0 if unreadable). */
uint64_t sched_wait_base(pid_t pid, pid_t tid);
/*
 * Waited since attach at now, from the kernel's run_delay (delay_ns; < 0:
 * unread) and the wait under way; never less than reported before.
 */
uint64_t sched_wait_total(struct sched_thread *th, int64_t delay_ns, uint64_t now);
/* The same, kept as a sample: wait_recent_ppm is the part of the interval since the last. */
void sched_wait_sample(struct sched_thread *th, int64_t delay_ns, uint64_t now);

/* dispatch.c */
int dispatch_start(struct sched_pool *sp, char *err, size_t errlen);
void dispatch_stop(struct sched_pool *sp);
/* With the pool lock held: actuate new placement/parking and decisions. */
void dispatch_apply(struct sched_pool *sp, uint64_t now);
void dispatch_kick(struct sched_pool *sp, const struct cpuset *cpus);
/*
 * Lower every thread raised on the pool's CPUs (pool lock held, its
 * dispatchers stopped): before the CPUs change under them.
 */
void dispatch_lower_all(struct sched_pool *sp);
/* Release a thread's actuation state (pool lock held). */
void dispatch_forget(struct sched_pool *sp, struct sched_thread *th);
/* A thread exited: it sleeps for good and the reaper may detach its domain (pool lock held). */
void dispatch_thread_gone(struct sched_pool *sp, struct sched_thread *th, uint64_t now);
/* Forget that a thread is on a CPU (its switch events were lost). */
void dispatch_forget_running(struct sched_pool *sp, struct sched_thread *th);

/*
 * The pool lock's holder, recorded where assertions are on, so that the
 * functions documented "pool lock held" can check it.
 */
static inline void
sched_pool_locked_by_me(struct sched_pool *sp, bool mine)
{
#if defined(VS_ASSERTIONS) && VS_ASSERTIONS
    atomic_store_explicit(&sp->lock_owner, mine ? (unsigned long)pthread_self() : 0,
                          memory_order_relaxed);
#else
    (void)sp, (void)mine;
#endif
}

static inline bool
sched_pool_held(const struct sched_pool *sp)
{
    return atomic_load_explicit(&sp->lock_owner, memory_order_relaxed) ==
           (unsigned long)pthread_self();
}

/* Control-path locking of a pool: the dispatchers let it in first (ctl_waiting). */
void sched_pool_lock(struct sched_pool *sp);
void sched_pool_unlock(struct sched_pool *sp);

/* dispatch.c: CLOCK_MONOTONIC in ns, the time every decision is taken at. */
uint64_t sched_now(void);
/* sched_core.c (s->lock held) */
struct sched_dom *sched_dom_find(struct sched *s, const char *name);
/* The pool called `name` (NULL: the first), or NULL. */
struct sched_pool *sched_pool_find(struct sched *s, const char *name);
/* A thread record of d, not opened (slot -1), or NULL. */
struct sched_thread *sched_thread_new(struct sched_dom *d);
/*
 * Take a state-file slot for th, record thread `tid` of th->dom->pid,
 * probe which CPUs of its pool its cpuset allows (into *aff; -EINVAL if
 * none) and watch its events. Nothing scheduled yet; on error release it.
 */
int sched_thread_open(struct sched *s, struct sched_thread *th, pid_t tid, struct cpuset *aff,
                      char *err, size_t errlen);
/* Give ths[0..n) back and free them (out of their pool already); NULLs skipped. */
void sched_threads_release(struct sched *s, struct sched_thread **ths, unsigned int n);

/*
 * sched_move.c: which of host CPUs hosts[0..n) the cgroup cpuset of each
 * of d's threads allows, into aff[] (indexes into hosts; a gone thread's
 * empty). Probing moves a thread (act_probe_cpus), so each goes back to
 * the CPU it had at once, under its pool's lock, which its dispatchers
 * take to pin it. -EINVAL if a thread may use none (`what` names them).
 */
int sched_probe_cpus(struct sched_dom *d, const int *hosts, unsigned int n, const char *what,
                     struct cpuset *aff, char *err, size_t errlen);

/* sched_core.c: cpus[0..n) free for a pool (or already `own`'s), each once, none the dedicated
 * dispatcher's. */
int sched_cpus_check(struct sched *s, const struct sched_pool *own, const struct policy_cpu *cpus,
                     unsigned int n, char *err, size_t errlen);
bool sched_pool_has_cpu(const struct sched_pool *sp, int host);
/* A CPU record's descriptors (kick eventfd, timerfd): opened (-errno, none left), closed. */
int sched_cpu_open(struct sched_cpu *c, char *err, size_t errlen);
void sched_cpu_close(struct sched_cpu *c);

/* sched_vcpus.c: whether `tid` is one of d's vCPU threads (gone or not). */
bool sched_dom_has_tid(const struct sched_dom *d, pid_t tid);
/* sched_place.c: the other threads of domain d's process, its vhost kernel threads (s->lock held).
 */
void sched_place_scan(struct sched *s, struct sched_dom *d);
/* Keep the domains' vhost kernel threads among v[0..n) off the pools' CPUs (s->lock held). */
struct discover_vhost;
void sched_place_vhost(struct sched *s, const struct discover_vhost *v, unsigned int n);
/* Give them back exactly (detach, exit). */
void sched_place_release(struct sched *s, struct sched_dom *d);

#endif /* VCPUSCHED_SCHED_PRIV_H */
