/*
 * test_sim_pool.c — stream-ordered allocation on the simulated device:
 * cudaMallocAsync / cudaFreeAsync (and their _ptsz twins) from the default
 * pool. Reuse in stream order, no reuse across streams before the free has
 * completed, reuse through an event dependency or (opportunistically) once
 * the free is complete, uses after a free and before an allocation caught
 * as illegal addresses or ordering hazards, and the pool's accounting in
 * cudaMemGetInfo and its attributes.
 *
 * Figures are the default k40 profile's: pinned PCIe 10 GB/s, 5 us per op,
 * 2 us of host time per issuing call.
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
#define HOST_CALL_MS 0.002

cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);

static size_t used_bytes(void)
{
    size_t fr, tot;
    assert_int_equal(cudaMemGetInfo(&fr, &tot), cudaSuccess);
    return tot - fr;
}

static cuuint64_t pool_attr(cudaMemPool_t pool, enum cudaMemPoolAttr attr)
{
    cuuint64_t v = 0;
    assert_int_equal(cudaMemPoolGetAttribute(pool, attr, &v), cudaSuccess);
    return v;
}

/* Keeps a stream busy for `ms` simulated milliseconds: a pinned copy. */
struct busy { void *dev, *pin; size_t n; };
static void busy_init(struct busy *b, double ms)
{
    b->n = (size_t)(ms * 1e-3 * 10.0e9);
    assert_int_equal(cudaMalloc(&b->dev, b->n), cudaSuccess);
    assert_int_equal(cudaMallocHost(&b->pin, b->n), cudaSuccess);
}
static void busy_run(struct busy *b, cudaStream_t s)
{
    assert_int_equal(cudaMemcpyAsync(b->dev, b->pin, b->n, cudaMemcpyHostToDevice, s), cudaSuccess);
}
static void busy_free(struct busy *b)
{
    cudaFree(b->dev);
    cudaFreeHost(b->pin);
}

/* ---- basics ---------------------------------------------------------------------- */

static void test_alloc_use_free_in_stream_order(void **state)
{
    (void)state;
    const size_t n = MiB;
    cudaStream_t s;
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    unsigned char *p = NULL, *pin;
    assert_int_equal(cudaMallocHost((void **)&pin, n), cudaSuccess);
    assert_int_equal(cudaMallocAsync((void **)&p, n, s), cudaSuccess);
    assert_non_null(p);
    struct cudaPointerAttributes at;
    assert_int_equal(cudaPointerGetAttributes(&at, p), cudaSuccess);
    assert_int_equal(at.type, cudaMemoryTypeDevice);
    assert_int_equal(cudaMemsetAsync(p, 0x42, n, s), cudaSuccess);
    assert_int_equal(cudaMemcpyAsync(pin, p, n, cudaMemcpyDeviceToHost, s), cudaSuccess);
    assert_int_equal(cudaFreeAsync(p, s), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    assert_int_equal(pin[0], 0x42);
    assert_int_equal(pin[n - 1], 0x42);

    /* The allocation and the free are stream operations without device
     * time of their own. */
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventRecord(a, s);
    assert_int_equal(cudaMallocAsync((void **)&p, n, s), cudaSuccess);
    assert_int_equal(cudaFreeAsync(p, s), cudaSuccess);
    cudaEventRecord(b, s);
    float ms = -1;
    assert_int_equal(cudaEventSynchronize(b), cudaSuccess);
    assert_int_equal(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
    /* Three calls of host time, and no device op's launch cost. */
    assert_float_equal(ms, 3 * HOST_CALL_MS, 1e-6);

    /* The per-thread twins; NULL is the calling thread's default stream. */
    assert_int_equal(cudaMallocAsync_ptsz((void **)&p, n, NULL), cudaSuccess);
    assert_int_equal(cudaMemsetAsync(p, 1, n, cudaStreamPerThread), cudaSuccess);
    assert_int_equal(cudaFreeAsync_ptsz(p, NULL), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);

    /* Bad arguments. */
    int host;
    assert_int_equal(cudaMallocAsync(NULL, n, s), cudaErrorInvalidValue);
    assert_int_equal(cudaFreeAsync(&host, s), cudaErrorInvalidValue);
    assert_int_equal(cudaMallocAsync((void **)&p, n, s), cudaSuccess);
    assert_int_equal(cudaFreeAsync(p + 512, s), cudaErrorInvalidValue); /* not the allocation's start */
    assert_int_equal(cudaFreeAsync(p, s), cudaSuccess);
    assert_int_equal(cudaFreeAsync(p, s), cudaErrorInvalidValue);        /* twice */
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidValue);
    assert_int_equal(cudaMallocAsync((void **)&p, (size_t)1 << 40, s), cudaErrorMemoryAllocation);
    assert_int_equal(cudaGetLastError(), cudaErrorMemoryAllocation);
    cudaStream_t gone;
    cudaStreamCreate(&gone);
    cudaStreamDestroy(gone);
    assert_int_equal(cudaMallocAsync((void **)&p, n, gone), cudaErrorInvalidValue);
    (void)cudaGetLastError();
    int supported = 0;
    assert_int_equal(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, 0), cudaSuccess);
    assert_int_equal(supported, 1);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaStreamDestroy(s);
    cudaFreeHost(pin);
}

/* ---- reuse ----------------------------------------------------------------------- */

static void test_reuse_follows_stream_order(void **state)
{
    (void)state;
    const size_t n = MiB;
    cudaMemPool_t pool;
    assert_int_equal(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
    cuuint64_t keep = UINT64_MAX; /* keep freed memory across synchronisations */
    assert_int_equal(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), cudaSuccess);
    cudaStream_t a, b, c;
    cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&c, cudaStreamNonBlocking);
    struct busy busy;
    busy_init(&busy, 5.0);
    void *p, *q, *r;

    /* Same stream: the block freed is the next one handed out. */
    assert_int_equal(cudaMallocAsync(&p, n, a), cudaSuccess);
    assert_int_equal(cudaFreeAsync(p, a), cudaSuccess);
    assert_int_equal(cudaMallocAsync(&q, n, a), cudaSuccess);
    assert_ptr_equal(q, p);
    assert_int_equal(cudaFreeAsync(q, a), cudaSuccess);

    /* Another stream, while the free is still 5 ms ahead in a: not reused. */
    busy_run(&busy, a);
    assert_int_equal(cudaMallocAsync(&p, n, a), cudaSuccess);
    assert_int_equal(cudaFreeAsync(p, a), cudaSuccess);
    assert_int_equal(cudaMallocAsync(&q, n, b), cudaSuccess);
    assert_ptr_not_equal(q, p);
    assert_int_equal(cudaFreeAsync(q, b), cudaSuccess);
    /* Once b waits for an event recorded after the free, it may have it. */
    cudaEvent_t freed;
    cudaEventCreateWithFlags(&freed, cudaEventDisableTiming);
    cudaEventRecord(freed, a);
    cudaStreamWaitEvent(b, freed, 0);
    assert_int_equal(cudaMallocAsync(&r, n, b), cudaSuccess);
    assert_ptr_equal(r, p);
    assert_int_equal(cudaFreeAsync(r, b), cudaSuccess);

    /* Opportunistic reuse: a free the host has seen complete serves any
     * stream; with the policy off it does not. */
    busy_run(&busy, a);
    assert_int_equal(cudaMallocAsync(&p, n, a), cudaSuccess);
    assert_int_equal(cudaFreeAsync(p, a), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(a), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(b), cudaSuccess);
    int off = 0, on = 1;
    assert_int_equal(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowOpportunistic, &off), cudaSuccess);
    assert_int_equal(cudaMallocAsync(&q, n, c), cudaSuccess);
    assert_ptr_not_equal(q, p);
    assert_int_equal(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowOpportunistic, &on), cudaSuccess);
    assert_int_equal(cudaMallocAsync(&r, n, c), cudaSuccess);
    assert_ptr_equal(r, p);
    assert_int_equal(cudaFreeAsync(q, c), cudaSuccess);
    assert_int_equal(cudaFreeAsync(r, c), cudaSuccess);

    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    assert_int_equal(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
    keep = 0;
    assert_int_equal(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), cudaSuccess);
    assert_int_equal(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent), 0);
    cudaEventDestroy(freed);
    cudaStreamDestroy(a);
    cudaStreamDestroy(b);
    cudaStreamDestroy(c);
    busy_free(&busy);
}

/* ---- accounting ------------------------------------------------------------------ */

static void test_pool_accounting(void **state)
{
    (void)state;
    const size_t n = 4 * MiB;
    cudaMemPool_t pool, same;
    assert_int_equal(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
    assert_int_equal(cudaDeviceGetMemPool(&same, 0), cudaSuccess);
    assert_ptr_equal(pool, same);
    assert_int_equal(cudaDeviceGetDefaultMemPool(&pool, 1), cudaErrorInvalidDevice);
    assert_int_equal(cudaDeviceGetDefaultMemPool(NULL, 0), cudaErrorInvalidValue);
    assert_int_equal(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
    assert_int_equal(pool_attr(pool, cudaMemPoolAttrReleaseThreshold), 0);
    int flag = -1;
    assert_int_equal(cudaMemPoolGetAttribute(pool, cudaMemPoolReuseFollowEventDependencies, &flag), cudaSuccess);
    assert_int_equal(flag, 1);

    cudaStream_t s;
    cudaStreamCreate(&s);
    size_t base = used_bytes();
    void *p;
    assert_int_equal(cudaMallocAsync(&p, n, s), cudaSuccess);
    assert_int_equal(used_bytes() - base, n);
    assert_int_equal(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent), n);
    assert_int_equal(pool_attr(pool, cudaMemPoolAttrUsedMemCurrent), n);
    /* Freed in stream order: still the pool's until a synchronisation. */
    assert_int_equal(cudaFreeAsync(p, s), cudaSuccess);
    assert_int_equal(used_bytes() - base, n);
    assert_int_equal(pool_attr(pool, cudaMemPoolAttrUsedMemCurrent), 0);
    assert_int_equal(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent), n);
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    assert_int_equal(used_bytes(), base);
    assert_int_equal(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent), 0);
    assert_true(pool_attr(pool, cudaMemPoolAttrReservedMemHigh) >= n);
    assert_true(pool_attr(pool, cudaMemPoolAttrUsedMemHigh) >= n);

    /* With a release threshold the pool keeps up to it; trimming gives it back. */
    cuuint64_t keep = 64 * MiB, zero = 0, five = 5;
    assert_int_equal(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), cudaSuccess);
    assert_int_equal(cudaMallocAsync(&p, n, s), cudaSuccess);
    assert_int_equal(cudaFreeAsync(p, s), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    assert_int_equal(used_bytes() - base, n);
    assert_int_equal(cudaMemPoolTrimTo(pool, n), cudaSuccess); /* already at most n: nothing to do */
    assert_int_equal(used_bytes() - base, n);
    assert_int_equal(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
    assert_int_equal(used_bytes(), base);
    assert_int_equal(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &zero), cudaSuccess);

    /* High-water marks reset to the current value, and only that way. */
    assert_int_equal(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &zero), cudaSuccess);
    assert_int_equal(pool_attr(pool, cudaMemPoolAttrReservedMemHigh), 0);
    assert_int_equal(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &five), cudaErrorInvalidValue);
    assert_int_equal(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &zero), cudaErrorInvalidValue);
    assert_int_equal(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, NULL), cudaErrorInvalidValue);
    int x;
    assert_int_equal(cudaMemPoolTrimTo((cudaMemPool_t)&x, 0), cudaErrorInvalidValue);
    (void)cudaGetLastError();

    /* cudaFree takes a stream-ordered allocation back too, and
     * cudaFreeAsync a cudaMalloc one. */
    void *d;
    assert_int_equal(cudaMallocAsync(&p, n, s), cudaSuccess);
    assert_int_equal(cudaFree(p), cudaSuccess);
    assert_int_equal(used_bytes(), base);
    assert_int_equal(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent), 0);
    assert_int_equal(cudaMalloc(&d, n), cudaSuccess);
    assert_int_equal(cudaFreeAsync(d, s), cudaSuccess);
    assert_int_equal(used_bytes(), base);
    cudaStreamDestroy(s);
}

/* Stream-ordered allocations count as device allocations for fault
 * injection (the second one fails here). */
static int body_fault(void)
{
    cudaStream_t s;
    cudaStreamCreate(&s);
    void *p, *q;
    CHILD_CHECK(cudaMallocAsync(&p, 4096, s) == cudaSuccess);
    CHILD_CHECK(cudaMallocAsync(&q, 4096, s) == cudaErrorMemoryAllocation);
    return 0;
}

/* A pool that does not fit gives back its completed frees first. */
static int body_full_device(void)
{
    cudaStream_t s;
    cudaStreamCreate(&s);
    void *p, *q;
    CHILD_CHECK(cudaMallocAsync(&p, 40 * MiB, s) == cudaSuccess);
    CHILD_CHECK(cudaFreeAsync(p, s) == cudaSuccess);
    CHILD_CHECK(cudaMallocAsync(&q, 50 * MiB, s) == cudaSuccess);
    CHILD_CHECK(cudaMallocAsync(&p, 20 * MiB, s) == cudaErrorMemoryAllocation);
    return 0;
}

static void test_pool_limits(void **state)
{
    (void)state;
    const char *fault[] = {"SIMGPU_FAULT_ALLOC=2", NULL};
    assert_true(CHILD_OK(sim_child_run(fault, "body_fault")));
    const char *small[] = {"SIMGPU_MEM=64M", NULL};
    assert_true(CHILD_OK(sim_child_run(small, "body_full_device")));
}

/* ---- misuse is caught ------------------------------------------------------------ */

/* Touching a block after its stream-ordered free. */
static int body_use_after_free(void)
{
    cudaStream_t s;
    cudaStreamCreate(&s);
    void *p;
    CHILD_CHECK(cudaMallocAsync(&p, MiB, s) == cudaSuccess);
    CHILD_CHECK(cudaMemsetAsync(p, 0, MiB, s) == cudaSuccess);
    CHILD_CHECK(cudaFreeAsync(p, s) == cudaSuccess);
    cudaMemsetAsync(p, 1, MiB, s); /* dies here */
    cudaStreamSynchronize(s);
    return 0;
}

/* A copy on stream b still reads the block when stream a frees it; with the
 * event dependency (wait != 0) the free comes after the read. */
static int free_while_read(int wait)
{
    const size_t n = 64 * MiB;
    cudaStream_t a, b;
    cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
    void *p, *pin;
    CHILD_CHECK(cudaMallocHost(&pin, n) == cudaSuccess);
    CHILD_CHECK(cudaMallocAsync(&p, n, a) == cudaSuccess);
    CHILD_CHECK(cudaMemsetAsync(p, 0, n, a) == cudaSuccess);
    CHILD_CHECK(cudaStreamSynchronize(a) == cudaSuccess);
    CHILD_CHECK(cudaMemcpyAsync(pin, p, n, cudaMemcpyDeviceToHost, b) == cudaSuccess);
    if (wait) {
        cudaEvent_t read;
        cudaEventCreateWithFlags(&read, cudaEventDisableTiming);
        cudaEventRecord(read, b);
        cudaStreamWaitEvent(a, read, 0);
    }
    CHILD_CHECK(cudaFreeAsync(p, a) == cudaSuccess);
    CHILD_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    return 0;
}
static int body_free_while_read(void) { return free_while_read(0); }
static int body_free_after_read(void) { return free_while_read(1); }

/* Stream a allocates behind 5 ms of work; stream b writes the block at once. */
static int use_before_alloc(int wait)
{
    cudaStream_t a, b;
    cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
    void *dev, *pin, *p;
    const size_t n = 50 * MiB;
    CHILD_CHECK(cudaMalloc(&dev, n) == cudaSuccess && cudaMallocHost(&pin, n) == cudaSuccess);
    CHILD_CHECK(cudaMemcpyAsync(dev, pin, n, cudaMemcpyHostToDevice, a) == cudaSuccess);
    CHILD_CHECK(cudaMallocAsync(&p, MiB, a) == cudaSuccess);
    if (wait) {
        cudaEvent_t allocated;
        cudaEventCreateWithFlags(&allocated, cudaEventDisableTiming);
        cudaEventRecord(allocated, a);
        cudaStreamWaitEvent(b, allocated, 0);
    }
    CHILD_CHECK(cudaMemsetAsync(p, 0, MiB, b) == cudaSuccess);
    CHILD_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    return 0;
}
static int body_use_before_alloc(void) { return use_before_alloc(0); }
static int body_use_after_alloc(void) { return use_before_alloc(1); }

static void test_misuse_is_caught(void **state)
{
    (void)state;
    assert_true(CHILD_SEGV(sim_child_run(NULL, "body_use_after_free")));
    assert_true(CHILD_SEGV(sim_child_run(NULL, "body_free_while_read")));
    assert_true(CHILD_OK(sim_child_run(NULL, "body_free_after_read")));
    assert_true(CHILD_SEGV(sim_child_run(NULL, "body_use_before_alloc")));
    assert_true(CHILD_OK(sim_child_run(NULL, "body_use_after_alloc")));
    /* The tables catch it without any memory behind the device too. */
    const char *off[] = {"SIMGPU_COMPUTE=0", NULL};
    assert_true(CHILD_SEGV(sim_child_run(off, "body_use_after_free")));
}

static const struct sim_child_body k_bodies[] = {
    {"body_fault", body_fault},
    {"body_free_after_read", body_free_after_read},
    {"body_free_while_read", body_free_while_read},
    {"body_full_device", body_full_device},
    {"body_use_after_alloc", body_use_after_alloc},
    {"body_use_after_free", body_use_after_free},
    {"body_use_before_alloc", body_use_before_alloc},
};

int main(int argc, char **argv)
{
    sim_child_main(argc, argv, k_bodies, sizeof k_bodies / sizeof k_bodies[0]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_use_free_in_stream_order),
        cmocka_unit_test(test_reuse_follows_stream_order),
        cmocka_unit_test(test_pool_accounting),
        cmocka_unit_test(test_pool_limits),
        cmocka_unit_test(test_misuse_is_caught),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
