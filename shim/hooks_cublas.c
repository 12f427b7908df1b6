/*
 * hooks_cublas.c — wrappers of the cuBLAS _v2 calls and of the GEMMs
 * frameworks use (the *Ex, batched and _64 forms). Matrices are
 * column-major: op(A) is rows x cols, stored with leading dimension lda, so
 * A spans lda * (stored cols - 1) + stored rows elements, of the size its
 * cudaDataType gives. An output scaled by a non-zero beta (or by a beta
 * cuBLAS reads from device memory) is read as well as written.
 */
#include "common/sn_lock.h"
#include "shim/sn_describe.h"
#include "shim/sn_wrap.h"

/* Whether a cuBLAS call of kind op may use the handle's default workspace:
 * the GEMM family may (split-K and the like, whenever the library likes),
 * and so may what reduces (partial sums) or multiplies a matrix by a
 * vector, which the library does not document either way; axpy, scal and
 * copy map each element on its own and need nothing beside their vectors.
 * A weight decay's axpy then needs its two vectors resident, not the
 * handle's 4 MiB too. */
static inline int sn_blas_uses_handle_memory(int op)
{
    return op != SN_OP_AXPY && op != SN_OP_SCAL && op != SN_OP_BLAS_COPY;
}

#define SN_BLAS_BEGIN(name, op, handle, args)                                  \
    SN_PROLOGUE(CUBLAS, name, args)                                            \
    SN_CALL_DECL(c);                                                           \
    sn_call_init(&c, SN_HOOK_ID_##name, (op), sn_current_device(), sn_blas_stream(handle)); \
    c.lib_handle = (void *)(handle);                                           \
    c.lib_memory = sn_blas_uses_handle_memory(op);

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

/* ---- workspaces given with cublasSetWorkspace ------------------------------------ */

/* GEMM-family kernels may use the handle's workspace on any call (the
 * library does not say when; split-K is one use), so each GEMM describes
 * the workspace in use as scratch: a user's buffer that libsn evicted would
 * be an illegal address. The default workspace is the handle's own memory
 * (sn_core_lib_scope), resident with the handle. cuBLAS has no getter, so
 * libsn keeps what the handle was told: cublasSetWorkspace sets it,
 * cublasSetStream (documented to return the handle to its default
 * workspace) and cublasDestroy drop it. */
#define SN_BLAS_WS_MAX 64
static struct {
    const void *handle;
    void *ws;
    size_t bytes;
} sn_blas_ws_tab[SN_BLAS_WS_MAX];
static int sn_blas_ws_n;        /* entries in use; read without the lock as the fast path */
static int sn_blas_ws_overflow; /* a handle's workspace could not be recorded */
static sn_lock sn_blas_ws_lock = SN_LOCK_INITIALIZER(SN_RANK_HANDLES);

static void sn_blas_ws_set(const void *handle, void *ws, size_t bytes)
{
    sn_lock_take(&sn_blas_ws_lock);
    int n = sn_blas_ws_n, i = 0;
    while (i < n && sn_blas_ws_tab[i].handle != handle)
        i++;
    if (ws && bytes) {
        if (i == n && n == SN_BLAS_WS_MAX)
            __atomic_store_n(&sn_blas_ws_overflow, 1, __ATOMIC_RELEASE);
        else {
            sn_blas_ws_tab[i].handle = handle, sn_blas_ws_tab[i].ws = ws, sn_blas_ws_tab[i].bytes = bytes;
            if (i == n)
                n++;
        }
    } else if (i < n) {
        sn_blas_ws_tab[i] = sn_blas_ws_tab[--n];
    }
    __atomic_store_n(&sn_blas_ws_n, n, __ATOMIC_RELEASE);
    sn_lock_give(&sn_blas_ws_lock);
}

/* The handle's user workspace, as scratch the call may write. */
static void sn_blas_workspace(sn_call *c, cublasHandle_t handle)
{
    if (__builtin_expect(!__atomic_load_n(&sn_blas_ws_n, __ATOMIC_ACQUIRE), 1)) {
        if (__builtin_expect(__atomic_load_n(&sn_blas_ws_overflow, __ATOMIC_ACQUIRE), 0))
            c->flags |= SN_CALL_OPAQUE;
        return;
    }
    void *ws = NULL;
    size_t bytes = 0;
    sn_lock_take(&sn_blas_ws_lock);
    for (int i = 0; i < sn_blas_ws_n; i++)
        if (sn_blas_ws_tab[i].handle == (const void *)handle) {
            ws = sn_blas_ws_tab[i].ws, bytes = sn_blas_ws_tab[i].bytes;
            break;
        }
    sn_lock_give(&sn_blas_ws_lock);
    if (ws)
        sn_call_range(c, ws, bytes, SN_READ | SN_WRITE | SN_SCRATCH);
    else if (__atomic_load_n(&sn_blas_ws_overflow, __ATOMIC_ACQUIRE))
        c->flags |= SN_CALL_OPAQUE; /* its workspace may be one libsn could not record */
}

/* Calls that change what libsn caches about a handle; after runs when the
 * real call succeeded. */
#define SN_BLAS_INVALIDATING(name, params, args, after)                        \
    SN_EXPORT cublasStatus_t name params                                       \
    {                                                                          \
        sn_real_##name##_fn real = SN_REAL(name);                              \
        if (!real)                                                             \
            return SN_MISSING(CUBLAS, name);                                   \
        SN_SCOPE(SN_LIB_CUBLAS);                                               \
        cublasStatus_t rc = real args;                                         \
        sn_describe_invalidate();                                              \
        if (rc == CUBLAS_STATUS_SUCCESS)                                       \
            after;                                                             \
        return rc;                                                             \
    }
SN_BLAS_INVALIDATING(cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t streamId), (handle, streamId),
                     sn_blas_ws_set(handle, NULL, 0))
SN_BLAS_INVALIDATING(cublasSetPointerMode_v2, (cublasHandle_t handle, cublasPointerMode_t mode), (handle, mode),
                     (void)0)
SN_BLAS_INVALIDATING(cublasDestroy_v2, (cublasHandle_t handle), (handle), sn_blas_ws_set(handle, NULL, 0))

/* Recorded even when the call comes from inside another library's call
 * (the handle keeps the workspace after it returns); not when libsn is
 * off. */
SN_EXPORT cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace,
                                               size_t workspaceSizeInBytes)
{
    sn_real_cublasSetWorkspace_v2_fn real = SN_REAL(cublasSetWorkspace_v2);
    if (!real)
        return SN_MISSING(CUBLAS, cublasSetWorkspace_v2);
    SN_SCOPE(SN_LIB_CUBLAS);
    cublasStatus_t rc = real(handle, workspace, workspaceSizeInBytes);
    if (rc == CUBLAS_STATUS_SUCCESS && (sn_scope_.entered || (sn_ready() && sn_active)))
        sn_blas_ws_set(handle, workspace, workspaceSizeInBytes);
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
    sn_blas_workspace(&c, handle);
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
    } else if (batchCount > 0) {
        c.flags |= SN_CALL_OPAQUE; /* a negative stride: the span is not bounded here */
    }
    sn_shape3(&c, m, n, k);
    c.params = sn_hash_mix(c.params, (uint64_t)batchCount);
    sn_blas_workspace(&c, handle);
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
    /* The matrices' addresses live in device memory (sn_gemm_pointer_arrays) */
    if (batchCount > 0) {
        sn_call_range(&c, Aarray, (uint64_t)batchCount * sizeof(void *), SN_READ);
        sn_call_range(&c, Barray, (uint64_t)batchCount * sizeof(void *), SN_READ);
        sn_call_range(&c, Carray, (uint64_t)batchCount * sizeof(void *), SN_READ);
        if (sn_core_describe_stored(&c, Aarray, SN_READ) != 0 || sn_core_describe_stored(&c, Barray, SN_READ) != 0 ||
            sn_core_describe_stored(&c, Carray, SN_READ | SN_WRITE) != 0)
            c.flags |= SN_CALL_OPAQUE;
    }
    sn_shape3(&c, m, n, k);
    c.params = sn_hash_mix(c.params, (uint64_t)batchCount);
    sn_blas_workspace(&c, handle);
    SN_BLAS_END((handle, transa, transb, m, n, k, alpha, Aarray, lda, Barray, ldb, beta, Carray,
                 ldc, batchCount));
}

/* ---- mixed-type, 64-bit and pointer-array GEMMs ----------------------------------- */

/* Bytes of one element of a cuBLAS matrix type; 0 for a type libsn does
 * not know (the call is then opaque rather than described short). */
static unsigned sn_blas_type_bytes(cudaDataType t)
{
    switch (t) {
    case CUDA_R_8I: case CUDA_R_8U: case CUDA_R_8F_E4M3: case CUDA_R_8F_E5M2: return 1;
    case CUDA_R_16F: case CUDA_R_16BF: case CUDA_C_8I: case CUDA_C_8U: return 2;
    case CUDA_R_32F: case CUDA_R_32I: case CUDA_R_32U: case CUDA_C_16F: case CUDA_C_16BF: return 4;
    case CUDA_R_64F: case CUDA_C_32F: case CUDA_C_32I: case CUDA_C_32U: return 8;
    case CUDA_C_64F: return 16;
    default: return 0;
    }
}

/* Whether *beta may be non-zero; its type is the compute type's scale type
 * (cublasGemmEx documentation). */
static int sn_blas_scale_nonzero(cublasHandle_t handle, const void *beta, cublasComputeType_t ct)
{
    if (!beta || sn_blas_pointer_mode(handle) != CUBLAS_POINTER_MODE_HOST)
        return 1;
    switch (ct) {
    case CUBLAS_COMPUTE_16F: case CUBLAS_COMPUTE_16F_PEDANTIC:
        return (*(const uint16_t *)beta & 0x7fff) != 0;
    case CUBLAS_COMPUTE_64F: case CUBLAS_COMPUTE_64F_PEDANTIC: case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT:
        return *(const double *)beta != 0.0;
    case CUBLAS_COMPUTE_32I: case CUBLAS_COMPUTE_32I_PEDANTIC:
        return *(const int32_t *)beta != 0;
    default:
        return *(const float *)beta != 0.0f;
    }
}

/* One operand of a batch of GEMMs: base, element bytes, op(X) as rows x
 * cols, leading dimension and stride between entries, in elements. */
typedef struct sn_gemm_operand {
    const void *p;
    unsigned elem;
    int64_t rows, cols, ld;
    long long stride;
} sn_gemm_operand;

/* The whole strided span of one operand over the batch. Negative sizes
 * make the call fail untouched; a negative stride or an unknown element
 * type leaves libsn unable to bound it: opaque. */
static void sn_gemm_span(sn_call *c, const sn_gemm_operand *o, cublasOperation_t op, int64_t batch, unsigned mode)
{
    if (batch <= 0 || o->rows < 0 || o->cols < 0)
        return;
    if (!o->elem || o->stride < 0) {
        c->flags |= SN_CALL_OPAQUE;
        return;
    }
    int64_t r = op == CUBLAS_OP_N ? o->rows : o->cols, k = op == CUBLAS_OP_N ? o->cols : o->rows;
    uint64_t e = sn_extent_matrix(r, k, o->ld, o->elem);
    if (e)
        sn_call_range(c, o->p, (uint64_t)(batch - 1) * (uint64_t)o->stride * o->elem + e, mode);
}

/* A batch of GEMMs as the wrappers see it; a pointer-array batch has its
 * arrays in a.p, b.p and c.p. */
typedef struct sn_gemm {
    cublasOperation_t transa, transb;
    int64_t m, n, k, batch;
    sn_gemm_operand a, b, c;
} sn_gemm;

/* A, B read; C read unless beta is zero, then overwritten where the batch
 * of outputs is dense. */
static void sn_gemm_describe(sn_call *c, const sn_gemm *g, int beta_nonzero)
{
    sn_gemm_span(c, &g->a, g->transa, g->batch, SN_READ);
    sn_gemm_span(c, &g->b, g->transb, g->batch, SN_READ);
    int dense = g->c.ld == g->m && (g->batch <= 1 || g->c.stride == g->m * g->n);
    sn_gemm_span(c, &g->c, CUBLAS_OP_N, g->batch,
                 beta_nonzero ? SN_READ | SN_WRITE : SN_WRITE | (dense ? SN_OVERWRITE : 0));
    sn_shape3(c, (int)g->m, (int)g->n, (int)g->k);
    c->params = sn_hash_mix(sn_hash_mix(sn_hash_mix(c->params, ((uint64_t)g->transa << 8) | (uint64_t)g->transb),
                                        ((uint64_t)g->a.ld << 40) ^ ((uint64_t)g->b.ld << 20) ^ (uint64_t)g->c.ld),
                            (uint64_t)g->batch);
    c->flops = 2.0 * (double)g->m * (double)g->n * (double)g->k * (double)(g->batch > 0 ? g->batch : 0);
}

/* Pointer-array batches: the matrices' addresses are in device memory.
 * The arrays are read; the matrices are those the addresses libsn saw
 * copied into the arrays point to (A's and B's read, C's read and
 * written: whole allocations); when the arrays were filled on the device,
 * the call is opaque (everything resident before it, everything dirty
 * after). */
static void sn_gemm_pointer_arrays(sn_call *c, const sn_gemm *g)
{
    if (g->batch > 0) {
        sn_call_range(c, g->a.p, (uint64_t)g->batch * sizeof(void *), SN_READ);
        sn_call_range(c, g->b.p, (uint64_t)g->batch * sizeof(void *), SN_READ);
        sn_call_range(c, g->c.p, (uint64_t)g->batch * sizeof(void *), SN_READ);
        if (sn_core_describe_stored(c, g->a.p, SN_READ) != 0 || sn_core_describe_stored(c, g->b.p, SN_READ) != 0 ||
            sn_core_describe_stored(c, g->c.p, SN_READ | SN_WRITE) != 0)
            c->flags |= SN_CALL_OPAQUE;
    }
    sn_shape3(c, (int)g->m, (int)g->n, (int)g->k);
    c->params = sn_hash_mix(c->params, (uint64_t)g->batch);
    c->flops = 2.0 * (double)g->m * (double)g->n * (double)g->k * (double)(g->batch > 0 ? g->batch : 0);
}

#define SN_OPND(ptr, type, r, cl, ld_, str) \
    (sn_gemm_operand) { (ptr), (type), (r), (cl), (ld_), (str) }

/* The batch a wrapper's own parameters name: op(A) m x k, op(B) k x n, C
 * m x n, with element sizes ea, eb, ec and strides sa, sb, sc. */
#define SN_GEMM_OF(ea, eb, ec, sa, sb, sc, batch_)                                                        \
    (&(sn_gemm){transa, transb, m, n, k, (batch_), SN_OPND(A, (ea), m, k, lda, (sa)),                     \
                SN_OPND(B, (eb), k, n, ldb, (sb)), SN_OPND(C, (ec), m, n, ldc, (sc))})
#define SN_GEMM_EX_OF(sa, sb, sc, batch_)                                                                  \
    SN_GEMM_OF(sn_blas_type_bytes(Atype), sn_blas_type_bytes(Btype), sn_blas_type_bytes(Ctype), sa, sb, sc, batch_)
/* A pointer-array batch: the arrays stand for the operands. */
#define SN_GEMM_ARRAYS                                                                                    \
    (&(sn_gemm){.m = m, .n = n, .k = k, .batch = batchCount, .a.p = Aarray, .b.p = Barray, .c.p = Carray})

SN_EXPORT cublasStatus_t cublasSgemm_v2_64(cublasHandle_t handle, cublasOperation_t transa,
                                           cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                           const float *alpha, const float *A, int64_t lda, const float *B,
                                           int64_t ldb, const float *beta, float *C, int64_t ldc)
{
    SN_BLAS_BEGIN(cublasSgemm_v2_64, SN_OP_GEMM, handle,
                  (handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))
    sn_gemm_describe(&c, SN_GEMM_OF(4, 4, 4, 0, 0, 0, 1), sn_blas_beta_nonzero(handle, beta));
    sn_blas_workspace(&c, handle);
    SN_BLAS_END((handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc));
}

SN_EXPORT cublasStatus_t cublasSgemmStridedBatched_64(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
    const float *alpha, const float *A, int64_t lda, long long int strideA, const float *B, int64_t ldb,
    long long int strideB, const float *beta, float *C, int64_t ldc, long long int strideC, int64_t batchCount)
{
    SN_BLAS_BEGIN(cublasSgemmStridedBatched_64, SN_OP_GEMM_BATCHED, handle,
                  (handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc,
                   strideC, batchCount))
    sn_gemm_describe(&c, SN_GEMM_OF(4, 4, 4, strideA, strideB, strideC, batchCount),
                     sn_blas_beta_nonzero(handle, beta));
    sn_blas_workspace(&c, handle);
    SN_BLAS_END((handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc,
                 strideC, batchCount));
}

SN_EXPORT cublasStatus_t cublasSgemmBatched_64(cublasHandle_t handle, cublasOperation_t transa,
                                               cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                               const float *alpha, const float *const Aarray[], int64_t lda,
                                               const float *const Barray[], int64_t ldb, const float *beta,
                                               float *const Carray[], int64_t ldc, int64_t batchCount)
{
    SN_BLAS_BEGIN(cublasSgemmBatched_64, SN_OP_GEMM_BATCHED, handle,
                  (handle, transa, transb, m, n, k, alpha, Aarray, lda, Barray, ldb, beta, Carray, ldc,
                   batchCount))
    sn_gemm_pointer_arrays(&c, SN_GEMM_ARRAYS);
    sn_blas_workspace(&c, handle);
    SN_BLAS_END((handle, transa, transb, m, n, k, alpha, Aarray, lda, Barray, ldb, beta, Carray, ldc,
                 batchCount));
}

SN_EXPORT cublasStatus_t cublasDgemmBatched(cublasHandle_t handle, cublasOperation_t transa,
                                            cublasOperation_t transb, int m, int n, int k, const double *alpha,
                                            const double *const Aarray[], int lda, const double *const Barray[],
                                            int ldb, const double *beta, double *const Carray[], int ldc,
                                            int batchCount)
{
    SN_BLAS_BEGIN(cublasDgemmBatched, SN_OP_GEMM_BATCHED, handle,
                  (handle, transa, transb, m, n, k, alpha, Aarray, lda, Barray, ldb, beta, Carray, ldc,
                   batchCount))
    sn_gemm_pointer_arrays(&c, SN_GEMM_ARRAYS);
    sn_blas_workspace(&c, handle);
    SN_BLAS_END((handle, transa, transb, m, n, k, alpha, Aarray, lda, Barray, ldb, beta, Carray, ldc,
                 batchCount));
}

SN_EXPORT cublasStatus_t cublasSgemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                       int m, int n, int k, const float *alpha, const void *A, cudaDataType Atype,
                                       int lda, const void *B, cudaDataType Btype, int ldb, const float *beta,
                                       void *C, cudaDataType Ctype, int ldc)
{
    SN_BLAS_BEGIN(cublasSgemmEx, SN_OP_GEMM, handle,
                  (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc))
    sn_gemm_describe(&c, SN_GEMM_EX_OF(0, 0, 0, 1), sn_blas_beta_nonzero(handle, beta));
    c.params = sn_hash_mix(c.params, (uint64_t)Atype << 32 ^ (uint64_t)Btype << 16 ^ (uint64_t)Ctype);
    sn_blas_workspace(&c, handle);
    SN_BLAS_END((handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc));
}

SN_EXPORT cublasStatus_t cublasSgemmEx_64(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                          const float *alpha, const void *A, cudaDataType Atype, int64_t lda,
                                          const void *B, cudaDataType Btype, int64_t ldb, const float *beta,
                                          void *C, cudaDataType Ctype, int64_t ldc)
{
    SN_BLAS_BEGIN(cublasSgemmEx_64, SN_OP_GEMM, handle,
                  (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc))
    sn_gemm_describe(&c, SN_GEMM_EX_OF(0, 0, 0, 1), sn_blas_beta_nonzero(handle, beta));
    c.params = sn_hash_mix(c.params, (uint64_t)Atype << 32 ^ (uint64_t)Btype << 16 ^ (uint64_t)Ctype);
    sn_blas_workspace(&c, handle);
    SN_BLAS_END((handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc));
}

/* The types, compute type and algorithm of a cublasGemm*Ex call. */
static uint64_t sn_gemm_ex_params(cudaDataType at, cudaDataType bt, cudaDataType ct, cublasComputeType_t comp,
                                  cublasGemmAlgo_t algo)
{
    return (uint64_t)at << 48 ^ (uint64_t)bt << 32 ^ (uint64_t)ct << 16 ^ (uint64_t)comp << 8 ^
           (uint64_t)(uint32_t)algo;
}

SN_EXPORT cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                      int m, int n, int k, const void *alpha, const void *A, cudaDataType Atype,
                                      int lda, const void *B, cudaDataType Btype, int ldb, const void *beta, void *C,
                                      cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                                      cublasGemmAlgo_t algo)
{
    SN_BLAS_BEGIN(cublasGemmEx, SN_OP_GEMM, handle,
                  (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc,
                   computeType, algo))
    sn_gemm_describe(&c, SN_GEMM_EX_OF(0, 0, 0, 1), sn_blas_scale_nonzero(handle, beta, computeType));
    c.params = sn_hash_mix(c.params, sn_gemm_ex_params(Atype, Btype, Ctype, computeType, algo));
    sn_blas_workspace(&c, handle);
    SN_BLAS_END((handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc,
                 computeType, algo));
}

SN_EXPORT cublasStatus_t cublasGemmEx_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int64_t m, int64_t n, int64_t k, const void *alpha, const void *A,
                                         cudaDataType Atype, int64_t lda, const void *B, cudaDataType Btype,
                                         int64_t ldb, const void *beta, void *C, cudaDataType Ctype, int64_t ldc,
                                         cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    SN_BLAS_BEGIN(cublasGemmEx_64, SN_OP_GEMM, handle,
                  (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc,
                   computeType, algo))
    sn_gemm_describe(&c, SN_GEMM_EX_OF(0, 0, 0, 1), sn_blas_scale_nonzero(handle, beta, computeType));
    c.params = sn_hash_mix(c.params, sn_gemm_ex_params(Atype, Btype, Ctype, computeType, algo));
    sn_blas_workspace(&c, handle);
    SN_BLAS_END((handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc,
                 computeType, algo));
}

SN_EXPORT cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void *alpha, const void *A, cudaDataType Atype, int lda, long long int strideA, const void *B,
    cudaDataType Btype, int ldb, long long int strideB, const void *beta, void *C, cudaDataType Ctype, int ldc,
    long long int strideC, int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    SN_BLAS_BEGIN(cublasGemmStridedBatchedEx, SN_OP_GEMM_BATCHED, handle,
                  (handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta,
                   C, Ctype, ldc, strideC, batchCount, computeType, algo))
    sn_gemm_describe(&c, SN_GEMM_EX_OF(strideA, strideB, strideC, batchCount),
                     sn_blas_scale_nonzero(handle, beta, computeType));
    c.params = sn_hash_mix(c.params, sn_gemm_ex_params(Atype, Btype, Ctype, computeType, algo));
    sn_blas_workspace(&c, handle);
    SN_BLAS_END((handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C,
                 Ctype, ldc, strideC, batchCount, computeType, algo));
}

SN_EXPORT cublasStatus_t cublasGemmStridedBatchedEx_64(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
    const void *alpha, const void *A, cudaDataType Atype, int64_t lda, long long int strideA, const void *B,
    cudaDataType Btype, int64_t ldb, long long int strideB, const void *beta, void *C, cudaDataType Ctype,
    int64_t ldc, long long int strideC, int64_t batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    SN_BLAS_BEGIN(cublasGemmStridedBatchedEx_64, SN_OP_GEMM_BATCHED, handle,
                  (handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta,
                   C, Ctype, ldc, strideC, batchCount, computeType, algo))
    sn_gemm_describe(&c, SN_GEMM_EX_OF(strideA, strideB, strideC, batchCount),
                     sn_blas_scale_nonzero(handle, beta, computeType));
    c.params = sn_hash_mix(c.params, sn_gemm_ex_params(Atype, Btype, Ctype, computeType, algo));
    sn_blas_workspace(&c, handle);
    SN_BLAS_END((handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C,
                 Ctype, ldc, strideC, batchCount, computeType, algo));
}

SN_EXPORT cublasStatus_t cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                             cublasOperation_t transb, int m, int n, int k, const void *alpha,
                                             const void *const Aarray[], cudaDataType Atype, int lda,
                                             const void *const Barray[], cudaDataType Btype, int ldb,
                                             const void *beta, void *const Carray[], cudaDataType Ctype, int ldc,
                                             int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    SN_BLAS_BEGIN(cublasGemmBatchedEx, SN_OP_GEMM_BATCHED, handle,
                  (handle, transa, transb, m, n, k, alpha, Aarray, Atype, lda, Barray, Btype, ldb, beta, Carray,
                   Ctype, ldc, batchCount, computeType, algo))
    sn_gemm_pointer_arrays(&c, SN_GEMM_ARRAYS);
    c.params = sn_hash_mix(c.params, sn_gemm_ex_params(Atype, Btype, Ctype, computeType, algo));
    sn_blas_workspace(&c, handle);
    SN_BLAS_END((handle, transa, transb, m, n, k, alpha, Aarray, Atype, lda, Barray, Btype, ldb, beta, Carray,
                 Ctype, ldc, batchCount, computeType, algo));
}

SN_EXPORT cublasStatus_t cublasGemmBatchedEx_64(cublasHandle_t handle, cublasOperation_t transa,
                                                cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                                const void *alpha, const void *const Aarray[], cudaDataType Atype,
                                                int64_t lda, const void *const Barray[], cudaDataType Btype,
                                                int64_t ldb, const void *beta, void *const Carray[],
                                                cudaDataType Ctype, int64_t ldc, int64_t batchCount,
                                                cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    SN_BLAS_BEGIN(cublasGemmBatchedEx_64, SN_OP_GEMM_BATCHED, handle,
                  (handle, transa, transb, m, n, k, alpha, Aarray, Atype, lda, Barray, Btype, ldb, beta, Carray,
                   Ctype, ldc, batchCount, computeType, algo))
    sn_gemm_pointer_arrays(&c, SN_GEMM_ARRAYS);
    c.params = sn_hash_mix(c.params, sn_gemm_ex_params(Atype, Btype, Ctype, computeType, algo));
    sn_blas_workspace(&c, handle);
    SN_BLAS_END((handle, transa, transb, m, n, k, alpha, Aarray, Atype, lda, Barray, Btype, ldb, beta, Carray,
                 Ctype, ldc, batchCount, computeType, algo));
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
