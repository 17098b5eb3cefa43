/* SPDX-License-Identifier: ISC */
/*
 * events_impl.h - the two backends behind events.h, as events.c sees them.
 * events_bpf.c (or events_nobpf.c when the build has no BPF toolchain) and
 * events_proc.c; the /proc parsers are here for the unit tests.
 */
#ifndef VCPUSCHED_EVENTS_IMPL_H
#define VCPUSCHED_EVENTS_IMPL_H

#include "events.h"

/* bpf: ring buffer + BPF program. Thread-safe as events.h says. */
struct events_bpf;
int events_bpf_open(struct events_bpf **out, char *err, size_t errlen);
int events_bpf_watch(struct events_bpf *b, pid_t pid, pid_t tid, uint32_t cookie, char *err,
                     size_t errlen);
int events_bpf_unwatch(struct events_bpf *b, pid_t tid);
int events_bpf_fd(const struct events_bpf *b);
int events_bpf_poll(struct events_bpf *b, uint64_t now_ns,
                    void (*cb)(void *ctx, const struct events_rec *r), void *ctx);
void events_bpf_set_wakeup(struct events_bpf *b, bool on);
void events_bpf_stats(struct events_bpf *b, struct events_stats *st);
void events_bpf_close(struct events_bpf *b);

/* proc: /proc/<pid>/task/<tid>/{stat,schedstat} at each poll. */
struct events_proc;
int events_proc_open(struct events_proc **out, char *err, size_t errlen);
int events_proc_watch(struct events_proc *p, pid_t pid, pid_t tid, uint32_t cookie, char *err,
                      size_t errlen);
int events_proc_unwatch(struct events_proc *p, pid_t tid);
int events_proc_poll(struct events_proc *p, uint64_t now_ns,
                     void (*cb)(void *ctx, const struct events_rec *r), void *ctx);
void events_proc_stats(struct events_proc *p, struct events_stats *st);
void events_proc_close(struct events_proc *p);

/*
 * 0 if thread tid of process pid exists and is not exiting (PF_EXITING
 * clear, not a zombie), with its schedstat run time in *run_ns; -ESRCH
 * (with the reason in err) otherwise. The bpf backend calls it again after
 * inserting the thread into its map, which closes the race with an exit
 * that the program would not have seen.
 */
int events_proc_check(pid_t pid, pid_t tid, uint64_t *run_ns, char *err, size_t errlen);

/*
 * Parsers of one read of /proc/.../stat (state letter and flags, field 9;
 * the command name may hold spaces and parentheses) and of schedstat (run
 * time in ns, its first field). 0 or -EINVAL.
 */
int events_proc_parse_stat(const char *buf, size_t len, char *state, unsigned long *flags);
int events_proc_parse_schedstat(const char *buf, size_t len, uint64_t *run_ns);

/* The kernel's PF_EXITING task flag (include/linux/sched.h, stable ABI
 * in /proc/<pid>/stat since 2.6). */
#define EVENTS_PF_EXITING 0x4UL

#endif /* VCPUSCHED_EVENTS_IMPL_H */
