/*
 * kernels.c — the runtime's kernel registration and launch entry points.
 *
 * Two kinds of launchable functions exist here. Functions that nvcc's host
 * stubs register from a fat binary (__cudaRegisterFatBinary /
 * __cudaRegisterFunction) have no CPU implementation: with SIMGPU_COMPUTE=0
 * their launches are modelled with a nominal duration, so nvcc-built programs
 * load and run for timing and memory studies; with compute on they fail the
 * way CUDA reports a missing kernel image; with SIMGPU_COMPUTE=libs the
 * driver runs a deterministic stand-in for them (sim/standin.c). Their parameter layouts come from
 * the fat binary's metadata (sim/fatbin.c), read when first asked for, as
 * the real driver's cudaFuncGetParamInfo answers. Host functions registered
 * through sim/simgpu.h are real: they run in stream order on the CPU and
 * report their parameter layout through cudaFuncGetParamInfo, so
 * kernel-launch interception can be tested end to end.
 *
 * nvcc 13's stubs launch through __cudaGetKernel + __cudaPopCallConfiguration
 * + __cudaLaunchKernel(cudaKernel_t, ...); the kernel handle we hand out is
 * the registry entry itself, which is also the function's CUfunction.
 *
 * The registry, the fat-binary reading and the launch itself are the
 * driver's (sim/module.c): the runtime registers there and launches through
 * cuLaunchKernel, taken once from cuGetProcAddress as the real runtime
 * takes it (sim/drvproc.h), so an interposer sees the nested driver launch.
 * On a capturing stream a launch or a host function is recorded as a graph
 * node (with a copy of the kernel's arguments) and runs when the graph is
 * launched (sim/graph.c).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "sim/drvproc.h"
#include "sim/simcore.h"
#include "sim/simgpu.h"
#include "sim/simrt.h"

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);
typedef CUresult (*param_info_fn)(CUfunction, size_t, size_t *, size_t *);
typedef CUresult (*func_name_fn)(const char **, CUfunction);

static struct {
    launch_fn launch;
    param_info_fn param_info;
    func_name_fn name;
} drv;
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;

static void drv_resolve(void)
{
    drv.launch = (launch_fn)simgpu_driver_proc("cuLaunchKernel");
    drv.param_info = (param_info_fn)simgpu_driver_proc("cuFuncGetParamInfo");
    drv.name = (func_name_fn)simgpu_driver_proc("cuFuncGetName");
}

static void drv_init(void) { pthread_once(&drv_once, drv_resolve); }

int simgpu_register_host_kernel_impl(simgpu_host_kernel_fn fn, const char *name, int nparams,
                                     const size_t *sizes);
int simgpu_register_host_kernel_impl(simgpu_host_kernel_fn fn, const char *name, int nparams,
                                     const size_t *sizes)
{
    return simgpu_func_register_host((const void *)fn, name, nparams, sizes);
}

/* ---- nvcc registration ------------------------------------------------------ */

/* The handle nvcc keeps is the address of the first member; the fat binary
 * itself is a module of the driver's registry. */
struct fatbin {
    void *cubin;                  /* the __fatBinC_Wrapper_t nvcc registers */
    void *mod;
    struct fatbin *next, *prev;   /* every registered one: a program that never
                                     unregisters (exits first) still holds them */
};
static struct fatbin *g_fatbins;
static pthread_mutex_t g_fatbin_lock = PTHREAD_MUTEX_INITIALIZER;

void **__cudaRegisterFatBinary(void *fatCubin)
{
    struct fatbin *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->cubin = fatCubin;
    f->mod = simgpu_fatbin_register(fatCubin);
    pthread_mutex_lock(&g_fatbin_lock);
    f->next = g_fatbins;
    if (g_fatbins)
        g_fatbins->prev = f;
    g_fatbins = f;
    pthread_mutex_unlock(&g_fatbin_lock);
    return &f->cubin;
}

void __cudaRegisterFatBinaryEnd(void **handle) { (void)handle; }

void __cudaUnregisterFatBinary(void **handle)
{
    if (!handle)
        return;
    struct fatbin *f = (struct fatbin *)handle;
    simgpu_fatbin_unregister(f->mod);
    pthread_mutex_lock(&g_fatbin_lock);
    if (f->prev)
        f->prev->next = f->next;
    else
        g_fatbins = f->next;
    if (f->next)
        f->next->prev = f->prev;
    pthread_mutex_unlock(&g_fatbin_lock);
    free(f);
}

void __cudaRegisterFunction(void **handle, const char *hostFun, char *deviceFun, const char *deviceName,
                            int thread_limit, uint3 *tid, uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize)
{
    (void)thread_limit; (void)tid; (void)bid; (void)bDim; (void)gDim; (void)wSize;
    /* The metadata is keyed by the device symbol (deviceFun); nvcc passes
     * the same string as deviceName. */
    const char *symbol = deviceFun ? deviceFun : deviceName;
    simgpu_func_register_stub(hostFun, handle ? ((struct fatbin *)handle)->mod : NULL, symbol, deviceName);
}

void __cudaRegisterVar(void **handle, char *hostVar, char *deviceAddress, const char *deviceName, int ext,
                       size_t size, int constant, int global)
{
    (void)handle; (void)hostVar; (void)deviceAddress; (void)deviceName; (void)ext; (void)size; (void)constant;
    (void)global;
}

void __cudaRegisterManagedVar(void **handle, void **hostVarPtrAddress, char *deviceAddress,
                              const char *deviceName, int ext, size_t size, int constant, int global)
{
    (void)handle; (void)hostVarPtrAddress; (void)deviceAddress; (void)deviceName; (void)ext; (void)size;
    (void)constant; (void)global;
}

char __cudaInitModule(void **handle)
{
    (void)handle;
    return 1;
}

/* The <<<>>> configuration, pushed by the caller and popped by the stub. */
struct launch_config { dim3 grid, block; size_t shmem; void *stream; };
static __thread struct launch_config t_cfg[16];
static __thread int t_cfg_n;

unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shmem, struct CUstream_st *stream)
{
    if (t_cfg_n >= 16)
        return 1;
    t_cfg[t_cfg_n++] = (struct launch_config){grid, block, shmem, stream};
    return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shmem, void *stream)
{
    if (t_cfg_n <= 0)
        return simrt_fail(cudaErrorInvalidConfiguration);
    struct launch_config c = t_cfg[--t_cfg_n];
    *grid = c.grid;
    *block = c.block;
    *shmem = c.shmem;
    *(void **)stream = c.stream;
    return cudaSuccess;
}

cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun)
{
    CUfunction f = simgpu_func_lookup(hostFun);
    if (!kernel || !f)
        return simrt_fail(cudaErrorInvalidDeviceFunction);
    *kernel = (cudaKernel_t)f;
    return cudaSuccess;
}

cudaError_t cudaGetFuncBySymbol(cudaFunction_t *out, const void *symbol)
{
    SIMRT_NEED_CTX();
    if (!out)
        return simrt_fail(cudaErrorInvalidValue);
    CUfunction f = simgpu_func_lookup(symbol);
    if (!f)
        return simrt_fail(cudaErrorInvalidDeviceFunction);
    *out = (cudaFunction_t)f;
    return cudaSuccess;
}

cudaError_t cudaFuncGetName(const char **name, const void *func)
{
    SIMRT_NEED_CTX();
    if (!name)
        return simrt_fail(cudaErrorInvalidValue);
    CUfunction f = simgpu_func_lookup(func);
    if (!f)
        return simrt_fail(cudaErrorInvalidDeviceFunction);
    drv_init();
    return drv.name ? simrt_error(drv.name(name, f)) : simrt_fail(cudaErrorInitializationError);
}

/* ---- launch --------------------------------------------------------------- */

/* The runtime's own checks come first, with the runtime's codes; the
 * launch itself is the driver's. */
static cudaError_t launch(const void *func, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t s)
{
    SIMRT_NEED_CTX();
    CUfunction f = simgpu_func_lookup(func);
    if (!f)
        return simrt_fail(cudaErrorInvalidDeviceFunction);
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0 ||
        grid.y > 65535 || grid.z > 65535 || block.z > 64 ||
        (unsigned long long)block.x * block.y * block.z > 1024)
        return simrt_fail(cudaErrorInvalidConfiguration);
    if (simgpu_stream_check((CUstream)s) != CUDA_SUCCESS)
        return simrt_fail(cudaErrorInvalidResourceHandle);
    if (!simgpu_func_has_body(f) && simgpu_compute_enabled() && !simgpu_kernel_standin())
        return simrt_fail(cudaErrorNoKernelImageForDevice);
    drv_init();
    if (!drv.launch)
        return simrt_fail(cudaErrorInitializationError);
    return simrt_error(drv.launch(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, (unsigned)shmem,
                                  (CUstream)s, args, NULL));
}

#define PTDS ((cudaStream_t)CU_STREAM_PER_THREAD)

cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t s)
{
    return launch(func, grid, block, args, shmem, s);
}
cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 grid, dim3 block, void **args, size_t shmem,
                                  cudaStream_t s)
{
    return launch(func, grid, block, args, shmem, s ? s : PTDS);
}
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void **args, size_t shmem,
                               cudaStream_t s)
{
    return launch((const void *)kernel, grid, block, args, shmem, s);
}
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block, void **args, size_t shmem,
                                    cudaStream_t s)
{
    return launch((const void *)kernel, grid, block, args, shmem, s ? s : PTDS);
}
cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shmem,
                                        cudaStream_t s)
{
    return launch(func, grid, block, args, shmem, s);
}
cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 grid, dim3 block, void **args, size_t shmem,
                                             cudaStream_t s)
{
    return launch(func, grid, block, args, shmem, s ? s : PTDS);
}
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *cfg, const void *func, void **args)
{
    if (!cfg)
        return simrt_fail(cudaErrorInvalidValue);
    return launch(func, cfg->gridDim, cfg->blockDim, args, cfg->dynamicSmemBytes, cfg->stream);
}
cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *cfg, const void *func, void **args)
{
    if (!cfg)
        return simrt_fail(cudaErrorInvalidValue);
    return launch(func, cfg->gridDim, cfg->blockDim, args, cfg->dynamicSmemBytes, cfg->stream ? cfg->stream : PTDS);
}

struct host_node { cudaHostFn_t fn; void *user; };

static void run_host_node(void *payload, CUstream s)
{
    struct host_node *n = payload;
    simgpu_enqueue(s, SIMGPU_COMPUTE, 0, "hostFunc");
    n->fn(n->user);
}

cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *user)
{
    SIMRT_NEED_CTX();
    if (!fn)
        return simrt_fail(cudaErrorInvalidValue);
    if (simgpu_stream_check((CUstream)s) != CUDA_SUCCESS)
        return simrt_fail(cudaErrorInvalidResourceHandle);
    int record;
    CUresult r = simgpu_capture_check((CUstream)s, &record);
    if (r != CUDA_SUCCESS)
        return simrt_error(r);
    struct host_node n = {fn, user};
    if (record) {
        struct host_node *copy = malloc(sizeof *copy);
        if (!copy)
            return simrt_fail(cudaErrorMemoryAllocation);
        *copy = n;
        return simrt_error(simgpu_capture_callback((CUstream)s, run_host_node, copy, free, "hostFunc"));
    }
    run_host_node(&n, (CUstream)s);
    return cudaSuccess;
}

cudaError_t cudaFuncGetParamInfo(const void *func, size_t index, size_t *offset, size_t *size)
{
    SIMRT_NEED_CTX();
    CUfunction f = simgpu_func_lookup(func);
    if (!f)
        return simrt_fail(cudaErrorInvalidDeviceFunction);
    if (!offset || !size)
        return simrt_fail(cudaErrorInvalidValue);
    drv_init();
    if (!drv.param_info)
        return simrt_fail(cudaErrorInitializationError);
    return simrt_error(drv.param_info(f, index, offset, size));
}
