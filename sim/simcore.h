/*
 * simcore.h — the simulated device's internal interface.
 *
 * The simulated driver (build/sim/libcuda.so.1) owns all device state: device
 * profiles, capacity accounting, device memory (cudaMalloc heap and VMM), the
 * timeline (streams, events, engines, the host clock) and run statistics.
 * The simulated runtime, cuDNN and cuBLAS are thin layers that validate their
 * arguments, check the device ranges they touch, do the arithmetic on the CPU
 * and charge the timeline through the simgpu_* functions declared here.
 * These names are private to sim/: nothing outside sim/ and its tests may
 * depend on them, because the real libraries do not have them.
 *
 * Execution model: work is performed immediately, in host program order, at
 * the moment it is enqueued; only its *time* is modelled. Results are
 * therefore deterministic and bit-exact, and ordering bugs that would only be
 * races on a real GPU are not detected by data (see README, "Fidelity").
 */
#ifndef SIMGPU_SIMCORE_H
#define SIMGPU_SIMCORE_H

#include <stddef.h>
#include <stdint.h>
#include <cuda.h>

#define SIMGPU_MAX_DEVICES 8
/* VMM allocation granularity: 2 MiB as on NVIDIA GPUs; SIMGPU_GRANULARITY
 * (a power of two from 64K to 2M) makes it finer, so that tests can move
 * small tensors one by one. Set once, before the first device exists. */
extern size_t simgpu_granularity;
#define SIMGPU_GRANULARITY simgpu_granularity
#define SIMGPU_PITCH_ALIGN 512                 /* row alignment of pitched allocations */

/* Performance profile of one simulated GPU model; figures and their sources
 * are listed in README.md ("Device profiles"). */
typedef struct simgpu_profile {
    const char *name;         /* k40, titanx, v100, h100 */
    const char *long_name;    /* what cudaGetDeviceProperties reports */
    size_t mem_bytes;         /* totalGlobalMem */
    double fp32_flops;        /* peak FP32 FLOP/s */
    double tf32_flops;        /* dense TF32 tensor-core FLOP/s; 0: no TF32 */
    double mem_bw;            /* device memory bandwidth, bytes/s */
    double pcie_h2d_bw;       /* host to device from pinned memory, bytes/s */
    double pcie_d2h_bw;       /* device to host into pinned memory, bytes/s */
    double pcie_pageable_bw;  /* host<->device, pageable host memory, bytes/s */
    int copy_engines;         /* 1: H2D and D2H share one engine; 2: separate */
    double launch_ns;         /* fixed device-side cost of every op */
    int cc_major, cc_minor;   /* compute capability */
    int sm_count;
    /* Fraction of the cuDNN algorithm efficiencies this GPU reaches with
     * the cuDNN generation the profile stands for (docs/sim-cudnn.md,
     * "Calibration"). */
    double conv_eff;
    /* The same for the Winograd families, whose kernels were tuned for
     * Maxwell and Pascal and gain far less on later GPUs. */
    double winograd_eff;
    /* Whether that generation has the non-fused Winograd kernels (cuDNN
     * 5.1 and later). */
    int winograd_nonfused;
} simgpu_profile;

/* Engines of the timeline. */
enum simgpu_engine { SIMGPU_COMPUTE = 0, SIMGPU_COPY_H2D = 1, SIMGPU_COPY_D2H = 2 };

/* ---- configuration and devices ---------------------------------------- */

/* Idempotent, thread-safe initialisation from SIMGPU_* variables. */
void simgpu_init(void);
int simgpu_device_count(void);
/* SIMGPU_COMPUTE (default 1): 0 with compute off, 1 with compute on and
 * with SIMGPU_COMPUTE=libs, under which the libraries and host-bodied
 * kernels compute and a kernel without a CPU body runs a stand-in
 * (simgpu_kernel_standin() is 1; docs/sim-runtime.md). */
int simgpu_compute_enabled(void);
int simgpu_kernel_standin(void);
int simgpu_vmm_supported(void);         /* SIMGPU_VMM (default 1) */
const simgpu_profile *simgpu_profile_of(int dev);
size_t simgpu_capacity(int dev);

/* cuDeviceGetAttribute's answer (runtime and driver attribute numbers agree). */
int simgpu_device_attribute(int attr, int dev);

/* The calling thread's current device: its current context's, else the one
 * cudaSetDevice last selected on the thread. */
int simgpu_current_device(void);
void simgpu_set_current_device(int dev);

/* ---- device memory ------------------------------------------------------ */

/* cudaMalloc-style allocation on dev: 256-byte aligned, size rounded up to
 * 512 bytes for accounting. Returns CUDA_ERROR_OUT_OF_MEMORY when capacity
 * would be exceeded. */
CUresult simgpu_malloc(int dev, size_t size, CUdeviceptr *out);
/* cuMemFree: the host first waits for all work on p's device, as the real
 * call does; CUDA_ERROR_INVALID_VALUE if p is unknown. */
CUresult simgpu_free(CUdeviceptr p);
void simgpu_mem_info(int dev, size_t *free_b, size_t *total_b);

/* Which device holds p (heap allocation or VMM reservation), or -1. */
int simgpu_device_of(const void *p);
/* Base and size of the heap allocation containing p (0 on success). */
int simgpu_heap_lookup(const void *p, CUdeviceptr *base, size_t *size);

/* Pinned host memory registry (cudaMallocHost / cudaHostAlloc). */
void *simgpu_host_alloc(size_t size, unsigned flags);
/* Waits for the current device's work first (cudaFreeHost's implicit
 * synchronisation); 0 ok, -1 unknown pointer. */
int simgpu_host_free(void *p);
int simgpu_is_pinned(const void *p, size_t bytes);

/* Residency check: every byte of [p, p+bytes) must be a live heap allocation
 * or a VMM mapping with the needed access (write != 0: read-write). On
 * failure it reports what was touched and kills the process with SIGSEGV, as
 * an illegal address does on a real GPU. bytes == 0 checks nothing.
 * The range is also remembered for the ordering-hazard check of the next
 * simgpu_enqueue on this thread (sim/hazard.c), so call it after argument
 * validation, for the op about to be charged; `what` must be a string that
 * outlives the call (a literal). */
void simgpu_check_range(const void *p, size_t bytes, int write, const char *what);
/* The same test without the fault: 1 if accessible. */
int simgpu_range_ok(const void *p, size_t bytes, int write);

/* ---- timeline ----------------------------------------------------------- */

/* Charge an op to stream s (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or a
 * created stream) on engine e, lasting dur_ns plus the profile's launch cost,
 * honouring stream order, legacy-default-stream synchronisation, waits on
 * events and engine occupancy. The host clock advances by the API overhead.
 * Returns the simulated completion time in ns. */
uint64_t simgpu_enqueue(CUstream s, enum simgpu_engine e, double dur_ns, const char *name);
/* Block the calling thread (in simulated time) until t_ns. */
void simgpu_host_wait_until(uint64_t t_ns);
uint64_t simgpu_host_now(void);           /* calling thread's simulated clock */
/* 0 if s is usable on the current device, CUDA_ERROR_INVALID_HANDLE if not. */
CUresult simgpu_stream_check(CUstream s);
/* Flags a stream was created with (0 for the default streams). */
unsigned simgpu_stream_flags(CUstream s);
/* Device of a stream (current device for the default streams). */
int simgpu_stream_device(CUstream s);

/* Cost-model helpers for libraries built on the sim: time in ns of moving
 * bytes through device memory, and of flops at the profile's peak times an
 * efficiency in (0, 1]. Both on the device of stream s. */
double simgpu_mem_time_ns(CUstream s, double bytes);
double simgpu_flop_time_ns(CUstream s, double flops, double efficiency);
/* The same at the TF32 tensor-core rate when tf32 is non-zero, the device
 * has one and TF32 is allowed (simgpu_tf32_allowed); else at the FP32 rate. */
double simgpu_math_time_ns(CUstream s, double flops, double efficiency, int tf32);
/* Whether FP32 work may run as TF32 at all: SIMGPU_TF32 (default 1) and the
 * real libraries' NVIDIA_TF32_OVERRIDE (0 forbids TF32 everywhere). */
int simgpu_tf32_allowed(void);

/* Charge a host<->device copy of `bytes` on engine e (SIMGPU_COPY_H2D or
 * SIMGPU_COPY_D2H) at `rate` bytes/s. While the copy engine of the other
 * direction is busy, both directions share the link: together they move
 * SIMGPU_DUPLEX_FRACTION of the sum of their one-way rates, the copy already
 * in flight keeping its rate (sim/timeline.c). Returns the completion time. */
uint64_t simgpu_enqueue_copy(CUstream s, enum simgpu_engine e, double bytes, double rate, const char *name);

/* Copies and sets with CUDA's semantics and costs, shared by the driver and
 * runtime entry points. Pointers are classified (device / pinned / pageable)
 * by address; dir_hint is 0 for "infer" or the cudaMemcpyKind the caller
 * claimed (1 H2D, 2 D2H, 3 D2D, 4 H2H), checked against the pointers.
 * sync != 0 blocks the host clock until completion (cudaMemcpy); pageable
 * host memory makes an async copy block too, as the real driver does. */
CUresult simgpu_memcpy(void *dst, const void *src, size_t bytes, int dir_hint, CUstream s, int sync);
CUresult simgpu_memcpy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t height, int dir_hint, CUstream s, int sync);
CUresult simgpu_memset(void *dst, unsigned value, size_t elem_size, size_t count, CUstream s, int sync);

/* Event and stream operations the runtime shares with the driver. */
CUresult simgpu_stream_create(CUstream *out, unsigned flags, int priority);
CUresult simgpu_stream_destroy(CUstream s);
CUresult simgpu_stream_synchronize(CUstream s);
CUresult simgpu_stream_query(CUstream s);   /* CUDA_ERROR_NOT_READY while busy */
CUresult simgpu_stream_wait_event(CUstream s, CUevent e);
CUresult simgpu_event_create(CUevent *out, unsigned flags);
CUresult simgpu_event_destroy(CUevent e);
CUresult simgpu_event_record(CUevent e, CUstream s);
/* cuEventRecordWithFlags: flags CU_EVENT_RECORD_DEFAULT or _EXTERNAL. */
CUresult simgpu_event_record_flags(CUevent e, CUstream s, unsigned flags);
CUresult simgpu_event_query(CUevent e);
CUresult simgpu_event_synchronize(CUevent e);
CUresult simgpu_event_elapsed(float *ms, CUevent start, CUevent end);
CUresult simgpu_device_synchronize(void);

/* A 2-D set (cudaMemset2D): width bytes in each of height rows pitch apart. */
CUresult simgpu_memset2d(void *dst, size_t pitch, unsigned value, size_t width, size_t height, CUstream s,
                         int sync);
/* The same with count elements of elem (1, 2 or 4) bytes in each row
 * (cuMemsetD2D8 / D2D16 / D2D32). */
CUresult simgpu_memset2d_elem(void *dst, size_t pitch, unsigned value, size_t elem, size_t count, size_t height,
                              CUstream s, int sync);
/* A copy between devices (cudaMemcpyPeer[Async]). serialize != 0: ordered
 * after all work on the current, source and destination devices and before
 * all later work on them (cudaMemcpyPeer); 0: in stream order on s. */
CUresult simgpu_memcpy_peer(void *dst, int dst_dev, const void *src, int src_dev, size_t bytes, CUstream s,
                            int serialize);

/* Managed memory (cudaMallocManaged): device memory the host may read and
 * write directly, committed even with compute off. flags as cuMemAllocManaged. */
CUresult simgpu_malloc_managed(int dev, size_t size, unsigned flags, CUdeviceptr *out);
int simgpu_is_managed(const void *p);

/* ---- stream-ordered allocation (sim/pool.c) ------------------------------ */

/* cuMemAllocAsync / cuMemFreeAsync on the device's default pool. */
CUresult simgpu_malloc_async(size_t size, CUstream s, CUdeviceptr *out);
CUresult simgpu_free_async(CUdeviceptr p, CUstream s);
/* The default pool of dev, as an opaque handle. */
void *simgpu_default_pool(int dev);
CUresult simgpu_pool_trim(void *pool, size_t keep);
/* attr: CUmemPool_attribute; value: cuuint64_t or int as the driver documents. */
CUresult simgpu_pool_get_attribute(void *pool, int attr, void *value);
CUresult simgpu_pool_set_attribute(void *pool, int attr, void *value);

/* ---- stream capture and graphs (sim/graph.c) ----------------------------- */

/* A captured operation the caller replays itself (the runtime's kernel
 * launches and host functions): run(payload, launch stream). */
typedef void (*simgpu_node_fn)(void *payload, CUstream s);
/* For work about to be issued on s: CUDA_SUCCESS and *record = 0 to do it,
 * *record = 1 to record it (s captures), or the error that refuses it. */
CUresult simgpu_capture_check(CUstream s, int *record);
/* Records a callback node; release(payload) runs when no graph needs it. */
CUresult simgpu_capture_callback(CUstream s, simgpu_node_fn run, void *payload, void (*release)(void *),
                                 const char *name);
/* For libraries that cannot capture their work (cuDNN, cuBLAS): CUDA_SUCCESS
 * when s does not capture, else an error (the capture is invalidated). */
CUresult simgpu_capture_refuse(CUstream s);
/* For calls CUDA prohibits during a capture that forbids them (cudaMalloc,
 * cudaFree, cudaDeviceSynchronize, ...): CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
 * and the capture invalidated, or CUDA_SUCCESS. */
CUresult simgpu_capture_unsafe_call(void);
CUresult simgpu_exchange_capture_mode(int *mode);
CUresult simgpu_stream_begin_capture(CUstream s, int mode);
CUresult simgpu_stream_end_capture(CUstream s, CUgraph *out);
CUresult simgpu_stream_is_capturing(CUstream s, int *status);
CUresult simgpu_graph_nodes(CUgraph g, CUgraphNode *nodes, size_t *n);
CUresult simgpu_graph_instantiate(CUgraphExec *out, CUgraph g, unsigned long long flags);
CUresult simgpu_graph_launch(CUgraphExec e, CUstream s);
CUresult simgpu_graph_destroy(CUgraph g);
CUresult simgpu_graph_exec_destroy(CUgraphExec e);

/* ---- kernels (sim/module.c) ---------------------------------------------- */

/* The one registry of launchable functions, shared by the driver's modules
 * and the runtime's registrations: a CUfunction is an entry of it. A fat
 * binary nvcc registers (its __fatBinC_Wrapper_t), as a module the runtime
 * owns; NULL when memory runs out. */
void *simgpu_fatbin_register(const void *wrapper);
void simgpu_fatbin_unregister(void *mod);
/* The kernel of host stub `stub`, device symbol `symbol` in fat binary mod
 * (registered again: started over). NULL when memory runs out. */
CUfunction simgpu_func_register_stub(const void *stub, void *mod, const char *symbol, const char *name);
/* A host function launched as a kernel (sim/simgpu.h); 0 ok, -1 refused. */
int simgpu_func_register_host(const void *fn, const char *name, int nparams, const size_t *sizes);
/* The function registered for key (a host stub or host function), or key
 * itself when it is a live CUfunction (a cudaKernel_t); NULL otherwise. */
CUfunction simgpu_func_lookup(const void *key);
/* Whether f runs a body on the CPU (else its launches are only modelled). */
int simgpu_func_has_body(CUfunction f);

/* Statistics (SIMGPU_STATS=1 prints them at exit). */
typedef struct simgpu_stats {
    uint64_t busy_ns[3];          /* per engine */
    uint64_t bytes_h2d, bytes_d2h, bytes_d2d;
    size_t peak_bytes, used_bytes;
    uint64_t ops;
    uint64_t end_ns;              /* latest completion on any engine */
} simgpu_stats;
void simgpu_get_stats(int dev, simgpu_stats *out);
void simgpu_count_bytes(int dev, int kind /* 0 h2d, 1 d2h, 2 d2d */, uint64_t bytes);

/* Error/diagnostic line on stderr with the "simgpu:" prefix. */
void simgpu_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
