/* SPDX-License-Identifier: ISC */
/*
 * log.c - see log.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "log.h"

/* Written once by log_init before threads exist, read-only afterwards. */
static struct {
    const char *procname;
    int foreground;
    int verbosity;
} log_conf = {"vcpusched", 1, 0};

void
log_init(const char *procname, int foreground, int verbosity)
{
    log_conf.procname = procname;
    log_conf.foreground = foreground;
    log_conf.verbosity = verbosity;
    if (!foreground)
        openlog(procname, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

int
log_verbosity(void)
{
    return log_conf.verbosity;
}

static void __attribute__((format(printf, 2, 0)))
vlog(int pri, const char *fmt, va_list ap, const char *suffix)
{
    char msg[1024];

    vsnprintf(msg, sizeof(msg), fmt, ap);
    if (log_conf.foreground) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        fprintf(stderr, "%s[%ld.%03ld]: %s%s%s\n", log_conf.procname, (long)ts.tv_sec,
                ts.tv_nsec / 1000000, msg, suffix ? ": " : "", suffix ? suffix : "");
    } else {
        syslog(pri, "%s%s%s", msg, suffix ? ": " : "", suffix ? suffix : "");
    }
}

void
log_warn(const char *fmt, ...)
{
    int saved = errno;
    va_list ap;

    va_start(ap, fmt);
    vlog(LOG_WARNING, fmt, ap, strerror(saved));
    va_end(ap);
    errno = saved;
}

void
log_warnx(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vlog(LOG_WARNING, fmt, ap, NULL);
    va_end(ap);
}

void
log_info(const char *fmt, ...)
{
    va_list ap;

    if (log_conf.verbosity < LOG_VERBOSE_INFO && log_conf.foreground == 0)
        return;
    va_start(ap, fmt);
    vlog(LOG_INFO, fmt, ap, NULL);
    va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
    va_list ap;

    if (log_conf.verbosity < LOG_VERBOSE_DEBUG)
        return;
    va_start(ap, fmt);
    vlog(LOG_DEBUG, fmt, ap, NULL);
    va_end(ap);
}

void
fatal(const char *fmt, ...)
{
    int saved = errno;
    va_list ap;

    va_start(ap, fmt);
    vlog(LOG_CRIT, fmt, ap, strerror(saved));
    va_end(ap);
    exit(1);
}

void
fatalx(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vlog(LOG_CRIT, fmt, ap, NULL);
    va_end(ap);
    exit(1);
}
