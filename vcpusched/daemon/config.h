/* SPDX-License-Identifier: ISC */
/*
 * config.h - the daemon's configuration: defaults, a config file
 * (vcpuschedd.conf(5), "key value" lines) and command-line options, which
 * override the file.
 */
#ifndef VCPUSCHED_CONFIG_H
#define VCPUSCHED_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/log.h"
#include "events/events.h"
#include "core/sched_core.h"

#define CONFIG_MAX_POOLS      16
#define CONFIG_DEFAULT_SOCKET "/run/vcpusched/control.sock"

struct config_pool {
    char name[64];
    char cpus[256]; /* kernel CPU list */
    char policy[32];
    char params[2048]; /* "k=v k=v" */
    char origin[288];  /* the last line that set it ("FILE:LINE", "--cpus"), for errors */
};

struct config {
    bool foreground;
    bool policies; /* --policies: print every policy's parameters and exit */
    int verbose;   /* -v count: raises log_level */
    int log_level; /* LOG_VERBOSE_WARN, _INFO (default) or _DEBUG (common/log.h) */
    char config_file[256];
    char socket[108];
    char group[64]; /* may use the socket besides root ("" = root only) */
    char state[256];
    char pidfile[256];
    enum sched_pattern pattern;
    int dedicated_cpu; /* -1: the first housekeeping CPU */
    int prio_base;     /* LOW; MID = +1, HIGH = +2 */
    bool rt_runtime_set;
    int64_t rt_runtime_us;
    bool rt_runtime_unsafe; /* allow no throttling on a kernel without the fair server */
    enum events_mode events;
    bool move_rt_cgroup;
    enum cgroup_want park; /* how caps park threads: auto, v1 or v2 */
    uint64_t proc_poll_us;
    char libvirt[256];             /* URI the libvirt watcher follows; "none": no watcher */
    char metrics_file[256];        /* node_exporter textfile ("": none), docs/metrics.md */
    unsigned int metrics_period_s; /* how often it is rewritten */
    unsigned int watchdog_ms;      /* the guardian's bound (host/watchdog.h); 0: off */
    struct config_pool pools[CONFIG_MAX_POOLS];
    unsigned int nr_pools;
    char at[288]; /* where the setting being parsed comes from: a pool's origin */
};

void config_defaults(struct config *c);

/* The log verbosity it asks for: log-level, raised by each -v. */
static inline int
config_verbosity(const struct config *c)
{
    int v = c->log_level + c->verbose;

    return v > LOG_VERBOSE_DEBUG ? LOG_VERBOSE_DEBUG : v;
}
/*
 * Parse the command line (and the file given by --config, applied first).
 * Returns 0, 1 for --help/--version (already printed), or -EINVAL with a
 * message.
 */
int config_parse(struct config *c, int argc, char **argv, char *err, size_t errlen);
int config_load_file(struct config *c, const char *path, char *err, size_t errlen);
/*
 * A configuration file must choose the managed CPUs: a pool or cpus line
 * (or --cpus) for every pool. -EINVAL with the reason if it does not;
 * without a file, the built-in default applies (host/housekeeping.h).
 */
int config_check_cpus(const struct config *c, char *err, size_t errlen);
void config_usage(const char *prog);

#endif /* VCPUSCHED_CONFIG_H */
