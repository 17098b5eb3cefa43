/* SPDX-License-Identifier: ISC */
/*
 * handlers.c - the daemon's answers to control requests: each command of
 * docs/protocol.md mapped onto the scheduler core. Runs on the control
 * thread; target discovery (QMP, libvirt) happens here, before anything
 * is locked, so a slow QEMU never stalls a dispatcher.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "handlers.h"
#include "host/discover.h"
#include "host/housekeeping.h"
#include "host/topology.h"
#include "libvirt/libvirt_vcpus.h"
#include "unattached.h"

static int check_target(struct daemon_ctx *d, const struct ctl_request *req, pid_t pid,
                        const struct control_peer *peer, char *err, size_t errlen);

/* Resolve an attach request's target into a process and thread ids. */
static int
resolve_target(struct daemon_ctx *d, const struct ctl_request *req, pid_t *pid, pid_t *tids,
               unsigned int *n, const char **source, char *err, size_t errlen)
{
    *pid = 0;
    switch (req->target) {
    case CTL_TARGET_PID:
        *pid = req->pid;
        *source = "pid";
        return discover_process(req->pid, tids, VS_THREADS_MAX, n, err, errlen);
    case CTL_TARGET_TIDS:
        *source = "tids";
        return discover_tids(pid, req->tids, req->nr_tids, tids, VS_THREADS_MAX, n, err, errlen);
    case CTL_TARGET_QMP:
        *source = "qmp";
        return discover_qmp(req->qmp, pid, tids, VS_THREADS_MAX, n, err, errlen);
    case CTL_TARGET_LIBVIRT:
        *source = "libvirt";
        return daemon_libvirt_threads(d, req->libvirt, pid, tids, n, NULL, false, err, errlen);
    default:
        snprintf(err, errlen, "attach needs pid, tids, qmp or libvirt");
        return -EINVAL;
    }
}

int
daemon_libvirt_threads(struct daemon_ctx *d, const char *domain, pid_t *pid, pid_t *tids,
                       unsigned int *n, struct libvirt_meta *meta, bool live_only, char *err,
                       size_t errlen)
{
    const char *how;
    unsigned int k = 0;
    char path[64];
    int r;

    r = libvirt_vcpus_find(d->libvirt_dir, domain, pid, tids, VS_THREADS_MAX, n, &how, meta, err,
                           errlen);
    for (unsigned int i = 0; r == 0 && live_only && i < *n; i++) {
        snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)*pid, (int)tids[i]);
        if (access(path, F_OK) == 0)
            tids[k++] = tids[i];
    }
    if (r == 0 && live_only)
        *n = k;
    /* The status file may be stale (a thread id reused): check as for QMP. */
    if (r == 0)
        r = discover_check_vcpus(*pid, tids, *n, err, errlen);
    if (r == 0)
        r = check_target(d, NULL, *pid, NULL, err, errlen);
    return r;
}

/*
 * Refuse what must never be managed (pid 1, kernel threads, the daemon,
 * its guardian) and, for targets named by pid or tids, processes that are
 * neither QEMU nor the caller's own (docs/protocol.md), before anything
 * of the target is touched.
 */
static int
check_target(struct daemon_ctx *d, const struct ctl_request *req, pid_t pid,
             const struct control_peer *peer, char *err, size_t errlen)
{
    struct discover_rules rules = {
        .daemon = getpid(),
        .guardian = d->guardian_pid,
        .caller = peer != NULL ? peer->pid : 0,
        .any_process = req != NULL && req->any_process,
    };
    bool named = req != NULL && (req->target == CTL_TARGET_PID || req->target == CTL_TARGET_TIDS);

    return discover_check_target(pid, named, &rules, err, errlen);
}

/* The control server's counters (docs/protocol.md, stats). */
static struct json_object *
control_json(const struct control *c)
{
    struct json_object *o = json_object_new_object();
    struct control_stats st;

    control_get_stats(c, &st);
    json_object_object_add(o, "clients", json_object_new_int((int)st.clients));
    json_object_object_add(o, "accepted", json_object_new_int64((int64_t)st.accepted));
    json_object_object_add(o, "refused_full", json_object_new_int64((int64_t)st.refused_full));
    json_object_object_add(o, "requests", json_object_new_int64((int64_t)st.requests));
    json_object_object_add(o, "errors", json_object_new_int64((int64_t)st.errors));
    json_object_object_add(o, "denied", json_object_new_int64((int64_t)st.denied));
    json_object_object_add(o, "oversize", json_object_new_int64((int64_t)st.oversize));
    json_object_object_add(o, "timeouts", json_object_new_int64((int64_t)st.timeouts));
    json_object_object_add(o, "io_errors", json_object_new_int64((int64_t)st.io_errors));
    return o;
}

/* unattached_json's `gone`: libvirt keeps a status file for each running domain. */
static bool
libvirt_gone(void *arg, const char *domain)
{
    const struct daemon_ctx *d = arg;
    char path[PATH_MAX];
    int n = snprintf(path, sizeof(path), "%s/%s.xml",
                     d->libvirt_dir != NULL ? d->libvirt_dir : LIBVIRT_RUN_DIR, domain);

    return n > 0 && (size_t)n < sizeof(path) && access(path, F_OK) < 0 && errno == ENOENT;
}

/* The guardian's watchdog (docs/protocol.md, stats): its bound, trips and the last one. */
static struct json_object *
watchdog_json(const struct statefile *sf)
{
    const struct statefile_watch *w = sf->watch;
    struct json_object *o = json_object_new_object(), *last = NULL;
    uint64_t trips = __atomic_load_n(&w->trips, __ATOMIC_ACQUIRE);
    int cpu;
    uint64_t age = statefile_oldest_beat(sf, clock_mono_ns(), &cpu);

    json_object_object_add(o, "bound_ms", json_object_new_int64((int64_t)w->bound_ms));
    json_object_object_add(o, "trips", json_object_new_int64((int64_t)trips));
    json_object_object_add(o, "oldest_beat_ms",
                           json_object_new_int64((int64_t)(age / NSEC_PER_MSEC)));
    json_object_object_add(o, "oldest_beat_cpu", json_object_new_int(cpu));
    if (trips > 0) {
        last = json_object_new_object();
        json_object_object_add(last, "time", json_object_new_int64(w->last.realtime_s));
        json_object_object_add(last, "cpu", json_object_new_int(w->last.cpu));
        json_object_object_add(last, "tid", json_object_new_int(w->last.tid));
        json_object_object_add(last, "dispatcher", json_object_new_int(w->last.dispatcher));
        json_object_object_add(last, "waited_ms", json_object_new_int64(w->last.waited_ms));
        json_object_object_add(last, "beat_ms", json_object_new_int64(w->last.beat_ms));
        json_object_object_add(last, "restored", json_object_new_int64(w->last.restored));
    }
    json_object_object_add(o, "last", last);
    return o;
}

static int
do_attach(struct daemon_ctx *d, const struct ctl_request *req, const struct control_peer *peer,
          struct json_object **res, char *err, size_t errlen)
{
    pid_t tids[VS_THREADS_MAX], pid;
    const char *source = "", *origin;
    unsigned int n = 0;
    int r;

    r = resolve_target(d, req, &pid, tids, &n, &source, err, errlen);
    if (r == 0)
        r = check_target(d, req, pid, peer, err, errlen);
    if (r < 0)
        return r;
    /* Where hot-plugged vCPUs are found again (vcpu_resync.c). */
    origin = req->target == CTL_TARGET_QMP       ? req->qmp
             : req->target == CTL_TARGET_LIBVIRT ? req->libvirt
                                                 : NULL;
    r = sched_attach(d->sched, req->name, req->pool[0] ? req->pool : NULL, pid, tids, n,
                     req->params, req->nr_params, source, origin, err, errlen);
    if (r == 0)
        *res = sched_json_domain(d->sched, req->name);
    return r;
}

/*
 * Pin the daemon's own threads but its dispatchers (the real-time ones,
 * pinned to their CPUs) to the housekeeping CPUs, as at start-up. The
 * guardian follows at the next housekeeping tick (main.c).
 */
static void
housekeeping_pin(const struct daemon_ctx *d)
{
    DIR *dir = opendir("/proc/self/task");
    struct dirent *e;

    if (dir == NULL) {
        log_warn("pin the daemon to housekeeping cpus: /proc/self/task");
        return;
    }
    while ((e = readdir(dir)) != NULL) {
        pid_t tid = (pid_t)atoi(e->d_name);
        int policy = tid > 0 ? sched_getscheduler(tid) : -1;

        if (policy < 0 || (policy & ~SCHED_RESET_ON_FORK) == SCHED_FIFO)
            continue; /* '.', '..', a thread gone, a dispatcher */
        if (sched_setaffinity(tid, sizeof(d->housekeeping), &d->housekeeping) < 0 && errno != ESRCH)
            log_warn("pin daemon thread %d to housekeeping cpus", (int)tid);
    }
    closedir(dir);
}

/*
 * Keep the housekeeping set current as pools come and go: every online
 * CPU no pool manages (online = housekeeping + managed, from start-up on).
 * `was` holds the CPUs managed before the change.
 */
static void
housekeeping_update(struct daemon_ctx *d, const cpu_set_t *was)
{
    struct cpuset hk;
    char list[CPULIST_TEXT_MAX];

    cpuset_zero(&hk);
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (sched_cpu_is_managed(d->sched, c))
            CPU_CLR(c, &d->housekeeping);
        else if (CPU_ISSET(c, was))
            CPU_SET(c, &d->housekeeping);
        if (CPU_ISSET(c, &d->housekeeping))
            cpuset_set(&hk, (unsigned int)c);
    }
    housekeeping_pin(d);
    log_info("housekeeping cpus: %s", cpulist_format(&hk, list, sizeof(list)));
}

static void
managed_cpus(struct daemon_ctx *d, cpu_set_t *set)
{
    CPU_ZERO(set);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (sched_cpu_is_managed(d->sched, c))
            CPU_SET(c, set);
}

/*
 * The managed CPUs change: a pool created (policy != NULL) or resized on
 * host CPUs hosts[0..n), described and checked first, the housekeeping
 * CPUs following.
 */
static int
pool_cpus_change(struct daemon_ctx *d, const char *name, const int *hosts, unsigned int n,
                 const char *policy, const struct kv *kv, size_t nkv, char *err, size_t errlen)
{
    struct policy_cpu cpus[CPUSET_MAX];
    cpu_set_t was;
    int r;

    r = topology_describe(hosts, n, cpus, err, errlen);
    if (r == 0)
        r = daemon_check_pool_cpus(d, hosts, n, err, errlen);
    if (r < 0)
        return r;
    managed_cpus(d, &was);
    if (policy != NULL)
        r = sched_pool_create(d->sched, name, cpus, n, policy, kv, nkv, err, errlen);
    else
        r = sched_pool_resize(d->sched, name, cpus, n, err, errlen);
    if (r == 0)
        housekeeping_update(d, &was);
    return r;
}

int
daemon_pool_create(struct daemon_ctx *d, const char *name, const int *hosts, unsigned int n,
                   const char *policy, const struct kv *kv, size_t nkv, char *err, size_t errlen)
{
    return pool_cpus_change(d, name, hosts, n, policy, kv, nkv, err, errlen);
}

int
daemon_pool_resize(struct daemon_ctx *d, const char *name, const int *hosts, unsigned int n,
                   char *err, size_t errlen)
{
    return pool_cpus_change(d, name, hosts, n, NULL, NULL, 0, err, errlen);
}

/* The codec has parsed and checked req->cpus into req->cpuset: host CPU numbers. */
static int
req_hosts(const struct ctl_request *req, int *hosts, unsigned int *n, char *err, size_t errlen)
{
    if (cpuset_to_array(&req->cpuset, hosts, CPUSET_MAX, n) < 0) {
        snprintf(err, errlen, "cpus: a pool has at most %d", CPUSET_MAX);
        return -E2BIG;
    }
    return 0;
}

static int
pool_create(struct daemon_ctx *d, const struct ctl_request *req, char *err, size_t errlen)
{
    int hosts[CPUSET_MAX];
    unsigned int n;
    int r = req_hosts(req, hosts, &n, err, errlen);

    if (r < 0)
        return r;
    return daemon_pool_create(d, req->name, hosts, n, req->policy[0] ? req->policy : "credit",
                              req->params, req->nr_params, err, errlen);
}

static int
do_pool(struct daemon_ctx *d, const struct ctl_request *req, struct json_object **res, char *err,
        size_t errlen)
{
    cpu_set_t was;
    int r;

    switch (req->pool_op) {
    case CTL_POOL_LIST:
        *res = sched_json_pools(d->sched);
        return 0;
    case CTL_POOL_CREATE:
        return pool_create(d, req, err, errlen);
    case CTL_POOL_SET:
        if (req->cpus[0] != '\0') {
            int hosts[CPUSET_MAX];
            unsigned int n;

            r = req_hosts(req, hosts, &n, err, errlen);
            return r < 0 ? r : daemon_pool_resize(d, req->name, hosts, n, err, errlen);
        }
        return sched_pool_set(d->sched, req->name, req->policy[0] ? req->policy : NULL, req->params,
                              req->nr_params, err, errlen);
    case CTL_POOL_DESTROY:
        managed_cpus(d, &was);
        r = sched_pool_destroy(d->sched, req->name, err, errlen);
        if (r == 0)
            housekeeping_update(d, &was);
        return r;
    }
    snprintf(err, errlen, "unknown pool operation");
    return -EINVAL;
}

static int
handle(struct daemon_ctx *d, const struct ctl_request *req, const struct control_peer *peer,
       struct json_object **res, char *err, size_t errlen)
{
    int r;

    /* control.c has already refused what a peer may not do. */
    *res = NULL;
    switch (req->cmd) {
    case CTL_VERSION:
        *res = json_object_new_object();
        json_object_object_add(*res, "version", json_object_new_string(VCPUSCHED_VERSION));
        json_object_object_add(*res, "protocol", json_object_new_int(CTL_PROTO_VERSION));
        return 0;
    case CTL_HELP:
        *res = sched_json_policies(req->policy[0] ? req->policy : NULL);
        if (*res != NULL)
            return 0;
        snprintf(err, errlen, "no policy '%s' (vcpuschedctl help lists them)", req->policy);
        return -ENOENT;
    case CTL_ATTACH:
        return do_attach(d, req, peer, res, err, errlen);
    case CTL_DETACH:
        return sched_detach(d->sched, req->name, err, errlen);
    case CTL_SET:
        r = sched_set(d->sched, req->name, req->params, req->nr_params, err, errlen);
        if (r == 0)
            *res = sched_json_domain(d->sched, req->name);
        return r;
    case CTL_LIST:
        *res = sched_json_list(d->sched);
        return 0;
    case CTL_STATS:
        *res = sched_json_stats(d->sched);
        if (d->ctl != NULL)
            json_object_object_add(*res, "control", control_json(d->ctl));
        if (*res != NULL && d->sf != NULL)
            json_object_object_add(*res, "watchdog", watchdog_json(d->sf));
        if (*res != NULL && d->unattached != NULL)
            json_object_object_add(
                *res, "libvirt_unattached",
                unattached_json(d->unattached, clock_mono_ns(), libvirt_gone, d));
        return 0;
    case CTL_POOL:
        return do_pool(d, req, res, err, errlen);
    case CTL_MOVE:
        r = sched_move(d->sched, req->name, req->pool, req->params, req->nr_params, err, errlen);
        if (r == 0)
            *res = sched_json_domain(d->sched, req->name);
        return r;
    case CTL_HOOK:
        return daemon_libvirt_hook(d, req, res, err, errlen);
    }
    snprintf(err, errlen, "unknown command");
    return -EINVAL;
}

int
daemon_handle(void *ctx, const struct ctl_request *req, const struct control_peer *peer,
              struct json_object **res, char *err, size_t errlen)
{
    struct daemon_ctx *d = ctx;
    int r = handle(d, req, peer, res, err, errlen);

    if (d->changed != NULL)
        d->changed(d->changed_arg);
    return r;
}

/*
 * A pool may not take the last housekeeping CPU (the host would starve).
 * d->housekeeping is current: pool create and destroy update it.
 */
int
daemon_check_pool_cpus(struct daemon_ctx *d, const int *cpus, unsigned int n, char *err,
                       size_t errlen)
{
    cpu_set_t left = d->housekeeping;

    for (unsigned int i = 0; i < n; i++)
        CPU_CLR(cpus[i], &left);
    if (CPU_COUNT(&left) == 0) {
        snprintf(err, errlen, "the pool would leave no housekeeping cpu");
        return -EINVAL;
    }
    return 0;
}

/*
 * The default pool's CPUs: the online CPUs less the default housekeeping
 * set (host/housekeeping.h: an eighth of each NUMA node).
 */
static int
default_pool_cpus(const cpu_set_t *online, int *cpus, unsigned int *n, char *err, size_t errlen)
{
    struct policy_cpu desc[CPUSET_MAX];
    int all[CPUSET_MAX];
    struct cpuset hk;
    unsigned int nr = 0;

    for (int c = 0; c < CPUSET_MAX; c++) /* CPUSET_MAX <= CPU_SETSIZE (1024) */
        if (CPU_ISSET(c, online))
            all[nr++] = c;
    if (topology_describe(all, nr, desc, err, errlen) < 0)
        return -EIO;
    if (housekeeping_default(desc, nr, &hk) == 0) {
        snprintf(err, errlen, "one CPU online: nothing can be managed");
        return -EINVAL;
    }
    *n = 0;
    for (unsigned int i = 0; i < nr; i++)
        if (!cpuset_has(&hk, (unsigned int)all[i]))
            cpus[(*n)++] = all[i];
    return 0;
}

/*
 * A configured pool's CPU list ("" = the default pool's, allowed only
 * without a configuration file: config_check_cpus) as host CPU numbers.
 */
int
daemon_pool_cpus(const char *list, const cpu_set_t *online, int *cpus, unsigned int *n, char *err,
                 size_t errlen)
{
    struct cpuset set;

    if (list[0] == '\0')
        return default_pool_cpus(online, cpus, n, err, errlen);
    if (cpulist_parse(list, &set, err, errlen) < 0)
        return -EINVAL;
    if (cpuset_to_array(&set, cpus, CPUSET_MAX, n) < 0) {
        snprintf(err, errlen, "more than %d", CPUSET_MAX);
        return -E2BIG;
    }
    return 0;
}
