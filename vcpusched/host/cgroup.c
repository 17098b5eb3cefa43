/* SPDX-License-Identifier: ISC */
/*
 * cgroup.c - mounts, a thread's groups, the parking backend and the v2
 * group to freeze, from text; see cgroup.h. No system call here.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"

/* Copy a /proc/self/mounts field, decoding \ooo escapes; false if too long. */
static bool
unescape(const char *s, size_t n, char *out, size_t len)
{
    size_t o = 0;

    for (size_t i = 0; i < n; i++) {
        char c = s[i];

        if (c == '\\' && i + 3 < n && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
            s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
            c = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
            i += 3;
        }
        if (o + 1 >= len)
            return false;
        out[o++] = c;
    }
    out[o] = '\0';
    return true;
}

/* True if the comma-separated list (n bytes) holds the word w. */
static bool
has_option(const char *list, size_t n, const char *w)
{
    size_t wn = strlen(w);

    for (const char *p = list, *end = list + n; p < end;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        size_t len = comma ? (size_t)(comma - p) : (size_t)(end - p);

        if (len == wn && memcmp(p, w, wn) == 0)
            return true;
        p += len + 1;
    }
    return false;
}

int
cgroup_parse_mount_line(const char *line, struct cgroup_mounts *m)
{
    const char *f[4];
    size_t n[4];
    const char *p = line;
    char *dst = NULL;

    for (int i = 0; i < 4; i++) {
        p += strspn(p, " ");
        f[i] = p;
        n[i] = strcspn(p, " \n");
        if (n[i] == 0)
            return 0; /* not a mount line: nothing to learn */
        p += n[i];
    }
    if (n[2] == 7 && memcmp(f[2], "cgroup2", 7) == 0) {
        dst = m->v2[0] ? NULL : m->v2;
    } else if (n[2] == 6 && memcmp(f[2], "cgroup", 6) == 0) {
        m->v1_any = true;
        if (has_option(f[3], n[3], "freezer") && !m->v1_freezer[0])
            dst = m->v1_freezer;
        else if (has_option(f[3], n[3], "cpu") && !m->v1_cpu[0])
            dst = m->v1_cpu;
    }
    if (dst != NULL && !unescape(f[1], n[1], dst, CGROUP_MOUNT_MAX)) {
        dst[0] = '\0';
        return -ENAMETOOLONG;
    }
    return 0;
}

const char *
cgroup_layout(const struct cgroup_mounts *m)
{
    if (m->v2[0] != '\0')
        return m->v1_any ? "hybrid" : "v2";
    return m->v1_any ? "v1" : "none";
}

const char *
cgroup_backend_name(enum cgroup_backend b)
{
    return b == CGROUP_BACKEND_V1 ? "v1" : b == CGROUP_BACKEND_V2 ? "v2" : "none";
}

int
cgroup_choose_backend(const struct cgroup_mounts *m, enum cgroup_want want,
                      enum cgroup_backend *out, char *err, size_t errlen)
{
    bool v1 = m->v1_freezer[0] != '\0', v2 = m->v2[0] != '\0';

    if (want == CGROUP_WANT_V1 && !v1) {
        snprintf(err, errlen,
                 "--park v1: no cgroup v1 freezer hierarchy is mounted (/proc/self/mounts; "
                 "cgroup layout: %s)%s",
                 cgroup_layout(m), v2 ? ": use --park v2 or auto" : "");
        return -ENOENT;
    }
    if (want == CGROUP_WANT_V2 && !v2) {
        snprintf(err, errlen,
                 "--park v2: no cgroup2 hierarchy is mounted (/proc/self/mounts; cgroup layout: "
                 "%s)%s",
                 cgroup_layout(m), v1 ? ": use --park v1 or auto" : "");
        return -ENOENT;
    }
    if (want == CGROUP_WANT_V1 || (want == CGROUP_WANT_AUTO && v1))
        *out = CGROUP_BACKEND_V1;
    else if (v2)
        *out = CGROUP_BACKEND_V2;
    else
        *out = CGROUP_BACKEND_NONE;
    return 0;
}

void
cgroup_describe(const struct cgroup_mounts *m, enum cgroup_backend b, char *out, size_t len)
{
    const char *layout = cgroup_layout(m);

    if (b == CGROUP_BACKEND_V1)
        snprintf(out, len, "cgroup v1 freezer at %s (%s layout%s%s)", m->v1_freezer, layout,
                 m->v2[0] ? "; --park v2 would use cgroup2 at " : "", m->v2);
    else if (b == CGROUP_BACKEND_V2)
        snprintf(out, len,
                 "cgroup v2 cgroup.freeze in %s (%s layout): a vCPU thread alone in its threaded "
                 "group (libvirt's vcpuN) is frozen there, any other in a threaded child "
                 "group " CGROUP_V2_PARK_PREFIX "<tid> of its own",
                 m->v2, layout);
    else
        snprintf(out, len,
                 "none: no cgroup v1 freezer and no cgroup2 mounted (%s layout): caps cannot be "
                 "enforced",
                 layout);
}

int
cgroup_parse_proc(const char *text, const char *controller, char *out, size_t len)
{
    for (const char *line = text, *next; line != NULL && *line != '\0'; line = next) {
        const char *nl = strchr(line, '\n'), *end = nl ? nl : line + strlen(line);
        const char *c1 = memchr(line, ':', (size_t)(end - line)), *c2 = NULL, *path;
        bool match;

        next = nl ? nl + 1 : NULL;
        if (c1 != NULL)
            c2 = memchr(c1 + 1, ':', (size_t)(end - c1 - 1));
        if (c2 == NULL)
            continue;
        if (controller[0] == '\0') /* cgroup v2: "0::/path" */
            match = c1 == line + 1 && line[0] == '0' && c2 == c1 + 1;
        else
            match = has_option(c1 + 1, (size_t)(c2 - c1 - 1), controller);
        if (!match)
            continue;
        path = c2 + 1;
        if (*path != '/')
            return -EINVAL;
        if ((size_t)(end - path) >= len)
            return -ENAMETOOLONG;
        memcpy(out, path, (size_t)(end - path));
        out[end - path] = '\0';
        return 0;
    }
    return -ENOENT;
}

/* True if the whitespace-separated ids are exactly `tid`. */
static bool
alone_in(const char *threads, pid_t tid)
{
    int n = 0;
    bool mine = false;

    for (const char *p = threads; *p != '\0';) {
        char *end;
        long id = strtol(p, &end, 10);

        if (end == p) {
            p++;
            continue;
        }
        n++;
        mine = id == (long)tid;
        p = end;
    }
    return n == 1 && mine;
}

/* True if s, without its trailing newline, is w. */
static bool
is_word(const char *s, const char *w)
{
    size_t n = strlen(w);

    return s != NULL && strncmp(s, w, n) == 0 && (s[n] == '\0' || s[n] == '\n');
}

int
cgroup_choose_v2(pid_t tid, const struct cgroup_v2_group *g, enum cgroup_park_mode *mode, char *err,
                 size_t errlen)
{
    if (strcmp(g->path, "/") == 0) {
        *mode = CGROUP_PARK_V2_CHILD; /* no cgroup.freeze there; threaded children allowed */
        return 0;
    }
    if (g->freeze == NULL) {
        snprintf(err, errlen,
                 "cannot park thread %d: its cgroup v2 group %s has no cgroup.freeze "
                 "(freezing cgroup v2 groups needs Linux 5.2 or later)",
                 (int)tid, g->path);
        return -EOPNOTSUPP;
    }
    if (is_word(g->type, "domain invalid")) {
        snprintf(err, errlen,
                 "cannot park thread %d: its cgroup v2 group %s is 'domain invalid' (a child "
                 "of a threaded group that was never made threaded)",
                 (int)tid, g->path);
        return -EINVAL;
    }
    if (is_word(g->type, "threaded") && alone_in(g->threads, tid) && !g->has_children &&
        is_word(g->freeze, "0"))
        *mode = CGROUP_PARK_V2_OWN;
    else
        *mode = CGROUP_PARK_V2_CHILD;
    return 0;
}

int
cgroup_group_dir(const char *mount, const char *path, char *out, size_t len)
{
    int n;

    out[0] = '\0';
    if (path[0] != '/')
        return -EINVAL;
    n = snprintf(out, len, "%s%s", mount, strcmp(path, "/") == 0 ? "" : path);
    if (n < 0 || (size_t)n >= len) {
        out[0] = '\0'; /* never a truncated path: the caller may rmdir it */
        return -ENAMETOOLONG;
    }
    return 0;
}

int
cgroup_park_path(enum cgroup_park_mode mode, const char *path, pid_t tid, char *out, size_t len)
{
    const char *sep = strcmp(path, "/") == 0 ? "" : path;
    int n;

    switch (mode) {
    case CGROUP_PARK_V1:
        n = snprintf(out, len, "/" CGROUP_V1_PARK_DIR "/%d", (int)tid);
        break;
    case CGROUP_PARK_V2_OWN:
        n = snprintf(out, len, "%s", path);
        break;
    case CGROUP_PARK_V2_CHILD:
        n = snprintf(out, len, "%s/" CGROUP_V2_PARK_PREFIX "%d", sep, (int)tid);
        break;
    default:
        out[0] = '\0';
        return -EINVAL;
    }
    if (n < 0 || (size_t)n >= len) {
        out[0] = '\0';
        return -ENAMETOOLONG;
    }
    return 0;
}

int
cgroup_park_dir(enum cgroup_park_mode mode, const char *mount, const char *path, pid_t tid,
                char *out, size_t len)
{
    char rel[CGROUP_DIR_MAX];
    int r = cgroup_park_path(mode, path, tid, rel, sizeof(rel));

    if (r < 0) {
        out[0] = '\0';
        return r;
    }
    return cgroup_group_dir(mount, rel, out, len);
}

int
cgroup_hold_dir(const char *mount, pid_t pid, char *out, size_t len)
{
    int n = snprintf(out, len, "%s/" CGROUP_V1_PARK_DIR "/" CGROUP_V1_HOLD_PREFIX "%d", mount,
                     (int)pid);

    if (n < 0 || (size_t)n >= len) {
        out[0] = '\0';
        return -ENAMETOOLONG;
    }
    return 0;
}

pid_t
cgroup_hold_pid(const char *name)
{
    size_t n = strlen(CGROUP_V1_HOLD_PREFIX);
    char *end;
    long v;

    if (strncmp(name, CGROUP_V1_HOLD_PREFIX, n) != 0 || name[n] < '1' || name[n] > '9')
        return -1;
    errno = 0;
    v = strtol(name + n, &end, 10);
    return *end != '\0' || errno != 0 || v > INT_MAX ? -1 : (pid_t)v;
}
