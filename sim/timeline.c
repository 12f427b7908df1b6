/*
 * timeline.c — simulated time: streams, events, engines and the host clock.
 *
 * Each device has one compute engine and copy engines for host-to-device and
 * device-to-host traffic (shared when the profile has one copy engine). An op
 * starts when its stream's previous op has finished, its engine is free and
 * the host has issued it; it then occupies the engine for its modelled
 * duration plus the profile's launch cost. The legacy default stream waits
 * for all work of blocking streams and they wait for it; non-blocking streams
 * are exempt, as in CUDA. Events capture the completion time of the work
 * before them; cudaStreamWaitEvent moves a stream's ready time forward.
 *
 * There is one host clock for the whole process: every API call costs it
 * SIM_HOST_CALL_NS, and synchronous calls move it to the completion time they
 * wait for, so query loops make progress and finish, deterministically. One
 * clock rather than one per thread because threads synchronise with each
 * other in ways the simulator cannot see (a data-loading thread syncs its
 * stream, then hands the batch over through a mutex): with a shared clock,
 * whatever one thread has waited for is complete for all of them, and the
 * hazard checks (sim/hazard.c) raise no false alarms.
 *
 * Host<->device copies share one PCIe link in both directions: while the
 * copy engines of both directions are busy, together they move only
 * SIMGPU_DUPLEX_FRACTION of the sum of their one-way rates (the link's
 * packet and flow-control overhead is paid twice). Durations are fixed when
 * an op is issued, so the copy issued later absorbs the whole loss over the
 * time the two overlap and the one already in flight keeps its rate; with
 * both engines kept busy the two directions together get the duplex rate.
 *
 * Just after an op's start and end are known, the device ranges its library
 * declared with simgpu_check_range are checked for ordering hazards.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sim/simgraph.h"
#include "sim/simint.h"
#include "sim/simtime.h"

static __thread struct CUstream_st *t_ptds[SIMGPU_MAX_DEVICES];

static uint64_t *host_clock(void) { return &g_sim.host_now; }

static void host_advance_locked(uint64_t t)
{
    if (t > g_sim.host_now)
        g_sim.host_now = t;
}

uint64_t simgpu_host_now(void)
{
    simgpu_init();
    pthread_mutex_lock(&g_sim.lock);
    uint64_t t = *host_clock();
    pthread_mutex_unlock(&g_sim.lock);
    return t;
}

void simgpu_host_wait_until(uint64_t t)
{
    simgpu_init();
    pthread_mutex_lock(&g_sim.lock);
    host_advance_locked(t);
    pthread_mutex_unlock(&g_sim.lock);
}

/* Replaying a graph costs the host nothing per node: the launch was its call. */
void sim_host_call_locked(void)
{
    if (!sim_replaying()) {
        g_sim.host_calls++;
        host_advance_locked(*host_clock() + SIM_HOST_CALL_NS);
    }
}

void sim_host_wait_locked(int kind, uint64_t t)
{
    uint64_t now = *host_clock();
    g_sim.waits[kind]++;
    if (t > now)
        g_sim.wait_ns[kind] += t - now;
    host_advance_locked(t);
}

void sim_host_sync_device_locked(struct simgpu_device *d)
{
    uint64_t done = sim_device_done_locked(d->index);
    g_sim.host_syncs++;
    if (done > g_sim.host_now)
        g_sim.host_sync_wait_ns += done - g_sim.host_now;
    host_advance_locked(done);
    sim_pool_release_completed_locked(d);
}

/* ---- streams ------------------------------------------------------------- */

struct CUstream_st *sim_stream_create(int dev, unsigned flags, int priority)
{
    struct CUstream_st *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->dev = dev;
    s->flags = flags;
    s->priority = priority;
    s->blocking = !(flags & CU_STREAM_NON_BLOCKING);
    pthread_mutex_lock(&g_sim.lock);
    s->ready = *host_clock();
    sim_handle_add(&g_sim.streams, s);
    pthread_mutex_unlock(&g_sim.lock);
    return s;
}

int sim_stream_destroy(struct CUstream_st *s)
{
    pthread_mutex_lock(&g_sim.lock);
    int gone = sim_handle_del(&g_sim.streams, s);
    pthread_mutex_unlock(&g_sim.lock);
    if (gone != 0)
        return -1;
    free(s);
    return 0;
}

/* Resolves the special handles. NULL: not a stream we know. */
static struct CUstream_st *stream_resolve_locked(CUstream h, int *legacy)
{
    *legacy = 0;
    if (h == NULL || h == CU_STREAM_LEGACY) {
        *legacy = 1;
        return NULL;
    }
    if (h == CU_STREAM_PER_THREAD) {
        int dev = simgpu_current_device();
        if (!t_ptds[dev]) {
            struct CUstream_st *s = calloc(1, sizeof *s);
            if (!s)
                abort();
            s->dev = dev;
            s->blocking = 1;
            s->ready = *host_clock();
            t_ptds[dev] = s; /* lives as long as the thread; never destroyed */
        }
        return t_ptds[dev];
    }
    struct CUstream_st *s = (struct CUstream_st *)h;
    return sim_handle_has(&g_sim.streams, s) ? s : NULL;
}

int sim_stream_lookup_locked(CUstream h, struct sim_stream_ref *r)
{
    r->s = stream_resolve_locked(h, &r->legacy);
    r->d = sim_dev(r->s ? r->s->dev : simgpu_current_device());
    return (r->s || r->legacy) ? 0 : -1;
}

CUresult simgpu_stream_check(CUstream h)
{
    simgpu_init();
    struct sim_stream_ref r;
    pthread_mutex_lock(&g_sim.lock);
    int rc = sim_stream_lookup_locked(h, &r);
    pthread_mutex_unlock(&g_sim.lock);
    return rc == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

int simgpu_stream_device(CUstream h)
{
    simgpu_init();
    struct sim_stream_ref r;
    pthread_mutex_lock(&g_sim.lock);
    sim_stream_lookup_locked(h, &r);
    pthread_mutex_unlock(&g_sim.lock);
    return r.d->index;
}

/* Earliest time new work on this stream may start, by stream order and the
 * legacy default stream's implicit synchronisation. */
uint64_t sim_stream_ready_locked(const struct sim_stream_ref *r)
{
    const struct simgpu_device *d = r->d;
    const struct CUstream_st *s = r->s;
    uint64_t t;
    if (r->legacy) {
        t = d->legacy_ready > d->blocking_max ? d->legacy_ready : d->blocking_max;
    } else {
        t = s->ready;
        if (s->blocking && d->legacy_ready > t)
            t = d->legacy_ready;
    }
    return t > d->barrier ? t : d->barrier;
}

void sim_stream_set_ready_locked(const struct sim_stream_ref *r, uint64_t t)
{
    struct simgpu_device *d = r->d;
    struct CUstream_st *s = r->s;
    if (r->legacy) {
        if (t > d->legacy_ready)
            d->legacy_ready = t;
    } else {
        if (t > s->ready)
            s->ready = t;
        if (s->blocking && t > d->blocking_max)
            d->blocking_max = t;
    }
    if (t > d->all_max)
        d->all_max = t;
}

static int engine_index(const struct simgpu_device *d, enum simgpu_engine e)
{
    if (e == SIMGPU_COPY_D2H && d->prof->copy_engines < 2)
        return SIMGPU_COPY_H2D;
    return (int)e;
}

/* When an op issued now on stream r may start on engine ei: after the host
 * has issued it, its stream's earlier work and the engine's earlier ops. */
static uint64_t op_start_locked(const struct sim_stream_ref *r, int ei)
{
    sim_host_call_locked();
    uint64_t start = *host_clock();
    uint64_t ready = sim_stream_ready_locked(r);
    if (ready > start)
        start = ready;
    if (r->d->engine_free[ei] > start)
        start = r->d->engine_free[ei];
    return start;
}

/* Books [start, start + dur_ns + launch cost) on engine ei for stream r and
 * returns the end. */
static uint64_t op_commit_locked(const struct sim_stream_ref *r, int ei, uint64_t start, double dur_ns,
                                 const char *name)
{
    struct simgpu_device *d = r->d;
    uint64_t dur = (uint64_t)(dur_ns > 0 ? dur_ns : 0) + (uint64_t)d->prof->launch_ns;
    uint64_t end = start + dur;
    d->engine_free[ei] = end;
    d->busy_ns[ei] += dur;
    d->ops++;
    sim_stream_set_ready_locked(r, end);
    sim_hazard_commit_locked(name, start, end);
    return end;
}

uint64_t simgpu_enqueue(CUstream h, enum simgpu_engine e, double dur_ns, const char *name)
{
    simgpu_init();
    pthread_mutex_lock(&g_sim.lock);
    struct sim_stream_ref r;
    sim_stream_lookup_locked(h, &r);
    int ei = engine_index(r.d, e);
    uint64_t end = op_commit_locked(&r, ei, op_start_locked(&r, ei), dur_ns, name);
    pthread_mutex_unlock(&g_sim.lock);
    return end;
}

uint64_t sim_marker_locked(const struct sim_stream_ref *r, const char *name)
{
    uint64_t t = sim_stream_ready_locked(r), now = *host_clock();
    if (now > t)
        t = now;
    sim_stream_set_ready_locked(r, t);
    sim_hazard_commit_locked(name, t, t);
    return t;
}

uint64_t sim_enqueue_peer_locked(const struct sim_stream_ref *r, struct simgpu_device *src,
                                 struct simgpu_device *dst, double dur_ns, const char *name)
{
    sim_host_call_locked();
    uint64_t start = *host_clock();
    uint64_t dur = (uint64_t)(dur_ns > 0 ? dur_ns : 0) + (uint64_t)dst->prof->launch_ns;
    /* Engines: the source's outbound and the destination's inbound copy
     * engine, or the compute engine for a copy within one device. */
    uint64_t *e_src = &src->engine_free[engine_index(src, src == dst ? SIMGPU_COMPUTE : SIMGPU_COPY_D2H)];
    uint64_t *e_dst = &dst->engine_free[engine_index(dst, src == dst ? SIMGPU_COMPUTE : SIMGPU_COPY_H2D)];
    if (r) {
        uint64_t ready = sim_stream_ready_locked(r);
        if (ready > start)
            start = ready;
    } else {
        struct simgpu_device *cur = sim_dev(simgpu_current_device());
        uint64_t t[3] = {sim_device_done_locked(cur->index), sim_device_done_locked(src->index),
                         sim_device_done_locked(dst->index)};
        for (int i = 0; i < 3; i++)
            if (t[i] > start)
                start = t[i];
    }
    if (*e_src > start)
        start = *e_src;
    if (*e_dst > start)
        start = *e_dst;
    uint64_t end = start + dur;
    *e_src = end;
    *e_dst = end;
    src->busy_ns[e_src - src->engine_free] += dur;
    if (dst != src)
        dst->busy_ns[e_dst - dst->engine_free] += dur;
    dst->ops++;
    if (r) {
        sim_stream_set_ready_locked(r, end);
    } else {
        struct simgpu_device *all[3] = {sim_dev(simgpu_current_device()), src, dst};
        for (int i = 0; i < 3; i++) {
            if (end > all[i]->barrier)
                all[i]->barrier = end;
            if (end > all[i]->all_max)
                all[i]->all_max = end;
        }
    }
    sim_hazard_commit_locked(name, start, end);
    return end;
}

/* ---- copies sharing the PCIe link ------------------------------------------ */

/* Both directions at once move this fraction of the sum of their one-way
 * rates: nvbandwidth's bidirectional host<->device tests measure 1.8x one
 * direction on a PCIe 3 link (its README's example) and 1.4x on an A100's
 * PCIe 4 link (NVIDIA developer forum); docs/sim-cudnn.md, "Calibration". */
#define SIMGPU_DUPLEX_FRACTION 0.8
/* Least share the later copy keeps, so that a fast copy in the other
 * direction cannot stall it completely. */
#define SIMGPU_DUPLEX_FLOOR 0.1

/* A copy in flight or queued: [start, end) at an average rate in bytes/ns. */
struct copy_span { uint64_t start, end; double rate; };
struct copy_spans { struct copy_span *v; size_t n, cap; };
/* Per device, per direction (0 H2D, 1 D2H); guarded by g_sim.lock. */
static struct copy_spans g_spans[SIMGPU_MAX_DEVICES][2];

/* Spans that ended before the host clock can no longer overlap a new copy,
 * which never starts before the host issues it. */
static void spans_prune_locked(struct copy_spans *c, uint64_t now)
{
    size_t k = 0;
    while (k < c->n && c->v[k].end <= now)
        k++;
    if (k) {
        memmove(c->v, c->v + k, (c->n - k) * sizeof c->v[0]);
        c->n -= k;
    }
}

static void spans_add_locked(struct copy_spans *c, uint64_t start, uint64_t end, double rate)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        struct copy_span *v = realloc(c->v, cap * sizeof *v);
        if (!v)
            return; /* the span is forgotten: later copies only run faster */
        c->v = v;
        c->cap = cap;
    }
    c->v[c->n++] = (struct copy_span){start, end, rate};
}

/* Nanoseconds a copy of `bytes` at `rate` (bytes/ns) starting at `start`
 * takes while the other direction's spans `o` (in time order, disjoint)
 * share the link. */
static double duplex_duration(const struct copy_spans *o, uint64_t start, double bytes, double rate)
{
    double t = (double)start, left = bytes;
    for (size_t i = 0; i < o->n && left > 0; i++) {
        double a = (double)o->v[i].start, b = (double)o->v[i].end;
        if (b <= t)
            continue;
        if (a > t) {
            if (left <= rate * (a - t))
                return t + left / rate - (double)start;
            left -= rate * (a - t);
            t = a;
        }
        double shared = SIMGPU_DUPLEX_FRACTION * (rate + o->v[i].rate) - o->v[i].rate;
        if (shared < SIMGPU_DUPLEX_FLOOR * rate)
            shared = SIMGPU_DUPLEX_FLOOR * rate;
        if (left <= shared * (b - t))
            return t + left / shared - (double)start;
        left -= shared * (b - t);
        t = b;
    }
    return t + left / rate - (double)start;
}

uint64_t simgpu_enqueue_copy(CUstream h, enum simgpu_engine e, double bytes, double rate, const char *name)
{
    simgpu_init();
    pthread_mutex_lock(&g_sim.lock);
    struct sim_stream_ref r;
    sim_stream_lookup_locked(h, &r);
    struct simgpu_device *d = r.d;
    int ei = engine_index(d, e);
    uint64_t start = op_start_locked(&r, ei);
    double per_ns = rate > 0 ? rate / 1e9 : 1e-9;
    double ns = bytes / per_ns;
    if (d->prof->copy_engines >= 2 && bytes > 0) {
        int dir = e == SIMGPU_COPY_D2H ? 1 : 0;
        struct copy_spans *mine = &g_spans[d->index][dir], *other = &g_spans[d->index][1 - dir];
        spans_prune_locked(mine, *host_clock());
        spans_prune_locked(other, *host_clock());
        ns = duplex_duration(other, start, bytes, per_ns);
        if (ns > 0)
            spans_add_locked(mine, start, start + (uint64_t)ns, bytes / ns);
    }
    uint64_t end = op_commit_locked(&r, ei, start, ns, name);
    pthread_mutex_unlock(&g_sim.lock);
    return end;
}

/* ---- arithmetic rates ------------------------------------------------------ */

static pthread_once_t g_tf32_once = PTHREAD_ONCE_INIT;
static int g_tf32_allowed = 1;

static void tf32_init(void)
{
    const char *v = getenv("SIMGPU_TF32");
    if (v && *v) {
        if (!strcmp(v, "0"))
            g_tf32_allowed = 0;
        else if (strcmp(v, "1"))
            simgpu_log("SIMGPU_TF32=%s not understood (use 0 or 1); using 1", v);
    }
    /* The real libraries' global switch: 0 disables TF32 in cuDNN and cuBLAS
     * whatever the program asked for; other values change nothing. */
    const char *o = getenv("NVIDIA_TF32_OVERRIDE");
    if (o && !strcmp(o, "0"))
        g_tf32_allowed = 0;
}

int simgpu_tf32_allowed(void)
{
    pthread_once(&g_tf32_once, tf32_init);
    return g_tf32_allowed;
}

double simgpu_math_time_ns(CUstream s, double flops, double efficiency, int tf32)
{
    const simgpu_profile *p = simgpu_profile_of(simgpu_stream_device(s));
    double peak = p->fp32_flops;
    if (tf32 && p->tf32_flops > 0 && simgpu_tf32_allowed())
        peak = p->tf32_flops;
    if (efficiency <= 0)
        efficiency = 1e-3;
    if (efficiency > 1)
        efficiency = 1;
    return flops / (peak * efficiency) * 1e9;
}

double simgpu_mem_time_ns(CUstream s, double bytes)
{
    const simgpu_profile *p = simgpu_profile_of(simgpu_stream_device(s));
    return bytes / p->mem_bw * 1e9;
}

double simgpu_flop_time_ns(CUstream s, double flops, double efficiency)
{
    return simgpu_math_time_ns(s, flops, efficiency, 0);
}

uint64_t sim_device_done_locked(int dev)
{
    struct simgpu_device *d = sim_dev(dev);
    uint64_t t = d->all_max;
    for (int e = 0; e < 3; e++)
        if (d->engine_free[e] > t)
            t = d->engine_free[e];
    return t;
}

unsigned simgpu_stream_flags(CUstream h)
{
    simgpu_init();
    struct sim_stream_ref r;
    pthread_mutex_lock(&g_sim.lock);
    sim_stream_lookup_locked(h, &r);
    unsigned f = r.s ? r.s->flags : 0;
    pthread_mutex_unlock(&g_sim.lock);
    return f;
}
