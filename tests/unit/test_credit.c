/* SPDX-License-Identifier: ISC */
/*
 * test_credit.c - the Credit policy on one simulated CPU: xen-sched.md
 * section 6 behaviours 1-9 and 11 (defaults, weights, round-robin, caps,
 * credit bounds, BOOST, yield), the tick exploit, and parameters.
 * Multi-CPU behaviours (stealing, tickling, migration) are in
 * test_credit_smp.c.
 */
#include "credit_testutil.h"

/* Behaviour 1: the defaults, and the clock they imply. */
START_TEST(test_credit_defaults)
{
    struct sim s;
    struct pool_dom *a;
    struct sim_vcpu *av;

    sim_start(&s, "credit", 1, NULL);
    ck_assert_int_eq(param_int(&s, NULL, "tslice_ms"), 30);
    ck_assert_int_eq(param_int(&s, NULL, "ratelimit_us"), 1000);
    ck_assert_int_eq(param_int(&s, NULL, "boost"), 1);
    ck_assert_int_eq(param_int(&s, NULL, "balance_ratelimit_us"), 1000);
    a = sim_add_ok(&s, "A", 1, sim_busy(), NULL);
    av = sim_vcpu(a, 0);
    ck_assert_int_eq(param_int(&s, a, "weight"), 256);
    ck_assert_int_eq(param_int(&s, a, "cap"), 0);
    /* New vCPUs start UNDER, inactive, with 0 credit. */
    ck_assert_str_eq(stat_pri(&s, av), "UNDER");
    ck_assert_int_eq(stat_int(&s, av, "active"), 0);
    /* The first 10 ms tick finds it running: active, 10 credits per ms burned. */
    sim_until(&s, TICK - 1);
    ck_assert_int_eq(stat_int(&s, av, "active"), 0);
    sim_until(&s, TICK);
    ck_assert_int_eq(stat_int(&s, av, "active"), 1);
    ck_assert_int_eq(stat_int(&s, av, "credit"), -100);
    ck_assert_int_eq(stat_int(&s, av, "ticks"), 1);
    sim_until(&s, 2 * TICK);
    ck_assert_int_eq(stat_int(&s, av, "credit"), -200);
    /* Accounting at 30 ms gives a lone vCPU 300 credits: one CPU-period. */
    sim_until(&s, TSLICE);
    ck_assert_int_eq(stat_int(&s, av, "credit"), 0);
    ck_assert_int_eq(stat_int(&s, av, "ticks"), 3);
    sim_until(&s, 10 * TSLICE);
    ck_assert_int_eq(stat_int(&s, av, "credit"), 0);
    ck_assert_int_eq(stat_int(&s, av, "ticks"), 30);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* Behaviour 2: CPU-bound vCPUs share one CPU in proportion to weight. */
static const struct {
    unsigned int wa, wb;
    double share_a;
} weight_cases[] = {
    {256, 512, 1.0 / 3},
    {256, 256, 0.5},
    {256, 768, 0.25},
    {1000, 500, 2.0 / 3},
};

START_TEST(test_credit_weights)
{
    char pa[32], pb[32];
    struct sim s;
    struct pool_dom *a, *b;

    snprintf(pa, sizeof(pa), "weight=%u", weight_cases[_i].wa);
    snprintf(pb, sizeof(pb), "weight=%u", weight_cases[_i].wb);
    sim_start(&s, "credit", 1, NULL);
    a = sim_add_ok(&s, "A", 1, sim_busy(), pa);
    b = sim_add_ok(&s, "B", 1, sim_busy(), pb);
    sim_run(&s, SEC(1));
    sim_reset_stats(&s);
    sim_run(&s, SEC(3));
    ck_assert_share(&s, a, weight_cases[_i].share_a, 0.01);
    ck_assert_share(&s, b, 1 - weight_cases[_i].share_a, 0.01);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* Behaviours 2 and 4: three equal hogs, 1/3 each, switching every 30 ms. */
START_TEST(test_credit_three_hogs_round_robin)
{
    struct sim s;
    struct pool_dom *d[3];

    sim_start(&s, "credit", 1, NULL);
    d[0] = sim_add_ok(&s, "A", 1, sim_busy(), NULL);
    d[1] = sim_add_ok(&s, "B", 1, sim_busy(), NULL);
    d[2] = sim_add_ok(&s, "C", 1, sim_busy(), NULL);
    sim_run(&s, 33 * TSLICE); /* a slice boundary */
    sim_reset_stats(&s);
    s.record = true;
    sim_run(&s, SEC(3));
    for (int i = 0; i < 3; i++)
        ck_assert_share(&s, d[i], 1.0 / 3, 0.01);
    /* Every run is one 30 ms slice; each switch is to another hog. */
    ck_assert_uint_eq(s.nr_seg, 100);
    for (size_t i = 0; i < s.nr_seg; i++) {
        ck_assert_uint_eq(s.timeline[i].end - s.timeline[i].start, TSLICE);
        ck_assert_uint_eq(s.timeline[i].start % TSLICE, 0);
        if (i > 0)
            ck_assert_int_ne(s.timeline[i].vcpu, s.timeline[i - 1].vcpu);
    }
    for (int i = 0; i < 3; i++)
        ck_assert_uint_eq(sim_max(&sim_vcpu(d[i], 0)->lengths), TSLICE);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* Behaviour 3: weight is per vCPU: a 2-vCPU domain gets twice a 1-vCPU one. */
START_TEST(test_credit_weight_per_vcpu)
{
    struct sim s;
    struct pool_dom *a, *b;
    double a_total;

    sim_start(&s, "credit", 1, NULL);
    a = sim_add_ok(&s, "A", 2, sim_busy(), "weight=256");
    b = sim_add_ok(&s, "B", 1, sim_busy(), "weight=256");
    sim_run(&s, SEC(1));
    sim_reset_stats(&s);
    sim_run(&s, SEC(3));
    a_total = sim_share(&s, sim_vcpu(a, 0)) + sim_share(&s, sim_vcpu(a, 1));
    ck_assert_msg(a_total > 2.0 / 3 - 0.01 && a_total < 2.0 / 3 + 0.01, "A %f", a_total);
    ck_assert_share(&s, b, 1.0 / 3, 0.01);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * Behaviour 5: a lone cap=50 hog gets 50% of an idle CPU, in on/off
 * phases of whole accounting periods (60 ms on, 60 ms parked).
 */
START_TEST(test_credit_cap_alone)
{
    struct sim s;
    struct pool_dom *a;
    struct sim_vcpu *av;

    sim_start(&s, "credit", 1, NULL);
    a = sim_add_ok(&s, "A", 1, sim_busy(), "cap=50");
    av = sim_vcpu(a, 0);
    sim_run(&s, 32 * TSLICE); /* a phase boundary */
    sim_reset_stats(&s);
    s.record = true;
    sim_run(&s, SEC(3));
    ck_assert_share(&s, a, 0.5, 0.01);
    ck_assert_uint_ge(av->parks, 24);
    for (size_t i = 0; i < s.nr_seg; i++) {
        uint64_t len = s.timeline[i].end - s.timeline[i].start;

        ck_assert_uint_eq(len % TSLICE, 0);
        if (i > 0 && i + 1 < s.nr_seg) /* whole phases */
            ck_assert_uint_eq(len, 2 * TSLICE);
    }
    ck_assert_int_eq(stat_int(&s, av, "boosts"), 0); /* unparking never boosts */
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* Behaviour 5: cap=25 next to an uncapped hog: 25% / 75%. */
START_TEST(test_credit_cap_with_hog)
{
    struct sim s;
    struct pool_dom *a, *h;

    sim_start(&s, "credit", 1, NULL);
    a = sim_add_ok(&s, "A", 1, sim_busy(), "cap=25");
    h = sim_add_ok(&s, "H", 1, sim_busy(), NULL);
    sim_run(&s, SEC(1));
    sim_reset_stats(&s);
    sim_run(&s, SEC(3));
    ck_assert_share(&s, a, 0.25, 0.01);
    ck_assert_share(&s, h, 0.75, 0.01);
    ck_assert_int_eq(stat_int(&s, sim_vcpu(a, 0), "boosts"), 0);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* A cap on a 2-vCPU domain holds the domain total (cap is % of one CPU). */
START_TEST(test_credit_cap_two_vcpus)
{
    struct sim s;
    struct pool_dom *a, *h;
    double total;

    sim_start(&s, "credit", 1, NULL);
    a = sim_add_ok(&s, "A", 2, sim_busy(), "cap=40");
    h = sim_add_ok(&s, "H", 1, sim_busy(), NULL);
    sim_run(&s, SEC(1));
    sim_reset_stats(&s);
    sim_run(&s, SEC(3));
    total = sim_share(&s, sim_vcpu(a, 0)) + sim_share(&s, sim_vcpu(a, 1));
    ck_assert_msg(total > 0.39 && total < 0.41, "A %f", total);
    ck_assert_share(&s, h, 0.6, 0.01);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * Behaviour 6: a vCPU above +300 at accounting leaves the active set with
 * its credit halved (320 -> 160); credit never ends a pass below -300.
 * W runs 13 ms and sleeps: -130, then +150 per pass: 20, 170, 320 -> 160.
 * H runs from 13 ms on: 0 - 770 + 3 x 150 = -320 -> clamped to -300.
 */
START_TEST(test_credit_bounds_and_halving)
{
    struct sim s;
    struct pool_dom *w, *h;
    struct sim_vcpu *wv, *hv;

    sim_start(&s, "credit", 1, NULL);
    w = sim_add_ok(&s, "W", 1, sim_manual(), NULL);
    wv = sim_vcpu(w, 0);
    sim_wake(&s, wv);
    h = sim_add_ok(&s, "H", 1, sim_busy(), NULL);
    hv = sim_vcpu(h, 0);
    sim_until(&s, MS(13));
    sim_sleep(&s, wv);
    sim_until(&s, TSLICE);
    ck_assert_int_eq(stat_int(&s, wv, "credit"), 20);
    sim_until(&s, 2 * TSLICE);
    ck_assert_int_eq(stat_int(&s, wv, "credit"), 170);
    ck_assert_int_eq(stat_int(&s, wv, "active"), 1);
    sim_until(&s, 3 * TSLICE);
    ck_assert_int_eq(stat_int(&s, wv, "credit"), 160);
    ck_assert_int_eq(stat_int(&s, wv, "active"), 0);
    ck_assert_int_eq(stat_int(&s, hv, "credit"), -300);
    ck_assert_int_eq(stat_int(&s, hv, "clamps"), 1);
    /* Inactive: it earns nothing more. */
    sim_until(&s, 5 * TSLICE);
    ck_assert_int_eq(stat_int(&s, wv, "credit"), 160);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* Behaviour 6 over a busy mix: after every pass, -300 <= active credit <= 300. */
START_TEST(test_credit_bounds_mix)
{
    struct sim s;
    sim_start(&s, "credit", 1, NULL);
    sim_add_ok(&s, "A", 1, sim_busy(), "weight=1");
    sim_add_ok(&s, "B", 2, sim_busy(), "weight=4000");
    sim_add_ok(&s, "C", 1, sim_busy(), "cap=20");
    sim_add_ok(&s, "D", 1, sim_duty(MS(3), MS(7)), NULL);
    sim_add_ok(&s, "E", 1, sim_periodic(MS(10), US(200), MS(3)), NULL);
    for (int k = 1; k <= 200; k++) {
        sim_until(&s, (uint64_t)k * TSLICE);
        for (unsigned int i = 0; i < s.nr_vcpus; i++) {
            struct sim_vcpu *v = s.vcpus[i];
            int64_t c = stat_int(&s, v, "credit");

            ck_assert_int_ge(c, -300);
            if (stat_int(&s, v, "active"))
                ck_assert_int_le(c, 300);
        }
    }
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * Behaviour 7 set-up: two hogs switching at 30 ms, and W1, W2, manual
 * vCPUs whose first wake (not boosted: just inserted) is already spent:
 * they ran at t=0 on the idle CPU.
 */
static struct sim_vcpu *
boost_setup(struct sim *s, const char *pool_params, struct sim_vcpu **w2)
{
    struct sim_vcpu *w[2];

    sim_start(s, "credit", 1, pool_params);
    for (int i = 0; i < 2; i++) {
        w[i] = sim_vcpu(sim_add_ok(s, i ? "W2" : "W", 1, sim_manual(), NULL), 0);
        sim_wake(s, w[i]);
        ck_assert_int_eq(w[i]->running_on, 0);
        ck_assert_str_eq(stat_pri(s, w[i]), "UNDER");
        ck_assert_int_eq(stat_int(s, w[i], "boosts"), 0);
        sim_sleep(s, w[i]);
    }
    sim_add_ok(s, "H1", 1, sim_busy(), NULL);
    sim_add_ok(s, "H2", 1, sim_busy(), NULL);
    sim_until(s, TSLICE); /* H2 starts its slice at 30 ms */
    if (w2 != NULL)
        *w2 = w[1];
    return w[0];
}

/*
 * Behaviour 7: a BOOST waker preempts an UNDER vCPU once that one has run
 * the 1 ms ratelimit: at once if it has, else exactly when it has.
 */
static const struct {
    uint64_t wake_after; /* of H2's start */
    uint64_t latency;
} boost_cases[] = {
    {US(400), US(600)}, {US(999), US(1)}, {MS(1), 0}, {MS(2), 0}, {MS(25), 0},
};

START_TEST(test_credit_boost_preempts_after_ratelimit)
{
    struct sim s;
    struct sim_vcpu *w = boost_setup(&s, NULL, NULL);

    sim_until(&s, TSLICE + boost_cases[_i].wake_after);
    sim_wake(&s, w);
    ck_assert_str_eq(stat_pri(&s, w), "BOOST");
    ck_assert_int_eq(stat_int(&s, w, "boosts"), 1);
    if (boost_cases[_i].latency > 0) {
        ck_assert_int_eq(w->running_on, -1);
        sim_run(&s, boost_cases[_i].latency - 1);
        ck_assert_int_eq(w->running_on, -1);
        sim_run(&s, 1);
    }
    ck_assert_int_eq(w->running_on, 0);
    ck_assert_uint_eq(sim_max(&w->lat), boost_cases[_i].latency);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* Without a ratelimit the BOOST waker preempts at once. */
START_TEST(test_credit_boost_ratelimit_off)
{
    struct sim s;
    struct sim_vcpu *w = boost_setup(&s, "ratelimit_us=0", NULL);

    sim_until(&s, TSLICE + US(100));
    sim_wake(&s, w);
    ck_assert_int_eq(w->running_on, 0);
    ck_assert_uint_eq(sim_max(&w->lat), 0);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* boost=off (our comparison knob): the waker stays UNDER and waits. */
START_TEST(test_credit_boost_off)
{
    struct sim s;
    struct sim_vcpu *w = boost_setup(&s, "boost=off", NULL);

    sim_until(&s, TSLICE + MS(5));
    sim_wake(&s, w);
    ck_assert_str_eq(stat_pri(&s, w), "UNDER");
    sim_until(&s, 2 * TSLICE - 1);
    ck_assert_int_eq(w->running_on, -1);
    ck_assert_int_eq(stat_int(&s, w, "boosts"), 0);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * Behaviour 7: an OVER waker is not boosted and does not preempt: it
 * waits at least for the running slice to end. W runs 19.9 ms and
 * sleeps; the pass at 30 ms gives both 150: W at -49 (OVER), H at +49
 * (UNDER). H's slice ends at 49.9 ms but H is UNDER and keeps the CPU;
 * the 60 ms pass makes W UNDER (101) and H OVER (-101), so W runs when
 * H's next slice ends, at 79.9 ms.
 */
START_TEST(test_credit_over_waker_waits)
{
    struct sim s;
    struct sim_vcpu *w, *h;

    sim_start(&s, "credit", 1, NULL);
    w = sim_vcpu(sim_add_ok(&s, "W", 1, sim_manual(), NULL), 0);
    sim_wake(&s, w);
    h = sim_vcpu(sim_add_ok(&s, "H", 1, sim_busy(), NULL), 0);
    sim_until(&s, US(19900));
    sim_sleep(&s, w);
    sim_until(&s, MS(40));
    ck_assert_str_eq(stat_pri(&s, w), "OVER");
    ck_assert_str_eq(stat_pri(&s, h), "UNDER");
    sim_wake(&s, w);
    ck_assert_str_eq(stat_pri(&s, w), "OVER");
    ck_assert_int_eq(stat_int(&s, w, "boosts"), 0);
    sim_until(&s, US(49900));
    ck_assert_int_eq(w->running_on, -1); /* no preemption */
    sim_until(&s, US(79900) - 1);
    ck_assert_int_eq(w->running_on, -1);
    sim_until(&s, US(79900));
    ck_assert_int_eq(w->running_on, 0);
    ck_assert_uint_eq(sim_max(&w->lat), US(39900));
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * Behaviour 7: a BOOST waker preempts a running OVER vCPU too, at once if
 * it has run the 1 ms ratelimit, else exactly when it has. W runs 0-12 ms
 * (a tick activates it) and sleeps; H runs alone from 12 ms, so the pass
 * at 30 ms leaves W at +30 (UNDER) and H at -30: OVER, still running.
 * W2 wakes at 40 ms and preempts H at once; when W2 sleeps at 45 ms, H
 * (still OVER) runs again, and W, waking at 45.4 ms, preempts it at 46.
 */
START_TEST(test_credit_boost_preempts_over)
{
    struct sim s;
    struct sim_vcpu *w, *w2, *h;

    sim_start(&s, "credit", 1, NULL);
    w2 = sim_vcpu(sim_add_ok(&s, "W2", 1, sim_manual(), NULL), 0);
    sim_wake(&s, w2); /* its first wake (not boosted) is spent */
    sim_sleep(&s, w2);
    w = sim_vcpu(sim_add_ok(&s, "W", 1, sim_manual(), NULL), 0);
    sim_wake(&s, w);
    h = sim_vcpu(sim_add_ok(&s, "H", 1, sim_busy(), NULL), 0);
    ck_assert_int_eq(w->running_on, 0);
    sim_until(&s, MS(12));
    sim_sleep(&s, w);
    ck_assert_int_eq(h->running_on, 0);
    sim_until(&s, MS(40));
    ck_assert_str_eq(stat_pri(&s, w), "UNDER");
    ck_assert_str_eq(stat_pri(&s, w2), "UNDER");
    ck_assert_str_eq(stat_pri(&s, h), "OVER");
    ck_assert_int_eq(h->running_on, 0);
    /* H has run 28 ms: the boosted W2 takes the CPU at once. */
    sim_wake(&s, w2);
    ck_assert_str_eq(stat_pri(&s, w2), "BOOST");
    ck_assert_int_eq(w2->running_on, 0);
    ck_assert_uint_eq(sim_max(&w2->lat), 0);
    sim_until(&s, MS(45));
    sim_sleep(&s, w2);
    ck_assert_int_eq(h->running_on, 0);
    ck_assert_str_eq(stat_pri(&s, h), "OVER");
    /* H has run 0.4 ms: W waits for the rest of the ratelimit, no more. */
    sim_until(&s, US(45400));
    sim_wake(&s, w);
    ck_assert_str_eq(stat_pri(&s, w), "BOOST");
    ck_assert_int_eq(w->running_on, -1);
    sim_until(&s, MS(45) + RATELIMIT - 1);
    ck_assert_int_eq(w->running_on, -1);
    ck_assert_int_eq(h->running_on, 0);
    sim_until(&s, MS(45) + RATELIMIT);
    ck_assert_int_eq(w->running_on, 0);
    ck_assert_uint_eq(sim_max(&w->lat), US(600));
    ck_assert_int_eq(stat_int(&s, w, "boosts"), 1);
    ck_assert_int_eq(stat_int(&s, w2, "boosts"), 1);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * Behaviour 8: BOOST never preempts BOOST; the tick demotes the running
 * BOOST vCPU to UNDER without preempting it. W1 wakes at 32 ms and runs
 * (preempting H2); W2 wakes at 35 ms and waits; the 40 ms tick demotes
 * W1 but W2 still waits until W1 blocks at 45 ms.
 */
START_TEST(test_credit_boost_never_preempts_boost)
{
    struct sim s;
    struct sim_vcpu *w2, *w1 = boost_setup(&s, NULL, &w2);

    sim_until(&s, MS(32));
    sim_wake(&s, w1);
    ck_assert_int_eq(w1->running_on, 0);
    sim_until(&s, MS(35));
    sim_wake(&s, w2);
    ck_assert_str_eq(stat_pri(&s, w2), "BOOST");
    ck_assert_int_eq(w2->running_on, -1);
    sim_until(&s, MS(40));
    ck_assert_str_eq(stat_pri(&s, w1), "UNDER");
    ck_assert_int_eq(w1->running_on, 0);
    sim_until(&s, MS(45) - 1);
    ck_assert_int_eq(w2->running_on, -1);
    sim_until(&s, MS(45));
    sim_sleep(&s, w1);
    ck_assert_int_eq(w2->running_on, 0);
    ck_assert_uint_eq(sim_max(&w2->lat), MS(10));
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * Behaviour 8: k I/O vCPUs (1 ms bursts every 20 ms, all at once) next to
 * two hogs. All are boosted and preempt the hog (it has run more than the
 * ratelimit), but none preempts another: the last in the FIFO waits for
 * the k-1 before it, so the p99 wake latency is (k-1) ms.
 */
static uint64_t
boost_worst_latency(unsigned int k, const char *pool_params, double *io_share)
{
    struct pool_dom *io[8];
    uint64_t worst = 0;
    struct sim s;

    sim_start(&s, "credit", 1, pool_params);
    sim_add_ok(&s, "H1", 1, sim_busy(), NULL);
    sim_add_ok(&s, "H2", 1, sim_busy(), NULL);
    for (unsigned int i = 0; i < k; i++) {
        char name[8];

        snprintf(name, sizeof(name), "io%u", i);
        io[i] = sim_add_ok(&s, name, 1, sim_periodic(MS(20), MS(1), MS(5)), NULL);
    }
    sim_run(&s, SEC(1));
    sim_reset_stats(&s);
    sim_run(&s, SEC(3));
    *io_share = 0;
    for (unsigned int i = 0; i < k; i++) {
        struct sim_vcpu *v = sim_vcpu(io[i], 0);

        if (sim_percentile(&v->lat, 99) > worst)
            worst = sim_percentile(&v->lat, 99);
        *io_share += sim_share(&s, v);
    }
    ck_assert_no_violations(&s);
    sim_fini(&s);
    return worst;
}

START_TEST(test_credit_boost_latency_linear)
{
    uint64_t lat[5];
    double share;

    for (unsigned int k = 1; k <= 4; k++) {
        lat[k] = boost_worst_latency(k, NULL, &share);
        ck_assert_msg(share > 0.0499 * k, "k=%u: I/O share %f", k, share);
        ck_assert_msg(lat[k] == MS(k - 1), "k=%u: p99 wake latency %llu ns", k,
                      (unsigned long long)lat[k]);
    }
    /* Without boost they queue UNDER behind the hogs' 30 ms slices. */
    lat[1] = boost_worst_latency(1, "boost=off", &share);
    ck_assert_uint_gt(lat[1], MS(10));
}
END_TEST

/* Behaviour 9 (insertion): the first wake after attach is not boosted. */
START_TEST(test_credit_no_boost_first_wake)
{
    struct sim s;
    struct sim_vcpu *w;

    sim_start(&s, "credit", 1, NULL);
    sim_add_ok(&s, "H", 1, sim_busy(), NULL);
    w = sim_vcpu(sim_add_ok(&s, "W", 1, sim_manual(), NULL), 0);
    sim_until(&s, MS(5));
    sim_wake(&s, w);
    ck_assert_str_eq(stat_pri(&s, w), "UNDER");
    ck_assert_int_eq(stat_int(&s, w, "boosts"), 0);
    ck_assert_int_eq(w->running_on, -1); /* UNDER does not preempt UNDER */
    sim_until(&s, TSLICE);
    ck_assert_int_eq(w->running_on, 0);
    sim_sleep(&s, w);
    sim_until(&s, TSLICE + MS(5));
    sim_wake(&s, w); /* the second wake is */
    ck_assert_str_eq(stat_pri(&s, w), "BOOST");
    ck_assert_int_eq(stat_int(&s, w, "boosts"), 1);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * Behaviour 9 (unpark): a capped vCPU that blocks and wakes is boosted,
 * but its unparking is not, although it is a wake of an UNDER vCPU.
 */
START_TEST(test_credit_no_boost_unpark)
{
    struct sim s;
    struct sim_vcpu *c;
    uint64_t boosts, parks = 0;

    sim_start(&s, "credit", 1, NULL);
    c = sim_vcpu(sim_add_ok(&s, "C", 1, sim_busy(), "cap=30"), 0);
    sim_add_ok(&s, "H", 1, sim_busy(), NULL);
    for (int k = 1; k <= 100; k++) {
        sim_until(&s, (uint64_t)k * TSLICE);
        parks = (uint64_t)stat_int(&s, c, "parks");
    }
    boosts = (uint64_t)stat_int(&s, c, "boosts");
    ck_assert_uint_ge(parks, 10);
    ck_assert_uint_eq(boosts, 0);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * Behaviour 9, on a host: a frozen thread is seen to block, and its thaw
 * wakes it after the pass that unparked it. That wake is the unpause of
 * Xen's unpark and is not boosted either; a later wake of its own is.
 */
START_TEST(test_credit_no_boost_thaw)
{
    struct sim s;
    struct sim_vcpu *c;
    uint64_t t = 0;
    int64_t boosts;

    sim_start(&s, "credit", 1, NULL);
    c = sim_vcpu(sim_add_ok(&s, "C", 1, sim_manual(), "cap=30"), 0);
    sim_add_ok(&s, "H", 1, sim_busy(), NULL);
    sim_wake(&s, c);
    while (stat_int(&s, c, "parked") == 0 && t < 100 * TSLICE)
        sim_until(&s, t += MS(1));
    ck_assert_int_eq(stat_int(&s, c, "parked"), 1);
    sim_sleep(&s, c); /* the freezer: it blocks while parked */
    while (stat_int(&s, c, "parked") == 1 && t < 200 * TSLICE)
        sim_until(&s, t += MS(1));
    ck_assert_int_eq(stat_int(&s, c, "parked"), 0);
    boosts = stat_int(&s, c, "boosts");
    sim_wake(&s, c); /* the thaw */
    ck_assert_int_eq(stat_int(&s, c, "boosts"), boosts);
    ck_assert_str_ne(stat_pri(&s, c), "BOOST");
    sim_until(&s, t += MS(1));
    sim_sleep(&s, c);
    sim_until(&s, t += MS(1));
    if (strcmp(stat_pri(&s, c), "UNDER") == 0) {
        sim_wake(&s, c); /* its own wake: boosted as any */
        ck_assert_str_eq(stat_pri(&s, c), "BOOST");
    }
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * Behaviour 11: a yielding vCPU goes one position behind the first
 * lower-priority vCPU, and the ratelimit does not hold it.
 * Queue [U(UNDER), O1(OVER), O2(OVER)]: Y yields -> U runs, order
 * U, O1, Y, O2.
 */
START_TEST(test_credit_yield_placement)
{
    struct sim s;
    struct sim_vcpu *h, *y, *u, *o1, *o2;

    sim_start(&s, "credit", 1, NULL);
    /*
     * O1, O2 (weight 1) run a slice each next to H: the 60 and 90 ms
     * passes leave them near -300 (OVER), H UNDER.
     */
    h = sim_vcpu(sim_add_ok(&s, "H", 1, sim_manual(), NULL), 0);
    sim_wake(&s, h);
    o1 = sim_vcpu(sim_add_ok(&s, "O1", 1, sim_manual(), "weight=1"), 0);
    o2 = sim_vcpu(sim_add_ok(&s, "O2", 1, sim_manual(), "weight=1"), 0);
    y = sim_vcpu(sim_add_ok(&s, "Y", 1, sim_manual(), NULL), 0);
    u = sim_vcpu(sim_add_ok(&s, "U", 1, sim_manual(), NULL), 0);
    sim_until(&s, MS(5));
    sim_wake(&s, o1);
    sim_wake(&s, o2);
    sim_until(&s, 3 * TSLICE);
    ck_assert_int_eq(h->running_on, 0);
    sim_sleep(&s, h);
    sim_sleep(&s, o1);
    sim_sleep(&s, o2);
    ck_assert_str_eq(stat_pri(&s, o1), "OVER");
    ck_assert_str_eq(stat_pri(&s, o2), "OVER");
    /* Y runs; U (first wake: UNDER), O1, O2 queue in priority order. */
    sim_wake(&s, y);
    sim_wake(&s, o1);
    sim_wake(&s, o2);
    sim_wake(&s, u);
    ck_assert_int_eq(y->running_on, 0);
    sim_run(&s, US(200)); /* well inside the 1 ms ratelimit */
    sim_yield(&s, y);
    ck_assert_int_eq(u->running_on, 0);
    sim_sleep(&s, u);
    ck_assert_int_eq(o1->running_on, 0);
    sim_sleep(&s, o1);
    ck_assert_int_eq(y->running_on, 0);
    sim_sleep(&s, y);
    ck_assert_int_eq(o2->running_on, 0);
    ck_assert_int_eq(stat_int(&s, y, "yields"), 1);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* Behaviour 11: with nothing of lower priority queued, Y goes to the tail. */
START_TEST(test_credit_yield_equal_priority)
{
    struct sim s;
    struct sim_vcpu *y, *a, *b;

    sim_start(&s, "credit", 1, NULL);
    y = sim_vcpu(sim_add_ok(&s, "Y", 1, sim_manual(), NULL), 0);
    a = sim_vcpu(sim_add_ok(&s, "A", 1, sim_manual(), NULL), 0);
    b = sim_vcpu(sim_add_ok(&s, "B", 1, sim_manual(), NULL), 0);
    sim_wake(&s, y);
    sim_wake(&s, a);
    sim_wake(&s, b);
    sim_yield(&s, y);
    ck_assert_int_eq(a->running_on, 0);
    sim_sleep(&s, a);
    ck_assert_int_eq(b->running_on, 0);
    sim_sleep(&s, b);
    ck_assert_int_eq(y->running_on, 0);
    /* Alone, a yield changes nothing. */
    sim_yield(&s, y);
    ck_assert_int_eq(y->running_on, 0);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/*
 * The tick exploit: X runs 9.5 ms and sleeps 0.5 ms across every 10 ms
 * tick, next to a hog of equal weight. Sampled at ticks it would never
 * be seen, stay UNDER/BOOST and take ~95%; measured sightings hold it to
 * its share.
 */
START_TEST(test_credit_tick_exploit)
{
    struct sim s;
    struct sim_vcpu *x;
    struct pool_dom *h;

    sim_start(&s, "credit", 1, NULL);
    x = sim_vcpu(sim_add_ok(&s, "X", 1, sim_manual(), NULL), 0);
    h = sim_add_ok(&s, "H", 1, sim_busy(), NULL);
    for (uint64_t t = 0; t < SEC(4); t += TICK) {
        if (t == SEC(1))
            sim_reset_stats(&s);
        sim_until(&s, t + US(300));
        sim_wake(&s, x);
        sim_until(&s, t + US(9800));
        sim_sleep(&s, x);
    }
    sim_until(&s, SEC(4));
    ck_assert_msg(sim_share(&s, x) < 0.52, "exploit got %f", sim_share(&s, x));
    ck_assert_share(&s, h, 0.5, 0.03);
    ck_assert_int_eq(stat_int(&s, x, "ticks"), 0); /* never caught by a tick */
    ck_assert_int_gt(stat_int(&s, x, "sightings"), 0);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* Parameters: every bad value is refused with a message and changes nothing. */
static const struct {
    const char *dom; /* NULL: pool */
    const char *params;
    const char *msg; /* part of the error */
} bad_params[] = {
    {"A", "weight=0", "weight"},
    {"A", "weight=65536", "weight"},
    {"A", "cap=-5", "cap"},
    {"A", "cap=101", "100 x 1"},
    {"B", "cap=201", "100 x 2"},
    {"A", "weight=512 cap=500", "cap"},
    {"A", "speed=3", "unknown"},
    {NULL, "tslice_ms=5000", "tslice_ms"},
    {NULL, "tslice_ms=0", "tslice_ms"},
    {NULL, "ratelimit_us=50", "0 (off) or 100"},
    {NULL, "ratelimit_us=1", "0 (off) or 100"},
    {NULL, "ratelimit_us=600000", "ratelimit_us"},
    {NULL, "ratelimit_us=40000", "longer than tslice"},
    {NULL, "tslice_ms=10 ratelimit_us=20000", "longer than tslice"},
    {NULL, "boost=maybe", "boost"},
    {NULL, "balance_ratelimit_us=2000000", "balance_ratelimit_us"},
};

START_TEST(test_credit_params_refused)
{
    char err[POLICY_ERRLEN] = "";
    struct pool_dom *a, *b, *d;
    struct sim s;

    sim_start(&s, "credit", 1, "tslice_ms=30 ratelimit_us=1000");
    a = sim_add_ok(&s, "A", 1, sim_busy(), "weight=300 cap=50");
    b = sim_add_ok(&s, "B", 2, sim_busy(), NULL);
    sim_run(&s, MS(100));
    d = bad_params[_i].dom == NULL ? NULL : pool_dom_find(&s.pool, bad_params[_i].dom);
    ck_assert_int_eq(sim_set(&s, d, bad_params[_i].params, err), -EINVAL);
    ck_assert_msg(strstr(err, bad_params[_i].msg) != NULL, "'%s': %s", bad_params[_i].params, err);
    ck_assert_int_eq(param_int(&s, a, "weight"), 300);
    ck_assert_int_eq(param_int(&s, a, "cap"), 50);
    ck_assert_int_eq(param_int(&s, b, "weight"), 256);
    ck_assert_int_eq(param_int(&s, b, "cap"), 0);
    ck_assert_int_eq(param_int(&s, NULL, "tslice_ms"), 30);
    ck_assert_int_eq(param_int(&s, NULL, "ratelimit_us"), 1000);
    ck_assert_int_eq(param_int(&s, NULL, "boost"), 1);
    ck_assert_int_eq(param_int(&s, NULL, "balance_ratelimit_us"), 1000);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* Bad values at pool creation and at attach are refused too. */
START_TEST(test_credit_params_refused_at_create)
{
    char err[POLICY_ERRLEN] = "";
    struct sim s;

    ck_assert_int_eq(sim_init(&s, "credit", 1, NULL, "ratelimit_us=99", err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "0 (off) or 100"));
    ck_assert_int_eq(sim_init(&s, "credit", 1, NULL, "tslice_ms=2 ratelimit_us=5000", err),
                     -EINVAL);
    sim_start(&s, "credit", 1, NULL);
    ck_assert_ptr_null(sim_dom_add(&s, "A", 2, sim_busy(), 0, "cap=250", err));
    ck_assert_ptr_nonnull(strstr(err, "100 x 2"));
    ck_assert_ptr_null(pool_dom_find(&s.pool, "A"));
    ck_assert_ptr_nonnull(sim_dom_add(&s, "A", 2, sim_busy(), 0, "cap=200", err));
    sim_run(&s, MS(100));
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* Live changes: weight moves the split; tslice and ratelimit apply. */
START_TEST(test_credit_params_live)
{
    char err[POLICY_ERRLEN] = "";
    struct pool_dom *a, *b;
    struct sim s;

    sim_start(&s, "credit", 1, NULL);
    a = sim_add_ok(&s, "A", 1, sim_busy(), NULL);
    b = sim_add_ok(&s, "B", 1, sim_busy(), NULL);
    sim_run(&s, SEC(1));
    ck_assert_int_eq(sim_set(&s, a, "weight=768", err), 0);
    sim_run(&s, SEC(1));
    sim_reset_stats(&s);
    sim_run(&s, SEC(3));
    ck_assert_share(&s, a, 0.75, 0.01);
    ck_assert_int_eq(sim_set(&s, b, "cap=10", err), 0);
    sim_run(&s, SEC(1));
    sim_reset_stats(&s);
    sim_run(&s, SEC(3));
    ck_assert_share(&s, b, 0.10, 0.01);
    ck_assert_int_eq(sim_set(&s, b, "cap=0", err), 0);
    /* A 3 ms tslice: a 1 ms tick, hogs switching every 3 ms. */
    ck_assert_int_eq(sim_set(&s, NULL, "tslice_ms=3 ratelimit_us=0", err), 0);
    ck_assert_int_eq(param_int(&s, NULL, "tslice_ms"), 3);
    ck_assert_int_eq(param_int(&s, NULL, "ratelimit_us"), 0);
    sim_run(&s, SEC(1));
    sim_reset_stats(&s);
    sim_run(&s, SEC(1));
    ck_assert_uint_eq(sim_max(&sim_vcpu(a, 0)->lengths) % MS(3), 0);
    /*
     * Credit is bounded at +-1 period (here 30 credits): A, waiting while
     * B runs, passes +30 and is retired with its credit halved, so it
     * gets ~73% instead of 75% (as in Xen with a short tslice).
     */
    ck_assert_share(&s, a, 0.75, 0.03);
    ck_assert_int_gt(stat_int(&s, sim_vcpu(a, 0), "activations"), 10);
    ck_assert_int_eq(sim_set(&s, NULL, "boost=off balance_ratelimit_us=0", err), 0);
    ck_assert_int_eq(param_int(&s, NULL, "boost"), 0);
    ck_assert_int_eq(param_int(&s, NULL, "balance_ratelimit_us"), 0);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* Under 3 ms the tick is the whole tslice (Xen: 1 tick per tslice). */
START_TEST(test_credit_short_tslice_tick)
{
    struct sim s;
    struct sim_vcpu *a;

    sim_start(&s, "credit", 1, "tslice_ms=2 ratelimit_us=100");
    a = sim_vcpu(sim_add_ok(&s, "A", 1, sim_busy(), NULL), 0);
    sim_until(&s, MS(100));
    ck_assert_int_eq(stat_int(&s, a, "ticks"), 50);
    ck_assert_int_eq(stat_int(&s, a, "credit"), 0); /* 20 credits a pass, 20 burned */
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* Removing the elected vCPU or a whole domain keeps everything consistent. */
START_TEST(test_credit_remove)
{
    struct sim s;
    struct pool_dom *a, *b, *c;

    sim_start(&s, "credit", 1, NULL);
    a = sim_add_ok(&s, "A", 2, sim_busy(), "cap=50");
    b = sim_add_ok(&s, "B", 1, sim_busy(), NULL);
    c = sim_add_ok(&s, "C", 1, sim_periodic(MS(10), MS(1), 0), NULL);
    sim_run(&s, MS(500));
    sim_dom_remove(&s, a);
    sim_run(&s, MS(500));
    sim_dom_remove(&s, b);
    sim_reset_stats(&s);
    sim_run(&s, SEC(1));
    ck_assert_share(&s, c, 0.1, 0.001);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

static Suite *
credit_suite(void)
{
    Suite *s = suite_create("credit");
    TCase *tc = tcase_create("one_cpu");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_credit_defaults);
    tcase_add_loop_test(tc, test_credit_weights, 0, sizeof(weight_cases) / sizeof(weight_cases[0]));
    tcase_add_test(tc, test_credit_three_hogs_round_robin);
    tcase_add_test(tc, test_credit_weight_per_vcpu);
    tcase_add_test(tc, test_credit_cap_alone);
    tcase_add_test(tc, test_credit_cap_with_hog);
    tcase_add_test(tc, test_credit_cap_two_vcpus);
    tcase_add_test(tc, test_credit_bounds_and_halving);
    tcase_add_test(tc, test_credit_bounds_mix);
    tcase_add_loop_test(tc, test_credit_boost_preempts_after_ratelimit, 0,
                        sizeof(boost_cases) / sizeof(boost_cases[0]));
    tcase_add_test(tc, test_credit_boost_ratelimit_off);
    tcase_add_test(tc, test_credit_boost_off);
    tcase_add_test(tc, test_credit_over_waker_waits);
    tcase_add_test(tc, test_credit_boost_preempts_over);
    tcase_add_test(tc, test_credit_boost_never_preempts_boost);
    tcase_add_test(tc, test_credit_boost_latency_linear);
    tcase_add_test(tc, test_credit_no_boost_first_wake);
    tcase_add_test(tc, test_credit_no_boost_unpark);
    tcase_add_test(tc, test_credit_no_boost_thaw);
    tcase_add_test(tc, test_credit_yield_placement);
    tcase_add_test(tc, test_credit_yield_equal_priority);
    tcase_add_test(tc, test_credit_tick_exploit);
    tcase_add_loop_test(tc, test_credit_params_refused, 0,
                        sizeof(bad_params) / sizeof(bad_params[0]));
    tcase_add_test(tc, test_credit_params_refused_at_create);
    tcase_add_test(tc, test_credit_params_live);
    tcase_add_test(tc, test_credit_short_tslice_tick);
    tcase_add_test(tc, test_credit_remove);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(credit_suite());
}
