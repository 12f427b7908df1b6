/*
 * tensor.c — tensor descriptors of the simulated cuDNN and the strided
 * traversal every computing call is built on.
 *
 * A cuDNN tensor is a dims/strides view of device memory; views with gaps
 * (a channel slice of a larger tensor, used for concatenation) and with
 * arbitrary dimension order are legal, so no operation may assume packed
 * NCHW. The traversal here walks any such view row by row.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "sim/cudnn/cudnn_sim.h"

size_t simdnn_dtype_size(cudnnDataType_t t)
{
    switch (t) {
    case CUDNN_DATA_FLOAT: case CUDNN_DATA_INT32: case CUDNN_DATA_INT8x4: case CUDNN_DATA_UINT8x4:
    case CUDNN_DATA_UINT32:
        return 4;
    case CUDNN_DATA_DOUBLE: case CUDNN_DATA_INT64: case CUDNN_DATA_COMPLEX_FP32:
        return 8;
    case CUDNN_DATA_COMPLEX_FP64:
        return 16;
    case CUDNN_DATA_HALF: case CUDNN_DATA_BFLOAT16:
        return 2;
    case CUDNN_DATA_INT8x32:
        return 32;
    case CUDNN_DATA_INT8: case CUDNN_DATA_UINT8: case CUDNN_DATA_BOOLEAN: case CUDNN_DATA_FP8_E4M3:
    case CUDNN_DATA_FP8_E5M2: case CUDNN_DATA_FAST_FLOAT_FOR_FP8: case CUDNN_DATA_FP8_E8M0:
    case CUDNN_DATA_FP4_E2M1: case CUDNN_DATA_INT4: case CUDNN_DATA_UINT4:
        return 1;
    }
    return 0;
}

int64_t simdnn_tensor_elems(const struct cudnnTensorStruct *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->nb_dims; i++)
        n *= t->dim[i];
    return n;
}

size_t simdnn_tensor_span(const struct cudnnTensorStruct *t)
{
    if (t->nb_dims == 0)
        return 0;
    int64_t last = 0;
    for (int i = 0; i < t->nb_dims; i++)
        last += (int64_t)(t->dim[i] - 1) * t->stride[i];
    return (size_t)(last + 1) * simdnn_dtype_size(t->dtype);
}

cudnnStatus_t simdnn_check_tensor(const struct cudnnTensorStruct *t, const char *what)
{
    if (!t || t->magic != SIMDNN_MAGIC_TENSOR)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: invalid tensor descriptor", what);
    if (t->nb_dims == 0)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: tensor descriptor not set", what);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t simdnn_check_float_tensor(const struct cudnnTensorStruct *t, const char *what)
{
    cudnnStatus_t st = simdnn_check_tensor(t, what);
    if (st)
        return st;
    if (t->dtype != CUDNN_DATA_FLOAT)
        return simdnn_fail(CUDNN_STATUS_NOT_SUPPORTED,
                           "%s: the simulated cuDNN computes CUDNN_DATA_FLOAT tensors only", what);
    return CUDNN_STATUS_SUCCESS;
}

int simdnn_same_dims(const struct cudnnTensorStruct *a, const struct cudnnTensorStruct *b)
{
    if (a->nb_dims != b->nb_dims)
        return 0;
    for (int i = 0; i < a->nb_dims; i++)
        if (a->dim[i] != b->dim[i])
            return 0;
    return 1;
}

void simdnn_check_tensor_range(const struct cudnnTensorStruct *t, const void *p, int write,
                               const char *what)
{
    simgpu_check_range(p, simdnn_tensor_span(t), write, what);
}

void simdnn_strides64(const struct cudnnTensorStruct *t, int64_t out[CUDNN_DIM_MAX])
{
    for (int i = 0; i < CUDNN_DIM_MAX; i++)
        out[i] = i < t->nb_dims ? t->stride[i] : 0;
}

void simdnn_for_each_row(int nd, const int *dims, int nops, const int64_t strides[][CUDNN_DIM_MAX],
                         simdnn_row_fn fn, void *ctx)
{
    int idx[CUDNN_DIM_MAX] = {0};
    int64_t off[8] = {0}, inner[8];
    for (int k = 0; k < nops; k++)
        inner[k] = strides[k][nd - 1];
    for (int i = 0; i < nd; i++)
        if (dims[i] <= 0)
            return;
    for (;;) {
        fn(ctx, dims[nd - 1], off, inner);
        int d = nd - 2;
        for (; d >= 0; d--) {
            idx[d]++;
            for (int k = 0; k < nops; k++)
                off[k] += strides[k][d];
            if (idx[d] < dims[d])
                break;
            for (int k = 0; k < nops; k++)
                off[k] -= strides[k][d] * dims[d];
            idx[d] = 0;
        }
        if (d < 0)
            return;
    }
}

int64_t simdnn_spatial_offsets(const struct cudnnTensorStruct *t, int64_t **out)
{
    int64_t n = 1;
    for (int i = 2; i < t->nb_dims; i++)
        n *= t->dim[i];
    int64_t *v = malloc((size_t)n * sizeof *v);
    if (!v) {
        *out = NULL;
        return -1;
    }
    int idx[CUDNN_DIM_MAX] = {0};
    for (int64_t p = 0; p < n; p++) {
        int64_t o = 0;
        for (int i = 2; i < t->nb_dims; i++)
            o += (int64_t)idx[i] * t->stride[i];
        v[p] = o;
        for (int i = t->nb_dims - 1; i >= 2; i--) {
            if (++idx[i] < t->dim[i])
                break;
            idx[i] = 0;
        }
    }
    *out = v;
    return n;
}

/* ---- descriptor API ------------------------------------------------------- */

static int valid_dtype(cudnnDataType_t t) { return simdnn_dtype_size(t) != 0; }

/* The element count of dims[0..nb) when it is at most INT_MAX, else -1: the
 * legacy descriptors hold 32-bit dimensions and strides, and cuDNN refuses a
 * tensor of more than 2 Giga-elements. Checked as it goes, so that a product
 * too large even for 64 bits is refused rather than wrapped. */
static int64_t elems_up_to_int_max(int nb, const int *dim)
{
    int64_t n = 1;
    for (int i = 0; i < nb; i++)
        if (__builtin_mul_overflow(n, (int64_t)dim[i], &n) || n > INT_MAX)
            return -1;
    return n;
}

/* Bytes from the first element to one past the last of a strided view, or
 * -1 when that does not fit in 64 bits (no address space holds it). */
static int64_t span_bytes(int nb, const int *dim, const int *stride, size_t elem)
{
    int64_t last = 0, term, bytes;
    for (int i = 0; i < nb; i++)
        if (__builtin_mul_overflow((int64_t)dim[i] - 1, (int64_t)stride[i], &term) ||
            __builtin_add_overflow(last, term, &last))
            return -1;
    if (__builtin_add_overflow(last, 1, &last) || __builtin_mul_overflow(last, (int64_t)elem, &bytes))
        return -1;
    return bytes;
}

static cudnnStatus_t set_nd(struct cudnnTensorStruct *t, cudnnDataType_t dt, int nb, const int *dim,
                            const int *stride, const char *what)
{
    if (!t || t->magic != SIMDNN_MAGIC_TENSOR)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: invalid tensor descriptor", what);
    if (!valid_dtype(dt))
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: invalid data type %d", what, (int)dt);
    if (nb < 3 || nb > CUDNN_DIM_MAX)
        return simdnn_fail(CUDNN_STATUS_NOT_SUPPORTED, "%s: nbDims %d outside [3, %d]", what, nb,
                           CUDNN_DIM_MAX);
    for (int i = 0; i < nb; i++) {
        if (dim[i] <= 0)
            return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: dimension %d is %d", what, i, dim[i]);
        if (stride[i] <= 0)
            return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: stride %d is %d", what, i, stride[i]);
    }
    if (elems_up_to_int_max(nb, dim) < 0)
        return simdnn_fail(CUDNN_STATUS_NOT_SUPPORTED, "%s: more than 2^31 elements", what);
    /* Every size derived from the descriptor later (cudnnGetTensorSizeInBytes,
     * the ranges an op checks) is this span or less, so it is the one to
     * bound. */
    if (span_bytes(nb, dim, stride, simdnn_dtype_size(dt)) < 0)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: strides span more than 2^63 bytes", what);
    t->dtype = dt;
    t->nb_dims = nb;
    for (int i = 0; i < CUDNN_DIM_MAX; i++) {
        t->dim[i] = i < nb ? dim[i] : 0;
        t->stride[i] = i < nb ? stride[i] : 0;
    }
    return CUDNN_STATUS_SUCCESS;
}

/* Packed strides of dims in NCHW order or, for NHWC, channels innermost.
 * The caller has checked that the element count fits in an int, so every
 * partial product does. */
static void packed_strides(cudnnTensorFormat_t f, int nb, const int *dim, int *stride)
{
    int64_t s = 1;
    if (f == CUDNN_TENSOR_NHWC) {
        stride[1] = (int)s;
        s *= dim[1];
        for (int i = nb - 1; i >= 2; i--) {
            stride[i] = (int)s;
            s *= dim[i];
        }
        stride[0] = (int)s;
    } else {
        for (int i = nb - 1; i >= 0; i--) {
            stride[i] = (int)s;
            s *= dim[i];
        }
    }
}

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *tensorDesc)
{
    if (!tensorDesc)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreateTensorDescriptor: NULL");
    struct cudnnTensorStruct *t = calloc(1, sizeof *t);
    if (!t)
        return simdnn_fail(CUDNN_STATUS_ALLOC_FAILED, "cudnnCreateTensorDescriptor: out of memory");
    t->magic = SIMDNN_MAGIC_TENSOR;
    *tensorDesc = t;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t tensorDesc)
{
    if (!tensorDesc)
        return CUDNN_STATUS_SUCCESS;
    if (tensorDesc->magic != SIMDNN_MAGIC_TENSOR)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnDestroyTensorDescriptor: invalid descriptor");
    tensorDesc->magic = SIMDNN_MAGIC_DEAD;
    free(tensorDesc);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t tensorDesc, cudnnTensorFormat_t format,
                                         cudnnDataType_t dataType, int n, int c, int h, int w)
{
    if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetTensor4dDescriptor: format %d", (int)format);
    int dim[4] = {n, c, h, w}, stride[4];
    for (int i = 0; i < 4; i++)
        if (dim[i] <= 0)
            return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetTensor4dDescriptor: dimension %d", dim[i]);
    if (elems_up_to_int_max(4, dim) < 0)
        return simdnn_fail(CUDNN_STATUS_NOT_SUPPORTED, "cudnnSetTensor4dDescriptor: more than 2^31 elements");
    packed_strides(format, 4, dim, stride);
    return set_nd(tensorDesc, dataType, 4, dim, stride, "cudnnSetTensor4dDescriptor");
}

cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t dataType,
                                           int n, int c, int h, int w, int nStride, int cStride,
                                           int hStride, int wStride)
{
    int dim[4] = {n, c, h, w}, stride[4] = {nStride, cStride, hStride, wStride};
    return set_nd(tensorDesc, dataType, 4, dim, stride, "cudnnSetTensor4dDescriptorEx");
}

cudnnStatus_t cudnnGetTensor4dDescriptor(const cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t *dataType,
                                         int *n, int *c, int *h, int *w, int *nStride, int *cStride,
                                         int *hStride, int *wStride)
{
    cudnnStatus_t st = simdnn_check_tensor(tensorDesc, "cudnnGetTensor4dDescriptor");
    if (st)
        return st;
    if (!dataType || !n || !c || !h || !w || !nStride || !cStride || !hStride || !wStride)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetTensor4dDescriptor: NULL output");
    const struct cudnnTensorStruct *t = tensorDesc;
    *dataType = t->dtype;
    *n = t->dim[0], *c = t->dim[1], *h = t->dim[2];
    *w = t->nb_dims > 3 ? t->dim[3] : 1;
    *nStride = t->stride[0], *cStride = t->stride[1], *hStride = t->stride[2];
    *wStride = t->nb_dims > 3 ? t->stride[3] : 1;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t dataType,
                                         int nbDims, const int dimA[], const int strideA[])
{
    if (!dimA || !strideA)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetTensorNdDescriptor: NULL array");
    return set_nd(tensorDesc, dataType, nbDims, dimA, strideA, "cudnnSetTensorNdDescriptor");
}

cudnnStatus_t cudnnSetTensorNdDescriptorEx(cudnnTensorDescriptor_t tensorDesc, cudnnTensorFormat_t format,
                                           cudnnDataType_t dataType, int nbDims, const int dimA[])
{
    if (!dimA)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetTensorNdDescriptorEx: NULL array");
    if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetTensorNdDescriptorEx: format %d", (int)format);
    if (nbDims < 3 || nbDims > CUDNN_DIM_MAX)
        return simdnn_fail(CUDNN_STATUS_NOT_SUPPORTED, "cudnnSetTensorNdDescriptorEx: nbDims %d", nbDims);
    for (int i = 0; i < nbDims; i++)
        if (dimA[i] <= 0)
            return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetTensorNdDescriptorEx: dimension %d", dimA[i]);
    if (elems_up_to_int_max(nbDims, dimA) < 0)
        return simdnn_fail(CUDNN_STATUS_NOT_SUPPORTED, "cudnnSetTensorNdDescriptorEx: more than 2^31 elements");
    int stride[CUDNN_DIM_MAX];
    packed_strides(format, nbDims, dimA, stride);
    return set_nd(tensorDesc, dataType, nbDims, dimA, stride, "cudnnSetTensorNdDescriptorEx");
}

cudnnStatus_t cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t tensorDesc, int nbDimsRequested,
                                         cudnnDataType_t *dataType, int *nbDims, int dimA[], int strideA[])
{
    cudnnStatus_t st = simdnn_check_tensor(tensorDesc, "cudnnGetTensorNdDescriptor");
    if (st)
        return st;
    if (nbDimsRequested < 0 || !dataType || !nbDims || (nbDimsRequested > 0 && (!dimA || !strideA)))
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetTensorNdDescriptor: bad output arguments");
    *dataType = tensorDesc->dtype;
    *nbDims = tensorDesc->nb_dims;
    for (int i = 0; i < nbDimsRequested && i < tensorDesc->nb_dims; i++) {
        dimA[i] = tensorDesc->dim[i];
        strideA[i] = tensorDesc->stride[i];
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetTensorSizeInBytes(const cudnnTensorDescriptor_t tensorDesc, size_t *size)
{
    cudnnStatus_t st = simdnn_check_tensor(tensorDesc, "cudnnGetTensorSizeInBytes");
    if (st)
        return st;
    if (!size)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetTensorSizeInBytes: size is NULL");
    *size = simdnn_tensor_span(tensorDesc);
    return CUDNN_STATUS_SUCCESS;
}
