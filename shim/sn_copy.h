/*
 * sn_copy.h — how a copy or a set is described (its op, its ranges and
 * their modes, whether the host side is pinned), shared by the runtime's
 * wrappers (hooks_cudart.c) and the driver's (hooks_drvcopy.c), so that a
 * copy reaching the GPU through either API is the same step to the core.
 * Inline: every copy wrapper runs them.
 */
#ifndef SN_COPY_H
#define SN_COPY_H

#include "core/sn_core.h"
#include "common/sn_call.h"

static inline int sn_is_device_kind(int k)
{
    return (k & SN_KIND_ANY_DEVICE) != 0;
}

/* The op of a copy from its kind, resolving cudaMemcpyDefault through the
 * registry. -1: host to host, not a device operation. */
static inline int sn_copy_op(const void *dst, const void *src, enum cudaMemcpyKind kind)
{
    switch (kind) {
    case cudaMemcpyHostToDevice: return SN_OP_MEMCPY_H2D;
    case cudaMemcpyDeviceToHost: return SN_OP_MEMCPY_D2H;
    case cudaMemcpyDeviceToDevice: return SN_OP_MEMCPY_D2D;
    case cudaMemcpyHostToHost: return -1;
    default: break;
    }
    int d = sn_is_device_kind(sn_core_pointer_kind(dst));
    int s = sn_is_device_kind(sn_core_pointer_kind(src));
    if (d && s)
        return SN_OP_MEMCPY_D2D;
    if (d)
        return SN_OP_MEMCPY_H2D;
    if (s)
        return SN_OP_MEMCPY_D2H;
    return -1;
}

/* A 2D copy's arguments, as the four entry points give them. */
typedef struct sn_copy2d {
    void *dst;
    size_t dpitch;
    const void *src;
    size_t spitch, width, height;
    enum cudaMemcpyKind kind;
    cudaStream_t stream;
} sn_copy2d;

static inline void sn_describe_copy2d(sn_call *c, const sn_copy2d *cp)
{
    void *dst = cp->dst;
    const void *src = cp->src;
    const size_t dpitch = cp->dpitch, spitch = cp->spitch, width = cp->width, height = cp->height;
    if (!width || !height)
        return;
    uint64_t dspan = (uint64_t)dpitch * (height - 1) + width;
    uint64_t sspan = (uint64_t)spitch * (height - 1) + width;
    if (c->op != SN_OP_MEMCPY_D2H)
        sn_call_range(c, dst, dspan, SN_WRITE | (dpitch == width || height == 1 ? SN_OVERWRITE : 0));
    if (c->op != SN_OP_MEMCPY_H2D)
        sn_call_range(c, src, sspan, SN_READ);
    const void *host = c->op == SN_OP_MEMCPY_H2D ? src : c->op == SN_OP_MEMCPY_D2H ? dst : NULL;
    if (host && sn_core_pointer_kind(host) == SN_KIND_HOST)
        c->flags |= SN_CALL_HOST_PINNED;
    if (c->op == SN_OP_MEMCPY_H2D && height == 1)
        sn_core_note_stored(dst, src, width);
    int shape[2] = {(int)height, (int)width};
    sn_call_shape(c, 2, shape);
    c->params = sn_hash_mix(sn_hash_mix(c->params, dpitch), spitch);
}

static inline void sn_describe_set2d(sn_call *c, void *p, size_t pitch, int value, size_t width,
                                     size_t height)
{
    if (width && height)
        sn_call_range(c, p, (uint64_t)pitch * (height - 1) + width,
                      SN_WRITE | (pitch == width || height == 1 ? SN_OVERWRITE : 0));
    int shape[2] = {(int)height, (int)width};
    sn_call_shape(c, 2, shape);
    c->params = sn_hash_mix(sn_hash_mix(c->params, (uint64_t)value), pitch);
}

#endif
