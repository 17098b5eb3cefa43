/* SPDX-License-Identifier: ISC */
/*
 * events_bpf.c - the BPF backend of the event source: loads and attaches
 * bpf/vcpusched.bpf.c (embedded as a bpftool skeleton), keeps its map of
 * watched threads, and drains its ring buffer. Records are handed to the
 * callback in place (the ring's layout is struct events_rec); an empty
 * ring costs two loads of shared memory and no system call.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "events_impl.h"
#include "bpf/events_shared.h"
#include "vcpusched.skel.h"

/*
 * Ring size: ~200k switches/s of 5 us slices make up to ~600k records/s
 * (a STOP and a RUN per switch, plus wakes) of 40 bytes with the ring's
 * header, ~24 MB/s; 4 MiB holds ~170 ms of that, well beyond any pause
 * of a running consumer (measured: two threads yielding to each other on
 * one CPU make ~850k records/s and lose none with a poll every 200 ms).
 * A power of two pages, as the kernel requires.
 */
#define EVB_RING_BYTES (4u << 20)

_Static_assert(sizeof(struct evb_rec) == sizeof(struct events_rec), "record size");
_Static_assert(offsetof(struct evb_rec, ts_ns) == offsetof(struct events_rec, ts_ns), "ts_ns");
_Static_assert(offsetof(struct evb_rec, ran_ns) == offsetof(struct events_rec, ran_ns), "ran_ns");
_Static_assert(offsetof(struct evb_rec, cookie) == offsetof(struct events_rec, cookie), "cookie");
_Static_assert(offsetof(struct evb_rec, tid) == offsetof(struct events_rec, tid), "tid");
_Static_assert(offsetof(struct evb_rec, cpu) == offsetof(struct events_rec, cpu), "cpu");
_Static_assert(offsetof(struct evb_rec, type) == offsetof(struct events_rec, type), "type");
_Static_assert(offsetof(struct evb_rec, blocked) == offsetof(struct events_rec, blocked),
               "blocked");
_Static_assert(offsetof(struct evb_rec, inferred) == offsetof(struct events_rec, inferred),
               "inferred");
_Static_assert(EVB_WAKE == EVENTS_WAKE && EVB_RUN == EVENTS_RUN && EVB_STOP == EVENTS_STOP &&
                   EVB_EXIT == EVENTS_EXIT,
               "record types");

struct events_bpf {
    struct vcpusched_bpf *skel;
    struct ring_buffer *rb;
    int watched_fd;
    unsigned int lost_slots; /* slots of evb_lost in use: possible CPUs */
    atomic_uint watches;     /* successful watches minus unwatches */
    /* The poller's own (one poller at a time). */
    uint64_t lost_seen; /* losses reported as LOST records */
    void (*cb)(void *ctx, const struct events_rec *r);
    void *ctx;
};

/* The first warning libbpf printed while we opened (it never logs itself
 * into our errbuf otherwise); thread-local, set only inside events_bpf_open. */
static _Thread_local char evb_libbpf_msg[160];

__attribute__((format(printf, 2, 0))) static int
evb_capture_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    size_t n;

    if (level != LIBBPF_WARN || evb_libbpf_msg[0] != '\0')
        return 0;
    vsnprintf(evb_libbpf_msg, sizeof(evb_libbpf_msg), fmt, ap);
    n = strlen(evb_libbpf_msg);
    while (n > 0 && (evb_libbpf_msg[n - 1] == '\n' || evb_libbpf_msg[n - 1] == ' '))
        evb_libbpf_msg[--n] = '\0';
    return 0;
}

/*
 * Does this kernel's sched_switch pass prev_state (5.18+)? Its raw
 * tracepoint type in the kernel's BTF is a pointer to a function whose
 * first parameter is the context: five parameters then, four before.
 */
static bool
evb_switch_has_state_arg(void)
{
    struct btf *btf = btf__load_vmlinux_btf();
    const struct btf_type *t;
    bool yes = false;
    int id;

    if (btf == NULL)
        return false;
    id = btf__find_by_name_kind(btf, "btf_trace_sched_switch", BTF_KIND_TYPEDEF);
    t = id > 0 ? btf__type_by_id(btf, (__u32)id) : NULL;
    if (t != NULL)
        t = btf__type_by_id(btf, t->type); /* the pointer */
    if (t != NULL && btf_is_ptr(t))
        t = btf__type_by_id(btf, t->type);
    if (t != NULL && btf_is_func_proto(t))
        yes = btf_vlen(t) >= 5;
    btf__free(btf);
    return yes;
}

static int
evb_sample(void *ctx, void *data, size_t size)
{
    struct events_bpf *b = ctx;

    if (size >= sizeof(struct events_rec))
        b->cb(b->ctx, data);
    return 0;
}

/* Open, size, load and attach the program, and map its ring: 0 or -errno,
 * with the failed step in *what. */
static int
evb_load(struct events_bpf *b, const char **what)
{
    int r;

    *what = "open bpf object";
    b->skel = vcpusched_bpf__open();
    if (b->skel == NULL || b->skel->rodata == NULL)
        return b->skel == NULL ? -errno : -EINVAL;
    b->skel->rodata->evb_state_arg = evb_switch_has_state_arg();
    bpf_map__set_max_entries(b->skel->maps.evb_ring, EVB_RING_BYTES);
    bpf_map__set_max_entries(b->skel->maps.evb_watched, EVENTS_MAX_THREADS);
    *what = "load bpf program";
    r = vcpusched_bpf__load(b->skel);
    if (r < 0)
        return r;
    *what = "attach bpf program";
    r = vcpusched_bpf__attach(b->skel);
    if (r < 0)
        return r;
    *what = "map ring buffer";
    b->rb = ring_buffer__new(bpf_map__fd(b->skel->maps.evb_ring), evb_sample, b, NULL);
    if (b->rb == NULL)
        return -errno;
    b->watched_fd = bpf_map__fd(b->skel->maps.evb_watched);
    return 0;
}

int
events_bpf_open(struct events_bpf **out, char *err, size_t errlen)
{
    struct events_bpf *b = calloc(1, sizeof(*b));
    libbpf_print_fn_t old;
    const char *what;
    int r, ncpu;

    if (b == NULL) {
        snprintf(err, errlen, "events: out of memory");
        return -ENOMEM;
    }
    evb_libbpf_msg[0] = '\0';
    old = libbpf_set_print(evb_capture_print);
    r = evb_load(b, &what);
    libbpf_set_print(old);
    if (r < 0) {
        snprintf(err, errlen, "%s: %s%s%s%s", what, strerror(-r),
                 r == -EPERM ? " (needs root, or CAP_BPF and CAP_PERFMON)" : "",
                 evb_libbpf_msg[0] ? "; " : "", evb_libbpf_msg);
        events_bpf_close(b);
        return r;
    }
    ncpu = libbpf_num_possible_cpus();
    b->lost_slots = ncpu > 0 && ncpu < EVB_LOST_SLOTS ? (unsigned int)ncpu : EVB_LOST_SLOTS;
    *out = b;
    return 0;
}

/*
 * Check and take the run-time baseline in /proc, insert into the map, then
 * check again that the thread is alive and not exiting: an exit after that
 * finds it in the map and gives EXIT. If the second check fails but the
 * program has already removed the thread (it exited in between), the
 * watch stands and EXIT follows.
 */
int
events_bpf_watch(struct events_bpf *b, pid_t pid, pid_t tid, uint32_t cookie, char *err,
                 size_t errlen)
{
    struct evb_watch w = {.cookie = cookie, .state = EVB_UNKNOWN};
    uint64_t run_ns = 0;
    __s32 key = tid;
    int r = events_proc_check(pid, tid, &run_ns, err, errlen);

    if (r < 0)
        return r;
    w.sum_ns = run_ns;
    r = bpf_map_update_elem(b->watched_fd, &key, &w, BPF_NOEXIST);
    if (r < 0) {
        if (r == -E2BIG || r == -ENOMEM)
            r = -ENOSPC;
        snprintf(err, errlen, "thread %d: %s", (int)tid,
                 r == -EEXIST   ? "already watched"
                 : r == -ENOSPC ? "too many watched threads"
                                : strerror(-r));
        return r;
    }
    r = events_proc_check(pid, tid, &run_ns, err, errlen);
    if (r < 0 && bpf_map_delete_elem(b->watched_fd, &key) == 0)
        return r;
    if (r < 0)
        err[0] = '\0'; /* the program saw it exit: EXIT follows */
    atomic_fetch_add(&b->watches, 1);
    return 0;
}

int
events_bpf_unwatch(struct events_bpf *b, pid_t tid)
{
    __s32 key = tid;
    int r = bpf_map_delete_elem(b->watched_fd, &key);

    if (r == 0)
        atomic_fetch_sub(&b->watches, 1);
    return r < 0 ? -ENOENT : 0;
}

int
events_bpf_fd(const struct events_bpf *b)
{
    return ring_buffer__epoll_fd(b->rb);
}

static uint64_t
evb_lost(const struct events_bpf *b)
{
    uint64_t n = 0;

    for (unsigned int i = 0; i < b->lost_slots; i++)
        n += __atomic_load_n(&b->skel->bss->evb_lost[i].n, __ATOMIC_RELAXED);
    return n;
}

/*
 * Records are lost only while the ring is full, so a loss shows up at
 * the latest in the next poll that returns records: look only then.
 */
int
events_bpf_poll(struct events_bpf *b, uint64_t now_ns,
                void (*cb)(void *ctx, const struct events_rec *r), void *ctx)
{
    uint64_t lost;
    int n;

    b->cb = cb;
    b->ctx = ctx;
    n = ring_buffer__consume(b->rb);
    if (n <= 0)
        return n;
    lost = evb_lost(b);
    if (lost > b->lost_seen) {
        struct events_rec r = {.ts_ns = now_ns,
                               .ran_ns = lost - b->lost_seen,
                               .cookie = UINT32_MAX,
                               .tid = -1,
                               .cpu = -1,
                               .type = EVENTS_LOST};

        b->lost_seen = lost;
        cb(ctx, &r);
        n++;
    }
    return n;
}

void
events_bpf_set_wakeup(struct events_bpf *b, bool on)
{
    __atomic_store_n(&b->skel->bss->evb_quiet, on ? 0u : 1u, __ATOMIC_RELAXED);
}

void
events_bpf_stats(struct events_bpf *b, struct events_stats *st)
{
    uint64_t exits = __atomic_load_n(&b->skel->bss->evb_exits, __ATOMIC_RELAXED);

    st->lost = evb_lost(b);
    st->inferred = __atomic_load_n(&b->skel->bss->evb_inferred, __ATOMIC_RELAXED);
    st->ring_bytes = EVB_RING_BYTES;
    st->watched = atomic_load(&b->watches) - (unsigned int)exits;
}

void
events_bpf_close(struct events_bpf *b)
{
    if (b == NULL)
        return;
    ring_buffer__free(b->rb);
    vcpusched_bpf__destroy(b->skel);
    free(b);
}
