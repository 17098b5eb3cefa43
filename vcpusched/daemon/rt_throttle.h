/* SPDX-License-Identifier: ISC */
/*
 * rt_throttle.h - real-time throttling (sched_rt_runtime_us) at start-up:
 * what the configuration may do with it on this kernel (host/rtsafe.h),
 * setting it, and saying how it stands.
 */
#ifndef VCPUSCHED_RT_THROTTLE_H
#define VCPUSCHED_RT_THROTTLE_H

#include <stddef.h>

#include "config.h"
#include "host/statefile.h"

/*
 * Refuse (-EINVAL, the reason in err) an rt-runtime-us that turns
 * throttling off on a kernel without the fair server, unless the
 * configuration says rt-runtime-unsafe yes. Changes nothing.
 */
int rt_throttle_check(const struct config *c, char *err, size_t errlen);
/*
 * Apply rt-runtime-us (the original saved in the state file, restored at
 * exit or by the guardian) and log the setting, with what it means here.
 */
void rt_throttle_setup(struct statefile *sf, const struct config *c);

#endif /* VCPUSCHED_RT_THROTTLE_H */
