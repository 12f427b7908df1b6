/*
 * pool.c — stream-ordered allocation (cuMemAllocAsync / cudaMallocAsync,
 * cuMemFreeAsync / cudaFreeAsync) from each device's default memory pool.
 *
 * An allocation and a free are operations in their stream: they happen when
 * the stream reaches them, take no engine time, and are checked like any op
 * (sim_marker_locked). The allocation is recorded as a write of its bytes,
 * so work on another stream that touches them before the allocation has
 * happened is an ordering hazard (use before allocation); the free is
 * checked as a write too, so work still reading or writing the block after
 * the free (another stream the freeing one did not wait for) is an ordering
 * hazard (use after free in time). From the moment cuMemFreeAsync returns
 * the block is no longer an allocation: any later op that touches it is an
 * illegal address, as after cuMemFree.
 *
 * A freed block stays in the pool and is handed out again only to an
 * allocation that runs after the free has completed: on the same stream
 * (stream order), on a stream whose ready time is past the free through an
 * event or the legacy stream (cudaMemPoolReuseFollowEventDependencies), or
 * when the free has completed by the host clock
 * (cudaMemPoolReuseAllowOpportunistic). Best fit; a larger block is split
 * and freed neighbours merge. The allocator never inserts dependencies of
 * its own (cudaMemPoolReuseAllowInternalDependencies only reports its value).
 *
 * Accounting: pool memory counts against the device's capacity (and in
 * cudaMemGetInfo's used memory) from the moment the pool takes it from the
 * device until the pool gives it back. With the default release threshold
 * of 0 that is at the next synchronisation of the device, a stream or an
 * event (for blocks whose free has completed by then), or at
 * cuMemPoolTrimTo; an allocation that does not fit first gives back the
 * pool's completed free blocks. The pool's own counters
 * (CU_MEMPOOL_ATTR_RESERVED_MEM_* and _USED_MEM_*) say how much it holds
 * and how much of that is allocated.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sim/simgraph.h"
#include "sim/simint.h"
#include "sim/simtime.h"

#define POOL_ALIGN 512

static size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

static void count_used_locked(struct sim_pool *p, size_t add)
{
    p->used += add;
    if (p->used > p->used_high)
        p->used_high = p->used;
    if (p->reserved > p->reserved_high)
        p->reserved_high = p->reserved;
}

static void block_remove(struct sim_pool *p, size_t i)
{
    memmove(&p->v[i], &p->v[i + 1], (p->n - i - 1) * sizeof *p->v);
    p->n--;
}

/* Adds a freed block, merging it with freed neighbours. */
static void block_insert(struct sim_pool *p, struct sim_pool_block b)
{
    size_t i = 0;
    while (i < p->n && p->v[i].base < b.base)
        i++;
    if (i > 0 && p->v[i - 1].base + p->v[i - 1].size == b.base) {
        struct sim_pool_block *l = &p->v[i - 1];
        l->size += b.size;
        if (b.free_end > l->free_end)
            l->free_end = b.free_end;
        if (l->stream != b.stream)
            l->stream = NULL; /* merged across streams: no single stream order any more */
        if (i < p->n && l->base + l->size == p->v[i].base) {
            l->size += p->v[i].size;
            if (p->v[i].free_end > l->free_end)
                l->free_end = p->v[i].free_end;
            if (p->v[i].stream != l->stream)
                l->stream = NULL;
            block_remove(p, i);
        }
        return;
    }
    if (i < p->n && b.base + b.size == p->v[i].base) {
        struct sim_pool_block *r = &p->v[i];
        r->base = b.base;
        r->size += b.size;
        if (b.free_end > r->free_end)
            r->free_end = b.free_end;
        if (r->stream != b.stream)
            r->stream = NULL;
        return;
    }
    if (p->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 16;
        struct sim_pool_block *nv = realloc(p->v, nc * sizeof *nv);
        if (!nv)
            abort();
        p->v = nv;
        p->cap = nc;
    }
    memmove(&p->v[i + 1], &p->v[i], (p->n - i) * sizeof *p->v);
    p->v[i] = b;
    p->n++;
}

/* Gives back the freed blocks completed by the host clock until the pool
 * holds at most keep bytes. */
static void release_locked(struct simgpu_device *d, size_t keep)
{
    struct sim_pool *p = &d->pool;
    for (size_t i = 0; i < p->n && p->reserved > keep;) {
        if (p->v[i].free_end > g_sim.host_now) {
            i++;
            continue;
        }
        struct sim_pool_block b = p->v[i];
        block_remove(p, i);
        p->reserved -= b.size;
        sim_heap_release_locked(d, b.base, b.size, g_sim.compute);
    }
}

void sim_pool_release_completed_locked(struct simgpu_device *d)
{
    if (d && d->pool.n && d->pool.reserved > d->pool.release_threshold)
        release_locked(d, (size_t)d->pool.release_threshold);
}

void sim_pool_forget_locked(struct simgpu_device *d, size_t rs)
{
    d->pool.used -= rs;
    d->pool.reserved -= rs;
}

/* The best-fitting freed block an allocation on stream key (ready at
 * `ready`, issued at host time `now`) may take, or -1. */
static long reusable(const struct sim_pool *p, size_t rs, const void *key, uint64_t ready, uint64_t now)
{
    long best = -1;
    for (size_t i = 0; i < p->n; i++) {
        const struct sim_pool_block *b = &p->v[i];
        if (b->size < rs)
            continue;
        int ordered = (b->stream == key || p->follow_events) && b->free_end <= ready;
        int completed = p->opportunistic && b->free_end <= now;
        if ((ordered || completed) && (best < 0 || b->size < p->v[best].size))
            best = (long)i;
    }
    return best;
}

/* A stream's identity for reuse: the handle, with the special ones resolved. */
static const void *stream_key(const struct sim_stream_ref *r) { return r->legacy ? (const void *)r->d : r->s; }

CUresult simgpu_malloc_async(size_t size, CUstream s, CUdeviceptr *out)
{
    simgpu_init();
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE; /* as cuMemAlloc */
    size_t rs = round_up(size, POOL_ALIGN);
    if (rs < size)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (simgpu_stream_check(s) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_HANDLE;
    /* Allocation nodes of graphs are not modelled. */
    CUresult rc = sim_capture_refuse(s);
    if (rc != CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&g_sim.lock);
    struct sim_stream_ref r;
    sim_stream_lookup_locked(s, &r);
    struct simgpu_device *d = r.d;
    struct sim_pool *p = &d->pool;
    if (sim_fault_alloc_locked()) {
        pthread_mutex_unlock(&g_sim.lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    sim_host_call_locked();
    uint64_t now = g_sim.host_now, ready = sim_stream_ready_locked(&r);
    uintptr_t a = 0;
    long i = reusable(p, rs, stream_key(&r), ready, now);
    if (i >= 0) {
        struct sim_pool_block *b = &p->v[i];
        a = b->base;
        b->base += rs;
        b->size -= rs;
        if (b->size == 0)
            block_remove(p, (size_t)i);
    } else {
        a = sim_heap_carve_locked(d, rs, g_sim.compute);
        if (!a) {
            release_locked(d, 0);
            a = sim_heap_carve_locked(d, rs, g_sim.compute);
        }
        if (!a) {
            pthread_mutex_unlock(&g_sim.lock);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        p->reserved += rs;
    }
    count_used_locked(p, rs);
    sim_extset_insert(&d->live, a, rs, SIM_EXT_POOL, PROT_READ | PROT_WRITE, NULL);
    /* The allocation happens when the stream reaches it: until then the
     * bytes are not the caller's (a write by the allocator). */
    sim_hazard_note((const void *)a, rs, 1, "stream-ordered allocation");
    sim_marker_locked(&r, "cudaMallocAsync");
    pthread_mutex_unlock(&g_sim.lock);
    *out = (CUdeviceptr)a;
    return CUDA_SUCCESS;
}

CUresult simgpu_free_async(CUdeviceptr ptr, CUstream s)
{
    simgpu_init();
    if (!ptr)
        return CUDA_ERROR_INVALID_VALUE;
    if (simgpu_stream_check(s) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&g_sim.lock);
    uintptr_t a = (uintptr_t)ptr;
    struct simgpu_device *d = sim_device_of_locked(a);
    struct sim_extent *e = d ? sim_extset_find(&d->live, a) : NULL;
    int kind = (e && e->base == a) ? e->kind : 0;
    pthread_mutex_unlock(&g_sim.lock);
    if (!sim_heap_kind(kind))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = sim_capture_refuse(s); /* free nodes are not modelled */
    if (rc != CUDA_SUCCESS)
        return rc;
    if (kind != SIM_EXT_POOL) {
        /* Memory from cuMemAlloc goes back to the device, not to a pool: the
         * host waits until the stream reaches the free, then frees it. */
        rc = simgpu_stream_synchronize(s);
        return rc != CUDA_SUCCESS ? rc : sim_free_unsynced(ptr);
    }
    pthread_mutex_lock(&g_sim.lock);
    e = sim_extset_find(&d->live, a);
    if (!e || e->base != a || e->kind != SIM_EXT_POOL) {
        pthread_mutex_unlock(&g_sim.lock);
        return CUDA_ERROR_INVALID_VALUE; /* freed by another thread meanwhile */
    }
    size_t size = e->size;
    struct sim_stream_ref r;
    sim_stream_lookup_locked(s, &r);
    sim_host_call_locked();
    /* Whatever still reads or writes the block when the stream reaches the
     * free is a use after free. */
    sim_hazard_note((const void *)a, size, 1, "stream-ordered free");
    uint64_t t = sim_marker_locked(&r, "cudaFreeAsync");
    sim_extset_remove(&d->live, a);
    d->pool.used -= size;
    block_insert(&d->pool, (struct sim_pool_block){a, size, t, stream_key(&r)});
    pthread_mutex_unlock(&g_sim.lock);
    return CUDA_SUCCESS;
}

/* ---- pools ------------------------------------------------------------------------ */

void *simgpu_default_pool(int dev)
{
    struct simgpu_device *d = sim_dev(dev);
    return d ? &d->pool : NULL;
}

static struct simgpu_device *pool_device(void *pool)
{
    simgpu_init();
    for (int i = 0; i < g_sim.ndev; i++)
        if (pool == &g_sim.dev[i].pool)
            return &g_sim.dev[i];
    return NULL;
}

CUresult simgpu_pool_trim(void *pool, size_t keep)
{
    struct simgpu_device *d = pool_device(pool);
    if (!d)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_sim.lock);
    release_locked(d, keep);
    pthread_mutex_unlock(&g_sim.lock);
    return CUDA_SUCCESS;
}

CUresult simgpu_pool_get_attribute(void *pool, int attr, void *value)
{
    struct simgpu_device *d = pool_device(pool);
    if (!d || !value)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&g_sim.lock);
    struct sim_pool *p = &d->pool;
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: *(int *)value = p->follow_events; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: *(int *)value = p->opportunistic; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: *(int *)value = p->internal_deps; break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *(cuuint64_t *)value = p->release_threshold; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: *(cuuint64_t *)value = p->reserved; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: *(cuuint64_t *)value = p->reserved_high; break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *(cuuint64_t *)value = p->used; break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *(cuuint64_t *)value = p->used_high; break;
    default: rc = CUDA_ERROR_INVALID_VALUE; break;
    }
    pthread_mutex_unlock(&g_sim.lock);
    return rc;
}

CUresult simgpu_pool_set_attribute(void *pool, int attr, void *value)
{
    struct simgpu_device *d = pool_device(pool);
    if (!d || !value)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&g_sim.lock);
    struct sim_pool *p = &d->pool;
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: p->follow_events = *(int *)value != 0; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: p->opportunistic = *(int *)value != 0; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: p->internal_deps = *(int *)value != 0; break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: p->release_threshold = *(cuuint64_t *)value; break;
    /* The high-water marks can only be reset, to the current value. */
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        if (*(cuuint64_t *)value != 0)
            rc = CUDA_ERROR_INVALID_VALUE;
        else
            p->reserved_high = p->reserved;
        break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        if (*(cuuint64_t *)value != 0)
            rc = CUDA_ERROR_INVALID_VALUE;
        else
            p->used_high = p->used;
        break;
    default: rc = CUDA_ERROR_INVALID_VALUE; break;
    }
    pthread_mutex_unlock(&g_sim.lock);
    return rc;
}

/* ---- driver entry points ---------------------------------------------------------- */

CUresult cuMemAllocAsync(CUdeviceptr *p, size_t bytes, CUstream s)
{
    CUresult need = sim_need_ctx_for_stream(s);
    return need != CUDA_SUCCESS ? need : simgpu_malloc_async(bytes, s, p);
}
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *p, size_t bytes, CUstream s);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *p, size_t bytes, CUstream s)
{
    return cuMemAllocAsync(p, bytes, s ? s : CU_STREAM_PER_THREAD);
}
CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
    CUresult need = sim_need_ctx_for_stream(s);
    return need != CUDA_SUCCESS ? need : simgpu_free_async(p, s);
}
CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s) { return cuMemFreeAsync(p, s ? s : CU_STREAM_PER_THREAD); }

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev)
{
    CUresult need = sim_need_init();
    if (need != CUDA_SUCCESS)
        return need;
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *pool = (CUmemoryPool)simgpu_default_pool(dev);
    return CUDA_SUCCESS;
}
CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev) { return cuDeviceGetDefaultMemPool(pool, dev); }
CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep)
{
    CUresult need = sim_need_init();
    return need != CUDA_SUCCESS ? need : simgpu_pool_trim(pool, keep);
}
CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    CUresult need = sim_need_init();
    return need != CUDA_SUCCESS ? need : simgpu_pool_get_attribute(pool, (int)attr, value);
}
CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    CUresult need = sim_need_init();
    return need != CUDA_SUCCESS ? need : simgpu_pool_set_attribute(pool, (int)attr, value);
}
