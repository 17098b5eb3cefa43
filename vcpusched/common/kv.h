/* SPDX-License-Identifier: ISC */
/*
 * kv.h - "key=value" parameters as they travel from the CLI, libvirt
 * metadata and the protocol to a policy's schema (policy/policy.h).
 */
#ifndef VCPUSCHED_KV_H
#define VCPUSCHED_KV_H

#include <stddef.h>

struct kv {
    const char *key;
    const char *val;
};

/*
 * Split "key=value key=value" (separated by blanks; `s` is modified) into
 * kv[0..*n). Fails with -EINVAL on a token without '=' or an empty key,
 * and with -E2BIG past `max` pairs; err (errlen bytes) says which.
 */
int kv_split(char *s, struct kv *kv, size_t max, size_t *n, char *err, size_t errlen);

#endif /* VCPUSCHED_KV_H */
