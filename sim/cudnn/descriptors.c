/*
 * descriptors.c — filter, convolution, activation, pooling, LRN and
 * op-tensor descriptors of the simulated cuDNN: creation, the value checks
 * cuDNN makes when they are set, and the getters.
 *
 * Descriptors are host objects; nothing here touches the device.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "sim/cudnn/cudnn_sim.h"

#define CREATE(type, magicv, out, init)                                                      \
    do {                                                                                     \
        if (!(out))                                                                          \
            return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL descriptor pointer", __func__); \
        type *d_ = calloc(1, sizeof *d_);                                                    \
        if (!d_)                                                                             \
            return simdnn_fail(CUDNN_STATUS_ALLOC_FAILED, "%s: out of memory", __func__);    \
        d_->magic = (magicv);                                                                \
        init;                                                                                \
        *(out) = d_;                                                                         \
        return CUDNN_STATUS_SUCCESS;                                                         \
    } while (0)

#define DESTROY(d, magicv)                                                                  \
    do {                                                                                    \
        if (!(d))                                                                           \
            return CUDNN_STATUS_SUCCESS;                                                    \
        if ((d)->magic != (magicv))                                                         \
            return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: invalid descriptor", __func__); \
        (d)->magic = SIMDNN_MAGIC_DEAD;                                                     \
        free(d);                                                                            \
        return CUDNN_STATUS_SUCCESS;                                                        \
    } while (0)

#define CHECK(d, magicv)                                                                    \
    do {                                                                                    \
        if (!(d) || (d)->magic != (magicv))                                                 \
            return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: invalid descriptor", __func__); \
    } while (0)

/* ---- filter ------------------------------------------------------------------ */

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *filterDesc)
{
    CREATE(struct cudnnFilterStruct, SIMDNN_MAGIC_FILTER, filterDesc, (void)0);
}

cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t filterDesc)
{
    DESTROY(filterDesc, SIMDNN_MAGIC_FILTER);
}

cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType,
                                         cudnnTensorFormat_t format, int nbDims, const int filterDimA[])
{
    CHECK(filterDesc, SIMDNN_MAGIC_FILTER);
    if (!filterDimA || simdnn_dtype_size(dataType) == 0)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetFilterNdDescriptor: bad arguments");
    if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetFilterNdDescriptor: format %d", (int)format);
    if (nbDims < 3 || nbDims > CUDNN_DIM_MAX)
        return simdnn_fail(CUDNN_STATUS_NOT_SUPPORTED, "cudnnSetFilterNdDescriptor: nbDims %d", nbDims);
    int64_t elems = 1;
    for (int i = 0; i < nbDims; i++) {
        if (filterDimA[i] <= 0)
            return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetFilterNdDescriptor: dimension %d is %d", i,
                               filterDimA[i]);
        /* Checked as it goes: eight 31-bit dimensions overflow even 64 bits.
         * A filter, like a tensor, is indexed with 32-bit integers. */
        if (__builtin_mul_overflow(elems, (int64_t)filterDimA[i], &elems) || elems > INT_MAX)
            return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetFilterNdDescriptor: more than 2^31 elements");
    }
    filterDesc->dtype = dataType;
    filterDesc->format = format;
    filterDesc->nb_dims = nbDims;
    for (int i = 0; i < CUDNN_DIM_MAX; i++)
        filterDesc->dim[i] = i < nbDims ? filterDimA[i] : 0;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType,
                                         cudnnTensorFormat_t format, int k, int c, int h, int w)
{
    int dim[4] = {k, c, h, w};
    return cudnnSetFilterNdDescriptor(filterDesc, dataType, format, 4, dim);
}

cudnnStatus_t cudnnGetFilter4dDescriptor(const cudnnFilterDescriptor_t filterDesc, cudnnDataType_t *dataType,
                                         cudnnTensorFormat_t *format, int *k, int *c, int *h, int *w)
{
    CHECK(filterDesc, SIMDNN_MAGIC_FILTER);
    if (!dataType || !format || !k || !c || !h || !w || filterDesc->nb_dims == 0)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetFilter4dDescriptor: bad arguments");
    *dataType = filterDesc->dtype;
    *format = filterDesc->format;
    *k = filterDesc->dim[0], *c = filterDesc->dim[1], *h = filterDesc->dim[2];
    *w = filterDesc->nb_dims > 3 ? filterDesc->dim[3] : 1;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetFilterNdDescriptor(const cudnnFilterDescriptor_t filterDesc, int nbDimsRequested,
                                         cudnnDataType_t *dataType, cudnnTensorFormat_t *format, int *nbDims,
                                         int filterDimA[])
{
    CHECK(filterDesc, SIMDNN_MAGIC_FILTER);
    if (nbDimsRequested < 0 || !dataType || !format || !nbDims || (nbDimsRequested > 0 && !filterDimA))
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetFilterNdDescriptor: bad arguments");
    *dataType = filterDesc->dtype;
    *format = filterDesc->format;
    *nbDims = filterDesc->nb_dims;
    for (int i = 0; i < nbDimsRequested && i < filterDesc->nb_dims; i++)
        filterDimA[i] = filterDesc->dim[i];
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetFilterSizeInBytes(const cudnnFilterDescriptor_t filterDesc, size_t *size)
{
    CHECK(filterDesc, SIMDNN_MAGIC_FILTER);
    if (!size || filterDesc->nb_dims == 0)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetFilterSizeInBytes: bad arguments");
    size_t n = simdnn_dtype_size(filterDesc->dtype);
    for (int i = 0; i < filterDesc->nb_dims; i++)
        n *= (size_t)filterDesc->dim[i];
    *size = n;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- convolution ------------------------------------------------------------- */

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *convDesc)
{
    CREATE(struct cudnnConvolutionStruct, SIMDNN_MAGIC_CONV, convDesc, {
        d_->groups = 1;
        d_->math_type = CUDNN_DEFAULT_MATH;
        d_->mode = CUDNN_CROSS_CORRELATION;
        d_->compute_type = CUDNN_DATA_FLOAT;
    });
}

cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t convDesc)
{
    DESTROY(convDesc, SIMDNN_MAGIC_CONV);
}

cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t convDesc, int arrayLength,
                                              const int padA[], const int filterStrideA[],
                                              const int dilationA[], cudnnConvolutionMode_t mode,
                                              cudnnDataType_t computeType)
{
    CHECK(convDesc, SIMDNN_MAGIC_CONV);
    if (!padA || !filterStrideA || !dilationA)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionNdDescriptor: NULL array");
    if (arrayLength <= 0 || arrayLength > CUDNN_DIM_MAX - 2)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionNdDescriptor: arrayLength %d",
                           arrayLength);
    if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionNdDescriptor: mode %d", (int)mode);
    if (simdnn_dtype_size(computeType) == 0)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionNdDescriptor: compute type %d",
                           (int)computeType);
    for (int i = 0; i < arrayLength; i++)
        if (padA[i] < 0 || filterStrideA[i] <= 0 || dilationA[i] <= 0)
            return simdnn_fail(CUDNN_STATUS_BAD_PARAM,
                               "cudnnSetConvolutionNdDescriptor: pad %d stride %d dilation %d", padA[i],
                               filterStrideA[i], dilationA[i]);
    convDesc->spatial = arrayLength;
    for (int i = 0; i < CUDNN_DIM_MAX; i++) {
        convDesc->pad[i] = i < arrayLength ? padA[i] : 0;
        convDesc->stride[i] = i < arrayLength ? filterStrideA[i] : 1;
        convDesc->dilation[i] = i < arrayLength ? dilationA[i] : 1;
    }
    convDesc->mode = mode;
    convDesc->compute_type = computeType;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t convDesc, int pad_h, int pad_w,
                                              int u, int v, int dilation_h, int dilation_w,
                                              cudnnConvolutionMode_t mode, cudnnDataType_t computeType)
{
    int pad[2] = {pad_h, pad_w}, stride[2] = {u, v}, dil[2] = {dilation_h, dilation_w};
    return cudnnSetConvolutionNdDescriptor(convDesc, 2, pad, stride, dil, mode, computeType);
}

cudnnStatus_t cudnnGetConvolution2dDescriptor(const cudnnConvolutionDescriptor_t convDesc, int *pad_h,
                                              int *pad_w, int *u, int *v, int *dilation_h, int *dilation_w,
                                              cudnnConvolutionMode_t *mode, cudnnDataType_t *computeType)
{
    CHECK(convDesc, SIMDNN_MAGIC_CONV);
    if (convDesc->spatial != 2 || !pad_h || !pad_w || !u || !v || !dilation_h || !dilation_w || !mode ||
        !computeType)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolution2dDescriptor: bad arguments");
    *pad_h = convDesc->pad[0], *pad_w = convDesc->pad[1];
    *u = convDesc->stride[0], *v = convDesc->stride[1];
    *dilation_h = convDesc->dilation[0], *dilation_w = convDesc->dilation[1];
    *mode = convDesc->mode;
    *computeType = convDesc->compute_type;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionNdDescriptor(const cudnnConvolutionDescriptor_t convDesc,
                                              int arrayLengthRequested, int *arrayLength, int padA[],
                                              int strideA[], int dilationA[], cudnnConvolutionMode_t *mode,
                                              cudnnDataType_t *computeType)
{
    CHECK(convDesc, SIMDNN_MAGIC_CONV);
    if (arrayLengthRequested < 0 || !arrayLength || !mode || !computeType ||
        (arrayLengthRequested > 0 && (!padA || !strideA || !dilationA)))
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionNdDescriptor: bad arguments");
    *arrayLength = convDesc->spatial;
    for (int i = 0; i < arrayLengthRequested && i < convDesc->spatial; i++) {
        padA[i] = convDesc->pad[i];
        strideA[i] = convDesc->stride[i];
        dilationA[i] = convDesc->dilation[i];
    }
    *mode = convDesc->mode;
    *computeType = convDesc->compute_type;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t mathType)
{
    CHECK(convDesc, SIMDNN_MAGIC_CONV);
    if ((int)mathType < CUDNN_DEFAULT_MATH || mathType > CUDNN_FMA_MATH)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionMathType: %d", (int)mathType);
    convDesc->math_type = mathType;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t *mathType)
{
    CHECK(convDesc, SIMDNN_MAGIC_CONV);
    if (!mathType)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionMathType: NULL");
    *mathType = convDesc->math_type;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc, int groupCount)
{
    CHECK(convDesc, SIMDNN_MAGIC_CONV);
    if (groupCount < 1)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionGroupCount: %d", groupCount);
    convDesc->groups = groupCount;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc, int *groupCount)
{
    CHECK(convDesc, SIMDNN_MAGIC_CONV);
    if (!groupCount)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionGroupCount: NULL");
    *groupCount = convDesc->groups;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionReorderType(cudnnConvolutionDescriptor_t convDesc,
                                             cudnnReorderType_t reorderType)
{
    CHECK(convDesc, SIMDNN_MAGIC_CONV);
    if (reorderType != CUDNN_DEFAULT_REORDER && reorderType != CUDNN_NO_REORDER)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionReorderType: %d", (int)reorderType);
    convDesc->reorder = reorderType;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionReorderType(cudnnConvolutionDescriptor_t convDesc,
                                             cudnnReorderType_t *reorderType)
{
    CHECK(convDesc, SIMDNN_MAGIC_CONV);
    if (!reorderType)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionReorderType: NULL");
    *reorderType = convDesc->reorder;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- activation -------------------------------------------------------------- */

cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t *activationDesc)
{
    CREATE(struct cudnnActivationStruct, SIMDNN_MAGIC_ACT, activationDesc, {
        d_->mode = CUDNN_ACTIVATION_RELU;
        d_->swish_beta = 1.0;
    });
}

cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t activationDesc)
{
    DESTROY(activationDesc, SIMDNN_MAGIC_ACT);
}

cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t activationDesc,
                                           cudnnActivationMode_t mode, cudnnNanPropagation_t reluNanOpt,
                                           double coef)
{
    CHECK(activationDesc, SIMDNN_MAGIC_ACT);
    if ((int)mode < CUDNN_ACTIVATION_SIGMOID || mode > CUDNN_ACTIVATION_SWISH)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetActivationDescriptor: mode %d", (int)mode);
    if (reluNanOpt != CUDNN_NOT_PROPAGATE_NAN && reluNanOpt != CUDNN_PROPAGATE_NAN)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetActivationDescriptor: nan option %d",
                           (int)reluNanOpt);
    activationDesc->mode = mode;
    activationDesc->nan_opt = reluNanOpt;
    activationDesc->coef = coef;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetActivationDescriptor(const cudnnActivationDescriptor_t activationDesc,
                                           cudnnActivationMode_t *mode, cudnnNanPropagation_t *reluNanOpt,
                                           double *coef)
{
    CHECK(activationDesc, SIMDNN_MAGIC_ACT);
    if (!mode || !reluNanOpt || !coef)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetActivationDescriptor: NULL output");
    *mode = activationDesc->mode;
    *reluNanOpt = activationDesc->nan_opt;
    *coef = activationDesc->coef;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetActivationDescriptorSwishBeta(cudnnActivationDescriptor_t activationDesc,
                                                    double swish_beta)
{
    CHECK(activationDesc, SIMDNN_MAGIC_ACT);
    activationDesc->swish_beta = swish_beta;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetActivationDescriptorSwishBeta(cudnnActivationDescriptor_t activationDesc,
                                                    double *swish_beta)
{
    CHECK(activationDesc, SIMDNN_MAGIC_ACT);
    if (!swish_beta)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetActivationDescriptorSwishBeta: NULL");
    *swish_beta = activationDesc->swish_beta;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- pooling ----------------------------------------------------------------- */

cudnnStatus_t cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t *poolingDesc)
{
    CREATE(struct cudnnPoolingStruct, SIMDNN_MAGIC_POOL, poolingDesc, (void)0);
}

cudnnStatus_t cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t poolingDesc)
{
    DESTROY(poolingDesc, SIMDNN_MAGIC_POOL);
}

cudnnStatus_t cudnnSetPoolingNdDescriptor(cudnnPoolingDescriptor_t poolingDesc, const cudnnPoolingMode_t mode,
                                          const cudnnNanPropagation_t maxpoolingNanOpt, int nbDims,
                                          const int windowDimA[], const int paddingA[], const int strideA[])
{
    CHECK(poolingDesc, SIMDNN_MAGIC_POOL);
    if (!windowDimA || !paddingA || !strideA)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetPoolingNdDescriptor: NULL array");
    if ((int)mode < CUDNN_POOLING_MAX || mode > CUDNN_POOLING_MAX_DETERMINISTIC)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetPoolingNdDescriptor: mode %d", (int)mode);
    if (maxpoolingNanOpt != CUDNN_NOT_PROPAGATE_NAN && maxpoolingNanOpt != CUDNN_PROPAGATE_NAN)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetPoolingNdDescriptor: nan option");
    if (nbDims <= 0 || nbDims > CUDNN_DIM_MAX - 2)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetPoolingNdDescriptor: nbDims %d", nbDims);
    for (int i = 0; i < nbDims; i++)
        if (windowDimA[i] <= 0 || paddingA[i] < 0 || strideA[i] <= 0)
            return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetPoolingNdDescriptor: window %d pad %d stride %d",
                               windowDimA[i], paddingA[i], strideA[i]);
    poolingDesc->mode = mode;
    poolingDesc->nan_opt = maxpoolingNanOpt;
    poolingDesc->spatial = nbDims;
    for (int i = 0; i < CUDNN_DIM_MAX; i++) {
        poolingDesc->window[i] = i < nbDims ? windowDimA[i] : 1;
        poolingDesc->pad[i] = i < nbDims ? paddingA[i] : 0;
        poolingDesc->stride[i] = i < nbDims ? strideA[i] : 1;
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetPooling2dDescriptor(cudnnPoolingDescriptor_t poolingDesc, cudnnPoolingMode_t mode,
                                          cudnnNanPropagation_t maxpoolingNanOpt, int windowHeight,
                                          int windowWidth, int verticalPadding, int horizontalPadding,
                                          int verticalStride, int horizontalStride)
{
    int win[2] = {windowHeight, windowWidth}, pad[2] = {verticalPadding, horizontalPadding};
    int stride[2] = {verticalStride, horizontalStride};
    return cudnnSetPoolingNdDescriptor(poolingDesc, mode, maxpoolingNanOpt, 2, win, pad, stride);
}

cudnnStatus_t cudnnGetPooling2dDescriptor(const cudnnPoolingDescriptor_t poolingDesc, cudnnPoolingMode_t *mode,
                                          cudnnNanPropagation_t *maxpoolingNanOpt, int *windowHeight,
                                          int *windowWidth, int *verticalPadding, int *horizontalPadding,
                                          int *verticalStride, int *horizontalStride)
{
    CHECK(poolingDesc, SIMDNN_MAGIC_POOL);
    if (poolingDesc->spatial != 2 || !mode || !maxpoolingNanOpt || !windowHeight || !windowWidth ||
        !verticalPadding || !horizontalPadding || !verticalStride || !horizontalStride)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetPooling2dDescriptor: bad arguments");
    *mode = poolingDesc->mode;
    *maxpoolingNanOpt = poolingDesc->nan_opt;
    *windowHeight = poolingDesc->window[0], *windowWidth = poolingDesc->window[1];
    *verticalPadding = poolingDesc->pad[0], *horizontalPadding = poolingDesc->pad[1];
    *verticalStride = poolingDesc->stride[0], *horizontalStride = poolingDesc->stride[1];
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetPoolingNdDescriptor(const cudnnPoolingDescriptor_t poolingDesc, int nbDimsRequested,
                                          cudnnPoolingMode_t *mode, cudnnNanPropagation_t *maxpoolingNanOpt,
                                          int *nbDims, int windowDimA[], int paddingA[], int strideA[])
{
    CHECK(poolingDesc, SIMDNN_MAGIC_POOL);
    if (nbDimsRequested < 0 || !mode || !maxpoolingNanOpt || !nbDims ||
        (nbDimsRequested > 0 && (!windowDimA || !paddingA || !strideA)))
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetPoolingNdDescriptor: bad arguments");
    *mode = poolingDesc->mode;
    *maxpoolingNanOpt = poolingDesc->nan_opt;
    *nbDims = poolingDesc->spatial;
    for (int i = 0; i < nbDimsRequested && i < poolingDesc->spatial; i++) {
        windowDimA[i] = poolingDesc->window[i];
        paddingA[i] = poolingDesc->pad[i];
        strideA[i] = poolingDesc->stride[i];
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetPoolingNdForwardOutputDim(const cudnnPoolingDescriptor_t poolingDesc,
                                                const cudnnTensorDescriptor_t inputTensorDesc, int nbDims,
                                                int outputTensorDimA[])
{
    CHECK(poolingDesc, SIMDNN_MAGIC_POOL);
    cudnnStatus_t st = simdnn_check_tensor(inputTensorDesc, "cudnnGetPoolingNdForwardOutputDim");
    if (st)
        return st;
    if (!outputTensorDimA || poolingDesc->spatial == 0 || nbDims != poolingDesc->spatial + 2 ||
        inputTensorDesc->nb_dims != nbDims)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetPoolingNdForwardOutputDim: dimension mismatch");
    int out[CUDNN_DIM_MAX];
    for (int i = 0; i < poolingDesc->spatial; i++) {
        /* In 64 bits: a padding near INT_MAX is a legal descriptor value. */
        int64_t in = (int64_t)inputTensorDesc->dim[i + 2] + 2 * (int64_t)poolingDesc->pad[i];
        if (in < poolingDesc->window[i])
            return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetPoolingNdForwardOutputDim: window larger than input");
        int64_t o = 1 + (in - poolingDesc->window[i]) / poolingDesc->stride[i];
        if (o > INT_MAX)
            return simdnn_fail(CUDNN_STATUS_BAD_PARAM,
                               "cudnnGetPoolingNdForwardOutputDim: output dimension %d does not fit in an int", i + 2);
        out[i + 2] = (int)o;
    }
    outputTensorDimA[0] = inputTensorDesc->dim[0];
    outputTensorDimA[1] = inputTensorDesc->dim[1];
    for (int i = 2; i < nbDims; i++)
        outputTensorDimA[i] = out[i];
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetPooling2dForwardOutputDim(const cudnnPoolingDescriptor_t poolingDesc,
                                                const cudnnTensorDescriptor_t inputTensorDesc, int *n, int *c,
                                                int *h, int *w)
{
    int out[4];
    if (!n || !c || !h || !w)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetPooling2dForwardOutputDim: NULL output");
    cudnnStatus_t st = cudnnGetPoolingNdForwardOutputDim(poolingDesc, inputTensorDesc, 4, out);
    if (st)
        return st;
    *n = out[0], *c = out[1], *h = out[2], *w = out[3];
    return CUDNN_STATUS_SUCCESS;
}

/* ---- LRN ----------------------------------------------------------------------- */

cudnnStatus_t cudnnCreateLRNDescriptor(cudnnLRNDescriptor_t *normDesc)
{
    /* cuDNN's documented defaults: lrnN 5, lrnAlpha 1e-4, lrnBeta 0.75, lrnK 2.0. */
    CREATE(struct cudnnLRNStruct, SIMDNN_MAGIC_LRN, normDesc, {
        d_->n = 5;
        d_->alpha = 1e-4;
        d_->beta = 0.75;
        d_->k = 2.0;
    });
}

cudnnStatus_t cudnnDestroyLRNDescriptor(cudnnLRNDescriptor_t lrnDesc)
{
    DESTROY(lrnDesc, SIMDNN_MAGIC_LRN);
}

cudnnStatus_t cudnnSetLRNDescriptor(cudnnLRNDescriptor_t normDesc, unsigned lrnN, double lrnAlpha,
                                    double lrnBeta, double lrnK)
{
    CHECK(normDesc, SIMDNN_MAGIC_LRN);
    if (lrnN < CUDNN_LRN_MIN_N || lrnN > CUDNN_LRN_MAX_N || lrnK < CUDNN_LRN_MIN_K ||
        lrnBeta < CUDNN_LRN_MIN_BETA)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetLRNDescriptor: n %u beta %g k %g out of range",
                           lrnN, lrnBeta, lrnK);
    normDesc->n = lrnN;
    normDesc->alpha = lrnAlpha;
    normDesc->beta = lrnBeta;
    normDesc->k = lrnK;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetLRNDescriptor(cudnnLRNDescriptor_t normDesc, unsigned *lrnN, double *lrnAlpha,
                                    double *lrnBeta, double *lrnK)
{
    CHECK(normDesc, SIMDNN_MAGIC_LRN);
    if (!lrnN || !lrnAlpha || !lrnBeta || !lrnK)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetLRNDescriptor: NULL output");
    *lrnN = normDesc->n;
    *lrnAlpha = normDesc->alpha;
    *lrnBeta = normDesc->beta;
    *lrnK = normDesc->k;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- op tensor ----------------------------------------------------------------- */

cudnnStatus_t cudnnCreateOpTensorDescriptor(cudnnOpTensorDescriptor_t *opTensorDesc)
{
    CREATE(struct cudnnOpTensorStruct, SIMDNN_MAGIC_OPTENSOR, opTensorDesc, d_->comp_type = CUDNN_DATA_FLOAT);
}

cudnnStatus_t cudnnDestroyOpTensorDescriptor(cudnnOpTensorDescriptor_t opTensorDesc)
{
    DESTROY(opTensorDesc, SIMDNN_MAGIC_OPTENSOR);
}

cudnnStatus_t cudnnSetOpTensorDescriptor(cudnnOpTensorDescriptor_t opTensorDesc, cudnnOpTensorOp_t opTensorOp,
                                         cudnnDataType_t opTensorCompType, cudnnNanPropagation_t opTensorNanOpt)
{
    CHECK(opTensorDesc, SIMDNN_MAGIC_OPTENSOR);
    if ((int)opTensorOp < CUDNN_OP_TENSOR_ADD || opTensorOp > CUDNN_OP_TENSOR_NOT)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetOpTensorDescriptor: op %d", (int)opTensorOp);
    if (opTensorCompType != CUDNN_DATA_FLOAT && opTensorCompType != CUDNN_DATA_DOUBLE &&
        opTensorCompType != CUDNN_DATA_HALF && opTensorCompType != CUDNN_DATA_BFLOAT16)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetOpTensorDescriptor: compute type %d",
                           (int)opTensorCompType);
    if (opTensorNanOpt != CUDNN_NOT_PROPAGATE_NAN && opTensorNanOpt != CUDNN_PROPAGATE_NAN)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetOpTensorDescriptor: nan option");
    opTensorDesc->op = opTensorOp;
    opTensorDesc->comp_type = opTensorCompType;
    opTensorDesc->nan_opt = opTensorNanOpt;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetOpTensorDescriptor(const cudnnOpTensorDescriptor_t opTensorDesc,
                                         cudnnOpTensorOp_t *opTensorOp, cudnnDataType_t *opTensorCompType,
                                         cudnnNanPropagation_t *opTensorNanOpt)
{
    CHECK(opTensorDesc, SIMDNN_MAGIC_OPTENSOR);
    if (!opTensorOp || !opTensorCompType || !opTensorNanOpt)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetOpTensorDescriptor: NULL output");
    *opTensorOp = opTensorDesc->op;
    *opTensorCompType = opTensorDesc->comp_type;
    *opTensorNanOpt = opTensorDesc->nan_opt;
    return CUDNN_STATUS_SUCCESS;
}
