/* SPDX-License-Identifier: ISC */
/*
 * statefile.c - the shared record of managed threads; see statefile.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "statefile.h"

#define RT_RUNTIME_PATH "/proc/sys/kernel/sched_rt_runtime_us"

/* The directory part of `path` into dir (empty when there is none). */
static void
dir_of(const char *path, char *dir, size_t len)
{
    const char *slash = strrchr(path, '/');

    if (slash == NULL || slash == path)
        snprintf(dir, len, "%s", slash == path ? "/" : ".");
    else
        snprintf(dir, len, "%.*s", (int)(slash - path), path);
}

/*
 * The state file's directory: created 0700 if missing; else a real
 * directory of ours that nobody else may write to (or plant files in).
 */
static int
check_dir(const char *path, char *err, size_t errlen)
{
    struct stat st;
    char dir[PATH_MAX];

    dir_of(path, dir, sizeof(dir));
    if (mkdir(dir, 0700) == 0)
        return 0;
    if (errno != EEXIST) {
        snprintf(err, errlen, "state file %s: create directory %s: %s", path, dir, strerror(errno));
        return -errno;
    }
    if (lstat(dir, &st) < 0) {
        snprintf(err, errlen, "state file %s: %s: %s", path, dir, strerror(errno));
        return -errno;
    }
    if (!S_ISDIR(st.st_mode) || (st.st_uid != geteuid() && st.st_uid != 0) ||
        (st.st_mode & (S_IWGRP | S_IWOTH))) {
        snprintf(err, errlen,
                 "state file %s: directory %s is %s: it must be a directory of root's that "
                 "nobody else may write to (default /run/vcpusched)",
                 path, dir,
                 !S_ISDIR(st.st_mode)                       ? "not a directory"
                 : st.st_uid != geteuid() && st.st_uid != 0 ? "owned by another user"
                                                            : "writable by others");
        return -EPERM;
    }
    return 0;
}

/* A version 3 file: the same header and slots, no watchdog region. */
#define V3_LEN (sizeof(struct statefile_hdr) + STATEFILE_SLOTS * sizeof(struct statefile_slot))

const char *
statefile_unsafe(const struct stat *st)
{
    if (!S_ISREG(st->st_mode))
        return "not a regular file";
    if (st->st_uid != geteuid())
        return "owned by another user";
    if ((st->st_mode & 07777) != 0600)
        return "not mode 0600";
    return NULL;
}

/*
 * Open the file itself: never through a symlink; an existing one must be a
 * regular file of ours, mode 0600, of the expected size (or empty: a
 * crash between create and truncate; or version 3's, extended: an upgrade
 * without a reboot); a missing one is created exclusively.
 */
static int
open_file(const char *path, size_t len, char *err, size_t errlen)
{
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
    const char *why = NULL;
    struct stat st;

    if (fd < 0 && errno == ENOENT)
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "state file %s: %s%s", path, strerror(errno),
                 errno == ELOOP ? " (a symlink: refused)" : "");
        return -errno;
    }
    why = fstat(fd, &st) < 0 ? strerror(errno) : statefile_unsafe(&st);
    if (why == NULL && st.st_size != 0 && (size_t)st.st_size != len && (size_t)st.st_size != V3_LEN)
        why = "of an unexpected size (another version?)";
    else if (why == NULL && (size_t)st.st_size != len && ftruncate(fd, (off_t)len) < 0)
        why = strerror(errno); /* empty (a crash between create and truncate), or version 3 */
    if (why != NULL) {
        snprintf(err, errlen, "state file %s: %s: refused", path, why);
        close(fd);
        return -EPERM;
    }
    return fd;
}

/*
 * The restore lock: an OFD write lock on the whole file, owned by fd's
 * open file description (flock and OFD locks do not interact on Linux).
 */
static int
restore_lock(int fd, short type)
{
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET};

    return fcntl(fd, F_OFD_SETLK, &fl) < 0 ? -errno : 0;
}

int
statefile_open(struct statefile *sf, const char *path, char *err, size_t errlen)
{
    size_t len = V3_LEN + sizeof(struct statefile_watch);
    void *map;
    int r;

    memset(sf, 0, sizeof(*sf));
    sf->fd = sf->lock_fd = -1;
    if ((r = check_dir(path, err, errlen)) < 0)
        return r;
    if ((r = sf->fd = open_file(path, len, err, errlen)) < 0)
        return r;
    map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, sf->fd, 0);
    if (map == MAP_FAILED) {
        r = -errno;
        snprintf(err, errlen, "state file %s: mmap: %s", path, strerror(errno));
        close(sf->fd);
        sf->fd = -1;
        return r;
    }
    sf->map_len = len;
    sf->hdr = map;
    sf->slots = (struct statefile_slot *)(sf->hdr + 1);
    sf->watch = (struct statefile_watch *)(sf->slots + STATEFILE_SLOTS);
    if (sf->hdr->magic == 0) {
        sf->hdr->version = STATEFILE_VERSION;
        sf->hdr->nr_slots = STATEFILE_SLOTS;
        sf->hdr->magic = STATEFILE_MAGIC;
    } else if (sf->hdr->magic == STATEFILE_MAGIC && sf->hdr->version == 3 &&
               sf->hdr->nr_slots == STATEFILE_SLOTS) {
        sf->hdr->version = STATEFILE_VERSION; /* extended by open_file; its slots read the same */
    } else if (sf->hdr->magic != STATEFILE_MAGIC || sf->hdr->version != STATEFILE_VERSION ||
               sf->hdr->nr_slots != STATEFILE_SLOTS) {
        snprintf(err, errlen, "state file %s: not a version %d state file", path,
                 STATEFILE_VERSION);
        statefile_close(sf);
        return -EINVAL;
    }
    return 0;
}

int
statefile_own(struct statefile *sf, const char *path, unsigned int wait_ms, char *err,
              size_t errlen)
{
    struct stat a, b;
    unsigned int waited = 0;

    /* A description of our own: the guardian must not share this lock. */
    sf->lock_fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
    if (sf->lock_fd < 0 || fstat(sf->lock_fd, &a) < 0 || fstat(sf->fd, &b) < 0 ||
        a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
        snprintf(err, errlen, "state file %s: reopen: %s", path,
                 sf->lock_fd < 0 ? strerror(errno) : "replaced meanwhile");
        return -EIO;
    }
    while (flock(sf->lock_fd, LOCK_EX | LOCK_NB) < 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) {
            snprintf(err, errlen, "state file %s: lock: %s", path, strerror(errno));
            return -errno;
        }
        if (waited >= wait_ms) {
            snprintf(err, errlen,
                     "state file %s is held by another vcpuschedd (pid %d) or its guardian "
                     "(pid %d) still restoring threads after %u ms",
                     path, (int)sf->hdr->owner_pid, (int)sf->hdr->guardian_pid, waited);
            return -EBUSY;
        }
        usleep(20 * 1000);
        waited += 20;
    }
    /* A guardian restoring while its stuck daemon lived: let it finish. */
    while (restore_lock(sf->lock_fd, F_WRLCK) < 0) {
        if (waited >= wait_ms) {
            snprintf(err, errlen,
                     "state file %s: the guardian (pid %d) of a stuck vcpuschedd is still "
                     "restoring threads after %u ms",
                     path, (int)sf->hdr->guardian_pid, waited);
            return -EBUSY;
        }
        usleep(20 * 1000);
        waited += 20;
    }
    sf->gen = sf->hdr->generation + 1;
    __atomic_store_n(&sf->hdr->generation, sf->gen, __ATOMIC_RELEASE);
    (void)restore_lock(sf->lock_fd, F_UNLCK);
    for (int c = 0; c < STATEFILE_CPUS; c++)
        statefile_beat_stop(sf, c); /* a predecessor's dispatchers are gone */
    sf->hdr->owner_pid = getpid();
    return 0;
}

void
statefile_disown(struct statefile *sf)
{
    if (sf->lock_fd >= 0)
        close(sf->lock_fd);
    sf->lock_fd = -1;
}

void
statefile_close(struct statefile *sf)
{
    if (sf->hdr != NULL)
        munmap(sf->hdr, sf->map_len);
    if (sf->fd >= 0)
        close(sf->fd);
    if (sf->lock_fd >= 0)
        close(sf->lock_fd); /* releases the owner lock */
    memset(sf, 0, sizeof(*sf));
    sf->fd = sf->lock_fd = -1;
}

int
statefile_alloc(struct statefile *sf)
{
    for (int i = 0; i < STATEFILE_SLOTS; i++) {
        if (!sf->slots[i].used) {
            memset(&sf->slots[i].act, 0, sizeof(sf->slots[i].act));
            sf->slots[i].act.cpu = -1;
            sf->slots[i].gen = sf->gen;
            __atomic_store_n(&sf->slots[i].used, 1, __ATOMIC_RELEASE);
            return i;
        }
    }
    return -ENOSPC;
}

void
statefile_release(struct statefile *sf, int slot)
{
    __atomic_store_n(&sf->slots[slot].used, 0, __ATOMIC_RELEASE);
}

struct act_thread *
statefile_act(struct statefile *sf, int slot)
{
    return &sf->slots[slot].act;
}

int
statefile_count(const struct statefile *sf)
{
    int n = 0;

    for (int i = 0; i < STATEFILE_SLOTS; i++)
        n += sf->slots[i].used != 0;
    return n;
}

int
rt_runtime_read(int64_t *us)
{
    FILE *f = fopen(RT_RUNTIME_PATH, "re");
    int ok;

    if (f == NULL)
        return -errno;
    ok = fscanf(f, "%" SCNd64, us) == 1;
    fclose(f);
    return ok ? 0 : -EPROTO;
}

static int
rt_runtime_write(int64_t us)
{
    FILE *f = fopen(RT_RUNTIME_PATH, "we");
    int r = 0;

    if (f == NULL)
        return -errno;
    if (fprintf(f, "%" PRId64 "\n", us) < 0)
        r = -EIO;
    if (fclose(f) != 0 && r == 0)
        r = -errno;
    return r;
}

int
statefile_set_rt_runtime(struct statefile *sf, int64_t us)
{
    int64_t cur;
    int r = rt_runtime_read(&cur);

    if (r < 0)
        return r;
    if (!sf->hdr->rt_saved) {
        sf->hdr->rt_runtime_orig = cur;
        __atomic_store_n(&sf->hdr->rt_saved, 1, __ATOMIC_RELEASE);
    }
    return cur == us ? 0 : rt_runtime_write(us);
}

/*
 * Restore the used slots of generation `gen` (0: every generation), and
 * free them unless `keep`. Every parked thread is thawed first, before any
 * other thread is touched: a restorer that dies half-way must not leave a
 * guest hung.
 */
static int
restore_slots(struct statefile *sf, uint32_t gen, bool keep)
{
    int n = 0;

    for (int i = 0; i < STATEFILE_SLOTS; i++) {
        struct statefile_slot *s = &sf->slots[i];

        if (s->used && (gen == 0 || s->gen == gen))
            act_thaw_saved(s->act.tid, &s->act.orig);
    }
    for (int i = 0; i < STATEFILE_SLOTS; i++) {
        struct statefile_slot *s = &sf->slots[i];

        if (!s->used || (gen != 0 && s->gen != gen))
            continue;
        if (act_restore_saved(s->act.pid, s->act.tid, s->act.start_time, &s->act.orig) > 0)
            n++;
        if (!keep)
            statefile_release(sf, i);
    }
    return n;
}

static void
restore_rt_runtime(struct statefile *sf)
{
    if (sf->hdr->rt_saved) {
        (void)rt_runtime_write(sf->hdr->rt_runtime_orig);
        sf->hdr->rt_saved = 0;
    }
}

int
statefile_restore_all(struct statefile *sf)
{
    int n = restore_slots(sf, 0, false);

    restore_rt_runtime(sf);
    return n;
}

int
statefile_guardian_restore(struct statefile *sf, uint32_t gen)
{
    unsigned int waited_ms = 0;
    int n;

    /*
     * sf->fd is our description (the daemon's copy died with it). The
     * dying daemon closes its pipe end before its lock's descriptor, and
     * we, woken at a real-time priority, may get here in between: so the
     * lock is retried briefly. A newer daemon holds it for good: give up.
     */
    while (flock(sf->fd, LOCK_EX | LOCK_NB) < 0) {
        if (waited_ms >= STATEFILE_GUARDIAN_WAIT_MS)
            return -EBUSY;
        usleep(1000);
        waited_ms++;
    }
    n = restore_slots(sf, gen, false);
    if (__atomic_load_n(&sf->hdr->generation, __ATOMIC_ACQUIRE) == gen)
        restore_rt_runtime(sf);
    return n;
}

int
statefile_trip_restore(struct statefile *sf, uint32_t gen, struct statefile_trip *trip)
{
    struct timespec ts;
    int n;

    /*
     * The daemon of `gen` holds the owner lock, so no newer daemon owns
     * the file; one may be waiting in statefile_own, whose restore lock
     * we then do not get (or get after it bumped the generation).
     */
    if (restore_lock(sf->fd, F_WRLCK) < 0)
        return -EBUSY;
    if (__atomic_load_n(&sf->hdr->generation, __ATOMIC_ACQUIRE) != gen) {
        statefile_restore_unlock(sf);
        return -EBUSY;
    }
    n = restore_slots(sf, gen, true);
    restore_rt_runtime(sf);
    clock_gettime(CLOCK_REALTIME, &ts);
    trip->realtime_s = ts.tv_sec;
    trip->gen = gen;
    trip->restored = (uint32_t)n;
    sf->watch->last = *trip;
    __atomic_add_fetch(&sf->watch->trips, 1, __ATOMIC_RELEASE);
    return n;
}

void
statefile_restore_unlock(struct statefile *sf)
{
    (void)restore_lock(sf->fd, F_UNLCK);
}

uint64_t
statefile_oldest_beat(const struct statefile *sf, uint64_t now, int *cpu)
{
    uint64_t oldest = 0;

    *cpu = -1;
    for (int c = 0; c < STATEFILE_CPUS; c++) {
        uint64_t pass, age;

        if (statefile_beat_read(sf, c, &pass) == 0)
            continue;
        age = now > pass ? now - pass : 0;
        if (*cpu < 0 || age > oldest) {
            oldest = age;
            *cpu = c;
        }
    }
    return oldest;
}
