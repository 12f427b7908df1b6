/*
 * sn_whatif.h — device memory per step of one training iteration under
 * alternative strategies, from which tensors each step touches. Pure: no
 * CUDA, no global state; unit-tested on hand-made iterations.
 *
 * A tensor is live from a write to the last read before the next full
 * overwrite; a tensor whose value crosses the iteration boundary (read
 * before it is written: weights, momentum, running statistics) is live
 * throughout. Strategies:
 *   liveness        only live tensors occupy memory (SuperNeurons' first step)
 *   conv offload    liveness, and feature maps produced by convolutions leave
 *                   the device between their last forward use and one step
 *                   before their first backward use
 *   all offload     the same for every feature map
 *   lower bound     the carried tensors plus the largest working set of one
 *                   layer's step group (SuperNeurons: peak >= max_i l_i)
 */
#ifndef SN_WHATIF_H
#define SN_WHATIF_H

#include <stddef.h>
#include <stdint.h>

enum sn_wi_offload { SN_WI_KEEP = 0, SN_WI_CONV_OUTPUT = 1, SN_WI_FEATURE = 2 };

typedef struct sn_wi_access {
    int step;
    uint8_t mode;   /* SN_ACC_* of sn_trace.h */
} sn_wi_access;

typedef struct sn_wi_tensor {
    uint64_t bytes;
    int offload;                 /* enum sn_wi_offload */
    int naccess;
    const sn_wi_access *access;  /* in step order */
} sn_wi_tensor;

typedef struct sn_wi_input {
    int nsteps;
    int backward_start;          /* first step of the backward pass */
    const int *group;            /* per step: its working-set group */
    int ntensors;
    const sn_wi_tensor *tensor;
    uint64_t fixed_bytes;        /* memory no strategy can touch (library workspaces) */
} sn_wi_input;

typedef struct sn_wi_result {
    uint64_t peak_liveness, peak_conv, peak_all, lower_bound;
    uint64_t carried_bytes;      /* live through the whole iteration */
    uint64_t max_working_set;
    int max_working_set_group;
} sn_wi_result;

/* Fills res and, when not NULL, the per-step arrays (nsteps each). Returns
 * -1 on invalid input or out of memory. */
int sn_whatif(const sn_wi_input *in, sn_wi_result *res, uint64_t *mem_liveness, uint64_t *mem_conv,
              uint64_t *mem_all);

/* 1 if the tensor's value crosses the iteration boundary. */
int sn_wi_carried(const sn_wi_tensor *t);

#endif
