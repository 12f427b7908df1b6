/*
 * sn_policy_modnn.c — moDNN (Chen et al., DATE 2018): offloads are chosen
 * by what simulating the iteration says they are worth. Starting from
 * memory-optimal algorithms and nothing offloaded, it adds, one at a time,
 * the feature-map offload (with its prefetch a layer ahead of the backward
 * use) that lowers the peak most per millisecond of stall it adds, until
 * the budget is met (when no single offload moves the peak, the one that
 * lowers the memory over the budget most); then it upgrades convolutions to
 * faster algorithms in order of time saved per workspace byte, each kept
 * only if the plan still fits and gets faster.
 */
#include "policy/sn_policy.h"

#include <float.h>
#include <stdlib.h>

typedef struct cand {
    int t, lf, pf, fb, taken;
    int tier;     /* 2: lowers the peak, 1: only the memory over budget, 0: neither */
    double score; /* that reduction per ms of stall added */
    int fresh;    /* scored against the current plan */
} cand;

/* Memory over the budget summed over the steps: what still has to go when
 * one offload alone does not move the peak. */
static double excess(const sn_pol *P, const uint64_t *mem)
{
    double e = 0.0;
    for (int s = 0; s < P->ns; s++)
        if (mem[s] > P->budget)
            e += (double)(mem[s] - P->budget);
    return e;
}

static int key_above(int ta, double sa, int tb, double sb)
{
    return ta != tb ? ta > tb : sa > sb;
}

static int by_stale(const void *pa, const void *pb)
{
    const cand *a = pa, *b = pb;
    if (a->taken != b->taken)
        return a->taken - b->taken;
    if (key_above(a->tier, a->score, b->tier, b->score))
        return -1;
    if (key_above(b->tier, b->score, a->tier, a->score))
        return 1;
    return a->t - b->t;
}

/* Adds the best next offload to A; 1 when one was added, 0 when none
 * helps, -1 on error. Every candidate is simulated in the first round;
 * after that, candidates are re-simulated in the order of their last
 * score and the search stops once the best fresh score is at least every
 * remaining stale one (lazy greedy: an offload rarely gains from others
 * being taken), which keeps rounds to a few simulations each. */
static int add_best(const sn_pol *P, sn_pol_acts *A, const int *algo, cand *c, int nc)
{
    uint64_t *mem = malloc((size_t)P->ns * sizeof *mem);
    sn_pol_acts T = {0};
    sn_plan_timeline tl;
    int rc = -1, best = -1;
    if (!mem || sn_pol_eval(P, A, algo, UINT64_MAX, &tl, mem) < 0)
        goto out;
    uint64_t peak0 = tl.peak_bytes;
    double iter0 = tl.iter_ms, ex0 = excess(P, mem);
    qsort(c, (size_t)nc, sizeof *c, by_stale);
    for (int i = 0; i < nc && !c[i].taken; i++) {
        if (best >= 0 && c[i].fresh == 0 && !key_above(c[i].tier, c[i].score, c[best].tier, c[best].score))
            break;
        if (sn_pol_copy(&T, A) < 0 || sn_pol_swap(P, &T, c[i].t, c[i].lf, c[i].pf, c[i].fb) < 0 ||
            sn_pol_normalize(P, &T) < 0 || sn_pol_eval(P, &T, algo, UINT64_MAX, &tl, mem) < 0)
            goto out;
        double stall = tl.iter_ms > iter0 ? tl.iter_ms - iter0 : 0.0;
        double dpeak = (double)peak0 - (double)tl.peak_bytes, dex = ex0 - excess(P, mem);
        c[i].tier = dpeak > 0 ? 2 : dex > 0 ? 1 : 0;
        c[i].score = c[i].tier ? (c[i].tier == 2 ? dpeak : dex) / (stall + 1e-6) : 0.0;
        c[i].fresh = 1;
        if (c[i].tier && (best < 0 || key_above(c[i].tier, c[i].score, c[best].tier, c[best].score)))
            best = i;
    }
    rc = 0;
    if (best >= 0) {
        c[best].taken = 1;
        if (sn_pol_swap(P, A, c[best].t, c[best].lf, c[best].pf, c[best].fb) < 0 ||
            sn_pol_normalize(P, A) < 0)
            rc = -1;
        else
            rc = 1;
    }
    for (int i = 0; i < nc; i++)
        c[i].fresh = 0;
out:
    free(mem);
    sn_pol_acts_free(&T);
    return rc;
}

typedef struct upgrade {
    int s, a;
    double gain; /* ms saved per workspace byte added */
} upgrade;

static int by_gain(const void *pa, const void *pb)
{
    const upgrade *a = pa, *b = pb;
    if (a->gain != b->gain)
        return a->gain > b->gain ? -1 : 1;
    if (a->s != b->s)
        return a->s - b->s;
    return a->a - b->a;
}

static int upgrade_algos(const sn_pol *P, const sn_pol_acts *A, int *algo)
{
    sn_plan_timeline tl;
    if (sn_pol_eval(P, A, algo, P->budget, &tl, NULL) < 0)
        return -1;
    if (!tl.feasible)
        return 0;
    double cur = tl.iter_ms;
    int n = 0;
    for (int s = 0; s < P->ns; s++)
        n += P->m->step[s].nalgo;
    upgrade *u = malloc((size_t)(n ? n : 1) * sizeof *u);
    if (!u)
        return -1;
    n = 0;
    for (int s = 0; s < P->ns; s++) {
        const sn_plan_step *st = &P->m->step[s];
        for (int a = 0; a < st->nalgo; a++) {
            double saved = sn_pol_ms(P, algo, s) - st->algo[a].ms;
            if (saved <= 0)
                continue;
            uint64_t ws = sn_pol_ws(P, algo, s);
            uint64_t need = sn_pol_extra(P, s, a);
            double more = need > ws ? (double)(need - ws) : 0.0;
            u[n++] = (upgrade){.s = s, .a = a, .gain = more > 0 ? saved / more : DBL_MAX};
        }
    }
    qsort(u, (size_t)n, sizeof *u, by_gain);
    for (int i = 0; i < n; i++) {
        int s = u[i].s, was = algo[s];
        if (P->m->step[s].algo[u[i].a].ms >= sn_pol_ms(P, algo, s))
            continue;
        algo[s] = u[i].a;
        if (sn_pol_eval(P, A, algo, P->budget, &tl, NULL) < 0) {
            free(u);
            return -1;
        }
        if (tl.feasible && tl.iter_ms < cur)
            cur = tl.iter_ms;
        else
            algo[s] = was;
    }
    free(u);
    return 0;
}

int sn_policy_modnn(const sn_pol *P, sn_pol_acts *A, int *algo)
{
    for (int s = 0; s < P->ns; s++)
        algo[s] = sn_pol_algo_minws(P, s);
    if (P->framework_liveness && (sn_pol_liveness(P, A) < 0 || sn_pol_normalize(P, A) < 0))
        return -1;
    cand *c = malloc((size_t)(P->nt ? P->nt : 1) * sizeof *c);
    if (!c)
        return -1;
    int nc = 0;
    for (int t = 0; t < P->nt; t++) {
        int lf, fb;
        if (!sn_pol_swappable(P, t, &lf, &fb))
            continue;
        int pf = sn_pol_layer_ahead(P, fb);
        c[nc++] = (cand){.t = t, .lf = lf, .pf = pf >= lf + 2 ? pf : fb, .fb = fb, .tier = 3};
    }
    int rc = 0;
    for (;;) {
        sn_plan_timeline tl;
        if (sn_pol_eval(P, A, algo, P->budget, &tl, NULL) < 0) {
            rc = -1;
            break;
        }
        if (tl.feasible)
            break;
        int r = add_best(P, A, algo, c, nc);
        if (r <= 0) {
            rc = r;
            break;
        }
    }
    free(c);
    if (rc < 0)
        return -1;
    return upgrade_algos(P, A, algo);
}
