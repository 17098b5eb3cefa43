/* SPDX-License-Identifier: ISC */
/*
 * guardian.c - the process that restores managed threads when the daemon
 * dies; see guardian.h.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "actuator.h"
#include "guardian.h"

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

static _Noreturn void
guardian_main(int fd, struct statefile *sf, const cpu_set_t *cpus, int rt_prio, const char *hold)
{
    struct sched_param sp = {.sched_priority = rt_prio};
    sigset_t all;
    char buf[64];
    ssize_t n;
    int restored;

    setsid();
    prctl(PR_SET_NAME, "vcpusched-guard");
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL); /* only SIGKILL/SIGSTOP can stop us */
    if (cpus != NULL)
        (void)sched_setaffinity(0, sizeof(*cpus), cpus);
    close_other_fds(fd, sf->fd);
    do {
        n = read(fd, buf, sizeof(buf));
    } while (n > 0 || (n < 0 && errno == EINTR));
    /*
     * EOF: the daemon is gone, cleanly or not. Restore at a real-time
     * priority (a loaded housekeeping CPU must not delay it; refused in a
     * cpu cgroup without RT runtime: then as we are), without waiting for
     * the lock: held, it means a newer daemon owns the threads now.
     */
    if (rt_prio > 0)
        (void)sched_setscheduler(0, SCHED_FIFO, &sp);
    restored = statefile_guardian_restore(sf, sf->gen);
    act_park_unhold(hold); /* after the thaws: with it held, they are cheap */
    if (restored > 0) {
        openlog("vcpusched-guard", LOG_PID, LOG_DAEMON);
        syslog(LOG_WARNING, "daemon died: restored %d thread(s)", restored);
        fprintf(stderr, "vcpusched-guard: daemon died: restored %d thread(s)\n", restored);
    }
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
