/*
 * sn_arena.c — manage mode's address arena, physical memory, host copies
 * and demand residency for one device (see sn_arena.h for the model).
 *
 * A call's residency is decided under the arena's lock in one pass (pin
 * the blocks it uses, find which are missing, choose victims by least
 * recent use, reserve the physical bytes), then carried out with no lock
 * held: a fence (an event on every stream the framework used, waited for
 * by libsn's copy stream), copies out of the victims that hold the only
 * current copy of their contents, one host wait on the copy stream, the
 * unmaps, the maps, the copies in and an event the call's stream waits
 * for. The blocks being moved are busy meanwhile; another thread that
 * needs one waits on the arena's condition variable.
 *
 * A resident block is mapped from one physical handle of its size when one
 * is at hand (a victim's or the cache of free handles'), else from large
 * handles of other sizes (SN_PIECE_MIN_GRANULES and up, at most
 * SN_PIECES), with what they lack created as one handle. Every piece is
 * one more mapping each time the block comes back, and setting access
 * costs per mapping (about 28 us, unmapping 17 us more), while creating
 * and releasing cost little per granule (sim/hostcost.c, measured on an
 * H200): a block assembled from 2 MiB pieces cost ResNet-50's per-iteration
 * allocator 44 ms of host time per iteration where one handle each costs
 * 21. A handle no load takes whole is cached, and cached handles are
 * released only when the budget needs their bytes. Freed
 * blocks keep their addresses and mappings and are handed to the next
 * allocation of their size (iterations repeat sizes), so a framework that
 * allocates every tensor anew each iteration maps nothing in steady state.
 */
#include "allocator/sn_arena.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stdio.h>
#include <unistd.h>

#include "allocator/sn_gtbm.h"
#include "allocator/sn_predict.h"
#include "allocator/sn_stage.h"
#include "common/sn_array.h"
#include "common/sn_capture.h"
#include "common/sn_call.h"
#include "common/sn_hooks.h"
#include "common/sn_kinds.h"
#include "common/sn_lock.h"
#include "common/sn_log.h"
#include "common/sn_options.h"

#define SN_ARENA_MAX_STREAMS 16
/* calls in progress at once that need no lock to end (more go on a list):
 * one bit each in a word */
#define SN_ARENA_SLOTS 64

_Static_assert(SN_ARENA_DEVICES == SN_MAX_DEVICES, "one arena per device");

/* The physical memory under a resident block: handles mapped one after
 * another from its start. One of the block's size when there was one to
 * take; else large handles of other sizes that an idle cache or the
 * blocks sent away had, with what they lack created last. */
enum { SN_PIECES = 16 };
/* The smallest handle, in granules, a block takes that does not complete
 * it (see sn_load_fits). */
#define SN_PIECE_MIN_GRANULES 32
typedef struct sn_piece {
    CUmemGenericAllocationHandle h;
    uint64_t size;
} sn_piece;
typedef struct sn_backing {
    int n;
    sn_piece pc[SN_PIECES];
} sn_backing;

typedef struct sn_block {
    uintptr_t va;
    uint64_t size;
    sn_backing bk;           /* valid while resident */
    void *host;              /* pinned host copy (size bytes), NULL if none */
    uint64_t last_use;       /* LRU stamp */
    uint64_t mark;           /* stamp of the call collecting it */
    cudaEvent_t load_ev;     /* the copy that brought it in, if one did */
    void *load_waited;       /* the stream that already waits for load_ev */
    uint64_t load_stamp;     /* when it was loaded (load_ev done after a device sync past it) */
    size_t index;            /* position in the arena's block array */
    int pins;                /* calls using it now (atomic: released without the lock) */
    unsigned call_mode;      /* how the collecting call uses it */
    unsigned call_reads_dropped : 1; /* ... it reads bytes dropped as predicted dead */
    uint64_t call_def_lo, call_def_hi; /* ... bytes it writes without reading (a part) */
    unsigned resident : 1;
    unsigned busy : 1;       /* a thread is moving it */
    unsigned dirty : 1;      /* the device holds the only current copy */
    unsigned host_valid : 1; /* host holds a current copy */
    unsigned shared : 1;     /* small allocations share it */
    unsigned library : 1;    /* cuDNN's or cuBLAS's own, of no known handle: kept resident */
    void *lib_key;           /* cuDNN's or cuBLAS's own, of this handle: resident for its calls */
    unsigned is_free : 1;    /* no live allocation: on the free list */
    unsigned leaving : 1;    /* a planned offload or drop is under way: still mapped until leave_ev */
    unsigned host_pending : 1; /* host_valid, but the copy making it so may still be running */
    unsigned plan_drop : 1;  /* leaving without a copy: the plan says its contents are dead */
    uint8_t restore;         /* loaded without its contents for a call that overwrites it all,
                              * the host copy still current: should that call fail (or never
                              * run), the contents come back from it (sn_arena_call_failed).
                              * Not a bit field: cleared without the lock */
    unsigned scratch : 1;    /* libsn's own scratch (sn_arena_scratch): contents never kept */
    unsigned search : 1;     /* ... held for an algorithm search */
    cudaEvent_t leave_ev;    /* leaving: recorded on the copy stream after its copy (or fence) */
    unsigned cls : 1;        /* shared blocks: 0 early (long-lived), 1 per iteration */
    sn_predict pred;         /* whether its contents die after its latest use */
    uint32_t nlive;          /* live allocations in it */
    uint64_t bump;           /* shared blocks: next free offset */
    struct sn_block *next_free;  /* free list of its size */
} sn_block;

struct sn_arena_alloc {
    sn_block *b;             /* first: sn_arena_alloc_block reads it */
    sn_arena *ar;
    uint64_t off, size;
};

static int sn_predicted_dead_locked(const sn_block *b);

static void sn_arena_mib(char *out, size_t cap, uint64_t bytes)
{
    snprintf(out, cap, "%.1f MiB", (double)bytes / (1024.0 * 1024.0));
}

/* Pins change without the lock (sn_arena_release): every access is atomic.
 * Whoever decides on a block under the lock reads them; a call that ends
 * meanwhile has already been forwarded, which the fence before any move
 * covers. */
static inline int sn_pins(const sn_block *b)
{
    return __atomic_load_n(&b->pins, __ATOMIC_ACQUIRE);
}

static inline void sn_pin(sn_block *b)
{
    __atomic_add_fetch(&b->pins, 1, __ATOMIC_RELAXED);
}

static inline void sn_unpin(sn_block *b)
{
    __atomic_sub_fetch(&b->pins, 1, __ATOMIC_RELEASE);
}

/* load_waited of a block a prefetch brought in: no stream waits for it
 * yet (not NULL, which names the legacy default stream) */
static char sn_nobody;
#define SN_NOBODY ((void *)&sn_nobody)
#define SN_ALIGN 256

/* Spare events of one kind, reused (creating one is a driver call). */
typedef struct sn_evpool {
    cudaEvent_t *spare;
    size_t n, cap;
    unsigned flags;           /* cudaEventCreateWithFlags' */
} sn_evpool;

typedef struct sn_hcache {
    uint64_t size;
    CUmemGenericAllocationHandle h;
} sn_hcache;

/* The blocks of one cuDNN or cuBLAS handle. */
typedef struct sn_keyed {
    void *key;
    sn_block **blocks;
    size_t n, cap;
} sn_keyed;

typedef struct sn_freelist {
    uint64_t size;
    sn_block *head;
} sn_freelist;

struct sn_arena {
    sn_lock lock;
    /* Without VMM: one contiguous region, placed GTBM-style; nothing
     * leaves the device (an address cannot be kept while its memory
     * moves, and no plan proves a range free again yet). */
    int pool;
    uintptr_t pool_base;
    sn_gtbm_pool gtbm;
    sn_cond cond;
    int dev;
    uint64_t gran, budget, total;
    CUmemAllocationProp prop;
    CUmemAccessDesc access;
    /* copies out (device to host) go on copy_stream, copies in on
     * copy_in_stream: the copy engines work both ways at once, and a
     * prefetch does not queue behind the offloads before it (a copy out of
     * a block still arriving waits for its load's event) */
    cudaStream_t copy_stream, copy_in_stream;
    /* address space: the current reservation, bump-allocated */
    uintptr_t va_cur, va_end;
    uint64_t va_chunk;
    uint64_t va_reserved;  /* address space reserved so far */
    int va_refused;        /* the driver's answer when it last refused more (0: never) */
    /* blocks */
    sn_block **blocks;
    size_t nblocks, cap_blocks;
    sn_freelist *free_lists;  /* by block size */
    size_t nfree_lists, cap_free_lists;
    sn_block *open[2];        /* shared block being filled, per class */
    uint64_t clock;           /* LRU clock */
    uint64_t synced_stamp;    /* everything used at or before it is complete */
    uint64_t phys_bytes;      /* handles held: mapped + cached */
    uint64_t resident_bytes;  /* mapped */
    uint64_t allocated;       /* bytes the framework holds (as asked) */
    uint64_t held;            /* bytes of blocks with live allocations */
    uint64_t library_bytes;
    sn_keyed *keyed;
    size_t nkeyed, cap_keyed;
    sn_hcache *hcache;
    size_t nh, cap_h;
    void *streams[SN_ARENA_MAX_STREAMS];
    uint64_t stream_stamp[SN_ARENA_MAX_STREAMS];  /* clock of its latest call */
    int nstreams, streams_overflow;
    uint64_t overflow_stamp;
    /* calls between acquire and release: their stamps, in the slots whose
     * bit is set in inflight_mask (set under the lock, cleared by
     * sn_arena_release without it); a call that finds no free slot goes
     * on the list */
    uint64_t inflight[SN_ARENA_SLOTS];
    uint64_t inflight_mask;
    sn_arena_ticket *active;
    sn_block **leaving;       /* blocks with a planned offload or drop under way */
    size_t nleaving, cap_leaving;
    sn_evpool events;         /* fences and copy completions: no timing */
    sn_evpool timing;         /* the events that measure stalls */
    cudaEvent_t pending[64][2];  /* swap-in waits not read yet: before, after */
    size_t npending;
    int waiters;
    sn_stage stage;
    /* libsn's own scratch, one block per stream (sn_arena_scratch) */
    struct {
        void *stream;
        sn_block *b;
        int search;           /* held for an algorithm search, not a run */
    } scratch[SN_ARENA_MAX_STREAMS];
    uint64_t scratch_bytes;   /* held for runs */
    sn_manage_stats st;
};

/* ---- CUDA calls of the arena's own (no lock held) ------------------------------ */

static void sn_arena_quiet(cudaError_t rc)
{
    if (rc != cudaSuccess) {
        sn_real_cudaGetLastError_fn get = SN_REAL(cudaGetLastError);
        if (get)
            get();
    }
}

/* A spare event of the pool, or a new one (no lock held). */
static cudaEvent_t sn_evpool_get(sn_arena *ar, sn_evpool *pool)
{
    cudaEvent_t e = NULL;
    sn_lock_take(&ar->lock);
    if (pool->n)
        e = pool->spare[--pool->n];
    sn_lock_give(&ar->lock);
    if (e)
        return e;
    cudaError_t rc = SN_REAL(cudaEventCreateWithFlags)(&e, pool->flags);
    sn_arena_quiet(rc);
    return rc == cudaSuccess ? e : NULL;
}

static void sn_evpool_put_locked(sn_evpool *pool, cudaEvent_t e)
{
    if (!e)
        return;
    if (sn_array_room(&pool->spare, pool->n, &pool->cap, sizeof *pool->spare, 64) != 0)
        return;  /* leaks one event: harmless */
    pool->spare[pool->n++] = e;
}

static cudaEvent_t sn_arena_event(sn_arena *ar)
{
    return sn_evpool_get(ar, &ar->events);
}

static void sn_arena_event_put_locked(sn_arena *ar, cudaEvent_t e)
{
    sn_evpool_put_locked(&ar->events, e);
}

static cudaEvent_t sn_timing_event(sn_arena *ar)
{
    return sn_evpool_get(ar, &ar->timing);
}

static void sn_timing_put_locked(sn_arena *ar, cudaEvent_t e)
{
    sn_evpool_put_locked(&ar->timing, e);
}

/* Elapsed ms between two timing events, or -1 (not complete, or no timing). */
static double sn_elapsed_ms(cudaEvent_t a, cudaEvent_t b, int wait)
{
    if (!a || !b)
        return -1;
    if (wait) {
        sn_arena_quiet(SN_REAL(cudaEventSynchronize)(b));
    }
    float ms = 0;
    cudaError_t rc = SN_REAL(cudaEventElapsedTime)(&ms, a, b);
    sn_arena_quiet(rc);
    return rc == cudaSuccess ? ms : -1;
}

void sn_arena_harvest(sn_arena *ar, int wait)
{
    cudaEvent_t take[64][2];
    sn_lock_take(&ar->lock);
    size_t n = ar->npending;
    memcpy(take, ar->pending, n * sizeof take[0]);
    ar->npending = 0;
    sn_lock_give(&ar->lock);
    if (!n)
        return;
    double ms[64];
    for (size_t i = 0; i < n; i++)
        ms[i] = sn_elapsed_ms(take[i][0], take[i][1], wait);
    sn_lock_take(&ar->lock);
    for (size_t i = 0; i < n; i++) {
        if (ms[i] >= 0) {
            ar->st.stall_in_ms += ms[i];
            sn_timing_put_locked(ar, take[i][0]);
            sn_timing_put_locked(ar, take[i][1]);
        } else if (!wait && ar->npending < 64) {
            /* not complete yet: read it next time */
            ar->pending[ar->npending][0] = take[i][0];
            ar->pending[ar->npending++][1] = take[i][1];
        } else {
            ar->st.stall_unmeasured++;
        }
    }
    sn_lock_give(&ar->lock);
}

/* ---- set-up ------------------------------------------------------------------------ */

sn_arena *sn_arena_ready[SN_ARENA_DEVICES];
static int sn_arena_state[SN_MAX_DEVICES];  /* 0 unset, 1 being set up, 2 ready, -1 unavailable */

static uint64_t sn_round_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

/* Reserves bytes of address space, or less where the driver refuses them:
 * halving, down to least. *got is what was reserved. */
static CUresult sn_reserve_down(const sn_arena *ar, uint64_t bytes, uint64_t least, CUdeviceptr *p, uint64_t *got)
{
    CUresult rc;
    for (;;) {
        rc = SN_REAL(cuMemAddressReserve)(p, bytes, ar->gran, 0, 0);
        if (rc == CUDA_SUCCESS || bytes <= least)
            break;
        bytes = bytes / 2 > least ? sn_round_up(bytes / 2, ar->gran) : least;
    }
    *got = bytes;
    return rc;
}

/* The first reservation: four times the device's memory, or less (down to
 * the device's memory) where the driver's address space is smaller. */
static int sn_arena_reserve(sn_arena *ar, uint64_t bytes, uint64_t least)
{
    CUdeviceptr p = 0;
    if (sn_reserve_down(ar, bytes, least, &p, &bytes) != CUDA_SUCCESS)
        return -1;
    ar->va_cur = (uintptr_t)p;
    ar->va_end = (uintptr_t)p + bytes;
    ar->va_reserved = bytes;
    return 0;
}

/* The reservation is used up: reserves a chunk for at least bytes more,
 * with the lock released for the driver call (the rest of the old
 * reservation is abandoned: address space is plentiful). A driver that
 * refuses the usual chunk is asked for less, down to the bytes needed; if
 * even that is refused, the arena remembers it (va_refused) so that the
 * out-of-memory error names the cause. */
static void sn_arena_reserve_more_locked(sn_arena *ar, uint64_t bytes)
{
    sn_lock_give(&ar->lock);
    CUdeviceptr p = 0;
    uint64_t need = sn_round_up(bytes, ar->gran), chunk = 0;
    CUresult rc = sn_reserve_down(ar, ar->va_chunk > need ? ar->va_chunk : need, need, &p, &chunk);
    sn_lock_take(&ar->lock);
    if (rc == CUDA_SUCCESS) {
        ar->va_cur = (uintptr_t)p;
        ar->va_end = (uintptr_t)p + chunk;
        ar->va_reserved += chunk;
        ar->va_refused = 0;
    } else {
        ar->va_refused = (int)rc;
    }
}

/* The budget in bytes: SN_BUDGET against the device's free memory now. */
static uint64_t sn_budget_of(int dev, uint64_t fr, uint64_t total)
{
    const sn_size_opt *b = &sn_opt.budget;
    uint64_t budget = fr;
    if (b->kind == SN_SIZE_BYTES)
        budget = b->bytes;
    else if (b->kind == SN_SIZE_PERCENT)
        budget = (uint64_t)((double)total * b->percent / 100.0);
    if (budget > fr) {
        sn_warn("device %d: SN_BUDGET (%llu bytes) is more than the device has free (%llu); using %llu",
                dev, (unsigned long long)budget, (unsigned long long)fr, (unsigned long long)fr);
        budget = fr;
    }
    return budget;
}

/* A device without virtual memory management: the budget is taken from
 * the device as one contiguous region at once, and allocations are placed
 * in it GTBM-style, what lives from before the first iteration from the
 * high end and what is allocated during iterations from the low end, so
 * that per-iteration allocations leave no holes between long-lived ones. */
static sn_arena *sn_arena_create_pool(int dev)
{
    size_t fr = 0, total = 0;
    cudaError_t rc = SN_REAL(cudaMemGetInfo)(&fr, &total);
    sn_arena_quiet(rc);
    if (rc != cudaSuccess)
        return NULL;
    sn_arena *ar = calloc(1, sizeof *ar);
    if (!ar)
        return NULL;
    ar->lock = (sn_lock)SN_LOCK_INITIALIZER(SN_RANK_ARENA);
    ar->dev = dev;
    ar->pool = 1;
    ar->gran = SN_GTBM_ALIGN;
    /* a little under what is free: the runtime and libraries need some
     * memory of their own outside the pool */
    uint64_t budget = sn_budget_of(dev, fr > (64u << 20) ? fr - (32u << 20) : fr / 2, total);
    budget = budget / (2u << 20) * (2u << 20);
    void *base = NULL;
    rc = budget ? SN_REAL(cudaMalloc)(&base, budget) : cudaErrorMemoryAllocation;
    sn_arena_quiet(rc);
    if (rc != cudaSuccess || sn_gtbm_init(&ar->gtbm, budget, SN_GTBM_POLICY_GTBM) != 0) {
        sn_warn("device %d: no virtual memory management, and the %llu-byte pool libsn would place "
                "allocations in cannot be had; observing only", dev, (unsigned long long)budget);
        if (rc == cudaSuccess)
            SN_REAL(cudaFree)(base);
        free(ar);
        return NULL;
    }
    ar->pool_base = (uintptr_t)base;
    ar->budget = budget;
    ar->total = total;
    ar->st.active = 1;
    ar->st.pool = 1;
    ar->st.backing = "contiguous pool (the device has no VMM: nothing leaves it; GTBM placement)";
    ar->st.budget = budget;
    /* the pool is taken in 2 MiB steps: budgets are reported in them */
    ar->st.granularity = 2u << 20;
    sn_info("device %d: no virtual memory management: manage mode places allocations in one %llu-byte "
            "pool and cannot move them off the device", dev, (unsigned long long)budget);
    return ar;
}

static sn_arena *sn_arena_create(int dev)
{
    /* libsn's copies, events and streams are the runtime's: a program that
     * reaches the device through the driver alone (or a static runtime,
     * or cuBLAS alone) has not loaded it, so libsn does */
    if (!SN_REAL(cudaMemGetInfo) || !SN_REAL(cudaMemcpyAsync) || !SN_REAL(cudaEventRecord)) {
        int n = sn_resolve_load(SN_LIB_CUDART);
        sn_debug("device %d: the program loaded no CUDA runtime; libsn loaded it for its own work (%d functions)",
                 dev, n);
    }
    sn_real_cuDeviceGetAttribute_fn attr = SN_REAL(cuDeviceGetAttribute);
    sn_real_cuMemGetAllocationGranularity_fn granf = SN_REAL(cuMemGetAllocationGranularity);
    sn_real_cudaMemGetInfo_fn info = SN_REAL(cudaMemGetInfo);
    if (!attr || !granf || !info || !SN_REAL(cuMemCreate) || !SN_REAL(cuMemMap) ||
        !SN_REAL(cuMemSetAccess) || !SN_REAL(cuMemUnmap) || !SN_REAL(cuMemAddressReserve)) {
        sn_warn("device %d: manage mode needs the driver's virtual memory functions, which this "
                "driver lacks; observing only", dev);
        return NULL;
    }
    if (SN_REAL(cuInit))
        SN_REAL(cuInit)(0);
    int vmm = 0;
    CUresult arc = attr(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev);
    /* a call naming a device that does not exist (cudaMemcpyPeer to device
     * 7 on a 2-GPU machine) fails on its own; it gets no arena */
    if (arc == CUDA_ERROR_INVALID_DEVICE)
        return NULL;
    if (arc != CUDA_SUCCESS)
        vmm = 0;
    if (!vmm)
        return sn_arena_create_pool(dev);
    sn_arena *ar = calloc(1, sizeof *ar);
    if (!ar)
        return NULL;
    ar->lock = (sn_lock)SN_LOCK_INITIALIZER(SN_RANK_ARENA);
    ar->dev = dev;
    ar->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    ar->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    ar->prop.location.id = dev;
    ar->access.location = ar->prop.location;
    ar->access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    size_t g = 0;
    if (granf(&g, &ar->prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS || !g) {
        sn_warn("device %d: cannot read the VMM granularity; observing only", dev);
        free(ar);
        return NULL;
    }
    ar->gran = g;
    size_t fr = 0, total = 0;
    cudaError_t rc = info(&fr, &total);
    sn_arena_quiet(rc);
    if (rc != cudaSuccess) {
        sn_warn("device %d: cannot read the device's memory; observing only", dev);
        free(ar);
        return NULL;
    }
    uint64_t budget = sn_budget_of(dev, fr, total);
    ar->budget = budget / g * g;
    ar->total = total;
    ar->va_chunk = sn_round_up((uint64_t)total * 4 > (8ULL << 30) ? (uint64_t)total * 4 : (8ULL << 30), g);
    if (sn_arena_reserve(ar, ar->va_chunk, sn_round_up(total, g)) != 0) {
        sn_warn("device %d: cannot reserve %llu bytes of address space; observing only", dev,
                (unsigned long long)ar->va_chunk);
        free(ar);
        return NULL;
    }
    rc = SN_REAL(cudaStreamCreateWithFlags)(&ar->copy_stream, cudaStreamNonBlocking);
    if (rc == cudaSuccess) {
        rc = SN_REAL(cudaStreamCreateWithFlags)(&ar->copy_in_stream, cudaStreamNonBlocking);
        if (rc != cudaSuccess)
            SN_REAL(cudaStreamDestroy)(ar->copy_stream);
    }
    sn_arena_quiet(rc);
    if (rc != cudaSuccess) {
        sn_warn("device %d: cannot create libsn's copy streams; observing only", dev);
        free(ar);
        return NULL;
    }
    ar->events.flags = cudaEventDisableTiming;
    ar->timing.flags = cudaEventDefault;
    sn_stage_init(&ar->stage);
    ar->st.active = 1;
    ar->st.backing = "VMM arena";
    ar->st.budget = ar->budget;
    ar->st.granularity = g;
    ar->st.host_limit = ar->stage.limit;
    ar->synced_stamp = 0;
    ar->clock = 1;
    sn_info("device %d: manage mode, budget %llu bytes, granule %llu bytes, host limit %llu bytes", dev,
            (unsigned long long)ar->budget, (unsigned long long)g, (unsigned long long)ar->stage.limit);
    return ar;
}

sn_arena *sn_arena_of_slow(int dev)
{
    if (dev < 0 || dev >= SN_MAX_DEVICES)
        return NULL;
    int s = __atomic_load_n(&sn_arena_state[dev], __ATOMIC_ACQUIRE);
    if (s == 2)
        return sn_arena_ready[dev];
    if (s == -1)
        return NULL;
    /* a real call made while setting up must not wait for the set-up */
    static __thread int creating;
    if (creating)
        return NULL;
    int expect = 0;
    if (__atomic_compare_exchange_n(&sn_arena_state[dev], &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        creating = 1;
        sn_arena *ar = sn_arena_create(dev);
        creating = 0;
        __atomic_store_n(&sn_arena_ready[dev], ar, __ATOMIC_RELEASE);
        __atomic_store_n(&sn_arena_state[dev], ar ? 2 : -1, __ATOMIC_RELEASE);
        return ar;
    }
    while ((s = __atomic_load_n(&sn_arena_state[dev], __ATOMIC_ACQUIRE)) == 1)
        sched_yield();
    return s == 2 ? __atomic_load_n(&sn_arena_ready[dev], __ATOMIC_ACQUIRE) : NULL;
}

/* ---- blocks --------------------------------------------------------------------------- */

static sn_freelist *sn_freelist_of_locked(sn_arena *ar, uint64_t size, int create)
{
    for (size_t i = 0; i < ar->nfree_lists; i++)
        if (ar->free_lists[i].size == size)
            return &ar->free_lists[i];
    if (!create)
        return NULL;
    if (sn_array_room(&ar->free_lists, ar->nfree_lists, &ar->cap_free_lists, sizeof *ar->free_lists, 16) != 0)
        return NULL;
    sn_freelist *f = &ar->free_lists[ar->nfree_lists++];
    f->size = size;
    f->head = NULL;
    return f;
}

/* A free block of exactly size bytes that nobody pins or moves, resident
 * ones first (they need no mapping). */
static sn_block *sn_block_reuse_locked(sn_arena *ar, uint64_t size)
{
    sn_freelist *f = sn_freelist_of_locked(ar, size, 0);
    if (!f)
        return NULL;
    sn_block **best = NULL;
    for (sn_block **pp = &f->head; *pp; pp = &(*pp)->next_free) {
        sn_block *b = *pp;
        if (b->busy || sn_pins(b))
            continue;
        if (!best || (b->resident && !(*best)->resident))
            best = pp;
        if (b->resident)
            break;
    }
    if (!best)
        return NULL;
    sn_block *b = *best;
    *best = b->next_free;
    b->next_free = NULL;
    b->is_free = 0;
    /* a new allocation's contents are undefined: nothing to keep, and
     * nothing learned of the old one applies */
    b->dirty = 0;
    b->host_valid = 0;
    sn_predict_reset(&b->pred);
    return b;
}

static void sn_block_to_free_locked(sn_arena *ar, sn_block *b)
{
    sn_freelist *f = sn_freelist_of_locked(ar, b->size, 1);
    b->is_free = 1;
    b->nlive = 0;
    b->bump = 0;
    b->dirty = 0;
    b->host_valid = 0;
    /* contents of the dead are not dropped "as predicted": nobody reads them */
    b->plan_drop = 0;
    /* a planned copy out may still be writing the host copy: it stays the
     * block's, for its next copy out */
    if (b->host && !b->host_pending) {
        sn_stage_free_locked(&ar->stage, b->host, b->size);
        b->host = NULL;
    }
    if (!f)
        return;  /* out of memory: the block stays unreachable, its bytes accounted */
    b->next_free = f->head;
    f->head = b;
}

/* A new block of size bytes at fresh addresses; NULL when the current
 * reservation is used up (the caller reserves more with no lock held). */
static sn_block *sn_block_new_locked(sn_arena *ar, uint64_t size)
{
    if (ar->va_end - ar->va_cur < size)
        return NULL;
    if (sn_array_room(&ar->blocks, ar->nblocks, &ar->cap_blocks, sizeof *ar->blocks, 256) != 0)
        return NULL;
    sn_block *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->va = ar->va_cur;
    b->size = size;
    sn_predict_reset(&b->pred);
    ar->va_cur += size;
    b->index = ar->nblocks;
    ar->blocks[ar->nblocks++] = b;
    ar->st.blocks++;
    return b;
}

/* ---- library memory by handle ----------------------------------------------------- */

static sn_keyed *sn_keyed_of_locked(sn_arena *ar, void *key, int create)
{
    for (size_t i = 0; i < ar->nkeyed; i++)
        if (ar->keyed[i].key == key)
            return &ar->keyed[i];
    if (!create)
        return NULL;
    if (sn_array_room(&ar->keyed, ar->nkeyed, &ar->cap_keyed, sizeof *ar->keyed, 8) != 0)
        return NULL;
    sn_keyed *k = &ar->keyed[ar->nkeyed++];
    memset(k, 0, sizeof *k);
    k->key = key;
    return k;
}

/* Files b under key; -1 (out of memory) leaves it unkeyed: the caller
 * keeps it resident for good instead. */
static int sn_key_block_locked(sn_arena *ar, sn_block *b, void *key)
{
    sn_keyed *k = sn_keyed_of_locked(ar, key, 1);
    if (!k)
        return -1;
    if (sn_array_room(&k->blocks, k->n, &k->cap, sizeof *k->blocks, 4) != 0)
        return -1;
    k->blocks[k->n++] = b;
    b->lib_key = key;
    return 0;
}

static void sn_unkey_block_locked(sn_arena *ar, sn_block *b)
{
    sn_keyed *k = sn_keyed_of_locked(ar, b->lib_key, 0);
    b->lib_key = NULL;
    if (!k)
        return;
    for (size_t i = 0; i < k->n; i++)
        if (k->blocks[i] == b) {
            k->blocks[i] = k->blocks[--k->n];
            break;
        }
    if (!k->n) {
        free(k->blocks);
        *k = ar->keyed[--ar->nkeyed];
    }
}

/* ---- residency ---------------------------------------------------------------------- */

typedef struct sn_move {
    sn_block *b;
    sn_backing bk;   /* loads: the handles to map (what they lack is created: have < size) */
    uint64_t have;   /* loads: bytes bk covers */
    unsigned from_victim; /* loads: bit i: bk.pc[i] is a victim's (else the cache's) */
    unsigned given;  /* victims: bit i: its piece i goes to a load (else it is released) */
    int copy;        /* victims: copy out first; loads: copy in */
    int fresh;       /* loads: contents dead or undefined: nothing copied in */
    cudaEvent_t ev;  /* loads: recorded after its copy in (the block's own event) */
    int left;        /* victims: already leaving by the plan, its copy out (or drop) queued after
                      * its last use: only its own event is waited for */
    int restore;     /* loads: fresh for an overwrite, the host copy current (sn_block.restore) */
} sn_move;

/* Handles the cache of free handles could not file (its array would not
 * grow), to be released once the arena's lock is let go: no CUDA call
 * under a libsn lock. Their bytes stay counted until the release has
 * returned, so that another thread's cuMemCreate meanwhile never meets a
 * device short of memory the account calls free. */
typedef struct sn_spill {
    CUmemGenericAllocationHandle *h;
    size_t n, cap;
    uint64_t bytes;
} sn_spill;

typedef struct sn_moves {
    sn_move *victims, *loads;
    size_t nvictims, nloads, cap_victims, cap_loads;
    CUmemGenericAllocationHandle *release;
    size_t nrelease, cap_release;
    sn_spill spill;              /* handles given back to no cache (sn_pieces_to_cache_locked) */
    int fence;                   /* in-flight work may touch a victim */
    int drain;                   /* a victim's own copy out may still be running */
    int prefetch;                /* loads for the plan: no consumer waits now */
    uint64_t created, created_bytes; /* physical handles made */
    void *streams[SN_ARENA_MAX_STREAMS];
    int nstreams, overflow;
} sn_moves;

/* One more element at the end of a plan's array (counted in *n). */
static int sn_push(void *arrp, size_t *n, size_t *cap, size_t elem)
{
    if (sn_array_room(arrp, *n, cap, elem, 16) != 0)
        return -1;
    (*n)++;
    return 0;
}

static void sn_moves_free(sn_moves *p)
{
    free(p->victims);
    free(p->loads);
    free(p->release);
    free(p->spill.h);
}

/* Adds piece pc to a load's handles. */
static void sn_load_add(sn_move *m, sn_piece pc, int from_victim)
{
    if (from_victim)
        m->from_victim |= 1u << m->bk.n;
    m->bk.pc[m->bk.n++] = pc;
    m->have += pc.size;
}

/* Whether a load can take a piece of size bytes: one that completes it,
 * or a large one, with a slot left for what must be created. Each piece is
 * one more mapping every time the block comes back (about 47 us of map,
 * access and unmap), while making the bytes anew in the block's own handle
 * costs under 1 us per granule (sim/hostcost.c): a small piece is worth
 * more released than mapped. */
static int sn_load_fits(const sn_arena *ar, const sn_move *m, uint64_t size)
{
    uint64_t lack = m->b->size - m->have;
    if (size > lack)
        return 0;
    if (size == lack)
        return m->bk.n < SN_PIECES;
    return size >= SN_PIECE_MIN_GRANULES * ar->gran && m->bk.n < SN_PIECES - 1;
}

/* Takes cached handles for what a load lacks: one of exactly that size,
 * else the largest that fit, each in turn. Returns the bytes it still
 * lacks (to be created). */
static uint64_t sn_load_from_cache_locked(sn_arena *ar, sn_move *m)
{
    while (m->have < m->b->size) {
        uint64_t lack = m->b->size - m->have;
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < ar->nh; i++) {
            uint64_t sz = ar->hcache[i].size;
            if (!sn_load_fits(ar, m, sz))
                continue;
            if (sz == lack) {
                best = i;
                break;
            }
            if (best == SIZE_MAX || sz > ar->hcache[best].size)
                best = i;
        }
        if (best == SIZE_MAX)
            break;
        sn_load_add(m, (sn_piece){ar->hcache[best].h, ar->hcache[best].size}, 0);
        ar->hcache[best] = ar->hcache[--ar->nh];
    }
    return m->b->size - m->have;
}

static int sn_hcache_put_locked(sn_arena *ar, uint64_t size, CUmemGenericAllocationHandle h)
{
    if (sn_array_room(&ar->hcache, ar->nh, &ar->cap_h, sizeof *ar->hcache, 64) != 0)
        return -1;
    ar->hcache[ar->nh++] = (sn_hcache){size, h};
    return 0;
}

static inline void sn_note_stream_locked(sn_arena *ar, void *stream)
{
    for (int i = 0; i < ar->nstreams; i++)
        if (ar->streams[i] == stream) {
            ar->stream_stamp[i] = ar->clock;
            return;
        }
    /* another thread's per-thread default stream cannot be named from
     * here: such a fence waits for the whole device */
    if (stream == cudaStreamPerThread || ar->nstreams == SN_ARENA_MAX_STREAMS) {
        ar->streams_overflow = 1;
        ar->overflow_stamp = ar->clock;
        return;
    }
    ar->stream_stamp[ar->nstreams] = ar->clock;
    ar->streams[ar->nstreams++] = stream;
}

void sn_arena_note_stream(sn_arena *ar, void *stream)
{
    sn_lock_take(&ar->lock);
    ar->clock++;
    sn_note_stream_locked(ar, stream);
    sn_lock_give(&ar->lock);
}

void sn_arena_forget_stream(sn_arena *ar, void *stream)
{
    sn_lock_take(&ar->lock);
    for (int i = 0; i < ar->nstreams; i++)
        if (ar->streams[i] == stream) {
            if (ar->stream_stamp[i] > ar->synced_stamp) {
                ar->streams_overflow = 1;
                if (ar->stream_stamp[i] > ar->overflow_stamp)
                    ar->overflow_stamp = ar->stream_stamp[i];
            }
            ar->streams[i] = ar->streams[ar->nstreams - 1];
            ar->stream_stamp[i] = ar->stream_stamp[ar->nstreams - 1];
            ar->nstreams--;
            break;
        }
    sn_lock_give(&ar->lock);
}

/* A host synchronisation with the whole device is starting: what it covers
 * is every call forwarded before now, so not the calls still between
 * acquire and release (they are forwarded later). Returns the clock it
 * covers. */
static uint64_t sn_sync_begin_locked(sn_arena *ar)
{
    uint64_t covered = ar->clock;
    /* a slot cleared meanwhile is a call already forwarded: counting it
     * only makes the synchronisation cover less */
    for (uint64_t m = __atomic_load_n(&ar->inflight_mask, __ATOMIC_ACQUIRE); m; m &= m - 1) {
        uint64_t stamp = ar->inflight[__builtin_ctzll(m)];
        if (stamp <= covered)
            covered = stamp - 1;
    }
    for (sn_arena_ticket *t = ar->active; t; t = t->next)
        if (t->stamp <= covered)
            covered = t->stamp - 1;
    return covered;
}

/* The synchronisation that began at `covered` has returned: calls up to
 * it are complete; streams with no later call need no fence. */
static void sn_synced_locked(sn_arena *ar, uint64_t covered)
{
    if (covered <= ar->synced_stamp)
        return;
    ar->synced_stamp = covered;
    int n = 0;
    for (int i = 0; i < ar->nstreams; i++)
        if (ar->stream_stamp[i] > covered) {
            ar->streams[n] = ar->streams[i];
            ar->stream_stamp[n++] = ar->stream_stamp[i];
        }
    ar->nstreams = n;
    if (ar->streams_overflow && ar->overflow_stamp <= covered)
        ar->streams_overflow = 0;
}

/* The call is in progress from now: its stamp goes in a free slot (only
 * threads holding the lock fill slots; sn_arena_release empties its own
 * without it), or on the list when every slot is taken. */
static inline void sn_ticket_link_locked(sn_arena *ar, sn_arena_ticket *t)
{
    t->stamp = ar->clock;
    uint64_t used = __atomic_load_n(&ar->inflight_mask, __ATOMIC_RELAXED);
    if (__builtin_expect(~used != 0, 1)) {
        int i = __builtin_ctzll(~used);
        ar->inflight[i] = t->stamp;
        __atomic_or_fetch(&ar->inflight_mask, 1ULL << i, __ATOMIC_RELEASE);
        t->slot = i;
        return;
    }
    t->slot = -1;
    t->prev = NULL;
    t->next = ar->active;
    if (ar->active)
        ar->active->prev = t;
    ar->active = t;
    t->linked = 1;
}

static void sn_ticket_unlink_locked(sn_arena *ar, sn_arena_ticket *t)
{
    if (t->slot >= 0) {
        __atomic_and_fetch(&ar->inflight_mask, ~(1ULL << t->slot), __ATOMIC_RELEASE);
        t->slot = -1;
    }
    if (!t->linked)
        return;
    if (t->prev)
        t->prev->next = t->next;
    else
        ar->active = t->next;
    if (t->next)
        t->next->prev = t->prev;
    t->linked = 0;
}

uint64_t sn_arena_sync_begin(sn_arena *ar)
{
    sn_lock_take(&ar->lock);
    uint64_t covered = sn_sync_begin_locked(ar);
    sn_lock_give(&ar->lock);
    return covered;
}

void sn_arena_device_synced(sn_arena *ar, uint64_t covered)
{
    sn_lock_take(&ar->lock);
    sn_synced_locked(ar, covered);
    sn_lock_give(&ar->lock);
}

/* Chooses what leaves so that want more bytes of handles fit the budget:
 * cached handles first, then free blocks still mapped (their contents are
 * dead), then the least recently used unpinned blocks. Returns 0 when
 * enough was found. */
static uint64_t victim_use(const sn_block *b)
{
    return b ? b->last_use : 0;
}

static int sn_victim_rank(const sn_block *b)
{
    return b->is_free ? 0 : b->leaving ? 1 : 2;
}

static void sn_leaving_remove_locked(sn_arena *ar, sn_block *b)
{
    for (size_t i = 0; i < ar->nleaving; i++)
        if (ar->leaving[i] == b) {
            ar->leaving[i] = ar->leaving[ar->nleaving - 1];
            /* atomic: sn_arena_reap peeks at it without the lock */
            __atomic_store_n(&ar->nleaving, ar->nleaving - 1, __ATOMIC_RELAXED);
            break;
        }
    if (b->leave_ev)
        sn_arena_event_put_locked(ar, b->leave_ev);
    b->leave_ev = NULL;
    b->leaving = 0;
    b->plan_drop = 0;
}

/* A call uses a block the plan was sending away: it stays. Its copy out
 * may still be reading it, so the call's stream (and any other) waits for
 * that copy as for a copy in; a drop's contents are still there, the only
 * copy of them. */
static void sn_cancel_leave_locked(sn_arena *ar, sn_block *b)
{
    cudaEvent_t ev = b->leave_ev;
    int dropped = b->plan_drop;
    b->leave_ev = NULL;
    sn_leaving_remove_locked(ar, b);
    if (dropped) {
        b->dirty = 1;
        b->host_valid = 0;
    }
    if (ev) {
        if (b->load_ev)
            sn_arena_event_put_locked(ar, b->load_ev);
        b->load_ev = ev;
        b->load_stamp = ar->clock;
        b->load_waited = SN_NOBODY;
    }
    ar->st.plan_cancelled++;
}

static int sn_make_room_locked(sn_arena *ar, sn_moves *p, uint64_t *wantp)
{
    uint64_t want = *wantp;
    uint64_t avail = ar->budget > ar->phys_bytes ? ar->budget - ar->phys_bytes : 0;
    /* handles of victims that go straight to a load need no room */
    while (avail < want && ar->nh) {
        sn_hcache c = ar->hcache[--ar->nh];
        if (sn_push(&p->release, &p->nrelease, &p->cap_release, sizeof *p->release) != 0) {
            ar->nh++;
            break;
        }
        p->release[p->nrelease - 1] = c.h;
        ar->phys_bytes -= c.size;
        avail += c.size;
    }
    while (avail < want) {
        sn_block *victim = NULL;
        for (size_t i = 0; i < ar->nblocks; i++) {
            sn_block *b = ar->blocks[i];
            if (!b->resident || b->busy || b->library || b->mark == ar->clock || sn_pins(b))
                continue;
            /* free blocks first, then least recently used (the test switch
             * early-swap-out takes the most recently used: the one whose
             * last use may still be running) */
            int older = sn_opt.debug_break == SN_BREAK_EARLY_SWAP_OUT ? b->last_use > victim_use(victim)
                                                                       : b->last_use < victim_use(victim);
            /* free blocks, then blocks the plan is already sending away */
            if (!victim || sn_victim_rank(b) < sn_victim_rank(victim) ||
                (sn_victim_rank(b) == sn_victim_rank(victim) && older))
                victim = b;
        }
        if (!victim)
            return -1;
        int copy = victim->dirty && !victim->is_free;
        int predicted = copy && sn_predicted_dead_locked(victim);
        if (predicted)
            copy = 0;
        if (copy && !victim->host && sn_stage_reserve_locked(&ar->stage, victim->size) != 0) {
            /* no host room for its contents: it stays; try another */
            victim->mark = ar->clock;
            continue;
        }
        if (sn_push(&p->victims, &p->nvictims, &p->cap_victims, sizeof *p->victims) != 0)
            return -1;
        sn_move *m = &p->victims[p->nvictims - 1];
        *m = (sn_move){.b = victim, .bk = victim->bk, .copy = copy, .fresh = predicted};
        victim->busy = 1;
        if (victim->leaving && !copy && !victim->is_free) {
            /* sent away by the plan: a use since would have cancelled it,
             * so its copy out (or its drop) was queued on the copy stream
             * after its last use and after any load of it
             * (sn_arena_offload); its own event covers both, and waiting
             * for it alone leaves the compute stream and the later copies
             * running, where a fence and a drain would wait for them all */
            m->left = 1;
        } else {
            if (victim->last_use > ar->synced_stamp || victim->load_stamp > ar->synced_stamp)
                p->fence = 1;
            if (victim->leaving || victim->host_pending)
                p->drain = 1;
        }
        /* its handles go to loads that lack as much (the same size first);
         * the others are released for their bytes */
        for (int k = 0; k < victim->bk.n; k++) {
            sn_piece pc = victim->bk.pc[k];
            size_t to = SIZE_MAX;
            for (size_t j = 0; j < p->nloads; j++) {
                sn_move *l = &p->loads[j];
                if (!sn_load_fits(ar, l, pc.size))
                    continue;
                if (to == SIZE_MAX || l->b->size - l->have == pc.size)
                    to = j;
                if (l->b->size - l->have == pc.size)
                    break;
            }
            if (to != SIZE_MAX) {
                sn_load_add(&p->loads[to], pc, 1);
                m->given |= 1u << k;
                want -= pc.size;
            } else {
                ar->phys_bytes -= pc.size;
                avail += pc.size;
            }
        }
        *wantp = want;
        ar->resident_bytes -= victim->size;
    }
    return 0;
}

/* Unpins a call's blocks (no lock needed). Nothing waits on the condition
 * variable for a pin to go: waits are for busy blocks, and whoever clears
 * busy broadcasts. */
static void sn_unpin_all(void *const *blocks, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sn_unpin(blocks[i]);
}

/* Handles to give back to the driver once the arena's lock is let go. */
static void sn_release_handles(const CUmemGenericAllocationHandle *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (__builtin_expect(sn_opt.debug_break == SN_BREAK_SLOW_RELEASE, 0))
            usleep(5000);
        SN_REAL(cuMemRelease)(h[i]);
    }
}

/* Unmaps the first n pieces of a backing mapped from va, one mapping each. */
static void sn_backing_unmap(const sn_backing *bk, uintptr_t va, int n)
{
    uint64_t off = 0;
    for (int k = 0; k < n; k++) {
        SN_REAL(cuMemUnmap)((CUdeviceptr)(va + off), bk->pc[k].size);
        off += bk->pc[k].size;
    }
}

/* Unmaps the pieces mapped so far (the first `mapped`) and releases them
 * all: a load that cannot be mapped gives its memory up (its bytes leave
 * the account in sn_loads_done_locked). */
static void sn_backing_release(sn_backing *bk, uintptr_t va, int mapped)
{
    sn_backing_unmap(bk, va, mapped);
    for (int k = 0; k < bk->n; k++) {
        SN_REAL(cuMemRelease)(bk->pc[k].h);
    }
    bk->n = 0;
}

/* Maps a block's pieces one after another from va and opens the whole
 * range to the device. On failure, everything is given up. */
static int sn_backing_map(sn_arena *ar, uintptr_t va, sn_backing *bk)
{
    uint64_t off = 0;
    for (int k = 0; k < bk->n; k++) {
        if (SN_REAL(cuMemMap)((CUdeviceptr)(va + off), bk->pc[k].size, 0, bk->pc[k].h, 0) != CUDA_SUCCESS) {
            sn_backing_release(bk, va, k);
            return -1;
        }
        off += bk->pc[k].size;
    }
    if (SN_REAL(cuMemSetAccess)((CUdeviceptr)va, off, &ar->access, 1) != CUDA_SUCCESS) {
        sn_backing_release(bk, va, bk->n);
        return -1;
    }
    return 0;
}

/* Before b leaves, copied out or dropped: a load of b still arriving on
 * the copy-in stream finishes first on the copy stream (the copy out reads
 * its device bytes and overwrites its host buffer; and the unmap that
 * follows the copy stream must not pull the pages from under it: the
 * driver's cuMemUnmap does not wait for work in flight, and a block the
 * plan prefetched can be dropped again before any call waited for it).
 * b is busy: its fields are the caller's to read. */
static void sn_leave_after_load(sn_arena *ar, sn_block *b)
{
    if (b->load_ev) {
        sn_arena_quiet(SN_REAL(cudaStreamWaitEvent)(ar->copy_stream, b->load_ev, 0));
    }
}

/* One plan being carried out with no lock held (sn_moves_run), phase by
 * phase: what each phase leaves for the next. */
typedef struct sn_run {
    sn_arena *ar;
    sn_moves *p;
    void *stream;            /* the consumer's (ignored for a prefetch) */
    int copies;              /* a victim is copied out */
    int must_wait;           /* the host waits for the whole copy stream */
    uint64_t own_waits;      /* ... else for these planned victims' own events */
    cudaEvent_t out0, out1;  /* timing of the copies out */
    int failed;              /* a load could not be backed or mapped */
    int copies_in, no_event; /* loads copied in; one of them got no event */
    cudaEvent_t last;        /* the last copy in's event */
} sn_run;

/* Victims, phase 1: the copy stream waits for the work in flight that may
 * touch a victim: an event on every stream the framework used, or the
 * whole device when they cannot all be named. */
/* A fence on a stream that captures into a graph must not record there
 * (the event would be a node of the program's graph, or break the
 * capture): what can be in flight on it is what ran before the capture
 * began, and the event libsn recorded just before that covers it. Returns
 * 1 when stream captures (and was dealt with). A stream that joined a
 * capture without beginning it has no such event: its work from before
 * is not waited for (docs/decisions.md). */
static int sn_stream_capturing(void *stream, void **ev)
{
    *ev = NULL;
    if (sn_capture_event(stream, ev))
        return 1;
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaError_t rc = SN_REAL(cudaStreamIsCapturing) ? SN_REAL(cudaStreamIsCapturing)((cudaStream_t)stream, &st)
                                                     : cudaSuccess;
    sn_arena_quiet(rc);
    return rc != cudaSuccess || st != cudaStreamCaptureStatusNone;
}

static int sn_fence_capturing(sn_arena *ar, void *stream)
{
    void *ev;
    if (!sn_stream_capturing(stream, &ev))
        return 0;
    if (ev && SN_REAL(cudaStreamWaitEvent)(ar->copy_stream, (cudaEvent_t)ev, 0) != cudaSuccess)
        sn_arena_quiet(cudaErrorUnknown);
    return 1;
}

static void sn_victims_fence(sn_run *r)
{
    sn_arena *ar = r->ar;
    sn_moves *p = r->p;
    r->copies = 0;
    for (size_t i = 0; i < p->nvictims; i++)
        r->copies |= p->victims[i].copy;
    /* (a victim whose load may still be arriving has p->fence set,
     * so the host waits for the copy stream, which waits for the
     * load: sn_leave_after_load below) */
    r->must_wait = r->copies || p->fence || p->drain;
    /* test switch: the copy out does not wait for the work before it */
    if (sn_opt.debug_break == SN_BREAK_EARLY_SWAP_OUT && r->copies)
        p->fence = 0;
    if (p->fence && p->overflow) {
        sn_arena_quiet(SN_REAL(cudaDeviceSynchronize)());
    } else if (p->fence) {
        for (int i = 0; i < p->nstreams; i++) {
            if (sn_capture_active() && sn_fence_capturing(ar, p->streams[i]))
                continue;
            cudaEvent_t e = sn_arena_event(ar);
            if (!e || SN_REAL(cudaEventRecord)(e, (cudaStream_t)p->streams[i]) != cudaSuccess ||
                SN_REAL(cudaStreamWaitEvent)(ar->copy_stream, e, 0) != cudaSuccess) {
                sn_arena_quiet(cudaErrorUnknown);
                sn_arena_quiet(SN_REAL(cudaDeviceSynchronize)());
            }
            sn_lock_take(&ar->lock);
            sn_arena_event_put_locked(ar, e);
            sn_lock_give(&ar->lock);
        }
    }
    for (size_t i = 0; i < p->nvictims; i++) {
        sn_debug("evict %p+%llu copy %d fence %d streams %d overflow %d", (void *)p->victims[i].b->va,
                 (unsigned long long)p->victims[i].b->size, p->victims[i].copy, p->fence, p->nstreams, p->overflow);
        sn_leave_after_load(ar, p->victims[i].b);
    }
}

/* Pinned host memory for a victim's copy (reserved when it was chosen),
 * from the slabs or a new one; NULL gives the reservation back. */
static void *sn_victim_host(sn_arena *ar, sn_block *b)
{
    sn_lock_take(&ar->lock);
    void *h = sn_stage_take_locked(&ar->stage, b->size);
    sn_lock_give(&ar->lock);
    if (!h)
        h = sn_stage_grow(&ar->stage, &ar->lock, b->size);
    if (!h) {
        sn_error("device %d: no pinned host memory for a %llu-byte block; its contents "
                 "cannot be saved", ar->dev, (unsigned long long)b->size);
        sn_lock_take(&ar->lock);
        sn_stage_unreserve_locked(&ar->stage, b->size);
        sn_lock_give(&ar->lock);
    }
    return h;
}

/* Victims, phase 2: the copies out on the copy stream, between two timing
 * events. */
static void sn_victims_copy_out(sn_run *r)
{
    sn_arena *ar = r->ar;
    sn_moves *p = r->p;
    if (r->copies && (r->out0 = sn_timing_event(ar)) &&
        SN_REAL(cudaEventRecord)(r->out0, ar->copy_stream) != cudaSuccess) {
        sn_arena_quiet(cudaErrorUnknown);
        r->out0 = NULL;
    }
    for (size_t i = 0; i < p->nvictims; i++) {
        sn_move *m = &p->victims[i];
        if (!m->copy)
            continue;
        if (!m->b->host)
            m->b->host = sn_victim_host(ar, m->b);
        if (!m->b->host) {
            m->copy = 0;
            continue;
        }
        sn_arena_quiet(SN_REAL(cudaMemcpyAsync)(m->b->host, (void *)m->b->va, m->b->size,
                                                cudaMemcpyDeviceToHost, ar->copy_stream));
    }
    if (r->out0 && (r->out1 = sn_timing_event(ar)) &&
        SN_REAL(cudaEventRecord)(r->out1, ar->copy_stream) != cudaSuccess) {
        sn_arena_quiet(cudaErrorUnknown);
        r->out1 = NULL;
    }
}

/* Victims, phase 3: the host waits until nothing can touch them any more
 * (the copy stream, or only the planned victims' own copies), reads how
 * long the copies out took, and unmaps them. */
static void sn_victims_wait_unmap(sn_run *r)
{
    sn_arena *ar = r->ar;
    sn_moves *p = r->p;
    if (r->must_wait) {
        sn_arena_quiet(SN_REAL(cudaStreamSynchronize)(ar->copy_stream));
    } else {
        /* only the planned victims' own copies (or drops) */
        for (size_t i = 0; i < p->nvictims; i++)
            if (p->victims[i].left && p->victims[i].b->leave_ev) {
                r->own_waits++;
                if (SN_REAL(cudaEventSynchronize)(p->victims[i].b->leave_ev) != cudaSuccess) {
                    sn_arena_quiet(cudaErrorUnknown);
                    sn_arena_quiet(SN_REAL(cudaStreamSynchronize)(ar->copy_stream));
                    break;
                }
            }
    }
    if (r->out0) {
        double ms = sn_elapsed_ms(r->out0, r->out1, !r->must_wait);
        sn_lock_take(&ar->lock);
        if (ms >= 0)
            ar->st.stall_out_ms += ms;
        sn_timing_put_locked(ar, r->out0);
        sn_timing_put_locked(ar, r->out1);
        sn_lock_give(&ar->lock);
    }
    for (size_t i = 0; i < p->nvictims; i++)
        sn_backing_unmap(&p->victims[i].bk, p->victims[i].b->va, p->victims[i].bk.n);
}

/* Victims, phase 4: each is off the device now, its host copy (if any)
 * current, what its contents became counted. */
static void sn_victims_done_locked(sn_run *r)
{
    sn_arena *ar = r->ar;
    sn_moves *p = r->p;
    for (size_t i = 0; i < p->nvictims; i++) {
        sn_move *m = &p->victims[i];
        sn_block *b = m->b;
        ar->st.evictions++;
        if (b->leaving)
            sn_leaving_remove_locked(ar, b);
        b->host_pending = 0;
        if (b->is_free) {
            ar->st.freed_drops++;
        } else if (m->fresh) {
            /* predicted dead: the device's newer contents are gone, and
             * the host's older copy must never come back */
            ar->st.predicted_drops++;
            sn_predict_dropped(&b->pred);
            b->host_valid = 0;
        } else if (!m->copy && b->host_valid) {
            ar->st.clean_drops++;
        }
        if (m->copy && b->host) {
            ar->st.swap_out++;
            ar->st.swap_out_bytes += b->size;
            b->host_valid = 1;
        }
        b->dirty = 0;
        b->resident = 0;
        b->busy = 0;
        b->bk.n = 0;
        if (b->load_ev) {
            sn_arena_event_put_locked(ar, b->load_ev);
            b->load_ev = NULL;
        }
    }
    if (r->copies || p->fence)
        ar->st.host_waits++;
    ar->st.own_waits += r->own_waits;
    if (p->fence)
        ar->st.fences++;
}

/* Victims, phase 5: the handles no load takes were evicted for their
 * bytes: released (their bytes already left the account). */
static void sn_victims_release(const sn_moves *p)
{
    for (size_t i = 0; i < p->nvictims; i++) {
        const sn_move *m = &p->victims[i];
        for (int k = 0; k < m->bk.n; k++)
            if (!(m->given & (1u << k))) {
                if (__builtin_expect(sn_opt.debug_break == SN_BREAK_SLOW_RELEASE, 0))
                    usleep(5000);
                SN_REAL(cuMemRelease)(m->bk.pc[k].h);
            }
    }
}

/* Loads, phase 1: what no handle at hand covers is created, and each
 * load's handles mapped. A load that cannot be backed or mapped is left
 * without handles (r->failed). */
static void sn_loads_map(sn_run *r)
{
    sn_arena *ar = r->ar;
    sn_moves *p = r->p;
    for (size_t i = 0; i < p->nloads; i++) {
        sn_move *m = &p->loads[i];
        sn_block *b = m->b;
        /* test switch: the first swap-in of the run is skipped altogether
         * (the block is left unmapped), which a consumer must trip over */
        static int skipped;
        if (m->copy && sn_opt.debug_break == SN_BREAK_SKIP_SWAP_IN &&
            !__atomic_exchange_n(&skipped, 1, __ATOMIC_ACQ_REL)) {
            sn_warn("SN_DEBUG_BREAK=skip-swap-in: block %p + %llu left unmapped", (void *)b->va,
                    (unsigned long long)b->size);
            m->copy = 0;
            m->fresh = 2;
            continue;
        }
        if (m->have < b->size) {
            /* what no handle at hand covers */
            CUmemGenericAllocationHandle h = 0;
            uint64_t lack = b->size - m->have;
            CUresult crc = SN_REAL(cuMemCreate)(&h, lack, &ar->prop, 0);
            if (crc != CUDA_SUCCESS) {
                sn_debug("device %d: cuMemCreate(%llu) failed (%d); %llu bytes held", ar->dev,
                         (unsigned long long)lack, (int)crc, (unsigned long long)ar->phys_bytes);
                sn_backing_release(&m->bk, b->va, 0);
                r->failed = 1;
                continue;
            }
            sn_load_add(m, (sn_piece){h, lack}, 0);
            p->created++;
            p->created_bytes += lack;
        }
        if (sn_backing_map(ar, b->va, &m->bk) != 0) {
            r->failed = 1;
            continue;
        }
    }
}

/* Loads, phase 2: the copies in, once every load is mapped: each mapping
 * waits for the device, copies in flight included (a VMM driver's), so a
 * copy started between two of them would be waited for. Each block gets
 * an event of its own: other streams that use the block later wait for
 * it, and it goes back to the pool with the block. */
static void sn_loads_copy_in(sn_run *r)
{
    sn_arena *ar = r->ar;
    sn_moves *p = r->p;
    for (size_t i = 0; i < p->nloads; i++) {
        sn_move *m = &p->loads[i];
        sn_block *b = m->b;
        if (m->copy && m->bk.n) {
            sn_arena_quiet(SN_REAL(cudaMemcpyAsync)((void *)b->va, b->host, b->size, cudaMemcpyHostToDevice,
                                                    ar->copy_in_stream));
            m->ev = sn_arena_event(ar);
            if (!m->ev || SN_REAL(cudaEventRecord)(m->ev, ar->copy_in_stream) != cudaSuccess)
                r->no_event = 1;
            r->last = m->ev;
            r->copies_in++;
        }
    }
}

/* Without events to wait on, the host waits for the copies in instead,
 * and nobody needs to wait later. */
static void sn_loads_host_wait(sn_run *r)
{
    sn_arena *ar = r->ar;
    sn_arena_quiet(cudaErrorUnknown);
    sn_arena_quiet(SN_REAL(cudaStreamSynchronize)(ar->copy_in_stream));
    sn_lock_take(&ar->lock);
    for (size_t i = 0; i < r->p->nloads; i++) {
        sn_arena_event_put_locked(ar, r->p->loads[i].ev);
        r->p->loads[i].ev = NULL;
    }
    sn_lock_give(&ar->lock);
}

/* Loads, phase 3 for a call: its stream waits for the copies in, between
 * two timing events (how long it waited, read later). */
static void sn_loads_consumer_wait(sn_run *r)
{
    sn_arena *ar = r->ar;
    cudaStream_t stream = (cudaStream_t)r->stream;
    cudaEvent_t in0 = NULL, in1 = NULL;
    if (r->copies_in && !r->no_event && (in0 = sn_timing_event(ar)) &&
        SN_REAL(cudaEventRecord)(in0, stream) != cudaSuccess) {
        sn_arena_quiet(cudaErrorUnknown);
        in0 = NULL;
    }
    if (r->copies_in && (r->no_event || SN_REAL(cudaStreamWaitEvent)(stream, r->last, 0) != cudaSuccess))
        sn_loads_host_wait(r);
    if (in0 && (in1 = sn_timing_event(ar)) && SN_REAL(cudaEventRecord)(in1, stream) == cudaSuccess) {
        sn_lock_take(&ar->lock);
        int full = ar->npending == 64;
        if (!full) {
            ar->pending[ar->npending][0] = in0;
            ar->pending[ar->npending++][1] = in1;
        }
        sn_lock_give(&ar->lock);
        if (full) {
            sn_arena_harvest(ar, 1);
            sn_lock_take(&ar->lock);
            ar->pending[ar->npending][0] = in0;
            ar->pending[ar->npending++][1] = in1;
            sn_lock_give(&ar->lock);
        }
    } else if (in0) {
        sn_arena_quiet(cudaErrorUnknown);
        sn_lock_take(&ar->lock);
        ar->st.stall_unmeasured++;
        sn_timing_put_locked(ar, in0);
        sn_timing_put_locked(ar, in1);
        sn_lock_give(&ar->lock);
    }
}

/* Carries out a plan with no lock held: the victims leave (fence, copies
 * out, wait, unmap, account, release), the cache's handles chosen for
 * their bytes are released, then the loads arrive (create, map, copy in)
 * and the consumer's stream waits for them (a prefetch's first user waits
 * instead, sn_arena_acquire). Returns 0, or -1 when a handle could not be
 * created (the device itself is out of memory). */
static int sn_moves_run(sn_arena *ar, sn_moves *p, void *stream)
{
    sn_run r = {.ar = ar, .p = p, .stream = stream};
    if (p->nvictims) {
        sn_victims_fence(&r);
        sn_victims_copy_out(&r);
        sn_victims_wait_unmap(&r);
        sn_lock_take(&ar->lock);
        sn_victims_done_locked(&r);
        sn_lock_give(&ar->lock);
        sn_victims_release(p);
    }
    sn_release_handles(p->release, p->nrelease);
    sn_loads_map(&r);
    sn_loads_copy_in(&r);
    if (p->prefetch) {
        /* nobody waits now: the first call that uses a block waits for its
         * own event (sn_arena_acquire); without events the host waits */
        if (r.copies_in && r.no_event)
            sn_loads_host_wait(&r);
    } else {
        sn_loads_consumer_wait(&r);
    }
    return r.failed ? -1 : 0;
}

static inline int sn_whole_overwrite(const sn_block *b)
{
    return !b->shared && (b->call_mode & SN_OVERWRITE) && !(b->call_mode & SN_READ);
}

/* A call at position pos uses b (its mode in call_mode, what it reads and
 * defines of it in call_*): one more observation for the prediction, and
 * a read of contents dropped as predicted dead is a libsn error, said
 * loudly. Writing into dropped contents is not reading them. */
static void sn_learn_locked(sn_arena *ar, sn_block *b, int64_t pos)
{
    int64_t before = b->pred.last_pos;
    if (sn_predict_use(&b->pred, pos, sn_whole_overwrite(b), b->call_reads_dropped, b->call_def_lo,
                       b->call_def_hi - b->call_def_lo)) {
        ar->st.dropped_reads++;
        sn_error("device %d: contents of the block at %p were dropped as predicted dead after its use at "
                 "position %lld of the iteration, and are now read at position %lld: this run's results "
                 "cannot be trusted; SN_PREDICTED_DEAD=0 turns the prediction off",
                 ar->dev, (void *)b->va, (long long)before, (long long)pos);
        if (sn_opt.strict)
            _exit(2);
    }
}

/* Whether b's contents may be dropped now instead of written back. */
static int sn_predicted_dead_locked(const sn_block *b)
{
    return sn_opt.predicted_dead && !b->shared && sn_predict_dead(&b->pred);
}

/* Files a backing's pieces (but those in skip) in the cache; one that
 * cannot be filed goes to spill, for the caller to release with
 * sn_spill_release once it has given the lock back. */
static void sn_pieces_to_cache_locked(sn_arena *ar, sn_backing *bk, unsigned skip, sn_spill *spill)
{
    for (int k = 0; k < bk->n; k++) {
        if (skip & (1u << k))
            continue;
        if (sn_hcache_put_locked(ar, bk->pc[k].size, bk->pc[k].h) == 0)
            continue;
        if (sn_push(&spill->h, &spill->n, &spill->cap, sizeof *spill->h) != 0)
            continue;  /* out of memory twice: the handle is lost, its bytes stay counted (safe) */
        spill->h[spill->n - 1] = bk->pc[k].h;
        spill->bytes += bk->pc[k].size;
    }
    bk->n = 0;
}

/* Releases what sn_pieces_to_cache_locked spilled (no lock held), then
 * takes the bytes out of the account. */
static void sn_spill_release(sn_arena *ar, sn_spill *spill)
{
    if (!spill->n)
        return;
    sn_release_handles(spill->h, spill->n);
    sn_lock_take(&ar->lock);
    ar->phys_bytes -= spill->bytes;
    sn_lock_give(&ar->lock);
    spill->n = 0;
    spill->bytes = 0;
}

/* sn_make_room_locked found too little: gives back what it took (released
 * cached handles stay released). */
static void sn_moves_undo_locked(sn_arena *ar, sn_moves *p)
{
    /* the cache's handles go back to it; a victim's never left the victim */
    for (size_t i = 0; i < p->nloads; i++)
        sn_pieces_to_cache_locked(ar, &p->loads[i].bk, p->loads[i].from_victim, &p->spill);
    for (size_t i = 0; i < p->nvictims; i++) {
        sn_block *b = p->victims[i].b;
        b->busy = 0;
        ar->resident_bytes += b->size;
        for (int k = 0; k < p->victims[i].bk.n; k++)
            if (!(p->victims[i].given & (1u << k)))
                ar->phys_bytes += p->victims[i].bk.pc[k].size;
        if (p->victims[i].copy && !b->host)
            sn_stage_unreserve_locked(&ar->stage, b->size);
    }
    /* another thread may wait for a victim that is no longer busy */
    if (p->nvictims)
        sn_cond_broadcast(&ar->cond);
}

/* The loads' bytes are held from now; the streams a fence must cover are
 * the arena's at this moment. */
static void sn_moves_reserve_locked(sn_arena *ar, sn_moves *p, uint64_t want)
{
    ar->phys_bytes += want;
    for (size_t i = 0; i < p->nloads; i++) {
        p->loads[i].b->busy = 1;
        ar->resident_bytes += p->loads[i].b->size;
    }
    if (ar->phys_bytes > ar->st.peak_physical)
        ar->st.peak_physical = ar->phys_bytes;
    if (ar->resident_bytes > ar->st.peak_resident)
        ar->st.peak_resident = ar->resident_bytes;
    p->nstreams = ar->nstreams;
    memcpy(p->streams, ar->streams, sizeof p->streams);
    p->overflow = ar->streams_overflow;
}

/* The loads of p have been carried out: each block resident with its
 * copy's event, which streams other than stream (the consumer, which
 * already waits; NULL for a prefetch: none) wait for. Returns 1 when a
 * block could not be mapped. */
static int sn_loads_done_locked(sn_arena *ar, sn_moves *p, void *stream)
{
    ar->st.handles_created += p->created;
    ar->st.handles_created_bytes += p->created_bytes;
    if (p->prefetch)
        stream = SN_NOBODY;
    int lost = 0;
    for (size_t i = 0; i < p->nloads; i++) {
        sn_move *m = &p->loads[i];
        sn_block *b = m->b;
        b->busy = 0;
        if (m->fresh == 2) {
            /* the test switch's block: claimed resident, never mapped */
            sn_pieces_to_cache_locked(ar, &m->bk, 0, &p->spill);
            b->resident = 1;
            continue;
        }
        if (!m->bk.n) {
            /* not mapped: give back what was reserved for it */
            ar->resident_bytes -= b->size;
            ar->phys_bytes -= b->size;
            lost = 1;
            continue;
        }
        b->bk = m->bk;
        b->resident = 1;
        b->load_stamp = ar->clock;
        if (m->restore)
            __atomic_store_n(&b->restore, 1, __ATOMIC_RELAXED);
        if (m->copy) {
            ar->st.swap_in++;
            ar->st.swap_in_bytes += b->size;
        }
        if (b->load_ev)
            sn_arena_event_put_locked(ar, b->load_ev);
        b->load_ev = m->ev;
        b->load_waited = stream;
    }
    return lost;
}

/* Doubles a ticket's block array (32 blocks cover most calls). */
static __attribute__((noinline)) int sn_ticket_grow(sn_arena_ticket *t, size_t *cap)
{
    size_t c = *cap * 2;
    void **p = t->blocks == t->small ? malloc(c * sizeof *p) : realloc(t->blocks, c * sizeof *p);
    if (!p)
        return -1;
    if (t->blocks == t->small)
        memcpy(p, t->small, t->nblocks * sizeof *p);
    t->blocks = p;
    *cap = c;
    return 0;
}

/* Adds u's block, used with u's mode over u's range, to the blocks of the
 * call being collected (the arena's clock marks them); a block met again
 * only adds its mode. Returns 1 when the block is being moved by another
 * thread, -1 out of memory. */
static inline __attribute__((always_inline)) int sn_collect_locked(sn_arena *ar, const sn_arena_use *u,
                                                                   sn_arena_ticket *t, size_t *cap)
{
    sn_block *b = u->block;
    unsigned mode = u->mode;
    uint64_t off = u->off, len = u->len;
    int busy = 0;
    if (b->mark != ar->clock) {
        if (__builtin_expect(t->nblocks == *cap, 0) && sn_ticket_grow(t, cap) != 0)
            return -1;
        b->mark = ar->clock;
        b->call_mode = 0;
        b->call_reads_dropped = 0;
        b->call_def_lo = b->call_def_hi = 0;
        t->blocks[t->nblocks++] = b;
        busy = b->busy;
    }
    b->call_mode |= mode;
    /* reads are checked against the contents before the call (a use that
     * gives no range reads all of it); the part it writes without reading
     * counts after it */
    if ((mode & SN_READ) && sn_predict_reads_dropped(&b->pred, len ? off : 0, len ? len : UINT64_MAX))
        b->call_reads_dropped = 1;
    if (mode & SN_ARENA_DEFINES)
        sn_predict_extend(&b->call_def_lo, &b->call_def_hi, off, len);
    return busy;
}

static void sn_ticket_free(sn_arena_ticket *t)
{
    if (t->blocks != t->small)
        free(t->blocks);
    t->blocks = t->small;
    t->nblocks = 0;
}

static sn_block *sn_scratch_ready_locked(sn_arena *ar, void *stream, uint64_t bytes);

/* Blocks of a call that were resident already but may still be arriving
 * on the copy-in stream for another stream's call: the call's stream
 * waits for their events, or, past SN_ARRIVALS of them, the host waits
 * for the copy-in stream, which covers every load. */
enum { SN_ARRIVALS = 8 };
typedef struct sn_arrivals {
    cudaEvent_t ev[SN_ARRIVALS];
    int n;
    int sync;       /* the host waits for the copy-in stream too */
} sn_arrivals;

/* Collects the arrivals among t's blocks and marks the stream as waiting
 * for them. full_syncs: a full list makes the host wait as well (after a
 * move; the fast path waits only when one more was left out). */
static void sn_arrivals_locked(sn_arena *ar, const sn_arena_ticket *t, void *stream, int full_syncs,
                               sn_arrivals *a)
{
    a->n = 0;
    a->sync = 0;
    for (size_t i = 0; i < t->nblocks; i++) {
        sn_block *b = t->blocks[i];
        if (!b->load_ev || b->load_waited == stream || b->load_stamp <= ar->synced_stamp)
            continue;
        if (a->n == SN_ARRIVALS) {
            a->sync = 1;
            break;
        }
        a->ev[a->n++] = b->load_ev;
        b->load_waited = stream;
    }
    if (full_syncs && a->n == SN_ARRIVALS)
        a->sync = 1;
}

/* The waits sn_arrivals_locked collected, with no lock held. */
static void sn_arrivals_wait(sn_arena *ar, void *stream, const sn_arrivals *a)
{
    for (int i = 0; i < a->n; i++) {
        sn_arena_quiet(SN_REAL(cudaStreamWaitEvent)((cudaStream_t)stream, a->ev[i], 0));
    }
    if (a->sync) {
        sn_arena_quiet(SN_REAL(cudaStreamSynchronize)(ar->copy_in_stream));
    }
}

/* What the collecting phase found (sn_acquire_collect_locked). */
enum { SN_COLLECT_OK = 0, SN_COLLECT_BUSY = 1, SN_COLLECT_NOMEM = -1, SN_COLLECT_NO_SCRATCH = -2 };

/* Phase 1 of a call's residency: its blocks, in t (the arena's clock
 * marks them): the stream's scratch, everything (all), what the call
 * touches, and the handle's own memory (every call on it may read and
 * write it). Stops at the first block another thread is moving. */
static int sn_acquire_collect_locked(sn_arena *ar, const sn_arena_request *rq, sn_arena_ticket *t, size_t *cap)
{
    int got = 0;  /* 1: one is busy, -1: out of memory */
    t->nblocks = 0;
    if (rq->scratch) {
        sn_block *b = sn_scratch_ready_locked(ar, rq->stream, rq->scratch);
        if (!b)
            return SN_COLLECT_NO_SCRATCH;
        t->scratch_va = b->va;
        got = sn_collect_locked(ar, &(sn_arena_use){b, SN_OVERWRITE, 0, UINT64_MAX}, t, cap);
    }
    if (rq->all) {
        /* libsn's scratch is no framework call's to touch */
        for (size_t i = 0; i < ar->nblocks && !got; i++)
            if (!ar->blocks[i]->is_free && !ar->blocks[i]->scratch)
                got = sn_collect_locked(ar, &(sn_arena_use){ar->blocks[i], SN_READ | SN_WRITE, 0, UINT64_MAX}, t, cap);
    }
    for (size_t i = 0; i < rq->nuses && !got; i++) {
        sn_arena_use u = rq->uses[i];
        const sn_block *b = u.block;
        /* overwriting one allocation of a shared block leaves the others' contents */
        if (b->shared && b->nlive > 1)
            u.mode &= ~(unsigned)(SN_OVERWRITE | SN_ARENA_DEFINES);
        got = sn_collect_locked(ar, &u, t, cap);
    }
    if (rq->lib_key && !got) {
        sn_keyed *k = sn_keyed_of_locked(ar, rq->lib_key, 0);
        for (size_t i = 0; k && i < k->n && !got; i++)
            got = sn_collect_locked(ar, &(sn_arena_use){k->blocks[i], SN_READ | SN_WRITE, 0, UINT64_MAX}, t, cap);
    }
    return got < 0 ? SN_COLLECT_NOMEM : got ? SN_COLLECT_BUSY : SN_COLLECT_OK;
}

/* Phase 2: one pass over the call's blocks: pinned, marked used and
 * written, one more observation for the prediction. Returns the call's
 * working set in bytes (library memory counted whole), *missing the bytes
 * of its blocks not resident. The call is in progress from here: a device
 * synchronisation starting now does not cover it (it is forwarded later). */
static uint64_t sn_acquire_pin_locked(sn_arena *ar, const sn_arena_request *rq, sn_arena_ticket *t, uint64_t now,
                                      uint64_t *missing, int *arriving)
{
    *arriving = 0;
    sn_note_stream_locked(ar, rq->stream);
    uint64_t ws = ar->library_bytes;
    *missing = 0;
    sn_ticket_link_locked(ar, t);
    for (size_t i = 0; i < t->nblocks; i++) {
        sn_block *b = t->blocks[i];
        sn_pin(b);
        b->last_use = now;
        /* marked now, while this call's mode is the block's: another
         * thread's call may collect the block (and overwrite call_mode)
         * while this one is moving memory with the lock released; a
         * pinned block cannot leave, so dirty before the write is safe */
        if (b->leaving)
            sn_cancel_leave_locked(ar, b);
        if ((b->call_mode & SN_WRITE) && !b->scratch)
            b->dirty = 1;
        /* (library memory is read and written by every call, libsn's
         * scratch never written back: neither is ever predicted dead) */
        if (!b->library && !b->scratch)
            sn_learn_locked(ar, b, rq->pos);
        if (!b->library)
            ws += b->size;
        if (!b->resident)
            *missing += b->size;
        else if (b->load_ev && b->load_waited != rq->stream && b->load_stamp > ar->synced_stamp)
            *arriving = 1; /* sn_arrivals_locked collects them */
    }
    /* an algorithm search's scratch is no call's working set */
    int search = rq->nuses == 1 && !rq->all && !rq->lib_key && ((sn_block *)rq->uses[0].block)->search;
    if (ws > ar->st.largest_need && !search)
        ar->st.largest_need = ws;
    return ws;
}

/* Phase 3: the loads of the call's missing blocks, each given what the
 * cache of free handles has for it. Returns the bytes still lacking. */
static uint64_t sn_acquire_plan_loads_locked(sn_arena *ar, const sn_arena_ticket *t, sn_moves *p)
{
    uint64_t want = 0;
    for (size_t i = 0; i < t->nblocks; i++) {
        sn_block *b = t->blocks[i];
        if (b->resident)
            continue;
        if (sn_push(&p->loads, &p->nloads, &p->cap_loads, sizeof *p->loads) != 0)
            break;
        sn_move *m = &p->loads[p->nloads - 1];
        int dead = !b->shared && (b->call_mode & SN_OVERWRITE) && !(b->call_mode & SN_READ);
        *m = (sn_move){.b = b, .copy = b->host_valid && !dead, .fresh = !b->host_valid || dead,
                       .restore = dead && b->host_valid && b->host};
        if (dead && b->host_valid)
            ar->st.dead_loads++;
        want += sn_load_from_cache_locked(ar, m);
    }
    return want;
}

/* How a residency attempt that moved memory ended. */
enum { SN_ACQ_DONE, SN_ACQ_AGAIN, SN_ACQ_FAILED };

/* Gives up a call's attempt: out of the in-progress slots, unpinned. */
static void sn_acquire_abandon_locked(sn_arena *ar, sn_arena_ticket *t)
{
    sn_ticket_unlink_locked(ar, t);
    sn_unpin_all(t->blocks, t->nblocks);
}

/* Not enough can leave now: p is undone, and the call tries again when
 * other threads' calls hold what could leave (they will finish), else it
 * fails. Called with the lock, returns SN_ACQ_AGAIN holding it again or
 * SN_ACQ_FAILED without it. */
/* How often one call has tried again: for want of room others hold, and
 * after the driver refused a load memory. */
typedef struct sn_tries {
    int busy, lost;
} sn_tries;

static int sn_acquire_no_room_locked(sn_arena *ar, sn_arena_ticket *t, sn_moves *p, uint64_t want, sn_tries *tries)
{
    sn_moves_undo_locked(ar, p);
    sn_acquire_abandon_locked(ar, t);
    int others = 0;
    for (size_t i = 0; i < ar->nblocks && !others; i++)
        others = sn_pins(ar->blocks[i]) > 0 && !ar->blocks[i]->library;
    sn_lock_give(&ar->lock);
    sn_release_handles(p->release, p->nrelease);
    sn_spill_release(ar, &p->spill);
    sn_moves_free(p);
    sn_debug("device %d: %llu bytes wanted, not enough can leave (others pinned: %d)", ar->dev,
             (unsigned long long)want, others);
    if (others && ++tries->busy < 2000) {
        usleep(500);
        sn_lock_take(&ar->lock);
        return SN_ACQ_AGAIN;
    }
    sn_lock_take(&ar->lock);
    ar->st.oom_calls++;
    sn_lock_give(&ar->lock);
    return SN_ACQ_FAILED;
}

/* Phases 3-5 for a call whose blocks are not all resident: plan the loads
 * and what leaves for them, carry it out with no lock held, then account
 * for it and wait for what is still arriving. Called with the lock;
 * returns SN_ACQ_DONE without it (the call may go), SN_ACQ_AGAIN with it
 * (collect afresh) or SN_ACQ_FAILED without it. */
static int sn_acquire_move_locked(sn_arena *ar, const sn_arena_request *rq, sn_arena_ticket *t, uint64_t ws,
                                  sn_tries *tries)
{
    sn_moves p;
    memset(&p, 0, sizeof p);
    uint64_t want = sn_acquire_plan_loads_locked(ar, t, &p);
    if (sn_make_room_locked(ar, &p, &want) != 0)
        return sn_acquire_no_room_locked(ar, t, &p, want, tries);
    sn_moves_reserve_locked(ar, &p, want);
    sn_lock_give(&ar->lock);

    int rc = sn_moves_run(ar, &p, rq->stream);

    sn_lock_take(&ar->lock);
    int lost = sn_loads_done_locked(ar, &p, rq->stream);
    sn_cond_broadcast(&ar->cond);
    if (p.spill.n) {
        sn_lock_give(&ar->lock);
        sn_spill_release(ar, &p.spill);
        sn_lock_take(&ar->lock);
    }
    sn_moves_free(&p);
    if (rc == 0 && !lost) {
        for (size_t i = 0; i < t->nblocks && !t->restore; i++)
            t->restore = __atomic_load_n(&((sn_block *)t->blocks[i])->restore, __ATOMIC_RELAXED);
        sn_arrivals a;
        sn_arrivals_locked(ar, t, rq->stream, 1, &a);
        sn_lock_give(&ar->lock);
        sn_arrivals_wait(ar, rq->stream, &a);
        return SN_ACQ_DONE;
    }
    sn_acquire_abandon_locked(ar, t);
    if (lost && ar->phys_bytes / ar->gran * ar->gran < ar->budget && ++tries->busy < 64) {
        /* Memory another thread's move counted as given back under the
         * lock is returned to the driver after it (no CUDA call under a
         * lock): the driver may refuse this load only until then. The
         * call waits and tries again (about 1 s at most) before
         * believing the device short. */
        if (tries->lost < 10) {
            sn_lock_give(&ar->lock);
            usleep(1000u << tries->lost);
            tries->lost++;
            sn_lock_take(&ar->lock);
            ar->st.create_retries++;
            return SN_ACQ_AGAIN;
        }
        /* The device has less free memory than the budget says (memory
         * libsn does not own: another process, or allocations made while
         * libsn was starting): the budget shrinks to what could be had,
         * and the call tries again within it. */
        uint64_t nb = ar->phys_bytes / ar->gran * ar->gran;
        char held[32], old[32], now[32], other[32];
        sn_arena_mib(held, sizeof held, ar->phys_bytes);
        sn_arena_mib(old, sizeof old, ar->budget);
        sn_arena_mib(now, sizeof now, nb);
        sn_arena_mib(other, sizeof other, ar->total > ar->phys_bytes ? ar->total - ar->phys_bytes : 0);
        sn_warn("device %d: the driver refuses more memory with libsn holding %s: up to %s of the device is "
                "held outside libsn (another process, or memory libsn does not serve); budget lowered from %s "
                "to %s",
                ar->dev, held, other, old, now);
        ar->budget = nb;
        ar->st.budget = nb;
        if (ws <= nb)
            return SN_ACQ_AGAIN;
    }
    ar->st.oom_calls++;
    sn_lock_give(&ar->lock);
    return SN_ACQ_FAILED;
}

int sn_arena_acquire(sn_arena *ar, const sn_arena_request *rq, sn_arena_ticket *t, uint64_t *need)
{
    t->ar = ar;
    t->scratch_va = 0;
    t->blocks = t->small;
    t->nblocks = 0;
    t->linked = 0;
    t->slot = -1;
    t->restore = 0;
    *need = 0;
    if (ar->pool) {
        /* everything is resident, always */
        t->ar = NULL;
        return SN_ARENA_OK;
    }
    size_t cap = sizeof t->small / sizeof t->small[0];
    sn_tries tries = {0, 0};
    sn_lock_take(&ar->lock);
    for (;;) {
        uint64_t now = ++ar->clock;
        int got = sn_acquire_collect_locked(ar, rq, t, &cap);
        if (got == SN_COLLECT_NO_SCRATCH || got == SN_COLLECT_NOMEM) {
            sn_lock_give(&ar->lock);
            sn_ticket_free(t);
            return got == SN_COLLECT_NO_SCRATCH ? SN_ARENA_NO_SCRATCH : SN_ARENA_NOMEM;
        }
        if (got == SN_COLLECT_BUSY) {
            /* another thread is moving one: wait, then collect afresh */
            ar->waiters++;
            sn_cond_wait(&ar->cond, &ar->lock, NULL);
            ar->waiters--;
            continue;
        }
        uint64_t missing;
        int arriving;
        uint64_t ws = sn_acquire_pin_locked(ar, rq, t, now, &missing, &arriving);
        *need = ws;
        if (!missing) {
            /* the fast path: everything is there, some perhaps still
             * arriving for another stream's call (collected only when
             * the pass above saw one: most calls have none) */
            if (!arriving) {
                sn_lock_give(&ar->lock);
                return SN_ARENA_OK;
            }
            sn_arrivals a;
            sn_arrivals_locked(ar, t, rq->stream, 0, &a);
            sn_lock_give(&ar->lock);
            sn_arrivals_wait(ar, rq->stream, &a);
            return SN_ARENA_OK;
        }
        if (ws > ar->budget) {
            sn_acquire_abandon_locked(ar, t);
            ar->st.oom_calls++;
            sn_lock_give(&ar->lock);
            sn_ticket_free(t);
            return SN_ARENA_NOMEM;
        }
        int rc = sn_acquire_move_locked(ar, rq, t, ws, &tries);
        if (rc == SN_ACQ_DONE)
            return SN_ARENA_OK;
        if (rc == SN_ACQ_FAILED) {
            sn_ticket_free(t);
            return SN_ARENA_NOMEM;
        }
    }
}

/* The contents of the blocks loaded empty for this call come back from
 * their host copies, which are current: nothing was written. */
void sn_arena_call_failed(sn_arena_ticket *t)
{
    sn_arena *ar = t->ar;
    if (!ar || !t->restore)
        return;
    int restored = 0;
    for (size_t i = 0; i < t->nblocks; i++) {
        sn_block *b = t->blocks[i];
        if (!__atomic_load_n(&b->restore, __ATOMIC_RELAXED))
            continue;
        /* (pinned by this call: resident, its host copy kept) */
        sn_arena_quiet(SN_REAL(cudaMemcpyAsync)((void *)b->va, b->host, b->size, cudaMemcpyHostToDevice,
                                                ar->copy_stream));
        restored++;
    }
    if (!restored)
        return;
    sn_arena_quiet(SN_REAL(cudaStreamSynchronize)(ar->copy_stream));
    sn_lock_take(&ar->lock);
    for (size_t i = 0; i < t->nblocks; i++) {
        sn_block *b = t->blocks[i];
        if (__atomic_load_n(&b->restore, __ATOMIC_RELAXED))
            b->dirty = 0; /* the device holds the host's copy again */
    }
    ar->st.restored_loads += (uint64_t)restored;
    sn_lock_give(&ar->lock);
    sn_info("device %d: a call that was to overwrite %d block(s) failed; their contents were brought back",
            ar->dev, restored);
}

void sn_arena_release(sn_arena_ticket *t)
{
    sn_arena *ar = t->ar;
    if (!ar)
        return;
    if (__builtin_expect(t->restore, 0))
        for (size_t i = 0; i < t->nblocks; i++)
            __atomic_store_n(&((sn_block *)t->blocks[i])->restore, 0, __ATOMIC_RELAXED);
    /* no lock: the pins are atomic and the slot is this call's own */
    sn_unpin_all(t->blocks, t->nblocks);
    if (t->slot >= 0) {
        __atomic_and_fetch(&ar->inflight_mask, ~(1ULL << t->slot), __ATOMIC_RELEASE);
        t->slot = -1;
    } else if (t->linked) {
        sn_lock_take(&ar->lock);
        sn_ticket_unlink_locked(ar, t);
        sn_lock_give(&ar->lock);
    }
    sn_ticket_free(t);
    t->ar = NULL;
}

/* ---- allocation ------------------------------------------------------------------------- */

static int sn_pool_alloc(sn_arena *ar, uint64_t size, int early, uintptr_t *addr, sn_arena_alloc **rec)
{
    sn_arena_alloc *a = calloc(1, sizeof *a);
    if (!a)
        return SN_ARENA_NOMEM;
    /* GTBM's incremental space lies past the pool's end: what lives long
     * goes to the high end of the main space instead */
    enum sn_gtbm_class cls = early ? SN_CLASS_TEMP : SN_CLASS_MOVABLE;
    sn_lock_take(&ar->lock);
    uint64_t off = sn_gtbm_alloc(&ar->gtbm, size, cls);
    if (off == SN_GTBM_NONE) {
        ar->st.oom_allocs++;
        sn_lock_give(&ar->lock);
        free(a);
        return SN_ARENA_NOMEM;
    }
    a->ar = ar;
    a->off = off;
    a->size = size;
    ar->allocated += size;
    ar->held += sn_gtbm_size(&ar->gtbm, off);
    ar->st.allocs++;
    ar->st.alloc_bytes += size;
    if (ar->allocated > ar->st.peak_allocated)
        ar->st.peak_allocated = ar->allocated;
    sn_gtbm_stats gs;
    sn_gtbm_stats_get(&ar->gtbm, &gs);
    /* nothing leaves: the smallest pool that would have served the run
     * is the placement's high-water mark */
    ar->st.peak_resident = gs.peak_extent;
    ar->st.peak_physical = ar->budget;
    ar->st.rounding = gs.frag_at_peak;
    ar->st.largest_need = gs.peak_extent;
    sn_lock_give(&ar->lock);
    *addr = ar->pool_base + off;
    *rec = a;
    return SN_ARENA_OK;
}

static int sn_is_library(int owner)
{
    return owner == SN_OWNER_CUDNN || owner == SN_OWNER_CUBLAS;
}

int sn_arena_alloc_bytes(sn_arena *ar, const sn_arena_alloc_request *rq, uintptr_t *addr, sn_arena_alloc **rec)
{
    uint64_t size = rq->size;
    int early = rq->early, scoped = rq->scoped;
    void *key = rq->key;
    /* nothing, or more than the whole device: the real allocator answers
     * exactly as it would without libsn */
    if (!size || size > ar->total)
        return SN_ARENA_PASS;
    if (ar->pool)
        return sn_pool_alloc(ar, size, early, addr, rec);
    int library = sn_is_library(rq->owner);
    uint64_t asked = sn_round_up(size, SN_ALIGN);
    int shared = !library && asked < ar->gran;
    uint64_t bsize = shared ? ar->gran : sn_round_up(size, ar->gran);
    sn_arena_alloc *a = calloc(1, sizeof *a);
    if (!a)
        return SN_ARENA_NOMEM;
    sn_lock_take(&ar->lock);
    if (bsize > ar->budget || ar->held + bsize > ar->budget + ar->stage.limit) {
        ar->st.oom_allocs++;
        sn_lock_give(&ar->lock);
        free(a);
        return SN_ARENA_NOMEM;
    }
    sn_block *b = NULL;
    int cls = early ? 0 : 1;
    for (int attempt = 0; attempt < 2 && !b; attempt++) {
        if (shared && ar->open[cls] && !ar->open[cls]->is_free && ar->open[cls]->bump + asked <= ar->gran) {
            b = ar->open[cls];
        } else {
            b = sn_block_reuse_locked(ar, bsize);
            if (!b)
                b = sn_block_new_locked(ar, bsize);
            if (b) {
                b->shared = (unsigned)shared;
                b->cls = (unsigned)cls;
                b->library = 0;
                b->lib_key = NULL;
                ar->held += bsize;
                if (shared)
                    ar->open[cls] = b;
            } else if (attempt == 0) {
                sn_arena_reserve_more_locked(ar, bsize);
            }
        }
    }
    if (!b) {
        ar->st.oom_allocs++;
        int no_va = ar->va_refused != 0;
        sn_lock_give(&ar->lock);
        free(a);
        return no_va ? SN_ARENA_NO_VA : SN_ARENA_NOMEM;
    }
    a->ar = ar;
    a->b = b;
    a->size = size;
    a->off = shared ? b->bump : 0;
    if (shared)
        b->bump += asked;
    b->nlive++;
    ar->allocated += size;
    ar->st.allocs++;
    ar->st.alloc_bytes += size;
    if (ar->allocated > ar->st.peak_allocated) {
        ar->st.peak_allocated = ar->allocated;
        ar->st.rounding = ar->held > ar->allocated ? ar->held - ar->allocated : 0;
    }
    sn_lock_give(&ar->lock);
    *addr = b->va + a->off;
    *rec = a;
    if (!library)
        return SN_ARENA_OK;
    /* cuDNN and cuBLAS touch their own memory inside the call that made it
     * (and later calls on its handle), which no argument describes: it is
     * mapped now, and pinned for the call (scoped) or for good */
    sn_arena_use u = {b, SN_WRITE | SN_OVERWRITE, 0, UINT64_MAX};
    sn_arena_ticket t;
    uint64_t need;
    int rc = sn_arena_acquire(ar, &(sn_arena_request){.uses = &u, .nuses = 1, .pos = -1}, &t, &need);
    if (rc != SN_ARENA_OK) {
        sn_arena_free(a);
        return SN_ARENA_NOMEM;
    }
    sn_lock_take(&ar->lock);
    sn_pin(b);
    if (!scoped || (key && sn_key_block_locked(ar, b, key) != 0)) {
        b->library = 1;
        ar->library_bytes += bsize;
        if (ar->library_bytes > ar->st.pinned_library)
            ar->st.pinned_library = ar->library_bytes;
    }
    sn_lock_give(&ar->lock);
    sn_arena_release(&t);
    return SN_ARENA_OK;
}

void sn_arena_scoped_end(sn_arena *ar, void *block, void *key)
{
    sn_block *b = block;
    if (!b)
        return;  /* a pool's allocation: nothing pinned */
    sn_lock_take(&ar->lock);
    /* a block the library freed before its call ended stays unkeyed */
    if (key && !b->lib_key && !b->library && !b->is_free && sn_key_block_locked(ar, b, key) != 0) {
        b->library = 1;
        sn_pin(b);
        ar->library_bytes += b->size;
    }
    if (!key && !b->lib_key && !b->library && !b->is_free) {
        /* no handle to tie it to: resident for good */
        b->library = 1;
        sn_pin(b);
        ar->library_bytes += b->size;
    }
    sn_unpin(b);
    if (ar->waiters)
        sn_cond_broadcast(&ar->cond);
    sn_lock_give(&ar->lock);
}

/* Waits for the program's own work: each stream it used since the last
 * synchronisation, or the whole device when one of them cannot be named
 * (another thread's per-thread default stream, more streams than the list
 * holds). Only a device synchronisation covers libsn's copies too, and only
 * it says so (sn_synced_locked). */
static void sn_arena_sync_program(sn_arena *ar)
{
    void *streams[SN_ARENA_MAX_STREAMS];
    sn_lock_take(&ar->lock);
    int n = ar->nstreams, all = ar->streams_overflow;
    memcpy(streams, ar->streams, (size_t)n * sizeof *streams);
    /* (what a device synchronisation covers is only needed for one) */
    uint64_t covered = all ? sn_sync_begin_locked(ar) : 0;
    sn_lock_give(&ar->lock);
    if (all) {
        sn_arena_quiet(SN_REAL(cudaDeviceSynchronize)());
        sn_arena_device_synced(ar, covered);
        return;
    }
    /* a capturing stream cannot be synchronised (that would invalidate
     * the program's capture): what can run on it is what came before the
     * capture began, which the event libsn recorded then covers, as for
     * a fence (sn_fence_capturing) */
    for (int i = 0; i < n; i++) {
        void *ev;
        if (sn_capture_active() && sn_stream_capturing(streams[i], &ev)) {
            if (ev)
                sn_arena_quiet(SN_REAL(cudaEventSynchronize)((cudaEvent_t)ev));
            continue;
        }
        sn_arena_quiet(SN_REAL(cudaStreamSynchronize)((cudaStream_t)streams[i]));
    }
}

void sn_arena_free(sn_arena_alloc *a)
{
    sn_block *b = a->b;
    sn_arena *ar = a->ar;
    if (ar->pool) {
        sn_arena_quiet(SN_REAL(cudaDeviceSynchronize)());
        sn_lock_take(&ar->lock);
        ar->allocated -= a->size;
        ar->held -= sn_gtbm_size(&ar->gtbm, a->off);
        sn_gtbm_free(&ar->gtbm, a->off);
        sn_lock_give(&ar->lock);
        free(a);
        return;
    }
    /* cudaFree waits for the device: the program may rely on it. What it
     * can see is its own work: the streams it used since the last
     * synchronisation (the whole device when one of them cannot be named),
     * not libsn's copies of other blocks, which a per-iteration allocator
     * would otherwise wait for after almost every layer. This block's own
     * copies are waited for below: the next allocation of its size may
     * have it. */
    sn_arena_sync_program(ar);
    sn_lock_take(&ar->lock);
    while (b->busy) {
        ar->waiters++;
        sn_cond_wait(&ar->cond, &ar->lock, NULL);
        ar->waiters--;
    }
    for (int tries = 0; tries < 2; tries++) {
        cudaEvent_t ev = NULL;
        if (b->leaving && b->leave_ev)
            ev = b->leave_ev;
        else if (b->load_ev && b->load_stamp > ar->synced_stamp)
            ev = b->load_ev;
        if (!ev)
            break;
        sn_lock_give(&ar->lock);
        sn_arena_quiet(SN_REAL(cudaEventSynchronize)(ev));
        sn_lock_take(&ar->lock);
        if (ev == b->load_ev)
            b->load_stamp = 0;
        if (ev == b->leave_ev)
            break;
    }
    ar->allocated -= a->size;
    if (b->library) {
        sn_unpin(b);
        ar->library_bytes -= b->size;
        b->library = 0;
    }
    if (b->lib_key)
        sn_unkey_block_locked(ar, b);
    if (--b->nlive == 0) {
        if (ar->open[b->cls] == b)
            ar->open[b->cls] = NULL;
        ar->held -= b->size;
        sn_block_to_free_locked(ar, b);
    }
    sn_lock_give(&ar->lock);
    free(a);
}

/* ---- libsn's own scratch ------------------------------------------------------------------ */

static int sn_scratch_slot_locked(sn_arena *ar, void *stream, int create)
{
    int empty = -1;
    for (int i = 0; i < SN_ARENA_MAX_STREAMS; i++) {
        if (ar->scratch[i].b && ar->scratch[i].stream == stream)
            return i;
        if (!ar->scratch[i].b && empty < 0)
            empty = i;
    }
    return create ? empty : -1;
}

/* The stream's scratch block when it serves runs and holds bytes. */
static sn_block *sn_scratch_ready_locked(sn_arena *ar, void *stream, uint64_t bytes)
{
    int slot = sn_scratch_slot_locked(ar, stream, 0);
    if (slot < 0 || ar->scratch[slot].search)
        return NULL;
    sn_block *b = ar->scratch[slot].b;
    return b->size >= sn_round_up(bytes, ar->gran) ? b : NULL;
}

/* Takes the stream's block out of its slot; the caller waits for the
 * stream (no lock held) and then frees it with sn_scratch_free. */
static sn_block *sn_scratch_take_locked(sn_arena *ar, int slot)
{
    sn_block *b = ar->scratch[slot].b;
    if (b && !ar->scratch[slot].search)
        ar->scratch_bytes -= b->size;
    ar->scratch[slot].b = NULL;
    ar->scratch[slot].stream = NULL;
    ar->scratch[slot].search = 0;
    return b;
}

/* The stream that last used b has been waited for: nothing in flight can
 * touch it, and the next allocation of its size may have it. */
static void sn_scratch_free(sn_arena *ar, void *stream, sn_block *b)
{
    if (!b)
        return;
    sn_arena_quiet(SN_REAL(cudaStreamSynchronize)((cudaStream_t)stream));
    sn_lock_take(&ar->lock);
    while (b->busy || sn_pins(b)) {
        /* an unpin takes no lock and wakes nobody (sn_arena_release): a
         * pin is waited for by looking again, a move by the broadcast */
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 1000000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        ar->waiters++;
        sn_cond_wait(&ar->cond, &ar->lock, &until);
        ar->waiters--;
    }
    b->scratch = 0;
    b->search = 0;
    sn_block_to_free_locked(ar, b);
    sn_lock_give(&ar->lock);
}

void *sn_arena_scratch(sn_arena *ar, void *stream, uint64_t bytes, int search, uintptr_t *addr)
{
    if (!ar || ar->pool || !bytes)
        return NULL;
    uint64_t bsize = sn_round_up(bytes, ar->gran);
    sn_block *old = NULL, *b = NULL;
    sn_lock_take(&ar->lock);
    int slot = sn_scratch_slot_locked(ar, stream, 1);
    if (slot < 0 || bsize > ar->budget) {
        sn_lock_give(&ar->lock);
        return NULL;
    }
    sn_block *have = ar->scratch[slot].b;
    if (have && have->size >= bsize) {
        if (!search && ar->scratch[slot].search) {
            /* a search's block serves a run from now on */
            ar->scratch[slot].search = 0;
            have->search = 0;
            ar->scratch_bytes += have->size;
        }
        *addr = have->va;
        sn_lock_give(&ar->lock);
        return have;
    }
    if (have && (have->busy || sn_pins(have))) {
        /* in use by a call of another thread on the same stream */
        sn_lock_give(&ar->lock);
        return NULL;
    }
    old = have ? sn_scratch_take_locked(ar, slot) : NULL;
    for (int attempt = 0; attempt < 2 && !b; attempt++) {
        b = sn_block_reuse_locked(ar, bsize);
        if (!b)
            b = sn_block_new_locked(ar, bsize);
        if (!b && attempt == 0)
            sn_arena_reserve_more_locked(ar, bsize);
    }
    if (b) {
        /* the slot may have been taken meanwhile (the lock was let go) */
        slot = sn_scratch_slot_locked(ar, stream, 1);
        if (slot < 0 || ar->scratch[slot].b) {
            sn_block_to_free_locked(ar, b);
            b = NULL;
        }
    }
    if (b) {
        b->shared = 0;
        b->cls = 1;
        b->library = 0;
        b->lib_key = NULL;
        b->scratch = 1;
        b->search = (unsigned)search;
        b->nlive = 1;
        ar->scratch[slot].stream = stream;
        ar->scratch[slot].b = b;
        ar->scratch[slot].search = search;
        if (search) {
            if (b->size > ar->st.search_peak)
                ar->st.search_peak = b->size;
        } else {
            ar->scratch_bytes += b->size;
            if (ar->scratch_bytes > ar->st.scratch_peak)
                ar->st.scratch_peak = ar->scratch_bytes;
        }
        *addr = b->va;
    }
    sn_lock_give(&ar->lock);
    sn_scratch_free(ar, stream, old);
    return b;
}

void sn_arena_scratch_drop(sn_arena *ar, void *stream)
{
    if (!ar || ar->pool)
        return;
    sn_lock_take(&ar->lock);
    int slot = sn_scratch_slot_locked(ar, stream, 0);
    sn_block *b = slot >= 0 ? sn_scratch_take_locked(ar, slot) : NULL;
    sn_lock_give(&ar->lock);
    sn_scratch_free(ar, stream, b);
}

void sn_arena_scratch_fit(sn_arena *ar, void *stream, uint64_t bytes)
{
    if (!ar || ar->pool)
        return;
    uint64_t bsize = bytes ? sn_round_up(bytes, ar->gran) : 0;
    sn_spill spill = {0};
    sn_lock_take(&ar->lock);
    int slot = sn_scratch_slot_locked(ar, stream, 0);
    if (slot >= 0 && ar->scratch[slot].search) {
        /* a search in progress on the stream: not this step's to change */
        sn_lock_give(&ar->lock);
        return;
    }
    sn_block *have = slot >= 0 ? ar->scratch[slot].b : NULL;
    if (have && (have->size != bsize || !bytes) && !have->busy && !sn_pins(have)) {
        sn_scratch_take_locked(ar, slot);
        sn_lock_give(&ar->lock);
        /* nothing on the stream may still run in it; then it is unmapped
         * now, at the sync step, rather than evicted later at a step
         * whose unmapping would wait for the device again */
        sn_arena_quiet(SN_REAL(cudaStreamSynchronize)((cudaStream_t)stream));
        sn_lock_take(&ar->lock);
        int mapped = have->resident && !have->busy && !sn_pins(have);
        if (mapped)
            have->busy = 1;
        sn_lock_give(&ar->lock);
        if (mapped)
            sn_backing_unmap(&have->bk, have->va, have->bk.n);
        sn_lock_take(&ar->lock);
        if (mapped) {
            have->busy = 0;
            have->resident = 0;
            ar->resident_bytes -= have->size;
            sn_pieces_to_cache_locked(ar, &have->bk, 0, &spill);
        }
        have->scratch = 0;
        have->search = 0;
        sn_block_to_free_locked(ar, have);
        sn_cond_broadcast(&ar->cond);
    }
    sn_lock_give(&ar->lock);
    sn_spill_release(ar, &spill);
    free(spill.h);
    if (!bytes)
        return;
    /* mapped now (made first if the stream has none of this size), while
     * the device is drained anyway: the stretch's convolutions find it
     * there */
    uintptr_t addr = 0;
    sn_block *b = sn_arena_scratch(ar, stream, bytes, 0, &addr);
    if (!b)
        return;
    sn_arena_use use = {b, SN_OVERWRITE, 0, UINT64_MAX};
    sn_arena_ticket t;
    uint64_t need = 0;
    sn_arena_request rq = {.uses = &use, .nuses = 1, .stream = stream, .pos = -1};
    if (sn_arena_acquire(ar, &rq, &t, &need) == SN_ARENA_OK)
        sn_arena_release(&t);
}

uint64_t sn_arena_room(sn_arena *ar, int evicting)
{
    if (!ar || ar->pool)
        return 0;
    sn_lock_take(&ar->lock);
    uint64_t used = 0;
    for (size_t i = 0; i < ar->nblocks; i++) {
        const sn_block *b = ar->blocks[i];
        if (b->resident && !b->is_free && (!evicting || b->library || b->scratch || b->busy || sn_pins(b)))
            used += b->size;
    }
    uint64_t room = ar->budget > used ? ar->budget - used : 0;
    sn_lock_give(&ar->lock);
    return room;
}

void sn_arena_mem_info(sn_arena *ar, size_t *free_bytes, size_t *total_bytes)
{
    sn_lock_take(&ar->lock);
    uint64_t total = ar->budget;
    uint64_t used = ar->held < total ? ar->held : total;
    sn_lock_give(&ar->lock);
    if (free_bytes)
        *free_bytes = (size_t)(total - used);
    if (total_bytes)
        *total_bytes = (size_t)total;
}

/* ---- planned moves ------------------------------------------------------------------ */

/* Whether a block may be moved by the plan now: its own (not shared by
 * small allocations, not the libraries'), in use by no call, moved by no
 * other thread. */
static int sn_plan_movable_locked(const sn_block *b)
{
    return !b->busy && !b->shared && !b->library && !b->lib_key && !b->is_free && !sn_pins(b);
}

size_t sn_arena_offload(sn_arena *ar, void *const *blocks, const int *drop, size_t n)
{
    if (!ar || ar->pool || !n)
        return 0;
    enum { MAX = 64 };
    sn_block *go[MAX];
    int copy[MAX], dropping[MAX];
    size_t ngo = 0;
    sn_lock_take(&ar->lock);
    if (ar->streams_overflow) {
        /* the streams to fence cannot all be named: leave it to demand */
        ar->st.plan_skipped += n;
        sn_lock_give(&ar->lock);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        sn_block *b = blocks[i];
        if (ngo == MAX || !b || !b->resident || b->leaving || !sn_plan_movable_locked(b)) {
            ar->st.plan_skipped++;
            continue;
        }
        /* the plan's word that the contents are dead is taken only where
         * the run itself agrees (sn_predict: the same position, iterations
         * in a row): a plan learned from one iteration cannot see a buffer
         * that alternates between iterations */
        int dead = drop[i] && sn_predicted_dead_locked(b);
        int c = b->dirty && !dead;
        if (c && !b->host && sn_stage_reserve_locked(&ar->stage, b->size) != 0) {
            ar->st.plan_skipped++;
            continue;
        }
        b->busy = 1;
        go[ngo] = b;
        dropping[ngo] = dead;
        copy[ngo++] = c;
    }
    void *streams[SN_ARENA_MAX_STREAMS];
    int nstreams = ar->nstreams;
    memcpy(streams, ar->streams, sizeof streams);
    sn_lock_give(&ar->lock);
    if (!ngo)
        return 0;
    /* the copy stream waits for everything forwarded so far on the
     * framework's streams: the blocks' last uses among it */
    for (int i = 0; i < nstreams; i++) {
        cudaEvent_t e = sn_arena_event(ar);
        if (!e || SN_REAL(cudaEventRecord)(e, (cudaStream_t)streams[i]) != cudaSuccess ||
            SN_REAL(cudaStreamWaitEvent)(ar->copy_stream, e, 0) != cudaSuccess) {
            sn_arena_quiet(cudaErrorUnknown);
            sn_arena_quiet(SN_REAL(cudaDeviceSynchronize)());
        }
        sn_lock_take(&ar->lock);
        sn_arena_event_put_locked(ar, e);
        sn_lock_give(&ar->lock);
    }
    cudaEvent_t ev[MAX];
    for (size_t i = 0; i < ngo; i++) {
        sn_block *b = go[i];
        if (copy[i] && !b->host) {
            sn_lock_take(&ar->lock);
            void *h = sn_stage_take_locked(&ar->stage, b->size);
            sn_lock_give(&ar->lock);
            b->host = h ? h : sn_stage_grow(&ar->stage, &ar->lock, b->size);
            if (!b->host) {
                sn_lock_take(&ar->lock);
                sn_stage_unreserve_locked(&ar->stage, b->size);
                sn_lock_give(&ar->lock);
                copy[i] = -1; /* stays */
                continue;
            }
        }
        sn_leave_after_load(ar, b);
        if (copy[i] > 0) {
            sn_arena_quiet(SN_REAL(cudaMemcpyAsync)(b->host, (void *)b->va, b->size, cudaMemcpyDeviceToHost,
                                                    ar->copy_stream));
        }
        ev[i] = sn_arena_event(ar);
        if (ev[i] && SN_REAL(cudaEventRecord)(ev[i], ar->copy_stream) != cudaSuccess) {
            sn_arena_quiet(cudaErrorUnknown);
            sn_lock_take(&ar->lock);
            sn_arena_event_put_locked(ar, ev[i]);
            sn_lock_give(&ar->lock);
            ev[i] = NULL;
        }
        if (!ev[i]) {
            /* nothing to tell completion by: the host waits now */
            sn_arena_quiet(SN_REAL(cudaStreamSynchronize)(ar->copy_stream));
        }
    }
    size_t started = 0;
    sn_lock_take(&ar->lock);
    for (size_t i = 0; i < ngo; i++) {
        sn_block *b = go[i];
        b->busy = 0;
        if (copy[i] < 0) {
            ar->st.plan_skipped++;
            continue;
        }
        if (sn_array_room(&ar->leaving, ar->nleaving, &ar->cap_leaving, sizeof *ar->leaving, 16) != 0) {
            /* cannot be tracked: it stays (its copy, if any, is harmless) */
            if (ev[i])
                sn_arena_event_put_locked(ar, ev[i]);
            ar->st.plan_skipped++;
            continue;
        }
        ar->leaving[ar->nleaving] = b;
        __atomic_store_n(&ar->nleaving, ar->nleaving + 1, __ATOMIC_RELAXED);
        b->leaving = 1;
        b->leave_ev = ev[i];
        b->plan_drop = dropping[i] && b->dirty;
        sn_debug("planned %s %p+%llu", b->plan_drop ? "drop" : copy[i] ? "copy out" : "clean drop", (void *)b->va,
                 (unsigned long long)b->size);
        if (copy[i]) {
            b->host_valid = 1;
            b->host_pending = 1;
            ar->st.plan_offloads++;
            ar->st.plan_offload_bytes += b->size;
            ar->st.swap_out++;
            ar->st.swap_out_bytes += b->size;
        } else if (b->plan_drop) {
            ar->st.plan_drops++;
        }
        b->dirty = 0;
        started++;
    }
    sn_cond_broadcast(&ar->cond);
    sn_lock_give(&ar->lock);
    return started;
}

int sn_arena_leaving(const sn_arena *ar)
{
    return ar && !ar->pool && __atomic_load_n(&ar->nleaving, __ATOMIC_RELAXED) != 0;
}

void sn_arena_reap(sn_arena *ar, int wait)
{
    /* a racy peek: a block starting to leave now is reaped next time */
    if (!ar || ar->pool || !__atomic_load_n(&ar->nleaving, __ATOMIC_RELAXED))
        return;
    enum { MAX = 64 };
    sn_block *go[MAX];
    cudaEvent_t ev[MAX];
    size_t n = 0;
    sn_lock_take(&ar->lock);
    for (size_t i = 0; i < ar->nleaving && n < MAX; i++) {
        sn_block *b = ar->leaving[i];
        if (b->busy || sn_pins(b))
            continue;
        b->busy = 1;
        ev[n] = b->leave_ev;
        go[n++] = b;
    }
    sn_lock_give(&ar->lock);
    if (!n)
        return;
    int done[MAX];
    sn_spill spill = {0};
    for (size_t i = 0; i < n; i++) {
        cudaError_t rc = cudaSuccess;
        if (ev[i]) {
            rc = wait ? SN_REAL(cudaEventSynchronize)(ev[i]) : SN_REAL(cudaEventQuery)(ev[i]);
        }
        done[i] = rc == cudaSuccess;
        if (rc != cudaSuccess && rc != cudaErrorNotReady) {
            /* an event that cannot tell: the copy stream can */
            sn_arena_quiet(rc);
            sn_arena_quiet(SN_REAL(cudaStreamSynchronize)(ar->copy_stream));
            done[i] = 1;
        } else if (rc == cudaErrorNotReady) {
            sn_arena_quiet(rc);
        }
        if (done[i]) {
            /* (busy: its pieces are this thread's to read) */
            sn_backing_unmap(&go[i]->bk, go[i]->va, go[i]->bk.n);
        }
    }
    sn_lock_take(&ar->lock);
    for (size_t i = 0; i < n; i++) {
        sn_block *b = go[i];
        b->busy = 0;
        if (!done[i])
            continue;
        if (b->plan_drop) {
            /* the device's contents are gone and the host's older copy,
             * if any, must never come back: a read is a libsn error */
            sn_predict_dropped(&b->pred);
            b->host_valid = 0;
            ar->st.predicted_drops++;
        }
        sn_leaving_remove_locked(ar, b);
        b->host_pending = 0;
        b->resident = 0;
        ar->resident_bytes -= b->size;
        ar->st.evictions++;
        sn_pieces_to_cache_locked(ar, &b->bk, 0, &spill);
        if (b->load_ev) {
            sn_arena_event_put_locked(ar, b->load_ev);
            b->load_ev = NULL;
        }
    }
    sn_cond_broadcast(&ar->cond);
    sn_lock_give(&ar->lock);
    sn_spill_release(ar, &spill);
    free(spill.h);
}

void sn_arena_reap_all(sn_arena *ar)
{
    size_t before;
    while (ar && !ar->pool && (before = __atomic_load_n(&ar->nleaving, __ATOMIC_RELAXED)) != 0) {
        sn_arena_reap(ar, 1);
        if (__atomic_load_n(&ar->nleaving, __ATOMIC_RELAXED) >= before)
            break; /* the rest are busy or in use: next time */
    }
}

size_t sn_arena_prefetch(sn_arena *ar, void *const *blocks, size_t n)
{
    if (!ar || ar->pool || !n)
        return 0;
    sn_moves p;
    memset(&p, 0, sizeof p);
    p.prefetch = 1;
    uint64_t want = 0;
    sn_lock_take(&ar->lock);
    /* marked with a clock of their own, so that making room for them does
     * not send one of them away */
    ar->clock++;
    for (size_t i = 0; i < n; i++) {
        sn_block *b = blocks[i];
        if (!b)
            continue;
        if (b->leaving) {
            /* wanted back before it left: it stays */
            sn_cancel_leave_locked(ar, b);
            continue;
        }
        if (b->resident || !sn_plan_movable_locked(b)) {
            if (!b->resident)
                ar->st.plan_skipped++;
            continue;
        }
        if (sn_push(&p.loads, &p.nloads, &p.cap_loads, sizeof *p.loads) != 0)
            break;
        b->mark = ar->clock;
        sn_move *m = &p.loads[p.nloads - 1];
        /* mapped ahead of a use the run has shown to overwrite it all
         * without reading it (sn_predict, as a planned drop): nothing to
         * copy in, and a read before that write is caught as a read of
         * dropped contents; the host's copy, if any, stays valid */
        int dead = b->host_valid && sn_predicted_dead_locked(b);
        *m = (sn_move){.b = b, .copy = b->host_valid && !dead, .fresh = !b->host_valid || dead};
        if (dead) {
            sn_predict_dropped(&b->pred);
            ar->st.dead_loads++;
        }
        want += sn_load_from_cache_locked(ar, m);
    }
    if (!p.nloads || sn_make_room_locked(ar, &p, &want) != 0) {
        if (p.nloads) {
            ar->st.plan_skipped += p.nloads;
            sn_moves_undo_locked(ar, &p);
        }
        sn_lock_give(&ar->lock);
        sn_release_handles(p.release, p.nrelease);
        sn_spill_release(ar, &p.spill);
        sn_moves_free(&p);
        return 0;
    }
    sn_moves_reserve_locked(ar, &p, want);
    sn_lock_give(&ar->lock);
    int rc = sn_moves_run(ar, &p, NULL);
    (void)rc;
    sn_lock_take(&ar->lock);
    sn_loads_done_locked(ar, &p, NULL);
    size_t started = 0;
    for (size_t i = 0; i < p.nloads; i++)
        if (p.loads[i].bk.n && p.loads[i].copy) {
            started++;
            ar->st.plan_prefetches++;
            ar->st.plan_prefetch_bytes += p.loads[i].b->size;
        }
    sn_cond_broadcast(&ar->cond);
    sn_lock_give(&ar->lock);
    sn_spill_release(ar, &p.spill);
    sn_moves_free(&p);
    return started;
}

void sn_arena_wait_copies(sn_arena *ar)
{
    if (!ar || ar->pool)
        return;
    sn_arena_quiet(SN_REAL(cudaStreamSynchronize)(ar->copy_stream));
    sn_arena_quiet(SN_REAL(cudaStreamSynchronize)(ar->copy_in_stream));
}

void sn_arena_stats(sn_arena *ar, sn_manage_stats *out)
{
    sn_lock_take(&ar->lock);
    *out = ar->st;
    out->host_peak = ar->stage.peak;
    out->host_pinned = ar->stage.pinned;
    out->host_pin_ms = (double)ar->stage.pin_ns / 1e6;
    out->resident_now = ar->resident_bytes;
    out->va_reserved = ar->va_reserved;
    out->held_now = ar->held;
    sn_lock_give(&ar->lock);
}
