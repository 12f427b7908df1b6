/*
 * darknet_like.c — a small classifier trained the way Darknet trains on a
 * GPU, for libsn's model to be checked against (tests/test_sn_corpus.sh,
 * expectation in darknet_like.expect):
 *  - everything is allocated when the network is built (output, delta,
 *    weights, weight updates, biases, bias updates per layer; input, truth
 *    and one workspace shared by every convolution);
 *  - a forward pass pushes the input and truth to the device, then per
 *    layer fills its delta with zeros and runs the layer: a convolution
 *    fills its output with zeros and accumulates into it (cuDNN, beta 1),
 *    adds the bias and applies the activation with its own kernels;
 *    max pooling, average pooling and softmax are kernels of its own, and
 *    the softmax layer computes the loss and its gradient in one kernel,
 *    the loss then read back by the host, and the output pulled back too;
 *  - the backward pass runs the layers in reverse, the convolutions
 *    accumulating into the weight updates and into the previous layer's
 *    delta (beta 1);
 *  - subdivisions 2: two forward/backward passes per weight update;
 *  - the update is axpy and scal kernels per layer (momentum kept in the
 *    weight updates).
 */
#include "tests/corpus/corpus.h"

enum { BATCH = 4, SUBDIV = 2, UPDATES = 7, CLASSES = 4, IN_C = 3, IN_HW = 8 };

typedef struct conv_layer {
    int c, k, h, w, size, pad;   /* input channels, filters, output h, w */
    float *weights, *weight_updates, *biases, *bias_updates, *output, *delta;
    cudnnTensorDescriptor_t src, dst;
    cudnnFilterDescriptor_t wdesc;
    cudnnConvolutionDescriptor_t cdesc;
    cudnnConvolutionFwdAlgo_t fw;
    cudnnConvolutionBwdFilterAlgo_t bf;
    cudnnConvolutionBwdDataAlgo_t bd;
    size_t ws;
} conv_layer;

static cudnnHandle_t dnn;
static float *workspace;
static size_t workspace_size;

static void conv_setup(conv_layer *l, int c, int k, int hw, int size)
{
    memset(l, 0, sizeof *l);
    l->c = c, l->k = k, l->h = l->w = hw, l->size = size, l->pad = size / 2;
    int nw = k * c * size * size;
    l->weights = corpus_dev((size_t)nw * 4);
    l->weight_updates = corpus_dev((size_t)nw * 4);
    l->biases = corpus_dev((size_t)k * 4);
    l->bias_updates = corpus_dev((size_t)k * 4);
    l->output = corpus_dev((size_t)BATCH * k * hw * hw * 4);
    l->delta = corpus_dev((size_t)BATCH * k * hw * hw * 4);
    corpus_upload_random(l->weights, (size_t)nw, 0.3f);
    CK(cudaMemset(l->weight_updates, 0, (size_t)nw * 4));
    CK(cudaMemset(l->biases, 0, (size_t)k * 4));
    CK(cudaMemset(l->bias_updates, 0, (size_t)k * 4));
    l->src = corpus_tensor(BATCH, c, hw, hw);
    l->dst = corpus_tensor(BATCH, k, hw, hw);
    l->wdesc = corpus_filter(k, c, size, size);
    l->cdesc = corpus_conv(l->pad, 1);
    int n = 0;
    cudnnConvolutionFwdAlgoPerf_t fp;
    CKDNN(cudnnGetConvolutionForwardAlgorithm_v7(dnn, l->src, l->wdesc, l->cdesc, l->dst, 1, &n, &fp));
    cudnnConvolutionBwdFilterAlgoPerf_t bfp;
    CKDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(dnn, l->src, l->dst, l->cdesc, l->wdesc, 1, &n, &bfp));
    cudnnConvolutionBwdDataAlgoPerf_t bdp;
    CKDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(dnn, l->wdesc, l->dst, l->cdesc, l->src, 1, &n, &bdp));
    l->fw = fp.algo, l->bf = bfp.algo, l->bd = bdp.algo;
    size_t a = 0, b = 0, d = 0;
    CKDNN(cudnnGetConvolutionForwardWorkspaceSize(dnn, l->src, l->wdesc, l->cdesc, l->dst, l->fw, &a));
    CKDNN(cudnnGetConvolutionBackwardFilterWorkspaceSize(dnn, l->src, l->dst, l->cdesc, l->wdesc, l->bf, &b));
    CKDNN(cudnnGetConvolutionBackwardDataWorkspaceSize(dnn, l->wdesc, l->dst, l->cdesc, l->src, l->bd, &d));
    l->ws = a > b ? a : b;
    l->ws = l->ws > d ? l->ws : d;
    if (l->ws > workspace_size)
        workspace_size = l->ws;
}

static const float one = 1.0f;

static void conv_forward(conv_layer *l, const float *input)
{
    int n = BATCH * l->k * l->h * l->w;
    kl_fill(n, 0, l->output);
    CKDNN(cudnnConvolutionForward(dnn, &one, l->src, input, l->wdesc, l->weights, l->cdesc, l->fw,
                                  workspace, l->ws, &one, l->dst, l->output));
    kl_add_bias(l->output, l->biases, BATCH, l->k, l->h * l->w);
    kl_leaky(n, l->output);
}

static void conv_backward(conv_layer *l, const float *input, float *input_delta)
{
    int n = BATCH * l->k * l->h * l->w;
    kl_leaky_grad(n, l->output, l->delta);
    kl_backward_bias(l->bias_updates, l->delta, BATCH, l->k, l->h * l->w);
    CKDNN(cudnnConvolutionBackwardFilter(dnn, &one, l->src, input, l->dst, l->delta, l->cdesc, l->bf,
                                         workspace, l->ws, &one, l->wdesc, l->weight_updates));
    if (input_delta)
        CKDNN(cudnnConvolutionBackwardData(dnn, &one, l->wdesc, l->weights, l->dst, l->delta, l->cdesc,
                                           l->bd, workspace, l->ws, &one, l->src, input_delta));
}

static void conv_update(conv_layer *l, float lr, float momentum, float decay)
{
    int nw = l->k * l->c * l->size * l->size;
    kl_axpy(l->k, lr / BATCH, l->bias_updates, l->biases);
    kl_scal(l->k, momentum, l->bias_updates);
    kl_axpy(nw, -decay * BATCH, l->weights, l->weight_updates);
    kl_axpy(nw, lr / BATCH, l->weight_updates, l->weights);
    kl_scal(nw, momentum, l->weight_updates);
}

int main(void)
{
    corpus_register_common();
    dnn = corpus_dnn();
    /* make_network: every buffer now */
    float *input = corpus_dev((size_t)BATCH * IN_C * IN_HW * IN_HW * 4);
    float *truth = corpus_dev((size_t)BATCH * CLASSES * 4);
    conv_layer c1, c2, c3;
    conv_setup(&c1, IN_C, 8, IN_HW, 3);
    int hw2 = IN_HW / 2;
    float *mp_out = corpus_dev((size_t)BATCH * 8 * hw2 * hw2 * 4);
    float *mp_delta = corpus_dev((size_t)BATCH * 8 * hw2 * hw2 * 4);
    int *mp_idx = corpus_dev((size_t)BATCH * 8 * hw2 * hw2 * 4);
    conv_setup(&c2, 8, 8, hw2, 3);
    conv_setup(&c3, 8, CLASSES, hw2, 1);
    float *avg_out = corpus_dev((size_t)BATCH * CLASSES * 4);
    float *avg_delta = corpus_dev((size_t)BATCH * CLASSES * 4);
    float *sm_out = corpus_dev((size_t)BATCH * CLASSES * 4);
    float *sm_delta = corpus_dev((size_t)BATCH * CLASSES * 4);
    float *sm_loss = corpus_dev((size_t)BATCH * CLASSES * 4);
    workspace = corpus_dev(workspace_size ? workspace_size : 4);

    float h_in[BATCH * IN_C * IN_HW * IN_HW], h_truth[BATCH * CLASSES], h_loss[BATCH * CLASSES],
        h_out[BATCH * CLASSES];
    double first = 0, last = 0;
    long seen = 0;
    for (int u = 0; u < UPDATES; u++) {
        double cost = 0;
        for (int s = 0; s < SUBDIV; s++, seen++) {
            corpus_batch(seen, BATCH, IN_C * IN_HW * IN_HW, CLASSES, h_in, h_truth, NULL);
            /* forward_network_gpu */
            CK(cudaMemcpy(input, h_in, sizeof h_in, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(truth, h_truth, sizeof h_truth, cudaMemcpyHostToDevice));
            kl_fill(BATCH * 8 * IN_HW * IN_HW, 0, c1.delta);
            conv_forward(&c1, input);
            kl_fill(BATCH * 8 * hw2 * hw2, 0, mp_delta);
            kl_maxpool(BATCH * 8, IN_HW, IN_HW, c1.output, mp_out, mp_idx);
            kl_fill(BATCH * 8 * hw2 * hw2, 0, c2.delta);
            conv_forward(&c2, mp_out);
            kl_fill(BATCH * CLASSES * hw2 * hw2, 0, c3.delta);
            conv_forward(&c3, c2.output);
            kl_fill(BATCH * CLASSES, 0, avg_delta);
            kl_avgpool(BATCH * CLASSES, hw2 * hw2, c3.output, avg_out);
            kl_fill(BATCH * CLASSES, 0, sm_delta);
            kl_softmax(BATCH, CLASSES, avg_out, sm_out);
            kl_softmax_x_ent(BATCH * CLASSES, sm_out, truth, sm_delta, sm_loss);
            CK(cudaMemcpy(h_loss, sm_loss, sizeof h_loss, cudaMemcpyDeviceToHost));
            for (int i = 0; i < BATCH * CLASSES; i++)
                cost += h_loss[i];
            CK(cudaMemcpy(h_out, sm_out, sizeof h_out, cudaMemcpyDeviceToHost)); /* pull_network_output */
            /* backward_network_gpu */
            kl_axpy(BATCH * CLASSES, 1, sm_delta, avg_delta);
            kl_avgpool_grad(BATCH * CLASSES, hw2 * hw2, avg_delta, c3.delta);
            conv_backward(&c3, c2.output, c2.delta);
            conv_backward(&c2, mp_out, mp_delta);
            kl_maxpool_grad(BATCH * 8 * hw2 * hw2, mp_delta, mp_idx, c1.delta);
            conv_backward(&c1, input, NULL);
        }
        /* update_network_gpu */
        conv_update(&c1, 0.05f, 0.9f, 0.0005f);
        conv_update(&c2, 0.05f, 0.9f, 0.0005f);
        conv_update(&c3, 0.05f, 0.9f, 0.0005f);
        cost /= SUBDIV * BATCH;
        if (u == 0)
            first = cost;
        last = cost;
        printf("update %d cost %.4f\n", u + 1, cost);
    }
    CK(cudaDeviceSynchronize());
    printf("darknet_like: cost %.4f -> %.4f\n", first, last);
    corpus_release();
    return 0;
}
