/*
 * hooks_cudart.c — wrappers of the CUDA runtime API: memory information, copies
 * and sets, synchronisation, streams and events, devices, kernel and graph
 * launches. A per-thread-default-stream twin (_ptsz/_ptds) shares its
 * wrapper body with the plain name and differs only in the stream it
 * reports (cudaStreamPerThread for the implicit stream). Allocation and
 * free wrappers are generated from hooks.def in hooks_alloc.c.
 */
#include "shim/sn_wrap.h"
#include "shim/sn_copy.h"

#include <string.h>

/* ---- memory --------------------------------------------------------------- */

/* Allocation and free wrappers are generated from hooks.def (hooks_alloc.c). */

SN_EXPORT cudaError_t cudaMemGetInfo(size_t *free, size_t *total)
{
    SN_PROLOGUE(CUDART, cudaMemGetInfo, (free, total))
    if (sn_core_mem_info(sn_current_device(), free, total) == 0)
        return cudaSuccess;
    cudaError_t rc = real(free, total);
    return rc;
}

/* ---- copies and sets ------------------------------------------------------- */

static cudaError_t sn_memcpy2d_real(sn_real_cudaMemcpy2DAsync_fn real_async, sn_real_cudaMemcpy2D_fn real_sync,
                                    const sn_copy2d *cp)
{
    return real_sync ? real_sync(cp->dst, cp->dpitch, cp->src, cp->spitch, cp->width, cp->height, cp->kind)
                     : real_async(cp->dst, cp->dpitch, cp->src, cp->spitch, cp->width, cp->height, cp->kind,
                                  cp->stream);
}

static cudaError_t sn_memcpy2d_impl(int hook, sn_real_cudaMemcpy2DAsync_fn real_async,
                                    sn_real_cudaMemcpy2D_fn real_sync, const sn_copy2d *cp)
{
    cudaError_t rc;
    void *dst = cp->dst;
    const void *src = cp->src;
    enum cudaMemcpyKind kind = cp->kind;
    cudaStream_t stream = cp->stream;
    int op = sn_copy_op(dst, src, kind);
    if (op < 0)
        return sn_memcpy2d_real(real_async, real_sync, cp);
    SN_CALL_DECL(c);
    sn_call_init(&c, hook, op, sn_current_device(), stream);
    if (real_sync)
        c.flags |= SN_CALL_HOST_SYNC;
    sn_describe_copy2d(&c, cp);
    sn_step_token t;
    if (sn_core_call_begin(&c, &t) != 0)
        return cudaErrorMemoryAllocation;
    rc = sn_memcpy2d_real(real_async, real_sync, cp);
    sn_core_call_end(&c, &t, rc == cudaSuccess);
    if (real_sync && rc == cudaSuccess)
        sn_core_host_synced(c.dev, stream, 0);
    return rc;
}

#define SN_MEMCPY_SYNC(name, stream_expr)                                                      \
    SN_EXPORT cudaError_t name(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) \
    {                                                                                          \
        SN_PROLOGUE(CUDART, name, (dst, src, count, kind))                                     \
        int op = sn_copy_op(dst, src, kind);                                                   \
        if (op < 0) {                                                                          \
            cudaError_t rc = real(dst, src, count, kind);                                      \
            return rc;                                                                         \
        }                                                                                      \
        SN_CALL_DECL(c);                                                                       \
        sn_call_init(&c, SN_HOOK_ID_##name, op, sn_current_device(), (stream_expr));           \
        c.flags |= SN_CALL_HOST_SYNC;                                                          \
        sn_describe_copy2d(&c, &(const sn_copy2d){dst, count, src, count, count, 1, kind, NULL});  \
        SN_FORWARD_STEP_SYNC(&c, cudaError_t, cudaSuccess, cudaErrorMemoryAllocation, 1,       \
                             (dst, src, count, kind));                                         \
    }

SN_MEMCPY_SYNC(cudaMemcpy, NULL)
SN_MEMCPY_SYNC(cudaMemcpy_ptds, cudaStreamPerThread)

#define SN_MEMCPY_ASYNC(name)                                                                  \
    SN_EXPORT cudaError_t name(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, \
                               cudaStream_t stream)                                            \
    {                                                                                          \
        SN_PROLOGUE(CUDART, name, (dst, src, count, kind, stream))                             \
        int op = sn_copy_op(dst, src, kind);                                                   \
        if (op < 0) {                                                                          \
            cudaError_t rc = real(dst, src, count, kind, stream);                              \
            return rc;                                                                         \
        }                                                                                      \
        SN_CALL_DECL(c);                                                                       \
        sn_call_init(&c, SN_HOOK_ID_##name, op, sn_current_device(), stream);                  \
        sn_describe_copy2d(&c, &(const sn_copy2d){dst, count, src, count, count, 1, kind, NULL});  \
        SN_FORWARD_STEP(&c, cudaError_t, cudaSuccess, cudaErrorMemoryAllocation, (dst, src, count, kind, stream));        \
    }

SN_MEMCPY_ASYNC(cudaMemcpyAsync)
SN_MEMCPY_ASYNC(cudaMemcpyAsync_ptsz)

SN_EXPORT cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch,
                                   size_t width, size_t height, enum cudaMemcpyKind kind)
{
    SN_PROLOGUE(CUDART, cudaMemcpy2D, (dst, dpitch, src, spitch, width, height, kind))
    const sn_copy2d cp = {dst, dpitch, src, spitch, width, height, kind, NULL};
    return sn_memcpy2d_impl(SN_HOOK_ID_cudaMemcpy2D, NULL, real, &cp);
}

SN_EXPORT cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch,
                                        size_t width, size_t height, enum cudaMemcpyKind kind)
{
    SN_PROLOGUE(CUDART, cudaMemcpy2D_ptds, (dst, dpitch, src, spitch, width, height, kind))
    const sn_copy2d cp = {dst, dpitch, src, spitch, width, height, kind, cudaStreamPerThread};
    return sn_memcpy2d_impl(SN_HOOK_ID_cudaMemcpy2D_ptds, NULL, real, &cp);
}

SN_EXPORT cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                                        size_t width, size_t height, enum cudaMemcpyKind kind,
                                        cudaStream_t stream)
{
    SN_PROLOGUE(CUDART, cudaMemcpy2DAsync, (dst, dpitch, src, spitch, width, height, kind, stream))
    const sn_copy2d cp = {dst, dpitch, src, spitch, width, height, kind, stream};
    return sn_memcpy2d_impl(SN_HOOK_ID_cudaMemcpy2DAsync, real, NULL, &cp);
}

SN_EXPORT cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src,
                                             size_t spitch, size_t width, size_t height,
                                             enum cudaMemcpyKind kind, cudaStream_t stream)
{
    SN_PROLOGUE(CUDART, cudaMemcpy2DAsync_ptsz,
                (dst, dpitch, src, spitch, width, height, kind, stream))
    const sn_copy2d cp = {dst, dpitch, src, spitch, width, height, kind, stream};
    return sn_memcpy2d_impl(SN_HOOK_ID_cudaMemcpy2DAsync_ptsz, real, NULL, &cp);
}

SN_EXPORT cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice,
                                     size_t count)
{
    SN_PROLOGUE(CUDART, cudaMemcpyPeer, (dst, dstDevice, src, srcDevice, count))
    SN_CALL_DECL(c);
    sn_call_init(&c, SN_HOOK_ID_cudaMemcpyPeer, SN_OP_MEMCPY_D2D, dstDevice, NULL);
    c.flags |= SN_CALL_HOST_SYNC;
    sn_describe_copy2d(&c, &(const sn_copy2d){dst, count, src, count, count, 1, cudaMemcpyDeviceToDevice, NULL});
    SN_FORWARD_STEP(&c, cudaError_t, cudaSuccess, cudaErrorMemoryAllocation, (dst, dstDevice, src, srcDevice, count));
}

SN_EXPORT cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice,
                                          size_t count, cudaStream_t stream)
{
    SN_PROLOGUE(CUDART, cudaMemcpyPeerAsync, (dst, dstDevice, src, srcDevice, count, stream))
    SN_CALL_DECL(c);
    sn_call_init(&c, SN_HOOK_ID_cudaMemcpyPeerAsync, SN_OP_MEMCPY_D2D, dstDevice, stream);
    sn_describe_copy2d(&c, &(const sn_copy2d){dst, count, src, count, count, 1, cudaMemcpyDeviceToDevice, NULL});
    SN_FORWARD_STEP(&c, cudaError_t, cudaSuccess, cudaErrorMemoryAllocation, (dst, dstDevice, src, srcDevice, count, stream));
}

#define SN_MEMSET(name, params, args, stream_expr, p, pitch, value, width, height)       \
    SN_EXPORT cudaError_t name params                                                          \
    {                                                                                          \
        SN_PROLOGUE(CUDART, name, args)                                                        \
        SN_CALL_DECL(c);                                                                       \
        sn_call_init(&c, SN_HOOK_ID_##name, SN_OP_MEMSET, sn_current_device(), (stream_expr)); \
        sn_describe_set2d(&c, p, pitch, value, width, height);                                 \
        SN_FORWARD_STEP(&c, cudaError_t, cudaSuccess, cudaErrorMemoryAllocation, args);                                   \
    }

/* cudaMemset and cudaMemset2D are asynchronous to the host (CUDA's API
 * synchronisation rules), unlike cudaMemcpy: no variant is a host sync. */
SN_MEMSET(cudaMemset, (void *devPtr, int value, size_t count), (devPtr, value, count), NULL,
          devPtr, count, value, count, 1)
SN_MEMSET(cudaMemset_ptds, (void *devPtr, int value, size_t count), (devPtr, value, count),
          cudaStreamPerThread, devPtr, count, value, count, 1)
SN_MEMSET(cudaMemsetAsync, (void *devPtr, int value, size_t count, cudaStream_t stream),
          (devPtr, value, count, stream), stream, devPtr, count, value, count, 1)
SN_MEMSET(cudaMemsetAsync_ptsz, (void *devPtr, int value, size_t count, cudaStream_t stream),
          (devPtr, value, count, stream), stream, devPtr, count, value, count, 1)
SN_MEMSET(cudaMemset2D, (void *devPtr, size_t pitch, int value, size_t width, size_t height),
          (devPtr, pitch, value, width, height), NULL, devPtr, pitch, value, width, height)
SN_MEMSET(cudaMemset2D_ptds, (void *devPtr, size_t pitch, int value, size_t width, size_t height),
          (devPtr, pitch, value, width, height), cudaStreamPerThread, devPtr, pitch, value,
          width, height)
SN_MEMSET(cudaMemset2DAsync,
          (void *devPtr, size_t pitch, int value, size_t width, size_t height, cudaStream_t stream),
          (devPtr, pitch, value, width, height, stream), stream, devPtr, pitch, value, width,
          height)
SN_MEMSET(cudaMemset2DAsync_ptsz,
          (void *devPtr, size_t pitch, int value, size_t width, size_t height, cudaStream_t stream),
          (devPtr, pitch, value, width, height, stream), stream, devPtr, pitch, value, width,
          height)

/* ---- synchronisation, streams, events, devices ------------------------------ */

SN_EXPORT cudaError_t cudaDeviceSynchronize(void)
{
    SN_PROLOGUE(CUDART, cudaDeviceSynchronize, ())
    sn_core_sync_begin(sn_current_device());
    cudaError_t rc = real();
    if (rc == cudaSuccess)
        sn_core_host_synced(sn_current_device(), NULL, 1);
    return rc;
}

#define SN_STREAM_SYNC(name)                                                   \
    SN_EXPORT cudaError_t name(cudaStream_t stream)                            \
    {                                                                          \
        SN_PROLOGUE(CUDART, name, (stream))                                    \
        cudaError_t rc = real(stream);                                         \
        if (rc == cudaSuccess)                                                 \
            sn_core_host_synced(sn_current_device(), stream, 0);               \
        return rc;                                                             \
    }
SN_STREAM_SYNC(cudaStreamSynchronize)
SN_STREAM_SYNC(cudaStreamSynchronize_ptsz)

SN_EXPORT cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
    SN_PROLOGUE(CUDART, cudaStreamCreate, (pStream))
    cudaError_t rc = real(pStream);
    return rc;
}

SN_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    SN_PROLOGUE(CUDART, cudaStreamCreateWithFlags, (pStream, flags))
    cudaError_t rc = real(pStream, flags);
    if (rc == cudaSuccess && pStream && (flags & cudaStreamNonBlocking))
        sn_core_note_stream(*pStream, 1);
    return rc;
}

SN_EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags,
                                                   int priority)
{
    SN_PROLOGUE(CUDART, cudaStreamCreateWithPriority, (pStream, flags, priority))
    cudaError_t rc = real(pStream, flags, priority);
    if (rc == cudaSuccess && pStream && (flags & cudaStreamNonBlocking))
        sn_core_note_stream(*pStream, 1);
    return rc;
}

SN_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    SN_PROLOGUE(CUDART, cudaStreamDestroy, (stream))
    /* Steps still pending on the stream are harvested by later syncs; the
     * events libsn recorded there stay valid after the stream is gone.
     * The arenas stop naming it first (a new stream may get its handle). */
    sn_core_stream_destroying(stream);
    cudaError_t rc = real(stream);
    if (rc == cudaSuccess)
        sn_core_note_stream(stream, -1);
    return rc;
}

#define SN_WAIT_EVENT(name)                                                    \
    SN_EXPORT cudaError_t name(cudaStream_t stream, cudaEvent_t event, unsigned int flags) \
    {                                                                          \
        SN_PROLOGUE(CUDART, name, (stream, event, flags))                      \
        cudaError_t rc = real(stream, event, flags);                           \
        return rc;                                                             \
    }
SN_WAIT_EVENT(cudaStreamWaitEvent)
SN_WAIT_EVENT(cudaStreamWaitEvent_ptsz)

#define SN_EVENT_RECORD(name, params, args, stream)                            \
    SN_EXPORT cudaError_t name params                                          \
    {                                                                          \
        SN_PROLOGUE(CUDART, name, args)                                        \
        cudaError_t rc = real args;                                            \
        if (rc == cudaSuccess)                                                 \
            sn_core_note_event(event, (stream));                               \
        return rc;                                                             \
    }
SN_EVENT_RECORD(cudaEventRecord, (cudaEvent_t event, cudaStream_t stream), (event, stream), stream)
SN_EVENT_RECORD(cudaEventRecord_ptsz, (cudaEvent_t event, cudaStream_t stream), (event, stream),
                stream)
SN_EVENT_RECORD(cudaEventRecordWithFlags, (cudaEvent_t event, cudaStream_t stream, unsigned int flags),
                (event, stream, flags), stream)
SN_EVENT_RECORD(cudaEventRecordWithFlags_ptsz,
                (cudaEvent_t event, cudaStream_t stream, unsigned int flags), (event, stream, flags),
                stream)

SN_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    SN_PROLOGUE(CUDART, cudaEventSynchronize, (event))
    cudaError_t rc = real(event);
    if (rc == cudaSuccess)
        sn_core_event_synced(sn_current_device(), event);
    return rc;
}

SN_EXPORT cudaError_t cudaSetDevice(int device)
{
    sn_real_cudaSetDevice_fn real = SN_REAL(cudaSetDevice);
    if (!real)
        return SN_MISSING(CUDART, cudaSetDevice);
    SN_SCOPE(SN_LIB_CUDART);
    cudaError_t rc = real(device);
    if (rc == cudaSuccess && device >= 0)
        sn_thread.device = device;
    return rc;
}

SN_EXPORT cudaError_t cudaDeviceReset(void)
{
    SN_PROLOGUE(CUDART, cudaDeviceReset, ())
    /* Timings still pending on the device are read while its events exist. */
    sn_core_host_synced(sn_current_device(), NULL, 1);
    cudaError_t rc = real();
    if (rc == cudaSuccess)
        sn_core_device_reset(sn_current_device());
    return rc;
}

/* ---- kernel and graph launches -------------------------------------------- */

static void sn_describe_launch(sn_call *c, const void *func, dim3 grid, dim3 block, void **args,
                               size_t shared)
{
    c->params = sn_hash_mix(c->params, (uint64_t)(uintptr_t)func);
    c->params = sn_hash_mix(c->params, ((uint64_t)grid.x << 32) | ((uint64_t)grid.y << 16) | grid.z);
    c->params = sn_hash_mix(c->params, ((uint64_t)block.x << 32) | ((uint64_t)block.y << 16) | block.z);
    c->params = sn_hash_mix(c->params, shared);
    int shape[3] = {(int)grid.x, (int)grid.y, (int)grid.z};
    sn_call_shape(c, 3, shape);
    sn_core_describe_kernel(c, func, args);
}

#define SN_LAUNCH(name, functype, funcname)                                                    \
    SN_EXPORT cudaError_t name(functype funcname, dim3 gridDim, dim3 blockDim, void **args,    \
                               size_t sharedMem, cudaStream_t stream)                          \
    {                                                                                          \
        SN_PROLOGUE(CUDART, name, (funcname, gridDim, blockDim, args, sharedMem, stream))      \
        SN_CALL_DECL(c);                                                                       \
        sn_call_init(&c, SN_HOOK_ID_##name, SN_OP_KERNEL, sn_current_device(), stream);        \
        sn_describe_launch(&c, (const void *)funcname, gridDim, blockDim, args, sharedMem);    \
        SN_FORWARD_STEP(&c, cudaError_t, cudaSuccess, cudaErrorMemoryAllocation,                                          \
                        (funcname, gridDim, blockDim, args, sharedMem, stream));               \
    }

SN_LAUNCH(cudaLaunchKernel, const void *, func)
SN_LAUNCH(cudaLaunchKernel_ptsz, const void *, func)
SN_LAUNCH(__cudaLaunchKernel, cudaKernel_t, kernel)
SN_LAUNCH(__cudaLaunchKernel_ptsz, cudaKernel_t, kernel)
SN_LAUNCH(cudaLaunchCooperativeKernel, const void *, func)
SN_LAUNCH(cudaLaunchCooperativeKernel_ptsz, const void *, func)

#define SN_LAUNCH_EX(name)                                                                     \
    SN_EXPORT cudaError_t name(const cudaLaunchConfig_t *config, const void *func, void **args) \
    {                                                                                          \
        SN_PROLOGUE(CUDART, name, (config, func, args))                                        \
        if (!config) {                                                                         \
            cudaError_t rc = real(config, func, args);                                         \
            return rc;                                                                         \
        }                                                                                      \
        SN_CALL_DECL(c);                                                                       \
        sn_call_init(&c, SN_HOOK_ID_##name, SN_OP_KERNEL, sn_current_device(), config->stream); \
        sn_describe_launch(&c, func, config->gridDim, config->blockDim, args,                  \
                           config->dynamicSmemBytes);                                          \
        SN_FORWARD_STEP(&c, cudaError_t, cudaSuccess, cudaErrorMemoryAllocation, (config, func, args));                   \
    }

SN_LAUNCH_EX(cudaLaunchKernelExC)
SN_LAUNCH_EX(cudaLaunchKernelExC_ptsz)

#define SN_GRAPH_LAUNCH(name)                                                  \
    SN_EXPORT cudaError_t name(cudaGraphExec_t graphExec, cudaStream_t stream) \
    {                                                                          \
        SN_PROLOGUE(CUDART, name, (graphExec, stream))                         \
        SN_CALL_DECL(c);                                                       \
        sn_call_init(&c, SN_HOOK_ID_##name, SN_OP_GRAPH, sn_current_device(), stream); \
        if (!sn_core_describe_graph(&c, (void *)graphExec))                   \
            c.flags |= SN_CALL_OPAQUE;                                         \
        c.params = sn_hash_mix(0, (uint64_t)(uintptr_t)graphExec);             \
        SN_FORWARD_STEP(&c, cudaError_t, cudaSuccess, cudaErrorMemoryAllocation, (graphExec, stream));    \
    }
SN_GRAPH_LAUNCH(cudaGraphLaunch)
SN_GRAPH_LAUNCH(cudaGraphLaunch_ptsz)

/* Stream capture: the core learns what each captured graph touches
 * (sn_core_note_graph). These are not steps: nothing runs. */
#define SN_CAPTURE_BEGIN(name, what, params, args)                              \
    SN_EXPORT cudaError_t name params                                          \
    {                                                                          \
        SN_PROLOGUE(CUDART, name, args)                                        \
        void *ev_ = sn_core_capture_begin((void *)stream);                     \
        cudaError_t rc = real args;                                            \
        sn_core_note_graph((what), (void *)stream, ev_, rc == cudaSuccess);    \
        return rc;                                                             \
    }
SN_CAPTURE_BEGIN(cudaStreamBeginCapture, SN_GRAPH_BEGUN, (cudaStream_t stream, enum cudaStreamCaptureMode mode),
                 (stream, mode))
SN_CAPTURE_BEGIN(cudaStreamBeginCapture_ptsz, SN_GRAPH_BEGUN,
                 (cudaStream_t stream, enum cudaStreamCaptureMode mode), (stream, mode))
SN_CAPTURE_BEGIN(cudaStreamBeginCaptureToGraph, SN_GRAPH_BEGUN_INTO,
                 (cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t *dependencies,
                  const cudaGraphEdgeData *dependencyData, size_t numDependencies, enum cudaStreamCaptureMode mode),
                 (stream, graph, dependencies, dependencyData, numDependencies, mode))
SN_CAPTURE_BEGIN(cudaStreamBeginCaptureToGraph_ptsz, SN_GRAPH_BEGUN_INTO,
                 (cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t *dependencies,
                  const cudaGraphEdgeData *dependencyData, size_t numDependencies, enum cudaStreamCaptureMode mode),
                 (stream, graph, dependencies, dependencyData, numDependencies, mode))

#define SN_CAPTURE_END(name)                                                   \
    SN_EXPORT cudaError_t name(cudaStream_t stream, cudaGraph_t *pGraph)       \
    {                                                                          \
        SN_PROLOGUE(CUDART, name, (stream, pGraph))                            \
        cudaError_t rc = real(stream, pGraph);                                 \
        int ok_ = rc == cudaSuccess && pGraph && *pGraph;                      \
        sn_core_note_graph(SN_GRAPH_ENDED, (void *)stream, ok_ ? (void *)*pGraph : NULL, ok_); \
        return rc;                                                             \
    }
SN_CAPTURE_END(cudaStreamEndCapture)
SN_CAPTURE_END(cudaStreamEndCapture_ptsz)

#define SN_GRAPH_INSTANTIATE(name, last_t, last)                               \
    SN_EXPORT cudaError_t name(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, last_t last) \
    {                                                                          \
        SN_PROLOGUE(CUDART, name, (pGraphExec, graph, last))                   \
        cudaError_t rc = real(pGraphExec, graph, last);                        \
        int ok_ = rc == cudaSuccess && pGraphExec && *pGraphExec;              \
        sn_core_note_graph(SN_GRAPH_INSTANTIATED, (void *)graph, ok_ ? (void *)*pGraphExec : NULL, ok_); \
        return rc;                                                             \
    }
SN_GRAPH_INSTANTIATE(cudaGraphInstantiate, unsigned long long, flags)
SN_GRAPH_INSTANTIATE(cudaGraphInstantiateWithFlags, unsigned long long, flags)
SN_GRAPH_INSTANTIATE(cudaGraphInstantiateWithParams, cudaGraphInstantiateParams *, instantiateParams)
SN_GRAPH_INSTANTIATE(cudaGraphInstantiateWithParams_ptsz, cudaGraphInstantiateParams *, instantiateParams)

/* A graph or executable graph destroyed or changed in place: forgotten
 * before the real call (a handle freed may be reused at once). */
#define SN_GRAPH_CHANGE(name, what, obj, params, args)                         \
    SN_EXPORT cudaError_t name params                                          \
    {                                                                          \
        SN_PROLOGUE(CUDART, name, args)                                        \
        sn_core_note_graph((what), (void *)(obj), NULL, 1);                    \
        return real args;                                                      \
    }
SN_GRAPH_CHANGE(cudaGraphDestroy, SN_GRAPH_CHANGED, graph, (cudaGraph_t graph), (graph))
SN_GRAPH_CHANGE(cudaGraphExecDestroy, SN_GRAPH_CHANGED, graphExec, (cudaGraphExec_t graphExec), (graphExec))
SN_GRAPH_CHANGE(cudaGraphExecUpdate, SN_GRAPH_CHANGED, hGraphExec,
                (cudaGraphExec_t hGraphExec, cudaGraph_t hGraph, cudaGraphExecUpdateResultInfo *resultInfo),
                (hGraphExec, hGraph, resultInfo))
SN_GRAPH_CHANGE(cudaGraphExecKernelNodeSetParams, SN_GRAPH_CHANGED, hGraphExec,
                (cudaGraphExec_t hGraphExec, cudaGraphNode_t node, const struct cudaKernelNodeParams *pNodeParams),
                (hGraphExec, node, pNodeParams))
SN_GRAPH_CHANGE(cudaGraphExecMemcpyNodeSetParams, SN_GRAPH_CHANGED, hGraphExec,
                (cudaGraphExec_t hGraphExec, cudaGraphNode_t node, const struct cudaMemcpy3DParms *pNodeParams),
                (hGraphExec, node, pNodeParams))
SN_GRAPH_CHANGE(cudaGraphExecMemcpyNodeSetParams1D, SN_GRAPH_CHANGED, hGraphExec,
                (cudaGraphExec_t hGraphExec, cudaGraphNode_t node, void *dst, const void *src, size_t count,
                 enum cudaMemcpyKind kind),
                (hGraphExec, node, dst, src, count, kind))
SN_GRAPH_CHANGE(cudaGraphExecMemsetNodeSetParams, SN_GRAPH_CHANGED, hGraphExec,
                (cudaGraphExec_t hGraphExec, cudaGraphNode_t node, const struct cudaMemsetParams *pNodeParams),
                (hGraphExec, node, pNodeParams))
SN_GRAPH_CHANGE(cudaGraphExecChildGraphNodeSetParams, SN_GRAPH_CHANGED, hGraphExec,
                (cudaGraphExec_t hGraphExec, cudaGraphNode_t node, cudaGraph_t childGraph),
                (hGraphExec, node, childGraph))
SN_GRAPH_CHANGE(cudaGraphExecNodeSetParams, SN_GRAPH_CHANGED, graphExec,
                (cudaGraphExec_t graphExec, cudaGraphNode_t node, struct cudaGraphNodeParams *nodeParams),
                (graphExec, node, nodeParams))
SN_GRAPH_CHANGE(cudaGraphKernelNodeSetParams, SN_GRAPH_NODE_CHANGED, node,
                (cudaGraphNode_t node, const struct cudaKernelNodeParams *pNodeParams), (node, pNodeParams))
SN_GRAPH_CHANGE(cudaGraphMemcpyNodeSetParams, SN_GRAPH_NODE_CHANGED, node,
                (cudaGraphNode_t node, const struct cudaMemcpy3DParms *pNodeParams), (node, pNodeParams))
SN_GRAPH_CHANGE(cudaGraphMemcpyNodeSetParams1D, SN_GRAPH_NODE_CHANGED, node,
                (cudaGraphNode_t node, void *dst, const void *src, size_t count, enum cudaMemcpyKind kind),
                (node, dst, src, count, kind))
SN_GRAPH_CHANGE(cudaGraphMemsetNodeSetParams, SN_GRAPH_NODE_CHANGED, node,
                (cudaGraphNode_t node, const struct cudaMemsetParams *pNodeParams), (node, pNodeParams))
SN_GRAPH_CHANGE(cudaGraphNodeSetParams, SN_GRAPH_NODE_CHANGED, node,
                (cudaGraphNode_t node, struct cudaGraphNodeParams *nodeParams), (node, nodeParams))
