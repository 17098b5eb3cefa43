/* SPDX-License-Identifier: ISC */
/*
 * assert.h - VS_ASSERT(cond) for the invariants the comments state ("pool
 * lock held", "charged before every policy call", a CPU's MID thread being
 * MID there). On in the builds the tests run (VS_ASSERTIONS, set by CMake
 * unless the build type is Release), where a broken invariant aborts with
 * its place; compiled out but still type-checked in Release. Not for bad
 * input: that gets an error and changes nothing.
 */
#ifndef VCPUSCHED_ASSERT_H
#define VCPUSCHED_ASSERT_H

#if defined(VS_ASSERTIONS) && VS_ASSERTIONS
_Noreturn void vs_assert_fail(const char *cond, const char *file, int line, const char *func);
#define VS_ASSERT(cond) ((cond) ? (void)0 : vs_assert_fail(#cond, __FILE__, __LINE__, __func__))
#else
#define VS_ASSERT(cond) ((void)sizeof(!(cond)))
#endif

#endif /* VCPUSCHED_ASSERT_H */
