/*
 * sn_gemm_probe.c — a program that does its matrix products the way
 * frameworks do, through cublasGemmEx, cublasGemmStridedBatchedEx,
 * cublasGemmBatchedEx and cublasSgemmBatched, over many matrices, and
 * prints a checksum of every output. test_sn_gemm_ex.sh runs it without
 * libsn and under manage mode with a budget of about a third of its data
 * (which it prints as "live_bytes"), and requires the same output byte for
 * byte: an operand not made resident faults, an output written while
 * resident and lost at eviction changes a checksum. The handle works in a
 * workspace of the program's own (cublasSetWorkspace, as PyTorch does),
 * which the GEMMs may write at any call, until cublasSetStream returns it
 * to its default one and the program frees its buffer.
 *
 * Phase 1 (GemmEx, FP32 and FP16 inputs) and phase 2 (strided batches
 * reading phase 1's outputs) run twice over all their matrices, the second
 * round accumulating into the outputs of the first (beta = 1), so every
 * output is evicted and read back. Phase 3 (pointer arrays, filled from the
 * host) runs after the others' memory is freed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#define DIM 128
#define MAT_ELEMS (DIM * DIM)
#define MAT_BYTES (MAT_ELEMS * sizeof(float))
#define NGEMM 40
#define NHALF 8
#define NSTRIDED 4
#define SBATCH 8
#define NPTR 8
#define WS_BYTES (1u << 20)

static uint64_t g_rng = 0x853c49e6748fea9bull;
static size_t g_live;

static float rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (float)((g_rng >> 40) % 2001) / 1000.0f - 1.0f;
}

#define CK(x)                                                                  \
    do {                                                                       \
        int rc_ = (int)(x);                                                    \
        if (rc_ != 0) {                                                        \
            fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #x, rc_); \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

static void *dev_alloc(size_t bytes)
{
    void *p;
    CK(cudaMalloc(&p, bytes));
    g_live += bytes;
    return p;
}

static void dev_free(void *p, size_t bytes)
{
    CK(cudaFree(p));
    g_live -= bytes;
}

static void *dev_random(size_t nfloats)
{
    float *h = malloc(nfloats * sizeof(float));
    for (size_t i = 0; i < nfloats; i++)
        h[i] = rnd();
    void *d = dev_alloc(nfloats * sizeof(float));
    CK(cudaMemcpy(d, h, nfloats * sizeof(float), cudaMemcpyHostToDevice));
    free(h);
    return d;
}

/* FP16 of small multiples of 1/8: exact, written out bit by bit. */
static void *dev_random_half(size_t n)
{
    uint16_t *h = malloc(n * sizeof(uint16_t));
    for (size_t i = 0; i < n; i++) {
        int v = (int)(rnd() * 8.0f); /* -8..8 eighths */
        uint16_t sign = v < 0 ? 0x8000 : 0;
        unsigned a = (unsigned)(v < 0 ? -v : v);
        if (!a) {
            h[i] = 0;
            continue;
        }
        int e = 0;
        while ((a >> (e + 1)) != 0)
            e++;
        /* a * 2^-3 = 2^(e-3) * (1 + frac) */
        h[i] = (uint16_t)(sign | (unsigned)(e - 3 + 15) << 10 | ((a - (1u << e)) << 10 >> e));
    }
    void *d = dev_alloc(n * sizeof(uint16_t));
    CK(cudaMemcpy(d, h, n * sizeof(uint16_t), cudaMemcpyHostToDevice));
    free(h);
    return d;
}

static void checksum(const char *what, int i, const void *dev, size_t bytes)
{
    unsigned char *h = malloc(bytes);
    CK(cudaMemcpy(h, dev, bytes, cudaMemcpyDeviceToHost));
    uint64_t f = 0xcbf29ce484222325ull;
    for (size_t j = 0; j < bytes; j++)
        f = (f ^ h[j]) * 0x100000001b3ull;
    printf("%s %d %016llx\n", what, i, (unsigned long long)f);
    free(h);
}

int main(void)
{
    cublasHandle_t h;
    CK(cublasCreate(&h));
    /* a workspace of the program's own, as PyTorch gives each handle */
    void *ws = dev_alloc(WS_BYTES);
    CK(cublasSetWorkspace(h, ws, WS_BYTES));
    const float one = 1.0f, zero = 0.0f, half = 0.5f, scale = 1.0f / DIM;

    /* phase 1 and 2 operands */
    void *a[NGEMM], *b[NGEMM], *c[NGEMM], *ha[NHALF], *hb[NHALF], *hc[NHALF], *sa[NSTRIDED], *sc[NSTRIDED];
    for (int i = 0; i < NGEMM; i++)
        a[i] = dev_random(MAT_ELEMS), b[i] = dev_random(MAT_ELEMS), c[i] = dev_random(MAT_ELEMS);
    for (int i = 0; i < NHALF; i++)
        ha[i] = dev_random_half(MAT_ELEMS), hb[i] = dev_random_half(MAT_ELEMS), hc[i] = dev_random(MAT_ELEMS);
    for (int i = 0; i < NSTRIDED; i++)
        sa[i] = dev_random((size_t)MAT_ELEMS * SBATCH), sc[i] = dev_alloc(MAT_BYTES * SBATCH);
    printf("live_bytes %zu\n", g_live);

    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < NGEMM; i++) {
            /* first round: even outputs overwritten, odd ones blended; then accumulated */
            const float *beta = round ? &one : i % 2 ? &half : &zero;
            cublasOperation_t ta = i % 3 == 1 ? CUBLAS_OP_T : CUBLAS_OP_N;
            CK(cublasGemmEx(h, ta, CUBLAS_OP_N, DIM, DIM, DIM, &scale, a[i], CUDA_R_32F, DIM, b[i], CUDA_R_32F, DIM,
                            beta, c[i], CUDA_R_32F, DIM,
                            i % 4 == 3 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        }
        for (int i = 0; i < NHALF; i++)
            CK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, DIM, DIM, DIM, &scale, ha[i], CUDA_R_16F, DIM, hb[i],
                            CUDA_R_16F, DIM, round ? &one : &zero, hc[i], CUDA_R_32F, DIM, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
        /* strided batches: each entry of sa times one of phase 1's outputs
         * (stride 0), into the dense batch sc */
        for (int i = 0; i < NSTRIDED; i++)
            CK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, DIM, DIM, DIM, &scale, sa[i], CUDA_R_32F, DIM,
                                          MAT_ELEMS, c[(i * 7 + round) % NGEMM], CUDA_R_32F, DIM, 0,
                                          round ? &one : &zero, sc[i], CUDA_R_32F, DIM, MAT_ELEMS, SBATCH,
                                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    for (int i = 0; i < NGEMM; i++)
        checksum("gemmex", i, c[i], MAT_BYTES);
    for (int i = 0; i < NHALF; i++)
        checksum("gemmex_fp16", i, hc[i], MAT_BYTES);
    for (int i = 0; i < NSTRIDED; i++)
        checksum("strided_batched_ex", i, sc[i], MAT_BYTES * SBATCH);

    /* phase 3: keep a few of phase 1's outputs as inputs, free the rest */
    void *pa[NPTR], *pb[NPTR], *pc[NPTR], *pd[NPTR];
    for (int i = 0; i < NPTR; i++)
        pa[i] = c[i], pb[i] = c[NGEMM - 1 - i];
    for (int i = NPTR; i < NGEMM - NPTR; i++)
        dev_free(c[i], MAT_BYTES);
    for (int i = 0; i < NGEMM; i++)
        dev_free(a[i], MAT_BYTES), dev_free(b[i], MAT_BYTES);
    for (int i = 0; i < NHALF; i++)
        dev_free(ha[i], MAT_ELEMS * 2), dev_free(hb[i], MAT_ELEMS * 2), dev_free(hc[i], MAT_BYTES);
    for (int i = 0; i < NSTRIDED; i++)
        dev_free(sa[i], MAT_BYTES * SBATCH), dev_free(sc[i], MAT_BYTES * SBATCH);
    for (int i = 0; i < NPTR; i++)
        pc[i] = dev_random(MAT_ELEMS), pd[i] = dev_alloc(MAT_BYTES);
    void **arr_a = dev_alloc(sizeof pa), **arr_b = dev_alloc(sizeof pb), **arr_c = dev_alloc(sizeof pc);
    void **arr_d = dev_alloc(sizeof pd);
    CK(cudaMemcpy(arr_a, pa, sizeof pa, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(arr_b, pb, sizeof pb, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(arr_c, pc, sizeof pc, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(arr_d, pd, sizeof pd, cudaMemcpyHostToDevice));
    /* back to the default workspace (cublasSetStream always returns to
     * it), so the program's own may go; freed after the allocations above,
     * so that its addresses stay unused */
    CK(cublasSetStream(h, NULL));
    dev_free(ws, WS_BYTES);
    /* pc = A B / DIM + pc / 2; then pd = pc^T pa / DIM */
    CK(cublasGemmBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, DIM, DIM, DIM, &scale, (const void *const *)arr_a,
                           CUDA_R_32F, DIM, (const void *const *)arr_b, CUDA_R_32F, DIM, &half, (void *const *)arr_c,
                           CUDA_R_32F, DIM, NPTR, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CK(cublasSgemmBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, DIM, DIM, DIM, &scale, (const float *const *)arr_c, DIM,
                          (const float *const *)arr_a, DIM, &zero, (float *const *)arr_d, DIM, NPTR));
    for (int i = 0; i < NPTR; i++)
        checksum("gemm_batched_ex", i, pc[i], MAT_BYTES);
    for (int i = 0; i < NPTR; i++)
        checksum("sgemm_batched", i, pd[i], MAT_BYTES);
    CK(cublasDestroy(h));
    printf("done\n");
    return 0;
}
