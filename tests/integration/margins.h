/* SPDX-License-Identifier: ISC */
/*
 * margins.h - the C tests' side of tests/integration/vstest.py's within():
 * a deadline stretched under a sanitizer, and a timing check that asserts
 * and writes what it measured, its bound and its margin to the suite's
 * margins file (VCPUSCHED_MARGINS, JSON lines; scripts/margins.py).
 */
#ifndef VCPUSCHED_TEST_MARGINS_H
#define VCPUSCHED_TEST_MARGINS_H

#include <check.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Deadlines stretch 3x under a sanitizer, as vstest.stretch() does. */
static inline uint64_t
margin_stretch_ms(uint64_t ms)
{
    const char *san = getenv("VCPUSCHED_SANITIZER");

    return san != NULL && san[0] != '\0' ? 3 * ms : ms;
}

/* One JSON line, appended in one write (atomic beside other tests'). */
static inline void
margin_record(const char *test, const char *check, double got, double hi, const char *why)
{
    const char *path = getenv("VCPUSCHED_MARGINS"), *ctest = getenv("VCPUSCHED_TEST");
    char line[1024];
    int n, fd;

    if (path == NULL || path[0] == '\0')
        return;
    n = snprintf(line, sizeof(line),
                 "{\"ctest\": \"%s\", \"test\": \"%s\", \"check\": \"%s\", \"got\": %g, "
                 "\"lo\": null, \"hi\": %g, \"margin\": %g, \"scale\": %g, \"rel\": %g, "
                 "\"noise\": null, \"ok\": %s, \"why\": \"%s\", \"attempt\": 1}\n",
                 ctest != NULL ? ctest : "", test, check, got, hi, hi - got, hi, (hi - got) / hi,
                 got <= hi ? "true" : "false", why);
    fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    if (n > 0 && (size_t)n < sizeof(line))
        (void)!write(fd, line, (size_t)n);
    close(fd);
}

/* Assert got <= hi (a time in ms, a bound in ms) and record the check. */
#define MARGIN_MS_AT_MOST(test, check, got, hi, why)                                               \
    do {                                                                                           \
        double got_ = (double)(got), hi_ = (double)(hi);                                           \
        margin_record((test), (check), got_, hi_, (why));                                          \
        ck_assert_msg(got_ <= hi_, "%s: %.0f ms, bound %.0f ms", (check), got_, hi_);              \
    } while (0)

#endif
