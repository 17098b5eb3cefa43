/* SPDX-License-Identifier: ISC */
/*
 * pool_priv.h - what pool.c shares with pool_rebuild.c, which builds a
 * pool's policy instance again (a policy switch, a change of CPUs).
 */
#ifndef VCPUSCHED_POOL_PRIV_H
#define VCPUSCHED_POOL_PRIV_H

#include "pool.h"

/* Parameters as given, kept in the pool and its domains. */
void pool_kvs_clear(struct pool_kvs *s);
int pool_kvs_merge(struct pool_kvs *s, const struct kv *kv, size_t n);
size_t pool_kvs_view(const struct pool_kvs *s, struct kv *out);

/* Fresh policy headers of `d` for `ops` (each vCPU's affinity as it is now), and their freeing. */
struct policy_dom *pool_hdr_new(const struct policy_ops *ops, struct pool_dom *d,
                                uint32_t first_vcpu_id);
void pool_hdr_free(struct policy_dom *pd);
/* A domain's headers into a policy instance, and out of it. */
int pool_inst_add(struct policy *pol, struct policy_dom *pd, const struct policy_values *dv,
                  uint64_t now, char *err);
void pool_inst_remove(struct policy *pol, struct policy_dom *pd, uint64_t now);

/* CPUs the policy tickled, into need_pick. */
void pool_collect(struct pool *p);
/* Charge what was measured before a policy call; the time to give it. */
uint64_t pool_flush_charges(struct pool *p, uint64_t now);

#endif /* VCPUSCHED_POOL_PRIV_H */
