/* SPDX-License-Identifier: ISC */
/*
 * test_ctl_metrics.c - the metrics formatter (vcpusched/control/ctl_metrics.c):
 * canned `stats` and `list` results in both text formats against golden
 * files, the structure both formats require (metadata before a family's
 * samples, each family once, counters ending in _total, # EOF), label
 * escaping, units, the histogram, and what is left out. A real daemon's
 * output goes through a real OpenMetrics parser in test_top.py.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "control/ctl_metrics.h"
#include "golden.h"
#include "testutil.h"

static struct json_object *
fixture(const char *name)
{
    return fixture_load(CTL_FIXTURE_DIR, name);
}

/* The formatter's text (malloc'd) and return value. */
static char *
format(struct json_object *stats, struct json_object *list, enum ctl_metrics_format fmt, int *r)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);

    ck_assert_ptr_nonnull(m);
    *r = ctl_metrics_write(m, stats, list, fmt);
    ck_assert_int_eq(fclose(m), 0);
    return text;
}

static char *
format_ok(struct json_object *stats, struct json_object *list, enum ctl_metrics_format fmt)
{
    int r;
    char *text = format(stats, list, fmt, &r);

    ck_assert_msg(r == 0, "ctl_metrics_write: %d", r);
    return text;
}

static bool
starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/*
 * What both formats require of the text: every sample is preceded by its
 * family's # TYPE (the family name, plus _total/_info/_bucket/_count/_sum
 * as its type gives); each family appears once; OpenMetrics ends with
 * # EOF and nothing after it. Returns the number of samples.
 */
static int
check_structure(const char *text, enum ctl_metrics_format fmt)
{
    char *copy = strdup(text), *save = NULL, fam[128] = "", type[32] = "", seen[16384] = " ";
    char help[128] = "";
    bool eof = false;
    int samples = 0;

    for (char *line = strtok_r(copy, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        char name[128], key[136];
        size_t fl = strlen(fam);

        ck_assert_msg(!eof, "a line after # EOF: %s", line);
        if (strcmp(line, "# EOF") == 0) {
            eof = true;
            continue;
        }
        if (starts(line, "# TYPE ")) {
            ck_assert_int_eq(sscanf(line, "# TYPE %127s %31s", fam, type), 2);
            ck_assert_msg(fmt == CTL_METRICS_OPENMETRICS || strcmp(help, fam) == 0,
                          "%s: HELP %s before it", fam, help);
            snprintf(key, sizeof(key), " %s ", fam);
            ck_assert_msg(strstr(seen, key) == NULL, "family %s twice", fam);
            ck_assert_uint_lt(strlen(seen) + strlen(key), sizeof(seen));
            strcat(seen, key + 1);
            ck_assert_msg(starts(fam, "vcpusched_"), "%s lacks the prefix", fam);
            if (fmt == CTL_METRICS_PROMETHEUS && strcmp(type, "counter") == 0)
                ck_assert_msg(strstr(fam, "_total") != NULL, "counter %s", fam);
            continue;
        }
        if (starts(line, "# ")) {
            ck_assert_msg(starts(line, "# HELP ") || starts(line, "# UNIT "), "line: %s", line);
            ck_assert_msg(fmt == CTL_METRICS_OPENMETRICS || !starts(line, "# UNIT "),
                          "UNIT in the Prometheus format");
            ck_assert_int_eq(sscanf(line + 7, "%127s", name), 1);
            /* OpenMetrics: after its TYPE; Prometheus: HELP just before it. */
            if (fmt == CTL_METRICS_OPENMETRICS)
                ck_assert_msg(strcmp(name, fam) == 0, "metadata of another family: %s", line);
            else
                snprintf(help, sizeof(help), "%s", name);
            continue;
        }
        ck_assert_int_eq(sscanf(line, "%127[^{ ]", name), 1);
        ck_assert_msg(fl > 0 && starts(name, fam), "sample %s outside family %s", name, fam);
        if (fmt == CTL_METRICS_OPENMETRICS && strcmp(type, "counter") == 0)
            ck_assert_str_eq(name + fl, "_total");
        if (strcmp(type, "gauge") == 0)
            ck_assert_str_eq(name + fl, "");
        if (strcmp(type, "info") == 0)
            ck_assert_str_eq(name + fl, "_info");
        if (strcmp(type, "histogram") == 0)
            ck_assert_msg(strcmp(name + fl, "_bucket") == 0 || strcmp(name + fl, "_count") == 0 ||
                              strcmp(name + fl, "_sum") == 0,
                          "histogram sample %s", name);
        samples++;
    }
    ck_assert_int_eq(eof, fmt == CTL_METRICS_OPENMETRICS);
    free(copy);
    return samples;
}

static const struct {
    enum ctl_metrics_format fmt;
    const char *golden;
} goldens[] = {
    {CTL_METRICS_OPENMETRICS, "metrics.om"},
    {CTL_METRICS_PROMETHEUS, "metrics.prom"},
};

START_TEST(test_golden)
{
    struct json_object *stats = fixture("metrics-stats.json"), *list = fixture("metrics-list.json");
    char *text = format_ok(stats, list, goldens[_i].fmt);

    ck_assert_int_gt(check_structure(text, goldens[_i].fmt), 100);
    golden_compare(CTL_FIXTURE_DIR, goldens[_i].golden, text);
    free(text);
    json_object_put(stats);
    json_object_put(list);
}
END_TEST

/* The same series in both formats: only the metadata differs. */
START_TEST(test_formats_share_samples)
{
    struct json_object *stats = fixture("metrics-stats.json"), *list = fixture("metrics-list.json");
    char *om = format_ok(stats, list, CTL_METRICS_OPENMETRICS);
    char *prom = format_ok(stats, list, CTL_METRICS_PROMETHEUS);
    char *a = om, *b = prom;

    for (;;) {
        while (*a == '#')
            a = strchr(a, '\n') + 1;
        while (*b == '#')
            b = strchr(b, '\n') + 1;
        if (*a == '\0' || *b == '\0')
            break;
        ck_assert_int_eq(strcspn(a, "\n"), strcspn(b, "\n"));
        ck_assert_msg(strncmp(a, b, strcspn(a, "\n")) == 0, "%.80s vs %.80s", a, b);
        a += strcspn(a, "\n") + 1;
        b += strcspn(b, "\n") + 1;
    }
    ck_assert_int_eq(*a, *b);
    free(om);
    free(prom);
    json_object_put(stats);
    json_object_put(list);
}
END_TEST

/* stats alone: daemon and pools, no domain or vCPU family. */
START_TEST(test_stats_only)
{
    struct json_object *stats = fixture("metrics-stats.json");
    char *text = format_ok(stats, NULL, CTL_METRICS_OPENMETRICS);

    check_structure(text, CTL_METRICS_OPENMETRICS);
    ck_assert_ptr_nonnull(strstr(text, "vcpusched_pool_picks_total{pool=\"p2\"} 52000\n"));
    ck_assert_ptr_null(strstr(text, "vcpusched_domain"));
    ck_assert_ptr_null(strstr(text, "vcpusched_vcpu"));
    free(text);
    json_object_put(stats);
}
END_TEST

/* Not a stats or list result: -EPROTO and nothing written. */
START_TEST(test_bad_shapes)
{
    struct json_object *stats = fixture("metrics-stats.json");
    struct json_object *nopools = json_tokener_parse("{\"domains\": []}");
    struct json_object *nodoms = json_tokener_parse("{\"pools\": []}");
    struct json_object *notobj = json_tokener_parse("[1, 2]");
    int r;
    char *text;

    text = format(nopools, NULL, CTL_METRICS_OPENMETRICS, &r);
    ck_assert_int_eq(r, -EPROTO);
    ck_assert_str_eq(text, "");
    free(text);
    text = format(stats, nodoms, CTL_METRICS_OPENMETRICS, &r);
    ck_assert_int_eq(r, -EPROTO);
    ck_assert_str_eq(text, "");
    free(text);
    text = format(notobj, NULL, CTL_METRICS_PROMETHEUS, &r);
    ck_assert_int_eq(r, -EPROTO);
    free(text);
    text = format(NULL, NULL, CTL_METRICS_PROMETHEUS, &r);
    ck_assert_int_eq(r, -EPROTO);
    free(text);
    json_object_put(stats);
    json_object_put(nopools);
    json_object_put(nodoms);
    json_object_put(notobj);
}
END_TEST

/* Label values escape backslash, quote and newline; other control bytes become '?'. */
START_TEST(test_label_escaping)
{
    struct json_object *stats =
        json_tokener_parse("{\"pools\": [{\"name\": \"a\\\\b\\\"c\\nd\\te\", \"domains\": 1}]}");
    char *text = format_ok(stats, NULL, CTL_METRICS_OPENMETRICS);

    ck_assert_ptr_nonnull(strstr(text, "vcpusched_pool_domains{pool=\"a\\\\b\\\"c\\nd?e\"} 1\n"));
    check_structure(text, CTL_METRICS_OPENMETRICS);
    free(text);
    json_object_put(stats);
}
END_TEST

/* ns and us become seconds exactly; negative counters and durations are left out. */
START_TEST(test_values)
{
    struct json_object *stats = json_tokener_parse(
        "{\"uptime_ns\": 1500000000, \"rt_runtime_us\": -1, \"managed_threads\": 0,"
        " \"pools\": [{\"name\": \"p\", \"dispatcher_cpu_ns\": 1, \"picks\": -5,"
        "  \"domains\": \"two\"},"
        "  {\"name\": \"q\", \"dispatcher_cpu_ns\": 3000000000}]}");
    char *text = format_ok(stats, NULL, CTL_METRICS_OPENMETRICS);

    ck_assert_ptr_nonnull(strstr(text, "\nvcpusched_uptime_seconds 1.5\n"));
    ck_assert_ptr_nonnull(strstr(text, "\nvcpusched_managed_threads 0\n"));
    ck_assert_ptr_null(strstr(text, "rt_runtime"));
    ck_assert_ptr_nonnull(
        strstr(text, "vcpusched_pool_dispatcher_cpu_seconds_total{pool=\"p\"} 0.000000001\n"));
    ck_assert_ptr_nonnull(
        strstr(text, "vcpusched_pool_dispatcher_cpu_seconds_total{pool=\"q\"} 3\n"));
    ck_assert_ptr_null(strstr(text, "pool_picks"));   /* negative: no series, no metadata */
    ck_assert_ptr_null(strstr(text, "pool_domains")); /* not an integer */
    ck_assert_ptr_nonnull(strstr(text, "# UNIT vcpusched_uptime_seconds seconds\n"));
    free(text);
    json_object_put(stats);
}
END_TEST

/*
 * The log2 histogram as cumulative buckets from 1.024 us, the open last
 * bucket only in +Inf; _count and _sum only with the sum.
 */
START_TEST(test_histogram)
{
    struct json_object *stats =
        json_tokener_parse("{\"pools\": [{\"name\": \"p\", \"wake_to_mid_sum_ns\": 2500,"
                           "  \"wake_to_mid_hist\": [1,0,0,0,0,0,0,0,0,0,2,0,0,0,0,0,0,0,0,0,"
                           "                         0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,5,7]},"
                           " {\"name\": \"q\", \"wake_to_mid_hist\": [0,0,0,0,0,0,0,0,0,0,4]}]}");
    char *text = format_ok(stats, NULL, CTL_METRICS_OPENMETRICS);
    const char *p = "vcpusched_pool_wake_to_mid_seconds";
    char want[256];

    snprintf(want, sizeof(want), "%s_bucket{pool=\"p\",le=\"1.024e-06\"} 1\n", p);
    ck_assert_ptr_nonnull(strstr(text, want)); /* bucket 0 folded into the first */
    snprintf(want, sizeof(want), "%s_bucket{pool=\"p\",le=\"2.048e-06\"} 3\n", p);
    ck_assert_ptr_nonnull(strstr(text, want));
    snprintf(want, sizeof(want), "%s_bucket{pool=\"p\",le=\"274.877906944\"} 3\n", p);
    ck_assert_ptr_nonnull(strstr(text, want));
    snprintf(want, sizeof(want), "%s_bucket{pool=\"p\",le=\"549.755813888\"} 8\n", p);
    ck_assert_ptr_nonnull(strstr(text, want));
    snprintf(want, sizeof(want), "%s_bucket{pool=\"p\",le=\"+Inf\"} 15\n", p);
    ck_assert_ptr_nonnull(strstr(text, want));
    snprintf(want, sizeof(want), "%s_count{pool=\"p\"} 15\n%s_sum{pool=\"p\"} 0.0000025\n", p, p);
    ck_assert_ptr_nonnull(strstr(text, want));
    /* q: no sum, so no _count either; its last entry is the open bucket. */
    snprintf(want, sizeof(want), "%s_bucket{pool=\"q\",le=\"1.024e-06\"} 0\n", p);
    ck_assert_ptr_nonnull(strstr(text, want));
    snprintf(want, sizeof(want), "%s_bucket{pool=\"q\",le=\"+Inf\"} 4\n# EOF\n", p);
    ck_assert_ptr_nonnull(strstr(text, want));
    ck_assert_ptr_null(strstr(text, "_count{pool=\"q\"}"));
    check_structure(text, CTL_METRICS_OPENMETRICS);
    free(text);
    json_object_put(stats);
}
END_TEST

/* States as 0/1 series (an unknown one added), Credit's BOOST, policy counters. */
START_TEST(test_vcpu_series)
{
    struct json_object *stats = json_tokener_parse("{\"pools\": []}");
    struct json_object *list = json_tokener_parse(
        "{\"domains\": [{\"name\": \"d\", \"pool\": \"p\", \"policy\": \"credit\", \"pid\": 7,"
        "  \"source\": \"pid\", \"params\": {\"weight\": \"256\", \"note\": \"x\","
        "  \"boost\": \"off\"},"
        "  \"vcpus\": [{\"index\": 0, \"tid\": 8, \"state\": \"napping\", \"level\": \"mid\","
        "              \"policy\": {\"pri\": \"BOOST\", \"boosts\": 4}},"
        "             {\"index\": 1, \"tid\": 9, \"state\": \"parked\", \"level\": \"low\","
        "              \"policy\": {\"pri\": \"OVER\", \"resets\": 2}}]}]}");
    char *text = format_ok(stats, list, CTL_METRICS_OPENMETRICS);

    ck_assert_ptr_nonnull(strstr(
        text, "vcpusched_domain_info{pool=\"p\",domain=\"d\",policy=\"credit\",source=\"pid\","
              "pid=\"7\"} 1\n"));
    ck_assert_ptr_nonnull(
        strstr(text, "vcpusched_domain_param{pool=\"p\",domain=\"d\",param=\"weight\"} 256\n"));
    ck_assert_ptr_nonnull(
        strstr(text, "vcpusched_domain_param{pool=\"p\",domain=\"d\",param=\"boost\"} 0\n"));
    ck_assert_ptr_null(strstr(text, "param=\"note\""));
    ck_assert_ptr_nonnull(
        strstr(text, "vcpusched_vcpu_info{pool=\"p\",domain=\"d\",vcpu=\"1\",tid=\"9\"} 1\n"));
    ck_assert_ptr_nonnull(strstr(
        text, "vcpusched_vcpu_state{pool=\"p\",domain=\"d\",vcpu=\"0\",state=\"running\"} 0\n"));
    ck_assert_ptr_nonnull(strstr(
        text, "vcpusched_vcpu_state{pool=\"p\",domain=\"d\",vcpu=\"0\",state=\"napping\"} 1\n"));
    ck_assert_ptr_nonnull(strstr(
        text, "vcpusched_vcpu_state{pool=\"p\",domain=\"d\",vcpu=\"1\",state=\"parked\"} 1\n"));
    ck_assert_ptr_nonnull(
        strstr(text, "vcpusched_vcpu_elevated{pool=\"p\",domain=\"d\",vcpu=\"0\"} 1\n"
                     "vcpusched_vcpu_elevated{pool=\"p\",domain=\"d\",vcpu=\"1\"} 0\n"));
    ck_assert_ptr_nonnull(strstr(text,
                                 "vcpusched_vcpu_boosted{pool=\"p\",domain=\"d\",vcpu=\"0\"} 1\n"
                                 "vcpusched_vcpu_boosted{pool=\"p\",domain=\"d\",vcpu=\"1\"} 0\n"));
    ck_assert_ptr_nonnull(
        strstr(text, "vcpusched_vcpu_boosts_total{pool=\"p\",domain=\"d\",vcpu=\"0\"} 4\n#"));
    ck_assert_ptr_nonnull(strstr(
        text, "vcpusched_vcpu_credit_resets_total{pool=\"p\",domain=\"d\",vcpu=\"1\"} 2\n#"));
    ck_assert_ptr_null(strstr(text, "vcpu_run_seconds")); /* no run_ns: no family */
    check_structure(text, CTL_METRICS_OPENMETRICS);
    free(text);
    json_object_put(stats);
    json_object_put(list);
}
END_TEST

/* A stream that cannot be written: -EIO. */
START_TEST(test_write_error)
{
    struct json_object *stats = fixture("metrics-stats.json");
    FILE *f = fopen("/dev/full", "w");

    ck_assert_ptr_nonnull(f);
    setvbuf(f, NULL, _IONBF, 0);
    ck_assert_int_eq(ctl_metrics_write(f, stats, NULL, CTL_METRICS_PROMETHEUS), -EIO);
    fclose(f);
    json_object_put(stats);
}
END_TEST

static Suite *
metrics_suite(void)
{
    Suite *s = suite_create("ctl_metrics");
    TCase *tc = tcase_create("format");

    tcase_add_loop_test(tc, test_golden, 0, sizeof(goldens) / sizeof(goldens[0]));
    tcase_add_test(tc, test_formats_share_samples);
    tcase_add_test(tc, test_stats_only);
    tcase_add_test(tc, test_bad_shapes);
    tcase_add_test(tc, test_label_escaping);
    tcase_add_test(tc, test_values);
    tcase_add_test(tc, test_histogram);
    tcase_add_test(tc, test_vcpu_series);
    tcase_add_test(tc, test_write_error);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(metrics_suite());
}
