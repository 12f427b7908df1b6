/*
 * sn_plan_timeline.c — predicts what a plan costs: the steady-state
 * iteration's time, its stalls, its peak device memory and the bytes it
 * copies, or the first point where the plan cannot be followed. Also the
 * plan bookkeeping shared by every policy (sn_plan_free, sn_plan_step_ms and
 * the checks of sn_plan_int.h).
 *
 * The machine modelled: one compute stream running the steps in order, one
 * host-to-device and one device-to-host copy stream, each first in first
 * out. A copy first pays copy_ms of fixed cost and then moves its bytes;
 * while both streams are moving bytes each runs at duplex/2 of its own
 * bandwidth (never faster than alone), so rates change whenever a transfer
 * starts or ends and the copies are simulated event by event with piecewise
 * constant rates.
 *
 * The host follows the device: it reaches step s when step s-1 has
 * completed, issues s's prefetches there (waiting for memory when it has
 * to), and step s starts once its prefetches and its own memory are there.
 * So a prefetch issued at step s overlaps step s, and the time the host
 * waits for memory is stall like any other. Two iterations run back to back
 * from the residency the plan leaves at an iteration's end; the second is
 * reported, and it starts when the first one's last step ends, so a wait
 * before its first step (a wrapped prefetch arriving late) is part of it.
 *
 * Memory given back and taken again costs host time with the device idle
 * (unmap_ms when a tensor leaves, map_ms when it returns by a prefetch or a
 * fresh write): the host clock moves on by it there, the copies going on.
 * With remap_drains (a VMM arena) a tensor that left is unmapped at the
 * first step start after its copy out completed (a drop: the next one);
 * neither that nor a mapping waits for the device, as neither the driver
 * nor the arena does (the arena waits for a planned leave's own copy when
 * it needs the memory, which tl_fit models), and a step's maps come
 * before its copies in.
 * With free_drains a step after which tensors are freed waits for the
 * copies in flight too (cudaFree synchronises the device).
 * A plan with sync steps maps and unmaps only there: what left in
 * between keeps its memory until the next sync step, which waits for every
 * copy, unmaps it all, then maps that step's prefetches.
 *
 * Device memory counts the fixed bytes, resident tensors, prefetched ones
 * from issue, offloaded ones until their copy completes and the workspace
 * beyond the steps' own: the running step's, or with scratch_held the
 * iteration's largest throughout (the manager's scratch stays mapped), or
 * in a gathered plan the stretch's largest from its sync step to the next
 * (mapped and unmapped there); it only grows when the host issues a prefetch or a
 * step starts, so those are where the peak and each step's memory are
 * taken (a prefetch's at the step issuing it). A plan that cannot be
 * followed reports its first violation and its compute time, nothing else.
 */
#include "policy/sn_plan.h"
#include "policy/sn_plan_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- plan bookkeeping ------------------------------------------------------------ */

void sn_plan_free(sn_plan *p)
{
    if (!p)
        return;
    free(p->actions);
    free(p->algo);
    free(p->gtbm_class);
    free(p->sync);
    memset(p, 0, sizeof *p);
}

uint64_t sn_plan_extra_workspace(const sn_plan_model *m, int s, const sn_plan_algo *alg)
{
    uint64_t own = m->step[s].own_workspace;
    return alg && alg->workspace > own ? alg->workspace - own : 0;
}

int sn_plan_algo_fastest(const sn_plan_model *m, int s)
{
    const sn_plan_step *st = &m->step[s];
    int best = -1;
    for (int a = 0; a < st->nalgo; a++)
        if (best < 0 || st->algo[a].ms < st->algo[best].ms ||
            (st->algo[a].ms == st->algo[best].ms &&
             sn_plan_extra_workspace(m, s, &st->algo[a]) < sn_plan_extra_workspace(m, s, &st->algo[best])))
            best = a;
    return best;
}

int sn_plan_algo_minws(const sn_plan_model *m, int s)
{
    const sn_plan_step *st = &m->step[s];
    int best = -1;
    for (int a = 0; a < st->nalgo; a++) {
        uint64_t ea = sn_plan_extra_workspace(m, s, &st->algo[a]);
        uint64_t eb = best < 0 ? 0 : sn_plan_extra_workspace(m, s, &st->algo[best]);
        if (best < 0 || ea < eb || (ea == eb && st->algo[a].ms < st->algo[best].ms))
            best = a;
    }
    return best;
}

const sn_plan_algo *sn_plan_step_algo(const sn_plan_model *m, const sn_plan *p, int s)
{
    if (!m || s < 0 || s >= m->nsteps)
        return NULL;
    const sn_plan_step *st = &m->step[s];
    int a = (p && p->algo) ? p->algo[s] : st->framework_algo;
    if (st->nalgo <= 0 || !st->algo || a < 0 || a >= st->nalgo)
        return NULL;
    return &st->algo[a];
}

double sn_plan_step_ms(const sn_plan_model *m, const sn_plan *p, int s)
{
    if (!m || !m->step || s < 0 || s >= m->nsteps)
        return 0.0;
    const sn_plan_algo *a = sn_plan_step_algo(m, p, s);
    return a ? a->ms : m->step[s].ms;
}

static int tl_time_ok(double ms)
{
    return isfinite(ms) && ms >= 0.0;
}

int sn_plan_check(const sn_plan_model *m, const sn_plan *p)
{
    if (!m || m->nsteps <= 0 || !m->step || m->ntensors < 0 || (m->ntensors > 0 && !m->tensor))
        return -1;
    if (!tl_time_ok(m->copy_ms) || !tl_time_ok(m->unmap_ms) || !tl_time_ok(m->map_ms))
        return -1;
    for (int s = 0; s < m->nsteps; s++) {
        const sn_plan_step *st = &m->step[s];
        if (!tl_time_ok(st->ms) || st->nalgo < 0 || (st->nalgo > 0 && !st->algo))
            return -1;
        for (int a = 0; a < st->nalgo; a++)
            if (!tl_time_ok(st->algo[a].ms))
                return -1;
    }
    for (int t = 0; t < m->ntensors; t++) {
        const sn_plan_tensor *x = &m->tensor[t];
        if (x->naccess < 0 || (x->naccess > 0 && !x->access))
            return -1;
        int lo = 0, hi = m->nsteps - 1;
        if (x->bounded) {
            if (x->alloc_step < 0 || x->alloc_step > x->free_step || x->free_step >= m->nsteps)
                return -1;
            lo = x->alloc_step;
            hi = x->free_step;
        }
        for (int i = 0; i < x->naccess; i++) {
            int s = x->access[i].step;
            if (s < lo || s > hi || (i > 0 && s < x->access[i - 1].step))
                return -1;
        }
    }
    if (!p)
        return 0;
    if (p->nactions < 0 || (p->nactions > 0 && !p->actions))
        return -1;
    for (int k = 0; k < p->nactions; k++) {
        const sn_plan_action *a = &p->actions[k];
        if (a->op != SN_PLAN_PREFETCH && a->op != SN_PLAN_OFFLOAD && a->op != SN_PLAN_DROP)
            return -1;
        if (a->tensor < 0 || a->tensor >= m->ntensors || a->step < 0 || a->step >= m->nsteps)
            return -1;
        if (a->op == SN_PLAN_PREFETCH && (a->need < 0 || a->need >= m->nsteps))
            return -1;
    }
    if (p->algo)
        for (int s = 0; s < m->nsteps; s++)
            if (p->algo[s] >= m->step[s].nalgo)
                return -1;
    return 0;
}

int sn_plan_next_access(const sn_plan_tensor *t, int step, int wrap)
{
    int lo = 0, hi = t->naccess; /* first access with step >= step: in [lo, hi] */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (t->access[mid].step < step)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < t->naccess)
        return lo;
    return (wrap && t->naccess > 0) ? 0 : -1;
}

int sn_plan_initial_residency(const sn_plan_model *m, const sn_plan *p, uint8_t *resident,
                              uint8_t *dropped)
{
    /* Keys order events within an iteration: a step's prefetches (3s), its
     * accesses (3s+1), then its offloads and drops (3s+2). Per tensor: the
     * last event moving it in or out (a fresh access maps a tensor that is
     * off, so it moves it in), its last fresh access and its last drop. */
    int nt = m->ntensors;
    size_t n = (size_t)(nt > 0 ? nt : 1);
    long *key = malloc(3 * n * sizeof *key);
    if (!key)
        return -1;
    long *move = key, *fresh = key + n, *drop = key + 2 * n;
    for (int t = 0; t < nt; t++) {
        const sn_plan_tensor *x = &m->tensor[t];
        fresh[t] = drop[t] = -1;
        for (int i = x->naccess - 1; i >= 0 && fresh[t] < 0; i--)
            if (sn_plan_mode_fresh(x->access[i].mode))
                fresh[t] = 3L * x->access[i].step + 1;
        move[t] = fresh[t];
        resident[t] = 1;
    }
    for (int k = 0; k < p->nactions; k++) {
        const sn_plan_action *a = &p->actions[k];
        int t = a->tensor;
        long at = 3L * a->step + (a->op == SN_PLAN_PREFETCH ? 0 : 2);
        if (at >= move[t]) {
            move[t] = at;
            resident[t] = a->op == SN_PLAN_PREFETCH;
        }
        if (a->op == SN_PLAN_DROP && at > drop[t])
            drop[t] = at;
    }
    for (int t = 0; t < nt; t++) {
        const sn_plan_tensor *x = &m->tensor[t];
        resident[t] = !x->bounded && (x->pinned || resident[t]);
        dropped[t] = !x->bounded && drop[t] > fresh[t];
    }
    free(key);
    return 0;
}

/* ---- the copy streams ------------------------------------------------------------ */

enum { TL_H2D, TL_D2H };
enum { TL_OFF, TL_RES, TL_COMING };

typedef struct tl_copy {
    int dep;           /* the copy that must complete before this one starts, -1 none */
    int done;
    double lat;        /* fixed cost still to pay, ms */
    double left;       /* bytes still to move */
    uint64_t release;  /* device bytes freed when it completes (an offload's) */
} tl_copy;

typedef struct tl_stream {
    int *q;            /* copies in issue order */
    int head, tail;
    double bw;         /* bytes per ms */
} tl_stream;

/* Index lists per step (a step's actions, accesses, ...), built once. */
typedef struct tl_lists {
    int *off;          /* nsteps + 1 */
    int *item;
} tl_lists;

typedef struct tl {
    const sn_plan_model *m;
    const sn_plan *p;
    double now;        /* ms; the host's clock, which the copies follow */
    double share;      /* each direction's share of its bandwidth while both move */
    uint64_t mem;      /* device bytes in use */
    tl_copy *copy;
    int ncopy;
    tl_stream st[2];
    uint8_t *state;    /* TL_* per tensor */
    uint8_t *dropped;  /* contents dropped and not rewritten since */
    int *coming;       /* TL_COMING: the prefetch instance (iteration * nactions + action) */
    int *going;        /* the tensor's last offload copy, -1 none */
    int *inst_copy;    /* per prefetch instance: its copy, -1 none */
    int gathered;      /* remap_drains and sync steps: moves of memory only there */
    uint64_t ws_held;  /* gathered: the workspace mapped for the current stretch; else, on a
                        * VMM arena, the largest of the iteration, mapped throughout */
    /* tensors that left and are still mapped (remap_drains): the copy out
     * (-1: a drop) and the bytes their unmapping gives back (gathered) */
    int *pend_t, *pend_c, *pend_of;
    uint64_t *pend_b;
    int npend;
    tl_lists act, need, acc_t, alloc, release;
    int *acc_mode;     /* parallel to acc_t.item */
} tl;

/* The copy stream d is working on, -1 when it is idle or its head waits
 * for the copy it depends on. */
static int tl_head(const tl *x, int d)
{
    const tl_stream *s = &x->st[d];
    if (s->head == s->tail)
        return -1;
    int c = s->q[s->head];
    int dep = x->copy[c].dep;
    return (dep >= 0 && !x->copy[dep].done) ? -1 : c;
}

/* Moves the copies on to the next event (a fixed cost paid, a copy
 * completed) or to limit, whichever is first. Returns 1 when an event
 * happened, 0 when limit was reached first, -1 when nothing can happen and
 * limit is infinite. */
static int tl_next(tl *x, double limit)
{
    int c[2];
    double ev[2] = {INFINITY, INFINITY}, rate[2] = {0.0, 0.0};
    int moving = 0;
    for (int d = 0; d < 2; d++) {
        c[d] = tl_head(x, d);
        if (c[d] >= 0 && x->copy[c[d]].lat <= 0.0)
            moving++;
    }
    for (int d = 0; d < 2; d++) {
        if (c[d] < 0)
            continue;
        const tl_copy *k = &x->copy[c[d]];
        if (k->lat > 0.0) {
            ev[d] = x->now + k->lat;
        } else {
            rate[d] = x->st[d].bw * (moving == 2 ? x->share : 1.0);
            ev[d] = x->now + k->left / rate[d];
        }
    }
    double te = fmax(fmin(ev[0], ev[1]), x->now);
    int fire = te <= limit;
    if (!fire) {
        if (isinf(limit))
            return -1;
        te = limit;
    }
    double dt = te - x->now;
    for (int d = 0; d < 2; d++) {
        if (c[d] < 0)
            continue;
        tl_copy *k = &x->copy[c[d]];
        int hit = fire && ev[d] <= te;
        if (k->lat > 0.0) {
            k->lat = hit ? 0.0 : k->lat - dt;
        } else if (hit) {
            k->left = 0.0;
            k->done = 1;
            x->st[d].head++;
            x->mem -= k->release;
        } else {
            k->left -= rate[d] * dt;
        }
    }
    x->now = te;
    return fire;
}

static int tl_advance(tl *x, double t)
{
    int r;
    while ((r = tl_next(x, t)) == 1)
        ;
    return r;
}

static int tl_wait_copy(tl *x, int c)
{
    while (!x->copy[c].done)
        if (tl_next(x, INFINITY) < 0)
            return -1;
    return 0;
}

/* Waits until both copy streams are idle: what a mapping or an unmapping
 * on a VMM arena waits for. */
static int tl_drain(tl *x)
{
    while (x->st[TL_H2D].head != x->st[TL_H2D].tail || x->st[TL_D2H].head != x->st[TL_D2H].tail)
        if (tl_next(x, INFINITY) < 0)
            return -1;
    return 0;
}

/* Waits until need more bytes fit in the budget; only offloads still
 * copying can make room. Returns 1 when they fit, 0 when they never will,
 * -1 on an internal inconsistency. */
static int tl_fit(tl *x, uint64_t need)
{
    uint64_t budget = x->p->budget;
    while (need > budget || x->mem > budget - need) {
        if (x->st[TL_D2H].head == x->st[TL_D2H].tail)
            return 0;
        if (tl_next(x, INFINITY) < 0)
            return -1;
    }
    return 1;
}

/* Queues a copy of bytes on stream d; -1 when that direction cannot copy. */
static int tl_copy_issue(tl *x, int d, uint64_t bytes, int dep, uint64_t release)
{
    const sn_plan_model *m = x->m;
    double gbps = d == TL_H2D ? m->h2d_gbps : m->d2h_gbps;
    if (!isfinite(gbps) || gbps <= 0.0)
        return -1;
    x->st[d].bw = gbps * 1e6;
    int c = x->ncopy++;
    x->copy[c] = (tl_copy){.dep = dep, .done = 0, .lat = m->copy_ms, .left = (double)bytes,
                           .release = release};
    x->st[d].q[x->st[d].tail++] = c;
    return c;
}

/* ---- per-step lists -------------------------------------------------------------- */

/* Room for lists holding n items over nsteps steps; off[] starts as zero
 * counts. */
static int tl_lists_alloc(tl_lists *l, int nsteps, int n)
{
    l->off = calloc((size_t)nsteps + 1, sizeof *l->off);
    l->item = malloc((size_t)(n > 0 ? n : 1) * sizeof *l->item);
    return (l->off && l->item) ? 0 : -1;
}

/* off[] holds counts per step shifted by one; turns them into offsets and
 * leaves fill[] as each step's next free slot. */
static void tl_lists_offsets(tl_lists *l, int nsteps, int *fill)
{
    for (int s = 0; s < nsteps; s++)
        l->off[s + 1] += l->off[s];
    memcpy(fill, l->off, (size_t)nsteps * sizeof *fill);
}

static void tl_lists_free(tl_lists *l)
{
    free(l->off);
    free(l->item);
}

static int tl_build(tl *x)
{
    const sn_plan_model *m = x->m;
    const sn_plan *p = x->p;
    int ns = m->nsteps, nacc = 0, nbounded = 0;
    for (int t = 0; t < m->ntensors; t++) {
        nacc += m->tensor[t].naccess;
        nbounded += m->tensor[t].bounded != 0;
    }
    int *fill = malloc((size_t)ns * sizeof *fill);
    x->acc_mode = malloc((size_t)(nacc > 0 ? nacc : 1) * sizeof *x->acc_mode);
    if (!fill || !x->acc_mode || tl_lists_alloc(&x->act, ns, p->nactions) ||
        tl_lists_alloc(&x->need, ns, p->nactions) || tl_lists_alloc(&x->acc_t, ns, nacc) ||
        tl_lists_alloc(&x->alloc, ns, nbounded) || tl_lists_alloc(&x->release, ns, nbounded)) {
        free(fill);
        return -1;
    }
    /* actions by step and prefetches by the step that waits for them, in
     * plan order (the order they are issued in) */
    for (int k = 0; k < p->nactions; k++) {
        x->act.off[p->actions[k].step + 1]++;
        if (p->actions[k].op == SN_PLAN_PREFETCH)
            x->need.off[p->actions[k].need + 1]++;
    }
    tl_lists_offsets(&x->act, ns, fill);
    for (int k = 0; k < p->nactions; k++)
        x->act.item[fill[p->actions[k].step]++] = k;
    tl_lists_offsets(&x->need, ns, fill);
    for (int k = 0; k < p->nactions; k++)
        if (p->actions[k].op == SN_PLAN_PREFETCH)
            x->need.item[fill[p->actions[k].need]++] = k;
    /* accesses by step, a tensor's own in their order */
    for (int t = 0; t < m->ntensors; t++)
        for (int i = 0; i < m->tensor[t].naccess; i++)
            x->acc_t.off[m->tensor[t].access[i].step + 1]++;
    tl_lists_offsets(&x->acc_t, ns, fill);
    for (int t = 0; t < m->ntensors; t++)
        for (int i = 0; i < m->tensor[t].naccess; i++) {
            int j = fill[m->tensor[t].access[i].step]++;
            x->acc_t.item[j] = t;
            x->acc_mode[j] = m->tensor[t].access[i].mode;
        }
    /* bounded tensors by the step creating them and the step freeing them */
    for (int t = 0; t < m->ntensors; t++)
        if (m->tensor[t].bounded) {
            x->alloc.off[m->tensor[t].alloc_step + 1]++;
            x->release.off[m->tensor[t].free_step + 1]++;
        }
    tl_lists_offsets(&x->alloc, ns, fill);
    for (int t = 0; t < m->ntensors; t++)
        if (m->tensor[t].bounded)
            x->alloc.item[fill[m->tensor[t].alloc_step]++] = t;
    tl_lists_offsets(&x->release, ns, fill);
    for (int t = 0; t < m->ntensors; t++)
        if (m->tensor[t].bounded)
            x->release.item[fill[m->tensor[t].free_step]++] = t;
    free(fill);
    return 0;
}

/* ---- the iteration --------------------------------------------------------------- */

/* Outcome of one host action: go on, the plan fails here, or an error. */
enum { TL_GO = 0, TL_BAD = 1, TL_ERR = -1 };

typedef struct tl_run {
    sn_plan_timeline *out;
    double *step_start;
    uint64_t *step_mem;
    int it;            /* 0: warm-up, 1: reported */
    double t0;         /* the reported iteration's start */
} tl_run;

static int tl_bad(tl_run *r, int s, int t, const char *why)
{
    r->out->feasible = 0;
    r->out->bad_step = s;
    r->out->bad_tensor = t;
    r->out->why = why;
    return TL_BAD;
}

static void tl_note_peak(const tl *x, tl_run *r, int s)
{
    if (r->it == 1 && x->mem > r->out->peak_bytes) {
        r->out->peak_bytes = x->mem;
        r->out->peak_step = s;
    }
}

/* Pending unmaps (remap_drains): pend_of[t] is 1 + t's entry, 0 none. */
static void tl_pend_push(tl *x, int t, int c, uint64_t bytes)
{
    int i = x->npend++;
    x->pend_t[i] = t;
    x->pend_c[i] = c;
    x->pend_b[i] = bytes;
    x->pend_of[t] = i + 1;
}

static void tl_pend_remove(tl *x, int i)
{
    int last = --x->npend;
    x->pend_of[x->pend_t[i]] = 0;
    if (i != last) {
        x->pend_t[i] = x->pend_t[last];
        x->pend_c[i] = x->pend_c[last];
        x->pend_b[i] = x->pend_b[last];
        x->pend_of[x->pend_t[i]] = i + 1;
    }
}

/* t, which left and is still mapped, is wanted again: it stays (as the
 * executor cancels a leave), its memory counted anew by the caller.
 * Returns 1 when so. */
static int tl_pend_cancel(tl *x, int t)
{
    int i = x->pend_of[t] - 1;
    if (i < 0)
        return 0;
    x->mem -= x->pend_b[i];
    tl_pend_remove(x, i);
    return 1;
}

/* The unmappings at step s's start: every tensor that left, at a sync
 * step of a gathered plan, after one wait for every copy in flight; else
 * those whose copy out has completed (drops at once), with no wait. */
static int tl_unmaps(tl *x, int s)
{
    if (!x->npend || (x->gathered && !x->p->sync[s]))
        return TL_GO;
    int n = 0;
    for (int i = 0; i < x->npend; i++)
        if (x->gathered || x->pend_c[i] < 0 || x->copy[x->pend_c[i]].done) {
            x->pend_c[i] = -2; /* unmapped now */
            n++;
        }
    if (!n)
        return TL_GO;
    if ((x->gathered || x->m->remap_wait_all) && tl_drain(x) < 0)
        return TL_ERR;
    for (int i = x->npend - 1; i >= 0; i--)
        if (x->pend_c[i] == -2) {
            x->mem -= x->pend_b[i];
            tl_pend_remove(x, i);
        }
    return tl_advance(x, x->now + n * x->m->unmap_ms) < 0 ? TL_ERR : TL_GO;
}

/* Whether a prefetch serving step need (of tensor t) has anything to copy:
 * not when the contents were dropped or the access it serves maps them
 * fresh. */
static int tl_prefetch_copies(const tl *x, int t, int need)
{
    const sn_plan_tensor *z = &x->m->tensor[t];
    if (x->dropped[t])
        return 0;
    int i = sn_plan_next_access(z, need, !z->bounded);
    return i < 0 || !sn_plan_mode_fresh(z->access[i].mode);
}

static int tl_prefetch_copy(tl *x, tl_run *r, int k);

/* The host issues prefetch k at step s: memory, mapping and (without
 * remap_drains) its copy; with remap_drains the copy comes from
 * tl_prefetch_copy once all of the step's prefetches are mapped. */
static int tl_prefetch(tl *x, tl_run *r, int k, int s)
{
    const sn_plan_action *a = &x->p->actions[k];
    const sn_plan_tensor *z = &x->m->tensor[a->tensor];
    int t = a->tensor, rd = x->m->remap_drains;
    if (z->bounded && (s <= z->alloc_step || s > z->free_step || a->need < s || a->need > z->free_step))
        return tl_bad(r, s, t, "prefetches a tensor outside its lifetime");
    if (x->state[t] != TL_OFF)
        return tl_bad(r, s, t, "prefetches a tensor already on the device");
    int inst = r->it * x->p->nactions + k;
    x->state[t] = TL_COMING;
    x->coming[t] = inst;
    if (rd && tl_pend_cancel(x, t)) {
        /* never unmapped: its contents are still there (a drop's stay
         * dropped) */
        x->mem += z->bytes;
        tl_note_peak(x, r, s);
        return TL_GO;
    }
    int f = tl_fit(x, z->bytes);
    if (f < 0)
        return TL_ERR;
    if (f == 0)
        return tl_bad(r, s, t, "a prefetch exceeds the budget");
    x->mem += z->bytes;
    tl_note_peak(x, r, s);
    if (z->bytes > 0 && ((rd && (x->gathered || x->m->remap_wait_all) && tl_drain(x) < 0) || tl_advance(x, x->now + x->m->map_ms) < 0))
        return TL_ERR;
    x->inst_copy[inst] = -3; /* mapped, its copy not issued yet */
    return rd ? TL_GO : tl_prefetch_copy(x, r, k);
}

/* The copy of prefetch k, mapped by tl_prefetch, when it has one. */
static int tl_prefetch_copy(tl *x, tl_run *r, int k)
{
    const sn_plan_action *a = &x->p->actions[k];
    const sn_plan_tensor *z = &x->m->tensor[a->tensor];
    int t = a->tensor;
    int inst = r->it * x->p->nactions + k;
    if (x->inst_copy[inst] != -3)
        return TL_GO;
    x->inst_copy[inst] = -1;
    if (z->bytes > 0 && tl_prefetch_copies(x, t, a->need)) {
        int dep = x->going[t];
        int c = tl_copy_issue(x, TL_H2D, z->bytes, (dep >= 0 && !x->copy[dep].done) ? dep : -1, 0);
        if (c < 0)
            return TL_ERR;
        x->inst_copy[inst] = c;
        if (r->it == 1)
            r->out->h2d_bytes += z->bytes;
    }
    return TL_GO;
}

static int tl_after(tl *x, tl_run *r, int k, int s)
{
    const sn_plan_action *a = &x->p->actions[k];
    const sn_plan_tensor *z = &x->m->tensor[a->tensor];
    int t = a->tensor, rd = x->m->remap_drains;
    int off = a->op == SN_PLAN_OFFLOAD;
    if (z->pinned)
        return tl_bad(r, s, t, off ? "offloads a pinned tensor" : "drops a pinned tensor");
    if (x->state[t] != TL_RES)
        return tl_bad(r, s, t, off ? "offloads a tensor that is not on the device"
                                   : "drops a tensor that is not on the device");
    x->state[t] = TL_OFF;
    /* a gathered plan's memory stays until its sync step */
    uint64_t held = x->gathered ? z->bytes : 0;
    if (z->bytes > 0 && !rd && tl_advance(x, x->now + x->m->unmap_ms) < 0)
        return TL_ERR;
    if (!off) {
        x->mem -= z->bytes - held;
        x->dropped[t] = 1;
        if (rd && z->bytes > 0)
            tl_pend_push(x, t, -1, held);
        return TL_GO;
    }
    if (z->bytes == 0)
        return TL_GO;
    int c = tl_copy_issue(x, TL_D2H, z->bytes, -1, z->bytes - held);
    if (c < 0)
        return TL_ERR;
    x->going[t] = c;
    if (rd)
        tl_pend_push(x, t, c, held);
    if (r->it == 1)
        r->out->d2h_bytes += z->bytes;
    return TL_GO;
}

uint64_t sn_plan_stretch_workspace(const sn_plan_model *m, const sn_plan *p, int s)
{
    uint64_t most = 0;
    for (int i = 0; i < m->nsteps; i++) {
        int k = (s + i) % m->nsteps;
        if (i > 0 && p->sync && p->sync[k])
            break;
        uint64_t e = sn_plan_extra_workspace(m, k, sn_plan_step_algo(m, p, k));
        if (e > most)
            most = e;
    }
    return most;
}

static int tl_step(tl *x, tl_run *r, int s)
{
    const sn_plan_model *m = x->m;
    const sn_plan *p = x->p;
    int na = p->nactions, rc;

    /* the host reaches step s */
    if (m->remap_drains && (rc = tl_unmaps(x, s)) != TL_GO)
        return rc;
    for (int j = x->act.off[s]; j < x->act.off[s + 1]; j++)
        if (p->actions[x->act.item[j]].op == SN_PLAN_PREFETCH &&
            (rc = tl_prefetch(x, r, x->act.item[j], s)) != TL_GO)
            return rc;
    if (m->remap_drains)
        for (int j = x->act.off[s]; j < x->act.off[s + 1]; j++)
            if (p->actions[x->act.item[j]].op == SN_PLAN_PREFETCH &&
                (rc = tl_prefetch_copy(x, r, x->act.item[j])) != TL_GO)
                return rc;

    /* the prefetches it waits for: a wrapped one was issued the iteration
     * before (in the warm-up, before the simulation: already there) */
    for (int j = x->need.off[s]; j < x->need.off[s + 1]; j++) {
        int k = x->need.item[j];
        int it = p->actions[k].step <= s ? r->it : r->it - 1;
        if (it < 0)
            continue;
        int inst = it * na + k, t = p->actions[k].tensor;
        if (x->inst_copy[inst] >= 0 && tl_wait_copy(x, x->inst_copy[inst]) < 0)
            return TL_ERR;
        if (x->state[t] == TL_COMING && x->coming[t] == inst)
            x->state[t] = TL_RES;
    }

    /* what it creates and what it touches; a gathered plan's workspace is
     * mapped at a sync step for its whole stretch (the old one unmapped in
     * the same wait) */
    const sn_plan_algo *alg = sn_plan_step_algo(m, p, s);
    uint64_t extra = x->gathered || m->scratch_held ? 0 : sn_plan_extra_workspace(m, s, alg);
    uint64_t own = extra;
    if (x->gathered && p->sync[s]) {
        x->mem -= x->ws_held;
        x->ws_held = sn_plan_stretch_workspace(m, p, s);
        own += x->ws_held;
    }
    double remap = 0.0;
    for (int j = x->alloc.off[s]; j < x->alloc.off[s + 1]; j++) {
        int t = x->alloc.item[j];
        x->state[t] = TL_RES;
        x->dropped[t] = 0;
        own += m->tensor[t].bytes;
    }
    for (int j = x->acc_t.off[s]; j < x->acc_t.off[s + 1]; j++) {
        int t = x->acc_t.item[j];
        int fresh = sn_plan_mode_fresh((unsigned)x->acc_mode[j]);
        if (x->state[t] == TL_COMING)
            return tl_bad(r, s, t, "accesses a tensor whose prefetch is needed later");
        if (x->state[t] == TL_OFF) {
            if (!fresh)
                return tl_bad(r, s, t, x->dropped[t] ? "reads dropped contents"
                                                     : "reads a tensor that is not on the device");
            x->state[t] = TL_RES;
            own += m->tensor[t].bytes;
            if (m->tensor[t].bytes > 0 && !(m->remap_drains && tl_pend_cancel(x, t)))
                remap += m->map_ms;
        } else if (!fresh && x->dropped[t]) {
            return tl_bad(r, s, t, "reads dropped contents");
        }
        if (fresh)
            x->dropped[t] = 0;
    }
    int f = tl_fit(x, own);
    if (f < 0)
        return TL_ERR;
    if (f == 0)
        return tl_bad(r, s, -1, "the step's own memory exceeds the budget");
    x->mem += own;
    tl_note_peak(x, r, s);
    if (remap > 0.0 && (((x->gathered || (m->remap_drains && m->remap_wait_all)) && tl_drain(x) < 0) || tl_advance(x, x->now + remap) < 0))
        return TL_ERR;
    if (r->it == 1) {
        if (r->step_start)
            r->step_start[s] = x->now - r->t0;
        if (r->step_mem)
            r->step_mem[s] = x->mem;
    }

    /* it runs; copies go on meanwhile */
    if (tl_advance(x, x->now + sn_plan_step_ms(m, p, s)) < 0)
        return TL_ERR;

    /* it has completed */
    x->mem -= extra;
    for (int j = x->act.off[s]; j < x->act.off[s + 1]; j++)
        if (p->actions[x->act.item[j]].op != SN_PLAN_PREFETCH &&
            (rc = tl_after(x, r, x->act.item[j], s)) != TL_GO)
            return rc;
    if (m->free_drains && x->release.off[s] < x->release.off[s + 1] && tl_drain(x) < 0)
        return TL_ERR;
    for (int j = x->release.off[s]; j < x->release.off[s + 1]; j++) {
        int t = x->release.item[j];
        if (x->state[t] != TL_OFF)
            x->mem -= m->tensor[t].bytes;
        x->state[t] = TL_OFF;
        x->dropped[t] = 0;
    }
    return TL_GO;
}

static int tl_run_all(tl *x, tl_run *r)
{
    const sn_plan_model *m = x->m;
    x->mem = m->fixed_bytes;
    if (x->gathered) {
        /* the stretch that wraps around into step 0 */
        int last = m->nsteps - 1;
        while (last > 0 && !x->p->sync[last])
            last--;
        x->ws_held = sn_plan_stretch_workspace(m, x->p, last);
    } else if (m->scratch_held) {
        /* the manager's scratch grows to the largest workspace and stays
         * mapped: unmapping it after each step would wait for the device
         * (no sync steps: the stretch is the whole iteration) */
        x->ws_held = sn_plan_stretch_workspace(m, x->p, 0);
    }
    x->mem += x->ws_held;
    for (int t = 0; t < m->ntensors; t++)
        if (x->state[t] == TL_RES)
            x->mem += m->tensor[t].bytes;
    if (x->mem > x->p->budget)
        return tl_bad(r, 0, -1, "the tensors resident at the iteration's start exceed the budget");
    for (r->it = 0; r->it < 2; r->it++) {
        if (r->it == 1) {
            r->t0 = x->now;
            r->out->peak_bytes = x->mem;
            r->out->peak_step = 0;
        }
        for (int s = 0; s < m->nsteps; s++) {
            int rc = tl_step(x, r, s);
            if (rc != TL_GO)
                return rc;
        }
    }
    r->out->iter_ms = x->now - r->t0;
    r->out->stall_ms = r->out->iter_ms - r->out->compute_ms;
    return TL_GO;
}

static void tl_free(tl *x)
{
    free(x->copy);
    free(x->st[0].q);
    free(x->st[1].q);
    free(x->state);
    free(x->dropped);
    free(x->coming);
    free(x->going);
    free(x->inst_copy);
    free(x->pend_t);
    free(x->pend_c);
    free(x->pend_b);
    free(x->pend_of);
    tl_lists_free(&x->act);
    tl_lists_free(&x->need);
    tl_lists_free(&x->acc_t);
    tl_lists_free(&x->alloc);
    tl_lists_free(&x->release);
    free(x->acc_mode);
}

int sn_plan_simulate(const sn_plan_model *m, const sn_plan *p, sn_plan_timeline *out,
                     double *step_start_ms, uint64_t *step_mem)
{
    if (!out)
        return -1;
    memset(out, 0, sizeof *out);
    out->bad_step = out->bad_tensor = -1;
    out->peak_step = -1;
    if (!p || sn_plan_check(m, p) < 0)
        return -1;
    int nt = m->ntensors, na = p->nactions;
    /* the copies with the two directions in contention need a share */
    int any_pf = 0, any_off = 0;
    for (int k = 0; k < na; k++) {
        any_pf |= p->actions[k].op == SN_PLAN_PREFETCH;
        any_off |= p->actions[k].op == SN_PLAN_OFFLOAD;
    }
    if (any_pf && any_off && !(m->duplex > 0.0 && isfinite(m->duplex)))
        return -1;
    if (step_start_ms)
        memset(step_start_ms, 0, (size_t)m->nsteps * sizeof *step_start_ms);
    if (step_mem)
        memset(step_mem, 0, (size_t)m->nsteps * sizeof *step_mem);
    for (int s = 0; s < m->nsteps; s++)
        out->compute_ms += sn_plan_step_ms(m, p, s);

    tl x = {.m = m, .p = p, .share = fmin(1.0, m->duplex / 2.0)};
    size_t ncap = 2 * (size_t)(na > 0 ? na : 1), ntc = (size_t)(nt > 0 ? nt : 1);
    x.copy = malloc(ncap * sizeof *x.copy);
    x.st[0].q = malloc(ncap * sizeof *x.st[0].q);
    x.st[1].q = malloc(ncap * sizeof *x.st[1].q);
    x.state = calloc(ntc, 1);
    x.dropped = calloc(ntc, 1);
    x.coming = malloc(ntc * sizeof *x.coming);
    x.going = malloc(ntc * sizeof *x.going);
    x.inst_copy = malloc(ncap * sizeof *x.inst_copy);
    x.gathered = m->remap_drains && p->sync;
    /* (a tensor is pending once at most) */
    x.pend_t = malloc(ntc * sizeof *x.pend_t);
    x.pend_c = malloc(ntc * sizeof *x.pend_c);
    x.pend_b = malloc(ntc * sizeof *x.pend_b);
    x.pend_of = calloc(ntc, sizeof *x.pend_of);
    int rc = TL_ERR;
    if (!x.copy || !x.st[0].q || !x.st[1].q || !x.state || !x.dropped || !x.coming || !x.going ||
        !x.inst_copy || !x.pend_t || !x.pend_c || !x.pend_b || !x.pend_of || tl_build(&x) < 0)
        goto done;
    for (size_t i = 0; i < ncap; i++)
        x.inst_copy[i] = -1;
    for (int t = 0; t < nt; t++)
        x.coming[t] = x.going[t] = -1;
    /* resident[] is 0/1, which are TL_OFF/TL_RES */
    if (sn_plan_initial_residency(m, p, x.state, x.dropped) < 0)
        goto done;

    tl_run r = {.out = out, .step_start = step_start_ms, .step_mem = step_mem};
    out->feasible = 1;
    rc = tl_run_all(&x, &r);
done:
    tl_free(&x);
    if (rc == TL_GO)
        return 0;
    /* a plan that fails says where and what it would compute; an error
     * leaves nothing */
    sn_plan_timeline bad = *out;
    memset(out, 0, sizeof *out);
    out->bad_step = out->bad_tensor = out->peak_step = -1;
    if (step_start_ms)
        memset(step_start_ms, 0, (size_t)m->nsteps * sizeof *step_start_ms);
    if (step_mem)
        memset(step_mem, 0, (size_t)m->nsteps * sizeof *step_mem);
    if (rc != TL_BAD)
        return -1;
    out->compute_ms = bad.compute_ms;
    out->bad_step = bad.bad_step;
    out->bad_tensor = bad.bad_tensor;
    out->why = bad.why;
    return 0;
}
