/*
 * sn_model.h — what the tracer learns from a device's call log: the
 * training iteration (its period in steps and how many were seen), each
 * step's phase (forward, backward, update), the layers and the graph that
 * connects them (producer/consumer through tensors, forks and joins), every
 * tensor's kind and lifetime, per-step timings, and device memory per step
 * as-is and under the what-if strategies of sn_whatif.h.
 *
 * A pure function of the log (no CUDA), so it is tested on hand-made logs.
 * How layers are recognised (docs/libsn.md has the long version):
 *  - the iteration is cut so that it begins with the forward pass: after the
 *    steps that depend on backward results (the weight update);
 *  - forward steps are grouped into layers by their kind (a convolution, a
 *    GEMM, a pooling...) and the tensor they write; helper steps (bias add,
 *    memset) join the layer whose output they write, or the next one;
 *  - backward steps are grouped by kind and the gradient they read, and
 *    matched to forward layers in reverse order;
 *  - the copies into device memory that open the iteration form the data
 *    layer.
 */
#ifndef SN_MODEL_H
#define SN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "tracer/sn_trace.h"

enum sn_role { SN_ROLE_WEIGHT, SN_ROLE_WEIGHT_GRAD, SN_ROLE_FEATURE, SN_ROLE_GRADIENT,
               SN_ROLE_WORKSPACE, SN_ROLE_OTHER, SN_ROLE_COUNT };
enum sn_phase { SN_PHASE_FORWARD, SN_PHASE_BACKWARD, SN_PHASE_UPDATE };

typedef struct sn_model_step {
    uint64_t call;       /* index in the trace's call log */
    int phase;
    int layer;           /* layer the step belongs to, -1 for update steps */
    int group;           /* working-set group: one per layer pass, per update step */
    double ms;           /* mean device time over the periodic iterations, -1 unknown */
    uint64_t mem_asis;   /* device memory allocated when it ran */
    uint64_t mem_live, mem_conv, mem_all;
} sn_model_step;

typedef struct sn_model_layer {
    char type[16];
    int cls;
    int first, last;           /* forward steps (iteration positions) */
    int nfwd, nbwd;            /* steps in each pass */
    int bwd_first, bwd_last;   /* backward steps, -1 without a backward pass */
    uint64_t main_call;        /* the call that defines the layer */
    int in_begin, nin;         /* producing layers, in edge_layer[] */
    int nout;                  /* tensors it produces that other layers read */
    int consumers;             /* distinct layers reading them */
    int fork, join;
    double fwd_ms, bwd_ms;
    int out_tensor;            /* model tensor of its main output, -1 */
} sn_model_layer;

typedef struct sn_model_tensor {
    uint32_t id;               /* trace tensor */
    uint64_t bytes;
    int role;
    int carried;               /* its value crosses the iteration boundary */
    int first, last;           /* accessed in [first, last], iteration positions */
    int alloc_in_iter;         /* allocated and freed within the iteration */
    int producer;              /* layer whose forward pass wrote it, -1 */
    int consumers;
    uint64_t site;
    int ordinal;               /* n-th allocation from its site in the iteration */
    int owner;
} sn_model_tensor;

typedef struct sn_model {
    int dev;
    int found;                 /* a complete iteration was recognised */
    /* the whole run (the trace's running statistics) */
    size_t ncalls, nsteps_total, ntransfers;
    uint64_t failed_calls, off_sequence, opaque_calls, live_bytes;
    /* the log the tables come from */
    size_t recorded_calls;
    int log_state;             /* enum sn_trace_state at the end */
    size_t period;             /* steps per iteration */
    size_t iterations;         /* seen in the whole run, including a first one that differs */
    size_t iterations_recorded;   /* the complete ones in the log: 1..this */
    int first_differs;
    size_t first_index;        /* step index where the representative iteration starts */
    sn_model_step *steps;      /* period entries */
    int fwd_steps, bwd_steps, upd_steps;
    int backward_start;        /* first backward position */
    sn_model_layer *layers;
    int nlayers, fwd_layers, bwd_layers, unmatched_bwd;
    int *edge_layer;           /* inputs of every layer, concatenated */
    int nedges;
    int forks, joins;
    sn_model_tensor *tensors;
    int ntensors;
    int role_count[SN_ROLE_COUNT];
    uint64_t role_bytes[SN_ROLE_COUNT];
    /* memory */
    uint64_t peak_asis, peak_asis_iter, peak_live, peak_conv, peak_all, lower_bound, budget;
    uint64_t carried_bytes, max_working_set, library_bytes;
    int max_working_set_layer;
    /* time */
    int timed;
    double iter_ms;            /* device time of one iteration (sum of its steps) */
    /* what could not be seen */
    uint64_t unknown_ranges;
    int opaque_steps;
    uint64_t alloc_count[5], alloc_bytes[5];   /* by owner */
} sn_model;

/* Builds the model of trace t; m must be freed with sn_model_free. Returns 0
 * (also when no iteration was found: m->found is then 0), -1 when out of
 * memory. An iteration is a period of steps that holds a forward and a
 * backward pass and repeats at least twice; anything less (a run that
 * ended or failed inside its first iterations) is not one. */
int sn_model_build(const sn_trace *t, sn_model *m);

/* The profile is complete: finds the iteration in t's log as
 * sn_model_build does and switches t to following it (sn_trace_follow),
 * expecting the step after the last one logged. Returns 0, or -1 when the
 * log holds no complete iteration (t keeps recording). */
int sn_model_follow(sn_trace *t);
void sn_model_free(sn_model *m);

const char *sn_role_name(int role);
const char *sn_phase_name(int phase);
const char *sn_op_name(int op);
const char *sn_owner_name(int owner);

#endif
