/* SPDX-License-Identifier: ISC */
/*
 * livefile.h - the live record on disk (docs/lifecycle.md): STATE.live
 * beside the state file (/run/vcpusched/state.live), which the unit keeps
 * across a restart (RuntimeDirectoryPreserve=restart) and a reboot
 * empties. Rewritten whole, atomically (a temporary file renamed over
 * it), whenever pools or domains change; read once, at start, with the
 * state file's care: never through a symlink, a regular file of ours,
 * mode 0600, bounded.
 */
#ifndef VCPUSCHED_LIVEFILE_H
#define VCPUSCHED_LIVEFILE_H

#include <stddef.h>

#include "core/sched_core.h"
#include "liverec.h"

#define LIVEFILE_SUFFIX ".live"

/* The record's path for state file `state`. */
void livefile_path(const char *state, char *out, size_t len);
/*
 * Read and parse the record at `path`: -ENOENT when there is none, else
 * as liverec_parse, or -EPERM for a file that is not safe to read (why in
 * err).
 */
int livefile_load(const char *path, struct liverec *rec, char *err, size_t errlen);
/* Keep a record that was refused as PATH.bad, for the operator to read. */
int livefile_set_aside(const char *path, char *err, size_t errlen);
/*
 * What runs now, as the record: the domains (sched_json_record, with each
 * QMP socket's device and inode) and the pools not named in conf[0..n)
 * (the configuration makes those). A new object.
 */
struct json_object *livefile_snapshot(struct sched *s, char (*conf)[VS_NAME_SIZE], unsigned int n);
/* Write `rec` to `path` atomically. */
int livefile_save(const char *path, struct json_object *rec, char *err, size_t errlen);

#endif /* VCPUSCHED_LIVEFILE_H */
