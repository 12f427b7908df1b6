/*
 * calibrate.c — the per-operation half of the simulator's calibration: it
 * times single cuDNN convolutions, host<->device copies and the host side
 * of memory-management calls the way the
 * published benchmarks it is compared with do, so that bench/calibrate.sh
 * can put the simulated figure next to the published one.
 *
 *   calibrate conv W H C N K R S PAD_W PAD_H STRIDE_W STRIDE_H
 *       DeepBench's conv_bench: each operation's algorithm from
 *       cudnnFind*Algorithm (the fastest, no workspace limit), one warm-up
 *       call, then the mean of repeated calls; prints
 *       "conv fwd <ms> bwd_data <ms> bwd_filter <ms> total <ms>", then
 *       "algos fwd <a> bwd_data <a> bwd_filter <a>" (the algorithms found)
 *   calibrate copy h2d|d2h BYTES
 *       CUDA's bandwidthTest: repeated cudaMemcpyAsync between pinned host
 *       memory and the device, timed with events; prints "copy <dir> <GB/s>"
 *   calibrate duplex BYTES
 *       nvbandwidth's host_to_device_bidirectional_memcpy_ce: a stream of
 *       copies in each direction at once against the same copies alone;
 *       prints "duplex one_way <GB/s> both_ways <GB/s> ratio <both/one>"
 *   calibrate host OP BYTES
 *       the host time of one memory-management call on an idle device, as
 *       the published micro-benchmarks take it (a timer around each call):
 *       OP is cudaMalloc, cudaFree, cudaMallocHost, cudaFreeHost,
 *       cuMemAddressReserve, cuMemAddressFree, cuMemCreate, cuMemRelease,
 *       cuMemMap, cuMemSetAccess or cuMemUnmap, on BYTES (one VMM handle of
 *       BYTES; several sizes separated by commas); prints, per size,
 *       "host <op> <us> us wall <us> us bytes <n>", the means over the
 *       calls by events and by a wall-clock timer
 *   calibrate busy OP BYTES
 *       whether OP waits for work in flight: OP on an object of BYTES while
 *       about 50 ms of unrelated device copies run; prints "busy <op> wall
 *       <us> us queue <ms> ms still_busy <0|1>" (1: OP returned before the
 *       device finished, so it did not wait for it)
 *   calibrate pieces BYTES
 *       BYTES mapped from 2 MiB handles, one mapping each: the wall time of
 *       one cuMemSetAccess over all of them and of each cuMemUnmap; prints
 *       "pieces <mappings> access <us> us unmap_each <us> us"
 *
 * Like the reference trainer it is an ordinary CUDA program (real headers,
 * real import libraries): LD_LIBRARY_PATH decides whether it runs on the
 * simulator or on a GPU. Exit status 0, 1 on a CUDA or cuDNN error, 2 on
 * bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#define REPEATS 10

static void die_cuda(cudaError_t e, const char *what)
{
    fprintf(stderr, "calibrate: %s: %s\n", what, cudaGetErrorString(e));
    exit(1);
}
static void die_cudnn(cudnnStatus_t s, const char *what)
{
    fprintf(stderr, "calibrate: %s: %s\n", what, cudnnGetErrorString(s));
    exit(1);
}
static void die_cu(CUresult r, const char *what)
{
    const char *name = NULL;
    cuGetErrorName(r, &name);
    fprintf(stderr, "calibrate: %s: %s\n", what, name ? name : "unknown driver error");
    exit(1);
}
#define CU(call) do { CUresult r_ = (call); if (r_ != CUDA_SUCCESS) die_cu(r_, #call); } while (0)
#define CK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) die_cuda(e_, #call); } while (0)
#define DK(call) do { cudnnStatus_t s_ = (call); if (s_ != CUDNN_STATUS_SUCCESS) die_cudnn(s_, #call); } while (0)

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    CK(cudaMalloc(&p, bytes ? bytes : 1));
    return p;
}

/* ---- convolutions -------------------------------------------------------- */

struct conv {
    cudnnHandle_t h;
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t c;
    void *dx, *dw, *dy, *ws;
    size_t ws_bytes;
};

/* Mean device time of REPEATS calls of op after one warm-up call. */
static double time_op(struct conv *v, int which, int algo)
{
    const float one = 1.0f, zero = 0.0f;
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i <= REPEATS; i++) {
        if (i == 1)
            CK(cudaEventRecord(a, 0));
        switch (which) {
        case 0:
            DK(cudnnConvolutionForward(v->h, &one, v->x, v->dx, v->w, v->dw, v->c, algo, v->ws, v->ws_bytes,
                                       &zero, v->y, v->dy));
            break;
        case 1:
            DK(cudnnConvolutionBackwardData(v->h, &one, v->w, v->dw, v->y, v->dy, v->c, algo, v->ws,
                                            v->ws_bytes, &zero, v->x, v->dx));
            break;
        default:
            DK(cudnnConvolutionBackwardFilter(v->h, &one, v->x, v->dx, v->y, v->dy, v->c, algo, v->ws,
                                              v->ws_bytes, &zero, v->w, v->dw));
            break;
        }
    }
    CK(cudaEventRecord(b, 0));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return ms / REPEATS;
}

static void ensure_workspace(struct conv *v, size_t bytes)
{
    if (bytes <= v->ws_bytes)
        return;
    if (v->ws)
        CK(cudaFree(v->ws));
    v->ws = dev_alloc(bytes);
    v->ws_bytes = bytes;
}

static int run_conv(char **a)
{
    int w = atoi(a[0]), hgt = atoi(a[1]), c = atoi(a[2]), n = atoi(a[3]), k = atoi(a[4]);
    int r = atoi(a[5]), s = atoi(a[6]), pw = atoi(a[7]), ph = atoi(a[8]), sw = atoi(a[9]), sh = atoi(a[10]);
    if (w < 1 || hgt < 1 || c < 1 || n < 1 || k < 1 || r < 1 || s < 1 || pw < 0 || ph < 0 || sw < 1 || sh < 1) {
        fprintf(stderr, "calibrate: conv: bad shape\n");
        return 2;
    }
    struct conv v;
    memset(&v, 0, sizeof v);
    DK(cudnnCreate(&v.h));
    DK(cudnnCreateTensorDescriptor(&v.x));
    DK(cudnnCreateTensorDescriptor(&v.y));
    DK(cudnnCreateFilterDescriptor(&v.w));
    DK(cudnnCreateConvolutionDescriptor(&v.c));
    /* DeepBench's R is the filter's height and S its width (its README:
     * "R = 5, S = 20" for a 700-wide, 161-high input). */
    DK(cudnnSetTensor4dDescriptor(v.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, hgt, w));
    DK(cudnnSetFilter4dDescriptor(v.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c, r, s));
    DK(cudnnSetConvolution2dDescriptor(v.c, ph, pw, sh, sw, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    int on, oc, oh, ow;
    DK(cudnnGetConvolution2dForwardOutputDim(v.c, v.x, v.w, &on, &oc, &oh, &ow));
    DK(cudnnSetTensor4dDescriptor(v.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, on, oc, oh, ow));
    v.dx = dev_alloc((size_t)n * c * hgt * w * sizeof(float));
    v.dw = dev_alloc((size_t)k * c * r * s * sizeof(float));
    v.dy = dev_alloc((size_t)on * oc * oh * ow * sizeof(float));

    int got = 0;
    cudnnConvolutionFwdAlgoPerf_t fp;
    DK(cudnnFindConvolutionForwardAlgorithm(v.h, v.x, v.w, v.c, v.y, 1, &got, &fp));
    cudnnConvolutionBwdDataAlgoPerf_t dp;
    DK(cudnnFindConvolutionBackwardDataAlgorithm(v.h, v.w, v.y, v.c, v.x, 1, &got, &dp));
    cudnnConvolutionBwdFilterAlgoPerf_t wp;
    DK(cudnnFindConvolutionBackwardFilterAlgorithm(v.h, v.x, v.y, v.c, v.w, 1, &got, &wp));
    ensure_workspace(&v, fp.memory);
    double t_fwd = time_op(&v, 0, fp.algo);
    ensure_workspace(&v, dp.memory);
    double t_bd = time_op(&v, 1, dp.algo);
    ensure_workspace(&v, wp.memory);
    double t_bf = time_op(&v, 2, wp.algo);
    printf("conv fwd %.4f bwd_data %.4f bwd_filter %.4f total %.4f ms\n", t_fwd, t_bd, t_bf, t_fwd + t_bd + t_bf);
    printf("algos fwd %d bwd_data %d bwd_filter %d\n", (int)fp.algo, (int)dp.algo, (int)wp.algo);
    CK(cudaFree(v.dx));
    CK(cudaFree(v.dw));
    CK(cudaFree(v.dy));
    if (v.ws)
        CK(cudaFree(v.ws));
    DK(cudnnDestroyTensorDescriptor(v.x));
    DK(cudnnDestroyTensorDescriptor(v.y));
    DK(cudnnDestroyFilterDescriptor(v.w));
    DK(cudnnDestroyConvolutionDescriptor(v.c));
    DK(cudnnDestroy(v.h));
    return 0;
}

/* ---- copies -------------------------------------------------------------- */

/* Milliseconds for `count` copies on each of the streams given (h2d and/or
 * d2h; NULL: that direction idle), from a common start to the last end. */
static float time_copies(cudaStream_t h2d, cudaStream_t d2h, void *host_src, void *host_dst, void *dev_src,
                         void *dev_dst, size_t bytes, int count)
{
    cudaEvent_t start, a, b;
    CK(cudaEventCreate(&start));
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    CK(cudaDeviceSynchronize());
    CK(cudaEventRecord(start, h2d ? h2d : d2h));
    if (h2d && d2h)
        CK(cudaStreamWaitEvent(d2h, start, 0));
    for (int i = 0; i < count; i++) {
        if (h2d)
            CK(cudaMemcpyAsync(dev_dst, host_src, bytes, cudaMemcpyHostToDevice, h2d));
        if (d2h)
            CK(cudaMemcpyAsync(host_dst, dev_src, bytes, cudaMemcpyDeviceToHost, d2h));
    }
    if (h2d)
        CK(cudaEventRecord(a, h2d));
    if (d2h)
        CK(cudaEventRecord(b, d2h));
    CK(cudaDeviceSynchronize());
    float ms_a = 0, ms_b = 0;
    if (h2d)
        CK(cudaEventElapsedTime(&ms_a, start, a));
    if (d2h)
        CK(cudaEventElapsedTime(&ms_b, start, b));
    CK(cudaEventDestroy(start));
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return ms_a > ms_b ? ms_a : ms_b;
}

static int run_copy(const char *dir, const char *size, int duplex)
{
    char *end;
    unsigned long long bytes = strtoull(size, &end, 10);
    if (*end || bytes == 0 || (!duplex && strcmp(dir, "h2d") && strcmp(dir, "d2h"))) {
        fprintf(stderr, "calibrate: copy: expected h2d|d2h and a byte count\n");
        return 2;
    }
    void *hs, *hd;
    CK(cudaMallocHost(&hs, bytes));
    CK(cudaMallocHost(&hd, bytes));
    void *ds = dev_alloc(bytes), *dd = dev_alloc(bytes);
    cudaStream_t s1, s2;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    const int count = REPEATS;
    double gb = (double)bytes * count / 1e9;
    if (!duplex) {
        int h = !strcmp(dir, "h2d");
        time_copies(h ? s1 : NULL, h ? NULL : s2, hs, hd, ds, dd, bytes, 1); /* warm-up */
        float ms = time_copies(h ? s1 : NULL, h ? NULL : s2, hs, hd, ds, dd, bytes, count);
        printf("copy %s %.2f GB/s\n", dir, gb / (ms / 1e3));
    } else {
        float one = time_copies(s1, NULL, hs, hd, ds, dd, bytes, count);
        float both = time_copies(s1, s2, hs, hd, ds, dd, bytes, count);
        double one_way = gb / (one / 1e3), both_ways = 2 * gb / (both / 1e3);
        printf("duplex one_way %.2f both_ways %.2f ratio %.3f\n", one_way, both_ways, both_ways / one_way);
    }
    CK(cudaStreamDestroy(s1));
    CK(cudaStreamDestroy(s2));
    CK(cudaFree(ds));
    CK(cudaFree(dd));
    CK(cudaFreeHost(hs));
    CK(cudaFreeHost(hd));
    return 0;
}

/* ---- host side of memory management ------------------------------------- */

enum host_op { H_MALLOC, H_FREE, H_PIN, H_UNPIN, H_RESERVE, H_ADDR_FREE, H_CREATE, H_RELEASE, H_MAP, H_ACCESS, H_UNMAP };
static const char *const k_host_ops[] = {"cudaMalloc", "cudaFree", "cudaMallocHost", "cudaFreeHost",
                                         "cuMemAddressReserve", "cuMemAddressFree", "cuMemCreate",
                                         "cuMemRelease", "cuMemMap", "cuMemSetAccess", "cuMemUnmap"};

/* The object one measured call works on. */
struct host_obj { void *p; CUdeviceptr va; CUmemGenericAllocationHandle h; size_t bytes; };

static void host_step(enum host_op op, struct host_obj *o)
{
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemAccessDesc acc = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                           .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    switch (op) {
    case H_MALLOC: CK(cudaMalloc(&o->p, o->bytes)); break;
    case H_FREE: CK(cudaFree(o->p)); break;
    case H_PIN: CK(cudaMallocHost(&o->p, o->bytes)); break;
    case H_UNPIN: CK(cudaFreeHost(o->p)); break;
    case H_RESERVE: CU(cuMemAddressReserve(&o->va, o->bytes, 0, 0, 0)); break;
    case H_ADDR_FREE: CU(cuMemAddressFree(o->va, o->bytes)); break;
    case H_CREATE: CU(cuMemCreate(&o->h, o->bytes, &prop, 0)); break;
    case H_RELEASE: CU(cuMemRelease(o->h)); break;
    case H_MAP: CU(cuMemMap(o->va, o->bytes, 0, o->h, 0)); break;
    case H_ACCESS: CU(cuMemSetAccess(o->va, o->bytes, &acc, 1)); break;
    case H_UNMAP: CU(cuMemUnmap(o->va, o->bytes)); break;
    }
}

/* Brings the object to the state op starts from (the VMM steps in
 * kvcached's bench_vmm order: reserve, create, map, set access, unmap). */
static void host_setup(enum host_op op, struct host_obj *o)
{
    switch (op) {
    case H_FREE: host_step(H_MALLOC, o); break;
    case H_UNPIN: host_step(H_PIN, o); break;
    case H_ADDR_FREE: host_step(H_RESERVE, o); break;
    case H_RELEASE: host_step(H_CREATE, o); break;
    case H_UNMAP: host_step(H_RESERVE, o), host_step(H_CREATE, o), host_step(H_MAP, o), host_step(H_ACCESS, o); break;
    case H_ACCESS: host_step(H_RESERVE, o), host_step(H_CREATE, o), host_step(H_MAP, o); break;
    case H_MAP: host_step(H_RESERVE, o), host_step(H_CREATE, o); break;
    default: break;
    }
}

/* Gives back what is left after op. */
static void host_teardown(enum host_op op, struct host_obj *o)
{
    switch (op) {
    case H_MALLOC: host_step(H_FREE, o); break;
    case H_PIN: host_step(H_UNPIN, o); break;
    case H_RESERVE: host_step(H_ADDR_FREE, o); break;
    case H_CREATE: host_step(H_RELEASE, o); break;
    case H_MAP: case H_ACCESS: host_step(H_UNMAP, o); /* fall through */
    case H_UNMAP: host_step(H_RELEASE, o), host_step(H_ADDR_FREE, o); break;
    default: break;
    }
}

static double wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The operation named, or -1. */
static int host_op_of(const char *name)
{
    for (int i = 0; i < (int)(sizeof k_host_ops / sizeof k_host_ops[0]); i++)
        if (!strcmp(name, k_host_ops[i]))
            return i;
    return -1;
}

/* Byte counts separated by commas, each above 0: how many (at most max),
 * or -1 when the text is not that. */
static int parse_sizes(const char *text, unsigned long long *out, int max)
{
    int n = 0;
    for (const char *s = text;;) {
        char *end;
        unsigned long long bytes = strtoull(s, &end, 10);
        if (n == max || bytes == 0 || end == s || (*end && *end != ','))
            return -1;
        out[n++] = bytes;
        if (!*end)
            return n;
        s = end + 1;
    }
}

/* Events on the idle legacy stream bracket each call, as the simulator
 * reads its clock; what an empty bracket measures (the second record's own
 * cost) is taken off. A monotonic wall-clock timer brackets the call too:
 * on a GPU that is the host time the simulator models (the events add the
 * submission of the second record), on the simulator it is only the
 * simulator's own CPU time. SIZES is one byte count or several separated
 * by commas, measured in one process (one context creation). */
static int run_host(const char *name, const char *sizes)
{
    unsigned long long size[16];
    int op = host_op_of(name), nsizes = parse_sizes(sizes, size, 16);
    if (op < 0 || nsizes < 0) {
        fprintf(stderr, "calibrate: host: expected an operation and up to 16 byte counts separated by commas\n");
        return 2;
    }
    CK(cudaFree(0));
    CU(cuInit(0));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    CK(cudaEventRecord(a, 0));
    CK(cudaEventRecord(b, 0));
    CK(cudaEventSynchronize(b));
    float empty = 0;
    CK(cudaEventElapsedTime(&empty, a, b));
    for (int k = 0; k < nsizes; k++) {
        unsigned long long bytes = size[k];
        /* Each call on an object of its own; one call above 1 GiB. */
        int count = bytes > (1ull << 30) ? 1 : REPEATS;
        double sum_ms = 0, sum_wall = 0;
        for (int i = 0; i < count; i++) {
            struct host_obj o = {.bytes = bytes};
            host_setup(op, &o);
            CK(cudaDeviceSynchronize());
            CK(cudaEventRecord(a, 0));
            double w0 = wall_ms();
            host_step(op, &o);
            double w1 = wall_ms();
            CK(cudaEventRecord(b, 0));
            CK(cudaEventSynchronize(b));
            float ms = 0;
            CK(cudaEventElapsedTime(&ms, a, b));
            sum_ms += ms - empty;
            sum_wall += w1 - w0;
            host_teardown(op, &o);
        }
        printf("host %s %.3f us wall %.3f us bytes %llu\n", name, sum_ms / count * 1e3, sum_wall / count * 1e3,
               bytes);
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return 0;
}

/* One cuMemSetAccess over BYTES mapped from 2 MiB handles, one mapping
 * each (a block libsn backs with pieces): whether setting access costs per
 * call, per mapping or per granule. Prints "pieces <mappings> access <us>
 * us unmap_each <us> us" (wall clock, means of REPEATS rounds). */
static int run_pieces(const char *size)
{
    char *end;
    unsigned long long bytes = strtoull(size, &end, 10);
    const size_t g = (size_t)2 << 20;
    if (bytes == 0 || *end || bytes % g || bytes / g > 4096) {
        fprintf(stderr, "calibrate: pieces: expected a multiple of 2 MiB, at most 8 GiB\n");
        return 2;
    }
    CK(cudaFree(0));
    CU(cuInit(0));
    size_t n = bytes / g;
    CUmemGenericAllocationHandle *h = calloc(n, sizeof *h);
    if (!h)
        return 1;
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemAccessDesc acc = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                           .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CUdeviceptr va;
    CU(cuMemAddressReserve(&va, bytes, 0, 0, 0));
    double access = 0, unmap = 0;
    for (int round = 0; round < REPEATS; round++) {
        for (size_t i = 0; i < n; i++) {
            if (!round)
                CU(cuMemCreate(&h[i], g, &prop, 0));
            CU(cuMemMap(va + i * g, g, 0, h[i], 0));
        }
        CK(cudaDeviceSynchronize());
        double w0 = wall_ms();
        CU(cuMemSetAccess(va, bytes, &acc, 1));
        double w1 = wall_ms();
        for (size_t i = 0; i < n; i++)
            CU(cuMemUnmap(va + i * g, g));
        double w2 = wall_ms();
        access += w1 - w0;
        unmap += w2 - w1;
    }
    for (size_t i = 0; i < n; i++)
        CU(cuMemRelease(h[i]));
    CU(cuMemAddressFree(va, bytes));
    free(h);
    printf("pieces %zu access %.3f us unmap_each %.3f us\n", n, access / REPEATS * 1e3,
           unmap / REPEATS / (double)n * 1e3);
    return 0;
}

/* Whether OP waits for work in flight: about 50 ms of device-to-device
 * copies (unrelated memory) are queued on the legacy stream, OP is timed
 * on its own object, then the stream is asked whether it is still busy.
 * A call that waits for the device takes about the queue's time and
 * finds it idle. Prints "busy <op> wall <us> us queue <ms> ms still_busy
 * <0|1>". */
static int run_busy(const char *name, const char *size)
{
    int op = host_op_of(name);
    char *end;
    unsigned long long bytes = strtoull(size, &end, 10);
    if (op < 0 || bytes == 0 || *end) {
        fprintf(stderr, "calibrate: busy: expected an operation and a byte count\n");
        return 2;
    }
    CK(cudaFree(0));
    CU(cuInit(0));
    const size_t chunk = (size_t)256 << 20;
    void *a = dev_alloc(chunk), *b = dev_alloc(chunk);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    /* how many copies make 50 ms on this device */
    CK(cudaEventRecord(e0, 0));
    for (int i = 0; i < 4; i++)
        CK(cudaMemcpyAsync(b, a, chunk, cudaMemcpyDeviceToDevice, 0));
    CK(cudaEventRecord(e1, 0));
    CK(cudaEventSynchronize(e1));
    float ms4 = 0;
    CK(cudaEventElapsedTime(&ms4, e0, e1));
    int n = ms4 > 0 ? (int)(50.0f / (ms4 / 4)) : 4;
    if (n < 4)
        n = 4;
    if (n > 100000)
        n = 100000;
    struct host_obj o = {.bytes = bytes};
    host_setup(op, &o);
    CK(cudaDeviceSynchronize());
    CK(cudaEventRecord(e0, 0));
    for (int i = 0; i < n; i++)
        CK(cudaMemcpyAsync(b, a, chunk, cudaMemcpyDeviceToDevice, 0));
    CK(cudaEventRecord(e1, 0));
    double w0 = wall_ms();
    host_step(op, &o);
    double w1 = wall_ms();
    cudaError_t q = cudaStreamQuery(0);
    if (q != cudaSuccess && q != cudaErrorNotReady)
        die_cuda(q, "cudaStreamQuery");
    CK(cudaEventSynchronize(e1));
    float queue = 0;
    CK(cudaEventElapsedTime(&queue, e0, e1));
    printf("busy %s wall %.3f us queue %.3f ms still_busy %d\n", name, (w1 - w0) * 1e3, queue,
           q == cudaErrorNotReady);
    host_teardown(op, &o);
    CK(cudaFree(a));
    CK(cudaFree(b));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 13 && !strcmp(argv[1], "conv"))
        return run_conv(argv + 2);
    if (argc == 4 && !strcmp(argv[1], "copy"))
        return run_copy(argv[2], argv[3], 0);
    if (argc == 3 && !strcmp(argv[1], "duplex"))
        return run_copy("", argv[2], 1);
    if (argc == 4 && !strcmp(argv[1], "host"))
        return run_host(argv[2], argv[3]);
    if (argc == 4 && !strcmp(argv[1], "busy"))
        return run_busy(argv[2], argv[3]);
    if (argc == 3 && !strcmp(argv[1], "pieces"))
        return run_pieces(argv[2]);
    fprintf(stderr, "usage: calibrate conv W H C N K R S PAD_W PAD_H STRIDE_W STRIDE_H\n"
                    "       calibrate copy h2d|d2h BYTES\n"
                    "       calibrate duplex BYTES\n"
                    "       calibrate host OP BYTES[,BYTES...]\n"
                    "       calibrate busy OP BYTES\n"
                    "       calibrate pieces BYTES\n");
    return 2;
}
