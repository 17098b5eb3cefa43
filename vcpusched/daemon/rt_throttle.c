/* SPDX-License-Identifier: ISC */
/*
 * rt_throttle.c - sched_rt_runtime_us at start-up; see rt_throttle.h. The
 * judgement is host/rtsafe.c's; here is what the running kernel says.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/log.h"
#include "host/rtsafe.h"
#include "rt_throttle.h"

#define RT_PERIOD_PATH "/proc/sys/kernel/sched_rt_period_us"

/* The kernel's release, or "" if unknown. */
static void
kernel_release(char *buf, size_t len)
{
    struct utsname u;

    snprintf(buf, len, "%s", uname(&u) == 0 ? u.release : "");
}

/* Does this kernel have the fair server (host/rtsafe.h)? */
static bool
fair_server_here(void)
{
    char release[sizeof(((struct utsname *)0)->release)];
    int debugfs = -1;

    if (access(RTSAFE_FAIR_SERVER_PATH, F_OK) == 0)
        debugfs = 1;
    else if (access(RTSAFE_DEBUGFS_SCHED, R_OK) == 0)
        debugfs = 0;
    kernel_release(release, sizeof(release));
    return rtsafe_fair_server(release, debugfs);
}

static int64_t
rt_period_us(void)
{
    FILE *f = fopen(RT_PERIOD_PATH, "re");
    int64_t us = 1000000;

    if (f != NULL) {
        if (fscanf(f, "%" SCNd64, &us) != 1)
            us = 1000000;
        fclose(f);
    }
    return us;
}

int
rt_throttle_check(const struct config *c, char *err, size_t errlen)
{
    char release[sizeof(((struct utsname *)0)->release)];

    if (!c->rt_runtime_set || !rtsafe_unlimited(c->rt_runtime_us, rt_period_us()) ||
        c->rt_runtime_unsafe || fair_server_here())
        return 0;
    kernel_release(release, sizeof(release));
    snprintf(err, errlen,
             "rt-runtime-us %" PRId64 " turns real-time throttling off, and this kernel (%s) "
             "has no fair server (Linux < 6.12): a busy managed CPU would never run its "
             "per-CPU kernel threads (RCU stalls hang the host); refused: leave "
             "rt-runtime-us out, or force it with rt-runtime-unsafe yes",
             c->rt_runtime_us, release);
    return -EINVAL;
}

void
rt_throttle_setup(struct statefile *sf, const struct config *c)
{
    bool fair = fair_server_here();
    int64_t rt, period = rt_period_us();

    if (rt_runtime_read(&rt) < 0) {
        log_warnx("cannot read sched_rt_runtime_us");
        return;
    }
    if (c->rt_runtime_set && rt != c->rt_runtime_us) {
        if (statefile_set_rt_runtime(sf, c->rt_runtime_us) < 0)
            fatal("set sched_rt_runtime_us to %" PRId64, c->rt_runtime_us);
        log_info("sched_rt_runtime_us %" PRId64 " -> %" PRId64 " (restored at exit)%s%s", rt,
                 c->rt_runtime_us,
                 c->rt_runtime_us < 0 ? ": real-time throttling off for every group; cgroup v1 "
                                        "cpu.rt_runtime_us files keep their values but are not "
                                        "enforced while it is -1"
                                      : "",
                 rtsafe_unlimited(c->rt_runtime_us, period) && !fair
                     ? " (rt-runtime-unsafe: this kernel has no fair server: busy managed CPUs "
                       "starve its per-CPU threads)"
                     : "");
        return;
    }
    if (rtsafe_unlimited(rt, period) && !fair)
        log_warnx("sched_rt_runtime_us is %" PRId64 " (throttling off) and this kernel has no "
                  "fair server (Linux < 6.12): busy managed CPUs starve its per-CPU threads (RCU "
                  "stalls); set it back to 950000",
                  rt);
    else if (!rtsafe_unlimited(rt, period))
        log_info("sched_rt_runtime_us is %" PRId64 ": real-time threads idle %" PRId64
                 " ms of every second%s",
                 rt, (period - rt) / 1000,
                 fair ? " (see --rt-runtime-us)"
                      : ", which this kernel (no fair server, Linux < 6.12) needs for its "
                        "per-CPU threads: keep it");
}
