/*
 * test_cudnn_util.h — helpers shared by the cuDNN tests: a deterministic
 * random source, host images of strided device tensors, device upload and
 * download through the CUDA runtime, and the error measure the tests hold
 * results to (max |got - ref| over max |ref|).
 *
 * The tests are ordinary CUDA programs: they use only the public cuDNN and
 * runtime APIs, so the same binaries would run against the real libraries.
 */
#ifndef TEST_CUDNN_UTIL_H
#define TEST_CUDNN_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#define CHECK_DNN(x)                                                                          \
    do {                                                                                      \
        cudnnStatus_t st_ = (x);                                                              \
        if (st_ != CUDNN_STATUS_SUCCESS) {                                                    \
            char msg_[256];                                                                   \
            cudnnGetLastErrorString(msg_, sizeof msg_);                                       \
            fail_msg("%s:%d: %s -> %s (%s)", __FILE__, __LINE__, #x, cudnnGetErrorString(st_), msg_); \
        }                                                                                     \
    } while (0)

#define CHECK_CUDA(x) assert_int_equal((x), cudaSuccess)

/* ---- random numbers ------------------------------------------------------ */

static uint64_t test_rng_state = 0x243f6a8885a308d3ull;
static inline void test_seed(uint64_t s) { test_rng_state = s * 0x9e3779b97f4a7c15ull + 1; }
static inline uint64_t test_next(void)
{
    uint64_t z = (test_rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline int test_int(int lo, int hi) { return lo + (int)(test_next() % (uint64_t)(hi - lo + 1)); }
static inline float test_uniform(float lo, float hi)
{
    return lo + (hi - lo) * (float)((test_next() >> 40) * (1.0 / 16777216.0));
}

/* ---- strided tensors ----------------------------------------------------- */

/* A host image of a device tensor: dims/strides exactly as its descriptor;
 * `data` spans the whole strided extent, gaps included. */
typedef struct {
    int nb;
    int dim[8];
    int stride[8];
    size_t span;       /* elements from the first to one past the last */
    float *data;
    float *dev;
    cudnnTensorDescriptor_t desc;
} ttensor;

/* Strides for dims in order perm (perm[0] outermost ... innermost), each
 * dimension padded by pad extra elements so that views have gaps. */
static inline void tt_strides(int nb, const int *dim, const int *perm, int pad, int *stride)
{
    int s = 1;
    for (int i = nb - 1; i >= 0; i--) {
        int d = perm[i];
        stride[d] = s;
        s *= dim[d] + (i == nb - 1 ? pad : 0);
    }
}

static inline size_t tt_span_of(int nb, const int *dim, const int *stride)
{
    size_t last = 0;
    for (int i = 0; i < nb; i++)
        last += (size_t)(dim[i] - 1) * stride[i];
    return last + 1;
}

/* layout: 0 packed NCHW, 1 channels innermost (NHWC-like), 2 NCHW with a gap
 * after each innermost row. */
static inline void tt_init(ttensor *t, int nb, const int *dim, int layout)
{
    memset(t, 0, sizeof *t);
    t->nb = nb;
    memcpy(t->dim, dim, (size_t)nb * sizeof *dim);
    int perm[8];
    for (int i = 0; i < nb; i++)
        perm[i] = i;
    if (layout == 1) {
        /* N, spatial..., C */
        perm[0] = 0;
        for (int i = 2; i < nb; i++)
            perm[i - 1] = i;
        perm[nb - 1] = 1;
    }
    tt_strides(nb, dim, perm, layout == 2 ? 3 : 0, t->stride);
    t->span = tt_span_of(nb, dim, t->stride);
    t->data = calloc(t->span, sizeof(float));
    cudnnCreateTensorDescriptor(&t->desc);
    cudnnSetTensorNdDescriptor(t->desc, CUDNN_DATA_FLOAT, nb, t->dim, t->stride);
    if (cudaMalloc((void **)&t->dev, t->span * sizeof(float)) != cudaSuccess)
        t->dev = NULL;
}

static inline void tt_free(ttensor *t)
{
    free(t->data);
    cudaFree(t->dev);
    cudnnDestroyTensorDescriptor(t->desc);
    memset(t, 0, sizeof *t);
}

static inline size_t tt_off(const ttensor *t, const int *idx)
{
    size_t o = 0;
    for (int i = 0; i < t->nb; i++)
        o += (size_t)idx[i] * t->stride[i];
    return o;
}

static inline size_t tt_elems(const ttensor *t)
{
    size_t n = 1;
    for (int i = 0; i < t->nb; i++)
        n *= (size_t)t->dim[i];
    return n;
}

/* Offset of the i-th element in row-major order of the dims. */
static inline size_t tt_nth(const ttensor *t, size_t i)
{
    size_t o = 0;
    for (int d = t->nb - 1; d >= 0; d--) {
        o += (i % (size_t)t->dim[d]) * t->stride[d];
        i /= (size_t)t->dim[d];
    }
    return o;
}

/* Random contents everywhere (gaps too, so a write into a gap is visible). */
static inline void tt_random(ttensor *t, float lo, float hi)
{
    for (size_t i = 0; i < t->span; i++)
        t->data[i] = test_uniform(lo, hi);
}

static inline void tt_upload(ttensor *t)
{
    cudaMemcpy(t->dev, t->data, t->span * sizeof(float), cudaMemcpyHostToDevice);
}

/* Device contents into out (span elements). */
static inline void tt_download(const ttensor *t, float *out)
{
    cudaMemcpy(out, t->dev, t->span * sizeof(float), cudaMemcpyDeviceToHost);
}

/* ---- comparisons ---------------------------------------------------------- */

/* max |got - ref| / max |ref| over the elements of t (ref in double). */
static inline double rel_error(const ttensor *t, const float *got, const double *ref)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < tt_elems(t); i++) {
        size_t o = tt_nth(t, i);
        num = fmax(num, fabs((double)got[o] - ref[o]));
        den = fmax(den, fabs(ref[o]));
    }
    return den > 0 ? num / den : num;
}

/* 1 when got leaves every gap (non-element) position of t as in orig. */
static inline int gaps_untouched(const ttensor *t, const float *got, const float *orig)
{
    char *is_elem = calloc(t->span, 1);
    for (size_t i = 0; i < tt_elems(t); i++)
        is_elem[tt_nth(t, i)] = 1;
    int ok = 1;
    for (size_t i = 0; i < t->span && ok; i++)
        if (!is_elem[i] && memcmp(&got[i], &orig[i], sizeof(float)) != 0)
            ok = 0;
    free(is_elem);
    return ok;
}

/* A double copy of a tensor's host image, for references that blend into it. */
static inline double *tt_to_double(const ttensor *t)
{
    double *d = malloc(t->span * sizeof *d);
    for (size_t i = 0; i < t->span; i++)
        d[i] = t->data[i];
    return d;
}

#endif
