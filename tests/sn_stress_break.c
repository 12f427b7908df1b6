/*
 * sn_stress_break.c — a preloadable library that makes the mistakes a
 * memory manager between a program and CUDA could make, so that
 * tests/test_sn_stress.sh can show that sn_stress catches them:
 *
 *   SN_STRESS_BREAK=drop    every 8th cudaMemsetAsync and every 8th
 *                           device-to-device cudaMemcpyAsync report success
 *                           without doing anything (a write lost while the
 *                           data was elsewhere): a wrong byte read back.
 *   SN_STRESS_BREAK=nowait  cudaStreamWaitEvent reports success without
 *                           ordering anything (a copy not ordered before the
 *                           work that needs it): the simulator's ordering
 *                           check stops the program.
 *
 * Anything else (or unset) forwards every call untouched.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

static int mode(const char *want)
{
    const char *m = getenv("SN_STRESS_BREAK");
    return m && strcmp(m, want) == 0;
}

static int every_8th(int *counter) { return __atomic_add_fetch(counter, 1, __ATOMIC_RELAXED) % 8 == 0; }

cudaError_t cudaMemsetAsync(void *dst, int v, size_t n, cudaStream_t s)
{
    static int calls;
    if (mode("drop") && every_8th(&calls))
        return cudaSuccess;
    cudaError_t (*real)(void *, int, size_t, cudaStream_t) =
        (cudaError_t(*)(void *, int, size_t, cudaStream_t))dlsym(RTLD_NEXT, "cudaMemsetAsync");
    return real(dst, v, n, s);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind k, cudaStream_t s)
{
    static int calls;
    if (mode("drop") && k == cudaMemcpyDeviceToDevice && every_8th(&calls))
        return cudaSuccess;
    cudaError_t (*real)(void *, const void *, size_t, enum cudaMemcpyKind, cudaStream_t) =
        (cudaError_t(*)(void *, const void *, size_t, enum cudaMemcpyKind, cudaStream_t))dlsym(RTLD_NEXT,
                                                                                             "cudaMemcpyAsync");
    return real(dst, src, n, k, s);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags)
{
    if (mode("nowait"))
        return cudaSuccess;
    cudaError_t (*real)(cudaStream_t, cudaEvent_t, unsigned int) =
        (cudaError_t(*)(cudaStream_t, cudaEvent_t, unsigned int))dlsym(RTLD_NEXT, "cudaStreamWaitEvent");
    return real(s, e, flags);
}
