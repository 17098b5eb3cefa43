/* SPDX-License-Identifier: ISC */
/*
 * procid.c - a process's identity across a pid's reuse; see procid.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "actuator.h"
#include "procid.h"

int
procid_read(pid_t pid, struct procid *id)
{
    char path[64];
    struct stat st;
    int r;

    memset(id, 0, sizeof(*id));
    r = act_read_stat(pid, pid, NULL, &id->start_time);
    if (r < 0)
        return r;
    snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
    if (stat(path, &st) == 0) {
        id->exe_dev = (uint64_t)st.st_dev;
        id->exe_ino = (uint64_t)st.st_ino;
    }
    return 0;
}

bool
procid_same(const struct procid *a, const struct procid *b)
{
    return procid_differs(a, b)[0] == '\0';
}

const char *
procid_differs(const struct procid *a, const struct procid *b)
{
    if (a->start_time != b->start_time)
        return "its start time differs";
    if (a->exe_dev != b->exe_dev || a->exe_ino != b->exe_ino)
        return "its executable differs";
    return "";
}

int
procid_boot_id(char *out, size_t len)
{
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    int r = 0;

    if (f == NULL)
        return -errno;
    if (fgets(out, (int)len, f) == NULL)
        r = -EIO;
    fclose(f);
    if (r == 0)
        out[strcspn(out, "\n")] = '\0';
    return r;
}
