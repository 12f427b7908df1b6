/*
 * drvops.c — the simulated driver's 2-D, 3-D, peer and 16-bit copies and
 * sets (cuMemcpy2D, cuMemcpy3D, cuMemcpyPeer, cuMemsetD16, cuMemsetD2D*),
 * and the per-thread-default-stream twins of every driver copy, set and
 * graph launch: _ptds for the synchronous calls, _ptsz for the
 * asynchronous ones, which cuGetProcAddress hands out for
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (sim/driver.c) and which
 * programs built with --default-stream per-thread link to.
 *
 * The work itself is sim/ops.c's, shared with the runtime. CUDA arrays are
 * not simulated: a copy naming one returns CUDA_ERROR_NOT_SUPPORTED.
 */
#include <string.h>

#include "sim/simint.h"

#define NEED(check)                         \
    do {                                    \
        CUresult need_ = (check);           \
        if (need_ != CUDA_SUCCESS)          \
            return need_;                   \
    } while (0)

#define PTDS CU_STREAM_PER_THREAD
#define PTSZ(s) ((s) ? (s) : CU_STREAM_PER_THREAD)

/* ---- 1-D copies and sets: the twins of sim/driver.c's ---------------------- */

CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n);
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n)
{
    NEED(sim_need_ctx());
    return simgpu_memcpy((void *)dst, src, n, 1, PTDS, 1);
}
CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n);
CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n)
{
    NEED(sim_need_ctx());
    return simgpu_memcpy(dst, (const void *)src, n, 2, PTDS, 1);
}
CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    NEED(sim_need_ctx());
    return simgpu_memcpy((void *)dst, (const void *)src, n, 3, PTDS, 1);
}
CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    NEED(sim_need_ctx());
    return simgpu_memcpy((void *)dst, (const void *)src, n, 0, PTDS, 1);
}
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream s);
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
    NEED(sim_need_ctx_for_stream(PTSZ(s)));
    return simgpu_memcpy((void *)dst, src, n, 1, PTSZ(s), 0);
}
CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream s);
CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    NEED(sim_need_ctx_for_stream(PTSZ(s)));
    return simgpu_memcpy(dst, (const void *)src, n, 2, PTSZ(s), 0);
}
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    NEED(sim_need_ctx_for_stream(PTSZ(s)));
    return simgpu_memcpy((void *)dst, (const void *)src, n, 3, PTSZ(s), 0);
}
CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    NEED(sim_need_ctx_for_stream(PTSZ(s)));
    return simgpu_memcpy((void *)dst, (const void *)src, n, 0, PTSZ(s), 0);
}

/* The synchronous sets are asynchronous to the host for device memory, as
 * CUDA documents. */
static CUresult set1d(CUdeviceptr dst, unsigned v, size_t elem, size_t n, CUstream s)
{
    NEED(sim_need_ctx_for_stream(s));
    return simgpu_memset((void *)dst, v, elem, n, s, 0);
}

CUresult cuMemsetD8_v2_ptds(CUdeviceptr dst, unsigned char v, size_t n);
CUresult cuMemsetD8_v2_ptds(CUdeviceptr dst, unsigned char v, size_t n) { return set1d(dst, v, 1, n, PTDS); }
CUresult cuMemsetD16(CUdeviceptr dst, unsigned short v, size_t n) { return set1d(dst, v, 2, n, CU_STREAM_LEGACY); }
CUresult cuMemsetD16_v2_ptds(CUdeviceptr dst, unsigned short v, size_t n);
CUresult cuMemsetD16_v2_ptds(CUdeviceptr dst, unsigned short v, size_t n) { return set1d(dst, v, 2, n, PTDS); }
CUresult cuMemsetD32_v2_ptds(CUdeviceptr dst, unsigned int v, size_t n);
CUresult cuMemsetD32_v2_ptds(CUdeviceptr dst, unsigned int v, size_t n) { return set1d(dst, v, 4, n, PTDS); }
CUresult cuMemsetD8Async_ptsz(CUdeviceptr dst, unsigned char v, size_t n, CUstream s);
CUresult cuMemsetD8Async_ptsz(CUdeviceptr dst, unsigned char v, size_t n, CUstream s)
{
    return set1d(dst, v, 1, n, PTSZ(s));
}
CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short v, size_t n, CUstream s)
{
    return set1d(dst, v, 2, n, s);
}
CUresult cuMemsetD16Async_ptsz(CUdeviceptr dst, unsigned short v, size_t n, CUstream s);
CUresult cuMemsetD16Async_ptsz(CUdeviceptr dst, unsigned short v, size_t n, CUstream s)
{
    return set1d(dst, v, 2, n, PTSZ(s));
}
CUresult cuMemsetD32Async_ptsz(CUdeviceptr dst, unsigned int v, size_t n, CUstream s);
CUresult cuMemsetD32Async_ptsz(CUdeviceptr dst, unsigned int v, size_t n, CUstream s)
{
    return set1d(dst, v, 4, n, PTSZ(s));
}

/* ---- 2-D sets ------------------------------------------------------------------ */

/* width counts elements of elem bytes. */
static CUresult set2d(CUdeviceptr dst, size_t pitch, unsigned v, size_t elem, size_t width, size_t height,
                      CUstream s)
{
    NEED(sim_need_ctx_for_stream(s));
    return simgpu_memset2d_elem((void *)dst, pitch, v, elem, width, height, s, 0);
}

CUresult cuMemsetD2D8(CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h)
{
    return set2d(d, p, v, 1, w, h, CU_STREAM_LEGACY);
}
CUresult cuMemsetD2D16(CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h)
{
    return set2d(d, p, v, 2, w, h, CU_STREAM_LEGACY);
}
CUresult cuMemsetD2D32(CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t h)
{
    return set2d(d, p, v, 4, w, h, CU_STREAM_LEGACY);
}
CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h);
CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h)
{
    return set2d(d, p, v, 1, w, h, PTDS);
}
CUresult cuMemsetD2D16_v2_ptds(CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h);
CUresult cuMemsetD2D16_v2_ptds(CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h)
{
    return set2d(d, p, v, 2, w, h, PTDS);
}
CUresult cuMemsetD2D32_v2_ptds(CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t h);
CUresult cuMemsetD2D32_v2_ptds(CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t h)
{
    return set2d(d, p, v, 4, w, h, PTDS);
}
CUresult cuMemsetD2D8Async(CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h, CUstream s)
{
    return set2d(d, p, v, 1, w, h, s);
}
CUresult cuMemsetD2D16Async(CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h, CUstream s)
{
    return set2d(d, p, v, 2, w, h, s);
}
CUresult cuMemsetD2D32Async(CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t h, CUstream s)
{
    return set2d(d, p, v, 4, w, h, s);
}
CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h, CUstream s);
CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h, CUstream s)
{
    return set2d(d, p, v, 1, w, h, PTSZ(s));
}
CUresult cuMemsetD2D16Async_ptsz(CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h, CUstream s);
CUresult cuMemsetD2D16Async_ptsz(CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h, CUstream s)
{
    return set2d(d, p, v, 2, w, h, PTSZ(s));
}
CUresult cuMemsetD2D32Async_ptsz(CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t h, CUstream s);
CUresult cuMemsetD2D32Async_ptsz(CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t h, CUstream s)
{
    return set2d(d, p, v, 4, w, h, PTSZ(s));
}

/* ---- 2-D and 3-D copies ------------------------------------------------------------ */

/* One side of a copy descriptor: its base address and the direction letter
 * it claims ('h' host, 'd' device, 'u' unified: whatever the address is). */
static CUresult side(CUmemorytype t, const void *host, CUdeviceptr dev, CUarray arr, char *kind, const char **base)
{
    switch (t) {
    case CU_MEMORYTYPE_HOST: *kind = 'h'; *base = host; return CUDA_SUCCESS;
    case CU_MEMORYTYPE_DEVICE: *kind = 'd'; *base = (const char *)(uintptr_t)dev; return CUDA_SUCCESS;
    case CU_MEMORYTYPE_UNIFIED: *kind = 'u'; *base = (const char *)(uintptr_t)dev; return CUDA_SUCCESS;
    case CU_MEMORYTYPE_ARRAY: return arr ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

/* The cudaMemcpyKind-style hint ops.c checks against the addresses. */
static int hint_of(char d, char s)
{
    if (d == 'u' || s == 'u')
        return 0;
    return s == 'h' ? (d == 'd' ? 1 : 4) : (d == 'd' ? 3 : 2);
}

static CUresult copy2d(const CUDA_MEMCPY2D *c, CUstream s, int sync)
{
    NEED(sim_need_ctx_for_stream(s));
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    char dk, sk;
    const char *db, *sb;
    NEED(side(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray, &dk, &db));
    NEED(side(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray, &sk, &sb));
    if (c->WidthInBytes == 0 || c->Height == 0)
        return CUDA_SUCCESS;
    if (!db || !sb)
        return CUDA_ERROR_INVALID_VALUE;
    const char *d = db + c->dstY * c->dstPitch + c->dstXInBytes;
    const char *src = sb + c->srcY * c->srcPitch + c->srcXInBytes;
    return simgpu_memcpy2d((void *)d, c->dstPitch, src, c->srcPitch, c->WidthInBytes, c->Height, hint_of(dk, sk), s,
                           sync);
}

CUresult cuMemcpy2D(const CUDA_MEMCPY2D *c) { return copy2d(c, CU_STREAM_LEGACY, 1); }
CUresult cuMemcpy2DUnaligned(const CUDA_MEMCPY2D *c) { return copy2d(c, CU_STREAM_LEGACY, 1); }
CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D *c, CUstream s) { return copy2d(c, s, 0); }
CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *c);
CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *c) { return copy2d(c, PTDS, 1); }
CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *c);
CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *c) { return copy2d(c, PTDS, 1); }
CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *c, CUstream s);
CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *c, CUstream s) { return copy2d(c, PTSZ(s), 0); }

/* A 3-D copy whose slices are contiguous on both sides (each side's slice
 * height is the copy's) is one 2-D copy of Height * Depth rows; otherwise
 * each slice is its own 2-D copy, charged as such. */
static CUresult copy3d(const CUDA_MEMCPY3D *c, CUstream s, int sync)
{
    NEED(sim_need_ctx_for_stream(s));
    if (!c || c->reserved0 || c->reserved1 || c->srcLOD || c->dstLOD)
        return CUDA_ERROR_INVALID_VALUE;
    char dk, sk;
    const char *db, *sb;
    NEED(side(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray, &dk, &db));
    NEED(side(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray, &sk, &sb));
    if (c->WidthInBytes == 0 || c->Height == 0 || c->Depth == 0)
        return CUDA_SUCCESS;
    if (!db || !sb)
        return CUDA_ERROR_INVALID_VALUE;
    if (c->Depth > 1 && (c->srcHeight < c->Height || c->dstHeight < c->Height))
        return CUDA_ERROR_INVALID_VALUE;
    size_t dslice = c->dstPitch * c->dstHeight, sslice = c->srcPitch * c->srcHeight;
    const char *d = db + c->dstZ * dslice + c->dstY * c->dstPitch + c->dstXInBytes;
    const char *src = sb + c->srcZ * sslice + c->srcY * c->srcPitch + c->srcXInBytes;
    int hint = hint_of(dk, sk);
    if (c->Depth == 1 || (c->srcHeight == c->Height && c->dstHeight == c->Height))
        return simgpu_memcpy2d((void *)d, c->dstPitch, src, c->srcPitch, c->WidthInBytes, c->Height * c->Depth,
                               hint, s, sync);
    for (size_t z = 0; z < c->Depth; z++) {
        CUresult rc = simgpu_memcpy2d((void *)(d + z * dslice), c->dstPitch, src + z * sslice, c->srcPitch,
                                      c->WidthInBytes, c->Height, hint, s, sync);
        if (rc != CUDA_SUCCESS)
            return rc;
    }
    return CUDA_SUCCESS;
}

CUresult cuMemcpy3D(const CUDA_MEMCPY3D *c) { return copy3d(c, CU_STREAM_LEGACY, 1); }
CUresult cuMemcpy3DAsync(const CUDA_MEMCPY3D *c, CUstream s) { return copy3d(c, s, 0); }
CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *c);
CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *c) { return copy3d(c, PTDS, 1); }
CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *c, CUstream s);
CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *c, CUstream s) { return copy3d(c, PTSZ(s), 0); }

/* ---- peer copies ---------------------------------------------------------------------- */

/* cuMemcpyPeer is asynchronous to the host but ordered with all work of
 * both devices (as cudaMemcpyPeer); the Async form in its stream only. */
static CUresult peer(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream s,
                     int serialize)
{
    NEED(serialize ? sim_need_ctx() : sim_need_ctx_for_stream(s));
    int dd = sim_ctx_dev_of(dc), sd = sim_ctx_dev_of(sc);
    if (dd < 0 || sd < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    return simgpu_memcpy_peer((void *)dst, dd, (const void *)src, sd, n, s, serialize);
}

CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n)
{
    return peer(dst, dc, src, sc, n, NULL, 1);
}
CUresult cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n);
CUresult cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n)
{
    return peer(dst, dc, src, sc, n, NULL, 1);
}
CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream s)
{
    return peer(dst, dc, src, sc, n, s, 0);
}
CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n,
                                CUstream s);
CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n,
                                CUstream s)
{
    return peer(dst, dc, src, sc, n, PTSZ(s), 0);
}
