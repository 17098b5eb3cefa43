/* SPDX-License-Identifier: ISC */
/*
 * notify.h - tell a service manager how the daemon is doing: systemd's
 * sd_notify(3) datagram protocol ("READY=1", "RELOADING=1", "STOPPING=1",
 * "STATUS=..."), written to $NOTIFY_SOCKET without linking libsystemd.
 */
#ifndef VCPUSCHED_NOTIFY_H
#define VCPUSCHED_NOTIFY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Send `state` (newline-separated assignments) to $NOTIFY_SOCKET.
 * Returns 1 when sent, 0 when no service manager listens (the variable
 * is unset or empty), -errno with a message in err otherwise.
 */
int notify_send(const char *state, char *err, size_t errlen);

/*
 * The service manager's watchdog (systemd's WatchdogSec=): from the values
 * of WATCHDOG_USEC and WATCHDOG_PID (either may be NULL), the interval in
 * microseconds within which "WATCHDOG=1" must come from process `self`;
 * 0 when there is none (unset, malformed, zero, or meant for another pid).
 */
uint64_t notify_watchdog_usec(const char *usec, const char *pid, pid_t self);

#endif /* VCPUSCHED_NOTIFY_H */
