/* SPDX-License-Identifier: ISC */
/*
 * test_bgclass.c - the background class layer (bgclass.c) on the
 * simulated clock, under every policy: the alpha spacing, batch mode
 * after exactly beta and left on the first foreground wake, foreground
 * wakes preempting at once, gaps filled, parameters refused cleanly.
 */
#include <string.h>

#include "testutil.h"

/* Every policy, with pool parameters that suit a one-domain foreground. */
static const struct {
    const char *policy, *params;
} pols[] = {
    {"rr", NULL},
    {"table", "table=F slot_us=1000"},
    {"credit", NULL},
    {"credit2", NULL},
};
#define NPOLS ((int)(sizeof(pols) / sizeof(pols[0])))

#define ALPHA MS(200)
#define BETA  MS(500)
#define SLICE MS(1)

static void
start(struct sim *s, int i, unsigned int ncpu, const char *extra)
{
    char params[256];

    snprintf(params, sizeof(params), "%s %s", pols[i].params ? pols[i].params : "",
             extra ? extra : "");
    sim_start(s, pols[i].policy, ncpu, params);
}

static const char *
mode_of(struct sim *s, struct pool_dom *d, unsigned int i)
{
    const char *m = bgclass_vcpu_mode(&s->pool, d->vcpus[i]);

    return m ? m : "-";
}

/* The recorded runs of sim vCPU `idx`, from index *from on; false at the end. */
static bool
next_run(const struct sim *s, int idx, size_t *from, const struct sim_seg **out)
{
    for (; *from < s->nr_seg; (*from)++) {
        if (s->timeline[*from].vcpu == idx) {
            *out = &s->timeline[(*from)++];
            return true;
        }
    }
    return false;
}

/*
 * A foreground hog never leaves the CPU: the held background hog gets
 * one slice, exactly `bg_slice_us` long, every alpha exactly, the first
 * alpha - slice after it began waiting; nothing else.
 */
START_TEST(test_alpha_spacing_exact)
{
    struct sim s;
    struct pool_dom *f, *b;
    const struct sim_seg *seg;
    uint64_t prev = 0;
    size_t at = 0;
    int n = 0;

    start(&s, _i, 1, NULL);
    s.record = true;
    f = sim_add_ok(&s, "F", 1, sim_busy(), NULL);
    b = sim_add_ok(&s, "B", 1, sim_busy(), "class=background");
    sim_run(&s, MS(1100));
    ck_assert_no_violations(&s);
    while (next_run(&s, 1, &at, &seg)) {
        ck_assert_msg(seg->end - seg->start == SLICE, "%s: background run of %llu ns",
                      pols[_i].policy, (unsigned long long)(seg->end - seg->start));
        if (n == 0)
            ck_assert_uint_eq(seg->start, ALPHA - SLICE);
        else
            ck_assert_msg(seg->start - prev == ALPHA, "%s: release %d after %llu ns",
                          pols[_i].policy, n, (unsigned long long)(seg->start - prev));
        prev = seg->start;
        n++;
    }
    ck_assert_int_eq(n, 5); /* 199, 399, 599, 799, 999 ms */
    ck_assert_uint_eq(s.pool.cls.stats.alpha_slices, 5);
    ck_assert_uint_eq(s.pool.cls.stats.batch_enters, 0);
    ck_assert_str_eq(mode_of(&s, b, 0), "normal");
    ck_assert_uint_eq(sim_vcpu(f, 0)->run_ns + sim_vcpu(b, 0)->run_ns, MS(1100));
    sim_fini(&s);
}
END_TEST

/*
 * Gaps: a periodic foreground sleeper (every 10 ms, 1 ms of CPU) runs at
 * once on each wake; the two background hogs get all the rest, evenly
 * (a gap each in turn), and the CPU never enters batch mode (10 ms of
 * idleness < beta).
 */
START_TEST(test_gaps_go_to_background)
{
    struct sim s;
    struct pool_dom *f, *b;
    struct sim_vcpu *fv;
    double b0, b1;

    start(&s, _i, 1, NULL);
    f = sim_add_ok(&s, "F", 1, sim_periodic(MS(10), MS(1), 0), NULL);
    b = sim_add_ok(&s, "B", 2, sim_busy(), "class=background");
    sim_run(&s, MS(100));
    sim_reset_stats(&s);
    sim_run(&s, SEC(2));
    ck_assert_no_violations(&s);
    fv = sim_vcpu(f, 0);
    b0 = sim_share(&s, sim_vcpu(b, 0));
    b1 = sim_share(&s, sim_vcpu(b, 1));
    ck_assert_share(&s, f, 0.1, 0.001);
    ck_assert_uint_eq(sim_max(&fv->lat), 0);
    ck_assert_msg(b0 + b1 > 0.899, "%s: background %.4f", pols[_i].policy, b0 + b1);
    ck_assert_msg(b0 > 0.44 && b1 > 0.44, "%s: %.4f / %.4f", pols[_i].policy, b0, b1);
    ck_assert_uint_eq(s.pool.cls.stats.batch_enters, 0);
    ck_assert_uint_eq(s.pool.cls.stats.alpha_slices, 0);
    ck_assert_uint_eq(s.pool.cls.stats.gap_slices, 210); /* one turn per 9 ms gap, 2.1 s */
    sim_fini(&s);
}
END_TEST

/*
 * Batch mode comes exactly beta after the last foreground vCPU of the
 * CPU slept, and ends on the first foreground wake, which runs at once.
 */
START_TEST(test_batch_after_exactly_beta)
{
    struct sim s;
    struct pool_dom *f, *b;
    struct sim_vcpu *fv;
    uint64_t t1;

    start(&s, _i, 1, NULL);
    f = sim_add_ok(&s, "F", 1, sim_manual(), NULL);
    b = sim_add_ok(&s, "B", 2, sim_busy(), "class=background");
    fv = sim_vcpu(f, 0);
    sim_wake(&s, fv);
    sim_run(&s, MS(50));
    ck_assert_int_eq(fv->running_on, 0);
    sim_sleep(&s, fv);
    t1 = s.now;
    sim_run(&s, BETA - 1);
    ck_assert_uint_eq(s.now, t1 + BETA - 1);
    ck_assert_uint_eq(s.pool.cls.stats.batch_enters, 0);
    ck_assert_str_eq(mode_of(&s, b, 0), "normal");
    ck_assert(b->vcpus[0]->cls.held && !b->vcpus[0]->pv->runnable);
    sim_run(&s, 1);
    ck_assert_uint_eq(s.pool.cls.stats.batch_enters, 1);
    ck_assert_str_eq(mode_of(&s, b, 1), "batch");
    ck_assert(!b->vcpus[0]->cls.held && b->vcpus[0]->pv->runnable);
    sim_run(&s, MS(300));
    ck_assert_uint_eq(s.pool.cls.stats.batch_exits, 0);
    fv->lat.n = 0;
    sim_wake(&s, fv);
    ck_assert_uint_eq(s.pool.cls.stats.batch_exits, 1);
    ck_assert_str_eq(mode_of(&s, b, 0), "normal");
    ck_assert_int_eq(fv->running_on, 0);
    ck_assert_uint_eq(fv->lat.n, 1);
    ck_assert_uint_eq(sim_max(&fv->lat), 0);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * The foreground wake preempts whatever the policy would say. Each
 * policy is set so that, alone, it would let the running hog go on: rr
 * with 20 ms slices (a wake never shortens a slice), Credit without
 * BOOST (UNDER does not preempt UNDER), Credit2 with a 20 ms ratelimit
 * (two hogs: each run starts afresh). The hogs are foreground first (the
 * waker waits), then background in batch mode (it runs at once). Table
 * never takes a slot from its owner, so it has no contrast here: with
 * table=F the background hog runs in F's idle slots, and F's wake
 * takes its slot back at once.
 */
static const struct {
    const char *params;
    unsigned int hogs;
} stubborn[] = {
    {"slice_us=20000", 1},
    {"table=F slot_us=20000", 1},
    {"boost=off ratelimit_us=20000 tslice_ms=30", 1},
    {"ratelimit_us=20000", 2},
};

static uint64_t
wake_latency(int i, const char *hog_params)
{
    struct sim s;
    struct sim_vcpu *fv;
    uint64_t lat;

    sim_start(&s, pols[i].policy, 1, stubborn[i].params);
    fv = sim_vcpu(sim_add_ok(&s, "F", 1, sim_manual(), NULL), 0);
    sim_add_ok(&s, "H", stubborn[i].hogs, sim_busy(), hog_params);
    sim_run(&s, SEC(1) + MS(2)); /* batch mode by now, for background hogs */
    fv->lat.n = 0;
    sim_wake(&s, fv);
    sim_run(&s, MS(50));
    ck_assert_no_violations(&s);
    ck_assert_uint_eq(fv->lat.n, 1);
    lat = fv->lat.v[0];
    sim_fini(&s);
    return lat;
}

START_TEST(test_batch_wake_preempts_at_once)
{
    uint64_t fg = wake_latency(_i, NULL), bg = wake_latency(_i, "class=background");

    ck_assert_msg(fg >= MS(1) || strcmp(pols[_i].policy, "table") == 0,
                  "%s: the policy itself preempted (%llu ns): a weak test", pols[_i].policy,
                  (unsigned long long)fg);
    ck_assert_msg(bg == 0, "%s: foreground wake waited %llu ns in batch mode", pols[_i].policy,
                  (unsigned long long)bg);
}
END_TEST

/*
 * After beta without foreground demand the policy schedules the
 * background hogs with its own slices: all of the CPU, evenly, with far
 * fewer switches than the 1 ms rotation of gaps.
 */
START_TEST(test_batch_work_conserving)
{
    struct sim s;
    struct pool_dom *f, *b;
    double b0, b1;

    start(&s, _i, 1, NULL);
    f = sim_add_ok(&s, "F", 1, sim_periodic(MS(10), MS(1), 0), NULL);
    b = sim_add_ok(&s, "B", 2, sim_busy(), "class=background");
    sim_run(&s, MS(500));
    sim_set_demand(&s, sim_vcpu(f, 0), (struct sim_demand){.kind = SIM_IDLE});
    sim_run(&s, BETA + MS(10));
    ck_assert_uint_eq(s.pool.cls.stats.batch_enters, 1);
    sim_reset_stats(&s);
    sim_run(&s, SEC(2));
    ck_assert_no_violations(&s);
    b0 = sim_share(&s, sim_vcpu(b, 0));
    b1 = sim_share(&s, sim_vcpu(b, 1));
    ck_assert_msg(b0 + b1 > 0.999, "%s: background %.4f", pols[_i].policy, b0 + b1);
    if (strcmp(pols[_i].policy, "table") != 0) /* table=F idles: the kernel runs one */
        ck_assert_msg(b0 > 0.45 && b1 > 0.45, "%s: %.4f / %.4f", pols[_i].policy, b0, b1);
    if (strcmp(pols[_i].policy, "credit") == 0) /* 30 ms slices, not 1 ms rotations */
        ck_assert_uint_lt(s.cpu[0].switches, 100);
    ck_assert_str_eq(mode_of(&s, b, 0), "batch");
    sim_fini(&s);
}
END_TEST

/*
 * A live policy switch with background domains in normal and batch
 * mode: no violation, every background vCPU held again, beta counted
 * from the switch; and class changes both ways, live.
 */
START_TEST(test_switch_and_class_change)
{
    static const char *const order[] = {"credit", "credit2", "rr", "table", "credit"};
    char err[POLICY_ERRLEN];
    struct sim s;
    struct pool_dom *f, *b, *c;

    sim_start(&s, "rr", 2, NULL);
    f = sim_add_ok(&s, "F", 1, sim_periodic(MS(10), MS(1), 0), NULL);
    b = sim_add_ok(&s, "B", 2, sim_busy(), "class=background");
    c = sim_add_ok(&s, "C", 1, sim_duty(MS(3), MS(7)), NULL);
    for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
        sim_run(&s, MS(700)); /* a CPU without foreground work is in batch mode */
        ck_assert_msg(
            sim_switch(&s, order[k], strcmp(order[k], "table") ? NULL : "table=F,C,B", err) == 0,
            "%s: %s", order[k], err);
        for (unsigned int i = 0; i < 2; i++)
            ck_assert(b->vcpus[i]->cls.held && strcmp(mode_of(&s, b, i), "normal") == 0);
        ck_assert_no_violations(&s);
    }
    ck_assert_int_eq(sim_set(&s, c, "class=background", err), 0);
    sim_run(&s, MS(300));
    ck_assert(c->background && c->vcpus[0]->cls.bg);
    ck_assert_int_eq(sim_set(&s, b, "class=foreground", err), 0);
    ck_assert(!b->background && !b->vcpus[0]->cls.held && b->vcpus[0]->pv->runnable);
    sim_run(&s, MS(300));
    ck_assert_int_eq(sim_set(&s, c, "class=foreground", err), 0);
    ck_assert_uint_eq(s.pool.cls.nr_bg_doms, 0);
    sim_reset_stats(&s);
    sim_run(&s, SEC(1));
    /* Foreground again: the two hogs get what the sleeper and C leave. */
    ck_assert(sim_share(&s, sim_vcpu(b, 0)) + sim_share(&s, sim_vcpu(b, 1)) > 1.55);
    ck_assert_no_violations(&s);
    (void)f;
    sim_fini(&s);
}
END_TEST

/*
 * Two CPUs under rr (fixed placement), Credit (work stealing) and
 * Credit2 (a shared runqueue; table never moves a vCPU, so it is not here):
 * the CPU without foreground work goes to batch mode and the policy
 * moves background vCPUs as it likes; one it moves to the CPU of the
 * sleeper is held there at once; nothing breaks the contract, and both
 * CPUs stay busy.
 */
START_TEST(test_two_cpus_stealing)
{
    struct sim s;
    struct pool_dom *f, *b;
    double total = 0;

    if (strcmp(pols[_i].policy, "table") == 0)
        return;
    start(&s, _i, 2, NULL);
    f = sim_add_ok(&s, "F", 1, sim_periodic(MS(10), MS(1), 0), NULL);
    b = sim_add_ok(&s, "B", 3, sim_busy(), "class=background");
    sim_run(&s, SEC(1));
    sim_reset_stats(&s);
    sim_run(&s, SEC(3));
    ck_assert_no_violations(&s);
    for (unsigned int i = 0; i < 3; i++)
        total += sim_share(&s, sim_vcpu(b, i));
    ck_assert_share(&s, f, 0.1, 0.002);
    ck_assert_uint_eq(sim_max(&sim_vcpu(f, 0)->lat), 0);
    ck_assert_msg(total > 1.89, "%s: background %.3f of 2 CPUs", pols[_i].policy, total);
    sim_fini(&s);
}
END_TEST

/*
 * A capped foreground hog is parked part of the time: the layer gives
 * that time to the background hog (work conservation a cap alone throws
 * away), without ever entering batch mode (capped demand is demand).
 */
START_TEST(test_capped_foreground_leaves_gaps)
{
    static const char *const pol[] = {"credit", "credit2"};
    struct sim s;
    struct pool_dom *f, *b;

    sim_start(&s, pol[_i], 1, NULL);
    f = sim_add_ok(&s, "F", 1, sim_busy(), "cap=50");
    b = sim_add_ok(&s, "B", 1, sim_busy(), "class=background");
    sim_run(&s, SEC(1));
    sim_reset_stats(&s);
    sim_run(&s, SEC(3));
    ck_assert_no_violations(&s);
    ck_assert_share(&s, f, 0.5, 0.03);
    ck_assert_share(&s, b, 0.5, 0.03);
    ck_assert_uint_eq(s.pool.cls.stats.batch_enters, 0);
    sim_fini(&s);
}
END_TEST

/*
 * Batch mode is the policy's: Credit's weights split two background
 * domains 2:1 there (no foreground domain at all: batch beta after the
 * first background domain arrived).
 */
START_TEST(test_batch_uses_policy_weights)
{
    struct sim s;
    struct pool_dom *a, *b;

    sim_start(&s, "credit", 1, NULL);
    a = sim_add_ok(&s, "A", 1, sim_busy(), "class=background weight=512");
    b = sim_add_ok(&s, "B", 1, sim_busy(), "class=background weight=256");
    sim_run(&s, BETA - 1);
    ck_assert_uint_eq(s.pool.cls.stats.batch_enters, 0);
    sim_run(&s, 1);
    ck_assert_uint_eq(s.pool.cls.stats.batch_enters, 1);
    sim_run(&s, SEC(1));
    sim_reset_stats(&s);
    sim_run(&s, SEC(6));
    ck_assert_share(&s, a, 2.0 / 3, 0.02);
    ck_assert_share(&s, b, 1.0 / 3, 0.02);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * An alpha slice pauses the policy's decision: under rr with 30 ms
 * slices the foreground hog that was running resumes after it, for the
 * rest of the same slice.
 */
START_TEST(test_alpha_pauses_policy_decision)
{
    struct sim s;
    const struct sim_seg *seg;
    size_t at = 0;

    sim_start(&s, "rr", 1, "slice_us=30000");
    s.record = true;
    sim_add_ok(&s, "F", 1, sim_busy(), NULL);
    sim_add_ok(&s, "G", 1, sim_busy(), NULL);
    sim_add_ok(&s, "B", 1, sim_busy(), "class=background");
    sim_run(&s, MS(400));
    ck_assert_no_violations(&s);
    /* F 0-30, G 30-60, ... F 180-199 | B 199-200 | F 200-210, G 210-240 ... */
    ck_assert(next_run(&s, 2, &at, &seg));
    ck_assert_uint_eq(seg->start, MS(199));
    ck_assert_uint_eq(seg->end, MS(200));
    ck_assert(next_run(&s, 0, &at, &seg));
    ck_assert_uint_eq(seg->start, MS(200));
    ck_assert_uint_eq(seg->end, MS(210));
    ck_assert(next_run(&s, 1, &at, &seg));
    ck_assert_uint_eq(seg->start, MS(210));
    ck_assert_uint_eq(seg->end, MS(240));
    sim_fini(&s);
}
END_TEST

/* Bad values: a clear error naming the key, and nothing changes. */
START_TEST(test_bad_parameters_change_nothing)
{
    static const struct {
        const char *params, *words;
        bool dom;
    } bad[] = {
        {"bg_alpha_ms=0", "bg_alpha_ms", false},
        {"bg_beta_ms=-5", "bg_beta_ms", false},
        {"bg_slice_us=99", "bg_slice_us", false},
        {"bg_slice_us=200000", "not shorter than bg_alpha_ms 200", false},
        {"bg_alpha_ms=1 bg_slice_us=1000", "not shorter than bg_alpha_ms 1", false},
        {"bg_alpha_ms=100 slice_us=0", "slice_us", false}, /* all or nothing */
        {"class=idle", "class: 'idle' is not foreground or background", true},
        {"class=background class=background", "given twice", true},
        {"class=background weight=0", "weight", true},
    };
    char err[POLICY_ERRLEN];
    struct sim s;
    struct pool_dom *d;

    sim_start(&s, "rr", 1, "bg_beta_ms=700");
    d = sim_add_ok(&s, "D", 1, sim_busy(), NULL);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        ck_assert_int_eq(sim_set(&s, bad[i].dom ? d : NULL, bad[i].params, err), -EINVAL);
        ck_assert_msg(strstr(err, bad[i].words) != NULL, "%s: %s", bad[i].params, err);
        ck_assert_uint_eq(s.pool.cls.alpha_ns, MS(200));
        ck_assert_uint_eq(s.pool.cls.beta_ns, MS(700));
        ck_assert_uint_eq(s.pool.cls.slice_ns, MS(1));
        ck_assert(!d->background);
        ck_assert_uint_eq(s.pool.cls.nr_bg_doms, 0);
    }
    ck_assert_int_eq(sim_dom_add(&s, "E", 1, sim_busy(), 0, "class=nope", err) == NULL, 1);
    ck_assert_ptr_null(pool_dom_find(&s.pool, "E"));
    ck_assert_int_eq(
        sim_init(&(struct sim){0}, "credit", 1, NULL, "bg_alpha_ms=2 bg_slice_us=5000", err),
        -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "bg_slice_us"));
    /* Good values go through, with the policy's in the same request. */
    ck_assert_int_eq(sim_set(&s, NULL, "bg_alpha_ms=100 bg_slice_us=500 slice_us=2000", err), 0);
    ck_assert_uint_eq(s.pool.cls.alpha_ns, MS(100));
    ck_assert_uint_eq(s.pool.cls.slice_ns, US(500));
    ck_assert_int_eq(sim_set(&s, d, "class=background", err), 0);
    ck_assert(d->background);
    sim_fini(&s);
}
END_TEST

/* The layer's parameters, shown with the policy's; a domain's class too. */
static void
put_int(struct policy_sink *sk, const char *key, int64_t val)
{
    char *buf = sk->ctx;

    snprintf(buf + strlen(buf), 256 - strlen(buf), "%s=%lld ", key, (long long)val);
}

static void
put_str(struct policy_sink *sk, const char *key, const char *val)
{
    char *buf = sk->ctx;

    snprintf(buf + strlen(buf), 256 - strlen(buf), "%s=%s ", key, val);
}

START_TEST(test_params_shown)
{
    char buf[256] = "";
    struct policy_sink sk = {put_int, put_str, buf};
    struct sim s;
    struct pool_dom *b, *f;

    sim_start(&s, "credit2", 1, "bg_alpha_ms=300 bg_beta_ms=5000 bg_slice_us=2000");
    f = sim_add_ok(&s, "F", 1, sim_busy(), "class=foreground");
    b = sim_add_ok(&s, "B", 1, sim_busy(), "class=background weight=300");
    pool_get_params(&s.pool, NULL, &sk);
    ck_assert_str_eq(buf,
                     "ratelimit_us=1000 runqueue=socket inflight=1 bg_alpha_ms=300 bg_beta_ms=5000 "
                     "bg_slice_us=2000 ");
    buf[0] = '\0';
    pool_get_params(&s.pool, b, &sk);
    ck_assert_str_eq(buf, "weight=300 cap=0 class=background ");
    buf[0] = '\0';
    pool_get_params(&s.pool, f, &sk);
    ck_assert_str_eq(buf, "weight=256 cap=0 ");
    ck_assert_ptr_null(bgclass_vcpu_mode(&s.pool, f->vcpus[0]));
    sim_fini(&s);
}
END_TEST

/*
 * The layer leaves with the last background domain: a pool that had one
 * makes exactly the decisions of a pool that never had one.
 */
START_TEST(test_inactive_after_last_leaves)
{
    struct sim a, b;
    struct pool_dom *x;

    start(&a, _i, 2, NULL);
    start(&b, _i, 2, NULL);
    a.record = b.record = true;
    sim_add_ok(&a, "F", 2, sim_duty(MS(3), MS(4)), NULL);
    sim_add_ok(&b, "F", 2, sim_duty(MS(3), MS(4)), NULL);
    x = sim_add_ok(&b, "X", 1, sim_busy(), "class=background");
    sim_dom_remove(&b, x);
    ck_assert(!bgclass_active(&b.pool.cls));
    sim_run(&a, SEC(1));
    sim_run(&b, SEC(1));
    ck_assert_uint_eq(a.nr_seg, b.nr_seg);
    for (size_t i = 0; i < a.nr_seg; i++)
        ck_assert(memcmp(&a.timeline[i], &b.timeline[i], sizeof(a.timeline[i])) == 0);
    sim_fini(&a);
    sim_fini(&b);
}
END_TEST

/* A move to another pool takes the class along, unless it is given. */
START_TEST(test_move_carries_class)
{
    static const struct kv fg[] = {{"class", "foreground"}}, bad[] = {{"class", "x"}};
    char err[POLICY_ERRLEN];
    struct kv out[VS_PARAMS_MAX];
    struct sim s;
    struct pool_dom *b;
    int n;

    sim_start(&s, "credit", 1, NULL);
    b = sim_add_ok(&s, "B", 1, sim_busy(), "weight=300 class=background");
    n = pool_dom_params_for(b, policy_find("rr"), NULL, 0, out, err);
    ck_assert_int_eq(n, 1);
    ck_assert_str_eq(out[0].key, "class");
    ck_assert_str_eq(out[0].val, "background");
    n = pool_dom_params_for(b, policy_find("credit2"), fg, 1, out, err);
    ck_assert_int_eq(n, 2);
    ck_assert_str_eq(out[0].key, "weight");
    ck_assert_str_eq(out[1].val, "foreground");
    ck_assert_int_eq(pool_dom_params_for(b, policy_find("credit2"), bad, 1, out, err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "class: 'x'"));
    sim_fini(&s);
}
END_TEST

/* --- random scenarios: the layer's invariants after every step --- */

/* Recount everything from the vCPUs and compare with the layer's state. */
static void
check_invariants(struct sim *s, const char *when)
{
    struct pool *p = &s->pool;
    struct pool_dom *d;
    unsigned int demand[CPUSET_MAX] = {0}, ready[CPUSET_MAX] = {0}, held[CPUSET_MAX] = {0};
    unsigned int nbg = 0;

    TAILQ_FOREACH(d, &p->doms, link)
    {
        nbg += d->background;
        for (unsigned int i = 0; i < d->nr_vcpus; i++) {
            struct pool_vcpu *v = d->vcpus[i];

            ck_assert_msg(v->cls.bg == d->background, "%s: %s/%u class", when, d->name, i);
            if (!bgclass_active(&p->cls)) {
                ck_assert_msg(!v->cls.held, "%s: held while inactive", when);
                ck_assert(v->pv->runnable == v->runnable);
                continue;
            }
            if (!v->cls.bg) {
                ck_assert(v->pv->runnable == v->runnable);
                demand[v->pv->cpu] += v->runnable;
                ready[v->pv->cpu] += v->runnable && !v->pv->parked;
            } else if (v->cls.held) {
                ck_assert_msg(v->runnable && !v->pv->runnable, "%s: held %s/%u", when, d->name, i);
                ck_assert_uint_eq(v->cls.home, v->pv->cpu);
                ck_assert_msg(p->cls.cpu[v->pv->cpu].mode == BGCLASS_NORMAL, "%s: held in batch",
                              when);
                held[v->pv->cpu]++;
            } else {
                ck_assert(v->pv->runnable == v->runnable);
                ck_assert_msg(!v->runnable || p->cls.cpu[v->pv->cpu].mode == BGCLASS_BATCH,
                              "%s: %s/%u visible on a normal CPU", when, d->name, i);
            }
        }
    }
    ck_assert_uint_eq(nbg, p->cls.nr_bg_doms);
    for (unsigned int c = 0; bgclass_active(&p->cls) && c < p->nr_cpus; c++) {
        const struct bgclass_cpu *lc = &p->cls.cpu[c];
        const struct pool_vcpu *v;
        unsigned int n = 0;

        TAILQ_FOREACH(v, &lc->held, cls.link)
        n++;
        ck_assert_msg(lc->fg_demand == demand[c] && lc->fg_ready == ready[c],
                      "%s: cpu %u demand %u/%u ready %u/%u", when, c, lc->fg_demand, demand[c],
                      lc->fg_ready, ready[c]);
        ck_assert_msg(lc->nr_held == held[c] && n == held[c], "%s: cpu %u held %u/%u/%u", when, c,
                      lc->nr_held, n, held[c]);
        ck_assert_msg(lc->mode == BGCLASS_NORMAL || lc->fg_demand == 0,
                      "%s: cpu %u in batch mode with foreground demand", when, c);
    }
}

static uint32_t
rnd(uint32_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

START_TEST(test_random_scenarios)
{
    static const char *const names[] = {"a", "b", "c", "d", "e", "f"};
    char err[POLICY_ERRLEN], when[64];
    uint32_t x = 0x9e3779b9u * (uint32_t)(_i + 1);
    struct sim s;
    int p = (int)(rnd(&x) % NPOLS);
    unsigned int ncpu = 1 + rnd(&x) % 3;

    sim_start(&s, pols[p].policy, ncpu, strcmp(pols[p].policy, "table") ? NULL : "table=a,b,c,d");
    for (int step = 0; step < 120; step++) {
        const char *name = names[rnd(&x) % 6];
        struct pool_dom *d = pool_dom_find(&s.pool, name);
        unsigned int what = rnd(&x) % 10;

        snprintf(when, sizeof(when), "seed %d step %d op %u", _i, step, what);
        if (d == NULL && what < 6) {
            struct sim_demand dem[] = {sim_busy(), sim_duty(MS(2), MS(5)),
                                       sim_periodic(MS(10), MS(1), MS(rnd(&x) % 10)), sim_manual()};
            const char *cls = rnd(&x) % 2 ? "class=background" : NULL;

            sim_add_ok(&s, name, 1 + rnd(&x) % 3, dem[rnd(&x) % 4], cls);
        } else if (d != NULL && what == 0) {
            sim_dom_remove(&s, d);
        } else if (d != NULL && what <= 3) {
            ck_assert_int_eq(
                sim_set(&s, d, rnd(&x) % 2 ? "class=background" : "class=foreground", err), 0);
        } else if (d != NULL && what == 4) {
            struct sim_vcpu *v = sim_vcpu(d, rnd(&x) % d->nr_vcpus);

            if (v->demand.kind == SIM_MANUAL)
                (rnd(&x) % 2 ? sim_wake : sim_sleep)(&s, v);
        } else if (what == 5) {
            int q = (int)(rnd(&x) % NPOLS);

            ck_assert_int_eq(sim_switch(&s, pols[q].policy,
                                        strcmp(pols[q].policy, "table") ? NULL : "table=a,b,c,d",
                                        err),
                             0);
        } else if (d != NULL && what == 7) {
            if (rnd(&x) % 2 && d->nr_vcpus < 4)
                ck_assert_ptr_nonnull(sim_vcpu_plug(&s, d, sim_busy(), err));
            else if (d->nr_vcpus > 1)
                ck_assert_int_eq(sim_vcpu_unplug(&s, sim_vcpu(d, rnd(&x) % d->nr_vcpus)), 0);
        } else if (what == 6) {
            ck_assert_int_eq(sim_set(&s, NULL,
                                     rnd(&x) % 2 ? "bg_alpha_ms=20 bg_beta_ms=30 bg_slice_us=500"
                                                 : "bg_alpha_ms=200 bg_beta_ms=500",
                                     err),
                             0);
        }
        check_invariants(&s, when);
        sim_run(&s, MS(rnd(&x) % 80));
        check_invariants(&s, when);
        ck_assert_msg(sim_violations(&s) == 0, "%s: %s", when, s.pool.last_violation);
    }
    sim_fini(&s);
}
END_TEST

static Suite *
bgclass_suite(void)
{
    Suite *s = suite_create("bgclass");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_alpha_spacing_exact, 0, NPOLS);
    tcase_add_loop_test(tc, test_gaps_go_to_background, 0, NPOLS);
    tcase_add_loop_test(tc, test_batch_after_exactly_beta, 0, NPOLS);
    tcase_add_loop_test(tc, test_batch_wake_preempts_at_once, 0, NPOLS);
    tcase_add_loop_test(tc, test_batch_work_conserving, 0, NPOLS);
    tcase_add_test(tc, test_switch_and_class_change);
    tcase_add_loop_test(tc, test_two_cpus_stealing, 0, NPOLS);
    tcase_add_loop_test(tc, test_capped_foreground_leaves_gaps, 0, 2);
    tcase_add_test(tc, test_batch_uses_policy_weights);
    tcase_add_test(tc, test_alpha_pauses_policy_decision);
    tcase_add_test(tc, test_bad_parameters_change_nothing);
    tcase_add_test(tc, test_params_shown);
    tcase_add_test(tc, test_move_carries_class);
    tcase_add_loop_test(tc, test_inactive_after_last_leaves, 0, NPOLS);
    tcase_add_loop_test(tc, test_random_scenarios, 0, 60);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(bgclass_suite());
}
