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
 */
#ifndef VCPUSCHED_STATEFILE_H
#define VCPUSCHED_STATEFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "actuator.h"

#define STATEFILE_MAGIC   0x76637331u /* "vcs1" */
#define STATEFILE_VERSION 1
#define STATEFILE_SLOTS   4096 /* managed threads per daemon */
#define STATEFILE_DEFAULT "/run/vcpusched/state"

struct statefile_slot {
    uint32_t used;
    uint32_t pad;
    struct act_thread act;
};

struct statefile_hdr {
    uint32_t magic;
    uint32_t version;
    int32_t owner_pid; /* the daemon that writes it */
    uint32_t rt_saved; /* 1: rt_runtime_orig holds the value to restore */
    int64_t rt_runtime_orig;
    uint32_t nr_slots;
    uint32_t pad;
};

struct statefile {
    int fd;
    size_t map_len;
    struct statefile_hdr *hdr;
    struct statefile_slot *slots;
};

/*
 * Map the file at `path` (created 0600 with its directory if missing). An
 * existing file of another layout is refused. Does not restore anything.
 */
int statefile_open(struct statefile *sf, const char *path, char *err, size_t errlen);
void statefile_close(struct statefile *sf);

/* Take a free slot (marked used, zeroed); -ENOSPC when all are taken. */
int statefile_alloc(struct statefile *sf);
void statefile_release(struct statefile *sf, int slot);
struct act_thread *statefile_act(struct statefile *sf, int slot);

/*
 * Restore every used slot (threads whose start time no longer matches are
 * skipped), free them, and restore sched_rt_runtime_us if it was saved.
 * Returns the number of threads restored.
 */
int statefile_restore_all(struct statefile *sf);
/* Number of used slots. */
int statefile_count(const struct statefile *sf);

/*
 * sched_rt_runtime_us: read it, and set it after saving the original in
 * the header (once), so that whoever restores later puts it back.
 */
int rt_runtime_read(int64_t *us);
int statefile_set_rt_runtime(struct statefile *sf, int64_t us);

#endif /* VCPUSCHED_STATEFILE_H */
