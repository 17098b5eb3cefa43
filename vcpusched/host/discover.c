/* SPDX-License-Identifier: ISC */
/*
 * discover.c - thread discovery from /proc and QMP; see discover.h.
 */
#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "discover.h"
#include "qmp.h"

#define PF_KTHREAD         0x00200000 /* include/linux/sched.h: a kernel thread */
#define DISCOVER_MAX_DEPTH 4096       /* ancestors walked before giving up */
#define KTHREADD_PID       2          /* the parent of every kernel thread */
#define KTHREADD_PID_STR   "2"

static int
proc_tgid(pid_t tid, pid_t *tgid)
{
    char path[64], line[256];
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
    f = fopen(path, "re");
    if (f == NULL)
        return -ESRCH;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "Tgid:", 5) == 0) {
            *tgid = (pid_t)atoi(line + 5);
            fclose(f);
            return 0;
        }
    }
    fclose(f);
    return -EPROTO;
}

static bool
is_task_of(pid_t pid, pid_t tid)
{
    char path[64];

    snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, (int)tid);
    return access(path, F_OK) == 0;
}

int
discover_process(pid_t pid, pid_t *tids, unsigned int max, unsigned int *n, char *err,
                 size_t errlen)
{
    char path[64];
    struct dirent *e;
    DIR *d;

    *n = 0;
    if (pid <= 0) {
        snprintf(err, errlen, "bad pid %d", (int)pid);
        return -EINVAL;
    }
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    d = opendir(path);
    if (d == NULL) {
        snprintf(err, errlen, "no process %d", (int)pid);
        return -ESRCH;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (*n == max) {
            closedir(d);
            snprintf(err, errlen, "process %d has more than %u threads", (int)pid, max);
            return -E2BIG;
        }
        tids[(*n)++] = (pid_t)atoi(e->d_name);
    }
    closedir(d);
    return *n > 0 ? 0 : -ESRCH;
}

static int
check_distinct(const pid_t *tids, unsigned int n, char *err, size_t errlen)
{
    for (unsigned int i = 0; i < n; i++) {
        for (unsigned int j = 0; j < i; j++) {
            if (tids[i] == tids[j]) {
                snprintf(err, errlen, "thread %d listed twice", (int)tids[i]);
                return -EINVAL;
            }
        }
    }
    return 0;
}

int
discover_tids(pid_t *pid, const pid_t *in, unsigned int nin, pid_t *tids, unsigned int max,
              unsigned int *n, char *err, size_t errlen)
{
    int r;

    if (nin == 0 || nin > max) {
        snprintf(err, errlen, "1..%u thread ids, not %u", max, nin);
        return -EINVAL;
    }
    r = check_distinct(in, nin, err, errlen);
    if (r < 0)
        return r;
    for (unsigned int i = 0; i < nin; i++) {
        pid_t tgid;

        if (in[i] <= 0 || proc_tgid(in[i], &tgid) < 0 || !is_task_of(tgid, in[i])) {
            snprintf(err, errlen, "no thread %d", (int)in[i]);
            return -ESRCH;
        }
        if (*pid == 0)
            *pid = tgid;
        if (tgid != *pid) {
            snprintf(err, errlen, "thread %d belongs to process %d, not %d", (int)in[i], (int)tgid,
                     (int)*pid);
            return -EINVAL;
        }
        tids[i] = in[i];
    }
    *n = nin;
    return 0;
}

int
discover_check_vcpus(pid_t pid, const pid_t *tids, unsigned int n, char *err, size_t errlen)
{
    int r = check_distinct(tids, n, err, errlen);

    if (r < 0)
        return r;
    for (unsigned int i = 0; i < n; i++) {
        if (tids[i] == pid) {
            snprintf(err, errlen,
                     "vCPU thread id %d is the QEMU main thread (single-threaded TCG?)",
                     (int)tids[i]);
            return -EINVAL;
        }
        if (!is_task_of(pid, tids[i])) {
            snprintf(err, errlen, "vCPU thread %d is not a thread of QEMU process %d", (int)tids[i],
                     (int)pid);
            return -ESRCH;
        }
    }
    return 0;
}

int
discover_qmp(const char *path, pid_t *pid, pid_t *tids, unsigned int max, unsigned int *n,
             char *err, size_t errlen)
{
    struct qmp_opts opts = {.timeout_ms = DISCOVER_QMP_TIMEOUT_MS};
    struct qmp_vcpus vs = {0};
    struct qmp_conn *q;
    struct ucred cred;
    socklen_t len = sizeof(cred);
    int r;

    *n = 0;
    r = qmp_connect(&q, path, &opts, err, errlen);
    if (r < 0)
        return r;
    /* The peer of the monitor socket is the QEMU process itself. */
    if (getsockopt(qmp_fd(q), SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
        r = -errno;
        snprintf(err, errlen, "qmp %s: peer credentials: %s", path, strerror(errno));
        goto out;
    }
    *pid = cred.pid;
    r = qmp_query_vcpus(q, &vs, err, errlen);
    if (r < 0)
        goto out;
    if (vs.n > max) {
        snprintf(err, errlen, "qmp %s: %zu vCPUs (at most %u supported)", path, vs.n, max);
        r = -E2BIG;
        goto out;
    }
    for (size_t i = 0; i < vs.n; i++)
        tids[i] = vs.v[i].thread_id;
    *n = (unsigned int)vs.n;
    r = discover_check_vcpus(*pid, tids, *n, err, errlen);
out:
    qmp_vcpus_free(&vs);
    qmp_close(q);
    return r;
}

/* comm, parent and flags of `pid` from /proc/<pid>/stat. */
static int
proc_stat(pid_t pid, char *comm, size_t commlen, pid_t *ppid, unsigned long *flags)
{
    char path[64], buf[1024], *open_paren, *close_paren;
    unsigned long f = 0;
    int pp = 0;
    FILE *fp;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    fp = fopen(path, "re");
    if (fp == NULL)
        return -ESRCH;
    n = fread(buf, 1, sizeof(buf) - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    /* comm may hold spaces and parentheses: it ends at the last ')'. */
    open_paren = strchr(buf, '(');
    close_paren = strrchr(buf, ')');
    if (open_paren == NULL || close_paren == NULL || close_paren < open_paren ||
        sscanf(close_paren + 1, " %*c %d %*d %*d %*d %*d %lu", &pp, &f) != 2)
        return -EPROTO;
    snprintf(comm, commlen, "%.*s", (int)(close_paren - open_paren - 1), open_paren + 1);
    *ppid = (pid_t)pp;
    *flags = f;
    return 0;
}

/* QEMU by its executable (or its comm when /proc/<pid>/exe is not readable). */
static bool
is_qemu(pid_t pid, const char *comm)
{
    char path[64], exe[256];
    const char *base;
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
    n = readlink(path, exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        base = strrchr(exe, '/') != NULL ? strrchr(exe, '/') + 1 : exe;
    } else {
        base = comm;
    }
    return strncmp(base, "qemu-system-", 12) == 0 || strcmp(base, "qemu-kvm") == 0;
}

/* True if `ancestor` is a strict ancestor of `pid`. */
static bool
descends_from(pid_t pid, pid_t ancestor)
{
    char comm[64];
    unsigned long flags;
    pid_t ppid;

    for (unsigned int i = 0; i < DISCOVER_MAX_DEPTH && pid > 1; i++) {
        if (proc_stat(pid, comm, sizeof(comm), &ppid, &flags) < 0)
            return false;
        if (ppid == ancestor)
            return true;
        pid = ppid;
    }
    return false;
}

int
discover_check_target(pid_t pid, bool named, const struct discover_rules *rules, char *err,
                      size_t errlen)
{
    char comm[64];
    unsigned long flags;
    pid_t ppid, shell = 0;
    int r = proc_stat(pid, comm, sizeof(comm), &ppid, &flags);

    if (r < 0) {
        snprintf(err, errlen, "no process %d", (int)pid);
        return -ESRCH;
    }
    if (pid == 1) {
        snprintf(err, errlen, "process 1 (%s) is init: never managed", comm);
        return -EPERM;
    }
    if ((flags & PF_KTHREAD) || pid == KTHREADD_PID || ppid == KTHREADD_PID) {
        snprintf(err, errlen, "process %d (%s) is a kernel thread: never managed", (int)pid, comm);
        return -EPERM;
    }
    if (pid == rules->daemon || (rules->guardian > 0 && pid == rules->guardian)) {
        snprintf(err, errlen, "process %d (%s) is vcpuschedd%s: never managed", (int)pid, comm,
                 pid == rules->daemon ? "" : "'s guardian");
        return -EPERM;
    }
    if (!named || rules->any_process || is_qemu(pid, comm))
        return 0;
    if (rules->caller > 0) {
        char ccomm[64];
        unsigned long cflags;

        if (proc_stat(rules->caller, ccomm, sizeof(ccomm), &shell, &cflags) < 0)
            shell = 0;
    }
    if (shell > 1 && pid != rules->caller && descends_from(pid, shell))
        return 0;
    snprintf(err, errlen,
             "process %d (%s) is neither QEMU nor started from the caller's shell: "
             "attach --any-process to manage it anyway",
             (int)pid, comm);
    return -EPERM;
}

/* State, flags and CPU of a thread, from /proc/<pid>/task/<tid>/stat. */
static int
task_stat(pid_t pid, pid_t tid, char *state, unsigned long *flags, int *cpu, char *comm,
          size_t commlen)
{
    char path[64], buf[1024], *open_paren, *close_paren, *tok, *save = NULL;
    int fd, field = 3;
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -EIO;
    buf[n] = '\0';
    open_paren = strchr(buf, '(');
    close_paren = strrchr(buf, ')');
    if (open_paren == NULL || close_paren == NULL || close_paren < open_paren)
        return -EPROTO;
    snprintf(comm, commlen, "%.*s", (int)(close_paren - open_paren - 1), open_paren + 1);
    for (tok = strtok_r(close_paren + 1, " ", &save); tok != NULL;
         tok = strtok_r(NULL, " ", &save), field++) {
        if (field == 3)
            *state = tok[0];
        else if (field == 9)
            *flags = strtoul(tok, NULL, 10);
        else if (field == 39) {
            *cpu = atoi(tok);
            return 0;
        }
    }
    return -EPROTO;
}

int
discover_runnable_on(const cpu_set_t *cpus, struct discover_runnable *out, unsigned int max)
{
    DIR *proc = opendir("/proc");
    struct dirent *p;
    int found = 0;

    if (proc == NULL)
        return -errno;
    while ((p = readdir(proc)) != NULL) {
        pid_t pid = (pid_t)atoi(p->d_name);
        char path[64];
        struct dirent *t;
        DIR *tasks;

        if (pid <= 0)
            continue;
        snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        if ((tasks = opendir(path)) == NULL)
            continue; /* gone */
        while ((t = readdir(tasks)) != NULL) {
            pid_t tid = (pid_t)atoi(t->d_name);
            struct discover_runnable r = {.pid = pid, .tid = tid};
            unsigned long flags = 0;
            char state = 0;

            if (tid <= 0 || task_stat(pid, tid, &state, &flags, &r.cpu, r.comm, sizeof(r.comm)) < 0)
                continue;
            if (flags & PF_KTHREAD) /* kthreadd's children: per-CPU ones cannot move */
                break;
            if (state != 'R' || r.cpu < 0 || r.cpu >= CPU_SETSIZE || !CPU_ISSET(r.cpu, cpus))
                continue;
            if ((unsigned int)found < max)
                out[found] = r;
            found++;
        }
        closedir(tasks);
    }
    closedir(proc);
    return found;
}

/* k, if it is a vhost kernel thread: its owner's pid, else 0. */
static pid_t
vhost_owner(pid_t k)
{
    char comm[32], *end;
    unsigned long flags;
    pid_t ppid;
    long owner;

    if (proc_stat(k, comm, sizeof(comm), &ppid, &flags) < 0 || ppid != KTHREADD_PID ||
        !(flags & PF_KTHREAD) || strncmp(comm, "vhost-", 6) != 0)
        return 0;
    errno = 0;
    owner = strtol(comm + 6, &end, 10);
    return errno == 0 && end != comm + 6 && *end == '\0' && owner > 0 && owner <= INT32_MAX
               ? (pid_t)owner
               : 0;
}

static void
vhost_add(pid_t k, struct discover_vhost *out, unsigned int max, int *found)
{
    pid_t owner = vhost_owner(k);

    if (owner <= 0)
        return;
    if ((unsigned int)*found < max)
        out[*found] = (struct discover_vhost){.owner = owner, .tid = k};
    (*found)++;
}

int
discover_vhost_kthreads(struct discover_vhost *out, unsigned int max)
{
    FILE *f = fopen("/proc/" KTHREADD_PID_STR "/task/" KTHREADD_PID_STR "/children", "re");
    struct dirent *p;
    int found = 0, k;
    DIR *proc;

    if (f != NULL) { /* CONFIG_PROC_CHILDREN: kernel threads only */
        while (fscanf(f, "%d", &k) == 1)
            vhost_add((pid_t)k, out, max, &found);
        fclose(f);
        return found;
    }
    if ((proc = opendir("/proc")) == NULL)
        return -errno;
    while ((p = readdir(proc)) != NULL)
        if ((k = atoi(p->d_name)) > KTHREADD_PID)
            vhost_add((pid_t)k, out, max, &found);
    closedir(proc);
    return found;
}
