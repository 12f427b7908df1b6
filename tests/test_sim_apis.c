/*
 * test_sim_apis.c — runtime entry points an interposer hooks and programs
 * use beyond cudaMalloc/cudaMemcpy: pitched allocation and 2-D sets,
 * managed memory, peer copies between two devices, events recorded with
 * flags, and the per-thread-default-stream twins (_ptds/_ptsz) of each, on
 * the simulated device. Results, error codes for bad arguments, and the
 * modelled time where the call has one.
 *
 * Timing figures are the default k40 profile's (README, "Device profiles"):
 * pinned PCIe 10 GB/s, device memory 288 GB/s, 5 us per op, 2 us of host
 * time per issuing call.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "tests/sim_child.h"

#define MiB ((size_t)1 << 20)
#define K40_PINNED 12.18e9 /* a peer copy: the slower of D2H (12.46) and H2D (12.18) */
#define K40_MEMBW 288e9
#define K40_LAUNCH_MS 0.005
#define HOST_CALL_MS 0.002

/* The per-thread-default-stream twins, declared by the headers only for
 * programs built with --default-stream per-thread. */
cudaError_t cudaMemset2D_ptds(void *devPtr, size_t pitch, int value, size_t width, size_t height);
cudaError_t cudaMemset2DAsync_ptsz(void *devPtr, size_t pitch, int value, size_t width, size_t height,
                                   cudaStream_t stream);
cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              enum cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                   size_t height, enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream, unsigned int flags);

static float elapsed(cudaEvent_t a, cudaEvent_t b)
{
    float ms = -1;
    assert_int_equal(cudaEventSynchronize(b), cudaSuccess);
    assert_int_equal(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
    return ms;
}

static size_t used_bytes(void)
{
    size_t fr, tot;
    assert_int_equal(cudaMemGetInfo(&fr, &tot), cudaSuccess);
    return tot - fr;
}

/* ---- pitched memory ------------------------------------------------------------ */

static void test_malloc_pitch(void **state)
{
    (void)state;
    enum { W = 100, H = 7 };
    size_t before = used_bytes(), pitch = 0;
    unsigned char *d = NULL;
    assert_int_equal(cudaMallocPitch((void **)&d, &pitch, W, H), cudaSuccess);
    /* Rows are 512-byte aligned, as on the profiles' GPUs. */
    assert_int_equal(pitch, 512);
    assert_int_equal((uintptr_t)d % 512, 0);
    assert_int_equal(used_bytes() - before, 512 * H);
    unsigned char src[W * H], out[W * H];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (unsigned char)(i * 7 + 3);
    assert_int_equal(cudaMemcpy2D(d, pitch, src, W, W, H, cudaMemcpyHostToDevice), cudaSuccess);
    memset(out, 0, sizeof out);
    assert_int_equal(cudaMemcpy2D(out, W, d, pitch, W, H, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_memory_equal(out, src, sizeof src);
    assert_int_equal(cudaFree(d), cudaSuccess);

    size_t p2;
    void *e;
    assert_int_equal(cudaMallocPitch(&e, &p2, 512, 2), cudaSuccess);
    assert_int_equal(p2, 512);
    assert_int_equal(cudaFree(e), cudaSuccess);
    assert_int_equal(cudaMallocPitch(&e, &p2, 513, 2), cudaSuccess);
    assert_int_equal(p2, 1024);
    assert_int_equal(cudaFree(e), cudaSuccess);

    assert_int_equal(cudaMallocPitch(NULL, &p2, 16, 16), cudaErrorInvalidValue);
    assert_int_equal(cudaMallocPitch(&e, NULL, 16, 16), cudaErrorInvalidValue);
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidValue);
    /* Past the maximum pitch, and more than the device holds. */
    assert_int_equal(cudaMallocPitch(&e, &p2, (size_t)1 << 32, 1), cudaErrorInvalidValue);
    assert_int_equal(cudaMallocPitch(&e, &p2, (size_t)1 << 20, (size_t)1 << 20), cudaErrorMemoryAllocation);
    assert_int_equal(cudaGetLastError(), cudaErrorMemoryAllocation);
    assert_int_equal(used_bytes(), before);
}

static void test_memset2d(void **state)
{
    (void)state;
    enum { W = 300, H = 5 };
    size_t pitch;
    unsigned char *d;
    assert_int_equal(cudaMallocPitch((void **)&d, &pitch, W, H), cudaSuccess);
    unsigned char img[512 * H];
    cudaStream_t s;
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);

    struct { int which; unsigned char v; } cases[] = {{0, 0x5A}, {1, 0x61}, {2, 0x72}, {3, 0x83}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        assert_int_equal(cudaMemset(d, 0xEE, pitch * H), cudaSuccess);
        unsigned char v = cases[c].v;
        switch (cases[c].which) {
        case 0: assert_int_equal(cudaMemset2D(d, pitch, v, W, H), cudaSuccess); break;
        case 1: assert_int_equal(cudaMemset2D_ptds(d, pitch, v, W, H), cudaSuccess); break;
        case 2: assert_int_equal(cudaMemset2DAsync(d, pitch, v, W, H, s), cudaSuccess); break;
        case 3: assert_int_equal(cudaMemset2DAsync_ptsz(d, pitch, v, W, H, NULL), cudaSuccess); break;
        }
        assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
        assert_int_equal(cudaMemcpy(img, d, pitch * H, cudaMemcpyDeviceToHost), cudaSuccess);
        for (size_t r = 0; r < H; r++)
            for (size_t x = 0; x < pitch; x++)
                assert_int_equal(img[r * pitch + x], x < W ? v : 0xEE); /* padding untouched */
    }

    int host;
    assert_int_equal(cudaMemset2D(d, 100, 1, W, H), cudaErrorInvalidValue); /* width > pitch */
    assert_int_equal(cudaMemset2D(&host, 4, 1, 4, 1), cudaErrorInvalidValue); /* not device memory */
    assert_int_equal(cudaMemset2D(d, pitch, 1, 0, H), cudaSuccess);         /* nothing to set */
    cudaStream_t gone;
    assert_int_equal(cudaStreamCreate(&gone), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(gone), cudaSuccess);
    assert_int_equal(cudaMemset2DAsync(d, pitch, 1, W, H, gone), cudaErrorInvalidResourceHandle);
    (void)cudaGetLastError();

    /* Timed like a memset of width x height bytes. */
    const size_t bw = 4096, bh = 1024;
    void *big;
    size_t bp;
    assert_int_equal(cudaMallocPitch(&big, &bp, bw, bh), cudaSuccess);
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventRecord(a, s);
    assert_int_equal(cudaMemset2DAsync(big, bp, 0, bw, bh, s), cudaSuccess);
    cudaEventRecord(b, s);
    assert_float_equal(elapsed(a, b), (double)bw * bh / K40_MEMBW * 1e3 + K40_LAUNCH_MS + HOST_CALL_MS, 1e-4);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaStreamDestroy(s);
    cudaFree(big);
    cudaFree(d);
}

static void test_memcpy2d_twins(void **state)
{
    (void)state;
    enum { W = 33, H = 9, P = 64 };
    unsigned char src[W * H], out[W * H];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (unsigned char)(i ^ 0x5c);
    void *d;
    assert_int_equal(cudaMalloc(&d, P * H), cudaSuccess);
    assert_int_equal(cudaMemcpy2D_ptds(d, P, src, W, W, H, cudaMemcpyHostToDevice), cudaSuccess);
    assert_int_equal(cudaMemcpy2DAsync_ptsz(out, W, d, P, W, H, cudaMemcpyDeviceToHost, NULL), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
    assert_memory_equal(out, src, sizeof src);
    assert_int_equal(cudaMemcpy2D_ptds(d, 8, src, W, W, H, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    (void)cudaGetLastError();
    cudaFree(d);
}

/* ---- managed memory --------------------------------------------------------------- */

/* The host reads and writes managed memory directly, the device works on it
 * as on any allocation, and it counts against the device's memory. */
static int body_managed(void)
{
    const size_t n = MiB;
    size_t fr0, fr1, tot;
    CHILD_CHECK(cudaMemGetInfo(&fr0, &tot) == cudaSuccess);
    unsigned char *m = NULL;
    CHILD_CHECK(cudaMallocManaged((void **)&m, n, cudaMemAttachGlobal) == cudaSuccess && m != NULL);
    CHILD_CHECK(cudaMemGetInfo(&fr1, &tot) == cudaSuccess && fr0 - fr1 == n);
    for (size_t i = 0; i < n; i++)
        m[i] = (unsigned char)i;
    unsigned long sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += m[i];
    CHILD_CHECK(sum == n / 256 * (255 * 256 / 2));
    unsigned char *d;
    CHILD_CHECK(cudaMalloc((void **)&d, n) == cudaSuccess);
    CHILD_CHECK(cudaMemcpy(d, m, n, cudaMemcpyDefault) == cudaSuccess);
    CHILD_CHECK(cudaMemset(m, 0x3C, n / 2) == cudaSuccess);
    CHILD_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    /* With compute off the device ops do no arithmetic: only the host's own
     * accesses above are checked then. */
    int compute = getenv("SIMGPU_COMPUTE") == NULL;
    CHILD_CHECK(!compute || (m[0] == 0x3C && m[n / 2 - 1] == 0x3C && m[n / 2] == (unsigned char)(n / 2)));
    CHILD_CHECK(cudaMemcpy(m, d, n, cudaMemcpyDefault) == cudaSuccess);
    CHILD_CHECK(!compute || (m[0] == 0 && m[n - 1] == (unsigned char)(n - 1)));

    struct cudaPointerAttributes at;
    CHILD_CHECK(cudaPointerGetAttributes(&at, m + 10) == cudaSuccess);
    CHILD_CHECK(at.type == cudaMemoryTypeManaged && at.device == 0);
    CHILD_CHECK(at.devicePointer == m + 10 && at.hostPointer == m + 10);
    CHILD_CHECK(cudaPointerGetAttributes(&at, d) == cudaSuccess && at.type == cudaMemoryTypeDevice);
    int managed = -1;
    CHILD_CHECK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, (CUdeviceptr)m) == CUDA_SUCCESS);
    CHILD_CHECK(managed == 1);
    CHILD_CHECK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, (CUdeviceptr)d) == CUDA_SUCCESS);
    CHILD_CHECK(managed == 0);

    void *h;
    CHILD_CHECK(cudaMallocManaged(&h, 4096, cudaMemAttachHost) == cudaSuccess);
    CHILD_CHECK(cudaMallocManaged(&h, 4096, 0) == cudaErrorInvalidValue);
    CHILD_CHECK(cudaMallocManaged(&h, 4096, cudaMemAttachGlobal | cudaMemAttachHost) == cudaErrorInvalidValue);
    CHILD_CHECK(cudaMallocManaged(&h, 4096, cudaMemAttachSingle) == cudaErrorInvalidValue);
    CHILD_CHECK(cudaMallocManaged(&h, 0, cudaMemAttachGlobal) == cudaErrorInvalidValue);
    CHILD_CHECK(cudaMallocManaged(NULL, 4096, cudaMemAttachGlobal) == cudaErrorInvalidValue);
    CHILD_CHECK(cudaFree(m) == cudaSuccess && cudaFree(d) == cudaSuccess);
    int attr = -1;
    CHILD_CHECK(cudaDeviceGetAttribute(&attr, cudaDevAttrManagedMemory, 0) == cudaSuccess && attr == 1);
    return 0;
}

static void test_managed_memory(void **state)
{
    (void)state;
    assert_true(CHILD_OK(sim_child_run(NULL, "body_managed")));
    /* With compute off device memory is never committed, but managed
     * memory is: the host still reads and writes it. */
    const char *off[] = {"SIMGPU_COMPUTE=0", NULL};
    assert_true(CHILD_OK(sim_child_run(off, "body_managed")));
}

/* ---- peer copies ------------------------------------------------------------------ */

static int body_peer(void)
{
    const size_t n = 64 * MiB;
    unsigned char *a, *b, *pin;
    CHILD_CHECK(cudaSetDevice(0) == cudaSuccess && cudaMalloc((void **)&a, n) == cudaSuccess);
    CHILD_CHECK(cudaMallocHost((void **)&pin, n) == cudaSuccess);
    for (size_t i = 0; i < n; i += 4096)
        pin[i] = (unsigned char)(i >> 12);
    CHILD_CHECK(cudaMemcpy(a, pin, n, cudaMemcpyHostToDevice) == cudaSuccess);
    CHILD_CHECK(cudaSetDevice(1) == cudaSuccess && cudaMalloc((void **)&b, n) == cudaSuccess);

    /* Async on a stream of device 1: one PCIe pass at the pinned rate. */
    cudaStream_t s1;
    cudaEvent_t e0, e1;
    CHILD_CHECK(cudaStreamCreate(&s1) == cudaSuccess);
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    cudaEventRecord(e0, s1);
    CHILD_CHECK(cudaMemcpyPeerAsync(b, 1, a, 0, n, s1) == cudaSuccess);
    cudaEventRecord(e1, s1);
    CHILD_CHECK(cudaEventSynchronize(e1) == cudaSuccess);
    float ms = 0;
    CHILD_CHECK(cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess);
    double want = n / K40_PINNED * 1e3 + K40_LAUNCH_MS + HOST_CALL_MS;
    CHILD_CHECK(ms > want - 1e-3 && ms < want + 1e-3);
    memset(pin, 0, n);
    CHILD_CHECK(cudaMemcpy(pin, b, n, cudaMemcpyDeviceToHost) == cudaSuccess);
    for (size_t i = 0; i < n; i += 4096)
        CHILD_CHECK(pin[i] == (unsigned char)(i >> 12));

    /* cudaMemcpyPeer returns before the copy is done, and later work on the
     * source device, even on a non-blocking stream, starts after it. */
    CHILD_CHECK(cudaSetDevice(0) == cudaSuccess);
    cudaStream_t ns0;
    cudaEvent_t f0, f1, f2;
    CHILD_CHECK(cudaStreamCreateWithFlags(&ns0, cudaStreamNonBlocking) == cudaSuccess);
    cudaEventCreate(&f0);
    cudaEventCreate(&f1);
    cudaEventCreate(&f2);
    cudaEventRecord(f0, ns0);
    CHILD_CHECK(cudaMemcpyPeer(a, 0, b, 1, n) == cudaSuccess);
    cudaEventRecord(f1, ns0);
    CHILD_CHECK(cudaEventQuery(f1) == cudaErrorNotReady);
    CHILD_CHECK(cudaMemsetAsync(a, 0, 512, ns0) == cudaSuccess);
    cudaEventRecord(f2, ns0);
    CHILD_CHECK(cudaEventSynchronize(f2) == cudaSuccess);
    CHILD_CHECK(cudaEventElapsedTime(&ms, f0, f2) == cudaSuccess);
    CHILD_CHECK(ms > n / K40_PINNED * 1e3);

    /* Each pointer must belong to the device named with it. */
    CHILD_CHECK(cudaMemcpyPeer(b, 0, a, 0, n) == cudaErrorInvalidValue);
    CHILD_CHECK(cudaMemcpyPeer(b, 1, a, 1, n) == cudaErrorInvalidValue);
    CHILD_CHECK(cudaMemcpyPeer(b, 2, a, 0, n) == cudaErrorInvalidDevice);
    CHILD_CHECK(cudaMemcpyPeer(b, 1, pin, 0, 64) == cudaErrorInvalidValue);
    CHILD_CHECK(cudaMemcpyPeer(b, 1, a, 0, 0) == cudaSuccess);
    /* Within one device it is a device-to-device copy. */
    CHILD_CHECK(cudaMemcpyPeer(a + n / 2, 0, a, 0, 4096) == cudaSuccess);
    CHILD_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    return 0;
}

static void test_memcpy_peer(void **state)
{
    (void)state;
    const char *two[] = {"SIMGPU_DEVICES=2", NULL};
    assert_true(CHILD_OK(sim_child_run(two, "body_peer")));
}

/* ---- events ----------------------------------------------------------------------- */

static void test_event_record_with_flags(void **state)
{
    (void)state;
    const size_t n = 288 * MiB;
    void *d;
    assert_int_equal(cudaMalloc(&d, n), cudaSuccess);
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    assert_int_equal(cudaEventRecordWithFlags(a, s, cudaEventRecordDefault), cudaSuccess);
    cudaMemsetAsync(d, 0, n, s);
    assert_int_equal(cudaEventRecordWithFlags(b, s, cudaEventRecordExternal), cudaSuccess);
    assert_float_equal(elapsed(a, b), n / K40_MEMBW * 1e3 + K40_LAUNCH_MS + HOST_CALL_MS, 1e-4);
    assert_int_equal(cudaEventRecordWithFlags(a, s, 2), cudaErrorInvalidValue);
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidValue);
    /* The per-thread twin: NULL means the calling thread's default stream. */
    assert_int_equal(cudaEventRecordWithFlags_ptsz(a, NULL, 0), cudaSuccess);
    cudaMemsetAsync(d, 0, n, cudaStreamPerThread);
    assert_int_equal(cudaEventRecordWithFlags_ptsz(b, NULL, 0), cudaSuccess);
    assert_float_equal(elapsed(a, b), n / K40_MEMBW * 1e3 + K40_LAUNCH_MS + HOST_CALL_MS, 1e-4);
    cudaEvent_t gone;
    cudaEventCreate(&gone);
    cudaEventDestroy(gone);
    assert_int_equal(cudaEventRecordWithFlags(gone, s, 0), cudaErrorInvalidResourceHandle);
    (void)cudaGetLastError();
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaStreamDestroy(s);
    cudaFree(d);
}

static const struct sim_child_body k_bodies[] = {
    {"body_managed", body_managed},
    {"body_peer", body_peer},
};

int main(int argc, char **argv)
{
    sim_child_main(argc, argv, k_bodies, sizeof k_bodies / sizeof k_bodies[0]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_malloc_pitch),
        cmocka_unit_test(test_memset2d),
        cmocka_unit_test(test_memcpy2d_twins),
        cmocka_unit_test(test_managed_memory),
        cmocka_unit_test(test_memcpy_peer),
        cmocka_unit_test(test_event_record_with_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
