/* SPDX-License-Identifier: ISC */
/*
 * test_credit2_load.c - Credit2 runqueues from the topology and load
 * balancing between them, on injected topologies and the simulated clock
 * (xen-sched.md behaviour 19 and the runqueue rules of 2.2).
 */
#include <string.h>

#include "stat_testutil.h"

static struct sim_vcpu *
v0(struct pool_dom *d)
{
    return sim_vcpu(d, 0);
}

static void
start_topo(struct sim *s, const struct policy_cpu *cpus, unsigned int n, const char *params)
{
    char err[POLICY_ERRLEN] = "";

    ck_assert_msg(sim_init(s, "credit2", n, cpus, params, err) == 0, "sim_init: %s", err);
}

/* --- arrangement ----------------------------------------------------------- */

enum topo_kind {
    TWO_NODES,   /* 8 CPUs, one socket, nodes {0-3} {4-7}, SMT pairs (2k, 2k+1) */
    TWO_SOCKETS, /* 8 CPUs, sockets {0-3} {4-7}, one node */
    FLAT20,      /* 20 CPUs, one socket, no SMT */
    SMT24,       /* 24 CPUs, 12 cores, siblings k and k+12 */
    FLAT40,      /* 40 CPUs, one socket */
};

static unsigned int
make_topo(enum topo_kind k, struct policy_cpu *c)
{
    static const unsigned int sizes[] = {8, 8, 20, 24, 40};
    unsigned int n = sizes[k];

    for (unsigned int i = 0; i < n; i++) {
        c[i] = (struct policy_cpu){.cpu = (int)i, .core = (int)i};
        if (k == TWO_NODES) {
            c[i].core = (int)i / 2;
            c[i].node = (int)i / 4;
        } else if (k == TWO_SOCKETS) {
            c[i].socket = (int)i / 4;
            c[i].core = (int)i % 4;
        } else if (k == SMT24) {
            c[i].core = (int)i % 12;
        }
    }
    return n;
}

struct arrange_case {
    enum topo_kind topo;
    const char *params;
    const char *expect; /* runqueue of each CPU, one character each */
};

static const struct arrange_case arrange_cases[] = {
    {TWO_NODES, NULL, "00000000"}, /* default: socket */
    {TWO_NODES, "runqueue=socket", "00000000"},
    {TWO_NODES, "runqueue=node", "00001111"},
    {TWO_NODES, "runqueue=core", "00112233"},
    {TWO_NODES, "runqueue=cpu", "01234567"},
    {TWO_NODES, "runqueue=all", "00000000"},
    {TWO_SOCKETS, "runqueue=socket", "00001111"},
    {TWO_SOCKETS, "runqueue=node", "00000000"},
    {TWO_SOCKETS, "runqueue=core", "01234567"}, /* a core id is per socket */
    /* At most 16 per runqueue, spread evenly: 20 -> 10 + 10. */
    {FLAT20, NULL, "00000000001111111111"},
    {FLAT20, "runqueue=all", "00000000001111111111"},
    /* SMT siblings stay together: 12 + 12 with both threads of a core. */
    {SMT24, NULL, "000000111111000000111111"},
    /* 40 -> at most 40/3 = 13 each, in CPU order (Xen's arithmetic). */
    {FLAT40, NULL, "0000000000000111111111111122222222222223"},
};

START_TEST(test_credit2_arrangement)
{
    const struct arrange_case *c = &arrange_cases[_i];
    struct policy_cpu cpus[CPUSET_MAX];
    unsigned int n = make_topo(c->topo, cpus);
    char name[16], err[POLICY_ERRLEN] = "";
    struct sim s;

    ck_assert_uint_eq(strlen(c->expect), n);
    start_topo(&s, cpus, n, c->params);
    for (unsigned int i = 0; i < n; i++) {
        struct sim_vcpu *v;

        snprintf(name, sizeof(name), "P%u", i);
        v = v0(sim_dom_add(&s, name, 1, sim_manual(), 1ULL << i, NULL, err));
        ck_assert_msg(vstat(&s, v, "runqueue") == c->expect[i] - '0',
                      "topology %d %s: cpu %u in runqueue %lld, want %c", c->topo,
                      c->params ? c->params : "", i, (long long)vstat(&s, v, "runqueue"),
                      c->expect[i]);
    }
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* A new vCPU counts half a vCPU; placement goes to the least loaded runqueue. */
START_TEST(test_credit2_new_vcpu_half_load)
{
    struct sim s;
    struct pool_dom *d;

    sim_start(&s, "credit2", 2, "runqueue=cpu");
    d = sim_add_ok(&s, "D", 4, sim_manual(), NULL);
    for (unsigned int i = 0; i < 4; i++) {
        ck_assert_int_eq(vstat(&s, sim_vcpu(d, i), "load_pct"), 50);
        ck_assert_int_eq(vstat(&s, sim_vcpu(d, i), "runqueue"), i % 2);
    }
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* --- node runqueues and balancing -------------------------------------------- */

/* Runqueue id of every vCPU, and whether its CPU belongs to that node. */
static void
check_on_node(struct sim *s, const struct policy_cpu *cpus, int64_t *rq, bool keep)
{
    for (unsigned int i = 0; i < s->nr_vcpus; i++) {
        struct sim_vcpu *v = s->vcpus[i];
        int64_t r = vstat(s, v, "runqueue");

        if (keep)
            ck_assert_int_eq(r, rq[i]);
        rq[i] = r;
        ck_assert_int_eq(cpus[v->pv->pv->cpu].node, r);
        if (v->running_on >= 0)
            ck_assert_int_eq(cpus[v->running_on].node, r);
    }
}

/*
 * Two nodes, runqueue=node: two runqueues of 4 CPUs; 8 hogs are placed 4
 * and 4 and stay on their node (equal loads: balancing has nothing to do).
 */
START_TEST(test_credit2_node_runqueues)
{
    struct policy_cpu cpus[8];
    int64_t rq[8];
    struct pool_dom *d;
    struct sim s;

    start_topo(&s, cpus, make_topo(TWO_NODES, cpus), "runqueue=node");
    d = sim_add_ok(&s, "D", 8, sim_busy(), NULL);
    check_on_node(&s, cpus, rq, false);
    for (unsigned int i = 0; i < 8; i++)
        ck_assert_int_eq(rq[i], i % 2);
    for (int step = 0; step < 200; step++) {
        sim_run(&s, MS(10));
        check_on_node(&s, cpus, rq, true);
    }
    for (unsigned int i = 0; i < 8; i++)
        ck_assert_msg(sim_share(&s, sim_vcpu(d, i)) > 0.99, "vcpu %u: %f", i,
                      sim_share(&s, sim_vcpu(d, i)));
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

static int64_t
sum_resets(struct sim *s)
{
    int64_t sum = 0;

    for (unsigned int i = 0; i < s->nr_vcpus; i++)
        sum += vstat(s, s->vcpus[i], "resets");
    return sum;
}

/*
 * Node 1's four hogs go to sleep: node 0's four keep its runqueue at 100 %
 * while node 1's decays, and balancing moves work over, only right after
 * credit resets, until each runqueue has two hogs. vCPUs always run on
 * the node of the runqueue they are assigned to.
 */
START_TEST(test_credit2_balance_at_reset)
{
    struct policy_cpu cpus[8];
    int64_t rq[8], resets;
    unsigned int moves = 0, hogs0 = 0;
    struct pool_dom *d;
    struct sim s;

    start_topo(&s, cpus, make_topo(TWO_NODES, cpus), "runqueue=node");
    d = sim_add_ok(&s, "D", 8, sim_busy(), NULL);
    sim_run(&s, SEC(1));
    for (unsigned int i = 1; i < 8; i += 2) /* runqueue 1's */
        sim_set_demand(&s, sim_vcpu(d, i), (struct sim_demand){.kind = SIM_IDLE});
    check_on_node(&s, cpus, rq, false);
    resets = sum_resets(&s);
    for (int step = 0; step < 15000; step++) {
        int64_t before[8], r;

        memcpy(before, rq, sizeof(before));
        sim_run(&s, US(200));
        check_on_node(&s, cpus, rq, false);
        r = sum_resets(&s);
        for (unsigned int i = 0; i < 8; i++) {
            if (rq[i] == before[i])
                continue;
            moves++;
            ck_assert_msg(r != resets, "vcpu %u moved at %llu ns without a reset", i,
                          (unsigned long long)s.now);
        }
        resets = r;
    }
    ck_assert_uint_ge(moves, 2);
    for (unsigned int i = 0; i < 8; i += 2)
        hogs0 += vstat(&s, sim_vcpu(d, i), "runqueue") == 0;
    ck_assert_uint_eq(hogs0, 2);
    sim_reset_stats(&s);
    sim_run(&s, SEC(1));
    for (unsigned int i = 0; i < 8; i += 2)
        ck_assert_msg(sim_share(&s, sim_vcpu(d, i)) > 0.99, "vcpu %u: %f", i,
                      sim_share(&s, sim_vcpu(d, i)));
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

struct threshold_case {
    const char *what;
    struct sim_demand rq0[2]; /* placed on runqueue 0 (kind IDLE: none) */
    struct sim_demand rq1;
    bool moves;
};

#define DUTY(pct)                                                                                  \
    {                                                                                              \
        .kind = SIM_DUTY, .run_ns = US(100) * (pct), .sleep_ns = US(100) * (100 - (pct))           \
    }
#define HOG                                                                                        \
    {                                                                                              \
        .kind = SIM_BUSY                                                                           \
    }
#define NONE                                                                                       \
    {                                                                                              \
        .kind = SIM_IDLE                                                                           \
    }

static const struct threshold_case threshold_cases[] = {
    /* Below 100 %: a gap under one vCPU is left alone. */
    {"0.9 vs 0.1", {DUTY(90), NONE}, DUTY(10), false},
    {"0.3+0.4 vs 0.1", {DUTY(30), DUTY(40)}, DUTY(10), false},
    /* At or above 100 %: an eighth of a vCPU is enough. */
    {"1+0.3 vs 0.6", {HOG, DUTY(30)}, DUTY(60), true},
    {"2 vs 0.5", {HOG, HOG}, DUTY(50), true},
};

/*
 * runqueue=cpu on 2 CPUs: two single-CPU runqueues. Placement alternates,
 * so rq0[0], rq1, rq0[1] are added in that order.
 */
START_TEST(test_credit2_balance_threshold)
{
    const struct threshold_case *c = &threshold_cases[_i];
    struct sim_vcpu *v[3] = {NULL, NULL, NULL};
    int64_t rq[3];
    unsigned int moves = 0;
    struct sim s;

    sim_start(&s, "credit2", 2, "runqueue=cpu");
    v[0] = v0(sim_add_ok(&s, "A", 1, c->rq0[0], NULL));
    v[1] = v0(sim_add_ok(&s, "B", 1, c->rq1, NULL));
    if (c->rq0[1].kind != SIM_IDLE)
        v[2] = v0(sim_add_ok(&s, "C", 1, c->rq0[1], NULL));
    for (int i = 0; i < 3; i++)
        if (v[i] != NULL)
            rq[i] = vstat(&s, v[i], "runqueue");
    ck_assert_int_eq(rq[0], 0);
    ck_assert_int_eq(rq[1], 1);
    for (int step = 0; step < 5000; step++) {
        sim_run(&s, MS(1));
        for (int i = 0; i < 3; i++) {
            if (v[i] != NULL && vstat(&s, v[i], "runqueue") != rq[i]) {
                rq[i] = vstat(&s, v[i], "runqueue");
                moves++;
            }
        }
    }
    ck_assert_msg((moves > 0) == c->moves, "%s: %u moves", c->what, moves);
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* Hard affinity is honoured: pinned vCPUs are never balanced away. */
START_TEST(test_credit2_balance_affinity)
{
    struct sim s;
    struct pool_dom *a, *b;

    sim_start(&s, "credit2", 2, "runqueue=cpu");
    a = sim_dom_add(&s, "A", 3, sim_busy(), 1, NULL, (char[POLICY_ERRLEN]){0});
    ck_assert_ptr_nonnull(a);
    b = sim_add_ok(&s, "B", 1, sim_manual(), NULL);
    sim_run(&s, SEC(3));
    for (unsigned int i = 0; i < 3; i++) {
        ck_assert_int_eq(vstat(&s, sim_vcpu(a, i), "runqueue"), 0);
        ck_assert_int_eq(vstat(&s, sim_vcpu(a, i), "migrations"), 0);
        ck_assert(sim_share(&s, sim_vcpu(a, i)) > 0.32);
    }
    (void)b;
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* Long simulations under ASan on a busy 2-CPU machine outlast Check's 4 s. */
#define CREDIT2_TEST_TIMEOUT_S 120

static Suite *
credit2_load_suite(void)
{
    Suite *s = suite_create("credit2_load");
    TCase *tc = tcase_create("load");

    tcase_set_timeout(tc, CREDIT2_TEST_TIMEOUT_S);
    tcase_add_loop_test(tc, test_credit2_arrangement, 0,
                        sizeof(arrange_cases) / sizeof(arrange_cases[0]));
    tcase_add_test(tc, test_credit2_new_vcpu_half_load);
    tcase_add_test(tc, test_credit2_node_runqueues);
    tcase_add_test(tc, test_credit2_balance_at_reset);
    tcase_add_loop_test(tc, test_credit2_balance_threshold, 0,
                        sizeof(threshold_cases) / sizeof(threshold_cases[0]));
    tcase_add_test(tc, test_credit2_balance_affinity);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(credit2_load_suite());
}
