/*
 * sn_dlopen.c — programs that reach CUDA without linking it, the way
 * Python's ctypes, TensorFlow-style loaders and plugin systems do: the
 * library is opened with dlopen and every function found with dlsym.
 * test_sn_reliability.sh runs each mode under libsn and checks that libsn
 * sees the calls, or says plainly what it could not see.
 *
 *   sn_dlopen runtime ITERS   dlopen libcudart.so.13 (RTLD_LOCAL); ITERS
 *                             rounds of malloc, memset, copy back, free
 *   sn_dlopen driver          dlopen libcuda.so.1; allocate and free through
 *                             the driver API only (no runtime at all)
 *   sn_dlopen which           dlopen the runtime, cuDNN and cuBLAS; print which
 *                             object answers dlsym for one function of each
 *   sn_dlopen dispatch FILE   dlopen cuDNN and look up cudnnCreate, then
 *                             dlopen FILE (another library exporting it, as
 *                             cuDNN 9's libcudnn_graph.so.9 does for the
 *                             dispatcher libcudnn.so.9, or a second copy of
 *                             cuDNN) and print which object answers there
 *   sn_dlopen fail            dlopen the runtime; the first allocation asks
 *                             for more than any device has, and the program
 *                             gives up (exit 1) before any device operation
 *
 * Prints one line per mode on stdout; exit status 0 when the calls did
 * what CUDA documents.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

static void *must_sym(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (!p) {
        fprintf(stderr, "sn_dlopen: %s not found: %s\n", name, dlerror());
        exit(2);
    }
    return p;
}

static int run_runtime(long iters)
{
    void *rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!rt) {
        fprintf(stderr, "sn_dlopen: %s\n", dlerror());
        return 2;
    }
    cudaError_t (*mall)(void **, size_t) = (cudaError_t(*)(void **, size_t))must_sym(rt, "cudaMalloc");
    cudaError_t (*fr)(void *) = (cudaError_t(*)(void *))must_sym(rt, "cudaFree");
    cudaError_t (*mset)(void *, int, size_t) = (cudaError_t(*)(void *, int, size_t))must_sym(rt, "cudaMemset");
    cudaError_t (*mcpy)(void *, const void *, size_t, enum cudaMemcpyKind) =
        (cudaError_t(*)(void *, const void *, size_t, enum cudaMemcpyKind))must_sym(rt, "cudaMemcpy");
    long bad = 0;
    unsigned char host[1024];
    for (long i = 0; i < iters; i++) {
        void *d = NULL;
        if (mall(&d, sizeof host) != cudaSuccess) {
            bad++;
            continue;
        }
        int v = (int)(i & 0x7f);
        if (mset(d, v, sizeof host) != cudaSuccess || mcpy(host, d, sizeof host, cudaMemcpyDeviceToHost) != cudaSuccess ||
            host[0] != v || host[sizeof host - 1] != v)
            bad++;
        if (fr(d) != cudaSuccess)
            bad++;
    }
    printf("runtime through dlsym: %ld rounds, %ld bad\n", iters, bad);
    return bad ? 1 : 0;
}

static int run_driver(void)
{
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!drv) {
        fprintf(stderr, "sn_dlopen: %s\n", dlerror());
        return 2;
    }
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))must_sym(drv, "cuInit");
    CUresult (*retain)(CUcontext *, CUdevice) = (CUresult(*)(CUcontext *, CUdevice))must_sym(drv, "cuDevicePrimaryCtxRetain");
    CUresult (*setcur)(CUcontext) = (CUresult(*)(CUcontext))must_sym(drv, "cuCtxSetCurrent");
    CUresult (*alloc)(CUdeviceptr *, size_t) = (CUresult(*)(CUdeviceptr *, size_t))must_sym(drv, "cuMemAlloc_v2");
    CUresult (*fr)(CUdeviceptr) = (CUresult(*)(CUdeviceptr))must_sym(drv, "cuMemFree_v2");
    CUcontext ctx = NULL;
    CUdeviceptr p = 0;
    int ok = init(0) == CUDA_SUCCESS && retain(&ctx, 0) == CUDA_SUCCESS && setcur(ctx) == CUDA_SUCCESS &&
             alloc(&p, 1 << 20) == CUDA_SUCCESS && fr(p) == CUDA_SUCCESS;
    printf("driver through dlsym: %s\n", ok ? "ok" : "failed");
    return ok ? 0 : 1;
}

static int run_which(void)
{
    static const char *const libs[][2] = {
        {"libcudart.so.13", "cudaMalloc"}, {"libcudnn.so.9", "cudnnCreate"}, {"libcublas.so.13", "cublasCreate_v2"}};
    for (int i = 0; i < 3; i++) {
        void *lib = dlopen(libs[i][0], RTLD_NOW | RTLD_LOCAL);
        void *fn = lib ? dlsym(lib, libs[i][1]) : NULL;
        Dl_info info;
        const char *who = fn && dladdr(fn, &info) && info.dli_fname ? info.dli_fname : "nobody";
        const char *base = strrchr(who, '/');
        printf("%s %s\n", libs[i][1], base ? base + 1 : who);
    }
    return 0;
}

static int run_dispatch(const char *file)
{
    void *dnn = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
    if (!dnn || !dlsym(dnn, "cudnnCreate")) {
        fprintf(stderr, "sn_dlopen: libcudnn.so.9: %s\n", dlerror());
        return 2;
    }
    void *other = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    void *fn = other ? dlsym(other, "cudnnCreate") : NULL;
    Dl_info info;
    const char *who = fn && dladdr(fn, &info) && info.dli_fname ? info.dli_fname : "nobody";
    const char *base = strrchr(who, '/');
    printf("cudnnCreate %s\n", base ? base + 1 : who);
    return fn ? 0 : 1;
}

static int run_fail(void)
{
    void *rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!rt) {
        fprintf(stderr, "sn_dlopen: %s\n", dlerror());
        return 2;
    }
    cudaError_t (*mall)(void **, size_t) = (cudaError_t(*)(void **, size_t))must_sym(rt, "cudaMalloc");
    void *d = NULL;
    cudaError_t rc = mall(&d, (size_t)1 << 50);
    printf("first allocation: %s\n", rc == cudaErrorMemoryAllocation ? "out of memory" : "unexpected");
    return rc == cudaErrorMemoryAllocation ? 1 : 3;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "runtime") == 0)
        return run_runtime(atol(argv[2]));
    if (argc >= 2 && strcmp(argv[1], "driver") == 0)
        return run_driver();
    if (argc >= 2 && strcmp(argv[1], "which") == 0)
        return run_which();
    if (argc >= 2 && strcmp(argv[1], "fail") == 0)
        return run_fail();
    if (argc == 3 && strcmp(argv[1], "dispatch") == 0)
        return run_dispatch(argv[2]);
    fprintf(stderr, "usage: %s runtime ITERS | driver | which | dispatch FILE | fail\n", argv[0]);
    return 2;
}
