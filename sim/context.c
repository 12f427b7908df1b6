/*
 * context.c — driver initialisation and contexts of the simulated driver.
 *
 * The real driver refuses every call but a few (cuInit, cuDriverGetVersion,
 * cuGetProcAddress, the error strings) with CUDA_ERROR_NOT_INITIALIZED until
 * cuInit has run, and the calls that act on "the current context" with
 * CUDA_ERROR_INVALID_CONTEXT on a thread that has none. A program that
 * forgets either works on a careless simulator and fails on a GPU, so both
 * are modelled: a process-wide initialised flag and, per thread, a stack of
 * current contexts (cuCtxPushCurrent / cuCtxPopCurrent / cuCtxSetCurrent).
 *
 * Each device has one primary context, reference-counted by
 * cuDevicePrimaryCtxRetain / Release; a primary context whose count is zero
 * is inactive and cannot be used. cuCtxCreate makes further contexts. A
 * context only names its device here: memory, streams and events belong to
 * the device, and destroying a context frees nothing (a documented limit).
 * Destroyed contexts stay known, so a thread that still has one current gets
 * CUDA_ERROR_CONTEXT_IS_DESTROYED rather than a read of freed memory.
 *
 * The simulated runtime, cuDNN and cuBLAS do what the real ones do on their
 * first call on a thread: cuInit, then make the device's primary context
 * current unless a context already is (sim/runtime.c, sim/cudnn/handle.c,
 * sim/cublas/cublas_handle.c).
 */
#include <stdlib.h>
#include <string.h>

#include "sim/simint.h"
#include "sim/simtime.h"

#define SIM_CTX_STACK 32

struct CUctx_st {
    int dev;
    int primary;
    unsigned flags;
    int refs;          /* primary contexts: cuDevicePrimaryCtxRetain count */
};

static struct CUctx_st g_primary[SIMGPU_MAX_DEVICES];

/* The device is kept beside the handle so that the current device can be
 * read without touching the context (which another thread may destroy). */
struct ctx_slot { struct CUctx_st *ctx; int dev; };
static __thread struct ctx_slot t_stack[SIM_CTX_STACK];
static __thread int t_depth;

static int initialised(void) { return __atomic_load_n(&g_sim.initialised, __ATOMIC_ACQUIRE); }

int sim_ctx_device(void) { return t_depth ? t_stack[t_depth - 1].dev : -1; }

static int is_primary(const struct CUctx_st *c)
{
    return c >= &g_primary[0] && c < &g_primary[g_sim.ndev];
}

/* CUDA_SUCCESS when c may be made current or used; the caller holds the lock. */
static CUresult ctx_usable_locked(const struct CUctx_st *c)
{
    if (is_primary(c))
        return c->refs > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
    if (sim_handle_has(&g_sim.ctxs, c))
        return CUDA_SUCCESS;
    return sim_handle_has(&g_sim.dead_ctxs, c) ? CUDA_ERROR_CONTEXT_IS_DESTROYED : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult sim_need_init(void)
{
    simgpu_init();
    return initialised() ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult sim_need_ctx(void)
{
    CUresult r = sim_need_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!t_depth)
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&g_sim.lock);
    r = ctx_usable_locked(t_stack[t_depth - 1].ctx);
    pthread_mutex_unlock(&g_sim.lock);
    return r;
}

CUresult sim_need_ctx_for_stream(CUstream s)
{
    /* A created stream carries its context; the special handles mean "the
     * current context's". */
    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return sim_need_ctx();
    return sim_need_init();
}

static void push(struct CUctx_st *c)
{
    t_stack[t_depth++] = (struct ctx_slot){c, c->dev};
}

/* ---- initialisation -------------------------------------------------------- */

CUresult cuInit(unsigned int flags)
{
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    simgpu_init();
    __atomic_store_n(&g_sim.initialised, 1, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}

/* ---- primary contexts ------------------------------------------------------- */

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d)
{
    CUresult r = sim_need_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!ctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_dev(d))
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&g_sim.lock);
    g_primary[d].dev = d;
    g_primary[d].primary = 1;
    g_primary[d].refs++;
    pthread_mutex_unlock(&g_sim.lock);
    *ctx = &g_primary[d];
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice d)
{
    CUresult r = sim_need_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!sim_dev(d))
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&g_sim.lock);
    if (g_primary[d].refs > 0)
        g_primary[d].refs--;
    else
        r = CUDA_ERROR_INVALID_CONTEXT; /* documented: released without a retain */
    pthread_mutex_unlock(&g_sim.lock);
    return r;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned int *flags, int *active)
{
    CUresult r = sim_need_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_dev(d))
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&g_sim.lock);
    *flags = g_primary[d].flags;
    *active = g_primary[d].refs > 0;
    pthread_mutex_unlock(&g_sim.lock);
    return CUDA_SUCCESS;
}

/* ---- created contexts ------------------------------------------------------- */

CUresult cuCtxCreate(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags, CUdevice d)
{
    CUresult r = sim_need_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!pctx || (flags & ~(unsigned)CU_CTX_FLAGS_MASK))
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_dev(d))
        return CUDA_ERROR_INVALID_DEVICE;
    /* Execution affinity and CIG need hardware partitioning. */
    if (params && (params->numExecAffinityParams > 0 || params->cigParams))
        return CUDA_ERROR_NOT_SUPPORTED;
    if (t_depth == SIM_CTX_STACK)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct CUctx_st *c = calloc(1, sizeof *c);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->dev = d;
    c->flags = flags;
    pthread_mutex_lock(&g_sim.lock);
    sim_handle_add(&g_sim.ctxs, c);
    pthread_mutex_unlock(&g_sim.lock);
    push(c);
    *pctx = c;
    return CUDA_SUCCESS;
}

CUresult cuCtxDestroy(CUcontext ctx)
{
    CUresult r = sim_need_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!ctx)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_sim.lock);
    if (is_primary(ctx) || sim_handle_del(&g_sim.ctxs, ctx) != 0) {
        pthread_mutex_unlock(&g_sim.lock);
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    sim_handle_add(&g_sim.dead_ctxs, ctx);
    /* Destroying a context waits for its work. */
    sim_host_call_locked();
    simgpu_host_wait_until(sim_device_done_locked(ctx->dev));
    pthread_mutex_unlock(&g_sim.lock);
    if (t_depth && t_stack[t_depth - 1].ctx == ctx)
        t_depth--;
    return CUDA_SUCCESS;
}

/* ---- the calling thread's stack --------------------------------------------- */

CUresult cuCtxPushCurrent(CUcontext ctx)
{
    CUresult r = sim_need_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!ctx)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_sim.lock);
    r = ctx_usable_locked(ctx);
    pthread_mutex_unlock(&g_sim.lock);
    if (r != CUDA_SUCCESS)
        return r;
    if (t_depth == SIM_CTX_STACK)
        return CUDA_ERROR_OUT_OF_MEMORY;
    push(ctx);
    return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent(CUcontext *pctx)
{
    CUresult r = sim_need_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!t_depth)
        return CUDA_ERROR_INVALID_CONTEXT;
    struct CUctx_st *c = t_stack[--t_depth].ctx;
    if (pctx)
        *pctx = c;
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    CUresult r = sim_need_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!ctx) {
        /* Documented: NULL pops the top, if there is one. */
        if (t_depth)
            t_depth--;
        return CUDA_SUCCESS;
    }
    pthread_mutex_lock(&g_sim.lock);
    r = ctx_usable_locked(ctx);
    pthread_mutex_unlock(&g_sim.lock);
    if (r != CUDA_SUCCESS)
        return r;
    if (t_depth)
        t_depth--;
    push(ctx);
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *ctx)
{
    CUresult r = sim_need_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!ctx)
        return CUDA_ERROR_INVALID_VALUE;
    *ctx = t_depth ? t_stack[t_depth - 1].ctx : NULL;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *d)
{
    CUresult r = sim_need_ctx();
    if (r != CUDA_SUCCESS)
        return r;
    if (!d)
        return CUDA_ERROR_INVALID_VALUE;
    *d = t_stack[t_depth - 1].dev;
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void)
{
    CUresult r = sim_need_ctx();
    return r != CUDA_SUCCESS ? r : simgpu_device_synchronize();
}

int sim_ctx_dev_of(CUcontext c)
{
    if (!c)
        return -1;
    pthread_mutex_lock(&g_sim.lock);
    int dev = ctx_usable_locked(c) == CUDA_SUCCESS ? c->dev : -1;
    pthread_mutex_unlock(&g_sim.lock);
    return dev;
}
