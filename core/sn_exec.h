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
 * Algorithms (SN_WORKSPACE auto or min): the plan picks each
 * convolution's algorithm among those measured for its configuration;
 * sn_exec_conv says, at a convolution call on the learned sequence, which
 * one to run when it is not the framework's. min plans with each
 * convolution's smallest-workspace algorithm only; keep with the
 * framework's only (nothing changes).
 *
 * Positions: the tracer numbers a call 2k (step k of the iteration) or
 * 2k + 1 (a transfer before step k); the plan's steps are calls in the same
 * order. Moves after a step start at the first call past its position,
 * moves at a step before that step's call is forwarded. A position lower
 * than the last one seen starts a new iteration.
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
    uint64_t left;           /* times it left it (and came back, unless off) */
    int64_t last_pos;        /* the latest one (as ordered in sn_exec.c) */
    uint64_t iterations, skipped_unbound;  /* skipped: not bound, or past what one call starts */
    double predicted_ms;
    uint64_t plan_budget;
    /* convolutions: per model step (the iteration's position k), the plan
     * step of its call, -1 when not a convolution whose algorithm the plan
     * changes; per plan step, what the framework runs (configuration,
     * algorithm) and what the plan runs instead (algorithm, the workspace
     * it needs) */
    int workspace;          /* SN_WORKSPACE_* */
    int64_t period;
    int *conv_step;
    uint64_t *conv_conf;
    int *conv_fw, *conv_algo;
    uint64_t *conv_ws;
    char *conv_supply;
    int algo_steps, algo_up, algo_down; /* steps with a choice; planned faster, slower */
    int algo_framework;     /* auto: the plan keeping the framework's algorithms predicted better */
    uint64_t algo_calls, algo_scratch_calls, algo_kept, algo_failed;
} sn_exec;

/* Makes the plan of the iteration trace t has learned (t following it) for
 * device dev under budget bytes, and binds its tensors to the arena blocks
 * the registry knows. The caller holds the registry's and the device's
 * locks (the trace's log is read). Returns 0 with ex active, -1 when no plan
 * could be made (ex inactive: demand residency only). */
int sn_exec_build(sn_exec *ex, const sn_trace *t, sn_registry *reg, int dev, int policy, int workspace,
                  uint64_t budget);

/* The plan's algorithm for a convolution call at position pos of
 * configuration conf that the framework runs with algorithm fw: 1 with
 * *algo and the workspace it needs (*ws) when the plan runs another one
 * or supplies the workspace itself (*supply: the framework's buffer is not
 * to be touched, whatever the algorithm), 0 otherwise (not on the
 * sequence, nothing planned, or the call is not the one the plan was made
 * for: the framework's choice). The caller serialises calls for one ex. */
int sn_exec_conv(const sn_exec *ex, int64_t pos, uint64_t conf, int fw, int *algo, uint64_t *ws, int *supply);
/* What became of it: run as planned (changed: another algorithm than the
 * framework's; scratch: with libsn's workspace), or left as the framework
 * made it (ran = 0: no room). */
void sn_exec_conv_note(sn_exec *ex, int ran, int changed, int scratch);
/* The plan's algorithm failed at position pos: the framework's from now on. */
void sn_exec_conv_failed(sn_exec *ex, int64_t pos);

/* The moves due at a call at position pos (>= 0): blocks to send away
 * (drop[i]: contents dead) and to bring in, at most cap of each. The caller
 * serialises calls for one ex. */
void sn_exec_due(sn_exec *ex, int64_t pos, void **out, int *drop, size_t *nout, void **in, size_t *nin,
                 size_t cap);

void sn_exec_free(sn_exec *ex);

#endif
