/*
 * exec.c — runs a network (net.h) on the device through cuDNN and cuBLAS
 * only: no device code of its own, so the same binary runs on the simulated
 * device and on a real GPU.
 *
 * An iteration is a fixed sequence of steps: the forward pass of every layer
 * (step i = layer i, step 0 loads the batch), the backward pass in reverse
 * (step L + (L-1-i) = backward of layer i), then one update step. Every
 * device buffer declares which steps use it; the allocation styles differ
 * only in when buffers come and go (see enum buf_class), never in the order
 * or the arguments of the compute calls, so all styles learn bit-identical
 * weights wherever the libraries are deterministic. An evaluation pass runs
 * the forward steps alone, in inference mode; a batch change reshapes the
 * network between iterations, each style handling its memory as its
 * framework does (trainer_set_batch).
 */
#include "bench/sntrain/trainer.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const float one = 1.0f, zero = 0.0f;
static const double bn_epsilon = 1e-5;
static const double bn_average_factor = 0.1;

const char *alloc_style_name(enum alloc_style a)
{
    switch (a) {
    case ALLOC_CAFFE: return "caffe";
    case ALLOC_DARKNET: return "darknet";
    case ALLOC_DYNAMIC: return "dynamic";
    }
    return "?";
}

const char *buf_role_name(enum buf_role r)
{
    switch (r) {
    case ROLE_WEIGHT: return "weight";
    case ROLE_MOMENTUM: return "momentum";
    case ROLE_WGRAD: return "weight-grad";
    case ROLE_STATE: return "state";
    case ROLE_CONSTANT: return "constant";
    case ROLE_INPUT: return "input";
    case ROLE_ACTIVATION: return "activation";
    case ROLE_GRADIENT: return "gradient";
    case ROLE_SAVED: return "saved";
    case ROLE_WORKSPACE: return "workspace";
    case ROLE_PREFETCH: return "prefetch";
    }
    return "?";
}

static trainer *active_trainer; /* for the exit hook */

/* Every device-side call of an iteration (what a tracer counts as a step:
 * cuDNN and cuBLAS work, kernels, copies and sets on the device; not the
 * copies to or from the host) counts toward its phase, for --dump-graph. */
static void count_step(trainer *tr)
{
    tr->step_count[tr->evaluating ? 3 : tr->phase]++;
}

#define DNN_STEP(call)                                                                         \
    do {                                                                                       \
        count_step(tr);                                                                        \
        CUDNN_CHECK(call);                                                                     \
    } while (0)
#define BLAS_STEP(call)                                                                        \
    do {                                                                                       \
        count_step(tr);                                                                        \
        CUBLAS_CHECK(call);                                                                    \
    } while (0)
#define CUDA_STEP(call)                                                                        \
    do {                                                                                       \
        count_step(tr);                                                                        \
        CUDA_CHECK(call);                                                                      \
    } while (0)

/* ---- buffers ------------------------------------------------------------ */

static int new_buf(trainer *tr, enum buf_class cls, enum buf_role role, size_t bytes,
                   const char *fmt, const char *a, const char *b)
{
    if (tr->nbufs == tr->cap_bufs) {
        int cap = tr->cap_bufs ? tr->cap_bufs * 2 : 256;
        dbuf *nb = realloc(tr->bufs, sizeof(dbuf) * (size_t)cap);
        if (!nb) {
            fprintf(stderr, "sntrain: out of host memory\n");
            trainer_exit(EXIT_CUDA_ERROR);
        }
        tr->bufs = nb;
        tr->cap_bufs = cap;
    }
    dbuf *d = &tr->bufs[tr->nbufs];
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, fmt, a, b);
    d->bytes = bytes;
    d->cls = cls;
    d->first = d->last = d->eval_last = -1;
    d->role = role;
    d->consumers = 1;
    return tr->nbufs++;
}

void trainer_sample_memory(trainer *tr)
{
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    tr->total_bytes = total_b;
    if (total_b - free_b > tr->peak_used)
        tr->peak_used = total_b - free_b;
}

/* d names the buffer and says what --log-allocs reports of it. */
static void *dev_malloc(trainer *tr, size_t bytes, const dbuf *d)
{
    const char *what = d->name;
    if (bytes == 0)
        return NULL;
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
        size_t free_b = 0, total_b = 0;
        cudaError_t ie = cudaMemGetInfo(&free_b, &total_b);
        (void)cudaGetLastError();
        if (e == cudaErrorMemoryAllocation) {
            fprintf(stderr,
                    "sntrain: out of memory: cudaMalloc of %zu bytes (%.1f MiB) for %s failed ",
                    bytes, bytes / 1048576.0, what);
            if (tr->training)
                fprintf(stderr, "in iteration %ld", tr->iter + 1);
            else
                fprintf(stderr, "during setup");
            if (ie == cudaSuccess)
                fprintf(stderr, "; %.1f MiB of %.1f MiB in use on the device",
                        (double)(total_b - free_b) / 1048576.0, (double)total_b / 1048576.0);
            fprintf(stderr, "; sntrain holds %.1f MiB in %d buffers (%s allocation)\n",
                    tr->held_bytes / 1048576.0, tr->held_count,
                    alloc_style_name(tr->opt->alloc));
            trainer_exit(EXIT_OOM);
        }
        fail_cuda(e, "cudaMalloc", __FILE__, __LINE__);
    }
    tr->held_bytes += bytes;
    tr->held_count++;
    trainer_sample_memory(tr);
    if (tr->alloc_log)
        fprintf(tr->alloc_log, "alloc %#" PRIxPTR " %zu %s %d %d %d %s\n", (uintptr_t)p, bytes,
                buf_role_name(d->role), d->consumers, d->join, d->accum, what);
    return p;
}

static void dev_free(trainer *tr, void *p, size_t bytes)
{
    if (!p)
        return;
    CUDA_CHECK(cudaFree(p));
    if (tr->alloc_log)
        fprintf(tr->alloc_log, "free %#" PRIxPTR "\n", (uintptr_t)p);
    tr->held_bytes -= bytes;
    tr->held_count--;
}

static void buf_alloc(trainer *tr, int id)
{
    dbuf *d = &tr->bufs[id];
    if (!d->ptr) {
        d->ptr = dev_malloc(tr, d->bytes, d);
        d->cap = d->ptr ? d->bytes : 0;
    }
}

static void buf_release(trainer *tr, int id)
{
    dbuf *d = &tr->bufs[id];
    dev_free(tr, d->ptr, d->cap);
    d->ptr = NULL;
    d->cap = 0;
}

static float *P(trainer *tr, int id)
{
    return id < 0 ? NULL : (float *)tr->bufs[id].ptr;
}

/* ---- workspaces --------------------------------------------------------- */

static void *ws_acquire(trainer *tr, int layer_idx, size_t bytes)
{
    if (bytes == 0)
        return NULL;
    switch (tr->opt->alloc) {
    case ALLOC_DARKNET: return P(tr, tr->shared_ws);
    case ALLOC_CAFFE: return P(tr, tr->lrt[layer_idx].ws_buf);
    case ALLOC_DYNAMIC: break;
    }
    dbuf ws = {.role = ROLE_WORKSPACE, .consumers = 1};
    snprintf(ws.name, sizeof ws.name, "%s.workspace", tr->n->layers[layer_idx].name);
    return dev_malloc(tr, bytes, &ws);
}

static void ws_release(trainer *tr, void *ws, size_t bytes)
{
    if (tr->opt->alloc == ALLOC_DYNAMIC)
        dev_free(tr, ws, bytes);
}

/* ---- step bookkeeping --------------------------------------------------- */

static int update_step(const trainer *tr)
{
    return 2 * tr->n->nlayers - 1;
}

typedef struct uses {
    int *ids;
    int n, cap;
} uses;

static void use(uses *u, int id)
{
    if (id < 0)
        return;
    for (int i = 0; i < u->n; i++)
        if (u->ids[i] == id)
            return;
    if (u->n == u->cap) {
        u->cap = u->cap ? u->cap * 2 : 64;
        u->ids = realloc(u->ids, sizeof(int) * (size_t)u->cap);
        if (!u->ids) {
            fprintf(stderr, "sntrain: out of host memory\n");
            trainer_exit(EXIT_CUDA_ERROR);
        }
    }
    u->ids[u->n++] = id;
}

/* The buffers one step reads or writes, in the order a framework would
 * first touch them (so that first-use allocation order is natural). In an
 * evaluation pass (eval; forward steps only) nothing of the backward pass
 * is touched: no gradient cleared, no batch statistics or dropout mask
 * saved, dropout's state left alone. */
static void step_uses_as(const trainer *tr, int step, int eval, uses *u)
{
    const net *n = tr->n;
    u->n = 0;
    int L = n->nlayers;
    if (step == update_step(tr)) {
        for (int p = 0; p < n->nparams; p++) {
            use(u, tr->prt[p].value);
            use(u, tr->prt[p].grad);
            use(u, tr->prt[p].hist);
        }
        return;
    }
    int backward = step >= L;
    int li = backward ? 2 * L - 1 - step : step;
    const layer *l = &n->layers[li];
    const layer_rt *r = &tr->lrt[li];
    const tensor_rt *out = &tr->trt[l->out];
    const tensor_rt *in0 = l->nin ? &tr->trt[l->in[0]] : NULL;
    if (!backward) {
        for (int k = 0; k < l->nin; k++)
            use(u, tr->trt[l->in[k]].data);
        for (int k = 0; k < l->nparam; k++)
            use(u, tr->prt[l->param[k]].value);
        switch (l->type) {
        case L_DATA: use(u, tr->trt[n->label_tensor].data); break;
        case L_BN: use(u, r->run_mean), use(u, r->run_var); break;
        case L_DROPOUT:
            if (!eval)
                use(u, r->states);
            break;
        case L_FC: use(u, tr->ones); break;
        case L_CONV: use(u, r->ws_buf); break;
        default: break;
        }
        use(u, out->data);
        if (eval)
            return;
        if (tr->opt->alloc == ALLOC_DARKNET)
            use(u, out->diff);
        if (l->type == L_BN)
            use(u, r->save_mean), use(u, r->save_inv);
        if (l->type == L_DROPOUT)
            use(u, r->reserve);
        return;
    }
    /* backward */
    switch (l->type) {
    case L_DATA: break;
    case L_CONV:
        use(u, out->diff);
        use(u, in0->data);
        use(u, tr->prt[l->param[0]].value);
        use(u, r->ws_buf);
        for (int k = 0; k < l->nparam; k++)
            use(u, tr->prt[l->param[k]].grad);
        use(u, in0->diff);
        break;
    case L_BN:
        use(u, in0->data);
        use(u, out->diff);
        use(u, tr->prt[l->param[0]].value);
        use(u, r->save_mean), use(u, r->save_inv);
        use(u, tr->prt[l->param[0]].grad), use(u, tr->prt[l->param[1]].grad);
        use(u, in0->diff);
        break;
    case L_RELU:
        use(u, out->data), use(u, out->diff), use(u, in0->diff);
        break;
    case L_MAXPOOL:
    case L_AVGPOOL:
    case L_LRN:
        use(u, out->data), use(u, out->diff), use(u, in0->data), use(u, in0->diff);
        break;
    case L_DROPOUT:
        use(u, out->diff), use(u, r->reserve), use(u, in0->diff);
        break;
    case L_FC:
        use(u, out->diff), use(u, in0->data), use(u, tr->prt[l->param[0]].value);
        use(u, tr->ones);
        use(u, tr->prt[l->param[0]].grad), use(u, tr->prt[l->param[1]].grad);
        use(u, in0->diff);
        break;
    case L_CONCAT:
    case L_ADD:
        use(u, out->diff);
        for (int k = 0; k < l->nin; k++)
            use(u, tr->trt[l->in[k]].diff);
        break;
    case L_SOFTMAX_LOSS:
        use(u, out->data), use(u, tr->trt[n->label_tensor].data), use(u, in0->diff);
        break;
    }
}

static void step_uses(const trainer *tr, int step, uses *u)
{
    step_uses_as(tr, step, 0, u);
}

/* ---- setup -------------------------------------------------------------- */

static cudnnTensorDescriptor_t tensor_desc(shape s)
{
    cudnnTensorDescriptor_t d;
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&d));
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s.n, s.c, s.h,
                                           s.w));
    return d;
}

/* Caffe's in-place ReLU: the ReLU writes over its input, data and gradient,
 * when nothing else reads that input and its producer's backward pass does
 * not need its own output. */
static int relu_in_place(const trainer *tr, const layer *l)
{
    if (tr->opt->alloc != ALLOC_CAFFE || l->type != L_RELU)
        return 0;
    const tensor *x = &tr->n->tensors[l->in[0]];
    if (x->nconsumers != 1 || l->in[0] == tr->n->data_tensor)
        return 0;
    enum layer_type pt = tr->n->layers[x->producer].type;
    return pt == L_CONV || pt == L_BN || pt == L_FC || pt == L_ADD || pt == L_CONCAT;
}

static size_t style_ws_limit(const train_options *o)
{
    if (o->workspace_limit_mib >= 0)
        return (size_t)o->workspace_limit_mib << 20;
    switch (o->alloc) {
    case ALLOC_CAFFE: return (size_t)8 << 20; /* Caffe's per-layer default */
    case ALLOC_DARKNET: return (size_t)1 << 30;
    case ALLOC_DYNAMIC: return (size_t)1 << 30;
    }
    return 0;
}

/* Convolution passes that got a non-deterministic algorithm because no
 * deterministic one fits the limit: said once on stderr after the layers
 * are set up (create_buffers), since such a run on a GPU is not
 * reproducible. */
static int nondeterministic_passes;

/* The first algorithm cuDNN ranks that succeeds, is deterministic (so runs
 * on a real GPU are reproducible) and needs no more than the limit; failing
 * that, the first that fits. */
#define PICK_ALGO(perf, count, limit, out_algo, out_mem)                                       \
    do {                                                                                       \
        int found_ = 0;                                                                        \
        for (int pass_ = 0; pass_ < 2 && !found_; pass_++)                                     \
            for (int i_ = 0; i_ < (count) && !found_; i_++)                                    \
                if ((perf)[i_].status == CUDNN_STATUS_SUCCESS && (perf)[i_].memory <= (limit) && \
                    (pass_ == 1 || (perf)[i_].determinism == CUDNN_DETERMINISTIC)) {           \
                    (out_algo) = (perf)[i_].algo;                                              \
                    (out_mem) = (perf)[i_].memory;                                             \
                    found_ = 1;                                                                \
                    nondeterministic_passes += (perf)[i_].determinism != CUDNN_DETERMINISTIC;  \
                }                                                                              \
        if (!found_) {                                                                         \
            fprintf(stderr, "sntrain: no convolution algorithm for %s fits %zu bytes\n",      \
                    l->name, (size_t)(limit));                                                 \
            trainer_exit(EXIT_CUDA_ERROR);                                                     \
        }                                                                                      \
    } while (0)

static void pick_conv_algos(trainer *tr, int li);

static void setup_conv(trainer *tr, int li)
{
    const layer *l = &tr->n->layers[li];
    layer_rt *r = &tr->lrt[li];
    shape x = tr->n->tensors[l->in[0]].s, y = tr->n->tensors[l->out].s;
    CUDNN_CHECK(cudnnCreateFilterDescriptor(&r->wdesc));
    CUDNN_CHECK(cudnnSetFilter4dDescriptor(r->wdesc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, y.c, x.c,
                                           l->kh, l->kw));
    CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&r->cdesc));
    CUDNN_CHECK(cudnnSetConvolution2dDescriptor(r->cdesc, l->ph, l->pw, l->sh, l->sw, 1, 1,
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    int on, oc, oh, ow;
    CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(r->cdesc, tr->trt[l->in[0]].desc, r->wdesc,
                                                      &on, &oc, &oh, &ow));
    if (on != y.n || oc != y.c || oh != y.h || ow != y.w) {
        fprintf(stderr, "sntrain: cuDNN gives %s a %dx%dx%dx%d output, expected %dx%dx%dx%d\n",
                l->name, on, oc, oh, ow, y.n, y.c, y.h, y.w);
        trainer_exit(EXIT_CUDA_ERROR);
    }
    if (l->has_bias)
        r->bias_desc = tensor_desc((shape){1, y.c, 1, 1});
    pick_conv_algos(tr, li);
}

/* The convolution's algorithms and workspaces for the current batch. */
static void pick_conv_algos(trainer *tr, int li)
{
    const layer *l = &tr->n->layers[li];
    layer_rt *r = &tr->lrt[li];
    cudnnTensorDescriptor_t xd = tr->trt[l->in[0]].desc, yd = tr->trt[l->out].desc;
    size_t limit = tr->ws_limit;
    int count = 0, max = 0;

    CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(tr->dnn, &max));
    cudnnConvolutionFwdAlgoPerf_t fperf[16];
    if (max > 16) max = 16;
    CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(tr->dnn, xd, r->wdesc, r->cdesc, yd, max,
                                                       &count, fperf));
    PICK_ALGO(fperf, count, limit, r->fwd_algo, r->ws_fwd);
    CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(tr->dnn, xd, r->wdesc, r->cdesc, yd,
                                                        r->fwd_algo, &r->ws_fwd));

    CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(tr->dnn, &max));
    cudnnConvolutionBwdFilterAlgoPerf_t wperf[16];
    if (max > 16) max = 16;
    CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(tr->dnn, xd, yd, r->cdesc, r->wdesc,
                                                              max, &count, wperf));
    PICK_ALGO(wperf, count, limit, r->bwf_algo, r->ws_bwf);
    CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(tr->dnn, xd, yd, r->cdesc,
                                                               r->wdesc, r->bwf_algo, &r->ws_bwf));

    r->ws_bwd = 0;
    if (tr->n->tensors[l->in[0]].needs_diff) {
        CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(tr->dnn, &max));
        cudnnConvolutionBwdDataAlgoPerf_t dperf[16];
        if (max > 16) max = 16;
        CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(tr->dnn, r->wdesc, yd, r->cdesc,
                                                                xd, max, &count, dperf));
        PICK_ALGO(dperf, count, limit, r->bwd_algo, r->ws_bwd);
        CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
            tr->dnn, r->wdesc, yd, r->cdesc, xd, r->bwd_algo, &r->ws_bwd));
    }
}

static void setup_layer(trainer *tr, int li)
{
    const net *n = tr->n;
    const layer *l = &n->layers[li];
    layer_rt *r = &tr->lrt[li];
    r->ws_buf = r->run_mean = r->run_var = r->save_mean = r->save_inv = -1;
    r->states = r->reserve = -1;
    r->accum = l->nin ? calloc((size_t)l->nin, sizeof(int)) : NULL;
    shape y = n->tensors[l->out].s;
    switch (l->type) {
    case L_CONV: setup_conv(tr, li); break;
    case L_BN:
        CUDNN_CHECK(cudnnCreateTensorDescriptor(&r->bn_desc));
        CUDNN_CHECK(cudnnDeriveBNTensorDescriptor(r->bn_desc, tr->trt[l->in[0]].desc,
                                                  CUDNN_BATCHNORM_SPATIAL));
        r->run_mean = new_buf(tr, BUF_SETUP, ROLE_STATE, sizeof(float) * (size_t)y.c, "%s%s",
                              l->name, ".running_mean");
        r->run_var = new_buf(tr, BUF_SETUP, ROLE_STATE, sizeof(float) * (size_t)y.c, "%s%s",
                             l->name, ".running_var");
        r->save_mean = new_buf(tr, BUF_TRANSIENT, ROLE_SAVED, sizeof(float) * (size_t)y.c, "%s%s",
                               l->name, ".saved_mean");
        r->save_inv = new_buf(tr, BUF_TRANSIENT, ROLE_SAVED, sizeof(float) * (size_t)y.c, "%s%s",
                              l->name, ".saved_inv_variance");
        break;
    case L_RELU:
        CUDNN_CHECK(cudnnCreateActivationDescriptor(&r->adesc));
        CUDNN_CHECK(cudnnSetActivationDescriptor(r->adesc, CUDNN_ACTIVATION_RELU,
                                                 CUDNN_NOT_PROPAGATE_NAN, 0.0));
        break;
    case L_MAXPOOL:
    case L_AVGPOOL:
        CUDNN_CHECK(cudnnCreatePoolingDescriptor(&r->pdesc));
        /* MAX_DETERMINISTIC, not Caffe's MAX: cuDNN's backward of MAX
         * accumulates with atomics where windows overlap (3x3/2), so two
         * runs on one GPU differ in the last bits (seen on an H200) */
        CUDNN_CHECK(cudnnSetPooling2dDescriptor(
            r->pdesc,
            l->type == L_MAXPOOL ? CUDNN_POOLING_MAX_DETERMINISTIC : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
            CUDNN_NOT_PROPAGATE_NAN, l->kh, l->kw, l->ph, l->pw, l->sh, l->sw));
        {
            int on, oc, oh, ow;
            CUDNN_CHECK(cudnnGetPooling2dForwardOutputDim(r->pdesc, tr->trt[l->in[0]].desc, &on,
                                                          &oc, &oh, &ow));
            if (on != y.n || oc != y.c || oh != y.h || ow != y.w) {
                fprintf(stderr, "sntrain: cuDNN gives %s a %dx%dx%dx%d output\n", l->name, on, oc,
                        oh, ow);
                trainer_exit(EXIT_CUDA_ERROR);
            }
        }
        break;
    case L_LRN:
        CUDNN_CHECK(cudnnCreateLRNDescriptor(&r->ldesc));
        CUDNN_CHECK(cudnnSetLRNDescriptor(r->ldesc, l->lrn_n, l->lrn_alpha, l->lrn_beta, l->lrn_k));
        break;
    case L_DROPOUT: {
        size_t states = 0, reserve = 0;
        CUDNN_CHECK(cudnnDropoutGetStatesSize(tr->dnn, &states));
        CUDNN_CHECK(cudnnDropoutGetReserveSpaceSize(tr->trt[l->in[0]].desc, &reserve));
        CUDNN_CHECK(cudnnCreateDropoutDescriptor(&r->ddesc));
        r->states = new_buf(tr, BUF_SETUP, ROLE_STATE, states, "%s%s", l->name,
                            ".dropout_states");
        r->reserve = new_buf(tr, BUF_TRANSIENT, ROLE_SAVED, reserve, "%s%s", l->name,
                             ".dropout_reserve");
        break;
    }
    case L_ADD:
        CUDNN_CHECK(cudnnCreateOpTensorDescriptor(&r->odesc));
        CUDNN_CHECK(cudnnSetOpTensorDescriptor(r->odesc, CUDNN_OP_TENSOR_ADD, CUDNN_DATA_FLOAT,
                                               CUDNN_NOT_PROPAGATE_NAN));
        break;
    case L_CONCAT: {
        r->views = calloc((size_t)l->nin, sizeof *r->views);
        r->offsets = calloc((size_t)l->nin, sizeof *r->offsets);
        size_t off = 0;
        for (int k = 0; k < l->nin; k++) {
            shape x = n->tensors[l->in[k]].s;
            CUDNN_CHECK(cudnnCreateTensorDescriptor(&r->views[k]));
            CUDNN_CHECK(cudnnSetTensor4dDescriptorEx(r->views[k], CUDNN_DATA_FLOAT, x.n, x.c, x.h,
                                                     x.w, y.c * y.h * y.w, y.h * y.w, y.w, 1));
            r->offsets[k] = off;
            off += (size_t)x.c * (size_t)x.h * (size_t)x.w;
        }
        break;
    }
    default: break;
    }
}

/* Which backward writer of each tensor's gradient comes first (overwrites,
 * beta = 0) and which accumulate (beta = 1). */
static void setup_accumulation(trainer *tr)
{
    const net *n = tr->n;
    char *seen = calloc((size_t)n->ntensors, 1);
    for (int li = n->nlayers - 1; li >= 1; li--) {
        const layer *l = &n->layers[li];
        for (int k = 0; k < l->nin; k++) {
            int t = l->in[k];
            if (!n->tensors[t].needs_diff)
                continue;
            tr->lrt[li].accum[k] = seen[t];
            seen[t] = 1;
            if (tr->lrt[li].accum[k] && l->type == L_DROPOUT) {
                fprintf(stderr, "sntrain: dropout %s cannot accumulate a gradient\n", l->name);
                trainer_exit(EXIT_CUDA_ERROR);
            }
        }
    }
    free(seen);
}

static void create_buffers(trainer *tr)
{
    const net *n = tr->n;
    char what[96];
    for (int t = 0; t < n->ntensors; t++) {
        tensor_rt *r = &tr->trt[t];
        const tensor *x = &n->tensors[t];
        r->desc = tensor_desc(x->s);
        const layer *prod = t == n->label_tensor ? NULL : &n->layers[x->producer];
        if (prod && relu_in_place(tr, prod)) {
            r->data = tr->trt[prod->in[0]].data;
            r->diff = tr->trt[prod->in[0]].diff;
            continue;
        }
        size_t bytes = shape_count(x->s) * sizeof(float);
        snprintf(what, sizeof what, "%s", x->name);
        int input = !prod || prod->type == L_DATA;
        r->data = new_buf(tr, BUF_TRANSIENT, input ? ROLE_INPUT : ROLE_ACTIVATION, bytes, "%s%s",
                          what, t == n->label_tensor ? "" : ".data");
        tr->bufs[r->data].consumers = x->nconsumers;
        tr->bufs[r->data].join = prod && prod->nin > 1;
        r->diff = x->needs_diff ? new_buf(tr, BUF_TRANSIENT, ROLE_GRADIENT, bytes, "%s%s", what,
                                          ".diff")
                                : -1;
        /* every reader's backward step adds its share */
        if (r->diff >= 0)
            tr->bufs[r->diff].accum = x->nconsumers > 1;
    }
    for (int p = 0; p < n->nparams; p++) {
        const param *q = &n->params[p];
        size_t bytes = q->count * sizeof(float);
        tr->prt[p].value = new_buf(tr, BUF_SETUP, ROLE_WEIGHT, bytes, "%s%s", q->name, "");
        tr->prt[p].grad = new_buf(tr, BUF_TRANSIENT, ROLE_WGRAD, bytes, "%s%s", q->name, ".grad");
        tr->prt[p].hist = new_buf(tr, BUF_KEEP, ROLE_MOMENTUM, bytes, "%s%s", q->name,
                                  ".momentum");
    }
    tr->ones = new_buf(tr, BUF_SETUP, ROLE_CONSTANT, sizeof(float) * (size_t)n->input.n, "%s%s",
                       "fc_ones", "");
    for (int li = 0; li < n->nlayers; li++)
        setup_layer(tr, li);
    if (nondeterministic_passes)
        fprintf(stderr,
                "sntrain: %d convolution passes use a non-deterministic algorithm (no deterministic one "
                "fits the %zu MiB workspace limit): on a GPU, two runs may differ in the last bits\n",
                nondeterministic_passes, tr->ws_limit >> 20);
    tr->shared_ws = -1;
    size_t largest = 0;
    for (int li = 0; li < n->nlayers; li++) {
        layer_rt *r = &tr->lrt[li];
        if (n->layers[li].type != L_CONV)
            continue;
        size_t need = r->ws_fwd;
        if (r->ws_bwf > need) need = r->ws_bwf;
        if (r->ws_bwd > need) need = r->ws_bwd;
        if (need > largest) largest = need;
        /* (made even when empty: another batch may need one; a buffer of
         * no bytes is never allocated) */
        if (tr->opt->alloc == ALLOC_CAFFE)
            r->ws_buf = new_buf(tr, BUF_KEEP, ROLE_WORKSPACE, need, "%s%s", n->layers[li].name,
                                ".workspace");
    }
    if (tr->opt->alloc == ALLOC_DARKNET)
        tr->shared_ws = new_buf(tr, BUF_SETUP, ROLE_WORKSPACE, largest, "%s%s",
                                "shared_workspace", "");
    /* Lifetimes in steps, in an iteration and in an evaluation pass. */
    uses u = {0};
    for (int s = 0; s < tr->nsteps; s++) {
        step_uses(tr, s, &u);
        for (int i = 0; i < u.n; i++) {
            dbuf *d = &tr->bufs[u.ids[i]];
            if (d->first < 0)
                d->first = s;
            d->last = s;
        }
    }
    for (int s = 0; s < n->nlayers; s++) {
        step_uses_as(tr, s, 1, &u);
        for (int i = 0; i < u.n; i++)
            tr->bufs[u.ids[i]].eval_last = s;
    }
    free(u.ids);
}

TRAINER_ONE_THREAD static void init_params(trainer *tr)
{
    const net *n = tr->n;
    for (int p = 0; p < n->nparams; p++) {
        const param *q = &n->params[p];
        size_t bytes = q->count * sizeof(float);
        float *h;
        if (tr->opt->alloc == ALLOC_CAFFE) {
            CUDA_CHECK(cudaMallocHost((void **)&h, bytes));
        } else {
            h = malloc(bytes);
            if (!h) {
                fprintf(stderr, "sntrain: out of host memory for %s\n", q->name);
                trainer_exit(EXIT_CUDA_ERROR);
            }
        }
        uint64_t st = tr->opt->seed * 0x9e3779b97f4a7c15ull + (uint64_t)p * 0xd1b54a32d192ed03ull;
        for (size_t i = 0; i < q->count; i++) {
            switch (q->init) {
            case INIT_ZERO: h[i] = 0.0f; break;
            case INIT_ONE: h[i] = 1.0f; break;
            case INIT_UNIFORM: {
                uint64_t z = (st += 0x9e3779b97f4a7c15ull);
                z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
                z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
                z ^= z >> 31;
                float u = (float)(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
                h[i] = u * q->init_range;
                break;
            }
            }
        }
        CUDA_CHECK(cudaMemcpy(P(tr, tr->prt[p].value), h, bytes, cudaMemcpyHostToDevice));
        if (tr->opt->alloc == ALLOC_CAFFE) {
            tr->prt[p].host = h; /* Caffe keeps the host mirror of every blob */
        } else if (tr->opt->alloc == ALLOC_DARKNET) {
            tr->prt[p].host = h; /* Darknet keeps host copies of its weights */
        } else {
            free(h); /* the host tensor is dropped once it is on the device */
        }
    }
    /* Constant buffers and state that starts at zero. */
    size_t nb = (size_t)n->input.n;
    float *ones = malloc(sizeof(float) * nb);
    for (size_t i = 0; i < nb; i++)
        ones[i] = 1.0f;
    CUDA_CHECK(cudaMemcpy(P(tr, tr->ones), ones, sizeof(float) * nb, cudaMemcpyHostToDevice));
    free(ones);
    for (int li = 0; li < n->nlayers; li++) {
        const layer *l = &n->layers[li];
        layer_rt *r = &tr->lrt[li];
        if (l->type == L_BN) {
            CUDA_CHECK(cudaMemset(P(tr, r->run_mean), 0, tr->bufs[r->run_mean].bytes));
            float *v = malloc(tr->bufs[r->run_var].bytes);
            for (size_t i = 0; i < tr->bufs[r->run_var].bytes / sizeof(float); i++)
                v[i] = 1.0f;
            CUDA_CHECK(cudaMemcpy(P(tr, r->run_var), v, tr->bufs[r->run_var].bytes,
                                  cudaMemcpyHostToDevice));
            free(v);
        }
        if (l->type == L_DROPOUT) {
            CUDNN_CHECK(cudnnSetDropoutDescriptor(r->ddesc, tr->dnn, l->drop_p,
                                                  P(tr, r->states), tr->bufs[r->states].bytes,
                                                  tr->opt->seed + (unsigned long long)li));
        }
    }
}

static void zero_momentum(trainer *tr, int id)
{
    CUDA_CHECK(cudaMemset(P(tr, id), 0, tr->bufs[id].bytes));
}

static void exit_hook(void)
{
    if (active_trainer)
        prefetch_stop(&active_trainer->pf);
}

int trainer_setup(trainer *tr, const train_options *opt, net *n)
{
    memset(tr, 0, sizeof *tr);
    tr->opt = opt;
    tr->n = n;
    tr->nsteps = 2 * n->nlayers;
    tr->batch0 = n->input.n;
    tr->ws_limit = style_ws_limit(opt);
    active_trainer = tr;
    set_exit_hook(exit_hook);

    /* Decided before touching the device, so that the refusal is the same
     * on a machine without a GPU. */
    if (opt->kernels) {
        if (kernels_register() != 0) {
            fprintf(stderr, "sntrain: --kernels needs the simulated device (host-function "
                            "kernels are not available on these CUDA libraries)\n");
            return EXIT_USAGE;
        }
        tr->kernels_ready = 1;
    }

    if (opt->log_allocs) {
        tr->alloc_log = fopen(opt->log_allocs, "w");
        if (!tr->alloc_log) {
            perror(opt->log_allocs);
            return EXIT_USAGE;
        }
        fprintf(tr->alloc_log,
                "# sntrain allocation log: %s, batch %d, input %dx%d, %s allocation\n"
                "# alloc <address> <bytes> <role> <consumers> <join> <accumulated> <name>\n"
                "# free <address>\n"
                "# iter <i> (before iteration i's first allocation)\n",
                n->variant, n->input.n, n->input.h, n->input.w, alloc_style_name(opt->alloc));
    }

    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaFree(0)); /* create the context before the first sample */
    trainer_sample_memory(tr);
    CUDNN_CHECK(cudnnCreate(&tr->dnn));
    CUBLAS_CHECK(cublasCreate(&tr->blas));
    CUBLAS_CHECK(cublasSetPointerMode(tr->blas, CUBLAS_POINTER_MODE_HOST));
    trainer_sample_memory(tr);

    tr->trt = calloc((size_t)n->ntensors, sizeof *tr->trt);
    tr->prt = calloc((size_t)n->nparams, sizeof *tr->prt);
    tr->lrt = calloc((size_t)n->nlayers, sizeof *tr->lrt);
    create_buffers(tr);
    setup_accumulation(tr);

    /* Buffers every style allocates up front; the darknet style allocates
     * everything here. */
    for (int i = 0; i < tr->nbufs; i++)
        if (tr->bufs[i].cls == BUF_SETUP || opt->alloc == ALLOC_DARKNET) {
            if (tr->bufs[i].first < 0 && tr->bufs[i].cls != BUF_SETUP)
                continue;
            buf_alloc(tr, i);
        }
    if (opt->alloc == ALLOC_DARKNET)
        for (int p = 0; p < n->nparams; p++)
            zero_momentum(tr, tr->prt[p].hist);
    init_params(tr);

    if (dataset_init(&tr->ds, opt->seed, n->classes, n->input.c, n->input.h, n->input.w) != 0) {
        fprintf(stderr, "sntrain: out of host memory for the data set\n");
        return EXIT_CUDA_ERROR;
    }
    /* Host buffers hold the largest batch of the run: training batches
     * (--batch, --rebatch) and evaluation batches. */
    int train_max = n->input.n;
    if (opt->rebatch_at > 0 && opt->rebatch > train_max)
        train_max = opt->rebatch;
    int batch_max = train_max;
    if (opt->eval_every > 0 && opt->eval_batch > batch_max)
        batch_max = opt->eval_batch;
    size_t per_image = shape_count((shape){1, n->input.c, n->input.h, n->input.w}) * sizeof(float);
    size_t per_onehot = (size_t)n->classes * sizeof(float);
    size_t image_bytes = per_image * (size_t)train_max;
    size_t onehot_bytes = per_onehot * (size_t)train_max;
    size_t prob_bytes = per_onehot * (size_t)batch_max;
    if (opt->alloc == ALLOC_CAFFE) {
        prefetcher *pf = &tr->pf;
        pf->ds = &tr->ds;
        pf->opt = opt;
        pf->batch = n->input.n;
        pf->total = opt->iters;
        pf->lockstep = opt->prefetch_lockstep;
        pf->image_bytes = per_image;
        pf->onehot_bytes = per_onehot;
        for (int s = 0; s < PREFETCH_SLOTS; s++) {
            prefetch_slot *sl = &pf->slot[s];
            dbuf slot = {.role = ROLE_PREFETCH, .consumers = 1};
            CUDA_CHECK(cudaMallocHost((void **)&sl->host_images, image_bytes));
            CUDA_CHECK(cudaMallocHost((void **)&sl->host_onehot, onehot_bytes));
            sl->labels = calloc((size_t)train_max, sizeof(int));
            snprintf(slot.name, sizeof slot.name, "prefetch[%d].data", s);
            sl->dev_images = dev_malloc(tr, image_bytes, &slot);
            snprintf(slot.name, sizeof slot.name, "prefetch[%d].label", s);
            sl->dev_onehot = dev_malloc(tr, onehot_bytes, &slot);
        }
        CUDA_CHECK(cudaMallocHost((void **)&tr->host_prob, prob_bytes));
        if (prefetch_start(pf) != 0)
            return EXIT_CUDA_ERROR;
    } else {
        tr->host_prob = malloc(prob_bytes);
    }
    /* the batches the data layer loads itself: every batch but the caffe
     * style's training batches, and the held-out batch */
    if (opt->alloc != ALLOC_CAFFE || opt->eval_every > 0) {
        tr->host_images = malloc(per_image * (size_t)batch_max);
        tr->host_onehot = malloc(per_onehot * (size_t)batch_max);
    }
    tr->host_labels = calloc((size_t)batch_max, sizeof(int));
    if (!tr->host_prob || !tr->host_labels ||
        ((opt->alloc != ALLOC_CAFFE || opt->eval_every > 0) && (!tr->host_images || !tr->host_onehot))) {
        fprintf(stderr, "sntrain: out of host memory for the batch\n");
        return EXIT_CUDA_ERROR;
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    trainer_sample_memory(tr);
    return 0;
}

/* ---- forward ------------------------------------------------------------ */

#define TD(t) (tr->trt[(t)].desc)
#define DATA(t) P(tr, tr->trt[(t)].data)
#define DIFF(t) P(tr, tr->trt[(t)].diff)
#define PVAL(l, k) P(tr, tr->prt[(l)->param[(k)]].value)
#define PGRAD(l, k) P(tr, tr->prt[(l)->param[(k)]].grad)

static void load_batch(trainer *tr)
{
    const net *n = tr->n;
    size_t image_bytes = shape_count(n->input) * sizeof(float);
    size_t onehot_bytes = (size_t)n->input.n * (size_t)n->classes * sizeof(float);
    /* the held-out batch of an evaluation pass: read by the data layer
     * itself in every style (Caffe's test net has a data layer of its own) */
    long index = tr->evaluating ? EVAL_BATCH_INDEX : tr->iter;
    if (tr->opt->alloc == ALLOC_CAFFE && !tr->evaluating) {
        prefetch_slot *s = prefetch_take(&tr->pf, tr->iter);
        if (!s)
            trainer_exit(EXIT_CUDA_ERROR);
        if (s->batch != n->input.n) {
            fprintf(stderr, "sntrain: batch %ld was prefetched with %d images, not %d\n", tr->iter,
                    s->batch, n->input.n);
            trainer_exit(EXIT_CUDA_ERROR);
        }
        /* Caffe's data layer copies the prefetched batch into its top blobs. */
        CUDA_STEP(cudaMemcpy(DATA(n->data_tensor), s->dev_images, image_bytes,
                              cudaMemcpyDeviceToDevice));
        CUDA_STEP(cudaMemcpy(DATA(n->label_tensor), s->dev_onehot, onehot_bytes,
                              cudaMemcpyDeviceToDevice));
        memcpy(tr->host_labels, s->labels, sizeof(int) * (size_t)n->input.n);
        CUDA_CHECK(cudaStreamSynchronize(0));
        prefetch_release(&tr->pf, s);
        return;
    }
    dataset_batch(&tr->ds, index, n->input.n, tr->host_images, tr->host_onehot, tr->host_labels);
    CUDA_CHECK(cudaMemcpy(DATA(n->data_tensor), tr->host_images, image_bytes,
                          cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(DATA(n->label_tensor), tr->host_onehot, onehot_bytes,
                          cudaMemcpyHostToDevice));
}

static void fc_forward(trainer *tr, const layer *l)
{
    shape x = tr->n->tensors[l->in[0]].s;
    int M = l->fc_out, N = x.n, K = x.c * x.h * x.w;
    float *y = DATA(l->out);
    BLAS_STEP(cublasSgemm(tr->blas, CUBLAS_OP_T, CUBLAS_OP_N, M, N, K, &one, PVAL(l, 0), K,
                             DATA(l->in[0]), K, &zero, y, M));
    BLAS_STEP(cublasSgemm(tr->blas, CUBLAS_OP_N, CUBLAS_OP_N, M, N, 1, &one, PVAL(l, 1), M,
                             P(tr, tr->ones), 1, &one, y, M));
}

static void loss_forward(trainer *tr, const layer *l)
{
    const net *n = tr->n;
    DNN_STEP(cudnnSoftmaxForward(tr->dnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE,
                                    &one, TD(l->in[0]), DATA(l->in[0]), &zero, TD(l->out),
                                    DATA(l->out)));
    size_t count = (size_t)n->input.n * (size_t)n->classes;
    /* Without arithmetic on the device (compute-off) the copy brings back
     * nothing; the loss of zeros is still printed. */
    memset(tr->host_prob, 0, count * sizeof(float));
    CUDA_CHECK(cudaMemcpy(tr->host_prob, DATA(l->out), count * sizeof(float),
                          cudaMemcpyDeviceToHost));
    double loss = 0;
    int right = 0;
    for (int b = 0; b < n->input.n; b++) {
        const float *row = tr->host_prob + (size_t)b * (size_t)n->classes;
        float p = row[tr->host_labels[b]];
        loss -= log(p > FLT_MIN ? p : FLT_MIN);
        int best = 0;
        for (int k = 1; k < n->classes; k++)
            if (row[k] > row[best])
                best = k;
        right += best == tr->host_labels[b];
    }
    if (tr->evaluating) {
        tr->eval_loss = loss / n->input.n;
        tr->eval_accuracy = (double)right / n->input.n;
    } else {
        tr->loss = loss / n->input.n;
    }
}

static void forward(trainer *tr, int li)
{
    const net *n = tr->n;
    const layer *l = &n->layers[li];
    layer_rt *r = &tr->lrt[li];
    int x = l->nin ? l->in[0] : -1, y = l->out;
    if (tr->opt->alloc == ALLOC_DARKNET && tr->trt[y].diff >= 0 && !tr->evaluating)
        CUDA_STEP(cudaMemsetAsync(DIFF(y), 0, tr->bufs[tr->trt[y].diff].bytes, 0));
    switch (l->type) {
    case L_DATA: load_batch(tr); break;
    case L_CONV: {
        void *ws = ws_acquire(tr, li, r->ws_fwd);
        DNN_STEP(cudnnConvolutionForward(tr->dnn, &one, TD(x), DATA(x), r->wdesc, PVAL(l, 0),
                                            r->cdesc, r->fwd_algo, ws, r->ws_fwd, &zero, TD(y),
                                            DATA(y)));
        ws_release(tr, ws, r->ws_fwd);
        if (l->has_bias)
            DNN_STEP(cudnnAddTensor(tr->dnn, &one, r->bias_desc, PVAL(l, 1), &one, TD(y),
                                       DATA(y)));
        break;
    }
    case L_BN:
        if (tr->evaluating) {
            DNN_STEP(cudnnBatchNormalizationForwardInference(
                tr->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, TD(x), DATA(x), TD(y), DATA(y),
                r->bn_desc, PVAL(l, 0), PVAL(l, 1), P(tr, r->run_mean), P(tr, r->run_var),
                bn_epsilon));
            break;
        }
        DNN_STEP(cudnnBatchNormalizationForwardTraining(
            tr->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, TD(x), DATA(x), TD(y), DATA(y),
            r->bn_desc, PVAL(l, 0), PVAL(l, 1), bn_average_factor, P(tr, r->run_mean),
            P(tr, r->run_var), bn_epsilon, P(tr, r->save_mean), P(tr, r->save_inv)));
        break;
    case L_RELU:
        DNN_STEP(cudnnActivationForward(tr->dnn, r->adesc, &one, TD(x), DATA(x), &zero, TD(y),
                                           DATA(y)));
        break;
    case L_MAXPOOL:
    case L_AVGPOOL:
        DNN_STEP(cudnnPoolingForward(tr->dnn, r->pdesc, &one, TD(x), DATA(x), &zero, TD(y),
                                        DATA(y)));
        break;
    case L_LRN:
        DNN_STEP(cudnnLRNCrossChannelForward(tr->dnn, r->ldesc, CUDNN_LRN_CROSS_CHANNEL_DIM1,
                                                &one, TD(x), DATA(x), &zero, TD(y), DATA(y)));
        break;
    case L_DROPOUT:
        if (tr->evaluating) {
            /* Caffe's dropout at test time: the input copied through */
            CUDA_STEP(cudaMemcpyAsync(DATA(y), DATA(x), shape_count(n->tensors[y].s) * sizeof(float),
                                      cudaMemcpyDeviceToDevice, 0));
            break;
        }
        DNN_STEP(cudnnDropoutForward(tr->dnn, r->ddesc, TD(x), DATA(x), TD(y), DATA(y),
                                        P(tr, r->reserve), tr->bufs[r->reserve].bytes));
        break;
    case L_FC: fc_forward(tr, l); break;
    case L_CONCAT:
        for (int k = 0; k < l->nin; k++)
            DNN_STEP(cudnnTransformTensor(tr->dnn, &one, TD(l->in[k]), DATA(l->in[k]), &zero,
                                             r->views[k], DATA(y) + r->offsets[k]));
        break;
    case L_ADD:
        DNN_STEP(cudnnOpTensor(tr->dnn, r->odesc, &one, TD(l->in[0]), DATA(l->in[0]), &one,
                                  TD(l->in[1]), DATA(l->in[1]), &zero, TD(y), DATA(y)));
        break;
    case L_SOFTMAX_LOSS: loss_forward(tr, l); break;
    }
}

/* ---- backward ----------------------------------------------------------- */

static void fc_backward(trainer *tr, int li)
{
    const layer *l = &tr->n->layers[li];
    shape x = tr->n->tensors[l->in[0]].s;
    int M = l->fc_out, N = x.n, K = x.c * x.h * x.w;
    const float *dy = DIFF(l->out);
    BLAS_STEP(cublasSgemm(tr->blas, CUBLAS_OP_N, CUBLAS_OP_T, K, M, N, &one, DATA(l->in[0]), K,
                             dy, M, &zero, PGRAD(l, 0), K));
    BLAS_STEP(cublasSgemv(tr->blas, CUBLAS_OP_N, M, N, &one, dy, M, P(tr, tr->ones), 1, &zero,
                             PGRAD(l, 1), 1));
    if (tr->n->tensors[l->in[0]].needs_diff) {
        const float beta = tr->lrt[li].accum[0] ? 1.0f : 0.0f;
        BLAS_STEP(cublasSgemm(tr->blas, CUBLAS_OP_N, CUBLAS_OP_N, K, N, M, &one, PVAL(l, 0), K,
                                 dy, M, &beta, DIFF(l->in[0]), K));
    }
}

static void backward(trainer *tr, int li)
{
    const net *n = tr->n;
    const layer *l = &n->layers[li];
    layer_rt *r = &tr->lrt[li];
    int x = l->nin ? l->in[0] : -1, y = l->out;
    const float beta0 = (l->nin && r->accum[0]) ? 1.0f : 0.0f;
    int want_dx = x >= 0 && n->tensors[x].needs_diff;
    switch (l->type) {
    case L_DATA: break;
    case L_CONV: {
        if (l->has_bias)
            DNN_STEP(cudnnConvolutionBackwardBias(tr->dnn, &one, TD(y), DIFF(y), &zero,
                                                     r->bias_desc, PGRAD(l, 1)));
        void *ws = ws_acquire(tr, li, r->ws_bwf);
        DNN_STEP(cudnnConvolutionBackwardFilter(tr->dnn, &one, TD(x), DATA(x), TD(y), DIFF(y),
                                                   r->cdesc, r->bwf_algo, ws, r->ws_bwf, &zero,
                                                   r->wdesc, PGRAD(l, 0)));
        ws_release(tr, ws, r->ws_bwf);
        if (want_dx) {
            ws = ws_acquire(tr, li, r->ws_bwd);
            DNN_STEP(cudnnConvolutionBackwardData(tr->dnn, &one, r->wdesc, PVAL(l, 0), TD(y),
                                                     DIFF(y), r->cdesc, r->bwd_algo, ws,
                                                     r->ws_bwd, &beta0, TD(x), DIFF(x)));
            ws_release(tr, ws, r->ws_bwd);
        }
        break;
    }
    case L_BN:
        DNN_STEP(cudnnBatchNormalizationBackward(
            tr->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &beta0, &one, &zero, TD(x), DATA(x), TD(y),
            DIFF(y), TD(x), DIFF(x), r->bn_desc, PVAL(l, 0), PGRAD(l, 0), PGRAD(l, 1), bn_epsilon,
            P(tr, r->save_mean), P(tr, r->save_inv)));
        break;
    case L_RELU:
        /* The output stands in for the input: for ReLU both give the same
         * mask, and the input may already be gone (in place, or freed). */
        DNN_STEP(cudnnActivationBackward(tr->dnn, r->adesc, &one, TD(y), DATA(y), TD(y),
                                            DIFF(y), TD(y), DATA(y), &beta0, TD(x), DIFF(x)));
        break;
    case L_MAXPOOL:
    case L_AVGPOOL:
        DNN_STEP(cudnnPoolingBackward(tr->dnn, r->pdesc, &one, TD(y), DATA(y), TD(y), DIFF(y),
                                         TD(x), DATA(x), &beta0, TD(x), DIFF(x)));
        break;
    case L_LRN:
        DNN_STEP(cudnnLRNCrossChannelBackward(tr->dnn, r->ldesc, CUDNN_LRN_CROSS_CHANNEL_DIM1,
                                                 &one, TD(y), DATA(y), TD(y), DIFF(y), TD(x),
                                                 DATA(x), &beta0, TD(x), DIFF(x)));
        break;
    case L_DROPOUT:
        DNN_STEP(cudnnDropoutBackward(tr->dnn, r->ddesc, TD(y), DIFF(y), TD(x), DIFF(x),
                                         P(tr, r->reserve), tr->bufs[r->reserve].bytes));
        break;
    case L_FC: fc_backward(tr, li); break;
    case L_CONCAT:
        for (int k = 0; k < l->nin; k++) {
            if (!n->tensors[l->in[k]].needs_diff)
                continue;
            const float beta = r->accum[k] ? 1.0f : 0.0f;
            DNN_STEP(cudnnTransformTensor(tr->dnn, &one, r->views[k], DIFF(y) + r->offsets[k],
                                             &beta, TD(l->in[k]), DIFF(l->in[k])));
        }
        break;
    case L_ADD:
        for (int k = 0; k < l->nin; k++) {
            const float beta = r->accum[k] ? 1.0f : 0.0f;
            DNN_STEP(cudnnAddTensor(tr->dnn, &one, TD(y), DIFF(y), &beta, TD(l->in[k]),
                                       DIFF(l->in[k])));
        }
        break;
    case L_SOFTMAX_LOSS: {
        /* d(loss)/d(logits) = (prob - onehot) / batch */
        int count = n->input.n * n->classes;
        float scale = 1.0f / (float)n->input.n, neg = -scale;
        if (tr->kernels_ready) {
            count_step(tr);
            kernel_loss_grad(DIFF(x), DATA(y), DATA(n->label_tensor), count, scale);
        } else
            BLAS_STEP(cublasSgeam(tr->blas, CUBLAS_OP_N, CUBLAS_OP_N, n->classes, n->input.n,
                                     &scale, DATA(y), n->classes, &neg, DATA(n->label_tensor),
                                     n->classes, DIFF(x), n->classes));
        break;
    }
    }
}

/* ---- update ------------------------------------------------------------- */

/* Caffe's SGD with momentum and weight decay:
 * grad += wd * w; hist = momentum * hist + lr * grad; w -= hist. */
static void update(trainer *tr)
{
    const train_options *o = tr->opt;
    const float lr = o->lr, mom = o->momentum, wd = o->weight_decay, minus_one = -1.0f;
    for (int p = 0; p < tr->n->nparams; p++) {
        param_rt *q = &tr->prt[p];
        int count = (int)tr->n->params[p].count;
        float *w = P(tr, q->value), *g = P(tr, q->grad), *h = P(tr, q->hist);
        if (tr->kernels_ready) {
            count_step(tr);
            kernel_sgd(w, g, h, count, lr, mom, wd);
            continue;
        }
        BLAS_STEP(cublasSaxpy(tr->blas, count, &wd, w, 1, g, 1));
        BLAS_STEP(cublasSscal(tr->blas, count, &mom, h, 1));
        BLAS_STEP(cublasSaxpy(tr->blas, count, &lr, g, 1, h, 1));
        BLAS_STEP(cublasSaxpy(tr->blas, count, &minus_one, h, 1, w, 1));
    }
}

/* ---- iteration ---------------------------------------------------------- */

static void run_step(trainer *tr, int s, uses *u)
{
    step_uses(tr, s, u);
    for (int i = 0; i < u->n; i++) {
        int id = u->ids[i];
        if (tr->bufs[id].ptr || tr->bufs[id].bytes == 0)
            continue;
        buf_alloc(tr, id);
        /* Momentum starts at zero the first time it is touched. */
        if (tr->bufs[id].cls == BUF_KEEP && s == update_step(tr))
            zero_momentum(tr, id);
    }
    int L = tr->n->nlayers;
    tr->phase = s == update_step(tr) ? 2 : s < L ? 0 : 1;
    if (s == update_step(tr))
        update(tr);
    else if (s < L)
        forward(tr, s);
    else
        backward(tr, 2 * L - 1 - s);
    if (tr->opt->alloc != ALLOC_DYNAMIC)
        return;
    for (int i = 0; i < u->n; i++) {
        dbuf *d = &tr->bufs[u->ids[i]];
        if (d->cls == BUF_TRANSIENT && d->last == s)
            buf_release(tr, u->ids[i]);
    }
}

float trainer_iteration(trainer *tr)
{
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    tr->training = 1;
    if (tr->alloc_log)
        fprintf(tr->alloc_log, "iter %ld\n", tr->iter + 1);
    trainer_set_batch(tr, train_batch_of(tr->opt, tr->batch0, tr->iter + 1));
    CUDA_CHECK(cudaEventRecord(start, 0));
    /* --phase-times: events after the data step, the last forward step (the
     * loss) and the last backward step, so that published forward+backward
     * figures, which leave out data loading and the update, can be compared. */
    int L = tr->n->nlayers;
    int marks[3] = {0, L - 1, 2 * L - 2};
    cudaEvent_t mark_ev[3];
    int nmarks = tr->opt->phase_times ? 3 : 0;
    for (int i = 0; i < nmarks; i++)
        CUDA_CHECK(cudaEventCreate(&mark_ev[i]));
    tr->step_count[0] = tr->step_count[1] = tr->step_count[2] = 0;
    uses u = {0};
    for (int s = 0, m = 0; s < tr->nsteps; s++) {
        run_step(tr, s, &u);
        if (m < nmarks && s == marks[m])
            CUDA_CHECK(cudaEventRecord(mark_ev[m++], 0));
    }
    free(u.ids);
    CUDA_CHECK(cudaEventRecord(stop, 0));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (nmarks) {
        cudaEvent_t edges[5] = {start, mark_ev[0], mark_ev[1], mark_ev[2], stop};
        for (int i = 0; i < 4; i++)
            CUDA_CHECK(cudaEventElapsedTime(&tr->phase_ms[i], edges[i], edges[i + 1]));
        for (int i = 0; i < nmarks; i++)
            CUDA_CHECK(cudaEventDestroy(mark_ev[i]));
    }
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    trainer_sample_memory(tr);
    tr->iter++;
    return ms;
}

/* ---- evaluation ----------------------------------------------------------- */

static void run_eval_step(trainer *tr, int s, uses *u)
{
    step_uses_as(tr, s, 1, u);
    for (int i = 0; i < u->n; i++)
        if (!tr->bufs[u->ids[i]].ptr && tr->bufs[u->ids[i]].bytes)
            buf_alloc(tr, u->ids[i]);
    forward(tr, s);
    if (tr->opt->alloc != ALLOC_DYNAMIC)
        return;
    /* nothing is kept for a backward pass: each map goes after its last
     * reader in the pass */
    for (int i = 0; i < u->n; i++) {
        dbuf *d = &tr->bufs[u->ids[i]];
        if (d->cls == BUF_TRANSIENT && d->eval_last == s)
            buf_release(tr, u->ids[i]);
    }
}

float trainer_eval(trainer *tr)
{
    int train = tr->n->input.n;
    int batch = tr->opt->eval_batch > 0 ? tr->opt->eval_batch : train;
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    CUDA_CHECK(cudaEventRecord(start, 0));
    trainer_set_batch(tr, batch);
    tr->evaluating = 1;
    tr->step_count[3] = 0;
    uses u = {0};
    for (int s = 0; s < tr->n->nlayers; s++)
        run_eval_step(tr, s, &u);
    free(u.ids);
    tr->evaluating = 0;
    trainer_set_batch(tr, train);
    CUDA_CHECK(cudaEventRecord(stop, 0));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    trainer_sample_memory(tr);
    return ms;
}

/* ---- changing the batch ------------------------------------------------------ */

/* A buffer's size at the new batch, and what the style's framework does
 * with the memory it holds (each buffer once: in-place maps share one). */
static void resize_buf(trainer *tr, int id, size_t bytes, char *seen)
{
    if (id < 0 || seen[id])
        return;
    seen[id] = 1;
    dbuf *d = &tr->bufs[id];
    d->bytes = bytes;
    if (!d->ptr)
        return;
    switch (tr->opt->alloc) {
    case ALLOC_CAFFE:
        /* Blob::Reshape: the memory stays while it is large enough (a
         * smaller batch uses the front of it), else it is freed and
         * allocated anew at its next use */
        if (bytes > d->cap)
            buf_release(tr, id);
        break;
    case ALLOC_DARKNET:
        /* resize_network: every output, delta and the workspace freed and
         * allocated anew at once */
        buf_release(tr, id);
        buf_alloc(tr, id);
        break;
    case ALLOC_DYNAMIC:
        /* held between iterations only when long-lived: allocated anew at
         * its next use */
        if (bytes != d->cap)
            buf_release(tr, id);
        break;
    }
}

void trainer_set_batch(trainer *tr, int batch)
{
    net *n = tr->n;
    if (batch == n->input.n)
        return;
    n->input.n = batch;
    for (int t = 0; t < n->ntensors; t++) {
        shape *x = &n->tensors[t].s;
        x->n = batch;
        CUDNN_CHECK(cudnnSetTensor4dDescriptor(tr->trt[t].desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                               x->n, x->c, x->h, x->w));
    }
    char *seen = calloc((size_t)tr->nbufs, 1);
    if (!seen) {
        fprintf(stderr, "sntrain: out of host memory\n");
        trainer_exit(EXIT_CUDA_ERROR);
    }
    size_t largest = 0;
    for (int li = 0; li < n->nlayers; li++) {
        const layer *l = &n->layers[li];
        layer_rt *r = &tr->lrt[li];
        shape y = n->tensors[l->out].s;
        switch (l->type) {
        case L_CONV: {
            pick_conv_algos(tr, li);
            size_t need = r->ws_fwd;
            if (r->ws_bwf > need) need = r->ws_bwf;
            if (r->ws_bwd > need) need = r->ws_bwd;
            if (need > largest) largest = need;
            resize_buf(tr, r->ws_buf, need, seen);
            break;
        }
        case L_DROPOUT: {
            size_t reserve = 0;
            CUDNN_CHECK(cudnnDropoutGetReserveSpaceSize(tr->trt[l->in[0]].desc, &reserve));
            resize_buf(tr, r->reserve, reserve, seen);
            break;
        }
        case L_CONCAT:
            for (int k = 0; k < l->nin; k++) {
                shape x = n->tensors[l->in[k]].s;
                CUDNN_CHECK(cudnnSetTensor4dDescriptorEx(r->views[k], CUDNN_DATA_FLOAT, x.n, x.c, x.h,
                                                         x.w, y.c * y.h * y.w, y.h * y.w, y.w, 1));
            }
            break;
        default: break;
        }
    }
    resize_buf(tr, tr->shared_ws, largest, seen);
    for (int t = 0; t < n->ntensors; t++) {
        size_t bytes = shape_count(n->tensors[t].s) * sizeof(float);
        resize_buf(tr, tr->trt[t].data, bytes, seen);
        resize_buf(tr, tr->trt[t].diff, bytes, seen);
    }
    /* the FC bias's vector of ones, refilled as Caffe's InnerProduct
     * layer refills its bias multiplier when it reshapes */
    resize_buf(tr, tr->ones, sizeof(float) * (size_t)batch, seen);
    buf_alloc(tr, tr->ones);
    float *ones = malloc(sizeof(float) * (size_t)batch);
    if (!ones) {
        fprintf(stderr, "sntrain: out of host memory\n");
        trainer_exit(EXIT_CUDA_ERROR);
    }
    for (int i = 0; i < batch; i++)
        ones[i] = 1.0f;
    CUDA_CHECK(cudaMemcpy(P(tr, tr->ones), ones, sizeof(float) * (size_t)batch, cudaMemcpyHostToDevice));
    free(ones);
    free(seen);
}

int trainer_dump_steps(const trainer *tr, const char *path)
{
    FILE *f = fopen(path, "a");
    if (!f) {
        perror(path);
        return -1;
    }
    fprintf(f, "steps forward %ld backward %ld update %ld\n", tr->step_count[0], tr->step_count[1],
            tr->step_count[2]);
    if (fclose(f) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}

/* FNV-1a over the bytes of every parameter, in parameter order. The copy
 * lands in a zeroed buffer, not in a style's host mirror, so that runs
 * without arithmetic (nothing comes back) agree across styles too. */
TRAINER_ONE_THREAD uint64_t trainer_checksum(trainer *tr)
{
    CUDA_CHECK(cudaDeviceSynchronize());
    uint64_t h = 0xcbf29ce484222325ull;
    for (int p = 0; p < tr->n->nparams; p++) {
        size_t bytes = tr->n->params[p].count * sizeof(float);
        unsigned char *host = calloc(bytes, 1);
        if (!host) {
            fprintf(stderr, "sntrain: out of host memory for the checksum\n");
            trainer_exit(EXIT_CUDA_ERROR);
        }
        CUDA_CHECK(cudaMemcpy(host, P(tr, tr->prt[p].value), bytes, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < bytes; i++) {
            h ^= host[i];
            h *= 0x100000001b3ull;
        }
        free(host);
    }
    return h;
}

int trainer_close_log(trainer *tr)
{
    if (!tr->alloc_log)
        return 0;
    int bad = ferror(tr->alloc_log);
    bad |= fclose(tr->alloc_log) != 0;
    tr->alloc_log = NULL;
    if (bad)
        fprintf(stderr, "sntrain: could not write %s\n", tr->opt->log_allocs);
    return bad ? -1 : 0;
}

void trainer_teardown(trainer *tr)
{
    trainer_close_log(tr);
    prefetch_stop(&tr->pf);
    set_exit_hook(NULL);
    active_trainer = NULL;
    const net *n = tr->n;
    for (int i = 0; i < tr->nbufs; i++)
        buf_release(tr, i);
    for (int s = 0; s < PREFETCH_SLOTS; s++) {
        prefetch_slot *sl = &tr->pf.slot[s];
        if (sl->host_images) {
            cudaFreeHost(sl->host_images);
            cudaFreeHost(sl->host_onehot);
            cudaFree(sl->dev_images);
            cudaFree(sl->dev_onehot);
        }
        free(sl->labels);
    }
    for (int p = 0; p < n->nparams; p++) {
        if (!tr->prt[p].host)
            continue;
        if (tr->opt->alloc == ALLOC_CAFFE)
            cudaFreeHost(tr->prt[p].host);
        else
            free(tr->prt[p].host);
    }
    for (int li = 0; li < n->nlayers; li++) {
        layer_rt *r = &tr->lrt[li];
        if (r->wdesc) cudnnDestroyFilterDescriptor(r->wdesc);
        if (r->cdesc) cudnnDestroyConvolutionDescriptor(r->cdesc);
        if (r->bias_desc) cudnnDestroyTensorDescriptor(r->bias_desc);
        if (r->pdesc) cudnnDestroyPoolingDescriptor(r->pdesc);
        if (r->adesc) cudnnDestroyActivationDescriptor(r->adesc);
        if (r->ldesc) cudnnDestroyLRNDescriptor(r->ldesc);
        if (r->odesc) cudnnDestroyOpTensorDescriptor(r->odesc);
        if (r->bn_desc) cudnnDestroyTensorDescriptor(r->bn_desc);
        if (r->ddesc) cudnnDestroyDropoutDescriptor(r->ddesc);
        for (int k = 0; r->views && k < n->layers[li].nin; k++)
            cudnnDestroyTensorDescriptor(r->views[k]);
        free(r->views);
        free(r->offsets);
        free(r->accum);
    }
    for (int t = 0; t < n->ntensors; t++)
        cudnnDestroyTensorDescriptor(tr->trt[t].desc);
    if (tr->opt->alloc == ALLOC_CAFFE)
        cudaFreeHost(tr->host_prob);
    else
        free(tr->host_prob);
    free(tr->host_images);
    free(tr->host_onehot);
    free(tr->host_labels);
    dataset_free(&tr->ds);
    cublasDestroy(tr->blas);
    cudnnDestroy(tr->dnn);
    free(tr->trt);
    free(tr->prt);
    free(tr->lrt);
    free(tr->bufs);
}
