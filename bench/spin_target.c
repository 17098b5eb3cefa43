/* SPDX-License-Identifier: ISC */
/*
 * spin_target.c - the scheduled programs of the engine benchmark
 * (bench/engine_bench.py): busy loops, a counting loop whose progress
 * another process reads from a shared file, and a periodic sleeper; the
 * daemon's tests use a busy loop that ends its thread when a file appears.
 *
 *     spin_target SPEC[*COUNT] [SPEC[*COUNT] ...]
 *     SPEC: busy | busy-until:FILE | count:FILE | sleep:PERIOD_US:RUN_US
 *           | wake:PERIOD_US:RUN_US:FILE
 *
 * One SPEC runs in the main thread (a single-threaded process); several
 * run as pthreads of one process (at most SPIN_MAX_THREADS; `busy*1000`
 * is a thousand busy threads, for the scale benchmark). Sleepers start
 * spread evenly over their period, so that many of them do not all wake
 * at once. `wake` is a sleeper that also writes how late each wake ran
 * (us after its absolute wake time, one line each) to FILE: the
 * wake-to-run latency of bench/xen's BOOST scenario, measured the same
 * way on a host thread and inside a Xen domU. The thread ids, in SPEC
 * order, go to stdout as one line once every thread runs. Runs until
 * killed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SPIN_MAX_THREADS 1024 /* as many as one attach takes (VS_THREADS_MAX) */
#define SPIN_STACK_BYTES (64 * 1024)
/* Work units between two publications of the count: ~1 us of work, so the
 * store is a small part of the loop and the reader's resolution is fine. */
#define SPIN_UNITS_PER_ITER 256
#define NSEC_PER_USEC       1000ull
#define NSEC_PER_SEC        1000000000ull

enum spin_kind {
    SPIN_BUSY,
    SPIN_UNTIL, /* busy until `path` exists, then the thread exits */
    SPIN_COUNT,
    SPIN_SLEEP,
    SPIN_WAKE, /* SPIN_SLEEP that logs each wake's lateness to `path` */
};

struct spin_thread {
    enum spin_kind kind;
    _Atomic uint64_t *count; /* SPIN_COUNT: iterations, in a shared page */
    const char *path;        /* SPIN_UNTIL, SPIN_WAKE */
    uint64_t period_ns, run_ns;
    uint64_t phase_ns; /* SPIN_SLEEP: first wake this long after a period */
    atomic_int tid;
    pthread_t th;
};

static uint64_t
now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* A dependent multiply-add chain: the same work per unit on every run. */
static uint64_t
spin_work(uint64_t x)
{
    for (unsigned int i = 0; i < SPIN_UNITS_PER_ITER; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

static void
spin_count(struct spin_thread *t)
{
    volatile uint64_t sink = 1; /* keeps the work from being optimised away */
    uint64_t n = 0;

    for (;;) {
        sink = spin_work(sink);
        atomic_store_explicit(t->count, ++n, memory_order_relaxed);
    }
}

/* Wake every period at an absolute time, then run run_ns (SPIN_WAKE: and
 * log how late the wake ran, in us, to t->path). */
static void
spin_sleep(struct spin_thread *t)
{
    uint64_t next = now_ns() + t->period_ns + t->phase_ns;
    FILE *log = NULL;

    if (t->kind == SPIN_WAKE && (log = fopen(t->path, "w")) == NULL) {
        fprintf(stderr, "spin_target: %s: %s\n", t->path, strerror(errno));
        exit(1);
    }
    prctl(PR_SET_TIMERSLACK, 1UL);
    for (;;) {
        struct timespec ts = {.tv_sec = (time_t)(next / NSEC_PER_SEC),
                              .tv_nsec = (long)(next % NSEC_PER_SEC)};
        uint64_t end;

        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        end = now_ns();
        if (log != NULL) {
            fprintf(log, "%llu\n", (unsigned long long)(end - next) / NSEC_PER_USEC);
            fflush(log);
        }
        end += t->run_ns;
        while (now_ns() < end)
            ;
        next += t->period_ns;
        if (next < now_ns())
            next = now_ns() + t->period_ns; /* overran: do not catch up in a burst */
    }
}

/* Busy until t->path exists (looked for every ~100 us of work). */
static void
spin_until(struct spin_thread *t)
{
    volatile uint64_t sink = 1;

    while (access(t->path, F_OK) != 0)
        for (unsigned int i = 0; i < 100; i++)
            sink = spin_work(sink);
}

static void *
spin_main(void *arg)
{
    struct spin_thread *t = arg;
    volatile uint64_t sink = 1;

    atomic_store(&t->tid, (int)syscall(SYS_gettid));
    if (t->kind == SPIN_UNTIL) {
        spin_until(t);
        return NULL;
    }
    if (t->kind == SPIN_COUNT)
        spin_count(t);
    else if (t->kind == SPIN_SLEEP || t->kind == SPIN_WAKE)
        spin_sleep(t);
    for (;;)
        sink = spin_work(sink);
    return NULL;
}

/* Map FILE (created, one page) for a counter. */
static _Atomic uint64_t *
spin_map_count(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    void *p;

    if (fd < 0 || ftruncate(fd, 4096) < 0) {
        fprintf(stderr, "spin_target: %s: %s\n", path, strerror(errno));
        exit(1);
    }
    p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        fprintf(stderr, "spin_target: mmap %s: %s\n", path, strerror(errno));
        exit(1);
    }
    return p;
}

static int
spin_parse(struct spin_thread *t, char *spec)
{
    unsigned long period_us, run_us;
    char extra;
    int at = 0;

    if (strcmp(spec, "busy") == 0) {
        t->kind = SPIN_BUSY;
    } else if (strncmp(spec, "busy-until:", 11) == 0 && spec[11] != '\0') {
        t->kind = SPIN_UNTIL;
        t->path = spec + 11;
    } else if (strncmp(spec, "count:", 6) == 0 && spec[6] != '\0') {
        t->kind = SPIN_COUNT;
        t->count = spin_map_count(spec + 6);
    } else if (sscanf(spec, "sleep:%lu:%lu%c", &period_us, &run_us, &extra) == 2 && period_us > 0 &&
               run_us < period_us) {
        t->kind = SPIN_SLEEP;
        t->period_ns = period_us * NSEC_PER_USEC;
        t->run_ns = run_us * NSEC_PER_USEC;
    } else if (sscanf(spec, "wake:%lu:%lu:%n", &period_us, &run_us, &at) == 2 && at > 0 &&
               spec[at] != '\0' && period_us > 0 && run_us < period_us) {
        t->kind = SPIN_WAKE;
        t->period_ns = period_us * NSEC_PER_USEC;
        t->run_ns = run_us * NSEC_PER_USEC;
        t->path = spec + at;
    } else {
        fprintf(stderr, "spin_target: bad spec '%s'\n", spec);
        return -EINVAL;
    }
    return 0;
}

/* "SPEC" or "SPEC*COUNT": the count, with the '*' cut off (0 if bad). */
static unsigned long
spin_count_of(char *spec)
{
    char *star = strrchr(spec, '*'), *end;
    unsigned long n;

    if (star == NULL)
        return 1;
    *star = '\0';
    n = strtoul(star + 1, &end, 10);
    return star[1] != '\0' && *end == '\0' ? n : 0;
}

int
main(int argc, char **argv)
{
    pthread_attr_t attr;
    struct spin_thread *th = calloc(SPIN_MAX_THREADS, sizeof(*th));
    int n = 0;

    for (int a = 1; a < argc && th != NULL; a++) {
        unsigned long count = spin_count_of(argv[a]);

        if (count == 0 || count > (unsigned long)(SPIN_MAX_THREADS - n)) {
            n = SPIN_MAX_THREADS + 1;
            break;
        }
        for (unsigned long k = 0; k < count; k++, n++)
            if (spin_parse(&th[n], argv[a]) < 0)
                return 2;
    }
    if (th == NULL || n < 1 || n > SPIN_MAX_THREADS) {
        fprintf(stderr,
                "usage: spin_target SPEC[*COUNT] [SPEC[*COUNT] ...] (at most %d threads)\n"
                "  SPEC: busy | busy-until:FILE | count:FILE | sleep:PERIOD_US:RUN_US\n"
                "        | wake:PERIOD_US:RUN_US:FILE\n",
                SPIN_MAX_THREADS);
        return 2;
    }
    for (int i = 0; i < n; i++)
        th[i].phase_ns = th[i].period_ns * (uint64_t)i / (uint64_t)n;
    if (n == 1) {
        printf("%d\n", (int)syscall(SYS_gettid));
        fflush(stdout);
        spin_main(&th[0]);
    }
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, SPIN_STACK_BYTES);
    for (int i = 0; i < n; i++)
        if (pthread_create(&th[i].th, &attr, spin_main, &th[i]) != 0)
            return 1;
    for (int i = 0; i < n; i++) {
        while (atomic_load(&th[i].tid) == 0)
            usleep(1000);
        printf("%s%d", i ? " " : "", atomic_load(&th[i].tid));
    }
    printf("\n");
    fflush(stdout);
    for (;;)
        pause();
}
