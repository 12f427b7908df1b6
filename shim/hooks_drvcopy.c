/*
 * hooks_drvcopy.c — wrappers of the driver's copies and sets (cuMemcpy*,
 * cuMemset*), each described exactly as its runtime counterpart in
 * hooks_cudart.c (same op, same range modes, same pinned-host test, same
 * host synchronisation; the descriptions are shared: sn_copy.h), so the
 * core treats a copy the same whichever API made it. Without them a
 * program that copies through the driver would touch libsn's arena behind
 * its back: a block never made resident, or written while libsn believes
 * its host copy current.
 *
 * A driver call made from inside a hooked runtime, cuDNN or cuBLAS call is
 * that library's own work (the runtime implements cudaMemcpy with these):
 * sn_enter refuses it, and it passes straight through. Hooks whose real
 * function the loaded driver lacks resolve lazily (SN_MISSING) and are
 * never handed out by cuGetProcAddress (hooks_driver.c hands out a wrapper
 * only for an address it knows as the real function).
 */
#include "shim/sn_wrap.h"
#include "shim/sn_copy.h"

#define SN_DPTR(p) ((void *)(uintptr_t)(p))

/* ---- one-dimensional copies ------------------------------------------------- */

/* Synchronous: the host waits for the copy, as after cudaMemcpy. */
#define SN_DRV_COPY_SYNC(name, params, args, stream_expr, dst, src, count, kind)               \
    SN_EXPORT CUresult name params                                                             \
    {                                                                                          \
        SN_PROLOGUE(CUDA, name, args)                                                          \
        int op = sn_copy_op((dst), (src), (kind));                                             \
        if (op < 0)                                                                            \
            return real args;                                                                  \
        SN_CALL_DECL(c);                                                                       \
        sn_call_init(&c, SN_HOOK_ID_##name, op, sn_current_device(), (stream_expr));           \
        c.flags |= SN_CALL_HOST_SYNC;                                                          \
        sn_describe_copy2d(&c, &(const sn_copy2d){(dst), (count), (src), (count), (count), 1,  \
                                                  (kind), NULL});                              \
        SN_FORWARD_STEP_SYNC(&c, CUresult, CUDA_SUCCESS, CUDA_ERROR_OUT_OF_MEMORY, 1, args);   \
    }

#define SN_DRV_COPY_ASYNC(name, params, args, dst, src, count, kind)                           \
    SN_EXPORT CUresult name params                                                             \
    {                                                                                          \
        SN_PROLOGUE(CUDA, name, args)                                                          \
        int op = sn_copy_op((dst), (src), (kind));                                             \
        if (op < 0)                                                                            \
            return real args;                                                                  \
        SN_CALL_DECL(c);                                                                       \
        sn_call_init(&c, SN_HOOK_ID_##name, op, sn_current_device(), hStream);                 \
        sn_describe_copy2d(&c, &(const sn_copy2d){(dst), (count), (src), (count), (count), 1,  \
                                                  (kind), NULL});                              \
        SN_FORWARD_STEP(&c, CUresult, CUDA_SUCCESS, CUDA_ERROR_OUT_OF_MEMORY, args);           \
    }

#define SN_HTOD_PARAMS (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
#define SN_HTOD_ARGS (dstDevice, srcHost, ByteCount)
#define SN_DTOH_PARAMS (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
#define SN_DTOH_ARGS (dstHost, srcDevice, ByteCount)
#define SN_DTOD_PARAMS (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
#define SN_DTOD_ARGS (dstDevice, srcDevice, ByteCount)

SN_DRV_COPY_SYNC(cuMemcpyHtoD_v2, SN_HTOD_PARAMS, SN_HTOD_ARGS, NULL, SN_DPTR(dstDevice), srcHost,
                 ByteCount, cudaMemcpyHostToDevice)
SN_DRV_COPY_SYNC(cuMemcpyHtoD_v2_ptds, SN_HTOD_PARAMS, SN_HTOD_ARGS, cudaStreamPerThread,
                 SN_DPTR(dstDevice), srcHost, ByteCount, cudaMemcpyHostToDevice)
SN_DRV_COPY_SYNC(cuMemcpyDtoH_v2, SN_DTOH_PARAMS, SN_DTOH_ARGS, NULL, dstHost, SN_DPTR(srcDevice),
                 ByteCount, cudaMemcpyDeviceToHost)
SN_DRV_COPY_SYNC(cuMemcpyDtoH_v2_ptds, SN_DTOH_PARAMS, SN_DTOH_ARGS, cudaStreamPerThread, dstHost,
                 SN_DPTR(srcDevice), ByteCount, cudaMemcpyDeviceToHost)
SN_DRV_COPY_SYNC(cuMemcpyDtoD_v2, SN_DTOD_PARAMS, SN_DTOD_ARGS, NULL, SN_DPTR(dstDevice),
                 SN_DPTR(srcDevice), ByteCount, cudaMemcpyDeviceToDevice)
SN_DRV_COPY_SYNC(cuMemcpyDtoD_v2_ptds, SN_DTOD_PARAMS, SN_DTOD_ARGS, cudaStreamPerThread,
                 SN_DPTR(dstDevice), SN_DPTR(srcDevice), ByteCount, cudaMemcpyDeviceToDevice)
/* Unified addressing: the registry says which side is the device's, as
 * for cudaMemcpyDefault. */
SN_DRV_COPY_SYNC(cuMemcpy, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount), (dst, src, ByteCount),
                 NULL, SN_DPTR(dst), SN_DPTR(src), ByteCount, cudaMemcpyDefault)
SN_DRV_COPY_SYNC(cuMemcpy_ptds, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount),
                 (dst, src, ByteCount), cudaStreamPerThread, SN_DPTR(dst), SN_DPTR(src), ByteCount,
                 cudaMemcpyDefault)

#define SN_HTOD_ASYNC_PARAMS (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
#define SN_HTOD_ASYNC_ARGS (dstDevice, srcHost, ByteCount, hStream)
#define SN_DTOH_ASYNC_PARAMS (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
#define SN_DTOH_ASYNC_ARGS (dstHost, srcDevice, ByteCount, hStream)
#define SN_DTOD_ASYNC_PARAMS (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
#define SN_DTOD_ASYNC_ARGS (dstDevice, srcDevice, ByteCount, hStream)
#define SN_UVA_ASYNC_PARAMS (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
#define SN_UVA_ASYNC_ARGS (dst, src, ByteCount, hStream)

SN_DRV_COPY_ASYNC(cuMemcpyHtoDAsync_v2, SN_HTOD_ASYNC_PARAMS, SN_HTOD_ASYNC_ARGS, SN_DPTR(dstDevice),
                  srcHost, ByteCount, cudaMemcpyHostToDevice)
SN_DRV_COPY_ASYNC(cuMemcpyHtoDAsync_v2_ptsz, SN_HTOD_ASYNC_PARAMS, SN_HTOD_ASYNC_ARGS,
                  SN_DPTR(dstDevice), srcHost, ByteCount, cudaMemcpyHostToDevice)
SN_DRV_COPY_ASYNC(cuMemcpyDtoHAsync_v2, SN_DTOH_ASYNC_PARAMS, SN_DTOH_ASYNC_ARGS, dstHost,
                  SN_DPTR(srcDevice), ByteCount, cudaMemcpyDeviceToHost)
SN_DRV_COPY_ASYNC(cuMemcpyDtoHAsync_v2_ptsz, SN_DTOH_ASYNC_PARAMS, SN_DTOH_ASYNC_ARGS, dstHost,
                  SN_DPTR(srcDevice), ByteCount, cudaMemcpyDeviceToHost)
SN_DRV_COPY_ASYNC(cuMemcpyDtoDAsync_v2, SN_DTOD_ASYNC_PARAMS, SN_DTOD_ASYNC_ARGS, SN_DPTR(dstDevice),
                  SN_DPTR(srcDevice), ByteCount, cudaMemcpyDeviceToDevice)
SN_DRV_COPY_ASYNC(cuMemcpyDtoDAsync_v2_ptsz, SN_DTOD_ASYNC_PARAMS, SN_DTOD_ASYNC_ARGS,
                  SN_DPTR(dstDevice), SN_DPTR(srcDevice), ByteCount, cudaMemcpyDeviceToDevice)
SN_DRV_COPY_ASYNC(cuMemcpyAsync, SN_UVA_ASYNC_PARAMS, SN_UVA_ASYNC_ARGS, SN_DPTR(dst), SN_DPTR(src),
                  ByteCount, cudaMemcpyDefault)
SN_DRV_COPY_ASYNC(cuMemcpyAsync_ptsz, SN_UVA_ASYNC_PARAMS, SN_UVA_ASYNC_ARGS, SN_DPTR(dst),
                  SN_DPTR(src), ByteCount, cudaMemcpyDefault)

/* Peer copies: device to device, as cudaMemcpyPeer describes them (the
 * synchronous one flagged as a host wait). The contexts name the devices;
 * libsn files the step under the calling thread's device. */
#define SN_DRV_PEER(name, params, args, stream_expr, sync)                                     \
    SN_EXPORT CUresult name params                                                             \
    {                                                                                          \
        SN_PROLOGUE(CUDA, name, args)                                                          \
        SN_CALL_DECL(c);                                                                       \
        sn_call_init(&c, SN_HOOK_ID_##name, SN_OP_MEMCPY_D2D, sn_current_device(), (stream_expr)); \
        if (sync)                                                                              \
            c.flags |= SN_CALL_HOST_SYNC;                                                      \
        sn_describe_copy2d(&c, &(const sn_copy2d){SN_DPTR(dstDevice), ByteCount, SN_DPTR(srcDevice), \
                                                  ByteCount, ByteCount, 1,                     \
                                                  cudaMemcpyDeviceToDevice, NULL});            \
        SN_FORWARD_STEP(&c, CUresult, CUDA_SUCCESS, CUDA_ERROR_OUT_OF_MEMORY, args);           \
    }

#define SN_PEER_PARAMS                                                                         \
    (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, \
     size_t ByteCount)
#define SN_PEER_ARGS (dstDevice, dstContext, srcDevice, srcContext, ByteCount)
#define SN_PEER_ASYNC_PARAMS                                                                   \
    (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, \
     size_t ByteCount, CUstream hStream)
#define SN_PEER_ASYNC_ARGS (dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream)

SN_DRV_PEER(cuMemcpyPeer, SN_PEER_PARAMS, SN_PEER_ARGS, NULL, 1)
SN_DRV_PEER(cuMemcpyPeer_ptds, SN_PEER_PARAMS, SN_PEER_ARGS, cudaStreamPerThread, 1)
SN_DRV_PEER(cuMemcpyPeerAsync, SN_PEER_ASYNC_PARAMS, SN_PEER_ASYNC_ARGS, hStream, 0)
SN_DRV_PEER(cuMemcpyPeerAsync_ptsz, SN_PEER_ASYNC_PARAMS, SN_PEER_ASYNC_ARGS, hStream, 0)

/* ---- sets --------------------------------------------------------------------- */

/* As cudaMemset/cudaMemset2D: asynchronous to the host in every form, so
 * none is a host wait. Widths are in elements of elem bytes, pitches in
 * bytes. */
#define SN_DRV_SET(name, params, args, stream_expr, value, elem, pitch, width, height)         \
    SN_EXPORT CUresult name params                                                             \
    {                                                                                          \
        SN_PROLOGUE(CUDA, name, args)                                                          \
        SN_CALL_DECL(c);                                                                       \
        sn_call_init(&c, SN_HOOK_ID_##name, SN_OP_MEMSET, sn_current_device(), (stream_expr)); \
        sn_describe_set2d(&c, SN_DPTR(dstDevice), (pitch), (int)(value), (size_t)(width) * (elem), \
                          (height));                                                           \
        SN_FORWARD_STEP(&c, CUresult, CUDA_SUCCESS, CUDA_ERROR_OUT_OF_MEMORY, args);           \
    }

#define SN_DRV_SET1D(bits, type, v)                                                            \
    SN_DRV_SET(cuMemsetD##bits##_v2, (CUdeviceptr dstDevice, type v, size_t N), (dstDevice, v, N), \
               NULL, v, bits / 8, N * (bits / 8), N, 1)                                        \
    SN_DRV_SET(cuMemsetD##bits##_v2_ptds, (CUdeviceptr dstDevice, type v, size_t N),           \
               (dstDevice, v, N), cudaStreamPerThread, v, bits / 8, N * (bits / 8), N, 1)      \
    SN_DRV_SET(cuMemsetD##bits##Async, (CUdeviceptr dstDevice, type v, size_t N, CUstream hStream), \
               (dstDevice, v, N, hStream), hStream, v, bits / 8, N * (bits / 8), N, 1)         \
    SN_DRV_SET(cuMemsetD##bits##Async_ptsz,                                                    \
               (CUdeviceptr dstDevice, type v, size_t N, CUstream hStream),                    \
               (dstDevice, v, N, hStream), hStream, v, bits / 8, N * (bits / 8), N, 1)

#define SN_DRV_SET2D(bits, type, v)                                                            \
    SN_DRV_SET(cuMemsetD2D##bits##_v2,                                                         \
               (CUdeviceptr dstDevice, size_t dstPitch, type v, size_t Width, size_t Height),  \
               (dstDevice, dstPitch, v, Width, Height), NULL, v, bits / 8, dstPitch, Width, Height) \
    SN_DRV_SET(cuMemsetD2D##bits##_v2_ptds,                                                    \
               (CUdeviceptr dstDevice, size_t dstPitch, type v, size_t Width, size_t Height),  \
               (dstDevice, dstPitch, v, Width, Height), cudaStreamPerThread, v, bits / 8,      \
               dstPitch, Width, Height)                                                        \
    SN_DRV_SET(cuMemsetD2D##bits##Async,                                                       \
               (CUdeviceptr dstDevice, size_t dstPitch, type v, size_t Width, size_t Height,   \
                CUstream hStream),                                                             \
               (dstDevice, dstPitch, v, Width, Height, hStream), hStream, v, bits / 8,         \
               dstPitch, Width, Height)                                                        \
    SN_DRV_SET(cuMemsetD2D##bits##Async_ptsz,                                                  \
               (CUdeviceptr dstDevice, size_t dstPitch, type v, size_t Width, size_t Height,   \
                CUstream hStream),                                                             \
               (dstDevice, dstPitch, v, Width, Height, hStream), hStream, v, bits / 8,         \
               dstPitch, Width, Height)

SN_DRV_SET1D(8, unsigned char, uc)
SN_DRV_SET1D(16, unsigned short, us)
SN_DRV_SET1D(32, unsigned int, ui)
SN_DRV_SET2D(8, unsigned char, uc)
SN_DRV_SET2D(16, unsigned short, us)
SN_DRV_SET2D(32, unsigned int, ui)

/* ---- 2D and 3D copies ----------------------------------------------------------- */

/* Where one side of a 2D/3D copy lies (*p, NULL for an array: device
 * memory libsn never manages) and whether it is the device's. A unified
 * address is the device's when the registry says so, as for
 * cudaMemcpyDefault. */
static inline int sn_drv_side(CUmemorytype type, const void *host, CUdeviceptr dev, const void **p)
{
    switch (type) {
    case CU_MEMORYTYPE_HOST: *p = host; return 0;
    case CU_MEMORYTYPE_DEVICE: *p = SN_DPTR(dev); return 1;
    case CU_MEMORYTYPE_UNIFIED: *p = SN_DPTR(dev); return sn_is_device_kind(sn_core_pointer_kind(*p));
    default: *p = NULL; return 1;
    }
}

static inline int sn_drv_op(int d, int s)
{
    return d && s ? SN_OP_MEMCPY_D2D : d ? SN_OP_MEMCPY_H2D : s ? SN_OP_MEMCPY_D2H : -1;
}

/* The op of a CUDA_MEMCPY2D (-1: host to host) with its arguments as
 * cudaMemcpy2D's, each side starting at its first byte touched. */
static int sn_drv_copy2d_args(const CUDA_MEMCPY2D *pc, sn_copy2d *cp)
{
    const void *d, *s;
    int op = sn_drv_op(sn_drv_side(pc->dstMemoryType, pc->dstHost, pc->dstDevice, &d),
                       sn_drv_side(pc->srcMemoryType, pc->srcHost, pc->srcDevice, &s));
    if (op < 0)
        return op;
    *cp = (sn_copy2d){d ? (char *)(uintptr_t)d + pc->dstY * pc->dstPitch + pc->dstXInBytes : NULL,
                      pc->dstPitch,
                      s ? (const char *)s + pc->srcY * pc->srcPitch + pc->srcXInBytes : NULL,
                      pc->srcPitch, pc->WidthInBytes, pc->Height, cudaMemcpyDefault, NULL};
    return op;
}

#define SN_DRV_COPY2D(name, params, args, stream_expr, sync)                                   \
    SN_EXPORT CUresult name params                                                             \
    {                                                                                          \
        SN_PROLOGUE(CUDA, name, args)                                                          \
        sn_copy2d cp;                                                                          \
        int op = pCopy ? sn_drv_copy2d_args(pCopy, &cp) : -1;                                  \
        if (op < 0)                                                                            \
            return real args;                                                                  \
        SN_CALL_DECL(c);                                                                       \
        sn_call_init(&c, SN_HOOK_ID_##name, op, sn_current_device(), (stream_expr));           \
        if (sync)                                                                              \
            c.flags |= SN_CALL_HOST_SYNC;                                                      \
        sn_describe_copy2d(&c, &cp);                                                           \
        SN_FORWARD_STEP_SYNC(&c, CUresult, CUDA_SUCCESS, CUDA_ERROR_OUT_OF_MEMORY, (sync), args);\
    }

SN_DRV_COPY2D(cuMemcpy2D_v2, (const CUDA_MEMCPY2D *pCopy), (pCopy), NULL, 1)
SN_DRV_COPY2D(cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D *pCopy), (pCopy), cudaStreamPerThread, 1)
SN_DRV_COPY2D(cuMemcpy2DUnaligned_v2, (const CUDA_MEMCPY2D *pCopy), (pCopy), NULL, 1)
SN_DRV_COPY2D(cuMemcpy2DUnaligned_v2_ptds, (const CUDA_MEMCPY2D *pCopy), (pCopy), cudaStreamPerThread, 1)
SN_DRV_COPY2D(cuMemcpy2DAsync_v2, (const CUDA_MEMCPY2D *pCopy, CUstream hStream), (pCopy, hStream),
              hStream, 0)
SN_DRV_COPY2D(cuMemcpy2DAsync_v2_ptsz, (const CUDA_MEMCPY2D *pCopy, CUstream hStream),
              (pCopy, hStream), hStream, 0)

/* One side of a 3D copy: where it starts (NULL for an array), its first
 * byte's coordinates, its pitch and the rows of its slices. */
typedef struct sn_side3d {
    const void *base;
    size_t x, y, z, pitch, slice_rows;
} sn_side3d;

/* Adds a side as the span from its first to its last byte touched,
 * written as a whole only when rows and slices follow each other without
 * gaps. */
static void sn_describe_side3d(sn_call *c, const sn_side3d *sd, const CUDA_MEMCPY3D *pc, unsigned mode)
{
    if (!sd->base)
        return;
    uint64_t first = ((uint64_t)sd->z * sd->slice_rows + sd->y) * sd->pitch + sd->x;
    uint64_t rows = (uint64_t)sd->slice_rows * (pc->Depth - 1) + (pc->Height - 1);
    uint64_t span = rows * sd->pitch + pc->WidthInBytes;
    int dense = (pc->Height == 1 || sd->pitch == pc->WidthInBytes) &&
                (pc->Depth == 1 || sd->slice_rows == pc->Height);
    if (mode != SN_READ && dense)
        mode |= SN_OVERWRITE;
    sn_call_range(c, (const char *)sd->base + first, span, mode);
}

static int sn_drv_describe3d(sn_call *c, const CUDA_MEMCPY3D *pc, int op_only)
{
    const void *d, *s;
    int op = sn_drv_op(sn_drv_side(pc->dstMemoryType, pc->dstHost, pc->dstDevice, &d),
                       sn_drv_side(pc->srcMemoryType, pc->srcHost, pc->srcDevice, &s));
    if (op < 0 || op_only || !pc->WidthInBytes || !pc->Height || !pc->Depth)
        return op;
    if (op != SN_OP_MEMCPY_D2H)
        sn_describe_side3d(c, &(const sn_side3d){d, pc->dstXInBytes, pc->dstY, pc->dstZ, pc->dstPitch,
                                                 pc->dstHeight}, pc, SN_WRITE);
    if (op != SN_OP_MEMCPY_H2D)
        sn_describe_side3d(c, &(const sn_side3d){s, pc->srcXInBytes, pc->srcY, pc->srcZ, pc->srcPitch,
                                                 pc->srcHeight}, pc, SN_READ);
    const void *host = op == SN_OP_MEMCPY_H2D ? s : op == SN_OP_MEMCPY_D2H ? d : NULL;
    if (host && sn_core_pointer_kind(host) == SN_KIND_HOST)
        c->flags |= SN_CALL_HOST_PINNED;
    int shape[3] = {(int)pc->Depth, (int)pc->Height, (int)pc->WidthInBytes};
    sn_call_shape(c, 3, shape);
    c->params = sn_hash_mix(sn_hash_mix(c->params, pc->dstPitch), pc->srcPitch);
    return op;
}

#define SN_DRV_COPY3D(name, params, args, stream_expr, sync)                                   \
    SN_EXPORT CUresult name params                                                             \
    {                                                                                          \
        SN_PROLOGUE(CUDA, name, args)                                                          \
        int op = pCopy ? sn_drv_describe3d(NULL, pCopy, 1) : -1;                               \
        if (op < 0)                                                                            \
            return real args;                                                                  \
        SN_CALL_DECL(c);                                                                       \
        sn_call_init(&c, SN_HOOK_ID_##name, op, sn_current_device(), (stream_expr));           \
        if (sync)                                                                              \
            c.flags |= SN_CALL_HOST_SYNC;                                                      \
        sn_drv_describe3d(&c, pCopy, 0);                                                       \
        SN_FORWARD_STEP_SYNC(&c, CUresult, CUDA_SUCCESS, CUDA_ERROR_OUT_OF_MEMORY, (sync), args);\
    }

SN_DRV_COPY3D(cuMemcpy3D_v2, (const CUDA_MEMCPY3D *pCopy), (pCopy), NULL, 1)
SN_DRV_COPY3D(cuMemcpy3D_v2_ptds, (const CUDA_MEMCPY3D *pCopy), (pCopy), cudaStreamPerThread, 1)
SN_DRV_COPY3D(cuMemcpy3DAsync_v2, (const CUDA_MEMCPY3D *pCopy, CUstream hStream), (pCopy, hStream),
              hStream, 0)
SN_DRV_COPY3D(cuMemcpy3DAsync_v2_ptsz, (const CUDA_MEMCPY3D *pCopy, CUstream hStream),
              (pCopy, hStream), hStream, 0)
