/*
 * sn_stress.c — a randomized test of what a program reads back from device
 * memory. It keeps a host copy (the shadow) of every device allocation and
 * does random operations: allocations of a few bytes to several MiB, frees,
 * sets, 1-D and 2-D copies in every direction (synchronous, and on streams
 * through pinned and pageable host memory), cuBLAS and cuDNN calls and
 * kernel launches, on several streams and from one or two threads. The
 * copies and sets also go through the driver API (cuMemcpy*, cuMemsetD8,
 * D16, D32, cuMemcpy2D), kernels through cuLaunchKernel (kernelParams or a
 * packed extra buffer) and cuLaunchKernelEx, and a kernel is handed a
 * device array of pointers copied from the host just before; short
 * sequences are captured into graphs (runtime or driver) launched over
 * later operations; and calls that would overwrite a whole allocation fail
 * (an invalid copy direction, a 2-D set wider than its pitch), changing
 * nothing. Every
 * byte it copies back is compared with the shadow, and at the end every
 * live allocation is read back whole. Under libsn's manage mode allocations
 * move between the device and host memory behind the program's back: a
 * residency or ordering mistake shows here as a wrong byte (or as the
 * simulator's illegal-address fault).
 *
 * The program is race-free by construction, so that a wrong byte is never
 * its own fault: each allocation remembers the stream of the last operation
 * that touched it, and a use on another stream is ordered after it (an
 * event the stream waits for, a stream or event synchronisation, or the
 * legacy stream's implicit ordering with blocking streams); a pinned buffer
 * is reused only after the copy that used it has completed. Floating-point
 * operations see only small non-negative integers (or, for ReLU, small
 * non-zero ones), so every sum is exact and the host computes the same bits
 * in any order. Each thread owns its allocations, streams and handles.
 *
 *   sn_stress --seed S [--ops N] [--threads 1|2] [--streams K]
 *             [--max-size BYTES] [--max-live BYTES] [--without new|KIND,...]
 *             [--print-peak] [--verbose]
 *
 * --without leaves out kinds of operation (driver, drvlaunch, ptrarray,
 * graph, fail; "new" for all of them, which makes a seed do what it did
 * before they existed). --ops is the total over the threads; --max-live bounds each thread's live
 * bytes; --print-peak adds a line with the sum of the threads' peak live
 * bytes, the largest working set of one operation (the bytes of the
 * allocations it touches, which a memory manager needs resident at once,
 * summed over the threads) and the number of cudaMalloc calls. The sequence of operations
 * depends on the seed only, whatever the interleaving of the threads.
 *
 * Exit status: 0 every byte matched (last line "sn_stress: seed S: N ops,
 * M bytes checked, OK"); 1 a mismatch ("sn_stress: MISMATCH seed S op N
 * alloc A offset O: got X want Y"); 2 a CUDA error or bad arguments; 3 out
 * of device memory (cudaErrorMemoryAllocation, CUBLAS_STATUS_ALLOC_FAILED,
 * CUDNN_STATUS_ALLOC_FAILED from any call; one line names the call).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "sim/simgpu.h"

enum { SX_MAX_STREAMS = 8, SX_EVENTS = 8, SX_PINNED = 3, SX_LEGACY = 0, SX_MAX_TOUCH = 8, SX_GRAPHS = 2, SX_GSTEPS = 3 };

#define SX_MIB ((size_t)1 << 20)
#define SX_GRAIN (2 * SX_MIB)
/* Bounds on float operands: a product of two operands below SX_MUL_LIM
 * summed over at most 48 terms, times 2, plus a term below SX_ADD_LIM
 * (times 2) stays far below 2^24, where every integer is exact. */
#define SX_MUL_LIM 64.0f
#define SX_ADD_LIM 2097152.0f

typedef struct sx_alloc {
    unsigned char *dev;
    unsigned char *shadow; /* what the device bytes must be */
    unsigned char *known;  /* 1 where the shadow is defined (written since cudaMalloc) */
    size_t size;
    long id;
    int owner; /* stream slot of the last operation on it, -1 when none is pending */
    int graphs; /* steps of live graphs that use it: freed only once they are destroyed */
} sx_alloc;

/* One captured operation, applied to the shadow at every launch. */
enum { SX_STEP_SET, SX_STEP_COPY, SX_STEP_AFFINE };
typedef struct sx_step {
    int kind;
    sx_alloc *a, *b; /* the set's or kernel's target; a copy from a to b */
    size_t off, doff, len;
    int v, mul, add;
} sx_step;

typedef struct sx_graph {
    int live, drv; /* launched through the driver */
    cudaGraph_t g; /* NULL once destroyed (the executable graph does not need it) */
    cudaGraphExec_t ge;
    int nsteps;
    sx_step st[SX_GSTEPS];
} sx_graph;

/* A device-to-host copy into a pinned buffer, compared once its event has
 * completed against the shadow as it was when the copy was issued. */
typedef struct sx_check {
    int active;
    long alloc_id, op;
    size_t off, apitch, w, h, hpitch;
} sx_check;

typedef struct sx_pinned {
    unsigned char *p, *exp, *kn;
    cudaEvent_t ev;
    int busy;
    sx_check chk;
} sx_pinned;

typedef struct sx_thread {
    int idx;
    uint64_t rng, drng; /* decisions; data written */
    jmp_buf jb;
    int nslots; /* slot 0 is the legacy default stream */
    cudaStream_t s[SX_MAX_STREAMS + 1];
    int blocking[SX_MAX_STREAMS + 1];
    cudaEvent_t ev[SX_EVENTS];
    int evnext;
    sx_pinned pin[SX_PINNED];
    cublasHandle_t blas;
    int blas_owner; /* the handle's workspace, shared by its streams */
    cudnnHandle_t dnn;
    cudnnTensorDescriptor_t td[3];
    cudnnFilterDescriptor_t fd;
    cudnnConvolutionDescriptor_t cd;
    cudnnActivationDescriptor_t ad;
    void *ws;
    sx_alloc **a;
    int na, cap;
    unsigned char *host, *stage; /* pageable buffers of g_max_size */
    long op, gop;
    sx_alloc *wr[SX_MAX_TOUCH], *touched[SX_MAX_TOUCH];
    int nwr, ntouched;
    size_t opws, live, peak, wmax;
    long nallocs, checked, ops_done, next_id;
    int drv; /* the copy and set operations go through the driver API */
    sx_graph gr[SX_GRAPHS];
} sx_thread;

static long g_seed = -1, g_ops = 400;
static int g_threads = 1, g_streams = 2, g_print_peak, g_verbose, g_kernels;
/* the host module's kernels, for launches through the driver */
static int g_drv_kernels;
static CUfunction g_fn_affine, g_fn_ptradd;
static size_t g_max_size = 4 * SX_MIB, g_max_live = 16 * SX_MIB;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_code, g_stop;

/* ---- randomness ---------------------------------------------------------- */

static uint64_t sx_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static size_t rnd(sx_thread *t, size_t n) { return n ? (size_t)(sx_next(&t->rng) % n) : 0; }
static int chance(sx_thread *t, int pct) { return (int)rnd(t, 100) < pct; }

/* Log-uniform in [lo, hi], so small sizes are as common as large ones. */
static size_t logu(sx_thread *t, size_t lo, size_t hi)
{
    int blo = 0, bhi = 0;
    while (((size_t)2 << blo) <= lo)
        blo++;
    while (((size_t)2 << bhi) <= hi)
        bhi++;
    int b = blo + (int)rnd(t, (size_t)(bhi - blo + 1));
    size_t v = ((size_t)1 << b) + rnd(t, (size_t)1 << b);
    return v < lo ? lo : v > hi ? hi : v;
}

static void fill_random(sx_thread *t, unsigned char *p, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v = sx_next(&t->drng);
        memcpy(p + i, &v, 8);
    }
    uint64_t v = sx_next(&t->drng);
    memcpy(p + i, &v, n - i);
}

/* Small integer floats laid out on the allocation's 4-byte words (off is the
 * allocation offset of p[0]); signed: non-zero values in [-4, 4]. */
static void fill_floats(sx_thread *t, unsigned char *p, size_t off, size_t n, int sign)
{
    unsigned char fb[4];
    for (size_t i = 0; i < n; i++) {
        size_t o = off + i;
        if (i == 0 || o % 4 == 0) {
            int v = (int)(sx_next(&t->drng) % 4);
            float f = sign ? (float)((v + 1) * (sx_next(&t->drng) & 1 ? 1 : -1)) : (float)v;
            memcpy(fb, &f, 4);
        }
        p[i] = fb[o % 4];
    }
}

/* ---- failures ------------------------------------------------------------ */

static int sx_code(void)
{
    pthread_mutex_lock(&g_lock);
    int c = g_code;
    pthread_mutex_unlock(&g_lock);
    return c;
}

/* The first failure is the run's, except that a mismatch found later (the
 * final read-back after an out-of-memory stop) still counts as one. */
static _Noreturn void sx_fail(sx_thread *t, int code, FILE *to, const char *fmt, ...)
{
    /* an operation that failed may have written part of its outputs */
    for (int i = 0; i < t->nwr; i++)
        memset(t->wr[i]->known, 0, t->wr[i]->size);
    t->nwr = 0;
    pthread_mutex_lock(&g_lock);
    if (g_code == 0 || (code == 1 && g_code != 1)) {
        g_code = code;
        va_list ap;
        va_start(ap, fmt);
        vfprintf(to, fmt, ap);
        va_end(ap);
        fputc('\n', to);
        fflush(to);
    }
    pthread_mutex_unlock(&g_lock);
    __atomic_store_n(&g_stop, 1, __ATOMIC_SEQ_CST);
    longjmp(t->jb, 1);
}

static void ck(sx_thread *t, cudaError_t e, const char *what)
{
    if (e == cudaErrorMemoryAllocation)
        sx_fail(t, 3, stderr, "sn_stress: out of memory: %s: %s (seed %ld op %ld)", what, cudaGetErrorString(e),
                g_seed, t->gop);
    if (e != cudaSuccess)
        sx_fail(t, 2, stderr, "sn_stress: error: %s: %s (seed %ld op %ld)", what, cudaGetErrorString(e), g_seed,
                t->gop);
}

static void ckblas(sx_thread *t, cublasStatus_t s, const char *what)
{
    if (s == CUBLAS_STATUS_ALLOC_FAILED)
        sx_fail(t, 3, stderr, "sn_stress: out of memory: %s: CUBLAS_STATUS_ALLOC_FAILED (seed %ld op %ld)", what,
                g_seed, t->gop);
    if (s != CUBLAS_STATUS_SUCCESS)
        sx_fail(t, 2, stderr, "sn_stress: error: %s: cuBLAS status %d (seed %ld op %ld)", what, (int)s, g_seed,
                t->gop);
}

static void ckdnn(sx_thread *t, cudnnStatus_t s, const char *what)
{
    if (s == CUDNN_STATUS_ALLOC_FAILED)
        sx_fail(t, 3, stderr, "sn_stress: out of memory: %s: %s (seed %ld op %ld)", what, cudnnGetErrorString(s),
                g_seed, t->gop);
    if (s != CUDNN_STATUS_SUCCESS)
        sx_fail(t, 2, stderr, "sn_stress: error: %s: %s (seed %ld op %ld)", what, cudnnGetErrorString(s), g_seed,
                t->gop);
}

static void ckdrv(sx_thread *t, CUresult r, const char *what)
{
    const char *name = NULL;
    if (r != CUDA_SUCCESS && cuGetErrorName(r, &name) != CUDA_SUCCESS)
        name = "unknown";
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        sx_fail(t, 3, stderr, "sn_stress: out of memory: %s: %s (seed %ld op %ld)", what, name, g_seed, t->gop);
    if (r != CUDA_SUCCESS)
        sx_fail(t, 2, stderr, "sn_stress: error: %s: %s (seed %ld op %ld)", what, name, g_seed, t->gop);
}

#define CU(call) ck(t, (call), #call)
#define CUD(call) ckdrv(t, (call), #call)
#define DP(p) ((CUdeviceptr)(uintptr_t)(p))
#define BLAS(call) ckblas(t, (call), #call)
#define DNN(call) ckdnn(t, (call), #call)

static void *xmalloc(sx_thread *t, size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        sx_fail(t, 2, stderr, "sn_stress: error: out of host memory (%zu bytes)", n);
    return p;
}

static void note(sx_thread *t, const char *fmt, ...)
{
    if (!g_verbose)
        return;
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "sn_stress: [%d] op %ld: %s\n", t->idx, t->gop, line);
}

/* ---- comparing ------------------------------------------------------------ */

static _Noreturn void mismatch(sx_thread *t, long op, long alloc_id, size_t off, unsigned got, unsigned want)
{
    sx_fail(t, 1, stdout, "sn_stress: MISMATCH seed %ld op %ld alloc %ld offset %zu: got 0x%02x want 0x%02x", g_seed,
            op, alloc_id, off, got, want);
}

/* Rows of w bytes read back (got, at gpitch) against the expected bytes and
 * their known flags (at epitch); off and apitch place them in the
 * allocation, for the message. */
static void compare_rows(sx_thread *t, long op, long alloc_id, size_t off, size_t apitch, size_t w, size_t h,
                         const unsigned char *got, size_t gpitch, const unsigned char *exp,
                         const unsigned char *kn, size_t epitch)
{
    for (size_t r = 0; r < h; r++) {
        const unsigned char *g = got + r * gpitch, *e = exp + r * epitch, *k = kn + r * epitch;
        size_t cnt = 0;
        for (size_t i = 0; i < w; i++)
            cnt += k[i];
        t->checked += (long)cnt;
        if (memcmp(g, e, w) == 0)
            continue;
        for (size_t i = 0; i < w; i++)
            if (k[i] && g[i] != e[i])
                mismatch(t, op, alloc_id, off + r * apitch + i, g[i], e[i]);
    }
}

/* ---- ordering ----------------------------------------------------------- */

static cudaStream_t S(sx_thread *t, int slot) { return t->s[slot]; }

static void settle(sx_thread *t, int slot)
{
    for (int i = 0; i < t->na; i++)
        if (slot < 0 || t->a[i]->owner == slot)
            t->a[i]->owner = -1;
    if (slot < 0 || t->blas_owner == slot)
        t->blas_owner = -1;
}

/* Orders work about to be issued on slot after everything issued on
 * *owner, by one of the means a framework uses. */
static void order(sx_thread *t, int *owner, int slot)
{
    int o = *owner;
    *owner = slot;
    if (o < 0 || o == slot)
        return;
    /* the legacy stream waits for blocking streams and they for it */
    int implicit = (o == SX_LEGACY && t->blocking[slot]) || (slot == SX_LEGACY && t->blocking[o]);
    if (implicit && chance(t, 50))
        return;
    cudaEvent_t ev = t->ev[t->evnext++ % SX_EVENTS];
    switch (rnd(t, 8)) {
    case 0:
        CU(cudaStreamSynchronize(S(t, o)));
        settle(t, o);
        break;
    case 1:
        CU(cudaEventRecord(ev, S(t, o)));
        CU(cudaEventSynchronize(ev));
        settle(t, o);
        break;
    default:
        CU(cudaEventRecord(ev, S(t, o)));
        CU(cudaStreamWaitEvent(S(t, slot), ev, 0));
        break;
    }
}

/* a belongs to the operation's working set. */
static void use_touch(sx_thread *t, sx_alloc *a)
{
    int seen = 0;
    for (int i = 0; i < t->ntouched; i++)
        seen |= t->touched[i] == a;
    if (!seen && t->ntouched < SX_MAX_TOUCH) {
        t->touched[t->ntouched++] = a;
        t->opws += a->size;
    }
}

/* An operation on slot is about to touch a (write: change it). */
static void use(sx_thread *t, sx_alloc *a, int slot, int write)
{
    order(t, &a->owner, slot);
    int seen = 0;
    for (int i = 0; i < t->ntouched; i++)
        seen |= t->touched[i] == a;
    if (!seen && t->ntouched < SX_MAX_TOUCH) {
        t->touched[t->ntouched++] = a;
        t->opws += a->size;
    }
    if (write && t->nwr < SX_MAX_TOUCH)
        t->wr[t->nwr++] = a;
}

static int pick_slot(sx_thread *t) { return (int)rnd(t, (size_t)t->nslots); }

/* A pinned buffer whose previous copy has completed (and been checked). */
static void pin_wait(sx_thread *t, sx_pinned *pb)
{
    if (!pb->busy)
        return;
    CU(cudaEventSynchronize(pb->ev));
    pb->busy = 0;
    if (pb->chk.active) {
        sx_check c = pb->chk;
        pb->chk.active = 0;
        compare_rows(t, c.op, c.alloc_id, c.off, c.apitch, c.w, c.h, pb->p, c.hpitch, pb->exp, pb->kn, c.w);
    }
}

static sx_pinned *pinned(sx_thread *t)
{
    sx_pinned *pb = &t->pin[rnd(t, SX_PINNED)];
    pin_wait(t, pb);
    return pb;
}

static void drain(sx_thread *t)
{
    for (int i = 0; i < SX_PINNED; i++)
        pin_wait(t, &t->pin[i]);
}

/* ---- allocations ---------------------------------------------------------- */

static sx_alloc *pick(sx_thread *t) { return t->na ? t->a[rnd(t, (size_t)t->na)] : NULL; }

static sx_alloc *pick_min(sx_thread *t, size_t min)
{
    if (!t->na)
        return NULL;
    for (int i = 0; i < 6; i++) {
        sx_alloc *a = pick(t);
        if (a->size >= min)
            return a;
    }
    size_t start = rnd(t, (size_t)t->na);
    for (int i = 0; i < t->na; i++) {
        sx_alloc *a = t->a[(start + (size_t)i) % (size_t)t->na];
        if (a->size >= min)
            return a;
    }
    return NULL;
}

/* A random range: often the whole allocation, often a few bytes. */
static void pick_range(sx_thread *t, size_t size, size_t *off, size_t *len)
{
    size_t r = rnd(t, 10);
    if (r < 3) {
        *off = 0;
        *len = size;
        return;
    }
    *off = rnd(t, size);
    size_t room = size - *off;
    *len = 1 + rnd(t, r < 6 && room > 64 ? 64 : room);
}

static size_t pick_size(sx_thread *t)
{
    size_t mx = g_max_size, grains = mx / SX_GRAIN, r = rnd(t, 20);
    if (r < 2 && grains)
        return (1 + rnd(t, grains)) * SX_GRAIN;
    if (r < 3 && grains) {
        size_t base = (1 + rnd(t, grains)) * SX_GRAIN, d = 1 + rnd(t, 255);
        return chance(t, 50) || base + d > mx ? base - d : base + d;
    }
    if (r < 10)
        return logu(t, 1, mx < 4096 ? mx : 4096);
    if (r < 16)
        return logu(t, mx < 4096 ? mx : 4096, mx < 262144 ? mx : 262144);
    return logu(t, mx < 262144 ? mx : 262144, mx);
}

/* ---- byte operations -------------------------------------------------------- */

enum { SX_SYNC, SX_ASYNC_PINNED, SX_ASYNC_PAGEABLE };

/* Writes len bytes of t->stage into a at off. */
static void h2d(sx_thread *t, sx_alloc *a, size_t off, size_t len, int slot, int mode)
{
    enum cudaMemcpyKind kind = chance(t, 15) ? cudaMemcpyDefault : cudaMemcpyHostToDevice;
    if (mode == SX_SYNC) {
        use(t, a, SX_LEGACY, 1);
        if (t->drv)
            CUD(cuMemcpyHtoD(DP(a->dev + off), t->stage, len));
        else
            CU(cudaMemcpy(a->dev + off, t->stage, len, kind));
    } else if (mode == SX_ASYNC_PAGEABLE) {
        use(t, a, slot, 1);
        if (t->drv)
            CUD(cuMemcpyHtoDAsync(DP(a->dev + off), t->stage, len, S(t, slot)));
        else
            CU(cudaMemcpyAsync(a->dev + off, t->stage, len, kind, S(t, slot)));
    } else {
        sx_pinned *pb = pinned(t);
        memcpy(pb->p, t->stage, len);
        use(t, a, slot, 1);
        if (t->drv)
            CUD(cuMemcpyHtoDAsync(DP(a->dev + off), pb->p, len, S(t, slot)));
        else
            CU(cudaMemcpyAsync(a->dev + off, pb->p, len, kind, S(t, slot)));
        CU(cudaEventRecord(pb->ev, S(t, slot)));
        pb->busy = 1;
    }
    memcpy(a->shadow + off, t->stage, len);
    memset(a->known + off, 1, len);
}

/* Reads back len bytes of a at off and compares them (for a pinned copy,
 * possibly later). */
static void d2h(sx_thread *t, sx_alloc *a, size_t off, size_t len, int slot, int mode)
{
    enum cudaMemcpyKind kind = chance(t, 15) ? cudaMemcpyDefault : cudaMemcpyDeviceToHost;
    if (mode == SX_SYNC) {
        use(t, a, SX_LEGACY, 0);
        if (t->drv)
            CUD(cuMemcpyDtoH(t->host, DP(a->dev + off), len));
        else
            CU(cudaMemcpy(t->host, a->dev + off, len, kind));
        a->owner = -1; /* the copy waited for everything before it */
    } else if (mode == SX_ASYNC_PAGEABLE) {
        use(t, a, slot, 0);
        if (t->drv)
            CUD(cuMemcpyDtoHAsync(t->host, DP(a->dev + off), len, S(t, slot)));
        else
            CU(cudaMemcpyAsync(t->host, a->dev + off, len, kind, S(t, slot)));
        CU(cudaStreamSynchronize(S(t, slot)));
        settle(t, slot);
    } else {
        sx_pinned *pb = pinned(t);
        use(t, a, slot, 0);
        if (t->drv)
            CUD(cuMemcpyDtoHAsync(pb->p, DP(a->dev + off), len, S(t, slot)));
        else
            CU(cudaMemcpyAsync(pb->p, a->dev + off, len, kind, S(t, slot)));
        CU(cudaEventRecord(pb->ev, S(t, slot)));
        memcpy(pb->exp, a->shadow + off, len);
        memcpy(pb->kn, a->known + off, len);
        pb->chk = (sx_check){1, a->id, t->gop, off, len, len, 1, len};
        pb->busy = 1;
        if (chance(t, 50))
            pin_wait(t, pb);
        return;
    }
    compare_rows(t, t->gop, a->id, off, len, len, 1, t->host, len, a->shadow + off, a->known + off, len);
}

static int pick_mode(sx_thread *t)
{
    size_t r = rnd(t, 10);
    return r < 4 ? SX_SYNC : r < 8 ? SX_ASYNC_PINNED : SX_ASYNC_PAGEABLE;
}

static void op_memset_range(sx_thread *t, sx_alloc *a, size_t off, size_t len, int v)
{
    int slot = pick_slot(t);
    if (chance(t, 40)) {
        use(t, a, SX_LEGACY, 1);
        CU(cudaMemset(a->dev + off, v, len));
    } else {
        use(t, a, slot, 1);
        CU(cudaMemsetAsync(a->dev + off, v, len, S(t, slot)));
    }
    memset(a->shadow + off, v, len);
    memset(a->known + off, 1, len);
}

static void op_h2d_range(sx_thread *t, sx_alloc *a, size_t off, size_t len)
{
    if (chance(t, 25))
        fill_floats(t, t->stage, off, len, 0);
    else
        fill_random(t, t->stage, len);
    h2d(t, a, off, len, pick_slot(t), pick_mode(t));
}

static void op_free(sx_thread *t);
static void graphs_drop(sx_thread *t, const sx_alloc *a);

static void op_malloc(sx_thread *t)
{
    size_t size = pick_size(t);
    if (t->live + size > g_max_live) {
        op_free(t);
        return;
    }
    if (t->na == t->cap) {
        int cap = t->cap ? t->cap * 2 : 32;
        sx_alloc **n = realloc(t->a, (size_t)cap * sizeof *n);
        if (!n)
            sx_fail(t, 2, stderr, "sn_stress: error: out of host memory");
        t->a = n;
        t->cap = cap;
    }
    sx_alloc *a = xmalloc(t, sizeof *a);
    *a = (sx_alloc){.size = size, .id = t->next_id++ * g_threads + t->idx, .owner = -1};
    a->shadow = malloc(size);
    a->known = calloc(size, 1);
    t->a[t->na++] = a; /* before anything can fail, so that teardown frees it */
    if (!a->shadow || !a->known)
        sx_fail(t, 2, stderr, "sn_stress: error: out of host memory");
    t->nallocs++;
    note(t, "cudaMalloc %zu -> alloc %ld", size, a->id);
    CU(cudaMalloc((void **)&a->dev, size));
    note(t, "alloc %ld is at %p", a->id, (void *)a->dev);
    t->live += size;
    if (t->live > t->peak)
        t->peak = t->live;
    t->opws += size;
    /* fresh memory is undefined until written: often written whole at once */
    switch (rnd(t, 4)) {
    case 0: op_memset_range(t, a, 0, size, chance(t, 50) ? 0 : (int)rnd(t, 256)); break;
    case 1: op_h2d_range(t, a, 0, size); break;
    default: break;
    }
}

static void op_free(sx_thread *t)
{
    if (!t->na)
        return;
    int i = (int)rnd(t, (size_t)t->na);
    sx_alloc *a = t->a[i];
    /* a graph's allocations must outlive it */
    if (a->graphs)
        graphs_drop(t, a);
    /* what was written last may be read nowhere else */
    if (chance(t, 60))
        d2h(t, a, 0, a->size, pick_slot(t), pick_mode(t));
    note(t, "cudaFree alloc %ld", a->id);
    /* cudaFree waits for the device: no ordering needed */
    CU(cudaFree(a->dev));
    t->a[i] = t->a[--t->na];
    t->live -= a->size;
    free(a->shadow);
    free(a->known);
    free(a);
}

static void op_memset(sx_thread *t)
{
    sx_alloc *a = pick(t);
    if (!a)
        return;
    size_t off, len;
    pick_range(t, a->size, &off, &len);
    int v = chance(t, 25) ? 0 : (int)rnd(t, 256);
    note(t, "memset alloc %ld [%zu, +%zu) = %d", a->id, off, len, v);
    op_memset_range(t, a, off, len, v);
}

static void op_h2d(sx_thread *t)
{
    sx_alloc *a = pick(t);
    if (!a)
        return;
    size_t off, len;
    pick_range(t, a->size, &off, &len);
    note(t, "h2d alloc %ld [%zu, +%zu)", a->id, off, len);
    op_h2d_range(t, a, off, len);
}

static void op_d2h(sx_thread *t)
{
    sx_alloc *a = pick(t);
    if (!a)
        return;
    size_t off, len;
    pick_range(t, a->size, &off, &len);
    note(t, "d2h alloc %ld [%zu, +%zu)", a->id, off, len);
    d2h(t, a, off, len, pick_slot(t), pick_mode(t));
}

static void op_verify(sx_thread *t)
{
    sx_alloc *a = pick(t);
    if (!a)
        return;
    note(t, "read back alloc %ld whole", a->id);
    d2h(t, a, 0, a->size, pick_slot(t), pick_mode(t));
}

/* Places len bytes in b away from [soff, soff + len) when b is a. */
static int place(sx_thread *t, const sx_alloc *a, size_t soff, const sx_alloc *b, size_t len, size_t *doff)
{
    if (len > b->size)
        return -1;
    *doff = rnd(t, b->size - len + 1);
    if (a != b || *doff + len <= soff || soff + len <= *doff)
        return 0;
    if (soff >= len) {
        *doff = rnd(t, soff - len + 1);
        return 0;
    }
    if (soff + 2 * len <= b->size) {
        *doff = soff + len + rnd(t, b->size - soff - 2 * len + 1);
        return 0;
    }
    return -1;
}

static void op_d2d(sx_thread *t)
{
    sx_alloc *a = pick(t), *b = pick(t);
    if (!a)
        return;
    size_t soff, len, doff;
    pick_range(t, a->size, &soff, &len);
    if (len > b->size)
        len = b->size;
    if (place(t, a, soff, b, len, &doff))
        return;
    int slot = pick_slot(t), sync = chance(t, 35);
    enum cudaMemcpyKind kind = chance(t, 15) ? cudaMemcpyDefault : cudaMemcpyDeviceToDevice;
    note(t, "d2d alloc %ld [%zu, +%zu) -> alloc %ld at %zu%s", a->id, soff, len, b->id, doff, sync ? " (sync)" : "");
    if (sync)
        slot = SX_LEGACY;
    use(t, a, slot, 0);
    use(t, b, slot, 1);
    if (t->drv) {
        /* cuMemcpy and its Async form take unified addresses */
        int uva = chance(t, 40);
        if (sync && uva)
            CUD(cuMemcpy(DP(b->dev + doff), DP(a->dev + soff), len));
        else if (sync)
            CUD(cuMemcpyDtoD(DP(b->dev + doff), DP(a->dev + soff), len));
        else if (uva)
            CUD(cuMemcpyAsync(DP(b->dev + doff), DP(a->dev + soff), len, S(t, slot)));
        else
            CUD(cuMemcpyDtoDAsync(DP(b->dev + doff), DP(a->dev + soff), len, S(t, slot)));
    } else if (sync)
        CU(cudaMemcpy(b->dev + doff, a->dev + soff, len, kind));
    else
        CU(cudaMemcpyAsync(b->dev + doff, a->dev + soff, len, kind, S(t, slot)));
    memcpy(b->shadow + doff, a->shadow + soff, len);
    memcpy(b->known + doff, a->known + soff, len);
}

/* A 2-D view of h rows of w bytes at pitch inside a, at a random place;
 * h and w are shrunk until it fits. */
static int pick_2d(sx_thread *t, const sx_alloc *a, size_t *off, size_t *w, size_t *h, size_t *pitch)
{
    *h = 1 + rnd(t, 16);
    size_t wmax = a->size / *h;
    if (wmax == 0) {
        *h = 1;
        wmax = a->size;
    }
    *w = 1 + rnd(t, wmax < 4096 ? wmax : 4096);
    *pitch = *w + (chance(t, 75) ? rnd(t, 64) : 0);
    while (*h > 1 && (*h - 1) * *pitch + *w > a->size)
        (*h)--;
    if (*w > a->size)
        return -1;
    *off = rnd(t, a->size - ((*h - 1) * *pitch + *w) + 1);
    return 0;
}

/* A 2-D copy through the runtime or (t->drv) the driver's CUDA_MEMCPY2D. */
static void copy2d(sx_thread *t, void *dst, size_t dpitch, const void *src, size_t spitch, size_t w, size_t h,
                   enum cudaMemcpyKind kind, int sync, int slot)
{
    if (!t->drv) {
        if (sync)
            CU(cudaMemcpy2D(dst, dpitch, src, spitch, w, h, kind));
        else
            CU(cudaMemcpy2DAsync(dst, dpitch, src, spitch, w, h, kind, S(t, slot)));
        return;
    }
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof c);
    if (kind == cudaMemcpyHostToDevice) {
        c.srcMemoryType = CU_MEMORYTYPE_HOST;
        c.srcHost = src;
    } else {
        c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        c.srcDevice = DP(src);
    }
    if (kind == cudaMemcpyDeviceToHost) {
        c.dstMemoryType = CU_MEMORYTYPE_HOST;
        c.dstHost = dst;
    } else {
        c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        c.dstDevice = DP(dst);
    }
    c.srcPitch = spitch;
    c.dstPitch = dpitch;
    c.WidthInBytes = w;
    c.Height = h;
    if (sync)
        CUD(cuMemcpy2D(&c));
    else
        CUD(cuMemcpy2DAsync(&c, S(t, slot)));
}

static void op_2d(sx_thread *t)
{
    sx_alloc *a = pick(t);
    if (!a)
        return;
    size_t off, w, h, pitch;
    if (pick_2d(t, a, &off, &w, &h, &pitch))
        return;
    int slot = pick_slot(t), sync = chance(t, 35);
    if (sync)
        slot = SX_LEGACY;
    size_t kind = rnd(t, 4);
    if (kind == 0) { /* device to device, between two allocations */
        sx_alloc *b = pick(t);
        size_t dpitch = w + (chance(t, 50) ? rnd(t, 64) : 0);
        while (h > 1 && (h - 1) * dpitch + w > b->size)
            h--;
        size_t span = (h - 1) * dpitch + w, sspan = (h - 1) * pitch + w;
        if (span > b->size)
            return;
        size_t doff = rnd(t, b->size - span + 1);
        if (a == b && !(doff + span <= off || off + sspan <= doff))
            return;
        note(t, "2-D d2d alloc %ld at %zu (pitch %zu) -> alloc %ld at %zu (pitch %zu), %zu x %zu", a->id, off,
             pitch, b->id, doff, dpitch, w, h);
        use(t, a, slot, 0);
        use(t, b, slot, 1);
        copy2d(t, b->dev + doff, dpitch, a->dev + off, pitch, w, h, cudaMemcpyDeviceToDevice, sync, slot);
        for (size_t r = 0; r < h; r++) {
            memcpy(b->shadow + doff + r * dpitch, a->shadow + off + r * pitch, w);
            memcpy(b->known + doff + r * dpitch, a->known + off + r * pitch, w);
        }
        return;
    }
    size_t hpitch = w + (chance(t, 50) ? rnd(t, 32) : 0);
    if ((h - 1) * hpitch + w > g_max_size)
        hpitch = w;
    int pin = !sync && chance(t, 70);
    sx_pinned *pb = pin ? pinned(t) : NULL;
    unsigned char *hb = pin ? pb->p : t->host;
    if (kind == 1) { /* host to device */
        note(t, "2-D h2d alloc %ld at %zu (pitch %zu), %zu x %zu", a->id, off, pitch, w, h);
        fill_random(t, hb, (h - 1) * hpitch + w);
        use(t, a, slot, 1);
        copy2d(t, a->dev + off, pitch, hb, hpitch, w, h, cudaMemcpyHostToDevice, sync, slot);
        for (size_t r = 0; r < h; r++) {
            memcpy(a->shadow + off + r * pitch, hb + r * hpitch, w);
            memset(a->known + off + r * pitch, 1, w);
        }
        /* a pageable source may be reused once the call returns */
        if (pin) {
            CU(cudaEventRecord(pb->ev, S(t, slot)));
            pb->busy = 1;
        }
        return;
    }
    if (kind == 2) { /* device to host, compared */
        note(t, "2-D d2h alloc %ld at %zu (pitch %zu), %zu x %zu", a->id, off, pitch, w, h);
        use(t, a, slot, 0);
        copy2d(t, hb, hpitch, a->dev + off, pitch, w, h, cudaMemcpyDeviceToHost, sync, slot);
        if (sync) {
            a->owner = -1;
        } else if (pin) {
            CU(cudaEventRecord(pb->ev, S(t, slot)));
            for (size_t r = 0; r < h; r++) {
                memcpy(pb->exp + r * w, a->shadow + off + r * pitch, w);
                memcpy(pb->kn + r * w, a->known + off + r * pitch, w);
            }
            pb->chk = (sx_check){1, a->id, t->gop, off, pitch, w, h, hpitch};
            pb->busy = 1;
            return;
        } else {
            CU(cudaStreamSynchronize(S(t, slot)));
            settle(t, slot);
        }
        compare_rows(t, t->gop, a->id, off, pitch, w, h, hb, hpitch, a->shadow + off, a->known + off, pitch);
        return;
    }
    /* a 2-D set */
    int v = (int)rnd(t, 256);
    note(t, "2-D memset alloc %ld at %zu (pitch %zu), %zu x %zu = %d", a->id, off, pitch, w, h, v);
    use(t, a, slot, 1);
    if (t->drv && sync)
        CUD(cuMemsetD2D8(DP(a->dev + off), pitch, (unsigned char)v, w, h));
    else if (t->drv)
        CUD(cuMemsetD2D8Async(DP(a->dev + off), pitch, (unsigned char)v, w, h, S(t, slot)));
    else if (sync)
        CU(cudaMemset2D(a->dev + off, pitch, v, w, h));
    else
        CU(cudaMemset2DAsync(a->dev + off, pitch, v, w, h, S(t, slot)));
    for (size_t r = 0; r < h; r++) {
        memset(a->shadow + off + r * pitch, v, w);
        memset(a->known + off + r * pitch, 1, w);
    }
}

/* ---- kernels (simulated device only) ----------------------------------------- */

/* affine(p, n, mul, add): p[i] = p[i] * mul + add, on bytes */
static void k_affine(void **args, dim3 g, dim3 b)
{
    (void)g, (void)b;
    unsigned char *p = *(unsigned char **)args[0];
    size_t n = *(size_t *)args[1];
    int mul = *(int *)args[2], add = *(int *)args[3];
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(p[i] * mul + add);
}

/* xor(dst, src, n): dst[i] ^= src[i] */
static void k_xor(void **args, dim3 g, dim3 b)
{
    (void)g, (void)b;
    unsigned char *d = *(unsigned char **)args[0];
    const unsigned char *s = *(const unsigned char **)args[1];
    size_t n = *(size_t *)args[2];
    for (size_t i = 0; i < n; i++)
        d[i] ^= s[i];
}

static void op_kernel(sx_thread *t)
{
    sx_alloc *a = pick(t);
    if (!a || !g_kernels)
        return;
    size_t off, len;
    pick_range(t, a->size, &off, &len);
    int slot = pick_slot(t);
    dim3 grid = {(unsigned)((len + 255) / 256 < 65535 ? (len + 255) / 256 : 65535), 1, 1}, block = {256, 1, 1};
    if (chance(t, 50)) {
        unsigned char *p = a->dev + off;
        int mul = 1 + 2 * (int)rnd(t, 4), add = (int)rnd(t, 256);
        note(t, "kernel affine alloc %ld [%zu, +%zu) * %d + %d", a->id, off, len, mul, add);
        void *args[] = {&p, &len, &mul, &add};
        use(t, a, slot, 1);
        CU(cudaLaunchKernel((const void *)k_affine, grid, block, args, 0, S(t, slot)));
        for (size_t i = 0; i < len; i++)
            a->shadow[off + i] = (unsigned char)(a->shadow[off + i] * mul + add);
        return;
    }
    sx_alloc *b = pick(t);
    size_t doff;
    if (place(t, a, off, b, len, &doff))
        return;
    unsigned char *d = b->dev + doff, *s = a->dev + off;
    note(t, "kernel xor alloc %ld at %zu ^= alloc %ld [%zu, +%zu)", b->id, doff, a->id, off, len);
    void *args[] = {&d, &s, &len};
    use(t, a, slot, 0);
    use(t, b, slot, 1);
    CU(cudaLaunchKernel((const void *)k_xor, grid, block, args, 0, S(t, slot)));
    for (size_t i = 0; i < len; i++) {
        b->shadow[doff + i] ^= a->shadow[off + i];
        b->known[doff + i] &= a->known[off + i];
    }
}

/* ptradd(list, n, add): every byte of each of the n ranges the device
 * array list holds gains add. A program hands a kernel its buffers this way
 * (batched GEMMs' pointer arrays): the addresses are not among the
 * arguments, they were copied to the device just before. */
typedef struct sx_entry {
    unsigned char *p;
    size_t len;
} sx_entry;

static void k_ptradd(void **args, dim3 g, dim3 b)
{
    (void)g, (void)b;
    const sx_entry *e = *(const sx_entry **)args[0];
    int n = *(int *)args[1], add = *(int *)args[2];
    for (int i = 0; i < n; i++)
        for (size_t j = 0; j < e[i].len; j++)
            e[i].p[j] = (unsigned char)(e[i].p[j] + add);
}

enum { SX_LAUNCH_RT, SX_LAUNCH_PARAMS, SX_LAUNCH_EXTRA, SX_LAUNCH_EX };

static unsigned grid_for(size_t len) { return (unsigned)((len + 255) / 256 < 65535 ? (len + 255) / 256 : 65535); }

/* affine on [p, p + len) on slot: through cudaLaunchKernel, or the host
 * module's kernel through cuLaunchKernel (kernelParams, or one buffer
 * packed at the natural-alignment offsets through extra) or
 * cuLaunchKernelEx. */
static void launch_affine(sx_thread *t, unsigned char *p, size_t len, int mul, int add, int slot, int how)
{
    void *args[] = {&p, &len, &mul, &add};
    unsigned gx = grid_for(len);
    switch (how) {
    case SX_LAUNCH_RT: {
        dim3 grid = {gx, 1, 1}, block = {256, 1, 1};
        CU(cudaLaunchKernel((const void *)k_affine, grid, block, args, 0, S(t, slot)));
        break;
    }
    case SX_LAUNCH_PARAMS:
        CUD(cuLaunchKernel(g_fn_affine, gx, 1, 1, 256, 1, 1, 0, S(t, slot), args, NULL));
        break;
    case SX_LAUNCH_EXTRA: {
        struct {
            unsigned char *p;
            size_t n;
            int mul, add;
        } packed = {p, len, mul, add};
        size_t size = sizeof packed;
        void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                         CU_LAUNCH_PARAM_END};
        CUD(cuLaunchKernel(g_fn_affine, gx, 1, 1, 256, 1, 1, 0, S(t, slot), NULL, extra));
        break;
    }
    default: {
        CUlaunchConfig cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.gridDimX = gx;
        cfg.gridDimY = cfg.gridDimZ = 1;
        cfg.blockDimX = 256;
        cfg.blockDimY = cfg.blockDimZ = 1;
        cfg.hStream = S(t, slot);
        CUD(cuLaunchKernelEx(&cfg, g_fn_affine, args, NULL));
        break;
    }
    }
}

static void shadow_affine(sx_alloc *a, size_t off, size_t len, int mul, int add)
{
    for (size_t i = 0; i < len; i++)
        a->shadow[off + i] = (unsigned char)(a->shadow[off + i] * mul + add);
}

/* The affine kernel launched through the driver. */
static void op_drvkernel(sx_thread *t)
{
    sx_alloc *a = pick(t);
    if (!a || !g_drv_kernels)
        return;
    size_t off, len;
    pick_range(t, a->size, &off, &len);
    int slot = pick_slot(t), how = 1 + (int)rnd(t, 3);
    int mul = 1 + 2 * (int)rnd(t, 4), add = (int)rnd(t, 256);
    static const char *const hows[] = {"", "cuLaunchKernel kernelParams", "cuLaunchKernel extra", "cuLaunchKernelEx"};
    note(t, "%s affine alloc %ld [%zu, +%zu) * %d + %d", hows[how], a->id, off, len, mul, add);
    use(t, a, slot, 1);
    launch_affine(t, a->dev + off, len, mul, add, slot, how);
    shadow_affine(a, off, len, mul, add);
}

/* cuMemsetD8, D16 or D32 (synchronous or Async) on a range aligned to its
 * element. */
static void op_drvset(sx_thread *t)
{
    sx_alloc *a = pick(t);
    if (!a)
        return;
    size_t off, len, elem = (size_t)1 << rnd(t, 3);
    pick_range(t, a->size, &off, &len);
    off -= off % elem;
    len -= len % elem;
    if (len == 0)
        return;
    uint32_t v = (uint32_t)sx_next(&t->drng);
    if (chance(t, 25))
        v = 0;
    int slot = pick_slot(t), sync = chance(t, 40);
    note(t, "cuMemsetD%zu%s alloc %ld [%zu, +%zu) = 0x%x", elem * 8, sync ? "" : "Async", a->id, off, len, v);
    size_t n = len / elem;
    CUdeviceptr d = DP(a->dev + off);
    use(t, a, sync ? SX_LEGACY : slot, 1);
    if (elem == 1)
        CUD(sync ? cuMemsetD8(d, (unsigned char)v, n) : cuMemsetD8Async(d, (unsigned char)v, n, S(t, slot)));
    else if (elem == 2)
        CUD(sync ? cuMemsetD16(d, (unsigned short)v, n) : cuMemsetD16Async(d, (unsigned short)v, n, S(t, slot)));
    else
        CUD(sync ? cuMemsetD32(d, v, n) : cuMemsetD32Async(d, v, n, S(t, slot)));
    for (size_t i = 0; i < len; i++)
        a->shadow[off + i] = (unsigned char)(v >> (8 * (i % elem))); /* little-endian elements */
    memset(a->known + off, 1, len);
}

/* The byte operations again, through the driver API. */
static void op_drv(sx_thread *t)
{
    static void (*const ops[])(sx_thread *) = {op_drvset, op_h2d, op_d2h, op_d2d, op_2d, op_verify};
    t->drv = 1;
    ops[rnd(t, sizeof ops / sizeof *ops)](t);
    t->drv = 0;
}

/* A kernel handed a device array of (pointer, length) pairs, copied from
 * the host just before into a part of one allocation: each listed range
 * (often a whole allocation, otherwise any byte range of one) gains a
 * constant. */
static void op_ptrarray(sx_thread *t)
{
    int n = 1 + (int)rnd(t, 4);
    size_t bytes = (size_t)n * sizeof(sx_entry);
    sx_alloc *tab = pick_min(t, bytes);
    if (!tab || !g_kernels)
        return;
    size_t toff = rnd(t, (tab->size - bytes) / 16 + 1) * 16;
    sx_alloc *l[4];
    size_t off[4], len[4];
    int m = 0;
    for (int tries = 0; tries < 3 * n && m < n; tries++) {
        sx_alloc *a = pick(t);
        int dup = a == tab;
        for (int i = 0; i < m; i++)
            dup |= l[i] == a;
        if (dup)
            continue;
        l[m] = a;
        if (chance(t, 60)) {
            off[m] = 0;
            len[m] = a->size;
        } else {
            pick_range(t, a->size, &off[m], &len[m]);
        }
        m++;
    }
    if (m == 0)
        return;
    bytes = (size_t)m * sizeof(sx_entry);
    sx_entry *e = (sx_entry *)(void *)t->stage;
    for (int i = 0; i < m; i++)
        e[i] = (sx_entry){l[i]->dev + off[i], len[i]};
    int add = 1 + (int)rnd(t, 255), slot = pick_slot(t), drv = g_drv_kernels && chance(t, 50);
    note(t, "pointer array of %d at alloc %ld offset %zu (%s), each + %d", m, tab->id, toff,
         drv ? "cuMemcpyHtoD, cuLaunchKernel" : "cudaMemcpy, cudaLaunchKernel", add);
    use(t, tab, SX_LEGACY, 1);
    if (drv)
        CUD(cuMemcpyHtoD(DP(tab->dev + toff), e, bytes));
    else
        CU(cudaMemcpy(tab->dev + toff, e, bytes, cudaMemcpyHostToDevice));
    memcpy(tab->shadow + toff, e, bytes);
    memset(tab->known + toff, 1, bytes);
    use(t, tab, slot, 0);
    for (int i = 0; i < m; i++) {
        note(t, "  alloc %ld [%zu, +%zu)", l[i]->id, off[i], len[i]);
        use(t, l[i], slot, 1);
    }
    unsigned char *list = tab->dev + toff;
    void *args[] = {&list, &m, &add};
    if (drv) {
        CUD(cuLaunchKernel(g_fn_ptradd, 1, 1, 1, 256, 1, 1, 0, S(t, slot), args, NULL));
    } else {
        dim3 grid = {1, 1, 1}, block = {256, 1, 1};
        CU(cudaLaunchKernel((const void *)k_ptradd, grid, block, args, 0, S(t, slot)));
    }
    for (int i = 0; i < m; i++)
        for (size_t j = 0; j < len[i]; j++)
            l[i]->shadow[off[i] + j] = (unsigned char)(l[i]->shadow[off[i] + j] + add);
}

/* ---- graphs ------------------------------------------------------------------ */

static void graph_destroy(sx_thread *t, sx_graph *g)
{
    note(t, "graph %d destroyed", (int)(g - t->gr));
    if (g->drv) {
        CUD(cuGraphExecDestroy((CUgraphExec)g->ge));
        if (g->g)
            CUD(cuGraphDestroy((CUgraph)g->g));
    } else {
        CU(cudaGraphExecDestroy(g->ge));
        if (g->g)
            CU(cudaGraphDestroy(g->g));
    }
    for (int i = 0; i < g->nsteps; i++) {
        g->st[i].a->graphs--;
        if (g->st[i].kind == SX_STEP_COPY)
            g->st[i].b->graphs--;
    }
    memset(g, 0, sizeof *g);
}

static void graphs_drop(sx_thread *t, const sx_alloc *a)
{
    for (int k = 0; k < SX_GRAPHS; k++) {
        sx_graph *g = &t->gr[k];
        int uses = 0;
        for (int i = 0; g->live && i < g->nsteps; i++)
            uses |= g->st[i].a == a || (g->st[i].kind == SX_STEP_COPY && g->st[i].b == a);
        if (uses)
            graph_destroy(t, g);
    }
}

/* Launches g on a slot, after the last operations on its allocations, and
 * applies its steps to the shadow. */
static void graph_launch(sx_thread *t, sx_graph *g)
{
    int slot = pick_slot(t);
    note(t, "graph %d launched on slot %d (%s)", (int)(g - t->gr), slot, g->drv ? "cuGraphLaunch" : "cudaGraphLaunch");
    for (int i = 0; i < g->nsteps; i++) {
        use(t, g->st[i].a, slot, g->st[i].kind != SX_STEP_COPY);
        if (g->st[i].kind == SX_STEP_COPY)
            use(t, g->st[i].b, slot, 1);
    }
    if (g->drv)
        CUD(cuGraphLaunch((CUgraphExec)g->ge, S(t, slot)));
    else
        CU(cudaGraphLaunch(g->ge, S(t, slot)));
    for (int i = 0; i < g->nsteps; i++) {
        const sx_step *st = &g->st[i];
        switch (st->kind) {
        case SX_STEP_SET:
            memset(st->a->shadow + st->off, st->v, st->len);
            memset(st->a->known + st->off, 1, st->len);
            break;
        case SX_STEP_COPY:
            memmove(st->b->shadow + st->doff, st->a->shadow + st->off, st->len);
            memmove(st->b->known + st->doff, st->a->known + st->off, st->len);
            break;
        default: shadow_affine(st->a, st->off, st->len, st->mul, st->add); break;
        }
    }
}

/* Captures a few sets, copies and kernels on one of the thread's streams
 * (through the runtime or the driver, each operation by either), in
 * relaxed or thread-local mode so that the other thread's cudaMalloc and
 * cudaFree stay legal. A blocking stream captures only when this thread is
 * alone: the other thread's use of the legacy stream would break the
 * capture. Nothing runs at capture, so no ordering is needed until launch. */
static void graph_capture(sx_thread *t, sx_graph *g)
{
    int cand[SX_MAX_STREAMS], nc = 0;
    for (int i = 1; i < t->nslots; i++)
        if (!t->blocking[i] || g_threads == 1)
            cand[nc++] = i;
    if (!nc || !t->na)
        return;
    int slot = cand[rnd(t, (size_t)nc)], drv = chance(t, 50), relaxed = chance(t, 50);
    sx_graph ng = {.live = 1, .drv = drv};
    int want = 1 + (int)rnd(t, SX_GSTEPS);
    for (int tries = 0; tries < 2 * want && ng.nsteps < want; tries++) {
        sx_step st = {.kind = (int)rnd(t, 3), .a = pick(t)};
        pick_range(t, st.a->size, &st.off, &st.len);
        if (st.kind == SX_STEP_COPY) {
            st.b = pick(t);
            if (st.len > st.b->size)
                st.len = st.b->size;
            if (place(t, st.a, st.off, st.b, st.len, &st.doff))
                continue;
        } else if (st.kind == SX_STEP_AFFINE) {
            if (!g_kernels)
                continue;
            st.mul = 1 + 2 * (int)rnd(t, 4);
            st.add = (int)rnd(t, 256);
        } else {
            st.v = (int)rnd(t, 256);
        }
        ng.st[ng.nsteps++] = st;
    }
    if (!ng.nsteps)
        return;
    note(t, "graph %d captured on slot %d (%s, %s mode), %d steps", (int)(g - t->gr), slot,
         drv ? "cuStreamBeginCapture" : "cudaStreamBeginCapture", relaxed ? "relaxed" : "thread-local", ng.nsteps);
    cudaStream_t s = S(t, slot);
    if (drv)
        CUD(cuStreamBeginCapture(s, relaxed ? CU_STREAM_CAPTURE_MODE_RELAXED : CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    else
        CU(cudaStreamBeginCapture(s, relaxed ? cudaStreamCaptureModeRelaxed : cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < ng.nsteps; i++) {
        const sx_step *st = &ng.st[i];
        int d = chance(t, 50);
        switch (st->kind) {
        case SX_STEP_SET:
            note(t, "  set alloc %ld [%zu, +%zu) = %d", st->a->id, st->off, st->len, st->v);
            if (d)
                CUD(cuMemsetD8Async(DP(st->a->dev + st->off), (unsigned char)st->v, st->len, s));
            else
                CU(cudaMemsetAsync(st->a->dev + st->off, st->v, st->len, s));
            break;
        case SX_STEP_COPY:
            note(t, "  copy alloc %ld [%zu, +%zu) -> alloc %ld at %zu", st->a->id, st->off, st->len, st->b->id,
                 st->doff);
            if (d)
                CUD(cuMemcpyDtoDAsync(DP(st->b->dev + st->doff), DP(st->a->dev + st->off), st->len, s));
            else
                CU(cudaMemcpyAsync(st->b->dev + st->doff, st->a->dev + st->off, st->len, cudaMemcpyDeviceToDevice,
                                   s));
            break;
        default:
            note(t, "  affine alloc %ld [%zu, +%zu) * %d + %d", st->a->id, st->off, st->len, st->mul, st->add);
            launch_affine(t, st->a->dev + st->off, st->len, st->mul, st->add, slot,
                          d && g_drv_kernels ? 1 + (int)rnd(t, 3) : SX_LAUNCH_RT);
            break;
        }
    }
    if (drv) {
        CUD(cuStreamEndCapture(s, (CUgraph *)&ng.g));
        CUD(cuGraphInstantiateWithFlags((CUgraphExec *)&ng.ge, (CUgraph)ng.g, 0));
    } else {
        CU(cudaStreamEndCapture(s, &ng.g));
        CU(cudaGraphInstantiate(&ng.ge, ng.g, 0));
    }
    /* the executable graph stands alone */
    if (chance(t, 50)) {
        if (drv)
            CUD(cuGraphDestroy((CUgraph)ng.g));
        else
            CU(cudaGraphDestroy(ng.g));
        ng.g = NULL;
    }
    for (int i = 0; i < ng.nsteps; i++) {
        ng.st[i].a->graphs++;
        if (ng.st[i].kind == SX_STEP_COPY)
            ng.st[i].b->graphs++;
    }
    *g = ng;
}

/* A thread's graph: captured when it has none, then launched over later
 * operations until destroyed (here, or when one of its allocations is
 * freed). */
static void op_graph(sx_thread *t)
{
    sx_graph *g = &t->gr[rnd(t, SX_GRAPHS)];
    if (!g->live) {
        graph_capture(t, g);
        if (g->live && chance(t, 70))
            graph_launch(t, g);
    } else if (chance(t, 12)) {
        graph_destroy(t, g);
    } else {
        graph_launch(t, g);
    }
}

/* ---- calls that fail ---------------------------------------------------------- */

/* A call that would overwrite a whole allocation and fails: a copy with an
 * invalid direction (cudaErrorInvalidMemcpyDirection), 1-D or 2-D, from the
 * host or another allocation, or a 2-D set whose rows are wider than their
 * pitch (cudaErrorInvalidValue). Nothing changes; the program checks the
 * error and clears it with cudaGetLastError. */
static void op_fail(sx_thread *t)
{
    sx_alloc *a = pick(t), *b = pick(t);
    if (!a)
        return;
    /* the allocation is what a memory manager needs for the call */
    use_touch(t, a);
    const void *src = b != a && b->size >= a->size ? (const void *)b->dev : (const void *)t->stage;
    enum cudaMemcpyKind bad = (enum cudaMemcpyKind)(5 + rnd(t, 3));
    int slot = pick_slot(t), async = chance(t, 50);
    size_t r = rnd(t, 3);
    if (r == 2 && a->size < 3)
        r = 0;
    cudaError_t want = r == 2 ? cudaErrorInvalidValue : cudaErrorInvalidMemcpyDirection, e;
    if (r == 0) {
        note(t, "cudaMemcpy%s into alloc %ld whole with direction %d: must fail", async ? "Async" : "", a->id,
             (int)bad);
        e = async ? cudaMemcpyAsync(a->dev, src, a->size, bad, S(t, slot)) : cudaMemcpy(a->dev, src, a->size, bad);
    } else if (r == 1) {
        note(t, "cudaMemcpy2D%s into alloc %ld whole with direction %d: must fail", async ? "Async" : "", a->id,
             (int)bad);
        e = async ? cudaMemcpy2DAsync(a->dev, a->size, src, a->size, a->size, 1, bad, S(t, slot))
                  : cudaMemcpy2D(a->dev, a->size, src, a->size, a->size, 1, bad);
    } else {
        /* two rows: the second ends at the allocation's end */
        size_t pitch = 1 + rnd(t, (a->size - 1) / 2), w = a->size - pitch;
        int v = (int)rnd(t, 256);
        note(t, "cudaMemset2D%s alloc %ld pitch %zu width %zu x 2 = %d: must fail", async ? "Async" : "", a->id,
             pitch, w, v);
        e = async ? cudaMemset2DAsync(a->dev, pitch, v, w, 2, S(t, slot)) : cudaMemset2D(a->dev, pitch, v, w, 2);
    }
    if (e != want)
        sx_fail(t, 2, stderr, "sn_stress: error: a call that must fail returned %s, not %s (seed %ld op %ld)",
                cudaGetErrorName(e), cudaGetErrorName(want), g_seed, t->gop);
    cudaError_t last = cudaGetLastError(), after = cudaGetLastError();
    if (last != want || after != cudaSuccess)
        sx_fail(t, 2, stderr, "sn_stress: error: cudaGetLastError after a failed call: %s then %s (seed %ld op %ld)",
                cudaGetErrorName(last), cudaGetErrorName(after), g_seed, t->gop);
    if (chance(t, 50))
        d2h(t, a, 0, a->size, pick_slot(t), pick_mode(t));
}

/* ---- floats ---------------------------------------------------------------- */

static float ldf(const sx_alloc *a, size_t off)
{
    float f;
    memcpy(&f, a->shadow + off, 4);
    return f;
}

static void stf(sx_alloc *a, size_t off, float f)
{
    memcpy(a->shadow + off, &f, 4);
    memset(a->known + off, 1, 4);
}

/* A region of n floats; regions of one operation never overlap. */
typedef struct sx_reg {
    sx_alloc *a;
    size_t off, n;
} sx_reg;

static int overlaps(const sx_reg *r, const sx_alloc *a, size_t off, size_t bytes)
{
    return r->a == a && off < r->off + r->n * 4 && r->off < off + bytes;
}

static int pick_reg(sx_thread *t, sx_reg *out, size_t n, const sx_reg *avoid, int navoid)
{
    size_t bytes = n * 4;
    for (int tries = 0; tries < 6; tries++) {
        sx_alloc *a = pick_min(t, bytes);
        if (!a)
            return -1;
        /* 16-byte aligned, as cuDNN wants its operands */
        size_t off = rnd(t, (a->size - bytes) / 16 + 1) * 16;
        int bad = 0;
        for (int i = 0; i < navoid; i++)
            bad |= overlaps(&avoid[i], a, off, bytes);
        if (!bad) {
            *out = (sx_reg){a, off, n};
            return 0;
        }
    }
    return -1;
}

/* Whether every float of r is known and a non-negative integer <= lim. */
static int clean(const sx_reg *r, float lim)
{
    for (size_t i = 0; i < r->n; i++) {
        size_t o = r->off + 4 * i;
        const unsigned char *k = r->a->known + o;
        if (!(k[0] & k[1] & k[2] & k[3]))
            return 0;
        float f = ldf(r->a, o);
        uint32_t bits;
        memcpy(&bits, &f, 4);
        /* the sign bit also rules out -0.0, whose products keep a sign */
        if ((bits >> 31) || !(f <= lim) || (float)(int32_t)f != f)
            return 0;
    }
    return 1;
}

/* Makes r hold small integers again when it does not already hold floats
 * usable as an operand (sign: non-zero values of either sign, always
 * written), through the device like any other write. */
static void prep(sx_thread *t, const sx_reg *r, float lim, int slot, int sign)
{
    if (!sign && clean(r, lim))
        return;
    size_t bytes = r->n * 4;
    if (!sign && chance(t, 15)) {
        use(t, r->a, slot, 1);
        CU(cudaMemsetAsync(r->a->dev + r->off, 0, bytes, S(t, slot)));
        memset(r->a->shadow + r->off, 0, bytes);
        memset(r->a->known + r->off, 1, bytes);
        return;
    }
    fill_floats(t, t->stage, r->off, bytes, sign);
    h2d(t, r->a, r->off, bytes, slot, pick_mode(t));
}

static float pick_scalar(sx_thread *t)
{
    size_t r = rnd(t, 8);
    return r < 3 ? 0.0f : r < 7 ? 1.0f : 2.0f;
}

static void op_saxpy(sx_thread *t)
{
    int n = 1 + (int)rnd(t, 512), incx = chance(t, 20) ? 2 : 1, incy = chance(t, 20) ? 2 : 1;
    sx_reg r[2];
    if (pick_reg(t, &r[0], 1 + (size_t)(n - 1) * incx, NULL, 0) || pick_reg(t, &r[1], 1 + (size_t)(n - 1) * incy, r, 1))
        return;
    float alpha = pick_scalar(t);
    int slot = pick_slot(t);
    note(t, "saxpy n %d alpha %g x alloc %ld at %zu y alloc %ld at %zu", n, alpha, r[0].a->id, r[0].off, r[1].a->id,
         r[1].off);
    prep(t, &r[0], SX_ADD_LIM, slot, 0);
    prep(t, &r[1], SX_ADD_LIM, slot, 0);
    use(t, r[0].a, slot, 0);
    use(t, r[1].a, slot, 1);
    BLAS(cublasSetStream(t->blas, S(t, slot)));
    BLAS(cublasSaxpy(t->blas, n, &alpha, (const float *)(r[0].a->dev + r[0].off), incx,
                     (float *)(r[1].a->dev + r[1].off), incy));
    for (int i = 0; i < n; i++) {
        size_t xo = r[0].off + 4 * (size_t)i * incx, yo = r[1].off + 4 * (size_t)i * incy;
        stf(r[1].a, yo, alpha * ldf(r[0].a, xo) + ldf(r[1].a, yo));
    }
}

static void op_sscal(sx_thread *t)
{
    int n = 1 + (int)rnd(t, 512), incx = chance(t, 20) ? 2 : 1;
    sx_reg r;
    if (pick_reg(t, &r, 1 + (size_t)(n - 1) * incx, NULL, 0))
        return;
    float alpha = pick_scalar(t);
    int slot = pick_slot(t);
    note(t, "sscal n %d alpha %g x alloc %ld at %zu", n, alpha, r.a->id, r.off);
    prep(t, &r, SX_ADD_LIM, slot, 0);
    use(t, r.a, slot, 1);
    BLAS(cublasSetStream(t->blas, S(t, slot)));
    BLAS(cublasSscal(t->blas, n, &alpha, (float *)(r.a->dev + r.off), incx));
    for (int i = 0; i < n; i++) {
        size_t o = r.off + 4 * (size_t)i * incx;
        stf(r.a, o, alpha * ldf(r.a, o));
    }
}

static void op_sgemm(sx_thread *t)
{
    int m = 1 + (int)rnd(t, 40), n = 1 + (int)rnd(t, 40), k = 1 + (int)rnd(t, 40);
    int ta = chance(t, 40), tb = chance(t, 40);
    int ra = ta ? k : m, ca = ta ? m : k, rb = tb ? n : k, cb = tb ? k : n;
    int lda = ra + (chance(t, 25) ? (int)rnd(t, 4) : 0), ldb = rb + (chance(t, 25) ? (int)rnd(t, 4) : 0);
    int ldc = m + (chance(t, 25) ? (int)rnd(t, 4) : 0);
    sx_reg r[3];
    if (pick_reg(t, &r[0], (size_t)(ca - 1) * lda + ra, NULL, 0) ||
        pick_reg(t, &r[1], (size_t)(cb - 1) * ldb + rb, r, 1) || pick_reg(t, &r[2], (size_t)(n - 1) * ldc + m, r, 2))
        return;
    float alpha = pick_scalar(t), beta = chance(t, 50) ? 0.0f : 1.0f;
    int slot = pick_slot(t);
    note(t, "sgemm %c%c m %d n %d k %d alpha %g beta %g A alloc %ld at %zu B alloc %ld at %zu C alloc %ld at %zu",
         ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, beta, r[0].a->id, r[0].off, r[1].a->id, r[1].off,
         r[2].a->id, r[2].off);
    if (alpha != 0.0f) {
        prep(t, &r[0], SX_MUL_LIM, slot, 0);
        prep(t, &r[1], SX_MUL_LIM, slot, 0);
    }
    if (beta != 0.0f)
        prep(t, &r[2], SX_ADD_LIM, slot, 0);
    use(t, r[0].a, slot, 0);
    use(t, r[1].a, slot, 0);
    use(t, r[2].a, slot, 1);
    BLAS(cublasSetStream(t->blas, S(t, slot)));
    order(t, &t->blas_owner, slot);
    BLAS(cublasSgemm(t->blas, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha,
                     (const float *)(r[0].a->dev + r[0].off), lda, (const float *)(r[1].a->dev + r[1].off), ldb,
                     &beta, (float *)(r[2].a->dev + r[2].off), ldc));
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            float s = 0.0f;
            if (alpha != 0.0f)
                for (int l = 0; l < k; l++) {
                    size_t ia = ta ? (size_t)l + (size_t)i * lda : (size_t)i + (size_t)l * lda;
                    size_t ib = tb ? (size_t)j + (size_t)l * ldb : (size_t)l + (size_t)j * ldb;
                    s += ldf(r[0].a, r[0].off + 4 * ia) * ldf(r[1].a, r[1].off + 4 * ib);
                }
            size_t co = r[2].off + 4 * ((size_t)i + (size_t)j * ldc);
            float c = beta != 0.0f ? beta * ldf(r[2].a, co) : 0.0f;
            stf(r[2].a, co, (alpha != 0.0f ? alpha * s : 0.0f) + c);
        }
}

/* An NCHW tensor, possibly a strided view with gaps. */
typedef struct sx_t4 {
    int n, c, h, w, sn, sc, sh, sw;
} sx_t4;

static sx_t4 t4(sx_thread *t, int n, int c, int h, int w, int strided)
{
    sx_t4 d = {n, c, h, w, 0, 0, 0, 1};
    d.sh = w + (strided ? (int)rnd(t, 3) : 0);
    d.sc = h * d.sh + (strided ? (int)rnd(t, 5) : 0);
    d.sn = c * d.sc + (strided ? (int)rnd(t, 5) : 0);
    return d;
}

static size_t t4_extent(const sx_t4 *d)
{
    return (size_t)(d->n - 1) * d->sn + (size_t)(d->c - 1) * d->sc + (size_t)(d->h - 1) * d->sh +
           (size_t)(d->w - 1) * d->sw + 1;
}

static size_t t4_at(const sx_t4 *d, int n, int c, int h, int w)
{
    return (size_t)n * d->sn + (size_t)c * d->sc + (size_t)h * d->sh + (size_t)w * d->sw;
}

static void t4_set(sx_thread *t, cudnnTensorDescriptor_t desc, const sx_t4 *d)
{
    DNN(cudnnSetTensor4dDescriptorEx(desc, CUDNN_DATA_FLOAT, d->n, d->c, d->h, d->w, d->sn, d->sc, d->sh, d->sw));
}

static sx_t4 t4_random(sx_thread *t, int strided)
{
    return t4(t, 1 + (int)rnd(t, 2), 1 + (int)rnd(t, 4), 1 + (int)rnd(t, 8), 1 + (int)rnd(t, 8), strided);
}

static void op_addtensor(sx_thread *t)
{
    sx_t4 c = t4_random(t, chance(t, 30));
    int bias = chance(t, 50);
    sx_t4 a = bias ? t4(t, 1, c.c, 1, 1, 0) : t4(t, c.n, c.c, c.h, c.w, chance(t, 30));
    sx_reg r[2];
    if (pick_reg(t, &r[0], t4_extent(&a), NULL, 0) || pick_reg(t, &r[1], t4_extent(&c), r, 1))
        return;
    float alpha = pick_scalar(t), beta = chance(t, 50) ? 0.0f : 1.0f;
    int slot = pick_slot(t);
    note(t, "cudnnAddTensor %s alpha %g beta %g A alloc %ld at %zu C alloc %ld at %zu", bias ? "bias" : "full",
         alpha, beta, r[0].a->id, r[0].off, r[1].a->id, r[1].off);
    prep(t, &r[0], SX_ADD_LIM, slot, 0);
    if (beta != 0.0f)
        prep(t, &r[1], SX_ADD_LIM, slot, 0);
    t4_set(t, t->td[0], &a);
    t4_set(t, t->td[1], &c);
    use(t, r[0].a, slot, 0);
    use(t, r[1].a, slot, 1);
    DNN(cudnnSetStream(t->dnn, S(t, slot)));
    DNN(cudnnAddTensor(t->dnn, &alpha, t->td[0], r[0].a->dev + r[0].off, &beta, t->td[1], r[1].a->dev + r[1].off));
    for (int in = 0; in < c.n; in++)
        for (int ic = 0; ic < c.c; ic++)
            for (int ih = 0; ih < c.h; ih++)
                for (int iw = 0; iw < c.w; iw++) {
                    size_t ao = r[0].off + 4 * (bias ? t4_at(&a, 0, ic, 0, 0) : t4_at(&a, in, ic, ih, iw));
                    size_t co = r[1].off + 4 * t4_at(&c, in, ic, ih, iw);
                    float y = alpha * ldf(r[0].a, ao);
                    stf(r[1].a, co, beta != 0.0f ? y + beta * ldf(r[1].a, co) : y);
                }
}

static void op_relu(sx_thread *t)
{
    sx_t4 x = t4_random(t, chance(t, 30));
    int inplace = chance(t, 25);
    sx_t4 y = inplace ? x : t4(t, x.n, x.c, x.h, x.w, chance(t, 30));
    sx_reg r[2];
    if (pick_reg(t, &r[0], t4_extent(&x), NULL, 0))
        return;
    if (inplace)
        r[1] = r[0];
    else if (pick_reg(t, &r[1], t4_extent(&y), r, 1))
        return;
    float alpha = pick_scalar(t), beta = chance(t, 50) ? 0.0f : 1.0f;
    int slot = pick_slot(t), sign = chance(t, 50);
    note(t, "cudnnActivationForward relu%s alpha %g beta %g x alloc %ld at %zu y alloc %ld at %zu",
         inplace ? " in place" : "", alpha, beta, r[0].a->id, r[0].off, r[1].a->id, r[1].off);
    prep(t, &r[0], SX_ADD_LIM, slot, sign);
    if (beta != 0.0f && !inplace)
        prep(t, &r[1], SX_ADD_LIM, slot, 0);
    t4_set(t, t->td[0], &x);
    t4_set(t, t->td[1], &y);
    use(t, r[0].a, slot, 0);
    use(t, r[1].a, slot, 1);
    DNN(cudnnSetStream(t->dnn, S(t, slot)));
    DNN(cudnnActivationForward(t->dnn, t->ad, &alpha, t->td[0], r[0].a->dev + r[0].off, &beta, t->td[1],
                               r[1].a->dev + r[1].off));
    for (int in = 0; in < x.n; in++)
        for (int ic = 0; ic < x.c; ic++)
            for (int ih = 0; ih < x.h; ih++)
                for (int iw = 0; iw < x.w; iw++) {
                    size_t xo = r[0].off + 4 * t4_at(&x, in, ic, ih, iw);
                    size_t yo = r[1].off + 4 * t4_at(&y, in, ic, ih, iw);
                    float v = ldf(r[0].a, xo), act = v > 0.0f ? v : 0.0f;
                    float out = alpha * act;
                    stf(r[1].a, yo, beta != 0.0f ? out + beta * ldf(r[1].a, yo) : out);
                }
}

static void op_settensor(sx_thread *t)
{
    sx_t4 y = t4_random(t, chance(t, 40));
    sx_reg r;
    if (pick_reg(t, &r, t4_extent(&y), NULL, 0))
        return;
    int slot = pick_slot(t), scale = chance(t, 40);
    float v = scale ? pick_scalar(t) : (float)rnd(t, 4);
    note(t, "cudnn%sTensor %g y alloc %ld at %zu", scale ? "Scale" : "Set", v, r.a->id, r.off);
    if (scale)
        prep(t, &r, SX_ADD_LIM, slot, 0);
    t4_set(t, t->td[0], &y);
    use(t, r.a, slot, 1);
    DNN(cudnnSetStream(t->dnn, S(t, slot)));
    if (scale)
        DNN(cudnnScaleTensor(t->dnn, t->td[0], r.a->dev + r.off, &v));
    else
        DNN(cudnnSetTensor(t->dnn, t->td[0], r.a->dev + r.off, &v));
    for (int in = 0; in < y.n; in++)
        for (int ic = 0; ic < y.c; ic++)
            for (int ih = 0; ih < y.h; ih++)
                for (int iw = 0; iw < y.w; iw++) {
                    size_t o = r.off + 4 * t4_at(&y, in, ic, ih, iw);
                    stf(r.a, o, scale ? v * ldf(r.a, o) : v);
                }
}

static void op_conv(sx_thread *t)
{
    int n = 1 + (int)rnd(t, 2), c = 1 + (int)rnd(t, 3), h = 3 + (int)rnd(t, 6), w = 3 + (int)rnd(t, 6);
    int k = 1 + (int)rnd(t, 3), f = chance(t, 60) ? 3 : 1, pad = (int)rnd(t, 2), stride = 1 + (int)rnd(t, 2);
    sx_t4 x = t4(t, n, c, h, w, 0);
    int on, oc, oh, ow;
    DNN(cudnnSetFilter4dDescriptor(t->fd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c, f, f));
    DNN(cudnnSetConvolution2dDescriptor(t->cd, pad, pad, stride, stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                        CUDNN_DATA_FLOAT));
    t4_set(t, t->td[0], &x);
    DNN(cudnnGetConvolution2dForwardOutputDim(t->cd, t->td[0], t->fd, &on, &oc, &oh, &ow));
    sx_t4 y = t4(t, on, oc, oh, ow, chance(t, 30));
    sx_reg r[3];
    size_t wn = (size_t)k * c * f * f;
    if (pick_reg(t, &r[0], t4_extent(&x), NULL, 0) || pick_reg(t, &r[1], wn, r, 1) ||
        pick_reg(t, &r[2], t4_extent(&y), r, 2))
        return;
    t4_set(t, t->td[1], &y);
    static const cudnnConvolutionFwdAlgo_t algos[] = {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                                      CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                                                      CUDNN_CONVOLUTION_FWD_ALGO_GEMM};
    cudnnConvolutionFwdAlgo_t algo = algos[rnd(t, 3)];
    size_t wsb = 0;
    DNN(cudnnGetConvolutionForwardWorkspaceSize(t->dnn, t->td[0], t->fd, t->cd, t->td[1], algo, &wsb));
    float alpha = chance(t, 80) ? 1.0f : pick_scalar(t), beta = chance(t, 50) ? 0.0f : 1.0f;
    int slot = pick_slot(t);
    note(t, "conv %dx%dx%dx%d k %d f %d pad %d stride %d algo %d ws %zu alpha %g beta %g x alloc %ld w alloc %ld y "
            "alloc %ld",
         n, c, h, w, k, f, pad, stride, (int)algo, wsb, alpha, beta, r[0].a->id, r[1].a->id, r[2].a->id);
    prep(t, &r[0], SX_MUL_LIM, slot, 0);
    prep(t, &r[1], SX_MUL_LIM, slot, 0);
    if (beta != 0.0f)
        prep(t, &r[2], SX_ADD_LIM, slot, 0);
    if (wsb) {
        t->nallocs++;
        CU(cudaMalloc(&t->ws, wsb));
        t->opws += wsb;
        if (t->live + wsb > t->peak)
            t->peak = t->live + wsb;
    }
    use(t, r[0].a, slot, 0);
    use(t, r[1].a, slot, 0);
    use(t, r[2].a, slot, 1);
    DNN(cudnnSetStream(t->dnn, S(t, slot)));
    DNN(cudnnConvolutionForward(t->dnn, &alpha, t->td[0], r[0].a->dev + r[0].off, t->fd, r[1].a->dev + r[1].off,
                                t->cd, algo, t->ws, wsb, &beta, t->td[1], r[2].a->dev + r[2].off));
    if (t->ws) {
        /* cudaFree waits for the convolution */
        CU(cudaFree(t->ws));
        t->ws = NULL;
    }
    for (int in = 0; in < on; in++)
        for (int ik = 0; ik < oc; ik++)
            for (int oy = 0; oy < oh; oy++)
                for (int ox = 0; ox < ow; ox++) {
                    float s = 0.0f;
                    for (int ic = 0; ic < c; ic++)
                        for (int i = 0; i < f; i++)
                            for (int j = 0; j < f; j++) {
                                int iy = oy * stride - pad + i, ix = ox * stride - pad + j;
                                if (iy < 0 || iy >= h || ix < 0 || ix >= w)
                                    continue;
                                size_t wo = (((size_t)ik * c + ic) * f + i) * f + j;
                                s += ldf(r[0].a, r[0].off + 4 * t4_at(&x, in, ic, iy, ix)) *
                                     ldf(r[1].a, r[1].off + 4 * wo);
                            }
                    size_t yo = r[2].off + 4 * t4_at(&y, in, ik, oy, ox);
                    float out = alpha * s;
                    stf(r[2].a, yo, beta != 0.0f ? out + beta * ldf(r[2].a, yo) : out);
                }
}

static void op_sync(sx_thread *t)
{
    switch (rnd(t, 3)) {
    case 0:
        note(t, "cudaDeviceSynchronize");
        CU(cudaDeviceSynchronize());
        settle(t, -1);
        break;
    case 1: {
        int slot = pick_slot(t);
        note(t, "cudaStreamSynchronize slot %d", slot);
        CU(cudaStreamSynchronize(S(t, slot)));
        settle(t, slot);
        break;
    }
    default:
        note(t, "check the pending pinned read-backs");
        drain(t);
        break;
    }
}

/* ---- one thread ------------------------------------------------------------- */

typedef void (*sx_op)(sx_thread *);
/* The kinds with a name can be left out (--without): without all of them
 * a seed does what it did before they existed. */
static struct {
    sx_op fn;
    int weight;
    const char *name;
} g_table[] = {
    {op_malloc, 12, NULL}, {op_free, 7, NULL},     {op_memset, 8, NULL},    {op_h2d, 9, NULL},
    {op_d2h, 8, NULL},     {op_d2d, 8, NULL},      {op_2d, 6, NULL},        {op_saxpy, 4, NULL},
    {op_sscal, 3, NULL},   {op_sgemm, 5, NULL},    {op_addtensor, 3, NULL}, {op_relu, 3, NULL},
    {op_conv, 3, NULL},    {op_settensor, 2, NULL}, {op_kernel, 4, NULL},   {op_verify, 3, NULL},
    {op_sync, 2, NULL},    {op_drv, 7, "driver"},  {op_drvkernel, 3, "drvlaunch"}, {op_ptrarray, 3, "ptrarray"},
    {op_graph, 4, "graph"}, {op_fail, 2, "fail"},
};

/* --without LIST: a comma-separated list of kinds' names, or "new" for all
 * of them. */
static int without(const char *list)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (size_t i = 0; i < sizeof g_table / sizeof *g_table; i++)
            if (g_table[i].name && (!strcmp(w, "new") || !strcmp(w, g_table[i].name))) {
                g_table[i].weight = 0;
                found = 1;
            }
        if (!found)
            return -1;
    }
    return 0;
}

static void one_op(sx_thread *t)
{
    int total = 0;
    for (size_t i = 0; i < sizeof g_table / sizeof *g_table; i++)
        total += g_table[i].weight;
    /* grow towards --max-live quickly, so the peak is well above what one
     * operation touches */
    int grow = t->live < g_max_live / 2 ? 16 : 0;
    int r = (int)rnd(t, (size_t)(total + grow));
    if (t->na == 0 || r >= total)
        r = 0; /* op_malloc */
    for (size_t i = 0; i < sizeof g_table / sizeof *g_table; i++) {
        if (r < g_table[i].weight) {
            g_table[i].fn(t);
            return;
        }
        r -= g_table[i].weight;
    }
}

static void setup(sx_thread *t)
{
    t->host = xmalloc(t, g_max_size);
    t->stage = xmalloc(t, g_max_size);
    t->nslots = 1 + g_streams;
    t->s[SX_LEGACY] = 0;
    t->blocking[SX_LEGACY] = 1;
    for (int i = 1; i < t->nslots; i++) {
        /* the first two created streams: one blocking, one not */
        t->blocking[i] = i == 1 ? 1 : i == 2 ? 0 : chance(t, 50);
        if (t->blocking[i])
            CU(cudaStreamCreate(&t->s[i]));
        else
            CU(cudaStreamCreateWithFlags(&t->s[i], cudaStreamNonBlocking));
    }
    for (int i = 0; i < SX_EVENTS; i++)
        CU(cudaEventCreateWithFlags(&t->ev[i], i % 2 ? cudaEventDisableTiming : cudaEventDefault));
    for (int i = 0; i < SX_PINNED; i++) {
        sx_pinned *pb = &t->pin[i];
        pb->exp = xmalloc(t, g_max_size);
        pb->kn = xmalloc(t, g_max_size);
        CU(cudaMallocHost((void **)&pb->p, g_max_size));
        CU(cudaEventCreateWithFlags(&pb->ev, cudaEventDisableTiming));
    }
    t->blas_owner = -1;
    BLAS(cublasCreate(&t->blas));
    DNN(cudnnCreate(&t->dnn));
    for (int i = 0; i < 3; i++)
        DNN(cudnnCreateTensorDescriptor(&t->td[i]));
    DNN(cudnnCreateFilterDescriptor(&t->fd));
    DNN(cudnnCreateConvolutionDescriptor(&t->cd));
    DNN(cudnnCreateActivationDescriptor(&t->ad));
    DNN(cudnnSetActivationDescriptor(t->ad, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
}

static void run_ops(sx_thread *t)
{
    long n = g_ops / g_threads + (t->idx < g_ops % g_threads);
    for (t->op = 0; t->op < n; t->op++) {
        if (__atomic_load_n(&g_stop, __ATOMIC_SEQ_CST))
            return;
        t->gop = t->op * g_threads + t->idx;
        t->nwr = t->ntouched = 0;
        t->opws = 0;
        one_op(t);
        t->ops_done++;
        if (t->opws > t->wmax)
            t->wmax = t->opws;
    }
}

/* Every live allocation read back whole, then the pending pinned ones. */
static void final_verify(sx_thread *t)
{
    t->nwr = 0;
    t->drv = 0;
    t->gop = t->op * g_threads + t->idx;
    for (int i = 0; i < t->na; i++) {
        sx_alloc *a = t->a[i];
        if (a->dev)
            d2h(t, a, 0, a->size, pick_slot(t), pick_mode(t));
    }
    drain(t);
}

static void *worker(void *p)
{
    sx_thread *t = p;
    if (setjmp(t->jb) == 0) {
        setup(t);
        run_ops(t);
    }
    int code = sx_code();
    if ((code == 0 || code == 3) && setjmp(t->jb) == 0)
        final_verify(t);
    return NULL;
}

/* Everything a thread holds, released by the main thread after the join;
 * errors are ignored, the run's verdict is already known. */
static void teardown(sx_thread *t)
{
    cudaDeviceSynchronize();
    for (int i = 0; i < SX_GRAPHS; i++)
        if (t->gr[i].live) {
            cudaGraphExecDestroy(t->gr[i].ge);
            if (t->gr[i].g)
                cudaGraphDestroy(t->gr[i].g);
        }
    for (int i = 0; i < t->na; i++) {
        cudaFree(t->a[i]->dev);
        free(t->a[i]->shadow);
        free(t->a[i]->known);
        free(t->a[i]);
    }
    free(t->a);
    if (t->ws)
        cudaFree(t->ws);
    for (int i = 0; i < SX_PINNED; i++) {
        if (t->pin[i].ev)
            cudaEventDestroy(t->pin[i].ev);
        cudaFreeHost(t->pin[i].p);
        free(t->pin[i].exp);
        free(t->pin[i].kn);
    }
    for (int i = 0; i < SX_EVENTS; i++)
        if (t->ev[i])
            cudaEventDestroy(t->ev[i]);
    for (int i = 1; i < t->nslots; i++)
        if (t->s[i])
            cudaStreamDestroy(t->s[i]);
    for (int i = 0; i < 3; i++)
        if (t->td[i])
            cudnnDestroyTensorDescriptor(t->td[i]);
    if (t->fd)
        cudnnDestroyFilterDescriptor(t->fd);
    if (t->cd)
        cudnnDestroyConvolutionDescriptor(t->cd);
    if (t->ad)
        cudnnDestroyActivationDescriptor(t->ad);
    if (t->dnn)
        cudnnDestroy(t->dnn);
    if (t->blas)
        cublasDestroy(t->blas);
    free(t->host);
    free(t->stage);
}

/* ---- main --------------------------------------------------------------------- */

static int parse_size(const char *s, size_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s)
        return -1;
    if (*end == 'K')
        v <<= 10, end++;
    else if (*end == 'M')
        v <<= 20, end++;
    if (*end || v == 0)
        return -1;
    *out = (size_t)v;
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: sn_stress --seed S [--ops N] [--threads 1|2] [--streams K (1..%d)] "
                    "[--max-size BYTES] [--max-live BYTES] [--without new|KIND,...] [--print-peak] [--verbose]\n",
            SX_MAX_STREAMS);
    return 2;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(o, "--print-peak")) {
            g_print_peak = 1;
            continue;
        }
        if (!strcmp(o, "--verbose")) {
            g_verbose = 1;
            continue;
        }
        if (!v)
            return usage();
        i++;
        if (!strcmp(o, "--seed"))
            g_seed = strtol(v, &end, 10);
        else if (!strcmp(o, "--ops"))
            g_ops = strtol(v, &end, 10);
        else if (!strcmp(o, "--threads"))
            g_threads = (int)strtol(v, &end, 10);
        else if (!strcmp(o, "--streams"))
            g_streams = (int)strtol(v, &end, 10);
        else if (!strcmp(o, "--max-size")) {
            if (parse_size(v, &g_max_size))
                return usage();
            continue;
        } else if (!strcmp(o, "--max-live")) {
            if (parse_size(v, &g_max_live))
                return usage();
            continue;
        } else if (!strcmp(o, "--without")) {
            if (without(v))
                return usage();
            continue;
        } else
            return usage();
        if (!end || *end)
            return usage();
    }
    if (g_seed < 0 || g_ops < 0 || g_threads < 1 || g_threads > 2 || g_streams < 1 || g_streams > SX_MAX_STREAMS)
        return usage();

    static const size_t affine[] = {sizeof(void *), sizeof(size_t), sizeof(int), sizeof(int)};
    static const size_t xr[] = {sizeof(void *), sizeof(void *), sizeof(size_t)};
    static const size_t pa[] = {sizeof(void *), sizeof(int), sizeof(int)};
    g_kernels = simgpu_register_host_kernel(k_affine, "sn_stress_affine", 4, affine) == 0 &&
                simgpu_register_host_kernel(k_xor, "sn_stress_xor", 3, xr) == 0 &&
                simgpu_register_host_kernel(k_ptradd, "sn_stress_ptradd", 3, pa) == 0;
    if (g_kernels) {
        /* the same kernels in a module, for the driver's launches */
        static const simgpu_host_module_kernel mk[] = {{"affine", k_affine, 4, affine}, {"ptradd", k_ptradd, 3, pa}};
        static const simgpu_host_module image = {SIMGPU_HOST_MODULE_MAGIC, 2, mk};
        CUdevice dev;
        CUcontext ctx;
        CUmodule mod;
        g_drv_kernels = cuInit(0) == CUDA_SUCCESS && cuDeviceGet(&dev, 0) == CUDA_SUCCESS &&
                        cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS && cuCtxSetCurrent(ctx) == CUDA_SUCCESS &&
                        cuModuleLoadData(&mod, &image) == CUDA_SUCCESS &&
                        cuModuleGetFunction(&g_fn_affine, mod, "affine") == CUDA_SUCCESS &&
                        cuModuleGetFunction(&g_fn_ptradd, mod, "ptradd") == CUDA_SUCCESS;
    }

    sx_thread th[2];
    memset(th, 0, sizeof th);
    for (int i = 0; i < g_threads; i++) {
        th[i].idx = i;
        th[i].rng = (uint64_t)g_seed * 0x100000001b3ull + (uint64_t)i * 0x9e3779b97f4a7c15ull;
        th[i].drng = ~th[i].rng;
    }
    if (g_threads == 1) {
        worker(&th[0]);
    } else {
        pthread_t tid[2];
        int started[2] = {0, 0};
        for (int i = 0; i < g_threads; i++)
            started[i] = pthread_create(&tid[i], NULL, worker, &th[i]) == 0;
        for (int i = 0; i < g_threads; i++)
            if (started[i])
                pthread_join(tid[i], NULL);
        if (!started[0] || !started[1]) {
            fprintf(stderr, "sn_stress: error: pthread_create failed\n");
            return 2;
        }
    }
    long ops = 0, checked = 0, nallocs = 0;
    size_t peak = 0, wmax = 0;
    for (int i = 0; i < g_threads; i++) {
        ops += th[i].ops_done;
        checked += th[i].checked;
        nallocs += th[i].nallocs;
        peak += th[i].peak;
        wmax += th[i].wmax;
        teardown(&th[i]);
    }
    int code = sx_code();
    if (g_print_peak)
        printf("sn_stress: peak live bytes %zu, working set %zu, allocations %ld\n", peak, wmax, nallocs);
    if (code == 0)
        printf("sn_stress: seed %ld: %ld ops, %ld bytes checked, OK\n", g_seed, ops, checked);
    return code;
}
