/*
 * sn_policy_dymem.c — Dymem (Yang & Cheng, HPDC 2020) on one stream: every
 * feature map leaves the device after its last forward use (or is dropped
 * when nothing reads it again) and comes back by data dependency as early
 * as memory allows, with no per-layer barrier deciding when. Its placement
 * (GTBM) is the class every plan carries per tensor.
 */
#include "policy/sn_policy.h"

int sn_policy_dymem(const sn_pol *P, sn_pol_acts *A, int *algo)
{
    sn_pol_algo_framework(P, algo);
    if (P->framework_liveness && sn_pol_liveness(P, A) < 0)
        return -1;
    for (int t = 0; t < P->nt; t++) {
        const sn_plan_tensor *x = &P->m->tensor[t];
        int lf, fb;
        if (sn_pol_swappable(P, t, &lf, &fb)) {
            if (sn_pol_swap(P, A, t, lf, fb, fb) < 0)
                return -1;
            continue;
        }
        if (x->role != SN_PLAN_FEATURE || x->pinned || x->naccess == 0)
            continue;
        /* a feature map no later step reads: free after its last use */
        if (sn_pol_drop_dead(P, A, t, x->access[x->naccess - 1].step) < 0)
            return -1;
    }
    return sn_pol_place(P, A, algo, P->budget, SN_POL_EARLY, P->m->backward_start);
}
