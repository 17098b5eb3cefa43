/* SPDX-License-Identifier: ISC */
/*
 * live.c - the live record kept current and taken up; see live.h.
 */
#include <errno.h>
#include <stdio.h>

#include <json-c/json.h>

#include "common/log.h"
#include "live.h"
#include "livefile.h"
#include "restore.h"

void
live_conf_pools(struct live *l, const struct config *cfg)
{
    l->nr_conf = 0;
    for (unsigned int i = 0; i < cfg->nr_pools && i < SCHED_MAX_POOLS; i++)
        snprintf(l->conf[l->nr_conf++], VS_NAME_SIZE, "%s", cfg->pools[i].name);
}

void
live_save(struct live *l)
{
    uint64_t changes = sched_changes(l->ctx->sched);
    struct json_object *rec;
    char err[PATH_MAX + 128];

    if (changes == l->saved && l->ok)
        return;
    rec = livefile_snapshot(l->ctx->sched, l->conf, l->nr_conf);
    if (livefile_save(l->path, rec, err, sizeof(err)) < 0) {
        if (l->ok)
            log_warnx("live record: %s: a restart would not take up what runs now", err);
        l->ok = false;
    } else {
        if (!l->ok)
            log_info("live record: %s written again", l->path);
        l->ok = true;
        l->saved = changes;
    }
    json_object_put(rec);
}

void
live_changed(void *arg)
{
    live_save(arg);
}

void
live_restore(struct live *l, struct daemon_ctx *ctx, const char *state, const struct config *cfg)
{
    struct restore_result res;
    struct liverec rec;
    char err[512];
    int r;

    l->ctx = ctx;
    live_conf_pools(l, cfg);
    livefile_path(state, l->path, sizeof(l->path));
    r = livefile_load(l->path, &rec, err, sizeof(err));
    if (r == -ENOENT) {
        log_info("live record: none at %s: nothing to take up", l->path);
    } else if (r < 0) {
        char why[PATH_MAX + 64];

        log_warnx("live record %s: %s: nothing taken up from it", l->path, err);
        /* One not safe to read (-EPERM) is not ours to move. */
        if (r != -EPERM && livefile_set_aside(l->path, why, sizeof(why)) == 0)
            log_warnx("live record: kept as %s.bad", l->path);
    } else {
        restore_run(ctx, &rec, l->conf, l->nr_conf, &res);
        log_info("live record: %u domain(s) and %u pool(s) taken up, %u entr%s not (written by "
                 "%s)",
                 res.domains, res.pools, res.dropped, res.dropped == 1 ? "y" : "ies",
                 rec.written_by[0] ? rec.written_by : "an unknown version");
        liverec_free(&rec);
    }
    l->ok = true;
    l->saved = sched_changes(ctx->sched) - 1; /* write it now, whatever happened */
    live_save(l);
}
