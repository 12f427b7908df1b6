/*
 * handle.c — the cuDNN handle, library identity and error reporting of the
 * simulated cuDNN, plus the helpers every other source uses: argument
 * failure recording, the cost-model charge on the handle's stream, and
 * device allocations made through the driver.
 *
 * The real cudnnCreate initialises a context on the current device and
 * allocates a small device buffer through its static cudart, which reaches
 * the driver by cuGetProcAddress; the simulated one does the same so that a
 * driver-level interposer sees the allocation where it would on a GPU.
 */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cblas.h>
#include <cuda_runtime_api.h>
#include "sim/drvproc.h"
#include "sim/cudnn/cudnn_sim.h"

/* Device memory the real handle holds for its own use (reduction scratch,
 * constant tables). The figure is an order of magnitude, not a measurement. */
#define SIMDNN_HANDLE_BUFFER_BYTES ((size_t)1 << 20)

static __thread char last_error[256];

static struct {
    pthread_mutex_t lock;
    cudnnCallback_t fn;
    void *udata;
    unsigned mask;
} g_callback = {PTHREAD_MUTEX_INITIALIZER, NULL, NULL, 0};

cudnnStatus_t simdnn_fail(cudnnStatus_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return st;
}

cudnnStatus_t simdnn_check_handle(cudnnHandle_t h)
{
    if (!h || h->magic != SIMDNN_MAGIC_HANDLE)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "invalid cudnnHandle_t");
    return CUDNN_STATUS_SUCCESS;
}

/* The simulated cuDNN does its work when a call is issued, so it cannot
 * record it into a graph: a call on a capturing stream fails, invalidating
 * the capture, as an unsupported operation does (docs/sim-cudnn.md). */
cudnnStatus_t simdnn_check_work(cudnnHandle_t h)
{
    cudnnStatus_t st = simdnn_check_handle(h);
    if (st)
        return st;
    if (simgpu_capture_refuse(simdnn_stream(h)) != CUDA_SUCCESS)
        return simdnn_fail(CUDNN_STATUS_EXECUTION_FAILED_CUDART,
                           "the handle's stream is capturing a graph; the simulated cuDNN cannot be captured "
                           "(cudaErrorStreamCaptureUnsupported)");
    return CUDNN_STATUS_SUCCESS;
}

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static void blas_single_thread(void) { openblas_set_num_threads(1); }
void simdnn_blas_init(void) { pthread_once(&blas_once, blas_single_thread); }

/* ---- driver access -------------------------------------------------------- */

typedef CUresult (*mem_alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*mem_free_fn)(CUdeviceptr);
typedef CUresult (*init_fn)(unsigned);
typedef CUresult (*ctx_get_fn)(CUcontext *);
typedef CUresult (*ctx_set_fn)(CUcontext);
typedef CUresult (*retain_fn)(CUcontext *, CUdevice);

/* Makes the current device's primary context current when no context is,
 * the way cudart's lazy initialisation does before its first allocation. */
static void ensure_context(void)
{
    init_fn cu_init = (init_fn)simgpu_driver_proc("cuInit");
    ctx_get_fn get = (ctx_get_fn)simgpu_driver_proc("cuCtxGetCurrent");
    ctx_set_fn set = (ctx_set_fn)simgpu_driver_proc("cuCtxSetCurrent");
    retain_fn retain = (retain_fn)simgpu_driver_proc("cuDevicePrimaryCtxRetain");
    if (cu_init)
        cu_init(0);
    CUcontext ctx = NULL;
    if (!get || !set || !retain || get(&ctx) != CUDA_SUCCESS || ctx)
        return;
    if (retain(&ctx, (CUdevice)simgpu_current_device()) == CUDA_SUCCESS)
        set(ctx);
}

CUresult simdnn_driver_alloc(CUdeviceptr *p, size_t bytes)
{
    mem_alloc_fn fn = (mem_alloc_fn)simgpu_driver_proc("cuMemAlloc");
    if (!fn)
        return CUDA_ERROR_NOT_FOUND;
    ensure_context();
    return fn(p, bytes);
}

CUresult simdnn_driver_free(CUdeviceptr p)
{
    mem_free_fn fn = (mem_free_fn)simgpu_driver_proc("cuMemFree");
    if (!fn)
        return CUDA_ERROR_NOT_FOUND;
    /* A handle may be destroyed on a thread that never used the device. */
    ensure_context();
    return fn(p);
}

/* ---- cost model ----------------------------------------------------------- */

CUstream simdnn_stream(cudnnHandle_t h) { return (CUstream)h->stream; }

double simdnn_model_ns(cudnnHandle_t h, double flops, double flop_eff, double bytes,
                       double serial_bytes)
{
    CUstream s = simdnn_stream(h);
    double t_flop = flops > 0 ? simgpu_flop_time_ns(s, flops, flop_eff) : 0.0;
    double t_mem = bytes > 0 ? simgpu_mem_time_ns(s, bytes / SIMDNN_BW_EFFICIENCY) : 0.0;
    double t_serial = serial_bytes > 0 ? simgpu_mem_time_ns(s, serial_bytes / SIMDNN_BW_EFFICIENCY) : 0.0;
    return fmax(t_flop, t_mem) + t_serial;
}

void simdnn_charge(cudnnHandle_t h, const char *name, double flops, double flop_eff, double bytes,
                   double serial_bytes)
{
    simgpu_enqueue(simdnn_stream(h), SIMGPU_COMPUTE,
                   simdnn_model_ns(h, flops, flop_eff, bytes, serial_bytes), name);
}

cudnnStatus_t simdnn_scratch_failed(cudnnHandle_t h, const char *what)
{
    simgpu_enqueue(simdnn_stream(h), SIMGPU_COMPUTE, 0.0, what);
    return simdnn_fail(CUDNN_STATUS_ALLOC_FAILED, "%s: host scratch allocation failed", what);
}

double simdnn_launch_ns(cudnnHandle_t h)
{
    const simgpu_profile *p = simgpu_profile_of(simgpu_stream_device(simdnn_stream(h)));
    return p ? p->launch_ns : 0.0;
}

/* ---- handle --------------------------------------------------------------- */

cudnnStatus_t cudnnCreate(cudnnHandle_t *handle)
{
    if (!handle)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreate: handle is NULL");
    simgpu_init();
    simdnn_blas_init();
    if (simgpu_device_count() <= 0)
        return simdnn_fail(CUDNN_STATUS_NOT_INITIALIZED, "cudnnCreate: no device");
    struct cudnnContext *h = calloc(1, sizeof *h);
    if (!h)
        return simdnn_fail(CUDNN_STATUS_ALLOC_FAILED, "cudnnCreate: out of host memory");
    h->device = simgpu_current_device();
    h->internal_bytes = SIMDNN_HANDLE_BUFFER_BYTES;
    if (simdnn_driver_alloc(&h->internal, h->internal_bytes) != CUDA_SUCCESS) {
        free(h);
        return simdnn_fail(CUDNN_STATUS_ALLOC_FAILED, "cudnnCreate: device allocation failed");
    }
    h->magic = SIMDNN_MAGIC_HANDLE;
    *handle = h;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle)
{
    cudnnStatus_t st = simdnn_check_handle(handle);
    if (st)
        return st;
    simdnn_driver_free(handle->internal);
    handle->magic = SIMDNN_MAGIC_DEAD;
    free(handle);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId)
{
    cudnnStatus_t st = simdnn_check_handle(handle);
    if (st)
        return st;
    if (simgpu_stream_check((CUstream)streamId) != CUDA_SUCCESS)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetStream: stream not usable on this device");
    handle->stream = streamId;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t *streamId)
{
    cudnnStatus_t st = simdnn_check_handle(handle);
    if (st)
        return st;
    if (!streamId)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetStream: streamId is NULL");
    *streamId = handle->stream;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- identity ------------------------------------------------------------- */

size_t cudnnGetVersion(void) { return CUDNN_VERSION; }
size_t cudnnGetMaxDeviceVersion(void) { return CUDNN_MAX_DEVICE_VERSION; }
size_t cudnnGetCudartVersion(void) { return CUDART_VERSION; }

cudnnStatus_t cudnnGetProperty(libraryPropertyType type, int *value)
{
    if (!value)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetProperty: value is NULL");
    switch (type) {
    case MAJOR_VERSION: *value = CUDNN_MAJOR; break;
    case MINOR_VERSION: *value = CUDNN_MINOR; break;
    case PATCH_LEVEL: *value = CUDNN_PATCHLEVEL; break;
    default: return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetProperty: unknown property");
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGraphVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnOpsVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnCnnVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }

const char *cudnnGetErrorString(cudnnStatus_t status)
{
    switch ((int)status) {
#define S(x) case x: return #x;
    S(CUDNN_STATUS_SUCCESS)
    S(CUDNN_STATUS_NOT_INITIALIZED)
    S(CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH)
    S(CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH)
    S(CUDNN_STATUS_DEPRECATED)
    S(CUDNN_STATUS_LICENSE_ERROR)
    S(CUDNN_STATUS_RUNTIME_IN_PROGRESS)
    S(CUDNN_STATUS_RUNTIME_FP_OVERFLOW)
    S(CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED)
    S(CUDNN_STATUS_BAD_PARAM)
    S(CUDNN_STATUS_INVALID_VALUE)
    S(CUDNN_STATUS_BAD_PARAM_NULL_POINTER)
    S(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER)
    S(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED)
    S(CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND)
    S(CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT)
    S(CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH)
    S(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH)
    S(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES)
    S(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE)
    S(CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH)
    S(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE)
    S(CUDNN_STATUS_NOT_SUPPORTED)
    S(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN)
    S(CUDNN_STATUS_NOT_SUPPORTED_SHAPE)
    S(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE)
    S(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT)
    S(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER)
    S(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART)
    S(CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH)
    S(CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING)
    S(CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE)
    S(CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT)
    S(CUDNN_STATUS_NOT_SUPPORTED_PADDING)
    S(CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM)
    S(CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API)
    S(CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE)
    S(CUDNN_STATUS_INTERNAL_ERROR)
    S(CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED)
    S(CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE)
    S(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
    S(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
    S(CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM)
    S(CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED)
    S(CUDNN_STATUS_EXECUTION_FAILED)
    S(CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER)
    S(CUDNN_STATUS_EXECUTION_FAILED_CUBLAS)
    S(CUDNN_STATUS_EXECUTION_FAILED_CUDART)
    S(CUDNN_STATUS_EXECUTION_FAILED_CURAND)
#undef S
    default: return "CUDNN_UNKNOWN_STATUS_FOUND";
    }
}

void cudnnGetLastErrorString(char *message, size_t max_size)
{
    if (!message || max_size == 0)
        return;
    snprintf(message, max_size, "%s", last_error);
}

cudnnStatus_t cudnnSetCallback(unsigned mask, void *udata, cudnnCallback_t fptr)
{
    pthread_mutex_lock(&g_callback.lock);
    g_callback.mask = mask;
    g_callback.udata = udata;
    g_callback.fn = fptr;
    pthread_mutex_unlock(&g_callback.lock);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetCallback(unsigned *mask, void **udata, cudnnCallback_t *fptr)
{
    if (!mask || !udata || !fptr)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetCallback: NULL output");
    pthread_mutex_lock(&g_callback.lock);
    *mask = g_callback.mask;
    *udata = g_callback.udata;
    *fptr = g_callback.fn;
    pthread_mutex_unlock(&g_callback.lock);
    return CUDNN_STATUS_SUCCESS;
}
