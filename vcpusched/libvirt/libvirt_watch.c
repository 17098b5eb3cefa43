/* SPDX-License-Identifier: ISC */
/*
 * libvirt_watch.c - the daemon's libvirt watcher (libvirt_watch.h). One thread runs
 * libvirt's default event loop; every callback runs on it. It reads what
 * only libvirt can tell (live metadata, lifecycle) and hands it to the
 * daemon's ops, which decide and act (docs/libvirt.md): not attached +
 * element -> attach; attached -> set the parameters, or move the domain
 * atomically when its pool changes; element removed -> detach. Lifecycle
 * STARTED attaches (a backstop for a missing hook), STOPPED detaches.
 */
#include <errno.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "libvirt_meta.h"
#include "libvirt_watch.h"

#define WATCH_TICK_MS        250  /* loop wake-up: stop requests and reconnect timing */
#define WATCH_BACKOFF_MIN_MS 500  /* first retry after libvirtd went away */
#define WATCH_BACKOFF_MAX_MS 5000 /* cap: libvirtd restarts take a few seconds */
#define WATCH_KEEPALIVE_S    5    /* probe interval; dead after 3 unanswered */

struct libvirt_watch {
    char uri[256];
    const struct libvirt_watch_ops *ops;
    void *ctx;
    pthread_t thread;
    atomic_bool stop;
    atomic_bool closed; /* set by the close callback, acted on by the loop */
    virConnectPtr conn;
    int cb_meta, cb_life, timer;
    unsigned int backoff_ms;
    struct timespec next_try;
    bool was_connected; /* for "reconnected" vs "connected" */
    bool down_logged;   /* one line per outage, not one per retry */
    char why[256];      /* the last connection error */
};

static const char *
last_error(void)
{
    virErrorPtr e = virGetLastError();

    return e != NULL && e->message != NULL ? e->message : "unknown libvirt error";
}

/* libvirt's default handler prints every error to stderr; we log our own. */
static void
quiet_errors(void *opaque, virErrorPtr e)
{
    (void)opaque;
    (void)e;
}

/* Hand domain `name`'s metadata `m` to the daemon and log what it did. */
static void
watch_apply(struct libvirt_watch *w, const char *name, const struct libvirt_meta *m,
            enum libvirt_sync mode)
{
    char msg[512] = "", desc[256], what[128] = "";
    int r;

    libvirt_meta_format(m, desc, sizeof(desc));
    r = w->ops->sync(w->ctx, name, m, mode, what, sizeof(what), msg, sizeof(msg));
    if (r < 0)
        log_warnx("libvirt domain %s: metadata not applied, nothing changed (%s): %s", name, desc,
                  msg);
    else if (what[0] != '\0')
        log_info("libvirt domain %s: %s (%s)", name, what, desc[0] ? desc : "defaults");
}

/*
 * Read domain `dom`'s live metadata and apply it. A missing element is
 * "no metadata"; an invalid one is one error line and changes nothing.
 */
static void
watch_domain_sync(struct libvirt_watch *w, virDomainPtr dom, enum libvirt_sync mode)
{
    const char *name = virDomainGetName(dom);
    struct libvirt_meta *m = calloc(1, sizeof(*m));
    char err[512];
    char *xml;

    if (m == NULL || name == NULL || !names_valid(name)) {
        if (m != NULL && name != NULL && mode == LIBVIRT_SYNC_FULL)
            log_warnx("libvirt domain: a name vcpusched does not accept (1-63 of "
                      "A-Za-z0-9_.:+@-): ignored");
        free(m);
        return;
    }
    xml = virDomainGetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, LIBVIRT_META_NS,
                               VIR_DOMAIN_AFFECT_LIVE);
    if (xml == NULL && virGetLastErrorCode() != VIR_ERR_NO_DOMAIN_METADATA) {
        log_warnx("libvirt domain %s: read metadata: %s", name, last_error());
    } else if (libvirt_meta_parse_element(xml, xml ? strlen(xml) : 0, m, err, sizeof(err)) < 0) {
        log_warnx("libvirt domain %s: invalid vcpusched metadata, nothing changed: %s", name, err);
        w->ops->invalid(w->ctx, name, err);
    } else {
        watch_apply(w, name, m, mode);
    }
    free(xml);
    free(m);
}

static int
on_metadata(virConnectPtr conn, virDomainPtr dom, int type, const char *nsuri, void *opaque)
{
    (void)conn;
    if (type == VIR_DOMAIN_METADATA_ELEMENT && nsuri != NULL &&
        strcmp(nsuri, LIBVIRT_META_NS) == 0 && virDomainIsActive(dom) == 1)
        watch_domain_sync(opaque, dom, LIBVIRT_SYNC_FULL);
    return 0;
}

static int
on_lifecycle(virConnectPtr conn, virDomainPtr dom, int event, int detail, void *opaque)
{
    struct libvirt_watch *w = opaque;
    const char *name = virDomainGetName(dom);
    char msg[512];
    int r;

    (void)conn;
    (void)detail;
    if (event == VIR_DOMAIN_EVENT_STARTED) {
        watch_domain_sync(w, dom, LIBVIRT_SYNC_ATTACH_ONLY);
    } else if (event == VIR_DOMAIN_EVENT_STOPPED && name != NULL && names_valid(name)) {
        r = w->ops->stopped(w->ctx, name, msg, sizeof(msg));
        if (r == 0)
            log_info("libvirt domain %s: stopped: detached", name);
        else if (r != -ENOENT)
            log_warnx("libvirt domain %s: stopped: detach: %s", name, msg);
    }
    return 0;
}

static void
on_close(virConnectPtr conn, int reason, void *opaque)
{
    struct libvirt_watch *w = opaque;

    (void)conn;
    (void)reason;
    atomic_store(&w->closed, true); /* the loop tears down: not allowed in here */
}

/* --- connection ---------------------------------------------------------- */

/* Every running domain with metadata and not attached gets attached. */
static void
watch_resync(struct libvirt_watch *w)
{
    virDomainPtr *doms = NULL;
    int n = virConnectListAllDomains(w->conn, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);

    if (n < 0) {
        log_warnx("libvirt %s: list domains: %s", w->uri, last_error());
        return;
    }
    for (int i = 0; i < n; i++) {
        if (!atomic_load(&w->stop))
            watch_domain_sync(w, doms[i], LIBVIRT_SYNC_ATTACH_ONLY);
        virDomainFree(doms[i]);
    }
    free(doms);
}

static void
watch_disconnect(struct libvirt_watch *w)
{
    if (w->conn == NULL)
        return;
    if (w->cb_meta >= 0)
        virConnectDomainEventDeregisterAny(w->conn, w->cb_meta);
    if (w->cb_life >= 0)
        virConnectDomainEventDeregisterAny(w->conn, w->cb_life);
    virConnectUnregisterCloseCallback(w->conn, on_close);
    virConnectClose(w->conn);
    w->conn = NULL;
    w->cb_meta = w->cb_life = -1;
}

/* Open, register every callback (ids are per connection), resync. */
static int
watch_connect(struct libvirt_watch *w)
{
    w->conn = virConnectOpenReadOnly(w->uri);
    if (w->conn == NULL) {
        snprintf(w->why, sizeof(w->why), "%s", last_error());
        return -1;
    }
    virConnSetErrorFunc(w->conn, NULL, quiet_errors);
    w->cb_meta =
        virConnectDomainEventRegisterAny(w->conn, NULL, VIR_DOMAIN_EVENT_ID_METADATA_CHANGE,
                                         VIR_DOMAIN_EVENT_CALLBACK(on_metadata), w, NULL);
    w->cb_life = virConnectDomainEventRegisterAny(w->conn, NULL, VIR_DOMAIN_EVENT_ID_LIFECYCLE,
                                                  VIR_DOMAIN_EVENT_CALLBACK(on_lifecycle), w, NULL);
    if (w->cb_meta < 0 || w->cb_life < 0 ||
        virConnectRegisterCloseCallback(w->conn, on_close, w, NULL) < 0) {
        snprintf(w->why, sizeof(w->why), "%s", last_error()); /* close resets it */
        watch_disconnect(w);
        return -1;
    }
    /* Remote connections only; a dead libvirtd is then noticed within ~15 s. */
    if (virConnectSetKeepAlive(w->conn, WATCH_KEEPALIVE_S, 3) < 0)
        log_debugx("libvirt %s: no keepalive: %s", w->uri, last_error());
    atomic_store(&w->closed, false);
    log_info("libvirt: %s %s", w->was_connected ? "reconnected to" : "connected to", w->uri);
    w->was_connected = true;
    w->down_logged = false;
    w->backoff_ms = WATCH_BACKOFF_MIN_MS;
    watch_resync(w);
    return 0;
}

static bool
time_reached(const struct timespec *t)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > t->tv_sec || (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
}

static void
retry_later(struct libvirt_watch *w)
{
    clock_gettime(CLOCK_MONOTONIC, &w->next_try);
    w->next_try.tv_sec += w->backoff_ms / 1000;
    w->next_try.tv_nsec += (long)(w->backoff_ms % 1000) * 1000000L;
    if (w->next_try.tv_nsec >= 1000000000L) {
        w->next_try.tv_sec++;
        w->next_try.tv_nsec -= 1000000000L;
    }
    w->backoff_ms =
        w->backoff_ms * 2 > WATCH_BACKOFF_MAX_MS ? WATCH_BACKOFF_MAX_MS : w->backoff_ms * 2;
}

/* Connected, or due for a retry: one step of the connection's state machine. */
static void
watch_step(struct libvirt_watch *w)
{
    if (w->conn != NULL && atomic_load(&w->closed)) {
        log_warnx("libvirt: connection to %s lost: reconnecting", w->uri);
        watch_disconnect(w);
        w->backoff_ms = WATCH_BACKOFF_MIN_MS;
        retry_later(w);
        return;
    }
    if (w->conn != NULL || !time_reached(&w->next_try))
        return;
    if (watch_connect(w) == 0)
        return;
    if (!w->down_logged)
        log_warnx("libvirt: cannot connect to %s (retrying every %u s at most): %s", w->uri,
                  WATCH_BACKOFF_MAX_MS / 1000, w->why);
    w->down_logged = true;
    retry_later(w);
}

static void
on_tick(int timer, void *opaque)
{
    (void)timer;
    (void)opaque; /* only wakes the loop up so that it checks its flags */
}

static void *
watch_main(void *arg)
{
    struct libvirt_watch *w = arg;

    w->timer = virEventAddTimeout(WATCH_TICK_MS, on_tick, w, NULL);
    if (w->timer < 0) {
        log_warnx("libvirt: cannot add an event loop timer: watcher stopped");
        return NULL;
    }
    while (!atomic_load(&w->stop)) {
        watch_step(w);
        if (virEventRunDefaultImpl() < 0)
            log_warnx("libvirt: event loop: %s", last_error());
    }
    watch_disconnect(w);
    virEventRemoveTimeout(w->timer);
    return NULL;
}

int
libvirt_watch_start(struct libvirt_watch **out, const char *uri,
                    const struct libvirt_watch_ops *ops, void *ctx, char *err, size_t errlen)
{
    struct libvirt_watch *w = calloc(1, sizeof(*w));
    int r;

    *out = NULL;
    if (w == NULL)
        return -ENOMEM;
    snprintf(w->uri, sizeof(w->uri), "%s", uri);
    w->ops = ops;
    w->ctx = ctx;
    w->cb_meta = w->cb_life = -1;
    w->backoff_ms = WATCH_BACKOFF_MIN_MS;
    clock_gettime(CLOCK_MONOTONIC, &w->next_try);
    /* Once, before any connection and before threads use libvirt. */
    if (virInitialize() < 0 || virEventRegisterDefaultImpl() < 0) {
        snprintf(err, errlen, "libvirt: initialise: %s", last_error());
        free(w);
        return -EIO;
    }
    virSetErrorFunc(NULL, quiet_errors);
    r = pthread_create(&w->thread, NULL, watch_main, w);
    if (r != 0) {
        snprintf(err, errlen, "libvirt: start the watcher thread: %s", strerror(r));
        free(w);
        return -r;
    }
    *out = w;
    return 0;
}

void
libvirt_watch_stop(struct libvirt_watch *w)
{
    if (w == NULL)
        return;
    atomic_store(&w->stop, true);
    pthread_join(w->thread, NULL); /* the loop wakes up every WATCH_TICK_MS */
    free(w);
}
