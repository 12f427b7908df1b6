/*
 * sn_planmodel.c — the planner's model of the learned iteration (see
 * sn_planmodel.h). What it takes from where, and why:
 *
 *  - A step's time: for a compute step's own call, the model's mean over the
 *    profiled iterations (sn_model_step.ms); for a transfer logged before it,
 *    that call's own measured time (a transfer has no identity across
 *    iterations to average over); a failed call did nothing and takes 0. A
 *    time not measured is taken as 0 and counted (store->untimed).
 *  - Convolutions (forward, backward data, backward filter; the bias
 *    gradient is a reduction with no algorithm) carry the framework's
 *    algorithm, its time and the workspace it was given. That workspace is
 *    the framework's own buffer, which the step also accesses as a tensor
 *    (SN_PLAN_SCRATCH): the step's own_workspace says so, and only an
 *    algorithm needing more than it costs extra memory. Where manage mode
 *    measured the step's configuration (sn_trace_algos_get: the library's
 *    own search, once per configuration), every algorithm it timed is an
 *    option too, with the workspace it needs. The search times one run of
 *    each in isolation; the profile timed the framework's algorithm in the
 *    iteration itself, so every option's time is scaled by the ratio of
 *    the two (the framework's option then takes exactly its profiled
 *    time). Where the framework's algorithm is deterministic, options the
 *    library calls non-deterministic are left out: a run must not become
 *    irreproducible because libsn chose its algorithms.
 *  - A buffer the framework uses only as the workspace of such measured
 *    convolutions is not touched while a plan is followed: manage mode
 *    gives each of those calls the workspace of the algorithm it runs
 *    from libsn's scratch (none when it needs none), the framework's own
 *    algorithm included. The buffer then takes no memory (0 bytes), the
 *    steps name no workspace of their own (own_workspace 0), and every
 *    option's workspace is memory for the step's duration (store->supplied
 *    says which steps). So a smaller workspace than the framework's saves
 *    memory, and a larger one costs it.
 *  - Pinned tensors: cuDNN's and cuBLAS's own memory that calls name (the
 *    libraries touch it inside calls no argument describes, so manage mode
 *    keeps it resident), and whatever manage mode does not serve from its
 *    arena: managed memory, ranges the program mapped itself, host memory.
 *    Host memory also has 0 bytes: it takes no device memory.
 *  - Allocations that exist during the iteration but that none of its calls
 *    names (a buffer the framework keeps for later, memory a library takes
 *    inside a call and gives back before it returns) still hold device
 *    memory: they follow the model's tensors, with no accesses, so that a
 *    plan accounts for them (and may move the framework's ones out).
 *    cuDNN's and cuBLAS's own memory held throughout is fixed_bytes.
 *  - A step libsn could not see through may touch anything, and manage mode
 *    makes every allocation resident for it, contents included: there every
 *    tensor on the device that exists then is accessed, read and written.
 *  - Copy bandwidths: the run's own timed host<->device copies from or to
 *    pinned host memory, when it made large enough ones; else the caller's
 *    figure; else SN_PLANMODEL_DEFAULT_GBPS. Copies from pageable memory
 *    are left out: they run at half the pinned rate or less (the simulated
 *    k40 copies pageable memory at 6 GB/s, pinned at 12.2), and a plan's
 *    copies go to libsn's pinned staging memory. A copy's time includes its
 *    fixed cost, which the timeline adds again (copy_ms): a few percent
 *    slower than the link, which errs on the side of plans that stall
 *    less than predicted.
 *  - Taking memory away and giving it back (unmap_ms, map_ms): published
 *    per-mapping costs (sn_planmodel.h); the host's clock is not the
 *    device's, so libsn cannot time its own calls against the steps.
 */
#include "tracer/sn_planmodel.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

_Static_assert((int)SN_PLAN_R == (int)SN_ACC_R && (int)SN_PLAN_W == (int)SN_ACC_W &&
                   (int)SN_PLAN_KILL == (int)SN_ACC_KILL && (int)SN_PLAN_SCRATCH == (int)SN_ACC_SCRATCH,
               "the planner's access modes are the tracer's");

static int sn_pm_conv(int op)
{
    return op == SN_OP_CONV_FWD || op == SN_OP_CONV_BIAS_ACT_FWD || op == SN_OP_CONV_BWD_DATA ||
           op == SN_OP_CONV_BWD_FILTER;
}

static int sn_pm_role(int role)
{
    switch (role) {
    case SN_ROLE_WEIGHT: return SN_PLAN_WEIGHT;
    case SN_ROLE_WEIGHT_GRAD: return SN_PLAN_WEIGHT_GRAD;
    case SN_ROLE_FEATURE: return SN_PLAN_FEATURE;
    case SN_ROLE_GRADIENT: return SN_PLAN_GRADIENT;
    case SN_ROLE_WORKSPACE: return SN_PLAN_WORKSPACE;
    default: return SN_PLAN_OTHER;
    }
}

/* The fastest copy, not the mean: a copy's time runs from the event before
 * it to the one after, and whatever else happens meanwhile can only
 * stretch it, never shorten it (the host issuing other threads' work
 * between the first event and the copy, another copy on the engine or in
 * the other direction on the link). Such delays vary from run to run with
 * the threads' interleaving; the link's own rate does not. */
void sn_planmodel_measure_copies(const sn_trace *t, double *h2d_gbps, double *d2h_gbps, int *n_h2d, int *n_d2h)
{
    double best[2] = {0, 0};
    int n[2] = {0, 0};
    for (size_t i = 0; i < t->ncalls; i++) {
        const sn_trace_call *e = &t->calls[i];
        const unsigned want = SN_TC_TRANSFER | SN_TC_TIMED | SN_TC_HOST_PINNED;
        if ((e->flags & (want | SN_TC_FAILED)) != want)
            continue;
        int dir = e->op == SN_OP_MEMCPY_H2D ? 0 : e->op == SN_OP_MEMCPY_D2H ? 1 : -1;
        if (dir < 0 || e->nshapes == 0)
            continue;
        /* a copy's shape is its rows and the bytes of each (1 row for a
         * plain memcpy): the payload, not the span its pitch covers */
        const sn_shape *sh = &t->shapes[e->shape_begin];
        if (sh->nd != 2 || sh->dim[0] <= 0 || sh->dim[1] <= 0)
            continue;
        uint64_t b = (uint64_t)sh->dim[0] * (uint64_t)sh->dim[1];
        if (b < SN_PLANMODEL_MIN_COPY_BYTES || e->dur_ms <= 0)
            continue;
        /* GB/s = bytes per ns */
        double gbps = (double)b / (e->dur_ms * 1e6);
        if (gbps > best[dir])
            best[dir] = gbps;
        n[dir]++;
    }
    *h2d_gbps = best[0];
    *d2h_gbps = best[1];
    if (n_h2d)
        *n_h2d = n[0];
    if (n_d2h)
        *n_d2h = n[1];
}

/* The accesses of one tensor as the planner sees them, with an access
 * added at every opaque step inside its allocation; returns how many,
 * storing them in out unless it is NULL. */
static int sn_pm_accesses(const sn_wi_tensor *w, int nsteps, const int *opaque, int nopaque,
                          sn_plan_access *out)
{
    int lo = 0, hi = nsteps - 1;
    if (w->bounded) {
        lo = w->alloc_step > lo ? w->alloc_step : lo;
        hi = w->free_step < hi ? w->free_step : hi;
    }
    if (w->bytes == 0)
        nopaque = 0; /* host memory: nothing to make resident */
    int i = 0, j = 0, k = 0;
    while (j < nopaque && opaque[j] < lo)
        j++;
    for (;;) {
        int sa = i < w->naccess ? w->access[i].step : INT_MAX;
        int so = j < nopaque && opaque[j] <= hi ? opaque[j] : INT_MAX;
        if (sa == INT_MAX && so == INT_MAX)
            break;
        sn_plan_access a;
        if (sa <= so) {
            a.step = sa;
            a.mode = sa == so ? (uint8_t)(SN_PLAN_R | SN_PLAN_W) : w->access[i].mode;
            i++;
            j += sa == so;
        } else {
            a.step = so;
            a.mode = SN_PLAN_R | SN_PLAN_W;
            j++;
        }
        if (out)
            out[k] = a;
        k++;
    }
    return k;
}

/* An allocation of the log that no call of the iteration [lo, hi) names
 * (named[] per trace tensor) but that exists during it, apart from library
 * memory held throughout (fixed_bytes). */
static int sn_pm_unnamed(const sn_trace *t, size_t i, const char *named, uint64_t lo, uint64_t hi)
{
    const sn_trace_tensor *x = &t->tensors[i];
    if (named[i] || !sn_trace_counts_memory(x->kind) || x->alloc_call >= hi || (x->freed && x->free_call <= lo))
        return 0;
    int lib = x->owner == SN_OWNER_CUDNN || x->owner == SN_OWNER_CUBLAS;
    return !(lib && x->alloc_call <= lo && (!x->freed || x->free_call >= hi));
}

/* The options of convolution step e (its time as profiled: time) into out:
 * the measured algorithms of its configuration, scaled, or the framework's
 * alone (fw_only, or none measured: *measured 0). Returns how many; the
 * framework's is the first. */
static int sn_pm_options(const sn_trace *t, const sn_trace_call *e, double time, int fw_only, sn_plan_algo *out,
                         int *measured)
{
    int nm = 0;
    const sn_trace_algo *ma = fw_only ? NULL : sn_trace_algos_get(t, e->conf, &nm);
    *measured = ma != NULL;
    const sn_trace_algo *mine = NULL;
    for (int i = 0; ma && i < nm; i++)
        if (ma[i].algo == e->algo && isfinite(ma[i].ms) && ma[i].ms >= 0)
            mine = &ma[i];
    double scale = mine && mine->ms > 0 && time > 0 ? time / mine->ms : 1.0;
    int k = 0;
    out[k++] = (sn_plan_algo){.algo = e->algo, .ms = time, .workspace = e->workspace};
    for (int i = 0; ma && i < nm; i++) {
        const sn_trace_algo *a = &ma[i];
        if (a == mine || a->algo == e->algo || !isfinite(a->ms) || a->ms < 0 ||
            (mine && mine->deterministic && !a->deterministic))
            continue;
        out[k++] = (sn_plan_algo){.algo = a->algo, .ms = a->ms * scale, .workspace = a->workspace};
    }
    /* the framework's algorithm needs what the search said, at most what
     * it was given (its call succeeded with that) */
    if (mine && mine->workspace < e->workspace)
        out[0].workspace = mine->workspace;
    return k;
}

/* A buffer used only as the workspace of convolutions whose algorithms
 * were measured: libsn supplies their workspace itself, so the buffer is
 * never touched while a plan is followed. */
static int sn_pm_workspace_only(const sn_plan_tensor *pt, const sn_plan_step *steps, const char *measured)
{
    if (pt->pinned || pt->naccess == 0)
        return 0;
    for (int i = 0; i < pt->naccess; i++) {
        const sn_plan_access *a = &pt->access[i];
        if (!(a->mode & SN_PLAN_SCRATCH) || !steps[a->step].conv || !measured[a->step])
            return 0;
    }
    return 1;
}

void sn_planmodel_free(sn_planmodel_store *st)
{
    free(st->step);
    free(st->trace_tensor);
    free(st->algo);
    free(st->tensor);
    free(st->access);
    free(st->call);
    free(st->model_step);
    free(st->supplied);
    memset(st, 0, sizeof *st);
}

/* The plan model's steps, one per call of the iteration (c): the model's
 * step times for compute steps, the calls' own for the others, and each
 * convolution's algorithm options. */
static void sn_pm_steps(const sn_trace *t, const sn_model *m, const sn_model_calls *c, const sn_planmodel_link *link,
                        sn_planmodel_store *st)
{
    int n = c->ncalls;
    uint64_t lo = c->call_lo;
    int na = 0;
    for (int k = 0; k < n; k++) {
        uint64_t call = lo + (uint64_t)k;
        const sn_trace_call *e = &t->calls[call];
        int s = c->step[k];
        const sn_model_step *ms = &m->steps[s];
        int own = call == ms->call;
        sn_plan_step *ps = &st->step[k];
        double time = own ? ms->ms : (e->flags & SN_TC_FAILED) ? 0 : (e->flags & SN_TC_TIMED) ? e->dur_ms : -1;
        if (time < 0) {
            time = 0;
            st->untimed++;
        }
        ps->ms = time;
        ps->phase = ms->phase;
        ps->layer = own ? ms->layer : -1;
        ps->conv = own && sn_pm_conv(e->op);
        ps->framework_algo = -1;
        if (ps->conv) {
            ps->own_workspace = e->workspace;
            ps->algo = &st->algo[na];
            int measured = 0;
            int fw_only = (e->flags & SN_TC_FAILED) || (link && link->framework_only);
            ps->nalgo = sn_pm_options(t, e, time, fw_only, &st->algo[na], &measured);
            ps->framework_algo = 0;
            na += ps->nalgo;
            st->options += ps->nalgo > 1;
            st->supplied[k] = (char)measured;
        }
        st->call[k] = call;
        st->model_step[k] = s;
    }
}

/* Workspaces libsn supplies: the framework's buffer takes no memory
 * (it is not touched), and each of its convolutions takes its
 * algorithm's whole workspace for its duration. A step whose buffer
 * also serves anything else keeps it (supplied stays 0 there). */
static void sn_pm_supplied(sn_planmodel_store *st, int nt, int n)
{
    char *measured = st->supplied; /* so far: the steps with measured algorithms */
    for (int i = 0; i < nt; i++) {
        sn_plan_tensor *pt = &st->tensor[i];
        if (!sn_pm_workspace_only(pt, st->step, measured))
            continue;
        pt->bytes = 0;
        st->virtual_ws++;
        for (int j = 0; j < pt->naccess; j++)
            st->step[pt->access[j].step].own_workspace = 0;
    }
    /* now: the measured steps with no buffer of their own (none given, or
     * one just found to be libsn's to replace) */
    for (int k = 0; k < n; k++)
        st->supplied[k] = measured[k] && st->step[k].own_workspace == 0;
}

/* The link's copy rates (measured from the log's copies, else given,
 * else the default) and the costs of a copy and of a mapping. */
static void sn_pm_rates(const sn_trace *t, const sn_planmodel_link *link, sn_planmodel_store *st, sn_plan_model *out)
{
    double h2d, d2h;
    sn_planmodel_measure_copies(t, &h2d, &d2h, &st->h2d_copies, &st->d2h_copies);
    st->h2d_source = st->h2d_copies              ? SN_PLANMODEL_MEASURED
                     : link && link->h2d_gbps > 0 ? SN_PLANMODEL_GIVEN
                                                  : SN_PLANMODEL_DEFAULT;
    st->d2h_source = st->d2h_copies              ? SN_PLANMODEL_MEASURED
                     : link && link->d2h_gbps > 0 ? SN_PLANMODEL_GIVEN
                                                  : SN_PLANMODEL_DEFAULT;
    out->h2d_gbps = st->h2d_source == SN_PLANMODEL_MEASURED ? h2d
                    : st->h2d_source == SN_PLANMODEL_GIVEN  ? link->h2d_gbps
                                                            : SN_PLANMODEL_DEFAULT_GBPS;
    out->d2h_gbps = st->d2h_source == SN_PLANMODEL_MEASURED ? d2h
                    : st->d2h_source == SN_PLANMODEL_GIVEN  ? link->d2h_gbps
                                                            : SN_PLANMODEL_DEFAULT_GBPS;
    out->duplex = SN_PLANMODEL_DUPLEX;
    out->copy_ms = SN_PLANMODEL_COPY_MS;
    out->unmap_ms = SN_PLANMODEL_UNMAP_MS;
    out->map_ms = SN_PLANMODEL_MAP_MS;
}

int sn_planmodel_build(const sn_trace *t, const sn_model *m, const sn_planmodel_link *link, sn_plan_model *out,
                       sn_planmodel_store *st)
{
    memset(out, 0, sizeof *out);
    memset(st, 0, sizeof *st);
    sn_model_calls c;
    if (sn_model_calls_build(t, m, &c) != 0)
        return -1;
    int n = c.ncalls, P = (int)m->period, nm = m->ntensors;
    uint64_t lo = c.call_lo, hi = c.call_lo + (uint64_t)n;
    int *opaque = malloc((size_t)n * sizeof *opaque);
    char *named = calloc(t->ntensors ? t->ntensors : 1, 1);
    sn_wi_tensor *extra = NULL;
    uint32_t *extra_id = NULL;
    if (!opaque || !named)
        goto fail;

    /* the allocations no call names, as what-if tensors with no accesses */
    for (int i = 0; i < nm; i++)
        named[m->tensors[i].id] = 1;
    int nx = 0;
    for (size_t i = 0; i < t->recorded_tensors; i++)
        nx += sn_pm_unnamed(t, i, named, lo, hi);
    extra = calloc((size_t)nx + 1, sizeof *extra);
    extra_id = malloc(((size_t)nx + 1) * sizeof *extra_id);
    if (!extra || !extra_id)
        goto fail;
    for (size_t i = 0, k = 0; i < t->recorded_tensors; i++) {
        if (!sn_pm_unnamed(t, i, named, lo, hi))
            continue;
        const sn_trace_tensor *x = &t->tensors[i];
        int in_iter = x->alloc_call >= lo, freed_in = x->freed && x->free_call < hi;
        extra[k].bytes = x->bytes;
        extra[k].bounded = in_iter || freed_in;
        extra[k].alloc_step = in_iter ? (int)(x->alloc_call - lo) : 0;
        extra[k].free_step = freed_in ? (int)(x->free_call - 1 - lo) : n - 1;
        extra_id[k++] = (uint32_t)i;
    }
    int nt = nm + nx;

    int nconv = 0, nopaque = 0;
    for (int k = 0; k < n; k++) {
        uint64_t call = lo + (uint64_t)k;
        const sn_trace_call *e = &t->calls[call];
        if ((e->flags & (SN_TC_OPAQUE | SN_TC_FAILED)) == SN_TC_OPAQUE)
            opaque[nopaque++] = k;
        if (call == m->steps[c.step[k]].call && sn_pm_conv(e->op)) {
            int measured = 0;
            sn_trace_algos_get(t, e->conf, &measured);
            nconv += 1 + measured;
        }
    }
    size_t total = 0;
    for (int i = 0; i < nt; i++)
        total += (size_t)sn_pm_accesses(i < nm ? &c.tensor[i] : &extra[i - nm], n, opaque, nopaque, NULL);
    st->step = calloc((size_t)n, sizeof *st->step);
    st->algo = calloc((size_t)nconv + 1, sizeof *st->algo);
    st->tensor = calloc((size_t)nt + 1, sizeof *st->tensor);
    st->trace_tensor = malloc(((size_t)nt + 1) * sizeof *st->trace_tensor);
    st->access = malloc((total + 1) * sizeof *st->access);
    st->call = malloc((size_t)n * sizeof *st->call);
    st->model_step = malloc((size_t)n * sizeof *st->model_step);
    if (!st->step || !st->algo || !st->tensor || !st->trace_tensor || !st->access || !st->call || !st->model_step)
        goto fail;
    st->opaque = nopaque;
    st->unnamed = nx;
    st->supplied = calloc((size_t)n, 1);
    if (!st->supplied)
        goto fail;

    sn_pm_steps(t, m, &c, link, st);

    size_t off = 0;
    for (int i = 0; i < nt; i++) {
        const sn_wi_tensor *w = i < nm ? &c.tensor[i] : &extra[i - nm];
        uint32_t id = i < nm ? m->tensors[i].id : extra_id[i - nm];
        const sn_trace_tensor *x = &t->tensors[id];
        int lib = x->owner == SN_OWNER_CUDNN || x->owner == SN_OWNER_CUBLAS;
        sn_plan_tensor *pt = &st->tensor[i];
        st->trace_tensor[i] = id;
        pt->bytes = w->bytes;
        pt->role = i < nm ? sn_pm_role(m->tensors[i].role) : lib ? SN_PLAN_WORKSPACE : SN_PLAN_OTHER;
        pt->conv_output = i < nm && m->tensors[i].conv_output;
        pt->pinned = x->kind != SN_KIND_DEVICE || lib;
        st->pinned += pt->pinned;
        pt->bounded = w->bounded;
        pt->alloc_step = w->bounded ? w->alloc_step : 0;
        pt->free_step = w->bounded ? w->free_step : n - 1;
        pt->naccess = sn_pm_accesses(w, n, opaque, nopaque, st->access + off);
        pt->access = st->access + off;
        off += (size_t)pt->naccess;
    }

    sn_pm_supplied(st, nt, n);
    sn_pm_rates(t, link, st, out);
    out->nsteps = n;
    out->step = st->step;
    out->ntensors = nt;
    out->tensor = st->tensor;
    out->backward_start = m->backward_start < P ? c.first[m->backward_start] : n;
    out->fixed_bytes = c.fixed_bytes;
    free(extra);
    free(extra_id);
    free(opaque);
    free(named);
    sn_model_calls_free(&c);
    return 0;
fail:
    free(extra);
    free(extra_id);
    free(opaque);
    free(named);
    sn_model_calls_free(&c);
    sn_planmodel_free(st);
    memset(out, 0, sizeof *out);
    return -1;
}
