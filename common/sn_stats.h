/*
 * sn_stats.h — what manage mode did, as the report shows it. Filled by the
 * allocator (allocator/sn_arena.c), printed by the tracer's report; defined
 * here so that neither includes the other.
 */
#ifndef SN_STATS_H
#define SN_STATS_H

#include <stdint.h>

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
    uint64_t swap_in, swap_in_bytes;     /* copies host -> device */
    uint64_t swap_out, swap_out_bytes;   /* copies device -> host */
    uint64_t evictions;                  /* blocks unmapped to make room */
    uint64_t clean_drops;                /* evicted with a current host copy: nothing written back */
    uint64_t dead_loads;                 /* mapped for a call that overwrites it all: nothing copied in */
    uint64_t freed_drops;                /* freed blocks unmapped: contents dead, nothing written back */
    uint64_t predicted_drops;            /* dirty blocks dropped as predicted dead, not written back */
    uint64_t dropped_reads;              /* reads of contents dropped as predicted dead: libsn errors */
    uint64_t fences, host_waits;         /* event fences built, host-side waits for swaps */
    uint64_t peak_resident;              /* most bytes mapped at once (blocks) */
    uint64_t peak_physical;              /* most bytes of physical handles (mapped + cached) */
    uint64_t peak_allocated;             /* most bytes the framework had allocated at once */
    uint64_t rounding;                   /* bytes lost to granule rounding at the peak of allocation */
    uint64_t largest_need;               /* the largest working set a call needed resident */
    uint64_t pinned_library;             /* library memory kept resident */
    uint64_t host_peak;                  /* most pinned host bytes used for copies */
    uint64_t oom_calls, oom_allocs;      /* calls and allocations refused for lack of memory */
    double stall_in_ms;                  /* time consumers' streams waited for swap-ins (device clock) */
    double stall_out_ms;                 /* time copies out took once their fence was passed: the host waited */
    uint64_t stall_unmeasured;           /* swap-ins whose wait could not be timed */
    /* the plan (SN_POLICY), when one is followed */
    int has_plan;                        /* 0: none made (demand residency only) */
    int plan_policy;                     /* SN_POLICY_* of the plan */
    double plan_predicted_ms;            /* the plan timeline's iteration time, -1 not feasible as made */
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
    uint64_t plan_left;                  /* times the run left the learned sequence (demand only meanwhile) */
    uint64_t plan_resumed;               /* times the plan resumed at an iteration's first step after that */
    uint64_t plan_off_steps;             /* steps off the learned sequence */
    /* learning the iteration anew (the run stayed off the learned one) */
    uint64_t relearn_begun;              /* re-learnings begun */
    uint64_t relearned;                  /* ... completed: a new iteration learned (and a new plan made) */
} sn_manage_stats;

#endif
