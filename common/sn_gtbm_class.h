/*
 * sn_gtbm_class.h — the vocabulary of Dymem's Group Tensors By Mobility
 * (GTBM) shared by the planner, which decides each tensor's class, and the
 * allocator, which places a block by it: the classes, the small-tensor
 * threshold, and the one classifier that maps what is known of a tensor to
 * its class. Pure: no state, no CUDA.
 */
#ifndef SN_GTBM_CLASS_H
#define SN_GTBM_CLASS_H

#include <stdint.h>

/* Mobility classes (Dymem's groups). */
enum sn_gtbm_class {
    SN_CLASS_LONG,    /* incremental space: lives long or is small */
    SN_CLASS_MOVABLE, /* main space, low end: one consumer */
    SN_CLASS_TEMP,    /* main space, high end: held across several steps */
    SN_CLASS_COUNT
};

/* Below this a tensor goes to the incremental space whatever else is known
 * of it: small buffers are too many to be worth moving and would otherwise
 * pepper the main space with holes. */
#define SN_GTBM_SMALL ((uint64_t)1 << 20)

/* What is known of an allocation when it is classified (from the profiled
 * iteration, the plan's model or the framework's own description); unknown
 * counts are 0. */
typedef struct sn_gtbm_facts {
    uint64_t size;
    int before_iteration;  /* made before the first iteration was seen */
    int crosses_iteration; /* still live when the next iteration starts
                            * (weights, optimizer state, memory that may
                            * never leave the device) */
    int consumers;         /* steps (or layers) that read it */
    int fork_join;         /* the output of a join (several inputs, one output) */
    int accumulated;       /* a gradient several steps add into */
    int scratch;           /* a call's workspace: held for that call only,
                            * however many readers the model counts */
} sn_gtbm_facts;

/* LONG for anything made before the iteration, living across it, or smaller
 * than SN_GTBM_SMALL; MOVABLE for scratch; TEMP for fork (several
 * consumers) and join outputs and accumulated gradients; MOVABLE
 * otherwise. */
enum sn_gtbm_class sn_gtbm_classify(const sn_gtbm_facts *f);

const char *sn_gtbm_class_name(enum sn_gtbm_class c);

#endif
