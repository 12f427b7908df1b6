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
 * id when the plan is made. A tensor allocated anew every iteration is
 * known by where its allocation comes in the learned sequence: the plan
 * step it precedes and its rank among the allocations made just before
 * that step (in the profiled iteration's order), its size confirming it;
 * each iteration's allocation is bound as it is made. Off the sequence
 * nothing is bound.
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
 *
 * Off the plan: a call off the learned sequence (position -1) leaves the
 * plan (demand residency only) until the tracer places a call again, which
 * it does from an iteration's first step: the plan resumes there, what was
 * passed meanwhile left to demand. When the tracer learns the iteration
 * anew (a batch size changed), the manager makes a new plan on the same
 * sn_exec: the counts of the run go on.
 */
#ifndef SN_EXEC_H
#define SN_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "common/sn_stats.h"
#include "policy/sn_plan.h"
#include "tracer/sn_model.h"
#include "tracer/sn_planmodel.h"
#include "tracer/sn_trace.h"

/* auto's trials: the candidates of the model keeping the framework's
 * algorithms and of the one choosing them (sn_exec_trials_init) */
enum { SN_EXEC_TRIALS = 2 * SN_PLAN_TRIALS };
enum sn_trial_model { SN_TRIAL_CHOSEN = 0, SN_TRIAL_FRAMEWORK = 1, SN_TRIAL_DEMAND = 2 };
_Static_assert((int)SN_EXEC_TRIALS == (int)SN_STATS_CANDIDATES, "the report holds every candidate");

typedef struct sn_exec {
    int active;
    int policy;
    sn_plan plan;
    int nsteps;
    int64_t *pos;        /* per plan step: the tracer's position of its call */
    int *act_off;        /* actions of plan step s: act[act_off[s] .. act_off[s + 1]) */
    int *act;
    int *next_out_step, *next_pre_step; /* per step: the next with offloads or drops / prefetches */
    int64_t quiet_off, quiet_pre; /* nothing is due before these positions (sn_exec_due_quiet) */
    void **block;        /* per plan tensor: its arena block, NULL when not bound */
    int *born_off, *born_t; /* per plan step: the tensors allocated anew just before it, in order */
    int born_seen;       /* of the born tensors of the step after the latest call, how many
                            the allocations since matched or passed over (a cursor) */
    uint64_t granule;
    uint64_t rebound;    /* allocations bound to the plan as they were made (run) */
    uint64_t born_due;   /* allocations the plans expected anew in the iterations they
                            were followed from first step to last (run): rebound, which
                            counts the others' too, should be at least as many */
    int whole;           /* the current iteration is followed from its first step */
    uint64_t *plan_tensor_bytes; /* per plan tensor: its bytes as planned (granules) */
    int bound, unbound;  /* tensors with and without a block */
    int next_pre, next_off;  /* the first plan step whose prefetches / later moves are not started */
    int started;             /* a position has been seen (since the run came back) */
    int sync_due;            /* the latest sn_exec_due passed a sync step of a gathered plan */
    uint64_t sync_ws;        /* ... and the scratch for runs the stretch from it needs */
    uint64_t *stretch_ws;    /* per sync step: the largest workspace libsn supplies before the next */
    int off;                 /* the run is off the learned sequence */
    int64_t last_pos;        /* the latest one (as ordered in sn_exec.c) */
    uint64_t iterations;     /* iterations this plan was followed in */
    double predicted_ms;
    sn_plan_bound limit;    /* what no plan under the budget can beat (ms 0: none computed) */
    uint64_t plan_budget;
    /* per iteration as measured, over the whole run (kept by
     * sn_exec_build): a ring of the latest, and the running totals the
     * last one was measured from */
    sn_plan_iter_stats hist[SN_PLAN_ITER_STATS];
    uint64_t nhist;
    uint64_t off_steps;      /* calls seen off the learned sequence, all told */
    uint64_t seen_iterations; /* iterations_all at the latest claim */
    uint64_t boundaries;     /* iteration starts claimed (the first sets the baseline) */
    /* the event recorded at iteration start b, in slot b % (SN_PLAN_ITER_STATS
     * + 1): iteration j runs from start j to start j + 1 */
    void *start_ev[SN_PLAN_ITER_STATS + 1];
    int measured;            /* the totals below are set */
    double last_stall;
    uint64_t last_in, last_out, last_off, last_pinned;
    /* per step of the learned iteration (period): memory the plan predicts,
     * and mapped memory when the step's call came (recorded on request) */
    uint64_t *plan_mem, *seen_mem;
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
    uint64_t algo_calls, algo_scratch_calls, algo_kept, algo_failed; /* the run's (kept by sn_exec_install) */
    /* auto's candidates measured (kept by sn_exec_install): each is followed
     * from iteration start `from` until its iteration time settles, then
     * the fastest measured is made again and kept */
    struct sn_exec_trials {
        int n, rank, done, best;
        /* trial r is the plan of rank frank[r] made on the model keeping
         * the framework's algorithms or on the one choosing them, or no
         * plan's moves at all (fw[r]: enum sn_trial_model) */
        int model[SN_EXEC_TRIALS], frank[SN_EXEC_TRIALS];
        uint64_t from, prev_iter;
        double prev_ms;
        double ms[SN_EXEC_TRIALS], pred[SN_EXEC_TRIALS]; /* measured (-1: not yet), predicted */
    } trial;
    /* the whole run, every plan made (kept by sn_exec_install) */
    uint64_t plans;          /* plans made */
    uint64_t iterations_all; /* iterations a plan was followed in */
    uint64_t left;           /* times the run left the learned sequence */
    uint64_t resumed;        /* times a plan resumed after that */
    uint64_t skipped_unbound;  /* moves not started: not bound, or past what one call starts */
} sn_exec;

/* Making a plan, in three parts so that only the cheap ones hold the
 * framework (manage/sn_planner.h runs the middle one on libsn's thread):
 *
 *   sn_exec_prepare  under the registry's and the device's locks (the
 *                    trace's log is read): the models of the iteration
 *                    trace t has learned, the job's own copies;
 *   sn_exec_plan_job no lock, any thread: the policy's plan (SN_POLICY)
 *                    under cfg.budget bytes, and auto's alternatives;
 *   sn_exec_install  under the same locks as prepare: the plan bound to
 *                    the run (positions, algorithms measured, the arena
 *                    blocks of the allocations known) replaces the one ex held,
 *                    the run's counts kept. Returns 0 with ex active, -1
 *                    when no plan could be made (ex inactive: demand
 *                    residency only). The job is freed either way.
 *
 * granule: the arena's physical granule (0: sizes as asked). vmm_arena:
 * the arena maps and unmaps VMM memory (the timeline then unmaps what left
 * once its copy is done, charges a gathered plan's sync steps a wait for
 * the copies in flight and holds libsn's scratch mapped; sn_exec.c says
 * why). rank: -1 for the first plan of an iteration learned (auto's
 * candidates are then measured in turn), else which of auto's candidates
 * to follow. */
typedef struct sn_exec_job_cfg {
    int dev, policy, workspace, rank, vmm_arena;
    uint64_t budget, granule;
} sn_exec_job_cfg;

typedef struct sn_exec_job {
    sn_exec_job_cfg cfg;
    int fresh, rank;               /* a first plan; the candidate's rank */
    int rank_fw, frank, demand;    /* the candidate's model and rank there */
    int have_m, have_pm, have_km, try_km;
    sn_model m;
    sn_plan_model pm, km;          /* choosing algorithms; keeping the framework's */
    sn_planmodel_store ps, ks;
    double *fw_ms;                 /* per step: its time with the framework's algorithm */
    /* made by sn_exec_plan_job */
    int made, switched, nopt, options;
    double opt_ms[SN_PLAN_TRIALS];
    sn_plan plan;
    sn_plan_bound limit;
} sn_exec_job;

int sn_exec_prepare(const sn_exec *ex, const sn_trace *t, const sn_exec_job_cfg *cfg, sn_exec_job *job);
void sn_exec_plan_job(sn_exec_job *job);
/* The run's allocations the plan may name: the arena block of each
 * managed allocation of the device, by its trace id. */
typedef struct sn_exec_known {
    uint32_t trace_id;
    void *block;
} sn_exec_known;
int sn_exec_install(sn_exec *ex, sn_exec_job *job, const sn_trace *t, const sn_exec_known *known,
                    size_t nknown);
/* Frees what a job holds (one prepared and never installed). */
void sn_exec_job_free(sn_exec_job *job);

/* Iteration `iteration` (numbered by the start it began at) took ms on the
 * device. While auto's candidate plans are measured, returns the rank of
 * the plan to make next (the next candidate, or at the end the fastest
 * measured when it is not the one followed), else -1. */
int sn_exec_trial_next(sn_exec *ex, uint64_t iteration, double ms);
/* ... measured at the latest at this iteration of its own */
#define SN_EXEC_TRIAL_MAX_ITERS 6

/* The plan's algorithm for a convolution call at position pos of
 * configuration conf that the framework runs with algorithm fw: 1 with
 * out->algo and the workspace it needs (out->ws) when the plan runs
 * another one or supplies the workspace itself (out->supply: the
 * framework's buffer is not to be touched, whatever the algorithm), 0
 * otherwise (not on the sequence, nothing planned, or the call is not the
 * one the plan was made for: the framework's choice). The caller
 * serialises calls for one ex. */
typedef struct sn_exec_conv_choice {
    int algo, supply;
    uint64_t ws;
} sn_exec_conv_choice;
int sn_exec_conv(const sn_exec *ex, int64_t pos, uint64_t conf, int fw, sn_exec_conv_choice *out);
/* What became of it: run as planned (changed: another algorithm than the
 * framework's; scratch: with libsn's workspace), or left as the framework
 * made it (ran = 0: no room). */
void sn_exec_conv_note(sn_exec *ex, int ran, int changed, int scratch);
/* The plan's algorithm failed at position pos: the framework's from now on. */
void sn_exec_conv_failed(sn_exec *ex, int64_t pos);


/* The tracer numbers step k 2k and a call before it 2k + 1, which comes
 * first: ordered, they are 4k and 4k - 1. */
static inline int64_t sn_exec_order(int64_t pos)
{
    return pos & 1 ? 2 * pos - 3 : 2 * pos;
}

/* Most calls: further along the same iteration, with nothing due before
 * the next step that has moves. Returns 1 when so (and takes the call as
 * the latest), 0 when sn_exec_due must look. */
static inline int sn_exec_due_quiet(sn_exec *ex, int64_t pos)
{
    if (!ex->active || pos < 0 || !ex->started || ex->off)
        return 0;
    int64_t o = sn_exec_order(pos);
    if (o < ex->last_pos || o > ex->quiet_off || o >= ex->quiet_pre)
        return 0;
    ex->last_pos = o;
    ex->born_seen = 0;
    return 1;
}

/* The moves due at a call at position pos (>= 0): blocks to send away
 * (drop[i]: contents dead) and to bring in, at most SN_DUE_CAP of each;
 * sync_due says whether a sync step of a gathered plan (sn_plan.h) was
 * reached: what left is unmapped there, and only there. The caller
 * serialises calls for one ex. */
enum { SN_DUE_CAP = 256 };
typedef struct sn_exec_moves {
    void *out[SN_DUE_CAP], *in[SN_DUE_CAP];
    int drop[SN_DUE_CAP];
    size_t nout, nin;
} sn_exec_moves;
void sn_exec_due(sn_exec *ex, int64_t pos, sn_exec_moves *mv);

/* An allocation of size bytes (its arena block) was just made: binds it
 * to the plan tensor it is in the learned sequence, if any. */
void sn_exec_bind_alloc(sn_exec *ex, uint64_t size, void *block);

/* Claims the iteration start the latest sn_exec_due reached, once: 1 when
 * the caller is to measure it (sn_exec_measure), 0 otherwise. */
static inline int sn_exec_claim_start(sn_exec *ex)
{
    if (!ex->active || ex->iterations_all == ex->seen_iterations)
        return 0;
    ex->seen_iterations = ex->iterations_all;
    return 1;
}

/* The arena's running totals at an iteration start (declared here, as the
 * executor's history is made from them; sn_manage_measured_locked passes
 * them on). */
typedef struct sn_manage_totals {
    double stall_ms;
    uint64_t in_bytes, out_bytes, resident;
    uint64_t pinned;   /* pinned host bytes held for copies */
} sn_manage_totals;
/* Closes the iteration just ended with the device's running totals
 * (stall ms, bytes copied in and out, pinned host memory); the first call
 * only sets the baseline. */
void sn_exec_measure(sn_exec *ex, const sn_manage_totals *totals);

/* The device time of iteration `iteration` (between two starts' events),
 * known one iteration later. */
void sn_exec_iteration_ms(sn_exec *ex, uint64_t iteration, double ms);

/* The iterations kept whose time is not known, with the events at their
 * start and end (SN_PLAN_ITER_STATS at most); returns how many. */
int sn_exec_untimed(const sn_exec *ex, uint64_t *iteration, void **from, void **to);

/* The measured iterations, oldest first, into out (SN_PLAN_ITER_STATS). */
int sn_exec_history(const sn_exec *ex, sn_plan_iter_stats *out);

/* Notes mapped memory at the call at position pos (>= 0), for the plot. */
static inline void sn_exec_note_memory(sn_exec *ex, int64_t pos, uint64_t mapped)
{
    int64_t k = pos / 2;
    if (ex->seen_mem && pos >= 0 && k < ex->period)
        ex->seen_mem[k] = mapped;
}

/* Frees the plan; the run's counts stay. */
void sn_exec_free(sn_exec *ex);

#endif
