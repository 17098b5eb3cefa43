/* SPDX-License-Identifier: ISC */
/*
 * cpuset.h - sets of CPUs as fixed-size bitmaps: host CPU numbers (a
 * pool's CPUs, the housekeeping set) and pool-local CPU indices (a vCPU's
 * affinity, the CPUs a policy tickles). Hypervisor hosts have 128-512
 * CPUs, so never a 64-bit word. CPUSET_MAX is glibc's CPU_SETSIZE, the
 * highest CPU number sched_setaffinity takes with a plain cpu_set_t.
 *
 * Pure and allocation-free: the bit operations are inline for the
 * policies' hot paths; iterate with cpuset_for_each().
 */
#ifndef VCPUSCHED_CPUSET_H
#define VCPUSCHED_CPUSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CPUSET_MAX   1024 /* CPUs in a set; CPU numbers 0..CPUSET_MAX-1 */
#define CPUSET_WORDS (CPUSET_MAX / 64)
/* Text of a CPU list of every CPU at worst ("0,2,4,..."): ~5 bytes each. */
#define CPULIST_TEXT_MAX 5120

struct cpuset {
    uint64_t w[CPUSET_WORDS];
};

static inline void
cpuset_zero(struct cpuset *s)
{
    for (unsigned int i = 0; i < CPUSET_WORDS; i++)
        s->w[i] = 0;
}

static inline void
cpuset_set(struct cpuset *s, unsigned int cpu)
{
    s->w[cpu / 64] |= 1ULL << (cpu % 64);
}

static inline void
cpuset_clear(struct cpuset *s, unsigned int cpu)
{
    s->w[cpu / 64] &= ~(1ULL << (cpu % 64));
}

static inline bool
cpuset_has(const struct cpuset *s, unsigned int cpu)
{
    return cpu < CPUSET_MAX && ((s->w[cpu / 64] >> (cpu % 64)) & 1);
}

static inline bool
cpuset_empty(const struct cpuset *s)
{
    for (unsigned int i = 0; i < CPUSET_WORDS; i++)
        if (s->w[i] != 0)
            return false;
    return true;
}

/* The lowest CPU >= from in s, or -1. */
static inline int
cpuset_next(const struct cpuset *s, int from)
{
    if (from < 0)
        from = 0;
    for (unsigned int i = (unsigned int)from / 64; i < CPUSET_WORDS; i++) {
        uint64_t w = s->w[i];

        if (i == (unsigned int)from / 64)
            w &= ~0ULL << (from % 64);
        if (w != 0)
            return (int)(i * 64 + (unsigned int)__builtin_ctzll(w));
    }
    return -1;
}

#define cpuset_for_each(cpu, s)                                                                    \
    for ((cpu) = cpuset_next((s), 0); (cpu) >= 0; (cpu) = cpuset_next((s), (cpu) + 1))

/* The next CPU of s after n, wrapping around (Xen's cpumask_cycle); -1 if empty. */
static inline int
cpuset_cycle(const struct cpuset *s, unsigned int n)
{
    int c = cpuset_next(s, (int)n + 1);

    return c >= 0 ? c : cpuset_next(s, 0);
}

/* dst = a & b, dst = a & ~b (dst may be a or b). */
static inline void
cpuset_and2(struct cpuset *dst, const struct cpuset *a, const struct cpuset *b)
{
    for (unsigned int i = 0; i < CPUSET_WORDS; i++)
        dst->w[i] = a->w[i] & b->w[i];
}

static inline void
cpuset_andnot2(struct cpuset *dst, const struct cpuset *a, const struct cpuset *b)
{
    for (unsigned int i = 0; i < CPUSET_WORDS; i++)
        dst->w[i] = a->w[i] & ~b->w[i];
}

/* CPUs 0..63 from one word, for small sets written by hand (tests). */
static inline struct cpuset
cpuset_of_word(uint64_t w)
{
    struct cpuset s;

    cpuset_zero(&s);
    s.w[0] = w;
    return s;
}

/* CPUs 0..n-1 (n <= CPUSET_MAX). */
void cpuset_fill(struct cpuset *s, unsigned int n);
unsigned int cpuset_count(const struct cpuset *s);
bool cpuset_equal(const struct cpuset *a, const struct cpuset *b);
/* True if every CPU of a is in b. */
bool cpuset_subset(const struct cpuset *a, const struct cpuset *b);
bool cpuset_intersects(const struct cpuset *a, const struct cpuset *b);
void cpuset_or(struct cpuset *dst, const struct cpuset *src);
void cpuset_and(struct cpuset *dst, const struct cpuset *src);
void cpuset_andnot(struct cpuset *dst, const struct cpuset *src);

/*
 * The one parser of kernel CPU lists ("1", "0-3,5,7-8"; a trailing newline,
 * as sysfs writes it, is allowed; an empty list is the empty set). Strict:
 * decimal numbers, ',' and ascending 'a-b' ranges only; no blanks, no
 * stride, no CPU twice. Errors: -EINVAL (malformed, descending, duplicate),
 * -ERANGE (a CPU >= CPUSET_MAX); err names the problem (callers say
 * which list).
 */
int cpulist_parse(const char *s, struct cpuset *out, char *err, size_t errlen);
/* s as a kernel CPU list ("" when empty); returns buf, truncated to len. */
char *cpulist_format(const struct cpuset *s, char *buf, size_t len);
/* The CPUs of s, ascending, into cpus[0..*n); -E2BIG if more than max. */
int cpuset_to_array(const struct cpuset *s, int *cpus, unsigned int max, unsigned int *n);

#endif /* VCPUSCHED_CPUSET_H */
