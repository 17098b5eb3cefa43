/* SPDX-License-Identifier: ISC */
/*
 * test_watchdog.c - the guardian's judgement of a stuck daemon
 * (vcpusched/host/watchdog.c): on made-up sample sequences that pin each
 * rule down, and on samples recorded on real threads at real SCHED_FIFO
 * (the NAME.trace files of tests/fixtures/watchdog, by its record.py):
 * a stopped daemon with a waiting thread trips a bound after the stop;
 * Credit's long queue, a background vCPU held near alpha, a stopped daemon
 * whose only busy thread is frozen do not.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/watchdog.h"
#include "testutil.h"

#define BOUND (MS(1000))

/* --- made-up sequences ----------------------------------------------------- */

/*
 * One thread sampled every 100 ms from t=0 for `rounds`: state[i] and the
 * run time advancing by run_ms[i] (pcount with it); its CPU's dispatcher
 * last passed at beat(i). Returns the first round that trips, or -1.
 */
struct seq {
    const char *states;   /* one letter per round */
    const int *run_ms;    /* run time gained before each round (NULL: none) */
    uint64_t stale_from;  /* the heartbeat stops moving at this time (ns) */
    uint64_t stale_until; /* and moves again from here (0: never) */
};

static int
replay_seq(const struct seq *q, uint64_t bound)
{
    struct watchdog_thread t = {0};
    struct watchdog_sample s = {0};

    for (int i = 0; q->states[i] != '\0'; i++) {
        uint64_t now = (uint64_t)(i + 1) * MS(100);
        bool moving = now < q->stale_from || (q->stale_until != 0 && now >= q->stale_until);
        uint64_t pass = moving ? now - MS(1) : q->stale_from;

        s.state = q->states[i];
        if (q->run_ms != NULL && q->run_ms[i] > 0) {
            s.exec_ns += MS(q->run_ms[i]);
            s.pcount++;
        }
        if (watchdog_thread_round(&t, 4242, pass, &s, now, bound) > 0)
            return i;
    }
    return -1;
}

/* A thread that waits with the daemon stopped at 0.35 s trips a bound later. */
START_TEST(waiting_behind_a_stopped_dispatcher_trips)
{
    struct seq q = {.states = "RRRRRRRRRRRRRRRRRRRRRRRRRRRRRR", .stale_from = MS(350)};
    int at = replay_seq(&q, BOUND);

    /*
     * Sampled from the first suspect round (heartbeat 300 ms old: 700 ms);
     * its streak reaches the bound 1000 ms later: round 16, t = 1.7 s.
     */
    ck_assert_int_eq(at, 16);
}
END_TEST

/* The same thread running (its run time moves): the stale heartbeat alone does not trip. */
START_TEST(running_thread_does_not_trip)
{
    static const int ran[30] = {[0 ... 29] = 90};
    struct seq q = {.states = "RRRRRRRRRRRRRRRRRRRRRRRRRRRRRR", .run_ms = ran, .stale_from = 0};

    ck_assert_int_eq(replay_seq(&q, BOUND), -1);
}
END_TEST

/* Waiting 2.9 s behind a live dispatcher (Credit's queue) never trips. */
START_TEST(long_wait_behind_a_live_dispatcher)
{
    struct seq q = {.states = "RRRRRRRRRRRRRRRRRRRRRRRRRRRRRR", .stale_from = UINT64_MAX};

    ck_assert_int_eq(replay_seq(&q, BOUND), -1);
}
END_TEST

/* Frozen (parked) or blocked while the dispatcher is stopped: not waiting. */
START_TEST(frozen_or_blocked_does_not_trip)
{
    struct seq frozen = {.states = "DDDDDDDDDDDDDDDDDDDDDDDDDDDDDD", .stale_from = 0};
    struct seq asleep = {.states = "SSSSSSSSSSSSSSSSSSSSSSSSSSSSSS", .stale_from = 0};

    ck_assert_int_eq(replay_seq(&frozen, BOUND), -1);
    ck_assert_int_eq(replay_seq(&asleep, BOUND), -1);
}
END_TEST

/* A wait shorter than the bound, then a run, then another: each counts alone. */
START_TEST(a_run_ends_the_streak)
{
    static const int ran[30] = {[9] = 5, [18] = 5, [27] = 5};
    struct seq q = {.states = "RRRRRRRRRRRRRRRRRRRRRRRRRRRRRR", .run_ms = ran, .stale_from = 0};

    ck_assert_int_eq(replay_seq(&q, BOUND), -1);
}
END_TEST

/* A sleeper that wakes and then waits: the wait counts from the first R sample. */
START_TEST(wait_counts_from_the_wake)
{
    struct seq q = {.states = "SSSSSSSSSSRRRRRRRRRRRRRRRRRRRR", .stale_from = 0};

    /* First R at round 10 (t = 1.1 s); 1000 ms later: round 20. */
    ck_assert_int_eq(replay_seq(&q, BOUND), 20);
}
END_TEST

/* The dispatcher passes again before the bound: the streak is forgotten. */
START_TEST(dispatcher_back_in_time)
{
    struct seq q = {
        .states = "RRRRRRRRRRRRRRRRRRRRRRRRRRRRRR", .stale_from = MS(100), .stale_until = MS(1000)};

    /* Suspect from 0.4 s, back at 1.0 s; nothing trips. */
    ck_assert_int_eq(replay_seq(&q, BOUND), -1);
}
END_TEST

/* Bound 0: the watchdog is off. */
START_TEST(bound_zero_never_trips)
{
    struct seq q = {.states = "RRRRRRRRRRRRRRRRRRRRRRRRRRRRRR", .stale_from = 0};

    ck_assert_int_eq(replay_seq(&q, 0), -1);
}
END_TEST

/* A slot reused by another thread starts afresh. */
START_TEST(another_tid_starts_afresh)
{
    struct watchdog_thread t = {0};
    struct watchdog_sample s = {.state = 'R', .exec_ns = 5, .pcount = 1};
    uint64_t now = MS(10000);

    watchdog_thread_update(&t, 1, &s, now);
    watchdog_thread_update(&t, 1, &s, now + MS(900));
    ck_assert_uint_eq(watchdog_waited(&t, now + MS(900)), MS(900));
    watchdog_thread_update(&t, 2, &s, now + MS(1000));
    ck_assert_uint_eq(watchdog_waited(&t, now + MS(1000)), 0);
}
END_TEST

/* --- recorded samples ------------------------------------------------------ */

struct rec_thread {
    int tid;
    struct watchdog_thread t;       /* as the guardian follows it */
    struct watchdog_thread ungated; /* every sample: its longest wait */
};

struct replay {
    uint64_t stop, cont;
    int expect_tid; /* -1: expect none */
    uint64_t trip_at;
    int trip_tid;
    uint64_t max_wait; /* the longest wait of a thread, whatever the heartbeat */
    uint64_t max_beat; /* the oldest heartbeat seen */
    unsigned int samples;
};

static struct rec_thread *
rec_find(struct rec_thread *ths, unsigned int *n, int tid)
{
    for (unsigned int i = 0; i < *n; i++)
        if (ths[i].tid == tid)
            return &ths[i];
    ck_assert_uint_lt(*n, 64);
    ths[*n] = (struct rec_thread){.tid = tid};
    return &ths[(*n)++];
}

/* Replay a recorded trace with the guardian's rule and the default bound. */
static void
replay_trace(const char *path, struct replay *r)
{
    static struct rec_thread ths[64];
    unsigned int n = 0;
    char line[256], word[32];
    FILE *f = fopen(path, "r");

    memset(r, 0, sizeof(*r));
    r->expect_tid = -2;
    ck_assert_msg(f != NULL, "%s", path);
    while (fgets(line, sizeof(line), f) != NULL) {
        unsigned long long t, pass, exec, pcount, v;
        struct watchdog_sample s;
        struct rec_thread *th;
        uint64_t waited;
        int cpu, tid;
        char state;

        if (sscanf(line, "# stop %llu", &v) == 1)
            r->stop = v;
        else if (sscanf(line, "# cont %llu", &v) == 1)
            r->cont = v;
        else if (sscanf(line, "# expect trip %d", &tid) == 1)
            r->expect_tid = tid;
        else if (sscanf(line, "# expect %31s", word) == 1 && strcmp(word, "none") == 0)
            r->expect_tid = -1;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        ck_assert_int_eq(sscanf(line, "%llu %d %llu %d %c %llu %llu", &t, &cpu, &pass, &tid, &state,
                                &exec, &pcount),
                         7);
        r->samples++;
        th = rec_find(ths, &n, tid);
        s = (struct watchdog_sample){.state = state, .exec_ns = exec, .pcount = pcount};
        watchdog_thread_update(&th->ungated, tid, &s, t);
        if (watchdog_waited(&th->ungated, t) > r->max_wait)
            r->max_wait = watchdog_waited(&th->ungated, t);
        if (t > pass && t - pass > r->max_beat)
            r->max_beat = t - pass;
        waited = watchdog_thread_round(&th->t, tid, pass, &s, t, BOUND);
        if (waited > 0 && r->trip_at == 0) {
            r->trip_at = t;
            r->trip_tid = tid;
        }
    }
    fclose(f);
    ck_assert_msg(r->expect_tid != -2, "%s: no '# expect' line", path);
    ck_assert_uint_gt(r->samples, 20);
}

static const char *
trace(const char *name)
{
    static char path[512];

    snprintf(path, sizeof(path), "%s/%s.trace", WATCHDOG_FIXTURE_DIR, name);
    return path;
}

/* kill -STOP with two hogs on CPU 1: trips on the waiting one, a bound (+ gate) after the stop. */
START_TEST(recorded_stop_two_hogs)
{
    struct replay r;

    replay_trace(trace("stop-two-hogs"), &r);
    ck_assert_int_gt(r.expect_tid, 0);
    ck_assert_uint_ne(r.trip_at, 0);
    ck_assert_int_eq(r.trip_tid, r.expect_tid);
    ck_assert_uint_ge(r.trip_at - r.stop, BOUND);
    ck_assert_uint_le(r.trip_at - r.stop, BOUND + WATCHDOG_SUSPECT_NS + 3 * WATCHDOG_PERIOD_NS);
    ck_assert_uint_lt(r.trip_at, r.cont);
}
END_TEST

/*
 * Legitimate long waits and stale heartbeats without a waiting thread:
 * none trips. Each recording shows what it is about (a wait past the
 * bound behind a live dispatcher, a heartbeat older than the bound).
 */
START_TEST(recorded_legitimate)
{
    static const struct {
        const char *name;
        uint64_t min_wait, min_beat;
    } rec[] = {{"credit-queue", BOUND, 0},
               {"background-held", MS(700), 0},
               {"stop-frozen-sleepers", 0, 2 * BOUND}};
    const char *name = rec[_i].name;
    struct replay r;

    replay_trace(trace(name), &r);
    ck_assert_int_eq(r.expect_tid, -1);
    ck_assert_msg(r.max_wait >= rec[_i].min_wait, "%s: longest wait %llu ms", name,
                  (unsigned long long)(r.max_wait / NSEC_PER_MSEC));
    ck_assert_msg(r.max_beat >= rec[_i].min_beat, "%s: oldest heartbeat %llu ms", name,
                  (unsigned long long)(r.max_beat / NSEC_PER_MSEC));
    ck_assert_msg(r.trip_at == 0, "%s: tripped on %d at %llu ns", name, r.trip_tid,
                  (unsigned long long)r.trip_at);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("watchdog");
    TCase *tc = tcase_create("watchdog");

    tcase_add_test(tc, waiting_behind_a_stopped_dispatcher_trips);
    tcase_add_test(tc, running_thread_does_not_trip);
    tcase_add_test(tc, long_wait_behind_a_live_dispatcher);
    tcase_add_test(tc, frozen_or_blocked_does_not_trip);
    tcase_add_test(tc, a_run_ends_the_streak);
    tcase_add_test(tc, wait_counts_from_the_wake);
    tcase_add_test(tc, dispatcher_back_in_time);
    tcase_add_test(tc, bound_zero_never_trips);
    tcase_add_test(tc, another_tid_starts_afresh);
    tcase_add_test(tc, recorded_stop_two_hogs);
    tcase_add_loop_test(tc, recorded_legitimate, 0, 3);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
