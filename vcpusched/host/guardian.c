/* SPDX-License-Identifier: ISC */
/*
 * guardian.c - the process that restores managed threads when the daemon
 * dies or is stuck; see guardian.h. The judgement is watchdog.c's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "actuator.h"
#include "common/clock.h"
#include "guardian.h"
#include "watchdog.h"

struct guard {
    int fd; /* our end of the pipe */
    struct statefile *sf;
    uint32_t gen;
    pid_t daemon;
    int pidfd;                     /* the daemon, signalled without a pid race; -1 */
    struct watchdog_thread *track; /* by state file slot */
    bool tracking;                 /* some thread in track[] is followed */
    bool journal;                  /* stderr is the journal's stream */
    FILE *trace;                   /* test builds: every sample (VCPUSCHED_WATCHDOG_TRACE) */
};

/* Close every descriptor but `keep` and the standard ones. */
static void
close_other_fds(int keep1, int keep2)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        int fd = atoi(e->d_name);

        if (e->d_name[0] != '.' && fd > 2 && fd != keep1 && fd != keep2 && fd != dirfd(d))
            close(fd);
    }
    closedir(d);
}

/*
 * A line to the daemon's stderr (the journal under systemd, with its
 * priority) and, when that is not the journal, to syslog as well.
 */
static void __attribute__((format(printf, 3, 4)))
guard_log(const struct guard *g, int prio, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (g->journal) {
        fprintf(stderr, "<%d>vcpusched-guard: %s\n", prio, msg);
        return;
    }
    fprintf(stderr, "vcpusched-guard: %s\n", msg);
    openlog("vcpusched-guard", LOG_PID, LOG_DAEMON);
    syslog(prio, "%s", msg);
}

/* Signal the daemon through its pidfd where there is one. */
static void
daemon_signal(const struct guard *g, int sig)
{
    if (g->pidfd < 0 || syscall(SYS_pidfd_send_signal, g->pidfd, sig, NULL, 0) < 0)
        (void)kill(g->daemon, sig);
}

/* What /proc says of a managed thread now; -errno if it is gone. */
static int
sample(const struct act_thread *a, struct watchdog_sample *s)
{
    struct act_schedstat st;
    int r = act_read_stat(a->pid, a->tid, &s->state, NULL);

    if (r == 0)
        r = act_read_schedstat(a->pid, a->tid, &st);
    if (r < 0)
        return r;
    s->exec_ns = st.run_ns;
    s->pcount = st.pcount;
    return 0;
}

/* The CPUs whose heartbeat makes their threads worth sampling; false if none. */
static bool
suspects(const struct guard *g, uint64_t now, struct cpuset *out)
{
    cpuset_zero(out);
    for (int c = 0; c < STATEFILE_CPUS; c++) {
        uint64_t pass;

        if (statefile_beat_read(g->sf, c, &pass) != 0 &&
            (g->trace != NULL || watchdog_cpu_suspect(pass, now)))
            cpuset_set(out, (unsigned int)c);
    }
    return !cpuset_empty(out);
}

/*
 * One round: follow the threads of suspect CPUs; the longest wait that
 * trips goes to *out. True if one trips.
 */
static bool
watch_round(struct guard *g, uint64_t now, struct statefile_trip *out)
{
    uint64_t bound =
        (uint64_t)__atomic_load_n(&g->sf->watch->bound_ms, __ATOMIC_RELAXED) * NSEC_PER_MSEC;
    uint64_t best = 0;
    struct cpuset sus;

    if ((bound == 0 && g->trace == NULL) || !suspects(g, now, &sus)) {
        if (g->tracking)
            memset(g->track, 0, STATEFILE_SLOTS * sizeof(*g->track));
        g->tracking = false;
        return false;
    }
    g->tracking = true;
    for (int i = 0; i < STATEFILE_SLOTS; i++) {
        const struct statefile_slot *s = &g->sf->slots[i];
        struct watchdog_thread *t = &g->track[i];
        struct watchdog_sample smp;
        uint64_t pass, waited;
        int cpu = s->act.cpu;
        pid_t dtid;

        if (!__atomic_load_n(&s->used, __ATOMIC_ACQUIRE) || s->gen != g->gen ||
            s->act.level == ACT_LEVEL_NONE || cpu < 0 || cpu >= STATEFILE_CPUS ||
            !cpuset_has(&sus, (unsigned int)cpu) || sample(&s->act, &smp) < 0) {
            watchdog_thread_forget(t);
            continue;
        }
        dtid = statefile_beat_read(g->sf, cpu, &pass);
        if (g->trace != NULL)
            fprintf(g->trace, "%llu %d %llu %d %c %llu %llu\n", (unsigned long long)now, cpu,
                    (unsigned long long)pass, (int)s->act.tid, smp.state,
                    (unsigned long long)smp.exec_ns, (unsigned long long)smp.pcount);
        waited = watchdog_thread_round(t, s->act.tid, pass, &smp, now, bound);
        if (waited > best) {
            best = waited;
            *out = (struct statefile_trip){.cpu = cpu,
                                           .tid = s->act.tid,
                                           .waited_ms = (uint32_t)(waited / NSEC_PER_MSEC),
                                           .beat_ms = (uint32_t)((now - pass) / NSEC_PER_MSEC),
                                           .dispatcher = dtid};
        }
    }
    if (g->trace != NULL)
        fflush(g->trace);
    return best > 0;
}

/*
 * The daemon lives but is stuck: stop it (nothing it runs may undo what
 * follows), give every thread back as at its death, count the trip, end
 * it for its service manager to restart.
 */
static void
trip(struct guard *g, struct statefile_trip *t)
{
    int n;

    daemon_signal(g, SIGSTOP);
    n = statefile_trip_restore(g->sf, g->gen, t);
    if (n < 0)
        guard_log(g, LOG_ERR,
                  "watchdog: cpu %d: thread %d runnable without running for %u ms, no "
                  "dispatcher pass for %u ms; a newer daemon owns the state file: nothing "
                  "restored; ending vcpuschedd (pid %d)",
                  t->cpu, t->tid, t->waited_ms, t->beat_ms, (int)g->daemon);
    else
        guard_log(g, LOG_ERR,
                  "watchdog: cpu %d: thread %d runnable without running for %u ms, no "
                  "dispatcher pass for %u ms (dispatcher %d): restored %d thread(s), ending "
                  "vcpuschedd (pid %d) for its service manager to restart",
                  t->cpu, t->tid, t->waited_ms, t->beat_ms, t->dispatcher, n, (int)g->daemon);
    daemon_signal(g, SIGKILL);
    if (n >= 0)
        statefile_restore_unlock(g->sf);
}

/*
 * Wait for the daemon's end of the pipe to close, watching meanwhile.
 * Returns true if the watchdog tripped first.
 */
static bool
watch(struct guard *g)
{
    bool tripped = false;
    char buf[64];

    for (;;) {
        struct pollfd p = {.fd = g->fd, .events = POLLIN};
        int timeout = tripped ? -1 : (int)(WATCHDOG_PERIOD_NS / NSEC_PER_MSEC);
        int r = poll(&p, 1, timeout);
        struct statefile_trip t;

        if (r < 0 && errno != EINTR)
            return tripped;
        if (r > 0) {
            ssize_t n = read(g->fd, buf, sizeof(buf));

            if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
                return tripped; /* EOF: the daemon is gone */
            continue;
        }
        if (r == 0 && g->track != NULL && watch_round(g, clock_mono_ns(), &t)) {
            trip(g, &t);
            tripped = true;
        }
    }
}

/* Test builds: the trace of every sample, for tests/fixtures/watchdog. */
static FILE *
trace_open(void)
{
#if VCPUSCHED_FAULTS
    const char *path = getenv("VCPUSCHED_WATCHDOG_TRACE");

    if (path != NULL && path[0] != '\0')
        return fopen(path, "ae");
#endif
    return NULL;
}

static _Noreturn void
guardian_main(int fd, struct statefile *sf, const cpu_set_t *cpus, int rt_prio, const char *hold)
{
    struct sched_param param = {.sched_priority = rt_prio};
    struct guard g = {.fd = fd, .sf = sf, .gen = sf->gen, .daemon = getppid()};
    sigset_t all;
    bool tripped;
    int restored;

    g.pidfd = (int)syscall(SYS_pidfd_open, g.daemon, 0);
    g.journal = getenv("JOURNAL_STREAM") != NULL;
    setsid();
    prctl(PR_SET_NAME, "vcpusched-guard");
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL); /* only SIGKILL/SIGSTOP can stop us */
    if (cpus != NULL)
        (void)sched_setaffinity(0, sizeof(*cpus), cpus);
    close_other_fds(fd, sf->fd);
    /*
     * A real-time priority above the dispatchers', all along: the rounds
     * must not wait behind a loaded housekeeping CPU or a dedicated
     * dispatcher spinning on it. Refused in a cpu cgroup without RT runtime.
     */
    if (rt_prio > 0 && sched_setscheduler(0, SCHED_FIFO, &param) < 0)
        guard_log(&g, LOG_WARNING, "SCHED_FIFO %d refused (%s): the watchdog may be late", rt_prio,
                  strerror(errno));
    g.track = calloc(STATEFILE_SLOTS, sizeof(*g.track));
    if (g.track == NULL)
        guard_log(&g, LOG_WARNING, "out of memory: no watchdog, only the restore at exit");
    g.trace = trace_open();
    tripped = watch(&g);
    /*
     * EOF: the daemon is gone, cleanly or not (or ended by the watchdog).
     * Restore without waiting for the lock: held, it means a newer daemon
     * owns the threads now.
     */
    restored = statefile_guardian_restore(sf, sf->gen);
    act_park_unhold(hold); /* after the thaws: with it held, they are cheap */
    if (restored > 0 && !tripped)
        guard_log(&g, LOG_WARNING, "daemon died: restored %d thread(s)", restored);
    else if (restored > 0)
        guard_log(&g, LOG_INFO, "daemon ended: its %d thread(s) restored again", restored);
    _exit(0);
}

int
guardian_start(struct guardian *g, struct statefile *sf, const cpu_set_t *cpus, int rt_prio,
               const char *hold, char *err, size_t errlen)
{
    int p[2];
    pid_t pid;

    if (pipe2(p, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "guardian: pipe: %s", strerror(errno));
        return -errno;
    }
    pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "guardian: fork: %s", strerror(errno));
        close(p[0]);
        close(p[1]);
        return -errno;
    }
    if (pid == 0) {
        close(p[1]);
        guardian_main(p[0], sf, cpus, rt_prio, hold);
    }
    close(p[0]);
    g->pid = pid;
    sf->hdr->guardian_pid = pid;
    g->fd = p[1];
    return 0;
}

void
guardian_stop(struct guardian *g)
{
    if (g->fd >= 0)
        close(g->fd);
    g->fd = -1;
    if (g->pid > 0)
        while (waitpid(g->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    g->pid = 0;
}

int
guardian_alive(const struct guardian *g)
{
    return g->pid > 0 && waitpid(g->pid, NULL, WNOHANG) == 0;
}
