/* SPDX-License-Identifier: ISC */
/*
 * rr.c - round-robin with a fixed slice, down to microseconds.
 *
 * Design. The paper's "microsecond time slicing" (seeds-digest 000, 3.2):
 * every runnable vCPU gets `slice_us` in turn. One FIFO runqueue per CPU;
 * a vCPU is placed once, on the allowed CPU with the fewest vCPUs, and
 * stays there (no stealing: rr exists to measure the mechanism, not to
 * balance). A waking vCPU queues at the tail and tickles its CPU only if
 * the CPU is idle, so a wake never shortens the running slice.
 *
 * Accounting. None beyond statistics: the slice is wall time from the
 * pick, whatever the vCPU did with it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/queue.h>

#include "policies.h"

#define RR_DEFAULT_SLICE_US 1000

struct rr_vcpu {
    TAILQ_ENTRY(rr_vcpu) link;
    struct policy_vcpu *v;
    bool queued;
    uint64_t run_ns;
    uint64_t picks;
};
TAILQ_HEAD(rr_runq, rr_vcpu);

struct rr_cpu {
    struct rr_runq runq;
    struct rr_vcpu *cur;
    uint64_t slice_end;
    unsigned int nr_vcpus;
};

struct rr_priv {
    uint64_t slice_ns;
    struct rr_cpu cpu[];
};

enum {
    RR_P_SLICE_US
};
static const struct policy_param rr_pool_params[] = {
    [RR_P_SLICE_US] = {"slice_us", POLICY_PARAM_INT, 1, 1000000, RR_DEFAULT_SLICE_US,
                       "time slice in microseconds"},
    {NULL, 0, 0, 0, 0, NULL},
};

static const struct policy_param rr_dom_params[] = {
    {NULL, 0, 0, 0, 0, NULL},
};

static struct rr_priv *
rr_priv(struct policy *pol)
{
    return pol->priv;
}

static struct rr_vcpu *
rr_vcpu(struct policy_vcpu *v)
{
    return v->priv;
}

static int
rr_init(struct policy *pol, const struct policy_values *pv, char *err)
{
    struct rr_priv *p = calloc(1, sizeof(*p) + pol->nr_cpus * sizeof(p->cpu[0]));

    if (p == NULL) {
        snprintf(err, POLICY_ERRLEN, "rr: out of memory");
        return -ENOMEM;
    }
    p->slice_ns = (uint64_t)pv->i[RR_P_SLICE_US] * NSEC_PER_USEC;
    for (unsigned int c = 0; c < pol->nr_cpus; c++)
        TAILQ_INIT(&p->cpu[c].runq);
    pol->priv = p;
    return 0;
}

static void
rr_vcpu_add(struct policy *pol, struct policy_vcpu *v, uint64_t now)
{
    struct rr_priv *p = rr_priv(pol);
    struct rr_vcpu *rv = rr_vcpu(v);
    unsigned int best = 0;
    bool found = false;

    (void)now;
    rv->v = v;
    for (unsigned int c = 0; c < pol->nr_cpus; c++) {
        if (!policy_vcpu_allowed(v, c))
            continue;
        if (!found || p->cpu[c].nr_vcpus < p->cpu[best].nr_vcpus)
            best = c;
        found = true;
    }
    p->cpu[best].nr_vcpus++;
    policy_vcpu_move(pol, v, best);
}

static void
rr_dequeue(struct rr_cpu *c, struct rr_vcpu *rv)
{
    if (rv->queued) {
        TAILQ_REMOVE(&c->runq, rv, link);
        rv->queued = false;
    }
}

static void
rr_vcpu_remove(struct policy *pol, struct policy_vcpu *v, uint64_t now)
{
    struct rr_cpu *c = &rr_priv(pol)->cpu[v->cpu];
    struct rr_vcpu *rv = rr_vcpu(v);

    (void)now;
    rr_dequeue(c, rv);
    if (c->cur == rv)
        c->cur = NULL;
    c->nr_vcpus--;
}

static void
rr_wake(struct policy *pol, struct policy_vcpu *v, uint64_t now)
{
    struct rr_cpu *c = &rr_priv(pol)->cpu[v->cpu];
    struct rr_vcpu *rv = rr_vcpu(v);

    (void)now;
    if (rv->queued || c->cur == rv)
        return;
    TAILQ_INSERT_TAIL(&c->runq, rv, link);
    rv->queued = true;
    if (c->cur == NULL)
        policy_tickle(pol, v->cpu);
}

static void
rr_sleep(struct policy *pol, struct policy_vcpu *v, uint64_t now)
{
    (void)now;
    rr_dequeue(&rr_priv(pol)->cpu[v->cpu], rr_vcpu(v));
}

static void
rr_charge(struct policy *pol, struct policy_vcpu *v, uint64_t ran_ns, uint64_t now)
{
    (void)pol, (void)now;
    rr_vcpu(v)->run_ns += ran_ns;
}

/*
 * Keep the current vCPU until its slice ends (a tickle for a wake does
 * not cut it short); then rotate it to the tail and take the head.
 */
static void
rr_pick(struct policy *pol, unsigned int cpu, uint64_t now, struct policy_decision *out)
{
    struct rr_priv *p = rr_priv(pol);
    struct rr_cpu *c = &p->cpu[cpu];
    struct rr_vcpu *cur = c->cur, *next;

    if (cur != NULL && cur->v->runnable && now < c->slice_end) {
        out->vcpu = cur->v;
        out->until = c->slice_end;
        return;
    }
    if (cur != NULL && cur->v->runnable) {
        TAILQ_INSERT_TAIL(&c->runq, cur, link);
        cur->queued = true;
    }
    next = TAILQ_FIRST(&c->runq);
    c->cur = next;
    if (next == NULL) {
        out->vcpu = NULL;
        out->until = POLICY_NEVER;
        return;
    }
    rr_dequeue(c, next);
    next->picks++;
    c->slice_end = now + p->slice_ns;
    out->vcpu = next->v;
    out->until = c->slice_end;
}

static int
rr_set_params(struct policy *pol, struct policy_dom *d, const struct policy_values *val,
              uint64_t now, char *err)
{
    (void)now, (void)err;
    if (d == NULL && (val->set & (1U << RR_P_SLICE_US)))
        rr_priv(pol)->slice_ns = (uint64_t)val->i[RR_P_SLICE_US] * NSEC_PER_USEC;
    return 0;
}

static void
rr_get_params(struct policy *pol, struct policy_dom *d, struct policy_sink *sk)
{
    if (d == NULL)
        sk->put_int(sk, "slice_us", (int64_t)(rr_priv(pol)->slice_ns / NSEC_PER_USEC));
}

static void
rr_vcpu_stats(struct policy *pol, struct policy_vcpu *v, struct policy_sink *sk)
{
    struct rr_vcpu *rv = rr_vcpu(v);

    (void)pol;
    sk->put_int(sk, "run_ns", (int64_t)rv->run_ns);
    sk->put_int(sk, "picks", (int64_t)rv->picks);
}

const struct policy_ops rr_ops = {
    .name = "rr",
    .summary = "round-robin with a fixed slice (down to microseconds)",
    .pool_params = rr_pool_params,
    .dom_params = rr_dom_params,
    .vcpu_priv_size = sizeof(struct rr_vcpu),
    .init = rr_init,
    .vcpu_add = rr_vcpu_add,
    .vcpu_remove = rr_vcpu_remove,
    .wake = rr_wake,
    .sleep = rr_sleep,
    .charge = rr_charge,
    .pick = rr_pick,
    .set_params = rr_set_params,
    .get_params = rr_get_params,
    .vcpu_stats = rr_vcpu_stats,
};
