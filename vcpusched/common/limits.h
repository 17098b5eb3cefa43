/* SPDX-License-Identifier: ISC */
/*
 * limits.h - the one definition of every size the daemon, the protocol,
 * the policies and the hook agree on. Each has its reason.
 */
#ifndef VCPUSCHED_LIMITS_H
#define VCPUSCHED_LIMITS_H

/* Domain, pool and libvirt names: 1..63 bytes of NAMES_CHARS (names.h), NUL included. */
#define VS_NAME_SIZE 64
/* Policy names and parameter keys: 1..31 bytes of [a-z0-9_], NUL included. */
#define VS_KEY_SIZE 32
/* Parameter values: 1..2047 bytes, e.g. a long table= spec, NUL included. */
#define VS_VALUE_SIZE 2048
/* Threads of one domain (one attach): QEMU's x86 maximum is 1024 vCPUs (maxcpus). */
#define VS_THREADS_MAX 1024
/* Parameters in one schema (a policy's pool or domain keys) and in one request. */
#define VS_PARAMS_MAX 16

#define NSEC_PER_USEC 1000ULL
#define NSEC_PER_MSEC 1000000ULL
#define NSEC_PER_SEC  1000000000ULL

#endif /* VCPUSCHED_LIMITS_H */
