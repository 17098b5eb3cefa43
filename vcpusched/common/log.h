/* SPDX-License-Identifier: ISC */
/*
 * log.h - logging in the OpenBSD style: to stderr in the foreground (with
 * "<N>" priority prefixes when stderr is systemd's journal stream), to
 * syslog otherwise. The one module with process-wide state (its
 * settings), set by log_init before any thread starts; the verbosity may
 * change later (log_set_verbosity, on reload).
 *
 * Messages are lower-case, subject first, no trailing period:
 *   log_warn("vm %s vcpu %u: set affinity", name, i);   (adds strerror)
 */
#ifndef VCPUSCHED_LOG_H
#define VCPUSCHED_LOG_H

#include <stdarg.h>

#define LOG_VERBOSE_WARN  0 /* warnings and errors only */
#define LOG_VERBOSE_INFO  1
#define LOG_VERBOSE_DEBUG 2

void log_init(const char *procname, int foreground, int verbosity);
int log_verbosity(void);
void log_set_verbosity(int verbosity);
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void fatalx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Skip argument formatting when debug is off (Redis serverLog). */
#define log_debugx(...)                                                                            \
    do {                                                                                           \
        if (log_verbosity() >= LOG_VERBOSE_DEBUG)                                                  \
            log_debug(__VA_ARGS__);                                                                \
    } while (0)

#endif /* VCPUSCHED_LOG_H */
