/* SPDX-License-Identifier: ISC */
/*
 * rtsafe.c - is turning real-time throttling off safe here; see rtsafe.h.
 */
#include <stdio.h>

#include "rtsafe.h"

bool
rtsafe_fair_server(const char *release, int debugfs)
{
    unsigned int major = 0, minor = 0;

    if (debugfs >= 0)
        return debugfs == 1;
    if (release == NULL || sscanf(release, "%u.%u", &major, &minor) != 2)
        return false; /* unknown: assume the worst */
    return major > 6 || (major == 6 && minor >= 12);
}

bool
rtsafe_unlimited(int64_t runtime_us, int64_t period_us)
{
    return runtime_us < 0 || (period_us > 0 && runtime_us >= period_us);
}
