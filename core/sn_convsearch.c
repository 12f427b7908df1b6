/*
 * sn_convsearch.c — the algorithm search of a convolution configuration
 * (see sn_convsearch.h). The heuristic query (cudnnGet*Algorithm_v7) names
 * the algorithms the library supports for the configuration and the
 * workspace each needs; the scratch then holds the three operands and the
 * largest of those workspaces, or as much as the budget could hold beside
 * what cannot leave (the rest is evicted for the search: once per
 * configuration, and an algorithm never timed is never offered), but at
 * least the framework's own workspace size. The operands are zeroed first: a GPU's
 * arithmetic on leftover bytes (NaNs, denormals) may not run at the speed
 * of real data.
 */
#include "core/sn_convsearch.h"

#include <string.h>

#include "core/sn_core.h"

#define SN_SEARCH_MAX 16

/* The search's buffers in libsn's scratch: the operands in the order x, w,
 * y, then the workspace; max: how many results fit. */
typedef struct sn_search_bufs {
    void *x, *w, *y, *ws;
    uint64_t ws_bytes;
    int max;
} sn_search_bufs;
#define SN_SEARCH_ALIGN 256

static uint64_t sn_align(uint64_t v)
{
    return (v + SN_SEARCH_ALIGN - 1) / SN_SEARCH_ALIGN * SN_SEARCH_ALIGN;
}

/* The three directions differ in their entry points and perf structs
 * only; one body for each, from this template. */
#define SN_SEARCH_FN(fn, perf_t, maxcount, heuristic, find, in1, in2, out)                                  \
    static int fn(const sn_conv_geom *g, const sn_call *c, sn_trace_algo *out_algos)                      \
    {                                                                                                      \
        int max = 0, got = 0;                                                                              \
        perf_t perf[SN_SEARCH_MAX];                                                                        \
        if (!SN_REAL_EXISTS(maxcount) || !SN_REAL_EXISTS(heuristic) || !SN_REAL_EXISTS(find) ||             \
            SN_REAL(maxcount)(g->handle, &max) != CUDNN_STATUS_SUCCESS || max <= 0)                       \
            return 0;                                                                                      \
        if (max > SN_SEARCH_MAX)                                                                           \
            max = SN_SEARCH_MAX;                                                                           \
        if (SN_REAL(heuristic)(g->handle, in1, in2, g->conv, out, max, &got, perf) != CUDNN_STATUS_SUCCESS) \
            return 0;                                                                                      \
        uint64_t ws = 0;                                                                                   \
        for (int i = 0; i < got; i++)                                                                      \
            if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory > ws)                             \
                ws = perf[i].memory;                                                                       \
        uint64_t ops[3];                                                                                   \
        if (sn_operands(g, ops) != 0)                                                                      \
            return 0;                                                                                      \
        uint64_t base = ops[0] + ops[1] + ops[2];                                                          \
        uint64_t room = sn_core_search_room(c->dev);                                                       \
        if (base + ws > room)                                                                              \
            ws = room > base + c->workspace ? room - base : c->workspace;                                  \
        sn_arena_ticket t;                                                                                 \
        uintptr_t at = 0;                                                                                  \
        if (sn_core_search_begin(c->dev, c->stream, base + ws, &at, &t) != 0) {                            \
            ws = c->workspace;                                                                             \
            if (sn_core_search_begin(c->dev, c->stream, base + ws, &at, &t) != 0)                          \
                return 0;                                                                                  \
        }                                                                                                  \
        void *px = (void *)at, *pw = (void *)(at + ops[0]), *py = (void *)(at + ops[0] + ops[1]);          \
        void *pws = ws ? (void *)(at + base) : NULL;                                                       \
        if (SN_REAL(cudaMemsetAsync)(px, 0, base, (cudaStream_t)c->stream) != cudaSuccess)                 \
            SN_REAL(cudaGetLastError)();                                                                   \
        const sn_search_bufs bufs = {px, pw, py, pws, ws, max};                                            \
        cudnnStatus_t st = sn_find_##fn(g, &bufs, &got, perf);                                             \
        sn_core_search_end(c->dev, c->stream, &t);                                                         \
        if (st != CUDNN_STATUS_SUCCESS)                                                                    \
            return 0;                                                                                      \
        int n = 0;                                                                                         \
        for (int i = 0; i < got; i++)                                                                      \
            if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].time >= 0)                               \
                out_algos[n++] = (sn_trace_algo){.algo = (int32_t)perf[i].algo,                            \
                                                 .deterministic = perf[i].determinism == CUDNN_DETERMINISTIC, \
                                                 .ms = perf[i].time,                                       \
                                                 .workspace = perf[i].memory};                             \
        return n;                                                                                          \
    }

/* Operand bytes, aligned, in the order x, w, y. */
static int sn_operands(const sn_conv_geom *g, uint64_t ops[3])
{
    sn_real_cudnnGetTensorSizeInBytes_fn tsize = SN_REAL(cudnnGetTensorSizeInBytes);
    sn_real_cudnnGetFilterSizeInBytes_fn fsize = SN_REAL(cudnnGetFilterSizeInBytes);
    size_t x = 0, w = 0, y = 0;
    if (!tsize || !fsize || tsize(g->x, &x) != CUDNN_STATUS_SUCCESS || fsize(g->w, &w) != CUDNN_STATUS_SUCCESS ||
        tsize(g->y, &y) != CUDNN_STATUS_SUCCESS)
        return -1;
    ops[0] = sn_align(x);
    ops[1] = sn_align(w);
    ops[2] = sn_align(y);
    return 0;
}

static cudnnStatus_t sn_find_sn_search_fwd(const sn_conv_geom *g, const sn_search_bufs *b, int *got,
                                           cudnnConvolutionFwdAlgoPerf_t *perf)
{
    return SN_REAL(cudnnFindConvolutionForwardAlgorithmEx)(g->handle, g->x, b->x, g->w, b->w, g->conv, g->y, b->y,
                                                           b->max, got, perf, b->ws, (size_t)b->ws_bytes);
}

static cudnnStatus_t sn_find_sn_search_bwd_data(const sn_conv_geom *g, const sn_search_bufs *b, int *got,
                                                cudnnConvolutionBwdDataAlgoPerf_t *perf)
{
    return SN_REAL(cudnnFindConvolutionBackwardDataAlgorithmEx)(g->handle, g->w, b->w, g->y, b->y, g->conv, g->x,
                                                                b->x, b->max, got, perf, b->ws, (size_t)b->ws_bytes);
}

static cudnnStatus_t sn_find_sn_search_bwd_filter(const sn_conv_geom *g, const sn_search_bufs *b, int *got,
                                                  cudnnConvolutionBwdFilterAlgoPerf_t *perf)
{
    return SN_REAL(cudnnFindConvolutionBackwardFilterAlgorithmEx)(g->handle, g->x, b->x, g->y, b->y, g->conv, g->w,
                                                                  b->w, b->max, got, perf, b->ws,
                                                                  (size_t)b->ws_bytes);
}

SN_SEARCH_FN(sn_search_fwd, cudnnConvolutionFwdAlgoPerf_t, cudnnGetConvolutionForwardAlgorithmMaxCount,
             cudnnGetConvolutionForwardAlgorithm_v7, cudnnFindConvolutionForwardAlgorithmEx, g->x, g->w, g->y)
SN_SEARCH_FN(sn_search_bwd_data, cudnnConvolutionBwdDataAlgoPerf_t, cudnnGetConvolutionBackwardDataAlgorithmMaxCount,
             cudnnGetConvolutionBackwardDataAlgorithm_v7, cudnnFindConvolutionBackwardDataAlgorithmEx, g->w, g->y,
             g->x)
SN_SEARCH_FN(sn_search_bwd_filter, cudnnConvolutionBwdFilterAlgoPerf_t,
             cudnnGetConvolutionBackwardFilterAlgorithmMaxCount, cudnnGetConvolutionBackwardFilterAlgorithm_v7,
             cudnnFindConvolutionBackwardFilterAlgorithmEx, g->x, g->y, g->w)

void sn_conv_search(const sn_call *c, int ok)
{
    const sn_conv_geom *g = c->geom;
    if (!ok || !g) {
        sn_core_conv_measured(c->dev, c->conf, NULL, -1);
        return;
    }
    sn_trace_algo a[SN_SEARCH_MAX];
    int n = 0;
    switch (c->op) {
    case SN_OP_CONV_FWD: n = sn_search_fwd(g, c, a); break;
    case SN_OP_CONV_BWD_DATA: n = sn_search_bwd_data(g, c, a); break;
    case SN_OP_CONV_BWD_FILTER: n = sn_search_bwd_filter(g, c, a); break;
    default: break;
    }
    sn_core_conv_measured(c->dev, c->conf, a, n);
}
