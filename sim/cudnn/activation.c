/*
 * activation.c — cudnnActivationForward / cudnnActivationBackward of the
 * simulated cuDNN, and the activation function shared with the fused
 * convolution-bias-activation.
 *
 * Backward derivatives are taken from y wherever the function allows it
 * (ReLU, clipped ReLU, sigmoid, tanh, ELU), so that the in-place use of
 * frameworks (x and y the same buffer) gives the right gradient, as it does
 * with cuDNN.
 */
#include <math.h>
#include "sim/cudnn/cudnn_sim.h"

double simdnn_activate(const struct cudnnActivationStruct *a, double x)
{
    if (isnan(x))
        return a->nan_opt == CUDNN_PROPAGATE_NAN ? x : 0.0;
    switch (a->mode) {
    case CUDNN_ACTIVATION_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case CUDNN_ACTIVATION_RELU: return x > 0 ? x : 0.0;
    case CUDNN_ACTIVATION_TANH: return tanh(x);
    case CUDNN_ACTIVATION_CLIPPED_RELU: return x <= 0 ? 0.0 : x < a->coef ? x : a->coef;
    case CUDNN_ACTIVATION_ELU: return x > 0 ? x : a->coef * expm1(x);
    case CUDNN_ACTIVATION_SWISH: return x / (1.0 + exp(-a->swish_beta * x));
    default: return x; /* IDENTITY */
    }
}

/* f'(x) expressed through y = f(x) (and x where y does not determine it). */
static double derivative(const struct cudnnActivationStruct *a, double y, double x)
{
    switch (a->mode) {
    case CUDNN_ACTIVATION_SIGMOID: return y * (1.0 - y);
    case CUDNN_ACTIVATION_RELU: return y > 0 ? 1.0 : 0.0;
    case CUDNN_ACTIVATION_TANH: return 1.0 - y * y;
    case CUDNN_ACTIVATION_CLIPPED_RELU: return (y > 0 && y < a->coef) ? 1.0 : 0.0;
    case CUDNN_ACTIVATION_ELU: return y > 0 ? 1.0 : y + a->coef;
    case CUDNN_ACTIVATION_SWISH: {
        double s = 1.0 / (1.0 + exp(-a->swish_beta * x));
        return s + a->swish_beta * x * s * (1.0 - s);
    }
    default: return 1.0;
    }
}

struct act_ctx {
    const struct cudnnActivationStruct *a;
    float alpha, beta;
    float *out;
    const float *y, *dy, *x;
};

static void fwd_row(void *vctx, int64_t n, const int64_t *off, const int64_t *inner)
{
    struct act_ctx *c = vctx;
    float *y = c->out + off[0];
    const float *x = c->x + off[1];
    for (int64_t i = 0; i < n; i++) {
        float v = (float)simdnn_activate(c->a, x[i * inner[1]]);
        y[i * inner[0]] = simdnn_blend(c->alpha, v, c->beta, y[i * inner[0]]);
    }
}

static void bwd_row(void *vctx, int64_t n, const int64_t *off, const int64_t *inner)
{
    struct act_ctx *c = vctx;
    float *dx = c->out + off[0];
    const float *y = c->y + off[1], *dy = c->dy + off[2], *x = c->x + off[3];
    for (int64_t i = 0; i < n; i++) {
        float g = (float)(dy[i * inner[2]] * derivative(c->a, y[i * inner[1]], x[i * inner[3]]));
        dx[i * inner[0]] = simdnn_blend(c->alpha, g, c->beta, dx[i * inner[0]]);
    }
}

static cudnnStatus_t check_mode(const struct cudnnActivationStruct *a, const char *what)
{
    if (!a || a->magic != SIMDNN_MAGIC_ACT)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: invalid activation descriptor", what);
    if (a->mode == CUDNN_ACTIVATION_IDENTITY)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM,
                           "%s: CUDNN_ACTIVATION_IDENTITY is for cudnnConvolutionBiasActivationForward only", what);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnActivationForward(cudnnHandle_t handle, cudnnActivationDescriptor_t activationDesc,
                                     const void *alpha, const cudnnTensorDescriptor_t xDesc, const void *x,
                                     const void *beta, const cudnnTensorDescriptor_t yDesc, void *y)
{
    const char *what = "cudnnActivationForward";
    cudnnStatus_t st;
    if ((st = simdnn_check_work(handle)) || (st = check_mode(activationDesc, what)) ||
        (st = simdnn_check_float_tensor(xDesc, what)) || (st = simdnn_check_float_tensor(yDesc, what)))
        return st;
    if (!alpha || !beta || !x || !y)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL pointer argument", what);
    if (!simdnn_same_dims(xDesc, yDesc))
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: x and y dimensions differ", what);
    float be = *(const float *)beta;
    simdnn_check_tensor_range(xDesc, x, 0, "cudnnActivationForward x");
    simdnn_check_tensor_range(yDesc, y, 1, "cudnnActivationForward y");
    if (simgpu_compute_enabled()) {
        struct act_ctx c = {.a = activationDesc, .alpha = *(const float *)alpha, .beta = be, .out = y, .x = x};
        int64_t s[2][CUDNN_DIM_MAX];
        simdnn_strides64(yDesc, s[0]);
        simdnn_strides64(xDesc, s[1]);
        simdnn_for_each_row(yDesc->nb_dims, yDesc->dim, 2, s, fwd_row, &c);
    }
    double n = (double)simdnn_tensor_elems(yDesc);
    simdnn_charge(handle, what, 4 * n, SIMDNN_ELEMENTWISE_FLOP_EFF, n * sizeof(float) * (be != 0.0f ? 3 : 2), 0);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnActivationBackward(cudnnHandle_t handle, cudnnActivationDescriptor_t activationDesc,
                                      const void *alpha, const cudnnTensorDescriptor_t yDesc, const void *y,
                                      const cudnnTensorDescriptor_t dyDesc, const void *dy,
                                      const cudnnTensorDescriptor_t xDesc, const void *x, const void *beta,
                                      const cudnnTensorDescriptor_t dxDesc, void *dx)
{
    const char *what = "cudnnActivationBackward";
    cudnnStatus_t st;
    if ((st = simdnn_check_work(handle)) || (st = check_mode(activationDesc, what)) ||
        (st = simdnn_check_float_tensor(yDesc, what)) || (st = simdnn_check_float_tensor(dyDesc, what)) ||
        (st = simdnn_check_float_tensor(xDesc, what)) || (st = simdnn_check_float_tensor(dxDesc, what)))
        return st;
    if (!alpha || !beta || !y || !dy || !x || !dx)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL pointer argument", what);
    if (!simdnn_same_dims(yDesc, dyDesc) || !simdnn_same_dims(yDesc, xDesc) || !simdnn_same_dims(yDesc, dxDesc))
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: y, dy, x and dx dimensions differ", what);
    float be = *(const float *)beta;
    simdnn_check_tensor_range(yDesc, y, 0, "cudnnActivationBackward y");
    simdnn_check_tensor_range(dyDesc, dy, 0, "cudnnActivationBackward dy");
    simdnn_check_tensor_range(xDesc, x, 0, "cudnnActivationBackward x");
    simdnn_check_tensor_range(dxDesc, dx, 1, "cudnnActivationBackward dx");
    if (simgpu_compute_enabled()) {
        struct act_ctx c = {.a = activationDesc, .alpha = *(const float *)alpha, .beta = be, .out = dx, .y = y,
                            .dy = dy, .x = x};
        int64_t s[4][CUDNN_DIM_MAX];
        simdnn_strides64(dxDesc, s[0]);
        simdnn_strides64(yDesc, s[1]);
        simdnn_strides64(dyDesc, s[2]);
        simdnn_strides64(xDesc, s[3]);
        simdnn_for_each_row(dxDesc->nb_dims, dxDesc->dim, 4, s, bwd_row, &c);
    }
    double n = (double)simdnn_tensor_elems(dxDesc);
    simdnn_charge(handle, what, 4 * n, SIMDNN_ELEMENTWISE_FLOP_EFF, n * sizeof(float) * (be != 0.0f ? 5 : 4), 0);
    return CUDNN_STATUS_SUCCESS;
}
