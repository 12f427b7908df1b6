/*
 * sn_report.c — the trace-mode report, as text (for people) and as JSON
 * (for scripts). Both carry the same facts: the iteration, phases, the
 * layer table with its graph, the tensor table, memory per step and the
 * what-if peaks with the smallest budget libsn expects to need, and the
 * plan model a policy would be given (sn_planmodel.h). Totals
 * (calls, allocations, iterations, peak) cover the whole run; the tables
 * come from the recorded log, which ends with the profile, and say so.
 */
#include "tracer/sn_output.h"
#include "tracer/sn_planmodel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double mib(uint64_t b)
{
    return (double)b / (1024.0 * 1024.0);
}

static void shape_text(char *buf, size_t cap, const sn_trace *t, const sn_trace_call *e, int which)
{
    buf[0] = 0;
    if (!e->nshapes)
        return;
    int i = which < 0 ? e->nshapes - 1 : which;
    if (i >= e->nshapes)
        i = e->nshapes - 1;
    const sn_shape *s = &t->shapes[e->shape_begin + i];
    size_t off = 0;
    for (int d = 0; d < s->nd && off + 12 < cap; d++)
        off += (size_t)snprintf(buf + off, cap - off, "%s%d", d ? "x" : "", s->dim[d]);
}

/* Input and output shape of a layer's defining call. */
static void layer_shapes(const sn_trace *t, const sn_model_layer *L, char *in, char *out, size_t cap)
{
    const sn_trace_call *e = &t->calls[L->main_call];
    in[0] = out[0] = 0;
    if (e->op == SN_OP_MEMCPY_H2D || e->op == SN_OP_MEMCPY_D2D) {
        snprintf(out, cap, "%.0f KiB", (double)(e->nacc ? t->tensors[t->acc[e->acc_begin].tensor].bytes : 0) / 1024.0);
        return;
    }
    if (e->op == SN_OP_GEMM || e->op == SN_OP_GEMV) {
        const sn_shape *s = &t->shapes[e->shape_begin];
        if (e->nshapes && s->nd == 3) {
            snprintf(in, cap, "k=%d n=%d", s->dim[2], s->dim[1]);
            snprintf(out, cap, "m=%d n=%d", s->dim[0], s->dim[1]);
        }
        return;
    }
    shape_text(in, cap, t, e, 0);
    shape_text(out, cap, t, e, -1);
}

/* A budget in the largest unit that states it exactly. */
static void budget_text(char *buf, size_t cap, uint64_t b)
{
    if (b % (1u << 20) == 0)
        snprintf(buf, cap, "%lluM", (unsigned long long)(b >> 20));
    else if (b % 1024 == 0)
        snprintf(buf, cap, "%lluK", (unsigned long long)(b >> 10));
    else
        snprintf(buf, cap, "%llu", (unsigned long long)b);
}

static const char *iter_note(const sn_model *m)
{
    return m->first_differs ? " (the first differs)" : "";
}

static void layer_counts(const sn_model *m, char *buf, size_t cap)
{
    size_t off = 0;
    buf[0] = 0;
    char done[512][16];
    int nd = 0;
    for (int l = 0; l < m->nlayers && off + 32 < cap; l++) {
        int seen = 0;
        for (int k = 0; k < nd && !seen; k++)
            seen = strcmp(done[k], m->layers[l].type) == 0;
        if (seen || nd == 512)
            continue;
        snprintf(done[nd++], 16, "%s", m->layers[l].type);
        int count = 0;
        for (int k = l; k < m->nlayers; k++)
            count += strcmp(m->layers[k].type, m->layers[l].type) == 0;
        off += (size_t)snprintf(buf + off, cap - off, "%s%s %d", off ? ", " : "", m->layers[l].type, count);
    }
}

/* Manage mode's plan: how it was made and followed, its bound, the
 * candidates measured, its moves and algorithms, and the latest
 * iterations as measured. */
static void text_manage_plan(FILE *f, const sn_manage_stats *s)
{
    if (s->plan_host_ms > 0 || s->plan_unfinished)
        fprintf(f, "  planning           %.0f ms of host time, %.0f ms of it on the framework's threads (%s)%s\n",
                s->plan_host_ms, s->plan_blocked_ms,
                s->plan_waited ? "SN_PLAN_WAIT=1: they waited" : "on libsn's planning thread",
                s->plan_unfinished ? "; a plan was still being made at exit" : "");
    if (!s->has_plan) {
        fprintf(f, "  plan               none: demand residency only (SN_POLICY=lru, or no iteration learned)\n");
        return;
    }
    char last[96] = "";
    if (s->plans > 1)
        snprintf(last, sizeof last, " (%llu under the last of %llu plans)", (unsigned long long)s->plan_iterations_last,
                 (unsigned long long)s->plans);
    if (s->plan_why)
        fprintf(f, "  plan               %s, followed %llu iterations%s; not feasible as made (%s, step %d): "
                   "demand residency makes up for it\n",
                sn_option_choice("SN_POLICY", s->plan_policy), (unsigned long long)s->plan_iterations, last,
                s->plan_why, s->plan_bad_step);
    else
        fprintf(f, "  plan               %s%s, followed %llu iterations%s; predicted %.3f ms per iteration\n",
                sn_option_choice("SN_POLICY", s->plan_policy),
                s->plan_liveness ? " (with the liveness drops of its framework)" : "",
                (unsigned long long)s->plan_iterations, last, s->plan_predicted_ms);
    if (s->plan_bound_ms > 0) {
        fprintf(f, "  bound              no plan under this budget runs an iteration in less than %.3f ms: its "
                   "steps take %.3f ms with the fastest algorithms whose workspace fits beside each (%.3f ms "
                   "with memory unlimited); %.1f MiB still needed cannot stay on the device (%.3f ms of "
                   "copies in)",
                s->plan_bound_ms, s->plan_bound_compute_ms, s->plan_unlimited_ms, mib(s->plan_bound_offdevice),
                s->plan_bound_transfer_ms);
        if (s->plan_bound_stall_ms > 0)
            fprintf(f, ", and what is away at step %d and read by step %d takes %.3f ms longer to copy in than "
                       "the steps between",
                    s->plan_bound_from, s->plan_bound_to, s->plan_bound_stall_ms);
        fprintf(f, "\n");
    }
    if (s->plan_sync_steps)
        fprintf(f, "  gathered           memory mapped and unmapped at %d sync steps of the iteration only\n",
                s->plan_sync_steps);
    if (s->plan_trials > 1) {
        fprintf(f, "  candidates         %d plans auto predicted within %d%% of its best (and seed policies' "
                   "plans), each followed and one iteration measured (predicted -> measured ms; *: keeping the "
                   "framework's algorithms; demand: moving nothing a call does not need):",
                s->plan_trials, (int)sn_opt.candidate_slack);
        for (int r = 0; r < s->plan_trials && r < SN_STATS_CANDIDATES; r++) {
            const char *fw = s->plan_trial_model[r] == 1 ? "*" : s->plan_trial_model[r] == 2 ? " demand" : "";
            if (s->plan_trial_ms[r] >= 0)
                fprintf(f, "%s %.3f%s -> %.3f", r ? "," : "", s->plan_trial_pred[r], fw, s->plan_trial_ms[r]);
            else
                fprintf(f, "%s %.3f%s -> not measured", r ? "," : "", s->plan_trial_pred[r], fw);
        }
        fprintf(f, "; following candidate %d\n", s->plan_trial_kept + 1);
    }
    if (s->plan_left)
        fprintf(f, "  off the plan       %llu times the run left the learned sequence, %llu steps off it (demand "
                   "residency only meanwhile); the plan resumed %llu times at an iteration's first step\n",
                (unsigned long long)s->plan_left, (unsigned long long)s->plan_off_steps,
                (unsigned long long)s->plan_resumed);
    if (s->plan_rebound)
        fprintf(f, "  bound as made      %llu allocations made anew each iteration, bound to the plan's tensors "
                   "(%llu expected in the whole iterations followed)\n",
                (unsigned long long)s->plan_rebound, (unsigned long long)s->plan_born_due);
    fprintf(f, "  planned moves      %llu copies in (%.1f MiB), %llu copies out (%.1f MiB), %llu drops; "
               "%llu kept (used again while leaving), %llu skipped\n",
            (unsigned long long)s->plan_prefetches, mib(s->plan_prefetch_bytes),
            (unsigned long long)s->plan_offloads, mib(s->plan_offload_bytes), (unsigned long long)s->plan_drops,
            (unsigned long long)s->plan_cancelled, (unsigned long long)s->plan_skipped);
    fprintf(f, "  planned algorithms %d of %d convolution steps with a choice run another algorithm than the "
               "framework's%s: %d faster, %d with less workspace; %llu calls so (%llu with libsn's workspace), "
               "%llu left as the framework made them; libsn's workspace at most %.1f MiB\n",
            s->plan_algo_up + s->plan_algo_down, s->plan_algo_steps,
            s->plan_algo_framework ? " (keeping them all was predicted best)" : "", s->plan_algo_up,
            s->plan_algo_down,
            (unsigned long long)s->plan_algo_calls, (unsigned long long)s->plan_algo_scratch_calls,
            (unsigned long long)s->plan_algo_kept, mib(s->scratch_peak));
    if (!s->plan_niter)
        return;
    if (s->plan_stall_ms >= 0)
        fprintf(f, "  per iteration      planned %.3f ms, of which %.3f ms stalled; the latest %d iterations "
                   "followed, as measured:\n",
                s->plan_predicted_ms, s->plan_stall_ms, s->plan_niter);
    else
        fprintf(f, "  per iteration      the latest %d iterations followed, as measured:\n", s->plan_niter);
    fprintf(f, "    %9s %12s %14s %10s %10s %14s %11s\n", "iteration", "device ms", "swap stall ms", "in MiB",
            "out MiB", "off-plan calls", "pinned MiB");
    for (int i = 0; i < s->plan_niter; i++) {
        const sn_plan_iter_stats *h = &s->plan_iter[i];
        char ms[32] = "-";
        if (h->ms >= 0)
            snprintf(ms, sizeof ms, "%.3f", h->ms);
        fprintf(f, "    %9llu %12s %14.3f %10.1f %10.1f %14llu %11.1f\n", (unsigned long long)h->iteration, ms,
                h->stall_ms, mib(h->in_bytes), mib(h->out_bytes), (unsigned long long)h->off_steps,
                mib(h->pinned_bytes));
    }
}

static void text_manage(FILE *f, const sn_manage_stats *s)
{
    if (!s->active)
        return;
    char budget[32];
    budget_text(budget, sizeof budget, s->budget);
    if (s->pool)
        fprintf(f, "manage       %s, budget %.1f MiB (SN_BUDGET=%s)\n", s->backing ? s->backing : "?",
                mib(s->budget), budget);
    else
    fprintf(f, "manage       %s, budget %.1f MiB (SN_BUDGET=%s), granule %.0f KiB, host limit %.1f GiB\n",
            s->backing ? s->backing : "?", mib(s->budget), budget, (double)s->granularity / 1024.0,
            (double)s->host_limit / (1024.0 * 1024.0 * 1024.0));
    if (s->pool) {
        char need[32];
        budget_text(need, sizeof need, (s->largest_need + s->granularity) / s->granularity * s->granularity);
        fprintf(f, "  served             %llu allocations (%.1f MiB); peak allocated %.1f MiB\n",
                (unsigned long long)s->allocs, mib(s->alloc_bytes), mib(s->peak_allocated));
        fprintf(f, "  placement          high-water mark %.1f MiB, of it %.1f MiB unusable holes at the peak "
                   "(Dymem's fragmentation)\n", mib(s->peak_resident), mib(s->rounding));
        fprintf(f, "  could not          move anything off the device (no VMM); a run larger than the pool "
                   "gets out-of-memory\n");
        fprintf(f, "  smallest budget    SN_BUDGET=%s measured feasible (the high-water mark)\n", need);
        fprintf(f, "  out of memory      %llu allocations refused\n", (unsigned long long)s->oom_allocs);
        return;
    }
    fprintf(f, "  served             %llu allocations (%.1f MiB); peak allocated %.1f MiB, granule rounding %.1f MiB\n",
            (unsigned long long)s->allocs, mib(s->alloc_bytes), mib(s->peak_allocated), mib(s->rounding));
    if (s->passed)
        fprintf(f, "  left to CUDA       %llu allocations (%.1f MiB): managed or stream-ordered, not moved by libsn\n",
                (unsigned long long)s->passed, mib(s->passed_bytes));
    fprintf(f, "  resident           peak %.1f MiB mapped, %.1f MiB of physical handles (%llu made, %.1f MiB); library "
               "memory kept resident %.1f MiB\n",
            mib(s->peak_resident), mib(s->peak_physical), (unsigned long long)s->handles_created,
            mib(s->handles_created_bytes), mib(s->pinned_library));
    fprintf(f, "  swaps              in %llu (%.1f MiB), out %llu (%.1f MiB); pinned host used at most %.1f MiB "
               "of %.1f MiB pinned (%.0f ms of host time pinning it; per iteration below)\n",
            (unsigned long long)s->swap_in, mib(s->swap_in_bytes), (unsigned long long)s->swap_out,
            mib(s->swap_out_bytes), mib(s->host_peak), mib(s->host_pinned), s->host_pin_ms);
    fprintf(f, "  evictions          %llu: %llu clean (host copy current, nothing written back), %llu freed (dead)\n",
            (unsigned long long)s->evictions, (unsigned long long)s->clean_drops,
            (unsigned long long)s->freed_drops);
    fprintf(f, "  dead on arrival    %llu blocks mapped for a call that overwrites them whole (nothing copied in)",
            (unsigned long long)s->dead_loads);
    if (s->restored_loads)
        fprintf(f, "; %llu copied in after all, their call having failed", (unsigned long long)s->restored_loads);
    fputc('\n', f);
    fprintf(f, "  predicted dead     %llu dirty blocks dropped, not written back (the learned iteration overwrites "
               "them whole next); %llu read afterwards%s\n",
            (unsigned long long)s->predicted_drops, (unsigned long long)s->dropped_reads,
            s->dropped_reads ? " (libsn errors: results not to be trusted)" : "");
    fprintf(f, "  waits              %llu fences on the framework's streams, %llu host waits for swap-outs, %llu "
               "for planned leaves' own copies alone\n",
            (unsigned long long)s->fences, (unsigned long long)s->host_waits, (unsigned long long)s->own_waits);
    fprintf(f, "  stalls             %.3f ms of streams waiting for swap-ins, %.3f ms of host waits for swap-outs "
               "(device clock)%s\n",
            s->stall_in_ms, s->stall_out_ms, s->stall_unmeasured ? " (some swap-ins not timed)" : "");
    char need[32];
    budget_text(need, sizeof need, s->largest_need + s->granularity);
    fprintf(f, "  smallest budget    largest working set %.1f MiB (with library memory): SN_BUDGET=%s measured feasible\n",
            mib(s->largest_need), need);
    fprintf(f, "  out of memory      %llu calls, %llu allocations refused\n", (unsigned long long)s->oom_calls,
            (unsigned long long)s->oom_allocs);
    if (s->algo_searches || s->workspace != SN_WORKSPACE_KEEP)
        fprintf(f, "  algorithms         SN_WORKSPACE=%s; %llu convolution configurations searched (%llu found "
                   "nothing); scratch for the searches at most %.1f MiB\n",
                sn_option_choice("SN_WORKSPACE", s->workspace), (unsigned long long)s->algo_searches,
                (unsigned long long)s->algo_search_failed, mib(s->search_peak));
    if (s->relearn_begun)
        fprintf(f, "  learned anew       %llu times of %llu begun (the run stayed off the learned iteration; a "
                   "new profile, and a new plan, each time)\n",
                (unsigned long long)s->relearned, (unsigned long long)s->relearn_begun);
    text_manage_plan(f, s);
}

static const char *source_name(int source)
{
    return source == SN_PLANMODEL_MEASURED ? "measured" : source == SN_PLANMODEL_GIVEN ? "given" : "default";
}

static int plan_convolutions(const sn_plan_model *pm)
{
    int n = 0;
    for (int s = 0; s < pm->nsteps; s++)
        n += pm->step[s].conv;
    return n;
}

/* The planner's input, as sn_planmodel_build makes it from this model. */
static void text_plan_model(FILE *f, const sn_trace *t, const sn_model *m)
{
    sn_plan_model pm;
    sn_planmodel_store ps;
    if (sn_planmodel_build(t, m, NULL, &pm, &ps) != 0)
        return;
    fprintf(f, "\nplan model (what a policy plans with: one step per call of the iteration)\n");
    int other = pm.nsteps - (int)m->period;
    char algos[96] = "";
    if (t->nconf)
        snprintf(algos, sizeof algos, " (%d with a choice of algorithm, %zu configurations measured)", ps.options,
                 t->nconf);
    fprintf(f, "  steps          %d: %zu compute steps, %d other call%s; %d convolutions%s; backward from step %d\n",
            pm.nsteps, m->period, other, other == 1 ? "" : "s", plan_convolutions(&pm), algos, pm.backward_start);
    fprintf(f, "  tensors        %d: %d pinned, %d named by no call; library memory %.3f MiB\n", pm.ntensors,
            ps.pinned, ps.unnamed, mib(pm.fixed_bytes));
    fprintf(f, "  copies         to the device %.2f GB/s (%s), to the host %.2f GB/s (%s); both ways %.1fx; "
               "%.3f ms each\n",
            pm.h2d_gbps, source_name(ps.h2d_source), pm.d2h_gbps, source_name(ps.d2h_source), pm.duplex,
            pm.copy_ms);
    fprintf(f, "  remapping      %.4f ms to unmap a tensor that left, %.4f ms to map one that returns "
               "(host time, device idle)\n",
            pm.unmap_ms, pm.map_ms);
    if (ps.untimed || ps.opaque)
        fprintf(f, "  unknown        %d steps not timed (0 ms), %d steps not seen through (every tensor "
                   "accessed)\n",
                ps.untimed, ps.opaque);
    sn_planmodel_free(&ps);
}

static void json_plan_model(FILE *f, const sn_trace *t, const sn_model *m)
{
    sn_plan_model pm;
    sn_planmodel_store ps;
    if (sn_planmodel_build(t, m, NULL, &pm, &ps) != 0)
        return;
    long accesses = 0;
    double ms = 0;
    for (int i = 0; i < pm.ntensors; i++)
        accesses += pm.tensor[i].naccess;
    for (int s = 0; s < pm.nsteps; s++)
        ms += pm.step[s].ms;
    fprintf(f, ",\"plan_model\":{\"steps\":%d,\"compute_steps\":%zu,\"convolutions\":%d,\"algo_choices\":%d,"
               "\"algo_configs\":%zu,\"backward_start\":%d,"
               "\"ms\":%.6f,\"untimed_steps\":%d,\"opaque_steps\":%d,\"tensors\":%d,\"pinned\":%d,"
               "\"unnamed\":%d,\"accesses\":%ld,\"fixed_bytes\":%llu,\"h2d_gbps\":%.6f,\"h2d_source\":\"%s\","
               "\"h2d_copies\":%d,\"d2h_gbps\":%.6f,\"d2h_source\":\"%s\",\"d2h_copies\":%d,\"duplex\":%.3f,"
               "\"copy_ms\":%.6f,\"unmap_ms\":%.6f,\"map_ms\":%.6f}",
            pm.nsteps, m->period, plan_convolutions(&pm), ps.options, t->nconf, pm.backward_start, ms, ps.untimed,
            ps.opaque, pm.ntensors,
            ps.pinned, ps.unnamed, accesses, (unsigned long long)pm.fixed_bytes, pm.h2d_gbps,
            source_name(ps.h2d_source), ps.h2d_copies, pm.d2h_gbps, source_name(ps.d2h_source), ps.d2h_copies,
            pm.duplex, pm.copy_ms, pm.unmap_ms, pm.map_ms);
    sn_planmodel_free(&ps);
}

/* The layer table: per layer its steps, shapes, inputs, readers and times. */
static void text_layer_table(FILE *f, const sn_trace *t, const sn_model *m)
{
    fprintf(f, "\nlayer table\n");
    fprintf(f, "  %4s %-13s %4s %4s  %-18s %-18s %-12s %4s %4s %4s %9s %9s\n", "id", "type", "fwd",
            "bwd", "input", "output", "inputs", "cons", "fork", "join", "fwd ms", "bwd ms");
    for (int l = 0; l < m->nlayers; l++) {
        const sn_model_layer *L = &m->layers[l];
        char in[64], out[64], ins[64];
        layer_shapes(t, L, in, out, sizeof in);
        size_t off = 0;
        ins[0] = 0;
        for (int k = 0; k < L->nin && off + 8 < sizeof ins; k++)
            off += (size_t)snprintf(ins + off, sizeof ins - off, "%s%d", k ? "," : "",
                                    m->edge_layer[L->in_begin + k]);
        if (!L->nin)
            snprintf(ins, sizeof ins, "-");
        fprintf(f, "  %4d %-13s %4d %4d  %-18s %-18s %-12s %4d %4s %4s", l, L->type, L->nfwd, L->nbwd,
                in[0] ? in : "-", out[0] ? out : "-", ins, L->consumers, L->fork ? "yes" : "-",
                L->join ? "yes" : "-");
        if (m->timed)
            fprintf(f, " %9.4f %9.4f\n", L->fwd_ms, L->bwd_ms);
        else
            fprintf(f, " %9s %9s\n", "-", "-");
    }
}

/* The tensor table: the roles' totals, then the largest tensors (at most
 * 40; the JSON report has them all). */
static void text_tensor_table(FILE *f, const sn_model *m)
{
    fprintf(f, "\ntensor table (%d tensors in one iteration)\n", m->ntensors);
    for (int r = 0; r < SN_ROLE_COUNT; r++)
        fprintf(f, "  %-16s %5d  %10.3f MiB\n", sn_role_name(r), m->role_count[r], mib(m->role_bytes[r]));
    int *idx = malloc((size_t)(m->ntensors ? m->ntensors : 1) * sizeof *idx);
    if (idx) {
        for (int i = 0; i < m->ntensors; i++)
            idx[i] = i;
        /* largest first, then by id: a stable, readable order */
        for (int i = 1; i < m->ntensors; i++) {
            int x = idx[i], j = i - 1;
            while (j >= 0 && (m->tensors[idx[j]].bytes < m->tensors[x].bytes ||
                              (m->tensors[idx[j]].bytes == m->tensors[x].bytes && idx[j] > x))) {
                idx[j + 1] = idx[j];
                j--;
            }
            idx[j + 1] = x;
        }
        int shown = m->ntensors < 40 ? m->ntensors : 40;
        fprintf(f, "  %5s %12s %-16s %-13s %8s %4s %-9s\n", "id", "bytes", "kind", "lifetime", "producer",
                "cons", "identity");
        for (int k = 0; k < shown; k++) {
            const sn_model_tensor *T = &m->tensors[idx[k]];
            char life[32], prod[16], ident[32];
            if (T->carried)
                snprintf(life, sizeof life, "iteration");
            else
                snprintf(life, sizeof life, "%d-%d (%d)", T->first, T->last, T->last - T->first + 1);
            if (T->producer >= 0)
                snprintf(prod, sizeof prod, "%d", T->producer);
            else
                snprintf(prod, sizeof prod, "-");
            if (T->alloc_in_iter)
                snprintf(ident, sizeof ident, "site#%d", T->ordinal);
            else
                snprintf(ident, sizeof ident, "persistent");
            fprintf(f, "  %5d %12llu %-16s %-13s %8s %4d %-9s\n", idx[k], (unsigned long long)T->bytes,
                    sn_role_name(T->role), life, prod, T->consumers, ident);
        }
        if (shown < m->ntensors)
            fprintf(f, "  ... %d smaller tensors (all of them are in the JSON report)\n",
                    m->ntensors - shown);
        free(idx);
    }
}

/* Memory per step under each what-if strategy (at most 200 rows). */
static void text_memory_table(FILE *f, const sn_trace *t, const sn_model *m)
{
    fprintf(f, "\nmemory per step (MiB)\n");
    fprintf(f, "  %5s %-8s %5s %-18s %9s %9s %9s %9s\n", "step", "phase", "layer", "op", "as-is",
            "liveness", "conv-off", "all-off");
    int every = m->period > 200 ? (int)((m->period + 199) / 200) : 1;
    for (size_t s = 0; s < m->period; s++) {
        const sn_model_step *st = &m->steps[s];
        if (every > 1 && s % (size_t)every != 0 && s + 1 != m->period)
            continue;
        char layer[16];
        if (st->layer >= 0)
            snprintf(layer, sizeof layer, "%d", st->layer);
        else
            snprintf(layer, sizeof layer, "-");
        fprintf(f, "  %5zu %-8s %5s %-18s %9.3f %9.3f %9.3f %9.3f\n", s, sn_phase_name(st->phase), layer,
                sn_op_name(t->calls[st->call].op), mib(st->mem_asis), mib(st->mem_live),
                mib(st->mem_conv), mib(st->mem_all));
    }
    if (every > 1)
        fprintf(f, "  (every %d-th step shown; the JSON report has all)\n", every);
}

/* The what-if peaks, the lower bound and the smallest budget expected. */
static void text_whatif(FILE *f, const sn_trace *t, const sn_model *m)
{
    fprintf(f, "\nwhat-if peaks\n");
    fprintf(f, "  as allocated, whole run        %10.3f MiB\n", mib(m->peak_asis));
    fprintf(f, "  as allocated, one iteration    %10.3f MiB\n", mib(m->peak_asis_iter));
    fprintf(f, "  with liveness                  %10.3f MiB\n", mib(m->peak_live));
    fprintf(f, "  conv outputs offloaded         %10.3f MiB\n", mib(m->peak_conv));
    fprintf(f, "  all feature maps offloaded     %10.3f MiB\n", mib(m->peak_all));
    fprintf(f, "  SuperNeurons (layer sets)      %10.3f MiB\n", mib(m->peak_superneurons));
    fprintf(f, "  lower bound                    %10.3f MiB = ", mib(m->lower_bound));
    if (m->largest_alloc > m->max_working_set)
        fprintf(f, "largest allocation %.3f MiB (above any step's working set, %.3f MiB at most)",
                mib(m->largest_alloc), mib(m->max_working_set));
    else
        fprintf(f, "largest step working set %.3f MiB", mib(m->max_working_set));
    if (m->max_working_set_lib && m->largest_alloc <= m->max_working_set)
        fprintf(f, " (its library handle's own %.3f MiB)", mib(m->max_working_set_lib));
    fprintf(f, " + libraries %.3f MiB", mib(m->lower_bound - sn_model_bound_need(m)));
    if (m->max_working_set_step >= 0) {
        const sn_model_step *st = &m->steps[m->max_working_set_step];
        fprintf(f, " (step %d, %s", m->max_working_set_step, sn_op_name(t->calls[st->call].op));
        if (st->layer >= 0)
            fprintf(f, ", layer %d %s", st->layer, m->layers[st->layer].type);
        fprintf(f, ")");
    }
    fprintf(f, "\n");
    char budget[32];
    budget_text(budget, sizeof budget, m->budget);
    fprintf(f, "  smallest SN_BUDGET expected    SN_BUDGET=%s\n", budget);
}

static void text_device(FILE *f, const sn_trace *t, const sn_model *m)
{
    fprintf(f, "== device %d ==\n", m->dev);
    fprintf(f, "calls        %zu intercepted: %zu steps, %zu transfers\n", m->ncalls, m->nsteps_total,
            m->ntransfers);
    fprintf(f, "allocations  runtime %llu (%.1f MiB), driver %llu (%.1f MiB), cudnn %llu (%.1f MiB), "
               "cublas %llu (%.1f MiB)\n",
            (unsigned long long)m->alloc_count[1], mib(m->alloc_bytes[1]),
            (unsigned long long)m->alloc_count[2], mib(m->alloc_bytes[2]),
            (unsigned long long)m->alloc_count[3], mib(m->alloc_bytes[3]),
            (unsigned long long)m->alloc_count[4], mib(m->alloc_bytes[4]));
    text_manage(f, &t->manage);
    if (!m->found) {
        /* no layers, tables or budget from a period that is not a whole
         * iteration: only the facts about allocations */
        if (m->log_state == SN_TRACE_FULL)
            fprintf(f, "iteration    no complete iteration seen in the first %zu calls (the call log "
                       "filled up)\n",
                    m->recorded_calls);
        else
            fprintf(f, "iteration    no complete iteration seen (none with a forward and a backward pass "
                       "repeated twice)\n");
        fprintf(f, "peak         %.1f MiB as allocated\n", mib(m->peak_asis));
        return;
    }
    fprintf(f, "iteration    period %zu steps; %zu iterations seen%s\n", m->period, m->iterations,
            iter_note(m));
    fprintf(f, "tables       from iterations 1-%zu of %zu ", m->iterations_recorded, m->iterations);
    if (m->log_state == SN_TRACE_FOLLOWING)
        fprintf(f, "(profiled; the rest followed, %llu steps off the sequence)\n",
                (unsigned long long)m->off_sequence);
    else if (m->log_state == SN_TRACE_FULL)
        fprintf(f, "(the call log filled up; the rest only counted)\n");
    else
        fprintf(f, "(the whole run was recorded)\n");
    fprintf(f, "phases       forward %d steps in %d layers; backward %d steps in %d layers; update %d steps\n",
            m->fwd_steps, m->fwd_layers, m->bwd_steps, m->bwd_layers, m->upd_steps);
    fprintf(f, "passes       %d training (forward and backward), %d evaluation (forward only), %d %s\n",
            m->train_passes, m->eval_passes, m->updates, m->updates == 1 ? "update" : "updates");
    char counts[2048];
    layer_counts(m, counts, sizeof counts);
    fprintf(f, "layers       %d: %s\n", m->nlayers, counts);
    fprintf(f, "graph        %d forks, %d joins, %d edges\n", m->forks, m->joins, m->nedges);
    if (m->timed)
        fprintf(f, "time         %.3f ms of device time per iteration\n", m->iter_ms);
    else
        fprintf(f, "time         not measured\n");
    if (m->unknown_ranges || m->opaque_steps || m->unmatched_bwd)
        fprintf(f, "unseen       %llu ranges outside known allocations, %d steps not seen through, "
                   "%d backward groups without a layer\n",
                (unsigned long long)m->unknown_ranges, m->opaque_steps, m->unmatched_bwd);
    text_layer_table(f, t, m);
    text_tensor_table(f, m);
    text_memory_table(f, t, m);
    text_whatif(f, t, m);
    text_plan_model(f, t, m);
    fprintf(f, "checks       %s\n", sn_model_check_name(m->check));
}

void sn_report_text(FILE *f, const sn_trace *const *t, const sn_model *m, int n, const char *mode)
{
    fprintf(f, "libsn trace report (SN_MODE=%s)\n", mode);
    for (int i = 0; i < n; i++) {
        fprintf(f, "\n");
        text_device(f, t[i], &m[i]);
    }
}

/* ---- JSON --------------------------------------------------------------------- */

static void json_manage(FILE *f, const sn_manage_stats *s)
{
    if (!s->active)
        return;
    fprintf(f, "\"manage\":{\"backing\":\"%s\",\"budget\":%llu,\"granularity\":%llu,\"host_limit\":%llu,"
               "\"allocs\":%llu,\"alloc_bytes\":%llu,\"passed\":%llu,\"passed_bytes\":%llu,\"peak_allocated\":%llu,\"rounding\":%llu,"
               "\"peak_resident\":%llu,\"peak_physical\":%llu,\"handles_created\":%llu,\"handles_created_bytes\":%llu,"
               "\"library_resident\":%llu,"
               "\"swap_in\":%llu,\"swap_in_bytes\":%llu,\"swap_out\":%llu,\"swap_out_bytes\":%llu,"
               "\"host_peak\":%llu,\"host_pinned\":%llu,\"host_pin_ms\":%.6f,\"evictions\":%llu,\"clean_drops\":%llu,\"freed_drops\":%llu,"
               "\"dead_loads\":%llu,\"restored_loads\":%llu,\"create_retries\":%llu,\"fences\":%llu,\"host_waits\":%llu,\"own_waits\":%llu,\"largest_need\":%llu,"
               "\"smallest_budget\":%llu,\"oom_calls\":%llu,\"oom_allocs\":%llu,"
               "\"stall_in_ms\":%.6f,\"stall_out_ms\":%.6f,\"stall_unmeasured\":%llu,"
               "\"predicted_drops\":%llu,\"dropped_reads\":%llu,\"workspace\":\"%s\",\"algo_searches\":%llu,"
               "\"algo_search_failed\":%llu,\"search_peak\":%llu,\"scratch_peak\":%llu,\"relearn_begun\":%llu,"
               "\"relearned\":%llu,",
            s->backing ? s->backing : "?", (unsigned long long)s->budget, (unsigned long long)s->granularity,
            (unsigned long long)s->host_limit, (unsigned long long)s->allocs, (unsigned long long)s->alloc_bytes,
            (unsigned long long)s->passed, (unsigned long long)s->passed_bytes,
            (unsigned long long)s->peak_allocated, (unsigned long long)s->rounding,
            (unsigned long long)s->peak_resident, (unsigned long long)s->peak_physical,
            (unsigned long long)s->handles_created, (unsigned long long)s->handles_created_bytes,
            (unsigned long long)s->pinned_library, (unsigned long long)s->swap_in,
            (unsigned long long)s->swap_in_bytes, (unsigned long long)s->swap_out,
            (unsigned long long)s->swap_out_bytes, (unsigned long long)s->host_peak,
            (unsigned long long)s->host_pinned, s->host_pin_ms, (unsigned long long)s->evictions, (unsigned long long)s->clean_drops,
            (unsigned long long)s->freed_drops, (unsigned long long)s->dead_loads,
            (unsigned long long)s->restored_loads, (unsigned long long)s->create_retries,
            (unsigned long long)s->fences, (unsigned long long)s->host_waits,
            (unsigned long long)s->own_waits, (unsigned long long)s->largest_need,
            (unsigned long long)((s->largest_need + s->granularity) / s->granularity * s->granularity),
            (unsigned long long)s->oom_calls, (unsigned long long)s->oom_allocs, s->stall_in_ms, s->stall_out_ms,
            (unsigned long long)s->stall_unmeasured, (unsigned long long)s->predicted_drops,
            (unsigned long long)s->dropped_reads, sn_option_choice("SN_WORKSPACE", s->workspace),
            (unsigned long long)s->algo_searches, (unsigned long long)s->algo_search_failed,
            (unsigned long long)s->search_peak, (unsigned long long)s->scratch_peak,
            (unsigned long long)s->relearn_begun, (unsigned long long)s->relearned);
    fprintf(f, "\"planning\":{\"host_ms\":%.3f,\"blocked_ms\":%.3f,\"waited\":%s,\"unfinished\":%s},",
            s->plan_host_ms, s->plan_blocked_ms, s->plan_waited ? "true" : "false",
            s->plan_unfinished ? "true" : "false");
    if (s->has_plan) {
        fprintf(f, "\"plan\":{\"policy\":\"%s\",\"framework_liveness\":%d,\"iterations\":%llu,\"predicted_ms\":%.6f,"
                   "\"bound_ms\":%.6f,\"bound_compute_ms\":%.6f,\"bound_stall_ms\":%.6f,\"bound_window\":[%d,%d],"
                   "\"bound_transfer_ms\":%.6f,\"unlimited_ms\":%.6f,\"bound_offdevice_bytes\":%llu,"
                   "\"prefetches\":%llu,"
                   "\"prefetch_bytes\":%llu,\"offloads\":%llu,\"offload_bytes\":%llu,\"drops\":%llu,"
                   "\"cancelled\":%llu,\"skipped\":%llu,\"left\":%llu,\"algo_steps\":%d,\"algo_up\":%d,"
                   "\"algo_down\":%d,\"algo_framework\":%s,\"algo_calls\":%llu,\"algo_scratch_calls\":%llu,"
                   "\"algo_kept\":%llu,\"resumed\":%llu,\"off_steps\":%llu,\"plans\":%llu,\"iterations_last\":%llu,"
                   "\"bad_step\":%d,\"why\":%s%s%s,\"predicted_stall_ms\":%.6f,\"rebound\":%llu,"
                   "\"born_due\":%llu,\"sync_steps\":%d,\"candidate_kept\":%d,\"candidates\":[",
                sn_option_choice("SN_POLICY", s->plan_policy), s->plan_liveness,
                (unsigned long long)s->plan_iterations, s->plan_predicted_ms, s->plan_bound_ms,
                s->plan_bound_compute_ms, s->plan_bound_stall_ms, s->plan_bound_from, s->plan_bound_to,
                s->plan_bound_transfer_ms, s->plan_unlimited_ms,
                (unsigned long long)s->plan_bound_offdevice, (unsigned long long)s->plan_prefetches, (unsigned long long)s->plan_prefetch_bytes,
                (unsigned long long)s->plan_offloads, (unsigned long long)s->plan_offload_bytes,
                (unsigned long long)s->plan_drops, (unsigned long long)s->plan_cancelled,
                (unsigned long long)s->plan_skipped, (unsigned long long)s->plan_left, s->plan_algo_steps,
                s->plan_algo_up, s->plan_algo_down, s->plan_algo_framework ? "true" : "false",
                (unsigned long long)s->plan_algo_calls,
                (unsigned long long)s->plan_algo_scratch_calls, (unsigned long long)s->plan_algo_kept,
                (unsigned long long)s->plan_resumed, (unsigned long long)s->plan_off_steps,
                (unsigned long long)s->plans, (unsigned long long)s->plan_iterations_last, s->plan_bad_step,
                s->plan_why ? "\"" : "",
                s->plan_why ? s->plan_why : "null", s->plan_why ? "\"" : "", s->plan_stall_ms,
                (unsigned long long)s->plan_rebound, (unsigned long long)s->plan_born_due, s->plan_sync_steps,
                s->plan_trial_kept);
        for (int r = 0; r < s->plan_trials && r < SN_STATS_CANDIDATES; r++)
            fprintf(f, "%s{\"predicted_ms\":%.6f,\"measured_ms\":%.6f,\"model\":\"%s\"}", r ? "," : "",
                    isfinite(s->plan_trial_pred[r]) ? s->plan_trial_pred[r] : -1.0,
                    isfinite(s->plan_trial_ms[r]) ? s->plan_trial_ms[r] : -1.0,
                    s->plan_trial_model[r] == 1 ? "framework" : s->plan_trial_model[r] == 2 ? "demand" : "chosen");
        fprintf(f, "],\"per_iteration\":[");
        for (int i = 0; i < s->plan_niter; i++) {
            const sn_plan_iter_stats *h = &s->plan_iter[i];
            fprintf(f, "%s{\"iteration\":%llu,\"ms\":%.6f,\"stall_ms\":%.6f,\"in_bytes\":%llu,\"out_bytes\":%llu,"
                       "\"off_plan_calls\":%llu,\"pinned_bytes\":%llu}",
                    i ? "," : "", (unsigned long long)h->iteration, h->ms, h->stall_ms, (unsigned long long)h->in_bytes,
                    (unsigned long long)h->out_bytes, (unsigned long long)h->off_steps,
                    (unsigned long long)h->pinned_bytes);
        }
        fprintf(f, "]}},");
    } else
        fprintf(f, "\"plan\":null},");
}

static void json_device(FILE *f, const sn_trace *t, const sn_model *m)
{
    fprintf(f, "{\"device\":%d,\"calls\":%zu,\"steps\":%zu,\"transfers\":%zu,", m->dev, m->ncalls,
            m->nsteps_total, m->ntransfers);
    json_manage(f, &t->manage);
    fprintf(f, "\"allocations\":{");
    static const char *const owners[] = {"runtime", "driver", "cudnn", "cublas"};
    for (int o = 1; o <= 4; o++)
        fprintf(f, "%s\"%s\":{\"count\":%llu,\"bytes\":%llu}", o > 1 ? "," : "", owners[o - 1],
                (unsigned long long)m->alloc_count[o], (unsigned long long)m->alloc_bytes[o]);
    static const char *const states[] = {"recording", "following", "full"};
    fprintf(f, "},\"run\":{\"failed_calls\":%llu,\"opaque_calls\":%llu,\"unknown_ranges\":%llu,"
               "\"off_sequence_steps\":%llu,\"live_bytes\":%llu,\"peak_bytes\":%llu}",
            (unsigned long long)m->failed_calls,
            (unsigned long long)m->opaque_calls, (unsigned long long)m->unknown_ranges,
            (unsigned long long)m->off_sequence, (unsigned long long)m->live_bytes,
            (unsigned long long)m->peak_asis);
    fprintf(f, ",\"recorded\":{\"calls\":%zu,\"iterations\":%zu,\"log\":\"%s\"}", m->recorded_calls,
            m->iterations_recorded, m->log_state >= 0 && m->log_state <= 2 ? states[m->log_state] : "?");
    fprintf(f, ",\"found\":%s,\"peak_asis\":%llu", m->found ? "true" : "false",
            (unsigned long long)m->peak_asis);
    long timed_calls = 0;
    for (size_t i = 0; i < t->ncalls; i++)
        timed_calls += (t->calls[i].flags & SN_TC_TIMED) != 0;
    fprintf(f, ",\"timed_calls\":%ld", timed_calls);
    /* what libsn could not see is reported whether or not an iteration was found */
    fprintf(f, ",\"unseen\":{\"ranges\":%llu,\"opaque_steps\":%d,\"unmatched_backward\":%d}",
            (unsigned long long)m->unknown_ranges, m->opaque_steps, m->unmatched_bwd);
    if (!m->found) {
        fprintf(f, "}");
        return;
    }
    fprintf(f, ",\"iteration\":{\"period\":%zu,\"iterations\":%zu,\"first_differs\":%s,\"ms\":%.6f}",
            m->period, m->iterations, m->first_differs ? "true" : "false", m->timed ? m->iter_ms : -1.0);
    fprintf(f, ",\"phases\":{\"forward_steps\":%d,\"backward_steps\":%d,\"update_steps\":%d,"
               "\"forward_layers\":%d,\"backward_layers\":%d}",
            m->fwd_steps, m->bwd_steps, m->upd_steps, m->fwd_layers, m->bwd_layers);
    fprintf(f, ",\"passes\":{\"training\":%d,\"evaluation\":%d,\"updates\":%d,\"list\":[", m->train_passes,
            m->eval_passes, m->updates);
    for (int k = 0; k < m->npasses; k++) {
        const sn_model_pass *p = &m->passes[k];
        fprintf(f, "%s{\"forward\":[%d,%d],\"backward\":[%d,%d],\"update\":[%d,%d],\"training\":%s}", k ? "," : "",
                p->first, p->turn, p->turn + 1, p->bwd_end - 1, p->bwd_end, p->end - 1, p->training ? "true" : "false");
    }
    fprintf(f, "]}");
    fprintf(f, ",\"identity\":{\"allocated_in_iteration\":%d,\"matched_previous\":%d}", m->ident_total,
            m->ident_matched);
    fprintf(f, ",\"graph\":{\"layers\":%d,\"forks\":%d,\"joins\":%d,\"edges\":%d}", m->nlayers, m->forks,
            m->joins, m->nedges);
    fprintf(f, ",\"layers\":[");
    for (int l = 0; l < m->nlayers; l++) {
        const sn_model_layer *L = &m->layers[l];
        char in[64], out[64];
        layer_shapes(t, L, in, out, sizeof in);
        fprintf(f, "%s{\"id\":%d,\"type\":\"%s\",\"forward_steps\":%d,\"backward_steps\":%d,"
                   "\"input_shape\":\"%s\",\"output_shape\":\"%s\",\"inputs\":[",
                l ? "," : "", l, L->type, L->nfwd, L->nbwd, in, out);
        for (int k = 0; k < L->nin; k++)
            fprintf(f, "%s%d", k ? "," : "", m->edge_layer[L->in_begin + k]);
        fprintf(f, "],\"consumers\":%d,\"fork\":%s,\"join\":%s,\"forward_ms\":%.6f,\"backward_ms\":%.6f}",
                L->consumers, L->fork ? "true" : "false", L->join ? "true" : "false", L->fwd_ms, L->bwd_ms);
    }
    fprintf(f, "],\"tensors\":[");
    for (int i = 0; i < m->ntensors; i++) {
        const sn_model_tensor *T = &m->tensors[i];
        fprintf(f, "%s{\"id\":%d,\"bytes\":%llu,\"kind\":\"%s\",\"carried\":%s,\"first\":%d,\"last\":%d,"
                   "\"producer\":%d,\"consumers\":%d,\"owner\":\"%s\",\"allocated_in_iteration\":%s",
                i ? "," : "", i, (unsigned long long)T->bytes, sn_role_name(T->role),
                T->carried ? "true" : "false", T->first, T->last, T->producer, T->consumers,
                sn_owner_name(T->lib_owner), T->alloc_in_iter ? "true" : "false");
        fprintf(f, ",\"layer\":%d,\"live\":[%d,%d],\"allocation\":[%d,%d],\"identity\":",
                T->owner, T->live_first, T->live_last, T->alloc_step, T->free_step);
        if (T->alloc_in_iter)
            fprintf(f, "\"site#%d\"}", T->ordinal);
        else
            fprintf(f, "\"persistent\"}");
    }
    fprintf(f, "],\"kinds\":{");
    for (int r = 0; r < SN_ROLE_COUNT; r++)
        fprintf(f, "%s\"%s\":{\"count\":%d,\"bytes\":%llu}", r ? "," : "", sn_role_name(r), m->role_count[r],
                (unsigned long long)m->role_bytes[r]);
    fprintf(f, "},\"memory_per_step\":[");
    for (size_t s = 0; s < m->period; s++) {
        const sn_model_step *st = &m->steps[s];
        fprintf(f, "%s{\"step\":%zu,\"op\":\"%s\",\"phase\":\"%s\",\"pass\":%d,\"layer\":%d,\"ms\":%.6f,"
                   "\"asis\":%llu,\"liveness\":%llu,\"conv_offload\":%llu,\"all_offload\":%llu}",
                s ? "," : "", s, sn_op_name(t->calls[st->call].op), sn_phase_name(st->phase), st->pass, st->layer,
                st->ms, (unsigned long long)st->mem_asis, (unsigned long long)st->mem_live,
                (unsigned long long)st->mem_conv, (unsigned long long)st->mem_all);
    }
    fprintf(f, "],\"whatif\":{\"asis\":%llu,\"asis_iteration\":%llu,\"liveness\":%llu,\"conv_offload\":%llu,"
               "\"all_offload\":%llu,\"superneurons\":%llu,\"lower_bound\":%llu,\"carried\":%llu,"
               "\"max_working_set\":%llu,\"max_working_set_step\":%d,\"max_working_set_handle\":%llu,"
               "\"largest_alloc\":%llu,\"library\":%llu,\"library_keyed\":%llu,\"budget\":%llu}",
            (unsigned long long)m->peak_asis, (unsigned long long)m->peak_asis_iter,
            (unsigned long long)m->peak_live, (unsigned long long)m->peak_conv,
            (unsigned long long)m->peak_all, (unsigned long long)m->peak_superneurons,
            (unsigned long long)m->lower_bound, (unsigned long long)m->carried_bytes,
            (unsigned long long)m->max_working_set, m->max_working_set_step,
            (unsigned long long)m->max_working_set_lib, (unsigned long long)m->largest_alloc,
            (unsigned long long)(m->lower_bound - sn_model_bound_need(m)),
            (unsigned long long)m->library_keyed, (unsigned long long)m->budget);
    json_plan_model(f, t, m);
    fprintf(f, ",\"check\":\"%s\"}", m->check == SN_CHECK_OK ? "ok" : sn_model_check_name(m->check));
}

void sn_report_json(FILE *f, const sn_trace *const *t, const sn_model *m, int n, const char *mode)
{
    fprintf(f, "{\"libsn\":\"trace report\",\"mode\":\"%s\",\"devices\":[", mode);
    for (int i = 0; i < n; i++) {
        if (i)
            fprintf(f, ",");
        json_device(f, t[i], &m[i]);
    }
    fprintf(f, "]}\n");
}
