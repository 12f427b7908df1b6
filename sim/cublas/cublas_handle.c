/*
 * cublas_handle.c — the simulated cuBLAS context: create/destroy, stream,
 * workspace, pointer and math modes, version queries and status strings,
 * plus the helpers every routine uses to check its handle, scalars, result
 * pointer and workspace.
 *
 * Like the real library (which carries a static cudart), cublasCreate
 * allocates its default workspace through the driver — dlopen libcuda.so.1,
 * cuGetProcAddress, cuMemAlloc — so a driver-level interposer sees that
 * allocation exactly where it would with the real cuBLAS, and never through
 * the runtime. Its size follows the cuBLAS documentation's recommendation
 * for the device's architecture (see docs/sim-cublas.md).
 */
#include "sim/cublas/cublas_internal.h"

#include <cblas.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "sim/drvproc.h"

/* One thread keeps OpenBLAS's results independent of scheduling, so that a
 * run is bit-for-bit repeatable; it also matches what a single stream is:
 * one op at a time. */
__attribute__((constructor)) static void simblas_load(void)
{
    openblas_set_num_threads(1);
}

/* ---- driver entry points, reached the way cudart reaches them ----------- */

typedef CUresult (*cu_mem_alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*cu_mem_free_fn)(CUdeviceptr);

static struct {
    cu_mem_alloc_fn mem_alloc;
    cu_mem_free_fn mem_free;
} g_drv;
static pthread_once_t g_drv_once = PTHREAD_ONCE_INIT;

static void resolve_driver(void)
{
    g_drv.mem_alloc = (cu_mem_alloc_fn)simgpu_driver_proc("cuMemAlloc");
    g_drv.mem_free = (cu_mem_free_fn)simgpu_driver_proc("cuMemFree");
}

/* What the library's static cudart does on first use: initialise the driver
 * and make the current device's primary context current if none is. */
static int driver_ready(int dev)
{
    pthread_once(&g_drv_once, resolve_driver);
    return g_drv.mem_alloc && g_drv.mem_free && simgpu_driver_context_ready(dev);
}

/* cuBLAS documentation, cublasSetWorkspace(): 32 MiB recommended on Hopper,
 * 4 MiB on other architectures; the default pool is sized the same way. */
static size_t default_workspace_bytes(int dev)
{
    const simgpu_profile *p = simgpu_profile_of(dev);
    return (size_t)(p->cc_major >= 9 ? 32 : 4) << 20;
}

/* ---- helpers shared by the routines -------------------------------------- */

int simblas_handle_ok(cublasHandle_t h)
{
    return h && h->magic == SIMBLAS_HANDLE_MAGIC;
}

/* A host read of a device address is a segmentation fault on a real
 * machine; the simulated device is host-addressable, so the mistake would
 * otherwise go unnoticed. */
static void host_deref_check(const void *p, const char *what)
{
    if (simgpu_device_of(p) >= 0) {
        simgpu_log("%s: %p is device memory but the cuBLAS handle is in host pointer mode "
                   "(the host would fault reading it)", what, p);
        /* End the process the way the fault would, past any handler. */
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
    }
}

cublasStatus_t simblas_read_scalar(cublasHandle_t h, const float *p, const char *what,
                                   struct simblas_scalar *out)
{
    if (!p)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (h->pointer_mode == CUBLAS_POINTER_MODE_HOST) {
        host_deref_check(p, what);
        out->value = *p;
        out->known = 1;
        return CUBLAS_STATUS_SUCCESS;
    }
    simgpu_check_range(p, sizeof(float), 0, what);
    out->known = simgpu_compute_enabled();
    out->value = out->known ? *p : 1.0f;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t simblas_check_result_ptr(cublasHandle_t h, float *result, const char *what)
{
    if (!result)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (h->pointer_mode == CUBLAS_POINTER_MODE_DEVICE)
        simgpu_check_range(result, sizeof(float), 1, what);
    return CUBLAS_STATUS_SUCCESS;
}

void simblas_store_result(cublasHandle_t h, float *result, float value, uint64_t done_ns)
{
    if (h->pointer_mode == CUBLAS_POINTER_MODE_DEVICE) {
        if (simgpu_compute_enabled())
            *result = value;
        return;
    }
    /* The result is copied back to the host: the call returns only once the
     * stream has reached and finished this reduction. */
    simgpu_host_wait_until(done_ns);
    *result = value;
}

cublasStatus_t simblas_check_work(cublasHandle_t h)
{
    if (!simblas_handle_ok(h))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    /* Work is done when issued, so it cannot be recorded into a graph: the
     * call fails and the capture is invalidated (docs/sim-cublas.md). */
    if (simgpu_capture_refuse((CUstream)h->stream) != CUDA_SUCCESS)
        return CUBLAS_STATUS_EXECUTION_FAILED;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t simblas_stream_ok(cublasHandle_t h)
{
    return simgpu_stream_check((CUstream)h->stream) == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS
                                                                      : CUBLAS_STATUS_EXECUTION_FAILED;
}

void simblas_check_workspace(cublasHandle_t h, const char *what)
{
    if (h->workspace && h->workspace_size)
        simgpu_check_range(h->workspace, h->workspace_size, 1, what);
}

/* ---- context ------------------------------------------------------------- */

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle)
{
    if (!handle)
        return CUBLAS_STATUS_INVALID_VALUE;
    simgpu_init();
    int dev = simgpu_current_device();
    if (!driver_ready(dev))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    struct cublasContext *h = calloc(1, sizeof *h);
    if (!h)
        return CUBLAS_STATUS_ALLOC_FAILED;
    h->device = dev;
    h->default_workspace_size = default_workspace_bytes(dev);
    if (g_drv.mem_alloc(&h->default_workspace, h->default_workspace_size) != CUDA_SUCCESS) {
        free(h);
        return CUBLAS_STATUS_ALLOC_FAILED;
    }
    h->magic = SIMBLAS_HANDLE_MAGIC;
    h->stream = NULL;
    h->pointer_mode = CUBLAS_POINTER_MODE_HOST;
    h->math_mode = CUBLAS_DEFAULT_MATH;
    h->atomics_mode = CUBLAS_ATOMICS_NOT_ALLOWED;
    h->workspace = (void *)(uintptr_t)h->default_workspace;
    h->workspace_size = h->default_workspace_size;
    *handle = h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)
{
    if (!simblas_handle_ok(handle))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    /* Releasing the context's resources synchronises the device (cuBLAS
     * documentation, cublasCreate()). */
    simgpu_device_synchronize();
    /* A handle may be destroyed on a thread that never used the device. */
    CUresult r = driver_ready(simgpu_current_device()) ? g_drv.mem_free(handle->default_workspace)
                                                       : CUDA_ERROR_NOT_INITIALIZED;
    handle->magic = 0;
    free(handle);
    return r == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INTERNAL_ERROR;
}

cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int *version)
{
    (void)handle;
    if (!version)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    *version = CUBLAS_VERSION;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetProperty(libraryPropertyType type, int *value)
{
    if (!value)
        return CUBLAS_STATUS_INVALID_VALUE;
    switch (type) {
    case MAJOR_VERSION: *value = CUBLAS_VER_MAJOR; return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION: *value = CUBLAS_VER_MINOR; return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = CUBLAS_VER_PATCH; return CUBLAS_STATUS_SUCCESS;
    default: return CUBLAS_STATUS_INVALID_VALUE;
    }
}

size_t cublasGetCudartVersion(void)
{
    return CUDART_VERSION;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId)
{
    if (!simblas_handle_ok(handle))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->stream = streamId;
    /* Documented: setting the stream always returns to the default pool. */
    handle->workspace = (void *)(uintptr_t)handle->default_workspace;
    handle->workspace_size = handle->default_workspace_size;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t *streamId)
{
    if (!simblas_handle_ok(handle))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!streamId)
        return CUBLAS_STATUS_INVALID_VALUE;
    *streamId = handle->stream;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace, size_t workspaceSizeInBytes)
{
    if (!simblas_handle_ok(handle))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    /* Documented requirement: at least 256-byte alignment. */
    if ((uintptr_t)workspace % 256 != 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!workspace && workspaceSizeInBytes)
        return CUBLAS_STATUS_INVALID_VALUE;
    handle->workspace = workspace;
    handle->workspace_size = workspace ? workspaceSizeInBytes : 0;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t *mode)
{
    if (!simblas_handle_ok(handle))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!mode)
        return CUBLAS_STATUS_INVALID_VALUE;
    *mode = handle->pointer_mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode)
{
    if (!simblas_handle_ok(handle))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE)
        return CUBLAS_STATUS_INVALID_VALUE;
    handle->pointer_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t *mode)
{
    if (!simblas_handle_ok(handle))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!mode)
        return CUBLAS_STATUS_INVALID_VALUE;
    *mode = handle->atomics_mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t mode)
{
    if (!simblas_handle_ok(handle))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (mode != CUBLAS_ATOMICS_NOT_ALLOWED && mode != CUBLAS_ATOMICS_ALLOWED)
        return CUBLAS_STATUS_INVALID_VALUE;
    handle->atomics_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode)
{
    if (!simblas_handle_ok(handle))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!mode)
        return CUBLAS_STATUS_INVALID_VALUE;
    *mode = handle->math_mode;
    return CUBLAS_STATUS_SUCCESS;
}

/* The mode is recorded and reported; single-precision routines always
 * compute in FP32 here, whatever it allows (docs/sim-cublas.md). */
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
{
    if (!simblas_handle_ok(handle))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    unsigned base = (unsigned)mode & ~(unsigned)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
    switch (base) {
    case CUBLAS_DEFAULT_MATH:
    case CUBLAS_TENSOR_OP_MATH:
    case CUBLAS_PEDANTIC_MATH:
    case CUBLAS_TF32_TENSOR_OP_MATH:
    case CUBLAS_FP32_EMULATED_BF16X9_MATH:
    case CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH:
        handle->math_mode = mode;
        return CUBLAS_STATUS_SUCCESS;
    default:
        return CUBLAS_STATUS_INVALID_VALUE;
    }
}

/* ---- status strings ------------------------------------------------------ */

const char *cublasGetStatusName(cublasStatus_t status)
{
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    }
    return "<unknown>";
}

const char *cublasGetStatusString(cublasStatus_t status)
{
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR: return "the functionality requested requires some license";
    }
    return "<unknown>";
}
