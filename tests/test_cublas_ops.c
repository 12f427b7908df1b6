/*
 * test_cublas_ops.c — numerical tests of the cuBLAS routines the simulated
 * device provides, written as an ordinary CUDA program (real headers, real
 * import libraries; the simulation comes in through LD_LIBRARY_PATH).
 *
 * Every routine is compared with a naive implementation written here —
 * direct loops, double accumulation — on random shapes with transposes,
 * leading dimensions above the minimum, odd sizes, negative and non-unit
 * strides and alpha/beta other than (1, 0); the normwise relative error
 * must stay below 1e-5. Each device operand is placed at the very end of its
 * allocation, so reading or writing one element past the extent cuBLAS
 * defines would fault, and the padding between rows and the leading
 * dimension is filled with a sentinel that must survive the call.
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

#define TOLERANCE 1e-5
#define SENTINEL 12345.0f

static cublasHandle_t g_handle;
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_u64(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

static int rand_int(int lo, int hi) { return lo + (int)(next_u64() % (uint64_t)(hi - lo + 1)); }
static float rand_float(void) { return (float)((double)(next_u64() >> 11) / 9007199254740992.0 * 2.0 - 1.0); }

/* ---- device buffers placed at the end of their allocation ---------------- */

struct dbuf {
    void *base;
    float *p;
    size_t bytes;
};

static struct dbuf dev_tail(size_t bytes)
{
    struct dbuf b = {NULL, NULL, bytes};
    size_t alloc = (bytes + 511) / 512 * 512;
    if (alloc == 0)
        alloc = 512;
    assert_int_equal(cudaMalloc(&b.base, alloc), cudaSuccess);
    b.p = (float *)((char *)b.base + alloc - bytes);
    return b;
}

static void dev_put(struct dbuf *b, const float *h)
{
    assert_int_equal(cudaMemcpy(b->p, h, b->bytes, cudaMemcpyHostToDevice), cudaSuccess);
}

static void dev_get(float *h, const struct dbuf *b)
{
    assert_int_equal(cudaMemcpy(h, b->p, b->bytes, cudaMemcpyDeviceToHost), cudaSuccess);
}

static void dev_free(struct dbuf *b) { assert_int_equal(cudaFree(b->base), cudaSuccess); }

/* ---- host matrices with padding ------------------------------------------ */

static size_t matrix_elems(int rows, int cols, int ld) { return rows && cols ? (size_t)(cols - 1) * ld + rows : 0; }

/* Random values inside the matrix, SENTINEL in the padding. */
static float *host_matrix(int rows, int cols, int ld)
{
    size_t n = matrix_elems(rows, cols, ld);
    float *h = malloc((n ? n : 1) * sizeof(float));
    assert_non_null(h);
    for (size_t i = 0; i < n; i++)
        h[i] = ((int)(i % (size_t)ld) < rows) ? rand_float() : SENTINEL;
    return h;
}

static double elem(const float *a, int ld, int trans, int i, int j)
{
    return trans ? a[(size_t)i * ld + j] : a[(size_t)j * ld + i];
}

/* Normwise relative error of got against ref over a rows x cols matrix;
 * also fails the test if the padding was written. */
static double matrix_error(const float *got, const double *ref, int rows, int cols, int ld)
{
    double err = 0, norm = 0;
    for (int j = 0; j < cols; j++) {
        for (int i = 0; i < ld && (size_t)j * ld + i < matrix_elems(rows, cols, ld); i++) {
            size_t at = (size_t)j * ld + i;
            if (i >= rows) {
                assert_true(got[at] == SENTINEL);
                continue;
            }
            double d = fabs(got[at] - ref[at]);
            if (!(d <= err))
                err = d; /* NaN propagates as an error */
            if (fabs(ref[at]) > norm)
                norm = fabs(ref[at]);
        }
    }
    return err / (norm > 0 ? norm : 1);
}

/* Largest relative error seen in the running test, reported at its end. */
static double g_worst;

static void expect_accurate(double err, const char *what)
{
    if (!(err <= g_worst))
        g_worst = err;
    if (!(err < TOLERANCE))
        fail_msg("%s: relative error %g (limit %g)", what, err, TOLERANCE);
}

static void report_worst(const char *test)
{
    print_message("%s: largest relative error %.3g\n", test, g_worst);
    g_worst = 0;
}

static const float k_scalars[] = {1.0f, -1.0f, 0.5f, 1.75f, -0.3f, 2.0f};
static float rand_scalar(void) { return k_scalars[rand_int(0, 5)]; }

static cublasOperation_t rand_op(void)
{
    static const cublasOperation_t ops[] = {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C};
    return ops[rand_int(0, 2)];
}

/* ---- Sgemm / SgemmStridedBatched ----------------------------------------- */

static void ref_gemm(int ta, int tb, int m, int n, int k, double alpha, const float *a, int lda, const float *b,
                     int ldb, double beta, const float *c_in, double *c, int ldc)
{
    for (size_t i = 0; i < matrix_elems(m, n, ldc); i++)
        c[i] = c_in[i];
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double s = 0;
            for (int l = 0; l < k; l++)
                s += elem(a, lda, ta, i, l) * elem(b, ldb, tb, l, j);
            double prev = beta == 0 ? 0 : beta * c_in[(size_t)j * ldc + i];
            c[(size_t)j * ldc + i] = (alpha == 0 ? 0 : alpha * s) + prev;
        }
}

/* One random GEMM; returns its relative error. */
static double run_gemm_case(int m, int n, int k, cublasOperation_t opa, cublasOperation_t opb, float alpha,
                            float beta, int nan_c)
{
    int ta = opa != CUBLAS_OP_N, tb = opb != CUBLAS_OP_N;
    int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    int lda = (ar > 0 ? ar : 1) + rand_int(0, 4), ldb = (br > 0 ? br : 1) + rand_int(0, 4);
    int ldc = m + rand_int(0, 4);
    float *a = host_matrix(ar, ac, lda), *b = host_matrix(br, bc, ldb), *c = host_matrix(m, n, ldc);
    if (nan_c)
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++)
                c[(size_t)j * ldc + i] = NAN;
    size_t cn = matrix_elems(m, n, ldc);
    double *ref = malloc(cn * sizeof(double));
    float *got = malloc(cn * sizeof(float));
    ref_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ref, ldc);

    struct dbuf da = dev_tail(matrix_elems(ar, ac, lda) * 4), db = dev_tail(matrix_elems(br, bc, ldb) * 4);
    struct dbuf dc = dev_tail(cn * 4);
    if (da.bytes)
        dev_put(&da, a);
    if (db.bytes)
        dev_put(&db, b);
    dev_put(&dc, c);
    assert_int_equal(cublasSgemm(g_handle, opa, opb, m, n, k, &alpha, da.p, lda, db.p, ldb, &beta, dc.p, ldc),
                     CUBLAS_STATUS_SUCCESS);
    dev_get(got, &dc);
    double err = matrix_error(got, ref, m, n, ldc);
    dev_free(&da);
    dev_free(&db);
    dev_free(&dc);
    free(a);
    free(b);
    free(c);
    free(ref);
    free(got);
    return err;
}

static void test_sgemm_random_shapes(void **state)
{
    (void)state;
    for (int it = 0; it < 40; it++) {
        int m = rand_int(1, 67), n = rand_int(1, 67), k = rand_int(1, 67);
        float beta = it % 5 == 0 ? 0.0f : rand_scalar();
        expect_accurate(run_gemm_case(m, n, k, rand_op(), rand_op(), rand_scalar(), beta, beta == 0.0f), "sgemm");
    }
    /* Large enough to go through OpenBLAS's blocked path. */
    expect_accurate(run_gemm_case(257, 131, 301, CUBLAS_OP_T, CUBLAS_OP_N, 0.75f, -0.5f, 0), "sgemm");
    expect_accurate(run_gemm_case(129, 263, 255, CUBLAS_OP_N, CUBLAS_OP_T, -1.25f, 1.0f, 0), "sgemm");
    report_worst(__func__);
}

/* beta == 0: C is not read, so NaN there must not reach the result;
 * alpha == 0 or k == 0: A and B are not read and C = beta * C. */
static void test_sgemm_scalar_special_cases(void **state)
{
    (void)state;
    expect_accurate(run_gemm_case(33, 17, 9, CUBLAS_OP_N, CUBLAS_OP_N, 1.0f, 0.0f, 1), "sgemm");
    expect_accurate(run_gemm_case(33, 17, 0, CUBLAS_OP_N, CUBLAS_OP_T, 1.0f, -2.0f, 0), "sgemm");
    expect_accurate(run_gemm_case(33, 17, 0, CUBLAS_OP_T, CUBLAS_OP_N, 1.0f, 0.0f, 1), "sgemm");

    /* alpha == 0 with NaN in A and B: C = beta * C exactly. */
    int m = 5, n = 7, k = 3;
    float a[15], b[21], c[35], got[35];
    for (int i = 0; i < 15; i++)
        a[i] = NAN;
    for (int i = 0; i < 21; i++)
        b[i] = NAN;
    for (int i = 0; i < 35; i++)
        c[i] = (float)i;
    struct dbuf da = dev_tail(sizeof a), db = dev_tail(sizeof b), dc = dev_tail(sizeof c);
    dev_put(&da, a);
    dev_put(&db, b);
    dev_put(&dc, c);
    float alpha = 0.0f, beta = 3.0f;
    assert_int_equal(cublasSgemm(g_handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, da.p, m, db.p, k, &beta,
                                 dc.p, m),
                     CUBLAS_STATUS_SUCCESS);
    dev_get(got, &dc);
    for (int i = 0; i < 35; i++)
        assert_true(got[i] == 3.0f * (float)i);
    dev_free(&da);
    dev_free(&db);
    dev_free(&dc);
    report_worst(__func__);
}

static void test_sgemm_strided_batched(void **state)
{
    (void)state;
    for (int it = 0; it < 12; it++) {
        int m = rand_int(1, 31), n = rand_int(1, 31), k = rand_int(1, 31), batch = rand_int(1, 5);
        cublasOperation_t opa = rand_op(), opb = rand_op();
        int ta = opa != CUBLAS_OP_N, tb = opb != CUBLAS_OP_N;
        int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
        int lda = ar + rand_int(0, 3), ldb = br + rand_int(0, 3), ldc = m + rand_int(0, 3);
        /* Gaps between batch entries, and A shared by all of them (stride 0)
         * in every third case. */
        long long sa = it % 3 == 0 ? 0 : (long long)matrix_elems(ar, ac, lda) + rand_int(0, 7);
        long long sb = (long long)matrix_elems(br, bc, ldb) + rand_int(0, 7);
        long long sc = (long long)matrix_elems(m, n, ldc) + rand_int(0, 7);
        size_t na = (size_t)sa * (batch - 1) + matrix_elems(ar, ac, lda);
        size_t nb = (size_t)sb * (batch - 1) + matrix_elems(br, bc, ldb);
        size_t nc = (size_t)sc * (batch - 1) + matrix_elems(m, n, ldc);
        float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(nc * 4), *got = malloc(nc * 4);
        double *ref = malloc(nc * sizeof(double));
        for (size_t i = 0; i < na; i++)
            a[i] = rand_float();
        for (size_t i = 0; i < nb; i++)
            b[i] = rand_float();
        for (size_t i = 0; i < nc; i++)
            c[i] = SENTINEL;
        for (int q = 0; q < batch; q++)
            for (int j = 0; j < n; j++)
                for (int i = 0; i < m; i++)
                    c[q * sc + (size_t)j * ldc + i] = rand_float();
        float alpha = rand_scalar(), beta = rand_scalar();
        for (size_t i = 0; i < nc; i++)
            ref[i] = c[i];
        for (int q = 0; q < batch; q++)
            ref_gemm(ta, tb, m, n, k, alpha, a + q * sa, lda, b + q * sb, ldb, beta, c + q * sc, ref + q * sc, ldc);
        struct dbuf da = dev_tail(na * 4), db = dev_tail(nb * 4), dc = dev_tail(nc * 4);
        dev_put(&da, a);
        dev_put(&db, b);
        dev_put(&dc, c);
        assert_int_equal(cublasSgemmStridedBatched(g_handle, opa, opb, m, n, k, &alpha, da.p, lda, sa, db.p, ldb,
                                                   sb, &beta, dc.p, ldc, sc, batch),
                         CUBLAS_STATUS_SUCCESS);
        dev_get(got, &dc);
        double err = 0, norm = 0;
        for (size_t i = 0; i < nc; i++) {
            if (ref[i] == SENTINEL) {
                assert_true(got[i] == SENTINEL);
                continue;
            }
            err = fmax(err, fabs(got[i] - ref[i]));
            norm = fmax(norm, fabs(ref[i]));
        }
        expect_accurate(err / norm, "sgemm strided batched");
        dev_free(&da);
        dev_free(&db);
        dev_free(&dc);
        free(a);
        free(b);
        free(c);
        free(got);
        free(ref);
    }
    report_worst(__func__);
}

/* ---- vectors ------------------------------------------------------------- */

static size_t vector_elems(int n, int inc) { return n > 0 ? 1 + (size_t)(n - 1) * (size_t)abs(inc) : 0; }

/* Position of logical element i under the BLAS stride convention. */
static size_t vpos(int n, int inc, int i) { return inc >= 0 ? (size_t)i * inc : (size_t)(n - 1 - i) * (size_t)(-inc); }

static float *host_vector(int n, int inc)
{
    size_t len = vector_elems(n, inc);
    float *v = malloc((len ? len : 1) * sizeof(float));
    for (size_t i = 0; i < len; i++)
        v[i] = SENTINEL;
    for (int i = 0; i < n; i++)
        v[vpos(n, inc, i)] = rand_float();
    return v;
}

static int rand_inc(int allow_negative)
{
    static const int incs[] = {1, 2, 3, -1, -2, -3};
    return incs[rand_int(0, allow_negative ? 5 : 2)];
}

/* Relative error of a strided vector result; untouched gaps must keep the
 * sentinel. */
static double vector_error(const float *got, const double *ref, int n, int inc)
{
    double err = 0, norm = 0;
    size_t len = vector_elems(n, inc);
    for (size_t i = 0; i < len; i++) {
        if (i % (size_t)abs(inc) != 0) {
            assert_true(got[i] == SENTINEL);
            continue;
        }
        double d = fabs(got[i] - ref[i]);
        if (!(d <= err))
            err = d;
        norm = fmax(norm, fabs(ref[i]));
    }
    return err / (norm > 0 ? norm : 1);
}

static void test_sgemv_random(void **state)
{
    (void)state;
    for (int it = 0; it < 30; it++) {
        int m = rand_int(1, 80), n = rand_int(1, 80), lda = m + rand_int(0, 4);
        cublasOperation_t op = rand_op();
        int t = op != CUBLAS_OP_N;
        int lenx = t ? m : n, leny = t ? n : m, incx = rand_inc(1), incy = rand_inc(1);
        float alpha = rand_scalar(), beta = it % 4 == 0 ? 0.0f : rand_scalar();
        float *a = host_matrix(m, n, lda), *x = host_vector(lenx, incx), *y = host_vector(leny, incy);
        if (beta == 0.0f)
            for (int i = 0; i < leny; i++)
                y[vpos(leny, incy, i)] = NAN;
        size_t ny = vector_elems(leny, incy);
        double *ref = malloc(ny * sizeof(double));
        float *got = malloc(ny * sizeof(float));
        for (size_t i = 0; i < ny; i++)
            ref[i] = y[i];
        for (int i = 0; i < leny; i++) {
            double s = 0;
            for (int l = 0; l < lenx; l++)
                s += elem(a, lda, t, i, l) * x[vpos(lenx, incx, l)];
            size_t at = vpos(leny, incy, i);
            ref[at] = alpha * s + (beta == 0 ? 0 : beta * (double)y[at]);
        }
        struct dbuf da = dev_tail(matrix_elems(m, n, lda) * 4), dx = dev_tail(vector_elems(lenx, incx) * 4);
        struct dbuf dy = dev_tail(ny * 4);
        dev_put(&da, a);
        dev_put(&dx, x);
        dev_put(&dy, y);
        assert_int_equal(cublasSgemv(g_handle, op, m, n, &alpha, da.p, lda, dx.p, incx, &beta, dy.p, incy),
                         CUBLAS_STATUS_SUCCESS);
        dev_get(got, &dy);
        expect_accurate(vector_error(got, ref, leny, incy), "sgemv");
        dev_free(&da);
        dev_free(&dx);
        dev_free(&dy);
        free(a);
        free(x);
        free(y);
        free(ref);
        free(got);
    }
    report_worst(__func__);
}

static void test_saxpy_scal_copy(void **state)
{
    (void)state;
    for (int it = 0; it < 30; it++) {
        int n = rand_int(1, 1500), incx = rand_inc(1), incy = rand_inc(1);
        float alpha = rand_scalar();
        float *x = host_vector(n, incx), *y = host_vector(n, incy);
        size_t nx = vector_elems(n, incx), ny = vector_elems(n, incy);
        double *ref = malloc(ny * sizeof(double));
        float *got = malloc((nx > ny ? nx : ny) * sizeof(float));
        struct dbuf dx = dev_tail(nx * 4), dy = dev_tail(ny * 4);
        dev_put(&dx, x);

        /* y = alpha * x + y */
        for (size_t i = 0; i < ny; i++)
            ref[i] = y[i];
        for (int i = 0; i < n; i++)
            ref[vpos(n, incy, i)] = (double)alpha * x[vpos(n, incx, i)] + y[vpos(n, incy, i)];
        dev_put(&dy, y);
        assert_int_equal(cublasSaxpy(g_handle, n, &alpha, dx.p, incx, dy.p, incy), CUBLAS_STATUS_SUCCESS);
        dev_get(got, &dy);
        expect_accurate(vector_error(got, ref, n, incy), "saxpy");

        /* y = x */
        for (int i = 0; i < n; i++)
            ref[vpos(n, incy, i)] = x[vpos(n, incx, i)];
        dev_put(&dy, y);
        assert_int_equal(cublasScopy(g_handle, n, dx.p, incx, dy.p, incy), CUBLAS_STATUS_SUCCESS);
        dev_get(got, &dy);
        assert_true(vector_error(got, ref, n, incy) == 0);

        /* x = alpha * x (positive strides only, as in BLAS) */
        int sinc = abs(incx);
        float *xs = host_vector(n, sinc);
        size_t ns = vector_elems(n, sinc);
        double *sref = malloc(ns * sizeof(double));
        for (size_t i = 0; i < ns; i++)
            sref[i] = i % (size_t)sinc ? xs[i] : (double)alpha * xs[i];
        struct dbuf ds = dev_tail(ns * 4);
        dev_put(&ds, xs);
        assert_int_equal(cublasSscal(g_handle, n, &alpha, ds.p, sinc), CUBLAS_STATUS_SUCCESS);
        dev_get(got, &ds);
        expect_accurate(vector_error(got, sref, n, sinc), "sscal");

        dev_free(&dx);
        dev_free(&dy);
        dev_free(&ds);
        free(x);
        free(y);
        free(xs);
        free(ref);
        free(sref);
        free(got);
    }
    report_worst(__func__);
}

static void test_reductions(void **state)
{
    (void)state;
    for (int it = 0; it < 30; it++) {
        int n = rand_int(1, 2000), incx = rand_inc(1), incy = rand_inc(1);
        float *x = host_vector(n, incx), *y = host_vector(n, incy);
        /* Correlate y with x so the dot product is far from zero and its
         * relative error is meaningful. */
        for (int i = 0; i < n; i++)
            y[vpos(n, incy, i)] = 0.5f * x[vpos(n, incx, i)] + 0.5f * y[vpos(n, incy, i)];
        double dot = 0, asum = 0, nrm = 0;
        int pinc = abs(incx);
        float *xp = host_vector(n, pinc);
        for (int i = 0; i < n; i++) {
            dot += (double)x[vpos(n, incx, i)] * y[vpos(n, incy, i)];
            asum += fabs(xp[(size_t)i * pinc]);
            nrm += (double)xp[(size_t)i * pinc] * xp[(size_t)i * pinc];
        }
        nrm = sqrt(nrm);
        struct dbuf dx = dev_tail(vector_elems(n, incx) * 4), dy = dev_tail(vector_elems(n, incy) * 4);
        struct dbuf dp = dev_tail(vector_elems(n, pinc) * 4);
        dev_put(&dx, x);
        dev_put(&dy, y);
        dev_put(&dp, xp);
        float r_dot = NAN, r_asum = NAN, r_nrm = NAN;
        assert_int_equal(cublasSdot(g_handle, n, dx.p, incx, dy.p, incy, &r_dot), CUBLAS_STATUS_SUCCESS);
        assert_int_equal(cublasSasum(g_handle, n, dp.p, pinc, &r_asum), CUBLAS_STATUS_SUCCESS);
        assert_int_equal(cublasSnrm2(g_handle, n, dp.p, pinc, &r_nrm), CUBLAS_STATUS_SUCCESS);
        expect_accurate(fabs(r_dot - dot) / fabs(dot), "sdot");
        expect_accurate(fabs(r_asum - asum) / asum, "sasum");
        expect_accurate(fabs(r_nrm - nrm) / nrm, "snrm2");
        dev_free(&dx);
        dev_free(&dy);
        dev_free(&dp);
        free(x);
        free(y);
        free(xp);
    }
    /* BLAS edge cases: empty vectors and non-positive strides give 0. */
    float r = 7.0f;
    assert_int_equal(cublasSdot(g_handle, 0, NULL, 1, NULL, 1, &r), CUBLAS_STATUS_SUCCESS);
    assert_true(r == 0.0f);
    r = 7.0f;
    struct dbuf d = dev_tail(16);
    assert_int_equal(cublasSnrm2(g_handle, 4, d.p, 0, &r), CUBLAS_STATUS_SUCCESS);
    assert_true(r == 0.0f);
    r = 7.0f;
    assert_int_equal(cublasSasum(g_handle, 4, d.p, -1, &r), CUBLAS_STATUS_SUCCESS);
    assert_true(r == 0.0f);
    dev_free(&d);
    report_worst(__func__);
}

/* ---- Sgeam --------------------------------------------------------------- */

static void test_sgeam_random(void **state)
{
    (void)state;
    for (int it = 0; it < 30; it++) {
        int m = rand_int(1, 70), n = rand_int(1, 70);
        cublasOperation_t opa = rand_op(), opb = rand_op();
        int ta = opa != CUBLAS_OP_N, tb = opb != CUBLAS_OP_N;
        /* Every fourth case is in place, C = A or C = B, which cuBLAS
         * allows only untransposed with the same leading dimension. */
        int inplace = it % 4 == 1 ? 1 : it % 4 == 3 ? 2 : 0;
        if (inplace == 1)
            ta = 0, opa = CUBLAS_OP_N;
        if (inplace == 2)
            tb = 0, opb = CUBLAS_OP_N;
        int ldc = m + rand_int(0, 4);
        int lda = inplace == 1 ? ldc : (ta ? n : m) + rand_int(0, 4);
        int ldb = inplace == 2 ? ldc : (tb ? n : m) + rand_int(0, 4);
        float alpha = rand_scalar(), beta = it % 6 == 0 ? 0.0f : rand_scalar();
        float *a = host_matrix(ta ? n : m, ta ? m : n, lda), *b = host_matrix(tb ? n : m, tb ? m : n, ldb);
        float *c = host_matrix(m, n, ldc);
        if (beta == 0.0f && inplace != 2)
            for (size_t i = 0; i < matrix_elems(tb ? n : m, tb ? m : n, ldb); i++)
                b[i] = NAN; /* not referenced when beta == 0 */
        size_t cn = matrix_elems(m, n, ldc);
        double *ref = malloc(cn * sizeof(double));
        float *got = malloc(cn * sizeof(float));
        const float *src_a = inplace == 1 ? c : a, *src_b = inplace == 2 ? c : b;
        for (size_t i = 0; i < cn; i++)
            ref[i] = c[i];
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++)
                ref[(size_t)j * ldc + i] = alpha * elem(src_a, lda, ta, i, j) +
                                           (beta == 0 ? 0 : beta * elem(src_b, ldb, tb, i, j));
        struct dbuf dc = dev_tail(cn * 4), da = {0}, db = {0};
        dev_put(&dc, c);
        const float *pa = dc.p, *pb = dc.p;
        if (inplace != 1) {
            da = dev_tail(matrix_elems(ta ? n : m, ta ? m : n, lda) * 4);
            dev_put(&da, a);
            pa = da.p;
        }
        if (inplace != 2) {
            db = dev_tail(matrix_elems(tb ? n : m, tb ? m : n, ldb) * 4);
            dev_put(&db, b);
            pb = db.p;
        }
        assert_int_equal(cublasSgeam(g_handle, opa, opb, m, n, &alpha, pa, lda, &beta, pb, ldb, dc.p, ldc),
                         CUBLAS_STATUS_SUCCESS);
        dev_get(got, &dc);
        expect_accurate(matrix_error(got, ref, m, n, ldc), "sgeam");
        dev_free(&dc);
        if (da.base)
            dev_free(&da);
        if (db.base)
            dev_free(&db);
        free(a);
        free(b);
        free(c);
        free(ref);
        free(got);
    }
    report_worst(__func__);
}

/* ---- device pointer mode and determinism --------------------------------- */

static void test_device_pointer_mode(void **state)
{
    (void)state;
    int m = 19, n = 23, k = 11;
    float *a = host_matrix(m, k, m), *b = host_matrix(k, n, k), *c = host_matrix(m, n, m);
    float scalars[2] = {0.5f, -1.5f};
    double *ref = malloc((size_t)m * n * sizeof(double));
    float *got = malloc((size_t)m * n * sizeof(float));
    ref_gemm(0, 0, m, n, k, scalars[0], a, m, b, k, scalars[1], c, ref, m);
    struct dbuf da = dev_tail((size_t)m * k * 4), db = dev_tail((size_t)k * n * 4), dc = dev_tail((size_t)m * n * 4);
    struct dbuf ds = dev_tail(sizeof scalars), dr = dev_tail(4);
    dev_put(&da, a);
    dev_put(&db, b);
    dev_put(&dc, c);
    dev_put(&ds, scalars);
    assert_int_equal(cublasSetPointerMode(g_handle, CUBLAS_POINTER_MODE_DEVICE), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSgemm(g_handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, ds.p, da.p, m, db.p, k, ds.p + 1,
                                 dc.p, m),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSasum(g_handle, m * k, da.p, 1, dr.p), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSetPointerMode(g_handle, CUBLAS_POINTER_MODE_HOST), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    dev_get(got, &dc);
    expect_accurate(matrix_error(got, ref, m, n, m), "sgemm, device pointer mode");
    float asum_dev = 0;
    assert_int_equal(cudaMemcpy(&asum_dev, dr.p, 4, cudaMemcpyDeviceToHost), cudaSuccess);
    double asum = 0;
    for (int i = 0; i < m * k; i++)
        asum += fabs(a[i]);
    expect_accurate(fabs(asum_dev - asum) / asum, "sasum, device pointer mode");
    dev_free(&da);
    dev_free(&db);
    dev_free(&dc);
    dev_free(&ds);
    dev_free(&dr);
    free(a);
    free(b);
    free(c);
    free(ref);
    free(got);
    report_worst(__func__);
}

/* The same call on the same data gives the same bits, every time. */
static void test_results_are_repeatable(void **state)
{
    (void)state;
    int m = 200, n = 150, k = 333;
    float *a = host_matrix(m, k, m), *b = host_matrix(k, n, k);
    float *c1 = malloc((size_t)m * n * 4), *c2 = malloc((size_t)m * n * 4);
    struct dbuf da = dev_tail((size_t)m * k * 4), db = dev_tail((size_t)k * n * 4), dc = dev_tail((size_t)m * n * 4);
    dev_put(&da, a);
    dev_put(&db, b);
    float alpha = 1.0f, beta = 0.0f, d1 = 0, d2 = 0;
    for (int rep = 0; rep < 2; rep++) {
        assert_int_equal(cublasSgemm(g_handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, da.p, m, db.p, k, &beta,
                                     dc.p, m),
                         CUBLAS_STATUS_SUCCESS);
        dev_get(rep ? c2 : c1, &dc);
        assert_int_equal(cublasSdot(g_handle, m * k, da.p, 1, da.p, 1, rep ? &d2 : &d1), CUBLAS_STATUS_SUCCESS);
    }
    assert_memory_equal(c1, c2, (size_t)m * n * 4);
    assert_memory_equal(&d1, &d2, sizeof d1);
    dev_free(&da);
    dev_free(&db);
    dev_free(&dc);
    free(a);
    free(b);
    free(c1);
    free(c2);
}

static int setup(void **state)
{
    (void)state;
    return cublasCreate(&g_handle) == CUBLAS_STATUS_SUCCESS ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return cublasDestroy(g_handle) == CUBLAS_STATUS_SUCCESS ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sgemm_random_shapes),
        cmocka_unit_test(test_sgemm_scalar_special_cases),
        cmocka_unit_test(test_sgemm_strided_batched),
        cmocka_unit_test(test_sgemv_random),
        cmocka_unit_test(test_saxpy_scal_copy),
        cmocka_unit_test(test_reductions),
        cmocka_unit_test(test_sgeam_random),
        cmocka_unit_test(test_device_pointer_mode),
        cmocka_unit_test(test_results_are_repeatable),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
