/*
 * test_cublas_api.c — the cuBLAS context and calling conventions on the
 * simulated device, as an unmodified CUDA program sees them: the default
 * workspace cublasCreate allocates, stream / workspace / pointer / math mode
 * handling, status codes for invalid arguments (checked before any memory is
 * touched), residency faults on operands that run past their allocation,
 * and how calls sit on the timeline (GEMMs are asynchronous, reductions to
 * host memory and cublasDestroy wait for the device).
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

/* A pointer that faults if anything dereferences it: argument checks must
 * reject a call before looking at its operands. */
#define BOGUS ((float *)(uintptr_t)0x10)

static size_t free_bytes(void)
{
    size_t f = 0, t = 0;
    assert_int_equal(cudaMemGetInfo(&f, &t), cudaSuccess);
    return f;
}

static size_t expected_default_workspace(void)
{
    struct cudaDeviceProp prop;
    assert_int_equal(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
    return (size_t)(prop.major >= 9 ? 32 : 4) << 20;
}

static void *dmalloc(size_t bytes)
{
    void *p = NULL;
    assert_int_equal(cudaMalloc(&p, bytes), cudaSuccess);
    return p;
}

/* ---- context ------------------------------------------------------------- */

static void test_create_allocates_default_workspace(void **state)
{
    (void)state;
    size_t before = free_bytes();
    cublasHandle_t h;
    assert_int_equal(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(before - free_bytes(), expected_default_workspace());
    assert_int_equal(cublasDestroy(h), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(free_bytes(), before);
}

static void test_null_handles(void **state)
{
    (void)state;
    float one = 1.0f, r;
    assert_int_equal(cublasCreate(NULL), CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasDestroy(NULL), CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(cublasSetStream(NULL, NULL), CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(cublasSgemm(NULL, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, BOGUS, 1, BOGUS, 1, &one, BOGUS, 1),
                     CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(cublasSdot(NULL, 1, BOGUS, 1, BOGUS, 1, &r), CUBLAS_STATUS_NOT_INITIALIZED);
}

static void test_stream_and_modes(void **state)
{
    (void)state;
    cublasHandle_t h;
    cudaStream_t s, got = (cudaStream_t)1;
    assert_int_equal(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasGetStream(h, &got), CUBLAS_STATUS_SUCCESS);
    assert_null(got);
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    assert_int_equal(cublasSetStream(h, s), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasGetStream(h, &got), CUBLAS_STATUS_SUCCESS);
    assert_ptr_equal(got, s);
    assert_int_equal(cublasGetStream(h, NULL), CUBLAS_STATUS_INVALID_VALUE);

    cublasPointerMode_t pm;
    assert_int_equal(cublasGetPointerMode(h, &pm), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(pm, CUBLAS_POINTER_MODE_HOST);
    assert_int_equal(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasGetPointerMode(h, &pm), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(pm, CUBLAS_POINTER_MODE_DEVICE);
    assert_int_equal(cublasSetPointerMode(h, (cublasPointerMode_t)7), CUBLAS_STATUS_INVALID_VALUE);

    cublasMath_t mm;
    assert_int_equal(cublasGetMathMode(h, &mm), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(mm, CUBLAS_DEFAULT_MATH);
    assert_int_equal(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasGetMathMode(h, &mm), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(mm, CUBLAS_TF32_TENSOR_OP_MATH);
    assert_int_equal(cublasSetMathMode(h, (cublasMath_t)(CUBLAS_PEDANTIC_MATH |
                                                         CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSetMathMode(h, (cublasMath_t)77), CUBLAS_STATUS_INVALID_VALUE);

    int v = 0;
    assert_int_equal(cublasGetVersion(h, &v), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(v, CUBLAS_VERSION);
    assert_int_equal(cublasGetProperty(MAJOR_VERSION, &v), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(v, CUBLAS_VER_MAJOR);
    assert_string_equal(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE");
    assert_string_equal(cublasGetStatusString(CUBLAS_STATUS_SUCCESS), "success");
    assert_string_equal(cublasGetStatusName((cublasStatus_t)999), "<unknown>");

    void *ws = dmalloc(1 << 20);
    assert_int_equal(cublasSetWorkspace(h, (char *)ws + 4, 1024), CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasSetWorkspace(h, ws, 1 << 20), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasDestroy(h), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaFree(ws), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

/* ---- argument validation ------------------------------------------------- */

static void test_invalid_arguments(void **state)
{
    (void)state;
    cublasHandle_t h;
    assert_int_equal(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
    const float one = 1.0f;
    const float *o = &one;
    const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T, bad = (cublasOperation_t)17;
    const cublasStatus_t INV = CUBLAS_STATUS_INVALID_VALUE;

    /* Sgemm: sizes, operations, leading dimensions (max(1, rows)), scalars. */
    assert_int_equal(cublasSgemm(h, N, N, -1, 4, 4, o, BOGUS, 4, BOGUS, 4, o, BOGUS, 4), INV);
    assert_int_equal(cublasSgemm(h, N, N, 4, -1, 4, o, BOGUS, 4, BOGUS, 4, o, BOGUS, 4), INV);
    assert_int_equal(cublasSgemm(h, N, N, 4, 4, -1, o, BOGUS, 4, BOGUS, 4, o, BOGUS, 4), INV);
    assert_int_equal(cublasSgemm(h, bad, N, 4, 4, 4, o, BOGUS, 4, BOGUS, 4, o, BOGUS, 4), INV);
    assert_int_equal(cublasSgemm(h, N, CUBLAS_OP_CONJG, 4, 4, 4, o, BOGUS, 4, BOGUS, 4, o, BOGUS, 4), INV);
    assert_int_equal(cublasSgemm(h, N, N, 5, 4, 3, o, BOGUS, 4, BOGUS, 3, o, BOGUS, 5), INV);   /* lda < m */
    assert_int_equal(cublasSgemm(h, T, N, 5, 4, 3, o, BOGUS, 2, BOGUS, 3, o, BOGUS, 5), INV);   /* lda < k */
    assert_int_equal(cublasSgemm(h, N, N, 5, 4, 3, o, BOGUS, 5, BOGUS, 2, o, BOGUS, 5), INV);   /* ldb < k */
    assert_int_equal(cublasSgemm(h, N, T, 5, 4, 3, o, BOGUS, 5, BOGUS, 3, o, BOGUS, 5), INV);   /* ldb < n */
    assert_int_equal(cublasSgemm(h, N, N, 5, 4, 3, o, BOGUS, 5, BOGUS, 3, o, BOGUS, 4), INV);   /* ldc < m */
    assert_int_equal(cublasSgemm(h, N, N, 0, 4, 3, o, BOGUS, 0, BOGUS, 3, o, BOGUS, 1), INV);   /* lda < 1 */
    assert_int_equal(cublasSgemm(h, N, N, 5, 4, 3, NULL, BOGUS, 5, BOGUS, 3, o, BOGUS, 5), INV);
    assert_int_equal(cublasSgemm(h, N, N, 5, 4, 3, o, BOGUS, 5, BOGUS, 3, NULL, BOGUS, 5), INV);
    assert_int_equal(cublasSgemmStridedBatched(h, N, N, 5, 4, 3, o, BOGUS, 5, 15, BOGUS, 3, 12, o, BOGUS, 5, 20, -1),
                     INV);
    assert_int_equal(cublasSgemmStridedBatched(h, N, N, 5, 4, 3, o, BOGUS, 4, 15, BOGUS, 3, 12, o, BOGUS, 5, 20, 2),
                     INV);
    /* Nothing to do is success, operands untouched. */
    assert_int_equal(cublasSgemm(h, N, N, 0, 4, 3, o, BOGUS, 1, BOGUS, 3, o, BOGUS, 1), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSgemmStridedBatched(h, N, N, 5, 4, 3, o, BOGUS, 5, 15, BOGUS, 3, 12, o, BOGUS, 5, 20, 0),
                     CUBLAS_STATUS_SUCCESS);

    /* Sgemv: zero strides, lda, operation, scalars. */
    assert_int_equal(cublasSgemv(h, N, 5, 4, o, BOGUS, 5, BOGUS, 0, o, BOGUS, 1), INV);
    assert_int_equal(cublasSgemv(h, N, 5, 4, o, BOGUS, 5, BOGUS, 1, o, BOGUS, 0), INV);
    assert_int_equal(cublasSgemv(h, T, 5, 4, o, BOGUS, 4, BOGUS, 1, o, BOGUS, 1), INV);
    assert_int_equal(cublasSgemv(h, bad, 5, 4, o, BOGUS, 5, BOGUS, 1, o, BOGUS, 1), INV);
    assert_int_equal(cublasSgemv(h, N, -5, 4, o, BOGUS, 5, BOGUS, 1, o, BOGUS, 1), INV);
    assert_int_equal(cublasSgemv(h, N, 5, 4, o, BOGUS, 5, BOGUS, 1, NULL, BOGUS, 1), INV);

    /* Sgeam: leading dimensions of the (transposed) operands, in-place forms. */
    float *c = dmalloc(64 * sizeof(float));
    assert_int_equal(cublasSgeam(h, T, N, 5, 4, o, BOGUS, 3, o, BOGUS, 5, BOGUS, 5), INV);   /* lda < n */
    assert_int_equal(cublasSgeam(h, N, N, 5, 4, o, BOGUS, 5, o, BOGUS, 4, BOGUS, 5), INV);   /* ldb < m */
    assert_int_equal(cublasSgeam(h, N, N, 5, 4, o, BOGUS, 5, o, BOGUS, 5, BOGUS, 4), INV);   /* ldc < m */
    assert_int_equal(cublasSgeam(h, N, N, -5, 4, o, BOGUS, 5, o, BOGUS, 5, BOGUS, 5), INV);
    assert_int_equal(cublasSgeam(h, T, N, 4, 4, o, c, 4, o, BOGUS, 4, c, 4), INV);            /* C = A^T */
    assert_int_equal(cublasSgeam(h, N, N, 4, 4, o, c, 5, o, BOGUS, 4, c, 4), INV);            /* lda != ldc */
    assert_int_equal(cublasSgeam(h, N, T, 4, 4, o, BOGUS, 4, o, c, 4, c, 4), INV);            /* C = B^T */
    assert_int_equal(cublasSgeam(h, N, N, 4, 4, NULL, BOGUS, 4, o, BOGUS, 4, c, 4), INV);

    /* Level 1: scalar and result pointers. */
    float r;
    assert_int_equal(cublasSaxpy(h, 4, NULL, BOGUS, 1, BOGUS, 1), INV);
    assert_int_equal(cublasSscal(h, 4, NULL, BOGUS, 1), INV);
    assert_int_equal(cublasSdot(h, 4, BOGUS, 1, BOGUS, 1, NULL), INV);
    assert_int_equal(cublasSnrm2(h, 4, BOGUS, 1, NULL), INV);
    assert_int_equal(cublasSasum(h, 4, BOGUS, 1, NULL), INV);
    /* n <= 0 touches nothing. */
    assert_int_equal(cublasSaxpy(h, 0, o, BOGUS, 1, BOGUS, 1), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasScopy(h, -3, BOGUS, 1, BOGUS, 1), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSdot(h, 0, BOGUS, 1, BOGUS, 1, &r), CUBLAS_STATUS_SUCCESS);

    assert_int_equal(cudaFree(c), cudaSuccess);
    assert_int_equal(cublasDestroy(h), CUBLAS_STATUS_SUCCESS);
}

/* ---- residency faults (run in a child: the fault ends the process) ------- */

/* C is 6 x 5 with ldc 8: its extent is 4 * 8 + 6 elements. The allocation
 * holds exactly that many minus `short_by`, at its end. */
static int gemm_with_c_short_by(int short_by)
{
    int m = 6, n = 5, k = 3, ldc = 8;
    size_t extent = (size_t)((n - 1) * ldc + m) * sizeof(float);
    char *base = NULL;
    cublasHandle_t h;
    CHILD_CHECK(cudaMalloc((void **)&base, 512) == cudaSuccess && cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
    float *a = NULL, *b = NULL;
    CHILD_CHECK(cudaMalloc((void **)&a, m * k * 4) == cudaSuccess && cudaMalloc((void **)&b, k * n * 4) == cudaSuccess);
    float *c = (float *)(base + 512 - (extent - (size_t)short_by * sizeof(float)));
    float alpha = 1.0f, beta = 0.0f;
    CHILD_CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a, m, b, k, &beta, c, ldc) ==
                CUBLAS_STATUS_SUCCESS);
    CHILD_CHECK(cublasDestroy(h) == CUBLAS_STATUS_SUCCESS);
    CHILD_CHECK(cudaFree(a) == cudaSuccess && cudaFree(b) == cudaSuccess && cudaFree(base) == cudaSuccess);
    return 0;
}

static int gemm_c_fits(void) { return gemm_with_c_short_by(0); }
static int gemm_c_one_short(void) { return gemm_with_c_short_by(1); }

/* A transposed A of k x m with lda 40 spans 39 * 40 + 3 elements; one
 * element less than that is allocated. */
static int gemm_lda_past_allocation(void)
{
    int m = 40, n = 2, k = 3, lda = 40;
    size_t need = (size_t)((m - 1) * lda + k) * sizeof(float);
    float *a, *b, *c;
    cublasHandle_t h;
    CHILD_CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
    CHILD_CHECK(cudaMalloc((void **)&a, (need + 511) / 512 * 512) == cudaSuccess);
    CHILD_CHECK(cudaMalloc((void **)&b, k * n * 4) == cudaSuccess && cudaMalloc((void **)&c, m * n * 4) == cudaSuccess);
    float *a_end = (float *)((char *)a + (need + 511) / 512 * 512 - need + sizeof(float));
    float alpha = 1.0f, beta = 0.0f;
    cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, a_end, lda, b, k, &beta, c, m);
    return 0;
}

/* A workspace handed to cuBLAS must stay allocated while it is in use; after
 * cublasSetStream the default one is back in use. */
static int gemm_with_freed_workspace(int reset_by_set_stream)
{
    cublasHandle_t h;
    float *a, *c, *ws;
    CHILD_CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
    CHILD_CHECK(cudaMalloc((void **)&a, 64 * 4) == cudaSuccess && cudaMalloc((void **)&c, 64 * 4) == cudaSuccess);
    CHILD_CHECK(cudaMalloc((void **)&ws, 1 << 20) == cudaSuccess);
    CHILD_CHECK(cublasSetWorkspace(h, ws, 1 << 20) == CUBLAS_STATUS_SUCCESS);
    CHILD_CHECK(cudaFree(ws) == cudaSuccess);
    if (reset_by_set_stream)
        CHILD_CHECK(cublasSetStream(h, NULL) == CUBLAS_STATUS_SUCCESS);
    float alpha = 1.0f, beta = 0.0f;
    CHILD_CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &alpha, a, 8, a, 8, &beta, c, 8) ==
                CUBLAS_STATUS_SUCCESS);
    CHILD_CHECK(cublasDestroy(h) == CUBLAS_STATUS_SUCCESS);
    CHILD_CHECK(cudaFree(a) == cudaSuccess && cudaFree(c) == cudaSuccess);
    return 0;
}

static int gemm_freed_workspace(void) { return gemm_with_freed_workspace(0); }
static int gemm_freed_workspace_then_set_stream(void) { return gemm_with_freed_workspace(1); }

/* Host pointer mode reads alpha on the host: a device address there is a
 * host segmentation fault on real hardware. */
static int saxpy_device_alpha_in_host_mode(void)
{
    cublasHandle_t h;
    float *x;
    CHILD_CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
    CHILD_CHECK(cudaMalloc((void **)&x, 64 * 4) == cudaSuccess);
    CHILD_CHECK(cudaMemset(x, 0, 64 * 4) == cudaSuccess);
    cublasSaxpy(h, 8, x, x + 8, 1, x + 16, 1);
    return 0;
}

static const struct sim_child_body k_children[] = {
    {"gemm_c_fits", gemm_c_fits},
    {"gemm_c_one_short", gemm_c_one_short},
    {"gemm_lda_past_allocation", gemm_lda_past_allocation},
    {"gemm_freed_workspace", gemm_freed_workspace},
    {"gemm_freed_workspace_then_set_stream", gemm_freed_workspace_then_set_stream},
    {"saxpy_device_alpha_in_host_mode", saxpy_device_alpha_in_host_mode},
};

/* The wait status is read twice by CHILD_OK / CHILD_SEGV: run the child once. */
static int child_ok(const char *name)
{
    int st = sim_child_run(NULL, name);
    return CHILD_OK(st);
}

static int child_faults(const char *name)
{
    int st = sim_child_run(NULL, name);
    return CHILD_SEGV(st);
}

static void test_residency_faults(void **state)
{
    (void)state;
    assert_true(child_ok("gemm_c_fits"));
    assert_true(child_faults("gemm_c_one_short"));
    assert_true(child_faults("gemm_lda_past_allocation"));
    assert_true(child_faults("gemm_freed_workspace"));
    assert_true(child_ok("gemm_freed_workspace_then_set_stream"));
    assert_true(child_faults("saxpy_device_alpha_in_host_mode"));
}

/* ---- timeline ------------------------------------------------------------ */

struct gemm_bufs {
    float *a, *b, *c;
    int n;
};

static struct gemm_bufs gemm_bufs(int n)
{
    struct gemm_bufs g = {dmalloc((size_t)n * n * 4), dmalloc((size_t)n * n * 4), dmalloc((size_t)n * n * 4), n};
    assert_int_equal(cudaMemset(g.a, 0, (size_t)n * n * 4), cudaSuccess);
    assert_int_equal(cudaMemset(g.b, 0, (size_t)n * n * 4), cudaSuccess);
    return g;
}

static void gemm_on(cublasHandle_t h, const struct gemm_bufs *g)
{
    float alpha = 1.0f, beta = 0.0f;
    assert_int_equal(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, g->n, g->n, g->n, &alpha, g->a, g->n, g->b, g->n,
                                 &beta, g->c, g->n),
                     CUBLAS_STATUS_SUCCESS);
}

static void free_gemm_bufs(struct gemm_bufs *g)
{
    cudaFree(g->a);
    cudaFree(g->b);
    cudaFree(g->c);
}

/* An SGEMM returns before the device has finished it; a reduction into host
 * memory on the same stream returns only after everything before it ran. */
static void test_gemm_async_reduction_blocks(void **state)
{
    (void)state;
    cublasHandle_t h;
    cudaStream_t s;
    cudaEvent_t e0, e1;
    assert_int_equal(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    assert_int_equal(cublasSetStream(h, s), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaEventCreate(&e0), cudaSuccess);
    assert_int_equal(cudaEventCreate(&e1), cudaSuccess);
    struct gemm_bufs g = gemm_bufs(384);

    assert_int_equal(cudaEventRecord(e0, s), cudaSuccess);
    gemm_on(h, &g);
    assert_int_equal(cudaEventRecord(e1, s), cudaSuccess);
    assert_int_equal(cudaEventQuery(e1), cudaErrorNotReady);
    float r = -1;
    assert_int_equal(cublasSdot(h, 16, g.a, 1, g.b, 1, &r), CUBLAS_STATUS_SUCCESS);
    assert_true(r == 0.0f);
    assert_int_equal(cudaEventQuery(e1), cudaSuccess);
    float ms = 0;
    assert_int_equal(cudaEventElapsedTime(&ms, e0, e1), cudaSuccess);
    assert_true(ms > 0);

    /* In device pointer mode the result stays on the device: no wait. */
    float *dr = dmalloc(4);
    gemm_on(h, &g);
    assert_int_equal(cudaEventRecord(e1, s), cudaSuccess);
    assert_int_equal(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSnrm2(h, 16, g.a, 1, dr), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaEventQuery(e1), cudaErrorNotReady);

    /* cublasDestroy synchronises the device. */
    gemm_on(h, &g);
    assert_int_equal(cudaEventRecord(e1, s), cudaSuccess);
    assert_int_equal(cudaEventQuery(e1), cudaErrorNotReady);
    assert_int_equal(cublasDestroy(h), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaEventQuery(e1), cudaSuccess);

    free_gemm_bufs(&g);
    cudaFree(dr);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaStreamDestroy(s);
}

/* Work goes to the handle's stream, not to the default stream. */
static void test_work_runs_on_handle_stream(void **state)
{
    (void)state;
    cublasHandle_t h;
    cudaStream_t s1, s2;
    cudaEvent_t on1, on2;
    assert_int_equal(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cudaSuccess);
    assert_int_equal(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
    assert_int_equal(cudaEventCreate(&on1), cudaSuccess);
    assert_int_equal(cudaEventCreate(&on2), cudaSuccess);
    struct gemm_bufs g = gemm_bufs(384);
    assert_int_equal(cublasSetStream(h, s1), CUBLAS_STATUS_SUCCESS);
    gemm_on(h, &g);
    assert_int_equal(cudaEventRecord(on1, s1), cudaSuccess);
    assert_int_equal(cudaEventRecord(on2, s2), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(s2), cudaSuccess);
    assert_int_equal(cudaEventQuery(on2), cudaSuccess);
    assert_int_equal(cudaEventQuery(on1), cudaErrorNotReady);
    assert_int_equal(cudaStreamSynchronize(s1), cudaSuccess);
    assert_int_equal(cudaEventQuery(on1), cudaSuccess);
    assert_int_equal(cublasDestroy(h), CUBLAS_STATUS_SUCCESS);
    free_gemm_bufs(&g);
    cudaEventDestroy(on1);
    cudaEventDestroy(on2);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
}

int main(int argc, char **argv)
{
    sim_child_main(argc, argv, k_children, sizeof k_children / sizeof k_children[0]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_residency_faults),
        cmocka_unit_test(test_create_allocates_default_workspace),
        cmocka_unit_test(test_null_handles),
        cmocka_unit_test(test_stream_and_modes),
        cmocka_unit_test(test_invalid_arguments),
        cmocka_unit_test(test_gemm_async_reduction_blocks),
        cmocka_unit_test(test_work_runs_on_handle_stream),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
