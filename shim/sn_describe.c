/*
 * sn_describe.c — cuDNN and cuBLAS argument decoding (see sn_describe.h).
 */
#include "shim/sn_describe.h"

#include <string.h>

#include "common/sn_options.h"

/* ---- caches ----------------------------------------------------------------- */

static uint64_t sn_generation = 1;

void sn_describe_invalidate(void)
{
    __atomic_add_fetch(&sn_generation, 1, __ATOMIC_RELEASE);
}

static inline uint64_t sn_gen(void)
{
    return __atomic_load_n(&sn_generation, __ATOMIC_ACQUIRE);
}

#define SN_CACHE_SLOTS 32
#define SN_SLOT(p) ((((uintptr_t)(p)) >> 4) % SN_CACHE_SLOTS)

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
#define SN_TLS __thread __attribute__((tls_model("initial-exec")))
static SN_TLS sn_tensor_info sn_tensors_cache[SN_CACHE_SLOTS];
static SN_TLS sn_tensor_info sn_filters_cache[SN_CACHE_SLOTS];
static SN_TLS sn_handle_info sn_dnn_cache[8], sn_blas_cache[8];

void *sn_dnn_stream(cudnnHandle_t handle)
{
    sn_handle_info *h = &sn_dnn_cache[SN_SLOT(handle) % 8];
    uint64_t gen = sn_gen();
    if (h->handle == handle && h->gen == gen)
        return h->stream;
    sn_real_cudnnGetStream_fn get = SN_REAL(cudnnGetStream);
    cudaStream_t s = NULL;
    if (!get || get(handle, &s) != CUDNN_STATUS_SUCCESS)
        return NULL;
    h->handle = handle;
    h->gen = gen;
    h->stream = s;
    return s;
}

static sn_handle_info *sn_blas_info(cublasHandle_t handle)
{
    sn_handle_info *h = &sn_blas_cache[SN_SLOT(handle) % 8];
    uint64_t gen = sn_gen();
    if (h->handle == handle && h->gen == gen)
        return h;
    sn_real_cublasGetStream_v2_fn get = SN_REAL(cublasGetStream_v2);
    sn_real_cublasGetPointerMode_v2_fn mode = SN_REAL(cublasGetPointerMode_v2);
    cudaStream_t s = NULL;
    cublasPointerMode_t m = CUBLAS_POINTER_MODE_HOST;
    if (!get || get(handle, &s) != CUBLAS_STATUS_SUCCESS || !mode ||
        mode(handle, &m) != CUBLAS_STATUS_SUCCESS)
        return NULL;
    h->handle = handle;
    h->gen = gen;
    h->stream = s;
    h->pointer_mode = (int)m;
    return h;
}

void *sn_blas_stream(cublasHandle_t handle)
{
    sn_handle_info *h = sn_blas_info(handle);
    return h ? h->stream : NULL;
}

static unsigned sn_dnn_elem_bytes(cudnnDataType_t t)
{
    switch (t) {
    case CUDNN_DATA_DOUBLE: return 8;
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_BFLOAT16: return 2;
    case CUDNN_DATA_INT8:
    case CUDNN_DATA_UINT8:
    case CUDNN_DATA_BOOLEAN:
    case CUDNN_DATA_FP8_E4M3:
    case CUDNN_DATA_FP8_E5M2: return 1;
    case CUDNN_DATA_INT64: return 8;
    default: return 4;
    }
}

/* Shape and shape hash of the first SN_SHAPE_MAX_DIMS dimensions (the
 * hash is the one sn_call_shape computes). */
static void sn_info_shape(sn_tensor_info *ti, int nd, const int *dim)
{
    if (nd > SN_SHAPE_MAX_DIMS)
        nd = SN_SHAPE_MAX_DIMS;
    memset(&ti->shape, 0, sizeof ti->shape);
    ti->shape.nd = nd;
    ti->shape_hash = (uint64_t)nd + 1;
    for (int i = 0; i < nd; i++) {
        ti->shape.dim[i] = dim[i];
        ti->shape_hash = sn_hash_mix(ti->shape_hash, (uint64_t)(unsigned)dim[i]);
    }
}

/* Reads a tensor descriptor into its cache slot; NULL if cuDNN cannot
 * describe it. */
static __attribute__((noinline)) sn_tensor_info *sn_tensor_fill(sn_tensor_info *ti,
                                                               cudnnTensorDescriptor_t desc,
                                                               uint64_t gen)
{
    sn_real_cudnnGetTensorNdDescriptor_fn get = SN_REAL(cudnnGetTensorNdDescriptor);
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    int nd = 0, dim[SN_SHAPE_MAX_DIMS + 3], stride[SN_SHAPE_MAX_DIMS + 3];
    if (!desc || !get ||
        get(desc, SN_SHAPE_MAX_DIMS + 3, &type, &nd, dim, stride) != CUDNN_STATUS_SUCCESS ||
        nd <= 0 || nd > SN_SHAPE_MAX_DIMS + 3)
        return NULL;
    sn_tensor_info fresh;
    fresh.type = type;
    fresh.stride_hash = 0;
    for (int i = 0; i < nd; i++)
        fresh.stride_hash = sn_hash_mix(fresh.stride_hash, (uint64_t)stride[i]);
    fresh.dense = sn_extent_is_dense(nd, dim, stride);
    fresh.valid = 1;
    fresh.extent = sn_extent_strided(nd, dim, stride, sn_dnn_elem_bytes(type));
    sn_info_shape(&fresh, nd, dim);
    fresh.desc = desc;
    fresh.gen = gen;
    *ti = fresh;
    return ti;
}

cudnnDataType_t sn_dnn_tensor(sn_call *c, cudnnTensorDescriptor_t desc, const void *p,
                              unsigned mode, int *dense)
{
    if (dense)
        *dense = 0;
    sn_tensor_info *ti = &sn_tensors_cache[SN_SLOT(desc)];
    uint64_t gen = sn_gen();
    if (__builtin_expect(!desc || ti->desc != desc || ti->gen != gen, 0) &&
        !sn_tensor_fill(ti, desc, gen)) {
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

int sn_dnn_scale_nonzero(const void *scale, cudnnDataType_t type)
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

void sn_dnn_output(sn_call *c, cudnnTensorDescriptor_t desc, void *p, const void *beta)
{
    int before = c->nranges, dense = 0;
    cudnnDataType_t type = sn_dnn_tensor(c, desc, p, SN_WRITE, &dense);
    if (c->nranges == before)
        return;
    sn_range *r = &c->range[c->nranges - 1];
    if (sn_dnn_scale_nonzero(beta, type))
        r->mode |= SN_READ;
    else if (dense)
        r->mode |= SN_OVERWRITE;
}

/* Reads a filter descriptor into its cache slot; NULL if cuDNN cannot
 * describe it. */
static __attribute__((noinline)) sn_tensor_info *sn_filter_fill(sn_tensor_info *fi,
                                                               cudnnFilterDescriptor_t desc,
                                                               uint64_t gen)
{
    sn_real_cudnnGetFilterNdDescriptor_fn get = SN_REAL(cudnnGetFilterNdDescriptor);
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    cudnnTensorFormat_t format;
    int nd = 0, dim[SN_SHAPE_MAX_DIMS + 3];
    if (!desc || !get ||
        get(desc, SN_SHAPE_MAX_DIMS + 3, &type, &format, &nd, dim) != CUDNN_STATUS_SUCCESS ||
        nd <= 0 || nd > SN_SHAPE_MAX_DIMS + 3)
        return NULL;
    sn_tensor_info fresh;
    fresh.type = type;
    fresh.stride_hash = 0;
    fresh.dense = 0;
    fresh.valid = 1;
    uint64_t count = 1;
    for (int i = 0; i < nd; i++) {
        if (dim[i] <= 0)
            fresh.valid = 0;
        count *= (uint64_t)dim[i];
    }
    fresh.extent = fresh.valid ? count * sn_dnn_elem_bytes(type) : 0;
    sn_info_shape(&fresh, nd, dim);
    fresh.desc = desc;
    fresh.gen = gen;
    *fi = fresh;
    return fi;
}

static int sn_dnn_filter_range(sn_call *c, cudnnFilterDescriptor_t desc, const void *p,
                               unsigned mode, cudnnDataType_t *type_out)
{
    sn_tensor_info *fi = &sn_filters_cache[SN_SLOT(desc)];
    uint64_t gen = sn_gen();
    if (__builtin_expect(!desc || fi->desc != desc || fi->gen != gen, 0) &&
        !sn_filter_fill(fi, desc, gen)) {
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

void sn_dnn_filter(sn_call *c, cudnnFilterDescriptor_t desc, const void *p, unsigned mode)
{
    sn_dnn_filter_range(c, desc, p, mode, NULL);
}

void sn_dnn_filter_output(sn_call *c, cudnnFilterDescriptor_t desc, void *p, const void *beta)
{
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    if (!sn_dnn_filter_range(c, desc, p, SN_WRITE, &type))
        return;
    sn_range *r = &c->range[c->nranges - 1];
    r->mode |= sn_dnn_scale_nonzero(beta, type) ? SN_READ : SN_OVERWRITE;
}

uint64_t sn_dnn_conv_conf(const sn_call *c, cudnnConvolutionDescriptor_t conv)
{
    sn_real_cudnnGetConvolutionNdDescriptor_fn get = SN_REAL(cudnnGetConvolutionNdDescriptor);
    sn_real_cudnnGetConvolutionGroupCount_fn groups = SN_REAL(cudnnGetConvolutionGroupCount);
    sn_real_cudnnGetConvolutionMathType_fn math = SN_REAL(cudnnGetConvolutionMathType);
    enum { MAXD = CUDNN_DIM_MAX };
    int nd = 0, pad[MAXD], stride[MAXD], dil[MAXD], g = 1;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    cudnnMathType_t mt = CUDNN_DEFAULT_MATH;
    /* only a plan that chooses algorithms needs it */
    if (sn_opt.mode != SN_MODE_MANAGE || sn_opt.workspace == SN_WORKSPACE_KEEP || sn_opt.policy == SN_POLICY_LRU)
        return 0;
    if (!conv || !get || (c->flags & SN_CALL_OPAQUE) ||
        get(conv, MAXD, &nd, pad, stride, dil, &mode, &type) != CUDNN_STATUS_SUCCESS || nd <= 0 || nd > MAXD)
        return 0;
    if (groups)
        groups(conv, &g);
    if (math)
        math(conv, &mt);
    uint64_t h = sn_hash_mix(sn_hash_mix((uint64_t)c->op + 1, c->shape_hash), c->params);
    for (int i = 0; i < nd; i++)
        h = sn_hash_mix(h, ((uint64_t)(unsigned)pad[i] << 40) ^ ((uint64_t)(unsigned)stride[i] << 20) ^
                               (uint64_t)(unsigned)dil[i]);
    h = sn_hash_mix(h, ((uint64_t)mode << 48) ^ ((uint64_t)type << 32) ^ ((uint64_t)mt << 24) ^ (uint64_t)(unsigned)g);
    return h ? h : 1;
}

int sn_blas_beta_nonzero(cublasHandle_t handle, const float *beta)
{
    sn_handle_info *h = sn_blas_info(handle);
    if (!h || h->pointer_mode != CUBLAS_POINTER_MODE_HOST)
        return 1;
    return !beta || *beta != 0.0f;
}

int sn_blas_pointer_mode(cublasHandle_t handle)
{
    sn_handle_info *h = sn_blas_info(handle);
    return h ? h->pointer_mode : CUBLAS_POINTER_MODE_HOST;
}
