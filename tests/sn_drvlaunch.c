/*
 * sn_drvlaunch.c — kernels launched through the CUDA driver API only, as
 * NVIDIA's libraries and programs built with nvcc's static runtime launch
 * theirs: a module loaded with cuModuleLoadData, its functions found with
 * cuModuleGetFunction, launched with cuLaunchKernel (arguments given as
 * kernelParams, and packed in one buffer through extra), with
 * cuLaunchKernelEx, and captured on a stream into a graph that
 * cuGraphLaunch replays. The module is the simulator's "host module"
 * (sim/simgpu.h): CPU-bodied kernels, so the results are real. Twelve
 * buffers of 2 MiB; every round touches a few of them and reads the
 * others, so that a memory manager at a third of the program's memory
 * moves them. Prints every buffer's checksum at the end, and how many
 * launches and copies ran (the captured launch is not one);
 * test_sn_driver.sh requires the same output with and without libsn.
 * Exits 77 where the module cannot be loaded (not the simulator).
 */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/simgpu.h"

#define NBUF 12
#define COUNT (512u * 1024u) /* floats: 2 MiB */

#define CK(call)                                                                                   \
    do {                                                                                           \
        CUresult rc_ = (call);                                                                     \
        if (rc_ != CUDA_SUCCESS) {                                                                 \
            fprintf(stderr, "sn_drvlaunch: %s failed (%d) at line %d\n", #call, (int)rc_, __LINE__); \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

/* axpy(float *y, const float *x, float a): y = a x + y */
static void k_axpy(void **args, dim3 grid, dim3 block)
{
    (void)grid;
    (void)block;
    float *y = *(float **)args[0];
    const float *x = *(const float **)args[1];
    float a = *(const float *)args[2];
    for (size_t i = 0; i < COUNT; i++)
        y[i] = a * x[i] + y[i];
}

/* fill(float *y, float v, unsigned stride): y[i] = v + i % stride */
static void k_fill(void **args, dim3 grid, dim3 block)
{
    (void)grid;
    (void)block;
    float *y = *(float **)args[0];
    float v = *(const float *)args[1];
    unsigned stride = *(const unsigned *)args[2];
    for (size_t i = 0; i < COUNT; i++)
        y[i] = v + (float)(i % stride);
}

static CUdeviceptr buf[NBUF];
static int ncalls; /* launches and copies that ran (not the captured one) */

static void read_others(const int *keep, int nkeep, int round)
{
    float x;
    for (int b = NBUF - 1; b >= 0; b--) {
        int kept = 0;
        for (int k = 0; k < nkeep; k++)
            kept |= keep[k] == b;
        if (!kept) {
            CK(cuMemcpyDtoH(&x, buf[b] + 4 * (CUdeviceptr)round, sizeof x));
            ncalls++;
        }
    }
}

int main(void)
{
    static const size_t axpy_sizes[3] = {sizeof(void *), sizeof(void *), sizeof(float)};
    static const size_t fill_sizes[3] = {sizeof(void *), sizeof(float), sizeof(unsigned)};
    static const simgpu_host_module_kernel kernels[2] = {
        {"axpy", k_axpy, 3, axpy_sizes},
        {"fill", k_fill, 3, fill_sizes},
    };
    static const simgpu_host_module image = {SIMGPU_HOST_MODULE_MAGIC, 2, kernels};
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction axpy, fill;
    CUstream s;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    if (cuModuleLoadData(&mod, &image) != CUDA_SUCCESS) {
        printf("needs the simulated device (host modules)\n");
        return 77;
    }
    CK(cuModuleGetFunction(&axpy, mod, "axpy"));
    CK(cuModuleGetFunction(&fill, mod, "fill"));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int b = 0; b < NBUF; b++) {
        CK(cuMemAlloc(&buf[b], COUNT * sizeof(float)));
        float v = (float)b;
        unsigned stride = 7u + (unsigned)b;
        void *p[3] = {&buf[b], &v, &stride};
        CK(cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, s, p, NULL));
        ncalls++;
    }
    CK(cuStreamSynchronize(s));
    for (int round = 0; round < 6; round++) {
        int y = (round * 5) % NBUF, x = (round * 5 + 3) % NBUF, z = (round * 5 + 7) % NBUF;
        int keep[3] = {y, x, z};
        read_others(keep, 3, round);
        float a = 0.5f + 0.125f * (float)round;
        /* kernelParams */
        void *p[3] = {&buf[y], &buf[x], &a};
        CK(cuLaunchKernel(axpy, 1, 1, 1, 1, 1, 1, 0, s, p, NULL));
        /* one packed buffer, at the natural-alignment offsets */
        struct {
            CUdeviceptr y, x;
            float a;
        } packed = {buf[z], buf[y], -0.25f};
        size_t size = sizeof packed;
        void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                         CU_LAUNCH_PARAM_END};
        CK(cuLaunchKernel(axpy, 1, 1, 1, 1, 1, 1, 0, s, NULL, extra));
        /* the extended launch */
        CUlaunchConfig cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
        cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
        cfg.hStream = s;
        float c = 2.0f;
        void *q[3] = {&buf[x], &buf[z], &c};
        CK(cuLaunchKernelEx(&cfg, axpy, q, NULL));
        ncalls += 3;
        CK(cuStreamSynchronize(s));
    }
    /* a graph captured through the driver, replayed */
    CUgraph g;
    CUgraphExec ge;
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    float a = 0.75f;
    void *p[3] = {&buf[1], &buf[2], &a};
    CK(cuLaunchKernel(axpy, 1, 1, 1, 1, 1, 1, 0, s, p, NULL));
    CK(cuStreamEndCapture(s, &g));
    CK(cuGraphInstantiateWithFlags(&ge, g, 0));
    for (int r = 0; r < 4; r++) {
        int keep[2] = {1, 2};
        read_others(keep, 2, r);
        CK(cuGraphLaunch(ge, s));
        ncalls++;
        CK(cuStreamSynchronize(s));
    }
    CK(cuGraphExecDestroy(ge));
    CK(cuGraphDestroy(g));
    float *host = malloc(COUNT * sizeof(float));
    if (!host)
        return 1;
    for (int b = 0; b < NBUF; b++) {
        CK(cuMemcpyDtoH(host, buf[b], COUNT * sizeof(float)));
        ncalls++;
        uint64_t h = 0xcbf29ce484222325ull;
        const unsigned char *q = (const unsigned char *)host;
        for (size_t i = 0; i < COUNT * sizeof(float); i++)
            h = (h ^ q[i]) * 0x100000001b3ull;
        printf("buffer %d: %016llx\n", b, (unsigned long long)h);
    }
    printf("calls %d\n", ncalls);
    free(host);
    for (int b = 0; b < NBUF; b++)
        CK(cuMemFree(buf[b]));
    CK(cuStreamDestroy(s));
    CK(cuModuleUnload(mod));
    return 0;
}
