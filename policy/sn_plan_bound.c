/*
 * sn_plan_bound.c — how fast any plan could run an iteration under a budget:
 * a lower bound from the model alone, so that a policy's result can be read
 * against what is possible rather than against unlimited memory.
 *
 * Two things no plan escapes. Each step needs its own memory resident at
 * once (what it touches, the tensors that may never leave, the libraries'
 * memory), and a convolution's workspace beside it: its fastest algorithm
 * whose workspace fits in what is left of the budget is the fastest it can
 * run (compute_ms, the sum over steps). And the contents the iteration still
 * needs at a step (read later without being overwritten first) that cannot
 * all stay on the device with that step's own memory must be on the host
 * then, and come back before they are read: at least that many bytes are
 * copied in per iteration, at the measured host-to-device bandwidth
 * (transfer_ms). Copies overlap computation at best, so the iteration takes
 * at least the larger of the two.
 *
 * And when: what is off the device at step s cannot start coming back
 * before s has ended (its memory is taken when a copy is issued), and the
 * part of it read by step e (at best the contents read last are the ones
 * away) must be in before e starts; what was written at step w or later
 * and is away at s must have left between the two (at best the contents
 * written first are the ones away; contents never written on the device
 * have a current host copy). Where the steps between take less time than
 * those copies, the device waits for the difference (stall_ms, over the
 * window that makes it largest). Everything the bound leaves out (the two
 * directions sharing the link, mapping, waits for memory) only adds, so a
 * plan's predicted time is never below it (tests/test_sn_policies.c
 * checks this on every policy's plans).
 */
#include <stdlib.h>

#include "policy/sn_plan.h"
#include "policy/sn_plan_int.h"

/* The fastest way to run step s with need bytes of its own resident under
 * budget: its fastest algorithm whose extra workspace fits (or, when none
 * does, the one needing the least: the model cannot run under this budget
 * at all, and the bound says so through feasible). */
static double step_bound_ms(const sn_plan_model *m, int s, uint64_t need, uint64_t budget, int *fits)
{
    const sn_plan_step *st = &m->step[s];
    *fits = need <= budget;
    if (st->nalgo <= 0)
        return st->ms;
    double best = -1.0;
    for (int a = 0; a < st->nalgo; a++) {
        uint64_t extra = sn_plan_extra_workspace(m, s, &st->algo[a]);
        if (need <= budget && extra <= budget - need && (best < 0 || st->algo[a].ms < best))
            best = st->algo[a].ms;
    }
    if (best < 0)
        *fits = 0;
    return best >= 0 ? best : st->algo[sn_plan_algo_minws(m, s)].ms;
}

/* Step s with memory unlimited: its fastest algorithm. */
static double step_unlimited_ms(const sn_plan_model *m, int s)
{
    int a = sn_plan_algo_fastest(m, s);
    return a >= 0 ? m->step[s].algo[a].ms : m->step[s].ms;
}

/* A stretch of a tensor's contents needed off its own steps: after its
 * access at step from, up to its read at step to (to <= from: in the next
 * iteration); written last at step written (-1: never on the device, so a
 * copy on the host is always current). */
typedef struct gap {
    int from, to, written;
    uint64_t bytes;
} gap;

/* Steps whose windows are examined (those with the most off the device):
 * each costs a pass over the gaps and the steps, and any subset keeps the
 * bound valid. */
enum { SN_BOUND_WINDOW_STEPS = 96 };

static int cmp_off_desc(const void *a, const void *b, void *arg)
{
    const uint64_t *off = arg;
    uint64_t x = off[*(const int *)a], y = off[*(const int *)b];
    return x < y ? 1 : x > y ? -1 : 0;
}

/* What every step's window is judged from: the model, the gaps, each
 * step's compute time, and per distance from the step the bytes coming in
 * (in_by) and going out (out_by), scratch of stall_at. */
typedef struct windows {
    const sn_plan_model *m;
    const gap *g;
    int ng;
    const double *comp;
    uint64_t *in_by, *out_by;
} windows;

/* One direction of copies around a step: the bytes by distance, the
 * link's rate, and whether the distance counts ahead (copies in) or back
 * (copies out). */
typedef struct copies {
    const uint64_t *by;
    double bytes_per_ms;
    int ahead;
} copies;

/* The stall forced around step s, whose off-device contents are off[s],
 * kept the contents it may choose them from: by = bytes read d steps
 * after s (the copies in: what is read by step s+d and away at s comes
 * back while steps s+1 .. s+d-1 run, and the contents read last may stay
 * away longest) or written d steps before it (the copies out: what was
 * written at step s-d or later and is away at s leaves while steps s-d+1
 * .. s-1 run, and the contents written first may be the ones away; clean
 * ones, by[0], need no copy). The worst window's stall, its other end in
 * *other. */
static double window_stall(const windows *W, int s, uint64_t off, uint64_t kept, const copies *dir, int *other)
{
    const sn_plan_model *m = W->m;
    const double *comp = W->comp;
    const uint64_t *by = dir->by;
    double bytes_per_ms = dir->bytes_per_ms;
    int ahead = dir->ahead;
    int n = m->nsteps;
    double between = 0, worst = 0;
    uint64_t counted = 0;
    for (int d = 1; d < n; d++) {
        int e = ahead ? (s + d) % n : (s - d + n) % n;
        counted += by[d];
        uint64_t may_stay = kept - counted;
        uint64_t must_move = off > may_stay ? off - may_stay : 0;
        double stall = (double)must_move / bytes_per_ms - between;
        if (stall > worst) {
            worst = stall;
            *other = e;
        }
        if (counted + by[0] == kept)
            break; /* from here on only more compute in between */
        between += comp[e];
    }
    return worst;
}

/* The stall no plan avoids around step s (the worse of the copies in and
 * the copies out), its window in *from, *to. */
static double stall_at(const windows *W, int s, uint64_t off, int *from, int *to)
{
    const sn_plan_model *m = W->m;
    const gap *g = W->g;
    int ng = W->ng;
    uint64_t *in_by = W->in_by, *out_by = W->out_by;
    int n = m->nsteps;
    uint64_t kept = 0;
    for (int d = 0; d < n; d++)
        in_by[d] = out_by[d] = 0;
    for (int i = 0; i < ng; i++) {
        int a = g[i].from, b = g[i].to;
        int covers = a < b ? (s > a && s < b) : (s > a || s < b);
        if (!covers)
            continue;
        in_by[(b - s + n) % n] += g[i].bytes;
        out_by[g[i].written < 0 ? 0 : (s - g[i].written + n) % n] += g[i].bytes;
        kept += g[i].bytes;
    }
    int e_in = -1, w_out = -1;
    double in = m->h2d_gbps > 0 ? window_stall(W, s, off, kept, &(copies){in_by, m->h2d_gbps * 1e6, 1}, &e_in) : 0;
    double out = m->d2h_gbps > 0 ? window_stall(W, s, off, kept, &(copies){out_by, m->d2h_gbps * 1e6, 0}, &w_out) : 0;
    if (in >= out) {
        *from = s;
        *to = e_in;
        return in;
    }
    *from = w_out;
    *to = s;
    return out;
}

int sn_plan_bound_of(const sn_plan_model *m, uint64_t budget, sn_plan_bound *out)
{
    *out = (sn_plan_bound){.offdevice_step = -1, .window_from = -1, .window_to = -1, .feasible = 1};
    if (sn_plan_check(m, NULL) != 0)
        return -1;
    int n = m->nsteps;
    /* own[s]: what step s needs resident; kept: contents needed later
     * that step s does not touch (they may wait on the host), as
     * differences from the step before (kept at s: the sum up to s) */
    uint64_t *own = calloc((size_t)n, sizeof *own), *off = calloc((size_t)n, sizeof *off);
    uint64_t *in_by = calloc((size_t)n, sizeof *in_by), *out_by = calloc((size_t)n, sizeof *out_by);
    int64_t *kept = calloc((size_t)n + 1, sizeof *kept);
    double *comp = calloc((size_t)n, sizeof *comp);
    int *order = calloc((size_t)n, sizeof *order);
    gap *g = NULL;
    int ng = 0, capg = 0, rc = -1;
    if (!own || !off || !in_by || !out_by || !kept || !comp || !order)
        goto done;
    uint64_t always = m->fixed_bytes;
    for (int t = 0; t < m->ntensors; t++) {
        const sn_plan_tensor *T = &m->tensor[t];
        if (T->pinned) {
            always += T->bytes;
            continue;
        }
        for (int i = 0; i < T->naccess; i++)
            if (i == 0 || T->access[i].step != T->access[i - 1].step)
                own[T->access[i].step] += T->bytes;
        /* between two accesses (and, for a tensor of the whole iteration,
         * from its last to its first of the next iteration) its contents
         * are needed when the later access reads them */
        int last = T->naccess - 1, written = -1;
        /* the write before the first access: the iteration before's last */
        for (int i = 0; i <= last && !T->bounded; i++)
            if (T->access[i].mode & SN_PLAN_W)
                written = T->access[i].step;
        for (int i = 0; i <= last; i++) {
            if (T->access[i].mode & SN_PLAN_W)
                written = T->access[i].step;
            int wraps = i == last;
            if (wraps && T->bounded)
                break;
            const sn_plan_access *next = &T->access[wraps ? 0 : i + 1];
            int from = T->access[i].step + 1, to = next->step;
            if (sn_plan_mode_fresh(next->mode) || (!wraps && to < from))
                continue;
            int64_t b = (int64_t)T->bytes;
            if (to >= from) {
                kept[from] += b;
                kept[to] -= b;
            } else {
                kept[from] += b;
                kept[n] -= b;
                kept[0] += b;
                kept[to] -= b;
            }
            if (to == from)
                continue; /* read at the very next step: never away */
            if (ng == capg) {
                int cap = capg ? 2 * capg : 256;
                gap *ng2 = realloc(g, (size_t)cap * sizeof *g);
                if (!ng2)
                    goto done;
                g = ng2;
                capg = cap;
            }
            g[ng++] = (gap){from - 1, to, written, T->bytes};
        }
    }
    int64_t kept_now = 0;
    for (int s = 0; s < n; s++) {
        kept_now += kept[s];
        uint64_t need = always + own[s];
        int fits;
        comp[s] = step_bound_ms(m, s, need, budget, &fits);
        out->compute_ms += comp[s];
        out->unlimited_ms += step_unlimited_ms(m, s);
        if (!fits)
            out->feasible = 0;
        uint64_t held = need + (uint64_t)kept_now;
        /* (a step whose own memory does not fit leaves nothing to say
         * about the rest) */
        off[s] = need <= budget && held > budget ? held - budget : 0;
        if (off[s] > out->offdevice_bytes) {
            out->offdevice_bytes = off[s];
            out->offdevice_step = s;
        }
        order[s] = s;
    }
    if (out->offdevice_bytes && m->h2d_gbps > 0)
        out->transfer_ms = (double)out->offdevice_bytes / (m->h2d_gbps * 1e6);
    if (out->offdevice_bytes) {
        qsort_r(order, (size_t)n, sizeof *order, cmp_off_desc, off);
        const windows W = {m, g, ng, comp, in_by, out_by};
        for (int k = 0; k < n && k < SN_BOUND_WINDOW_STEPS && off[order[k]]; k++) {
            int s = order[k], from = -1, to = -1;
            double stall = stall_at(&W, s, off[s], &from, &to);
            if (stall > out->stall_ms) {
                out->stall_ms = stall;
                out->window_from = from;
                out->window_to = to;
            }
        }
    }
    double timed = out->compute_ms + out->stall_ms;
    out->ms = timed > out->transfer_ms ? timed : out->transfer_ms;
    rc = 0;
done:
    free(own);
    free(off);
    free(in_by);
    free(out_by);
    free(kept);
    free(comp);
    free(order);
    free(g);
    return rc;
}
