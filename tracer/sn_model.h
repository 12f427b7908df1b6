/*
 * sn_model.h — what the tracer learns from a device's call log: the
 * training iteration (its period in steps and how many were seen), its
 * passes (forward and backward passes, evaluation passes, updates), each
 * step's phase (forward, backward, update), the layers and the graph that
 * connects them (producer/consumer through tensors, forks and joins), every
 * tensor's kind and lifetime, per-step timings, and device memory per step
 * as-is and under the what-if strategies of sn_whatif.h.
 *
 * A pure function of the log (no CUDA), so it is tested on hand-made logs.
 * Everything is derived from data flow, not from function names (the long
 * version, with the limits, is in docs/libsn.md, "How the model is made"):
 *  - a forward pass ends where its result reaches the host (a copy to the
 *    host, or a cuBLAS reduction into host memory): the loss; when no result
 *    reaches the host, at the first step whose result nothing reads;
 *  - a forward pass begins at the first step from which on nothing depends
 *    on values computed before it in the iteration (only on weights and
 *    on the new batch); several passes may share one update (gradient
 *    accumulation), and a pass with no backward pass is an evaluation pass;
 *  - the backward pass of a forward pass runs from its loss to the last step
 *    that touches a value the forward pass produced; the steps after it,
 *    up to the next forward pass, are the update, and the tensors the
 *    update writes that the forward pass reads are the weights;
 *  - forward steps form layers around the calls that make one (a cuDNN
 *    layer call, a GEMM that reads a weight) and between them wherever a
 *    single value flows from one group of steps into the next and the next
 *    one produces a new value; steps that only initialise a buffer join the
 *    layer that uses it;
 *  - backward and update steps belong to the layer whose tensors they touch
 *    (a layer owns the tensors its forward steps first touch, and the
 *    gradient and optimizer state the update pairs with its weights);
 *  - the iteration is cut where its first training pass begins.
 */
#ifndef SN_MODEL_H
#define SN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "tracer/sn_trace.h"
#include "tracer/sn_whatif.h"

enum sn_role { SN_ROLE_WEIGHT, SN_ROLE_WEIGHT_GRAD, SN_ROLE_FEATURE, SN_ROLE_GRADIENT,
               SN_ROLE_WORKSPACE, SN_ROLE_OTHER, SN_ROLE_COUNT };
enum sn_phase { SN_PHASE_FORWARD, SN_PHASE_BACKWARD, SN_PHASE_UPDATE };

typedef struct sn_model_step {
    uint64_t call;       /* index in the trace's call log */
    int phase;
    int pass;            /* the pass it belongs to (index in passes[]) */
    int layer;           /* layer the step belongs to, -1 when none */
    int group;           /* working-set group: one per layer pass, per update step */
    double ms;           /* mean device time over the periodic iterations, -1 unknown */
    uint64_t mem_asis;   /* device memory allocated when it (or a transfer just before it) ran */
    uint64_t mem_live, mem_conv, mem_all;
} sn_model_step;

/* One forward pass of the iteration with what follows it up to the next. */
typedef struct sn_model_pass {
    int first, turn;     /* its forward steps: [first, turn] */
    int bwd_end;         /* backward steps: (turn, bwd_end) */
    int end;             /* update steps: [bwd_end, end) */
    int training;        /* it has a backward pass */
} sn_model_pass;

typedef struct sn_model_layer {
    char type[16];
    int cls;
    int first, last;           /* forward steps (iteration positions) */
    int nfwd, nbwd;            /* steps in each pass of the first training pass */
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
    int live_first, live_last; /* live under liveness, -1 when never */
    int alloc_in_iter;         /* allocated within the iteration */
    int alloc_step, free_step; /* its allocation's lifetime (iteration positions;
                                  -1 / period when outside the iteration) */
    int producer;              /* layer whose forward pass wrote it, -1 */
    int conv_output;           /* a feature map a convolution layer's forward step
                                  produced first (the conv-offload what-if's set) */
    int owner;                 /* layer it belongs to (see above), -1 */
    int consumers;
    uint64_t site;
    int ordinal;               /* n-th allocation from its site in the iteration */
    int lib_owner;             /* who allocated it: enum sn_owner of the registry */
} sn_model_tensor;

/* The invariants sn_model_check verifies. */
enum sn_model_violation {
    SN_CHECK_OK = 0,
    SN_CHECK_LIVENESS_ABOVE_ASIS,     /* liveness peak above the as-allocated peak */
    SN_CHECK_WHATIF_ABOVE_LIVENESS,   /* an offload or SuperNeurons peak above liveness */
    SN_CHECK_BOUND_ABOVE_WHATIF,      /* the lower bound above an achievable what-if */
    SN_CHECK_BUDGET,                  /* the budget below the bound or above the run's peak */
    SN_CHECK_PHASES,                  /* a step in no phase, or counts that do not add up */
    SN_CHECK_LIFETIME,                /* a tensor live outside its allocation */
    SN_CHECK_STEP_ABOVE_ASIS,         /* a step's liveness above its as-allocated memory */
};

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
    size_t periodic_begin, periodic_end;   /* step indices of the periodic part of the log */
    sn_model_step *steps;      /* period entries */
    int fwd_steps, bwd_steps, upd_steps;
    int backward_start;        /* first backward position */
    sn_model_pass *passes;
    int npasses, train_passes, eval_passes, updates;
    sn_model_layer *layers;
    int nlayers, fwd_layers, bwd_layers, unmatched_bwd;
    int *edge_layer;           /* inputs of every layer, concatenated */
    int nedges;
    int forks, joins;
    sn_model_tensor *tensors;
    int ntensors;
    int role_count[SN_ROLE_COUNT];
    uint64_t role_bytes[SN_ROLE_COUNT];
    /* identity across iterations of the tensors allocated in the iteration */
    int ident_total, ident_matched;
    /* memory */
    uint64_t peak_asis, peak_asis_iter, peak_live, peak_conv, peak_all, peak_superneurons;
    uint64_t lower_bound, budget;
    uint64_t carried_bytes, max_working_set, library_bytes;
    uint64_t max_working_set_lib;   /* of max_working_set, its call's handle's memory */
    uint64_t largest_alloc;         /* the largest allocation or handle's memory: the lower bound
                                       is at least this (plus unkeyed library memory) */
    uint64_t library_keyed;         /* library memory held throughout that belongs to a known
                                       handle (resident only for calls on it) */
    int max_working_set_step, superneurons_step;
    /* time */
    int timed;
    double iter_ms;            /* device time of one iteration (sum of its steps) */
    /* what could not be seen */
    uint64_t unknown_ranges;
    int opaque_steps;
    uint64_t alloc_count[5], alloc_bytes[5];   /* by owner */
    int check;                 /* enum sn_model_violation of sn_model_check */
} sn_model;

/* Builds the model of trace t; m must be freed with sn_model_free. Returns 0
 * (also when no iteration was found: m->found is then 0), -1 when out of
 * memory. An iteration is a period of steps that holds a forward and a
 * backward pass and repeats at least twice; anything less (a run that
 * ended or failed inside its first iterations) is not one. In the debug
 * build (SN_DEBUG) a model that breaks an invariant stops the program. */
int sn_model_build(const sn_trace *t, sn_model *m);

/* The invariants every model keeps: liveness peak <= as-allocated peak
 * (and per step); every what-if <= liveness; the lower bound <= every
 * achievable what-if; lower bound <= budget <= the run's peak as allocated;
 * every step in exactly one phase; no tensor live outside its allocation.
 * Returns the first one violated (SN_CHECK_OK when all hold). */
int sn_model_check(const sn_model *m);
const char *sn_model_check_name(int violation);

/* The profile is complete: finds the iteration in t's log as
 * sn_model_build does and switches t to following it (sn_trace_follow),
 * expecting the step after the last one logged. Returns 0, or -1 when the
 * log holds no complete iteration (t keeps recording). */
int sn_model_follow(sn_trace *t);
void sn_model_free(sn_model *m);

/* The iteration call by call, as the what-if strategies and the planner
 * see it. Positions 0..ncalls-1 are the log's calls from the one after the
 * last step before the iteration through the iteration's last step: a
 * step's own call, and the transfers (and failed calls, which touch
 * nothing) logged before it, each have a position of their own, so that
 * the tensors accessed at one position are one call's working set. */
typedef struct sn_model_calls {
    uint64_t call_lo;          /* the log index of position 0 */
    int ncalls;
    int *step;                 /* per position: the model step at or after it */
    int *first;                /* per model step: its first position */
    sn_wi_tensor *tensor;      /* per model tensor (same index): bytes on the device
                                  (0 for host memory), accesses by position, the
                                  allocation's lifetime; offload is left SN_WI_KEEP */
    sn_wi_access *acc;         /* storage of the access lists */
    uint64_t fixed_bytes;      /* cuDNN's and cuBLAS's own memory that no call of the
                                  iteration names, allocated throughout it */
    uint64_t keyed_bytes;      /* of it, what belongs to a known handle */
    uint64_t *lib_bytes;       /* per position: the keyed memory of the call's handle, if the
                                  call may use it */
    uint64_t lib_largest;      /* the most keyed memory of one handle */
} sn_model_calls;

/* What of the lower bound is not library memory held throughout: the
 * largest step's working set, or the largest allocation if that is more. */
static inline uint64_t sn_model_bound_need(const sn_model *m)
{
    return m->largest_alloc > m->max_working_set ? m->largest_alloc : m->max_working_set;
}

/* Fills c for the model m of trace t (m->found; its steps and tensors are
 * all that is read). Returns 0, or -1 when m holds no iteration or out of
 * memory (c is then empty). Free with sn_model_calls_free. */
int sn_model_calls_build(const sn_trace *t, const sn_model *m, sn_model_calls *c);
void sn_model_calls_free(sn_model_calls *c);

/* The phase of the step with index k in the log's list of successful
 * steps (the numbering the model uses), or -1 when it is outside the
 * periodic part: every recorded iteration is labelled, not only the one
 * the tables come from. */
int sn_model_phase_of_step(const sn_model *m, size_t k);

const char *sn_role_name(int role);
const char *sn_phase_name(int phase);
const char *sn_op_name(int op);
const char *sn_owner_name(int owner);

#endif
