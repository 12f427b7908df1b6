/*
 * sn_plan.c — sn_plan_make: checks the model, runs the chosen policy on the
 * model indexed once (sn_policy.h), and hands back the plan with the
 * mobility class of every tensor and the timeline's prediction of it.
 */
#include "policy/sn_policy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/sn_options.h"

int sn_policy_run(const sn_pol *P, int policy, sn_pol_acts *A, int *algo)
{
    sn_pol_acts_free(A);
    /* The seed systems free a layer's workspace after it, as their papers
     * describe: they plan as if the manager's scratch were held for its
     * step only (their plans are judged on the model as it is). */
    sn_plan_model m0;
    sn_pol P0;
    if (policy != SN_POLICY_AUTO)
        P = sn_pol_step_workspace(P, &m0, &P0);
    switch (policy) {
    case SN_POLICY_AUTO:
        return sn_policy_auto(P, A, algo);
    case SN_POLICY_LRU:
        return sn_policy_lru(P, A, algo);
    case SN_POLICY_VDNN_ALL:
        return sn_policy_vdnn(P, 0, A, algo);
    case SN_POLICY_VDNN_CONV:
        return sn_policy_vdnn(P, 1, A, algo);
    case SN_POLICY_VDNN_DYN:
        return sn_policy_vdnn_dyn(P, A, algo);
    case SN_POLICY_SUPERNEURONS:
        return sn_policy_superneurons(P, A, algo);
    case SN_POLICY_MODNN:
        return sn_policy_modnn(P, A, algo);
    case SN_POLICY_POOCH:
        return sn_policy_pooch(P, A, algo);
    case SN_POLICY_DYMEM:
        return sn_policy_dymem(P, A, algo);
    default:
        return -1;
    }
}

static int positive(double x)
{
    return isfinite(x) && x > 0.0;
}

/* What the timeline checks, and what planning needs beyond it: the
 * backward pass's start inside the iteration, the framework's algorithm
 * among the step's, and copy bandwidths (every policy may plan copies). */
static int model_ok(const sn_plan_model *m)
{
    if (sn_plan_check(m, NULL) < 0)
        return 0;
    if (m->backward_start < 0 || m->backward_start > m->nsteps)
        return 0;
    if (!positive(m->h2d_gbps) || !positive(m->d2h_gbps) || !positive(m->duplex))
        return 0;
    for (int s = 0; s < m->nsteps; s++) {
        const sn_plan_step *st = &m->step[s];
        if (st->nalgo > 0 && (st->framework_algo < 0 || st->framework_algo >= st->nalgo))
            return 0;
    }
    return 1;
}

/* The seed systems that ran inside frameworks which free a tensor after
 * its last use and planned only their own moves on top. */
static int leaves_freeing_to_framework(int policy)
{
    return policy == SN_POLICY_VDNN_ALL || policy == SN_POLICY_VDNN_CONV || policy == SN_POLICY_VDNN_DYN ||
           policy == SN_POLICY_MODNN || policy == SN_POLICY_POOCH || policy == SN_POLICY_DYMEM;
}

static int plan_once(const sn_pol *P, const sn_plan_model *m, int policy, uint64_t budget, sn_plan *out);

/*
 * A program that keeps every buffer for the whole run (Caffe, Darknet)
 * frees nothing, where the frameworks the seed systems were built in freed
 * a tensor between its last read and its next overwrite. Those systems'
 * plans are made as their papers describe first; when such a plan does
 * not fit, it is made again with that liveness added, and the second is
 * taken when it fits.
 */
int sn_plan_make(const sn_plan_model *m, int policy, uint64_t budget, sn_plan *out)
{
    return sn_plan_make_ranked(m, policy, budget, NULL, 0, out);
}

int sn_plan_make_ranked(const sn_plan_model *m, int policy, uint64_t budget, const sn_plan_trials_cfg *cfg, int rank,
                        sn_plan *out)
{
    if (!out)
        return -1;
    memset(out, 0, sizeof *out);
    if (!model_ok(m) || policy < SN_POLICY_AUTO || policy > SN_POLICY_DYMEM || rank < 0 ||
        (rank > 0 && policy != SN_POLICY_AUTO))
        return -1;
    /* a seed policy's plan is made and predicted as its paper has it, the
     * workspace held for its step (see sn_policy_run) */
    sn_plan_model m0;
    if (policy != SN_POLICY_AUTO && m->scratch_held) {
        m0 = *m;
        m0.scratch_held = 0;
        m = &m0;
    }
    sn_pol P;
    if (sn_pol_init(&P, m, budget) < 0)
        return -1;
    sn_pol_trials trials = {.n = 1, .found = rank == 0};
    P.auto_rank = rank;
    P.trials_cfg = cfg ? *cfg : (sn_plan_trials_cfg){1, 0.0};
    P.trials = &trials;
    int rc = plan_once(&P, m, policy, budget, out);
    if (rc == 0 && !trials.found) {
        sn_plan_free(out);
        rc = -1;
    }
    if (rc == 0 && !out->predicted.feasible && leaves_freeing_to_framework(policy)) {
        sn_plan live;
        P.framework_liveness = 1;
        if (plan_once(&P, m, policy, budget, &live) == 0) {
            if (live.predicted.feasible) {
                sn_plan_free(out);
                *out = live;
            } else {
                sn_plan_free(&live);
            }
        }
    }
    if (rc == 0) {
        /* (of the plan handed back: auto's candidates, or the one plan) */
        out->rank = rank;
        out->ncandidates = trials.n;
        for (int i = 0; i < trials.n; i++)
            out->candidate_ms[i] = trials.ms[i];
        if (policy != SN_POLICY_AUTO)
            out->candidate_ms[0] = out->predicted.iter_ms;
    }
    sn_pol_fini(&P);
    return rc;
}

static int plan_once(const sn_pol *P, const sn_plan_model *m, int policy, uint64_t budget, sn_plan *out)
{
    memset(out, 0, sizeof *out);
    sn_pol_acts A = {0};
    int *algo = malloc((size_t)m->nsteps * sizeof *algo);
    int *cls = malloc((size_t)(m->ntensors ? m->ntensors : 1) * sizeof *cls);
    if (!algo || !cls || sn_policy_run(P, policy, &A, algo) < 0)
        goto fail;
    memcpy(cls, P->gtbm, (size_t)m->ntensors * sizeof *cls);
    out->policy = policy;
    out->budget = budget;
    out->nactions = A.n;
    out->actions = A.a;
    out->algo = algo;
    out->gtbm_class = cls;
    out->framework_liveness = P->framework_liveness;
    out->sync = A.sync;
    A = (sn_pol_acts){0};
    if (sn_plan_simulate(m, out, &out->predicted, NULL, NULL) < 0) {
        sn_plan_free(out);
        return -1;
    }
    return 0;
fail:
    sn_pol_acts_free(&A);
    free(algo);
    free(cls);
    memset(out, 0, sizeof *out);
    return -1;
}
