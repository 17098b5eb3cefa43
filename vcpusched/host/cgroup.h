/* SPDX-License-Identifier: ISC */
/*
 * cgroup.h - the pure part of parking: where the cgroup hierarchies are
 * mounted, which group a thread is in, which backend parks (the cgroup v1
 * freezer or cgroup v2's cgroup.freeze) and, on v2, which group to freeze.
 * Text in, decisions and paths out; actuator_linux.c reads the files and
 * makes every change.
 */
#ifndef VCPUSCHED_CGROUP_H
#define VCPUSCHED_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define CGROUP_MOUNT_MAX 256 /* a hierarchy's mount point, NUL included */
#define CGROUP_PATH_MAX  256 /* a group's path inside its hierarchy, NUL included */
/* An absolute group directory: mount + path + our child's name. */
#define CGROUP_DIR_MAX (CGROUP_MOUNT_MAX + CGROUP_PATH_MAX + 32)
/* Our v1 freezer groups: <freezer mount>/vcpusched/<tid>. */
#define CGROUP_V1_PARK_DIR "vcpusched"
/* A daemon's v1 hold group: <freezer mount>/vcpusched/hold-<pid> (act_park_hold). */
#define CGROUP_V1_HOLD_PREFIX "hold-"
/* Our v2 threaded child groups: <thread's group>/vcpusched-park-<tid>. */
#define CGROUP_V2_PARK_PREFIX "vcpusched-park-"

/* What --park asks for. */
enum cgroup_want {
    CGROUP_WANT_AUTO, /* the v1 freezer if mounted, else cgroup v2 */
    CGROUP_WANT_V1,
    CGROUP_WANT_V2,
};

/* How this daemon parks. */
enum cgroup_backend {
    CGROUP_BACKEND_NONE, /* no freezer: caps cannot be enforced */
    CGROUP_BACKEND_V1,
    CGROUP_BACKEND_V2,
};

/*
 * How one thread is parked, in its state-file record before the first
 * change, so that whoever restores knows what to undo.
 */
enum cgroup_park_mode {
    CGROUP_PARK_NONE,     /* never parked: nothing to undo */
    CGROUP_PARK_V1,       /* moved to <freezer>/vcpusched/<tid>, frozen there */
    CGROUP_PARK_V2_OWN,   /* alone in a threaded group (libvirt's vcpuN): that group is frozen */
    CGROUP_PARK_V2_CHILD, /* moved to a threaded child <group>/vcpusched-park-<tid> */
};

struct cgroup_mounts {
    char v1_freezer[CGROUP_MOUNT_MAX]; /* "" when not mounted */
    char v1_cpu[CGROUP_MOUNT_MAX];
    char v2[CGROUP_MOUNT_MAX];
    bool v1_any; /* some v1 hierarchy is mounted (with v2 too: hybrid) */
};

/*
 * One line of /proc/self/mounts into m (the first mount of each kind
 * wins; octal escapes such as \040 are decoded). -ENAMETOOLONG if a
 * cgroup mount point does not fit, else 0.
 */
int cgroup_parse_mount_line(const char *line, struct cgroup_mounts *m);
/* "v1", "v2", "hybrid" (v1 hierarchies beside cgroup2) or "none". */
const char *cgroup_layout(const struct cgroup_mounts *m);
const char *cgroup_backend_name(enum cgroup_backend b);

/*
 * The backend for `want` on these mounts, or -ENOENT with the reason when
 * a forced backend is not mounted. `auto` keeps the v1 freezer where one
 * is mounted (v1 and hybrid hosts), else cgroup v2, else none.
 */
int cgroup_choose_backend(const struct cgroup_mounts *m, enum cgroup_want want,
                          enum cgroup_backend *out, char *err, size_t errlen);
/* The start-up log line's words for the chosen backend on these mounts. */
void cgroup_describe(const struct cgroup_mounts *m, enum cgroup_backend b, char *out, size_t len);

/*
 * The path of `controller`'s group in /proc/<tid>/cgroup text; "" for
 * cgroup v2 (the "0::" line). -ENOENT if absent, -ENAMETOOLONG if it does
 * not fit in len, -EINVAL if it is not an absolute path.
 */
int cgroup_parse_proc(const char *text, const char *controller, char *out, size_t len);

/* What the actuator read of the v2 group a thread is in. */
struct cgroup_v2_group {
    const char *path;    /* the group's path in the hierarchy ("/": the root) */
    const char *type;    /* cgroup.type; NULL where there is none (the root) */
    const char *threads; /* cgroup.threads: the thread ids in the group */
    const char *freeze;  /* cgroup.freeze; NULL where there is none */
    bool has_children;   /* the group has child groups (frozen with it) */
};

/*
 * Where to park thread `tid` on cgroup v2. Its own group is frozen in place
 * only when that is a threaded group holding this thread alone, with no
 * child group and not frozen by someone else (libvirt's vcpuN); otherwise
 * a threaded child of its group is made for it (threads move only within
 * their threaded subtree, and the root takes threaded children). -EINVAL
 * or -EOPNOTSUPP with the reason when neither can work.
 */
int cgroup_choose_v2(pid_t tid, const struct cgroup_v2_group *g, enum cgroup_park_mode *mode,
                     char *err, size_t errlen);

/* The directory of group `path` in the hierarchy mounted at `mount`. */
int cgroup_group_dir(const char *mount, const char *path, char *out, size_t len);
/*
 * The group a parked thread is frozen in: for CGROUP_PARK_V1,
 * <mount>/vcpusched/<tid>; V2_OWN, the group itself; V2_CHILD, the
 * group's vcpusched-park-<tid>. -ENAMETOOLONG if it does not fit,
 * -EINVAL for CGROUP_PARK_NONE; out is then "", never a truncated path.
 */
int cgroup_park_dir(enum cgroup_park_mode mode, const char *mount, const char *path, pid_t tid,
                    char *out, size_t len);

/*
 * The v1 hold group of daemon `pid`, <mount>/vcpusched/hold-<pid>;
 * -ENAMETOOLONG (out "") if it does not fit.
 */
int cgroup_hold_dir(const char *mount, pid_t pid, char *out, size_t len);
/* The daemon a name in <mount>/vcpusched/ is the hold group of, or -1. */
pid_t cgroup_hold_pid(const char *name);
/* The same as a path in the hierarchy (what /proc/<tid>/cgroup shows). */
int cgroup_park_path(enum cgroup_park_mode mode, const char *path, pid_t tid, char *out,
                     size_t len);

#endif /* VCPUSCHED_CGROUP_H */
