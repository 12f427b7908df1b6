/*
 * test_sim_driver_launch.c — modules, launches, copies, sets and graphs of
 * the simulated driver, used the way cuRAND, cuFFT or NCCL use the real one:
 * through the driver API only (linked with the real libcuda import library,
 * nothing of the runtime). Kernels come from a host module (sim/simgpu.h),
 * so launches really run and their results are compared byte for byte.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cuda.h>

#include "sim/simgpu.h"

#define CK(x) assert_int_equal((x), CUDA_SUCCESS)

/* ---- the host module ----------------------------------------------------------- */

/* y[i] += a * x[i] for i < n */
static void k_axpy(void **args, dim3 grid, dim3 block)
{
    (void)grid; (void)block;
    float *y = *(float **)args[0];
    const float *x = *(const float **)args[1];
    float a = *(float *)args[2];
    int n = *(int *)args[3];
    for (int i = 0; i < n; i++)
        y[i] += a * x[i];
}

/* *counter += step, and records the launch's grid.x */
static void k_count(void **args, dim3 grid, dim3 block)
{
    (void)block;
    int *c = *(int **)args[0];
    c[0] += *(int *)args[1];
    c[1] = (int)grid.x;
}

static void k_mixed(void **args, dim3 grid, dim3 block) { (void)args; (void)grid; (void)block; }

static const size_t axpy_sizes[] = {8, 8, 4, 4};
static const size_t count_sizes[] = {8, 4};
static const size_t mixed_sizes[] = {1, 8, 2, 4, 1, 16};
static const simgpu_host_module_kernel kernels[] = {
    {"axpy", k_axpy, 4, axpy_sizes},
    {"count", k_count, 2, count_sizes},
    {"mixed", k_mixed, 6, mixed_sizes},
};
static const simgpu_host_module host_mod = {SIMGPU_HOST_MODULE_MAGIC, 3, kernels};

static CUcontext ctx;

static int setup(void **state)
{
    (void)state;
    if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS)
        return -1;
    return cuCtxSetCurrent(ctx) == CUDA_SUCCESS ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return cuDevicePrimaryCtxRelease(0) == CUDA_SUCCESS ? 0 : -1;
}

/* ---- modules and functions -------------------------------------------------------- */

static void test_module_load_and_functions(void **state)
{
    (void)state;
    CUmodule m, bad;
    CK(cuModuleLoadData(&m, &host_mod));
    static const unsigned char junk[64] = {1, 2, 3, 4};
    assert_int_equal(cuModuleLoadData(&bad, junk), CUDA_ERROR_INVALID_IMAGE);
    assert_int_equal(cuModuleLoadData(&bad, NULL), CUDA_ERROR_INVALID_VALUE);
    /* a kernel without a body is not a valid host module */
    simgpu_host_module_kernel nobody = {"x", NULL, 0, NULL};
    simgpu_host_module badmod = {SIMGPU_HOST_MODULE_MAGIC, 1, &nobody};
    assert_int_equal(cuModuleLoadData(&bad, &badmod), CUDA_ERROR_INVALID_IMAGE);

    CUfunction f, g;
    CK(cuModuleGetFunction(&f, m, "mixed"));
    CK(cuModuleGetFunction(&g, m, "mixed"));
    assert_ptr_equal(f, g);
    assert_int_equal(cuModuleGetFunction(&g, m, "nope"), CUDA_ERROR_NOT_FOUND);
    assert_int_equal(cuModuleGetFunction(&g, (CUmodule)&f, "mixed"), CUDA_ERROR_INVALID_HANDLE);

    /* natural alignment: char@0, double@8, short@16, int@20, char@24, 16 bytes@32 */
    static const size_t want_off[] = {0, 8, 16, 20, 24, 32};
    for (size_t i = 0; i < 6; i++) {
        size_t off = 99, size = 99;
        CK(cuFuncGetParamInfo(f, i, &off, &size));
        assert_int_equal(off, want_off[i]);
        assert_int_equal(size, mixed_sizes[i]);
    }
    size_t off, size;
    assert_int_equal(cuFuncGetParamInfo(f, 6, &off, &size), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuFuncGetParamInfo((CUfunction)&off, 0, &off, &size), CUDA_ERROR_INVALID_HANDLE);
    const char *name = NULL;
    CK(cuFuncGetName(&name, f));
    assert_string_equal(name, "mixed");

    CK(cuModuleUnload(m));
    /* its handles are gone with it */
    assert_int_equal(cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cuFuncGetName(&name, f), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
}

/* ---- launches ------------------------------------------------------------------------- */

static void fill_floats(float *v, int n, float base)
{
    for (int i = 0; i < n; i++)
        v[i] = base + (float)i;
}

static void test_launch_params_and_extra(void **state)
{
    (void)state;
    CUmodule m;
    CUfunction f;
    CK(cuModuleLoadDataEx(&m, &host_mod, 0, NULL, NULL));
    CK(cuModuleGetFunction(&f, m, "axpy"));
    enum { N = 64 };
    float hx[N], hy[N], out[N];
    fill_floats(hx, N, 1.0f);
    fill_floats(hy, N, 100.0f);
    CUdeviceptr x, y;
    CK(cuMemAlloc(&x, sizeof hx));
    CK(cuMemAlloc(&y, sizeof hy));
    CK(cuMemcpyHtoD(x, hx, sizeof hx));
    CK(cuMemcpyHtoD(y, hy, sizeof hy));

    float a = 2.0f;
    int n = N;
    void *params[] = {&y, &x, &a, &n};
    CK(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, NULL, params, NULL));
    CK(cuMemcpyDtoH(out, y, sizeof out));
    for (int i = 0; i < N; i++)
        assert_true(out[i] == hy[i] + 2.0f * hx[i]);

    /* the same through a parameter buffer laid out as cuFuncGetParamInfo says */
    unsigned char buf[24];
    size_t bsize = sizeof buf, off, sz;
    float a2 = -1.0f;
    CK(cuFuncGetParamInfo(f, 0, &off, &sz));
    memcpy(buf + off, &y, sz);
    CK(cuFuncGetParamInfo(f, 1, &off, &sz));
    memcpy(buf + off, &x, sz);
    CK(cuFuncGetParamInfo(f, 2, &off, &sz));
    assert_int_equal(off, 16);
    memcpy(buf + off, &a2, sz);
    CK(cuFuncGetParamInfo(f, 3, &off, &sz));
    assert_int_equal(off, 20);
    memcpy(buf + off, &n, sz);
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &bsize, CU_LAUNCH_PARAM_END};
    CK(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, NULL, NULL, extra));
    CK(cuMemcpyDtoH(out, y, sizeof out));
    for (int i = 0; i < N; i++)
        assert_true(out[i] == hy[i] + hx[i]); /* + 2x - x */

    /* refusals, none of which runs the body */
    size_t small = 20;
    void *short_extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &small,
                           CU_LAUNCH_PARAM_END};
    assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, short_extra), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, extra), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuLaunchKernel(f, 0, 1, 1, 1, 1, 1, 0, NULL, params, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 1025, 1, 1, 0, NULL, params, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, (CUstream)&a, params, NULL), CUDA_ERROR_INVALID_HANDLE);
    CK(cuMemcpyDtoH(out, y, sizeof out));
    for (int i = 0; i < N; i++)
        assert_true(out[i] == hy[i] + hx[i]);

    /* cuLaunchKernelEx: attributes are validated, cooperative checked for residency */
    CUlaunchAttribute attr[2];
    memset(attr, 0, sizeof attr);
    attr[0].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    attr[0].value.priority = 0;
    CUlaunchConfig cfg = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 64, .blockDimY = 1,
                          .blockDimZ = 1, .hStream = NULL, .attrs = attr, .numAttrs = 1};
    CK(cuLaunchKernelEx(&cfg, f, params, NULL)); /* y += 2x */
    CK(cuMemcpyDtoH(out, y, sizeof out));
    for (int i = 0; i < N; i++)
        assert_true(out[i] == hy[i] + 3.0f * hx[i]);
    attr[0].id = (CUlaunchAttributeID)1000;
    assert_int_equal(cuLaunchKernelEx(&cfg, f, params, NULL), CUDA_ERROR_INVALID_VALUE);
    cfg.attrs = NULL;
    assert_int_equal(cuLaunchKernelEx(&cfg, f, params, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuLaunchKernelEx(NULL, f, params, NULL), CUDA_ERROR_INVALID_VALUE);
    attr[0].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attr[0].value.cooperative = 1;
    cfg.attrs = attr;
    cfg.gridDimX = 1u << 20;
    assert_int_equal(cuLaunchKernelEx(&cfg, f, params, NULL), CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
    assert_int_equal(cuLaunchCooperativeKernel(f, 1u << 20, 1, 1, 64, 1, 1, 0, NULL, params),
                     CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
    CK(cuLaunchCooperativeKernel(f, 1, 1, 1, 64, 1, 1, 0, NULL, params)); /* y += 2x */
    CK(cuMemcpyDtoH(out, y, sizeof out));
    for (int i = 0; i < N; i++)
        assert_true(out[i] == hy[i] + 5.0f * hx[i]);

    CK(cuMemFree(x));
    CK(cuMemFree(y));
    CK(cuModuleUnload(m));
}

static void test_library_kernels(void **state)
{
    (void)state;
    CUlibrary lib;
    CUkernel k;
    CUfunction f;
    CK(cuLibraryLoadData(&lib, &host_mod, NULL, NULL, 0, NULL, NULL, 0));
    CK(cuLibraryGetKernel(&k, lib, "count"));
    assert_int_equal(cuLibraryGetKernel(&k, lib, "absent"), CUDA_ERROR_NOT_FOUND);
    CK(cuLibraryGetKernel(&k, lib, "count"));
    CK(cuKernelGetFunction(&f, k));
    CUdeviceptr c;
    CK(cuMemAlloc(&c, 8));
    CK(cuMemsetD32(c, 0, 2));
    int step = 5;
    void *params[] = {&c, &step};
    CK(cuLaunchKernel(f, 3, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
    int got[2];
    CK(cuMemcpyDtoH(got, c, sizeof got));
    assert_int_equal(got[0], 5);
    assert_int_equal(got[1], 3);
    /* a library is not a module */
    assert_int_equal(cuModuleUnload((CUmodule)lib), CUDA_ERROR_INVALID_HANDLE);
    CK(cuLibraryUnload(lib));
    assert_int_equal(cuKernelGetFunction(&f, k), CUDA_ERROR_INVALID_HANDLE);
    CK(cuMemFree(c));
}

/* ---- copies and sets --------------------------------------------------------------------- */

static void test_sets(void **state)
{
    (void)state;
    enum { P = 64, W = 10, H = 4 };
    CUdeviceptr d;
    CK(cuMemAlloc(&d, P * H));
    unsigned char h[P * H];
    CK(cuMemsetD8(d, 0x11, P * H));
    CK(cuMemsetD16(d, 0xBEEF, 3));
    CK(cuMemsetD16Async(d + 8, 0x1234, 2, NULL));
    CK(cuMemcpyDtoH(h, d, 16));
    uint16_t s16[8];
    memcpy(s16, h, 16);
    assert_int_equal(s16[0], 0xBEEF);
    assert_int_equal(s16[2], 0xBEEF);
    assert_int_equal(s16[3], 0x1111);
    assert_int_equal(s16[4], 0x1234);
    assert_int_equal(s16[5], 0x1234);
    assert_int_equal(s16[6], 0x1111);

    /* 2-D sets: Width elements in each of Height rows, pitch bytes apart */
    CK(cuMemsetD8(d, 0, P * H));
    CK(cuMemsetD2D8(d, P, 0xAB, W, H));
    CK(cuMemcpyDtoH(h, d, sizeof h));
    for (int r = 0; r < H; r++)
        for (int i = 0; i < P; i++)
            assert_int_equal(h[r * P + i], i < W ? 0xAB : 0);
    CK(cuMemsetD2D16(d, P, 0xCAFE, W, H));
    CK(cuMemcpyDtoH(h, d, sizeof h));
    for (int r = 0; r < H; r++) {
        uint16_t v;
        memcpy(&v, h + r * P + 2 * (W - 1), 2);
        assert_int_equal(v, 0xCAFE);
        assert_int_equal(h[r * P + 2 * W], 0);
    }
    CK(cuMemsetD2D32(d, P, 0x01020304u, W, 2));
    CK(cuMemsetD2D8Async(d + 2 * P, P, 0x55, 3, 2, NULL));
    CK(cuMemsetD2D16Async(d + 2 * P + 8, P, 0x6666, 2, 2, NULL));
    CK(cuMemsetD2D32Async(d + 2 * P + 16, P, 0x77777777u, 2, 2, NULL));
    CK(cuMemcpyDtoH(h, d, sizeof h));
    uint32_t v32;
    memcpy(&v32, h + P + 4 * (W - 1), 4);
    assert_int_equal(v32, 0x01020304u);
    assert_int_equal(h[P + 4 * W], 0);
    for (int r = 2; r < 4; r++) {
        assert_int_equal(h[r * P + 2], 0x55);
        assert_int_equal(h[r * P + 3], 0xCA); /* untouched: the high byte of the 16-bit set's 0xCAFE */
        assert_int_equal(h[r * P + 11], 0x66);
        assert_int_equal(h[r * P + 23], 0x77);
        assert_int_equal(h[r * P + 24], 0);
    }
    assert_int_equal(cuMemsetD2D8(d, 4, 0, 8, 2), CUDA_ERROR_INVALID_VALUE); /* width past pitch */
    int host;
    assert_int_equal(cuMemsetD16((CUdeviceptr)(uintptr_t)&host, 0, 1), CUDA_ERROR_INVALID_VALUE);
    CK(cuMemFree(d));
}

static void test_copies_2d_3d_peer(void **state)
{
    (void)state;
    enum { W = 12, H = 5, D = 3, HP = 16, DP = 32, SH = 7 };
    unsigned char src[HP * SH * D], back[HP * SH * D];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (unsigned char)(i * 7 + 1);
    CUdeviceptr d;
    CK(cuMemAlloc(&d, DP * H * D));
    CK(cuMemsetD8(d, 0, DP * H * D));

    CUDA_MEMCPY2D c2 = {0};
    c2.srcMemoryType = CU_MEMORYTYPE_HOST;
    c2.srcHost = src;
    c2.srcPitch = HP;
    c2.srcXInBytes = 2;
    c2.srcY = 1;
    c2.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c2.dstDevice = d;
    c2.dstPitch = DP;
    c2.WidthInBytes = W;
    c2.Height = H;
    CK(cuMemcpy2D(&c2));
    unsigned char dev[DP * H * D];
    CK(cuMemcpyDtoH(dev, d, sizeof dev));
    for (int r = 0; r < H; r++)
        for (int i = 0; i < DP; i++)
            assert_int_equal(dev[r * DP + i], i < W ? src[(r + 1) * HP + 2 + i] : 0);

    /* back to the host through the unaligned and async forms, unified on the device side */
    memset(back, 0, sizeof back);
    CUDA_MEMCPY2D b2 = {0};
    b2.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
    b2.srcDevice = d;
    b2.srcPitch = DP;
    b2.dstMemoryType = CU_MEMORYTYPE_HOST;
    b2.dstHost = back;
    b2.dstPitch = HP;
    b2.WidthInBytes = W;
    b2.Height = H;
    CK(cuMemcpy2DUnaligned(&b2));
    for (int r = 0; r < H; r++)
        assert_memory_equal(back + r * HP, src + (r + 1) * HP + 2, W);
    memset(back, 0, sizeof back);
    CK(cuMemcpy2DAsync(&b2, NULL));
    CK(cuStreamSynchronize(NULL));
    for (int r = 0; r < H; r++)
        assert_memory_equal(back + r * HP, src + (r + 1) * HP + 2, W);
    b2.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    b2.srcArray = (CUarray)&b2;
    assert_int_equal(cuMemcpy2D(&b2), CUDA_ERROR_NOT_SUPPORTED);
    b2.srcMemoryType = CU_MEMORYTYPE_HOST; /* a host source that is device memory */
    b2.srcHost = (void *)(uintptr_t)d;
    b2.srcArray = NULL;
    assert_int_equal(cuMemcpy2D(&b2), CUDA_ERROR_INVALID_VALUE);

    /* 3-D: host slices SH rows apart, device slices H rows apart (not one 2-D copy) */
    CUDA_MEMCPY3D c3 = {0};
    c3.srcMemoryType = CU_MEMORYTYPE_HOST;
    c3.srcHost = src;
    c3.srcPitch = HP;
    c3.srcHeight = SH;
    c3.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c3.dstDevice = d;
    c3.dstPitch = DP;
    c3.dstHeight = H;
    c3.WidthInBytes = W;
    c3.Height = H;
    c3.Depth = D;
    CK(cuMemcpy3D(&c3));
    CK(cuMemcpyDtoH(dev, d, sizeof dev));
    for (int z = 0; z < D; z++)
        for (int r = 0; r < H; r++)
            assert_memory_equal(dev + (z * H + r) * DP, src + (z * SH + r) * HP, W);
    CUDA_MEMCPY3D b3 = {0};
    b3.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    b3.srcDevice = d;
    b3.srcPitch = DP;
    b3.srcHeight = H;
    b3.srcZ = 1;
    b3.dstMemoryType = CU_MEMORYTYPE_HOST;
    b3.dstHost = back;
    b3.dstPitch = HP;
    b3.dstHeight = H;
    b3.WidthInBytes = W;
    b3.Height = H;
    b3.Depth = 2;
    memset(back, 0, sizeof back);
    CK(cuMemcpy3DAsync(&b3, NULL));
    CK(cuCtxSynchronize());
    for (int z = 0; z < 2; z++)
        for (int r = 0; r < H; r++)
            assert_memory_equal(back + (z * H + r) * HP, src + ((z + 1) * SH + r) * HP, W);
    b3.srcLOD = 1;
    assert_int_equal(cuMemcpy3D(&b3), CUDA_ERROR_INVALID_VALUE);
    b3.srcLOD = 0;
    b3.srcHeight = H - 1;
    assert_int_equal(cuMemcpy3D(&b3), CUDA_ERROR_INVALID_VALUE);

    /* peer copies within the one device, named by its context */
    CUdeviceptr e;
    CK(cuMemAlloc(&e, 64));
    CK(cuMemcpyPeer(e, ctx, d, ctx, 64));
    CK(cuMemcpyPeerAsync(e + 32, ctx, d + DP, ctx, 32, NULL));
    unsigned char pe[64];
    CK(cuMemcpyDtoH(pe, e, 64));
    assert_memory_equal(pe, dev, 32);
    assert_memory_equal(pe + 32, dev + DP, 32);
    assert_int_equal(cuMemcpyPeer(e, (CUcontext)&pe, d, ctx, 64), CUDA_ERROR_INVALID_CONTEXT);
    CK(cuMemFree(e));
    CK(cuMemFree(d));
}

/* ---- per-thread default stream twins -------------------------------------------------------------- */

typedef CUresult (*getproc_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static void *proc(const char *name, cuuint64_t flags)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    if (cuGetProcAddress(name, &fn, CUDA_VERSION, flags, &st) != CUDA_SUCCESS || st != CU_GET_PROC_ADDRESS_SUCCESS)
        return NULL;
    return fn;
}

static void test_per_thread_twins(void **state)
{
    (void)state;
    static const char *const names[] = {
        "cuMemcpyHtoD", "cuMemcpyDtoH", "cuMemcpyDtoD", "cuMemcpy", "cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync",
        "cuMemcpyDtoDAsync", "cuMemcpyAsync", "cuMemcpy2D", "cuMemcpy2DUnaligned", "cuMemcpy2DAsync",
        "cuMemcpy3D", "cuMemcpy3DAsync", "cuMemcpyPeer", "cuMemcpyPeerAsync", "cuMemsetD8", "cuMemsetD16",
        "cuMemsetD32", "cuMemsetD8Async", "cuMemsetD16Async", "cuMemsetD32Async", "cuMemsetD2D8",
        "cuMemsetD2D16", "cuMemsetD2D32", "cuMemsetD2D8Async", "cuMemsetD2D16Async", "cuMemsetD2D32Async",
        "cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel", "cuStreamBeginCapture",
        "cuStreamGetCaptureInfo", "cuGraphLaunch"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *plain = proc(names[i], CU_GET_PROC_ADDRESS_DEFAULT);
        void *pt = proc(names[i], CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
        if (!plain || !pt || plain == pt)
            fail_msg("%s: no per-thread twin (%p, %p)", names[i], plain, pt);
    }
    assert_non_null(proc("cuGraphInstantiate", CU_GET_PROC_ADDRESS_DEFAULT));
    assert_ptr_equal(proc("cuGraphInstantiate", CU_GET_PROC_ADDRESS_DEFAULT),
                     proc("cuGraphInstantiateWithFlags", CU_GET_PROC_ADDRESS_DEFAULT));

    /* the twins work on the calling thread's default stream */
    CUdeviceptr d;
    CK(cuMemAlloc(&d, 64));
    CUresult (*set16)(CUdeviceptr, unsigned short, size_t) =
        (CUresult(*)(CUdeviceptr, unsigned short, size_t))proc("cuMemsetD16", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    CK(set16(d, 0x4242, 32));
    CUmodule m;
    CUfunction f;
    CK(cuModuleLoadData(&m, &host_mod));
    CK(cuModuleGetFunction(&f, m, "count"));
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                       void **, void **) =
        (CUresult(*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                     void **, void **))proc("cuLaunchKernel", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    int step = 1;
    void *params[] = {&d, &step};
    CK(launch(f, 7, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    CK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
    int got[2];
    CK(cuMemcpyDtoH(got, d, sizeof got));
    assert_int_equal(got[0], 0x42424242 + 1);
    assert_int_equal(got[1], 7);
    CK(cuModuleUnload(m));
    CK(cuMemFree(d));
}

/* ---- capture and graphs --------------------------------------------------------------------------- */

static void test_capture_and_replay(void **state)
{
    (void)state;
    CUmodule m;
    CUfunction f;
    CK(cuModuleLoadData(&m, &host_mod));
    CK(cuModuleGetFunction(&f, m, "count"));
    CUdeviceptr c, buf;
    CK(cuMemAlloc(&c, 8));
    CK(cuMemAlloc(&buf, 16));
    CK(cuMemsetD32(c, 0, 2));
    CK(cuMemsetD8(buf, 0, 16));
    CUstream s;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUstreamCaptureStatus st;
    cuuint64_t id = 0;
    CK(cuStreamGetCaptureInfo(s, &st, &id, NULL, NULL, NULL, NULL));
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    assert_true(id != 0);
    CUgraph g0;
    assert_int_equal(cuStreamGetCaptureInfo(s, &st, NULL, &g0, NULL, NULL, NULL), CUDA_ERROR_NOT_SUPPORTED);
    CK(cuStreamIsCapturing(s, &st));
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    int step = 3;
    void *params[] = {&c, &step};
    CK(cuLaunchKernel(f, 2, 1, 1, 1, 1, 1, 0, s, params, NULL));
    step = 1000; /* the captured launch keeps its own copy of the arguments */
    CK(cuMemsetD16Async(buf, 0x0909, 4, s));
    CK(cuMemsetD2D8Async(buf + 8, 4, 0x7f, 2, 2, s));
    CUgraph g;
    CK(cuStreamEndCapture(s, &g));
    /* nothing ran yet */
    int got[2];
    unsigned char hb[16];
    CK(cuMemcpyDtoH(got, c, sizeof got));
    assert_int_equal(got[0], 0);
    CK(cuMemcpyDtoH(hb, buf, 16));
    assert_int_equal(hb[0], 0);

    CUgraphExec e;
    CK(cuGraphInstantiate(&e, g, 0));
    for (int i = 0; i < 4; i++)
        CK(cuGraphLaunch(e, s));
    CK(cuStreamSynchronize(s));
    CK(cuMemcpyDtoH(got, c, sizeof got));
    assert_int_equal(got[0], 12);
    assert_int_equal(got[1], 2);
    CK(cuMemcpyDtoH(hb, buf, 16));
    static const unsigned char want[16] = {9, 9, 9, 9, 9, 9, 9, 9, 0x7f, 0x7f, 0, 0, 0x7f, 0x7f, 0, 0};
    assert_memory_equal(hb, want, 16);
    CK(cuGraphExecDestroy(e));
    CK(cuGraphDestroy(g));
    assert_int_equal(cuGraphLaunch(e, s), CUDA_ERROR_INVALID_VALUE);

    /* waiting on an event recorded outside the capture breaks its isolation */
    CUstream other;
    CUevent ev;
    CK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    CK(cuEventCreate(&ev, CU_EVENT_DEFAULT));
    CK(cuEventRecord(ev, other));
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
    CK(cuEventRecord(ev, s));
    CK(cuStreamEndCapture(s, &g));
    CK(cuGraphDestroy(g));
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CK(cuEventRecord(ev, other));
    assert_int_equal(cuStreamWaitEvent(s, ev, 0), CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
    CK(cuStreamIsCapturing(s, &st));
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_int_equal(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CK(cuMemcpyDtoH(got, c, sizeof got));
    assert_int_equal(got[0], 12); /* no captured launch ran */

    CK(cuEventDestroy(ev));
    CK(cuStreamDestroy(other));
    CK(cuStreamDestroy(s));
    CK(cuMemFree(c));
    CK(cuMemFree(buf));
    CK(cuModuleUnload(m));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_module_load_and_functions),
        cmocka_unit_test(test_launch_params_and_extra),
        cmocka_unit_test(test_library_kernels),
        cmocka_unit_test(test_sets),
        cmocka_unit_test(test_copies_2d_3d_peer),
        cmocka_unit_test(test_per_thread_twins),
        cmocka_unit_test(test_capture_and_replay),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
