/* SPDX-License-Identifier: ISC */
/*
 * libvirt_watch.h - the daemon's libvirt watcher (docs/libvirt.md): a thread of
 * its own that follows libvirt's metadata-change and lifecycle events and
 * applies a domain's <vs:sched> metadata as a client of the daemon's own
 * control socket, so that validation and locking stay in one place and
 * neither the dispatchers nor the control thread ever wait on libvirt.
 * It reconnects with back-off when libvirtd goes away and, on every
 * (re)connect, attaches running opted-in domains that are not attached.
 */
#ifndef VCPUSCHED_LIBVIRT_WATCH_H
#define VCPUSCHED_LIBVIRT_WATCH_H

#include <stddef.h>

struct libvirt_watch;

#define LIBVIRT_DEFAULT_URI "qemu:///system"

/*
 * Start watching `uri`, applying changes through the control socket
 * `socket`. libvirtd being down is not an error (the watcher retries).
 * Call after signals are blocked and before the control loop runs.
 * Returns 0, or -ENOTSUP (built without libvirt) / -errno with `err`.
 */
int libvirt_watch_start(struct libvirt_watch **out, const char *uri, const char *socket, char *err,
                        size_t errlen);

/* Stop the thread and close the connection (NULL: nothing to do). */
void libvirt_watch_stop(struct libvirt_watch *w);

#endif /* VCPUSCHED_LIBVIRT_WATCH_H */
