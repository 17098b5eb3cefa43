/* SPDX-License-Identifier: ISC */
/*
 * actuator_linux.c - SCHED_FIFO levels, affinity, cgroup v1 freezing and
 * restoration of managed threads on Linux; see actuator.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actuator.h"

#define CG_V1_CPU     "/sys/fs/cgroup/cpu"
#define CG_V1_FREEZER "/sys/fs/cgroup/freezer"
/* cgroup v2: the whole tree on a v2-only host, or beside v1 (hybrid). */
#define CG_V2        "/sys/fs/cgroup"
#define CG_V2_HYBRID "/sys/fs/cgroup/unified"
/* Our per-thread freezer groups live here, outside libvirt's hierarchy. */
#define CG_PARK_DIR CG_V1_FREEZER "/vcpusched"

static int
read_file(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return -errno;
    n = read(fd, buf, len - 1);
    if (n < 0) {
        int e = errno;

        close(fd);
        return -e;
    }
    close(fd);
    buf[n] = '\0';
    return (int)n;
}

static int
write_file(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    ssize_t n;
    int e;

    if (fd < 0)
        return -errno;
    n = write(fd, s, strlen(s));
    e = errno;
    close(fd);
    return n < 0 ? -e : 0;
}

int
act_read_stat(pid_t pid, pid_t tid, char *state, uint64_t *start_time)
{
    char path[64], buf[1024], *p, *save = NULL, *tok;
    int n, field = 3;

    snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
    n = read_file(path, buf, sizeof(buf));
    if (n < 0)
        return n == -ENOENT ? -ESRCH : n;
    /* comm may contain spaces and parentheses: fields start after the last ')'. */
    p = strrchr(buf, ')');
    if (p == NULL)
        return -EPROTO;
    for (tok = strtok_r(p + 1, " ", &save); tok != NULL;
         tok = strtok_r(NULL, " ", &save), field++) {
        if (field == 3 && state != NULL)
            *state = tok[0];
        if (field == 22) {
            if (start_time != NULL)
                *start_time = strtoull(tok, NULL, 10);
            return 0;
        }
    }
    return -EPROTO;
}

bool
act_thread_alive(pid_t pid, pid_t tid, uint64_t start_time)
{
    uint64_t st;

    return act_read_stat(pid, tid, NULL, &st) == 0 && st == start_time;
}

/* The v1 cgroup path of `tid` for `controller` (v2 for ""), or -ENOENT. */
static int
cgroup_of(pid_t pid, pid_t tid, const char *controller, char *out, size_t len)
{
    char path[64], buf[4096], *line, *save = NULL;
    int n;

    snprintf(path, sizeof(path), "/proc/%d/task/%d/cgroup", (int)pid, (int)tid);
    n = read_file(path, buf, sizeof(buf));
    if (n < 0)
        return n == -ENOENT ? -ESRCH : n;
    for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char *ctrls = strchr(line, ':'), *cpath, *c, *csave = NULL;

        if (ctrls == NULL || (cpath = strchr(++ctrls, ':')) == NULL)
            continue;
        *cpath++ = '\0';
        if (controller[0] == '\0' && ctrls[0] == '\0') { /* "0::/path" */
            snprintf(out, len, "%s", cpath);
            return 0;
        }
        for (c = strtok_r(ctrls, ",", &csave); c != NULL; c = strtok_r(NULL, ",", &csave)) {
            if (strcmp(c, controller) == 0) {
                snprintf(out, len, "%s", cpath);
                return 0;
            }
        }
    }
    return -ENOENT;
}

int
act_thread_open(struct act_thread *t, pid_t pid, pid_t tid, char *err, size_t errlen)
{
    struct sched_param sp;
    int policy, r;

    memset(t, 0, sizeof(*t));
    t->pid = pid;
    t->tid = tid;
    t->cpu = -1;
    r = act_read_stat(pid, tid, NULL, &t->start_time);
    if (r < 0) {
        snprintf(err, errlen, "thread %d of process %d: %s", (int)tid, (int)pid,
                 r == -ESRCH ? "no such thread" : strerror(-r));
        return r;
    }
    policy = sched_getscheduler(tid);
    if (policy < 0 || sched_getparam(tid, &sp) < 0 ||
        sched_getaffinity(tid, sizeof(t->orig.affinity), &t->orig.affinity) < 0) {
        r = -errno;
        snprintf(err, errlen, "thread %d: read scheduling attributes: %s", (int)tid,
                 strerror(errno));
        return r;
    }
    t->orig.policy = policy & ~SCHED_RESET_ON_FORK;
    t->orig.prio = sp.sched_priority;
    return 0;
}

/*
 * Two system calls whatever the pool's size: ask for every pool CPU; the
 * kernel keeps those the thread's cpuset allows (EINVAL: none), and
 * sched_getaffinity says which.
 */
int
act_probe_cpus(struct act_thread *t, const int *cpus, unsigned int n, struct cpuset *mask)
{
    cpu_set_t set, got;

    cpuset_zero(mask);
    CPU_ZERO(&set);
    for (unsigned int i = 0; i < n; i++)
        if (cpus[i] >= 0 && cpus[i] < CPU_SETSIZE)
            CPU_SET(cpus[i], &set);
    if (sched_setaffinity(t->tid, sizeof(set), &set) < 0)
        return errno == EINVAL ? 1 : -errno;
    if (sched_getaffinity(t->tid, sizeof(got), &got) < 0)
        return -errno;
    for (unsigned int i = 0; i < n; i++)
        if (cpus[i] >= 0 && cpus[i] < CPU_SETSIZE && CPU_ISSET(cpus[i], &got))
            cpuset_set(mask, i);
    t->cpu = -1; /* not pinned to one CPU yet */
    return 2;
}

int
act_set_cpu(struct act_thread *t, int cpu)
{
    cpu_set_t set;

    if (t->cpu == cpu)
        return 0;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(t->tid, sizeof(set), &set) < 0)
        return -errno;
    t->cpu = cpu;
    return 1;
}

/* True if the cgroup v2 group `cg` has the cpu controller. */
static bool
v2_has_cpu(const char *cg)
{
    char path[ACT_CGROUP_PATH_MAX + 64], buf[256], *w, *save = NULL;
    const char *root = access(CG_V2 "/cgroup.controllers", F_OK) == 0 ? CG_V2 : CG_V2_HYBRID;

    snprintf(path, sizeof(path), "%s%s/cgroup.controllers", root, strcmp(cg, "/") ? cg : "");
    if (read_file(path, buf, sizeof(buf)) < 0)
        return false;
    for (w = strtok_r(buf, " \n", &save); w != NULL; w = strtok_r(NULL, " \n", &save))
        if (strcmp(w, "cpu") == 0)
            return true;
    return false;
}

/*
 * Explain an EPERM from sched_setscheduler. With CONFIG_RT_GROUP_SCHED a
 * cpu cgroup without real-time runtime refuses SCHED_FIFO: on cgroup v1
 * that is cpu.rt_runtime_us (0 in every new group); cgroup v2 has no such
 * knob, so a v2 group with the cpu controller has none and cannot get any.
 */
static void
explain_rt_eperm(struct act_thread *t, bool move_rt_cgroup, char *err, size_t errlen)
{
    char cg[ACT_CGROUP_PATH_MAX], path[ACT_CGROUP_PATH_MAX + 64], val[32] = "?";

    if (cgroup_of(t->pid, t->tid, "cpu", cg, sizeof(cg)) == 0 && strcmp(cg, "/") != 0) {
        snprintf(path, sizeof(path), CG_V1_CPU "%s/cpu.rt_runtime_us", cg);
        if (read_file(path, val, sizeof(val)) > 0)
            val[strcspn(val, "\n")] = '\0';
        snprintf(err, errlen,
                 "thread %d: SCHED_FIFO refused (EPERM): cpu cgroup %s has cpu.rt_runtime_us=%s "
                 "(CONFIG_RT_GROUP_SCHED); %s",
                 (int)t->tid, cg, val,
                 move_rt_cgroup ? "moving it to the root cpu cgroup failed too"
                                : "run the daemon with --rt-cgroup move or grant runtime");
    } else if (cgroup_of(t->pid, t->tid, "", cg, sizeof(cg)) == 0 && v2_has_cpu(cg)) {
        snprintf(err, errlen,
                 "thread %d: SCHED_FIFO refused (EPERM): its cgroup v2 group %s has the cpu "
                 "controller, which with real-time group scheduling (CONFIG_RT_GROUP_SCHED) "
                 "gives no real-time runtime, and cgroup v2 cannot grant any: boot with "
                 "rt_group_sched=0 (Linux 6.16+) or a kernel without CONFIG_RT_GROUP_SCHED",
                 (int)t->tid, cg);
    } else {
        snprintf(err, errlen, "thread %d: SCHED_FIFO refused (EPERM), not by a cpu cgroup",
                 (int)t->tid);
    }
}

/* Move a thread to the root v1 cpu cgroup, remembering where it was. */
static int
move_to_root_cpu_cgroup(struct act_thread *t)
{
    char cg[ACT_CGROUP_PATH_MAX], tid[16];
    int r;

    r = cgroup_of(t->pid, t->tid, "cpu", cg, sizeof(cg));
    if (r < 0 || strcmp(cg, "/") == 0)
        return -EPERM;
    snprintf(tid, sizeof(tid), "%d", (int)t->tid);
    r = write_file(CG_V1_CPU "/tasks", tid);
    if (r == 0)
        snprintf(t->orig.cpu_cgroup, sizeof(t->orig.cpu_cgroup), "%s", cg);
    return r;
}

int
act_set_level(struct act_thread *t, const struct act_prio *prio, enum act_level level,
              bool move_rt_cgroup, char *err, size_t errlen)
{
    struct sched_param sp = {.sched_priority = level == ACT_LEVEL_MID ? prio->mid : prio->low};
    int e;

    if (t->level == level)
        return 0;
    e = sched_setscheduler(t->tid, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) == 0 ? 0 : errno;
    if (e == EPERM && move_rt_cgroup && t->orig.cpu_cgroup[0] == '\0' &&
        move_to_root_cpu_cgroup(t) == 0)
        e = sched_setscheduler(t->tid, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) == 0 ? 0 : errno;
    if (e == 0) {
        t->level = level;
        return 1;
    }
    /* errno is read once: explaining reads files and would clobber it. */
    if (e == EPERM)
        explain_rt_eperm(t, move_rt_cgroup, err, errlen);
    else
        snprintf(err, errlen, "thread %d: sched_setscheduler: %s", (int)t->tid, strerror(e));
    return -e;
}

static void
park_dir(pid_t tid, char *out, size_t len)
{
    snprintf(out, len, CG_PARK_DIR "/%d", (int)tid);
}

int
act_freeze(struct act_thread *t, char *err, size_t errlen)
{
    char dir[128], path[160], tid[16];
    int r;

    if (t->frozen)
        return 0;
    if (access(CG_V1_FREEZER "/tasks", F_OK) != 0) {
        snprintf(err, errlen, "cannot park thread %d: no cgroup v1 freezer at " CG_V1_FREEZER,
                 (int)t->tid);
        return -EOPNOTSUPP;
    }
    park_dir(t->tid, dir, sizeof(dir));
    if (t->orig.freezer_cgroup[0] == '\0') {
        r = cgroup_of(t->pid, t->tid, "freezer", t->orig.freezer_cgroup,
                      sizeof(t->orig.freezer_cgroup));
        if (r < 0)
            return r;
        if ((mkdir(CG_PARK_DIR, 0755) < 0 && errno != EEXIST) ||
            (mkdir(dir, 0755) < 0 && errno != EEXIST))
            return -errno;
        snprintf(path, sizeof(path), "%s/tasks", dir);
        snprintf(tid, sizeof(tid), "%d", (int)t->tid);
        r = write_file(path, tid);
        if (r < 0) {
            t->orig.freezer_cgroup[0] = '\0';
            rmdir(dir);
            return r;
        }
    }
    snprintf(path, sizeof(path), "%s/freezer.state", dir);
    r = write_file(path, "FROZEN");
    if (r < 0)
        return r;
    t->frozen = true;
    return 1;
}

int
act_thaw(struct act_thread *t)
{
    char path[160];
    int r;

    if (!t->frozen)
        return 0;
    snprintf(path, sizeof(path), CG_PARK_DIR "/%d/freezer.state", (int)t->tid);
    r = write_file(path, "THAWED");
    if (r < 0)
        return r;
    t->frozen = false;
    return 1;
}

/* Put the thread back in a v1 cgroup `path` of hierarchy `root`. */
static void
cgroup_return(const char *root, const char *path, pid_t tid)
{
    char file[ACT_CGROUP_PATH_MAX + 64], s[16];

    snprintf(file, sizeof(file), "%s%s/tasks", root, strcmp(path, "/") == 0 ? "" : path);
    snprintf(s, sizeof(s), "%d", (int)tid);
    (void)write_file(file, s); /* best effort: the group may be gone with its VM */
}

int
act_restore_saved(pid_t pid, pid_t tid, uint64_t start_time, const struct act_orig *o, bool frozen)
{
    struct sched_param sp = {.sched_priority = o->prio};
    char dir[128], path[160];
    bool parked;
    int r = 0;

    if (!act_thread_alive(pid, tid, start_time)) {
        park_dir(tid, dir, sizeof(dir));
        rmdir(dir); /* an empty park group left by a thread that exited */
        return -ESRCH;
    }
    /*
     * Thaw by convention (the park group is named after the TID), not by
     * the record alone: a daemon killed between freezing and recording
     * must not leave a thread frozen.
     */
    park_dir(tid, dir, sizeof(dir));
    parked = access(dir, F_OK) == 0;
    if (parked) {
        snprintf(path, sizeof(path), "%s/freezer.state", dir);
        (void)write_file(path, "THAWED");
    }
    (void)frozen;
    /* SCHED_OTHER first: an RT task may not enter a group without rt runtime. */
    if (sched_setscheduler(tid, o->policy, &sp) < 0)
        r = -errno;
    if (sched_setaffinity(tid, sizeof(o->affinity), &o->affinity) < 0 && r == 0)
        r = -errno;
    if (o->cpu_cgroup[0] != '\0')
        cgroup_return(CG_V1_CPU, o->cpu_cgroup, tid);
    if (parked) {
        cgroup_return(CG_V1_FREEZER, o->freezer_cgroup[0] ? o->freezer_cgroup : "/", tid);
        rmdir(dir);
    }
    return r < 0 ? r : 1;
}

int
act_restore(struct act_thread *t)
{
    int r;

    if (t->level == ACT_LEVEL_NONE && t->cpu < 0 && !t->frozen && t->orig.freezer_cgroup[0] == 0)
        return 0;
    r = act_restore_saved(t->pid, t->tid, t->start_time, &t->orig, t->frozen);
    t->orig.cpu_cgroup[0] = t->orig.freezer_cgroup[0] = '\0';
    t->level = ACT_LEVEL_NONE;
    t->cpu = -1;
    t->frozen = false;
    return r;
}
