/*
 * conv.c — the convolution entry points of the simulated cuDNN: output
 * dimensions, forward, backward data, backward filter, backward bias, the
 * fused convolution-bias-activation, workspace queries, the heuristic
 * (Get*Algorithm_v7) and the measured search (Find*Algorithm[Ex]).
 *
 * Each call validates the problem, refuses an algorithm that does not
 * support it (CUDNN_STATUS_NOT_SUPPORTED) or a workspace smaller than the
 * algorithm needs (CUDNN_STATUS_BAD_PARAM), checks residency of every range
 * it touches, computes through the shared path in conv_compute.c and charges
 * the algorithm's modelled time to the handle's stream.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "sim/cudnn/conv.h"

/* ---- geometry ------------------------------------------------------------- */

static cudnnStatus_t check_filter(const struct cudnnFilterStruct *w, const char *what)
{
    if (!w || w->magic != SIMDNN_MAGIC_FILTER)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: invalid filter descriptor", what);
    if (w->nb_dims == 0)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: filter descriptor not set", what);
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t check_conv(const struct cudnnConvolutionStruct *c, const char *what)
{
    if (!c || c->magic != SIMDNN_MAGIC_CONV)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: invalid convolution descriptor", what);
    if (c->spatial == 0)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: convolution descriptor not set", what);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t simdnn_conv_output_dims(const struct cudnnTensorStruct *x, const struct cudnnFilterStruct *w,
                                      const struct cudnnConvolutionStruct *conv, int *out, const char *what)
{
    cudnnStatus_t st;
    if ((st = check_conv(conv, what)) || (st = simdnn_check_tensor(x, what)) || (st = check_filter(w, what)))
        return st;
    int nb = conv->spatial + 2;
    if (x->nb_dims != nb || w->nb_dims != nb)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM,
                           "%s: tensor (%d dims), filter (%d dims) and convolution (%d spatial) disagree", what,
                           x->nb_dims, w->nb_dims, conv->spatial);
    if (x->dim[1] != (int64_t)w->dim[1] * conv->groups)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: input has %d channels, filter %d x %d groups", what,
                           x->dim[1], w->dim[1], conv->groups);
    /* The geometry in 64 bits: a dilated filter extent or a padded input can
     * pass INT_MAX for descriptor values cuDNN accepts one by one. */
    for (int i = 0; i < conv->spatial; i++) {
        int64_t extent = (int64_t)(w->dim[i + 2] - 1) * conv->dilation[i] + 1;
        int64_t padded = (int64_t)x->dim[i + 2] + 2 * (int64_t)conv->pad[i];
        if (padded < extent)
            return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: filter larger than the padded input", what);
        int64_t o = 1 + (padded - extent) / conv->stride[i];
        if (o > INT_MAX)
            return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: output dimension %d does not fit in an int", what, i + 2);
        out[i + 2] = (int)o;
    }
    out[0] = x->dim[0];
    out[1] = w->dim[0];
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t simdnn_conv_geometry(const struct cudnnTensorStruct *x, const struct cudnnFilterStruct *w,
                                   const struct cudnnConvolutionStruct *conv, const struct cudnnTensorStruct *y,
                                   simdnn_conv *g, const char *what)
{
    int out[CUDNN_DIM_MAX];
    cudnnStatus_t st = simdnn_conv_output_dims(x, w, conv, out, what);
    if (st || (st = simdnn_check_tensor(y, what)))
        return st;
    int nb = x->nb_dims;
    if (y->nb_dims != nb)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: output has %d dims, expected %d", what, y->nb_dims, nb);
    for (int i = 0; i < nb; i++)
        if (y->dim[i] != out[i])
            return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: output dimension %d is %d, expected %d", what, i,
                               y->dim[i], out[i]);
    if (w->dim[0] % conv->groups)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: %d output channels not a multiple of %d groups", what,
                           w->dim[0], conv->groups);
    if (x->dtype != w->dtype || x->dtype != y->dtype)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: tensor and filter data types differ", what);
    if (nb != 4 && nb != 5)
        return simdnn_fail(CUDNN_STATUS_NOT_SUPPORTED, "%s: only 2-D and 3-D convolutions are supported", what);
    if ((st = simdnn_check_float_tensor(x, what)))
        return st;

    memset(g, 0, sizeof *g);
    int lead = 5 - nb; /* 1 for 2-D: the depth dimension is a unit one */
    g->nsp = nb - 2;
    g->n = x->dim[0];
    g->c = x->dim[1];
    g->k = w->dim[0];
    g->groups = conv->groups;
    g->cg = w->dim[1];
    g->kg = g->k / g->groups;
    g->flip = conv->mode == CUDNN_CONVOLUTION;
    g->math = conv->math_type;
    for (int i = 0; i < 3; i++) {
        int s = i - lead; /* index into the descriptor's spatial arrays */
        g->in[i] = s >= 0 ? x->dim[s + 2] : 1;
        g->out[i] = s >= 0 ? y->dim[s + 2] : 1;
        g->filt[i] = s >= 0 ? w->dim[s + 2] : 1;
        g->pad[i] = s >= 0 ? conv->pad[s] : 0;
        g->str[i] = s >= 0 ? conv->stride[s] : 1;
        g->dil[i] = s >= 0 ? conv->dilation[s] : 1;
        g->xs[i + 2] = s >= 0 ? x->stride[s + 2] : 0;
        g->ys[i + 2] = s >= 0 ? y->stride[s + 2] : 0;
    }
    g->xs[0] = x->stride[0], g->xs[1] = x->stride[1];
    g->ys[0] = y->stride[0], g->ys[1] = y->stride[1];
    /* Filter layout: KCRS for NCHW, KRSC for NHWC. */
    int64_t taps = simdnn_conv_taps(g);
    if (w->format == CUDNN_TENSOR_NHWC) {
        g->ws[0] = taps * g->cg;
        g->ws[1] = 1;
        g->ws[2] = (int64_t)g->filt[1] * g->filt[2] * g->cg;
        g->ws[3] = (int64_t)g->filt[2] * g->cg;
        g->ws[4] = g->cg;
    } else {
        g->ws[0] = taps * g->cg;
        g->ws[1] = taps;
        g->ws[2] = (int64_t)g->filt[1] * g->filt[2];
        g->ws[3] = g->filt[2];
        g->ws[4] = 1;
    }
    return CUDNN_STATUS_SUCCESS;
}

static size_t filter_bytes(const struct cudnnFilterStruct *w)
{
    size_t n = simdnn_dtype_size(w->dtype);
    for (int i = 0; i < w->nb_dims; i++)
        n *= (size_t)w->dim[i];
    return n;
}

cudnnStatus_t cudnnGetConvolutionNdForwardOutputDim(const cudnnConvolutionDescriptor_t convDesc,
                                                    const cudnnTensorDescriptor_t inputTensorDesc,
                                                    const cudnnFilterDescriptor_t filterDesc, int nbDims,
                                                    int tensorOuputDimA[])
{
    int out[CUDNN_DIM_MAX];
    const char *what = "cudnnGetConvolutionNdForwardOutputDim";
    if (!tensorOuputDimA)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL output", what);
    cudnnStatus_t st = simdnn_conv_output_dims(inputTensorDesc, filterDesc, convDesc, out, what);
    if (st)
        return st;
    if (nbDims != convDesc->spatial + 2)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: nbDims %d, expected %d", what, nbDims,
                           convDesc->spatial + 2);
    memcpy(tensorOuputDimA, out, (size_t)nbDims * sizeof *out);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t convDesc,
                                                    const cudnnTensorDescriptor_t inputTensorDesc,
                                                    const cudnnFilterDescriptor_t filterDesc, int *n, int *c,
                                                    int *h, int *w)
{
    int out[4];
    if (!n || !c || !h || !w)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolution2dForwardOutputDim: NULL output");
    cudnnStatus_t st = cudnnGetConvolutionNdForwardOutputDim(convDesc, inputTensorDesc, filterDesc, 4, out);
    if (st)
        return st;
    *n = out[0], *c = out[1], *h = out[2], *w = out[3];
    return CUDNN_STATUS_SUCCESS;
}

/* ---- shared call path ----------------------------------------------------- */

/* Checks the algorithm and the workspace for a call and returns its model. */
static cudnnStatus_t prepare_call(cudnnHandle_t h, const simdnn_conv *g, simdnn_conv_op op, int algo,
                                  void *workspace, size_t ws_bytes, int beta_reads, simdnn_algo_info *info,
                                  const char *what)
{
    if (algo < 0 || algo >= simdnn_conv_algo_count(op))
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: algorithm %d out of range", what, algo);
    simdnn_conv_algo(h, g, op, algo, beta_reads, info);
    if (!info->supported)
        return simdnn_fail(CUDNN_STATUS_NOT_SUPPORTED, "%s: algorithm %d does not support this configuration",
                           what, algo);
    if (ws_bytes < info->workspace || (info->workspace > 0 && !workspace))
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: algorithm %d needs %zu bytes of workspace, got %zu%s", what,
                           algo, info->workspace, ws_bytes, workspace ? "" : " (NULL)");
    simgpu_check_range(workspace, info->workspace, 1, what);
    return CUDNN_STATUS_SUCCESS;
}

struct fwd_emit {
    float *y;
    float alpha, beta;
    /* fused bias-activation */
    const float *z, *bias;
    const struct cudnnTensorStruct *zd, *bd;
    float alpha2;
    const struct cudnnActivationStruct *act;
};

static void emit_forward(void *vctx, const simdnn_conv *g, int n, int gi, const float *out)
{
    struct fwd_emit *e = vctx;
    for (int k = 0; k < g->kg; k++) {
        int ch = gi * g->kg + k;
        float *yk = e->y + n * g->ys[0] + (int64_t)ch * g->ys[1];
        for (int od = 0; od < g->out[0]; od++)
            for (int oh = 0; oh < g->out[1]; oh++) {
                float *yr = yk + od * g->ys[2] + oh * g->ys[3];
                for (int ow = 0; ow < g->out[2]; ow++)
                    yr[ow * g->ys[4]] = simdnn_blend(e->alpha, *out++, e->beta, yr[ow * g->ys[4]]);
            }
    }
}

/* y = act(alpha1 * conv + alpha2 * z + bias); z may be y itself. */
static void emit_bias_activation(void *vctx, const simdnn_conv *g, int n, int gi, const float *out)
{
    struct fwd_emit *e = vctx;
    int lead = 5 - e->zd->nb_dims;
    for (int k = 0; k < g->kg; k++) {
        int ch = gi * g->kg + k;
        float b = e->bias[(int64_t)ch * e->bd->stride[1]];
        float *yk = e->y + n * g->ys[0] + (int64_t)ch * g->ys[1];
        const float *zk = e->z + n * (int64_t)e->zd->stride[0] + (int64_t)ch * e->zd->stride[1];
        int64_t zs[3];
        for (int i = 0; i < 3; i++)
            zs[i] = i - lead >= 0 ? e->zd->stride[i - lead + 2] : 0;
        for (int od = 0; od < g->out[0]; od++)
            for (int oh = 0; oh < g->out[1]; oh++) {
                float *yr = yk + od * g->ys[2] + oh * g->ys[3];
                const float *zr = zk + od * zs[0] + oh * zs[1];
                for (int ow = 0; ow < g->out[2]; ow++) {
                    float v = e->alpha * *out++;
                    if (e->alpha2 != 0.0f)
                        v += e->alpha2 * zr[ow * zs[2]];
                    v += b;
                    yr[ow * g->ys[4]] = (float)simdnn_activate(e->act, v);
                }
            }
    }
}

/* ---- forward -------------------------------------------------------------- */

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xDesc,
                                      const void *x, const cudnnFilterDescriptor_t wDesc, const void *w,
                                      const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionFwdAlgo_t algo,
                                      void *workSpace, size_t workSpaceSizeInBytes, const void *beta,
                                      const cudnnTensorDescriptor_t yDesc, void *y)
{
    const char *what = "cudnnConvolutionForward";
    simdnn_conv g;
    simdnn_algo_info info;
    cudnnStatus_t st;
    if ((st = simdnn_check_work(handle)) || (st = simdnn_conv_geometry(xDesc, wDesc, convDesc, yDesc, &g, what)))
        return st;
    if (!alpha || !beta || !x || !w || !y)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL pointer argument", what);
    float al = *(const float *)alpha, be = *(const float *)beta;
    if ((st = prepare_call(handle, &g, SIMDNN_CONV_FWD, algo, workSpace, workSpaceSizeInBytes, be != 0.0f, &info,
                           what)))
        return st;
    simdnn_check_tensor_range(xDesc, x, 0, "cudnnConvolutionForward x");
    simgpu_check_range(w, filter_bytes(wDesc), 0, "cudnnConvolutionForward w");
    simdnn_check_tensor_range(yDesc, y, 1, "cudnnConvolutionForward y");
    if (simgpu_compute_enabled()) {
        struct fwd_emit e = {.y = y, .alpha = al, .beta = be};
        if (simdnn_conv_forward(&g, x, w, emit_forward, &e))
            return simdnn_scratch_failed(handle, what);
    }
    simgpu_enqueue(simdnn_stream(handle), SIMGPU_COMPUTE, info.ns, what);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionBiasActivationForward(
    cudnnHandle_t handle, const void *alpha1, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnFilterDescriptor_t wDesc, const void *w, const cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionFwdAlgo_t algo, void *workSpace, size_t workSpaceSizeInBytes, const void *alpha2,
    const cudnnTensorDescriptor_t zDesc, const void *z, const cudnnTensorDescriptor_t biasDesc, const void *bias,
    const cudnnActivationDescriptor_t activationDesc, const cudnnTensorDescriptor_t yDesc, void *y)
{
    const char *what = "cudnnConvolutionBiasActivationForward";
    simdnn_conv g;
    simdnn_algo_info info;
    cudnnStatus_t st;
    if ((st = simdnn_check_work(handle)) || (st = simdnn_conv_geometry(xDesc, wDesc, convDesc, yDesc, &g, what)) ||
        (st = simdnn_check_float_tensor(zDesc, what)) || (st = simdnn_check_float_tensor(biasDesc, what)))
        return st;
    if (!alpha1 || !alpha2 || !x || !w || !z || !bias || !y)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL pointer argument", what);
    if (!activationDesc || activationDesc->magic != SIMDNN_MAGIC_ACT)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: invalid activation descriptor", what);
    if (!simdnn_same_dims(zDesc, yDesc))
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: z and y dimensions differ", what);
    int bias_ok = biasDesc->nb_dims == yDesc->nb_dims && biasDesc->dim[1] == yDesc->dim[1];
    for (int i = 0; i < biasDesc->nb_dims && bias_ok; i++)
        if (i != 1 && biasDesc->dim[i] != 1)
            bias_ok = 0;
    if (!bias_ok)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: bias must be 1 x K x 1 x 1", what);
    /* Documented: RELU, or IDENTITY with IMPLICIT_PRECOMP_GEMM only. */
    cudnnActivationMode_t am = activationDesc->mode;
    if (am != CUDNN_ACTIVATION_RELU && am != CUDNN_ACTIVATION_IDENTITY)
        return simdnn_fail(CUDNN_STATUS_NOT_SUPPORTED, "%s: activation must be RELU or IDENTITY", what);
    if (am == CUDNN_ACTIVATION_IDENTITY && algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
        return simdnn_fail(CUDNN_STATUS_NOT_SUPPORTED, "%s: IDENTITY needs IMPLICIT_PRECOMP_GEMM", what);
    float a2 = *(const float *)alpha2;
    if ((st = prepare_call(handle, &g, SIMDNN_CONV_FWD, algo, workSpace, workSpaceSizeInBytes, a2 != 0.0f, &info,
                           what)))
        return st;
    simdnn_check_tensor_range(xDesc, x, 0, "cudnnConvolutionBiasActivationForward x");
    simgpu_check_range(w, filter_bytes(wDesc), 0, "cudnnConvolutionBiasActivationForward w");
    if (a2 != 0.0f)
        simdnn_check_tensor_range(zDesc, z, 0, "cudnnConvolutionBiasActivationForward z");
    simdnn_check_tensor_range(biasDesc, bias, 0, "cudnnConvolutionBiasActivationForward bias");
    simdnn_check_tensor_range(yDesc, y, 1, "cudnnConvolutionBiasActivationForward y");
    if (simgpu_compute_enabled()) {
        struct fwd_emit e = {.y = y, .alpha = *(const float *)alpha1, .z = z, .bias = bias, .zd = zDesc,
                             .bd = biasDesc, .alpha2 = a2, .act = activationDesc};
        if (simdnn_conv_forward(&g, x, w, emit_bias_activation, &e))
            return simdnn_scratch_failed(handle, what);
    }
    simgpu_enqueue(simdnn_stream(handle), SIMGPU_COMPUTE, info.ns, what);
    return CUDNN_STATUS_SUCCESS;
}

/* ---- backward ------------------------------------------------------------- */

cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void *alpha,
                                           const cudnnFilterDescriptor_t wDesc, const void *w,
                                           const cudnnTensorDescriptor_t dyDesc, const void *dy,
                                           const cudnnConvolutionDescriptor_t convDesc,
                                           cudnnConvolutionBwdDataAlgo_t algo, void *workSpace,
                                           size_t workSpaceSizeInBytes, const void *beta,
                                           const cudnnTensorDescriptor_t dxDesc, void *dx)
{
    const char *what = "cudnnConvolutionBackwardData";
    simdnn_conv g;
    simdnn_algo_info info;
    cudnnStatus_t st;
    if ((st = simdnn_check_work(handle)) || (st = simdnn_conv_geometry(dxDesc, wDesc, convDesc, dyDesc, &g, what)))
        return st;
    if (!alpha || !beta || !w || !dy || !dx)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL pointer argument", what);
    float al = *(const float *)alpha, be = *(const float *)beta;
    if ((st = prepare_call(handle, &g, SIMDNN_CONV_BWD_DATA, algo, workSpace, workSpaceSizeInBytes, be != 0.0f,
                           &info, what)))
        return st;
    simgpu_check_range(w, filter_bytes(wDesc), 0, "cudnnConvolutionBackwardData w");
    simdnn_check_tensor_range(dyDesc, dy, 0, "cudnnConvolutionBackwardData dy");
    simdnn_check_tensor_range(dxDesc, dx, 1, "cudnnConvolutionBackwardData dx");
    if (simgpu_compute_enabled() && simdnn_conv_backward_data(&g, w, dy, dx, al, be))
        return simdnn_scratch_failed(handle, what);
    simgpu_enqueue(simdnn_stream(handle), SIMGPU_COMPUTE, info.ns, what);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void *alpha,
                                             const cudnnTensorDescriptor_t xDesc, const void *x,
                                             const cudnnTensorDescriptor_t dyDesc, const void *dy,
                                             const cudnnConvolutionDescriptor_t convDesc,
                                             cudnnConvolutionBwdFilterAlgo_t algo, void *workSpace,
                                             size_t workSpaceSizeInBytes, const void *beta,
                                             const cudnnFilterDescriptor_t dwDesc, void *dw)
{
    const char *what = "cudnnConvolutionBackwardFilter";
    simdnn_conv g;
    simdnn_algo_info info;
    cudnnStatus_t st;
    if ((st = simdnn_check_work(handle)) || (st = simdnn_conv_geometry(xDesc, dwDesc, convDesc, dyDesc, &g, what)))
        return st;
    if (!alpha || !beta || !x || !dy || !dw)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL pointer argument", what);
    float al = *(const float *)alpha, be = *(const float *)beta;
    if ((st = prepare_call(handle, &g, SIMDNN_CONV_BWD_FILTER, algo, workSpace, workSpaceSizeInBytes, be != 0.0f,
                           &info, what)))
        return st;
    simdnn_check_tensor_range(xDesc, x, 0, "cudnnConvolutionBackwardFilter x");
    simdnn_check_tensor_range(dyDesc, dy, 0, "cudnnConvolutionBackwardFilter dy");
    simgpu_check_range(dw, filter_bytes(dwDesc), 1, "cudnnConvolutionBackwardFilter dw");
    if (simgpu_compute_enabled() && simdnn_conv_backward_filter(&g, x, dy, dw, al, be))
        return simdnn_scratch_failed(handle, what);
    simgpu_enqueue(simdnn_stream(handle), SIMGPU_COMPUTE, info.ns, what);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionBackwardBias(cudnnHandle_t handle, const void *alpha,
                                           const cudnnTensorDescriptor_t dyDesc, const void *dy, const void *beta,
                                           const cudnnTensorDescriptor_t dbDesc, void *db)
{
    const char *what = "cudnnConvolutionBackwardBias";
    cudnnStatus_t st;
    if ((st = simdnn_check_work(handle)) || (st = simdnn_check_float_tensor(dyDesc, what)) ||
        (st = simdnn_check_float_tensor(dbDesc, what)))
        return st;
    if (!alpha || !beta || !dy || !db)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL pointer argument", what);
    int ok = dbDesc->nb_dims == dyDesc->nb_dims && dbDesc->dim[1] == dyDesc->dim[1];
    for (int i = 0; i < dbDesc->nb_dims && ok; i++)
        if (i != 1 && dbDesc->dim[i] != 1)
            ok = 0;
    if (!ok)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: db must be 1 x C x 1 x 1 for dy's C", what);
    float al = *(const float *)alpha, be = *(const float *)beta;
    simdnn_check_tensor_range(dyDesc, dy, 0, "cudnnConvolutionBackwardBias dy");
    simdnn_check_tensor_range(dbDesc, db, 1, "cudnnConvolutionBackwardBias db");
    if (simgpu_compute_enabled()) {
        int64_t *sp;
        int64_t np = simdnn_spatial_offsets(dyDesc, &sp);
        if (np < 0)
            return simdnn_scratch_failed(handle, what);
        const float *g = dy;
        float *out = db;
        for (int c = 0; c < dyDesc->dim[1]; c++) {
            double sum = 0.0;
            for (int n = 0; n < dyDesc->dim[0]; n++) {
                const float *base = g + (int64_t)n * dyDesc->stride[0] + (int64_t)c * dyDesc->stride[1];
                for (int64_t p = 0; p < np; p++)
                    sum += base[sp[p]];
            }
            float *o = out + (int64_t)c * dbDesc->stride[1];
            *o = simdnn_blend(al, (float)sum, be, *o);
        }
        free(sp);
    }
    double n = (double)simdnn_tensor_elems(dyDesc);
    simdnn_charge(handle, what, n, SIMDNN_ELEMENTWISE_FLOP_EFF, n * sizeof(float), 0);
    return CUDNN_STATUS_SUCCESS;
}

/* ---- workspace queries ----------------------------------------------------- */

static cudnnStatus_t workspace_size(cudnnHandle_t h, const simdnn_conv *g, simdnn_conv_op op, int algo,
                                    size_t *size, const char *what)
{
    simdnn_algo_info info;
    if (!size)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: sizeInBytes is NULL", what);
    if (algo < 0 || algo >= simdnn_conv_algo_count(op))
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: algorithm %d out of range", what, algo);
    simdnn_conv_algo(h, g, op, algo, 0, &info);
    if (!info.supported)
        return simdnn_fail(CUDNN_STATUS_NOT_SUPPORTED, "%s: algorithm %d does not support this configuration",
                           what, algo);
    *size = info.workspace;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
                                                      const cudnnFilterDescriptor_t wDesc,
                                                      const cudnnConvolutionDescriptor_t convDesc,
                                                      const cudnnTensorDescriptor_t yDesc,
                                                      cudnnConvolutionFwdAlgo_t algo, size_t *sizeInBytes)
{
    const char *what = "cudnnGetConvolutionForwardWorkspaceSize";
    simdnn_conv g;
    cudnnStatus_t st;
    if ((st = simdnn_check_handle(handle)) || (st = simdnn_conv_geometry(xDesc, wDesc, convDesc, yDesc, &g, what)))
        return st;
    return workspace_size(handle, &g, SIMDNN_CONV_FWD, algo, sizeInBytes, what);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t handle,
                                                           const cudnnFilterDescriptor_t wDesc,
                                                           const cudnnTensorDescriptor_t dyDesc,
                                                           const cudnnConvolutionDescriptor_t convDesc,
                                                           const cudnnTensorDescriptor_t dxDesc,
                                                           cudnnConvolutionBwdDataAlgo_t algo, size_t *sizeInBytes)
{
    const char *what = "cudnnGetConvolutionBackwardDataWorkspaceSize";
    simdnn_conv g;
    cudnnStatus_t st;
    if ((st = simdnn_check_handle(handle)) || (st = simdnn_conv_geometry(dxDesc, wDesc, convDesc, dyDesc, &g, what)))
        return st;
    return workspace_size(handle, &g, SIMDNN_CONV_BWD_DATA, algo, sizeInBytes, what);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnHandle_t handle,
                                                             const cudnnTensorDescriptor_t xDesc,
                                                             const cudnnTensorDescriptor_t dyDesc,
                                                             const cudnnConvolutionDescriptor_t convDesc,
                                                             const cudnnFilterDescriptor_t gradDesc,
                                                             cudnnConvolutionBwdFilterAlgo_t algo,
                                                             size_t *sizeInBytes)
{
    const char *what = "cudnnGetConvolutionBackwardFilterWorkspaceSize";
    simdnn_conv g;
    cudnnStatus_t st;
    if ((st = simdnn_check_handle(handle)) ||
        (st = simdnn_conv_geometry(xDesc, gradDesc, convDesc, dyDesc, &g, what)))
        return st;
    return workspace_size(handle, &g, SIMDNN_CONV_BWD_FILTER, algo, sizeInBytes, what);
}

/* ---- algorithm ranking ------------------------------------------------------ */

/* The three perf structs share one layout; results are built in this form and
 * copied out field by field. */
struct perf_row {
    int algo;
    cudnnStatus_t status;
    float time;
    size_t memory;
    cudnnDeterminism_t determinism;
    double ns;
};

static int row_order(const void *pa, const void *pb)
{
    const struct perf_row *a = pa, *b = pb;
    int fa = a->status != CUDNN_STATUS_SUCCESS, fb = b->status != CUDNN_STATUS_SUCCESS;
    if (fa != fb)
        return fa - fb;
    if (!fa && a->ns != b->ns)
        return a->ns < b->ns ? -1 : 1;
    return a->algo - b->algo;
}

/* How a search treats each algorithm's workspace. */
enum search_kind { SEARCH_HEURISTIC, SEARCH_FIND, SEARCH_FIND_EX };

/* A device range every timed run reads or writes. */
struct run_range {
    const void *p;
    size_t bytes;
    int write;
};

/* Fills rows for every algorithm of op, ranked fastest first. A Find charges
 * one run of each algorithm that can run to the stream, declaring the ranges
 * the run touches, and blocks the host until the last completes, as the real
 * search does; the non-Ex search gets each algorithm's workspace from the
 * driver and reports CUDNN_STATUS_ALLOC_FAILED where it cannot, the Ex search
 * runs in the caller's workspace and reports it where that is too small. */
static int rank_algorithms(cudnnHandle_t h, const simdnn_conv *g, simdnn_conv_op op, enum search_kind kind,
                           void *ws, size_t ws_limit, const struct run_range *ranges, int nranges,
                           struct perf_row *rows, const char *what)
{
    int count = simdnn_conv_algo_count(op);
    uint64_t done = 0;
    for (int a = 0; a < count; a++) {
        simdnn_algo_info info;
        simdnn_conv_algo(h, g, op, a, 0, &info);
        struct perf_row *r = &rows[a];
        r->algo = a;
        r->ns = info.ns;
        r->determinism = info.determinism;
        r->memory = info.supported ? info.workspace : 0;
        r->time = -1.0f;
        r->status = info.supported ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_NOT_SUPPORTED;
        if (!info.supported || kind == SEARCH_HEURISTIC)
            continue;
        CUdeviceptr scratch = 0;
        if (kind == SEARCH_FIND && info.workspace > 0 &&
            simdnn_driver_alloc(&scratch, info.workspace) != CUDA_SUCCESS) {
            r->status = CUDNN_STATUS_ALLOC_FAILED;
            continue;
        }
        if (kind == SEARCH_FIND_EX && info.workspace > ws_limit) {
            r->status = CUDNN_STATUS_ALLOC_FAILED;
            continue;
        }
        for (int i = 0; i < nranges; i++)
            simgpu_check_range(ranges[i].p, ranges[i].bytes, ranges[i].write, what);
        simgpu_check_range(kind == SEARCH_FIND ? (void *)scratch : ws, info.workspace, 1, what);
        uint64_t t = simgpu_enqueue(simdnn_stream(h), SIMGPU_COMPUTE, info.ns, what);
        if (t > done)
            done = t;
        r->time = (float)((info.ns + simdnn_launch_ns(h)) / 1e6);
        if (scratch)
            simdnn_driver_free(scratch);
    }
    if (done)
        simgpu_host_wait_until(done);
    qsort(rows, (size_t)count, sizeof *rows, row_order);
    return count;
}

/* Copies ranked rows into one of the three cuDNN perf struct types. */
#define COPY_PERF(dst, rows, n, algo_type, math)                                                     \
    do {                                                                                             \
        for (int i_ = 0; i_ < (n); i_++) {                                                           \
            memset(&(dst)[i_], 0, sizeof((dst)[i_]));                                                 \
            (dst)[i_].algo = (algo_type)(rows)[i_].algo;                                             \
            (dst)[i_].status = (rows)[i_].status;                                                    \
            (dst)[i_].time = (rows)[i_].time;                                                        \
            (dst)[i_].memory = (rows)[i_].memory;                                                    \
            (dst)[i_].determinism = (rows)[i_].determinism;                                          \
            (dst)[i_].mathType = (math);                                                             \
        }                                                                                            \
    } while (0)

static cudnnStatus_t check_request(int requested, int *returned, const void *perf, const char *what)
{
    if (requested < 1 || !returned || !perf)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: bad requestedAlgoCount or NULL output", what);
    return CUDNN_STATUS_SUCCESS;
}

/* Buffers of the non-Ex search: the real one has no data pointers and
 * allocates its own operands through the driver before timing; the ranges
 * are pointed at them. */
static cudnnStatus_t alloc_operands(struct run_range r[3], CUdeviceptr p[3], const char *what)
{
    for (int i = 0; i < 3; i++) {
        p[i] = 0;
        if (simdnn_driver_alloc(&p[i], r[i].bytes) != CUDA_SUCCESS) {
            for (int j = 0; j < i; j++)
                simdnn_driver_free(p[j]);
            return simdnn_fail(CUDNN_STATUS_ALLOC_FAILED, "%s: cannot allocate the search's operands", what);
        }
        r[i].p = (const void *)p[i];
    }
    return CUDNN_STATUS_SUCCESS;
}

static void free_operands(CUdeviceptr p[3])
{
    for (int i = 0; i < 3; i++)
        simdnn_driver_free(p[i]);
}

static cudnnStatus_t check_find_ex_workspace(void *ws, size_t bytes, const char *what)
{
    if (!ws && bytes > 0)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: workSpace is NULL with workSpaceSizeInBytes %zu", what,
                           bytes);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t handle, int *count)
{
    cudnnStatus_t st = simdnn_check_handle(handle);
    if (st)
        return st;
    if (!count)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionForwardAlgorithmMaxCount: NULL");
    *count = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnnHandle_t handle, int *count)
{
    cudnnStatus_t st = simdnn_check_handle(handle);
    if (st)
        return st;
    if (!count)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionBackwardDataAlgorithmMaxCount: NULL");
    *count = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnnHandle_t handle, int *count)
{
    cudnnStatus_t st = simdnn_check_handle(handle);
    if (st)
        return st;
    if (!count)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount: NULL");
    *count = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
    return CUDNN_STATUS_SUCCESS;
}

/* Forward ---------------------------------------------------------------------- */

static cudnnStatus_t forward_search(cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void *x,
                                    const cudnnFilterDescriptor_t wDesc, const void *w,
                                    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t yDesc,
                                    void *y, const int requested, int *returned,
                                    cudnnConvolutionFwdAlgoPerf_t *perf, void *ws, size_t ws_bytes,
                                    enum search_kind kind, const char *what)
{
    simdnn_conv g;
    struct perf_row rows[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    CUdeviceptr ops[3];
    cudnnStatus_t st;
    if ((st = simdnn_check_work(handle)) || (st = simdnn_conv_geometry(xDesc, wDesc, convDesc, yDesc, &g, what)) ||
        (st = check_request(requested, returned, perf, what)))
        return st;
    struct run_range rr[3] = {{x, simdnn_tensor_span(xDesc), 0}, {w, filter_bytes(wDesc), 0},
                              {y, simdnn_tensor_span(yDesc), 1}};
    if (kind == SEARCH_FIND_EX) {
        if (!x || !w || !y)
            return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL data pointer", what);
        if ((st = check_find_ex_workspace(ws, ws_bytes, what)))
            return st;
    }
    if (kind == SEARCH_FIND && (st = alloc_operands(rr, ops, what)))
        return st;
    int n = rank_algorithms(handle, &g, SIMDNN_CONV_FWD, kind, ws, ws_bytes, rr, 3, rows, what);
    if (kind == SEARCH_FIND)
        free_operands(ops);
    n = n < requested ? n : requested;
    COPY_PERF(perf, rows, n, cudnnConvolutionFwdAlgo_t, g.math);
    *returned = n;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
                                                     const cudnnFilterDescriptor_t filterDesc,
                                                     const cudnnConvolutionDescriptor_t convDesc,
                                                     const cudnnTensorDescriptor_t destDesc,
                                                     const int requestedAlgoCount, int *returnedAlgoCount,
                                                     cudnnConvolutionFwdAlgoPerf_t *perfResults)
{
    return forward_search(handle, srcDesc, NULL, filterDesc, NULL, convDesc, destDesc, NULL, requestedAlgoCount,
                          returnedAlgoCount, perfResults, NULL, 0, SEARCH_HEURISTIC,
                          "cudnnGetConvolutionForwardAlgorithm_v7");
}

cudnnStatus_t cudnnFindConvolutionForwardAlgorithm(cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
                                                   const cudnnFilterDescriptor_t wDesc,
                                                   const cudnnConvolutionDescriptor_t convDesc,
                                                   const cudnnTensorDescriptor_t yDesc, const int requestedAlgoCount,
                                                   int *returnedAlgoCount,
                                                   cudnnConvolutionFwdAlgoPerf_t *perfResults)
{
    return forward_search(handle, xDesc, NULL, wDesc, NULL, convDesc, yDesc, NULL, requestedAlgoCount,
                          returnedAlgoCount, perfResults, NULL, 0, SEARCH_FIND,
                          "cudnnFindConvolutionForwardAlgorithm");
}

cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
                                                     const void *x, const cudnnFilterDescriptor_t wDesc,
                                                     const void *w, const cudnnConvolutionDescriptor_t convDesc,
                                                     const cudnnTensorDescriptor_t yDesc, void *y,
                                                     const int requestedAlgoCount, int *returnedAlgoCount,
                                                     cudnnConvolutionFwdAlgoPerf_t *perfResults, void *workSpace,
                                                     size_t workSpaceSizeInBytes)
{
    return forward_search(handle, xDesc, x, wDesc, w, convDesc, yDesc, y, requestedAlgoCount, returnedAlgoCount,
                          perfResults, workSpace, workSpaceSizeInBytes, SEARCH_FIND_EX,
                          "cudnnFindConvolutionForwardAlgorithmEx");
}

/* Backward data ---------------------------------------------------------------- */

static cudnnStatus_t backward_data_search(cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const void *w,
                                          const cudnnTensorDescriptor_t dyDesc, const void *dy,
                                          const cudnnConvolutionDescriptor_t convDesc,
                                          const cudnnTensorDescriptor_t dxDesc, void *dx, const int requested,
                                          int *returned, cudnnConvolutionBwdDataAlgoPerf_t *perf, void *ws,
                                          size_t ws_bytes, enum search_kind kind, const char *what)
{
    simdnn_conv g;
    struct perf_row rows[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    CUdeviceptr ops[3];
    cudnnStatus_t st;
    if ((st = simdnn_check_work(handle)) || (st = simdnn_conv_geometry(dxDesc, wDesc, convDesc, dyDesc, &g, what)) ||
        (st = check_request(requested, returned, perf, what)))
        return st;
    struct run_range rr[3] = {{w, filter_bytes(wDesc), 0}, {dy, simdnn_tensor_span(dyDesc), 0},
                              {dx, simdnn_tensor_span(dxDesc), 1}};
    if (kind == SEARCH_FIND_EX) {
        if (!w || !dy || !dx)
            return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL data pointer", what);
        if ((st = check_find_ex_workspace(ws, ws_bytes, what)))
            return st;
    }
    if (kind == SEARCH_FIND && (st = alloc_operands(rr, ops, what)))
        return st;
    int n = rank_algorithms(handle, &g, SIMDNN_CONV_BWD_DATA, kind, ws, ws_bytes, rr, 3, rows, what);
    if (kind == SEARCH_FIND)
        free_operands(ops);
    n = n < requested ? n : requested;
    COPY_PERF(perf, rows, n, cudnnConvolutionBwdDataAlgo_t, g.math);
    *returned = n;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle_t handle,
                                                          const cudnnFilterDescriptor_t filterDesc,
                                                          const cudnnTensorDescriptor_t diffDesc,
                                                          const cudnnConvolutionDescriptor_t convDesc,
                                                          const cudnnTensorDescriptor_t gradDesc,
                                                          const int requestedAlgoCount, int *returnedAlgoCount,
                                                          cudnnConvolutionBwdDataAlgoPerf_t *perfResults)
{
    return backward_data_search(handle, filterDesc, NULL, diffDesc, NULL, convDesc, gradDesc, NULL,
                                requestedAlgoCount, returnedAlgoCount, perfResults, NULL, 0, SEARCH_HEURISTIC,
                                "cudnnGetConvolutionBackwardDataAlgorithm_v7");
}

cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithm(cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc,
                                                        const cudnnTensorDescriptor_t dyDesc,
                                                        const cudnnConvolutionDescriptor_t convDesc,
                                                        const cudnnTensorDescriptor_t dxDesc,
                                                        const int requestedAlgoCount, int *returnedAlgoCount,
                                                        cudnnConvolutionBwdDataAlgoPerf_t *perfResults)
{
    return backward_data_search(handle, wDesc, NULL, dyDesc, NULL, convDesc, dxDesc, NULL, requestedAlgoCount,
                                returnedAlgoCount, perfResults, NULL, 0, SEARCH_FIND,
                                "cudnnFindConvolutionBackwardDataAlgorithm");
}

cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const void *w, const cudnnTensorDescriptor_t dyDesc,
    const void *dy, const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc, void *dx,
    const int requestedAlgoCount, int *returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t *perfResults,
    void *workSpace, size_t workSpaceSizeInBytes)
{
    return backward_data_search(handle, wDesc, w, dyDesc, dy, convDesc, dxDesc, dx, requestedAlgoCount,
                                returnedAlgoCount, perfResults, workSpace, workSpaceSizeInBytes, SEARCH_FIND_EX,
                                "cudnnFindConvolutionBackwardDataAlgorithmEx");
}

/* Backward filter ---------------------------------------------------------------- */

static cudnnStatus_t backward_filter_search(cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void *x,
                                            const cudnnTensorDescriptor_t dyDesc, const void *dy,
                                            const cudnnConvolutionDescriptor_t convDesc,
                                            const cudnnFilterDescriptor_t dwDesc, void *dw, const int requested,
                                            int *returned, cudnnConvolutionBwdFilterAlgoPerf_t *perf, void *ws,
                                            size_t ws_bytes, enum search_kind kind, const char *what)
{
    simdnn_conv g;
    struct perf_row rows[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    CUdeviceptr ops[3];
    cudnnStatus_t st;
    if ((st = simdnn_check_work(handle)) || (st = simdnn_conv_geometry(xDesc, dwDesc, convDesc, dyDesc, &g, what)) ||
        (st = check_request(requested, returned, perf, what)))
        return st;
    struct run_range rr[3] = {{x, simdnn_tensor_span(xDesc), 0}, {dy, simdnn_tensor_span(dyDesc), 0},
                              {dw, filter_bytes(dwDesc), 1}};
    if (kind == SEARCH_FIND_EX) {
        if (!x || !dy || !dw)
            return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL data pointer", what);
        if ((st = check_find_ex_workspace(ws, ws_bytes, what)))
            return st;
    }
    if (kind == SEARCH_FIND && (st = alloc_operands(rr, ops, what)))
        return st;
    int n = rank_algorithms(handle, &g, SIMDNN_CONV_BWD_FILTER, kind, ws, ws_bytes, rr, 3, rows, what);
    if (kind == SEARCH_FIND)
        free_operands(ops);
    n = n < requested ? n : requested;
    COPY_PERF(perf, rows, n, cudnnConvolutionBwdFilterAlgo_t, g.math);
    *returned = n;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnnHandle_t handle,
                                                            const cudnnTensorDescriptor_t srcDesc,
                                                            const cudnnTensorDescriptor_t diffDesc,
                                                            const cudnnConvolutionDescriptor_t convDesc,
                                                            const cudnnFilterDescriptor_t gradDesc,
                                                            const int requestedAlgoCount, int *returnedAlgoCount,
                                                            cudnnConvolutionBwdFilterAlgoPerf_t *perfResults)
{
    return backward_filter_search(handle, srcDesc, NULL, diffDesc, NULL, convDesc, gradDesc, NULL,
                                  requestedAlgoCount, returnedAlgoCount, perfResults, NULL, 0, SEARCH_HEURISTIC,
                                  "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
}

cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithm(cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
                                                          const cudnnTensorDescriptor_t dyDesc,
                                                          const cudnnConvolutionDescriptor_t convDesc,
                                                          const cudnnFilterDescriptor_t dwDesc,
                                                          const int requestedAlgoCount, int *returnedAlgoCount,
                                                          cudnnConvolutionBwdFilterAlgoPerf_t *perfResults)
{
    return backward_filter_search(handle, xDesc, NULL, dyDesc, NULL, convDesc, dwDesc, NULL, requestedAlgoCount,
                                  returnedAlgoCount, perfResults, NULL, 0, SEARCH_FIND,
                                  "cudnnFindConvolutionBackwardFilterAlgorithm");
}

cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void *x, const cudnnTensorDescriptor_t dyDesc,
    const void *y, const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t dwDesc, void *dw,
    const int requestedAlgoCount, int *returnedAlgoCount, cudnnConvolutionBwdFilterAlgoPerf_t *perfResults,
    void *workSpace, size_t workSpaceSizeInBytes)
{
    return backward_filter_search(handle, xDesc, x, dyDesc, y, convDesc, dwDesc, dw, requestedAlgoCount,
                                  returnedAlgoCount, perfResults, workSpace, workSpaceSizeInBytes, SEARCH_FIND_EX,
                                  "cudnnFindConvolutionBackwardFilterAlgorithmEx");
}
