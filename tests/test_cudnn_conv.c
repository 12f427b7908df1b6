/*
 * test_cudnn_conv.c — convolution through the cuDNN API on the simulated
 * device: forward, backward data, backward filter, backward bias and the
 * fused bias-activation, each against a direct-loop reference with double
 * accumulation written here, on fixed and random problems (strides, padding,
 * dilation, groups, odd sizes, both convolution modes, both filter layouts,
 * strided tensors, alpha/beta != (1, 0)); every algorithm of an operation
 * against every other (bit-identical); workspace sizes against what the calls
 * require; the heuristic and the searches; argument errors; and residency of
 * the workspace.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "tests/sim_child.h"
#include "tests/test_cudnn_util.h"

#define TOL 1e-5

static cudnnHandle_t handle;

/* ---- a convolution problem ------------------------------------------------ */

typedef struct {
    int nsp;                 /* 2 or 3 */
    int n, c, k, groups;
    int in[3], f[3], pad[3], str[3], dil[3];
    cudnnConvolutionMode_t mode;
    cudnnTensorFormat_t wfmt;
    int xlayout, ylayout;
    float alpha, beta;
} conv_case;

typedef struct {
    conv_case cc;
    int cg, kg, out[3];
    ttensor x, y;            /* y doubles as dy */
    size_t wn;               /* filter elements */
    float *w, *wdev;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
} conv_setup;

/* Spatial arrays are kept as 3-D; a 2-D problem has a unit depth. */
static void tensor_dims(const conv_case *cc, int n, int c, const int *sp, int *dim)
{
    dim[0] = n;
    dim[1] = c;
    for (int i = 0; i < cc->nsp; i++)
        dim[2 + i] = sp[3 - cc->nsp + i];
}

/* Offset of filter element (k, c, t, u, v) in the host filter array. */
static size_t w_off(const conv_setup *s, int k, int c, int t, int u, int v)
{
    const int *f = s->cc.f;
    if (s->cc.wfmt == CUDNN_TENSOR_NHWC)
        return ((((size_t)k * f[0] + t) * f[1] + u) * f[2] + v) * s->cg + c;
    return ((((size_t)k * s->cg + c) * f[0] + t) * f[1] + u) * f[2] + v;
}

static size_t x_off(const conv_setup *s, const ttensor *t, int n, int c, int d, int h, int w)
{
    int idx[5] = {n, c};
    int sp[3] = {d, h, w};
    for (int i = 0; i < s->cc.nsp; i++)
        idx[2 + i] = sp[3 - s->cc.nsp + i];
    return tt_off(t, idx);
}

static void setup(conv_setup *s, const conv_case *cc)
{
    memset(s, 0, sizeof *s);
    s->cc = *cc;
    s->cg = cc->c / cc->groups;
    s->kg = cc->k / cc->groups;
    for (int i = 0; i < 3; i++)
        s->out[i] = 1 + (cc->in[i] + 2 * cc->pad[i] - ((cc->f[i] - 1) * cc->dil[i] + 1)) / cc->str[i];
    int nb = cc->nsp + 2, dim[5];
    tensor_dims(cc, cc->n, cc->c, cc->in, dim);
    tt_init(&s->x, nb, dim, cc->xlayout);
    tensor_dims(cc, cc->n, cc->k, s->out, dim);
    tt_init(&s->y, nb, dim, cc->ylayout);
    s->wn = (size_t)cc->k * s->cg * cc->f[0] * cc->f[1] * cc->f[2];
    s->w = malloc(s->wn * sizeof(float));
    assert_int_equal(cudaMalloc((void **)&s->wdev, s->wn * sizeof(float)), cudaSuccess);
    CHECK_DNN(cudnnCreateFilterDescriptor(&s->wd));
    int fdim[5];
    tensor_dims(cc, cc->k, s->cg, cc->f, fdim);
    CHECK_DNN(cudnnSetFilterNdDescriptor(s->wd, CUDNN_DATA_FLOAT, cc->wfmt, nb, fdim));
    CHECK_DNN(cudnnCreateConvolutionDescriptor(&s->cd));
    int pad[3], str[3], dil[3];
    for (int i = 0; i < cc->nsp; i++) {
        pad[i] = cc->pad[3 - cc->nsp + i];
        str[i] = cc->str[3 - cc->nsp + i];
        dil[i] = cc->dil[3 - cc->nsp + i];
    }
    CHECK_DNN(cudnnSetConvolutionNdDescriptor(s->cd, cc->nsp, pad, str, dil, cc->mode, CUDNN_DATA_FLOAT));
    CHECK_DNN(cudnnSetConvolutionGroupCount(s->cd, cc->groups));
    /* The library's idea of the output shape must match the formula. */
    int got[5];
    CHECK_DNN(cudnnGetConvolutionNdForwardOutputDim(s->cd, s->x.desc, s->wd, nb, got));
    for (int i = 0; i < nb; i++)
        assert_int_equal(got[i], dim[i]);
}

static void teardown_setup(conv_setup *s)
{
    tt_free(&s->x);
    tt_free(&s->y);
    free(s->w);
    cudaFree(s->wdev);
    cudnnDestroyFilterDescriptor(s->wd);
    cudnnDestroyConvolutionDescriptor(s->cd);
}

/* Visits every (image, output channel, output position, input channel, tap)
 * whose input position lies inside the image. */
typedef void (*visit_fn)(conv_setup *s, void *ctx, int n, int k, const int *o, int c, const int *tap,
                         const int *i);

static void visit(conv_setup *s, visit_fn fn, void *ctx)
{
    const conv_case *cc = &s->cc;
    int o[3], t[3], i[3];
    for (int n = 0; n < cc->n; n++)
        for (int k = 0; k < cc->k; k++)
            for (o[0] = 0; o[0] < s->out[0]; o[0]++)
                for (o[1] = 0; o[1] < s->out[1]; o[1]++)
                    for (o[2] = 0; o[2] < s->out[2]; o[2]++)
                        for (int c = 0; c < s->cg; c++)
                            for (t[0] = 0; t[0] < cc->f[0]; t[0]++)
                                for (t[1] = 0; t[1] < cc->f[1]; t[1]++)
                                    for (t[2] = 0; t[2] < cc->f[2]; t[2]++) {
                                        int inside = 1;
                                        for (int d = 0; d < 3; d++) {
                                            i[d] = o[d] * cc->str[d] - cc->pad[d] + t[d] * cc->dil[d];
                                            inside &= i[d] >= 0 && i[d] < cc->in[d];
                                        }
                                        if (inside)
                                            fn(s, ctx, n, k, o, c, t, i);
                                    }
}

/* The filter tap used at window position t: mirrored in CUDNN_CONVOLUTION mode. */
static size_t tap_w(const conv_setup *s, int k, int c, const int *t)
{
    int tt[3];
    for (int d = 0; d < 3; d++)
        tt[d] = s->cc.mode == CUDNN_CONVOLUTION ? s->cc.f[d] - 1 - t[d] : t[d];
    return w_off(s, k, c, tt[0], tt[1], tt[2]);
}

struct acc_ctx {
    double *acc;
    const float *x, *dy;
};

static void fwd_visit(conv_setup *s, void *v, int n, int k, const int *o, int c, const int *t, const int *i)
{
    struct acc_ctx *a = v;
    int g = k / s->kg;
    a->acc[x_off(s, &s->y, n, k, o[0], o[1], o[2])] +=
        (double)s->x.data[x_off(s, &s->x, n, g * s->cg + c, i[0], i[1], i[2])] * s->w[tap_w(s, k, c, t)];
}

static void bwd_data_visit(conv_setup *s, void *v, int n, int k, const int *o, int c, const int *t, const int *i)
{
    struct acc_ctx *a = v;
    int g = k / s->kg;
    a->acc[x_off(s, &s->x, n, g * s->cg + c, i[0], i[1], i[2])] +=
        (double)a->dy[x_off(s, &s->y, n, k, o[0], o[1], o[2])] * s->w[tap_w(s, k, c, t)];
}

static void bwd_filter_visit(conv_setup *s, void *v, int n, int k, const int *o, int c, const int *t, const int *i)
{
    struct acc_ctx *a = v;
    int g = k / s->kg;
    a->acc[tap_w(s, k, c, t)] += (double)a->dy[x_off(s, &s->y, n, k, o[0], o[1], o[2])] *
                                 a->x[x_off(s, &s->x, n, g * s->cg + c, i[0], i[1], i[2])];
}

/* ref[i] = alpha * acc[i] + beta * old[i] over the elements of t. */
static double *blend_ref(const ttensor *t, const double *acc, const float *old, float alpha, float beta)
{
    double *ref = calloc(t->span, sizeof *ref);
    for (size_t i = 0; i < tt_elems(t); i++) {
        size_t o = tt_nth(t, i);
        ref[o] = alpha * acc[o] + beta * (double)old[o];
    }
    return ref;
}

static void *alloc_ws(size_t bytes)
{
    void *p = NULL;
    if (bytes)
        assert_int_equal(cudaMalloc(&p, bytes), cudaSuccess);
    return p;
}

/* Runs every algorithm of every convolution operation on one problem and
 * checks each against the reference and against the other algorithms.
 * Returns a bit mask of the forward algorithms that were supported. */
static unsigned run_case(const conv_case *cc)
{
    conv_setup s;
    setup(&s, cc);
    float al = cc->alpha, be = cc->beta;
    unsigned fwd_supported = 0;

    /* ---- forward ---- */
    tt_random(&s.x, -1, 1);
    tt_random(&s.y, -1, 1);
    for (size_t i = 0; i < s.wn; i++)
        s.w[i] = test_uniform(-1, 1);
    tt_upload(&s.x);
    cudaMemcpy(s.wdev, s.w, s.wn * sizeof(float), cudaMemcpyHostToDevice);
    double *acc = calloc(s.y.span, sizeof *acc);
    struct acc_ctx a = {acc, NULL, NULL};
    visit(&s, fwd_visit, &a);
    double *ref = blend_ref(&s.y, acc, s.y.data, al, be);
    float *got = malloc(s.y.span * sizeof *got), *first = NULL;
    for (int algo = 0; algo < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; algo++) {
        size_t ws = 0;
        cudnnStatus_t st =
            cudnnGetConvolutionForwardWorkspaceSize(handle, s.x.desc, s.wd, s.cd, s.y.desc, algo, &ws);
        if (st == CUDNN_STATUS_NOT_SUPPORTED) {
            void *p = alloc_ws(1 << 20);
            assert_int_equal(cudnnConvolutionForward(handle, &al, s.x.desc, s.x.dev, s.wd, s.wdev, s.cd, algo, p,
                                                     1 << 20, &be, s.y.desc, s.y.dev),
                             CUDNN_STATUS_NOT_SUPPORTED);
            cudaFree(p);
            continue;
        }
        CHECK_DNN(st);
        fwd_supported |= 1u << algo;
        void *p = alloc_ws(ws);
        tt_upload(&s.y);
        CHECK_DNN(cudnnConvolutionForward(handle, &al, s.x.desc, s.x.dev, s.wd, s.wdev, s.cd, algo, p, ws, &be,
                                          s.y.desc, s.y.dev));
        cudaFree(p);
        tt_download(&s.y, got);
        double err = rel_error(&s.y, got, ref);
        if (err >= TOL)
            fail_msg("forward algo %d: relative error %g", algo, err);
        assert_true(gaps_untouched(&s.y, got, s.y.data));
        if (!first) {
            first = malloc(s.y.span * sizeof *first);
            memcpy(first, got, s.y.span * sizeof *first);
        } else if (memcmp(first, got, s.y.span * sizeof *got)) {
            fail_msg("forward algo %d differs from the first supported algorithm", algo);
        }
    }
    assert_non_null(first);
    free(first), free(got), free(ref), free(acc);

    /* ---- backward data: dx (x's layout) from dy (y's layout) ---- */
    float *dy = malloc(s.y.span * sizeof *dy);
    for (size_t i = 0; i < s.y.span; i++)
        dy[i] = test_uniform(-1, 1);
    cudaMemcpy(s.y.dev, dy, s.y.span * sizeof(float), cudaMemcpyHostToDevice);
    tt_random(&s.x, -1, 1); /* old dx */
    acc = calloc(s.x.span, sizeof *acc);
    a = (struct acc_ctx){acc, NULL, dy};
    visit(&s, bwd_data_visit, &a);
    ref = blend_ref(&s.x, acc, s.x.data, al, be);
    got = malloc(s.x.span * sizeof *got);
    first = NULL;
    for (int algo = 0; algo < CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT; algo++) {
        size_t ws = 0;
        cudnnStatus_t st =
            cudnnGetConvolutionBackwardDataWorkspaceSize(handle, s.wd, s.y.desc, s.cd, s.x.desc, algo, &ws);
        if (st == CUDNN_STATUS_NOT_SUPPORTED)
            continue;
        CHECK_DNN(st);
        void *p = alloc_ws(ws);
        tt_upload(&s.x);
        CHECK_DNN(cudnnConvolutionBackwardData(handle, &al, s.wd, s.wdev, s.y.desc, s.y.dev, s.cd, algo, p, ws,
                                               &be, s.x.desc, s.x.dev));
        cudaFree(p);
        tt_download(&s.x, got);
        double err = rel_error(&s.x, got, ref);
        if (err >= TOL)
            fail_msg("backward data algo %d: relative error %g", algo, err);
        assert_true(gaps_untouched(&s.x, got, s.x.data));
        if (!first) {
            first = malloc(s.x.span * sizeof *first);
            memcpy(first, got, s.x.span * sizeof *first);
        } else if (memcmp(first, got, s.x.span * sizeof *got)) {
            fail_msg("backward data algo %d differs from the first supported algorithm", algo);
        }
    }
    assert_non_null(first);
    free(first), free(got), free(ref), free(acc);

    /* ---- backward filter: dw from x and dy ---- */
    tt_random(&s.x, -1, 1);
    tt_upload(&s.x);
    float *old_w = malloc(s.wn * sizeof *old_w);
    for (size_t i = 0; i < s.wn; i++)
        old_w[i] = test_uniform(-1, 1);
    acc = calloc(s.wn, sizeof *acc);
    a = (struct acc_ctx){acc, s.x.data, dy};
    visit(&s, bwd_filter_visit, &a);
    ref = malloc(s.wn * sizeof *ref);
    for (size_t i = 0; i < s.wn; i++)
        ref[i] = al * acc[i] + be * (double)old_w[i];
    got = malloc(s.wn * sizeof *got);
    first = NULL;
    for (int algo = 0; algo < CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT; algo++) {
        size_t ws = 0;
        cudnnStatus_t st =
            cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, s.x.desc, s.y.desc, s.cd, s.wd, algo, &ws);
        if (st == CUDNN_STATUS_NOT_SUPPORTED)
            continue;
        CHECK_DNN(st);
        void *p = alloc_ws(ws);
        cudaMemcpy(s.wdev, old_w, s.wn * sizeof(float), cudaMemcpyHostToDevice);
        CHECK_DNN(cudnnConvolutionBackwardFilter(handle, &al, s.x.desc, s.x.dev, s.y.desc, s.y.dev, s.cd, algo, p,
                                                 ws, &be, s.wd, s.wdev));
        cudaFree(p);
        cudaMemcpy(got, s.wdev, s.wn * sizeof(float), cudaMemcpyDeviceToHost);
        double num = 0, den = 0;
        for (size_t i = 0; i < s.wn; i++) {
            num = fmax(num, fabs(got[i] - ref[i]));
            den = fmax(den, fabs(ref[i]));
        }
        if (num / den >= TOL)
            fail_msg("backward filter algo %d: relative error %g", algo, num / den);
        if (!first) {
            first = malloc(s.wn * sizeof *first);
            memcpy(first, got, s.wn * sizeof *first);
        } else if (memcmp(first, got, s.wn * sizeof *got)) {
            fail_msg("backward filter algo %d differs from the first supported algorithm", algo);
        }
    }
    assert_non_null(first);
    free(first), free(got), free(ref), free(acc), free(old_w), free(dy);
    teardown_setup(&s);
    return fwd_supported;
}

/* ---- fixed problems ---------------------------------------------------------- */

static conv_case base_case(void)
{
    conv_case c = {.nsp = 2, .n = 2, .c = 4, .k = 6, .groups = 1, .in = {1, 7, 9}, .f = {1, 3, 3},
                   .pad = {0, 1, 1}, .str = {1, 1, 1}, .dil = {1, 1, 1}, .mode = CUDNN_CROSS_CORRELATION,
                   .wfmt = CUDNN_TENSOR_NCHW, .alpha = 0.7f, .beta = 0.3f};
    return c;
}

/* 3x3, stride 1, no dilation: every algorithm but DIRECT applies. */
static void test_conv_3x3_all_algorithms(void **state)
{
    (void)state;
    test_seed(1);
    conv_case c = base_case();
    unsigned sup = run_case(&c);
    assert_int_equal(sup, 0xffu & ~(1u << CUDNN_CONVOLUTION_FWD_ALGO_DIRECT));
}

/* 5x5 true convolution, groups, NHWC filter and channels-innermost tensors. */
static void test_conv_5x5_groups_nhwc(void **state)
{
    (void)state;
    test_seed(2);
    conv_case c = base_case();
    c.c = 6, c.k = 4, c.groups = 2, c.in[1] = 8, c.in[2] = 7, c.f[1] = c.f[2] = 5, c.pad[1] = c.pad[2] = 2;
    c.mode = CUDNN_CONVOLUTION, c.wfmt = CUDNN_TENSOR_NHWC, c.xlayout = 1, c.ylayout = 2;
    c.alpha = -1.3f, c.beta = 0.5f;
    unsigned sup = run_case(&c);
    assert_true(sup & (1u << CUDNN_CONVOLUTION_FWD_ALGO_FFT));
    assert_true(sup & (1u << CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED));
    assert_false(sup & (1u << CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD));
}

/* Stride and dilation rule out the FFT and Winograd families. */
static void test_conv_strided_dilated(void **state)
{
    (void)state;
    test_seed(3);
    conv_case c = base_case();
    c.in[1] = 11, c.in[2] = 10, c.str[1] = 2, c.str[2] = 3, c.dil[1] = 2, c.dil[2] = 1, c.pad[1] = 2;
    c.beta = 0.0f;
    unsigned sup = run_case(&c);
    assert_int_equal(sup, (1u << CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM) |
                              (1u << CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) |
                              (1u << CUDNN_CONVOLUTION_FWD_ALGO_GEMM));
}

static void test_conv_1x1_groups(void **state)
{
    (void)state;
    test_seed(4);
    conv_case c = base_case();
    c.c = 6, c.k = 9, c.groups = 3, c.f[1] = c.f[2] = 1, c.pad[1] = c.pad[2] = 0, c.n = 3;
    c.xlayout = 2, c.alpha = 2.0f, c.beta = -1.0f;
    run_case(&c);
}

static void test_conv_3d(void **state)
{
    (void)state;
    test_seed(5);
    conv_case c = {.nsp = 3, .n = 2, .c = 3, .k = 4, .groups = 1, .in = {5, 6, 4}, .f = {3, 2, 3},
                   .pad = {1, 0, 1}, .str = {1, 2, 1}, .dil = {1, 1, 2}, .mode = CUDNN_CONVOLUTION,
                   .wfmt = CUDNN_TENSOR_NCHW, .alpha = 1.0f, .beta = 0.25f};
    run_case(&c);
}

/* Random problems: every parameter drawn, sizes kept small for speed. */
static void test_conv_random(void **state)
{
    (void)state;
    test_seed(6);
    for (int it = 0; it < 14; it++) {
        conv_case c = {.nsp = 2, .in = {1, 1, 1}, .f = {1, 1, 1}, .str = {1, 1, 1}, .dil = {1, 1, 1}};
        c.groups = test_int(1, 3);
        c.c = c.groups * test_int(1, 3);
        c.k = c.groups * test_int(1, 3);
        c.n = test_int(1, 3);
        for (int d = 1; d < 3; d++) {
            c.f[d] = test_int(1, 5);
            c.dil[d] = test_int(1, 2);
            c.str[d] = test_int(1, 3);
            c.pad[d] = test_int(0, 2);
            int extent = (c.f[d] - 1) * c.dil[d] + 1;
            int lo = extent - 2 * c.pad[d] > 1 ? extent - 2 * c.pad[d] : 1;
            c.in[d] = test_int(lo, lo + 7);
        }
        c.mode = test_int(0, 1) ? CUDNN_CONVOLUTION : CUDNN_CROSS_CORRELATION;
        c.wfmt = test_int(0, 1) ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
        c.xlayout = test_int(0, 2);
        c.ylayout = test_int(0, 2);
        c.alpha = test_uniform(-2, 2);
        c.beta = test_int(0, 2) ? test_uniform(-1, 1) : 0.0f;
        run_case(&c);
    }
}

/* ---- backward bias and fused bias-activation ---------------------------------- */

static void test_backward_bias(void **state)
{
    (void)state;
    test_seed(7);
    int dim[4] = {3, 5, 4, 7}, bdim[4] = {1, 5, 1, 1};
    ttensor dy, db;
    tt_init(&dy, 4, dim, 2);
    tt_init(&db, 4, bdim, 0);
    tt_random(&dy, -1, 1);
    tt_random(&db, -1, 1);
    tt_upload(&dy);
    tt_upload(&db);
    float al = 0.5f, be = 2.0f;
    CHECK_DNN(cudnnConvolutionBackwardBias(handle, &al, dy.desc, dy.dev, &be, db.desc, db.dev));
    double ref[5];
    for (int c = 0; c < 5; c++) {
        double s = 0;
        for (int n = 0; n < 3; n++)
            for (int h = 0; h < 4; h++)
                for (int w = 0; w < 7; w++)
                    s += dy.data[tt_off(&dy, (int[]){n, c, h, w})];
        ref[c] = al * s + be * db.data[c];
    }
    float got[5];
    cudaMemcpy(got, db.dev, sizeof got, cudaMemcpyDeviceToHost);
    for (int c = 0; c < 5; c++)
        assert_true(fabs(got[c] - ref[c]) <= TOL * fabs(ref[c]) + 1e-6);
    tt_free(&dy);
    tt_free(&db);
}

static void test_bias_activation(void **state)
{
    (void)state;
    test_seed(8);
    conv_case cc = base_case();
    conv_setup s;
    setup(&s, &cc);
    tt_random(&s.x, -1, 1);
    tt_random(&s.y, -1, 1); /* z, then overwritten in place */
    for (size_t i = 0; i < s.wn; i++)
        s.w[i] = test_uniform(-1, 1);
    tt_upload(&s.x);
    tt_upload(&s.y);
    cudaMemcpy(s.wdev, s.w, s.wn * sizeof(float), cudaMemcpyHostToDevice);
    int bdim[4] = {1, cc.k, 1, 1};
    ttensor b;
    tt_init(&b, 4, bdim, 0);
    tt_random(&b, -1, 1);
    tt_upload(&b);
    cudnnActivationDescriptor_t act;
    CHECK_DNN(cudnnCreateActivationDescriptor(&act));
    CHECK_DNN(cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
    double *acc = calloc(s.y.span, sizeof *acc);
    struct acc_ctx a = {acc, NULL, NULL};
    visit(&s, fwd_visit, &a);
    float a1 = 0.8f, a2 = 0.6f;
    double *ref = calloc(s.y.span, sizeof *ref);
    for (size_t i = 0; i < tt_elems(&s.y); i++) {
        size_t o = tt_nth(&s.y, i);
        int k = (int)((i / (size_t)(s.y.dim[2] * s.y.dim[3])) % (size_t)cc.k);
        double v = a1 * acc[o] + a2 * s.y.data[o] + b.data[k];
        ref[o] = v > 0 ? v : 0;
    }
    /* z aliases y, as frameworks use it for residual connections. */
    CHECK_DNN(cudnnConvolutionBiasActivationForward(handle, &a1, s.x.desc, s.x.dev, s.wd, s.wdev, s.cd,
                                                    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0, &a2,
                                                    s.y.desc, s.y.dev, b.desc, b.dev, act, s.y.desc, s.y.dev));
    float *got = malloc(s.y.span * sizeof *got);
    tt_download(&s.y, got);
    assert_true(rel_error(&s.y, got, ref) < TOL);
    /* IDENTITY is documented for IMPLICIT_PRECOMP_GEMM only. */
    CHECK_DNN(cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_IDENTITY, CUDNN_NOT_PROPAGATE_NAN, 0.0));
    assert_int_equal(cudnnConvolutionBiasActivationForward(handle, &a1, s.x.desc, s.x.dev, s.wd, s.wdev, s.cd,
                                                           CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0, &a2,
                                                           s.y.desc, s.y.dev, b.desc, b.dev, act, s.y.desc, s.y.dev),
                     CUDNN_STATUS_NOT_SUPPORTED);
    free(got), free(ref), free(acc);
    cudnnDestroyActivationDescriptor(act);
    tt_free(&b);
    teardown_setup(&s);
}

/* ---- workspace ------------------------------------------------------------------ */

static void test_workspace_requirements(void **state)
{
    (void)state;
    conv_case cc = base_case();
    conv_setup s;
    setup(&s, &cc);
    float al = 1, be = 0;
    int needs_ws = 0;
    for (int algo = 0; algo < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; algo++) {
        size_t ws;
        if (cudnnGetConvolutionForwardWorkspaceSize(handle, s.x.desc, s.wd, s.cd, s.y.desc, algo, &ws))
            continue;
        void *p = alloc_ws(ws);
        CHECK_DNN(cudnnConvolutionForward(handle, &al, s.x.desc, s.x.dev, s.wd, s.wdev, s.cd, algo, p, ws, &be,
                                          s.y.desc, s.y.dev));
        if (ws > 0) {
            needs_ws++;
            assert_int_equal(cudnnConvolutionForward(handle, &al, s.x.desc, s.x.dev, s.wd, s.wdev, s.cd, algo, p,
                                                     ws - 1, &be, s.y.desc, s.y.dev),
                             CUDNN_STATUS_BAD_PARAM);
            assert_int_equal(cudnnConvolutionForward(handle, &al, s.x.desc, s.x.dev, s.wd, s.wdev, s.cd, algo,
                                                     NULL, 0, &be, s.y.desc, s.y.dev),
                             CUDNN_STATUS_BAD_PARAM);
        }
        cudaFree(p);
    }
    assert_true(needs_ws >= 5); /* precomp, GEMM, FFT, FFT tiling, both Winograds */
    for (int algo = 0; algo < CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT; algo++) {
        size_t ws;
        if (cudnnGetConvolutionBackwardDataWorkspaceSize(handle, s.wd, s.y.desc, s.cd, s.x.desc, algo, &ws))
            continue;
        if (ws > 0) {
            void *p = alloc_ws(ws);
            assert_int_equal(cudnnConvolutionBackwardData(handle, &al, s.wd, s.wdev, s.y.desc, s.y.dev, s.cd, algo,
                                                          p, ws - 1, &be, s.x.desc, s.x.dev),
                             CUDNN_STATUS_BAD_PARAM);
            CHECK_DNN(cudnnConvolutionBackwardData(handle, &al, s.wd, s.wdev, s.y.desc, s.y.dev, s.cd, algo, p, ws,
                                                   &be, s.x.desc, s.x.dev));
            cudaFree(p);
        }
    }
    for (int algo = 0; algo < CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT; algo++) {
        size_t ws;
        if (cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, s.x.desc, s.y.desc, s.cd, s.wd, algo, &ws))
            continue;
        if (ws > 0) {
            void *p = alloc_ws(ws);
            assert_int_equal(cudnnConvolutionBackwardFilter(handle, &al, s.x.desc, s.x.dev, s.y.desc, s.y.dev, s.cd,
                                                            algo, p, ws - 1, &be, s.wd, s.wdev),
                             CUDNN_STATUS_BAD_PARAM);
            CHECK_DNN(cudnnConvolutionBackwardFilter(handle, &al, s.x.desc, s.x.dev, s.y.desc, s.y.dev, s.cd, algo,
                                                     p, ws, &be, s.wd, s.wdev));
            cudaFree(p);
        }
    }
    /* The implicit-GEMM family runs with no workspace at all. */
    size_t ws = 1;
    CHECK_DNN(cudnnGetConvolutionForwardWorkspaceSize(handle, s.x.desc, s.wd, s.cd, s.y.desc,
                                                      CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, &ws));
    assert_int_equal(ws, 0);
    CHECK_DNN(cudnnConvolutionForward(handle, &al, s.x.desc, s.x.dev, s.wd, s.wdev, s.cd,
                                      CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0, &be, s.y.desc, s.y.dev));
    CHECK_DNN(cudnnConvolutionBackwardData(handle, &al, s.wd, s.wdev, s.y.desc, s.y.dev, s.cd,
                                           CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, NULL, 0, &be, s.x.desc, s.x.dev));
    CHECK_DNN(cudnnConvolutionBackwardFilter(handle, &al, s.x.desc, s.x.dev, s.y.desc, s.y.dev, s.cd,
                                             CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, NULL, 0, &be, s.wd, s.wdev));
    /* Never-supported algorithms. */
    assert_int_equal(cudnnGetConvolutionForwardWorkspaceSize(handle, s.x.desc, s.wd, s.cd, s.y.desc,
                                                             CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, &ws),
                     CUDNN_STATUS_NOT_SUPPORTED);
    assert_int_equal(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, s.x.desc, s.y.desc, s.cd, s.wd,
                                                                    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD, &ws),
                     CUDNN_STATUS_NOT_SUPPORTED);
    assert_int_equal(cudnnConvolutionForward(handle, &al, s.x.desc, s.x.dev, s.wd, s.wdev, s.cd,
                                             (cudnnConvolutionFwdAlgo_t)CUDNN_CONVOLUTION_FWD_ALGO_COUNT, NULL, 0, &be,
                                             s.y.desc, s.y.dev),
                     CUDNN_STATUS_BAD_PARAM);
    teardown_setup(&s);
}

/* Workspaces grow with the problem the way each family's buffers do. */
static void test_workspace_scaling(void **state)
{
    (void)state;
    conv_case cc = base_case();
    size_t ws[2][CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    for (int v = 0; v < 2; v++) {
        cc.n = v ? 4 : 2;
        conv_setup s;
        setup(&s, &cc);
        for (int algo = 0; algo < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; algo++)
            if (cudnnGetConvolutionForwardWorkspaceSize(handle, s.x.desc, s.wd, s.cd, s.y.desc, algo, &ws[v][algo]))
                ws[v][algo] = 0;
        teardown_setup(&s);
    }
    /* im2col works image by image; the transform buffers cover the batch;
     * precomputed indices and the fused Winograd's filters depend on neither. */
    assert_int_equal(ws[1][CUDNN_CONVOLUTION_FWD_ALGO_GEMM], ws[0][CUDNN_CONVOLUTION_FWD_ALGO_GEMM]);
    assert_int_equal(ws[1][CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM],
                     ws[0][CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM]);
    assert_int_equal(ws[1][CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD], ws[0][CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD]);
    assert_true(ws[1][CUDNN_CONVOLUTION_FWD_ALGO_FFT] > ws[0][CUDNN_CONVOLUTION_FWD_ALGO_FFT]);
    assert_true(ws[1][CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED] >
                ws[0][CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED]);
    assert_true(ws[0][CUDNN_CONVOLUTION_FWD_ALGO_GEMM] > 0);
    assert_int_equal(ws[0][CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM], 0);
    /* GEMM's column matrix is one image's patches: C*R*S x P floats. */
    assert_int_equal(ws[0][CUDNN_CONVOLUTION_FWD_ALGO_GEMM], (size_t)4 * 9 * 7 * 9 * sizeof(float));
}

/* ---- heuristic and searches -------------------------------------------------------- */

static void test_heuristic_and_find(void **state)
{
    (void)state;
    conv_case cc = base_case();
    conv_setup s;
    setup(&s, &cc);
    int max = 0, n = 0;
    CHECK_DNN(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &max));
    assert_int_equal(max, CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    CHECK_DNN(cudnnGetConvolutionForwardAlgorithm_v7(handle, s.x.desc, s.wd, s.cd, s.y.desc, max, &n, perf));
    assert_int_equal(n, max);
    int seen = 0, failed_seen = 0;
    for (int i = 0; i < n; i++) {
        size_t ws;
        cudnnStatus_t st = cudnnGetConvolutionForwardWorkspaceSize(handle, s.x.desc, s.wd, s.cd, s.y.desc,
                                                                   perf[i].algo, &ws);
        assert_int_equal(perf[i].status, st);
        if (st == CUDNN_STATUS_SUCCESS) {
            assert_false(failed_seen); /* supported ones come first */
            assert_int_equal(perf[i].memory, ws);
        } else {
            failed_seen = 1;
        }
        seen |= 1 << perf[i].algo;
    }
    assert_int_equal(seen, (1 << max) - 1);

    /* Find: every supported algorithm timed, fastest first, scratch freed. */
    size_t free0, free1, total;
    cudaMemGetInfo(&free0, &total);
    CHECK_DNN(cudnnFindConvolutionForwardAlgorithm(handle, s.x.desc, s.wd, s.cd, s.y.desc, max, &n, perf));
    cudaMemGetInfo(&free1, &total);
    assert_int_equal(free0, free1);
    assert_int_equal(n, max);
    assert_int_equal(perf[0].status, CUDNN_STATUS_SUCCESS);
    for (int i = 1; i < n; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS) {
            assert_true(perf[i].time >= perf[i - 1].time);
            assert_true(perf[i].time > 0);
        }

    /* A single result is the fastest. */
    cudnnConvolutionFwdAlgoPerf_t best;
    CHECK_DNN(cudnnFindConvolutionForwardAlgorithm(handle, s.x.desc, s.wd, s.cd, s.y.desc, 1, &n, &best));
    assert_int_equal(n, 1);
    assert_int_equal(best.algo, perf[0].algo);

    /* FindEx within a workspace that only the small-workspace algorithms fit. */
    size_t limit;
    CHECK_DNN(cudnnGetConvolutionForwardWorkspaceSize(handle, s.x.desc, s.wd, s.cd, s.y.desc,
                                                      CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, &limit));
    void *ws = alloc_ws(limit);
    CHECK_DNN(cudnnFindConvolutionForwardAlgorithmEx(handle, s.x.desc, s.x.dev, s.wd, s.wdev, s.cd, s.y.desc,
                                                     s.y.dev, max, &n, perf, ws, limit));
    int ok = 0;
    for (int i = 0; i < n; i++) {
        size_t need;
        if (cudnnGetConvolutionForwardWorkspaceSize(handle, s.x.desc, s.wd, s.cd, s.y.desc, perf[i].algo, &need))
            continue;
        assert_int_equal(perf[i].status, need <= limit ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED);
        ok += need <= limit;
    }
    assert_true(ok >= 2);
    cudaFree(ws);

    /* Backward searches. */
    cudnnConvolutionBwdDataAlgoPerf_t bd[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    CHECK_DNN(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, &max));
    assert_int_equal(max, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
    CHECK_DNN(cudnnFindConvolutionBackwardDataAlgorithm(handle, s.wd, s.y.desc, s.cd, s.x.desc, max, &n, bd));
    assert_int_equal(n, max);
    assert_int_equal(bd[0].status, CUDNN_STATUS_SUCCESS);
    CHECK_DNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, s.wd, s.y.desc, s.cd, s.x.desc, max, &n, bd));
    assert_int_equal(bd[0].status, CUDNN_STATUS_SUCCESS);
    CHECK_DNN(cudnnFindConvolutionBackwardDataAlgorithmEx(handle, s.wd, s.wdev, s.y.desc, s.y.dev, s.cd, s.x.desc,
                                                          s.x.dev, max, &n, bd, NULL, 0));
    for (int i = 0; i < n; i++)
        if (bd[i].status == CUDNN_STATUS_SUCCESS)
            assert_int_equal(bd[i].memory, 0);
    cudnnConvolutionBwdFilterAlgoPerf_t bf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    CHECK_DNN(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle, &max));
    assert_int_equal(max, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
    CHECK_DNN(cudnnFindConvolutionBackwardFilterAlgorithm(handle, s.x.desc, s.y.desc, s.cd, s.wd, max, &n, bf));
    assert_int_equal(bf[0].status, CUDNN_STATUS_SUCCESS);
    for (int i = 0; i < n; i++)
        if (bf[i].algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 || bf[i].algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3)
            assert_int_equal(bf[i].determinism, CUDNN_NON_DETERMINISTIC);
    CHECK_DNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, s.x.desc, s.y.desc, s.cd, s.wd, max, &n, bf));
    CHECK_DNN(cudnnFindConvolutionBackwardFilterAlgorithmEx(handle, s.x.desc, s.x.dev, s.y.desc, s.y.dev, s.cd, s.wd,
                                                            s.wdev, max, &n, bf, NULL, 0));
    teardown_setup(&s);
}

/* ---- errors ------------------------------------------------------------------------ */

static void test_argument_errors(void **state)
{
    (void)state;
    conv_case cc = base_case();
    conv_setup s;
    setup(&s, &cc);
    float al = 1, be = 0;
    int fwd = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    /* NULL pointers */
    assert_int_equal(cudnnConvolutionForward(handle, NULL, s.x.desc, s.x.dev, s.wd, s.wdev, s.cd, fwd, NULL, 0, &be,
                                             s.y.desc, s.y.dev),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnConvolutionForward(NULL, &al, s.x.desc, s.x.dev, s.wd, s.wdev, s.cd, fwd, NULL, 0, &be,
                                             s.y.desc, s.y.dev),
                     CUDNN_STATUS_BAD_PARAM);
    /* an output of the wrong shape */
    cudnnTensorDescriptor_t bad;
    CHECK_DNN(cudnnCreateTensorDescriptor(&bad));
    CHECK_DNN(cudnnSetTensor4dDescriptor(bad, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 6, 7, 8));
    assert_int_equal(cudnnConvolutionForward(handle, &al, s.x.desc, s.x.dev, s.wd, s.wdev, s.cd, fwd, NULL, 0, &be,
                                             bad, s.y.dev),
                     CUDNN_STATUS_BAD_PARAM);
    /* channels that do not match the filter x groups */
    CHECK_DNN(cudnnSetConvolutionGroupCount(s.cd, 2));
    int out[4];
    assert_int_equal(cudnnGetConvolutionNdForwardOutputDim(s.cd, s.x.desc, s.wd, 4, out), CUDNN_STATUS_BAD_PARAM);
    CHECK_DNN(cudnnSetConvolutionGroupCount(s.cd, 1));
    /* descriptor setters refuse bad values */
    assert_int_equal(cudnnSetConvolution2dDescriptor(s.cd, -1, 0, 1, 1, 1, 1, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetConvolution2dDescriptor(s.cd, 0, 0, 0, 1, 1, 1, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetConvolutionGroupCount(s.cd, 0), CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetFilter4dDescriptor(s.wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 0, 1, 1, 1),
                     CUDNN_STATUS_BAD_PARAM);
    /* a filter larger than the padded input */
    cudnnFilterDescriptor_t big;
    CHECK_DNN(cudnnCreateFilterDescriptor(&big));
    CHECK_DNN(cudnnSetFilter4dDescriptor(big, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 6, 4, 11, 3));
    assert_int_equal(cudnnGetConvolution2dForwardOutputDim(s.cd, s.x.desc, big, &out[0], &out[1], &out[2], &out[3]),
                     CUDNN_STATUS_BAD_PARAM);
    /* 2-D helper agrees with the formula */
    CHECK_DNN(cudnnGetConvolution2dForwardOutputDim(s.cd, s.x.desc, s.wd, &out[0], &out[1], &out[2], &out[3]));
    assert_int_equal(out[1], 6);
    assert_int_equal(out[2], 7);
    assert_int_equal(out[3], 9);
    cudnnDestroyFilterDescriptor(big);
    cudnnDestroyTensorDescriptor(bad);
    teardown_setup(&s);
}

/* Same inputs, same bits, call after call. */
static void test_deterministic(void **state)
{
    (void)state;
    test_seed(9);
    conv_case cc = base_case();
    conv_setup s;
    setup(&s, &cc);
    tt_random(&s.x, -1, 1);
    tt_upload(&s.x);
    for (size_t i = 0; i < s.wn; i++)
        s.w[i] = test_uniform(-1, 1);
    cudaMemcpy(s.wdev, s.w, s.wn * sizeof(float), cudaMemcpyHostToDevice);
    float al = 1, be = 0;
    float *a = malloc(s.y.span * sizeof *a), *b = malloc(s.y.span * sizeof *b);
    for (int r = 0; r < 2; r++) {
        CHECK_DNN(cudnnConvolutionForward(handle, &al, s.x.desc, s.x.dev, s.wd, s.wdev, s.cd,
                                          CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0, &be, s.y.desc, s.y.dev));
        tt_download(&s.y, r ? b : a);
    }
    assert_memory_equal(a, b, s.y.span * sizeof *a);
    free(a), free(b);
    teardown_setup(&s);
}

/* ---- children: residency and capacity ------------------------------------------------ */

static int body_freed_workspace(void)
{
    cudnnHandle_t h;
    cudnnCreate(&h);
    handle = h;
    conv_case cc = base_case();
    conv_setup s;
    setup(&s, &cc);
    size_t ws;
    cudnnGetConvolutionForwardWorkspaceSize(h, s.x.desc, s.wd, s.cd, s.y.desc,
                                            CUDNN_CONVOLUTION_FWD_ALGO_GEMM, &ws);
    void *p = alloc_ws(ws);
    cudaFree(p);
    float al = 1, be = 0;
    /* The workspace is gone: the call must fault like an illegal address. */
    cudnnConvolutionForward(h, &al, s.x.desc, s.x.dev, s.wd, s.wdev, s.cd, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, p, ws,
                            &be, s.y.desc, s.y.dev);
    return 0;
}

static int body_freed_input(void)
{
    cudnnHandle_t h;
    cudnnCreate(&h);
    handle = h;
    conv_case cc = base_case();
    conv_setup s;
    setup(&s, &cc);
    cudaFree(s.x.dev);
    float al = 1, be = 0;
    cudnnConvolutionForward(h, &al, s.x.desc, s.x.dev, s.wd, s.wdev, s.cd, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                            NULL, 0, &be, s.y.desc, s.y.dev);
    return 0;
}

/* With 64 MiB of device memory the FFT search cannot get its ~100 MB of
 * scratch from the driver: that algorithm reports ALLOC_FAILED. */
static int body_find_small_device(void)
{
    cudnnHandle_t h;
    CHILD_CHECK(cudnnCreate(&h) == CUDNN_STATUS_SUCCESS);
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t c;
    cudnnCreateTensorDescriptor(&x);
    cudnnCreateTensorDescriptor(&y);
    cudnnCreateFilterDescriptor(&w);
    cudnnCreateConvolutionDescriptor(&c);
    cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 8, 64, 64, 64);
    cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 8, 64, 64, 64);
    cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 64, 64, 5, 5);
    cudnnSetConvolution2dDescriptor(c, 2, 2, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
    size_t fft;
    CHILD_CHECK(cudnnGetConvolutionForwardWorkspaceSize(h, x, w, c, y, CUDNN_CONVOLUTION_FWD_ALGO_FFT, &fft) == 0);
    CHILD_CHECK(fft > ((size_t)64 << 20));
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    int n;
    CHILD_CHECK(cudnnFindConvolutionForwardAlgorithm(h, x, w, c, y, 8, &n, perf) == CUDNN_STATUS_SUCCESS);
    int fft_failed = 0, implicit_ok = 0;
    for (int i = 0; i < n; i++) {
        if (perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT)
            fft_failed = perf[i].status == CUDNN_STATUS_ALLOC_FAILED;
        if (perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM)
            implicit_ok = perf[i].status == CUDNN_STATUS_SUCCESS;
    }
    CHILD_CHECK(fft_failed && implicit_ok);
    cudnnDestroyTensorDescriptor(x);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyConvolutionDescriptor(c);
    return cudnnDestroy(h) != CUDNN_STATUS_SUCCESS;
}

static const struct sim_child_body bodies[] = {
    {"body_freed_workspace", body_freed_workspace},
    {"body_freed_input", body_freed_input},
    {"body_find_small_device", body_find_small_device},
};

static void test_residency_faults(void **state)
{
    (void)state;
    const char *quiet[] = {"SIMGPU_HAZARDS=off", NULL};
    assert_true(CHILD_SEGV(sim_child_run(quiet, "body_freed_workspace")));
    assert_true(CHILD_SEGV(sim_child_run(quiet, "body_freed_input")));
}

static void test_find_allocates_through_driver(void **state)
{
    (void)state;
    const char *env[] = {"SIMGPU_MEM=64M", "SIMGPU_COMPUTE=0", NULL};
    assert_true(CHILD_OK(sim_child_run(env, "body_find_small_device")));
}

static int setup_handle(void **state)
{
    (void)state;
    return cudnnCreate(&handle) != CUDNN_STATUS_SUCCESS;
}

static int teardown_handle(void **state)
{
    (void)state;
    return cudnnDestroy(handle) != CUDNN_STATUS_SUCCESS;
}

int main(int argc, char **argv)
{
    sim_child_main(argc, argv, bodies, sizeof bodies / sizeof bodies[0]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_3x3_all_algorithms),
        cmocka_unit_test(test_conv_5x5_groups_nhwc),
        cmocka_unit_test(test_conv_strided_dilated),
        cmocka_unit_test(test_conv_1x1_groups),
        cmocka_unit_test(test_conv_3d),
        cmocka_unit_test(test_conv_random),
        cmocka_unit_test(test_backward_bias),
        cmocka_unit_test(test_bias_activation),
        cmocka_unit_test(test_workspace_requirements),
        cmocka_unit_test(test_workspace_scaling),
        cmocka_unit_test(test_heuristic_and_find),
        cmocka_unit_test(test_argument_errors),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_residency_faults),
        cmocka_unit_test(test_find_allocates_through_driver),
    };
    return cmocka_run_group_tests(tests, setup_handle, teardown_handle);
}
