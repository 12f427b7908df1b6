/*
 * sn_describe.c — reading cuDNN descriptors and cuDNN / cuBLAS handles back
 * into the per-thread caches of sn_describe.h (the misses; the hits are
 * inline there).
 */
#include "shim/sn_describe.h"

uint64_t sn_describe_generation = 1;

#include "common/sn_options.h"

SN_DESCRIBE_TLS sn_tensor_info sn_describe_tensors[SN_DESCRIBE_SLOTS];
SN_DESCRIBE_TLS sn_tensor_info sn_describe_filters[SN_DESCRIBE_SLOTS];
SN_DESCRIBE_TLS sn_handle_info sn_describe_dnn[SN_DESCRIBE_HANDLES];
SN_DESCRIBE_TLS sn_handle_info sn_describe_blas[SN_DESCRIBE_HANDLES];

void sn_describe_invalidate(void)
{
    __atomic_add_fetch(&sn_describe_generation, 1, __ATOMIC_RELEASE);
}

sn_handle_info *sn_describe_dnn_fill(sn_handle_info *h, cudnnHandle_t handle, uint64_t gen)
{
    sn_real_cudnnGetStream_fn get = SN_REAL(cudnnGetStream);
    cudaStream_t s = NULL;
    if (!get || get(handle, &s) != CUDNN_STATUS_SUCCESS)
        return NULL;
    h->handle = handle;
    h->gen = gen;
    h->stream = s;
    return h;
}

sn_handle_info *sn_describe_blas_fill(sn_handle_info *h, cublasHandle_t handle, uint64_t gen)
{
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

sn_tensor_info *sn_describe_tensor_fill(sn_tensor_info *ti, cudnnTensorDescriptor_t desc, uint64_t gen)
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

sn_tensor_info *sn_describe_filter_fill(sn_tensor_info *fi, cudnnFilterDescriptor_t desc, uint64_t gen)
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

/* What a convolution descriptor says, hashed, per thread: read back once
 * per descriptor and generation (its setters invalidate), not per call. */
typedef struct sn_conv_info {
    cudnnConvolutionDescriptor_t desc;
    uint64_t gen;
    uint64_t hash;           /* 0: could not be read */
} sn_conv_info;
static SN_DESCRIBE_TLS sn_conv_info sn_describe_convs[SN_DESCRIBE_SLOTS];

static uint64_t sn_conv_hash(cudnnConvolutionDescriptor_t conv)
{
    sn_real_cudnnGetConvolutionNdDescriptor_fn get = SN_REAL(cudnnGetConvolutionNdDescriptor);
    sn_real_cudnnGetConvolutionGroupCount_fn groups = SN_REAL(cudnnGetConvolutionGroupCount);
    sn_real_cudnnGetConvolutionMathType_fn math = SN_REAL(cudnnGetConvolutionMathType);
    enum { MAXD = CUDNN_DIM_MAX };
    int nd = 0, pad[MAXD], stride[MAXD], dil[MAXD], g = 1;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    cudnnMathType_t mt = CUDNN_DEFAULT_MATH;
    if (!get || get(conv, MAXD, &nd, pad, stride, dil, &mode, &type) != CUDNN_STATUS_SUCCESS || nd <= 0 ||
        nd > MAXD)
        return 0;
    if (groups)
        groups(conv, &g);
    if (math)
        math(conv, &mt);
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < nd; i++)
        h = sn_hash_mix(h, ((uint64_t)(unsigned)pad[i] << 40) ^ ((uint64_t)(unsigned)stride[i] << 20) ^
                               (uint64_t)(unsigned)dil[i]);
    h = sn_hash_mix(h, ((uint64_t)mode << 48) ^ ((uint64_t)type << 32) ^ ((uint64_t)mt << 24) ^ (uint64_t)(unsigned)g);
    return h ? h : 1;
}

uint64_t sn_dnn_conv_conf(const sn_call *c, cudnnConvolutionDescriptor_t conv)
{
    /* only a plan that chooses algorithms needs it */
    if (!sn_opt_chooses_convs())
        return 0;
    if (!conv || (c->flags & SN_CALL_OPAQUE))
        return 0;
    sn_conv_info *ci = &sn_describe_convs[SN_DESCRIBE_SLOT(conv)];
    uint64_t gen = __atomic_load_n(&sn_describe_generation, __ATOMIC_ACQUIRE);
    if (ci->desc != conv || ci->gen != gen)
        *ci = (sn_conv_info){conv, gen, sn_conv_hash(conv)};
    if (!ci->hash)
        return 0;
    uint64_t h = sn_hash_mix(sn_hash_mix(sn_hash_mix((uint64_t)c->op + 1, c->shape_hash), c->params), ci->hash);
    return h ? h : 1;
}
