/* SPDX-License-Identifier: ISC */
/*
 * test_events.c - the event source's parts that need no privilege: the
 * /proc parsers on captured and hostile lines, argument checks, backend
 * choice (VCPUSCHED_NO_BPF), and the proc backend's bookkeeping on this
 * process's own threads. The kernel side is in integration/test_events.c.
 */
#include <signal.h>
#include <sys/wait.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "events/events_impl.h"
#include "testutil.h"

struct stat_case {
    const char *line;
    int ret;
    char state;
    unsigned long flags;
};

static const struct stat_case stat_cases[] = {
    /* Captured from 6.18 (cat). */
    {"10170 (cat) R 10167 10167 13646 0 -1 4194304 97 0 0 0 0 0 0 0 20 0 1 0\n", 0, 'R', 4194304},
    /* A name with spaces and parentheses: the last ')' ends it. */
    {"42 (a) b (c)) S 1 42 42 0 -1 4194368 5 0\n", 0, 'S', 4194368},
    /* A thread in do_exit: PF_EXITING (0x4) set. */
    {"43 (qemu-kvm) D 1 43 43 0 -1 4194372 0 0\n", 0, 'D', 4194372},
    {"44 (z) Z 1 44 44 0 -1 4 0 0\n", 0, 'Z', 4},
    /* Cut before flags ends, no state, garbage, empty. */
    {"45 (x) R 1 45 45 0 -1 419", -EINVAL, 0, 0},
    {"45 (x) R 1 45 45 0 -1", -EINVAL, 0, 0},
    {"45 (x)", -EINVAL, 0, 0},
    {"45 x R 1 2 3 4 5 6 ", -EINVAL, 0, 0},
    {"", -EINVAL, 0, 0},
    {"46 (y) R 1 46 46 0 -1 x 0\n", -EINVAL, 0, 0},
};

START_TEST(test_events_parse_stat)
{
    const struct stat_case *c = &stat_cases[_i];
    unsigned long flags = 0;
    char state = 0;
    int r = events_proc_parse_stat(c->line, strlen(c->line), &state, &flags);

    ck_assert_msg(r == c->ret, "case %d: %d, expected %d", _i, r, c->ret);
    if (c->ret == 0) {
        ck_assert_int_eq(state, c->state);
        ck_assert_uint_eq(flags, c->flags);
    }
}
END_TEST

struct schedstat_case {
    const char *line;
    int ret;
    uint64_t run_ns;
};

static const struct schedstat_case schedstat_cases[] = {
    {"336842403 15104170 109\n", 0, 336842403},
    {"0 0 1\n", 0, 0},
    {"18446744073709551615 0 0\n", 0, UINT64_MAX - 0},
    {"18446744073709551616 0 0\n", -EINVAL, 0}, /* overflows */
    {"12345", -EINVAL, 0},                      /* cut short */
    {"", -EINVAL, 0},
    {"-1 0 0\n", -EINVAL, 0},
    {"12a 0 0\n", -EINVAL, 0},
};

START_TEST(test_events_parse_schedstat)
{
    const struct schedstat_case *c = &schedstat_cases[_i];
    uint64_t run = 7;
    int r = events_proc_parse_schedstat(c->line, strlen(c->line), &run);

    ck_assert_msg(r == c->ret, "case %d: %d, expected %d", _i, r, c->ret);
    if (c->ret == 0)
        ck_assert_uint_eq(run, c->run_ns);
    else
        ck_assert_uint_eq(run, 7); /* untouched */
}
END_TEST

/* A bad mode is refused and *out left alone. */
START_TEST(test_events_open_bad_mode)
{
    struct events *ev = (struct events *)&ev;
    char err[128] = "";

    ck_assert_int_eq(events_open(&ev, (enum events_mode)7, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_eq(ev, (struct events *)&ev);
    ck_assert_msg(strstr(err, "mode") != NULL, "err: %s", err);
}
END_TEST

/* VCPUSCHED_NO_BPF: AUTO degrades to proc and says why; BPF fails. */
START_TEST(test_events_no_bpf_env)
{
    struct events *ev = NULL;
    char err[256] = "";

    setenv("VCPUSCHED_NO_BPF", "1", 1);
    ck_assert_int_eq(events_open(&ev, EVENTS_AUTO, err, sizeof(err)), 0);
    ck_assert_str_eq(events_backend(ev), "proc");
    ck_assert_int_eq(events_fd(ev), -1);
    ck_assert_msg(strstr(err, "VCPUSCHED_NO_BPF") != NULL, "err: %s", err);
    events_close(ev);

    ev = NULL;
    err[0] = '\0';
    ck_assert_int_lt(events_open(&ev, EVENTS_BPF, err, sizeof(err)), 0);
    ck_assert_ptr_null(ev);
    ck_assert_msg(strstr(err, "VCPUSCHED_NO_BPF") != NULL, "err: %s", err);
    unsetenv("VCPUSCHED_NO_BPF");
}
END_TEST

static void
count_rec(void *ctx, const struct events_rec *r)
{
    (void)r;
    (*(int *)ctx)++;
}

/* Bad input to watch/unwatch: clear errors, and nothing changes. */
START_TEST(test_events_proc_bad_input)
{
    struct events *ev;
    struct events_stats st;
    char err[256] = "";
    pid_t me = getpid(), tid = (pid_t)syscall(SYS_gettid);
    int n = 0;

    ck_assert_int_eq(events_open(&ev, EVENTS_PROC, err, sizeof(err)), 0);
    ck_assert_str_eq(err, "");
    ck_assert_int_eq(events_watch(ev, 0, tid, 1, err, sizeof(err)), -EINVAL);
    ck_assert_int_eq(events_watch(ev, me, -3, 1, err, sizeof(err)), -EINVAL);
    ck_assert_msg(strstr(err, "bad id") != NULL, "err: %s", err);
    /* A tid that is not a thread of pid (pid 1's task list has no us). */
    ck_assert_int_eq(events_watch(ev, 1, tid, 1, err, sizeof(err)), -ESRCH);
    ck_assert_msg(strstr(err, "no such thread") != NULL, "err: %s", err);
    ck_assert_int_eq(events_unwatch(ev, tid), -ENOENT);
    ck_assert_int_eq(events_unwatch(ev, 0), -ENOENT);
    events_stats(ev, &st);
    ck_assert_uint_eq(st.watched, 0);
    /* Watch ourselves once: a second watch is refused, unwatch works once. */
    ck_assert_int_eq(events_watch(ev, me, tid, 9, err, sizeof(err)), 0);
    ck_assert_int_eq(events_watch(ev, me, tid, 9, err, sizeof(err)), -EEXIST);
    ck_assert_msg(strstr(err, "already watched") != NULL, "err: %s", err);
    events_stats(ev, &st);
    ck_assert_uint_eq(st.watched, 1);
    ck_assert_int_ge(events_poll(ev, 1, count_rec, &n), 0);
    ck_assert_int_eq(events_unwatch(ev, tid), 0);
    ck_assert_int_eq(events_unwatch(ev, tid), -ENOENT);
    events_stats(ev, &st);
    ck_assert_uint_eq(st.watched, 0);
    ck_assert_uint_eq(st.polls, 1);
    ck_assert_uint_eq(st.records, (uint64_t)n);
    events_close(ev);
}
END_TEST

/* A child process killed while watched: EXIT, then it is forgotten. */
START_TEST(test_events_proc_vanished)
{
    struct events *ev;
    char err[256] = "";
    pid_t child = fork();
    int n = 0;

    ck_assert_int_ge(child, 0);
    if (child == 0) {
        pause();
        _exit(0);
    }
    ck_assert_int_eq(events_open(&ev, EVENTS_PROC, err, sizeof(err)), 0);
    ck_assert_int_eq(events_watch(ev, child, child, 3, err, sizeof(err)), 0);
    kill(child, SIGKILL);
    ck_assert_int_eq(waitpid(child, NULL, 0), child);
    ck_assert_int_eq(events_poll(ev, 5, count_rec, &n), 1);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(events_unwatch(ev, child), -ENOENT);
    ck_assert_int_eq(events_poll(ev, 6, count_rec, &n), 0);
    /* Gone for good: watching it again fails. */
    ck_assert_int_eq(events_watch(ev, child, child, 3, err, sizeof(err)), -ESRCH);
    events_close(ev);
}
END_TEST

static Suite *
events_suite(void)
{
    Suite *s = suite_create("events");
    TCase *tc = tcase_create("proc");

    tcase_add_loop_test(tc, test_events_parse_stat, 0,
                        (int)(sizeof(stat_cases) / sizeof(stat_cases[0])));
    tcase_add_loop_test(tc, test_events_parse_schedstat, 0,
                        (int)(sizeof(schedstat_cases) / sizeof(schedstat_cases[0])));
    tcase_add_test(tc, test_events_open_bad_mode);
    tcase_add_test(tc, test_events_no_bpf_env);
    tcase_add_test(tc, test_events_proc_bad_input);
    tcase_add_test(tc, test_events_proc_vanished);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(events_suite());
}
