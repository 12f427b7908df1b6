/*
 * hooks_cublas.c — wrappers of the cuBLAS _v2 calls. Matrices are
 * column-major: op(A) is rows x cols, stored with leading dimension lda, so
 * A spans lda * (stored cols - 1) + stored rows elements. An output scaled
 * by a non-zero beta (or by a beta cuBLAS reads from device memory) is read
 * as well as written.
 */
#include "shim/sn_describe.h"
#include "shim/sn_wrap.h"

#define SN_BLAS_BEGIN(name, op, handle, args)                                  \
    SN_PROLOGUE(CUBLAS, name, args)                                            \
    SN_CALL_DECL(c);                                                           \
    sn_call_init(&c, SN_HOOK_ID_##name, (op), sn_current_device(), sn_blas_stream(handle)); \
    c.lib_handle = (void *)(handle);

#define SN_BLAS_END(args) SN_FORWARD_STEP(&c, cublasStatus_t, CUBLAS_STATUS_SUCCESS, CUBLAS_STATUS_ALLOC_FAILED, args)

/* A column-major matrix of rows x cols as the operation op sees it, with
 * leading dimension ld. */
typedef struct sn_mat {
    long rows, cols, ld;
} sn_mat;

static inline __attribute__((always_inline)) void sn_matrix(sn_call *c, const void *p, cublasOperation_t op, sn_mat m,
                                                          unsigned mode)
{
    long r = op == CUBLAS_OP_N ? m.rows : m.cols, k = op == CUBLAS_OP_N ? m.cols : m.rows;
    sn_call_range(c, p, sn_extent_matrix(r, k, m.ld, 4), mode);
}

static void sn_shape3(sn_call *c, int a, int b, int d)
{
    int s[3] = {a, b, d};
    sn_call_shape(c, 3, s);
}

static unsigned sn_out_mode(cublasHandle_t handle, const float *beta, int dense)
{
    if (sn_blas_beta_nonzero(handle, beta))
        return SN_READ | SN_WRITE;
    return SN_WRITE | (dense ? SN_OVERWRITE : 0);
}

/* Calls that change what libsn caches about a handle. */
#define SN_BLAS_INVALIDATING(name, params, args)                               \
    SN_EXPORT cublasStatus_t name params                                       \
    {                                                                          \
        sn_real_##name##_fn real = SN_REAL(name);                              \
        if (!real)                                                             \
            return SN_MISSING(CUBLAS, name);                                   \
        SN_SCOPE(SN_LIB_CUBLAS);                                               \
        cublasStatus_t rc = real args;                                         \
        sn_describe_invalidate();                                              \
        return rc;                                                             \
    }
SN_BLAS_INVALIDATING(cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t streamId), (handle, streamId))
SN_BLAS_INVALIDATING(cublasSetPointerMode_v2, (cublasHandle_t handle, cublasPointerMode_t mode), (handle, mode))
SN_BLAS_INVALIDATING(cublasDestroy_v2, (cublasHandle_t handle), (handle))

SN_EXPORT cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace,
                                               size_t workspaceSizeInBytes)
{
    SN_PROLOGUE(CUBLAS, cublasSetWorkspace_v2, (handle, workspace, workspaceSizeInBytes))
    cublasStatus_t rc = real(handle, workspace, workspaceSizeInBytes);
    return rc;
}

SN_EXPORT cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                                        cublasOperation_t transb, int m, int n, int k,
                                        const float *alpha, const float *A, int lda, const float *B,
                                        int ldb, const float *beta, float *C, int ldc)
{
    SN_BLAS_BEGIN(cublasSgemm_v2, SN_OP_GEMM, handle,
                  (handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))
    sn_matrix(&c, A, transa, (sn_mat){m, k, lda}, SN_READ);
    sn_matrix(&c, B, transb, (sn_mat){k, n, ldb}, SN_READ);
    sn_matrix(&c, C, CUBLAS_OP_N, (sn_mat){m, n, ldc}, sn_out_mode(handle, beta, ldc == m));
    sn_shape3(&c, m, n, k);
    c.params = sn_hash_mix(sn_hash_mix(c.params, ((uint64_t)transa << 8) | (uint64_t)transb),
                           ((uint64_t)lda << 40) ^ ((uint64_t)ldb << 20) ^ (uint64_t)ldc);
    c.flops = 2.0 * m * n * k;
    SN_BLAS_END((handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc));
}

SN_EXPORT cublasStatus_t cublasSgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const float *alpha, const float *A, int lda, long long int strideA, const float *B, int ldb,
    long long int strideB, const float *beta, float *C, int ldc, long long int strideC,
    int batchCount)
{
    SN_BLAS_BEGIN(cublasSgemmStridedBatched, SN_OP_GEMM_BATCHED, handle,
                  (handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta,
                   C, ldc, strideC, batchCount))
    if (batchCount > 0 && strideA >= 0 && strideB >= 0 && strideC >= 0) {
        long ra = transa == CUBLAS_OP_N ? m : k, ca = transa == CUBLAS_OP_N ? k : m;
        long rb = transb == CUBLAS_OP_N ? k : n, cb = transb == CUBLAS_OP_N ? n : k;
        uint64_t ea = sn_extent_matrix(ra, ca, lda, 4), eb = sn_extent_matrix(rb, cb, ldb, 4);
        uint64_t ec = sn_extent_matrix(m, n, ldc, 4);
        uint64_t last = (uint64_t)(batchCount - 1);
        if (ea)
            sn_call_range(&c, A, last * (uint64_t)strideA * 4 + ea, SN_READ);
        if (eb)
            sn_call_range(&c, B, last * (uint64_t)strideB * 4 + eb, SN_READ);
        if (ec)
            sn_call_range(&c, C, last * (uint64_t)strideC * 4 + ec,
                          sn_out_mode(handle, beta, ldc == m && strideC == (long long)m * n));
    }
    sn_shape3(&c, m, n, k);
    c.params = sn_hash_mix(c.params, (uint64_t)batchCount);
    SN_BLAS_END((handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C,
                 ldc, strideC, batchCount));
}

SN_EXPORT cublasStatus_t cublasSgemmBatched(cublasHandle_t handle, cublasOperation_t transa,
                                            cublasOperation_t transb, int m, int n, int k,
                                            const float *alpha, const float *const Aarray[], int lda,
                                            const float *const Barray[], int ldb, const float *beta,
                                            float *const Carray[], int ldc, int batchCount)
{
    SN_BLAS_BEGIN(cublasSgemmBatched, SN_OP_GEMM_BATCHED, handle,
                  (handle, transa, transb, m, n, k, alpha, Aarray, lda, Barray, ldb, beta, Carray,
                   ldc, batchCount))
    /* The matrices' addresses live in device memory: only the pointer
     * arrays themselves are visible; what they point to must stay resident. */
    c.flags |= SN_CALL_OPAQUE;
    if (batchCount > 0) {
        sn_call_range(&c, Aarray, (uint64_t)batchCount * sizeof(void *), SN_READ);
        sn_call_range(&c, Barray, (uint64_t)batchCount * sizeof(void *), SN_READ);
        sn_call_range(&c, Carray, (uint64_t)batchCount * sizeof(void *), SN_READ);
    }
    sn_shape3(&c, m, n, k);
    c.params = sn_hash_mix(c.params, (uint64_t)batchCount);
    SN_BLAS_END((handle, transa, transb, m, n, k, alpha, Aarray, lda, Barray, ldb, beta, Carray,
                 ldc, batchCount));
}

SN_EXPORT cublasStatus_t cublasSgemv_v2(cublasHandle_t handle, cublasOperation_t trans, int m,
                                        int n, const float *alpha, const float *A, int lda,
                                        const float *x, int incx, const float *beta, float *y,
                                        int incy)
{
    SN_BLAS_BEGIN(cublasSgemv_v2, SN_OP_GEMV, handle,
                  (handle, trans, m, n, alpha, A, lda, x, incx, beta, y, incy))
    long xlen = trans == CUBLAS_OP_N ? n : m, ylen = trans == CUBLAS_OP_N ? m : n;
    sn_call_range(&c, A, sn_extent_matrix(m, n, lda, 4), SN_READ);
    sn_call_range(&c, x, sn_extent_vector(xlen, incx, 4), SN_READ);
    sn_call_range(&c, y, sn_extent_vector(ylen, incy, 4),
                  sn_out_mode(handle, beta, incy == 1 || incy == -1));
    sn_shape3(&c, m, n, 1);
    c.params = sn_hash_mix(c.params, ((uint64_t)trans << 48) ^ ((uint64_t)(unsigned)incx << 24) ^
                                         (uint64_t)(unsigned)incy);
    SN_BLAS_END((handle, trans, m, n, alpha, A, lda, x, incx, beta, y, incy));
}

SN_EXPORT cublasStatus_t cublasSaxpy_v2(cublasHandle_t handle, int n, const float *alpha,
                                        const float *x, int incx, float *y, int incy)
{
    SN_BLAS_BEGIN(cublasSaxpy_v2, SN_OP_AXPY, handle, (handle, n, alpha, x, incx, y, incy))
    sn_call_range(&c, x, sn_extent_vector(n, incx, 4), SN_READ);
    sn_call_range(&c, y, sn_extent_vector(n, incy, 4), SN_READ | SN_WRITE);
    sn_shape3(&c, n, incx, incy);
    SN_BLAS_END((handle, n, alpha, x, incx, y, incy));
}

SN_EXPORT cublasStatus_t cublasSscal_v2(cublasHandle_t handle, int n, const float *alpha, float *x,
                                        int incx)
{
    SN_BLAS_BEGIN(cublasSscal_v2, SN_OP_SCAL, handle, (handle, n, alpha, x, incx))
    sn_call_range(&c, x, sn_extent_vector(n, incx, 4), SN_READ | SN_WRITE);
    sn_shape3(&c, n, incx, 1);
    SN_BLAS_END((handle, n, alpha, x, incx));
}

SN_EXPORT cublasStatus_t cublasScopy_v2(cublasHandle_t handle, int n, const float *x, int incx,
                                        float *y, int incy)
{
    SN_BLAS_BEGIN(cublasScopy_v2, SN_OP_BLAS_COPY, handle, (handle, n, x, incx, y, incy))
    sn_call_range(&c, x, sn_extent_vector(n, incx, 4), SN_READ);
    sn_call_range(&c, y, sn_extent_vector(n, incy, 4),
                  SN_WRITE | (incy == 1 || incy == -1 ? SN_OVERWRITE : 0));
    sn_shape3(&c, n, incx, incy);
    SN_BLAS_END((handle, n, x, incx, y, incy));
}

/* Reductions write one float: to the host, or to device memory in device
 * pointer mode. */
static void sn_result(sn_call *c, cublasHandle_t handle, float *result)
{
    if (sn_blas_pointer_mode(handle) == CUBLAS_POINTER_MODE_DEVICE)
        sn_call_range(c, result, sizeof(float), SN_WRITE | SN_OVERWRITE);
    else
        c->flags |= SN_CALL_HOST_SYNC;
}

SN_EXPORT cublasStatus_t cublasSdot_v2(cublasHandle_t handle, int n, const float *x, int incx,
                                       const float *y, int incy, float *result)
{
    SN_BLAS_BEGIN(cublasSdot_v2, SN_OP_DOT, handle, (handle, n, x, incx, y, incy, result))
    sn_call_range(&c, x, sn_extent_vector(n, incx, 4), SN_READ);
    sn_call_range(&c, y, sn_extent_vector(n, incy, 4), SN_READ);
    sn_result(&c, handle, result);
    sn_shape3(&c, n, incx, incy);
    SN_BLAS_END((handle, n, x, incx, y, incy, result));
}

SN_EXPORT cublasStatus_t cublasSasum_v2(cublasHandle_t handle, int n, const float *x, int incx,
                                        float *result)
{
    SN_BLAS_BEGIN(cublasSasum_v2, SN_OP_ASUM, handle, (handle, n, x, incx, result))
    sn_call_range(&c, x, sn_extent_vector(n, incx, 4), SN_READ);
    sn_result(&c, handle, result);
    sn_shape3(&c, n, incx, 1);
    SN_BLAS_END((handle, n, x, incx, result));
}

SN_EXPORT cublasStatus_t cublasSnrm2_v2(cublasHandle_t handle, int n, const float *x, int incx,
                                        float *result)
{
    SN_BLAS_BEGIN(cublasSnrm2_v2, SN_OP_NRM2, handle, (handle, n, x, incx, result))
    sn_call_range(&c, x, sn_extent_vector(n, incx, 4), SN_READ);
    sn_result(&c, handle, result);
    sn_shape3(&c, n, incx, 1);
    SN_BLAS_END((handle, n, x, incx, result));
}

SN_EXPORT cublasStatus_t cublasSgeam(cublasHandle_t handle, cublasOperation_t transa,
                                     cublasOperation_t transb, int m, int n, const float *alpha,
                                     const float *A, int lda, const float *beta, const float *B,
                                     int ldb, float *C, int ldc)
{
    SN_BLAS_BEGIN(cublasSgeam, SN_OP_GEAM, handle,
                  (handle, transa, transb, m, n, alpha, A, lda, beta, B, ldb, C, ldc))
    /* C = alpha op(A) + beta op(B): an operand scaled by zero is not read. */
    if (sn_blas_beta_nonzero(handle, alpha))
        sn_matrix(&c, A, transa, (sn_mat){m, n, lda}, SN_READ);
    if (sn_blas_beta_nonzero(handle, beta))
        sn_matrix(&c, B, transb, (sn_mat){m, n, ldb}, SN_READ);
    int in_place = (const float *)C == A || (const float *)C == B;
    sn_matrix(&c, C, CUBLAS_OP_N, (sn_mat){m, n, ldc},
              SN_WRITE | (in_place ? SN_READ : (ldc == m ? SN_OVERWRITE : 0)));
    sn_shape3(&c, m, n, 1);
    c.params = sn_hash_mix(c.params, ((uint64_t)transa << 8) | (uint64_t)transb);
    SN_BLAS_END((handle, transa, transb, m, n, alpha, A, lda, beta, B, ldb, C, ldc));
}

/* The memory cuBLAS allocates while creating a handle (its default
 * workspace) is the handle's. */
SN_EXPORT cublasStatus_t cublasCreate_v2(cublasHandle_t *handle)
{
    SN_PROLOGUE(CUBLAS, cublasCreate_v2, (handle))
    sn_core_lib_scope_begin(sn_current_device(), NULL);
    cublasStatus_t rc = real(handle);
    sn_core_lib_scope_end(rc == CUBLAS_STATUS_SUCCESS && handle ? (void *)*handle : NULL);
    return rc;
}
