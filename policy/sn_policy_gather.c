/*
 * sn_policy_gather.c — a plan's memory moves gathered at a few sync steps.
 *
 * On a VMM arena memory that leaves is unmapped only once its copy is
 * done, and the arena waits for that copy when it needs the memory. A
 * plan that maps a large workspace for a stretch, or whose moves would
 * each catch a copy half done, may do better gathered: it maps and unmaps only
 * at sync steps, which cut the iteration into stretches of about equal
 * compute time. A prefetch is issued at the last sync step at or before
 * the step it was planned at (earlier, never later for its use); a tensor
 * written fresh while it is off is mapped there too (a prefetch that
 * copies nothing); an offload whose contents are never read again becomes
 * a drop. What leaves between two sync steps keeps its memory until the
 * second, which waits once for every copy, unmaps it all and maps what
 * the next stretch needs. The price is memory, held longer and given
 * earlier: the timeline says whether the plan still fits and what the
 * fewer waits save, and auto keeps it only when it predicts it faster.
 * Where no sync step lies between a tensor's leaving and its prefetch, the
 * prefetch's own step becomes one.
 *
 * A sync step waits for every copy in flight, whether or not it needs the
 * memory that copy frees: an offload issued late in a stretch, or a
 * prefetch issued at one sync step for a use well past the next, makes
 * the next sync step wait. Two ways of pacing the copies answer it:
 *
 *  - Paced gathering (sn_pol_gather_at with pace) gives each stretch's copy
 *    out engine no more than it can finish: taking the offloads in order,
 *    one whose copy would still run when the stretch's sync step comes
 *    (after the copies out issued before it in that stretch, at the
 *    measured bandwidth) is issued at that sync step instead, after the
 *    step, and so on up to a few stretches, while its tensor is not used
 *    nor brought back in between. Its memory is held longer.
 *  - Pacing (sn_pol_pace) moves one copy at a time in a gathered plan: one
 *    issued in a stretch whose sync step waits, to that sync step (an
 *    offload's copy then overlaps the next stretch, a prefetch maps its
 *    memory a stretch later), or a prefetch whose use waits, to the sync
 *    step before its own.
 *
 * Either way the timeline says whether the plan still fits and is faster.
 */
#include "policy/sn_policy.h"

#include <stdlib.h>
#include <string.h>

/* The last sync step at or before each step (after sync[] changes at s,
 * the steps from s on are redone). */
static void prev_sync_from(const uint8_t *sync, int *prev, int ns, int s)
{
    for (; s < ns; s++)
        prev[s] = sync[s] ? s : s > 0 ? prev[s - 1] : -1;
}

/* Where a move of tensor t for step s may be issued: the last sync step
 * at or before s after `left` (the step t last left at before s, -1 when
 * it left in the iteration before); s itself, made a sync step, when there
 * is none. */
static int issue_step(uint8_t *sync, int *prev, int ns, int s, int left)
{
    int q = prev[s];
    if (q > left)
        return q;
    sync[s] = 1;
    prev_sync_from(sync, prev, ns, s);
    return s;
}

int sn_pol_gather(const sn_pol *P, const sn_pol_acts *A, const int *algo, int windows, int pace, sn_pol_acts *out)
{
    int ns = P->ns;
    uint8_t *sync = calloc((size_t)ns, 1);
    if (!sync || windows < 1) {
        free(sync);
        return -1;
    }
    double total = 0.0, acc = 0.0;
    for (int s = 0; s < ns; s++)
        total += sn_pol_ms(P, algo, s);
    sync[0] = 1;
    for (int s = 1; s < ns; s++) {
        acc += sn_pol_ms(P, algo, s - 1);
        if (acc * windows >= total) {
            sync[s] = 1;
            acc = 0.0;
        }
    }
    int rc = sn_pol_gather_at(P, A, algo, sync, pace, out);
    free(sync);
    return rc;
}

/* Paced gathering's bookkeeping: each step's start in compute time, per
 * sync step when its stretch's copy out engine is free again (from the
 * stretch's start), and per action of the plan gathered the step it
 * was issued at in the end and its tensor's next prefetch in it. */
typedef struct pacing {
    double *at, *engine;
    int *step, *next_pf;
} pacing;

static void pacing_free(pacing *g)
{
    free(g->at);
    free(g->engine);
    free(g->step);
    free(g->next_pf);
}

/* The step of every action; the rest only when pacing. */
static int pacing_init(const sn_pol *P, const sn_pol_acts *A, const int *algo, int pace, pacing *g)
{
    int ns = P->ns, n = A->n ? A->n : 1;
    g->step = malloc((size_t)n * sizeof *g->step);
    if (!g->step)
        return -1;
    for (int i = 0; i < A->n; i++)
        g->step[i] = A->a[i].step;
    if (!pace)
        return 0;
    int *last = malloc((size_t)(P->nt > 0 ? P->nt : 1) * sizeof *last);
    g->at = malloc(((size_t)ns + 1) * sizeof *g->at);
    g->engine = calloc((size_t)ns + 1, sizeof *g->engine);
    g->next_pf = malloc((size_t)n * sizeof *g->next_pf);
    if (!last || !g->at || !g->engine || !g->next_pf) {
        free(last);
        return -1;
    }
    g->at[0] = 0.0;
    for (int s = 0; s < ns; s++)
        g->at[s + 1] = g->at[s] + sn_pol_ms(P, algo, s);
    for (int t = 0; t < P->nt; t++)
        last[t] = -1;
    for (int i = A->n - 1; i >= 0; i--) {
        g->next_pf[i] = last[A->a[i].tensor];
        if (A->a[i].op == SN_PLAN_PREFETCH)
            last[A->a[i].tensor] = A->a[i].step;
    }
    free(last);
    return 0;
}

/* The step offload a (action i) is issued at in a paced gathering: its
 * own, unless its copy would still run at its stretch's sync step. */
static int pace_offload(const sn_pol *P, const uint8_t *sync, const int *prev, pacing *g, int i,
                        const sn_plan_action *a)
{
    enum { MAX_HOPS = 4 };
    const sn_plan_model *m = P->m;
    int ns = P->ns, s = a->step;
    double copy = (double)m->tensor[a->tensor].bytes / (m->d2h_gbps * 1e6) + m->copy_ms;
    int limit = sn_pol_next_use(P, a->tensor, s, NULL);
    if (g->next_pf[i] >= 0 && (limit < 0 || g->next_pf[i] < limit))
        limit = g->next_pf[i];
    for (int hop = 0;; hop++) {
        int q0 = prev[s], q1 = s + 1;
        while (q1 < ns && !sync[q1])
            q1++;
        double issue = g->at[s + 1] - g->at[q0];
        double begin = g->engine[q0] > issue ? g->engine[q0] : issue;
        if (begin + copy <= g->at[q1] - g->at[q0] || hop == MAX_HOPS || q1 >= ns || (limit >= 0 && limit <= q1)) {
            g->engine[q0] = begin + copy;
            return s;
        }
        s = q1;
    }
}

int sn_pol_gather_at(const sn_pol *P, const sn_pol_acts *A, const int *algo, const uint8_t *sync, int pace,
                     sn_pol_acts *out)
{
    const sn_plan_model *m = P->m;
    int ns = P->ns, nt = P->nt;
    size_t ntc = (size_t)(nt > 0 ? nt : 1);
    sn_pol_acts G = {0};
    pacing pg = {0};
    int *prev = malloc((size_t)ns * sizeof *prev);
    int *left = malloc(ntc * sizeof *left);
    uint8_t *on = malloc(ntc), *dropped = malloc(ntc);
    G.sync = malloc((size_t)ns);
    G.nsync = ns;
    if (!prev || !left || !on || !dropped || !G.sync || pacing_init(P, A, algo, pace, &pg) < 0)
        goto fail;
    memcpy(G.sync, sync, (size_t)ns);
    G.sync[0] = 1;
    prev_sync_from(G.sync, prev, ns, 0);

    /* the moves, prefetches brought forward (A is sorted by step with a
     * step's prefetches first, so left[t] is where t last left before) */
    for (int t = 0; t < nt; t++)
        left[t] = m->tensor[t].bounded ? m->tensor[t].alloc_step : -1;
    for (int i = 0; i < A->n; i++) {
        sn_plan_action a = A->a[i];
        if (a.op == SN_PLAN_PREFETCH) {
            a.step = issue_step(G.sync, prev, ns, a.step, left[a.tensor]);
        } else {
            if (a.op == SN_PLAN_OFFLOAD && sn_pol_dead_after(P, a.tensor, a.step))
                a.op = SN_PLAN_DROP;
            if (pace && a.op == SN_PLAN_OFFLOAD)
                a.step = pace_offload(P, G.sync, prev, &pg, i, &a);
            left[a.tensor] = a.step;
        }
        pg.step[i] = a.step;
        if (sn_pol_push(&G, a.op, a.tensor, a.step, a.need) < 0)
            goto fail;
    }

    /* fresh writes to tensors that are off, mapped ahead: each tensor's
     * prefetches, accesses and departures in step order */
    sn_plan p = {.nactions = A->n, .actions = A->a, .algo = (int *)algo};
    if (sn_plan_initial_residency(m, &p, on, dropped) < 0)
        goto fail;
    int *first = calloc(ntc + 1, sizeof *first), *order = malloc((size_t)(A->n ? A->n : 1) * sizeof *order);
    if (!first || !order) {
        free(first);
        free(order);
        goto fail;
    }
    for (int i = 0; i < A->n; i++)
        first[A->a[i].tensor + 1]++;
    for (int t = 0; t < nt; t++)
        first[t + 1] += first[t];
    int *fill = left; /* reused: each tensor's next free slot */
    for (int t = 0; t < nt; t++)
        fill[t] = first[t];
    for (int i = 0; i < A->n; i++)
        order[fill[A->a[i].tensor]++] = i;
    int rc = 0;
    for (int t = 0; t < nt && rc == 0; t++) {
        const sn_plan_tensor *x = &m->tensor[t];
        if (x->bounded || x->pinned || x->bytes == 0)
            continue;
        int st = on[t], gone = -1, j = first[t];
        for (int i = 0; i < x->naccess && rc == 0; i++) {
            int s = x->access[i].step;
            /* this tensor's actions before the access: prefetches at s too */
            for (; j < first[t + 1]; j++) {
                const sn_plan_action *a = &A->a[order[j]];
                if (a->step > s || (a->step == s && a->op != SN_PLAN_PREFETCH))
                    break;
                st = a->op == SN_PLAN_PREFETCH;
                if (!st)
                    gone = pg.step[order[j]];
            }
            if (!st && sn_plan_mode_fresh(x->access[i].mode)) {
                int q = issue_step(G.sync, prev, ns, s, gone);
                rc = sn_pol_push(&G, SN_PLAN_PREFETCH, t, q, s);
            }
            st = 1;
            /* its departures at the access's step */
            for (; j < first[t + 1] && A->a[order[j]].step == s; j++)
                if (A->a[order[j]].op != SN_PLAN_PREFETCH) {
                    st = 0;
                    gone = pg.step[order[j]];
                }
        }
    }
    free(first);
    free(order);
    if (rc < 0 || sn_pol_sort(P, &G) < 0)
        goto fail;
    free(prev);
    free(left);
    free(on);
    free(dropped);
    pacing_free(&pg);
    sn_pol_acts_free(out);
    *out = G;
    return 0;
fail:
    free(prev);
    free(left);
    free(on);
    free(dropped);
    pacing_free(&pg);
    sn_pol_acts_free(&G);
    return -1;
}

/* The next sync step after s, or -1 when none is left in the iteration
 * (a move into the next iteration would reorder it). */
static int next_sync(const sn_pol_acts *G, int s)
{
    for (int q = s + 1; q < G->nsync; q++)
        if (G->sync[q])
            return q;
    return -1;
}

static int prev_sync_after(const sn_pol_acts *G, int s, int after);
static int departed(const sn_pol_acts *G, int i);

/* Whether action i of G may be issued at sync step q instead. Later: a
 * prefetch when q still comes before the step that waits for it, an
 * offload when its tensor is not used up to q nor brought back there.
 * Earlier: a prefetch, to the sync step before its own, after its tensor
 * left. */
static int pace_allowed(const sn_pol *P, const sn_pol_acts *G, int i, int q)
{
    const sn_plan_action *a = &G->a[i];
    if (q < a->step)
        return a->op == SN_PLAN_PREFETCH && prev_sync_after(G, a->step, departed(G, i)) == q;
    if (a->op == SN_PLAN_PREFETCH)
        return a->need > q;
    if (a->op != SN_PLAN_OFFLOAD)
        return 0;
    int next = sn_pol_next_use(P, a->tensor, a->step, NULL);
    if (next >= 0 && next <= q)
        return 0;
    for (int j = 0; j < G->n; j++)
        if (G->a[j].tensor == a->tensor && G->a[j].op == SN_PLAN_PREFETCH && G->a[j].step > a->step &&
            G->a[j].step <= q)
            return 0;
    return 1;
}

static int same_action(const sn_plan_action *a, const sn_plan_action *b)
{
    return a->op == b->op && a->tensor == b->tensor && a->step == b->step && a->need == b->need;
}

/* A move worth trying: the action, the sync step it would be issued at,
 * and how long the wait it may shorten is. */
typedef struct pace_move {
    sn_plan_action a;
    int to;
    double wait;
} pace_move;

static int by_wait(const void *pa, const void *pb)
{
    const pace_move *a = pa, *b = pb;
    if (a->wait != b->wait)
        return a->wait > b->wait ? -1 : 1;
    return b->a.step - a->a.step; /* then the latest issued first */
}

/* The sync step before s (after its tensor's last departure before s,
 * for a prefetch at s), or -1. */
static int prev_sync_after(const sn_pol_acts *G, int s, int after)
{
    for (int q = s - 1; q > after && q >= 0; q--)
        if (G->sync[q])
            return q;
    return -1;
}

/* The step its tensor last left at before prefetch i of G, -1 when none
 * did in this iteration. */
static int departed(const sn_pol_acts *G, int i)
{
    const sn_plan_action *a = &G->a[i];
    int d = -1;
    for (int j = 0; j < G->n; j++)
        if (G->a[j].tensor == a->tensor && G->a[j].op != SN_PLAN_PREFETCH && G->a[j].step < a->step &&
            G->a[j].step > d)
            d = G->a[j].step;
    return d;
}

/* The moves worth trying in G: each copy issued in a stretch whose end,
 * a sync step, waits, to that sync step; each prefetch whose use waits
 * (or a step before it), to the sync step before its own while its tensor
 * has left by then. The longest waits first. Returns how many, or -1. */
static int pace_moves(const sn_pol *P, const int *algo, const sn_pol_acts *G, double *start, pace_move *mv)
{
    sn_plan p = {.budget = P->budget, .nactions = G->n, .actions = G->a, .algo = (int *)algo,
                 .gtbm_class = P->gtbm, .sync = G->sync};
    sn_plan_timeline tl;
    if (sn_plan_simulate(P->m, &p, &tl, start, NULL) < 0)
        return -1;
#define WAIT_AT(s) (start[(s)] - (start[(s) - 1] + sn_pol_ms(P, algo, (s) - 1)))
    int n = 0;
    for (int i = 0; i < G->n; i++) {
        const sn_plan_action *a = &G->a[i];
        if (a->op == SN_PLAN_DROP)
            continue;
        int q = next_sync(G, a->step);
        if (q >= 1 && WAIT_AT(q) > 1e-6)
            mv[n++] = (pace_move){*a, q, WAIT_AT(q)};
        if (a->op != SN_PLAN_PREFETCH || a->need <= a->step)
            continue;
        int e = prev_sync_after(G, a->step, departed(G, i));
        double worst = 0.0;
        for (int s = a->step + 1; e >= 0 && s <= a->need; s++)
            if (WAIT_AT(s) > worst)
                worst = WAIT_AT(s);
        if (worst > 1e-6)
            mv[n++] = (pace_move){*a, e, worst};
    }
#undef WAIT_AT
    qsort(mv, (size_t)n, sizeof *mv, by_wait);
    return n;
}

int sn_pol_pace(const sn_pol *P, const int *algo, int max_tries, sn_pol_acts *G, double *ms)
{
    enum { MAX_PASSES = 4 };
    if (!G->sync || G->nsync != P->ns)
        return 0;
    sn_pol_acts T = {0};
    pace_move *mv = malloc((size_t)(G->n ? 2 * G->n : 1) * sizeof *mv);
    double *start = malloc((size_t)(P->ns ? P->ns : 1) * sizeof *start);
    sn_plan_timeline tl;
    int tries = 0, kept = 0;
    if (!mv || !start)
        goto fail;
    for (int pass = 0, changed = 1; pass < MAX_PASSES && changed && tries < max_tries; pass++) {
        changed = 0;
        int nmv = pace_moves(P, algo, G, start, mv);
        if (nmv < 0)
            goto fail;
        for (int k = 0; k < nmv && tries < max_tries; k++) {
            int i = 0;
            while (i < G->n && !same_action(&G->a[i], &mv[k].a))
                i++;
            int q = mv[k].to;
            if (i == G->n || !pace_allowed(P, G, i, q))
                continue;
            if (sn_pol_copy(&T, G) < 0)
                goto fail;
            T.a[i].step = q;
            tries++;
            if (sn_pol_sort(P, &T) < 0 || sn_pol_eval(P, &T, algo, P->budget, &tl, NULL) < 0)
                goto fail;
            if (tl.feasible && tl.iter_ms < *ms * (1.0 - 1e-9)) {
                *ms = tl.iter_ms;
                sn_pol_acts tmp = *G;
                *G = T;
                T = tmp;
                changed = 1;
                kept++;
            }
        }
    }
    free(mv);
    free(start);
    sn_pol_acts_free(&T);
    return kept;
fail:
    free(mv);
    free(start);
    sn_pol_acts_free(&T);
    return -1;
}
