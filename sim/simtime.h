/*
 * simtime.h — stream and event objects of the simulated driver and the
 * timeline entry points shared by sim/timeline.c, sim/vmm.c and sim/driver.c.
 * The runtime sees them only as opaque cudaStream_t / cudaEvent_t.
 */
#ifndef SIMGPU_SIMTIME_H
#define SIMGPU_SIMTIME_H

#include "sim/simint.h"

/* CPU cost of one API call that issues device work (a kernel launch costs a
 * few microseconds of host time on current drivers). */
#define SIM_HOST_CALL_NS 2000ull
/* CPU cost of a polling call (cudaEventQuery / cudaStreamQuery). */
#define SIM_HOST_POLL_NS 500ull

/* Streams, events and VMM allocations are validated through g_sim's live
 * handle sets, never by reading through a pointer the program passed. */
struct sim_capture;

struct CUstream_st {
    int dev;
    unsigned flags;
    int priority;
    int blocking;
    uint64_t ready;
    struct sim_capture *cap;      /* the capture under way on it (sim/graph.c) */
};

struct CUevent_st {
    int dev;
    unsigned flags;
    int recorded;
    uint64_t time;
    uint64_t capture_id;          /* last recorded inside this capture (0: outside any) */
};

struct CUstream_st *sim_stream_create(int dev, unsigned flags, int priority);
int sim_stream_destroy(struct CUstream_st *s);
/* A stream handle resolved: the stream object (NULL for the legacy default
 * stream), whether it is the legacy stream, and its device. */
struct sim_stream_ref { struct CUstream_st *s; int legacy; struct simgpu_device *d; };
/* 0 when h names a stream (special handles included), -1 when it names none.
 * The caller holds the lock, as for the two below. */
int sim_stream_lookup_locked(CUstream h, struct sim_stream_ref *r);
/* When new work may start on the stream, which is also when everything
 * issued on it so far has finished. */
uint64_t sim_stream_ready_locked(const struct sim_stream_ref *r);
void sim_stream_set_ready_locked(const struct sim_stream_ref *r, uint64_t t);
uint64_t sim_device_done_locked(int dev);
void sim_host_call_locked(void);
/* An op with no duration and no engine (a stream-ordered allocation or
 * free): it happens when the stream reaches it, and not before the host
 * issued it (the caller has charged the host's call). The ranges noted for
 * it are checked and recorded at that instant; returns it. */
uint64_t sim_marker_locked(const struct sim_stream_ref *r, const char *name);
/* A copy between devices src and dst: on r's stream, or (r NULL) after all
 * work of the current, source and destination devices and before all later
 * work on them. Returns its completion. */
uint64_t sim_enqueue_peer_locked(const struct sim_stream_ref *r, struct simgpu_device *src,
                                 struct simgpu_device *dst, double dur_ns, const char *name);

/* Host-side cost of the memory-management calls (sim/hostcost.c): a fixed
 * part per call plus a part per 2 MiB granule, 4 KiB host page or VMM
 * mapping, whichever the call scales with. */
enum sim_host_op {
    SIM_HOST_MALLOC,           /* cudaMalloc, cuMemAlloc, pitched and managed */
    SIM_HOST_FREE,             /* cudaFree, cuMemFree (after the device wait) */
    SIM_HOST_PIN,              /* cudaHostAlloc, cudaMallocHost, cuMemHostAlloc, cuMemAllocHost */
    SIM_HOST_UNPIN,            /* cudaFreeHost, cuMemFreeHost (after the device wait) */
    SIM_HOST_VMM_CREATE,       /* cuMemCreate */
    SIM_HOST_VMM_RELEASE,      /* cuMemRelease */
    SIM_HOST_VMM_RESERVE,      /* cuMemAddressReserve */
    SIM_HOST_VMM_ADDRESS_FREE, /* cuMemAddressFree */
    SIM_HOST_VMM_MAP,          /* cuMemMap */
    SIM_HOST_VMM_SET_ACCESS,   /* cuMemSetAccess (after the device wait) */
    SIM_HOST_VMM_UNMAP,        /* cuMemUnmap (after the device wait) */
    SIM_HOST_OP_COUNT
};
/* bytes: the size the call handles (0 for a call that failed for want of
 * memory, which costs the fixed part); mappings: the VMM mappings covered. */
uint64_t sim_host_cost_ns(enum sim_host_op op, size_t bytes, size_t mappings);
/* Advances the host clock by that cost; the caller holds g_sim.lock. */
void sim_host_charge_locked(enum sim_host_op op, size_t bytes, size_t mappings);
/* The implicit synchronisation of cuMemFree, cuMemFreeHost and the VMM
 * calls that change mappings: the host waits for all work issued to device
 * d, and the pool gives back what that completes (as cuCtxSynchronize). */
void sim_host_sync_device_locked(struct simgpu_device *d);

#endif
