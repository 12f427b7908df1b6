/*
 * test_cublas_ex.c — the mixed-type, batched and 64-bit GEMMs of the
 * simulated cuBLAS (cublasGemmEx, GemmStridedBatchedEx, GemmBatchedEx,
 * SgemmEx, SgemmBatched, the _64 forms), as an ordinary CUDA program.
 *
 * FP32 results are compared with a naive double-precision product written
 * here (normwise relative error below 1e-5) on random shapes, transposes,
 * leading dimensions above the minimum and alpha/beta other than (1, 0);
 * every operand sits at the very end of its allocation, so one element too
 * many faults, and the padding of C must survive. FP16, BF16 and INT8 are
 * checked exactly: small integers whose products are representable, and single
 * products that land on rounding ties (round to nearest even), overflow and
 * subnormals, with the expected bit patterns written out here. Pointer
 * arrays live in device memory; a freed matrix listed in one must fault
 * like any illegal address. Status codes for invalid and unsupported
 * arguments use operands that would fault if touched.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "tests/sim_child.h"

#define TOLERANCE 1e-5
#define SENTINEL 12345.0f

static uint64_t g_rng = 0x2545f4914f6cdd1dull;

static uint64_t next_u64(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

static int rand_int(int lo, int hi) { return lo + (int)(next_u64() % (uint64_t)(hi - lo + 1)); }
static float rand_float(void) { return (float)((double)(next_u64() >> 11) / 9007199254740992.0 * 2.0 - 1.0); }

/* A device buffer of bytes placed at the very end of its allocation. */
static void *dev_tail(size_t bytes, void **base)
{
    size_t alloc = (bytes + 511) / 512 * 512;
    if (!alloc)
        alloc = 512;
    assert_int_equal(cudaMalloc(base, alloc), cudaSuccess);
    return (char *)*base + alloc - bytes;
}

static void *dev_copy(const void *host, size_t bytes, void **base)
{
    void *p = dev_tail(bytes, base);
    assert_int_equal(cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    return p;
}

static void to_host(void *host, const void *dev, size_t bytes)
{
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    assert_int_equal(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
}

static size_t span(int rows, int cols, int ld) { return (size_t)(cols - 1) * (size_t)ld + (size_t)rows; }

/* C = alpha op(A) op(B) + beta C in double, column-major. */
static void ref_gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha, const float *A,
                     int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double s = 0;
            for (int p = 0; p < k; p++) {
                double a = ta == CUBLAS_OP_N ? A[(size_t)p * lda + i] : A[(size_t)i * lda + p];
                double b = tb == CUBLAS_OP_N ? B[(size_t)j * ldb + p] : B[(size_t)p * ldb + j];
                s += a * b;
            }
            double c = beta == 0.0f ? 0.0 : beta * (double)C[(size_t)j * ldc + i];
            C[(size_t)j * ldc + i] = (float)(alpha * s + c);
        }
}

static void assert_close(const float *got, const float *want, int m, int n, int ldc)
{
    double num = 0, den = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double d = (double)got[(size_t)j * ldc + i] - want[(size_t)j * ldc + i];
            num += d * d;
            den += (double)want[(size_t)j * ldc + i] * want[(size_t)j * ldc + i];
        }
    double err = sqrt(num) / (sqrt(den) > 0 ? sqrt(den) : 1);
    if (err >= TOLERANCE)
        fail_msg("relative error %g", err);
    /* rows between m and ldc are padding the call must not touch */
    for (int j = 0; j + 1 < n; j++)
        for (int i = m; i < ldc; i++)
            assert_true(got[(size_t)j * ldc + i] == SENTINEL);
}

static float *rand_matrix(int rows, int cols, int ld)
{
    size_t s = span(rows, cols, ld);
    float *h = malloc(s * sizeof(float));
    for (size_t i = 0; i < s; i++)
        h[i] = (int)(i % (size_t)ld) < rows ? rand_float() : SENTINEL;
    return h;
}

static cublasHandle_t g_h;

static int setup(void **state)
{
    (void)state;
    return cublasCreate(&g_h) == CUBLAS_STATUS_SUCCESS ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return cublasDestroy(g_h) == CUBLAS_STATUS_SUCCESS ? 0 : -1;
}

static cublasOperation_t rand_op(void) { return (cublasOperation_t)rand_int(0, 2); }

/* ---- FP32 ---------------------------------------------------------------- */

static void test_gemmex_fp32(void **state)
{
    (void)state;
    const cublasComputeType_t cts[] = {CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_COMPUTE_32F_FAST_TF32,
                                       CUBLAS_COMPUTE_32F_FAST_16F, CUBLAS_COMPUTE_32F_FAST_16BF};
    for (int t = 0; t < 20; t++) {
        cublasOperation_t ta = rand_op(), tb = rand_op();
        int m = rand_int(1, 37), n = rand_int(1, 29), k = rand_int(1, 41);
        int ra = ta == CUBLAS_OP_N ? m : k, ca = ta == CUBLAS_OP_N ? k : m;
        int rb = tb == CUBLAS_OP_N ? k : n, cb = tb == CUBLAS_OP_N ? n : k;
        int lda = ra + rand_int(0, 3), ldb = rb + rand_int(0, 3), ldc = m + rand_int(0, 3);
        float alpha = rand_float() * 2, beta = t % 3 == 0 ? 0.0f : rand_float();
        float *hA = rand_matrix(ra, ca, lda), *hB = rand_matrix(rb, cb, ldb), *hC = rand_matrix(m, n, ldc);
        if (beta == 0.0f)
            for (int j = 0; j < n; j++)
                for (int i = 0; i < m; i++)
                    hC[(size_t)j * ldc + i] = NAN; /* must not propagate */
        void *bA, *bB, *bC;
        float *A = dev_copy(hA, span(ra, ca, lda) * 4, &bA), *B = dev_copy(hB, span(rb, cb, ldb) * 4, &bB);
        float *C = dev_copy(hC, span(m, n, ldc) * 4, &bC);
        cublasStatus_t st;
        if (t % 8 == 7)
            st = cublasSgemmEx_64(g_h, ta, tb, m, n, k, &alpha, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, &beta, C,
                                  CUDA_R_32F, ldc);
        else if (t % 8 == 5)
            st = cublasSgemm_v2_64(g_h, ta, tb, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc);
        else if (t % 4 == 3)
            st = cublasSgemmEx(g_h, ta, tb, m, n, k, &alpha, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, &beta, C,
                               CUDA_R_32F, ldc);
        else if (t % 4 == 2)
            st = cublasGemmEx_64(g_h, ta, tb, m, n, k, &alpha, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, &beta, C,
                                 CUDA_R_32F, ldc, cts[t % 5], CUBLAS_GEMM_DEFAULT);
        else
            st = cublasGemmEx(g_h, ta, tb, m, n, k, &alpha, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, &beta, C,
                              CUDA_R_32F, ldc, cts[t % 5], t % 2 ? CUBLAS_GEMM_DEFAULT_TENSOR_OP : CUBLAS_GEMM_ALGO3);
        assert_int_equal(st, CUBLAS_STATUS_SUCCESS);
        float *got = malloc(span(m, n, ldc) * 4);
        to_host(got, C, span(m, n, ldc) * 4);
        ref_gemm(ta, tb, m, n, k, alpha, hA, lda, hB, ldb, beta, hC, ldc);
        assert_close(got, hC, m, n, ldc);
        free(got), free(hA), free(hB), free(hC);
        cudaFree(bA), cudaFree(bB), cudaFree(bC);
    }
}

/* Strided batches with gaps between entries and a shared (stride 0) A,
 * through GemmStridedBatchedEx, its _64 form and SgemmStridedBatched_64. */
static void test_strided_batched_ex(void **state)
{
    (void)state;
    for (int t = 0; t < 6; t++) {
        cublasOperation_t ta = rand_op(), tb = rand_op();
        int m = rand_int(1, 19), n = rand_int(1, 17), k = rand_int(1, 23), batch = rand_int(1, 6);
        int ra = ta == CUBLAS_OP_N ? m : k, ca = ta == CUBLAS_OP_N ? k : m;
        int rb = tb == CUBLAS_OP_N ? k : n, cb = tb == CUBLAS_OP_N ? n : k;
        int lda = ra + 1, ldb = rb, ldc = m + 2;
        long long sa = t % 2 ? 0 : (long long)span(ra, ca, lda) + 5, sb = (long long)span(rb, cb, ldb) + 3;
        long long sc = (long long)span(m, n, ldc) + (ldc - m);
        size_t na = (size_t)sa * (batch - 1) + span(ra, ca, lda), nb = (size_t)sb * (batch - 1) + span(rb, cb, ldb);
        size_t nc = (size_t)sc * (batch - 1) + span(m, n, ldc);
        float *hA = malloc(na * 4), *hB = malloc(nb * 4), *hC = malloc(nc * 4);
        for (size_t i = 0; i < na; i++)
            hA[i] = rand_float();
        for (size_t i = 0; i < nb; i++)
            hB[i] = rand_float();
        for (size_t i = 0; i < nc; i++)
            hC[i] = (int)((i % (size_t)sc) % (size_t)ldc) < m ? rand_float() : SENTINEL;
        float alpha = 0.5f + rand_float(), beta = rand_float();
        void *bA, *bB, *bC;
        float *A = dev_copy(hA, na * 4, &bA), *B = dev_copy(hB, nb * 4, &bB), *C = dev_copy(hC, nc * 4, &bC);
        cublasStatus_t st;
        if (t < 2)
            st = cublasGemmStridedBatchedEx(g_h, ta, tb, m, n, k, &alpha, A, CUDA_R_32F, lda, sa, B, CUDA_R_32F, ldb,
                                            sb, &beta, C, CUDA_R_32F, ldc, sc, batch, CUBLAS_COMPUTE_32F,
                                            CUBLAS_GEMM_DEFAULT);
        else if (t < 4)
            st = cublasGemmStridedBatchedEx_64(g_h, ta, tb, m, n, k, &alpha, A, CUDA_R_32F, lda, sa, B, CUDA_R_32F,
                                               ldb, sb, &beta, C, CUDA_R_32F, ldc, sc, batch,
                                               CUBLAS_COMPUTE_32F_FAST_16BF, CUBLAS_GEMM_DEFAULT);
        else
            st = cublasSgemmStridedBatched_64(g_h, ta, tb, m, n, k, &alpha, A, lda, sa, B, ldb, sb, &beta, C, ldc, sc,
                                              batch);
        assert_int_equal(st, CUBLAS_STATUS_SUCCESS);
        float *got = malloc(nc * 4);
        to_host(got, C, nc * 4);
        for (int b = 0; b < batch; b++) {
            ref_gemm(ta, tb, m, n, k, alpha, hA + b * sa, lda, hB + b * sb, ldb, beta, hC + b * sc, ldc);
            assert_close(got + b * sc, hC + b * sc, m, n, ldc);
        }
        free(got), free(hA), free(hB), free(hC);
        cudaFree(bA), cudaFree(bB), cudaFree(bC);
    }
}

/* Pointer arrays in device memory, each matrix its own allocation; the
 * same B listed twice. GemmBatchedEx, SgemmBatched and their _64 forms. */
static void test_pointer_batched(void **state)
{
    (void)state;
    enum { BATCH = 5 };
    for (int t = 0; t < 4; t++) {
        cublasOperation_t ta = rand_op(), tb = rand_op();
        int m = rand_int(1, 21), n = rand_int(1, 18), k = rand_int(1, 25);
        int ra = ta == CUBLAS_OP_N ? m : k, ca = ta == CUBLAS_OP_N ? k : m;
        int rb = tb == CUBLAS_OP_N ? k : n, cb = tb == CUBLAS_OP_N ? n : k;
        int lda = ra + 2, ldb = rb + 1, ldc = m + 1;
        float *hA[BATCH], *hB[BATCH], *hC[BATCH];
        void *bA[BATCH], *bB[BATCH], *bC[BATCH];
        float *dA[BATCH], *dB[BATCH], *dC[BATCH];
        for (int b = 0; b < BATCH; b++) {
            hA[b] = rand_matrix(ra, ca, lda), hC[b] = rand_matrix(m, n, ldc);
            dA[b] = dev_copy(hA[b], span(ra, ca, lda) * 4, &bA[b]);
            dC[b] = dev_copy(hC[b], span(m, n, ldc) * 4, &bC[b]);
            if (b == 3) {
                hB[b] = hB[1], dB[b] = dB[1], bB[b] = NULL;
            } else {
                hB[b] = rand_matrix(rb, cb, ldb);
                dB[b] = dev_copy(hB[b], span(rb, cb, ldb) * 4, &bB[b]);
            }
        }
        void *pa, *pb, *pc;
        float **arrA = dev_copy(dA, sizeof dA, &pa), **arrB = dev_copy(dB, sizeof dB, &pb);
        float **arrC = dev_copy(dC, sizeof dC, &pc);
        float alpha = 1.0f + rand_float(), beta = rand_float();
        cublasStatus_t st;
        if (t == 0)
            st = cublasGemmBatchedEx(g_h, ta, tb, m, n, k, &alpha, (const void *const *)arrA, CUDA_R_32F, lda,
                                     (const void *const *)arrB, CUDA_R_32F, ldb, &beta, (void *const *)arrC,
                                     CUDA_R_32F, ldc, BATCH, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        else if (t == 3)
            st = cublasGemmBatchedEx_64(g_h, ta, tb, m, n, k, &alpha, (const void *const *)arrA, CUDA_R_32F, lda,
                                        (const void *const *)arrB, CUDA_R_32F, ldb, &beta, (void *const *)arrC,
                                        CUDA_R_32F, ldc, BATCH, CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT);
        else if (t == 1)
            st = cublasSgemmBatched(g_h, ta, tb, m, n, k, &alpha, (const float *const *)arrA, lda,
                                    (const float *const *)arrB, ldb, &beta, arrC, ldc, BATCH);
        else
            st = cublasSgemmBatched_64(g_h, ta, tb, m, n, k, &alpha, (const float *const *)arrA, lda,
                                       (const float *const *)arrB, ldb, &beta, arrC, ldc, BATCH);
        assert_int_equal(st, CUBLAS_STATUS_SUCCESS);
        for (int b = 0; b < BATCH; b++) {
            float *got = malloc(span(m, n, ldc) * 4);
            to_host(got, dC[b], span(m, n, ldc) * 4);
            ref_gemm(ta, tb, m, n, k, alpha, hA[b], lda, hB[b], ldb, beta, hC[b], ldc);
            assert_close(got, hC[b], m, n, ldc);
            free(got);
        }
        for (int b = 0; b < BATCH; b++) {
            free(hA[b]), free(hC[b]), cudaFree(bA[b]), cudaFree(bC[b]);
            if (bB[b])
                free(hB[b]), cudaFree(bB[b]);
        }
        cudaFree(pa), cudaFree(pb), cudaFree(pc);
    }
}

/* ---- FP16 / BF16 --------------------------------------------------------- */

/* Bit patterns of small integers, written independently of the library:
 * |v| = 2^e * (1 + f / 2^mant). */
static uint16_t int_bits(int v, int mant, int bias)
{
    if (v == 0)
        return 0;
    uint16_t sign = v < 0 ? 0x8000 : 0;
    unsigned a = (unsigned)abs(v);
    int e = 0;
    while ((a >> (e + 1)) != 0)
        e++;
    unsigned frac = (a - (1u << e)) << mant >> e;
    return (uint16_t)(sign | (unsigned)(e + bias) << mant | frac);
}
static uint16_t half_of(int v) { return int_bits(v, 10, 15); }
static uint16_t bf16_of(int v) { return int_bits(v, 7, 127); }

/* Integer inputs of magnitude <= 3 with k <= 8: every product and sum is
 * an integer below 256, exact in both formats, so the results are exact. */
static void check_narrow(cudaDataType type, uint16_t (*enc)(int), int c_narrow, int batched)
{
    int m = 5, n = 4, k = 7, lda = 6, ldb = 5, ldc = 5;
    int ia[6 * 7], ib[5 * 7], ic[5 * 4], want[5 * 4];
    uint16_t hA[6 * 7], hB[5 * 7], hC16[5 * 4];
    float hC32[5 * 4];
    for (int i = 0; i < 6 * 7; i++)
        ia[i] = rand_int(-3, 3), hA[i] = enc(ia[i]);
    for (int i = 0; i < 5 * 7; i++)
        ib[i] = rand_int(-3, 3), hB[i] = enc(ib[i]);
    for (int i = 0; i < 5 * 4; i++)
        ic[i] = rand_int(-9, 9), hC16[i] = enc(ic[i]), hC32[i] = (float)ic[i];
    /* C = 2 A B + 1 C, A not transposed, B transposed (stored n x k) */
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            int s = 0;
            for (int p = 0; p < k; p++)
                s += ia[p * lda + i] * ib[p * ldb + j];
            want[j * ldc + i] = 2 * s + ic[j * ldc + i];
        }
    float alpha = 2.0f, beta = 1.0f;
    void *bA, *bB, *bC;
    void *A = dev_copy(hA, sizeof hA, &bA), *B = dev_copy(hB, sizeof hB, &bB);
    void *C = c_narrow ? dev_copy(hC16, sizeof hC16, &bC) : dev_copy(hC32, sizeof hC32, &bC);
    cudaDataType ctype = c_narrow ? type : CUDA_R_32F;
    cublasStatus_t st;
    if (batched) {
        st = cublasGemmStridedBatchedEx(g_h, CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, &alpha, A, type, lda, 0, B, type,
                                        ldb, 0, &beta, C, ctype, ldc, 0, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    } else if (c_narrow) {
        st = cublasGemmEx(g_h, CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, &alpha, A, type, lda, B, type, ldb, &beta, C,
                          ctype, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    } else {
        st = cublasSgemmEx(g_h, CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, &alpha, A, type, lda, B, type, ldb, &beta, C,
                           ctype, ldc);
    }
    assert_int_equal(st, CUBLAS_STATUS_SUCCESS);
    if (c_narrow) {
        uint16_t got[5 * 4];
        to_host(got, C, sizeof got);
        for (int i = 0; i < 5 * 4; i++)
            assert_int_equal(got[i], enc(want[i]));
    } else {
        float got[5 * 4];
        to_host(got, C, sizeof got);
        for (int i = 0; i < 5 * 4; i++)
            assert_true(got[i] == (float)want[i]);
    }
    cudaFree(bA), cudaFree(bB), cudaFree(bC);
}

/* INT8 inputs, FP32 output: C = A^T B exactly (integer sums below 2^24). */
static void check_int8(void)
{
    enum { M = 3, N = 4, K = 9 };
    int8_t hA[K * M], hB[K * N];
    float want[M * N], got[M * N];
    for (int i = 0; i < K * M; i++)
        hA[i] = (int8_t)rand_int(-128, 127);
    for (int i = 0; i < K * N; i++)
        hB[i] = (int8_t)rand_int(-128, 127);
    for (int j = 0; j < N; j++)
        for (int i = 0; i < M; i++) {
            int acc = 0;
            for (int p = 0; p < K; p++)
                acc += hA[i * K + p] * hB[j * K + p];
            want[j * M + i] = (float)acc;
        }
    float one = 1.0f, zero = 0.0f;
    void *bA, *bB, *bC;
    void *A = dev_copy(hA, sizeof hA, &bA), *B = dev_copy(hB, sizeof hB, &bB), *C = dev_tail(sizeof got, &bC);
    assert_int_equal(cublasGemmEx(g_h, CUBLAS_OP_T, CUBLAS_OP_N, M, N, K, &one, A, CUDA_R_8I, K, B, CUDA_R_8I, K,
                                  &zero, C, CUDA_R_32F, M, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_SUCCESS);
    to_host(got, C, sizeof got);
    for (int i = 0; i < M * N; i++)
        assert_true(got[i] == want[i]);
    cudaFree(bA), cudaFree(bB), cudaFree(bC);
}

static void test_half_bf16_exact(void **state)
{
    (void)state;
    check_int8();
    check_narrow(CUDA_R_16F, half_of, 1, 0);
    check_narrow(CUDA_R_16F, half_of, 0, 0);
    check_narrow(CUDA_R_16F, half_of, 1, 1);
    check_narrow(CUDA_R_16BF, bf16_of, 1, 0);
    check_narrow(CUDA_R_16BF, bf16_of, 0, 0);
    check_narrow(CUDA_R_16BF, bf16_of, 1, 1);
}

/* 1 x 1 x 1 products 1 * 1 scaled by alpha: C is alpha rounded to the
 * narrow type. */
static uint16_t round_through(cudaDataType type, float alpha)
{
    uint16_t one = type == CUDA_R_16F ? 0x3c00 : 0x3f80, out = 0xffff;
    float beta = 0.0f;
    void *bA, *bB, *bC;
    void *A = dev_copy(&one, 2, &bA), *B = dev_copy(&one, 2, &bB), *C = dev_copy(&out, 2, &bC);
    assert_int_equal(cublasGemmEx(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &alpha, A, type, 1, B, type, 1, &beta, C,
                                  type, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_SUCCESS);
    to_host(&out, C, 2);
    cudaFree(bA), cudaFree(bB), cudaFree(bC);
    return out;
}

static void test_rounding(void **state)
{
    (void)state;
    /* FP16: ties to even, overflow, subnormals */
    assert_int_equal(round_through(CUDA_R_16F, 1.0f + 0x1p-11f), 0x3c00);
    assert_int_equal(round_through(CUDA_R_16F, 1.0f + 3 * 0x1p-11f), 0x3c02);
    assert_int_equal(round_through(CUDA_R_16F, -(1.0f + 0x1p-10f)), 0xbc01);
    assert_int_equal(round_through(CUDA_R_16F, 65504.0f), 0x7bff);
    assert_int_equal(round_through(CUDA_R_16F, 65520.0f), 0x7c00);
    assert_int_equal(round_through(CUDA_R_16F, 0x1p-25f), 0x0000);
    assert_int_equal(round_through(CUDA_R_16F, 3 * 0x1p-25f), 0x0002);
    assert_int_equal(round_through(CUDA_R_16F, 0x1p-14f - 0x1p-26f), 0x0400);
    /* BF16 */
    assert_int_equal(round_through(CUDA_R_16BF, 1.0f + 0x1p-8f), 0x3f80);
    assert_int_equal(round_through(CUDA_R_16BF, 1.0f + 3 * 0x1p-8f), 0x3f82);
    assert_int_equal(round_through(CUDA_R_16BF, -2.0f - 0x1p-6f), 0xc001);
    assert_int_equal(round_through(CUDA_R_16BF, INFINITY), 0x7f80);
}

/* ---- statuses ------------------------------------------------------------ */

static void test_statuses(void **state)
{
    (void)state;
    float one = 1.0f;
    /* operands that fault if touched */
    static volatile uintptr_t bad_address = 0x10;
    const void *bad = (const void *)bad_address;
    void *badc = (void *)bad_address;
#define EX(h, ta, m, lda, al, at, ct, comp, algo)                                                                   \
    cublasGemmEx(h, ta, CUBLAS_OP_N, m, 4, 4, al, bad, at, lda, bad, at, 4, &one, badc, ct, 4, comp, algo)
    assert_int_equal(EX(NULL, CUBLAS_OP_N, 4, 4, &one, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(EX(g_h, CUBLAS_OP_N, -1, 4, &one, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(EX(g_h, (cublasOperation_t)7, 4, 4, &one, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(EX(g_h, CUBLAS_OP_N, 4, 3, &one, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(EX(g_h, CUBLAS_OP_N, 4, 4, NULL, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(EX(g_h, CUBLAS_OP_N, 4, 4, &one, CUDA_R_32F, CUDA_R_32F, (cublasComputeType_t)1234,
                        CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(EX(g_h, CUBLAS_OP_N, 4, 4, &one, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, (cublasGemmAlgo_t)50),
                     CUBLAS_STATUS_INVALID_VALUE);
    /* valid but not supported here, or not at all */
    assert_int_equal(EX(g_h, CUBLAS_OP_N, 4, 4, &one, CUDA_R_32F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_NOT_SUPPORTED);
    assert_int_equal(EX(g_h, CUBLAS_OP_N, 4, 4, &one, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F_FAST_TF32,
                        CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_NOT_SUPPORTED);
    assert_int_equal(EX(g_h, CUBLAS_OP_N, 4, 4, &one, CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_NOT_SUPPORTED);
    assert_int_equal(EX(g_h, CUBLAS_OP_N, 4, 4, &one, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_16F, CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_NOT_SUPPORTED);
    assert_int_equal(cublasSgemmEx(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, bad, CUDA_R_16F, 4, bad, CUDA_R_32F,
                                   4, &one, badc, CUDA_R_32F, 4),
                     CUBLAS_STATUS_NOT_SUPPORTED);
    /* negative batch counts */
    assert_int_equal(cublasGemmStridedBatchedEx(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, bad, CUDA_R_32F, 4, 16,
                                                bad, CUDA_R_32F, 4, 16, &one, badc, CUDA_R_32F, 4, 16, -1,
                                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasSgemmBatched(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, (const float *const *)bad, 4,
                                        (const float *const *)bad, 4, &one, (float *const *)badc, 4, -1),
                     CUBLAS_STATUS_INVALID_VALUE);
    /* empty problems succeed without touching anything */
    assert_int_equal(cublasGemmBatchedEx(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, (const void *const *)bad,
                                         CUDA_R_32F, 4, (const void *const *)bad, CUDA_R_32F, 4, &one,
                                         (void *const *)badc, CUDA_R_32F, 4, 0, CUBLAS_COMPUTE_32F,
                                         CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(EX(g_h, CUBLAS_OP_N, 0, 4, &one, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_SUCCESS);
#undef EX
}

/* ---- faults (child processes) -------------------------------------------- */

/* A pointer array listing a matrix that has been freed. */
static int child_freed_in_array(void)
{
    cublasHandle_t h;
    CHILD_CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
    float *m[3], **arr;
    for (int i = 0; i < 3; i++)
        CHILD_CHECK(cudaMalloc((void **)&m[i], 16 * sizeof(float)) == cudaSuccess);
    CHILD_CHECK(cudaMalloc((void **)&arr, 3 * sizeof(float *)) == cudaSuccess);
    float *list[3] = {m[0], m[1], m[2]};
    CHILD_CHECK(cudaMemcpy(arr, list, sizeof list, cudaMemcpyHostToDevice) == cudaSuccess);
    CHILD_CHECK(cudaFree(m[1]) == cudaSuccess);
    float one = 1.0f;
    /* C = A * A for batch 1, C = m[1] ... */
    cublasSgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, (const float *const *)arr, 4,
                       (const float *const *)arr, 4, &one, arr, 4, 3);
    cudaDeviceSynchronize();
    return 0;
}

/* The pointer array itself in host memory: the kernel cannot read it. */
static int child_host_array(void)
{
    cublasHandle_t h;
    CHILD_CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
    float *m;
    CHILD_CHECK(cudaMalloc((void **)&m, 16 * sizeof(float)) == cudaSuccess);
    const void *list[1] = {m};
    float one = 1.0f;
    cublasGemmBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, list, CUDA_R_32F, 4, list, CUDA_R_32F, 4, &one,
                        (void *const *)list, CUDA_R_32F, 4, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    cudaDeviceSynchronize();
    return 0;
}

/* A strided batch whose last C ends one element past its allocation. */
static int child_strided_short(void)
{
    cublasHandle_t h;
    CHILD_CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
    float *a, *c;
    CHILD_CHECK(cudaMalloc((void **)&a, 16 * sizeof(float)) == cudaSuccess);
    CHILD_CHECK(cudaMalloc((void **)&c, 512) == cudaSuccess);
    float one = 1.0f, zero = 0.0f;
    /* 8 entries of 16 floats: 512 bytes, shifted by one element */
    cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, a, CUDA_R_32F, 4, 0, a, CUDA_R_32F, 4, 0,
                               &zero, c + 1, CUDA_R_32F, 4, 16, 8, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    cudaDeviceSynchronize();
    return 0;
}

/* The same batch within bounds: no fault (the control of the above). */
static int child_strided_fits(void)
{
    cublasHandle_t h;
    CHILD_CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
    float *a, *c;
    CHILD_CHECK(cudaMalloc((void **)&a, 16 * sizeof(float)) == cudaSuccess);
    CHILD_CHECK(cudaMalloc((void **)&c, 512) == cudaSuccess);
    float one = 1.0f, zero = 0.0f;
    CHILD_CHECK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, a, CUDA_R_32F, 4, 0, a,
                                           CUDA_R_32F, 4, 0, &zero, c, CUDA_R_32F, 4, 16, 8, CUBLAS_COMPUTE_32F,
                                           CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
    CHILD_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    CHILD_CHECK(cublasDestroy(h) == CUBLAS_STATUS_SUCCESS);
    return 0;
}

static void test_faults(void **state)
{
    (void)state;
    assert_true(CHILD_SEGV(sim_child_run(NULL, "freed_in_array")));
    assert_true(CHILD_SEGV(sim_child_run(NULL, "host_array")));
    assert_true(CHILD_SEGV(sim_child_run(NULL, "strided_short")));
    assert_true(CHILD_OK(sim_child_run(NULL, "strided_fits")));
}

/* ---- cost: a batch costs its GEMMs ---------------------------------------- */

static float timed(cudaEvent_t e0, cudaEvent_t e1)
{
    float ms = 0;
    assert_int_equal(cudaEventSynchronize(e1), cudaSuccess);
    assert_int_equal(cudaEventElapsedTime(&ms, e0, e1), cudaSuccess);
    return ms;
}

/* On the K40 profile (15 SMs) a 1920 x 128 output is exactly one wave of
 * 128 x 128 tiles, so a batch of 8 is 8 full waves: 8 times the math of one
 * GEMM, less the 7 launches it saves. */
static int child_batch_cost(void)
{
    cublasHandle_t h;
    CHILD_CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
    enum { M = 1920, N = 128, K = 1024, B = 8 };
    float *a, *b, *c;
    CHILD_CHECK(cudaMalloc((void **)&a, (size_t)M * K * 4) == cudaSuccess);
    CHILD_CHECK(cudaMalloc((void **)&b, (size_t)K * N * 4) == cudaSuccess);
    CHILD_CHECK(cudaMalloc((void **)&c, (size_t)M * N * 4 * B) == cudaSuccess);
    float one = 1.0f, zero = 0.0f;
    cudaEvent_t e0, e1, e2;
    cudaEventCreate(&e0), cudaEventCreate(&e1), cudaEventCreate(&e2);
    cudaEventRecord(e0, NULL);
    CHILD_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &one, a, CUDA_R_32F, M, b, CUDA_R_32F, K, &zero, c,
                             CUDA_R_32F, M, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
    cudaEventRecord(e1, NULL);
    CHILD_CHECK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &one, a, CUDA_R_32F, M, 0, b,
                                           CUDA_R_32F, K, 0, &zero, c, CUDA_R_32F, M, (long long)M * N, B,
                                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
    cudaEventRecord(e2, NULL);
    float one_ms = timed(e0, e1), batch_ms = timed(e1, e2);
    fprintf(stderr, "one %.4f ms, batch of %d %.4f ms\n", one_ms, B, batch_ms);
    CHILD_CHECK(one_ms > 0.1f);
    CHILD_CHECK(batch_ms > 0.95f * B * one_ms && batch_ms <= 1.0f * B * one_ms);
    CHILD_CHECK(cublasDestroy(h) == CUBLAS_STATUS_SUCCESS);
    return 0;
}

static void test_batch_cost(void **state)
{
    (void)state;
    static const char *const env[] = {"SIMGPU_COMPUTE=0", "SIMGPU_PROFILE=k40", NULL};
    assert_true(CHILD_OK(sim_child_run(env, "batch_cost")));
}

int main(int argc, char **argv)
{
    static const struct sim_child_body all[] = {
        {"freed_in_array", child_freed_in_array}, {"host_array", child_host_array},
        {"strided_short", child_strided_short},   {"strided_fits", child_strided_fits},
        {"batch_cost", child_batch_cost},
    };
    sim_child_main(argc, argv, all, sizeof all / sizeof all[0]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemmex_fp32),     cmocka_unit_test(test_strided_batched_ex),
        cmocka_unit_test(test_pointer_batched), cmocka_unit_test(test_half_bf16_exact),
        cmocka_unit_test(test_rounding),        cmocka_unit_test(test_statuses),
        cmocka_unit_test(test_faults),          cmocka_unit_test(test_batch_cost),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
