/*
 * drvproc.h — how the simulated runtime, cuDNN and cuBLAS reach the driver.
 *
 * The real libcudart (and the static cudart inside libcudnn and libcublas)
 * never calls the driver through its import table: it dlopens libcuda.so.1,
 * looks up cuGetProcAddress_v2 with dlsym, and asks it for every entry point.
 * libsn's driver-level hooks depend on exactly that path, so the simulated
 * libraries reach the driver's allocation functions the same way: through
 * simgpu_driver_proc(), which goes dlopen -> dlsym -> cuGetProcAddress.
 * (Time-model helpers, simgpu_*, are linked directly; they have no real
 * counterpart to intercept.)
 */
#ifndef SIMGPU_DRVPROC_H
#define SIMGPU_DRVPROC_H

#include <dlfcn.h>
#include <stddef.h>
#include <cuda.h>

typedef CUresult (*simgpu_getproc_fn)(const char *, void **, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult *);

/* Resolve one driver entry point by its base name ("cuMemAlloc"), as cudart
 * does; flags CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM asks for the
 * per-thread-stream twin (_ptsz), as cudart's own _ptsz entry points do.
 * NULL when the driver or the symbol is missing. */
static inline void *simgpu_driver_proc_flags(const char *name, cuuint64_t flags)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!lib)
        return NULL;
    simgpu_getproc_fn gpa = (simgpu_getproc_fn)dlsym(lib, "cuGetProcAddress_v2");
    if (!gpa)
        return NULL;
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    if (gpa(name, &fn, CUDA_VERSION, flags, &st) != CUDA_SUCCESS || st != CU_GET_PROC_ADDRESS_SUCCESS)
        return NULL;
    return fn;
}

static inline void *simgpu_driver_proc(const char *name)
{
    return simgpu_driver_proc_flags(name, CU_GET_PROC_ADDRESS_DEFAULT);
}

/* What a library's static cudart does on first use: initialise the driver
 * and make dev's primary context current on a thread that has none.
 * Returns 1 when the thread has a context. The entry points are looked up
 * once per library (each includes this header). */
static inline int simgpu_driver_context_ready(int dev)
{
    typedef CUresult (*init_fn)(unsigned int);
    typedef CUresult (*get_fn)(CUcontext *);
    typedef CUresult (*set_fn)(CUcontext);
    typedef CUresult (*retain_fn)(CUcontext *, CUdevice);
    static void *fns[4];
    static const char *const names[4] = {"cuInit", "cuCtxGetCurrent", "cuCtxSetCurrent", "cuDevicePrimaryCtxRetain"};
    for (int i = 0; i < 4; i++)
        if (!__atomic_load_n(&fns[i], __ATOMIC_ACQUIRE))
            __atomic_store_n(&fns[i], simgpu_driver_proc(names[i]), __ATOMIC_RELEASE);
    init_fn init = (init_fn)__atomic_load_n(&fns[0], __ATOMIC_ACQUIRE);
    get_fn get = (get_fn)__atomic_load_n(&fns[1], __ATOMIC_ACQUIRE);
    set_fn set = (set_fn)__atomic_load_n(&fns[2], __ATOMIC_ACQUIRE);
    retain_fn retain = (retain_fn)__atomic_load_n(&fns[3], __ATOMIC_ACQUIRE);
    if (!init || init(0) != CUDA_SUCCESS)
        return 0;
    CUcontext ctx = NULL;
    if (get && get(&ctx) == CUDA_SUCCESS && !ctx && retain && set)
        return retain(&ctx, (CUdevice)dev) == CUDA_SUCCESS && set(ctx) == CUDA_SUCCESS;
    return 1;
}

#endif
