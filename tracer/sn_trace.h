/*
 * sn_trace.h — the call log of one device, as the tracer records it, and
 * the running statistics of the whole run.
 *
 * Tensors here are allocation instances (one per cudaMalloc, cuMemAlloc,
 * library-internal allocation...), identified across iterations later by
 * the analysis (sn_model.h). Calls are every intercepted device operation in
 * program order: compute steps (cuDNN, cuBLAS, kernels, device-side
 * copies and sets) and host<->device transfers, each with the tensors it
 * touched and how.
 *
 * The log is what the profile is made of, so it is recorded only until the
 * profile is complete: then sn_trace_follow switches the trace to following
 * the learned iteration with a cursor (sn_period.h), and from there on a
 * call costs no memory, only counters. A program whose iteration is never
 * learned stops being recorded when the log reaches max_bytes (one
 * warning). Either way the counters in `run` (and live_bytes, peak_bytes,
 * unknown_ranges) keep covering the whole run, and allocation records stop
 * accumulating: records made after the log stopped serve only to account
 * live memory and are recycled when freed.
 *
 * Learning anew (manage mode, relearn_iters > 0): when relearn_iters
 * iterations' worth of steps pass without a complete iteration of the
 * learned sequence (a changed batch size, not a brief evaluation pass), the
 * trace records again, appending to the log from log_begin, and the owner
 * profiles the new iteration as it did the first; the learned one is still
 * followed underneath. If it comes back (a whole iteration of it) before a
 * new one is learned, the new part of the log is dropped and the trace
 * follows it again; if the log fills up first, the same, and no re-learning
 * happens after that. The model is always made from the log from
 * log_begin on.
 *
 * Not thread-safe: the core serialises access with its lock.
 */
#ifndef SN_TRACE_H
#define SN_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "common/sn_call.h"
#include "common/sn_kinds.h"
#include "common/sn_stats.h"
#include "tracer/sn_period.h"

/* Default cap on the recorded log (calls, their accesses and shapes, and
 * allocation records): about 400,000 calls, dozens of iterations of the
 * largest networks, far more than a profile needs. */
#define SN_TRACE_MAX_BYTES ((size_t)64 << 20)

/* How a call touched a tensor (after resolving ranges to allocations). */
enum sn_acc_mode {
    SN_ACC_R = 1,        /* reads */
    SN_ACC_W = 2,        /* writes */
    SN_ACC_KILL = 4,     /* writes all of it without reading: old contents dead */
    SN_ACC_SCRATCH = 8,  /* workspace use */
    SN_ACC_IN = 16,      /* a kernel's: through a parameter declared a pointer to const */
    SN_ACC_OUT = 32,     /* a kernel's: through a parameter it may write through */
};

typedef struct sn_trace_access {
    uint32_t tensor;
    uint8_t mode;
} sn_trace_access;

#define SN_NO_CALL UINT64_MAX

typedef struct sn_trace_tensor {
    uint64_t base, bytes;
    int kind, owner;
    uint64_t site;         /* call-path hash of the allocation, 0 if unknown */
    const void *lib_key;   /* library memory: the handle it belongs to (made by its create call or
                              inside a call on it), NULL if none is known */
    uint64_t alloc_call;   /* calls logged before it was allocated */
    uint64_t free_call;    /* calls logged before it was freed; SN_NO_CALL while live */
    int freed;
    uint32_t next_free;    /* live-only records: the next recycled one */
} sn_trace_tensor;

enum sn_trace_call_flags {
    SN_TC_STEP = 1,      /* a compute step (device-side work) */
    SN_TC_TRANSFER = 2,  /* host<->device copy */
    SN_TC_OPAQUE = 4,    /* libsn could not see everything it touches */
    SN_TC_FAILED = 8,    /* the real call failed */
    SN_TC_TIMED = 16,    /* start_ms / dur_ms are measured */
    SN_TC_HOST_PINNED = 32, /* a transfer from or to pinned host memory */
};

typedef struct sn_trace_call {
    uint16_t op, hook;
    uint8_t flags;
    uint8_t nshapes;
    uint16_t nacc;
    uint32_t acc_begin;
    uint32_t shape_begin;
    int32_t algo;
    uint64_t sig;          /* op, shapes and parameters: what repeats each iteration */
    uint64_t conf;         /* convolution configuration (sn_call.conf), 0 if none */
    uint64_t workspace;
    uint64_t live_bytes;   /* device bytes allocated when the call was made */
    void *stream;
    const void *lib_key;   /* the cuDNN, cuBLAS or cuRAND handle whose own memory the call may use
                              (sn_call.lib_memory), NULL if none */
    double start_ms;       /* from the device's first recorded event */
    double dur_ms;
} sn_trace_call;

enum sn_trace_state {
    SN_TRACE_RECORDING,   /* appending every call to the log */
    SN_TRACE_FOLLOWING,   /* the iteration is known: counting and following it */
    SN_TRACE_FULL,        /* the log reached max_bytes first: counting only */
};

/* The whole run, whatever the state. */
typedef struct sn_trace_stats {
    uint64_t calls;                  /* every call, failed ones included */
    uint64_t steps, transfers;       /* those that succeeded */
    uint64_t failed, opaque;         /* calls that failed; calls not seen through */
    uint64_t iterations;             /* FOLLOWING: iterations completed in the run */
    uint64_t off_sequence;           /* steps off the learned iteration (following it,
                                        or while learning anew) */
    int64_t position;                /* where the latest call stands in the iteration:
                                        2 * step for a step, 2 * step + 1 for a call
                                        before that step; -1 off the sequence or
                                        while profiling */
    uint64_t alloc_count[SN_OWNER_COUNT], alloc_bytes[SN_OWNER_COUNT];   /* allocations made, by owner */
} sn_trace_stats;

/* One way to run a convolution configuration, as libsn measured it
 * (manage mode, SN_WORKSPACE auto or min): the library's algorithm number,
 * its time as the library's own search timed it, the workspace it needs,
 * and whether the library calls it deterministic. */
typedef struct sn_trace_algo {
    int32_t algo;
    int32_t deterministic;
    double ms;
    uint64_t workspace;
} sn_trace_algo;

typedef struct sn_trace_algos sn_trace_algos; /* the measured configurations (sn_trace.c) */

/* What sn_trace_call_add returns for a call it counted but did not log. */
#define SN_TRACE_UNRECORDED ((int64_t)-2)

typedef struct sn_trace {
    int dev;
    sn_manage_stats manage;            /* what manage mode did (filled at exit) */
    int state;                         /* enum sn_trace_state */
    size_t max_bytes;                  /* cap on the recorded log */
    sn_trace_tensor *tensors;
    size_t ntensors, cap_tensors;
    sn_trace_call *calls;
    size_t ncalls, cap_calls;
    sn_trace_access *acc;
    size_t nacc, cap_acc;
    sn_shape *shapes;
    size_t nshapes, cap_shapes;
    /* records [0, recorded_tensors) belong to the log; later ones are
     * live-only and recycled through free_tensor */
    size_t recorded_tensors;
    uint32_t free_tensor;
    uint64_t live_bytes, peak_bytes;   /* device memory as allocated */
    uint64_t unknown_ranges;           /* ranges that hit no known allocation */
    sn_trace_stats run;
    sn_cursor cursor;                  /* FOLLOWING: where the run is in the iteration */
    sn_trace_algos *algos;             /* convolution algorithms measured, by configuration */
    size_t nconf;                      /* configurations measured (some may have no algorithm) */
    /* learning anew (see above) */
    uint64_t relearn_iters;            /* set by the owner; 0: never */
    int relearning;                    /* recording again, the learned iteration followed underneath */
    size_t log_begin;                  /* the call the log of the iteration learned (or being
                                          learned) begins at */
    size_t prev_log_begin, relearn_acc, relearn_shapes, relearn_tensors;  /* to go back */
    uint64_t relearn_begun, relearned; /* re-learnings begun, and completed */
    unsigned events;                   /* enum sn_trace_event, for the owner to take */
} sn_trace;

/* What changed at a call, taken (and cleared) by the owner. */
enum sn_trace_event {
    SN_TRACE_EV_RELEARN = 1,   /* recording again to learn the iteration anew */
    SN_TRACE_EV_RETURNED = 2,  /* the learned iteration came back (or the log filled up):
                                  following it again, the new recording dropped */
};

void sn_trace_init(sn_trace *t, int dev);
void sn_trace_destroy(sn_trace *t);

/* Records an allocation; returns its tensor id (UINT32_MAX if out of memory). */
uint32_t sn_trace_alloc(sn_trace *t, uint64_t base, uint64_t bytes, int kind, int owner, uint64_t site);
void sn_trace_release(sn_trace *t, uint32_t tensor);
/* Ties library memory (tensor, live at base) to the handle it belongs to:
 * known only once the call that made it (cudnnCreate, cublasCreate)
 * returns. Ignored when the record was freed or reused meanwhile. */
void sn_trace_tensor_key(sn_trace *t, uint32_t tensor, uint64_t base, const void *key);

/* Counts a call and, while recording, logs it with its resolved accesses;
 * returns its index in the log, or SN_TRACE_UNRECORDED when it was only
 * counted (following, the log full, or no memory to grow it). */
int64_t sn_trace_call_add(sn_trace *t, const sn_call *c, unsigned flags, const sn_trace_access *acc,
                          int nacc);
/* The call call_add returned index for (with these flags) failed. */
void sn_trace_call_failed(sn_trace *t, int64_t index, unsigned flags);
void sn_trace_call_time(sn_trace *t, int64_t index, double start_ms, double dur_ms);

/* The profile is complete: stop recording and follow the iteration
 * sig[0..period) from position pos (synced = 0: from its next first step),
 * iterations having been completed so far (learning anew: in the new
 * recording, added to the run's count). Returns -1 (t keeps recording)
 * when t is not recording or out of memory. sn_model_follow finds the
 * arguments in the log. */
int sn_trace_follow(sn_trace *t, const uint64_t *sig, size_t period, size_t pos, int synced,
                    uint64_t iterations);

/* Convolution algorithms by configuration (sn_call.conf), measured once
 * each while the log is recorded. claim returns 1 when the caller is to
 * measure conf now (it is then marked as being measured), 0 when it is
 * measured, being measured, or the log is no longer recorded (or out of
 * memory). put stores what the caller measured (n >= 0, copied; n = 0:
 * nothing could be measured, which is not tried again), or with n < 0
 * gives the claim back so that the next call of conf tries again. get
 * returns the algorithms measured for conf (*n of them), NULL when none. */
int sn_trace_algos_claim(sn_trace *t, uint64_t conf);
void sn_trace_algos_put(sn_trace *t, uint64_t conf, const sn_trace_algo *a, int n);
const sn_trace_algo *sn_trace_algos_get(const sn_trace *t, uint64_t conf, int *n);

/* Bytes the recorded log holds. */
size_t sn_trace_log_bytes(const sn_trace *t);

/* A re-learning in progress is given up: the log as it was when it began,
 * the learned iteration followed again (SN_TRACE_EV_RETURNED). No-op when
 * none is. */
void sn_trace_relearn_abandon(sn_trace *t);

/* Whether device memory of this kind counts toward the device's usage. */
static inline int sn_trace_counts_memory(int kind)
{
    return (kind & SN_KIND_ANY_DEVICE) != 0;
}

/* 1 if the steps with step numbers [from, to) (counting compute steps
 * only, failed ones included, from log_begin) hold both a forward-only and
 * a backward-only step: a whole training iteration, not a repeated block
 * inside one. */
int sn_trace_has_backward(const sn_trace *t, size_t from, size_t to);

/* Whether the profile may end with the iteration per found in the step
 * signatures sig[0..n): it holds a whole training iteration
 * (sn_trace_has_backward over its last period) and every step after it
 * continues it. Steps that break the period after it (an evaluation pass
 * every few iterations) say the iteration is longer than the period
 * found so far: the profile goes on until the longer one repeats. */
int sn_trace_profile_ready(const sn_trace *t, const uint64_t *sig, size_t n, const sn_period *per);

/* Signature of a call: op, hook, shapes and parameters (no addresses). */
uint64_t sn_trace_signature(const sn_call *c);

#endif
