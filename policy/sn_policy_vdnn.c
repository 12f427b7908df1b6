/*
 * sn_policy_vdnn.c — vDNN (Rhu et al., MICRO 2016): layer inputs leave the
 * device in the forward pass after their last forward use and come back one
 * layer ahead of the backward step that reads them. The static variants
 * offload every feature map (all) or the inputs of convolutions (conv) with
 * memory-optimal algorithms; the dynamic one tries, in order, no offload
 * with the fastest algorithms, conv with the fastest algorithms downgraded
 * layer by layer where memory runs out, and all with memory-optimal ones,
 * and keeps the first that fits.
 */
#include "policy/sn_policy.h"

#include <stdlib.h>

/* Read by a forward convolution: a convolution layer's input. */
static int conv_input(const sn_pol *P, int t)
{
    const sn_plan_tensor *x = &P->m->tensor[t];
    for (int i = 0; i < x->naccess; i++) {
        const sn_plan_step *st = &P->m->step[x->access[i].step];
        if (st->phase == 0 && st->conv && (x->access[i].mode & SN_PLAN_R))
            return 1;
    }
    return 0;
}

/* The offloads and prefetches of vdnn-all or vdnn-conv, algorithms left. */
static int vdnn_moves(const sn_pol *P, int conv_only, sn_pol_acts *A)
{
    if (P->framework_liveness && sn_pol_liveness(P, A) < 0)
        return -1;
    for (int t = 0; t < P->nt; t++) {
        int lf, fb;
        if (!sn_pol_swappable(P, t, &lf, &fb) || (conv_only && !conv_input(P, t)))
            continue;
        int pf = sn_pol_layer_ahead(P, fb);
        /* a layer read back before a step has run without it stays */
        if (pf < lf + 2)
            continue;
        if (sn_pol_swap(P, A, t, lf, pf, fb) < 0)
            return -1;
    }
    return sn_pol_normalize(P, A);
}

int sn_policy_vdnn(const sn_pol *P, int conv_only, sn_pol_acts *A, int *algo)
{
    for (int s = 0; s < P->ns; s++)
        algo[s] = sn_pol_algo_minws(P, s);
    return vdnn_moves(P, conv_only, A);
}

/* The layer to downgrade next: the first step over the budget when it is
 * a convolution not yet at its smallest workspace, else the downgradable
 * convolution over the budget that gives back the most, else the first
 * downgradable one. -1 when every convolution is memory-optimal. */
static int downgrade_step(const sn_pol *P, const int *algo, const uint64_t *mem)
{
    int first_over = -1, most = -1, first = -1;
    uint64_t most_gain = 0;
    for (int s = 0; s < P->ns; s++) {
        int lo = sn_pol_algo_minws(P, s);
        int can = P->m->step[s].conv && lo >= 0 && algo[s] != lo &&
                  sn_pol_ws(P, algo, s) > sn_pol_extra(P, s, lo);
        int over = mem[s] > P->budget;
        if (over && first_over < 0) {
            first_over = s;
            if (can)
                return s;
        }
        if (!can)
            continue;
        if (first < 0)
            first = s;
        uint64_t gain = sn_pol_ws(P, algo, s) - sn_pol_extra(P, s, lo);
        if (over && gain > most_gain) {
            most_gain = gain;
            most = s;
        }
    }
    return most >= 0 ? most : first;
}

int sn_policy_vdnn_dyn(const sn_pol *P, sn_pol_acts *A, int *algo)
{
    sn_plan_timeline tl;
    uint64_t *mem = malloc((size_t)P->ns * sizeof *mem);
    if (!mem)
        return -1;
    int rc = -1;
    /* (1) as the framework runs, with the fastest algorithms */
    for (int s = 0; s < P->ns; s++)
        algo[s] = sn_pol_algo_fastest(P, s);
    sn_pol_acts_free(A);
    if (P->framework_liveness && (sn_pol_liveness(P, A) < 0 || sn_pol_normalize(P, A) < 0))
        goto out;
    if (sn_pol_eval(P, A, algo, P->budget, &tl, NULL) < 0)
        goto out;
    if (tl.feasible) {
        rc = 0;
        goto out;
    }
    /* (2) vdnn-conv, fastest algorithms given up layer by layer */
    sn_pol_acts_free(A);
    if (vdnn_moves(P, 1, A) < 0)
        goto out;
    for (;;) {
        if (sn_pol_eval(P, A, algo, P->budget, &tl, NULL) < 0)
            goto out;
        if (tl.feasible) {
            rc = 0;
            goto out;
        }
        if (sn_pol_profile(P, A, algo, mem) == UINT64_MAX)
            goto out;
        int s = downgrade_step(P, algo, mem);
        if (s < 0)
            break;
        int layer = P->m->step[s].layer;
        for (int k = 0; k < P->ns; k++)
            if (k == s || (layer >= 0 && P->m->step[k].layer == layer && P->m->step[k].conv))
                algo[k] = sn_pol_algo_minws(P, k);
    }
    /* (3) vdnn-all, memory-optimal: the last resort, fitting or not */
    sn_pol_acts_free(A);
    rc = sn_policy_vdnn(P, 0, A, algo);
out:
    free(mem);
    return rc;
}
