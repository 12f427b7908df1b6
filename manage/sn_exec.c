/*
 * sn_exec.c — following a plan (see sn_exec.h): made once, when the
 * iteration is learned, then consulted at every call on the sequence for
 * the moves due and for the algorithm a convolution runs.
 */
#include "manage/sn_exec.h"

#include <math.h>
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

/* Plan tensors by trace id, then the allocations the run knows looked up
 * in it: one pass over each. */
static void sn_exec_bind(sn_exec *ex, const sn_planmodel_store *ps, const sn_plan_model *pm,
                         const sn_exec_known *known, size_t nknown)
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
    for (size_t i = 0; i < nknown; i++) {
        sn_exec_id *hit = NULL;
        HASH_FIND(hh, by_id, &known[i].trace_id, sizeof known[i].trace_id, hit);
        if (hit)
            ex->block[hit->tensor] = known[i].block;
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

/* Whether plan tensor x is allocated anew each iteration, after the
 * iteration's first call, and is something to move: one the plan gives no
 * bytes (it shares a granule with others) never matches an allocation. */
static int sn_exec_born(const sn_plan_tensor *x)
{
    return x->bounded && !x->pinned && x->alloc_step > 0 && x->bytes > 0;
}

/* The tensors allocated anew each iteration, by the plan step their
 * allocation precedes, in allocation (trace id) order: a counting sort. */
static int sn_exec_births(sn_exec *ex, const sn_planmodel_store *ps, const sn_plan_model *pm)
{
    ex->born_off = calloc((size_t)ex->nsteps + 1, sizeof *ex->born_off);
    ex->born_t = malloc(((size_t)pm->ntensors + 1) * sizeof *ex->born_t);
    int *fill = malloc(((size_t)ex->nsteps + 1) * sizeof *fill);
    if (!ex->born_off || !ex->born_t || !fill) {
        free(fill);
        return -1;
    }
    for (int k = 0; k < pm->ntensors; k++) {
        const sn_plan_tensor *x = &pm->tensor[k];
        if (sn_exec_born(x))
            ex->born_off[x->alloc_step + 1]++;
    }
    for (int s = 0; s < ex->nsteps; s++)
        ex->born_off[s + 1] += ex->born_off[s];
    memcpy(fill, ex->born_off, ((size_t)ex->nsteps + 1) * sizeof *fill);
    /* tensors are in trace id order within the model's and within the
     * unnamed ones; a stable insertion keeps each step's list by id */
    for (int k = 0; k < pm->ntensors; k++) {
        const sn_plan_tensor *x = &pm->tensor[k];
        if (!sn_exec_born(x))
            continue;
        int s = x->alloc_step, j = fill[s]++;
        while (j > ex->born_off[s] && ps->trace_tensor[ex->born_t[j - 1]] > ps->trace_tensor[k]) {
            ex->born_t[j] = ex->born_t[j - 1];
            j--;
        }
        ex->born_t[j] = k;
    }
    free(fill);
    return 0;
}

void sn_exec_bind_alloc(sn_exec *ex, uint64_t size, void *block)
{
    if (!ex->active || ex->off || !ex->started || !ex->born_off || !block)
        return;
    /* the plan step the allocation comes before: the first whose call is
     * past the latest call seen (next_pre is not it: calls with nothing
     * due leave it behind) */
    int lo = 0, hi = ex->nsteps;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (ex->pos[mid] <= ex->last_pos)
            lo = mid + 1;
        else
            hi = mid;
    }
    int s = lo;
    if (s <= 0 || s >= ex->nsteps)
        return;
    /* the step's next tensor in allocation order of this size: an
     * allocation the plan does not hold (one smaller than a granule, which
     * shares one) is passed over rather than taken for the next */
    uint64_t bytes = ex->granule ? (size + ex->granule - 1) / ex->granule * ex->granule : size;
    int t = -1;
    for (int i = ex->born_off[s] + ex->born_seen; i < ex->born_off[s + 1] && t < 0; i++)
        if (ex->plan_tensor_bytes[ex->born_t[i]] == bytes) {
            t = ex->born_t[i];
            ex->born_seen = i + 1 - ex->born_off[s];
        }
    if (t < 0)
        return;
    ex->block[t] = block;
    ex->rebound++;
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
    /* from each step, the next with moves other than prefetches and the
     * next with prefetches (nsteps: none): the steps between are passed
     * without looking (sn_exec_due_quiet) */
    ex->next_out_step = malloc(((size_t)ex->nsteps + 1) * sizeof *ex->next_out_step);
    ex->next_pre_step = malloc(((size_t)ex->nsteps + 1) * sizeof *ex->next_pre_step);
    if (!ex->next_out_step || !ex->next_pre_step)
        return -1;
    ex->next_out_step[ex->nsteps] = ex->next_pre_step[ex->nsteps] = ex->nsteps;
    for (int s = ex->nsteps - 1; s >= 0; s--) {
        int out = 0, pre = 0;
        for (int j = ex->act_off[s]; j < ex->act_off[s + 1]; j++) {
            if (pl->actions[ex->act[j]].op == SN_PLAN_PREFETCH)
                pre = 1;
            else
                out = 1;
        }
        if (pl->sync && pl->sync[s])
            pre = 1; /* (a sync step unmaps what left, prefetches or not) */
        ex->next_out_step[s] = out ? s : ex->next_out_step[s + 1];
        ex->next_pre_step[s] = pre ? s : ex->next_pre_step[s + 1];
    }
    return 0;
}

/*
 * The plan is made with the memory the arena will really hold: a tensor of
 * a granule or more takes whole granules, and smaller ones share granules
 * with other small allocations, which only demand residency may move (a
 * granule leaves when all it holds may): the plan keeps them in place. A
 * plan that counted the bytes asked for would promise room the arena does
 * not have, and demand evictions would make up the difference at the
 * worst moments. The model also says which waits for the device moving
 * memory costs: the framework's own frees (cudaFree synchronises), and on
 * a VMM arena (remap_drains) the sync steps of a gathered plan. The
 * driver's cuMemMap, cuMemSetAccess and cuMemUnmap do not wait for the
 * device (measured on an H200, bench/results/gpu_h200.md), and the arena
 * waits for a planned leave's own copy alone when it needs its memory
 * (sn_make_room_locked), so elsewhere remapping costs host time only.
 */
static void sn_exec_fit_to_arena(sn_planmodel_store *ps, sn_plan_model *pm, uint64_t granule, int vmm_arena)
{
    pm->remap_drains = vmm_arena;
    pm->scratch_held = vmm_arena; /* the arena's scratch stays mapped */
    pm->free_drains = 0; /* the framework's cudaFree waits for its own streams, not libsn's copies */
    if (!granule)
        return;
    for (int k = 0; k < pm->ntensors; k++) {
        sn_plan_tensor *x = &ps->tensor[k];
        if (x->pinned || !x->bytes)
            continue;
        if (x->bytes < granule)
            x->pinned = 1;
        else
            x->bytes = (x->bytes + granule - 1) / granule * granule;
    }
}

/* The plan's memory per step of the learned iteration (the most over the
 * plan steps before it), and room for the measured curve when a plot is
 * wanted. Without them the report and the plot only leave the curves out. */
static void sn_exec_curves(sn_exec *ex, const sn_model *m, const sn_planmodel_store *ps, const sn_plan_model *pm)
{
    uint64_t *mem = malloc((size_t)pm->nsteps * sizeof *mem);
    ex->plan_mem = calloc(m->period ? m->period : 1, sizeof *ex->plan_mem);
    sn_plan_timeline tl;
    if (!mem || !ex->plan_mem || !ex->plan.predicted.feasible ||
        sn_plan_simulate(pm, &ex->plan, &tl, NULL, mem) != 0) {
        free(ex->plan_mem);
        ex->plan_mem = NULL;
    } else {
        for (int p = 0; p < pm->nsteps; p++) {
            int k = ps->model_step[p];
            if (k >= 0 && (size_t)k < m->period && mem[p] > ex->plan_mem[k])
                ex->plan_mem[k] = mem[p];
        }
    }
    free(mem);
    if (sn_opt.plot.kind == SN_OUT_PATH)
        ex->seen_mem = calloc(m->period ? m->period : 1, sizeof *ex->seen_mem);
}

/* SN_WORKSPACE=min and keep: each convolution step offers one algorithm,
 * its smallest-workspace one (the fastest of those on a tie) or the
 * framework's; fw_ms receives the framework's time first. */
static void sn_exec_restrict(sn_plan_model *pm, sn_planmodel_store *ps, int workspace, double *fw_ms)
{
    for (int s = 0; s < pm->nsteps; s++) {
        sn_plan_step *st = &ps->step[s];
        fw_ms[s] = st->nalgo > 0 ? st->algo[st->framework_algo].ms : st->ms;
        if (st->nalgo < 2 || workspace == SN_WORKSPACE_AUTO)
            continue;
        int k = st->framework_algo;
        for (int a = 0; workspace == SN_WORKSPACE_MIN && a < st->nalgo; a++)
            if (st->algo[a].workspace < st->algo[k].workspace ||
                (st->algo[a].workspace == st->algo[k].workspace && st->algo[a].ms < st->algo[k].ms))
                k = a;
        st->algo += k;
        st->nalgo = 1;
        st->framework_algo = 0;
    }
}

/* Which convolution calls run another algorithm than the framework's. */
static int sn_exec_convs(sn_exec *ex, const sn_trace *t, const sn_model *m, const sn_plan_model *pm,
                         const sn_planmodel_store *ps, const double *fw_ms)
{
    ex->period = (int64_t)m->period;
    ex->conv_step = malloc(((size_t)ex->period + 1) * sizeof *ex->conv_step);
    ex->conv_conf = calloc((size_t)ex->nsteps, sizeof *ex->conv_conf);
    ex->conv_fw = malloc((size_t)ex->nsteps * sizeof *ex->conv_fw);
    ex->conv_algo = malloc((size_t)ex->nsteps * sizeof *ex->conv_algo);
    ex->conv_ws = calloc((size_t)ex->nsteps, sizeof *ex->conv_ws);
    ex->conv_supply = calloc((size_t)ex->nsteps, 1);
    if (!ex->conv_step || !ex->conv_conf || !ex->conv_fw || !ex->conv_algo || !ex->conv_ws || !ex->conv_supply)
        return -1;
    for (int64_t k = 0; k <= ex->period; k++)
        ex->conv_step[k] = -1;
    for (int p = 0; p < ex->nsteps; p++) {
        const sn_trace_call *e = &t->calls[ps->call[p]];
        const sn_plan_step *st = &pm->step[p];
        ex->conv_fw[p] = e->algo;
        ex->conv_algo[p] = -1;
        ex->conv_conf[p] = e->conf;
        int i = ex->plan.algo ? ex->plan.algo[p] : -1;
        const sn_plan_algo *a = st->conv && i >= 0 && i < st->nalgo ? &st->algo[i] : NULL;
        int k = ps->model_step[p];
        if (!a || k < 0 || k >= ex->period || ps->call[p] != m->steps[k].call || !e->conf)
            continue;
        /* a buffer the framework gave that libsn replaces: every call */
        int supply = ps->supplied[p] && e->workspace > 0;
        if (a->algo == e->algo && !supply)
            continue;
        ex->conv_algo[p] = a->algo;
        ex->conv_ws[p] = a->workspace;
        ex->conv_supply[p] = (char)supply;
        ex->conv_step[k] = p;
        if (a->algo == e->algo)
            continue;
        if (a->ms < fw_ms[p])
            ex->algo_up++;
        else
            ex->algo_down++;
    }
    return 0;
}

/* A gathered plan: per sync step, the largest workspace libsn supplies to
 * a convolution before the next sync step (the stretch wraps around the
 * iteration's end), which is mapped there for the whole stretch, as the
 * plan's timeline holds it (sn_plan_stretch_workspace). */
static void sn_exec_stretches(sn_exec *ex)
{
    int n = ex->nsteps;
    if (!ex->plan.sync || !ex->conv_ws || !ex->conv_supply || n <= 0)
        return;
    ex->stretch_ws = calloc((size_t)n, sizeof *ex->stretch_ws);
    if (!ex->stretch_ws)
        return;
    for (int s = 0; s < n; s++) {
        if (!ex->plan.sync[s])
            continue;
        uint64_t most = 0;
        for (int i = 0; i < n; i++) {
            int k = (s + i) % n;
            if (i > 0 && ex->plan.sync[k])
                break;
            if (ex->conv_supply[k] && ex->conv_ws[k] > most)
                most = ex->conv_ws[k];
        }
        ex->stretch_ws[s] = most;
    }
}

int sn_exec_conv(const sn_exec *ex, int64_t pos, uint64_t conf, int fw, sn_exec_conv_choice *out)
{
    if (!ex->active || !ex->conv_step || pos < 0 || (pos & 1) || !conf)
        return 0;
    int64_t k = pos / 2;
    if (k >= ex->period)
        return 0;
    int p = ex->conv_step[k];
    if (p < 0 || ex->conv_algo[p] < 0 || ex->conv_conf[p] != conf || ex->conv_fw[p] != fw)
        return 0;
    out->algo = ex->conv_algo[p];
    out->ws = ex->conv_ws[p];
    out->supply = ex->conv_supply[p];
    return 1;
}

void sn_exec_conv_note(sn_exec *ex, int ran, int changed, int scratch)
{
    /* counted with no lock held: atomic, as every change to these counts */
    if (!ran)
        __atomic_add_fetch(&ex->algo_kept, 1, __ATOMIC_RELAXED);
    if (ran && changed)
        __atomic_add_fetch(&ex->algo_calls, 1, __ATOMIC_RELAXED);
    if (ran && scratch)
        __atomic_add_fetch(&ex->algo_scratch_calls, 1, __ATOMIC_RELAXED);
}

void sn_exec_conv_failed(sn_exec *ex, int64_t pos)
{
    if (!ex->conv_step || pos < 0 || (pos & 1) || pos / 2 >= ex->period)
        return;
    int p = ex->conv_step[pos / 2];
    if (p >= 0) {
        int changed = ex->conv_algo[p] != ex->conv_fw[p];
        ex->conv_step[pos / 2] = -1;
        ex->algo_failed++;
        if (changed && __atomic_load_n(&ex->algo_calls, __ATOMIC_RELAXED))
            __atomic_sub_fetch(&ex->algo_calls, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&ex->algo_kept, 1, __ATOMIC_RELAXED);
    }
}

int sn_exec_trial_next(sn_exec *ex, uint64_t iteration, double ms)
{
    if (!ex->active || ex->trial.done || ex->trial.n <= 1 || iteration <= ex->trial.from)
        return -1;
    /* A plan's first iteration moves tensors to where it wants them, and
     * the first plan's next ones still learn which contents are dead: a
     * candidate is measured once two iterations in a row agree within 1%
     * (the later), or at its sixth. */
    int settled = iteration > ex->trial.from + 1 && ex->trial.prev_iter + 1 == iteration &&
                  fabs(ms - ex->trial.prev_ms) <= 0.01 * ms;
    ex->trial.prev_iter = iteration;
    ex->trial.prev_ms = ms;
    if (!settled && iteration < ex->trial.from + SN_EXEC_TRIAL_MAX_ITERS)
        return -1;
    ex->trial.ms[ex->trial.rank] = ms;
    if (ex->trial.rank + 1 < ex->trial.n)
        return ex->trial.rank + 1;
    ex->trial.done = 1;
    int best = 0;
    for (int r = 1; r < ex->trial.n; r++)
        if (ex->trial.ms[r] < ex->trial.ms[best])
            best = r;
    ex->trial.best = best;
    return best == ex->trial.rank ? -1 : best;
}

/* Makes p a plan that moves nothing and runs the framework's algorithms:
 * the executor then only makes what each call touches resident (demand
 * residency, with the plan's placement classes), as without a plan. */
static void sn_exec_plan_empty(sn_plan *p, const sn_plan_model *pm)
{
    free(p->actions);
    p->actions = NULL;
    p->nactions = 0;
    free(p->sync);
    p->sync = NULL;
    for (int s = 0; p->algo && s < pm->nsteps; s++)
        p->algo[s] = pm->step[s].nalgo > 0 ? pm->step[s].framework_algo : -1;
    if (sn_plan_simulate(pm, p, &p->predicted, NULL, NULL) < 0)
        p->predicted.feasible = 0;
}

/* A first plan's candidates, to be measured in turn. They are those of
 * the model choosing the algorithms, up to SN_CANDIDATES; when the plan
 * keeping the framework's algorithms was predicted better (switched: it
 * is the one just made, its model's candidates in it), that model's
 * candidates are measured first, up to SN_CANDIDATES, and the other's
 * follow, all but its last. Last comes demand residency (the plan
 * emptied), which no prediction of the timeline stands for: ResNet-50 b32
 * dynamic at half its peak ran every plan in 606 ms or more and demand
 * residency in 594. Choosing the model by prediction alone
 * measured DenseNet-121 b128 in 12 GB only on the framework's algorithms
 * (1210 ms; its best plan there predicted 1240 against 1244), where
 * modnn's plan with its own algorithms ran at 1194 and, among auto's
 * candidates, at 1167; measuring only the other model's after the first,
 * ResNet-50 b32 dynamic at half its peak lost its fastest (the
 * framework's model's third candidate: 606 ms against 616). */
static void sn_exec_trials_init(sn_exec *ex, int switched, int nopt, const double *opt_ms)
{
    int most = sn_opt.candidates < SN_PLAN_TRIALS ? sn_opt.candidates : SN_PLAN_TRIALS;
    int n = 0;
    if (switched) {
        for (int r = 0; r < ex->plan.ncandidates && r < SN_PLAN_TRIALS && n < most; r++) {
            ex->trial.model[n] = SN_TRIAL_FRAMEWORK;
            ex->trial.frank[n] = r;
            ex->trial.pred[n++] = ex->plan.candidate_ms[r];
        }
        if (nopt > most - 1)
            nopt = most - 1;
    }
    for (int r = 0; r < nopt && r < most && n < SN_EXEC_TRIALS; r++) {
        ex->trial.model[n] = SN_TRIAL_CHOSEN;
        ex->trial.frank[n] = r;
        ex->trial.pred[n++] = opt_ms[r];
    }
    if (!n) {
        ex->trial.model[0] = switched ? SN_TRIAL_FRAMEWORK : SN_TRIAL_CHOSEN;
        ex->trial.frank[0] = 0;
        ex->trial.pred[n++] = ex->plan.candidate_ms[0];
    }
    /* and moving nothing a call does not need (demand residency, as
     * SN_POLICY=lru runs), when the plan moves anything and there is
     * more than one trial */
    if (n > 1 && n < SN_EXEC_TRIALS && ex->plan.nactions > 0) {
        ex->trial.model[n] = SN_TRIAL_DEMAND;
        ex->trial.frank[n] = 0;
        ex->trial.pred[n++] = -1;
    }
    ex->trial.n = n;
    ex->trial.rank = 0;
    ex->trial.done = n <= 1;
    ex->trial.best = 0;
    for (int r = 0; r < SN_EXEC_TRIALS; r++) {
        ex->trial.ms[r] = -1;
        if (r >= n)
            ex->trial.pred[r] = -1;
    }
}

/* What a plan is made from, taken under the locks the trace needs (see
 * sn_exec.h): the models of the iteration, each fitted to the arena's
 * granules, and which of auto's candidates is wanted. Cheap (tens of ms
 * for ResNet-101 b128, against seconds for the plan itself). */
int sn_exec_prepare(const sn_exec *ex, const sn_trace *t, const sn_exec_job_cfg *cfg, sn_exec_job *job)
{
    memset(job, 0, sizeof *job);
    job->cfg = *cfg;
    job->fresh = cfg->rank < 0;
    job->rank = job->fresh ? 0 : cfg->rank;
    if (sn_model_build(t, &job->m) != 0)
        return -1;
    job->have_m = 1;
    sn_planmodel_link keep = {0, 0, cfg->workspace == SN_WORKSPACE_KEEP};
    if (!job->m.found || sn_planmodel_build(t, &job->m, &keep, &job->pm, &job->ps) != 0)
        return -1;
    job->have_pm = 1;
    sn_exec_fit_to_arena(&job->ps, &job->pm, cfg->granule, cfg->vmm_arena);
    job->fw_ms = malloc(((size_t)job->pm.nsteps + 1) * sizeof *job->fw_ms);
    if (!job->fw_ms)
        return -1;
    sn_exec_restrict(&job->pm, &job->ps, cfg->workspace, job->fw_ms);
    /* a candidate after the first names its model and its rank there: on
     * the model keeping the framework's algorithms, it is made below */
    job->frank = job->rank;
    if (!job->fresh && job->rank < ex->trial.n && job->rank < SN_EXEC_TRIALS) {
        job->rank_fw = ex->trial.model[job->rank] == SN_TRIAL_FRAMEWORK;
        job->demand = ex->trial.model[job->rank] == SN_TRIAL_DEMAND;
        job->frank = ex->trial.frank[job->rank];
    }
    /* auto's own safety net for the algorithms: the model that keeps the
     * framework's algorithms and buffers (as keep runs), planned too */
    if (cfg->policy == SN_POLICY_AUTO && cfg->workspace == SN_WORKSPACE_AUTO &&
        (job->ps.options > 0 || job->ps.virtual_ws > 0) && (job->fresh || job->rank_fw)) {
        job->try_km = 1;
        keep.framework_only = 1;
        if (sn_planmodel_build(t, &job->m, &keep, &job->km, &job->ks) == 0) {
            sn_exec_fit_to_arena(&job->ks, &job->km, cfg->granule, cfg->vmm_arena);
            job->have_km = 1;
        }
    }
    return 0;
}

/* The plan itself: pure work on the job's own models, no lock held. */
void sn_exec_plan_job(sn_exec_job *job)
{
    if (!job->have_pm || !job->fw_ms)
        return;
    const sn_exec_job_cfg *cfg = &job->cfg;
    (void)sn_plan_bound_of(&job->pm, cfg->budget, &job->limit); /* (ms 0 when it cannot be had) */
    const sn_plan_trials_cfg tcfg = {sn_opt.candidates, sn_opt.candidate_slack / 100.0};
    int made = job->rank_fw || sn_plan_make_ranked(&job->pm, cfg->policy, cfg->budget, &tcfg, job->frank, &job->plan) == 0;
    job->options = job->ps.options;
    /* the candidates of the model choosing algorithms (a first plan's) */
    job->nopt = made ? job->plan.ncandidates : 0;
    for (int r = 0; r < SN_PLAN_TRIALS; r++)
        job->opt_ms[r] = made && r < job->nopt ? job->plan.candidate_ms[r] : -1;
    if (made && job->try_km) {
        /* followed instead when it is predicted better */
        sn_plan kp;
        if (job->have_km && sn_plan_make_ranked(&job->km, cfg->policy, cfg->budget, &tcfg, job->rank_fw ? job->frank : 0, &kp) == 0) {
            const sn_plan_timeline *a = &kp.predicted, *b = &job->plan.predicted;
            /* between plans that do not fit, auto's own ranking (by
             * memory) already chose among the framework's algorithms and
             * the others */
            if (job->rank_fw || (a->feasible && (!b->feasible || a->iter_ms < b->iter_ms))) {
                sn_plan_free(&job->plan);
                job->plan = kp;
                kp = (sn_plan){0};
                sn_planmodel_free(&job->ps);
                job->pm = job->km;
                job->ps = job->ks;
                job->ks = (sn_planmodel_store){0};
                job->have_km = 0;
                for (int s = 0; s < job->pm.nsteps; s++)
                    job->fw_ms[s] = job->pm.step[s].ms;
                job->switched = 1;
            }
            sn_plan_free(&kp);
        }
        if (job->rank_fw && !job->switched)
            made = 0;
    }
    if (made && job->demand)
        sn_exec_plan_empty(&job->plan, &job->pm);
    job->made = made;
}

void sn_exec_job_free(sn_exec_job *job)
{
    free(job->fw_ms);
    sn_plan_free(&job->plan);
    if (job->have_km)
        sn_planmodel_free(&job->ks);
    if (job->have_pm)
        sn_planmodel_free(&job->ps);
    if (job->have_m)
        sn_model_free(&job->m);
    memset(job, 0, sizeof *job);
}

/* The plan made, bound to the run: positions in the trace's sequence,
 * the algorithms measured, the registry's blocks. Under the locks the
 * trace and the registry need; the plan ex held before is freed here (the
 * run's counts kept), not earlier, so that nothing the run reads changes
 * while the job is planned. */
int sn_exec_install(sn_exec *ex, sn_exec_job *job, const sn_trace *t, const sn_exec_known *known,
                    size_t nknown)
{
    const sn_exec_job_cfg *cfg = &job->cfg;
    int dev = cfg->dev;
    sn_exec_free(ex);
    ex->policy = cfg->policy;
    ex->workspace = cfg->workspace;
    ex->last_pos = -1;
    if (!job->have_pm)
        return -1;
    ex->plan_budget = cfg->budget;
    ex->nsteps = job->pm.nsteps;
    ex->limit = job->limit;
    ex->algo_framework = job->switched;
    int rc = -1;
    sn_plan_model *pm = &job->pm;
    sn_planmodel_store *ps = &job->ps;
    ex->block = calloc((size_t)pm->ntensors + 1, sizeof *ex->block);
    if (ex->block && job->made) {
        ex->plan = job->plan;
        job->plan = (sn_plan){0};
    }
    if (ex->block && job->made && sn_exec_positions(ex, &job->m, ps) == 0 && sn_exec_index(ex) == 0 &&
        sn_exec_convs(ex, t, &job->m, pm, ps, job->fw_ms) == 0) {
        ex->algo_steps = job->options;
        sn_exec_stretches(ex);
        sn_exec_bind(ex, ps, pm, known, nknown);
        sn_exec_curves(ex, &job->m, ps, pm);
        ex->granule = cfg->granule;
        ex->plan_tensor_bytes = malloc(((size_t)pm->ntensors + 1) * sizeof *ex->plan_tensor_bytes);
        if (ex->plan_tensor_bytes && sn_exec_births(ex, ps, pm) == 0) {
            for (int k = 0; k < pm->ntensors; k++)
                ex->plan_tensor_bytes[k] = pm->tensor[k].bytes;
        } else {
            free(ex->born_off);
            ex->born_off = NULL;
        }
        ex->predicted_ms = ex->plan.predicted.feasible ? ex->plan.predicted.iter_ms : -1;
        ex->active = 1;
        if (job->fresh)
            sn_exec_trials_init(ex, job->switched, job->nopt, job->opt_ms);
        ex->trial.rank = job->rank;
        ex->trial.from = ex->boundaries;
        ex->plans++;
        rc = 0;
        sn_info("device %d: plan of %s for %d steps under %llu bytes: %d moves; %d tensors bound, %d left to "
                "demand; %d convolutions run another algorithm (%d faster, %d with less workspace)%s; predicted "
                "%.3f ms per iteration%s",
                dev, sn_option_choice("SN_POLICY", cfg->policy), pm->nsteps, (unsigned long long)cfg->budget,
                ex->plan.nactions, ex->bound, ex->unbound, ex->algo_up + ex->algo_down, ex->algo_up,
                ex->algo_down, ex->algo_framework ? " (the framework's algorithms predicted best)" : "",
                ex->plan.predicted.iter_ms,
                ex->plan.predicted.feasible ? "" : " (not feasible as planned: demand makes up for it)");
    }
    sn_exec_job_free(job);
    if (rc != 0)
        sn_exec_free(ex);
    return rc;
}

static void sn_exec_add(sn_exec *ex, const sn_plan_action *a, sn_exec_moves *mv)
{
    void *b = ex->block[a->tensor];
    if (!b) {
        ex->skipped_unbound++;
        return;
    }
    if ((a->op == SN_PLAN_PREFETCH ? mv->nin : mv->nout) == SN_DUE_CAP) {
        ex->skipped_unbound++;
        return;
    }
    if (a->op == SN_PLAN_PREFETCH) {
        mv->in[mv->nin++] = b;
    } else {
        sn_debug("plan: %s of tensor %d after step %d (position %lld): block %p",
                 a->op == SN_PLAN_DROP ? "drop" : "offload", a->tensor, a->step, (long long)ex->pos[a->step], b);
        mv->drop[mv->nout] = a->op == SN_PLAN_DROP;
        mv->out[mv->nout++] = b;
    }
}

/* Offloads and drops of plan steps [from, to). */
static void sn_exec_after(sn_exec *ex, int from, int to, sn_exec_moves *mv)
{
    for (int s = from; s < to; s++)
        for (int j = ex->act_off[s]; j < ex->act_off[s + 1]; j++) {
            const sn_plan_action *a = &ex->plan.actions[ex->act[j]];
            if (a->op != SN_PLAN_PREFETCH)
                sn_exec_add(ex, a, mv);
        }
}

void sn_exec_due(sn_exec *ex, int64_t pos, sn_exec_moves *mv)
{
    mv->nout = mv->nin = 0;
    if (!ex->active)
        return;
    if (pos < 0) {
        ex->off_steps++;
        /* off the learned sequence: demand residency until it is back */
        if (ex->started && !ex->off) {
            ex->off = 1;
            ex->left++;
        }
        return;
    }
    pos = sn_exec_order(pos);
    if (ex->off) {
        /* back on it (at an iteration's first step): the moves resume
         * from here, what was passed meanwhile is left to demand */
        ex->off = 0;
        ex->started = 0;
        ex->resumed++;
    }
    if (!ex->started) {
        ex->started = 1;
        ex->whole = 0;
        /* joined mid-iteration: what lies behind is the demand's */
        while (ex->next_off < ex->nsteps && ex->pos[ex->next_off] < pos)
            ex->next_off++;
        while (ex->next_pre < ex->nsteps && ex->pos[ex->next_pre] < pos)
            ex->next_pre++;
    } else if (pos < ex->last_pos) {
        sn_debug("plan: position %lld after %lld: a new iteration", (long long)pos, (long long)ex->last_pos);
        /* a new iteration: the last one's remaining moves first */
        sn_exec_after(ex, ex->next_off, ex->nsteps, mv);
        ex->next_off = ex->next_pre = 0;
        ex->iterations++;
        ex->iterations_all++;
        /* the one that ended was followed from its first step: all its
         * allocations were expected */
        if (ex->whole && ex->born_off)
            ex->born_due += (uint64_t)ex->born_off[ex->nsteps];
        ex->whole = 1;
    }
    ex->last_pos = pos;
    ex->born_seen = 0;
    ex->sync_due = 0;
    ex->sync_ws = 0;
    int from = ex->next_off;
    while (ex->next_off < ex->nsteps && ex->pos[ex->next_off] < pos)
        ex->next_off++;
    sn_exec_after(ex, from, ex->next_off, mv);
    for (; ex->next_pre < ex->nsteps && ex->pos[ex->next_pre] <= pos; ex->next_pre++) {
        if (ex->plan.sync && ex->plan.sync[ex->next_pre]) {
            ex->sync_due = 1;
            ex->sync_ws = ex->stretch_ws ? ex->stretch_ws[ex->next_pre] : 0;
        }
        for (int j = ex->act_off[ex->next_pre]; j < ex->act_off[ex->next_pre + 1]; j++) {
            const sn_plan_action *a = &ex->plan.actions[ex->act[j]];
            if (a->op == SN_PLAN_PREFETCH)
                sn_exec_add(ex, a, mv);
        }
    }
    /* the next calls find nothing due up to these positions */
    int o = ex->next_off < ex->nsteps ? ex->next_out_step[ex->next_off] : ex->nsteps;
    int p = ex->next_pre < ex->nsteps ? ex->next_pre_step[ex->next_pre] : ex->nsteps;
    ex->quiet_off = o < ex->nsteps ? ex->pos[o] : INT64_MAX;
    ex->quiet_pre = p < ex->nsteps ? ex->pos[p] : INT64_MAX;
}

void sn_exec_measure(sn_exec *ex, const sn_manage_totals *totals)
{
    if (ex->measured) {
        sn_plan_iter_stats *h = &ex->hist[ex->nhist % SN_PLAN_ITER_STATS];
        *h = (sn_plan_iter_stats){.iteration = ex->nhist,
                                  .ms = -1,
                                  .stall_ms = totals->stall_ms - ex->last_stall,
                                  .in_bytes = totals->in_bytes - ex->last_in,
                                  .out_bytes = totals->out_bytes - ex->last_out,
                                  .off_steps = ex->off_steps - ex->last_off,
                                  .pinned_bytes = totals->pinned - ex->last_pinned};
        ex->nhist++;
    }
    ex->measured = 1;
    ex->last_stall = totals->stall_ms;
    ex->last_in = totals->in_bytes;
    ex->last_out = totals->out_bytes;
    ex->last_off = ex->off_steps;
    ex->last_pinned = totals->pinned;
}

void sn_exec_iteration_ms(sn_exec *ex, uint64_t iteration, double ms)
{
    sn_plan_iter_stats *h = &ex->hist[iteration % SN_PLAN_ITER_STATS];
    if (iteration < ex->nhist && h->iteration == iteration)
        h->ms = ms;
}

int sn_exec_untimed(const sn_exec *ex, uint64_t *iteration, void **from, void **to)
{
    enum { NEV = SN_PLAN_ITER_STATS + 1 };
    uint64_t n = ex->nhist < SN_PLAN_ITER_STATS ? ex->nhist : SN_PLAN_ITER_STATS;
    int k = 0;
    for (uint64_t j = ex->nhist - n; j < ex->nhist; j++) {
        const sn_plan_iter_stats *h = &ex->hist[j % SN_PLAN_ITER_STATS];
        void *a = ex->start_ev[j % NEV], *b = ex->start_ev[(j + 1) % NEV];
        /* start j + 1 must have been recorded (it is the latest at most) */
        if (h->ms >= 0 || !a || !b || j + 1 >= ex->boundaries)
            continue;
        iteration[k] = j;
        from[k] = a;
        to[k++] = b;
    }
    return k;
}

int sn_exec_history(const sn_exec *ex, sn_plan_iter_stats *out)
{
    uint64_t n = ex->nhist < SN_PLAN_ITER_STATS ? ex->nhist : SN_PLAN_ITER_STATS;
    for (uint64_t i = 0; i < n; i++)
        out[i] = ex->hist[(ex->nhist - n + i) % SN_PLAN_ITER_STATS];
    return (int)n;
}

void sn_exec_free(sn_exec *ex)
{
    free(ex->plan_mem);
    free(ex->seen_mem);
    free(ex->born_off);
    free(ex->born_t);
    free(ex->plan_tensor_bytes);
    sn_plan_free(&ex->plan);
    free(ex->pos);
    free(ex->act_off);
    free(ex->act);
    free(ex->next_out_step);
    free(ex->next_pre_step);
    free(ex->block);
    free(ex->conv_step);
    free(ex->conv_conf);
    free(ex->conv_fw);
    free(ex->conv_algo);
    free(ex->conv_ws);
    free(ex->conv_supply);
    free(ex->stretch_ws);
    sn_exec keep = *ex;
    memset(ex, 0, sizeof *ex);
    ex->last_pos = -1;
    ex->plans = keep.plans;
    ex->iterations_all = keep.iterations_all;
    ex->left = keep.left;
    ex->resumed = keep.resumed;
    ex->skipped_unbound = keep.skipped_unbound;
    ex->rebound = keep.rebound;
    ex->born_due = keep.born_due;
    /* the per-iteration measurements span plans */
    memcpy(ex->hist, keep.hist, sizeof ex->hist);
    ex->nhist = keep.nhist;
    ex->off_steps = keep.off_steps;
    ex->seen_iterations = keep.seen_iterations;
    ex->boundaries = keep.boundaries;
    memcpy(ex->start_ev, keep.start_ev, sizeof ex->start_ev);
    ex->measured = keep.measured;
    ex->last_stall = keep.last_stall;
    ex->last_in = keep.last_in;
    ex->last_out = keep.last_out;
    ex->last_off = keep.last_off;
    ex->last_pinned = keep.last_pinned;
    ex->trial = keep.trial;
    /* convolutions run otherwise than the framework asked: the whole run's */
    ex->algo_calls = keep.algo_calls;
    ex->algo_scratch_calls = keep.algo_scratch_calls;
    ex->algo_kept = keep.algo_kept;
    ex->algo_failed = keep.algo_failed;
}
