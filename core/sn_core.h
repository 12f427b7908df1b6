/*
 * sn_core.h — what the wrappers hand to libsn: allocations, frees, calls
 * described as device ranges (sn_call.h) and synchronisation points.
 *
 * The core owns the allocation registry and, per device, the tracer that
 * records the call log; it resolves each range to the allocations it falls
 * in, measures each step with events on the call's own stream, and at exit
 * writes the reports. Everything here runs with the wrapper's re-entry guard
 * held, so work libsn itself does through the real CUDA functions is never
 * intercepted as the framework's.
 */
#ifndef SN_CORE_H
#define SN_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "allocator/sn_arena.h"
#include "common/sn_call.h"
#include "common/sn_stats.h"
#include "core/sn_registry.h"
#include "tracer/sn_trace.h"

/* Initialisation of the core (from sn_init_slow, mode != off). */
void sn_core_init(void);

/* A successful allocation of size bytes at p (kind: enum sn_alloc_kind;
 * managed: the arena's record when libsn served it, else NULL). */
void sn_core_note_alloc(void *p, uint64_t size, int kind, int owner, int dev, sn_arena_alloc *managed);

/* The decision point of a device allocation, before any real call: in
 * manage mode the arena serves it (SN_CORE_SERVED, *addr set and recorded)
 * or it does not fit (SN_CORE_NOMEM, one libsn: line said why); otherwise
 * SN_CORE_FORWARD: the wrapper calls the real function. */
enum { SN_CORE_FORWARD = 0, SN_CORE_SERVED = 1, SN_CORE_NOMEM = 2 };
int sn_core_alloc(uint64_t size, int kind, int owner, int dev, uintptr_t *addr);
/* Frees an allocation the arena served (its record from sn_core_free_begin). */
void sn_core_free_served(sn_alloc *a);
/* A cuDNN or cuBLAS call that creates a handle (cudnnCreate,
 * cublasCreate): the memory the library allocates inside it belongs to the
 * handle returned (NULL: the call failed). */
void sn_core_lib_scope_begin(int dev, void *handle);
void sn_core_lib_scope_end(void *handle);
/* The budget view of device memory in manage mode; 0 when it applies. */
int sn_core_mem_info(int dev, size_t *free_bytes, size_t *total_bytes);
/* Freeing p (a free, a cuMemUnmap), in two halves around the real call:
 * begin takes p's record (a known allocation of a kind in kinds, else NULL)
 * out of the registry, end forgets it (ok) or puts it back (the real call
 * failed). Record and real call are thus atomic with respect to p: another
 * thread that is handed p by an allocation in between registers it afresh
 * and keeps its record. */
sn_alloc *sn_core_free_begin(void *p, int kinds);
void sn_core_free_end(sn_alloc *a, int ok);
/* VMM bookkeeping, after the real call succeeded: a physical handle made
 * (handle, size, owner, dev) or released (handle), an address range
 * reserved (addr, size, owner) or freed (addr). Mappings are allocations
 * (sn_core_note_alloc, sn_core_free_begin). */
enum sn_vmm_event { SN_VMM_CREATE, SN_VMM_RELEASE, SN_VMM_RESERVE, SN_VMM_RESERVE_FREE };
typedef struct sn_vmm_note {
    enum sn_vmm_event what;
    uint64_t handle;   /* CREATE, RELEASE */
    uintptr_t addr;    /* RESERVE, RESERVE_FREE */
    uint64_t size;
    int owner, dev;
} sn_vmm_note;
void sn_core_note_vmm(const sn_vmm_note *n);

/* Kind of a pointer for copies: SN_KIND_HOST for pinned host memory,
 * SN_KIND_DEVICE/MANAGED/MAPPING for device memory, 0 for memory libsn does
 * not know (pageable host memory, or a device pointer it never saw). */
int sn_core_pointer_kind(const void *p);

/* Adds the ranges a kernel launch may touch: every pointer-sized word of its
 * arguments (layout from cudaFuncGetParamInfo, cached per function) that
 * points into a known device allocation makes that whole allocation read
 * and written. Marks the call opaque when the layout is unknown. */
void sn_core_describe_kernel(sn_call *c, const void *func, void **args);
/* The same for a driver launch of the CUfunction f, its arguments given
 * either as params or packed in extra's buffer (cuLaunchKernel's two
 * ways); the layout comes from cuFuncGetParamInfo. */
void sn_core_describe_cu_kernel(sn_call *c, void *f, void **params, void **extra);
/* A host-to-device copy of bytes from host into dst is about to be made:
 * device addresses among its words make dst memory that holds pointers,
 * and a kernel given it is taken to touch what they point to. */
void sn_core_note_stored(const void *dst, const void *host, uint64_t bytes);
/* Adds to c, with mode, the allocations the device addresses held by the
 * memory at array point to (a batched GEMM's array of matrices). Returns
 * -1, adding nothing, when those addresses are not known (they were not
 * copied there from the host): the caller makes the call opaque. */
int sn_core_describe_stored(sn_call *c, const void *array, unsigned mode);

/* CUDA graphs (core/sn_graphs.c). A call issued to a capturing stream is
 * forwarded untouched (it runs at the graph's launch, not now) and its
 * ranges become the graph's; a launch of a graph seen captured is
 * described by them (sn_core_describe_graph), any other launch is opaque.
 * sn_core_capture_begin is called before the real begin-capture call: in
 * manage mode it records an event on the stream, which libsn's fences wait
 * on instead of recording on a capturing stream, and returns it, to be
 * handed back with SN_GRAPH_BEGUN(stream, event, ok). */
enum sn_graph_event {
    SN_GRAPH_BEGUN,        /* a: the stream, b: sn_core_capture_begin's event */
    SN_GRAPH_BEGUN_INTO,   /* the same, capturing into an existing graph (nodes libsn did not see) */
    SN_GRAPH_ENDED,        /* a: the stream, b: the graph made (unused when !ok) */
    SN_GRAPH_INSTANTIATED, /* a: the graph, b: the executable graph */
    SN_GRAPH_CHANGED,      /* a: a graph or executable graph destroyed or changed in place */
    SN_GRAPH_NODE_CHANGED, /* a node of a graph changed in place (which graph is not known) */
};
void *sn_core_capture_begin(void *stream);
void sn_core_note_graph(int what, void *a, void *b, int ok);
int sn_core_describe_graph(sn_call *c, void *exec);

/* A convolution's substitute: the algorithm to run, and the workspace
 * (NULL: none) instead of the framework's own when ws_set. */
typedef struct sn_subst {
    int algo;
    int ws_set;
    void *ws;
    uint64_t ws_bytes;
} sn_subst;

/* A step (or transfer) is about to be forwarded / has returned. The token
 * links the two; ok is 0 when the real call failed (the step is dropped). */
typedef struct sn_step_token {
    int dev;
    int64_t index;     /* position in the device's call log, -1 if not recorded */
    int timed;         /* start was recorded; stop is recorded at the end */
    void *start, *stop;
    sn_arena_ticket held;  /* manage mode: what the call pinned resident */
    sn_arena_ticket peer_held; /* the same on another device (a peer copy) */
    uint64_t peer_need;
    /* convolutions (manage mode, SN_WORKSPACE auto or min; sn_core_call) */
    int measure;             /* the call's configuration is to be measured after it */
    sn_subst conv;           /* conv.algo >= 0: forward the call with this algorithm instead
                                (and with conv.ws when conv.ws_set); set only then */
    int64_t conv_pos;        /* where in the iteration (sn_core_conv_fallback) */
} sn_step_token;
/* Returns 0, or SN_CORE_NOMEM when manage mode cannot make the call's
 * working set resident within the budget: the wrapper then returns its
 * library's out-of-memory status without forwarding (and without
 * sn_core_call_end); a runtime call also leaves that error as the
 * runtime's last error, as a failing runtime call does. */
int sn_core_call_begin(sn_call *c, sn_step_token *t);
void sn_core_call_end(sn_call *c, sn_step_token *t, int ok);

/* A call libsn may change before it runs: a convolution, which manage
 * mode may run with the algorithm its plan chose and libsn's workspace.
 * The core makes the real call itself, through forward(args, subst): subst
 * NULL means as the framework made it, else with subst's algorithm (and
 * workspace when ws_set). forward returns 1 when the real call succeeded.
 * Should the plan's choice fail where the framework's may run, the core
 * forwards the call again as the framework made it; a convolution
 * configuration seen for the first time while profiling is measured after
 * the call (core/sn_convsearch.h; c->geom names its descriptors). Returns
 * 0 when forwarded (the status is the wrapper's, in args), or
 * SN_CORE_NOMEM as sn_core_call_begin. One crossing each way: the wrapper
 * describes and hands over, the core forwards. */
typedef int (*sn_forward_fn)(void *args, const sn_subst *subst);
int sn_core_call(sn_call *c, sn_forward_fn forward, void *args);

/* The host has waited for stream (or, all_streams, the whole device):
 * timings of steps recorded there can be read without blocking. */
void sn_core_host_synced(int dev, void *stream, int all_streams);
/* A synchronisation with the whole device is about to start (before the
 * real call): manage mode learns which calls it will cover. */
void sn_core_sync_begin(int dev);

/* Streams created non-blocking (flag 1) do not synchronise with the legacy
 * default stream; flag -1: the stream was destroyed. */
void sn_core_note_stream(void *stream, int flag);
/* The program is destroying stream: manage mode's arenas stop waiting for
 * it by name (sn_arena_forget_stream). */
void sn_core_stream_destroying(void *stream);
/* The framework recorded event on stream; cudaEventSynchronize(event)
 * later means that stream has caught up. */
void sn_core_note_event(void *event, void *stream);
void sn_core_event_synced(int dev, void *event);

/* The device was reset: everything libsn knew of it is gone. */
void sn_core_device_reset(int dev);

/* Writes the end-of-run outputs (report, timeline, plot) once, when libsn
 * is unloaded and the exit handler (which runs while CUDA still works)
 * never did: then without reading pending timings. */
void sn_core_finish_unloading(void);

#endif
