/* SPDX-License-Identifier: ISC */
/*
 * ctl_fetch.c - `stats` and `list` from the daemon (ctl_fetch.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <json-c/json.h>

#include "common/clock.h"
#include "control/ctl_client.h"
#include "control/ctl_json.h"
#include "ctl_fetch.h"

/* One read-only request; -EPROTO if its result lacks the array `key`. */
static int
fetch_one(const char *path, int timeout_ms, enum ctl_cmd cmd, const char *key,
          struct json_object **out, int *errnum, char *err, size_t errlen)
{
    struct ctl_request *req = calloc(1, sizeof(*req)); /* large: tids, params */
    int r;

    *out = NULL;
    if (req == NULL) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    req->cmd = cmd;
    r = ctl_client_request(path, timeout_ms, req, out, errnum, err, errlen);
    free(req);
    if (r < 0 || *errnum != 0)
        return r;
    if (ctl_json_array(*out, key) == NULL) {
        snprintf(err, errlen, "%s: the reply has no %s array", ctl_cmd_name(cmd), key);
        json_object_put(*out);
        *out = NULL;
        return -EPROTO;
    }
    return 0;
}

int
ctl_fetch_sample(const char *path, int timeout_ms, struct json_object **stats,
                 struct json_object **list, int *errnum, char *err, size_t errlen)
{
    uint64_t deadline = clock_mono_ns() + (uint64_t)timeout_ms * 1000000;
    int r;

    *list = NULL;
    *errnum = 0;
    r = fetch_one(path, timeout_ms, CTL_STATS, "pools", stats, errnum, err, errlen);
    if (r == 0 && *errnum == 0) {
        /* What is left of the one timeout, at least 1 ms. */
        uint64_t now = clock_mono_ns();
        int left = now < deadline ? (int)((deadline - now + 999999) / 1000000) : 1;

        r = fetch_one(path, left, CTL_LIST, "domains", list, errnum, err, errlen);
    }
    if ((r < 0 || *errnum != 0) && *stats != NULL) {
        json_object_put(*stats);
        *stats = NULL;
    }
    return r;
}

int
ctl_fetch_report(const char *what, const char *path, int r, const char *err)
{
    if (r < 0) {
        fprintf(stderr, "vcpuschedctl: %s: cannot talk to vcpuschedd at %s: %s%s\n", what, path,
                err, r == -ENOENT || r == -ECONNREFUSED ? " (is it running?)" : "");
        return EXIT_UNREACHABLE;
    }
    fprintf(stderr, "vcpuschedctl: %s: %s\n", what, err);
    return EXIT_REPLY;
}
