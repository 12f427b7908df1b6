/*
 * test_sn_sim_apis.c — a program that uses the runtime entry points libsn
 * hooks beyond cudaMalloc/cudaMemcpy (pitched allocation and 2-D sets,
 * managed memory, stream-ordered allocation, peer copies, events recorded
 * with flags, stream capture and graph launch, with their _ptds/_ptsz
 * twins), checks their results, and prints what each call returned.
 *
 * Run on its own it tests the simulator; test_sn_sim_apis.sh runs it again
 * under LD_PRELOAD=libsn.so in every SN_MODE and requires the same probe
 * lines, so libsn's wrappers of these functions are exercised and must not
 * change what the program sees. Results are checked, not timings: libsn's
 * own calls take host time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>

#include "sim/simgpu.h"

#define MiB ((size_t)1 << 20)

cudaError_t cudaMemset2D_ptds(void *devPtr, size_t pitch, int value, size_t width, size_t height);
cudaError_t cudaMemset2DAsync_ptsz(void *devPtr, size_t pitch, int value, size_t width, size_t height,
                                   cudaStream_t stream);
cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream, unsigned int flags);
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream);

static void probe(const char *name, int rc)
{
    printf("probe %-44s rc=%d last=%d\n", name, rc, (int)cudaPeekAtLastError());
    (void)cudaGetLastError();
}

static void test_pitch_and_2d_sets(void **state)
{
    (void)state;
    enum { W = 200, H = 6 };
    unsigned char *d, img[1024 * H];
    size_t pitch = 0;
    cudaError_t rc = cudaMallocPitch((void **)&d, &pitch, W, H);
    probe("cudaMallocPitch", rc);
    assert_int_equal(rc, cudaSuccess);
    printf("probe pitch %zu\n", pitch);
    cudaStream_t s;
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    const unsigned char v[4] = {0x11, 0x22, 0x33, 0x44};
    for (int which = 0; which < 4; which++) {
        assert_int_equal(cudaMemset(d, 0xEE, pitch * H), cudaSuccess);
        switch (which) {
        case 0: rc = cudaMemset2D(d, pitch, v[0], W, H); break;
        case 1: rc = cudaMemset2D_ptds(d, pitch, v[1], W, H); break;
        case 2: rc = cudaMemset2DAsync(d, pitch, v[2], W, H, s); break;
        default: rc = cudaMemset2DAsync_ptsz(d, pitch, v[3], W, H, NULL); break;
        }
        probe("cudaMemset2D (4 forms)", rc);
        assert_int_equal(rc, cudaSuccess);
        assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
        assert_int_equal(cudaMemcpy2D(img, pitch, d, pitch, pitch, H, cudaMemcpyDeviceToHost), cudaSuccess);
        for (size_t r = 0; r < H; r++) {
            assert_int_equal(img[r * pitch], v[which]);
            assert_int_equal(img[r * pitch + W - 1], v[which]);
            assert_int_equal(img[r * pitch + W], 0xEE);
        }
    }
    probe("cudaMemset2D(width > pitch)", cudaMemset2D(d, 16, 0, W, H));
    probe("cudaMallocPitch(NULL pitch)", cudaMallocPitch((void **)&d, NULL, W, H));
    cudaStreamDestroy(s);
    assert_int_equal(cudaFree(d), cudaSuccess);
}

static void test_managed(void **state)
{
    (void)state;
    unsigned char *m;
    cudaError_t rc = cudaMallocManaged((void **)&m, MiB, cudaMemAttachGlobal);
    probe("cudaMallocManaged", rc);
    assert_int_equal(rc, cudaSuccess);
    memset(m, 7, MiB);
    assert_int_equal(cudaMemset(m, 9, MiB / 2), cudaSuccess);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    assert_int_equal(m[0], 9);
    assert_int_equal(m[MiB - 1], 7);
    probe("cudaMallocManaged(bad flags)", cudaMallocManaged((void **)&m, MiB, 0));
    assert_int_equal(cudaFree(m), cudaSuccess);
}

static void test_stream_ordered(void **state)
{
    (void)state;
    cudaStream_t s;
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    unsigned char *p, *q, host[4096];
    cudaError_t rc = cudaMallocAsync((void **)&p, MiB, s);
    probe("cudaMallocAsync", rc);
    assert_int_equal(rc, cudaSuccess);
    assert_int_equal(cudaMemsetAsync(p, 5, MiB, s), cudaSuccess);
    assert_int_equal(cudaMemcpyAsync(host, p, sizeof host, cudaMemcpyDeviceToHost, s), cudaSuccess);
    rc = cudaFreeAsync(p, s);
    probe("cudaFreeAsync", rc);
    assert_int_equal(cudaMallocAsync((void **)&q, MiB, s), cudaSuccess);
    printf("probe same-stream reuse %d\n", q == p);
    assert_int_equal(cudaFreeAsync(q, s), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    assert_int_equal(host[0], 5);
    assert_int_equal(host[4095], 5);
    rc = cudaMallocAsync_ptsz((void **)&p, MiB, NULL);
    probe("cudaMallocAsync_ptsz", rc);
    assert_int_equal(cudaMemsetAsync(p, 1, MiB, cudaStreamPerThread), cudaSuccess);
    probe("cudaFreeAsync_ptsz", cudaFreeAsync_ptsz(p, NULL));
    probe("cudaFreeAsync twice", cudaFreeAsync_ptsz(p, NULL));
    assert_int_equal(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
    cudaStreamDestroy(s);
}

static void test_peer(void **state)
{
    (void)state;
    int n = 0;
    assert_int_equal(cudaGetDeviceCount(&n), cudaSuccess);
    int other = n > 1 ? 1 : 0;
    printf("probe peer between devices 0 and %d\n", other);
    unsigned char *a, *b, host[4096];
    assert_int_equal(cudaSetDevice(0), cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&a, sizeof host), cudaSuccess);
    assert_int_equal(cudaMemset(a, 0x6B, sizeof host), cudaSuccess);
    assert_int_equal(cudaSetDevice(other), cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&b, sizeof host), cudaSuccess);
    cudaError_t rc = cudaMemcpyPeer(b, other, a, 0, sizeof host);
    probe("cudaMemcpyPeer", rc);
    assert_int_equal(cudaMemcpy(host, b, sizeof host, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_int_equal(host[0], 0x6B);
    assert_int_equal(cudaMemset(b, 0, sizeof host), cudaSuccess);
    cudaStream_t s;
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    rc = cudaMemcpyPeerAsync(b, other, a, 0, sizeof host, s);
    probe("cudaMemcpyPeerAsync", rc);
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    assert_int_equal(cudaMemcpy(host, b, sizeof host, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_int_equal(host[4095], 0x6B);
    probe("cudaMemcpyPeer(wrong device)", cudaMemcpyPeer(b, 7, a, 0, sizeof host));
    cudaStreamDestroy(s);
    cudaFree(b);
    assert_int_equal(cudaSetDevice(0), cudaSuccess);
    cudaFree(a);
}

static void test_events_with_flags(void **state)
{
    (void)state;
    void *d;
    assert_int_equal(cudaMalloc(&d, 64 * MiB), cudaSuccess);
    cudaStream_t s;
    cudaEvent_t a, b;
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    probe("cudaEventRecordWithFlags", cudaEventRecordWithFlags(a, s, cudaEventRecordDefault));
    assert_int_equal(cudaMemsetAsync(d, 0, 64 * MiB, s), cudaSuccess);
    probe("cudaEventRecordWithFlags(external)", cudaEventRecordWithFlags(b, s, cudaEventRecordExternal));
    float ms = 0;
    assert_int_equal(cudaEventSynchronize(b), cudaSuccess);
    assert_int_equal(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
    assert_true(ms > 0.2f); /* 64 MiB at 288 GB/s */
    probe("cudaEventRecordWithFlags_ptsz", cudaEventRecordWithFlags_ptsz(a, NULL, 0));
    probe("cudaEventRecordWithFlags(bad flags)", cudaEventRecordWithFlags(a, s, 6));
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaStreamDestroy(s);
    cudaFree(d);
}

static void k_inc(void **args, dim3 grid, dim3 block)
{
    (void)grid;
    (void)block;
    unsigned char *x = *(unsigned char **)args[0];
    int n = *(int *)args[1];
    for (int i = 0; i < n; i++)
        x[i]++;
}

static void test_graphs(void **state)
{
    (void)state;
    static const size_t sizes[2] = {sizeof(void *), sizeof(int)};
    assert_int_equal(simgpu_register_host_kernel(k_inc, "k_inc", 2, sizes), 0);
    enum { N = 4096 };
    unsigned char *d, *pin;
    assert_int_equal(cudaMalloc((void **)&d, N), cudaSuccess);
    assert_int_equal(cudaMallocHost((void **)&pin, N), cudaSuccess);
    memset(pin, 0, N);
    cudaStream_t s;
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    int n = N;
    void *args[2] = {&d, &n};
    dim3 one = {1, 1, 1};
    cudaError_t rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    probe("cudaStreamBeginCapture", rc);
    assert_int_equal(cudaMemsetAsync(d, 40, N, s), cudaSuccess);
    assert_int_equal(cudaLaunchKernel((const void *)k_inc, one, one, args, 0, s), cudaSuccess);
    assert_int_equal(cudaMemcpyAsync(pin, d, N, cudaMemcpyDeviceToHost, s), cudaSuccess);
    cudaGraph_t g;
    rc = cudaStreamEndCapture(s, &g);
    probe("cudaStreamEndCapture", rc);
    assert_int_equal(rc, cudaSuccess);
    assert_int_equal(pin[0], 0); /* captured, not run */
    cudaGraphExec_t exec;
    probe("cudaGraphInstantiate", cudaGraphInstantiate(&exec, g, 0));
    probe("cudaGraphLaunch", cudaGraphLaunch(exec, s));
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    assert_int_equal(pin[0], 41);
    assert_int_equal(pin[N - 1], 41);
    memset(pin, 0, N);
    probe("cudaGraphLaunch_ptsz", cudaGraphLaunch_ptsz(exec, NULL));
    assert_int_equal(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
    assert_int_equal(pin[0], 41);
    probe("cudaGraphLaunch(NULL)", cudaGraphLaunch(NULL, s));
    probe("cudaGraphExecDestroy", cudaGraphExecDestroy(exec));
    probe("cudaGraphDestroy", cudaGraphDestroy(g));
    cudaStreamDestroy(s);
    cudaFreeHost(pin);
    cudaFree(d);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pitch_and_2d_sets), cmocka_unit_test(test_managed),
        cmocka_unit_test(test_stream_ordered),    cmocka_unit_test(test_peer),
        cmocka_unit_test(test_events_with_flags), cmocka_unit_test(test_graphs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
