/*
 * test_sim_runtime.c — the simulated CUDA runtime and driver, seen the way an
 * unmodified program sees them: this file is compiled against the real CUDA
 * headers, linked against the real libcudart/libcuda import names, and runs
 * on the simulator only because LD_LIBRARY_PATH points at build/sim.
 *
 * Timing assertions use the default k40 profile's figures (README, "Device
 * profiles"): pinned PCIe 10 GB/s, pageable 6 GB/s, device memory 288 GB/s,
 * 5 us per op.
 */
#include <dlfcn.h>
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
#include <fatbinary_section.h>

#include "tests/sim_child.h"

#define MiB ((size_t)1 << 20)
#define K40_PINNED 12.18e9 /* host to device; the profile's PCIe 3 bandwidthTest figure */
#define K40_PAGEABLE 6.0e9
#define K40_MEMBW 288e9
#define K40_LAUNCH_MS 0.005
#define HOST_CALL_MS 0.002 /* the host's cost of issuing one op */

static float elapsed(cudaEvent_t a, cudaEvent_t b)
{
    float ms = -1;
    assert_int_equal(cudaEventSynchronize(a), cudaSuccess);
    assert_int_equal(cudaEventSynchronize(b), cudaSuccess);
    assert_int_equal(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
    return ms;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)((i * 2654435761u + seed) >> 13);
}

/* ---- capacity -------------------------------------------------------------- */

static int body_capacity(void)
{
    size_t fr, tot;
    CHILD_CHECK(cudaMemGetInfo(&fr, &tot) == cudaSuccess);
    CHILD_CHECK(tot == 64 * MiB && fr == tot);
    void *a, *b, *c;
    CHILD_CHECK(cudaMalloc(&a, 40 * MiB) == cudaSuccess);
    CHILD_CHECK(cudaMemGetInfo(&fr, &tot) == cudaSuccess && fr == 24 * MiB);
    CHILD_CHECK(cudaMalloc(&b, 30 * MiB) == cudaErrorMemoryAllocation);
    /* Out of memory is reported once and is not sticky. */
    CHILD_CHECK(cudaGetLastError() == cudaErrorMemoryAllocation);
    CHILD_CHECK(cudaGetLastError() == cudaSuccess);
    CHILD_CHECK(cudaMalloc(&c, 20 * MiB) == cudaSuccess);
    CHILD_CHECK(cudaFree(a) == cudaSuccess);
    CHILD_CHECK(cudaMalloc(&b, 30 * MiB) == cudaSuccess);
    CHILD_CHECK(cudaFree(b) == cudaSuccess && cudaFree(c) == cudaSuccess);
    CHILD_CHECK(cudaMemGetInfo(&fr, &tot) == cudaSuccess && fr == tot);
    /* Small allocations are accounted in 512-byte units. */
    CHILD_CHECK(cudaMalloc(&a, 1) == cudaSuccess);
    CHILD_CHECK(cudaMemGetInfo(&fr, &tot) == cudaSuccess && tot - fr == 512);
    CHILD_CHECK(((uintptr_t)a & 255) == 0);
    return 0;
}

static void test_capacity_and_oom(void **state)
{
    (void)state;
    const char *env[] = {"SIMGPU_MEM=64M", NULL};
    assert_true(CHILD_OK(sim_child_run(env, "body_capacity")));
}

/* Fault injection: the third device allocation fails (then, with "+",
 * every later one), as if the device were full at that moment. */
static int body_fault_once(void)
{
    void *p[4];
    CHILD_CHECK(cudaMalloc(&p[0], 4096) == cudaSuccess);
    CHILD_CHECK(cudaMalloc(&p[1], 4096) == cudaSuccess);
    CHILD_CHECK(cudaMalloc(&p[2], 4096) == cudaErrorMemoryAllocation);
    CHILD_CHECK(cudaMalloc(&p[3], 4096) == cudaSuccess);
    size_t fr, tot;
    CHILD_CHECK(cudaMemGetInfo(&fr, &tot) == cudaSuccess && tot - fr == 3 * 4096);
    return 0;
}

static int body_fault_from(void)
{
    cuInit(0);
    void *p[2];
    CHILD_CHECK(cudaMalloc(&p[0], 4096) == cudaSuccess);
    CHILD_CHECK(cudaMalloc(&p[1], 4096) == cudaErrorMemoryAllocation);
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemGenericAllocationHandle h;
    CHILD_CHECK(cuMemCreate(&h, 2 * MiB, &prop, 0) == CUDA_ERROR_OUT_OF_MEMORY);
    return 0;
}

static void test_fault_injection(void **state)
{
    (void)state;
    const char *once[] = {"SIMGPU_FAULT_ALLOC=3", NULL};
    assert_true(CHILD_OK(sim_child_run(once, "body_fault_once")));
    const char *from[] = {"SIMGPU_FAULT_ALLOC=2+", NULL};
    assert_true(CHILD_OK(sim_child_run(from, "body_fault_from")));
}

static void test_bad_config_falls_back(void **state)
{
    (void)state;
    size_t fr, tot;
    /* The parent process runs with the defaults: the k40's memory. */
    assert_int_equal(cudaMemGetInfo(&fr, &tot), cudaSuccess);
    assert_int_equal(tot, 11996954624ull);
}

/* ---- copies ---------------------------------------------------------------- */

static void test_memcpy_all_kinds_bit_exact(void **state)
{
    (void)state;
    const size_t n = 3 * MiB + 17;
    unsigned char *src = malloc(n), *dst = malloc(n), *pin, *pin2;
    void *d1, *d2;
    assert_int_equal(cudaMallocHost((void **)&pin, n), cudaSuccess);
    assert_int_equal(cudaHostAlloc((void **)&pin2, n, cudaHostAllocDefault), cudaSuccess);
    assert_int_equal(cudaMalloc(&d1, n), cudaSuccess);
    assert_int_equal(cudaMalloc(&d2, n), cudaSuccess);
    fill(src, n, 1);

    assert_int_equal(cudaMemcpy(d1, src, n, cudaMemcpyHostToDevice), cudaSuccess);       /* pageable */
    assert_int_equal(cudaMemcpy(d2, d1, n, cudaMemcpyDeviceToDevice), cudaSuccess);
    assert_int_equal(cudaMemcpy(pin, d2, n, cudaMemcpyDeviceToHost), cudaSuccess);       /* pinned */
    assert_memory_equal(pin, src, n);
    assert_int_equal(cudaMemcpy(pin2, pin, n, cudaMemcpyHostToHost), cudaSuccess);
    assert_memory_equal(pin2, src, n);

    fill(src, n, 2);
    memcpy(pin, src, n);
    assert_int_equal(cudaMemcpy(d1, pin, n, cudaMemcpyDefault), cudaSuccess);
    assert_int_equal(cudaMemcpy(d2, d1, n, cudaMemcpyDefault), cudaSuccess);
    assert_int_equal(cudaMemcpy(dst, d2, n, cudaMemcpyDefault), cudaSuccess);
    assert_memory_equal(dst, src, n);

    cudaStream_t s;
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    fill(src, n, 3);
    memcpy(pin, src, n);
    memset(pin2, 0, n);
    assert_int_equal(cudaMemcpyAsync(d1, pin, n, cudaMemcpyHostToDevice, s), cudaSuccess);
    assert_int_equal(cudaMemcpyAsync(d2, d1, n, cudaMemcpyDeviceToDevice, s), cudaSuccess);
    assert_int_equal(cudaMemcpyAsync(pin2, d2, n, cudaMemcpyDeviceToHost, s), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    assert_memory_equal(pin2, src, n);

    /* A kind that contradicts the pointers is rejected; so is a bad kind. */
    assert_int_equal(cudaMemcpy(d1, src, n, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidValue);
    assert_int_equal(cudaMemcpy(d1, src, n, (enum cudaMemcpyKind)9), cudaErrorInvalidMemcpyDirection);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
    cudaFree(d1);
    cudaFree(d2);
    cudaFreeHost(pin);
    cudaFreeHost(pin2);
    free(src);
    free(dst);
}

static void test_memcpy2d_and_memset(void **state)
{
    (void)state;
    enum { W = 37, H = 11, DP = 64, SP = 50 };
    unsigned char src[SP * H], out[W * H];
    fill(src, sizeof src, 7);
    void *d;
    assert_int_equal(cudaMalloc(&d, DP * H), cudaSuccess);
    assert_int_equal(cudaMemset(d, 0xAB, DP * H), cudaSuccess);
    assert_int_equal(cudaMemcpy2D(d, DP, src, SP, W, H, cudaMemcpyHostToDevice), cudaSuccess);
    assert_int_equal(cudaMemcpy2D(out, W, d, DP, W, H, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int r = 0; r < H; r++)
        assert_memory_equal(out + r * W, src + r * SP, W);
    unsigned char pad[DP - W];
    assert_int_equal(cudaMemcpy(pad, (char *)d + W, DP - W, cudaMemcpyDeviceToHost), cudaSuccess);
    for (size_t i = 0; i < sizeof pad; i++)
        assert_int_equal(pad[i], 0xAB);
    /* width larger than a pitch is invalid */
    assert_int_equal(cudaMemcpy2D(d, 8, src, SP, W, H, cudaMemcpyHostToDevice), cudaErrorInvalidValue);

    /* cuMemsetD32 writes whole words. */
    assert_int_equal(cuMemsetD32((CUdeviceptr)d, 0x01020304u, 4), CUDA_SUCCESS);
    uint32_t w[5];
    assert_int_equal(cudaMemcpy(w, d, sizeof w, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int i = 0; i < 4; i++)
        assert_int_equal(w[i], 0x01020304u);
    assert_int_not_equal(w[4], 0x01020304u); /* and stops after n words */
    assert_int_equal(cudaMemset(src, 0, 4), cudaErrorInvalidValue); /* host pointer */
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidValue);
    cudaFree(d);
}

/* ---- timeline ---------------------------------------------------------------- */

static void test_pinned_vs_pageable_timing(void **state)
{
    (void)state;
    const size_t n = 64 * MiB;
    void *d, *pin, *page = malloc(n);
    assert_int_equal(cudaMalloc(&d, n), cudaSuccess);
    assert_int_equal(cudaMallocHost(&pin, n), cudaSuccess);
    cudaEvent_t a, b, c;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventCreate(&c);
    cudaEventRecord(a, 0);
    cudaMemcpy(d, pin, n, cudaMemcpyHostToDevice);
    cudaEventRecord(b, 0);
    cudaMemcpy(d, page, n, cudaMemcpyHostToDevice);
    cudaEventRecord(c, 0);
    float t_pin = elapsed(a, b), t_page = elapsed(b, c);
    assert_float_equal(t_pin, n / K40_PINNED * 1e3 + K40_LAUNCH_MS, 0.01);
    assert_float_equal(t_page, n / K40_PAGEABLE * 1e3 + K40_LAUNCH_MS, 0.01);
    assert_true(t_page > 1.6f * t_pin);
    cudaFree(d);
    cudaFreeHost(pin);
    free(page);
}

static void test_copy_compute_overlap(void **state)
{
    (void)state;
    const size_t n = 64 * MiB, big = 512 * MiB;
    void *d, *dbig, *pin;
    assert_int_equal(cudaMalloc(&d, n), cudaSuccess);
    assert_int_equal(cudaMalloc(&dbig, big), cudaSuccess);
    assert_int_equal(cudaMallocHost(&pin, n), cudaSuccess);
    cudaStream_t s1, s2;
    cudaStreamCreate(&s1);
    cudaStreamCreate(&s2);
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    const float t_copy = n / K40_PINNED * 1e3, t_set = big / K40_MEMBW * 1e3;

    /* Two streams: the copy engine and the compute engine work at once. */
    cudaDeviceSynchronize();
    cudaEventRecord(a, 0);
    cudaMemcpyAsync(d, pin, n, cudaMemcpyHostToDevice, s1);
    cudaMemsetAsync(dbig, 1, big, s2);
    cudaEventRecord(b, 0); /* legacy stream: waits for both */
    float both = elapsed(a, b);
    float longest = t_copy > t_set ? t_copy : t_set;
    assert_true(both < longest + 0.1f);
    assert_true(both < 0.8f * (t_copy + t_set));

    /* One stream: they serialise. */
    cudaEventRecord(a, 0);
    cudaMemcpyAsync(d, pin, n, cudaMemcpyHostToDevice, s1);
    cudaMemsetAsync(dbig, 1, big, s1);
    cudaEventRecord(b, 0);
    float serial = elapsed(a, b);
    assert_true(serial >= t_copy + t_set);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
    cudaFree(d);
    cudaFree(dbig);
    cudaFreeHost(pin);
}

static void test_event_timing_matches_cost_model(void **state)
{
    (void)state;
    const size_t n = 288 * MiB;
    void *d;
    assert_int_equal(cudaMalloc(&d, n), cudaSuccess);
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaEvent_t a, b, nt;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventCreateWithFlags(&nt, cudaEventDisableTiming);
    cudaEventRecord(a, s);
    cudaMemsetAsync(d, 0, n, s);
    cudaEventRecord(b, s);
    /* Not finished yet in simulated time: queries say so until it is. */
    assert_int_equal(cudaEventQuery(b), cudaErrorNotReady);
    assert_int_equal(cudaGetLastError(), cudaSuccess); /* not-ready is not an error */
    int polls = 0;
    while (cudaEventQuery(b) == cudaErrorNotReady)
        polls++;
    assert_true(polls > 10);
    float ms;
    assert_int_equal(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
    /* the stream was idle: the op starts once the host has issued it */
    assert_float_equal(ms, n / K40_MEMBW * 1e3 + K40_LAUNCH_MS + HOST_CALL_MS, 1e-4);
    cudaEventRecord(nt, s);
    cudaEventSynchronize(nt);
    assert_int_equal(cudaEventElapsedTime(&ms, a, nt), cudaErrorInvalidResourceHandle);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaEventDestroy(nt);
    cudaStreamDestroy(s);
    cudaFree(d);
}

static void test_stream_wait_event_orders(void **state)
{
    (void)state;
    const size_t n = 256 * MiB;
    void *d1, *d2;
    assert_int_equal(cudaMalloc(&d1, n), cudaSuccess);
    assert_int_equal(cudaMalloc(&d2, 4096), cudaSuccess);
    cudaStream_t s1, s2;
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    cudaEvent_t e1, e2;
    cudaEventCreate(&e1);
    cudaEventCreate(&e2);

    /* Without a wait, a short op on s2 finishes before the long one on s1. */
    cudaMemsetAsync(d1, 0, n, s1);
    cudaEventRecord(e1, s1);
    cudaMemcpyAsync(d2, d2, 0, cudaMemcpyDeviceToDevice, s2);
    cudaEventRecord(e2, s2);
    assert_true(elapsed(e1, e2) < 0);
    cudaDeviceSynchronize();

    /* With cudaStreamWaitEvent it cannot. */
    cudaMemsetAsync(d1, 0, n, s1);
    cudaEventRecord(e1, s1);
    cudaStreamWaitEvent(s2, e1, 0);
    cudaMemsetAsync(d2, 0, 4096, s2);
    cudaEventRecord(e2, s2);
    assert_true(elapsed(e1, e2) >= K40_LAUNCH_MS);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
    cudaFree(d1);
    cudaFree(d2);
}

static void test_legacy_default_stream_synchronises(void **state)
{
    (void)state;
    const size_t n = 256 * MiB;
    void *d1, *d2;
    assert_int_equal(cudaMalloc(&d1, n), cudaSuccess);
    assert_int_equal(cudaMalloc(&d2, 4096), cudaSuccess);
    cudaStream_t blocking, nonblocking;
    cudaStreamCreate(&blocking);
    cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking);
    unsigned fl;
    assert_int_equal(cudaStreamGetFlags(nonblocking, &fl), cudaSuccess);
    assert_int_equal(fl, cudaStreamNonBlocking);
    cudaEvent_t e1, e2;
    cudaEventCreate(&e1);
    cudaEventCreate(&e2);

    /* Work on the legacy stream waits for a blocking stream... */
    cudaMemsetAsync(d1, 0, n, blocking);
    cudaEventRecord(e1, blocking);
    cudaMemsetAsync(d2, 0, 4096, 0);
    cudaEventRecord(e2, 0);
    assert_true(elapsed(e1, e2) > 0);
    /* ...and a blocking stream waits for the legacy stream. */
    cudaMemsetAsync(d1, 0, n, 0);
    cudaEventRecord(e1, 0);
    cudaMemsetAsync(d2, 0, 4096, blocking);
    cudaEventRecord(e2, blocking);
    assert_true(elapsed(e1, e2) > 0);
    cudaDeviceSynchronize();

    /* A non-blocking stream is exempt. */
    cudaMemsetAsync(d1, 0, n, nonblocking);
    cudaEventRecord(e1, nonblocking);
    cudaMemcpyAsync(d2, d2, 0, cudaMemcpyDeviceToDevice, 0);
    cudaEventRecord(e2, 0);
    assert_true(elapsed(e1, e2) < 0);
    /* The synchronous cudaMemcpy makes the host wait for the copy. */
    cudaStreamDestroy(blocking);
    cudaStreamDestroy(nonblocking);
    cudaFree(d1);
    cudaFree(d2);
}

/* ---- VMM ----------------------------------------------------------------------- */

static CUmemAllocationProp dev_prop(int dev)
{
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = dev;
    return p;
}

static CUmemAccessDesc rw(int dev)
{
    CUmemAccessDesc a;
    memset(&a, 0, sizeof a);
    a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a.location.id = dev;
    a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return a;
}

static void test_vmm_map_unmap_remap(void **state)
{
    (void)state;
    assert_int_equal(cuInit(0), CUDA_SUCCESS);
    int v = 0;
    assert_int_equal(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0),
                     CUDA_SUCCESS);
    assert_int_equal(v, 1);
    CUmemAllocationProp prop = dev_prop(0);
    size_t g = 0;
    assert_int_equal(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_SUCCESS);
    assert_int_equal(g, 2 * MiB);

    size_t fr0, fr1, tot;
    cudaMemGetInfo(&fr0, &tot);
    CUdeviceptr base;
    assert_int_equal(cuMemAddressReserve(&base, 2 * g, 0, 0, 0), CUDA_SUCCESS);
    assert_int_equal(base % g, 0);
    CUmemGenericAllocationHandle h1, h2;
    assert_int_equal(cuMemCreate(&h1, g, &prop, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemCreate(&h2, g, &prop, 0), CUDA_SUCCESS);
    cudaMemGetInfo(&fr1, &tot);
    assert_int_equal(fr0 - fr1, 2 * g); /* physical memory is what counts */

    CUmemAccessDesc acc = rw(0);
    unsigned char *pa = malloc(g), *pb = malloc(g), *out = malloc(g);
    fill(pa, g, 11);
    fill(pb, g, 12);
    /* h1 at base, h2 at base + g; write both through the runtime. */
    assert_int_equal(cuMemMap(base, g, 0, h1, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemMap(base + g, g, 0, h2, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemSetAccess(base, 2 * g, &acc, 1), CUDA_SUCCESS);
    unsigned long long fl = 0;
    assert_int_equal(cuMemGetAccess(&fl, &acc.location, base + 5), CUDA_SUCCESS);
    assert_int_equal(fl, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    assert_int_equal(cudaMemcpy((void *)base, pa, g, cudaMemcpyHostToDevice), cudaSuccess);
    assert_int_equal(cudaMemcpy((void *)(base + g), pb, g, cudaMemcpyHostToDevice), cudaSuccess);
    /* One copy may span adjacent mappings. */
    assert_int_equal(cudaMemcpy(out, (void *)(base + g / 2), g, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_memory_equal(out, pa + g / 2, g / 2);
    assert_memory_equal(out + g / 2, pb, g / 2);

    /* Swap the two physical pieces: the same addresses now show the other data. */
    assert_int_equal(cuMemUnmap(base, 2 * g), CUDA_SUCCESS);
    assert_int_equal(cuMemMap(base, g, 0, h2, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemMap(base + g, g, 0, h1, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemSetAccess(base, 2 * g, &acc, 1), CUDA_SUCCESS);
    assert_int_equal(cudaMemcpy(out, (void *)base, g, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_memory_equal(out, pb, g);
    assert_int_equal(cudaMemcpy(out, (void *)(base + g), g, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_memory_equal(out, pa, g);

    /* Release while mapped defers the free to the unmap. */
    assert_int_equal(cuMemRelease(h1), CUDA_SUCCESS);
    assert_int_equal(cuMemRelease(h1), CUDA_ERROR_INVALID_VALUE);
    cudaMemGetInfo(&fr1, &tot);
    assert_int_equal(fr0 - fr1, 2 * g);
    assert_int_equal(cuMemUnmap(base, g), CUDA_SUCCESS);
    assert_int_equal(cuMemUnmap(base + g, g), CUDA_SUCCESS);
    cudaMemGetInfo(&fr1, &tot);
    assert_int_equal(fr0 - fr1, g);
    assert_int_equal(cuMemRelease(h2), CUDA_SUCCESS);
    assert_int_equal(cuMemAddressFree(base, 2 * g), CUDA_SUCCESS);
    cudaMemGetInfo(&fr1, &tot);
    assert_int_equal(fr1, fr0);
    free(pa);
    free(pb);
    free(out);
}

static void test_vmm_rules(void **state)
{
    (void)state;
    cuInit(0);
    CUmemAllocationProp prop = dev_prop(0);
    const size_t g = 2 * MiB;
    CUdeviceptr base, other;
    CUmemGenericAllocationHandle h, big;
    assert_int_equal(cuMemAddressReserve(&base, 4 * g, 0, 0, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemAddressReserve(&other, g, 0, 0, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemAddressReserve(&other, g + 1, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemCreate(&h, g + 4096, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemCreate(&h, g, &prop, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemCreate(&big, 2 * g, &prop, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemMap(base, g, 4096, h, 0), CUDA_ERROR_INVALID_VALUE);     /* offset must be 0 */
    assert_int_equal(cuMemMap(base + 4096, g, 0, h, 0), CUDA_ERROR_INVALID_VALUE); /* unaligned */
    assert_int_equal(cuMemMap(base, 2 * g, 0, h, 0), CUDA_ERROR_INVALID_VALUE);    /* larger than handle */
    assert_int_equal(cuMemMap(base + 3 * g, 2 * g, 0, big, 0), CUDA_ERROR_INVALID_VALUE); /* leaves reservation */
    assert_int_equal(cuMemMap(base, g, 0, h, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemMap(base, g, 0, h, 0), CUDA_ERROR_INVALID_VALUE); /* already mapped */
    assert_int_equal(cuMemMap(base + g, 2 * g, 0, big, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemUnmap(base + g, g), CUDA_ERROR_INVALID_VALUE); /* part of a mapping */
    assert_int_equal(cuMemAddressFree(base, 4 * g), CUDA_ERROR_INVALID_VALUE); /* still mapped */
    assert_int_equal(cuMemUnmap(base, 3 * g), CUDA_SUCCESS);
    assert_int_equal(cuMemUnmap(base, g), CUDA_ERROR_INVALID_VALUE); /* not mapped any more */
    assert_int_equal(cuMemRelease(h), CUDA_SUCCESS);
    assert_int_equal(cuMemRelease(big), CUDA_SUCCESS);
    assert_int_equal(cuMemAddressFree(base, 4 * g), CUDA_SUCCESS);
    assert_int_equal(cuMemAddressFree(other, g), CUDA_SUCCESS);
    assert_int_equal(cuMemAddressFree(other, g), CUDA_ERROR_INVALID_VALUE);
}

static int body_vmm_capacity(void)
{
    cuInit(0);
    CUmemAllocationProp prop = dev_prop(0);
    CUmemGenericAllocationHandle h[8];
    for (int i = 0; i < 8; i++)
        CHILD_CHECK(cuMemCreate(&h[i], 2 * MiB, &prop, 0) == CUDA_SUCCESS);
    CUmemGenericAllocationHandle x;
    CHILD_CHECK(cuMemCreate(&x, 2 * MiB, &prop, 0) == CUDA_ERROR_OUT_OF_MEMORY);
    void *p;
    CHILD_CHECK(cudaMalloc(&p, 1) == cudaErrorMemoryAllocation);
    CHILD_CHECK(cuMemRelease(h[0]) == CUDA_SUCCESS);
    CHILD_CHECK(cudaMalloc(&p, MiB) == cudaSuccess);
    return 0;
}

static void test_vmm_counts_against_capacity(void **state)
{
    (void)state;
    const char *env[] = {"SIMGPU_MEM=16M", NULL};
    assert_true(CHILD_OK(sim_child_run(env, "body_vmm_capacity")));
}

/* Shared set-up of the fault bodies: one granule reserved and mapped RW, with
 * data in it; then the mapping is taken away. */
static CUdeviceptr g_fault_base;
static int fault_setup(int unmap, int set_access)
{
    cuInit(0);
    CUmemAllocationProp prop = dev_prop(0);
    CUmemGenericAllocationHandle h;
    CUmemAccessDesc acc = rw(0);
    CHILD_CHECK(cuMemAddressReserve(&g_fault_base, 2 * MiB, 0, 0, 0) == CUDA_SUCCESS);
    CHILD_CHECK(cuMemCreate(&h, 2 * MiB, &prop, 0) == CUDA_SUCCESS);
    CHILD_CHECK(cuMemMap(g_fault_base, 2 * MiB, 0, h, 0) == CUDA_SUCCESS);
    if (set_access)
        CHILD_CHECK(cuMemSetAccess(g_fault_base, 2 * MiB, &acc, 1) == CUDA_SUCCESS);
    if (unmap)
        CHILD_CHECK(cuMemUnmap(g_fault_base, 2 * MiB) == CUDA_SUCCESS);
    return 0;
}

static int body_touch_unmapped(void)
{
    if (fault_setup(1, 1))
        return 1;
    *(volatile char *)g_fault_base = 1; /* must fault */
    return 0;
}

static int body_copy_to_unmapped(void)
{
    if (fault_setup(1, 1))
        return 1;
    char buf[16] = {0};
    cudaMemcpy((void *)(g_fault_base + 64), buf, sizeof buf, cudaMemcpyHostToDevice); /* must fault */
    return 0;
}

static int body_copy_without_access(void)
{
    if (fault_setup(0, 0))
        return 1;
    char buf[16];
    cudaMemcpy(buf, (void *)g_fault_base, sizeof buf, cudaMemcpyDeviceToHost); /* must fault */
    return 0;
}

static int body_mapped_ok(void)
{
    if (fault_setup(0, 1))
        return 1;
    char buf[16] = {1};
    CHILD_CHECK(cudaMemcpy((void *)g_fault_base, buf, sizeof buf, cudaMemcpyHostToDevice) == cudaSuccess);
    *(volatile char *)g_fault_base = 2;
    return 0;
}

static int body_use_after_free(void)
{
    void *p;
    CHILD_CHECK(cudaMalloc(&p, MiB) == cudaSuccess);
    CHILD_CHECK(cudaFree(p) == cudaSuccess);
    char buf[16];
    cudaMemcpy(buf, p, sizeof buf, cudaMemcpyDeviceToHost); /* must fault */
    return 0;
}

static int body_overrun(void)
{
    void *p;
    CHILD_CHECK(cudaMalloc(&p, 1000) == cudaSuccess);
    char buf[2000] = {0};
    cudaMemcpy(p, buf, sizeof buf, cudaMemcpyHostToDevice); /* must fault */
    return 0;
}

static void test_residency_faults(void **state)
{
    (void)state;
    assert_true(CHILD_OK(sim_child_run(NULL, "body_mapped_ok")));
    assert_true(CHILD_SEGV(sim_child_run(NULL, "body_touch_unmapped")));
    assert_true(CHILD_SEGV(sim_child_run(NULL, "body_copy_to_unmapped")));
    assert_true(CHILD_SEGV(sim_child_run(NULL, "body_copy_without_access")));
    assert_true(CHILD_SEGV(sim_child_run(NULL, "body_use_after_free")));
    assert_true(CHILD_SEGV(sim_child_run(NULL, "body_overrun")));
    /* Compute off: nothing is touched, the tables alone catch it. */
    const char *off[] = {"SIMGPU_COMPUTE=0", NULL};
    assert_true(CHILD_SEGV(sim_child_run(off, "body_mapped_ok"))); /* the CPU store faults: no memory behind it */
    assert_true(CHILD_SEGV(sim_child_run(off, "body_copy_to_unmapped")));
    assert_true(CHILD_SEGV(sim_child_run(off, "body_copy_without_access")));
    assert_true(CHILD_SEGV(sim_child_run(off, "body_use_after_free")));
}

static int body_vmm_off(void)
{
    cuInit(0);
    int v = 1;
    CHILD_CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0) ==
                CUDA_SUCCESS);
    CHILD_CHECK(v == 0);
    CHILD_CHECK(cudaDeviceGetAttribute(&v, (enum cudaDeviceAttr)CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0) == cudaSuccess);
    CHILD_CHECK(v == 0);
    CUmemAllocationProp prop = dev_prop(0);
    CUmemGenericAllocationHandle h;
    CUdeviceptr p;
    size_t g;
    CHILD_CHECK(cuMemCreate(&h, 2 * MiB, &prop, 0) == CUDA_ERROR_NOT_SUPPORTED);
    CHILD_CHECK(cuMemAddressReserve(&p, 2 * MiB, 0, 0, 0) == CUDA_ERROR_NOT_SUPPORTED);
    CHILD_CHECK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) ==
                CUDA_ERROR_NOT_SUPPORTED);
    void *d;
    CHILD_CHECK(cudaMalloc(&d, MiB) == cudaSuccess);
    CHILD_CHECK(cudaMemset(d, 3, MiB) == cudaSuccess);
    return 0;
}

static void test_vmm_can_be_turned_off(void **state)
{
    (void)state;
    const char *env[] = {"SIMGPU_VMM=0", NULL};
    assert_true(CHILD_OK(sim_child_run(env, "body_vmm_off")));
}


/* ---- ordering hazards ---------------------------------------------------- */

/* A prefetch on a copy stream, then a read on another stream: with the event
 * dependency (wait != 0) it is correct; without it the read would race the
 * copy on a GPU, and the simulator must refuse it. */
static int hazard_prefetch_then_read(int wait)
{
    const size_t n = 8 * MiB;
    void *d, *e, *pin;
    CHILD_CHECK(cudaMalloc(&d, n) == cudaSuccess && cudaMalloc(&e, n) == cudaSuccess);
    CHILD_CHECK(cudaMallocHost(&pin, n) == cudaSuccess);
    cudaStream_t copy, compute;
    cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking);
    cudaEvent_t done;
    cudaEventCreateWithFlags(&done, cudaEventDisableTiming);
    CHILD_CHECK(cudaMemcpyAsync(d, pin, n, cudaMemcpyHostToDevice, copy) == cudaSuccess);
    cudaEventRecord(done, copy);
    if (wait)
        cudaStreamWaitEvent(compute, done, 0);
    CHILD_CHECK(cudaMemcpyAsync(e, d, n, cudaMemcpyDeviceToDevice, compute) == cudaSuccess);
    CHILD_CHECK(cudaStreamSynchronize(compute) == cudaSuccess);
    return 0;
}
static int body_hazard_raw(void) { return hazard_prefetch_then_read(0); }
static int body_hazard_raw_ordered(void) { return hazard_prefetch_then_read(1); }

/* An offload still reading a buffer that another stream overwrites. */
static int body_hazard_war(void)
{
    const size_t n = 8 * MiB;
    void *d, *pin;
    CHILD_CHECK(cudaMalloc(&d, n) == cudaSuccess && cudaMallocHost(&pin, n) == cudaSuccess);
    CHILD_CHECK(cudaMemset(d, 1, n) == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess);
    cudaStream_t copy, compute;
    cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking);
    CHILD_CHECK(cudaMemcpyAsync(pin, d, n, cudaMemcpyDeviceToHost, copy) == cudaSuccess);
    CHILD_CHECK(cudaMemsetAsync(d, 2, n, compute) == cudaSuccess);
    cudaDeviceSynchronize();
    return 0;
}

/* Disjoint halves of one allocation on two streams do not conflict. */
static int body_hazard_disjoint(void)
{
    const size_t n = 8 * MiB;
    char *d;
    void *pin;
    CHILD_CHECK(cudaMalloc((void **)&d, 2 * n) == cudaSuccess && cudaMallocHost(&pin, n) == cudaSuccess);
    cudaStream_t a, b;
    cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
    CHILD_CHECK(cudaMemcpyAsync(d, pin, n, cudaMemcpyHostToDevice, a) == cudaSuccess);
    CHILD_CHECK(cudaMemsetAsync(d + n, 0, n, b) == cudaSuccess);
    CHILD_CHECK(cudaMemcpyAsync(pin, d + n, n, cudaMemcpyDeviceToHost, b) == cudaSuccess);
    CHILD_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    return 0;
}

static void test_ordering_hazards_fail(void **state)
{
    (void)state;
    assert_true(CHILD_OK(sim_child_run(NULL, "body_hazard_raw_ordered")));
    assert_true(CHILD_OK(sim_child_run(NULL, "body_hazard_disjoint")));
    assert_true(CHILD_SEGV(sim_child_run(NULL, "body_hazard_raw")));
    assert_true(CHILD_SEGV(sim_child_run(NULL, "body_hazard_war")));
    const char *off[] = {"SIMGPU_COMPUTE=0", NULL};
    assert_true(CHILD_SEGV(sim_child_run(off, "body_hazard_raw")));
    const char *warn[] = {"SIMGPU_HAZARDS=warn", NULL};
    assert_true(CHILD_OK(sim_child_run(warn, "body_hazard_raw")));
}

/* ---- compute off, big devices, several devices -------------------------- */

static long resident_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

static int body_compute_off_big(void)
{
    size_t fr, tot;
    CHILD_CHECK(cudaMemGetInfo(&fr, &tot) == cudaSuccess);
    CHILD_CHECK(tot == 85031714816ull); /* h100: larger than this machine's RAM */
    long rss0 = resident_kib();
    void *p[80];
    int n = 0;
    while (n < 80 && cudaMalloc(&p[n], (size_t)1 << 30) == cudaSuccess)
        n++;
    CHILD_CHECK(n == 79); /* 79 GiB fit in 79.2 GiB, the 80th does not */
    CHILD_CHECK(cudaGetLastError() == cudaErrorMemoryAllocation);
    /* Copies and sets are checked and timed but move no data. */
    void *pin;
    CHILD_CHECK(cudaMallocHost(&pin, (size_t)1 << 30) == cudaSuccess);
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventRecord(a, 0);
    CHILD_CHECK(cudaMemcpy(p[0], pin, (size_t)1 << 30, cudaMemcpyHostToDevice) == cudaSuccess);
    CHILD_CHECK(cudaMemset(p[1], 0, (size_t)1 << 30) == cudaSuccess);
    cudaEventRecord(b, 0);
    cudaEventSynchronize(b);
    float ms;
    CHILD_CHECK(cudaEventElapsedTime(&ms, a, b) == cudaSuccess);
    /* 1 GiB over 54.6 GB/s plus 1 GiB at 3.35 TB/s plus launch costs */
    CHILD_CHECK(ms > 19.8f && ms < 20.3f);
    long rss1 = resident_kib();
    CHILD_CHECK(rss1 - rss0 < 64 * 1024); /* nothing was committed */
    for (int i = 0; i < n; i++)
        CHILD_CHECK(cudaFree(p[i]) == cudaSuccess);
    return 0;
}

static void test_compute_off_device_larger_than_ram(void **state)
{
    (void)state;
    const char *env[] = {"SIMGPU_COMPUTE=0", "SIMGPU_PROFILE=h100", NULL};
    assert_true(CHILD_OK(sim_child_run(env, "body_compute_off_big")));
}

static int body_multi_device(void)
{
    int n = 0;
    CHILD_CHECK(cudaGetDeviceCount(&n) == cudaSuccess && n == 3);
    CHILD_CHECK(cudaSetDevice(3) == cudaErrorInvalidDevice);
    void *p[3];
    for (int d = 0; d < 3; d++) {
        CHILD_CHECK(cudaSetDevice(d) == cudaSuccess);
        CHILD_CHECK(cudaMalloc(&p[d], (size_t)(d + 1) * MiB) == cudaSuccess);
    }
    for (int d = 0; d < 3; d++) {
        struct cudaPointerAttributes at;
        CHILD_CHECK(cudaPointerGetAttributes(&at, p[d]) == cudaSuccess);
        CHILD_CHECK(at.type == cudaMemoryTypeDevice && at.device == d);
        size_t fr, tot;
        CHILD_CHECK(cudaSetDevice(d) == cudaSuccess);
        CHILD_CHECK(cudaMemGetInfo(&fr, &tot) == cudaSuccess);
        CHILD_CHECK(tot == 32 * MiB && tot - fr == (size_t)(d + 1) * MiB);
    }
    struct cudaDeviceProp prop;
    CHILD_CHECK(cudaGetDeviceProperties(&prop, 2) == cudaSuccess);
    CHILD_CHECK(prop.totalGlobalMem == 32 * MiB && prop.major == 7);
    CHILD_CHECK(strstr(prop.name, "V100") != NULL);
    /* A peer copy between two devices is a device-to-device copy. */
    char buf[64] = "peer", out[64] = {0};
    CHILD_CHECK(cudaMemcpy(p[0], buf, sizeof buf, cudaMemcpyHostToDevice) == cudaSuccess);
    CHILD_CHECK(cudaMemcpy(p[2], p[0], sizeof buf, cudaMemcpyDefault) == cudaSuccess);
    CHILD_CHECK(cudaMemcpy(out, p[2], sizeof out, cudaMemcpyDefault) == cudaSuccess);
    CHILD_CHECK(strcmp(out, "peer") == 0);
    return 0;
}

static void test_multiple_devices(void **state)
{
    (void)state;
    const char *env[] = {"SIMGPU_DEVICES=3", "SIMGPU_MEM=32M", "SIMGPU_PROFILE=v100", NULL};
    assert_true(CHILD_OK(sim_child_run(env, "body_multi_device")));
}

/* ---- errors and misc ----------------------------------------------------- */

static void test_errors_as_cuda_reports_them(void **state)
{
    (void)state;
    int x;
    assert_int_equal(cudaFree(&x), cudaErrorInvalidValue);
    assert_int_equal(cudaPeekAtLastError(), cudaErrorInvalidValue);
    assert_int_equal(cudaPeekAtLastError(), cudaErrorInvalidValue);
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidValue);
    assert_int_equal(cudaGetLastError(), cudaSuccess);
    assert_int_equal(cudaFree(NULL), cudaSuccess);
    assert_int_equal(cudaFreeHost(&x), cudaErrorInvalidValue);
    assert_string_equal(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation");
    assert_string_equal(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory");
    cudaStream_t s;
    cudaStreamCreate(&s);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(s), cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
    void *p = &x;
    assert_int_equal(cudaMalloc(&p, 0), cudaSuccess);
    assert_null(p);
    struct cudaPointerAttributes at;
    assert_int_equal(cudaPointerGetAttributes(&at, &x), cudaSuccess);
    assert_int_equal(at.type, cudaMemoryTypeUnregistered);
    CUdeviceptr b;
    size_t sz;
    void *d;
    cudaMalloc(&d, 1000);
    assert_int_equal(cuMemGetAddressRange(&b, &sz, (CUdeviceptr)d + 10), CUDA_SUCCESS);
    assert_int_equal(b, (CUdeviceptr)d);
    assert_int_equal(sz, 1024);
    cudaFree(d);
    cudaGetLastError();
}

/* A host function launched as a kernel, through the sim-only registry that
 * a program reaches by dlsym (sim/simgpu.h would wrap it). */
typedef void (*host_kernel_fn)(void **args, dim3 grid, dim3 block);
static void k_scale(void **args, dim3 grid, dim3 block)
{
    float *x = *(float **)args[0];
    float a = *(float *)args[1];
    int n = *(int *)args[2];
    (void)grid;
    (void)block;
    for (int i = 0; i < n; i++)
        x[i] *= a;
}

/* What nvcc's generated start-up code does for one kernel: register a fat
 * binary and the kernel's host stub. Returns the stub, the kernel's name for
 * cudaLaunchKernel. */
static const void *register_nvcc_kernel(void)
{
    extern void **__cudaRegisterFatBinary(void *);
    extern void __cudaRegisterFunction(void **, const char *, char *, const char *, int, uint3 *, uint3 *,
                                       dim3 *, dim3 *, int *);
    static char fake_fatbin[16], stub;
    void **fh = __cudaRegisterFatBinary(fake_fatbin);
    __cudaRegisterFunction(fh, &stub, (char *)"_Z6kernelv", "_Z6kernelv", -1, NULL, NULL, NULL, NULL, NULL);
    return &stub;
}

static void test_kernel_launch_paths(void **state)
{
    (void)state;
    int (*reg)(host_kernel_fn, const char *, int, const size_t *) =
        (int (*)(host_kernel_fn, const char *, int, const size_t *))dlsym(RTLD_DEFAULT,
                                                                          "simgpu_register_host_kernel_impl");
    assert_non_null(reg);
    size_t sizes[] = {sizeof(float *), sizeof(float), sizeof(int)};
    assert_int_equal(reg(k_scale, "scale", 3, sizes), 0);
    size_t off, sz;
    assert_int_equal(cudaFuncGetParamInfo((const void *)k_scale, 1, &off, &sz), cudaSuccess);
    assert_int_equal(off, 8);
    assert_int_equal(sz, 4);
    assert_int_equal(cudaFuncGetParamInfo((const void *)k_scale, 2, &off, &sz), cudaSuccess);
    assert_int_equal(off, 12);
    assert_int_equal(cudaFuncGetParamInfo((const void *)k_scale, 3, &off, &sz), cudaErrorInvalidValue);
    cudaGetLastError();

    float h[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    float *d;
    cudaMalloc((void **)&d, sizeof h);
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    float a = 2.0f;
    int n = 8;
    void *args[] = {&d, &a, &n};
    dim3 g = {1, 1, 1}, b = {32, 1, 1};
    assert_int_equal(cudaLaunchKernel((const void *)k_scale, g, b, args, 0, 0), cudaSuccess);
    /* nvcc 13's path: push configuration, get the kernel handle, pop, launch. */
    extern unsigned __cudaPushCallConfiguration(dim3, dim3, size_t, struct CUstream_st *);
    extern cudaError_t __cudaPopCallConfiguration(dim3 *, dim3 *, size_t *, void *);
    extern cudaError_t __cudaGetKernel(cudaKernel_t *, const void *);
    extern cudaError_t __cudaLaunchKernel(cudaKernel_t, dim3, dim3, void **, size_t, cudaStream_t);
    assert_int_equal(__cudaPushCallConfiguration(g, b, 0, NULL), 0);
    cudaKernel_t k;
    assert_int_equal(__cudaGetKernel(&k, (const void *)k_scale), cudaSuccess);
    dim3 g2, b2;
    size_t shm;
    cudaStream_t st;
    assert_int_equal(__cudaPopCallConfiguration(&g2, &b2, &shm, &st), cudaSuccess);
    assert_int_equal(b2.x, 32);
    assert_int_equal(__cudaLaunchKernel(k, g2, b2, args, shm, st), cudaSuccess);
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    assert_float_equal(h[7], 32.0f, 0);

    /* An nvcc-registered kernel has no CPU body: missing image with compute on. */
    assert_int_equal(cudaLaunchKernel(register_nvcc_kernel(), g, b, NULL, 0, 0), cudaErrorNoKernelImageForDevice);
    assert_int_equal(cudaLaunchKernel((const void *)&a, g, b, NULL, 0, 0), cudaErrorInvalidDeviceFunction);
    dim3 huge = {2048, 1, 1};
    assert_int_equal(cudaLaunchKernel((const void *)k_scale, g, huge, args, 0, 0), cudaErrorInvalidConfiguration);
    cudaGetLastError();
    cudaFree(d);
}

/* A fat binary as nvcc lays one out, holding a single uncompressed PTX
 * entry (the reader's formats are tested in test_sim_fatbin.c; here, how
 * registration, cudaFuncGetParamInfo and unregistration use it). */
static unsigned char *ptx_fatbin(const char *ptx)
{
    size_t len = strlen(ptx), padded = (len + 7) / 8 * 8;
    unsigned char *f = calloc(1, 16 + 64 + padded);
    assert_non_null(f);
    uint32_t magic = 0xBA55ED50, entry_header = 64;
    uint16_t version = 1, header = 16, kind = 1;
    uint64_t size = 64 + padded, flags = 0x11;
    memcpy(f, &magic, 4);
    memcpy(f + 4, &version, 2);
    memcpy(f + 6, &header, 2);
    memcpy(f + 8, &size, 8);
    memcpy(f + 16, &kind, 2);
    memcpy(f + 16 + 4, &entry_header, 4);
    memcpy(f + 16 + 8, &padded, 8);
    memcpy(f + 16 + 40, &flags, 8);
    memcpy(f + 16 + 64, ptx, len);
    return f;
}

static void test_fatbin_kernel_layouts(void **state)
{
    (void)state;
    extern void **__cudaRegisterFatBinary(void *);
    extern void __cudaRegisterFatBinaryEnd(void **);
    extern void __cudaUnregisterFatBinary(void **);
    extern void __cudaRegisterFunction(void **, const char *, char *, const char *, int, uint3 *, uint3 *,
                                       dim3 *, dim3 *, int *);
    static const char ptx[] = ".version 9.0\n.target sm_90\n.address_size 64\n\n"
                              ".visible .entry _Z4axpyfPfS_i(\n"
                              "\t.param .f32 _Z4axpyfPfS_i_param_0,\n"
                              "\t.param .u64 _Z4axpyfPfS_i_param_1,\n"
                              "\t.param .u64 _Z4axpyfPfS_i_param_2,\n"
                              "\t.param .u32 _Z4axpyfPfS_i_param_3\n"
                              ")\n{\n\tret;\n}\n"
                              ".visible .entry _Z4filli(\n\t.param .u32 _Z4filli_param_0\n)\n{\n\tret;\n}\n";
    unsigned char *fat = ptx_fatbin(ptx);
    __fatBinC_Wrapper_t wrapper = {FATBINC_MAGIC, 1, (const unsigned long long *)fat, NULL};
    static char axpy, fill, missing;
    void **h = __cudaRegisterFatBinary(&wrapper);
    __cudaRegisterFunction(h, &axpy, (char *)"_Z4axpyfPfS_i", "_Z4axpyfPfS_i", -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterFunction(h, &fill, (char *)"_Z4filli", "_Z4filli", -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterFunction(h, &missing, (char *)"_Z7missingv", "_Z7missingv", -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterFatBinaryEnd(h);

    /* axpy(float, float *, float *, int), as the PTX lays it out. */
    static const size_t want[][2] = {{0, 4}, {8, 8}, {16, 8}, {24, 4}};
    size_t off, sz;
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(cudaFuncGetParamInfo(&axpy, i, &off, &sz), cudaSuccess);
        assert_int_equal(off, want[i][0]);
        assert_int_equal(sz, want[i][1]);
    }
    assert_int_equal(cudaFuncGetParamInfo(&axpy, 4, &off, &sz), cudaErrorInvalidValue);
    assert_int_equal(cudaFuncGetParamInfo(&axpy, 0, NULL, &sz), cudaErrorInvalidValue);
    /* The driver sees the same kernel: the runtime's function is its
     * CUfunction, with the same layout and name. */
    cudaFunction_t fn = NULL;
    assert_int_equal(cudaGetFuncBySymbol(&fn, &axpy), cudaSuccess);
    assert_int_equal(cuFuncGetParamInfo((CUfunction)fn, 1, &off, &sz), CUDA_SUCCESS);
    assert_int_equal(off, 8);
    assert_int_equal(sz, 8);
    assert_int_equal(cuFuncGetParamInfo((CUfunction)fn, 4, &off, &sz), CUDA_ERROR_INVALID_VALUE);
    const char *name = NULL;
    assert_int_equal(cudaFuncGetName(&name, &axpy), cudaSuccess);
    assert_string_equal(name, "_Z4axpyfPfS_i");
    assert_int_equal(cuFuncGetName(&name, (CUfunction)fn), CUDA_SUCCESS);
    assert_string_equal(name, "_Z4axpyfPfS_i");
    assert_int_equal(cudaGetFuncBySymbol(&fn, &off), cudaErrorInvalidDeviceFunction);
    /* The same PTX loaded as a driver module: found by name, same layout,
     * and no body to run with compute on. */
    CUmodule mod;
    CUfunction mf;
    assert_int_equal(cuModuleLoadData(&mod, ptx), CUDA_SUCCESS);
    assert_int_equal(cuModuleGetFunction(&mf, mod, "_Z4filli"), CUDA_SUCCESS);
    assert_int_equal(cuModuleGetFunction(&mf, mod, "_Z7missingv"), CUDA_ERROR_NOT_FOUND);
    assert_int_equal(cuModuleGetFunction(&mf, mod, "_Z4axpyfPfS_i"), CUDA_SUCCESS);
    assert_int_equal(cuFuncGetParamInfo(mf, 3, &off, &sz), CUDA_SUCCESS);
    assert_int_equal(off, 24);
    assert_int_equal(sz, 4);
    assert_int_equal(cuLaunchKernel(mf, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_NO_BINARY_FOR_GPU);
    assert_int_equal(cuModuleUnload(mod), CUDA_SUCCESS);
    CUmodule fatmod;
    assert_int_equal(cuModuleLoadFatBinary(&fatmod, fat), CUDA_SUCCESS);
    assert_int_equal(cuModuleGetFunction(&mf, fatmod, "_Z4filli"), CUDA_SUCCESS);
    assert_int_equal(cuFuncGetParamInfo(mf, 0, &off, &sz), CUDA_SUCCESS);
    assert_int_equal(sz, 4);
    assert_int_equal(cuModuleUnload(fatmod), CUDA_SUCCESS);
    /* A kernel the fat binary says nothing about has no layout. */
    assert_int_equal(cudaFuncGetParamInfo(&missing, 0, &off, &sz), cudaErrorInvalidValue);
    /* Nor does one whose fat binary is not a readable one. */
    assert_int_equal(cudaFuncGetParamInfo(register_nvcc_kernel(), 0, &off, &sz), cudaErrorInvalidValue);

    /* Once its fat binary is gone (and its memory with it), a layout read
     * before stays; one never read has nothing left to be read from. */
    __cudaUnregisterFatBinary(h);
    memset(fat, 0, 16 + 64);
    free(fat);
    assert_int_equal(cudaFuncGetParamInfo(&axpy, 3, &off, &sz), cudaSuccess);
    assert_int_equal(off, 24);
    assert_int_equal(cudaFuncGetParamInfo(&fill, 0, &off, &sz), cudaErrorInvalidValue);
    cudaGetLastError();
}

static int body_fatbin_compute_off(void)
{
    dim3 g = {1, 1, 1};
    CHILD_CHECK(cudaLaunchKernel(register_nvcc_kernel(), g, g, NULL, 0, 0) == cudaSuccess);
    return 0;
}

static void test_fatbin_kernels_model_with_compute_off(void **state)
{
    (void)state;
    const char *env[] = {"SIMGPU_COMPUTE=0", NULL};
    assert_true(CHILD_OK(sim_child_run(env, "body_fatbin_compute_off")));
}

static void test_driver_entry_points_via_getprocaddress(void **state)
{
    (void)state;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    assert_non_null(lib);
    CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) =
        (CUresult(*)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *))dlsym(
            lib, "cuGetProcAddress_v2");
    assert_non_null(gpa);
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    assert_int_equal(gpa("cuMemAlloc", &fn, 13000, 0, &st), CUDA_SUCCESS);
    assert_int_equal(st, CU_GET_PROC_ADDRESS_SUCCESS);
    assert_ptr_equal(fn, dlsym(lib, "cuMemAlloc_v2"));
    assert_int_equal(gpa("cuNoSuchThing", &fn, 13000, 0, &st), CUDA_ERROR_NOT_FOUND);
    assert_int_equal(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
}

static const struct sim_child_body k_bodies[] = {
    {"body_fault_once", body_fault_once},
    {"body_fault_from", body_fault_from},
    {"body_hazard_raw", body_hazard_raw},
    {"body_hazard_raw_ordered", body_hazard_raw_ordered},
    {"body_hazard_war", body_hazard_war},
    {"body_hazard_disjoint", body_hazard_disjoint},
    {"body_capacity", body_capacity},
    {"body_compute_off_big", body_compute_off_big},
    {"body_copy_to_unmapped", body_copy_to_unmapped},
    {"body_copy_without_access", body_copy_without_access},
    {"body_fatbin_compute_off", body_fatbin_compute_off},
    {"body_mapped_ok", body_mapped_ok},
    {"body_multi_device", body_multi_device},
    {"body_overrun", body_overrun},
    {"body_touch_unmapped", body_touch_unmapped},
    {"body_use_after_free", body_use_after_free},
    {"body_vmm_capacity", body_vmm_capacity},
    {"body_vmm_off", body_vmm_off},
};

int main(int argc, char **argv)
{
    sim_child_main(argc, argv, k_bodies, sizeof k_bodies / sizeof k_bodies[0]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capacity_and_oom),
        cmocka_unit_test(test_bad_config_falls_back),
        cmocka_unit_test(test_fault_injection),
        cmocka_unit_test(test_memcpy_all_kinds_bit_exact),
        cmocka_unit_test(test_memcpy2d_and_memset),
        cmocka_unit_test(test_pinned_vs_pageable_timing),
        cmocka_unit_test(test_copy_compute_overlap),
        cmocka_unit_test(test_event_timing_matches_cost_model),
        cmocka_unit_test(test_stream_wait_event_orders),
        cmocka_unit_test(test_legacy_default_stream_synchronises),
        cmocka_unit_test(test_vmm_map_unmap_remap),
        cmocka_unit_test(test_vmm_rules),
        cmocka_unit_test(test_vmm_counts_against_capacity),
        cmocka_unit_test(test_residency_faults),
        cmocka_unit_test(test_vmm_can_be_turned_off),
        cmocka_unit_test(test_ordering_hazards_fail),
        cmocka_unit_test(test_compute_off_device_larger_than_ram),
        cmocka_unit_test(test_multiple_devices),
        cmocka_unit_test(test_errors_as_cuda_reports_them),
        cmocka_unit_test(test_kernel_launch_paths),
        cmocka_unit_test(test_fatbin_kernels_model_with_compute_off),
        cmocka_unit_test(test_fatbin_kernel_layouts),
        cmocka_unit_test(test_driver_entry_points_via_getprocaddress),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
