/* SPDX-License-Identifier: ISC */
/*
 * unattached.h - running libvirt domains opted in by their metadata that the
 * daemon does not manage, each with why: an operator who wrote <vs:sched>
 * and sees a slow VM must find the refusal without reading the journal
 * (`stats`, the metric vcpusched_libvirt_unattached). Written by the libvirt
 * watcher's thread and the control thread (the hook), read for `stats`;
 * locked inside. Bounded: past UNATTACHED_MAX domains the oldest entry gives
 * way, counted as dropped.
 */
#ifndef VCPUSCHED_UNATTACHED_H
#define VCPUSCHED_UNATTACHED_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#define UNATTACHED_MAX 1024 /* a few hundred domains a host; one entry each at most */

enum unattached_reason {
    UNATTACHED_METADATA, /* the element does not parse: nothing applied */
    UNATTACHED_POOL,     /* no pool fits what it names (pool, policy) */
    UNATTACHED_THREADS,  /* libvirt's status file: no QEMU or vCPU threads to take */
    UNATTACHED_ATTACH,   /* the core refused the attach (parameters, limits) */
};

struct unattached;

/* Returns 0, or -ENOMEM. */
int unattached_create(struct unattached **out);
void unattached_destroy(struct unattached *u);

/*
 * Domain `domain` is opted in and not managed, for `why` (`err`: the
 * refusal's words). A domain already listed keeps its `since`.
 */
void unattached_set(struct unattached *u, const char *domain, enum unattached_reason why,
                    const char *err, int64_t now_ns);
/* Domain `domain` is managed, stopped or no longer opted in. */
void unattached_clear(struct unattached *u, const char *domain);

/*
 * The list, oldest first, as `stats` gives it: {"domains": [{domain,
 * reason, error, since_s}], "dropped": N}. Entries `gone(arg, domain)` says
 * no longer run are removed first (a domain destroyed while libvirtd's
 * events were lost).
 */
struct json_object *unattached_json(struct unattached *u, int64_t now_ns,
                                    bool (*gone)(void *arg, const char *domain), void *arg);

const char *unattached_reason_name(enum unattached_reason why);

#endif /* VCPUSCHED_UNATTACHED_H */
