/*
 * twostream.c — a small convolutional network trained on two streams, the
 * way frameworks overlap data loading and independent branches with the
 * compute stream, for libsn's model to be checked against
 * (tests/test_sn_corpus.sh, expectation in twostream.expect):
 *  - compute runs on the legacy default stream; a second, non-blocking
 *    stream with a cuDNN handle of its own does the rest;
 *  - data loading: once an iteration's update is issued, the next batch is
 *    written into one of two pinned host buffers and copied
 *    (cudaMemcpyAsync) on the second stream into one of two input buffers,
 *    overlapping the update; an event recorded after the copy is waited
 *    for before the first convolution, and an event recorded after the
 *    last use of an input buffer (the first convolution's filter gradient)
 *    is waited for before a copy overwrites it; the host reuses a pinned
 *    buffer only after its copy's event has completed. (Issued earlier, a
 *    whole pass ahead, the copy would no longer mark where the pass
 *    begins, and libsn's pass detection finds no iteration: a gap of the
 *    model, not of this program.)
 *  - the network forks after conv1 + bias + ReLU into a 3x3 convolution on
 *    the compute stream and a 1x1 convolution on the second stream (ordered
 *    by events both ways), joins them with cudnnAddTensor, then ReLU, max
 *    pooling, a fully connected layer (cuBLAS, bias through a ones vector)
 *    and softmax; the host reads the probabilities, computes the loss and
 *    sends the gradient back;
 *  - backward: the 1x1 branch's filter and data gradients run on the second
 *    stream again, the two data gradients are added on the compute stream;
 *  - SGD with momentum through cuBLAS scal and axpy on the compute stream.
 * Prints the loss per iteration and a checksum of the learned weights.
 */
#include "tests/corpus/corpus.h"

enum { BATCH = 4, ITERS = 10, CLASSES = 4, IN_C = 3, HW = 8, C = 8, NPARAM = 7 };

static cudnnHandle_t dnn, dnn_side;
static cublasHandle_t blas;
static cudaStream_t side;
static const float one = 1.0f, zero = 0.0f;

/* parameters, their gradients and momentum: conv1 w, b; branch a w, b;
 * branch b w; fc w, b */
static float *par[NPARAM], *grad[NPARAM], *hist[NPARAM];
static const int counts[NPARAM] = {C * IN_C * 9, C, C * C * 9, C, C * C, CLASSES * C * (HW / 2) * (HW / 2),
                                   CLASSES};

/* the data loader's double buffers and their events */
static float *x[2], *pinned[2];
static cudaEvent_t loaded[2], x_free[2];
static int labels[2][BATCH];

static const size_t in = (size_t)BATCH * IN_C * HW * HW;

/* Batch index into slot, on the second stream: the pinned buffer once its
 * last copy is done, the device buffer once its last reader is. */
static void load(long index, int slot)
{
    CK(cudaEventSynchronize(loaded[slot]));
    corpus_batch(index, BATCH, IN_C * HW * HW, CLASSES, pinned[slot], NULL, labels[slot]);
    CK(cudaStreamWaitEvent(side, x_free[slot], 0));
    CK(cudaMemcpyAsync(x[slot], pinned[slot], in * 4, cudaMemcpyHostToDevice, side));
    CK(cudaEventRecord(loaded[slot], side));
}

static cudaEvent_t ts_event(void)
{
    cudaEvent_t e;
    CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return e;
}

int main(void)
{
    dnn = corpus_dnn();
    dnn_side = corpus_dnn();
    blas = corpus_blas();
    CK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    CKDNN(cudnnSetStream(dnn_side, side));

    cudnnTensorDescriptor_t xd = corpus_tensor(BATCH, IN_C, HW, HW), yd = corpus_tensor(BATCH, C, HW, HW),
                            pd_ = corpus_tensor(BATCH, C, HW / 2, HW / 2), fd = corpus_tensor(BATCH, CLASSES, 1, 1),
                            bias_d = corpus_tensor(1, C, 1, 1);
    cudnnFilterDescriptor_t w1d = corpus_filter(C, IN_C, 3, 3), wad = corpus_filter(C, C, 3, 3),
                            wbd = corpus_filter(C, C, 1, 1);
    cudnnConvolutionDescriptor_t pad1 = corpus_conv(1, 1), pad0 = corpus_conv(0, 1);
    cudnnActivationDescriptor_t act = corpus_relu();
    cudnnPoolingDescriptor_t pool;
    CKDNN(cudnnCreatePoolingDescriptor(&pool));
    corpus_own(CORPUS_POOL, pool);
    CKDNN(cudnnSetPooling2dDescriptor(pool, CUDNN_POOLING_MAX, CUDNN_PROPAGATE_NAN, 2, 2, 0, 0, 2, 2));

    /* IMPLICIT_GEMM takes no workspace for any of the three directions */
    const cudnnConvolutionFwdAlgo_t fa = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    const cudnnConvolutionBwdFilterAlgo_t bfa = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
    const cudnnConvolutionBwdDataAlgo_t bda = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
    size_t ws_bytes = 0, s = 0;
    CKDNN(cudnnGetConvolutionForwardWorkspaceSize(dnn, yd, wad, pad1, yd, fa, &s));
    ws_bytes = s > ws_bytes ? s : ws_bytes;
    CKDNN(cudnnGetConvolutionBackwardFilterWorkspaceSize(dnn, yd, yd, pad1, wad, bfa, &s));
    ws_bytes = s > ws_bytes ? s : ws_bytes;
    CKDNN(cudnnGetConvolutionBackwardDataWorkspaceSize(dnn, wad, yd, pad1, yd, bda, &s));
    ws_bytes = s > ws_bytes ? s : ws_bytes;
    /* one workspace per stream: the branches may run at the same time */
    float *ws = ws_bytes ? corpus_dev(ws_bytes) : NULL, *ws_side = ws_bytes ? corpus_dev(ws_bytes) : NULL;

    for (int k = 0; k < NPARAM; k++) {
        par[k] = corpus_dev((size_t)counts[k] * 4);
        corpus_upload_random(par[k], (size_t)counts[k], k == 1 || k == 3 || k == 6 ? 0.0f : 0.3f);
        grad[k] = corpus_dev((size_t)counts[k] * 4);
        hist[k] = corpus_dev((size_t)counts[k] * 4);
        CK(cudaMemset(hist[k], 0, (size_t)counts[k] * 4));
    }
    size_t full = (size_t)BATCH * C * HW * HW, half = full / 4, out = (size_t)BATCH * CLASSES;
    int K = C * (HW / 2) * (HW / 2);
    x[0] = corpus_dev(in * 4);
    x[1] = corpus_dev(in * 4);
    float *y1 = corpus_dev(full * 4), *r1 = corpus_dev(full * 4), *ya = corpus_dev(full * 4),
          *yb = corpus_dev(full * 4), *r2 = corpus_dev(full * 4), *p = corpus_dev(half * 4),
          *fc = corpus_dev(out * 4), *prob = corpus_dev(out * 4), *ones = corpus_dev((size_t)BATCH * 4);
    float *dprob = corpus_dev(out * 4), *dp = corpus_dev(half * 4), *dr2 = corpus_dev(full * 4),
          *dy2 = corpus_dev(full * 4), *dr1 = corpus_dev(full * 4), *dr1b = corpus_dev(full * 4),
          *dy1 = corpus_dev(full * 4);
    float h_ones[BATCH];
    for (int i = 0; i < BATCH; i++)
        h_ones[i] = 1;
    CK(cudaMemcpy(ones, h_ones, sizeof h_ones, cudaMemcpyHostToDevice));

    for (int i = 0; i < 2; i++) {
        CK(cudaMallocHost((void **)&pinned[i], in * 4));
        loaded[i] = ts_event();
        x_free[i] = ts_event();
        CK(cudaEventRecord(x_free[i], 0));
    }
    cudaEvent_t forked = ts_event(), branch = ts_event(), dsum = ts_event(), branch_bwd = ts_event();

    load(0, 0);
    float h_prob[BATCH * CLASSES], first = 0, last = 0;
    for (int it = 0; it < ITERS; it++) {
        int cur = it % 2, nxt = 1 - cur;
        /* forward: conv1 + bias + ReLU on the compute stream */
        CK(cudaStreamWaitEvent(0, loaded[cur], 0));
        CKDNN(cudnnConvolutionForward(dnn, &one, xd, x[cur], w1d, par[0], pad1, fa, ws, ws_bytes, &zero, yd, y1));
        CKDNN(cudnnAddTensor(dnn, &one, bias_d, par[1], &one, yd, y1));
        CKDNN(cudnnActivationForward(dnn, act, &one, yd, y1, &zero, yd, r1));
        /* fork: the 1x1 branch on the second stream */
        CK(cudaEventRecord(forked, 0));
        CK(cudaStreamWaitEvent(side, forked, 0));
        CKDNN(cudnnConvolutionForward(dnn_side, &one, yd, r1, wbd, par[4], pad0, fa, ws_side, ws_bytes, &zero, yd,
                                      yb));
        CK(cudaEventRecord(branch, side));
        CKDNN(cudnnConvolutionForward(dnn, &one, yd, r1, wad, par[2], pad1, fa, ws, ws_bytes, &zero, yd, ya));
        CKDNN(cudnnAddTensor(dnn, &one, bias_d, par[3], &one, yd, ya));
        /* join */
        CK(cudaStreamWaitEvent(0, branch, 0));
        CKDNN(cudnnAddTensor(dnn, &one, yd, yb, &one, yd, ya));
        CKDNN(cudnnActivationForward(dnn, act, &one, yd, ya, &zero, yd, r2));
        CKDNN(cudnnPoolingForward(dnn, pool, &one, yd, r2, &zero, pd_, p));
        CKBLAS(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, CLASSES, BATCH, K, &one, par[5], K, p, K, &zero, fc,
                           CLASSES));
        CKBLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, CLASSES, BATCH, 1, &one, par[6], CLASSES, ones, 1, &one,
                           fc, CLASSES));
        CKDNN(cudnnSoftmaxForward(dnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &one, fd, fc, &zero, fd,
                                  prob));
        CK(cudaMemcpy(h_prob, prob, sizeof h_prob, cudaMemcpyDeviceToHost));
        float loss = 0, g[BATCH * CLASSES];
        for (int i = 0; i < BATCH; i++) {
            float q = h_prob[i * CLASSES + labels[cur][i]];
            loss -= logf(q > 1e-30f ? q : 1e-30f);
        }
        loss /= BATCH;
        for (int i = 0; i < BATCH * CLASSES; i++)
            g[i] = (h_prob[i] - (labels[cur][i / CLASSES] == i % CLASSES)) / (float)BATCH;
        CK(cudaMemcpy(dprob, g, sizeof g, cudaMemcpyHostToDevice));
        /* backward */
        CKBLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, K, CLASSES, BATCH, &one, p, K, dprob, CLASSES, &zero,
                           grad[5], K));
        CKBLAS(cublasSgemv(blas, CUBLAS_OP_N, CLASSES, BATCH, &one, dprob, CLASSES, ones, 1, &zero, grad[6], 1));
        CKBLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, K, BATCH, CLASSES, &one, par[5], K, dprob, CLASSES, &zero,
                           dp, K));
        CKDNN(cudnnPoolingBackward(dnn, pool, &one, pd_, p, pd_, dp, yd, r2, &zero, yd, dr2));
        CKDNN(cudnnActivationBackward(dnn, act, &one, yd, r2, yd, dr2, yd, ya, &zero, yd, dy2));
        /* the 1x1 branch's gradients on the second stream */
        CK(cudaEventRecord(dsum, 0));
        CK(cudaStreamWaitEvent(side, dsum, 0));
        CKDNN(cudnnConvolutionBackwardFilter(dnn_side, &one, yd, r1, yd, dy2, pad0, bfa, ws_side, ws_bytes, &zero,
                                             wbd, grad[4]));
        CKDNN(cudnnConvolutionBackwardData(dnn_side, &one, wbd, par[4], yd, dy2, pad0, bda, ws_side, ws_bytes, &zero,
                                           yd, dr1b));
        CK(cudaEventRecord(branch_bwd, side));
        CKDNN(cudnnConvolutionBackwardBias(dnn, &one, yd, dy2, &zero, bias_d, grad[3]));
        CKDNN(cudnnConvolutionBackwardFilter(dnn, &one, yd, r1, yd, dy2, pad1, bfa, ws, ws_bytes, &zero, wad,
                                             grad[2]));
        CKDNN(cudnnConvolutionBackwardData(dnn, &one, wad, par[2], yd, dy2, pad1, bda, ws, ws_bytes, &zero, yd, dr1));
        CK(cudaStreamWaitEvent(0, branch_bwd, 0));
        CKDNN(cudnnAddTensor(dnn, &one, yd, dr1b, &one, yd, dr1));
        CKDNN(cudnnActivationBackward(dnn, act, &one, yd, r1, yd, dr1, yd, y1, &zero, yd, dy1));
        CKDNN(cudnnConvolutionBackwardBias(dnn, &one, yd, dy1, &zero, bias_d, grad[1]));
        CKDNN(cudnnConvolutionBackwardFilter(dnn, &one, xd, x[cur], yd, dy1, pad1, bfa, ws, ws_bytes, &zero, w1d,
                                             grad[0]));
        CK(cudaEventRecord(x_free[cur], 0));
        /* SGD with momentum */
        float mom = 0.9f, rate = 0.02f, minus = -1;
        for (int k = 0; k < NPARAM; k++) {
            CKBLAS(cublasSscal(blas, counts[k], &mom, hist[k], 1));
            CKBLAS(cublasSaxpy(blas, counts[k], &rate, grad[k], 1, hist[k], 1));
            CKBLAS(cublasSaxpy(blas, counts[k], &minus, hist[k], 1, par[k], 1));
        }
        /* the next batch, copied while the update runs */
        if (it + 1 < ITERS)
            load(it + 1, nxt);
        if (it == 0)
            first = loss;
        last = loss;
        printf("iteration %d loss %.4f\n", it + 1, loss);
    }
    CK(cudaDeviceSynchronize());
    /* FNV-1a over the bytes of every learned parameter */
    uint64_t h = 0xcbf29ce484222325ull;
    for (int k = 0; k < NPARAM; k++) {
        unsigned char buf[4096];
        CK(cudaMemcpy(buf, par[k], (size_t)counts[k] * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < (size_t)counts[k] * 4; i++)
            h = (h ^ buf[i]) * 0x100000001b3ull;
    }
    printf("twostream: loss %.4f -> %.4f\n", first, last);
    printf("checksum %016llx\n", (unsigned long long)h);
    for (int i = 0; i < 2; i++) {
        CK(cudaEventDestroy(loaded[i]));
        CK(cudaEventDestroy(x_free[i]));
        CK(cudaFreeHost(pinned[i]));
    }
    CK(cudaEventDestroy(forked));
    CK(cudaEventDestroy(branch));
    CK(cudaEventDestroy(dsum));
    CK(cudaEventDestroy(branch_bwd));
    corpus_release();
    CK(cudaStreamDestroy(side));
    return 0;
}
