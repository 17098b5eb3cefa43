/* SPDX-License-Identifier: ISC */
/*
 * livefile.c - the live record on disk; see livefile.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/version.h"
#include "host/statefile.h"
#include "livefile.h"

void
livefile_path(const char *state, char *out, size_t len)
{
    snprintf(out, len, "%s" LIVEFILE_SUFFIX, state);
}

/* The file's bytes into *buf (malloc'd, NUL-terminated), checked as livefile.h says. */
static int
read_safely(const char *path, char **buf, size_t *len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    const char *why = NULL;
    struct stat st;
    ssize_t got = 0;

    *buf = NULL;
    if (fd < 0) {
        snprintf(err, errlen, "%s%s", strerror(errno),
                 errno == ELOOP ? " (a symlink: refused)" : "");
        return errno == ENOENT ? -ENOENT : errno == ELOOP ? -EPERM : -errno;
    }
    why = fstat(fd, &st) < 0 ? strerror(errno) : statefile_unsafe(&st);
    if (why == NULL && st.st_size > LIVEREC_MAX_BYTES)
        why = "larger than a record can be";
    else if (why == NULL && (*buf = malloc((size_t)st.st_size + 1)) == NULL)
        why = "out of memory";
    while (why == NULL && got < st.st_size) {
        ssize_t n = read(fd, *buf + got, (size_t)(st.st_size - got));

        if (n <= 0)
            why = n < 0 ? strerror(errno) : "shorter than its size";
        got += n > 0 ? n : 0;
    }
    close(fd);
    if (why != NULL) {
        snprintf(err, errlen, "%s: refused", why);
        free(*buf);
        *buf = NULL;
        return -EPERM;
    }
    (*buf)[got] = '\0';
    *len = (size_t)got;
    return 0;
}

int
livefile_load(const char *path, struct liverec *rec, char *err, size_t errlen)
{
    char *buf;
    size_t len = 0;
    int r;

    memset(rec, 0, sizeof(*rec));
    r = read_safely(path, &buf, &len, err, errlen);
    if (r < 0)
        return r;
    r = liverec_parse(buf, len, rec, err, errlen);
    free(buf);
    return r;
}

int
livefile_set_aside(const char *path, char *err, size_t errlen)
{
    char bad[PATH_MAX];

    snprintf(bad, sizeof(bad), "%s.bad", path);
    if (rename(path, bad) < 0) {
        snprintf(err, errlen, "rename to %s: %s", bad, strerror(errno));
        return -errno;
    }
    return 0;
}

/* The pools not named in conf[0..n): the configuration makes those. */
static struct json_object *
runtime_pools(struct sched *s, char (*conf)[VS_NAME_SIZE], unsigned int n)
{
    struct json_object *all = sched_json_record_pools(s), *out = json_object_new_array();

    for (size_t i = 0; i < json_object_array_length(all); i++) {
        struct json_object *p = json_object_array_get_idx(all, i), *name;

        (void)json_object_object_get_ex(p, "name", &name);
        if (!liverec_conf_has(conf, n, json_object_get_string(name)))
            json_object_array_add(out, json_object_get(p));
    }
    json_object_put(all);
    return out;
}

/* Each QMP domain with its socket's device and inode (0 if it is gone: never matched). */
static void
add_qmp_ids(struct json_object *doms)
{
    for (size_t i = 0; i < json_object_array_length(doms); i++) {
        struct json_object *d = json_object_array_get_idx(doms, i), *src, *origin;
        struct stat st = {0};

        if (!json_object_object_get_ex(d, "source", &src) ||
            strcmp(json_object_get_string(src), "qmp") != 0 ||
            !json_object_object_get_ex(d, "origin", &origin))
            continue;
        if (stat(json_object_get_string(origin), &st) < 0 || !S_ISSOCK(st.st_mode))
            memset(&st, 0, sizeof(st));
        json_object_object_add(d, "qmp_dev", json_object_new_int64((int64_t)st.st_dev));
        json_object_object_add(d, "qmp_ino", json_object_new_int64((int64_t)st.st_ino));
    }
}

struct json_object *
livefile_snapshot(struct sched *s, char (*conf)[VS_NAME_SIZE], unsigned int n)
{
    struct json_object *o = json_object_new_object(), *doms = sched_json_record(s);
    char boot[PROCID_BOOT_ID_SIZE] = "";

    (void)procid_boot_id(boot, sizeof(boot));
    add_qmp_ids(doms);
    json_object_object_add(o, "vcpusched_live", json_object_new_int(LIVEREC_VERSION));
    json_object_object_add(o, "boot_id", json_object_new_string(boot));
    json_object_object_add(o, "written_by", json_object_new_string(VCPUSCHED_VERSION));
    json_object_object_add(o, "pools", runtime_pools(s, conf, n));
    json_object_object_add(o, "domains", doms);
    return o;
}

int
livefile_save(const char *path, struct json_object *rec, char *err, size_t errlen)
{
    const char *text = json_object_to_json_string_ext(rec, JSON_C_TO_STRING_PLAIN);
    size_t len = strlen(text), done = 0;
    char tmp[PATH_MAX];
    int fd, r = 0;

    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    (void)unlink(tmp); /* a leftover of a daemon killed half-way (unlink follows no link) */
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        return -errno;
    }
    while (r == 0 && done < len) {
        ssize_t n = write(fd, text + done, len - done);

        if (n < 0)
            r = -errno;
        done += n > 0 ? (size_t)n : 0;
    }
    if (r == 0 && write(fd, "\n", 1) != 1)
        r = -EIO;
    if (r == 0 && fchmod(fd, 0600) < 0)
        r = -errno;
    if (close(fd) < 0 && r == 0)
        r = -errno;
    if (r == 0 && rename(tmp, path) < 0)
        r = -errno;
    if (r < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(-r));
        (void)unlink(tmp);
    }
    return r;
}
