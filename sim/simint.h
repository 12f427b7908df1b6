/*
 * simint.h — data structures private to the simulated driver: the device
 * table, address-range bookkeeping and the timeline state. Only the sources
 * of the simulated driver (SIM_DRIVER_SRC in sim/sim.mk) include it.
 */
#ifndef SIMGPU_SIMINT_H
#define SIMGPU_SIMINT_H

#include <pthread.h>
#include <stdint.h>
#include <stddef.h>
#include "sim/simcore.h"

/* Internal invariants, checked in the debug build (make DEBUG=1). */
#ifdef SN_DEBUG
#include <stdlib.h>
#define SIM_ASSERT(cond)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            simgpu_log("internal assertion failed: %s (%s:%d)", #cond, __FILE__, __LINE__);   \
            abort();                                                                          \
        }                                                                                     \
    } while (0)
#else
#define SIM_ASSERT(cond) ((void)0)
#endif

/* Free address segments, kept sorted and coalesced (first fit). */
struct sim_range { uintptr_t base; size_t size; };
struct sim_rangeset { struct sim_range *v; size_t n, cap; };
void sim_rangeset_init(struct sim_rangeset *rs, uintptr_t base, size_t size);
uintptr_t sim_rangeset_alloc(struct sim_rangeset *rs, size_t size, size_t align); /* 0 if none */
int sim_rangeset_take(struct sim_rangeset *rs, uintptr_t base, size_t size);      /* 0 ok */
void sim_rangeset_free(struct sim_rangeset *rs, uintptr_t base, size_t size);
int sim_rangeset_containing(const struct sim_rangeset *rs, uintptr_t a, uintptr_t *base, size_t *size);

/* Live extents (heap allocations, VMM mappings, reservations, pinned host
 * buffers), kept sorted by base for interior-pointer lookup. */
enum { SIM_EXT_HEAP = 1, SIM_EXT_MAP, SIM_EXT_RESERVE, SIM_EXT_PINNED, SIM_EXT_MANAGED, SIM_EXT_POOL };
/* Heap, managed and pool allocations: one allocation per extent, freed by cuMemFree. */
int sim_heap_kind(int kind);
struct sim_extent { uintptr_t base; size_t size; int kind; int prot; void *data; };
struct sim_extset { struct sim_extent *v; size_t n, cap; };
struct sim_extent *sim_extset_find(const struct sim_extset *s, uintptr_t a);
void sim_extset_insert(struct sim_extset *s, uintptr_t base, size_t size, int kind, int prot, void *data);
void sim_extset_remove(struct sim_extset *s, uintptr_t base);

/* Sets of live handles (streams, events, VMM allocations), so that a stale or
 * made-up handle is recognised without reading through it, and so that
 * everything a program never destroyed stays reachable until exit, as a
 * context keeps it. The caller holds g_sim.lock. */
struct sim_handle;
void sim_handle_add(struct sim_handle **set, const void *p);
int sim_handle_has(struct sim_handle **set, const void *p);
int sim_handle_del(struct sim_handle **set, const void *p);

/* A VMM physical allocation (cuMemCreate). */
struct sim_phys {
    int dev;
    size_t offset, size;   /* in the device's memfd */
    int maps;              /* live mappings */
    int released;          /* cuMemRelease called */
};

/* Ordering state of a device byte range: when the last write to it and the
 * last read of it complete (sim/hazard.c). */
struct sim_hz { uintptr_t base; size_t size; uint64_t w_end, r_end; };
struct sim_hzset { struct sim_hz *v; size_t n, cap; };

/* The default memory pool of a device (sim/pool.c): blocks freed in stream
 * order stay reserved until their free has completed and a synchronisation
 * or a trim gives them back. */
struct sim_pool_block { uintptr_t base; size_t size; uint64_t free_end; const void *stream; };
struct sim_pool {
    struct sim_pool_block *v;     /* freed blocks, sorted by base */
    size_t n, cap;
    size_t reserved, used, reserved_high, used_high;
    uint64_t release_threshold;
    int follow_events, opportunistic, internal_deps;
};

struct simgpu_device {
    int index;
    const simgpu_profile *prof;
    size_t capacity, used, peak;
    uintptr_t heap_base, vmm_base;
    size_t heap_span, vmm_span, phys_span;
    struct sim_rangeset heap_free, vmm_free, phys_free;
    struct sim_extset live;       /* heap allocations and VMM mappings */
    struct sim_extset reserved;   /* cuMemAddressReserve ranges */
    int memfd;
    struct sim_hzset hz;
    struct sim_pool pool;
    /* timeline */
    uint64_t engine_free[3];
    uint64_t busy_ns[3];
    uint64_t legacy_ready;        /* legacy default stream */
    uint64_t barrier;             /* no work starts before (cudaMemcpyPeer's serialisation) */
    uint64_t blocking_max;        /* max ready of blocking streams */
    uint64_t all_max;             /* max ready of every stream */
    uint64_t ops;
    uint64_t bytes_h2d, bytes_d2h, bytes_d2d;
};

struct simgpu_global {
    pthread_mutex_t lock;         /* recursive; guards everything here */
    int ndev, compute, vmm, stats;
    int standin;                  /* SIMGPU_COMPUTE=libs (compute is 1 then) */
    size_t page_size;             /* the host's, set once at initialisation */
    size_t va_span;               /* SIMGPU_VA: each device's VMM address space (0: 32 times its memory) */
    struct simgpu_device dev[SIMGPU_MAX_DEVICES];
    struct sim_extset pinned;
    struct sim_handle *streams, *events, *phys;
    struct sim_handle *ctxs, *dead_ctxs; /* cuCtxCreate'd contexts, live and destroyed */
    struct sim_handle *graphs, *graph_execs;
    int initialised;              /* cuInit has run (read and written atomically) */
    size_t pinned_bytes;
    uint64_t host_now;            /* the host clock (one per process) */
    /* SIMGPU_STATS: host time charged per memory-management call kind, and
     * host time spent waiting for a device in their implicit synchronisations;
     * the host's waits in explicit ones (SIM_WAIT_*) and its calls' fixed cost */
    uint64_t host_op_ns[16], host_op_calls[16], host_sync_wait_ns, host_syncs;
    uint64_t wait_ns[3], waits[3], host_calls;
    int hazards;                  /* SIMGPU_HAZARDS: 0 off, 1 warn, 2 fatal */
    uint64_t fault_at, allocs;    /* SIMGPU_FAULT_ALLOC: fail allocation number fault_at */
    int fault_repeat;             /* ... and every one after it ("N+") */
};
extern struct simgpu_global g_sim;

/* The explicit synchronisations SIMGPU_STATS counts the host's waits in. */
enum { SIM_WAIT_STREAM, SIM_WAIT_EVENT, SIM_WAIT_DEVICE };
/* The host waits until t in an explicit synchronisation of that kind; the
 * caller holds g_sim.lock. */
void sim_host_wait_locked(int kind, uint64_t t);

struct simgpu_device *sim_dev(int i);
struct simgpu_device *sim_device_of_locked(uintptr_t p);
/* Hazards: note an access declared by simgpu_check_range; check and record
 * the pending accesses of the op just placed at [start, end); forget a range
 * that was freed or unmapped. */
void sim_hazard_note(const void *p, size_t bytes, int write, const char *what);
void sim_hazard_commit_locked(const char *op, uint64_t start, uint64_t end);
void sim_hazard_forget_locked(struct simgpu_device *d, uintptr_t base, size_t size);
void sim_hazard_unmap_locked(struct simgpu_device *d, uintptr_t base, size_t size);
int sim_charge_locked(struct simgpu_device *d, size_t bytes);
/* Heap address space for rs bytes (a multiple of 512), charged to capacity;
 * open: make its pages accessible. 0 when the device is full. */
uintptr_t sim_heap_carve_locked(struct simgpu_device *d, size_t rs, int open);
/* Returns [a, a+rs) to the heap and uncharges it; protect: close the pages
 * no live allocation shares, so a use after free faults. */
void sim_heap_release_locked(struct simgpu_device *d, uintptr_t a, size_t rs, int protect);
/* cuMemFree without its device-wide wait, for a caller that has waited for
 * what it must (sim/pool.c). */
CUresult sim_free_unsynced(CUdeviceptr p);
/* A pool allocation of rs bytes left the pool through cuMemFree. */
void sim_pool_forget_locked(struct simgpu_device *d, size_t rs);
/* Driver preconditions (sim/context.c): CUDA_ERROR_NOT_INITIALIZED before
 * cuInit, CUDA_ERROR_INVALID_CONTEXT (or _CONTEXT_IS_DESTROYED) on a thread
 * without a usable current context. The stream form needs a context only
 * for the special handles (NULL, legacy, per-thread), which mean "the
 * current context's". */
CUresult sim_need_init(void);
CUresult sim_need_ctx(void);
CUresult sim_need_ctx_for_stream(CUstream s);
/* Device of the calling thread's current context, or -1 when it has none. */
int sim_ctx_device(void);
/* Device of context c, or -1 when c is not a usable context. */
int sim_ctx_dev_of(CUcontext c);
/* Gives back to the device the pool memory whose stream-ordered free has
 * completed by the host clock, down to the pool's release threshold: what
 * a synchronisation does (sim/pool.c). */
void sim_pool_release_completed_locked(struct simgpu_device *d);
/* SIMGPU_COMPUTE=libs: the stand-in for a launch of a kernel without a CPU
 * body (sim/standin.c), with the kernel's mangled name, its parameter
 * layout, what its name says of its parameters (NULL: nothing usable) and
 * the launch's arguments. It declares its accesses for the ordering
 * checks, so it runs before the launch's simgpu_enqueue; label names the
 * kernel in their reports and must outlive the call. */
struct simfb_param;
struct sn_ptype;
void sim_standin_run(const char *symbol, const char *label, int nparams, const struct simfb_param *layout,
                     const struct sn_ptype *sig, void **args);
/* Counts one device allocation attempt; 1 when fault injection says it must
 * fail. Caller holds g_sim.lock. */
int sim_fault_alloc_locked(void);

#endif
