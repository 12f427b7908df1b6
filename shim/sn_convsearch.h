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
#include "common/sn_call.h"

/* One convolution as the library sees it, whatever its direction: x the
 * input (dx for backward data), w the filter (dw for backward filter), y
 * the output (dy for the backward directions). */
typedef struct sn_conv_geom {
    cudnnHandle_t handle;
    cudnnTensorDescriptor_t x;
    cudnnFilterDescriptor_t w;
    cudnnTensorDescriptor_t y;
    cudnnConvolutionDescriptor_t conv;
} sn_conv_geom;

/* Measures c's configuration (c->conf, c->op) and hands the result to the
 * core; ok = 0 (the framework's call failed): nothing is measured and the
 * next call of the configuration tries again. */
void sn_conv_search(const sn_call *c, const sn_conv_geom *g, int ok);

#endif
