/* SPDX-License-Identifier: ISC */
/*
 * notify.c - see notify.h. The protocol is one datagram per update on a
 * unix socket, a path or (leading '@') an abstract name; systemd documents
 * it as stable, so a dozen lines spare the daemon a libsystemd dependency
 * on hosts that do not run systemd at all.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "notify.h"

int
notify_send(const char *state, char *err, size_t errlen)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    socklen_t salen;
    size_t len;
    ssize_t n;
    int fd, e;

    if (path == NULL || path[0] == '\0')
        return 0;
    len = strlen(path);
    if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sa.sun_path)) {
        snprintf(err, errlen, "NOTIFY_SOCKET '%s' is not a unix socket path", path);
        return -EINVAL;
    }
    memcpy(sa.sun_path, path, len);
    if (path[0] == '@')
        sa.sun_path[0] = '\0'; /* abstract: the name is exactly len bytes */
    salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (path[0] == '/'));
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        e = errno;
        snprintf(err, errlen, "notify socket: %s", strerror(e));
        return -e;
    }
    n = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, salen);
    e = errno;
    close(fd);
    if (n < 0) {
        snprintf(err, errlen, "notify %s: %s", path, strerror(e));
        return -e;
    }
    return 1;
}

/* A decimal number, all of s; false otherwise. */
static bool
parse_u64(const char *s, uint64_t *out)
{
    char *end;

    if (s == NULL || *s < '0' || *s > '9')
        return false;
    errno = 0;
    *out = strtoull(s, &end, 10);
    return errno == 0 && *end == '\0';
}

uint64_t
notify_watchdog_usec(const char *usec, const char *pid, pid_t self)
{
    uint64_t us, p;

    if (!parse_u64(usec, &us))
        return 0;
    if (pid != NULL && (!parse_u64(pid, &p) || p != (uint64_t)self))
        return 0;
    return us;
}
