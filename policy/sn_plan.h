/*
 * sn_plan.h — planned memory management of one training iteration: the
 * iteration as a planner sees it (sn_plan_model), what a policy decides for
 * it under a budget (sn_plan), and the timeline that predicts what a plan
 * costs before it is used (sn_plan_simulate).
 *
 * Everything here is pure: model in, plan out, no CUDA and no global state,
 * so every policy is unit-tested on small hand-built models and compared
 * with the others on identical ones. The manager turns the learned model
 * into an sn_plan_model, asks the chosen policy (SN_POLICY) for a plan, and
 * follows it step by step (allocator/), falling back to demand residency
 * when the run leaves the learned sequence.
 *
 * Positions ("steps") are the iteration's calls in order, 0..nsteps-1. The
 * iteration repeats: a plan describes the steady state, where what is off
 * the device at the end of one iteration is off at the start of the next.
 *
 * What an action means, exactly (the executor and the timeline agree):
 *   PREFETCH t at step s, need n: issued when the host reaches step s,
 *     before s is forwarded; device memory for t is taken at issue; the copy
 *     runs on the host-to-device copy stream after the copies issued before
 *     it; step n is the first step that waits for it (n < s: step n of the
 *     next iteration). A prefetch of contents that are dead (next access
 *     overwrites whole) copies nothing: it only maps memory.
 *   OFFLOAD t after step s: the copy to host runs on the device-to-host copy
 *     stream once step s has completed (and the copies before it); the
 *     device memory is free when the copy has completed.
 *   DROP t after step s: the contents are not needed again before a whole
 *     overwrite; the memory is free once step s has completed; no copy.
 * A step runs once the step before it has completed, the prefetches it
 * needs have completed, and its own memory (tensors it creates, the chosen
 * algorithm's workspace) fits. Every tensor a step accesses must be resident
 * then, except one the step overwrites whole (SN_PLAN_KILL) which is mapped
 * fresh at the step with no copy. Memory is taken at issue time, never
 * beyond the budget: when a prefetch or a step would exceed it, the host
 * waits for offloads still copying to complete; when that is not enough the
 * plan is infeasible.
 */
#ifndef SN_PLAN_H
#define SN_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "common/sn_options.h" /* enum SN_POLICY_* */

/* Access modes, the tracer's SN_ACC_* values. */
enum { SN_PLAN_R = 1, SN_PLAN_W = 2, SN_PLAN_KILL = 4, SN_PLAN_SCRATCH = 8 };

enum sn_plan_role { SN_PLAN_WEIGHT, SN_PLAN_WEIGHT_GRAD, SN_PLAN_FEATURE, SN_PLAN_GRADIENT,
                    SN_PLAN_WORKSPACE, SN_PLAN_OTHER };

typedef struct sn_plan_access {
    int step;
    uint8_t mode; /* SN_PLAN_R | SN_PLAN_W | SN_PLAN_KILL | SN_PLAN_SCRATCH */
} sn_plan_access;

typedef struct sn_plan_tensor {
    uint64_t bytes;
    int role;            /* enum sn_plan_role */
    int conv_output;     /* written by a convolution forward step (vDNN's "conv" set) */
    int pinned;          /* may never leave the device (memory no call names) */
    /* bounded = 1: the allocation exists only from step alloc_step to step
     * free_step (inclusive); 0: throughout the iteration */
    int bounded, alloc_step, free_step;
    int naccess;
    const sn_plan_access *access; /* in step order */
} sn_plan_tensor;

/* One way to run a convolution step. */
typedef struct sn_plan_algo {
    int algo;            /* the library's algorithm number */
    double ms;           /* its time */
    uint64_t workspace;  /* bytes of workspace it needs */
} sn_plan_algo;

typedef struct sn_plan_step {
    double ms;           /* device time as profiled (with the framework's algorithm) */
    int phase;           /* enum sn_phase of tracer/sn_model.h: 0 fwd, 1 bwd, 2 update */
    int layer;           /* -1 none */
    int conv;            /* a convolution (forward, backward data or filter) */
    int nalgo;           /* 0: no choice to make */
    const sn_plan_algo *algo;
    int framework_algo;  /* index in algo[] of what the framework asked for */
    /* the workspace the step names as a tensor (the framework's buffer, an
     * SN_PLAN_SCRATCH access): an algorithm needing more takes only the
     * difference as extra memory for the step's duration, supplied by the
     * manager; 0 when the step names none */
    uint64_t own_workspace;
} sn_plan_step;

typedef struct sn_plan_model {
    int nsteps;
    const sn_plan_step *step;
    int ntensors;
    const sn_plan_tensor *tensor;
    int backward_start;  /* first backward step */
    uint64_t fixed_bytes;/* resident throughout, named by no tensor (library memory) */
    double h2d_gbps, d2h_gbps; /* measured copy bandwidths, GB/s = bytes/ns */
    double duplex;       /* both directions at once move duplex x one direction's
                            bandwidth in total (1.6 on measured hosts; 2: no contention) */
    double copy_ms;      /* fixed cost per copy (launch, event) */
    /* host time with the device idle (the calls wait for it first) to take
     * a tensor's memory away once it has left (unmapping) and to give it
     * memory again when it comes back, by prefetch or a fresh write
     * (mapping, access); 0: free */
    double unmap_ms, map_ms;
    /* 1: a VMM arena. Memory that left is unmapped at a step start once its
     * copy out is done (a drop's at once), and a plan may gather its moves
     * at sync steps, which wait for every copy in flight before they unmap
     * and map. Elsewhere mapping and unmapping cost the host times above
     * only: the driver's calls do not wait for the device, and the arena
     * waits for a planned leave's own copy alone when it needs its memory
     * (which the budget's waits for offloads model). 0: only the host
     * times (a contiguous pool). */
    int remap_drains;
    /* with remap_drains, 1: every mapping and unmapping also waits for the
     * copies in flight, as the arena's fences once made them. Not the
     * executor's behaviour any more: auto searches one of the two
     * recipes its gathered plans are made from on such a model, which
     * favours plans that gather well (sn_policy_auto.c). */
    int remap_wait_all;
    /* 1: freeing a tensor the iteration allocates (bounded) waits for the
     * whole device first, copies in flight included, as cudaFree does */
    int free_drains;
    /* 1: the manager's scratch for workspaces beyond the steps' own stays
     * mapped at the iteration's largest in a plan without sync steps (a
     * VMM arena: unmapping it after each step would wait for the device);
     * 0: it is held for its step only. A plan with sync steps (and
     * remap_drains) holds a stretch's largest from one sync step to the
     * next either way. */
    int scratch_held;
} sn_plan_model;

enum sn_plan_op { SN_PLAN_PREFETCH, SN_PLAN_OFFLOAD, SN_PLAN_DROP };

typedef struct sn_plan_action {
    int op;              /* enum sn_plan_op */
    int tensor;
    int step;            /* see the header comment */
    int need;            /* PREFETCH: first step that waits for it */
} sn_plan_action;

/* What the timeline predicts for the steady-state iteration. */
typedef struct sn_plan_timeline {
    double iter_ms;      /* from the iteration's start (the end of the one before, so
                            a wait before the first step counts) to the end of the last */
    double compute_ms;   /* sum of step times (chosen algorithms) */
    double stall_ms;     /* iter_ms - compute_ms: waiting for copies or memory */
    uint64_t peak_bytes; /* device memory in use at most, fixed_bytes included */
    int peak_step;
    uint64_t h2d_bytes, d2h_bytes;
    int feasible;        /* 1: every access resident, never above the budget */
    int bad_step, bad_tensor; /* the first violation (-1 when feasible) */
    const char *why;     /* the first violation in words, NULL when feasible */
} sn_plan_timeline;

enum { SN_PLAN_TRIALS = 4 };

typedef struct sn_plan {
    int policy;          /* SN_POLICY_* */
    uint64_t budget;
    int nactions;
    sn_plan_action *actions; /* ordered by step; at one step prefetches before offloads/drops */
    int *algo;           /* per step: index in step[s].algo, -1 when nalgo is 0 */
    int *gtbm_class;     /* per tensor: enum sn_gtbm_class */
    int framework_liveness; /* a seed policy planned again with the liveness drops
                               its authors' frameworks made (sn_plan.c) */
    /* per step, 1 where the plan maps and unmaps (NULL: wherever a move
     * is): with remap_drains, memory that left is taken away, and memory
     * prefetched given, only at these steps, so that the device waits at
     * a few points an iteration instead of at every move (sn_pol_gather) */
    uint8_t *sync;
    sn_plan_timeline predicted;
    /* auto: the plans worth measuring, best predicted first (rank 0, the
     * plan auto makes; the others as sn_plan_trials_cfg says), their
     * predictions, and which of them this plan is */
    int rank, ncandidates;
    double candidate_ms[SN_PLAN_TRIALS];
} sn_plan;

/* Which of auto's plans are worth measuring: at most max (1 to
 * SN_PLAN_TRIALS) predicted within slack (a fraction) of its best. */
typedef struct sn_plan_trials_cfg {
    int max;
    double slack;
} sn_plan_trials_cfg;

/* Makes the plan of the given policy for m under budget; fills
 * out->predicted with sn_plan_simulate. Returns 0, or -1 on invalid input or
 * out of memory (out is then empty). A budget the policy cannot meet is not
 * an error: the plan says so (predicted.feasible = 0). */
int sn_plan_make(const sn_plan_model *m, int policy, uint64_t budget, sn_plan *out);
/* The same, for auto the rank-th of its candidates as cfg picks them (0:
 * its own choice; -1 when there is no such candidate; cfg NULL: rank 0
 * only). Other policies have rank 0 only. */
int sn_plan_make_ranked(const sn_plan_model *m, int policy, uint64_t budget, const sn_plan_trials_cfg *cfg, int rank,
                        sn_plan *out);
void sn_plan_free(sn_plan *p);

/* Predicts the steady-state iteration of plan p on model m (two iterations
 * run, the second reported). step_start_ms and step_mem, when not NULL,
 * receive per step its start time (from the iteration's start) and the
 * memory in use while it runs. Returns 0, or -1 on invalid input (an action
 * naming no tensor or step) or out of memory. */
int sn_plan_simulate(const sn_plan_model *m, const sn_plan *p, sn_plan_timeline *out,
                     double *step_start_ms, uint64_t *step_mem);

/* The time step s takes under the plan's algorithm choice. */
double sn_plan_step_ms(const sn_plan_model *m, const sn_plan *p, int s);

/* The workspace beyond the steps' own that the stretch starting at sync
 * step s needs (its largest), which the manager maps there and unmaps at
 * the next sync step; for a plan without sync steps (p->sync NULL), the
 * whole iteration's largest. */
uint64_t sn_plan_stretch_workspace(const sn_plan_model *m, const sn_plan *p, int s);

/* How fast any plan could run the iteration of m under budget, from the
 * model alone (sn_plan_bound.c): every step with its own memory (what it
 * touches, pinned tensors, fixed_bytes) resident and its fastest algorithm
 * whose workspace fits beside it (compute_ms); the contents still needed
 * that cannot stay on the device beside a step's own memory copied back in
 * at least once (transfer_ms), and no sooner than the step where they are
 * away has ended, before the steps that read them (stall_ms). ms is the
 * larger of compute_ms + stall_ms and transfer_ms: a plan's predicted time
 * is never below it. */
typedef struct sn_plan_bound {
    double ms;
    double compute_ms;
    double transfer_ms;
    /* the device's wait no plan avoids: what is off the device at step
     * window_from and read by window_to takes longer to copy in than the
     * steps between them */
    double stall_ms;
    int window_from, window_to; /* -1: none */
    double unlimited_ms;      /* every step's fastest algorithm, memory unlimited */
    uint64_t offdevice_bytes; /* contents off the device at once at least (at offdevice_step) */
    int offdevice_step;       /* -1: everything fits */
    int feasible;             /* 0: some step's own memory alone exceeds the budget */
} sn_plan_bound;

/* Fills out for m under budget. Returns 0, or -1 on an invalid model or
 * out of memory, out then saying nothing (ms 0, no window). */
int sn_plan_bound_of(const sn_plan_model *m, uint64_t budget, sn_plan_bound *out);

#endif
