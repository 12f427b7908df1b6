/*
 * conv.h — convolution internals of the simulated cuDNN: the problem
 * geometry checked out of the descriptors, the one arithmetic path every
 * algorithm shares, and the per-algorithm model (support, workspace, time).
 *
 * All algorithms of one operation compute through the same functions in
 * conv_compute.c, so their results are bit-identical; an algorithm only
 * decides which configurations are accepted, how much workspace the call
 * requires and how long it takes on the modelled GPU (conv_algos.c).
 */
#ifndef SIM_CUDNN_CONV_H
#define SIM_CUDNN_CONV_H

#include "sim/cudnn/cudnn_sim.h"

/* A 2-D problem is held as 3-D with a unit leading spatial dimension. */
typedef struct simdnn_conv {
    int nsp;                           /* spatial dimensions in the descriptors: 2 or 3 */
    int n, c, k, groups, cg, kg;
    int in[3], out[3], filt[3], pad[3], str[3], dil[3];
    int64_t xs[5], ys[5], ws[5];       /* element strides: n/k, c, d, h, w */
    int flip;                          /* CUDNN_CONVOLUTION: the filter is mirrored */
    cudnnMathType_t math;
} simdnn_conv;

/* Checks x (input), w (filter), conv and y (output) as cuDNN does and fills g.
 * For backward data x is dx and y is dy; for backward filter w is dw. */
cudnnStatus_t simdnn_conv_geometry(const struct cudnnTensorStruct *x, const struct cudnnFilterStruct *w,
                                   const struct cudnnConvolutionStruct *conv, const struct cudnnTensorStruct *y,
                                   simdnn_conv *g, const char *what);
/* Output dimensions of x convolved by w under conv (nbDims = conv->spatial + 2). */
cudnnStatus_t simdnn_conv_output_dims(const struct cudnnTensorStruct *x, const struct cudnnFilterStruct *w,
                                      const struct cudnnConvolutionStruct *conv, int *out, const char *what);

static inline int64_t simdnn_conv_out_positions(const simdnn_conv *g)
{
    return (int64_t)g->out[0] * g->out[1] * g->out[2];
}
static inline int64_t simdnn_conv_in_positions(const simdnn_conv *g)
{
    return (int64_t)g->in[0] * g->in[1] * g->in[2];
}
static inline int64_t simdnn_conv_taps(const simdnn_conv *g)
{
    return (int64_t)g->filt[0] * g->filt[1] * g->filt[2];
}
/* Multiply-add FLOPs of the direct convolution (2 per multiply-accumulate). */
static inline double simdnn_conv_flops(const simdnn_conv *g)
{
    return 2.0 * g->n * g->k * (double)simdnn_conv_out_positions(g) * g->cg * (double)simdnn_conv_taps(g);
}

/* ---- arithmetic (conv_compute.c) ----------------------------------------- */

/* Receives one image's output block of one group: out[kg][P] in row-major. */
typedef void (*simdnn_conv_emit_fn)(void *ctx, const simdnn_conv *g, int image, int group, const float *out);

/* Returns 0, or -1 when host scratch cannot be allocated. */
int simdnn_conv_forward(const simdnn_conv *g, const float *x, const float *w, simdnn_conv_emit_fn emit,
                        void *ctx);
/* dx = alpha * conv^T(dy, w) + beta * dx. */
int simdnn_conv_backward_data(const simdnn_conv *g, const float *w, const float *dy, float *dx, float alpha,
                              float beta);
/* dw = alpha * sum_n dy_n (x) x_n + beta * dw. */
int simdnn_conv_backward_filter(const simdnn_conv *g, const float *x, const float *dy, float *dw, float alpha,
                                float beta);

/* ---- algorithms (conv_algos.c) ------------------------------------------- */

typedef enum { SIMDNN_CONV_FWD, SIMDNN_CONV_BWD_DATA, SIMDNN_CONV_BWD_FILTER } simdnn_conv_op;

typedef struct simdnn_algo_info {
    int supported;
    size_t workspace;                  /* bytes the call requires */
    double ns;                         /* modelled duration, launch cost excluded */
    cudnnDeterminism_t determinism;    /* what the real algorithm reports */
} simdnn_algo_info;

int simdnn_conv_algo_count(simdnn_conv_op op);
/* beta_reads: whether the call reads its output (beta != 0). */
void simdnn_conv_algo(cudnnHandle_t h, const simdnn_conv *g, simdnn_conv_op op, int algo, int beta_reads,
                      simdnn_algo_info *info);

#endif
