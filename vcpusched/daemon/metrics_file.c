/* SPDX-License-Identifier: ISC */
/*
 * metrics_file.c - write the metrics file (metrics_file.h): the answers
 * to `stats` and `list` a client would get (daemon_handle), formatted by
 * ctl_metrics.c in the Prometheus text format (node_exporter's textfile
 * collector reads no OpenMetrics), into a temporary file of the same
 * directory that is then renamed over the old one. The temporary name
 * starts with a dot and does not end in .prom, so the collector never
 * reads it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/clock.h"
#include "common/log.h"
#include "control/ctl_metrics.h"
#include "metrics_file.h"

#define METRICS_FILE_MODE 0644 /* node_exporter runs as its own user; `stats` is public anyway */
#define METRICS_TMP_SIZE  300  /* the configured path (255), a dot and XXXXXX */

/* DIR/.BASE.XXXXXX for `path`; -ENAMETOOLONG if it does not fit. */
static int
temp_name(char *tmp, size_t len, const char *path)
{
    const char *slash = strrchr(path, '/');
    int n;

    if (slash == NULL)
        n = snprintf(tmp, len, ".%s.XXXXXX", path);
    else
        n = snprintf(tmp, len, "%.*s/.%s.XXXXXX", (int)(slash - path), path, slash + 1);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* A new temporary file next to `path`, mode 0644: its fd, or -errno. */
static int
temp_open(char *tmp, size_t len, const char *path)
{
    int fd, r = temp_name(tmp, len, path);

    if (r < 0)
        return r;
    fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (fchmod(fd, METRICS_FILE_MODE) < 0) {
        r = -errno;
        close(fd);
        unlink(tmp);
        return r;
    }
    return fd;
}

int
metrics_file_check(const char *path, char *err, size_t errlen)
{
    char tmp[METRICS_TMP_SIZE];
    int fd = temp_open(tmp, sizeof(tmp), path);

    if (fd < 0) {
        snprintf(err, errlen, "metrics file %s: cannot create a file next to it: %s%s", path,
                 strerror(-fd),
                 fd == -EROFS ? " (a service unit's ProtectSystem=strict: add the directory "
                                "to ReadWritePaths=, systemctl edit vcpuschedd)"
                              : "");
        return fd;
    }
    close(fd);
    unlink(tmp);
    return 0;
}

/* One result of the daemon's own handler, as a client would get it. */
static struct json_object *
answer(struct daemon_ctx *ctx, enum ctl_cmd cmd, char *err, size_t errlen)
{
    struct ctl_request *req = calloc(1, sizeof(*req)); /* large: tids, params */
    struct json_object *res = NULL;

    if (req == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    req->cmd = cmd;
    if (daemon_handle(ctx, req, NULL, &res, err, errlen) < 0) {
        json_object_put(res);
        res = NULL;
    }
    free(req);
    return res;
}

/* The metrics into a temporary file, then renamed over `path`. */
static int
file_replace(const char *path, struct json_object *stats, struct json_object *list)
{
    char tmp[METRICS_TMP_SIZE];
    int fd = temp_open(tmp, sizeof(tmp), path), r;
    FILE *f;

    if (fd < 0)
        return fd;
    f = fdopen(fd, "w");
    if (f == NULL) {
        r = -errno;
        close(fd);
        unlink(tmp);
        return r;
    }
    r = ctl_metrics_write(f, stats, list, CTL_METRICS_PROMETHEUS);
    if (fclose(f) != 0 && r == 0)
        r = -errno;
    if (r == 0 && rename(tmp, path) < 0)
        r = -errno;
    if (r < 0)
        unlink(tmp);
    return r;
}

static int
metrics_write(const char *path, struct daemon_ctx *ctx, char *err, size_t errlen)
{
    struct json_object *stats = answer(ctx, CTL_STATS, err, errlen);
    struct json_object *list = stats != NULL ? answer(ctx, CTL_LIST, err, errlen) : NULL;
    int r = list != NULL ? file_replace(path, stats, list) : -EIO; /* err: the handler's */

    if (r < 0 && list != NULL)
        snprintf(err, errlen, "%s", strerror(-r));
    json_object_put(stats);
    json_object_put(list);
    return r;
}

static void
metrics_now(struct metrics_file *mf, struct daemon_ctx *ctx)
{
    char err[256] = "";
    int r = metrics_write(mf->path, ctx, err, sizeof(err));

    if (r < 0 && !mf->failing)
        log_warnx("metrics file %s: %s (retrying every period)", mf->path, err);
    else if (r == 0 && mf->failing)
        log_info("metrics file %s: written again", mf->path);
    mf->failing = r < 0;
}

void
metrics_file_start(struct metrics_file *mf, struct daemon_ctx *ctx, const char *path,
                   unsigned int period_s)
{
    memset(mf, 0, sizeof(*mf));
    if (path[0] == '\0')
        return;
    snprintf(mf->path, sizeof(mf->path), "%s", path);
    mf->period_ns = (uint64_t)period_s * 1000000000ULL;
    mf->next_ns = clock_mono_ns() + mf->period_ns;
    metrics_now(mf, ctx);
    log_info("metrics file %s: every %u s", mf->path, period_s);
}

void
metrics_file_tick(struct metrics_file *mf, struct daemon_ctx *ctx)
{
    uint64_t now = clock_mono_ns();

    if (mf->path[0] == '\0' || now < mf->next_ns)
        return;
    mf->next_ns = now + mf->period_ns;
    metrics_now(mf, ctx);
}

void
metrics_file_stop(struct metrics_file *mf)
{
    if (mf->path[0] != '\0' && unlink(mf->path) < 0 && errno != ENOENT)
        log_warn("metrics file %s: remove", mf->path);
}
