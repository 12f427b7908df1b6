/*
 * pooling.c — cudnnPoolingForward / cudnnPoolingBackward of the simulated
 * cuDNN: max (gradient to the first maximum of the window, a deterministic
 * choice for both max modes), average including padding (count of window
 * positions inside the padded input) and average excluding padding (count of
 * positions inside the input), in 2-D and 3-D.
 *
 * The output extent is taken from the output descriptor, so a framework that
 * rounds the output size up (windows overhanging the padded input) gets
 * windows clipped at the border, as with cuDNN.
 */
#include <float.h>
#include <stdlib.h>
#include <string.h>
#include "sim/cudnn/cudnn_sim.h"

struct pool_geom {
    int n, c;
    int in[3], out[3], win[3], pad[3], str[3];
    int64_t xs[5], ys[5];
};

static cudnnStatus_t pool_geometry(const struct cudnnPoolingStruct *p, const struct cudnnTensorStruct *x,
                                   const struct cudnnTensorStruct *y, struct pool_geom *g, const char *what)
{
    cudnnStatus_t st;
    if (!p || p->magic != SIMDNN_MAGIC_POOL || p->spatial == 0)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: invalid pooling descriptor", what);
    if ((st = simdnn_check_float_tensor(x, what)) || (st = simdnn_check_float_tensor(y, what)))
        return st;
    int nb = x->nb_dims;
    if (y->nb_dims != nb || nb != p->spatial + 2)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: tensors and pooling descriptor disagree on dimensions",
                           what);
    if (x->dim[0] != y->dim[0] || x->dim[1] != y->dim[1])
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: n or c of x and y differ", what);
    if (nb != 4 && nb != 5)
        return simdnn_fail(CUDNN_STATUS_NOT_SUPPORTED, "%s: only 2-D and 3-D pooling", what);
    memset(g, 0, sizeof *g);
    g->n = x->dim[0];
    g->c = x->dim[1];
    int lead = 5 - nb;
    for (int i = 0; i < 3; i++) {
        int s = i - lead;
        g->in[i] = s >= 0 ? x->dim[s + 2] : 1;
        g->out[i] = s >= 0 ? y->dim[s + 2] : 1;
        g->win[i] = s >= 0 ? p->window[s] : 1;
        g->pad[i] = s >= 0 ? p->pad[s] : 0;
        g->str[i] = s >= 0 ? p->stride[s] : 1;
        g->xs[i + 2] = s >= 0 ? x->stride[s + 2] : 0;
        g->ys[i + 2] = s >= 0 ? y->stride[s + 2] : 0;
    }
    g->xs[0] = x->stride[0], g->xs[1] = x->stride[1];
    g->ys[0] = y->stride[0], g->ys[1] = y->stride[1];
    return CUDNN_STATUS_SUCCESS;
}

/* The window of output position o along dimension i: valid input range
 * [lo, hi) and its extent within the padded input. */
struct window {
    int lo[3], hi[3];
    int64_t valid, with_pad;        /* window sizes: products of three extents */
};

static void window_of(const struct pool_geom *g, const int o[3], struct window *w)
{
    w->valid = 1;
    w->with_pad = 1;
    for (int i = 0; i < 3; i++) {
        /* 64 bits: position times stride and the padded extent can pass
         * INT_MAX for descriptors cuDNN accepts. */
        int64_t start = (int64_t)o[i] * g->str[i] - g->pad[i];
        int64_t end = start + g->win[i];
        int64_t padded_end = (int64_t)g->in[i] + g->pad[i];
        int64_t pend = end < padded_end ? end : padded_end;
        w->lo[i] = start > 0 ? (int)(start < g->in[i] ? start : g->in[i]) : 0;
        w->hi[i] = end < g->in[i] ? (int)(end > 0 ? end : 0) : g->in[i];
        w->valid *= w->hi[i] > w->lo[i] ? w->hi[i] - w->lo[i] : 0;
        w->with_pad *= pend - start;
    }
}

static int is_max(cudnnPoolingMode_t m) { return m == CUDNN_POOLING_MAX || m == CUDNN_POOLING_MAX_DETERMINISTIC; }

/* Packed index (d, h, w) of the window's first maximum, or -1 for an empty
 * window; *value receives it. */
static int64_t argmax(const struct pool_geom *g, const float *xc, const struct window *w, float *value)
{
    int64_t best = -1;
    float bv = -FLT_MAX;
    for (int d = w->lo[0]; d < w->hi[0]; d++)
        for (int h = w->lo[1]; h < w->hi[1]; h++)
            for (int x = w->lo[2]; x < w->hi[2]; x++) {
                float v = xc[d * g->xs[2] + h * g->xs[3] + x * g->xs[4]];
                if (best < 0 || v > bv) {
                    best = ((int64_t)d * g->in[1] + h) * g->in[2] + x;
                    bv = v;
                }
            }
    *value = best >= 0 ? bv : 0.0f;
    return best;
}

cudnnStatus_t cudnnPoolingForward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t poolingDesc,
                                  const void *alpha, const cudnnTensorDescriptor_t xDesc, const void *x,
                                  const void *beta, const cudnnTensorDescriptor_t yDesc, void *y)
{
    const char *what = "cudnnPoolingForward";
    struct pool_geom g;
    cudnnStatus_t st;
    if ((st = simdnn_check_work(handle)) || (st = pool_geometry(poolingDesc, xDesc, yDesc, &g, what)))
        return st;
    if (!alpha || !beta || !x || !y)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL pointer argument", what);
    float al = *(const float *)alpha, be = *(const float *)beta;
    simdnn_check_tensor_range(xDesc, x, 0, "cudnnPoolingForward x");
    simdnn_check_tensor_range(yDesc, y, 1, "cudnnPoolingForward y");
    if (simgpu_compute_enabled()) {
        cudnnPoolingMode_t mode = poolingDesc->mode;
        for (int n = 0; n < g.n; n++)
            for (int c = 0; c < g.c; c++) {
                const float *xc = (const float *)x + n * g.xs[0] + c * g.xs[1];
                float *yc = (float *)y + n * g.ys[0] + c * g.ys[1];
                int o[3];
                for (o[0] = 0; o[0] < g.out[0]; o[0]++)
                    for (o[1] = 0; o[1] < g.out[1]; o[1]++)
                        for (o[2] = 0; o[2] < g.out[2]; o[2]++) {
                            struct window w;
                            window_of(&g, o, &w);
                            float v = 0.0f;
                            if (is_max(mode)) {
                                argmax(&g, xc, &w, &v);
                            } else {
                                double sum = 0.0;
                                for (int d = w.lo[0]; d < w.hi[0]; d++)
                                    for (int h = w.lo[1]; h < w.hi[1]; h++)
                                        for (int xx = w.lo[2]; xx < w.hi[2]; xx++)
                                            sum += xc[d * g.xs[2] + h * g.xs[3] + xx * g.xs[4]];
                                int64_t count = mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING ? w.with_pad : w.valid;
                                v = count > 0 ? (float)(sum / count) : 0.0f;
                            }
                            float *yo = yc + o[0] * g.ys[2] + o[1] * g.ys[3] + o[2] * g.ys[4];
                            *yo = simdnn_blend(al, v, be, *yo);
                        }
            }
    }
    double ny = (double)simdnn_tensor_elems(yDesc), nx = (double)simdnn_tensor_elems(xDesc);
    double taps = (double)g.win[0] * g.win[1] * g.win[2];
    simdnn_charge(handle, what, ny * taps, SIMDNN_ELEMENTWISE_FLOP_EFF,
                  (nx + ny * (be != 0.0f ? 2 : 1)) * sizeof(float), 0);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnPoolingBackward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t poolingDesc,
                                   const void *alpha, const cudnnTensorDescriptor_t yDesc, const void *y,
                                   const cudnnTensorDescriptor_t dyDesc, const void *dy,
                                   const cudnnTensorDescriptor_t xDesc, const void *x, const void *beta,
                                   const cudnnTensorDescriptor_t dxDesc, void *dx)
{
    const char *what = "cudnnPoolingBackward";
    struct pool_geom g, gd;
    cudnnStatus_t st;
    if ((st = simdnn_check_work(handle)) || (st = pool_geometry(poolingDesc, xDesc, yDesc, &g, what)) ||
        (st = pool_geometry(poolingDesc, dxDesc, dyDesc, &gd, what)))
        return st;
    if (!alpha || !beta || !y || !dy || !x || !dx)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL pointer argument", what);
    if (!simdnn_same_dims(xDesc, dxDesc) || !simdnn_same_dims(yDesc, dyDesc))
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: x/dx or y/dy dimensions differ", what);
    float al = *(const float *)alpha, be = *(const float *)beta;
    simdnn_check_tensor_range(yDesc, y, 0, "cudnnPoolingBackward y");
    simdnn_check_tensor_range(dyDesc, dy, 0, "cudnnPoolingBackward dy");
    simdnn_check_tensor_range(xDesc, x, 0, "cudnnPoolingBackward x");
    simdnn_check_tensor_range(dxDesc, dx, 1, "cudnnPoolingBackward dx");
    if (simgpu_compute_enabled()) {
        int64_t inP = (int64_t)g.in[0] * g.in[1] * g.in[2];
        float *acc = malloc((size_t)inP * sizeof *acc);
        if (!acc)
            return simdnn_scratch_failed(handle, what);
        cudnnPoolingMode_t mode = poolingDesc->mode;
        for (int n = 0; n < g.n; n++)
            for (int c = 0; c < g.c; c++) {
                const float *xc = (const float *)x + n * g.xs[0] + c * g.xs[1];
                const float *dyc = (const float *)dy + n * gd.ys[0] + c * gd.ys[1];
                memset(acc, 0, (size_t)inP * sizeof *acc);
                int o[3];
                for (o[0] = 0; o[0] < g.out[0]; o[0]++)
                    for (o[1] = 0; o[1] < g.out[1]; o[1]++)
                        for (o[2] = 0; o[2] < g.out[2]; o[2]++) {
                            struct window w;
                            window_of(&g, o, &w);
                            float gv = dyc[o[0] * gd.ys[2] + o[1] * gd.ys[3] + o[2] * gd.ys[4]];
                            if (is_max(mode)) {
                                float unused;
                                int64_t best = argmax(&g, xc, &w, &unused);
                                if (best >= 0)
                                    acc[best] += gv;
                            } else {
                                int64_t count = mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING ? w.with_pad : w.valid;
                                if (count <= 0)
                                    continue;
                                float share = gv / (float)count;
                                for (int d = w.lo[0]; d < w.hi[0]; d++)
                                    for (int h = w.lo[1]; h < w.hi[1]; h++)
                                        for (int xx = w.lo[2]; xx < w.hi[2]; xx++)
                                            acc[((int64_t)d * g.in[1] + h) * g.in[2] + xx] += share;
                            }
                        }
                float *dxc = (float *)dx + n * gd.xs[0] + c * gd.xs[1];
                for (int d = 0; d < g.in[0]; d++)
                    for (int h = 0; h < g.in[1]; h++)
                        for (int xx = 0; xx < g.in[2]; xx++) {
                            float *o2 = dxc + d * gd.xs[2] + h * gd.xs[3] + xx * gd.xs[4];
                            *o2 = simdnn_blend(al, acc[((int64_t)d * g.in[1] + h) * g.in[2] + xx], be, *o2);
                        }
            }
        free(acc);
    }
    double ny = (double)simdnn_tensor_elems(yDesc), nx = (double)simdnn_tensor_elems(xDesc);
    double taps = (double)g.win[0] * g.win[1] * g.win[2];
    simdnn_charge(handle, what, ny * taps, SIMDNN_ELEMENTWISE_FLOP_EFF,
                  (2 * ny + nx * (be != 0.0f ? 3 : 2)) * sizeof(float), 0);
    return CUDNN_STATUS_SUCCESS;
}
