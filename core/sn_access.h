/*
 * sn_access.h — what a described call does to the allocations libsn knows:
 * each of its ranges resolved through the registry to the allocations it
 * overlaps, merged per allocation into one access (read, write, overwrite
 * of the whole allocation, scratch). Pure: registry and call in, accesses
 * out, unit-tested without CUDA.
 *
 * The result is either complete or marked incomplete, never silently
 * smaller: an access that does not fit the caller's array, a range that
 * overlaps more allocations than are looked at, an allocation the tracer
 * has no record of, and a call whose description overflowed (sn_call.h)
 * all make it incomplete. An incomplete call is opaque: once residency
 * depends on accesses, it must be treated as touching everything it might.
 *
 * Training repeats the same calls on the same memory, so each thread keeps
 * a memo of the calls it resolved (sn_access_recall / sn_access_remember):
 * keyed by a call's device, flags and described ranges, valid while the
 * registry's generation is the one it was resolved at (any allocation,
 * free or device reset changes it). A hit needs no registry lock. A
 * program that allocates between most calls (a framework allocating
 * every tensor anew each iteration) would only fill the memo: a thread
 * remembers a call only when the registry has not changed since its
 * previous call, and looks nothing up when it has.
 */
#ifndef SN_ACCESS_H
#define SN_ACCESS_H

#include <stdint.h>

#include "allocator/sn_arena.h"
#include "common/sn_call.h"
#include "core/sn_registry.h"
#include "tracer/sn_trace.h"

/* Allocations one range may overlap before the result is incomplete. */
#define SN_ACCESS_MAX_PER_RANGE 16

typedef struct sn_access_result {
    int nacc;               /* accesses written */
    int incomplete;         /* something could not be described: opaque */
    uint64_t unknown;       /* ranges that hit no known allocation */
} sn_access_result;

/* Manage mode's half of the same resolution: the arena blocks a call
 * touches on its own device, one use per block with every way it is used
 * (SN_OVERWRITE when a range covers the whole allocation). all: more than
 * fits, or a range over too many allocations: the call needs everything. */
typedef struct sn_access_uses {
    sn_arena_use *use;
    size_t cap, n;
    int all;
    /* the blocks it touches on one other device (a peer copy), the same
     * way; peer_dev -1 when none; more_devices: memory of a third device */
    int peer_dev, peer_all, more_devices;
    sn_arena_use *peer;
    size_t cap_peer, npeer;
    /* use[ws_lo, ws_hi): the blocks of the call's workspace (its range of
     * mode SN_SCRATCH), which a convolution run with another algorithm and
     * libsn's workspace does not touch */
    size_t ws_lo, ws_hi;
} sn_access_uses;

/* Resolves c's ranges into acc[0..cap). The tracer's id of an allocation is
 * its registry record's trace_id (SN_NO_TRACE_ID: no record). With uses
 * (may be NULL), in the same pass, the arena blocks of allocations libsn
 * serves. */
sn_access_result sn_access_resolve_locked(sn_registry *reg, const sn_call *c, sn_trace_access *acc,
                                          int cap, sn_access_uses *uses);

/* The memo's key of a call (which slot it goes in). */
uint64_t sn_access_key(const sn_call *c);

/* What a recall leaves for sn_access_remember. */
typedef struct sn_access_memo_ref {
    uint64_t key;       /* the call's key */
    size_t slot;        /* where it goes */
    int keep;           /* worth remembering: the registry had not changed since this
                           thread's previous call, and a slot is free for it */
} sn_access_memo_ref;

/* One call's resolution, recalled or made: what sn_access_recall fills
 * and sn_access_remember keeps. The caller sets cap, acc (its room for a
 * resolution) and uses (may be NULL: no arena blocks wanted). */
typedef struct sn_access_lookup {
    int cap;                      /* entries acc holds */
    sn_trace_access *acc;         /* the caller's, for a resolution made afresh */
    const sn_trace_access *accs;  /* the accesses found: acc, or the memo's */
    sn_access_result res;
    sn_access_uses *uses;
    uint64_t gen;                 /* the registry's generation a recall holds for */
    sn_access_memo_ref ref;       /* what a missed recall leaves for sn_access_remember */
} sn_access_lookup;

/* The accesses of a call this thread resolved before, with the same key
 * and ranges, while the registry is still at the generation it was
 * resolved at (read atomically: no lock needed). Returns 1 with l->res,
 * l->accs and l->uses (when not NULL: only results with uses of the call's
 * own device are remembered) filled and l->gen the generation they hold
 * for, 0 when not remembered. l->accs and l->uses->use then point into the
 * memo: valid until this thread remembers another call. The caller that
 * goes on to use the tracer's ids must check the generation again under
 * the device's lock: ids are released only under it, after their
 * allocation left the registry. l->ref is for sn_access_remember after a
 * miss. */
int sn_access_recall(const sn_registry *reg, const sn_call *c, sn_access_lookup *l);

/* Remembers a resolution made under the registry's lock at generation gen
 * (l->acc, l->res, l->uses) after a recall missed (l->ref: what it left).
 * Kept only when the registry was unchanged since the thread's call
 * before, and still is at gen, and only small calls: at most
 * SN_ACCESS_MEMO_RANGES ranges. */
#define SN_ACCESS_MEMO_RANGES 8
void sn_access_remember(const sn_call *c, uint64_t gen, const sn_access_lookup *l);

#endif
