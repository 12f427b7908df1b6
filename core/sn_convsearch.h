/*
 * sn_convsearch.h — measuring what a convolution configuration's
 * algorithms cost, for manage mode's plan (SN_WORKSPACE auto or min): once
 * per configuration, right after the framework's first call of it while
 * the iteration is being profiled, the library's own search
 * (cudnnFind*AlgorithmEx) times every algorithm it supports on operands
 * and workspace of libsn's scratch memory, under the budget. On a GPU the
 * search runs each algorithm; on the simulator its cost model answers.
 * The framework's buffers are not touched and the search is not a
 * framework step: it runs after the call's own timing, outside every libsn
 * lock.
 */
#ifndef SN_CONVSEARCH_H
#define SN_CONVSEARCH_H

#include "common/sn_hooks.h"
#include "allocator/sn_arena.h"
#include "common/sn_call.h"
#include "tracer/sn_trace.h"

/* One convolution as the library sees it, whatever its direction: x the
 * input (dx for backward data), w the filter (dw for backward filter), y
 * the output (dy for the backward directions). */
struct sn_conv_geom {
    cudnnHandle_t handle;
    cudnnTensorDescriptor_t x;
    cudnnFilterDescriptor_t w;
    cudnnTensorDescriptor_t y;
    cudnnConvolutionDescriptor_t conv;
};

/* Measures c's configuration (c->conf, c->op, c->geom) and stores the
 * result with the device's trace; ok = 0 (the framework's call failed):
 * nothing is measured and the next call of the configuration tries again.
 * Called by sn_core_call after the call, outside the step's timing and
 * with no libsn lock held. */
void sn_conv_search(const sn_call *c, int ok);

/* What the search needs of the rest of the core (sn_core.c): the
 * search's operands and workspace come from libsn's scratch
 * (search_begin: *addr, resident and pinned until search_end, which gives
 * them back; 0 when the budget cannot hold bytes), and what was measured
 * is handed over with conv_measured (n < 0: nothing was tried, the next
 * call of the configuration tries again; n = 0: nothing could be
 * measured). */
int sn_core_search_begin(int dev, void *stream, uint64_t bytes, uintptr_t *addr, sn_arena_ticket *t);
/* The memory the budget could give a search now (0 when manage mode does
 * not run on dev): under SN_POLICY=auto evicting what may leave, else
 * what is free (a search larger than that would evict). */
uint64_t sn_core_search_room(int dev);
void sn_core_search_end(int dev, void *stream, sn_arena_ticket *t);
void sn_core_conv_measured(int dev, uint64_t conf, const sn_trace_algo *a, int n);

#endif
