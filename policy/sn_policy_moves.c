/*
 * sn_policy_moves.c — the moves the seed systems are built from: the
 * tensor cache that evicts under a budget (SuperNeurons' LRU tensor cache,
 * and Belady's farthest-next-use rule that libsn's own policy uses), the
 * forward-to-backward swap of a feature map (vDNN and its successors),
 * liveness drops, and moving prefetches earlier as far as memory allows
 * (PoocH's early swap-in, Dymem's dependency-driven prefetch).
 */
#include "policy/sn_policy.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Steps from a forward to b, a full iteration when they are the same step
 * (the next use of a tensor used once per iteration). */
static int gap(const sn_pol *P, int a, int b)
{
    int d = sn_pol_dist(P, a, b);
    return d ? d : P->ns;
}

/* ---- the tensor cache ------------------------------------------------------------- */

typedef struct victim {
    int t;
    long key;        /* larger goes first */
    uint64_t bytes;
} victim;

static int by_key(const void *pa, const void *pb)
{
    const victim *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key > b->key ? -1 : 1;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    return a->t - b->t;
}

/* Compute time strictly between the end of step a and the start of step
 * b, going forward around the iteration; clock holds the steps' start
 * times (ns + 1 entries). */
static double span_ms(const sn_pol *P, const double *clock, int a, int b)
{
    double d = clock[b] - clock[a + 1];
    return b > a ? d : d + clock[P->ns];
}

/* Offloading and prefetching bytes back, each direction alone. */
static double round_trip(const sn_plan_model *m, uint64_t bytes)
{
    return 2.0 * m->copy_ms + (double)bytes / (m->d2h_gbps * 1e6) + (double)bytes / (m->h2d_gbps * 1e6);
}

/* Where t's eviction goes when step s needs its memory: right before s
 * (LRU's demand eviction) or right after t's last use (Belady's, so the
 * copy has the whole gap to complete). */
static int evict_after(const sn_pol *P, int t, int s, int rule)
{
    const sn_plan_tensor *x = &P->m->tensor[t];
    int before = (s - 1 + P->ns) % P->ns;
    if (rule == SN_POL_LRU)
        return before;
    int e = sn_pol_prev_use(P, t, s);
    if (x->bounded && (e < 0 || e < x->alloc_step))
        e = x->alloc_step;
    return e < 0 ? before : e;
}

/* The steps of t's offloads and drops in the plan before the cache added
 * any, per tensor (CSR by tensor). */
typedef struct exits {
    int *off, *step;
} exits;

static int exits_build(const sn_pol *P, const sn_pol_acts *A, exits *x)
{
    x->off = calloc((size_t)P->nt + 1, sizeof *x->off);
    x->step = malloc((size_t)(A->n ? A->n : 1) * sizeof *x->step);
    int *fill = malloc((size_t)(P->nt ? P->nt : 1) * sizeof *fill);
    if (!x->off || !x->step || !fill) {
        free(fill);
        return -1;
    }
    for (int k = 0; k < A->n; k++)
        if (A->a[k].op != SN_PLAN_PREFETCH)
            x->off[A->a[k].tensor + 1]++;
    for (int t = 0; t < P->nt; t++)
        x->off[t + 1] += x->off[t];
    memcpy(fill, x->off, (size_t)P->nt * sizeof *fill);
    for (int k = 0; k < A->n; k++) /* A is sorted by step: so is each list */
        if (A->a[k].op != SN_PLAN_PREFETCH)
            x->step[fill[A->a[k].tensor]++] = A->a[k].step;
    free(fill);
    return 0;
}

/* The first exit of t at or after step s, looking on from the iteration's
 * start for a tensor that lives throughout; -1 when none. */
static int exit_from(const sn_pol *P, const exits *x, int t, int s)
{
    int lo = x->off[t], hi = x->off[t + 1];
    for (int k = lo; k < hi; k++)
        if (x->step[k] >= s)
            return x->step[k];
    return (hi > lo && !P->m->tensor[t].bounded) ? x->step[lo] : -1;
}

/* The plan sn_pol_cache is making: its actions, where they already have
 * each tensor leave, and the memory profile they leave. */
typedef struct cache_plan {
    sn_pol_acts *A;
    const exits *x;
    uint64_t *mem;
} cache_plan;

/* Evicts t, on the device while step s runs and not used there, and takes
 * its bytes off mem[] for every step it is now off: from the step after
 * the eviction to its next use (or its free), or to where the plan already
 * had it leave. */
static int evict(const sn_pol *P, const cache_plan *cp, int t, int s, int rule)
{
    sn_pol_acts *A = cp->A;
    const exits *x = cp->x;
    uint64_t *mem = cp->mem;
    const sn_plan_tensor *z = &P->m->tensor[t];
    int e = evict_after(P, t, s, rule);
    int n = sn_pol_next_use(P, t, e, NULL);
    if (sn_pol_dead_after(P, t, e)) {
        if (sn_pol_push(A, SN_PLAN_DROP, t, e, 0) < 0)
            return -1;
    } else if (sn_pol_push(A, SN_PLAN_OFFLOAD, t, e, 0) < 0 ||
               sn_pol_push(A, SN_PLAN_PREFETCH, t, n, n) < 0) {
        return -1;
    }
    int len = n >= 0 ? gap(P, e, n) - 1 : z->free_step - e;
    int k0 = exit_from(P, x, t, s);
    if (k0 >= 0 && sn_pol_dist(P, e, k0) < len)
        len = sn_pol_dist(P, e, k0);
    for (int i = 1; i <= len; i++)
        mem[(e + i) % P->ns] -= z->bytes;
    return 0;
}

int sn_pol_cache(const sn_pol *P, sn_pol_acts *A, const int *algo, uint64_t budget, int rule)
{
    const sn_plan_model *m = P->m;
    size_t nt = (size_t)(P->nt ? P->nt : 1);
    uint64_t *mem = malloc((size_t)P->ns * sizeof *mem);
    uint8_t *st = malloc(nt), *dropped = malloc(nt);
    victim *v = malloc(nt * sizeof *v);
    exits x = {0};
    double *clock = malloc(((size_t)P->ns + 1) * sizeof *clock);
    int rc = -1;
    if (!clock)
        goto out;
    clock[0] = 0.0;
    for (int s = 0; s < P->ns; s++)
        clock[s + 1] = clock[s] + sn_pol_ms(P, algo, s);
    if (!mem || !st || !dropped || !v || sn_pol_normalize(P, A) < 0 || exits_build(P, A, &x) < 0 ||
        sn_pol_profile(P, A, algo, mem) == UINT64_MAX)
        goto out;
    sn_plan view = {.nactions = A->n, .actions = A->a};
    sn_plan_initial_residency(m, &view, st, dropped);
    /* One sweep: evictions only ever lower memory, so a step once within
     * the budget stays there, and each step is fixed when the sweep reaches
     * it, with the tensors' states there. */
    int base = A->n, j = 0;
    for (int s = 0; s < P->ns; s++) {
        for (; j < base && A->a[j].step == s && A->a[j].op == SN_PLAN_PREFETCH; j++)
            st[A->a[j].tensor] = SN_POL_COMING;
        for (int i = P->born_off[s]; i < P->born_off[s + 1]; i++)
            st[P->born_t[i]] = SN_POL_ON;
        for (int i = P->acc_off[s]; i < P->acc_off[s + 1]; i++)
            st[P->acc_t[i]] = SN_POL_ON;
        if (mem[s] > budget) {
            int nv = 0;
            uint64_t room = 0, over = mem[s] - budget;
            for (int t = 0; t < P->nt; t++) {
                const sn_plan_tensor *z = &m->tensor[t];
                /* a tensor nothing accesses could leave but never return */
                if (st[t] != SN_POL_ON || z->pinned || z->bytes == 0 || z->naccess == 0 ||
                    sn_pol_mode_at(P, t, s) || (z->bounded && z->alloc_step >= s))
                    continue;
                long key;
                int prev = (s - 1 + P->ns) % P->ns;
                if (rule == SN_POL_LRU) {
                    int u = sn_pol_prev_use(P, t, s);
                    key = gap(P, u >= 0 ? u : z->alloc_step, s);
                } else if (sn_pol_dead_after(P, t, prev)) {
                    key = LONG_MAX;
                } else if (rule == SN_POL_BELADY) {
                    key = gap(P, s, sn_pol_next_use(P, t, prev, NULL));
                } else { /* slack in microseconds */
                    int e = evict_after(P, t, s, rule), n = sn_pol_next_use(P, t, prev, NULL);
                    double between = span_ms(P, clock, e, n);
                    key = lround((between - round_trip(m, z->bytes)) * 1e3);
                }
                v[nv++] = (victim){.t = t, .key = key, .bytes = z->bytes};
                room += z->bytes;
            }
            if (room >= over) { /* else nothing this step can do: leave it */
                qsort(v, (size_t)nv, sizeof *v, by_key);
                for (int i = 0; i < nv && mem[s] > budget; i++) {
                    if (evict(P, &(cache_plan){A, &x, mem}, v[i].t, s, rule) < 0)
                        goto out;
                    st[v[i].t] = SN_POL_OFF;
                }
            }
        }
        for (; j < base && A->a[j].step == s; j++)
            st[A->a[j].tensor] = SN_POL_OFF;
        for (int i = P->gone_off[s]; i < P->gone_off[s + 1]; i++)
            st[P->gone_t[i]] = SN_POL_OFF;
    }
    rc = sn_pol_normalize(P, A);
out:
    free(mem);
    free(st);
    free(dropped);
    free(v);
    free(x.off);
    free(x.step);
    free(clock);
    return rc;
}

int sn_policy_lru(const sn_pol *P, sn_pol_acts *A, int *algo)
{
    sn_pol_algo_framework(P, algo);
    return sn_pol_cache(P, A, algo, P->budget, SN_POL_LRU);
}

/* ---- swaps and liveness ------------------------------------------------------------- */

int sn_pol_swappable(const sn_pol *P, int t, int *lf, int *fb)
{
    const sn_plan_tensor *x = &P->m->tensor[t];
    if (x->role != SN_PLAN_FEATURE || x->pinned || x->bytes == 0)
        return 0;
    int bs = P->m->backward_start, last = -1, first = -1;
    unsigned mode = 0;
    for (int i = 0; i < x->naccess; i++) {
        int s = x->access[i].step;
        if (s < bs) {
            last = s;
        } else if (first < 0) {
            first = s;
            mode = x->access[i].mode;
        }
    }
    if (last < 0 || first < 0 || sn_plan_mode_fresh(mode) || first < last + 2)
        return 0;
    *lf = last;
    *fb = first;
    return 1;
}

int sn_pol_layer_ahead(const sn_pol *P, int fb)
{
    const sn_plan_step *st = P->m->step;
    int bs = P->m->backward_start;
    int b0 = fb;
    while (b0 > bs && st[b0 - 1].layer == st[fb].layer)
        b0--;
    if (b0 <= bs)
        return b0;
    int b1 = b0 - 1;
    while (b1 > bs && st[b1 - 1].layer == st[b0 - 1].layer)
        b1--;
    return b1;
}

int sn_pol_drop_dead(const sn_pol *P, sn_pol_acts *A, int t, int s)
{
    const sn_plan_tensor *x = &P->m->tensor[t];
    if (!sn_pol_dead_after(P, t, s))
        return 0;
    int n = sn_pol_next_use(P, t, s, NULL);
    int worth = n < 0 ? (x->bounded && x->free_step > s) : gap(P, s, n) >= 2;
    return worth ? sn_pol_push(A, SN_PLAN_DROP, t, s, 0) : 0;
}

int sn_pol_swap(const sn_pol *P, sn_pol_acts *A, int t, int lf, int pf, int fb)
{
    const sn_plan_tensor *x = &P->m->tensor[t];
    if (sn_pol_push(A, SN_PLAN_OFFLOAD, t, lf, 0) < 0 || sn_pol_push(A, SN_PLAN_PREFETCH, t, pf, fb) < 0)
        return -1;
    int lb = x->access[x->naccess - 1].step;
    return lb >= P->m->backward_start ? sn_pol_drop_dead(P, A, t, lb) : 0;
}

int sn_pol_liveness(const sn_pol *P, sn_pol_acts *A)
{
    for (int t = 0; t < P->nt; t++) {
        const sn_plan_tensor *x = &P->m->tensor[t];
        if (x->pinned || x->bytes == 0)
            continue;
        for (int i = 0; i < x->naccess; i++)
            if ((i + 1 == x->naccess || x->access[i + 1].step != x->access[i].step) &&
                sn_pol_drop_dead(P, A, t, x->access[i].step) < 0)
                return -1;
    }
    return 0;
}

/* ---- early prefetch --------------------------------------------------------------------- */

typedef struct pending {
    int k;           /* index in A */
    int need;
} pending;

static int by_need(const void *pa, const void *pb)
{
    const pending *a = pa, *b = pb;
    if (a->need != b->need)
        return a->need < b->need ? -1 : 1;
    return a->k - b->k;
}

/* How many steps before p a prefetch of t may be issued: the steps after
 * its preceding offload (the tensor is off only from there). */
static int room_before(const sn_pol *P, const sn_pol_acts *A, int t, int p)
{
    const sn_plan_tensor *x = &P->m->tensor[t];
    int best = -1;
    for (int i = 0; i < A->n; i++) {
        const sn_plan_action *a = &A->a[i];
        if (a->tensor != t || a->op == SN_PLAN_PREFETCH)
            continue;
        int d = a->step < p ? p - a->step : (x->bounded ? -1 : p - a->step + P->ns);
        if (d > 0 && (best < 0 || d < best))
            best = d;
    }
    return best > 0 ? best - 1 : 0;
}

int sn_pol_place(const sn_pol *P, sn_pol_acts *A, const int *algo, uint64_t budget, int mode,
                 int not_before)
{
    const sn_plan_model *m = P->m;
    if (sn_pol_normalize(P, A) < 0)
        return -1;
    uint64_t *mem = malloc((size_t)P->ns * sizeof *mem);
    pending *q = malloc((size_t)(A->n ? A->n : 1) * sizeof *q);
    if (!mem || !q || sn_pol_profile(P, A, algo, mem) == UINT64_MAX) {
        free(mem);
        free(q);
        return -1;
    }
    int nq = 0;
    for (int k = 0; k < A->n; k++)
        if (A->a[k].op == SN_PLAN_PREFETCH)
            q[nq++] = (pending){.k = k, .need = A->a[k].need};
    qsort(q, (size_t)nq, sizeof *q, by_need);
    for (int i = 0; i < nq; i++) {
        sn_plan_action *a = &A->a[q[i].k];
        uint64_t bytes = m->tensor[a->tensor].bytes;
        double copy = m->copy_ms + (m->h2d_gbps > 0 ? (double)bytes / (m->h2d_gbps * 1e6) : 0.0);
        double lead = 0.0; /* compute time from the issue to the use */
        for (int s = a->step; s != a->need; s = (s + 1) % P->ns)
            lead += sn_pol_ms(P, algo, s);
        int span = room_before(P, A, a->tensor, a->step), at = a->step;
        if (not_before >= 0 && a->need >= not_before && a->step >= not_before && span > a->step - not_before)
            span = a->step - not_before;
        for (int d = 1; d <= span; d++) {
            int s = (a->step - d + P->ns) % P->ns;
            if (mem[s] > budget || bytes > budget - mem[s] || (mode == SN_POL_JIT && lead >= copy))
                break;
            at = s;
            lead += sn_pol_ms(P, algo, s);
        }
        for (int s = at; s != a->step; s = (s + 1) % P->ns)
            mem[s] += bytes;
        a->step = at;
    }
    free(mem);
    free(q);
    return sn_pol_normalize(P, A);
}
