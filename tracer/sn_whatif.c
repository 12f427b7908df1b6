/*
 * sn_whatif.c — per-step memory under the what-if strategies (see
 * sn_whatif.h). Memory is accumulated as +bytes/-bytes events over step
 * positions, then prefix-summed.
 */
#include "tracer/sn_whatif.h"

#include <stdlib.h>
#include <string.h>

#include "tracer/sn_trace.h"

int sn_wi_carried(const sn_wi_tensor *t)
{
    if (t->naccess == 0)
        return 0;
    /* Allocated inside the iteration: whatever it holds was written there. */
    if (t->bounded && t->alloc_step > 0)
        return 0;
    /* Its first use needs an older value: read, or written only in part. */
    uint8_t m = t->access[0].mode;
    if (m & SN_ACC_SCRATCH)
        return 0;
    return (m & SN_ACC_R) || !(m & SN_ACC_KILL);
}

/* The steps the allocation exists at, within [0, nsteps). */
static void sn_alloc_range(const sn_wi_tensor *t, int nsteps, int *lo, int *hi)
{
    *lo = 0;
    *hi = nsteps - 1;
    if (t->bounded) {
        if (t->alloc_step > *lo)
            *lo = t->alloc_step;
        if (t->free_step < *hi)
            *hi = t->free_step;
    }
}

/* Adds bytes to delta over [from, to] (inclusive step positions). */
static void sn_span(int64_t *delta, int nsteps, int from, int to, uint64_t bytes)
{
    if (from < 0)
        from = 0;
    if (to >= nsteps)
        to = nsteps - 1;
    if (from > to)
        return;
    delta[from] += (int64_t)bytes;
    delta[to + 1] -= (int64_t)bytes;
}

/* Live intervals of one tensor: from each write that starts a value to the
 * last read of that value (or the write itself if never read), within the
 * allocation's lifetime. Calls emit for each interval. */
typedef void (*sn_interval_fn)(int from, int to, void *ctx);

typedef struct sn_clip {
    sn_interval_fn emit;
    void *ctx;
    int lo, hi;
} sn_clip;

static void sn_emit_clipped(const sn_clip *c, int from, int to)
{
    if (from < c->lo)
        from = c->lo;
    if (to > c->hi)
        to = c->hi;
    if (from <= to)
        c->emit(from, to, c->ctx);
}

static void sn_intervals(const sn_wi_tensor *t, int nsteps, sn_interval_fn emit, void *ctx)
{
    sn_clip c = {emit, ctx, 0, nsteps - 1};
    sn_alloc_range(t, nsteps, &c.lo, &c.hi);
    if (sn_wi_carried(t)) {
        sn_emit_clipped(&c, 0, nsteps - 1);
        return;
    }
    int open = -1, last = -1;
    for (int i = 0; i < t->naccess; i++) {
        const sn_wi_access *a = &t->access[i];
        if (a->mode & SN_ACC_SCRATCH) {
            /* a workspace holds nothing between uses */
            if (open >= 0)
                sn_emit_clipped(&c, open, last);
            sn_emit_clipped(&c, a->step, a->step);
            open = -1;
        } else if ((a->mode & SN_ACC_KILL) && !(a->mode & SN_ACC_R)) {
            if (open >= 0)
                sn_emit_clipped(&c, open, last);
            open = last = a->step;
        } else {
            if (open < 0)
                open = a->step;
            last = a->step;
        }
    }
    if (open >= 0)
        sn_emit_clipped(&c, open, last);
}

typedef struct sn_span_ctx {
    int first, last;
} sn_span_ctx;

static void sn_note_span(int from, int to, void *p)
{
    sn_span_ctx *s = p;
    if (s->first < 0 || from < s->first)
        s->first = from;
    if (to > s->last)
        s->last = to;
}

void sn_wi_live_span(const sn_wi_tensor *t, int nsteps, int *first, int *last)
{
    sn_span_ctx s = {-1, -1};
    if (nsteps > 0)
        sn_intervals(t, nsteps, sn_note_span, &s);
    *first = s.first;
    *last = s.last;
}

typedef struct sn_emit_ctx {
    int64_t *delta;
    int nsteps;
    uint64_t bytes;
    const sn_wi_tensor *t;
    int backward_start;
} sn_emit_ctx;

static void sn_emit_plain(int from, int to, void *p)
{
    sn_emit_ctx *c = p;
    sn_span(c->delta, c->nsteps, from, to, c->bytes);
}

/* The offloaded variant of one interval: resident through the forward
 * uses, gone until one step before the first backward use. */
static void sn_emit_offloaded(int from, int to, void *p)
{
    sn_emit_ctx *c = p;
    int last_fwd = -1, first_bwd = -1;
    for (int i = 0; i < c->t->naccess; i++) {
        int s = c->t->access[i].step;
        if (s < from || s > to)
            continue;
        if (s < c->backward_start)
            last_fwd = s;
        else if (first_bwd < 0)
            first_bwd = s;
    }
    if (last_fwd < 0 || first_bwd < 0 || first_bwd - 1 <= last_fwd + 1) {
        sn_span(c->delta, c->nsteps, from, to, c->bytes);
        return;
    }
    sn_span(c->delta, c->nsteps, from, last_fwd, c->bytes);
    sn_span(c->delta, c->nsteps, first_bwd - 1, to, c->bytes);
}

static uint64_t sn_sweep(const int64_t *delta, int nsteps, uint64_t fixed, uint64_t *out)
{
    int64_t cur = 0;
    uint64_t peak = 0;
    for (int s = 0; s < nsteps; s++) {
        cur += delta[s];
        uint64_t v = (uint64_t)(cur < 0 ? 0 : cur) + fixed;
        if (out)
            out[s] = v;
        if (v > peak)
            peak = v;
    }
    return peak;
}

/* Intervals of one tensor recorded for the SuperNeurons pass. */
typedef struct sn_live_ctx {
    unsigned char *live;   /* per step */
} sn_live_ctx;

static void sn_mark_live(int from, int to, void *p)
{
    sn_live_ctx *c = p;
    for (int s = from; s <= to; s++)
        c->live[s] = 1;
}

/* The largest working set of one call: the bytes of the distinct tensors
 * touched at one position. */
static int sn_call_working_sets(const sn_wi_input *in, sn_wi_result *res)
{
    int n = in->nsteps;
    uint64_t *ws = calloc((size_t)n, sizeof *ws);
    if (!ws)
        return -1;
    for (int i = 0; i < in->ntensors; i++) {
        const sn_wi_tensor *t = &in->tensor[i];
        int prev = -1;
        for (int j = 0; j < t->naccess; j++) {
            int s = t->access[j].step;
            /* accesses are in position order: one count per position */
            if (s >= 0 && s < n && s != prev)
                ws[s] += t->bytes;
            prev = s;
        }
    }
    for (int s = 0; s < n; s++) {
        uint64_t lib = in->lib_bytes ? in->lib_bytes[s] : 0;
        if (ws[s] + lib > res->max_working_set || res->max_working_set_step < 0) {
            res->max_working_set = ws[s] + lib;
            res->max_working_set_lib = lib;
            res->max_working_set_step = s;
        }
    }
    free(ws);
    return 0;
}

int sn_whatif(const sn_wi_input *in, sn_wi_result *res, uint64_t *mem_liveness, uint64_t *mem_conv,
              uint64_t *mem_all)
{
    memset(res, 0, sizeof *res);
    res->max_working_set_step = -1;
    res->superneurons_step = -1;
    if (!in || in->nsteps <= 0 || in->ntensors < 0)
        return -1;
    int n = in->nsteps;
    int64_t *delta = calloc((size_t)n + 1, sizeof *delta);
    if (!delta)
        return -1;
    /* Three passes: liveness, conv outputs offloaded, all feature maps. */
    uint64_t *outs[3] = {mem_liveness, mem_conv, mem_all};
    uint64_t peaks[3];
    for (int pass = 0; pass < 3; pass++) {
        memset(delta, 0, ((size_t)n + 1) * sizeof *delta);
        for (int i = 0; i < in->ntensors; i++) {
            const sn_wi_tensor *t = &in->tensor[i];
            sn_emit_ctx c = {delta, n, t->bytes, t, in->backward_start};
            int moves = (pass == 1 && t->offload == SN_WI_CONV_OUTPUT) ||
                        (pass == 2 && t->offload != SN_WI_KEEP);
            sn_intervals(t, n, moves ? sn_emit_offloaded : sn_emit_plain, &c);
        }
        peaks[pass] = sn_sweep(delta, n, in->fixed_bytes, outs[pass]);
    }
    res->peak_liveness = peaks[0];
    res->peak_conv = peaks[1];
    res->peak_all = peaks[2];

    /* SuperNeurons: per step, the live tensors of the step's group and the
     * carried ones. A group's tensors are found by marking, per group, the
     * tensors any of its steps touch. */
    int ngroups = 0;
    for (int s = 0; s < n; s++)
        if (in->group && in->group[s] + 1 > ngroups)
            ngroups = in->group[s] + 1;
    unsigned char *live = malloc((size_t)n);
    uint64_t *sn = calloc((size_t)n, sizeof *sn);
    int *gmark = malloc((size_t)(ngroups ? ngroups : 1) * sizeof *gmark);
    if (!live || !sn || !gmark) {
        free(delta);
        free(live);
        free(sn);
        free(gmark);
        return -1;
    }
    for (int i = 0; i < in->ntensors; i++) {
        const sn_wi_tensor *t = &in->tensor[i];
        int carried = sn_wi_carried(t);
        if (carried)
            res->carried_bytes += t->bytes;
        memset(live, 0, (size_t)n);
        sn_live_ctx lc = {live};
        sn_intervals(t, n, sn_mark_live, &lc);
        for (int g = 0; g < ngroups; g++)
            gmark[g] = 0;
        for (int k = 0; k < t->naccess; k++) {
            int s = t->access[k].step;
            if (in->group && s >= 0 && s < n && in->group[s] >= 0)
                gmark[in->group[s]] = 1;
        }
        for (int s = 0; s < n; s++)
            if (live[s] && (carried || (in->group && in->group[s] >= 0 && gmark[in->group[s]])))
                sn[s] += t->bytes;
    }
    for (int s = 0; s < n; s++)
        if (sn[s] + in->fixed_bytes > res->peak_superneurons) {
            res->peak_superneurons = sn[s] + in->fixed_bytes;
            res->superneurons_step = s;
        }
    free(delta);
    free(live);
    free(sn);
    free(gmark);

    if (sn_call_working_sets(in, res) != 0)
        return -1;
    /* an allocation larger than the budget is refused whether or not a call
     * of the iteration uses it (a handle's workspace a framework never
     * needs, because its calls on the handle are all element-wise) */
    res->largest_alloc = in->lib_largest;
    for (int i = 0; i < in->ntensors; i++)
        if (in->tensor[i].bytes > res->largest_alloc)
            res->largest_alloc = in->tensor[i].bytes;
    uint64_t keyed = in->keyed_bytes < in->fixed_bytes ? in->keyed_bytes : in->fixed_bytes;
    uint64_t need = res->max_working_set > res->largest_alloc ? res->max_working_set : res->largest_alloc;
    res->lower_bound = need + in->fixed_bytes - keyed;
    return 0;
}
