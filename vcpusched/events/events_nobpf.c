/* SPDX-License-Identifier: ISC */
/*
 * events_nobpf.c - stands in for events_bpf.c when the build found no BPF
 * toolchain (clang, bpftool, libbpf or the kernel's BTF; see
 * cmake/bpf.cmake): opening fails with the reason, so events_open(AUTO)
 * falls back to /proc. The other entry points are never reached.
 */
#include <errno.h>
#include <stdio.h>

#include "events_impl.h"

int
events_bpf_open(struct events_bpf **out, char *err, size_t errlen)
{
    (void)out;
    snprintf(err, errlen,
             "built without bpf support (clang, bpftool, libbpf or kernel BTF "
             "missing at build time)");
    return -ENOTSUP;
}

int
events_bpf_watch(struct events_bpf *b, pid_t pid, pid_t tid, uint32_t cookie, char *err,
                 size_t errlen)
{
    (void)b, (void)pid, (void)tid, (void)cookie;
    snprintf(err, errlen, "built without bpf support");
    return -ENOTSUP;
}

int
events_bpf_unwatch(struct events_bpf *b, pid_t tid)
{
    (void)b, (void)tid;
    return -ENOENT;
}

int
events_bpf_fd(const struct events_bpf *b)
{
    (void)b;
    return -1;
}

int
events_bpf_poll(struct events_bpf *b, uint64_t now_ns,
                void (*cb)(void *ctx, const struct events_rec *r), void *ctx)
{
    (void)b, (void)now_ns, (void)cb, (void)ctx;
    return -ENOTSUP;
}

void
events_bpf_set_wakeup(struct events_bpf *b, bool on)
{
    (void)b, (void)on;
}

void
events_bpf_stats(struct events_bpf *b, struct events_stats *st)
{
    (void)b, (void)st;
}

void
events_bpf_close(struct events_bpf *b)
{
    (void)b;
}
