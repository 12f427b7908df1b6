/*
 * tensor_ops.c — elementwise tensor operations of the simulated cuDNN:
 * cudnnAddTensor (bias broadcast), cudnnOpTensor, cudnnSetTensor,
 * cudnnScaleTensor and cudnnTransformTensor (layout change or copy into a
 * strided view, which frameworks use to concatenate along channels).
 *
 * All are bandwidth-bound on a GPU; their modelled time is the bytes they
 * move over the sustained device bandwidth.
 */
#include <math.h>
#include "sim/cudnn/cudnn_sim.h"

struct ew_ctx {
    float *c;
    const float *a, *b;
    float alpha1, alpha2, beta;
    cudnnOpTensorOp_t op;
};

/* Per-call bytes: each operand read once, the output written (and read when
 * beta != 0). */
static double ew_bytes(const struct cudnnTensorStruct *out, double in_bytes, int reads_out)
{
    double o = (double)simdnn_tensor_elems(out) * sizeof(float);
    return in_bytes + o * (reads_out ? 2 : 1);
}

/* Strides of operand t broadcast onto the dims of out (0 where t has 1). */
static void broadcast_strides(const struct cudnnTensorStruct *t, const struct cudnnTensorStruct *out,
                              int64_t s[CUDNN_DIM_MAX])
{
    for (int i = 0; i < CUDNN_DIM_MAX; i++)
        s[i] = (i < t->nb_dims && t->dim[i] == out->dim[i]) ? t->stride[i] : 0;
}

static int broadcastable(const struct cudnnTensorStruct *t, const struct cudnnTensorStruct *out)
{
    if (t->nb_dims != out->nb_dims)
        return 0;
    for (int i = 0; i < t->nb_dims; i++)
        if (t->dim[i] != out->dim[i] && t->dim[i] != 1)
            return 0;
    return 1;
}

/* ---- cudnnAddTensor ------------------------------------------------------- */

static void add_row(void *vctx, int64_t n, const int64_t *off, const int64_t *inner)
{
    struct ew_ctx *x = vctx;
    float *c = x->c + off[0];
    const float *a = x->a + off[1];
    for (int64_t i = 0; i < n; i++)
        c[i * inner[0]] = simdnn_blend(x->alpha1, a[i * inner[1]], x->beta, c[i * inner[0]]);
}

cudnnStatus_t cudnnAddTensor(cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t aDesc,
                             const void *A, const void *beta, const cudnnTensorDescriptor_t cDesc, void *C)
{
    cudnnStatus_t st;
    if ((st = simdnn_check_work(handle)) || (st = simdnn_check_float_tensor(aDesc, "cudnnAddTensor")) ||
        (st = simdnn_check_float_tensor(cDesc, "cudnnAddTensor")))
        return st;
    if (!alpha || !beta || !A || !C)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnAddTensor: NULL pointer argument");
    if (!broadcastable(aDesc, cDesc))
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM,
                           "cudnnAddTensor: each dimension of A must match C or be 1");
    float al = *(const float *)alpha, be = *(const float *)beta;
    simdnn_check_tensor_range(aDesc, A, 0, "cudnnAddTensor A");
    simdnn_check_tensor_range(cDesc, C, 1, "cudnnAddTensor C");
    if (simgpu_compute_enabled()) {
        struct ew_ctx x = {.c = C, .a = A, .alpha1 = al, .beta = be};
        int64_t s[2][CUDNN_DIM_MAX];
        simdnn_strides64(cDesc, s[0]);
        broadcast_strides(aDesc, cDesc, s[1]);
        simdnn_for_each_row(cDesc->nb_dims, cDesc->dim, 2, s, add_row, &x);
    }
    double n = (double)simdnn_tensor_elems(cDesc);
    simdnn_charge(handle, "cudnnAddTensor", 2 * n, SIMDNN_ELEMENTWISE_FLOP_EFF,
                  ew_bytes(cDesc, (double)simdnn_tensor_elems(aDesc) * sizeof(float), be != 0.0f), 0);
    return CUDNN_STATUS_SUCCESS;
}

/* ---- cudnnOpTensor -------------------------------------------------------- */

static void op_row(void *vctx, int64_t n, const int64_t *off, const int64_t *inner)
{
    struct ew_ctx *x = vctx;
    float *c = x->c + off[0];
    const float *a = x->a + off[1];
    const float *b = x->b ? x->b + off[2] : NULL;
    for (int64_t i = 0; i < n; i++) {
        float va = x->alpha1 * a[i * inner[1]];
        float vb = b ? x->alpha2 * b[i * inner[2]] : 0.0f;
        float r;
        switch (x->op) {
        case CUDNN_OP_TENSOR_ADD: r = va + vb; break;
        case CUDNN_OP_TENSOR_MUL: r = va * vb; break;
        case CUDNN_OP_TENSOR_MIN: r = fminf(va, vb); break;
        case CUDNN_OP_TENSOR_MAX: r = fmaxf(va, vb); break;
        case CUDNN_OP_TENSOR_SQRT: r = sqrtf(va); break;
        default: r = 1.0f - va; break; /* CUDNN_OP_TENSOR_NOT */
        }
        c[i * inner[0]] = simdnn_blend(1.0f, r, x->beta, c[i * inner[0]]);
    }
}

cudnnStatus_t cudnnOpTensor(cudnnHandle_t handle, const cudnnOpTensorDescriptor_t opTensorDesc,
                            const void *alpha1, const cudnnTensorDescriptor_t aDesc, const void *A,
                            const void *alpha2, const cudnnTensorDescriptor_t bDesc, const void *B,
                            const void *beta, const cudnnTensorDescriptor_t cDesc, void *C)
{
    cudnnStatus_t st;
    if ((st = simdnn_check_work(handle)))
        return st;
    if (!opTensorDesc || opTensorDesc->magic != SIMDNN_MAGIC_OPTENSOR)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnOpTensor: invalid op-tensor descriptor");
    int unary = opTensorDesc->op == CUDNN_OP_TENSOR_SQRT || opTensorDesc->op == CUDNN_OP_TENSOR_NOT;
    if ((st = simdnn_check_float_tensor(aDesc, "cudnnOpTensor A")) ||
        (st = simdnn_check_float_tensor(cDesc, "cudnnOpTensor C")))
        return st;
    if (!unary && (st = simdnn_check_float_tensor(bDesc, "cudnnOpTensor B")))
        return st;
    if (!alpha1 || !beta || !A || !C || (!unary && (!alpha2 || !B)))
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnOpTensor: NULL pointer argument");
    if (!simdnn_same_dims(aDesc, cDesc) || (!unary && !broadcastable(bDesc, cDesc)))
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM,
                           "cudnnOpTensor: A must match C; each dimension of B must match C or be 1");
    float be = *(const float *)beta;
    simdnn_check_tensor_range(aDesc, A, 0, "cudnnOpTensor A");
    if (!unary)
        simdnn_check_tensor_range(bDesc, B, 0, "cudnnOpTensor B");
    simdnn_check_tensor_range(cDesc, C, 1, "cudnnOpTensor C");
    if (simgpu_compute_enabled()) {
        struct ew_ctx x = {.c = C, .a = A, .b = unary ? NULL : B, .alpha1 = *(const float *)alpha1,
                           .alpha2 = unary ? 0.0f : *(const float *)alpha2, .beta = be,
                           .op = opTensorDesc->op};
        int64_t s[3][CUDNN_DIM_MAX];
        simdnn_strides64(cDesc, s[0]);
        simdnn_strides64(aDesc, s[1]);
        if (unary)
            simdnn_strides64(aDesc, s[2]);
        else
            broadcast_strides(bDesc, cDesc, s[2]);
        simdnn_for_each_row(cDesc->nb_dims, cDesc->dim, 3, s, op_row, &x);
    }
    double n = (double)simdnn_tensor_elems(cDesc);
    double in = n * sizeof(float) + (unary ? 0 : (double)simdnn_tensor_elems(bDesc) * sizeof(float));
    simdnn_charge(handle, "cudnnOpTensor", 3 * n, SIMDNN_ELEMENTWISE_FLOP_EFF, ew_bytes(cDesc, in, be != 0.0f), 0);
    return CUDNN_STATUS_SUCCESS;
}

/* ---- cudnnSetTensor / cudnnScaleTensor ------------------------------------ */

static void set_row(void *vctx, int64_t n, const int64_t *off, const int64_t *inner)
{
    struct ew_ctx *x = vctx;
    float *c = x->c + off[0];
    for (int64_t i = 0; i < n; i++)
        c[i * inner[0]] = x->alpha1;
}

static void scale_row(void *vctx, int64_t n, const int64_t *off, const int64_t *inner)
{
    struct ew_ctx *x = vctx;
    float *c = x->c + off[0];
    for (int64_t i = 0; i < n; i++)
        c[i * inner[0]] *= x->alpha1;
}

static cudnnStatus_t fill_or_scale(cudnnHandle_t handle, const cudnnTensorDescriptor_t yDesc, void *y,
                                   const void *value, int scale, const char *name)
{
    cudnnStatus_t st;
    if ((st = simdnn_check_work(handle)) || (st = simdnn_check_float_tensor(yDesc, name)))
        return st;
    if (!y || !value)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL pointer argument", name);
    simdnn_check_tensor_range(yDesc, y, 1, name);
    if (simgpu_compute_enabled()) {
        struct ew_ctx x = {.c = y, .alpha1 = *(const float *)value};
        int64_t s[1][CUDNN_DIM_MAX];
        simdnn_strides64(yDesc, s[0]);
        simdnn_for_each_row(yDesc->nb_dims, yDesc->dim, 1, s, scale ? scale_row : set_row, &x);
    }
    double n = (double)simdnn_tensor_elems(yDesc);
    simdnn_charge(handle, name, scale ? n : 0, SIMDNN_ELEMENTWISE_FLOP_EFF, ew_bytes(yDesc, 0, scale), 0);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetTensor(cudnnHandle_t handle, const cudnnTensorDescriptor_t yDesc, void *y,
                             const void *valuePtr)
{
    return fill_or_scale(handle, yDesc, y, valuePtr, 0, "cudnnSetTensor");
}

cudnnStatus_t cudnnScaleTensor(cudnnHandle_t handle, const cudnnTensorDescriptor_t yDesc, void *y,
                               const void *alpha)
{
    return fill_or_scale(handle, yDesc, y, alpha, 1, "cudnnScaleTensor");
}

/* ---- cudnnTransformTensor ------------------------------------------------- */

cudnnStatus_t cudnnTransformTensor(cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xDesc,
                                   const void *x, const void *beta, const cudnnTensorDescriptor_t yDesc, void *y)
{
    cudnnStatus_t st;
    if ((st = simdnn_check_work(handle)) || (st = simdnn_check_float_tensor(xDesc, "cudnnTransformTensor")) ||
        (st = simdnn_check_float_tensor(yDesc, "cudnnTransformTensor")))
        return st;
    if (!alpha || !beta || !x || !y)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnTransformTensor: NULL pointer argument");
    if (!simdnn_same_dims(xDesc, yDesc))
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnTransformTensor: x and y dimensions differ");
    float be = *(const float *)beta;
    simdnn_check_tensor_range(xDesc, x, 0, "cudnnTransformTensor x");
    simdnn_check_tensor_range(yDesc, y, 1, "cudnnTransformTensor y");
    if (simgpu_compute_enabled()) {
        struct ew_ctx c = {.c = y, .a = x, .alpha1 = *(const float *)alpha, .beta = be};
        int64_t s[2][CUDNN_DIM_MAX];
        simdnn_strides64(yDesc, s[0]);
        simdnn_strides64(xDesc, s[1]);
        simdnn_for_each_row(yDesc->nb_dims, yDesc->dim, 2, s, add_row, &c);
    }
    double n = (double)simdnn_tensor_elems(yDesc);
    simdnn_charge(handle, "cudnnTransformTensor", 2 * n, SIMDNN_ELEMENTWISE_FLOP_EFF,
                  ew_bytes(yDesc, n * sizeof(float), be != 0.0f), 0);
    return CUDNN_STATUS_SUCCESS;
}
