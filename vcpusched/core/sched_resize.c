/* SPDX-License-Identifier: ISC */
/*
 * sched_resize.c - a running pool's CPUs changed with its domains attached
 * (sched_pool_resize: Xen's cpupool-cpu-add and -remove, given as the new
 * CPU list). Control path (s->lock); see sched_priv.h for the other locks.
 *
 * Everything that can refuse comes first, while the pool runs: the CPUs
 * (free or the pool's), each vCPU thread's cgroup cpuset against them (a
 * vCPU left without a CPU refuses the change), the descriptors of the
 * CPUs added. Then the pool's dispatchers stop, the threads they raised
 * are lowered, the pool layer builds its policy instance again on the new
 * CPUs (pool_resize, as a live policy switch does), the CPU records are
 * rearranged (a CPU that stays keeps its record and descriptors), every
 * thread is pinned to its new home and the dispatchers start on the new
 * CPUs. If they cannot start, the pool goes back to its old CPUs the same
 * way. The other threads of the domains' processes follow the reserved
 * CPUs at once (sched_place_all).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_priv.h"

/* What a change needs, all prepared before anything changes. */
struct resize {
    struct policy_cpu cpus[CPUSET_MAX];
    unsigned int n;
    struct cpuset *aff; /* each vCPU's CPUs among the new ones, vCPUs in the pool's order */
    struct sched_cpu rec[CPUSET_MAX]; /* the new records: a kept CPU's, or new descriptors */
};

static int
index_of(const struct sched_pool *sp, int host)
{
    for (unsigned int i = 0; i < sp->nr_cpus; i++)
        if (sp->cpus[i].host == host)
            return (int)i;
    return -1;
}

static bool
rec_has(const struct sched_cpu *rec, unsigned int n, int host)
{
    for (unsigned int i = 0; i < n; i++)
        if (rec[i].host == host)
            return true;
    return false;
}

static bool
same_cpus(const struct sched_pool *sp, const struct policy_cpu *cpus, unsigned int n)
{
    if (n != sp->nr_cpus)
        return false;
    for (unsigned int i = 0; i < n; i++)
        if (sp->cpus[i].host != cpus[i].cpu)
            return false;
    return true;
}

/* Each vCPU thread's CPUs among the new ones (sched_probe_cpus), in the pool layer's order. */
static int
resize_probe(struct sched_pool *sp, struct resize *rz, char *err, size_t errlen)
{
    char what[VS_NAME_SIZE + 32];
    int hosts[CPUSET_MAX];
    struct pool_dom *pd;
    unsigned int k = 0;
    int r = 0;

    rz->aff = calloc(pool_nr_vcpus(&sp->pool) + 1, sizeof(*rz->aff));
    if (rz->aff == NULL) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    for (unsigned int i = 0; i < rz->n; i++)
        hosts[i] = rz->cpus[i].cpu;
    snprintf(what, sizeof(what), "the new cpus of pool %s", sp->pool.name);
    TAILQ_FOREACH(pd, &sp->pool.doms, link)
    {
        struct sched_thread *th = pd->vcpus[0]->owner; /* a domain has one vCPU at least */

        r = sched_probe_cpus(th->dom, hosts, rz->n, what, &rz->aff[k], err, errlen);
        if (r < 0)
            break;
        k += pd->nr_vcpus;
    }
    return r;
}

/* The new CPU records: a CPU that stays keeps its descriptors, one added gets its own. */
static int
resize_records(struct sched_pool *sp, struct resize *rz, char *err, size_t errlen)
{
    for (unsigned int i = 0; i < rz->n; i++)
        rz->rec[i] = (struct sched_cpu){
            .sp = sp, .index = i, .host = rz->cpus[i].cpu, .kick_fd = -1, .timer_fd = -1};
    for (unsigned int i = 0; i < rz->n; i++) {
        int old = index_of(sp, rz->cpus[i].cpu);

        if (old >= 0) {
            rz->rec[i].kick_fd = sp->cpus[old].kick_fd;
            rz->rec[i].timer_fd = sp->cpus[old].timer_fd;
        } else {
            int r = sched_cpu_open(&rz->rec[i], err, errlen);

            if (r < 0)
                return r;
        }
    }
    return 0;
}

/* Close what the records of rz opened for CPUs sp does not have. */
static void
resize_records_drop(struct sched_pool *sp, struct resize *rz)
{
    for (unsigned int i = 0; i < rz->n; i++)
        if (index_of(sp, rz->rec[i].host) < 0)
            sched_cpu_close(&rz->rec[i]);
}

/*
 * Under ev_lock and the pool lock, dispatchers stopped: the pool layer on
 * the new CPUs, then the records, then each thread's CPU of the moment
 * (event state) in the new numbering, then the pins. On error nothing
 * changed.
 */
static int
resize_commit(struct sched_pool *sp, struct resize *rz, char *err, size_t errlen)
{
    char perr[POLICY_ERRLEN];
    struct sched_dom *d;
    int on[CPUSET_MAX]; /* old index -> host */
    unsigned int old_n = sp->nr_cpus;
    uint64_t now = sched_now();
    int r;

    dispatch_lower_all(sp);
    r = pool_resize(&sp->pool, rz->cpus, rz->n, rz->aff, now, perr);
    if (r < 0) {
        snprintf(err, errlen, "%s", perr);
        cpuset_fill(&sp->pool.need_pick, sp->nr_cpus); /* what was lowered is raised again */
        return r;
    }
    for (unsigned int i = 0; i < old_n; i++) {
        on[i] = sp->cpus[i].host;
        if (!rec_has(rz->rec, rz->n, on[i]))
            sched_cpu_close(&sp->cpus[i]); /* no drain kicks it: ev_lock is ours */
    }
    memcpy(sp->cpus, rz->rec, rz->n * sizeof(rz->rec[0]));
    sp->nr_cpus = rz->n;
    cpuset_zero(&sp->kicked);
    TAILQ_FOREACH(d, &sp->s->doms, link)
    {
        for (unsigned int i = 0; d->sp == sp && i < d->nr_threads; i++) {
            struct sched_thread *th = d->threads[i];

            VS_ASSERT(th->mid_on < 0); /* dispatch_lower_all lowered every raised thread */
            if (th->on_cpu >= 0)
                th->on_cpu = index_of(sp, on[th->on_cpu]);
            if (th->on_cpu >= 0)
                sp->cpus[th->on_cpu].running = th;
        }
    }
    dispatch_apply(sp, now); /* every vCPU is dirty: pinned to its new home */
    return 0;
}

/* Stop the pool, change its CPUs, start it again (on the old CPUs if the new fail). */
static int
resize_run(struct sched *s, struct sched_pool *sp, struct resize *rz, char *err, size_t errlen)
{
    int r;

    dispatch_stop(sp);
    pthread_mutex_lock(&s->ev_lock);
    sched_pool_lock(sp);
    r = resize_commit(sp, rz, err, errlen);
    sched_pool_unlock(sp);
    pthread_mutex_unlock(&s->ev_lock);
    if (r < 0) {
        char serr[SCHED_ERRLEN];

        resize_records_drop(sp, rz);
        if (dispatch_start(sp, serr, sizeof(serr)) < 0)
            snprintf(sp->last_error, sizeof(sp->last_error), "%s", serr);
        return r;
    }
    return dispatch_start(sp, err, errlen);
}

static void
resize_free(struct resize *rz)
{
    if (rz != NULL)
        free(rz->aff);
    free(rz);
}

/* Everything that can refuse, then the change; the pool as it was on error. */
static int
resize_to(struct sched *s, struct sched_pool *sp, const struct policy_cpu *cpus, unsigned int n,
          char *err, size_t errlen)
{
    struct resize *rz = calloc(1, sizeof(*rz));
    int r;

    if (rz == NULL) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    memcpy(rz->cpus, cpus, n * sizeof(*cpus));
    rz->n = n;
    r = resize_probe(sp, rz, err, errlen);
    if (r == 0) {
        r = resize_records(sp, rz, err, errlen);
        if (r < 0)
            resize_records_drop(sp, rz);
    }
    if (r == 0)
        r = resize_run(s, sp, rz, err, errlen);
    resize_free(rz);
    return r;
}

int
sched_pool_resize(struct sched *s, const char *name, const struct policy_cpu *cpus, unsigned int n,
                  char *err, size_t errlen)
{
    struct policy_cpu was[CPUSET_MAX];
    struct sched_pool *sp;
    unsigned int old_n;
    int r;

    pthread_mutex_lock(&s->lock);
    sp = sched_pool_find(s, name);
    if (sp == NULL) {
        snprintf(err, errlen, "no pool %s", name);
        r = -ENOENT;
    } else if (n == 0 || n > CPUSET_MAX) {
        snprintf(err, errlen, "pool %s: 1..%d cpus", name, CPUSET_MAX);
        r = -EINVAL;
    } else {
        r = sched_cpus_check(s, sp, cpus, n, err, errlen);
    }
    if (r < 0 || same_cpus(sp, cpus, n)) {
        pthread_mutex_unlock(&s->lock);
        return r;
    }
    old_n = sp->nr_cpus;
    memcpy(was, sp->pool.cpus, old_n * sizeof(was[0]));
    r = resize_to(s, sp, cpus, n, err, errlen);
    if (r < 0 && !same_cpus(sp, was, old_n)) {
        char back[SCHED_ERRLEN];

        /* The new CPUs' dispatchers could not start: back to the old ones. */
        if (resize_to(s, sp, was, old_n, back, sizeof(back)) < 0)
            snprintf(sp->last_error, sizeof(sp->last_error), "resize back: %s", back);
    }
    sched_changed(s); /* the old CPUs again if r < 0: the record is written all the same */
    pthread_mutex_unlock(&s->lock);
    sched_place_all(s);
    return r;
}
