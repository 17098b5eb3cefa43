/* SPDX-License-Identifier: ISC */
/*
 * events.c - the event source's front: picks the backend (bpf, else
 * /proc), checks arguments, and counts what it delivers. The backends are
 * events_bpf.c (or events_nobpf.c) and events_proc.c.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events_impl.h"

/* Room for a backend's reason before it is copied to the caller's err. */
#define EVENTS_WHYLEN 256

struct events {
    struct events_bpf *bpf; /* exactly one of bpf and proc */
    struct events_proc *proc;
    /* Written by the poller only, read by events_stats from any thread. */
    _Atomic uint64_t polls;
    _Atomic uint64_t by_type[EVENTS_NTYPES];
};

/* What one poll passes through: the caller's callback and its counts. */
struct events_deliver {
    void (*cb)(void *ctx, const struct events_rec *r);
    void *ctx;
    uint64_t n[EVENTS_NTYPES];
};

/* The operator's (and the tests') way to keep BPF out: VCPUSCHED_NO_BPF=1. */
static bool
events_bpf_disabled(void)
{
    const char *v = getenv("VCPUSCHED_NO_BPF");

    return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

static int
events_try_bpf(struct events *ev, char *why, size_t whylen)
{
    if (events_bpf_disabled()) {
        snprintf(why, whylen, "bpf disabled by VCPUSCHED_NO_BPF");
        return -ENOTSUP;
    }
    return events_bpf_open(&ev->bpf, why, whylen);
}

int
events_open(struct events **out, enum events_mode mode, char *err, size_t errlen)
{
    char why[EVENTS_WHYLEN] = "";
    struct events *ev;
    int r;

    if (mode != EVENTS_AUTO && mode != EVENTS_BPF && mode != EVENTS_PROC) {
        snprintf(err, errlen, "events: unknown mode %d", (int)mode);
        return -EINVAL;
    }
    ev = calloc(1, sizeof(*ev));
    if (ev == NULL) {
        snprintf(err, errlen, "events: out of memory");
        return -ENOMEM;
    }
    err[0] = '\0';
    r = mode == EVENTS_PROC ? -ENOTSUP : events_try_bpf(ev, why, sizeof(why));
    if (r < 0 && mode == EVENTS_BPF) {
        snprintf(err, errlen, "%s", why);
        free(ev);
        return r;
    }
    if (r < 0) {
        r = events_proc_open(&ev->proc, err, errlen);
        if (r < 0) {
            free(ev);
            return r;
        }
        if (mode == EVENTS_AUTO)
            snprintf(err, errlen, "no bpf: %s", why);
    }
    *out = ev;
    return 0;
}

const char *
events_backend(const struct events *ev)
{
    return ev->bpf != NULL ? "bpf" : "proc";
}

int
events_watch(struct events *ev, pid_t pid, pid_t tid, uint32_t cookie, char *err, size_t errlen)
{
    if (pid <= 0 || tid <= 0) {
        snprintf(err, errlen, "thread %d of process %d: bad id", (int)tid, (int)pid);
        return -EINVAL;
    }
    if (ev->bpf != NULL)
        return events_bpf_watch(ev->bpf, pid, tid, cookie, err, errlen);
    return events_proc_watch(ev->proc, pid, tid, cookie, err, errlen);
}

int
events_unwatch(struct events *ev, pid_t tid)
{
    if (tid <= 0)
        return -ENOENT;
    if (ev->bpf != NULL)
        return events_bpf_unwatch(ev->bpf, tid);
    return events_proc_unwatch(ev->proc, tid);
}

int
events_fd(const struct events *ev)
{
    return ev->bpf != NULL ? events_bpf_fd(ev->bpf) : -1;
}

static void
events_count(_Atomic uint64_t *c, uint64_t n)
{
    /* One writer: a relaxed load and store, no locked instruction. */
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

static void
events_deliver_one(void *arg, const struct events_rec *r)
{
    struct events_deliver *d = arg;

    if (r->type < EVENTS_NTYPES)
        d->n[r->type]++;
    d->cb(d->ctx, r);
}

int
events_poll(struct events *ev, uint64_t now_ns, void (*cb)(void *ctx, const struct events_rec *r),
            void *ctx)
{
    struct events_deliver d = {.cb = cb, .ctx = ctx};
    int n;

    if (ev->bpf != NULL)
        n = events_bpf_poll(ev->bpf, now_ns, events_deliver_one, &d);
    else
        n = events_proc_poll(ev->proc, now_ns, events_deliver_one, &d);
    events_count(&ev->polls, 1);
    if (n > 0)
        for (unsigned int t = 0; t < EVENTS_NTYPES; t++)
            if (d.n[t] != 0)
                events_count(&ev->by_type[t], d.n[t]);
    return n;
}

void
events_set_wakeup(struct events *ev, bool on)
{
    if (ev->bpf != NULL)
        events_bpf_set_wakeup(ev->bpf, on);
}

void
events_stats(const struct events *ev, struct events_stats *st)
{
    memset(st, 0, sizeof(*st));
    st->polls = atomic_load_explicit(&ev->polls, memory_order_relaxed);
    for (unsigned int t = 0; t < EVENTS_NTYPES; t++) {
        st->by_type[t] = atomic_load_explicit(&ev->by_type[t], memory_order_relaxed);
        st->records += st->by_type[t];
    }
    if (ev->bpf != NULL)
        events_bpf_stats(ev->bpf, st);
    else
        events_proc_stats(ev->proc, st);
}

void
events_close(struct events *ev)
{
    if (ev == NULL)
        return;
    events_bpf_close(ev->bpf);
    events_proc_close(ev->proc);
    free(ev);
}
