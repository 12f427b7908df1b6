/*
 * sn_exec.h — following a plan: once the iteration is learned, manage mode
 * asks the chosen policy (SN_POLICY) for a plan of the iteration under the
 * arena's budget (policy/sn_plan.h) and, at every call on the learned
 * sequence, starts the moves the plan has for the steps reached: copies out
 * and drops after a tensor's step, copies in ahead of its use. Demand
 * residency stays underneath: whatever the plan did not foresee (a tensor
 * it could not bind, an evaluation pass, a mismatch) is still made resident
 * before the call that needs it, so a plan changes speed, never results.
 *
 * Binding: a plan names the model's tensors; at run time the executor needs
 * their arena blocks. Tensors allocated before the iteration (weights, a
 * Caffe-style net's every buffer) are found in the registry by their trace
 * id when the plan is made. Tensors allocated anew every iteration keep no
 * id across iterations and are left to demand residency.
 *
 * Positions: the tracer numbers a call 2k (step k of the iteration) or
 * 2k + 1 (a transfer before step k); the plan's steps are calls in the same
 * order. Moves after a step start at the first call past its position,
 * moves at a step before that step's call is forwarded. A position lower
 * than the last one seen starts a new iteration.
 *
 * Off the plan: a call off the learned sequence (position -1) leaves the
 * plan (demand residency only) until the tracer places a call again, which
 * it does from an iteration's first step: the plan resumes there, what was
 * passed meanwhile left to demand. When the tracer learns the iteration
 * anew (a batch size changed), the core makes a new plan with
 * sn_exec_build on the same sn_exec: the counts of the run go on.
 */
#ifndef SN_EXEC_H
#define SN_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "core/sn_registry.h"
#include "policy/sn_plan.h"
#include "tracer/sn_trace.h"

typedef struct sn_exec {
    int active;
    int policy;
    sn_plan plan;
    int nsteps;
    int64_t *pos;        /* per plan step: the tracer's position of its call */
    int *act_off;        /* actions of plan step s: act[act_off[s] .. act_off[s + 1]) */
    int *act;
    void **block;        /* per plan tensor: its arena block, NULL when not bound */
    int bound, unbound;  /* tensors with and without a block */
    int next_pre, next_off;  /* the first plan step whose prefetches / later moves are not started */
    int started;             /* a position has been seen (since the run came back) */
    int off;                 /* the run is off the learned sequence */
    int64_t last_pos;        /* the latest one (as ordered in sn_exec.c) */
    uint64_t iterations;     /* iterations this plan was followed in */
    double predicted_ms;
    uint64_t plan_budget;
    /* the whole run, every plan made (kept by sn_exec_build) */
    uint64_t plans;          /* plans made */
    uint64_t iterations_all; /* iterations a plan was followed in */
    uint64_t left;           /* times the run left the learned sequence */
    uint64_t resumed;        /* times a plan resumed after that */
    uint64_t skipped_unbound;  /* moves not started: not bound, or past what one call starts */
} sn_exec;

/* Makes the plan of the iteration trace t has learned (t following it) for
 * device dev under budget bytes, and binds its tensors to the arena blocks
 * the registry knows; a plan ex held before is freed, the run's counts
 * kept. ex is zeroed (or built before) by the caller. The caller holds the
 * registry's and the device's locks (the trace's log is read), and ex's.
 * Returns 0 with ex active, -1 when no plan could be made (ex inactive:
 * demand residency only). */
int sn_exec_build(sn_exec *ex, const sn_trace *t, sn_registry *reg, int dev, int policy, uint64_t budget);

/* The moves due at a call at position pos (>= 0): blocks to send away
 * (drop[i]: contents dead) and to bring in, at most cap of each. The caller
 * serialises calls for one ex. */
void sn_exec_due(sn_exec *ex, int64_t pos, void **out, int *drop, size_t *nout, void **in, size_t *nin,
                 size_t cap);

/* Frees the plan; the run's counts stay. */
void sn_exec_free(sn_exec *ex);

#endif
