/*
 * sn_arena.h — manage mode's mechanisms for one device: the address arena
 * (device allocations get addresses in ranges libsn reserved with
 * cuMemAddressReserve and keep them for life), physical memory behind
 * them (cuMemCreate handles mapped while resident, a cache of free handles,
 * every byte counted against the budget), the pinned host copies of what is
 * not resident, and demand residency with least-recently-used eviction.
 *
 * The unit of residency is a block: a granule-aligned address range with
 * one physical handle. An allocation of at least one granule has a block of
 * its own; smaller ones share blocks (a block leaves only when none of its
 * allocations is in use), packed by class as Dymem's GTBM does: what is
 * allocated before any iteration exists (weights, optimizer state, a
 * Caffe-style net's every buffer) apart from what is allocated per
 * iteration. Memory cuDNN and cuBLAS allocate for a handle is resident
 * during every call on that handle (the libraries touch it inside calls no
 * argument describes) and may leave between them; memory of no known
 * handle stays resident.
 *
 * Locking: each device's arena has its own lock (rank SN_RANK_ARENA), held
 * only to decide; every CUDA call (map, unmap, copies, events) is made with
 * no libsn lock held, the blocks it moves marked busy meanwhile so no other
 * thread touches them. Blocks a call uses are pinned from sn_arena_acquire
 * until sn_arena_release, so they cannot be chosen for eviction while the
 * call is being forwarded; what is already in flight on the device is
 * covered by a fence (events on every stream the framework used) before a
 * block is copied out or unmapped. Every call acquires and releases, so
 * the release takes no lock: pins are atomic, and the calls in progress
 * stand in slots a call empties by itself.
 *
 * The arena includes nothing of the tracer: core hands it allocations and
 * the ranges a call touches, already resolved.
 */
#ifndef SN_ARENA_H
#define SN_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include "common/sn_stats.h"

typedef struct sn_arena sn_arena;
typedef struct sn_arena_alloc sn_arena_alloc;  /* one allocation served by the arena */

enum sn_arena_rc {
    SN_ARENA_OK = 0,
    SN_ARENA_PASS = 1,   /* not the arena's: forward to the real function */
    SN_ARENA_NOMEM = 2,  /* does not fit the budget (or the host limit) */
    SN_ARENA_NO_SCRATCH = 3, /* the stream has no scratch block of the size asked (sn_arena_scratch makes one) */
    SN_ARENA_NO_VA = 4,  /* the driver would reserve no more address space */
};

/* Devices an arena can be set up for (SN_MAX_DEVICES, checked in sn_arena.c). */
#define SN_ARENA_DEVICES 16

/* The arenas set up so far, published once ready (never taken down): read
 * by every call, so the lookup is inline. */
extern sn_arena *sn_arena_ready[SN_ARENA_DEVICES];

sn_arena *sn_arena_of_slow(int dev);

/* The arena of device dev, set up on first use (budget, VMM support,
 * granularity, libsn's copy stream). NULL when manage mode cannot run on
 * the device: the reason is said once, and allocations pass through. */
static inline sn_arena *sn_arena_of(int dev)
{
    if ((unsigned)dev < SN_ARENA_DEVICES) {
        sn_arena *ar = __atomic_load_n(&sn_arena_ready[dev], __ATOMIC_ACQUIRE);
        if (__builtin_expect(ar != NULL, 1))
            return ar;
    }
    return sn_arena_of_slow(dev);
}

/* The arena of dev if it was set up, else NULL (never sets one up). */
static inline sn_arena *sn_arena_peek(int dev)
{
    return (unsigned)dev < SN_ARENA_DEVICES ? __atomic_load_n(&sn_arena_ready[dev], __ATOMIC_ACQUIRE) : NULL;
}

/* An allocation the arena is asked to serve:
 *   size: bytes; owner: enum sn_owner; early: no iteration has been seen yet.
 *   scoped, key: cuDNN's and cuBLAS's own allocations are mapped at once.
 *        Made outside any call on a handle (scoped 0), they stay resident
 *        for good. Made inside one (scoped), they stay pinned until
 *        sn_arena_scoped_end: filed under key, the handle (NULL: not known
 *        yet, as inside cudnnCreate; given at the end), they are then
 *        resident exactly during the calls on that handle. */
typedef struct sn_arena_alloc_request {
    uint64_t size;
    int owner;
    int early;
    int scoped;
    void *key;
} sn_arena_alloc_request;

/* Serves rq. On SN_ARENA_OK *addr is its address and *rec the arena's
 * record (kept in the registry). */
int sn_arena_alloc_bytes(sn_arena *ar, const sn_arena_alloc_request *rq, uintptr_t *addr, sn_arena_alloc **rec);
/* The call that made a scoped library allocation (its block) is over;
 * key: the handle it belongs to (NULL: none, so resident for good). */
void sn_arena_scoped_end(sn_arena *ar, void *block, void *key);
/* Frees an allocation: waits for the device as cudaFree does, keeps the
 * block mapped for reuse by the next allocation of its size. */
void sn_arena_free(sn_arena_alloc *rec);

/* How a call uses one allocation's block (sn_arena_alloc_block: blocks
 * live as long as the arena, so a use stays valid even if another thread
 * frees the allocation meanwhile). */
typedef struct sn_arena_use {
    void *block;
    unsigned mode;          /* SN_READ | SN_WRITE | SN_OVERWRITE (whole allocation) |
                               SN_ARENA_DEFINES (every byte of the range, without reading) */
    uint64_t off, len;      /* the range of the allocation it touches (len UINT64_MAX, or 0 as a
                               use made without one: all of it) */
} sn_arena_use;
/* A use's mode bit beside sn_call.h's: it writes every byte of [off, off +
 * len) without reading them (a partial overwrite; SN_OVERWRITE is the
 * whole allocation's). */
#define SN_ARENA_DEFINES 16u
/* An allocation's block: the first member of its record (an inline, so
 * that the registry's users need none of the arena's code). */
static inline void *sn_arena_alloc_block(const sn_arena_alloc *rec)
{
    return *(void *const *)rec;
}

/* What a call holds between acquire and release. The call is in progress
 * meanwhile: its stamp stands in one of the arena's in-progress slots (or,
 * when all are taken, the ticket is on the arena's list), where a device
 * synchronisation starting sees it. */
typedef struct sn_arena_ticket {
    sn_arena *ar;
    uint64_t stamp;         /* the arena's clock when it was granted */
    int slot;               /* its in-progress slot, -1 none */
    int linked;             /* on the arena's list of calls in progress (no slot was free) */
    struct sn_arena_ticket *prev, *next;
    void **blocks;          /* the pinned blocks */
    size_t nblocks;
    void *small[32];        /* storage for the common case */
    uintptr_t scratch_va;   /* the stream's scratch block, when the call was granted one */
    int restore;            /* some block was loaded without its contents, for an overwrite */
} sn_arena_ticket;

/* What a call asks sn_arena_acquire to make resident, before it runs on
 * stream (NULL: the legacy default stream).
 *   uses, nuses: the allocations it touches, and how.
 *   all: every allocation of the arena, for a call libsn cannot see
 *        through (uses are then not needed).
 *   lib_key: the cuDNN or cuBLAS handle the call is on, whose own memory
 *        it may touch, or NULL.
 *   scratch: 0, or the bytes of the stream's scratch block
 *        (sn_arena_scratch) the call needs: the block joins the call's
 *        blocks to be overwritten (t->scratch_va its address), looked up
 *        in the same hold of the lock.
 *   pos: where the call stands in the learned iteration (the tracer's
 *        position; -1 off the sequence or while profiling): what follows
 *        each block's use at a position is learned, and contents always
 *        overwritten whole before they are read again may be dropped
 *        rather than written back (SN_PREDICTED_DEAD). 0 is a position:
 *        a request off the sequence says -1. */
typedef struct sn_arena_request {
    const sn_arena_use *uses;
    size_t nuses;
    int all;
    void *lib_key;
    uint64_t scratch;
    void *stream;
    int64_t pos;
} sn_arena_request;

/* Makes everything rq names resident and current. Returns SN_ARENA_OK
 * with the blocks pinned until sn_arena_release, or SN_ARENA_NOMEM when
 * the call's working set cannot fit the budget (*need: the bytes it needs
 * resident at once), or SN_ARENA_NO_SCRATCH, with nothing done, when the
 * stream has no scratch block of rq->scratch bytes yet. */
int sn_arena_acquire(sn_arena *ar, const sn_arena_request *rq, sn_arena_ticket *t, uint64_t *need);
/* The call failed (or was not run): the blocks loaded empty for it,
 * because it was to overwrite them whole, get their contents back from
 * their host copies. Call before sn_arena_release, with no lock held. */
void sn_arena_call_failed(sn_arena_ticket *t);

/* The call has returned: its blocks are unpinned and it leaves the slots,
 * without the arena's lock (pins are atomic; whoever decides on a block
 * under the lock reads them). */
void sn_arena_release(sn_arena_ticket *t);

/* A call on stream that needs nothing resident is about to be forwarded:
 * the stream is the program's, and a cudaFree waits for it as for those
 * of the calls sn_arena_acquire saw. */
void sn_arena_note_stream(sn_arena *ar, void *stream);

/* The program destroyed stream: it leaves the list a cudaFree waits for
 * (the handle may be reused or invalid), and work it may still have
 * queued is covered by a wait for the whole device at the next free
 * instead, until a device synchronisation covers it. */
void sn_arena_forget_stream(sn_arena *ar, void *stream);

/* The host synchronises with the whole device: sync_begin before the real
 * call (what it will cover: every call forwarded by then), device_synced
 * after it returned, with that value. */
uint64_t sn_arena_sync_begin(sn_arena *ar);
void sn_arena_device_synced(sn_arena *ar, uint64_t covered);

/* Budget view for cudaMemGetInfo / cuMemGetInfo. */
void sn_arena_mem_info(sn_arena *ar, size_t *free_bytes, size_t *total_bytes);

/* Reads the swap-in stall timings pending (wait: for all of them, as at
 * exit; else those complete by now). No lock held. */
void sn_arena_harvest(sn_arena *ar, int wait);

/* Statistics for the report (a copy, taken under the arena's lock). */
void sn_arena_stats(sn_arena *ar, sn_manage_stats *out);

/* The host waits until every copy the arena has issued has completed (its
 * device must be current): for a call on another device's stream, which
 * cannot be made to wait on this arena's events. */
void sn_arena_wait_copies(sn_arena *ar);

/* Scratch device memory of libsn's own for work it adds on stream: the
 * workspace of a convolution whose planned algorithm needs more than the
 * framework's buffer, or the operands and workspace of an algorithm
 * search (search = 1; sn_arena_scratch_drop gives it back after). One
 * block per stream, of at least bytes (whole granules), whose contents are
 * never kept: never copied in or out, left out of the calls libsn cannot
 * see through, and evicted like any other block between its uses (first,
 * as it is the least recently used). A call makes it resident with a use
 * of mode SN_OVERWRITE in sn_arena_acquire; only the stream's own work
 * touches it, so stream order keeps its uses apart. A block too small is
 * replaced: the host waits for the stream before the old one may serve
 * anything else. Returns the block with *addr its address, or NULL (more
 * than the budget, no VMM, every slot taken by other streams, or the
 * stream's block in use by another thread's call). */
void *sn_arena_scratch(sn_arena *ar, void *stream, uint64_t bytes, int search, uintptr_t *addr);
void sn_arena_scratch_drop(sn_arena *ar, void *stream);
/* A gathered plan's sync step: the stream's scratch for runs becomes
 * bytes (0: none), the old block unmapped and the new one mapped now,
 * where the device is waited for anyway. */
void sn_arena_scratch_fit(sn_arena *ar, void *stream, uint64_t bytes);
/* What the budget has left beside the blocks of live allocations mapped
 * now (cached handles and mapped free blocks count as room); evicting:
 * beside the blocks that cannot leave now (library memory, scratch, blocks
 * in use or moving), the rest being evicted to make the room. */
uint64_t sn_arena_room(sn_arena *ar, int evicting);

/* Planned moves (the plan executor, manage/sn_exec.c). None waits for the
 * device; each skips (and counts) a block it cannot move now: in use by a
 * call, moved by another thread, shared by small allocations, the
 * libraries' own.
 *
 * sn_arena_offload starts sending blocks[i] away: once the work forwarded
 * so far on the framework's streams is done (a fence on the device), the
 * copy stream copies it to pinned host memory, or copies nothing when
 * drop[i] says its contents are dead. The block stays mapped ("leaving")
 * until that is done; a call that uses it meanwhile keeps it, its stream
 * waiting for the copy. Returns how many were started.
 *
 * sn_arena_reap unmaps the leaving blocks whose copies are done (wait: all
 * of them, waiting for their copies), keeping their handles for reuse.
 *
 * sn_arena_prefetch starts bringing blocks back: room is made (leaving
 * blocks first, waiting for their copies, then the least recently used),
 * each is mapped and copied in on the copy stream, and the first call that
 * uses it waits for its copy on the device. Returns how many copies were
 * started; a block there is no room for is left to demand. */
size_t sn_arena_offload(sn_arena *ar, void *const *blocks, const int *drop, size_t n);
void sn_arena_reap(sn_arena *ar, int wait);
/* Unmaps every leaving block that is not in use, waiting for its copy: a
 * gathered plan's sync step (one wait for the device serves them all). */
void sn_arena_reap_all(sn_arena *ar);
/* Whether blocks are leaving (a racy peek: one starting to leave now is
 * seen next time), i.e. whether sn_arena_reap has anything to look at. */
int sn_arena_leaving(const sn_arena *ar);
size_t sn_arena_prefetch(sn_arena *ar, void *const *blocks, size_t n);

#endif
