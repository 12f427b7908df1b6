/*
 * test_cudnn_ops.c — the non-convolution cuDNN operations on the simulated
 * device, each against a reference written here with direct loops in double
 * (finite differences for the backward passes of LRN and batch
 * normalisation): tensor add/op/set/scale/transform, activation, pooling,
 * LRN, softmax, batch normalisation and dropout, on strided tensors with
 * alpha/beta != (1, 0). Also the handle and descriptor plumbing, compute-off
 * mode (no device byte touched) and the ordering checks seeing cuDNN's
 * accesses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "tests/sim_child.h"
#include "tests/test_cudnn_util.h"

#define TOL 1e-5

static cudnnHandle_t handle;

static void assert_close(const ttensor *t, const float *got, const double *ref, const char *what)
{
    double e = rel_error(t, got, ref);
    if (!(e < TOL))
        fail_msg("%s: relative error %g", what, e);
}

/* Runs on the device image of t and compares with ref; gaps must survive. */
static void check_tensor(const ttensor *t, const double *ref, const char *what)
{
    float *got = malloc(t->span * sizeof *got);
    tt_download(t, got);
    assert_close(t, got, ref, what);
    if (!gaps_untouched(t, got, t->data))
        fail_msg("%s: wrote outside the tensor's elements", what);
    free(got);
}

/* Index vector of the i-th element of t in row-major order. */
static void tt_index(const ttensor *t, size_t i, int *idx)
{
    for (int d = t->nb - 1; d >= 0; d--) {
        idx[d] = (int)(i % (size_t)t->dim[d]);
        i /= (size_t)t->dim[d];
    }
}

/* ---- tensor operations ------------------------------------------------------ */

static void test_add_tensor(void **state)
{
    (void)state;
    test_seed(11);
    int cdim[4] = {2, 5, 3, 7}, adims[3][4] = {{1, 5, 1, 1}, {2, 5, 3, 7}, {1, 1, 3, 7}};
    for (int v = 0; v < 3; v++) {
        ttensor a, c;
        tt_init(&a, 4, adims[v], v == 1 ? 1 : 0);
        tt_init(&c, 4, cdim, 2);
        tt_random(&a, -1, 1);
        tt_random(&c, -1, 1);
        tt_upload(&a);
        tt_upload(&c);
        float al = 1.5f, be = v == 2 ? 0.0f : -0.5f;
        CHECK_DNN(cudnnAddTensor(handle, &al, a.desc, a.dev, &be, c.desc, c.dev));
        double *ref = calloc(c.span, sizeof *ref);
        for (size_t i = 0; i < tt_elems(&c); i++) {
            int idx[4] = {0}, ai[4];
            tt_index(&c, i, idx);
            for (int d = 0; d < 4; d++)
                ai[d] = a.dim[d] == 1 ? 0 : idx[d];
            size_t o = tt_off(&c, idx);
            ref[o] = al * a.data[tt_off(&a, ai)] + be * c.data[o];
        }
        check_tensor(&c, ref, "cudnnAddTensor");
        free(ref);
        tt_free(&a);
        tt_free(&c);
    }
}

static void test_op_tensor(void **state)
{
    (void)state;
    test_seed(12);
    int dim[4] = {2, 4, 3, 5}, bdim[4] = {1, 4, 1, 1};
    cudnnOpTensorDescriptor_t op;
    CHECK_DNN(cudnnCreateOpTensorDescriptor(&op));
    for (int o = CUDNN_OP_TENSOR_ADD; o <= CUDNN_OP_TENSOR_NOT; o++) {
        ttensor a, b, c;
        tt_init(&a, 4, dim, 1);
        tt_init(&b, 4, bdim, 0);
        tt_init(&c, 4, dim, 2);
        tt_random(&a, 0.1f, 2);
        tt_random(&b, -1, 1);
        tt_random(&c, -1, 1);
        tt_upload(&a);
        tt_upload(&b);
        tt_upload(&c);
        CHECK_DNN(cudnnSetOpTensorDescriptor(op, o, CUDNN_DATA_FLOAT, CUDNN_NOT_PROPAGATE_NAN));
        float a1 = 0.9f, a2 = -1.2f, be = 0.4f;
        CHECK_DNN(cudnnOpTensor(handle, op, &a1, a.desc, a.dev, &a2, b.desc, b.dev, &be, c.desc, c.dev));
        double *ref = calloc(c.span, sizeof *ref);
        for (size_t i = 0; i < tt_elems(&c); i++) {
            int idx[4] = {0}, bi[4] = {0, 0, 0, 0};
            tt_index(&c, i, idx);
            bi[1] = idx[1];
            double va = a1 * (double)a.data[tt_off(&a, idx)], vb = a2 * (double)b.data[tt_off(&b, bi)], r;
            switch (o) {
            case CUDNN_OP_TENSOR_ADD: r = va + vb; break;
            case CUDNN_OP_TENSOR_MUL: r = va * vb; break;
            case CUDNN_OP_TENSOR_MIN: r = fmin(va, vb); break;
            case CUDNN_OP_TENSOR_MAX: r = fmax(va, vb); break;
            case CUDNN_OP_TENSOR_SQRT: r = sqrt(va); break;
            default: r = 1.0 - va; break;
            }
            size_t off = tt_off(&c, idx);
            ref[off] = r + be * c.data[off];
        }
        check_tensor(&c, ref, "cudnnOpTensor");
        free(ref);
        tt_free(&a);
        tt_free(&b);
        tt_free(&c);
    }
    cudnnDestroyOpTensorDescriptor(op);
}

static void test_set_scale_tensor(void **state)
{
    (void)state;
    test_seed(13);
    int dim[5] = {2, 3, 2, 4, 3};
    ttensor t;
    tt_init(&t, 5, dim, 2);
    tt_random(&t, -1, 1);
    tt_upload(&t);
    float scale = -2.5f;
    CHECK_DNN(cudnnScaleTensor(handle, t.desc, t.dev, &scale));
    double *ref = calloc(t.span, sizeof *ref);
    for (size_t i = 0; i < tt_elems(&t); i++)
        ref[tt_nth(&t, i)] = scale * (double)t.data[tt_nth(&t, i)];
    check_tensor(&t, ref, "cudnnScaleTensor");
    tt_upload(&t);
    float value = 3.25f;
    CHECK_DNN(cudnnSetTensor(handle, t.desc, t.dev, &value));
    for (size_t i = 0; i < tt_elems(&t); i++)
        ref[tt_nth(&t, i)] = value;
    check_tensor(&t, ref, "cudnnSetTensor");
    free(ref);
    tt_free(&t);
}

/* Layout change, and concatenation along channels by writing into strided
 * views of the destination, as frameworks do with cudnnTransformTensor. */
static void test_transform_tensor(void **state)
{
    (void)state;
    test_seed(14);
    int dim[4] = {3, 4, 5, 2};
    ttensor x, y;
    tt_init(&x, 4, dim, 0);
    tt_init(&y, 4, dim, 1);
    tt_random(&x, -1, 1);
    tt_random(&y, -1, 1);
    tt_upload(&x);
    tt_upload(&y);
    float al = 2.0f, be = 0.5f;
    CHECK_DNN(cudnnTransformTensor(handle, &al, x.desc, x.dev, &be, y.desc, y.dev));
    double *ref = calloc(y.span, sizeof *ref);
    for (size_t i = 0; i < tt_elems(&y); i++)
        ref[tt_nth(&y, i)] = al * x.data[tt_nth(&x, i)] + be * y.data[tt_nth(&y, i)];
    check_tensor(&y, ref, "cudnnTransformTensor");
    free(ref);

    /* concat: parts of 2 and 3 channels into one 5-channel tensor */
    int cat_dim[4] = {2, 5, 3, 3};
    ttensor cat;
    tt_init(&cat, 4, cat_dim, 0);
    tt_random(&cat, -1, 1);
    tt_upload(&cat);
    int c0 = 0;
    float one = 1, zero = 0;
    for (int part = 0; part < 2; part++) {
        int pc = part ? 3 : 2, pdim[4] = {2, pc, 3, 3};
        ttensor p;
        tt_init(&p, 4, pdim, 0);
        for (size_t i = 0; i < p.span; i++)
            p.data[i] = (float)(100 * part + i);
        tt_upload(&p);
        cudnnTensorDescriptor_t view;
        CHECK_DNN(cudnnCreateTensorDescriptor(&view));
        CHECK_DNN(cudnnSetTensor4dDescriptorEx(view, CUDNN_DATA_FLOAT, 2, pc, 3, 3, cat.stride[0], cat.stride[1],
                                               cat.stride[2], cat.stride[3]));
        CHECK_DNN(cudnnTransformTensor(handle, &one, p.desc, p.dev, &zero, view, cat.dev + c0 * cat.stride[1]));
        for (size_t i = 0; i < tt_elems(&p); i++) {
            int idx[4] = {0};
            tt_index(&p, i, idx);
            int ci[4] = {idx[0], idx[1] + c0, idx[2], idx[3]};
            cat.data[tt_off(&cat, ci)] = p.data[tt_off(&p, idx)];
        }
        c0 += pc;
        cudnnDestroyTensorDescriptor(view);
        tt_free(&p);
    }
    float *got = malloc(cat.span * sizeof *got);
    tt_download(&cat, got);
    assert_memory_equal(got, cat.data, cat.span * sizeof *got);
    free(got);
    tt_free(&cat);
    tt_free(&x);
    tt_free(&y);
}

/* ---- activation ---------------------------------------------------------------- */

static double act_ref(cudnnActivationMode_t m, double coef, double sb, double x)
{
    switch (m) {
    case CUDNN_ACTIVATION_SIGMOID: return 1 / (1 + exp(-x));
    case CUDNN_ACTIVATION_RELU: return x > 0 ? x : 0;
    case CUDNN_ACTIVATION_TANH: return tanh(x);
    case CUDNN_ACTIVATION_CLIPPED_RELU: return fmin(fmax(x, 0), coef);
    case CUDNN_ACTIVATION_ELU: return x > 0 ? x : coef * (exp(x) - 1);
    default: return x / (1 + exp(-sb * x));
    }
}

/* Derivative by central differences of the reference function. */
static double act_grad_ref(cudnnActivationMode_t m, double coef, double sb, double x)
{
    double h = 1e-6;
    return (act_ref(m, coef, sb, x + h) - act_ref(m, coef, sb, x - h)) / (2 * h);
}

static void test_activation(void **state)
{
    (void)state;
    test_seed(15);
    int dim[4] = {2, 3, 4, 5};
    cudnnActivationMode_t modes[] = {CUDNN_ACTIVATION_SIGMOID, CUDNN_ACTIVATION_RELU, CUDNN_ACTIVATION_TANH,
                                     CUDNN_ACTIVATION_CLIPPED_RELU, CUDNN_ACTIVATION_ELU, CUDNN_ACTIVATION_SWISH};
    cudnnActivationDescriptor_t ad;
    CHECK_DNN(cudnnCreateActivationDescriptor(&ad));
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        double coef = modes[m] == CUDNN_ACTIVATION_CLIPPED_RELU ? 0.6 : 0.7, sb = 1.3;
        CHECK_DNN(cudnnSetActivationDescriptor(ad, modes[m], CUDNN_NOT_PROPAGATE_NAN, coef));
        CHECK_DNN(cudnnSetActivationDescriptorSwishBeta(ad, sb));
        ttensor x, y, dy, dx;
        tt_init(&x, 4, dim, 0);
        tt_init(&y, 4, dim, 2);
        tt_init(&dy, 4, dim, 1);
        tt_init(&dx, 4, dim, 2);
        tt_random(&x, -2, 2);
        /* keep away from the kinks where the finite difference is meaningless */
        for (size_t i = 0; i < x.span; i++)
            if (fabs(x.data[i]) < 1e-3 || fabs(x.data[i] - coef) < 1e-3)
                x.data[i] += 0.01f;
        tt_random(&y, -1, 1);
        tt_random(&dy, -1, 1);
        tt_random(&dx, -1, 1);
        tt_upload(&x);
        tt_upload(&y);
        tt_upload(&dy);
        tt_upload(&dx);
        float al = 0.8f, be = 0.3f;
        CHECK_DNN(cudnnActivationForward(handle, ad, &al, x.desc, x.dev, &be, y.desc, y.dev));
        double *ref = calloc(y.span, sizeof *ref);
        for (size_t i = 0; i < tt_elems(&y); i++) {
            size_t oy = tt_nth(&y, i);
            ref[oy] = al * act_ref(modes[m], coef, sb, x.data[tt_nth(&x, i)]) + be * y.data[oy];
        }
        check_tensor(&y, ref, "cudnnActivationForward");
        /* backward needs the true y (beta 0) */
        float one = 1, zero = 0;
        CHECK_DNN(cudnnActivationForward(handle, ad, &one, x.desc, x.dev, &zero, y.desc, y.dev));
        CHECK_DNN(cudnnActivationBackward(handle, ad, &al, y.desc, y.dev, dy.desc, dy.dev, x.desc, x.dev, &be,
                                          dx.desc, dx.dev));
        double *gref = calloc(dx.span, sizeof *gref);
        for (size_t i = 0; i < tt_elems(&dx); i++) {
            size_t o = tt_nth(&dx, i);
            double g = act_grad_ref(modes[m], coef, sb, x.data[tt_nth(&x, i)]);
            gref[o] = al * dy.data[tt_nth(&dy, i)] * g + be * dx.data[o];
        }
        float *got = malloc(dx.span * sizeof *got);
        tt_download(&dx, got);
        /* finite differences are good to ~1e-9; the float result to ~1e-7 */
        double e = rel_error(&dx, got, gref);
        if (!(e < TOL))
            fail_msg("cudnnActivationBackward mode %d: relative error %g", (int)modes[m], e);
        free(got), free(gref), free(ref);
        tt_free(&x), tt_free(&y), tt_free(&dy), tt_free(&dx);
    }
    cudnnDestroyActivationDescriptor(ad);
}

/* ReLU in place (y == x, dx == dy), as Caffe runs it. */
static void test_activation_in_place(void **state)
{
    (void)state;
    test_seed(16);
    int dim[4] = {2, 3, 5, 5};
    ttensor t, g;
    tt_init(&t, 4, dim, 0);
    tt_init(&g, 4, dim, 0);
    tt_random(&t, -1, 1);
    tt_random(&g, -1, 1);
    tt_upload(&t);
    tt_upload(&g);
    cudnnActivationDescriptor_t ad;
    CHECK_DNN(cudnnCreateActivationDescriptor(&ad));
    CHECK_DNN(cudnnSetActivationDescriptor(ad, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
    float one = 1, zero = 0;
    CHECK_DNN(cudnnActivationForward(handle, ad, &one, t.desc, t.dev, &zero, t.desc, t.dev));
    CHECK_DNN(cudnnActivationBackward(handle, ad, &one, t.desc, t.dev, g.desc, g.dev, t.desc, t.dev, &zero, g.desc,
                                      g.dev));
    double *ry = calloc(t.span, sizeof *ry), *rg = calloc(g.span, sizeof *rg);
    for (size_t i = 0; i < t.span; i++) {
        ry[i] = t.data[i] > 0 ? t.data[i] : 0;
        rg[i] = t.data[i] > 0 ? g.data[i] : 0;
    }
    check_tensor(&t, ry, "in-place ReLU forward");
    check_tensor(&g, rg, "in-place ReLU backward");
    /* IDENTITY belongs to the fused convolution only */
    CHECK_DNN(cudnnSetActivationDescriptor(ad, CUDNN_ACTIVATION_IDENTITY, CUDNN_NOT_PROPAGATE_NAN, 0.0));
    assert_int_equal(cudnnActivationForward(handle, ad, &one, t.desc, t.dev, &zero, t.desc, t.dev),
                     CUDNN_STATUS_BAD_PARAM);
    free(ry), free(rg);
    cudnnDestroyActivationDescriptor(ad);
    tt_free(&t), tt_free(&g);
}

/* ---- pooling -------------------------------------------------------------------- */

typedef struct {
    int nsp, mode;
    int win[3], pad[3], str[3];
} pool_case;

/* Reference pooling over 3-D windows (2-D: unit depth). Forward into ry,
 * backward (dy given) accumulated into rdx. */
static void pool_ref(const pool_case *pc, const ttensor *x, const ttensor *y, const float *dy, double *ry,
                     double *rdx)
{
    int in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, lead = 3 - pc->nsp;
    for (int i = 0; i < pc->nsp; i++) {
        in[lead + i] = x->dim[2 + i];
        out[lead + i] = y->dim[2 + i];
    }
    for (int n = 0; n < x->dim[0]; n++)
        for (int c = 0; c < x->dim[1]; c++) {
            int o[3];
            for (o[0] = 0; o[0] < out[0]; o[0]++)
                for (o[1] = 0; o[1] < out[1]; o[1]++)
                    for (o[2] = 0; o[2] < out[2]; o[2]++) {
                        int s[3], e[3], padded = 1, valid = 1;
                        for (int d = 0; d < 3; d++) {
                            s[d] = o[d] * pc->str[d] - pc->pad[d];
                            e[d] = s[d] + pc->win[d];
                            int pe = e[d] < in[d] + pc->pad[d] ? e[d] : in[d] + pc->pad[d];
                            padded *= pe - s[d];
                            int lo = s[d] < 0 ? 0 : s[d], hi = e[d] > in[d] ? in[d] : e[d];
                            valid *= hi > lo ? hi - lo : 0;
                        }
                        double best = 0, sum = 0;
                        size_t best_off = (size_t)-1;
                        int i[3];
                        for (i[0] = s[0]; i[0] < e[0]; i[0]++)
                            for (i[1] = s[1]; i[1] < e[1]; i[1]++)
                                for (i[2] = s[2]; i[2] < e[2]; i[2]++) {
                                    if (i[0] < 0 || i[1] < 0 || i[2] < 0 || i[0] >= in[0] || i[1] >= in[1] ||
                                        i[2] >= in[2])
                                        continue;
                                    int idx[5] = {n, c};
                                    for (int d = 0; d < pc->nsp; d++)
                                        idx[2 + d] = i[lead + d];
                                    size_t off = tt_off(x, idx);
                                    sum += x->data[off];
                                    if (best_off == (size_t)-1 || x->data[off] > best) {
                                        best = x->data[off];
                                        best_off = off;
                                    }
                                }
                        int count = pc->mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING ? padded : valid;
                        int oidx[5] = {n, c};
                        for (int d = 0; d < pc->nsp; d++)
                            oidx[2 + d] = o[lead + d];
                        size_t yo = tt_off(y, oidx);
                        int is_max = pc->mode == CUDNN_POOLING_MAX || pc->mode == CUDNN_POOLING_MAX_DETERMINISTIC;
                        if (ry)
                            ry[yo] = is_max ? best : sum / count;
                        if (rdx) {
                            if (is_max) {
                                if (best_off != (size_t)-1)
                                    rdx[best_off] += dy[yo];
                            } else {
                                for (i[0] = s[0]; i[0] < e[0]; i[0]++)
                                    for (i[1] = s[1]; i[1] < e[1]; i[1]++)
                                        for (i[2] = s[2]; i[2] < e[2]; i[2]++) {
                                            if (i[0] < 0 || i[1] < 0 || i[2] < 0 || i[0] >= in[0] ||
                                                i[1] >= in[1] || i[2] >= in[2])
                                                continue;
                                            int idx[5] = {n, c};
                                            for (int d = 0; d < pc->nsp; d++)
                                                idx[2 + d] = i[lead + d];
                                            rdx[tt_off(x, idx)] += dy[yo] / count;
                                        }
                            }
                        }
                    }
        }
}

static void run_pool(const pool_case *pc, const int *xdim, int overhang)
{
    int nb = pc->nsp + 2, lead = 3 - pc->nsp;
    cudnnPoolingDescriptor_t pd;
    CHECK_DNN(cudnnCreatePoolingDescriptor(&pd));
    int w[3], p[3], s[3];
    for (int d = 0; d < pc->nsp; d++)
        w[d] = pc->win[lead + d], p[d] = pc->pad[lead + d], s[d] = pc->str[lead + d];
    CHECK_DNN(cudnnSetPoolingNdDescriptor(pd, pc->mode, CUDNN_NOT_PROPAGATE_NAN, pc->nsp, w, p, s));
    ttensor x, y, dx, dyt;
    tt_init(&x, nb, xdim, 2);
    int ydim[5];
    CHECK_DNN(cudnnGetPoolingNdForwardOutputDim(pd, x.desc, nb, ydim));
    /* Rounded up as Caffe sizes pooling outputs: one more window where it
     * still starts inside the image. */
    for (int d = 2; d < nb && overhang; d++)
        if (ydim[d] * s[d - 2] - p[d - 2] < xdim[d])
            ydim[d] += 1;
    tt_init(&y, nb, ydim, 1);
    tt_init(&dyt, nb, ydim, 0);
    tt_init(&dx, nb, xdim, 0);
    tt_random(&x, -1, 1);
    tt_random(&y, -1, 1);
    tt_random(&dyt, -1, 1);
    tt_random(&dx, -1, 1);
    tt_upload(&x), tt_upload(&y), tt_upload(&dyt), tt_upload(&dx);
    float al = 1.1f, be = -0.4f, one = 1, zero = 0;
    CHECK_DNN(cudnnPoolingForward(handle, pd, &al, x.desc, x.dev, &be, y.desc, y.dev));
    double *ry = calloc(y.span, sizeof *ry);
    pool_ref(pc, &x, &y, NULL, ry, NULL);
    for (size_t i = 0; i < tt_elems(&y); i++) {
        size_t o = tt_nth(&y, i);
        ry[o] = al * ry[o] + be * y.data[o];
    }
    check_tensor(&y, ry, "cudnnPoolingForward");
    CHECK_DNN(cudnnPoolingForward(handle, pd, &one, x.desc, x.dev, &zero, y.desc, y.dev));
    CHECK_DNN(cudnnPoolingBackward(handle, pd, &al, y.desc, y.dev, dyt.desc, dyt.dev, x.desc, x.dev, &be, dx.desc,
                                   dx.dev));
    double *rdx = calloc(x.span, sizeof *rdx); /* at x's offsets */
    /* dy's layout is packed, y's is not: the reference reads dy by y's offsets */
    float *dy_as_y = calloc(y.span, sizeof *dy_as_y);
    for (size_t i = 0; i < tt_elems(&y); i++)
        dy_as_y[tt_nth(&y, i)] = dyt.data[tt_nth(&dyt, i)];
    pool_ref(pc, &x, &y, dy_as_y, NULL, rdx);
    double *rdx2 = calloc(dx.span, sizeof *rdx2);
    for (size_t i = 0; i < tt_elems(&dx); i++)
        rdx2[tt_nth(&dx, i)] = al * rdx[tt_nth(&x, i)] + be * dx.data[tt_nth(&dx, i)];
    check_tensor(&dx, rdx2, "cudnnPoolingBackward");
    free(ry), free(rdx), free(rdx2), free(dy_as_y);
    tt_free(&x), tt_free(&y), tt_free(&dx), tt_free(&dyt);
    cudnnDestroyPoolingDescriptor(pd);
}

static void test_pooling(void **state)
{
    (void)state;
    test_seed(17);
    int modes[] = {CUDNN_POOLING_MAX, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
                   CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING, CUDNN_POOLING_MAX_DETERMINISTIC};
    for (int it = 0; it < 16; it++) {
        pool_case pc = {.nsp = 2, .mode = modes[it % 4], .win = {1, 1, 1}, .str = {1, 1, 1}};
        int xdim[4] = {test_int(1, 2), test_int(1, 3), 0, 0};
        for (int d = 1; d < 3; d++) {
            pc.win[d] = test_int(1, 3);
            pc.pad[d] = test_int(0, pc.win[d] - 1);
            pc.str[d] = test_int(1, 3);
            xdim[1 + d] = test_int(pc.win[d], pc.win[d] + 6);
        }
        run_pool(&pc, xdim, it % 3 == 2);
    }
    pool_case p3 = {.nsp = 3, .mode = CUDNN_POOLING_MAX, .win = {2, 2, 3}, .pad = {0, 1, 1}, .str = {2, 1, 2}};
    int x3[5] = {2, 2, 4, 5, 5};
    run_pool(&p3, x3, 0);
    p3.mode = CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    run_pool(&p3, x3, 0);
}

/* ---- LRN ------------------------------------------------------------------------- */

typedef struct {
    unsigned n;
    double alpha, beta, k;
} lrn_par;

/* y for channel j of one (image, position), from x in double. */
static double lrn_y(const lrn_par *p, const double *x, int C, int j)
{
    int lb = ((int)p->n - 1) / 2, la = (int)p->n - 1 - lb;
    double s = 0;
    for (int i = j - lb; i <= j + la; i++)
        if (i >= 0 && i < C)
            s += x[i] * x[i];
    return x[j] / pow(p->k + p->alpha / p->n * s, p->beta);
}

static void test_lrn(void **state)
{
    (void)state;
    test_seed(18);
    lrn_par pars[] = {{5, 1e-4, 0.75, 2.0}, {4, 0.3, 0.6, 1.0}, {1, 0.5, 1.2, 0.5}, {7, 0.9, 0.9, 1.5}};
    int dim[4] = {2, 9, 3, 4};
    cudnnLRNDescriptor_t ld;
    CHECK_DNN(cudnnCreateLRNDescriptor(&ld));
    unsigned n0;
    double a0, b0, k0;
    CHECK_DNN(cudnnGetLRNDescriptor(ld, &n0, &a0, &b0, &k0));
    assert_int_equal(n0, 5);
    assert_int_equal(cudnnSetLRNDescriptor(ld, 17, 1e-4, 0.75, 2.0), CUDNN_STATUS_BAD_PARAM);
    for (size_t v = 0; v < sizeof pars / sizeof pars[0]; v++) {
        const lrn_par *p = &pars[v];
        CHECK_DNN(cudnnSetLRNDescriptor(ld, p->n, p->alpha, p->beta, p->k));
        ttensor x, y, dy, dx;
        tt_init(&x, 4, dim, 1);
        tt_init(&y, 4, dim, 2);
        tt_init(&dy, 4, dim, 0);
        tt_init(&dx, 4, dim, 2);
        tt_random(&x, -2, 2), tt_random(&y, -1, 1), tt_random(&dy, -1, 1), tt_random(&dx, -1, 1);
        tt_upload(&x), tt_upload(&y), tt_upload(&dy), tt_upload(&dx);
        float al = 0.7f, be = 0.2f, one = 1, zero = 0;
        CHECK_DNN(cudnnLRNCrossChannelForward(handle, ld, CUDNN_LRN_CROSS_CHANNEL_DIM1, &al, x.desc, x.dev, &be,
                                              y.desc, y.dev));
        double *ry = calloc(y.span, sizeof *ry), *rdx = calloc(dx.span, sizeof *rdx);
        int C = dim[1];
        double xs[16], xp[16];
        for (int n = 0; n < dim[0]; n++)
            for (int h = 0; h < dim[2]; h++)
                for (int w = 0; w < dim[3]; w++) {
                    for (int c = 0; c < C; c++)
                        xs[c] = x.data[tt_off(&x, (int[]){n, c, h, w})];
                    for (int c = 0; c < C; c++) {
                        size_t o = tt_off(&y, (int[]){n, c, h, w});
                        ry[o] = al * lrn_y(p, xs, C, c) + be * y.data[o];
                    }
                    /* dx_i = sum_j dy_j dy_j/dx_i by central differences */
                    for (int i = 0; i < C; i++) {
                        double hstep = 1e-5 * fmax(1.0, fabs(xs[i])), g = 0;
                        memcpy(xp, xs, sizeof xs);
                        for (int j = 0; j < C; j++) {
                            xp[i] = xs[i] + hstep;
                            double up = lrn_y(p, xp, C, j);
                            xp[i] = xs[i] - hstep;
                            double dn = lrn_y(p, xp, C, j);
                            g += dy.data[tt_off(&dy, (int[]){n, j, h, w})] * (up - dn) / (2 * hstep);
                        }
                        size_t o = tt_off(&dx, (int[]){n, i, h, w});
                        rdx[o] = al * g + be * dx.data[o];
                    }
                }
        check_tensor(&y, ry, "cudnnLRNCrossChannelForward");
        CHECK_DNN(cudnnLRNCrossChannelForward(handle, ld, CUDNN_LRN_CROSS_CHANNEL_DIM1, &one, x.desc, x.dev, &zero,
                                              y.desc, y.dev));
        CHECK_DNN(cudnnLRNCrossChannelBackward(handle, ld, CUDNN_LRN_CROSS_CHANNEL_DIM1, &al, y.desc, y.dev, dy.desc,
                                               dy.dev, x.desc, x.dev, &be, dx.desc, dx.dev));
        check_tensor(&dx, rdx, "cudnnLRNCrossChannelBackward");
        free(ry), free(rdx);
        tt_free(&x), tt_free(&y), tt_free(&dy), tt_free(&dx);
    }
    cudnnDestroyLRNDescriptor(ld);
}

/* ---- softmax ----------------------------------------------------------------------- */

static void test_softmax(void **state)
{
    (void)state;
    test_seed(19);
    int dim[4] = {3, 5, 2, 3};
    for (int algo = CUDNN_SOFTMAX_FAST; algo <= CUDNN_SOFTMAX_LOG; algo++)
        for (int mode = CUDNN_SOFTMAX_MODE_INSTANCE; mode <= CUDNN_SOFTMAX_MODE_CHANNEL; mode++) {
            ttensor x, y, dy, dx;
            tt_init(&x, 4, dim, 2);
            tt_init(&y, 4, dim, 1);
            tt_init(&dy, 4, dim, 0);
            tt_init(&dx, 4, dim, 2);
            tt_random(&x, -4, 4), tt_random(&y, -1, 1), tt_random(&dy, -1, 1), tt_random(&dx, -1, 1);
            tt_upload(&x), tt_upload(&y), tt_upload(&dy), tt_upload(&dx);
            float al = 1.25f, be = 0.5f, one = 1, zero = 0;
            CHECK_DNN(cudnnSoftmaxForward(handle, algo, mode, &al, x.desc, x.dev, &be, y.desc, y.dev));
            double *ry = calloc(y.span, sizeof *ry), *py = calloc(y.span, sizeof *py);
            double *rdx = calloc(dx.span, sizeof *rdx);
            int P = dim[2] * dim[3];
            int groups = mode == CUDNN_SOFTMAX_MODE_CHANNEL ? P : 1;
            int gsize = mode == CUDNN_SOFTMAX_MODE_CHANNEL ? dim[1] : dim[1] * P;
            for (int n = 0; n < dim[0]; n++)
                for (int g = 0; g < groups; g++) {
                    /* member m of group g: channel and position */
                    size_t xo[64], yo[64], dyo[64], dxo[64];
                    for (int m = 0; m < gsize; m++) {
                        int c = mode == CUDNN_SOFTMAX_MODE_CHANNEL ? m : m / P;
                        int p = mode == CUDNN_SOFTMAX_MODE_CHANNEL ? g : m % P;
                        int idx[4] = {n, c, p / dim[3], p % dim[3]};
                        xo[m] = tt_off(&x, idx), yo[m] = tt_off(&y, idx);
                        dyo[m] = tt_off(&dy, idx), dxo[m] = tt_off(&dx, idx);
                    }
                    double z = 0;
                    for (int m = 0; m < gsize; m++)
                        z += exp(x.data[xo[m]]);
                    for (int m = 0; m < gsize; m++) {
                        double s = exp(x.data[xo[m]]) / z;
                        py[yo[m]] = algo == CUDNN_SOFTMAX_LOG ? log(s) : s;
                        ry[yo[m]] = al * py[yo[m]] + be * y.data[yo[m]];
                    }
                    /* dx_i = sum_j dy_j dy_j/dx_i with the Jacobian of softmax */
                    for (int i = 0; i < gsize; i++) {
                        double si = exp(x.data[xo[i]]) / z, g2 = 0;
                        for (int j = 0; j < gsize; j++) {
                            double sj = exp(x.data[xo[j]]) / z;
                            double jac = algo == CUDNN_SOFTMAX_LOG ? (i == j) - si : sj * ((i == j) - si);
                            g2 += dy.data[dyo[j]] * jac;
                        }
                        rdx[dxo[i]] = al * g2 + be * dx.data[dxo[i]];
                    }
                }
            check_tensor(&y, ry, "cudnnSoftmaxForward");
            CHECK_DNN(cudnnSoftmaxForward(handle, algo, mode, &one, x.desc, x.dev, &zero, y.desc, y.dev));
            CHECK_DNN(cudnnSoftmaxBackward(handle, algo, mode, &al, y.desc, y.dev, dy.desc, dy.dev, &be, dx.desc,
                                           dx.dev));
            check_tensor(&dx, rdx, "cudnnSoftmaxBackward");
            free(ry), free(py), free(rdx);
            tt_free(&x), tt_free(&y), tt_free(&dy), tt_free(&dx);
        }
}

/* ---- batch normalisation ------------------------------------------------------------ */

/* y of member m of one feature from xs[0..M) (double), training statistics. */
static double bn_y(const double *xs, int M, int m, double scale, double bias, double eps)
{
    double mu = 0, var = 0;
    for (int i = 0; i < M; i++)
        mu += xs[i];
    mu /= M;
    for (int i = 0; i < M; i++)
        var += (xs[i] - mu) * (xs[i] - mu);
    var /= M;
    return scale * (xs[m] - mu) / sqrt(var + eps) + bias;
}

static void run_bn(cudnnBatchNormMode_t mode)
{
    int dim[4] = {3, 4, 2, 3};
    ttensor x, y, dy, dx;
    tt_init(&x, 4, dim, 2);
    tt_init(&y, 4, dim, 1);
    tt_init(&dy, 4, dim, 0);
    tt_init(&dx, 4, dim, 2);
    tt_random(&x, -2, 3), tt_random(&y, -1, 1), tt_random(&dy, -1, 1), tt_random(&dx, -1, 1);
    tt_upload(&x), tt_upload(&y), tt_upload(&dy), tt_upload(&dx);
    cudnnTensorDescriptor_t pd;
    CHECK_DNN(cudnnCreateTensorDescriptor(&pd));
    CHECK_DNN(cudnnDeriveBNTensorDescriptor(pd, x.desc, mode));
    int per_act = mode == CUDNN_BATCHNORM_PER_ACTIVATION;
    int P = dim[2] * dim[3], F = per_act ? dim[1] * P : dim[1], M = per_act ? dim[0] : dim[0] * P;
    size_t pbytes;
    CHECK_DNN(cudnnGetTensorSizeInBytes(pd, &pbytes));
    assert_int_equal(pbytes, (size_t)F * sizeof(float));
    float *host[8];
    float *dev[8]; /* scale, bias, rmean, rvar, smean, sinv, dscale, dbias */
    for (int i = 0; i < 8; i++) {
        host[i] = malloc(pbytes);
        for (int f = 0; f < F; f++)
            host[i][f] = i == 3 ? test_uniform(0.5f, 1.5f) : test_uniform(-1, 1);
        assert_int_equal(cudaMalloc((void **)&dev[i], pbytes), cudaSuccess);
        cudaMemcpy(dev[i], host[i], pbytes, cudaMemcpyHostToDevice);
    }
    double eps = 1e-3, factor = 0.3;
    float al = 0.9f, be = 0.2f;
    CHECK_DNN(cudnnBatchNormalizationForwardTraining(handle, mode, &al, &be, x.desc, x.dev, y.desc, y.dev, pd,
                                                     dev[0], dev[1], factor, dev[2], dev[3], eps, dev[4], dev[5]));
    double *ry = calloc(y.span, sizeof *ry), *rdx = calloc(dx.span, sizeof *rdx);
    double *rp[6];
    for (int i = 0; i < 6; i++)
        rp[i] = calloc((size_t)F, sizeof(double));
    float ad = 1.1f, bd = 0.3f, ap = 0.6f, bp = 0.7f;
    for (int f = 0; f < F; f++) {
        double xs[64], xp[64];
        size_t xo[64], yo[64], dyo[64], dxo[64];
        for (int m = 0; m < M; m++) {
            int n = per_act ? m : m / P, c = per_act ? f / P : f, p = per_act ? f % P : m % P;
            int idx[4] = {n, c, p / dim[3], p % dim[3]};
            xo[m] = tt_off(&x, idx), yo[m] = tt_off(&y, idx), dyo[m] = tt_off(&dy, idx), dxo[m] = tt_off(&dx, idx);
            xs[m] = x.data[xo[m]];
        }
        double sc = host[0][f], bi = host[1][f], mu = 0, var = 0;
        for (int m = 0; m < M; m++)
            mu += xs[m];
        mu /= M;
        for (int m = 0; m < M; m++)
            var += (xs[m] - mu) * (xs[m] - mu);
        var /= M;
        for (int m = 0; m < M; m++)
            ry[yo[m]] = al * bn_y(xs, M, m, sc, bi, eps) + be * y.data[yo[m]];
        rp[2][f] = (1 - factor) * host[2][f] + factor * mu;
        rp[3][f] = (1 - factor) * host[3][f] + factor * var * M / (M - 1);
        rp[4][f] = mu;
        rp[5][f] = 1 / sqrt(var + eps);
        /* backward by central differences of bn_y, parameters directly */
        double ds = 0, db = 0;
        for (int m = 0; m < M; m++) {
            ds += dy.data[dyo[m]] * (xs[m] - mu) / sqrt(var + eps);
            db += dy.data[dyo[m]];
        }
        for (int i = 0; i < M; i++) {
            double h = 1e-5, g = 0;
            memcpy(xp, xs, sizeof(double) * M);
            for (int j = 0; j < M; j++) {
                xp[i] = xs[i] + h;
                double up = bn_y(xp, M, j, sc, bi, eps);
                xp[i] = xs[i] - h;
                double dn = bn_y(xp, M, j, sc, bi, eps);
                g += dy.data[dyo[j]] * (up - dn) / (2 * h);
            }
            rdx[dxo[i]] = ad * g + bd * dx.data[dxo[i]];
        }
        rp[0][f] = ap * ds + bp * host[6][f];
        rp[1][f] = ap * db + bp * host[7][f];
    }
    check_tensor(&y, ry, "cudnnBatchNormalizationForwardTraining y");
    float *got = malloc(pbytes);
    for (int i = 2; i < 6; i++) {
        cudaMemcpy(got, dev[i], pbytes, cudaMemcpyDeviceToHost);
        for (int f = 0; f < F; f++)
            if (fabs(got[f] - rp[i][f]) > TOL * fmax(1.0, fabs(rp[i][f])))
                fail_msg("batch-norm statistic %d feature %d: %g, expected %g", i, f, got[f], rp[i][f]);
    }
    /* backward, with the saved statistics and without them */
    for (int saved = 1; saved >= 0; saved--) {
        tt_upload(&dx);
        cudaMemcpy(dev[6], host[6], pbytes, cudaMemcpyHostToDevice);
        cudaMemcpy(dev[7], host[7], pbytes, cudaMemcpyHostToDevice);
        CHECK_DNN(cudnnBatchNormalizationBackward(handle, mode, &ad, &bd, &ap, &bp, x.desc, x.dev, dy.desc, dy.dev,
                                                  dx.desc, dx.dev, pd, dev[0], dev[6], dev[7], eps,
                                                  saved ? dev[4] : NULL, saved ? dev[5] : NULL));
        check_tensor(&dx, rdx, "cudnnBatchNormalizationBackward dx");
        for (int i = 0; i < 2; i++) {
            cudaMemcpy(got, dev[6 + i], pbytes, cudaMemcpyDeviceToHost);
            for (int f = 0; f < F; f++)
                if (fabs(got[f] - rp[i][f]) > TOL * fmax(1.0, fabs(rp[i][f])))
                    fail_msg("batch-norm %s gradient feature %d: %g, expected %g", i ? "bias" : "scale", f, got[f],
                             rp[i][f]);
        }
    }
    /* inference with the running statistics just computed */
    tt_upload(&y);
    CHECK_DNN(cudnnBatchNormalizationForwardInference(handle, mode, &al, &be, x.desc, x.dev, y.desc, y.dev, pd,
                                                      dev[0], dev[1], dev[2], dev[3], eps));
    for (int f = 0; f < F; f++)
        for (int m = 0; m < M; m++) {
            int n = per_act ? m : m / P, c = per_act ? f / P : f, p = per_act ? f % P : m % P;
            int idx[4] = {n, c, p / dim[3], p % dim[3]};
            float rm = (float)rp[2][f], rv = (float)rp[3][f];
            ry[tt_off(&y, idx)] = al * (host[0][f] * (x.data[tt_off(&x, idx)] - rm) / sqrt(rv + eps) + host[1][f]) +
                                  be * y.data[tt_off(&y, idx)];
        }
    check_tensor(&y, ry, "cudnnBatchNormalizationForwardInference");
    /* running mean without running variance is refused */
    assert_int_equal(cudnnBatchNormalizationForwardTraining(handle, mode, &al, &be, x.desc, x.dev, y.desc, y.dev, pd,
                                                            dev[0], dev[1], factor, dev[2], NULL, eps, NULL, NULL),
                     CUDNN_STATUS_BAD_PARAM);
    free(got), free(ry), free(rdx);
    for (int i = 0; i < 8; i++) {
        free(host[i]);
        cudaFree(dev[i]);
    }
    for (int i = 0; i < 6; i++)
        free(rp[i]);
    cudnnDestroyTensorDescriptor(pd);
    tt_free(&x), tt_free(&y), tt_free(&dy), tt_free(&dx);
}

static void test_batchnorm_spatial(void **state)
{
    (void)state;
    test_seed(20);
    run_bn(CUDNN_BATCHNORM_SPATIAL);
    run_bn(CUDNN_BATCHNORM_SPATIAL_PERSISTENT);
}

static void test_batchnorm_per_activation(void **state)
{
    (void)state;
    test_seed(21);
    run_bn(CUDNN_BATCHNORM_PER_ACTIVATION);
}

/* ---- dropout ----------------------------------------------------------------------- */

static void test_dropout(void **state)
{
    (void)state;
    test_seed(22);
    int dim[4] = {4, 8, 16, 20};
    ttensor x, y, dy, dx;
    tt_init(&x, 4, dim, 0);
    tt_init(&y, 4, dim, 1);
    tt_init(&dy, 4, dim, 0);
    tt_init(&dx, 4, dim, 2);
    tt_random(&x, 0.5f, 1.5f), tt_random(&dy, -1, 1), tt_random(&dx, -1, 1);
    tt_upload(&x), tt_upload(&dy), tt_upload(&dx);
    size_t ssize, rsize;
    CHECK_DNN(cudnnDropoutGetStatesSize(handle, &ssize));
    CHECK_DNN(cudnnDropoutGetReserveSpaceSize(x.desc, &rsize));
    assert_true(ssize > 0 && rsize >= tt_elems(&x) / 8);
    void *states, *reserve;
    assert_int_equal(cudaMalloc(&states, ssize), cudaSuccess);
    assert_int_equal(cudaMalloc(&reserve, rsize), cudaSuccess);
    cudnnDropoutDescriptor_t dd;
    CHECK_DNN(cudnnCreateDropoutDescriptor(&dd));
    float p = 0.3f;
    assert_int_equal(cudnnSetDropoutDescriptor(dd, handle, p, states, ssize - 1, 7), CUDNN_STATUS_INVALID_VALUE);
    CHECK_DNN(cudnnSetDropoutDescriptor(dd, handle, p, states, ssize, 7));
    float gp;
    void *gs;
    unsigned long long seed;
    CHECK_DNN(cudnnGetDropoutDescriptor(dd, handle, &gp, &gs, &seed));
    assert_true(gp == p && gs == states && seed == 7);
    assert_int_equal(cudnnDropoutForward(handle, dd, x.desc, x.dev, y.desc, y.dev, reserve, rsize - 1),
                     CUDNN_STATUS_INVALID_VALUE);
    CHECK_DNN(cudnnDropoutForward(handle, dd, x.desc, x.dev, y.desc, y.dev, reserve, rsize));
    float *got = malloc(y.span * sizeof *got), *first = malloc(y.span * sizeof *first);
    tt_download(&y, got);
    size_t n = tt_elems(&x), dropped = 0;
    char *kept = malloc(n);
    for (size_t i = 0; i < n; i++) {
        double xv = x.data[tt_nth(&x, i)], yv = got[tt_nth(&y, i)];
        kept[i] = yv != 0;
        dropped += !kept[i];
        if (kept[i] && fabs(yv - xv / (1 - p)) > 1e-6 * fabs(xv / (1 - p)))
            fail_msg("kept element %zu is %g, expected %g", i, yv, xv / (1 - p));
    }
    /* p = 0.3 of 10240 elements: 3 standard deviations is about 4.5% */
    assert_true(fabs((double)dropped / n - p) < 0.015);
    memcpy(first, got, y.span * sizeof *got);
    /* backward applies the same mask and scale */
    CHECK_DNN(cudnnDropoutBackward(handle, dd, dy.desc, dy.dev, dx.desc, dx.dev, reserve, rsize));
    double *rdx = calloc(dx.span, sizeof *rdx);
    for (size_t i = 0; i < n; i++)
        rdx[tt_nth(&dx, i)] = kept[i] ? dy.data[tt_nth(&dy, i)] / (1 - p) : 0.0;
    check_tensor(&dx, rdx, "cudnnDropoutBackward");
    /* the next call draws a new mask; re-seeding reproduces the first */
    CHECK_DNN(cudnnDropoutForward(handle, dd, x.desc, x.dev, y.desc, y.dev, reserve, rsize));
    tt_download(&y, got);
    assert_true(memcmp(got, first, y.span * sizeof *got) != 0);
    CHECK_DNN(cudnnSetDropoutDescriptor(dd, handle, p, states, ssize, 7));
    CHECK_DNN(cudnnDropoutForward(handle, dd, x.desc, x.dev, y.desc, y.dev, reserve, rsize));
    tt_download(&y, got);
    assert_memory_equal(got, first, y.span * sizeof *got);
    free(rdx), free(kept), free(got), free(first);
    cudnnDestroyDropoutDescriptor(dd);
    cudaFree(states), cudaFree(reserve);
    tt_free(&x), tt_free(&y), tt_free(&dy), tt_free(&dx);
}

/* ---- handle, identity, descriptors --------------------------------------------------- */

static void test_handle_and_identity(void **state)
{
    (void)state;
    assert_int_equal(cudnnGetVersion(), CUDNN_VERSION);
    int major;
    CHECK_DNN(cudnnGetProperty(MAJOR_VERSION, &major));
    assert_int_equal(major, CUDNN_MAJOR);
    assert_string_equal(cudnnGetErrorString(CUDNN_STATUS_BAD_PARAM), "CUDNN_STATUS_BAD_PARAM");
    assert_string_equal(cudnnGetErrorString(CUDNN_STATUS_NOT_SUPPORTED), "CUDNN_STATUS_NOT_SUPPORTED");
    /* a handle holds device memory of its own, taken through the driver */
    size_t f0, f1, f2, total;
    cudaMemGetInfo(&f0, &total);
    cudnnHandle_t h;
    CHECK_DNN(cudnnCreate(&h));
    cudaMemGetInfo(&f1, &total);
    assert_true(f1 < f0);
    cudaStream_t s, got;
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    CHECK_DNN(cudnnSetStream(h, s));
    CHECK_DNN(cudnnGetStream(h, &got));
    assert_ptr_equal(got, s);
    CHECK_DNN(cudnnDestroy(h));
    cudaMemGetInfo(&f2, &total);
    assert_int_equal(f2, f0);
    cudaStreamDestroy(s);
    assert_int_equal(cudnnSetStream(NULL, NULL), CUDNN_STATUS_BAD_PARAM);
}

static void test_tensor_descriptors(void **state)
{
    (void)state;
    cudnnTensorDescriptor_t t;
    CHECK_DNN(cudnnCreateTensorDescriptor(&t));
    CHECK_DNN(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 2, 3, 4, 5));
    cudnnDataType_t dt;
    int n, c, h, w, ns, cs, hs, ws;
    CHECK_DNN(cudnnGetTensor4dDescriptor(t, &dt, &n, &c, &h, &w, &ns, &cs, &hs, &ws));
    assert_int_equal(cs, 1);
    assert_int_equal(ws, 3);
    assert_int_equal(hs, 15);
    assert_int_equal(ns, 60);
    CHECK_DNN(cudnnSetTensor4dDescriptorEx(t, CUDNN_DATA_FLOAT, 2, 3, 4, 5, 100, 30, 6, 1));
    size_t sz;
    CHECK_DNN(cudnnGetTensorSizeInBytes(t, &sz));
    assert_int_equal(sz, (size_t)(100 + 2 * 30 + 3 * 6 + 4 + 1) * 4);
    int dims[8], strides[8], nb;
    CHECK_DNN(cudnnGetTensorNdDescriptor(t, 8, &dt, &nb, dims, strides));
    assert_int_equal(nb, 4);
    assert_int_equal(strides[1], 30);
    assert_int_equal(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 0, 3, 4, 5),
                     CUDNN_STATUS_BAD_PARAM);
    int d2[2] = {3, 4}, s2[2] = {4, 1};
    assert_int_equal(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 2, d2, s2), CUDNN_STATUS_NOT_SUPPORTED);
    /* FP16 descriptors can be described, not computed by the simulation */
    CHECK_DNN(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, 1, 1, 2, 2));
    float one = 1;
    void *p;
    cudaMalloc(&p, 64);
    assert_int_equal(cudnnScaleTensor(handle, t, p, &one), CUDNN_STATUS_NOT_SUPPORTED);
    cudaFree(p);
    CHECK_DNN(cudnnDestroyTensorDescriptor(t));
}

/* ---- children: compute off and ordering hazards --------------------------------------- */

/* With compute off device memory has no host pages behind it: any byte an
 * operation touched would fault. Every operation must still succeed. */
static int body_compute_off(void)
{
    cudnnHandle_t h;
    CHILD_CHECK(cudnnCreate(&h) == 0);
    handle = h;
    int dim[4] = {2, 4, 6, 6}, bdim[4] = {1, 4, 1, 1};
    ttensor x, y, b;
    tt_init(&x, 4, dim, 0);
    tt_init(&y, 4, dim, 0);
    tt_init(&b, 4, bdim, 0);
    float one = 1, zero = 0;
    CHILD_CHECK(cudnnAddTensor(h, &one, b.desc, b.dev, &one, y.desc, y.dev) == 0);
    CHILD_CHECK(cudnnTransformTensor(h, &one, x.desc, x.dev, &zero, y.desc, y.dev) == 0);
    CHILD_CHECK(cudnnSetTensor(h, y.desc, y.dev, &one) == 0);
    cudnnActivationDescriptor_t ad;
    cudnnCreateActivationDescriptor(&ad);
    CHILD_CHECK(cudnnActivationForward(h, ad, &one, x.desc, x.dev, &zero, y.desc, y.dev) == 0);
    CHILD_CHECK(cudnnSoftmaxForward(h, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &one, x.desc, x.dev, &zero,
                                    y.desc, y.dev) == 0);
    cudnnLRNDescriptor_t ld;
    cudnnCreateLRNDescriptor(&ld);
    CHILD_CHECK(cudnnLRNCrossChannelForward(h, ld, CUDNN_LRN_CROSS_CHANNEL_DIM1, &one, x.desc, x.dev, &zero, y.desc,
                                            y.dev) == 0);
    cudnnPoolingDescriptor_t pd;
    cudnnCreatePoolingDescriptor(&pd);
    cudnnSetPooling2dDescriptor(pd, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 1, 1, 0, 0, 1, 1);
    CHILD_CHECK(cudnnPoolingForward(h, pd, &one, x.desc, x.dev, &zero, y.desc, y.dev) == 0);
    float *stats;
    cudaMalloc((void **)&stats, 6 * 4 * sizeof(float));
    CHILD_CHECK(cudnnBatchNormalizationForwardTraining(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, x.desc, x.dev,
                                                       y.desc, y.dev, b.desc, stats, stats + 4, 0.1, stats + 8,
                                                       stats + 12, 1e-5, stats + 16, stats + 20) == 0);
    size_t ssize, rsize;
    cudnnDropoutGetStatesSize(h, &ssize);
    cudnnDropoutGetReserveSpaceSize(x.desc, &rsize);
    void *states, *reserve;
    cudaMalloc(&states, ssize);
    cudaMalloc(&reserve, rsize);
    cudnnDropoutDescriptor_t dd;
    cudnnCreateDropoutDescriptor(&dd);
    CHILD_CHECK(cudnnSetDropoutDescriptor(dd, h, 0.5f, states, ssize, 1) == 0);
    CHILD_CHECK(cudnnDropoutForward(h, dd, x.desc, x.dev, y.desc, y.dev, reserve, rsize) == 0);
    cudnnFilterDescriptor_t wd;
    cudnnCreateFilterDescriptor(&wd);
    cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, 4, 3, 3);
    cudnnConvolutionDescriptor_t cd;
    cudnnCreateConvolutionDescriptor(&cd);
    cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
    void *w;
    cudaMalloc(&w, 4 * 4 * 9 * sizeof(float));
    for (int algo = 0; algo < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; algo++) {
        size_t ws;
        if (cudnnGetConvolutionForwardWorkspaceSize(h, x.desc, wd, cd, y.desc, algo, &ws))
            continue;
        void *p = NULL;
        if (ws)
            cudaMalloc(&p, ws);
        CHILD_CHECK(cudnnConvolutionForward(h, &one, x.desc, x.dev, wd, w, cd, algo, p, ws, &one, y.desc, y.dev) == 0);
        CHILD_CHECK(cudnnConvolutionBackwardData(h, &one, wd, w, y.desc, y.dev, cd, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
                                                 NULL, 0, &zero, x.desc, x.dev) == 0);
        CHILD_CHECK(cudnnConvolutionBackwardFilter(h, &one, x.desc, x.dev, y.desc, y.dev, cd,
                                                   CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, NULL, 0, &zero, wd, w) == 0);
        cudaFree(p);
    }
    cudnnDestroyActivationDescriptor(ad);
    cudnnDestroyLRNDescriptor(ld);
    cudnnDestroyPoolingDescriptor(pd);
    cudnnDestroyDropoutDescriptor(dd);
    cudnnDestroyFilterDescriptor(wd);
    cudnnDestroyConvolutionDescriptor(cd);
    cudaFree(stats), cudaFree(states), cudaFree(reserve), cudaFree(w);
    tt_free(&x), tt_free(&y), tt_free(&b);
    return cudnnDestroy(h) != 0;
}

/* A copy fills x on one stream while a convolution on another stream reads it
 * with no event between them: the ordering check must see the convolution's
 * read (compute off, so the copy is long and costs nothing). */
static int body_cross_stream_race(void)
{
    cudnnHandle_t h;
    CHILD_CHECK(cudnnCreate(&h) == 0);
    handle = h;
    cudaStream_t s1, s2;
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    int dim[4] = {16, 64, 64, 64};
    ttensor x, y;
    tt_init(&x, 4, dim, 0);
    tt_init(&y, 4, dim, 0);
    cudnnFilterDescriptor_t wd;
    cudnnCreateFilterDescriptor(&wd);
    cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 64, 64, 3, 3);
    cudnnConvolutionDescriptor_t cd;
    cudnnCreateConvolutionDescriptor(&cd);
    cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
    void *w, *pinned;
    cudaMalloc(&w, 64 * 64 * 9 * sizeof(float));
    CHILD_CHECK(cudaMallocHost(&pinned, x.span * sizeof(float)) == cudaSuccess);
    cudaDeviceSynchronize();
    float one = 1, zero = 0;
    cudaMemcpyAsync(x.dev, pinned, x.span * sizeof(float), cudaMemcpyHostToDevice, s1);
    cudnnSetStream(h, s2);
    cudnnConvolutionForward(h, &one, x.desc, x.dev, wd, w, cd, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0,
                            &zero, y.desc, y.dev);
    return 0;
}

static const struct sim_child_body bodies[] = {
    {"body_compute_off", body_compute_off},
    {"body_cross_stream_race", body_cross_stream_race},
};

static void test_compute_off_touches_nothing(void **state)
{
    (void)state;
    const char *env[] = {"SIMGPU_COMPUTE=0", NULL};
    assert_true(CHILD_OK(sim_child_run(env, "body_compute_off")));
}

static void test_ordering_hazard_seen(void **state)
{
    (void)state;
    const char *env[] = {"SIMGPU_COMPUTE=0", NULL};
    assert_true(CHILD_SEGV(sim_child_run(env, "body_cross_stream_race")));
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
        cmocka_unit_test(test_add_tensor),
        cmocka_unit_test(test_op_tensor),
        cmocka_unit_test(test_set_scale_tensor),
        cmocka_unit_test(test_transform_tensor),
        cmocka_unit_test(test_activation),
        cmocka_unit_test(test_activation_in_place),
        cmocka_unit_test(test_pooling),
        cmocka_unit_test(test_lrn),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_batchnorm_spatial),
        cmocka_unit_test(test_batchnorm_per_activation),
        cmocka_unit_test(test_dropout),
        cmocka_unit_test(test_handle_and_identity),
        cmocka_unit_test(test_tensor_descriptors),
        cmocka_unit_test(test_compute_off_touches_nothing),
        cmocka_unit_test(test_ordering_hazard_seen),
    };
    return cmocka_run_group_tests(tests, setup_handle, teardown_handle);
}
