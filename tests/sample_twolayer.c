/*
 * sample_twolayer.c — a small, ordinary CUDA program that trains a
 * two-layer network: convolution (+bias), ReLU and max pooling through
 * cuDNN, a fully connected layer through cuBLAS Sgemm (bias as a rank-1
 * Sgemm, its gradient through Sgemv), softmax through cuDNN and plain SGD
 * with weight decay through Sscal/Saxpy. The cross-entropy loss and its
 * gradient are computed on the host from the copied-back probabilities.
 *
 * It includes only the real CUDA, cuDNN and cuBLAS headers and links only
 * the real libraries; it runs on the simulated device because
 * LD_LIBRARY_PATH points the loader at it. Being also a test, it asserts
 * that the loss fell and prints a verdict line.
 *
 * The data: 12x12 single-channel images of three classes — a horizontal
 * bar, a vertical bar, a diagonal — at random positions with uniform noise,
 * from a fixed seed, so every run computes the same losses.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#define BATCH 16
#define IMG 12
#define FILTERS 4
#define KSIZE 3
#define POOLED (IMG / 2)
#define FEATURES (FILTERS * POOLED * POOLED)
#define CLASSES 3
#define EXAMPLES 96
#define STEPS 30
#define LEARNING_RATE 0.5f
#define WEIGHT_DECAY 1e-4f

#define CHECK_CUDA(call) assert_int_equal((call), cudaSuccess)
#define CHECK_CUDNN(call) assert_int_equal((call), CUDNN_STATUS_SUCCESS)
#define CHECK_CUBLAS(call) assert_int_equal((call), CUBLAS_STATUS_SUCCESS)

static uint64_t g_seed = 0x2545f4914f6cdd1dull;

static float uniform(float lo, float hi)
{
    g_seed = g_seed * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (float)((g_seed >> 40) / 16777216.0);
}

static void make_dataset(float *images, int *labels)
{
    for (int e = 0; e < EXAMPLES; e++) {
        float *img = images + (size_t)e * IMG * IMG;
        int cls = e % CLASSES, at = (int)uniform(1, IMG - 1);
        for (int i = 0; i < IMG * IMG; i++)
            img[i] = uniform(-0.3f, 0.3f);
        for (int t = 0; t < IMG; t++) {
            if (cls == 0)
                img[at * IMG + t] += 1.0f;
            else if (cls == 1)
                img[t * IMG + at] += 1.0f;
            else
                img[t * IMG + (t + at) % IMG] += 1.0f;
        }
        labels[e] = cls;
    }
}

static float *device_array(size_t count)
{
    void *p = NULL;
    CHECK_CUDA(cudaMalloc(&p, count * sizeof(float)));
    return p;
}

static void upload(float *dst, const float *src, size_t count, cudaStream_t s)
{
    CHECK_CUDA(cudaMemcpyAsync(dst, src, count * sizeof(float), cudaMemcpyHostToDevice, s));
}

static void init_uniform(float *dev, size_t count, float scale, cudaStream_t s)
{
    float *h = malloc(count * sizeof(float));
    for (size_t i = 0; i < count; i++)
        h[i] = uniform(-scale, scale);
    upload(dev, h, count, s);
    CHECK_CUDA(cudaStreamSynchronize(s));
    free(h);
}

static cudnnTensorDescriptor_t tensor4d(int n, int c, int h, int w)
{
    cudnnTensorDescriptor_t d;
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&d));
    CHECK_CUDNN(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
    return d;
}

/* Runs STEPS of SGD and stores the loss of every step. */
static void train(float *losses)
{
    cudaStream_t s;
    cudnnHandle_t dnn;
    cublasHandle_t blas;
    CHECK_CUDA(cudaStreamCreate(&s));
    CHECK_CUDNN(cudnnCreate(&dnn));
    CHECK_CUDNN(cudnnSetStream(dnn, s));
    CHECK_CUBLAS(cublasCreate(&blas));
    CHECK_CUBLAS(cublasSetStream(blas, s));

    /* Descriptors: input, conv output / activation, pooled, logits, bias. */
    cudnnTensorDescriptor_t x_desc = tensor4d(BATCH, 1, IMG, IMG);
    cudnnTensorDescriptor_t conv_desc_out = tensor4d(BATCH, FILTERS, IMG, IMG);
    cudnnTensorDescriptor_t pool_desc_out = tensor4d(BATCH, FILTERS, POOLED, POOLED);
    cudnnTensorDescriptor_t logits_desc = tensor4d(BATCH, CLASSES, 1, 1);
    cudnnTensorDescriptor_t bias_desc = tensor4d(1, FILTERS, 1, 1);
    cudnnFilterDescriptor_t w_desc;
    CHECK_CUDNN(cudnnCreateFilterDescriptor(&w_desc));
    CHECK_CUDNN(cudnnSetFilter4dDescriptor(w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, FILTERS, 1, KSIZE, KSIZE));
    cudnnConvolutionDescriptor_t conv;
    CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&conv));
    CHECK_CUDNN(cudnnSetConvolution2dDescriptor(conv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    int on, oc, oh, ow;
    CHECK_CUDNN(cudnnGetConvolution2dForwardOutputDim(conv, x_desc, w_desc, &on, &oc, &oh, &ow));
    assert_true(on == BATCH && oc == FILTERS && oh == IMG && ow == IMG);
    cudnnActivationDescriptor_t relu;
    CHECK_CUDNN(cudnnCreateActivationDescriptor(&relu));
    CHECK_CUDNN(cudnnSetActivationDescriptor(relu, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
    cudnnPoolingDescriptor_t pool;
    CHECK_CUDNN(cudnnCreatePoolingDescriptor(&pool));
    CHECK_CUDNN(cudnnSetPooling2dDescriptor(pool, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 2, 2, 0, 0, 2, 2));

    const cudnnConvolutionFwdAlgo_t fwd_algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    const cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
    size_t ws_fwd = 0, ws_bwd = 0;
    CHECK_CUDNN(cudnnGetConvolutionForwardWorkspaceSize(dnn, x_desc, w_desc, conv, conv_desc_out, fwd_algo, &ws_fwd));
    CHECK_CUDNN(cudnnGetConvolutionBackwardFilterWorkspaceSize(dnn, x_desc, conv_desc_out, conv, w_desc,
                                                               bwd_filter_algo, &ws_bwd));
    size_t ws_bytes = ws_fwd > ws_bwd ? ws_fwd : ws_bwd;
    void *ws = NULL;
    if (ws_bytes)
        CHECK_CUDA(cudaMalloc(&ws, ws_bytes));

    /* Parameters and their gradients. */
    const size_t conv_act = (size_t)BATCH * FILTERS * IMG * IMG, pooled = (size_t)BATCH * FEATURES;
    float *w1 = device_array(FILTERS * KSIZE * KSIZE), *b1 = device_array(FILTERS);
    float *w2 = device_array(CLASSES * FEATURES), *b2 = device_array(CLASSES);
    float *dw1 = device_array(FILTERS * KSIZE * KSIZE), *db1 = device_array(FILTERS);
    float *dw2 = device_array(CLASSES * FEATURES), *db2 = device_array(CLASSES);
    init_uniform(w1, FILTERS * KSIZE * KSIZE, 0.5f, s);
    init_uniform(w2, CLASSES * FEATURES, 0.1f, s);
    CHECK_CUDA(cudaMemsetAsync(b1, 0, FILTERS * sizeof(float), s));
    CHECK_CUDA(cudaMemsetAsync(b2, 0, CLASSES * sizeof(float), s));

    /* Activations and their gradients. */
    float *x = device_array((size_t)BATCH * IMG * IMG), *conv_out = device_array(conv_act);
    float *relu_out = device_array(conv_act), *pool_out = device_array(pooled);
    float *logits = device_array(BATCH * CLASSES), *probs = device_array(BATCH * CLASSES);
    float *dlogits = device_array(BATCH * CLASSES), *dpool = device_array(pooled);
    float *drelu = device_array(conv_act), *dconv = device_array(conv_act);
    float *ones = device_array(BATCH);
    float ones_h[BATCH];
    for (int i = 0; i < BATCH; i++)
        ones_h[i] = 1.0f;
    upload(ones, ones_h, BATCH, s);

    float *images = malloc(sizeof(float) * EXAMPLES * IMG * IMG);
    int labels[EXAMPLES];
    make_dataset(images, labels);

    const float one = 1.0f, zero = 0.0f, minus_lr = -LEARNING_RATE, decay = 1.0f - LEARNING_RATE * WEIGHT_DECAY;
    for (int step = 0; step < STEPS; step++) {
        int first = (step * BATCH) % EXAMPLES;
        upload(x, images + (size_t)first * IMG * IMG, (size_t)BATCH * IMG * IMG, s);

        /* Forward. */
        CHECK_CUDNN(cudnnConvolutionForward(dnn, &one, x_desc, x, w_desc, w1, conv, fwd_algo, ws, ws_bytes, &zero,
                                            conv_desc_out, conv_out));
        CHECK_CUDNN(cudnnAddTensor(dnn, &one, bias_desc, b1, &one, conv_desc_out, conv_out));
        CHECK_CUDNN(cudnnActivationForward(dnn, relu, &one, conv_desc_out, conv_out, &zero, conv_desc_out, relu_out));
        CHECK_CUDNN(cudnnPoolingForward(dnn, pool, &one, conv_desc_out, relu_out, &zero, pool_desc_out, pool_out));
        /* logits (CLASSES x BATCH, column-major) = W2 (CLASSES x FEATURES) * pooled (FEATURES x BATCH). */
        CHECK_CUBLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, CLASSES, BATCH, FEATURES, &one, w2, CLASSES,
                                 pool_out, FEATURES, &zero, logits, CLASSES));
        CHECK_CUBLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, CLASSES, BATCH, 1, &one, b2, CLASSES, ones, 1, &one,
                                 logits, CLASSES));
        CHECK_CUDNN(cudnnSoftmaxForward(dnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &one, logits_desc,
                                        logits, &zero, logits_desc, probs));

        /* Loss and its gradient with respect to the logits. */
        float p[BATCH * CLASSES], g[BATCH * CLASSES];
        CHECK_CUDA(cudaMemcpyAsync(p, probs, sizeof p, cudaMemcpyDeviceToHost, s));
        CHECK_CUDA(cudaStreamSynchronize(s));
        double loss = 0;
        for (int b = 0; b < BATCH; b++) {
            int label = labels[first + b];
            loss -= log(fmax(p[b * CLASSES + label], 1e-30));
            for (int c = 0; c < CLASSES; c++)
                g[b * CLASSES + c] = (p[b * CLASSES + c] - (c == label ? 1.0f : 0.0f)) / BATCH;
        }
        losses[step] = (float)(loss / BATCH);
        upload(dlogits, g, BATCH * CLASSES, s);

        /* Backward. */
        CHECK_CUBLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, CLASSES, FEATURES, BATCH, &one, dlogits, CLASSES,
                                 pool_out, FEATURES, &zero, dw2, CLASSES));
        CHECK_CUBLAS(cublasSgemv(blas, CUBLAS_OP_N, CLASSES, BATCH, &one, dlogits, CLASSES, ones, 1, &zero, db2, 1));
        CHECK_CUBLAS(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, FEATURES, BATCH, CLASSES, &one, w2, CLASSES,
                                 dlogits, CLASSES, &zero, dpool, FEATURES));
        CHECK_CUDNN(cudnnPoolingBackward(dnn, pool, &one, pool_desc_out, pool_out, pool_desc_out, dpool,
                                         conv_desc_out, relu_out, &zero, conv_desc_out, drelu));
        CHECK_CUDNN(cudnnActivationBackward(dnn, relu, &one, conv_desc_out, relu_out, conv_desc_out, drelu,
                                            conv_desc_out, conv_out, &zero, conv_desc_out, dconv));
        CHECK_CUDNN(cudnnConvolutionBackwardBias(dnn, &one, conv_desc_out, dconv, &zero, bias_desc, db1));
        CHECK_CUDNN(cudnnConvolutionBackwardFilter(dnn, &one, x_desc, x, conv_desc_out, dconv, conv, bwd_filter_algo,
                                                   ws, ws_bytes, &zero, w_desc, dw1));

        /* SGD with weight decay on the weights. */
        CHECK_CUBLAS(cublasSscal(blas, FILTERS * KSIZE * KSIZE, &decay, w1, 1));
        CHECK_CUBLAS(cublasSscal(blas, CLASSES * FEATURES, &decay, w2, 1));
        CHECK_CUBLAS(cublasSaxpy(blas, FILTERS * KSIZE * KSIZE, &minus_lr, dw1, 1, w1, 1));
        CHECK_CUBLAS(cublasSaxpy(blas, FILTERS, &minus_lr, db1, 1, b1, 1));
        CHECK_CUBLAS(cublasSaxpy(blas, CLASSES * FEATURES, &minus_lr, dw2, 1, w2, 1));
        CHECK_CUBLAS(cublasSaxpy(blas, CLASSES, &minus_lr, db2, 1, b2, 1));
    }

    float w2_norm = 0;
    CHECK_CUBLAS(cublasSnrm2(blas, CLASSES * FEATURES, w2, 1, &w2_norm));
    print_message("final |W2| = %.4f\n", w2_norm);
    assert_true(isfinite(w2_norm) && w2_norm > 0);

    free(images);
    float *buffers[] = {w1, b1, w2, b2, dw1, db1, dw2, db2, x, conv_out, relu_out, pool_out,
                        logits, probs, dlogits, dpool, drelu, dconv, ones};
    for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; i++)
        CHECK_CUDA(cudaFree(buffers[i]));
    if (ws)
        CHECK_CUDA(cudaFree(ws));
    CHECK_CUDNN(cudnnDestroyPoolingDescriptor(pool));
    CHECK_CUDNN(cudnnDestroyActivationDescriptor(relu));
    CHECK_CUDNN(cudnnDestroyConvolutionDescriptor(conv));
    CHECK_CUDNN(cudnnDestroyFilterDescriptor(w_desc));
    cudnnTensorDescriptor_t tensors[] = {x_desc, conv_desc_out, pool_desc_out, logits_desc, bias_desc};
    for (size_t i = 0; i < sizeof tensors / sizeof tensors[0]; i++)
        CHECK_CUDNN(cudnnDestroyTensorDescriptor(tensors[i]));
    CHECK_CUBLAS(cublasDestroy(blas));
    CHECK_CUDNN(cudnnDestroy(dnn));
    CHECK_CUDA(cudaStreamDestroy(s));
}

static void test_two_layer_training_loss_falls(void **state)
{
    (void)state;
    float losses[STEPS];
    train(losses);
    for (int i = 0; i < STEPS; i++) {
        print_message("step %2d  loss %.4f\n", i, losses[i]);
        assert_true(isfinite(losses[i]));
    }
    /* The last epoch (EXAMPLES / BATCH steps) against the first. */
    const int epoch = EXAMPLES / BATCH;
    double first = 0, last = 0;
    for (int i = 0; i < epoch; i++) {
        first += losses[i] / epoch;
        last += losses[STEPS - epoch + i] / epoch;
    }
    int fell = last < 0.5 * first;
    print_message("sample_twolayer: mean loss first epoch %.4f, last epoch %.4f: %s\n", first, last,
                  fell ? "loss fell" : "loss did not fall");
    assert_true(fell);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_layer_training_loss_falls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
