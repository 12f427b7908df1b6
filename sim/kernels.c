/*
 * kernels.c — kernel registration and launch on the simulated device.
 *
 * Two kinds of launchable functions exist here. Functions that nvcc's host
 * stubs register from a fat binary (__cudaRegisterFatBinary /
 * __cudaRegisterFunction) have no CPU implementation: with SIMGPU_COMPUTE=0
 * their launches are modelled with a nominal duration, so nvcc-built programs
 * load and run for timing and memory studies; with compute on they fail the
 * way CUDA reports a missing kernel image. Their parameter layouts come from
 * the fat binary's metadata (sim/fatbin.c), read when first asked for, as
 * the real driver's cudaFuncGetParamInfo answers. Host functions registered
 * through sim/simgpu.h are real: they run in stream order on the CPU and
 * report their parameter layout through cudaFuncGetParamInfo, so
 * kernel-launch interception can be tested end to end.
 *
 * nvcc 13's stubs launch through __cudaGetKernel + __cudaPopCallConfiguration
 * + __cudaLaunchKernel(cudaKernel_t, ...); the kernel handle we hand out is
 * the registry entry itself.
 *
 * On a capturing stream a launch or a host function is recorded as a graph
 * node (with a copy of the kernel's arguments) and runs when the graph is
 * launched (sim/graph.c).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <uthash.h>

#include "sim/fatbin.h"
#include "sim/simcore.h"
#include "sim/simgpu.h"
#include "sim/simrt.h"

/* Nominal duration of a modelled kernel whose work is unknown. */
#define SIM_KERNEL_NS 10000.0
#define SIM_MAX_PARAMS 64

enum { KERNEL_FATBIN = 1, KERNEL_HOST = 2 };

/* nparams of a fat-binary kernel before its layout has been looked up, and
 * when its fat binary says nothing readable about it. */
#define LAYOUT_UNREAD (-2)
#define LAYOUT_UNKNOWN (-1)

struct fatbin;

/* Registered functions are never removed (a stale host stub still finds its
 * entry); what may change, under g_klock, is a fat-binary kernel's layout
 * and fat binary. */
struct kernel {
    const void *key;              /* host stub or host function */
    int kind;
    simgpu_host_kernel_fn fn;
    char name[128];               /* label on the timeline */
    char *symbol;                 /* fat-binary kernel: its device symbol, whole */
    struct fatbin *fatbin;        /* ... and where it came from, while registered */
    int nparams;
    struct simfb_param *params;
    UT_hash_handle hh;
};

static struct kernel *g_kernels;
/* Guards the kernel table, the fat-binary list and layout reading. */
static pthread_mutex_t g_klock = PTHREAD_MUTEX_INITIALIZER;

static struct kernel *kernel_lookup(const void *key)
{
    struct kernel *k;
    pthread_mutex_lock(&g_klock);
    HASH_FIND_PTR(g_kernels, &key, k);
    if (!k) {
        /* A cudaKernel_t handle is the entry itself. */
        for (struct kernel *it = g_kernels; it; it = it->hh.next)
            if ((const void *)it == key) {
                k = it;
                break;
            }
    }
    pthread_mutex_unlock(&g_klock);
    return k;
}

static struct kernel *kernel_add(const void *key, int kind, const char *name)
{
    struct kernel *k;
    pthread_mutex_lock(&g_klock);
    HASH_FIND_PTR(g_kernels, &key, k);
    if (!k) {
        k = calloc(1, sizeof *k);
        if (!k) {
            pthread_mutex_unlock(&g_klock);
            return NULL;
        }
        k->key = key;
        HASH_ADD_PTR(g_kernels, key, k);
    }
    /* A function registered again (a library loaded anew) starts over. */
    k->kind = kind;
    strncpy(k->name, name ? name : "?", sizeof k->name - 1);
    free(k->symbol);
    k->symbol = NULL;
    k->fatbin = NULL;
    free(k->params);
    k->params = NULL;
    k->nparams = LAYOUT_UNKNOWN;
    pthread_mutex_unlock(&g_klock);
    return k;
}

int simgpu_register_host_kernel_impl(simgpu_host_kernel_fn fn, const char *name, int nparams,
                                     const size_t *sizes);
int simgpu_register_host_kernel_impl(simgpu_host_kernel_fn fn, const char *name, int nparams,
                                     const size_t *sizes)
{
    if (!fn || nparams < 0 || nparams > SIM_MAX_PARAMS || (nparams && !sizes))
        return -1;
    struct simfb_param *params = NULL;
    if (nparams && !(params = calloc((size_t)nparams, sizeof *params)))
        return -1;
    size_t off = 0;
    for (int i = 0; i < nparams; i++) {
        size_t a = sizes[i] >= 8 ? 8 : sizes[i] >= 4 ? 4 : sizes[i] >= 2 ? 2 : 1;
        off = (off + a - 1) / a * a;
        params[i].offset = (uint32_t)off;
        params[i].size = (uint32_t)sizes[i];
        off += sizes[i];
    }
    struct kernel *k = kernel_add((const void *)fn, KERNEL_HOST, name);
    if (!k) {
        free(params);
        return -1;
    }
    pthread_mutex_lock(&g_klock);
    k->fn = fn;
    k->params = params;
    k->nparams = nparams;
    pthread_mutex_unlock(&g_klock);
    return 0;
}

/* ---- nvcc registration ------------------------------------------------------ */

/* Registered fat binaries stay listed until unregistered, as the runtime
 * keeps its modules; the handle is the address of the first member. Their
 * metadata is read when the first layout of one of their kernels is asked
 * for, once. */
struct fatbin {
    void *cubin;                  /* the __fatBinC_Wrapper_t nvcc registers */
    struct fatbin *next;
    int read;
    simfb *meta;                  /* NULL: nothing readable */
};
static struct fatbin *g_fatbins;

static struct fatbin *fatbin_of_locked(void **handle)
{
    for (struct fatbin *f = g_fatbins; f; f = f->next)
        if (&f->cubin == handle)
            return f;
    return NULL;
}

void **__cudaRegisterFatBinary(void *fatCubin)
{
    struct fatbin *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->cubin = fatCubin;
    pthread_mutex_lock(&g_klock);
    f->next = g_fatbins;
    g_fatbins = f;
    pthread_mutex_unlock(&g_klock);
    return &f->cubin;
}

void __cudaRegisterFatBinaryEnd(void **handle) { (void)handle; }

void __cudaUnregisterFatBinary(void **handle)
{
    pthread_mutex_lock(&g_klock);
    for (struct fatbin **pp = &g_fatbins; *pp; pp = &(*pp)->next)
        if (&(*pp)->cubin == handle) {
            struct fatbin *f = *pp;
            *pp = f->next;
            /* Its kernels keep a layout already read; the others have
             * nothing left to read it from. */
            for (struct kernel *k = g_kernels; k; k = k->hh.next)
                if (k->fatbin == f) {
                    k->fatbin = NULL;
                    if (k->nparams == LAYOUT_UNREAD)
                        k->nparams = LAYOUT_UNKNOWN;
                }
            simfb_free(f->meta);
            free(f);
            break;
        }
    pthread_mutex_unlock(&g_klock);
}

void __cudaRegisterFunction(void **handle, const char *hostFun, char *deviceFun, const char *deviceName,
                            int thread_limit, uint3 *tid, uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize)
{
    (void)thread_limit; (void)tid; (void)bid; (void)bDim; (void)gDim; (void)wSize;
    struct kernel *k = kernel_add(hostFun, KERNEL_FATBIN, deviceName);
    if (!k)
        return;
    /* The metadata is keyed by the device symbol (deviceFun); nvcc passes
     * the same string as deviceName. */
    const char *symbol = deviceFun ? deviceFun : deviceName;
    pthread_mutex_lock(&g_klock);
    k->symbol = symbol ? strdup(symbol) : NULL;
    k->fatbin = fatbin_of_locked(handle);
    k->nparams = k->symbol && k->fatbin ? LAYOUT_UNREAD : LAYOUT_UNKNOWN;
    pthread_mutex_unlock(&g_klock);
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
    struct kernel *k = kernel_lookup(hostFun);
    if (!kernel || !k)
        return simrt_fail(cudaErrorInvalidDeviceFunction);
    *kernel = (cudaKernel_t)k;
    return cudaSuccess;
}

/* ---- launch --------------------------------------------------------------- */

static void run_kernel(const struct kernel *k, dim3 grid, dim3 block, void **args, CUstream s)
{
    simgpu_enqueue(s, SIMGPU_COMPUTE, SIM_KERNEL_NS, k->name);
    if (k->kind == KERNEL_HOST && simgpu_compute_enabled())
        k->fn(args, grid, block);
}

/* A launch captured into a graph keeps a copy of its arguments, as CUDA
 * does: the caller's argument buffers may be gone by the time the graph
 * runs. Fat-binary kernels have no layout and no body, so nothing to copy. */
struct launch_node {
    const struct kernel *k;
    dim3 grid, block;
    void *argv[SIM_MAX_PARAMS];
    unsigned char data[];
};

static void run_launch_node(void *payload, CUstream s)
{
    struct launch_node *n = payload;
    run_kernel(n->k, n->grid, n->block, n->argv, s);
}

static cudaError_t capture_launch(const struct kernel *k, dim3 grid, dim3 block, void **args, cudaStream_t s)
{
    size_t bytes = 0;
    int copy = k->kind == KERNEL_HOST && args && k->nparams > 0;
    if (copy)
        bytes = k->params[k->nparams - 1].offset + k->params[k->nparams - 1].size;
    struct launch_node *n = calloc(1, sizeof *n + bytes);
    if (!n)
        return simrt_fail(cudaErrorMemoryAllocation);
    n->k = k;
    n->grid = grid;
    n->block = block;
    for (int i = 0; copy && i < k->nparams; i++) {
        memcpy(n->data + k->params[i].offset, args[i], k->params[i].size);
        n->argv[i] = n->data + k->params[i].offset;
    }
    return simrt_error(simgpu_capture_callback((CUstream)s, run_launch_node, n, free, k->name));
}

static cudaError_t launch(const void *func, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t s)
{
    (void)shmem;
    SIMRT_NEED_CTX();
    struct kernel *k = kernel_lookup(func);
    if (!k)
        return simrt_fail(cudaErrorInvalidDeviceFunction);
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0 ||
        (unsigned long long)block.x * block.y * block.z > 1024)
        return simrt_fail(cudaErrorInvalidConfiguration);
    if (simgpu_stream_check((CUstream)s) != CUDA_SUCCESS)
        return simrt_fail(cudaErrorInvalidResourceHandle);
    if (k->kind == KERNEL_FATBIN && simgpu_compute_enabled())
        return simrt_fail(cudaErrorNoKernelImageForDevice);
    int record;
    CUresult r = simgpu_capture_check((CUstream)s, &record);
    if (r != CUDA_SUCCESS)
        return simrt_error(r);
    if (record)
        return capture_launch(k, grid, block, args, s);
    run_kernel(k, grid, block, args, (CUstream)s);
    return cudaSuccess;
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

/* Reads a fat-binary kernel's layout on first use (parsing, and for
 * compressed entries decompressing, is paid by programs that ask). */
static void read_layout_locked(struct kernel *k)
{
    if (k->nparams != LAYOUT_UNREAD)
        return;
    struct fatbin *f = k->fatbin;
    if (!f->read) {
        f->read = 1;
        f->meta = simfb_load(f->cubin);
    }
    k->nparams = f->meta ? simfb_params(f->meta, k->symbol, &k->params) : LAYOUT_UNKNOWN;
}

cudaError_t cudaFuncGetParamInfo(const void *func, size_t index, size_t *offset, size_t *size)
{
    struct kernel *k = kernel_lookup(func);
    if (!k)
        return simrt_fail(cudaErrorInvalidDeviceFunction);
    if (!offset || !size)
        return simrt_fail(cudaErrorInvalidValue);
    pthread_mutex_lock(&g_klock);
    read_layout_locked(k);
    /* A kernel whose metadata could not be read answers as for an index
     * past its last parameter: callers must not take that for "no
     * parameters" (libsn does not). */
    int known = k->nparams >= 0 && index < (size_t)k->nparams;
    if (known) {
        *offset = k->params[index].offset;
        *size = k->params[index].size;
    }
    pthread_mutex_unlock(&g_klock);
    return known ? cudaSuccess : simrt_fail(cudaErrorInvalidValue);
}
