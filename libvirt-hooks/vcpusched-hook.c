/* SPDX-License-Identifier: ISC */
/*
 * vcpusched-hook.c - libvirt qemu hook (/etc/libvirt/hooks/qemu.d/50-vcpusched):
 * tells vcpuschedd that a domain started, reconnected, stopped or was
 * released, in one `hook` message carrying the domain's name, the
 * operation and the definition libvirt wrote on stdin. The daemon does
 * the rest (metadata, vCPU threads, pool, attach or detach).
 *
 * It never calls libvirt (libvirt holds the domain's lock while a hook
 * runs), waits at most HOOK_TIMEOUT_MS, and always exits 0, since a
 * failing hook aborts a start and kills the domain on `reconnect`.
 * Problems go to syslog and stderr.
 */
#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "common/names.h"
#include "control/ctl_client.h"

#define HOOK_TIMEOUT_MS 1500                            /* libvirt waits for us with no timeout */
#define HOOK_XML_MAX    (4u << 20)                      /* kept of stdin; the rest is drained */
#define HOOK_NS         "https://vcpusched.org/xmlns/1" /* docs/libvirt.md */

struct hook {
    const char *name, *op, *subop;
    const char *socket;
    char *xml; /* the domain definition from stdin */
    size_t len;
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
 * HOOK_XML_MAX, the rest drained so that libvirt never blocks on us.
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

        if (h->len == cap && cap < HOOK_XML_MAX) {
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
        h->len = HOOK_XML_MAX + 1; /* the parser refuses it before reading */
    return 0;
}

/* The `hook` request; the XML only if the line can carry it (else the daemon reads the status
 * file). */
static struct ctl_request *
hook_request(const struct hook *h, enum ctl_hook_op op)
{
    struct ctl_request *req = calloc(1, sizeof(*req));
    char *line;

    if (req == NULL)
        return NULL;
    req->cmd = CTL_HOOK;
    req->hook_op = op;
    snprintf(req->name, sizeof(req->name), "%s", h->name);
    if (h->len < sizeof(req->xml) && strlen(h->xml) == h->len) {
        memcpy(req->xml, h->xml, h->len + 1);
        line = ctl_request_format(req);
        if (line == NULL || strlen(line) > CTL_LINE_MAX)
            req->xml[0] = '\0';
        free(line);
    }
    return req;
}

static void
hook_send(const struct hook *h, enum ctl_hook_op op)
{
    struct ctl_request *req = hook_request(h, op);
    struct json_object *res = NULL, *done;
    int errnum = 0, r;
    char msg[512] = "";

    if (req == NULL) {
        hook_log(LOG_ERR, "domain %s: out of memory", h->name);
        return;
    }
    r = ctl_client_request(h->socket, HOOK_TIMEOUT_MS, req, &res, &errnum, msg, sizeof(msg));
    if (r == 0 && errnum == 0 && json_object_object_get_ex(res, "done", &done))
        hook_log(LOG_INFO, "domain %s %s: %s", h->name, h->op, json_object_get_string(done));
    else
        hook_log(LOG_ERR, "domain %s %s: %s: %s", h->name, h->op,
                 r < 0 ? h->socket : ctl_errno_name(errnum), msg);
    json_object_put(res);
    free(req);
}

static bool
op_is(const struct hook *h, const char *op, const char *subop)
{
    return strcmp(h->op, op) == 0 && strcmp(h->subop, subop) == 0;
}

/* The operation to tell the daemon about, or -1 for none. */
static int
hook_op(const struct hook *h)
{
    enum ctl_hook_op op;

    if ((op_is(h, "started", "begin") || op_is(h, "reconnect", "begin") ||
         op_is(h, "stopped", "end") || op_is(h, "release", "end")) &&
        ctl_hook_op_parse(h->op, &op) == 0)
        return (int)op;
    return -1;
}

int
main(int argc, char **argv)
{
    struct hook *h = calloc(1, sizeof(*h));
    int op;

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
    op = hook_op(h);
    if (op < 0) {
        free(h);
        return 0;
    }
    if (!names_valid(h->name)) {
        hook_log(LOG_ERR, "domain name not accepted by vcpusched (1-63 of " NAMES_CHARS ")");
        free(h);
        return 0;
    }
    if (stdin_read(h) < 0)
        hook_log(LOG_ERR, "domain %s: cannot read the domain XML: out of memory", h->name);
    /*
     * Not a parse: a domain whose definition never names our namespace has
     * no <vs:sched> and is none of our business (no round trip, no log
     * line per VM when the daemon is down). The daemon parses the rest.
     */
    else if (memmem(h->xml, h->len > HOOK_XML_MAX ? HOOK_XML_MAX : h->len, HOOK_NS,
                    strlen(HOOK_NS)) != NULL)
        hook_send(h, (enum ctl_hook_op)op);
    free(h->xml);
    free(h);
    closelog();
    return 0;
}
