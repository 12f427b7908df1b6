/*
 * cublas_internal.h — what the files of the simulated cuBLAS share: the
 * handle (struct cublasContext, opaque to programs), the argument-checking
 * and scalar-reading helpers every routine uses, and the cost model that
 * turns a call's FLOPs and bytes into a modelled duration on the timeline.
 *
 * Each routine follows the same order, so that the residency checks run
 * before any byte is touched and SIMGPU_COMPUTE=0 still charges time:
 * validate arguments, check every device range against its exact extent,
 * compute (unless compute is off), enqueue on the handle's stream.
 * Constants of the cost model are explained, with their sources, in
 * docs/sim-cublas.md.
 */
#ifndef SIMBLAS_INTERNAL_H
#define SIMBLAS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <cublas_api.h>

#include "sim/simcore.h"

#define SIMBLAS_HANDLE_MAGIC 0x53424c4153484e44ull

struct cublasContext {
    uint64_t magic;
    int device;                    /* current device when the handle was created */
    cudaStream_t stream;
    cublasPointerMode_t pointer_mode;
    cublasMath_t math_mode;
    cublasAtomicsMode_t atomics_mode;
    CUdeviceptr default_workspace; /* allocated through the driver at create time */
    size_t default_workspace_size;
    void *workspace;               /* the one in use: default or the user's */
    size_t workspace_size;
};

/* NULL or a stale handle: cuBLAS answers CUBLAS_STATUS_NOT_INITIALIZED. */
int simblas_handle_ok(cublasHandle_t h);
/* Prologue of a routine that does device work: CUBLAS_STATUS_NOT_INITIALIZED
 * for a bad handle, CUBLAS_STATUS_EXECUTION_FAILED when its stream captures
 * a graph (the capture is invalidated). */
cublasStatus_t simblas_check_work(cublasHandle_t h);

/* Bytes spanned by a column-major rows x cols matrix with leading dimension
 * ld; 0 when it has no element. */
static inline size_t simblas_matrix_bytes(int64_t rows, int64_t cols, int64_t ld)
{
    if (rows <= 0 || cols <= 0)
        return 0;
    return ((size_t)(cols - 1) * (size_t)ld + (size_t)rows) * sizeof(float);
}

/* Bytes spanned by n elements at stride inc. Negative strides walk the same
 * span backwards from its far end (the BLAS convention), so the span always
 * starts at the pointer the caller passed. */
static inline size_t simblas_vector_bytes(int64_t n, int64_t inc)
{
    if (n <= 0)
        return 0;
    int64_t step = inc < 0 ? -inc : inc;
    return (1 + (size_t)(n - 1) * (size_t)step) * sizeof(float);
}

/* A scalar argument (alpha, beta) as the routine will use it. In host pointer
 * mode it is read at once; in device pointer mode it lives in device memory,
 * which is checked like any operand and cannot be read with compute off —
 * then the value is unknown and treated as non-zero, so that residency
 * checks and the cost model stay on the safe side. */
struct simblas_scalar {
    float value;
    int known;
};

/* Reads *p under the handle's pointer mode; what names the argument in
 * diagnostics. Returns CUBLAS_STATUS_INVALID_VALUE if p is NULL. */
cublasStatus_t simblas_read_scalar(cublasHandle_t h, const float *p, const char *what,
                                   struct simblas_scalar *out);

static inline int simblas_scalar_is(const struct simblas_scalar *s, float v)
{
    return s->known && s->value == v;
}

/* Where a reduction's result goes: host memory (the call then waits for the
 * device, as real cuBLAS does when it copies the result back) or device
 * memory (device pointer mode: asynchronous). */
cublasStatus_t simblas_check_result_ptr(cublasHandle_t h, float *result, const char *what);
void simblas_store_result(cublasHandle_t h, float *result, float value, uint64_t done_ns);

/* Usable stream of the handle, or CUBLAS_STATUS_EXECUTION_FAILED when the
 * stream is not valid on the current device (the kernel launch would fail). */
cublasStatus_t simblas_stream_ok(cublasHandle_t h);

/* Checks the workspace in use, which GEMM-family kernels may write. */
void simblas_check_workspace(cublasHandle_t h, const char *what);

/* ---- cost model (docs/sim-cublas.md) ------------------------------------ */

/* Fraction of peak FP32 rate a well-shaped SGEMM sustains. */
#define SIMBLAS_GEMM_EFFICIENCY 0.75
/* Fraction of peak DRAM bandwidth a streaming kernel sustains. */
#define SIMBLAS_MEM_EFFICIENCY 0.80
/* Bytes fetched per element of a strided vector: one 32-byte DRAM sector
 * when the stride skips over whole sectors. */
#define SIMBLAS_SECTOR_BYTES 32.0

/* Modelled duration of a GEMM (or a batch of equal GEMMs) on stream s:
 * the larger of its math time, with tile and wave quantization on the
 * device's SMs, and its memory time. tf32: the handle's math mode allows
 * TF32 tensor cores (CUBLAS_TF32_TENSOR_OP_MATH); the default mode does not. */
double simblas_gemm_ns(cudaStream_t s, int64_t m, int64_t n, int64_t k, int64_t batch,
                       double bytes, int tf32);
/* Whether the handle's math mode asks for TF32 tensor-core math. */
int simblas_tf32(cublasMath_t mode);
/* Modelled duration of a memory-bound routine moving bytes and doing flops. */
double simblas_stream_ns(cudaStream_t s, double bytes, double flops);
/* DRAM bytes read or written for n elements of a vector at stride inc. */
double simblas_vector_traffic(int64_t n, int64_t inc);

#endif
