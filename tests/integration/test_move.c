/* SPDX-License-Identifier: ISC */
/*
 * test_move.c - sched_move on the real kernel: two pools, one on each CPU
 * of a 2-CPU host (the core, unlike the daemon, lets a test use the
 * housekeeping CPU), real SCHED_FIFO threads that mostly sleep, a real
 * cgroup v1 cpuset. A refused move (unknown pool, a parameter the new
 * policy refuses, a cpuset without the new pool's CPUs) leaves every
 * thread exactly where and as it was; a move re-pins and re-parents.
 * Also vCPU hot-plug in the core (sched_dom_update): a new thread joins
 * the domain managed, a vanished one leaves, the others stay as they are;
 * and a pool's CPUs changed under its domain (sched_pool_resize): refused
 * where a CPU is another pool's or a cpuset allows none of them, with
 * nothing changed; grown, moved and shrunk, every thread re-pinned at
 * SCHED_FIFO with its parameters.
 * Needs root (exits 77 otherwise); runs under run-exclusive.
 */
#include <check.h>
#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/sched_core.h"
#include "host/topology.h"

#define NR_THREADS 2
#define CPUSET_V1  "/sys/fs/cgroup/cpuset"

struct fixture {
    char dir[64], path[96];
    struct statefile sf;
    struct events *ev;
    struct sched *s;
    pthread_t th[NR_THREADS];
    _Atomic pid_t tids[NR_THREADS];
    atomic_bool stop;
};

static struct fixture fx;

/* A vCPU-like thread: wakes every 2 ms for a moment (the CPUs stay free). */
static void *
sleeper(void *arg)
{
    struct timespec ts = {0, 2000000};

    atomic_store((_Atomic pid_t *)arg, (pid_t)syscall(SYS_gettid));
    while (!atomic_load(&fx.stop))
        nanosleep(&ts, NULL);
    return NULL;
}

static void
pool_on(const char *name, int cpu, const char *policy)
{
    struct policy_cpu pc;
    char err[256] = "";

    ck_assert_msg(topology_describe(&cpu, 1, &pc, err, sizeof(err)) == 0, "%s", err);
    ck_assert_msg(sched_pool_create(fx.s, name, &pc, 1, policy, NULL, 0, err, sizeof(err)) == 0,
                  "%s", err);
}

static void
setup(void)
{
    struct sched_config cfg = {
        .pattern = SCHED_SHARED,
        .prio = {10, 11, 12},
        .move_rt_cgroup = true,
        .proc_poll_ns = 1000000,
    };
    struct kv w = {"weight", "512"};
    pid_t tids[NR_THREADS];
    char err[256] = "";

    snprintf(fx.dir, sizeof(fx.dir), "/tmp/vcpusched-move-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(fx.dir));
    snprintf(fx.path, sizeof(fx.path), "%s/state", fx.dir);
    ck_assert_msg(statefile_open(&fx.sf, fx.path, err, sizeof(err)) == 0 &&
                      statefile_own(&fx.sf, fx.path, 1000, err, sizeof(err)) == 0,
                  "%s", err);
    ck_assert_msg(events_open(&fx.ev, EVENTS_AUTO, err, sizeof(err)) == 0, "%s", err);
    ck_assert_msg(sched_create(&fx.s, &cfg, &fx.sf, fx.ev, err, sizeof(err)) == 0, "%s", err);
    pool_on("a", 1, "credit");
    pool_on("b", 0, "credit2");
    atomic_store(&fx.stop, false);
    for (int i = 0; i < NR_THREADS; i++) {
        atomic_store(&fx.tids[i], 0);
        ck_assert_int_eq(pthread_create(&fx.th[i], NULL, sleeper, &fx.tids[i]), 0);
        while (atomic_load(&fx.tids[i]) == 0)
            sched_yield();
        tids[i] = atomic_load(&fx.tids[i]);
    }
    ck_assert_msg(sched_attach(fx.s, "vm", "a", getpid(), tids, NR_THREADS, &w, 1, "tids", NULL,
                               err, sizeof(err)) == 0,
                  "%s", err);
}

static void
teardown(void)
{
    atomic_store(&fx.stop, true);
    sched_destroy(fx.s); /* gives every thread back */
    for (int i = 0; i < NR_THREADS; i++)
        pthread_join(fx.th[i], NULL);
    events_close(fx.ev);
    (void)statefile_restore_all(&fx.sf);
    statefile_disown(&fx.sf);
    statefile_close(&fx.sf);
    unlink(fx.path);
    rmdir(fx.dir);
}

/* One thread as the kernel and the core see it. */
struct seen {
    int policy;
    cpu_set_t aff;
};

struct placement {
    char pool[VS_NAME_SIZE];
    char params[256];
    struct seen t[NR_THREADS];
};

static void
placement_get(struct placement *p)
{
    struct json_object *d = sched_json_domain(fx.s, "vm"), *v;

    memset(p, 0, sizeof(*p));
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(sched_dom_pool(fx.s, "vm", p->pool, sizeof(p->pool)), 0);
    ck_assert(json_object_object_get_ex(d, "params", &v));
    snprintf(p->params, sizeof(p->params), "%s", json_object_to_json_string(v));
    json_object_put(d);
    for (int i = 0; i < NR_THREADS; i++) {
        p->t[i].policy = sched_getscheduler(fx.tids[i]) & ~SCHED_RESET_ON_FORK;
        ck_assert_int_eq(sched_getaffinity(fx.tids[i], sizeof(cpu_set_t), &p->t[i].aff), 0);
    }
}

static void
assert_placement(const struct placement *want, const char *what)
{
    struct placement got;

    placement_get(&got);
    ck_assert_msg(strcmp(got.pool, want->pool) == 0, "%s: pool %s, not %s", what, got.pool,
                  want->pool);
    ck_assert_msg(strcmp(got.params, want->params) == 0, "%s: params %s, not %s", what, got.params,
                  want->params);
    for (int i = 0; i < NR_THREADS; i++) {
        ck_assert_msg(got.t[i].policy == want->t[i].policy, "%s: thread %d policy", what, i);
        ck_assert_msg(CPU_EQUAL(&got.t[i].aff, &want->t[i].aff), "%s: thread %d affinity", what, i);
    }
}

static void
refused(const char *pool, const struct kv *kv, size_t n, int want, const char *why)
{
    struct placement before;
    char err[256] = "";

    placement_get(&before);
    ck_assert_str_eq(before.pool, "a");
    ck_assert_int_eq(sched_move(fx.s, "vm", pool, kv, n, err, sizeof(err)), want);
    ck_assert_msg(strstr(err, why) != NULL, "message '%s' lacks '%s'", err, why);
    assert_placement(&before, why);
}

START_TEST(test_move_refusals_change_nothing)
{
    struct kv zero = {"weight", "0"}, odd = {"slice_us", "5"};
    char err[256];

    refused("nope", NULL, 0, -ENOENT, "no pool nope");
    refused("a", NULL, 0, -EEXIST, "in pool a already");
    refused("b", &zero, 1, -EINVAL, "weight");
    refused("b", &odd, 1, -EINVAL, "slice_us");
    ck_assert_int_eq(sched_move(fx.s, "ghost", "b", NULL, 0, err, sizeof(err)), -ENOENT);
}
END_TEST

static void
write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "we");

    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    ck_assert_int_ge(fputs(text, f), 0);
    ck_assert_msg(fclose(f) == 0, "%s: %s", path, strerror(errno));
}

/*
 * Thread 1 of vm into a cgroup v1 cpuset of CPU 1 only (pool a's), named
 * after `what` into cg[]; false, said, if there is no such hierarchy.
 */
static bool
cpuset_enter(char *cg, size_t len, const char *what)
{
    char path[192], buf[64], mems[64] = "0";
    FILE *f;

    snprintf(cg, len, CPUSET_V1 "/vcpusched-test-%s-%d", what, (int)getpid());
    if (access(CPUSET_V1 "/tasks", W_OK) != 0 || mkdir(cg, 0755) != 0) {
        fprintf(stderr, "test_move: no cgroup v1 cpuset hierarchy: %s cpuset case skipped\n", what);
        return false;
    }
    f = fopen(CPUSET_V1 "/cpuset.mems", "re");
    if (f != NULL && fgets(mems, sizeof(mems), f) == NULL)
        snprintf(mems, sizeof(mems), "0");
    if (f != NULL)
        fclose(f);
    snprintf(path, sizeof(path), "%s/cpuset.mems", cg);
    write_file(path, mems);
    snprintf(path, sizeof(path), "%s/cpuset.cpus", cg);
    write_file(path, "1");
    snprintf(path, sizeof(path), "%s/tasks", cg);
    snprintf(buf, sizeof(buf), "%d", (int)fx.tids[1]);
    write_file(path, buf);
    return true;
}

/* Thread 1 back to the root cpuset, which widens its affinity: pinned to CPU 1 again. */
static void
cpuset_leave(const char *cg)
{
    char buf[64];
    cpu_set_t one;

    snprintf(buf, sizeof(buf), "%d", (int)fx.tids[1]);
    write_file(CPUSET_V1 "/tasks", buf);
    CPU_ZERO(&one);
    CPU_SET(1, &one);
    ck_assert_int_eq(sched_setaffinity(fx.tids[1], sizeof(one), &one), 0);
    ck_assert_int_eq(rmdir(cg), 0);
}

START_TEST(test_move_refused_by_cpuset)
{
    char cg[128];

    if (!cpuset_enter(cg, sizeof(cg), "move"))
        return;
    refused("b", NULL, 0, -EINVAL, "its cgroup cpuset");
    cpuset_leave(cg);
}
END_TEST

START_TEST(test_move_and_back)
{
    struct kv cap = {"cap", "50"};
    struct placement p;
    char err[256] = "";

    ck_assert_msg(sched_move(fx.s, "vm", "b", &cap, 1, err, sizeof(err)) == 0, "%s", err);
    placement_get(&p);
    ck_assert_str_eq(p.pool, "b");
    /* weight carried (credit2 knows it), cap given. */
    ck_assert_msg(strstr(p.params, "\"weight\": \"512\"") != NULL &&
                      strstr(p.params, "\"cap\": \"50\"") != NULL,
                  "%s", p.params);
    for (int i = 0; i < NR_THREADS; i++) {
        ck_assert_int_eq(p.t[i].policy, SCHED_FIFO);
        ck_assert(CPU_COUNT(&p.t[i].aff) == 1 && CPU_ISSET(0, &p.t[i].aff));
    }
    ck_assert_msg(sched_move(fx.s, "vm", "a", NULL, 0, err, sizeof(err)) == 0, "%s", err);
    placement_get(&p);
    ck_assert_str_eq(p.pool, "a");
    for (int i = 0; i < NR_THREADS; i++) {
        ck_assert_int_eq(p.t[i].policy, SCHED_FIFO);
        ck_assert(CPU_COUNT(&p.t[i].aff) == 1 && CPU_ISSET(1, &p.t[i].aff));
    }
    ck_assert_int_eq(sched_detach(fx.s, "vm", err, sizeof(err)), 0);
    for (int i = 0; i < NR_THREADS; i++)
        ck_assert_int_eq(sched_getscheduler(fx.tids[i]) & ~SCHED_RESET_ON_FORK, SCHED_OTHER);
}
END_TEST

/* Pool a's CPUs and resizes, as `pool list` gives them. */
static void
pool_a_cpus(char *cpus, size_t len, int64_t *resizes)
{
    struct json_object *all = sched_json_pools(fx.s), *pools, *a, *v;

    ck_assert(json_object_object_get_ex(all, "pools", &pools));
    a = json_object_array_get_idx(pools, 0);
    ck_assert(json_object_object_get_ex(a, "cpus", &v));
    snprintf(cpus, len, "%s", json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
    ck_assert(json_object_object_get_ex(a, "resizes", &v));
    *resizes = json_object_get_int64(v);
    json_object_put(all);
}

/* Resize pool a to host CPUs list[0..n): `want` returned, with `why` in the message if refused. */
static void
resize_a(const int *list, unsigned int n, int want, const char *why)
{
    struct policy_cpu pc[2];
    char err[256] = "";

    ck_assert_msg(topology_describe(list, n, pc, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(sched_pool_resize(fx.s, "a", pc, n, err, sizeof(err)), want);
    if (why != NULL)
        ck_assert_msg(strstr(err, why) != NULL, "message '%s' lacks '%s'", err, why);
}

/* Every thread of vm at SCHED_FIFO on one CPU of `allowed` (a mask of CPUs 0 and 1). */
static void
assert_on(unsigned int allowed, const char *what)
{
    struct placement p;

    placement_get(&p);
    ck_assert_str_eq(p.pool, "a");
    ck_assert_msg(strstr(p.params, "\"weight\": \"512\"") != NULL, "%s: %s", what, p.params);
    for (int i = 0; i < NR_THREADS; i++) {
        ck_assert_msg(p.t[i].policy == SCHED_FIFO, "%s: thread %d not FIFO", what, i);
        ck_assert_msg(CPU_COUNT(&p.t[i].aff) == 1, "%s: thread %d on %d CPUs", what, i,
                      CPU_COUNT(&p.t[i].aff));
        ck_assert_msg((CPU_ISSET(0, &p.t[i].aff) && (allowed & 1)) ||
                          (CPU_ISSET(1, &p.t[i].aff) && (allowed & 2)),
                      "%s: thread %d pinned outside the pool", what, i);
    }
}

START_TEST(test_resize_and_back)
{
    static const int both[] = {0, 1}, zero[] = {0}, one[] = {1};
    struct placement before;
    char cpus[64], err[256] = "";
    int64_t resizes;

    /* CPU 0 is pool b's: refused, nothing changed. */
    placement_get(&before);
    resize_a(both, 2, -EBUSY, "cpu 0 already belongs to a pool");
    resize_a(one, 1, 0, NULL); /* the same CPUs: nothing to do */
    assert_placement(&before, "refused");
    pool_a_cpus(cpus, sizeof(cpus), &resizes);
    ck_assert_str_eq(cpus, "[1]");
    ck_assert_int_eq(resizes, 0);

    ck_assert_int_eq(sched_pool_destroy(fx.s, "b", err, sizeof(err)), 0);
    resize_a(both, 2, 0, NULL);
    assert_on(3, "grown to CPUs 0-1");
    pool_a_cpus(cpus, sizeof(cpus), &resizes);
    ck_assert_str_eq(cpus, "[0,1]");
    resize_a(zero, 1, 0, NULL); /* CPU 1 goes: every thread to CPU 0 */
    assert_on(1, "moved to CPU 0");
    resize_a(one, 1, 0, NULL);
    assert_on(2, "back on CPU 1");
    pool_a_cpus(cpus, sizeof(cpus), &resizes);
    ck_assert_str_eq(cpus, "[1]");
    ck_assert_int_eq(resizes, 3);
    ck_assert_int_eq(sched_detach(fx.s, "vm", err, sizeof(err)), 0);
    for (int i = 0; i < NR_THREADS; i++)
        ck_assert_int_eq(sched_getscheduler(fx.tids[i]) & ~SCHED_RESET_ON_FORK, SCHED_OTHER);
}
END_TEST

START_TEST(test_resize_refused_by_cpuset)
{
    static const int zero[] = {0};
    char cg[128], err[256] = "";
    struct placement before;

    if (!cpuset_enter(cg, sizeof(cg), "resize"))
        return;
    ck_assert_int_eq(sched_pool_destroy(fx.s, "b", err, sizeof(err)), 0);
    placement_get(&before);
    resize_a(zero, 1, -EINVAL, "its cgroup cpuset");
    assert_placement(&before, "refused by a cpuset");
    cpuset_leave(cg);
}
END_TEST

static atomic_bool third_stop;

static void *
third_sleeper(void *arg)
{
    struct timespec ts = {0, 2000000};

    atomic_store((_Atomic pid_t *)arg, (pid_t)syscall(SYS_gettid));
    while (!atomic_load(&third_stop))
        nanosleep(&ts, NULL);
    return NULL;
}

START_TEST(test_vcpu_plug_and_unplug)
{
    pid_t tids[NR_THREADS + 1];
    _Atomic pid_t third = 0;
    struct placement before, after;
    struct json_object *d, *v;
    char err[256] = "";
    pthread_t th;

    for (int i = 0; i < NR_THREADS; i++)
        tids[i] = fx.tids[i];
    placement_get(&before);
    ck_assert_int_eq(sched_dom_update(fx.s, "vm", getpid(), tids, NR_THREADS, err, sizeof(err)), 0);
    ck_assert_int_eq(sched_dom_update(fx.s, "vm", getpid(), tids, 0, err, sizeof(err)), 0);
    ck_assert_int_eq(sched_dom_update(fx.s, "vm", getpid() + 1, tids, 1, err, sizeof(err)), -ESRCH);
    ck_assert_int_eq(sched_dom_update(fx.s, "nope", getpid(), tids, 1, err, sizeof(err)), -ENOENT);

    atomic_store(&third_stop, false);
    ck_assert_int_eq(pthread_create(&th, NULL, third_sleeper, &third), 0);
    while (atomic_load(&third) == 0)
        sched_yield();
    tids[NR_THREADS] = atomic_load(&third);
    ck_assert_msg(sched_dom_update(fx.s, "vm", getpid(), tids, NR_THREADS + 1, err, sizeof(err)) ==
                      1,
                  "%s", err);
    d = sched_json_domain(fx.s, "vm");
    ck_assert(json_object_object_get_ex(d, "vcpus", &v));
    ck_assert_uint_eq(json_object_array_length(v), NR_THREADS + 1);
    json_object_put(d);
    ck_assert_int_eq(sched_getscheduler(tids[NR_THREADS]) & ~SCHED_RESET_ON_FORK, SCHED_FIFO);
    /* The first vCPUs were not touched; parameters are the domain's. */
    placement_get(&after);
    ck_assert_str_eq(after.params, before.params);
    for (int i = 0; i < NR_THREADS; i++) {
        ck_assert_int_eq(after.t[i].policy, before.t[i].policy);
        ck_assert(CPU_EQUAL(&after.t[i].aff, &before.t[i].aff));
    }

    atomic_store(&third_stop, true);
    pthread_join(th, NULL);
    ck_assert_msg(sched_dom_update(fx.s, "vm", getpid(), tids, NR_THREADS, err, sizeof(err)) == 1,
                  "%s", err);
    d = sched_json_domain(fx.s, "vm");
    ck_assert(json_object_object_get_ex(d, "vcpus", &v));
    ck_assert_uint_eq(json_object_array_length(v), NR_THREADS);
    json_object_put(d);
    assert_placement(&before, "after the unplug");
}
END_TEST

static Suite *
move_suite(void)
{
    Suite *s = suite_create("move");
    TCase *tc = tcase_create("move");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_move_refusals_change_nothing);
    tcase_add_test(tc, test_move_refused_by_cpuset);
    tcase_add_test(tc, test_move_and_back);
    tcase_add_test(tc, test_vcpu_plug_and_unplug);
    tcase_add_test(tc, test_resize_and_back);
    tcase_add_test(tc, test_resize_refused_by_cpuset);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr;
    int failed;

    if (geteuid() != 0) {
        fprintf(stderr, "test_move: needs root (SCHED_FIFO, cgroups); skipped\n");
        return 77;
    }
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
        fprintf(stderr, "test_move: needs 2 CPUs; skipped\n");
        return 77;
    }
    sr = srunner_create(move_suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
