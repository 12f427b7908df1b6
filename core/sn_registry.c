/*
 * sn_registry.c — the allocation registry (see sn_registry.h). Lookups are
 * the hot path (every range of every call); insertions and removals shift
 * the sorted array, which stays small (live allocations, thousands at most)
 * and is contiguous, so memmove beats a pointer-chasing tree here.
 */
#include "core/sn_registry.h"

#include <stdlib.h>
#include <string.h>

void sn_reg_init(sn_registry *r)
{
    /* generations of different registries never meet (what was resolved
     * against one is never taken for another); cache slots start with
     * generation 0: never valid */
    static uint64_t epoch;
    memset(r, 0, sizeof *r);
    r->gen = __atomic_add_fetch(&epoch, 1ULL << 40, __ATOMIC_RELAXED);
}

void sn_reg_destroy(sn_registry *r)
{
    sn_alloc *a, *tmp;
    HASH_ITER(hh, r->by_base, a, tmp) {
        HASH_DEL(r->by_base, a);
        free(a->stored);
        free(a);
    }
    sn_phys *p, *ptmp;
    HASH_ITER(hh, r->phys, p, ptmp) {
        HASH_DEL(r->phys, p);
        free(p);
    }
    while (r->spare) {
        sn_alloc *next = r->spare->next_spare;
        free(r->spare);
        r->spare = next;
    }
    free(r->sorted);
    memset(r, 0, sizeof *r);
}

/* Index of the first allocation whose base is > addr. */
static size_t sn_reg_upper(const sn_registry *r, uintptr_t addr)
{
    size_t lo = 0, hi = r->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->sorted[mid]->base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

sn_alloc *sn_reg_find_slow_locked(sn_registry *r, uintptr_t addr)
{
    sn_alloc *a;
    HASH_FIND(hh, r->by_base, &addr, sizeof addr, a);
    if (!a) {
        size_t i = sn_reg_upper(r, addr);
        if (i == 0)
            return NULL;
        a = r->sorted[i - 1];
        if (addr - a->base >= a->size)
            return NULL;
    }
    sn_reg_cache_put(r, addr, a);
    return a;
}

sn_alloc *sn_reg_exact_locked(sn_registry *r, uintptr_t base, int kinds)
{
    sn_alloc *a;
    HASH_FIND(hh, r->by_base, &base, sizeof base, a);
    return a && (a->kind & kinds) ? a : NULL;
}

size_t sn_reg_overlapping_search_locked(sn_registry *r, uintptr_t addr, uint64_t bytes,
                                        sn_alloc **out, size_t max)
{
    size_t i = sn_reg_upper(r, addr);
    if (i > 0 && addr - r->sorted[i - 1]->base < r->sorted[i - 1]->size) {
        i--;
        sn_reg_cache_put(r, addr, r->sorted[i]);
    }
    size_t n = 0;
    uintptr_t end = addr + bytes;
    for (; i < r->count && r->sorted[i]->base < end; i++) {
        if (n < max)
            out[n] = r->sorted[i];
        n++;
    }
    return n;
}

/* The generation is read without the lock (sn_reg_gen): stored atomically. */
static void sn_reg_bump(sn_registry *r)
{
    __atomic_store_n(&r->gen, r->gen + 1, __ATOMIC_RELEASE);
}

static void sn_reg_unlink(sn_registry *r, sn_alloc *a)
{
    sn_reg_bump(r);
    HASH_DEL(r->by_base, a);
    size_t i = sn_reg_upper(r, a->base);
    /* a is the last entry with base <= a->base */
    if (i > 0 && r->sorted[i - 1] == a) {
        memmove(&r->sorted[i - 1], &r->sorted[i], (r->count - i) * sizeof r->sorted[0]);
        r->count--;
    }
}

void sn_reg_remove_locked(sn_registry *r, sn_alloc *a)
{
    sn_reg_unlink(r, a);
}

void sn_reg_release(sn_alloc *a)
{
    if (a)
        free(a->stored);
    free(a);
}

/* Allocation records are reused rather than returned to malloc: frameworks
 * that allocate per step make one insertion and one removal per tensor. */
void sn_reg_recycle_locked(sn_registry *r, sn_alloc *a)
{
    free(a->stored);
    a->stored = NULL;
    a->nstored = 0;
    a->next_spare = r->spare;
    r->spare = a;
}

sn_alloc *sn_reg_add_locked(sn_registry *r, uintptr_t base, uint64_t size, int kind, int owner, int dev)
{
    if (size == 0)
        size = 1; /* a zero-byte allocation still owns its address */
    /* Usually nothing overlaps (no free was missed) and the position found
     * here is where the new record goes. */
    size_t at = sn_reg_upper(r, base);
    int clear = (at == 0 || base - r->sorted[at - 1]->base >= r->sorted[at - 1]->size) &&
                (at == r->count || r->sorted[at]->base - base >= size);
    sn_alloc *stale[8];
    while (!clear) {
        size_t n = sn_reg_overlapping_locked(r, base, size, stale, 8);
        if (!n)
            break;
        size_t k = n < 8 ? n : 8;
        for (size_t j = 0; j < k; j++) {
            sn_reg_unlink(r, stale[j]);
            if (r->on_stale)
                r->on_stale(stale[j], r->stale_ctx);
            sn_reg_recycle_locked(r, stale[j]);
        }
    }
    if (r->count == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 256;
        sn_alloc **s = realloc(r->sorted, cap * sizeof *s);
        if (!s)
            return NULL;
        r->sorted = s;
        r->cap = cap;
    }
    sn_alloc *a = r->spare;
    if (a) {
        r->spare = a->next_spare;
        memset(a, 0, sizeof *a);
    } else if (!(a = calloc(1, sizeof *a))) {
        return NULL;
    }
    sn_reg_bump(r);
    a->base = base;
    a->size = size;
    a->kind = kind;
    a->owner = owner;
    a->dev = dev;
    a->trace_id = SN_NO_TRACE_ID;
    HASH_ADD(hh, r->by_base, base, sizeof a->base, a);
    size_t i = clear ? at : sn_reg_upper(r, base);
    memmove(&r->sorted[i + 1], &r->sorted[i], (r->count - i) * sizeof r->sorted[0]);
    r->sorted[i] = a;
    r->count++;
    return a;
}

int sn_reg_phys_add_locked(sn_registry *r, uint64_t handle, uint64_t size, int owner, int dev)
{
    sn_phys *p;
    HASH_FIND(hh, r->phys, &handle, sizeof handle, p);
    if (!p) {
        p = calloc(1, sizeof *p);
        if (!p)
            return -1;
        p->handle = handle;
        HASH_ADD(hh, r->phys, handle, sizeof p->handle, p);
    }
    p->size = size;
    p->owner = owner;
    p->dev = dev;
    return 0;
}

int sn_reg_phys_remove_locked(sn_registry *r, uint64_t handle)
{
    sn_phys *p;
    HASH_FIND(hh, r->phys, &handle, sizeof handle, p);
    if (!p)
        return -1;
    HASH_DEL(r->phys, p);
    free(p);
    return 0;
}
