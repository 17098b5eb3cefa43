/* SPDX-License-Identifier: ISC */
/*
 * test_discover.c - who may never be managed (discover_check_target), on
 * this host's real /proc: the check only reads, so init, kthreadd and a
 * kernel thread are looked at, never touched. The processes it accepts
 * or refuses otherwise are children this test starts.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/discover.h"
#include "testutil.h"

#define ERRLEN 256

/* A child that sleeps until killed; with `exe`, it runs that program. */
static pid_t
child(const char *exe)
{
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (exe != NULL)
            execl(exe, exe, "3600", (char *)NULL);
        for (;;)
            pause();
    }
    return pid;
}

static void
reap(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/*
 * A process that is not a descendant of this test: forked by a child that
 * exits at once (so init adopts it). It ends itself after two minutes in
 * case the test dies before killing it.
 */
static pid_t
orphan(void)
{
    int fd[2];
    pid_t mid, pid = 0;

    ck_assert_int_eq(pipe(fd), 0);
    mid = fork();
    ck_assert_int_ge(mid, 0);
    if (mid == 0) {
        pid_t o = fork();

        if (o == 0) {
            alarm(120);
            for (;;)
                pause();
        }
        if (write(fd[1], &o, sizeof(o)) != (ssize_t)sizeof(o))
            _exit(1);
        _exit(0);
    }
    close(fd[1]);
    ck_assert_int_eq(read(fd[0], &pid, sizeof(pid)), (ssize_t)sizeof(pid));
    close(fd[0]);
    waitpid(mid, NULL, 0);
    return pid;
}

/* The first kernel thread other than kthreadd itself (its parent is kthreadd). */
static pid_t
some_kernel_thread(void)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    pid_t found = 0;

    ck_assert_ptr_nonnull(d);
    while (found == 0 && (e = readdir(d)) != NULL) {
        char path[300], buf[512], *p;
        FILE *f;
        int ppid;

        if (atoi(e->d_name) <= 2)
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        if ((f = fopen(path, "r")) == NULL)
            continue;
        if (fgets(buf, sizeof(buf), f) != NULL && (p = strrchr(buf, ')')) != NULL &&
            sscanf(p + 1, " %*c %d", &ppid) == 1 && ppid == 2)
            found = atoi(e->d_name);
        fclose(f);
    }
    closedir(d);
    return found;
}

static int
check(pid_t pid, bool named, const struct discover_rules *r, char *err)
{
    err[0] = '\0';
    return discover_check_target(pid, named, r, err, ERRLEN);
}

START_TEST(test_never_managed)
{
    pid_t guard = child(NULL), kt = some_kernel_thread();
    struct discover_rules r = {.daemon = getpid(), .guardian = guard, .any_process = true};
    char err[ERRLEN];

    ck_assert_int_eq(check(1, true, &r, err), -EPERM);
    ck_assert_msg(strstr(err, "is init") != NULL, "%s", err);
    ck_assert_int_eq(check(2, false, &r, err), -EPERM);
    ck_assert_msg(strstr(err, "kernel thread") != NULL, "%s", err);
    ck_assert_msg(kt > 0, "no kernel thread found in /proc");
    ck_assert_int_eq(check(kt, true, &r, err), -EPERM);
    ck_assert_msg(strstr(err, "kernel thread") != NULL, "%s", err);
    ck_assert_int_eq(check(getpid(), true, &r, err), -EPERM);
    ck_assert_msg(strstr(err, "is vcpuschedd:") != NULL, "%s", err);
    ck_assert_int_eq(check(guard, false, &r, err), -EPERM);
    ck_assert_msg(strstr(err, "vcpuschedd's guardian") != NULL, "%s", err);
    ck_assert_int_eq(check(999999999, true, &r, err), -ESRCH);
    reap(guard);
}
END_TEST

/*
 * This test plays the caller's shell: `caller` (a child, as vcpuschedctl
 * is) asks for `mine` (another child: accepted), for this test itself
 * (its shell: refused) and for an orphan that did not start here (refused
 * unless any_process). A QEMU executable is accepted from anywhere.
 */
START_TEST(test_named_targets)
{
    struct discover_rules r = {.daemon = 1 << 30, .guardian = 0};
    pid_t caller = child(NULL), mine = child(NULL), stray = orphan();
    char err[ERRLEN], qemu[] = "/tmp/qemu-system-vstest-XXXXXX", cmd[256];
    int fd = mkstemp(qemu);
    pid_t fake;

    r.caller = caller;
    ck_assert_int_eq(check(mine, true, &r, err), 0);
    ck_assert_int_eq(check(getpid(), true, &r, err), -EPERM);
    ck_assert_msg(strstr(err, "neither QEMU nor started from the caller's shell") != NULL, "%s",
                  err);
    ck_assert_int_eq(check(caller, true, &r, err), -EPERM);
    ck_assert_int_gt(stray, 0);
    ck_assert_int_eq(check(stray, true, &r, err), -EPERM);
    ck_assert_msg(strstr(err, "--any-process") != NULL, "%s", err);
    ck_assert_int_eq(check(stray, false, &r, err), 0); /* QMP/libvirt: not by name */
    r.any_process = true;
    ck_assert_int_eq(check(stray, true, &r, err), 0);
    r.any_process = false;
    /* A QEMU (by its executable's name), started elsewhere: accepted. */
    ck_assert_int_ge(fd, 0);
    close(fd);
    snprintf(cmd, sizeof(cmd), "cp /bin/sleep %s && chmod 755 %s", qemu, qemu);
    ck_assert_int_eq(system(cmd), 0);
    fake = child(qemu);
    usleep(100000); /* until it has exec'd */
    r.caller = 0;   /* no caller known: only QEMU passes */
    ck_assert_int_eq(check(fake, true, &r, err), 0);
    ck_assert_int_eq(check(mine, true, &r, err), -EPERM);
    reap(fake);
    unlink(qemu);
    kill(stray, SIGKILL);
    reap(mine);
    reap(caller);
}
END_TEST

static Suite *
discover_suite(void)
{
    Suite *s = suite_create("discover");
    TCase *tc = tcase_create("targets");

    tcase_add_test(tc, test_never_managed);
    tcase_add_test(tc, test_named_targets);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(discover_suite());
}
