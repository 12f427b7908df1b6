/*
 * driver.c — the simulated libcuda.so.1: the driver entry points a runtime,
 * cuDNN, cuBLAS or an interposer reaches, including cuGetProcAddress, which
 * is how the real libcudart finds every driver function.
 *
 * Initialisation and contexts are in sim/context.c; every entry point here
 * first checks what the real driver requires (cuInit, and for calls on "the
 * current context" a current context). Memory, VMM (sim/vmm.c), copies and
 * timeline (sim/ops.c, sim/timeline.c) are shared with the runtime.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "sim/simint.h"
#include "sim/simtime.h"

static CUresult dev_ok(CUdevice d) { return sim_dev(d) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE; }

/* Preconditions of an entry point (sim/context.c), checked before its
 * arguments as the driver does. */
#define NEED(check)                         \
    do {                                    \
        CUresult need_ = (check);           \
        if (need_ != CUDA_SUCCESS)          \
            return need_;                   \
    } while (0)

CUresult cuDriverGetVersion(int *v)
{
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    *v = CUDA_VERSION;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *n)
{
    NEED(sim_need_init());
    if (!n)
        return CUDA_ERROR_INVALID_VALUE;
    *n = simgpu_device_count();
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    NEED(sim_need_init());
    if (!d)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev_ok(ordinal) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
    NEED(sim_need_init());
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev_ok(d) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "%s", simgpu_profile_of(d)->long_name);
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice d)
{
    NEED(sim_need_init());
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev_ok(d) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_DEVICE;
    *bytes = simgpu_capacity(d);
    return CUDA_SUCCESS;
}

/* The attributes a framework or libsn asks about; others report 0. */
int simgpu_device_attribute(int attr, int d)
{
    const simgpu_profile *p = simgpu_profile_of(d);
    switch (attr) {
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return simgpu_vmm_supported();
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return p->cc_major;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return p->cc_minor;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return p->sm_count;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return p->copy_engines;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 49152;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 65536;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1000000;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 3000000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 384;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1;
    /* Pascal and later; the simulator itself never faults a host access. */
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: return p->cc_major >= 6;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: return SIMGPU_PITCH_ALIGN;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: return d;
    default: return 0;
    }
}

CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute attr, CUdevice d)
{
    NEED(sim_need_init());
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev_ok(d) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_DEVICE;
    *v = simgpu_device_attribute((int)attr, d);
    return CUDA_SUCCESS;
}

/* ---- memory ---------------------------------------------------------------- */

CUresult cuMemAlloc(CUdeviceptr *p, size_t bytes)
{
    NEED(sim_need_ctx());
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    return simgpu_malloc(simgpu_current_device(), bytes, p);
}

/* cudaMallocPitch's rows: widths rounded up to 512 bytes, what the Kepler and
 * Maxwell GPUs of the profiles return (and the texture alignment they report). */
CUresult cuMemAllocPitch(CUdeviceptr *p, size_t *pitch, size_t width, size_t height, unsigned int elem)
{
    NEED(sim_need_ctx());
    if (!p || !pitch || width == 0 || height == 0 || (elem != 4 && elem != 8 && elem != 16))
        return CUDA_ERROR_INVALID_VALUE;
    if (width > 2147483647u)
        return CUDA_ERROR_INVALID_VALUE; /* past the device's maximum pitch */
    size_t rp = (width + SIMGPU_PITCH_ALIGN - 1) / SIMGPU_PITCH_ALIGN * SIMGPU_PITCH_ALIGN;
    size_t bytes;
    if (__builtin_mul_overflow(rp, height, &bytes))
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = simgpu_malloc(simgpu_current_device(), bytes, p);
    if (rc == CUDA_SUCCESS)
        *pitch = rp;
    return rc;
}

CUresult cuMemAllocManaged(CUdeviceptr *p, size_t bytes, unsigned int flags)
{
    NEED(sim_need_ctx());
    if (!p || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return simgpu_malloc_managed(simgpu_current_device(), bytes, flags, p);
}

CUresult cuMemFree(CUdeviceptr p)
{
    NEED(sim_need_ctx());
    return simgpu_free(p);
}

CUresult cuMemGetInfo(size_t *free_b, size_t *total_b)
{
    NEED(sim_need_ctx());
    if (!free_b || !total_b)
        return CUDA_ERROR_INVALID_VALUE;
    simgpu_mem_info(simgpu_current_device(), free_b, total_b);
    return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
    NEED(sim_need_ctx());
    return simgpu_heap_lookup((const void *)p, base, size) == 0 ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult cuMemAllocHost(void **pp, size_t bytes)
{
    NEED(sim_need_ctx());
    if (!pp)
        return CUDA_ERROR_INVALID_VALUE;
    *pp = simgpu_host_alloc(bytes, 0);
    return *pp ? CUDA_SUCCESS : (bytes ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_VALUE);
}

CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned int flags)
{
    NEED(sim_need_ctx());
    if (!pp)
        return CUDA_ERROR_INVALID_VALUE;
    *pp = simgpu_host_alloc(bytes, flags);
    return *pp ? CUDA_SUCCESS : (bytes ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_VALUE);
}

CUresult cuMemFreeHost(void *p)
{
    NEED(sim_need_ctx());
    return simgpu_host_free(p) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n)
{
    NEED(sim_need_ctx());
    return simgpu_memcpy((void *)dst, src, n, 1, CU_STREAM_LEGACY, 1);
}
CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n)
{
    NEED(sim_need_ctx());
    return simgpu_memcpy(dst, (const void *)src, n, 2, CU_STREAM_LEGACY, 1);
}
CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    NEED(sim_need_ctx());
    return simgpu_memcpy((void *)dst, (const void *)src, n, 3, CU_STREAM_LEGACY, 1);
}
CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
    NEED(sim_need_ctx_for_stream(s));
    return simgpu_memcpy((void *)dst, src, n, 1, s, 0);
}
CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    NEED(sim_need_ctx_for_stream(s));
    return simgpu_memcpy(dst, (const void *)src, n, 2, s, 0);
}
CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    NEED(sim_need_ctx_for_stream(s));
    return simgpu_memcpy((void *)dst, (const void *)src, n, 3, s, 0);
}
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    NEED(sim_need_ctx());
    return simgpu_memcpy((void *)dst, (const void *)src, n, 0, CU_STREAM_LEGACY, 1);
}
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    NEED(sim_need_ctx_for_stream(s));
    return simgpu_memcpy((void *)dst, (const void *)src, n, 0, s, 0);
}
CUresult cuMemsetD8(CUdeviceptr dst, unsigned char v, size_t n)
{
    NEED(sim_need_ctx());
    return simgpu_memset((void *)dst, v, 1, n, CU_STREAM_LEGACY, 0);
}
CUresult cuMemsetD32(CUdeviceptr dst, unsigned int v, size_t n)
{
    NEED(sim_need_ctx());
    return simgpu_memset((void *)dst, v, 4, n, CU_STREAM_LEGACY, 0);
}
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s)
{
    NEED(sim_need_ctx_for_stream(s));
    return simgpu_memset((void *)dst, v, 1, n, s, 0);
}
CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int v, size_t n, CUstream s)
{
    NEED(sim_need_ctx_for_stream(s));
    return simgpu_memset((void *)dst, v, 4, n, s, 0);
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attr, CUdeviceptr p)
{
    NEED(sim_need_init());
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    int dev = simgpu_device_of((const void *)p);
    int pinned = simgpu_is_pinned((const void *)p, 1);
    if (dev < 0 && !pinned)
        return CUDA_ERROR_INVALID_VALUE;
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned *)data = dev >= 0 ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = dev >= 0 ? dev : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(int *)data = simgpu_is_managed((const void *)p);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        *(CUdeviceptr *)data = p;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* ---- streams and events -------------------------------------------------- */

CUresult cuStreamCreate(CUstream *s, unsigned int flags)
{
    NEED(sim_need_ctx());
    return simgpu_stream_create(s, flags, 0);
}
CUresult cuStreamCreateWithPriority(CUstream *s, unsigned int flags, int prio)
{
    NEED(sim_need_ctx());
    return simgpu_stream_create(s, flags, prio);
}
CUresult cuStreamDestroy(CUstream s)
{
    NEED(sim_need_init());
    return simgpu_stream_destroy(s);
}
CUresult cuStreamSynchronize(CUstream s)
{
    NEED(sim_need_ctx_for_stream(s));
    return simgpu_stream_synchronize(s);
}
CUresult cuStreamQuery(CUstream s)
{
    NEED(sim_need_ctx_for_stream(s));
    return simgpu_stream_query(s);
}
CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags)
{
    (void)flags;
    NEED(sim_need_ctx_for_stream(s));
    return simgpu_stream_wait_event(s, e);
}
CUresult cuEventCreate(CUevent *e, unsigned int flags)
{
    NEED(sim_need_ctx());
    return simgpu_event_create(e, flags);
}
CUresult cuEventDestroy(CUevent e)
{
    NEED(sim_need_init());
    return simgpu_event_destroy(e);
}
CUresult cuEventRecord(CUevent e, CUstream s)
{
    NEED(sim_need_ctx_for_stream(s));
    return simgpu_event_record(e, s);
}
CUresult cuEventRecordWithFlags(CUevent e, CUstream s, unsigned int flags)
{
    NEED(sim_need_ctx_for_stream(s));
    return simgpu_event_record_flags(e, s, flags);
}
CUresult cuEventRecordWithFlags_ptsz(CUevent e, CUstream s, unsigned int flags);
CUresult cuEventRecordWithFlags_ptsz(CUevent e, CUstream s, unsigned int flags)
{
    return cuEventRecordWithFlags(e, s ? s : CU_STREAM_PER_THREAD, flags);
}
CUresult cuEventQuery(CUevent e)
{
    NEED(sim_need_init());
    return simgpu_event_query(e);
}
CUresult cuEventSynchronize(CUevent e)
{
    NEED(sim_need_init());
    return simgpu_event_synchronize(e);
}
CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
    NEED(sim_need_init());
    return simgpu_event_elapsed(ms, a, b);
}

/* ---- errors ---------------------------------------------------------------- */

CUresult cuGetErrorName(CUresult e, const char **s)
{
    if (!s)
        return CUDA_ERROR_INVALID_VALUE;
    switch (e) {
#define N(x) case x: *s = #x; return CUDA_SUCCESS;
    N(CUDA_SUCCESS) N(CUDA_ERROR_INVALID_VALUE) N(CUDA_ERROR_OUT_OF_MEMORY) N(CUDA_ERROR_NOT_INITIALIZED)
    N(CUDA_ERROR_INVALID_DEVICE) N(CUDA_ERROR_INVALID_CONTEXT) N(CUDA_ERROR_INVALID_HANDLE)
    N(CUDA_ERROR_NOT_FOUND) N(CUDA_ERROR_NOT_READY) N(CUDA_ERROR_ILLEGAL_ADDRESS) N(CUDA_ERROR_NOT_SUPPORTED)
    N(CUDA_ERROR_NO_BINARY_FOR_GPU) N(CUDA_ERROR_LAUNCH_FAILED)
#undef N
    default: *s = NULL; return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuGetErrorString(CUresult e, const char **s)
{
    if (!s)
        return CUDA_ERROR_INVALID_VALUE;
    switch (e) {
    case CUDA_SUCCESS: *s = "no error"; break;
    case CUDA_ERROR_INVALID_VALUE: *s = "invalid argument"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *s = "out of memory"; break;
    case CUDA_ERROR_INVALID_DEVICE: *s = "invalid device ordinal"; break;
    case CUDA_ERROR_INVALID_HANDLE: *s = "invalid resource handle"; break;
    case CUDA_ERROR_NOT_READY: *s = "device not ready"; break;
    case CUDA_ERROR_NOT_SUPPORTED: *s = "operation not supported"; break;
    case CUDA_ERROR_ILLEGAL_ADDRESS: *s = "an illegal memory access was encountered"; break;
    default: return cuGetErrorName(e, s);
    }
    return CUDA_SUCCESS;
}

/* ---- entry points ------------------------------------------------------------ */

/* Returns our own definition of symbol, preferring the newest _vN variant
 * as the real driver does for the toolkit version asked for. */
static void *own_symbol(const char *symbol, int per_thread)
{
    static void *self;
    if (!self) {
        Dl_info info;
        if (dladdr((void *)cuInit, &info) && info.dli_fname)
            self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    }
    if (!self)
        return NULL;
    static const char *const suffixes[] = {"_v4", "_v3", "_v2", ""};
    char name[256];
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        if (per_thread) {
            snprintf(name, sizeof name, "%s%s_ptsz", symbol, suffixes[i]);
            void *f = dlsym(self, name);
            if (f)
                return f;
            snprintf(name, sizeof name, "%s%s_ptds", symbol, suffixes[i]);
            if ((f = dlsym(self, name)))
                return f;
        }
        snprintf(name, sizeof name, "%s%s", symbol, suffixes[i]);
        void *f = dlsym(self, name);
        if (f)
            return f;
    }
    return NULL;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    /* From CUDA 12.0 on, cuGraphInstantiate is cuGraphInstantiateWithFlags
     * (cuda.h maps the name); the driver hands that out for it. */
    if (version >= 12000 && strcmp(symbol, "cuGraphInstantiate") == 0)
        symbol = "cuGraphInstantiateWithFlags";
    *pfn = own_symbol(symbol, (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0);
    if (status)
        *status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

/* The pre-12.0 entry point, still exported by the real driver for old
 * runtimes; the header only names the _v2 one. */
#undef cuGetProcAddress
CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags);
CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}
