/* SPDX-License-Identifier: ISC */
/*
 * bgclass.c - the background class, between the pool and its policy.
 *
 * Design. The low-priority class of the deadline I/O scheduler
 * (seeds-digest 002) applied to vCPUs, under any policy. A domain is
 * foreground (the default) or background (`class=background`). Each pool
 * CPU is in one of two modes:
 * - Normal: the background vCPUs living on the CPU are held. A held vCPU
 *   is runnable, but the policy was told it sleeps (sleep(), or no
 *   wake()): the policy schedules the foreground vCPUs exactly as if the
 *   background ones were absent. When the policy leaves the CPU idle and
 *   no foreground vCPU of the CPU is ready (runnable, not parked), the
 *   layer gives the time to the held vCPUs itself: a "gap" slice, to the
 *   one that has waited longest, in turns of ten `bg_slice_us` while
 *   several wait; any pick request (a foreground wake tickles) ends it.
 *   And so that background work never starves, the CPU releases one
 *   slice of `bg_slice_us` to a held vCPU once it has waited
 *   alpha - slice (after background work last stopped on the CPU, or
 *   began waiting): back to back, releases start exactly `bg_alpha_ms`
 *   apart. An alpha slice pauses the policy's decision, which resumes
 *   when the slice ends (same vCPU, same slice end) unless something
 *   asked for a pick meanwhile; it is not preempted.
 * - Batch: after `bg_beta_ms` without a runnable foreground vCPU on the
 *   CPU, with background work held there, its held vCPUs are revealed
 *   (wake()) and the policy schedules them like any other, with its
 *   weights, caps, slices and balancing. The first foreground vCPU that
 *   becomes runnable on the CPU (a wake, or the policy moving one there)
 *   ends batch mode: every background vCPU living there is held again
 *   (sleep()) and the CPU is re-picked at once, so the policy, which sees
 *   only foreground vCPUs there, runs the newcomer whatever it would
 *   have said about a background one (credit, BOOST, ratelimit).
 * beta is the hysteresis of the I/O scheduler: revealing and hiding cost
 * policy calls, and a policy's state (Credit's BOOST, Credit2's load)
 * moves with them, so they are worth it only when foreground demand
 * stays away; in between, gaps are filled without the policy knowing.
 *
 * A vCPU "lives" on the CPU the policy keeps it on (v->cpu). Foreground
 * demand is counted per CPU from that and kept up to date from the
 * policy's dirty list (moves, parking) after every pool operation.
 *
 * Interplay with the policies, and why it holds:
 * - The policy never sees a held vCPU: it cannot elect, steal, balance,
 *   boost or park it. Its measured run time (gaps, alpha slices, or LOW
 *   time when an elected vCPU blocks) is not charged to the policy: the
 *   policy had given that time away. So Credit's accounting and BOOST,
 *   Credit2's credits, load and runqueues, caps and table slots see the
 *   foreground vCPUs as in a pool without background ones; a background
 *   domain's weight and cap act in batch mode only (outside it, it gets
 *   what foreground vCPUs leave plus one slice per alpha).
 * - Work stealing and balancing: only revealed (batch) vCPUs can move.
 *   One the policy moves or elects on a normal-mode CPU is held there at
 *   once (and the CPU asks the policy again); a foreground vCPU moved to
 *   a batch-mode CPU ends batch mode there.
 * - Caps and parking: a parked vCPU never gets a layer slice; a CPU whose
 *   ready foreground vCPUs are all parked has gaps (work conservation
 *   where a cap alone throws the time away), but not batch mode: capped
 *   demand is demand.
 * - Table: a slot whose owner is held or absent is an idle slot. With a
 *   ready foreground vCPU on the CPU the layer leaves it idle; the kernel
 *   then runs any LOW thread pinned there, background ones included, as
 *   in any idle table slot.
 * - A live policy switch rebuilds the layer: every CPU starts in normal
 *   mode with its background vCPUs held, and beta counts from the switch.
 * - The ops contract: the policy's own answer and the layer's decision
 *   are both checked by the pool; a policy electing a held vCPU is a
 *   violation.
 * - Pools without a background domain never enter this file: every hook
 *   returns at once, so Xen's behaviours are untouched. The layer wakes
 *   up with the first background domain; beta then counts from there.
 *
 * Limitations. A held vCPU waits on its own CPU: moving it is the
 * policy's job, and the policy sees it only in batch mode, so another
 * CPU's idle time reaches it only then. An alpha slice delays whatever
 * the policy wanted on the CPU by at most one slice.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"

#define BGCLASS_DEFAULT_ALPHA_MS 200
#define BGCLASS_DEFAULT_BETA_MS  500
#define BGCLASS_DEFAULT_SLICE_US 1000
/*
 * Held vCPUs take turns in a gap this many slices at a time. Gaps are
 * time foreground vCPUs do not want: turns need not be fine, and each
 * costs a decision (a dispatcher pass, ~16 us on the test host), so ten
 * slices keep two background hogs next to a 10 ms sleeper at one turn
 * per gap, the longest waiting first.
 */
#define BGCLASS_GAP_SLICES 10

enum {
    BG_P_ALPHA_MS,
    BG_P_BETA_MS,
    BG_P_SLICE_US,
};
static const struct policy_param bgclass_params[] = {
    [BG_P_ALPHA_MS] = {"bg_alpha_ms", POLICY_PARAM_INT, 1, 60000, BGCLASS_DEFAULT_ALPHA_MS,
                       "background class: a held vCPU gets one slice every alpha ms"},
    [BG_P_BETA_MS] = {"bg_beta_ms", POLICY_PARAM_INT, 1, 3600000, BGCLASS_DEFAULT_BETA_MS,
                      "background class: batch mode after beta ms with no foreground demand"},
    [BG_P_SLICE_US] = {"bg_slice_us", POLICY_PARAM_INT, 100, 1000000, BGCLASS_DEFAULT_SLICE_US,
                       "background class: the slice alpha releases, in us (< alpha)"},
    {NULL, 0, 0, 0, 0, NULL},
};

/* For `help` only: the value is checked by bgclass_dom_parse. */
static const struct policy_param bgclass_dparams[] = {
    {BGCLASS_KEY, POLICY_PARAM_STR, 0, 10, 0,
     "foreground (default) or background: held while foreground vCPUs want the CPU"},
    {NULL, 0, 0, 0, 0, NULL},
};

const struct policy_param *
bgclass_pool_params(void)
{
    return bgclass_params;
}

const struct policy_param *
bgclass_dom_params(void)
{
    return bgclass_dparams;
}

/* --- parameters -------------------------------------------------------- */

void
bgclass_init(struct bgclass *cls, unsigned int nr_cpus)
{
    memset(cls, 0, sizeof(*cls));
    cls->nr_cpus = nr_cpus;
    cls->alpha_ns = (uint64_t)BGCLASS_DEFAULT_ALPHA_MS * NSEC_PER_MSEC;
    cls->beta_ns = (uint64_t)BGCLASS_DEFAULT_BETA_MS * NSEC_PER_MSEC;
    cls->slice_ns = (uint64_t)BGCLASS_DEFAULT_SLICE_US * NSEC_PER_USEC;
}

void
bgclass_fini(struct bgclass *cls)
{
    free(cls->cpu);
    memset(cls, 0, sizeof(*cls));
}

void
bgclass_split(const struct kv *kv, size_t n, bool dom, struct kv *theirs, size_t *nt,
              struct kv *ours, size_t *no)
{
    *nt = *no = 0;
    for (size_t i = 0; i < n; i++) {
        bool mine = dom ? strcmp(kv[i].key, BGCLASS_KEY) == 0
                        : policy_param_index(bgclass_params, kv[i].key) >= 0;

        if (mine)
            ours[(*no)++] = kv[i];
        else
            theirs[(*nt)++] = kv[i];
    }
}

int
bgclass_pool_check(const struct bgclass *cls, const struct kv *kv, size_t n, char *err)
{
    struct policy_values val;
    int64_t alpha_ms = (int64_t)(cls->alpha_ns / NSEC_PER_MSEC);
    int64_t slice_us = (int64_t)(cls->slice_ns / NSEC_PER_USEC);

    if (policy_values_parse(bgclass_params, kv, n, false, &val, err) < 0)
        return -EINVAL;
    if (val.set & (1U << BG_P_ALPHA_MS))
        alpha_ms = val.i[BG_P_ALPHA_MS];
    if (val.set & (1U << BG_P_SLICE_US))
        slice_us = val.i[BG_P_SLICE_US];
    if (slice_us >= alpha_ms * 1000) {
        snprintf(err, POLICY_ERRLEN, "bg_slice_us: %lld is not shorter than bg_alpha_ms %lld",
                 (long long)slice_us, (long long)alpha_ms);
        return -EINVAL;
    }
    return 0;
}

int
bgclass_dom_parse(const struct kv *kv, size_t n, int *bg, char *err)
{
    *bg = -1;
    for (size_t i = 0; i < n; i++) {
        int v;

        if (strcmp(kv[i].val, "background") == 0) {
            v = 1;
        } else if (strcmp(kv[i].val, "foreground") == 0) {
            v = 0;
        } else {
            snprintf(err, POLICY_ERRLEN, "class: '%.32s' is not foreground or background",
                     kv[i].val);
            return -EINVAL;
        }
        if (*bg >= 0) {
            snprintf(err, POLICY_ERRLEN, "class: given twice");
            return -EINVAL;
        }
        *bg = v;
    }
    return 0;
}

int
bgclass_prepare(struct pool *p, char *err)
{
    struct bgclass *cls = &p->cls;

    if (cls->cpu == NULL && (cls->cpu = calloc(cls->nr_cpus, sizeof(cls->cpu[0]))) == NULL) {
        snprintf(err, POLICY_ERRLEN, "out of memory");
        return -ENOMEM;
    }
    return 0;
}

void
bgclass_get_params(const struct bgclass *cls, struct policy_sink *sk)
{
    sk->put_int(sk, "bg_alpha_ms", (int64_t)(cls->alpha_ns / NSEC_PER_MSEC));
    sk->put_int(sk, "bg_beta_ms", (int64_t)(cls->beta_ns / NSEC_PER_MSEC));
    sk->put_int(sk, "bg_slice_us", (int64_t)(cls->slice_ns / NSEC_PER_USEC));
}

/* --- per-CPU state ------------------------------------------------------ */

static struct bgclass_cpu *
lcpu(struct pool *p, unsigned int cpu)
{
    return &p->cls.cpu[cpu];
}

static void
need_pick(struct pool *p, unsigned int cpu)
{
    cpuset_set(&p->need_pick, cpu);
}

static uint64_t
min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* When the next alpha slice is due (a held vCPU waiting). */
static uint64_t
alpha_due(const struct bgclass *cls, const struct bgclass_cpu *lc)
{
    return lc->bg_off + cls->alpha_ns - cls->slice_ns;
}

/* When the CPU enters batch mode if nothing changes. */
static uint64_t
batch_at(const struct bgclass *cls, const struct bgclass_cpu *lc)
{
    if (lc->mode != BGCLASS_NORMAL || lc->fg_demand > 0 || lc->nr_held == 0)
        return POLICY_NEVER;
    return lc->fg_idle_since + cls->beta_ns;
}

/* The held vCPU that has waited longest and may run; *more: another may. */
static struct pool_vcpu *
candidate(struct bgclass_cpu *lc, bool *more)
{
    struct pool_vcpu *v, *first = NULL;

    *more = false;
    TAILQ_FOREACH(v, &lc->held, cls.link)
    {
        if (v->pv->parked)
            continue;
        if (first != NULL) {
            *more = true;
            break;
        }
        first = v;
    }
    return first;
}

/*
 * The CPU's deadline must not pass the layer's next event (an alpha
 * release, a gap rotation, batch mode): if it does, re-pick it (the pick
 * asks the policy again and clips). With the defaults a policy's slice
 * is shorter than alpha, so this seldom fires.
 */
static void
rearm(struct pool *p, unsigned int cpu, uint64_t now)
{
    struct bgclass *cls = &p->cls;
    struct bgclass_cpu *lc = lcpu(p, cpu);
    uint64_t need = POLICY_NEVER;

    if (lc->mode != BGCLASS_NORMAL || lc->nr_held == 0)
        return;
    if (lc->unit == BGCLASS_UNIT_GAP && lc->nr_held > 1)
        need = now + BGCLASS_GAP_SLICES * cls->slice_ns;
    else if (lc->unit == BGCLASS_UNIT_NONE)
        need = alpha_due(cls, lc);
    need = min_u64(need, batch_at(cls, lc));
    if (p->cpu[cpu].until > need)
        need_pick(p, cpu);
}

static void
held_add(struct pool *p, struct pool_vcpu *v, uint64_t now)
{
    struct bgclass_cpu *lc = lcpu(p, v->pv->cpu);

    v->cls.home = v->pv->cpu;
    if (lc->nr_held++ == 0)
        lc->bg_off = now; /* waiting starts: the alpha clock runs */
    TAILQ_INSERT_TAIL(&lc->held, v, cls.link);
    rearm(p, v->cls.home, now);
}

static void
held_remove(struct pool *p, struct pool_vcpu *v)
{
    struct bgclass_cpu *lc = lcpu(p, v->cls.home);

    TAILQ_REMOVE(&lc->held, v, cls.link);
    lc->nr_held--;
}

/* A runnable background vCPU the policy knows: hide it (normal mode). */
static void
hide(struct pool *p, struct pool_vcpu *v, uint64_t now)
{
    v->cls.held = true;
    v->pv->runnable = false;
    p->pol.ops->sleep(&p->pol, v->pv, now);
    if (v->elected_on >= 0)
        need_pick(p, (unsigned int)v->elected_on);
    held_add(p, v, now);
}

/*
 * A held vCPU goes back to the policy. If the layer elected it on a CPU
 * other than keep_cpu (the CPU being picked), that CPU loses it first, so
 * that the policy may elect it anywhere.
 */
static void
reveal(struct pool *p, struct pool_vcpu *v, uint64_t now, int keep_cpu)
{
    held_remove(p, v);
    v->cls.held = false;
    if (v->elected_on >= 0 && v->elected_on != keep_cpu) {
        unsigned int c = (unsigned int)v->elected_on;

        p->cpu[c].elected = NULL;
        v->elected_on = -1;
        lcpu(p, c)->unit = BGCLASS_UNIT_NONE;
        lcpu(p, c)->bg_off = now;
        need_pick(p, c);
    }
    v->pv->runnable = true;
    p->pol.ops->wake(&p->pol, v->pv, now);
}

static void
enter_batch(struct pool *p, unsigned int cpu, uint64_t now)
{
    struct bgclass_cpu *lc = lcpu(p, cpu);
    struct pool_vcpu *v;

    lc->mode = BGCLASS_BATCH;
    lc->unit = BGCLASS_UNIT_NONE;
    p->cls.stats.batch_enters++;
    while ((v = TAILQ_FIRST(&lc->held)) != NULL)
        reveal(p, v, now, (int)cpu);
}

/* A foreground vCPU is runnable here: hold every background one, re-pick. */
static void
exit_batch(struct pool *p, unsigned int cpu, uint64_t now)
{
    struct pool_dom *d;

    lcpu(p, cpu)->mode = BGCLASS_NORMAL;
    p->cls.stats.batch_exits++;
    TAILQ_FOREACH(d, &p->doms, link)
    {
        for (unsigned int i = 0; d->background && i < d->nr_vcpus; i++) {
            struct pool_vcpu *v = d->vcpus[i];

            if (v->runnable && !v->cls.held && v->pv->cpu == cpu)
                hide(p, v, now);
        }
    }
    need_pick(p, cpu);
}

/* --- foreground demand ---------------------------------------------------- */

static void
fg_count(struct pool *p, struct pool_vcpu *v, uint64_t now)
{
    struct bgclass_cpu *lc = lcpu(p, v->pv->cpu);

    v->cls.home = v->pv->cpu;
    v->cls.counted = v->runnable;
    v->cls.counted_ready = v->runnable && !v->pv->parked;
    if (v->cls.counted && lc->fg_demand++ == 0 && lc->mode == BGCLASS_BATCH)
        exit_batch(p, v->cls.home, now);
    if (v->cls.counted_ready && lc->fg_ready++ == 0 && lc->unit == BGCLASS_UNIT_GAP)
        need_pick(p, v->cls.home); /* the gap is over */
}

static void
fg_uncount(struct pool *p, struct pool_vcpu *v, uint64_t now)
{
    struct bgclass_cpu *lc = lcpu(p, v->cls.home);

    if (v->cls.counted_ready)
        lc->fg_ready--;
    if (v->cls.counted && --lc->fg_demand == 0) {
        lc->fg_idle_since = now;
        rearm(p, v->cls.home, now);
    }
    v->cls.counted = v->cls.counted_ready = false;
}

/*
 * Bring v's counts and state in line with what it is now. Returns true
 * if that called the policy (which may have dirtied more vCPUs).
 */
static bool
track(struct pool *p, struct pool_vcpu *v, uint64_t now)
{
    if (!v->cls.bg) {
        bool ready = v->runnable && !v->pv->parked;
        uint64_t batches = p->cls.stats.batch_exits;

        if (v->cls.counted == v->runnable && v->cls.counted_ready == ready &&
            (!v->runnable || v->cls.home == v->pv->cpu))
            return false;
        fg_uncount(p, v, now);
        fg_count(p, v, now);
        return p->cls.stats.batch_exits != batches;
    }
    if (v->cls.held) {
        if (v->pv->cpu != v->cls.home) { /* the policy moved it while asleep to it */
            held_remove(p, v);
            held_add(p, v, now);
        }
        return false;
    }
    if (v->runnable && lcpu(p, v->pv->cpu)->mode == BGCLASS_NORMAL) {
        hide(p, v, now);
        return true;
    }
    return false;
}

void
bgclass_sync(struct pool *p, struct pool_vcpu *v, uint64_t now)
{
    bool again;

    if (!bgclass_active(&p->cls))
        return;
    if (v != NULL)
        track(p, v, now);
    do {
        again = false;
        for (struct policy_vcpu *pv = p->pol.dirty; pv != NULL; pv = pv->next_dirty)
            again |= track(p, pv->core, now);
    } while (again);
    /* Remember every pick asked for, however late the caller runs it. */
    cpuset_or(&p->cls.asked, &p->pol.tickled);
    cpuset_or(&p->cls.asked, &p->need_pick);
}

/* --- membership -------------------------------------------------------------- */

/* (Re)build every count and queue from the vCPUs' state; all CPUs normal. */
static void
rebuild(struct pool *p, uint64_t now)
{
    struct pool_dom *d;

    cpuset_zero(&p->cls.asked);
    for (unsigned int c = 0; c < p->cls.nr_cpus; c++) {
        struct bgclass_cpu *lc = lcpu(p, c);

        memset(lc, 0, sizeof(*lc));
        lc->mode = BGCLASS_NORMAL;
        TAILQ_INIT(&lc->held);
        lc->fg_idle_since = lc->bg_off = now;
        lc->pol_cur = p->cpu[c].elected;
        lc->pol_until = p->cpu[c].until;
    }
    TAILQ_FOREACH(d, &p->doms, link)
    {
        for (unsigned int i = 0; i < d->nr_vcpus; i++) {
            struct pool_vcpu *v = d->vcpus[i];

            v->cls.counted = v->cls.counted_ready = false;
            if (!v->cls.bg)
                fg_count(p, v, now);
            else if (v->cls.held)
                held_add(p, v, now); /* held across a policy switch */
            else if (v->runnable)
                hide(p, v, now);
        }
    }
}

/* The last background domain left: nothing may stay held or paused. */
static void
deactivate(struct pool *p)
{
    for (unsigned int c = 0; c < p->cls.nr_cpus; c++) {
        struct bgclass_cpu *lc = lcpu(p, c);

        if (lc->unit != BGCLASS_UNIT_NONE || p->cpu[c].elected != lc->pol_cur)
            need_pick(p, c);
    }
}

void
bgclass_vcpu_join(struct pool *p, struct pool_vcpu *v, bool bg, uint64_t now)
{
    memset(&v->cls, 0, sizeof(v->cls));
    v->cls.bg = bg;
    if (bgclass_active(&p->cls) && !bg)
        fg_count(p, v, now);
}

void
bgclass_dom_join(struct pool *p, struct pool_dom *d, bool bg, uint64_t now)
{
    d->background = bg;
    for (unsigned int i = 0; i < d->nr_vcpus; i++) {
        memset(&d->vcpus[i]->cls, 0, sizeof(d->vcpus[i]->cls));
        d->vcpus[i]->cls.bg = bg;
    }
    if (bg && p->cls.nr_bg_doms++ == 0) {
        rebuild(p, now);
        return;
    }
    for (unsigned int i = 0; bgclass_active(&p->cls) && !bg && i < d->nr_vcpus; i++)
        fg_count(p, d->vcpus[i], now);
}

/* Forget v in the per-CPU state (it leaves, or changes class). */
static void
forget(struct pool *p, struct pool_vcpu *v, uint64_t now)
{
    if (v->cls.held) {
        held_remove(p, v);
        v->cls.held = false;
    }
    if (!v->cls.bg)
        fg_uncount(p, v, now);
}

void
bgclass_vcpu_leave(struct pool *p, struct pool_vcpu *v, uint64_t now)
{
    if (!bgclass_active(&p->cls))
        return;
    forget(p, v, now);
    for (unsigned int c = 0; c < p->cls.nr_cpus; c++) {
        if (lcpu(p, c)->pol_cur == v) {
            lcpu(p, c)->pol_cur = NULL;
            lcpu(p, c)->pol_until = 0;
        }
    }
}

void
bgclass_dom_leave(struct pool *p, struct pool_dom *d, uint64_t now)
{
    if (!bgclass_active(&p->cls))
        return;
    for (unsigned int i = 0; i < d->nr_vcpus; i++)
        forget(p, d->vcpus[i], now);
    for (unsigned int c = 0; c < p->cls.nr_cpus; c++) {
        struct bgclass_cpu *lc = lcpu(p, c);

        if (lc->pol_cur != NULL && lc->pol_cur->dom == d) {
            lc->pol_cur = NULL;
            lc->pol_until = 0;
        }
    }
    if (d->background && --p->cls.nr_bg_doms == 0)
        deactivate(p);
}

void
bgclass_dom_set(struct pool *p, struct pool_dom *d, bool bg, uint64_t now)
{
    if (d->background == bg)
        return;
    d->background = bg;
    if (bg && p->cls.nr_bg_doms++ == 0) {
        for (unsigned int i = 0; i < d->nr_vcpus; i++)
            d->vcpus[i]->cls.bg = true;
        rebuild(p, now);
        return;
    }
    for (unsigned int i = 0; i < d->nr_vcpus; i++) {
        struct pool_vcpu *v = d->vcpus[i];

        if (bg) {
            fg_uncount(p, v, now);
            v->cls.bg = true;
            if (v->runnable && lcpu(p, v->pv->cpu)->mode == BGCLASS_NORMAL)
                hide(p, v, now);
        } else {
            if (v->cls.held)
                reveal(p, v, now, -1);
            v->cls.bg = false;
            fg_count(p, v, now);
        }
    }
    if (!bg && --p->cls.nr_bg_doms == 0)
        deactivate(p);
}

void
bgclass_switch_begin(struct pool *p)
{
    struct pool_dom *d;

    if (!bgclass_active(&p->cls))
        return;
    TAILQ_FOREACH(d, &p->doms, link)
    {
        for (unsigned int i = 0; d->background && i < d->nr_vcpus; i++)
            d->vcpus[i]->cls.held = d->vcpus[i]->runnable;
    }
}

void
bgclass_switch_end(struct pool *p, uint64_t now)
{
    if (bgclass_active(&p->cls))
        rebuild(p, now);
}

int
bgclass_cpus_prepare(const struct bgclass *cls, unsigned int nr_cpus, struct bgclass_cpu **out,
                     char *err)
{
    *out = NULL;
    if (cls->cpu == NULL)
        return 0;
    *out = calloc(nr_cpus, sizeof(**out));
    if (*out == NULL) {
        snprintf(err, POLICY_ERRLEN, "out of memory");
        return -ENOMEM;
    }
    return 0;
}

void
bgclass_cpus_commit(struct bgclass *cls, unsigned int nr_cpus, struct bgclass_cpu *cpu)
{
    if (cls->cpu != NULL) {
        free(cls->cpu);
        cls->cpu = cpu; /* every count and queue is rebuilt at bgclass_switch_end */
    }
    cls->nr_cpus = nr_cpus;
}

void
bgclass_pool_apply(struct pool *p, const struct kv *kv, size_t n)
{
    struct bgclass *cls = &p->cls;
    struct policy_values val;
    char err[POLICY_ERRLEN];

    if (n == 0 || policy_values_parse(bgclass_params, kv, n, false, &val, err) < 0)
        return; /* checked by bgclass_pool_check */
    if (val.set & (1U << BG_P_ALPHA_MS))
        cls->alpha_ns = (uint64_t)val.i[BG_P_ALPHA_MS] * NSEC_PER_MSEC;
    if (val.set & (1U << BG_P_BETA_MS))
        cls->beta_ns = (uint64_t)val.i[BG_P_BETA_MS] * NSEC_PER_MSEC;
    if (val.set & (1U << BG_P_SLICE_US))
        cls->slice_ns = (uint64_t)val.i[BG_P_SLICE_US] * NSEC_PER_USEC;
    for (unsigned int c = 0; bgclass_active(cls) && c < cls->nr_cpus; c++)
        if (lcpu(p, c)->nr_held > 0)
            need_pick(p, c); /* deadlines computed with the old values */
}

/* --- hot path ----------------------------------------------------------------- */

bool
bgclass_wake(struct pool *p, struct pool_vcpu *v, uint64_t now)
{
    unsigned int cpu = v->pv->cpu;
    struct bgclass_cpu *lc;

    if (!bgclass_active(&p->cls) || !v->cls.bg)
        return false;
    lc = lcpu(p, cpu);
    if (lc->mode == BGCLASS_BATCH)
        return false;
    v->cls.held = true;
    held_add(p, v, now);
    if (p->cpu[cpu].elected == NULL && lc->fg_ready == 0)
        need_pick(p, cpu); /* an idle CPU: a gap to fill, or batch mode is due */
    return true;
}

bool
bgclass_sleep(struct pool *p, struct pool_vcpu *v, uint64_t now)
{
    (void)now;
    if (!bgclass_active(&p->cls) || !v->cls.held)
        return false;
    held_remove(p, v);
    v->cls.held = false;
    return true;
}

/* Would the policy's decision (a, until) for cpu still stand as it is? */
static bool
decision_stands(const struct pool_vcpu *a, uint64_t until, unsigned int cpu, uint64_t now)
{
    if (until <= now)
        return false;
    return a == NULL || (a->runnable && !a->cls.held && !a->pv->parked && a->pv->cpu == cpu &&
                         (a->elected_on < 0 || a->elected_on == (int)cpu));
}

/*
 * Ask the policy. One that elects here a background vCPU it had moved
 * from a batch-mode CPU sees it held (this CPU is in normal mode) and is
 * asked again; each round holds one more vCPU, so this ends.
 */
static const char *
ask_policy(struct pool *p, unsigned int cpu, uint64_t now, struct policy_decision *raw)
{
    struct bgclass_cpu *lc = lcpu(p, cpu);
    struct pool_vcpu *a;

    for (;;) {
        bool was_held;

        *raw = (struct policy_decision){NULL, POLICY_NEVER};
        p->pol.ops->pick(&p->pol, cpu, now, raw);
        a = raw->vcpu != NULL ? raw->vcpu->core : NULL;
        if (a != NULL && a->pv != raw->vcpu)
            a = NULL; /* not ours: the pool's check says so */
        was_held = a != NULL && a->cls.held;
        bgclass_sync(p, NULL, now);
        if (was_held)
            return "elected a held background vCPU";
        if (a == NULL || !a->cls.held)
            break;
    }
    lc->pol_cur = a;
    lc->pol_until = raw->until;
    return NULL;
}

/* Start a background slice of `kind` for v on cpu. */
static void
unit_start(struct pool *p, unsigned int cpu, struct pool_vcpu *v, enum bgclass_unit kind,
           uint64_t end)
{
    struct bgclass_cpu *lc = lcpu(p, cpu);

    lc->unit = kind;
    lc->unit_end = end;
    TAILQ_REMOVE(&lc->held, v, cls.link); /* to the back: longest waiting first */
    TAILQ_INSERT_TAIL(&lc->held, v, cls.link);
    if (kind == BGCLASS_UNIT_ALPHA)
        p->cls.stats.alpha_slices++;
    else
        p->cls.stats.gap_slices++;
}

/*
 * The layer's decision given the policy's answer (a, until), for a CPU
 * whose previous background slice (if any) was `prev` of `prev_kind`
 * until `prev_end`.
 */
static void
decide(struct pool *p, unsigned int cpu, uint64_t now, struct pool_vcpu *a, uint64_t until,
       struct pool_vcpu *prev, enum bgclass_unit prev_kind, uint64_t prev_end,
       struct policy_decision *out)
{
    struct bgclass *cls = &p->cls;
    struct bgclass_cpu *lc = lcpu(p, cpu);
    struct pool_vcpu *bg = NULL;
    bool more = false;

    if (lc->mode == BGCLASS_NORMAL)
        bg = candidate(lc, &more);
    if (bg != NULL && a == NULL && lc->fg_ready == 0) {
        uint64_t end;

        if (prev_kind == BGCLASS_UNIT_GAP && prev != NULL && prev->cls.held &&
            prev->cls.home == cpu && !prev->pv->parked && now < prev_end) {
            bg = prev; /* the same gap slice goes on */
            end = more ? min_u64(prev_end, now + BGCLASS_GAP_SLICES * cls->slice_ns) : prev_end;
            lc->unit = BGCLASS_UNIT_GAP;
            lc->unit_end = end;
        } else {
            end = more ? now + BGCLASS_GAP_SLICES * cls->slice_ns : POLICY_NEVER;
            unit_start(p, cpu, bg, BGCLASS_UNIT_GAP, end);
        }
        out->vcpu = bg->pv;
        out->until = min_u64(min_u64(end, until), batch_at(cls, lc));
        return;
    }
    if (bg != NULL && now >= alpha_due(cls, lc)) {
        unit_start(p, cpu, bg, BGCLASS_UNIT_ALPHA, now + cls->slice_ns);
        lc->pick_pending = false;
        out->vcpu = bg->pv;
        out->until = lc->unit_end;
        return;
    }
    if (bg != NULL)
        until = min_u64(until, alpha_due(cls, lc));
    out->vcpu = a != NULL ? a->pv : NULL;
    out->until = min_u64(until, batch_at(cls, lc));
}

static const char *
pick(struct pool *p, unsigned int cpu, uint64_t now, struct policy_decision *raw,
     struct policy_decision *out)
{
    struct bgclass *cls = &p->cls;
    struct bgclass_cpu *lc = lcpu(p, cpu);
    struct pool_vcpu *cur = p->cpu[cpu].elected;
    bool requested = cpuset_has(&p->need_pick, cpu) || cpuset_has(&cls->asked, cpu);
    enum bgclass_unit unit = lc->unit;
    uint64_t unit_end = lc->unit_end;
    const char *bad;

    *raw = (struct policy_decision){NULL, 0};
    if (unit == BGCLASS_UNIT_ALPHA && cur != NULL && cur->cls.held && now < unit_end) {
        /* An alpha slice is not cut short: whoever asked is answered after it. */
        lc->pick_pending = true;
        out->vcpu = cur->pv;
        out->until = unit_end;
        return NULL;
    }
    lc->unit = BGCLASS_UNIT_NONE;
    if (unit != BGCLASS_UNIT_NONE && cur != NULL && cur->cls.bg)
        lc->bg_off = now; /* background work stops here (unless a gap goes on) */
    if (lc->mode == BGCLASS_NORMAL && now >= batch_at(cls, lc))
        enter_batch(p, cpu, now);
    /*
     * Keep the policy's decision without asking it again when it still
     * stands and nobody asked: the end of an alpha slice that paused it,
     * or a deadline the layer set (an alpha release).
     */
    if ((unit == BGCLASS_UNIT_ALPHA && !lc->pick_pending) ||
        (unit == BGCLASS_UNIT_NONE && !requested && cur == lc->pol_cur && now < lc->pol_until &&
         lc->mode == BGCLASS_NORMAL)) {
        if (decision_stands(lc->pol_cur, lc->pol_until, cpu, now)) {
            lc->pick_pending = false;
            decide(p, cpu, now, lc->pol_cur, lc->pol_until, cur, unit, unit_end, out);
            return NULL;
        }
    }
    lc->pick_pending = false;
    for (;;) {
        bad = ask_policy(p, cpu, now, raw);
        if (bad != NULL)
            return bad;
        /* It may have moved background work here, after beta of idleness. */
        if (lc->mode != BGCLASS_NORMAL || now < batch_at(cls, lc))
            break;
        enter_batch(p, cpu, now);
    }
    decide(p, cpu, now, lc->pol_cur, lc->pol_until, cur, unit, unit_end, out);
    return NULL;
}

const char *
bgclass_pick(struct pool *p, unsigned int cpu, uint64_t now, struct policy_decision *raw,
             struct policy_decision *out)
{
    const char *bad = pick(p, cpu, now, raw, out);

    /* Answered (a pick that asks for itself is moot, as in the pool). */
    cpuset_clear(&p->cls.asked, cpu);
    return bad;
}

/* --- output --------------------------------------------------------------------- */

const char *
bgclass_vcpu_mode(const struct pool *p, const struct pool_vcpu *v)
{
    if (!v->cls.bg || !bgclass_active(&p->cls))
        return NULL;
    return p->cls.cpu[v->pv->cpu].mode == BGCLASS_BATCH ? "batch" : "normal";
}
