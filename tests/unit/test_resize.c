/* SPDX-License-Identifier: ISC */
/*
 * test_resize.c - a pool's CPUs changed while domains run (pool_resize,
 * Xen's cpupool-cpu-add/-remove): under every policy a pool grows and
 * shrinks by a CPU with its domains attached and busy, keeping their
 * parameters and the pool's, with shares as on a pool of the new size;
 * Credit2's runqueues follow the new CPUs' topology; the background class
 * follows; a vCPU left without a CPU refuses the change, which then
 * changes nothing.
 */
#include <string.h>

#include "policy/credit2_priv.h"
#include "testutil.h"

/* Host CPUs first..first+n-1, one core each; from CPU `socket1` on, socket 1. */
static void
hosts(struct policy_cpu *c, int first, unsigned int n, int socket1)
{
    for (unsigned int i = 0; i < n; i++) {
        int h = first + (int)i;

        c[i] = (struct policy_cpu){.cpu = h, .core = h, .socket = h >= socket1, .node = 0};
    }
}

static void
resize_ok(struct sim *s, int first, unsigned int n, int socket1)
{
    struct policy_cpu cpus[8];
    char err[POLICY_ERRLEN] = "";

    hosts(cpus, first, n, socket1);
    ck_assert_msg(sim_resize(s, cpus, n, NULL, err) == 0, "resize to %u: %s", n, err);
    ck_assert_uint_eq(s->pool.nr_cpus, n);
    ck_assert_uint_eq(s->pool.pol.nr_cpus, n);
    for (unsigned int i = 0; i < n; i++)
        ck_assert_int_eq(s->pool.cpus[i].cpu, first + (int)i);
}

/* Every vCPU lives on a CPU of the pool and may use all of them. */
static void
check_placement(struct sim *s)
{
    struct cpuset all;

    cpuset_fill(&all, s->pool.nr_cpus);
    for (unsigned int i = 0; i < s->nr_vcpus; i++) {
        struct pool_vcpu *v = s->vcpus[i]->pv;

        ck_assert_uint_lt(v->pv->cpu, s->pool.nr_cpus);
        ck_assert(cpuset_equal(&v->pv->affinity, &all));
    }
}

static const char *
dom_param(struct pool_dom *d, const char *key)
{
    for (unsigned int i = 0; i < d->params.n; i++)
        if (strcmp(d->params.kv[i].key, key) == 0)
            return d->params.kv[i].val;
    return NULL;
}

/* Every key=value of `given` is still the pool's. */
static void
check_pool_params(struct sim *s, const char *given)
{
    char buf[128], *save = NULL;

    snprintf(buf, sizeof(buf), "%s", given);
    for (char *w = strtok_r(buf, " ", &save); w != NULL; w = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(w, '=');
        bool found = false;

        *eq = '\0';
        for (unsigned int i = 0; i < s->pool.params.n; i++)
            found = found || (strcmp(s->pool.params.kv[i].key, w) == 0 &&
                              strcmp(s->pool.params.kv[i].val, eq + 1) == 0);
        ck_assert_msg(found, "pool parameter %s=%s lost", w, eq + 1);
    }
}

struct policy_case {
    const char *policy;
    const char *pool_params;
    const char *wa, *wb; /* A's and B's (and C's) parameters */
    double a2, b2;       /* Xen's shares of A and B on 2 CPUs, or < 0: not given */
};

/*
 * Credit and Credit2 with A at twice the weight of B and C: on 2 CPUs
 * A gets its whole vCPU and B and C half each (Xen, xen-sched.md §6); on
 * 3 CPUs each gets one. Lost weights would give 2/3 each. rr and table
 * place vCPUs and never balance: their shares are what a new pool gives.
 */
static const struct policy_case policy_cases[] = {
    {"credit", "tslice_ms=10", "weight=512", "weight=256", 1.0, 0.5},
    {"credit2", "ratelimit_us=500", "weight=512", "weight=256", 1.0, 0.5},
    {"rr", "slice_us=2000", NULL, NULL, -1, -1},
    {"table", "table=A,B,C slot_us=1000", NULL, NULL, -1, -1},
};

static const char *const names[] = {"A", "B", "C"};

/* A pool of n flat CPUs from host 1 with A, B and C busy (the case's parameters). */
static void
start_case(struct sim *s, const struct policy_case *pc, unsigned int n, struct pool_dom **d)
{
    struct policy_cpu cpus[8];
    char err[POLICY_ERRLEN] = "";

    hosts(cpus, 1, n, 99);
    ck_assert_msg(sim_init(s, pc->policy, n, cpus, pc->pool_params, err) == 0, "%s", err);
    for (int i = 0; i < 3; i++)
        d[i] = sim_add_ok(s, names[i], 1, sim_busy(), i == 0 ? pc->wa : pc->wb);
}

/* Shares over 3 s after 300 ms to settle, into share[3]. */
static void
measure(struct sim *s, struct pool_dom **d, double *share)
{
    sim_run(s, MS(300));
    sim_reset_stats(s);
    sim_run(s, SEC(3));
    for (int i = 0; i < 3; i++)
        share[i] = sim_share(s, sim_vcpu(d[i], 0));
    ck_assert_no_violations(s);
}

/*
 * The resized pool's shares are a new pool's of that size with the same
 * domains and parameters (within 0.04), and Xen's where given.
 */
static void
check_like_new(struct sim *s, struct pool_dom **d, const struct policy_case *pc, unsigned int n,
               double xa, double xb)
{
    struct pool_dom *rd[3];
    double got[3], want[3];
    struct sim ref;

    measure(s, d, got);
    start_case(&ref, pc, n, rd);
    measure(&ref, rd, want);
    sim_fini(&ref);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(got[i] > want[i] - 0.04 && got[i] < want[i] + 0.04,
                      "%s on %u CPUs: %s has %.3f, a new pool gives %.3f", pc->policy, n, names[i],
                      got[i], want[i]);
    if (xa >= 0)
        ck_assert_msg(got[0] > xa - 0.04 && got[0] < xa + 0.04 && got[1] > xb - 0.04 &&
                          got[1] < xb + 0.04 && got[2] > xb - 0.04 && got[2] < xb + 0.04,
                      "%s on %u CPUs: %.3f %.3f %.3f, Xen gives %.3f %.3f %.3f", pc->policy, n,
                      got[0], got[1], got[2], xa, xb, xb);
}

/* 2 CPUs -> 3 -> 2 with three busy domains attached throughout. */
START_TEST(test_resize_grow_shrink)
{
    const struct policy_case *pc = &policy_cases[_i];
    struct pool_dom *d[3];
    struct sim s;

    start_case(&s, pc, 2, d);
    check_like_new(&s, d, pc, 2, pc->a2, pc->b2);

    resize_ok(&s, 1, 3, 99);
    check_placement(&s);
    check_like_new(&s, d, pc, 3, pc->a2 >= 0 ? 1.0 : -1, 1.0);
    ck_assert_uint_eq(s.pool.stats.resizes, 1);

    resize_ok(&s, 1, 2, 99);
    check_placement(&s);
    check_like_new(&s, d, pc, 2, pc->a2, pc->b2);
    ck_assert_uint_eq(s.pool.stats.resizes, 2);
    /* Parameters as given, the pool's and the domains'. */
    ck_assert_str_eq(pool_policy_name(&s.pool), pc->policy);
    check_pool_params(&s, pc->pool_params);
    if (pc->wa != NULL) {
        ck_assert_str_eq(dom_param(d[0], "weight"), strchr(pc->wa, '=') + 1);
        ck_assert_str_eq(dom_param(d[1], "weight"), strchr(pc->wb, '=') + 1);
    }
    sim_fini(&s);
}
END_TEST

/*
 * Each vCPU's CPUs among cpus[0..n) into aff[] (vCPUs in domain order):
 * domain `pinned` only host CPU 3 (its cgroup cpuset), the others all.
 * Without CPU 3 among them, `pinned` gets index n: a CPU outside the list
 * (an empty entry would mean all of them).
 */
static void
only_cpu3(struct sim *s, const char *pinned, const struct policy_cpu *cpus, unsigned int n,
          struct cpuset *aff)
{
    struct pool_dom *d;
    unsigned int k = 0;

    TAILQ_FOREACH(d, &s->pool.doms, link)
    {
        for (unsigned int v = 0; v < d->nr_vcpus; v++, k++) {
            cpuset_zero(&aff[k]);
            for (unsigned int i = 0; i < n; i++)
                if (strcmp(d->name, pinned) != 0 || cpus[i].cpu == 3)
                    cpuset_set(&aff[k], i);
            if (cpuset_empty(&aff[k]))
                cpuset_set(&aff[k], n);
        }
    }
}

/* A vCPU that could run on none of the new CPUs: refused, nothing changed. */
START_TEST(test_resize_refused_changes_nothing)
{
    struct policy_cpu cpus[3], now[3];
    struct cpuset aff[3];
    struct pool_dom *a, *b, *c;
    char err[POLICY_ERRLEN] = "";
    void *priv;
    struct sim s;

    hosts(cpus, 1, 3, 99);
    ck_assert_int_eq(sim_init(&s, "credit", 3, cpus, NULL, err), 0);
    a = sim_add_ok(&s, "A", 1, sim_busy(), "weight=512");
    b = sim_add_ok(&s, "B", 1, sim_busy(), NULL);
    c = sim_add_ok(&s, "C", 1, sim_busy(), NULL);
    sim_run(&s, MS(100));
    priv = s.pool.pol.priv;
    /* Take CPU 3 away from a pool where B may run on CPU 3 only. */
    hosts(now, 1, 2, 99);
    only_cpu3(&s, "B", now, 2, aff);
    ck_assert_int_eq(sim_resize(&s, now, 2, aff, err), -EINVAL);
    ck_assert_msg(strstr(err, "vCPU 0 of domain B may not use any of the new CPUs"), "%s", err);
    ck_assert_uint_eq(s.pool.nr_cpus, 3);
    ck_assert_int_eq(s.pool.cpus[2].cpu, 3);
    ck_assert_ptr_eq(s.pool.pol.priv, priv);
    ck_assert_uint_eq(s.pool.stats.resizes, 0);
    /* What the policy refuses on the new set: nothing changes either. */
    ck_assert_int_eq(sim_resize(&s, now, 0, NULL, err), -EINVAL);
    ck_assert_uint_eq(s.pool.nr_cpus, 3);
    sim_reset_stats(&s);
    sim_run(&s, SEC(1));
    ck_assert_share(&s, a, 1.0, 0.02);
    ck_assert_share(&s, b, 1.0, 0.02);
    ck_assert_share(&s, c, 1.0, 0.02);
    ck_assert_no_violations(&s);
    /* The same callback where CPU 3 stays: B is kept there. */
    hosts(now, 2, 2, 99);
    only_cpu3(&s, "B", now, 2, aff);
    ck_assert_msg(sim_resize(&s, now, 2, aff, err) == 0, "%s", err);
    ck_assert_uint_eq(sim_vcpu(b, 0)->pv->pv->cpu, 1);
    ck_assert_uint_eq(cpuset_count(&sim_vcpu(b, 0)->pv->pv->affinity), 1);
    sim_run(&s, SEC(1));
    ck_assert_uint_eq(sim_vcpu(b, 0)->pv->pv->cpu, 1);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* Equal busy domains d[0..3): each gets `share` of a CPU (within 0.04). */
static void
run_and_check(struct sim *s, struct pool_dom **d, double share)
{
    double got[3];

    measure(s, d, got);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(got[i] > share - 0.04 && got[i] < share + 0.04, "%s: %.3f, expected %.3f",
                      d[i]->name, got[i], share);
}

static unsigned int
runqueues(struct sim *s)
{
    return credit2_priv(&s->pool.pol)->nr_runqs;
}

/*
 * Credit2 builds its runqueues from the new CPUs (one per socket by
 * default): CPUs 0-1 (socket 0) have one; adding CPU 2 (socket 1) makes
 * two, and the vCPUs spread over both; taking it away makes one again.
 */
START_TEST(test_resize_credit2_runqueues)
{
    struct pool_dom *d[3];
    char err[POLICY_ERRLEN] = "";
    struct policy_cpu cpus[3];
    struct sim s;

    hosts(cpus, 0, 2, 2);
    ck_assert_int_eq(sim_init(&s, "credit2", 2, cpus, NULL, err), 0);
    for (int i = 0; i < 3; i++) {
        char name[4] = {(char)('A' + i), 0};

        d[i] = sim_add_ok(&s, name, 1, sim_busy(), NULL);
    }
    sim_run(&s, MS(100));
    ck_assert_uint_eq(runqueues(&s), 1);
    resize_ok(&s, 0, 3, 2);
    ck_assert_uint_eq(runqueues(&s), 2);
    run_and_check(&s, d, 1.0);
    resize_ok(&s, 0, 2, 2);
    ck_assert_uint_eq(runqueues(&s), 1);
    run_and_check(&s, d, 2.0 / 3);
    sim_fini(&s);
}
END_TEST

/*
 * The background class follows: a background hog beside a foreground
 * one keeps its class through both changes, gets only gaps and alpha
 * slices where the foreground hog lives, and batch mode where it does
 * not (its own CPU once there are two).
 */
START_TEST(test_resize_background_class)
{
    struct pool_dom *fg, *bg;
    struct policy_cpu cpus[2];
    char err[POLICY_ERRLEN] = "";
    struct sim s;

    hosts(cpus, 1, 1, 99);
    ck_assert_int_eq(sim_init(&s, "credit2", 1, cpus, NULL, err), 0);
    fg = sim_add_ok(&s, "fg", 1, sim_busy(), NULL);
    bg = sim_add_ok(&s, "bg", 1, sim_busy(), "class=background");
    sim_run(&s, MS(300));
    sim_reset_stats(&s);
    sim_run(&s, SEC(2));
    ck_assert_share(&s, bg, 0.005, 0.01); /* one 1 ms slice every 200 ms */
    ck_assert(bg->background);
    resize_ok(&s, 1, 2, 99);
    ck_assert_uint_eq(s.pool.cls.nr_cpus, 2);
    ck_assert(bg->background);
    sim_run(&s, MS(300));
    sim_reset_stats(&s);
    sim_run(&s, SEC(2));
    ck_assert_share(&s, fg, 1.0, 0.05);
    ck_assert_no_violations(&s);
    resize_ok(&s, 2, 1, 99);
    ck_assert_uint_eq(s.pool.cls.nr_cpus, 1);
    sim_run(&s, MS(300));
    sim_reset_stats(&s);
    sim_run(&s, SEC(2));
    ck_assert_share(&s, fg, 0.995, 0.01);
    ck_assert_share(&s, bg, 0.005, 0.01);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

static Suite *
resize_suite(void)
{
    Suite *s = suite_create("resize");
    TCase *tc = tcase_create("resize");

    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_resize_grow_shrink, 0,
                        sizeof(policy_cases) / sizeof(policy_cases[0]));
    tcase_add_test(tc, test_resize_refused_changes_nothing);
    tcase_add_test(tc, test_resize_credit2_runqueues);
    tcase_add_test(tc, test_resize_background_class);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(resize_suite());
}
