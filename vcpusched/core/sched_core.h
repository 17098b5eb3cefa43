/* SPDX-License-Identifier: ISC */
/*
 * sched_core.h - the daemon's scheduler core: pools of managed CPUs, each with
 * a policy (pool.c) and dispatcher threads that turn its decisions into
 * the priority elevation trick (actuator_linux.c), driven by kernel
 * events (events.h) and timers.
 *
 * Threads: the daemon's control thread, its libvirt watcher and its vCPU
 * resync thread call this header; s->lock makes each call whole with respect to the others, and
 * no call waits on anything outside the host (never on libvirt or QEMU).
 * Dispatchers are internal. Any function may be called while dispatchers
 * run; a failed call changes nothing.
 */
#ifndef VCPUSCHED_SCHED_CORE_H
#define VCPUSCHED_SCHED_CORE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "host/actuator.h"
#include "events/events.h"
#include "policy/policy.h"
#include "host/statefile.h"

struct json_object;
struct sched;

#define SCHED_MAX_POOLS   16
#define SCHED_ORIGIN_SIZE 108 /* a QMP socket path (sun_path) or a libvirt domain name */

enum sched_pattern {
    SCHED_SHARED,    /* a dispatcher per managed CPU, on it, sleeping between decisions */
    SCHED_DEDICATED, /* one busy-polling dispatcher for every pool, on a CPU of its own */
};

struct sched_config {
    enum sched_pattern pattern;
    int dedicated_cpu;     /* SCHED_DEDICATED: the dispatcher's CPU (not managed) */
    struct act_prio prio;  /* SCHED_FIFO priorities: LOW, MID, HIGH (dispatcher) */
    bool move_rt_cgroup;   /* see act_set_level */
    struct act_park park;  /* how caps park threads (act_park_init) */
    uint64_t proc_poll_ns; /* proc fallback: poll period while a CPU is busy */
    /* Where the core says what an operator must hear (the daemon's log), or NULL. */
    void (*warn)(const char *msg);
};

int sched_create(struct sched **out, const struct sched_config *cfg, struct statefile *sf,
                 struct events *ev, char *err, size_t errlen);
/* Stop every dispatcher and give every managed thread back. */
void sched_destroy(struct sched *s);

/*
 * Pools. `cpus` are host CPUs described with their topology. A pool's
 * dispatchers start with the pool.
 */
int sched_pool_create(struct sched *s, const char *name, const struct policy_cpu *cpus,
                      unsigned int nr_cpus, const char *policy, const struct kv *kv, size_t n,
                      char *err, size_t errlen);
/* policy != NULL: switch policy (kv are its pool parameters); else set kv. */
int sched_pool_set(struct sched *s, const char *name, const char *policy, const struct kv *kv,
                   size_t n, char *err, size_t errlen);
int sched_pool_destroy(struct sched *s, const char *name, char *err, size_t errlen);
/*
 * Change a running pool's CPUs to cpus[0..n) (sched_resize.c), its domains
 * staying attached and scheduled. Refused, with nothing changed, where a
 * CPU belongs to another pool or a vCPU thread's cgroup cpuset allows none
 * of the new CPUs. The same CPUs: nothing to do.
 */
int sched_pool_resize(struct sched *s, const char *name, const struct policy_cpu *cpus,
                      unsigned int n, char *err, size_t errlen);
/* True if the host CPU belongs to a pool. */
bool sched_cpu_is_managed(const struct sched *s, int cpu);

/*
 * Attach threads tids[0..n) of process `pid` as domain `name` in `pool`
 * (NULL: the first pool). `source` says how they were found ("pid",
 * "tids", "qmp", "libvirt"), for `list`; `origin` (NULL: none) where to
 * find them again (the QMP socket, the libvirt domain), for vCPU hot-plug.
 */
int sched_attach(struct sched *s, const char *name, const char *pool, pid_t pid, const pid_t *tids,
                 unsigned int n, const struct kv *kv, size_t nkv, const char *source,
                 const char *origin, char *err, size_t errlen);
int sched_detach(struct sched *s, const char *name, char *err, size_t errlen);
int sched_set(struct sched *s, const char *name, const struct kv *kv, size_t n, char *err,
              size_t errlen);
/*
 * Move attached domain `name` to `pool`, all or nothing. Its parameters
 * that the new pool's policy knows go along, each replaced by the same key
 * of kv[0..nkv) (checked strictly); the others are dropped. Refused, with
 * the domain exactly where and as it was: -ENOENT (no such domain or
 * pool), -EEXIST (already there), -EINVAL (a parameter the new policy
 * refuses, or a thread whose cgroup cpuset allows no CPU of the pool).
 */
int sched_move(struct sched *s, const char *name, const char *pool, const struct kv *kv, size_t nkv,
               char *err, size_t errlen);
/* The pool domain `name` is in, into pool[len]; -ENOENT if not attached. */
int sched_dom_pool(struct sched *s, const char *name, char *pool, size_t len);

/*
 * vCPU hot-plug and unplug: the vCPU threads of domain `name` are now
 * tids[0..n) of process `pid`, in vCPU order. Threads not managed yet are
 * attached to the domain with its parameters (a vCPU each, numbered after
 * the highest); managed ones not listed, or gone, are dropped and given
 * back (a vCPU thread that exited is gone, listed or not). The domain's
 * other vCPUs are not disturbed. Returns how many
 * vCPUs were added and removed (0: nothing to do), or -errno: -ENOENT (no
 * such domain), -ESRCH (another process: left to the reaper), or the
 * first thread that could not be added (the others are still done).
 * n == 0 changes nothing (a domain keeps at least one vCPU).
 */
int sched_dom_update(struct sched *s, const char *name, pid_t pid, const pid_t *tids,
                     unsigned int n, char *err, size_t errlen);

/* An attached domain whose vCPUs can be found again (origin not ""). */
struct sched_target {
    char name[VS_NAME_SIZE];
    char source[16];
    char origin[SCHED_ORIGIN_SIZE];
    pid_t pid;
    unsigned int nr_gone; /* vCPU threads that exited (an unplug, maybe) */
};
/* Those domains into out[0..max): how many there are (may be more than max). */
unsigned int sched_dom_targets(struct sched *s, struct sched_target *out, unsigned int max);

struct sched_pool_info {
    char name[VS_NAME_SIZE];
    char policy[VS_KEY_SIZE];
};
/* The pools in creation order (the first is the default): how many, at most max. */
unsigned int sched_pool_list(struct sched *s, struct sched_pool_info *out, unsigned int max);
/*
 * Detach domains whose threads have all exited. A domain whose process has
 * exited has its vanished threads marked gone here, whatever events were
 * seen, and its parked threads thawed so that they can die: the 250 ms
 * housekeeping pass reaps a killed QEMU within a second. Returns how many.
 */
int sched_reap(struct sched *s);
/*
 * Keep the other threads of every managed domain's process (QEMU's main
 * loop, I/O threads, vhost workers) off the pools' CPUs: new threads, and
 * all of them again when the pools changed. Once a second from the control
 * loop (core/sched_place.c).
 */
void sched_place_all(struct sched *s);
/*
 * Count, per pool, the user threads not ours that /proc shows runnable on
 * its CPUs (stats: foreign_threads, foreign_sightings), and say each new
 * one through cfg.warn; keep the managed domains' vhost kernel threads
 * (before Linux 6.4) off those CPUs. From the control loop; returns the
 * milliseconds to wait before the next scan, sched_foreign_gap_ms of this
 * one's duration (core/sched_foreign.c).
 */
unsigned int sched_foreign_scan(struct sched *s);
/*
 * The pause after a walk of /proc that took `scan_ns`: every 2 s while a
 * walk is cheap, else 100 times the walk (1 % of the control thread, on a
 * host with tens of thousands of threads), at most a minute.
 */
unsigned int sched_foreign_gap_ms(uint64_t scan_ns);
/*
 * After lost events (a full ring), re-read every managed thread's state
 * from /proc and correct the policies' view. Returns threads corrected.
 */
int sched_resync(struct sched *s);
/*
 * The kernel does not always fire sched_wakeup (vcpusched.bpf.c): a vCPU
 * whose wake went unreported stays runnable at LOW, unseen, and never runs
 * while an elected thread that does not block holds its CPU. Called every
 * housekeeping tick: each thread the pool believes blocked is looked up in
 * /proc, and one found runnable is woken. Returns how many. A thread the
 * pool believes on a CPU but /proc finds blocked (its switch-out late or
 * unreported) stops being charged for that run (charge_stale_runs).
 */
int sched_wake_missed(struct sched *s);
/*
 * Sample how long each managed vCPU waited while runnable (the kernel's
 * run_delay and the wait under way: sched_wait.c), for `list`'s wait_ns
 * and wait_recent. The housekeeping tick calls it once a second.
 */
void sched_sample_waits(struct sched *s);

#if VCPUSCHED_FAULTS
enum sched_fault {
    SCHED_FAULT_NONE,
    SCHED_FAULT_SPIN,  /* loop at HIGH holding the pool lock */
    SCHED_FAULT_BLOCK, /* sleep in the kernel (pause) holding the pool lock */
    SCHED_FAULT_STALL, /* sleep in the kernel before taking it: others go on */
};
/*
 * Test builds only (VCPUSCHED_FAULTS; never in Release or the package):
 * the dispatcher serving host CPU `cpu` meets `fault` at its next pass
 * over that CPU, and never comes back. For the watchdog's tests. -ENOENT
 * if no pool has the CPU.
 */
int sched_fault_arm(struct sched *s, int cpu, enum sched_fault fault);
#endif

/* JSON views for the control protocol (docs/protocol.md). New objects. */
struct json_object *sched_json_domain(struct sched *s, const char *name);
struct json_object *sched_json_list(struct sched *s);
struct json_object *sched_json_stats(struct sched *s);
struct json_object *sched_json_pools(struct sched *s);
/* Every policy (name NULL) or one with its parameter schemas; NULL if unknown. */
struct json_object *sched_json_policies(const char *name);

/*
 * A number that grows whenever pools or domains change (created, set,
 * resized, destroyed; attached, set, moved, detached, reaped, vCPUs added
 * or dropped): the daemon writes its live record again when it moved.
 */
uint64_t sched_changes(struct sched *s);
/*
 * What a restarted daemon needs to attach every domain again
 * (sched_record.c): an array, one object per domain: name, source,
 * origin (if any), pid, the process's identity when attached (start_time,
 * exe_dev, exe_ino), pool, params (as given, class included), and tids
 * for a domain attached by thread ids. A new object.
 */
struct json_object *sched_json_record(struct sched *s);
/*
 * Every pool as a restarted daemon makes it again: name, cpus (a CPU
 * list), policy, params as given. A new object.
 */
struct json_object *sched_json_record_pools(struct sched *s);

#endif /* VCPUSCHED_SCHED_CORE_H */
