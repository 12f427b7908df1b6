/*
 * simgpu.h — the one sim-only interface a program may use: host functions
 * launched as kernels.
 *
 * Our own tests and the reference trainer need kernel launches that really do
 * something on the simulated device, so that libsn's kernel-launch
 * interception is exercised. A program registers a host function here and
 * then launches it with cudaLaunchKernel((const void *)fn, ...) exactly as it
 * would launch a device kernel; the simulated runtime runs fn in stream order
 * and reports its parameter layout through cudaFuncGetParamInfo.
 *
 * Everything is resolved at run time with dlsym, so a program that includes
 * this header still links against, and runs on, the real CUDA libraries:
 * there simgpu_available() is 0 and the program must take another path.
 */
#ifndef SIMGPU_SIMGPU_H
#define SIMGPU_SIMGPU_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

/* args[i] points at the i-th argument, as in cudaLaunchKernel. */
typedef void (*simgpu_host_kernel_fn)(void **args, dim3 grid, dim3 block);

/* A "host module": an image cuModuleLoadData / cuLibraryLoadData accept, so
 * that a program or a simulated library can load CPU-bodied kernels and
 * launch them purely through the driver API (cuModuleGetFunction finds them
 * by name; cuFuncGetParamInfo reports the natural-alignment layout). The
 * driver copies what it needs while loading. As for registered host
 * kernels, SIMGPU_COMPUTE=0 times the launches without running the bodies. */
#define SIMGPU_HOST_MODULE_MAGIC 0x4d54534f484d4953ULL /* "SIMHOSTM" */
typedef struct simgpu_host_module_kernel {
    const char *name;
    simgpu_host_kernel_fn fn;
    int nparams;
    const size_t *param_sizes;
} simgpu_host_module_kernel;
typedef struct simgpu_host_module {
    uint64_t magic;
    int nkernels;
    const simgpu_host_module_kernel *kernels;
} simgpu_host_module;

typedef int (*simgpu_register_host_kernel_t)(simgpu_host_kernel_fn fn, const char *name,
                                            int nparams, const size_t *param_sizes);

/* Registers fn as a launchable kernel with nparams parameters of the given
 * sizes (laid out with natural alignment, as the CUDA ABI does).
 * Returns 0 on success, -1 when not running on the simulated device. */
static inline int simgpu_register_host_kernel(simgpu_host_kernel_fn fn, const char *name,
                                              int nparams, const size_t *param_sizes)
{
    simgpu_register_host_kernel_t reg =
        (simgpu_register_host_kernel_t)dlsym(RTLD_DEFAULT, "simgpu_register_host_kernel_impl");
    return reg ? reg(fn, name, nparams, param_sizes) : -1;
}

static inline int simgpu_available(void)
{
    return dlsym(RTLD_DEFAULT, "simgpu_register_host_kernel_impl") != NULL;
}

#endif
