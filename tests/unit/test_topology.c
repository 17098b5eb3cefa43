/* SPDX-License-Identifier: ISC */
/*
 * test_topology.c - topology from a fake sysfs tree, and the real host:
 * libnuma's answer agrees with what sysfs says, whatever its CPUs are.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "host/topology.h"

#define ERRLEN 256

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

/*
 * The machine this runs on, whatever its CPUs and nodes: every online CPU
 * is described, libnuma's node for it is the node sysfs lists under it,
 * and a CPU beyond the online ones is refused.
 */
START_TEST(test_topology_real_host)
{
    struct policy_cpu *numa = calloc(CPUSET_MAX, sizeof(*numa));
    struct policy_cpu *sysfs = calloc(CPUSET_MAX, sizeof(*sysfs));
    int cpus[CPUSET_MAX], beyond;
    struct cpuset online;
    char err[ERRLEN] = "";
    unsigned int n;

    ck_assert_ptr_nonnull(numa);
    ck_assert_ptr_nonnull(sysfs);
    ck_assert_msg(topology_online_cpus(&online, err, sizeof(err)) == 0, "online: %s", err);
    ck_assert_int_eq(cpuset_to_array(&online, cpus, CPUSET_MAX, &n), 0);
    ck_assert_uint_ge(n, 1);
    ck_assert_msg(topology_describe(cpus, n, numa, err, sizeof(err)) == 0, "describe: %s", err);
    ck_assert_msg(topology_describe_at(TOPOLOGY_SYSFS_CPU, cpus, n, sysfs, err, sizeof(err)) == 0,
                  "describe from sysfs: %s", err);
    for (unsigned int i = 0; i < n; i++) {
        ck_assert_int_eq(numa[i].cpu, cpus[i]);
        ck_assert_msg(numa[i].node == sysfs[i].node, "cpu %d: libnuma node %d, sysfs node %d",
                      cpus[i], numa[i].node, sysfs[i].node);
        ck_assert_int_eq(numa[i].core, sysfs[i].core);
        ck_assert_int_eq(numa[i].socket, sysfs[i].socket);
    }
    beyond = cpus[n - 1] + 1;
    ck_assert_int_eq(topology_describe(&beyond, 1, numa, err, sizeof(err)), -ENOENT);
    free(numa);
    free(sysfs);
}
END_TEST

static Suite *
topology_suite(void)
{
    Suite *s = suite_create("topology");
    TCase *tc = tcase_create("topology");

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
