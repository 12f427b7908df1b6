/*
 * sn_policy_auto.c — libsn's own policy, which knows the iteration's whole
 * future: evicts what is used farthest ahead (Belady, in steps or in
 * compute time less the tensor's own copy time), right after its last use
 * before the gap so the copy has the whole gap to finish, drops contents
 * that will be overwritten instead of writing them back, brings tensors
 * back as early as memory allows or just early enough for the copy to
 * finish before the use, and per convolution weighs the framework's
 * algorithm against the others by the time the timeline predicts, one
 * step at a time and all together under a series of workspace ceilings. The
 * variants are all simulated and the best kept; every seed policy's plan is
 * simulated too, and auto hands back whichever predicts fastest.
 */
#include "policy/sn_policy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/sn_options.h"

typedef struct recipe {
    int rule;        /* SN_POL_BELADY or SN_POL_BELADY_COST */
    int live;        /* liveness drops first */
    int headroom;    /* evict down to budget - budget / headroom (0: the budget) */
    int mode;        /* SN_POL_EARLY or SN_POL_JIT */
} recipe;

static int build(const sn_pol *P, const recipe *r, const int *algo, sn_pol_acts *A)
{
    sn_pol_acts_free(A);
    if (r->live && sn_pol_liveness(P, A) < 0)
        return -1;
    uint64_t b = P->budget, fixed = P->m->fixed_bytes;
    if (r->headroom && b > fixed)
        b -= (b - fixed) / (uint64_t)r->headroom;
    if (sn_pol_cache(P, A, algo, b, r->rule) < 0)
        return -1;
    return sn_pol_place(P, A, algo, P->budget, r->mode, -1);
}

/* The best plan found so far and how it was made. */
typedef struct search {
    sn_pol_acts plan;
    int *algo;
    recipe r;
    sn_plan_timeline tl;
    uint64_t need;   /* its peak by the memory profile: what ranks infeasible plans */
    uint64_t over;   /* and the memory over the budget summed over its steps */
    uint64_t sum;    /* and all the memory summed over its steps */
    int have;
} search;

/* Feasible first, then sn_pol_better; between infeasible plans the one
 * that needs less memory at its peak, then over the budget summed over its
 * steps, then in all summed over its steps, so that a search through
 * infeasible plans still moves towards the budget (and leaves demand
 * residency less to make up for where none fits). */
static int improves(const sn_plan_timeline *tl, const uint64_t need[3], const search *S)
{
    if (!S->have)
        return 1;
    if (!tl->feasible && !S->tl.feasible)
        return need[0] != S->need ? need[0] < S->need : need[1] != S->over ? need[1] < S->over : need[2] < S->sum;
    return sn_pol_better(tl, &S->tl);
}

/* The memory profile of A with algo: need[0] its peak, need[1] its excess
 * over the budget summed over the steps, need[2] its sum over the steps.
 * Returns -1 when out of memory. */
static int profile_need(const sn_pol *P, const sn_pol_acts *A, const int *algo, uint64_t need[3])
{
    uint64_t *mem = malloc((size_t)P->ns * sizeof *mem);
    need[0] = mem ? sn_pol_profile(P, A, algo, mem) : UINT64_MAX;
    need[1] = need[2] = 0;
    for (int s = 0; need[0] != UINT64_MAX && s < P->ns; s++) {
        need[1] += mem[s] > P->budget ? mem[s] - P->budget : 0;
        need[2] += mem[s];
    }
    free(mem);
    return need[0] == UINT64_MAX ? -1 : 0;
}

/* Builds r with algo and keeps it when it predicts better: 1 kept, 0 not,
 * -1 on error. */
static int try_plan(const sn_pol *P, const recipe *r, const int *algo, search *S)
{
    sn_pol_acts A = {0};
    sn_plan_timeline tl;
    uint64_t need[3] = {0, 0, 0};
    if (build(P, r, algo, &A) < 0 || sn_pol_eval(P, &A, algo, P->budget, &tl, NULL) < 0 ||
        (!tl.feasible && profile_need(P, &A, algo, need) < 0)) {
        sn_pol_acts_free(&A);
        return -1;
    }
    if (!improves(&tl, need, S)) {
        sn_pol_acts_free(&A);
        return 0;
    }
    sn_pol_acts_free(&S->plan);
    S->plan = A;
    memcpy(S->algo, algo, (size_t)P->ns * sizeof *algo);
    S->r = *r;
    S->tl = tl;
    S->need = need[0];
    S->over = need[1];
    S->sum = need[2];
    S->have = 1;
    return 1;
}

/* Step s's fastest algorithm whose extra workspace is at most limit, or a0
 * when none is faster: never a slower one. */
static int fastest_within(const sn_pol *P, int s, uint64_t limit, int a0)
{
    const sn_plan_step *st = &P->m->step[s];
    int best = a0;
    for (int a = 0; a < st->nalgo; a++)
        if (sn_pol_extra(P, s, a) <= limit && st->algo[a].ms < st->algo[best].ms)
            best = a;
    return best;
}

/* Per step, the fastest algorithm whose workspace fits what the budget
 * leaves beside the liveness plan's memory there (SuperNeurons' rule,
 * without its offloads): a starting point that is feasible where the
 * framework's workspaces cannot be. */
static int fitting_algos(const sn_pol *P, int *algo)
{
    sn_pol_acts L = {0};
    uint64_t *mem = malloc((size_t)P->ns * sizeof *mem);
    int rc = -1;
    for (int s = 0; s < P->ns; s++)
        algo[s] = sn_pol_algo_minws(P, s);
    if (!mem || sn_pol_liveness(P, &L) < 0 || sn_pol_normalize(P, &L) < 0 ||
        sn_pol_profile(P, &L, algo, mem) == UINT64_MAX)
        goto out;
    for (int s = 0; s < P->ns; s++) {
        uint64_t held = mem[s] - sn_pol_ws(P, algo, s);
        if (held <= P->budget)
            algo[s] = fastest_within(P, s, P->budget - held, algo[s]);
    }
    rc = 0;
out:
    sn_pol_acts_free(&L);
    free(mem);
    return rc;
}

typedef struct convstep {
    int s;
    double tight; /* workspace the smallest algorithm gives back, less the room left */
} convstep;

static int by_tight(const void *pa, const void *pb)
{
    const convstep *a = pa, *b = pb;
    if (a->tight != b->tight)
        return a->tight > b->tight ? -1 : 1;
    return a->s - b->s;
}

/* The steps with an algorithm choice, those where the best plan's memory
 * is tightest for their workspace first, at most max of them. */
static int ranked_steps(const sn_pol *P, const search *S, convstep *c, int max)
{
    uint64_t *mem = malloc((size_t)P->ns * sizeof *mem);
    if (!mem || sn_pol_profile(P, &S->plan, S->algo, mem) == UINT64_MAX) {
        free(mem);
        return -1;
    }
    int nc = 0;
    for (int s = 0; s < P->ns; s++) {
        if (P->m->step[s].nalgo < 2)
            continue;
        int lo = sn_pol_algo_minws(P, s);
        double back = (double)sn_pol_ws(P, S->algo, s) - (double)sn_pol_extra(P, s, lo);
        c[nc++] = (convstep){.s = s, .tight = back - ((double)P->budget - (double)mem[s])};
    }
    free(mem);
    qsort(c, (size_t)nc, sizeof *c, by_tight);
    return nc < max ? nc : max;
}

static int by_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

/* The best plan's algorithms with every convolution given its fastest
 * whose workspace is at most a ceiling (never a slower one), the plan made
 * again with its recipe for each ceiling: the workspace the plan holds
 * already (the manager's scratch keeps the iteration's largest mapped, so
 * up to it a faster algorithm costs no memory) and the workspaces the
 * faster algorithms need, at most MAX_CEILINGS of them spread over their
 * range. Many steps a little faster each (Inception-v4 b128 in 12 GB: a
 * hundred convolutions 10-30% faster with 150-300 MiB) gain what the
 * one-step changes, each too small to rank, never reach. Returns 1 when
 * one was kept, 0 when none, -1 on error. */
static int ceiling_pass(const sn_pol *P, search *S, int *algo)
{
    enum { MAX_CEILINGS = 12 };
    int n = 0, kept = 0;
    for (int s = 0; s < P->ns; s++)
        n += P->m->step[s].nalgo;
    uint64_t *ws = malloc((size_t)(n + 1) * sizeof *ws), held = 0;
    if (!ws)
        return -1;
    n = 0;
    for (int s = 0; s < P->ns; s++) {
        const sn_plan_step *st = &P->m->step[s];
        if (st->nalgo < 2)
            continue;
        uint64_t w = sn_pol_ws(P, S->algo, s);
        held = w > held ? w : held;
        for (int a = 0; a < st->nalgo; a++)
            if (st->algo[a].ms < st->algo[S->algo[s]].ms)
                ws[n++] = sn_pol_extra(P, s, a);
    }
    ws[n++] = held;
    qsort(ws, (size_t)n, sizeof *ws, by_u64);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (ws[i] >= held && (m == 0 || ws[i] != ws[m - 1]))
            ws[m++] = ws[i];
    for (int k = 0; k < MAX_CEILINGS && k < m; k++) {
        uint64_t ceiling = ws[m <= MAX_CEILINGS ? k : (int)((double)k * (m - 1) / (MAX_CEILINGS - 1))];
        int changed = 0;
        for (int s = 0; s < P->ns; s++) {
            algo[s] = fastest_within(P, s, ceiling, S->algo[s]);
            changed |= algo[s] != S->algo[s];
        }
        if (!changed)
            continue;
        recipe r = S->r;
        int got = try_plan(P, &r, algo, S);
        if (got < 0) {
            free(ws);
            return -1;
        }
        kept |= got;
    }
    free(ws);
    return kept;
}

/* The plan of libsn's own rules: every variant from three starting
 * choices of algorithms (the framework's, the fastest that fit beside
 * liveness, the smallest), then the algorithms of the steps where memory
 * is tightest changed one at a time while that predicts better (at most
 * MAX_PASSES rounds over MAX_TRIED steps). */
static int own_search(const sn_pol *P, sn_pol_acts *A, int *algo, sn_plan_timeline *tl, recipe *how);

int sn_policy_auto_own(const sn_pol *P, sn_pol_acts *A, int *algo, sn_plan_timeline *tl)
{
    recipe how;
    return own_search(P, A, algo, tl, &how);
}

static int own_search(const sn_pol *P, sn_pol_acts *A, int *algo, sn_plan_timeline *tl, recipe *how)
{
    enum { MAX_TRIED = 32, MAX_PASSES = 3 };
    static const int headrooms[] = {0, 8, 4};
    search S = {.algo = malloc((size_t)P->ns * sizeof *S.algo)};
    int *start = malloc((size_t)P->ns * sizeof *start);
    convstep *c = malloc((size_t)P->ns * sizeof *c);
    int rc = -1;
    if (!S.algo || !start || !c)
        goto out;
    for (int k = 0; k < 3; k++) {
        if (k == 0)
            sn_pol_algo_framework(P, start);
        else if (k == 1 && fitting_algos(P, start) < 0)
            goto out;
        else if (k == 2)
            for (int s = 0; s < P->ns; s++)
                start[s] = sn_pol_algo_minws(P, s);
        for (int rule = SN_POL_BELADY; rule <= SN_POL_BELADY_COST; rule++)
            for (int live = 1; live >= 0; live--)
                for (size_t h = 0; h < sizeof headrooms / sizeof *headrooms; h++)
                    for (int mode = SN_POL_EARLY; mode <= SN_POL_JIT; mode++) {
                        recipe r = {.rule = rule, .live = live, .headroom = headrooms[h], .mode = mode};
                        if (try_plan(P, &r, start, &S) < 0)
                            goto out;
                    }
    }
    if (S.have && ceiling_pass(P, &S, start) < 0)
        goto out;
    for (int pass = 0, changed = 1; pass < MAX_PASSES && changed; pass++) {
        changed = 0;
        int nc = ranked_steps(P, &S, c, MAX_TRIED);
        if (nc < 0)
            goto out;
        for (int i = 0; i < nc; i++) {
            int s = c[i].s;
            for (int a = 0; a < P->m->step[s].nalgo; a++) {
                if (a == S.algo[s])
                    continue;
                memcpy(start, S.algo, (size_t)P->ns * sizeof *start);
                start[s] = a;
                int k = try_plan(P, &S.r, start, &S);
                if (k < 0)
                    goto out;
                changed |= k;
            }
        }
    }
    sn_pol_acts_free(A);
    *A = S.plan;
    S.plan = (sn_pol_acts){0};
    memcpy(algo, S.algo, (size_t)P->ns * sizeof *algo);
    *tl = S.tl;
    *how = S.r;
    if (!S.have)
        how->rule = -1; /* nothing found: no recipe to make again */
    rc = 0;
out:
    sn_pol_acts_free(&S.plan);
    free(S.algo);
    free(start);
    free(c);
    return rc;
}

/* One plan auto may hand back. */
typedef struct candidate {
    sn_pol_acts acts;
    int *algo;
    double ms;           /* predicted iteration time; infinite when it does not fit */
    int seed;            /* the seed policy whose plan it is; 0: auto's own */
    double alone_ms;     /* a seed's plan that does not fit: its time predicted as when made
                          * alone (infinite when it does not fit so either) */
} candidate;

/* The gathered candidate x, made from plan B, with its sync steps moved
 * a few steps either way, taken out, or a stretch split in two, wherever
 * the timeline predicts that faster: a sync step waits for every copy in
 * flight, and equal stretches of compute put some of them where many
 * are. Passes until one changes nothing (at most MAX_PASSES), at most
 * MAX_TRIES timelines in all. */
static int sync_search(const sn_pol *P, const sn_pol_acts *B, int pace, candidate *x, sn_plan_timeline *tl)
{
    enum { MAX_TRIES = 600, MAX_PASSES = 4, SPLIT = 1000 };
    static const int moves[] = {0, -16, 16, -8, 8, -3, 3, -1, 1, SPLIT}; /* 0: taken out */
    int ns = P->ns, tries = 0;
    uint8_t *sync = malloc((size_t)ns);
    sn_pol_acts G = {0};
    if (!sync)
        return -1;
    for (int pass = 0, changed = 1; pass < MAX_PASSES && changed; pass++) {
        changed = 0;
        for (int s = 1; s < ns && tries < MAX_TRIES; s++) {
            if (!x->acts.sync[s])
                continue;
            int lo = s - 1, hi = s + 1;
            while (lo > 0 && !x->acts.sync[lo])
                lo--;
            while (hi < ns && !x->acts.sync[hi])
                hi++;
            for (size_t k = 0; k < sizeof moves / sizeof *moves && tries < MAX_TRIES; k++) {
                int d = moves[k], to = d == SPLIT ? s + (hi - s) / 2 : s + d;
                if (d && (to <= (d == SPLIT ? s : lo) || to >= hi))
                    continue;
                memcpy(sync, x->acts.sync, (size_t)ns);
                if (d != SPLIT)
                    sync[s] = 0;
                if (d)
                    sync[to] = 1;
                tries++;
                if (sn_pol_gather_at(P, B, x->algo, sync, pace, &G) < 0 ||
                    sn_pol_eval(P, &G, x->algo, P->budget, tl, NULL) < 0) {
                    sn_pol_acts_free(&G);
                    free(sync);
                    return -1;
                }
                if (tl->feasible && tl->iter_ms < x->ms * (1.0 - 1e-9)) {
                    x->ms = tl->iter_ms;
                    sn_pol_acts tmp = x->acts;
                    x->acts = G;
                    G = tmp;
                    changed = 1;
                    break;
                }
            }
        }
    }
    sn_pol_acts_free(&G);
    free(sync);
    return 0;
}

/* Gathered plans (sn_policy_gather.c): the window counts tried, and the
 * fractions of the budget (above the fixed bytes) the plan gathered is
 * made for, leaving room for the memory gathering holds. */
static const int gather_windows[] = {8, 16, 32, 64};
static const double gather_fraction[] = {0.95, 0.9, 0.85, 0.8, 0.7, 0.6};
enum { NGATHER = sizeof gather_windows / sizeof *gather_windows,
       NFRACTIONS = sizeof gather_fraction / sizeof *gather_fraction };
enum { PACE_TRIES = 1000 }; /* timelines the pacing of a family's best plan may take */
enum { MAX_CANDIDATES = 2 * 8 + 3 + 2 * 2 * (NFRACTIONS + 1) };

static int candidate_new(const sn_pol *P, candidate *c)
{
    c->acts = (sn_pol_acts){0};
    c->ms = INFINITY;
    c->seed = 0;
    c->alone_ms = INFINITY;
    c->algo = malloc((size_t)(P->ns ? P->ns : 1) * sizeof *c->algo);
    return c->algo ? 0 : -1;
}

/* What a family of gathered plans is made from: a recipe of libsn's own,
 * the algorithms it was found with and the policy state (model) it is
 * built on. */
typedef struct gather_src {
    const sn_pol *on;
    recipe r;
    int *algo;
} gather_src;

/* One family of gathered candidates (pace: sn_pol_gather_at's), added to
 * c[*nc...]: per budget fraction the recipe g->r made for it (on g->on)
 * and gathered at the window count that predicts fastest; the family's best
 * with its sync steps searched; and that one paced one move at a time
 * (sn_pol_pace), a candidate of its own, since the timeline leaves out the
 * host's work and the plan before may still measure faster. Returns 0 or
 * -1. */
static int gather_family(const sn_pol *P, const gather_src *g, int pace, candidate *c, int *nc)
{
    sn_pol Q = *g->on;
    sn_pol_acts G = {0}, B = {0}, gbase = {0};
    sn_plan_timeline tl;
    int gbest = -1, rc = -1;
    uint64_t fixed = P->m->fixed_bytes, room = P->budget > fixed ? P->budget - fixed : 0;
    for (int f = 0; f < NFRACTIONS && room; f++) {
        Q.budget = fixed + (uint64_t)((double)room * gather_fraction[f]);
        candidate *x = &c[*nc];
        if (candidate_new(P, x) < 0)
            goto out;
        (*nc)++;
        memcpy(x->algo, g->algo, (size_t)P->ns * sizeof *x->algo);
        if (build(&Q, &g->r, x->algo, &B) < 0)
            goto out;
        for (int w = 0; w < NGATHER; w++) {
            if (sn_pol_gather(P, &B, x->algo, gather_windows[w], pace, &G) < 0 ||
                sn_pol_eval(P, &G, x->algo, P->budget, &tl, NULL) < 0)
                goto out;
            if (tl.feasible && tl.iter_ms < x->ms) {
                x->ms = tl.iter_ms;
                sn_pol_acts_free(&x->acts);
                x->acts = G;
                G = (sn_pol_acts){0};
            }
        }
        if (isfinite(x->ms) && (gbest < 0 || x->ms < c[gbest].ms)) {
            gbest = *nc - 1;
            sn_pol_acts_free(&gbase);
            gbase = B;
            B = (sn_pol_acts){0};
        }
    }
    if (gbest >= 0) {
        if (sync_search(P, &gbase, pace, &c[gbest], &tl) < 0)
            goto out;
        candidate *x = &c[*nc];
        if (candidate_new(P, x) < 0)
            goto out;
        (*nc)++;
        memcpy(x->algo, c[gbest].algo, (size_t)P->ns * sizeof *x->algo);
        double ms = c[gbest].ms;
        int k = sn_pol_copy(&x->acts, &c[gbest].acts) < 0 ? -1 : sn_pol_pace(P, x->algo, PACE_TRIES, &x->acts, &ms);
        if (k < 0)
            goto out;
        if (k > 0)
            x->ms = ms;
    }
    rc = 0;
out:
    sn_pol_acts_free(&G);
    sn_pol_acts_free(&B);
    sn_pol_acts_free(&gbase);
    return rc;
}

/* The seed policies' plans, each also with liveness added, as candidates
 * c[*pn...]; *pbest follows the fastest predicted. */
static int seed_candidates(const sn_pol *P, candidate *c, int *pn, int *pbest, sn_plan_timeline *tl)
{
    int nc = *pn, best = *pbest, rc = -1;
    /* The safety net: every seed policy's plan is simulated too, and one
     * that the timeline predicts strictly faster (and feasible) replaces
     * libsn's own. This is what auto means — the best plan libsn knows for
     * this model and budget — and it is legitimate because the seeds are
     * ordinary plans over the same model, judged by the same timeline; the
     * plan keeps policy = SN_POLICY_AUTO since auto is what chose it. */
    static const int seeds[] = {SN_POLICY_LRU,          SN_POLICY_VDNN_ALL, SN_POLICY_VDNN_CONV,
                                SN_POLICY_VDNN_DYN,     SN_POLICY_SUPERNEURONS,
                                SN_POLICY_MODNN,        SN_POLICY_POOCH,    SN_POLICY_DYMEM};
    /* each seed also with the liveness sn_plan_make may add to it */
    sn_pol live = *P;
    live.framework_liveness = 1;
    /* A seed's plan that does not fit the model as it is (the manager's
     * scratch held at the iteration's largest workspace) is judged again
     * as sn_plan_make judges it made alone, with the workspace held for its
     * step (sn_policy_run): alone it runs, its overflow made up by demand
     * residency, and may run fast (modnn ran ResNet-101 b128 in 12 GB in
     * 1842 ms, ahead of every plan auto measured, all of which had judged
     * it too large). Such a plan is never chosen unmeasured: judged so,
     * VGG-16 b128's fastest seed plan was predicted ahead of auto's own and
     * measured 60% slower. */
    sn_plan_model sm0;
    sn_pol SP0;
    const sn_pol *SP = sn_pol_step_workspace(P, &sm0, &SP0);
    for (size_t k = 0; k < 2 * (sizeof seeds / sizeof *seeds); k++) {
        const sn_pol *Q = k & 1 ? &live : P;
        size_t i = k / 2;
        if ((k & 1) && (seeds[i] == SN_POLICY_LRU || seeds[i] == SN_POLICY_SUPERNEURONS))
            continue;
        candidate *x = &c[nc];
        if (candidate_new(P, x) < 0)
            goto out;
        nc++;
        x->seed = seeds[i];
        if (sn_policy_run(Q, seeds[i], &x->acts, x->algo) < 0 || sn_pol_eval(P, &x->acts, x->algo, P->budget, tl, NULL) < 0)
            goto out;
        if (tl->feasible)
            x->ms = tl->iter_ms;
        else if (SP != P && sn_pol_eval(SP, &x->acts, x->algo, P->budget, tl, NULL) == 0 && tl->feasible)
            x->alone_ms = tl->iter_ms;
        if (x->ms < c[best].ms)
            best = nc - 1;
    }
    rc = 0;
out:
    *pn = nc;
    *pbest = best;
    return rc;
}

/* Moving nothing, when that fits and is predicted no slower: every move
 * costs host time the timeline leaves out (mapping, unmapping, events),
 * and a drop of dead contents saves nothing when memory is ample. First
 * with the algorithms chosen (faster ones where the framework's were
 * not the fastest), then with the framework's own. */
static int idle_candidates(const sn_pol *P, candidate *c, int *pn, int *pbest, sn_plan_timeline *tl)
{
    int nc = *pn, best = *pbest, rc = -1;
    for (int k = 0; k < 2; k++) {
        candidate *x = &c[nc];
        if (candidate_new(P, x) < 0)
            goto out;
        nc++;
        if (k == 0)
            memcpy(x->algo, c[best].algo, (size_t)P->ns * sizeof *x->algo);
        else
            sn_pol_algo_framework(P, x->algo);
        if (sn_pol_eval(P, &x->acts, x->algo, P->budget, tl, NULL) == 0 && tl->feasible)
            x->ms = tl->iter_ms;
        if (isfinite(x->ms) && x->ms <= c[best].ms + 1e-9)
            best = nc - 1;
    }
    rc = 0;
out:
    *pn = nc;
    *pbest = best;
    return rc;
}

/* On a VMM arena: libsn's own plan made again for less than the budget and
 * gathered at a few sync steps an iteration (sn_policy_gather.c), which
 * holds memory longer and maps it earlier but waits less; per budget
 * fraction the best window count is a candidate, added to c[*nc...].
 * own_r and c[0].algo: libsn's own plan's recipe and algorithms. */
static int gathered_candidates(const sn_pol *P, recipe own_r, candidate *c, int *nc, sn_plan_timeline *tl)
{
    /* the recipe gathered is libsn's own made for a workspace held
     * for its step, as a stretch holds it, rather than for the whole
     * iteration as the scratch of a plan without sync steps is: made
     * so, its algorithms may take more where memory allows */
    sn_plan_model m0;
    sn_pol P0buf;
    const sn_pol *P0 = sn_pol_step_workspace(P, &m0, &P0buf);
    /* Two recipes: the best without sync steps (where nothing waits
     * for the copies in flight), and the best when every remapping
     * waits for them (remap_wait_all), each built on its own model;
     * either may gather better (VGG-16 b256 in 12 GB: 5314 ms
     * predicted from the first, 4432 from the second; VGG-16 b32 at
     * half its peak: 642 measured from the first, 731 from the
     * second). The gathered plans are judged on P. */
    sn_plan_model mw = *P0->m;
    mw.remap_wait_all = 1;
    sn_pol PW = *P0;
    PW.m = &mw;
    gather_src g[2] = {{.on = P0, .algo = malloc((size_t)(P->ns ? P->ns : 1) * sizeof(int))},
                       {.on = &PW, .algo = malloc((size_t)(P->ns ? P->ns : 1) * sizeof(int))}};
    int grc = g[0].algo && g[1].algo ? 0 : -1;
    for (int k = 0; k < 2 && grc == 0; k++) {
        g[k].r = own_r;
        memcpy(g[k].algo, c[0].algo, (size_t)P->ns * sizeof(int));
        if (k == 0 && P0 == P)
            continue; /* own_r is that recipe already */
        sn_pol_acts A0 = {0};
        grc = own_search(g[k].on, &A0, g[k].algo, tl, &g[k].r);
        sn_pol_acts_free(&A0);
        if (grc == 0 && g[k].r.rule < 0) {
            g[k].r = own_r;
            memcpy(g[k].algo, c[0].algo, (size_t)P->ns * sizeof(int));
        }
    }
    /* per recipe (the second only when it differs) two families:
     * gathered as planned, and paced (sn_pol_gather_at) */
    for (int k = 0; k < 2 && grc == 0; k++) {
        if (k == 1 && !memcmp(&g[1].r, &g[0].r, sizeof g[0].r) &&
            !memcmp(g[1].algo, g[0].algo, (size_t)P->ns * sizeof(int)))
            break;
        for (int pace = 0; pace < 2 && grc == 0; pace++)
            grc = gather_family(P, &g[k], pace, c, nc);
    }
    free(g[0].algo);
    free(g[1].algo);
    return grc;
}

/* The candidates made, as trial_order ranks them. */
typedef struct pool {
    const candidate *c;
    int n;                    /* candidates made */
    int best;                 /* the fastest predicted */
    int seed_first, seed_end; /* c[seed_first..seed_end): the seed policies' plans */
} pool;

/* The candidates worth measuring: auto's choice, then the next fastest
 * predicted within the slack asked for (one of each prediction:
 * equal predictions are, in all likelihood, equal plans). The executor
 * runs each for an iteration and keeps the fastest measured: the
 * timeline leaves out host work (mapping, creating handles, the
 * waits when room is made), and the plans it ranks within a few
 * percent it cannot tell apart. Fills order and returns how many. */
static int trial_order(const sn_pol *P, const pool *pl, int order[SN_PLAN_TRIALS])
{
    const candidate *c = pl->c;
    int nc = pl->n, best = pl->best, seed_first = pl->seed_first, seed_end = pl->seed_end;
    int n = 1;
    order[0] = best;
    int most = P->trials_cfg.max < SN_PLAN_TRIALS ? P->trials_cfg.max : SN_PLAN_TRIALS;
    /* one trial is kept for a seed's plan judged as made alone (below),
     * which no prediction within the slack can stand for: on ResNet-101
     * b128 in 12 GB auto's own gathered variants filled every trial and
     * left modnn's out, 1956 ms against 1799 with it measured */
    int alone = 0;
    for (int i = 0; i < nc && most > 2 && isfinite(c[best].ms) && c[best].acts.n > 0; i++)
        alone |= c[i].seed && !isfinite(c[i].ms) && c[i].alone_ms <= c[best].ms * (1.0 + 3.0 * P->trials_cfg.slack);
    int seed_best = -1, have_seed = 0;
    for (int i = seed_first; i < seed_end; i++)
        if (isfinite(c[i].ms) && (seed_best < 0 || c[i].ms < c[seed_best].ms))
            seed_best = i;
    /* and one for the best-predicted seed plan that fits (below), which
     * a plan as made alone must not take: on ResNet-101 b128 in 12 GB
     * modnn's plan as made alone measured 1803 ms, its fitting one 1991 */
    int reserve = alone + (alone && seed_best >= 0 && most > 3);
    while (n < most - reserve && isfinite(c[best].ms)) {
        int next = -1;
        for (int i = 0; i < nc; i++) {
            if (!isfinite(c[i].ms) || c[i].ms > c[best].ms * (1.0 + P->trials_cfg.slack))
                continue;
            int dup = 0;
            for (int j = 0; j < n && !dup; j++)
                dup = fabs(c[i].ms - c[order[j]].ms) <= 1e-9 * (c[i].ms > 1.0 ? c[i].ms : 1.0);
            if (!dup && (next < 0 || c[i].ms < c[next].ms))
                next = i;
        }
        if (next < 0)
            break;
        order[n++] = next;
    }
    /* Seed plans are measured too. The timeline has the host reach a step
     * only when the device has finished the one before, so it issues a
     * prefetch later than the executor does, whose host runs ahead of the
     * device until it must wait (for memory, a sync step, the loss): a
     * plan without sync steps, as every seed's is, runs faster than
     * predicted, and one outside the slack may still be the fastest
     * (modnn's on ResNet-50 b256 in 12 GB: predicted 10% slower than
     * auto's own, measured 7% faster). So when the best plan moves
     * anything, the trials left go to the seed policies not among them
     * yet, each with its fastest-predicted plan (fitting, or as made
     * alone) within three times the slack, fastest first; and when no
     * seed's plan is among the candidates within the slack, the
     * best-predicted one that fits keeps the last place (superneurons' on
     * ResNet-152 b128, predicted far outside the slack, measured ahead of
     * auto's own). */
    for (int j = 0; j < n; j++)
        have_seed |= order[j] >= seed_first && order[j] < seed_end;
    int last = seed_best >= 0 && !have_seed && most > 1 && isfinite(c[best].ms);
    while (n < most - last && isfinite(c[best].ms) && c[best].acts.n > 0) {
        int next = -1;
        for (int i = seed_first; i < seed_end; i++) {
            double ms = isfinite(c[i].ms) ? c[i].ms : c[i].alone_ms;
            if (i == seed_best || !isfinite(ms) || ms > c[best].ms * (1.0 + 3.0 * P->trials_cfg.slack))
                continue;
            /* (a plan as made alone differs from the fitting one of its seed) */
            int taken = last && c[seed_best].seed == c[i].seed && isfinite(c[i].ms);
            for (int j = 0; j < n && !taken; j++)
                taken = c[order[j]].seed == c[i].seed ||
                        fabs(ms - c[order[j]].ms) <= 1e-9 * (ms > 1.0 ? ms : 1.0);
            double next_ms = next < 0 ? INFINITY : isfinite(c[next].ms) ? c[next].ms : c[next].alone_ms;
            if (!taken && ms < next_ms)
                next = i;
        }
        if (next < 0)
            break;
        order[n++] = next;
    }
    if (last) {
        if (n < most)
            n++;
        order[n - 1] = seed_best;
    }
    return n;
}

/* The candidates in the order they are made (libsn's own plan first, as
 * the gathered ones start from it; the seeds' in one run, which
 * trial_order is told of), then the trials chosen from them and the plan
 * handed back. */
int sn_policy_auto(const sn_pol *P, sn_pol_acts *A, int *algo)
{
    candidate c[MAX_CANDIDATES];
    int nc = 0, best = 0, rc = -1;
    sn_plan_timeline tl;
    if (candidate_new(P, &c[0]) < 0)
        return -1;
    nc = 1;
    recipe own_r;
    if (own_search(P, &c[0].acts, c[0].algo, &tl, &own_r) < 0)
        goto out;
    int own_ok = own_r.rule >= 0;
    if (tl.feasible)
        c[0].ms = tl.iter_ms;
    const int seed_first = nc;
    if (seed_candidates(P, c, &nc, &best, &tl) < 0)
        goto out;
    const int seed_end = nc;
    if (idle_candidates(P, c, &nc, &best, &tl) < 0)
        goto out;
    if (P->m->remap_drains && own_ok) {
        if (gathered_candidates(P, own_r, c, &nc, &tl) < 0)
            goto out;
        for (int i = 0; i < nc; i++)
            if (c[i].ms < c[best].ms)
                best = i;
    }
    int order[SN_PLAN_TRIALS];
    int n = trial_order(P, &(pool){c, nc, best, seed_first, seed_end}, order);
    if (P->trials) {
        P->trials->n = n;
        for (int j = 0; j < n; j++)
            P->trials->ms[j] = isfinite(c[order[j]].ms)         ? c[order[j]].ms
                               : isfinite(c[order[j]].alone_ms) ? c[order[j]].alone_ms
                                                                : -1.0; /* -1: does not fit */
        P->trials->found = P->auto_rank >= 0 && P->auto_rank < n;
    }
    int pick = P->auto_rank >= 0 && P->auto_rank < n ? order[P->auto_rank] : best;
    sn_pol_acts_free(A);
    *A = c[pick].acts;
    c[pick].acts = (sn_pol_acts){0};
    memcpy(algo, c[pick].algo, (size_t)P->ns * sizeof *algo);
    rc = 0;
out:
    for (int i = 0; i < nc; i++) {
        sn_pol_acts_free(&c[i].acts);
        free(c[i].algo);
    }
    return rc;
}
