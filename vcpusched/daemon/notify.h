/* SPDX-License-Identifier: ISC */
/*
 * notify.h - tell a service manager how the daemon is doing: systemd's
 * sd_notify(3) datagram protocol ("READY=1", "RELOADING=1", "STOPPING=1",
 * "STATUS=..."), written to $NOTIFY_SOCKET without linking libsystemd.
 */
#ifndef VCPUSCHED_NOTIFY_H
#define VCPUSCHED_NOTIFY_H

#include <stddef.h>

/*
 * Send `state` (newline-separated assignments) to $NOTIFY_SOCKET.
 * Returns 1 when sent, 0 when no service manager listens (the variable
 * is unset or empty), -errno with a message in err otherwise.
 */
int notify_send(const char *state, char *err, size_t errlen);

#endif /* VCPUSCHED_NOTIFY_H */
