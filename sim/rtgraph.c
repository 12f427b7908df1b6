/*
 * rtgraph.c — the simulated runtime's stream capture and graph entry
 * points: cudaStreamBeginCapture / EndCapture / IsCapturing,
 * cudaThreadExchangeStreamCaptureMode, cudaGraphInstantiate[WithFlags],
 * cudaGraphLaunch, cudaGraphGetNodes, cudaGraphExecDestroy and
 * cudaGraphDestroy, with their per-thread-stream twins. The capture state,
 * the graphs and their replay live in the simulated driver (sim/graph.c);
 * this file maps the runtime's handles, defaults and errors onto it.
 */
#include <cuda_runtime_api.h>

#include "sim/simcore.h"
#include "sim/simrt.h"

#define PTDS ((cudaStream_t)CU_STREAM_PER_THREAD)

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_stream_begin_capture((CUstream)s, (int)mode));
}
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t s, enum cudaStreamCaptureMode mode)
{
    return cudaStreamBeginCapture(s ? s : PTDS, mode);
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_stream_end_capture((CUstream)s, (CUgraph *)graph));
}
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t s, cudaGraph_t *graph)
{
    return cudaStreamEndCapture(s ? s : PTDS, graph);
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *status)
{
    SIMRT_NEED_CTX();
    int st = 0;
    CUresult r = simgpu_stream_is_capturing((CUstream)s, status ? &st : NULL);
    if (r == CUDA_SUCCESS)
        *status = (enum cudaStreamCaptureStatus)st; /* the driver's and the runtime's values agree */
    return simrt_error(r);
}
cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t s, enum cudaStreamCaptureStatus *status)
{
    return cudaStreamIsCapturing(s ? s : PTDS, status);
}

cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
    int m = mode ? (int)*mode : -1;
    CUresult r = simgpu_exchange_capture_mode(&m);
    if (r == CUDA_SUCCESS)
        *mode = (enum cudaStreamCaptureMode)m;
    return simrt_error(r);
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_graph_instantiate((CUgraphExec *)exec, (CUgraph)graph, flags));
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags)
{
    return cudaGraphInstantiate(exec, graph, flags);
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s)
{
    SIMRT_NEED_CTX();
    return simrt_error(simgpu_graph_launch((CUgraphExec)exec, (CUstream)s));
}
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t s)
{
    return cudaGraphLaunch(exec, s ? s : PTDS);
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *n)
{
    return simrt_error(simgpu_graph_nodes((CUgraph)graph, (CUgraphNode *)nodes, n));
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
    return simrt_error(simgpu_graph_exec_destroy((CUgraphExec)exec));
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    return simrt_error(simgpu_graph_destroy((CUgraph)graph));
}

cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t *exec, cudaGraph_t graph,
                                           cudaGraphInstantiateParams *params)
{
    if (!params)
        return simrt_fail(cudaErrorInvalidValue);
    cudaError_t rc = cudaGraphInstantiate(exec, graph, params->flags);
    params->result_out = rc == cudaSuccess ? cudaGraphInstantiateSuccess : cudaGraphInstantiateError;
    params->errNode_out = NULL;
    return rc;
}
cudaError_t cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t *exec, cudaGraph_t graph,
                                                cudaGraphInstantiateParams *params)
{
    return cudaGraphInstantiateWithParams(exec, graph, params);
}

/* The simulated runtime builds graphs by stream capture only: a graph's
 * nodes cannot be given new parameters, an executable graph cannot be
 * updated, and a capture cannot extend an existing graph. These entry
 * points exist (a program and libsn's wrappers reach them) and refuse, as
 * the real runtime refuses what a graph does not support. */
#define SIMRT_GRAPH_UNSUPPORTED(name, params)                                  \
    cudaError_t name params                                                    \
    {                                                                          \
        return simrt_fail(cudaErrorNotSupported);                              \
    }
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
SIMRT_GRAPH_UNSUPPORTED(cudaStreamBeginCaptureToGraph,
                        (cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t *dependencies,
                         const cudaGraphEdgeData *dependencyData, size_t numDependencies,
                         enum cudaStreamCaptureMode mode))
SIMRT_GRAPH_UNSUPPORTED(cudaStreamBeginCaptureToGraph_ptsz,
                        (cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t *dependencies,
                         const cudaGraphEdgeData *dependencyData, size_t numDependencies,
                         enum cudaStreamCaptureMode mode))
SIMRT_GRAPH_UNSUPPORTED(cudaGraphExecUpdate,
                        (cudaGraphExec_t hGraphExec, cudaGraph_t hGraph, cudaGraphExecUpdateResultInfo *resultInfo))
SIMRT_GRAPH_UNSUPPORTED(cudaGraphExecKernelNodeSetParams,
                        (cudaGraphExec_t hGraphExec, cudaGraphNode_t node, const struct cudaKernelNodeParams *p))
SIMRT_GRAPH_UNSUPPORTED(cudaGraphExecMemcpyNodeSetParams,
                        (cudaGraphExec_t hGraphExec, cudaGraphNode_t node, const struct cudaMemcpy3DParms *p))
SIMRT_GRAPH_UNSUPPORTED(cudaGraphExecMemcpyNodeSetParams1D,
                        (cudaGraphExec_t hGraphExec, cudaGraphNode_t node, void *dst, const void *src, size_t count,
                         enum cudaMemcpyKind kind))
SIMRT_GRAPH_UNSUPPORTED(cudaGraphExecMemsetNodeSetParams,
                        (cudaGraphExec_t hGraphExec, cudaGraphNode_t node, const struct cudaMemsetParams *p))
SIMRT_GRAPH_UNSUPPORTED(cudaGraphExecChildGraphNodeSetParams,
                        (cudaGraphExec_t hGraphExec, cudaGraphNode_t node, cudaGraph_t childGraph))
SIMRT_GRAPH_UNSUPPORTED(cudaGraphExecNodeSetParams,
                        (cudaGraphExec_t graphExec, cudaGraphNode_t node, struct cudaGraphNodeParams *p))
SIMRT_GRAPH_UNSUPPORTED(cudaGraphKernelNodeSetParams, (cudaGraphNode_t node, const struct cudaKernelNodeParams *p))
SIMRT_GRAPH_UNSUPPORTED(cudaGraphMemcpyNodeSetParams, (cudaGraphNode_t node, const struct cudaMemcpy3DParms *p))
SIMRT_GRAPH_UNSUPPORTED(cudaGraphMemcpyNodeSetParams1D,
                        (cudaGraphNode_t node, void *dst, const void *src, size_t count, enum cudaMemcpyKind kind))
SIMRT_GRAPH_UNSUPPORTED(cudaGraphMemsetNodeSetParams, (cudaGraphNode_t node, const struct cudaMemsetParams *p))
SIMRT_GRAPH_UNSUPPORTED(cudaGraphNodeSetParams, (cudaGraphNode_t node, struct cudaGraphNodeParams *p))
#pragma GCC diagnostic pop
