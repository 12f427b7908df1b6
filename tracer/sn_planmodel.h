/*
 * sn_planmodel.h — what the tracer learned, as the planner's input: the
 * representative iteration of a model (sn_model.h) turned into an
 * sn_plan_model (policy/sn_plan.h). Pure: trace and model in, plan model
 * out, no CUDA and no global state, so it is unit-tested on hand-made logs.
 *
 * Steps are the iteration's calls in order, the positions of
 * sn_model_calls (the what-if strategies use the same): a compute step's
 * own call, and each transfer logged before it, is a step of its own, so
 * the tensors accessed at a step are one call's working set and a
 * framework's copy of its next batch takes its own time. Tensors are the
 * model's, index for index (their accesses, lifetimes and the library
 * memory no call names are sn_model_calls'), followed by the allocations
 * that exist during the iteration but that none of its calls names. What
 * is decided here, and why, is in sn_planmodel.c.
 */
#ifndef SN_PLANMODEL_H
#define SN_PLANMODEL_H

#include <stdint.h>

#include "policy/sn_plan.h"
#include "tracer/sn_model.h"
#include "tracer/sn_trace.h"

/* Host<->device bandwidth when the run measured none and none is known
 * otherwise, GB/s: PCIe 3 x16 with pinned host memory (bandwidthTest
 * measures 12.2 to 12.5 on such hosts; the simulator's k40 and titanx
 * profiles use those figures). */
#define SN_PLANMODEL_DEFAULT_GBPS 12.0
/* Both directions at once: 1.6 x one direction's bandwidth in total
 * (the simulator's duplex fraction 0.8 of the two one-way rates; between
 * nvbandwidth's 1.8x on PCIe 3 and 1.4x on an A100's PCIe 4). */
#define SN_PLANMODEL_DUPLEX 1.6
/* Fixed cost of one copy, ms: issuing it and the event that orders it
 * against the framework's streams, about 10 us on PCIe GPUs (the
 * simulator charges 3 to 5 us of launch per operation). */
#define SN_PLANMODEL_COPY_MS 0.01
/* Host time to unmap a block's memory and to map it again with access set
 * (cuMemUnmap; cuMemMap + cuMemSetAccess), one mapping: measured on an
 * H200 (bench/results/gpu_h200.md; 17.6 us; 2 + 33 us), the same the
 * simulator charges (docs/sim-runtime.md). Neither waits for the device. */
#define SN_PLANMODEL_UNMAP_MS 0.0176
#define SN_PLANMODEL_MAP_MS 0.035
/* Copies smaller than this say more about that fixed cost than about the
 * link: they are left out of the measured bandwidth. */
#define SN_PLANMODEL_MIN_COPY_BYTES ((uint64_t)1 << 20)

/* Where a copy bandwidth came from. */
enum sn_planmodel_source {
    SN_PLANMODEL_MEASURED,  /* the run's own timed copies (pinned host memory) */
    SN_PLANMODEL_GIVEN,     /* the caller's figure (sn_planmodel_link) */
    SN_PLANMODEL_DEFAULT,   /* SN_PLANMODEL_DEFAULT_GBPS */
};

/* What the caller adds: bandwidths known from elsewhere (a device table,
 * libsn's own copies), GB/s, 0: not known, used where the run measured
 * none; and framework_only: leave the algorithms measured for the
 * convolutions out (each keeps the framework's algorithm and buffer, as
 * SN_WORKSPACE=keep runs them). */
typedef struct sn_planmodel_link {
    double h2d_gbps, d2h_gbps;
    int framework_only;
} sn_planmodel_link;

/* Owns every array an sn_plan_model built by sn_planmodel_build points
 * to, and says where its figures came from. */
typedef struct sn_planmodel_store {
    sn_plan_step *step;
    sn_plan_algo *algo;          /* the convolution steps' options */
    sn_plan_tensor *tensor;
    uint32_t *trace_tensor;      /* per tensor: its allocation in the trace (the model's
                                    tensors first, with their index) */
    sn_plan_access *access;
    uint64_t *call;              /* per step: its call's index in the trace's log */
    int *model_step;             /* per step: the model step it belongs to (the one at
                                    or after it: the tracer's position 2k or 2k+1) */
    int options;                 /* convolution steps with a choice of algorithm (measured) */
    char *supplied;              /* per step: a convolution whose workspace libsn supplies (its
                                    framework's buffer serves nothing else and is not touched) */
    int virtual_ws;              /* framework buffers used only as such workspaces (0 bytes here) */
    int untimed;                 /* steps whose device time was not measured (0 ms) */
    int opaque;                  /* steps libsn could not see through */
    int pinned;                  /* tensors that may never leave the device */
    int unnamed;                 /* tensors after the model's: named by no call */
    int h2d_source, d2h_source;  /* enum sn_planmodel_source */
    int h2d_copies, d2h_copies;  /* timed copies the measured bandwidths come from */
} sn_planmodel_store;

/* Fills out (arrays in store) with the iteration of model m, built from
 * trace t by sn_model_build. link may be NULL. Returns 0, or -1 when m holds
 * no iteration or out of memory (out and store are then empty). Free with
 * sn_planmodel_free; out must not be used after it. */
int sn_planmodel_build(const sn_trace *t, const sn_model *m, const sn_planmodel_link *link, sn_plan_model *out,
                       sn_planmodel_store *store);
void sn_planmodel_free(sn_planmodel_store *store);

/* The measured bandwidths alone: bytes over time of the fastest of the
 * log's successful timed copies from or to pinned host memory of at least
 * SN_PLANMODEL_MIN_COPY_BYTES (what else ran meanwhile only slows a copy
 * down); 0 where there are none. *n_h2d / *n_d2h (may be NULL): how many
 * copies there were. */
void sn_planmodel_measure_copies(const sn_trace *t, double *h2d_gbps, double *d2h_gbps, int *n_h2d, int *n_d2h);

#endif
