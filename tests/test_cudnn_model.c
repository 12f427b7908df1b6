/*
 * test_cudnn_model.c — the cost model of the simulated cuDNN on full-size
 * layers: the algorithm ranking the heuristic and the searches report on
 * every device profile, that a forward convolution's time scales with its
 * FLOPs, and that what Find reports is what a call then costs on the
 * timeline. Each profile runs in a child process with compute off, so
 * VGG-sized tensors cost no host memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "tests/sim_child.h"
#include "tests/test_cudnn_util.h"

typedef struct {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t c;
} layer;

static void layer_init(layer *l, int n, int c, int hw, int k, int r, int pad, int stride)
{
    cudnnCreateTensorDescriptor(&l->x);
    cudnnCreateTensorDescriptor(&l->y);
    cudnnCreateFilterDescriptor(&l->w);
    cudnnCreateConvolutionDescriptor(&l->c);
    cudnnSetTensor4dDescriptor(l->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, hw, hw);
    cudnnSetFilter4dDescriptor(l->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c, r, r);
    cudnnSetConvolution2dDescriptor(l->c, pad, pad, stride, stride, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
    int on, oc, oh, ow;
    cudnnGetConvolution2dForwardOutputDim(l->c, l->x, l->w, &on, &oc, &oh, &ow);
    cudnnSetTensor4dDescriptor(l->y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, on, oc, oh, ow);
}

static void layer_free(layer *l)
{
    cudnnDestroyTensorDescriptor(l->x);
    cudnnDestroyTensorDescriptor(l->y);
    cudnnDestroyFilterDescriptor(l->w);
    cudnnDestroyConvolutionDescriptor(l->c);
}

/* Position of algo in the heuristic's ranking, -1 when not supported. */
static int fwd_rank(cudnnHandle_t h, const layer *l, int algo)
{
    cudnnConvolutionFwdAlgoPerf_t p[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int n;
    if (cudnnGetConvolutionForwardAlgorithm_v7(h, l->x, l->w, l->c, l->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, p))
        return -2;
    for (int i = 0; i < n; i++)
        if ((int)p[i].algo == algo)
            return p[i].status == CUDNN_STATUS_SUCCESS ? i : -1;
    return -1;
}

static int bwd_data_rank(cudnnHandle_t h, const layer *l, int algo)
{
    cudnnConvolutionBwdDataAlgoPerf_t p[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int n;
    if (cudnnGetConvolutionBackwardDataAlgorithm_v7(h, l->w, l->y, l->c, l->x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                    &n, p))
        return -2;
    for (int i = 0; i < n; i++)
        if ((int)p[i].algo == algo)
            return p[i].status == CUDNN_STATUS_SUCCESS ? i : -1;
    return -1;
}

static int bwd_filter_rank(cudnnHandle_t h, const layer *l, int algo)
{
    cudnnConvolutionBwdFilterAlgoPerf_t p[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int n;
    if (cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, l->x, l->y, l->c, l->w,
                                                      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, p))
        return -2;
    for (int i = 0; i < n; i++)
        if ((int)p[i].algo == algo)
            return p[i].status == CUDNN_STATUS_SUCCESS ? i : -1;
    return -1;
}

/* Simulated duration of one forward call, measured with events on the
 * handle's stream the way a program would time it. */
static float timed_forward(cudnnHandle_t h, const layer *l, int algo, void *x, void *w, void *y)
{
    size_t ws = 0;
    void *p = NULL;
    if (cudnnGetConvolutionForwardWorkspaceSize(h, l->x, l->w, l->c, l->y, algo, &ws))
        return -1;
    if (ws && cudaMalloc(&p, ws))
        return -1;
    cudaStream_t s;
    cudnnGetStream(h, &s);
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    float one = 1, zero = 0, ms = -1;
    cudaEventRecord(a, s);
    cudnnStatus_t st = cudnnConvolutionForward(h, &one, l->x, x, l->w, w, l->c, algo, p, ws, &zero, l->y, y);
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    cudaEventElapsedTime(&ms, a, b);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaFree(p);
    return st == CUDNN_STATUS_SUCCESS ? ms : -1;
}

enum { IMPLICIT = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, PRECOMP = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
       GEMM = CUDNN_CONVOLUTION_FWD_ALGO_GEMM, FFT = CUDNN_CONVOLUTION_FWD_ALGO_FFT,
       FFT_TILING = CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING, WINOGRAD = CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD,
       WINOGRAD_NF = CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED };

/* The ranking stated in docs/sim-cudnn.md, checked on the active profile.
 * It depends on the cuDNN generation the profile stands for: k40 and titanx
 * (cuDNN 5.0) have no non-fused Winograd kernels, v100 runs the Winograd
 * kernels at a lower share of its peak, and h100 runs the GEMM family as
 * TF32 on tensor cores unless TF32 is off (SIMGPU_TF32=0). */
static int body_ranking(void)
{
    const char *prof = getenv("SIMGPU_PROFILE");
    int cudnn5 = prof && (!strcmp(prof, "k40") || !strcmp(prof, "titanx"));
    const char *tf32_env = getenv("SIMGPU_TF32");
    int tf32 = prof && !strcmp(prof, "h100") && !(tf32_env && !strcmp(tf32_env, "0"));
    cudnnHandle_t h;
    CHILD_CHECK(cudnnCreate(&h) == CUDNN_STATUS_SUCCESS);
    layer l;

    /* VGG-16 conv3_2 (3x3, 256 -> 256, 56x56, batch 64). */
    layer_init(&l, 64, 256, 56, 256, 3, 1, 1);
    int wnf = fwd_rank(h, &l, WINOGRAD_NF), win = fwd_rank(h, &l, WINOGRAD), fft = fwd_rank(h, &l, FFT);
    int fftt = fwd_rank(h, &l, FFT_TILING), pre = fwd_rank(h, &l, PRECOMP), gemm = fwd_rank(h, &l, GEMM);
    int imp = fwd_rank(h, &l, IMPLICIT);
    CHILD_CHECK(wnf >= 0 && win >= 0 && fft >= 0 && fftt >= 0 && pre >= 0 && gemm >= 0 && imp >= 0);
    CHILD_CHECK(pre < imp);
    if (tf32) {
        /* TF32 tensor cores leave the FP32 transform families behind. */
        CHILD_CHECK(pre == 0);
        CHILD_CHECK(win > pre && fft > pre && fftt > pre && wnf > pre);
    } else {
        /* A transform family first: it does a fraction of the arithmetic. */
        CHILD_CHECK(win == 0 || fft == 0 || fftt == 0 || wnf == 0);
        CHILD_CHECK(win < imp && fft < pre && fftt < pre);
        CHILD_CHECK(pre < gemm || cudnn5);
        /* cuDNN 5.0 had no non-fused Winograd: it never beats PRECOMP. */
        CHILD_CHECK(cudnn5 ? wnf > pre : wnf < pre);
    }
    CHILD_CHECK(fwd_rank(h, &l, CUDNN_CONVOLUTION_FWD_ALGO_DIRECT) == -1);
    CHILD_CHECK(bwd_data_rank(h, &l, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1) <
                bwd_data_rank(h, &l, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0));
    CHILD_CHECK(bwd_filter_rank(h, &l, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1) <
                bwd_filter_rank(h, &l, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3));
    CHILD_CHECK(bwd_filter_rank(h, &l, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3) <
                bwd_filter_rank(h, &l, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0));
    CHILD_CHECK(bwd_filter_rank(h, &l, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD) == -1);
    if (!cudnn5 && !tf32) {
        CHILD_CHECK(bwd_data_rank(h, &l, CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED) <
                    bwd_data_rank(h, &l, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1));
        CHILD_CHECK(bwd_filter_rank(h, &l, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED) <
                    bwd_filter_rank(h, &l, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1));
    }
    layer_free(&l);

    /* AlexNet conv2 (5x5, 96 -> 256, 27x27, batch 128): FFT is the fastest
     * of the FP32 algorithms. */
    layer_init(&l, 128, 96, 27, 256, 5, 2, 1);
    CHILD_CHECK(fwd_rank(h, &l, WINOGRAD) == -1);
    CHILD_CHECK(fwd_rank(h, &l, PRECOMP) < fwd_rank(h, &l, IMPLICIT));
    if (tf32)
        CHILD_CHECK(fwd_rank(h, &l, PRECOMP) == 0);
    else
        CHILD_CHECK(fwd_rank(h, &l, FFT) <= 1 && fwd_rank(h, &l, FFT_TILING) <= 1);
    layer_free(&l);

    /* ResNet 1x1 (256 -> 64, 56x56, batch 32): the implicit GEMMs first,
     * the FFTs (transforms for nothing) last. */
    layer_init(&l, 32, 256, 56, 64, 1, 0, 1);
    CHILD_CHECK(fwd_rank(h, &l, PRECOMP) <= 1);
    CHILD_CHECK(fwd_rank(h, &l, FFT) >= 3 && fwd_rank(h, &l, FFT_TILING) >= 3);
    layer_free(&l);

    /* AlexNet conv1 (11x11 stride 4): only the GEMM family applies. */
    layer_init(&l, 128, 3, 227, 96, 11, 0, 4);
    CHILD_CHECK(fwd_rank(h, &l, PRECOMP) == 0 && fwd_rank(h, &l, GEMM) >= 1 && fwd_rank(h, &l, IMPLICIT) >= 1);
    CHILD_CHECK(fwd_rank(h, &l, FFT) == -1 && fwd_rank(h, &l, WINOGRAD_NF) == -1);
    layer_free(&l);
    return cudnnDestroy(h) != CUDNN_STATUS_SUCCESS;
}

/* TF32: on the h100 profile cuDNN's default math runs the GEMM family on
 * tensor cores, CUDNN_FMA_MATH keeps it on the FP32 pipelines. The PRECOMP
 * time of VGG conv3_2 at batch 64 is measured under both math types; with
 * TEST_EXPECT_TF32=1 the default must be several times faster (494.7
 * against 66.9 TFLOP/s), otherwise (SIMGPU_TF32=0, NVIDIA_TF32_OVERRIDE=0,
 * a GPU without TF32) the two must cost the same. */
static int body_tf32(void)
{
    cudnnHandle_t h;
    CHILD_CHECK(cudnnCreate(&h) == CUDNN_STATUS_SUCCESS);
    void *x, *w, *y;
    CHILD_CHECK(cudaMalloc(&x, 256 << 20) == cudaSuccess && cudaMalloc(&w, 16 << 20) == cudaSuccess &&
                cudaMalloc(&y, 256 << 20) == cudaSuccess);
    float t[2];
    for (int fma = 0; fma < 2; fma++) {
        layer l;
        layer_init(&l, 64, 256, 56, 256, 3, 1, 1);
        if (fma)
            CHILD_CHECK(cudnnSetConvolutionMathType(l.c, CUDNN_FMA_MATH) == CUDNN_STATUS_SUCCESS);
        t[fma] = timed_forward(h, &l, PRECOMP, x, w, y);
        CHILD_CHECK(t[fma] > 0);
        layer_free(&l);
    }
    const char *e = getenv("TEST_EXPECT_TF32");
    if (e && !strcmp(e, "1"))
        CHILD_CHECK(t[1] > 4.0f * t[0]);
    else
        CHILD_CHECK(fabsf(t[1] - t[0]) <= 0.001f * t[1]);
    cudaFree(x), cudaFree(w), cudaFree(y);
    return cudnnDestroy(h) != CUDNN_STATUS_SUCCESS;
}

/* Doubling the output channels or the batch doubles a compute-bound forward
 * convolution's time, doubling the image edge quadruples it; what Find reports is what the
 * call costs on the timeline. */
static int body_flop_scaling(void)
{
    cudnnHandle_t h;
    CHILD_CHECK(cudnnCreate(&h) == CUDNN_STATUS_SUCCESS);
    void *x, *w, *y;
    size_t big = (size_t)1 << 30;
    CHILD_CHECK(cudaMalloc(&x, big) == cudaSuccess && cudaMalloc(&w, 64 << 20) == cudaSuccess &&
                cudaMalloc(&y, big) == cudaSuccess);
    /* batch, image edge, output channels; FLOPs relative to the first */
    int shapes[4][3] = {{64, 56, 256}, {64, 56, 512}, {128, 56, 256}, {64, 112, 256}};
    double flops[4] = {1, 2, 2, 4};
    float t[4];
    for (int algo = 0; algo < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; algo++) {
        if (algo != PRECOMP && algo != IMPLICIT && algo != GEMM && algo != WINOGRAD)
            continue;
        for (int i = 0; i < 4; i++) {
            layer l;
            layer_init(&l, shapes[i][0], 256, shapes[i][1], shapes[i][2], 3, 1, 1);
            t[i] = timed_forward(h, &l, algo, x, w, y);
            CHILD_CHECK(t[i] > 0);
            if (i == 0) {
                cudnnConvolutionFwdAlgoPerf_t p[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
                int n;
                CHILD_CHECK(cudnnFindConvolutionForwardAlgorithm(h, l.x, l.w, l.c, l.y, 8, &n, p) == 0);
                for (int j = 0; j < n; j++)
                    if ((int)p[j].algo == algo)
                        CHILD_CHECK(fabsf(p[j].time - t[0]) <= 0.01f * t[0]);
            }
            layer_free(&l);
        }
        for (int i = 1; i < 4; i++) {
            double ratio = t[i] / t[0];
            /* GEMM adds an im2col pass that follows the input, not the
             * FLOPs: it may only grow more slowly than they do. */
            double lo = algo == GEMM ? 0.75 : 0.98;
            if (ratio / flops[i] < lo || ratio / flops[i] > 1.02) {
                fprintf(stderr, "algo %d shape %d: time ratio %.3f, FLOP ratio %.0f\n", algo, i, ratio, flops[i]);
                return 1;
            }
        }
    }
    cudaFree(x), cudaFree(w), cudaFree(y);
    return cudnnDestroy(h) != CUDNN_STATUS_SUCCESS;
}

static const struct sim_child_body bodies[] = {
    {"body_ranking", body_ranking},
    {"body_flop_scaling", body_flop_scaling},
    {"body_tf32", body_tf32},
};

static const char *const profiles[] = {"k40", "titanx", "v100", "h100"};

static void test_ranking_per_profile(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++) {
        char prof[64];
        snprintf(prof, sizeof prof, "SIMGPU_PROFILE=%s", profiles[i]);
        const char *env[] = {prof, "SIMGPU_COMPUTE=0", NULL};
        if (!CHILD_OK(sim_child_run(env, "body_ranking")))
            fail_msg("ranking differs on profile %s", profiles[i]);
    }
}

static void test_ranking_without_tf32(void **state)
{
    (void)state;
    const char *env[] = {"SIMGPU_PROFILE=h100", "SIMGPU_COMPUTE=0", "SIMGPU_TF32=0", NULL};
    if (!CHILD_OK(sim_child_run(env, "body_ranking")))
        fail_msg("ranking differs on profile h100 with SIMGPU_TF32=0");
}

static void test_tf32_switches(void **state)
{
    (void)state;
    static const char *const cases[][5] = {
        {"SIMGPU_PROFILE=h100", "SIMGPU_COMPUTE=0", "TEST_EXPECT_TF32=1", NULL},
        {"SIMGPU_PROFILE=h100", "SIMGPU_COMPUTE=0", "SIMGPU_TF32=1", "TEST_EXPECT_TF32=1", NULL},
        {"SIMGPU_PROFILE=h100", "SIMGPU_COMPUTE=0", "SIMGPU_TF32=0", NULL},
        {"SIMGPU_PROFILE=h100", "SIMGPU_COMPUTE=0", "NVIDIA_TF32_OVERRIDE=0", NULL},
        {"SIMGPU_PROFILE=v100", "SIMGPU_COMPUTE=0", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!CHILD_OK(sim_child_run(cases[i], "body_tf32")))
            fail_msg("TF32 case %zu (%s %s) is wrong", i, cases[i][0], cases[i][2]);
}

static void test_time_scales_with_flops(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++) {
        char prof[64];
        snprintf(prof, sizeof prof, "SIMGPU_PROFILE=%s", profiles[i]);
        /* With TF32 the h100 runs these layers at memory speed, where time
         * follows bytes rather than FLOPs: check its FP32 rate. */
        const char *env[] = {prof, "SIMGPU_COMPUTE=0", "SIMGPU_MEM=80G", "SIMGPU_TF32=0", NULL};
        if (!CHILD_OK(sim_child_run(env, "body_flop_scaling")))
            fail_msg("time does not scale with FLOPs on profile %s", profiles[i]);
    }
}

int main(int argc, char **argv)
{
    sim_child_main(argc, argv, bodies, sizeof bodies / sizeof bodies[0]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranking_per_profile),
        cmocka_unit_test(test_ranking_without_tf32),
        cmocka_unit_test(test_tf32_switches),
        cmocka_unit_test(test_time_scales_with_flops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
