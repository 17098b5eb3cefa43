/* SPDX-License-Identifier: ISC */
/*
 * pools_check.c - the configured pools checked before anything changes
 * (pools_check.h). A throwaway pool of the policy layer is built for each
 * and freed: it owns no thread and makes no system call.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/kv.h"
#include "handlers.h"
#include "host/topology.h"
#include "policy/pool.h"
#include "pools_check.h"

/* One pool: 0, or -errno with the reason in `why`. */
static int
pool_check(const struct config_pool *p, const cpu_set_t *online, char *why, size_t whylen)
{
    char params[sizeof(p->params)], perr[POLICY_ERRLEN];
    struct policy_cpu desc[CPUSET_MAX];
    struct kv kv[VS_PARAMS_MAX];
    int cpus[CPUSET_MAX], r;
    struct pool *tmp;
    unsigned int n;
    size_t nkv;

    if ((r = daemon_pool_cpus(p->cpus, online, cpus, &n, perr, sizeof(perr))) < 0) {
        snprintf(why, whylen, "cpus: %s", perr);
        return r;
    }
    snprintf(params, sizeof(params), "%s", p->params);
    if ((r = kv_split(params, kv, VS_PARAMS_MAX, &nkv, perr, sizeof(perr))) < 0 ||
        (r = topology_describe(cpus, n, desc, perr, sizeof(perr))) < 0) {
        snprintf(why, whylen, "%s", perr);
        return r;
    }
    tmp = calloc(1, sizeof(*tmp));
    if (tmp == NULL) {
        snprintf(why, whylen, "out of memory");
        return -ENOMEM;
    }
    r = pool_init(tmp, p->name, p->policy, desc, n, kv, nkv, perr);
    if (r < 0)
        snprintf(why, whylen, "%s", perr);
    else
        pool_fini(tmp, 0);
    free(tmp);
    return r;
}

int
pools_check(const struct config *c, const cpu_set_t *online, char *err, size_t errlen)
{
    char why[512];
    int r;

    for (unsigned int i = 0; i < c->nr_pools; i++) {
        const struct config_pool *p = &c->pools[i];

        if ((r = pool_check(p, online, why, sizeof(why))) < 0) {
            snprintf(err, errlen, "%s%spool %s: %s", p->origin, p->origin[0] ? ": " : "", p->name,
                     why);
            return r;
        }
    }
    return 0;
}
