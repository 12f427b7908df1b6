/*
 * sn_model.c — building the iteration model from a call log (see
 * sn_model.h for what is inferred and how).
 */
#include "tracer/sn_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/sn_period.h"
#include "tracer/sn_whatif.h"

/* ---- op tables -------------------------------------------------------------- */

static const char *const sn_op_names[SN_OP_COUNT] = {
#define SN_OP(id, name, phase, layer) [SN_OP_##id] = name,
#include "tracer/sn_ops.def"
#undef SN_OP
};

static const char sn_op_phase[SN_OP_COUNT] = {
#define SN_OP(id, name, phase, layer) [SN_OP_##id] = #phase[0],
#include "tracer/sn_ops.def"
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

/* Layer classes: what groups steps into layers and matches passes. */
enum sn_cls { CLS_NONE = 0, CLS_CONV, CLS_BN, CLS_ACT, CLS_POOL, CLS_LRN, CLS_DROPOUT, CLS_FC,
              CLS_CONCAT, CLS_ADD, CLS_SOFTMAX, CLS_WILD, CLS_DATA };

static int sn_fwd_class(int op)
{
    switch (op) {
    case SN_OP_CONV_FWD:
    case SN_OP_CONV_BIAS_ACT_FWD: return CLS_CONV;
    case SN_OP_BN_FWD_TRAIN:
    case SN_OP_BN_FWD_INFER: return CLS_BN;
    case SN_OP_ACT_FWD: return CLS_ACT;
    case SN_OP_POOL_FWD: return CLS_POOL;
    case SN_OP_LRN_FWD: return CLS_LRN;
    case SN_OP_DROPOUT_FWD: return CLS_DROPOUT;
    case SN_OP_GEMM:
    case SN_OP_GEMV:
    case SN_OP_GEMM_BATCHED: return CLS_FC;
    case SN_OP_TRANSFORM_TENSOR: return CLS_CONCAT;
    case SN_OP_OP_TENSOR: return CLS_ADD;
    case SN_OP_SOFTMAX_FWD: return CLS_SOFTMAX;
    default: return CLS_NONE;
    }
}

static int sn_bwd_class(int op)
{
    switch (op) {
    case SN_OP_CONV_BWD_DATA:
    case SN_OP_CONV_BWD_FILTER:
    case SN_OP_CONV_BWD_BIAS: return CLS_CONV;
    case SN_OP_BN_BWD: return CLS_BN;
    case SN_OP_ACT_BWD: return CLS_ACT;
    case SN_OP_POOL_BWD: return CLS_POOL;
    case SN_OP_LRN_BWD: return CLS_LRN;
    case SN_OP_DROPOUT_BWD: return CLS_DROPOUT;
    case SN_OP_SOFTMAX_BWD: return CLS_SOFTMAX;
    case SN_OP_GEMM:
    case SN_OP_GEMV:
    case SN_OP_GEMM_BATCHED: return CLS_FC;
    case SN_OP_TRANSFORM_TENSOR: return CLS_CONCAT;
    case SN_OP_ADD_TENSOR:
    case SN_OP_OP_TENSOR: return CLS_ADD;
    case SN_OP_GEAM:
    case SN_OP_KERNEL:
    case SN_OP_GRAPH:
    case SN_OP_MEMCPY_D2D: return CLS_WILD;
    default: return CLS_NONE;
    }
}

/* Steps that only set or clear memory: they never make a tensor "produced". */
static int sn_is_filler(int op)
{
    return op == SN_OP_MEMSET || op == SN_OP_SET_TENSOR;
}

/* ---- helpers over the log -------------------------------------------------------- */

/* Element count for an allocation: never 0, never negative. */
static size_t sn_count(int n)
{
    return n > 0 ? (size_t)n : 1;
}

typedef struct sn_ctx {
    const sn_trace *t;
    sn_model *m;
    size_t n;                  /* compute steps in the log */
    uint64_t *step_call;       /* log index of each step */
    size_t P;
    size_t base;               /* step index of the representative iteration */
    int *tensor_map;           /* trace tensor -> model tensor, -1 */
} sn_ctx;

static const sn_trace_call *sn_call_at(const sn_ctx *c, size_t step)
{
    return &c->t->calls[c->step_call[step]];
}

static const sn_trace_access *sn_acc(const sn_ctx *c, const sn_trace_call *e)
{
    return &c->t->acc[e->acc_begin];
}

/* The tensor a step writes as its result (first written, not scratch), or -1. */
static int64_t sn_main_output(const sn_ctx *c, const sn_trace_call *e)
{
    const sn_trace_access *a = sn_acc(c, e);
    for (int i = 0; i < e->nacc; i++)
        if ((a[i].mode & SN_ACC_W) && !(a[i].mode & SN_ACC_SCRATCH))
            return a[i].tensor;
    return -1;
}

/* Kernels and graphs are described conservatively (every allocation an
 * argument points into is read and written): never evidence of layering. */
static int sn_exact(const sn_trace_call *e)
{
    return !(e->flags & SN_TC_OPAQUE) && e->op != SN_OP_KERNEL && e->op != SN_OP_GRAPH;
}

static int sn_writes(const sn_ctx *c, const sn_trace_call *e, uint32_t tensor)
{
    if (!sn_exact(e))
        return 0;
    const sn_trace_access *a = sn_acc(c, e);
    for (int i = 0; i < e->nacc; i++)
        if (a[i].tensor == tensor && (a[i].mode & SN_ACC_W))
            return 1;
    return 0;
}

/* ---- the cut: where an iteration begins ---------------------------------------- */

/* In the window of P steps starting at step w0, the last B-only op
 * followed (cyclically) by an F-only op with the widest gap: the end of a
 * backward pass and the start of the next forward pass, as window
 * positions in *best_b and *best_f (-1 when there is none). Ops only, no
 * tensors: it does not matter where the window begins. */
static void sn_pass_turn(const sn_ctx *c, size_t w0, long *best_b_out, long *best_f_out)
{
    size_t P = c->P;
    long best_b = -1, best_f = -1;
    size_t best_gap = 0;
    for (size_t i = 0; i < P; i++) {
        int op = sn_call_at(c, w0 + i)->op;
        if (sn_op_phase[op] != 'B')
            continue;
        for (size_t d = 1; d < P; d++) {
            int op2 = sn_call_at(c, w0 + (i + d) % P)->op;
            if (sn_op_phase[op2] == 'B')
                break;
            if (sn_op_phase[op2] == 'F') {
                if (best_b < 0 || d > best_gap) {
                    best_b = (long)i;
                    best_f = (long)((i + d) % P);
                    best_gap = d;
                }
                break;
            }
        }
    }
    *best_b_out = best_b;
    *best_f_out = best_f;
}

/* Positions are indices into the window of P steps starting at step w0;
 * the returned cut is the window position where an iteration starts.
 * Also returns (window positions) the end of the forward pass and the set
 * of update steps. The dependencies it follows go through tensors, so the
 * window should begin with a forward pass: where a framework allocates
 * anew every iteration, a walk that wraps around the window's end would go
 * from one iteration's tensors to another's. */
static int sn_find_cut(sn_ctx *c, size_t w0, int *fwd_end_out, char *is_update)
{
    size_t P = c->P;
    const sn_trace *t = c->t;
    memset(is_update, 0, P);
    *fwd_end_out = -1;
    long best_b, best_f;
    sn_pass_turn(c, w0, &best_b, &best_f);
    if (best_b < 0)
        return 0; /* no training structure: the window as it is, all forward */
    /* forward pass: from the first F op to the last F op before a B op */
    size_t last_f = (size_t)best_f;
    for (size_t d = 0; d < P; d++) {
        size_t i = ((size_t)best_f + d) % P;
        int ph = sn_op_phase[sn_call_at(c, w0 + i)->op];
        if (ph == 'B')
            break;
        if (ph == 'F')
            last_f = i;
    }
    /* steps writing the last forward layer's output belong to it */
    const sn_trace_call *lf = sn_call_at(c, w0 + last_f);
    int64_t key = sn_main_output(c, lf);
    size_t fwd_end = last_f;
    while (key >= 0) {
        size_t nx = (fwd_end + 1) % P;
        if (nx == (size_t)best_f)
            break;
        const sn_trace_call *e = sn_call_at(c, w0 + nx);
        if (sn_op_phase[e->op] != 'A' || !sn_writes(c, e, (uint32_t)key))
            break;
        fwd_end = nx;
    }
    /* tensors written after the forward pass up to the last B op */
    char *wb = calloc(t->ntensors ? t->ntensors : 1, 1);
    if (!wb)
        return 0;
    for (size_t i = (fwd_end + 1) % P;; i = (i + 1) % P) {
        const sn_trace_call *e = sn_call_at(c, w0 + i);
        const sn_trace_access *a = sn_acc(c, e);
        for (int k = 0; k < e->nacc; k++)
            if (a[k].mode & SN_ACC_W)
                wb[a[k].tensor] = 1;
        if (i == (size_t)best_b)
            break;
    }
    /* backward steps right after the last B op (layers whose backward has
     * no B-only op, e.g. a first fully connected layer) */
    size_t g = ((size_t)best_b + 1) % P;
    while (g != (size_t)best_f) {
        const sn_trace_call *e = sn_call_at(c, w0 + g);
        int cls = sn_bwd_class(e->op);
        if (cls == CLS_NONE || cls == CLS_WILD)
            break;
        int reads = 0;
        const sn_trace_access *a = sn_acc(c, e);
        for (int k = 0; k < e->nacc; k++)
            reads |= (a[k].mode & SN_ACC_R) && wb[a[k].tensor];
        if (!reads)
            break;
        for (int k = 0; k < e->nacc; k++)
            if (a[k].mode & SN_ACC_W)
                wb[a[k].tensor] = 1;
        g = (g + 1) % P;
    }
    /* the update: gap steps that depend on backward results, to a fixpoint */
    int changed = 1;
    while (changed) {
        changed = 0;
        for (size_t i = g; i != (size_t)best_f; i = (i + 1) % P) {
            if (is_update[i])
                continue;
            const sn_trace_call *e = sn_call_at(c, w0 + i);
            const sn_trace_access *a = sn_acc(c, e);
            int dep = 0;
            for (int k = 0; k < e->nacc; k++)
                dep |= (a[k].mode & SN_ACC_R) && wb[a[k].tensor];
            if (dep) {
                is_update[i] = 1;
                changed = 1;
                for (int k = 0; k < e->nacc; k++)
                    if (a[k].mode & SN_ACC_W)
                        wb[a[k].tensor] = 1;
            }
        }
    }
    free(wb);
    size_t cut = g;
    for (size_t i = g; i != (size_t)best_f; i = (i + 1) % P)
        if (is_update[i])
            cut = (i + 1) % P;
    *fwd_end_out = (int)((fwd_end + P - cut) % P);
    return (int)cut;
}

/* ---- layers ------------------------------------------------------------------------ */

static int sn_add_layer(sn_model *m, int cls, int first, uint64_t call, int *cap)
{
    if (m->nlayers == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        sn_model_layer *l = realloc(m->layers, (size_t)*cap * sizeof *l);
        if (!l)
            return -1;
        m->layers = l;
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

static void sn_layer_type(sn_model_layer *l, const sn_trace_call *main, int bwd_wild_only)
{
    const char *name = "?";
    switch (l->cls) {
    case CLS_CONV: name = "conv"; break;
    case CLS_BN: name = "batchnorm"; break;
    case CLS_ACT: {
        static const char *const act[] = {"sigmoid", "relu", "tanh", "clipped_relu",
                                          "elu", "identity", "swish"};
        name = main->algo >= 0 && main->algo < 7 ? act[main->algo] : "activation";
        break;
    }
    case CLS_POOL: name = main->algo == 1 || main->algo == 2 ? "avgpool" : "maxpool"; break;
    case CLS_LRN: name = "lrn"; break;
    case CLS_DROPOUT: name = "dropout"; break;
    case CLS_FC: name = "fc"; break;
    case CLS_CONCAT: name = "concat"; break;
    case CLS_ADD: {
        static const char *const ops[] = {"add", "mul", "min", "max", "sqrt", "not"};
        name = main->op == SN_OP_OP_TENSOR && main->algo >= 0 && main->algo < 6 ? ops[main->algo]
                                                                                  : "add";
        break;
    }
    case CLS_SOFTMAX: name = bwd_wild_only ? "softmax_loss" : "softmax"; break;
    case CLS_DATA: name = "data"; break;
    default: break;
    }
    snprintf(l->type, sizeof l->type, "%s", name);
}

static int sn_class_compatible(int fwd, int bwd)
{
    return bwd == CLS_WILD || fwd == bwd;
}

/* ---- main -------------------------------------------------------------------------- */

void sn_model_free(sn_model *m)
{
    free(m->steps);
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
    for (int o = 0; o < 5; o++) {
        m->alloc_count[o] = t->run.alloc_count[o];
        m->alloc_bytes[o] = t->run.alloc_bytes[o];
    }
}

typedef struct sn_edge {
    int producer, consumer;
    uint32_t tensor;
} sn_edge;

/* Where the iteration is in the recorded log. */
typedef struct sn_where {
    sn_period per;
    size_t base;            /* step index where the representative iteration starts */
    size_t iterations;      /* complete ones in the log, a differing first one included */
    int first_differs;
    int cut, fwd_end;       /* sn_find_cut's, in the window sn_locate chose */
    char *is_update_w;      /* sn_find_cut's update steps, window positions (caller frees) */
} sn_where;

/* Whether the steps [from, from + P) hold a forward-only and a
 * backward-only step: a whole training iteration. A period without both is
 * a block repeated inside one pass (the layers of a single forward pass),
 * not an iteration. */
static int sn_forward_and_backward(const sn_ctx *c, size_t from, size_t P)
{
    int f = 0, b = 0;
    for (size_t i = from; i < from + P; i++) {
        char ph = sn_op_phase[sn_call_at(c, i)->op];
        f |= ph == 'F';
        b |= ph == 'B';
    }
    return f && b;
}

/* Lists the log's successful steps (c->step_call, c->n) and finds the
 * iteration: a period with a complete forward and backward pass repeated
 * at least twice, cut where the forward pass begins. Returns 1 when found
 * (c->P and c->base set), 0 when not, -1 when out of memory. */
static int sn_locate(sn_ctx *c, sn_where *w)
{
    const sn_trace *t = c->t;
    memset(w, 0, sizeof *w);
    size_t nsteps = 0;
    for (size_t i = 0; i < t->ncalls; i++)
        nsteps += (t->calls[i].flags & (SN_TC_STEP | SN_TC_FAILED)) == SN_TC_STEP;
    c->step_call = malloc((nsteps ? nsteps : 1) * sizeof *c->step_call);
    uint64_t *sig = malloc((nsteps ? nsteps : 1) * sizeof *sig);
    if (!c->step_call || !sig) {
        free(sig);
        return -1;
    }
    c->n = 0;
    for (size_t i = 0; i < t->ncalls; i++) {
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
    size_t w0 = per->end - P;
    if (!sn_forward_and_backward(c, w0, P))
        return 0;
    /* move the window back to begin with a forward pass (sn_find_cut);
     * the periodic part holds two periods at least, so it stays inside */
    long turn_b, turn_f;
    sn_pass_turn(c, w0, &turn_b, &turn_f);
    if (turn_f > 0)
        w0 = w0 + (size_t)turn_f - P;
    w->is_update_w = malloc(P);
    if (!w->is_update_w)
        return -1;
    w->fwd_end = -1;
    w->cut = sn_find_cut(c, w0, &w->fwd_end, w->is_update_w);
    /* representative iteration: the last complete one */
    size_t base = w0 + (size_t)w->cut;
    if (base + P > per->end)
        base -= P;
    if (base < per->start || base + P > per->end)
        return 0;
    c->base = w->base = base;
    size_t first_boundary = per->start + (base - per->start) % P;
    w->iterations = (per->end - first_boundary) / P;
    for (size_t i = 0; i < first_boundary; i++)
        if (sn_op_phase[sn_call_at(c, i)->op] == 'F') {
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
    free(w.is_update_w);
    free(c.step_call);
    return rc;
}

int sn_model_build(const sn_trace *t, sn_model *m)
{
    memset(m, 0, sizeof *m);
    m->max_working_set_layer = -1;
    sn_model_totals(t, m);
    sn_ctx c = {.t = t, .m = m};
    sn_where w;
    int rc = sn_locate(&c, &w);
    if (rc <= 0) {
        free(w.is_update_w);
        free(c.step_call);
        return rc;
    }
    size_t P = c.P, base = c.base;
    sn_period per = w.per;
    int cut = w.cut, fwd_end = w.fwd_end;
    char *is_update_w = w.is_update_w;
    m->found = 1;
    m->period = P;
    m->first_index = base;
    m->first_differs = w.first_differs;
    m->iterations_recorded = w.iterations;
    /* following: the running count covers the whole run */
    m->iterations = t->state == SN_TRACE_FOLLOWING ? t->run.iterations : w.iterations;

    m->steps = calloc(P, sizeof *m->steps);
    char *is_update = calloc(P, 1);
    c.tensor_map = malloc((t->ntensors ? t->ntensors : 1) * sizeof *c.tensor_map);
    if (!m->steps || !is_update || !c.tensor_map) {
        free(is_update);
        free(is_update_w);
        free(c.step_call);
        free(c.tensor_map);
        return -1;
    }
    /* window position of iteration position s: (cut + s) % P */
    for (size_t s = 0; s < P; s++) {
        is_update[s] = is_update_w[((size_t)cut + s) % P];
        sn_model_step *st = &m->steps[s];
        st->call = c.step_call[base + s];
        st->layer = -1;
        st->group = -1;
        st->mem_asis = t->calls[st->call].live_bytes;
        if (st->mem_asis > m->peak_asis_iter)
            m->peak_asis_iter = st->mem_asis;
        if (is_update[s])
            st->phase = SN_PHASE_UPDATE;
        else if (fwd_end < 0 || (int)s <= fwd_end)
            st->phase = SN_PHASE_FORWARD;
        else
            st->phase = SN_PHASE_BACKWARD;
        if (t->calls[st->call].flags & SN_TC_OPAQUE)
            m->opaque_steps++;
    }
    free(is_update_w);
    m->backward_start = (int)P;
    for (size_t s = 0; s < P; s++) {
        if (m->steps[s].phase == SN_PHASE_FORWARD)
            m->fwd_steps++;
        else if (m->steps[s].phase == SN_PHASE_BACKWARD) {
            m->bwd_steps++;
            if (m->backward_start == (int)P)
                m->backward_start = (int)s;
        } else
            m->upd_steps++;
    }

    /* ---- the iteration's calls, transfers included, at step positions ---- */
    uint64_t call_lo = base > 0 ? c.step_call[base - 1] + 1 : 0;
    uint64_t call_hi = c.step_call[base + P - 1] + 1;
    for (size_t i = 0; i < t->ntensors; i++)
        c.tensor_map[i] = -1;
    int cap_tensors = 0;
    /* position of each call: the next step at or after it */
    size_t pos = 0;
    int *call_pos = malloc((call_hi - call_lo) * sizeof *call_pos);
    if (!call_pos) {
        free(is_update);
        free(c.step_call);
        free(c.tensor_map);
        return -1;
    }
    for (uint64_t k = call_lo; k < call_hi; k++) {
        while (pos < P - 1 && m->steps[pos].call < k)
            pos++;
        call_pos[k - call_lo] = (int)pos;
        const sn_trace_call *e = &t->calls[k];
        if (e->flags & SN_TC_FAILED)
            continue;
        const sn_trace_access *a = &t->acc[e->acc_begin];
        for (int j = 0; j < e->nacc; j++) {
            uint32_t id = a[j].tensor;
            if (c.tensor_map[id] >= 0)
                continue;
            if (m->ntensors == cap_tensors) {
                cap_tensors = cap_tensors ? cap_tensors * 2 : 256;
                sn_model_tensor *nt = realloc(m->tensors, (size_t)cap_tensors * sizeof *nt);
                if (!nt)
                    continue;
                m->tensors = nt;
            }
            sn_model_tensor *mt = &m->tensors[m->ntensors];
            memset(mt, 0, sizeof *mt);
            mt->id = id;
            mt->bytes = t->tensors[id].bytes;
            mt->first = mt->last = -1;
            mt->producer = -1;
            mt->site = t->tensors[id].site;
            mt->owner = t->tensors[id].owner;
            mt->alloc_in_iter = t->tensors[id].alloc_call >= call_lo && t->tensors[id].alloc_call < call_hi;
            c.tensor_map[id] = m->ntensors++;
        }
    }

    /* ---- forward layers ---- */
    int cap_layers = 0;
    int cur = -1;             /* current forward layer */
    int64_t cur_key = -1;
    int pending_first = -1;   /* helper steps waiting for the next layer */
    /* the data layer: copies at the start of the iteration */
    int first_layer_step = (int)P;
    for (size_t s = 0; s < P && m->steps[s].phase == SN_PHASE_FORWARD; s++)
        if (sn_fwd_class(t->calls[m->steps[s].call].op) != CLS_NONE) {
            first_layer_step = (int)s;
            break;
        }
    int data_layer = -1;
    for (uint64_t k = call_lo; k < call_hi; k++) {
        const sn_trace_call *e = &t->calls[k];
        if (call_pos[k - call_lo] > first_layer_step || (e->flags & SN_TC_FAILED))
            continue;
        if (k >= m->steps[first_layer_step < (int)P ? first_layer_step : (int)P - 1].call)
            break;
        if (e->op != SN_OP_MEMCPY_H2D && e->op != SN_OP_MEMCPY_D2D)
            continue;
        if (data_layer < 0) {
            data_layer = sn_add_layer(m, CLS_DATA, call_pos[k - call_lo], k, &cap_layers);
            if (data_layer < 0)
                break;
        }
        if (e->flags & SN_TC_STEP) {
            int s = call_pos[k - call_lo];
            m->steps[s].layer = data_layer;
            m->layers[data_layer].last = s;
            m->layers[data_layer].nfwd++;
        }
    }
    for (size_t s = 0; s < P; s++) {
        sn_model_step *st = &m->steps[s];
        if (st->phase != SN_PHASE_FORWARD || st->layer >= 0)
            continue;
        const sn_trace_call *e = &t->calls[st->call];
        int cls = sn_fwd_class(e->op);
        int64_t out = sn_main_output(&c, e);
        if (cls == CLS_NONE) {
            if (cur >= 0 && cur_key >= 0 && sn_writes(&c, e, (uint32_t)cur_key)) {
                st->layer = cur;
                m->layers[cur].last = (int)s;
                m->layers[cur].nfwd++;
            } else if (pending_first < 0) {
                pending_first = (int)s;
            }
            continue;
        }
        if (cur < 0 || m->layers[cur].cls != cls || out < 0 || out != cur_key) {
            cur = sn_add_layer(m, cls, (int)s, st->call, &cap_layers);
            if (cur < 0)
                break;
            cur_key = out;
            if (out >= 0 && c.tensor_map[out] >= 0)
                m->layers[cur].out_tensor = c.tensor_map[out];
            if (pending_first >= 0) {
                for (int p = pending_first; p < (int)s; p++)
                    if (m->steps[p].phase == SN_PHASE_FORWARD && m->steps[p].layer < 0) {
                        m->steps[p].layer = cur;
                        m->layers[cur].nfwd++;
                    }
                m->layers[cur].first = pending_first;
                pending_first = -1;
            }
        }
        st->layer = cur;
        m->layers[cur].last = (int)s;
        m->layers[cur].nfwd++;
    }
    m->fwd_layers = m->nlayers;

    /* ---- backward groups, matched to forward layers in reverse ---- */
    int next_match = m->fwd_layers - 1;
    int group_layer = -1, group_cls = CLS_NONE;
    uint64_t group_first_call = 0;
    int pending_b = -1;
    for (size_t s = 0; s < P; s++) {
        sn_model_step *st = &m->steps[s];
        if (st->phase != SN_PHASE_BACKWARD)
            continue;
        const sn_trace_call *e = &t->calls[st->call];
        int cls = sn_bwd_class(e->op);
        if (cls == CLS_NONE || (cls == CLS_WILD && group_layer >= 0 && group_cls != CLS_WILD)) {
            if (group_layer >= 0) {
                st->layer = group_layer;
                m->layers[group_layer].bwd_last = (int)s;
                m->layers[group_layer].nbwd++;
            } else if (pending_b < 0) {
                pending_b = (int)s;
            }
            continue;
        }
        int same = 0;
        if (group_layer >= 0 && cls == group_cls && cls != CLS_WILD) {
            /* same layer if it reads something the group's first step read */
            const sn_trace_call *f = &t->calls[group_first_call];
            const sn_trace_access *fa = sn_acc(&c, f), *a = sn_acc(&c, e);
            for (int i = 0; i < f->nacc && !same; i++)
                for (int j = 0; j < e->nacc && !same; j++)
                    same = (fa[i].mode & SN_ACC_R) && (a[j].mode & SN_ACC_R) &&
                           fa[i].tensor == a[j].tensor;
        } else if (group_layer >= 0 && cls == CLS_WILD && group_cls == CLS_WILD) {
            same = 1;
        }
        if (!same) {
            int match = -1;
            for (int l = next_match; l >= 0; l--) {
                if (m->layers[l].cls == CLS_DATA)
                    continue;
                if (sn_class_compatible(m->layers[l].cls, cls)) {
                    match = l;
                    break;
                }
            }
            if (match < 0) {
                m->unmatched_bwd++;
                group_layer = -1;
                continue;
            }
            next_match = match - 1;
            group_layer = match;
            group_cls = cls;
            group_first_call = st->call;
            m->bwd_layers++;
            m->layers[match].bwd_first = pending_b >= 0 ? pending_b : (int)s;
            if (pending_b >= 0) {
                for (int p = pending_b; p < (int)s; p++)
                    if (m->steps[p].phase == SN_PHASE_BACKWARD && m->steps[p].layer < 0) {
                        m->steps[p].layer = match;
                        m->layers[match].nbwd++;
                    }
                pending_b = -1;
            }
        }
        st->layer = group_layer;
        m->layers[group_layer].bwd_last = (int)s;
        m->layers[group_layer].nbwd++;
    }

    /* ---- layer types and working-set groups ---- */
    for (int l = 0; l < m->nlayers; l++) {
        sn_model_layer *L = &m->layers[l];
        int wild_only = L->bwd_first >= 0;
        for (int s = L->bwd_first; s >= 0 && s <= L->bwd_last; s++)
            if (m->steps[s].layer == l && sn_bwd_class(t->calls[m->steps[s].call].op) != CLS_WILD &&
                sn_bwd_class(t->calls[m->steps[s].call].op) != CLS_NONE)
                wild_only = 0;
        sn_layer_type(L, &t->calls[L->main_call], wild_only);
    }
    for (size_t s = 0; s < P; s++) {
        sn_model_step *st = &m->steps[s];
        if (st->layer >= 0)
            st->group = 2 * st->layer + (st->phase == SN_PHASE_BACKWARD);
        else
            st->group = 2 * m->nlayers + (int)s;
    }

    /* ---- tensors: accesses, roles, producers and consumers ---- */
    int *nacc = calloc(sn_count(m->ntensors), sizeof *nacc);
    int *producer_now = malloc(sn_count(m->ntensors) * sizeof *producer_now);
    unsigned char *flags = calloc(sn_count(m->ntensors), 1);
    enum { F_READ_FWD = 1, F_WRITE_UPD = 2, F_READ_UPD = 4, F_FIRSTW_FWD = 8, F_FIRSTW_BWD = 16,
           F_NONSCRATCH = 32, F_WRITTEN = 64, F_CONV_OUT = 128 };
    sn_edge *edges = NULL;
    int nedges = 0, cap_edges = 0;
    if (!nacc || !producer_now || !flags) {
        free(nacc);
        free(producer_now);
        free(flags);
        free(call_pos);
        free(is_update);
        free(c.step_call);
        free(c.tensor_map);
        return -1;
    }
    for (int i = 0; i < m->ntensors; i++)
        producer_now[i] = -1;
    for (uint64_t k = call_lo; k < call_hi; k++) {
        const sn_trace_call *e = &t->calls[k];
        if (e->flags & SN_TC_FAILED)
            continue;
        int s = call_pos[k - call_lo];
        const sn_model_step *st = &m->steps[s];
        int is_step_here = (e->flags & SN_TC_STEP) && st->call == k;
        int phase = st->phase;
        int layer = is_step_here ? st->layer : (data_layer >= 0 && s <= first_layer_step ? data_layer : -1);
        if (!is_step_here && phase != SN_PHASE_FORWARD)
            layer = -1;
        const sn_trace_access *a = &t->acc[e->acc_begin];
        for (int j = 0; j < e->nacc; j++) {
            int mi = c.tensor_map[a[j].tensor];
            if (mi < 0)
                continue;
            sn_model_tensor *mt = &m->tensors[mi];
            uint8_t mode = a[j].mode;
            nacc[mi]++;
            if (mt->first < 0)
                mt->first = s;
            mt->last = s;
            if (!(mode & SN_ACC_SCRATCH))
                flags[mi] |= F_NONSCRATCH;
            if ((mode & SN_ACC_R) && phase == SN_PHASE_FORWARD)
                flags[mi] |= F_READ_FWD;
            if ((mode & SN_ACC_R) && phase == SN_PHASE_UPDATE)
                flags[mi] |= F_READ_UPD;
            if ((mode & SN_ACC_W) && phase == SN_PHASE_UPDATE)
                flags[mi] |= F_WRITE_UPD;
            int filler = sn_is_filler(e->op);
            if ((mode & SN_ACC_W) && !filler && !(mode & SN_ACC_SCRATCH) && !(flags[mi] & F_WRITTEN)) {
                flags[mi] |= F_WRITTEN;
                if (phase == SN_PHASE_FORWARD)
                    flags[mi] |= F_FIRSTW_FWD;
                else if (phase == SN_PHASE_BACKWARD)
                    flags[mi] |= F_FIRSTW_BWD;
            }
            /* consumers: reads of a tensor another layer's forward pass wrote */
            if ((mode & SN_ACC_R) && layer >= 0 && producer_now[mi] >= 0 && producer_now[mi] != layer) {
                int dup = 0;
                for (int x = 0; x < nedges && !dup; x++)
                    dup = edges[x].consumer == layer && edges[x].tensor == (uint32_t)mi &&
                          edges[x].producer == producer_now[mi];
                if (!dup) {
                    if (nedges == cap_edges) {
                        cap_edges = cap_edges ? cap_edges * 2 : 256;
                        sn_edge *ne = realloc(edges, (size_t)cap_edges * sizeof *ne);
                        if (!ne)
                            continue;
                        edges = ne;
                    }
                    edges[nedges++] = (sn_edge){producer_now[mi], layer, (uint32_t)mi};
                }
            }
        }
        /* writes after reads: an in-place step reads the old version */
        for (int j = 0; j < e->nacc; j++) {
            int mi = c.tensor_map[a[j].tensor];
            if (mi < 0 || !(a[j].mode & SN_ACC_W) || (a[j].mode & SN_ACC_SCRATCH))
                continue;
            if (phase == SN_PHASE_FORWARD && layer >= 0 && !sn_is_filler(e->op)) {
                producer_now[mi] = layer;
                if (m->tensors[mi].producer < 0) {
                    m->tensors[mi].producer = layer;
                    if (m->layers[layer].cls == CLS_CONV)
                        flags[mi] |= F_CONV_OUT;
                }
            }
        }
    }
    /* edges -> inputs, forks, joins */
    m->edge_layer = malloc(sn_count(nedges) * sizeof *m->edge_layer);
    int *order = malloc(sn_count(nedges) * sizeof *order);
    if (m->edge_layer && order) {
        int k = 0;
        for (int l = 0; l < m->nlayers; l++) {
            m->layers[l].in_begin = k;
            for (int x = 0; x < nedges; x++)
                if (edges[x].consumer == l)
                    m->edge_layer[k++] = edges[x].producer;
            m->layers[l].nin = k - m->layers[l].in_begin;
            if (m->layers[l].nin > 1) {
                m->layers[l].join = 1;
                m->joins++;
            }
        }
        m->nedges = k;
        /* per produced tensor version: distinct consumer layers */
        for (int x = 0; x < nedges; x++) {
            int seen_before = 0;
            for (int y = 0; y < x && !seen_before; y++)
                seen_before = edges[y].producer == edges[x].producer && edges[y].tensor == edges[x].tensor;
            if (seen_before)
                continue;
            int consumers = 0;
            for (int y = x; y < nedges; y++)
                if (edges[y].producer == edges[x].producer && edges[y].tensor == edges[x].tensor)
                    consumers++;
            sn_model_layer *P_ = &m->layers[edges[x].producer];
            P_->nout++;
            P_->consumers += consumers;
            m->tensors[edges[x].tensor].consumers += consumers;
            if (consumers > 1) {
                P_->fork++;
                m->forks++;
            }
        }
    }
    free(order);
    free(edges);
    free(producer_now);

    /* roles */
    for (int i = 0; i < m->ntensors; i++) {
        sn_model_tensor *mt = &m->tensors[i];
        int role;
        if (mt->owner == 3 || mt->owner == 4 || !(flags[i] & F_NONSCRATCH))
            role = SN_ROLE_WORKSPACE;
        else if ((flags[i] & F_READ_UPD) && (flags[i] & F_FIRSTW_BWD))
            role = SN_ROLE_WEIGHT_GRAD;
        else if (flags[i] & F_WRITE_UPD)
            role = (flags[i] & F_READ_FWD) ? SN_ROLE_WEIGHT : SN_ROLE_OTHER;
        else if (flags[i] & F_FIRSTW_FWD)
            role = SN_ROLE_FEATURE;
        else if (flags[i] & F_FIRSTW_BWD)
            role = SN_ROLE_GRADIENT;
        else
            role = SN_ROLE_OTHER;
        mt->role = role;
        m->role_count[role]++;
        m->role_bytes[role] += mt->bytes;
        if (mt->owner == 3 || mt->owner == 4)
            m->library_bytes += mt->bytes;
    }
    /* identity of tensors allocated inside the iteration: site and ordinal */
    for (int i = 0; i < m->ntensors; i++) {
        sn_model_tensor *mt = &m->tensors[i];
        if (!mt->alloc_in_iter)
            continue;
        for (int j = 0; j < i; j++)
            if (m->tensors[j].alloc_in_iter && m->tensors[j].site == mt->site)
                mt->ordinal++;
    }

    /* ---- what-if memory ---- */
    sn_wi_tensor *wt = calloc(sn_count(m->ntensors), sizeof *wt);
    sn_wi_access *wa = NULL;
    size_t total = 0;
    for (int i = 0; i < m->ntensors; i++)
        total += (size_t)nacc[i];
    wa = malloc((total ? total : 1) * sizeof *wa);
    int *groups = malloc(P * sizeof *groups);
    uint64_t *ml = malloc(P * sizeof *ml), *mc = malloc(P * sizeof *mc), *ma = malloc(P * sizeof *ma);
    if (wt && wa && groups && ml && mc && ma) {
        int off = 0;
        for (int i = 0; i < m->ntensors; i++) {
            wt[i].bytes = m->tensors[i].bytes;
            wt[i].access = wa + off;
            wt[i].naccess = 0;
            off += nacc[i];
            if (m->tensors[i].role == SN_ROLE_FEATURE)
                wt[i].offload = (flags[i] & F_CONV_OUT) ? SN_WI_CONV_OUTPUT : SN_WI_FEATURE;
        }
        for (uint64_t k = call_lo; k < call_hi; k++) {
            const sn_trace_call *e = &t->calls[k];
            if (e->flags & SN_TC_FAILED)
                continue;
            const sn_trace_access *a = &t->acc[e->acc_begin];
            for (int j = 0; j < e->nacc; j++) {
                int mi = c.tensor_map[a[j].tensor];
                if (mi < 0)
                    continue;
                sn_wi_access *x = (sn_wi_access *)&wt[mi].access[wt[mi].naccess++];
                x->step = call_pos[k - call_lo];
                x->mode = a[j].mode;
            }
        }
        for (size_t s = 0; s < P; s++)
            groups[s] = m->steps[s].group;
        /* memory the libraries hold for themselves throughout (cuDNN and
         * cuBLAS handles' workspaces): no strategy moves it */
        uint64_t fixed = 0;
        for (size_t i = 0; i < t->recorded_tensors; i++) {
            const sn_trace_tensor *x = &t->tensors[i];
            if ((x->owner == 3 || x->owner == 4) && sn_trace_counts_memory(x->kind) &&
                x->alloc_call < call_lo && (!x->freed || x->free_call >= call_hi) &&
                c.tensor_map[i] < 0)
                fixed += x->bytes;
        }
        m->library_bytes += fixed;
        sn_wi_input in = {(int)P, m->backward_start, groups, m->ntensors, wt, fixed};
        sn_wi_result r;
        if (sn_whatif(&in, &r, ml, mc, ma) == 0) {
            m->peak_live = r.peak_liveness;
            m->peak_conv = r.peak_conv;
            m->peak_all = r.peak_all;
            m->lower_bound = r.lower_bound;
            m->carried_bytes = r.carried_bytes;
            m->max_working_set = r.max_working_set;
            if (r.max_working_set_group >= 0 && r.max_working_set_group < 2 * m->nlayers)
                m->max_working_set_layer = r.max_working_set_group / 2;
            for (size_t s = 0; s < P; s++) {
                m->steps[s].mem_live = ml[s];
                m->steps[s].mem_conv = mc[s];
                m->steps[s].mem_all = ma[s];
            }
            /* a 10% margin for allocation granularity and libsn's own
             * staging, rounded up to a MiB */
            uint64_t b = m->lower_bound + m->lower_bound / 10;
            m->budget = (b + (1u << 20) - 1) & ~(uint64_t)((1u << 20) - 1);
        }
        for (int i = 0; i < m->ntensors; i++)
            m->tensors[i].carried = sn_wi_carried(&wt[i]);
    }
    free(wt);
    free(wa);
    free(groups);
    free(ml);
    free(mc);
    free(ma);
    free(nacc);
    free(flags);

    /* ---- timings: mean over the periodic iterations ---- */
    for (size_t s = 0; s < P; s++) {
        double sum = 0;
        int count = 0;
        for (size_t it = base % P + (per.start > base % P ? ((per.start - base % P + P - 1) / P) * P : 0);
             it + P <= per.end; it += P) {
            const sn_trace_call *e = &t->calls[c.step_call[it + s]];
            if (e->flags & SN_TC_TIMED) {
                sum += e->dur_ms;
                count++;
            }
        }
        m->steps[s].ms = count ? sum / count : -1;
        if (count) {
            m->timed = 1;
            m->iter_ms += m->steps[s].ms;
            int l = m->steps[s].layer;
            if (l >= 0) {
                if (m->steps[s].phase == SN_PHASE_BACKWARD)
                    m->layers[l].bwd_ms += m->steps[s].ms;
                else
                    m->layers[l].fwd_ms += m->steps[s].ms;
            }
        }
    }
    free(call_pos);
    free(is_update);
    free(c.step_call);
    free(c.tensor_map);
    return 0;
}
