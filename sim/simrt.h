/*
 * simrt.h — helpers shared by the simulated runtime's files (sim/runtime.c,
 * sim/kernels.c): error bookkeeping in the runtime's conventions.
 */
#ifndef SIMGPU_SIMRT_H
#define SIMGPU_SIMRT_H

#include <cuda.h>
#include <cuda_runtime_api.h>

/* Maps a driver result to the runtime's code and records it as the last
 * error when it is a failure. */
cudaError_t simrt_error(CUresult r);
/* Records e as the last error (unless success / not-ready) and returns it. */
cudaError_t simrt_fail(cudaError_t e);

#endif
