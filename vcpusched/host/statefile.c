/* SPDX-License-Identifier: ISC */
/*
 * statefile.c - the shared record of managed threads; see statefile.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "statefile.h"

#define RT_RUNTIME_PATH "/proc/sys/kernel/sched_rt_runtime_us"

static int
mkdir_parent(const char *path)
{
    char dir[256];
    char *slash;

    snprintf(dir, sizeof(dir), "%s", path);
    slash = strrchr(dir, '/');
    if (slash == NULL || slash == dir)
        return 0;
    *slash = '\0';
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

int
statefile_open(struct statefile *sf, const char *path, char *err, size_t errlen)
{
    size_t len = sizeof(struct statefile_hdr) + STATEFILE_SLOTS * sizeof(struct statefile_slot);
    struct stat st;
    void *map;
    int r;

    memset(sf, 0, sizeof(*sf));
    sf->fd = -1;
    r = mkdir_parent(path);
    if (r < 0) {
        snprintf(err, errlen, "state file %s: create directory: %s", path, strerror(-r));
        return r;
    }
    sf->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (sf->fd < 0 || fstat(sf->fd, &st) < 0) {
        r = -errno;
        snprintf(err, errlen, "state file %s: %s", path, strerror(errno));
        goto fail;
    }
    if (st.st_size != 0 && (size_t)st.st_size != len) {
        snprintf(err, errlen, "state file %s: unexpected size %lld (another version?)", path,
                 (long long)st.st_size);
        r = -EINVAL;
        goto fail;
    }
    if (st.st_size == 0 && ftruncate(sf->fd, (off_t)len) < 0) {
        r = -errno;
        snprintf(err, errlen, "state file %s: %s", path, strerror(errno));
        goto fail;
    }
    map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, sf->fd, 0);
    if (map == MAP_FAILED) {
        r = -errno;
        snprintf(err, errlen, "state file %s: mmap: %s", path, strerror(errno));
        goto fail;
    }
    sf->map_len = len;
    sf->hdr = map;
    sf->slots = (struct statefile_slot *)(sf->hdr + 1);
    if (sf->hdr->magic == 0) {
        sf->hdr->version = STATEFILE_VERSION;
        sf->hdr->nr_slots = STATEFILE_SLOTS;
        sf->hdr->magic = STATEFILE_MAGIC;
    } else if (sf->hdr->magic != STATEFILE_MAGIC || sf->hdr->version != STATEFILE_VERSION ||
               sf->hdr->nr_slots != STATEFILE_SLOTS) {
        snprintf(err, errlen, "state file %s: not a version %d state file", path,
                 STATEFILE_VERSION);
        statefile_close(sf);
        return -EINVAL;
    }
    return 0;
fail:
    if (sf->fd >= 0)
        close(sf->fd);
    sf->fd = -1;
    return r;
}

void
statefile_close(struct statefile *sf)
{
    if (sf->hdr != NULL)
        munmap(sf->hdr, sf->map_len);
    if (sf->fd >= 0)
        close(sf->fd);
    memset(sf, 0, sizeof(*sf));
    sf->fd = -1;
}

int
statefile_alloc(struct statefile *sf)
{
    for (int i = 0; i < STATEFILE_SLOTS; i++) {
        if (!sf->slots[i].used) {
            memset(&sf->slots[i].act, 0, sizeof(sf->slots[i].act));
            sf->slots[i].act.cpu = -1;
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

int
statefile_restore_all(struct statefile *sf)
{
    int n = 0;

    for (int i = 0; i < STATEFILE_SLOTS; i++) {
        struct statefile_slot *s = &sf->slots[i];

        if (!s->used)
            continue;
        if (act_restore_saved(s->act.pid, s->act.tid, s->act.start_time, &s->act.orig,
                              s->act.frozen) > 0)
            n++;
        statefile_release(sf, i);
    }
    if (sf->hdr->rt_saved) {
        (void)rt_runtime_write(sf->hdr->rt_runtime_orig);
        sf->hdr->rt_saved = 0;
    }
    return n;
}
