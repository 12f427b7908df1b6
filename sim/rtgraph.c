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
