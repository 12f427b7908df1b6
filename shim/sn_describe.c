/*
 * sn_describe.c — cuDNN and cuBLAS argument decoding (see sn_describe.h).
 */
#include "shim/sn_describe.h"

#include <string.h>

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

typedef struct sn_tensor_info {
    const void *desc;
    uint64_t gen;
    cudnnDataType_t type;
    int nd;
    int dim[SN_SHAPE_MAX_DIMS + 3], stride[SN_SHAPE_MAX_DIMS + 3];
    uint64_t stride_hash, shape_hash;
    uint64_t extent;     /* bytes spanned */
    int dense;
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

cudnnDataType_t sn_dnn_tensor(sn_call *c, cudnnTensorDescriptor_t desc, const void *p,
                              unsigned mode, int *dense)
{
    if (dense)
        *dense = 0;
    sn_tensor_info *ti = &sn_tensors_cache[SN_SLOT(desc)];
    uint64_t gen = sn_gen();
    if (!desc || ti->desc != desc || ti->gen != gen) {
        sn_real_cudnnGetTensorNdDescriptor_fn get = SN_REAL(cudnnGetTensorNdDescriptor);
        sn_tensor_info fresh;
        fresh.type = CUDNN_DATA_FLOAT;
        if (!desc || !get ||
            get(desc, SN_SHAPE_MAX_DIMS + 3, &fresh.type, &fresh.nd, fresh.dim, fresh.stride) !=
                CUDNN_STATUS_SUCCESS ||
            fresh.nd <= 0 || fresh.nd > SN_SHAPE_MAX_DIMS + 3) {
            c->flags |= SN_CALL_OPAQUE;
            return CUDNN_DATA_FLOAT;
        }
        fresh.stride_hash = 0;
        for (int i = 0; i < fresh.nd; i++)
            fresh.stride_hash = sn_hash_mix(fresh.stride_hash, (uint64_t)fresh.stride[i]);
        fresh.dense = sn_extent_is_dense(fresh.nd, fresh.dim, fresh.stride);
        fresh.extent = sn_extent_strided(fresh.nd, fresh.dim, fresh.stride, sn_dnn_elem_bytes(fresh.type));
        int nd = fresh.nd > SN_SHAPE_MAX_DIMS ? SN_SHAPE_MAX_DIMS : fresh.nd;
        fresh.shape_hash = (uint64_t)nd + 1;
        for (int i = 0; i < nd; i++)
            fresh.shape_hash = sn_hash_mix(fresh.shape_hash, (uint64_t)(unsigned)fresh.dim[i]);
        fresh.desc = desc;
        fresh.gen = gen;
        *ti = fresh;
    }
    sn_call_shape_hashed(c, ti->nd, ti->dim, ti->shape_hash);
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

static int sn_dnn_filter_range(sn_call *c, cudnnFilterDescriptor_t desc, const void *p,
                               unsigned mode, cudnnDataType_t *type_out)
{
    sn_tensor_info *fi = &sn_filters_cache[SN_SLOT(desc)];
    uint64_t gen = sn_gen();
    if (!desc || fi->desc != desc || fi->gen != gen) {
        sn_real_cudnnGetFilterNdDescriptor_fn get = SN_REAL(cudnnGetFilterNdDescriptor);
        sn_tensor_info fresh;
        cudnnTensorFormat_t format;
        fresh.type = CUDNN_DATA_FLOAT;
        if (!desc || !get ||
            get(desc, SN_SHAPE_MAX_DIMS + 3, &fresh.type, &format, &fresh.nd, fresh.dim) !=
                CUDNN_STATUS_SUCCESS ||
            fresh.nd <= 0 || fresh.nd > SN_SHAPE_MAX_DIMS + 3) {
            c->flags |= SN_CALL_OPAQUE;
            return 0;
        }
        fresh.desc = desc;
        fresh.gen = gen;
        *fi = fresh;
    }
    cudnnDataType_t type = fi->type;
    int nd = fi->nd;
    const int *dim = fi->dim;
    sn_call_shape(c, nd, dim);
    uint64_t count = 1;
    for (int i = 0; i < nd; i++) {
        if (dim[i] <= 0)
            return 0;
        count *= (uint64_t)dim[i];
    }
    if (type_out)
        *type_out = type;
    int before = c->nranges;
    sn_call_range(c, p, count * sn_dnn_elem_bytes(type), mode);
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
