/* SPDX-License-Identifier: ISC */
/*
 * names.h - the one rule for names that come from outside: domain, pool
 * and libvirt names (they reach logs, JSON and cgroup paths), policy
 * names and parameter keys.
 */
#ifndef VCPUSCHED_NAMES_H
#define VCPUSCHED_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "limits.h"

/* For messages: what a name and a key may be made of. */
#define NAMES_CHARS     "[A-Za-z0-9_.:+@-]"
#define NAMES_KEY_CHARS "[a-z0-9_]"

/* A domain, pool or libvirt name: 1..VS_NAME_SIZE-1 bytes of NAMES_CHARS. */
bool names_valid(const char *name);
/* A policy name or parameter key: 1..VS_KEY_SIZE-1 bytes of NAMES_KEY_CHARS. */
bool names_key_valid(const char *key);
/* One character of a name / of a key. */
bool names_char_ok(int c);
bool names_key_char_ok(int c);

#endif /* VCPUSCHED_NAMES_H */
