/*
 * sn_exec.c — following a plan (see sn_exec.h): made once, when the
 * iteration is learned, then consulted at every call on the sequence.
 */
#include "core/sn_exec.h"

#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "allocator/sn_arena.h"
#include "common/sn_log.h"
#include "common/sn_options.h"
#include "tracer/sn_model.h"
#include "tracer/sn_planmodel.h"

typedef struct sn_exec_id {
    uint32_t trace_id;
    int tensor;
    UT_hash_handle hh;
} sn_exec_id;

/* Plan tensors by trace id, then the registry's allocations looked up in
 * it: one pass over each. */
static void sn_exec_bind(sn_exec *ex, const sn_planmodel_store *ps, const sn_plan_model *pm,
                         sn_registry *reg, int dev)
{
    sn_exec_id *ids = calloc((size_t)pm->ntensors, sizeof *ids), *by_id = NULL;
    if (!ids)
        return;
    for (int k = 0; k < pm->ntensors; k++) {
        if (pm->tensor[k].pinned)
            continue;
        ids[k].trace_id = ps->trace_tensor[k];
        ids[k].tensor = k;
        sn_exec_id *dup = NULL;
        HASH_FIND(hh, by_id, &ids[k].trace_id, sizeof ids[k].trace_id, dup);
        if (!dup)
            HASH_ADD(hh, by_id, trace_id, sizeof ids[k].trace_id, &ids[k]);
    }
    for (size_t i = 0; i < reg->count; i++) {
        const sn_alloc *a = reg->sorted[i];
        if (!a->managed || a->dev != dev || a->trace_id == SN_NO_TRACE_ID)
            continue;
        sn_exec_id *hit = NULL;
        HASH_FIND(hh, by_id, &a->trace_id, sizeof a->trace_id, hit);
        if (hit)
            ex->block[hit->tensor] = sn_arena_alloc_block(a->managed);
    }
    HASH_CLEAR(hh, by_id);
    free(ids);
    for (int k = 0; k < pm->ntensors; k++) {
        if (ex->block[k])
            ex->bound++;
        else if (!pm->tensor[k].pinned)
            ex->unbound++;
    }
}

/* The tracer numbers step k 2k and a call before it 2k + 1, which comes
 * first: ordered, they are 4k and 4k - 1. */
static int64_t sn_exec_order(int64_t pos)
{
    return pos & 1 ? 2 * pos - 3 : 2 * pos;
}

/* The order (sn_exec_order) of each plan step's call. Calls after the
 * iteration's last step get one never reached: their moves start when the
 * next iteration does. */
static int sn_exec_positions(sn_exec *ex, const sn_model *m, const sn_planmodel_store *ps)
{
    ex->pos = malloc((size_t)ex->nsteps * sizeof *ex->pos);
    if (!ex->pos)
        return -1;
    int64_t period = (int64_t)m->period;
    for (int p = 0; p < ex->nsteps; p++) {
        int64_t k = ps->model_step[p];
        if (k < 0 || k >= period)
            ex->pos[p] = 4 * period;
        else
            ex->pos[p] = ps->call[p] == m->steps[k].call ? 4 * k : 4 * k - 1;
        if (p && ex->pos[p] < ex->pos[p - 1])
            ex->pos[p] = ex->pos[p - 1];
    }
    return 0;
}

/* Actions by step, in the plan's order (a counting sort). */
static int sn_exec_index(sn_exec *ex)
{
    const sn_plan *pl = &ex->plan;
    ex->act_off = calloc((size_t)ex->nsteps + 1, sizeof *ex->act_off);
    ex->act = malloc(((size_t)pl->nactions + 1) * sizeof *ex->act);
    if (!ex->act_off || !ex->act)
        return -1;
    for (int i = 0; i < pl->nactions; i++)
        ex->act_off[pl->actions[i].step + 1]++;
    for (int s = 0; s < ex->nsteps; s++)
        ex->act_off[s + 1] += ex->act_off[s];
    int *fill = malloc(((size_t)ex->nsteps + 1) * sizeof *fill);
    if (!fill)
        return -1;
    memcpy(fill, ex->act_off, ((size_t)ex->nsteps + 1) * sizeof *fill);
    for (int i = 0; i < pl->nactions; i++)
        ex->act[fill[pl->actions[i].step]++] = i;
    free(fill);
    return 0;
}

int sn_exec_build(sn_exec *ex, const sn_trace *t, sn_registry *reg, int dev, int policy, uint64_t budget)
{
    sn_exec_free(ex);
    ex->policy = policy;
    sn_model m;
    if (sn_model_build(t, &m) != 0)
        return -1;
    int rc = -1;
    sn_plan_model pm;
    sn_planmodel_store ps;
    if (!m.found || sn_planmodel_build(t, &m, NULL, &pm, &ps) != 0) {
        sn_model_free(&m);
        return -1;
    }
    ex->plan_budget = budget;
    ex->nsteps = pm.nsteps;
    ex->block = calloc((size_t)pm.ntensors + 1, sizeof *ex->block);
    if (ex->block && sn_plan_make(&pm, policy, budget, &ex->plan) == 0 && sn_exec_positions(ex, &m, &ps) == 0 &&
        sn_exec_index(ex) == 0) {
        sn_exec_bind(ex, &ps, &pm, reg, dev);
        ex->predicted_ms = ex->plan.predicted.feasible ? ex->plan.predicted.iter_ms : -1;
        ex->active = 1;
        ex->plans++;
        rc = 0;
        sn_info("device %d: plan of %s for %d steps under %llu bytes: %d moves; %d tensors bound, %d left to "
                "demand; predicted %.3f ms per iteration%s",
                dev, sn_option_choice("SN_POLICY", policy), pm.nsteps, (unsigned long long)budget,
                ex->plan.nactions, ex->bound, ex->unbound, ex->plan.predicted.iter_ms,
                ex->plan.predicted.feasible ? "" : " (not feasible as planned: demand makes up for it)");
    }
    sn_planmodel_free(&ps);
    sn_model_free(&m);
    if (rc != 0)
        sn_exec_free(ex);
    return rc;
}

static void sn_exec_add(sn_exec *ex, const sn_plan_action *a, void **out, int *drop, size_t *nout, void **in,
                        size_t *nin, size_t cap)
{
    void *b = ex->block[a->tensor];
    if (!b) {
        ex->skipped_unbound++;
        return;
    }
    if ((a->op == SN_PLAN_PREFETCH ? *nin : *nout) == cap) {
        ex->skipped_unbound++;
        return;
    }
    if (a->op == SN_PLAN_PREFETCH) {
        in[(*nin)++] = b;
    } else {
        sn_debug("plan: %s of tensor %d after step %d (position %lld): block %p",
                 a->op == SN_PLAN_DROP ? "drop" : "offload", a->tensor, a->step, (long long)ex->pos[a->step], b);
        drop[*nout] = a->op == SN_PLAN_DROP;
        out[(*nout)++] = b;
    }
}

/* Offloads and drops of plan steps [from, to). */
static void sn_exec_after(sn_exec *ex, int from, int to, void **out, int *drop, size_t *nout, size_t cap)
{
    for (int s = from; s < to; s++)
        for (int j = ex->act_off[s]; j < ex->act_off[s + 1]; j++) {
            const sn_plan_action *a = &ex->plan.actions[ex->act[j]];
            if (a->op != SN_PLAN_PREFETCH)
                sn_exec_add(ex, a, out, drop, nout, NULL, NULL, cap);
        }
}

void sn_exec_due(sn_exec *ex, int64_t pos, void **out, int *drop, size_t *nout, void **in, size_t *nin,
                 size_t cap)
{
    *nout = *nin = 0;
    if (!ex->active)
        return;
    if (pos < 0) {
        /* off the learned sequence: demand residency until it is back */
        if (ex->started && !ex->off) {
            ex->off = 1;
            ex->left++;
        }
        return;
    }
    if (ex->off) {
        /* back on it (at an iteration's first step): the moves resume
         * from here, what was passed meanwhile is left to demand */
        ex->off = 0;
        ex->started = 0;
        ex->resumed++;
    }
    pos = sn_exec_order(pos);
    if (!ex->started) {
        ex->started = 1;
        /* joined mid-iteration: what lies behind is the demand's */
        while (ex->next_off < ex->nsteps && ex->pos[ex->next_off] < pos)
            ex->next_off++;
        while (ex->next_pre < ex->nsteps && ex->pos[ex->next_pre] < pos)
            ex->next_pre++;
    } else if (pos < ex->last_pos) {
        sn_debug("plan: position %lld after %lld: a new iteration", (long long)pos, (long long)ex->last_pos);
        /* a new iteration: the last one's remaining moves first */
        sn_exec_after(ex, ex->next_off, ex->nsteps, out, drop, nout, cap);
        ex->next_off = ex->next_pre = 0;
        ex->iterations++;
        ex->iterations_all++;
    }
    ex->last_pos = pos;
    int from = ex->next_off;
    while (ex->next_off < ex->nsteps && ex->pos[ex->next_off] < pos)
        ex->next_off++;
    sn_exec_after(ex, from, ex->next_off, out, drop, nout, cap);
    for (; ex->next_pre < ex->nsteps && ex->pos[ex->next_pre] <= pos; ex->next_pre++)
        for (int j = ex->act_off[ex->next_pre]; j < ex->act_off[ex->next_pre + 1]; j++) {
            const sn_plan_action *a = &ex->plan.actions[ex->act[j]];
            if (a->op == SN_PLAN_PREFETCH)
                sn_exec_add(ex, a, out, drop, nout, in, nin, cap);
        }
}

void sn_exec_free(sn_exec *ex)
{
    sn_plan_free(&ex->plan);
    free(ex->pos);
    free(ex->act_off);
    free(ex->act);
    free(ex->block);
    sn_exec keep = *ex;
    memset(ex, 0, sizeof *ex);
    ex->last_pos = -1;
    ex->plans = keep.plans;
    ex->iterations_all = keep.iterations_all;
    ex->left = keep.left;
    ex->resumed = keep.resumed;
    ex->skipped_unbound = keep.skipped_unbound;
}
