/*
 * cublas_gemmex.c — the mixed-type and batched GEMMs of the simulated
 * cuBLAS: cublasGemmEx, cublasGemmBatchedEx, cublasGemmStridedBatchedEx,
 * cublasSgemmEx, cublasSgemmBatched, their _64 forms and cublasSgemm_v2_64
 * and cublasSgemmStridedBatched_64. Frameworks reach cuBLAS mostly through
 * these rather than through cublasSgemm.
 *
 * One engine serves them all: a batch of equal GEMMs whose operands are
 * either strided from a base pointer or listed in device arrays of
 * pointers. The arrays are device memory: they are range-checked, then read
 * when the simulated kernel runs (work runs at issue here, so after
 * everything before it on the stream), and every matrix they name is
 * range-checked like any operand, so a freed or unmapped one faults as on
 * the GPU. Types: FP32, FP16 and BF16 matrices (and INT8 inputs with an
 * FP32 output) under the FP32 compute types, computed in FP32 with OpenBLAS
 * after an exact widening of the inputs; a narrow output is rounded to
 * nearest even. Other valid combinations answer CUBLAS_STATUS_NOT_SUPPORTED
 * and values outside the enums CUBLAS_STATUS_INVALID_VALUE
 * (docs/sim-cublas.md).
 */
#include "sim/cublas/cublas_internal.h"

#include <cblas.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Diagnostic names of one routine's operands; string literals because the
 * simulated device keeps them until the op is charged. */
struct gx_names {
    const char *routine, *alpha, *beta, *a, *b, *c, *workspace, *aarray, *barray, *carray;
};

#define GX_NAMES(r)                                                                                          \
    {                                                                                                        \
        r, r " alpha", r " beta", r " A", r " B", r " C", r " workspace", r " Aarray", r " Barray",         \
            r " Carray"                                                                                      \
    }

static const struct gx_names k_gemmex = GX_NAMES("cublasGemmEx");
static const struct gx_names k_gemmex64 = GX_NAMES("cublasGemmEx_64");
static const struct gx_names k_gemm_batched_ex = GX_NAMES("cublasGemmBatchedEx");
static const struct gx_names k_gemm_batched_ex64 = GX_NAMES("cublasGemmBatchedEx_64");
static const struct gx_names k_gemm_strided_ex = GX_NAMES("cublasGemmStridedBatchedEx");
static const struct gx_names k_gemm_strided_ex64 = GX_NAMES("cublasGemmStridedBatchedEx_64");
static const struct gx_names k_sgemmex = GX_NAMES("cublasSgemmEx");
static const struct gx_names k_sgemmex64 = GX_NAMES("cublasSgemmEx_64");
static const struct gx_names k_sgemm_batched = GX_NAMES("cublasSgemmBatched");
static const struct gx_names k_sgemm_batched64 = GX_NAMES("cublasSgemmBatched_64");
static const struct gx_names k_sgemm64 = GX_NAMES("cublasSgemm_v2_64");
static const struct gx_names k_sgemm_strided64 = GX_NAMES("cublasSgemmStridedBatched_64");

/* One operand: a base pointer and a stride between batch entries, or a
 * device array of batch pointers. */
struct gx_operand {
    const void *p;
    const void *const *array;
    cudaDataType type;
    int64_t ld;
    long long stride;
};

struct gx_call {
    const struct gx_names *names;
    cublasOperation_t ta, tb;
    int64_t m, n, k;
    const float *alpha, *beta;
    struct gx_operand a, b, c;
    int64_t batch;
    int tensor; /* runs on tensor cores: the TF32 rate of the cost model */
};

static int op_ok(cublasOperation_t op)
{
    return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

static enum CBLAS_TRANSPOSE to_cblas(cublasOperation_t op)
{
    return op == CUBLAS_OP_N ? CblasNoTrans : CblasTrans;
}

static int64_t max1(int64_t v) { return v > 1 ? v : 1; }

static size_t type_bytes(cudaDataType t)
{
    switch (t) {
    case CUDA_R_32F: return 4;
    case CUDA_R_16F:
    case CUDA_R_16BF: return 2;
    case CUDA_R_8I: return 1;
    default: return 0;
    }
}

/* ---- narrow formats ------------------------------------------------------ */

static float bits_to_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t float_to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f)
        return bits_to_float(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        /* Subnormal (or zero): man * 2^-24, exact in FP32. */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    return bits_to_float(sign | ((exp + 112) << 23) | (man << 13));
}

/* Round to nearest even, overflow to infinity, as the GPU's conversion. */
static uint16_t float_to_half(float f)
{
    uint32_t u = float_to_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u)
        return (uint16_t)(sign | 0x7c00 | (a > 0x7f800000u ? 0x200 | ((a >> 13) & 0x3ff) : 0));
    if (a >= 0x477ff000u) /* rounds to 65536 or beyond */
        return (uint16_t)(sign | 0x7c00);
    if (a < 0x38800000u) {
        /* Subnormal half: value / 2^-24 rounded to nearest even integer. */
        float v = bits_to_float(a) * 0x1p24f;
        uint32_t q = (uint32_t)v;
        float rem = v - (float)q;
        if (rem > 0.5f || (rem == 0.5f && (q & 1)))
            q++;
        return (uint16_t)(sign | q);
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1);
    return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

static float bf16_to_float(uint16_t h)
{
    return bits_to_float((uint32_t)h << 16);
}

static uint16_t float_to_bf16(float f)
{
    uint32_t u = float_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

static float load(const void *base, cudaDataType t, size_t i)
{
    switch (t) {
    case CUDA_R_16F: return half_to_float(((const uint16_t *)base)[i]);
    case CUDA_R_16BF: return bf16_to_float(((const uint16_t *)base)[i]);
    case CUDA_R_8I: return (float)((const int8_t *)base)[i];
    default: return ((const float *)base)[i];
    }
}

static void store(void *base, cudaDataType t, size_t i, float v)
{
    if (t == CUDA_R_16F)
        ((uint16_t *)base)[i] = float_to_half(v);
    else if (t == CUDA_R_16BF)
        ((uint16_t *)base)[i] = float_to_bf16(v);
    else
        ((float *)base)[i] = v;
}

/* rows x cols of a column-major matrix of type t into a dense FP32 one. */
static void widen(float *dst, const void *src, cudaDataType t, int64_t rows, int64_t cols, int64_t ld)
{
    for (int64_t j = 0; j < cols; j++)
        for (int64_t i = 0; i < rows; i++)
            dst[j * rows + i] = load(src, t, (size_t)(j * ld + i));
}

/* ---- argument checks ----------------------------------------------------- */

/* Compute types of the enum; a value outside it is an invalid argument. */
static int compute_known(cublasComputeType_t ct)
{
    switch (ct) {
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC:
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
    case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
    case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT:
    case CUBLAS_COMPUTE_32I:
    case CUBLAS_COMPUTE_32I_PEDANTIC: return 1;
    }
    return 0;
}

static int algo_known(cublasGemmAlgo_t algo)
{
    int a = (int)algo;
    return a == CUBLAS_GEMM_DEFAULT || (a >= CUBLAS_GEMM_ALGO0 && a <= CUBLAS_GEMM_ALGO23) ||
           (a >= CUBLAS_GEMM_DEFAULT_TENSOR_OP && a <= CUBLAS_GEMM_ALGO15_TENSOR_OP) ||
           a == CUBLAS_GEMM_AUTOTUNE;
}

/* The FP32-compute combinations of the cuBLAS documentation's table for
 * cublasGemmEx (and cublasSgemmEx) that the simulation computes. */
static int fp32_types_ok(cudaDataType at, cudaDataType bt, cudaDataType ct)
{
    if (at != bt)
        return 0;
    switch (at) {
    case CUDA_R_32F: return ct == CUDA_R_32F;
    case CUDA_R_16F: return ct == CUDA_R_16F || ct == CUDA_R_32F;
    case CUDA_R_16BF: return ct == CUDA_R_16BF || ct == CUDA_R_32F;
    case CUDA_R_8I: return ct == CUDA_R_32F;
    default: return 0;
    }
}

/* cublasGemm*Ex: the compute type, algorithm and types; sets x->tensor. */
static cublasStatus_t ex_types_ok(cublasHandle_t h, struct gx_call *x, cublasComputeType_t ct,
                                  cublasGemmAlgo_t algo)
{
    if (!compute_known(ct) || !algo_known(algo))
        return CUBLAS_STATUS_INVALID_VALUE;
    switch (ct) {
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
        if (!fp32_types_ok(x->a.type, x->b.type, x->c.type))
            return CUBLAS_STATUS_NOT_SUPPORTED;
        /* FP32 data follows the handle's math mode (TF32 only when it asks);
         * narrow inputs run on tensor cores. */
        x->tensor = x->a.type == CUDA_R_32F ? ct == CUBLAS_COMPUTE_32F && simblas_tf32(h->math_mode) : 1;
        return CUBLAS_STATUS_SUCCESS;
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
        if (x->a.type != CUDA_R_32F || x->b.type != CUDA_R_32F || x->c.type != CUDA_R_32F)
            return CUBLAS_STATUS_NOT_SUPPORTED;
        x->tensor = 1;
        return CUBLAS_STATUS_SUCCESS;
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
}

static cublasStatus_t shape_ok(const struct gx_call *x)
{
    if (!op_ok(x->ta) || !op_ok(x->tb) || x->m < 0 || x->n < 0 || x->k < 0 || !x->alpha || !x->beta ||
        x->batch < 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (x->a.ld < max1(x->ta == CUBLAS_OP_N ? x->m : x->k) || x->b.ld < max1(x->tb == CUBLAS_OP_N ? x->k : x->n) ||
        x->c.ld < max1(x->m))
        return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- the engine ---------------------------------------------------------- */

static const void *entry(const struct gx_operand *o, int64_t i)
{
    if (o->array)
        return o->array[i];
    return (const char *)o->p + (ptrdiff_t)(i * o->stride) * (ptrdiff_t)type_bytes(o->type);
}

static size_t matrix_span(int64_t rows, int64_t cols, int64_t ld, cudaDataType t)
{
    return simblas_matrix_bytes(rows, cols, ld) / sizeof(float) * type_bytes(t);
}

/* One GEMM of the batch, FP32 arithmetic; scratch for the narrow operands. */
static int compute_one(const struct gx_call *x, const void *A, const void *B, void *C, float alpha, float beta,
                       int reads_ab, int reads_c)
{
    int m = (int)x->m, n = (int)x->n, k = (int)x->k;
    int64_t ra = x->ta == CUBLAS_OP_N ? x->m : x->k, ca = x->ta == CUBLAS_OP_N ? x->k : x->m;
    int64_t rb = x->tb == CUBLAS_OP_N ? x->k : x->n, cb = x->tb == CUBLAS_OP_N ? x->n : x->k;
    float *ta = NULL, *tb = NULL, *tc = NULL;
    const float *fa = A, *fb = B;
    float *fc = C;
    int lda = (int)x->a.ld, ldb = (int)x->b.ld, ldc = (int)x->c.ld;
    int failed = 0;
    if (reads_ab && x->a.type != CUDA_R_32F) {
        if (!(ta = malloc((size_t)(ra * ca) * sizeof(float))))
            failed = 1;
        else
            widen(ta, A, x->a.type, ra, ca, x->a.ld), fa = ta, lda = (int)max1(ra);
    }
    if (!failed && reads_ab && x->b.type != CUDA_R_32F) {
        if (!(tb = malloc((size_t)(rb * cb) * sizeof(float))))
            failed = 1;
        else
            widen(tb, B, x->b.type, rb, cb, x->b.ld), fb = tb, ldb = (int)max1(rb);
    }
    if (!failed && x->c.type != CUDA_R_32F) {
        if (!(tc = calloc((size_t)(x->m * x->n), sizeof(float))))
            failed = 1;
        else {
            if (reads_c)
                widen(tc, C, x->c.type, x->m, x->n, x->c.ld);
            fc = tc, ldc = m;
        }
    }
    if (!failed) {
        /* C is written without being read when beta == 0 (NaN there must
         * not propagate); A and B are not read when alpha == 0 or k == 0. */
        for (int j = 0; j < n; j++) {
            float *col = fc + (size_t)j * (size_t)ldc;
            if (!reads_c)
                memset(col, 0, (size_t)m * sizeof(float));
            else if (!reads_ab && beta != 1.0f)
                cblas_sscal(m, beta, col, 1);
        }
        if (reads_ab)
            cblas_sgemm(CblasColMajor, to_cblas(x->ta), to_cblas(x->tb), m, n, k, alpha, fa, lda, fb, ldb,
                        reads_c ? beta : 0.0f, fc, ldc);
        if (tc)
            for (int64_t j = 0; j < x->n; j++)
                for (int64_t i = 0; i < x->m; i++)
                    store(C, x->c.type, (size_t)(j * x->c.ld + i), tc[j * x->m + i]);
    }
    free(ta);
    free(tb);
    free(tc);
    return failed ? -1 : 0;
}

static cublasStatus_t run(cublasHandle_t handle, struct gx_call *x)
{
    const struct gx_names *names = x->names;
    if (x->m == 0 || x->n == 0 || x->batch == 0)
        return CUBLAS_STATUS_SUCCESS;
    /* The OpenBLAS interface takes int sizes. */
    if (x->m > INT_MAX || x->n > INT_MAX || x->k > INT_MAX || x->a.ld > INT_MAX || x->b.ld > INT_MAX ||
        x->c.ld > INT_MAX)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    struct simblas_scalar a, b;
    cublasStatus_t st = simblas_read_scalar(handle, x->alpha, names->alpha, &a);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = simblas_read_scalar(handle, x->beta, names->beta, &b);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if ((st = simblas_stream_ok(handle)) != CUBLAS_STATUS_SUCCESS)
        return st;
    int reads_ab = x->k > 0 && !simblas_scalar_is(&a, 0.0f);
    int reads_c = !simblas_scalar_is(&b, 0.0f);
    int64_t ra = x->ta == CUBLAS_OP_N ? x->m : x->k, ca = x->ta == CUBLAS_OP_N ? x->k : x->m;
    int64_t rb = x->tb == CUBLAS_OP_N ? x->k : x->n, cb = x->tb == CUBLAS_OP_N ? x->n : x->k;
    size_t ea = matrix_span(ra, ca, x->a.ld, x->a.type), eb = matrix_span(rb, cb, x->b.ld, x->b.type);
    size_t ec = matrix_span(x->m, x->n, x->c.ld, x->c.type);
    size_t arr = (size_t)x->batch * sizeof(void *);

    /* The pointer arrays are read by the kernel whether or not the
     * matrices they list are; the matrices themselves can only be found
     * (and checked) by reading the arrays, which compute-off runs never do. */
    int pointers = x->c.array != NULL;
    if (pointers) {
        if (reads_ab) {
            simgpu_check_range(x->a.array, arr, 0, names->aarray);
            simgpu_check_range(x->b.array, arr, 0, names->barray);
        }
        simgpu_check_range(x->c.array, arr, 0, names->carray);
    }
    if (!pointers || simgpu_compute_enabled()) {
        for (int64_t i = 0; i < x->batch; i++) {
            if (reads_ab) {
                simgpu_check_range(entry(&x->a, i), ea, 0, names->a);
                simgpu_check_range(entry(&x->b, i), eb, 0, names->b);
            }
            simgpu_check_range(entry(&x->c, i), ec, 1, names->c);
        }
    }
    simblas_check_workspace(handle, names->workspace);

    if (simgpu_compute_enabled()) {
        for (int64_t i = 0; i < x->batch; i++)
            if (compute_one(x, reads_ab ? entry(&x->a, i) : NULL, reads_ab ? entry(&x->b, i) : NULL,
                            (void *)entry(&x->c, i), a.value, b.value, reads_ab, reads_c) != 0)
                return CUBLAS_STATUS_ALLOC_FAILED;
    }

    double per = (double)x->m * x->n * type_bytes(x->c.type) * (reads_c ? 2 : 1);
    if (reads_ab)
        per += (double)x->m * x->k * type_bytes(x->a.type) + (double)x->k * x->n * type_bytes(x->b.type);
    if (pointers)
        per += 3 * sizeof(void *);
    double ns = simblas_gemm_ns(handle->stream, x->m, x->n, reads_ab ? x->k : 0, x->batch, per * (double)x->batch,
                                x->tensor);
    simgpu_enqueue((CUstream)handle->stream, SIMGPU_COMPUTE, ns, names->routine);
    return CUBLAS_STATUS_SUCCESS;
}

/* Handle, capture, shapes, then types: the order of the statuses. */
static cublasStatus_t gemm_ex(cublasHandle_t handle, struct gx_call *x, cublasComputeType_t ct,
                              cublasGemmAlgo_t algo)
{
    cublasStatus_t st = simblas_check_work(handle);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = shape_ok(x);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = ex_types_ok(handle, x, ct, algo);
    return st == CUBLAS_STATUS_SUCCESS ? run(handle, x) : st;
}

/* cublasSgemmEx: FP32 compute and scalars, the handle's math mode. */
static cublasStatus_t sgemm_ex(cublasHandle_t handle, struct gx_call *x)
{
    cublasStatus_t st = simblas_check_work(handle);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = shape_ok(x);
    if (st == CUBLAS_STATUS_SUCCESS && !fp32_types_ok(x->a.type, x->b.type, x->c.type))
        st = CUBLAS_STATUS_NOT_SUPPORTED;
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    x->tensor = x->a.type == CUDA_R_32F ? simblas_tf32(handle->math_mode) : 1;
    return run(handle, x);
}

/* Plain FP32 GEMMs (Sgemm*): the handle's math mode decides TF32. */
static cublasStatus_t sgemm_plain(cublasHandle_t handle, struct gx_call *x)
{
    x->a.type = x->b.type = x->c.type = CUDA_R_32F;
    return sgemm_ex(handle, x);
}

#define GX_CALL(nm, transa, transb, m_, n_, k_, al, be, batch_)                                              \
    (struct gx_call)                                                                                         \
    {                                                                                                        \
        .names = (nm), .ta = (transa), .tb = (transb), .m = (m_), .n = (n_), .k = (k_),                    \
        .alpha = (const float *)(al), .beta = (const float *)(be), .batch = (batch_)                         \
    }

static struct gx_operand strided(const void *p, cudaDataType t, int64_t ld, long long stride)
{
    return (struct gx_operand){p, NULL, t, ld, stride};
}

static struct gx_operand listed(const void *const *array, cudaDataType t, int64_t ld)
{
    return (struct gx_operand){NULL, array, t, ld, 0};
}

/* ---- entry points -------------------------------------------------------- */

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void *alpha, const void *A, cudaDataType Atype, int lda, const void *B,
                            cudaDataType Btype, int ldb, const void *beta, void *C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    struct gx_call x = GX_CALL(&k_gemmex, transa, transb, m, n, k, alpha, beta, 1);
    x.a = strided(A, Atype, lda, 0), x.b = strided(B, Btype, ldb, 0), x.c = strided(C, Ctype, ldc, 0);
    return gemm_ex(handle, &x, computeType, algo);
}

cublasStatus_t cublasGemmEx_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                               int64_t m, int64_t n, int64_t k, const void *alpha, const void *A, cudaDataType Atype,
                               int64_t lda, const void *B, cudaDataType Btype, int64_t ldb, const void *beta,
                               void *C, cudaDataType Ctype, int64_t ldc, cublasComputeType_t computeType,
                               cublasGemmAlgo_t algo)
{
    struct gx_call x = GX_CALL(&k_gemmex64, transa, transb, m, n, k, alpha, beta, 1);
    x.a = strided(A, Atype, lda, 0), x.b = strided(B, Btype, ldb, 0), x.c = strided(C, Ctype, ldc, 0);
    return gemm_ex(handle, &x, computeType, algo);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const void *alpha, const void *A, cudaDataType Atype,
                                          int lda, long long int strideA, const void *B, cudaDataType Btype, int ldb,
                                          long long int strideB, const void *beta, void *C, cudaDataType Ctype,
                                          int ldc, long long int strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    struct gx_call x = GX_CALL(&k_gemm_strided_ex, transa, transb, m, n, k, alpha, beta, batchCount);
    x.a = strided(A, Atype, lda, strideA), x.b = strided(B, Btype, ldb, strideB);
    x.c = strided(C, Ctype, ldc, strideC);
    return gemm_ex(handle, &x, computeType, algo);
}

cublasStatus_t cublasGemmStridedBatchedEx_64(cublasHandle_t handle, cublasOperation_t transa,
                                             cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                             const void *alpha, const void *A, cudaDataType Atype, int64_t lda,
                                             long long int strideA, const void *B, cudaDataType Btype, int64_t ldb,
                                             long long int strideB, const void *beta, void *C, cudaDataType Ctype,
                                             int64_t ldc, long long int strideC, int64_t batchCount,
                                             cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    struct gx_call x = GX_CALL(&k_gemm_strided_ex64, transa, transb, m, n, k, alpha, beta, batchCount);
    x.a = strided(A, Atype, lda, strideA), x.b = strided(B, Btype, ldb, strideB);
    x.c = strided(C, Ctype, ldc, strideC);
    return gemm_ex(handle, &x, computeType, algo);
}

cublasStatus_t cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                   int n, int k, const void *alpha, const void *const Aarray[], cudaDataType Atype,
                                   int lda, const void *const Barray[], cudaDataType Btype, int ldb,
                                   const void *beta, void *const Carray[], cudaDataType Ctype, int ldc,
                                   int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    struct gx_call x = GX_CALL(&k_gemm_batched_ex, transa, transb, m, n, k, alpha, beta, batchCount);
    x.a = listed(Aarray, Atype, lda), x.b = listed(Barray, Btype, ldb);
    x.c = listed((const void *const *)Carray, Ctype, ldc);
    return gemm_ex(handle, &x, computeType, algo);
}

cublasStatus_t cublasGemmBatchedEx_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                      int64_t m, int64_t n, int64_t k, const void *alpha, const void *const Aarray[],
                                      cudaDataType Atype, int64_t lda, const void *const Barray[],
                                      cudaDataType Btype, int64_t ldb, const void *beta, void *const Carray[],
                                      cudaDataType Ctype, int64_t ldc, int64_t batchCount,
                                      cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    struct gx_call x = GX_CALL(&k_gemm_batched_ex64, transa, transb, m, n, k, alpha, beta, batchCount);
    x.a = listed(Aarray, Atype, lda), x.b = listed(Barray, Btype, ldb);
    x.c = listed((const void *const *)Carray, Ctype, ldc);
    return gemm_ex(handle, &x, computeType, algo);
}

cublasStatus_t cublasSgemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                             int k, const float *alpha, const void *A, cudaDataType Atype, int lda, const void *B,
                             cudaDataType Btype, int ldb, const float *beta, void *C, cudaDataType Ctype, int ldc)
{
    struct gx_call x = GX_CALL(&k_sgemmex, transa, transb, m, n, k, alpha, beta, 1);
    x.a = strided(A, Atype, lda, 0), x.b = strided(B, Btype, ldb, 0), x.c = strided(C, Ctype, ldc, 0);
    return sgemm_ex(handle, &x);
}

cublasStatus_t cublasSgemmEx_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                int64_t m, int64_t n, int64_t k, const float *alpha, const void *A,
                                cudaDataType Atype, int64_t lda, const void *B, cudaDataType Btype, int64_t ldb,
                                const float *beta, void *C, cudaDataType Ctype, int64_t ldc)
{
    struct gx_call x = GX_CALL(&k_sgemmex64, transa, transb, m, n, k, alpha, beta, 1);
    x.a = strided(A, Atype, lda, 0), x.b = strided(B, Btype, ldb, 0), x.c = strided(C, Ctype, ldc, 0);
    return sgemm_ex(handle, &x);
}

cublasStatus_t cublasSgemmBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                  int n, int k, const float *alpha, const float *const Aarray[], int lda,
                                  const float *const Barray[], int ldb, const float *beta, float *const Carray[],
                                  int ldc, int batchCount)
{
    struct gx_call x = GX_CALL(&k_sgemm_batched, transa, transb, m, n, k, alpha, beta, batchCount);
    x.a = listed((const void *const *)Aarray, CUDA_R_32F, lda);
    x.b = listed((const void *const *)Barray, CUDA_R_32F, ldb);
    x.c = listed((const void *const *)Carray, CUDA_R_32F, ldc);
    return sgemm_plain(handle, &x);
}

cublasStatus_t cublasSgemmBatched_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                     int64_t m, int64_t n, int64_t k, const float *alpha,
                                     const float *const Aarray[], int64_t lda, const float *const Barray[],
                                     int64_t ldb, const float *beta, float *const Carray[], int64_t ldc,
                                     int64_t batchCount)
{
    struct gx_call x = GX_CALL(&k_sgemm_batched64, transa, transb, m, n, k, alpha, beta, batchCount);
    x.a = listed((const void *const *)Aarray, CUDA_R_32F, lda);
    x.b = listed((const void *const *)Barray, CUDA_R_32F, ldb);
    x.c = listed((const void *const *)Carray, CUDA_R_32F, ldc);
    return sgemm_plain(handle, &x);
}

cublasStatus_t cublasSgemm_v2_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                 int64_t m, int64_t n, int64_t k, const float *alpha, const float *A, int64_t lda,
                                 const float *B, int64_t ldb, const float *beta, float *C, int64_t ldc)
{
    struct gx_call x = GX_CALL(&k_sgemm64, transa, transb, m, n, k, alpha, beta, 1);
    x.a = strided(A, CUDA_R_32F, lda, 0), x.b = strided(B, CUDA_R_32F, ldb, 0);
    x.c = strided(C, CUDA_R_32F, ldc, 0);
    return sgemm_plain(handle, &x);
}

cublasStatus_t cublasSgemmStridedBatched_64(cublasHandle_t handle, cublasOperation_t transa,
                                            cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                            const float *alpha, const float *A, int64_t lda, long long int strideA,
                                            const float *B, int64_t ldb, long long int strideB, const float *beta,
                                            float *C, int64_t ldc, long long int strideC, int64_t batchCount)
{
    struct gx_call x = GX_CALL(&k_sgemm_strided64, transa, transb, m, n, k, alpha, beta, batchCount);
    x.a = strided(A, CUDA_R_32F, lda, strideA), x.b = strided(B, CUDA_R_32F, ldb, strideB);
    x.c = strided(C, CUDA_R_32F, ldc, strideC);
    return sgemm_plain(handle, &x);
}
