/*
 * graph.c — stream capture and graphs on the simulated device.
 *
 * cuStreamBeginCapture / cudaStreamBeginCapture puts a stream in capture
 * mode: from then on the copies, sets, event records, kernel launches and
 * host functions issued to it are recorded as nodes instead of being done
 * (ops.c, timeline.c and the runtime's launch path ask sim_capture_check
 * first). cuStreamEndCapture returns the recorded sequence as a graph;
 * instantiating it gives an executable graph that shares the nodes; a
 * launch replays them in order on the launch stream, each with its modelled
 * duration, and costs the host one API call instead of one per node.
 * Launches of one executable graph are serialised, as CUDA does.
 *
 * The rules of capture that a program can break are enforced with CUDA's
 * errors: capture cannot start on the legacy stream or twice on a stream;
 * ending it on another thread (unless relaxed) is an error; the legacy
 * stream cannot be used while a blocking stream of its device captures
 * (cudaErrorStreamCaptureImplicit); synchronising with a capturing stream,
 * and "potentially unsafe" calls such as cudaMalloc or cudaDeviceSynchronize
 * while a global-mode capture is under way, are refused
 * (cudaErrorStreamCaptureUnsupported); waiting in a capture on an event
 * recorded outside it is an isolation error. Each of these invalidates the
 * capture, and ending an invalidated capture returns
 * cudaErrorStreamCaptureInvalidated and no graph.
 *
 * What is not modelled, and refused instead: one capture spanning several
 * streams (an event recorded in a capture and waited on by another stream),
 * stream-ordered allocation inside a capture (memory nodes), a graph
 * launched inside a capture (child graphs), and cuDNN/cuBLAS calls (their
 * work is done when issued): all fail with cudaErrorStreamCaptureUnsupported
 * and invalidate the capture.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sim/simgraph.h"
#include "sim/simtime.h"

struct sim_nodes {
    struct sim_node *v;
    size_t n, cap;
    int refs;           /* the graph and its executable graphs share them */
};

struct sim_capture {
    uint64_t id;
    int mode;           /* CU_STREAM_CAPTURE_MODE_* */
    int status;         /* CU_STREAM_CAPTURE_STATUS_ACTIVE or _INVALIDATED */
    struct CUstream_st *stream;
    pthread_t thread;
    int dev, blocking;
    struct sim_nodes *nodes;
    struct sim_capture *next;
};

struct CUgraph_st { struct sim_nodes *nodes; int dev; };
struct CUgraphExec_st { struct sim_nodes *nodes; int dev; uint64_t last_end; };

static struct sim_capture *g_captures;  /* captures under way; guarded by g_sim.lock */
static uint64_t g_capture_seq;
static __thread int t_replaying;
static __thread int t_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

int sim_replaying(void) { return t_replaying; }

/* ---- node sequences ----------------------------------------------------------- */

static struct sim_nodes *nodes_new(void)
{
    struct sim_nodes *ns = calloc(1, sizeof *ns);
    if (ns)
        ns->refs = 1;
    return ns;
}

static void nodes_put_locked(struct sim_nodes *ns)
{
    if (!ns || --ns->refs > 0)
        return;
    for (size_t i = 0; i < ns->n; i++)
        if (ns->v[i].kind == SIM_NODE_CALLBACK && ns->v[i].u.cb.release)
            ns->v[i].u.cb.release(ns->v[i].u.cb.payload);
    free(ns->v);
    free(ns);
}

/* ---- capture state ------------------------------------------------------------ */

static void invalidate_locked(struct sim_capture *c) { c->status = CU_STREAM_CAPTURE_STATUS_INVALIDATED; }

void sim_capture_invalidate_locked(uint64_t id)
{
    for (struct sim_capture *c = g_captures; c; c = c->next)
        if (c->id == id)
            invalidate_locked(c);
}

int sim_capture_active_locked(uint64_t id)
{
    for (struct sim_capture *c = g_captures; c; c = c->next)
        if (c->id == id)
            return 1;
    return 0;
}

uint64_t sim_capture_id_locked(CUstream h)
{
    struct sim_stream_ref r;
    if (sim_stream_lookup_locked(h, &r) != 0 || !r.s || !r.s->cap)
        return 0;
    return r.s->cap->id;
}

/* Whether a blocking stream of device d captures: the legacy stream would
 * then depend on captured work. Invalidates those captures when asked. */
static int legacy_blocked_locked(const struct simgpu_device *d, int invalidate)
{
    int blocked = 0;
    for (struct sim_capture *c = g_captures; c; c = c->next)
        if (c->dev == d->index && c->blocking) {
            blocked = 1;
            if (invalidate)
                invalidate_locked(c);
        }
    return blocked;
}

static void unlink_locked(struct sim_capture *c)
{
    for (struct sim_capture **pp = &g_captures; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    c->stream->cap = NULL;
}

void sim_capture_discard_locked(struct CUstream_st *s)
{
    struct sim_capture *c = s->cap;
    if (!c)
        return;
    unlink_locked(c);
    nodes_put_locked(c->nodes);
    free(c);
}

CUresult sim_capture_check(CUstream h, int sync, int *record)
{
    *record = 0;
    if (t_replaying)
        return CUDA_SUCCESS;
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&g_sim.lock);
    struct sim_stream_ref r;
    if (sim_stream_lookup_locked(h, &r) == 0) {
        if (r.legacy) {
            if (g_captures && legacy_blocked_locked(r.d, 1))
                rc = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
        } else if (r.s->cap) {
            struct sim_capture *c = r.s->cap;
            if (c->status == CU_STREAM_CAPTURE_STATUS_INVALIDATED) {
                rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
            } else if (sync) {
                invalidate_locked(c);
                rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
            } else {
                *record = 1;
            }
        }
    }
    pthread_mutex_unlock(&g_sim.lock);
    return rc;
}

CUresult sim_capture_add(CUstream h, const struct sim_node *n)
{
    pthread_mutex_lock(&g_sim.lock);
    struct sim_stream_ref r;
    CUresult rc = CUDA_ERROR_ILLEGAL_STATE;
    if (sim_stream_lookup_locked(h, &r) == 0 && r.s && r.s->cap) {
        struct sim_nodes *ns = r.s->cap->nodes;
        rc = CUDA_SUCCESS;
        if (ns->n == ns->cap) {
            size_t nc = ns->cap ? ns->cap * 2 : 16;
            struct sim_node *nv = realloc(ns->v, nc * sizeof *nv);
            if (!nv)
                rc = CUDA_ERROR_OUT_OF_MEMORY;
            else
                ns->v = nv, ns->cap = nc;
        }
        if (rc == CUDA_SUCCESS)
            ns->v[ns->n++] = *n;
    }
    pthread_mutex_unlock(&g_sim.lock);
    return rc;
}

CUresult sim_capture_refuse(CUstream h)
{
    int record;
    CUresult rc = sim_capture_check(h, 0, &record);
    if (rc != CUDA_SUCCESS || !record)
        return rc;
    pthread_mutex_lock(&g_sim.lock);
    sim_capture_invalidate_locked(sim_capture_id_locked(h));
    pthread_mutex_unlock(&g_sim.lock);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

/* ---- what the runtime and the libraries use ------------------------------------ */

CUresult simgpu_capture_check(CUstream s, int *record) { return sim_capture_check(s, 0, record); }

CUresult simgpu_capture_refuse(CUstream s) { return sim_capture_refuse(s); }

CUresult simgpu_capture_callback(CUstream s, simgpu_node_fn run, void *payload, void (*release)(void *),
                                 const char *name)
{
    struct sim_node n = {.kind = SIM_NODE_CALLBACK, .name = name};
    n.u.cb.run = run;
    n.u.cb.payload = payload;
    n.u.cb.release = release;
    CUresult rc = sim_capture_add(s, &n);
    if (rc != CUDA_SUCCESS && release)
        release(payload);
    return rc;
}

/* A call that may synchronise implicitly is prohibited while the calling
 * thread captures (unless relaxed) or, for a thread in global mode, while any
 * global-mode capture is under way. */
CUresult simgpu_capture_unsafe_call(void)
{
    if (t_replaying)
        return CUDA_SUCCESS;
    simgpu_init();
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&g_sim.lock);
    pthread_t self = pthread_self();
    for (struct sim_capture *c = g_captures; c; c = c->next) {
        int mine = pthread_equal(c->thread, self);
        if ((mine && c->mode != CU_STREAM_CAPTURE_MODE_RELAXED) ||
            (!mine && t_mode == CU_STREAM_CAPTURE_MODE_GLOBAL && c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
            invalidate_locked(c);
            rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
    }
    pthread_mutex_unlock(&g_sim.lock);
    return rc;
}

CUresult simgpu_exchange_capture_mode(int *mode)
{
    if (!mode || *mode < CU_STREAM_CAPTURE_MODE_GLOBAL || *mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    int old = t_mode;
    t_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

/* ---- begin / end / query ------------------------------------------------------- */

CUresult simgpu_stream_begin_capture(CUstream h, int mode)
{
    simgpu_init();
    if (mode < CU_STREAM_CAPTURE_MODE_GLOBAL || mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_sim.lock);
    struct sim_stream_ref r;
    CUresult rc = CUDA_SUCCESS;
    if (sim_stream_lookup_locked(h, &r) != 0)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (r.legacy)
        rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* documented: not on the legacy stream */
    else if (r.s->cap)
        rc = CUDA_ERROR_ILLEGAL_STATE;
    struct sim_capture *c = NULL;
    if (rc == CUDA_SUCCESS && (!(c = calloc(1, sizeof *c)) || !(c->nodes = nodes_new()))) {
        free(c);
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (rc == CUDA_SUCCESS) {
        c->id = ++g_capture_seq;
        c->mode = mode;
        c->status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
        c->stream = r.s;
        c->thread = pthread_self();
        c->dev = r.d->index;
        c->blocking = r.s->blocking;
        c->next = g_captures;
        g_captures = c;
        r.s->cap = c;
    }
    pthread_mutex_unlock(&g_sim.lock);
    return rc;
}

CUresult simgpu_stream_end_capture(CUstream h, CUgraph *out)
{
    simgpu_init();
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_sim.lock);
    struct sim_stream_ref r;
    CUresult rc = CUDA_SUCCESS;
    struct sim_capture *c = NULL;
    if (sim_stream_lookup_locked(h, &r) != 0)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (r.legacy || !(c = r.s->cap))
        rc = CUDA_ERROR_ILLEGAL_STATE;
    else if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && !pthread_equal(c->thread, pthread_self()))
        rc = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    if (rc != CUDA_SUCCESS) {
        pthread_mutex_unlock(&g_sim.lock);
        return rc;
    }
    unlink_locked(c);
    *out = NULL;
    struct CUgraph_st *g = NULL;
    if (c->status == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
        rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    else if (!(g = calloc(1, sizeof *g)))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS) {
        g->nodes = c->nodes;
        g->dev = c->dev;
        sim_handle_add(&g_sim.graphs, g);
        *out = g;
    } else {
        nodes_put_locked(c->nodes);
    }
    free(c);
    pthread_mutex_unlock(&g_sim.lock);
    return rc;
}

CUresult simgpu_stream_is_capturing(CUstream h, int *status)
{
    simgpu_init();
    if (!status)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_sim.lock);
    struct sim_stream_ref r;
    CUresult rc = CUDA_SUCCESS;
    if (sim_stream_lookup_locked(h, &r) != 0)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (r.legacy && legacy_blocked_locked(r.d, 0))
        rc = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT; /* documented: not invalidated */
    else
        *status = (!r.legacy && r.s->cap) ? r.s->cap->status : CU_STREAM_CAPTURE_STATUS_NONE;
    pthread_mutex_unlock(&g_sim.lock);
    return rc;
}

/* ---- graphs --------------------------------------------------------------------- */

CUresult simgpu_graph_nodes(CUgraph g, CUgraphNode *nodes, size_t *n)
{
    simgpu_init();
    if (!g || !n)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_sim.lock);
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    if (sim_handle_has(&g_sim.graphs, g)) {
        size_t have = g->nodes->n;
        /* The node handles are the nodes themselves. */
        for (size_t i = 0; nodes && i < *n; i++)
            nodes[i] = i < have ? (CUgraphNode)(void *)&g->nodes->v[i] : NULL;
        *n = have;
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&g_sim.lock);
    return rc;
}

CUresult simgpu_graph_instantiate(CUgraphExec *out, CUgraph g, unsigned long long flags)
{
    simgpu_init();
    const unsigned long long known = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
                                     CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD | CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |
                                     CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
    if (!out || !g || (flags & ~known))
        return CUDA_ERROR_INVALID_VALUE;
    /* Device launch needs kernels only; the sequences captured here have
     * copies and sets too. */
    if (flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH)
        return CUDA_ERROR_NOT_SUPPORTED;
    pthread_mutex_lock(&g_sim.lock);
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    if (sim_handle_has(&g_sim.graphs, g)) {
        struct CUgraphExec_st *e = calloc(1, sizeof *e);
        rc = CUDA_ERROR_OUT_OF_MEMORY;
        if (e) {
            e->nodes = g->nodes;
            e->nodes->refs++;
            e->dev = g->dev;
            sim_handle_add(&g_sim.graph_execs, e);
            *out = e;
            rc = CUDA_SUCCESS;
        }
    }
    pthread_mutex_unlock(&g_sim.lock);
    return rc;
}

CUresult simgpu_graph_destroy(CUgraph g)
{
    simgpu_init();
    pthread_mutex_lock(&g_sim.lock);
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    if (g && sim_handle_del(&g_sim.graphs, g) == 0) {
        nodes_put_locked(g->nodes);
        free(g);
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&g_sim.lock);
    return rc;
}

CUresult simgpu_graph_exec_destroy(CUgraphExec e)
{
    simgpu_init();
    pthread_mutex_lock(&g_sim.lock);
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    if (e && sim_handle_del(&g_sim.graph_execs, e) == 0) {
        nodes_put_locked(e->nodes);
        free(e);
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&g_sim.lock);
    return rc;
}

static void replay(const struct sim_node *n, CUstream s)
{
    switch (n->kind) {
    case SIM_NODE_COPY:
        simgpu_memcpy(n->u.cp.dst, n->u.cp.src, n->u.cp.bytes, n->u.cp.dir, s, 0);
        break;
    case SIM_NODE_COPY2D:
        simgpu_memcpy2d(n->u.cp.dst, n->u.cp.dpitch, n->u.cp.src, n->u.cp.spitch, n->u.cp.width, n->u.cp.height,
                        n->u.cp.dir, s, 0);
        break;
    case SIM_NODE_SET:
        simgpu_memset(n->u.set.dst, n->u.set.value, n->u.set.elem, n->u.set.count, s, 0);
        break;
    case SIM_NODE_SET2D:
        simgpu_memset2d_elem(n->u.set.dst, n->u.set.pitch, n->u.set.value, n->u.set.elem, n->u.set.width,
                             n->u.set.height, s, 0);
        break;
    case SIM_NODE_PEER:
        simgpu_memcpy_peer(n->u.peer.dst, n->u.peer.dst_dev, n->u.peer.src, n->u.peer.src_dev, n->u.peer.bytes, s, 0);
        break;
    case SIM_NODE_EVENT:
        /* An event destroyed since the capture is simply not recorded. */
        simgpu_event_record(n->u.event, s);
        break;
    case SIM_NODE_CALLBACK:
        n->u.cb.run(n->u.cb.payload, s);
        break;
    }
}

CUresult simgpu_graph_launch(CUgraphExec e, CUstream h)
{
    simgpu_init();
    if (!e)
        return CUDA_ERROR_INVALID_VALUE;
    int record;
    CUresult rc = sim_capture_check(h, 0, &record);
    if (rc != CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&g_sim.lock);
    struct sim_stream_ref r;
    if (!sim_handle_has(&g_sim.graph_execs, e))
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (sim_stream_lookup_locked(h, &r) != 0)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (r.d->index != e->dev)
        rc = CUDA_ERROR_INVALID_VALUE; /* a graph's nodes belong to its device */
    else if (record) {
        /* A graph launched into a capture would be a child graph node. */
        sim_capture_invalidate_locked(sim_capture_id_locked(h));
        rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (rc != CUDA_SUCCESS) {
        pthread_mutex_unlock(&g_sim.lock);
        return rc;
    }
    sim_host_call_locked();
    /* A launch starts after the previous launch of the same graph. */
    sim_stream_set_ready_locked(&r, e->last_end);
    struct sim_nodes *ns = e->nodes;
    ns->refs++;
    pthread_mutex_unlock(&g_sim.lock);

    t_replaying = 1;
    for (size_t i = 0; i < ns->n; i++)
        replay(&ns->v[i], h);
    t_replaying = 0;

    pthread_mutex_lock(&g_sim.lock);
    if (sim_stream_lookup_locked(h, &r) == 0)
        e->last_end = sim_stream_ready_locked(&r);
    nodes_put_locked(ns);
    pthread_mutex_unlock(&g_sim.lock);
    return CUDA_SUCCESS;
}

/* ---- driver entry points -------------------------------------------------------- */

/* The per-thread twins (_ptsz) are what the driver exports for programs
 * built with per-thread default streams; the header declares only one
 * name per function. */

CUresult cuStreamBeginCapture(CUstream s, CUstreamCaptureMode mode)
{
    CUresult need = sim_need_ctx_for_stream(s);
    return need != CUDA_SUCCESS ? need : simgpu_stream_begin_capture(s, (int)mode);
}
CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode);
CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode)
{
    return cuStreamBeginCapture(s ? s : CU_STREAM_PER_THREAD, mode);
}
CUresult cuStreamEndCapture(CUstream s, CUgraph *g)
{
    CUresult need = sim_need_ctx_for_stream(s);
    return need != CUDA_SUCCESS ? need : simgpu_stream_end_capture(s, g);
}
CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *g);
CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *g)
{
    return cuStreamEndCapture(s ? s : CU_STREAM_PER_THREAD, g);
}
CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *status)
{
    CUresult need = sim_need_ctx_for_stream(s);
    if (need != CUDA_SUCCESS)
        return need;
    int st = 0;
    CUresult rc = simgpu_stream_is_capturing(s, status ? &st : NULL);
    if (rc == CUDA_SUCCESS)
        *status = (CUstreamCaptureStatus)st;
    return rc;
}
CUresult cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus *status);
CUresult cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus *status)
{
    return cuStreamIsCapturing(s ? s : CU_STREAM_PER_THREAD, status);
}
CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    CUresult need = sim_need_init();
    if (need != CUDA_SUCCESS)
        return need;
    int m = mode ? (int)*mode : -1;
    CUresult rc = simgpu_exchange_capture_mode(&m);
    if (rc == CUDA_SUCCESS)
        *mode = (CUstreamCaptureMode)m;
    return rc;
}
CUresult cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long flags)
{
    CUresult need = sim_need_ctx();
    return need != CUDA_SUCCESS ? need : simgpu_graph_instantiate(e, g, flags);
}
CUresult cuGraphLaunch(CUgraphExec e, CUstream s)
{
    CUresult need = sim_need_ctx_for_stream(s);
    return need != CUDA_SUCCESS ? need : simgpu_graph_launch(e, s);
}
CUresult cuGraphLaunch_ptsz(CUgraphExec e, CUstream s);
CUresult cuGraphLaunch_ptsz(CUgraphExec e, CUstream s) { return cuGraphLaunch(e, s ? s : CU_STREAM_PER_THREAD); }
CUresult cuGraphDestroy(CUgraph g)
{
    CUresult need = sim_need_init();
    return need != CUDA_SUCCESS ? need : simgpu_graph_destroy(g);
}
CUresult cuGraphExecDestroy(CUgraphExec e)
{
    CUresult need = sim_need_init();
    return need != CUDA_SUCCESS ? need : simgpu_graph_exec_destroy(e);
}
CUresult cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *n)
{
    CUresult need = sim_need_init();
    return need != CUDA_SUCCESS ? need : simgpu_graph_nodes(g, nodes, n);
}

/* The status and the id of a capture. Its graph and dependency set are not
 * kept in a form that could be handed out while it is under way (a
 * sequence, not a graph), so asking for them is refused rather than
 * answered wrongly. */
CUresult cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id, CUgraph *graph,
                                const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps)
{
    CUresult need = sim_need_ctx_for_stream(s);
    if (need != CUDA_SUCCESS)
        return need;
    if (!status)
        return CUDA_ERROR_INVALID_VALUE;
    int st = 0;
    CUresult rc = simgpu_stream_is_capturing(s, &st);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (st == CU_STREAM_CAPTURE_STATUS_ACTIVE && (graph || deps || edges || ndeps))
        return CUDA_ERROR_NOT_SUPPORTED;
    *status = (CUstreamCaptureStatus)st;
    if (id && st != CU_STREAM_CAPTURE_STATUS_NONE) {
        pthread_mutex_lock(&g_sim.lock);
        *id = sim_capture_id_locked(s);
        pthread_mutex_unlock(&g_sim.lock);
    }
    return CUDA_SUCCESS;
}
CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id, CUgraph *graph,
                                        const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps);
CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id, CUgraph *graph,
                                        const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps)
{
    return cuStreamGetCaptureInfo(s ? s : CU_STREAM_PER_THREAD, status, id, graph, deps, edges, ndeps);
}
