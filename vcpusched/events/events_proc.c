/* SPDX-License-Identifier: ISC */
/*
 * events_proc.c - the /proc fallback of the event source.
 *
 * Keeps /proc/<pid>/task/<tid>/stat and schedstat open for each watched
 * thread and reads both (pread) at every poll: a change of state between
 * R and anything else gives WAKE or STOP(blocked=1), a change of the
 * schedstat run time gives CHARGE, a thread that is gone or a zombie gives
 * EXIT. Limits: records are stamped with the poll's time, not the
 * kernel's, so a wake is seen up to one poll late; a sleep and wake that
 * both fall between two polls are not seen at all (their run time still
 * arrives as CHARGE, which lags a thread on a CPU by up to a tick, as
 * schedstat is updated at ticks and switches); there are no switch events
 * (no RUN, no preemption); each poll costs two preads per thread (~2.5 us
 * each on the project's host).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "events_impl.h"

/* Room for a stat line up to field 9 (flags): the name is at most 64
 * bytes, the numbers before flags at most 20 digits each. */
#define PROC_STAT_READ 256
/* schedstat: three decimal u64 and spaces. */
#define PROC_SCHEDSTAT_READ 96
/* At most three records per thread and poll: WAKE, CHARGE, STOP or EXIT. */
#define PROC_RECS_PER_THREAD 3

struct proc_thread {
    pid_t tid;
    uint32_t cookie;
    int stat_fd;
    int sched_fd;
    uint64_t run_ns; /* schedstat run time at the last CHARGE */
    bool running;    /* state R at the last poll */
};

struct events_proc {
    pthread_mutex_t lock; /* guards th[], nr; never held across a callback */
    struct proc_thread th[EVENTS_MAX_THREADS];
    unsigned int nr;
    struct events_rec *out; /* records of one poll, delivered after unlock */
    _Atomic uint64_t reads; /* written by the poller only */
};

int
events_proc_parse_stat(const char *buf, size_t len, char *state, unsigned long *flags)
{
    const char *p = NULL, *end = buf + len;
    unsigned long v = 0;
    int field = 3;

    for (const char *q = buf; q < end; q++)
        if (*q == ')')
            p = q;
    if (p == NULL || end - p < 4 || p[1] != ' ' || p[3] != ' ')
        return -EINVAL;
    *state = p[2];
    /* Fields 4..8 are ppid pgrp session tty_nr tpgid (tpgid may be -1). */
    for (p += 3; p < end && field < 9; p++)
        if (*p == ' ')
            field++;
    if (field != 9 || p >= end || *p < '0' || *p > '9')
        return -EINVAL;
    for (; p < end && *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (unsigned long)(*p - '0');
    if (p >= end || *p != ' ')
        return -EINVAL; /* cut short: the number may be incomplete */
    *flags = v;
    return 0;
}

int
events_proc_parse_schedstat(const char *buf, size_t len, uint64_t *run_ns)
{
    uint64_t v = 0;
    size_t i;

    for (i = 0; i < len && buf[i] >= '0' && buf[i] <= '9'; i++) {
        uint64_t d = (uint64_t)(buf[i] - '0');

        if (v > (UINT64_MAX - d) / 10)
            return -EINVAL;
        v = v * 10 + d;
    }
    if (i == 0 || i == len || (buf[i] != ' ' && buf[i] != '\n'))
        return -EINVAL;
    *run_ns = v;
    return 0;
}

/* pread a whole small /proc file: length, or -errno (-ESRCH once gone). */
static ssize_t
proc_pread(int fd, char *buf, size_t size)
{
    ssize_t n = pread(fd, buf, size, 0);

    if (n < 0)
        return -errno;
    return n;
}

/* Read state and flags: 0, -ESRCH (gone or zombie) or another -errno. */
static int
proc_read_stat(int fd, char *state, unsigned long *flags)
{
    char buf[PROC_STAT_READ];
    ssize_t n = proc_pread(fd, buf, sizeof(buf));

    if (n == -ENOENT || n == 0)
        return -ESRCH;
    if (n < 0)
        return (int)n;
    if (events_proc_parse_stat(buf, (size_t)n, state, flags) < 0)
        return -EINVAL;
    return *state == 'Z' || *state == 'X' || *state == 'x' ? -ESRCH : 0;
}

static int
proc_read_run(int fd, uint64_t *run_ns)
{
    char buf[PROC_SCHEDSTAT_READ];
    ssize_t n = proc_pread(fd, buf, sizeof(buf));

    if (n == -ENOENT || n == 0)
        return -ESRCH;
    if (n < 0)
        return (int)n;
    return events_proc_parse_schedstat(buf, (size_t)n, run_ns);
}

static int
proc_open_file(pid_t pid, pid_t tid, const char *name)
{
    char path[64];
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", (int)pid, (int)tid, name);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/* Say why a thread cannot be watched; ENOENT (no such entry) is ESRCH. */
static int
proc_fail(pid_t pid, pid_t tid, int r, char *err, size_t errlen)
{
    snprintf(err, errlen, "thread %d of process %d: %s", (int)tid, (int)pid,
             r == -ENOENT  ? "no such thread"
             : r == -ESRCH ? "gone or exiting"
                           : strerror(-r));
    return r == -ENOENT ? -ESRCH : r;
}

int
events_proc_open(struct events_proc **out, char *err, size_t errlen)
{
    pthread_mutexattr_t ma;
    struct events_proc *p = calloc(1, sizeof(*p));

    if (p != NULL)
        p->out = calloc(EVENTS_MAX_THREADS * PROC_RECS_PER_THREAD, sizeof(*p->out));
    if (p == NULL || p->out == NULL) {
        free(p);
        snprintf(err, errlen, "events: out of memory");
        return -ENOMEM;
    }
    /* The poller may be a SCHED_FIFO dispatcher, the watcher not. */
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);
    pthread_mutex_init(&p->lock, &ma);
    pthread_mutexattr_destroy(&ma);
    *out = p;
    return 0;
}

static void
proc_thread_close(struct proc_thread *t)
{
    close(t->stat_fd);
    close(t->sched_fd);
}

/* Open and read a thread's files (no lock held): 0 or -errno. */
static int
proc_thread_init(struct proc_thread *t, pid_t pid, pid_t tid, char *err, size_t errlen)
{
    unsigned long flags = 0;
    char state = '?';
    int r;

    *t = (struct proc_thread){.tid = tid, .stat_fd = -1, .sched_fd = -1};
    r = t->stat_fd = proc_open_file(pid, tid, "stat");
    if (r >= 0)
        r = t->sched_fd = proc_open_file(pid, tid, "schedstat");
    if (r >= 0)
        r = proc_read_stat(t->stat_fd, &state, &flags);
    if (r >= 0 && (flags & EVENTS_PF_EXITING))
        r = -ESRCH;
    if (r >= 0)
        r = proc_read_run(t->sched_fd, &t->run_ns);
    if (r < 0) {
        if (t->stat_fd >= 0)
            close(t->stat_fd);
        if (t->sched_fd >= 0)
            close(t->sched_fd);
        return proc_fail(pid, tid, r, err, errlen);
    }
    t->running = state == 'R';
    return 0;
}

int
events_proc_check(pid_t pid, pid_t tid, uint64_t *run_ns, char *err, size_t errlen)
{
    struct proc_thread t;
    int r = proc_thread_init(&t, pid, tid, err, errlen);

    if (r < 0)
        return r;
    *run_ns = t.run_ns;
    proc_thread_close(&t);
    return 0;
}

static int
proc_find(const struct events_proc *p, pid_t tid)
{
    for (unsigned int i = 0; i < p->nr; i++)
        if (p->th[i].tid == tid)
            return (int)i;
    return -1;
}

int
events_proc_watch(struct events_proc *p, pid_t pid, pid_t tid, uint32_t cookie, char *err,
                  size_t errlen)
{
    struct proc_thread t;
    int r = proc_thread_init(&t, pid, tid, err, errlen);

    if (r < 0)
        return r;
    t.cookie = cookie;
    pthread_mutex_lock(&p->lock);
    if (proc_find(p, tid) >= 0)
        r = -EEXIST;
    else if (p->nr == EVENTS_MAX_THREADS)
        r = -ENOSPC;
    else
        p->th[p->nr++] = t;
    pthread_mutex_unlock(&p->lock);
    if (r < 0) {
        snprintf(err, errlen, "thread %d: %s", (int)tid,
                 r == -EEXIST ? "already watched" : "too many watched threads");
        proc_thread_close(&t);
    }
    return r;
}

int
events_proc_unwatch(struct events_proc *p, pid_t tid)
{
    struct proc_thread t;
    int i;

    pthread_mutex_lock(&p->lock);
    i = proc_find(p, tid);
    if (i >= 0) {
        t = p->th[i];
        p->th[i] = p->th[--p->nr];
    }
    pthread_mutex_unlock(&p->lock);
    if (i < 0)
        return -ENOENT;
    proc_thread_close(&t);
    return 0;
}

static struct events_rec *
proc_rec(struct events_rec *r, const struct proc_thread *t, uint8_t type, uint64_t now_ns,
         uint64_t ran_ns)
{
    *r = (struct events_rec){.ts_ns = now_ns,
                             .ran_ns = ran_ns,
                             .cookie = t->cookie,
                             .tid = t->tid,
                             .cpu = -1,
                             .type = type,
                             .blocked = type == EVENTS_STOP};
    return r + 1;
}

/*
 * Sample one thread into r (room for PROC_RECS_PER_THREAD). A wake is
 * reported before the run time that follows it, a sleep after the run
 * time that preceded it. Returns the end of what was written; *gone when
 * the thread exited (EXIT written).
 */
static struct events_rec *
proc_sample(struct proc_thread *t, uint64_t now_ns, struct events_rec *r, bool *gone)
{
    unsigned long flags;
    uint64_t run_ns = t->run_ns;
    char state;
    int e = proc_read_stat(t->stat_fd, &state, &flags);

    if (e == 0)
        e = proc_read_run(t->sched_fd, &run_ns);
    *gone = e < 0; /* ESRCH; any other read error of /proc is as final */
    if (*gone)
        return proc_rec(r, t, EVENTS_EXIT, now_ns, 0);
    if (!t->running && state == 'R')
        r = proc_rec(r, t, EVENTS_WAKE, now_ns, 0);
    if (run_ns > t->run_ns)
        r = proc_rec(r, t, EVENTS_CHARGE, now_ns, run_ns - t->run_ns);
    if (t->running && state != 'R')
        r = proc_rec(r, t, EVENTS_STOP, now_ns, 0);
    t->run_ns = run_ns;
    t->running = state == 'R';
    return r;
}

int
events_proc_poll(struct events_proc *p, uint64_t now_ns,
                 void (*cb)(void *ctx, const struct events_rec *r), void *ctx)
{
    struct events_rec *end = p->out;
    uint64_t reads = 0;
    unsigned int i = 0;

    pthread_mutex_lock(&p->lock);
    while (i < p->nr) {
        bool gone;

        end = proc_sample(&p->th[i], now_ns, end, &gone);
        reads += 2;
        if (!gone) {
            i++;
            continue;
        }
        proc_thread_close(&p->th[i]);
        p->th[i] = p->th[--p->nr];
    }
    pthread_mutex_unlock(&p->lock);
    atomic_store_explicit(&p->reads, atomic_load_explicit(&p->reads, memory_order_relaxed) + reads,
                          memory_order_relaxed);
    for (const struct events_rec *r = p->out; r < end; r++)
        cb(ctx, r);
    return (int)(end - p->out);
}

void
events_proc_stats(struct events_proc *p, struct events_stats *st)
{
    st->proc_reads = atomic_load_explicit(&p->reads, memory_order_relaxed);
    pthread_mutex_lock(&p->lock);
    st->watched = p->nr;
    pthread_mutex_unlock(&p->lock);
}

void
events_proc_close(struct events_proc *p)
{
    if (p == NULL)
        return;
    for (unsigned int i = 0; i < p->nr; i++)
        proc_thread_close(&p->th[i]);
    pthread_mutex_destroy(&p->lock);
    free(p->out);
    free(p);
}
