/*
 * test_sim_context.c — driver initialisation, contexts and threads on the
 * simulated device, seen the way an unmodified program sees them: compiled
 * against the real headers, linked against the real import libraries, run
 * on the simulator through LD_LIBRARY_PATH only.
 *
 * The two-thread test is also the one ThreadSanitizer reads
 * (make SANITIZE=thread test): a data race inside the simulated libraries
 * makes the binary exit non-zero there.
 */
#include <pthread.h>
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

/* ---- initialisation and contexts through the driver -------------------------- */

/* Before cuInit everything but a few queries is refused; after it, calls on
 * "the current context" are refused until the thread has one. */
static int body_driver_needs_init_and_context(void)
{
    CUdeviceptr p = 0;
    int n = -1, v = 0;
    CUcontext c = (CUcontext)&n;
    CHILD_CHECK(cuDriverGetVersion(&v) == CUDA_SUCCESS && v == CUDA_VERSION);
    CHILD_CHECK(cuMemAlloc(&p, 4096) == CUDA_ERROR_NOT_INITIALIZED);
    CHILD_CHECK(cuMemFree((CUdeviceptr)0x1000) == CUDA_ERROR_NOT_INITIALIZED);
    CHILD_CHECK(cuDeviceGetCount(&n) == CUDA_ERROR_NOT_INITIALIZED);
    CHILD_CHECK(cuCtxGetCurrent(&c) == CUDA_ERROR_NOT_INITIALIZED);
    CHILD_CHECK(cuDevicePrimaryCtxRetain(&c, 0) == CUDA_ERROR_NOT_INITIALIZED);
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemGenericAllocationHandle h;
    CHILD_CHECK(cuMemCreate(&h, 2 * MiB, &prop, 0) == CUDA_ERROR_NOT_INITIALIZED);

    CHILD_CHECK(cuInit(1) == CUDA_ERROR_INVALID_VALUE);
    CHILD_CHECK(cuInit(0) == CUDA_SUCCESS);
    CHILD_CHECK(cuDeviceGetCount(&n) == CUDA_SUCCESS && n == 1);
    CHILD_CHECK(cuCtxGetCurrent(&c) == CUDA_SUCCESS && c == NULL);
    size_t fr, tot;
    void *hp;
    CUstream s;
    CUdevice d;
    CHILD_CHECK(cuMemAlloc(&p, 4096) == CUDA_ERROR_INVALID_CONTEXT);
    CHILD_CHECK(cuMemGetInfo(&fr, &tot) == CUDA_ERROR_INVALID_CONTEXT);
    CHILD_CHECK(cuMemAllocHost(&hp, 4096) == CUDA_ERROR_INVALID_CONTEXT);
    CHILD_CHECK(cuStreamCreate(&s, 0) == CUDA_ERROR_INVALID_CONTEXT);
    CHILD_CHECK(cuCtxGetDevice(&d) == CUDA_ERROR_INVALID_CONTEXT);
    CHILD_CHECK(cuCtxSynchronize() == CUDA_ERROR_INVALID_CONTEXT);
    /* Physical allocations name their device: no context needed. */
    CHILD_CHECK(cuMemCreate(&h, 2 * MiB, &prop, 0) == CUDA_SUCCESS);
    CHILD_CHECK(cuMemRelease(h) == CUDA_SUCCESS);

    CUcontext primary;
    CHILD_CHECK(cuDevicePrimaryCtxRetain(&primary, 0) == CUDA_SUCCESS && primary != NULL);
    CHILD_CHECK(cuCtxSetCurrent(primary) == CUDA_SUCCESS);
    CHILD_CHECK(cuCtxGetCurrent(&c) == CUDA_SUCCESS && c == primary);
    CHILD_CHECK(cuCtxGetDevice(&d) == CUDA_SUCCESS && d == 0);
    CHILD_CHECK(cuMemAlloc(&p, 4096) == CUDA_SUCCESS && p != 0);
    CHILD_CHECK(cuMemsetD8(p, 7, 4096) == CUDA_SUCCESS);
    CHILD_CHECK(cuMemFree(p) == CUDA_SUCCESS);
    unsigned flags;
    int active = 0;
    CHILD_CHECK(cuDevicePrimaryCtxGetState(0, &flags, &active) == CUDA_SUCCESS && active == 1);
    /* The last release makes the primary context inactive, even where it is
     * still current; releasing once more is documented as an error. */
    CHILD_CHECK(cuDevicePrimaryCtxRelease(0) == CUDA_SUCCESS);
    CHILD_CHECK(cuDevicePrimaryCtxGetState(0, &flags, &active) == CUDA_SUCCESS && active == 0);
    CHILD_CHECK(cuMemAlloc(&p, 4096) == CUDA_ERROR_INVALID_CONTEXT);
    CHILD_CHECK(cuDevicePrimaryCtxRelease(0) == CUDA_ERROR_INVALID_CONTEXT);
    CHILD_CHECK(cuDevicePrimaryCtxRelease(1) == CUDA_ERROR_INVALID_DEVICE);
    return 0;
}

/* cuCtxCreate pushes, cuCtxPopCurrent / cuCtxSetCurrent(NULL) pop, the
 * current device follows the top of the stack, and a destroyed context is
 * recognised as such. Two devices. */
static int body_context_stack(void)
{
    CHILD_CHECK(cuInit(0) == CUDA_SUCCESS);
    CUcontext c0, c1, top;
    CUdevice d;
    CHILD_CHECK(cuCtxCreate(&c0, NULL, 0, 0) == CUDA_SUCCESS);
    CHILD_CHECK(cuCtxCreate(&c1, NULL, 0, 1) == CUDA_SUCCESS);
    CHILD_CHECK(cuCtxCreate(&top, NULL, 0, 2) == CUDA_ERROR_INVALID_DEVICE);
    CHILD_CHECK(cuCtxGetCurrent(&top) == CUDA_SUCCESS && top == c1);
    CHILD_CHECK(cuCtxGetDevice(&d) == CUDA_SUCCESS && d == 1);
    CUdeviceptr p;
    int ordinal = -1;
    CHILD_CHECK(cuMemAlloc(&p, 4096) == CUDA_SUCCESS);
    CHILD_CHECK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p) == CUDA_SUCCESS);
    CHILD_CHECK(ordinal == 1);
    CHILD_CHECK(cuMemFree(p) == CUDA_SUCCESS);

    CHILD_CHECK(cuCtxPopCurrent(&top) == CUDA_SUCCESS && top == c1);
    CHILD_CHECK(cuCtxGetDevice(&d) == CUDA_SUCCESS && d == 0);
    CHILD_CHECK(cuCtxPushCurrent(c1) == CUDA_SUCCESS);
    CHILD_CHECK(cuCtxSetCurrent(NULL) == CUDA_SUCCESS); /* pops c1 */
    CHILD_CHECK(cuCtxGetCurrent(&top) == CUDA_SUCCESS && top == c0);
    CHILD_CHECK(cuCtxSetCurrent(c1) == CUDA_SUCCESS); /* replaces c0 */
    CHILD_CHECK(cuCtxPopCurrent(&top) == CUDA_SUCCESS && top == c1);
    CHILD_CHECK(cuCtxGetCurrent(&top) == CUDA_SUCCESS && top == NULL);
    CHILD_CHECK(cuCtxPopCurrent(&top) == CUDA_ERROR_INVALID_CONTEXT);

    CHILD_CHECK(cuCtxPushCurrent(c0) == CUDA_SUCCESS);
    CHILD_CHECK(cuCtxDestroy(c0) == CUDA_SUCCESS); /* current: popped too */
    CHILD_CHECK(cuCtxGetCurrent(&top) == CUDA_SUCCESS && top == NULL);
    CHILD_CHECK(cuCtxPushCurrent(c0) == CUDA_ERROR_CONTEXT_IS_DESTROYED);
    CHILD_CHECK(cuCtxDestroy(c0) == CUDA_ERROR_INVALID_CONTEXT);
    CHILD_CHECK(cuCtxPushCurrent(NULL) == CUDA_ERROR_INVALID_VALUE);
    int junk;
    CHILD_CHECK(cuCtxSetCurrent((CUcontext)&junk) == CUDA_ERROR_INVALID_CONTEXT);
    CUcontext primary;
    CHILD_CHECK(cuDevicePrimaryCtxRetain(&primary, 1) == CUDA_SUCCESS);
    CHILD_CHECK(cuCtxDestroy(primary) == CUDA_ERROR_INVALID_CONTEXT);
    CHILD_CHECK(cuCtxDestroy(c1) == CUDA_SUCCESS);
    return 0;
}

static void test_driver_needs_init_and_context(void **state)
{
    (void)state;
    assert_true(CHILD_OK(sim_child_run(NULL, "body_driver_needs_init_and_context")));
    const char *two[] = {"SIMGPU_DEVICES=2", NULL};
    assert_true(CHILD_OK(sim_child_run(two, "body_context_stack")));
}

/* ---- the runtime's lazy initialisation ----------------------------------------- */

struct probe { CUresult before, after; CUcontext ctx; int dev; };

/* A thread that has not used the runtime has no context, even once another
 * thread has initialised everything; its first runtime call gives it the
 * device's primary context. */
static void *fresh_thread(void *arg)
{
    struct probe *pr = arg;
    CUdeviceptr p;
    pr->before = cuMemAlloc(&p, 4096);
    size_t fr, tot;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess)
        return NULL;
    pr->after = cuMemAlloc(&p, 4096);
    if (pr->after == CUDA_SUCCESS)
        cuMemFree(p);
    cuCtxGetCurrent(&pr->ctx);
    cudaGetDevice(&pr->dev);
    return NULL;
}

static void *set_device_thread(void *arg)
{
    struct probe *pr = arg;
    pr->before = cudaSetDevice(1) == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
    cuCtxGetCurrent(&pr->ctx);
    CUdeviceptr p;
    pr->after = cuMemAlloc(&p, 4096);
    int ordinal = -1;
    if (pr->after == CUDA_SUCCESS && cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p) ==
                                         CUDA_SUCCESS)
        cuMemFree(p);
    pr->dev = ordinal;
    return NULL;
}

static int body_runtime_initialises_lazily(void)
{
    /* No cuInit: the runtime's first call initialises the driver and makes
     * device 0's primary context current on this thread. */
    void *d;
    CHILD_CHECK(cudaMalloc(&d, 4096) == cudaSuccess);
    CUcontext cur = NULL, primary0 = NULL, primary1 = NULL;
    CHILD_CHECK(cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur != NULL);
    CHILD_CHECK(cuDevicePrimaryCtxRetain(&primary0, 0) == CUDA_SUCCESS && cur == primary0);
    CHILD_CHECK(cuDevicePrimaryCtxRetain(&primary1, 1) == CUDA_SUCCESS && primary1 != primary0);
    CUdeviceptr p;
    CHILD_CHECK(cuMemAlloc(&p, 4096) == CUDA_SUCCESS && cuMemFree(p) == CUDA_SUCCESS);

    pthread_t t;
    struct probe fresh = {0};
    CHILD_CHECK(pthread_create(&t, NULL, fresh_thread, &fresh) == 0 && pthread_join(t, NULL) == 0);
    CHILD_CHECK(fresh.before == CUDA_ERROR_INVALID_CONTEXT);
    CHILD_CHECK(fresh.after == CUDA_SUCCESS && fresh.ctx == primary0 && fresh.dev == 0);

    /* cudaSetDevice makes that device's primary context current. */
    struct probe sel = {0};
    CHILD_CHECK(pthread_create(&t, NULL, set_device_thread, &sel) == 0 && pthread_join(t, NULL) == 0);
    CHILD_CHECK(sel.before == CUDA_SUCCESS && sel.ctx == primary1);
    CHILD_CHECK(sel.after == CUDA_SUCCESS && sel.dev == 1);

    /* A context made current through the driver is the runtime's too. */
    CUcontext mine;
    CHILD_CHECK(cuCtxCreate(&mine, NULL, 0, 1) == CUDA_SUCCESS);
    int dev = -1;
    CHILD_CHECK(cudaGetDevice(&dev) == cudaSuccess && dev == 1);
    void *d1;
    struct cudaPointerAttributes at;
    CHILD_CHECK(cudaMalloc(&d1, 4096) == cudaSuccess);
    CHILD_CHECK(cudaPointerGetAttributes(&at, d1) == cudaSuccess && at.device == 1);
    CHILD_CHECK(cudaFree(d1) == cudaSuccess);
    /* Without any context the runtime binds its device's primary again. */
    CHILD_CHECK(cuCtxDestroy(mine) == CUDA_SUCCESS);
    CHILD_CHECK(cuCtxSetCurrent(NULL) == CUDA_SUCCESS);
    CHILD_CHECK(cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == NULL);
    CHILD_CHECK(cudaFree(d) == cudaSuccess);
    CHILD_CHECK(cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == primary0);
    return 0;
}

static void test_runtime_initialises_lazily(void **state)
{
    (void)state;
    const char *two[] = {"SIMGPU_DEVICES=2", NULL};
    assert_true(CHILD_OK(sim_child_run(two, "body_runtime_initialises_lazily")));
}

/* ---- threads ----------------------------------------------------------------- */

struct worker { unsigned char seed; int rounds; int failed; };

/* Pinned and device allocations, a set and copies of 4 KiB, freed again: the
 * pattern of a data-loading thread next to a training thread. The pinned
 * allocation comes first, while neither thread has taken the simulator's
 * lock yet, which is when unlocked shared state is exposed. */
static void *worker_main(void *arg)
{
    struct worker *w = arg;
    unsigned char back[4096];
    for (int i = 0; i < w->rounds && !w->failed; i++) {
        void *d = NULL, *h = NULL;
        if (cudaMallocHost(&h, 4096) != cudaSuccess || cudaMalloc(&d, 4096) != cudaSuccess) {
            w->failed = 1;
            break;
        }
        unsigned char v = (unsigned char)(w->seed + i);
        if (cudaMemset(d, v, 4096) != cudaSuccess || cudaMemcpy(h, d, 4096, cudaMemcpyDeviceToHost) != cudaSuccess ||
            cudaMemcpy(back, h, 4096, cudaMemcpyHostToHost) != cudaSuccess)
            w->failed = 1;
        for (size_t k = 0; k < sizeof back && !w->failed; k++)
            if (back[k] != v)
                w->failed = 1;
        if (cudaFree(d) != cudaSuccess || cudaFreeHost(h) != cudaSuccess)
            w->failed = 1;
    }
    return NULL;
}

static void test_two_threads_allocate_copy_free(void **state)
{
    (void)state;
    pthread_t t[2];
    struct worker w[2] = {{0x11, 200, 0}, {0x80, 200, 0}};
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    assert_false(w[0].failed);
    assert_false(w[1].failed);
    size_t fr, tot;
    assert_int_equal(cudaMemGetInfo(&fr, &tot), cudaSuccess);
    assert_int_equal(fr, tot);
}

static const struct sim_child_body k_bodies[] = {
    {"body_context_stack", body_context_stack},
    {"body_driver_needs_init_and_context", body_driver_needs_init_and_context},
    {"body_runtime_initialises_lazily", body_runtime_initialises_lazily},
};

int main(int argc, char **argv)
{
    sim_child_main(argc, argv, k_bodies, sizeof k_bodies / sizeof k_bodies[0]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_driver_needs_init_and_context),
        cmocka_unit_test(test_runtime_initialises_lazily),
        cmocka_unit_test(test_two_threads_allocate_copy_free),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
