/* SPDX-License-Identifier: ISC */
/*
 * unattached.c - opted-in libvirt domains the daemon does not manage
 * (unattached.h): a small array in arrival order under one mutex. Calls
 * are rare (a start, a metadata change, a `stats`), so a linear search is
 * the simple and sufficient choice.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/limits.h"
#include "unattached.h"

#define ERR_SIZE 256

struct entry {
    char domain[VS_NAME_SIZE];
    enum unattached_reason why;
    char err[ERR_SIZE];
    int64_t since_ns;
};

struct unattached {
    pthread_mutex_t lock;
    struct entry *e;
    unsigned int n, cap;
    uint64_t dropped; /* entries that gave way to newer ones past UNATTACHED_MAX */
};

static const char *const reason_names[] = {
    [UNATTACHED_METADATA] = "metadata",
    [UNATTACHED_POOL] = "pool",
    [UNATTACHED_THREADS] = "threads",
    [UNATTACHED_ATTACH] = "attach",
};

const char *
unattached_reason_name(enum unattached_reason why)
{
    size_t n = sizeof(reason_names) / sizeof(reason_names[0]);

    return (size_t)why < n ? reason_names[why] : "unknown";
}

int
unattached_create(struct unattached **out)
{
    struct unattached *u = calloc(1, sizeof(*u));

    if (u == NULL)
        return -ENOMEM;
    pthread_mutex_init(&u->lock, NULL);
    *out = u;
    return 0;
}

void
unattached_destroy(struct unattached *u)
{
    if (u == NULL)
        return;
    pthread_mutex_destroy(&u->lock);
    free(u->e);
    free(u);
}

static int
find(const struct unattached *u, const char *domain)
{
    for (unsigned int i = 0; i < u->n; i++)
        if (strcmp(u->e[i].domain, domain) == 0)
            return (int)i;
    return -1;
}

static void
remove_at(struct unattached *u, unsigned int i)
{
    memmove(&u->e[i], &u->e[i + 1], (u->n - i - 1) * sizeof(u->e[0]));
    u->n--;
}

/* Room for one more entry: grown, or the oldest dropped at the bound. */
static bool
make_room(struct unattached *u)
{
    struct entry *e;
    unsigned int cap;

    if (u->n < u->cap)
        return true;
    if (u->cap >= UNATTACHED_MAX) {
        remove_at(u, 0);
        u->dropped++;
        return true;
    }
    cap = u->cap ? 2 * u->cap : 16;
    cap = cap > UNATTACHED_MAX ? UNATTACHED_MAX : cap;
    e = realloc(u->e, cap * sizeof(*e));
    if (e == NULL)
        return false;
    u->e = e;
    u->cap = cap;
    return true;
}

void
unattached_set(struct unattached *u, const char *domain, enum unattached_reason why,
               const char *err, int64_t now_ns)
{
    struct entry *e;
    int i;

    pthread_mutex_lock(&u->lock);
    i = find(u, domain);
    if (i < 0 && make_room(u)) {
        i = (int)u->n++;
        snprintf(u->e[i].domain, sizeof(u->e[i].domain), "%s", domain);
        u->e[i].since_ns = now_ns;
    } else if (i < 0) {
        u->dropped++; /* out of memory: counted, as past the bound */
    }
    if (i >= 0) {
        e = &u->e[i];
        e->why = why;
        snprintf(e->err, sizeof(e->err), "%s", err);
    }
    pthread_mutex_unlock(&u->lock);
}

void
unattached_clear(struct unattached *u, const char *domain)
{
    int i;

    pthread_mutex_lock(&u->lock);
    i = find(u, domain);
    if (i >= 0)
        remove_at(u, (unsigned int)i);
    pthread_mutex_unlock(&u->lock);
}

struct json_object *
unattached_json(struct unattached *u, int64_t now_ns, bool (*gone)(void *arg, const char *domain),
                void *arg)
{
    struct json_object *o = json_object_new_object(), *a = json_object_new_array();

    pthread_mutex_lock(&u->lock);
    for (unsigned int i = 0; i < u->n;) {
        const struct entry *e = &u->e[i];
        struct json_object *d;
        int64_t age_s;

        if (gone != NULL && gone(arg, e->domain)) {
            remove_at(u, i);
            continue;
        }
        age_s = now_ns > e->since_ns ? (now_ns - e->since_ns) / 1000000000 : 0;
        d = json_object_new_object();
        json_object_object_add(d, "domain", json_object_new_string(e->domain));
        json_object_object_add(d, "reason", json_object_new_string(unattached_reason_name(e->why)));
        json_object_object_add(d, "error", json_object_new_string(e->err));
        json_object_object_add(d, "since_s", json_object_new_int64(age_s));
        json_object_array_add(a, d);
        i++;
    }
    json_object_object_add(o, "domains", a);
    json_object_object_add(o, "dropped", json_object_new_int64((int64_t)u->dropped));
    pthread_mutex_unlock(&u->lock);
    return o;
}
