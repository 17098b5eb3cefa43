/* SPDX-License-Identifier: ISC */
/*
 * wake_latency.c - how soon the event source tells a consumer that a
 * thread woke, bpf (consumer asleep in epoll on events_fd) vs proc (the
 * consumer polls every -p us), and what the event source costs.
 *
 * A target thread on the managed CPU sleeps until an absolute time T
 * (random gaps, timer slack 1 ns), then spins -s us so that a poller can
 * see it runnable. The consumer, on the housekeeping CPU, stamps the WAKE
 * record's arrival; latency = arrival - T (includes the timer's own
 * latency, the same in both modes). For bpf it also reports arrival - the
 * record's kernel stamp. Prints p50/p99/p99.9/max per mode, then the cost
 * of an empty events_poll and of the BPF programs (BPF_ENABLE_STATS,
 * held only while this runs). -f N runs the consumer at SCHED_FIFO N (as
 * a dispatcher), -b makes the bpf consumer busy-poll (the dedicated
 * pattern). Run as root under run-exclusive:
 *
 *     tests/integration/run-exclusive build/bench/wake_latency -n 2000
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "events/events.h"

#define NSEC_PER_USEC 1000ull
#define NSEC_PER_MSEC 1000000ull

struct bench_opts {
    unsigned int wakes;
    uint64_t spin_ns; /* the target's run after each wake */
    uint64_t poll_ns; /* proc mode's poll period */
    int target_cpu;
    int consumer_cpu;
    int consumer_fifo; /* SCHED_FIFO priority of the consumer, 0: OTHER */
    bool busy_poll;    /* bpf: spin on events_poll, wake-ups off (dedicated) */
    bool bpf, proc;
};

struct bench_target {
    pthread_t th;
    atomic_int tid;
    _Atomic uint64_t t_target; /* absolute time of the pending wake */
    atomic_bool go, stop;
    const struct bench_opts *o;
};

struct bench_run {
    struct bench_target *tg;
    uint64_t *lat, *lat_kernel;
    unsigned int n, nk, stale;
};

static uint64_t
now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int
pin(int cpu)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* The gap before each wake: 0.5..1.5 ms, from a fixed LCG (same in both modes). */
static uint64_t
bench_gap_ns(uint32_t *seed)
{
    *seed = *seed * 1664525u + 1013904223u;
    return 500 * NSEC_PER_USEC + (*seed >> 8) % NSEC_PER_MSEC;
}

static void *
bench_target_main(void *arg)
{
    struct bench_target *tg = arg;
    uint32_t seed = 12345;

    pin(tg->o->target_cpu);
    prctl(PR_SET_TIMERSLACK, 1UL);
    atomic_store(&tg->tid, (int)syscall(SYS_gettid));
    while (!atomic_load(&tg->go))
        usleep(1000);
    for (unsigned int i = 0; i < tg->o->wakes && !atomic_load(&tg->stop); i++) {
        uint64_t t = now_ns() + bench_gap_ns(&seed);
        struct timespec ts = {.tv_sec = (time_t)(t / 1000000000ull),
                              .tv_nsec = (long)(t % 1000000000ull)};

        atomic_store(&tg->t_target, t);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        while (now_ns() < t + tg->o->spin_ns)
            ;
    }
    atomic_store(&tg->stop, true);
    return NULL;
}

static void
bench_on_rec(void *ctx, const struct events_rec *r)
{
    struct bench_run *run = ctx;
    uint64_t now = now_ns(), t = atomic_load(&run->tg->t_target);

    if (r->type != EVENTS_WAKE || r->tid != atomic_load(&run->tg->tid))
        return;
    if (t == 0 || now < t || r->ts_ns < t || run->n == run->tg->o->wakes) {
        run->stale++; /* before the first cycle, or a wake of a past cycle */
        return;
    }
    run->lat[run->n++] = now - t;
    if (r->cpu >= 0) /* bpf: a kernel stamp */
        run->lat_kernel[run->nk++] = now - r->ts_ns;
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static void
bench_print(const char *what, uint64_t *v, unsigned int n)
{
    if (n == 0) {
        printf("%-28s no samples\n", what);
        return;
    }
    qsort(v, n, sizeof(*v), cmp_u64);
    printf("%-28s n=%-5u p50 %8.1f  p99 %8.1f  p99.9 %8.1f  max %8.1f us\n", what, n,
           (double)v[n / 2] / 1e3, (double)v[(size_t)n * 99 / 100] / 1e3,
           (double)v[(size_t)n * 999 / 1000] / 1e3, (double)v[n - 1] / 1e3);
}

/* Drain in the mode's way until the target is done. */
static void
bench_consume(struct events *ev, struct bench_run *run, const struct bench_opts *o)
{
    int fd = events_fd(ev), ep = -1;

    if (fd >= 0) {
        struct epoll_event e = {.events = EPOLLIN};

        ep = epoll_create1(EPOLL_CLOEXEC);
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
    }
    if (o->busy_poll)
        events_set_wakeup(ev, false);
    while (!atomic_load(&run->tg->stop)) {
        if (o->busy_poll && ep >= 0) {
            /* the dedicated pattern: no sleep, no system call */
        } else if (ep >= 0) {
            struct epoll_event e;

            epoll_wait(ep, &e, 1, 100);
        } else {
            struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)o->poll_ns};

            nanosleep(&ts, NULL);
        }
        events_poll(ev, now_ns(), bench_on_rec, run);
    }
    if (ep >= 0)
        close(ep);
}

static int
bench_mode(enum events_mode mode, const struct bench_opts *o)
{
    struct bench_target tg = {.o = o};
    struct bench_run run = {.tg = &tg};
    struct events_stats st;
    struct events *ev;
    char err[256] = "", what[64];
    int r = events_open(&ev, mode, err, sizeof(err));

    if (r < 0) {
        fprintf(stderr, "wake_latency: %s\n", err);
        return r;
    }
    run.lat = calloc(o->wakes, sizeof(*run.lat));
    run.lat_kernel = calloc(o->wakes, sizeof(*run.lat_kernel));
    if (run.lat == NULL || run.lat_kernel == NULL || pin(o->consumer_cpu) != 0 ||
        pthread_create(&tg.th, NULL, bench_target_main, &tg) != 0) {
        fprintf(stderr, "wake_latency: setup failed\n");
        exit(1);
    }
    while (atomic_load(&tg.tid) == 0)
        usleep(1000);
    r = events_watch(ev, getpid(), atomic_load(&tg.tid), 1, err, sizeof(err));
    if (r < 0) {
        fprintf(stderr, "wake_latency: %s\n", err);
        exit(1);
    }
    atomic_store(&tg.go, true);
    bench_consume(ev, &run, o);
    pthread_join(tg.th, NULL);
    events_stats(ev, &st);
    snprintf(what, sizeof(what), "%s%s wake -> consumer", events_backend(ev),
             o->busy_poll && mode == EVENTS_BPF ? " busy-poll" : "");
    bench_print(what, run.lat, run.n);
    if (run.nk > 0)
        bench_print("bpf kernel stamp -> consumer", run.lat_kernel, run.nk);
    printf("  %u wakes, %u seen, %u stale; records %llu lost %llu inferred %llu\n", o->wakes, run.n,
           run.stale, (unsigned long long)st.records, (unsigned long long)st.lost,
           (unsigned long long)st.inferred);
    free(run.lat);
    free(run.lat_kernel);
    events_close(ev);
    return 0;
}

static void
bench_noop(void *ctx, const struct events_rec *r)
{
    (void)ctx, (void)r;
}

/* ns per events_poll with nothing to deliver (bpf: empty ring; proc: one
 * idle thread watched, i.e. two preads). */
static void
bench_poll_cost(enum events_mode mode, unsigned int calls)
{
    struct events *ev;
    char err[256];
    uint64_t t0;

    if (events_open(&ev, mode, err, sizeof(err)) < 0)
        return;
    if (mode == EVENTS_PROC)
        events_watch(ev, getpid(), getpid(), 1, err, sizeof(err));
    t0 = now_ns();
    for (unsigned int i = 0; i < calls; i++)
        events_poll(ev, t0, bench_noop, NULL);
    printf("%-5s events_poll, nothing to deliver: %.1f ns per call (%u calls)\n",
           events_backend(ev), (double)(now_ns() - t0) / calls, calls);
    events_close(ev);
}

/* Run time of the newest evb_* programs (ours) while stats were on. */
static void
bench_prog_cost(void)
{
    __u32 id = 0;

    while (bpf_prog_get_next_id(id, &id) == 0) {
        struct bpf_prog_info info;
        __u32 len = sizeof(info);
        int fd = bpf_prog_get_fd_by_id(id);

        if (fd < 0)
            continue;
        memset(&info, 0, sizeof(info));
        if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && strncmp(info.name, "evb_", 4) == 0 &&
            info.run_cnt > 0)
            printf("  prog %-16s id %-5u %10llu runs %8.1f ns per run\n", info.name, id,
                   (unsigned long long)info.run_cnt,
                   (double)info.run_time_ns / (double)info.run_cnt);
        close(fd);
    }
}

static int
bench_parse(int argc, char **argv, struct bench_opts *o)
{
    int c;

    *o = (struct bench_opts){.wakes = 2000,
                             .spin_ns = 2 * NSEC_PER_MSEC,
                             .poll_ns = NSEC_PER_MSEC,
                             .target_cpu = sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 1 : 0,
                             .consumer_cpu = 0,
                             .bpf = true,
                             .proc = true};
    while ((c = getopt(argc, argv, "bf:n:m:p:s:")) != -1) {
        if (c == 'b')
            o->busy_poll = true;
        else if (c == 'f')
            o->consumer_fifo = atoi(optarg);
        else if (c == 'n')
            o->wakes = (unsigned int)strtoul(optarg, NULL, 10);
        else if (c == 'p')
            o->poll_ns = strtoull(optarg, NULL, 10) * NSEC_PER_USEC;
        else if (c == 's')
            o->spin_ns = strtoull(optarg, NULL, 10) * NSEC_PER_USEC;
        else if (c == 'm' && strcmp(optarg, "both") != 0)
            o->bpf = strcmp(optarg, "bpf") == 0, o->proc = strcmp(optarg, "proc") == 0;
        else if (c != 'm')
            return -1;
    }
    return o->wakes > 0 && o->poll_ns > 0 ? 0 : -1;
}

int
main(int argc, char **argv)
{
    struct bench_opts o;
    int stats_fd;

    if (bench_parse(argc, argv, &o) < 0) {
        fprintf(stderr, "usage: wake_latency [-b] [-f fifo_prio] [-n wakes] [-m bpf|proc|both] "
                        "[-p poll_us] [-s spin_us]\n");
        return 2;
    }
    printf("wake_latency: %u wakes, gaps 0.5-1.5 ms, target spins %llu us on cpu %d, "
           "consumer on cpu %d, proc polls every %llu us\n",
           o.wakes, (unsigned long long)(o.spin_ns / 1000), o.target_cpu, o.consumer_cpu,
           (unsigned long long)(o.poll_ns / 1000));
    if (o.consumer_fifo > 0) {
        struct sched_param sp = {.sched_priority = o.consumer_fifo};

        if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
            perror("wake_latency: SCHED_FIFO");
    }
    printf("consumer: %s%s\n", o.consumer_fifo > 0 ? "SCHED_FIFO" : "SCHED_OTHER",
           o.busy_poll ? ", bpf busy-polls (events_set_wakeup off)" : "");
    stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
    if (o.bpf && bench_mode(EVENTS_BPF, &o) == 0 && stats_fd >= 0)
        bench_prog_cost();
    if (o.proc)
        bench_mode(EVENTS_PROC, &o);
    bench_poll_cost(EVENTS_BPF, 10000000);
    bench_poll_cost(EVENTS_PROC, 20000);
    if (stats_fd >= 0)
        close(stats_fd);
    return 0;
}
