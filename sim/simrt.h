/*
 * simrt.h — helpers shared by the simulated runtime's files (sim/runtime.c,
 * sim/kernels.c): error bookkeeping in the runtime's conventions and the
 * lazy context set-up every device call starts with.
 */
#ifndef SIMGPU_SIMRT_H
#define SIMGPU_SIMRT_H

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "sim/simcore.h"

/* Maps a driver result to the runtime's code and records it as the last
 * error when it is a failure. */
cudaError_t simrt_error(CUresult r);
/* Records e as the last error (unless success / not-ready) and returns it. */
cudaError_t simrt_fail(cudaError_t e);

/* What the runtime does before any call that needs a device: initialise the
 * driver once, and make the current device's primary context current on a
 * thread that has no current context. */
cudaError_t simrt_ctx(void);
#define SIMRT_NEED_CTX()                          \
    do {                                          \
        cudaError_t ctx_e_ = simrt_ctx();         \
        if (ctx_e_ != cudaSuccess)                \
            return simrt_fail(ctx_e_);            \
    } while (0)

/* cudaMalloc, cudaFree, cudaDeviceSynchronize and the like may synchronise
 * implicitly, which a capture in global or thread-local mode forbids. */
#define SIMRT_NOT_DURING_CAPTURE()                                  \
    do {                                                            \
        CUresult cap_r_ = simgpu_capture_unsafe_call();             \
        if (cap_r_ != CUDA_SUCCESS)                                 \
            return simrt_error(cap_r_);                             \
    } while (0)

#endif
