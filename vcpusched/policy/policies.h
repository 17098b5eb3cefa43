/* SPDX-License-Identifier: ISC */
/*
 * policies.h - the built-in policies' ops tables, listed in policy.c.
 */
#ifndef VCPUSCHED_POLICIES_H
#define VCPUSCHED_POLICIES_H

#include "policy.h"

extern const struct policy_ops credit_ops;  /* policy/credit.c */
extern const struct policy_ops credit2_ops; /* policy/credit2.c */
extern const struct policy_ops rr_ops;      /* policy/rr.c */
extern const struct policy_ops table_ops;   /* policy/table.c */

#endif /* VCPUSCHED_POLICIES_H */
