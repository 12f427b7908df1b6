/*
 * sn_overhead.c — a program that makes one kind of intercepted call N times,
 * for measuring what libsn adds to each call (bench/sn_overhead.sh runs it
 * under callgrind with and without libsn, at two values of N, so that the
 * difference per extra call is the wrapper's cost alone).
 *
 *   sn_overhead memset|addtensor|conv|saxpy|sgemm|launch|culaunch|malloc N [K]
 *
 * launch is a runtime launch of a host kernel, culaunch the same kernel
 * launched through the driver (cuLaunchKernel).
 *
 * With two arguments the call is made N times in a row. With K it is made
 * K times in each of N iterations of a tiny training loop (activation
 * forward, the loss read by the host, activation backward, then the
 * calls), after 20 such iterations that let libsn learn the loop as the
 * training iteration: the calls are then in the regime of a training run
 * after its profile (a learned iteration followed, and in manage mode a
 * plan made for it). The script subtracts runs with two values of K, so
 * that the work libsn does once an iteration (wherever the iteration
 * begins) cancels out, leaving the cost of one more call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "sim/simgpu.h"

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if ((x) != 0) {                                                                            \
            fprintf(stderr, "sn_overhead: %s failed\n", #x);                                      \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static void nop_kernel(void **args, dim3 grid, dim3 block)
{
    (void)args, (void)grid, (void)block;
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: sn_overhead memset|addtensor|conv|saxpy|sgemm|launch|culaunch|malloc N [K]\n");
        return 2;
    }
    const char *what = argv[1];
    long n = atol(argv[2]);
    float *a, *b, *c, *ws;
    CHECK(cudaMalloc((void **)&a, 1 << 16));
    CHECK(cudaMalloc((void **)&b, 1 << 16));
    CHECK(cudaMalloc((void **)&c, 1 << 16));
    CHECK(cudaMalloc((void **)&ws, 1 << 16));
    cudnnHandle_t dnn;
    cublasHandle_t blas;
    CHECK(cudnnCreate(&dnn));
    CHECK(cublasCreate(&blas));
    cudnnTensorDescriptor_t x, y, bias;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    CHECK(cudnnCreateTensorDescriptor(&x));
    CHECK(cudnnCreateTensorDescriptor(&y));
    CHECK(cudnnCreateTensorDescriptor(&bias));
    CHECK(cudnnCreateFilterDescriptor(&w));
    CHECK(cudnnCreateConvolutionDescriptor(&conv));
    CHECK(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 4, 4));
    CHECK(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 4, 4));
    CHECK(cudnnSetTensor4dDescriptor(bias, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 1, 1));
    CHECK(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 2, 2, 1, 1));
    CHECK(cudnnSetConvolution2dDescriptor(conv, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                          CUDNN_DATA_FLOAT));
    size_t sizes[2] = {sizeof(float *), sizeof(int)};
    int have_kernel = simgpu_register_host_kernel(nop_kernel, "nop", 2, sizes) == 0;
    cudaFunction_t nop_fn = NULL;
    if (have_kernel && cudaGetFuncBySymbol(&nop_fn, (const void *)nop_kernel) != cudaSuccess)
        nop_fn = NULL;
    const float one = 1, zero = 0;
    int count = 16;
    void *args[2] = {&a, &count};
    int warm = argc == 4;
    long k = warm ? atol(argv[3]) : 1;
    cudnnActivationDescriptor_t act;
    CHECK(cudnnCreateActivationDescriptor(&act));
    CHECK(cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0));
    for (long i = warm ? -20 : 0; i < n; i++) {
        if (warm) {
            CHECK(cudnnActivationForward(dnn, act, &one, x, a, &zero, y, b));
            /* the loss read by the host ends the forward pass */
            float loss;
            CHECK(cudaMemcpy(&loss, b, sizeof loss, cudaMemcpyDeviceToHost));
            CHECK(cudnnActivationBackward(dnn, act, &one, y, b, y, c, x, a, &zero, x, ws));
        }
        for (long j = 0; j < k; j++) {
            if (!strcmp(what, "memset"))
                CHECK(cudaMemsetAsync(a, 0, 64, 0));
            else if (!strcmp(what, "addtensor"))
                CHECK(cudnnAddTensor(dnn, &one, bias, b, &one, y, c));
            else if (!strcmp(what, "conv"))
                CHECK(cudnnConvolutionForward(dnn, &one, x, a, w, b, conv,
                                              CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0, &zero, y, c));
            else if (!strcmp(what, "saxpy"))
                CHECK(cublasSaxpy(blas, 16, &one, a, 1, b, 1));
            else if (!strcmp(what, "sgemm"))
                CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, a, 4, b, 4, &zero, c, 4));
            else if (!strcmp(what, "launch") && have_kernel)
                CHECK(cudaLaunchKernel((const void *)nop_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, 0));
            else if (!strcmp(what, "culaunch") && nop_fn)
                CHECK(cuLaunchKernel((CUfunction)nop_fn, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
            else if (!strcmp(what, "malloc")) {
                void *p;
                CHECK(cudaMalloc(&p, 256));
                CHECK(cudaFree(p));
            }
        }
    }
    CHECK(cudaDeviceSynchronize());
    return 0;
}
