/* SPDX-License-Identifier: ISC */
/*
 * config.c - defaults, vcpuschedd.conf and command-line options. The file
 * and the options share one setter, so every key means the same thing in
 * both places.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/version.h"
#include "config.h"
#include "host/statefile.h"
#include "host/watchdog.h"

#define DEFAULT_POOL "main"

void
config_defaults(struct config *c)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->socket, sizeof(c->socket), "%s", CONFIG_DEFAULT_SOCKET);
    snprintf(c->state, sizeof(c->state), "%s", STATEFILE_DEFAULT);
    c->pattern = SCHED_SHARED;
    c->dedicated_cpu = -1;
    c->log_level = LOG_VERBOSE_INFO;
    c->prio_base = 10; /* above libvirt's <vcpusched> default 1, below IRQ threads (50) */
    c->events = EVENTS_AUTO;
    c->move_rt_cgroup = true;
    c->park = CGROUP_WANT_AUTO;
    c->proc_poll_us = 1000; /* the fallback's resolution: one scan per ms */
    snprintf(c->libvirt, sizeof(c->libvirt), "qemu:///system");
    c->metrics_period_s = 10;
    c->watchdog_ms = WATCHDOG_BOUND_MS_DEFAULT;
}

static int
parse_long(const char *key, const char *val, long min, long max, long *out, char *err,
           size_t errlen)
{
    char *end;
    long x;

    errno = 0;
    x = strtol(val, &end, 10);
    if (*val == '\0' || *end != '\0' || errno != 0 || x < min || x > max) {
        snprintf(err, errlen, "%s: '%s' is not an integer in [%ld, %ld]", key, val, min, max);
        return -EINVAL;
    }
    *out = x;
    return 0;
}

static int
copy(const char *key, char *dst, size_t len, const char *val, char *err, size_t errlen)
{
    if (strlen(val) >= len) {
        snprintf(err, errlen, "%s: longer than %zu bytes", key, len - 1);
        return -EINVAL;
    }
    snprintf(dst, len, "%s", val);
    return 0;
}

/* Pool `name`, made if new, with the line being parsed as its origin. */
static struct config_pool *
pool_get(struct config *c, const char *name, char *err, size_t errlen)
{
    struct config_pool *p = NULL;

    for (unsigned int i = 0; i < c->nr_pools && p == NULL; i++)
        if (strcmp(c->pools[i].name, name) == 0)
            p = &c->pools[i];
    if (p == NULL && c->nr_pools == CONFIG_MAX_POOLS) {
        snprintf(err, errlen, "at most %d pools", CONFIG_MAX_POOLS);
        return NULL;
    }
    if (p == NULL) {
        p = &c->pools[c->nr_pools++];
        memset(p, 0, sizeof(*p));
        snprintf(p->name, sizeof(p->name), "%s", name);
        snprintf(p->policy, sizeof(p->policy), "credit");
    }
    snprintf(p->origin, sizeof(p->origin), "%s", c->at);
    return p;
}

/* Append "k=v" to a pool's parameter string. */
static int
pool_add_param(struct config_pool *p, const char *kv, char *err, size_t errlen)
{
    size_t used = strlen(p->params);

    if (strchr(kv, '=') == NULL) {
        snprintf(err, errlen, "pool %s: '%s' is not key=value", p->name, kv);
        return -EINVAL;
    }
    if (used + strlen(kv) + 2 > sizeof(p->params)) {
        snprintf(err, errlen, "pool %s: parameters too long", p->name);
        return -EINVAL;
    }
    snprintf(p->params + used, sizeof(p->params) - used, "%s%s", used ? " " : "", kv);
    return 0;
}

/* "pool NAME cpus=LIST policy=NAME [k=v ...]" */
static int
set_pool_line(struct config *c, char *rest, char *err, size_t errlen)
{
    char *save = NULL, *name = strtok_r(rest, " \t", &save), *tok;
    struct config_pool *p;

    if (name == NULL) {
        snprintf(err, errlen, "pool: a name is required");
        return -EINVAL;
    }
    p = pool_get(c, name, err, errlen);
    if (p == NULL)
        return -EINVAL;
    while ((tok = strtok_r(NULL, " \t", &save)) != NULL) {
        int r;

        if (strncmp(tok, "cpus=", 5) == 0)
            r = copy("cpus", p->cpus, sizeof(p->cpus), tok + 5, err, errlen);
        else if (strncmp(tok, "policy=", 7) == 0)
            r = copy("policy", p->policy, sizeof(p->policy), tok + 7, err, errlen);
        else
            r = pool_add_param(p, tok, err, errlen);
        if (r < 0)
            return r;
    }
    return 0;
}

static int
set_enum(const char *key, const char *val, const char *const *names, int n, int *out, char *err,
         size_t errlen)
{
    char list[128] = "";

    for (int i = 0; i < n; i++) {
        if (strcmp(val, names[i]) == 0) {
            *out = i;
            return 0;
        }
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? "|" : "", names[i]);
    }
    snprintf(err, errlen, "%s: '%s' is not one of %s", key, val, list);
    return -EINVAL;
}

/* One setting, from the file or an option. */
static int
config_set(struct config *c, const char *key, char *val, char *err, size_t errlen)
{
    static const char *const patterns[] = {"shared", "dedicated"};
    static const char *const modes[] = {"auto", "bpf", "proc"};
    static const char *const cgroup[] = {"fail", "move"};
    static const char *const park[] = {"auto", "v1", "v2"};
    static const char *const levels[] = {"warning", "info", "debug"}; /* LOG_VERBOSE_* */
    static const char *const yes_no[] = {"no", "yes"};
    long x;
    int e, r;

    if (strcmp(key, "socket") == 0)
        return copy(key, c->socket, sizeof(c->socket), val, err, errlen);
    if (strcmp(key, "group") == 0)
        return copy(key, c->group, sizeof(c->group), val, err, errlen);
    if (strcmp(key, "state") == 0)
        return copy(key, c->state, sizeof(c->state), val, err, errlen);
    if (strcmp(key, "pidfile") == 0)
        return copy(key, c->pidfile, sizeof(c->pidfile), val, err, errlen);
    if (strcmp(key, "libvirt") == 0)
        return copy(key, c->libvirt, sizeof(c->libvirt), val, err, errlen);
    if (strcmp(key, "pattern") == 0) {
        r = set_enum(key, val, patterns, 2, &e, err, errlen);
        c->pattern = r == 0 ? (enum sched_pattern)e : c->pattern;
        return r;
    }
    if (strcmp(key, "events") == 0) {
        r = set_enum(key, val, modes, 3, &e, err, errlen);
        c->events = r == 0 ? (enum events_mode)e : c->events;
        return r;
    }
    if (strcmp(key, "rt-cgroup") == 0) {
        r = set_enum(key, val, cgroup, 2, &e, err, errlen);
        c->move_rt_cgroup = r == 0 ? e == 1 : c->move_rt_cgroup;
        return r;
    }
    if (strcmp(key, "park") == 0) {
        r = set_enum(key, val, park, 3, &e, err, errlen);
        c->park = r == 0 ? (enum cgroup_want)e : c->park;
        return r;
    }
    if (strcmp(key, "log-level") == 0) {
        r = set_enum(key, val, levels, 3, &e, err, errlen);
        c->log_level = r == 0 ? e : c->log_level;
        return r;
    }
    if (strcmp(key, "dispatcher-cpu") == 0) {
        r = parse_long(key, val, 0, 1023, &x, err, errlen);
        c->dedicated_cpu = r == 0 ? (int)x : c->dedicated_cpu;
        return r;
    }
    if (strcmp(key, "priority-base") == 0) {
        r = parse_long(key, val, 1, 97, &x, err, errlen);
        c->prio_base = r == 0 ? (int)x : c->prio_base;
        return r;
    }
    if (strcmp(key, "proc-poll-us") == 0) {
        r = parse_long(key, val, 100, 1000000, &x, err, errlen);
        c->proc_poll_us = r == 0 ? (uint64_t)x : c->proc_poll_us;
        return r;
    }
    if (strcmp(key, "rt-runtime-us") == 0) {
        r = parse_long(key, val, -1, 1000000, &x, err, errlen);
        c->rt_runtime_set = r == 0 || c->rt_runtime_set;
        c->rt_runtime_us = r == 0 ? x : c->rt_runtime_us;
        return r;
    }
    if (strcmp(key, "watchdog-ms") == 0) {
        r = parse_long(key, val, 0, WATCHDOG_BOUND_MS_MAX, &x, err, errlen);
        if (r == 0 && x != 0 && x < WATCHDOG_BOUND_MS_MIN) {
            snprintf(err, errlen, "%s: '%s' is below %d ms (0 turns the watchdog off)", key, val,
                     WATCHDOG_BOUND_MS_MIN);
            r = -EINVAL;
        }
        c->watchdog_ms = r == 0 ? (unsigned int)x : c->watchdog_ms;
        return r;
    }
    if (strcmp(key, "rt-runtime-unsafe") == 0) {
        r = set_enum(key, val, yes_no, 2, &e, err, errlen);
        c->rt_runtime_unsafe = r == 0 ? e == 1 : c->rt_runtime_unsafe;
        return r;
    }
    if (strcmp(key, "cpus") == 0 || strcmp(key, "policy") == 0 || strcmp(key, "pool-param") == 0) {
        struct config_pool *p = pool_get(c, DEFAULT_POOL, err, errlen);

        if (p == NULL)
            return -EINVAL;
        if (strcmp(key, "cpus") == 0)
            return copy(key, p->cpus, sizeof(p->cpus), val, err, errlen);
        if (strcmp(key, "policy") == 0)
            return copy(key, p->policy, sizeof(p->policy), val, err, errlen);
        return pool_add_param(p, val, err, errlen);
    }
    if (strcmp(key, "pool") == 0)
        return set_pool_line(c, val, err, errlen);
    if (strcmp(key, "metrics-file") == 0 && (val[0] != '/' || val[strlen(val) - 1] == '/')) {
        snprintf(err, errlen, "%s: '%s' is not an absolute path to a file", key, val);
        return -EINVAL;
    }
    if (strcmp(key, "metrics-file") == 0)
        return copy(key, c->metrics_file, sizeof(c->metrics_file), val, err, errlen);
    if (strcmp(key, "metrics-period") == 0) {
        r = parse_long(key, val, 1, 3600, &x, err, errlen);
        c->metrics_period_s = r == 0 ? (unsigned int)x : c->metrics_period_s;
        return r;
    }
    snprintf(err, errlen, "unknown setting '%s'", key);
    return -EINVAL;
}

int
config_check_cpus(const struct config *c, char *err, size_t errlen)
{
    const char *hint = "name the CPUs it manages, leaving some to the host, e.g. \"pool main "
                       "cpus=2-15 policy=credit\" (vcpuschedd.conf(5))";

    if (c->config_file[0] == '\0')
        return 0;
    if (c->nr_pools == 0) {
        snprintf(err, errlen, "%s: no managed CPUs chosen: %s", c->config_file, hint);
        return -EINVAL;
    }
    for (unsigned int i = 0; i < c->nr_pools; i++) {
        if (c->pools[i].cpus[0] == '\0') {
            snprintf(err, errlen, "%s: pool %s: no managed CPUs chosen: %s", c->config_file,
                     c->pools[i].name, hint);
            return -EINVAL;
        }
    }
    return 0;
}

int
config_load_file(struct config *c, const char *path, char *err, size_t errlen)
{
    char line[4096], why[256];
    FILE *f = fopen(path, "re");
    int lineno = 0, r = 0;

    if (f == NULL) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -errno;
    }
    while (r == 0 && fgets(line, sizeof(line), f) != NULL) {
        char *key, *val, *save = NULL;

        lineno++;
        line[strcspn(line, "#\n")] = '\0';
        key = strtok_r(line, " \t", &save);
        if (key == NULL)
            continue;
        val = save + strspn(save, " \t");
        snprintf(c->at, sizeof(c->at), "%s:%d", path, lineno);
        if (*val == '\0') {
            snprintf(err, errlen, "%s:%d: %s: a value is required", path, lineno, key);
            r = -EINVAL;
        } else if ((r = config_set(c, key, val, why, sizeof(why))) < 0) {
            snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
        }
    }
    fclose(f);
    return r;
}

void
config_usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [-fv] [--config FILE] [--socket PATH] [--group NAME] [--state PATH]\n"
            "          [--cpus LIST] [--policy NAME] [--pool-param KEY=VALUE]...\n"
            "          [--pool 'NAME cpus=LIST [policy=NAME] [KEY=VALUE]...']...\n"
            "          [--pattern shared|dedicated] [--dispatcher-cpu N]\n"
            "          [--events auto|bpf|proc] [--rt-runtime-us N] [--rt-runtime-unsafe no|yes]\n"
            "          [--priority-base N] [--rt-cgroup move|fail] [--park auto|v1|v2]\n"
            "          [--proc-poll-us N] [--pidfile PATH] [--libvirt URI|none]\n"
            "          [--log-level warning|info|debug] [--metrics-file PATH]\n"
            "          [--metrics-period SECONDS] [--watchdog-ms MS]\n"
            "       %s --policies | --version | --help\n",
            prog, prog);
}

int
config_parse(struct config *c, int argc, char **argv, char *err, size_t errlen)
{
    static const struct option opts[] = {
        {"foreground", no_argument, NULL, 'f'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {"policies", no_argument, NULL, 'P'},
        {"config", required_argument, NULL, 'c'},
        {"socket", required_argument, NULL, 1},
        {"group", required_argument, NULL, 1},
        {"state", required_argument, NULL, 1},
        {"pidfile", required_argument, NULL, 1},
        {"cpus", required_argument, NULL, 1},
        {"policy", required_argument, NULL, 1},
        {"pool-param", required_argument, NULL, 1},
        {"pool", required_argument, NULL, 1},
        {"pattern", required_argument, NULL, 1},
        {"dispatcher-cpu", required_argument, NULL, 1},
        {"events", required_argument, NULL, 1},
        {"rt-runtime-us", required_argument, NULL, 1},
        {"rt-runtime-unsafe", required_argument, NULL, 1},
        {"priority-base", required_argument, NULL, 1},
        {"rt-cgroup", required_argument, NULL, 1},
        {"park", required_argument, NULL, 1},
        {"proc-poll-us", required_argument, NULL, 1},
        {"libvirt", required_argument, NULL, 1},
        {"log-level", required_argument, NULL, 1},
        {"metrics-file", required_argument, NULL, 1},
        {"metrics-period", required_argument, NULL, 1},
        {"watchdog-ms", required_argument, NULL, 1},
        {NULL, 0, NULL, 0},
    };
    int o, idx, r;

    /* First pass: only --config, so the file comes before the options. */
    optind = 1;
    while ((o = getopt_long(argc, argv, "fvhVc:", opts, &idx)) != -1)
        if (o == 'c' &&
            copy("config", c->config_file, sizeof(c->config_file), optarg, err, errlen) < 0)
            return -EINVAL;
    if (c->config_file[0] != '\0' && (r = config_load_file(c, c->config_file, err, errlen)) < 0)
        return r;
    optind = 1;
    while ((o = getopt_long(argc, argv, "fvhVc:", opts, &idx)) != -1) {
        switch (o) {
        case 'f':
            c->foreground = true;
            break;
        case 'v':
            c->verbose++;
            break;
        case 'h':
            config_usage(argv[0]);
            return 1;
        case 'V':
            printf("vcpuschedd %s\n", VCPUSCHED_VERSION);
            return 1;
        case 'P':
            c->policies = true; /* main prints them */
            return 1;
        case 'c':
            break;
        case 1:
            snprintf(c->at, sizeof(c->at), "--%s", opts[idx].name);
            r = config_set(c, opts[idx].name, optarg, err, errlen);
            if (r < 0)
                return r;
            break;
        default:
            snprintf(err, errlen, "bad option (see --help)");
            return -EINVAL;
        }
    }
    if (optind != argc) {
        snprintf(err, errlen, "unexpected argument '%s'", argv[optind]);
        return -EINVAL;
    }
    return 0;
}
