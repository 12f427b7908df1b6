/*
 * sn_trace.h — the call log of one device, as the tracer records it.
 *
 * Tensors here are allocation instances (one per cudaMalloc, cuMemAlloc,
 * library-internal allocation...), identified across iterations later by
 * the analysis (sn_model.h). Calls are every intercepted device operation in
 * program order: compute steps (cuDNN, cuBLAS, kernels, device-side
 * copies and sets) and host<->device transfers, each with the tensors it
 * touched and how. The log grows until SN_TRACE_MAX_CALLS, then stops
 * recording detail (the analysis works on what it has).
 *
 * Not thread-safe: the core serialises access with its lock.
 */
#ifndef SN_TRACE_H
#define SN_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "shim/sn_call.h"

#define SN_TRACE_MAX_CALLS ((size_t)1 << 21)

/* How a call touched a tensor (after resolving ranges to allocations). */
enum sn_acc_mode {
    SN_ACC_R = 1,        /* reads */
    SN_ACC_W = 2,        /* writes */
    SN_ACC_KILL = 4,     /* writes all of it without reading: old contents dead */
    SN_ACC_SCRATCH = 8,  /* workspace use */
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
    uint64_t alloc_call;   /* calls logged before it was allocated */
    uint64_t free_call;    /* calls logged before it was freed; SN_NO_CALL while live */
    int freed;
} sn_trace_tensor;

enum sn_trace_call_flags {
    SN_TC_STEP = 1,      /* a compute step (device-side work) */
    SN_TC_TRANSFER = 2,  /* host<->device copy */
    SN_TC_OPAQUE = 4,    /* libsn could not see everything it touches */
    SN_TC_FAILED = 8,    /* the real call failed */
    SN_TC_TIMED = 16,    /* start_ms / dur_ms are measured */
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
    uint64_t workspace;
    uint64_t live_bytes;   /* device bytes allocated when the call was made */
    void *stream;
    double start_ms;       /* from the device's first recorded event */
    double dur_ms;
} sn_trace_call;

typedef struct sn_trace {
    int dev;
    sn_trace_tensor *tensors;
    size_t ntensors, cap_tensors;
    sn_trace_call *calls;
    size_t ncalls, cap_calls;
    sn_trace_access *acc;
    size_t nacc, cap_acc;
    sn_shape *shapes;
    size_t nshapes, cap_shapes;
    uint64_t live_bytes, peak_bytes;   /* device memory as allocated */
    uint64_t unknown_ranges;           /* ranges that hit no known allocation */
    int full;                          /* SN_TRACE_MAX_CALLS reached */
} sn_trace;

void sn_trace_init(sn_trace *t, int dev);
void sn_trace_destroy(sn_trace *t);

/* Records an allocation; returns its tensor id (UINT32_MAX if out of memory). */
uint32_t sn_trace_alloc(sn_trace *t, uint64_t base, uint64_t bytes, int kind, int owner, uint64_t site);
void sn_trace_release(sn_trace *t, uint32_t tensor);

/* Records a call with its resolved accesses; returns its index, or -1 when
 * the log is full. */
int64_t sn_trace_call_add(sn_trace *t, const sn_call *c, unsigned flags, const sn_trace_access *acc,
                          int nacc);
void sn_trace_call_failed(sn_trace *t, int64_t index);
void sn_trace_call_time(sn_trace *t, int64_t index, double start_ms, double dur_ms);

/* Whether device memory of this kind counts toward the device's usage. */
static inline int sn_trace_counts_memory(int kind)
{
    return kind == 1 || kind == 2 || kind == 8; /* device, managed, VMM mapping */
}

/* 1 if the steps with step numbers [from, to) (counting compute steps
 * only, failed ones included) hold both a forward-only and a backward-only
 * step: a whole training iteration, not a repeated block inside one. */
int sn_trace_has_backward(const sn_trace *t, size_t from, size_t to);

/* Signature of a call: op, hook, shapes and parameters (no addresses). */
uint64_t sn_trace_signature(const sn_call *c);

#endif
