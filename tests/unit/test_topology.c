/* SPDX-License-Identifier: ISC */
/*
 * test_topology.c - CPU list parsing (valid and malformed), formatting,
 * topology from a fake sysfs tree, and the real host (CPU 0 and 1 exist,
 * node 0).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "host/topology.h"

#define ERRLEN 256

struct list_case {
    const char *in;
    int ret;
    unsigned int n;
    int cpus[8]; /* first n (at most 8) */
};

static const struct list_case list_cases[] = {
    {"1", 0, 1, {1}},
    {"0", 0, 1, {0}},
    {"1-3,5,7-8", 0, 6, {1, 2, 3, 5, 7, 8}},
    {"0-1\n", 0, 2, {0, 1}}, /* as sysfs writes it */
    {"", 0, 0, {0}},
    {"\n", 0, 0, {0}},
    {"5,1", 0, 2, {1, 5}}, /* sorted */
    {"3-3", 0, 1, {3}},
    {"1023", 0, 1, {1023}},
    {"007", 0, 1, {7}},
    /* Malformed. */
    {"1-", -EINVAL, 0, {0}},
    {"-1", -EINVAL, 0, {0}},
    {"3-1", -EINVAL, 0, {0}},
    {"1,,2", -EINVAL, 0, {0}},
    {"1,", -EINVAL, 0, {0}},
    {",1", -EINVAL, 0, {0}},
    {"a", -EINVAL, 0, {0}},
    {"1 2", -EINVAL, 0, {0}},
    {" 1", -EINVAL, 0, {0}},
    {"+1", -EINVAL, 0, {0}},
    {"1-2-3", -EINVAL, 0, {0}},
    {"0-7:2/4", -EINVAL, 0, {0}},
    {"1,1", -EINVAL, 0, {0}},
    {"1-3,2", -EINVAL, 0, {0}},
    {"1\n\n", -EINVAL, 0, {0}},
    {"0x1", -EINVAL, 0, {0}},
    /* Out of range and too many. */
    {"1024", -ERANGE, 0, {0}},
    {"99999999999999999999", -ERANGE, 0, {0}},
    {"0-1024", -ERANGE, 0, {0}},
    {"0-8", -E2BIG, 0, {0}},
};

START_TEST(test_topology_parse_table)
{
    const struct list_case *c = &list_cases[_i];
    int cpus[8] = {0};
    unsigned int n = 99;
    char err[ERRLEN] = "";
    int r = topology_parse_cpulist(c->in, cpus, 8, &n, err, sizeof(err));

    ck_assert_msg(r == c->ret, "'%s': got %d (%s), want %d", c->in, r, err, c->ret);
    if (r < 0) {
        ck_assert_msg(err[0] != '\0', "'%s': no message", c->in);
        ck_assert_uint_eq(n, 0);
        return;
    }
    ck_assert_uint_eq(n, c->n);
    for (unsigned int i = 0; i < n; i++)
        ck_assert_int_eq(cpus[i], c->cpus[i]);
}
END_TEST

START_TEST(test_topology_format)
{
    static const int a[] = {1, 2, 3, 5, 7, 8};
    static const int b[] = {0};
    char buf[64];

    ck_assert_str_eq(topology_format_cpulist(a, 6, buf, sizeof(buf)), "1-3,5,7-8");
    ck_assert_str_eq(topology_format_cpulist(b, 1, buf, sizeof(buf)), "0");
    ck_assert_str_eq(topology_format_cpulist(b, 0, buf, sizeof(buf)), "");
}
END_TEST

/* Write `text` to dir/rel, creating the directories on the way. */
static void
put_file(const char *dir, const char *rel, const char *text)
{
    char path[PATH_MAX];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')) != NULL; p++) {
        *p = '\0';
        mkdir(path, 0755);
        *p = '/';
    }
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void
put_dir(const char *dir, const char *rel)
{
    char path[PATH_MAX];

    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    ck_assert_int_eq(mkdir(path, 0755), 0);
}

/*
 * A fake two-package host: cpu0/cpu1 SMT siblings of core 0 in package 0
 * (node 0), cpu2 core 3 in package 1 (node 1), cpu3 offline, cpu4
 * online without a topology directory.
 */
static void
fake_tree(char *dir)
{
    ck_assert_ptr_nonnull(mkdtemp(dir));
    put_file(dir, "online", "0-2,4\n");
    put_file(dir, "cpu0/topology/core_id", "0\n");
    put_file(dir, "cpu0/topology/physical_package_id", "0\n");
    put_dir(dir, "cpu0/node0");
    put_file(dir, "cpu1/topology/core_id", "0\n");
    put_file(dir, "cpu1/topology/physical_package_id", "0\n");
    put_dir(dir, "cpu1/node0");
    put_file(dir, "cpu2/topology/core_id", "3\n");
    put_file(dir, "cpu2/topology/physical_package_id", "1\n");
    put_dir(dir, "cpu2/node1");
    put_file(dir, "cpu3/topology/core_id", "1\n");
    put_file(dir, "cpu3/topology/physical_package_id", "0\n");
    put_dir(dir, "cpu4");
}

START_TEST(test_topology_fake_tree)
{
    char dir[] = "/tmp/test_topology.XXXXXX";
    static const int ok[] = {0, 1, 2};
    struct policy_cpu out[3];
    char err[ERRLEN] = "", cmd[PATH_MAX + 16];
    int one;

    fake_tree(dir);
    ck_assert_int_eq(topology_describe_at(dir, ok, 3, out, err, sizeof(err)), 0);
    ck_assert_int_eq(out[0].cpu, 0);
    ck_assert_int_eq(out[1].core, 0);
    ck_assert_int_eq(out[1].socket, 0);
    ck_assert_int_eq(out[1].node, 0);
    ck_assert_int_eq(out[2].cpu, 2);
    ck_assert_int_eq(out[2].core, 3);
    ck_assert_int_eq(out[2].socket, 1);
    ck_assert_int_eq(out[2].node, 1);
    one = 3; /* offline */
    ck_assert_int_eq(topology_describe_at(dir, &one, 1, out, err, sizeof(err)), -ENOENT);
    ck_assert_msg(strstr(err, "cpu 3") != NULL, "message: %s", err);
    one = 7; /* absent */
    ck_assert_int_eq(topology_describe_at(dir, &one, 1, out, err, sizeof(err)), -ENOENT);
    one = 4; /* no topology */
    ck_assert_int_eq(topology_describe_at(dir, &one, 1, out, err, sizeof(err)), -EIO);
    ck_assert_msg(strstr(err, "core_id") != NULL, "message: %s", err);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* The machine this runs on has CPUs 0 and 1, on node 0. */
START_TEST(test_topology_real_host)
{
    int cpus[TOPOLOGY_CPU_LIMIT];
    static const int want[] = {0, 1};
    struct policy_cpu out[2];
    unsigned int n;
    char err[ERRLEN] = "";

    ck_assert_msg(topology_online_cpus(cpus, TOPOLOGY_CPU_LIMIT, &n, err, sizeof(err)) == 0,
                  "online: %s", err);
    ck_assert_uint_ge(n, 2);
    ck_assert_int_eq(cpus[0], 0);
    ck_assert_int_eq(cpus[1], 1);
    ck_assert_msg(topology_describe(want, 2, out, err, sizeof(err)) == 0, "describe: %s", err);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(out[i].cpu, i);
        ck_assert_int_eq(out[i].node, 0);
        ck_assert_int_ge(out[i].core, 0);
    }
    cpus[0] = TOPOLOGY_CPU_LIMIT - 1; /* no host of this project has that many */
    ck_assert_int_eq(topology_describe(cpus, 1, out, err, sizeof(err)), -ENOENT);
}
END_TEST

static Suite *
topology_suite(void)
{
    Suite *s = suite_create("topology");
    TCase *tc = tcase_create("topology");

    tcase_add_loop_test(tc, test_topology_parse_table, 0,
                        (int)(sizeof(list_cases) / sizeof(list_cases[0])));
    tcase_add_test(tc, test_topology_format);
    tcase_add_test(tc, test_topology_fake_tree);
    tcase_add_test(tc, test_topology_real_host);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(topology_suite());
}
