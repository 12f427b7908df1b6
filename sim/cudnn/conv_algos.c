/*
 * conv_algos.c — the convolution algorithm families of the simulated cuDNN:
 * which configurations each accepts, the workspace each requires and the
 * time each takes on the modelled GPU.
 *
 * Support rules follow the per-algorithm tables of the cuDNN API reference
 * (FFT: stride 1, no dilation, padded input at most 256, filter larger than
 * the padding; Winograd: 3x3, stride 1; Winograd non-fused: 3x3 or 5x5,
 * stride 1; direct: not implemented; backward-filter fused Winograd: not
 * implemented). Workspaces follow the buffers each family materialises, so
 * they scale with the shapes the way the real ones do. Time is a roofline of
 * the family's arithmetic at a family efficiency against the bytes its
 * kernels stream, plus the serial passes through its workspace. The
 * efficiency is scaled by the profile's cuDNN generation and by the shape of
 * the layer, and the GEMM family runs at the TF32 rate where the GPU and the
 * math type allow it. Every constant, its source and how the fitted ones
 * were fitted are in docs/sim-cudnn.md ("Cost model", "Calibration").
 */
#include <math.h>
#include "sim/cudnn/conv.h"

/* ---- efficiencies (fraction of peak FP32) -------------------------------- */

/* Implicit GEMM recomputes input offsets in the inner loop; the precomputed
 * variant keeps them in a small table and is the usual default choice. */
#define EFF_IMPLICIT_GEMM 0.35
#define EFF_PRECOMP_GEMM 0.65
/* Explicit GEMM: a tuned sgemm on the materialised im2col matrix. */
#define EFF_GEMM 0.70
/* FFT pipelines (cuFFT transforms + batched complex products). */
#define EFF_FFT 0.50
/* Winograd: fused F(2x2,3x3) kernel; non-fused batched-GEMM F(m x m, r x r). */
#define EFF_WINOGRAD 0.55
#define EFF_WINOGRAD_NONFUSED 0.60
/* Backward data: ALGO_0 scatters with atomics, ALGO_1 is a deterministic
 * implicit GEMM on the transposed problem. */
#define EFF_BWD_DATA_0 0.45
#define EFF_BWD_DATA_1 0.60
/* Backward filter: ALGO_0 reduces with atomics, ALGO_3 is ALGO_0 with
 * precomputed indices, ALGO_1 is a deterministic reduction. */
#define EFF_BWD_FILTER_0 0.40
#define EFF_BWD_FILTER_1 0.55
#define EFF_BWD_FILTER_3 0.50

/* ---- shape efficiency ------------------------------------------------------
 *
 * Every family runs its arithmetic as GEMMs (implicit, explicit, or batched
 * over transform points) whose output is cut into square tiles of edge 128,
 * 64 or 32 that run in waves of one tile per SM, the same quantization the
 * cuBLAS model charges (sim/cublas/cublas_cost.c); a reduction only a few
 * elements deep cannot keep the multiply pipelines busy either. So a layer
 * with few channels (the first layer's 3), a small image or a 1x1 filter
 * with a thin reduction runs at a lower fraction of peak than a large one.
 * docs/sim-cudnn.md, "Calibration", has the fit. */
/* Reduction depth at which the pipelines run at half their efficiency, and
 * how steeply they starve below it (the index and load work per
 * multiply-add no longer hides behind the arithmetic). */
#define SHAPE_DEPTH_HALF 50.0
#define SHAPE_DEPTH_POWER 3.0
/* Below this the layer is bound by writing its outputs, which the
 * roofline's memory term charges, not by its arithmetic. */
#define SHAPE_DEPTH_FLOOR 0.12
/* Reduction depth per split when backward filter splits its long reduction
 * over more SMs. */
#define SHAPE_SPLITK_MIN 512.0
/* Weight of the operand loads against the arithmetic of a tile. */
#define SHAPE_REUSE 8.0

/* Largest padded extent the non-tiled FFT accepts, and the FFT tile edge. */
#define FFT_MAX_EXTENT 256
#define FFT_TILE 32
/* Winograd non-fused transform tile edge (alpha = m + r - 1 = 6). */
#define WINOGRAD_NONFUSED_ALPHA 6

enum family {
    FAM_NONE, FAM_IMPLICIT, FAM_PRECOMP, FAM_GEMM, FAM_FFT, FAM_FFT_TILING, FAM_WINOGRAD,
    FAM_WINOGRAD_NONFUSED, FAM_BWD_0, FAM_BWD_1, FAM_BWD_FILTER_3,
};

int simdnn_conv_algo_count(simdnn_conv_op op)
{
    switch (op) {
    case SIMDNN_CONV_FWD: return CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    case SIMDNN_CONV_BWD_DATA: return CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
    default: return CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
    }
}

static enum family family_of(simdnn_conv_op op, int algo)
{
    if (op == SIMDNN_CONV_FWD) {
        switch (algo) {
        case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return FAM_IMPLICIT;
        case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return FAM_PRECOMP;
        case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return FAM_GEMM;
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return FAM_FFT;
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return FAM_FFT_TILING;
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return FAM_WINOGRAD;
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return FAM_WINOGRAD_NONFUSED;
        default: return FAM_NONE; /* DIRECT is not implemented in cuDNN */
        }
    }
    if (op == SIMDNN_CONV_BWD_DATA) {
        switch (algo) {
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0: return FAM_BWD_0;
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1: return FAM_BWD_1;
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT: return FAM_FFT;
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING: return FAM_FFT_TILING;
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD: return FAM_WINOGRAD;
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED: return FAM_WINOGRAD_NONFUSED;
        default: return FAM_NONE;
        }
    }
    switch (algo) {
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0: return FAM_BWD_0;
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1: return FAM_BWD_1;
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT: return FAM_FFT;
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3: return FAM_BWD_FILTER_3;
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED: return FAM_WINOGRAD_NONFUSED;
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING: return FAM_FFT_TILING;
    default: return FAM_NONE; /* fused Winograd backward filter is not implemented */
    }
}

/* Smallest size >= n whose only prime factors are 2, 3, 5 and 7 — the sizes
 * cuFFT transforms fastest and FFT convolutions pad to. */
static int fft_size(int n)
{
    for (int m = n > 1 ? n : 1;; m++) {
        int r = m;
        for (int p = 2; p <= 7; p++)
            while (r % p == 0)
                r /= p;
        if (r == 1)
            return m;
    }
}

static int unit_stride_no_dilation(const simdnn_conv *g)
{
    for (int i = 0; i < 3; i++)
        if (g->str[i] != 1 || g->dil[i] != 1)
            return 0;
    return 1;
}

static int filter_wider_than_pad(const simdnn_conv *g)
{
    return g->filt[1] > g->pad[1] && g->filt[2] > g->pad[2];
}

static int no_dilation(const simdnn_conv *g)
{
    return g->dil[0] == 1 && g->dil[1] == 1 && g->dil[2] == 1;
}

static int supported(const simdnn_conv *g, simdnn_conv_op op, enum family f)
{
    int is2d = g->nsp == 2;
    switch (f) {
    case FAM_IMPLICIT: case FAM_PRECOMP: case FAM_BWD_0: case FAM_BWD_1:
        return 1;
    case FAM_BWD_FILTER_3:
        return is2d && no_dilation(g);
    case FAM_GEMM:
        return is2d && op == SIMDNN_CONV_FWD;
    case FAM_FFT:
        return is2d && unit_stride_no_dilation(g) && filter_wider_than_pad(g) &&
               g->in[1] + 2 * g->pad[1] <= FFT_MAX_EXTENT && g->in[2] + 2 * g->pad[2] <= FFT_MAX_EXTENT;
    case FAM_FFT_TILING:
        return is2d && unit_stride_no_dilation(g) && filter_wider_than_pad(g) && g->filt[1] <= FFT_TILE &&
               g->filt[2] <= FFT_TILE;
    case FAM_WINOGRAD:
        return is2d && op != SIMDNN_CONV_BWD_FILTER && unit_stride_no_dilation(g) && g->filt[1] == 3 &&
               g->filt[2] == 3;
    case FAM_WINOGRAD_NONFUSED:
        return is2d && unit_stride_no_dilation(g) && g->filt[1] == g->filt[2] &&
               (g->filt[1] == 3 || g->filt[1] == 5);
    default:
        return 0;
    }
}

/* ---- cost of the FFT and Winograd families ------------------------------- */

struct transform_cost {
    double workspace;       /* bytes of transformed operands */
    double data;            /* of which transformed inputs and outputs */
    double flops;           /* arithmetic actually performed */
};

/* FFT convolution over tiles: transforms of every input tile, every filter and
 * every output tile (real-to-complex: 2.5 N log2 N flops each), then a complex
 * multiply-accumulate (8 flops) per frequency bin, input channel and output
 * channel. A whole-image FFT is one tile the size of the padded input. */
static struct transform_cost fft_cost(const simdnn_conv *g, int tiled)
{
    double th, tw, tiles;
    if (tiled) {
        th = tw = FFT_TILE;
        double vh = FFT_TILE - g->filt[1] + 1, vw = FFT_TILE - g->filt[2] + 1;
        tiles = ceil(g->out[1] / vh) * ceil(g->out[2] / vw);
    } else {
        th = fft_size(g->in[1] + 2 * g->pad[1]);
        tw = fft_size(g->in[2] + 2 * g->pad[2]);
        tiles = 1;
    }
    double bins = th * (floor(tw / 2) + 1);
    double transforms = (double)g->n * g->c * tiles + (double)g->k * g->cg + (double)g->n * g->k * tiles;
    struct transform_cost c;
    c.workspace = bins * 8.0 * transforms;
    c.data = c.workspace;
    c.flops = transforms * 2.5 * th * tw * log2(th * tw) +
              8.0 * bins * tiles * (double)g->n * g->k * g->cg;
    return c;
}

/* Winograd F(m x m, r x r) with alpha = m + r - 1: alpha^2 multiplies per
 * tile of m x m outputs instead of m^2 r^2. The non-fused variant stores
 * transformed inputs, filters and outputs; the fused one only the filters. */
static struct transform_cost winograd_cost(const simdnn_conv *g, int fused)
{
    int r = g->filt[1];
    int alpha = fused ? 4 : WINOGRAD_NONFUSED_ALPHA;
    int m = alpha - r + 1;
    double tiles = ceil((double)g->out[1] / m) * ceil((double)g->out[2] / m);
    double a2 = (double)alpha * alpha;
    struct transform_cost c;
    double filters = (double)g->k * g->cg;
    double data = fused ? 0.0 : (double)g->n * g->c * tiles + (double)g->n * g->k * tiles;
    c.workspace = a2 * sizeof(float) * (filters + data);
    c.data = a2 * sizeof(float) * data;
    c.flops = simdnn_conv_flops(g) * a2 / ((double)m * m * r * r);
    return c;
}

/* ---- shape efficiency ------------------------------------------------------ */

/* Share of the SMs' time that does useful work, for the best output tile
 * shape: idle SMs in the last wave, and the lower operand reuse of smaller
 * tiles (a tile does em en multiply-adds per em + en operands loaded;
 * 128 x 128 counts as full). A dimension thinner than a tile is not charged
 * as padding: cuDNN has kernels for thin outputs (a few channels) that are
 * limited by streaming their operands, which the roofline's memory term
 * already charges. */
static double fill_fraction(double m, double n, double kd, double sms, int split_k)
{
    static const double edges[] = {128, 64, 32};
    double best = 0;
    for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < 3; j++) {
            double em = edges[i], en = edges[j];
            double tiles = ceil(m / em) * ceil(n / en);
            double slots = tiles;
            if (split_k && tiles < sms) {
                /* The reduction is cut into pieces that other SMs add up. */
                double splits = fmin(ceil(sms / tiles), fmax(1.0, floor(kd / SHAPE_SPLITK_MIN)));
                slots = tiles * splits;
            }
            double waves = ceil(slots / sms);
            double reuse = (1.0 + SHAPE_REUSE / 64.0) / (1.0 + SHAPE_REUSE * (1.0 / em + 1.0 / en));
            double f = (slots / (waves * sms)) * reuse;
            if (f > best)
                best = f;
        }
    return best;
}

/* Fraction of its nominal efficiency a family reaches on this shape. The
 * GEMM family reduces over C R S (forward), K R S (backward data) or N P Q
 * (backward filter); the transform families reduce over channels only. */
static double shape_efficiency(const simdnn_conv *g, simdnn_conv_op op, int transform, int sms)
{
    double taps = (double)simdnn_conv_taps(g);
    double out = (double)g->n * (double)simdnn_conv_out_positions(g);
    double in = (double)g->n * (double)simdnn_conv_in_positions(g);
    double m, n, kd;
    switch (op) {
    case SIMDNN_CONV_FWD:
        m = g->kg, n = out, kd = transform ? g->cg : g->cg * taps;
        break;
    case SIMDNN_CONV_BWD_DATA:
        m = g->cg, n = in, kd = transform ? g->kg : g->kg * taps;
        break;
    default:
        m = g->kg, n = g->cg * taps, kd = out;
        break;
    }
    double fill = fill_fraction(m, n, kd, sms > 0 ? sms : 1, op == SIMDNN_CONV_BWD_FILTER);
    return fill * fmax(1.0 / (1.0 + pow(SHAPE_DEPTH_HALF / kd, SHAPE_DEPTH_POWER)), SHAPE_DEPTH_FLOOR);
}

/* ---- the model ------------------------------------------------------------ */

/* Duration of one family's work: the roofline of simdnn_model_ns with the
 * profile's cuDNN generation factor and the shape term on the efficiency,
 * at the TF32 tensor-core rate for the families that have TF32 kernels when
 * the math type allows it (CUDNN_FMA_MATH forbids it; cuDNN's default math
 * permits TF32 on Ampere and later). */
static double family_ns(cudnnHandle_t h, const simdnn_conv *g, simdnn_conv_op op, enum family f, double flops,
                        double eff, double io, double serial)
{
    CUstream s = simdnn_stream(h);
    const simgpu_profile *p = simgpu_profile_of(simgpu_stream_device(s));
    int transform = f == FAM_FFT || f == FAM_FFT_TILING || f == FAM_WINOGRAD || f == FAM_WINOGRAD_NONFUSED;
    int tf32 = g->math != CUDNN_FMA_MATH && (f != FAM_FFT && f != FAM_FFT_TILING && f != FAM_WINOGRAD);
    int winograd = f == FAM_WINOGRAD || f == FAM_WINOGRAD_NONFUSED;
    double e = eff * p->conv_eff * (winograd ? p->winograd_eff : 1.0) * shape_efficiency(g, op, transform, p->sm_count);
    double t_flop = flops > 0 ? simgpu_math_time_ns(s, flops, e, tf32) : 0.0;
    double t_mem = io > 0 ? simgpu_mem_time_ns(s, io / SIMDNN_BW_EFFICIENCY) : 0.0;
    double t_serial = serial > 0 ? simgpu_mem_time_ns(s, serial / SIMDNN_BW_EFFICIENCY) : 0.0;
    return fmax(t_flop, t_mem) + t_serial;
}

void simdnn_conv_algo(cudnnHandle_t h, const simdnn_conv *g, simdnn_conv_op op, int algo, int beta_reads,
                      simdnn_algo_info *info)
{
    enum family f = algo >= 0 && algo < simdnn_conv_algo_count(op) ? family_of(op, algo) : FAM_NONE;
    info->supported = f != FAM_NONE && supported(g, op, f);
    info->workspace = 0;
    info->ns = 0;
    info->determinism = (f == FAM_BWD_0 || f == FAM_BWD_FILTER_3) ? CUDNN_NON_DETERMINISTIC : CUDNN_DETERMINISTIC;
    if (!info->supported)
        return;

    double fsz = sizeof(float);
    double x_bytes = (double)g->n * g->c * simdnn_conv_in_positions(g) * fsz;
    double y_bytes = (double)g->n * g->k * simdnn_conv_out_positions(g) * fsz;
    double w_bytes = (double)g->k * g->cg * simdnn_conv_taps(g) * fsz;
    double out_bytes = op == SIMDNN_CONV_FWD ? y_bytes : op == SIMDNN_CONV_BWD_DATA ? x_bytes : w_bytes;
    double io = x_bytes + y_bytes + w_bytes + (beta_reads ? out_bytes : 0);
    double flops = simdnn_conv_flops(g);
    const simgpu_profile *p = simgpu_profile_of(simgpu_stream_device(simdnn_stream(h)));
    /* One offset per (input channel, filter tap) pair for the precomputed
     * index tables of PRECOMP_GEMM and backward-filter ALGO_3. */
    double index_table = (double)g->c * simdnn_conv_taps(g) * 2 * sizeof(int32_t);
    struct transform_cost tc;

    switch (f) {
    case FAM_IMPLICIT:
        info->ns = family_ns(h, g, op, f, flops, EFF_IMPLICIT_GEMM, io, 0);
        break;
    case FAM_PRECOMP:
        info->workspace = (size_t)index_table;
        info->ns = family_ns(h, g, op, f, flops, EFF_PRECOMP_GEMM, io, 0);
        break;
    case FAM_BWD_FILTER_3:
        info->workspace = (size_t)index_table;
        info->ns = family_ns(h, g, op, f, flops, EFF_BWD_FILTER_3, io, 0);
        break;
    case FAM_GEMM: {
        /* im2col of one image at a time; the whole batch still streams the
         * column matrix out and back in. */
        double col_image = (double)g->c * simdnn_conv_taps(g) * simdnn_conv_out_positions(g) * fsz;
        info->workspace = (size_t)col_image;
        info->ns = family_ns(h, g, op, f, flops, EFF_GEMM, io, 2.0 * col_image * g->n);
        break;
    }
    case FAM_BWD_0:
        info->ns = family_ns(h, g, op, f, flops, op == SIMDNN_CONV_BWD_DATA ? EFF_BWD_DATA_0 : EFF_BWD_FILTER_0, io, 0);
        break;
    case FAM_BWD_1:
        info->ns = family_ns(h, g, op, f, flops, op == SIMDNN_CONV_BWD_DATA ? EFF_BWD_DATA_1 : EFF_BWD_FILTER_1, io, 0);
        break;
    case FAM_FFT: case FAM_FFT_TILING:
        tc = fft_cost(g, f == FAM_FFT_TILING);
        info->workspace = (size_t)tc.workspace;
        info->ns = family_ns(h, g, op, f, tc.flops, EFF_FFT, io, 2.0 * tc.workspace);
        break;
    case FAM_WINOGRAD:
        tc = winograd_cost(g, 1);
        info->workspace = (size_t)tc.workspace;
        info->ns = family_ns(h, g, op, f, tc.flops, EFF_WINOGRAD, io, 2.0 * tc.workspace);
        break;
    case FAM_WINOGRAD_NONFUSED:
        tc = winograd_cost(g, 0);
        info->workspace = (size_t)tc.workspace;
        if (!p->winograd_nonfused) {
            /* A cuDNN generation without these kernels: the call still
             * works (programs written for cuDNN 9 run unchanged) but costs
             * what the direct arithmetic plus the transforms would, so no
             * heuristic or Find ever prefers it. */
            info->ns = family_ns(h, g, op, FAM_PRECOMP, flops, EFF_PRECOMP_GEMM, io, 2.0 * tc.workspace);
            break;
        }
        /* Three kernels: the input transform (reads x, writes the
         * transformed inputs), batched GEMMs over the 36 transform points
         * (their operand traffic overlaps their arithmetic) and the output
         * transform (reads the transformed outputs, writes the result). */
        info->ns = family_ns(h, g, op, f, tc.flops, EFF_WINOGRAD_NONFUSED, tc.workspace, io + tc.data);
        break;
    default:
        break;
    }
}
