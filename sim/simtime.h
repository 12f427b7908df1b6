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

#define SIM_STREAM_MAGIC 0x53494d5354524d31ull
#define SIM_EVENT_MAGIC 0x53494d4556454e54ull

struct CUstream_st {
    uint64_t magic;
    int dev;
    unsigned flags;
    int priority;
    int blocking;
    uint64_t ready;
};

struct CUevent_st {
    uint64_t magic;
    int dev;
    unsigned flags;
    int recorded;
    uint64_t time;
};

struct CUstream_st *sim_stream_create(int dev, unsigned flags, int priority);
int sim_stream_destroy(struct CUstream_st *s);
struct CUstream_st *sim_stream_resolve_locked(CUstream h, int *legacy);
uint64_t sim_stream_ready_locked(struct simgpu_device *d, struct CUstream_st *s, int legacy);
void sim_stream_set_ready_locked(struct simgpu_device *d, struct CUstream_st *s, int legacy, uint64_t t);
uint64_t sim_stream_done_locked(CUstream h);
uint64_t sim_device_done_locked(int dev);
void sim_host_call_locked(void);

#endif
