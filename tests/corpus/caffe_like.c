/*
 * caffe_like.c — a small network trained the way BVLC Caffe trains it on
 * a GPU, for libsn's model to be checked against (tests/test_sn_corpus.sh,
 * expectation in caffe_like.expect):
 *  - blobs (data and diff) are allocated on first use and kept; weights are
 *    filled when the net is set up; a test net shares the train net's
 *    weights and has blobs of its own, at a smaller batch; it runs before
 *    training (test_initialization) and after it;
 *  - the data layer copies the prefetched batch (three prefetch slots
 *    refilled from the host) into its top blobs;
 *  - every cuDNN layer has its own cuDNN handle; ReLU runs in place;
 *  - BatchNorm is Caffe's own layer: cuBLAS gemv/gemm for the statistics
 *    and their broadcast, small kernels for element-wise work, the moving
 *    averages updated with scal + axpy, the normalised output copied for
 *    the backward pass;
 *  - max pooling is Caffe's own kernels (with an index mask);
 *  - SoftmaxWithLoss: cuDNN softmax, a loss kernel writing into the bottom
 *    diff as scratch, the loss summed by cublasSasum into host memory;
 *    its backward copies the probabilities into the bottom diff and
 *    subtracts the label with a kernel;
 *  - the solver clears the parameter diffs before each iteration,
 *    regularizes the weights (axpy), computes the update with its own
 *    SGD kernel (momentum kept in the history blobs), then applies every
 *    update with axpy.
 */
#include "tests/corpus/corpus.h"

enum { BATCH = 4, TEST_BATCH = 2, ITERS = 8, CLASSES = 4, IN_C = 3, HW = 8, C1 = 8, C2 = 8 };
enum { SLOTS = 3 };

/* ---- blobs: allocated on first use, kept (SyncedMemory) ---------------------- */

typedef struct blob {
    size_t count;
    float *data, *diff;
} blob;

static float *bdata(blob *b)
{
    if (!b->data)
        b->data = corpus_dev(b->count * 4);
    return b->data;
}

static float *bdiff(blob *b)
{
    if (!b->diff)
        b->diff = corpus_dev(b->count * 4);
    return b->diff;
}

static cublasHandle_t blas;
static const float one = 1.0f, zero = 0.0f;

/* ---- Caffe's own kernels ----------------------------------------------------------- */

/* mul(n, a, b, y): y = a * b */
static void k_mul(void **args, dim3 g, dim3 bl)
{
    (void)g, (void)bl;
    int n = CORPUS_ARG(int, 0);
    const float *a = CORPUS_ARG(const float *, 1), *b = CORPUS_ARG(const float *, 2);
    float *y = CORPUS_ARG(float *, 3);
    for (int i = 0; i < n; i++)
        y[i] = a[i] * b[i];
}

/* div(n, a, b, y): y = a / b */
static void k_div(void **args, dim3 g, dim3 bl)
{
    (void)g, (void)bl;
    int n = CORPUS_ARG(int, 0);
    const float *a = CORPUS_ARG(const float *, 1), *b = CORPUS_ARG(const float *, 2);
    float *y = CORPUS_ARG(float *, 3);
    for (int i = 0; i < n; i++)
        y[i] = a[i] / b[i];
}

/* add_scalar(n, alpha, y): y += alpha */
static void k_add_scalar(void **args, dim3 g, dim3 bl)
{
    (void)g, (void)bl;
    int n = CORPUS_ARG(int, 0);
    float a = CORPUS_ARG(float, 1);
    float *y = CORPUS_ARG(float *, 2);
    for (int i = 0; i < n; i++)
        y[i] += a;
}

/* sqrt(n, a, y): y = sqrt(a) */
static void k_sqrt(void **args, dim3 g, dim3 bl)
{
    (void)g, (void)bl;
    int n = CORPUS_ARG(int, 0);
    const float *a = CORPUS_ARG(const float *, 1);
    float *y = CORPUS_ARG(float *, 2);
    for (int i = 0; i < n; i++)
        y[i] = sqrtf(a[i]);
}

/* SoftmaxLossForwardGPU(n, classes, prob, label, loss) */
static void k_softmax_loss_fwd(void **args, dim3 g, dim3 bl)
{
    (void)g, (void)bl;
    int n = CORPUS_ARG(int, 0), classes = CORPUS_ARG(int, 1);
    const float *prob = CORPUS_ARG(const float *, 2), *label = CORPUS_ARG(const float *, 3);
    float *loss = CORPUS_ARG(float *, 4);
    for (int i = 0; i < n; i++) {
        float p = prob[i * classes + (int)label[i]];
        loss[i] = -logf(p > 1e-30f ? p : 1e-30f);
    }
}

/* SoftmaxLossBackwardGPU(n, classes, label, bottom_diff): diff[label] -= 1 */
static void k_softmax_loss_bwd(void **args, dim3 g, dim3 bl)
{
    (void)g, (void)bl;
    int n = CORPUS_ARG(int, 0), classes = CORPUS_ARG(int, 1);
    const float *label = CORPUS_ARG(const float *, 2);
    float *diff = CORPUS_ARG(float *, 3);
    for (int i = 0; i < n; i++)
        diff[i * classes + (int)label[i]] -= 1.0f;
}

/* SGDUpdate(n, g, h, momentum, rate): h = momentum h + rate g; g = h */
static void k_sgd_update(void **args, dim3 gr, dim3 bl)
{
    (void)gr, (void)bl;
    int n = CORPUS_ARG(int, 0);
    float *g = CORPUS_ARG(float *, 1), *h = CORPUS_ARG(float *, 2);
    float m = CORPUS_ARG(float, 3), r = CORPUS_ARG(float, 4);
    for (int i = 0; i < n; i++)
        g[i] = h[i] = m * h[i] + r * g[i];
}

static void caffe_register(void)
{
    static const size_t binary[] = {P_INT, P_PTR, P_PTR, P_PTR};
    static const size_t scalar[] = {P_INT, P_FLT, P_PTR};
    static const size_t unary[] = {P_INT, P_PTR, P_PTR};
    static const size_t lossf[] = {P_INT, P_INT, P_PTR, P_PTR, P_PTR};
    static const size_t lossb[] = {P_INT, P_INT, P_PTR, P_PTR};
    static const size_t sgd[] = {P_INT, P_PTR, P_PTR, P_FLT, P_FLT};
    corpus_register(k_mul, "caffe_mul", 4, binary);
    corpus_register(k_div, "caffe_div", 4, binary);
    corpus_register(k_add_scalar, "caffe_add_scalar", 3, scalar);
    corpus_register(k_sqrt, "caffe_sqrt", 3, unary);
    corpus_register(k_softmax_loss_fwd, "SoftmaxLossForwardGPU", 5, lossf);
    corpus_register(k_softmax_loss_bwd, "SoftmaxLossBackwardGPU", 4, lossb);
    corpus_register(k_sgd_update, "SGDUpdate", 5, sgd);
}

static void binary_kernel(simgpu_host_kernel_fn fn, int n, const float *a, const float *b, float *y)
{
    void *args[] = {&n, &a, &b, &y};
    corpus_launch(fn, n, args, 0);
}

/* ---- layers --------------------------------------------------------------------- */

typedef struct conv {
    cudnnHandle_t handle;
    blob w, b;
    int c, k;
    cudnnTensorDescriptor_t x, y, bias;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnConvolutionFwdAlgo_t fa;
    cudnnConvolutionBwdFilterAlgo_t ba;
    cudnnConvolutionBwdDataAlgo_t da;
    size_t ws_bytes;
    float *ws;
} conv;

/* The test net's convolution shares w and b (ShareTrainedLayersWith). */
static void conv_setup(conv *l, int n, int c, int k, const conv *share)
{
    memset(l, 0, sizeof *l);
    l->handle = corpus_dnn();
    l->c = c, l->k = k;
    l->w.count = (size_t)k * c * 9;
    l->b.count = (size_t)k;
    if (share) {
        l->w = share->w;
        l->b = share->b;
    } else {
        corpus_upload_random(bdata(&l->w), l->w.count, 0.3f);
        CK(cudaMemset(bdata(&l->b), 0, l->b.count * 4));
    }
    l->x = corpus_tensor(n, c, HW, HW);
    l->y = corpus_tensor(n, k, HW, HW);
    l->bias = corpus_tensor(1, k, 1, 1);
    l->wd = corpus_filter(k, c, 3, 3);
    l->cd = corpus_conv(1, 1);
    int got = 0;
    cudnnConvolutionFwdAlgoPerf_t fp;
    CKDNN(cudnnGetConvolutionForwardAlgorithm_v7(l->handle, l->x, l->wd, l->cd, l->y, 1, &got, &fp));
    cudnnConvolutionBwdFilterAlgoPerf_t bp;
    CKDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(l->handle, l->x, l->y, l->cd, l->wd, 1, &got, &bp));
    cudnnConvolutionBwdDataAlgoPerf_t dp;
    CKDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(l->handle, l->wd, l->y, l->cd, l->x, 1, &got, &dp));
    l->fa = fp.algo, l->ba = bp.algo, l->da = dp.algo;
    size_t a = 0, b = 0, d = 0;
    CKDNN(cudnnGetConvolutionForwardWorkspaceSize(l->handle, l->x, l->wd, l->cd, l->y, l->fa, &a));
    CKDNN(cudnnGetConvolutionBackwardFilterWorkspaceSize(l->handle, l->x, l->y, l->cd, l->wd, l->ba, &b));
    CKDNN(cudnnGetConvolutionBackwardDataWorkspaceSize(l->handle, l->wd, l->y, l->cd, l->x, l->da, &d));
    l->ws_bytes = a > b ? a : b;
    l->ws_bytes = l->ws_bytes > d ? l->ws_bytes : d;
    if (l->ws_bytes)
        l->ws = corpus_dev(l->ws_bytes);
}

static void conv_forward(conv *l, blob *bottom, blob *top)
{
    CKDNN(cudnnConvolutionForward(l->handle, &one, l->x, bdata(bottom), l->wd, bdata(&l->w), l->cd,
                                  l->fa, l->ws, l->ws_bytes, &zero, l->y, bdata(top)));
    CKDNN(cudnnAddTensor(l->handle, &one, l->bias, bdata(&l->b), &one, l->y, bdata(top)));
}

static void conv_backward(conv *l, blob *bottom, blob *top, int propagate_down)
{
    CKDNN(cudnnConvolutionBackwardBias(l->handle, &one, l->y, bdiff(top), &one, l->bias, bdiff(&l->b)));
    CKDNN(cudnnConvolutionBackwardFilter(l->handle, &one, l->x, bdata(bottom), l->y, bdiff(top), l->cd,
                                         l->ba, l->ws, l->ws_bytes, &one, l->wd, bdiff(&l->w)));
    if (propagate_down)
        CKDNN(cudnnConvolutionBackwardData(l->handle, &one, l->wd, bdata(&l->w), l->y, bdiff(top), l->cd,
                                           l->da, l->ws, l->ws_bytes, &zero, l->x, bdiff(bottom)));
}

typedef struct relu {
    cudnnHandle_t handle;
    cudnnActivationDescriptor_t act;
    cudnnTensorDescriptor_t t;
} relu;

static void relu_setup(relu *l, int n, int c, int hw)
{
    l->handle = corpus_dnn();
    l->act = corpus_relu();
    l->t = corpus_tensor(n, c, hw, hw);
}

/* in place: bottom == top */
static void relu_forward(relu *l, blob *b)
{
    CKDNN(cudnnActivationForward(l->handle, l->act, &one, l->t, bdata(b), &zero, l->t, bdata(b)));
}

static void relu_backward(relu *l, blob *b)
{
    CKDNN(cudnnActivationBackward(l->handle, l->act, &one, l->t, bdata(b), l->t, bdiff(b), l->t, bdata(b),
                                  &zero, l->t, bdiff(b)));
}

/* Caffe's BatchNormLayer (use_global_stats false in TRAIN, true in TEST). */
typedef struct bnorm {
    int num, channels, spatial;
    blob mean_blob, var_blob;       /* moving averages, this->blobs_[0..1] */
    blob mean, variance, temp, x_norm, num_by_chans, spatial_mult, batch_mult;
} bnorm;

static void bn_setup(bnorm *l, int num, int channels, int spatial, const bnorm *share)
{
    memset(l, 0, sizeof *l);
    l->num = num, l->channels = channels, l->spatial = spatial;
    l->mean_blob.count = l->var_blob.count = (size_t)channels;
    if (share) {
        l->mean_blob = share->mean_blob;
        l->var_blob = share->var_blob;
    } else {
        CK(cudaMemset(bdata(&l->mean_blob), 0, (size_t)channels * 4));
        CK(cudaMemset(bdata(&l->var_blob), 0, (size_t)channels * 4));
    }
    l->mean.count = l->variance.count = (size_t)channels;
    l->temp.count = l->x_norm.count = (size_t)num * channels * spatial;
    l->num_by_chans.count = (size_t)num * channels;
    l->spatial_mult.count = (size_t)spatial;
    l->batch_mult.count = (size_t)num;
    float ones[256];
    for (int i = 0; i < 256; i++)
        ones[i] = 1.0f;
    CK(cudaMemcpy(bdata(&l->spatial_mult), ones, (size_t)spatial * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(bdata(&l->batch_mult), ones, (size_t)num * 4, cudaMemcpyHostToDevice));
}

static void gemv(cublasOperation_t t, int m, int n, float alpha, const float *a, const float *x, float beta, float *y)
{
    /* Caffe's row-major gemv through column-major cuBLAS */
    cublasOperation_t ct = t == CUBLAS_OP_N ? CUBLAS_OP_T : CUBLAS_OP_N;
    CKBLAS(cublasSgemv(blas, ct, n, m, &alpha, a, n, x, 1, &beta, y, 1));
}

static void gemm(int m, int n, int k, float alpha, const float *a, const float *b, float beta, float *c)
{
    /* row-major C(m x n) = A(m x k) B(k x n), no transposes */
    CKBLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, n, a, k, &beta, c, n));
}

static void axpby(int n, float a, const float *x, float b, float *y)
{
    CKBLAS(cublasSscal(blas, n, &b, y, 1));
    CKBLAS(cublasSaxpy(blas, n, &a, x, 1, y, 1));
}

static void bn_forward(bnorm *l, blob *bottom, blob *top, int global_stats)
{
    int num = l->num, ch = l->channels, sp = l->spatial, count = num * ch * sp;
    float *top_data = bdata(top);
    CK(cudaMemcpy(top_data, bdata(bottom), (size_t)count * 4, cudaMemcpyDefault));
    if (global_stats) {
        CKBLAS(cublasScopy(blas, ch, bdata(&l->mean_blob), 1, bdata(&l->mean), 1));
        CKBLAS(cublasScopy(blas, ch, bdata(&l->var_blob), 1, bdata(&l->variance), 1));
    } else {
        gemv(CUBLAS_OP_N, ch * num, sp, 1.0f / (float)(num * sp), bdata(bottom), bdata(&l->spatial_mult), 0,
             bdata(&l->num_by_chans));
        gemv(CUBLAS_OP_T, num, ch, 1, bdata(&l->num_by_chans), bdata(&l->batch_mult), 0, bdata(&l->mean));
    }
    gemm(num, ch, 1, 1, bdata(&l->batch_mult), bdata(&l->mean), 0, bdata(&l->num_by_chans));
    gemm(ch * num, sp, 1, -1, bdata(&l->num_by_chans), bdata(&l->spatial_mult), 1, top_data);
    if (!global_stats) {
        binary_kernel(k_mul, count, top_data, top_data, bdata(&l->temp));
        gemv(CUBLAS_OP_N, ch * num, sp, 1.0f / (float)(num * sp), bdata(&l->temp), bdata(&l->spatial_mult), 0,
             bdata(&l->num_by_chans));
        gemv(CUBLAS_OP_T, num, ch, 1, bdata(&l->num_by_chans), bdata(&l->batch_mult), 0, bdata(&l->variance));
        axpby(ch, 1, bdata(&l->mean), 0.999f, bdata(&l->mean_blob));
        axpby(ch, 1, bdata(&l->variance), 0.999f, bdata(&l->var_blob));
    }
    float eps = 1e-5f;
    float *var = bdata(&l->variance);
    void *as[] = {&ch, &eps, &var};
    corpus_launch(k_add_scalar, ch, as, 0);
    void *sq[] = {&ch, &var, &var};
    corpus_launch(k_sqrt, ch, sq, 0);
    gemm(num, ch, 1, 1, bdata(&l->batch_mult), var, 0, bdata(&l->num_by_chans));
    gemm(ch * num, sp, 1, 1, bdata(&l->num_by_chans), bdata(&l->spatial_mult), 0, bdata(&l->temp));
    binary_kernel(k_div, count, top_data, bdata(&l->temp), top_data);
    if (!global_stats)
        CK(cudaMemcpy(bdata(&l->x_norm), top_data, (size_t)count * 4, cudaMemcpyDefault));
}

static void bn_backward(bnorm *l, blob *bottom, blob *top)
{
    int num = l->num, ch = l->channels, sp = l->spatial, count = num * ch * sp;
    const float *top_diff = bdiff(top);
    float *bottom_diff = bdiff(bottom);
    const float *top_data = bdata(&l->x_norm);
    binary_kernel(k_mul, count, top_data, top_diff, bottom_diff);
    gemv(CUBLAS_OP_N, ch * num, sp, 1, bottom_diff, bdata(&l->spatial_mult), 0, bdata(&l->num_by_chans));
    gemv(CUBLAS_OP_T, num, ch, 1, bdata(&l->num_by_chans), bdata(&l->batch_mult), 0, bdata(&l->mean));
    gemm(num, ch, 1, 1, bdata(&l->batch_mult), bdata(&l->mean), 0, bdata(&l->num_by_chans));
    gemm(ch * num, sp, 1, 1, bdata(&l->num_by_chans), bdata(&l->spatial_mult), 0, bottom_diff);
    binary_kernel(k_mul, count, top_data, bottom_diff, bottom_diff);
    gemv(CUBLAS_OP_N, ch * num, sp, 1, top_diff, bdata(&l->spatial_mult), 0, bdata(&l->num_by_chans));
    gemv(CUBLAS_OP_T, num, ch, 1, bdata(&l->num_by_chans), bdata(&l->batch_mult), 0, bdata(&l->mean));
    gemm(num, ch, 1, 1, bdata(&l->batch_mult), bdata(&l->mean), 0, bdata(&l->num_by_chans));
    gemm(ch * num, sp, 1, 1, bdata(&l->num_by_chans), bdata(&l->spatial_mult), 1, bottom_diff);
    axpby(count, 1, top_diff, -1.0f / (float)(num * sp), bottom_diff);
    binary_kernel(k_div, count, bottom_diff, bdata(&l->temp), bottom_diff);
}

/* Caffe's PoolingLayer, MAX, 2x2 stride 2, with its mask blob. */
typedef struct pool {
    blob mask;
} pool;

static void pool_forward(pool *l, blob *bottom, blob *top, int n, int c)
{
    l->mask.count = (size_t)n * c * (HW / 2) * (HW / 2);
    kl_maxpool(n * c, HW, HW, bdata(bottom), bdata(top), (int *)bdata(&l->mask));
}

static void pool_backward(pool *l, blob *bottom, blob *top, int n, int c)
{
    CK(cudaMemset(bdiff(bottom), 0, bottom->count * 4));
    kl_maxpool_grad(n * c * (HW / 2) * (HW / 2), bdiff(top), (const int *)bdata(&l->mask), bdiff(bottom));
}

/* InnerProduct: top = bottom W^T + bias (bias through a ones multiplier). */
typedef struct ip {
    blob w, b, bias_mult;
    int in, out;
} ip;

static void ip_setup(ip *l, int n, int in, int out, const ip *share)
{
    memset(l, 0, sizeof *l);
    l->in = in, l->out = out;
    l->w.count = (size_t)in * out;
    l->b.count = (size_t)out;
    l->bias_mult.count = (size_t)n;
    if (share) {
        l->w = share->w;
        l->b = share->b;
    } else {
        corpus_upload_random(bdata(&l->w), l->w.count, 0.2f);
        CK(cudaMemset(bdata(&l->b), 0, l->b.count * 4));
    }
    float ones[64];
    for (int i = 0; i < 64; i++)
        ones[i] = 1;
    CK(cudaMemcpy(bdata(&l->bias_mult), ones, (size_t)n * 4, cudaMemcpyHostToDevice));
}

static void ip_forward(ip *l, blob *bottom, blob *top, int n)
{
    CKBLAS(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, l->out, n, l->in, &one, bdata(&l->w), l->in,
                       bdata(bottom), l->in, &zero, bdata(top), l->out));
    CKBLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, l->out, n, 1, &one, bdata(&l->b), l->out,
                       bdata(&l->bias_mult), 1, &one, bdata(top), l->out));
}

static void ip_backward(ip *l, blob *bottom, blob *top, int n)
{
    CKBLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, l->in, l->out, n, &one, bdata(bottom), l->in,
                       bdiff(top), l->out, &one, bdiff(&l->w), l->in));
    CKBLAS(cublasSgemv(blas, CUBLAS_OP_N, l->out, n, &one, bdiff(top), l->out, bdata(&l->bias_mult), 1, &one,
                       bdiff(&l->b), 1));
    CKBLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, l->in, n, l->out, &one, bdata(&l->w), l->in,
                       bdiff(top), l->out, &zero, bdiff(bottom), l->in));
}

/* SoftmaxWithLoss over a cuDNN softmax layer. */
typedef struct loss {
    cudnnHandle_t handle;
    cudnnTensorDescriptor_t t;
    blob prob;
} loss;

static void loss_setup(loss *l, int n)
{
    l->handle = corpus_dnn();
    l->t = corpus_tensor(n, CLASSES, 1, 1);
    l->prob.count = (size_t)n * CLASSES;
}

static float loss_forward(loss *l, blob *bottom, blob *label, int n)
{
    CKDNN(cudnnSoftmaxForward(l->handle, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &one, l->t,
                              bdata(bottom), &zero, l->t, bdata(&l->prob)));
    float *loss_data = bdiff(bottom); /* Caffe uses the bottom diff as scratch */
    const float *prob = bdata(&l->prob), *lab = bdata(label);
    int classes = CLASSES;
    void *a[] = {&n, &classes, &prob, &lab, &loss_data};
    corpus_launch(k_softmax_loss_fwd, n, a, 0);
    float sum = 0;
    CKBLAS(cublasSasum(blas, n, loss_data, 1, &sum));
    return sum / (float)n;
}

static void loss_backward(loss *l, blob *bottom, blob *label, int n)
{
    float *diff = bdiff(bottom);
    CK(cudaMemcpy(diff, bdata(&l->prob), l->prob.count * 4, cudaMemcpyDefault));
    const float *lab = bdata(label);
    int classes = CLASSES;
    void *a[] = {&n, &classes, &lab, &diff};
    corpus_launch(k_softmax_loss_bwd, n, a, 0);
    float scale = 1.0f / (float)n;
    CKBLAS(cublasSscal(blas, (int)l->prob.count, &scale, diff, 1));
}

/* ---- nets ------------------------------------------------------------------------ */

typedef struct net {
    int n;
    blob slot_data[SLOTS], slot_label[SLOTS];
    blob data, label, c1, b1, p1, c2, ip_out;
    conv conv1, conv2;
    bnorm bn1;
    relu relu1, relu2;
    pool pool1;
    ip ip1;
    loss loss1;
    long next_batch;
} net;

static void set_counts(net *t, int n)
{
    t->n = n;
    for (int s = 0; s < SLOTS; s++) {
        t->slot_data[s].count = (size_t)n * IN_C * HW * HW;
        t->slot_label[s].count = (size_t)n;
    }
    t->data.count = (size_t)n * IN_C * HW * HW;
    t->label.count = (size_t)n;
    t->c1.count = t->b1.count = (size_t)n * C1 * HW * HW;
    t->p1.count = (size_t)n * C1 * (HW / 2) * (HW / 2);
    t->c2.count = (size_t)n * C2 * (HW / 2) * (HW / 2);
    t->ip_out.count = (size_t)n * CLASSES;
}

/* The prefetch thread's work, done in line: a host batch into a slot. */
static void prefetch(net *t, int slot)
{
    int n = t->n;
    float *img = malloc((size_t)n * IN_C * HW * HW * 4), lab[64];
    int labels[64];
    corpus_batch(t->next_batch++, n, IN_C * HW * HW, CLASSES, img, NULL, labels);
    for (int i = 0; i < n; i++)
        lab[i] = (float)labels[i];
    CK(cudaMemcpy(bdata(&t->slot_data[slot]), img, t->slot_data[slot].count * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(bdata(&t->slot_label[slot]), lab, (size_t)n * 4, cudaMemcpyHostToDevice));
    free(img);
}

static void net_setup(net *t, int n, const net *share)
{
    memset(t, 0, sizeof *t);
    set_counts(t, n);
    t->next_batch = share ? 1000 : 0;
    conv_setup(&t->conv1, n, IN_C, C1, share ? &share->conv1 : NULL);
    bn_setup(&t->bn1, n, C1, HW * HW, share ? &share->bn1 : NULL);
    relu_setup(&t->relu1, n, C1, HW);
    /* conv2 works on the pooled map */
    conv_setup(&t->conv2, n, C1, C2, share ? &share->conv2 : NULL);
    corpus_drop(t->conv2.x);
    corpus_drop(t->conv2.y);
    t->conv2.x = corpus_tensor(n, C1, HW / 2, HW / 2);
    t->conv2.y = corpus_tensor(n, C2, HW / 2, HW / 2);
    relu_setup(&t->relu2, n, C2, HW / 2);
    ip_setup(&t->ip1, n, C2 * (HW / 2) * (HW / 2), CLASSES, share ? &share->ip1 : NULL);
    loss_setup(&t->loss1, n);
    for (int s = 0; s < SLOTS; s++)
        prefetch(t, s);
}

static float net_forward(net *t, long iter)
{
    int n = t->n, slot = (int)(iter % SLOTS);
    CK(cudaMemcpy(bdata(&t->data), bdata(&t->slot_data[slot]), t->data.count * 4, cudaMemcpyDefault));
    CK(cudaMemcpy(bdata(&t->label), bdata(&t->slot_label[slot]), t->label.count * 4, cudaMemcpyDefault));
    prefetch(t, slot);
    conv_forward(&t->conv1, &t->data, &t->c1);
    bn_forward(&t->bn1, &t->c1, &t->b1, n != BATCH);
    relu_forward(&t->relu1, &t->b1);
    pool_forward(&t->pool1, &t->b1, &t->p1, n, C1);
    /* conv2's output shape: pooled */
    conv_forward(&t->conv2, &t->p1, &t->c2);
    relu_forward(&t->relu2, &t->c2);
    ip_forward(&t->ip1, &t->c2, &t->ip_out, n);
    return loss_forward(&t->loss1, &t->ip_out, &t->label, n);
}

static void net_backward(net *t)
{
    int n = t->n;
    loss_backward(&t->loss1, &t->ip_out, &t->label, n);
    ip_backward(&t->ip1, &t->c2, &t->ip_out, n);
    relu_backward(&t->relu2, &t->c2);
    conv_backward(&t->conv2, &t->p1, &t->c2, 1);
    pool_backward(&t->pool1, &t->b1, &t->p1, n, C1);
    relu_backward(&t->relu1, &t->b1);
    bn_backward(&t->bn1, &t->c1, &t->b1);
    conv_backward(&t->conv1, &t->data, &t->c1, 0);
}

int main(void)
{
    corpus_register_common();
    caffe_register();
    blas = corpus_blas();
    net train, test;
    net_setup(&train, BATCH, NULL);
    net_setup(&test, TEST_BATCH, &train);
    blob *params[] = {&train.conv1.w, &train.conv1.b, &train.conv2.w, &train.conv2.b, &train.ip1.w,
                      &train.ip1.b};
    enum { NP = sizeof params / sizeof params[0] };
    blob history[NP];
    for (int p = 0; p < NP; p++) {
        history[p].count = params[p]->count;
        history[p].data = history[p].diff = NULL;
        CK(cudaMemset(bdata(&history[p]), 0, history[p].count * 4));
    }
    printf("test before training: loss %.4f\n", net_forward(&test, 0));
    float first = 0, last = 0;
    for (long it = 0; it < ITERS; it++) {
        /* Solver::Step */
        for (int p = 0; p < NP; p++)
            CK(cudaMemset(bdiff(params[p]), 0, params[p]->count * 4)); /* ClearParamDiffs */
        last = net_forward(&train, it);
        net_backward(&train);
        /* SGDSolver::ApplyUpdate: weights decay, biases do not */
        for (int p = 0; p < NP; p++) {
            int count = (int)params[p]->count;
            if (p % 2 == 0) {
                float decay = 0.0005f;
                CKBLAS(cublasSaxpy(blas, count, &decay, bdata(params[p]), 1, bdiff(params[p]), 1));
            }
            float *g = bdiff(params[p]), *h = bdata(&history[p]), mom = 0.9f, rate = 0.05f;
            void *a[] = {&count, &g, &h, &mom, &rate};
            corpus_launch(k_sgd_update, count, a, 0);
        }
        /* Net::Update */
        for (int p = 0; p < NP; p++) {
            float m1 = -1;
            CKBLAS(cublasSaxpy(blas, (int)params[p]->count, &m1, bdiff(params[p]), 1, bdata(params[p]), 1));
        }
        if (it == 0)
            first = last;
        printf("iteration %ld loss %.4f\n", it + 1, last);
    }
    printf("test after training: loss %.4f\n", net_forward(&test, 1));
    CK(cudaDeviceSynchronize());
    printf("caffe_like: loss %.4f -> %.4f\n", first, last);
    corpus_release();
    return 0;
}
