/* SPDX-License-Identifier: ISC */
/*
 * actuator.h - the kernel side of a decision: SCHED_FIFO levels, affinity,
 * freezing (caps) and restoring a managed thread. actuator_linux.c is the
 * only file that touches scheduling attributes, affinity or cgroups.
 *
 * Every call returns 1 if it made a system call, 0 if it had nothing to do
 * (the state cache says the thread is already there), or -errno.
 */
#ifndef VCPUSCHED_ACTUATOR_H
#define VCPUSCHED_ACTUATOR_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup.h"
#include "common/cpuset.h"

#define ACT_CGROUP_PATH_MAX CGROUP_PATH_MAX

enum act_level {
    ACT_LEVEL_NONE, /* not yet changed: the thread's original policy */
    ACT_LEVEL_LOW,  /* managed, not elected */
    ACT_LEVEL_MID,  /* elected on its CPU */
};

/* SCHED_FIFO priorities of the three levels (HIGH is the dispatcher). */
struct act_prio {
    int low, mid, high;
};

/* What a thread looked like before we touched it; also in the state file. */
struct act_orig {
    int policy; /* without SCHED_RESET_ON_FORK */
    int prio;
    cpu_set_t affinity;
    char cpu_cgroup[ACT_CGROUP_PATH_MAX]; /* v1 cpu cgroup we moved it out of, or "" */
    /*
     * Parking, recorded before the first change to the thread's groups:
     * how (enum cgroup_park_mode, stored last), in the hierarchy mounted
     * at park_mount, from its group park_cgroup there.
     */
    unsigned int park_mode;
    char park_mount[CGROUP_MOUNT_MAX];
    char park_cgroup[ACT_CGROUP_PATH_MAX];
};

/* How the daemon parks threads: a backend and its hierarchy's mount point. */
struct act_park {
    enum cgroup_backend backend;
    char mount[CGROUP_MOUNT_MAX];
};

struct act_thread {
    pid_t pid;
    pid_t tid;
    uint64_t start_time; /* /proc stat field 22: tells a reused TID apart */
    struct act_orig orig;
    enum act_level level;
    int cpu; /* host CPU it is pinned to, -1 before the first pin */
    bool frozen;
    /*
     * Not scheduled, only kept off the managed CPUs (core/sched_place.c):
     * its affinity changed. In what was padding, so the state file's
     * layout is that of version 4 (an older file reads false).
     */
    bool placed;
};

/*
 * Record a thread's current policy, priority, affinity and start time.
 * Changes nothing. -ESRCH if the thread does not exist or is not a thread
 * of `pid`.
 */
int act_thread_open(struct act_thread *t, pid_t pid, pid_t tid, char *err, size_t errlen);

/*
 * Which of the host CPUs cpus[0..n) the thread's cgroup cpuset allows:
 * CPU i of *mask for cpus[i]. Probes with sched_setaffinity (the kernel
 * keeps what the cpuset allows), so it moves the thread; call it before
 * the first act_set_cpu.
 */
int act_probe_cpus(struct act_thread *t, const int *cpus, unsigned int n, struct cpuset *mask);

/* Pin to one host CPU. */
int act_set_cpu(struct act_thread *t, int cpu);

/*
 * Set the thread's SCHED_FIFO level (with SCHED_RESET_ON_FORK, so children
 * of a vCPU thread never inherit a real-time policy). With `move_rt_cgroup`
 * a thread refused for CONFIG_RT_GROUP_SCHED (EPERM in a v1 cpu cgroup
 * without rt runtime) is moved to the root cpu cgroup and retried; it goes
 * back on restore. Otherwise that EPERM is returned with the reason in err.
 */
int act_set_level(struct act_thread *t, const struct act_prio *prio, enum act_level level,
                  bool move_rt_cgroup, char *err, size_t errlen);

/* Where the cgroup hierarchies are mounted, from /proc/self/mounts. */
int act_cgroup_mounts(struct cgroup_mounts *m, char *err, size_t errlen);
/*
 * Choose how to park (`want`, on mounts m) and check that the hierarchy
 * can do it; -ENOENT or -EOPNOTSUPP with the reason otherwise. Changes
 * nothing.
 */
int act_park_init(struct act_park *p, const struct cgroup_mounts *m, enum cgroup_want want,
                  char *err, size_t errlen);
/*
 * v1 only: an empty frozen group of this daemon's, held while it runs
 * (cgroup_hold_dir), after removing those of daemons that died. Linux
 * 6.1+ turns a static key on when a first v1 group freezes and off when
 * the last one thaws, patching kernel text with IPIs to every CPU: every
 * park and unpark of a lone capped vCPU paid it (4x the cost of the write
 * on two CPUs). Held, they flip nothing. hold gets the group, or "" if
 * there is none to hold (not v1, or it failed: err says why).
 */
int act_park_hold(const struct act_park *p, char *hold, size_t len, char *err, size_t errlen);
/* Let the hold go (NULL or "": nothing), and our top group if now empty. */
void act_park_unhold(const char *hold);

/*
 * Stop all CPU use of the thread, or allow it again. The first freeze
 * records in t->orig where the thread is, then parks it as p says
 * (cgroup.h): in a v1 freezer group of its own, in its own threaded v2
 * group, or in a threaded v2 child group of its group; it stays there,
 * thawed between parks, until restored. -EOPNOTSUPP without a backend.
 */
int act_freeze(struct act_thread *t, const struct act_park *p, char *err, size_t errlen);
int act_thaw(struct act_thread *t);

/* Give the thread back its original policy, priority, affinity, cgroups. */
int act_restore(struct act_thread *t);
/*
 * The same from a saved record, for the guardian and for recovery at
 * start-up: thaws what the record says was parked, then does nothing else
 * (-ESRCH, after removing our empty park group) unless tid still has
 * start_time. A thread is moved back to its group only from ours.
 */
int act_restore_saved(pid_t pid, pid_t tid, uint64_t start_time, const struct act_orig *o);
/* Thaw what a saved record parked, whoever runs there now (restore's first pass). */
void act_thaw_saved(pid_t tid, const struct act_orig *o);

/* True if the thread still exists with the same start time. */
bool act_thread_alive(pid_t pid, pid_t tid, uint64_t start_time);
/*
 * True if the thread has SIGKILL pending: its process is being killed. A
 * thread frozen in the v1 freezer stays alive that way until thawed.
 */
bool act_thread_killed(pid_t pid, pid_t tid);

/*
 * Read /proc/<pid>/task/<tid>/schedstat: run time, time waiting on a
 * runqueue (run_delay: runnable and not running, added when the wait
 * ends) in ns, and times switched in. -ESRCH if it is gone.
 */
struct act_schedstat {
    uint64_t run_ns, delay_ns, pcount;
};
int act_read_schedstat(pid_t pid, pid_t tid, struct act_schedstat *st);

/*
 * Read /proc/<pid>/task/<tid>/stat: state letter and start time. -ESRCH if
 * it is gone.
 */
int act_read_stat(pid_t pid, pid_t tid, char *state, uint64_t *start_time);

/* Read /proc/<pid>/task/<tid>/comm (the thread's name). -ESRCH if it is gone. */
int act_read_comm(pid_t pid, pid_t tid, char *comm, size_t len);

/*
 * Keep a thread off the CPUs in `off` (core/sched_place.c): record it in
 * `t` as act_thread_open does, mark it placed, then set its affinity to
 * what it had less `off`. 1 if it changed, 0 if it had none of `off`
 * (nothing recorded as changed), -EINVAL if it may run only there (its
 * affinity or its cgroup cpuset), -ESRCH if it is gone. act_restore gives
 * the affinity back.
 */
int act_keep_off(struct act_thread *t, pid_t pid, pid_t tid, const cpu_set_t *off, char *err,
                 size_t errlen);
/* Whether the thread may run on a CPU of `off` now: 1, 0, or -errno. */
int act_affinity_meets(pid_t tid, const cpu_set_t *off);
/* The same for a thread already placed: its current affinity less `off` (1, 0, -errno). */
int act_keep_off_again(struct act_thread *t, const cpu_set_t *off);

#endif /* VCPUSCHED_ACTUATOR_H */
