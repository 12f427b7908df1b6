// nvcc_sample.cu — a program nvcc builds with its own device kernel, as
// frameworks are built. On the simulated device it must load (fat binary and
// kernel registered by nvcc's start-up code) and, with SIMGPU_COMPUTE=0, run
// with the launch modelled; with compute on the launch fails as CUDA reports
// a missing kernel image. tests/test_sim_nvcc.sh builds and runs it.
#include <cstdio>

__global__ void scale(float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] *= a;
}

int main()
{
    float *d;
    cudaError_t e = cudaMalloc(&d, 1024 * sizeof(float));
    printf("malloc %s\n", cudaGetErrorName(e));
    scale<<<4, 256>>>(d, 2.0f, 1024);
    printf("launch %s\n", cudaGetErrorName(cudaGetLastError()));
    printf("sync %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    cudaFree(d);
    return 0;
}
