/* SPDX-License-Identifier: ISC */
/*
 * vcpu_resync.c - vCPU hot-plug and unplug of domains attached through
 * libvirt or QMP: a thread of the daemon finds their vCPU threads again
 * and hands the list to sched_dom_update. Neither libvirt nor QEMU 7.2
 * sends an event for a CPU hot-plug (docs/libvirt.md), so it polls:
 * libvirt's status file, re-read when libvirt has rewritten it (by rename:
 * a new inode) or when a vCPU thread of the domain exited (an unplug whose
 * end QEMU 7.2 may not report to libvirt), every RESYNC_TICK_MS; QEMU's
 * query-cpus-fast every RESYNC_QMP_MS. Never calls libvirt; holds no lock
 * while it reads.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "host/discover.h"
#include "libvirt/libvirt_vcpus.h"
#include "vcpu_resync.h"

#define RESYNC_TICK_MS 250 /* status files: a stat each, a parse when one changed */
#define RESYNC_QMP_MS  500 /* QMP: a connection and a query each */

/* A status file as last read: re-read only when libvirt replaced it. */
struct seen {
    char origin[SCHED_ORIGIN_SIZE];
    dev_t dev;
    ino_t ino;
    struct timespec mtime;
};

struct vcpu_resync {
    struct daemon_ctx *d;
    pthread_t thread;
    int stop_fd;
    struct seen *seen, *next; /* this pass builds `next` from `seen` */
    unsigned int nr_seen, cap;
    pid_t tids[VS_THREADS_MAX];
};

static const struct seen *
seen_find(const struct vcpu_resync *r, const char *origin)
{
    for (unsigned int i = 0; i < r->nr_seen; i++)
        if (strcmp(r->seen[i].origin, origin) == 0)
            return &r->seen[i];
    return NULL;
}

static int
status_stat(const struct vcpu_resync *r, const char *domain, struct seen *out)
{
    const char *dir = r->d->libvirt_dir != NULL ? r->d->libvirt_dir : LIBVIRT_RUN_DIR;
    char path[512];
    struct stat st;

    snprintf(path, sizeof(path), "%s/%s.xml", dir, domain);
    if (stat(path, &st) < 0)
        return -errno;
    snprintf(out->origin, sizeof(out->origin), "%s", domain);
    out->dev = st.st_dev;
    out->ino = st.st_ino;
    out->mtime = st.st_mtim;
    return 0;
}

static bool
seen_same(const struct seen *a, const struct seen *b)
{
    return a != NULL && a->dev == b->dev && a->ino == b->ino &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/* Hand domain t's vCPU threads tids[0..n) of `pid` to the core; log a change. */
static int
resync_apply(struct vcpu_resync *r, const struct sched_target *t, pid_t pid, unsigned int n)
{
    char err[256] = "";
    int c = sched_dom_update(r->d->sched, t->name, pid, r->tids, n, err, sizeof(err));

    if (c > 0)
        log_info("domain %s: vcpus re-read from %s %s: %u vcpu thread(s), %d added or removed",
                 t->name, t->source, t->origin, n, c);
    else if (c < 0 && c != -ENOENT && c != -ESRCH)
        log_warnx("domain %s: hot-plugged vcpus: %s", t->name, err);
    return c;
}

static void
resync_qmp(struct vcpu_resync *r, const struct sched_target *t)
{
    unsigned int n = 0;
    char err[256];
    pid_t pid = 0;

    if (discover_qmp(t->origin, &pid, r->tids, VS_THREADS_MAX, &n, err, sizeof(err)) < 0) {
        log_debugx("domain %s: qmp %s: %s", t->name, t->origin, err);
        return; /* QEMU gone or busy: the reaper, or the next pass */
    }
    (void)resync_apply(r, t, pid, n);
}

/* Grow the caches to hold `n` status files. */
static int
seen_reserve(struct vcpu_resync *r, unsigned int n)
{
    struct seen *a, *b;

    if (n <= r->cap)
        return 0;
    a = realloc(r->seen, n * sizeof(*a));
    if (a != NULL)
        r->seen = a;
    b = realloc(r->next, n * sizeof(*b));
    if (b != NULL)
        r->next = b;
    if (a == NULL || b == NULL)
        return -ENOMEM;
    r->cap = n;
    return 0;
}

/* One pass over the domains whose vCPUs can be found again. */
static void
resync_pass(struct vcpu_resync *r, bool qmp)
{
    unsigned int n = sched_dom_targets(r->d->sched, NULL, 0), kept = 0;
    struct sched_target *t = n > 0 ? calloc(n, sizeof(*t)) : NULL;

    if (t == NULL || seen_reserve(r, n) < 0) {
        free(t);
        r->nr_seen = 0;
        return;
    }
    n = sched_dom_targets(r->d->sched, t, n);
    for (unsigned int i = 0; i < n; i++) {
        if (strcmp(t[i].source, "libvirt") == 0) {
            struct seen now;

            if (status_stat(r, t[i].origin, &now) < 0)
                continue;
            /* Re-read when libvirt replaced the file, or a vCPU thread exited. */
            if (!seen_same(seen_find(r, t[i].origin), &now) || t[i].nr_gone > 0) {
                unsigned int nt = 0;
                char err[256];
                pid_t pid = 0;

                if (daemon_libvirt_threads(r->d, t[i].origin, &pid, r->tids, &nt, NULL, true, err,
                                           sizeof(err)) < 0) {
                    log_debugx("domain %s: status file: %s", t[i].name, err);
                    continue; /* not remembered: read again next tick */
                }
                /* A change is checked again next tick (a reused thread id waits a pass). */
                if (resync_apply(r, &t[i], pid, nt) != 0)
                    continue;
            }
            r->next[kept++] = now;
        } else if (qmp && strcmp(t[i].source, "qmp") == 0) {
            resync_qmp(r, &t[i]);
        }
    }
    /* Only the files of domains still attached stay remembered. */
    memcpy(r->seen, r->next, kept * sizeof(*r->seen));
    r->nr_seen = kept;
    free(t);
}

static void *
resync_main(void *arg)
{
    struct vcpu_resync *r = arg;
    struct pollfd pfd = {.fd = r->stop_fd, .events = POLLIN};
    unsigned int tick = 0;

    while (poll(&pfd, 1, RESYNC_TICK_MS) == 0 || (pfd.revents & POLLIN) == 0)
        resync_pass(r, tick++ % (RESYNC_QMP_MS / RESYNC_TICK_MS) == 0);
    return NULL;
}

int
vcpu_resync_start(struct vcpu_resync **out, struct daemon_ctx *d, char *err, size_t errlen)
{
    struct vcpu_resync *r = calloc(1, sizeof(*r));
    int e;

    *out = NULL;
    if (r == NULL)
        return -ENOMEM;
    r->d = d;
    r->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (r->stop_fd < 0) {
        e = errno;
        snprintf(err, errlen, "vcpu resync: eventfd: %s", strerror(e));
        free(r);
        return -e;
    }
    e = pthread_create(&r->thread, NULL, resync_main, r);
    if (e != 0) {
        snprintf(err, errlen, "vcpu resync: start the thread: %s", strerror(e));
        close(r->stop_fd);
        free(r);
        return -e;
    }
    *out = r;
    return 0;
}

void
vcpu_resync_stop(struct vcpu_resync *r)
{
    static const uint64_t one = 1;

    if (r == NULL)
        return;
    (void)!write(r->stop_fd, &one, sizeof(one));
    pthread_join(r->thread, NULL);
    close(r->stop_fd);
    free(r->seen);
    free(r->next);
    free(r);
}
