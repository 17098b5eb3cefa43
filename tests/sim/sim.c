/* SPDX-License-Identifier: ISC */
/*
 * sim.c - the deterministic policy simulator; see sim.h for the model.
 *
 * The loop is a discrete-event simulation: find the earliest event (a
 * slice end, a re-pick, the policy timer, a vCPU finishing its burst or
 * waking), advance the clock to it charging the running vCPUs, handle
 * every event due at that instant, then decide who runs. No time passes
 * while events are handled, so results do not depend on host speed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define SIM_MAX_STEPS_PER_INSTANT 100000 /* a policy that never settles */

/* --- samples ---------------------------------------------------------- */

static void
samples_add(struct sim_samples *x, uint64_t val)
{
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 256;
        uint64_t *nv = realloc(x->v, cap * sizeof(*nv));

        if (nv == NULL)
            abort(); /* test harness: no way to continue meaningfully */
        x->v = nv;
        x->cap = cap;
    }
    x->v[x->n++] = val;
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

uint64_t
sim_percentile(const struct sim_samples *x, double pct)
{
    uint64_t *tmp, r;
    size_t rank;

    if (x->n == 0)
        return 0;
    tmp = malloc(x->n * sizeof(*tmp));
    if (tmp == NULL)
        abort();
    memcpy(tmp, x->v, x->n * sizeof(*tmp));
    qsort(tmp, x->n, sizeof(*tmp), cmp_u64);
    rank = (size_t)(pct / 100.0 * (double)x->n + 0.999999);
    if (rank < 1)
        rank = 1;
    if (rank > x->n)
        rank = x->n;
    r = tmp[rank - 1];
    free(tmp);
    return r;
}

uint64_t
sim_max(const struct sim_samples *x)
{
    uint64_t m = 0;

    for (size_t i = 0; i < x->n; i++)
        if (x->v[i] > m)
            m = x->v[i];
    return m;
}

double
sim_mean(const struct sim_samples *x)
{
    double sum = 0;

    for (size_t i = 0; i < x->n; i++)
        sum += (double)x->v[i];
    return x->n ? sum / (double)x->n : 0;
}

/* --- demand constructors ---------------------------------------------- */

struct sim_demand
sim_busy(void)
{
    return (struct sim_demand){.kind = SIM_BUSY};
}

struct sim_demand
sim_duty(uint64_t run_ns, uint64_t sleep_ns)
{
    return (struct sim_demand){.kind = SIM_DUTY, .run_ns = run_ns, .sleep_ns = sleep_ns};
}

struct sim_demand
sim_periodic(uint64_t period_ns, uint64_t run_ns, uint64_t phase_ns)
{
    return (struct sim_demand){
        .kind = SIM_PERIODIC, .run_ns = run_ns, .period_ns = period_ns, .phase_ns = phase_ns};
}

struct sim_demand
sim_manual(void)
{
    return (struct sim_demand){.kind = SIM_MANUAL};
}

/* --- the modelled kernel ------------------------------------------------ */

static struct sim_vcpu *
owner(struct pool_vcpu *pv)
{
    return pv ? pv->owner : NULL;
}

static bool
finite_demand(const struct sim_vcpu *v)
{
    return v->demand.kind == SIM_DUTY || v->demand.kind == SIM_PERIODIC;
}

static int
vcpu_index(const struct sim *s, const struct sim_vcpu *v)
{
    for (unsigned int i = 0; i < s->nr_vcpus; i++)
        if (s->vcpus[i] == v)
            return (int)i;
    return -1;
}

static void
timeline_add(struct sim *s, unsigned int cpu, int vcpu, uint64_t start, uint64_t end)
{
    if (!s->record || end <= start)
        return;
    if (s->nr_seg == s->cap_seg) {
        size_t cap = s->cap_seg ? s->cap_seg * 2 : 1024;
        struct sim_seg *ns = realloc(s->timeline, cap * sizeof(*ns));

        if (ns == NULL)
            abort();
        s->timeline = ns;
        s->cap_seg = cap;
    }
    s->timeline[s->nr_seg++] = (struct sim_seg){cpu, vcpu, start, end};
}

/* Stop whatever runs on `cpu` and start `want` (NULL: idle). */
static void
switch_run(struct sim *s, unsigned int cpu, struct sim_vcpu *want)
{
    struct sim_cpu *c = &s->cpu[cpu];
    struct sim_vcpu *old = c->running;

    timeline_add(s, cpu, old ? vcpu_index(s, old) : -1, c->since, s->now);
    if (old != NULL) {
        samples_add(&old->lengths, s->now - old->run_start);
        /* It may have started on a lower-numbered CPU already (a move). */
        if (old->running_on == (int)cpu)
            old->running_on = -1;
    }
    if (want != NULL) {
        want->running_on = (int)cpu;
        want->run_start = s->now;
        want->runs++;
        if (want->wake_at != POLICY_NEVER) {
            samples_add(&want->lat, s->now - want->wake_at);
            want->wake_at = POLICY_NEVER;
        }
    }
    c->running = want;
    c->since = s->now;
    c->switches++;
}

static bool
can_run(const struct sim_vcpu *v)
{
    return v->pv->runnable && !v->pv->pv->parked;
}

/* Who the kernel runs on each CPU, given priorities MID > LOW. */
static void
update_running(struct sim *s)
{
    for (unsigned int c = 0; c < s->pool.nr_cpus; c++) {
        struct sim_vcpu *want = owner(s->pool.cpu[c].elected);

        if (want == NULL || !can_run(want)) {
            want = NULL;
            for (unsigned int i = 0; i < s->nr_vcpus; i++) {
                struct sim_vcpu *v = s->vcpus[i];

                if (can_run(v) && v->pv->pv->cpu == c && v->pv->elected_on < 0) {
                    want = v;
                    break;
                }
            }
        }
        if (want != s->cpu[c].running)
            switch_run(s, c, want);
    }
}

/* Book-keeping of placement and parking changes the policy made. */
static void
drain_dirty(struct sim *s)
{
    struct pool_vcpu *pv;

    while ((pv = pool_take_dirty(&s->pool)) != NULL) {
        struct sim_vcpu *v = owner(pv);

        if (v == NULL)
            continue; /* being attached: placed once its record exists */
        if (v->placed && v->last_cpu != pv->pv->cpu)
            v->migrations++;
        v->placed = true;
        v->last_cpu = pv->pv->cpu;
        if (pv->pv->parked && !v->was_parked)
            v->parks++;
        v->was_parked = pv->pv->parked;
    }
}

static void
do_wake(struct sim *s, struct sim_vcpu *v)
{
    if (v->pv->runnable)
        return;
    if (v->wake_at == POLICY_NEVER)
        v->wake_at = s->now;
    v->wakes++;
    pool_wake(&s->pool, v->pv, s->now);
}

static void
fire_wake(struct sim *s, struct sim_vcpu *v)
{
    switch (v->demand.kind) {
    case SIM_DUTY:
        v->pending_ns = v->demand.run_ns;
        v->next_wake = POLICY_NEVER;
        break;
    case SIM_PERIODIC:
        v->pending_ns += v->demand.run_ns;
        v->next_wake += v->demand.period_ns;
        break;
    default:
        v->next_wake = POLICY_NEVER;
        break;
    }
    do_wake(s, v);
}

static void
do_block(struct sim *s, struct sim_vcpu *v)
{
    if (v->demand.kind == SIM_DUTY)
        v->next_wake = s->now + v->demand.sleep_ns;
    pool_sleep(&s->pool, v->pv, s->now);
}

/*
 * When deadline `due` (slot: a CPU's slice end, or CPUSET_MAX for the
 * policy timer) really fires: `due` itself, or later by a lateness drawn
 * once per deadline (xorshift64, so runs are reproducible).
 */
static uint64_t
late_fire(struct sim *s, unsigned int slot, uint64_t due)
{
    if (s->late_max_ns == 0 || due == POLICY_NEVER)
        return due;
    if (s->late_what == (slot == CPUSET_MAX ? SIM_LATE_SLICES : SIM_LATE_TIMER))
        return due;
    if (s->late_due[slot] != due) {
        uint64_t x = s->late_rng != 0 ? s->late_rng : 0x9e3779b97f4a7c15ULL;

        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        s->late_rng = x;
        s->late_due[slot] = due;
        s->late_fire[slot] = due + x % (s->late_max_ns + 1);
    }
    return s->late_fire[slot];
}

/* Handle one event due now; false when none is left. */
static bool
step(struct sim *s)
{
    struct pool *p = &s->pool;
    int need;

    for (unsigned int i = 0; i < s->nr_vcpus; i++) {
        struct sim_vcpu *v = s->vcpus[i];

        if (v->running_on >= 0 && finite_demand(v) && v->pending_ns == 0 && v->pv->runnable) {
            do_block(s, v);
            return true;
        }
    }
    for (unsigned int i = 0; i < s->nr_vcpus; i++) {
        if (s->vcpus[i]->next_wake <= s->now) {
            fire_wake(s, s->vcpus[i]);
            return true;
        }
    }
    if (late_fire(s, CPUSET_MAX, p->pol.timer) <= s->now) {
        pool_timer(p, s->now);
        return true;
    }
    for (unsigned int c = 0; c < p->nr_cpus; c++) {
        if (late_fire(s, c, p->cpu[c].until) <= s->now || s->repick_at[c] <= s->now) {
            s->repick_at[c] = POLICY_NEVER;
            pool_pick(p, c, s->now);
            return true;
        }
    }
    need = cpuset_next(pool_need_pick(p), 0);
    if (need >= 0) {
        unsigned int c = (unsigned int)need;

        if (s->pick_delay_ns == 0) {
            pool_pick(p, c, s->now);
        } else {
            cpuset_clear(&p->need_pick, c);
            if (s->now + s->pick_delay_ns < s->repick_at[c])
                s->repick_at[c] = s->now + s->pick_delay_ns;
        }
        return true;
    }
    return false;
}

static void
process(struct sim *s)
{
    unsigned int n = 0;

    while (step(s)) {
        drain_dirty(s);
        s->events++;
        if (++n == SIM_MAX_STEPS_PER_INSTANT) {
            s->pool.stats.violations++;
            snprintf(s->pool.last_violation, sizeof(s->pool.last_violation),
                     "no progress at t=%" PRIu64 " ns", s->now);
            break;
        }
    }
    drain_dirty(s);
    update_running(s);
}

static uint64_t
next_event(struct sim *s, uint64_t end)
{
    uint64_t t = end;

    if (late_fire(s, CPUSET_MAX, s->pool.pol.timer) < t)
        t = late_fire(s, CPUSET_MAX, s->pool.pol.timer);
    for (unsigned int c = 0; c < s->pool.nr_cpus; c++) {
        if (late_fire(s, c, s->pool.cpu[c].until) < t)
            t = late_fire(s, c, s->pool.cpu[c].until);
        if (s->repick_at[c] < t)
            t = s->repick_at[c];
    }
    for (unsigned int i = 0; i < s->nr_vcpus; i++) {
        const struct sim_vcpu *v = s->vcpus[i];

        if (v->next_wake < t)
            t = v->next_wake;
        if (v->running_on >= 0 && finite_demand(v) && s->now + v->pending_ns < t)
            t = s->now + v->pending_ns;
    }
    return t > s->now ? t : s->now + 1; /* always make progress */
}

static void
advance(struct sim *s, uint64_t t)
{
    uint64_t dt = t - s->now;

    for (unsigned int c = 0; c < s->pool.nr_cpus; c++) {
        struct sim_vcpu *v = s->cpu[c].running;

        if (v == NULL)
            continue;
        pool_account(&s->pool, v->pv, dt);
        v->run_ns += dt;
        if (finite_demand(v))
            v->pending_ns = v->pending_ns > dt ? v->pending_ns - dt : 0;
    }
    s->now = t;
}

void
sim_run(struct sim *s, uint64_t ns)
{
    uint64_t end = s->now + ns;

    process(s);
    while (s->now < end) {
        advance(s, next_event(s, end));
        process(s);
    }
}

/* --- set-up and control ------------------------------------------------ */

static int
split(const char *params, char *buf, size_t len, struct kv *kv, size_t *n, char *err)
{
    *n = 0;
    if (params == NULL)
        return 0;
    if (strlen(params) >= len) {
        snprintf(err, POLICY_ERRLEN, "parameters too long");
        return -EINVAL;
    }
    snprintf(buf, len, "%s", params);
    return kv_split(buf, kv, VS_PARAMS_MAX, n, err, POLICY_ERRLEN);
}

int
sim_init(struct sim *s, const char *policy, unsigned int nr_cpus, const struct policy_cpu *cpus,
         const char *params, char *err)
{
    struct policy_cpu flat[CPUSET_MAX];
    struct kv kv[VS_PARAMS_MAX];
    char buf[4096];
    size_t n;
    int r;

    memset(s, 0, sizeof(*s));
    if (nr_cpus == 0 || nr_cpus > CPUSET_MAX) {
        snprintf(err, POLICY_ERRLEN, "1..%d CPUs", CPUSET_MAX);
        return -EINVAL;
    }
    if (cpus == NULL) {
        for (unsigned int c = 0; c < nr_cpus; c++)
            flat[c] = (struct policy_cpu){.cpu = (int)c, .core = (int)c};
        cpus = flat;
    }
    r = split(params, buf, sizeof(buf), kv, &n, err);
    if (r < 0)
        return r;
    r = pool_init(&s->pool, "sim", policy, cpus, nr_cpus, kv, n, err);
    if (r < 0)
        return r;
    for (unsigned int c = 0; c < CPUSET_MAX; c++)
        s->repick_at[c] = POLICY_NEVER;
    /* Every CPU takes a first decision at t=0. */
    cpuset_fill(&s->pool.need_pick, nr_cpus);
    return 0;
}

static void
vcpu_free(struct sim_vcpu *v)
{
    free(v->lat.v);
    free(v->lengths.v);
    free(v);
}

void
sim_fini(struct sim *s)
{
    pool_fini(&s->pool, s->now);
    for (unsigned int i = 0; i < s->nr_vcpus; i++)
        vcpu_free(s->vcpus[i]);
    free(s->timeline);
    memset(s, 0, sizeof(*s));
}

static void
demand_start(struct sim *s, struct sim_vcpu *v, struct sim_demand d)
{
    v->demand = d;
    v->pending_ns = 0;
    v->next_wake = POLICY_NEVER;
    switch (d.kind) {
    case SIM_BUSY:
        v->next_wake = s->now;
        break;
    case SIM_DUTY:
        if (v->pv->runnable)
            v->pending_ns = d.run_ns;
        else
            v->next_wake = s->now + d.phase_ns;
        break;
    case SIM_PERIODIC:
        v->next_wake = s->now + d.phase_ns;
        break;
    case SIM_IDLE:
        if (v->pv->runnable)
            pool_sleep(&s->pool, v->pv, s->now);
        break;
    case SIM_MANUAL:
        break;
    }
}

struct pool_dom *
sim_dom_add(struct sim *s, const char *name, unsigned int nr_vcpus, struct sim_demand demand,
            uint64_t affinity, const char *params, char *err)
{
    struct cpuset aff = cpuset_of_word(affinity);

    return sim_dom_add_set(s, name, nr_vcpus, demand, &aff, params, err);
}

struct pool_dom *
sim_dom_add_set(struct sim *s, const char *name, unsigned int nr_vcpus, struct sim_demand demand,
                const struct cpuset *affinity, const char *params, char *err)
{
    struct kv kv[VS_PARAMS_MAX];
    struct cpuset *aff;
    struct pool_dom *d;
    char buf[4096];
    size_t n;
    int r;

    if (nr_vcpus == 0 || s->nr_vcpus + nr_vcpus > SIM_MAX_VCPUS) {
        snprintf(err, POLICY_ERRLEN, "sim: at most %d vCPUs", SIM_MAX_VCPUS);
        return NULL;
    }
    if (split(params, buf, sizeof(buf), kv, &n, err) < 0)
        return NULL;
    aff = calloc(nr_vcpus, sizeof(*aff));
    if (aff == NULL)
        abort();
    for (unsigned int i = 0; affinity != NULL && i < nr_vcpus; i++)
        aff[i] = *affinity;
    r = pool_dom_add(&s->pool, name, nr_vcpus, aff, kv, n, s->now, &d, err);
    free(aff);
    if (r < 0)
        return NULL;
    for (unsigned int i = 0; i < nr_vcpus; i++) {
        struct sim_vcpu *v = calloc(1, sizeof(*v));

        if (v == NULL)
            abort();
        v->pv = d->vcpus[i];
        v->pv->owner = v;
        v->running_on = -1;
        v->wake_at = POLICY_NEVER;
        snprintf(v->label, sizeof(v->label), "%s/%u", name, i);
        s->vcpus[s->nr_vcpus++] = v;
        demand_start(s, v, demand);
    }
    process(s);
    return d;
}

struct sim_vcpu *
sim_vcpu(struct pool_dom *d, unsigned int i)
{
    return i < d->nr_vcpus ? d->vcpus[i]->owner : NULL;
}

struct sim_vcpu *
sim_vcpu_plug(struct sim *s, struct pool_dom *d, struct sim_demand demand, char *err)
{
    struct pool_vcpu *pv;
    struct sim_vcpu *v;

    if (s->nr_vcpus >= SIM_MAX_VCPUS) {
        snprintf(err, POLICY_ERRLEN, "sim: at most %d vCPUs", SIM_MAX_VCPUS);
        return NULL;
    }
    if (pool_vcpu_add(&s->pool, d, NULL, s->now, &pv, err) < 0)
        return NULL;
    v = calloc(1, sizeof(*v));
    if (v == NULL)
        abort();
    v->pv = pv;
    pv->owner = v;
    v->running_on = -1;
    v->wake_at = POLICY_NEVER;
    snprintf(v->label, sizeof(v->label), "%s/%u", d->name, pv->index);
    s->vcpus[s->nr_vcpus++] = v;
    demand_start(s, v, demand);
    process(s);
    return v;
}

int
sim_vcpu_unplug(struct sim *s, struct sim_vcpu *v)
{
    unsigned int i;
    int r;

    if (v->pv->dom->nr_vcpus <= 1)
        return -EBUSY;
    for (unsigned int c = 0; c < s->pool.nr_cpus; c++)
        if (s->cpu[c].running == v)
            switch_run(s, c, NULL);
    r = pool_vcpu_remove(&s->pool, v->pv, s->now);
    if (r < 0)
        return r;
    for (i = 0; s->vcpus[i] != v; i++)
        ;
    memmove(&s->vcpus[i], &s->vcpus[i + 1], (s->nr_vcpus - i - 1) * sizeof(s->vcpus[0]));
    s->nr_vcpus--;
    vcpu_free(v);
    process(s);
    return 0;
}

void
sim_dom_remove(struct sim *s, struct pool_dom *d)
{
    for (unsigned int c = 0; c < s->pool.nr_cpus; c++) {
        struct sim_vcpu *r = s->cpu[c].running;

        if (r != NULL && r->pv->dom == d)
            switch_run(s, c, NULL);
    }
    for (unsigned int i = 0; i < s->nr_vcpus;) {
        if (s->vcpus[i]->pv->dom == d) {
            vcpu_free(s->vcpus[i]);
            memmove(&s->vcpus[i], &s->vcpus[i + 1], (s->nr_vcpus - i - 1) * sizeof(s->vcpus[0]));
            s->nr_vcpus--;
        } else {
            i++;
        }
    }
    pool_dom_remove(&s->pool, d, s->now);
    process(s);
}

void
sim_set_demand(struct sim *s, struct sim_vcpu *v, struct sim_demand demand)
{
    demand_start(s, v, demand);
    process(s);
}

void
sim_wake(struct sim *s, struct sim_vcpu *v)
{
    do_wake(s, v);
    process(s);
}

void
sim_sleep(struct sim *s, struct sim_vcpu *v)
{
    pool_sleep(&s->pool, v->pv, s->now);
    process(s);
}

void
sim_yield(struct sim *s, struct sim_vcpu *v)
{
    pool_yield(&s->pool, v->pv, s->now);
    process(s);
}

int
sim_set(struct sim *s, struct pool_dom *d, const char *params, char *err)
{
    struct kv kv[VS_PARAMS_MAX];
    char buf[4096];
    size_t n;
    int r;

    r = split(params, buf, sizeof(buf), kv, &n, err);
    if (r == 0)
        r = pool_set(&s->pool, d, kv, n, s->now, err);
    process(s);
    return r;
}

int
sim_switch(struct sim *s, const char *policy, const char *params, char *err)
{
    struct kv kv[VS_PARAMS_MAX];
    char buf[4096];
    size_t n;
    int r;

    r = split(params, buf, sizeof(buf), kv, &n, err);
    if (r == 0)
        r = pool_switch(&s->pool, policy, kv, n, s->now, err);
    process(s);
    return r;
}

int
sim_resize(struct sim *s, const struct policy_cpu *cpus, unsigned int n, const struct cpuset *aff,
           char *err)
{
    unsigned int old = s->pool.nr_cpus;
    int r;

    /*
     * The daemon stops the pool's dispatchers and lowers what they raised
     * before the change, and pins every thread to its new CPU after it:
     * nothing runs across it, whichever CPUs stay.
     */
    for (unsigned int c = 0; c < old; c++)
        if (s->cpu[c].running != NULL)
            switch_run(s, c, NULL);
    r = pool_resize(&s->pool, cpus, n, aff, s->now, err);
    if (r == 0) {
        for (unsigned int c = 0; c < CPUSET_MAX + 1; c++)
            s->late_due[c] = s->late_fire[c] = 0;
        for (unsigned int c = 0; c < CPUSET_MAX; c++)
            s->repick_at[c] = POLICY_NEVER;
        for (unsigned int c = old; c < n; c++)
            s->cpu[c].since = s->now; /* idle from now */
    }
    process(s);
    return r;
}

void
sim_reset_stats(struct sim *s)
{
    for (unsigned int i = 0; i < s->nr_vcpus; i++) {
        struct sim_vcpu *v = s->vcpus[i];

        v->run_ns = v->wakes = v->runs = v->parks = v->migrations = 0;
        v->lat.n = v->lengths.n = 0;
        v->run_start = s->now;
    }
    for (unsigned int c = 0; c < s->pool.nr_cpus; c++) {
        s->cpu[c].switches = 0;
        s->cpu[c].since = s->now;
    }
    s->nr_seg = 0;
    s->stats_start = s->now;
}

double
sim_share(const struct sim *s, const struct sim_vcpu *v)
{
    uint64_t span = s->now - s->stats_start;

    return span ? (double)v->run_ns / (double)span : 0;
}

uint64_t
sim_violations(const struct sim *s)
{
    return s->pool.stats.violations;
}

/* --- report ---------------------------------------------------------------- */

static void
sink_int(struct policy_sink *sk, const char *key, int64_t val)
{
    fprintf(sk->ctx, " %s=%" PRId64, key, val);
}

static void
sink_str(struct policy_sink *sk, const char *key, const char *val)
{
    fprintf(sk->ctx, " %s=%s", key, val);
}

void
sim_report(struct sim *s, FILE *f)
{
    struct policy_sink sk = {sink_int, sink_str, f};

    fprintf(f, "policy %s, %u CPU(s), %.3f s simulated\n", pool_policy_name(&s->pool),
            s->pool.nr_cpus, (double)(s->now - s->stats_start) / 1e9);
    fprintf(f, "%-16s %7s %9s %6s %6s %9s %9s %9s %9s %8s %5s\n", "vcpu", "share", "run_ms",
            "wakes", "runs", "lat_p50", "lat_p99", "lat_p999", "lat_max", "mean_run", "parks");
    for (unsigned int i = 0; i < s->nr_vcpus; i++) {
        struct sim_vcpu *v = s->vcpus[i];

        fprintf(f,
                "%-16s %6.2f%% %9.3f %6" PRIu64 " %6" PRIu64 " %8.1fu %8.1fu %8.1fu %8.1fu "
                "%7.3fm %5" PRIu64 "\n",
                v->label, 100 * sim_share(s, v), (double)v->run_ns / 1e6, v->wakes, v->runs,
                (double)sim_percentile(&v->lat, 50) / 1e3,
                (double)sim_percentile(&v->lat, 99) / 1e3,
                (double)sim_percentile(&v->lat, 99.9) / 1e3, (double)sim_max(&v->lat) / 1e3,
                sim_mean(&v->lengths) / 1e6, v->parks);
    }
    for (unsigned int i = 0; i < s->nr_vcpus; i++) {
        fprintf(f, "  %s:", s->vcpus[i]->label);
        pool_vcpu_stats(&s->pool, s->vcpus[i]->pv, &sk);
        fputc('\n', f);
    }
    fprintf(f, "picks %" PRIu64 ", elected changes %" PRIu64 ", violations %" PRIu64 "%s%s\n",
            s->pool.stats.picks, s->pool.stats.switches, s->pool.stats.violations,
            s->pool.stats.violations ? ": " : "", s->pool.last_violation);
}
