/* SPDX-License-Identifier: ISC */
/*
 * sched_place.c - the threads of a managed domain's process that vcpusched
 * does not schedule (QEMU's main loop, I/O and worker threads; vhost
 * workers, which are threads of the process since Linux 6.4). On a managed
 * CPU such a thread gets only what the FIFO vCPUs and real-time throttling
 * leave it, so while the domain is managed each is kept off the reserved
 * CPUs (every pool's, the dedicated dispatcher's), within what it was
 * allowed, and given exactly its affinity back at detach, exit, or by the
 * guardian after a crash: it has a state file slot like a vCPU thread,
 * written before its affinity changes (act_keep_off).
 *
 * Found by a scan of /proc/<pid>/task at attach and every second: a thread
 * created in between inherits its creator's narrowed affinity, unless a
 * vCPU thread created it. Before Linux 6.4 the vhost workers are kernel
 * threads ("vhost-<pid>", discover_vhost_kthreads), not threads of the
 * process: looked for at attach and at every foreign-thread scan
 * (sched_foreign.c), and kept off the same way. A thread the operator pinned to managed CPUs
 * only (affinity or cgroup cpuset, e.g. <emulatorpin> on pool CPUs) is
 * left as it is and said once. Control path only (s->lock held).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/discover.h"
#include "sched_priv.h"

#define PLACE_TASKS_MAX 4096 /* threads of one process looked at */
#define PLACE_VHOST_MAX 4096 /* vhost kernel threads of a host looked at */

/* The CPUs no other thread of a managed process may use. */
static void
reserved_cpus(const struct sched *s, cpu_set_t *out)
{
    CPU_ZERO(out);
    for (unsigned int i = 0; i < s->nr_pools; i++)
        for (unsigned int c = 0; c < s->pools[i]->nr_cpus; c++)
            CPU_SET(s->pools[i]->cpus[c].host, out);
    if (s->cfg.pattern == SCHED_DEDICATED && s->cfg.dedicated_cpu >= 0)
        CPU_SET(s->cfg.dedicated_cpu, out);
}

static int
placed_find(const struct sched *s, const struct sched_place *p, pid_t tid)
{
    for (unsigned int i = 0; i < p->n; i++)
        if (statefile_act(s->sf, p->slots[i])->tid == tid)
            return (int)i;
    return -1;
}

static bool
tid_in(const pid_t *tids, unsigned int n, pid_t tid)
{
    for (unsigned int i = 0; i < n; i++)
        if (tids[i] == tid)
            return true;
    return false;
}

/* Add to a list of thread ids that only grows (up to `max`: then it is not remembered). */
static void
tid_add(pid_t *tids, unsigned int *n, unsigned int max, pid_t tid)
{
    if (*n < max)
        tids[(*n)++] = tid;
}

static int
placed_add(struct sched_place *p, int slot)
{
    if (p->n == p->cap) {
        unsigned int cap = p->cap ? 2 * p->cap : 8;
        int *slots = realloc(p->slots, cap * sizeof(*slots));

        if (slots == NULL)
            return -ENOMEM;
        p->slots = slots;
        p->cap = cap;
    }
    p->slots[p->n++] = slot;
    return 0;
}

/* Drop entry i: its thread is gone, or it was given back. */
static void
placed_drop(struct sched *s, struct sched_place *p, unsigned int i)
{
    statefile_release(s->sf, p->slots[i]);
    p->slots[i] = p->slots[--p->n];
}

static void
say(const struct sched *s, const char *msg)
{
    if (s->cfg.warn != NULL)
        s->cfg.warn(msg);
}

/* Keep thread `tid` of process `pid` off `off`: a slot, then the change (write-ahead). */
static void
place_one(struct sched *s, struct sched_dom *d, pid_t pid, pid_t tid, const cpu_set_t *off)
{
    struct sched_place *p = d->place;
    char comm[32] = "?", err[160] = "", msg[512];
    int slot = statefile_alloc(s->sf), r;

    if (slot < 0) {
        if (!p->full_said) {
            snprintf(msg, sizeof(msg),
                     "domain %s: no state file slot left (%d): its other threads may run on "
                     "managed CPUs",
                     d->name, STATEFILE_SLOTS);
            say(s, msg);
        }
        p->full_said = true;
        return;
    }
    r = act_keep_off(statefile_act(s->sf, slot), pid, tid, off, err, sizeof(err));
    if (r > 0 && placed_add(p, slot) == 0) {
        p->kept_off++;
        return;
    }
    if (r > 0) /* no memory to remember it: give it back now */
        (void)act_restore(statefile_act(s->sf, slot));
    statefile_release(s->sf, slot);
    if (r == -EINVAL && !tid_in(p->pinned, p->npinned, tid)) {
        (void)act_read_comm(pid, tid, comm, sizeof(comm));
        snprintf(msg, sizeof(msg),
                 "domain %s: thread %d (%s) stays on managed CPUs, where the vCPUs at "
                 "SCHED_FIFO may starve it: %s; pin it to housekeeping CPUs (libvirt's "
                 "<emulatorpin>, <iothreadpin>)",
                 d->name, (int)tid, comm, err);
        say(s, msg);
        tid_add(p->pinned, &p->npinned, SCHED_PLACE_TIDS_MAX, tid);
    }
}

/* One domain against the reserved CPUs `off` (reserved_cpus). */
static void
place_scan(struct sched *s, struct sched_dom *d, const cpu_set_t *off)
{
    pid_t *tids;
    unsigned int n = 0;
    bool moved;
    char err[128];

    if (d->pid <= 0 || strcmp(d->source, "tids") == 0)
        return; /* no process of its own to look into */
    if (d->place == NULL && (d->place = calloc(1, sizeof(*d->place))) == NULL)
        return;
    moved = !CPU_EQUAL(off, &d->place->off);
    d->place->off = *off;
    if (moved) /* look at every thread again */
        d->place->nseen = d->place->npinned = 0;
    for (unsigned int i = 0; i < d->place->n;) {
        struct act_thread *t = statefile_act(s->sf, d->place->slots[i]);

        if (!act_thread_alive(t->pid, t->tid, t->start_time)) {
            placed_drop(s, d->place, i);
            continue;
        }
        if (moved) /* the pools changed: off the new reserved CPUs too */
            (void)act_keep_off_again(t, off);
        i++;
    }
    tids = malloc(PLACE_TASKS_MAX * sizeof(*tids));
    if (tids == NULL || discover_process(d->pid, tids, PLACE_TASKS_MAX, &n, err, sizeof(err)) < 0)
        n = 0;
    for (unsigned int i = 0; i < n; i++) {
        struct sched_place *p = d->place;
        char comm[32];

        /* Each thread is looked at once (pools unchanged): a second costs a readdir. */
        if (sched_dom_has_tid(d, tids[i]) || tid_in(p->seen, p->nseen, tids[i]) ||
            tid_in(p->pinned, p->npinned, tids[i]) || placed_find(s, p, tids[i]) >= 0)
            continue;
        /* QEMU names vCPU threads "CPU n/KVM" ("CPU n/TCG"): a hot-plugged one is ours soon. */
        if (act_read_comm(d->pid, tids[i], comm, sizeof(comm)) < 0 || strncmp(comm, "CPU ", 4) == 0)
            continue;
        if (act_affinity_meets(tids[i], off) > 0)
            place_one(s, d, d->pid, tids[i], off);
        else
            tid_add(p->seen, &p->nseen, SCHED_PLACE_TIDS_MAX, tids[i]);
    }
    free(tids);
}

/* Domain d's vhost kernel threads among v[0..n), each looked at once as in place_scan. */
static void
place_vhost(struct sched *s, struct sched_dom *d, const struct discover_vhost *v, unsigned int n,
            const cpu_set_t *off)
{
    struct sched_place *p = d->place;

    if (p == NULL || d->pid <= 0)
        return;
    for (unsigned int i = 0; i < n; i++) {
        if (v[i].owner != d->pid || tid_in(p->seen, p->nseen, v[i].tid) ||
            tid_in(p->pinned, p->npinned, v[i].tid) || placed_find(s, p, v[i].tid) >= 0)
            continue;
        if (act_affinity_meets(v[i].tid, off) > 0)
            place_one(s, d, v[i].tid, v[i].tid, off); /* a kernel thread: its own process */
        else
            tid_add(p->seen, &p->nseen, SCHED_PLACE_TIDS_MAX, v[i].tid);
    }
}

void
sched_place_scan(struct sched *s, struct sched_dom *d)
{
    struct discover_vhost *v = malloc(PLACE_VHOST_MAX * sizeof(*v));
    cpu_set_t off;
    int n;

    reserved_cpus(s, &off);
    place_scan(s, d, &off);
    n = v != NULL ? discover_vhost_kthreads(v, PLACE_VHOST_MAX) : 0;
    if (n > 0)
        place_vhost(s, d, v, n < PLACE_VHOST_MAX ? (unsigned int)n : PLACE_VHOST_MAX, &off);
    free(v);
}

void
sched_place_vhost(struct sched *s, const struct discover_vhost *v, unsigned int n)
{
    struct sched_dom *d;
    cpu_set_t off;

    if (n == 0)
        return;
    reserved_cpus(s, &off);
    TAILQ_FOREACH(d, &s->doms, link)
    place_vhost(s, d, v, n, &off);
}

void
sched_place_release(struct sched *s, struct sched_dom *d)
{
    if (d->place == NULL)
        return;
    while (d->place->n > 0) {
        (void)act_restore(statefile_act(s->sf, d->place->slots[0]));
        placed_drop(s, d->place, 0);
    }
    free(d->place->slots);
    free(d->place);
    d->place = NULL;
}

void
sched_place_all(struct sched *s)
{
    struct sched_dom *d;
    cpu_set_t off;

    pthread_mutex_lock(&s->lock);
    reserved_cpus(s, &off); /* once for every domain */
    TAILQ_FOREACH(d, &s->doms, link)
    place_scan(s, d, &off);
    pthread_mutex_unlock(&s->lock);
}
