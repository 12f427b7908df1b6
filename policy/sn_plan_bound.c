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
 * at least the larger of the two. Everything the bound leaves out (copies
 * out, mapping, waits) only adds, so a plan's predicted time is never below
 * it (tests/test_sn_policies.c checks this on every policy's plans).
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
    double best = -1.0, least_ms = st->ms;
    uint64_t least = UINT64_MAX;
    for (int a = 0; a < st->nalgo; a++) {
        uint64_t extra = sn_plan_extra_workspace(m, s, &st->algo[a]);
        if (need <= budget && extra <= budget - need && (best < 0 || st->algo[a].ms < best))
            best = st->algo[a].ms;
        if (extra < least || (extra == least && st->algo[a].ms < least_ms)) {
            least = extra;
            least_ms = st->algo[a].ms;
        }
    }
    if (best < 0)
        *fits = 0;
    return best >= 0 ? best : least_ms;
}

static double step_unlimited_ms(const sn_plan_step *st)
{
    double best = st->ms;
    for (int a = 0; a < st->nalgo; a++)
        if (a == 0 || st->algo[a].ms < best)
            best = st->algo[a].ms;
    return best;
}

int sn_plan_bound_of(const sn_plan_model *m, uint64_t budget, sn_plan_bound *out)
{
    *out = (sn_plan_bound){.offdevice_step = -1, .feasible = 1};
    if (sn_plan_check(m, NULL) != 0)
        return -1;
    int n = m->nsteps;
    /* own[s]: what step s needs resident; kept: contents needed later
     * that step s does not touch (they may wait on the host), as
     * differences from the step before (kept at s: the sum up to s) */
    uint64_t *own = calloc((size_t)n, sizeof *own);
    int64_t *kept = calloc((size_t)n + 1, sizeof *kept);
    if (!own || !kept) {
        free(own);
        free(kept);
        return -1;
    }
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
        int last = T->naccess - 1;
        for (int i = 0; i <= last; i++) {
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
        }
    }
    int64_t kept_now = 0;
    for (int s = 0; s < n; s++) {
        kept_now += kept[s];
        uint64_t need = always + own[s];
        int fits;
        out->compute_ms += step_bound_ms(m, s, need, budget, &fits);
        out->unlimited_ms += step_unlimited_ms(&m->step[s]);
        if (!fits)
            out->feasible = 0;
        uint64_t held = need + (uint64_t)kept_now;
        uint64_t off = held > budget ? held - budget : 0;
        /* (a step whose own memory does not fit leaves nothing to say
         * about the rest) */
        if (need <= budget && off > out->offdevice_bytes) {
            out->offdevice_bytes = off;
            out->offdevice_step = s;
        }
    }
    free(own);
    free(kept);
    if (out->offdevice_bytes && m->h2d_gbps > 0)
        out->transfer_ms = (double)out->offdevice_bytes / (m->h2d_gbps * 1e6);
    out->ms = out->compute_ms > out->transfer_ms ? out->compute_ms : out->transfer_ms;
    return 0;
}
