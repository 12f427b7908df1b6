/*
 * sn_whatif.h — device memory per step of one training iteration under
 * alternative strategies, from which tensors each step touches. Pure: no
 * CUDA, no global state; unit-tested on hand-made iterations.
 *
 * A tensor is live from a write to the last read before the next full
 * overwrite; a tensor whose value crosses the iteration boundary (read
 * before it is written: weights, momentum, running statistics) is live
 * throughout. Either way never outside its allocation: a tensor allocated
 * or freed inside the iteration is live at most from its allocation to
 * its free. Strategies:
 *   liveness        only live tensors occupy memory (SuperNeurons' first step)
 *   conv offload    liveness, and feature maps produced by convolutions leave
 *                   the device between their last forward use and one step
 *                   before their first backward use
 *   all offload     the same for every feature map
 *   superneurons    SuperNeurons' bound (peak >= max_i l_i), made consistent
 *                   with liveness: at each step, the tensors of that step's
 *                   layer pass (its working-set group) and the tensors whose
 *                   value crosses the iteration, counting only those live then
 *   lower bound     what libsn itself needs at least, since it can move any
 *                   tensor, weights included: the largest working set of one
 *                   call (the tensors it touches and the memory of the
 *                   library handle it is on, all resident at once) plus the
 *                   library memory of no known handle
 */
#ifndef SN_WHATIF_H
#define SN_WHATIF_H

#include <stddef.h>
#include <stdint.h>

enum sn_wi_offload { SN_WI_KEEP = 0, SN_WI_CONV_OUTPUT = 1, SN_WI_FEATURE = 2 };

/* Positions are the iteration's calls (or steps) in order; one position
 * is one call, so the tensors accessed at a position are one call's
 * working set. */
typedef struct sn_wi_access {
    int step;
    uint8_t mode;   /* SN_ACC_* of sn_trace.h */
} sn_wi_access;

typedef struct sn_wi_tensor {
    uint64_t bytes;
    int offload;                 /* enum sn_wi_offload */
    int naccess;
    const sn_wi_access *access;  /* in step order */
    /* bounded = 1: the allocation exists only from step alloc_step to step
     * free_step (inclusive; it was made before the first and freed after
     * the second); 0: throughout the iteration */
    int bounded, alloc_step, free_step;
} sn_wi_tensor;

typedef struct sn_wi_input {
    int nsteps;
    int backward_start;          /* first step of the backward pass */
    const int *group;            /* per position: its working-set group, -1 none */
    int ntensors;
    const sn_wi_tensor *tensor;
    uint64_t fixed_bytes;        /* memory no strategy can touch (library workspaces) */
    /* Of fixed_bytes, what belongs to a cuDNN or cuBLAS handle (keyed_bytes):
     * manage mode keeps it resident only for calls on that handle, so it
     * counts in those calls' working sets (lib_bytes per position, NULL:
     * none) and not beside every call's. */
    const uint64_t *lib_bytes;
    uint64_t keyed_bytes;
    uint64_t lib_largest;        /* the most keyed memory of one handle: made resident at once
                                    when the handle is made, whether or not a call uses it */
} sn_wi_input;

typedef struct sn_wi_result {
    uint64_t peak_liveness, peak_conv, peak_all, peak_superneurons, lower_bound;
    uint64_t carried_bytes;      /* live through the whole iteration */
    uint64_t max_working_set;    /* the largest one-call working set (its handle's memory included) */
    uint64_t largest_alloc;      /* the largest allocation, or one handle's memory: it must fit */
    uint64_t max_working_set_lib;/* of it, the memory of the handle the call is on */
    int max_working_set_step;    /* the position where it is */
    int superneurons_step;       /* where SuperNeurons' bound peaks */
} sn_wi_result;

/* Fills res and, when not NULL, the per-step arrays (nsteps each). Returns
 * -1 on invalid input or out of memory. */
int sn_whatif(const sn_wi_input *in, sn_wi_result *res, uint64_t *mem_liveness, uint64_t *mem_conv,
              uint64_t *mem_all);

/* 1 if the tensor's value crosses the iteration boundary. */
int sn_wi_carried(const sn_wi_tensor *t);

/* The first and last step at which the tensor is live under liveness
 * (-1, -1 when never). */
void sn_wi_live_span(const sn_wi_tensor *t, int nsteps, int *first, int *last);

#endif
