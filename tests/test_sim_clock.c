/*
 * test_sim_clock.c — the parts of the simulator's clock that were fitted to
 * published measurements (docs/sim-cudnn.md, "Calibration"): copies at each
 * direction's bandwidthTest rate, both directions sharing the PCIe link,
 * and the shape term of the convolution model (a first layer with three
 * input channels, or a thin 1x1 reduction, runs at a lower share of peak).
 * Each case runs in a child process on the profile it names, compute off.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

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

static const struct sim_child_body bodies[] = {
    {"body_direction_rates", body_direction_rates},
    {"body_duplex", body_duplex},
    {"body_duplex_only_overlap", body_duplex_only_overlap},
    {"body_shape_penalty", body_shape_penalty},
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

int main(int argc, char **argv)
{
    sim_child_main(argc, argv, bodies, sizeof bodies / sizeof bodies[0]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_direction_rates),
        cmocka_unit_test(test_duplex_shares_the_link),
        cmocka_unit_test(test_duplex_only_while_overlapping),
        cmocka_unit_test(test_shape_penalty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
