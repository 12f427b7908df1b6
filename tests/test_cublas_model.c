/*
 * test_cublas_model.c — the simulated cuBLAS's cost model and its
 * compute-off mode, observed the way a program would: through CUDA events.
 *
 * Every body runs in a fresh process on a simulated H100 with
 * SIMGPU_COMPUTE=0, so GEMMs of 8192^3 cost nothing on this machine while
 * their modelled time is what is checked: math-bound calls scale with their
 * FLOPs and are bounded by the profile's peak rate, wave quantization makes
 * one tile too many cost a whole extra wave, memory-bound calls scale with
 * their bytes and pay for strided access by DRAM sector. The same mode
 * proves that no routine touches device memory when compute is off (the
 * simulated device keeps such memory inaccessible, so a touch would fault).
 *
 * The bounds use the H100 profile's figures (66.9 TFLOP/s FP32, 3.35 TB/s;
 README.md, "Device profiles").
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

#define H100_FP32_FLOPS 66.9e12
#define H100_MEM_BW 3350e9

static const char *const k_env[] = {"SIMGPU_COMPUTE=0", "SIMGPU_PROFILE=h100", NULL};

struct timed {
    cublasHandle_t h;
    cudaStream_t s;
    cudaEvent_t start, stop;
};

static int timed_open(struct timed *t)
{
    CHILD_CHECK(cublasCreate(&t->h) == CUBLAS_STATUS_SUCCESS);
    CHILD_CHECK(cudaStreamCreateWithFlags(&t->s, cudaStreamNonBlocking) == cudaSuccess);
    CHILD_CHECK(cublasSetStream(t->h, t->s) == CUBLAS_STATUS_SUCCESS);
    CHILD_CHECK(cudaEventCreate(&t->start) == cudaSuccess && cudaEventCreate(&t->stop) == cudaSuccess);
    return 0;
}

static int timed_close(struct timed *t)
{
    CHILD_CHECK(cublasDestroy(t->h) == CUBLAS_STATUS_SUCCESS);
    CHILD_CHECK(cudaEventDestroy(t->start) == cudaSuccess && cudaEventDestroy(t->stop) == cudaSuccess);
    CHILD_CHECK(cudaStreamDestroy(t->s) == cudaSuccess);
    return 0;
}

static void timed_begin(struct timed *t) { cudaEventRecord(t->start, t->s); }

/* Seconds of simulated device time since timed_begin. */
static double timed_end(struct timed *t)
{
    float ms = -1;
    cudaEventRecord(t->stop, t->s);
    cudaEventSynchronize(t->stop);
    cudaEventElapsedTime(&ms, t->start, t->stop);
    return ms * 1e-3;
}

static float *dalloc(size_t bytes)
{
    void *p = NULL;
    return cudaMalloc(&p, bytes) == cudaSuccess ? p : NULL;
}

/* Modelled seconds of one m x n x k SGEMM (beta == 0). */
static double gemm_seconds(struct timed *t, int m, int n, int k)
{
    float *a = dalloc((size_t)m * k * 4), *b = dalloc((size_t)k * n * 4), *c = dalloc((size_t)m * n * 4);
    if (!a || !b || !c)
        return -1;
    float alpha = 1.0f, beta = 0.0f;
    timed_begin(t);
    if (cublasSgemm(t->h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a, m, b, k, &beta, c, m) !=
        CUBLAS_STATUS_SUCCESS)
        return -1;
    double s = timed_end(t);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    return s;
}

/* Modelled seconds of one SAXPY over n elements at stride inc. */
static double saxpy_seconds(struct timed *t, int n, int inc)
{
    size_t bytes = (size_t)n * (size_t)inc * 4;
    float *x = dalloc(bytes), *y = dalloc(bytes);
    if (!x || !y)
        return -1;
    float alpha = 2.0f;
    timed_begin(t);
    if (cublasSaxpy(t->h, n, &alpha, x, inc, y, inc) != CUBLAS_STATUS_SUCCESS)
        return -1;
    double s = timed_end(t);
    cudaFree(x);
    cudaFree(y);
    return s;
}

/* ---- bodies (run in a child process) ------------------------------------- */

static int hopper_default_workspace(void)
{
    size_t f0, f1, total;
    cublasHandle_t h;
    CHILD_CHECK(cudaMemGetInfo(&f0, &total) == cudaSuccess);
    CHILD_CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
    CHILD_CHECK(cudaMemGetInfo(&f1, &total) == cudaSuccess);
    fprintf(stderr, "default workspace on h100: %zu bytes\n", f0 - f1);
    CHILD_CHECK(f0 - f1 == (size_t)32 << 20);
    CHILD_CHECK(cublasDestroy(h) == CUBLAS_STATUS_SUCCESS);
    return 0;
}

static int gemm_time_follows_flops(void)
{
    struct timed t;
    CHILD_CHECK(timed_open(&t) == 0);
    double big = gemm_seconds(&t, 8192, 8192, 8192), half = gemm_seconds(&t, 4096, 4096, 4096);
    double ideal = 2.0 * 8192.0 * 8192.0 * 8192.0 / H100_FP32_FLOPS;
    fprintf(stderr, "sgemm 8192^3: %.3f ms (peak-rate bound %.3f ms), 4096^3: %.3f ms, ratio %.2f\n", big * 1e3,
            ideal * 1e3, half * 1e3, big / half);
    CHILD_CHECK(big > ideal && big < 2 * ideal);
    CHILD_CHECK(big / half > 7.5 && big / half < 8.5);
    return timed_close(&t);
}

/* 12 x 11 tiles of 128 x 128 fill the 132 SMs exactly once; one more row
 * makes a 13th row of tiles and a second, nearly empty, wave. */
static int gemm_wave_quantization(void)
{
    struct timed t;
    CHILD_CHECK(timed_open(&t) == 0);
    double full = gemm_seconds(&t, 12 * 128, 11 * 128, 4096);
    double over = gemm_seconds(&t, 12 * 128 + 1, 11 * 128, 4096);
    fprintf(stderr, "one wave: %.3f ms, one tile row more: %.3f ms (x%.2f)\n", full * 1e3, over * 1e3, over / full);
    CHILD_CHECK(over / full > 1.8 && over / full < 2.2);
    return timed_close(&t);
}

static int saxpy_time_follows_bytes(void)
{
    struct timed t;
    CHILD_CHECK(timed_open(&t) == 0);
    int n = 1 << 26;
    double big = saxpy_seconds(&t, n, 1), half = saxpy_seconds(&t, n / 2, 1);
    double ideal = 12.0 * n / H100_MEM_BW;
    fprintf(stderr, "saxpy 2^26: %.1f us (bandwidth bound %.1f us), ratio to 2^25 %.2f\n", big * 1e6, ideal * 1e6,
            big / half);
    CHILD_CHECK(big > ideal && big < 2 * ideal);
    CHILD_CHECK(big / half > 1.9 && big / half < 2.1);
    /* A stride of 8 floats (32 bytes) reads a whole DRAM sector per element. */
    int m = 1 << 22;
    double strided = saxpy_seconds(&t, m, 8), unit = saxpy_seconds(&t, m, 1);
    fprintf(stderr, "saxpy 2^22 at stride 8: %.1f us, unit stride %.1f us (x%.2f)\n", strided * 1e6, unit * 1e6,
            strided / unit);
    CHILD_CHECK(strided / unit > 6 && strided / unit < 8.5);
    return timed_close(&t);
}

/* Every routine, host and device pointer mode: with compute off the device
 * memory stays inaccessible, so any read or write would fault here. */
static int compute_off_touches_nothing(void)
{
    cublasHandle_t h;
    CHILD_CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
    int n = 64;
    float *a = dalloc(n * n * 4), *b = dalloc(n * n * 4), *c = dalloc(n * n * 4), *sc = dalloc(8);
    CHILD_CHECK(a && b && c && sc);
    float two = 2.0f, half = 0.5f, r = -1;
    const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T;
    for (int mode = 0; mode < 2; mode++) {
        const float *al = mode ? sc : &two, *be = mode ? sc + 1 : &half;
        float *res = mode ? sc : &r;
        CHILD_CHECK(cublasSetPointerMode(h, mode ? CUBLAS_POINTER_MODE_DEVICE : CUBLAS_POINTER_MODE_HOST) ==
                    CUBLAS_STATUS_SUCCESS);
        CHILD_CHECK(cublasSgemm(h, N, T, n, n, n, al, a, n, b, n, be, c, n) == CUBLAS_STATUS_SUCCESS);
        CHILD_CHECK(cublasSgemmStridedBatched(h, T, N, 8, 8, 8, al, a, 8, 64, b, 8, 64, be, c, 8, 64, 4) ==
                    CUBLAS_STATUS_SUCCESS);
        CHILD_CHECK(cublasSgemv(h, T, n, n, al, a, n, b, 1, be, c, 1) == CUBLAS_STATUS_SUCCESS);
        CHILD_CHECK(cublasSgeam(h, T, N, n, n, al, a, n, be, b, n, c, n) == CUBLAS_STATUS_SUCCESS);
        CHILD_CHECK(cublasSaxpy(h, n, al, a, 1, b, -1) == CUBLAS_STATUS_SUCCESS);
        CHILD_CHECK(cublasSscal(h, n, al, a, 2) == CUBLAS_STATUS_SUCCESS);
        CHILD_CHECK(cublasScopy(h, n, a, 1, b, 1) == CUBLAS_STATUS_SUCCESS);
        CHILD_CHECK(cublasSdot(h, n, a, 1, b, 1, res) == CUBLAS_STATUS_SUCCESS);
        CHILD_CHECK(cublasSasum(h, n, a, 1, res) == CUBLAS_STATUS_SUCCESS);
        CHILD_CHECK(cublasSnrm2(h, n, a, 1, res) == CUBLAS_STATUS_SUCCESS);
    }
    CHILD_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    CHILD_CHECK(cublasDestroy(h) == CUBLAS_STATUS_SUCCESS);
    float *buffers[] = {a, b, c, sc};
    for (int i = 0; i < 4; i++)
        CHILD_CHECK(cudaFree(buffers[i]) == cudaSuccess);
    return 0;
}

/* cuBLAS does not use TF32 unless asked: the default math mode runs an
 * SGEMM at the FP32 rate, CUBLAS_TF32_TENSOR_OP_MATH on the h100's TF32
 * tensor cores, and SIMGPU_TF32=0 (like NVIDIA_TF32_OVERRIDE=0) refuses
 * that request. TEST_EXPECT_TF32=1: the request must pay off. */
static int gemm_tf32_math_mode(void)
{
    struct timed t;
    CHILD_CHECK(timed_open(&t) == 0);
    double fp32 = gemm_seconds(&t, 8192, 8192, 8192);
    double ideal = 2.0 * 8192.0 * 8192.0 * 8192.0 / H100_FP32_FLOPS;
    CHILD_CHECK(fp32 > ideal);
    CHILD_CHECK(cublasSetMathMode(t.h, CUBLAS_TF32_TENSOR_OP_MATH) == CUBLAS_STATUS_SUCCESS);
    double tf32 = gemm_seconds(&t, 8192, 8192, 8192);
    const char *e = getenv("TEST_EXPECT_TF32");
    fprintf(stderr, "sgemm 8192^3: default %.3f ms, TF32 mode %.3f ms\n", fp32 * 1e3, tf32 * 1e3);
    if (e && !strcmp(e, "1"))
        CHILD_CHECK(tf32 < fp32 / 4);
    else
        CHILD_CHECK(tf32 == fp32);
    return timed_close(&t);
}

static const struct sim_child_body k_children[] = {
    {"gemm_tf32_math_mode", gemm_tf32_math_mode},
    {"hopper_default_workspace", hopper_default_workspace},
    {"gemm_time_follows_flops", gemm_time_follows_flops},
    {"gemm_wave_quantization", gemm_wave_quantization},
    {"saxpy_time_follows_bytes", saxpy_time_follows_bytes},
    {"compute_off_touches_nothing", compute_off_touches_nothing},
};

static void run_child(const char *name)
{
    int st = sim_child_run(k_env, name);
    if (!CHILD_OK(st))
        fail_msg("%s failed (wait status %#x)", name, st);
}

static void test_hopper_default_workspace(void **state) { (void)state; run_child("hopper_default_workspace"); }
static void test_gemm_time_follows_flops(void **state) { (void)state; run_child("gemm_time_follows_flops"); }
static void test_gemm_wave_quantization(void **state) { (void)state; run_child("gemm_wave_quantization"); }
static void test_saxpy_time_follows_bytes(void **state) { (void)state; run_child("saxpy_time_follows_bytes"); }
static void test_compute_off_touches_nothing(void **state) { (void)state; run_child("compute_off_touches_nothing"); }

static void test_gemm_tf32_math_mode(void **state)
{
    (void)state;
    const char *on[] = {"SIMGPU_COMPUTE=0", "SIMGPU_PROFILE=h100", "TEST_EXPECT_TF32=1", NULL};
    const char *off[] = {"SIMGPU_COMPUTE=0", "SIMGPU_PROFILE=h100", "SIMGPU_TF32=0", NULL};
    assert_true(CHILD_OK(sim_child_run(on, "gemm_tf32_math_mode")));
    assert_true(CHILD_OK(sim_child_run(off, "gemm_tf32_math_mode")));
}

int main(int argc, char **argv)
{
    sim_child_main(argc, argv, k_children, sizeof k_children / sizeof k_children[0]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hopper_default_workspace),
        cmocka_unit_test(test_gemm_time_follows_flops),
        cmocka_unit_test(test_gemm_wave_quantization),
        cmocka_unit_test(test_saxpy_time_follows_bytes),
        cmocka_unit_test(test_compute_off_touches_nothing),
        cmocka_unit_test(test_gemm_tf32_math_mode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
