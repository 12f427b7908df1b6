/*
 * lrn.c — cross-channel local response normalisation of the simulated cuDNN
 * (cudnnLRNCrossChannelForward / Backward).
 *
 * cuDNN's definition: y = x / (k + (alpha / n) * sum of x^2 over the window)^beta,
 * the window spanning channels [c - floor((n-1)/2), c + n - 1 - floor((n-1)/2)]
 * clipped to the tensor (alpha is divided by the window width inside the
 * library). Sums are accumulated in double.
 */
#include <math.h>
#include <stdlib.h>
#include "sim/cudnn/cudnn_sim.h"

static cudnnStatus_t check_lrn(cudnnHandle_t h, const struct cudnnLRNStruct *d, cudnnLRNMode_t mode,
                               const char *what)
{
    cudnnStatus_t st = simdnn_check_work(h);
    if (st)
        return st;
    if (!d || d->magic != SIMDNN_MAGIC_LRN)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: invalid LRN descriptor", what);
    if (mode != CUDNN_LRN_CROSS_CHANNEL_DIM1)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: unknown LRN mode %d", what, (int)mode);
    return CUDNN_STATUS_SUCCESS;
}

/* Scale s_c = k + alpha/n * sum_{j in window(c)} x_j^2 for every channel of
 * one (image, position); x points at channel 0, channels cs apart. */
static void lrn_scales(const struct cudnnLRNStruct *d, int C, const float *x, int64_t cs, double *s)
{
    int lb = ((int)d->n - 1) / 2, la = (int)d->n - lb - 1;
    for (int c = 0; c < C; c++) {
        double sum = 0.0;
        for (int j = c - lb; j <= c + la; j++)
            if (j >= 0 && j < C) {
                double v = x[j * cs];
                sum += v * v;
            }
        s[c] = d->k + d->alpha / d->n * sum;
    }
}

cudnnStatus_t cudnnLRNCrossChannelForward(cudnnHandle_t handle, cudnnLRNDescriptor_t normDesc, cudnnLRNMode_t lrnMode,
                                          const void *alpha, const cudnnTensorDescriptor_t xDesc, const void *x,
                                          const void *beta, const cudnnTensorDescriptor_t yDesc, void *y)
{
    const char *what = "cudnnLRNCrossChannelForward";
    cudnnStatus_t st;
    if ((st = check_lrn(handle, normDesc, lrnMode, what)) || (st = simdnn_check_float_tensor(xDesc, what)) ||
        (st = simdnn_check_float_tensor(yDesc, what)))
        return st;
    if (!alpha || !beta || !x || !y)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL pointer argument", what);
    if (!simdnn_same_dims(xDesc, yDesc))
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: x and y dimensions differ", what);
    float al = *(const float *)alpha, be = *(const float *)beta;
    simdnn_check_tensor_range(xDesc, x, 0, "cudnnLRNCrossChannelForward x");
    simdnn_check_tensor_range(yDesc, y, 1, "cudnnLRNCrossChannelForward y");
    if (simgpu_compute_enabled()) {
        int64_t *spx, *spy;
        int64_t np = simdnn_spatial_offsets(xDesc, &spx);
        simdnn_spatial_offsets(yDesc, &spy);
        int C = xDesc->dim[1];
        double *s = malloc((size_t)C * sizeof *s);
        if (np < 0 || !spy || !s) {
            free(spx), free(spy), free(s);
            return simdnn_scratch_failed(handle, what);
        }
        for (int n = 0; n < xDesc->dim[0]; n++)
            for (int64_t p = 0; p < np; p++) {
                const float *xp = (const float *)x + (int64_t)n * xDesc->stride[0] + spx[p];
                float *yp = (float *)y + (int64_t)n * yDesc->stride[0] + spy[p];
                lrn_scales(normDesc, C, xp, xDesc->stride[1], s);
                for (int c = 0; c < C; c++) {
                    float v = (float)(xp[c * (int64_t)xDesc->stride[1]] * pow(s[c], -normDesc->beta));
                    float *o = yp + c * (int64_t)yDesc->stride[1];
                    *o = simdnn_blend(al, v, be, *o);
                }
            }
        free(spx), free(spy), free(s);
    }
    double n = (double)simdnn_tensor_elems(yDesc);
    simdnn_charge(handle, what, n * (2.0 * normDesc->n + 10), SIMDNN_ELEMENTWISE_FLOP_EFF,
                  n * sizeof(float) * (be != 0.0f ? 3 : 2), 0);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnLRNCrossChannelBackward(cudnnHandle_t handle, cudnnLRNDescriptor_t normDesc,
                                           cudnnLRNMode_t lrnMode, const void *alpha,
                                           const cudnnTensorDescriptor_t yDesc, const void *y,
                                           const cudnnTensorDescriptor_t dyDesc, const void *dy,
                                           const cudnnTensorDescriptor_t xDesc, const void *x, const void *beta,
                                           const cudnnTensorDescriptor_t dxDesc, void *dx)
{
    const char *what = "cudnnLRNCrossChannelBackward";
    cudnnStatus_t st;
    if ((st = check_lrn(handle, normDesc, lrnMode, what)) || (st = simdnn_check_float_tensor(yDesc, what)) ||
        (st = simdnn_check_float_tensor(dyDesc, what)) || (st = simdnn_check_float_tensor(xDesc, what)) ||
        (st = simdnn_check_float_tensor(dxDesc, what)))
        return st;
    if (!alpha || !beta || !y || !dy || !x || !dx)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL pointer argument", what);
    if (!simdnn_same_dims(xDesc, yDesc) || !simdnn_same_dims(xDesc, dyDesc) || !simdnn_same_dims(xDesc, dxDesc))
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: x, y, dy and dx dimensions differ", what);
    float al = *(const float *)alpha, be = *(const float *)beta;
    simdnn_check_tensor_range(yDesc, y, 0, "cudnnLRNCrossChannelBackward y");
    simdnn_check_tensor_range(dyDesc, dy, 0, "cudnnLRNCrossChannelBackward dy");
    simdnn_check_tensor_range(xDesc, x, 0, "cudnnLRNCrossChannelBackward x");
    simdnn_check_tensor_range(dxDesc, dx, 1, "cudnnLRNCrossChannelBackward dx");
    if (simgpu_compute_enabled()) {
        int64_t *spx, *spdy, *spdx;
        int64_t np = simdnn_spatial_offsets(xDesc, &spx);
        simdnn_spatial_offsets(dyDesc, &spdy);
        simdnn_spatial_offsets(dxDesc, &spdx);
        int C = xDesc->dim[1];
        double *s = malloc((size_t)C * sizeof *s), *r = malloc((size_t)C * sizeof *r);
        if (np < 0 || !spdy || !spdx || !s || !r) {
            free(spx), free(spdy), free(spdx), free(s), free(r);
            return simdnn_scratch_failed(handle, what);
        }
        int lb = ((int)normDesc->n - 1) / 2, la = (int)normDesc->n - lb - 1;
        double coef = 2.0 * normDesc->alpha * normDesc->beta / normDesc->n;
        int64_t xcs = xDesc->stride[1], dycs = dyDesc->stride[1], dxcs = dxDesc->stride[1];
        for (int n = 0; n < xDesc->dim[0]; n++)
            for (int64_t p = 0; p < np; p++) {
                const float *xp = (const float *)x + (int64_t)n * xDesc->stride[0] + spx[p];
                const float *dyp = (const float *)dy + (int64_t)n * dyDesc->stride[0] + spdy[p];
                float *dxp = (float *)dx + (int64_t)n * dxDesc->stride[0] + spdx[p];
                lrn_scales(normDesc, C, xp, xcs, s);
                /* r_j = dy_j * x_j * s_j^(-beta-1) */
                for (int j = 0; j < C; j++)
                    r[j] = dyp[j * dycs] * (double)xp[j * xcs] * pow(s[j], -normDesc->beta - 1.0);
                for (int i = 0; i < C; i++) {
                    double acc = 0.0;
                    for (int j = i - la; j <= i + lb; j++)
                        if (j >= 0 && j < C)
                            acc += r[j];
                    double g = dyp[i * dycs] * pow(s[i], -normDesc->beta) - coef * xp[i * xcs] * acc;
                    float *o = dxp + i * dxcs;
                    *o = simdnn_blend(al, (float)g, be, *o);
                }
            }
        free(spx), free(spdy), free(spdx), free(s), free(r);
    }
    double n = (double)simdnn_tensor_elems(dxDesc);
    simdnn_charge(handle, what, n * (4.0 * normDesc->n + 20), SIMDNN_ELEMENTWISE_FLOP_EFF,
                  n * sizeof(float) * (be != 0.0f ? 5 : 4), 0);
    return CUDNN_STATUS_SUCCESS;
}
