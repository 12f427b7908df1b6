/*
 * sn_stage.h — pinned host memory for the contents of blocks that are not
 * resident. Pinning is slow (the driver locks every page), so memory is
 * pinned in large slabs that are never given back during the run, and
 * host copies are carved out of them. Every byte is counted against the
 * host limit (SN_HOST_LIMIT): running out is a clean "cannot evict", never
 * a crash.
 *
 * The arena's lock protects a stage; functions ending in _locked expect
 * it held. sn_stage_grow pins a new slab with no lock held.
 */
#ifndef SN_STAGE_H
#define SN_STAGE_H

#include <stddef.h>
#include <stdint.h>

#include "common/sn_lock.h"

typedef struct sn_stage_hole {
    uint64_t off, len;
} sn_stage_hole;

typedef struct sn_stage_slab {
    char *base;
    uint64_t size;
    sn_stage_hole *holes;   /* free ranges, by offset */
    size_t nholes, cap_holes;
} sn_stage_slab;

typedef struct sn_stage {
    uint64_t limit;         /* bytes of host copies allowed */
    uint64_t reserved;      /* bytes promised to copies (reserve .. free) */
    uint64_t pinned;        /* bytes of slabs */
    uint64_t pin_ns;        /* host time the slabs took to pin (cudaHostAlloc) */
    uint64_t peak;          /* most bytes reserved at once */
    sn_stage_slab *slabs;
    size_t nslabs, cap_slabs;
} sn_stage;

/* Limit from SN_HOST_LIMIT (free: half of the machine's memory). */
void sn_stage_init(sn_stage *s);
/* Counts size bytes against the limit; -1 if they do not fit. */
int sn_stage_reserve_locked(sn_stage *s, uint64_t size);
void sn_stage_unreserve_locked(sn_stage *s, uint64_t size);
/* Host memory for a reserved copy from existing slabs, or NULL. */
void *sn_stage_take_locked(sn_stage *s, uint64_t size);
/* Pins a new slab (no lock held; takes lock to add it) and takes size
 * bytes from it; NULL if pinning fails. */
void *sn_stage_grow(sn_stage *s, sn_lock *lock, uint64_t size);
/* Gives back a copy's memory and its reservation. */
void sn_stage_free_locked(sn_stage *s, void *p, uint64_t size);

/* Pure parts, unit-tested: first fit in a slab's holes, and freeing with
 * merging of neighbours. */
int sn_stage_slab_take(sn_stage_slab *sl, uint64_t size, uint64_t *off);
int sn_stage_slab_give(sn_stage_slab *sl, uint64_t off, uint64_t size);

#endif
