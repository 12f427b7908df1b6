/*
 * sn_curand.c — a program whose only device work is cuRAND's: 24 buffers
 * of 1 MiB, half from cuMemAlloc and half from cudaMalloc, filled again
 * and again by every kind of curandGenerate* from two generators (one on
 * a stream of its own set with curandSetStream, one on the default
 * stream), with a few values read back from the others between calls so
 * that a memory manager at a third of the program's memory moves them.
 * Prints every buffer's checksum at the end, and how many generate calls
 * and copies it made; tests/test_sn_curand.sh requires the same output
 * with and without libsn, and that the report counts exactly those calls.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <curand.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NBUF 24
#define BYTES (1u << 20)

static void die(const char *what, int rc, int line)
{
    fprintf(stderr, "sn_curand: %s failed (%d) at line %d\n", what, rc, line);
    exit(2);
}
#define CK(call)                                                               \
    do {                                                                       \
        CUresult r_ = (call);                                                  \
        if (r_ != CUDA_SUCCESS)                                                \
            die(#call, (int)r_, __LINE__);                                     \
    } while (0)
#define CKRT(call)                                                             \
    do {                                                                       \
        cudaError_t r_ = (call);                                               \
        if (r_ != cudaSuccess)                                                 \
            die(#call, (int)r_, __LINE__);                                     \
    } while (0)
#define CKR(call)                                                              \
    do {                                                                       \
        curandStatus_t r_ = (call);                                            \
        if (r_ != CURAND_STATUS_SUCCESS)                                       \
            die(#call, (int)r_, __LINE__);                                     \
    } while (0)

static void *buf[NBUF];
static int gens, copies;

/* Buffers of even index come from the driver, odd from the runtime; each
 * is read back with its own API. */
static void read_back(int b, void *dst, size_t off, size_t bytes)
{
    if (b % 2 == 0)
        CK(cuMemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)buf[b] + off, bytes));
    else
        CKRT(cudaMemcpy(dst, (char *)buf[b] + off, bytes, cudaMemcpyDeviceToHost));
    copies++;
}

static void fill(curandGenerator_t g, int kind, int b)
{
    size_t n4 = BYTES / 4, n8 = BYTES / 8;
    switch (kind % 9) {
    case 0: CKR(curandGenerate(g, buf[b], n4)); break;
    case 1: CKR(curandGenerateUniform(g, buf[b], n4)); break;
    case 2: CKR(curandGenerateUniformDouble(g, buf[b], n8)); break;
    case 3: CKR(curandGenerateNormal(g, buf[b], n4, 1.0f, 3.0f)); break;
    case 4: CKR(curandGenerateNormalDouble(g, buf[b], n8, -2.0, 0.5)); break;
    case 5: CKR(curandGenerateLogNormal(g, buf[b], n4, 0.0f, 0.25f)); break;
    case 6: CKR(curandGenerateLogNormalDouble(g, buf[b], n8, 0.5, 0.125)); break;
    case 7: CKR(curandGeneratePoisson(g, buf[b], n4, 4.5)); break;
    /* the middle half only: the rest of the buffer must survive */
    default: CKR(curandGeneratePoisson(g, (unsigned *)buf[b] + n4 / 4, n4 / 2, 900.0)); break;
    }
    gens++;
}

static uint64_t checksum(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int b = 0; b < NBUF; b++) {
        if (b % 2 == 0) {
            CUdeviceptr d;
            CK(cuMemAlloc(&d, BYTES));
            buf[b] = (void *)(uintptr_t)d;
        } else {
            CKRT(cudaMalloc(&buf[b], BYTES));
        }
    }
    curandGenerator_t gs, gd;
    CKR(curandCreateGenerator(&gs, CURAND_RNG_PSEUDO_PHILOX4_32_10));
    CKR(curandSetPseudoRandomGeneratorSeed(gs, 20240601ull));
    CKR(curandSetStream(gs, (cudaStream_t)s));
    CKR(curandCreateGenerator(&gd, CURAND_RNG_PSEUDO_DEFAULT));
    CKR(curandSetPseudoRandomGeneratorSeed(gd, 77ull));
    CKR(curandSetGeneratorOffset(gd, 1000ull));

    /* every byte is written once before it is read (kinds 0-7 fill whole
     * buffers) */
    for (int b = 0; b < NBUF; b++)
        fill(b % 2 ? gd : gs, b % 8, b);
    CK(cuStreamSynchronize(s));
    unsigned probe;
    for (int round = 0; round < 8; round++) {
        int w0 = (round * 7) % NBUF, w1 = (round * 7 + 5) % NBUF;
        fill(gs, round + 3, w0);
        fill(gd, round + 6, w1);
        CK(cuStreamSynchronize(s));
        for (int b = NBUF - 1; b >= 0; b -= 3)
            if (b != w0 && b != w1)
                read_back(b, &probe, 4 * (size_t)round, sizeof probe);
    }
    unsigned char *h = malloc(BYTES);
    if (!h)
        return 2;
    for (int b = 0; b < NBUF; b++) {
        read_back(b, h, 0, BYTES);
        printf("buf %2d %016llx\n", b, (unsigned long long)checksum(h, BYTES));
    }
    free(h);
    CKR(curandDestroyGenerator(gs));
    CKR(curandDestroyGenerator(gd));
    printf("generate %d copies %d\n", gens, copies);
    return 0;
}
