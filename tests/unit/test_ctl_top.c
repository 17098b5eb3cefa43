/* SPDX-License-Identifier: ISC */
/*
 * test_ctl_top.c - what `vcpuschedctl top` computes and shows
 * (vcpusched/ctl/ctl_top_model.c, ctl_top_render.c) from two canned
 * samples 2 s apart (tests/fixtures/ctl/top-*.json): rates from counter
 * deltas, what is unknown (the first sample, a new thread, a counter
 * that went back, a counter the policy does not keep), sums per domain,
 * pool and host, the orders, and the frame against a golden file. The
 * terminal itself is driven through tmux in test_top.py.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "ctl_top_model.h"
#include "ctl_top_render.h"
#include "golden.h"
#include "testutil.h"

#define EPS 1e-9

/* Sample `n` of the fixtures (0 or 1). */
static void
sample(struct top_sample *s, int n)
{
    char st[32], li[32];

    snprintf(st, sizeof(st), "top-stats-%d.json", n);
    snprintf(li, sizeof(li), "top-list-%d.json", n);
    ck_assert_int_eq(top_sample_build(s, fixture_load(CTL_FIXTURE_DIR, st),
                                      fixture_load(CTL_FIXTURE_DIR, li), 1),
                     0);
}

/* Sample 1 with its rates against sample 0. */
static void
pair(struct top_sample *s0, struct top_sample *s1)
{
    sample(s0, 0);
    sample(s1, 1);
    top_sample_rates(s1, s0);
}

static const struct top_dom *
dom(const struct top_sample *s, const char *name)
{
    for (size_t i = 0; i < s->nr_doms; i++)
        if (strcmp(s->doms[i].name, name) == 0)
            return &s->doms[i];
    ck_abort_msg("no domain %s", name);
    return NULL;
}

static const struct top_pool *
pool(const struct top_sample *s, const char *name)
{
    for (size_t i = 0; i < s->nr_pools; i++)
        if (strcmp(s->pools[i].name, name) == 0)
            return &s->pools[i];
    ck_abort_msg("no pool %s", name);
    return NULL;
}

#define ck_assert_rate(got, want)                                                                  \
    ck_assert_msg(fabs((got) - (want)) < EPS, "%s: %g, want %g", #got, (got), (double)(want))
#define ck_assert_unknown(got) ck_assert_msg(isnan(got), "%s: %g, want unknown", #got, (got))

/* 1 s of CPU over 2 s is 50 %; 24 wakes are 12/s; Credit keeps boosts, not resets. */
START_TEST(test_vcpu_rates)
{
    struct top_sample s0, s1;
    const struct top_dom *web, *db;

    pair(&s0, &s1);
    web = dom(&s1, "web1");
    ck_assert_uint_eq(web->nr_vcpus, 2);
    ck_assert_rate(web->vcpus[0].cpu_pct, 50.0);
    ck_assert_rate(web->vcpus[0].wakes_s, 12.0);
    ck_assert_rate(web->vcpus[0].boosts_s, 3.0);
    ck_assert_unknown(web->vcpus[0].resets_s);
    /* vcpu1 is another thread now (tid 4251 -> 4299): nothing is known. */
    ck_assert_unknown(web->vcpus[1].cpu_pct);
    ck_assert_unknown(web->vcpus[1].wakes_s);
    ck_assert(web->vcpus[0].boosted && web->vcpus[0].elevated);
    db = dom(&s1, "db2");
    ck_assert_rate(db->vcpus[0].cpu_pct, 20.0);
    ck_assert_rate(db->vcpus[0].wakes_s, 50.0);
    ck_assert_rate(db->vcpus[0].resets_s, 5.0);
    ck_assert_unknown(db->vcpus[0].boosts_s);
    ck_assert_str_eq(db->vcpus[0].state, "parked");
    top_sample_free(&s0);
    top_sample_free(&s1);
}
END_TEST

/* Domains sum their known vCPUs; pools their domains; the host its pools. */
START_TEST(test_sums)
{
    struct top_sample s0, s1;
    const struct top_dom *web = NULL;

    pair(&s0, &s1);
    web = dom(&s1, "web1");
    ck_assert_rate(web->cpu_pct, 50.0);
    ck_assert_rate(web->wakes_s, 12.0);
    ck_assert_rate(web->boosts_s, 3.0);
    ck_assert_unknown(web->resets_s);
    ck_assert_uint_eq(web->boosted, 1);
    ck_assert_uint_eq(dom(&s1, "db2")->parked, 1);
    ck_assert_unknown(dom(&s1, "bare")->cpu_pct); /* no vCPU */
    ck_assert_unknown(dom(&s1, "late")->cpu_pct); /* new since sample 0 */
    ck_assert_rate(pool(&s1, "main")->cpu_pct, 50.0);
    ck_assert_rate(pool(&s1, "main")->picks_s, 200.0);
    ck_assert_rate(pool(&s1, "main")->disp_pct, 1.0);
    ck_assert_rate(pool(&s1, "p2")->cpu_pct, 20.0);
    ck_assert_rate(pool(&s1, "p2")->picks_s, 500.0);
    ck_assert_rate(pool(&s1, "p2")->disp_pct, 5.0);
    ck_assert_rate(s1.cpu_pct, 70.0);
    ck_assert_rate(s1.disp_pct, 6.0);
    ck_assert_rate(s1.picks_s, 700.0);
    ck_assert_int_eq(s1.nr_cpus, 4);
    ck_assert_int_eq(s1.nr_vcpus, 4);
    ck_assert_str_eq(pool(&s1, "p2")->cpus, "2-3,5");
    ck_assert_str_eq(web->params, "weight=512 cap=0");
    top_sample_free(&s0);
    top_sample_free(&s1);
}
END_TEST

/* The first sample, no time between samples, a counter that went back: unknown. */
START_TEST(test_unknown)
{
    struct top_sample s0, s1;

    sample(&s0, 0);
    ck_assert_unknown(dom(&s0, "web1")->cpu_pct);
    ck_assert_unknown(pool(&s0, "main")->picks_s);
    ck_assert_unknown(s0.cpu_pct);
    sample(&s1, 0);
    top_sample_rates(&s1, &s0); /* the same now_ns */
    ck_assert_unknown(dom(&s1, "web1")->vcpus[0].cpu_pct);
    ck_assert_unknown(pool(&s1, "main")->disp_pct);
    top_sample_free(&s1);
    sample(&s1, 1);
    top_sample_rates(&s0, &s1); /* backwards in time */
    ck_assert_unknown(dom(&s0, "web1")->vcpus[0].cpu_pct);
    /* A newer sample whose counters are lower (a restarted daemon). */
    s0.now_ns = s1.now_ns + 1000000000;
    top_sample_rates(&s0, &s1);
    ck_assert_unknown(dom(&s0, "web1")->vcpus[0].cpu_pct);
    ck_assert_unknown(pool(&s0, "main")->picks_s);
    ck_assert_rate(pool(&s0, "main")->cpu_pct, 0.0); /* a known pool, no known domain */
    top_sample_free(&s0);
    top_sample_free(&s1);
}
END_TEST

/* Without now_ns (an older daemon) the caller's clock stands in. */
START_TEST(test_client_clock)
{
    struct json_object *stats = json_tokener_parse("{\"pools\": []}");
    struct json_object *l0 = json_tokener_parse("{\"domains\": [{\"name\": \"d\", \"vcpus\": "
                                                "[{\"index\": 0, \"tid\": 5, \"run_ns\": 0}]}]}");
    struct json_object *l1 =
        json_tokener_parse("{\"domains\": [{\"name\": \"d\", \"vcpus\": [{\"index\": 0, \"tid\": 5,"
                           " \"run_ns\": 250000000}]}]}");
    struct top_sample s0, s1;

    ck_assert_int_eq(top_sample_build(&s0, json_object_get(stats), l0, 1000000000), 0);
    ck_assert_int_eq(top_sample_build(&s1, stats, l1, 1500000000), 0);
    top_sample_rates(&s1, &s0);
    ck_assert_rate(s1.doms[0].cpu_pct, 50.0);
    ck_assert_unknown(s1.doms[0].wakes_s); /* no wakes counter */
    top_sample_free(&s0);
    top_sample_free(&s1);
}
END_TEST

/* Not a stats and a list result: -EPROTO; the references are still put. */
START_TEST(test_bad_shape)
{
    struct top_sample s;

    ck_assert_int_eq(
        top_sample_build(&s, json_tokener_parse("{}"), json_tokener_parse("{\"domains\": []}"), 1),
        -EPROTO);
    top_sample_free(&s);
    ck_assert_int_eq(top_sample_build(&s, json_tokener_parse("{\"pools\": []}"), NULL, 1), -EPROTO);
    top_sample_free(&s);
}
END_TEST

static const struct {
    enum top_sort key;
    const char *order; /* the domains, in order */
} sorts[] = {
    {TOP_SORT_CPU, "web1 db2 bare late"},   /* CPU% down; unknown last, by name */
    {TOP_SORT_NAME, "bare db2 late web1"},  /* names */
    {TOP_SORT_WAKES, "db2 web1 bare late"}, /* wakes/s down */
    {TOP_SORT_POOL, "web1 bare late db2"},  /* pool main, then p2; CPU% down inside */
};

START_TEST(test_sort)
{
    struct top_sample s0, s1;
    char got[128] = "";

    pair(&s0, &s1);
    top_sample_sort(&s1, sorts[_i].key);
    for (size_t i = 0; i < s1.nr_doms; i++)
        snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", i ? " " : "",
                 s1.doms[i].name);
    ck_assert_str_eq(got, sorts[_i].order);
    /* Rates stay with their domain. */
    ck_assert_rate(dom(&s1, "db2")->cpu_pct, 20.0);
    ck_assert_int_eq(top_sort_parse(top_sort_name(sorts[_i].key)), (int)sorts[_i].key);
    top_sample_free(&s0);
    top_sample_free(&s1);
}
END_TEST

START_TEST(test_sort_names)
{
    ck_assert_int_eq(top_sort_parse("cpu"), TOP_SORT_CPU);
    ck_assert_int_eq(top_sort_parse("pool"), TOP_SORT_POOL);
    ck_assert_int_eq(top_sort_parse("CPU"), -1);
    ck_assert_int_eq(top_sort_parse(""), -1);
}
END_TEST

static char *
render(const struct top_sample *s, const struct top_view *v)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);

    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(top_render(m, s, v), 0);
    ck_assert_int_eq(fclose(m), 0);
    return text;
}

/* The frame: header and totals, pools, domains with their vCPUs. */
START_TEST(test_render)
{
    struct top_view v = {.sort = TOP_SORT_CPU, .vcpus = true, .delay_s = 2, .status = "keys"};
    struct top_sample s0, s1;
    char *text;

    pair(&s0, &s1);
    top_sample_sort(&s1, v.sort);
    text = render(&s1, &v);
    golden_compare(CTL_FIXTURE_DIR, "top-frame.txt", text);
    free(text);
    /* Domains only: no vCPU row, the rest unchanged. */
    v.vcpus = false;
    text = render(&s1, &v);
    ck_assert_ptr_null(strstr(text, "vcpu0"));
    ck_assert_ptr_nonnull(strstr(text, "\nweb1 "));
    free(text);
    /* The first sample: rates unknown. */
    text = render(&s0, &v);
    ck_assert_ptr_nonnull(strstr(text, "vcpus: vcpus - cpu, dispatchers - cpu, - picks/s\n"));
    free(text);
    top_sample_free(&s0);
    top_sample_free(&s1);
}
END_TEST

static Suite *
top_suite(void)
{
    Suite *s = suite_create("ctl_top");
    TCase *tc = tcase_create("model");

    tcase_add_test(tc, test_vcpu_rates);
    tcase_add_test(tc, test_sums);
    tcase_add_test(tc, test_unknown);
    tcase_add_test(tc, test_client_clock);
    tcase_add_test(tc, test_bad_shape);
    tcase_add_loop_test(tc, test_sort, 0, sizeof(sorts) / sizeof(sorts[0]));
    tcase_add_test(tc, test_sort_names);
    tcase_add_test(tc, test_render);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(top_suite());
}
