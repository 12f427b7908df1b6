/*
 * cublas_level3.c — single-precision matrix routines of the simulated
 * cuBLAS: Sgemv, Sgemm, SgemmStridedBatched and Sgeam, column-major as in
 * cuBLAS, computed with OpenBLAS.
 *
 * The argument checks are the ones the cuBLAS documentation lists for each
 * routine (negative sizes, unknown operations, leading dimensions below
 * max(1, rows), NULL scalars, zero strides, illegal in-place geam) and
 * answer CUBLAS_STATUS_INVALID_VALUE. Operands are checked over their exact
 * extent, and only when the routine references them: A and B are not read
 * when alpha == 0 or k == 0, and C (y) is write-only when beta == 0, so NaN
 * or stale bytes there never reach the result — the property libsn relies
 * on to treat such outputs as dead before the call.
 */
#include "sim/cublas/cublas_internal.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

static int op_ok(cublasOperation_t op)
{
    return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

/* For real data, the conjugate transpose is the transpose. */
static enum CBLAS_TRANSPOSE to_cblas(cublasOperation_t op)
{
    return op == CUBLAS_OP_N ? CblasNoTrans : CblasTrans;
}

static int64_t max1(int64_t v) { return v > 1 ? v : 1; }

/* Diagnostic names of one routine's operands. The simulated device keeps
 * them until the op is charged, so they are string literals. */
struct operand_names {
    const char *routine, *alpha, *beta, *a, *b, *c, *workspace;
};

static const struct operand_names k_sgemv = {"cublasSgemv_v2", "cublasSgemv_v2 alpha", "cublasSgemv_v2 beta",
                                             "cublasSgemv_v2 A", "cublasSgemv_v2 x", "cublasSgemv_v2 y", NULL};
static const struct operand_names k_sgemm = {"cublasSgemm_v2", "cublasSgemm_v2 alpha", "cublasSgemm_v2 beta",
                                             "cublasSgemm_v2 A", "cublasSgemm_v2 B", "cublasSgemm_v2 C",
                                             "cublasSgemm_v2 workspace"};
static const struct operand_names k_sgemm_strided = {
    "cublasSgemmStridedBatched",   "cublasSgemmStridedBatched alpha", "cublasSgemmStridedBatched beta",
    "cublasSgemmStridedBatched A", "cublasSgemmStridedBatched B",     "cublasSgemmStridedBatched C",
    "cublasSgemmStridedBatched workspace"};
static const struct operand_names k_sgeam = {"cublasSgeam", "cublasSgeam alpha", "cublasSgeam beta", "cublasSgeam A",
                                             "cublasSgeam B", "cublasSgeam C", NULL};

static void check_matrix(const float *p, int64_t rows, int64_t cols, int64_t ld, int write, const char *what)
{
    simgpu_check_range(p, simblas_matrix_bytes(rows, cols, ld), write, what);
}

/* C (m x n, ldc) *= s, where s == 0 clears C without reading it. */
static void scale_matrix(float *c, int m, int n, int ldc, float s)
{
    if (s == 1.0f)
        return;
    for (int j = 0; j < n; j++) {
        float *col = c + (size_t)j * (size_t)ldc;
        if (s == 0.0f)
            memset(col, 0, (size_t)m * sizeof(float));
        else
            cblas_sscal(m, s, col, 1);
    }
}

/* C (m x n) += s * op(X); X is m x n, or n x m when transposed. */
static int add_scaled_op(float *c, int m, int n, int ldc, float s, cublasOperation_t op, const float *x,
                         int ldx)
{
    if (op == CUBLAS_OP_N) {
        cblas_sgeadd(CblasColMajor, m, n, s, (float *)x, ldx, 1.0f, c, ldc);
        return 0;
    }
    float *t = malloc((size_t)m * (size_t)n * sizeof(float));
    if (!t)
        return -1;
    cblas_somatcopy(CblasColMajor, CblasTrans, n, m, s, x, ldx, t, m);
    cblas_sgeadd(CblasColMajor, m, n, 1.0f, t, m, 1.0f, c, ldc);
    free(t);
    return 0;
}

static cublasStatus_t read_alpha_beta(cublasHandle_t h, const struct operand_names *names, const float *alpha,
                                      const float *beta, struct simblas_scalar *a, struct simblas_scalar *b)
{
    cublasStatus_t st = simblas_read_scalar(h, alpha, names->alpha, a);
    return st != CUBLAS_STATUS_SUCCESS ? st : simblas_read_scalar(h, beta, names->beta, b);
}

/* ---- gemv ---------------------------------------------------------------- */

cublasStatus_t cublasSgemv_v2(cublasHandle_t handle, cublasOperation_t trans, int m, int n, const float *alpha,
                              const float *A, int lda, const float *x, int incx, const float *beta, float *y,
                              int incy)
{
    const struct operand_names *names = &k_sgemv;
    cublasStatus_t work = simblas_check_work(handle);
    if (work != CUBLAS_STATUS_SUCCESS)
        return work;
    if (!op_ok(trans) || m < 0 || n < 0 || lda < max1(m) || incx == 0 || incy == 0 || !alpha || !beta)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0)
        return CUBLAS_STATUS_SUCCESS;
    struct simblas_scalar a, b;
    cublasStatus_t st = read_alpha_beta(handle, names, alpha, beta, &a, &b);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if (simblas_scalar_is(&a, 0.0f) && simblas_scalar_is(&b, 1.0f))
        return CUBLAS_STATUS_SUCCESS;
    if ((st = simblas_stream_ok(handle)) != CUBLAS_STATUS_SUCCESS)
        return st;
    int lenx = trans == CUBLAS_OP_N ? n : m;
    int leny = trans == CUBLAS_OP_N ? m : n;
    int reads_ax = !simblas_scalar_is(&a, 0.0f);
    int reads_y = !simblas_scalar_is(&b, 0.0f);
    if (reads_ax) {
        check_matrix(A, m, n, lda, 0, names->a);
        simgpu_check_range(x, simblas_vector_bytes(lenx, incx), 0, names->b);
    }
    simgpu_check_range(y, simblas_vector_bytes(leny, incy), 1, names->c);

    if (simgpu_compute_enabled()) {
        int step = incy < 0 ? -incy : incy;
        if (!reads_y)
            for (int i = 0; i < leny; i++)
                y[(size_t)i * (size_t)step] = 0.0f;
        if (reads_ax)
            cblas_sgemv(CblasColMajor, to_cblas(trans), m, n, a.value, A, lda, x, incx,
                        reads_y ? b.value : 0.0f, y, incy);
        else if (reads_y && b.value != 1.0f)
            cblas_sscal(leny, b.value, y, step);
    }

    double bytes = simblas_vector_traffic(leny, incy) * (reads_y ? 2 : 1);
    if (reads_ax)
        bytes += (double)m * n * sizeof(float) + simblas_vector_traffic(lenx, incx);
    simgpu_enqueue((CUstream)handle->stream, SIMGPU_COMPUTE,
                   simblas_stream_ns(handle->stream, bytes, reads_ax ? 2.0 * m * n : 0), names->routine);
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- gemm ---------------------------------------------------------------- */

static cublasStatus_t gemm_args_ok(cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                                   const float *alpha, int lda, int ldb, const float *beta, int ldc)
{
    if (!op_ok(transa) || !op_ok(transb) || m < 0 || n < 0 || k < 0 || !alpha || !beta)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (lda < max1(transa == CUBLAS_OP_N ? m : k) || ldb < max1(transb == CUBLAS_OP_N ? k : n) ||
        ldc < max1(m))
        return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

/* Sgemm is the batch of one; strides are in elements. */
static cublasStatus_t gemm_batch(cublasHandle_t handle, const struct operand_names *names, cublasOperation_t transa,
                                 cublasOperation_t transb, int m, int n, int k, const float *alpha, const float *A,
                                 int lda, long long strideA, const float *B, int ldb, long long strideB,
                                 const float *beta, float *C, int ldc, long long strideC, int batch)
{
    if (m == 0 || n == 0 || batch == 0)
        return CUBLAS_STATUS_SUCCESS;
    struct simblas_scalar a, b;
    cublasStatus_t st = read_alpha_beta(handle, names, alpha, beta, &a, &b);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if ((st = simblas_stream_ok(handle)) != CUBLAS_STATUS_SUCCESS)
        return st;
    int reads_ab = k > 0 && !simblas_scalar_is(&a, 0.0f);
    int reads_c = !simblas_scalar_is(&b, 0.0f);
    int64_t rows_a = transa == CUBLAS_OP_N ? m : k, cols_a = transa == CUBLAS_OP_N ? k : m;
    int64_t rows_b = transb == CUBLAS_OP_N ? k : n, cols_b = transb == CUBLAS_OP_N ? n : k;

    for (int i = 0; i < batch; i++) {
        if (reads_ab) {
            check_matrix(A + i * strideA, rows_a, cols_a, lda, 0, names->a);
            check_matrix(B + i * strideB, rows_b, cols_b, ldb, 0, names->b);
        }
        check_matrix(C + i * strideC, m, n, ldc, 1, names->c);
    }
    simblas_check_workspace(handle, names->workspace);

    if (simgpu_compute_enabled()) {
        for (int i = 0; i < batch; i++) {
            float *c = C + i * strideC;
            if (!reads_c)
                scale_matrix(c, m, n, ldc, 0.0f);
            if (reads_ab)
                cblas_sgemm(CblasColMajor, to_cblas(transa), to_cblas(transb), m, n, k, a.value, A + i * strideA,
                            lda, B + i * strideB, ldb, reads_c ? b.value : 0.0f, c, ldc);
            else if (reads_c)
                scale_matrix(c, m, n, ldc, b.value);
        }
    }

    double per = (double)m * n * (reads_c ? 2 : 1);
    if (reads_ab)
        per += (double)m * k + (double)k * n;
    double ns = simblas_gemm_ns(handle->stream, m, n, reads_ab ? k : 0, batch, per * batch * sizeof(float),
                                simblas_tf32(handle->math_mode));
    simgpu_enqueue((CUstream)handle->stream, SIMGPU_COMPUTE, ns, names->routine);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                              int n, int k, const float *alpha, const float *A, int lda, const float *B, int ldb,
                              const float *beta, float *C, int ldc)
{
    cublasStatus_t work = simblas_check_work(handle);
    if (work != CUBLAS_STATUS_SUCCESS)
        return work;
    cublasStatus_t st = gemm_args_ok(transa, transb, m, n, k, alpha, lda, ldb, beta, ldc);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    return gemm_batch(handle, &k_sgemm, transa, transb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C,
                      ldc, 0, 1);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k, const float *alpha,
                                         const float *A, int lda, long long int strideA, const float *B, int ldb,
                                         long long int strideB, const float *beta, float *C, int ldc,
                                         long long int strideC, int batchCount)
{
    cublasStatus_t work = simblas_check_work(handle);
    if (work != CUBLAS_STATUS_SUCCESS)
        return work;
    cublasStatus_t st = gemm_args_ok(transa, transb, m, n, k, alpha, lda, ldb, beta, ldc);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if (batchCount < 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    return gemm_batch(handle, &k_sgemm_strided, transa, transb, m, n, k, alpha, A, lda, strideA, B,
                      ldb, strideB, beta, C, ldc, strideC, batchCount);
}

/* ---- geam ---------------------------------------------------------------- */

cublasStatus_t cublasSgeam(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                           const float *alpha, const float *A, int lda, const float *beta, const float *B, int ldb,
                           float *C, int ldc)
{
    const struct operand_names *names = &k_sgeam;
    cublasStatus_t work = simblas_check_work(handle);
    if (work != CUBLAS_STATUS_SUCCESS)
        return work;
    if (!op_ok(transa) || !op_ok(transb) || m < 0 || n < 0 || !alpha || !beta)
        return CUBLAS_STATUS_INVALID_VALUE;
    int64_t rows_a = transa == CUBLAS_OP_N ? m : n, cols_a = transa == CUBLAS_OP_N ? n : m;
    int64_t rows_b = transb == CUBLAS_OP_N ? m : n, cols_b = transb == CUBLAS_OP_N ? n : m;
    if (lda < max1(rows_a) || ldb < max1(rows_b) || ldc < max1(m))
        return CUBLAS_STATUS_INVALID_VALUE;
    /* Documented in-place forms: C = A needs transa == N and ldc == lda,
     * likewise for B. */
    if (C && C == A && (transa != CUBLAS_OP_N || lda != ldc))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (C && C == B && (transb != CUBLAS_OP_N || ldb != ldc))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0)
        return CUBLAS_STATUS_SUCCESS;
    struct simblas_scalar a, b;
    cublasStatus_t st = read_alpha_beta(handle, names, alpha, beta, &a, &b);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if ((st = simblas_stream_ok(handle)) != CUBLAS_STATUS_SUCCESS)
        return st;
    int reads_a = !simblas_scalar_is(&a, 0.0f);
    int reads_b = !simblas_scalar_is(&b, 0.0f);
    /* In place, the operand is C itself, whose read-write check covers it. */
    if (reads_a && A != C)
        check_matrix(A, rows_a, cols_a, lda, 0, names->a);
    if (reads_b && B != C)
        check_matrix(B, rows_b, cols_b, ldb, 0, names->b);
    check_matrix(C, m, n, ldc, 1, names->c);

    if (simgpu_compute_enabled()) {
        int failed = 0;
        if (C == B) {
            scale_matrix(C, m, n, ldc, reads_b ? b.value : 0.0f);
            if (reads_a)
                failed |= add_scaled_op(C, m, n, ldc, a.value, transa, A, lda);
        } else if (C == A) {
            scale_matrix(C, m, n, ldc, reads_a ? a.value : 0.0f);
            if (reads_b)
                failed |= add_scaled_op(C, m, n, ldc, b.value, transb, B, ldb);
        } else {
            scale_matrix(C, m, n, ldc, 0.0f);
            if (reads_a)
                failed |= add_scaled_op(C, m, n, ldc, a.value, transa, A, lda);
            if (reads_b)
                failed |= add_scaled_op(C, m, n, ldc, b.value, transb, B, ldb);
        }
        if (failed)
            return CUBLAS_STATUS_ALLOC_FAILED;
    }

    double bytes = (double)m * n * sizeof(float) * (1 + reads_a + reads_b);
    simgpu_enqueue((CUstream)handle->stream, SIMGPU_COMPUTE,
                   simblas_stream_ns(handle->stream, bytes, 3.0 * m * n), names->routine);
    return CUBLAS_STATUS_SUCCESS;
}
