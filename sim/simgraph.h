/*
 * simgraph.h — stream capture and graphs inside the simulated driver, shared
 * by sim/graph.c (capture state, graphs, replay), sim/ops.c and
 * sim/timeline.c (the ops that are captured) and sim/pool.c (which refuses
 * capture).
 *
 * A graph here is the sequence of operations captured from one stream,
 * replayed in order on the launch stream: copies, sets, event records and
 * callback nodes through which the runtime captures kernel launches and
 * host functions. Work on a capturing stream is recorded, not done, as on a
 * GPU.
 */
#ifndef SIMGPU_SIMGRAPH_H
#define SIMGPU_SIMGRAPH_H

#include "sim/simint.h"

enum sim_node_kind { SIM_NODE_COPY, SIM_NODE_COPY2D, SIM_NODE_SET, SIM_NODE_SET2D, SIM_NODE_PEER,
                     SIM_NODE_EVENT, SIM_NODE_CALLBACK };

struct sim_node {
    enum sim_node_kind kind;
    const char *name;
    union {
        struct { void *dst; const void *src; size_t bytes, dpitch, spitch, width, height; int dir; } cp;
        struct { void *dst; unsigned value; size_t elem, count, pitch, width, height; } set;
        struct { void *dst; const void *src; size_t bytes; int dst_dev, src_dev; } peer;
        CUevent event;
        struct { simgpu_node_fn run; void *payload; void (*release)(void *); } cb;
    } u;
};

/* What an op about to be issued on stream h (sync: it blocks the host) must
 * do about capture. CUDA_SUCCESS with *record = 0: run it; with *record = 1:
 * h is capturing, the caller records a node (sim_capture_add) and returns
 * success. An error: the op is refused, and the capture concerned is
 * invalidated (an op on a capture already invalidated, a synchronising op on
 * a capturing stream, the legacy stream while a blocking stream of its
 * device captures). While a graph is replayed everything runs. */
CUresult sim_capture_check(CUstream h, int sync, int *record);
CUresult sim_capture_add(CUstream h, const struct sim_node *n);
/* Refuses an op that cannot be captured: invalidates h's capture and
 * returns CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; CUDA_SUCCESS when h is not
 * capturing (nor blocked by a capture). */
CUresult sim_capture_refuse(CUstream h);
/* Whether the calling thread is replaying a graph: ops then cost the host
 * nothing and never block it (the launch was the host's one call). */
int sim_replaying(void);
/* The id of the capture h belongs to (0: none), for event bookkeeping. */
uint64_t sim_capture_id_locked(CUstream h);
/* Whether capture id is still active (not ended). */
int sim_capture_active_locked(uint64_t id);
/* Invalidates capture id (no-op when it has ended). */
void sim_capture_invalidate_locked(uint64_t id);
/* Ends any capture on a stream being destroyed. */
void sim_capture_discard_locked(struct CUstream_st *s);

#endif
