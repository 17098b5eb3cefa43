/* SPDX-License-Identifier: ISC */
/*
 * test_hotplug.c - vCPU hot-plug and unplug in the pool layer
 * (pool_vcpu_add, pool_vcpu_remove) under every policy, on the simulator:
 * the new vCPU is scheduled, the removed one never again, the domain's
 * other vCPUs keep their records, ids and counters, and no decision
 * breaks the ops contract.
 */
#include <string.h>

#include "testutil.h"

static const char *const policies[] = {"rr", "credit", "credit2"};

/* Plug a busy vCPU into a running 1-vCPU domain beside another domain, then unplug it. */
START_TEST(test_plug_unplug_running)
{
    struct sim s;
    struct pool_dom *a, *b;
    struct sim_vcpu *a0, *b0, *a1;
    struct pool_vcpu *a0pv;
    uint32_t a0id;
    uint64_t a0run;
    char err[POLICY_ERRLEN] = "";

    sim_start(&s, policies[_i], 2, NULL);
    a = sim_add_ok(&s, "A", 1, sim_busy(), NULL);
    b = sim_add_ok(&s, "B", 1, sim_busy(), NULL);
    a0 = sim_vcpu(a, 0);
    b0 = sim_vcpu(b, 0);
    sim_run(&s, MS(200));
    a0pv = a0->pv;
    a0id = a0->pv->pv->id;
    a0run = a0->pv->run_ns;
    ck_assert_uint_gt(a0run, 0);

    a1 = sim_vcpu_plug(&s, a, sim_busy(), err);
    ck_assert_msg(a1 != NULL, "%s", err);
    ck_assert_uint_eq(a->nr_vcpus, 2);
    ck_assert_uint_eq(a1->pv->index, 1);
    ck_assert_ptr_eq(sim_vcpu(a, 1), a1);
    /* The other vCPU is the same record, with its id and counters. */
    ck_assert_ptr_eq(a0->pv, a0pv);
    ck_assert_ptr_eq(sim_vcpu(a, 0), a0);
    ck_assert_uint_eq(a0->pv->pv->id, a0id);
    ck_assert_uint_ge(a0->pv->run_ns, a0run);
    ck_assert_uint_ne(a1->pv->pv->id, a0id);
    ck_assert_uint_ne(a1->pv->pv->id, b0->pv->pv->id);
    ck_assert_uint_eq(s.pool.stats.policy_switches, 0);

    sim_reset_stats(&s);
    sim_run(&s, MS(1000));
    ck_assert_msg(sim_share(&s, a1) > 0.2, "%s: the plugged vCPU got %.3f", policies[_i],
                  sim_share(&s, a1));
    ck_assert_msg(sim_share(&s, a0) > 0.2 && sim_share(&s, b0) > 0.2, "%s: %.3f %.3f", policies[_i],
                  sim_share(&s, a0), sim_share(&s, b0));
    ck_assert_no_violations(&s);

    ck_assert_int_eq(sim_vcpu_unplug(&s, a1), 0);
    ck_assert_uint_eq(a->nr_vcpus, 1);
    ck_assert_ptr_eq(sim_vcpu(a, 0), a0);
    sim_reset_stats(&s);
    sim_run(&s, MS(1000));
    /* Two busy vCPUs on two CPUs: each has one. */
    ck_assert_msg(sim_share(&s, a0) > 0.9 && sim_share(&s, b0) > 0.9, "%s: %.3f %.3f", policies[_i],
                  sim_share(&s, a0), sim_share(&s, b0));
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* Unplug whichever vCPU is elected at that moment, many times: never elected again. */
START_TEST(test_unplug_elected)
{
    struct sim s;
    struct pool_dom *a;
    char err[POLICY_ERRLEN] = "";

    sim_start(&s, policies[_i], 1, NULL);
    a = sim_add_ok(&s, "A", 3, sim_duty(US(300), US(200)), NULL);
    for (int round = 0; round < 20; round++) {
        struct pool_vcpu *el;

        sim_run(&s, US(700));
        el = s.pool.cpu[0].elected;
        if (el == NULL || a->nr_vcpus == 1) {
            ck_assert_ptr_nonnull(sim_vcpu_plug(&s, a, sim_duty(US(300), US(200)), err));
            continue;
        }
        ck_assert_int_eq(sim_vcpu_unplug(&s, el->owner), 0);
        ck_assert_ptr_ne(s.pool.cpu[0].elected, el);
        ck_assert_ptr_nonnull(sim_vcpu_plug(&s, a, sim_duty(US(300), US(200)), err));
    }
    sim_run(&s, MS(50));
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* Numbering, limits and refusals: nothing changes on error. */
START_TEST(test_plug_rules)
{
    struct sim s;
    struct pool_dom *a;
    struct sim_vcpu *v;
    struct cpuset far = cpuset_of_word(1ULL << 7);
    char err[POLICY_ERRLEN] = "";

    sim_start(&s, policies[_i], 2, NULL);
    a = sim_add_ok(&s, "A", 3, sim_busy(), NULL);
    /* Unplug vCPU 1: 0 and 2 keep their numbers; the next one is 3. */
    ck_assert_int_eq(sim_vcpu_unplug(&s, sim_vcpu(a, 1)), 0);
    ck_assert_uint_eq(a->vcpus[0]->index, 0);
    ck_assert_uint_eq(a->vcpus[1]->index, 2);
    v = sim_vcpu_plug(&s, a, sim_busy(), err);
    ck_assert_ptr_nonnull(v);
    ck_assert_uint_eq(v->pv->index, 3);
    /* Affinity outside the pool: refused, the domain unchanged. */
    ck_assert_int_eq(pool_vcpu_add(&s.pool, a, &far, s.now, NULL, err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "may not use any CPU"));
    ck_assert_uint_eq(a->nr_vcpus, 3);
    /* The last vCPU stays: the domain is detached instead. */
    ck_assert_int_eq(sim_vcpu_unplug(&s, sim_vcpu(a, 0)), 0);
    ck_assert_int_eq(sim_vcpu_unplug(&s, sim_vcpu(a, 0)), 0);
    ck_assert_int_eq(sim_vcpu_unplug(&s, sim_vcpu(a, 0)), -EBUSY);
    ck_assert_uint_eq(a->nr_vcpus, 1);
    sim_run(&s, MS(20));
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

/* A switch after hot-plug keeps every vCPU's id, and the new instance runs them all. */
START_TEST(test_plug_then_switch)
{
    struct sim s;
    struct pool_dom *a;
    struct sim_vcpu *v;
    uint32_t ids[3];
    char err[POLICY_ERRLEN] = "";

    sim_start(&s, "credit", 2, NULL);
    a = sim_add_ok(&s, "A", 2, sim_busy(), NULL);
    sim_add_ok(&s, "B", 1, sim_busy(), NULL);
    v = sim_vcpu_plug(&s, a, sim_busy(), err);
    ck_assert_ptr_nonnull(v);
    for (unsigned int i = 0; i < 3; i++)
        ids[i] = a->vcpus[i]->pv->id;
    ck_assert_int_eq(sim_switch(&s, policies[_i], NULL, err), 0);
    for (unsigned int i = 0; i < 3; i++)
        ck_assert_uint_eq(a->vcpus[i]->pv->id, ids[i]);
    sim_reset_stats(&s);
    sim_run(&s, MS(500));
    ck_assert_msg(sim_share(&s, v) > 0.1, "%.3f", sim_share(&s, v));
    ck_assert_no_violations(&s);
    sim_fini(&s);
}
END_TEST

static Suite *
hotplug_suite(void)
{
    Suite *s = suite_create("hotplug");
    TCase *tc = tcase_create("hotplug");

    tcase_add_loop_test(tc, test_plug_unplug_running, 0, 3);
    tcase_add_loop_test(tc, test_unplug_elected, 0, 3);
    tcase_add_loop_test(tc, test_plug_rules, 0, 3);
    tcase_add_loop_test(tc, test_plug_then_switch, 0, 3);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(hotplug_suite());
}
