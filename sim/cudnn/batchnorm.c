/*
 * batchnorm.c — batch normalisation of the simulated cuDNN:
 * cudnnDeriveBNTensorDescriptor, cudnnBatchNormalizationForwardTraining,
 * ...ForwardInference and ...Backward, in PER_ACTIVATION (statistics per
 * element of C x spatial over the batch) and SPATIAL / SPATIAL_PERSISTENT
 * (per channel over the batch and all positions) modes.
 *
 * As in cuDNN, the batch is normalised with the biased variance, the running
 * variance is updated with the unbiased one (m / (m - 1)), and the saved
 * statistics are the mean and 1 / sqrt(var + epsilon). Statistics are
 * accumulated in double, two-pass.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "sim/cudnn/cudnn_sim.h"

cudnnStatus_t cudnnDeriveBNTensorDescriptor(cudnnTensorDescriptor_t derivedBnDesc, const cudnnTensorDescriptor_t xDesc,
                                            cudnnBatchNormMode_t mode)
{
    const char *what = "cudnnDeriveBNTensorDescriptor";
    cudnnStatus_t st = simdnn_check_tensor(xDesc, what);
    if (st)
        return st;
    if (!derivedBnDesc || derivedBnDesc->magic != SIMDNN_MAGIC_TENSOR)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: invalid derived descriptor", what);
    if ((int)mode < CUDNN_BATCHNORM_PER_ACTIVATION || mode > CUDNN_BATCHNORM_SPATIAL_PERSISTENT)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: mode %d", what, (int)mode);
    int nb = xDesc->nb_dims, dim[CUDNN_DIM_MAX], stride[CUDNN_DIM_MAX];
    for (int i = 0; i < nb; i++)
        dim[i] = i == 1 || (i >= 2 && mode == CUDNN_BATCHNORM_PER_ACTIVATION) ? xDesc->dim[i] : 1;
    int s = 1;
    for (int i = nb - 1; i >= 0; i--) {
        stride[i] = s;
        s *= dim[i];
    }
    cudnnDataType_t dt = xDesc->dtype == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    return cudnnSetTensorNdDescriptor(derivedBnDesc, dt, nb, dim, stride);
}

/* The elements of x that share one set of statistics ("feature"). */
struct bn_layout {
    int spatial_mode;         /* SPATIAL(_PERSISTENT): features are channels */
    int n, c;
    int64_t np;               /* spatial positions */
    int64_t *spx, *spy, *spp; /* spatial offsets of x, y (or dy), dx and params */
    int64_t *spz;
    int64_t features, members;
};

static cudnnStatus_t bn_check(cudnnHandle_t h, cudnnBatchNormMode_t mode, const struct cudnnTensorStruct *x,
                              const struct cudnnTensorStruct *y, const struct cudnnTensorStruct *p,
                              double epsilon, const char *what)
{
    cudnnStatus_t st;
    if ((st = simdnn_check_work(h)) || (st = simdnn_check_float_tensor(x, what)) ||
        (st = simdnn_check_float_tensor(y, what)) || (st = simdnn_check_float_tensor(p, what)))
        return st;
    if ((int)mode < CUDNN_BATCHNORM_PER_ACTIVATION || mode > CUDNN_BATCHNORM_SPATIAL_PERSISTENT)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: mode %d", what, (int)mode);
    if (!simdnn_same_dims(x, y))
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: x and y dimensions differ", what);
    if (x->nb_dims != 4 && x->nb_dims != 5)
        return simdnn_fail(CUDNN_STATUS_NOT_SUPPORTED, "%s: only 4-D and 5-D tensors", what);
    if (epsilon < CUDNN_BN_MIN_EPSILON)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: epsilon %g below CUDNN_BN_MIN_EPSILON", what, epsilon);
    int ok = p->nb_dims == x->nb_dims && p->dim[0] == 1 && p->dim[1] == x->dim[1];
    for (int i = 2; i < p->nb_dims && ok; i++)
        ok = p->dim[i] == (mode == CUDNN_BATCHNORM_PER_ACTIVATION ? x->dim[i] : 1);
    if (!ok)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: scale/bias descriptor does not match the mode", what);
    return CUDNN_STATUS_SUCCESS;
}

static void bn_layout_free(struct bn_layout *l)
{
    free(l->spx), free(l->spy), free(l->spp), free(l->spz);
}

static int bn_layout(cudnnBatchNormMode_t mode, const struct cudnnTensorStruct *x, const struct cudnnTensorStruct *y,
                     const struct cudnnTensorStruct *p, const struct cudnnTensorStruct *z, struct bn_layout *l)
{
    memset(l, 0, sizeof *l);
    l->spatial_mode = mode != CUDNN_BATCHNORM_PER_ACTIVATION;
    l->n = x->dim[0];
    l->c = x->dim[1];
    l->np = simdnn_spatial_offsets(x, &l->spx);
    simdnn_spatial_offsets(y, &l->spy);
    simdnn_spatial_offsets(p, &l->spp);
    if (z)
        simdnn_spatial_offsets(z, &l->spz);
    if (l->np < 0 || !l->spy || !l->spp || (z && !l->spz)) {
        bn_layout_free(l);
        return -1;
    }
    l->features = l->spatial_mode ? l->c : l->c * l->np;
    l->members = l->spatial_mode ? (int64_t)l->n * l->np : l->n;
    return 0;
}

/* Offset of member m of feature f in a tensor with batch/channel strides
 * s0/s1 and spatial offsets sp. */
static inline int64_t member_off(const struct bn_layout *l, int64_t f, int64_t m, int64_t s0, int64_t s1,
                                 const int64_t *sp)
{
    if (l->spatial_mode)
        return (m / l->np) * s0 + f * s1 + sp[m % l->np];
    return m * s0 + (f / l->np) * s1 + sp[f % l->np];
}

/* Offset of feature f's parameter in the scale/bias/mean/variance tensor. */
static inline int64_t param_off(const struct bn_layout *l, int64_t f, const struct cudnnTensorStruct *p)
{
    if (l->spatial_mode)
        return f * p->stride[1];
    return (f / l->np) * p->stride[1] + l->spp[f % l->np];
}

static void bn_stats(const struct bn_layout *l, const struct cudnnTensorStruct *xd, const float *x, int64_t f,
                     double *mean, double *var)
{
    double s = 0.0;
    for (int64_t m = 0; m < l->members; m++)
        s += x[member_off(l, f, m, xd->stride[0], xd->stride[1], l->spx)];
    double mu = s / l->members, v = 0.0;
    for (int64_t m = 0; m < l->members; m++) {
        double d = x[member_off(l, f, m, xd->stride[0], xd->stride[1], l->spx)] - mu;
        v += d * d;
    }
    *mean = mu;
    *var = v / l->members;
}

static void charge_bn(cudnnHandle_t h, const char *what, const struct cudnnTensorStruct *x, int passes, int beta_reads)
{
    double n = (double)simdnn_tensor_elems(x);
    simdnn_charge(h, what, 6 * n, SIMDNN_ELEMENTWISE_FLOP_EFF, n * sizeof(float) * (passes + (beta_reads ? 1 : 0)), 0);
}

cudnnStatus_t cudnnBatchNormalizationForwardTraining(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void *alpha, const void *beta,
    const cudnnTensorDescriptor_t xDesc, const void *x, const cudnnTensorDescriptor_t yDesc, void *y,
    const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void *bnScale, const void *bnBias,
    double exponentialAverageFactor, void *resultRunningMean, void *resultRunningVariance, double epsilon,
    void *resultSaveMean, void *resultSaveInvVariance)
{
    const char *what = "cudnnBatchNormalizationForwardTraining";
    const struct cudnnTensorStruct *pd = bnScaleBiasMeanVarDesc;
    cudnnStatus_t st = bn_check(handle, mode, xDesc, yDesc, pd, epsilon, what);
    if (st)
        return st;
    if (!alpha || !beta || !x || !y || !bnScale || !bnBias)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL pointer argument", what);
    if (!resultRunningMean != !resultRunningVariance || !resultSaveMean != !resultSaveInvVariance)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: running (or saved) mean and variance must both be given or both be NULL", what);
    float al = *(const float *)alpha, be = *(const float *)beta;
    simdnn_check_tensor_range(xDesc, x, 0, "cudnnBatchNormalizationForwardTraining x");
    simdnn_check_tensor_range(yDesc, y, 1, "cudnnBatchNormalizationForwardTraining y");
    simdnn_check_tensor_range(pd, bnScale, 0, "cudnnBatchNormalizationForwardTraining bnScale");
    simdnn_check_tensor_range(pd, bnBias, 0, "cudnnBatchNormalizationForwardTraining bnBias");
    if (resultRunningMean) {
        simdnn_check_tensor_range(pd, resultRunningMean, 1, "cudnnBatchNormalizationForwardTraining runningMean");
        simdnn_check_tensor_range(pd, resultRunningVariance, 1, "cudnnBatchNormalizationForwardTraining runningVariance");
    }
    if (resultSaveMean) {
        simdnn_check_tensor_range(pd, resultSaveMean, 1, "cudnnBatchNormalizationForwardTraining saveMean");
        simdnn_check_tensor_range(pd, resultSaveInvVariance, 1, "cudnnBatchNormalizationForwardTraining saveInvVariance");
    }
    if (simgpu_compute_enabled()) {
        struct bn_layout l;
        if (bn_layout(mode, xDesc, yDesc, pd, NULL, &l))
            return simdnn_scratch_failed(handle, what);
        const float *xf = x, *scale = bnScale, *bias = bnBias;
        float *yf = y;
        for (int64_t f = 0; f < l.features; f++) {
            double mean, var;
            bn_stats(&l, xDesc, xf, f, &mean, &var);
            double inv = 1.0 / sqrt(var + epsilon);
            int64_t po = param_off(&l, f, pd);
            double sc = scale[po], bi = bias[po];
            for (int64_t m = 0; m < l.members; m++) {
                float v = (float)(sc * (xf[member_off(&l, f, m, xDesc->stride[0], xDesc->stride[1], l.spx)] - mean) * inv + bi);
                float *o = yf + member_off(&l, f, m, yDesc->stride[0], yDesc->stride[1], l.spy);
                *o = simdnn_blend(al, v, be, *o);
            }
            if (resultRunningMean) {
                double unbiased = l.members > 1 ? var * l.members / (l.members - 1) : var;
                float *rm = (float *)resultRunningMean + po, *rv = (float *)resultRunningVariance + po;
                *rm = (float)((1.0 - exponentialAverageFactor) * *rm + exponentialAverageFactor * mean);
                *rv = (float)((1.0 - exponentialAverageFactor) * *rv + exponentialAverageFactor * unbiased);
            }
            if (resultSaveMean) {
                ((float *)resultSaveMean)[po] = (float)mean;
                ((float *)resultSaveInvVariance)[po] = (float)inv;
            }
        }
        bn_layout_free(&l);
    }
    charge_bn(handle, what, xDesc, 3, be != 0.0f);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBatchNormalizationForwardInference(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void *alpha, const void *beta,
    const cudnnTensorDescriptor_t xDesc, const void *x, const cudnnTensorDescriptor_t yDesc, void *y,
    const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void *bnScale, const void *bnBias,
    const void *estimatedMean, const void *estimatedVariance, double epsilon)
{
    const char *what = "cudnnBatchNormalizationForwardInference";
    const struct cudnnTensorStruct *pd = bnScaleBiasMeanVarDesc;
    cudnnStatus_t st = bn_check(handle, mode, xDesc, yDesc, pd, epsilon, what);
    if (st)
        return st;
    if (!alpha || !beta || !x || !y || !bnScale || !bnBias || !estimatedMean || !estimatedVariance)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL pointer argument", what);
    float al = *(const float *)alpha, be = *(const float *)beta;
    simdnn_check_tensor_range(xDesc, x, 0, "cudnnBatchNormalizationForwardInference x");
    simdnn_check_tensor_range(yDesc, y, 1, "cudnnBatchNormalizationForwardInference y");
    simdnn_check_tensor_range(pd, bnScale, 0, "cudnnBatchNormalizationForwardInference bnScale");
    simdnn_check_tensor_range(pd, bnBias, 0, "cudnnBatchNormalizationForwardInference bnBias");
    simdnn_check_tensor_range(pd, estimatedMean, 0, "cudnnBatchNormalizationForwardInference estimatedMean");
    simdnn_check_tensor_range(pd, estimatedVariance, 0, "cudnnBatchNormalizationForwardInference estimatedVariance");
    if (simgpu_compute_enabled()) {
        struct bn_layout l;
        if (bn_layout(mode, xDesc, yDesc, pd, NULL, &l))
            return simdnn_scratch_failed(handle, what);
        const float *xf = x, *scale = bnScale, *bias = bnBias, *em = estimatedMean, *ev = estimatedVariance;
        float *yf = y;
        for (int64_t f = 0; f < l.features; f++) {
            int64_t po = param_off(&l, f, pd);
            double inv = 1.0 / sqrt((double)ev[po] + epsilon), mean = em[po], sc = scale[po], bi = bias[po];
            for (int64_t m = 0; m < l.members; m++) {
                float v = (float)(sc * (xf[member_off(&l, f, m, xDesc->stride[0], xDesc->stride[1], l.spx)] - mean) * inv + bi);
                float *o = yf + member_off(&l, f, m, yDesc->stride[0], yDesc->stride[1], l.spy);
                *o = simdnn_blend(al, v, be, *o);
            }
        }
        bn_layout_free(&l);
    }
    charge_bn(handle, what, xDesc, 2, be != 0.0f);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBatchNormalizationBackward(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void *alphaDataDiff, const void *betaDataDiff,
    const void *alphaParamDiff, const void *betaParamDiff, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnTensorDescriptor_t dyDesc, const void *dy, const cudnnTensorDescriptor_t dxDesc, void *dx,
    const cudnnTensorDescriptor_t dBnScaleBiasDesc, const void *bnScale, void *dBnScaleResult, void *dBnBiasResult,
    double epsilon, const void *savedMean, const void *savedInvVariance)
{
    const char *what = "cudnnBatchNormalizationBackward";
    const struct cudnnTensorStruct *pd = dBnScaleBiasDesc;
    cudnnStatus_t st = bn_check(handle, mode, xDesc, dyDesc, pd, epsilon, what);
    if (st || (st = simdnn_check_float_tensor(dxDesc, what)))
        return st;
    if (!simdnn_same_dims(xDesc, dxDesc))
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: x and dx dimensions differ", what);
    if (!alphaDataDiff || !betaDataDiff || !alphaParamDiff || !betaParamDiff || !x || !dy || !dx || !bnScale ||
        !dBnScaleResult || !dBnBiasResult)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL pointer argument", what);
    if (!savedMean != !savedInvVariance)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: savedMean and savedInvVariance must both be given or both be NULL", what);
    float ad = *(const float *)alphaDataDiff, bd = *(const float *)betaDataDiff;
    float ap = *(const float *)alphaParamDiff, bp = *(const float *)betaParamDiff;
    simdnn_check_tensor_range(xDesc, x, 0, "cudnnBatchNormalizationBackward x");
    simdnn_check_tensor_range(dyDesc, dy, 0, "cudnnBatchNormalizationBackward dy");
    simdnn_check_tensor_range(dxDesc, dx, 1, "cudnnBatchNormalizationBackward dx");
    simdnn_check_tensor_range(pd, bnScale, 0, "cudnnBatchNormalizationBackward bnScale");
    simdnn_check_tensor_range(pd, dBnScaleResult, 1, "cudnnBatchNormalizationBackward dBnScaleResult");
    simdnn_check_tensor_range(pd, dBnBiasResult, 1, "cudnnBatchNormalizationBackward dBnBiasResult");
    if (savedMean) {
        simdnn_check_tensor_range(pd, savedMean, 0, "cudnnBatchNormalizationBackward savedMean");
        simdnn_check_tensor_range(pd, savedInvVariance, 0, "cudnnBatchNormalizationBackward savedInvVariance");
    }
    if (simgpu_compute_enabled()) {
        struct bn_layout l;
        if (bn_layout(mode, xDesc, dyDesc, pd, dxDesc, &l))
            return simdnn_scratch_failed(handle, what);
        const float *xf = x, *dyf = dy, *scale = bnScale;
        float *dxf = dx, *dscale = dBnScaleResult, *dbias = dBnBiasResult;
        int64_t xs0 = xDesc->stride[0], xs1 = xDesc->stride[1];
        int64_t ys0 = dyDesc->stride[0], ys1 = dyDesc->stride[1];
        int64_t zs0 = dxDesc->stride[0], zs1 = dxDesc->stride[1];
        for (int64_t f = 0; f < l.features; f++) {
            int64_t po = param_off(&l, f, pd);
            double mean, inv;
            if (savedMean) {
                mean = ((const float *)savedMean)[po];
                inv = ((const float *)savedInvVariance)[po];
            } else {
                double var;
                bn_stats(&l, xDesc, xf, f, &mean, &var);
                inv = 1.0 / sqrt(var + epsilon);
            }
            double sdy = 0.0, sdyx = 0.0;
            for (int64_t m = 0; m < l.members; m++) {
                double g = dyf[member_off(&l, f, m, ys0, ys1, l.spy)];
                double xh = (xf[member_off(&l, f, m, xs0, xs1, l.spx)] - mean) * inv;
                sdy += g;
                sdyx += g * xh;
            }
            double M = (double)l.members, k = scale[po] * inv / M;
            for (int64_t m = 0; m < l.members; m++) {
                double g = dyf[member_off(&l, f, m, ys0, ys1, l.spy)];
                double xh = (xf[member_off(&l, f, m, xs0, xs1, l.spx)] - mean) * inv;
                float *o = dxf + member_off(&l, f, m, zs0, zs1, l.spz);
                *o = simdnn_blend(ad, (float)(k * (M * g - sdy - xh * sdyx)), bd, *o);
            }
            dscale[po] = simdnn_blend(ap, (float)sdyx, bp, dscale[po]);
            dbias[po] = simdnn_blend(ap, (float)sdy, bp, dbias[po]);
        }
        bn_layout_free(&l);
    }
    charge_bn(handle, what, xDesc, 5, bd != 0.0f);
    return CUDNN_STATUS_SUCCESS;
}
