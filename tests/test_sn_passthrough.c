/*
 * test_sn_passthrough.c — a program that uses CUDA, cuDNN and cuBLAS badly
 * on purpose and prints what each call returned.
 *
 * It is linked against the real import libraries and runs on the simulated
 * device. test_sn_preload.sh runs it without libsn and under LD_PRELOAD in
 * every SN_MODE and requires identical output: libsn must not change return
 * codes or the runtime's last-error state for invalid pointers, double
 * frees, calls before initialisation, bad handles and bad sizes. Each probe
 * also asserts the code CUDA documents, so the binary fails on its own if
 * the libraries (or libsn) misbehave. With SN_TEST_EXPECT_LIBSN=1 it also
 * asserts that the wrappers it calls are libsn's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dlfcn.h>
#include <pthread.h>

#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "sim/simgpu.h"

static void probe(const char *name, int rc)
{
    printf("probe %-40s rc=%d last=%d\n", name, rc, (int)cudaPeekAtLastError());
    (void)cudaGetLastError();
}

/* Runs first, before any other CUDA call: libsn initialises inside it. */
static void test_first_call_invalid(void **state)
{
    (void)state;
    cudaError_t rc = cudaFree((void *)(uintptr_t)0x1000);
    probe("first call: cudaFree(bogus)", rc);
    assert_int_not_equal(rc, cudaSuccess);
}

static void test_runtime_memory(void **state)
{
    (void)state;
    void *p = NULL;
    assert_int_equal(cudaMalloc(&p, 1 << 20), cudaSuccess);
    probe("cudaMalloc 1 MiB", cudaSuccess);
    cudaError_t rc = cudaFree((char *)p + 64);
    probe("cudaFree(interior pointer)", rc);
    assert_int_not_equal(rc, cudaSuccess);
    assert_int_equal(cudaFree(p), cudaSuccess);
    rc = cudaFree(p);
    probe("cudaFree twice (double free)", rc);
    assert_int_not_equal(rc, cudaSuccess);
    rc = cudaFree(NULL);
    probe("cudaFree(NULL)", rc);
    assert_int_equal(rc, cudaSuccess);
    rc = cudaMalloc(&p, (size_t)1 << 60);
    probe("cudaMalloc 2^60 bytes", rc);
    assert_int_equal(rc, cudaErrorMemoryAllocation);
    rc = cudaMalloc(NULL, 16);
    probe("cudaMalloc(NULL out)", rc);
    assert_int_not_equal(rc, cudaSuccess);
    rc = cudaFreeHost((void *)(uintptr_t)0x2000);
    probe("cudaFreeHost(bogus)", rc);
    assert_int_not_equal(rc, cudaSuccess);
    void *h = NULL;
    assert_int_equal(cudaMallocHost(&h, 4096), cudaSuccess);
    assert_int_equal(cudaFreeHost(h), cudaSuccess);
    rc = cudaFreeHost(h);
    probe("cudaFreeHost twice", rc);
    assert_int_not_equal(rc, cudaSuccess);
    size_t f = 0, t = 0;
    rc = cudaMemGetInfo(&f, &t);
    probe("cudaMemGetInfo", rc);
    assert_int_equal(rc, cudaSuccess);
    assert_true(t >= f);
}

static void test_runtime_copies(void **state)
{
    (void)state;
    float *d = NULL, host[16] = {0};
    assert_int_equal(cudaMalloc((void **)&d, sizeof host), cudaSuccess);
    cudaError_t rc = cudaMemcpy(d, host, sizeof host, (enum cudaMemcpyKind)42);
    probe("cudaMemcpy bad kind", rc);
    assert_int_not_equal(rc, cudaSuccess);
    rc = cudaMemcpy(d, host, 0, cudaMemcpyHostToDevice);
    probe("cudaMemcpy 0 bytes", rc);
    assert_int_equal(rc, cudaSuccess);
    for (int i = 0; i < 16; i++)
        host[i] = (float)i;
    rc = cudaMemcpy(d, host, sizeof host, cudaMemcpyDefault);
    probe("cudaMemcpy default kind H2D", rc);
    assert_int_equal(rc, cudaSuccess);
    float back[16];
    rc = cudaMemcpy(back, d, sizeof back, cudaMemcpyDeviceToHost);
    probe("cudaMemcpy D2H", rc);
    assert_int_equal(rc, cudaSuccess);
    assert_memory_equal(back, host, sizeof host);
    rc = cudaMemset(NULL, 0, 16);
    probe("cudaMemset(NULL)", rc);
    assert_int_not_equal(rc, cudaSuccess);
    rc = cudaMemsetAsync(d, 0, sizeof host, 0);
    probe("cudaMemsetAsync", rc);
    assert_int_equal(rc, cudaSuccess);
    rc = cudaMemcpy2D(d, 16, host, 16, 32, 2, cudaMemcpyHostToDevice);
    probe("cudaMemcpy2D width > pitch", rc);
    assert_int_not_equal(rc, cudaSuccess);
    rc = cudaDeviceSynchronize();
    probe("cudaDeviceSynchronize", rc);
    assert_int_equal(rc, cudaSuccess);
    rc = cudaSetDevice(99);
    probe("cudaSetDevice(99)", rc);
    assert_int_not_equal(rc, cudaSuccess);
    assert_int_equal(cudaFree(d), cudaSuccess);
}

static void host_scale(void **args, dim3 grid, dim3 block)
{
    (void)grid, (void)block;
    float *p = *(float **)args[0];
    int n = *(int *)args[1];
    for (int i = 0; i < n; i++)
        p[i] *= 2.0f;
}

static void not_a_kernel(void)
{
}

static void test_kernels(void **state)
{
    (void)state;
    void *args0[1] = {NULL};
    cudaError_t rc = cudaLaunchKernel((const void *)not_a_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1},
                                      args0, 0, 0);
    probe("cudaLaunchKernel unknown function", rc);
    assert_int_not_equal(rc, cudaSuccess);
    if (!simgpu_available())
        return;
    size_t sizes[2] = {sizeof(float *), sizeof(int)};
    assert_int_equal(simgpu_register_host_kernel(host_scale, "host_scale", 2, sizes), 0);
    float *d = NULL, host[8];
    for (int i = 0; i < 8; i++)
        host[i] = (float)i;
    assert_int_equal(cudaMalloc((void **)&d, sizeof host), cudaSuccess);
    assert_int_equal(cudaMemcpy(d, host, sizeof host, cudaMemcpyHostToDevice), cudaSuccess);
    int n = 8;
    void *args[2] = {&d, &n};
    rc = cudaLaunchKernel((const void *)host_scale, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, 0);
    probe("cudaLaunchKernel host kernel", rc);
    assert_int_equal(rc, cudaSuccess);
    rc = cudaLaunchKernel((const void *)host_scale, (dim3){0, 1, 1}, (dim3){1, 1, 1}, args, 0, 0);
    probe("cudaLaunchKernel empty grid", rc);
    assert_int_not_equal(rc, cudaSuccess);
    assert_int_equal(cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int i = 0; i < 8; i++)
        assert_true(host[i] == 2.0f * (float)i);
    assert_int_equal(cudaFree(d), cudaSuccess);
}

static void test_cudnn(void **state)
{
    (void)state;
    cudnnStatus_t s = cudnnSetStream(NULL, 0);
    probe("cudnnSetStream(NULL handle)", s);
    assert_int_not_equal(s, CUDNN_STATUS_SUCCESS);
    cudnnHandle_t h;
    assert_int_equal(cudnnCreate(&h), CUDNN_STATUS_SUCCESS);
    float one = 1, zero = 0;
    s = cudnnConvolutionForward(h, &one, NULL, NULL, NULL, NULL, NULL,
                                CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0, &zero, NULL, NULL);
    probe("cudnnConvolutionForward(NULL descriptors)", s);
    assert_int_equal(s, CUDNN_STATUS_BAD_PARAM);
    cudnnTensorDescriptor_t x;
    assert_int_equal(cudnnCreateTensorDescriptor(&x), CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 3, 3),
                     CUDNN_STATUS_SUCCESS);
    float *d = NULL;
    assert_int_equal(cudaMalloc((void **)&d, 18 * sizeof(float)), cudaSuccess);
    s = cudnnAddTensor(h, &one, x, d, &one, NULL, d);
    probe("cudnnAddTensor(NULL output descriptor)", s);
    assert_int_equal(s, CUDNN_STATUS_BAD_PARAM);
    s = cudnnSetTensor(h, x, d, &one);
    probe("cudnnSetTensor", s);
    assert_int_equal(s, CUDNN_STATUS_SUCCESS);
    s = cudnnScaleTensor(h, x, d, &one);
    probe("cudnnScaleTensor", s);
    assert_int_equal(s, CUDNN_STATUS_SUCCESS);
    s = cudnnGetConvolutionForwardAlgorithmMaxCount(h, NULL);
    probe("cudnnGet...AlgorithmMaxCount(NULL)", s);
    assert_int_not_equal(s, CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudaFree(d), cudaSuccess);
    cudnnDestroyTensorDescriptor(x);
    assert_int_equal(cudnnDestroy(h), CUDNN_STATUS_SUCCESS);
}

static void test_cublas(void **state)
{
    (void)state;
    float one = 1, zero = 0;
    cublasStatus_t s = cublasSgemm(NULL, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, NULL, 2, NULL, 2,
                                   &zero, NULL, 2);
    probe("cublasSgemm(NULL handle)", s);
    assert_int_not_equal(s, CUBLAS_STATUS_SUCCESS);
    cublasHandle_t h;
    assert_int_equal(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
    float *a = NULL;
    assert_int_equal(cudaMalloc((void **)&a, 4 * sizeof(float)), cudaSuccess);
    s = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 2, 2, &one, a, 2, a, 2, &zero, a, 2);
    probe("cublasSgemm(m < 0)", s);
    assert_int_equal(s, CUBLAS_STATUS_INVALID_VALUE);
    s = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, a, 1, a, 2, &zero, a, 2);
    probe("cublasSgemm(lda < m)", s);
    assert_int_equal(s, CUBLAS_STATUS_INVALID_VALUE);
    s = cublasSscal(h, 4, &one, a, 0);
    probe("cublasSscal(incx = 0)", s);
    float r = 0;
    s = cublasSasum(h, 4, a, 1, &r);
    probe("cublasSasum", s);
    assert_int_equal(s, CUBLAS_STATUS_SUCCESS);
    /* the GEMMs frameworks call */
    s = cublasGemmEx(NULL, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, a, CUDA_R_32F, 1, a, CUDA_R_32F, 1, &zero, a,
                     CUDA_R_32F, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    probe("cublasGemmEx(NULL handle)", s);
    assert_int_equal(s, CUBLAS_STATUS_NOT_INITIALIZED);
    s = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 1, 1, &one, a, CUDA_R_32F, 1, a, CUDA_R_32F, 1, &zero, a,
                     CUDA_R_32F, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    probe("cublasGemmEx(m < 0)", s);
    assert_int_equal(s, CUBLAS_STATUS_INVALID_VALUE);
    s = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, a, CUDA_R_32F, 1, a, CUDA_R_32F, 1, &zero, a + 2,
                     CUDA_R_16F, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    probe("cublasGemmEx(32F inputs, 16F output)", s);
    assert_int_equal(s, CUBLAS_STATUS_NOT_SUPPORTED);
    s = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, a, CUDA_R_32F, 1, a + 1, CUDA_R_32F, 1, &zero, a + 2,
                     CUDA_R_32F, 1, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
    probe("cublasGemmEx", s);
    assert_int_equal(s, CUBLAS_STATUS_SUCCESS);
    s = cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, a, CUDA_R_32F, 1, 1, a, CUDA_R_32F, 1,
                                   1, &zero, a, CUDA_R_32F, 1, 1, -1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    probe("cublasGemmStridedBatchedEx(batch < 0)", s);
    assert_int_equal(s, CUBLAS_STATUS_INVALID_VALUE);
    s = cublasGemmBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, (const void *const *)a, CUDA_R_32F, 1,
                            (const void *const *)a, CUDA_R_32F, 1, &zero, (void *const *)a, CUDA_R_32F, 1, 0,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    probe("cublasGemmBatchedEx(batch 0)", s);
    assert_int_equal(s, CUBLAS_STATUS_SUCCESS);
    s = cublasSgemmBatched(NULL, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, NULL, 1, NULL, 1, &zero, NULL, 1, 1);
    probe("cublasSgemmBatched(NULL handle)", s);
    assert_int_equal(s, CUBLAS_STATUS_NOT_INITIALIZED);
    s = cublasSetWorkspace(h, a + 1, 12);
    probe("cublasSetWorkspace(misaligned)", s);
    assert_int_equal(s, CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cudaFree(a), cudaSuccess);
    assert_int_equal(cublasDestroy(h), CUBLAS_STATUS_SUCCESS);
}

typedef CUresult (*getproc_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

/* The driver as the runtime reaches it: dlopen, dlsym, cuGetProcAddress. */
static void test_driver_path(void **state)
{
    (void)state;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    assert_non_null(lib);
    getproc_fn gpa = (getproc_fn)dlsym(lib, "cuGetProcAddress_v2");
    assert_non_null(gpa);
    CUresult (*alloc)(CUdeviceptr *, size_t) = NULL;
    CUresult (*release)(CUdeviceptr) = NULL;
    CUdriverProcAddressQueryResult st;
    assert_int_equal(gpa("cuMemAlloc", (void **)&alloc, CUDA_VERSION, 0, &st), CUDA_SUCCESS);
    assert_int_equal(gpa("cuMemFree", (void **)&release, CUDA_VERSION, 0, &st), CUDA_SUCCESS);
    assert_non_null(alloc);
    assert_non_null(release);
    CUresult rc = gpa("cuNoSuchFunction", (void **)&alloc, CUDA_VERSION, 0, &st);
    printf("probe %-40s rc=%d status=%d\n", "cuGetProcAddress(unknown name)", rc, (int)st);
    assert_int_equal(gpa("cuMemAlloc", (void **)&alloc, CUDA_VERSION, 0, &st), CUDA_SUCCESS);
    CUdeviceptr p = 0;
    assert_int_equal(alloc(&p, 4096), CUDA_SUCCESS);
    assert_int_equal(release(p), CUDA_SUCCESS);
    rc = release(p);
    printf("probe %-40s rc=%d\n", "cuMemFree twice", rc);
    assert_int_not_equal(rc, CUDA_SUCCESS);
    rc = release((CUdeviceptr)0x3000);
    printf("probe %-40s rc=%d\n", "cuMemFree(bogus)", rc);
    assert_int_not_equal(rc, CUDA_SUCCESS);
    /* dlsym of something that is not the driver's is untouched. */
    void *self = dlsym(RTLD_DEFAULT, "simgpu_register_host_kernel_impl");
    printf("probe %-40s found=%d\n", "dlsym(RTLD_DEFAULT, sim symbol)", self != NULL);
    void *next = dlsym(RTLD_NEXT, "no_such_symbol_anywhere");
    assert_null(next);
    if (getenv("SN_TEST_EXPECT_LIBSN")) {
        Dl_info info;
        assert_true(dladdr((void *)alloc, &info));
        assert_non_null(strstr(info.dli_fname, "libsn"));
        assert_true(dladdr((void *)gpa, &info));
        assert_non_null(strstr(info.dli_fname, "libsn"));
    }
}

static void test_wrappers_are_libsn(void **state)
{
    (void)state;
    if (!getenv("SN_TEST_EXPECT_LIBSN"))
        skip();
    Dl_info info;
    void *f = dlsym(RTLD_DEFAULT, "cudaMalloc");
    assert_true(f && dladdr(f, &info));
    assert_non_null(strstr(info.dli_fname, "libsn"));
    f = dlsym(RTLD_DEFAULT, "cudnnConvolutionForward");
    assert_true(f && dladdr(f, &info));
    assert_non_null(strstr(info.dli_fname, "libsn"));
    f = dlsym(RTLD_DEFAULT, "cublasGemmEx");
    assert_true(f && dladdr(f, &info));
    assert_non_null(strstr(info.dli_fname, "libsn"));
}

static void *race_alloc(void *arg)
{
    (void)arg;
    void *p = NULL;
    for (int i = 0; i < 50; i++) {
        if (cudaMalloc(&p, 256) != cudaSuccess || cudaFree(p) != cudaSuccess)
            return (void *)1;
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, race_alloc, NULL), 0);
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        assert_null(r);
    }
    probe("4 threads x 50 cudaMalloc/cudaFree", cudaSuccess);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_call_invalid), cmocka_unit_test(test_runtime_memory),
        cmocka_unit_test(test_runtime_copies),     cmocka_unit_test(test_kernels),
        cmocka_unit_test(test_cudnn),              cmocka_unit_test(test_cublas),
        cmocka_unit_test(test_driver_path),        cmocka_unit_test(test_wrappers_are_libsn),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
