/*
 * sn_longcall.c — kernels with many pointer parameters, as multi-tensor
 * apply launches them: each writes dst[i] = src[i] * k over its lists of
 * buffers. One kernel takes 30 pointers as 30 parameters (15 sources, 15
 * destinations); the other 130 in one parameter passed by value, a struct
 * of two arrays of 65 pointers (the layout PyTorch's multi_tensor_apply
 * uses). Three groups of buffers per kernel, launched in turn for four
 * rounds, sources and destinations swapping each round, so that every
 * launch depends on the one before it. Prints a checksum per buffer and
 * the number of launches, for tests/test_sn_longcall.sh to compare a run
 * under libsn with one without it byte for byte.
 */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/simgpu.h"

#define SHORT_PAIRS 15
#define LONG_PAIRS 65
#define GROUPS 3
#define ROUNDS 4
#define ELEMS (32 * 1024)  /* 128 KiB a buffer */

#define CK(call)                                                                                  \
    do {                                                                                          \
        cudaError_t rc_ = (call);                                                                 \
        if (rc_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "sn_longcall: %s failed (%d) at line %d\n", #call, (int)rc_, __LINE__); \
            exit(2);                                                                              \
        }                                                                                         \
    } while (0)

typedef struct lists {
    float *src[LONG_PAIRS];
    float *dst[LONG_PAIRS];
} lists;

static void scale(float *dst, const float *src, float k)
{
    for (int j = 0; j < ELEMS; j++)
        dst[j] = src[j] * k;
}

/* args: src0..src14, dst0..dst14, k */
static void k_short(void **args, dim3 grid, dim3 block)
{
    (void)grid;
    (void)block;
    float k = *(float *)args[2 * SHORT_PAIRS];
    for (int i = 0; i < SHORT_PAIRS; i++)
        scale(*(float **)args[SHORT_PAIRS + i], *(float **)args[i], k);
}

/* args: lists (by value), k */
static void k_long(void **args, dim3 grid, dim3 block)
{
    (void)grid;
    (void)block;
    const lists *l = args[0];
    float k = *(float *)args[1];
    for (int i = 0; i < LONG_PAIRS; i++)
        scale(l->dst[i], l->src[i], k);
}

static uint64_t fnv(const void *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ULL;
    return h;
}

int main(void)
{
    size_t short_sizes[2 * SHORT_PAIRS + 1], long_sizes[2] = {sizeof(lists), sizeof(float)};
    for (int i = 0; i < 2 * SHORT_PAIRS; i++)
        short_sizes[i] = sizeof(float *);
    short_sizes[2 * SHORT_PAIRS] = sizeof(float);
    if (simgpu_register_host_kernel(k_short, "sn_longcall_short", 2 * SHORT_PAIRS + 1, short_sizes) ||
        simgpu_register_host_kernel(k_long, "sn_longcall_long", 2, long_sizes)) {
        fprintf(stderr, "sn_longcall: needs the simulated device\n");
        return 2;
    }
    static float *sbuf[GROUPS][2][SHORT_PAIRS], *lbuf[GROUPS][2][LONG_PAIRS];
    float *host = malloc(ELEMS * sizeof *host);
    if (!host)
        return 2;
    uint32_t seed = 12345;
    size_t total = 0;
    for (int g = 0; g < GROUPS; g++)
        for (int side = 0; side < 2; side++)
            for (int i = 0; i < LONG_PAIRS; i++) {
                for (int j = 0; j < ELEMS; j++) {
                    seed = seed * 1103515245u + 12345u;
                    host[j] = (float)((seed >> 8) % 1000) / 64.0f;
                }
                CK(cudaMalloc((void **)&lbuf[g][side][i], ELEMS * sizeof(float)));
                CK(cudaMemcpy(lbuf[g][side][i], host, ELEMS * sizeof(float), cudaMemcpyHostToDevice));
                total += ELEMS * sizeof(float);
                if (i < SHORT_PAIRS) {
                    CK(cudaMalloc((void **)&sbuf[g][side][i], ELEMS * sizeof(float)));
                    CK(cudaMemcpy(sbuf[g][side][i], host, ELEMS * sizeof(float), cudaMemcpyHostToDevice));
                    total += ELEMS * sizeof(float);
                }
            }
    dim3 one = {1, 1, 1};
    int launches = 0;
    for (int r = 0; r < ROUNDS; r++)
        for (int g = 0; g < GROUPS; g++) {
            int in = r % 2, out = 1 - in;
            float k = 1.0f + 0.25f * (float)(r + g);
            void *sargs[2 * SHORT_PAIRS + 1];
            for (int i = 0; i < SHORT_PAIRS; i++) {
                sargs[i] = &sbuf[g][in][i];
                sargs[SHORT_PAIRS + i] = &sbuf[g][out][i];
            }
            sargs[2 * SHORT_PAIRS] = &k;
            CK(cudaLaunchKernel((const void *)k_short, one, one, sargs, 0, NULL));
            lists l;
            for (int i = 0; i < LONG_PAIRS; i++) {
                l.src[i] = lbuf[g][in][i];
                l.dst[i] = lbuf[g][out][i];
            }
            void *largs[2] = {&l, &k};
            CK(cudaLaunchKernel((const void *)k_long, one, one, largs, 0, NULL));
            launches += 2;
        }
    CK(cudaDeviceSynchronize());
    for (int g = 0; g < GROUPS; g++)
        for (int side = 0; side < 2; side++)
            for (int i = 0; i < LONG_PAIRS; i++) {
                CK(cudaMemcpy(host, lbuf[g][side][i], ELEMS * sizeof(float), cudaMemcpyDeviceToHost));
                printf("long %d/%d/%02d %016llx\n", g, side, i, (unsigned long long)fnv(host, ELEMS * sizeof(float)));
                if (i < SHORT_PAIRS) {
                    CK(cudaMemcpy(host, sbuf[g][side][i], ELEMS * sizeof(float), cudaMemcpyDeviceToHost));
                    printf("short %d/%d/%02d %016llx\n", g, side, i,
                           (unsigned long long)fnv(host, ELEMS * sizeof(float)));
                }
            }
    printf("launches %d bytes %zu\n", launches, total);
    free(host);
    return 0;
}
