/*
 * test_curand_api.c — the simulated cuRAND (sim/curand): statuses as
 * cuRAND documents them, results determined by seed, offset and position
 * alone (any split of the output agrees), the distributions' moments over
 * a million samples, stream order, and that the output is written by a
 * kernel launched through the driver (with SIMGPU_COMPUTE=0 the bodies do
 * not run and the buffer keeps what it held). Compiled against the real
 * curand.h and linked with the real import library; run on the simulated
 * libraries through LD_LIBRARY_PATH.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <cuda.h>
#include <curand.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/sim_child.h"

#define N (1u << 20)

static CUcontext ctx;

static void drv_up(void)
{
    CUdevice dev;
    assert_int_equal(cuInit(0), CUDA_SUCCESS);
    assert_int_equal(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
    assert_int_equal(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
    assert_int_equal(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
}

static CUdeviceptr dalloc(size_t bytes)
{
    CUdeviceptr p = 0;
    assert_int_equal(cuMemAlloc(&p, bytes), CUDA_SUCCESS);
    return p;
}

static void *fetch(CUdeviceptr p, size_t bytes)
{
    void *h = malloc(bytes);
    assert_non_null(h);
    assert_int_equal(cuMemcpyDtoH(h, p, bytes), CUDA_SUCCESS);
    return h;
}

static void test_statuses(void **state)
{
    (void)state;
    curandGenerator_t g;
    int v = 0;
    assert_int_equal(curandGetVersion(&v), CURAND_STATUS_SUCCESS);
    assert_int_equal(v, CURAND_VERSION);
    assert_int_equal(curandCreateGenerator(&g, CURAND_RNG_QUASI_SOBOL32), CURAND_STATUS_TYPE_ERROR);
    assert_int_equal(curandCreateGenerator(&g, (curandRngType_t)12345), CURAND_STATUS_TYPE_ERROR);
    assert_int_equal(curandCreateGenerator(&g, CURAND_RNG_PSEUDO_DEFAULT), CURAND_STATUS_SUCCESS);
    CUdeviceptr d = dalloc(16 * sizeof(float));
    assert_int_equal(curandGenerateNormal(g, (float *)(uintptr_t)d, 7, 0.0f, 1.0f),
                     CURAND_STATUS_LENGTH_NOT_MULTIPLE);
    assert_int_equal(curandGenerateLogNormalDouble(g, (double *)(uintptr_t)d, 3, 0.0, 1.0),
                     CURAND_STATUS_LENGTH_NOT_MULTIPLE);
    assert_int_equal(curandGeneratePoisson(g, (unsigned *)(uintptr_t)d, 4, 0.0), CURAND_STATUS_OUT_OF_RANGE);
    assert_int_equal(curandGeneratePoisson(g, (unsigned *)(uintptr_t)d, 4, 500000.0), CURAND_STATUS_OUT_OF_RANGE);
    assert_int_equal(curandSetGeneratorOrdering(g, (curandOrdering_t)999), CURAND_STATUS_OUT_OF_RANGE);
    assert_int_equal(curandGenerateNormal(g, (float *)(uintptr_t)d, 16, 0.0f, 1.0f), CURAND_STATUS_SUCCESS);
    assert_int_equal(curandDestroyGenerator(g), CURAND_STATUS_SUCCESS);
    /* a destroyed generator is no generator */
    assert_int_equal(curandDestroyGenerator(g), CURAND_STATUS_NOT_INITIALIZED);
    assert_int_equal(curandGenerateUniform(g, (float *)(uintptr_t)d, 16), CURAND_STATUS_NOT_INITIALIZED);
    assert_int_equal(curandSetPseudoRandomGeneratorSeed(g, 1), CURAND_STATUS_NOT_INITIALIZED);
    /* host generators are not simulated */
    assert_int_equal(curandCreateGeneratorHost(&g, CURAND_RNG_PSEUDO_DEFAULT), CURAND_STATUS_TYPE_ERROR);
    assert_int_equal(cuMemFree(d), CUDA_SUCCESS);
}

/* Same seed and offset, same numbers however the output is split; another
 * seed, another offset or the other generator type, other numbers. */
static void test_determinism(void **state)
{
    (void)state;
    const size_t n = 4096;
    CUdeviceptr a = dalloc(n * 4), b = dalloc(n * 4);
    curandGenerator_t g;
    assert_int_equal(curandCreateGenerator(&g, CURAND_RNG_PSEUDO_PHILOX4_32_10), CURAND_STATUS_SUCCESS);
    assert_int_equal(curandSetPseudoRandomGeneratorSeed(g, 1234), CURAND_STATUS_SUCCESS);
    assert_int_equal(curandGenerate(g, (unsigned *)(uintptr_t)a, n), CURAND_STATUS_SUCCESS);
    /* the same sequence in three pieces, from a fresh start */
    assert_int_equal(curandSetGeneratorOffset(g, 0), CURAND_STATUS_SUCCESS);
    assert_int_equal(curandGenerate(g, (unsigned *)(uintptr_t)b, 1000), CURAND_STATUS_SUCCESS);
    assert_int_equal(curandGenerate(g, (unsigned *)(uintptr_t)(b + 4000), 1), CURAND_STATUS_SUCCESS);
    assert_int_equal(curandGenerate(g, (unsigned *)(uintptr_t)(b + 4004), n - 1001), CURAND_STATUS_SUCCESS);
    unsigned *ha = fetch(a, n * 4), *hb = fetch(b, n * 4);
    assert_memory_equal(ha, hb, n * 4);
    /* an offset starts the sequence further on */
    assert_int_equal(curandSetGeneratorOffset(g, 100), CURAND_STATUS_SUCCESS);
    assert_int_equal(curandGenerate(g, (unsigned *)(uintptr_t)b, 10), CURAND_STATUS_SUCCESS);
    unsigned *hc = fetch(b, 40);
    assert_memory_equal(hc, ha + 100, 40);
    /* another seed */
    assert_int_equal(curandSetPseudoRandomGeneratorSeed(g, 1235), CURAND_STATUS_SUCCESS);
    assert_int_equal(curandSetGeneratorOffset(g, 0), CURAND_STATUS_SUCCESS);
    assert_int_equal(curandGenerate(g, (unsigned *)(uintptr_t)b, n), CURAND_STATUS_SUCCESS);
    unsigned *hd = fetch(b, n * 4);
    int same = 0;
    for (size_t i = 0; i < n; i++)
        same += ha[i] == hd[i];
    assert_true(same < 8);
    /* the default generator (XORWOW) has its own sequence */
    curandGenerator_t x;
    assert_int_equal(curandCreateGenerator(&x, CURAND_RNG_PSEUDO_XORWOW), CURAND_STATUS_SUCCESS);
    assert_int_equal(curandSetPseudoRandomGeneratorSeed(x, 1234), CURAND_STATUS_SUCCESS);
    assert_int_equal(curandGenerate(x, (unsigned *)(uintptr_t)b, n), CURAND_STATUS_SUCCESS);
    unsigned *he = fetch(b, n * 4);
    same = 0;
    for (size_t i = 0; i < n; i++)
        same += ha[i] == he[i];
    assert_true(same < 8);
    /* normals split at an even count agree with one call */
    assert_int_equal(curandSetGeneratorOffset(x, 0), CURAND_STATUS_SUCCESS);
    assert_int_equal(curandGenerateNormal(x, (float *)(uintptr_t)a, 64, 1.0f, 2.0f), CURAND_STATUS_SUCCESS);
    assert_int_equal(curandSetGeneratorOffset(x, 0), CURAND_STATUS_SUCCESS);
    assert_int_equal(curandGenerateNormal(x, (float *)(uintptr_t)b, 18, 1.0f, 2.0f), CURAND_STATUS_SUCCESS);
    assert_int_equal(curandGenerateNormal(x, (float *)(uintptr_t)(b + 72), 46, 1.0f, 2.0f), CURAND_STATUS_SUCCESS);
    float *na = fetch(a, 256), *nb = fetch(b, 256);
    assert_memory_equal(na, nb, 256);
    free(ha); free(hb); free(hc); free(hd); free(he); free(na); free(nb);
    curandDestroyGenerator(g);
    curandDestroyGenerator(x);
    cuMemFree(a);
    cuMemFree(b);
}

static void moments_f(const float *v, size_t n, double *mean, double *var)
{
    double s = 0, s2 = 0;
    for (size_t i = 0; i < n; i++) {
        s += v[i];
        s2 += (double)v[i] * v[i];
    }
    *mean = s / (double)n;
    *var = s2 / (double)n - *mean * *mean;
}

static void test_distributions(void **state)
{
    (void)state;
    curandGenerator_t g;
    assert_int_equal(curandCreateGenerator(&g, CURAND_RNG_PSEUDO_DEFAULT), CURAND_STATUS_SUCCESS);
    assert_int_equal(curandSetPseudoRandomGeneratorSeed(g, 42), CURAND_STATUS_SUCCESS);
    CUdeviceptr d = dalloc((size_t)N * 8);
    double mean, var;

    /* uniform: in (0, 1], mean 1/2, variance 1/12 */
    assert_int_equal(curandGenerateUniform(g, (float *)(uintptr_t)d, N), CURAND_STATUS_SUCCESS);
    float *u = fetch(d, (size_t)N * 4);
    for (size_t i = 0; i < N; i++)
        assert_true(u[i] > 0.0f && u[i] <= 1.0f);
    moments_f(u, N, &mean, &var);
    assert_true(fabs(mean - 0.5) < 0.002);
    assert_true(fabs(var - 1.0 / 12) < 0.002);
    free(u);

    assert_int_equal(curandGenerateUniformDouble(g, (double *)(uintptr_t)d, N), CURAND_STATUS_SUCCESS);
    double *ud = fetch(d, (size_t)N * 8), sd = 0;
    for (size_t i = 0; i < N; i++) {
        assert_true(ud[i] > 0.0 && ud[i] <= 1.0);
        sd += ud[i];
    }
    assert_true(fabs(sd / N - 0.5) < 0.002);
    free(ud);

    /* normal(3, 2): mean 3, variance 4 */
    assert_int_equal(curandGenerateNormal(g, (float *)(uintptr_t)d, N, 3.0f, 2.0f), CURAND_STATUS_SUCCESS);
    float *nv = fetch(d, (size_t)N * 4);
    moments_f(nv, N, &mean, &var);
    assert_true(fabs(mean - 3.0) < 0.01);
    assert_true(fabs(var - 4.0) < 0.04);
    free(nv);

    assert_int_equal(curandGenerateNormalDouble(g, (double *)(uintptr_t)d, N, -1.0, 0.5), CURAND_STATUS_SUCCESS);
    double *nd = fetch(d, (size_t)N * 8), s = 0, s2 = 0;
    for (size_t i = 0; i < N; i++) {
        s += nd[i];
        s2 += nd[i] * nd[i];
    }
    assert_true(fabs(s / N + 1.0) < 0.005);
    assert_true(fabs(s2 / N - (s / N) * (s / N) - 0.25) < 0.005);
    free(nd);

    /* log-normal(0, 0.5): mean exp(0.125) */
    assert_int_equal(curandGenerateLogNormal(g, (float *)(uintptr_t)d, N, 0.0f, 0.5f), CURAND_STATUS_SUCCESS);
    float *ln = fetch(d, (size_t)N * 4);
    for (size_t i = 0; i < N; i++)
        assert_true(ln[i] > 0.0f);
    moments_f(ln, N, &mean, &var);
    assert_true(fabs(mean - exp(0.125)) < 0.01);
    free(ln);

    /* Poisson: integers with mean and variance lambda, small and large */
    static const double lambdas[2] = {3.5, 250.0};
    for (int k = 0; k < 2; k++) {
        assert_int_equal(curandGeneratePoisson(g, (unsigned *)(uintptr_t)d, N, lambdas[k]), CURAND_STATUS_SUCCESS);
        unsigned *pv = fetch(d, (size_t)N * 4);
        double ps = 0, ps2 = 0;
        for (size_t i = 0; i < N; i++) {
            ps += pv[i];
            ps2 += (double)pv[i] * pv[i];
        }
        double m = ps / N, vv = ps2 / N - m * m;
        assert_true(fabs(m - lambdas[k]) < 0.01 * lambdas[k]);
        assert_true(fabs(vv - lambdas[k]) < 0.03 * lambdas[k]);
        free(pv);
    }
    curandDestroyGenerator(g);
    cuMemFree(d);
}

/* Launched on the generator's stream: after cuStreamSynchronize on it the
 * host sees the numbers; the same numbers as on the default stream. */
static void test_stream(void **state)
{
    (void)state;
    const size_t n = 1 << 16;
    CUstream s;
    assert_int_equal(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUdeviceptr a = dalloc(n * 4), b = dalloc(n * 4);
    assert_int_equal(cuMemsetD8(a, 0, n * 4), CUDA_SUCCESS);
    curandGenerator_t g;
    assert_int_equal(curandCreateGenerator(&g, CURAND_RNG_PSEUDO_DEFAULT), CURAND_STATUS_SUCCESS);
    assert_int_equal(curandSetStream(g, (cudaStream_t)s), CURAND_STATUS_SUCCESS);
    assert_int_equal(curandGenerateUniform(g, (float *)(uintptr_t)a, n), CURAND_STATUS_SUCCESS);
    assert_int_equal(cuStreamSynchronize(s), CUDA_SUCCESS);
    float *ha = fetch(a, n * 4);
    for (size_t i = 0; i < n; i++)
        assert_true(ha[i] > 0.0f);
    assert_int_equal(curandSetStream(g, NULL), CURAND_STATUS_SUCCESS);
    assert_int_equal(curandSetGeneratorOffset(g, 0), CURAND_STATUS_SUCCESS);
    assert_int_equal(curandGenerateUniform(g, (float *)(uintptr_t)b, n), CURAND_STATUS_SUCCESS);
    float *hb = fetch(b, n * 4);
    assert_memory_equal(ha, hb, n * 4);
    free(ha);
    free(hb);
    curandDestroyGenerator(g);
    assert_int_equal(curandSetStream(g, NULL), CURAND_STATUS_NOT_INITIALIZED);
    cuStreamDestroy(s);
    cuMemFree(a);
    cuMemFree(b);
}

/* The host writes nothing itself: with the kernels' bodies off, the
 * buffer keeps the pattern it held. Copies do not run either with compute
 * off and device memory is not committed, so the buffer is managed
 * memory, written and read by the host directly. */
static int child_compute_off(void)
{
    CUdevice dev;
    CHILD_CHECK(cuInit(0) == CUDA_SUCCESS && cuDeviceGet(&dev, 0) == CUDA_SUCCESS &&
                cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS && cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
    const size_t n = 4096;
    CUdeviceptr d;
    CHILD_CHECK(cuMemAllocManaged(&d, n * 4, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS);
    unsigned *h = (unsigned *)(uintptr_t)d;
    for (size_t i = 0; i < n; i++)
        h[i] = 0xA5A5A5A5u;
    curandGenerator_t g;
    CHILD_CHECK(curandCreateGenerator(&g, CURAND_RNG_PSEUDO_DEFAULT) == CURAND_STATUS_SUCCESS);
    CHILD_CHECK(curandGenerate(g, h, n) == CURAND_STATUS_SUCCESS);
    CHILD_CHECK(curandGenerateNormal(g, (float *)h, n, 0.0f, 1.0f) == CURAND_STATUS_SUCCESS);
    CHILD_CHECK(cuCtxSynchronize() == CUDA_SUCCESS);
    for (size_t i = 0; i < n; i++)
        CHILD_CHECK(h[i] == 0xA5A5A5A5u);
    return 0;
}

static void test_compute_off(void **state)
{
    (void)state;
    static const char *const env[] = {"SIMGPU_COMPUTE=0", NULL};
    int st = sim_child_run(env, "compute_off");
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    /* and with the bodies on, the same calls do overwrite the pattern */
    st = sim_child_run(NULL, "compute_off");
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 1);
}

static int setup(void **state)
{
    (void)state;
    drv_up();
    return 0;
}

int main(int argc, char **argv)
{
    static const struct sim_child_body bodies[] = {{"compute_off", child_compute_off}};
    sim_child_main(argc, argv, bodies, sizeof bodies / sizeof bodies[0]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_statuses),     cmocka_unit_test(test_determinism), cmocka_unit_test(test_distributions),
        cmocka_unit_test(test_stream),       cmocka_unit_test(test_compute_off),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
