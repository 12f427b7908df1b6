/*
 * sn_drvprobe.c — a program that reaches the GPU through the CUDA driver
 * API only (no runtime): 24 buffers of 1 to 4 MiB written, partly
 * overwritten and copied into one another by cuMemcpyHtoD/DtoH/DtoD,
 * cuMemcpy, cuMemsetD8/D32 and their asynchronous forms on a stream,
 * from pageable and from pinned host memory, in a fixed order. It prints
 * a checksum per buffer, a checksum of every intermediate read-back, and
 * how many copies and sets it made (host<->device copies apart), so that
 * tests/test_sn_driver.sh can compare a run under libsn with one without
 * it byte for byte and check what the trace report counted.
 *
 * Some calls go through pointers from cuGetProcAddress (one fetched with
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM), as the runtime and JIT
 * compilers reach the driver. sn_drvprobe_rt is the same program with the
 * runtime loaded beside it (nothing of it called); without it, libsn loads
 * the runtime for its own copies and events.
 *
 * Usage: sn_drvprobe [rounds]   (default 3)
 */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBUF 24
#define MIB (1u << 20)

#define CK(call)                                                                                  \
    do {                                                                                          \
        CUresult rc_ = (call);                                                                    \
        if (rc_ != CUDA_SUCCESS) {                                                                \
            fprintf(stderr, "sn_drvprobe: %s failed (%d) at line %d\n", #call, (int)rc_, __LINE__); \
            exit(2);                                                                              \
        }                                                                                         \
    } while (0)

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint32_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

static void fill(unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(next() >> 3);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    CUdevice dev;
    CUcontext ctx;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CUstream s;
    CK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
    /* Entry points as the runtime and JIT compilers fetch them: some of
     * the calls below go through these. */
    CUresult (*gpa_setd8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*gpa_dtoh)(void *, CUdeviceptr, size_t);
    CUdriverProcAddressQueryResult found;
    CK(cuGetProcAddress("cuMemsetD8", (void **)&gpa_setd8, CUDA_VERSION,
                        CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &found));
    CK(cuGetProcAddress("cuMemcpyDtoH", (void **)&gpa_dtoh, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT,
                        &found));

    CUdeviceptr buf[NBUF];
    size_t size[NBUF];
    unsigned long ncalls = 0, ntransfers = 0;
    for (int i = 0; i < NBUF; i++) {
        /* 1 to 4 MiB, multiples of 4 bytes (cuMemsetD32 counts words) */
        size[i] = MIB + (size_t)((i * 389u + 7u) % 769u) * 4096u;
        CK(cuMemAlloc(&buf[i], size[i]));
        CK(cuMemsetD32(buf[i], 0x01010101u * (unsigned)i, size[i] / 4));
        ncalls++;
    }
    unsigned char *page = malloc(4 * MIB), *back = malloc(4 * MIB);
    void *pinned;
    CK(cuMemAllocHost(&pinned, 4 * MIB));
    if (!page || !back)
        return 2;
    uint64_t reads = 0xcbf29ce484222325ULL;

    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < NBUF; i++) {
            size_t off = (next() % (size[i] / 2)) & ~(size_t)3;
            size_t len = ((next() % (size[i] - off)) & ~(size_t)3) + 4;
            switch ((i + r) % 4) {
            case 0: /* whole buffer from pageable memory, synchronous */
                fill(page, size[i]);
                CK(cuMemcpyHtoD(buf[i], page, size[i]));
                break;
            case 1: /* part, from pinned memory, on the stream */
                fill(pinned, len);
                CK(cuMemcpyHtoDAsync(buf[i] + off, pinned, len, s));
                CK(cuStreamSynchronize(s));
                break;
            case 2: /* part, set bytewise */
                if (r % 2)
                    CK(gpa_setd8(buf[i] + off, (unsigned char)(r * 31 + i), len));
                else
                    CK(cuMemsetD8(buf[i] + off, (unsigned char)(r * 31 + i), len));
                break;
            default: /* part, set by words on the stream */
                CK(cuMemsetD32Async(buf[i] + off, next(), len / 4, s));
                CK(cuStreamSynchronize(s));
                break;
            }
            ncalls++;
            ntransfers += (i + r) % 4 < 2;
        }
        for (int k = 0; k < NBUF; k++) {
            int a = (int)(next() % NBUF), b = (int)(next() % NBUF);
            if (a == b)
                continue;
            size_t n = size[a] < size[b] ? size[a] : size[b];
            size_t len = (next() % n) & ~(size_t)3;
            size_t off = len < n ? ((next() % (n - len)) & ~(size_t)3) : 0;
            if (!len)
                continue;
            switch (k % 3) {
            case 0: CK(cuMemcpyDtoD(buf[b] + off, buf[a] + off, len)); break;
            case 1:
                CK(cuMemcpyDtoDAsync(buf[b] + off, buf[a] + off, len, s));
                CK(cuStreamSynchronize(s));
                break;
            default: CK(cuMemcpy(buf[b], buf[a] + off, len)); break;
            }
            ncalls++;
            /* read a part back midway: what a later write must not lose */
            if (k % 5 == 0) {
                size_t m = len < 4 * MIB ? len : 4 * MIB;
                if (k % 2) {
                    CK(cuMemcpyDtoHAsync(pinned, buf[b] + off, m, s));
                    CK(cuStreamSynchronize(s));
                    reads = fnv(reads, pinned, m);
                } else {
                    CK(cuMemcpyDtoH(back, buf[b] + off, m));
                    reads = fnv(reads, back, m);
                }
                ncalls++;
                ntransfers++;
            }
        }
        /* a pinned host-to-device copy through the unified entry point */
        int i = (int)(next() % NBUF);
        fill(pinned, MIB);
        CK(cuMemcpyAsync(buf[i], (CUdeviceptr)(uintptr_t)pinned, MIB, s));
        CK(cuStreamSynchronize(s));
        ncalls++;
        ntransfers++;
    }
    for (int i = 0; i < NBUF; i++) {
        if (i % 2)
            CK(gpa_dtoh(back, buf[i], size[i]));
        else
            CK(cuMemcpyDtoH(back, buf[i], size[i]));
        ncalls++;
        ntransfers++;
        printf("buffer %2d %7zu bytes checksum %016llx\n", i, size[i],
               (unsigned long long)fnv(0xcbf29ce484222325ULL, back, size[i]));
    }
    printf("reads checksum %016llx\n", (unsigned long long)reads);
    printf("calls %lu transfers %lu\n", ncalls, ntransfers);
    for (int i = 0; i < NBUF; i++)
        CK(cuMemFree(buf[i]));
    CK(cuMemFreeHost(pinned));
    CK(cuStreamDestroy(s));
    CK(cuDevicePrimaryCtxRelease(dev));
    free(page);
    free(back);
    return 0;
}
