/*
 * encdec.c — a small encoder-decoder (U-Net shaped) for per-pixel
 * classification, for libsn's model to be checked against
 * (tests/test_sn_corpus.sh, expectation in encdec.expect):
 *  - the encoder halves the resolution with a strided convolution; the
 *    decoder doubles it again with a transposed convolution, which is
 *    cudnnConvolutionBackwardData in the forward pass (and whose own
 *    backward pass is a cudnnConvolutionForward);
 *  - the skip connection is concatenated with the upsampled map along the
 *    channels by two cudaMemcpy2D into one buffer, and the gradient split
 *    again the same way;
 *  - the softmax's probabilities are read by the host, which computes the
 *    loss and sends the gradient of the logits back;
 *  - plain SGD with cuBLAS axpy; every buffer is allocated at setup.
 */
#include "tests/corpus/corpus.h"

enum { BATCH = 2, ITERS = 7, CLASSES = 3, IN_C = 3, HW = 8, C = 8 };

static cudnnHandle_t dnn;
static cublasHandle_t blas;
static const float one = 1.0f, zero = 0.0f;

typedef struct conv {
    float *w, *gw;
    int wcount;
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnConvolutionFwdAlgo_t fa;
    cudnnConvolutionBwdFilterAlgo_t ba;
    cudnnConvolutionBwdDataAlgo_t da;
    size_t ws;
} conv;

static float *workspace;
static size_t workspace_bytes;

/* A convolution from (cin, hin) to (cout, hout): k x k, pad, stride. */
static void conv_setup(conv *l, int cin, int hin, int cout, int hout, int k, int pad, int stride)
{
    l->wcount = cout * cin * k * k;
    l->w = corpus_dev((size_t)l->wcount * 4);
    l->gw = corpus_dev((size_t)l->wcount * 4);
    corpus_upload_random(l->w, (size_t)l->wcount, 0.3f);
    l->x = corpus_tensor(BATCH, cin, hin, hin);
    l->y = corpus_tensor(BATCH, cout, hout, hout);
    l->wd = corpus_filter(cout, cin, k, k);
    l->cd = corpus_conv(pad, stride);
    int got = 0;
    cudnnConvolutionFwdAlgoPerf_t fp;
    CKDNN(cudnnGetConvolutionForwardAlgorithm_v7(dnn, l->x, l->wd, l->cd, l->y, 1, &got, &fp));
    cudnnConvolutionBwdFilterAlgoPerf_t bp;
    CKDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(dnn, l->x, l->y, l->cd, l->wd, 1, &got, &bp));
    cudnnConvolutionBwdDataAlgoPerf_t dp;
    CKDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(dnn, l->wd, l->y, l->cd, l->x, 1, &got, &dp));
    l->fa = fp.algo, l->ba = bp.algo, l->da = dp.algo;
    size_t a = 0, b = 0, d = 0;
    CKDNN(cudnnGetConvolutionForwardWorkspaceSize(dnn, l->x, l->wd, l->cd, l->y, l->fa, &a));
    CKDNN(cudnnGetConvolutionBackwardFilterWorkspaceSize(dnn, l->x, l->y, l->cd, l->wd, l->ba, &b));
    CKDNN(cudnnGetConvolutionBackwardDataWorkspaceSize(dnn, l->wd, l->y, l->cd, l->x, l->da, &d));
    l->ws = a > b ? a : b;
    l->ws = l->ws > d ? l->ws : d;
    if (l->ws > workspace_bytes)
        workspace_bytes = l->ws;
}

static void fwd(conv *l, const float *x, float *y)
{
    CKDNN(cudnnConvolutionForward(dnn, &one, l->x, x, l->wd, l->w, l->cd, l->fa, workspace, l->ws, &zero, l->y, y));
}

static void bwd(conv *l, const float *x, const float *dy, float *dx, float dx_beta)
{
    CKDNN(cudnnConvolutionBackwardFilter(dnn, &one, l->x, x, l->y, dy, l->cd, l->ba, workspace, l->ws, &zero,
                                         l->wd, l->gw));
    if (dx)
        CKDNN(cudnnConvolutionBackwardData(dnn, &one, l->wd, l->w, l->y, dy, l->cd, l->da, workspace, l->ws,
                                           &dx_beta, l->x, dx));
}

static cudnnActivationDescriptor_t relu_desc;

static void relu(cudnnTensorDescriptor_t t, const float *x, float *y)
{
    CKDNN(cudnnActivationForward(dnn, relu_desc, &one, t, x, &zero, t, y));
}

static void relu_bwd(cudnnTensorDescriptor_t t, const float *y, const float *dy, const float *x, float *dx)
{
    CKDNN(cudnnActivationBackward(dnn, relu_desc, &one, t, y, t, dy, t, x, &zero, t, dx));
}

int main(void)
{
    dnn = corpus_dnn();
    blas = corpus_blas();
    relu_desc = corpus_relu();
    const int H2 = HW / 2;
    conv enc1, down, mid, up, dec, head;
    conv_setup(&enc1, IN_C, HW, C, HW, 3, 1, 1);
    conv_setup(&down, C, HW, C, H2, 3, 1, 2);
    conv_setup(&mid, C, H2, C, H2, 3, 1, 1);
    /* the transposed convolution is the adjoint of a strided one from the
     * upsampled map (C channels, HW) to the bottleneck (C channels, H2) */
    conv_setup(&up, C, HW, C, H2, 3, 1, 2);
    conv_setup(&dec, 2 * C, HW, C, HW, 3, 1, 1);
    conv_setup(&head, C, HW, CLASSES, HW, 1, 0, 1);
    workspace = workspace_bytes ? corpus_dev(workspace_bytes) : NULL;
    cudnnTensorDescriptor_t full = corpus_tensor(BATCH, C, HW, HW), half = corpus_tensor(BATCH, C, H2, H2),
                            out = corpus_tensor(BATCH, CLASSES, HW, HW);
    size_t full_n = (size_t)BATCH * C * HW * HW, half_n = (size_t)BATCH * C * H2 * H2,
           out_n = (size_t)BATCH * CLASSES * HW * HW, in_n = (size_t)BATCH * IN_C * HW * HW;
    float *x = corpus_dev(in_n * 4);
    float *a1 = corpus_dev(full_n * 4), *e1 = corpus_dev(full_n * 4);
    float *a2 = corpus_dev(half_n * 4), *e2 = corpus_dev(half_n * 4);
    float *a3 = corpus_dev(half_n * 4), *e3 = corpus_dev(half_n * 4);
    float *upm = corpus_dev(full_n * 4), *cat = corpus_dev(2 * full_n * 4);
    float *a4 = corpus_dev(full_n * 4), *d4 = corpus_dev(full_n * 4);
    float *logits = corpus_dev(out_n * 4), *prob = corpus_dev(out_n * 4), *dlogits = corpus_dev(out_n * 4);
    float *dd4 = corpus_dev(full_n * 4), *da4 = corpus_dev(full_n * 4), *dcat = corpus_dev(2 * full_n * 4);
    float *de1 = corpus_dev(full_n * 4), *dup = corpus_dev(full_n * 4), *de3 = corpus_dev(half_n * 4);
    float *da3 = corpus_dev(half_n * 4), *de2 = corpus_dev(half_n * 4), *da2 = corpus_dev(half_n * 4);
    float *da1 = corpus_dev(full_n * 4);
    /* one sample's channels are contiguous: a concatenation along the
     * channels is a 2D copy with one row per sample */
    size_t part = (size_t)C * HW * HW * 4;

    float *h_in = malloc(in_n * 4), *h_prob = malloc(out_n * 4), *h_grad = malloc(out_n * 4);
    int labels[BATCH * HW * HW];
    float first = 0, last = 0;
    for (int it = 0; it < ITERS; it++) {
        corpus_batch(it, BATCH, IN_C * HW * HW, CLASSES, h_in, NULL, NULL);
        for (int i = 0; i < BATCH * HW * HW; i++)
            labels[i] = h_in[(i / (HW * HW)) * IN_C * HW * HW + i % (HW * HW)] > 0 ? 1 + (i % 2) : 0;
        CK(cudaMemcpy(x, h_in, in_n * 4, cudaMemcpyHostToDevice));
        /* forward */
        fwd(&enc1, x, a1);
        relu(full, a1, e1);
        fwd(&down, e1, a2);
        relu(half, a2, e2);
        fwd(&mid, e2, a3);
        relu(half, a3, e3);
        CKDNN(cudnnConvolutionBackwardData(dnn, &one, up.wd, up.w, up.y, e3, up.cd, up.da, workspace, up.ws, &zero,
                                           up.x, upm));
        CK(cudaMemcpy2D(cat, 2 * part, e1, part, part, BATCH, cudaMemcpyDeviceToDevice));
        CK(cudaMemcpy2D((char *)cat + part, 2 * part, upm, part, part, BATCH, cudaMemcpyDeviceToDevice));
        fwd(&dec, cat, a4);
        relu(full, a4, d4);
        fwd(&head, d4, logits);
        CKDNN(cudnnSoftmaxForward(dnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &one, out, logits, &zero,
                                  out, prob));
        /* the loss on the host, its gradient back to the device */
        CK(cudaMemcpy(h_prob, prob, out_n * 4, cudaMemcpyDeviceToHost));
        double loss = 0;
        for (int b = 0; b < BATCH; b++)
            for (int p = 0; p < HW * HW; p++) {
                int t = labels[b * HW * HW + p];
                for (int k = 0; k < CLASSES; k++) {
                    size_t at = ((size_t)b * CLASSES + k) * HW * HW + p;
                    h_grad[at] = (h_prob[at] - (k == t)) / (BATCH * HW * HW);
                    if (k == t)
                        loss -= log(h_prob[at] > 1e-30f ? h_prob[at] : 1e-30f);
                }
            }
        loss /= BATCH * HW * HW;
        CK(cudaMemcpy(dlogits, h_grad, out_n * 4, cudaMemcpyHostToDevice));
        /* backward */
        bwd(&head, d4, dlogits, dd4, 0);
        relu_bwd(full, d4, dd4, a4, da4);
        bwd(&dec, cat, da4, dcat, 0);
        CK(cudaMemcpy2D(de1, part, dcat, 2 * part, part, BATCH, cudaMemcpyDeviceToDevice));
        CK(cudaMemcpy2D(dup, part, (char *)dcat + part, 2 * part, part, BATCH, cudaMemcpyDeviceToDevice));
        /* the transposed convolution's backward pass */
        CKDNN(cudnnConvolutionForward(dnn, &one, up.x, dup, up.wd, up.w, up.cd, up.fa, workspace, up.ws, &zero, up.y,
                                      de3));
        CKDNN(cudnnConvolutionBackwardFilter(dnn, &one, up.x, dup, up.y, e3, up.cd, up.ba, workspace, up.ws, &zero,
                                             up.wd, up.gw));
        relu_bwd(half, e3, de3, a3, da3);
        bwd(&mid, e2, da3, de2, 0);
        relu_bwd(half, e2, de2, a2, da2);
        bwd(&down, e1, da2, de1, 1); /* adds to the skip connection's gradient */
        relu_bwd(full, e1, de1, a1, da1);
        bwd(&enc1, x, da1, NULL, 0);
        /* update */
        conv *all[] = {&enc1, &down, &mid, &up, &dec, &head};
        float rate = -0.5f;
        for (int k = 0; k < 6; k++)
            CKBLAS(cublasSaxpy(blas, all[k]->wcount, &rate, all[k]->gw, 1, all[k]->w, 1));
        if (it == 0)
            first = (float)loss;
        last = (float)loss;
        printf("iteration %d loss %.4f\n", it + 1, loss);
    }
    CK(cudaDeviceSynchronize());
    printf("encdec: loss %.4f -> %.4f\n", first, last);
    free(h_in);
    free(h_prob);
    free(h_grad);
    corpus_release();
    return 0;
}
