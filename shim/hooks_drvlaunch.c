/*
 * hooks_drvlaunch.c — wrappers of the driver's kernel launches and graph
 * calls: how NVIDIA's own libraries (cuRAND, cuFFT, cuBLASLt, NCCL) and
 * programs linked with nvcc's default static runtime submit their work.
 * A launch is described from cuFuncGetParamInfo's layout as a runtime
 * launch is (core: sn_core_describe_cu_kernel); a launch made inside a
 * described library call passes straight through (SN_PROLOGUE), so it is
 * neither counted twice nor opaque. Stream capture and graph launches
 * follow the runtime's wrappers (hooks_cudart.c).
 */
#include "shim/sn_wrap.h"

#define SN_CU_LAUNCH(name)                                                                      \
    SN_EXPORT CUresult name(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,        \
                            unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, \
                            unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, \
                            void **kernelParams, void **extra)                                 \
    {                                                                                          \
        SN_PROLOGUE(CUDA, name, (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, \
                                 sharedMemBytes, hStream, kernelParams, extra))               \
        SN_CALL_DECL(c);                                                                          \
        sn_call_init(&c, SN_HOOK_ID_##name, SN_OP_KERNEL, sn_current_device(), hStream);       \
        sn_core_describe_cu_kernel(&c, (void *)f, kernelParams, extra);                        \
        c.params = sn_hash_mix(c.params, (uint64_t)gridDimX * gridDimY * gridDimZ);            \
        SN_FORWARD_STEP(&c, CUresult, CUDA_SUCCESS, CUDA_ERROR_OUT_OF_MEMORY,                 \
                        (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,     \
                         sharedMemBytes, hStream, kernelParams, extra));                       \
    }
SN_CU_LAUNCH(cuLaunchKernel)
SN_CU_LAUNCH(cuLaunchKernel_ptsz)

#define SN_CU_LAUNCH_COOP(name)                                                                 \
    SN_EXPORT CUresult name(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,        \
                            unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, \
                            unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, \
                            void **kernelParams)                                               \
    {                                                                                          \
        SN_PROLOGUE(CUDA, name, (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, \
                                 sharedMemBytes, hStream, kernelParams))                      \
        SN_CALL_DECL(c);                                                                          \
        sn_call_init(&c, SN_HOOK_ID_##name, SN_OP_KERNEL, sn_current_device(), hStream);       \
        sn_core_describe_cu_kernel(&c, (void *)f, kernelParams, NULL);                         \
        c.params = sn_hash_mix(c.params, (uint64_t)gridDimX * gridDimY * gridDimZ);            \
        SN_FORWARD_STEP(&c, CUresult, CUDA_SUCCESS, CUDA_ERROR_OUT_OF_MEMORY,                 \
                        (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,     \
                         sharedMemBytes, hStream, kernelParams));                              \
    }
SN_CU_LAUNCH_COOP(cuLaunchCooperativeKernel)
SN_CU_LAUNCH_COOP(cuLaunchCooperativeKernel_ptsz)

#define SN_CU_LAUNCH_EX(name)                                                                   \
    SN_EXPORT CUresult name(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra) \
    {                                                                                          \
        SN_PROLOGUE(CUDA, name, (config, f, kernelParams, extra))                              \
        if (!config)                                                                           \
            return real(config, f, kernelParams, extra);                                       \
        SN_CALL_DECL(c);                                                                          \
        sn_call_init(&c, SN_HOOK_ID_##name, SN_OP_KERNEL, sn_current_device(), config->hStream); \
        sn_core_describe_cu_kernel(&c, (void *)f, kernelParams, extra);                        \
        c.params = sn_hash_mix(c.params, (uint64_t)config->gridDimX * config->gridDimY * config->gridDimZ); \
        SN_FORWARD_STEP(&c, CUresult, CUDA_SUCCESS, CUDA_ERROR_OUT_OF_MEMORY, (config, f, kernelParams, extra)); \
    }
SN_CU_LAUNCH_EX(cuLaunchKernelEx)
SN_CU_LAUNCH_EX(cuLaunchKernelEx_ptsz)

#define SN_CU_GRAPH_LAUNCH(name)                                               \
    SN_EXPORT CUresult name(CUgraphExec hGraphExec, CUstream hStream)          \
    {                                                                          \
        SN_PROLOGUE(CUDA, name, (hGraphExec, hStream))                         \
        SN_CALL_DECL(c);                                                          \
        sn_call_init(&c, SN_HOOK_ID_##name, SN_OP_GRAPH, sn_current_device(), hStream); \
        if (!sn_core_describe_graph(&c, (void *)hGraphExec))                  \
            c.flags |= SN_CALL_OPAQUE;                                         \
        c.params = sn_hash_mix(0, (uint64_t)(uintptr_t)hGraphExec);            \
        SN_FORWARD_STEP(&c, CUresult, CUDA_SUCCESS, CUDA_ERROR_OUT_OF_MEMORY, (hGraphExec, hStream)); \
    }
SN_CU_GRAPH_LAUNCH(cuGraphLaunch)
SN_CU_GRAPH_LAUNCH(cuGraphLaunch_ptsz)

#define SN_CU_CAPTURE_BEGIN(name)                                              \
    SN_EXPORT CUresult name(CUstream hStream, CUstreamCaptureMode mode)        \
    {                                                                          \
        SN_PROLOGUE(CUDA, name, (hStream, mode))                               \
        void *ev_ = sn_core_capture_begin((void *)hStream);                    \
        CUresult rc = real(hStream, mode);                                     \
        sn_core_note_graph(SN_GRAPH_BEGUN, (void *)hStream, ev_, rc == CUDA_SUCCESS); \
        return rc;                                                             \
    }
SN_CU_CAPTURE_BEGIN(cuStreamBeginCapture_v2)
SN_CU_CAPTURE_BEGIN(cuStreamBeginCapture_v2_ptsz)

#define SN_CU_CAPTURE_END(name)                                                \
    SN_EXPORT CUresult name(CUstream hStream, CUgraph *phGraph)                \
    {                                                                          \
        SN_PROLOGUE(CUDA, name, (hStream, phGraph))                            \
        CUresult rc = real(hStream, phGraph);                                  \
        int ok_ = rc == CUDA_SUCCESS && phGraph && *phGraph;                   \
        sn_core_note_graph(SN_GRAPH_ENDED, (void *)hStream, ok_ ? (void *)*phGraph : NULL, ok_); \
        return rc;                                                             \
    }
SN_CU_CAPTURE_END(cuStreamEndCapture)
SN_CU_CAPTURE_END(cuStreamEndCapture_ptsz)

SN_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
{
    SN_PROLOGUE(CUDA, cuGraphInstantiateWithFlags, (phGraphExec, hGraph, flags))
    CUresult rc = real(phGraphExec, hGraph, flags);
    int ok = rc == CUDA_SUCCESS && phGraphExec && *phGraphExec;
    sn_core_note_graph(SN_GRAPH_INSTANTIATED, (void *)hGraph, ok ? (void *)*phGraphExec : NULL, ok);
    return rc;
}

SN_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    SN_PROLOGUE(CUDA, cuGraphExecDestroy, (hGraphExec))
    sn_core_note_graph(SN_GRAPH_CHANGED, (void *)hGraphExec, NULL, 1);
    return real(hGraphExec);
}

SN_EXPORT CUresult cuGraphDestroy(CUgraph hGraph)
{
    SN_PROLOGUE(CUDA, cuGraphDestroy, (hGraph))
    sn_core_note_graph(SN_GRAPH_CHANGED, (void *)hGraph, NULL, 1);
    return real(hGraph);
}
