/*
 * test_sim_swap_hazards.c — what a memory manager does with VMM memory on
 * the simulated device, and the two ordering bugs it can make there.
 *
 * A range is reserved, backed by one physical handle, mapped and opened; a
 * "framework" stream writes it (a memset, or a cuBLAS GEMM's output). The
 * manager swaps it out on a second, non-blocking "copy" stream into pinned
 * host memory, unmaps and releases it; later it maps a new handle at the
 * same address, copies the data back on the copy stream, and the framework
 * reads it (a device copy, or a GEMM's input). Done in order (the copy
 * stream waits for an event recorded after the write; the framework waits
 * for an event recorded after the copy back) nothing is reported and the
 * data survives the round trip. Without the first wait the copy reads
 * bytes still being written; without the second the framework reads bytes
 * still being copied in: on a GPU both are races that corrupt data now and
 * then; the hazard checker (SIMGPU_HAZARDS, sim/hazard.c) must report both,
 * with compute on and off. Unmapping the range while the swap-out's copy
 * still reads it, and touching it between unmap and map, are illegal
 * addresses.
 *
 * Each case runs in a child process; its stderr is kept to tell an ordering
 * hazard from an illegal address (both end in SIGSEGV).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "tests/sim_child.h"

#define MiB ((size_t)1 << 20)
/* The swapped range: a GEMM output of ROWS x COLS floats, 8 MiB, four granules. */
#define ROWS 1024
#define COLS 2048
#define INNER 64
#define RANGE ((size_t)ROWS * COLS * sizeof(float))

struct swap {
    CUdeviceptr r;                 /* the swapped range */
    CUmemGenericAllocationHandle h;
    cudaStream_t fw, copy;
    cublasHandle_t blas;
    void *pin;                     /* where the range lives while swapped out */
    float *a, *b, *out;            /* GEMM operands, the consumer's output */
    int gemm;                      /* writer and reader: cuBLAS (1) or memset and copy (0) */
};

static int compute_on(void)
{
    const char *c = getenv("SIMGPU_COMPUTE");
    return !(c && !strcmp(c, "0"));
}

static int map_range(struct swap *s)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHILD_CHECK(cuMemCreate(&s->h, RANGE, &prop, 0) == CUDA_SUCCESS);
    CHILD_CHECK(cuMemMap(s->r, RANGE, 0, s->h, 0) == CUDA_SUCCESS);
    CHILD_CHECK(cuMemSetAccess(s->r, RANGE, &acc, 1) == CUDA_SUCCESS);
    return 0;
}

static int setup(struct swap *s)
{
    memset(s, 0, sizeof *s);
    const char *w = getenv("SWAP_WRITER");
    s->gemm = w && !strcmp(w, "cublas");
    CHILD_CHECK(cudaFree(0) == cudaSuccess && cuInit(0) == CUDA_SUCCESS);
    CHILD_CHECK(cudaStreamCreate(&s->fw) == cudaSuccess); /* a framework's own (blocking) stream */
    CHILD_CHECK(cudaStreamCreateWithFlags(&s->copy, cudaStreamNonBlocking) == cudaSuccess);
    CHILD_CHECK(cudaMallocHost(&s->pin, RANGE) == cudaSuccess);
    CHILD_CHECK(cuMemAddressReserve(&s->r, RANGE, 0, 0, 0) == CUDA_SUCCESS);
    if (map_range(s))
        return 1;
    CHILD_CHECK(cublasCreate(&s->blas) == CUBLAS_STATUS_SUCCESS);
    CHILD_CHECK(cublasSetStream(s->blas, s->fw) == CUBLAS_STATUS_SUCCESS);
    CHILD_CHECK(cudaMalloc((void **)&s->a, (size_t)ROWS * INNER * sizeof(float)) == cudaSuccess);
    CHILD_CHECK(cudaMalloc((void **)&s->b, (size_t)INNER * COLS * sizeof(float)) == cudaSuccess);
    CHILD_CHECK(cudaMalloc((void **)&s->out, RANGE) == cudaSuccess);
    if (compute_on()) {
        /* A = 1, B = 0.5: every output of A x B is INNER / 2. */
        size_t n = (size_t)INNER * COLS;
        float *h = malloc(n * sizeof *h);
        CHILD_CHECK(h != NULL);
        for (size_t i = 0; i < n; i++)
            h[i] = 1.0f;
        CHILD_CHECK(cudaMemcpy(s->a, h, (size_t)ROWS * INNER * sizeof(float), cudaMemcpyHostToDevice) == 0);
        for (size_t i = 0; i < n; i++)
            h[i] = 0.5f;
        CHILD_CHECK(cudaMemcpy(s->b, h, n * sizeof(float), cudaMemcpyHostToDevice) == 0);
        free(h);
    }
    CHILD_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    return 0;
}

/* The framework writes the whole range on its stream. */
static int framework_write(struct swap *s)
{
    if (!s->gemm)
        return cudaMemsetAsync((void *)s->r, 0x5a, RANGE, s->fw) != cudaSuccess;
    const float one = 1.0f, zero = 0.0f;
    return cublasSgemm(s->blas, CUBLAS_OP_N, CUBLAS_OP_N, ROWS, COLS, INNER, &one, s->a, ROWS, s->b, INNER, &zero,
                       (float *)s->r, ROWS) != CUBLAS_STATUS_SUCCESS;
}

/* The framework reads the whole range on its stream: a copy of it, or a
 * GEMM taking it as the left operand (ROWS x COLS times a column of COLS). */
static int framework_read(struct swap *s)
{
    if (!s->gemm)
        return cudaMemcpyAsync(s->out, (void *)s->r, RANGE, cudaMemcpyDeviceToDevice, s->fw) != cudaSuccess;
    const float one = 1.0f, zero = 0.0f;
    /* B's first COLS floats are 0.5: the result is COLS * INNER / 4 per row. */
    return cublasSgemm(s->blas, CUBLAS_OP_N, CUBLAS_OP_N, ROWS, 1, COLS, &one, (const float *)s->r, ROWS, s->b,
                       COLS, &zero, s->out, ROWS) != CUBLAS_STATUS_SUCCESS;
}

static int teardown(struct swap *s)
{
    CHILD_CHECK(cublasDestroy(s->blas) == CUBLAS_STATUS_SUCCESS);
    CHILD_CHECK(cuMemUnmap(s->r, RANGE) == CUDA_SUCCESS && cuMemRelease(s->h) == CUDA_SUCCESS);
    CHILD_CHECK(cuMemAddressFree(s->r, RANGE) == CUDA_SUCCESS);
    CHILD_CHECK(cudaFree(s->a) == cudaSuccess && cudaFree(s->b) == cudaSuccess && cudaFree(s->out) == cudaSuccess);
    CHILD_CHECK(cudaFreeHost(s->pin) == cudaSuccess);
    CHILD_CHECK(cudaStreamDestroy(s->fw) == cudaSuccess && cudaStreamDestroy(s->copy) == cudaSuccess);
    return 0;
}

/* What the framework reads back after the round trip is what it wrote. */
static int check_data(struct swap *s)
{
    if (!compute_on())
        return 0;
    size_t n = s->gemm ? ROWS : RANGE;
    unsigned char *h = malloc(s->gemm ? n * sizeof(float) : n);
    CHILD_CHECK(h != NULL);
    CHILD_CHECK(cudaMemcpy(h, s->out, s->gemm ? n * sizeof(float) : n, cudaMemcpyDeviceToHost) == cudaSuccess);
    for (size_t i = 0; i < n; i++) {
        if (s->gemm)
            CHILD_CHECK(((float *)h)[i] == (float)COLS * INNER / 4);
        else
            CHILD_CHECK(h[i] == 0x5a);
    }
    free(h);
    return 0;
}

/* The manager's swap-out: device to pinned host on the copy stream, then
 * the memory goes back to the device. ordered: the copy stream first
 * waits for the framework's write. The host waits for the copy before it
 * unmaps (cuMemUnmap does not wait for work in flight) unless
 * SWAP_BREAK=unmap. */
static int swap_out(struct swap *s, int ordered)
{
    const char *b = getenv("SWAP_BREAK");
    int unmap_early = b && !strcmp(b, "unmap");
    if (ordered) {
        cudaEvent_t written;
        CHILD_CHECK(cudaEventCreateWithFlags(&written, cudaEventDisableTiming) == cudaSuccess);
        CHILD_CHECK(cudaEventRecord(written, s->fw) == cudaSuccess);
        CHILD_CHECK(cudaStreamWaitEvent(s->copy, written, 0) == cudaSuccess);
        CHILD_CHECK(cudaEventDestroy(written) == cudaSuccess);
    }
    CHILD_CHECK(cudaMemcpyAsync(s->pin, (void *)s->r, RANGE, cudaMemcpyDeviceToHost, s->copy) == cudaSuccess);
    if (!unmap_early)
        CHILD_CHECK(cudaStreamSynchronize(s->copy) == cudaSuccess);
    CHILD_CHECK(cuMemUnmap(s->r, RANGE) == CUDA_SUCCESS);
    CHILD_CHECK(cuMemRelease(s->h) == CUDA_SUCCESS);
    return 0;
}

/* The manager's swap-in: new memory at the same address, filled from the
 * pinned copy on the copy stream. ordered: the framework's stream waits
 * for the copy before it goes on. */
static int swap_in(struct swap *s, int ordered)
{
    if (map_range(s))
        return 1;
    CHILD_CHECK(cudaMemcpyAsync((void *)s->r, s->pin, RANGE, cudaMemcpyHostToDevice, s->copy) == cudaSuccess);
    if (ordered) {
        cudaEvent_t arrived;
        CHILD_CHECK(cudaEventCreateWithFlags(&arrived, cudaEventDisableTiming) == cudaSuccess);
        CHILD_CHECK(cudaEventRecord(arrived, s->copy) == cudaSuccess);
        CHILD_CHECK(cudaStreamWaitEvent(s->fw, arrived, 0) == cudaSuccess);
        CHILD_CHECK(cudaEventDestroy(arrived) == cudaSuccess);
    }
    return 0;
}

/* SWAP_BREAK: none (every wait), out (no wait before the swap-out's copy),
 * in (no wait after the swap-in's copy), unmap (no wait for the swap-out's
 * copy before the unmap). */
static int body_swap(void)
{
    const char *b = getenv("SWAP_BREAK");
    int break_out = b && !strcmp(b, "out"), break_in = b && !strcmp(b, "in");
    struct swap s;
    if (setup(&s) || framework_write(&s) || swap_out(&s, !break_out) || swap_in(&s, !break_in) ||
        framework_read(&s))
        return 1;
    CHILD_CHECK(cudaStreamSynchronize(s.fw) == cudaSuccess);
    return check_data(&s) || teardown(&s);
}

/* The framework uses the range while it is swapped out. */
static int body_touch_swapped_out(void)
{
    struct swap s;
    if (setup(&s) || framework_write(&s) || swap_out(&s, 1))
        return 1;
    framework_write(&s); /* must fault */
    return 0;
}

static const struct sim_child_body bodies[] = {
    {"body_swap", body_swap},
    {"body_touch_swapped_out", body_touch_swapped_out},
};

/* Runs body in a child with env, keeping what it writes on stderr in err.
 * Returns the wait status. */
static int run_captured(const char *const *env, const char *body, char *err, size_t cap)
{
    char path[] = "/tmp/sn_swap_stderr_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd, 2);
        for (const char *const *e = env; e && *e; e++)
            putenv((char *)*e);
        execl("/proc/self/exe", "/proc/self/exe", "--child", body, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    ssize_t n = pread(fd, err, cap - 1, 0);
    err[n > 0 ? n : 0] = '\0';
    close(fd);
    return st;
}

static const char *const k_writers[] = {"SWAP_WRITER=memset", "SWAP_WRITER=cublas"};
static const char *const k_compute[] = {"SIMGPU_COMPUTE=1", "SIMGPU_COMPUTE=0"};

/* Runs body_swap with SWAP_BREAK=brk for every writer and compute mode;
 * want_hazard: it must die of an ordering hazard by an op that `by`
 * names, reported against an earlier write; else it must pass silently. */
static void swap_everywhere(const char *brk, int want_hazard, const char *by)
{
    static char err[65536];
    for (size_t w = 0; w < 2; w++)
        for (size_t c = 0; c < 2; c++) {
            const char *env[] = {brk, k_writers[w], k_compute[c], NULL};
            int st = run_captured(env, "body_swap", err, sizeof err);
            if (want_hazard) {
                if (!CHILD_SEGV(st) || !strstr(err, "ordering hazard") || !strstr(err, by) ||
                    !strstr(err, "an earlier write") || strstr(err, "illegal address"))
                    fail_msg("%s, %s, %s: expected an ordering hazard by %s, got status %d:\n%s", brk,
                             k_writers[w], k_compute[c], by, st, err);
            } else if (!CHILD_OK(st) || strstr(err, "hazard") || strstr(err, "illegal")) {
                fail_msg("%s, %s, %s: expected a clean run, got status %d:\n%s", brk, k_writers[w], k_compute[c],
                         st, err);
            }
        }
}

/* (a) and (c): ordered swap-out and swap-in; the data survives. */
static void test_ordered_swap_is_clean(void **state)
{
    (void)state;
    swap_everywhere("SWAP_BREAK=none", 0, NULL);
}

/* (b): the copy reads the range while the framework still writes it. */
static void test_unordered_swap_out_is_a_hazard(void **state)
{
    (void)state;
    swap_everywhere("SWAP_BREAK=out", 1, "memcpyDtoH reads");
}

/* (d): the framework reads the range while the copy still writes it. */
static void test_unordered_swap_in_is_a_hazard(void **state)
{
    (void)state;
    swap_everywhere("SWAP_BREAK=in", 1, "reads");
    /* ... and it is the framework's read that is caught, not the copy. */
    static char err[65536];
    const char *env[] = {"SWAP_BREAK=in", "SWAP_WRITER=memset", NULL};
    assert_true(CHILD_SEGV(run_captured(env, "body_swap", err, sizeof err)));
    assert_non_null(strstr(err, "ordering hazard: memcpyDtoD reads"));
    const char *genv[] = {"SWAP_BREAK=in", "SWAP_WRITER=cublas", NULL};
    assert_true(CHILD_SEGV(run_captured(genv, "body_swap", err, sizeof err)));
    assert_non_null(strstr(err, "ordering hazard: cublasSgemm_v2 reads"));
}

/* (e): the range is unmapped while the swap-out's copy still reads it.
 * The real driver does not wait (an H200 gave "unspecified launch
 * failure" to a manager that relied on it), so the copy would fault:
 * reported as an illegal address, with compute on and off. */
static void test_unmap_in_flight_is_an_illegal_address(void **state)
{
    (void)state;
    static char err[65536];
    for (size_t w = 0; w < 2; w++)
        for (size_t c = 0; c < 2; c++) {
            const char *env[] = {"SWAP_BREAK=unmap", k_writers[w], k_compute[c], NULL};
            int st = run_captured(env, "body_swap", err, sizeof err);
            if (!CHILD_SEGV(st) || !strstr(err, "illegal address: cuMemUnmap") ||
                strstr(err, "ordering hazard"))
                fail_msg("%s, %s: expected an illegal address at the unmap, got status %d:\n%s", k_writers[w],
                         k_compute[c], st, err);
        }
}

/* With SIMGPU_HAZARDS=warn the race is reported and the run goes on. */
static void test_warn_reports_and_continues(void **state)
{
    (void)state;
    static char err[65536];
    const char *env[] = {"SWAP_BREAK=out", "SWAP_WRITER=cublas", "SIMGPU_HAZARDS=warn", NULL};
    assert_true(CHILD_OK(run_captured(env, "body_swap", err, sizeof err)));
    assert_non_null(strstr(err, "ordering hazard: memcpyDtoH reads"));
}

/* Between unmap and map the range is an illegal address, for a memset and
 * for cuBLAS, with compute on and off (the tables alone catch it). */
static void test_swapped_out_range_faults(void **state)
{
    (void)state;
    static char err[65536];
    for (size_t w = 0; w < 2; w++)
        for (size_t c = 0; c < 2; c++) {
            const char *env[] = {k_writers[w], k_compute[c], NULL};
            int st = run_captured(env, "body_touch_swapped_out", err, sizeof err);
            if (!CHILD_SEGV(st) || !strstr(err, "illegal address") || !strstr(err, "reserved but not mapped"))
                fail_msg("%s, %s: expected an illegal address, got status %d:\n%s", k_writers[w], k_compute[c], st,
                         err);
        }
}

int main(int argc, char **argv)
{
    sim_child_main(argc, argv, bodies, sizeof bodies / sizeof bodies[0]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ordered_swap_is_clean),
        cmocka_unit_test(test_unordered_swap_out_is_a_hazard),
        cmocka_unit_test(test_unordered_swap_in_is_a_hazard),
        cmocka_unit_test(test_unmap_in_flight_is_an_illegal_address),
        cmocka_unit_test(test_warn_reports_and_continues),
        cmocka_unit_test(test_swapped_out_range_faults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
