/*
 * sn_model_int.h — passes of sn_model_build that stand on their own, for
 * the tracer's unit tests: each takes what the passes before it left in
 * the model and plain arrays, so a test can hand it a small model and
 * check what it adds. Nothing outside tracer/sn_model.c and its tests
 * calls them; the rest of libsn builds the model whole (sn_model.h).
 */
#ifndef SN_MODEL_INT_H
#define SN_MODEL_INT_H

#include <stdint.h>

#include "tracer/sn_model.h"
#include "tracer/sn_trace.h"

/* A data-flow edge of the iteration: layer consumer reads trace tensor
 * `tensor`, which layer producer wrote. */
typedef struct sn_model_edge {
    int producer, consumer;
    uint32_t tensor;
} sn_model_edge;

/* The layer graph from the iteration's edges (v[0..n), no two equal):
 * each layer's distinct producers (edge_layer from in_begin, nin), joins,
 * forks (a tensor read by more than one layer), nout, consumers, and the
 * readers of each model tensor (tensor_map: trace tensor -> model tensor,
 * -1). Needs m->layers and m->tensors. Returns -1 when out of memory. */
int sn_model_link_layers(sn_model *m, const sn_model_edge *v, int n, const int *tensor_map);

/* Steps' durations: the mean over the periodic iterations of the log
 * (m->period, first_index, periodic_begin, periodic_end) of each step's
 * timed calls (step_call: log index of each step), summed into iter_ms
 * and, for the reference pass `ref`, into its layers' fwd_ms and bwd_ms
 * (layer_of: per step). A step never timed gets -1. */
void sn_model_step_times(sn_model *m, const sn_trace *t, const uint64_t *step_call, const int *layer_of, int ref);

#endif
