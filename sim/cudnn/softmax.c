/*
 * softmax.c — cudnnSoftmaxForward / cudnnSoftmaxBackward of the simulated
 * cuDNN: per image over C x spatial (MODE_INSTANCE) or per image and position
 * over C (MODE_CHANNEL); ACCURATE and FAST both subtract the maximum (same
 * result within FP32 rounding, no overflow), LOG gives log-softmax.
 * Reductions are accumulated in double.
 */
#include <math.h>
#include <stdlib.h>
#include "sim/cudnn/cudnn_sim.h"

/* One softmax group: the elements at base + c*cs + sp[p] for c in [0, nc)
 * and p in [p0, p0 + np). */
struct group {
    int64_t base, cs;
    const int64_t *sp;
    int nc;
    int64_t p0, np;
};

static cudnnStatus_t check_softmax(cudnnSoftmaxAlgorithm_t algo, cudnnSoftmaxMode_t mode, const char *what)
{
    if ((int)algo < CUDNN_SOFTMAX_FAST || algo > CUDNN_SOFTMAX_LOG)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: algorithm %d", what, (int)algo);
    if (mode != CUDNN_SOFTMAX_MODE_INSTANCE && mode != CUDNN_SOFTMAX_MODE_CHANNEL)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: mode %d", what, (int)mode);
    return CUDNN_STATUS_SUCCESS;
}

/* Groups of tensor t for image n and group index q (a position in CHANNEL mode). */
static struct group group_of(const struct cudnnTensorStruct *t, const int64_t *sp, int64_t np,
                             cudnnSoftmaxMode_t mode, int n, int64_t q)
{
    struct group g = {.base = (int64_t)n * t->stride[0], .cs = t->stride[1], .sp = sp, .nc = t->dim[1]};
    if (mode == CUDNN_SOFTMAX_MODE_CHANNEL) {
        g.p0 = q;
        g.np = 1;
    } else {
        g.p0 = 0;
        g.np = np;
    }
    return g;
}

cudnnStatus_t cudnnSoftmaxForward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo, cudnnSoftmaxMode_t mode,
                                  const void *alpha, const cudnnTensorDescriptor_t xDesc, const void *x,
                                  const void *beta, const cudnnTensorDescriptor_t yDesc, void *y)
{
    const char *what = "cudnnSoftmaxForward";
    cudnnStatus_t st;
    if ((st = simdnn_check_work(handle)) || (st = check_softmax(algo, mode, what)) ||
        (st = simdnn_check_float_tensor(xDesc, what)) || (st = simdnn_check_float_tensor(yDesc, what)))
        return st;
    if (!alpha || !beta || !x || !y)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL pointer argument", what);
    if (!simdnn_same_dims(xDesc, yDesc))
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: x and y dimensions differ", what);
    float al = *(const float *)alpha, be = *(const float *)beta;
    simdnn_check_tensor_range(xDesc, x, 0, "cudnnSoftmaxForward x");
    simdnn_check_tensor_range(yDesc, y, 1, "cudnnSoftmaxForward y");
    if (simgpu_compute_enabled()) {
        int64_t *spx, *spy;
        int64_t np = simdnn_spatial_offsets(xDesc, &spx);
        simdnn_spatial_offsets(yDesc, &spy);
        if (np < 0 || !spy) {
            free(spx), free(spy);
            return simdnn_scratch_failed(handle, what);
        }
        const float *xf = x;
        float *yf = y;
        int64_t groups = mode == CUDNN_SOFTMAX_MODE_CHANNEL ? np : 1;
        for (int n = 0; n < xDesc->dim[0]; n++)
            for (int64_t q = 0; q < groups; q++) {
                struct group gx = group_of(xDesc, spx, np, mode, n, q), gy = group_of(yDesc, spy, np, mode, n, q);
                double mx = -INFINITY, sum = 0.0;
                for (int c = 0; c < gx.nc; c++)
                    for (int64_t p = gx.p0; p < gx.p0 + gx.np; p++)
                        mx = fmax(mx, xf[gx.base + c * gx.cs + gx.sp[p]]);
                for (int c = 0; c < gx.nc; c++)
                    for (int64_t p = gx.p0; p < gx.p0 + gx.np; p++)
                        sum += exp(xf[gx.base + c * gx.cs + gx.sp[p]] - mx);
                double lse = log(sum);
                for (int c = 0; c < gx.nc; c++)
                    for (int64_t p = gx.p0; p < gx.p0 + gx.np; p++) {
                        double v = xf[gx.base + c * gx.cs + gx.sp[p]] - mx;
                        float r = (float)(algo == CUDNN_SOFTMAX_LOG ? v - lse : exp(v) / sum);
                        float *o = yf + gy.base + c * gy.cs + gy.sp[p];
                        *o = simdnn_blend(al, r, be, *o);
                    }
            }
        free(spx), free(spy);
    }
    double n = (double)simdnn_tensor_elems(yDesc);
    simdnn_charge(handle, what, 8 * n, SIMDNN_ELEMENTWISE_FLOP_EFF, n * sizeof(float) * (be != 0.0f ? 3 : 2), 0);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSoftmaxBackward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo, cudnnSoftmaxMode_t mode,
                                   const void *alpha, const cudnnTensorDescriptor_t yDesc, const void *y,
                                   const cudnnTensorDescriptor_t dyDesc, const void *dy, const void *beta,
                                   const cudnnTensorDescriptor_t dxDesc, void *dx)
{
    const char *what = "cudnnSoftmaxBackward";
    cudnnStatus_t st;
    if ((st = simdnn_check_work(handle)) || (st = check_softmax(algo, mode, what)) ||
        (st = simdnn_check_float_tensor(yDesc, what)) || (st = simdnn_check_float_tensor(dyDesc, what)) ||
        (st = simdnn_check_float_tensor(dxDesc, what)))
        return st;
    if (!alpha || !beta || !y || !dy || !dx)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL pointer argument", what);
    if (!simdnn_same_dims(yDesc, dyDesc) || !simdnn_same_dims(yDesc, dxDesc))
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: y, dy and dx dimensions differ", what);
    float al = *(const float *)alpha, be = *(const float *)beta;
    simdnn_check_tensor_range(yDesc, y, 0, "cudnnSoftmaxBackward y");
    simdnn_check_tensor_range(dyDesc, dy, 0, "cudnnSoftmaxBackward dy");
    simdnn_check_tensor_range(dxDesc, dx, 1, "cudnnSoftmaxBackward dx");
    if (simgpu_compute_enabled()) {
        int64_t *spy, *spdy, *spdx;
        int64_t np = simdnn_spatial_offsets(yDesc, &spy);
        simdnn_spatial_offsets(dyDesc, &spdy);
        simdnn_spatial_offsets(dxDesc, &spdx);
        if (np < 0 || !spdy || !spdx) {
            free(spy), free(spdy), free(spdx);
            return simdnn_scratch_failed(handle, what);
        }
        const float *yf = y, *dyf = dy;
        float *dxf = dx;
        int64_t groups = mode == CUDNN_SOFTMAX_MODE_CHANNEL ? np : 1;
        for (int n = 0; n < yDesc->dim[0]; n++)
            for (int64_t q = 0; q < groups; q++) {
                struct group gy = group_of(yDesc, spy, np, mode, n, q);
                struct group gdy = group_of(dyDesc, spdy, np, mode, n, q);
                struct group gdx = group_of(dxDesc, spdx, np, mode, n, q);
                double dot = 0.0;
                for (int c = 0; c < gy.nc; c++)
                    for (int64_t p = gy.p0; p < gy.p0 + gy.np; p++) {
                        double g = dyf[gdy.base + c * gdy.cs + gdy.sp[p]];
                        dot += algo == CUDNN_SOFTMAX_LOG ? g : g * yf[gy.base + c * gy.cs + gy.sp[p]];
                    }
                for (int c = 0; c < gy.nc; c++)
                    for (int64_t p = gy.p0; p < gy.p0 + gy.np; p++) {
                        double yv = yf[gy.base + c * gy.cs + gy.sp[p]];
                        double g = dyf[gdy.base + c * gdy.cs + gdy.sp[p]];
                        double r = algo == CUDNN_SOFTMAX_LOG ? g - exp(yv) * dot : yv * (g - dot);
                        float *o = dxf + gdx.base + c * gdx.cs + gdx.sp[p];
                        *o = simdnn_blend(al, (float)r, be, *o);
                    }
            }
        free(spy), free(spdy), free(spdx);
    }
    double n = (double)simdnn_tensor_elems(dxDesc);
    simdnn_charge(handle, what, 4 * n, SIMDNN_ELEMENTWISE_FLOP_EFF, n * sizeof(float) * (be != 0.0f ? 4 : 3), 0);
    return CUDNN_STATUS_SUCCESS;
}
