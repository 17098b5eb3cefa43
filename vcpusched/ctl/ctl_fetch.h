/* SPDX-License-Identifier: ISC */
/*
 * ctl_fetch.h - one sample of the daemon's state for `top` and the
 * metrics: the results of `stats` and `list`, checked for the arrays
 * their readers walk.
 */
#ifndef VCPUSCHED_CTL_FETCH_H
#define VCPUSCHED_CTL_FETCH_H

#include <stddef.h>

/* vcpuschedctl's exit statuses (vcpuschedctl(8)). */
#define EXIT_REPLY       1 /* the daemon answered with an error */
#define EXIT_USAGE       2 /* the command line is wrong */
#define EXIT_UNREACHABLE 3 /* no answer: no daemon, no access, timeout, garbage */

struct json_object;

/*
 * Ask the daemon at `path` for `stats`, then `list`, both within
 * `timeout_ms`. Returns 0 with *stats and *list set (the caller puts
 * them), or with *errnum > 0 and `err` holding the daemon's message if it
 * answered with an error; -errno with `err` saying why if it could not be
 * reached or answered garbage (-EPROTO: not the shape docs/protocol.md
 * gives). Nothing is returned in *stats or *list unless both arrived.
 */
int ctl_fetch_sample(const char *path, int timeout_ms, struct json_object **stats,
                     struct json_object **list, int *errnum, char *err, size_t errlen);

/*
 * Say on stderr why a call about `what` ("list", "top") failed: `r` < 0
 * the daemon at `path` could not be reached or answered garbage, else it
 * answered error `errnum`; `err` is the message. Returns the exit status.
 */
int ctl_fetch_report(const char *what, const char *path, int r, const char *err);

#endif /* VCPUSCHED_CTL_FETCH_H */
