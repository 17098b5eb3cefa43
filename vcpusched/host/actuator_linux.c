/* SPDX-License-Identifier: ISC */
/*
 * actuator_linux.c - SCHED_FIFO levels, affinity, parking (cgroup v1
 * freezer or cgroup v2 cgroup.freeze) and restoration of managed threads
 * on Linux; see actuator.h. The choices are cgroup.c's; the changes are here.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actuator.h"

#define CG_V1_CPU "/sys/fs/cgroup/cpu"
/* cgroup v2: the whole tree on a v2-only host, or beside v1 (hybrid). */
#define CG_V2        "/sys/fs/cgroup"
#define CG_V2_HYBRID "/sys/fs/cgroup/unified"

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

int
act_read_comm(pid_t pid, pid_t tid, char *comm, size_t len)
{
    char path[64];
    int n;

    snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
    n = read_file(path, comm, len);
    if (n < 0)
        return n == -ENOENT ? -ESRCH : n;
    comm[strcspn(comm, "\n")] = '\0';
    return 0;
}

/* `cur` less `off` into `out`; false if nothing of `off` was in `cur`. */
static bool
affinity_less(const cpu_set_t *cur, const cpu_set_t *off, cpu_set_t *out)
{
    cpu_set_t both;

    CPU_AND(&both, cur, off);
    if (CPU_COUNT(&both) == 0)
        return false;
    CPU_XOR(out, cur, &both);
    return true;
}

int
act_keep_off(struct act_thread *t, pid_t pid, pid_t tid, const cpu_set_t *off, char *err,
             size_t errlen)
{
    cpu_set_t next;
    int r = act_thread_open(t, pid, tid, err, errlen);

    if (r < 0)
        return r;
    if (!affinity_less(&t->orig.affinity, off, &next))
        return 0;
    if (CPU_COUNT(&next) == 0) {
        snprintf(err, errlen, "its affinity allows only managed CPUs");
        return -EINVAL;
    }
    t->placed = true; /* on file before the change: the guardian gives it back */
    if (sched_setaffinity(tid, sizeof(next), &next) < 0) {
        r = -errno;
        t->placed = false;
        snprintf(err, errlen, "%s",
                 r == -EINVAL ? "its cgroup cpuset allows only managed CPUs" : strerror(-r));
        return r;
    }
    return 1;
}

int
act_affinity_meets(pid_t tid, const cpu_set_t *off)
{
    cpu_set_t cur, both;

    if (sched_getaffinity(tid, sizeof(cur), &cur) < 0)
        return -errno;
    CPU_AND(&both, &cur, off);
    return CPU_COUNT(&both) > 0;
}

int
act_keep_off_again(struct act_thread *t, const cpu_set_t *off)
{
    cpu_set_t cur, next;

    if (sched_getaffinity(t->tid, sizeof(cur), &cur) < 0)
        return -errno;
    if (!affinity_less(&cur, off, &next))
        return 0;
    if (CPU_COUNT(&next) == 0)
        return -EINVAL;
    return sched_setaffinity(t->tid, sizeof(next), &next) < 0 ? -errno : 1;
}

int
act_read_schedstat(pid_t pid, pid_t tid, struct act_schedstat *st)
{
    char path[64], buf[128];
    unsigned long long run, delay, pcount;
    int n;

    snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
    n = read_file(path, buf, sizeof(buf));
    if (n < 0)
        return n == -ENOENT ? -ESRCH : n;
    if (sscanf(buf, "%llu %llu %llu", &run, &delay, &pcount) != 3)
        return -EPROTO;
    *st = (struct act_schedstat){.run_ns = run, .delay_ns = delay, .pcount = pcount};
    return 0;
}

bool
act_thread_alive(pid_t pid, pid_t tid, uint64_t start_time)
{
    uint64_t st;

    return act_read_stat(pid, tid, NULL, &st) == 0 && st == start_time;
}

bool
act_thread_killed(pid_t pid, pid_t tid)
{
    char path[64], buf[4096], *line, *save = NULL;
    const unsigned long long sigkill = 1ull << (SIGKILL - 1);

    snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
    if (read_file(path, buf, sizeof(buf)) < 0)
        return false;
    for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save))
        if ((strncmp(line, "SigPnd:", 7) == 0 || strncmp(line, "ShdPnd:", 7) == 0) &&
            (strtoull(line + 7, NULL, 16) & sigkill) != 0)
            return true;
    return false;
}

/* The v1 cgroup path of `tid` for `controller` (v2 for ""), or -ENOENT. */
static int
cgroup_of(pid_t pid, pid_t tid, const char *controller, char *out, size_t len)
{
    char path[64], buf[4096];
    int n;

    snprintf(path, sizeof(path), "/proc/%d/task/%d/cgroup", (int)pid, (int)tid);
    n = read_file(path, buf, sizeof(buf));
    if (n < 0)
        return n == -ENOENT ? -ESRCH : n;
    return cgroup_parse_proc(buf, controller, out, len);
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

/* --- parking --------------------------------------------------------------- */

int
act_cgroup_mounts(struct cgroup_mounts *m, char *err, size_t errlen)
{
    FILE *f = fopen("/proc/self/mounts", "re");
    char *line = NULL;
    size_t cap = 0;
    int r = 0;

    memset(m, 0, sizeof(*m));
    if (f == NULL) {
        r = -errno;
        snprintf(err, errlen, "/proc/self/mounts: %s", strerror(errno));
        return r;
    }
    while (getline(&line, &cap, f) > 0) {
        if (cgroup_parse_mount_line(line, m) < 0 && r == 0) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(err, errlen, "cgroup mount point longer than %d bytes: %.200s",
                     CGROUP_MOUNT_MAX - 1, line);
            r = -ENAMETOOLONG;
        }
    }
    free(line);
    fclose(f);
    return r;
}

int
act_park_init(struct act_park *p, const struct cgroup_mounts *m, enum cgroup_want want, char *err,
              size_t errlen)
{
    char path[CGROUP_MOUNT_MAX + 32];
    const char *file;
    int r;

    memset(p, 0, sizeof(*p));
    r = cgroup_choose_backend(m, want, &p->backend, err, errlen);
    if (r < 0 || p->backend == CGROUP_BACKEND_NONE)
        return r;
    snprintf(p->mount, sizeof(p->mount), "%s",
             p->backend == CGROUP_BACKEND_V1 ? m->v1_freezer : m->v2);
    /* v2 moves single threads with cgroup.threads (Linux 4.14+). */
    file = p->backend == CGROUP_BACKEND_V1 ? "tasks" : "cgroup.threads";
    snprintf(path, sizeof(path), "%s/%s", p->mount, file);
    if (access(path, W_OK) != 0) {
        r = -errno;
        snprintf(err, errlen, "parking (--park %s): %s: %s", cgroup_backend_name(p->backend), path,
                 strerror(errno));
        p->backend = CGROUP_BACKEND_NONE;
        return r;
    }
    return 0;
}

/* Remove the hold groups of daemons that are gone (a crash before the guardian ran). */
static void
unhold_dead(const char *top)
{
    char dir[CGROUP_DIR_MAX];
    DIR *d = opendir(top);
    struct dirent *e;

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        pid_t pid = cgroup_hold_pid(e->d_name);

        if (pid > 0 && kill(pid, 0) < 0 && errno == ESRCH &&
            snprintf(dir, sizeof(dir), "%s/%s", top, e->d_name) < (int)sizeof(dir))
            (void)rmdir(dir);
    }
    closedir(d);
}

int
act_park_hold(const struct act_park *p, char *hold, size_t len, char *err, size_t errlen)
{
    char top[CGROUP_DIR_MAX], state[CGROUP_DIR_MAX + 32];
    int r;

    hold[0] = '\0';
    if (p->backend != CGROUP_BACKEND_V1)
        return 0;
    snprintf(top, sizeof(top), "%s/" CGROUP_V1_PARK_DIR, p->mount);
    unhold_dead(top);
    r = cgroup_hold_dir(p->mount, getpid(), hold, len);
    /* A dying predecessor's guardian may remove the empty top in between: again. */
    for (int tries = 3; r == 0 && tries > 0; tries--) {
        if ((mkdir(top, 0755) < 0 && errno != EEXIST) || (mkdir(hold, 0755) < 0 && errno != EEXIST))
            r = -errno;
        if (r != -ENOENT || tries == 1)
            break;
        r = 0;
    }
    if (r == 0) {
        snprintf(state, sizeof(state), "%s/freezer.state", hold);
        r = write_file(state, "FROZEN");
    }
    if (r < 0) {
        snprintf(err, errlen, "cannot hold v1 freezer group %s: %s", hold[0] ? hold : top,
                 strerror(-r));
        act_park_unhold(hold);
        hold[0] = '\0';
    }
    return r;
}

void
act_park_unhold(const char *hold)
{
    char top[CGROUP_DIR_MAX];
    const char *slash;

    if (hold == NULL || hold[0] == '\0' || (slash = strrchr(hold, '/')) == NULL ||
        (size_t)(slash - hold) >= sizeof(top))
        return;
    (void)rmdir(hold); /* frozen and empty: the kernel lets it go, key and all */
    snprintf(top, sizeof(top), "%.*s", (int)(slash - hold), hold);
    (void)rmdir(top);
}

static int
write_tid(const char *dir, const char *file, pid_t tid)
{
    char path[CGROUP_DIR_MAX + 32], s[16];

    if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    snprintf(s, sizeof(s), "%d", (int)tid);
    return write_file(path, s);
}

/* A small file of a group into buf; NULL if there is none. */
static const char *
read_group_file(const char *dir, const char *file, char *buf, size_t len)
{
    char path[CGROUP_DIR_MAX + 32];

    if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path) ||
        read_file(path, buf, len) < 0)
        return NULL;
    return buf;
}

static bool
has_child_groups(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    bool any = false;

    if (d == NULL)
        return false;
    while (!any && (e = readdir(d)) != NULL)
        any = e->d_type == DT_DIR && strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return any;
}

static enum cgroup_park_mode
park_mode_of(const struct act_orig *o)
{
    return (enum cgroup_park_mode)__atomic_load_n(&o->park_mode, __ATOMIC_ACQUIRE);
}

/*
 * Write-ahead: where the thread is, before any change to its groups. The
 * mode is stored last, so a reader that sees it sees the paths too.
 */
static void
park_record(struct act_orig *o, enum cgroup_park_mode mode, const char *mount, const char *cg)
{
    snprintf(o->park_mount, sizeof(o->park_mount), "%s", mount);
    snprintf(o->park_cgroup, sizeof(o->park_cgroup), "%s", cg);
    __atomic_store_n(&o->park_mode, (unsigned int)mode, __ATOMIC_RELEASE);
}

static void
park_forget(struct act_orig *o)
{
    __atomic_store_n(&o->park_mode, (unsigned int)CGROUP_PARK_NONE, __ATOMIC_RELEASE);
}

static int
park_dir_of(pid_t tid, const struct act_orig *o, char *out, size_t len)
{
    return cgroup_park_dir(park_mode_of(o), o->park_mount, o->park_cgroup, tid, out, len);
}

/* Freeze or thaw the group the record parks the thread in. */
static int
park_set(pid_t tid, const struct act_orig *o, bool frozen)
{
    bool v1 = park_mode_of(o) == CGROUP_PARK_V1;
    char dir[CGROUP_DIR_MAX], path[CGROUP_DIR_MAX + 32];
    int r = park_dir_of(tid, o, dir, sizeof(dir));

    if (r < 0)
        return r;
    snprintf(path, sizeof(path), "%s/%s", dir, v1 ? "freezer.state" : "cgroup.freeze");
    return write_file(path, v1 ? (frozen ? "FROZEN" : "THAWED") : (frozen ? "1" : "0"));
}

/*
 * Remove our own park group (v1, v2 child); it must be empty by now. On
 * v1 the parent <freezer>/vcpusched goes too once it is empty (it is not
 * while another thread is parked there: rmdir refuses), so that nothing
 * of ours is left in the hierarchy.
 */
static void
park_remove(pid_t tid, const struct act_orig *o)
{
    enum cgroup_park_mode mode = park_mode_of(o);
    char dir[CGROUP_DIR_MAX], top[CGROUP_DIR_MAX];

    if ((mode == CGROUP_PARK_V1 || mode == CGROUP_PARK_V2_CHILD) &&
        park_dir_of(tid, o, dir, sizeof(dir)) == 0)
        (void)rmdir(dir);
    if (mode == CGROUP_PARK_V1 &&
        snprintf(top, sizeof(top), "%s/" CGROUP_V1_PARK_DIR, o->park_mount) < (int)sizeof(top))
        (void)rmdir(top);
}

/* First park on v1: a freezer group of its own, <freezer>/vcpusched/<tid>. */
static int
park_v1(struct act_thread *t, const struct act_park *p, char *err, size_t errlen)
{
    char cg[ACT_CGROUP_PATH_MAX], top[CGROUP_DIR_MAX], dir[CGROUP_DIR_MAX] = "";
    int r = cgroup_of(t->pid, t->tid, "freezer", cg, sizeof(cg));

    if (r < 0) {
        snprintf(err, errlen, "cannot park thread %d: its v1 freezer group: %s", (int)t->tid,
                 strerror(-r));
        return r;
    }
    park_record(&t->orig, CGROUP_PARK_V1, p->mount, cg);
    snprintf(top, sizeof(top), "%s/" CGROUP_V1_PARK_DIR, p->mount);
    r = park_dir_of(t->tid, &t->orig, dir, sizeof(dir));
    /* Twice: another pool may remove an empty parent in between (park_remove). */
    for (int i = 0; r == 0 && i < 2; i++) {
        if ((mkdir(top, 0755) < 0 && errno != EEXIST) || (mkdir(dir, 0755) < 0 && errno != EEXIST))
            r = -errno;
        else
            break;
        if (r == -ENOENT && i == 0)
            r = 0;
    }
    if (r == 0)
        r = write_tid(dir, "tasks", t->tid);
    if (r < 0) {
        if (dir[0] != '\0')
            (void)rmdir(dir);
        park_forget(&t->orig);
        snprintf(err, errlen, "cannot park thread %d in v1 freezer group %s: %s", (int)t->tid, dir,
                 strerror(-r));
    }
    return r;
}

/* A new group joins its parent's threaded subtree (domain invalid until then). */
static int
make_threaded(const char *dir)
{
    char type[64], path[CGROUP_DIR_MAX + 32];

    if (read_group_file(dir, "cgroup.type", type, sizeof(type)) != NULL &&
        strcmp(type, "threaded\n") == 0)
        return 0;
    snprintf(path, sizeof(path), "%s/cgroup.type", dir);
    return write_file(path, "threaded");
}

/*
 * First park on v2: freeze the thread's own threaded group if it is alone
 * there (libvirt's vcpuN), else move it into a threaded child group of its
 * group made for it. What fails is undone.
 */
static int
park_v2(struct act_thread *t, const struct act_park *p, char *err, size_t errlen)
{
    char cg[ACT_CGROUP_PATH_MAX], gdir[CGROUP_DIR_MAX], dir[CGROUP_DIR_MAX] = "";
    char type[64], threads[4096], freeze[16];
    struct cgroup_v2_group g = {.path = cg};
    enum cgroup_park_mode mode;
    const char *step = "make";
    int r = cgroup_of(t->pid, t->tid, "", cg, sizeof(cg));

    if (r == 0)
        r = cgroup_group_dir(p->mount, cg, gdir, sizeof(gdir));
    if (r == 0 &&
        (g.threads = read_group_file(gdir, "cgroup.threads", threads, sizeof(threads))) == NULL)
        r = -errno;
    if (r < 0) {
        snprintf(err, errlen, "cannot park thread %d: its cgroup v2 group: %s", (int)t->tid,
                 strerror(-r));
        return r;
    }
    g.type = read_group_file(gdir, "cgroup.type", type, sizeof(type));
    g.freeze = read_group_file(gdir, "cgroup.freeze", freeze, sizeof(freeze));
    g.has_children = has_child_groups(gdir);
    r = cgroup_choose_v2(t->tid, &g, &mode, err, errlen);
    if (r < 0)
        return r;
    park_record(&t->orig, mode, p->mount, cg);
    if (mode == CGROUP_PARK_V2_OWN)
        return 0;
    r = park_dir_of(t->tid, &t->orig, dir, sizeof(dir));
    if (r == 0 && mkdir(dir, 0755) < 0 && errno != EEXIST)
        r = -errno;
    if (r == 0) {
        step = "make threaded";
        r = make_threaded(dir);
    }
    if (r == 0) {
        step = "move the thread into";
        r = write_tid(dir, "cgroup.threads", t->tid);
    }
    if (r < 0) {
        size_t n;

        if (dir[0] != '\0')
            (void)rmdir(dir);
        park_forget(&t->orig);
        snprintf(err, errlen, "cannot park thread %d: %s threaded group %s: %s", (int)t->tid, step,
                 dir, strerror(-r));
        n = strlen(err);
        if (r == -EOPNOTSUPP && n < errlen)
            snprintf(err + n, errlen - n,
                     " (its group %s is a domain with domain controllers enabled or populated "
                     "domain children: cgroup v2 allows no threaded group there)",
                     cg);
    }
    return r;
}

int
act_freeze(struct act_thread *t, const struct act_park *p, char *err, size_t errlen)
{
    int r;

    if (t->frozen)
        return 0;
    if (park_mode_of(&t->orig) == CGROUP_PARK_NONE) {
        if (p->backend == CGROUP_BACKEND_NONE) {
            snprintf(err, errlen,
                     "cannot park thread %d: no cgroup freezer (neither a v1 freezer nor "
                     "cgroup2 is mounted): caps cannot be enforced",
                     (int)t->tid);
            return -EOPNOTSUPP;
        }
        r = p->backend == CGROUP_BACKEND_V1 ? park_v1(t, p, err, errlen)
                                            : park_v2(t, p, err, errlen);
        if (r < 0)
            return r;
    }
    r = park_set(t->tid, &t->orig, true);
    if (r < 0) {
        snprintf(err, errlen, "cannot park thread %d: freeze: %s", (int)t->tid, strerror(-r));
        return r;
    }
    t->frozen = true;
    return 1;
}

int
act_thaw(struct act_thread *t)
{
    int r;

    if (!t->frozen)
        return 0;
    r = park_set(t->tid, &t->orig, false);
    if (r < 0)
        return r;
    t->frozen = false;
    return 1;
}

void
act_thaw_saved(pid_t tid, const struct act_orig *o)
{
    /*
     * By the record, not by t->frozen: a daemon killed between freezing
     * and noting it must not leave a thread frozen. Thawing our own group
     * (or the thread's own group we chose to freeze) is always safe.
     */
    if (park_mode_of(o) != CGROUP_PARK_NONE)
        (void)park_set(tid, o, false);
}

/*
 * Back to the group it was found in, but only from ours (a thread someone
 * else moved since stays where it is); then our group goes. A v1 freezer
 * group that vanished with its VM: the hierarchy's root, so ours can go.
 */
static void
park_return(pid_t pid, pid_t tid, const struct act_orig *o)
{
    enum cgroup_park_mode mode = park_mode_of(o);
    const char *ctrl = mode == CGROUP_PARK_V1 ? "freezer" : "";
    const char *file = mode == CGROUP_PARK_V1 ? "tasks" : "cgroup.threads";
    char now[ACT_CGROUP_PATH_MAX], ours[ACT_CGROUP_PATH_MAX], gdir[CGROUP_DIR_MAX];

    if (mode != CGROUP_PARK_V1 && mode != CGROUP_PARK_V2_CHILD)
        return;
    if (cgroup_park_path(mode, o->park_cgroup, tid, ours, sizeof(ours)) == 0 &&
        cgroup_of(pid, tid, ctrl, now, sizeof(now)) == 0 && strcmp(now, ours) == 0 &&
        cgroup_group_dir(o->park_mount, o->park_cgroup, gdir, sizeof(gdir)) == 0 &&
        write_tid(gdir, file, tid) < 0 && mode == CGROUP_PARK_V1)
        (void)write_tid(o->park_mount, file, tid);
    park_remove(tid, o);
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
act_restore_saved(pid_t pid, pid_t tid, uint64_t start_time, const struct act_orig *o)
{
    struct sched_param sp = {.sched_priority = o->prio};
    int r = 0;

    /* Thawed before anything else: a frozen vCPU is a hung guest. */
    act_thaw_saved(tid, o);
    if (!act_thread_alive(pid, tid, start_time)) {
        park_remove(tid, o); /* empty once its thread has exited */
        return -ESRCH;
    }
    /* SCHED_OTHER first: an RT task may not enter a group without rt runtime. */
    if (sched_setscheduler(tid, o->policy, &sp) < 0)
        r = -errno;
    if (sched_setaffinity(tid, sizeof(o->affinity), &o->affinity) < 0 && r == 0)
        r = -errno;
    if (o->cpu_cgroup[0] != '\0')
        cgroup_return(CG_V1_CPU, o->cpu_cgroup, tid);
    park_return(pid, tid, o);
    return r < 0 ? r : 1;
}

int
act_restore(struct act_thread *t)
{
    int r;

    if (t->level == ACT_LEVEL_NONE && t->cpu < 0 && !t->frozen && !t->placed &&
        park_mode_of(&t->orig) == CGROUP_PARK_NONE)
        return 0;
    r = act_restore_saved(t->pid, t->tid, t->start_time, &t->orig);
    t->orig.cpu_cgroup[0] = '\0';
    park_forget(&t->orig);
    t->level = ACT_LEVEL_NONE;
    t->cpu = -1;
    t->frozen = false;
    t->placed = false;
    return r;
}
