/* SPDX-License-Identifier: ISC */
/*
 * statefile.h - the record of every thread the daemon has touched, kept in
 * a file mapped MAP_SHARED (on /run, a tmpfs) so that it survives the
 * daemon: the guardian process and a restarted daemon read it to give each
 * thread back its original policy, affinity and cgroups.
 *
 * A slot is marked used before the first change to its thread and freed
 * only after the thread is restored, so a death at any instant leaves a
 * complete list. The live `struct act_thread` of a managed thread is the
 * slot itself: every change the actuator records is already on file.
 *
 * Ownership. A daemon holds an exclusive flock on the file (its own open
 * file description, which its guardian does not share) for as long as it
 * lives, and bumps the header's generation when it takes the file over;
 * every slot records the generation that wrote it. A guardian restores
 * only under the same lock, taken without waiting once its daemon is gone,
 * and only its own generation's slots: a guardian that wakes up late
 * (stopped, starved) while a newer daemon owns the file finds the lock
 * taken and leaves everything alone. A daemon starting while a
 * predecessor's guardian still restores waits for that lock (bounded).
 *
 * The file is opened without following symlinks and must be a regular
 * file of ours (uid, mode 0600, its size) in a directory nobody else may
 * write to; a missing file is created exclusively, a missing directory
 * with mode 0700.
 *
 * The watchdog (struct statefile_watch, after the slots). Each dispatcher
 * publishes its progress there, one heartbeat per managed CPU written with
 * a relaxed atomic store (no system call); the guardian reads them and,
 * when a CPU's dispatcher stops passing while a thread there waits to run,
 * restores its daemon's threads while the daemon still lives (watchdog.h,
 * guardian.h). The daemon holds the owner lock then, so the guardian
 * restores under a second lock instead, the restore lock (an OFD lock on
 * the whole file, independent of the owner flock), taken only while the
 * generation is its own; a daemon taking the file over takes the restore
 * lock for a moment before it bumps the generation, so it waits for such a
 * restore to end and no restore of an older generation can start after.
 */
#ifndef VCPUSCHED_STATEFILE_H
#define VCPUSCHED_STATEFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "actuator.h"
#include "common/cpuset.h"

#define STATEFILE_MAGIC 0x76637331u /* "vcs1" */
/*
 * 2: generations, owner lock; 3: v2 parking records; 4: the watchdog's
 * region after the slots (a version 3 file is extended in place).
 */
#define STATEFILE_VERSION 4
#define STATEFILE_SLOTS   4096       /* managed threads per daemon */
#define STATEFILE_CPUS    CPUSET_MAX /* heartbeats: one per host CPU number */
#define STATEFILE_DEFAULT "/run/vcpusched/state"
/* How long a new daemon waits for a predecessor's guardian to finish. */
#define STATEFILE_OWN_WAIT_MS 5000
/* How long a guardian waits for its dying daemon to let go of the lock. */
#define STATEFILE_GUARDIAN_WAIT_MS 200

struct statefile_slot {
    uint32_t used;
    uint32_t gen; /* the generation of the daemon that took the slot */
    struct act_thread act;
};

struct statefile_hdr {
    uint32_t magic;
    uint32_t version;
    int32_t owner_pid; /* the daemon that writes it */
    uint32_t rt_saved; /* 1: rt_runtime_orig holds the value to restore */
    int64_t rt_runtime_orig;
    uint32_t nr_slots;
    uint32_t generation;  /* bumped by each daemon that takes the file over */
    int32_t guardian_pid; /* the owner's guardian, for messages */
    uint32_t pad;
};

/* A managed CPU's dispatcher heartbeat. */
struct statefile_beat {
    uint64_t pass_ns; /* CLOCK_MONOTONIC of its dispatcher's last pass (or idle wake-up) */
    int32_t tid;      /* that dispatcher; 0: no pool has the CPU */
    uint32_t pad;
};

/* The last time a guardian's watchdog tripped: what it saw. */
struct statefile_trip {
    int64_t realtime_s; /* when (CLOCK_REALTIME) */
    uint32_t gen;       /* the generation of the daemon it ended */
    int32_t cpu;        /* the CPU whose dispatcher made no progress */
    int32_t tid;        /* the thread that waited longest there */
    int32_t dispatcher; /* the CPU's dispatcher thread */
    uint32_t waited_ms; /* how long that thread had been runnable without running */
    uint32_t beat_ms;   /* the age of the CPU's heartbeat */
    uint32_t restored;  /* threads given back */
    uint32_t pad;
};

struct statefile_watch {
    uint32_t bound_ms; /* the owner's watchdog-ms: 0 = no watchdog */
    uint32_t pad;
    uint64_t trips; /* watchdog trips over the file's life (since boot: /run) */
    struct statefile_trip last;
    struct statefile_beat cpu[STATEFILE_CPUS];
};

struct statefile {
    int fd;      /* mapped; shared with the guardian */
    int lock_fd; /* the daemon's own description of the file: holds the owner lock */
    uint32_t gen;
    size_t map_len;
    struct statefile_hdr *hdr;
    struct statefile_slot *slots;
    struct statefile_watch *watch; /* after the slots */
};

/*
 * Why the file `st` describes is not safe to trust: not a regular file, not
 * the caller's (the effective user's), or not mode 0600; NULL if it is.
 * The state file and the daemon's live record.
 */
const char *statefile_unsafe(const struct stat *st);
/*
 * Map the file at `path` (see the header comment for the checks). An
 * existing file of another layout or owner is refused. Restores nothing.
 */
int statefile_open(struct statefile *sf, const char *path, char *err, size_t errlen);
/*
 * Become the file's owner: take the owner lock, waiting up to wait_ms for
 * a predecessor's guardian that is still restoring (-EBUSY after that,
 * naming who holds it), then start a new generation, with no heartbeat.
 */
int statefile_own(struct statefile *sf, const char *path, unsigned int wait_ms, char *err,
                  size_t errlen);
/* Let go of the owner lock (at a clean exit, once everything is restored). */
void statefile_disown(struct statefile *sf);
void statefile_close(struct statefile *sf);

/* Take a free slot (marked used, zeroed); -ENOSPC when all are taken. */
int statefile_alloc(struct statefile *sf);
void statefile_release(struct statefile *sf, int slot);
struct act_thread *statefile_act(struct statefile *sf, int slot);

/*
 * Restore every used slot (threads whose start time no longer matches are
 * skipped), free them, and restore sched_rt_runtime_us if it was saved.
 * Returns the number of threads restored. The owner only.
 */
int statefile_restore_all(struct statefile *sf);
/*
 * The guardian of generation `gen`, its daemon gone: take the lock (waiting
 * at most STATEFILE_GUARDIAN_WAIT_MS for the dying daemon to release it)
 * and restore that generation's slots (and sched_rt_runtime_us if the
 * generation is still the file's). -EBUSY if a newer daemon owns the file:
 * then nothing is touched. Else the number of threads restored.
 */
int statefile_guardian_restore(struct statefile *sf, uint32_t gen);
/* Number of used slots. */
int statefile_count(const struct statefile *sf);

/*
 * A guardian's restore while its daemon lives but is stuck (a watchdog
 * trip): take the restore lock without waiting (-EBUSY if a newer daemon
 * is taking the file over, or the generation is no longer `gen`), restore
 * generation gen's slots and sched_rt_runtime_us as on the daemon's death
 * but keep the slots (what a daemon thread blocked in the kernel may still
 * change is restored again at its death), and count the trip with what it
 * saw. The lock stays held: statefile_restore_unlock once the daemon is
 * ended. Returns the number of threads restored.
 */
int statefile_trip_restore(struct statefile *sf, uint32_t gen, struct statefile_trip *trip);
void statefile_restore_unlock(struct statefile *sf);

/* Heartbeats (see the header comment): relaxed stores, no system call. */
static inline void
statefile_beat(struct statefile *sf, int cpu, pid_t tid, uint64_t now_ns)
{
    struct statefile_beat *b = &sf->watch->cpu[cpu];

    __atomic_store_n(&b->pass_ns, now_ns, __ATOMIC_RELAXED);
    __atomic_store_n(&b->tid, (int32_t)tid, __ATOMIC_RELAXED);
}

/* The CPU has no dispatcher any more. */
static inline void
statefile_beat_stop(struct statefile *sf, int cpu)
{
    __atomic_store_n(&sf->watch->cpu[cpu].tid, 0, __ATOMIC_RELAXED);
}

/* A CPU's heartbeat: its dispatcher's tid (0: none) and last pass. */
static inline pid_t
statefile_beat_read(const struct statefile *sf, int cpu, uint64_t *pass_ns)
{
    const struct statefile_beat *b = &sf->watch->cpu[cpu];

    *pass_ns = __atomic_load_n(&b->pass_ns, __ATOMIC_RELAXED);
    return __atomic_load_n(&b->tid, __ATOMIC_RELAXED);
}

/*
 * The oldest heartbeat of a CPU with a dispatcher at `now`: its age, and
 * the CPU in *cpu (-1 and 0 when no CPU has a dispatcher).
 */
uint64_t statefile_oldest_beat(const struct statefile *sf, uint64_t now, int *cpu);

/*
 * sched_rt_runtime_us: read it, and set it after saving the original in
 * the header (once), so that whoever restores later puts it back.
 */
int rt_runtime_read(int64_t *us);
int statefile_set_rt_runtime(struct statefile *sf, int64_t us);

#endif /* VCPUSCHED_STATEFILE_H */
