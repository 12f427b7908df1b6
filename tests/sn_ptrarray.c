/*
 * sn_ptrarray.c — kernels that reach buffers through pointers stored in
 * device memory, as batched GEMMs and optimisers' multi-tensor kernels do:
 * the host writes an array of device addresses, copies it to the device,
 * and a kernel given only that array (and a count) scales every buffer it
 * lists. Each round lists a few of the buffers, and the
 * buffers not listed are read meanwhile, so that a memory manager at a
 * third of the program's memory has moved listed ones off the device.
 * Prints every buffer's checksum at the end; test_sn_floor.sh requires the
 * same output with and without libsn. With the argument "many", one kernel
 * reaches 600 small buffers through one array instead.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "sim/simgpu.h"

#define NBUF 15
#define NPER 3
#define COUNT (512u * 1024u) /* floats: 2 MiB */

/* scale_listed(float **list, int n, float k, unsigned count): the first
 * count floats of every buffer listed, times k, plus its index in the list */
static void scale_listed(void **args, dim3 grid, dim3 block)
{
    (void)grid;
    (void)block;
    float *const *list = *(float *const **)args[0];
    int n = *(const int *)args[1];
    float k = *(const float *)args[2];
    unsigned count = *(const unsigned *)args[3];
    for (int i = 0; i < n; i++)
        for (size_t e = 0; e < count; e++)
            list[i][e] = list[i][e] * k + (float)i;
}

/* With "many": 600 small buffers listed in one array of 4.8 KB, beyond
 * any fixed number of addresses a memory manager might keep; their sum is
 * printed. */
#define NMANY 600
#define MANY_COUNT 1024u
static int run_many(void)
{
    static float *small[NMANY];
    static float host[MANY_COUNT];
    float **list_dev;
    if (cudaMalloc((void **)&list_dev, sizeof small) != cudaSuccess)
        return 1;
    for (int b = 0; b < NMANY; b++) {
        for (unsigned e = 0; e < MANY_COUNT; e++)
            host[e] = (float)((e + (unsigned)b) % 5);
        if (cudaMalloc((void **)&small[b], sizeof host) != cudaSuccess ||
            cudaMemcpy(small[b], host, sizeof host, cudaMemcpyHostToDevice) != cudaSuccess)
            return 1;
    }
    if (cudaMemcpy(list_dev, small, sizeof small, cudaMemcpyHostToDevice) != cudaSuccess)
        return 1;
    int n = NMANY;
    float k = 2.0f;
    unsigned count = MANY_COUNT;
    void *args[4] = {&list_dev, &n, &k, &count};
    dim3 one = {1, 1, 1};
    printf("many: launch %d\n", (int)cudaLaunchKernel((const void *)scale_listed, one, one, args, 0, NULL));
    double sum = 0;
    for (int b = 0; b < NMANY; b++) {
        if (cudaMemcpy(host, small[b], sizeof host, cudaMemcpyDeviceToHost) != cudaSuccess)
            return 1;
        for (unsigned e = 0; e < MANY_COUNT; e++)
            sum += host[e];
    }
    printf("many: sum %.1f\n", sum);
    return 0;
}

int main(int argc, char **argv)
{
    if (!simgpu_available()) {
        printf("needs the simulated device (host kernels)\n");
        return 77;
    }
    static const size_t sizes[4] = {sizeof(void *), sizeof(int), sizeof(float), sizeof(unsigned)};
    if (simgpu_register_host_kernel(scale_listed, "scale_listed", 4, sizes) != 0)
        return 1;
    if (argc > 1 && strcmp(argv[1], "many") == 0)
        return run_many();
    float *buf[NBUF], **list_dev;
    float *host = malloc(COUNT * sizeof *host);
    if (!host || cudaMalloc((void **)&list_dev, NPER * sizeof *list_dev) != cudaSuccess)
        return 1;
    for (int b = 0; b < NBUF; b++) {
        for (size_t e = 0; e < COUNT; e++)
            host[e] = (float)((e * 3 + (size_t)b * 7) % 11) - 5.0f;
        if (cudaMalloc((void **)&buf[b], COUNT * sizeof(float)) != cudaSuccess ||
            cudaMemcpy(buf[b], host, COUNT * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess)
            return 1;
    }
    for (int round = 0; round < 6; round++) {
        float *list[NPER];
        for (int i = 0; i < NPER; i++)
            list[i] = buf[(round * 5 + i * 3) % NBUF];
        if (cudaMemcpy(list_dev, list, sizeof list, cudaMemcpyHostToDevice) != cudaSuccess)
            return 1;
        /* the others are read: under a budget the listed ones leave */
        float x;
        for (int b = NBUF - 1; b >= 0; b--)
            cudaMemcpy(&x, buf[b] + round, sizeof x, cudaMemcpyDeviceToHost);
        int n = NPER;
        float k = 0.5f + 0.25f * (float)round;
        unsigned count = COUNT;
        void *args[4] = {&list_dev, &n, &k, &count};
        dim3 one = {1, 1, 1};
        cudaError_t rc = cudaLaunchKernel((const void *)scale_listed, one, one, args, 0, NULL);
        printf("round %d: launch %d\n", round, (int)rc);
    }
    printf("sync: %d\n", (int)cudaDeviceSynchronize());
    for (int b = 0; b < NBUF; b++) {
        uint64_t s = 0xcbf29ce484222325ull;
        if (cudaMemcpy(host, buf[b], COUNT * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess)
            return 1;
        const unsigned char *p = (const unsigned char *)host;
        for (size_t e = 0; e < COUNT * sizeof(float); e++)
            s = (s ^ p[e]) * 0x100000001b3ull;
        printf("buffer %d: %016llx\n", b, (unsigned long long)s);
    }
    free(host);
    return 0;
}
