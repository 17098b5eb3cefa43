/* SPDX-License-Identifier: ISC */
/*
 * cpuset.c - CPU set operations and the CPU list parser (cpuset.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cpuset.h"

void
cpuset_fill(struct cpuset *s, unsigned int n)
{
    cpuset_zero(s);
    for (unsigned int i = 0; i < n / 64; i++)
        s->w[i] = ~0ULL;
    if (n % 64 != 0)
        s->w[n / 64] = (1ULL << (n % 64)) - 1;
}

unsigned int
cpuset_count(const struct cpuset *s)
{
    unsigned int n = 0;

    for (unsigned int i = 0; i < CPUSET_WORDS; i++)
        n += (unsigned int)__builtin_popcountll(s->w[i]);
    return n;
}

bool
cpuset_equal(const struct cpuset *a, const struct cpuset *b)
{
    return memcmp(a->w, b->w, sizeof(a->w)) == 0;
}

bool
cpuset_subset(const struct cpuset *a, const struct cpuset *b)
{
    for (unsigned int i = 0; i < CPUSET_WORDS; i++)
        if (a->w[i] & ~b->w[i])
            return false;
    return true;
}

bool
cpuset_intersects(const struct cpuset *a, const struct cpuset *b)
{
    for (unsigned int i = 0; i < CPUSET_WORDS; i++)
        if (a->w[i] & b->w[i])
            return true;
    return false;
}

void
cpuset_or(struct cpuset *dst, const struct cpuset *src)
{
    for (unsigned int i = 0; i < CPUSET_WORDS; i++)
        dst->w[i] |= src->w[i];
}

void
cpuset_and(struct cpuset *dst, const struct cpuset *src)
{
    for (unsigned int i = 0; i < CPUSET_WORDS; i++)
        dst->w[i] &= src->w[i];
}

void
cpuset_andnot(struct cpuset *dst, const struct cpuset *src)
{
    for (unsigned int i = 0; i < CPUSET_WORDS; i++)
        dst->w[i] &= ~src->w[i];
}

int
cpuset_to_array(const struct cpuset *s, int *cpus, unsigned int max, unsigned int *n)
{
    int c;

    *n = 0;
    cpuset_for_each(c, s)
    {
        if (*n == max)
            return -E2BIG;
        cpus[(*n)++] = c;
    }
    return 0;
}

/* One decimal CPU number at *p (advanced past it). */
static int
parse_cpu(const char **p, int *out, char *err, size_t errlen)
{
    const char *s = *p;
    long v = 0;

    if (*s < '0' || *s > '9') {
        snprintf(err, errlen, "expected a CPU number at '%.16s'", s);
        return -EINVAL;
    }
    for (; *s >= '0' && *s <= '9'; s++) {
        v = v * 10 + (*s - '0');
        if (v >= CPUSET_MAX) {
            while (*s >= '0' && *s <= '9')
                s++;
            snprintf(err, errlen, "CPU %.*s is beyond %d", (int)(s - *p > 20 ? 20 : s - *p), *p,
                     CPUSET_MAX - 1);
            return -ERANGE;
        }
    }
    *p = s;
    *out = (int)v;
    return 0;
}

/* One "a" or "a-b" at *p, added to out; a CPU given twice is an error. */
static int
parse_range(const char **p, struct cpuset *out, char *err, size_t errlen)
{
    int lo, hi, r = parse_cpu(p, &lo, err, errlen);

    if (r < 0)
        return r;
    hi = lo;
    if (**p == '-') {
        (*p)++;
        if ((r = parse_cpu(p, &hi, err, errlen)) < 0)
            return r;
        if (hi < lo) {
            snprintf(err, errlen, "range %d-%d is descending", lo, hi);
            return -EINVAL;
        }
    }
    for (int c = lo; c <= hi; c++) {
        if (cpuset_has(out, (unsigned int)c)) {
            snprintf(err, errlen, "CPU %d is listed twice", c);
            return -EINVAL;
        }
        cpuset_set(out, (unsigned int)c);
    }
    return 0;
}

int
cpulist_parse(const char *s, struct cpuset *out, char *err, size_t errlen)
{
    size_t len = strlen(s);
    char buf[CPULIST_TEXT_MAX];
    const char *p;

    cpuset_zero(out);
    if (len >= sizeof(buf)) {
        snprintf(err, errlen, "cpu list is longer than %zu bytes", sizeof(buf) - 1);
        return -EINVAL;
    }
    memcpy(buf, s, len + 1);
    if (len > 0 && buf[len - 1] == '\n')
        buf[--len] = '\0'; /* as sysfs writes it */
    for (p = buf; *p != '\0';) {
        int r = parse_range(&p, out, err, errlen);

        if (r < 0)
            return r;
        if (*p == ',' && p[1] != '\0') {
            p++;
        } else if (*p != '\0') {
            snprintf(err, errlen, "unexpected '%.16s'", p);
            return -EINVAL;
        }
    }
    return 0;
}

char *
cpulist_format(const struct cpuset *s, char *buf, size_t len)
{
    size_t off = 0;
    int c = cpuset_next(s, 0);

    if (len > 0)
        buf[0] = '\0';
    while (c >= 0 && off < len) {
        int hi = c;

        while (cpuset_has(s, (unsigned int)hi + 1))
            hi++;
        off += (size_t)snprintf(buf + off, len - off, hi == c ? "%s%d" : "%s%d-%d",
                                off > 0 ? "," : "", c, hi);
        c = cpuset_next(s, hi + 1);
    }
    return buf;
}
