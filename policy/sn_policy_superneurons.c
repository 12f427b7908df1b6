/*
 * sn_policy_superneurons.c — SuperNeurons (Wang et al., PPoPP 2018) without
 * recomputation: liveness drops every tensor whose contents nothing reads
 * before its next whole overwrite; convolution outputs, the expensive ones
 * to recompute, leave the device after their forward use and come back a
 * layer ahead of the backward step that reads them; every convolution runs
 * the fastest algorithm whose workspace fits the memory the step leaves;
 * and an LRU tensor cache evicts whatever else a step cannot fit.
 */
#include "policy/sn_policy.h"

#include <stdlib.h>

/* The fastest algorithm of each convolution whose workspace fits what the
 * budget leaves beside the memory the plan A holds at that step. */
static int choose_algos(const sn_pol *P, const sn_pol_acts *A, int *algo)
{
    uint64_t *mem = malloc((size_t)P->ns * sizeof *mem);
    if (!mem)
        return -1;
    for (int s = 0; s < P->ns; s++)
        algo[s] = sn_pol_algo_minws(P, s);
    if (sn_pol_profile(P, A, algo, mem) == UINT64_MAX) {
        free(mem);
        return -1;
    }
    for (int s = 0; s < P->ns; s++) {
        const sn_plan_step *st = &P->m->step[s];
        if (st->nalgo <= 0)
            continue;
        uint64_t held = mem[s] - sn_pol_ws(P, algo, s);
        uint64_t left = P->budget > held ? P->budget - held : 0;
        int best = -1;
        for (int a = 0; a < st->nalgo; a++)
            if (sn_pol_extra(P, s, a) <= left &&
                (best < 0 || st->algo[a].ms < st->algo[best].ms ||
                 (st->algo[a].ms == st->algo[best].ms && sn_pol_extra(P, s, a) < sn_pol_extra(P, s, best))))
                best = a;
        if (best >= 0)
            algo[s] = best;
    }
    free(mem);
    return 0;
}

int sn_policy_superneurons(const sn_pol *P, sn_pol_acts *A, int *algo)
{
    if (sn_pol_liveness(P, A) < 0)
        return -1;
    for (int t = 0; t < P->nt; t++) {
        int lf, fb;
        if (!P->m->tensor[t].conv_output || !sn_pol_swappable(P, t, &lf, &fb))
            continue;
        int pf = sn_pol_layer_ahead(P, fb);
        if (pf >= lf + 2 && sn_pol_swap(P, A, t, lf, pf, fb) < 0)
            return -1;
    }
    if (sn_pol_normalize(P, A) < 0 || choose_algos(P, A, algo) < 0)
        return -1;
    return sn_pol_cache(P, A, algo, P->budget, SN_POL_LRU);
}
