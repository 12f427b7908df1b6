/*
 * sn_describe.h — turning cuDNN and cuBLAS arguments into sn_call ranges.
 *
 * Descriptors are read back through the real cuDNN getters, so the extents
 * are whatever the library itself will use (strides included). A value of
 * beta other than zero means the output is read as well as written.
 *
 * Descriptors and handles are read back once and cached per thread with
 * everything a call needs (a tensor's shape, its hash, its extent, whether
 * it is dense; a handle's stream and pointer mode). Every wrapper reads
 * them, so the caches and their hit paths are here, inline; reading a
 * descriptor back is sn_describe.c's.
 */
#ifndef SN_DESCRIBE_H
#define SN_DESCRIBE_H

#include <string.h>

#include "common/sn_hooks.h"
#include "common/sn_call.h"

/* Any change to a descriptor or a handle's stream or pointer mode (all of
 * which libsn intercepts) invalidates the caches: a new generation. */
void sn_describe_invalidate(void);

extern uint64_t sn_describe_generation;

static inline uint64_t sn_describe_gen(void)
{
    return __atomic_load_n(&sn_describe_generation, __ATOMIC_ACQUIRE);
}

#define SN_DESCRIBE_SLOTS 32
#define SN_DESCRIBE_SLOT(p) ((((uintptr_t)(p)) >> 4) % SN_DESCRIBE_SLOTS)
#define SN_DESCRIBE_HANDLES 8

/* What a descriptor says, ready to be added to a call: the recorded shape
 * (first SN_SHAPE_MAX_DIMS dimensions) with its hash, and the bytes the
 * data spans. */
typedef struct sn_tensor_info {
    const void *desc;
    uint64_t gen;
    cudnnDataType_t type;
    int dense;           /* tensors: packed, no gaps */
    int valid;           /* filters: every dimension positive */
    sn_shape shape;
    uint64_t shape_hash;
    uint64_t stride_hash;
    uint64_t extent;
} sn_tensor_info;

typedef struct sn_handle_info {
    const void *handle;
    uint64_t gen;
    void *stream;
    int pointer_mode;   /* cuBLAS only */
} sn_handle_info;

/* initial-exec: the general TLS model goes through __tls_get_addr, which
 * takes the loader's lock after libraries were dlopened (cudart does). */
#define SN_DESCRIBE_TLS __thread __attribute__((tls_model("initial-exec")))
extern SN_DESCRIBE_TLS sn_tensor_info sn_describe_tensors[SN_DESCRIBE_SLOTS];
extern SN_DESCRIBE_TLS sn_tensor_info sn_describe_filters[SN_DESCRIBE_SLOTS];
extern SN_DESCRIBE_TLS sn_handle_info sn_describe_dnn[SN_DESCRIBE_HANDLES];
extern SN_DESCRIBE_TLS sn_handle_info sn_describe_blas[SN_DESCRIBE_HANDLES];

/* Read a descriptor or handle back into its cache slot; NULL if the
 * library cannot describe it. */
sn_tensor_info *sn_describe_tensor_fill(sn_tensor_info *ti, cudnnTensorDescriptor_t desc, uint64_t gen);
sn_tensor_info *sn_describe_filter_fill(sn_tensor_info *fi, cudnnFilterDescriptor_t desc, uint64_t gen);
sn_handle_info *sn_describe_dnn_fill(sn_handle_info *h, cudnnHandle_t handle, uint64_t gen);
sn_handle_info *sn_describe_blas_fill(sn_handle_info *h, cublasHandle_t handle, uint64_t gen);

/* Stream of a cuDNN / cuBLAS handle (NULL, the legacy stream, on failure). */
static inline void *sn_dnn_stream(cudnnHandle_t handle)
{
    sn_handle_info *h = &sn_describe_dnn[SN_DESCRIBE_SLOT(handle) % SN_DESCRIBE_HANDLES];
    uint64_t gen = sn_describe_gen();
    if (__builtin_expect(h->handle != handle || h->gen != gen, 0))
        h = sn_describe_dnn_fill(h, handle, gen);
    return h ? h->stream : NULL;
}

static inline sn_handle_info *sn_blas_info(cublasHandle_t handle)
{
    sn_handle_info *h = &sn_describe_blas[SN_DESCRIBE_SLOT(handle) % SN_DESCRIBE_HANDLES];
    uint64_t gen = sn_describe_gen();
    if (__builtin_expect(h->handle != handle || h->gen != gen, 0))
        h = sn_describe_blas_fill(h, handle, gen);
    return h;
}

static inline void *sn_blas_stream(cublasHandle_t handle)
{
    sn_handle_info *h = sn_blas_info(handle);
    return h ? h->stream : NULL;
}

/* Adds the tensor's range with mode and its shape. Returns the data type
 * (CUDNN_DATA_FLOAT if unknown), and through dense whether it is packed. */
static inline cudnnDataType_t sn_dnn_tensor(sn_call *c, cudnnTensorDescriptor_t desc, const void *p,
                                            unsigned mode, int *dense)
{
    if (dense)
        *dense = 0;
    sn_tensor_info *ti = &sn_describe_tensors[SN_DESCRIBE_SLOT(desc)];
    uint64_t gen = sn_describe_gen();
    if (__builtin_expect(!desc || ti->desc != desc || ti->gen != gen, 0) &&
        !sn_describe_tensor_fill(ti, desc, gen)) {
        c->flags |= SN_CALL_OPAQUE;
        return CUDNN_DATA_FLOAT;
    }
    sn_call_shape_ready(c, &ti->shape, ti->shape_hash);
    c->params = sn_hash_mix(c->params, ti->stride_hash);
    if (p) {
        sn_call_range(c, p, ti->extent, mode);
        if (dense)
            *dense = ti->dense;
    }
    return ti->type;
}

/* Whether a host scaling factor is non-zero: float for float/half data,
 * double for double data (cuDNN's rule). NULL counts as non-zero. */
static inline int sn_dnn_scale_nonzero(const void *scale, cudnnDataType_t type)
{
    if (!scale)
        return 1;
    if (type == CUDNN_DATA_DOUBLE) {
        double v;
        memcpy(&v, scale, sizeof v);
        return v != 0.0;
    }
    float v;
    memcpy(&v, scale, sizeof v);
    return v != 0.0f;
}

/* An output tensor scaled by *beta: read too when beta != 0; overwritten
 * entirely when beta == 0 and the layout is dense. */
static inline void sn_dnn_output(sn_call *c, cudnnTensorDescriptor_t desc, void *p, const void *beta)
{
    int before = c->nranges, dense = 0;
    cudnnDataType_t type = sn_dnn_tensor(c, desc, p, SN_WRITE, &dense);
    if (c->nranges == before)
        return;
    sn_range *r = sn_call_range_at(c, c->nranges - 1);
    if (sn_dnn_scale_nonzero(beta, type))
        r->mode |= SN_READ;
    else if (dense)
        r->mode |= SN_OVERWRITE;
}

/* A filter's range and shape; returns 1 when the range was added. */
static inline int sn_dnn_filter_range(sn_call *c, cudnnFilterDescriptor_t desc, const void *p, unsigned mode,
                                      cudnnDataType_t *type_out)
{
    sn_tensor_info *fi = &sn_describe_filters[SN_DESCRIBE_SLOT(desc)];
    uint64_t gen = sn_describe_gen();
    if (__builtin_expect(!desc || fi->desc != desc || fi->gen != gen, 0) &&
        !sn_describe_filter_fill(fi, desc, gen)) {
        c->flags |= SN_CALL_OPAQUE;
        return 0;
    }
    sn_call_shape_ready(c, &fi->shape, fi->shape_hash);
    if (!fi->valid)
        return 0;
    if (type_out)
        *type_out = fi->type;
    int before = c->nranges;
    sn_call_range(c, p, fi->extent, mode);
    return c->nranges > before;
}

/* Filter (weights) range and shape. */
static inline void sn_dnn_filter(sn_call *c, cudnnFilterDescriptor_t desc, const void *p, unsigned mode)
{
    sn_dnn_filter_range(c, desc, p, mode, NULL);
}

/* Output filter (weight gradient) scaled by *beta. */
static inline void sn_dnn_filter_output(sn_call *c, cudnnFilterDescriptor_t desc, void *p, const void *beta)
{
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    if (!sn_dnn_filter_range(c, desc, p, SN_WRITE, &type))
        return;
    sn_range *r = sn_call_range_at(c, c->nranges - 1);
    r->mode |= sn_dnn_scale_nonzero(beta, type) ? SN_READ : SN_OVERWRITE;
}

/* The configuration of a convolution call c already described (its
 * tensors' shapes and layouts are in c): c's operation with those and the
 * convolution descriptor's padding, strides, dilation, mode, compute type,
 * group count and math type, what the library's algorithms depend on; 0
 * when the descriptor cannot be read, or when no plan chooses algorithms
 * (not manage mode, SN_WORKSPACE=keep, SN_POLICY=lru). */
uint64_t sn_dnn_conv_conf(const sn_call *c, cudnnConvolutionDescriptor_t conv);

/* cuBLAS: 1 if *beta may be non-zero (device pointer mode counts as yes). */
static inline int sn_blas_beta_nonzero(cublasHandle_t handle, const float *beta)
{
    sn_handle_info *h = sn_blas_info(handle);
    if (!h || h->pointer_mode != CUBLAS_POINTER_MODE_HOST)
        return 1;
    return !beta || *beta != 0.0f;
}

/* cublasPointerMode_t of the handle. */
static inline int sn_blas_pointer_mode(cublasHandle_t handle)
{
    sn_handle_info *h = sn_blas_info(handle);
    return h ? h->pointer_mode : CUBLAS_POINTER_MODE_HOST;
}

#endif
