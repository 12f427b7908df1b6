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
 *
 * Each op asks sim/graph.c first whether its stream captures: then it is
 * recorded as a graph node (and done when the graph is launched) instead.
 */
#include <string.h>
#include <stdlib.h>

#include "sim/simgraph.h"
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
    if ((sync || pageable) && !sim_replaying())
        simgpu_host_wait_until(end);
}

/* The capture decision for an op on s; *done is set when the op must not
 * run now (recorded, or refused with the returned error). */
static CUresult capture_or_run(CUstream s, int sync, const struct sim_node *n, int *done)
{
    int record;
    CUresult rc = sim_capture_check(s, sync, &record);
    *done = rc != CUDA_SUCCESS || record;
    return (rc == CUDA_SUCCESS && record) ? sim_capture_add(s, n) : rc;
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
    struct sim_node n = {.kind = SIM_NODE_COPY, .name = "memcpy"};
    n.u.cp.dst = dst, n.u.cp.src = src, n.u.cp.bytes = bytes, n.u.cp.dir = dir_hint;
    int done;
    rc = capture_or_run(s, sync, &n, &done);
    if (done)
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
    struct sim_node n = {.kind = SIM_NODE_COPY2D, .name = "memcpy2D"};
    n.u.cp.dst = dst, n.u.cp.src = src, n.u.cp.dpitch = dpitch, n.u.cp.spitch = spitch;
    n.u.cp.width = width, n.u.cp.height = height, n.u.cp.dir = dir_hint;
    int done;
    rc = capture_or_run(s, sync, &n, &done);
    if (done)
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

static void fill(void *dst, unsigned value, size_t elem_size, size_t count)
{
    if (elem_size == 1) {
        memset(dst, (int)(value & 0xff), count);
    } else if (elem_size == 2) {
        uint16_t v = (uint16_t)value, *d = dst;
        for (size_t i = 0; i < count; i++)
            d[i] = v;
    } else {
        uint32_t v = value, *d = dst;
        for (size_t i = 0; i < count; i++)
            d[i] = v;
    }
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
    struct sim_node n = {.kind = SIM_NODE_SET, .name = "memset"};
    n.u.set.dst = dst, n.u.set.value = value, n.u.set.elem = elem_size, n.u.set.count = count;
    int done;
    CUresult rc = capture_or_run(s, sync, &n, &done);
    if (done)
        return rc;
    simgpu_check_range(dst, bytes, 1, "memset destination");
    uint64_t end = simgpu_enqueue(s, SIMGPU_COMPUTE, simgpu_mem_time_ns(s, (double)bytes), "memset");
    if (sync && !sim_replaying())
        simgpu_host_wait_until(end);
    if (simgpu_compute_enabled())
        fill(dst, value, elem_size, count);
    return CUDA_SUCCESS;
}

CUresult simgpu_memset2d(void *dst, size_t pitch, unsigned value, size_t width, size_t height, CUstream s, int sync)
{
    return simgpu_memset2d_elem(dst, pitch, value, 1, width, height, s, sync);
}

CUresult simgpu_memset2d_elem(void *dst, size_t pitch, unsigned value, size_t elem, size_t count, size_t height,
                              CUstream s, int sync)
{
    simgpu_init();
    size_t width = elem * count;
    if (count == 0 || height == 0)
        return CUDA_SUCCESS;
    if (!dst || width > pitch || simgpu_device_of(dst) < 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (simgpu_stream_check(s) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_HANDLE;
    struct sim_node n = {.kind = SIM_NODE_SET2D, .name = "memset2D"};
    n.u.set.dst = dst, n.u.set.value = value, n.u.set.pitch = pitch, n.u.set.width = count;
    n.u.set.height = height, n.u.set.elem = elem;
    int done;
    CUresult rc = capture_or_run(s, sync, &n, &done);
    if (done)
        return rc;
    for (size_t r = 0; r < height; r++)
        simgpu_check_range((char *)dst + r * pitch, width, 1, "memset2D destination");
    uint64_t end = simgpu_enqueue(s, SIMGPU_COMPUTE, simgpu_mem_time_ns(s, (double)width * height), "memset2D");
    if (sync && !sim_replaying())
        simgpu_host_wait_until(end);
    if (simgpu_compute_enabled())
        for (size_t r = 0; r < height; r++)
            fill((char *)dst + r * pitch, value, elem, count);
    return CUDA_SUCCESS;
}

CUresult simgpu_memcpy_peer(void *dst, int dst_dev, const void *src, int src_dev, size_t bytes, CUstream s,
                            int serialize)
{
    simgpu_init();
    struct simgpu_device *dd = sim_dev(dst_dev), *sd = sim_dev(src_dev);
    if (!dd || !sd)
        return CUDA_ERROR_INVALID_DEVICE;
    if (bytes == 0)
        return CUDA_SUCCESS;
    /* Each pointer must be memory of the device named with it. */
    if (!dst || !src || simgpu_device_of(dst) != dst_dev || simgpu_device_of(src) != src_dev)
        return CUDA_ERROR_INVALID_VALUE;
    if (!serialize && simgpu_stream_check(s) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_HANDLE;
    struct sim_node n = {.kind = SIM_NODE_PEER, .name = "memcpyPeer"};
    n.u.peer.dst = dst, n.u.peer.src = src, n.u.peer.bytes = bytes, n.u.peer.dst_dev = dst_dev;
    n.u.peer.src_dev = src_dev;
    int done;
    CUresult rc = capture_or_run(serialize ? CU_STREAM_LEGACY : s, 0, &n, &done);
    if (done)
        return rc;
    simgpu_check_range(src, bytes, 0, "memcpyPeer source");
    simgpu_check_range(dst, bytes, 1, "memcpyPeer destination");
    /* Within a device: read and write at memory bandwidth. Across devices:
     * one pass over PCIe at the slower of the source's outbound and the
     * destination's inbound pinned rates (peer-to-peer, or staged through
     * pinned host memory in pipelined chunks). */
    double link = sd->prof->pcie_d2h_bw < dd->prof->pcie_h2d_bw ? sd->prof->pcie_d2h_bw : dd->prof->pcie_h2d_bw;
    double ns = src_dev == dst_dev ? 2.0 * bytes / dd->prof->mem_bw * 1e9 : bytes / link * 1e9;
    pthread_mutex_lock(&g_sim.lock);
    struct sim_stream_ref r;
    if (!serialize)
        sim_stream_lookup_locked(s, &r);
    sim_enqueue_peer_locked(serialize ? NULL : &r, sd, dd, ns, "memcpyPeer");
    pthread_mutex_unlock(&g_sim.lock);
    if (src_dev == dst_dev) {
        simgpu_count_bytes(dst_dev, 2, bytes);
    } else {
        simgpu_count_bytes(src_dev, 1, bytes);
        simgpu_count_bytes(dst_dev, 0, bytes);
    }
    if (simgpu_compute_enabled())
        memmove(dst, src, bytes);
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
    pthread_mutex_lock(&g_sim.lock);
    int live = sim_handle_has(&g_sim.streams, s);
    if (live)
        sim_capture_discard_locked(s); /* a capture never ended goes with its stream */
    pthread_mutex_unlock(&g_sim.lock);
    return live && sim_stream_destroy(s) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* The host cannot wait for a capturing stream: its work is not running. */
static CUresult capture_blocks_sync(CUstream s)
{
    int record;
    CUresult rc = sim_capture_check(s, 1, &record);
    return rc == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : rc;
}

CUresult simgpu_stream_synchronize(CUstream s)
{
    simgpu_init();
    if (simgpu_stream_check(s) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult rc = capture_blocks_sync(s);
    if (rc != CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&g_sim.lock);
    struct sim_stream_ref r;
    if (sim_stream_lookup_locked(s, &r) != 0) {
        pthread_mutex_unlock(&g_sim.lock);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    sim_host_call_locked();
    sim_host_wait_locked(SIM_WAIT_STREAM, sim_stream_ready_locked(&r));
    sim_pool_release_completed_locked(r.d);
    pthread_mutex_unlock(&g_sim.lock);
    return CUDA_SUCCESS;
}

CUresult simgpu_stream_query(CUstream s)
{
    simgpu_init();
    if (simgpu_stream_check(s) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult rc = capture_blocks_sync(s);
    if (rc != CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&g_sim.lock);
    struct sim_stream_ref r;
    if (sim_stream_lookup_locked(s, &r) != 0) {
        pthread_mutex_unlock(&g_sim.lock);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    simgpu_host_wait_until(simgpu_host_now() + SIM_HOST_POLL_NS);
    rc = sim_stream_ready_locked(&r) <= simgpu_host_now() ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
    pthread_mutex_unlock(&g_sim.lock);
    return rc;
}

CUresult simgpu_device_synchronize(void)
{
    simgpu_init();
    pthread_mutex_lock(&g_sim.lock);
    sim_host_call_locked();
    int dev = simgpu_current_device();
    sim_host_wait_locked(SIM_WAIT_DEVICE, sim_device_done_locked(dev));
    sim_pool_release_completed_locked(sim_dev(dev));
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
    if (simgpu_stream_check(s) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_HANDLE;
    struct sim_node n = {.kind = SIM_NODE_EVENT, .name = "eventRecord"};
    n.u.event = e;
    int done;
    CUresult rc = capture_or_run(s, 0, &n, &done);
    if (done) {
        /* Recorded in a capture: the event now marks a point of the graph,
         * which work outside the capture cannot wait for. */
        pthread_mutex_lock(&g_sim.lock);
        if (rc == CUDA_SUCCESS)
            ev->capture_id = sim_capture_id_locked(s);
        pthread_mutex_unlock(&g_sim.lock);
        return rc;
    }
    pthread_mutex_lock(&g_sim.lock);
    struct sim_stream_ref r;
    if (sim_stream_lookup_locked(s, &r) != 0) {
        pthread_mutex_unlock(&g_sim.lock);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    ev->capture_id = 0;
    sim_host_call_locked();
    uint64_t t = sim_stream_ready_locked(&r), now = simgpu_host_now();
    ev->time = t > now ? t : now;
    ev->recorded = 1;
    /* On the legacy stream the record is itself an op others wait for. */
    sim_stream_set_ready_locked(&r, ev->time);
    pthread_mutex_unlock(&g_sim.lock);
    return CUDA_SUCCESS;
}

CUresult simgpu_event_record_flags(CUevent e, CUstream s, unsigned flags)
{
    /* External only changes what a capture records (an external event node,
     * which the sequence replayed here does not distinguish). */
    if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    return simgpu_event_record(e, s);
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
    if (ev->recorded) {
        pthread_mutex_lock(&g_sim.lock);
        sim_host_wait_locked(SIM_WAIT_EVENT, ev->time);
        sim_pool_release_completed_locked(sim_dev(ev->dev));
        pthread_mutex_unlock(&g_sim.lock);
    }
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
    uint64_t here = sim_replaying() ? 0 : sim_capture_id_locked(s);
    CUresult rc = CUDA_SUCCESS;
    if (!sim_replaying() && (here || (ev->capture_id && sim_capture_active_locked(ev->capture_id)))) {
        /* Inside one capture the wait is stream order already. Across the
         * capture boundary it is an isolation error; joining another stream
         * into a capture is not modelled (see sim/graph.c). */
        if (here != ev->capture_id) {
            rc = here ? CUDA_ERROR_STREAM_CAPTURE_ISOLATION : CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
            sim_capture_invalidate_locked(here ? here : ev->capture_id);
        }
        pthread_mutex_unlock(&g_sim.lock);
        return rc;
    }
    sim_host_call_locked();
    if (ev->recorded && !ev->capture_id)
        sim_stream_set_ready_locked(&r, ev->time);
    pthread_mutex_unlock(&g_sim.lock);
    return CUDA_SUCCESS;
}
