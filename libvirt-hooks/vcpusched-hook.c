/* SPDX-License-Identifier: ISC */
/*
 * vcpusched-hook.c - libvirt qemu hook (/etc/libvirt/hooks/qemu.d/50-vcpusched):
 * tells vcpuschedd about domains that opted in with <vs:sched> metadata.
 * `started begin` and `reconnect begin` attach the domain's vCPU threads
 * (from libvirt's status file), `stopped end` and `release end` detach it.
 *
 * It only notifies: it never calls libvirt (libvirt holds the domain's
 * lock while a hook runs), waits at most HOOK_TIMEOUT_MS per request, and
 * always exits 0, since a failing hook aborts a start and kills the domain
 * on `reconnect`. Problems go to syslog and stderr.
 */
#include <errno.h>
#include <json-c/json.h>
#include <libxml/parser.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "control/ctl_client.h"
#include "libvirt/libvirt_meta.h"
#include "libvirt/libvirt_vcpus.h"

#define HOOK_TIMEOUT_MS 1500 /* per request: libvirt waits for us with no timeout */

struct hook {
    const char *name, *op, *subop;
    const char *socket;
    char *xml; /* the domain definition from stdin */
    size_t len;
    struct libvirt_meta meta;
};

static void __attribute__((format(printf, 2, 3))) hook_log(int prio, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    syslog(prio, "%s", msg);
    fprintf(stderr, "vcpusched-hook: %s\n", msg);
}

/*
 * All of stdin (libvirt writes the XML, then closes): kept up to
 * LIBVIRT_XML_MAX, the rest drained so that libvirt never blocks on us.
 */
static int
stdin_read(struct hook *h)
{
    size_t cap = 65536;
    bool over = false;
    char junk[4096];

    h->xml = malloc(cap + 1);
    if (h->xml == NULL)
        return -ENOMEM;
    for (;;) {
        ssize_t r;

        if (h->len == cap && cap < LIBVIRT_XML_MAX) {
            char *nb = realloc(h->xml, cap * 2 + 1);

            if (nb == NULL)
                return -ENOMEM;
            h->xml = nb;
            cap *= 2;
        }
        if (h->len < cap)
            r = read(STDIN_FILENO, h->xml + h->len, cap - h->len);
        else
            r = read(STDIN_FILENO, junk, sizeof(junk));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (h->len < cap)
            h->len += (size_t)r;
        else
            over = true;
    }
    h->xml[h->len] = '\0';
    if (over)
        h->len = LIBVIRT_XML_MAX + 1; /* the parser refuses it before reading */
    return 0;
}

/* One request; returns the daemon's errno (0 ok), or -errno if unreachable. */
static int
hook_call(struct hook *h, const struct ctl_request *req, struct json_object **result, char *msg,
          size_t msglen)
{
    struct json_object *res = NULL;
    int errnum = 0, r;

    r = ctl_client_request(h->socket, HOOK_TIMEOUT_MS, req, &res, &errnum, msg, msglen);
    if (result != NULL)
        *result = res;
    else
        json_object_put(res);
    return r < 0 ? r : errnum;
}

/* The pool the metadata asks for ("" = the daemon's first pool). */
static int
hook_pool(struct hook *h, char *pool, size_t len, char *msg, size_t msglen)
{
    struct ctl_request *req = calloc(1, sizeof(*req));
    struct json_object *res = NULL, *pools;
    int r;

    pool[0] = '\0';
    if (req == NULL)
        return -ENOMEM;
    if (h->meta.pool[0] == '\0' && h->meta.policy[0] == '\0') {
        free(req);
        return 0;
    }
    req->cmd = CTL_POOL;
    req->pool_op = CTL_POOL_LIST;
    r = hook_call(h, req, &res, msg, msglen);
    if (r == 0 && !json_object_object_get_ex(res, "pools", &pools)) {
        snprintf(msg, msglen, "pool list: no pools in the reply");
        r = -EPROTO;
    }
    if (r == 0)
        r = libvirt_meta_choose_pool(&h->meta, pools, NULL, pool, len, msg, msglen);
    json_object_put(res);
    free(req);
    return r;
}

/* started/reconnect: attach an opted-in domain's vCPU threads. */
static void
hook_attach(struct hook *h)
{
    struct ctl_request *req = calloc(1, sizeof(*req));
    char msg[512], desc[256];
    const char *how;
    int r;

    if (req == NULL)
        return;
    r = libvirt_vcpus_find(NULL, h->name, &req->pid, req->tids, VS_THREADS_MAX, &req->nr_tids, &how,
                           NULL, msg, sizeof(msg));
    if (r < 0) {
        hook_log(LOG_ERR, "domain %s: not attached: %s", h->name, msg);
        goto out;
    }
    req->pid = 0; /* tids carry the process; the daemon checks them */
    req->cmd = CTL_ATTACH;
    req->target = CTL_TARGET_TIDS;
    snprintf(req->name, sizeof(req->name), "%s", h->name);
    if ((r = hook_pool(h, req->pool, sizeof(req->pool), msg, sizeof(msg))) != 0)
        goto fail;
    for (size_t i = 0; i < h->meta.nr_params && r == 0; i++)
        r = ctl_request_add_param(req, h->meta.keys[i], h->meta.vals[i], msg, sizeof(msg));
    if (r == 0)
        r = hook_call(h, req, NULL, msg, sizeof(msg));
fail:
    libvirt_meta_format(&h->meta, desc, sizeof(desc));
    if (r == 0)
        hook_log(LOG_INFO, "domain %s: attached %u vcpu thread(s) (from %s) %s", h->name,
                 req->nr_tids, how, desc);
    else if (r == EEXIST)
        hook_log(LOG_INFO, "domain %s: already attached", h->name);
    else
        hook_log(LOG_ERR, "domain %s: not attached (%s): %s: %s", h->name, desc,
                 r < 0 ? h->socket : ctl_errno_name(r), msg);
out:
    free(req);
}

/* stopped/release: detach; not attached is the normal case for release. */
static void
hook_detach(struct hook *h)
{
    struct ctl_request *req = calloc(1, sizeof(*req));
    char msg[512];
    int r;

    if (req == NULL)
        return;
    req->cmd = CTL_DETACH;
    snprintf(req->name, sizeof(req->name), "%s", h->name);
    r = hook_call(h, req, NULL, msg, sizeof(msg));
    if (r == 0)
        hook_log(LOG_INFO, "domain %s: detached", h->name);
    else if (r != ENOENT && (r > 0 || h->meta.present))
        hook_log(LOG_ERR, "domain %s: detach: %s: %s", h->name,
                 r < 0 ? h->socket : ctl_errno_name(r), msg);
    free(req);
}

static bool
op_is(const struct hook *h, const char *op, const char *subop)
{
    return strcmp(h->op, op) == 0 && strcmp(h->subop, subop) == 0;
}

/* Parse stdin; false if this domain is none of our business. */
static bool
hook_read_domain(struct hook *h)
{
    char err[512];

    if (stdin_read(h) < 0) {
        hook_log(LOG_ERR, "domain %s: cannot read the domain XML: out of memory", h->name);
        return false;
    }
    if (libvirt_meta_parse_domain(h->xml, h->len, &h->meta, err, sizeof(err)) < 0) {
        hook_log(LOG_ERR, "domain %s: bad vcpusched metadata, ignored: %s", h->name, err);
        return false;
    }
    return true;
}

int
main(int argc, char **argv)
{
    struct hook *h = calloc(1, sizeof(*h));
    bool attach, detach;

    openlog("vcpusched-hook", LOG_PID, LOG_DAEMON);
    signal(SIGPIPE, SIG_IGN);
    if (h == NULL || argc < 4) {
        hook_log(LOG_ERR, "usage: vcpusched-hook DOMAIN OP SUBOP EXTRA < domain.xml");
        free(h);
        return 0;
    }
    h->name = argv[1];
    h->op = argv[2];
    h->subop = argv[3];
    h->socket = ctl_client_socket_path(NULL);
    attach = op_is(h, "started", "begin") || op_is(h, "reconnect", "begin");
    detach = op_is(h, "stopped", "end") || op_is(h, "release", "end");
    if (!attach && !detach) {
        free(h);
        return 0;
    }
    if (!names_valid(h->name)) {
        hook_log(LOG_ERR, "domain name not accepted by vcpusched (1-63 of A-Za-z0-9_.:+@-)");
        free(h);
        return 0;
    }
    xmlInitParser();
    if (hook_read_domain(h) && attach && h->meta.present)
        hook_attach(h);
    else if (detach)
        hook_detach(h);
    xmlCleanupParser();
    free(h->xml);
    free(h);
    closelog();
    return 0;
}
