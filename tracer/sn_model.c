/*
 * sn_model.c — building the iteration model from a call log (see
 * sn_model.h for what is inferred and how, docs/libsn.md for the rules in
 * full).
 *
 * The analysis works on windows of consecutive steps of the log. In a
 * window, every access of a call knows the step that last wrote its tensor
 * before it ("its writer"); reads and writes are exact for cuDNN, cuBLAS,
 * copies and sets, and conservative for kernels (every tensor a kernel is
 * given may be read and written), so a kernel's accesses are weaker
 * evidence: a kernel that touches a tensor for the first time is taken to
 * produce it, one that touches a buffer the forward pass used may as well
 * write it as read it, and a kernel's access never makes an output in
 * place (an activation) into a new value.
 */
#include "common/sn_mangle.h"
#include "tracer/sn_model.h"
#include "tracer/sn_model_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sn_log.h"
#include "tracer/sn_period.h"
#include "tracer/sn_whatif.h"

/* ---- op tables -------------------------------------------------------------- */

static const char *const sn_op_names[SN_OP_COUNT] = {
#define SN_OP(id, name, phase, layer) [SN_OP_##id] = name,
#include "common/sn_ops.def"
#undef SN_OP
};

static const char sn_op_phase[SN_OP_COUNT] = {
#define SN_OP(id, name, phase, layer) [SN_OP_##id] = #phase[0],
#include "common/sn_ops.def"
#undef SN_OP
};

const char *sn_op_name(int op)
{
    return op >= 0 && op < SN_OP_COUNT ? sn_op_names[op] : "?";
}

const char *sn_role_name(int role)
{
    static const char *const n[SN_ROLE_COUNT] = {"weight", "weight gradient", "feature map",
                                                  "gradient map", "workspace", "other"};
    return role >= 0 && role < SN_ROLE_COUNT ? n[role] : "?";
}

const char *sn_phase_name(int phase)
{
    static const char *const n[] = {"forward", "backward", "update"};
    return phase >= 0 && phase <= 2 ? n[phase] : "?";
}

const char *sn_owner_name(int owner)
{
    static const char *const n[] = {"none", "runtime", "driver", "cudnn", "cublas"};
    return owner >= 0 && owner <= 4 ? n[owner] : "?";
}

const char *sn_model_check_name(int v)
{
    switch (v) {
    case SN_CHECK_OK: return "all invariants hold";
    case SN_CHECK_LIVENESS_ABOVE_ASIS: return "liveness peak above the peak as allocated";
    case SN_CHECK_WHATIF_ABOVE_LIVENESS: return "a what-if peak above the liveness peak";
    case SN_CHECK_BOUND_ABOVE_WHATIF: return "the lower bound above an achievable what-if peak";
    case SN_CHECK_BUDGET: return "the budget below the lower bound or above the run's peak";
    case SN_CHECK_PHASES: return "a step in no phase, or phase counts that do not add up";
    case SN_CHECK_LIFETIME: return "a tensor live outside its allocation";
    case SN_CHECK_STEP_ABOVE_ASIS: return "a step's liveness above its memory as allocated";
    }
    return "?";
}

/* Layer classes: what a layer-making call makes. */
enum sn_cls { CLS_NONE = 0, CLS_CONV, CLS_DECONV, CLS_BN, CLS_ACT, CLS_POOL, CLS_LRN, CLS_DROPOUT,
              CLS_FC, CLS_CONCAT, CLS_ADD, CLS_SOFTMAX, CLS_DATA, CLS_OTHER };

/* The class of a cuDNN call that makes a layer in a forward pass. A
 * transposed convolution is a backward-data convolution run forward. */
static int sn_dnn_class(int op)
{
    switch (op) {
    case SN_OP_CONV_FWD:
    case SN_OP_CONV_BIAS_ACT_FWD:
    case SN_OP_CONV_BWD_FILTER:
    case SN_OP_CONV_BWD_BIAS: return CLS_CONV;
    case SN_OP_CONV_BWD_DATA: return CLS_DECONV;
    case SN_OP_BN_FWD_TRAIN:
    case SN_OP_BN_FWD_INFER:
    case SN_OP_BN_BWD: return CLS_BN;
    case SN_OP_ACT_FWD:
    case SN_OP_ACT_BWD: return CLS_ACT;
    case SN_OP_POOL_FWD:
    case SN_OP_POOL_BWD: return CLS_POOL;
    case SN_OP_LRN_FWD:
    case SN_OP_LRN_BWD: return CLS_LRN;
    case SN_OP_DROPOUT_FWD:
    case SN_OP_DROPOUT_BWD: return CLS_DROPOUT;
    case SN_OP_SOFTMAX_FWD:
    case SN_OP_SOFTMAX_BWD: return CLS_SOFTMAX;
    case SN_OP_OP_TENSOR: return CLS_ADD;
    case SN_OP_TRANSFORM_TENSOR: return CLS_CONCAT;
    default: return CLS_NONE;
    }
}

static int sn_is_gemm(int op)
{
    return op == SN_OP_GEMM || op == SN_OP_GEMV || op == SN_OP_GEMM_BATCHED;
}

static int sn_is_copy(int op)
{
    return op == SN_OP_MEMCPY_D2D || op == SN_OP_BLAS_COPY;
}

/* Kernels and graphs are described conservatively (every allocation an
 * argument points into is read and written): weak evidence only. */
static int sn_exact(const sn_trace_call *e)
{
    return !(e->flags & SN_TC_OPAQUE) && e->op != SN_OP_KERNEL && e->op != SN_OP_GRAPH;
}

static int sn_ok(const sn_trace_call *e)
{
    return !(e->flags & SN_TC_FAILED);
}

/* Any use of a tensor's value, weak ones included. */
static int sn_uses(const sn_trace_call *e, uint8_t mode)
{
    return !(mode & SN_ACC_SCRATCH) && ((mode & SN_ACC_R) || !sn_exact(e));
}

/* A change of a tensor's value. */
static int sn_changes(const sn_trace_call *e, uint8_t mode)
{
    return !(mode & SN_ACC_SCRATCH) && ((mode & SN_ACC_W) || !sn_exact(e));
}
/* A write the model may believe: an exact call's, or a kernel's through a
 * parameter its mangled name declares writable (SN_ACC_OUT: Caffe's
 * dropout writes its output in place; what it reads through a pointer to
 * const it leaves alone). Only the layer graph uses it: passes and plans
 * keep taking every kernel access as a possible write. */
static int sn_model_writes(const sn_trace_call *e, uint8_t mode)
{
    if (mode & SN_ACC_SCRATCH)
        return 0;
    return sn_exact(e) ? (mode & SN_ACC_W) != 0 : (mode & SN_ACC_OUT) != 0;
}

/* ---- helpers over the log -------------------------------------------------------- */

static size_t sn_count(long n)
{
    return n > 0 ? (size_t)n : 1;
}

typedef struct sn_ctx {
    const sn_trace *t;
    sn_model *m;
    size_t n;                  /* successful compute steps in the log */
    uint64_t *step_call;       /* log index of each step */
    size_t P;
    size_t base;               /* step index of the representative iteration */
    int *tensor_map;           /* trace tensor -> model tensor, -1 */
} sn_ctx;

static const sn_trace_access *sn_acc(const sn_trace *t, const sn_trace_call *e)
{
    return &t->acc[e->acc_begin];
}

/* ---- windows of steps ------------------------------------------------------------- */

typedef struct sn_win {
    const sn_trace *t;
    const uint64_t *step_call;
    size_t s0;                 /* first step (index into step_call) */
    int n;                     /* steps */
    uint64_t call_lo, call_hi; /* the calls from after step s0 - 1 through step s0 + n - 1 */
    int *pos;                  /* per call: the position of the step at or after it */
    uint64_t acc_lo;           /* access index of the first call's first access */
    int *wr;                   /* per access: the step that last changed its tensor before
                                  it, -1 none in the window, -3 - p a copy from the host at
                                  position p (sn_wr_pos) */
    char *single;              /* per step: touches one tensor only (besides scratch) */
} sn_win;

static const sn_trace_call *sn_wstep(const sn_win *w, int i)
{
    return &w->t->calls[w->step_call[w->s0 + (size_t)i]];
}

static int *sn_wwr(const sn_win *w, const sn_trace_call *e)
{
    return &w->wr[e->acc_begin - w->acc_lo];
}

static void sn_win_free(sn_win *w)
{
    free(w->pos);
    free(w->wr);
    free(w->single);
    memset(w, 0, sizeof *w);
}

/* A window of the steps [s0, s0 + n); with tail_end set, it also takes
 * the calls after its last step up to tail_end (the copies to the host
 * that follow it), at the last step's position. */
static int sn_win_init(sn_win *w, const sn_trace *t, const uint64_t *step_call, size_t s0, int n,
                       uint64_t tail_end)
{
    memset(w, 0, sizeof *w);
    w->t = t;
    w->step_call = step_call;
    w->s0 = s0;
    w->n = n;
    w->call_lo = s0 > 0 ? step_call[s0 - 1] + 1 : t->log_begin;
    w->call_hi = step_call[s0 + (size_t)n - 1] + 1;
    if (tail_end > w->call_hi)
        w->call_hi = tail_end;
    size_t ncalls = w->call_hi - w->call_lo;
    const sn_trace_call *last = &t->calls[w->call_hi - 1];
    w->acc_lo = t->calls[w->call_lo].acc_begin;
    size_t nacc = last->acc_begin + last->nacc - w->acc_lo;
    w->pos = malloc(sn_count((long)ncalls) * sizeof *w->pos);
    w->wr = malloc(sn_count((long)nacc) * sizeof *w->wr);
    w->single = calloc(sn_count(n), 1);
    int *lastw = malloc(sn_count((long)t->ntensors) * sizeof *lastw);
    if (!w->pos || !w->wr || !w->single || !lastw) {
        free(lastw);
        sn_win_free(w);
        return -1;
    }
    for (size_t i = 0; i < t->ntensors; i++)
        lastw[i] = -1;
    int p = 0;
    for (uint64_t k = w->call_lo; k < w->call_hi; k++) {
        while (p < n - 1 && step_call[s0 + (size_t)p] < k)
            p++;
        w->pos[k - w->call_lo] = p;
        const sn_trace_call *e = &t->calls[k];
        const sn_trace_access *a = sn_acc(t, e);
        int *wr = sn_wwr(w, e);
        for (int j = 0; j < e->nacc; j++)
            wr[j] = (a[j].mode & SN_ACC_SCRATCH) ? -1 : lastw[a[j].tensor];
        if (!sn_ok(e))
            continue;
        int is_step = (e->flags & SN_TC_STEP) != 0;
        int touched = 0;
        for (int j = 0; j < e->nacc; j++) {
            if (a[j].mode & SN_ACC_SCRATCH)
                continue;
            touched++;
            if (sn_changes(e, a[j].mode))
                lastw[a[j].tensor] = is_step ? p : -3 - p;
        }
        if (is_step && step_call[s0 + (size_t)p] == k)
            w->single[p] = touched == 1;
    }
    free(lastw);
    return 0;
}

/* Steps that only initialise a buffer: sets, and kernels given a single
 * buffer (a fill). */
static int sn_filler(const sn_win *w, int i)
{
    const sn_trace_call *e = sn_wstep(w, i);
    if (e->op == SN_OP_MEMSET || e->op == SN_OP_SET_TENSOR)
        return 1;
    return !sn_exact(e) && w->single[i];
}

/* A cuBLAS reduction whose result went to host memory. */
static int sn_host_reduction(const sn_trace *t, const sn_trace_call *e)
{
    if (e->op != SN_OP_DOT && e->op != SN_OP_ASUM && e->op != SN_OP_NRM2)
        return 0;
    const sn_trace_access *a = sn_acc(t, e);
    for (int j = 0; j < e->nacc; j++)
        if (a[j].mode & SN_ACC_W)
            return 0;
    return 1;
}

static int sn_cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The steps whose result the host reads: the writers of what a copy to the
 * host reads, and cuBLAS reductions into host memory. Sorted, unique. A
 * buffer the window also copies from the host is state the host keeps on
 * both sides, not a result: Caffe's batch normalisation scales its
 * moving-average factor on the host in every forward pass (a copy back
 * after the update's axpy wrote it), and its prefetch thread reads a batch
 * buffer back before refilling it (after the loss kernel touched the
 * labels). scratch holds a byte per trace tensor. */
static int sn_host_reads(const sn_win *w, int *out, char *scratch)
{
    const sn_trace *t = w->t;
    char *to_device = scratch;
    memset(to_device, 0, t->ntensors);
    for (uint64_t c = w->call_lo; c < w->call_hi; c++) {
        const sn_trace_call *e = &t->calls[c];
        if (sn_ok(e) && e->op == SN_OP_MEMCPY_H2D)
            for (int j = 0; j < e->nacc; j++)
                to_device[sn_acc(t, e)[j].tensor] = 1;
    }
    int k = 0;
    for (uint64_t c = w->call_lo; c < w->call_hi; c++) {
        const sn_trace_call *e = &t->calls[c];
        if (!sn_ok(e))
            continue;
        if (e->op == SN_OP_MEMCPY_D2H && (e->flags & SN_TC_TRANSFER)) {
            const sn_trace_access *a = sn_acc(t, e);
            const int *wr = sn_wwr(w, e);
            /* after the window's last step, only that step's result (what
             * the program reads back after training is not a loss) */
            int after = c > w->step_call[w->s0 + (size_t)w->n - 1];
            for (int j = 0; j < e->nacc; j++)
                if ((a[j].mode & SN_ACC_R) && wr[j] >= 0 && (!after || wr[j] == w->n - 1) &&
                    !to_device[a[j].tensor])
                    out[k++] = wr[j];
        } else if ((e->flags & SN_TC_STEP) && sn_host_reduction(t, e)) {
            out[k++] = w->pos[c - w->call_lo];
        }
    }
    qsort(out, (size_t)k, sizeof *out, sn_cmp_int);
    int u = 0;
    for (int i = 0; i < k; i++)
        if (!u || out[u - 1] != out[i])
            out[u++] = out[i];
    return u;
}

/* Without any result going to the host: the steps every value of which
 * nothing reads later (before it is overwritten), that use a value made
 * in the window; only where a whole period follows them. */
static int sn_sinks(const sn_win *w, int P, int *out)
{
    const sn_trace *t = w->t;
    char *read_later = calloc(sn_count(w->n), 1);
    int *valw = malloc(sn_count((long)t->ntensors) * sizeof *valw);
    char *wrote = calloc(sn_count(w->n), 1), *uses = calloc(sn_count(w->n), 1);
    int k = 0;
    if (!read_later || !valw || !wrote || !uses)
        goto done;
    for (size_t i = 0; i < t->ntensors; i++)
        valw[i] = -1;
    /* read_later[s]: some value s wrote is read afterwards */
    for (uint64_t c = w->call_lo; c < w->call_hi; c++) {
        const sn_trace_call *e = &t->calls[c];
        if (!sn_ok(e))
            continue;
        const sn_trace_access *a = sn_acc(t, e);
        const int *wr = sn_wwr(w, e);
        int p = w->pos[c - w->call_lo], is_step = (e->flags & SN_TC_STEP) != 0;
        for (int j = 0; j < e->nacc; j++) {
            if (!sn_uses(e, a[j].mode) || (a[j].mode & SN_ACC_SCRATCH))
                continue;
            if (valw[a[j].tensor] >= 0 && valw[a[j].tensor] != p)
                read_later[valw[a[j].tensor]] = 1;
            if (is_step && wr[j] >= 0)
                uses[p] = 1;
        }
        for (int j = 0; j < e->nacc; j++)
            if (sn_changes(e, a[j].mode)) {
                valw[a[j].tensor] = is_step ? p : -1;
                if (is_step)
                    wrote[p] = 1;
            }
    }
    for (int s = 0; s + P < w->n; s++)
        if (wrote[s] && uses[s] && !read_later[s] && sn_exact(sn_wstep(w, s)) && !sn_filler(w, s))
            out[k++] = s;
done:
    free(read_later);
    free(valw);
    free(wrote);
    free(uses);
    return k;
}

/* Without results for the host or values nobody reads: the turn of each
 * period from the mirror the backward pass makes of the forward pass. A
 * backward step reads the activation its layer's forward step produced,
 * so the pairs (producer, reader) of values read from far away are
 * centred on where the passes turn; the most common centre (modulo the
 * period) gives one turn per period, at the step before it. */
static int sn_mirror_turns(const sn_win *w, int P, int *out)
{
    const sn_trace *t = w->t;
    int *votes = calloc(sn_count(P), sizeof *votes);
    int k = 0;
    if (!votes)
        return 0;
    for (int r = 0; r < w->n; r++) {
        const sn_trace_call *e = sn_wstep(w, r);
        if (!sn_exact(e))
            continue;
        const sn_trace_access *a = sn_acc(t, e);
        const int *wr = sn_wwr(w, e);
        for (int j = 0; j < e->nacc; j++)
            if ((a[j].mode & SN_ACC_R) && !(a[j].mode & SN_ACC_SCRATCH) && wr[j] >= 0 && r - wr[j] >= 3)
                votes[((wr[j] + r) / 2) % P]++;
    }
    int best = 0;
    for (int i = 1; i < P; i++)
        if (votes[i] > votes[best])
            best = i;
    if (votes[best] > 0)
        for (int s = (best + P - 1) % P; s < w->n; s += P)
            out[k++] = s;
    free(votes);
    return k;
}

/* Marks in need[] the steps of (lo, hi] whose values reach step hi or a
 * candidate (need[] set on entry for them), through any use. */
static void sn_ancestors(const sn_win *w, int lo, int hi, char *need)
{
    for (int r = hi; r > lo; r--) {
        if (!need[r])
            continue;
        const sn_trace_call *e = sn_wstep(w, r);
        const sn_trace_access *a = sn_acc(w->t, e);
        const int *wr = sn_wwr(w, e);
        /* a write of part of a tensor (one input of a concatenation) keeps
         * what earlier writes put in the rest */
        for (int j = 0; j < e->nacc; j++)
            if ((sn_uses(e, a[j].mode) || (sn_changes(e, a[j].mode) && !(a[j].mode & SN_ACC_KILL))) &&
                wr[j] > lo && wr[j] < r)
                need[wr[j]] = 1;
        /* transfers at this position are not steps; their reads matter
         * only through the steps that wrote what they read */
    }
}

/* Whether the forward pass that ended at step T goes on to candidate c:
 * every step in (T, c] works toward a result the host reads there (the
 * loss after the accuracy, a reduction after the kernel it sums). */
static int sn_can_extend(const sn_win *w, int T, int c, const int *cand, int ncand, char *need)
{
    if (c <= T)
        return 0;
    for (int s = T + 1; s <= c; s++)
        need[s] = 0;
    for (int i = 0; i < ncand; i++)
        if (cand[i] > T && cand[i] <= c)
            need[cand[i]] = 1;
    sn_ancestors(w, T, c, need);
    for (int s = T + 1; s <= c; s++)
        if (!need[s])
            return 0;
    return 1;
}

/* Marks the tensors the forward pass [s, T] takes as inputs (1): those it
 * first uses without writing them first (weights, running statistics,
 * constants): the next pass, which ends at c, may read what an update did
 * to them. A tensor a kernel touches first counts only if no exact call
 * writes it before c: a buffer the program fills with computed values (a
 * loss kernel's scratch space) is not an input. Every other tensor the
 * pass touches is marked 2; a copy from the host alone does not make a
 * touch (a prefetch thread's copy of a later batch may land anywhere). */
static void sn_pass_inputs(const sn_win *w, int s, int T, int c, char *input, char *seen)
{
    const sn_trace *t = w->t;
    memset(input, 0, t->ntensors);
    memset(seen, 0, t->ntensors);
    if (T < s)
        return;
    uint64_t c0 = s > 0 ? w->step_call[w->s0 + (size_t)s - 1] + 1 : w->call_lo;
    uint64_t c1 = w->step_call[w->s0 + (size_t)T];
    for (uint64_t k = c0; k <= c1; k++) {
        const sn_trace_call *e = &t->calls[k];
        if (!sn_ok(e))
            continue;
        int p = w->pos[k - w->call_lo];
        int is_step = (e->flags & SN_TC_STEP) && w->step_call[w->s0 + (size_t)p] == k;
        int fill = is_step && sn_filler(w, p);
        const sn_trace_access *a = sn_acc(t, e);
        int from_host = e->op == SN_OP_MEMCPY_H2D;
        for (int j = 0; j < e->nacc; j++) {
            uint32_t x = a[j].tensor;
            if (a[j].mode & SN_ACC_SCRATCH)
                continue;
            if (from_host) {
                /* a copy from the host alone is not the pass's touch: a
                 * prefetch thread fills the next batch's buffer whenever
                 * it runs, inside this pass or not (2: written so, so far) */
                if (!seen[x])
                    seen[x] = 2;
                continue;
            }
            if (seen[x] != 1) {
                /* 2: used first (by an exact read); 4: touched first by a
                 * kernel; 0: written first (by a copy from the host too) */
                int copied = seen[x] == 2;
                seen[x] = 1;
                input[x] = fill || copied ? 0 : !sn_exact(e) ? 4 : (a[j].mode & SN_ACC_R) ? 2 : 0;
            }
            if ((input[x] & 6) && is_step && sn_uses(e, a[j].mode))
                input[x] |= 1;
        }
    }
    for (int r = s; r < c; r++) {
        const sn_trace_call *e = sn_wstep(w, r);
        if (!sn_exact(e))
            continue;
        const sn_trace_access *a = sn_acc(t, e);
        for (int j = 0; j < e->nacc; j++)
            if ((input[a[j].tensor] & 4) && (a[j].mode & SN_ACC_W))
                input[a[j].tensor] = 0;
    }
    for (size_t x = 0; x < t->ntensors; x++)
        input[x] = (input[x] & 1) && (input[x] & 6) ? 1 : seen[x] == 1 ? 2 : 0;
}

/* Scratch of sn_pass_start, kept by sn_find_passes across the passes:
 * per window step, whether it leads to the result (need); per trace
 * tensor, the previous pass's marks from sn_pass_inputs (input) and that
 * function's own scratch (seen). */
typedef struct sn_pass_scratch {
    char *need, *input, *seen;
    const char *computed; /* per trace tensor: sn_computed_tensors */
} sn_pass_scratch;

/* Whether a step in [from, to) reads tensor x (a copy at position from
 * lands before that position's step). */
static int sn_read_between(const sn_win *w, uint32_t x, int from, int to)
{
    for (int r = from; r < to; r++) {
        const sn_trace_call *e = sn_wstep(w, r);
        const sn_trace_access *a = sn_acc(w->t, e);
        for (int j = 0; j < e->nacc; j++)
            if (a[j].tensor == x && sn_uses(e, a[j].mode))
                return 1;
    }
    return 0;
}

/* Whether a copy from the host writes tensor x after step r, up to step c. */
static int sn_copied_between(const sn_win *w, uint32_t x, int r, int c)
{
    for (uint64_t k = w->step_call[w->s0 + (size_t)r] + 1; k <= w->step_call[w->s0 + (size_t)c]; k++) {
        const sn_trace_call *e = &w->t->calls[k];
        if (e->op != SN_OP_MEMCPY_H2D || !sn_ok(e))
            continue;
        for (int j = 0; j < e->nacc; j++)
            if (sn_acc(w->t, e)[j].tensor == x)
                return 1;
    }
    return 0;
}

/* Whether a step of a later iteration (a period P or more after r) reads
 * tensor x again with no copy from the host landing in between: a constant
 * the program set up once (Caffe's Scale layer's vector of ones, read only
 * by its backward pass), not a batch that arrived, which the host refills
 * before its buffer is read in another iteration (the same iteration's
 * backward pass may read it again: a convolution's filter gradient). */
static int sn_read_again_uncopied(const sn_win *w, uint32_t x, int r, int P)
{
    for (int s = r + P; s < w->n; s++) {
        const sn_trace_call *e = sn_wstep(w, s);
        const sn_trace_access *a = sn_acc(w->t, e);
        for (int j = 0; j < e->nacc; j++)
            if (a[j].tensor == x && sn_uses(e, a[j].mode))
                return !sn_copied_between(w, x, r, s);
    }
    return 0;
}

/* Where a forward pass ending at c begins when nothing is known about the
 * one before it, other than that it ended before lo: at the last arrival
 * of data in [lo, c] used on the way to c (a copy from the host, or a
 * device copy of what came from outside the window's computation). With
 * none, at lo when anyway is set, else -1. */
enum { SN_ARRIVAL_ANYWAY = 1, SN_ARRIVAL_EARLIEST = 2 };

static int sn_data_arrival(const sn_win *w, int lo, int c, int P, unsigned how, const sn_pass_scratch *sc)
{
    int anyway = (how & SN_ARRIVAL_ANYWAY) != 0, earliest = (how & SN_ARRIVAL_EARLIEST) != 0;
    char *need = sc->need;
    const char *computed = sc->computed;
    const sn_trace *t = w->t;
    for (int r = 0; r <= c; r++)
        need[r] = 0;
    need[c] = 1;
    sn_ancestors(w, lo - 1, c, need);
    int best = -1;
    for (uint64_t k = w->call_lo; k <= w->step_call[w->s0 + (size_t)c]; k++) {
        const sn_trace_call *e = &t->calls[k];
        int p = w->pos[k - w->call_lo];
        if (!sn_ok(e) || p > c || p < lo)
            continue;
        if ((e->flags & SN_TC_STEP) && sn_is_copy(e->op) && need[p] && (earliest ? best < 0 : p > best)) {
            /* a copy of what came from outside the window's computation */
            const sn_trace_access *a = sn_acc(t, e);
            const int *wr = sn_wwr(w, e);
            int outside = 1;
            for (int j = 0; j < e->nacc; j++)
                if ((a[j].mode & SN_ACC_R) && wr[j] >= 0)
                    outside = 0;
            if (outside)
                best = p;
        }
        if (e->op != SN_OP_MEMCPY_H2D)
            continue;
        /* a step leading to c that reads what this copy wrote */
        const sn_trace_access *a = sn_acc(t, e);
        for (int r = p; r <= c; r++) {
            if (!need[r])
                continue;
            const sn_trace_call *er = sn_wstep(w, r);
            const sn_trace_access *ar = sn_acc(t, er);
            const int *wr = sn_wwr(w, er);
            int uses = 0;
            for (int j = 0; j < er->nacc && !uses; j++)
                for (int i = 0; i < e->nacc; i++)
                    if (ar[j].tensor == a[i].tensor && wr[j] == -3 - p && sn_uses(er, ar[j].mode))
                        uses = 1;
            if (uses) {
                if (earliest ? best < 0 : p > best)
                    best = p;
                break;
            }
        }
    }
    /* data a prefetch thread copied before lo (Caffe's Data layer hands
     * its forward pass a buffer filled on another stream iterations ago,
     * maybe before the window began):
     * the pass begins at the first step on the way to c that reads it for
     * the first time since it arrived (the backward pass before reads the
     * previous batch, which its forward pass read already) and before
     * the host refills it (one buffer for every batch: the backward pass
     * read the last batch, and the next arrives in the same buffer) */
    for (int r = lo; earliest && r <= c && (best < 0 || r < best); r++) {
        const sn_trace_call *e = sn_wstep(w, r);
        if (!need[r] || !sn_exact(e))
            continue;
        const sn_trace_access *a = sn_acc(t, e);
        const int *wr = sn_wwr(w, e);
        for (int j = 0; j < e->nacc && best != r; j++) {
            /* copied before lo, or before the window began, and never
             * written by a step (not a weight, whatever wrote it last) */
            int at = wr[j] == -1 ? 0 : wr[j] <= -3 ? -3 - wr[j] : lo;
            if ((a[j].mode & SN_ACC_R) && !(a[j].mode & SN_ACC_SCRATCH) && at < lo &&
                !computed[a[j].tensor] && !sn_read_between(w, a[j].tensor, at, r) &&
                !sn_copied_between(w, a[j].tensor, r, c) && !sn_read_again_uncopied(w, a[j].tensor, r, P))
                best = r;
        }
    }
    if (best < 0)
        return anyway ? lo : -1;
    /* data arrives by a few copies in a row (images, labels) */
    while (best > lo) {
        const sn_trace_call *e = sn_wstep(w, best - 1);
        const sn_trace_access *a = sn_acc(t, e);
        const int *wr = sn_wwr(w, e);
        int outside = sn_is_copy(e->op) && need[best - 1];
        for (int j = 0; j < e->nacc && outside; j++)
            if ((a[j].mode & SN_ACC_R) && wr[j] >= 0)
                outside = 0;
        if (!outside)
            break;
        best--;
    }
    return best;
}


/* Where a forward pass ending at c begins, the previous one having begun
 * at s_prev and ended at T_prev (-1: none known): the first position q
 * after T_prev from which no step up to c uses a value made at or after
 * s_prev and before q, other than the previous pass's inputs (an update
 * writes the weights the next pass reads, a pass updates its running
 * statistics in place). Uses are exact reads (in place too) and kernels'
 * accesses; fills use nothing. Leading
 * exact steps that do not lead to c (clearing gradients for the backward
 * pass) are left before it. The pass must hold an exact step. Returns -1
 * when there is no such q. */
static int sn_pass_start(const sn_win *w, int s_prev, int T_prev, int c, const sn_pass_scratch *sc)
{
    char *need = sc->need, *input = sc->input, *seen = sc->seen;
    sn_pass_inputs(w, s_prev, T_prev, c, input, seen);
    int lo = T_prev + 1, best = -1;
    int mn = w->n; /* min over [q, c] of the earliest writer a step there depends on */
    for (int q = c; q >= lo; q--) {
        const sn_trace_call *e = sn_wstep(w, q);
        if (!sn_filler(w, q)) {
            const sn_trace_access *a = sn_acc(w->t, e);
            const int *wr = sn_wwr(w, e);
            for (int j = 0; j < e->nacc; j++) {
                /* a kernel's touch is taken as a use only of what the
                 * previous forward pass did not touch (gradients, optimizer
                 * state): of a buffer it did, it may as well be a write.
                 * What a copy from the host brought counts only when the
                 * previous forward pass used it (its batch), not when it is
                 * the next batch arriving early. */
                int at = wr[j];
                uint32_t x = a[j].tensor;
                if (at <= -3)
                    at = input[x] == 2 ? -3 - at : -1;
                if (at < s_prev || at >= mn || input[x] == 1 || (a[j].mode & SN_ACC_SCRATCH) ||
                    (!sn_exact(e) && input[x] == 2))
                    continue;
                if (sn_uses(e, a[j].mode))
                    mn = at;
            }
        }
        if (q <= mn)
            best = q;
    }
    if (best < 0)
        return -1;
    for (int s = best; s <= c; s++)
        need[s] = 0;
    need[c] = 1;
    sn_ancestors(w, best - 1, c, need);
    /* where the pass's data arrives: the first copy from the host that a
     * step leading to c reads */
    int arrival = c;
    for (uint64_t k = best > 0 ? w->step_call[w->s0 + (size_t)best - 1] + 1 : w->call_lo;
         k < w->step_call[w->s0 + (size_t)c] && arrival == c; k++) {
        const sn_trace_call *e = &w->t->calls[k];
        if (e->op != SN_OP_MEMCPY_H2D || !sn_ok(e))
            continue;
        int p = w->pos[k - w->call_lo];
        for (int r = p; r <= c && arrival == c; r++) {
            if (!need[r])
                continue;
            const sn_trace_call *er = sn_wstep(w, r);
            const int *wr = sn_wwr(w, er);
            for (int j = 0; j < er->nacc; j++)
                if (wr[j] == -3 - p) {
                    arrival = p;
                    break;
                }
        }
    }
    int q = best;
    while (q < arrival && !need[q] && (sn_exact(sn_wstep(w, q)) || sn_filler(w, q)))
        q++;
    int exact = 0;
    for (int s = q; s <= c && !exact; s++)
        exact = sn_exact(sn_wstep(w, s));
    return exact ? q : -1;
}

/* Whether the forward pass [s, T] goes on to the result read at c rather
 * than a new pass beginning after T: every step in (T, c] other than a
 * fill works toward c, the pass stays shorter than a period, and no exact
 * step in (T, c] reads a computed value from outside the pass: nothing a
 * step before s wrote (the weights an update wrote, a batch normalisation's
 * running statistics), nothing computed before the window (computed[]: some
 * step other than a fill writes the tensor somewhere in the log). A new
 * forward pass reads its weights; the rest of a loss reads only the pass's
 * own values, constants and what the host sends back of its earlier reads
 * (Caffe's loss layer: its kernel, the asum of the per-image losses read by
 * the host, the loss value copied back for a dot with the loss weight). Kernels'
 * touches are not reads here: they may as well be writes. */
static int sn_continues(const sn_win *w, int s, int T, int c, int P, const sn_pass_scratch *sc)
{
    char *need = sc->need;
    const char *computed = sc->computed;
    if (c <= T || c - s >= P)
        return 0;
    for (int r = T + 1; r <= c; r++)
        need[r] = 0;
    need[c] = 1;
    sn_ancestors(w, T, c, need);
    for (int r = T + 1; r <= c; r++) {
        if (!need[r] && !sn_filler(w, r))
            return 0;
        const sn_trace_call *e = sn_wstep(w, r);
        if (!sn_exact(e))
            continue;
        const sn_trace_access *a = sn_acc(w->t, e);
        const int *wr = sn_wwr(w, e);
        for (int j = 0; j < e->nacc; j++) {
            if (!(a[j].mode & SN_ACC_R) || (a[j].mode & SN_ACC_SCRATCH))
                continue;
            if ((wr[j] >= 0 && wr[j] < s) || (wr[j] == -1 && computed[a[j].tensor]))
                return 0;
        }
    }
    return 1;
}

/* Per trace tensor, whether some step other than a fill writes it in the
 * log: a computed value, not a constant the host sent. */
static void sn_computed_tensors(const sn_win *w, char *computed)
{
    const sn_trace *t = w->t;
    memset(computed, 0, t->ntensors);
    for (size_t k = 0; k < w->s0 + (size_t)w->n; k++) {
        const sn_trace_call *e = &t->calls[w->step_call[k]];
        if (!sn_ok(e) || sn_is_copy(e->op) || e->op == SN_OP_MEMSET || e->op == SN_OP_SET_TENSOR)
            continue;
        const sn_trace_access *a = sn_acc(t, e);
        int single = 0;
        for (int j = 0; j < e->nacc; j++)
            single += !(a[j].mode & SN_ACC_SCRATCH);
        if (!sn_exact(e) && single == 1)
            continue;
        for (int j = 0; j < e->nacc; j++)
            if (sn_changes(e, a[j].mode))
                computed[a[j].tensor] = 1;
    }
}

/* A forward pass and what follows it, in window positions. */
typedef struct sn_wpass {
    int start, turn, bwd_end, end, training;
} sn_wpass;

/* Per trace tensor, whether it holds batches the host sends (1): only
 * copies from the host write it in the log, and one writes it again after
 * a step read it (refilled once consumed: a buffer Caffe's prefetch thread
 * fills iterations before the pass that reads it). A constant the host set
 * up once, or anything a call on the device writes, is not. NULL when out
 * of memory. */
enum { SN_HB_COPIED = 1, SN_HB_COMPUTED = 2, SN_HB_READ = 4, SN_HB_REFILLED = 8 };

static char *sn_host_batches(const sn_trace *t)
{
    char *by = calloc(sn_count((long)t->ntensors), 1);
    if (!by)
        return NULL;
    for (uint64_t k = t->log_begin; k < t->ncalls; k++) {
        const sn_trace_call *e = &t->calls[k];
        if (!sn_ok(e))
            continue;
        const sn_trace_access *a = sn_acc(t, e);
        for (int j = 0; j < e->nacc; j++) {
            char *x = &by[a[j].tensor];
            if ((a[j].mode & SN_ACC_R) && (e->flags & SN_TC_STEP))
                *x |= SN_HB_READ;
            if (!(a[j].mode & SN_ACC_W))
                continue;
            if (e->op != SN_OP_MEMCPY_H2D)
                *x |= SN_HB_COMPUTED;
            else
                *x |= SN_HB_COPIED | (*x & SN_HB_READ ? SN_HB_REFILLED : 0);
        }
    }
    for (size_t i = 0; i < t->ntensors; i++)
        by[i] = (by[i] & (SN_HB_COPIED | SN_HB_COMPUTED | SN_HB_REFILLED)) == (SN_HB_COPIED | SN_HB_REFILLED);
    return by;
}

/* Tensors the forward pass [start, turn] produces (marked 1): those it
 * first touches by writing them: a copy from the host, an exact write
 * that does not read, or a step that only initialises a buffer; and the
 * batches the host sent ahead that it reads (batch[], sn_host_batches). */
static void sn_pass_values(const sn_win *w, int start, int turn, const char *batch, char *mark, char *seen)
{
    const sn_trace *t = w->t;
    memset(mark, 0, t->ntensors);
    memset(seen, 0, t->ntensors);
    uint64_t c0 = start > 0 ? w->step_call[w->s0 + (size_t)start - 1] + 1 : w->call_lo;
    uint64_t c1 = w->step_call[w->s0 + (size_t)turn];
    for (uint64_t c = c0; c <= c1; c++) {
        const sn_trace_call *e = &t->calls[c];
        if (!sn_ok(e))
            continue;
        int p = w->pos[c - w->call_lo];
        int fill = (e->flags & SN_TC_STEP) && w->step_call[w->s0 + (size_t)p] == c && sn_filler(w, p);
        const sn_trace_access *a = sn_acc(t, e);
        for (int j = 0; j < e->nacc; j++) {
            uint32_t x = a[j].tensor;
            if ((a[j].mode & SN_ACC_SCRATCH) || seen[x])
                continue;
            seen[x] = 1;
            if (fill || (sn_exact(e) && (a[j].mode & SN_ACC_W) && !(a[j].mode & SN_ACC_R)))
                mark[x] = 1;
            /* a batch the host sent before the pass (Caffe's prefetch
             * thread, iterations ahead): only copies from the host write
             * it, and the pass's backward steps read it too (a filter's
             * gradient) */
            else if (batch && batch[x] && (a[j].mode & SN_ACC_R) && e->op != SN_OP_MEMCPY_D2H)
                mark[x] = 1;
        }
    }
}

/* The passes of the window: forward passes ending where a result reaches
 * the host, each with its backward pass and update. Returns their number
 * (in out[], which holds w->n entries), -1 when out of memory. */
static int sn_find_passes(const sn_win *w, int P, sn_wpass *out)
{
    const sn_trace *t = w->t;
    int *cand = malloc(sn_count((long)(w->call_hi - w->call_lo)) * sizeof *cand);
    char *need = malloc(sn_count(w->n));
    char *mark = malloc(sn_count((long)t->ntensors)), *seen = malloc(sn_count((long)t->ntensors));
    char *computed = malloc(sn_count((long)t->ntensors));
    char *batch = NULL;
    int np = -1;
    if (!cand || !need || !mark || !seen || !computed)
        goto done;
    sn_computed_tensors(w, computed);
    int ncand = sn_host_reads(w, cand, mark);
    if (ncand == 0)
        ncand = sn_sinks(w, P, cand);
    if (ncand == 0)
        ncand = sn_mirror_turns(w, P, cand);
    for (int i = 0; i < ncand; i++)
        sn_debug("device %d: result read by the host at step %d (%s)", t->dev, cand[i],
                 sn_op_name(sn_wstep(w, cand[i])->op));
    np = 0;
    int cur_start = 0, cur_turn = -1, after_tail = 0;
    const sn_pass_scratch sc = {need, mark, seen, computed};
    /* the window may begin in the middle of a pass: the first pass found
     * ends at a later result the host reads and begins where its data
     * arrives after the result before (or, when no data arrives by copy at
     * all, right after it) */
    for (int i = 1, anyway = 0; i < ncand; i++) {
        int c = cand[i];
        if (cur_turn >= 0 && sn_continues(w, cur_start, cur_turn, c, P, &sc)) {
            cur_turn = c;
            continue;
        }
        /* the rest of a loss whose forward pass began before the window
         * (or before the result read at cand[i - 1]) is no pass's end; the
         * next pass then begins after that iteration's backward pass and
         * update, with the first of its data to arrive (a framework may
         * send constants again later in the pass: Caffe's inner products
         * their bias multipliers) */
        if (cur_turn < 0 && sn_continues(w, cand[i - 1], cand[i - 1], c, P, &sc)) {
            after_tail = 1;
            continue;
        }
        int q = cur_turn >= 0 ? sn_pass_start(w, cur_start, cur_turn, c, &sc)
                              : sn_data_arrival(w, cand[i - 1] + 1, c, P,
                                                (anyway ? SN_ARRIVAL_ANYWAY : 0u) |
                                                    (after_tail ? SN_ARRIVAL_EARLIEST : 0u),
                                                &sc);
        if (cur_turn < 0 && q < 0 && i + 1 == ncand && !anyway) {
            anyway = 1;
            i = 0;
            continue;
        }
        if (q < 0) {
            if (cur_turn >= 0 && sn_can_extend(w, cur_turn, c, cand, ncand, need))
                cur_turn = c;
            continue;
        }
        if (cur_turn >= 0)
            out[np++] = (sn_wpass){cur_start, cur_turn, 0, 0, 0};
        cur_start = q;
        cur_turn = c;
    }
    if (cur_turn >= 0)
        out[np++] = (sn_wpass){cur_start, cur_turn, 0, 0, 0};
    batch = sn_host_batches(t);
    for (int k = 0; k < np; k++) {
        sn_wpass *p = &out[k];
        p->end = k + 1 < np ? out[k + 1].start : w->n;
        if (k + 1 == np && p->end > p->start + P)
            p->end = p->start + P;
        /* the backward pass runs to the last step touching a value the
         * forward pass produced */
        sn_pass_values(w, p->start, p->turn, batch, mark, seen);
        int last = p->turn;
        for (int s = p->turn + 1; s < p->end; s++) {
            const sn_trace_call *e = sn_wstep(w, s);
            const sn_trace_access *a = sn_acc(t, e);
            for (int j = 0; j < e->nacc && last < s; j++)
                if (!(a[j].mode & SN_ACC_SCRATCH) && mark[a[j].tensor])
                    last = s;
        }
        p->bwd_end = last + 1;
        p->training = p->bwd_end > p->turn + 1;
    }
done:
    free(batch);
    free(computed);
    free(cand);
    free(need);
    free(mark);
    free(seen);
    return np;
}

/* The pass the iteration begins with: a training pass that is the first
 * of its update (the pass before it, or the last training pass before a
 * run of evaluation passes, ended with an update) and that comes again a
 * period later in the window, preferring one after the most evaluation
 * passes, then the latest; else the latest training pass. Iterations that
 * would leave the window are not candidates.
 * Returns its index, -1 when none. */
static int sn_pick_first_pass(const sn_wpass *p, int np, int P, int lo, int n)
{
    int best = -1, best_evals = -1;
    for (int k = 1; k < np; k++) {
        if (!p[k].training || p[k].start < lo || p[k].start + P > n)
            continue;
        /* every pass of the iteration needs the one after it, to know
         * where its update ends: the same pass one period later */
        int again = 0;
        for (int j = k + 1; j < np && !again; j++)
            again = p[j].start == p[k].start + P;
        if (!again)
            continue;
        int evals = 0, ok = 0;
        for (int j = k - 1; j >= 0; j--) {
            if (p[j].bwd_end < p[j].end) {
                ok = 1;
                break;
            }
            if (p[j].training)
                break;
            evals++;
        }
        if (!ok)
            continue;
        if (evals > best_evals || (evals == best_evals && p[k].start > p[best].start)) {
            best = k;
            best_evals = evals;
        }
    }
    /* else the latest one the next pass follows, else the latest */
    for (int k = np - 1; k >= 0 && best < 0; k--)
        if (p[k].training && p[k].start >= lo && p[k].start + P <= n && k + 1 < np &&
            p[k + 1].start <= p[k].start + P)
            best = k;
    if (best < 0)
        for (int k = 0; k < np; k++)
            if (p[k].training && p[k].start >= lo && p[k].start + P <= n)
                best = k;
    return best;
}

/* ---- locating the iteration ------------------------------------------------------------ */

/* Where the iteration is in the recorded log. */
typedef struct sn_where {
    sn_period per;
    size_t base;            /* step index where the representative iteration starts */
    size_t iterations;      /* complete ones in the log, a differing first one included */
    int first_differs;
    sn_model_pass *passes;  /* the iteration's passes, iteration positions (caller frees) */
    int npasses;
} sn_where;

/* Whether the steps [from, from + P) hold a forward-only and a
 * backward-only cuDNN call: evidence of training, not a block repeated
 * inside one pass (the layers of a single forward pass). */
static int sn_forward_and_backward(const sn_ctx *c, size_t from, size_t P)
{
    int f = 0, b = 0;
    for (size_t i = from; i < from + P; i++) {
        char ph = sn_op_phase[c->t->calls[c->step_call[i]].op];
        f |= ph == 'F';
        b |= ph == 'B';
    }
    return f && b;
}

/* Lists the log's successful steps from log_begin (c->step_call, c->n) and
 * finds the iteration: a period with a complete training pass (forward and
 * backward) repeated at least twice, cut where its first training pass
 * begins.
 * Returns 1 when found (c->P, c->base, w set), 0 when not, -1 when out of
 * memory. */
static int sn_locate(sn_ctx *c, sn_where *w)
{
    const sn_trace *t = c->t;
    memset(w, 0, sizeof *w);
    size_t nsteps = 0;
    for (size_t i = t->log_begin; i < t->ncalls; i++)
        nsteps += (t->calls[i].flags & (SN_TC_STEP | SN_TC_FAILED)) == SN_TC_STEP;
    c->step_call = malloc(sn_count((long)nsteps) * sizeof *c->step_call);
    uint64_t *sig = malloc(sn_count((long)nsteps) * sizeof *sig);
    if (!c->step_call || !sig) {
        free(sig);
        return -1;
    }
    c->n = 0;
    for (size_t i = t->log_begin; i < t->ncalls; i++) {
        const sn_trace_call *e = &t->calls[i];
        if ((e->flags & SN_TC_STEP) && !(e->flags & SN_TC_FAILED)) {
            sig[c->n] = e->sig;
            c->step_call[c->n++] = i;
        }
    }
    sn_period *per = &w->per;
    sn_period_find(sig, c->n, 2, 256, per);
    free(sig);
    if (!per->found || per->period < 2)
        return 0;
    size_t P = c->P = per->period;
    if (!sn_forward_and_backward(c, per->end - P, P))
        return 0;
    /* a window of up to four periods ending with the periodic part (and
     * reaching before it into a first iteration that differs: its data
     * flow is as good), with the copies to the host right after its last
     * step. Four: the log may end anywhere in an iteration, and the pass
     * the iteration begins with needs a pass before it and its repeat a
     * period later, all whole (with three, a short iteration cut at the
     * wrong phase left no such pass) */
    size_t wl = per->end < 4 * P ? per->end : 4 * P;
    size_t w0 = per->end - wl;
    sn_win win;
    if (sn_win_init(&win, t, c->step_call, w0, (int)wl, per->end < c->n ? c->step_call[per->end] : t->ncalls) != 0)
        return -1;
    sn_wpass *wp = malloc(sn_count((long)wl) * sizeof *wp);
    if (!wp) {
        sn_win_free(&win);
        return -1;
    }
    int np = sn_find_passes(&win, (int)P, wp);
    int k = np > 0 ? sn_pick_first_pass(wp, np, (int)P, (int)(per->start > w0 ? per->start - w0 : 0), (int)wl) : -1;
    for (int i = 0; i < np; i++)
        sn_debug("device %d: pass at %d: forward %d-%d, backward to %d, update to %d%s", t->dev, i, wp[i].start,
                 wp[i].turn, wp[i].bwd_end, wp[i].end, i == k ? " (the iteration begins here)" : "");
    if (np < 0) {
        free(wp);
        sn_win_free(&win);
        return -1;
    }
    if (k < 0) {
        free(wp);
        sn_win_free(&win);
        return 0;
    }
    /* the iteration's passes, in iteration positions */
    int b = wp[k].start;
    w->passes = malloc(sn_count(np) * sizeof *w->passes);
    if (!w->passes) {
        free(wp);
        sn_win_free(&win);
        return -1;
    }
    for (int j = k; j < np && wp[j].start < b + (int)P; j++) {
        /* (clipped to the iteration: a pass repeats a period later, but
         * the model never reads past the iteration's steps) */
        sn_model_pass *q = &w->passes[w->npasses++];
        q->first = wp[j].start - b;
        q->turn = wp[j].turn - b < (int)P ? wp[j].turn - b : (int)P - 1;
        q->end = (wp[j].end > b + (int)P ? b + (int)P : wp[j].end) - b;
        q->bwd_end = wp[j].bwd_end - b < q->end ? wp[j].bwd_end - b : q->end;
        if (q->bwd_end <= q->turn)
            q->bwd_end = q->turn + 1 < q->end ? q->turn + 1 : q->end;
        q->training = wp[j].training;
    }
    /* the last pass's update runs to the end of the iteration */
    w->passes[w->npasses - 1].end = (int)P;
    free(wp);
    sn_win_free(&win);
    size_t base = w0 + (size_t)b;
    if (base < per->start || base + P > per->end)
        return 0;
    c->base = w->base = base;
    size_t first_boundary = per->start + (base - per->start) % P;
    w->iterations = (per->end - first_boundary) / P;
    for (size_t i = 0; i < first_boundary; i++)
        if (sn_op_phase[t->calls[c->step_call[i]].op] == 'F') {
            w->first_differs = 1;
            w->iterations++;
            break;
        }
    return 1;
}

int sn_model_follow(sn_trace *t)
{
    sn_ctx c = {.t = t};
    sn_where w;
    int rc = sn_locate(&c, &w);
    uint64_t *sig = rc == 1 ? malloc(c.P * sizeof *sig) : NULL;
    if (sig) {
        for (size_t s = 0; s < c.P; s++)
            sig[s] = t->calls[c.step_call[c.base + s]].sig;
        /* The log ends inside the periodic part, normally: the next step
         * is the one after it. After a few odd steps, wait for the next
         * iteration's first. */
        int synced = w.per.end == c.n;
        rc = sn_trace_follow(t, sig, c.P, synced ? (c.n - c.base) % c.P : 0, synced, w.iterations);
    } else {
        rc = -1;
    }
    free(sig);
    free(w.passes);
    free(c.step_call);
    return rc;
}

/* ---- the model ------------------------------------------------------------------------ */

void sn_model_free(sn_model *m)
{
    free(m->steps);
    free(m->passes);
    free(m->layers);
    free(m->edge_layer);
    free(m->tensors);
    memset(m, 0, sizeof *m);
}

/* Totals of the whole run come from the trace's running statistics: the
 * log may hold only its beginning. */
static void sn_model_totals(const sn_trace *t, sn_model *m)
{
    m->dev = t->dev;
    m->ncalls = t->run.calls;
    m->nsteps_total = t->run.steps;
    m->ntransfers = t->run.transfers;
    m->recorded_calls = t->ncalls;
    m->log_state = t->state;
    m->failed_calls = t->run.failed;
    m->off_sequence = t->run.off_sequence;
    m->opaque_calls = t->run.opaque;
    m->peak_asis = t->peak_bytes;
    m->live_bytes = t->live_bytes;
    m->unknown_ranges = t->unknown_ranges;
    for (int o = 0; o < SN_OWNER_COUNT; o++) {
        m->alloc_count[o] = t->run.alloc_count[o];
        m->alloc_bytes[o] = t->run.alloc_bytes[o];
    }
}

int sn_model_phase_of_step(const sn_model *m, size_t k)
{
    if (!m->found || k < m->periodic_begin || k >= m->periodic_end || !m->period)
        return -1;
    size_t s = (k + m->period - m->first_index % m->period) % m->period;
    return m->steps[s].phase;
}

/* State of the model build shared by its stages. */
typedef struct sn_build {
    sn_ctx *c;
    sn_model *m;
    const sn_trace *t;
    sn_win w;                  /* the iteration, positions 0..P-1 */
    int P;
    int *layer_of;             /* per step: layer (forward and backward) */
    char *is_weight;           /* per trace tensor: written by the update, read by a forward pass */
    char *upd_touch;           /* per trace tensor: touched by an update step */
    int *owner;                /* per trace tensor: layer owning it, -1 */
    int *producer;             /* per trace tensor: layer whose forward step produced it last */
    char *conv_out;            /* per trace tensor: a convolution produced it first */
    char *host_batch;          /* per trace tensor: sn_host_batches (NULL: none known) */
    int ref;                   /* index of the reference pass (the first training pass) */
    int data_layer;
    int cap_layers;
} sn_build;

static int sn_add_layer(sn_build *b, int cls, int first, uint64_t call)
{
    sn_model *m = b->m;
    if (m->nlayers == b->cap_layers) {
        int cap = b->cap_layers ? b->cap_layers * 2 : 64;
        sn_model_layer *l = realloc(m->layers, (size_t)cap * sizeof *l);
        if (!l)
            return -1;
        m->layers = l;
        b->cap_layers = cap;
    }
    sn_model_layer *l = &m->layers[m->nlayers];
    memset(l, 0, sizeof *l);
    l->cls = cls;
    l->first = l->last = first;
    l->bwd_first = l->bwd_last = -1;
    l->main_call = call;
    l->out_tensor = -1;
    return m->nlayers++;
}

/* Where call c of the window stands: *pos is the step position it belongs
 * to; the result says whether c is that step's own call (a compute step)
 * rather than a transfer logged beside it. */
static int sn_call_step(const sn_build *b, uint64_t c, int *pos)
{
    *pos = b->w.pos[c - b->w.call_lo];
    return (b->t->calls[c].flags & SN_TC_STEP) && b->w.step_call[b->w.s0 + (size_t)*pos] == c;
}

/* Whether the step at position p reads, exactly, both tensor x and a
 * weight. */
static int sn_reads_with_weight(const sn_build *b, int p, uint32_t x)
{
    const sn_trace_call *e = sn_wstep(&b->w, p);
    if (!sn_exact(e))
        return 0;
    const sn_trace_access *a = sn_acc(b->t, e);
    int reads_x = 0, weight = 0;
    for (int j = 0; j < e->nacc; j++) {
        if (!(a[j].mode & SN_ACC_R) || (a[j].mode & SN_ACC_SCRATCH))
            continue;
        reads_x |= a[j].tensor == x;
        weight |= b->is_weight[a[j].tensor] != 0;
    }
    return reads_x && weight;
}

/* The layer a call of the forward pass belongs to: a step's own; a copy
 * from the host, the data layer's, unless it lands inside a layer that
 * has already begun, just before a step reading it with a weight: a
 * constant the framework sends again before the step that uses it
 * (Caffe's inner product sets its bias multiplier on the host at every
 * reshape and copies it before the GEMM adding the bias), which is that
 * layer's, like its weights, not an input from the data. (Caffe's labels
 * too arrive inside the loss layer, read by its kernel: data.) */
static int sn_call_layer(const sn_build *b, uint64_t c, int *pos)
{
    int is_step = sn_call_step(b, c, pos);
    if (is_step)
        return b->layer_of[*pos];
    int l = *pos >= 0 && *pos < b->P ? b->layer_of[*pos] : -1;
    const sn_trace_call *e = &b->t->calls[c];
    if (l >= 0 && l != b->data_layer && b->m->layers[l].first < *pos && e->op == SN_OP_MEMCPY_H2D &&
        e->nacc > 0 && sn_reads_with_weight(b, *pos, sn_acc(b->t, e)[0].tensor))
        return l;
    return b->data_layer;
}

/* The first call of a step's position (transfers before it included). */
static uint64_t sn_first_call_at(const sn_build *b, int s)
{
    return s > 0 ? b->w.step_call[b->w.s0 + (size_t)s - 1] + 1 : b->w.call_lo;
}

/* Weights: tensors an update step changes and a forward step uses. */
static void sn_find_weights(sn_build *b)
{
    const sn_trace *t = b->t;
    sn_model *m = b->m;
    char *fwd = calloc(sn_count((long)t->ntensors), 1);
    if (!fwd)
        return;
    for (int s = 0; s < b->P; s++) {
        const sn_trace_call *e = sn_wstep(&b->w, s);
        const sn_trace_access *a = sn_acc(t, e);
        for (int j = 0; j < e->nacc; j++) {
            if (a[j].mode & SN_ACC_SCRATCH)
                continue;
            if (m->steps[s].phase == SN_PHASE_UPDATE)
                b->upd_touch[a[j].tensor] = 1;
            else if (m->steps[s].phase == SN_PHASE_FORWARD && sn_uses(e, a[j].mode))
                fwd[a[j].tensor] = 1;
        }
    }
    for (size_t i = 0; i < t->ntensors; i++)
        b->is_weight[i] = b->upd_touch[i] && fwd[i];
    free(fwd);
}

/* ---- forward layers ---- */

typedef struct sn_fwdinfo {
    int first, last;           /* the reference pass's forward steps */
    int *ffirst, *flast;       /* per trace tensor: first / last non-initialising forward touch */
    int *lastw;                /* per trace tensor: the last non-initialising forward step changing it */
    char *value;               /* per trace tensor: produced by the pass */
    char *init;                /* per step: only initialises (a fill, a prologue) */
    char *tail;                /* per step: computes the result the host reads */
} sn_fwdinfo;

static int sn_anchor_cls(sn_build *b, int s)
{
    const sn_trace_call *e = sn_wstep(&b->w, s);
    int cls = sn_dnn_class(e->op);
    if (cls != CLS_NONE)
        return cls;
    if (sn_is_gemm(e->op)) {
        const sn_trace_access *a = sn_acc(b->t, e);
        for (int j = 0; j < e->nacc; j++)
            if ((a[j].mode & SN_ACC_R) && !(a[j].mode & SN_ACC_W) && b->is_weight[a[j].tensor])
                return CLS_FC;
    }
    return CLS_NONE;
}

/* The main output of a step: the first tensor it writes (exactly). */
static int64_t sn_main_output(const sn_trace *t, const sn_trace_call *e)
{
    const sn_trace_access *a = sn_acc(t, e);
    for (int i = 0; i < e->nacc; i++)
        if ((a[i].mode & SN_ACC_W) && !(a[i].mode & SN_ACC_SCRATCH))
            return a[i].tensor;
    for (int i = 0; i < e->nacc; i++)
        if (!(a[i].mode & SN_ACC_SCRATCH))
            return a[i].tensor;
    return -1;
}

static int sn_fwdinfo_init(sn_build *b, sn_fwdinfo *f, int first, int last)
{
    const sn_trace *t = b->t;
    memset(f, 0, sizeof *f);
    f->first = first;
    f->last = last;
    f->ffirst = malloc(sn_count((long)t->ntensors) * sizeof *f->ffirst);
    f->flast = malloc(sn_count((long)t->ntensors) * sizeof *f->flast);
    f->lastw = malloc(sn_count((long)t->ntensors) * sizeof *f->lastw);
    f->value = calloc(sn_count((long)t->ntensors), 1);
    f->init = calloc(sn_count(b->P), 1);
    f->tail = calloc(sn_count(b->P), 1);
    char *seen = calloc(sn_count((long)t->ntensors), 1);
    if (!f->ffirst || !f->flast || !f->lastw || !f->value || !f->init || !f->tail || !seen) {
        free(seen);
        return -1;
    }
    for (size_t i = 0; i < t->ntensors; i++)
        f->ffirst[i] = f->flast[i] = f->lastw[i] = -1;
    /* produced values: first touched by a copy from the host, an exact
     * write that does not read, a fill, or a kernel (not of a weight) */
    for (uint64_t c = sn_first_call_at(b, first); c <= b->w.step_call[b->w.s0 + (size_t)last]; c++) {
        const sn_trace_call *e = &t->calls[c];
        if (!sn_ok(e))
            continue;
        int p;
        int is_step = sn_call_step(b, c, &p);
        int fill = is_step && sn_filler(&b->w, p);
        const sn_trace_access *a = sn_acc(t, e);
        /* a kernel given one buffer the pass already wrote works on it in
         * place (an activation); only on a buffer not yet written it fills */
        if (fill && e->op == SN_OP_KERNEL)
            for (int j = 0; j < e->nacc; j++)
                if (!(a[j].mode & SN_ACC_SCRATCH) && (seen[a[j].tensor] & 2))
                    fill = 0;
        for (int j = 0; j < e->nacc; j++) {
            uint32_t x = a[j].tensor;
            if (a[j].mode & SN_ACC_SCRATCH)
                continue;
            if (!(seen[x] & 1)) {
                seen[x] |= 1;
                if (!b->is_weight[x] &&
                    (fill || !sn_exact(e) || ((a[j].mode & SN_ACC_W) && !(a[j].mode & SN_ACC_R))))
                    f->value[x] = 1;
            }
            if (is_step && !fill) {
                if (f->ffirst[x] < 0)
                    f->ffirst[x] = p;
                f->flast[x] = p;
            }
            /* 2: written in the pass (by a step that is not a fill) */
            if (is_step && !fill && sn_changes(e, a[j].mode)) {
                seen[x] |= 2;
                f->lastw[x] = p;
            }
        }
        if (fill)
            f->init[p] = 1;
    }
    free(seen);
    /* the tail: the step whose result the host reads, and for a reduction
     * into host memory, the step that made what it reduces */
    const sn_trace_call *te = sn_wstep(&b->w, last);
    f->tail[last] = 1;
    if (sn_host_reduction(t, te)) {
        const sn_trace_access *a = sn_acc(t, te);
        const int *wr = sn_wwr(&b->w, te);
        for (int j = 0; j < te->nacc; j++)
            if ((a[j].mode & SN_ACC_R) && wr[j] >= first && wr[j] < last)
                f->tail[wr[j]] = 1;
    }
    /* prologues: steps whose new values are all first used by the next
     * layer-making call, which writes into them (a bias broadcast before an
     * accumulating GEMM); they belong to that layer, like fills */
    for (int s = last; s >= first; s--) {
        if (f->init[s] || f->tail[s] || sn_anchor_cls(b, s) != CLS_NONE)
            continue;
        const sn_trace_call *e = sn_wstep(&b->w, s);
        const sn_trace_access *a = sn_acc(t, e);
        int fresh = 0, ok = 1;
        for (int j = 0; j < e->nacc && ok; j++) {
            uint32_t x = a[j].tensor;
            if ((a[j].mode & SN_ACC_SCRATCH) || !f->value[x] || f->ffirst[x] != s || !sn_changes(e, a[j].mode))
                continue;
            fresh++;
            /* the next step touching it */
            int nx = -1;
            for (int r = s + 1; r <= last && nx < 0; r++) {
                if (f->init[r])
                    continue;
                const sn_trace_call *er = sn_wstep(&b->w, r);
                const sn_trace_access *ar = sn_acc(t, er);
                for (int k = 0; k < er->nacc; k++)
                    if (ar[k].tensor == x && !(ar[k].mode & SN_ACC_SCRATCH)) {
                        nx = r;
                        ok = sn_exact(er) && (ar[k].mode & SN_ACC_W) && sn_anchor_cls(b, r) != CLS_NONE;
                        break;
                    }
            }
            if (nx < 0)
                ok = 0;
            /* everything between is a fill or prologue too */
            for (int r = s + 1; ok && r < nx; r++)
                ok = f->init[r];
        }
        if (fresh && ok)
            f->init[s] = 1;
    }
    return 0;
}

static void sn_fwdinfo_free(sn_fwdinfo *f)
{
    free(f->ffirst);
    free(f->flast);
    free(f->lastw);
    free(f->value);
    free(f->init);
    free(f->tail);
}

/* Whether a new layer begins at step s, the current one having begun at
 * step from: a single value flows from the current layer's steps into the
 * rest of the pass, and s produces a new value that later steps use. What
 * flows out of a layer of generic calls is every value its steps made or
 * used that later steps use (a normalisation reads its input again and
 * again: one layer). A layer a library call anchors (a convolution) has a
 * known input: what flows out of it is what it changed, and what it read
 * that a later step still changes in place; an input it only read, which
 * later steps only read again, flows past it (a residual branch's input,
 * read again by the sum), so it does not keep the layer open. */
static int sn_optional_cut(sn_build *b, const sn_fwdinfo *f, int from, int s, int anchored)
{
    const sn_trace *t = b->t;
    /* values the current steps made or used that later steps use */
    uint32_t one = UINT32_MAX;
    int crossing = 0;
    for (int r = from; r < s && crossing < 2; r++) {
        if (f->init[r])
            continue;
        const sn_trace_call *e = sn_wstep(&b->w, r);
        const sn_trace_access *a = sn_acc(t, e);
        for (int j = 0; j < e->nacc && crossing < 2; j++) {
            uint32_t x = a[j].tensor;
            if ((a[j].mode & SN_ACC_SCRATCH) || !f->value[x] || f->flast[x] < s || x == one ||
                (anchored && !sn_changes(e, a[j].mode) && f->lastw[x] < s))
                continue;
            one = x;
            crossing++;
        }
    }
    if (crossing != 1)
        return 0;
    /* s itself produces a new value a later step uses */
    if (f->init[s] || f->tail[s])
        return 0;
    const sn_trace_call *e = sn_wstep(&b->w, s);
    const sn_trace_access *a = sn_acc(t, e);
    for (int j = 0; j < e->nacc; j++) {
        uint32_t x = a[j].tensor;
        if (!(a[j].mode & SN_ACC_SCRATCH) && f->value[x] && f->ffirst[x] == s && f->flast[x] > s &&
            sn_changes(e, a[j].mode))
            return 1;
    }
    return 0;
}

/* Whether step s of the forward pass is a kernel of Caffe's Scale layer
 * that begins a layer: Scale follows a normalisation in place, so no new
 * value flows out of the layer before it and sn_optional_cut never cuts
 * there; its kernel's name is the only sign. A layer already holding one
 * such kernel goes on (one Scale layer per kernel run). */
static int sn_scale_begins(const sn_build *b, int cur, int from, int s)
{
    const sn_trace_call *e = sn_wstep(&b->w, s);
    if (e->op != SN_OP_KERNEL || e->algo != SN_KK_SCALE)
        return 0;
    for (int r = from; r < s; r++) {
        const sn_trace_call *er = sn_wstep(&b->w, r);
        if (b->layer_of[r] == cur && er->op == SN_OP_KERNEL && er->algo == SN_KK_SCALE)
            return 0;
    }
    return 1;
}

/* Whether step r copies, device to device, a tensor that step s changes in
 * place: the saved input of an in-place layer (Caffe's Scale keeps its
 * bottom for the backward pass before overwriting it), which is s's. */
static int sn_saves_input(const sn_build *b, int r, int s)
{
    const sn_trace_call *er = sn_wstep(&b->w, r), *e = sn_wstep(&b->w, s);
    if (er->op != SN_OP_MEMCPY_D2D)
        return 0;
    const sn_trace_access *ar = sn_acc(b->t, er), *a = sn_acc(b->t, e);
    for (int j = 0; j < er->nacc; j++) {
        if (!(ar[j].mode & SN_ACC_R) || (ar[j].mode & SN_ACC_W))
            continue;
        for (int k = 0; k < e->nacc; k++)
            if (a[k].tensor == ar[j].tensor && (a[k].mode & SN_ACC_R) && sn_changes(e, a[k].mode))
                return 1;
    }
    return 0;
}

/* The reference pass's forward steps into layers. */
static int sn_forward_layers(sn_build *b, const sn_fwdinfo *f)
{
    sn_model *m = b->m;
    const sn_trace *t = b->t;
    int first = f->first, last = f->last;
    /* the data layer: the copies that open the pass, with the copies from
     * the host before them */
    int s = first;
    while (s <= last && sn_is_copy(sn_wstep(&b->w, s)->op) && !f->tail[s])
        s++;
    int h2d = 0, upto = s;
    while (upto < last && f->init[upto])
        upto++;
    for (uint64_t c = sn_first_call_at(b, first); c < b->w.step_call[b->w.s0 + (size_t)upto]; c++)
        h2d |= b->t->calls[c].op == SN_OP_MEMCPY_H2D && sn_ok(&b->t->calls[c]);
    /* or no copy at all on this thread: the pass reads a batch the host
     * sent earlier (Caffe's Data layer hands its forward pass a buffer its
     * prefetch thread filled): a data layer of no step of its own */
    const char *host = b->host_batch;
    int sent = 0;
    for (int r = first; s == first && !h2d && host && r <= last && !sent; r++) {
        const sn_trace_call *e = sn_wstep(&b->w, r);
        const sn_trace_access *a = sn_acc(t, e);
        for (int j = 0; j < e->nacc && !sent; j++)
            sent = host[a[j].tensor] && !b->is_weight[a[j].tensor] && sn_uses(e, a[j].mode);
    }
    b->data_layer = -1;
    if (s > first || h2d || sent) {
        uint64_t main = b->w.step_call[b->w.s0 + (size_t)first];
        for (uint64_t c = sn_first_call_at(b, first); c < main; c++)
            if (b->t->calls[c].op == SN_OP_MEMCPY_H2D && sn_ok(&b->t->calls[c])) {
                main = c;
                break;
            }
        b->data_layer = sn_add_layer(b, CLS_DATA, first, main);
        if (b->data_layer < 0)
            return -1;
        for (int r = first; r < s; r++)
            b->layer_of[r] = b->data_layer;
    }
    int cur = -1, cur_from = -1;
    int64_t cur_out = -1;
    for (; s <= last; s++) {
        if (f->init[s])
            continue;
        const sn_trace_call *e = sn_wstep(&b->w, s);
        int cls = sn_anchor_cls(b, s);
        int64_t out = sn_main_output(t, e);
        int start_new;
        if (cls != CLS_NONE)
            start_new = cur < 0 || m->layers[cur].cls != cls || out < 0 || out != cur_out;
        else if (cur < 0)
            start_new = 1;
        else if (f->tail[s])
            start_new = 0;
        else if (m->layers[cur].cls == CLS_SOFTMAX && e->op == SN_OP_KERNEL && e->algo == SN_KK_LOSS)
            start_new = 0; /* a loss kernel on the softmax's output: one layer (Caffe's SoftmaxWithLoss) */
        else if (sn_scale_begins(b, cur, cur_from, s))
            start_new = 2;
        else
            start_new = sn_optional_cut(b, f, cur_from, s, m->layers[cur].cls != CLS_OTHER);
        if (start_new) {
            int prev = cur, prev_from = cur_from;
            cur = sn_add_layer(b, cls != CLS_NONE ? cls : CLS_OTHER, s, b->w.step_call[b->w.s0 + (size_t)s]);
            if (cur < 0)
                return -1;
            cur_from = s;
            cur_out = out;
            for (int r = s - 1; start_new == 2 && r > prev_from && b->layer_of[r] == prev && sn_saves_input(b, r, s);
                 r--)
                b->layer_of[r] = cur;
        }
        b->layer_of[s] = cur;
    }
    /* fills and prologues: the layer of the next step that touches their
     * buffer, else the next layer */
    for (s = last; s >= first; s--) {
        if (!f->init[s] || b->layer_of[s] >= 0)
            continue;
        const sn_trace_call *e = sn_wstep(&b->w, s);
        const sn_trace_access *a = sn_acc(t, e);
        int to = -1, next = -1;
        for (int r = s + 1; r <= last && to < 0; r++) {
            if (b->layer_of[r] < 0)
                continue;
            if (next < 0)
                next = b->layer_of[r];
            const sn_trace_call *er = sn_wstep(&b->w, r);
            const sn_trace_access *ar = sn_acc(t, er);
            for (int j = 0; j < e->nacc && to < 0; j++)
                for (int k = 0; k < er->nacc; k++)
                    if (ar[k].tensor == a[j].tensor && !(a[j].mode & SN_ACC_SCRATCH)) {
                        to = b->layer_of[r];
                        break;
                    }
        }
        if (to < 0)
            to = next;
        if (to < 0)
            for (int r = s - 1; r >= first && to < 0; r--)
                to = b->layer_of[r];
        if (to < 0) {
            to = sn_add_layer(b, CLS_OTHER, s, b->w.step_call[b->w.s0 + (size_t)s]);
            if (to < 0)
                return -1;
        }
        b->layer_of[s] = to;
    }
    m->fwd_layers = m->nlayers;
    for (s = first; s <= last; s++) {
        int l = b->layer_of[s];
        if (l < 0)
            continue;
        sn_model_layer *L = &m->layers[l];
        if (L->nfwd == 0 || s < L->first)
            L->first = s;
        if (s > L->last || L->nfwd == 0)
            L->last = s;
        L->nfwd++;
    }
    return 0;
}

/* Another forward pass onto the reference pass's layers: step by step when
 * the two are the same, else by the kind of step in order (an evaluation
 * pass without dropout, at another batch size). */
static void sn_map_pass(sn_build *b, const sn_model_pass *ref, const sn_model_pass *p)
{
    int nr = ref->turn - ref->first + 1, np = p->turn - p->first + 1;
    int same = nr == np;
    for (int i = 0; same && i < np; i++)
        same = sn_wstep(&b->w, ref->first + i)->sig == sn_wstep(&b->w, p->first + i)->sig;
    if (same) {
        for (int i = 0; i < np; i++)
            b->layer_of[p->first + i] = b->layer_of[ref->first + i];
        return;
    }
    int r = ref->first, prev = -1;
    for (int s = p->first; s <= p->turn; s++) {
        int op = sn_wstep(&b->w, s)->op, got = -1, cls = sn_dnn_class(op);
        for (int k = r; k <= ref->turn && k < r + 16; k++)
            if (sn_wstep(&b->w, k)->op == op || (cls != CLS_NONE && sn_dnn_class(sn_wstep(&b->w, k)->op) == cls)) {
                got = k;
                break;
            }
        if (got >= 0) {
            b->layer_of[s] = prev = b->layer_of[got];
            r = got + 1;
        } else {
            b->layer_of[s] = prev;
        }
    }
}

/* ---- ownership and the backward pass ---- */

/* The layer a tensor belongs to in pass p: for a value the pass
 * produces, the layer whose forward step wrote it last (an in-place layer
 * owns what it overwrote); for anything else (weights, constants), the
 * layer of the first forward step that touches it. A copy from the host
 * belongs to the data layer. */
static void sn_pass_owners(sn_build *b, const sn_model_pass *p, int *own)
{
    const sn_trace *t = b->t;
    for (size_t i = 0; i < t->ntensors; i++)
        own[i] = -1;
    for (uint64_t c = sn_first_call_at(b, p->first); c <= b->w.step_call[b->w.s0 + (size_t)p->turn]; c++) {
        const sn_trace_call *e = &t->calls[c];
        if (!sn_ok(e) || e->op == SN_OP_MEMCPY_D2H)
            continue;
        int pos;
        int l = sn_call_layer(b, c, &pos);
        const sn_trace_access *a = sn_acc(t, e);
        for (int j = 0; j < e->nacc; j++) {
            uint32_t x = a[j].tensor;
            if (a[j].mode & SN_ACC_SCRATCH)
                continue;
            /* a kernel's access is not evidence of a write: it claims only
             * what nothing claimed before */
            if (own[x] < 0 || (sn_model_writes(e, a[j].mode) && !b->is_weight[x]))
                own[x] = l;
        }
    }
}

/* The update pairs each weight with its gradient and optimizer state: a
 * tensor an update step touches along with the weights of exactly one
 * layer belongs to that layer. */
static void sn_param_groups(sn_build *b, const int *own)
{
    const sn_trace *t = b->t;
    for (int round = 0; round < 3; round++)
        for (int s = 0; s < b->P; s++) {
            if (b->m->steps[s].phase != SN_PHASE_UPDATE)
                continue;
            const sn_trace_call *e = sn_wstep(&b->w, s);
            const sn_trace_access *a = sn_acc(t, e);
            int l = -1, many = 0;
            for (int j = 0; j < e->nacc; j++) {
                uint32_t x = a[j].tensor;
                if (a[j].mode & SN_ACC_SCRATCH)
                    continue;
                int o = b->is_weight[x] ? own[x] : b->owner[x];
                if (o < 0)
                    continue;
                if (l >= 0 && o != l)
                    many = 1;
                l = o;
            }
            if (l < 0 || many)
                continue;
            for (int j = 0; j < e->nacc; j++)
                if (!(a[j].mode & SN_ACC_SCRATCH) && b->owner[a[j].tensor] < 0)
                    b->owner[a[j].tensor] = l;
        }
}

typedef struct sn_edges {
    sn_model_edge *v;
    int n, cap;
} sn_edges;

static void sn_edge_add(sn_edges *E, int producer, int consumer, uint32_t tensor)
{
    if (producer < 0 || consumer < 0 || producer == consumer)
        return;
    for (int x = 0; x < E->n; x++)
        if (E->v[x].producer == producer && E->v[x].consumer == consumer && E->v[x].tensor == tensor)
            return;
    if (E->n == E->cap) {
        int cap = E->cap ? E->cap * 2 : 256;
        sn_model_edge *v = realloc(E->v, (size_t)cap * sizeof *v);
        if (!v)
            return;
        E->v = v;
        E->cap = cap;
    }
    E->v[E->n++] = (sn_model_edge){producer, consumer, tensor};
}

/* Edges of the reference pass's forward steps: a step reading a value
 * another layer produced. Leaves b->producer as the pass leaves it. */
static void sn_forward_edges(sn_build *b, const sn_fwdinfo *f, sn_edges *E)
{
    const sn_trace *t = b->t;
    const char *host = b->data_layer >= 0 ? b->host_batch : NULL;
    for (size_t i = 0; i < t->ntensors; i++)
        b->producer[i] = -1;
    for (uint64_t c = sn_first_call_at(b, f->first); c <= b->w.step_call[b->w.s0 + (size_t)f->last]; c++) {
        const sn_trace_call *e = &t->calls[c];
        if (!sn_ok(e) || e->op == SN_OP_MEMCPY_D2H)
            continue;
        int p;
        int l = sn_call_layer(b, c, &p);
        int is_step = sn_call_step(b, c, &p);
        const sn_trace_access *a = sn_acc(t, e);
        if (is_step && !f->init[p])
            for (int j = 0; j < e->nacc; j++) {
                uint32_t x = a[j].tensor;
                if (!sn_uses(e, a[j].mode))
                    continue;
                int from = b->producer[x];
                if (from < 0 && host && host[x] && l != b->data_layer && !b->is_weight[x])
                    from = b->producer[x] = b->data_layer;
                else if (!f->value[x])
                    continue;
                sn_edge_add(E, from, l, x);
            }
        for (int j = 0; j < e->nacc; j++) {
            uint32_t x = a[j].tensor;
            if (f->value[x] && l >= 0 && !(a[j].mode & SN_ACC_SCRATCH) &&
                (sn_model_writes(e, a[j].mode) || b->producer[x] < 0)) {
                /* a convolution's output stays one when a ReLU then works
                 * on it in place (for the offloading what-if) */
                if (b->producer[x] < 0 && is_step && !f->init[p] && b->m->layers[l].cls == CLS_CONV)
                    b->conv_out[x] = 1;
                b->producer[x] = l;
            }
        }
    }
}

/* Values the other forward passes produce (an evaluation pass's own
 * buffers) and the layers producing them, as for the reference pass. */
static void sn_other_values(sn_build *b, const sn_model_pass *p, char *value)
{
    const sn_trace *t = b->t;
    char *seen = calloc(sn_count((long)t->ntensors), 1);
    if (!seen)
        return;
    for (uint64_t c = sn_first_call_at(b, p->first); c <= b->w.step_call[b->w.s0 + (size_t)p->turn]; c++) {
        const sn_trace_call *e = &t->calls[c];
        if (!sn_ok(e) || e->op == SN_OP_MEMCPY_D2H)
            continue;
        int pos;
        int l = sn_call_layer(b, c, &pos);
        int is_step = sn_call_step(b, c, &pos);
        int fill = is_step && sn_filler(&b->w, pos);
        const sn_trace_access *a = sn_acc(t, e);
        for (int j = 0; j < e->nacc; j++) {
            uint32_t x = a[j].tensor;
            if ((a[j].mode & SN_ACC_SCRATCH) || b->is_weight[x])
                continue;
            if (!seen[x]) {
                seen[x] = 1;
                if (!value[x] &&
                    (fill || !sn_exact(e) || ((a[j].mode & SN_ACC_W) && !(a[j].mode & SN_ACC_R)))) {
                    value[x] = 2;
                    b->producer[x] = l;
                }
            }
            if (value[x] == 2 && l >= 0 && sn_model_writes(e, a[j].mode))
                b->producer[x] = l;
        }
    }
    free(seen);
}

/* Layers working in place on one buffer own it one after the other, the
 * last one at the end (Caffe's ReLU, then its dropout, on one blob): a
 * cuDNN backward step of a class that layer does not have belongs to the
 * nearest layer of its class up the chain of single inputs, if any (the
 * ReLU's backward reads the blob the dropout owns last). */
static int sn_inplace_match(const sn_build *b, const sn_edges *E, int l, int cls)
{
    if (cls != CLS_ACT && cls != CLS_POOL && cls != CLS_LRN && cls != CLS_DROPOUT && cls != CLS_SOFTMAX &&
        cls != CLS_BN)
        return l;
    for (int hop = 0, at = l; hop < 4 && at >= 0; hop++) {
        if (b->m->layers[at].cls == cls)
            return at;
        int in = -1, n = 0;
        for (int x = 0; x < E->n; x++)
            if (E->v[x].consumer == at && E->v[x].producer >= 0 && E->v[x].producer != in) {
                in = E->v[x].producer;
                n++;
            }
        at = n == 1 && in != b->data_layer ? in : -1;
    }
    return l;
}

/* The layer a backward step of pass p belongs to: the latest layer among
 * the owners of what it touches; without one, the layer whose backward
 * steps made a gradient it reads hands it to a layer feeding that one;
 * else the previous backward step's layer. */
static int sn_backward_layer(sn_build *b, int s, const int *own, const sn_edges *E, int prev)
{
    const sn_trace *t = b->t;
    const sn_trace_call *e = sn_wstep(&b->w, s);
    const sn_trace_access *a = sn_acc(t, e);
    int best = -1;
    /* a weight, its gradient or its optimizer state says it best */
    for (int j = 0; j < e->nacc; j++) {
        uint32_t x = a[j].tensor;
        if (a[j].mode & SN_ACC_SCRATCH)
            continue;
        int o = b->is_weight[x] ? own[x] : b->owner[x];
        if (o > best && o != b->data_layer)
            best = o;
    }
    if (best >= 0)
        return best;
    for (int j = 0; j < e->nacc; j++) {
        uint32_t x = a[j].tensor;
        if (a[j].mode & SN_ACC_SCRATCH)
            continue;
        /* the data layer has no backward pass: a step reading the labels
         * belongs to the layer that used them */
        if (own[x] > best && own[x] != b->data_layer)
            best = own[x];
    }
    if (best >= 0)
        return sn_inplace_match(b, E, best, sn_dnn_class(e->op));
    const int *wr = sn_wwr(&b->w, e);
    /* a kernel making a gradient the backward pass had not written yet
     * (fills aside) passes it on to the next layer down */
    int fresh = 0;
    for (int j = 0; j < e->nacc && !sn_exact(e); j++) {
        if (a[j].mode & SN_ACC_SCRATCH)
            continue;
        int at = wr[j];
        if (at < 0 || b->m->steps[at].phase != SN_PHASE_BACKWARD || sn_filler(&b->w, at))
            fresh = 1;
    }
    for (int j = 0; j < e->nacc; j++) {
        if (!sn_uses(e, a[j].mode) || wr[j] < 0 || wr[j] >= s)
            continue;
        int M = b->layer_of[wr[j]];
        if (M < 0 || b->m->steps[wr[j]].phase != SN_PHASE_BACKWARD)
            continue;
        /* a gradient M made, updated in place: still M's backward pass */
        if (sn_exact(e) ? (a[j].mode & SN_ACC_W) != 0 : !fresh) {
            if (M > best)
                best = M;
            continue;
        }
        int in = -1;
        for (int x = 0; x < E->n; x++)
            if (E->v[x].consumer == M && E->v[x].producer > in)
                in = E->v[x].producer;
        if (in > best)
            best = in;
    }
    if (best >= 0)
        return best;
    return prev;
}

/* Whether a forward step of layer l changes tensor x, or another tensor of
 * x's size that the pass made. */
static int sn_layer_changes(const sn_build *b, int l, uint32_t x)
{
    const sn_model_layer *L = &b->m->layers[l];
    for (int s = L->first; s <= L->last; s++) {
        if (b->layer_of[s] != l || b->m->steps[s].phase != SN_PHASE_FORWARD)
            continue;
        const sn_trace_call *e = sn_wstep(&b->w, s);
        const sn_trace_access *a = sn_acc(b->t, e);
        for (int j = 0; j < e->nacc; j++)
            if (!(a[j].mode & SN_ACC_SCRATCH) && sn_changes(e, a[j].mode) &&
                (a[j].tensor == x ||
                 (!b->is_weight[a[j].tensor] && b->t->tensors[a[j].tensor].bytes == b->t->tensors[x].bytes)))
                return 1;
    }
    return 0;
}

static const char *sn_layer_name(const sn_build *b, const sn_model_layer *L, int l)
{
    const sn_trace *t = b->t;
    const sn_trace_call *main = &t->calls[L->main_call];
    switch (L->cls) {
    case CLS_CONV: return "conv";
    case CLS_DECONV: return "deconv";
    case CLS_BN: return "batchnorm";
    case CLS_ACT: {
        static const char *const act[] = {"sigmoid", "relu", "tanh", "clipped_relu", "elu", "identity", "swish"};
        return main->algo >= 0 && main->algo < 7 ? act[main->algo] : "activation";
    }
    case CLS_POOL: return main->algo == 1 || main->algo == 2 ? "avgpool" : "maxpool";
    case CLS_LRN: return "lrn";
    case CLS_DROPOUT: return "dropout";
    case CLS_FC: return "fc";
    case CLS_CONCAT: return "concat";
    case CLS_ADD: {
        static const char *const ops[] = {"add", "mul", "min", "max", "sqrt", "not"};
        return main->op == SN_OP_OP_TENSOR && main->algo >= 0 && main->algo < 6 ? ops[main->algo] : "add";
    }
    case CLS_SOFTMAX: {
        /* a softmax whose backward pass is not cuDNN's: the loss's */
        for (int s = 0; s < b->P; s++)
            if (b->layer_of[s] == l && b->m->steps[s].phase == SN_PHASE_BACKWARD &&
                sn_wstep(&b->w, s)->op == SN_OP_SOFTMAX_BWD)
                return "softmax";
        return L->bwd_first >= 0 ? "softmax_loss" : "softmax";
    }
    case CLS_DATA: return "data";
    default: break;
    }
    /* made of other calls: copies (a concatenation when they gather more
     * than one input), cuBLAS calls without weights, or kernels */
    int copies = 0, blas = 0, kernels = 0, steps = 0, kind = SN_KK_NONE, axpys = 0, gemvs = 0;
    int64_t reduced = -1; /* the largest tensor the first matrix-vector product reads */
    for (int s = L->first; s <= L->last; s++) {
        if (b->layer_of[s] != l || b->m->steps[s].phase != SN_PHASE_FORWARD)
            continue;
        const sn_trace_call *e = sn_wstep(&b->w, s);
        int op = e->op;
        if (op == SN_OP_MEMSET || op == SN_OP_SET_TENSOR)
            continue;
        steps++;
        if (sn_is_copy(op))
            copies++;
        else if (op == SN_OP_KERNEL || op == SN_OP_GRAPH || op == SN_OP_RNG)
            kernels++;
        else
            blas++;
        axpys += op == SN_OP_AXPY;
        if (op == SN_OP_GEMV && gemvs++ == 0) {
            const sn_trace_access *a = sn_acc(t, e);
            for (int j = 0; j < e->nacc; j++)
                if ((a[j].mode & SN_ACC_R) && !(a[j].mode & SN_ACC_SCRATCH) && !b->is_weight[a[j].tensor] &&
                    (reduced < 0 || t->tensors[a[j].tensor].bytes > t->tensors[reduced].bytes))
                    reduced = a[j].tensor;
        }
        /* the first kernel whose name says what it computes names the
         * layer (Caffe's MaxPoolForward, DropoutForward, its loss) */
        if (op == SN_OP_KERNEL && !kind && e->algo > 0)
            kind = e->algo;
    }
    if (steps && copies == steps)
        return L->nin > 1 ? "concat" : "copy";
    if (kind && kernels > 0)
        return sn_kernel_kind_name(kind);
    /* only sums into one output (Caffe's Eltwise SUM: a set to zero, then
     * one axpy per input) */
    if (steps > 1 && axpys == steps && L->nin > 1)
        return "add";
    /* per-channel statistics by matrix-vector products over the input,
     * then a write over it or a tensor its size (Caffe's BatchNorm, in
     * place or not): a normalisation */
    if (gemvs >= 2 && reduced >= 0 && sn_layer_changes(b, l, (uint32_t)reduced))
        return "batchnorm";
    if (blas > kernels + copies)
        return "blas";
    return "kernel";
}

/* ---- the build ---- */

static int sn_build_steps(sn_build *b, const sn_where *wh)
{
    sn_model *m = b->m;
    int P = b->P;
    m->passes = malloc(sn_count(wh->npasses) * sizeof *m->passes);
    if (!m->passes)
        return -1;
    memcpy(m->passes, wh->passes, (size_t)wh->npasses * sizeof *m->passes);
    m->npasses = wh->npasses;
    for (int s = 0; s < P; s++) {
        sn_model_step *st = &m->steps[s];
        st->call = b->w.step_call[b->w.s0 + (size_t)s];
        st->layer = -1;
        st->group = -1;
        st->phase = -1;
        st->pass = -1;
        if (b->t->calls[st->call].flags & SN_TC_OPAQUE)
            m->opaque_steps++;
    }
    for (int k = 0; k < m->npasses; k++) {
        const sn_model_pass *p = &m->passes[k];
        m->train_passes += p->training;
        m->eval_passes += !p->training;
        m->updates += p->bwd_end < p->end;
        for (int s = p->first; s < p->end && s < P; s++) {
            m->steps[s].pass = k;
            m->steps[s].phase = s <= p->turn ? SN_PHASE_FORWARD
                                : s < p->bwd_end ? SN_PHASE_BACKWARD
                                                 : SN_PHASE_UPDATE;
        }
    }
    m->backward_start = P;
    for (int s = 0; s < P; s++) {
        int ph = m->steps[s].phase;
        m->fwd_steps += ph == SN_PHASE_FORWARD;
        m->bwd_steps += ph == SN_PHASE_BACKWARD;
        m->upd_steps += ph == SN_PHASE_UPDATE;
        if (ph == SN_PHASE_BACKWARD && m->backward_start == P)
            m->backward_start = s;
    }
    return 0;
}

/* The first record of the log allocated at or after call k (records are
 * made in call order). */
static size_t sn_first_tensor_from(const sn_trace *t, uint64_t k)
{
    size_t lo = 0, hi = t->recorded_tensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->tensors[mid].alloc_call < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Model tensors: every allocation the iteration's calls touch. */
static int sn_build_tensors(sn_build *b)
{
    sn_model *m = b->m;
    const sn_trace *t = b->t;
    sn_ctx *c = b->c;
    int cap = 0;
    for (size_t i = 0; i < t->ntensors; i++)
        c->tensor_map[i] = -1;
    for (uint64_t k = b->w.call_lo; k < b->w.call_hi; k++) {
        const sn_trace_call *e = &t->calls[k];
        if (!sn_ok(e))
            continue;
        const sn_trace_access *a = sn_acc(t, e);
        for (int j = 0; j < e->nacc; j++) {
            uint32_t id = a[j].tensor;
            if (c->tensor_map[id] >= 0)
                continue;
            if (m->ntensors == cap) {
                cap = cap ? cap * 2 : 256;
                sn_model_tensor *nt = realloc(m->tensors, (size_t)cap * sizeof *nt);
                if (!nt)
                    return -1;
                m->tensors = nt;
            }
            const sn_trace_tensor *x = &t->tensors[id];
            sn_model_tensor *mt = &m->tensors[m->ntensors];
            memset(mt, 0, sizeof *mt);
            mt->id = id;
            mt->bytes = x->bytes;
            mt->first = mt->last = -1;
            mt->live_first = mt->live_last = -1;
            mt->producer = mt->owner = -1;
            mt->site = x->site;
            mt->lib_owner = x->owner;
            mt->alloc_in_iter = x->alloc_call >= b->w.call_lo && x->alloc_call < b->w.call_hi;
            mt->alloc_step = mt->alloc_in_iter ? b->w.pos[x->alloc_call - b->w.call_lo] : -1;
            mt->free_step = b->P;
            if (x->freed && x->free_call < b->w.call_hi)
                mt->free_step = x->free_call > b->w.call_lo ? b->w.pos[x->free_call - 1 - b->w.call_lo] : -1;
            c->tensor_map[id] = m->ntensors++;
        }
    }
    /* identity: the n-th allocation from its call site in the iteration
     * (allocations made and freed unused count too); the log's records are
     * in allocation order */
    size_t lo = sn_first_tensor_from(t, b->w.call_lo);
    for (int i = 0; i < m->ntensors; i++) {
        sn_model_tensor *mt = &m->tensors[i];
        if (!mt->alloc_in_iter)
            continue;
        for (size_t x = lo; x < mt->id; x++)
            mt->ordinal += t->tensors[x].site == mt->site && sn_trace_counts_memory(t->tensors[x].kind);
    }
    return 0;
}

/* Identity across iterations: the tensors allocated in the iteration and
 * those allocated in the one before, matched by call site and ordinal. */
static void sn_identity(sn_build *b, const sn_where *wh)
{
    sn_model *m = b->m;
    const sn_trace *t = b->t;
    const sn_ctx *c = b->c;
    for (int i = 0; i < m->ntensors; i++)
        m->ident_total += m->tensors[i].alloc_in_iter;
    if (c->base < wh->per.start + c->P || m->ident_total == 0)
        return;
    size_t prev = c->base - c->P;
    uint64_t lo = prev > 0 ? c->step_call[prev - 1] + 1 : t->log_begin;
    uint64_t hi = b->w.call_lo;
    size_t first = sn_first_tensor_from(t, lo);
    /* previous iteration's allocations, in order */
    for (int i = 0; i < m->ntensors; i++) {
        const sn_model_tensor *mt = &m->tensors[i];
        if (!mt->alloc_in_iter)
            continue;
        int k = 0, matched = 0;
        for (size_t x = first; x < t->recorded_tensors && !matched; x++) {
            const sn_trace_tensor *y = &t->tensors[x];
            if (y->alloc_call >= hi)
                break;
            if (y->site != mt->site || !sn_trace_counts_memory(y->kind))
                continue;
            if (k++ == mt->ordinal)
                matched = y->bytes == mt->bytes;
        }
        m->ident_matched += matched;
    }
}

/* ---- the iteration call by call ---- */

void sn_model_calls_free(sn_model_calls *c)
{
    free(c->step);
    free(c->first);
    free(c->tensor);
    free(c->acc);
    free(c->lib_bytes);
    memset(c, 0, sizeof *c);
}

/* A library handle's own memory, summed over its allocations. */
typedef struct sn_keyed {
    const void *key;
    uint64_t bytes;
} sn_keyed;

static int sn_keyed_cmp(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const sn_keyed *)a)->key, y = (uintptr_t)((const sn_keyed *)b)->key;
    return x < y ? -1 : x > y;
}

int sn_model_calls_build(const sn_trace *t, const sn_model *m, sn_model_calls *c)
{
    memset(c, 0, sizeof *c);
    if (!m->found || m->period == 0)
        return -1;
    int P = (int)m->period;
    /* the window sn_model_build analysed: from after the last successful
     * step before the iteration through its last step */
    uint64_t lo = m->steps[0].call;
    while (lo > t->log_begin && (t->calls[lo - 1].flags & (SN_TC_STEP | SN_TC_FAILED)) != SN_TC_STEP)
        lo--;
    uint64_t hi = m->steps[P - 1].call + 1;
    int n = (int)(hi - lo);
    c->call_lo = lo;
    c->ncalls = n;
    c->step = malloc((size_t)n * sizeof *c->step);
    c->first = malloc((size_t)P * sizeof *c->first);
    c->tensor = calloc(sn_count(m->ntensors), sizeof *c->tensor);
    int *map = malloc(sn_count((long)t->ntensors) * sizeof *map);
    if (!c->step || !c->first || !c->tensor || !map)
        goto fail;
    for (size_t i = 0; i < t->ntensors; i++)
        map[i] = -1;
    for (int i = 0; i < m->ntensors; i++)
        map[m->tensors[i].id] = i;
    int p = 0;
    size_t total = 0;
    for (int k = 0; k < n; k++) {
        uint64_t call = lo + (uint64_t)k;
        while (p < P - 1 && m->steps[p].call < call)
            p++;
        c->step[k] = p;
        if (k == 0 || c->step[k - 1] != p)
            c->first[p] = k;
        const sn_trace_call *e = &t->calls[call];
        if (!sn_ok(e))
            continue;
        const sn_trace_access *a = sn_acc(t, e);
        for (int j = 0; j < e->nacc; j++)
            if (map[a[j].tensor] >= 0) {
                c->tensor[map[a[j].tensor]].naccess++;
                total++;
            }
    }
    c->acc = malloc(sn_count((long)total) * sizeof *c->acc);
    if (!c->acc)
        goto fail;
    size_t off = 0;
    for (int i = 0; i < m->ntensors; i++) {
        c->tensor[i].access = c->acc + off;
        off += (size_t)c->tensor[i].naccess;
        c->tensor[i].naccess = 0;
    }
    for (int k = 0; k < n; k++) {
        const sn_trace_call *e = &t->calls[lo + (uint64_t)k];
        if (!sn_ok(e))
            continue;
        const sn_trace_access *a = sn_acc(t, e);
        for (int j = 0; j < e->nacc; j++) {
            int mi = map[a[j].tensor];
            if (mi < 0)
                continue;
            sn_wi_access *x = (sn_wi_access *)&c->tensor[mi].access[c->tensor[mi].naccess++];
            x->step = k;
            x->mode = a[j].mode;
        }
    }
    for (int i = 0; i < m->ntensors; i++) {
        const sn_model_tensor *mt = &m->tensors[i];
        const sn_trace_tensor *x = &t->tensors[mt->id];
        sn_wi_tensor *w = &c->tensor[i];
        int freed_in = x->freed && x->free_call < hi;
        w->bytes = sn_trace_counts_memory(x->kind) ? mt->bytes : 0;
        w->bounded = mt->alloc_in_iter || freed_in;
        w->alloc_step = mt->alloc_in_iter ? (int)(x->alloc_call - lo) : 0;
        w->free_step = freed_in ? (int)(x->free_call - 1 - lo) : n - 1;
    }
    /* memory the libraries hold for themselves throughout (cuDNN and
     * cuBLAS handles' workspaces): no strategy moves it; what belongs to a
     * known handle is needed only by the calls on it */
    sn_keyed *keys = NULL;
    int nkeys = 0, capkeys = 0;
    for (size_t i = 0; i < t->recorded_tensors; i++) {
        const sn_trace_tensor *x = &t->tensors[i];
        if (!((x->owner == SN_OWNER_CUDNN || x->owner == SN_OWNER_CUBLAS) && sn_trace_counts_memory(x->kind) &&
              x->alloc_call <= lo && (!x->freed || x->free_call >= hi) && map[i] < 0))
            continue;
        c->fixed_bytes += x->bytes;
        if (!x->lib_key)
            continue;
        if (nkeys == capkeys) {
            capkeys = capkeys ? 2 * capkeys : 16;
            sn_keyed *k = realloc(keys, (size_t)capkeys * sizeof *keys);
            if (!k)
                goto fail_keys;
            keys = k;
        }
        keys[nkeys++] = (sn_keyed){x->lib_key, x->bytes};
    }
    if (nkeys) {
        qsort(keys, (size_t)nkeys, sizeof *keys, sn_keyed_cmp);
        int u = 0;
        for (int i = 0; i < nkeys; i++) {
            if (u && keys[u - 1].key == keys[i].key)
                keys[u - 1].bytes += keys[i].bytes;
            else
                keys[u++] = keys[i];
        }
        nkeys = u;
        c->lib_bytes = calloc((size_t)n, sizeof *c->lib_bytes);
        if (!c->lib_bytes)
            goto fail_keys;
        for (int i = 0; i < nkeys; i++) {
            c->keyed_bytes += keys[i].bytes;
            if (keys[i].bytes > c->lib_largest)
                c->lib_largest = keys[i].bytes;
        }
        for (int k = 0; k < n; k++) {
            const sn_trace_call *e = &t->calls[lo + (uint64_t)k];
            if (!sn_ok(e) || !e->lib_key)
                continue;
            sn_keyed probe = {e->lib_key, 0};
            const sn_keyed *f = bsearch(&probe, keys, (size_t)nkeys, sizeof *keys, sn_keyed_cmp);
            if (f)
                c->lib_bytes[k] = f->bytes;
        }
    }
    free(keys);
    free(map);
    return 0;
fail_keys:
    free(keys);
fail:
    free(map);
    sn_model_calls_free(c);
    return -1;
}

/* ---- the build's passes, in the order sn_model_build runs them ---- */

/* Forward: the layers of the first training pass, the other passes mapped
 * on them, then the edges between them; the reference pass anchors every
 * layer the model knows. */
static int sn_build_forward(sn_build *b, sn_fwdinfo *f, sn_edges *E)
{
    sn_model *m = b->m;
    b->ref = 0;
    while (b->ref < m->npasses - 1 && !m->passes[b->ref].training)
        b->ref++;
    const sn_model_pass *ref = &m->passes[b->ref];
    /* (out of memory: no batch known, the pass's own copies still open it) */
    b->host_batch = sn_host_batches(b->t);
    int rc = -1;
    if (sn_fwdinfo_init(b, f, ref->first, ref->turn) != 0 || sn_forward_layers(b, f) != 0)
        goto out;
    for (int k = 0; k < m->npasses; k++)
        if (k != b->ref)
            sn_map_pass(b, ref, &m->passes[k]);
    sn_forward_edges(b, f, E);
    for (int k = 0; k < m->npasses; k++)
        if (k != b->ref)
            sn_other_values(b, &m->passes[k], f->value);
    rc = 0;
out:
    free(b->host_batch);
    b->host_batch = NULL;
    return rc;
}

/* Fills of pass p's backward steps: a fill uses nothing, so it joins the
 * layer of the next step using its buffer rather than forming its own. */
static void sn_backward_fills(sn_build *b, const sn_model_pass *p)
{
    const sn_trace *t = b->t;
    for (int s = p->bwd_end - 1; s > p->turn; s--) {
        if (!sn_filler(&b->w, s))
            continue;
        const sn_trace_call *e = sn_wstep(&b->w, s);
        const sn_trace_access *a = sn_acc(t, e);
        int to = -1;
        for (int r = s + 1; r < p->bwd_end && to < 0; r++) {
            const sn_trace_call *er = sn_wstep(&b->w, r);
            const sn_trace_access *ar = sn_acc(t, er);
            for (int j = 0; j < e->nacc && to < 0; j++)
                for (int q = 0; q < er->nacc; q++)
                    if (ar[q].tensor == a[j].tensor && !(a[j].mode & SN_ACC_SCRATCH)) {
                        to = b->layer_of[r];
                        break;
                    }
        }
        for (int r = s - 1; r > p->turn && to < 0; r--)
            to = b->layer_of[r];
        b->layer_of[s] = to >= 0 ? to : b->layer_of[p->turn];
    }
}

/* Backward: every pass's backward steps matched to forward layers by the
 * tensors they own; own is left as the reference pass's owners, which the
 * tensors keep. */
static void sn_build_backward(sn_build *b, int *own, const sn_edges *E)
{
    sn_model *m = b->m;
    const sn_model_pass *ref = &m->passes[b->ref];
    sn_pass_owners(b, ref, own);
    sn_param_groups(b, own);
    for (int k = 0; k < m->npasses; k++) {
        const sn_model_pass *p = &m->passes[k];
        sn_pass_owners(b, p, own);
        int prev = b->layer_of[p->turn];
        for (int s = p->turn + 1; s < p->bwd_end; s++)
            if (!sn_filler(&b->w, s))
                b->layer_of[s] = prev = sn_backward_layer(b, s, own, E, prev);
        sn_backward_fills(b, p);
        for (int s = p->turn + 1; s < p->bwd_end; s++) {
            if (b->layer_of[s] < 0)
                m->unmatched_bwd++;
            if (k == b->ref && b->layer_of[s] >= 0) {
                sn_model_layer *L = &m->layers[b->layer_of[s]];
                if (L->bwd_first < 0)
                    L->bwd_first = s;
                L->bwd_last = s;
                L->nbwd++;
            }
        }
    }
    for (int l = 0; l < m->nlayers; l++)
        m->bwd_layers += m->layers[l].nbwd > 0;
    sn_pass_owners(b, ref, own);
}

/* Backward reads of forward values are inputs too (the labels a loss
 * layer's gradient reads): edges the forward pass alone does not show. */
static void sn_backward_edges(sn_build *b, const sn_fwdinfo *f, sn_edges *E)
{
    const sn_trace *t = b->t;
    const sn_model_pass *ref = &b->m->passes[b->ref];
    for (int s = ref->turn + 1; s < ref->bwd_end; s++) {
        int l = b->layer_of[s];
        const sn_trace_call *e = sn_wstep(&b->w, s);
        const sn_trace_access *a = sn_acc(t, e);
        for (int j = 0; j < e->nacc; j++) {
            int pr = b->producer[a[j].tensor];
            if (f->value[a[j].tensor] && sn_uses(e, a[j].mode) && pr < l)
                sn_edge_add(E, pr, l, a[j].tensor);
        }
    }
}

/* Steps' layers and groups, layers' main outputs: what the policies plan
 * by (a group is the unit a plan moves at). */
static void sn_step_groups(sn_build *b)
{
    sn_model *m = b->m;
    const sn_trace *t = b->t;
    for (size_t s = 0; s < m->period; s++) {
        m->steps[s].layer = m->steps[s].phase == SN_PHASE_UPDATE ? -1 : b->layer_of[s];
        if (m->steps[s].layer >= 0)
            m->steps[s].group = 2 * m->steps[s].layer + (m->steps[s].phase == SN_PHASE_BACKWARD);
        else
            m->steps[s].group = 2 * m->nlayers + (int)s;
    }
    for (int l = 0; l < m->nlayers; l++) {
        sn_model_layer *L = &m->layers[l];
        int64_t out = sn_main_output(t, &t->calls[L->main_call]);
        if (L->cls != CLS_DATA && out >= 0)
            L->out_tensor = b->c->tensor_map[out];
    }
}

int sn_model_link_layers(sn_model *m, const sn_model_edge *v, int n, const int *tensor_map)
{
    m->edge_layer = malloc(sn_count(n) * sizeof *m->edge_layer);
    if (!m->edge_layer)
        return -1;
    int k = 0;
    for (int l = 0; l < m->nlayers; l++) {
        m->layers[l].in_begin = k;
        for (int x = 0; x < n; x++) {
            if (v[x].consumer != l)
                continue;
            int dup = 0;
            for (int y = m->layers[l].in_begin; y < k && !dup; y++)
                dup = m->edge_layer[y] == v[x].producer;
            if (!dup)
                m->edge_layer[k++] = v[x].producer;
        }
        m->layers[l].nin = k - m->layers[l].in_begin;
        if (m->layers[l].nin > 1) {
            m->layers[l].join = 1;
            m->joins++;
        }
    }
    m->nedges = k;
    /* per produced tensor: the distinct layers reading it; a layer is a
     * fork when one of its tensors has more than one */
    for (int x = 0; x < n; x++) {
        int seen_before = 0;
        for (int y = 0; y < x && !seen_before; y++)
            seen_before = v[y].producer == v[x].producer && v[y].tensor == v[x].tensor;
        if (seen_before)
            continue;
        int consumers = 0;
        for (int y = x; y < n; y++)
            if (v[y].producer == v[x].producer && v[y].tensor == v[x].tensor)
                consumers++;
        sn_model_layer *Pl = &m->layers[v[x].producer];
        Pl->nout++;
        int mi = tensor_map[v[x].tensor];
        if (mi >= 0)
            m->tensors[mi].consumers += consumers;
        if (consumers > 1 && !Pl->fork) {
            Pl->fork = 1;
            m->forks++;
        }
    }
    for (int l = 0; l < m->nlayers; l++)
        for (int x = 0; x < n; x++) {
            if (v[x].producer != l)
                continue;
            int dup = 0;
            for (int y = 0; y < x && !dup; y++)
                dup = v[y].producer == l && v[y].consumer == v[x].consumer;
            m->layers[l].consumers += !dup;
        }
    return 0;
}

/* What the iteration does with a tensor: used in a forward step (not a
 * fill), in the backward pass before any other use, in the update, in the
 * backward pass, other than as scratch; made first by a convolution; a
 * value the forward pass produces. */
enum { F_FWD = 1, F_BWD_FIRST = 2, F_UPD = 4, F_BWD = 8, F_NONSCRATCH = 16, F_CONV_OUT = 32, F_VALUE = 64 };

/* Per model tensor, what the iteration does with it (F_* flags) and the
 * steps it spans: the evidence sn_tensor_roles classifies by. */
static void sn_tensor_uses(sn_build *b, const sn_fwdinfo *f, const int *own, unsigned char *fl)
{
    sn_model *m = b->m;
    const sn_trace *t = b->t;
    for (int i = 0; i < m->ntensors; i++) {
        uint32_t id = m->tensors[i].id;
        m->tensors[i].owner = own[id] >= 0 ? own[id] : b->owner[id];
        m->tensors[i].producer = b->producer[id];
        if (f->value[id])
            fl[i] |= F_VALUE;
        if (b->conv_out[id])
            fl[i] |= F_CONV_OUT;
    }
    for (uint64_t kc = b->w.call_lo; kc < b->w.call_hi; kc++) {
        const sn_trace_call *e = &t->calls[kc];
        if (!sn_ok(e))
            continue;
        int s = b->w.pos[kc - b->w.call_lo];
        int phase = m->steps[s].phase;
        const sn_trace_access *a = sn_acc(t, e);
        for (int j = 0; j < e->nacc; j++) {
            int mi = b->c->tensor_map[a[j].tensor];
            if (mi < 0)
                continue;
            sn_model_tensor *mt = &m->tensors[mi];
            if (mt->first < 0)
                mt->first = s;
            mt->last = s;
            if (!(a[j].mode & SN_ACC_SCRATCH))
                fl[mi] |= F_NONSCRATCH;
            else
                continue;
            /* a fill says nothing of what a buffer holds: a gradient
             * cleared in the forward pass is still a gradient */
            int fill = (e->flags & SN_TC_STEP) && m->steps[s].call == kc && sn_filler(&b->w, s);
            if (phase == SN_PHASE_FORWARD) {
                if (!fill)
                    fl[mi] |= F_FWD;
            } else if (phase == SN_PHASE_BACKWARD) {
                if (!(fl[mi] & (F_FWD | F_BWD | F_UPD)))
                    fl[mi] |= F_BWD_FIRST;
                fl[mi] |= F_BWD;
            } else
                fl[mi] |= F_UPD;
        }
    }
}

/* Tensors: accesses and roles (weight, gradient, feature map...), which
 * decide what a policy may move. */
static int sn_tensor_roles(sn_build *b, const sn_fwdinfo *f, const int *own)
{
    sn_model *m = b->m;
    unsigned char *fl = calloc(sn_count(m->ntensors), 1);
    if (!fl)
        return -1;
    sn_tensor_uses(b, f, own, fl);
    for (int i = 0; i < m->ntensors; i++) {
        sn_model_tensor *mt = &m->tensors[i];
        int role;
        if (mt->lib_owner == SN_OWNER_CUDNN || mt->lib_owner == SN_OWNER_CUBLAS || !(fl[i] & F_NONSCRATCH))
            role = SN_ROLE_WORKSPACE;
        else if (b->is_weight[mt->id])
            role = SN_ROLE_WEIGHT;
        else if ((fl[i] & F_UPD) && (fl[i] & F_BWD))
            role = SN_ROLE_WEIGHT_GRAD;
        else if (fl[i] & F_UPD)
            role = SN_ROLE_OTHER;
        else if ((fl[i] & F_VALUE) && (fl[i] & F_FWD))
            role = SN_ROLE_FEATURE;
        else if (fl[i] & F_BWD_FIRST)
            role = SN_ROLE_GRADIENT;
        else
            role = SN_ROLE_OTHER;
        mt->role = role;
        /* only what a forward step computes has a producing layer */
        if (role != SN_ROLE_FEATURE)
            mt->producer = -1;
        mt->conv_output = role == SN_ROLE_FEATURE && (fl[i] & F_CONV_OUT);
        m->role_count[role]++;
        m->role_bytes[role] += mt->bytes;
        if (mt->lib_owner == SN_OWNER_CUDNN || mt->lib_owner == SN_OWNER_CUBLAS)
            m->library_bytes += mt->bytes;
    }
    free(fl);
    return 0;
}

/* What-if memory over the iteration's calls: the peaks, the lower bound
 * and the smallest budget the report and the policies start from. Out of
 * memory leaves them zero, as an unknown. */
static void sn_build_memory(sn_model *m, const sn_trace *t)
{
    sn_model_calls calls;
    int ncalls = 0;
    int *groups = NULL;
    uint64_t *ml = NULL, *mc = NULL, *ma = NULL;
    if (sn_model_calls_build(t, m, &calls) == 0) {
        ncalls = calls.ncalls;
        groups = malloc(sn_count(ncalls) * sizeof *groups);
        ml = malloc(sn_count(ncalls) * sizeof *ml);
        mc = malloc(sn_count(ncalls) * sizeof *mc);
        ma = malloc(sn_count(ncalls) * sizeof *ma);
    }
    if (groups && ml && mc && ma) {
        sn_wi_tensor *wt = calls.tensor;
        const int *pos = calls.step, *first_call = calls.first;
        for (int i = 0; i < m->ntensors; i++)
            if (m->tensors[i].role == SN_ROLE_FEATURE)
                wt[i].offload = m->tensors[i].conv_output ? SN_WI_CONV_OUTPUT : SN_WI_FEATURE;
        for (int kc = 0; kc < ncalls; kc++) {
            int s = pos[kc];
            groups[kc] = calls.call_lo + (uint64_t)kc == m->steps[s].call ? m->steps[s].group : -1;
        }
        uint64_t fixed = calls.fixed_bytes;
        m->library_bytes += fixed;
        int bstart = m->backward_start < (int)m->period ? first_call[m->backward_start] : ncalls;
        sn_wi_input in = {ncalls, bstart, groups, m->ntensors, wt, fixed, calls.lib_bytes, calls.keyed_bytes,
                           calls.lib_largest};
        sn_wi_result r;
        if (sn_whatif(&in, &r, ml, mc, ma) == 0) {
            m->peak_live = r.peak_liveness;
            m->peak_conv = r.peak_conv;
            m->peak_all = r.peak_all;
            m->peak_superneurons = r.peak_superneurons;
            m->lower_bound = r.lower_bound;
            m->carried_bytes = r.carried_bytes;
            m->max_working_set = r.max_working_set;
            m->max_working_set_lib = r.max_working_set_lib;
            m->largest_alloc = r.largest_alloc;
            m->library_keyed = calls.keyed_bytes;
            m->max_working_set_step = r.max_working_set_step >= 0 ? pos[r.max_working_set_step] : -1;
            m->superneurons_step = r.superneurons_step >= 0 ? pos[r.superneurons_step] : -1;
            for (int kc = 0; kc < ncalls; kc++) {
                sn_model_step *st = &m->steps[pos[kc]];
                int first = kc == first_call[pos[kc]];
                uint64_t asis = t->calls[calls.call_lo + (uint64_t)kc].live_bytes;
                if (first || asis > st->mem_asis)
                    st->mem_asis = asis;
                if (first || ml[kc] > st->mem_live)
                    st->mem_live = ml[kc];
                if (first || mc[kc] > st->mem_conv)
                    st->mem_conv = mc[kc];
                if (first || ma[kc] > st->mem_all)
                    st->mem_all = ma[kc];
            }
            /* the smallest budget: the bound and a 10% margin for
             * allocation granularity and libsn's own staging, rounded
             * up to a MiB, but never more than the run ever had */
            uint64_t bud = m->lower_bound + m->lower_bound / 10;
            bud = (bud + (1u << 20) - 1) & ~(uint64_t)((1u << 20) - 1);
            if (bud > m->peak_asis)
                bud = m->peak_asis;
            if (bud < m->lower_bound)
                bud = m->lower_bound;
            m->budget = bud;
        }
        for (int i = 0; i < m->ntensors; i++) {
            m->tensors[i].carried = sn_wi_carried(&wt[i]);
            int lf, ll;
            sn_wi_live_span(&wt[i], ncalls, &lf, &ll);
            m->tensors[i].live_first = lf >= 0 ? pos[lf] : -1;
            m->tensors[i].live_last = ll >= 0 ? pos[ll] : -1;
        }
    }
    for (size_t s = 0; s < m->period; s++)
        if (m->steps[s].mem_asis > m->peak_asis_iter)
            m->peak_asis_iter = m->steps[s].mem_asis;
    sn_model_calls_free(&calls);
    free(groups);
    free(ml);
    free(mc);
    free(ma);
}

void sn_model_step_times(sn_model *m, const sn_trace *t, const uint64_t *step_call, const int *layer_of, int ref)
{
    size_t P = m->period, base = m->first_index;
    for (size_t s = 0; s < P; s++) {
        double sum = 0;
        int count = 0;
        for (size_t it = m->periodic_begin + (base - m->periodic_begin) % P; it + P <= m->periodic_end; it += P) {
            const sn_trace_call *e = &t->calls[step_call[it + s]];
            if (e->flags & SN_TC_TIMED) {
                sum += e->dur_ms;
                count++;
            }
        }
        m->steps[s].ms = count ? sum / count : -1;
        if (count) {
            m->timed = 1;
            m->iter_ms += m->steps[s].ms;
            int l = layer_of[s];
            if (l >= 0 && m->steps[s].pass == ref && m->steps[s].phase != SN_PHASE_UPDATE) {
                if (m->steps[s].phase == SN_PHASE_BACKWARD)
                    m->layers[l].bwd_ms += m->steps[s].ms;
                else
                    m->layers[l].fwd_ms += m->steps[s].ms;
            }
        }
    }
}

int sn_model_build(const sn_trace *t, sn_model *m)
{
    memset(m, 0, sizeof *m);
    m->max_working_set_step = m->superneurons_step = -1;
    sn_model_totals(t, m);
    sn_ctx c = {.t = t, .m = m};
    sn_where wh;
    int rc = sn_locate(&c, &wh);
    if (rc <= 0) {
        free(wh.passes);
        free(c.step_call);
        return rc;
    }
    size_t P = c.P, base = c.base;
    m->found = 1;
    m->period = P;
    m->first_index = base;
    m->periodic_begin = wh.per.start;
    m->periodic_end = wh.per.end;
    m->first_differs = wh.first_differs;
    m->iterations_recorded = wh.iterations;
    /* following: the running count covers the whole run */
    m->iterations = t->state == SN_TRACE_FOLLOWING ? t->run.iterations : wh.iterations;

    sn_build b = {.c = &c, .m = m, .t = t, .P = (int)P};
    size_t nt = sn_count((long)t->ntensors);
    m->steps = calloc(P, sizeof *m->steps);
    c.tensor_map = malloc(nt * sizeof *c.tensor_map);
    b.layer_of = malloc(P * sizeof *b.layer_of);
    b.is_weight = calloc(nt, 1);
    b.upd_touch = calloc(nt, 1);
    b.owner = malloc(nt * sizeof *b.owner);
    b.producer = malloc(nt * sizeof *b.producer);
    b.conv_out = calloc(nt, 1);
    int *own = malloc(nt * sizeof *own);
    sn_edges E = {0};
    sn_fwdinfo f = {0};
    rc = -1;
    if (!m->steps || !c.tensor_map || !b.layer_of || !b.is_weight || !b.upd_touch || !b.owner || !b.producer ||
        !b.conv_out ||
        !own || sn_win_init(&b.w, t, c.step_call, base, (int)P, 0) != 0)
        goto out;
    for (size_t i = 0; i < t->ntensors; i++)
        b.owner[i] = -1;
    for (size_t s = 0; s < P; s++)
        b.layer_of[s] = -1;
    if (sn_build_steps(&b, &wh) != 0 || sn_build_tensors(&b) != 0)
        goto out;
    sn_find_weights(&b);
    if (sn_build_forward(&b, &f, &E) != 0)
        goto out;
    sn_build_backward(&b, own, &E);
    sn_backward_edges(&b, &f, &E);
    sn_step_groups(&b);
    if (sn_model_link_layers(m, E.v, E.n, c.tensor_map) != 0)
        goto out;
    for (int l = 0; l < m->nlayers; l++)
        snprintf(m->layers[l].type, sizeof m->layers[l].type, "%s", sn_layer_name(&b, &m->layers[l], l));
    if (sn_tensor_roles(&b, &f, own) != 0)
        goto out;
    sn_identity(&b, &wh);
    sn_build_memory(m, t);
    sn_model_step_times(m, t, c.step_call, b.layer_of, b.ref);
    m->check = sn_model_check(m);
#ifdef SN_DEBUG
    if (m->check != SN_CHECK_OK) {
        sn_error("device %d: internal error: the model breaks an invariant: %s", m->dev,
                 sn_model_check_name(m->check));
        abort();
    }
#endif
    rc = 0;
out:
    sn_fwdinfo_free(&f);
    free(E.v);
    free(own);
    free(b.layer_of);
    free(b.is_weight);
    free(b.upd_touch);
    free(b.owner);
    free(b.producer);
    free(b.conv_out);
    sn_win_free(&b.w);
    free(wh.passes);
    free(c.step_call);
    free(c.tensor_map);
    return rc;
}

int sn_model_check(const sn_model *m)
{
    if (!m->found)
        return SN_CHECK_OK;
    int counts[3] = {0, 0, 0};
    for (size_t s = 0; s < m->period; s++) {
        const sn_model_step *st = &m->steps[s];
        if (st->phase < 0 || st->phase > 2)
            return SN_CHECK_PHASES;
        counts[st->phase]++;
    }
    if (counts[0] != m->fwd_steps || counts[1] != m->bwd_steps || counts[2] != m->upd_steps ||
        counts[0] + counts[1] + counts[2] != (int)m->period)
        return SN_CHECK_PHASES;
    for (int i = 0; i < m->ntensors; i++) {
        const sn_model_tensor *T = &m->tensors[i];
        if (T->live_first < 0)
            continue;
        if ((T->alloc_in_iter && T->live_first < T->alloc_step) || T->live_last > T->free_step)
            return SN_CHECK_LIFETIME;
    }
    if (m->peak_live > m->peak_asis_iter || m->peak_asis_iter > m->peak_asis)
        return SN_CHECK_LIVENESS_ABOVE_ASIS;
    for (size_t s = 0; s < m->period; s++)
        if (m->steps[s].mem_live > m->steps[s].mem_asis)
            return SN_CHECK_STEP_ABOVE_ASIS;
    if (m->peak_conv > m->peak_live || m->peak_all > m->peak_live || m->peak_superneurons > m->peak_live)
        return SN_CHECK_WHATIF_ABOVE_LIVENESS;
    for (size_t s = 0; s < m->period; s++)
        if (m->steps[s].mem_conv > m->steps[s].mem_live || m->steps[s].mem_all > m->steps[s].mem_live)
            return SN_CHECK_WHATIF_ABOVE_LIVENESS;
    if (m->lower_bound > m->peak_all || m->lower_bound > m->peak_conv || m->lower_bound > m->peak_live ||
        m->lower_bound > m->peak_superneurons)
        return SN_CHECK_BOUND_ABOVE_WHATIF;
    if (m->budget < m->lower_bound || m->budget > m->peak_asis)
        return SN_CHECK_BUDGET;
    return SN_CHECK_OK;
}
