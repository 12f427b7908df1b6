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
 * touches on its own device, with how (SN_OVERWRITE when a range covers
 * the whole allocation). all: more than fits, or a range over too many
 * allocations: the call needs everything. */
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

#endif
