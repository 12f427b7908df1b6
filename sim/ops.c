/*
 * ops.c — copies, sets, stream and event operations of the simulated device,
 * with CUDA's semantics, shared by the driver (cu*) and runtime (cuda*)
 * entry points.
 *
 * Copies are classified by address: device memory (any simulated device),
 * pinned host memory (cudaMallocHost / cudaHostAlloc / cuMemAllocHost) or
 * pageable host memory. Host<->device copies run on the copy engines at the
 * profile's PCIe rate for the direction (pinned) or for pageable memory,
 * slowed while the other direction shares the link; device<->device copies
 * and sets run on the compute engine at device-memory bandwidth (read plus
 * write). A copy from or to pageable memory returns only when it is done,
 * even when issued asynchronously, as the real driver behaves.
 */
#include <string.h>
#include <stdlib.h>

#include "sim/simint.h"
#include "sim/simtime.h"

enum { SIDE_PAGEABLE = 0, SIDE_PINNED = 1, SIDE_DEVICE = 2 };

static int side_of(const void *p, size_t bytes)
{
    if (simgpu_device_of(p) >= 0)
        return SIDE_DEVICE;
    return simgpu_is_pinned(p, bytes) ? SIDE_PINNED : SIDE_PAGEABLE;
}

/* Direction of a copy between the two sides: 1 H2D, 2 D2H, 3 D2D, 4 H2H;
 * -1 when the caller claimed another direction or the stream is bad. */
static int copy_dir(int sd, int ss, int dir_hint, CUstream s, CUresult *err)
{
    int dst_dev = sd == SIDE_DEVICE, src_dev = ss == SIDE_DEVICE;
    int dir = (!src_dev && dst_dev) ? 1 : (src_dev && !dst_dev) ? 2 : (src_dev && dst_dev) ? 3 : 4;
    *err = CUDA_SUCCESS;
    if (dir_hint && dir_hint != dir)
        *err = CUDA_ERROR_INVALID_VALUE;
    else if (simgpu_stream_check(s) != CUDA_SUCCESS)
        *err = CUDA_ERROR_INVALID_HANDLE;
    return *err == CUDA_SUCCESS ? dir : -1;
}

/* Charges one copy of `bytes` in direction dir, after its device ranges
 * have been checked, and blocks the host as CUDA would. */
static void copy_charge(int dir, int sd, int ss, size_t bytes, CUstream s, int sync)
{
    int dev = simgpu_stream_device(s);
    const simgpu_profile *p = simgpu_profile_of(dev);
    uint64_t end;
    int pageable = 0;
    switch (dir) {
    case 1:
        pageable = ss == SIDE_PAGEABLE;
        end = simgpu_enqueue_copy(s, SIMGPU_COPY_H2D, (double)bytes,
                                  pageable ? p->pcie_pageable_bw : p->pcie_h2d_bw, "memcpyHtoD");
        simgpu_count_bytes(dev, 0, bytes);
        break;
    case 2:
        pageable = sd == SIDE_PAGEABLE;
        end = simgpu_enqueue_copy(s, SIMGPU_COPY_D2H, (double)bytes,
                                  pageable ? p->pcie_pageable_bw : p->pcie_d2h_bw, "memcpyDtoH");
        simgpu_count_bytes(dev, 1, bytes);
        break;
    case 3:
        end = simgpu_enqueue(s, SIMGPU_COMPUTE, 2.0 * bytes / p->mem_bw * 1e9, "memcpyDtoD");
        simgpu_count_bytes(dev, 2, bytes);
        break;
    default:
        /* Host to host: the CPU does it in stream order. */
        end = simgpu_enqueue(s, SIMGPU_COMPUTE, 0, "memcpyHtoH");
        pageable = 1;
        break;
    }
    if (sync || pageable)
        simgpu_host_wait_until(end);
}

CUresult simgpu_memcpy(void *dst, const void *src, size_t bytes, int dir_hint, CUstream s, int sync)
{
    simgpu_init();
    if (bytes == 0)
        return CUDA_SUCCESS;
    if (!dst || !src)
        return CUDA_ERROR_INVALID_VALUE;
    int sd = side_of(dst, bytes), ss = side_of(src, bytes);
    CUresult rc;
    int dir = copy_dir(sd, ss, dir_hint, s, &rc);
    if (dir < 0)
        return rc;
    if (ss == SIDE_DEVICE)
        simgpu_check_range(src, bytes, 0, "memcpy source");
    if (sd == SIDE_DEVICE)
        simgpu_check_range(dst, bytes, 1, "memcpy destination");
    copy_charge(dir, sd, ss, bytes, s, sync);
    if (simgpu_compute_enabled())
        memmove(dst, src, bytes);
    return CUDA_SUCCESS;
}

CUresult simgpu_memcpy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t height, int dir_hint, CUstream s, int sync)
{
    simgpu_init();
    if (width == 0 || height == 0)
        return CUDA_SUCCESS;
    if (!dst || !src || width > dpitch || width > spitch)
        return CUDA_ERROR_INVALID_VALUE;
    size_t dspan = dpitch * (height - 1) + width, sspan = spitch * (height - 1) + width;
    int sd = side_of(dst, dspan), ss = side_of(src, sspan);
    CUresult rc;
    int dir = copy_dir(sd, ss, dir_hint, s, &rc);
    if (dir < 0)
        return rc;
    for (size_t r = 0; r < height; r++) {
        if (ss == SIDE_DEVICE)
            simgpu_check_range((const char *)src + r * spitch, width, 0, "memcpy2D source");
        if (sd == SIDE_DEVICE)
            simgpu_check_range((char *)dst + r * dpitch, width, 1, "memcpy2D destination");
    }
    copy_charge(dir, sd, ss, width * height, s, sync);
    if (simgpu_compute_enabled())
        for (size_t r = 0; r < height; r++)
            memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
    return CUDA_SUCCESS;
}

CUresult simgpu_memset(void *dst, unsigned value, size_t elem_size, size_t count, CUstream s, int sync)
{
    simgpu_init();
    if (count == 0)
        return CUDA_SUCCESS;
    size_t bytes = elem_size * count;
    if (!dst || simgpu_device_of(dst) < 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (simgpu_stream_check(s) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_HANDLE;
    simgpu_check_range(dst, bytes, 1, "memset destination");
    uint64_t end = simgpu_enqueue(s, SIMGPU_COMPUTE, simgpu_mem_time_ns(s, (double)bytes), "memset");
    if (sync)
        simgpu_host_wait_until(end);
    if (!simgpu_compute_enabled())
        return CUDA_SUCCESS;
    if (elem_size == 1) {
        memset(dst, (int)(value & 0xff), bytes);
    } else if (elem_size == 2) {
        uint16_t v = (uint16_t)value, *d = dst;
        for (size_t i = 0; i < count; i++)
            d[i] = v;
    } else {
        uint32_t v = value, *d = dst;
        for (size_t i = 0; i < count; i++)
            d[i] = v;
    }
    return CUDA_SUCCESS;
}

/* ---- streams -------------------------------------------------------------- */

CUresult simgpu_stream_create(CUstream *out, unsigned flags, int priority)
{
    simgpu_init();
    if (!out || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s = sim_stream_create(simgpu_current_device(), flags, priority);
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *out = s;
    return CUDA_SUCCESS;
}

CUresult simgpu_stream_destroy(CUstream s)
{
    simgpu_init();
    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return CUDA_ERROR_INVALID_HANDLE;
    return sim_stream_destroy(s) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult simgpu_stream_synchronize(CUstream s)
{
    simgpu_init();
    pthread_mutex_lock(&g_sim.lock);
    struct sim_stream_ref r;
    if (sim_stream_lookup_locked(s, &r) != 0) {
        pthread_mutex_unlock(&g_sim.lock);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    sim_host_call_locked();
    simgpu_host_wait_until(sim_stream_ready_locked(&r));
    pthread_mutex_unlock(&g_sim.lock);
    return CUDA_SUCCESS;
}

CUresult simgpu_stream_query(CUstream s)
{
    simgpu_init();
    pthread_mutex_lock(&g_sim.lock);
    struct sim_stream_ref r;
    if (sim_stream_lookup_locked(s, &r) != 0) {
        pthread_mutex_unlock(&g_sim.lock);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    simgpu_host_wait_until(simgpu_host_now() + SIM_HOST_POLL_NS);
    CUresult rc = sim_stream_ready_locked(&r) <= simgpu_host_now() ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
    pthread_mutex_unlock(&g_sim.lock);
    return rc;
}

CUresult simgpu_device_synchronize(void)
{
    simgpu_init();
    pthread_mutex_lock(&g_sim.lock);
    sim_host_call_locked();
    simgpu_host_wait_until(sim_device_done_locked(simgpu_current_device()));
    pthread_mutex_unlock(&g_sim.lock);
    return CUDA_SUCCESS;
}

/* ---- events --------------------------------------------------------------- */

static struct CUevent_st *event_of(CUevent e)
{
    pthread_mutex_lock(&g_sim.lock);
    int live = e && sim_handle_has(&g_sim.events, e);
    pthread_mutex_unlock(&g_sim.lock);
    return live ? e : NULL;
}

CUresult simgpu_event_create(CUevent *out, unsigned flags)
{
    simgpu_init();
    if (!out || (flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS)))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUevent_st *e = calloc(1, sizeof *e);
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->dev = simgpu_current_device();
    e->flags = flags;
    pthread_mutex_lock(&g_sim.lock);
    sim_handle_add(&g_sim.events, e);
    pthread_mutex_unlock(&g_sim.lock);
    *out = e;
    return CUDA_SUCCESS;
}

CUresult simgpu_event_destroy(CUevent e)
{
    simgpu_init();
    pthread_mutex_lock(&g_sim.lock);
    int gone = sim_handle_del(&g_sim.events, e);
    pthread_mutex_unlock(&g_sim.lock);
    if (gone != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    free(e);
    return CUDA_SUCCESS;
}

CUresult simgpu_event_record(CUevent e, CUstream s)
{
    simgpu_init();
    struct CUevent_st *ev = event_of(e);
    if (!ev)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&g_sim.lock);
    struct sim_stream_ref r;
    if (sim_stream_lookup_locked(s, &r) != 0) {
        pthread_mutex_unlock(&g_sim.lock);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    sim_host_call_locked();
    uint64_t t = sim_stream_ready_locked(&r), now = simgpu_host_now();
    ev->time = t > now ? t : now;
    ev->recorded = 1;
    /* On the legacy stream the record is itself an op others wait for. */
    sim_stream_set_ready_locked(&r, ev->time);
    pthread_mutex_unlock(&g_sim.lock);
    return CUDA_SUCCESS;
}

CUresult simgpu_event_query(CUevent e)
{
    simgpu_init();
    struct CUevent_st *ev = event_of(e);
    if (!ev)
        return CUDA_ERROR_INVALID_HANDLE;
    simgpu_host_wait_until(simgpu_host_now() + SIM_HOST_POLL_NS);
    if (!ev->recorded)
        return CUDA_SUCCESS;
    return ev->time <= simgpu_host_now() ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult simgpu_event_synchronize(CUevent e)
{
    simgpu_init();
    struct CUevent_st *ev = event_of(e);
    if (!ev)
        return CUDA_ERROR_INVALID_HANDLE;
    if (ev->recorded)
        simgpu_host_wait_until(ev->time);
    return CUDA_SUCCESS;
}

CUresult simgpu_event_elapsed(float *ms, CUevent start, CUevent end)
{
    simgpu_init();
    struct CUevent_st *a = event_of(start), *b = event_of(end);
    if (!ms)
        return CUDA_ERROR_INVALID_VALUE;
    if (!a || !b)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!a->recorded || !b->recorded)
        return CUDA_ERROR_INVALID_HANDLE;
    uint64_t now = simgpu_host_now();
    if (a->time > now || b->time > now)
        return CUDA_ERROR_NOT_READY;
    *ms = (float)(((double)b->time - (double)a->time) / 1e6);
    return CUDA_SUCCESS;
}

CUresult simgpu_stream_wait_event(CUstream s, CUevent e)
{
    simgpu_init();
    struct CUevent_st *ev = event_of(e);
    if (!ev)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&g_sim.lock);
    struct sim_stream_ref r;
    if (sim_stream_lookup_locked(s, &r) != 0) {
        pthread_mutex_unlock(&g_sim.lock);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    sim_host_call_locked();
    if (ev->recorded)
        sim_stream_set_ready_locked(&r, ev->time);
    pthread_mutex_unlock(&g_sim.lock);
    return CUDA_SUCCESS;
}
