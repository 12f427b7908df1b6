/*
 * sn_policy_pooch.c — PoocH (Ito et al., 2019) without recomputation: each
 * feature map is kept or swapped by what the timeline says. Starting from
 * every feature map kept, the largest ones are swapped (offloaded after
 * their last forward use) one by one while the timeline finds the plan
 * over the budget; swap-ins then start as early as free memory allows
 * instead of at a fixed distance from their use.
 */
#include "policy/sn_policy.h"

#include <stdlib.h>

typedef struct fmap {
    int t, lf, fb;
    uint64_t bytes;
} fmap;

static int by_size(const void *pa, const void *pb)
{
    const fmap *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    return a->t - b->t;
}

int sn_policy_pooch(const sn_pol *P, sn_pol_acts *A, int *algo)
{
    sn_pol_algo_framework(P, algo);
    if (P->framework_liveness && (sn_pol_liveness(P, A) < 0 || sn_pol_normalize(P, A) < 0))
        return -1;
    fmap *f = malloc((size_t)(P->nt ? P->nt : 1) * sizeof *f);
    if (!f)
        return -1;
    int n = 0;
    for (int t = 0; t < P->nt; t++) {
        int lf, fb;
        if (sn_pol_swappable(P, t, &lf, &fb))
            f[n++] = (fmap){.t = t, .lf = lf, .fb = fb, .bytes = P->m->tensor[t].bytes};
    }
    qsort(f, (size_t)n, sizeof *f, by_size);
    int rc = -1;
    for (int i = 0;; i++) {
        sn_plan_timeline tl;
        if (sn_pol_eval(P, A, algo, P->budget, &tl, NULL) < 0)
            goto out;
        if (tl.feasible || i == n)
            break;
        /* swapped in on demand for now; placed early below */
        if (sn_pol_swap(P, A, f[i].t, f[i].lf, f[i].fb, f[i].fb) < 0 || sn_pol_normalize(P, A) < 0)
            goto out;
    }
    rc = sn_pol_place(P, A, algo, P->budget, SN_POL_EARLY, P->m->backward_start);
out:
    free(f);
    return rc;
}
