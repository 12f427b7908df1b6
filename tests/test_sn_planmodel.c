/*
 * test_sn_planmodel.c — the planner's model of a learned iteration
 * (tracer/sn_planmodel.h), built from a hand-made call log of a small
 * network trained for three iterations: one step per call, the steps'
 * times, phases, layers and convolution options, every tensor's accesses,
 * lifetime, role and pinning, the memory no call names, the copy
 * bandwidths and where they come from; what a step libsn cannot see
 * through adds; the algorithms measured for the convolutions' configurations
 * as options, and a workspace buffer libsn replaces; and that the access
 * lists give the model's own liveness peak back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tracer/sn_model.h"
#include "tracer/sn_planmodel.h"
#include "tracer/sn_trace.h"
#include "tracer/sn_whatif.h"

#define MiB (1024ull * 1024)
#define EPS 1e-9

typedef struct net {
    sn_trace t;
    uint32_t w, ws, cublas_ws, hostbuf, spare, x, label, y, z, p, dy, dx, dw;
    uint32_t dz[3], lib_tmp[3]; /* allocated anew in every iteration */
} net;

/* Whether the convolutions name their configuration (conf_base + their
 * operation, one configuration per direction), and who owns the buffer
 * they use as workspace: cuDNN (pinned) unless a test says otherwise. */
static uint64_t conf_base;
static int ws_owner = SN_OWNER_CUDNN;

static int is_conv(int op)
{
    return op == SN_OP_CONV_FWD || op == SN_OP_CONV_BWD_DATA || op == SN_OP_CONV_BWD_FILTER;
}

/* Logs one call; dur_ms < 0: not timed. */
static void call(net *n, int op, unsigned flags, uint64_t copy_bytes, const sn_trace_access *acc, int nacc,
                 int algo, uint64_t workspace, double dur_ms)
{
    sn_call c;
    sn_call_init(&c, 0, op, 0, NULL);
    c.algo = algo;
    c.workspace = workspace;
    c.conf = conf_base && is_conv(op) ? conf_base + (uint64_t)op : 0;
    if (copy_bytes) {
        int dim[2] = {1, (int)copy_bytes};
        sn_call_shape(&c, 2, dim);
    } else {
        int dim[4] = {2, 4, 8, 8};
        sn_call_shape(&c, 4, dim);
    }
    int64_t i = sn_trace_call_add(&n->t, &c, flags, acc, nacc);
    assert_true(i >= 0);
    if (dur_ms >= 0)
        sn_trace_call_time(&n->t, i, 0, dur_ms);
}

#define A(t, m) {(t), (m)}
enum { R = SN_ACC_R, W = SN_ACC_W, K = SN_ACC_KILL, S = SN_ACC_SCRATCH };

/* The calls of iteration it, positions in comments:
 *   0 copy x in (1 MiB, pinned host memory)   1 copy labels in (not timed)
 *   2 conv fwd x,w -> y      3 relu y -> z     4 softmax z -> p
 *   5 copy p out             6 loss p,label -> dz (dz allocated before)
 *   7 relu bwd z,dz -> dy (dz freed after)     8 conv bwd data w,dy -> dx
 *   9 conv bwd filter x,dy -> dw (cuDNN allocates and frees lib_tmp around it)
 *  10 axpy dw -> w (opaque_update: not seen through) */
static void iteration(net *n, int it, int opaque_update)
{
    const uint64_t base = 0x10000000ull * (uint64_t)(it + 1);
    sn_trace_access c0[] = {A(n->x, W | K)};
    call(n, SN_OP_MEMCPY_H2D, SN_TC_TRANSFER | SN_TC_HOST_PINNED, 1 * MiB, c0, 1, -1, 0, 0.1 * (it + 1));
    sn_trace_access c1[] = {A(n->label, W | K)};
    call(n, SN_OP_MEMCPY_H2D, SN_TC_TRANSFER, 64, c1, 1, -1, 0, -1);
    sn_trace_access c2[] = {A(n->x, R), A(n->w, R), A(n->y, W | K), A(n->ws, R | W | S)};
    call(n, SN_OP_CONV_FWD, SN_TC_STEP, 0, c2, 4, 1, 65536, it == 2 ? 0.7 : 0.2 + 0.1 * it);
    sn_trace_access c3[] = {A(n->y, R), A(n->z, W | K)};
    call(n, SN_OP_ACT_FWD, SN_TC_STEP, 0, c3, 2, 1 /* CUDNN_ACTIVATION_RELU */, 0, 0.05);
    sn_trace_access c4[] = {A(n->z, R), A(n->p, W | K)};
    call(n, SN_OP_SOFTMAX_FWD, SN_TC_STEP, 0, c4, 2, -1, 0, 0.02);
    sn_trace_access c5[] = {A(n->p, R), A(n->hostbuf, W | K)};
    call(n, SN_OP_MEMCPY_D2H, SN_TC_TRANSFER | SN_TC_HOST_PINNED, 64, c5, 2, -1, 0, 0.015);
    n->dz[it] = sn_trace_alloc(&n->t, base, 1 * MiB, SN_KIND_DEVICE, SN_OWNER_FRAMEWORK, 0);
    sn_trace_access c6[] = {A(n->p, R), A(n->label, R), A(n->dz[it], W | K)};
    call(n, SN_OP_GEAM, SN_TC_STEP, 0, c6, 3, -1, 0, 0.03);
    sn_trace_access c7[] = {A(n->z, R), A(n->dz[it], R), A(n->dy, W | K)};
    call(n, SN_OP_ACT_BWD, SN_TC_STEP, 0, c7, 3, -1, 0, 0.06);
    sn_trace_release(&n->t, n->dz[it]);
    sn_trace_access c8[] = {A(n->w, R), A(n->dy, R), A(n->dx, W | K), A(n->ws, R | W | S)};
    call(n, SN_OP_CONV_BWD_DATA, SN_TC_STEP, 0, c8, 4, 0, 0, 0.5);
    n->lib_tmp[it] = sn_trace_alloc(&n->t, base + 0x1000000, 131072, SN_KIND_DEVICE, SN_OWNER_CUDNN, 0);
    sn_trace_access c9[] = {A(n->x, R), A(n->dy, R), A(n->dw, W | K), A(n->ws, R | W | S)};
    call(n, SN_OP_CONV_BWD_FILTER, SN_TC_STEP, 0, c9, 4, 3, 32768, 0.7);
    sn_trace_release(&n->t, n->lib_tmp[it]);
    sn_trace_access c10[] = {A(n->dw, R), A(n->w, R | W)};
    call(n, SN_OP_AXPY, SN_TC_STEP | (opaque_update ? SN_TC_OPAQUE : 0), 0, c10, 2, -1, 0, 0.01);
}

static void net_run(net *n, int opaque_update)
{
    sn_trace *t = &n->t;
    sn_trace_init(t, 0);
    n->w = sn_trace_alloc(t, 0x1000, 4096, SN_KIND_DEVICE, SN_OWNER_FRAMEWORK, 0);
    n->ws = sn_trace_alloc(t, 0x3000, 65536, SN_KIND_DEVICE, ws_owner, 0);
    n->cublas_ws = sn_trace_alloc(t, 0x800000, 4 * MiB, SN_KIND_DEVICE, SN_OWNER_CUBLAS, 0);
    n->hostbuf = sn_trace_alloc(t, 0x7f0000000000ull, 64, SN_KIND_HOST, SN_OWNER_FRAMEWORK, 0);
    n->spare = sn_trace_alloc(t, 0x2000000, 262144, SN_KIND_DEVICE, SN_OWNER_FRAMEWORK, 0);
    n->x = sn_trace_alloc(t, 0x3000000, 1 * MiB, SN_KIND_DEVICE, SN_OWNER_FRAMEWORK, 0);
    n->label = sn_trace_alloc(t, 0x3200000, 64, SN_KIND_DEVICE, SN_OWNER_FRAMEWORK, 0);
    n->y = sn_trace_alloc(t, 0x3400000, 1 * MiB, SN_KIND_DEVICE, SN_OWNER_FRAMEWORK, 0);
    n->z = sn_trace_alloc(t, 0x3600000, 1 * MiB, SN_KIND_DEVICE, SN_OWNER_FRAMEWORK, 0);
    n->p = sn_trace_alloc(t, 0x3800000, 64, SN_KIND_DEVICE, SN_OWNER_FRAMEWORK, 0);
    n->dy = sn_trace_alloc(t, 0x3a00000, 1 * MiB, SN_KIND_DEVICE, SN_OWNER_FRAMEWORK, 0);
    n->dx = sn_trace_alloc(t, 0x3c00000, 1 * MiB, SN_KIND_DEVICE, SN_OWNER_FRAMEWORK, 0);
    n->dw = sn_trace_alloc(t, 0x3e00000, 4096, SN_KIND_DEVICE, SN_OWNER_FRAMEWORK, 0);
    for (int it = 0; it < 3; it++)
        iteration(n, it, opaque_update);
}

/* The plan tensor of trace allocation id, -1 when none. */
static int tensor_of(const sn_plan_model *pm, const sn_planmodel_store *st, uint32_t id)
{
    for (int i = 0; i < pm->ntensors; i++)
        if (st->trace_tensor[i] == id)
            return i;
    return -1;
}

/* Tensor id's accesses are exactly steps[k], modes[k]. */
static void assert_accesses(const sn_plan_model *pm, const sn_planmodel_store *st, uint32_t id, int n,
                            const int *steps, const uint8_t *modes)
{
    int i = tensor_of(pm, st, id);
    assert_true(i >= 0);
    const sn_plan_tensor *T = &pm->tensor[i];
    assert_int_equal(T->naccess, n);
    for (int k = 0; k < n; k++) {
        assert_int_equal(T->access[k].step, steps[k]);
        assert_int_equal(T->access[k].mode, modes[k]);
    }
}

static void test_planmodel_small_network(void **state)
{
    (void)state;
    net n;
    net_run(&n, 0);
    sn_model m;
    assert_int_equal(sn_model_build(&n.t, &m), 0);
    assert_true(m.found);
    assert_int_equal(m.check, SN_CHECK_OK);
    assert_int_equal(m.period, 8);
    /* the tables come from the second iteration: calls 11..21 */
    assert_int_equal(m.first_index, 8);
    assert_int_equal(m.backward_start, 3);

    sn_plan_model pm;
    sn_planmodel_store st;
    const sn_planmodel_link link = {0, 7.5, 0};
    assert_int_equal(sn_planmodel_build(&n.t, &m, &link, &pm, &st), 0);

    /* steps: the iteration's 11 calls, 8 of them compute steps */
    assert_int_equal(pm.nsteps, 11);
    static const int model_step[11] = {0, 0, 0, 1, 2, 3, 3, 4, 5, 6, 7};
    for (int s = 0; s < 11; s++) {
        assert_int_equal(st.call[s], 11 + s);
        assert_int_equal(st.model_step[s], model_step[s]);
    }
    /* the loss copy stands before the loss step, the first backward one */
    assert_int_equal(pm.backward_start, 5);
    static const int phase[11] = {0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2};
    for (int s = 0; s < 11; s++)
        assert_int_equal(pm.step[s].phase, phase[s]);
    /* layers: data 0, conv 1, relu 2, softmax_loss 3; none for copies and the update */
    assert_string_equal(m.layers[1].type, "conv");
    assert_string_equal(m.layers[2].type, "relu");
    static const int layer[11] = {-1, -1, 1, 2, 3, -1, 3, 2, 1, 1, -1};
    for (int s = 0; s < 11; s++)
        assert_int_equal(pm.step[s].layer, layer[s]);

    /* times: a compute step's mean over the three iterations (conv fwd:
     * 0.2, 0.3, 0.7), a copy's own (0.2 in the second iteration), the
     * untimed label copy 0 */
    static const double ms[11] = {0.2, 0, 0.4, 0.05, 0.02, 0.015, 0.03, 0.06, 0.5, 0.7, 0.01};
    double sum = 0;
    for (int s = 0; s < 11; s++) {
        assert_true(pm.step[s].ms > ms[s] - EPS && pm.step[s].ms < ms[s] + EPS);
        sum += pm.step[s].ms;
    }
    assert_true(sum > 1.985 - EPS && sum < 1.985 + EPS);
    assert_int_equal(st.untimed, 1);
    assert_int_equal(st.opaque, 0);

    /* convolutions: forward, backward data and filter, each with the
     * framework's algorithm as the one option */
    for (int s = 0; s < 11; s++) {
        int conv = s == 2 || s == 8 || s == 9;
        assert_int_equal(pm.step[s].conv, conv);
        assert_int_equal(pm.step[s].nalgo, conv);
        assert_int_equal(pm.step[s].framework_algo, conv ? 0 : -1);
        if (!conv)
            assert_null(pm.step[s].algo);
    }
    assert_int_equal(pm.step[2].algo[0].algo, 1);
    assert_int_equal(pm.step[2].algo[0].workspace, 65536);
    assert_int_equal(pm.step[2].own_workspace, 65536);
    assert_true(pm.step[2].algo[0].ms > 0.4 - EPS && pm.step[2].algo[0].ms < 0.4 + EPS);
    assert_int_equal(pm.step[8].algo[0].algo, 0);
    assert_int_equal(pm.step[8].algo[0].workspace, 0);
    assert_int_equal(pm.step[9].algo[0].algo, 3);
    assert_int_equal(pm.step[9].algo[0].workspace, 32768);
    assert_int_equal(pm.step[9].own_workspace, 32768);
    assert_true(pm.step[9].algo[0].ms > 0.7 - EPS && pm.step[9].algo[0].ms < 0.7 + EPS);

    /* tensors: the model's 12, index for index, then the two allocations
     * no call names (spare, and the cuDNN allocation around step 9) */
    assert_int_equal(m.ntensors, 12);
    assert_int_equal(pm.ntensors, 14);
    assert_int_equal(st.unnamed, 2);
    for (int i = 0; i < m.ntensors; i++)
        assert_int_equal(st.trace_tensor[i], m.tensors[i].id);
    assert_int_equal(st.trace_tensor[12], n.spare);
    assert_int_equal(st.trace_tensor[13], n.lib_tmp[1]);

    static const int xs[] = {0, 2, 9}, ws[] = {2, 8, 9}, wt[] = {2, 8, 10}, zs[] = {3, 4, 7}, dzs[] = {6, 7},
                     dxs[] = {8}, hs[] = {5};
    static const uint8_t xm[] = {W | K, R, R}, wsm[] = {R | W | S, R | W | S, R | W | S}, wm[] = {R, R, R | W},
                         zm[] = {W | K, R, R}, dzm[] = {W | K, R}, dxm[] = {W | K}, hm[] = {W | K};
    assert_accesses(&pm, &st, n.x, 3, xs, xm);
    assert_accesses(&pm, &st, n.ws, 3, ws, wsm);
    assert_accesses(&pm, &st, n.w, 3, wt, wm);
    assert_accesses(&pm, &st, n.z, 3, zs, zm);
    assert_accesses(&pm, &st, n.dz[1], 2, dzs, dzm);
    assert_accesses(&pm, &st, n.dx, 1, dxs, dxm);
    assert_accesses(&pm, &st, n.hostbuf, 1, hs, hm);
    assert_accesses(&pm, &st, n.spare, 0, NULL, NULL);

    const sn_plan_tensor *T;
    /* bytes on the device: host memory takes none */
    T = &pm.tensor[tensor_of(&pm, &st, n.x)];
    assert_int_equal(T->bytes, 1 * MiB);
    assert_int_equal(T->role, SN_PLAN_FEATURE);
    assert_false(T->conv_output);
    assert_false(T->pinned);
    assert_false(T->bounded);
    assert_int_equal(T->alloc_step, 0);
    assert_int_equal(T->free_step, 10);
    T = &pm.tensor[tensor_of(&pm, &st, n.y)];
    assert_int_equal(T->role, SN_PLAN_FEATURE);
    assert_true(T->conv_output);
    T = &pm.tensor[tensor_of(&pm, &st, n.z)];
    assert_false(T->conv_output); /* the relu's: a layer of its own */
    T = &pm.tensor[tensor_of(&pm, &st, n.w)];
    assert_int_equal(T->bytes, 4096);
    assert_int_equal(T->role, SN_PLAN_WEIGHT);
    assert_false(T->pinned);
    T = &pm.tensor[tensor_of(&pm, &st, n.dw)];
    assert_int_equal(T->role, SN_PLAN_WEIGHT_GRAD);
    T = &pm.tensor[tensor_of(&pm, &st, n.dy)];
    assert_int_equal(T->role, SN_PLAN_GRADIENT);
    T = &pm.tensor[tensor_of(&pm, &st, n.ws)];
    assert_int_equal(T->bytes, 65536);
    assert_int_equal(T->role, SN_PLAN_WORKSPACE);
    assert_true(T->pinned); /* cuDNN's own */
    T = &pm.tensor[tensor_of(&pm, &st, n.hostbuf)];
    assert_int_equal(T->bytes, 0);
    assert_true(T->pinned);
    /* allocated after position 5, freed after position 7 */
    T = &pm.tensor[tensor_of(&pm, &st, n.dz[1])];
    assert_int_equal(T->bytes, 1 * MiB);
    assert_true(T->bounded);
    assert_int_equal(T->alloc_step, 6);
    assert_int_equal(T->free_step, 7);
    T = &pm.tensor[12]; /* spare: held throughout, movable */
    assert_int_equal(T->bytes, 262144);
    assert_int_equal(T->role, SN_PLAN_OTHER);
    assert_false(T->pinned);
    assert_false(T->bounded);
    T = &pm.tensor[13]; /* cuDNN's, for the duration of step 9 */
    assert_int_equal(T->bytes, 131072);
    assert_int_equal(T->role, SN_PLAN_WORKSPACE);
    assert_true(T->pinned);
    assert_true(T->bounded);
    assert_int_equal(T->alloc_step, 9);
    assert_int_equal(T->free_step, 9);
    assert_int_equal(st.pinned, 3);
    /* cuBLAS's workspace: named by no call, held throughout */
    assert_int_equal(pm.fixed_bytes, 4 * MiB);

    /* copies: three pinned 1 MiB copies in 0.1, 0.2 and 0.3 ms, the
     * fastest at 1 MiB / 0.1 ms; none large enough to the host, so the
     * caller's figure */
    assert_int_equal(st.h2d_source, SN_PLANMODEL_MEASURED);
    assert_int_equal(st.h2d_copies, 3);
    assert_true(pm.h2d_gbps > 10.48576 - 1e-6 && pm.h2d_gbps < 10.48576 + 1e-6);
    assert_int_equal(st.d2h_source, SN_PLANMODEL_GIVEN);
    assert_true(pm.d2h_gbps == 7.5);
    assert_true(pm.duplex == 1.6);
    assert_true(pm.copy_ms == 0.01);

    /* the access lists and lifetimes are the what-if's: liveness over them
     * peaks where the model's did */
    sn_wi_tensor wt_[14];
    for (int i = 0; i < pm.ntensors; i++) {
        const sn_plan_tensor *P = &pm.tensor[i];
        wt_[i] = (sn_wi_tensor){.bytes = P->bytes, .naccess = P->naccess,
                                .access = (const sn_wi_access *)P->access, .bounded = P->bounded,
                                .alloc_step = P->alloc_step, .free_step = P->free_step};
    }
    _Static_assert(sizeof(sn_wi_access) == sizeof(sn_plan_access), "same layout");
    sn_wi_input in = {pm.nsteps, pm.backward_start, NULL, pm.ntensors, wt_, pm.fixed_bytes, NULL, 0, 0};
    sn_wi_result r;
    assert_int_equal(sn_whatif(&in, &r, NULL, NULL, NULL), 0);
    assert_int_equal(r.peak_liveness, m.peak_live);
    /* by hand: at step 7, cuBLAS's 4 MiB, x, z, dz and dy (1 MiB each)
     * and the weight (4 KiB) */
    assert_int_equal(m.peak_live, 8 * MiB + 4096);

    /* without a caller's figure, the default */
    sn_planmodel_free(&st);
    assert_int_equal(sn_planmodel_build(&n.t, &m, NULL, &pm, &st), 0);
    assert_int_equal(st.d2h_source, SN_PLANMODEL_DEFAULT);
    assert_true(pm.d2h_gbps == SN_PLANMODEL_DEFAULT_GBPS);
    sn_planmodel_free(&st);
    assert_null(st.step);
    sn_model_free(&m);
    sn_trace_destroy(&n.t);
}

/* A step libsn cannot see through may touch every tensor on the device:
 * each one that exists then is read and written there. */
static void test_planmodel_opaque_step(void **state)
{
    (void)state;
    net n;
    net_run(&n, 1);
    sn_model m;
    assert_int_equal(sn_model_build(&n.t, &m), 0);
    assert_true(m.found);
    assert_int_equal(m.period, 8);
    sn_plan_model pm;
    sn_planmodel_store st;
    assert_int_equal(sn_planmodel_build(&n.t, &m, NULL, &pm, &st), 0);
    assert_int_equal(pm.nsteps, 11);
    assert_int_equal(st.opaque, 1);
    const uint8_t RW = SN_PLAN_R | SN_PLAN_W;
    static const int xs[] = {0, 2, 9, 10}, wt[] = {2, 8, 10}, sp[] = {10}, dzs[] = {6, 7}, hs[] = {5};
    const uint8_t xm[] = {W | K, R, R, RW}, wm[] = {R, R, RW}, spm[] = {RW}, dzm[] = {W | K, R}, hm[] = {W | K};
    assert_accesses(&pm, &st, n.x, 4, xs, xm);
    assert_accesses(&pm, &st, n.w, 3, wt, wm);
    assert_accesses(&pm, &st, n.spare, 1, sp, spm);
    /* what it was seen to read, it may write too */
    static const int dws[] = {9, 10};
    const uint8_t dwm[] = {W | K, RW};
    assert_accesses(&pm, &st, n.dw, 2, dws, dwm);
    /* freed before it, or not on the device: untouched */
    assert_accesses(&pm, &st, n.dz[1], 2, dzs, dzm);
    assert_accesses(&pm, &st, n.lib_tmp[1], 0, NULL, NULL);
    assert_accesses(&pm, &st, n.hostbuf, 1, hs, hm);
    int at10 = 0;
    for (int i = 0; i < pm.ntensors; i++)
        at10 += pm.tensor[i].naccess && pm.tensor[i].access[pm.tensor[i].naccess - 1].step == 10;
    /* x, label, y, z, p, w, ws, dy, dx, dw, spare */
    assert_int_equal(at10, 11);
    sn_planmodel_free(&st);
    sn_model_free(&m);
    sn_trace_destroy(&n.t);
}

/* Bandwidth from the log's own copies: pinned host memory only, large
 * copies only, successful and timed ones only; the fastest of them (a
 * copy held up by other work is slower, never faster, than the link). */
static void test_planmodel_measured_copies(void **state)
{
    (void)state;
    net n;
    sn_trace *t = &n.t;
    sn_trace_init(t, 0);
    uint32_t d = sn_trace_alloc(t, 0x1000000, 8 * MiB, SN_KIND_DEVICE, SN_OWNER_FRAMEWORK, 0);
    const unsigned pinned = SN_TC_TRANSFER | SN_TC_HOST_PINNED;
    sn_trace_access a[] = {A(d, W)};
    call(&n, SN_OP_MEMCPY_H2D, pinned, 2 * MiB, a, 1, -1, 0, 0.2);
    call(&n, SN_OP_MEMCPY_H2D, pinned, 2 * MiB, a, 1, -1, 0, 0.3);
    call(&n, SN_OP_MEMCPY_H2D, SN_TC_TRANSFER, 2 * MiB, a, 1, -1, 0, 0.9);    /* pageable */
    call(&n, SN_OP_MEMCPY_H2D, pinned, 512 * 1024, a, 1, -1, 0, 0.5);         /* small */
    call(&n, SN_OP_MEMCPY_H2D, pinned, 2 * MiB, a, 1, -1, 0, -1);             /* not timed */
    call(&n, SN_OP_MEMCPY_H2D, pinned, 2 * MiB, a, 1, -1, 0, 5.0);
    sn_trace_call_failed(t, (int64_t)t->ncalls - 1, SN_TC_TRANSFER);           /* failed */
    call(&n, SN_OP_MEMCPY_D2H, pinned, 4 * MiB, a, 1, -1, 0, 0.5);
    double h2d, d2h;
    int nh, nd;
    sn_planmodel_measure_copies(t, &h2d, &d2h, &nh, &nd);
    assert_int_equal(nh, 2);
    assert_int_equal(nd, 1);
    /* 2 MiB in 0.2 ms (the 0.3 ms copy was held up); 4 MiB in 0.5 ms */
    assert_true(h2d > 10.48576 - 1e-9 && h2d < 10.48576 + 1e-9);
    assert_true(d2h > 8.388608 - 1e-9 && d2h < 8.388608 + 1e-9);
    sn_trace_destroy(t);

    sn_trace_init(t, 0);
    sn_planmodel_measure_copies(t, &h2d, &d2h, NULL, NULL);
    assert_true(h2d == 0 && d2h == 0);
    sn_trace_destroy(t);
}

/* A log without a whole iteration has no plan model. */
static void test_planmodel_no_iteration(void **state)
{
    (void)state;
    net n;
    sn_trace *t = &n.t;
    sn_trace_init(t, 0);
    n.x = sn_trace_alloc(t, 0x1000, 4096, SN_KIND_DEVICE, SN_OWNER_FRAMEWORK, 0);
    n.y = sn_trace_alloc(t, 0x3000, 4096, SN_KIND_DEVICE, SN_OWNER_FRAMEWORK, 0);
    sn_trace_access a[] = {A(n.x, R), A(n.y, W | K)};
    call(&n, SN_OP_CONV_FWD, SN_TC_STEP, 0, a, 2, 0, 0, 0.1);
    sn_model m;
    assert_int_equal(sn_model_build(t, &m), 0);
    assert_false(m.found);
    sn_plan_model pm;
    sn_planmodel_store st;
    assert_int_equal(sn_planmodel_build(t, &m, NULL, &pm, &st), -1);
    assert_int_equal(pm.nsteps, 0);
    assert_null(pm.step);
    assert_null(st.tensor);
    sn_model_free(&m);
    sn_trace_destroy(t);
}

static void near_ms(double got, double want)
{
    if (got < want - EPS || got > want + EPS)
        fail_msg("got %.12g ms, want %.12g", got, want);
}

/* The algorithms manage mode measured for a configuration become the
 * step's options: the framework's first, with its profiled time, every
 * other one timed by the search scaled by the ratio of the two (profile
 * 0.4 ms for the forward convolution, search 0.5 ms: x 0.8), with the
 * workspace it needs; the non-deterministic ones only where the
 * framework's algorithm is too; untimed ones and configurations not
 * measured give no options. A workspace buffer every user of which is a
 * measured convolution is libsn's to replace: no memory, no buffer of the
 * steps' own. */
static void test_planmodel_algorithms(void **state)
{
    (void)state;
    net n;
    conf_base = 1000;
    ws_owner = SN_OWNER_FRAMEWORK;
    net_run(&n, 0);
    conf_base = 0;
    ws_owner = SN_OWNER_CUDNN;
    const uint64_t fwd = 1000 + SN_OP_CONV_FWD, bwd = 1000 + SN_OP_CONV_BWD_DATA, fil = 1000 + SN_OP_CONV_BWD_FILTER;
    /* measured while recording; the log is still recording here */
    assert_int_equal(sn_trace_algos_claim(&n.t, fwd), 1);
    assert_int_equal(sn_trace_algos_claim(&n.t, fwd), 0); /* once per configuration */
    const sn_trace_algo af[] = {{3, 1, 0.1, 4 * MiB}, {1, 1, 0.5, 32768}, {2, 0, 0.25, MiB}, {0, 1, 1.0, 0}};
    sn_trace_algos_put(&n.t, fwd, af, 4);
    /* the framework's backward data algorithm 0 is non-deterministic:
     * algorithm 1 stays; algorithm 5 was not timed */
    const sn_trace_algo ab[] = {{1, 1, 0.2, 2 * MiB}, {0, 0, 0.4, 0}, {5, 1, -1.0, 0}};
    sn_trace_algos_put(&n.t, bwd, ab, 3);
    /* the filter's search found nothing */
    sn_trace_algos_put(&n.t, fil, NULL, 0);
    int k = -1;
    assert_null(sn_trace_algos_get(&n.t, fil, &k));
    assert_int_equal(k, 0);
    assert_int_equal(n.t.nconf, 3);

    sn_model m;
    assert_int_equal(sn_model_build(&n.t, &m), 0);
    sn_plan_model pm;
    sn_planmodel_store st;
    assert_int_equal(sn_planmodel_build(&n.t, &m, NULL, &pm, &st), 0);
    assert_int_equal(pm.nsteps, 11);
    assert_int_equal(st.options, 2);
    const sn_plan_step *f = &pm.step[2], *d = &pm.step[8], *w = &pm.step[9];
    assert_int_equal(f->nalgo, 3);
    assert_int_equal(f->framework_algo, 0);
    assert_int_equal(f->algo[0].algo, 1);
    near_ms(f->algo[0].ms, 0.4);
    assert_int_equal(f->algo[0].workspace, 32768); /* what it needs of the 65536 it was given */
    assert_int_equal(f->algo[1].algo, 3);
    near_ms(f->algo[1].ms, 0.08);
    assert_int_equal(f->algo[1].workspace, 4 * MiB);
    assert_int_equal(f->algo[2].algo, 0);
    near_ms(f->algo[2].ms, 0.8);
    assert_int_equal(f->algo[2].workspace, 0);
    /* backward data: profiled 0.5, searched 0.4: x 1.25 */
    assert_int_equal(d->nalgo, 2);
    assert_int_equal(d->algo[0].algo, 0);
    near_ms(d->algo[0].ms, 0.5);
    assert_int_equal(d->algo[1].algo, 1);
    near_ms(d->algo[1].ms, 0.25);
    assert_int_equal(d->algo[1].workspace, 2 * MiB);
    assert_int_equal(w->nalgo, 1);
    assert_int_equal(w->algo[0].algo, 3);
    /* the buffer also serves the filter's step, whose configuration has no
     * measured algorithm: it stays the framework's, and so do the steps'
     * own workspaces */
    int wi = tensor_of(&pm, &st, n.ws);
    assert_int_equal(pm.tensor[wi].bytes, 65536);
    assert_int_equal(f->own_workspace, 65536);
    assert_int_equal(st.virtual_ws, 0);
    assert_int_equal(st.supplied[2] + st.supplied[8] + st.supplied[9], 1); /* backward data gave none */
    assert_int_equal(st.supplied[8], 1);
    sn_planmodel_free(&st);

    /* with the filter's algorithms measured too, libsn supplies every
     * workspace the buffer served */
    sn_model_free(&m);
    sn_trace_destroy(&n.t);
    conf_base = 1000;
    ws_owner = SN_OWNER_FRAMEWORK;
    net_run(&n, 0);
    conf_base = 0;
    ws_owner = SN_OWNER_CUDNN;
    sn_trace_algos_put(&n.t, fwd, af, 4);
    sn_trace_algos_put(&n.t, bwd, ab, 3);
    const sn_trace_algo aw[] = {{3, 0, 0.7, 32768}, {1, 1, 1.4, 0}};
    sn_trace_algos_put(&n.t, fil, aw, 2);
    assert_int_equal(sn_model_build(&n.t, &m), 0);
    assert_int_equal(sn_planmodel_build(&n.t, &m, NULL, &pm, &st), 0);
    assert_int_equal(st.options, 3);
    assert_int_equal(st.virtual_ws, 1);
    wi = tensor_of(&pm, &st, n.ws);
    assert_int_equal(pm.tensor[wi].bytes, 0);
    for (int s = 0; s < 11; s++) {
        assert_int_equal(pm.step[s].own_workspace, 0);
        assert_int_equal(st.supplied[s], s == 2 || s == 8 || s == 9);
    }
    assert_int_equal(pm.step[9].nalgo, 2);
    near_ms(pm.step[9].algo[1].ms, 1.4);
    sn_planmodel_free(&st);
    sn_model_free(&m);
    sn_trace_destroy(&n.t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_planmodel_small_network),
        cmocka_unit_test(test_planmodel_opaque_step),
        cmocka_unit_test(test_planmodel_measured_copies),
        cmocka_unit_test(test_planmodel_no_iteration),
        cmocka_unit_test(test_planmodel_algorithms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
