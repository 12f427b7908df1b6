/*
 * sn_policy_util.c — the ground every policy stands on: the model indexed
 * by step, when contents are dead, algorithm choices, the normalisation
 * that turns loosely emitted actions into the exact plan sn_plan.h defines,
 * and the memory profile of a plan (the timeline's memory with copies that
 * take no time, which decides feasibility exactly and costs a fraction of
 * a full simulation).
 */
#include "policy/sn_policy.h"

#include <stdlib.h>
#include <string.h>

#include "common/sn_array.h"
#include "common/sn_gtbm_class.h"

/* ---- actions -------------------------------------------------------------------- */

int sn_pol_push(sn_pol_acts *A, int op, int t, int step, int need)
{
    size_t cap = (size_t)A->cap;
    if (sn_array_room(&A->a, (size_t)A->n, &cap, sizeof *A->a, 16) < 0)
        return -1;
    A->cap = (int)cap;
    A->a[A->n++] = (sn_plan_action){.op = op, .tensor = t, .step = step, .need = need};
    return 0;
}

int sn_pol_copy(sn_pol_acts *dst, const sn_pol_acts *src)
{
    sn_pol_acts c = {0};
    if (src->n > 0) {
        c.a = malloc((size_t)src->n * sizeof *c.a);
        if (!c.a)
            return -1;
        memcpy(c.a, src->a, (size_t)src->n * sizeof *c.a);
        c.n = c.cap = src->n;
    }
    if (src->sync) {
        c.sync = malloc((size_t)src->nsync);
        if (!c.sync) {
            free(c.a);
            return -1;
        }
        memcpy(c.sync, src->sync, (size_t)src->nsync);
        c.nsync = src->nsync;
    }
    sn_pol_acts_free(dst);
    *dst = c;
    return 0;
}

void sn_pol_acts_free(sn_pol_acts *A)
{
    free(A->a);
    free(A->sync);
    memset(A, 0, sizeof *A);
}

/* ---- the model ------------------------------------------------------------------ */

/* Distinct layers among the forward steps that read t (a step with no
 * layer counts as its own). */
static int fwd_reader_layers(const sn_pol *P, int t)
{
    const sn_plan_tensor *x = &P->m->tensor[t];
    int n = 0, last = -3;
    for (int i = 0; i < x->naccess; i++) {
        int s = x->access[i].step;
        const sn_plan_step *st = &P->m->step[s];
        if (st->phase != 0 || !(x->access[i].mode & SN_PLAN_R))
            continue;
        int id = st->layer >= 0 ? st->layer : -(s + 10);
        if (id != last) /* one layer's steps are consecutive */
            n++;
        last = id;
    }
    return n;
}

/* Dymem's grouping by mobility, the default placement for every policy,
 * through the one classifier the allocator uses too (sn_gtbm_classify):
 * weights, pinned memory, memory that lives throughout (optimizer state:
 * unbounded tensors of no other role) and small buffers are LONG; a
 * workspace is MOVABLE; a tensor read by several layers in the forward
 * pass, or a gradient written several times (added into), is TEMP; other
 * feature maps and gradients are MOVABLE. Only gradients count their
 * writes: a feature map written twice (an in-place layer) is still one
 * consumer's. */
static int classify(const sn_pol *P, int t)
{
    const sn_plan_tensor *x = &P->m->tensor[t];
    sn_gtbm_facts f = {.size = x->bytes};
    int grad = x->role == SN_PLAN_GRADIENT || x->role == SN_PLAN_WEIGHT_GRAD;
    f.crosses_iteration = x->pinned || x->role == SN_PLAN_WEIGHT ||
                          (!x->bounded && x->role != SN_PLAN_FEATURE && !grad && x->role != SN_PLAN_WORKSPACE);
    f.scratch = x->role == SN_PLAN_WORKSPACE;
    /* counting is what the classifier would ignore for these: skip it */
    if (f.crosses_iteration || f.scratch || f.size < SN_GTBM_SMALL)
        return sn_gtbm_classify(&f);
    f.consumers = fwd_reader_layers(P, t);
    if (grad) {
        int writes = 0;
        for (int i = 0; i < x->naccess; i++)
            writes += (x->access[i].mode & SN_PLAN_W) != 0;
        f.accumulated = writes >= 2;
    }
    return sn_gtbm_classify(&f);
}

/* Bounded tensors listed by the step that creates (born) or frees them. */
static int by_step(const sn_pol *P, int born, int **offp, int **itemp)
{
    int *off = calloc((size_t)P->ns + 1, sizeof *off);
    int *item = malloc((size_t)(P->nt ? P->nt : 1) * sizeof *item);
    *offp = off;
    *itemp = item;
    if (!off || !item)
        return -1;
    const sn_plan_tensor *x = P->m->tensor;
    for (int t = 0; t < P->nt; t++)
        if (x[t].bounded)
            off[(born ? x[t].alloc_step : x[t].free_step) + 1]++;
    for (int s = 0; s < P->ns; s++)
        off[s + 1] += off[s];
    int *fill = malloc((size_t)P->ns * sizeof *fill);
    if (!fill)
        return -1;
    memcpy(fill, off, (size_t)P->ns * sizeof *fill);
    for (int t = 0; t < P->nt; t++)
        if (x[t].bounded)
            item[fill[born ? x[t].alloc_step : x[t].free_step]++] = t;
    free(fill);
    return 0;
}

int sn_pol_init(sn_pol *P, const sn_plan_model *m, uint64_t budget)
{
    memset(P, 0, sizeof *P);
    P->m = m;
    P->budget = budget;
    P->ns = m->nsteps;
    P->nt = m->ntensors;
    int nacc = 0;
    for (int t = 0; t < P->nt; t++)
        nacc += m->tensor[t].naccess;
    P->acc_off = calloc((size_t)P->ns + 1, sizeof *P->acc_off);
    P->acc_t = malloc((size_t)(nacc ? nacc : 1) * sizeof *P->acc_t);
    P->acc_mode = malloc((size_t)(nacc ? nacc : 1));
    P->gtbm = malloc((size_t)(P->nt ? P->nt : 1) * sizeof *P->gtbm);
    int *fill = malloc((size_t)P->ns * sizeof *fill);
    if (!P->acc_off || !P->acc_t || !P->acc_mode || !P->gtbm || !fill) {
        free(fill);
        sn_pol_fini(P);
        return -1;
    }
    for (int t = 0; t < P->nt; t++)
        for (int i = 0; i < m->tensor[t].naccess; i++)
            P->acc_off[m->tensor[t].access[i].step + 1]++;
    for (int s = 0; s < P->ns; s++)
        P->acc_off[s + 1] += P->acc_off[s];
    memcpy(fill, P->acc_off, (size_t)P->ns * sizeof *fill);
    for (int t = 0; t < P->nt; t++)
        for (int i = 0; i < m->tensor[t].naccess; i++) {
            int j = fill[m->tensor[t].access[i].step]++;
            P->acc_t[j] = t;
            P->acc_mode[j] = m->tensor[t].access[i].mode;
        }
    free(fill);
    if (by_step(P, 1, &P->born_off, &P->born_t) < 0 || by_step(P, 0, &P->gone_off, &P->gone_t) < 0) {
        sn_pol_fini(P);
        return -1;
    }
    for (int t = 0; t < P->nt; t++)
        P->gtbm[t] = classify(P, t);
    return 0;
}

void sn_pol_fini(sn_pol *P)
{
    free(P->acc_off);
    free(P->acc_t);
    free(P->acc_mode);
    free(P->gtbm);
    free(P->born_off);
    free(P->born_t);
    free(P->gone_off);
    free(P->gone_t);
    memset(P, 0, sizeof *P);
}

unsigned sn_pol_mode_at(const sn_pol *P, int t, int s)
{
    const sn_plan_tensor *x = &P->m->tensor[t];
    int i = sn_plan_next_access(x, s, 0);
    return (i >= 0 && x->access[i].step == s) ? x->access[i].mode : 0;
}

int sn_pol_next_use(const sn_pol *P, int t, int s, unsigned *mode)
{
    const sn_plan_tensor *x = &P->m->tensor[t];
    int i = s + 1 < P->ns ? sn_plan_next_access(x, s + 1, !x->bounded)
                          : (!x->bounded && x->naccess > 0 ? 0 : -1);
    if (i < 0)
        return -1;
    if (mode)
        *mode = x->access[i].mode;
    return x->access[i].step;
}

int sn_pol_prev_use(const sn_pol *P, int t, int s)
{
    const sn_plan_tensor *x = &P->m->tensor[t];
    if (x->naccess == 0)
        return -1;
    int i = sn_plan_next_access(x, s, 0); /* first at or after s */
    int j = (i < 0 ? x->naccess : i) - 1;
    if (j >= 0)
        return x->access[j].step;
    return x->bounded ? -1 : x->access[x->naccess - 1].step;
}

int sn_pol_dead_after(const sn_pol *P, int t, int s)
{
    unsigned mode = 0;
    if (sn_pol_next_use(P, t, s, &mode) < 0)
        return 1;
    return sn_plan_mode_fresh(mode);
}

int sn_pol_dist(const sn_pol *P, int a, int b)
{
    return ((b - a) % P->ns + P->ns) % P->ns;
}

uint64_t sn_pol_extra(const sn_pol *P, int s, int a)
{
    return sn_plan_extra_workspace(P->m, s, &P->m->step[s].algo[a]);
}

const sn_pol *sn_pol_step_workspace(const sn_pol *P, sn_plan_model *m0, sn_pol *P0)
{
    if (!P->m->scratch_held)
        return P;
    *m0 = *P->m;
    m0->scratch_held = 0;
    *P0 = *P;
    P0->m = m0;
    return P0;
}

uint64_t sn_pol_ws(const sn_pol *P, const int *algo, int s)
{
    sn_plan p = {.algo = (int *)algo};
    return sn_plan_extra_workspace(P->m, s, sn_plan_step_algo(P->m, &p, s));
}

int sn_pol_algo_fastest(const sn_pol *P, int s)
{
    return sn_plan_algo_fastest(P->m, s);
}

int sn_pol_algo_minws(const sn_pol *P, int s)
{
    return sn_plan_algo_minws(P->m, s);
}

double sn_pol_ms(const sn_pol *P, const int *algo, int s)
{
    sn_plan p = {.algo = (int *)algo};
    return sn_plan_step_ms(P->m, &p, s);
}

void sn_pol_algo_framework(const sn_pol *P, int *algo)
{
    for (int s = 0; s < P->ns; s++)
        algo[s] = P->m->step[s].nalgo > 0 ? P->m->step[s].framework_algo : -1;
}

/* ---- normalisation ---------------------------------------------------------------- */

typedef struct keyed {
    sn_plan_action a;
    int idx;
} keyed;

static int by_tensor(const void *pa, const void *pb)
{
    const keyed *a = pa, *b = pb;
    if (a->a.tensor != b->a.tensor)
        return a->a.tensor < b->a.tensor ? -1 : 1;
    if (a->a.step != b->a.step)
        return a->a.step < b->a.step ? -1 : 1;
    int pa_ = a->a.op != SN_PLAN_PREFETCH, pb_ = b->a.op != SN_PLAN_PREFETCH;
    if (pa_ != pb_)
        return pa_ - pb_;
    return a->idx - b->idx;
}

/* The order the plan is issued in; n is the step count, passed through the
 * key so that qsort needs no context. */
typedef struct issued {
    sn_plan_action a;
    int dist; /* prefetch: steps until it is needed */
} issued;

static int by_issue(const void *pa, const void *pb)
{
    const issued *a = pa, *b = pb;
    if (a->a.step != b->a.step)
        return a->a.step < b->a.step ? -1 : 1;
    int pa_ = a->a.op != SN_PLAN_PREFETCH, pb_ = b->a.op != SN_PLAN_PREFETCH;
    if (pa_ != pb_)
        return pa_ - pb_;
    if (a->dist != b->dist)
        return a->dist < b->dist ? -1 : 1;
    return a->a.tensor - b->a.tensor;
}

enum { ST_OFF = 0, ST_ON = 1, ST_COMING = 2, ST_NONE = 3 };

/* One tensor's events over two iterations; the second, started from the
 * state the first leaves (the steady state), is the one emitted. Only the
 * steps where something happens to the tensor are visited. */
static int normalize_tensor(const sn_pol *P, int t, const keyed *k, int nk, sn_pol_acts *out)
{
    const sn_plan_tensor *x = &P->m->tensor[t];
    int st = x->bounded ? ST_NONE : ST_ON;
    if (x->pinned)
        return 0; /* never moves: every action on it goes */
    for (int pass = 0; pass < 2; pass++) {
        int j = 0, i = 0;
        int born = x->bounded ? x->alloc_step : P->ns, gone = x->bounded ? x->free_step : P->ns;
        for (;;) {
            int s = P->ns;
            if (j < nk && k[j].a.step < s)
                s = k[j].a.step;
            if (i < x->naccess && x->access[i].step < s)
                s = x->access[i].step;
            if (born < s)
                s = born;
            if (gone < s)
                s = gone;
            if (s >= P->ns)
                break;
            for (; j < nk && k[j].a.step == s && k[j].a.op == SN_PLAN_PREFETCH; j++) {
                if (st != ST_OFF)
                    continue;
                int n = sn_plan_next_access(x, s, !x->bounded);
                if (n < 0 || sn_plan_mode_fresh(x->access[n].mode))
                    continue; /* nothing to bring back: the access maps it */
                if (pass && sn_pol_push(out, SN_PLAN_PREFETCH, t, s, x->access[n].step) < 0)
                    return -1;
                st = ST_COMING;
            }
            if (born == s) {
                st = ST_ON;
                born = P->ns;
            }
            if (i < x->naccess && x->access[i].step == s) {
                if (st == ST_OFF && !sn_plan_mode_fresh(x->access[i].mode) && pass &&
                    sn_pol_push(out, SN_PLAN_PREFETCH, t, s, s) < 0)
                    return -1;
                st = ST_ON;
                while (i < x->naccess && x->access[i].step == s)
                    i++;
            }
            for (; j < nk && k[j].a.step == s; j++) {
                if (st != ST_ON)
                    continue;
                int op = k[j].a.op;
                if (op == SN_PLAN_DROP && !sn_pol_dead_after(P, t, s))
                    op = SN_PLAN_OFFLOAD;
                if (pass && sn_pol_push(out, op, t, s, 0) < 0)
                    return -1;
                st = ST_OFF;
            }
            if (gone == s) {
                st = ST_NONE;
                gone = P->ns;
            }
        }
    }
    return 0;
}

int sn_pol_normalize(const sn_pol *P, sn_pol_acts *A)
{
    keyed *k = malloc((size_t)(A->n ? A->n : 1) * sizeof *k);
    if (!k)
        return -1;
    int n = 0;
    for (int i = 0; i < A->n; i++) {
        const sn_plan_action *a = &A->a[i];
        if (a->tensor < 0 || a->tensor >= P->nt || a->step < 0 || a->step >= P->ns)
            continue;
        k[n++] = (keyed){.a = *a, .idx = i};
    }
    qsort(k, (size_t)n, sizeof *k, by_tensor);
    sn_pol_acts out = {0};
    int rc = 0;
    for (int t = 0, j = 0; t < P->nt && rc == 0; t++) {
        int j0 = j;
        while (j < n && k[j].a.tensor == t)
            j++;
        rc = normalize_tensor(P, t, k + j0, j - j0, &out);
    }
    free(k);
    if (rc != 0 || sn_pol_sort(P, &out) != 0) {
        sn_pol_acts_free(&out);
        return -1;
    }
    sn_pol_acts_free(A);
    *A = out;
    return 0;
}

int sn_pol_sort(const sn_pol *P, sn_pol_acts *A)
{
    issued *is = malloc((size_t)(A->n ? A->n : 1) * sizeof *is);
    if (!is)
        return -1;
    for (int i = 0; i < A->n; i++)
        is[i] = (issued){.a = A->a[i],
                         .dist = A->a[i].op == SN_PLAN_PREFETCH ? sn_pol_dist(P, A->a[i].step, A->a[i].need) : 0};
    qsort(is, (size_t)A->n, sizeof *is, by_issue);
    for (int i = 0; i < A->n; i++)
        A->a[i] = is[i].a;
    free(is);
    return 0;
}

/* ---- memory profile and evaluation -------------------------------------------------- */

uint64_t sn_pol_profile(const sn_pol *P, const sn_pol_acts *A, const int *algo, uint64_t *mem)
{
    const sn_plan_model *m = P->m;
    size_t nt = (size_t)(P->nt ? P->nt : 1);
    uint8_t *st = malloc(nt), *dropped = malloc(nt);
    if (!st || !dropped) {
        free(st);
        free(dropped);
        return UINT64_MAX;
    }
    sn_plan p = {.nactions = A->n, .actions = A->a, .algo = (int *)algo};
    sn_plan_initial_residency(m, &p, st, dropped);
    free(dropped);
    uint64_t cur = m->fixed_bytes;
    /* scratch_held: the manager's scratch holds the largest workspace
     * throughout, as the timeline counts it for a plan without sync steps */
    if (m->scratch_held)
        cur += sn_plan_stretch_workspace(m, &p, 0);
    for (int t = 0; t < P->nt; t++)
        if (st[t])
            cur += m->tensor[t].bytes;
    uint64_t peak = cur;
    int j = 0;
    for (int s = 0; s < P->ns; s++) {
        int j0 = j;
        for (; j < A->n && A->a[j].step == s; j++)
            if (A->a[j].op == SN_PLAN_PREFETCH) {
                cur += m->tensor[A->a[j].tensor].bytes;
                st[A->a[j].tensor] = SN_POL_COMING;
            }
        uint64_t ws = m->scratch_held ? 0 : sn_pol_ws(P, algo, s), own = ws;
        for (int i = P->born_off[s]; i < P->born_off[s + 1]; i++) {
            st[P->born_t[i]] = SN_POL_ON;
            own += m->tensor[P->born_t[i]].bytes;
        }
        for (int i = P->acc_off[s]; i < P->acc_off[s + 1]; i++) {
            int t = P->acc_t[i];
            if (st[t] == SN_POL_OFF)
                own += m->tensor[t].bytes;
            st[t] = SN_POL_ON;
        }
        cur += own;
        if (mem)
            mem[s] = cur;
        if (cur > peak)
            peak = cur;
        cur -= ws;
        for (int i = j0; i < j; i++)
            if (A->a[i].op != SN_PLAN_PREFETCH && st[A->a[i].tensor] != SN_POL_OFF) {
                cur -= m->tensor[A->a[i].tensor].bytes;
                st[A->a[i].tensor] = SN_POL_OFF;
            }
        for (int i = P->gone_off[s]; i < P->gone_off[s + 1]; i++) {
            int t = P->gone_t[i];
            if (st[t] != SN_POL_OFF)
                cur -= m->tensor[t].bytes;
            st[t] = SN_POL_OFF;
        }
    }
    free(st);
    return peak;
}

int sn_pol_eval(const sn_pol *P, const sn_pol_acts *A, const int *algo, uint64_t budget,
                sn_plan_timeline *tl, uint64_t *step_mem)
{
    sn_plan p = {.budget = budget,
                 .nactions = A->n,
                 .actions = A->a,
                 .algo = (int *)algo,
                 .gtbm_class = P->gtbm,
                 .sync = A->sync};
    return sn_plan_simulate(P->m, &p, tl, NULL, step_mem);
}

int sn_pol_better(const sn_plan_timeline *a, const sn_plan_timeline *b)
{
    if (a->feasible != b->feasible)
        return a->feasible;
    if (!a->feasible)
        return 0;
    if (a->iter_ms != b->iter_ms)
        return a->iter_ms < b->iter_ms;
    uint64_t ca = a->h2d_bytes + a->d2h_bytes, cb = b->h2d_bytes + b->d2h_bytes;
    if (ca != cb)
        return ca < cb;
    return a->peak_bytes < b->peak_bytes;
}
