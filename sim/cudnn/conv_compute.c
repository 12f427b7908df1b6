/*
 * conv_compute.c — the arithmetic of convolution forward, backward data and
 * backward filter, shared by every algorithm.
 *
 * Each image and group is lowered to a matrix product: im2col gathers the
 * input patches into host scratch with a fixed layout, and one OpenBLAS
 * sgemm (single-threaded, see simdnn_blas_init) does the multiply-adds. The
 * blocking depends on the problem shape only — never on the algorithm or on
 * the workspace the caller passed — so every algorithm gives the same bits,
 * and the same run gives the same bits every time.
 */
#include <stdlib.h>
#include <string.h>
#include <cblas.h>
#include "sim/cudnn/conv.h"

/* Filter as a [K][cg * taps] matrix, mirrored for true convolution. */
static float *pack_filter(const simdnn_conv *g, const float *w)
{
    int64_t taps = simdnn_conv_taps(g), crs = g->cg * taps;
    float *m = malloc((size_t)(g->k * crs) * sizeof *m);
    if (!m)
        return NULL;
    for (int k = 0; k < g->k; k++)
        for (int c = 0; c < g->cg; c++)
            for (int t = 0; t < g->filt[0]; t++)
                for (int u = 0; u < g->filt[1]; u++)
                    for (int v = 0; v < g->filt[2]; v++) {
                        int tt = g->flip ? g->filt[0] - 1 - t : t;
                        int uu = g->flip ? g->filt[1] - 1 - u : u;
                        int vv = g->flip ? g->filt[2] - 1 - v : v;
                        int64_t tap = ((int64_t)t * g->filt[1] + u) * g->filt[2] + v;
                        m[k * crs + c * taps + tap] =
                            w[k * g->ws[0] + c * g->ws[1] + tt * g->ws[2] + uu * g->ws[3] + vv * g->ws[4]];
                    }
    return m;
}

/* Patches of image n, group gi: col[cg * taps][P], zero where the window
 * falls in the padding. */
static void im2col(const simdnn_conv *g, const float *x, int n, int gi, float *col)
{
    int64_t P = simdnn_conv_out_positions(g);
    int64_t row = 0;
    for (int c = 0; c < g->cg; c++) {
        const float *xc = x + n * g->xs[0] + (int64_t)(gi * g->cg + c) * g->xs[1];
        for (int t = 0; t < g->filt[0]; t++)
            for (int u = 0; u < g->filt[1]; u++)
                for (int v = 0; v < g->filt[2]; v++, row++) {
                    float *dst_row = col + row * P;
                    for (int od = 0; od < g->out[0]; od++) {
                        int64_t id = (int64_t)od * g->str[0] - g->pad[0] + (int64_t)t * g->dil[0];
                        for (int oh = 0; oh < g->out[1]; oh++) {
                            int64_t ih = (int64_t)oh * g->str[1] - g->pad[1] + (int64_t)u * g->dil[1];
                            float *dst = dst_row + ((int64_t)od * g->out[1] + oh) * g->out[2];
                            if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1]) {
                                memset(dst, 0, (size_t)g->out[2] * sizeof *dst);
                                continue;
                            }
                            const float *src = xc + id * g->xs[2] + ih * g->xs[3];
                            for (int ow = 0; ow < g->out[2]; ow++) {
                                int64_t iw = (int64_t)ow * g->str[2] - g->pad[2] + (int64_t)v * g->dil[2];
                                dst[ow] = (iw >= 0 && iw < g->in[2]) ? src[iw * g->xs[4]] : 0.0f;
                            }
                        }
                    }
                }
    }
}

/* Adds col[cg * taps][P] back onto the image positions it was gathered from:
 * acc is one image, packed [C][in positions]. */
static void col2im_add(const simdnn_conv *g, const float *col, int gi, float *acc)
{
    int64_t P = simdnn_conv_out_positions(g), inP = simdnn_conv_in_positions(g);
    int64_t row = 0;
    for (int c = 0; c < g->cg; c++) {
        float *ac = acc + (int64_t)(gi * g->cg + c) * inP;
        for (int t = 0; t < g->filt[0]; t++)
            for (int u = 0; u < g->filt[1]; u++)
                for (int v = 0; v < g->filt[2]; v++, row++) {
                    const float *src_row = col + row * P;
                    for (int od = 0; od < g->out[0]; od++) {
                        int64_t id = (int64_t)od * g->str[0] - g->pad[0] + (int64_t)t * g->dil[0];
                        if (id < 0 || id >= g->in[0])
                            continue;
                        for (int oh = 0; oh < g->out[1]; oh++) {
                            int64_t ih = (int64_t)oh * g->str[1] - g->pad[1] + (int64_t)u * g->dil[1];
                            if (ih < 0 || ih >= g->in[1])
                                continue;
                            const float *src = src_row + ((int64_t)od * g->out[1] + oh) * g->out[2];
                            float *dst = ac + ((int64_t)id * g->in[1] + ih) * g->in[2];
                            for (int ow = 0; ow < g->out[2]; ow++) {
                                int64_t iw = (int64_t)ow * g->str[2] - g->pad[2] + (int64_t)v * g->dil[2];
                                if (iw >= 0 && iw < g->in[2])
                                    dst[iw] += src[ow];
                            }
                        }
                    }
                }
    }
}

/* dy of image n, group gi, as a packed [kg][P] matrix. */
static void gather_output(const simdnn_conv *g, const float *dy, int n, int gi, float *dst)
{
    for (int k = 0; k < g->kg; k++) {
        const float *src = dy + n * g->ys[0] + (int64_t)(gi * g->kg + k) * g->ys[1];
        for (int od = 0; od < g->out[0]; od++)
            for (int oh = 0; oh < g->out[1]; oh++) {
                const float *s = src + od * g->ys[2] + oh * g->ys[3];
                for (int ow = 0; ow < g->out[2]; ow++)
                    *dst++ = s[ow * g->ys[4]];
            }
    }
}

int simdnn_conv_forward(const simdnn_conv *g, const float *x, const float *w, simdnn_conv_emit_fn emit,
                        void *ctx)
{
    int64_t P = simdnn_conv_out_positions(g), crs = g->cg * simdnn_conv_taps(g);
    float *wm = pack_filter(g, w);
    float *col = malloc((size_t)(crs * P) * sizeof *col);
    float *out = malloc((size_t)(g->kg * P) * sizeof *out);
    int rc = -1;
    if (!wm || !col || !out)
        goto done;
    for (int n = 0; n < g->n; n++)
        for (int gi = 0; gi < g->groups; gi++) {
            im2col(g, x, n, gi, col);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->kg, (int)P, (int)crs, 1.0f,
                        wm + (int64_t)gi * g->kg * crs, (int)crs, col, (int)P, 0.0f, out, (int)P);
            emit(ctx, g, n, gi, out);
        }
    rc = 0;
done:
    free(wm);
    free(col);
    free(out);
    return rc;
}

int simdnn_conv_backward_data(const simdnn_conv *g, const float *w, const float *dy, float *dx, float alpha,
                              float beta)
{
    int64_t P = simdnn_conv_out_positions(g), inP = simdnn_conv_in_positions(g);
    int64_t crs = g->cg * simdnn_conv_taps(g);
    float *wm = pack_filter(g, w);
    float *col = malloc((size_t)(crs * P) * sizeof *col);
    float *dyb = malloc((size_t)(g->kg * P) * sizeof *dyb);
    float *acc = malloc((size_t)(g->c * inP) * sizeof *acc);
    int rc = -1;
    if (!wm || !col || !dyb || !acc)
        goto done;
    for (int n = 0; n < g->n; n++) {
        memset(acc, 0, (size_t)(g->c * inP) * sizeof *acc);
        for (int gi = 0; gi < g->groups; gi++) {
            gather_output(g, dy, n, gi, dyb);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)crs, (int)P, g->kg, 1.0f,
                        wm + (int64_t)gi * g->kg * crs, (int)crs, dyb, (int)P, 0.0f, col, (int)P);
            col2im_add(g, col, gi, acc);
        }
        for (int c = 0; c < g->c; c++)
            for (int d = 0; d < g->in[0]; d++)
                for (int h = 0; h < g->in[1]; h++) {
                    float *o = dx + n * g->xs[0] + c * g->xs[1] + d * g->xs[2] + h * g->xs[3];
                    const float *a = acc + c * inP + ((int64_t)d * g->in[1] + h) * g->in[2];
                    for (int wi = 0; wi < g->in[2]; wi++)
                        o[wi * g->xs[4]] = simdnn_blend(alpha, a[wi], beta, o[wi * g->xs[4]]);
                }
    }
    rc = 0;
done:
    free(wm);
    free(col);
    free(dyb);
    free(acc);
    return rc;
}

int simdnn_conv_backward_filter(const simdnn_conv *g, const float *x, const float *dy, float *dw, float alpha,
                                float beta)
{
    int64_t P = simdnn_conv_out_positions(g), taps = simdnn_conv_taps(g), crs = g->cg * taps;
    float *col = malloc((size_t)(crs * P) * sizeof *col);
    float *dyb = malloc((size_t)(g->kg * P) * sizeof *dyb);
    float *acc = calloc((size_t)(g->k * crs), sizeof *acc);
    int rc = -1;
    if (!col || !dyb || !acc)
        goto done;
    for (int n = 0; n < g->n; n++)
        for (int gi = 0; gi < g->groups; gi++) {
            im2col(g, x, n, gi, col);
            gather_output(g, dy, n, gi, dyb);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, g->kg, (int)crs, (int)P, 1.0f, dyb, (int)P, col,
                        (int)P, n == 0 ? 0.0f : 1.0f, acc + (int64_t)gi * g->kg * crs, (int)crs);
        }
    for (int k = 0; k < g->k; k++)
        for (int c = 0; c < g->cg; c++)
            for (int t = 0; t < g->filt[0]; t++)
                for (int u = 0; u < g->filt[1]; u++)
                    for (int v = 0; v < g->filt[2]; v++) {
                        int tt = g->flip ? g->filt[0] - 1 - t : t;
                        int uu = g->flip ? g->filt[1] - 1 - u : u;
                        int vv = g->flip ? g->filt[2] - 1 - v : v;
                        int64_t tap = ((int64_t)t * g->filt[1] + u) * g->filt[2] + v;
                        float *o = dw + k * g->ws[0] + c * g->ws[1] + tt * g->ws[2] + uu * g->ws[3] + vv * g->ws[4];
                        *o = simdnn_blend(alpha, acc[k * crs + c * taps + tap], beta, *o);
                    }
    rc = 0;
done:
    free(col);
    free(dyb);
    free(acc);
    return rc;
}
