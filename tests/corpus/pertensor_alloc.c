/*
 * pertensor_alloc.c — a 14-layer chain trained the way an eager framework
 * (PyTorch without its caching allocator) runs it, for libsn's model to be
 * checked against (tests/test_sn_corpus.sh, expectation in
 * pertensor_alloc.expect):
 *  - every tensor is allocated when an operation creates it and freed when
 *    its last user is done, each iteration, through one helper deep in the
 *    framework: all device memory comes from one call site, and only the
 *    order of allocations tells tensors apart;
 *  - autograd's habits: activations saved for the backward pass are freed
 *    as the backward pass consumes them, gradients are created in the
 *    backward pass and dropped after the optimizer step (zero_grad to
 *    None), momentum buffers are created at the first step;
 *  - four blocks of convolution (cuDNN), batch norm (cuDNN) and ReLU (a
 *    kernel), global average pooling and a linear layer (cuBLAS, with a
 *    bias kernel), log-softmax and NLL loss as kernels, the loss read by
 *    the host (loss.item()) after the optimizer step;
 *  - training and evaluation iterations alternate: evaluation runs the
 *    forward pass alone (batch norm in inference mode, no gradients) at
 *    half the batch size.
 */
#include "tests/corpus/corpus.h"

enum { BATCH = 4, EVAL_BATCH = 2, ROUNDS = 7, CLASSES = 4, IN_C = 3, HW = 8, CH = 8, BLOCKS = 4 };

/* ---- the framework's allocator: one path, whatever the caller -------------------- */

__attribute__((noinline)) static void *raw_alloc(size_t bytes)
{
    void *p = NULL;
    CK(cudaMalloc(&p, bytes));
    __asm__ volatile("" ::: "memory");
    return p;
}
__attribute__((noinline)) static void *device_alloc(size_t bytes)
{
    void *p = raw_alloc(bytes);
    __asm__ volatile("" ::: "memory");
    return p;
}
__attribute__((noinline)) static void *caching_alloc(size_t bytes)
{
    void *p = device_alloc(bytes);
    __asm__ volatile("" ::: "memory");
    return p;
}
__attribute__((noinline)) static void *storage_new(size_t bytes)
{
    void *p = caching_alloc(bytes);
    __asm__ volatile("" ::: "memory");
    return p;
}
__attribute__((noinline)) static void *empty_tensor(size_t bytes)
{
    void *p = storage_new(bytes);
    __asm__ volatile("" ::: "memory");
    return p;
}
/* Every tensor of the program is created here. */
__attribute__((noinline)) static float *tensor_new(size_t count)
{
    float *p = empty_tensor(count * 4);
    __asm__ volatile("" ::: "memory");
    return p;
}
static void tensor_free(void *p)
{
    CK(cudaFree(p));
}

/* ---- kernels of its own ------------------------------------------------------------ */

/* log_softmax(batch, classes, x, y) */
static void k_log_softmax(void **args, dim3 g, dim3 bl)
{
    (void)g, (void)bl;
    int batch = CORPUS_ARG(int, 0), classes = CORPUS_ARG(int, 1);
    const float *x = CORPUS_ARG(const float *, 2);
    float *y = CORPUS_ARG(float *, 3);
    for (int b = 0; b < batch; b++) {
        const float *xi = x + b * classes;
        float mx = xi[0], s = 0;
        for (int k = 1; k < classes; k++)
            mx = xi[k] > mx ? xi[k] : mx;
        for (int k = 0; k < classes; k++)
            s += expf(xi[k] - mx);
        for (int k = 0; k < classes; k++)
            y[b * classes + k] = xi[k] - mx - logf(s);
    }
}

/* log_softmax_backward(batch, classes, y, gy, gx): gx = gy - exp(y) sum(gy) */
static void k_log_softmax_bwd(void **args, dim3 g, dim3 bl)
{
    (void)g, (void)bl;
    int batch = CORPUS_ARG(int, 0), classes = CORPUS_ARG(int, 1);
    const float *y = CORPUS_ARG(const float *, 2), *gy = CORPUS_ARG(const float *, 3);
    float *gx = CORPUS_ARG(float *, 4);
    for (int b = 0; b < batch; b++) {
        float s = 0;
        for (int k = 0; k < classes; k++)
            s += gy[b * classes + k];
        for (int k = 0; k < classes; k++)
            gx[b * classes + k] = gy[b * classes + k] - expf(y[b * classes + k]) * s;
    }
}

/* nll(batch, classes, lsm, target, loss): mean of -lsm[target] */
static void k_nll(void **args, dim3 g, dim3 bl)
{
    (void)g, (void)bl;
    int batch = CORPUS_ARG(int, 0), classes = CORPUS_ARG(int, 1);
    const float *lsm = CORPUS_ARG(const float *, 2), *t = CORPUS_ARG(const float *, 3);
    float *loss = CORPUS_ARG(float *, 4);
    float s = 0;
    for (int b = 0; b < batch; b++)
        s -= lsm[b * classes + (int)t[b]];
    loss[0] = s / (float)batch;
}

/* nll_backward(batch, classes, gloss, target, glsm) */
static void k_nll_bwd(void **args, dim3 g, dim3 bl)
{
    (void)g, (void)bl;
    int batch = CORPUS_ARG(int, 0), classes = CORPUS_ARG(int, 1);
    const float *gl = CORPUS_ARG(const float *, 2), *t = CORPUS_ARG(const float *, 3);
    float *out = CORPUS_ARG(float *, 4);
    for (int i = 0; i < batch * classes; i++)
        out[i] = 0;
    for (int b = 0; b < batch; b++)
        out[b * classes + (int)t[b]] = -gl[0] / (float)batch;
}

/* bias_rows(batch, n, bias, y): y[b,:] = bias (addmm's broadcast of the bias) */
static void k_bias_rows(void **args, dim3 g, dim3 bl)
{
    (void)g, (void)bl;
    int batch = CORPUS_ARG(int, 0), n = CORPUS_ARG(int, 1);
    const float *bias = CORPUS_ARG(const float *, 2);
    float *y = CORPUS_ARG(float *, 3);
    for (int b = 0; b < batch; b++)
        for (int k = 0; k < n; k++)
            y[b * n + k] = bias[k];
}

/* sum_rows(batch, n, x, y): y = sum over the batch (the bias gradient) */
static void k_sum_rows(void **args, dim3 g, dim3 bl)
{
    (void)g, (void)bl;
    int batch = CORPUS_ARG(int, 0), n = CORPUS_ARG(int, 1);
    const float *x = CORPUS_ARG(const float *, 2);
    float *y = CORPUS_ARG(float *, 3);
    for (int k = 0; k < n; k++) {
        y[k] = 0;
        for (int b = 0; b < batch; b++)
            y[k] += x[b * n + k];
    }
}

/* sgd(n, w, g, m, lr, momentum): m = momentum m + g; w -= lr m */
static void k_sgd(void **args, dim3 gr, dim3 bl)
{
    (void)gr, (void)bl;
    int n = CORPUS_ARG(int, 0);
    float *w = CORPUS_ARG(float *, 1), *g = CORPUS_ARG(float *, 2), *m = CORPUS_ARG(float *, 3);
    float lr = CORPUS_ARG(float, 4), mom = CORPUS_ARG(float, 5);
    for (int i = 0; i < n; i++) {
        m[i] = mom * m[i] + g[i];
        w[i] -= lr * m[i];
    }
}

static void launch2(simgpu_host_kernel_fn fn, int a, int b, const void *p, const void *q, const void *r)
{
    void *args[] = {&a, &b, &p, &q, &r};
    corpus_launch(fn, a * b, args, 0);
}

/* ---- the model --------------------------------------------------------------------- */

static cudnnHandle_t dnn;
static cublasHandle_t blas;
static const float one = 1.0f, zero = 0.0f;

typedef struct block {
    int c;
    float *w, *gamma, *beta, *rmean, *rvar;      /* parameters and buffers */
    float *gw, *ggamma, *gbeta;                  /* .grad, None between steps */
    float *mw, *mgamma, *mbeta;                  /* momentum buffers */
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    /* saved for backward */
    float *in, *conv, *save_mean, *save_istd, *out;
} block;

static block blocks[BLOCKS];
static float *fc_w, *fc_b, *fc_gw, *fc_gb, *fc_mw, *fc_mb;

static float *param(size_t count, float scale, int zero_init)
{
    float *p = tensor_new(count);
    if (zero_init)
        CK(cudaMemset(p, 0, count * 4));
    else
        corpus_upload_random(p, count, scale);
    return p;
}

static void model_setup(void)
{
    for (int b = 0; b < BLOCKS; b++) {
        block *k = &blocks[b];
        k->c = b ? CH : IN_C;
        k->w = param((size_t)CH * k->c * 9, 0.3f, 0);
        k->gamma = param(CH, 0, 0);
        float ones[CH];
        for (int i = 0; i < CH; i++)
            ones[i] = 1;
        CK(cudaMemcpy(k->gamma, ones, sizeof ones, cudaMemcpyHostToDevice));
        k->beta = param(CH, 0, 1);
        k->rmean = param(CH, 0, 1);
        k->rvar = param(CH, 0, 0);
        CK(cudaMemcpy(k->rvar, ones, sizeof ones, cudaMemcpyHostToDevice));
        k->wd = corpus_filter(CH, k->c, 3, 3);
        k->cd = corpus_conv(1, 1);
    }
    fc_w = param((size_t)CLASSES * CH, 0.3f, 0);
    fc_b = param(CLASSES, 0, 1);
}

static float *conv_forward(block *k, const float *x, int n)
{
    cudnnTensorDescriptor_t xd = corpus_tensor(n, k->c, HW, HW), yd = corpus_tensor(n, CH, HW, HW);
    cudnnConvolutionFwdAlgoPerf_t fp;
    int got = 0;
    CKDNN(cudnnGetConvolutionForwardAlgorithm_v7(dnn, xd, k->wd, k->cd, yd, 1, &got, &fp));
    size_t wsb = 0;
    CKDNN(cudnnGetConvolutionForwardWorkspaceSize(dnn, xd, k->wd, k->cd, yd, fp.algo, &wsb));
    float *ws = wsb ? tensor_new((wsb + 3) / 4) : NULL;
    float *y = tensor_new((size_t)n * CH * HW * HW);
    CKDNN(cudnnConvolutionForward(dnn, &one, xd, x, k->wd, k->w, k->cd, fp.algo, ws, wsb, &zero, yd, y));
    if (ws)
        tensor_free(ws);
    corpus_drop(xd);
    corpus_drop(yd);
    return y;
}

/* One forward pass; training keeps what the backward pass needs. Returns
 * the loss tensor (one float). */
static float *forward(float *x, const float *target, int n, int training, float **lsm_out, float **pooled_out)
{
    cudnnTensorDescriptor_t td = corpus_tensor(n, CH, HW, HW), bnd = corpus_tensor(1, CH, 1, 1);
    float *h = x;
    for (int b = 0; b < BLOCKS; b++) {
        block *k = &blocks[b];
        float *c = conv_forward(k, h, n);
        float *bn = tensor_new((size_t)n * CH * HW * HW);
        if (training) {
            k->save_mean = tensor_new(CH);
            k->save_istd = tensor_new(CH);
            CKDNN(cudnnBatchNormalizationForwardTraining(dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, td, c, td, bn,
                                                         bnd, k->gamma, k->beta, 0.1, k->rmean, k->rvar, 1e-5,
                                                         k->save_mean, k->save_istd));
        } else {
            CKDNN(cudnnBatchNormalizationForwardInference(dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, td, c, td, bn,
                                                          bnd, k->gamma, k->beta, k->rmean, k->rvar, 1e-5));
        }
        float *r = tensor_new((size_t)n * CH * HW * HW);
        kl_relu(n * CH * HW * HW, bn, r);
        tensor_free(bn);
        if (training) {
            k->in = h;
            k->conv = c;
            k->out = r;
        } else {
            tensor_free(c);
            if (h != x)
                tensor_free(h);
        }
        h = r;
    }
    float *pooled = tensor_new((size_t)n * CH);
    kl_avgpool(n * CH, HW * HW, h, pooled);
    if (!training)
        tensor_free(h);
    float *logits = tensor_new((size_t)n * CLASSES);
    launch2(k_bias_rows, n, CLASSES, fc_b, logits, NULL);
    CKBLAS(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, CLASSES, n, CH, &one, fc_w, CH, pooled, CH, &one, logits,
                       CLASSES));
    float *lsm = tensor_new((size_t)n * CLASSES);
    launch2(k_log_softmax, n, CLASSES, logits, lsm, NULL);
    tensor_free(logits);
    float *loss = tensor_new(1);
    {
        int bb = n, cc = CLASSES;
        void *a[] = {&bb, &cc, &lsm, &target, &loss};
        corpus_launch(k_nll, n, a, 0);
    }
    if (training) {
        *lsm_out = lsm;
        *pooled_out = pooled;
    } else {
        tensor_free(lsm);
        tensor_free(pooled);
    }
    corpus_drop(td);
    corpus_drop(bnd);
    return loss;
}

static void backward(float *x, const float *target, float *lsm, float *pooled, int n)
{
    cudnnTensorDescriptor_t td = corpus_tensor(n, CH, HW, HW), bnd = corpus_tensor(1, CH, 1, 1);
    float *gloss = tensor_new(1);
    kl_fill(1, 1.0f, gloss);
    float *glsm = tensor_new((size_t)n * CLASSES);
    {
        int bb = n, cc = CLASSES;
        void *a[] = {&bb, &cc, &gloss, &target, &glsm};
        corpus_launch(k_nll_bwd, n, a, 0);
    }
    tensor_free(gloss);
    float *glogits = tensor_new((size_t)n * CLASSES);
    {
        int bb = n, cc = CLASSES;
        void *a[] = {&bb, &cc, &lsm, &glsm, &glogits};
        corpus_launch(k_log_softmax_bwd, n, a, 0);
    }
    tensor_free(glsm);
    tensor_free(lsm);
    fc_gw = tensor_new((size_t)CLASSES * CH);
    CKBLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, CH, CLASSES, n, &one, pooled, CH, glogits, CLASSES, &zero,
                       fc_gw, CH));
    fc_gb = tensor_new(CLASSES);
    launch2(k_sum_rows, n, CLASSES, glogits, fc_gb, NULL);
    float *gpooled = tensor_new((size_t)n * CH);
    CKBLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, CH, n, CLASSES, &one, fc_w, CH, glogits, CLASSES, &zero,
                       gpooled, CH));
    tensor_free(glogits);
    tensor_free(pooled);
    float *gh = tensor_new((size_t)n * CH * HW * HW);
    kl_fill(n * CH * HW * HW, 0, gh);
    kl_avgpool_grad(n * CH, HW * HW, gpooled, gh);
    tensor_free(gpooled);
    for (int b = BLOCKS - 1; b >= 0; b--) {
        block *k = &blocks[b];
        float *gbn = tensor_new((size_t)n * CH * HW * HW);
        kl_relu_grad(n * CH * HW * HW, k->out, gh, gbn);
        tensor_free(gh);
        tensor_free(k->out);
        float *gc = tensor_new((size_t)n * CH * HW * HW);
        k->ggamma = tensor_new(CH);
        k->gbeta = tensor_new(CH);
        CKDNN(cudnnBatchNormalizationBackward(dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, td, k->conv,
                                              td, gbn, td, gc, bnd, k->gamma, k->ggamma, k->gbeta, 1e-5,
                                              k->save_mean, k->save_istd));
        tensor_free(gbn);
        tensor_free(k->conv);
        tensor_free(k->save_mean);
        tensor_free(k->save_istd);
        cudnnTensorDescriptor_t xd = corpus_tensor(n, k->c, HW, HW);
        int got = 0;
        cudnnConvolutionBwdFilterAlgoPerf_t bp;
        CKDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(dnn, xd, td, k->cd, k->wd, 1, &got, &bp));
        size_t wsb = 0;
        CKDNN(cudnnGetConvolutionBackwardFilterWorkspaceSize(dnn, xd, td, k->cd, k->wd, bp.algo, &wsb));
        float *ws = wsb ? tensor_new((wsb + 3) / 4) : NULL;
        k->gw = tensor_new((size_t)CH * k->c * 9);
        CKDNN(cudnnConvolutionBackwardFilter(dnn, &one, xd, k->in, td, gc, k->cd, bp.algo, ws, wsb, &zero, k->wd,
                                             k->gw));
        if (ws)
            tensor_free(ws);
        gh = NULL;
        if (b > 0) {
            cudnnConvolutionBwdDataAlgoPerf_t dp;
            CKDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(dnn, k->wd, td, k->cd, xd, 1, &got, &dp));
            CKDNN(cudnnGetConvolutionBackwardDataWorkspaceSize(dnn, k->wd, td, k->cd, xd, dp.algo, &wsb));
            ws = wsb ? tensor_new((wsb + 3) / 4) : NULL;
            gh = tensor_new((size_t)n * CH * HW * HW);
            CKDNN(cudnnConvolutionBackwardData(dnn, &one, k->wd, k->w, td, gc, k->cd, dp.algo, ws, wsb, &zero, xd,
                                               gh));
            if (ws)
                tensor_free(ws);
        }
        tensor_free(gc);
        corpus_drop(xd);
    }
    tensor_free(x);
    corpus_drop(td);
    corpus_drop(bnd);
}

static void sgd(float *w, float **g, float **m, int n)
{
    if (!*m) {
        *m = tensor_new((size_t)n);
        CK(cudaMemset(*m, 0, (size_t)n * 4));
    }
    float lr = 0.05f, mom = 0.9f;
    void *a[] = {&n, &w, g, m, &lr, &mom};
    corpus_launch(k_sgd, n, a, 0);
    tensor_free(*g); /* zero_grad(set_to_none=True) */
    *g = NULL;
}

static float *upload_batch(long index, int n, float **target)
{
    float img[BATCH * IN_C * HW * HW], t[BATCH];
    int labels[BATCH];
    corpus_batch(index, n, IN_C * HW * HW, CLASSES, img, NULL, labels);
    for (int i = 0; i < n; i++)
        t[i] = (float)labels[i];
    float *x = tensor_new((size_t)n * IN_C * HW * HW);
    CK(cudaMemcpy(x, img, (size_t)n * IN_C * HW * HW * 4, cudaMemcpyHostToDevice));
    *target = tensor_new((size_t)n);
    CK(cudaMemcpy(*target, t, (size_t)n * 4, cudaMemcpyHostToDevice));
    return x;
}

int main(void)
{
    corpus_register_common();
    static const size_t two_int_three_ptr[] = {P_INT, P_INT, P_PTR, P_PTR, P_PTR};
    static const size_t sgd_p[] = {P_INT, P_PTR, P_PTR, P_PTR, P_FLT, P_FLT};
    corpus_register(k_log_softmax, "log_softmax", 4, two_int_three_ptr);
    corpus_register(k_log_softmax_bwd, "log_softmax_backward", 5, two_int_three_ptr);
    corpus_register(k_nll, "nll_loss", 5, two_int_three_ptr);
    corpus_register(k_nll_bwd, "nll_loss_backward", 5, two_int_three_ptr);
    corpus_register(k_bias_rows, "bias_rows", 4, two_int_three_ptr);
    corpus_register(k_sum_rows, "sum_rows", 4, two_int_three_ptr);
    corpus_register(k_sgd, "sgd_momentum", 6, sgd_p);
    dnn = corpus_dnn();
    blas = corpus_blas();
    model_setup();
    float first = 0, last = 0, host_loss = 0;
    for (long r = 0; r < ROUNDS; r++) {
        /* a training iteration */
        float *target, *lsm, *pooled;
        float *x = upload_batch(r, BATCH, &target);
        float *loss = forward(x, target, BATCH, 1, &lsm, &pooled);
        backward(x, target, lsm, pooled, BATCH);
        tensor_free(target);
        for (int b = 0; b < BLOCKS; b++) {
            block *k = &blocks[b];
            sgd(k->w, &k->gw, &k->mw, CH * k->c * 9);
            sgd(k->gamma, &k->ggamma, &k->mgamma, CH);
            sgd(k->beta, &k->gbeta, &k->mbeta, CH);
        }
        sgd(fc_w, &fc_gw, &fc_mw, CLASSES * CH);
        sgd(fc_b, &fc_gb, &fc_mb, CLASSES);
        CK(cudaMemcpy(&host_loss, loss, 4, cudaMemcpyDeviceToHost)); /* loss.item() */
        tensor_free(loss);
        if (r == 0)
            first = host_loss;
        last = host_loss;
        /* an evaluation iteration, under no_grad, at another batch size */
        x = upload_batch(1000 + r, EVAL_BATCH, &target);
        loss = forward(x, target, EVAL_BATCH, 0, NULL, NULL);
        tensor_free(x);
        tensor_free(target);
        float eval_loss = 0;
        CK(cudaMemcpy(&eval_loss, loss, 4, cudaMemcpyDeviceToHost));
        tensor_free(loss);
        printf("round %ld train loss %.4f eval loss %.4f\n", r + 1, host_loss, eval_loss);
    }
    CK(cudaDeviceSynchronize());
    printf("pertensor_alloc: loss %.4f -> %.4f\n", first, last);
    for (int b = 0; b < BLOCKS; b++) {
        block *k = &blocks[b];
        float *held[] = {k->w, k->gamma, k->beta, k->rmean, k->rvar, k->mw, k->mgamma, k->mbeta};
        for (size_t i = 0; i < sizeof held / sizeof held[0]; i++)
            tensor_free(held[i]);
    }
    tensor_free(fc_w);
    tensor_free(fc_b);
    tensor_free(fc_mw);
    tensor_free(fc_mb);
    corpus_release();
    return 0;
}
