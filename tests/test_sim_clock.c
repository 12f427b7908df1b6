/*
 * test_sim_clock.c — the parts of the simulator's clock that were fitted to
 * published measurements (docs/sim-cudnn.md, "Calibration"): copies at each
 * direction's bandwidthTest rate, both directions sharing the PCIe link,
 * and the shape term of the convolution model (a first layer with three
 * input channels, or a thin 1x1 reduction, runs at a lower share of peak),
 * and the host time of the memory-management calls (sim/hostcost.c), with
 * the waits for the device that freeing and remapping imply.
 * Each case runs in a child process on the profile it names, compute off.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <cuda.h>

#include "tests/sim_child.h"
#include "tests/test_cudnn_util.h"

#define MiB ((size_t)1 << 20)

/* Milliseconds from a common start to the end of count copies of bytes in
 * each direction asked for (h2d, d2h), each direction on its own stream. */
static float copies_ms(int h2d, int d2h, size_t bytes, int count, float *h2d_ms, float *d2h_ms)
{
    void *hs, *hd, *ds, *dd;
    if (cudaMallocHost(&hs, bytes) || cudaMallocHost(&hd, bytes) || cudaMalloc(&ds, bytes) || cudaMalloc(&dd, bytes))
        return -1;
    cudaStream_t s1, s2;
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    cudaEvent_t start, a, b;
    cudaEventCreate(&start);
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaDeviceSynchronize();
    cudaEventRecord(start, s1);
    cudaStreamWaitEvent(s2, start, 0);
    for (int i = 0; i < count; i++) {
        if (h2d)
            cudaMemcpyAsync(dd, hs, bytes, cudaMemcpyHostToDevice, s1);
        if (d2h)
            cudaMemcpyAsync(hd, ds, bytes, cudaMemcpyDeviceToHost, s2);
    }
    cudaEventRecord(a, s1);
    cudaEventRecord(b, s2);
    cudaDeviceSynchronize();
    float ta = 0, tb = 0;
    cudaEventElapsedTime(&ta, start, a);
    cudaEventElapsedTime(&tb, start, b);
    if (h2d_ms)
        *h2d_ms = ta;
    if (d2h_ms)
        *d2h_ms = tb;
    cudaFreeHost(hs), cudaFreeHost(hd), cudaFree(ds), cudaFree(dd);
    cudaStreamDestroy(s1), cudaStreamDestroy(s2);
    return ta > tb ? ta : tb;
}

/* titanx: a GTX TITAN X's bandwidthTest, 12.18 GB/s to and 12.46 GB/s from
 * the device (pinned); launch cost 5 us per copy. */
static int body_direction_rates(void)
{
    const size_t n = 64 * MiB;
    float up = 0, down = 0;
    CHILD_CHECK(copies_ms(1, 0, n, 1, &up, NULL) > 0);
    CHILD_CHECK(copies_ms(0, 1, n, 1, NULL, &down) > 0);
    double up_gbs = n / (up * 1e-3) / 1e9, down_gbs = n / (down * 1e-3) / 1e9;
    fprintf(stderr, "64 MiB: to device %.3f ms (%.2f GB/s), from device %.3f ms (%.2f GB/s)\n", up, up_gbs, down,
            down_gbs);
    CHILD_CHECK(fabsf(up - (float)(n / 12.18e9 * 1e3 + 0.005)) < 0.01f);
    CHILD_CHECK(fabsf(down - (float)(n / 12.46e9 * 1e3 + 0.005)) < 0.01f);
    return 0;
}

/* Both directions at once move 1.6 times one direction, not twice: the
 * link carries 0.8 of the sum of the one-way rates while both are busy. */
static int body_duplex(void)
{
    const size_t n = 64 * MiB;
    const int count = 8;
    float one = copies_ms(1, 0, n, count, NULL, NULL);
    float up = 0, down = 0;
    float both = copies_ms(1, 1, n, count, &up, &down);
    CHILD_CHECK(one > 0 && both > 0);
    double ratio = 2.0 * count * n / both / (count * n / one);
    fprintf(stderr, "one way %.3f ms, both ways %.3f ms (to device %.3f, from device %.3f): %.3fx one way\n", one,
            both, up, down, ratio);
    CHILD_CHECK(ratio > 1.5 && ratio < 1.7);
    /* Neither direction stalls: each finishes within the joint time. */
    CHILD_CHECK(up > one && down > one && up < 1.4f * one && down < 1.4f * one);
    return 0;
}

/* A copy alone on the link keeps its full rate even right after a copy the
 * other way has finished: the sharing covers the overlap only. */
static int body_duplex_only_overlap(void)
{
    const size_t n = 64 * MiB;
    float alone = 0, after = 0;
    CHILD_CHECK(copies_ms(1, 0, n, 1, &alone, NULL) > 0);
    void *hs, *ds, *dd, *hd;
    CHILD_CHECK(cudaMallocHost(&hs, n) == 0 && cudaMallocHost(&hd, n) == 0 && cudaMalloc(&ds, n) == 0 &&
                cudaMalloc(&dd, n) == 0);
    CHILD_CHECK(cudaMemcpy(hd, ds, n, cudaMemcpyDeviceToHost) == 0); /* synchronous: done before the next */
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventRecord(a, 0);
    CHILD_CHECK(cudaMemcpy(dd, hs, n, cudaMemcpyHostToDevice) == 0);
    cudaEventRecord(b, 0);
    cudaEventSynchronize(b);
    cudaEventElapsedTime(&after, a, b);
    CHILD_CHECK(fabsf(after - alone) < 0.01f);
    return 0;
}

/* ---- convolution shapes ---------------------------------------------------- */

/* Milliseconds of the fastest forward algorithm Find reports. */
static float best_forward_ms(cudnnHandle_t h, int n, int c, int hw, int k, int r, int pad, int stride)
{
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t cd;
    cudnnCreateTensorDescriptor(&x);
    cudnnCreateTensorDescriptor(&y);
    cudnnCreateFilterDescriptor(&w);
    cudnnCreateConvolutionDescriptor(&cd);
    cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, hw, hw);
    cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c, r, r);
    cudnnSetConvolution2dDescriptor(cd, pad, pad, stride, stride, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
    int on, oc, oh, ow, got = 0;
    cudnnGetConvolution2dForwardOutputDim(cd, x, w, &on, &oc, &oh, &ow);
    cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, on, oc, oh, ow);
    cudnnConvolutionFwdAlgoPerf_t p;
    float ms = -1;
    if (cudnnFindConvolutionForwardAlgorithm(h, x, w, cd, y, 1, &got, &p) == CUDNN_STATUS_SUCCESS && got == 1)
        ms = p.time;
    cudnnDestroyTensorDescriptor(x), cudnnDestroyTensorDescriptor(y);
    cudnnDestroyFilterDescriptor(w), cudnnDestroyConvolutionDescriptor(cd);
    return ms;
}

/* Per FLOP, VGG's first layer (3 input channels: 27 products per output)
 * costs several times its second (64 channels), and a 1x1 layer reducing
 * over 16 channels costs more than one reducing over 256. */
static int body_shape_penalty(void)
{
    cudnnHandle_t h;
    CHILD_CHECK(cudnnCreate(&h) == CUDNN_STATUS_SUCCESS);
    double f1 = 2.0 * 16 * 64 * 224 * 224 * 3 * 9, f2 = 2.0 * 16 * 64 * 224 * 224 * 64 * 9;
    float t1 = best_forward_ms(h, 16, 3, 224, 64, 3, 1, 1), t2 = best_forward_ms(h, 16, 64, 224, 64, 3, 1, 1);
    CHILD_CHECK(t1 > 0 && t2 > 0);
    fprintf(stderr, "conv1_1 %.3f ms (%.2f TFLOP/s), conv1_2 %.3f ms (%.2f TFLOP/s)\n", t1, f1 / t1 / 1e9, t2,
            f2 / t2 / 1e9);
    CHILD_CHECK(t1 / f1 > 3.0 * (t2 / f2));
    double g1 = 2.0 * 32 * 256 * 56 * 56 * 16, g2 = 2.0 * 32 * 256 * 56 * 56 * 256;
    float u1 = best_forward_ms(h, 32, 16, 56, 256, 1, 0, 1), u2 = best_forward_ms(h, 32, 256, 56, 256, 1, 0, 1);
    CHILD_CHECK(u1 > 0 && u2 > 0);
    fprintf(stderr, "1x1 16->256 %.3f ms, 256->256 %.3f ms\n", u1, u2);
    CHILD_CHECK(u1 / g1 > 1.5 * (u2 / g2));
    return cudnnDestroy(h) != CUDNN_STATUS_SUCCESS;
}

/* ---- host side of memory management ----------------------------------------- */

static cudaEvent_t g_a, g_b;
static double g_empty_us;

/* Host time spent between bracket_open and bracket_us: events on the idle
 * legacy stream around it, less what an empty bracket measures (the second
 * record's own call). */
static void bracket_open(void)
{
    cudaDeviceSynchronize();
    cudaEventRecord(g_a, 0);
}

static double bracket_us(void)
{
    cudaEventRecord(g_b, 0);
    cudaEventSynchronize(g_b);
    float ms = 0;
    cudaEventElapsedTime(&ms, g_a, g_b);
    return ms * 1e3 - g_empty_us;
}

static void bracket_init(void)
{
    cudaFree(0);
    cuInit(0);
    cudaEventCreate(&g_a);
    cudaEventCreate(&g_b);
    g_empty_us = 0;
    bracket_open();
    g_empty_us = bracket_us();
}

/* Microseconds, to the float precision of cudaEventElapsedTime. */
#define COSTS(got, want)                                                             \
    do {                                                                             \
        double got_ = (got), want_ = (want);                                         \
        if (fabs(got_ - want_) > 0.01) {                                             \
            fprintf(stderr, "%s:%d: %s took %.3f us, expected %.3f\n", __FILE__,     \
                    __LINE__, #got, got_, want_);                                    \
            return 1;                                                                \
        }                                                                            \
    } while (0)

static double malloc_us(void **p, size_t bytes)
{
    bracket_open();
    cudaMalloc(p, bytes);
    return bracket_us();
}

static double free_us(void *p)
{
    bracket_open();
    cudaFree(p);
    return bracket_us();
}

/* As measured on an H200 (sim/hostcost.c): allocation 40 us + 0.12 us per
 * 2 MiB; free 40 us + 0.88 us per 2 MiB; pinning 1.5 us per 4 KiB page;
 * unpinning 200 us + 0.43 us per page. */
static int body_alloc_costs(void)
{
    bracket_init();
    void *p, *q;
    COSTS(malloc_us(&p, 1024), 40.12);
    COSTS(free_us(p), 40.88);
    COSTS(malloc_us(&q, 64 * MiB), 40.0 + 32 * 0.12);
    COSTS(free_us(q), 40.0 + 32 * 0.88);
    COSTS(malloc_us(&q, 64 * MiB + 1), 40.0 + 33 * 0.12); /* granules are whole */
    cudaFree(q);
    bracket_open();
    CUdeviceptr d;
    CHILD_CHECK(cuMemAlloc(&d, 64 * MiB) == CUDA_SUCCESS);
    COSTS(bracket_us(), 40.0 + 32 * 0.12);
    bracket_open();
    CHILD_CHECK(cuMemFree(d) == CUDA_SUCCESS);
    COSTS(bracket_us(), 40.0 + 32 * 0.88);
    size_t pitch;
    bracket_open();
    CHILD_CHECK(cudaMallocPitch(&p, &pitch, 1000, 1000) == cudaSuccess); /* 1024 x 1000 B */
    COSTS(bracket_us(), 40.12);
    cudaFree(p);
    bracket_open();
    CHILD_CHECK(cudaMallocManaged(&p, 4 * MiB, cudaMemAttachGlobal) == cudaSuccess);
    COSTS(bracket_us(), 40.24);
    cudaFree(p);
    /* Failing for want of memory still costs the call. */
    COSTS(malloc_us(&p, (size_t)1 << 40), 40.0);
    CHILD_CHECK(cudaGetLastError() == cudaErrorMemoryAllocation);
    /* Pinning scales with pages: a cudaMallocHost of 64 MiB takes 25 ms. */
    bracket_open();
    CHILD_CHECK(cudaMallocHost(&p, 64 * MiB) == cudaSuccess);
    COSTS(bracket_us(), 16384 * 1.5);
    bracket_open();
    CHILD_CHECK(cudaFreeHost(p) == cudaSuccess);
    COSTS(bracket_us(), 200.0 + 16384 * 0.43);
    bracket_open();
    CHILD_CHECK(cudaHostAlloc(&p, 4097, cudaHostAllocPortable) == cudaSuccess); /* two pages */
    COSTS(bracket_us(), 2 * 1.5);
    bracket_open();
    CHILD_CHECK(cuMemHostAlloc(&q, 4096, 0) == CUDA_SUCCESS);
    COSTS(bracket_us(), 1.5);
    bracket_open();
    CHILD_CHECK(cuMemFreeHost(q) == CUDA_SUCCESS && cudaFreeHost(p) == cudaSuccess);
    COSTS(bracket_us(), 2 * 200.0 + 3 * 0.43);
    return 0;
}

static CUmemAllocationProp vmm_prop(void)
{
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    return p;
}

static CUmemAccessDesc vmm_rw(void)
{
    CUmemAccessDesc a;
    memset(&a, 0, sizeof a);
    a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return a;
}

/* The VMM calls as measured on an H200 (sim/hostcost.c); setting access
 * and unmapping cost mostly per mapping, a little per granule. */
static int body_vmm_costs(void)
{
    bracket_init();
    CUmemAllocationProp prop = vmm_prop();
    CUmemAccessDesc rw = vmm_rw();
    const size_t g = 2 * MiB;
    CUdeviceptr va;
    CUmemGenericAllocationHandle big, h[4];
    bracket_open();
    CHILD_CHECK(cuMemAddressReserve(&va, 16 * g, 0, 0, 0) == CUDA_SUCCESS);
    COSTS(bracket_us(), 2.0);
    bracket_open();
    CHILD_CHECK(cuMemCreate(&big, 4 * g, &prop, 0) == CUDA_SUCCESS);
    COSTS(bracket_us(), 13.0 + 4 * 0.047);
    for (int i = 0; i < 4; i++) {
        bracket_open();
        CHILD_CHECK(cuMemCreate(&h[i], g, &prop, 0) == CUDA_SUCCESS);
        COSTS(bracket_us(), 13.047);
    }
    /* One mapping of four granules: about the cost of one. */
    bracket_open();
    CHILD_CHECK(cuMemMap(va, 4 * g, 0, big, 0) == CUDA_SUCCESS);
    COSTS(bracket_us(), 2.0);
    bracket_open();
    CHILD_CHECK(cuMemSetAccess(va, 4 * g, &rw, 1) == CUDA_SUCCESS);
    COSTS(bracket_us(), 4.0 + 28.0 + 4 * 0.12);
    /* Four mappings of one granule each, opened and closed in one call. */
    for (int i = 0; i < 4; i++)
        CHILD_CHECK(cuMemMap(va + (4 + i) * g, g, 0, h[i], 0) == CUDA_SUCCESS);
    bracket_open();
    CHILD_CHECK(cuMemSetAccess(va + 4 * g, 4 * g, &rw, 1) == CUDA_SUCCESS);
    COSTS(bracket_us(), 4.0 + 4 * 28.0 + 4 * 0.12);
    bracket_open();
    CHILD_CHECK(cuMemUnmap(va + 4 * g, 4 * g) == CUDA_SUCCESS);
    COSTS(bracket_us(), 4 * 17.0 + 4 * 0.025);
    bracket_open();
    CHILD_CHECK(cuMemUnmap(va, 4 * g) == CUDA_SUCCESS);
    COSTS(bracket_us(), 17.0 + 4 * 0.025);
    bracket_open();
    CHILD_CHECK(cuMemRelease(big) == CUDA_SUCCESS);
    COSTS(bracket_us(), 15.0 + 4 * 0.81);
    for (int i = 0; i < 4; i++)
        CHILD_CHECK(cuMemRelease(h[i]) == CUDA_SUCCESS);
    bracket_open();
    CHILD_CHECK(cuMemAddressFree(va, 16 * g) == CUDA_SUCCESS);
    COSTS(bracket_us(), 2.0);
    /* A refused call costs nothing. */
    bracket_open();
    CHILD_CHECK(cuMemUnmap(va, g) == CUDA_ERROR_INVALID_VALUE);
    COSTS(bracket_us(), 0.0);
    return 0;
}

/* Device work the next call may have to wait for: a 256 MiB memset on a
 * non-blocking stream (0.93 ms on the k40), with an event at its end. */
static void busy_device(cudaStream_t s, void *buf, cudaEvent_t done)
{
    cudaMemsetAsync(buf, 0, 256 * MiB, s);
    cudaEventRecord(done, s);
}

/* Host time from the end of the device's work to the return of the call
 * just made: the call waited for the device when this is its own cost. */
static double since_us(cudaEvent_t done)
{
    cudaEventRecord(g_b, 0);
    cudaEventSynchronize(g_b);
    float ms = 0;
    cudaEventElapsedTime(&ms, done, g_b);
    return ms * 1e3 - g_empty_us;
}

/* Freeing device or pinned memory waits for the device first; allocating
 * does not, nor do setting access and unmapping (an H200 returned from
 * both while earlier work still ran), nor cudaFreeAsync of a cudaMalloc
 * allocation, which waits for its own stream only. */
static int body_waits(void)
{
    bracket_init();
    cudaStream_t s, t;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking);
    cudaEvent_t done;
    cudaEventCreate(&done);
    void *buf, *p, *pin;
    CHILD_CHECK(cudaMalloc(&buf, 256 * MiB) == cudaSuccess && cudaMallocHost(&pin, MiB) == cudaSuccess);

    busy_device(s, buf, done);
    CHILD_CHECK(cudaMalloc(&p, 2 * MiB) == cudaSuccess);
    CHILD_CHECK(cudaEventQuery(done) == cudaErrorNotReady);
    CHILD_CHECK(cudaFree(p) == cudaSuccess);
    COSTS(since_us(done), 40.88);

    CUdeviceptr d;
    CHILD_CHECK(cuMemAlloc(&d, 2 * MiB) == CUDA_SUCCESS);
    busy_device(s, buf, done);
    CHILD_CHECK(cuMemFree(d) == CUDA_SUCCESS);
    COSTS(since_us(done), 40.88);

    busy_device(s, buf, done);
    CHILD_CHECK(cudaFreeHost(pin) == cudaSuccess);
    COSTS(since_us(done), 200.0 + 256 * 0.43);

    CUmemAllocationProp prop = vmm_prop();
    CUmemAccessDesc rw = vmm_rw();
    CUdeviceptr va;
    CUmemGenericAllocationHandle h;
    CHILD_CHECK(cuMemAddressReserve(&va, 2 * MiB, 0, 0, 0) == CUDA_SUCCESS);
    CHILD_CHECK(cuMemCreate(&h, 2 * MiB, &prop, 0) == CUDA_SUCCESS);
    CHILD_CHECK(cuMemMap(va, 2 * MiB, 0, h, 0) == CUDA_SUCCESS);
    busy_device(s, buf, done);
    CHILD_CHECK(cuMemSetAccess(va, 2 * MiB, &rw, 1) == CUDA_SUCCESS);
    CHILD_CHECK(cudaEventQuery(done) == cudaErrorNotReady);
    CHILD_CHECK(cudaEventSynchronize(done) == cudaSuccess);
    busy_device(s, buf, done); /* (other memory than the range) */
    CHILD_CHECK(cuMemUnmap(va, 2 * MiB) == CUDA_SUCCESS);
    CHILD_CHECK(cudaEventQuery(done) == cudaErrorNotReady);

    CHILD_CHECK(cudaMalloc(&p, 2 * MiB) == cudaSuccess);
    busy_device(s, buf, done);
    CHILD_CHECK(cudaFreeAsync(p, t) == cudaSuccess);
    CHILD_CHECK(cudaEventQuery(done) == cudaErrorNotReady);
    return 0;
}

static const struct sim_child_body bodies[] = {
    {"body_direction_rates", body_direction_rates},
    {"body_duplex", body_duplex},
    {"body_duplex_only_overlap", body_duplex_only_overlap},
    {"body_shape_penalty", body_shape_penalty},
    {"body_alloc_costs", body_alloc_costs},
    {"body_vmm_costs", body_vmm_costs},
    {"body_waits", body_waits},
};

static void run_on(const char *profile, const char *body)
{
    char prof[64];
    snprintf(prof, sizeof prof, "SIMGPU_PROFILE=%s", profile);
    const char *env[] = {prof, "SIMGPU_COMPUTE=0", NULL};
    if (!CHILD_OK(sim_child_run(env, body)))
        fail_msg("%s failed on profile %s", body, profile);
}

static void test_direction_rates(void **state) { (void)state; run_on("titanx", "body_direction_rates"); }
static void test_duplex_shares_the_link(void **state) { (void)state; run_on("titanx", "body_duplex"); }
static void test_duplex_only_while_overlapping(void **state)
{
    (void)state;
    run_on("titanx", "body_duplex_only_overlap");
}
static void test_shape_penalty(void **state)
{
    (void)state;
    run_on("titanx", "body_shape_penalty");
    run_on("v100", "body_shape_penalty");
}

/* The same costs on every profile. */
static void test_alloc_costs(void **state)
{
    (void)state;
    run_on("k40", "body_alloc_costs");
    run_on("h100", "body_alloc_costs");
}
static void test_vmm_costs(void **state)
{
    (void)state;
    run_on("h100", "body_vmm_costs");
    run_on("titanx", "body_vmm_costs");
}
static void test_frees_wait_for_the_device_remaps_do_not(void **state) { (void)state; run_on("k40", "body_waits"); }

int main(int argc, char **argv)
{
    sim_child_main(argc, argv, bodies, sizeof bodies / sizeof bodies[0]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_direction_rates),
        cmocka_unit_test(test_duplex_shares_the_link),
        cmocka_unit_test(test_duplex_only_while_overlapping),
        cmocka_unit_test(test_shape_penalty),
        cmocka_unit_test(test_alloc_costs),
        cmocka_unit_test(test_vmm_costs),
        cmocka_unit_test(test_frees_wait_for_the_device_remaps_do_not),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
