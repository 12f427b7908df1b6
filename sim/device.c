/*
 * device.c — the simulated GPU's devices and memory.
 *
 * Every device owns a slice of this process's virtual address space, reserved
 * PROT_NONE at start-up: the lower part serves cudaMalloc/cuMemAlloc (the
 * "heap"), the upper part serves cuMemAddressReserve. Device pointers are thus
 * real host addresses, the CPU-side arithmetic dereferences them directly, and
 * a byte that is not mapped faults exactly where a GPU would raise an illegal
 * address. VMM physical memory is one sparse memfd per device; cuMemMap maps a
 * piece of it MAP_SHARED|MAP_FIXED, so data written through one mapping is seen
 * through the next one, and cuMemUnmap puts the reserved PROT_NONE range back.
 *
 * With SIMGPU_COMPUTE=0 nothing is ever committed: no memfd is mapped, heap
 * pages stay PROT_NONE, and residency is checked against the tables alone, so
 * an 80 GB device can be simulated on a machine with far less memory.
 *
 * Capacity is accounted in bytes against SIMGPU_MEM (or the profile's size):
 * heap allocations rounded to 512 bytes, VMM handles at their full size.
 * Managed allocations (cudaMallocManaged) come from the heap and are always
 * committed, since the host may touch them; stream-ordered allocations come
 * from the heap through the device's pool (sim/pool.c).
 */
#include "sim/simcore.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sim/simint.h"
#include "sim/simtime.h"

size_t simgpu_granularity = (size_t)2 << 20;

/* Figures and their sources: README.md, "Device profiles"; conv_eff is
 * fitted to published timings (docs/sim-cudnn.md, "Calibration"). */
static const simgpu_profile k_profiles[] = {
    {.name = "k40", .long_name = "Tesla K40c (simulated)", .mem_bytes = 11996954624ull,
     .fp32_flops = 4.29e12, .tf32_flops = 0, .mem_bw = 288e9, .pcie_h2d_bw = 12.18e9,
     .pcie_d2h_bw = 12.46e9, .pcie_pageable_bw = 6.0e9, .copy_engines = 2, .launch_ns = 5000.0,
     .cc_major = 3, .cc_minor = 5, .sm_count = 15, .conv_eff = 0.34, .winograd_eff = 1.0, .winograd_nonfused = 0},
    {.name = "titanx", .long_name = "GeForce GTX TITAN X (simulated)", .mem_bytes = 12884705280ull,
     .fp32_flops = 6.14e12, .tf32_flops = 0, .mem_bw = 336.5e9, .pcie_h2d_bw = 12.18e9,
     .pcie_d2h_bw = 12.46e9, .pcie_pageable_bw = 6.5e9, .copy_engines = 2, .launch_ns = 5000.0,
     .cc_major = 5, .cc_minor = 2, .sm_count = 24, .conv_eff = 1.0, .winograd_eff = 1.25, .winograd_nonfused = 0},
    {.name = "v100", .long_name = "Tesla V100-SXM2-16GB (simulated)", .mem_bytes = 16945512448ull,
     .fp32_flops = 15.7e12, .tf32_flops = 0, .mem_bw = 900e9, .pcie_h2d_bw = 9.6e9,
     .pcie_d2h_bw = 11.4e9, .pcie_pageable_bw = 7.0e9, .copy_engines = 2, .launch_ns = 4000.0,
     .cc_major = 7, .cc_minor = 0, .sm_count = 80, .conv_eff = 1.15, .winograd_eff = 0.5, .winograd_nonfused = 1},
    {.name = "h100", .long_name = "NVIDIA H100 80GB HBM3 (simulated)", .mem_bytes = 85031714816ull,
     .fp32_flops = 66.9e12, .tf32_flops = 494.7e12, .mem_bw = 3350e9, .pcie_h2d_bw = 54.6e9,
     .pcie_d2h_bw = 54.6e9, .pcie_pageable_bw = 20.0e9, .copy_engines = 2, .launch_ns = 3000.0,
     .cc_major = 9, .cc_minor = 0, .sm_count = 132, .conv_eff = 1.15, .winograd_eff = 0.5, .winograd_nonfused = 1},
};

struct simgpu_global g_sim;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static __thread int t_device = 0;

void simgpu_log(const char *fmt, ...)
{
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "simgpu: ");
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(buf + n, sizeof buf - (size_t)n - 2, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof buf - 2)
        n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    ssize_t w = write(2, buf, (size_t)n);
    (void)w;
}

/* "12G", "512M", "1048576": binary suffixes; 0 on a malformed value. */
static size_t parse_size(const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v <= 0)
        return 0;
    switch (*end) {
    case 'k': case 'K': v *= 1024.0; end++; break;
    case 'm': case 'M': v *= 1024.0 * 1024; end++; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; end++; break;
    case 't': case 'T': v *= 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b' || (*end == 'i' && end[1] == 'B'))
        end += (*end == 'i') ? 2 : 1;
    if (*end)
        return 0;
    return (size_t)v;
}

static int env_flag(const char *name, int def)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    if (!strcmp(v, "0") || !strcmp(v, "off") || !strcmp(v, "no") || !strcmp(v, "false"))
        return 0;
    if (!strcmp(v, "1") || !strcmp(v, "on") || !strcmp(v, "yes") || !strcmp(v, "true"))
        return 1;
    simgpu_log("%s=%s not understood (use 0 or 1); using %d", name, v, def);
    return def;
}

/* SIMGPU_COMPUTE: what env_flag reads, or libs: compute in the libraries
 * and in host-bodied kernels as with 1, and stand in for kernels without a
 * CPU body (sim/standin.c). */
static void env_compute(void)
{
    const char *v = getenv("SIMGPU_COMPUTE");
    g_sim.standin = v && !strcmp(v, "libs");
    if (g_sim.standin)
        g_sim.compute = 1;
    else if (v && *v && strcmp(v, "0") && strcmp(v, "off") && strcmp(v, "no") && strcmp(v, "false") &&
             strcmp(v, "1") && strcmp(v, "on") && strcmp(v, "yes") && strcmp(v, "true")) {
        simgpu_log("SIMGPU_COMPUTE=%s not understood (use 0, 1 or libs); using 1", v);
        g_sim.compute = 1;
    } else {
        g_sim.compute = env_flag("SIMGPU_COMPUTE", 1);
    }
}

static size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

static void print_stats(void);

static void init_device(struct simgpu_device *d, int idx, const simgpu_profile *p, size_t cap)
{
    memset(d, 0, sizeof *d);
    d->index = idx;
    /* CUDA's default pool: every reuse policy on, release threshold 0. */
    d->pool.follow_events = d->pool.opportunistic = d->pool.internal_deps = 1;
    d->prof = p;
    d->capacity = cap;
    /* Address space: generous, because reserving costs nothing and libsn
     * reserves address space for every size of tensor it has seen (the real
     * driver offers tens of TiB: a 47- or 49-bit space shared with the host);
     * the VMM part is 32 times the capacity unless SIMGPU_VA says otherwise.
     * A process whose address space is fenced in (ThreadSanitizer keeps
     * applications to a few TiB-sized windows, ulimit -v) may refuse the
     * generous span for a large device; then ask for less, down to the
     * capacity itself, as a driver on a smaller virtual address space would
     * offer less. */
    static const struct { unsigned heap_x4, vmm_x4; } k_spans[] = {
        {8, 128}, {8, 32}, {8, 16}, {6, 8}, {5, 5}, {4, 4},
    };
    void *base = MAP_FAILED;
    size_t span = 0;
    for (size_t i = 0; i < sizeof k_spans / sizeof k_spans[0] && base == MAP_FAILED; i++) {
        size_t heap = cap / 4 * k_spans[i].heap_x4, vmm = cap / 4 * k_spans[i].vmm_x4;
        size_t min_heap = i == 0 ? (size_t)1 << 30 : (size_t)64 << 20;
        size_t min_vmm = i == 0 ? (size_t)8 << 30 : (size_t)64 << 20;
        if (g_sim.va_span)
            vmm = min_vmm = g_sim.va_span;
        d->heap_span = round_up(heap > min_heap ? heap : min_heap, SIMGPU_GRANULARITY);
        d->vmm_span = round_up(vmm > min_vmm ? vmm : min_vmm, SIMGPU_GRANULARITY);
        span = d->heap_span + d->vmm_span + SIMGPU_GRANULARITY;
        base = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    }
    if (base == MAP_FAILED) {
        simgpu_log("cannot reserve %zu bytes of address space for device %d: %s", span, idx, strerror(errno));
        abort();
    }
    /* Align to the VMM granularity so reservations are naturally aligned. */
    uintptr_t b = round_up((uintptr_t)base, SIMGPU_GRANULARITY);
    d->heap_base = b;
    d->vmm_base = b + d->heap_span;
    sim_rangeset_init(&d->heap_free, d->heap_base, d->heap_span);
    sim_rangeset_init(&d->vmm_free, d->vmm_base, d->vmm_span);
    d->phys_span = round_up(cap * 4, SIMGPU_GRANULARITY);
    /* Physical offsets start one granule in, so that 0 never names one. */
    sim_rangeset_init(&d->phys_free, SIMGPU_GRANULARITY, d->phys_span);
    d->memfd = -1;
    if (g_sim.compute && g_sim.vmm) {
        char name[32];
        snprintf(name, sizeof name, "simgpu-dev%d", idx);
        d->memfd = memfd_create(name, MFD_CLOEXEC);
        if (d->memfd < 0 || ftruncate(d->memfd, (off_t)(d->phys_span + SIMGPU_GRANULARITY)) != 0) {
            simgpu_log("cannot create physical memory for device %d: %s; VMM disabled", idx, strerror(errno));
            if (d->memfd >= 0)
                close(d->memfd);
            d->memfd = -1;
        }
    }
}

static void do_init(void)
{
    const char *pname = getenv("SIMGPU_PROFILE");
    const simgpu_profile *p = &k_profiles[0];
    if (pname && *pname) {
        int found = 0;
        for (size_t i = 0; i < sizeof k_profiles / sizeof k_profiles[0]; i++)
            if (!strcasecmp(pname, k_profiles[i].name)) {
                p = &k_profiles[i];
                found = 1;
            }
        if (!found)
            simgpu_log("SIMGPU_PROFILE=%s unknown (k40, titanx, v100, h100); using k40", pname);
    }
    env_compute();
    g_sim.vmm = env_flag("SIMGPU_VMM", 1);
    g_sim.stats = env_flag("SIMGPU_STATS", 0);
    const char *fa = getenv("SIMGPU_FAULT_ALLOC");
    if (fa && *fa) {
        char *end;
        unsigned long long n = strtoull(fa, &end, 10);
        if (n == 0 || (*end && strcmp(end, "+")))
            simgpu_log("SIMGPU_FAULT_ALLOC=%s not understood (N or N+, N >= 1); no faults injected", fa);
        else {
            g_sim.fault_at = n;
            g_sim.fault_repeat = *end == '+';
        }
    }
    g_sim.hazards = 2;
    const char *hz = getenv("SIMGPU_HAZARDS");
    if (hz && *hz) {
        if (!strcmp(hz, "off") || !strcmp(hz, "0"))
            g_sim.hazards = 0;
        else if (!strcmp(hz, "warn"))
            g_sim.hazards = 1;
        else if (strcmp(hz, "fatal") != 0)
            simgpu_log("SIMGPU_HAZARDS=%s not understood (fatal, warn, off); using fatal", hz);
    }
    const char *gr = getenv("SIMGPU_GRANULARITY");
    if (gr && *gr) {
        size_t v = parse_size(gr);
        if (v < ((size_t)64 << 10) || v > ((size_t)2 << 20) || (v & (v - 1)))
            simgpu_log("SIMGPU_GRANULARITY=%s not understood (a power of two from 64K to 2M); using 2M", gr);
        else
            simgpu_granularity = v;
    }
    size_t cap = p->mem_bytes;
    const char *m = getenv("SIMGPU_MEM");
    if (m && *m) {
        size_t v = parse_size(m);
        if (v < ((size_t)1 << 20))
            simgpu_log("SIMGPU_MEM=%s not understood (e.g. 12G, 512M; at least 1M); using %zu bytes", m, cap);
        else
            cap = v;
    }
    const char *va = getenv("SIMGPU_VA");
    if (va && *va) {
        size_t v = parse_size(va);
        if (v < ((size_t)64 << 20))
            simgpu_log("SIMGPU_VA=%s not understood (e.g. 256G, 4G; at least 64M); using 32 times the memory", va);
        else
            g_sim.va_span = v;
    }
    g_sim.ndev = 1;
    const char *n = getenv("SIMGPU_DEVICES");
    if (n && *n) {
        int v = atoi(n);
        if (v < 1 || v > SIMGPU_MAX_DEVICES)
            simgpu_log("SIMGPU_DEVICES=%s out of range 1..%d; using 1", n, SIMGPU_MAX_DEVICES);
        else
            g_sim.ndev = v;
    }
    g_sim.page_size = (size_t)sysconf(_SC_PAGESIZE);
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&g_sim.lock, &a);
    for (int i = 0; i < g_sim.ndev; i++)
        init_device(&g_sim.dev[i], i, p, cap);
    if (g_sim.stats)
        atexit(print_stats);
}

void simgpu_init(void) { pthread_once(&g_once, do_init); }
int simgpu_device_count(void) { simgpu_init(); return g_sim.ndev; }
int simgpu_compute_enabled(void) { simgpu_init(); return g_sim.compute; }
int simgpu_kernel_standin(void) { simgpu_init(); return g_sim.standin; }
int simgpu_vmm_supported(void) { simgpu_init(); return g_sim.vmm; }
const simgpu_profile *simgpu_profile_of(int dev) { simgpu_init(); return g_sim.dev[dev].prof; }
size_t simgpu_capacity(int dev) { simgpu_init(); return g_sim.dev[dev].capacity; }
/* The current context's device; without one, the device the runtime last
 * selected on this thread (cudaSetDevice), 0 by default. */
int simgpu_current_device(void)
{
    int d = sim_ctx_device();
    return d >= 0 ? d : t_device;
}
void simgpu_set_current_device(int dev) { t_device = dev; }

struct simgpu_device *sim_dev(int i)
{
    simgpu_init();
    return (i >= 0 && i < g_sim.ndev) ? &g_sim.dev[i] : NULL;
}

int sim_fault_alloc_locked(void)
{
    uint64_t n = ++g_sim.allocs;
    return g_sim.fault_at && (n == g_sim.fault_at || (g_sim.fault_repeat && n > g_sim.fault_at));
}

/* Must be called with g_sim.lock held. */
int sim_charge_locked(struct simgpu_device *d, size_t bytes)
{
    if (bytes > d->capacity - d->used)
        return -1;
    d->used += bytes;
    if (d->used > d->peak)
        d->peak = d->used;
    return 0;
}

/* ---- heap (cudaMalloc) --------------------------------------------------- */

#define HEAP_ALIGN 512

/* Read once in do_init, under pthread_once, so that threads allocating
 * pinned memory (outside the lock) and device memory (inside it) never race
 * on a lazily written copy. */
static size_t page_size(void) { return g_sim.page_size; }

uintptr_t sim_heap_carve_locked(struct simgpu_device *d, size_t rs, int open)
{
    if (sim_charge_locked(d, rs) != 0)
        return 0;
    uintptr_t a = sim_rangeset_alloc(&d->heap_free, rs, HEAP_ALIGN);
    if (!a) {
        d->used -= rs;
        return 0;
    }
    if (open) {
        uintptr_t ps = page_size();
        uintptr_t lo = a / ps * ps, hi = round_up(a + rs, ps);
        if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE) != 0) {
            sim_rangeset_free(&d->heap_free, a, rs);
            d->used -= rs;
            return 0;
        }
    }
    return a;
}

void sim_heap_release_locked(struct simgpu_device *d, uintptr_t a, size_t rs, int protect)
{
    sim_rangeset_free(&d->heap_free, a, rs);
    sim_hazard_forget_locked(d, a, rs);
    d->used -= rs;
    if (!protect)
        return;
    /* Give back and protect the pages no live allocation shares any more,
     * so a use after free faults instead of reading stale data. */
    uintptr_t fb, fs;
    if (sim_rangeset_containing(&d->heap_free, a, &fb, &fs)) {
        uintptr_t ps = page_size();
        uintptr_t lo = round_up(fb, ps), hi = (fb + fs) / ps * ps;
        if (hi > lo) {
            madvise((void *)lo, hi - lo, MADV_DONTNEED);
            mprotect((void *)lo, hi - lo, PROT_NONE);
        }
    }
}

static CUresult heap_alloc(int dev, size_t size, int kind, CUdeviceptr *out)
{
    struct simgpu_device *d = sim_dev(dev);
    if (!d || !out)
        return CUDA_ERROR_INVALID_VALUE;
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    size_t rs = round_up(size, HEAP_ALIGN);
    if (rs < size)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&g_sim.lock);
    /* Managed memory is the host's to touch too, so it is committed even
     * when nothing else is (compute off). */
    uintptr_t a = sim_fault_alloc_locked() ? 0 : sim_heap_carve_locked(d, rs, g_sim.compute || kind == SIM_EXT_MANAGED);
    if (a)
        sim_extset_insert(&d->live, a, rs, kind, PROT_READ | PROT_WRITE, NULL);
    sim_host_charge_locked(SIM_HOST_MALLOC, a ? rs : 0, 0);
    pthread_mutex_unlock(&g_sim.lock);
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *out = (CUdeviceptr)a;
    return CUDA_SUCCESS;
}

CUresult simgpu_malloc(int dev, size_t size, CUdeviceptr *out) { return heap_alloc(dev, size, SIM_EXT_HEAP, out); }

CUresult simgpu_malloc_managed(int dev, size_t size, unsigned flags, CUdeviceptr *out)
{
    /* Exactly one of global and host attachment (cuMemAllocManaged). */
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    return heap_alloc(dev, size, SIM_EXT_MANAGED, out);
}

struct simgpu_device *sim_device_of_locked(uintptr_t p)
{
    for (int i = 0; i < g_sim.ndev; i++) {
        struct simgpu_device *d = &g_sim.dev[i];
        if (p >= d->heap_base && p < d->vmm_base + d->vmm_span)
            return d;
    }
    return NULL;
}

int sim_heap_kind(int kind) { return kind == SIM_EXT_HEAP || kind == SIM_EXT_MANAGED || kind == SIM_EXT_POOL; }

/* sync: wait for the device first, as cuMemFree does; without it the caller
 * has already waited for what it must (cudaFreeAsync of a cuMemAlloc
 * allocation waits for its stream only). */
static CUresult heap_free(CUdeviceptr p, int sync)
{
    simgpu_init();
    if (!p)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&g_sim.lock);
    struct simgpu_device *d = sim_device_of_locked((uintptr_t)p);
    struct sim_extent *e = d ? sim_extset_find(&d->live, (uintptr_t)p) : NULL;
    if (!e || e->base != (uintptr_t)p || !sim_heap_kind(e->kind)) {
        pthread_mutex_unlock(&g_sim.lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (sync) {
        sim_host_sync_device_locked(d);
        e = sim_extset_find(&d->live, (uintptr_t)p);
    }
    sim_host_charge_locked(SIM_HOST_FREE, e->size, 0);
    uintptr_t a = e->base;
    size_t rs = e->size;
    int kind = e->kind;
    sim_extset_remove(&d->live, a);
    if (kind == SIM_EXT_POOL)
        sim_pool_forget_locked(d, rs); /* a stream-ordered allocation freed with cuMemFree */
    sim_heap_release_locked(d, a, rs, g_sim.compute || kind == SIM_EXT_MANAGED);
    pthread_mutex_unlock(&g_sim.lock);
    return CUDA_SUCCESS;
}

CUresult simgpu_free(CUdeviceptr p) { return heap_free(p, 1); }
CUresult sim_free_unsynced(CUdeviceptr p) { return heap_free(p, 0); }

void simgpu_mem_info(int dev, size_t *free_b, size_t *total_b)
{
    struct simgpu_device *d = sim_dev(dev);
    if (!d)
        return;
    pthread_mutex_lock(&g_sim.lock);
    if (free_b)
        *free_b = d->capacity - d->used;
    if (total_b)
        *total_b = d->capacity;
    pthread_mutex_unlock(&g_sim.lock);
}

int simgpu_device_of(const void *p)
{
    simgpu_init();
    pthread_mutex_lock(&g_sim.lock);
    struct simgpu_device *d = sim_device_of_locked((uintptr_t)p);
    int r = d ? d->index : -1;
    pthread_mutex_unlock(&g_sim.lock);
    return r;
}

int simgpu_heap_lookup(const void *p, CUdeviceptr *base, size_t *size)
{
    simgpu_init();
    int rc = -1;
    pthread_mutex_lock(&g_sim.lock);
    struct simgpu_device *d = sim_device_of_locked((uintptr_t)p);
    struct sim_extent *e = d ? sim_extset_find(&d->live, (uintptr_t)p) : NULL;
    if (e && sim_heap_kind(e->kind)) {
        if (base)
            *base = e->base;
        if (size)
            *size = e->size;
        rc = 0;
    }
    pthread_mutex_unlock(&g_sim.lock);
    return rc;
}

/* ---- pinned host memory ------------------------------------------------- */

void *simgpu_host_alloc(size_t size, unsigned flags)
{
    simgpu_init();
    (void)flags;
    if (size == 0)
        return NULL;
    size_t rs = round_up(size, page_size());
    /* With compute off the pages are never touched, so they are never
     * committed either: staging buffers for a full-size run cost nothing. */
    void *p = mmap(NULL, rs, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (g_sim.compute ? 0 : MAP_NORESERVE), -1, 0);
    if (p == MAP_FAILED) {
        pthread_mutex_lock(&g_sim.lock);
        sim_host_charge_locked(SIM_HOST_PIN, 0, 0);
        pthread_mutex_unlock(&g_sim.lock);
        return NULL;
    }
    pthread_mutex_lock(&g_sim.lock);
    sim_extset_insert(&g_sim.pinned, (uintptr_t)p, rs, SIM_EXT_PINNED, PROT_READ | PROT_WRITE, NULL);
    g_sim.pinned_bytes += rs;
    /* Page-locking costs the host per page (sim/hostcost.c); the rounded
     * size is what gets locked. */
    sim_host_charge_locked(SIM_HOST_PIN, rs, 0);
    pthread_mutex_unlock(&g_sim.lock);
    return p;
}

int simgpu_host_free(void *p)
{
    simgpu_init();
    pthread_mutex_lock(&g_sim.lock);
    struct sim_extent *e = sim_extset_find(&g_sim.pinned, (uintptr_t)p);
    if (!e || e->base != (uintptr_t)p) {
        pthread_mutex_unlock(&g_sim.lock);
        return -1;
    }
    size_t rs = e->size;
    /* The device may still be copying from or into the buffer: freeing it
     * waits for the current device, as cudaFreeHost does. */
    sim_host_sync_device_locked(sim_dev(simgpu_current_device()));
    sim_host_charge_locked(SIM_HOST_UNPIN, rs, 0);
    sim_extset_remove(&g_sim.pinned, (uintptr_t)p);
    g_sim.pinned_bytes -= rs;
    pthread_mutex_unlock(&g_sim.lock);
    munmap(p, rs);
    return 0;
}

int simgpu_is_managed(const void *p)
{
    simgpu_init();
    pthread_mutex_lock(&g_sim.lock);
    struct simgpu_device *d = sim_device_of_locked((uintptr_t)p);
    struct sim_extent *e = d ? sim_extset_find(&d->live, (uintptr_t)p) : NULL;
    int r = e && e->kind == SIM_EXT_MANAGED;
    pthread_mutex_unlock(&g_sim.lock);
    return r;
}

int simgpu_is_pinned(const void *p, size_t bytes)
{
    simgpu_init();
    pthread_mutex_lock(&g_sim.lock);
    struct sim_extent *e = sim_extset_find(&g_sim.pinned, (uintptr_t)p);
    int r = e && (uintptr_t)p + bytes <= e->base + e->size;
    pthread_mutex_unlock(&g_sim.lock);
    return r;
}

/* ---- residency ---------------------------------------------------------- */

/* Walks the live extents covering [p, p+bytes); a heap access must stay
 * inside one allocation, a VMM access may cross adjacent mappings. */
static int range_ok_locked(uintptr_t p, size_t bytes, int write, const char **why)
{
    struct simgpu_device *d = sim_device_of_locked(p);
    if (!d) {
        *why = "not a device address";
        return 0;
    }
    uintptr_t end = p + bytes;
    if (end < p || end > d->vmm_base + d->vmm_span) {
        *why = "range wraps or leaves the device's address space";
        return 0;
    }
    int need = write ? (PROT_READ | PROT_WRITE) : PROT_READ;
    uintptr_t cur = p;
    while (cur < end) {
        struct sim_extent *e = sim_extset_find(&d->live, cur);
        if (!e) {
            *why = (cur >= d->vmm_base) ? "reserved but not mapped" : "not allocated (or freed)";
            return 0;
        }
        if ((e->prot & need) != need) {
            *why = (e->prot == 0) ? "mapped without access (cuMemSetAccess missing)" : "mapped read-only";
            return 0;
        }
        if (sim_heap_kind(e->kind) && end > e->base + e->size) {
            *why = "runs past the end of its allocation";
            return 0;
        }
        cur = e->base + e->size;
    }
    return 1;
}

int simgpu_range_ok(const void *p, size_t bytes, int write)
{
    if (bytes == 0)
        return 1;
    simgpu_init();
    const char *why;
    pthread_mutex_lock(&g_sim.lock);
    int ok = range_ok_locked((uintptr_t)p, bytes, write, &why);
    pthread_mutex_unlock(&g_sim.lock);
    return ok;
}

void simgpu_check_range(const void *p, size_t bytes, int write, const char *what)
{
    if (bytes == 0)
        return;
    simgpu_init();
    const char *why = "";
    pthread_mutex_lock(&g_sim.lock);
    int ok = range_ok_locked((uintptr_t)p, bytes, write, &why);
    pthread_mutex_unlock(&g_sim.lock);
    if (ok) {
        sim_hazard_note(p, bytes, write, what);
        return;
    }
    simgpu_log("illegal address: %s %s [%p, +%zu): %s", what ? what : "access",
               write ? "writes" : "reads", p, bytes, why);
    /* A GPU ends the context; we end the process the way a CPU would. */
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
    abort();
}

/* ---- statistics ----------------------------------------------------------- */

void simgpu_count_bytes(int dev, int kind, uint64_t bytes)
{
    struct simgpu_device *d = sim_dev(dev);
    if (!d)
        return;
    pthread_mutex_lock(&g_sim.lock);
    if (kind == 0)
        d->bytes_h2d += bytes;
    else if (kind == 1)
        d->bytes_d2h += bytes;
    else
        d->bytes_d2d += bytes;
    pthread_mutex_unlock(&g_sim.lock);
}

void simgpu_get_stats(int dev, simgpu_stats *out)
{
    struct simgpu_device *d = sim_dev(dev);
    memset(out, 0, sizeof *out);
    if (!d)
        return;
    pthread_mutex_lock(&g_sim.lock);
    for (int i = 0; i < 3; i++) {
        out->busy_ns[i] = d->busy_ns[i];
        if (d->engine_free[i] > out->end_ns)
            out->end_ns = d->engine_free[i];
    }
    out->bytes_h2d = d->bytes_h2d;
    out->bytes_d2h = d->bytes_d2h;
    out->bytes_d2d = d->bytes_d2d;
    out->peak_bytes = d->peak;
    out->used_bytes = d->used;
    out->ops = d->ops;
    pthread_mutex_unlock(&g_sim.lock);
}

static void print_stats(void)
{
    for (int i = 0; i < g_sim.ndev; i++) {
        simgpu_stats s;
        simgpu_get_stats(i, &s);
        const simgpu_profile *p = g_sim.dev[i].prof;
        simgpu_log("device %d (%s, %.2f GiB%s): %llu ops, end %.3f ms", i, p->name,
                   g_sim.dev[i].capacity / 1073741824.0,
                   g_sim.standin ? ", compute libs" : g_sim.compute ? "" : ", compute off",
                   (unsigned long long)s.ops, s.end_ns / 1e6);
        simgpu_log("  busy ms: compute %.3f  copy-h2d %.3f  copy-d2h %.3f", s.busy_ns[0] / 1e6,
                   s.busy_ns[1] / 1e6, s.busy_ns[2] / 1e6);
        simgpu_log("  copied MiB: h2d %.1f  d2h %.1f  d2d %.1f", s.bytes_h2d / 1048576.0,
                   s.bytes_d2h / 1048576.0, s.bytes_d2d / 1048576.0);
        simgpu_log("  peak device memory %.1f MiB (in use at exit %.1f MiB)", s.peak_bytes / 1048576.0,
                   s.used_bytes / 1048576.0);
    }
    static const char *const names[SIM_HOST_OP_COUNT] = {
        [SIM_HOST_MALLOC] = "malloc", [SIM_HOST_FREE] = "free", [SIM_HOST_PIN] = "pin",
        [SIM_HOST_UNPIN] = "unpin", [SIM_HOST_VMM_CREATE] = "create", [SIM_HOST_VMM_RELEASE] = "release",
        [SIM_HOST_VMM_RESERVE] = "reserve", [SIM_HOST_VMM_ADDRESS_FREE] = "address-free",
        [SIM_HOST_VMM_MAP] = "map", [SIM_HOST_VMM_SET_ACCESS] = "set-access", [SIM_HOST_VMM_UNMAP] = "unmap",
    };
    pthread_mutex_lock(&g_sim.lock);
    simgpu_log("host: memory-management calls (calls, ms), and waits for the device in their synchronisations:");
    for (int op = 0; op < SIM_HOST_OP_COUNT; op++)
        if (g_sim.host_op_calls[op])
            simgpu_log("  %-12s %10llu %12.3f", names[op], (unsigned long long)g_sim.host_op_calls[op],
                       g_sim.host_op_ns[op] / 1e6);
    simgpu_log("  %-12s %10llu %12.3f", "device-wait", (unsigned long long)g_sim.host_syncs,
               g_sim.host_sync_wait_ns / 1e6);
    simgpu_log("host: explicit synchronisations (calls, ms waited), and every call's fixed cost:");
    static const char *const waits[3] = {"stream-sync", "event-sync", "device-sync"};
    for (int k = 0; k < 3; k++)
        simgpu_log("  %-12s %10llu %12.3f", waits[k], (unsigned long long)g_sim.waits[k], g_sim.wait_ns[k] / 1e6);
    simgpu_log("  %-12s %10llu %12.3f", "calls", (unsigned long long)g_sim.host_calls,
               g_sim.host_calls * (double)SIM_HOST_CALL_NS / 1e6);
    pthread_mutex_unlock(&g_sim.lock);
}
