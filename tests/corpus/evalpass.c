/*
 * evalpass.c — a small convolutional network that is evaluated every third
 * training iteration, for libsn's model to be checked against
 * (tests/test_sn_corpus.sh, expectation in evalpass.expect):
 *  - training: the batch copied to the device, convolution with bias,
 *    ReLU, max pooling, dropout (cuDNN), a fully connected layer (cuBLAS,
 *    bias through a ones vector), softmax; the host reads the
 *    probabilities, computes the loss and sends the gradient back;
 *    SGD with momentum through cuBLAS scal and axpy;
 *  - every third iteration, an evaluation pass: the same layers without
 *    dropout, at half the batch size, on buffers of its own, sharing the
 *    weights; the host reads the probabilities to count the right answers;
 *  - every buffer is allocated at setup.
 * The repeating unit is therefore three training iterations and one
 * evaluation pass.
 */
#include "tests/corpus/corpus.h"

enum { BATCH = 4, EVAL_BATCH = 2, TRAIN_ITERS = 12, EVAL_EVERY = 3, CLASSES = 4, IN_C = 3, HW = 8, C = 8 };

static cudnnHandle_t dnn;
static cublasHandle_t blas;
static const float one = 1.0f, zero = 0.0f;

/* weights, shared by both passes */
static float *w, *b, *fw, *fb, *gw, *gb, *gfw, *gfb, *hw, *hb, *hfw, *hfb;
static cudnnFilterDescriptor_t wd;
static cudnnConvolutionDescriptor_t cd;
static cudnnActivationDescriptor_t act;
static cudnnPoolingDescriptor_t pd;
static cudnnTensorDescriptor_t bias_d;

typedef struct pass {
    int n;
    cudnnTensorDescriptor_t xd, yd, pd_, fd;
    cudnnConvolutionFwdAlgo_t fa;
    cudnnConvolutionBwdFilterAlgo_t ba;
    size_t ws_bytes;
    float *ws, *x, *conv, *relu, *pool, *drop, *fc, *prob, *ones;
    /* training only */
    cudnnDropoutDescriptor_t dd;
    void *states, *reserve;
    size_t reserve_bytes;
    float *dprob, *dfc_in, *ddrop, *dpool, *drelu, *dconv;
    float *h_x, *h_prob;
} pass;

static void pass_setup(pass *p, int n, int training)
{
    memset(p, 0, sizeof *p);
    p->n = n;
    p->xd = corpus_tensor(n, IN_C, HW, HW);
    p->yd = corpus_tensor(n, C, HW, HW);
    p->pd_ = corpus_tensor(n, C, HW / 2, HW / 2);
    p->fd = corpus_tensor(n, CLASSES, 1, 1);
    int got = 0;
    cudnnConvolutionFwdAlgoPerf_t fp;
    CKDNN(cudnnGetConvolutionForwardAlgorithm_v7(dnn, p->xd, wd, cd, p->yd, 1, &got, &fp));
    p->fa = fp.algo;
    size_t a = 0, c = 0;
    CKDNN(cudnnGetConvolutionForwardWorkspaceSize(dnn, p->xd, wd, cd, p->yd, p->fa, &a));
    if (training) {
        cudnnConvolutionBwdFilterAlgoPerf_t bp;
        CKDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(dnn, p->xd, p->yd, cd, wd, 1, &got, &bp));
        p->ba = bp.algo;
        CKDNN(cudnnGetConvolutionBackwardFilterWorkspaceSize(dnn, p->xd, p->yd, cd, wd, p->ba, &c));
    }
    p->ws_bytes = a > c ? a : c;
    p->ws = p->ws_bytes ? corpus_dev(p->ws_bytes) : NULL;
    size_t in = (size_t)n * IN_C * HW * HW, full = (size_t)n * C * HW * HW, half = full / 4,
           out = (size_t)n * CLASSES;
    p->x = corpus_dev(in * 4);
    p->conv = corpus_dev(full * 4);
    p->relu = corpus_dev(full * 4);
    p->pool = corpus_dev(half * 4);
    p->fc = corpus_dev(out * 4);
    p->prob = corpus_dev(out * 4);
    p->ones = corpus_dev((size_t)n * 4);
    float ones[BATCH];
    for (int i = 0; i < BATCH; i++)
        ones[i] = 1;
    CK(cudaMemcpy(p->ones, ones, (size_t)n * 4, cudaMemcpyHostToDevice));
    p->h_x = malloc(in * 4);
    p->h_prob = malloc(out * 4);
    if (!training)
        return;
    p->drop = corpus_dev(half * 4);
    size_t states = 0;
    CKDNN(cudnnDropoutGetStatesSize(dnn, &states));
    CKDNN(cudnnDropoutGetReserveSpaceSize(p->pd_, &p->reserve_bytes));
    p->states = corpus_dev(states);
    p->reserve = corpus_dev(p->reserve_bytes);
    CKDNN(cudnnCreateDropoutDescriptor(&p->dd));
    corpus_own(CORPUS_DROPOUT, p->dd);
    CKDNN(cudnnSetDropoutDescriptor(p->dd, dnn, 0.25f, p->states, states, 7));
    p->dprob = corpus_dev(out * 4);
    p->dfc_in = corpus_dev(half * 4);
    p->ddrop = p->dfc_in;
    p->dpool = corpus_dev(half * 4);
    p->drelu = corpus_dev(full * 4);
    p->dconv = corpus_dev(full * 4);
}

/* Forward; returns the host copy of the probabilities. */
static float *forward(pass *p, long index, int *labels, int training)
{
    int n = p->n;
    corpus_batch(index, n, IN_C * HW * HW, CLASSES, p->h_x, NULL, labels);
    CK(cudaMemcpy(p->x, p->h_x, (size_t)n * IN_C * HW * HW * 4, cudaMemcpyHostToDevice));
    CKDNN(cudnnConvolutionForward(dnn, &one, p->xd, p->x, wd, w, cd, p->fa, p->ws, p->ws_bytes, &zero, p->yd,
                                  p->conv));
    CKDNN(cudnnAddTensor(dnn, &one, bias_d, b, &one, p->yd, p->conv));
    CKDNN(cudnnActivationForward(dnn, act, &one, p->yd, p->conv, &zero, p->yd, p->relu));
    CKDNN(cudnnPoolingForward(dnn, pd, &one, p->yd, p->relu, &zero, p->pd_, p->pool));
    const float *fc_in = p->pool;
    if (training) {
        CKDNN(cudnnDropoutForward(dnn, p->dd, p->pd_, p->pool, p->pd_, p->drop, p->reserve, p->reserve_bytes));
        fc_in = p->drop;
    }
    int K = C * (HW / 2) * (HW / 2);
    CKBLAS(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, CLASSES, n, K, &one, fw, K, fc_in, K, &zero, p->fc, CLASSES));
    CKBLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, CLASSES, n, 1, &one, fb, CLASSES, p->ones, 1, &one, p->fc,
                       CLASSES));
    CKDNN(cudnnSoftmaxForward(dnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &one, p->fd, p->fc, &zero,
                              p->fd, p->prob));
    CK(cudaMemcpy(p->h_prob, p->prob, (size_t)n * CLASSES * 4, cudaMemcpyDeviceToHost));
    return p->h_prob;
}

static void backward(pass *p, const int *labels)
{
    int n = p->n, K = C * (HW / 2) * (HW / 2);
    float grad[BATCH * CLASSES];
    for (int i = 0; i < n * CLASSES; i++)
        grad[i] = (p->h_prob[i] - (labels[i / CLASSES] == i % CLASSES)) / (float)n;
    CK(cudaMemcpy(p->dprob, grad, (size_t)n * CLASSES * 4, cudaMemcpyHostToDevice));
    CKBLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, K, CLASSES, n, &one, p->drop, K, p->dprob, CLASSES, &zero,
                       gfw, K));
    CKBLAS(cublasSgemv(blas, CUBLAS_OP_N, CLASSES, n, &one, p->dprob, CLASSES, p->ones, 1, &zero, gfb, 1));
    CKBLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, K, n, CLASSES, &one, fw, K, p->dprob, CLASSES, &zero,
                       p->dfc_in, K));
    CKDNN(cudnnDropoutBackward(dnn, p->dd, p->pd_, p->dfc_in, p->pd_, p->dpool, p->reserve, p->reserve_bytes));
    CKDNN(cudnnPoolingBackward(dnn, pd, &one, p->pd_, p->pool, p->pd_, p->dpool, p->yd, p->relu, &zero, p->yd,
                               p->drelu));
    CKDNN(cudnnActivationBackward(dnn, act, &one, p->yd, p->relu, p->yd, p->drelu, p->yd, p->conv, &zero, p->yd,
                                  p->dconv));
    CKDNN(cudnnConvolutionBackwardBias(dnn, &one, p->yd, p->dconv, &zero, bias_d, gb));
    CKDNN(cudnnConvolutionBackwardFilter(dnn, &one, p->xd, p->x, p->yd, p->dconv, cd, p->ba, p->ws, p->ws_bytes,
                                         &zero, wd, gw));
}

static void update(void)
{
    float *ws_[] = {w, b, fw, fb}, *gs[] = {gw, gb, gfw, gfb}, *hs[] = {hw, hb, hfw, hfb};
    int counts[] = {C * IN_C * 9, C, CLASSES * C * (HW / 2) * (HW / 2), CLASSES};
    float mom = 0.9f, rate = 0.1f, minus = -1;
    for (int k = 0; k < 4; k++) {
        CKBLAS(cublasSscal(blas, counts[k], &mom, hs[k], 1));
        CKBLAS(cublasSaxpy(blas, counts[k], &rate, gs[k], 1, hs[k], 1));
        CKBLAS(cublasSaxpy(blas, counts[k], &minus, hs[k], 1, ws_[k], 1));
    }
}

int main(void)
{
    dnn = corpus_dnn();
    blas = corpus_blas();
    wd = corpus_filter(C, IN_C, 3, 3);
    cd = corpus_conv(1, 1);
    bias_d = corpus_tensor(1, C, 1, 1);
    act = corpus_relu();
    CKDNN(cudnnCreatePoolingDescriptor(&pd));
    corpus_own(CORPUS_POOL, pd);
    CKDNN(cudnnSetPooling2dDescriptor(pd, CUDNN_POOLING_MAX, CUDNN_PROPAGATE_NAN, 2, 2, 0, 0, 2, 2));
    int counts[] = {C * IN_C * 9, C, CLASSES * C * (HW / 2) * (HW / 2), CLASSES};
    float **vals[] = {&w, &b, &fw, &fb}, **grads[] = {&gw, &gb, &gfw, &gfb}, **hist[] = {&hw, &hb, &hfw, &hfb};
    for (int k = 0; k < 4; k++) {
        *vals[k] = corpus_dev((size_t)counts[k] * 4);
        corpus_upload_random(*vals[k], (size_t)counts[k], k % 2 ? 0.0f : 0.3f);
        *grads[k] = corpus_dev((size_t)counts[k] * 4);
        *hist[k] = corpus_dev((size_t)counts[k] * 4);
        CK(cudaMemset(*hist[k], 0, (size_t)counts[k] * 4));
    }
    pass train, eval;
    pass_setup(&train, BATCH, 1);
    pass_setup(&eval, EVAL_BATCH, 0);
    int labels[BATCH];
    float first = 0, last = 0;
    for (int it = 0; it < TRAIN_ITERS; it++) {
        float *prob = forward(&train, it, labels, 1);
        float loss = 0;
        for (int i = 0; i < BATCH; i++)
            loss -= logf(prob[i * CLASSES + labels[i]] > 1e-30f ? prob[i * CLASSES + labels[i]] : 1e-30f);
        loss /= BATCH;
        backward(&train, labels);
        update();
        if (it == 0)
            first = loss;
        last = loss;
        printf("iteration %d loss %.4f\n", it + 1, loss);
        if ((it + 1) % EVAL_EVERY == 0) {
            prob = forward(&eval, 1000 + it, labels, 0);
            int right = 0;
            for (int i = 0; i < EVAL_BATCH; i++) {
                int best = 0;
                for (int k = 1; k < CLASSES; k++)
                    best = prob[i * CLASSES + k] > prob[i * CLASSES + best] ? k : best;
                right += best == labels[i];
            }
            printf("evaluation after %d: %d of %d right\n", it + 1, right, EVAL_BATCH);
        }
    }
    CK(cudaDeviceSynchronize());
    printf("evalpass: loss %.4f -> %.4f\n", first, last);
    free(train.h_x);
    free(train.h_prob);
    free(eval.h_x);
    free(eval.h_prob);
    corpus_release();
    return 0;
}
