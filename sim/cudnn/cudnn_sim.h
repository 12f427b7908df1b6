/*
 * cudnn_sim.h — private interface of the simulated cuDNN 9 (libcudnn.so.9).
 *
 * The simulated library implements the legacy cuDNN API on the simulated
 * device: every call validates its arguments the way cuDNN does, checks the
 * device ranges it reads and writes, does the arithmetic in FP32 on the CPU
 * (unless the device runs with compute off) and charges a modelled duration
 * to the handle's stream. This header holds the descriptor layouts shared by
 * the sources under sim/cudnn/ and the helpers they have in common: strided
 * tensor walking, alpha/beta blending, and the cost model.
 */
#ifndef SIM_CUDNN_SIM_H
#define SIM_CUDNN_SIM_H

#include <stddef.h>
#include <stdint.h>
#include <cudnn.h>
#include "sim/simcore.h"

/* Descriptor tags: a descriptor of the wrong kind or one already destroyed is
 * refused with CUDNN_STATUS_BAD_PARAM instead of being read as garbage. */
enum {
    SIMDNN_MAGIC_HANDLE = 0x444e4e48,
    SIMDNN_MAGIC_TENSOR = 0x444e4e54,
    SIMDNN_MAGIC_FILTER = 0x444e4e46,
    SIMDNN_MAGIC_CONV = 0x444e4e43,
    SIMDNN_MAGIC_ACT = 0x444e4e41,
    SIMDNN_MAGIC_POOL = 0x444e4e50,
    SIMDNN_MAGIC_LRN = 0x444e4e4c,
    SIMDNN_MAGIC_DROPOUT = 0x444e4e44,
    SIMDNN_MAGIC_OPTENSOR = 0x444e4e4f,
    SIMDNN_MAGIC_DEAD = 0x64656164,
};

struct cudnnContext {
    uint32_t magic;
    int device;
    cudaStream_t stream;
    CUdeviceptr internal;        /* the handle's own device buffer */
    size_t internal_bytes;
};

struct cudnnTensorStruct {
    uint32_t magic;
    int nb_dims;                 /* 0 until set */
    cudnnDataType_t dtype;
    int dim[CUDNN_DIM_MAX];
    int stride[CUDNN_DIM_MAX];
};

struct cudnnFilterStruct {
    uint32_t magic;
    int nb_dims;
    cudnnDataType_t dtype;
    cudnnTensorFormat_t format;
    int dim[CUDNN_DIM_MAX];      /* K, C, spatial... whatever the format */
};

struct cudnnConvolutionStruct {
    uint32_t magic;
    int spatial;                 /* arrayLength, 0 until set */
    int pad[CUDNN_DIM_MAX], stride[CUDNN_DIM_MAX], dilation[CUDNN_DIM_MAX];
    cudnnConvolutionMode_t mode;
    cudnnDataType_t compute_type;
    cudnnMathType_t math_type;
    int groups;
    cudnnReorderType_t reorder;
};

struct cudnnActivationStruct {
    uint32_t magic;
    cudnnActivationMode_t mode;
    cudnnNanPropagation_t nan_opt;
    double coef;
    double swish_beta;
};

struct cudnnPoolingStruct {
    uint32_t magic;
    cudnnPoolingMode_t mode;
    cudnnNanPropagation_t nan_opt;
    int spatial;
    int window[CUDNN_DIM_MAX], pad[CUDNN_DIM_MAX], stride[CUDNN_DIM_MAX];
};

struct cudnnLRNStruct {
    uint32_t magic;
    unsigned n;
    double alpha, beta, k;
};

struct cudnnDropoutStruct {
    uint32_t magic;
    float dropout;
    void *states;
    size_t states_bytes;
    unsigned long long seed;
};

struct cudnnOpTensorStruct {
    uint32_t magic;
    cudnnOpTensorOp_t op;
    cudnnDataType_t comp_type;
    cudnnNanPropagation_t nan_opt;
};

/* ---- validation ----------------------------------------------------------- */

/* Records the reason of a failure for cudnnGetLastErrorString and returns st. */
cudnnStatus_t simdnn_fail(cudnnStatus_t st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

cudnnStatus_t simdnn_check_handle(cudnnHandle_t h);
/* For calls that do device work: a valid handle whose stream is not
 * capturing (a capture is invalidated and the call fails). */
cudnnStatus_t simdnn_check_work(cudnnHandle_t h);
/* A set tensor descriptor; FP32 only for calls that compute. */
cudnnStatus_t simdnn_check_tensor(const struct cudnnTensorStruct *t, const char *what);
cudnnStatus_t simdnn_check_float_tensor(const struct cudnnTensorStruct *t, const char *what);
int simdnn_same_dims(const struct cudnnTensorStruct *a, const struct cudnnTensorStruct *b);

size_t simdnn_dtype_size(cudnnDataType_t t);
int64_t simdnn_tensor_elems(const struct cudnnTensorStruct *t);
/* Bytes from the first to one past the last element, as cudnnGetTensorSizeInBytes. */
size_t simdnn_tensor_span(const struct cudnnTensorStruct *t);

/* Residency check of a tensor argument; no-op for a NULL pointer with 0 bytes. */
void simdnn_check_tensor_range(const struct cudnnTensorStruct *t, const void *p, int write,
                               const char *what);

/* ---- strided traversal ---------------------------------------------------- */

/* Walks every element of a dims[nd] index space in row-major order and calls
 * fn once per innermost row with each operand's offset (in elements) of the
 * row's first element; the innermost stride of operand i is strides[i][nd-1].
 * Operands with stride 0 in a dimension broadcast along it. */
typedef void (*simdnn_row_fn)(void *ctx, int64_t len, const int64_t *offsets,
                              const int64_t *inner_strides);
void simdnn_for_each_row(int nd, const int *dims, int nops, const int64_t strides[][CUDNN_DIM_MAX],
                         simdnn_row_fn fn, void *ctx);

/* Strides of t (in elements) as int64. */
void simdnn_strides64(const struct cudnnTensorStruct *t, int64_t out[CUDNN_DIM_MAX]);

/* Offsets of every spatial position (dims 2..nd-1) of t, in row-major order.
 * Returns the number of positions; *out is malloc'd (caller frees). */
int64_t simdnn_spatial_offsets(const struct cudnnTensorStruct *t, int64_t **out);

/* out = alpha * v + beta * out, never reading out when beta == 0, as cuDNN
 * documents (a NaN already in the output must not leak through). */
static inline float simdnn_blend(float alpha, float v, float beta, float old)
{
    return beta == 0.0f ? alpha * v : alpha * v + beta * old;
}

/* ---- handle, stream, cost model ------------------------------------------ */

CUstream simdnn_stream(cudnnHandle_t h);

/* Charge an op to the handle's stream: roofline of flops at efficiency
 * flop_eff against bytes at the sustained bandwidth, plus serial bytes that
 * separate passes (transforms, im2col) move before or after it. */
void simdnn_charge(cudnnHandle_t h, const char *name, double flops, double flop_eff, double bytes,
                   double serial_bytes);
double simdnn_model_ns(cudnnHandle_t h, double flops, double flop_eff, double bytes,
                       double serial_bytes);
/* Failure of a call whose ranges were already declared: the declared ranges
 * belong to this call, so it is still charged (launch cost only) before
 * CUDNN_STATUS_ALLOC_FAILED is returned. */
cudnnStatus_t simdnn_scratch_failed(cudnnHandle_t h, const char *what);
/* Fixed device-side cost of one kernel on the handle's device. */
double simdnn_launch_ns(cudnnHandle_t h);

/* Fraction of the datasheet memory bandwidth that streaming kernels sustain
 * (see docs/sim-cudnn.md, "Cost model"). */
#define SIMDNN_BW_EFFICIENCY 0.80
/* Efficiency of the FP32 pipelines for non-convolution arithmetic (elementwise,
 * normalisation): these kernels are bandwidth-bound, so the value only
 * matters for the transcendental-heavy ones. */
#define SIMDNN_ELEMENTWISE_FLOP_EFF 0.50

/* ---- device memory through the driver ------------------------------------ */

/* cuMemAlloc / cuMemFree reached through cuGetProcAddress, as the static
 * cudart inside the real library does. */
CUresult simdnn_driver_alloc(CUdeviceptr *p, size_t bytes);
CUresult simdnn_driver_free(CUdeviceptr p);

/* ---- activation shared by activation and fused convolution --------------- */

/* Value of the activation at x (double in, double out). */
double simdnn_activate(const struct cudnnActivationStruct *a, double x);

/* Makes OpenBLAS single-threaded once, so that matrix results do not depend on
 * thread scheduling (results must be identical run to run). */
void simdnn_blas_init(void);

#endif
