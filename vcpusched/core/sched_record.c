/* SPDX-License-Identifier: ISC */
/*
 * sched_record.c - what a restarted daemon needs to attach every domain
 * again (the daemon's live record, docs/lifecycle.md), and the count of
 * changes that tells it when to write that record again.
 */
#include <json-c/json.h>
#include <string.h>

#include "common/cpuset.h"
#include "policy/bgclass.h"
#include "sched_priv.h"

uint64_t
sched_changes(struct sched *s)
{
    return atomic_load(&s->changes);
}

/* Parameters as given, as an object of strings. */
static struct json_object *
kvs_json(const struct pool_kvs *kvs)
{
    struct json_object *o = json_object_new_object();

    for (unsigned int i = 0; i < kvs->n; i++)
        json_object_object_add(o, kvs->kv[i].key, json_object_new_string(kvs->kv[i].val));
    return o;
}

/* A domain's parameters as given (what a policy switch carries), and its class. */
static struct json_object *
given_params_json(const struct pool_dom *pd)
{
    struct json_object *o = kvs_json(&pd->params);

    if (pd->background)
        json_object_object_add(o, BGCLASS_KEY, json_object_new_string("background"));
    return o;
}

static struct json_object *
dom_record_json(struct sched_dom *d)
{
    struct json_object *o = json_object_new_object();

    json_object_object_add(o, "name", json_object_new_string(d->name));
    json_object_object_add(o, "source", json_object_new_string(d->source));
    if (d->origin[0] != '\0')
        json_object_object_add(o, "origin", json_object_new_string(d->origin));
    json_object_object_add(o, "pid", json_object_new_int(d->pid));
    json_object_object_add(o, "start_time", json_object_new_int64((int64_t)d->ident.start_time));
    json_object_object_add(o, "exe_dev", json_object_new_int64((int64_t)d->ident.exe_dev));
    json_object_object_add(o, "exe_ino", json_object_new_int64((int64_t)d->ident.exe_ino));
    sched_pool_lock(d->sp);
    json_object_object_add(o, "pool", json_object_new_string(d->sp->pool.name));
    json_object_object_add(o, "params", given_params_json(d->pd));
    if (strcmp(d->source, "tids") == 0) {
        struct json_object *tids = json_object_new_array();

        for (unsigned int i = 0; i < d->nr_threads; i++)
            if (!d->threads[i]->gone)
                json_object_array_add(tids, json_object_new_int(d->threads[i]->act->tid));
        json_object_object_add(o, "tids", tids);
    }
    sched_pool_unlock(d->sp);
    return o;
}

struct json_object *
sched_json_record(struct sched *s)
{
    struct json_object *arr = json_object_new_array();
    struct sched_dom *d;

    pthread_mutex_lock(&s->lock);
    TAILQ_FOREACH(d, &s->doms, link)
    json_object_array_add(arr, dom_record_json(d));
    pthread_mutex_unlock(&s->lock);
    return arr;
}

struct json_object *
sched_json_record_pools(struct sched *s)
{
    struct json_object *arr = json_object_new_array();
    char text[CPULIST_TEXT_MAX];

    pthread_mutex_lock(&s->lock);
    for (unsigned int i = 0; i < s->nr_pools; i++) {
        struct sched_pool *sp = s->pools[i];
        struct json_object *o = json_object_new_object();
        struct cpuset cpus;

        cpuset_zero(&cpus);
        for (unsigned int c = 0; c < sp->nr_cpus; c++)
            cpuset_set(&cpus, (unsigned int)sp->cpus[c].host);
        sched_pool_lock(sp);
        json_object_object_add(o, "name", json_object_new_string(sp->pool.name));
        json_object_object_add(o, "cpus",
                               json_object_new_string(cpulist_format(&cpus, text, sizeof(text))));
        json_object_object_add(o, "policy", json_object_new_string(pool_policy_name(&sp->pool)));
        json_object_object_add(o, "params", kvs_json(&sp->pool.params));
        sched_pool_unlock(sp);
        json_object_array_add(arr, o);
    }
    pthread_mutex_unlock(&s->lock);
    return arr;
}
