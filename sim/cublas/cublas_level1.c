/*
 * cublas_level1.c — single-precision vector routines of the simulated
 * cuBLAS: Saxpy, Sscal, Scopy, Sdot, Sasum, Snrm2 (the _v2 entry points that
 * cublas_v2.h maps the short names to).
 *
 * Semantics are those of the reference BLAS, which cuBLAS follows: n <= 0 is
 * a no-op (reductions return 0), Sscal/Sasum/Snrm2 ignore incx <= 0, and a
 * negative stride walks the same memory span backwards, so the span a call
 * touches always starts at the pointer passed. Reductions whose result goes
 * to host memory block the calling thread until the device has finished the
 * reduction, as the real library's copy of the result back does.
 */
#include "sim/cublas/cublas_internal.h"

#include <cblas.h>

/* Common prologue: a live handle whose stream does not capture. */
#define SIMBLAS_REQUIRE_HANDLE(h)                              \
    do {                                                       \
        cublasStatus_t work_st_ = simblas_check_work(h);       \
        if (work_st_ != CUBLAS_STATUS_SUCCESS)                 \
            return work_st_;                                   \
    } while (0)

static void check_vector(const float *v, int n, int inc, int write, const char *what)
{
    simgpu_check_range(v, simblas_vector_bytes(n, inc), write, what);
}

cublasStatus_t cublasSaxpy_v2(cublasHandle_t handle, int n, const float *alpha, const float *x, int incx,
                              float *y, int incy)
{
    SIMBLAS_REQUIRE_HANDLE(handle);
    if (!alpha)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (n <= 0)
        return CUBLAS_STATUS_SUCCESS;
    struct simblas_scalar a;
    cublasStatus_t st = simblas_read_scalar(handle, alpha, "cublasSaxpy_v2 alpha", &a);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    /* BLAS quick return: y is untouched and no kernel runs. */
    if (handle->pointer_mode == CUBLAS_POINTER_MODE_HOST && a.value == 0.0f)
        return CUBLAS_STATUS_SUCCESS;
    if ((st = simblas_stream_ok(handle)) != CUBLAS_STATUS_SUCCESS)
        return st;
    check_vector(x, n, incx, 0, "cublasSaxpy_v2 x");
    check_vector(y, n, incy, 1, "cublasSaxpy_v2 y");
    if (simgpu_compute_enabled() && a.value != 0.0f)
        cblas_saxpy(n, a.value, x, incx, y, incy);
    double bytes = simblas_vector_traffic(n, incx) + 2 * simblas_vector_traffic(n, incy);
    simgpu_enqueue((CUstream)handle->stream, SIMGPU_COMPUTE,
                   simblas_stream_ns(handle->stream, bytes, 2.0 * n), "cublasSaxpy_v2");
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSscal_v2(cublasHandle_t handle, int n, const float *alpha, float *x, int incx)
{
    SIMBLAS_REQUIRE_HANDLE(handle);
    if (!alpha)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (n <= 0 || incx <= 0)
        return CUBLAS_STATUS_SUCCESS;
    struct simblas_scalar a;
    cublasStatus_t st = simblas_read_scalar(handle, alpha, "cublasSscal_v2 alpha", &a);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if ((st = simblas_stream_ok(handle)) != CUBLAS_STATUS_SUCCESS)
        return st;
    check_vector(x, n, incx, 1, "cublasSscal_v2 x");
    if (simgpu_compute_enabled())
        cblas_sscal(n, a.value, x, incx);
    double bytes = 2 * simblas_vector_traffic(n, incx);
    simgpu_enqueue((CUstream)handle->stream, SIMGPU_COMPUTE,
                   simblas_stream_ns(handle->stream, bytes, (double)n), "cublasSscal_v2");
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasScopy_v2(cublasHandle_t handle, int n, const float *x, int incx, float *y, int incy)
{
    SIMBLAS_REQUIRE_HANDLE(handle);
    if (n <= 0)
        return CUBLAS_STATUS_SUCCESS;
    cublasStatus_t st = simblas_stream_ok(handle);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    check_vector(x, n, incx, 0, "cublasScopy_v2 x");
    check_vector(y, n, incy, 1, "cublasScopy_v2 y");
    if (simgpu_compute_enabled())
        cblas_scopy(n, x, incx, y, incy);
    double bytes = simblas_vector_traffic(n, incx) + simblas_vector_traffic(n, incy);
    simgpu_enqueue((CUstream)handle->stream, SIMGPU_COMPUTE, simblas_stream_ns(handle->stream, bytes, 0),
                   "cublasScopy_v2");
    return CUBLAS_STATUS_SUCCESS;
}

/* The shared tail of the three reductions: charge the kernel, then deliver
 * the value under the handle's pointer mode. */
static cublasStatus_t finish_reduction(cublasHandle_t handle, float *result, float value, double bytes,
                                       double flops, const char *name)
{
    uint64_t done = simgpu_enqueue((CUstream)handle->stream, SIMGPU_COMPUTE,
                                   simblas_stream_ns(handle->stream, bytes, flops), name);
    simblas_store_result(handle, result, simgpu_compute_enabled() ? value : 0.0f, done);
    return CUBLAS_STATUS_SUCCESS;
}

/* n <= 0 (or a non-positive stride where BLAS ignores it): the result is 0
 * and no kernel runs. In device pointer mode the zero is still written to
 * device memory, so it is checked like any result. */
static cublasStatus_t empty_reduction(cublasHandle_t handle, float *result)
{
    if (handle->pointer_mode == CUBLAS_POINTER_MODE_DEVICE) {
        if (simgpu_compute_enabled())
            *result = 0.0f;
    } else {
        *result = 0.0f;
    }
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSdot_v2(cublasHandle_t handle, int n, const float *x, int incx, const float *y, int incy,
                             float *result)
{
    SIMBLAS_REQUIRE_HANDLE(handle);
    cublasStatus_t st = simblas_check_result_ptr(handle, result, "cublasSdot_v2 result");
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if (n <= 0)
        return empty_reduction(handle, result);
    if ((st = simblas_stream_ok(handle)) != CUBLAS_STATUS_SUCCESS)
        return st;
    check_vector(x, n, incx, 0, "cublasSdot_v2 x");
    check_vector(y, n, incy, 0, "cublasSdot_v2 y");
    float value = simgpu_compute_enabled() ? cblas_sdot(n, x, incx, y, incy) : 0.0f;
    double bytes = simblas_vector_traffic(n, incx) + simblas_vector_traffic(n, incy);
    return finish_reduction(handle, result, value, bytes, 2.0 * n, "cublasSdot_v2");
}

cublasStatus_t cublasSasum_v2(cublasHandle_t handle, int n, const float *x, int incx, float *result)
{
    SIMBLAS_REQUIRE_HANDLE(handle);
    cublasStatus_t st = simblas_check_result_ptr(handle, result, "cublasSasum_v2 result");
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if (n <= 0 || incx <= 0)
        return empty_reduction(handle, result);
    if ((st = simblas_stream_ok(handle)) != CUBLAS_STATUS_SUCCESS)
        return st;
    check_vector(x, n, incx, 0, "cublasSasum_v2 x");
    float value = simgpu_compute_enabled() ? cblas_sasum(n, x, incx) : 0.0f;
    return finish_reduction(handle, result, value, simblas_vector_traffic(n, incx), (double)n,
                            "cublasSasum_v2");
}

cublasStatus_t cublasSnrm2_v2(cublasHandle_t handle, int n, const float *x, int incx, float *result)
{
    SIMBLAS_REQUIRE_HANDLE(handle);
    cublasStatus_t st = simblas_check_result_ptr(handle, result, "cublasSnrm2_v2 result");
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if (n <= 0 || incx <= 0)
        return empty_reduction(handle, result);
    if ((st = simblas_stream_ok(handle)) != CUBLAS_STATUS_SUCCESS)
        return st;
    check_vector(x, n, incx, 0, "cublasSnrm2_v2 x");
    float value = simgpu_compute_enabled() ? cblas_snrm2(n, x, incx) : 0.0f;
    return finish_reduction(handle, result, value, simblas_vector_traffic(n, incx), 2.0 * n,
                            "cublasSnrm2_v2");
}
