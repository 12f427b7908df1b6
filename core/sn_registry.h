/*
 * sn_registry.h — every allocation libsn knows of, found from any address
 * inside it.
 *
 * Exact base addresses are looked up in a uthash table; interior pointers
 * (a tensor inside a workspace, a view into a larger buffer, a kernel
 * argument pointing into an array) through an array of the live
 * allocations kept sorted by base address, searched by bisection. Device,
 * managed, pinned-host and VMM-mapped ranges never overlap each other, so
 * one sorted array serves them all. VMM physical handles and address
 * reservations are kept apart: they are not addressable memory.
 *
 * Functions ending in _locked expect the caller to hold sn_reg_lock (one
 * registry per process; addresses are unique across devices).
 */
#ifndef SN_REGISTRY_H
#define SN_REGISTRY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* uthash's default (Jenkins) hash costs more than the rest of a lookup; the
 * keys here are addresses and handles, which one multiply spreads well. */
static inline unsigned sn_reg_key_hash(const void *key, size_t len)
{
    uint64_t h = 0;
    const unsigned char *k = key;
    for (; len >= sizeof h; len -= sizeof h, k += sizeof h) {
        uint64_t w;
        memcpy(&w, k, sizeof w);
        h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
    }
    for (; len; len--, k++)
        h = (h ^ *k) * 0x9e3779b97f4a7c15ULL;
    return (unsigned)(h >> 32);
}
#define HASH_FUNCTION(keyptr, keylen, hashv) ((hashv) = sn_reg_key_hash((keyptr), (size_t)(keylen)))
#include <uthash.h>

#include "common/sn_kinds.h"

#define SN_NO_TRACE_ID UINT32_MAX

typedef struct sn_alloc {
    uintptr_t base;
    uint64_t size;
    int kind;            /* enum sn_alloc_kind */
    int owner;           /* enum sn_owner */
    int dev;
    uint32_t trace_id;   /* the tracer's record of this allocation, SN_NO_TRACE_ID if none */
    void *managed;       /* the allocator's record, NULL when libsn does not own the memory */
    /* device memory that holds addresses of device allocations (copied
     * there from the host): a kernel given it may reach those too.
     * stored: the addresses seen (nstored of them); nstored < 0: too many
     * to keep, the kernel is opaque */
    uintptr_t *stored;
    int nstored;
    struct sn_alloc *next_spare;
    UT_hash_handle hh;
} sn_alloc;

typedef struct sn_phys {
    uint64_t handle;
    uint64_t size;
    int owner, dev;
    UT_hash_handle hh;
} sn_phys;

/* Ranges are looked up far more often than allocations change, and a step
 * touches the same few allocations every iteration: the last allocation
 * found for an address is remembered, tagged with the registry's
 * generation (bumped by every insertion and removal). */
#define SN_REG_CACHE_SLOTS 64
typedef struct sn_reg_cached {
    uintptr_t addr;
    uint64_t gen;
    sn_alloc *alloc;
} sn_reg_cached;

typedef struct sn_registry {
    sn_alloc *by_base;       /* uthash on base */
    sn_alloc **sorted;       /* live allocations by ascending base */
    size_t count, cap;
    uint64_t gen;            /* changes with every insertion and removal */
    sn_reg_cached cache[SN_REG_CACHE_SLOTS];
    sn_alloc *spare;         /* released records, reused by insertions */
    sn_phys *phys;           /* uthash on handle */
    /* handed each allocation found stale (freed by a path libsn did not
     * see) before its record is freed; NULL: none */
    void (*on_stale)(sn_alloc *a, void *ctx);
    void *stale_ctx;
} sn_registry;

void sn_reg_init(sn_registry *r);

/* The generation now, without the lock (it only grows): whatever was
 * resolved at this generation still holds. */
static inline uint64_t sn_reg_gen(const sn_registry *r)
{
    return __atomic_load_n(&r->gen, __ATOMIC_ACQUIRE);
}
void sn_reg_destroy(sn_registry *r);
/* Something recorded of an allocation changed (not its extent): what was
 * resolved before is looked up again. */
static inline void sn_reg_touch_locked(sn_registry *r)
{
    __atomic_store_n(&r->gen, r->gen + 1, __ATOMIC_RELEASE);
}

/* Records [base, base+size). Allocations it overlaps are stale (freed by a
 * path libsn did not see) and are removed first; each is handed to
 * r->on_stale (when set) before being freed. Returns the new record, or
 * NULL if out of memory. */
sn_alloc *sn_reg_add_locked(sn_registry *r, uintptr_t base, uint64_t size, int kind, int owner, int dev);
/* The allocation starting exactly at base with a kind in kinds, or NULL. */
sn_alloc *sn_reg_exact_locked(sn_registry *r, uintptr_t base, int kinds);
/* The allocation containing addr, or NULL (the cache missed: sn_reg_find_locked). */
sn_alloc *sn_reg_find_slow_locked(sn_registry *r, uintptr_t addr);
/* Unlinks a (the caller frees it with sn_reg_release, or hands it back
 * to the registry for reuse with sn_reg_recycle_locked). */
void sn_reg_remove_locked(sn_registry *r, sn_alloc *a);
void sn_reg_release(sn_alloc *a);
void sn_reg_recycle_locked(sn_registry *r, sn_alloc *a);
/* Allocations overlapping [addr, addr+bytes), up to max, in address order.
 * Returns how many overlap (possibly more than max). bytes must not be 0. */
size_t sn_reg_overlapping_search_locked(sn_registry *r, uintptr_t addr, uint64_t bytes,
                                        sn_alloc **out, size_t max);

static inline sn_reg_cached *sn_reg_slot(sn_registry *r, uintptr_t addr)
{
    return &r->cache[((uint64_t)addr * 0x9e3779b97f4a7c15ULL) >> 58];
}

/* The cached allocation containing addr, or NULL if none is cached. */
static inline sn_alloc *sn_reg_cached_find(sn_registry *r, uintptr_t addr)
{
    const sn_reg_cached *s = sn_reg_slot(r, addr);
    return s->addr == addr && s->gen == r->gen ? s->alloc : NULL;
}

static inline void sn_reg_cache_put(sn_registry *r, uintptr_t addr, sn_alloc *a)
{
    sn_reg_cached *s = sn_reg_slot(r, addr);
    s->addr = addr;
    s->gen = r->gen;
    s->alloc = a;
}

/* The allocation containing addr, or NULL: inline, since every word of a
 * kernel's arguments is looked up, mostly the same few addresses. */
static inline sn_alloc *sn_reg_find_locked(sn_registry *r, uintptr_t addr)
{
    sn_alloc *a = sn_reg_cached_find(r, addr);
    return a ? a : sn_reg_find_slow_locked(r, addr);
}

/* Allocations overlapping [addr, addr+bytes), up to max, in address order.
 * Returns how many overlap (possibly more than max). */
static inline size_t sn_reg_overlapping_locked(sn_registry *r, uintptr_t addr, uint64_t bytes,
                                               sn_alloc **out, size_t max)
{
    if (!bytes)
        return 0;
    /* Allocations never overlap: one that holds the whole range is the only
     * one the range touches. */
    sn_alloc *a = sn_reg_cached_find(r, addr);
    if (a && bytes <= a->base + a->size - addr) {
        if (max)
            out[0] = a;
        return 1;
    }
    return sn_reg_overlapping_search_locked(r, addr, bytes, out, max);
}

int sn_reg_phys_add_locked(sn_registry *r, uint64_t handle, uint64_t size, int owner, int dev);
int sn_reg_phys_remove_locked(sn_registry *r, uint64_t handle);

#endif
