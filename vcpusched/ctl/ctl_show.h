/* SPDX-License-Identifier: ISC */
/*
 * ctl_show.h - vcpuschedctl's tables for the results of docs/protocol.md
 * (list, stats, pool list) and the policies' parameter schemas (help).
 * A field missing from a result shows as "-": an older or newer daemon
 * still gets a readable table.
 */
#ifndef VCPUSCHED_CTL_SHOW_H
#define VCPUSCHED_CTL_SHOW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct json_object;

/* `list`: {"domains": [...]}; -EPROTO if there is no domains array. */
int ctl_show_list(FILE *f, struct json_object *result);
/* `attach`, `set`: one domain object, shown as `list` shows it. */
int ctl_show_domain(FILE *f, struct json_object *dom);
/* `stats`: daemon-wide fields, then a row per pool. */
int ctl_show_stats(FILE *f, struct json_object *result);
/* `pool list`: {"pools": [...]}. */
int ctl_show_pools(FILE *f, struct json_object *result);
/* `help [POLICY]`: {"policies": [{name, summary, pool_params, dom_params}]}. */
int ctl_show_policies(FILE *f, struct json_object *result);

/* 123ns, 4.50us, 123.46ms, 5.00s: a duration a human compares at a glance ("-" if < 0). */
const char *ctl_show_ns(char *buf, size_t len, int64_t ns);
/* [1,2,3,5] as the kernel writes CPU lists, "1-3,5"; "-" if empty (cut to fit `len`). */
const char *ctl_show_cpus(char *buf, size_t len, struct json_object *arr);
/* {"weight": "256", "credit": 12} as "weight=256 credit=12" ("-" if empty), malloc'd; NULL: ENOMEM.
 */
char *ctl_show_kv(struct json_object *obj);

#endif /* VCPUSCHED_CTL_SHOW_H */
