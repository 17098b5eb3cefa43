/* SPDX-License-Identifier: ISC */
/*
 * log.c - see log.h.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

/*
 * Written once by log_init before threads exist, read-only afterwards;
 * but verbosity, which a reload may change while threads log.
 */
static struct {
    const char *procname;
    int foreground;
    int journal; /* stderr is the journal's stream: "<N>" prefixes, no stamps */
    atomic_int verbosity;
} log_conf = {"vcpusched", 1, 0, LOG_VERBOSE_INFO};

/*
 * systemd sets JOURNAL_STREAM to "DEV:INODE" of the stream it connected
 * to stderr; it only counts if stderr is still that stream (not
 * redirected by a shell in between).
 */
static int
log_to_journal(void)
{
    const char *js = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;

    if (js == NULL || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
        return 0;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void
log_init(const char *procname, int foreground, int verbosity)
{
    log_conf.procname = procname;
    log_conf.foreground = foreground;
    log_conf.journal = foreground && log_to_journal();
    atomic_store_explicit(&log_conf.verbosity, verbosity, memory_order_relaxed);
    if (!foreground)
        openlog(procname, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

int
log_verbosity(void)
{
    return atomic_load_explicit(&log_conf.verbosity, memory_order_relaxed);
}

void
log_set_verbosity(int verbosity)
{
    atomic_store_explicit(&log_conf.verbosity, verbosity, memory_order_relaxed);
}

static void __attribute__((format(printf, 2, 0)))
vlog(int pri, const char *fmt, va_list ap, const char *suffix)
{
    char msg[1024];

    vsnprintf(msg, sizeof(msg), fmt, ap);
    if (log_conf.journal) {
        /* The journal stamps and names the line; <N> is its priority. */
        fprintf(stderr, "<%d>%s%s%s\n", pri, msg, suffix ? ": " : "", suffix ? suffix : "");
    } else if (log_conf.foreground) {
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

    if (log_verbosity() < LOG_VERBOSE_INFO)
        return;
    va_start(ap, fmt);
    vlog(LOG_INFO, fmt, ap, NULL);
    va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
    va_list ap;

    if (log_verbosity() < LOG_VERBOSE_DEBUG)
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
