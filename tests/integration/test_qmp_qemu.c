/* SPDX-License-Identifier: ISC */
/*
 * test_qmp_qemu.c - libqmp against a real qemu-system-x86_64 (TCG, -S, no
 * guest image): capabilities, vCPU discovery checked against
 * /proc/<pid>/task, run-state events, a frozen QEMU (timeout, then
 * recovery), a killed QEMU (clean error), one-client-per-monitor, and the
 * qmp-vcpus CLI. Every QEMU dies with its test (PR_SET_PDEATHSIG) and the
 * temp dirs are removed by main() whatever happened. Run it under
 * tests/integration/run-exclusive.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "qmp.h"

#define QEMU_BIN "qemu-system-x86_64"
/* How long QEMU may take to create its QMP socket (TCG start is ~0.3 s). */
#define QEMU_START_MS 20000
/* Deadline for the cases that must time out. */
#define SHORT_MS 300
/* Exit code that ctest reads as "skipped" (SKIP_RETURN_CODE). */
#define EXIT_SKIP 77

/* All per-test dirs live under this one, removed by main() at the end. */
static char base_dir[] = "/tmp/qmp-qemu-XXXXXX";

struct qemu {
    char dir[256];
    char sock[300];
    pid_t pid;
};

static void
qemu_exec(const struct qemu *q, int nvcpus, const char *accel, pid_t parent)
{
    char smp[16], qmp[400];

    /* Die with the test process, even if it crashes or is killed on timeout. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    snprintf(smp, sizeof(smp), "%d", nvcpus);
    snprintf(qmp, sizeof(qmp), "unix:%s,server=on,wait=off", q->sock);
    execlp(QEMU_BIN, QEMU_BIN, "-accel", accel, "-display", "none", "-nodefaults", "-S", "-m", "64",
           "-smp", smp, "-name", "qmptest,debug-threads=on", "-qmp", qmp, (char *)NULL);
    _exit(127);
}

static void
qemu_start(struct qemu *q, int nvcpus, const char *accel)
{
    pid_t parent = getpid();

    snprintf(q->dir, sizeof(q->dir), "%s/t-XXXXXX", base_dir);
    ck_assert_ptr_nonnull(mkdtemp(q->dir));
    snprintf(q->sock, sizeof(q->sock), "%s/qmp.sock", q->dir);
    q->pid = fork();
    ck_assert_int_ge(q->pid, 0);
    if (q->pid == 0)
        qemu_exec(q, nvcpus, accel, parent);
}

static void
qemu_kill(struct qemu *q)
{
    if (q->pid > 0) {
        kill(q->pid, SIGKILL);
        waitpid(q->pid, NULL, 0);
        q->pid = -1;
    }
}

/* Connect once QEMU has created its socket; fail fast if QEMU exited. */
static struct qmp_conn *
qemu_connect(struct qemu *q, const struct qmp_opts *opts)
{
    char err[QMP_ERRLEN] = "";
    struct qmp_conn *c = NULL;
    int r = -ENOENT, status;

    for (int ms = 0; ms < QEMU_START_MS && (r == -ENOENT || r == -ECONNREFUSED); ms += 20) {
        ck_assert_msg(waitpid(q->pid, &status, WNOHANG) == 0, "qemu exited early (status %d)",
                      status);
        r = qmp_connect(&c, q->sock, opts, err, sizeof(err));
        if (r == -ENOENT || r == -ECONNREFUSED)
            nanosleep(&(struct timespec){.tv_nsec = 20000000}, NULL);
    }
    ck_assert_msg(r == 0, "connect to qemu: %d %s", r, err);
    return c;
}

static void
execute_ok(struct qmp_conn *c, const char *cmd, struct json_object **ret)
{
    char err[QMP_ERRLEN] = "";
    int r = qmp_execute(c, cmd, NULL, ret, err, sizeof(err));

    ck_assert_msg(r == 0, "%s: %d %s", cmd, r, err);
}

static bool
vm_is_running(struct qmp_conn *c)
{
    struct json_object *ret, *running;
    bool yes;

    execute_ok(c, "query-status", &ret);
    ck_assert(json_object_object_get_ex(ret, "running", &running));
    yes = json_object_get_boolean(running);
    json_object_put(ret);
    return yes;
}

/* Capabilities negotiated: commands work, and a second negotiation is refused. */
START_TEST(test_qemu_capabilities)
{
    char err[QMP_ERRLEN] = "";
    struct qemu q;
    struct qmp_conn *c;

    qemu_start(&q, 1, "tcg");
    c = qemu_connect(&q, NULL);
    ck_assert_int_ge(qmp_greeting(c)->major, 6); /* query-cpus-fast without "arch": >= 6.0 */
    ck_assert_str_ne(qmp_greeting(c)->package, "");
    ck_assert(!vm_is_running(c)); /* -S */
    ck_assert_int_eq(qmp_execute(c, "qmp_capabilities", NULL, NULL, err, sizeof(err)), -EREMOTEIO);
    ck_assert_msg(strstr(err, "CommandNotFound") && strstr(err, "already complete"), "%s", err);
    ck_assert_int_eq(qmp_execute(c, "no-such-command", NULL, NULL, err, sizeof(err)), -EREMOTEIO);
    ck_assert(!vm_is_running(c)); /* still in sync after errors */
    qmp_close(c);
    qemu_kill(&q);
}
END_TEST

/* Set of a process's threads, from /proc/<pid>/task. */
static size_t
proc_tasks(pid_t pid, pid_t *tids, size_t max)
{
    char path[64];
    struct dirent *d;
    size_t n = 0;
    DIR *dir;

    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    dir = opendir(path);
    ck_assert_ptr_nonnull(dir);
    while ((d = readdir(dir)) != NULL && n < max)
        if (d->d_name[0] != '.')
            tids[n++] = (pid_t)atoi(d->d_name);
    closedir(dir);
    return n;
}

static bool
tid_in(pid_t tid, const pid_t *tids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (tids[i] == tid)
            return true;
    return false;
}

/* The thread's name; QEMU with debug-threads=on calls vCPU n "CPU n/TCG". */
static void
proc_comm(pid_t pid, pid_t tid, char *buf, size_t size)
{
    char path[96];
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(buf, (int)size, f));
    buf[strcspn(buf, "\n")] = '\0';
    fclose(f);
}

/* Every vCPU thread is a live, distinct thread of this QEMU, not its main one. */
static void
check_vcpus_against_proc(const struct qemu *q, const struct qmp_vcpus *vs, int nvcpus)
{
    pid_t tasks[256];
    size_t ntasks = proc_tasks(q->pid, tasks, 256);
    char comm[32], want[32];

    ck_assert_uint_eq(vs->n, (size_t)nvcpus);
    ck_assert_uint_gt(ntasks, (size_t)nvcpus);
    for (size_t i = 0; i < vs->n; i++) {
        const struct qmp_vcpu *v = &vs->v[i];

        ck_assert_int_eq(v->cpu_index, (int)i);
        ck_assert_int_ne(v->thread_id, q->pid);
        ck_assert_msg(tid_in(v->thread_id, tasks, ntasks), "tid %d not a thread of qemu %d",
                      (int)v->thread_id, (int)q->pid);
        for (size_t j = 0; j < i; j++)
            ck_assert_int_ne(v->thread_id, vs->v[j].thread_id);
        proc_comm(q->pid, v->thread_id, comm, sizeof(comm));
        snprintf(want, sizeof(want), "CPU %d/TCG", v->cpu_index);
        ck_assert_str_eq(comm, want);
        ck_assert_str_eq(v->target, "x86_64");
        ck_assert_int_eq(v->props.core_id, (int)i);
    }
}

/* Run qmp-vcpus --json and return its vCPU thread ids, in order. */
static size_t
cli_tids(const char *sock, pid_t *tids, size_t max)
{
    char cmd[512], out[8192];
    struct json_object *arr, *tid;
    size_t len, n;
    FILE *p;

    snprintf(cmd, sizeof(cmd), "%s %s --json --timeout-ms 5000", QMP_VCPUS_BIN, sock);
    p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    len = fread(out, 1, sizeof(out) - 1, p);
    out[len] = '\0';
    ck_assert_int_eq(pclose(p), 0);
    arr = json_tokener_parse(out);
    ck_assert_msg(json_object_is_type(arr, json_type_array), "qmp-vcpus printed: %s", out);
    n = json_object_array_length(arr);
    for (size_t i = 0; i < n && i < max; i++) {
        ck_assert(json_object_object_get_ex(json_object_array_get_idx(arr, i), "thread-id", &tid));
        tids[i] = (pid_t)json_object_get_int(tid);
    }
    json_object_put(arr);
    return n;
}

static const int vcpu_counts[] = {1, 4};

START_TEST(test_qemu_vcpus)
{
    int nvcpus = vcpu_counts[_i];
    char err[QMP_ERRLEN] = "";
    struct qmp_vcpus vs;
    struct qmp_conn *c;
    pid_t tids[8];
    struct qemu q;

    qemu_start(&q, nvcpus, "tcg");
    c = qemu_connect(&q, NULL);
    ck_assert_msg(qmp_query_vcpus(c, &vs, err, sizeof(err)) == 0, "%s", err);
    check_vcpus_against_proc(&q, &vs, nvcpus);
    qmp_close(c); /* QEMU serves one client at a time: free it for the CLI */
    ck_assert_uint_eq(cli_tids(q.sock, tids, 8), (size_t)nvcpus);
    for (int i = 0; i < nvcpus; i++)
        ck_assert_int_eq(tids[i], vs.v[i].thread_id);
    qmp_vcpus_free(&vs);
    qemu_kill(&q);
}
END_TEST

/* One vCPU thread for all: the library and the CLI refuse it by name. */
START_TEST(test_qemu_single_threaded_tcg)
{
    char err[QMP_ERRLEN] = "", cmd[512];
    struct qmp_vcpus vs;
    struct qmp_conn *c;
    struct qemu q;

    qemu_start(&q, 2, "tcg,thread=single");
    c = qemu_connect(&q, NULL);
    ck_assert_int_eq(qmp_query_vcpus(c, &vs, err, sizeof(err)), -ENOTUNIQ);
    ck_assert_msg(strstr(err, "single-threaded TCG") != NULL, "%s", err);
    ck_assert_uint_eq(vs.n, 0);
    qmp_close(c);
    snprintf(cmd, sizeof(cmd), "%s %s 2>/dev/null", QMP_VCPUS_BIN, q.sock);
    ck_assert_int_eq(WEXITSTATUS(system(cmd)), 1);
    qemu_kill(&q);
}
END_TEST

static void
expect_event(struct qmp_conn *c, const char *name)
{
    char err[QMP_ERRLEN] = "";
    struct qmp_msg ev;
    int r = qmp_wait_event(c, 5000, err, sizeof(err));

    ck_assert_msg(r >= 1, "waiting for %s: %d %s", name, r, err);
    ck_assert_int_eq(qmp_next_event(c, &ev), 0);
    ck_assert_str_eq(ev.event, name);
    ck_assert_int_gt(ev.ts_sec, 0);
    qmp_msg_free(&ev);
}

/* cont -> RESUME, stop -> STOP; the events wait in the queue for us. */
START_TEST(test_qemu_events)
{
    struct qmp_conn *c;
    struct qmp_msg ev;
    struct qemu q;

    qemu_start(&q, 1, "tcg");
    c = qemu_connect(&q, NULL);
    execute_ok(c, "cont", NULL);
    expect_event(c, "RESUME");
    ck_assert(vm_is_running(c));
    execute_ok(c, "stop", NULL);
    expect_event(c, "STOP");
    ck_assert(!vm_is_running(c));
    ck_assert_int_eq(qmp_next_event(c, &ev), -EAGAIN);
    qmp_close(c);
    qemu_kill(&q);
}
END_TEST

/* A frozen QEMU: a timeout, not a hang; thawed, the late reply is skipped. */
START_TEST(test_qemu_frozen_then_thawed)
{
    char err[QMP_ERRLEN] = "";
    struct qmp_stats st;
    struct qmp_conn *c;
    struct qemu q;

    qemu_start(&q, 1, "tcg");
    c = qemu_connect(&q, &(struct qmp_opts){.timeout_ms = SHORT_MS});
    ck_assert_int_eq(kill(q.pid, SIGSTOP), 0);
    ck_assert_int_eq(qmp_execute(c, "query-status", NULL, NULL, err, sizeof(err)), -ETIMEDOUT);
    ck_assert_msg(strstr(err, "no reply within 300 ms") != NULL, "%s", err);
    ck_assert_int_eq(kill(q.pid, SIGCONT), 0);
    ck_assert(!vm_is_running(c));
    qmp_get_stats(c, &st);
    ck_assert_uint_eq(st.replies_stray, 1);
    qmp_close(c);
    qemu_kill(&q);
}
END_TEST

/* QEMU killed mid-session: every later call fails cleanly and at once. */
START_TEST(test_qemu_killed)
{
    char err[QMP_ERRLEN] = "";
    struct qmp_vcpus vs;
    struct qmp_conn *c;
    struct qemu q;
    int r;

    qemu_start(&q, 2, "tcg");
    c = qemu_connect(&q, NULL);
    ck_assert_int_eq(qmp_query_vcpus(c, &vs, err, sizeof(err)), 0);
    qmp_vcpus_free(&vs);
    qemu_kill(&q);
    r = qmp_execute(c, "query-status", NULL, NULL, err, sizeof(err));
    ck_assert_msg(r == -EPIPE || r == -ECONNRESET, "got %d %s", r, err);
    ck_assert_str_ne(err, "");
    ck_assert_int_eq(qmp_query_vcpus(c, &vs, err, sizeof(err)), r);
    ck_assert_int_eq(qmp_poll_events(c, err, sizeof(err)), r);
    ck_assert_int_eq(qmp_wait_event(c, 1000, err, sizeof(err)), r);
    qmp_close(c);
}
END_TEST

/* QEMU greets one client at a time: the second one times out with a hint. */
START_TEST(test_qemu_second_client)
{
    char err[QMP_ERRLEN] = "";
    struct qmp_conn *c, *c2;
    struct qemu q;

    qemu_start(&q, 1, "tcg");
    c = qemu_connect(&q, NULL);
    ck_assert_int_eq(
        qmp_connect(&c2, q.sock, &(struct qmp_opts){.timeout_ms = SHORT_MS}, err, sizeof(err)),
        -ETIMEDOUT);
    ck_assert_msg(strstr(err, "another client") != NULL, "%s", err);
    ck_assert_ptr_null(c2);
    ck_assert(!vm_is_running(c));
    qmp_close(c);
    qemu_kill(&q);
}
END_TEST

static Suite *
qmp_qemu_suite(void)
{
    Suite *s = suite_create("qmp_qemu");
    TCase *tc = tcase_create("qemu");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_qemu_capabilities);
    tcase_add_loop_test(tc, test_qemu_vcpus, 0, 2);
    tcase_add_test(tc, test_qemu_single_threaded_tcg);
    tcase_add_test(tc, test_qemu_events);
    tcase_add_test(tc, test_qemu_frozen_then_thawed);
    tcase_add_test(tc, test_qemu_killed);
    tcase_add_test(tc, test_qemu_second_client);
    suite_add_tcase(s, tc);
    return s;
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

int
main(void)
{
    SRunner *sr;
    int failed;

    if (system(QEMU_BIN " --version >/dev/null 2>&1") != 0) {
        fprintf(stderr, "test_qmp_qemu: %s not found, skipping\n", QEMU_BIN);
        return EXIT_SKIP;
    }
    if (mkdtemp(base_dir) == NULL) {
        perror("test_qmp_qemu: mkdtemp");
        return EXIT_FAILURE;
    }
    sr = srunner_create(qmp_qemu_suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    nftw(base_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
