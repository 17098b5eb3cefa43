/* SPDX-License-Identifier: ISC */
/*
 * housekeeping.c - the default split between the host and a pool; see
 * housekeeping.h.
 */
#include <stdbool.h>
#include <string.h>

#include "housekeeping.h"

static bool
siblings(const struct policy_cpu *a, const struct policy_cpu *b)
{
    return a->node == b->node && a->socket == b->socket && a->core == b->core;
}

/* The node's slot in the counters (a node number beyond them shares the last). */
static unsigned int
node_slot(int node)
{
    return node < 0 ? 0 : node < CPUSET_MAX ? (unsigned int)node : CPUSET_MAX - 1;
}

unsigned int
housekeeping_default(const struct policy_cpu *cpus, unsigned int n, struct cpuset *hk)
{
    static const unsigned int one_in = HOUSEKEEPING_ONE_IN;
    unsigned int count[CPUSET_MAX], taken[CPUSET_MAX], base = 0, rounded = 0;
    int at[CPUSET_MAX]; /* index in cpus[] of each host CPU, or -1 */
    struct cpuset with_siblings;

    memset(count, 0, sizeof(count));
    memset(taken, 0, sizeof(taken));
    memset(at, -1, sizeof(at));
    cpuset_zero(hk);
    for (unsigned int i = 0; i < n; i++) {
        count[node_slot(cpus[i].node)]++;
        if (cpus[i].cpu >= 0 && cpus[i].cpu < CPUSET_MAX)
            at[cpus[i].cpu] = (int)i;
    }
    /* Each node's first CPUs in CPU order (cpus[] may come in any order). */
    for (int c = 0; c < CPUSET_MAX; c++) {
        unsigned int s, want;

        if (at[c] < 0)
            continue;
        s = node_slot(cpus[at[c]].node);
        want = (count[s] + one_in - 1) / one_in;
        if (taken[s] < want) {
            cpuset_set(hk, (unsigned int)c);
            taken[s]++;
            base++;
        }
    }
    with_siblings = *hk;
    for (unsigned int i = 0; i < n; i++) {
        bool near = false;

        for (unsigned int j = 0; j < n && !near; j++)
            near = cpuset_has(hk, (unsigned int)cpus[j].cpu) && siblings(&cpus[i], &cpus[j]);
        if (near) {
            cpuset_set(&with_siblings, (unsigned int)cpus[i].cpu);
            rounded++;
        }
    }
    if (rounded < n) {
        *hk = with_siblings;
        return n - rounded;
    }
    return n - base;
}
