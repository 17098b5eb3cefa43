/* SPDX-License-Identifier: ISC */
/*
 * test_cgroup.c - the pure part of parking (host/cgroup.c): mount tables
 * of v1, v2-only and hybrid hosts, /proc/<tid>/cgroup lines, the backend
 * --park chooses, the v2 group a thread is frozen in, and the paths built.
 * The inputs are lines as this host and systemd hosts write them.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "host/cgroup.h"

#define ERRLEN 512

/* This test host: v1 controllers plus a cgroup2 beside them. */
static const char *const hybrid_mounts[] = {
    "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0\n",
    "tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0\n",
    "cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n",
    "cgroup /sys/fs/cgroup/cpuacct cgroup rw,relatime,cpuacct 0 0\n",
    "cgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0\n",
    "cgroup /sys/fs/cgroup/freezer cgroup rw,relatime,freezer 0 0\n",
    "cgroup /sys/fs/cgroup/systemd cgroup rw,relatime,name=systemd 0 0\n",
    "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n",
    NULL,
};

/* Debian 12 / RHEL 9: systemd's unified layout. */
static const char *const v2_mounts[] = {
    "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n",
    "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate,"
    "memory_recursiveprot 0 0\n",
    NULL,
};

/* An older v1 host: cpu and cpuacct co-mounted, no cgroup2. */
static const char *const v1_mounts[] = {
    "cgroup /sys/fs/cgroup/cpuset cgroup rw,nosuid,nodev,noexec,relatime,cpuset 0 0\n",
    "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,nodev,noexec,relatime,cpu,cpuacct 0 0\n",
    "cgroup /sys/fs/cgroup/freezer cgroup rw,nosuid,nodev,noexec,relatime,freezer 0 0\n",
    NULL,
};

static void
parse_all(const char *const *lines, struct cgroup_mounts *m)
{
    memset(m, 0, sizeof(*m));
    for (int i = 0; lines[i] != NULL; i++)
        ck_assert_int_eq(cgroup_parse_mount_line(lines[i], m), 0);
}

START_TEST(test_mounts_hybrid)
{
    struct cgroup_mounts m;

    parse_all(hybrid_mounts, &m);
    ck_assert_str_eq(m.v1_freezer, "/sys/fs/cgroup/freezer");
    ck_assert_str_eq(m.v1_cpu, "/sys/fs/cgroup/cpu"); /* not cpuacct, not cpuset */
    ck_assert_str_eq(m.v2, "/sys/fs/cgroup/unified");
    ck_assert_str_eq(cgroup_layout(&m), "hybrid");
}
END_TEST

START_TEST(test_mounts_v2_only)
{
    struct cgroup_mounts m;

    parse_all(v2_mounts, &m);
    ck_assert_str_eq(m.v2, "/sys/fs/cgroup");
    ck_assert_str_eq(m.v1_freezer, "");
    ck_assert_str_eq(m.v1_cpu, "");
    ck_assert_str_eq(cgroup_layout(&m), "v2");
}
END_TEST

START_TEST(test_mounts_v1_only)
{
    struct cgroup_mounts m;

    parse_all(v1_mounts, &m);
    ck_assert_str_eq(m.v1_cpu, "/sys/fs/cgroup/cpu,cpuacct");
    ck_assert_str_eq(m.v1_freezer, "/sys/fs/cgroup/freezer");
    ck_assert_str_eq(m.v2, "");
    ck_assert_str_eq(cgroup_layout(&m), "v1");
}
END_TEST

START_TEST(test_mounts_escapes_first_and_junk)
{
    struct cgroup_mounts m;
    char longline[CGROUP_MOUNT_MAX + 64];

    memset(&m, 0, sizeof(m));
    ck_assert_str_eq(cgroup_layout(&m), "none");
    /* A space in a mount point is written \040. */
    ck_assert_int_eq(cgroup_parse_mount_line("none /mnt/my\\040cg cgroup2 rw 0 0\n", &m), 0);
    ck_assert_str_eq(m.v2, "/mnt/my cg");
    /* The first one wins (the one systemd mounted, not a bind mount later). */
    ck_assert_int_eq(cgroup_parse_mount_line("cgroup2 /other cgroup2 rw 0 0\n", &m), 0);
    ck_assert_str_eq(m.v2, "/mnt/my cg");
    /* Not mount lines, or not cgroups: nothing learnt, no error. */
    ck_assert_int_eq(cgroup_parse_mount_line("", &m), 0);
    ck_assert_int_eq(cgroup_parse_mount_line("cgroup /x\n", &m), 0);
    ck_assert_int_eq(cgroup_parse_mount_line("tmpfs /sys/fs/cgroup tmpfs rw 0 0\n", &m), 0);
    ck_assert(!m.v1_any);
    /* "freezer" must be a whole option. */
    ck_assert_int_eq(cgroup_parse_mount_line("cgroup /f cgroup rw,freezerx 0 0\n", &m), 0);
    ck_assert_str_eq(m.v1_freezer, "");
    ck_assert(m.v1_any);
    /* A mount point that does not fit is an error, never a truncated path. */
    memset(&m, 0, sizeof(m));
    snprintf(longline, sizeof(longline), "cgroup2 /%0*d cgroup2 rw 0 0\n", CGROUP_MOUNT_MAX, 7);
    ck_assert_int_eq(cgroup_parse_mount_line(longline, &m), -ENAMETOOLONG);
    ck_assert_str_eq(m.v2, "");
}
END_TEST

START_TEST(test_choose_backend)
{
    struct cgroup_mounts hy, v2, v1, none;
    enum cgroup_backend b;
    char err[ERRLEN] = "";

    parse_all(hybrid_mounts, &hy);
    parse_all(v2_mounts, &v2);
    parse_all(v1_mounts, &v1);
    memset(&none, 0, sizeof(none));
    /* auto: the v1 freezer where there is one, else v2, else none. */
    ck_assert_int_eq(cgroup_choose_backend(&hy, CGROUP_WANT_AUTO, &b, err, ERRLEN), 0);
    ck_assert_int_eq(b, CGROUP_BACKEND_V1);
    ck_assert_int_eq(cgroup_choose_backend(&v2, CGROUP_WANT_AUTO, &b, err, ERRLEN), 0);
    ck_assert_int_eq(b, CGROUP_BACKEND_V2);
    ck_assert_int_eq(cgroup_choose_backend(&v1, CGROUP_WANT_AUTO, &b, err, ERRLEN), 0);
    ck_assert_int_eq(b, CGROUP_BACKEND_V1);
    ck_assert_int_eq(cgroup_choose_backend(&none, CGROUP_WANT_AUTO, &b, err, ERRLEN), 0);
    ck_assert_int_eq(b, CGROUP_BACKEND_NONE);
    /* Forced: honoured where mounted (v2 on the hybrid host: the tests). */
    ck_assert_int_eq(cgroup_choose_backend(&hy, CGROUP_WANT_V2, &b, err, ERRLEN), 0);
    ck_assert_int_eq(b, CGROUP_BACKEND_V2);
    ck_assert_int_eq(cgroup_choose_backend(&hy, CGROUP_WANT_V1, &b, err, ERRLEN), 0);
    ck_assert_int_eq(b, CGROUP_BACKEND_V1);
    /* ...else refused with the reason, and b untouched. */
    b = CGROUP_BACKEND_NONE;
    ck_assert_int_eq(cgroup_choose_backend(&v1, CGROUP_WANT_V2, &b, err, ERRLEN), -ENOENT);
    ck_assert_int_eq(b, CGROUP_BACKEND_NONE);
    ck_assert_ptr_nonnull(strstr(err, "--park v2: no cgroup2 hierarchy is mounted"));
    ck_assert_ptr_nonnull(strstr(err, "layout: v1"));
    ck_assert_ptr_nonnull(strstr(err, "use --park v1 or auto"));
    ck_assert_int_eq(cgroup_choose_backend(&v2, CGROUP_WANT_V1, &b, err, ERRLEN), -ENOENT);
    ck_assert_ptr_nonnull(strstr(err, "--park v1: no cgroup v1 freezer"));
    ck_assert_ptr_nonnull(strstr(err, "use --park v2 or auto"));
    ck_assert_int_eq(cgroup_choose_backend(&none, CGROUP_WANT_V2, &b, err, ERRLEN), -ENOENT);
    ck_assert_ptr_null(strstr(err, "use --park"));
}
END_TEST

START_TEST(test_describe)
{
    struct cgroup_mounts hy, none;
    char s[768];

    parse_all(hybrid_mounts, &hy);
    memset(&none, 0, sizeof(none));
    cgroup_describe(&hy, CGROUP_BACKEND_V1, s, sizeof(s));
    ck_assert_ptr_nonnull(strstr(s, "cgroup v1 freezer at /sys/fs/cgroup/freezer (hybrid layout"));
    ck_assert_ptr_nonnull(strstr(s, "--park v2 would use cgroup2 at /sys/fs/cgroup/unified"));
    cgroup_describe(&hy, CGROUP_BACKEND_V2, s, sizeof(s));
    ck_assert_ptr_nonnull(strstr(s, "cgroup v2 cgroup.freeze in /sys/fs/cgroup/unified"));
    ck_assert_ptr_nonnull(strstr(s, "vcpusched-park-<tid>"));
    cgroup_describe(&none, CGROUP_BACKEND_NONE, s, sizeof(s));
    ck_assert_ptr_nonnull(strstr(s, "caps cannot be enforced"));
}
END_TEST

/* /proc/<tid>/cgroup of a libvirt vCPU thread on this hybrid host. */
static const char proc_hybrid[] = "9:name=systemd:/\n"
                                  "6:freezer:/machine/qemu-1-vm.libvirt-qemu\n"
                                  "3:cpuset:/machine/qemu-1-vm.libvirt-qemu/vcpu0\n"
                                  "1:cpu,cpuacct:/machine/qemu-1-vm.libvirt-qemu/vcpu0\n"
                                  "0::/machine/qemu-1-vm.libvirt-qemu/vcpu0\n";

START_TEST(test_parse_proc)
{
    char out[CGROUP_PATH_MAX], small[8];

    ck_assert_int_eq(cgroup_parse_proc(proc_hybrid, "freezer", out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/machine/qemu-1-vm.libvirt-qemu");
    ck_assert_int_eq(cgroup_parse_proc(proc_hybrid, "cpu", out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/machine/qemu-1-vm.libvirt-qemu/vcpu0");
    ck_assert_int_eq(cgroup_parse_proc(proc_hybrid, "", out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/machine/qemu-1-vm.libvirt-qemu/vcpu0");
    ck_assert_int_eq(cgroup_parse_proc(proc_hybrid, "name=systemd", out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/");
    /* Whole names only: "cpu" is not cpuset, "memory" is not there. */
    ck_assert_int_eq(cgroup_parse_proc("3:cpuset:/a\n", "cpu", out, sizeof(out)), -ENOENT);
    ck_assert_int_eq(cgroup_parse_proc(proc_hybrid, "memory", out, sizeof(out)), -ENOENT);
    /* v2 only: one line, no newline at the end. */
    ck_assert_int_eq(cgroup_parse_proc("0::/machine.slice/machine-qemu\\x2d1\\x2dvm.scope/"
                                       "libvirt/vcpu3",
                                       "", out, sizeof(out)),
                     0);
    ck_assert_str_eq(out, "/machine.slice/machine-qemu\\x2d1\\x2dvm.scope/libvirt/vcpu3");
    /* No v2 line on a v1 host; a named hierarchy is not v2. */
    ck_assert_int_eq(cgroup_parse_proc("1:cpu:/\n10::/x\n", "", out, sizeof(out)), -ENOENT);
    ck_assert_int_eq(cgroup_parse_proc("", "", out, sizeof(out)), -ENOENT);
    /* Never a truncated or relative path. */
    ck_assert_int_eq(cgroup_parse_proc("0::/a/long/path\n", "", small, sizeof(small)),
                     -ENAMETOOLONG);
    ck_assert_int_eq(cgroup_parse_proc("0::relative\n", "", out, sizeof(out)), -EINVAL);
}
END_TEST

static enum cgroup_park_mode
choose(pid_t tid, const char *path, const char *type, const char *threads, const char *freeze,
       bool children)
{
    struct cgroup_v2_group g = {path, type, threads, freeze, children};
    enum cgroup_park_mode mode = CGROUP_PARK_NONE;
    char err[ERRLEN] = "";

    ck_assert_msg(cgroup_choose_v2(tid, &g, &mode, err, ERRLEN) == 0, "%s", err);
    return mode;
}

START_TEST(test_choose_v2)
{
    const char *vcpu0 = "/machine.slice/machine-qemu\\x2d1\\x2dvm.scope/libvirt/vcpu0";

    /* libvirt's vcpuN holding this thread alone: frozen in place. */
    ck_assert_int_eq(choose(4301, vcpu0, "threaded\n", "4301\n", "0\n", false), CGROUP_PARK_V2_OWN);
    /* KVM's nx-lpage-recovery task in vcpu0 too: freezing vcpu0 would stop it. */
    ck_assert_int_eq(choose(4301, vcpu0, "threaded\n", "4301\n4380\n", "0\n", false),
                     CGROUP_PARK_V2_CHILD);
    ck_assert_int_eq(choose(4301, vcpu0, "threaded\n", "4380\n4301\n", "0\n", false),
                     CGROUP_PARK_V2_CHILD);
    /* Another thread alone there: not ours to freeze. */
    ck_assert_int_eq(choose(4301, vcpu0, "threaded\n", "4302\n", "0\n", false),
                     CGROUP_PARK_V2_CHILD);
    /* Frozen by someone else: never thawed by us. */
    ck_assert_int_eq(choose(4301, vcpu0, "threaded\n", "4301\n", "1\n", false),
                     CGROUP_PARK_V2_CHILD);
    /* Child groups are frozen with their parent. */
    ck_assert_int_eq(choose(4301, vcpu0, "threaded\n", "4301\n", "0\n", true),
                     CGROUP_PARK_V2_CHILD);
    /* A domain (a service, a bare QEMU's group), even with one thread. */
    ck_assert_int_eq(choose(7, "/system.slice/qemu.service", "domain\n", "7\n", "0\n", false),
                     CGROUP_PARK_V2_CHILD);
    ck_assert_int_eq(choose(7, "/x", "domain threaded\n", "7\n", "0\n", false),
                     CGROUP_PARK_V2_CHILD);
    /* The root: no cgroup.type, no cgroup.freeze; it takes threaded children. */
    ck_assert_int_eq(choose(7, "/", NULL, "1\n7\n", NULL, true), CGROUP_PARK_V2_CHILD);
    /* Unreadable or empty thread lists are "not alone". */
    ck_assert_int_eq(choose(7, "/x", "threaded\n", "", "0\n", false), CGROUP_PARK_V2_CHILD);
}
END_TEST

START_TEST(test_choose_v2_refused)
{
    struct cgroup_v2_group old = {"/x", "threaded\n", "7\n", NULL, false};
    struct cgroup_v2_group invalid = {"/x/y", "domain invalid\n", "7\n", "0\n", false};
    enum cgroup_park_mode mode = CGROUP_PARK_NONE;
    char err[ERRLEN] = "";

    ck_assert_int_eq(cgroup_choose_v2(7, &old, &mode, err, ERRLEN), -EOPNOTSUPP);
    ck_assert_ptr_nonnull(strstr(err, "cannot park thread 7"));
    ck_assert_ptr_nonnull(strstr(err, "no cgroup.freeze"));
    ck_assert_ptr_nonnull(strstr(err, "Linux 5.2"));
    ck_assert_int_eq(cgroup_choose_v2(7, &invalid, &mode, err, ERRLEN), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "domain invalid"));
    ck_assert_int_eq(mode, CGROUP_PARK_NONE);
}
END_TEST

START_TEST(test_paths)
{
    char out[CGROUP_DIR_MAX], small[24], longpath[CGROUP_PATH_MAX];
    const char *u = "/sys/fs/cgroup/unified";

    ck_assert_int_eq(cgroup_group_dir(u, "/", out, sizeof(out)), 0);
    ck_assert_str_eq(out, u);
    ck_assert_int_eq(cgroup_group_dir(u, "/a/vcpu0", out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/sys/fs/cgroup/unified/a/vcpu0");
    ck_assert_int_eq(cgroup_group_dir(u, "a", out, sizeof(out)), -EINVAL);

    ck_assert_int_eq(
        cgroup_park_dir(CGROUP_PARK_V1, "/sys/fs/cgroup/freezer", "/machine", 42, out, sizeof(out)),
        0);
    ck_assert_str_eq(out, "/sys/fs/cgroup/freezer/vcpusched/42");
    ck_assert_int_eq(cgroup_park_dir(CGROUP_PARK_V2_OWN, u, "/a/vcpu0", 42, out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/sys/fs/cgroup/unified/a/vcpu0");
    ck_assert_int_eq(cgroup_park_dir(CGROUP_PARK_V2_CHILD, u, "/a/vcpu0", 42, out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/sys/fs/cgroup/unified/a/vcpu0/vcpusched-park-42");
    ck_assert_int_eq(cgroup_park_dir(CGROUP_PARK_V2_CHILD, u, "/", 42, out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/sys/fs/cgroup/unified/vcpusched-park-42");
    ck_assert_int_eq(cgroup_park_path(CGROUP_PARK_V2_CHILD, "/", 42, out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/vcpusched-park-42");
    ck_assert_int_eq(cgroup_park_path(CGROUP_PARK_V1, "/machine", 42, out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/vcpusched/42");
    ck_assert_int_eq(cgroup_park_dir(CGROUP_PARK_NONE, u, "/", 42, out, sizeof(out)), -EINVAL);
    /* Too long: an error, never a truncated path to rmdir. */
    ck_assert_int_eq(cgroup_park_dir(CGROUP_PARK_V2_CHILD, u, "/a", 42, small, sizeof(small)),
                     -ENAMETOOLONG);
    ck_assert_str_eq(small, "");
    ck_assert_int_eq(cgroup_group_dir(u, "/a/long/path", small, sizeof(small)), -ENAMETOOLONG);
    ck_assert_str_eq(small, "");
    memset(longpath, 'a', sizeof(longpath) - 1);
    longpath[0] = '/';
    longpath[sizeof(longpath) - 1] = '\0';
    ck_assert_int_eq(cgroup_park_path(CGROUP_PARK_V2_CHILD, longpath, 42, out, CGROUP_PATH_MAX),
                     -ENAMETOOLONG);
}
END_TEST

/* The v1 hold group: named after its daemon, told apart from a thread's group. */
START_TEST(test_hold_names)
{
    static const struct {
        const char *name;
        pid_t pid;
    } names[] = {
        {"hold-4242", 4242},
        {"hold-1", 1},
        {"4242", -1},
        {"hold-", -1},
        {"hold-0", -1},
        {"hold-042", -1},
        {"hold-12x", -1},
        {"hold--3", -1},
        {"Hold-7", -1},
        {"hold-99999999999", -1},
        {"", -1},
    };
    char out[CGROUP_DIR_MAX], small[32];

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        ck_assert_msg(cgroup_hold_pid(names[i].name) == names[i].pid, "%s", names[i].name);
    ck_assert_int_eq(cgroup_hold_dir("/sys/fs/cgroup/freezer", 4242, out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/sys/fs/cgroup/freezer/vcpusched/hold-4242");
    ck_assert_int_eq(cgroup_hold_pid(strrchr(out, '/') + 1), 4242);
    ck_assert_int_eq(cgroup_hold_dir("/sys/fs/cgroup/freezer", 4242, small, sizeof(small)),
                     -ENAMETOOLONG);
    ck_assert_str_eq(small, "");
}
END_TEST

static Suite *
cgroup_suite(void)
{
    Suite *s = suite_create("cgroup");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_mounts_hybrid);
    tcase_add_test(tc, test_mounts_v2_only);
    tcase_add_test(tc, test_mounts_v1_only);
    tcase_add_test(tc, test_mounts_escapes_first_and_junk);
    tcase_add_test(tc, test_choose_backend);
    tcase_add_test(tc, test_describe);
    tcase_add_test(tc, test_parse_proc);
    tcase_add_test(tc, test_choose_v2);
    tcase_add_test(tc, test_choose_v2_refused);
    tcase_add_test(tc, test_paths);
    tcase_add_test(tc, test_hold_names);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(cgroup_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
