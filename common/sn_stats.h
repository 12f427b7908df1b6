/*
 * sn_stats.h — what manage mode did, as the report shows it. Filled by the
 * allocator (allocator/sn_arena.c), printed by the tracer's report; defined
 * here so that neither includes the other.
 */
#ifndef SN_STATS_H
#define SN_STATS_H

#include <stdint.h>

/* One iteration followed under a plan, as measured (sn_exec.c). */
typedef struct sn_plan_iter_stats {
    uint64_t iteration;          /* the first whole one followed is 0 */
    double ms;                   /* its device time on the stream that starts it, -1 not known */
    double stall_ms;             /* streams waiting for copies in and the host for copies out */
    uint64_t in_bytes, out_bytes; /* copied in and out (planned and on demand) */
    uint64_t off_steps;          /* calls off the learned sequence */
    uint64_t pinned_bytes;       /* pinned host memory libsn added for copies */
} sn_plan_iter_stats;

enum { SN_PLAN_ITER_STATS = 32 };
/* auto's candidate plans reported (manage/sn_exec.h's SN_EXEC_TRIALS: the
 * candidates of two models, policy/sn_plan.h's SN_PLAN_TRIALS each) */
enum { SN_STATS_CANDIDATES = 8 };

typedef struct sn_manage_stats {
    int active;                  /* manage mode ran on this device */
    int pool;                    /* as a contiguous pool (no VMM): nothing moves */
    const char *backing;         /* "VMM" */
    uint64_t budget;             /* bytes of device memory libsn may use */
    uint64_t granularity;        /* physical granule */
    uint64_t host_limit;         /* pinned host memory libsn may use */
    uint64_t allocs, alloc_bytes;        /* allocations served */
    uint64_t passed, passed_bytes;       /* device allocations left to CUDA (managed, stream-ordered) */
    uint64_t blocks;                     /* blocks created */
    uint64_t va_reserved;                /* address space reserved for them */
    uint64_t swap_in, swap_in_bytes;     /* copies host -> device */
    uint64_t swap_out, swap_out_bytes;   /* copies device -> host */
    uint64_t evictions;                  /* blocks unmapped to make room */
    uint64_t clean_drops;                /* evicted with a current host copy: nothing written back */
    uint64_t dead_loads;                 /* mapped for a call that overwrites it all: nothing copied in */
    uint64_t restored_loads;             /* ... whose call then failed: copied in from the host after all */
    uint64_t create_retries;             /* loads tried again after the driver refused memory (another
                                            thread's release on its way back) */
    uint64_t freed_drops;                /* freed blocks unmapped: contents dead, nothing written back */
    uint64_t predicted_drops;            /* dirty blocks dropped as predicted dead, not written back */
    uint64_t dropped_reads;              /* reads of contents dropped as predicted dead: libsn errors */
    uint64_t fences, host_waits;         /* event fences built, host-side waits for swaps */
    uint64_t own_waits;                  /* host waits for planned leaves' own copies alone (no fence) */
    uint64_t peak_resident;              /* most bytes mapped at once (blocks) */
    uint64_t resident_now;               /* bytes mapped when the stats were taken */
    uint64_t held_now;                   /* bytes of blocks allocated when the stats were taken */
    uint64_t peak_physical;              /* most bytes of physical handles (mapped + cached) */
    uint64_t handles_created, handles_created_bytes; /* physical handles made (cuMemCreate) */
    uint64_t peak_allocated;             /* most bytes the framework had allocated at once */
    uint64_t rounding;                   /* bytes lost to granule rounding at the peak of allocation */
    uint64_t largest_need;               /* the largest working set a call needed resident */
    uint64_t pinned_library;             /* library memory kept resident */
    uint64_t host_peak;                  /* most pinned host bytes used for copies */
    uint64_t host_pinned;                /* pinned host bytes held for copies (slabs) */
    double host_pin_ms;                  /* host time pinning them took */
    uint64_t oom_calls, oom_allocs;      /* calls and allocations refused for lack of memory */
    double stall_in_ms;                  /* time consumers' streams waited for swap-ins (device clock) */
    double stall_out_ms;                 /* time copies out took once their fence was passed: the host waited */
    uint64_t stall_unmeasured;           /* swap-ins whose wait could not be timed */
    /* convolution algorithms (SN_WORKSPACE) */
    int workspace;                       /* SN_WORKSPACE_* in effect */
    uint64_t scratch_peak;               /* most bytes of libsn's scratch held at once for planned algorithms */
    uint64_t search_peak;                /* largest scratch an algorithm search took (operands and workspace) */
    uint64_t algo_searches;              /* configurations whose algorithms were measured */
    uint64_t algo_search_failed;         /* searches that measured nothing (no room, the library refused) */
    /* the plan (SN_POLICY), when one is followed */
    int has_plan;                        /* 0: none made (demand residency only) */
    int plan_policy;                     /* SN_POLICY_* of the plan */
    int plan_liveness;                   /* a seed policy planned again with its framework's liveness */
    double plan_predicted_ms;            /* the plan timeline's iteration time, -1 not feasible as made */
    /* what no plan under the budget can beat (policy/sn_plan_bound.c): its
     * iteration time, its compute, stall (between steps from and to) and
     * copy-in parts, the model's time with unlimited memory, and the
     * contents that must be off the device at once; bound_ms 0: not
     * computed */
    double plan_bound_ms, plan_bound_compute_ms, plan_bound_stall_ms, plan_bound_transfer_ms, plan_unlimited_ms;
    int plan_bound_from, plan_bound_to;
    uint64_t plan_bound_offdevice;
    int plan_sync_steps;                 /* a gathered plan's sync steps (0: it maps and unmaps at any step) */
    const char *plan_why;                /* why not (a string constant), NULL when feasible */
    int plan_bad_step;                   /* where not, -1 */
    uint64_t plan_prefetches, plan_prefetch_bytes;  /* planned copies in started */
    uint64_t plan_offloads, plan_offload_bytes;     /* planned copies out started */
    uint64_t plan_drops;                 /* planned drops (contents dead, nothing copied) */
    uint64_t plan_cancelled;             /* blocks used again while leaving: kept */
    uint64_t plan_skipped;               /* planned moves not possible then (in use, no room, not bound) */
    uint64_t plan_iterations;            /* iterations a plan was followed in (every plan made) */
    uint64_t plan_iterations_last;       /* ... the plan made last */
    uint64_t plans;                      /* plans made (one more per iteration learned anew) */
    double plan_host_ms;                 /* host time making plans (every candidate) */
    double plan_blocked_ms;              /* ... of it on the framework's threads */
    int plan_waited;                     /* SN_PLAN_WAIT=1: the framework waited for each plan */
    int plan_unfinished;                 /* a plan was still being made at exit */
    uint64_t plan_left;                  /* times the run left the learned sequence (demand only meanwhile) */
    uint64_t plan_rebound;               /* allocations made anew each iteration, bound to the plan */
    uint64_t plan_born_due;              /* of those, how many the plans expected (sn_exec.born_due) */
    double plan_stall_ms;                /* the stall the plan timeline predicts per iteration */
    int plan_niter;                      /* entries in plan_iter: the latest iterations, oldest first */
    sn_plan_iter_stats plan_iter[SN_PLAN_ITER_STATS];
    /* per step of the learned iteration (curve_len): memory the plan predicts
     * and what was mapped when the step's call came in its latest followed
     * iteration (seen_curve only with SN_PLOT); NULL without a plan */
    const uint64_t *plan_curve, *seen_curve;
    size_t curve_len;
    int plan_algo_steps;                 /* convolution steps with a choice of algorithm */
    int plan_algo_up, plan_algo_down;    /* of those, planned faster / slower (smaller workspace) than
                                            the framework's */
    int plan_algo_framework;             /* auto: the plan keeping every framework algorithm was
                                            predicted better and is followed */
    uint64_t plan_algo_calls;            /* calls run with the plan's algorithm instead of the framework's */
    uint64_t plan_algo_scratch_calls;    /* of those, with workspace from libsn's scratch */
    uint64_t plan_algo_kept;             /* calls left with the framework's algorithm (no scratch then) */
    uint64_t plan_resumed;               /* times the plan resumed at an iteration's first step after that */
    /* auto's candidate plans, each followed for a while and one iteration
     * of it measured: predicted and measured ms (-1: not measured), and
     * the one kept (index) */
    int plan_trials, plan_trial_kept;
    double plan_trial_pred[SN_STATS_CANDIDATES], plan_trial_ms[SN_STATS_CANDIDATES];
    int plan_trial_model[SN_STATS_CANDIDATES]; /* 0: algorithms chosen; 1: the framework's; 2: moves nothing */
    uint64_t plan_off_steps;             /* steps off the learned sequence */
    /* learning the iteration anew (the run stayed off the learned one) */
    uint64_t relearn_begun;              /* re-learnings begun */
    uint64_t relearned;                  /* ... completed: a new iteration learned (and a new plan made) */
} sn_manage_stats;

#endif
