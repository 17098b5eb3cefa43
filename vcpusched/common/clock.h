/* SPDX-License-Identifier: ISC */
/*
 * clock.h - CLOCK_MONOTONIC in nanoseconds: the host-wide clock of the
 * daemon's reports (`list`'s now_ns) and of periodic work, never set back.
 */
#ifndef VCPUSCHED_CLOCK_H
#define VCPUSCHED_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t
clock_mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#endif /* VCPUSCHED_CLOCK_H */
