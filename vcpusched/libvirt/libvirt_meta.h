/* SPDX-License-Identifier: ISC */
/*
 * libvirt_meta.h - the libvirt XML that vcpusched reads (docs/libvirt.md):
 * its <vs:sched> metadata element, from a domain definition or from
 * virDomainGetMetadata, and libvirt's status file /run/libvirt/qemu/NAME.xml
 * (QEMU pid, vCPU thread ids). Pure: libxml2 only, no I/O, no logging, so
 * the daemon and the unit tests share one parser.
 *
 * Call xmlInitParser() once before threads use these functions.
 */
#ifndef VCPUSCHED_LIBVIRT_META_H
#define VCPUSCHED_LIBVIRT_META_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/kv.h"
#include "common/limits.h"
#include "common/names.h"

#define LIBVIRT_META_NS      "https://vcpusched.org/xmlns/1"
#define LIBVIRT_META_PREFIX  "vs"
#define LIBVIRT_META_ELEMENT "sched"
/* A domain definition is a few kB; a status file with QEMU's flags ~10 kB. */
#define LIBVIRT_XML_MAX   ((size_t)4 << 20)
#define LIBVIRT_VCPUS_MAX VS_THREADS_MAX /* vCPU threads one attach can carry */
#define LIBVIRT_NAME_MAX  256            /* libvirt domain names as found (not checked) */

/*
 * Our metadata element, checked: pool and policy names and every other
 * attribute as a domain parameter (key, value), in document order. What a
 * parameter means is checked later by the daemon against the policy.
 */
struct libvirt_meta {
    bool present;             /* <vs:sched> was found */
    char pool[VS_NAME_SIZE];  /* "" when not given */
    char policy[VS_KEY_SIZE]; /* "" when not given */
    size_t nr_params;
    char keys[VS_PARAMS_MAX][VS_KEY_SIZE];
    char vals[VS_PARAMS_MAX][VS_VALUE_SIZE];
};

/* What libvirt's status file says about a running domain. */
struct libvirt_status {
    char name[LIBVIRT_NAME_MAX]; /* <domain><name>, cut to fit */
    pid_t pid;                   /* QEMU (<domstatus pid>) */
    unsigned int nr_vcpus;
    unsigned int ids[LIBVIRT_VCPUS_MAX]; /* libvirt vCPU ids, ascending */
    pid_t tids[LIBVIRT_VCPUS_MAX];       /* their threads, same order */
    struct libvirt_meta meta;            /* from the embedded <domain> */
};

/*
 * A whole domain definition (the hook's stdin, virDomainGetXMLDesc): find
 * our element among the children of <metadata>. Elements of other
 * namespaces are ignored; without ours (no <metadata>, an empty one, or
 * only other namespaces) m->present is false and the call succeeds.
 * Errors (-EINVAL, err says where and why): not well-formed XML (including
 * duplicate attributes), a DTD, a root other than <domain>, two elements
 * in our namespace, an element of ours other than <sched>, or a <sched>
 * that breaks the rules of docs/libvirt.md; -E2BIG for more than
 * VS_PARAMS_MAX parameters or a document over LIBVIRT_XML_MAX. On error
 * *m is cleared.
 */
int libvirt_meta_parse_domain(const char *xml, size_t len, struct libvirt_meta *m, char *err,
                              size_t errlen);

/*
 * The element alone, as virDomainGetMetadata returns it (libvirt drops the
 * prefix: <sched policy="credit"/>, in our namespace or none). NULL or
 * blank text means no element (m->present false). Errors as above.
 */
int libvirt_meta_parse_element(const char *xml, size_t len, struct libvirt_meta *m, char *err,
                               size_t errlen);

/*
 * libvirt's status file of a running domain: <domstatus pid> and
 * <vcpus><vcpu id pid/>, sorted by id, plus the metadata of the embedded
 * definition. Errors: -EINVAL (malformed, a missing or bad pid, a vCPU
 * id twice, a thread id twice, bad metadata), -ESRCH (no vCPU thread ids:
 * single-threaded TCG, whose ids libvirt drops; st->pid is still set when
 * it was readable), -E2BIG.
 */
int libvirt_meta_parse_status(const char *xml, size_t len, struct libvirt_status *st, char *err,
                              size_t errlen);

/* A pool of the daemon, as the choice below sees it. */
struct libvirt_pool {
    const char *name;
    const char *policy;
};

/*
 * The pool a domain with metadata `m` goes to, given the daemon's pools
 * pools[0..n) and the pool it is in now (NULL if not attached): the named
 * pool; else the current pool if it runs the named policy (or none is
 * named), else the first pool that runs it, else the current pool, else
 * the first pool. A named policy is a preference: a pool that changed
 * policy never leaves a domain unmanaged (docs/libvirt.md). Writes the
 * name to `pool`. Returns 0, or 1 when the pool runs another policy than
 * the one named (`note` says so); -ENOENT (no such pool, no pools).
 */
int libvirt_meta_choose_pool(const struct libvirt_meta *m, const struct libvirt_pool *pools,
                             size_t n, const char *current, char *pool, size_t len, char *note,
                             size_t notelen);

/* "pool=main policy=credit weight=512" (only what is given), for messages. */
void libvirt_meta_format(const struct libvirt_meta *m, char *buf, size_t len);

#endif /* VCPUSCHED_LIBVIRT_META_H */
