/* SPDX-License-Identifier: ISC */
/*
 * main.c - vcpuschedd: start-up, the control loop, and shutdown.
 *
 * Order matters for safety: the state file is opened and leftovers of a
 * crashed predecessor restored first; the guardian is forked before any
 * thread exists; signals are blocked before the dispatchers start so that
 * only the control loop sees them; every managed thread is given back
 * before the guardian is told to stand down. SIGHUP re-reads the
 * configuration (reload.c); a service manager hears of readiness,
 * reloads and shutdown through notify.c. What runs is kept in the live
 * record (live.c), which a new daemon takes up again at start, before it
 * says it is ready; a stopping daemon leaves the record as it was.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <libxml/parser.h>

#include "config.h"
#include "host/guardian.h"
#include "handlers.h"
#include "libvirt/libvirt_watch.h"
#include "live.h"
#include "vcpu_resync.h"
#include "common/log.h"
#include "host/topology.h"
#include "host/watchdog.h"
#include "common/clock.h"
#include "notify.h"
#include "reload.h"
#include "metrics_file.h"
#include "pools_check.h"
#include "rt_throttle.h"
#include "unattached.h"

#define HOUSEKEEPING_PERIOD_MS 250 /* reaping of exited domains, guardian check */

struct daemon {
    struct config cfg;
    struct config started; /* as parsed at start, pools defaulted: what reloads compare with */
    int argc;              /* the command line, parsed again on reload */
    char **argv;
    struct statefile sf;
    struct guardian guard;
    struct events *ev;
    struct daemon_ctx ctx;
    struct control *ctl;
    struct libvirt_watch *libvirt;
    struct vcpu_resync *resync;
    struct metrics_file metrics;
    struct live live;
    cpu_set_t online;
    cpu_set_t guard_cpus;           /* where the guardian is pinned */
    char park_hold[CGROUP_DIR_MAX]; /* our v1 hold group (act_park_hold), or "" */
    unsigned int ticks;             /* housekeeping ticks so far */
    unsigned int foreign_at;        /* the tick of the next sched_foreign_scan */
    uint64_t wd_usec;               /* the service manager's watchdog interval (0: none) */
    bool wd_stale;                  /* a dispatcher's heartbeat was too old: said once */
#if VCPUSCHED_FAULTS
    int fault; /* test builds: VCPUSCHED_FAULT, armed on SIGUSR2 */
    int fault_cpu;
#endif
    int sig_fd;
    int tick_fd;
    int ep;
};

static void
state_open(struct daemon *d)
{
    char err[256];
    int n;

    if (statefile_open(&d->sf, d->cfg.state, err, sizeof(err)) < 0 ||
        statefile_own(&d->sf, d->cfg.state, STATEFILE_OWN_WAIT_MS, err, sizeof(err)) < 0)
        fatalx("%s", err);
    /* Ours now: what a predecessor and its guardian left is restored first. */
    n = statefile_restore_all(&d->sf);
    if (n > 0)
        log_warnx("restored %d thread(s) left by a previous daemon", n);
}

/* First line of a small file, without its newline; false if unreadable. */
static bool
read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "re");
    bool ok;

    if (f == NULL)
        return false;
    ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (ok)
        buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

/* True if the blank-separated list holds the word w. */
static bool
has_word(const char *list, const char *w)
{
    size_t n = strlen(w);

    for (const char *p = list; (p = strstr(p, w)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' '))
            return true;
    return false;
}

/*
 * CONFIG_RT_GROUP_SCHED as cgroup v2 sees it (no rt file there): from the
 * kernel's config and the rt_group_sched= boot option (Linux 6.16+).
 * 1 on, 0 off, -1 unknown (no /boot/config-<release>).
 */
static int
rt_group_config(void)
{
    char path[320], line[128], cmd[4096] = "";
    bool off_by_default = false;
    struct utsname u;
    int on = -1;
    FILE *f;

    if (uname(&u) < 0)
        return -1;
    snprintf(path, sizeof(path), "/boot/config-%s", u.release);
    f = fopen(path, "re");
    if (f == NULL)
        return -1;
    on = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        on = on || strcmp(line, "CONFIG_RT_GROUP_SCHED=y\n") == 0;
        off_by_default =
            off_by_default || strcmp(line, "CONFIG_RT_GROUP_SCHED_DEFAULT_DISABLED=y\n") == 0;
    }
    fclose(f);
    (void)read_line("/proc/cmdline", cmd, sizeof(cmd));
    if (strstr(cmd, "rt_group_sched=0") != NULL ||
        (off_by_default && strstr(cmd, "rt_group_sched=1") == NULL))
        on = 0;
    return on;
}

/*
 * Real-time group scheduling makes the kernel refuse SCHED_FIFO (EPERM) to
 * a thread whose cpu cgroup has no real-time runtime: every new group's
 * lot, libvirt's included. Say so at start, not at the first attach.
 * cgroup v1 shows it as cpu.rt_runtime_us (and --rt-cgroup move works
 * around it); cgroup v2 has no such file and no way to grant runtime.
 */
static void
rt_group_report(const struct daemon *d, const struct cgroup_mounts *m)
{
    const char *v1 = m->v1_cpu, *v2 = m->v2;
    char path[CGROUP_MOUNT_MAX + 32], ctrls[256];

    snprintf(path, sizeof(path), "%s/cpu.rt_runtime_us", v1);
    if (v1[0] != '\0' && access(path, F_OK) == 0) {
        if (d->cfg.move_rt_cgroup)
            log_info("real-time group scheduling (CONFIG_RT_GROUP_SCHED) on cgroup v1 %s: "
                     "a thread whose cpu cgroup has no cpu.rt_runtime_us is moved to the root "
                     "cpu cgroup while managed (--rt-cgroup move)",
                     v1);
        else
            log_warnx("real-time group scheduling (CONFIG_RT_GROUP_SCHED) on cgroup v1 %s: "
                      "attaching a thread whose cpu cgroup has no cpu.rt_runtime_us fails "
                      "(--rt-cgroup fail)",
                      v1);
        return;
    }
    snprintf(path, sizeof(path), "%s/cgroup.controllers", v2);
    if (v2[0] == '\0' || !read_line(path, ctrls, sizeof(ctrls)) || !has_word(ctrls, "cpu"))
        return; /* no cpu controller on cgroup v2: nothing refuses */
    switch (rt_group_config()) {
    case 1:
        log_warnx("real-time group scheduling (CONFIG_RT_GROUP_SCHED) with the cpu controller "
                  "on cgroup v2 %s: SCHED_FIFO is refused in every v2 group with the cpu "
                  "controller (libvirt's) and v2 cannot grant real-time runtime; boot with "
                  "rt_group_sched=0 (Linux 6.16+) or a kernel without CONFIG_RT_GROUP_SCHED",
                  v2);
        break;
    case -1:
        log_info("cannot tell whether CONFIG_RT_GROUP_SCHED is on (no /boot/config-<release>): "
                 "if so, attaching threads of cgroup v2 groups with the cpu controller fails");
        break;
    default:
        break;
    }
}

/*
 * The cgroup layout, and how caps will park threads: before anything is
 * changed, so that a --park the host cannot honour stops the daemon with
 * nothing touched.
 */
static void
cgroups_setup(struct daemon *d, struct cgroup_mounts *m, struct act_park *park)
{
    char err[512];

    if (act_cgroup_mounts(m, err, sizeof(err)) < 0 ||
        act_park_init(park, m, d->cfg.park, err, sizeof(err)) < 0)
        fatalx("%s", err);
}

static void
park_report(const struct cgroup_mounts *m, const struct act_park *park)
{
    char what[768];

    cgroup_describe(m, park->backend, what, sizeof(what));
    if (park->backend == CGROUP_BACKEND_NONE)
        log_warnx("parking: %s", what);
    else
        log_info("parking: %s", what);
}

/* cpus[0..n) as a kernel CPU list. */
static const char *
cpus_text(const int *cpus, unsigned int n, char *buf, size_t len)
{
    struct cpuset set;

    cpuset_zero(&set);
    for (unsigned int i = 0; i < n; i++)
        cpuset_set(&set, (unsigned int)cpus[i]);
    return cpulist_format(&set, buf, len);
}

/* Managed CPUs of a configured pool (default: host/housekeeping.h). */
static void
pools_cpus(struct daemon *d, struct config_pool *p, int *cpus, unsigned int *n)
{
    char err[256];

    if (daemon_pool_cpus(p->cpus, &d->online, cpus, n, err, sizeof(err)) < 0)
        fatalx("pool %s: cpus: %s", p->name, err);
}

/* No pool configured: the default pool "main". */
static void
pools_default(struct config *c)
{
    if (c->nr_pools > 0)
        return;
    snprintf(c->pools[0].name, sizeof(c->pools[0].name), "main");
    snprintf(c->pools[0].policy, sizeof(c->pools[0].policy), "credit");
    c->nr_pools = 1;
}

/*
 * The pools of a parsed configuration, ready to create: some chosen (with
 * a file), defaulted, each checked as it would be created. 0, or -errno
 * with `err` (a start exits 2, a reload changes nothing).
 */
static int
config_pools_ready(struct config *c, const cpu_set_t *online, char *err, size_t errlen)
{
    int r = config_check_cpus(c, err, errlen);

    if (r < 0)
        return r;
    pools_default(c);
    return pools_check(c, online, err, errlen);
}

static void
housekeeping_setup(struct daemon *d)
{
    int cpus[CPUSET_MAX];
    unsigned int n;

    d->ctx.housekeeping = d->online;
    for (unsigned int i = 0; i < d->cfg.nr_pools; i++) {
        pools_cpus(d, &d->cfg.pools[i], cpus, &n);
        for (unsigned int c = 0; c < n; c++)
            CPU_CLR(cpus[c], &d->ctx.housekeeping);
    }
    if (CPU_COUNT(&d->ctx.housekeeping) == 0)
        fatalx("the pools leave no housekeeping cpu");
    if (d->cfg.pattern == SCHED_DEDICATED && d->cfg.dedicated_cpu < 0) {
        for (int c = 0; c < CPU_SETSIZE && d->cfg.dedicated_cpu < 0; c++)
            if (CPU_ISSET(c, &d->ctx.housekeeping))
                d->cfg.dedicated_cpu = c;
    }
    if (d->cfg.pattern == SCHED_DEDICATED && CPU_COUNT(&d->ctx.housekeeping) == 1)
        log_warnx("dedicated dispatcher busy-polls cpu %d, the only housekeeping cpu: "
                  "the host and QEMU's other threads get what real-time throttling leaves",
                  d->cfg.dedicated_cpu);
    /* The control thread and the guardian stay off managed CPUs. */
    if (sched_setaffinity(0, sizeof(d->ctx.housekeeping), &d->ctx.housekeeping) < 0)
        log_warn("pin the daemon to housekeeping cpus");
}

/* sched_config.warn: what the core says goes to the log. */
static void
core_warn(const char *msg)
{
    log_warnx("%s", msg);
}

static void
pools_create(struct daemon *d)
{
    for (unsigned int i = 0; i < d->cfg.nr_pools; i++) {
        struct config_pool *p = &d->cfg.pools[i];
        struct kv kv[VS_PARAMS_MAX];
        struct policy_cpu desc[CPUSET_MAX];
        int cpus[CPUSET_MAX];
        char err[256], params[sizeof(p->params)], list[512];
        unsigned int n;
        size_t nkv;

        pools_cpus(d, p, cpus, &n);
        snprintf(params, sizeof(params), "%s", p->params);
        if (kv_split(params, kv, VS_PARAMS_MAX, &nkv, err, POLICY_ERRLEN) < 0 ||
            topology_describe(cpus, n, desc, err, sizeof(err)) < 0 ||
            sched_pool_create(d->ctx.sched, p->name, desc, n, p->policy, kv, nkv, err,
                              sizeof(err)) < 0)
            fatalx("pool %s: %s", p->name, err);
        log_info("pool %s: policy %s on cpu(s) %s%s, %s pattern", p->name, p->policy,
                 cpus_text(cpus, n, list, sizeof(list)),
                 p->cpus[0] ? "" : " (the default: all but an eighth of each NUMA node)",
                 d->cfg.pattern == SCHED_SHARED ? "shared" : "dedicated");
    }
}

static int
epoll_add(int ep, int fd)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};

    return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static void
loop_setup(struct daemon *d)
{
    struct itimerspec its = {
        .it_interval = {0, HOUSEKEEPING_PERIOD_MS * 1000000L},
        .it_value = {0, HOUSEKEEPING_PERIOD_MS * 1000000L},
    };
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGCHLD);
#if VCPUSCHED_FAULTS
    sigaddset(&set, SIGUSR2); /* test builds: arm VCPUSCHED_FAULT */
#endif
    d->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    d->tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    d->ep = epoll_create1(EPOLL_CLOEXEC);
    if (d->sig_fd < 0 || d->tick_fd < 0 || d->ep < 0 ||
        timerfd_settime(d->tick_fd, 0, &its, NULL) < 0 || epoll_add(d->ep, d->sig_fd) < 0 ||
        epoll_add(d->ep, d->tick_fd) < 0 || epoll_add(d->ep, control_fd(d->ctl)) < 0)
        fatal("event loop set-up");
}

/* Above the dispatchers' HIGH (prio_base + 2): it must preempt a dedicated one spinning. */
static int
guardian_prio(const struct daemon *d)
{
    return d->cfg.prio_base + 3 <= 99 ? d->cfg.prio_base + 3 : 99;
}

static void
guardian_run(struct daemon *d)
{
    char err[256];

    if (guardian_start(&d->guard, &d->sf, &d->ctx.housekeeping, guardian_prio(d), d->park_hold, err,
                       sizeof(err)) < 0) {
        log_warnx("%s", err);
        return;
    }
    d->guard_cpus = d->ctx.housekeeping;
    d->ctx.guardian_pid = d->guard.pid;
}

/* The guardian follows the housekeeping set as pools come and go. */
static void
guardian_repin(struct daemon *d)
{
    if (CPU_EQUAL(&d->guard_cpus, &d->ctx.housekeeping) || d->guard.pid <= 0)
        return;
    if (sched_setaffinity(d->guard.pid, sizeof(d->ctx.housekeeping), &d->ctx.housekeeping) < 0)
        log_warn("pin the guardian to housekeeping cpus");
    else
        d->guard_cpus = d->ctx.housekeeping;
}

/* Tell a service manager (systemd, Type=notify) how things stand. */
static void
daemon_notify(const char *state)
{
    char err[256];

    if (notify_send(state, err, sizeof(err)) < 0)
        log_warnx("%s", err);
}

/*
 * The service manager's watchdog (WatchdogSec=): "WATCHDOG=1" only while
 * every dispatcher's heartbeat is fresh, so that a daemon whose main loop
 * lives while a dispatcher is stuck is restarted too (the guardian acts
 * first when a thread waits behind it).
 */
static void
watchdog_ping(struct daemon *d)
{
    uint64_t bound =
        (d->cfg.watchdog_ms ? d->cfg.watchdog_ms : WATCHDOG_BOUND_MS_DEFAULT) * NSEC_PER_MSEC;
    int cpu;
    uint64_t age = statefile_oldest_beat(&d->sf, clock_mono_ns(), &cpu);

    if (d->wd_usec == 0)
        return;
    if (age < bound) {
        d->wd_stale = false;
        daemon_notify("WATCHDOG=1");
    } else if (!d->wd_stale) {
        d->wd_stale = true;
        log_warnx("watchdog: cpu %d's dispatcher made no pass for %llu ms: not telling the "
                  "service manager the daemon is well",
                  cpu, (unsigned long long)(age / NSEC_PER_MSEC));
    }
}

/* What the guardian's watchdog did before this daemon (the state file lives until reboot). */
static void
watchdog_report(struct daemon *d)
{
    const struct statefile_watch *w = d->sf.watch;
    uint64_t trips = __atomic_load_n(&w->trips, __ATOMIC_ACQUIRE);

    if (trips > 0)
        log_warnx("watchdog: %llu trip(s) since boot; the last at %lld (unix time): cpu %d's "
                  "dispatcher (thread %d) made no pass for %u ms while thread %d waited %u ms; "
                  "%u thread(s) given back, the daemon ended",
                  (unsigned long long)trips, (long long)w->last.realtime_s, w->last.cpu,
                  w->last.dispatcher, w->last.beat_ms, w->last.tid, w->last.waited_ms,
                  w->last.restored);
    __atomic_store_n(&d->sf.watch->bound_ms, d->cfg.watchdog_ms, __ATOMIC_RELAXED);
    d->wd_usec = notify_watchdog_usec(getenv("WATCHDOG_USEC"), getenv("WATCHDOG_PID"), getpid());
    if (d->cfg.watchdog_ms == 0)
        log_warnx("watchdog: off (watchdog-ms 0): a stuck daemon keeps its vCPUs at SCHED_FIFO");
    else
        log_info("watchdog: a thread runnable for %u ms behind a dispatcher that made no pass "
                 "for as long ends the daemon%s",
                 d->cfg.watchdog_ms,
                 d->wd_usec ? "; WATCHDOG=1 to the service manager while dispatchers pass" : "");
}

static void
housekeeping(struct daemon *d)
{
    uint64_t ticks;
    int n;

    (void)!read(d->tick_fd, &ticks, sizeof(ticks));
    n = sched_resync(d->ctx.sched);
    if (n > 0)
        log_warnx("events were lost: corrected the state of %d thread(s)", n);
    (void)sched_wake_missed(d->ctx.sched); /* counted in stats: missed_wakes */
    /* Once a second: list's wait_ns and wait_recent; QEMU's other threads off the pools. */
    if (++d->ticks % (1000 / HOUSEKEEPING_PERIOD_MS) == 0) {
        sched_sample_waits(d->ctx.sched);
        sched_place_all(d->ctx.sched);
    }
    /* What else runs on the pools' CPUs (a walk of /proc): every 2 s, or paced by its cost. */
    if (d->ticks >= d->foreign_at)
        d->foreign_at = d->ticks + sched_foreign_scan(d->ctx.sched) / HOUSEKEEPING_PERIOD_MS;
    n = sched_reap(d->ctx.sched);
    if (n > 0)
        log_info("detached %d domain(s) whose threads all exited", n);
    if (!guardian_alive(&d->guard)) {
        log_warnx("guardian exited: starting a new one");
        guardian_stop(&d->guard);
        guardian_run(d);
    }
    guardian_repin(d);
    watchdog_ping(d);
    metrics_file_tick(&d->metrics, &d->ctx);
    live_save(&d->live); /* what the watcher, the reaper and hot-plug changed */
}

/*
 * SIGHUP: parse the command line again (so the --config file is read
 * again, then the options override it, as at start) and apply what can
 * change while running (reload.h). A file that does not parse changes
 * nothing.
 */
static void
daemon_reload(struct daemon *d)
{
    struct config *next = malloc(sizeof(*next));
    struct reload_result res;
    struct timespec ts;
    char msg[128], err[1024];

    clock_gettime(CLOCK_MONOTONIC, &ts);
    snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu",
             (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000);
    daemon_notify(msg);
    if (next == NULL) {
        log_warnx("reload: out of memory: nothing changed");
    } else if (d->started.config_file[0] == '\0') {
        log_warnx("reload: started without --config: no file to read again");
    } else {
        config_defaults(next);
        if (getenv("VCPUSCHED_SOCKET") != NULL)
            snprintf(next->socket, sizeof(next->socket), "%s", getenv("VCPUSCHED_SOCKET"));
        if (config_parse(next, d->argc, d->argv, err, sizeof(err)) != 0 ||
            config_pools_ready(next, &d->online, err, sizeof(err)) < 0) {
            log_warnx("reload: %s: nothing changed", err);
        } else {
            reload_apply(&d->ctx, &d->started, next, &d->online, &res);
            live_conf_pools(&d->live, next);
            live_save(&d->live);
            guardian_repin(d); /* new pools took housekeeping CPUs */
            if (res.refused > 0)
                log_warnx("reload: %s: %u change(s) applied, %u refused", next->config_file,
                          res.applied, res.refused);
            else
                log_info("reload: %s: %u change(s) applied", next->config_file, res.applied);
        }
    }
    free(next);
    daemon_notify("READY=1\nSTATUS=running");
}

#if VCPUSCHED_FAULTS
/*
 * Test builds only: VCPUSCHED_FAULT=spin:CPU, block:CPU or stall:CPU names
 * a fault for CPU's dispatcher (core/dispatch_fault.c), armed by SIGUSR2.
 */
static void
fault_parse(struct daemon *d)
{
    const char *f = getenv("VCPUSCHED_FAULT");
    int cpu;

    d->fault = SCHED_FAULT_NONE;
    if (f == NULL || f[0] == '\0')
        return;
    if (sscanf(f, "spin:%d", &cpu) == 1)
        d->fault = SCHED_FAULT_SPIN;
    else if (sscanf(f, "block:%d", &cpu) == 1)
        d->fault = SCHED_FAULT_BLOCK;
    else if (sscanf(f, "stall:%d", &cpu) == 1)
        d->fault = SCHED_FAULT_STALL;
    else
        fatalx("VCPUSCHED_FAULT=%s: not spin:CPU, block:CPU or stall:CPU", f);
    d->fault_cpu = cpu;
    log_warnx("test build: fault %s armed by SIGUSR2", f);
}

static void
fault_arm(struct daemon *d)
{
    if (d->fault == SCHED_FAULT_NONE ||
        sched_fault_arm(d->ctx.sched, d->fault_cpu, (enum sched_fault)d->fault) < 0)
        log_warnx("SIGUSR2: no fault armed (VCPUSCHED_FAULT)");
    else
        log_warnx("SIGUSR2: fault injected into cpu %d's dispatcher", d->fault_cpu);
}
#endif

/* Returns false when the daemon must stop. */
static bool
on_signal(struct daemon *d)
{
    struct signalfd_siginfo si;

    while (read(d->sig_fd, &si, sizeof(si)) == sizeof(si)) {
        switch (si.ssi_signo) {
        case SIGTERM:
        case SIGINT:
            log_info("signal %u: stopping", si.ssi_signo);
            return false;
        case SIGHUP:
            daemon_reload(d);
            break;
#if VCPUSCHED_FAULTS
        case SIGUSR2:
            fault_arm(d);
            break;
#endif
        default:
            break; /* SIGCHLD: the guardian is checked by housekeeping */
        }
    }
    return true;
}

static void
loop_run(struct daemon *d)
{
    for (;;) {
        struct epoll_event ev[8];
        int n = epoll_wait(d->ep, ev, 8, -1);

        if (n < 0 && errno != EINTR)
            fatal("epoll_wait");
        for (int i = 0; i < n; i++) {
            if (ev[i].data.fd == d->sig_fd && !on_signal(d))
                return;
            if (ev[i].data.fd == d->tick_fd)
                housekeeping(d);
            if (ev[i].data.fd == control_fd(d->ctl))
                control_dispatch(d->ctl);
        }
    }
}

static void
signals_block(void)
{
    sigset_t set;

    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGCHLD);
#if VCPUSCHED_FAULTS
    sigaddset(&set, SIGUSR2);
#endif
    sigprocmask(SIG_BLOCK, &set, NULL);
}

static gid_t
group_id(const char *name)
{
    struct group *g;

    if (name[0] == '\0')
        return CONTROL_GROUP_ROOT;
    g = getgrnam(name);
    if (g == NULL)
        fatalx("no group %s", name);
    return g->gr_gid;
}

/*
 * `attach --libvirt` and the hook's message read libvirt's status file
 * (never libvirt itself); the watcher follows metadata and lifecycle
 * events on a thread of its own and acts through daemon_libvirt_ops.
 */
static void
libvirt_setup(struct daemon *d)
{
    char err[512];

    xmlInitParser(); /* before any thread parses */
    if (strcmp(d->cfg.libvirt, "none") == 0)
        return;
    if (libvirt_watch_start(&d->libvirt, d->cfg.libvirt, &daemon_libvirt_ops, &d->ctx, err,
                            sizeof(err)) < 0)
        log_warnx("%s: running without the libvirt watcher", err);
}

static void
daemon_start(struct daemon *d)
{
    struct sched_config sc = {
        .pattern = d->cfg.pattern,
        .dedicated_cpu = d->cfg.dedicated_cpu,
        .prio = {d->cfg.prio_base, d->cfg.prio_base + 1, d->cfg.prio_base + 2},
        .move_rt_cgroup = d->cfg.move_rt_cgroup,
        .proc_poll_ns = d->cfg.proc_poll_us * NSEC_PER_USEC,
        .warn = core_warn,
    };
    struct cgroup_mounts mounts;
    char err[256];

    if (policy_registry_check(err) < 0)
        fatalx("%s", err);
    if (sched_getaffinity(0, sizeof(d->online), &d->online) < 0)
        fatal("sched_getaffinity");
    cgroups_setup(d, &mounts, &sc.park);
    state_open(d);
    watchdog_report(d);
#if VCPUSCHED_FAULTS
    fault_parse(d);
#endif
    rt_throttle_setup(&d->sf, &d->cfg);
    rt_group_report(d, &mounts);
    park_report(&mounts, &sc.park);
    if (act_park_hold(&sc.park, d->park_hold, sizeof(d->park_hold), err, sizeof(err)) < 0)
        log_warnx("parking: %s: every park and unpark costs more", err);
    housekeeping_setup(d);
    sc.dedicated_cpu = d->cfg.dedicated_cpu;
    if (guardian_start(&d->guard, &d->sf, &d->ctx.housekeeping, guardian_prio(d), d->park_hold, err,
                       sizeof(err)) < 0)
        fatalx("%s", err);
    d->guard_cpus = d->ctx.housekeeping;
    d->ctx.guardian_pid = d->guard.pid;
    signals_block();
    /*
     * A fault on the hot path would be a latency spike for every vCPU. Not
     * in sanitizer builds: their shadow memory would be locked with it.
     */
#ifndef VCPUSCHED_SANITIZED
    if (mlockall(MCL_CURRENT | MCL_FUTURE) < 0)
        log_warn("mlockall");
#endif
    if (events_open(&d->ev, d->cfg.events, err, sizeof(err)) < 0)
        fatalx("events: %s", err);
    log_info("events: %s%s%s", events_backend(d->ev), err[0] ? " (" : "", err[0] ? err : "");
    if (sched_create(&d->ctx.sched, &sc, &d->sf, d->ev, err, sizeof(err)) < 0)
        fatalx("%s", err);
    if (unattached_create(&d->ctx.unattached) < 0)
        fatalx("out of memory");
    /* Before the pools: control_open changes the umask (process-wide). */
    if (control_open(&d->ctl, d->cfg.socket, group_id(d->cfg.group), daemon_handle, &d->ctx, err,
                     sizeof(err)) < 0)
        fatalx("control socket: %s", err);
    d->ctx.ctl = d->ctl;
    d->ctx.sf = &d->sf;
    pools_create(d);
    live_restore(&d->live, &d->ctx, d->cfg.state, &d->cfg);
    d->ctx.changed = live_changed;
    d->ctx.changed_arg = &d->live;
    guardian_repin(d); /* pools made again took housekeeping CPUs */
    loop_setup(d);
    libvirt_setup(d);
    if (vcpu_resync_start(&d->resync, &d->ctx, err, sizeof(err)) < 0)
        log_warnx("%s: hot-plugged vcpus are not picked up", err);
    metrics_file_start(&d->metrics, &d->ctx, d->cfg.metrics_file, d->cfg.metrics_period_s);
    log_info("ready on %s", d->cfg.socket);
    daemon_notify("READY=1\nSTATUS=running");
}

static void
daemon_stop(struct daemon *d)
{
    daemon_notify("STOPPING=1\nSTATUS=giving every managed thread back");
    d->ctx.changed = NULL;       /* the live record stays as it was, for the next daemon */
    vcpu_resync_stop(d->resync); /* both call into the core */
    libvirt_watch_stop(d->libvirt);
    metrics_file_stop(&d->metrics);
    control_close(d->ctl);
    unattached_destroy(d->ctx.unattached);
    sched_destroy(d->ctx.sched);
    events_close(d->ev);
    (void)statefile_restore_all(&d->sf); /* sched_rt_runtime_us, and anything missed */
    act_park_unhold(d->park_hold);
    d->sf.hdr->owner_pid = 0;
    statefile_disown(&d->sf); /* nothing left to restore: the guardian may go at once */
    guardian_stop(&d->guard);
    statefile_close(&d->sf);
    if (d->cfg.pidfile[0] != '\0')
        unlink(d->cfg.pidfile);
}

static void
daemonize(struct daemon *d)
{
    FILE *f;

    if (!d->cfg.foreground && daemon(0, 0) < 0)
        fatal("daemon");
    if (d->cfg.pidfile[0] == '\0')
        return;
    f = fopen(d->cfg.pidfile, "we");
    if (f == NULL)
        fatal("pidfile %s", d->cfg.pidfile);
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
}

/*
 * --policies: every policy's parameters with their range and default, as
 * `vcpuschedctl help --json` gives them from a running daemon, for an
 * operator who configures the service before its first start.
 */
static void
print_policies(void)
{
    struct json_object *o = sched_json_policies(NULL);

    puts(json_object_to_json_string_ext(o,
                                        JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
}

int
main(int argc, char **argv)
{
    struct daemon *d = calloc(1, sizeof(*d)); /* large: config, state */
    char err[1024];                           /* a path, and why it is refused */
    cpu_set_t online;
    int r;

    if (d == NULL)
        return 1;
    config_defaults(&d->cfg);
    /* The environment sets the default; the file and --socket override it. */
    if (getenv("VCPUSCHED_SOCKET") != NULL)
        snprintf(d->cfg.socket, sizeof(d->cfg.socket), "%s", getenv("VCPUSCHED_SOCKET"));
    r = config_parse(&d->cfg, argc, argv, err, sizeof(err));
    if (r != 0) {
        if (r < 0) {
            fprintf(stderr, "vcpuschedd: %s\n", err);
            config_usage(argv[0]);
        } else if (d->cfg.policies) {
            print_policies();
        }
        free(d);
        return r < 0 ? 2 : 0;
    }
    /* A configuration the daemon must not run: exit 2, as for a bad file. */
    if (sched_getaffinity(0, sizeof(online), &online) < 0) {
        free(d);
        return 1;
    }
    if (config_pools_ready(&d->cfg, &online, err, sizeof(err)) < 0 ||
        rt_throttle_check(&d->cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "vcpuschedd: %s\n", err);
        free(d);
        return 2;
    }
    d->started = d->cfg;
    d->argc = argc;
    d->argv = argv;
    log_init("vcpuschedd", d->cfg.foreground, config_verbosity(&d->cfg));
    if (geteuid() != 0)
        fatalx("must run as root (it changes other processes' scheduling)");
    /* A metrics file it cannot write is refused like a bad line (exit 2: no restart loop). */
    if (d->cfg.metrics_file[0] != '\0' &&
        metrics_file_check(d->cfg.metrics_file, err, sizeof(err)) < 0) {
        log_warnx("%s", err);
        free(d);
        return 2;
    }
    daemonize(d);
    daemon_start(d);
    loop_run(d);
    daemon_stop(d);
    log_info("stopped");
    free(d);
    return 0;
}
