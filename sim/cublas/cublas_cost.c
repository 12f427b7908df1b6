/*
 * cublas_cost.c — the cost model of the simulated cuBLAS: how long a call
 * occupies the compute engine of the simulated GPU.
 *
 * A roofline per call: the larger of math time (FLOPs over the profile's
 * peak FP32 rate times an efficiency) and memory time (bytes over the
 * profile's DRAM bandwidth times an efficiency). GEMMs add the two
 * quantization effects NVIDIA describes for cuBLAS: the output is computed
 * in whole tiles, and tiles run in waves of one tile per SM, so a GEMM that
 * leaves SMs idle in its last wave pays for them. The fixed launch cost is
 * added by simgpu_enqueue from the profile. Every constant and its source
 * is listed in docs/sim-cublas.md. Single-precision GEMMs run at the FP32
 * rate unless the handle's math mode is CUBLAS_TF32_TENSOR_OP_MATH: unlike
 * cuDNN, cuBLAS does not use TF32 by default.
 */
#include "sim/cublas/cublas_internal.h"

static double ceil_div(double a, double b)
{
    double q = a / b;
    double f = (double)(int64_t)q;
    return f < q ? f + 1 : f;
}

/* Output tile edges cuBLAS kernels use, largest first (NVIDIA, "Matrix
 * Multiplication Background", typical tile dimensions). A large problem runs
 * with large tiles for data reuse; one too small to give every SM a large
 * tile is split finer so that the device fills up. */
static const int k_tile_edges[] = {128, 64, 32};

int simblas_tf32(cublasMath_t mode)
{
    /* The mode may carry CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION. */
    return ((int)mode & 0xf) == CUBLAS_TF32_TENSOR_OP_MATH;
}

double simblas_gemm_ns(cudaStream_t s, int64_t m, int64_t n, int64_t k, int64_t batch, double bytes, int tf32)
{
    if (m <= 0 || n <= 0 || batch <= 0)
        return 0;
    double mem_ns = simgpu_mem_time_ns((CUstream)s, bytes / SIMBLAS_MEM_EFFICIENCY);
    if (k <= 0)
        return mem_ns;
    const simgpu_profile *p = simgpu_profile_of(simgpu_stream_device((CUstream)s));
    double sms = p->sm_count > 0 ? p->sm_count : 1;
    double edge = k_tile_edges[sizeof k_tile_edges / sizeof k_tile_edges[0] - 1];
    double tiles = 0;
    for (size_t i = 0; i < sizeof k_tile_edges / sizeof k_tile_edges[0]; i++) {
        edge = k_tile_edges[i];
        tiles = ceil_div((double)m, edge) * ceil_div((double)n, edge) * (double)batch;
        if (tiles >= sms)
            break;
    }
    double waves = ceil_div(tiles, sms);
    /* Every SM of every wave is charged a full tile's work. */
    double charged_flops = waves * sms * 2.0 * edge * edge * (double)k;
    double math_ns = simgpu_math_time_ns((CUstream)s, charged_flops, SIMBLAS_GEMM_EFFICIENCY, tf32);
    return math_ns > mem_ns ? math_ns : mem_ns;
}

double simblas_stream_ns(cudaStream_t s, double bytes, double flops)
{
    double mem_ns = simgpu_mem_time_ns((CUstream)s, bytes / SIMBLAS_MEM_EFFICIENCY);
    double math_ns = flops > 0 ? simgpu_flop_time_ns((CUstream)s, flops, SIMBLAS_GEMM_EFFICIENCY) : 0;
    return math_ns > mem_ns ? math_ns : mem_ns;
}

double simblas_vector_traffic(int64_t n, int64_t inc)
{
    if (n <= 0)
        return 0;
    if (inc == 0)
        return sizeof(float);
    double step = (double)(inc < 0 ? -inc : inc) * sizeof(float);
    double per_element = step < SIMBLAS_SECTOR_BYTES ? step : SIMBLAS_SECTOR_BYTES;
    if (per_element < sizeof(float))
        per_element = sizeof(float);
    return (double)n * per_element;
}
