/*
 * sn_gtbm.h — where in a pool each allocation goes: Dymem's Group Tensors
 * By Mobility (GTBM) placement, with plain best fit and first fit beside it
 * for comparison. Pure bookkeeping over offsets: no device memory is touched,
 * so the arena that backs a pool with real (or VMM-mapped) memory and the
 * benchmark that replays recorded allocation traces share one engine.
 *
 * GTBM keeps tensors that behave alike together so that free space stays in
 * few large pieces:
 *   - MOVABLE tensors (one consumer: most feature maps, workspaces) are
 *     placed from the low end of the main space, first fit by address;
 *   - TEMP tensors, held longer (fork and join outputs, gradients that
 *     several layers add into), from the high end, first fit downwards;
 *   - LONG tensors (weights, optimizer state, small buffers) go to a
 *     separate incremental space that only grows, best fit inside it.
 * The two ends never interleave: the free span between them (the gap) is
 * what both sides grow into.
 *
 * Offsets below the capacity are in the main space; the incremental space
 * has its own range starting at the capacity, so a backing store reserves
 * sn_gtbm_reserve_size() bytes of address space and backs what is used. The
 * capacity bounds the memory in use: the low side's extent, the high side's
 * and the incremental space's size together never exceed it.
 *
 * Not thread-safe: the caller serialises access to a pool.
 */
#ifndef SN_GTBM_H
#define SN_GTBM_H

#include <stdint.h>

/* the classes, SN_GTBM_SMALL and the classifier, shared with the planner */
#include "common/sn_gtbm_class.h"

enum sn_gtbm_policy {
    SN_GTBM_POLICY_GTBM,
    SN_GTBM_POLICY_BEST_FIT,  /* one free list, smallest block that fits, lowest address on ties */
    SN_GTBM_POLICY_FIRST_FIT, /* one free list, lowest address that fits */
    SN_GTBM_POLICY_COUNT
};

/* cudaMalloc's alignment: every size is rounded up to it, every offset is a
 * multiple of it. */
#define SN_GTBM_ALIGN 256u

/* sn_gtbm_alloc's answer when nothing fits. */
#define SN_GTBM_NONE UINT64_MAX

struct sn_gtbm_live;
struct sn_gtbm_node;

typedef struct sn_gtbm_space {
    struct sn_gtbm_node *by_addr; /* free blocks by start; subtree maxima of sizes */
    struct sn_gtbm_node *by_size; /* the same blocks by (size, start) */
    uint64_t nblocks, bytes;
} sn_gtbm_space;

typedef struct sn_gtbm_pool {
    uint64_t capacity;
    enum sn_gtbm_policy policy;
    sn_gtbm_space main_free; /* [0, capacity) */
    sn_gtbm_space inc_free;  /* [capacity, capacity + inc_size) */
    uint64_t inc_size;
    /* Live low-side blocks all end at or below low_top, live high-side
     * blocks all start at or above high_bottom, and [low_top, high_bottom)
     * is free. best fit and first fit place everything on the low side. */
    uint64_t low_top, high_bottom;
    struct sn_gtbm_live *live; /* by offset */
    uint64_t live_bytes, live_count;
    uint64_t peak_extent, frag_at_peak, live_at_peak;
    uint64_t nallocs, nfrees, nfailed;
    uint64_t rng;
    struct sn_gtbm_node *spare; /* freed nodes kept for reuse */
    unsigned nspare;
} sn_gtbm_pool;

typedef struct sn_gtbm_stats {
    uint64_t capacity;
    uint64_t live_bytes;     /* held by live allocations (aligned sizes) */
    uint64_t live_count;
    uint64_t extent;         /* memory the pool needs now: low side + high side + incremental */
    uint64_t peak_extent;    /* the largest extent so far (high-water mark) */
    uint64_t frag_at_peak;   /* extent - live bytes when the peak was last raised */
    uint64_t live_at_peak;
    uint64_t free_in_extent; /* extent - live bytes now: holes no request filled */
    uint64_t largest_free;   /* the largest request of some class that would succeed now */
    uint64_t incremental;    /* size of the incremental space */
    uint64_t free_blocks;    /* free blocks in both spaces, the gap included */
    uint64_t nallocs, nfrees, nfailed;
} sn_gtbm_stats;

/* capacity is rounded down to SN_GTBM_ALIGN. Returns 0, or -1 for an
 * unknown policy or a capacity too small or too large to address
 * (offsets must stay below SN_GTBM_NONE / 2). */
int sn_gtbm_init(sn_gtbm_pool *p, uint64_t capacity, enum sn_gtbm_policy policy);
void sn_gtbm_destroy(sn_gtbm_pool *p);

/* The offset of a new block of at least size bytes, or SN_GTBM_NONE when
 * nothing fits (size 0 never fits). The class matters under the GTBM policy
 * only. */
uint64_t sn_gtbm_alloc(sn_gtbm_pool *p, uint64_t size, enum sn_gtbm_class cls);
/* 0, or -1 when offset is not the start of a live block. */
int sn_gtbm_free(sn_gtbm_pool *p, uint64_t offset);
/* The aligned size of the live block at offset, 0 if there is none. */
uint64_t sn_gtbm_size(const sn_gtbm_pool *p, uint64_t offset);

void sn_gtbm_stats_get(const sn_gtbm_pool *p, sn_gtbm_stats *out);
/* Address space a backing store reserves for the pool's offsets. */
uint64_t sn_gtbm_reserve_size(const sn_gtbm_pool *p);

/* Verifies every invariant (free and live blocks tile each space exactly,
 * free blocks are merged, both indexes agree, the ends are where the live
 * blocks say). 0 when consistent; O(n log n), for tests. */
int sn_gtbm_check(const sn_gtbm_pool *p);

const char *sn_gtbm_policy_name(enum sn_gtbm_policy p);
/* Accepts the names sn_gtbm_policy_name gives ("gtbm", "best-fit",
 * "first-fit"); -1 for anything else. */
int sn_gtbm_policy_parse(const char *name);

#endif
