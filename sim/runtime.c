/*
 * runtime.c — the simulated libcudart.so.13: the CUDA runtime API on the
 * simulated device.
 *
 * Like the real runtime it reaches the driver's allocation entry points
 * through dlopen("libcuda.so.1") + cuGetProcAddress (sim/drvproc.h), so an
 * interposer that hooks the driver sees cudaMalloc's cuMemAlloc as it would on
 * a GPU. Everything else calls the simulated device directly. Errors follow
 * the runtime's conventions: each failing call records its error for
 * cudaGetLastError / cudaPeekAtLastError, and the driver's codes are mapped to
 * the runtime's.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "sim/simcore.h"
#include "sim/drvproc.h"
#include "sim/simrt.h"

static __thread cudaError_t t_last_error = cudaSuccess;

static struct {
    CUresult (*init)(unsigned);
    CUresult (*ctx_get_current)(CUcontext *);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*primary_retain)(CUcontext *, CUdevice);
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*mem_alloc_host)(void **, size_t);
    CUresult (*mem_host_alloc)(void **, size_t, unsigned);
    CUresult (*mem_free_host)(void *);
    CUresult (*mem_get_info)(size_t *, size_t *);
    CUresult (*mem_alloc_pitch)(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
    CUresult (*mem_alloc_managed)(CUdeviceptr *, size_t, unsigned);
    CUresult (*mem_alloc_async)(CUdeviceptr *, size_t, CUstream);
    CUresult (*mem_alloc_async_ptsz)(CUdeviceptr *, size_t, CUstream);
    CUresult (*mem_free_async)(CUdeviceptr, CUstream);
    CUresult (*mem_free_async_ptsz)(CUdeviceptr, CUstream);
} drv;
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;
static int drv_initialised;

static void drv_resolve(void)
{
    drv.init = (CUresult(*)(unsigned))simgpu_driver_proc("cuInit");
    drv.ctx_get_current = (CUresult(*)(CUcontext *))simgpu_driver_proc("cuCtxGetCurrent");
    drv.ctx_set_current = (CUresult(*)(CUcontext))simgpu_driver_proc("cuCtxSetCurrent");
    drv.primary_retain = (CUresult(*)(CUcontext *, CUdevice))simgpu_driver_proc("cuDevicePrimaryCtxRetain");
    drv.mem_alloc = (CUresult(*)(CUdeviceptr *, size_t))simgpu_driver_proc("cuMemAlloc");
    drv.mem_free = (CUresult(*)(CUdeviceptr))simgpu_driver_proc("cuMemFree");
    drv.mem_alloc_host = (CUresult(*)(void **, size_t))simgpu_driver_proc("cuMemAllocHost");
    drv.mem_host_alloc = (CUresult(*)(void **, size_t, unsigned))simgpu_driver_proc("cuMemHostAlloc");
    drv.mem_free_host = (CUresult(*)(void *))simgpu_driver_proc("cuMemFreeHost");
    drv.mem_get_info = (CUresult(*)(size_t *, size_t *))simgpu_driver_proc("cuMemGetInfo");
    drv.mem_alloc_pitch =
        (CUresult(*)(CUdeviceptr *, size_t *, size_t, size_t, unsigned))simgpu_driver_proc("cuMemAllocPitch");
    drv.mem_alloc_managed = (CUresult(*)(CUdeviceptr *, size_t, unsigned))simgpu_driver_proc("cuMemAllocManaged");
    /* The per-thread-stream entry points have driver twins of their own. */
    drv.mem_alloc_async = (CUresult(*)(CUdeviceptr *, size_t, CUstream))simgpu_driver_proc("cuMemAllocAsync");
    drv.mem_alloc_async_ptsz = (CUresult(*)(CUdeviceptr *, size_t, CUstream))simgpu_driver_proc_flags(
        "cuMemAllocAsync", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    drv.mem_free_async = (CUresult(*)(CUdeviceptr, CUstream))simgpu_driver_proc("cuMemFreeAsync");
    drv.mem_free_async_ptsz = (CUresult(*)(CUdeviceptr, CUstream))simgpu_driver_proc_flags(
        "cuMemFreeAsync", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    if (!drv.mem_alloc_pitch || !drv.mem_alloc_managed || !drv.mem_alloc_async || !drv.mem_alloc_async_ptsz ||
        !drv.mem_free_async || !drv.mem_free_async_ptsz)
        drv.init = NULL;
    if (!drv.init || !drv.ctx_get_current || !drv.ctx_set_current || !drv.primary_retain || !drv.mem_alloc ||
        !drv.mem_free || !drv.mem_alloc_host || !drv.mem_host_alloc || !drv.mem_free_host || !drv.mem_get_info) {
        simgpu_log("the runtime could not resolve the driver's entry points");
        return;
    }
    /* The runtime initialises the driver once, on its first call. */
    drv_initialised = drv.init(0) == CUDA_SUCCESS;
}

static int drv_ready(void)
{
    pthread_once(&drv_once, drv_resolve);
    return drv_initialised;
}

/* The primary context of each device, retained once for the process, as the
 * runtime does the first time it needs a device. */
static CUcontext g_primary[SIMGPU_MAX_DEVICES];
static pthread_mutex_t g_primary_lock = PTHREAD_MUTEX_INITIALIZER;

static CUcontext primary_of(int dev)
{
    pthread_mutex_lock(&g_primary_lock);
    CUcontext c = g_primary[dev];
    if (!c && drv.primary_retain(&c, (CUdevice)dev) != CUDA_SUCCESS)
        c = NULL;
    g_primary[dev] = c;
    pthread_mutex_unlock(&g_primary_lock);
    return c;
}

cudaError_t simrt_ctx(void)
{
    if (!drv_ready())
        return cudaErrorInitializationError;
    CUcontext c = NULL;
    if (drv.ctx_get_current(&c) != CUDA_SUCCESS)
        return cudaErrorInitializationError;
    if (c)
        return cudaSuccess; /* a context made current through the driver is used as it is */
    c = primary_of(simgpu_current_device());
    if (!c || drv.ctx_set_current(c) != CUDA_SUCCESS)
        return cudaErrorInitializationError;
    return cudaSuccess;
}

cudaError_t simrt_error(CUresult r)
{
    cudaError_t e;
    switch (r) {
    case CUDA_SUCCESS: return cudaSuccess;
    case CUDA_ERROR_OUT_OF_MEMORY: e = cudaErrorMemoryAllocation; break;
    case CUDA_ERROR_INVALID_HANDLE: e = cudaErrorInvalidResourceHandle; break;
    case CUDA_ERROR_NOT_READY: return cudaErrorNotReady; /* not recorded, as CUDA does */
    case CUDA_ERROR_INVALID_DEVICE: e = cudaErrorInvalidDevice; break;
    case CUDA_ERROR_NOT_SUPPORTED: e = cudaErrorNotSupported; break;
    case CUDA_ERROR_NO_BINARY_FOR_GPU: e = cudaErrorNoKernelImageForDevice; break;
    case CUDA_ERROR_ILLEGAL_ADDRESS: e = cudaErrorIllegalAddress; break;
    case CUDA_ERROR_NOT_INITIALIZED: e = cudaErrorInitializationError; break;
    case CUDA_ERROR_INVALID_CONTEXT: e = cudaErrorDeviceUninitialized; break;
    case CUDA_ERROR_CONTEXT_IS_DESTROYED: e = cudaErrorContextIsDestroyed; break;
    case CUDA_ERROR_ILLEGAL_STATE: e = cudaErrorIllegalState; break;
    /* The stream-capture codes have the same numbers in both APIs. */
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
    case CUDA_ERROR_STREAM_CAPTURE_MERGE: case CUDA_ERROR_STREAM_CAPTURE_UNMATCHED:
    case CUDA_ERROR_STREAM_CAPTURE_UNJOINED: case CUDA_ERROR_STREAM_CAPTURE_ISOLATION:
    case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT: case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD:
        e = (cudaError_t)r;
        break;
    default: e = cudaErrorInvalidValue; break;
    }
    t_last_error = e;
    return e;
}

cudaError_t simrt_fail(cudaError_t e)
{
    if (e != cudaSuccess && e != cudaErrorNotReady)
        t_last_error = e;
    return e;
}

/* ---- device management -------------------------------------------------- */

cudaError_t cudaGetDeviceCount(int *n)
{
    if (!n)
        return simrt_fail(cudaErrorInvalidValue);
    *n = simgpu_device_count();
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int dev)
{
    if (dev < 0 || dev >= simgpu_device_count())
        return simrt_fail(cudaErrorInvalidDevice);
    if (!drv_ready())
        return simrt_fail(cudaErrorInitializationError);
    /* Since CUDA 12 the device's primary context is made current (and
     * initialised) here rather than at the next call. */
    CUcontext c = primary_of(dev);
    if (!c || drv.ctx_set_current(c) != CUDA_SUCCESS)
        return simrt_fail(cudaErrorInitializationError);
    simgpu_set_current_device(dev);
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *dev)
{
    if (!dev)
        return simrt_fail(cudaErrorInvalidValue);
    simgpu_init();
    *dev = simgpu_current_device();
    return cudaSuccess;
}

cudaError_t cudaSetDeviceFlags(unsigned int flags)
{
    (void)flags;
    simgpu_init();
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v)
{
    if (!v)
        return simrt_fail(cudaErrorInvalidValue);
    *v = CUDA_VERSION;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *v)
{
    if (!v)
        return simrt_fail(cudaErrorInvalidValue);
    *v = CUDART_VERSION;
    return cudaSuccess;
}



cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev)
{
    if (!p)
        return simrt_fail(cudaErrorInvalidValue);
    if (dev < 0 || dev >= simgpu_device_count())
        return simrt_fail(cudaErrorInvalidDevice);
    const simgpu_profile *pr = simgpu_profile_of(dev);
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", pr->long_name);
    p->totalGlobalMem = simgpu_capacity(dev);
    p->major = pr->cc_major;
    p->minor = pr->cc_minor;
    p->multiProcessorCount = pr->sm_count;
    p->asyncEngineCount = pr->copy_engines;
    p->unifiedAddressing = 1;
    p->warpSize = 32;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
    p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 2147483647;
    p->maxGridSize[1] = p->maxGridSize[2] = 65535;
    p->sharedMemPerBlock = 49152;
    p->regsPerBlock = 65536;
    p->totalConstMem = 65536;
    p->memoryBusWidth = 384;
    p->concurrentKernels = 1;
    p->canMapHostMemory = 1;
    p->pciDeviceID = dev;
    p->managedMemory = 1;
    p->concurrentManagedAccess = simgpu_device_attribute(cudaDevAttrConcurrentManagedAccess, dev);
    p->memoryPoolsSupported = 1;
    p->textureAlignment = SIMGPU_PITCH_ALIGN;
    p->texturePitchAlignment = 32;
    p->memPitch = 2147483647;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr attr, int dev)
{
    if (!v)
        return simrt_fail(cudaErrorInvalidValue);
    if (dev < 0 || dev >= simgpu_device_count())
        return simrt_fail(cudaErrorInvalidDevice);
    /* The runtime's attribute numbers are the driver's. */
    *v = simgpu_device_attribute((int)attr, dev);
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    SIMRT_NEED_CTX();
    SIMRT_NOT_DURING_CAPTURE();
    return simrt_error(simgpu_device_synchronize());
}

cudaError_t cudaDeviceReset(void)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_device_synchronize());
}

/* ---- errors ---------------------------------------------------------------- */

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = t_last_error;
    t_last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void) { return t_last_error; }

const char *cudaGetErrorName(cudaError_t e)
{
    switch (e) {
#define N(x) case x: return #x;
    N(cudaSuccess) N(cudaErrorInvalidValue) N(cudaErrorMemoryAllocation) N(cudaErrorInitializationError)
    N(cudaErrorInvalidDevice) N(cudaErrorInvalidResourceHandle) N(cudaErrorNotReady)
    N(cudaErrorInvalidDeviceFunction) N(cudaErrorNoKernelImageForDevice) N(cudaErrorIllegalAddress)
    N(cudaErrorInvalidMemcpyDirection) N(cudaErrorNotSupported) N(cudaErrorInvalidDevicePointer)
    N(cudaErrorLaunchFailure) N(cudaErrorInvalidConfiguration) N(cudaErrorDeviceUninitialized)
    N(cudaErrorContextIsDestroyed) N(cudaErrorIllegalState) N(cudaErrorStreamCaptureUnsupported)
    N(cudaErrorStreamCaptureInvalidated) N(cudaErrorStreamCaptureIsolation) N(cudaErrorStreamCaptureImplicit)
    N(cudaErrorStreamCaptureWrongThread)
#undef N
    default: return "cudaErrorUnknown";
    }
}

const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorInvalidDeviceFunction: return "invalid device function";
    case cudaErrorNoKernelImageForDevice: return "no kernel image is available for execution on the device";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorNotSupported: return "operation not supported";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureIsolation:
        return "dependency created on uncaptured work in another stream";
    case cudaErrorStreamCaptureImplicit:
        return "operation would make the legacy stream depend on a capturing blocking stream";
    case cudaErrorStreamCaptureWrongThread: return "attempt to terminate a thread-local capture sequence from another thread";
    case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
    default: return "unknown error";
    }
}

/* ---- memory ---------------------------------------------------------------- */

cudaError_t cudaMalloc(void **p, size_t bytes)
{
    SIMRT_NEED_CTX();
    SIMRT_NOT_DURING_CAPTURE();
    if (!p)
        return simrt_fail(cudaErrorInvalidValue);
    if (bytes == 0) {
        *p = NULL; /* cudaMalloc(0) succeeds with a null pointer */
        return cudaSuccess;
    }
    CUdeviceptr d = 0;
    CUresult r = drv.mem_alloc(&d, bytes);
    if (r != CUDA_SUCCESS)
        return simrt_error(r);
    *p = (void *)d;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
    SIMRT_NEED_CTX();
    SIMRT_NOT_DURING_CAPTURE();
    if (!p)
        return cudaSuccess;
    /* The driver's free waits for the device, as cudaFree does. */
    return simrt_error(drv.mem_free((CUdeviceptr)p));
}

cudaError_t cudaMallocHost(void **p, size_t bytes)
{
    SIMRT_NEED_CTX();
    SIMRT_NOT_DURING_CAPTURE();
    if (!p)
        return simrt_fail(cudaErrorInvalidValue);
    if (bytes == 0) {
        *p = NULL;
        return cudaSuccess;
    }
    return simrt_error(drv.mem_alloc_host(p, bytes));
}

cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned int flags)
{
    SIMRT_NEED_CTX();
    SIMRT_NOT_DURING_CAPTURE();
    if (!p)
        return simrt_fail(cudaErrorInvalidValue);
    if (bytes == 0) {
        *p = NULL;
        return cudaSuccess;
    }
    return simrt_error(drv.mem_host_alloc(p, bytes, flags));
}

cudaError_t cudaFreeHost(void *p)
{
    SIMRT_NEED_CTX();
    SIMRT_NOT_DURING_CAPTURE();
    if (!p)
        return cudaSuccess;
    return simrt_error(drv.mem_free_host(p)); /* which waits for the device */
}

cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total_b)
{
    SIMRT_NEED_CTX();
    if (!free_b || !total_b)
        return simrt_fail(cudaErrorInvalidValue);
    return simrt_error(drv.mem_get_info(free_b, total_b));
}

cudaError_t cudaMallocPitch(void **p, size_t *pitch, size_t width, size_t height)
{
    SIMRT_NEED_CTX();
    SIMRT_NOT_DURING_CAPTURE();
    if (!p || !pitch)
        return simrt_fail(cudaErrorInvalidValue);
    if (width == 0 || height == 0) {
        /* As cudaMalloc(0): nothing allocated, no error. */
        *p = NULL;
        *pitch = 0;
        return cudaSuccess;
    }
    CUdeviceptr d = 0;
    CUresult r = drv.mem_alloc_pitch(&d, pitch, width, height, 4);
    if (r != CUDA_SUCCESS)
        return simrt_error(r);
    *p = (void *)d;
    return cudaSuccess;
}

cudaError_t cudaMallocManaged(void **p, size_t bytes, unsigned int flags)
{
    SIMRT_NEED_CTX();
    SIMRT_NOT_DURING_CAPTURE();
    if (!p || bytes == 0)
        return simrt_fail(cudaErrorInvalidValue);
    CUdeviceptr d = 0;
    CUresult r = drv.mem_alloc_managed(&d, bytes, flags);
    if (r != CUDA_SUCCESS)
        return simrt_error(r);
    *p = (void *)d;
    return cudaSuccess;
}

static cudaError_t malloc_async(void **p, size_t bytes, cudaStream_t s,
                                CUresult (*alloc)(CUdeviceptr *, size_t, CUstream))
{
    SIMRT_NEED_CTX();
    if (!p)
        return simrt_fail(cudaErrorInvalidValue);
    if (bytes == 0) {
        *p = NULL; /* as cudaMalloc(0) */
        return cudaSuccess;
    }
    CUdeviceptr d = 0;
    CUresult r = alloc(&d, bytes, (CUstream)s);
    if (r != CUDA_SUCCESS)
        return simrt_error(r == CUDA_ERROR_INVALID_HANDLE ? CUDA_ERROR_INVALID_VALUE : r);
    *p = (void *)d;
    return cudaSuccess;
}

cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t s)
{
    return malloc_async(p, bytes, s, drv.mem_alloc_async);
}
cudaError_t cudaMallocAsync_ptsz(void **p, size_t bytes, cudaStream_t s)
{
    return malloc_async(p, bytes, s, drv.mem_alloc_async_ptsz);
}

static cudaError_t free_async(void *p, cudaStream_t s, CUresult (*release)(CUdeviceptr, CUstream))
{
    SIMRT_NEED_CTX();
    CUresult r = release((CUdeviceptr)p, (CUstream)s);
    return simrt_error(r == CUDA_ERROR_INVALID_HANDLE ? CUDA_ERROR_INVALID_VALUE : r);
}

cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
    return free_async(p, s, drv.mem_free_async);
}
cudaError_t cudaFreeAsync_ptsz(void *p, cudaStream_t s)
{
    return free_async(p, s, drv.mem_free_async_ptsz);
}

/* ---- memory pools (each device's default pool; sim/pool.c) ----------------- */

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int dev)
{
    if (!pool)
        return simrt_fail(cudaErrorInvalidValue);
    if (dev < 0 || dev >= simgpu_device_count())
        return simrt_fail(cudaErrorInvalidDevice);
    *pool = (cudaMemPool_t)simgpu_default_pool(dev);
    return cudaSuccess;
}

/* No cudaDeviceSetMemPool here: the current pool is always the default one. */
cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *pool, int dev) { return cudaDeviceGetDefaultMemPool(pool, dev); }

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep)
{
    return simrt_error(simgpu_pool_trim(pool, keep));
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value)
{
    /* The runtime's attribute numbers are the driver's. */
    return simrt_error(simgpu_pool_get_attribute(pool, (int)attr, value));
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value)
{
    return simrt_error(simgpu_pool_set_attribute(pool, (int)attr, value));
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p)
{
    if (!a)
        return simrt_fail(cudaErrorInvalidValue);
    memset(a, 0, sizeof *a);
    int dev = simgpu_device_of(p);
    if (dev >= 0) {
        a->type = simgpu_is_managed(p) ? cudaMemoryTypeManaged : cudaMemoryTypeDevice;
        a->device = dev;
        a->devicePointer = (void *)p;
        if (a->type == cudaMemoryTypeManaged)
            a->hostPointer = (void *)p;
    } else if (simgpu_is_pinned(p, 1)) {
        a->type = cudaMemoryTypeHost;
        a->device = simgpu_current_device();
        a->devicePointer = (void *)p;
        a->hostPointer = (void *)p;
    } else {
        a->type = cudaMemoryTypeUnregistered;
        a->device = -2;
        a->hostPointer = (void *)p;
    }
    return cudaSuccess;
}

/* cudaMemcpyKind -> the direction simgpu_memcpy checks. */
static int dir_of(enum cudaMemcpyKind k, int *dir)
{
    switch (k) {
    case cudaMemcpyHostToHost: *dir = 4; return 0;
    case cudaMemcpyHostToDevice: *dir = 1; return 0;
    case cudaMemcpyDeviceToHost: *dir = 2; return 0;
    case cudaMemcpyDeviceToDevice: *dir = 3; return 0;
    case cudaMemcpyDefault: *dir = 0; return 0;
    default: return -1;
    }
}

static cudaError_t memcpy_rt(void *dst, const void *src, size_t n, enum cudaMemcpyKind k, cudaStream_t s, int sync)
{
    SIMRT_NEED_CTX();
    int dir;
    if (dir_of(k, &dir))
        return simrt_fail(cudaErrorInvalidMemcpyDirection);
    return simrt_error(simgpu_memcpy(dst, src, n, dir, (CUstream)s, sync));
}

static cudaError_t memcpy2d_rt(void *dst, size_t dp, const void *src, size_t sp, size_t w, size_t h,
                               enum cudaMemcpyKind k, cudaStream_t s, int sync)
{
    SIMRT_NEED_CTX();
    int dir;
    if (dir_of(k, &dir))
        return simrt_fail(cudaErrorInvalidMemcpyDirection);
    return simrt_error(simgpu_memcpy2d(dst, dp, src, sp, w, h, dir, (CUstream)s, sync));
}

#define PTDS ((cudaStream_t)CU_STREAM_PER_THREAD)

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind k)
{
    return memcpy_rt(dst, src, n, k, NULL, 1);
}
cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t n, enum cudaMemcpyKind k)
{
    return memcpy_rt(dst, src, n, k, PTDS, 1);
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind k, cudaStream_t s)
{
    return memcpy_rt(dst, src, n, k, s, 0);
}
cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t n, enum cudaMemcpyKind k, cudaStream_t s)
{
    return memcpy_rt(dst, src, n, k, s ? s : PTDS, 0);
}
cudaError_t cudaMemcpy2D(void *dst, size_t dp, const void *src, size_t sp, size_t w, size_t h,
                         enum cudaMemcpyKind k)
{
    return memcpy2d_rt(dst, dp, src, sp, w, h, k, NULL, 1);
}
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dp, const void *src, size_t sp, size_t w, size_t h,
                              enum cudaMemcpyKind k, cudaStream_t s)
{
    return memcpy2d_rt(dst, dp, src, sp, w, h, k, s, 0);
}
cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dp, const void *src, size_t sp, size_t w, size_t h,
                              enum cudaMemcpyKind k)
{
    return memcpy2d_rt(dst, dp, src, sp, w, h, k, PTDS, 1);
}
cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dp, const void *src, size_t sp, size_t w, size_t h,
                                   enum cudaMemcpyKind k, cudaStream_t s)
{
    return memcpy2d_rt(dst, dp, src, sp, w, h, k, s ? s : PTDS, 0);
}

/* cudaMemcpyPeer is asynchronous to the host but ordered with all work of
 * the current, source and destination devices; the Async form is ordered
 * in its stream only. */
cudaError_t cudaMemcpyPeer(void *dst, int dst_dev, const void *src, int src_dev, size_t n)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_memcpy_peer(dst, dst_dev, src, src_dev, n, NULL, 1));
}
cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_dev, const void *src, int src_dev, size_t n, cudaStream_t s)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_memcpy_peer(dst, dst_dev, src, src_dev, n, (CUstream)s, 0));
}

cudaError_t cudaMemset2D(void *dst, size_t pitch, int v, size_t w, size_t h)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_memset2d(dst, pitch, (unsigned)v, w, h, NULL, 0));
}
cudaError_t cudaMemset2D_ptds(void *dst, size_t pitch, int v, size_t w, size_t h)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_memset2d(dst, pitch, (unsigned)v, w, h, (CUstream)PTDS, 0));
}
cudaError_t cudaMemset2DAsync(void *dst, size_t pitch, int v, size_t w, size_t h, cudaStream_t s)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_memset2d(dst, pitch, (unsigned)v, w, h, (CUstream)s, 0));
}
cudaError_t cudaMemset2DAsync_ptsz(void *dst, size_t pitch, int v, size_t w, size_t h, cudaStream_t s)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_memset2d(dst, pitch, (unsigned)v, w, h, (CUstream)(s ? s : PTDS), 0));
}

cudaError_t cudaMemset(void *dst, int v, size_t n)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_memset(dst, (unsigned)v, 1, n, NULL, 0));
}
cudaError_t cudaMemset_ptds(void *dst, int v, size_t n)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_memset(dst, (unsigned)v, 1, n, (CUstream)PTDS, 0));
}
cudaError_t cudaMemsetAsync(void *dst, int v, size_t n, cudaStream_t s)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_memset(dst, (unsigned)v, 1, n, (CUstream)s, 0));
}
cudaError_t cudaMemsetAsync_ptsz(void *dst, int v, size_t n, cudaStream_t s)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_memset(dst, (unsigned)v, 1, n, (CUstream)(s ? s : PTDS), 0));
}

/* ---- streams and events ---------------------------------------------------- */

cudaError_t cudaStreamCreate(cudaStream_t *s)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_stream_create((CUstream *)s, 0, 0));
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_stream_create((CUstream *)s, flags, 0));
}
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned int flags, int prio)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_stream_create((CUstream *)s, flags, prio));
}
cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_stream_destroy((CUstream)s));
}
cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_stream_synchronize((CUstream)s));
}
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_stream_synchronize((CUstream)(s ? s : PTDS)));
}
cudaError_t cudaStreamQuery(cudaStream_t s)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_stream_query((CUstream)s));
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags)
{
    SIMRT_NEED_CTX();
    (void)flags;
    return simrt_error(simgpu_stream_wait_event((CUstream)s, (CUevent)e));
}
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t s, cudaEvent_t e, unsigned int flags)
{
    SIMRT_NEED_CTX();
    (void)flags;
    return simrt_error(simgpu_stream_wait_event((CUstream)(s ? s : PTDS), (CUevent)e));
}
cudaError_t cudaStreamGetFlags(cudaStream_t s, unsigned int *flags)
{
    SIMRT_NEED_CTX();
    if (!flags)
        return simrt_fail(cudaErrorInvalidValue);
    if (simgpu_stream_check((CUstream)s) != CUDA_SUCCESS)
        return simrt_fail(cudaErrorInvalidResourceHandle);
    *flags = simgpu_stream_flags((CUstream)s);
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_event_create((CUevent *)e, 0));
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_event_create((CUevent *)e, flags));
}
cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_event_destroy((CUevent)e));
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_event_record((CUevent)e, (CUstream)s));
}
cudaError_t cudaEventRecord_ptsz(cudaEvent_t e, cudaStream_t s)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_event_record((CUevent)e, (CUstream)(s ? s : PTDS)));
}
cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned int flags)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_event_record_flags((CUevent)e, (CUstream)s, flags));
}
cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t e, cudaStream_t s, unsigned int flags)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_event_record_flags((CUevent)e, (CUstream)(s ? s : PTDS), flags));
}
cudaError_t cudaEventQuery(cudaEvent_t e)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_event_query((CUevent)e));
}
cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_event_synchronize((CUevent)e));
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_event_elapsed(ms, (CUevent)a, (CUevent)b));
}
