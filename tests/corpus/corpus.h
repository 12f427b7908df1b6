/*
 * corpus.h — what the small framework-shaped programs of tests/corpus share:
 * checked CUDA, cuDNN and cuBLAS calls, a deterministic random source, and
 * element-wise "device kernels" written as host functions registered with
 * the simulated device (sim/simgpu.h) and launched with cudaLaunchKernel,
 * as frameworks launch their own CUDA kernels. Each program imitates one
 * framework's habits; libsn's model of it is checked against an expectation
 * file by tests/test_sn_corpus.sh.
 *
 * The kernels take their arguments the way CUDA kernels do (args[i] points
 * at argument i) and do the arithmetic on the host, so the programs learn
 * something real; they exist only on the simulated device, and a program
 * run on the real libraries stops at once with exit status 77.
 */
#ifndef CORPUS_H
#define CORPUS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "sim/simgpu.h"

#define CK(call) corpus_cuda((call), #call, __LINE__)
#define CKDNN(call) corpus_cudnn((call), #call, __LINE__)
#define CKBLAS(call) corpus_cublas((call), #call, __LINE__)

static inline void corpus_cuda(cudaError_t e, const char *what, int line)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "corpus: line %d: %s: %s\n", line, what, cudaGetErrorString(e));
        exit(1);
    }
}

static inline void corpus_cudnn(cudnnStatus_t s, const char *what, int line)
{
    if (s != CUDNN_STATUS_SUCCESS) {
        fprintf(stderr, "corpus: line %d: %s: %s\n", line, what, cudnnGetErrorString(s));
        exit(1);
    }
}

static inline void corpus_cublas(cublasStatus_t s, const char *what, int line)
{
    if (s != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "corpus: line %d: %s: status %d\n", line, what, (int)s);
        exit(1);
    }
}

static uint64_t corpus_seed = 0x9e3779b97f4a7c15ull;

static inline float corpus_uniform(float lo, float hi)
{
    corpus_seed = corpus_seed * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (float)((corpus_seed >> 40) / 16777216.0);
}

static inline float *corpus_host_random(size_t n, float scale)
{
    float *h = malloc(n * sizeof *h);
    if (!h) {
        fprintf(stderr, "corpus: out of host memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        h[i] = corpus_uniform(-scale, scale);
    return h;
}

/* A batch of images whose class decides the sign of the mean of channel 0:
 * learnable, deterministic from the batch index. */
static inline void corpus_batch(long index, int batch, int chw, int classes, float *images,
                                float *onehot, int *labels)
{
    uint64_t saved = corpus_seed;
    corpus_seed = 0x2545f4914f6cdd1dull ^ (uint64_t)index * 0x9e3779b97f4a7c15ull;
    for (int b = 0; b < batch; b++) {
        int cls = (int)((index * 7 + b * 3) % classes);
        if (labels)
            labels[b] = cls;
        for (int i = 0; i < chw; i++)
            images[(size_t)b * chw + i] = corpus_uniform(-0.5f, 0.5f) + (i % classes == cls ? 0.8f : 0.0f);
        if (onehot)
            for (int k = 0; k < classes; k++)
                onehot[(size_t)b * classes + k] = k == cls ? 1.0f : 0.0f;
    }
    corpus_seed = saved;
}

/* ---- kernels ---------------------------------------------------------------- */

#define CORPUS_ARG(type, i) (*(type *)args[i])

/* Every kernel is registered once with the sizes of its parameters. */
static inline void corpus_register(simgpu_host_kernel_fn fn, const char *name, int n, const size_t *sizes)
{
    if (simgpu_register_host_kernel(fn, name, n, sizes) != 0) {
        fprintf(stderr, "corpus: %s needs the simulated device (its kernels are host functions)\n",
                name);
        exit(77);
    }
}

static inline void corpus_launch(simgpu_host_kernel_fn fn, int n, void **args, cudaStream_t stream)
{
    dim3 grid = {(unsigned)((n + 255) / 256 ? (n + 255) / 256 : 1), 1, 1}, block = {256, 1, 1};
    CK(cudaLaunchKernel((const void *)fn, grid, block, args, 0, stream));
}

#define P_PTR sizeof(void *)
#define P_INT sizeof(int)
#define P_FLT sizeof(float)

/* fill(n, value, x): x[i] = value */
static void k_fill(void **args, dim3 g, dim3 b)
{
    (void)g, (void)b;
    int n = CORPUS_ARG(int, 0);
    float v = CORPUS_ARG(float, 1);
    float *x = CORPUS_ARG(float *, 2);
    for (int i = 0; i < n; i++)
        x[i] = v;
}

/* axpy(n, a, x, y): y += a x */
static void k_axpy(void **args, dim3 g, dim3 b)
{
    (void)g, (void)b;
    int n = CORPUS_ARG(int, 0);
    float a = CORPUS_ARG(float, 1);
    const float *x = CORPUS_ARG(const float *, 2);
    float *y = CORPUS_ARG(float *, 3);
    for (int i = 0; i < n; i++)
        y[i] += a * x[i];
}

/* scal(n, a, x): x *= a */
static void k_scal(void **args, dim3 g, dim3 b)
{
    (void)g, (void)b;
    int n = CORPUS_ARG(int, 0);
    float a = CORPUS_ARG(float, 1);
    float *x = CORPUS_ARG(float *, 2);
    for (int i = 0; i < n; i++)
        x[i] *= a;
}

/* copy(n, x, y): y = x */
static void k_copy(void **args, dim3 g, dim3 b)
{
    (void)g, (void)b;
    int n = CORPUS_ARG(int, 0);
    const float *x = CORPUS_ARG(const float *, 1);
    float *y = CORPUS_ARG(float *, 2);
    memcpy(y, x, (size_t)n * sizeof *y);
}

/* add_bias(out, bias, batch, c, hw): out[b,c,:] += bias[c] */
static void k_add_bias(void **args, dim3 g, dim3 bl)
{
    (void)g, (void)bl;
    float *out = CORPUS_ARG(float *, 0);
    const float *bias = CORPUS_ARG(const float *, 1);
    int batch = CORPUS_ARG(int, 2), c = CORPUS_ARG(int, 3), hw = CORPUS_ARG(int, 4);
    for (int b = 0; b < batch; b++)
        for (int k = 0; k < c; k++)
            for (int i = 0; i < hw; i++)
                out[((size_t)b * c + k) * hw + i] += bias[k];
}

/* backward_bias(bias_grad, delta, batch, c, hw): bias_grad[c] += sum delta[b,c,:] */
static void k_backward_bias(void **args, dim3 g, dim3 bl)
{
    (void)g, (void)bl;
    float *db = CORPUS_ARG(float *, 0);
    const float *delta = CORPUS_ARG(const float *, 1);
    int batch = CORPUS_ARG(int, 2), c = CORPUS_ARG(int, 3), hw = CORPUS_ARG(int, 4);
    for (int b = 0; b < batch; b++)
        for (int k = 0; k < c; k++)
            for (int i = 0; i < hw; i++)
                db[k] += delta[((size_t)b * c + k) * hw + i];
}

/* leaky(n, x): x = x > 0 ? x : 0.1 x, in place (Darknet's activate_array) */
static void k_leaky(void **args, dim3 g, dim3 b)
{
    (void)g, (void)b;
    int n = CORPUS_ARG(int, 0);
    float *x = CORPUS_ARG(float *, 1);
    for (int i = 0; i < n; i++)
        x[i] = x[i] > 0 ? x[i] : 0.1f * x[i];
}

/* leaky_grad(n, y, delta): delta *= y > 0 ? 1 : 0.1 (Darknet's gradient_array) */
static void k_leaky_grad(void **args, dim3 g, dim3 b)
{
    (void)g, (void)b;
    int n = CORPUS_ARG(int, 0);
    const float *y = CORPUS_ARG(const float *, 1);
    float *d = CORPUS_ARG(float *, 2);
    for (int i = 0; i < n; i++)
        d[i] *= y[i] > 0 ? 1.0f : 0.1f;
}

/* relu(n, x, y): y = max(x, 0) */
static void k_relu(void **args, dim3 g, dim3 b)
{
    (void)g, (void)b;
    int n = CORPUS_ARG(int, 0);
    const float *x = CORPUS_ARG(const float *, 1);
    float *y = CORPUS_ARG(float *, 2);
    for (int i = 0; i < n; i++)
        y[i] = x[i] > 0 ? x[i] : 0.0f;
}

/* relu_grad(n, y, dy, dx): dx = y > 0 ? dy : 0 */
static void k_relu_grad(void **args, dim3 g, dim3 b)
{
    (void)g, (void)b;
    int n = CORPUS_ARG(int, 0);
    const float *y = CORPUS_ARG(const float *, 1);
    const float *dy = CORPUS_ARG(const float *, 2);
    float *dx = CORPUS_ARG(float *, 3);
    for (int i = 0; i < n; i++)
        dx[i] = y[i] > 0 ? dy[i] : 0.0f;
}

/* maxpool(bc, h, w, in, out, idx): 2x2, stride 2 */
static void k_maxpool(void **args, dim3 g, dim3 b)
{
    (void)g, (void)b;
    int bc = CORPUS_ARG(int, 0), h = CORPUS_ARG(int, 1), w = CORPUS_ARG(int, 2);
    const float *in = CORPUS_ARG(const float *, 3);
    float *out = CORPUS_ARG(float *, 4);
    int *idx = CORPUS_ARG(int *, 5);
    int oh = h / 2, ow = w / 2;
    for (int p = 0; p < bc; p++)
        for (int i = 0; i < oh; i++)
            for (int j = 0; j < ow; j++) {
                int best = p * h * w + 2 * i * w + 2 * j;
                for (int di = 0; di < 2; di++)
                    for (int dj = 0; dj < 2; dj++) {
                        int at = p * h * w + (2 * i + di) * w + 2 * j + dj;
                        if (in[at] > in[best])
                            best = at;
                    }
                out[p * oh * ow + i * ow + j] = in[best];
                idx[p * oh * ow + i * ow + j] = best;
            }
}

/* maxpool_grad(nout, dout, idx, din): din[idx[i]] += dout[i] (din cleared before) */
static void k_maxpool_grad(void **args, dim3 g, dim3 b)
{
    (void)g, (void)b;
    int n = CORPUS_ARG(int, 0);
    const float *dout = CORPUS_ARG(const float *, 1);
    const int *idx = CORPUS_ARG(const int *, 2);
    float *din = CORPUS_ARG(float *, 3);
    for (int i = 0; i < n; i++)
        din[idx[i]] += dout[i];
}

/* avgpool(bc, hw, in, out): global average */
static void k_avgpool(void **args, dim3 g, dim3 b)
{
    (void)g, (void)b;
    int bc = CORPUS_ARG(int, 0), hw = CORPUS_ARG(int, 1);
    const float *in = CORPUS_ARG(const float *, 2);
    float *out = CORPUS_ARG(float *, 3);
    for (int p = 0; p < bc; p++) {
        float s = 0;
        for (int i = 0; i < hw; i++)
            s += in[(size_t)p * hw + i];
        out[p] = s / (float)hw;
    }
}

/* avgpool_grad(bc, hw, dout, din): din[p,:] += dout[p] / hw */
static void k_avgpool_grad(void **args, dim3 g, dim3 b)
{
    (void)g, (void)b;
    int bc = CORPUS_ARG(int, 0), hw = CORPUS_ARG(int, 1);
    const float *dout = CORPUS_ARG(const float *, 2);
    float *din = CORPUS_ARG(float *, 3);
    for (int p = 0; p < bc; p++)
        for (int i = 0; i < hw; i++)
            din[(size_t)p * hw + i] += dout[p] / (float)hw;
}

/* softmax(batch, classes, in, out) */
static void k_softmax(void **args, dim3 g, dim3 bl)
{
    (void)g, (void)bl;
    int batch = CORPUS_ARG(int, 0), classes = CORPUS_ARG(int, 1);
    const float *in = CORPUS_ARG(const float *, 2);
    float *out = CORPUS_ARG(float *, 3);
    for (int b = 0; b < batch; b++) {
        const float *x = in + (size_t)b * classes;
        float *y = out + (size_t)b * classes, mx = x[0], s = 0;
        for (int k = 1; k < classes; k++)
            mx = x[k] > mx ? x[k] : mx;
        for (int k = 0; k < classes; k++)
            s += y[k] = expf(x[k] - mx);
        for (int k = 0; k < classes; k++)
            y[k] /= s;
    }
}

/* softmax_x_ent(n, prob, truth, delta, loss): Darknet's loss and its gradient at once */
static void k_softmax_x_ent(void **args, dim3 g, dim3 b)
{
    (void)g, (void)b;
    int n = CORPUS_ARG(int, 0);
    const float *p = CORPUS_ARG(const float *, 1);
    const float *t = CORPUS_ARG(const float *, 2);
    float *delta = CORPUS_ARG(float *, 3);
    float *loss = CORPUS_ARG(float *, 4);
    for (int i = 0; i < n; i++) {
        loss[i] = t[i] ? -logf(p[i] > 1e-30f ? p[i] : 1e-30f) : 0;
        delta[i] = t[i] - p[i];
    }
}

/* The kernel table of a program: register what it launches. */
static inline void corpus_register_common(void)
{
    static const size_t fill[] = {P_INT, P_FLT, P_PTR};
    static const size_t axpy[] = {P_INT, P_FLT, P_PTR, P_PTR};
    static const size_t scal[] = {P_INT, P_FLT, P_PTR};
    static const size_t copy[] = {P_INT, P_PTR, P_PTR};
    static const size_t bias[] = {P_PTR, P_PTR, P_INT, P_INT, P_INT};
    static const size_t leaky[] = {P_INT, P_PTR};
    static const size_t leaky_grad[] = {P_INT, P_PTR, P_PTR};
    static const size_t relu[] = {P_INT, P_PTR, P_PTR};
    static const size_t relu_grad[] = {P_INT, P_PTR, P_PTR, P_PTR};
    static const size_t pool[] = {P_INT, P_INT, P_INT, P_PTR, P_PTR, P_PTR};
    static const size_t pool_grad[] = {P_INT, P_PTR, P_PTR, P_PTR};
    static const size_t avg[] = {P_INT, P_INT, P_PTR, P_PTR};
    static const size_t softmax[] = {P_INT, P_INT, P_PTR, P_PTR};
    static const size_t xent[] = {P_INT, P_PTR, P_PTR, P_PTR, P_PTR};
    corpus_register(k_fill, "fill", 3, fill);
    corpus_register(k_axpy, "axpy", 4, axpy);
    corpus_register(k_scal, "scal", 3, scal);
    corpus_register(k_copy, "copy", 3, copy);
    corpus_register(k_add_bias, "add_bias", 5, bias);
    corpus_register(k_backward_bias, "backward_bias", 5, bias);
    corpus_register(k_leaky, "leaky", 2, leaky);
    corpus_register(k_leaky_grad, "leaky_grad", 3, leaky_grad);
    corpus_register(k_relu, "relu", 3, relu);
    corpus_register(k_relu_grad, "relu_grad", 4, relu_grad);
    corpus_register(k_maxpool, "maxpool", 6, pool);
    corpus_register(k_maxpool_grad, "maxpool_grad", 4, pool_grad);
    corpus_register(k_avgpool, "avgpool", 4, avg);
    corpus_register(k_avgpool_grad, "avgpool_grad", 4, avg);
    corpus_register(k_softmax, "softmax", 4, softmax);
    corpus_register(k_softmax_x_ent, "softmax_x_ent", 5, xent);
}

/* Launch helpers, one per kernel, with the argument order above. */
static inline void kl_fill(int n, float v, float *x)
{
    void *a[] = {&n, &v, &x};
    corpus_launch(k_fill, n, a, 0);
}
static inline void kl_axpy(int n, float al, const float *x, float *y)
{
    void *a[] = {&n, &al, &x, &y};
    corpus_launch(k_axpy, n, a, 0);
}
static inline void kl_scal(int n, float al, float *x)
{
    void *a[] = {&n, &al, &x};
    corpus_launch(k_scal, n, a, 0);
}
static inline void kl_copy(int n, const float *x, float *y)
{
    void *a[] = {&n, &x, &y};
    corpus_launch(k_copy, n, a, 0);
}
static inline void kl_add_bias(float *out, const float *bias, int batch, int c, int hw)
{
    void *a[] = {&out, &bias, &batch, &c, &hw};
    corpus_launch(k_add_bias, batch * c * hw, a, 0);
}
static inline void kl_backward_bias(float *db, const float *delta, int batch, int c, int hw)
{
    void *a[] = {&db, &delta, &batch, &c, &hw};
    corpus_launch(k_backward_bias, c, a, 0);
}
static inline void kl_leaky(int n, float *x)
{
    void *a[] = {&n, &x};
    corpus_launch(k_leaky, n, a, 0);
}
static inline void kl_leaky_grad(int n, const float *y, float *d)
{
    void *a[] = {&n, &y, &d};
    corpus_launch(k_leaky_grad, n, a, 0);
}
static inline void kl_relu(int n, const float *x, float *y)
{
    void *a[] = {&n, &x, &y};
    corpus_launch(k_relu, n, a, 0);
}
static inline void kl_relu_grad(int n, const float *y, const float *dy, float *dx)
{
    void *a[] = {&n, &y, &dy, &dx};
    corpus_launch(k_relu_grad, n, a, 0);
}
static inline void kl_maxpool(int bc, int h, int w, const float *in, float *out, int *idx)
{
    void *a[] = {&bc, &h, &w, &in, &out, &idx};
    corpus_launch(k_maxpool, bc * h * w / 4, a, 0);
}
static inline void kl_maxpool_grad(int n, const float *dout, const int *idx, float *din)
{
    void *a[] = {&n, &dout, &idx, &din};
    corpus_launch(k_maxpool_grad, n, a, 0);
}
static inline void kl_avgpool(int bc, int hw, const float *in, float *out)
{
    void *a[] = {&bc, &hw, &in, &out};
    corpus_launch(k_avgpool, bc, a, 0);
}
static inline void kl_avgpool_grad(int bc, int hw, const float *dout, float *din)
{
    void *a[] = {&bc, &hw, &dout, &din};
    corpus_launch(k_avgpool_grad, bc * hw, a, 0);
}
static inline void kl_softmax(int batch, int classes, const float *in, float *out)
{
    void *a[] = {&batch, &classes, &in, &out};
    corpus_launch(k_softmax, batch * classes, a, 0);
}
static inline void kl_softmax_x_ent(int n, const float *p, const float *t, float *delta, float *loss)
{
    void *a[] = {&n, &p, &t, &delta, &loss};
    corpus_launch(k_softmax_x_ent, n, a, 0);
}

/* ---- what a program holds: released at its end ----------------------------------- */

/* Descriptors, handles and device buffers a program keeps until it ends
 * are recorded here and released by corpus_release(), newest first, so
 * that the sanitizer builds see no leak. */
enum corpus_kind { CORPUS_TENSOR, CORPUS_FILTER, CORPUS_CONV, CORPUS_ACT, CORPUS_POOL, CORPUS_DROPOUT,
                   CORPUS_DNN, CORPUS_BLAS, CORPUS_DEV };

typedef struct corpus_owned {
    int kind;
    void *p;
} corpus_owned;

static corpus_owned *corpus_held;
static int corpus_nheld, corpus_capheld;

static inline void corpus_own(int kind, void *p)
{
    if (corpus_nheld == corpus_capheld) {
        int cap = corpus_capheld ? corpus_capheld * 2 : 64;
        corpus_owned *n = realloc(corpus_held, (size_t)cap * sizeof *n);
        if (!n) {
            fprintf(stderr, "corpus: out of host memory\n");
            exit(1);
        }
        corpus_held = n;
        corpus_capheld = cap;
    }
    corpus_held[corpus_nheld++] = (corpus_owned){kind, p};
}

static inline void corpus_destroy(const corpus_owned *o)
{
    switch (o->kind) {
    case CORPUS_TENSOR: CKDNN(cudnnDestroyTensorDescriptor(o->p)); break;
    case CORPUS_FILTER: CKDNN(cudnnDestroyFilterDescriptor(o->p)); break;
    case CORPUS_CONV: CKDNN(cudnnDestroyConvolutionDescriptor(o->p)); break;
    case CORPUS_ACT: CKDNN(cudnnDestroyActivationDescriptor(o->p)); break;
    case CORPUS_POOL: CKDNN(cudnnDestroyPoolingDescriptor(o->p)); break;
    case CORPUS_DROPOUT: CKDNN(cudnnDestroyDropoutDescriptor(o->p)); break;
    case CORPUS_DNN: CKDNN(cudnnDestroy(o->p)); break;
    case CORPUS_BLAS: CKBLAS(cublasDestroy(o->p)); break;
    case CORPUS_DEV: CK(cudaFree(o->p)); break;
    }
}

/* Releases one held object now (a descriptor made for one call). */
static inline void corpus_drop(void *p)
{
    for (int i = corpus_nheld - 1; i >= 0; i--)
        if (corpus_held[i].p == p) {
            corpus_destroy(&corpus_held[i]);
            corpus_held[i] = corpus_held[--corpus_nheld];
            return;
        }
}

static inline void corpus_release(void)
{
    /* device buffers before the handles that may still use them */
    for (int i = corpus_nheld - 1; i >= 0; i--)
        if (corpus_held[i].kind == CORPUS_DEV)
            corpus_destroy(&corpus_held[i]);
    for (int i = corpus_nheld - 1; i >= 0; i--)
        if (corpus_held[i].kind != CORPUS_DEV)
            corpus_destroy(&corpus_held[i]);
    free(corpus_held);
    corpus_held = NULL;
    corpus_nheld = corpus_capheld = 0;
}

static inline cudnnHandle_t corpus_dnn(void)
{
    cudnnHandle_t h;
    CKDNN(cudnnCreate(&h));
    corpus_own(CORPUS_DNN, h);
    return h;
}

static inline cublasHandle_t corpus_blas(void)
{
    cublasHandle_t h;
    CKBLAS(cublasCreate(&h));
    corpus_own(CORPUS_BLAS, h);
    return h;
}

/* ---- cuDNN descriptors ----------------------------------------------------------- */

static inline cudnnTensorDescriptor_t corpus_tensor(int n, int c, int h, int w)
{
    cudnnTensorDescriptor_t d;
    CKDNN(cudnnCreateTensorDescriptor(&d));
    corpus_own(CORPUS_TENSOR, d);
    CKDNN(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
    return d;
}

static inline cudnnFilterDescriptor_t corpus_filter(int k, int c, int h, int w)
{
    cudnnFilterDescriptor_t d;
    CKDNN(cudnnCreateFilterDescriptor(&d));
    corpus_own(CORPUS_FILTER, d);
    CKDNN(cudnnSetFilter4dDescriptor(d, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c, h, w));
    return d;
}

static inline cudnnConvolutionDescriptor_t corpus_conv(int pad, int stride)
{
    cudnnConvolutionDescriptor_t d;
    CKDNN(cudnnCreateConvolutionDescriptor(&d));
    corpus_own(CORPUS_CONV, d);
    CKDNN(cudnnSetConvolution2dDescriptor(d, pad, pad, stride, stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                          CUDNN_DATA_FLOAT));
    return d;
}

static inline cudnnActivationDescriptor_t corpus_relu(void)
{
    cudnnActivationDescriptor_t d;
    CKDNN(cudnnCreateActivationDescriptor(&d));
    corpus_own(CORPUS_ACT, d);
    CKDNN(cudnnSetActivationDescriptor(d, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0));
    return d;
}

/* A device buffer kept until the program ends. */
static inline void *corpus_dev(size_t bytes)
{
    void *p = NULL;
    CK(cudaMalloc(&p, bytes));
    corpus_own(CORPUS_DEV, p);
    return p;
}

static inline void corpus_upload_random(float *dev, size_t n, float scale)
{
    float *h = corpus_host_random(n, scale);
    CK(cudaMemcpy(dev, h, n * sizeof *h, cudaMemcpyHostToDevice));
    free(h);
}

#endif
