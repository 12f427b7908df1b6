/*
 * kernels.c — the --kernels mode: element-wise steps (the SGD update and
 * the loss gradient) done as kernel launches of host functions registered
 * with the simulated device (sim/simgpu.h), so that interception of
 * cudaLaunchKernel is exercised by a real training run. The launches look
 * like any device kernel's: a function pointer, a grid, and an array of
 * pointers to the arguments. On the real libraries this mode is refused.
 */
#include "bench/sntrain/trainer.h"

#include "sim/simgpu.h"

#include <stdio.h>

/* The simulated device runs these with the arguments laid out as the CUDA
 * ABI lays out kernel parameters; args[i] points at argument i. */
static void sgd_host_kernel(void **args, dim3 grid, dim3 block)
{
    (void)grid, (void)block;
    float *w = *(float **)args[0];
    float *grad = *(float **)args[1];
    float *hist = *(float **)args[2];
    int n = *(int *)args[3];
    float lr = *(float *)args[4], mom = *(float *)args[5], wd = *(float *)args[6];
    /* The same operations, in the same order, as the cuBLAS path:
     * grad += wd*w; hist *= mom; hist += lr*grad; w -= hist. */
    for (int i = 0; i < n; i++) {
        grad[i] = wd * w[i] + grad[i];
        hist[i] = mom * hist[i];
        hist[i] = lr * grad[i] + hist[i];
        w[i] = -1.0f * hist[i] + w[i];
    }
}

static void loss_grad_host_kernel(void **args, dim3 grid, dim3 block)
{
    (void)grid, (void)block;
    float *dx = *(float **)args[0];
    const float *prob = *(const float **)args[1];
    const float *onehot = *(const float **)args[2];
    int n = *(int *)args[3];
    float scale = *(float *)args[4];
    for (int i = 0; i < n; i++)
        dx[i] = scale * prob[i] + -scale * onehot[i];
}

int kernels_register(void)
{
    static const size_t sgd_params[7] = {sizeof(float *), sizeof(float *), sizeof(float *),
                                         sizeof(int),     sizeof(float),   sizeof(float),
                                         sizeof(float)};
    static const size_t grad_params[5] = {sizeof(float *), sizeof(float *), sizeof(float *),
                                          sizeof(int), sizeof(float)};
    if (!simgpu_available())
        return -1;
    if (simgpu_register_host_kernel(sgd_host_kernel, "sntrain_sgd_update", 7, sgd_params) != 0 ||
        simgpu_register_host_kernel(loss_grad_host_kernel, "sntrain_loss_grad", 5, grad_params) !=
            0)
        return -1;
    return 0;
}

static dim3 grid_for(int n)
{
    dim3 g = {(unsigned)((n + 255) / 256), 1, 1};
    return g;
}

static const dim3 block256 = {256, 1, 1};

void kernel_sgd(float *w, float *grad, float *hist, int n, float lr, float mom, float wd)
{
    void *args[7] = {&w, &grad, &hist, &n, &lr, &mom, &wd};
    CUDA_CHECK(cudaLaunchKernel((const void *)sgd_host_kernel, grid_for(n), block256, args, 0, 0));
}

void kernel_loss_grad(float *dx, const float *prob, const float *onehot, int n, float scale)
{
    void *args[5] = {&dx, &prob, &onehot, &n, &scale};
    CUDA_CHECK(
        cudaLaunchKernel((const void *)loss_grad_host_kernel, grid_for(n), block256, args, 0, 0));
}
