/* SPDX-License-Identifier: ISC */
/*
 * test_credit2.c - the Credit2 policy on the simulated clock: defaults,
 * weights, credit resets, slices, wake preemption and tickling, pull
 * resistance, sleepers' latency, yield and parameters (xen-sched.md
 * behaviours 12-16, 18 and 20). Caps are in test_credit2_cap.c, runqueue
 * arrangement and balancing in test_credit2_load.c.
 */
#include <string.h>

#include "stat_testutil.h"

/* --- helpers ----------------------------------------------------------- */

/* Report pending measured run time to the policy now (an empty set). */
static void
flush(struct sim *s)
{
    char err[POLICY_ERRLEN] = "";

    ck_assert_msg(sim_set(s, NULL, NULL, err) == 0, "flush: %s", err);
}

/* Pretend v ran `ns` (it did not): a way to set its credit. */
static void
burn(struct sim *s, struct sim_vcpu *v, uint64_t ns)
{
    pool_account(&s->pool, v->pv, ns);
    flush(s);
}

static struct pool_dom *
add_on(struct sim *s, const char *name, struct sim_demand d, uint64_t affinity, const char *params)
{
    char err[POLICY_ERRLEN] = "";
    struct pool_dom *dom = sim_dom_add(s, name, 1, d, affinity, params, err);

    ck_assert_msg(dom != NULL, "attach %s: %s", name, err);
    return dom;
}

static struct sim_vcpu *
v0(struct pool_dom *d)
{
    return sim_vcpu(d, 0);
}

#define ck_assert_near(got, want, tol)                                                             \
    do {                                                                                           \
        double g_ = (double)(got), w_ = (double)(want), t_ = (double)(tol);                        \
        ck_assert_msg(g_ >= w_ - t_ && g_ <= w_ + t_, "%s = %.4f, want %.4f +- %.4f", #got, g_,    \
                      w_, t_);                                                                     \
    } while (0)

/* --- 12: defaults -------------------------------------------------------- */

enum scope {
    POOL,
    DOM,
    VCPU
};
struct default_case {
    enum scope scope;
    const char *key;
    int64_t ival;
    const char *sval;
};

static const struct default_case defaults[] = {
    {POOL, "ratelimit_us", 1000, NULL},  {POOL, "runqueue", 0, "socket"},
    {DOM, "weight", 256, NULL},          {DOM, "cap", 0, NULL},
    {VCPU, "credit_ns", 10000000, NULL}, /* CSCHED2_CREDIT_INIT */
    {VCPU, "load_pct", 50, NULL},        /* a new vCPU counts half */
    {VCPU, "runqueue", 0, NULL},         {VCPU, "resets", 0, NULL},
};

START_TEST(test_credit2_defaults)
{
    const struct default_case *c = &defaults[_i];
    struct sim s;
    struct pool_dom *d;

    sim_start(&s, "credit2", 1, NULL);
    d = sim_add_ok(&s, "A", 1, sim_manual(), NULL);
    if (c->scope == VCPU) {
        ck_assert_int_eq(vstat(&s, v0(d), c->key), c->ival);
    } else {
        struct find_sink f = param(&s, c->scope == DOM ? d : NULL, c->key);

        if (c->sval != NULL)
            ck_assert_str_eq(f.sval, c->sval);
        else
            ck_assert_int_eq(f.ival, c->ival);
    }
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * A lone hog runs the 10 ms maximum slice; its epoch ends exactly when its
 * credit reaches 0, and a sleeper of the runqueue gains too, clipped at
 * 10.5 ms.
 */
START_TEST(test_credit2_reset_exact)
{
    struct sim s;
    struct sim_vcpu *h, *sl;

    sim_start(&s, "credit2", 1, NULL);
    sl = v0(sim_add_ok(&s, "S", 1, sim_manual(), NULL));
    h = v0(sim_add_ok(&s, "H", 1, sim_busy(), NULL));
    ck_assert_uint_eq(s.pool.cpu[0].until, MS(10));
    sim_run(&s, MS(10) - 1);
    flush(&s);
    ck_assert_int_eq(vstat(&s, h, "resets"), 0);
    ck_assert_int_eq(vstat(&s, h, "credit_ns"), 1);
    sim_run(&s, 1);
    ck_assert_int_eq(vstat(&s, h, "resets"), 1);
    ck_assert_int_eq(vstat(&s, h, "reset_from_ns"), 0);
    ck_assert_int_eq(vstat(&s, h, "credit_ns"), MS(10));
    ck_assert_int_eq(vstat(&s, sl, "resets"), 1);
    ck_assert_int_eq(vstat(&s, sl, "reset_from_ns"), MS(10));
    ck_assert_int_eq(vstat(&s, sl, "credit_ns"), US(10500));
    ck_assert_uint_eq(s.pool.cpu[0].until, MS(20));
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* max_weight counts sleepers: a 512 sleeper makes a 256 hog burn 2/ns. */
START_TEST(test_credit2_max_weight_sleeper)
{
    struct sim s;
    struct sim_vcpu *h;

    sim_start(&s, "credit2", 1, NULL);
    sim_add_ok(&s, "S", 1, sim_manual(), "weight=512");
    h = v0(sim_add_ok(&s, "H", 1, sim_busy(), "weight=256"));
    ck_assert_uint_eq(s.pool.cpu[0].until, MS(5)); /* 10 ms of credit at 2/ns */
    sim_run(&s, MS(5) - 1);
    flush(&s);
    ck_assert_int_eq(vstat(&s, h, "resets"), 0);
    ck_assert_int_eq(vstat(&s, h, "credit_ns"), 2);
    sim_run(&s, 1);
    ck_assert_int_eq(vstat(&s, h, "resets"), 1);
    ck_assert_int_eq(vstat(&s, h, "reset_from_ns"), 0);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* Floor -10 ms; picked at the floor, everyone gains 20 ms (clipped). */
START_TEST(test_credit2_reset_from_floor)
{
    struct sim s;
    struct sim_vcpu *h, *sl;

    sim_start(&s, "credit2", 1, NULL);
    sl = v0(sim_add_ok(&s, "S", 1, sim_manual(), "weight=65535"));
    h = v0(sim_add_ok(&s, "H", 1, sim_busy(), "weight=1"));
    /* 10 ms of credit is 152 ns of time: the ratelimit sets the slice. */
    ck_assert_uint_eq(s.pool.cpu[0].until, MS(1));
    sim_run(&s, MS(1));
    ck_assert_int_eq(vstat(&s, h, "resets"), 1);
    ck_assert_int_eq(vstat(&s, h, "reset_from_ns"), -(int64_t)MS(10));
    ck_assert_int_eq(vstat(&s, h, "credit_ns"), MS(10));
    ck_assert_int_eq(vstat(&s, sl, "credit_ns"), US(10500));
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * Two hogs and a sleeper with 0.3 ms left: resets come exactly when both
 * hogs are <= 0 (never late by more than one slice), the sleeper gains
 * 10 ms too, and credit never falls below -10 ms.
 */
START_TEST(test_credit2_reset_when_all_nonpositive)
{
    struct sim s;
    struct sim_vcpu *a, *b, *sl;
    int64_t seen = 0, n = 0;

    sim_start(&s, "credit2", 1, NULL);
    sl = v0(sim_add_ok(&s, "S", 1, sim_manual(), NULL));
    sim_wake(&s, sl);
    sim_run(&s, US(9700));
    sim_sleep(&s, sl);
    ck_assert_int_eq(vstat(&s, sl, "credit_ns"), US(300));
    a = v0(sim_add_ok(&s, "A", 1, sim_busy(), NULL));
    b = v0(sim_add_ok(&s, "B", 1, sim_busy(), NULL));
    for (int step = 0; step < 20000; step++) {
        int64_t ra, rb, now;

        sim_run(&s, US(50));
        flush(&s);
        now = vstat(&s, a, "resets");
        ck_assert_int_ge(vstat(&s, a, "credit_ns"), -(int64_t)MS(10));
        ck_assert_int_ge(vstat(&s, b, "credit_ns"), -(int64_t)MS(10));
        if (now == seen)
            continue;
        ck_assert_int_eq(now, seen + 1);
        seen = now;
        n++;
        ra = vstat(&s, a, "reset_from_ns");
        rb = vstat(&s, b, "reset_from_ns");
        ck_assert_int_le(ra > rb ? ra : rb, 0);
        ck_assert_int_gt(ra > rb ? ra : rb, -(int64_t)US(1050));
        ck_assert_int_eq(vstat(&s, sl, "credit_ns"), n == 1 ? US(10300) : US(10500));
    }
    ck_assert_int_ge(n, 45); /* one epoch per 20 ms of CPU */
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * No reset while the head of the runqueue still has credit, whatever the
 * picked vCPU has. Y runs alone on CPU 0; X and Z share CPU 1. In the
 * second epoch Z waits in the queue with 1 ms while Y goes negative; the
 * epoch ends only when Z is <= 0 too, with Y at the floor (+20 ms).
 */
START_TEST(test_credit2_reset_waits_for_head)
{
    struct sim s;
    struct sim_vcpu *y, *x, *z;

    sim_start(&s, "credit2", 2, NULL);
    y = v0(add_on(&s, "Y", sim_busy(), 1, NULL));
    x = v0(add_on(&s, "X", sim_busy(), 2, NULL));
    z = v0(add_on(&s, "Z", sim_busy(), 2, NULL));
    sim_run(&s, MS(25));
    flush(&s);
    ck_assert_int_eq(vstat(&s, y, "resets"), 1);
    ck_assert_int_eq(vstat(&s, y, "credit_ns"), -(int64_t)MS(5));
    ck_assert_int_eq(z->running_on, -1);
    ck_assert_int_eq(vstat(&s, z, "credit_ns"), MS(1));
    while (vstat(&s, y, "resets") == 1) {
        sim_run(&s, US(10));
        ck_assert_uint_lt(s.now, MS(40));
    }
    ck_assert_int_le(vstat(&s, x, "reset_from_ns"), 0);
    ck_assert_int_le(vstat(&s, z, "reset_from_ns"), 0);
    ck_assert_int_eq(vstat(&s, y, "reset_from_ns"), -(int64_t)MS(10));
    ck_assert_int_eq(vstat(&s, y, "credit_ns"), MS(10));
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * The first n distinct vCPUs other than vcpus[0] to run in the recorded
 * timeline, in order, into first[]; returns how many were found.
 */
static size_t
first_runs(const struct sim *s, int *first, size_t n)
{
    size_t k = 0;

    for (size_t i = 0; i < s->nr_seg && k < n; i++) {
        bool seen = false;

        for (size_t j = 0; j < k; j++)
            seen |= first[j] == s->timeline[i].vcpu;
        if (s->timeline[i].vcpu > 0 && !seen)
            first[k++] = s->timeline[i].vcpu;
    }
    return k;
}

/*
 * A recording 1-CPU credit2 simulator with a hog H (vcpus[0]) and three
 * idle vCPUs A, B, C (vcpus[1..3], returned in w[]) that the test wakes.
 */
static void
hog_and_three(struct sim *s, struct sim_vcpu *w[3])
{
    sim_start(s, "credit2", 1, NULL);
    s->record = true;
    sim_add_ok(s, "H", 1, sim_busy(), NULL);
    w[0] = v0(sim_add_ok(s, "A", 1, sim_manual(), NULL));
    w[1] = v0(sim_add_ok(s, "B", 1, sim_manual(), NULL));
    w[2] = v0(sim_add_ok(s, "C", 1, sim_manual(), NULL));
}

/* The runqueue is sorted by credit, FIFO among equal credits. */
START_TEST(test_credit2_runq_fifo)
{
    static const int perms[][3] = {{0, 1, 2}, {2, 0, 1}};
    const int *perm = perms[_i];
    struct sim_vcpu *w[3];
    int first[3];
    size_t k;
    struct sim s;

    hog_and_three(&s, w);
    sim_run(&s, US(500)); /* H is not preemptable yet: they all queue */
    for (int i = 0; i < 3; i++)
        sim_set_demand(&s, w[perm[i]], sim_busy());
    sim_run(&s, MS(20));
    /* After H's 10 ms slice they first run in wake order. */
    k = first_runs(&s, first, 3);
    ck_assert_uint_eq(k, 3);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(first[i], perm[i] + 1); /* vcpus[]: H=0, A=1, B=2, C=3 */
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * With differing credits the runqueue is sorted by credit, not by wake
 * order: A (7 ms), B (9 ms) and C (8 ms) queue behind the hog H in any
 * wake order and first run as B, C, A.
 */
START_TEST(test_credit2_runq_credit_order)
{
    static const int perms[][3] = {{0, 1, 2}, {2, 0, 1}, {1, 2, 0}};
    static const uint64_t burned[3] = {MS(3), MS(1), MS(2)}; /* A, B, C */
    static const int order[3] = {2, 3, 1};                   /* vcpus[]: H=0, A=1, B=2, C=3 */
    const int *perm = perms[_i];
    struct sim_vcpu *w[3];
    int first[3];
    size_t k;
    struct sim s;

    hog_and_three(&s, w);
    for (int i = 0; i < 3; i++) {
        burn(&s, w[i], burned[i]);
        ck_assert_int_eq(vstat(&s, w[i], "credit_ns"), MS(10) - burned[i]);
    }
    sim_run(&s, US(500)); /* H is not preemptable yet: they all queue */
    for (int i = 0; i < 3; i++)
        sim_set_demand(&s, w[perm[i]], sim_busy());
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(w[i]->running_on, -1);
    sim_run(&s, MS(20));
    k = first_runs(&s, first, 3);
    ck_assert_uint_eq(k, 3);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(first[i], order[i]);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * Load averages (update_svc_load): P = 18, window 2^30 ns, samples in
 * 2^10 ns. A new vCPU is 50 %; runnable for half a window it is 75 %;
 * asleep half a window more, 37.5 %; after a whole window asleep, 0.
 */
START_TEST(test_credit2_load_decay)
{
    const uint64_t half = 1ULL << 29;
    struct sim_vcpu *x, *y;
    struct sim s;

    sim_start(&s, "credit2", 1, NULL);
    x = v0(sim_add_ok(&s, "X", 1, sim_manual(), NULL));
    y = v0(sim_add_ok(&s, "Y", 1, sim_manual(), NULL));
    ck_assert_int_eq(vstat(&s, x, "load_pct"), 50);
    sim_wake(&s, x);
    sim_run(&s, half);
    flush(&s);
    ck_assert_int_eq(vstat(&s, x, "load_pct"), 75);
    sim_sleep(&s, x);
    sim_run(&s, half);
    sim_wake(&s, y); /* any event: the policy learns the time */
    ck_assert_int_eq(vstat(&s, x, "load_pct"), 37);
    sim_sleep(&s, y);
    sim_run(&s, 2 * half + 1024);
    sim_wake(&s, y);
    ck_assert_int_eq(vstat(&s, x, "load_pct"), 0);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* --- 13: weights ---------------------------------------------------------- */

/* 256:512 gives 1/3 : 2/3, about 5 ms and 10 ms of CPU per epoch. */
START_TEST(test_credit2_weights_256_512)
{
    struct sim s;
    struct pool_dom *a, *b;
    double ra, rb;

    sim_start(&s, "credit2", 1, NULL);
    a = sim_add_ok(&s, "A", 1, sim_busy(), "weight=256");
    b = sim_add_ok(&s, "B", 1, sim_busy(), "weight=512");
    sim_run(&s, MS(100));
    sim_reset_stats(&s);
    flush(&s);
    ra = (double)vstat(&s, v0(a), "resets");
    sim_run(&s, SEC(3));
    flush(&s);
    ck_assert_no_violations(&s);
    ck_assert_share(&s, a, 1.0 / 3, 0.01);
    ck_assert_share(&s, b, 2.0 / 3, 0.01);
    ra = (double)vstat(&s, v0(a), "resets") - ra;
    rb = ra; /* one runqueue: every reset counts for both */
    ck_assert_near((double)v0(a)->run_ns / ra / 1e6, 5.0, 0.25);
    ck_assert_near((double)v0(b)->run_ns / rb / 1e6, 10.0, 0.5);
    sim_fini(&s);
}
END_TEST

/* Weight is per vCPU: 2 busy vCPUs of A and 1 of B, same weight: thirds. */
START_TEST(test_credit2_weight_per_vcpu)
{
    struct sim s;
    struct pool_dom *a, *b;

    sim_start(&s, "credit2", 1, NULL);
    a = sim_add_ok(&s, "A", 2, sim_busy(), NULL);
    b = sim_add_ok(&s, "B", 1, sim_busy(), NULL);
    sim_run(&s, MS(100));
    sim_reset_stats(&s);
    sim_run(&s, SEC(3));
    ck_assert_no_violations(&s);
    ck_assert_near(sim_share(&s, sim_vcpu(a, 0)), 1.0 / 3, 0.01);
    ck_assert_near(sim_share(&s, sim_vcpu(a, 1)), 1.0 / 3, 0.01);
    ck_assert_share(&s, b, 1.0 / 3, 0.01);
    sim_fini(&s);
}
END_TEST

/* --- 15: slices ------------------------------------------------------------ */

/* Xen >= 4.21 in-flight credit: two equal hogs switch about every 1 ms. */
START_TEST(test_credit2_two_hogs_switch_1ms)
{
    struct sim s;
    struct pool_dom *a, *b;

    sim_start(&s, "credit2", 1, NULL);
    a = sim_add_ok(&s, "A", 1, sim_busy(), NULL);
    b = sim_add_ok(&s, "B", 1, sim_busy(), NULL);
    sim_run(&s, MS(50));
    sim_reset_stats(&s);
    sim_run(&s, SEC(3));
    ck_assert_no_violations(&s);
    ck_assert_share(&s, a, 0.5, 0.01);
    ck_assert_share(&s, b, 0.5, 0.01);
    ck_assert_near(sim_mean(&v0(a)->lengths) / 1e6, 1.0, 0.1);
    ck_assert_near(sim_mean(&v0(b)->lengths) / 1e6, 1.0, 0.1);
    ck_assert_uint_le(sim_percentile(&v0(a)->lengths, 99), US(1500));
    ck_assert_uint_ge(sim_percentile(&v0(a)->lengths, 1), US(1000));
    sim_fini(&s);
}
END_TEST

/*
 * inflight=0, the rule before Xen 4.21 (and so Xen 4.17's, the reference
 * rig of bench/xen): a slice ends at the runqueue head's credit only, so
 * two equal hogs alternate in 10 ms runs (the clamp); set live back to 1,
 * they alternate every 1 ms again.
 */
START_TEST(test_credit2_two_hogs_inflight_off_10ms)
{
    char err[POLICY_ERRLEN] = "";
    struct pool_dom *a, *b;
    struct sim s;

    sim_start(&s, "credit2", 1, "inflight=0");
    ck_assert_int_eq(param(&s, NULL, "inflight").ival, 0);
    a = sim_add_ok(&s, "A", 1, sim_busy(), NULL);
    b = sim_add_ok(&s, "B", 1, sim_busy(), NULL);
    sim_run(&s, MS(50));
    sim_reset_stats(&s);
    sim_run(&s, SEC(3));
    ck_assert_share(&s, a, 0.5, 0.01);
    ck_assert_share(&s, b, 0.5, 0.01);
    ck_assert_near(sim_mean(&v0(a)->lengths) / 1e6, 10.0, 0.6);
    ck_assert_uint_le(sim_percentile(&v0(a)->lengths, 99), MS(10));
    ck_assert_int_eq(sim_set(&s, NULL, "inflight=1", err), 0);
    sim_run(&s, MS(50));
    sim_reset_stats(&s);
    sim_run(&s, SEC(1));
    ck_assert_near(sim_mean(&v0(a)->lengths) / 1e6, 1.0, 0.1);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * An unclamped slice: A, running, is re-picked at 2 ms with B waiting; it
 * runs exactly until its credit falls to B's, the gap converted to A's
 * burn rate (x weight / max_weight), here between the 1 ms and 10 ms
 * clamps. Equal weights: a 5 ms gap is 5 ms. A at 256 next to B at 512
 * burns 2 credits per ns: a 4 ms gap is 2 ms.
 */
struct slice_case {
    const char *a_params, *b_params;
    uint64_t b_burned; /* B's credit: 10 ms minus its burn at its own rate */
    uint64_t slice;
};

static const struct slice_case slice_cases[] = {
    {"weight=256", "weight=256", MS(7), MS(5)}, /* A 8 ms, B 3 ms */
    {"weight=256", "weight=512", MS(8), MS(2)}, /* A 6 ms, B 2 ms */
    {"weight=256", "weight=256", US(3700), US(1700)},
};

START_TEST(test_credit2_slice_is_the_gap)
{
    const struct slice_case *c = &slice_cases[_i];
    struct sim_vcpu *a, *b;
    struct sim s;

    sim_start(&s, "credit2", 1, NULL);
    b = v0(sim_add_ok(&s, "B", 1, sim_manual(), c->b_params));
    a = v0(sim_add_ok(&s, "A", 1, sim_busy(), c->a_params));
    sim_run(&s, MS(2));
    burn(&s, b, c->b_burned);
    sim_wake(&s, b); /* less credit than A: queued, nobody tickled */
    ck_assert_int_eq(a->running_on, 0);
    ck_assert_int_lt(vstat(&s, b, "credit_ns"), vstat(&s, a, "credit_ns"));
    pool_pick(&s.pool, 0, s.now); /* A is past the ratelimit: decide now */
    sim_run(&s, 0);
    ck_assert_int_eq(a->running_on, 0);
    ck_assert_uint_gt(c->slice, MS(1));
    ck_assert_uint_lt(c->slice, MS(10));
    ck_assert_uint_eq(s.pool.cpu[0].until, MS(2) + c->slice);
    /* The slice ends where the credits meet. */
    sim_run(&s, c->slice - 1);
    ck_assert_int_eq(a->running_on, 0);
    flush(&s);
    ck_assert_int_gt(vstat(&s, a, "credit_ns"), vstat(&s, b, "credit_ns"));
    sim_run(&s, 1);
    flush(&s);
    ck_assert_int_eq(vstat(&s, a, "credit_ns"), vstat(&s, b, "credit_ns"));
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* Without ratelimit the slice floor is MIN_TIMER: decisions every 500 us. */
START_TEST(test_credit2_min_timer)
{
    struct sim s;
    uint64_t picks;

    sim_start(&s, "credit2", 1, "ratelimit_us=0");
    sim_add_ok(&s, "A", 1, sim_busy(), NULL);
    sim_add_ok(&s, "B", 1, sim_busy(), NULL);
    sim_run(&s, MS(50));
    picks = s.pool.stats.picks;
    sim_reset_stats(&s);
    sim_run(&s, SEC(1));
    ck_assert_no_violations(&s);
    ck_assert_near((double)(s.pool.stats.picks - picks), 2000, 20);
    for (unsigned int i = 0; i < s.nr_vcpus; i++)
        ck_assert_uint_ge(sim_percentile(&s.vcpus[i]->lengths, 0), US(500));
    sim_fini(&s);
}
END_TEST

/* --- 16: wake preemption --------------------------------------------------- */

struct wake_case {
    const char *params;
    uint64_t wake_at;  /* time after the hog started */
    uint64_t x_burned; /* credit the waker lost before */
    uint64_t latency;  /* expected wake-to-run */
};

static const struct wake_case wake_cases[] = {
    /* More credit, runner past the ratelimit: at once. */
    {NULL, US(2000), 0, 0},
    {NULL, US(2000), US(1999), 0},
    /* Equal or less credit: waits for the runner's 10 ms slice to end. */
    {NULL, US(2000), US(2000), US(8000)},
    {NULL, US(2000), US(3000), US(8000)},
    /* Runner within ratelimit - 50 us: no tickle, waits for the slice end. */
    {NULL, US(940), 0, US(9060)},
    /* Past ratelimit - 50 us: tickled, the ratelimit keeps it 500 us more. */
    {NULL, US(960), 0, US(500)},
    /* Ratelimit off: always preemptable. */
    {"ratelimit_us=0", US(100), 0, 0},
};

START_TEST(test_credit2_wake_preempt)
{
    const struct wake_case *c = &wake_cases[_i];
    struct sim s;
    struct sim_vcpu *x, *h;

    sim_start(&s, "credit2", 1, c->params);
    x = v0(sim_add_ok(&s, "X", 1, sim_manual(), NULL));
    h = v0(sim_add_ok(&s, "H", 1, sim_busy(), NULL));
    sim_run(&s, c->wake_at);
    if (c->x_burned)
        burn(&s, x, c->x_burned);
    sim_wake(&s, x);
    sim_run(&s, MS(12));
    ck_assert_uint_eq(x->lat.n, 1);
    ck_assert_uint_eq(x->lat.v[0], c->latency);
    (void)h;
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * The 500 us penalty (tickle_score): preempting a CPU other than the
 * waker's last one needs more than 500 us of credit over its runner,
 * where on its own CPU any lead is enough. CPU 0 runs A (8 ms of credit at
 * 2 ms), CPU 1 runs B (9 ms); X last ran on CPU 1, with 8 ms + lead. Both
 * runners are past the ratelimit. Up to a 1 ms lead X does not beat B;
 * CPU 0 is tickled only past 500 us; from 1 ms X's own CPU scores > 0 and
 * is taken first, though CPU 0 would score more.
 */
struct penalty_case {
    uint64_t lead; /* X's credit above A's */
    int runs_on;   /* at once, or -1: it waits */
};

static const struct penalty_case penalty_cases[] = {
    {US(1), -1},   {US(300), -1}, {US(500), -1},
    {US(501), 0},  {US(900), 0},  {MS(1), 0}, /* ties B: own CPU scores 0 */
    {US(1001), 1}, {US(1200), 1},
};

START_TEST(test_credit2_wake_penalty_other_cpu)
{
    const struct penalty_case *c = &penalty_cases[_i];
    struct sim_vcpu *x, *a, *b;
    struct sim s;

    sim_start(&s, "credit2", 2, NULL);
    a = v0(add_on(&s, "A", sim_busy(), 1, NULL));
    x = v0(sim_add_ok(&s, "X", 1, sim_manual(), NULL));
    ck_assert_uint_eq(x->pv->pv->cpu, 1);
    sim_run(&s, MS(1));
    b = v0(add_on(&s, "B", sim_busy(), 2, NULL));
    sim_run(&s, MS(1));
    burn(&s, x, MS(2) - c->lead);
    ck_assert_int_eq(vstat(&s, a, "credit_ns"), MS(8));
    ck_assert_int_eq(vstat(&s, b, "credit_ns"), MS(9));
    ck_assert_int_eq(vstat(&s, x, "credit_ns"), MS(8) + c->lead);
    sim_wake(&s, x);
    sim_run(&s, 0);
    ck_assert_int_eq(x->running_on, c->runs_on);
    ck_assert_int_eq(a->running_on, c->runs_on == 0 ? -1 : 0);
    ck_assert_int_eq(b->running_on, c->runs_on == 1 ? -1 : 1);
    ck_assert_uint_eq(sim_max(&x->lat), 0);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* An idle CPU is used rather than preempting the waker's own busy CPU. */
START_TEST(test_credit2_idle_preferred)
{
    struct sim s;
    struct sim_vcpu *x, *a;

    sim_start(&s, "credit2", 2, NULL);
    sim_add_ok(&s, "D", 1, sim_manual(), NULL);         /* placed on CPU 1 */
    x = v0(sim_add_ok(&s, "X", 1, sim_manual(), NULL)); /* on CPU 0 */
    ck_assert_uint_eq(x->pv->pv->cpu, 0);
    a = v0(add_on(&s, "A", sim_busy(), 1, NULL));
    sim_run(&s, MS(5));
    sim_wake(&s, x); /* 10 ms of credit against A's 5 */
    ck_assert_int_eq(x->running_on, 1);
    ck_assert_int_eq(a->running_on, 0);
    ck_assert_uint_eq(a->runs, 1);
    ck_assert_int_eq(vstat(&s, x, "credit_ns"), US(10050)); /* moved: +50 us */
    ck_assert_int_eq(vstat(&s, x, "migrations"), 1);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* Two cores of two threads: cpus {0,1} core 0, {2,3} core 1. */
static const struct policy_cpu smt4[] = {
    {0, 0, 0, 0},
    {1, 0, 0, 0},
    {2, 1, 0, 0},
    {3, 1, 0, 0},
};

struct smt_case {
    unsigned int home; /* where the waker lives */
    uint64_t busy;     /* CPUs running a pinned hog */
    int expect;        /* where it runs */
};

static const struct smt_case smt_cases[] = {
    {1, 0x1, 2},              /* sibling of a busy thread: a fully idle core first */
    {3, 0x1, 3},              /* own CPU in a fully idle core */
    {1, 0x5, 1},              /* no fully idle core: own idle CPU */
    {3, 0x5, 3}, {0, 0x4, 0}, /* own core idle */
};

START_TEST(test_credit2_smt_idle_core_first)
{
    const struct smt_case *c = &smt_cases[_i];
    char err[POLICY_ERRLEN] = "", name[8];
    struct sim_vcpu *x = NULL;
    struct sim s;

    ck_assert_msg(sim_init(&s, "credit2", 4, smt4, NULL, err) == 0, "%s", err);
    /* Placement is round-robin from CPU 1: add sleepers up to `home`. */
    for (unsigned int i = 0; x == NULL || x->pv->pv->cpu != c->home; i++) {
        snprintf(name, sizeof(name), "D%u", i);
        x = v0(sim_add_ok(&s, name, 1, sim_manual(), NULL));
        ck_assert_uint_lt(i, 4);
    }
    for (unsigned int cpu = 0; cpu < 4; cpu++) {
        if (c->busy & (1ULL << cpu)) {
            snprintf(name, sizeof(name), "H%u", cpu);
            add_on(&s, name, sim_busy(), 1ULL << cpu, NULL);
        }
    }
    sim_run(&s, MS(3));
    sim_wake(&s, x);
    ck_assert_int_eq(x->running_on, c->expect);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* --- 18: pull resistance -------------------------------------------------- */

struct pull_case {
    uint64_t lead; /* X's credit above the local candidate's */
    bool pulled;
};

static const struct pull_case pull_cases[] = {
    {0, false},
    {US(499), false},
    {US(500), true},
    {US(700), true},
};

/*
 * CPU 0 runs A (8 ms of credit at 2 ms), CPU 1 runs B (9 ms); X lives on
 * CPU 1 with 8 ms + lead. When CPU 0 picks, it takes X only if the lead
 * is >= 500 us; then X gets 50 us and moves to CPU 0.
 */
START_TEST(test_credit2_pull_resistance)
{
    const struct pull_case *c = &pull_cases[_i];
    struct sim s;
    struct sim_vcpu *x, *a;

    sim_start(&s, "credit2", 2, NULL);
    a = v0(add_on(&s, "A", sim_busy(), 1, NULL));
    x = v0(sim_add_ok(&s, "X", 1, sim_manual(), NULL));
    ck_assert_uint_eq(x->pv->pv->cpu, 1);
    sim_run(&s, MS(1));
    add_on(&s, "B", sim_busy(), 2, NULL);
    sim_run(&s, MS(1));
    burn(&s, x, MS(2) - c->lead);
    ck_assert_int_eq(vstat(&s, a, "credit_ns"), MS(8));
    ck_assert_int_eq(vstat(&s, x, "credit_ns"), MS(8) + c->lead);
    sim_wake(&s, x);
    pool_pick(&s.pool, 0, s.now); /* CPU 0 decides now */
    sim_run(&s, 0);
    ck_assert_int_eq(x->running_on, c->pulled ? 0 : -1);
    ck_assert_int_eq(a->running_on, c->pulled ? -1 : 0);
    ck_assert_int_eq(vstat(&s, x, "credit_ns"), MS(8) + c->lead + (c->pulled ? US(50) : 0));
    ck_assert_int_eq(vstat(&s, x, "migrations"), c->pulled);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* --- 20: sleepers keep credit ----------------------------------------------- */

/*
 * A vCPU that mostly sleeps keeps its credit and so preempts two hogs on
 * wake: wake-to-run latency stays under 1.5 ms at p99 (credit gaps and the
 * 1 ms ratelimit, not a boost FIFO).
 */
START_TEST(test_credit2_sleeper_latency)
{
    struct sim s;
    struct pool_dom *a, *b, *l;

    sim_start(&s, "credit2", 1, NULL);
    a = sim_add_ok(&s, "A", 1, sim_busy(), NULL);
    b = sim_add_ok(&s, "B", 1, sim_busy(), NULL);
    l = sim_add_ok(&s, "L", 1, sim_periodic(US(7300), US(200), MS(3)), NULL);
    sim_run(&s, MS(100));
    sim_reset_stats(&s);
    sim_run(&s, SEC(5));
    flush(&s);
    ck_assert_no_violations(&s);
    ck_assert_uint_ge(v0(l)->lat.n, 600);
    ck_assert_uint_lt(sim_percentile(&v0(l)->lat, 99), US(1500));
    ck_assert_int_gt(vstat(&s, v0(l), "credit_ns"), vstat(&s, v0(a), "credit_ns"));
    ck_assert_int_gt(vstat(&s, v0(l), "credit_ns"), vstat(&s, v0(b), "credit_ns"));
    ck_assert_share(&s, l, 200.0 / 7300, 0.002);
    ck_assert_share(&s, a, (1 - 200.0 / 7300) / 2, 0.01);
    sim_fini(&s);
}
END_TEST

/* --- yield ------------------------------------------------------------------ */

/* A yield hands the CPU to a waiter with less credit, past the ratelimit. */
START_TEST(test_credit2_yield)
{
    struct sim s;
    struct sim_vcpu *a, *b;

    sim_start(&s, "credit2", 1, NULL);
    a = v0(sim_add_ok(&s, "A", 1, sim_busy(), NULL));
    sim_run(&s, MS(2));
    ck_assert_int_eq(a->running_on, 0);
    sim_yield(&s, a); /* alone: it goes on */
    ck_assert_int_eq(a->running_on, 0);
    b = v0(sim_add_ok(&s, "B", 1, sim_manual(), NULL));
    burn(&s, b, MS(5));
    sim_wake(&s, b);
    ck_assert_int_eq(a->running_on, 0); /* more credit than B */
    sim_run(&s, US(100));
    sim_yield(&s, a);
    ck_assert_int_eq(b->running_on, 0);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* --- membership ---------------------------------------------------------------- */

/* Shares of B's vCPUs and C's vCPU since the last reset, within bounds. */
struct switch_step {
    const char *policy, *params;
    double b_min, b_max, c_min, c_max;
};

static void
ck_switch_shares(struct sim *s, struct pool_dom *b, struct pool_dom *c,
                 const struct switch_step *st)
{
    double total = sim_share(s, sim_vcpu(c, 0)), bmax = 0;

    ck_assert_msg(total >= st->c_min && total <= st->c_max, "%s: C share %.4f, want %.2f..%.2f",
                  st->policy, total, st->c_min, st->c_max);
    for (unsigned int i = 0; i < b->nr_vcpus; i++) {
        double got = sim_share(s, sim_vcpu(b, i));

        ck_assert_msg(got >= st->b_min && got <= st->b_max, "%s: B/%u share %.4f, want %.2f..%.2f",
                      st->policy, i, got, st->b_min, st->b_max);
        total += got;
        bmax = got > bmax ? got : bmax;
    }
    /* Work-conserving: both CPUs stay busy; the heavier vCPU gets more. */
    ck_assert_msg(total > 1.99, "%s: total %.4f of 2 CPUs", st->policy, total);
    if (st->c_min > st->b_max)
        ck_assert_double_gt(sim_share(s, sim_vcpu(c, 0)), bmax);
}

/*
 * Removing the running domain re-picks its CPU; then the pool switches on
 * the simulated clock credit2 -> rr -> credit2 (runqueue=cpu) -> credit ->
 * credit2, and after each switch every vCPU runs, with its weight: B has
 * three vCPUs of weight 256 and C one of 512, on 2 CPUs.
 * - credit2 (one runqueue for the socket): 0.4 each and 0.8, exactly.
 * - rr ignores weights: 0.5 each.
 * - credit2 with a runqueue per CPU balances load, not weight: two vCPUs
 *   per runqueue; C's gets 1/3 : 2/3, the other 1/2 : 1/2.
 * - credit: C is under its peak (one CPU), and Credit's fairness across
 *   CPUs is approximate (credit pool plus stealing): C gets ~0.62, each
 *   B ~0.46, at the phase exact timers lock here (passes on ticks and
 *   slice ends). Real Xen 4.17 gives C 0.70-0.78 in this shape, where its
 *   timers drift; the simulator with 50 us of lateness, averaged over
 *   start phases, 0.79 (bench/README.md): this band is that one phase's.
 */
static const struct switch_step switch_steps[] = {
    {"rr", NULL, 0.48, 0.52, 0.48, 0.52},
    {"credit2", "runqueue=cpu", 0.32, 0.52, 0.64, 0.69},
    {"credit", NULL, 0.42, 0.50, 0.55, 0.70},
    {"credit2", NULL, 0.39, 0.41, 0.78, 0.82},
};

START_TEST(test_credit2_remove_and_switch)
{
    static const struct switch_step first = {"credit2", NULL, 0.39, 0.41, 0.78, 0.82};
    char err[POLICY_ERRLEN] = "";
    struct pool_dom *a, *b, *c;
    struct sim s;

    sim_start(&s, "credit2", 2, NULL);
    a = sim_add_ok(&s, "A", 2, sim_busy(), "cap=150");
    b = sim_add_ok(&s, "B", 3, sim_busy(), NULL);
    sim_run(&s, MS(55));
    sim_dom_remove(&s, a);
    sim_reset_stats(&s);
    sim_run(&s, SEC(1));
    for (unsigned int i = 0; i < 3; i++)
        ck_assert_near(sim_share(&s, sim_vcpu(b, i)), 2.0 / 3, 0.02);
    c = sim_add_ok(&s, "C", 1, sim_busy(), "weight=512");
    sim_run(&s, MS(200));
    sim_reset_stats(&s);
    sim_run(&s, SEC(2));
    ck_switch_shares(&s, b, c, &first);
    for (size_t i = 0; i < sizeof(switch_steps) / sizeof(switch_steps[0]); i++) {
        const struct switch_step *st = &switch_steps[i];

        ck_assert_msg(sim_switch(&s, st->policy, st->params, err) == 0, "%s: %s", st->policy, err);
        ck_assert_str_eq(pool_policy_name(&s.pool), st->policy);
        sim_run(&s, MS(200));
        sim_reset_stats(&s);
        sim_run(&s, SEC(2));
        ck_switch_shares(&s, b, c, st);
        if (strcmp(st->policy, "rr") != 0) /* the weight came through every switch */
            ck_assert_int_eq(param(&s, c, "weight").ival, 512);
    }
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* --- parameters ---------------------------------------------------------------- */

struct bad_case {
    bool dom;
    const char *params;
    const char *word; /* the message names it */
};

static const struct bad_case bad_cases[] = {
    {false, "ratelimit_us=50", "ratelimit_us"},
    {false, "inflight=2", "inflight"},
    {false, "inflight=-1", "inflight"},
    {false, "ratelimit_us=99", "ratelimit_us"},
    {false, "ratelimit_us=500001", "ratelimit_us"},
    {false, "ratelimit_us=-1", "ratelimit_us"},
    {false, "ratelimit_us=1ms", "ratelimit_us"},
    {false, "runqueue=numa", "runqueue"},
    {false, "runqueue=node", "runqueue"}, /* a live change */
    {false, "ratelimit_us=200 runqueue=cpu", "runqueue"},
    {false, "tslice_ms=5", "tslice_ms"},
    {false, "weight=300", "weight"},
    {true, "weight=0", "weight"},
    {true, "weight=65536", "weight"},
    {true, "weight=abc", "weight"},
    {true, "cap=201", "cap"},
    {true, "weight=512 cap=201", "cap"},
    {true, "cap=-1", "cap"},
    {true, "cap=65536", "cap"},
    {true, "ratelimit_us=100", "ratelimit_us"},
};

/* Bad values are refused with a message naming the key; nothing changes. */
START_TEST(test_credit2_params_refused)
{
    const struct bad_case *c = &bad_cases[_i];
    char err[POLICY_ERRLEN] = "";
    struct pool_dom *d;
    struct sim s;

    sim_start(&s, "credit2", 1, "ratelimit_us=300");
    d = sim_add_ok(&s, "A", 2, sim_busy(), "weight=128 cap=120");
    sim_run(&s, MS(30));
    ck_assert_int_eq(sim_set(&s, c->dom ? d : NULL, c->params, err), -EINVAL);
    ck_assert_msg(strstr(err, c->word) != NULL, "'%s': message '%s'", c->params, err);
    ck_assert_int_eq(param(&s, NULL, "ratelimit_us").ival, 300);
    ck_assert_str_eq(param(&s, NULL, "runqueue").sval, "socket");
    ck_assert_int_eq(param(&s, d, "weight").ival, 128);
    ck_assert_int_eq(param(&s, d, "cap").ival, 120);
    ck_assert_int_eq(vstat(&s, sim_vcpu(d, 1), "weight"), 128);
    sim_run(&s, MS(30));
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

struct init_case {
    const char *params;
    int ret;
};

static const struct init_case init_cases[] = {
    {"ratelimit_us=0", 0},         {"ratelimit_us=100", 0},     {"ratelimit_us=500000", 0},
    {"runqueue=cpu", 0},           {"runqueue=core", 0},        {"runqueue=node", 0},
    {"runqueue=all", 0},           {"ratelimit_us=1", -EINVAL}, {"runqueue=", -EINVAL},
    {"runqueue=sockets", -EINVAL}, {"weight=256", -EINVAL},
};

START_TEST(test_credit2_params_init)
{
    const struct init_case *c = &init_cases[_i];
    char err[POLICY_ERRLEN] = "";
    struct sim s;
    int r = sim_init(&s, "credit2", 2, NULL, c->params, err);

    ck_assert_msg(r == c->ret, "'%s': %d (%s)", c->params, r, err);
    if (r == 0) {
        sim_add_ok(&s, "A", 3, sim_busy(), NULL);
        sim_run(&s, MS(50));
        ck_assert_no_violations(&s);
        sim_fini(&s);
    }
}
END_TEST

/* Good values apply live: ratelimit, same runqueue, weight, cap. */
START_TEST(test_credit2_params_live)
{
    char err[POLICY_ERRLEN] = "";
    struct pool_dom *a, *b, *c;
    struct sim s;

    sim_start(&s, "credit2", 1, NULL);
    a = sim_add_ok(&s, "A", 1, sim_busy(), NULL);
    b = sim_add_ok(&s, "B", 1, sim_busy(), NULL);
    ck_assert_int_eq(sim_set(&s, NULL, "ratelimit_us=2000 runqueue=socket", err), 0);
    ck_assert_int_eq(param(&s, NULL, "ratelimit_us").ival, 2000);
    ck_assert_int_eq(sim_set(&s, b, "weight=768", err), 0);
    ck_assert_int_eq(vstat(&s, v0(b), "weight"), 768);
    sim_run(&s, MS(100));
    sim_reset_stats(&s);
    sim_run(&s, SEC(2));
    ck_assert_share(&s, a, 0.25, 0.01);
    ck_assert_share(&s, b, 0.75, 0.01);
    ck_assert_near(sim_mean(&v0(a)->lengths) / 1e6, 2.0, 0.2); /* ratelimit 2 ms */
    c = sim_add_ok(&s, "C", 3, sim_manual(), "cap=300");
    ck_assert_int_eq(param(&s, c, "cap").ival, 300);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* Long simulations under ASan on a busy 2-CPU machine outlast Check's 4 s. */
#define CREDIT2_TEST_TIMEOUT_S 120

static Suite *
credit2_suite(void)
{
    Suite *s = suite_create("credit2");
    TCase *tc = tcase_create("credit");
    TCase *tw = tcase_create("wake");
    TCase *tp = tcase_create("params");

    tcase_set_timeout(tc, CREDIT2_TEST_TIMEOUT_S);
    tcase_set_timeout(tw, CREDIT2_TEST_TIMEOUT_S);
    tcase_set_timeout(tp, CREDIT2_TEST_TIMEOUT_S);
    tcase_add_loop_test(tc, test_credit2_defaults, 0, sizeof(defaults) / sizeof(defaults[0]));
    tcase_add_test(tc, test_credit2_reset_exact);
    tcase_add_test(tc, test_credit2_max_weight_sleeper);
    tcase_add_test(tc, test_credit2_reset_from_floor);
    tcase_add_test(tc, test_credit2_reset_when_all_nonpositive);
    tcase_add_test(tc, test_credit2_reset_waits_for_head);
    tcase_add_loop_test(tc, test_credit2_runq_fifo, 0, 2);
    tcase_add_loop_test(tc, test_credit2_runq_credit_order, 0, 3);
    tcase_add_test(tc, test_credit2_load_decay);
    tcase_add_test(tc, test_credit2_weights_256_512);
    tcase_add_test(tc, test_credit2_weight_per_vcpu);
    tcase_add_test(tc, test_credit2_two_hogs_switch_1ms);
    tcase_add_test(tc, test_credit2_two_hogs_inflight_off_10ms);
    tcase_add_test(tc, test_credit2_min_timer);
    tcase_add_loop_test(tc, test_credit2_slice_is_the_gap, 0,
                        sizeof(slice_cases) / sizeof(slice_cases[0]));
    suite_add_tcase(s, tc);
    tcase_add_loop_test(tw, test_credit2_wake_preempt, 0,
                        sizeof(wake_cases) / sizeof(wake_cases[0]));
    tcase_add_loop_test(tw, test_credit2_wake_penalty_other_cpu, 0,
                        sizeof(penalty_cases) / sizeof(penalty_cases[0]));
    tcase_add_test(tw, test_credit2_idle_preferred);
    tcase_add_loop_test(tw, test_credit2_smt_idle_core_first, 0,
                        sizeof(smt_cases) / sizeof(smt_cases[0]));
    tcase_add_loop_test(tw, test_credit2_pull_resistance, 0,
                        sizeof(pull_cases) / sizeof(pull_cases[0]));
    tcase_add_test(tw, test_credit2_sleeper_latency);
    tcase_add_test(tw, test_credit2_yield);
    tcase_add_test(tw, test_credit2_remove_and_switch);
    suite_add_tcase(s, tw);
    tcase_add_loop_test(tp, test_credit2_params_refused, 0,
                        sizeof(bad_cases) / sizeof(bad_cases[0]));
    tcase_add_loop_test(tp, test_credit2_params_init, 0,
                        sizeof(init_cases) / sizeof(init_cases[0]));
    tcase_add_test(tp, test_credit2_params_live);
    suite_add_tcase(s, tp);
    return s;
}

int
main(void)
{
    return run_suite(credit2_suite());
}
