/*
 * hooks_cudnn.c — wrappers of cuDNN's compute calls. Each reads its tensor,
 * filter and workspace extents from the descriptors, marks outputs scaled by
 * a non-zero beta as read too, and runs as one step on the handle's stream.
 * The three convolutions also name their configuration, so that manage mode
 * can measure its algorithms once and run the one its plan chose.
 * FindEx calls run the convolution on the buffers they are given, so they
 * touch them exactly like the convolution would.
 */
#include "common/sn_options.h"
#include "core/sn_convsearch.h"
#include "shim/sn_describe.h"
#include "shim/sn_wrap.h"

/* Calls that change a descriptor or a handle libsn caches what it read of. */
#define SN_DNN_INVALIDATING(name, params, args)                                \
    SN_EXPORT cudnnStatus_t name params                                        \
    {                                                                          \
        sn_real_##name##_fn real = SN_REAL(name);                              \
        if (!real)                                                             \
            return SN_MISSING(CUDNN, name);                                    \
        SN_SCOPE(SN_LIB_CUDNN);                                                \
        cudnnStatus_t rc = real args;                                          \
        sn_describe_invalidate();                                              \
        return rc;                                                             \
    }
SN_DNN_INVALIDATING(cudnnSetStream, (cudnnHandle_t handle, cudaStream_t streamId), (handle, streamId))
SN_DNN_INVALIDATING(cudnnDestroy, (cudnnHandle_t handle), (handle))
SN_DNN_INVALIDATING(cudnnSetTensor4dDescriptor,
                    (cudnnTensorDescriptor_t tensorDesc, cudnnTensorFormat_t format,
                     cudnnDataType_t dataType, int n, int c, int h, int w),
                    (tensorDesc, format, dataType, n, c, h, w))
SN_DNN_INVALIDATING(cudnnSetTensor4dDescriptorEx,
                    (cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t dataType, int n, int c,
                     int h, int w, int nStride, int cStride, int hStride, int wStride),
                    (tensorDesc, dataType, n, c, h, w, nStride, cStride, hStride, wStride))
SN_DNN_INVALIDATING(cudnnSetTensorNdDescriptor,
                    (cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t dataType, int nbDims,
                     const int dimA[], const int strideA[]),
                    (tensorDesc, dataType, nbDims, dimA, strideA))
SN_DNN_INVALIDATING(cudnnSetTensorNdDescriptorEx,
                    (cudnnTensorDescriptor_t tensorDesc, cudnnTensorFormat_t format,
                     cudnnDataType_t dataType, int nbDims, const int dimA[]),
                    (tensorDesc, format, dataType, nbDims, dimA))
SN_DNN_INVALIDATING(cudnnDeriveBNTensorDescriptor,
                    (cudnnTensorDescriptor_t derivedBnDesc, const cudnnTensorDescriptor_t xDesc,
                     cudnnBatchNormMode_t mode),
                    (derivedBnDesc, xDesc, mode))
SN_DNN_INVALIDATING(cudnnDestroyTensorDescriptor, (cudnnTensorDescriptor_t tensorDesc), (tensorDesc))
/* the convolution descriptor's settings are part of a call's configuration
 * (sn_dnn_conv_conf caches them) */
SN_DNN_INVALIDATING(cudnnSetConvolution2dDescriptor,
                    (cudnnConvolutionDescriptor_t convDesc, int pad_h, int pad_w, int u, int v, int dilation_h,
                     int dilation_w, cudnnConvolutionMode_t mode, cudnnDataType_t computeType),
                    (convDesc, pad_h, pad_w, u, v, dilation_h, dilation_w, mode, computeType))
SN_DNN_INVALIDATING(cudnnSetConvolutionNdDescriptor,
                    (cudnnConvolutionDescriptor_t convDesc, int arrayLength, const int padA[],
                     const int filterStrideA[], const int dilationA[], cudnnConvolutionMode_t mode,
                     cudnnDataType_t computeType),
                    (convDesc, arrayLength, padA, filterStrideA, dilationA, mode, computeType))
SN_DNN_INVALIDATING(cudnnSetConvolutionGroupCount, (cudnnConvolutionDescriptor_t convDesc, int groupCount),
                    (convDesc, groupCount))
SN_DNN_INVALIDATING(cudnnSetConvolutionMathType, (cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t mathType),
                    (convDesc, mathType))
SN_DNN_INVALIDATING(cudnnDestroyConvolutionDescriptor, (cudnnConvolutionDescriptor_t convDesc), (convDesc))
SN_DNN_INVALIDATING(cudnnSetFilter4dDescriptor,
                    (cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType,
                     cudnnTensorFormat_t format, int k, int c, int h, int w),
                    (filterDesc, dataType, format, k, c, h, w))
SN_DNN_INVALIDATING(cudnnSetFilterNdDescriptor,
                    (cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType,
                     cudnnTensorFormat_t format, int nbDims, const int filterDimA[]),
                    (filterDesc, dataType, format, nbDims, filterDimA))
SN_DNN_INVALIDATING(cudnnDestroyFilterDescriptor, (cudnnFilterDescriptor_t filterDesc), (filterDesc))

#define SN_DNN_BEGIN(name, op, handle, args)                                   \
    SN_PROLOGUE(CUDNN, name, args)                                             \
    SN_CALL_DECL(c);                                                           \
    sn_call_init(&c, SN_HOOK_ID_##name, (op), sn_current_device(), sn_dnn_stream(handle)); \
    c.lib_handle = (void *)(handle);

#define SN_DNN_END(args) SN_FORWARD_STEP(&c, cudnnStatus_t, CUDNN_STATUS_SUCCESS, CUDNN_STATUS_ALLOC_FAILED, args)

/* A convolution: where libsn may change it (sn_opt_chooses_convs), the
 * core forwards it (sn_core_call), with the algorithm and workspace manage
 * mode's plan chose or as the framework made it. The three directions
 * share one shape: the arguments in a struct, in the call's order (one
 * list, SN_CONV_ARGS_, fills it and makes the call), and one function that
 * makes the real call from it. */
#define SN_DNN_CONV_FORWARD(name, d1_t, d2_t, algo_t, d3_t)                                        \
    typedef struct name##_args { /* in the call's order */                                        \
        cudnnHandle_t handle;                                                                      \
        const void *alpha;                                                                         \
        d1_t d1;                                                                                   \
        const void *p1;                                                                            \
        d2_t d2;                                                                                   \
        const void *p2;                                                                            \
        cudnnConvolutionDescriptor_t conv;                                                         \
        algo_t algo;                                                                               \
        void *ws;                                                                                  \
        size_t ws_bytes;                                                                           \
        const void *beta;                                                                          \
        d3_t d3;                                                                                   \
        void *p3;                                                                                  \
        cudnnStatus_t rc;                                                                          \
    } name##_args;                                                                                 \
    static int name##_forward(void *p, const sn_subst *s)                                          \
    {                                                                                              \
        name##_args *a = p;                                                                        \
        int ws = s && s->ws_set;                                                                   \
        a->rc = SN_REAL(name)(a->handle, a->alpha, a->d1, a->p1, a->d2, a->p2, a->conv,            \
                              s ? (algo_t)s->algo : a->algo, ws ? s->ws : a->ws,                   \
                              ws ? (size_t)s->ws_bytes : a->ws_bytes, a->beta, a->d3, a->p3);      \
        return a->rc == CUDNN_STATUS_SUCCESS;                                                      \
    }

SN_DNN_CONV_FORWARD(cudnnConvolutionForward, cudnnTensorDescriptor_t, cudnnFilterDescriptor_t,
                    cudnnConvolutionFwdAlgo_t, cudnnTensorDescriptor_t)
SN_DNN_CONV_FORWARD(cudnnConvolutionBackwardData, cudnnFilterDescriptor_t, cudnnTensorDescriptor_t,
                    cudnnConvolutionBwdDataAlgo_t, cudnnTensorDescriptor_t)
SN_DNN_CONV_FORWARD(cudnnConvolutionBackwardFilter, cudnnTensorDescriptor_t, cudnnTensorDescriptor_t,
                    cudnnConvolutionBwdFilterAlgo_t, cudnnFilterDescriptor_t)

#define SN_UNPAREN(...) __VA_ARGS__
/* Where libsn never changes a convolution (trace mode, SN_WORKSPACE=keep,
 * SN_POLICY=lru) the wrapper forwards it itself, as any other step: the
 * record and the core's forward function cost about 70 instructions a call
 * (bench/results/libsn_overhead.md) that only a planned convolution needs. */
#define SN_DNN_CONV_END(name, geom_v, args)                                    \
    do {                                                                       \
        if (!sn_opt_chooses_convs())                                           \
            SN_DNN_END(args);                                                  \
        name##_args a_ = {SN_UNPAREN args, CUDNN_STATUS_SUCCESS};              \
        c.geom = (geom_v);                                                     \
        if (sn_core_call(&c, name##_forward, &a_) != 0)                        \
            return CUDNN_STATUS_ALLOC_FAILED;                                  \
        return a_.rc;                                                          \
    } while (0)

static void sn_workspace(sn_call *c, void *ws, size_t bytes)
{
    sn_call_range(c, ws, bytes, SN_READ | SN_WRITE | SN_SCRATCH);
    c->workspace = ws ? bytes : 0;
}

/* A host scale factor for data of the given tensor's type. */
static int sn_nonzero_for(cudnnTensorDescriptor_t desc, const void *scale)
{
    sn_real_cudnnGetTensorNdDescriptor_fn get = SN_REAL(cudnnGetTensorNdDescriptor);
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    int nd, dim[CUDNN_DIM_MAX], stride[CUDNN_DIM_MAX];
    if (get && desc)
        get(desc, CUDNN_DIM_MAX, &type, &nd, dim, stride);
    return sn_dnn_scale_nonzero(scale, type);
}

#define SN_CONV_ARGS_ (handle, alpha, xDesc, x, wDesc, w, convDesc, algo, \
                       workSpace, workSpaceSizeInBytes, beta, yDesc, y)
SN_EXPORT cudnnStatus_t cudnnConvolutionForward(
    cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnFilterDescriptor_t wDesc, const void *w, const cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionFwdAlgo_t algo, void *workSpace, size_t workSpaceSizeInBytes, const void *beta,
    const cudnnTensorDescriptor_t yDesc, void *y)
{
    SN_DNN_BEGIN(cudnnConvolutionForward, SN_OP_CONV_FWD, handle, SN_CONV_ARGS_)
    sn_dnn_tensor(&c, xDesc, x, SN_READ, NULL);
    sn_dnn_filter(&c, wDesc, w, SN_READ);
    sn_dnn_output(&c, yDesc, y, beta);
    sn_workspace(&c, workSpace, workSpaceSizeInBytes);
    c.algo = (int)algo;
    c.conf = sn_dnn_conv_conf(&c, convDesc);
    const struct sn_conv_geom g = {handle, xDesc, wDesc, yDesc, convDesc};
    SN_DNN_CONV_END(cudnnConvolutionForward, &g, SN_CONV_ARGS_);
}
#undef SN_CONV_ARGS_

#define SN_CONV_ARGS_ (handle, alpha, wDesc, w, dyDesc, dy, convDesc, algo, \
                       workSpace, workSpaceSizeInBytes, beta, dxDesc, dx)
SN_EXPORT cudnnStatus_t cudnnConvolutionBackwardData(
    cudnnHandle_t handle, const void *alpha, const cudnnFilterDescriptor_t wDesc, const void *w,
    const cudnnTensorDescriptor_t dyDesc, const void *dy, const cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionBwdDataAlgo_t algo, void *workSpace, size_t workSpaceSizeInBytes,
    const void *beta, const cudnnTensorDescriptor_t dxDesc, void *dx)
{
    SN_DNN_BEGIN(cudnnConvolutionBackwardData, SN_OP_CONV_BWD_DATA, handle, SN_CONV_ARGS_)
    sn_dnn_filter(&c, wDesc, w, SN_READ);
    sn_dnn_tensor(&c, dyDesc, dy, SN_READ, NULL);
    sn_dnn_output(&c, dxDesc, dx, beta);
    sn_workspace(&c, workSpace, workSpaceSizeInBytes);
    c.algo = (int)algo;
    c.conf = sn_dnn_conv_conf(&c, convDesc);
    const struct sn_conv_geom g = {handle, dxDesc, wDesc, dyDesc, convDesc};
    SN_DNN_CONV_END(cudnnConvolutionBackwardData, &g, SN_CONV_ARGS_);
}
#undef SN_CONV_ARGS_

#define SN_CONV_ARGS_ (handle, alpha, xDesc, x, dyDesc, dy, convDesc, algo, \
                       workSpace, workSpaceSizeInBytes, beta, dwDesc, dw)
SN_EXPORT cudnnStatus_t cudnnConvolutionBackwardFilter(
    cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnTensorDescriptor_t dyDesc, const void *dy, const cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionBwdFilterAlgo_t algo, void *workSpace, size_t workSpaceSizeInBytes,
    const void *beta, const cudnnFilterDescriptor_t dwDesc, void *dw)
{
    SN_DNN_BEGIN(cudnnConvolutionBackwardFilter, SN_OP_CONV_BWD_FILTER, handle, SN_CONV_ARGS_)
    sn_dnn_tensor(&c, xDesc, x, SN_READ, NULL);
    sn_dnn_tensor(&c, dyDesc, dy, SN_READ, NULL);
    sn_dnn_filter_output(&c, dwDesc, dw, beta);
    sn_workspace(&c, workSpace, workSpaceSizeInBytes);
    c.algo = (int)algo;
    c.conf = sn_dnn_conv_conf(&c, convDesc);
    const struct sn_conv_geom g = {handle, xDesc, dwDesc, dyDesc, convDesc};
    SN_DNN_CONV_END(cudnnConvolutionBackwardFilter, &g, SN_CONV_ARGS_);
}
#undef SN_CONV_ARGS_

SN_EXPORT cudnnStatus_t cudnnConvolutionBackwardBias(cudnnHandle_t handle, const void *alpha,
                                                     const cudnnTensorDescriptor_t dyDesc,
                                                     const void *dy, const void *beta,
                                                     const cudnnTensorDescriptor_t dbDesc, void *db)
{
    SN_DNN_BEGIN(cudnnConvolutionBackwardBias, SN_OP_CONV_BWD_BIAS, handle,
                 (handle, alpha, dyDesc, dy, beta, dbDesc, db))
    sn_dnn_tensor(&c, dyDesc, dy, SN_READ, NULL);
    sn_dnn_output(&c, dbDesc, db, beta);
    SN_DNN_END((handle, alpha, dyDesc, dy, beta, dbDesc, db));
}

SN_EXPORT cudnnStatus_t cudnnConvolutionBiasActivationForward(
    cudnnHandle_t handle, const void *alpha1, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnFilterDescriptor_t wDesc, const void *w, const cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionFwdAlgo_t algo, void *workSpace, size_t workSpaceSizeInBytes,
    const void *alpha2, const cudnnTensorDescriptor_t zDesc, const void *z,
    const cudnnTensorDescriptor_t biasDesc, const void *bias,
    const cudnnActivationDescriptor_t activationDesc, const cudnnTensorDescriptor_t yDesc, void *y)
{
    SN_DNN_BEGIN(cudnnConvolutionBiasActivationForward, SN_OP_CONV_BIAS_ACT_FWD, handle,
                 (handle, alpha1, xDesc, x, wDesc, w, convDesc, algo, workSpace,
                  workSpaceSizeInBytes, alpha2, zDesc, z, biasDesc, bias, activationDesc, yDesc, y))
    sn_dnn_tensor(&c, xDesc, x, SN_READ, NULL);
    sn_dnn_filter(&c, wDesc, w, SN_READ);
    /* y = act(alpha1 * conv(x) + alpha2 * z + bias): z is read when alpha2
     * is not zero, and z may be y itself. */
    if (sn_nonzero_for(zDesc, alpha2))
        sn_dnn_tensor(&c, zDesc, z, SN_READ, NULL);
    sn_dnn_tensor(&c, biasDesc, bias, SN_READ, NULL);
    /* read as float or as double (the tensor's type): zero both ways */
    static const double zero = 0.0;
    sn_dnn_output(&c, yDesc, y, &zero);
    if (z == y && sn_nonzero_for(zDesc, alpha2) && c.nranges)
        sn_call_range_at(&c, c.nranges - 1)->mode = SN_READ | SN_WRITE;
    sn_workspace(&c, workSpace, workSpaceSizeInBytes);
    c.algo = (int)algo;
    SN_DNN_END((handle, alpha1, xDesc, x, wDesc, w, convDesc, algo, workSpace, workSpaceSizeInBytes,
                alpha2, zDesc, z, biasDesc, bias, activationDesc, yDesc, y));
}

SN_EXPORT cudnnStatus_t cudnnAddTensor(cudnnHandle_t handle, const void *alpha,
                                       const cudnnTensorDescriptor_t aDesc, const void *A,
                                       const void *beta, const cudnnTensorDescriptor_t cDesc, void *C)
{
    SN_DNN_BEGIN(cudnnAddTensor, SN_OP_ADD_TENSOR, handle, (handle, alpha, aDesc, A, beta, cDesc, C))
    sn_dnn_tensor(&c, aDesc, A, SN_READ, NULL);
    sn_dnn_output(&c, cDesc, C, beta);
    SN_DNN_END((handle, alpha, aDesc, A, beta, cDesc, C));
}

SN_EXPORT cudnnStatus_t cudnnOpTensor(cudnnHandle_t handle, const cudnnOpTensorDescriptor_t opTensorDesc,
                                      const void *alpha1, const cudnnTensorDescriptor_t aDesc,
                                      const void *A, const void *alpha2,
                                      const cudnnTensorDescriptor_t bDesc, const void *B,
                                      const void *beta, const cudnnTensorDescriptor_t cDesc, void *C)
{
    SN_DNN_BEGIN(cudnnOpTensor, SN_OP_OP_TENSOR, handle,
                 (handle, opTensorDesc, alpha1, aDesc, A, alpha2, bDesc, B, beta, cDesc, C))
    sn_real_cudnnGetOpTensorDescriptor_fn get = SN_REAL(cudnnGetOpTensorDescriptor);
    cudnnOpTensorOp_t op = CUDNN_OP_TENSOR_ADD;
    cudnnDataType_t ctype;
    cudnnNanPropagation_t nan;
    if (get && opTensorDesc)
        get(opTensorDesc, &op, &ctype, &nan);
    c.params = sn_hash_mix(c.params, (uint64_t)op + 1);
    c.algo = (int)op;
    sn_dnn_tensor(&c, aDesc, A, SN_READ, NULL);
    if (op != CUDNN_OP_TENSOR_SQRT && op != CUDNN_OP_TENSOR_NOT)
        sn_dnn_tensor(&c, bDesc, B, SN_READ, NULL);
    sn_dnn_output(&c, cDesc, C, beta);
    SN_DNN_END((handle, opTensorDesc, alpha1, aDesc, A, alpha2, bDesc, B, beta, cDesc, C));
}

SN_EXPORT cudnnStatus_t cudnnSetTensor(cudnnHandle_t handle, const cudnnTensorDescriptor_t yDesc,
                                       void *y, const void *valuePtr)
{
    SN_DNN_BEGIN(cudnnSetTensor, SN_OP_SET_TENSOR, handle, (handle, yDesc, y, valuePtr))
    /* read as float or as double (the tensor's type): zero both ways */
    static const double zero = 0.0;
    sn_dnn_output(&c, yDesc, y, &zero);
    SN_DNN_END((handle, yDesc, y, valuePtr));
}

SN_EXPORT cudnnStatus_t cudnnScaleTensor(cudnnHandle_t handle, const cudnnTensorDescriptor_t yDesc,
                                         void *y, const void *alpha)
{
    SN_DNN_BEGIN(cudnnScaleTensor, SN_OP_SCALE_TENSOR, handle, (handle, yDesc, y, alpha))
    sn_dnn_tensor(&c, yDesc, y, SN_READ | SN_WRITE, NULL);
    SN_DNN_END((handle, yDesc, y, alpha));
}

SN_EXPORT cudnnStatus_t cudnnTransformTensor(cudnnHandle_t handle, const void *alpha,
                                             const cudnnTensorDescriptor_t xDesc, const void *x,
                                             const void *beta, const cudnnTensorDescriptor_t yDesc,
                                             void *y)
{
    SN_DNN_BEGIN(cudnnTransformTensor, SN_OP_TRANSFORM_TENSOR, handle,
                 (handle, alpha, xDesc, x, beta, yDesc, y))
    sn_dnn_tensor(&c, xDesc, x, SN_READ, NULL);
    sn_dnn_output(&c, yDesc, y, beta);
    SN_DNN_END((handle, alpha, xDesc, x, beta, yDesc, y));
}

SN_EXPORT cudnnStatus_t cudnnActivationForward(cudnnHandle_t handle,
                                               cudnnActivationDescriptor_t activationDesc,
                                               const void *alpha, const cudnnTensorDescriptor_t xDesc,
                                               const void *x, const void *beta,
                                               const cudnnTensorDescriptor_t yDesc, void *y)
{
    SN_DNN_BEGIN(cudnnActivationForward, SN_OP_ACT_FWD, handle,
                 (handle, activationDesc, alpha, xDesc, x, beta, yDesc, y))
    sn_real_cudnnGetActivationDescriptor_fn get = SN_REAL(cudnnGetActivationDescriptor);
    cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
    cudnnNanPropagation_t nan;
    double coef;
    if (get && activationDesc)
        get(activationDesc, &mode, &nan, &coef);
    c.params = sn_hash_mix(c.params, (uint64_t)mode + 1);
    c.algo = (int)mode;
    sn_dnn_tensor(&c, xDesc, x, SN_READ, NULL);
    sn_dnn_output(&c, yDesc, y, beta);
    SN_DNN_END((handle, activationDesc, alpha, xDesc, x, beta, yDesc, y));
}

SN_EXPORT cudnnStatus_t cudnnActivationBackward(
    cudnnHandle_t handle, cudnnActivationDescriptor_t activationDesc, const void *alpha,
    const cudnnTensorDescriptor_t yDesc, const void *y, const cudnnTensorDescriptor_t dyDesc,
    const void *dy, const cudnnTensorDescriptor_t xDesc, const void *x, const void *beta,
    const cudnnTensorDescriptor_t dxDesc, void *dx)
{
    SN_DNN_BEGIN(cudnnActivationBackward, SN_OP_ACT_BWD, handle,
                 (handle, activationDesc, alpha, yDesc, y, dyDesc, dy, xDesc, x, beta, dxDesc, dx))
    sn_dnn_tensor(&c, yDesc, y, SN_READ, NULL);
    sn_dnn_tensor(&c, dyDesc, dy, SN_READ, NULL);
    sn_dnn_tensor(&c, xDesc, x, SN_READ, NULL);
    sn_dnn_output(&c, dxDesc, dx, beta);
    SN_DNN_END((handle, activationDesc, alpha, yDesc, y, dyDesc, dy, xDesc, x, beta, dxDesc, dx));
}

SN_EXPORT cudnnStatus_t cudnnPoolingForward(cudnnHandle_t handle,
                                            const cudnnPoolingDescriptor_t poolingDesc,
                                            const void *alpha, const cudnnTensorDescriptor_t xDesc,
                                            const void *x, const void *beta,
                                            const cudnnTensorDescriptor_t yDesc, void *y)
{
    SN_DNN_BEGIN(cudnnPoolingForward, SN_OP_POOL_FWD, handle,
                 (handle, poolingDesc, alpha, xDesc, x, beta, yDesc, y))
    sn_real_cudnnGetPoolingNdDescriptor_fn get = SN_REAL(cudnnGetPoolingNdDescriptor);
    cudnnPoolingMode_t mode = CUDNN_POOLING_MAX;
    cudnnNanPropagation_t nan;
    int nd = 0, win[CUDNN_DIM_MAX], pad[CUDNN_DIM_MAX], stride[CUDNN_DIM_MAX];
    if (get && poolingDesc && get(poolingDesc, CUDNN_DIM_MAX - 2, &mode, &nan, &nd, win, pad, stride) == CUDNN_STATUS_SUCCESS)
        for (int i = 0; i < nd && i < CUDNN_DIM_MAX - 2; i++)
            c.params = sn_hash_mix(sn_hash_mix(sn_hash_mix(c.params, (uint64_t)win[i]), (uint64_t)pad[i]),
                                   (uint64_t)stride[i]);
    c.params = sn_hash_mix(c.params, (uint64_t)mode + 1);
    c.algo = (int)mode;
    sn_dnn_tensor(&c, xDesc, x, SN_READ, NULL);
    sn_dnn_output(&c, yDesc, y, beta);
    SN_DNN_END((handle, poolingDesc, alpha, xDesc, x, beta, yDesc, y));
}

SN_EXPORT cudnnStatus_t cudnnPoolingBackward(
    cudnnHandle_t handle, const cudnnPoolingDescriptor_t poolingDesc, const void *alpha,
    const cudnnTensorDescriptor_t yDesc, const void *y, const cudnnTensorDescriptor_t dyDesc,
    const void *dy, const cudnnTensorDescriptor_t xDesc, const void *x, const void *beta,
    const cudnnTensorDescriptor_t dxDesc, void *dx)
{
    SN_DNN_BEGIN(cudnnPoolingBackward, SN_OP_POOL_BWD, handle,
                 (handle, poolingDesc, alpha, yDesc, y, dyDesc, dy, xDesc, x, beta, dxDesc, dx))
    sn_dnn_tensor(&c, yDesc, y, SN_READ, NULL);
    sn_dnn_tensor(&c, dyDesc, dy, SN_READ, NULL);
    sn_dnn_tensor(&c, xDesc, x, SN_READ, NULL);
    sn_dnn_output(&c, dxDesc, dx, beta);
    SN_DNN_END((handle, poolingDesc, alpha, yDesc, y, dyDesc, dy, xDesc, x, beta, dxDesc, dx));
}

SN_EXPORT cudnnStatus_t cudnnLRNCrossChannelForward(cudnnHandle_t handle, cudnnLRNDescriptor_t normDesc,
                                                    cudnnLRNMode_t lrnMode, const void *alpha,
                                                    const cudnnTensorDescriptor_t xDesc, const void *x,
                                                    const void *beta,
                                                    const cudnnTensorDescriptor_t yDesc, void *y)
{
    SN_DNN_BEGIN(cudnnLRNCrossChannelForward, SN_OP_LRN_FWD, handle,
                 (handle, normDesc, lrnMode, alpha, xDesc, x, beta, yDesc, y))
    sn_dnn_tensor(&c, xDesc, x, SN_READ, NULL);
    sn_dnn_output(&c, yDesc, y, beta);
    SN_DNN_END((handle, normDesc, lrnMode, alpha, xDesc, x, beta, yDesc, y));
}

SN_EXPORT cudnnStatus_t cudnnLRNCrossChannelBackward(
    cudnnHandle_t handle, cudnnLRNDescriptor_t normDesc, cudnnLRNMode_t lrnMode, const void *alpha,
    const cudnnTensorDescriptor_t yDesc, const void *y, const cudnnTensorDescriptor_t dyDesc,
    const void *dy, const cudnnTensorDescriptor_t xDesc, const void *x, const void *beta,
    const cudnnTensorDescriptor_t dxDesc, void *dx)
{
    SN_DNN_BEGIN(cudnnLRNCrossChannelBackward, SN_OP_LRN_BWD, handle,
                 (handle, normDesc, lrnMode, alpha, yDesc, y, dyDesc, dy, xDesc, x, beta, dxDesc, dx))
    sn_dnn_tensor(&c, yDesc, y, SN_READ, NULL);
    sn_dnn_tensor(&c, dyDesc, dy, SN_READ, NULL);
    sn_dnn_tensor(&c, xDesc, x, SN_READ, NULL);
    sn_dnn_output(&c, dxDesc, dx, beta);
    SN_DNN_END((handle, normDesc, lrnMode, alpha, yDesc, y, dyDesc, dy, xDesc, x, beta, dxDesc, dx));
}

SN_EXPORT cudnnStatus_t cudnnSoftmaxForward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo,
                                            cudnnSoftmaxMode_t mode, const void *alpha,
                                            const cudnnTensorDescriptor_t xDesc, const void *x,
                                            const void *beta, const cudnnTensorDescriptor_t yDesc,
                                            void *y)
{
    SN_DNN_BEGIN(cudnnSoftmaxForward, SN_OP_SOFTMAX_FWD, handle,
                 (handle, algo, mode, alpha, xDesc, x, beta, yDesc, y))
    c.params = sn_hash_mix(sn_hash_mix(c.params, (uint64_t)algo + 1), (uint64_t)mode + 1);
    sn_dnn_tensor(&c, xDesc, x, SN_READ, NULL);
    sn_dnn_output(&c, yDesc, y, beta);
    SN_DNN_END((handle, algo, mode, alpha, xDesc, x, beta, yDesc, y));
}

SN_EXPORT cudnnStatus_t cudnnSoftmaxBackward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo,
                                             cudnnSoftmaxMode_t mode, const void *alpha,
                                             const cudnnTensorDescriptor_t yDesc, const void *y,
                                             const cudnnTensorDescriptor_t dyDesc, const void *dy,
                                             const void *beta, const cudnnTensorDescriptor_t dxDesc,
                                             void *dx)
{
    SN_DNN_BEGIN(cudnnSoftmaxBackward, SN_OP_SOFTMAX_BWD, handle,
                 (handle, algo, mode, alpha, yDesc, y, dyDesc, dy, beta, dxDesc, dx))
    sn_dnn_tensor(&c, yDesc, y, SN_READ, NULL);
    sn_dnn_tensor(&c, dyDesc, dy, SN_READ, NULL);
    sn_dnn_output(&c, dxDesc, dx, beta);
    SN_DNN_END((handle, algo, mode, alpha, yDesc, y, dyDesc, dy, beta, dxDesc, dx));
}

/* Per-channel (or per-activation) statistics tensors of batch norm. */
static void sn_bn_param(sn_call *c, cudnnTensorDescriptor_t desc, const void *p, unsigned mode)
{
    int nshapes = c->nshapes; /* shapes: the data tensors' only */
    sn_dnn_tensor(c, desc, p, mode, NULL);
    c->nshapes = nshapes;
}

SN_EXPORT cudnnStatus_t cudnnBatchNormalizationForwardTraining(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void *alpha, const void *beta,
    const cudnnTensorDescriptor_t xDesc, const void *x, const cudnnTensorDescriptor_t yDesc, void *y,
    const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void *bnScale, const void *bnBias,
    double exponentialAverageFactor, void *resultRunningMean, void *resultRunningVariance,
    double epsilon, void *resultSaveMean, void *resultSaveInvVariance)
{
    SN_DNN_BEGIN(cudnnBatchNormalizationForwardTraining, SN_OP_BN_FWD_TRAIN, handle,
                 (handle, mode, alpha, beta, xDesc, x, yDesc, y, bnScaleBiasMeanVarDesc, bnScale,
                  bnBias, exponentialAverageFactor, resultRunningMean, resultRunningVariance,
                  epsilon, resultSaveMean, resultSaveInvVariance))
    c.params = sn_hash_mix(c.params, (uint64_t)mode + 1);
    sn_dnn_tensor(&c, xDesc, x, SN_READ, NULL);
    sn_dnn_output(&c, yDesc, y, beta);
    sn_bn_param(&c, bnScaleBiasMeanVarDesc, bnScale, SN_READ);
    sn_bn_param(&c, bnScaleBiasMeanVarDesc, bnBias, SN_READ);
    /* Running averages blend the old value unless the factor is 1. */
    unsigned running = exponentialAverageFactor == 1.0 ? SN_WRITE | SN_OVERWRITE : SN_READ | SN_WRITE;
    sn_bn_param(&c, bnScaleBiasMeanVarDesc, resultRunningMean, running);
    sn_bn_param(&c, bnScaleBiasMeanVarDesc, resultRunningVariance, running);
    sn_bn_param(&c, bnScaleBiasMeanVarDesc, resultSaveMean, SN_WRITE | SN_OVERWRITE);
    sn_bn_param(&c, bnScaleBiasMeanVarDesc, resultSaveInvVariance, SN_WRITE | SN_OVERWRITE);
    SN_DNN_END((handle, mode, alpha, beta, xDesc, x, yDesc, y, bnScaleBiasMeanVarDesc, bnScale,
                bnBias, exponentialAverageFactor, resultRunningMean, resultRunningVariance, epsilon,
                resultSaveMean, resultSaveInvVariance));
}

SN_EXPORT cudnnStatus_t cudnnBatchNormalizationForwardInference(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void *alpha, const void *beta,
    const cudnnTensorDescriptor_t xDesc, const void *x, const cudnnTensorDescriptor_t yDesc, void *y,
    const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void *bnScale, const void *bnBias,
    const void *estimatedMean, const void *estimatedVariance, double epsilon)
{
    SN_DNN_BEGIN(cudnnBatchNormalizationForwardInference, SN_OP_BN_FWD_INFER, handle,
                 (handle, mode, alpha, beta, xDesc, x, yDesc, y, bnScaleBiasMeanVarDesc, bnScale,
                  bnBias, estimatedMean, estimatedVariance, epsilon))
    c.params = sn_hash_mix(c.params, (uint64_t)mode + 1);
    sn_dnn_tensor(&c, xDesc, x, SN_READ, NULL);
    sn_dnn_output(&c, yDesc, y, beta);
    sn_bn_param(&c, bnScaleBiasMeanVarDesc, bnScale, SN_READ);
    sn_bn_param(&c, bnScaleBiasMeanVarDesc, bnBias, SN_READ);
    sn_bn_param(&c, bnScaleBiasMeanVarDesc, estimatedMean, SN_READ);
    sn_bn_param(&c, bnScaleBiasMeanVarDesc, estimatedVariance, SN_READ);
    SN_DNN_END((handle, mode, alpha, beta, xDesc, x, yDesc, y, bnScaleBiasMeanVarDesc, bnScale,
                bnBias, estimatedMean, estimatedVariance, epsilon));
}

SN_EXPORT cudnnStatus_t cudnnBatchNormalizationBackward(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void *alphaDataDiff,
    const void *betaDataDiff, const void *alphaParamDiff, const void *betaParamDiff,
    const cudnnTensorDescriptor_t xDesc, const void *x, const cudnnTensorDescriptor_t dyDesc,
    const void *dy, const cudnnTensorDescriptor_t dxDesc, void *dx,
    const cudnnTensorDescriptor_t dBnScaleBiasDesc, const void *bnScale, void *dBnScaleResult,
    void *dBnBiasResult, double epsilon, const void *savedMean, const void *savedInvVariance)
{
    SN_DNN_BEGIN(cudnnBatchNormalizationBackward, SN_OP_BN_BWD, handle,
                 (handle, mode, alphaDataDiff, betaDataDiff, alphaParamDiff, betaParamDiff, xDesc,
                  x, dyDesc, dy, dxDesc, dx, dBnScaleBiasDesc, bnScale, dBnScaleResult,
                  dBnBiasResult, epsilon, savedMean, savedInvVariance))
    c.params = sn_hash_mix(c.params, (uint64_t)mode + 1);
    sn_dnn_tensor(&c, xDesc, x, SN_READ, NULL);
    sn_dnn_tensor(&c, dyDesc, dy, SN_READ, NULL);
    sn_dnn_output(&c, dxDesc, dx, betaDataDiff);
    sn_bn_param(&c, dBnScaleBiasDesc, bnScale, SN_READ);
    int before = c.nranges;
    sn_bn_param(&c, dBnScaleBiasDesc, dBnScaleResult, SN_WRITE);
    sn_bn_param(&c, dBnScaleBiasDesc, dBnBiasResult, SN_WRITE);
    unsigned extra = sn_nonzero_for(dBnScaleBiasDesc, betaParamDiff) ? SN_READ : SN_OVERWRITE;
    for (int i = before; i < c.nranges; i++)
        sn_call_range_at(&c, i)->mode |= extra;
    sn_bn_param(&c, dBnScaleBiasDesc, savedMean, SN_READ);
    sn_bn_param(&c, dBnScaleBiasDesc, savedInvVariance, SN_READ);
    SN_DNN_END((handle, mode, alphaDataDiff, betaDataDiff, alphaParamDiff, betaParamDiff, xDesc, x,
                dyDesc, dy, dxDesc, dx, dBnScaleBiasDesc, bnScale, dBnScaleResult, dBnBiasResult,
                epsilon, savedMean, savedInvVariance));
}

/* The generator states a dropout descriptor holds: read and advanced by
 * every dropout call, though no argument of the call names them. Unknown
 * states make the call opaque. */
static void sn_dropout_states(sn_call *c, cudnnHandle_t handle, cudnnDropoutDescriptor_t desc)
{
    sn_real_cudnnGetDropoutDescriptor_fn get = SN_REAL(cudnnGetDropoutDescriptor);
    sn_real_cudnnDropoutGetStatesSize_fn size = SN_REAL(cudnnDropoutGetStatesSize);
    float p = 0;
    void *states = NULL;
    unsigned long long seed = 0;
    size_t bytes = 0;
    if (!get || !size || get(desc, handle, &p, &states, &seed) != CUDNN_STATUS_SUCCESS ||
        size(handle, &bytes) != CUDNN_STATUS_SUCCESS) {
        c->flags |= SN_CALL_OPAQUE;
        return;
    }
    sn_call_range(c, states, bytes, SN_READ | SN_WRITE);
}

SN_EXPORT cudnnStatus_t cudnnDropoutForward(cudnnHandle_t handle,
                                            const cudnnDropoutDescriptor_t dropoutDesc,
                                            const cudnnTensorDescriptor_t xdesc, const void *x,
                                            const cudnnTensorDescriptor_t ydesc, void *y,
                                            void *reserveSpace, size_t reserveSpaceSizeInBytes)
{
    SN_DNN_BEGIN(cudnnDropoutForward, SN_OP_DROPOUT_FWD, handle,
                 (handle, dropoutDesc, xdesc, x, ydesc, y, reserveSpace, reserveSpaceSizeInBytes))
    sn_dnn_tensor(&c, xdesc, x, SN_READ, NULL);
    /* read as float or as double (the tensor's type): zero both ways */
    static const double zero = 0.0;
    sn_dnn_output(&c, ydesc, y, &zero);
    sn_call_range(&c, reserveSpace, reserveSpaceSizeInBytes, SN_WRITE | SN_OVERWRITE);
    sn_dropout_states(&c, handle, dropoutDesc);
    SN_DNN_END((handle, dropoutDesc, xdesc, x, ydesc, y, reserveSpace, reserveSpaceSizeInBytes));
}

SN_EXPORT cudnnStatus_t cudnnDropoutBackward(cudnnHandle_t handle,
                                             const cudnnDropoutDescriptor_t dropoutDesc,
                                             const cudnnTensorDescriptor_t dydesc, const void *dy,
                                             const cudnnTensorDescriptor_t dxdesc, void *dx,
                                             void *reserveSpace, size_t reserveSpaceSizeInBytes)
{
    SN_DNN_BEGIN(cudnnDropoutBackward, SN_OP_DROPOUT_BWD, handle,
                 (handle, dropoutDesc, dydesc, dy, dxdesc, dx, reserveSpace, reserveSpaceSizeInBytes))
    sn_dnn_tensor(&c, dydesc, dy, SN_READ, NULL);
    /* read as float or as double (the tensor's type): zero both ways */
    static const double zero = 0.0;
    sn_dnn_output(&c, dxdesc, dx, &zero);
    sn_call_range(&c, reserveSpace, reserveSpaceSizeInBytes, SN_READ);
    sn_dropout_states(&c, handle, dropoutDesc);
    SN_DNN_END((handle, dropoutDesc, dydesc, dy, dxdesc, dx, reserveSpace, reserveSpaceSizeInBytes));
}

SN_EXPORT cudnnStatus_t cudnnSetDropoutDescriptor(cudnnDropoutDescriptor_t dropoutDesc,
                                                  cudnnHandle_t handle, float dropout, void *states,
                                                  size_t stateSizeInBytes, unsigned long long seed)
{
    SN_DNN_BEGIN(cudnnSetDropoutDescriptor, SN_OP_DROPOUT_INIT, handle,
                 (dropoutDesc, handle, dropout, states, stateSizeInBytes, seed))
    /* Initialises the generator states on the device. */
    sn_call_range(&c, states, stateSizeInBytes, SN_WRITE | SN_OVERWRITE);
    SN_DNN_END((dropoutDesc, handle, dropout, states, stateSizeInBytes, seed));
}

/* ---- FindEx: the search runs the convolution on the given buffers ---------- */

SN_EXPORT cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnFilterDescriptor_t wDesc, const void *w, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t yDesc, void *y, const int requestedAlgoCount,
    int *returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t *perfResults, void *workSpace,
    size_t workSpaceSizeInBytes)
{
    SN_DNN_BEGIN(cudnnFindConvolutionForwardAlgorithmEx, SN_OP_FIND_ALGO, handle,
                 (handle, xDesc, x, wDesc, w, convDesc, yDesc, y, requestedAlgoCount,
                  returnedAlgoCount, perfResults, workSpace, workSpaceSizeInBytes))
    sn_dnn_tensor(&c, xDesc, x, SN_READ, NULL);
    sn_dnn_filter(&c, wDesc, w, SN_READ);
    sn_dnn_tensor(&c, yDesc, y, SN_WRITE, NULL); /* scribbled on: contents undefined after */
    sn_workspace(&c, workSpace, workSpaceSizeInBytes);
    SN_DNN_END((handle, xDesc, x, wDesc, w, convDesc, yDesc, y, requestedAlgoCount,
                returnedAlgoCount, perfResults, workSpace, workSpaceSizeInBytes));
}

SN_EXPORT cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const void *w,
    const cudnnTensorDescriptor_t dyDesc, const void *dy, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t dxDesc, void *dx, const int requestedAlgoCount,
    int *returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t *perfResults, void *workSpace,
    size_t workSpaceSizeInBytes)
{
    SN_DNN_BEGIN(cudnnFindConvolutionBackwardDataAlgorithmEx, SN_OP_FIND_ALGO, handle,
                 (handle, wDesc, w, dyDesc, dy, convDesc, dxDesc, dx, requestedAlgoCount,
                  returnedAlgoCount, perfResults, workSpace, workSpaceSizeInBytes))
    sn_dnn_filter(&c, wDesc, w, SN_READ);
    sn_dnn_tensor(&c, dyDesc, dy, SN_READ, NULL);
    sn_dnn_tensor(&c, dxDesc, dx, SN_WRITE, NULL);
    sn_workspace(&c, workSpace, workSpaceSizeInBytes);
    SN_DNN_END((handle, wDesc, w, dyDesc, dy, convDesc, dxDesc, dx, requestedAlgoCount,
                returnedAlgoCount, perfResults, workSpace, workSpaceSizeInBytes));
}

SN_EXPORT cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnTensorDescriptor_t dyDesc, const void *y, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnFilterDescriptor_t dwDesc, void *dw, const int requestedAlgoCount,
    int *returnedAlgoCount, cudnnConvolutionBwdFilterAlgoPerf_t *perfResults, void *workSpace,
    size_t workSpaceSizeInBytes)
{
    SN_DNN_BEGIN(cudnnFindConvolutionBackwardFilterAlgorithmEx, SN_OP_FIND_ALGO, handle,
                 (handle, xDesc, x, dyDesc, y, convDesc, dwDesc, dw, requestedAlgoCount,
                  returnedAlgoCount, perfResults, workSpace, workSpaceSizeInBytes))
    sn_dnn_tensor(&c, xDesc, x, SN_READ, NULL);
    sn_dnn_tensor(&c, dyDesc, y, SN_READ, NULL);
    sn_dnn_filter(&c, dwDesc, dw, SN_WRITE);
    sn_workspace(&c, workSpace, workSpaceSizeInBytes);
    SN_DNN_END((handle, xDesc, x, dyDesc, y, convDesc, dwDesc, dw, requestedAlgoCount,
                returnedAlgoCount, perfResults, workSpace, workSpaceSizeInBytes));
}

/* ---- handles: the memory cuDNN allocates for a handle is the handle's ---- */

SN_EXPORT cudnnStatus_t cudnnCreate(cudnnHandle_t *handle)
{
    SN_PROLOGUE(CUDNN, cudnnCreate, (handle))
    sn_core_lib_scope_begin(sn_current_device(), NULL);
    cudnnStatus_t rc = real(handle);
    sn_core_lib_scope_end(rc == CUDNN_STATUS_SUCCESS && handle ? (void *)*handle : NULL);
    return rc;
}
