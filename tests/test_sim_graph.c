/*
 * test_sim_graph.c — stream capture and graphs on the simulated device:
 * work issued to a capturing stream is recorded, not done; the graph
 * replays it in order on the launch stream with its modelled time and one
 * host call; the rules of capture are enforced with CUDA's errors; cuDNN
 * and cuBLAS calls, whose work the simulator cannot defer, fail the
 * capture; a replay checks residency like any op.
 *
 * Timing figures are the default k40 profile's: device memory 288 GB/s,
 * pinned PCIe 10 GB/s, 5 us per op, 2 us of host time per issuing call,
 * 10 us for a kernel whose work is unknown.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "sim/simgpu.h"
#include "tests/sim_child.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define K40_PINNED 12.46e9 /* device to host, the profile's bandwidthTest figure */
#define K40_MEMBW 288e9
#define LAUNCH_MS 0.005
#define HOST_CALL_MS 0.002
#define KERNEL_MS 0.010

cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph);
cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus);
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream);

/* x[i] += a for i < n, a host function launched as a kernel. */
static void k_add(void **args, dim3 grid, dim3 block)
{
    (void)grid;
    (void)block;
    float *x = *(float **)args[0];
    float a = *(float *)args[1];
    int n = *(int *)args[2];
    for (int i = 0; i < n; i++)
        x[i] += a;
}

static void register_kernels(void)
{
    static const size_t sizes[3] = {sizeof(float *), sizeof(float), sizeof(int)};
    assert_int_equal(simgpu_register_host_kernel(k_add, "k_add", 3, sizes), 0);
}

static const dim3 ONE = {1, 1, 1};
static int g_host_calls;
static void CUDART_CB host_fn(void *arg) { g_host_calls += *(int *)arg; }

static float elapsed(cudaEvent_t a, cudaEvent_t b)
{
    float ms = -1;
    assert_int_equal(cudaEventSynchronize(b), cudaSuccess);
    assert_int_equal(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
    return ms;
}

static enum cudaStreamCaptureStatus capture_status(cudaStream_t s)
{
    enum cudaStreamCaptureStatus st = (enum cudaStreamCaptureStatus)-1;
    assert_int_equal(cudaStreamIsCapturing(s, &st), cudaSuccess);
    return st;
}

/* ---- capture and replay -------------------------------------------------------- */

static void test_capture_records_and_replays(void **state)
{
    (void)state;
    register_kernels();
    enum { N = 256 * 1024 };
    const size_t bytes = N * sizeof(float);
    float *d, *pin;
    assert_int_equal(cudaMalloc((void **)&d, bytes), cudaSuccess);
    assert_int_equal(cudaMallocHost((void **)&pin, bytes), cudaSuccess);
    assert_int_equal(cudaMemset(d, 0, bytes), cudaSuccess);
    for (int i = 0; i < N; i++)
        pin[i] = -1.0f;
    cudaStream_t s;
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    assert_int_equal(capture_status(s), cudaStreamCaptureStatusNone);

    float a = 2.5f;
    int n = N, one = 1;
    void *args[3] = {&d, &a, &n};
    g_host_calls = 0;
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(capture_status(s), cudaStreamCaptureStatusActive);
    assert_int_equal(cudaMemsetAsync(d, 0, bytes, s), cudaSuccess);
    assert_int_equal(cudaLaunchKernel((const void *)k_add, ONE, ONE, args, 0, s), cudaSuccess);
    assert_int_equal(cudaMemcpyAsync(pin, d, bytes, cudaMemcpyDeviceToHost, s), cudaSuccess);
    assert_int_equal(cudaLaunchHostFunc(s, host_fn, &one), cudaSuccess);
    cudaGraph_t g = NULL;
    assert_int_equal(cudaStreamEndCapture(s, &g), cudaSuccess);
    assert_non_null(g);
    assert_int_equal(capture_status(s), cudaStreamCaptureStatusNone);

    /* Nothing ran. */
    assert_int_equal(g_host_calls, 0);
    assert_true(pin[0] == -1.0f && pin[N - 1] == -1.0f);
    float probe = -1;
    assert_int_equal(cudaMemcpy(&probe, d, sizeof probe, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_true(probe == 0.0f);

    size_t count = 0;
    assert_int_equal(cudaGraphGetNodes(g, NULL, &count), cudaSuccess);
    assert_int_equal(count, 4);

    /* The arguments were copied at capture: changing them now changes nothing. */
    a = 100.0f;
    cudaGraphExec_t exec = NULL;
    assert_int_equal(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
    /* The graph may go once instantiated; the executable graph keeps its nodes. */
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess);

    cudaStream_t t, idle;
    cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&idle, cudaStreamNonBlocking);
    cudaEvent_t e0, e1, h0, h1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    cudaEventCreate(&h0);
    cudaEventCreate(&h1);
    for (int round = 1; round <= 2; round++) {
        assert_int_equal(cudaStreamSynchronize(t), cudaSuccess);
        cudaEventRecord(h0, idle);
        cudaEventRecord(e0, t);
        assert_int_equal(cudaGraphLaunch(exec, t), cudaSuccess);
        cudaEventRecord(h1, idle);
        cudaEventRecord(e1, t);
        /* Device time: the four nodes back to back, after one host call. */
        double want = HOST_CALL_MS + (bytes / K40_MEMBW * 1e3 + LAUNCH_MS) + (KERNEL_MS + LAUNCH_MS) +
                      (bytes / K40_PINNED * 1e3 + LAUNCH_MS) + LAUNCH_MS;
        assert_float_equal(elapsed(e0, e1), want, 1e-4);
        /* Host time: the record on t, the launch, the record on idle. */
        assert_float_equal(elapsed(h0, h1), 3 * HOST_CALL_MS, 1e-6);
        assert_int_equal(g_host_calls, round);
        assert_true(pin[0] == 2.5f && pin[N - 1] == 2.5f); /* the set runs first each time */
    }

    /* Issued one by one, the same work costs the host a call each (four,
     * and the record on idle). */
    cudaEventRecord(h0, idle);
    cudaMemsetAsync(d, 0, bytes, t);
    cudaLaunchKernel((const void *)k_add, ONE, ONE, args, 0, t);
    cudaMemcpyAsync(pin, d, bytes, cudaMemcpyDeviceToHost, t);
    cudaLaunchHostFunc(t, host_fn, &one);
    cudaEventRecord(h1, idle);
    assert_float_equal(elapsed(h0, h1), 5 * HOST_CALL_MS, 1e-6);
    assert_int_equal(cudaStreamSynchronize(t), cudaSuccess);
    assert_true(pin[0] == 100.0f);

    assert_int_equal(cudaGraphExecDestroy(exec), cudaSuccess);
    assert_int_equal(cudaGraphExecDestroy(exec), cudaErrorInvalidValue);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaEventDestroy(h0);
    cudaEventDestroy(h1);
    cudaStreamDestroy(s);
    cudaStreamDestroy(t);
    cudaStreamDestroy(idle);
    cudaFree(d);
    cudaFreeHost(pin);
}

/* Launches of one executable graph run one after the other, even on two
 * streams; events recorded in the capture are recorded by each launch. */
static void test_launches_are_serialised(void **state)
{
    (void)state;
    const size_t n = 288 * MiB;
    void *d;
    assert_int_equal(cudaMalloc(&d, n), cudaSuccess);
    cudaStream_t s, a, b;
    cudaStreamCreate(&s);
    cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
    cudaEvent_t inner, start, end;
    cudaEventCreate(&inner);
    cudaEventCreate(&start);
    cudaEventCreate(&end);
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(cudaMemsetAsync(d, 7, n, s), cudaSuccess);
    assert_int_equal(cudaEventRecord(inner, s), cudaSuccess);
    /* Waiting on an event of the same capture is stream order already. */
    assert_int_equal(cudaStreamWaitEvent(s, inner, 0), cudaSuccess);
    cudaGraph_t g;
    cudaGraphExec_t exec;
    assert_int_equal(cudaStreamEndCapture(s, &g), cudaSuccess);
    assert_int_equal(cudaGraphInstantiateWithFlags(&exec, g, cudaGraphInstantiateFlagAutoFreeOnLaunch), cudaSuccess);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    const double set_ms = n / K40_MEMBW * 1e3 + LAUNCH_MS;

    cudaEventRecord(start, a);
    assert_int_equal(cudaGraphLaunch(exec, a), cudaSuccess);
    float first = elapsed(start, inner);
    assert_float_equal(first, HOST_CALL_MS + set_ms, 1e-4);
    assert_int_equal(cudaGraphLaunch(exec, b), cudaSuccess);
    cudaEventRecord(end, b);
    assert_true(elapsed(start, end) >= 2 * set_ms);
    assert_true(elapsed(start, inner) >= 2 * set_ms); /* recorded again by the second launch */

    assert_int_equal(cudaGraphExecDestroy(exec), cudaSuccess);
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
    assert_int_equal(cudaGraphDestroy(g), cudaErrorInvalidValue);
    cudaEventDestroy(inner);
    cudaEventDestroy(start);
    cudaEventDestroy(end);
    cudaStreamDestroy(s);
    cudaStreamDestroy(a);
    cudaStreamDestroy(b);
    cudaFree(d);
}

static void test_per_thread_stream_capture(void **state)
{
    (void)state;
    unsigned char *d, out[64];
    assert_int_equal(cudaMalloc((void **)&d, sizeof out), cudaSuccess);
    assert_int_equal(cudaMemset(d, 0, sizeof out), cudaSuccess);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    assert_int_equal(cudaStreamBeginCapture_ptsz(NULL, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    enum cudaStreamCaptureStatus st;
    assert_int_equal(cudaStreamIsCapturing_ptsz(NULL, &st), cudaSuccess);
    assert_int_equal(st, cudaStreamCaptureStatusActive);
    assert_int_equal(cudaMemsetAsync(d, 9, sizeof out, cudaStreamPerThread), cudaSuccess);
    cudaGraph_t g;
    assert_int_equal(cudaStreamEndCapture_ptsz(NULL, &g), cudaSuccess);
    assert_int_equal(cudaMemcpy(out, d, sizeof out, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_int_equal(out[0], 0);
    cudaGraphExec_t exec;
    assert_int_equal(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
    assert_int_equal(cudaGraphLaunch_ptsz(exec, NULL), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
    assert_int_equal(cudaMemcpy(out, d, sizeof out, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_int_equal(out[0], 9);
    assert_int_equal(out[63], 9);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(g);
    cudaFree(d);
}

/* ---- the rules of capture -------------------------------------------------------- */

static void end_invalidated(cudaStream_t s)
{
    assert_int_equal(capture_status(s), cudaStreamCaptureStatusInvalidated);
    cudaGraph_t g = (cudaGraph_t)&g;
    assert_int_equal(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
    assert_null(g);
    assert_int_equal(capture_status(s), cudaStreamCaptureStatusNone);
    (void)cudaGetLastError();
}

static void *malloc_in_thread(void *arg)
{
    (void)arg;
    void *p = NULL;
    cudaError_t rc = cudaMalloc(&p, 4096);
    if (rc == cudaSuccess)
        cudaFree(p);
    return (void *)(intptr_t)rc;
}

static void *relaxed_malloc_in_thread(void *arg)
{
    (void)arg;
    enum cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
    if (cudaThreadExchangeStreamCaptureMode(&m) != cudaSuccess || m != cudaStreamCaptureModeGlobal)
        return (void *)(intptr_t)-1;
    return malloc_in_thread(NULL);
}

static void *end_in_thread(void *arg)
{
    cudaGraph_t g;
    return (void *)(intptr_t)cudaStreamEndCapture((cudaStream_t)arg, &g);
}

static cudaError_t in_thread(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    void *r;
    assert_int_equal(pthread_create(&t, NULL, fn, arg), 0);
    assert_int_equal(pthread_join(t, &r), 0);
    return (cudaError_t)(intptr_t)r;
}

static void test_capture_rules(void **state)
{
    (void)state;
    void *d, *p;
    assert_int_equal(cudaMalloc(&d, MiB), cudaSuccess);
    cudaStream_t s, nb;
    cudaStreamCreate(&s);
    cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking);
    cudaGraph_t g;

    /* Where and how capture may begin and end. */
    assert_int_equal(cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal), cudaErrorStreamCaptureUnsupported);
    assert_int_equal(cudaStreamBeginCapture(cudaStreamLegacy, cudaStreamCaptureModeGlobal),
                     cudaErrorStreamCaptureUnsupported);
    assert_int_equal(cudaStreamBeginCapture(s, (enum cudaStreamCaptureMode)7), cudaErrorInvalidValue);
    assert_int_equal(cudaStreamEndCapture(s, &g), cudaErrorIllegalState);
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaErrorIllegalState);
    assert_int_equal(cudaStreamEndCapture(s, NULL), cudaErrorInvalidValue);
    assert_int_equal(in_thread(end_in_thread, s), cudaErrorStreamCaptureWrongThread);
    assert_int_equal(capture_status(s), cudaStreamCaptureStatusActive);

    /* The legacy stream would depend on the capturing blocking stream: a
     * query says so without harm, an op invalidates the capture. */
    enum cudaStreamCaptureStatus st;
    assert_int_equal(cudaStreamIsCapturing(0, &st), cudaErrorStreamCaptureImplicit);
    assert_int_equal(capture_status(s), cudaStreamCaptureStatusActive);
    assert_int_equal(cudaMemsetAsync(d, 0, MiB, 0), cudaErrorStreamCaptureImplicit);
    assert_int_equal(cudaGetLastError(), cudaErrorStreamCaptureImplicit);
    /* Once invalidated, further work on the stream is refused too. */
    assert_int_equal(cudaMemsetAsync(d, 0, MiB, s), cudaErrorStreamCaptureInvalidated);
    end_invalidated(s);
    assert_int_equal(cudaMemsetAsync(d, 0, MiB, s), cudaSuccess); /* an ordinary stream again */
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);

    /* A non-blocking stream's capture leaves the legacy stream alone. */
    assert_int_equal(cudaStreamBeginCapture(nb, cudaStreamCaptureModeRelaxed), cudaSuccess);
    assert_int_equal(cudaMemsetAsync(d, 0, MiB, 0), cudaSuccess);
    /* Relaxed: cudaMalloc is allowed. */
    assert_int_equal(cudaMalloc(&p, 4096), cudaSuccess);
    assert_int_equal(cudaFree(p), cudaSuccess);
    /* Synchronising with a capturing stream is not. */
    assert_int_equal(cudaStreamSynchronize(nb), cudaErrorStreamCaptureUnsupported);
    end_invalidated(nb);
    assert_int_equal(cudaStreamBeginCapture(nb, cudaStreamCaptureModeRelaxed), cudaSuccess);
    assert_int_equal(cudaStreamQuery(nb), cudaErrorStreamCaptureUnsupported);
    end_invalidated(nb);

    /* Global mode: cudaMalloc and cudaDeviceSynchronize are prohibited, here
     * and in other threads unless they switched to relaxed. */
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(in_thread(relaxed_malloc_in_thread, NULL), cudaSuccess);
    assert_int_equal(capture_status(s), cudaStreamCaptureStatusActive);
    assert_int_equal(in_thread(malloc_in_thread, NULL), cudaErrorStreamCaptureUnsupported);
    end_invalidated(s);
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(cudaDeviceSynchronize(), cudaErrorStreamCaptureUnsupported);
    end_invalidated(s);
    /* Thread-local mode prohibits the capturing thread only. */
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    assert_int_equal(in_thread(malloc_in_thread, NULL), cudaSuccess);
    assert_int_equal(cudaMalloc(&p, 4096), cudaErrorStreamCaptureUnsupported);
    end_invalidated(s);
    enum cudaStreamCaptureMode bad = (enum cudaStreamCaptureMode)9;
    assert_int_equal(cudaThreadExchangeStreamCaptureMode(&bad), cudaErrorInvalidValue);
    assert_int_equal(cudaThreadExchangeStreamCaptureMode(NULL), cudaErrorInvalidValue);

    /* Waiting on work outside the capture crosses its boundary. */
    cudaEvent_t outside;
    cudaEventCreate(&outside);
    cudaEventRecord(outside, nb);
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(cudaStreamWaitEvent(s, outside, 0), cudaErrorStreamCaptureIsolation);
    end_invalidated(s);
    /* Joining another stream into the capture is not modelled: refused. */
    cudaEvent_t inside;
    cudaEventCreate(&inside);
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(cudaEventRecord(inside, s), cudaSuccess);
    assert_int_equal(cudaStreamWaitEvent(nb, inside, 0), cudaErrorStreamCaptureUnsupported);
    end_invalidated(s);
    /* So are stream-ordered allocation and a graph launched into a capture. */
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(cudaMallocAsync(&p, 4096, s), cudaErrorStreamCaptureUnsupported);
    end_invalidated(s);
    assert_int_equal(cudaStreamBeginCapture(nb, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(cudaMemsetAsync(d, 1, MiB, nb), cudaSuccess);
    assert_int_equal(cudaStreamEndCapture(nb, &g), cudaSuccess);
    cudaGraphExec_t exec;
    assert_int_equal(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(cudaGraphLaunch(exec, s), cudaErrorStreamCaptureUnsupported);
    end_invalidated(s);

    /* Bad handles and flags. */
    cudaGraphExec_t e2;
    assert_int_equal(cudaGraphInstantiate(&e2, g, 1ull << 40), cudaErrorInvalidValue);
    assert_int_equal(cudaGraphInstantiate(&e2, NULL, 0), cudaErrorInvalidValue);
    assert_int_equal(cudaGraphInstantiate(NULL, g, 0), cudaErrorInvalidValue);
    assert_int_equal(cudaGraphLaunch(NULL, s), cudaErrorInvalidValue);
    cudaStream_t gone;
    cudaStreamCreate(&gone);
    cudaStreamDestroy(gone);
    assert_int_equal(cudaGraphLaunch(exec, gone), cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaStreamBeginCapture(gone, cudaStreamCaptureModeGlobal), cudaErrorInvalidResourceHandle);
    (void)cudaGetLastError();
    /* A capture left open goes with its stream. */
    cudaStream_t open;
    cudaStreamCreate(&open);
    assert_int_equal(cudaStreamBeginCapture(open, cudaStreamCaptureModeRelaxed), cudaSuccess);
    assert_int_equal(cudaMemsetAsync(d, 0, MiB, open), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(open), cudaSuccess);
    assert_int_equal(cudaMemsetAsync(d, 0, MiB, 0), cudaSuccess);

    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(g);
    cudaEventDestroy(outside);
    cudaEventDestroy(inside);
    cudaStreamDestroy(s);
    cudaStreamDestroy(nb);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    cudaFree(d);
}

/* ---- cuDNN and cuBLAS ------------------------------------------------------------- */

static void test_cudnn_and_cublas_fail_the_capture(void **state)
{
    (void)state;
    const int n = 1024;
    float *x, *y, host[1024];
    assert_int_equal(cudaMalloc((void **)&x, n * sizeof(float)), cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&y, n * sizeof(float)), cudaSuccess);
    for (int i = 0; i < n; i++)
        host[i] = 1.0f;
    assert_int_equal(cudaMemcpy(x, host, sizeof host, cudaMemcpyHostToDevice), cudaSuccess);
    assert_int_equal(cudaMemcpy(y, host, sizeof host, cudaMemcpyHostToDevice), cudaSuccess);
    cudaStream_t s;
    cudaStreamCreate(&s);

    cudnnHandle_t dnn;
    cudnnTensorDescriptor_t t;
    assert_int_equal(cudnnCreate(&dnn), CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnSetStream(dnn, s), CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnCreateTensorDescriptor(&t), CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, n),
                     CUDNN_STATUS_SUCCESS);
    float one = 1.0f;
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(cudnnAddTensor(dnn, &one, t, x, &one, t, y), CUDNN_STATUS_EXECUTION_FAILED_CUDART);
    char why[256];
    cudnnGetLastErrorString(why, sizeof why);
    assert_non_null(strstr(why, "cudaErrorStreamCaptureUnsupported"));
    end_invalidated(s);

    cublasHandle_t blas;
    assert_int_equal(cublasCreate(&blas), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSetStream(blas, s), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(cublasSaxpy(blas, n, &one, x, 1, y, 1), CUBLAS_STATUS_EXECUTION_FAILED);
    end_invalidated(s);

    /* Neither did any work; outside a capture both work as before. */
    assert_int_equal(cudaMemcpy(host, y, sizeof host, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_true(host[0] == 1.0f && host[n - 1] == 1.0f);
    assert_int_equal(cudnnAddTensor(dnn, &one, t, x, &one, t, y), CUDNN_STATUS_SUCCESS);
    assert_int_equal(cublasSaxpy(blas, n, &one, x, 1, y, 1), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaMemcpy(host, y, sizeof host, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_true(host[0] == 3.0f && host[n - 1] == 3.0f);

    cublasDestroy(blas);
    cudnnDestroyTensorDescriptor(t);
    cudnnDestroy(dnn);
    cudaStreamDestroy(s);
    cudaFree(x);
    cudaFree(y);
}

/* ---- a replay checks what it touches ------------------------------------------------ */

/* The graph's buffer is freed before the launch: the replayed set touches
 * freed memory and dies as any op would. */
static int body_replay_after_free(void)
{
    void *d;
    CHILD_CHECK(cudaMalloc(&d, MiB) == cudaSuccess);
    cudaStream_t s;
    cudaStreamCreate(&s);
    CHILD_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
    CHILD_CHECK(cudaMemsetAsync(d, 1, MiB, s) == cudaSuccess);
    cudaGraph_t g;
    cudaGraphExec_t exec;
    CHILD_CHECK(cudaStreamEndCapture(s, &g) == cudaSuccess);
    CHILD_CHECK(cudaGraphInstantiate(&exec, g, 0) == cudaSuccess);
    CHILD_CHECK(cudaGraphLaunch(exec, s) == cudaSuccess);
    CHILD_CHECK(cudaStreamSynchronize(s) == cudaSuccess);
    CHILD_CHECK(cudaFree(d) == cudaSuccess);
    cudaGraphLaunch(exec, s); /* dies here */
    return 0;
}

/* A replay is ordered like any work on its stream: another stream reading
 * the graph's output without waiting is a hazard. */
static int replay_then_read(int wait)
{
    const size_t n = 64 * MiB;
    void *d, *pin;
    CHILD_CHECK(cudaMalloc(&d, n) == cudaSuccess && cudaMallocHost(&pin, n) == cudaSuccess);
    cudaStream_t s, other;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking);
    CHILD_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
    CHILD_CHECK(cudaMemsetAsync(d, 1, n, s) == cudaSuccess);
    cudaGraph_t g;
    cudaGraphExec_t exec;
    CHILD_CHECK(cudaStreamEndCapture(s, &g) == cudaSuccess);
    CHILD_CHECK(cudaGraphInstantiate(&exec, g, 0) == cudaSuccess);
    CHILD_CHECK(cudaGraphLaunch(exec, s) == cudaSuccess);
    if (wait) {
        cudaEvent_t done;
        cudaEventCreate(&done);
        cudaEventRecord(done, s);
        cudaStreamWaitEvent(other, done, 0);
    }
    /* A copy engine reads while the compute engine would still be setting. */
    CHILD_CHECK(cudaMemcpyAsync(pin, d, n, cudaMemcpyDeviceToHost, other) == cudaSuccess);
    CHILD_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    return 0;
}
static int body_replay_then_read(void) { return replay_then_read(0); }
static int body_replay_then_read_ordered(void) { return replay_then_read(1); }

static void test_replay_is_checked(void **state)
{
    (void)state;
    assert_true(CHILD_SEGV(sim_child_run(NULL, "body_replay_after_free")));
    assert_true(CHILD_SEGV(sim_child_run(NULL, "body_replay_then_read")));
    assert_true(CHILD_OK(sim_child_run(NULL, "body_replay_then_read_ordered")));
}

static const struct sim_child_body k_bodies[] = {
    {"body_replay_after_free", body_replay_after_free},
    {"body_replay_then_read", body_replay_then_read},
    {"body_replay_then_read_ordered", body_replay_then_read_ordered},
};

int main(int argc, char **argv)
{
    sim_child_main(argc, argv, k_bodies, sizeof k_bodies / sizeof k_bodies[0]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capture_records_and_replays),
        cmocka_unit_test(test_launches_are_serialised),
        cmocka_unit_test(test_per_thread_stream_capture),
        cmocka_unit_test(test_capture_rules),
        cmocka_unit_test(test_cudnn_and_cublas_fail_the_capture),
        cmocka_unit_test(test_replay_is_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
