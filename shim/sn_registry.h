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
#include <uthash.h>

enum sn_alloc_kind {
    SN_KIND_DEVICE = 1,   /* cudaMalloc, cuMemAlloc, pitched, async */
    SN_KIND_MANAGED = 2,  /* cudaMallocManaged */
    SN_KIND_HOST = 4,     /* pinned host memory */
    SN_KIND_MAPPING = 8,  /* a VMM range mapped with cuMemMap */
};
#define SN_KIND_ANY_DEVICE (SN_KIND_DEVICE | SN_KIND_MANAGED | SN_KIND_MAPPING)
#define SN_KIND_ANY (SN_KIND_ANY_DEVICE | SN_KIND_HOST)

enum sn_owner {
    SN_OWNER_NONE = 0,
    SN_OWNER_FRAMEWORK = 1,  /* through the runtime API */
    SN_OWNER_DRIVER = 2,     /* through the driver API (or a static runtime) */
    SN_OWNER_CUDNN = 3,      /* inside cuDNN, on its own behalf */
    SN_OWNER_CUBLAS = 4,     /* inside cuBLAS, on its own behalf */
};

typedef struct sn_alloc {
    uintptr_t base;
    uint64_t size;
    int kind;            /* enum sn_alloc_kind */
    int owner;           /* enum sn_owner */
    int dev;
    uint64_t serial;     /* order of creation, unique */
    void *user;          /* the tracer's record of this allocation */
    UT_hash_handle hh;
} sn_alloc;

typedef struct sn_phys {
    uint64_t handle;
    uint64_t size;
    int owner, dev;
    UT_hash_handle hh;
} sn_phys;

typedef struct sn_registry {
    sn_alloc *by_base;       /* uthash on base */
    sn_alloc **sorted;       /* live allocations by ascending base */
    size_t count, cap;
    sn_phys *phys;           /* uthash on handle */
    uint64_t next_serial;
    uint64_t bytes[SN_KIND_MAPPING + 1]; /* live bytes per kind */
} sn_registry;

void sn_reg_init(sn_registry *r);
void sn_reg_destroy(sn_registry *r);

/* Records [base, base+size). Allocations it overlaps are stale (freed by a
 * path libsn did not see) and are removed first; each is handed to
 * on_stale (may be NULL) before being freed. Returns the new record, or
 * NULL if out of memory. */
sn_alloc *sn_reg_add_locked(sn_registry *r, uintptr_t base, uint64_t size, int kind, int owner,
                            int dev, void (*on_stale)(sn_alloc *, void *), void *ctx);
/* The allocation starting exactly at base with a kind in kinds, or NULL. */
sn_alloc *sn_reg_exact_locked(sn_registry *r, uintptr_t base, int kinds);
/* The allocation containing addr, or NULL. */
sn_alloc *sn_reg_find_locked(sn_registry *r, uintptr_t addr);
/* Unlinks a (the caller frees it with sn_reg_release). */
void sn_reg_remove_locked(sn_registry *r, sn_alloc *a);
void sn_reg_release(sn_alloc *a);
/* Allocations overlapping [addr, addr+bytes), up to max, in address order.
 * Returns how many overlap (possibly more than max). */
size_t sn_reg_overlapping_locked(sn_registry *r, uintptr_t addr, uint64_t bytes, sn_alloc **out,
                                 size_t max);

int sn_reg_phys_add_locked(sn_registry *r, uint64_t handle, uint64_t size, int owner, int dev);
int sn_reg_phys_remove_locked(sn_registry *r, uint64_t handle);

#endif
