/* SPDX-License-Identifier: ISC */
/*
 * sched_foreign.c - what runs on the pools' CPUs that vcpusched does not
 * schedule: a VM not opted in, a service, a QEMU thread pinned there. Next
 * to the vCPUs at SCHED_FIFO such a thread gets only what real-time
 * throttling leaves, so the operator must hear of it: each scan (every two
 * seconds from the control loop, less often where a walk of /proc is dear)
 * counts, per pool, the user threads /proc shows runnable on its CPUs that
 * are not the daemon's or a managed vCPU, and says each new one once.
 * Kernel threads are left out: the per-CPU ones cannot move, and the
 * kernel's own throttling serves them. The same pass finds the vhost
 * workers that are kernel threads (before Linux 6.4) and has them kept off
 * the pools' CPUs with their QEMU's other threads (sched_place.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/discover.h"
#include "sched_priv.h"

#define FOREIGN_MAX     1024  /* threads one scan reports at most */
#define FOREIGN_VHOST   4096  /* vhost kernel threads one scan keeps off the pools at most */
#define FOREIGN_GAP_MS  2000  /* between scans: a busy thread is reported within this */
#define FOREIGN_GAP_MAX 60000 /* however dear a walk: never blind for longer */
#define FOREIGN_COST    100   /* the pause is at least this many times the walk */

unsigned int
sched_foreign_gap_ms(uint64_t scan_ns)
{
    uint64_t ms = scan_ns / 1000000 * FOREIGN_COST;

    return ms < FOREIGN_GAP_MS    ? FOREIGN_GAP_MS
           : ms > FOREIGN_GAP_MAX ? FOREIGN_GAP_MAX
                                  : (unsigned int)ms;
}

static int
tid_cmp(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

    return (x > y) - (x < y);
}

/* The managed vCPU threads, sorted (s->lock held). */
static pid_t *
managed_tids(struct sched *s, unsigned int *n)
{
    struct sched_dom *d;
    unsigned int k = 0, total = 0;
    pid_t *tids;

    TAILQ_FOREACH(d, &s->doms, link)
    total += d->nr_threads;
    tids = malloc((total + 1) * sizeof(*tids));
    if (tids == NULL)
        return NULL;
    TAILQ_FOREACH(d, &s->doms, link)
    for (unsigned int i = 0; i < d->nr_threads; i++)
        tids[k++] = d->threads[i]->act->tid;
    qsort(tids, k, sizeof(*tids), tid_cmp);
    *n = k;
    return tids;
}

/* Said before? Remembered in a ring of the last SCHED_FOREIGN_SAID threads. */
static bool
said_before(struct sched *s, pid_t tid)
{
    for (unsigned int i = 0; i < SCHED_FOREIGN_SAID; i++)
        if (s->foreign_said[i] == tid)
            return true;
    s->foreign_said[s->foreign_next++ % SCHED_FOREIGN_SAID] = tid;
    return false;
}

/* Which pool has host CPU `cpu` (by index in s->pools at the snapshot), or -1. */
static int
pool_at(const int *pool_of, int cpu)
{
    return cpu >= 0 && cpu < CPU_SETSIZE ? pool_of[cpu] : -1;
}

/*
 * The walk of /proc runs without the lock (tens of ms on a big host): the
 * pools and managed threads are taken first, the counts written back to
 * the pools of the same names after.
 */
unsigned int
sched_foreign_scan(struct sched *s)
{
    struct discover_runnable *found = malloc(FOREIGN_MAX * sizeof(*found));
    struct discover_vhost *vhost = malloc(FOREIGN_VHOST * sizeof(*vhost));
    int *pool_of = malloc(CPU_SETSIZE * sizeof(*pool_of));
    char names[SCHED_MAX_POOLS][VS_NAME_SIZE];
    unsigned int counts[SCHED_MAX_POOLS] = {0}, npools, nmanaged = 0;
    pid_t self = getpid(), *managed = NULL;
    uint64_t t0 = sched_now(), took;
    unsigned int gap = FOREIGN_GAP_MS;
    cpu_set_t cpus;
    int n = 0, nvhost;

    if (found == NULL || vhost == NULL || pool_of == NULL)
        goto out;
    pthread_mutex_lock(&s->lock);
    CPU_ZERO(&cpus);
    for (int c = 0; c < CPU_SETSIZE; c++)
        pool_of[c] = -1;
    npools = s->nr_pools;
    for (unsigned int i = 0; i < npools; i++) {
        snprintf(names[i], sizeof(names[i]), "%s", s->pools[i]->pool.name);
        for (unsigned int c = 0; c < s->pools[i]->nr_cpus; c++) {
            CPU_SET(s->pools[i]->cpus[c].host, &cpus);
            pool_of[s->pools[i]->cpus[c].host] = (int)i;
        }
    }
    managed = managed_tids(s, &nmanaged);
    pthread_mutex_unlock(&s->lock);
    if (managed == NULL || CPU_COUNT(&cpus) == 0)
        goto out;
    n = discover_runnable_on(&cpus, found, FOREIGN_MAX);
    nvhost = discover_vhost_kthreads(vhost, FOREIGN_VHOST);
    took = sched_now() - t0;

    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < n && i < FOREIGN_MAX; i++) {
        const struct discover_runnable *r = &found[i];
        int k = pool_at(pool_of, r->cpu);
        char msg[512];

        if (k < 0 || r->pid == self ||
            bsearch(&r->tid, managed, nmanaged, sizeof(*managed), tid_cmp) != NULL)
            continue;
        counts[k]++;
        if (s->cfg.warn == NULL || said_before(s, r->tid))
            continue;
        snprintf(msg, sizeof(msg),
                 "pool %s: thread %d (%s) of process %d, which vcpusched does not schedule, is "
                 "runnable on CPU %d: beside the vCPUs at SCHED_FIFO it gets only what real-time "
                 "throttling leaves; keep it on housekeeping CPUs, or opt its VM in",
                 names[k], (int)r->tid, r->comm, (int)r->pid, r->cpu);
        s->cfg.warn(msg);
    }
    if (nvhost > 0) /* vhost workers that are kernel threads (before Linux 6.4) */
        sched_place_vhost(s, vhost, nvhost < FOREIGN_VHOST ? (unsigned int)nvhost : FOREIGN_VHOST);
    for (unsigned int k = 0; k < npools; k++) {
        struct sched_pool *sp = sched_pool_find(s, names[k]);

        if (sp == NULL)
            continue; /* destroyed meanwhile */
        sched_pool_lock(sp);
        sp->st.foreign_now = counts[k];
        sp->st.foreign_seen += counts[k];
        sched_pool_unlock(sp);
    }
    s->foreign_scan.scans++;
    s->foreign_scan.last_ns = took;
    if (took > s->foreign_scan.max_ns)
        s->foreign_scan.max_ns = took;
    s->foreign_scan.gap_ms = gap = sched_foreign_gap_ms(took);
    pthread_mutex_unlock(&s->lock);
out:
    free(managed);
    free(pool_of);
    free(vhost);
    free(found);
    return gap;
}
