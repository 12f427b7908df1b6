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

#endif
