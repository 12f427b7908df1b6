/*
 * sample.c — a small CUDA program that knows nothing of the simulator.
 *
 * Built against the real CUDA headers and import libraries, it runs on a GPU
 * as it is and on the simulated device with LD_LIBRARY_PATH=build/sim. It
 * prints what it did: device properties, a timed pinned and pageable copy,
 * copy/compute overlap on two streams, and a VMM round trip that moves a
 * buffer's physical memory while its address stays the same — the mechanism
 * libsn's offloading rests on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#define CHECK(x)                                                                          \
    do {                                                                                  \
        cudaError_t e_ = (x);                                                             \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)
#define CHECK_CU(x)                                                                       \
    do {                                                                                  \
        CUresult r_ = (x);                                                                \
        if (r_ != CUDA_SUCCESS) {                                                         \
            fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #x, (int)r_);  \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

static float timed(cudaEvent_t a, cudaEvent_t b)
{
    float ms;
    CHECK(cudaEventSynchronize(b));
    CHECK(cudaEventElapsedTime(&ms, a, b));
    return ms;
}

int main(void)
{
    struct cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    size_t fr, tot;
    CHECK(cudaMemGetInfo(&fr, &tot));
    printf("device 0: %s, compute capability %d.%d, %.2f GiB\n", p.name, p.major, p.minor, tot / 1073741824.0);

    const size_t n = 64u << 20;
    void *d, *d2, *pin, *page = malloc(n);
    CHECK(cudaMalloc(&d, n));
    CHECK(cudaMalloc(&d2, n));
    CHECK(cudaMallocHost(&pin, n));
    memset(pin, 7, n);
    memset(page, 7, n);
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    CHECK(cudaEventRecord(a, 0));
    CHECK(cudaMemcpy(d, pin, n, cudaMemcpyHostToDevice));
    CHECK(cudaEventRecord(b, 0));
    float t_pin = timed(a, b);
    CHECK(cudaEventRecord(a, 0));
    CHECK(cudaMemcpy(d, page, n, cudaMemcpyHostToDevice));
    CHECK(cudaEventRecord(b, 0));
    float t_page = timed(a, b);
    printf("64 MiB host->device: pinned %.3f ms (%.1f GB/s), pageable %.3f ms (%.1f GB/s)\n", t_pin,
           n / t_pin / 1e6, t_page, n / t_page / 1e6);

    cudaStream_t s1, s2;
    CHECK(cudaStreamCreate(&s1));
    CHECK(cudaStreamCreate(&s2));
    CHECK(cudaEventRecord(a, 0));
    CHECK(cudaMemcpyAsync(d, pin, n, cudaMemcpyHostToDevice, s1));
    CHECK(cudaMemsetAsync(d2, 0, n, s1));
    CHECK(cudaEventRecord(b, 0));
    float t_one = timed(a, b);
    CHECK(cudaEventRecord(a, 0));
    CHECK(cudaMemcpyAsync(d, pin, n, cudaMemcpyHostToDevice, s1));
    CHECK(cudaMemsetAsync(d2, 0, n, s2));
    CHECK(cudaEventRecord(b, 0));
    float t_two = timed(a, b);
    printf("copy + memset: one stream %.3f ms, two streams %.3f ms (overlap)\n", t_one, t_two);

    int vmm = 0;
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
    if (vmm) {
        CUmemAllocationProp prop;
        memset(&prop, 0, sizeof prop);
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        size_t g;
        CHECK_CU(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
        CUdeviceptr va;
        CUmemGenericAllocationHandle h1, h2;
        CHECK_CU(cuMemAddressReserve(&va, g, 0, 0, 0));
        CHECK_CU(cuMemCreate(&h1, g, &prop, 0));
        CUmemAccessDesc acc;
        memset(&acc, 0, sizeof acc);
        acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        CHECK_CU(cuMemMap(va, g, 0, h1, 0));
        CHECK_CU(cuMemSetAccess(va, g, &acc, 1));
        const char msg[] = "tensor contents";
        CHECK(cudaMemcpy((void *)va, msg, sizeof msg, cudaMemcpyHostToDevice));
        /* "Offload": copy out, unmap, release the physical memory. */
        char saved[sizeof msg];
        CHECK(cudaMemcpy(saved, (void *)va, sizeof msg, cudaMemcpyDeviceToHost));
        CHECK_CU(cuMemUnmap(va, g));
        CHECK_CU(cuMemRelease(h1));
        CHECK(cudaMemGetInfo(&fr, &tot));
        printf("VMM: %zu MiB granularity; %p unmapped, %.1f MiB in use\n", g >> 20, (void *)va,
               (tot - fr) / 1048576.0);
        /* "Prefetch": new physical memory at the same address. */
        CHECK_CU(cuMemCreate(&h2, g, &prop, 0));
        CHECK_CU(cuMemMap(va, g, 0, h2, 0));
        CHECK_CU(cuMemSetAccess(va, g, &acc, 1));
        CHECK(cudaMemcpy((void *)va, saved, sizeof msg, cudaMemcpyHostToDevice));
        char back[sizeof msg];
        CHECK(cudaMemcpy(back, (void *)va, sizeof msg, cudaMemcpyDeviceToHost));
        printf("VMM: remapped at the same address %p, contents \"%s\"\n", (void *)va, back);
        CHECK_CU(cuMemUnmap(va, g));
        CHECK_CU(cuMemRelease(h2));
        CHECK_CU(cuMemAddressFree(va, g));
    }
    CHECK(cudaFree(d));
    CHECK(cudaFree(d2));
    CHECK(cudaFreeHost(pin));
    free(page);
    printf("done\n");
    return 0;
}
