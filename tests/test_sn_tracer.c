/*
 * test_sn_tracer.c — the tracer's pure parts on hand-made data, without
 * CUDA: period detection and the cursor that follows the iteration, the
 * what-if memory strategies, the iteration model (phases, layers, graph,
 * tensor kinds) built from a synthetic call log of a small network trained
 * for three iterations, logs that hold no complete iteration, the bounds
 * on the log: nothing grows once the profile is complete, and a program
 * that never repeats stops being recorded at the cap; learning the
 * iteration anew when the batch changes; and two of the model's passes on
 * their own (sn_model_int.h): the layer graph from the edges, and the
 * steps' mean times.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tracer/sn_model.h"
#include "tracer/sn_model_int.h"
#include "tracer/sn_output.h"
#include "tracer/sn_period.h"
#include "tracer/sn_trace.h"
#include "tracer/sn_whatif.h"

/* ---- period ---------------------------------------------------------------------- */

static void test_period_with_different_first_iteration(void **state)
{
    (void)state;
    uint64_t s[200];
    size_t n = 0;
    const uint64_t setup[] = {90, 91, 92};
    const uint64_t first[] = {1, 2, 3, 4, 99, 5, 6};  /* an extra step in iteration 1 */
    const uint64_t iter[] = {1, 2, 3, 4, 5, 6};
    for (size_t i = 0; i < 3; i++)
        s[n++] = setup[i];
    for (size_t i = 0; i < 7; i++)
        s[n++] = first[i];
    for (int k = 0; k < 5; k++)
        for (size_t i = 0; i < 6; i++)
            s[n++] = iter[i];
    sn_period p;
    sn_period_find(s, n, 2, 16, &p);
    assert_true(p.found);
    assert_int_equal(p.period, 6);
    assert_int_equal(p.end, n);
    /* the periodic part reaches back into iteration 1, after its odd step */
    assert_int_equal(p.start, 3 + 5);
}

static void test_period_internal_repetition(void **state)
{
    (void)state;
    /* identical blocks inside an iteration must not be taken for it */
    uint64_t it[] = {7, 7, 7, 8, 9, 9, 9, 10};
    uint64_t s[80];
    size_t n = 0;
    for (int k = 0; k < 10; k++)
        for (size_t i = 0; i < 8; i++)
            s[n++] = it[i];
    sn_period p;
    sn_period_find(s, n, 2, 0, &p);
    assert_true(p.found);
    assert_int_equal(p.period, 8);
    assert_int_equal(p.start, 0);
}

static void test_period_trailing_steps(void **state)
{
    (void)state;
    uint64_t s[64];
    size_t n = 0;
    for (int k = 0; k < 8; k++)
        for (uint64_t i = 1; i <= 5; i++)
            s[n++] = i;
    s[n++] = 40; /* a final evaluation pass after training */
    s[n++] = 41;
    sn_period p;
    sn_period_find(s, n, 2, 8, &p);
    assert_true(p.found);
    assert_int_equal(p.period, 5);
    assert_int_equal(p.end, n - 2);
    assert_int_equal(p.start, 0);
}

static void test_period_none(void **state)
{
    (void)state;
    uint64_t s[32];
    for (int i = 0; i < 32; i++)
        s[i] = (uint64_t)i * 7919u;
    sn_period p;
    sn_period_find(s, 32, 2, 4, &p);
    assert_false(p.found);
    sn_period_find(s, 1, 2, 4, &p);
    assert_false(p.found);
}

/* ---- the cursor ------------------------------------------------------------------------ */

/* Feeds n signatures; returns the positions in pos (may be NULL) and how
 * many completed an iteration. */
static int feed(sn_cursor *c, const uint64_t *sig, size_t n, long *pos)
{
    int done = 0;
    for (size_t i = 0; i < n; i++) {
        int d;
        long p = sn_cursor_step(c, sig[i], &d);
        if (pos)
            pos[i] = p;
        done += d;
    }
    return done;
}

static void test_cursor_follows_and_resyncs(void **state)
{
    (void)state;
    const uint64_t it[] = {10, 11, 12, 13};
    sn_cursor c;
    assert_int_equal(sn_cursor_init(&c, it, 4, 0, 1), 0);
    long pos[12];
    const uint64_t three[] = {10, 11, 12, 13, 10, 11, 12, 13, 10, 11, 12, 13};
    assert_int_equal(feed(&c, three, 12, pos), 3);
    for (int i = 0; i < 12; i++)
        assert_int_equal(pos[i], i % 4);
    assert_true(c.iterations == 3 && c.off_sequence == 0);
    /* an unexpected step (a test pass, a new shape): it and the rest of its
     * iteration are off the sequence; the next first step brings it back */
    const uint64_t odd[] = {10, 11, 99, 12, 13, 10, 11, 12, 13};
    assert_int_equal(feed(&c, odd, 9, pos), 1);
    assert_int_equal(pos[1], 1);
    assert_int_equal(pos[2], -1);
    assert_int_equal(pos[3], -1);
    assert_int_equal(pos[4], -1);
    assert_int_equal(pos[5], 0);
    assert_int_equal(pos[8], 3);
    assert_true(c.iterations == 4 && c.off_sequence == 3);
    assert_true(c.synced);
    /* an iteration cut short by the next one's first step: not completed,
     * not off the sequence either */
    const uint64_t short_[] = {10, 11, 10, 11, 12, 13};
    assert_int_equal(feed(&c, short_, 6, pos), 1);
    assert_int_equal(pos[2], 0);
    assert_true(c.iterations == 5 && c.off_sequence == 3);
    sn_cursor_destroy(&c);

    /* starting inside an iteration, and starting off the sequence */
    assert_int_equal(sn_cursor_init(&c, it, 4, 2, 1), 0);
    const uint64_t tail[] = {12, 13, 10};
    assert_int_equal(feed(&c, tail, 3, pos), 1);
    assert_true(pos[0] == 2 && pos[2] == 0);
    sn_cursor_destroy(&c);
    assert_int_equal(sn_cursor_init(&c, it, 4, 0, 0), 0);
    const uint64_t late[] = {12, 13, 10, 11, 12, 13};
    assert_int_equal(feed(&c, late, 6, pos), 1);
    assert_true(pos[0] == -1 && pos[1] == -1 && pos[2] == 0);
    assert_true(c.off_sequence == 2);
    sn_cursor_destroy(&c);
    assert_int_equal(sn_cursor_init(&c, it, 0, 0, 1), -1);
}

static void test_cursor_repeated_signatures(void **state)
{
    (void)state;
    /* the first step's signature recurs inside the iteration (identical
     * blocks): following in order is not disturbed by it */
    const uint64_t it[] = {5, 6, 5, 6, 7};
    sn_cursor c;
    assert_int_equal(sn_cursor_init(&c, it, 5, 0, 1), 0);
    const uint64_t run[] = {5, 6, 5, 6, 7, 5, 6, 5, 6, 7};
    long pos[10];
    assert_int_equal(feed(&c, run, 10, pos), 2);
    for (int i = 0; i < 10; i++)
        assert_int_equal(pos[i], i % 5);
    assert_true(c.off_sequence == 0);
    sn_cursor_destroy(&c);
}

/* ---- what-if ---------------------------------------------------------------------- */

/* Steps: 0 conv fwd (x -> a), 1 relu fwd (a -> b), 2 loss (b -> db),
 * 3 relu bwd (a, db -> da), 4 conv bwd filter (x, da -> dw), 5 update (dw -> w).
 * x arrives by copy before step 0. Sizes in MiB. */
#define MB (1024ull * 1024)
static void test_whatif_peaks(void **state)
{
    (void)state;
    static const sn_wi_access x_acc[] = {{0, SN_ACC_W | SN_ACC_KILL}, {0, SN_ACC_R}, {4, SN_ACC_R}};
    static const sn_wi_access w_acc[] = {{0, SN_ACC_R}, {5, SN_ACC_R | SN_ACC_W}};
    static const sn_wi_access a_acc[] = {{0, SN_ACC_W | SN_ACC_KILL}, {1, SN_ACC_R}, {3, SN_ACC_R}};
    static const sn_wi_access b_acc[] = {{1, SN_ACC_W | SN_ACC_KILL}, {2, SN_ACC_R}};
    static const sn_wi_access db_acc[] = {{2, SN_ACC_W | SN_ACC_KILL}, {3, SN_ACC_R}};
    static const sn_wi_access da_acc[] = {{3, SN_ACC_W | SN_ACC_KILL}, {4, SN_ACC_R}};
    static const sn_wi_access dw_acc[] = {{4, SN_ACC_W | SN_ACC_KILL}, {5, SN_ACC_R}};
    sn_wi_tensor t[] = {
        {.bytes = 8 * MB, .offload = SN_WI_FEATURE, .naccess = 3, .access = x_acc},
        {.bytes = 1 * MB, .offload = SN_WI_KEEP, .naccess = 2, .access = w_acc},
        {.bytes = 16 * MB, .offload = SN_WI_CONV_OUTPUT, .naccess = 3, .access = a_acc},
        {.bytes = 16 * MB, .offload = SN_WI_FEATURE, .naccess = 2, .access = b_acc},
        {.bytes = 16 * MB, .offload = SN_WI_KEEP, .naccess = 2, .access = db_acc},
        {.bytes = 16 * MB, .offload = SN_WI_KEEP, .naccess = 2, .access = da_acc},
        {.bytes = 1 * MB, .offload = SN_WI_KEEP, .naccess = 2, .access = dw_acc},
    };
    int group[6] = {0, 1, 2, 3, 4, 5};
    sn_wi_input in = {6, 3, group, 7, t, 0, NULL, 0, 0};
    sn_wi_result r;
    uint64_t live[6], conv[6], all[6];
    assert_int_equal(sn_whatif(&in, &r, live, conv, all), 0);
    /* liveness: w always (1); x 0..4; a 0..3; b 1..2; db 2..3; da 3..4; dw 4..5 */
    assert_true(live[0] == (1 + 8 + 16) * MB);
    assert_true(live[1] == (1 + 8 + 16 + 16) * MB);
    assert_true(live[2] == (1 + 8 + 16 + 16 + 16) * MB);
    assert_true(live[3] == (1 + 8 + 16 + 16 + 16) * MB);
    assert_true(live[4] == (1 + 8 + 16 + 1) * MB);
    assert_true(live[5] == (1 + 1) * MB);
    assert_true(r.peak_liveness == 57 * MB);
    /* conv outputs offloaded: a (conv output) leaves after step 1, is back at
     * step 2 for its read at 3 -> no gap: unchanged */
    assert_true(r.peak_conv == 57 * MB);
    /* all feature maps: x leaves after step 0 and returns at step 3 */
    assert_true(all[1] == (1 + 16 + 16) * MB);
    assert_true(all[2] == (1 + 16 + 16 + 16) * MB);
    assert_true(live[2] - all[2] == 8 * MB);
    /* step 3: x is back (prefetched for step 4) while a, db and da are live */
    assert_true(all[3] == 57 * MB);
    assert_true(r.peak_all == 57 * MB);
    assert_true(r.carried_bytes == 1 * MB);
    /* the largest working set of one call: step 3 touches a, db, da (48);
     * libsn can move the weight w, so the bound does not hold it */
    assert_true(r.max_working_set == 48 * MB);
    assert_int_equal(r.max_working_set_step, 3);
    assert_true(r.lower_bound == 48 * MB);
    /* SuperNeurons: step 3's layer set (a, db, da) and the carried w */
    assert_true(r.peak_superneurons == 49 * MB);
    assert_int_equal(r.superneurons_step, 3);
    assert_true(r.lower_bound <= r.peak_superneurons && r.peak_superneurons <= r.peak_all &&
                r.peak_all <= r.peak_liveness);
}

/* Library memory of a known handle (keyed_bytes of fixed_bytes) counts in
 * the working set of the calls on that handle (lib_bytes), not beside every
 * call's: the lower bound is the largest call with its own handle's memory,
 * plus the library memory of no known handle; the peaks keep all of it. */
static void test_whatif_handle_memory(void **state)
{
    (void)state;
    static const sn_wi_access a_acc[] = {{0, SN_ACC_W | SN_ACC_KILL}, {1, SN_ACC_R}};
    static const sn_wi_access b_acc[] = {{1, SN_ACC_W | SN_ACC_KILL}, {2, SN_ACC_R}};
    sn_wi_tensor t[] = {
        {.bytes = 10 * MB, .naccess = 2, .access = a_acc},
        {.bytes = 2 * MB, .naccess = 2, .access = b_acc},
    };
    /* step 1 (a and b: 12) on a 1 MiB handle, step 2 (b: 2) on a 4 MiB
     * one; 2 MiB of library memory belong to no known handle */
    const uint64_t lib[3] = {0, 1 * MB, 4 * MB};
    sn_wi_input in = {3, 3, NULL, 2, t, 7 * MB, lib, 5 * MB, 4 * MB};
    sn_wi_result r;
    assert_int_equal(sn_whatif(&in, &r, NULL, NULL, NULL), 0);
    assert_true(r.peak_liveness == 19 * MB);
    assert_true(r.max_working_set == 13 * MB);
    assert_true(r.max_working_set_lib == 1 * MB);
    assert_int_equal(r.max_working_set_step, 1);
    assert_true(r.lower_bound == 15 * MB);
    /* the same memory with no handle known: all of it beside step 1 */
    in.lib_bytes = NULL;
    in.keyed_bytes = 0;
    assert_int_equal(sn_whatif(&in, &r, NULL, NULL, NULL), 0);
    assert_true(r.max_working_set == 12 * MB);
    assert_true(r.lower_bound == 19 * MB);
    /* small tensors, and no call that uses a handle's memory (cuBLAS's
     * element-wise calls): the 4 MiB handle must still fit when it is made */
    const uint64_t none[3] = {0, 0, 0};
    t[0].bytes = t[1].bytes = 1 * MB;
    in.lib_bytes = none;
    in.keyed_bytes = 5 * MB;
    assert_int_equal(sn_whatif(&in, &r, NULL, NULL, NULL), 0);
    assert_true(r.max_working_set == 2 * MB);
    assert_true(r.largest_alloc == 4 * MB);
    assert_true(r.lower_bound == 6 * MB);
}

/* A group of steps (one layer pass) whose tensors are never live at the
 * same time: SuperNeurons' bound counts only what is live at each step, so
 * it stays at or below the liveness peak. Before it summed the group's
 * working set (20 MiB) over a liveness peak of 10 MiB. */
static void test_whatif_superneurons_within_liveness(void **state)
{
    (void)state;
    static const sn_wi_access a_acc[] = {{0, SN_ACC_W | SN_ACC_KILL}, {1, SN_ACC_R}};
    static const sn_wi_access b_acc[] = {{2, SN_ACC_W | SN_ACC_KILL}, {3, SN_ACC_R}};
    sn_wi_tensor t[] = {
        {.bytes = 10 * MB, .naccess = 2, .access = a_acc},
        {.bytes = 10 * MB, .naccess = 2, .access = b_acc},
    };
    int group[4] = {0, 0, 0, 0};
    sn_wi_input in = {4, 4, group, 2, t, 3 * MB, NULL, 0, 0};
    sn_wi_result r;
    assert_int_equal(sn_whatif(&in, &r, NULL, NULL, NULL), 0);
    assert_true(r.peak_liveness == 13 * MB);
    assert_true(r.peak_superneurons == 13 * MB);
    assert_true(r.lower_bound == 13 * MB);
}

/* A tensor allocated and freed inside the iteration whose first use is a
 * kernel's (read and written, as kernels are described) is live only
 * while it exists, not through the whole iteration. */
static void test_whatif_lifetime_clipped(void **state)
{
    (void)state;
    static const sn_wi_access k_acc[] = {{2, SN_ACC_R | SN_ACC_W}, {3, SN_ACC_R}};
    static const sn_wi_access w_acc[] = {{0, SN_ACC_R}, {5, SN_ACC_R | SN_ACC_W}};
    sn_wi_tensor t[] = {
        {.bytes = 4 * MB, .naccess = 2, .access = k_acc, .bounded = 1, .alloc_step = 1, .free_step = 3},
        {.bytes = 1 * MB, .naccess = 2, .access = w_acc},
    };
    sn_wi_input in = {6, 3, NULL, 2, t, 0, NULL, 0, 0};
    sn_wi_result r;
    uint64_t live[6];
    assert_int_equal(sn_whatif(&in, &r, live, NULL, NULL), 0);
    assert_false(sn_wi_carried(&t[0]));
    assert_true(sn_wi_carried(&t[1]));
    assert_true(live[0] == 1 * MB && live[1] == 1 * MB && live[2] == 5 * MB && live[3] == 5 * MB &&
                live[4] == 1 * MB && live[5] == 1 * MB);
    int first, last;
    sn_wi_live_span(&t[0], 6, &first, &last);
    assert_true(first == 2 && last == 3);
    /* a carried tensor freed at step 3 is live from the start to its free */
    t[1].bounded = 1;
    t[1].alloc_step = 0;
    t[1].free_step = 3;
    sn_wi_live_span(&t[1], 6, &first, &last);
    assert_true(first == 0 && last == 3);
}

static void test_whatif_reused_buffer(void **state)
{
    (void)state;
    /* a workspace used at steps 1 and 4 is live only there; a buffer
     * overwritten at 3 holds two values: 0..2 and 3..5 */
    static const sn_wi_access ws[] = {{1, SN_ACC_R | SN_ACC_W | SN_ACC_SCRATCH},
                                      {4, SN_ACC_R | SN_ACC_W | SN_ACC_SCRATCH}};
    static const sn_wi_access buf[] = {{0, SN_ACC_W | SN_ACC_KILL}, {2, SN_ACC_R},
                                       {3, SN_ACC_W | SN_ACC_KILL}, {5, SN_ACC_R}};
    sn_wi_tensor t[] = {{.bytes = 100, .naccess = 2, .access = ws}, {.bytes = 10, .naccess = 4, .access = buf}};
    sn_wi_input in = {6, 3, NULL, 2, t, 5, NULL, 0, 0};
    sn_wi_result r;
    uint64_t live[6];
    assert_int_equal(sn_whatif(&in, &r, live, NULL, NULL), 0);
    assert_true(live[0] == 15 && live[1] == 115 && live[2] == 15 && live[3] == 15 &&
                live[4] == 115 && live[5] == 15);
    assert_false(sn_wi_carried(&t[0]));
    assert_false(sn_wi_carried(&t[1]));
    assert_int_equal(sn_whatif(NULL, &r, NULL, NULL, NULL), -1);
}

/* ---- the model, from a synthetic call log ------------------------------------------ */

typedef struct fake {
    sn_trace t;
    uint32_t x, label, w, y, z, p, dz, dy, dw, ws;
} fake;

/* the batch of the shapes the calls describe */
static int fake_batch = 2;
/* set: cuDNN's calls are on one handle, cuBLAS's on another */
static int fake_handles;
static char fake_cudnn, fake_cublas;

static void call(fake *f, int op, unsigned flags, int nshape, const sn_trace_access *acc, int nacc)
{
    sn_call c;
    sn_call_init(&c, 0, op, 0, NULL);
    if (op == SN_OP_ACT_FWD)
        c.algo = 1; /* CUDNN_ACTIVATION_RELU */
    if (fake_handles && (op == SN_OP_GEAM || op == SN_OP_AXPY))
        c.lib_handle = &fake_cublas;
    else if (fake_handles && flags == SN_TC_STEP && op != SN_OP_MEMSET)
        c.lib_handle = &fake_cudnn;
    c.lib_memory = c.lib_handle && op != SN_OP_AXPY; /* as the shim says of cuBLAS's axpy */
    int dim[4] = {fake_batch, 4, 8, 8};
    for (int i = 0; i < nshape; i++)
        sn_call_shape(&c, 4, dim);
    assert_true(sn_trace_call_add(&f->t, &c, flags, acc, nacc) != -1);
}

#define A(t, m) {(t), (m)}
static void one_iteration(fake *f, int first)
{
    const uint8_t R = SN_ACC_R, W = SN_ACC_W, K = SN_ACC_KILL, S = SN_ACC_SCRATCH;
    sn_trace_access a1[] = {A(f->x, W | K)};
    call(f, SN_OP_MEMCPY_H2D, SN_TC_TRANSFER, 1, a1, 1);
    sn_trace_access a2[] = {A(f->label, W | K)};
    call(f, SN_OP_MEMCPY_H2D, SN_TC_TRANSFER, 1, a2, 1);
    sn_trace_access c1[] = {A(f->x, R), A(f->w, R), A(f->y, W | K), A(f->ws, R | W | S)};
    call(f, SN_OP_CONV_FWD, SN_TC_STEP, 3, c1, 4);
    sn_trace_access c2[] = {A(f->y, R), A(f->z, W | K)};
    call(f, SN_OP_ACT_FWD, SN_TC_STEP, 2, c2, 2);
    sn_trace_access c3[] = {A(f->z, R), A(f->p, W | K)};
    call(f, SN_OP_SOFTMAX_FWD, SN_TC_STEP, 2, c3, 2);
    sn_trace_access t1[] = {A(f->p, R)};
    call(f, SN_OP_MEMCPY_D2H, SN_TC_TRANSFER, 1, t1, 1);
    sn_trace_access c4[] = {A(f->p, R), A(f->label, R), A(f->dz, W | K)};
    call(f, SN_OP_GEAM, SN_TC_STEP, 1, c4, 3);
    sn_trace_access c5[] = {A(f->z, R), A(f->dz, R), A(f->dy, W | K)};
    call(f, SN_OP_ACT_BWD, SN_TC_STEP, 2, c5, 3);
    sn_trace_access c6[] = {A(f->x, R), A(f->dy, R), A(f->dw, W | K), A(f->ws, R | W | S)};
    call(f, SN_OP_CONV_BWD_FILTER, SN_TC_STEP, 3, c6, 4);
    if (first) { /* the first update also clears a buffer: the first iteration differs */
        sn_trace_access m0[] = {A(f->dw, W | K)};
        call(f, SN_OP_MEMSET, SN_TC_STEP, 1, m0, 1);
    }
    sn_trace_access c7[] = {A(f->dw, R), A(f->w, R | W)};
    call(f, SN_OP_AXPY, SN_TC_STEP, 1, c7, 2);
}

/* The libraries' memory of a known handle counts in the working sets of
 * the calls on that handle only (manage mode keeps it resident for those):
 * the lower bound is the largest call's own tensors and its handle's
 * memory, not every handle's memory beside every call's. */
static void lower_bound_with_handles(int keyed, sn_model *m)
{
    fake f;
    sn_trace_init(&f.t, 0);
    uint32_t dnn = sn_trace_alloc(&f.t, 0x10000000, 1 << 20, 1, SN_OWNER_CUDNN, 0);
    uint32_t blas = sn_trace_alloc(&f.t, 0x20000000, 4 << 20, 1, SN_OWNER_CUBLAS, 0);
    if (keyed) {
        sn_trace_tensor_key(&f.t, dnn, 0x10000000, &fake_cudnn);
        sn_trace_tensor_key(&f.t, blas, 0x20000000, &fake_cublas);
        /* a record that is not (or no longer) at that address is left alone */
        sn_trace_tensor_key(&f.t, dnn, 0x30000000, &fake_cublas);
        assert_ptr_equal(f.t.tensors[dnn].lib_key, &fake_cudnn);
    }
    f.w = sn_trace_alloc(&f.t, 0x1000, 4096, 1, 1, 0);
    f.ws = sn_trace_alloc(&f.t, 0x3000, 1 << 16, 1, 3, 0);
    f.x = sn_trace_alloc(&f.t, 0x100000, 1 << 20, 1, 1, 0);
    f.label = sn_trace_alloc(&f.t, 0x200000, 64, 1, 1, 0);
    f.y = sn_trace_alloc(&f.t, 0x300000, 1 << 20, 1, 1, 0);
    f.z = sn_trace_alloc(&f.t, 0x400000, 1 << 20, 1, 1, 0);
    f.p = sn_trace_alloc(&f.t, 0x500000, 64, 1, 1, 0);
    f.dz = sn_trace_alloc(&f.t, 0x600000, 1 << 20, 1, 1, 0);
    f.dy = sn_trace_alloc(&f.t, 0x700000, 1 << 20, 1, 1, 0);
    f.dw = sn_trace_alloc(&f.t, 0x800000, 4096, 1, 1, 0);
    fake_handles = 1;
    for (int it = 0; it < 3; it++)
        one_iteration(&f, it == 0);
    fake_handles = 0;
    assert_int_equal(sn_model_build(&f.t, m), 0);
    assert_true(m->found);
    sn_trace_destroy(&f.t);
}

static void test_model_handle_memory(void **state)
{
    (void)state;
    sn_model m;
    /* no handle known: the 5 MiB are beside the largest working set (the
     * ReLU's backward: z, dz, dy) */
    lower_bound_with_handles(0, &m);
    assert_true(m.max_working_set == 3 * MB);
    assert_true(m.max_working_set_lib == 0);
    assert_true(m.lower_bound == 8 * MB);
    sn_model_free(&m);
    /* known: the loss gradient's geam (p, label, dz) with cuBLAS's 4 MiB is
     * the largest; the ReLU's backward with cuDNN's 1 MiB is 4 MiB */
    lower_bound_with_handles(1, &m);
    assert_true(m.max_working_set == 4 * MB + 1 * MB + 128);
    assert_true(m.max_working_set_lib == 4 * MB);
    assert_true(m.lower_bound == 5 * MB + 128);
    assert_true(m.lower_bound <= m.peak_live && m.budget >= m.lower_bound);
    sn_model_free(&m);
}

/* A call that cannot use its handle's memory (cuBLAS's axpy) is logged
 * without the handle's key, so the what-if leaves that memory out of its
 * working set; one that may use it carries the key, as a call on a handle
 * does unless its hook says otherwise. */
static void test_trace_call_handle_memory(void **state)
{
    (void)state;
    sn_trace t;
    sn_trace_init(&t, 0);
    sn_call c;
    sn_call_init(&c, 0, SN_OP_AXPY, 0, NULL);
    c.lib_handle = &fake_cublas;
    c.lib_memory = 0;
    int64_t axpy = sn_trace_call_add(&t, &c, SN_TC_STEP, NULL, 0);
    sn_call_init(&c, 0, SN_OP_GEMM, 0, NULL);
    c.lib_handle = &fake_cublas;
    int64_t gemm = sn_trace_call_add(&t, &c, SN_TC_STEP, NULL, 0);
    assert_true(axpy >= 0 && gemm >= 0);
    assert_null(t.calls[axpy].lib_key);
    assert_ptr_equal(t.calls[gemm].lib_key, &fake_cublas);
    sn_trace_destroy(&t);
}

static void test_model_small_network(void **state)
{
    (void)state;
    fake f;
    sn_trace_init(&f.t, 0);
    f.w = sn_trace_alloc(&f.t, 0x1000, 4096, 1, 1, 0);
    f.ws = sn_trace_alloc(&f.t, 0x3000, 1 << 16, 1, 3, 0); /* cuDNN's own */
    f.x = sn_trace_alloc(&f.t, 0x100000, 1 << 20, 1, 1, 0);
    f.label = sn_trace_alloc(&f.t, 0x200000, 64, 1, 1, 0);
    f.y = sn_trace_alloc(&f.t, 0x300000, 1 << 20, 1, 1, 0);
    f.z = sn_trace_alloc(&f.t, 0x400000, 1 << 20, 1, 1, 0);
    f.p = sn_trace_alloc(&f.t, 0x500000, 64, 1, 1, 0);
    f.dz = sn_trace_alloc(&f.t, 0x600000, 1 << 20, 1, 1, 0);
    f.dy = sn_trace_alloc(&f.t, 0x700000, 1 << 20, 1, 1, 0);
    f.dw = sn_trace_alloc(&f.t, 0x800000, 4096, 1, 1, 0);
    for (int it = 0; it < 3; it++)
        one_iteration(&f, it == 0);
    sn_model m;
    assert_int_equal(sn_model_build(&f.t, &m), 0);
    assert_true(m.found);
    assert_int_equal(m.period, 7);
    assert_int_equal(m.iterations, 3);
    assert_true(m.first_differs);
    assert_int_equal(m.fwd_steps, 3);
    assert_int_equal(m.bwd_steps, 3);
    assert_int_equal(m.upd_steps, 1);
    assert_int_equal(m.nlayers, 4);
    assert_string_equal(m.layers[0].type, "data");
    assert_string_equal(m.layers[1].type, "conv");
    assert_string_equal(m.layers[2].type, "relu");
    assert_string_equal(m.layers[3].type, "softmax_loss");
    assert_int_equal(m.fwd_layers, 4);
    assert_int_equal(m.bwd_layers, 3);
    /* softmax_loss reads relu's output and the data layer's labels: a join */
    assert_int_equal(m.joins, 1);
    assert_true(m.layers[3].join);
    assert_int_equal(m.layers[3].nin, 2);
    /* the data layer feeds conv and the loss: two consumers, but of two
     * different tensors, so no fork */
    assert_int_equal(m.forks, 0);
    assert_int_equal(m.layers[0].consumers, 2);
    /* kinds */
    int kinds[SN_ROLE_COUNT] = {0};
    for (int i = 0; i < m.ntensors; i++)
        kinds[m.tensors[i].role]++;
    assert_int_equal(kinds[SN_ROLE_WEIGHT], 1);
    assert_int_equal(kinds[SN_ROLE_WEIGHT_GRAD], 1);
    assert_int_equal(kinds[SN_ROLE_FEATURE], 5);  /* x, label, y, z, p */
    assert_int_equal(kinds[SN_ROLE_GRADIENT], 2); /* dz, dy */
    assert_int_equal(kinds[SN_ROLE_WORKSPACE], 1);
    assert_true(m.lower_bound > 0 && m.lower_bound <= m.peak_live);
    assert_true(m.peak_all <= m.peak_live);
    assert_true(m.budget >= m.lower_bound);

    /* the outputs hold together on this model */
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    const sn_trace *tp = &f.t;
    sn_report_text(out, &tp, &m, 1, "trace");
    fclose(out);
    assert_non_null(strstr(buf, "iteration    period 7 steps; 3 iterations seen (the first differs)"));
    assert_non_null(strstr(buf, "layers       4: data 1, conv 1, relu 1, softmax_loss 1"));
    assert_non_null(strstr(buf, "graph        0 forks, 1 joins"));
    free(buf);
    out = open_memstream(&buf, &len);
    sn_plot_svg(out, &m, NULL);
    fclose(out);
    assert_int_equal(strncmp(buf, "<?xml", 5), 0);
    assert_non_null(strstr(buf, "</svg>"));
    free(buf);
    sn_model_free(&m);
    sn_trace_destroy(&f.t);
}

static void fake_init(fake *f)
{
    sn_trace_init(&f->t, 0);
    f->w = sn_trace_alloc(&f->t, 0x1000, 4096, 1, 1, 0);
    f->ws = sn_trace_alloc(&f->t, 0x3000, 1 << 16, 1, 3, 0);
    f->x = sn_trace_alloc(&f->t, 0x100000, 1 << 20, 1, 1, 0);
    f->label = sn_trace_alloc(&f->t, 0x200000, 64, 1, 1, 0);
    f->y = sn_trace_alloc(&f->t, 0x300000, 1 << 20, 1, 1, 0);
    f->z = sn_trace_alloc(&f->t, 0x400000, 1 << 20, 1, 1, 0);
    f->p = sn_trace_alloc(&f->t, 0x500000, 64, 1, 1, 0);
    f->dz = sn_trace_alloc(&f->t, 0x600000, 1 << 20, 1, 1, 0);
    f->dy = sn_trace_alloc(&f->t, 0x700000, 1 << 20, 1, 1, 0);
    f->dw = sn_trace_alloc(&f->t, 0x800000, 4096, 1, 1, 0);
}

/* The check finds each invariant a model could break, and the phases of
 * the steps of every recorded iteration are known, not only of the one
 * the tables come from. */
static void test_model_check_and_phases(void **state)
{
    (void)state;
    fake f;
    fake_init(&f);
    for (int it = 0; it < 4; it++)
        one_iteration(&f, it == 0);
    sn_model m;
    assert_int_equal(sn_model_build(&f.t, &m), 0);
    assert_true(m.found);
    assert_int_equal(m.check, SN_CHECK_OK);
    assert_int_equal(sn_model_check(&m), SN_CHECK_OK);
    assert_string_equal(sn_model_check_name(SN_CHECK_OK), "all invariants hold");
    /* steps of the log: the first iteration has one more (a memset) */
    size_t seen[3] = {0, 0, 0};
    for (size_t k = 0; k < 4 * 7 + 1; k++) {
        int ph = sn_model_phase_of_step(&m, k);
        if (ph >= 0)
            seen[ph]++;
    }
    assert_true(seen[SN_PHASE_FORWARD] >= 3 * 3 && seen[SN_PHASE_BACKWARD] >= 3 * 3 &&
                seen[SN_PHASE_UPDATE] >= 3);
    assert_int_equal(sn_model_phase_of_step(&m, 1000), -1);
    /* each invariant, broken on a copy */
    sn_model b = m;
    b.peak_live = b.peak_asis_iter + 1;
    assert_int_equal(sn_model_check(&b), SN_CHECK_LIVENESS_ABOVE_ASIS);
    b = m;
    b.peak_all = b.peak_live + 1;
    assert_int_equal(sn_model_check(&b), SN_CHECK_WHATIF_ABOVE_LIVENESS);
    b = m;
    b.peak_superneurons = b.peak_live + 1;
    assert_int_equal(sn_model_check(&b), SN_CHECK_WHATIF_ABOVE_LIVENESS);
    b = m;
    b.lower_bound = b.peak_all + 1;
    assert_int_equal(sn_model_check(&b), SN_CHECK_BOUND_ABOVE_WHATIF);
    b = m;
    b.budget = b.peak_asis + 1;
    assert_int_equal(sn_model_check(&b), SN_CHECK_BUDGET);
    b = m;
    b.fwd_steps++;
    assert_int_equal(sn_model_check(&b), SN_CHECK_PHASES);
    sn_model_tensor *saved = m.tensors;
    sn_model_tensor bad[1] = {saved[0]};
    bad[0].live_first = 0;
    bad[0].live_last = 3;
    bad[0].free_step = 2;
    b = m;
    b.tensors = bad;
    b.ntensors = 1;
    assert_int_equal(sn_model_check(&b), SN_CHECK_LIFETIME);
    sn_model_step steps[7];
    memcpy(steps, m.steps, sizeof steps);
    steps[2].mem_live = steps[2].mem_asis + 1;
    b = m;
    b.steps = steps;
    assert_int_equal(sn_model_check(&b), SN_CHECK_STEP_ABOVE_ASIS);
    steps[2] = m.steps[2];
    steps[4].phase = -1;
    assert_int_equal(sn_model_check(&b), SN_CHECK_PHASES);
    sn_model_free(&m);
    sn_trace_destroy(&f.t);
}

/* The profile ends only where the iteration found goes on: steps after it
 * that break it (an evaluation pass every few iterations) mean the
 * iteration is longer than what repeated so far. */
static void test_profile_waits_for_longer_iteration(void **state)
{
    (void)state;
    fake f;
    fake_init(&f);
    for (int it = 0; it < 4; it++)
        one_iteration(&f, 0);
    uint64_t sig[256];
    size_t n = 0;
    for (size_t i = 0; i < f.t.ncalls; i++)
        if (f.t.calls[i].flags & SN_TC_STEP)
            sig[n++] = f.t.calls[i].sig;
    sn_period per;
    sn_period_find(sig, n, 3, 64, &per);
    assert_true(per.found && per.period == 7);
    assert_true(sn_trace_profile_ready(&f.t, sig, n, &per));
    /* the start of the next iteration after it: still ready */
    sig[n] = sig[per.end - 7];
    sig[n + 1] = sig[per.end - 6];
    assert_true(sn_trace_profile_ready(&f.t, sig, n + 2, &per));
    /* something else after it (an evaluation pass): not yet */
    sig[n] = 0x5eed;
    assert_false(sn_trace_profile_ready(&f.t, sig, n + 2, &per));
    sn_trace_destroy(&f.t);
}

static void test_model_no_iteration(void **state)
{
    (void)state;
    sn_trace t;
    sn_trace_init(&t, 0);
    uint32_t a = sn_trace_alloc(&t, 0x1000, 100, 1, 1, 0);
    sn_trace_access acc[] = {{a, SN_ACC_W | SN_ACC_KILL}};
    for (int i = 0; i < 5; i++) {
        sn_call c;
        sn_call_init(&c, 0, SN_OP_MEMSET, 0, NULL);
        c.params = (uint64_t)i;
        sn_trace_call_add(&t, &c, SN_TC_STEP, acc, 1);
    }
    sn_trace_release(&t, a);
    sn_model m;
    assert_int_equal(sn_model_build(&t, &m), 0);
    assert_false(m.found);
    assert_int_equal(m.nsteps_total, 5);
    assert_true(m.peak_asis == 100);
    assert_int_equal(t.live_bytes, 0);
    sn_model_free(&m);
    sn_trace_destroy(&t);
}

/* ---- logs without a complete iteration ------------------------------------------------ */

/* Four identical conv + relu blocks: a forward pass that repeats a block
 * four times and a backward pass that repeats one three times, which the
 * period search finds when the log holds less than two iterations. */
typedef struct deep {
    sn_trace t;
    uint32_t x, w[4], a[4], r[4], dr[4], da[4], dw[4];
} deep;

static void deep_init(deep *d)
{
    sn_trace_init(&d->t, 0);
    uint64_t at = 0x100000;
    d->x = sn_trace_alloc(&d->t, at += 0x10000, 4096, 1, 1, 0);
    for (int b = 0; b < 4; b++) {
        d->w[b] = sn_trace_alloc(&d->t, at += 0x10000, 1024, 1, 1, 0);
        d->a[b] = sn_trace_alloc(&d->t, at += 0x10000, 4096, 1, 1, 0);
        d->r[b] = sn_trace_alloc(&d->t, at += 0x10000, 4096, 1, 1, 0);
        d->dr[b] = sn_trace_alloc(&d->t, at += 0x10000, 4096, 1, 1, 0);
        d->da[b] = sn_trace_alloc(&d->t, at += 0x10000, 4096, 1, 1, 0);
        d->dw[b] = sn_trace_alloc(&d->t, at += 0x10000, 1024, 1, 1, 0);
    }
}

static void deep_call(deep *d, int op, unsigned flags, const sn_trace_access *acc, int nacc)
{
    sn_call c;
    sn_call_init(&c, 0, op, 0, NULL);
    int dim[4] = {2, 4, 8, 8};
    sn_call_shape(&c, 4, dim);
    assert_true(sn_trace_call_add(&d->t, &c, flags, acc, nacc) != -1);
}

static void deep_forward(deep *d)
{
    const uint8_t R = SN_ACC_R, W = SN_ACC_W | SN_ACC_KILL;
    sn_trace_access in[] = {A(d->x, W)};
    deep_call(d, SN_OP_MEMCPY_H2D, SN_TC_TRANSFER, in, 1);
    uint32_t x = d->x;
    for (int b = 0; b < 4; b++) {
        sn_trace_access conv[] = {A(x, R), A(d->w[b], R), A(d->a[b], W)};
        deep_call(d, SN_OP_CONV_FWD, SN_TC_STEP, conv, 3);
        sn_trace_access relu[] = {A(d->a[b], R), A(d->r[b], W)};
        deep_call(d, SN_OP_ACT_FWD, SN_TC_STEP, relu, 2);
        x = d->r[b];
    }
}

static void deep_backward_update(deep *d)
{
    const uint8_t R = SN_ACC_R, W = SN_ACC_W | SN_ACC_KILL;
    sn_trace_access loss[] = {A(d->r[3], R), A(d->dr[3], W)};
    deep_call(d, SN_OP_GEAM, SN_TC_STEP, loss, 2);
    for (int b = 3; b >= 0; b--) {
        sn_trace_access relu[] = {A(d->r[b], R), A(d->dr[b], R), A(d->da[b], W)};
        deep_call(d, SN_OP_ACT_BWD, SN_TC_STEP, relu, 3);
        if (b > 0) {
            sn_trace_access data[] = {A(d->w[b], R), A(d->da[b], R), A(d->dr[b - 1], W)};
            deep_call(d, SN_OP_CONV_BWD_DATA, SN_TC_STEP, data, 3);
        }
        sn_trace_access filt[] = {A(b ? d->r[b - 1] : d->x, R), A(d->da[b], R), A(d->dw[b], W)};
        deep_call(d, SN_OP_CONV_BWD_FILTER, SN_TC_STEP, filt, 3);
    }
    for (int b = 0; b < 4; b++) {
        sn_trace_access upd[] = {A(d->dw[b], R), A(d->w[b], R | SN_ACC_W)};
        deep_call(d, SN_OP_AXPY, SN_TC_STEP, upd, 2);
    }
}

/* The report of a model without an iteration: the allocations, no
 * tables, no budget, and "found": false in JSON. */
static void assert_no_iteration_report(const sn_trace *t, const sn_model *m)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    sn_report_text(out, &t, m, 1, "trace");
    fclose(out);
    assert_non_null(strstr(buf, "no complete iteration seen"));
    assert_non_null(strstr(buf, "allocations  runtime 25 "));
    assert_null(strstr(buf, "SN_BUDGET"));
    assert_null(strstr(buf, "layer table"));
    assert_null(strstr(buf, "what-if"));
    free(buf);
    out = open_memstream(&buf, &len);
    sn_report_json(out, &t, m, 1, "trace");
    fclose(out);
    assert_non_null(strstr(buf, "\"found\":false"));
    assert_non_null(strstr(buf, "\"runtime\":{\"count\":25,"));
    assert_null(strstr(buf, "\"whatif\""));
    assert_null(strstr(buf, "\"budget\""));
    free(buf);
}

static void test_model_one_iteration_is_none(void **state)
{
    (void)state;
    /* a run of one iteration: the backward pass's repeated block must not
     * be taken for the iteration */
    deep d;
    deep_init(&d);
    deep_forward(&d);
    deep_backward_update(&d);
    sn_model m;
    assert_int_equal(sn_model_build(&d.t, &m), 0);
    assert_false(m.found);
    assert_int_equal(m.nlayers, 0);
    assert_true(m.budget == 0);
    assert_int_equal(m.nsteps_total, 8 + 1 + 11 + 4);
    assert_no_iteration_report(&d.t, &m);
    sn_model_free(&m);
    sn_trace_destroy(&d.t);
}

static void test_model_failed_first_iteration_is_none(void **state)
{
    (void)state;
    /* out of memory during the first forward pass: four repeated blocks */
    deep d;
    deep_init(&d);
    deep_forward(&d);
    sn_model m;
    assert_int_equal(sn_model_build(&d.t, &m), 0);
    assert_false(m.found);
    assert_no_iteration_report(&d.t, &m);
    sn_model_free(&m);
    /* one whole iteration and the forward pass of the second: still less
     * than two repetitions of an iteration */
    deep_backward_update(&d);
    deep_forward(&d);
    assert_int_equal(sn_model_build(&d.t, &m), 0);
    assert_false(m.found);
    sn_model_free(&m);
    /* the second completes: now there are two */
    deep_backward_update(&d);
    assert_int_equal(sn_model_build(&d.t, &m), 0);
    assert_true(m.found);
    assert_int_equal(m.period, 8 + 1 + 11 + 4);
    assert_int_equal(m.iterations, 2);
    assert_true(m.budget > 0);
    sn_model_free(&m);
    sn_trace_destroy(&d.t);
}

/* ---- bounds on the log ------------------------------------------------------------------ */

/* One iteration of the small network with the activations allocated at
 * its start and freed at its end, as per-iteration allocators do. */
static void dynamic_iteration(fake *f, int first, uint64_t *at)
{
    uint32_t *act[] = {&f->y, &f->z, &f->p, &f->dz, &f->dy};
    for (int i = 0; i < 5; i++)
        *act[i] = sn_trace_alloc(&f->t, *at += 0x100000, 1 << 20, 1, 1, 0xabc);
    one_iteration(f, first);
    for (int i = 0; i < 5; i++)
        sn_trace_release(&f->t, *act[i]);
}

/* A loop with the smallest training iteration: activation forward, the
 * loss read by the host, activation backward and one more step (an
 * update) — three steps. The profile looks at the log after 64 steps,
 * which end one step into an iteration; the iteration must still be
 * placed (it was not, when the window the passes are looked for in held
 * three periods only). */
static void test_model_places_a_three_step_iteration(void **state)
{
    (void)state;
    fake f;
    sn_trace_init(&f.t, 0);
    uint32_t a = sn_trace_alloc(&f.t, 0x10000, 1 << 16, 1, 1, 0);
    uint32_t b = sn_trace_alloc(&f.t, 0x20000, 1 << 16, 1, 1, 0);
    uint32_t c = sn_trace_alloc(&f.t, 0x30000, 1 << 16, 1, 1, 0);
    uint32_t ws = sn_trace_alloc(&f.t, 0x40000, 1 << 16, 1, 1, 0);
    const uint8_t R = SN_ACC_R, W = SN_ACC_W, K = SN_ACC_KILL;
    sn_trace_access fwd[] = {A(a, R), A(b, W | K)};
    sn_trace_access loss[] = {A(b, R)};
    sn_trace_access bwd[] = {A(b, R), A(c, R), A(a, R), A(ws, W | K)};
    sn_trace_access upd[] = {A(a, R), A(b, R), A(c, W | K)};
    for (int it = 0; it < 21; it++) {
        call(&f, SN_OP_ACT_FWD, SN_TC_STEP, 2, fwd, 2);
        call(&f, SN_OP_MEMCPY_D2H, SN_TC_TRANSFER, 1, loss, 1);
        call(&f, SN_OP_ACT_BWD, SN_TC_STEP, 2, bwd, 4);
        call(&f, SN_OP_GEMM, SN_TC_STEP, 0, upd, 3);
    }
    call(&f, SN_OP_ACT_FWD, SN_TC_STEP, 2, fwd, 2);
    assert_int_equal(sn_model_follow(&f.t), 0);
    assert_int_equal(f.t.state, SN_TRACE_FOLLOWING);
    assert_int_equal(f.t.cursor.period, 3);
    /* followed from here: the iteration goes on where the log ended */
    call(&f, SN_OP_MEMCPY_D2H, SN_TC_TRANSFER, 1, loss, 1);
    call(&f, SN_OP_ACT_BWD, SN_TC_STEP, 2, bwd, 4);
    assert_true(f.t.run.position >= 0);
    sn_trace_destroy(&f.t);
}

/* Caffe's data layer copies its batch from one of two prefetch buffers,
 * which a thread of its own fills with a later batch whenever it runs:
 * here, in the middle of the forward pass before the one that reads it.
 * That copy is no touch of the pass it lands in. A model that took it for
 * one found no start for the pass after it: here no iteration at all, and
 * in the trainer's alexnet (Caffe style) one run in ten read an update
 * as part of the backward pass. */
static void test_model_prefetch_lands_in_another_pass(void **state)
{
    (void)state;
    fake f;
    fake_init(&f);
    uint32_t slot[2] = {sn_trace_alloc(&f.t, 0x900000, 1 << 20, 1, 1, 0),
                        sn_trace_alloc(&f.t, 0xa00000, 1 << 20, 1, 1, 0)};
    const uint8_t R = SN_ACC_R, W = SN_ACC_W, K = SN_ACC_KILL, S = SN_ACC_SCRATCH;
    for (int it = 0; it < 3; it++) {
        sn_trace_access d0[] = {A(slot[it % 2], R), A(f.x, W | K)};
        call(&f, SN_OP_MEMCPY_D2D, SN_TC_STEP, 1, d0, 2);
        sn_trace_access a2[] = {A(f.label, W | K)};
        call(&f, SN_OP_MEMCPY_H2D, SN_TC_TRANSFER, 1, a2, 1);
        sn_trace_access c1[] = {A(f.x, R), A(f.w, R), A(f.y, W | K), A(f.ws, R | W | S)};
        call(&f, SN_OP_CONV_FWD, SN_TC_STEP, 3, c1, 4);
        /* the next batch arrives in the other buffer */
        sn_trace_access h[] = {A(slot[(it + 1) % 2], W | K)};
        call(&f, SN_OP_MEMCPY_H2D, SN_TC_TRANSFER, 1, h, 1);
        sn_trace_access c2[] = {A(f.y, R), A(f.z, W | K)};
        call(&f, SN_OP_ACT_FWD, SN_TC_STEP, 2, c2, 2);
        sn_trace_access c3[] = {A(f.z, R), A(f.p, W | K)};
        call(&f, SN_OP_SOFTMAX_FWD, SN_TC_STEP, 2, c3, 2);
        sn_trace_access t1[] = {A(f.p, R)};
        call(&f, SN_OP_MEMCPY_D2H, SN_TC_TRANSFER, 1, t1, 1);
        sn_trace_access c4[] = {A(f.p, R), A(f.label, R), A(f.dz, W | K)};
        call(&f, SN_OP_GEAM, SN_TC_STEP, 1, c4, 3);
        sn_trace_access c5[] = {A(f.z, R), A(f.dz, R), A(f.dy, W | K)};
        call(&f, SN_OP_ACT_BWD, SN_TC_STEP, 2, c5, 3);
        sn_trace_access c6[] = {A(f.x, R), A(f.dy, R), A(f.dw, W | K), A(f.ws, R | W | S)};
        call(&f, SN_OP_CONV_BWD_FILTER, SN_TC_STEP, 3, c6, 4);
        sn_trace_access c7[] = {A(f.dw, R), A(f.w, R | W)};
        call(&f, SN_OP_AXPY, SN_TC_STEP, 1, c7, 2);
    }
    sn_model m;
    assert_int_equal(sn_model_build(&f.t, &m), 0);
    assert_true(m.found);
    assert_int_equal(m.period, 8);
    assert_int_equal(m.fwd_steps, 4); /* the copy from the buffer, conv, relu, softmax */
    assert_int_equal(m.bwd_steps, 3);
    assert_int_equal(m.upd_steps, 1);
    sn_model_free(&m);
    sn_trace_destroy(&f.t);
}

/* Caffe's loss layer's tail: a dot of the softmax's output, the asum of
 * the per-image losses, and a dot of the loss value the host sends back,
 * each result read on the host. */
typedef struct tail_bufs {
    uint32_t r1, r2, r3, lv;
} tail_bufs;

static tail_bufs tail_alloc(fake *f, uint64_t at)
{
    tail_bufs b = {sn_trace_alloc(&f->t, at, 64, 1, 1, 0), sn_trace_alloc(&f->t, at + 0x10000, 64, 1, 1, 0),
                   sn_trace_alloc(&f->t, at + 0x20000, 64, 1, 1, 0), sn_trace_alloc(&f->t, at + 0x30000, 64, 1, 1, 0)};
    return b;
}

static void loss_tail(fake *f, const tail_bufs *b)
{
    const uint8_t R = SN_ACC_R, W = SN_ACC_W, K = SN_ACC_KILL;
    sn_trace_access d1[] = {A(f->p, R), A(b->r1, W | K)};
    call(f, SN_OP_DOT, SN_TC_STEP, 1, d1, 2);
    sn_trace_access t1[] = {A(b->r1, R)};
    call(f, SN_OP_MEMCPY_D2H, SN_TC_TRANSFER, 1, t1, 1);
    sn_trace_access d2[] = {A(f->p, R), A(b->r2, W | K)};
    call(f, SN_OP_ASUM, SN_TC_STEP, 1, d2, 2);
    sn_trace_access t2[] = {A(b->r2, R)};
    call(f, SN_OP_MEMCPY_D2H, SN_TC_TRANSFER, 1, t2, 1);
    sn_trace_access h3[] = {A(b->lv, W | K)};
    call(f, SN_OP_MEMCPY_H2D, SN_TC_TRANSFER, 1, h3, 1);
    sn_trace_access d3[] = {A(b->lv, R), A(b->r3, W | K)};
    call(f, SN_OP_DOT, SN_TC_STEP, 1, d3, 2);
    sn_trace_access t3[] = {A(b->r3, R)};
    call(f, SN_OP_MEMCPY_D2H, SN_TC_TRANSFER, 1, t3, 1);
}

/* Caffe's Data layer copies nothing on the training thread: the first
 * convolution reads the buffer its prefetch thread filled iterations
 * earlier, and the thread refills the other buffer meanwhile. The batch
 * is still the data layer's output (a layer of no step of its own), the
 * convolution's filter gradient, which reads it again, is the backward
 * pass's (not an update making the batch a "weight"). */
static void test_model_batch_read_in_place(void **state)
{
    (void)state;
    fake f;
    fake_init(&f);
    uint32_t slot[2] = {sn_trace_alloc(&f.t, 0x900000, 1 << 20, 1, 1, 0),
                        sn_trace_alloc(&f.t, 0xa00000, 1 << 20, 1, 1, 0)};
    tail_bufs lt = tail_alloc(&f, 0xb00000);
    const uint8_t R = SN_ACC_R, W = SN_ACC_W, K = SN_ACC_KILL, S = SN_ACC_SCRATCH;
    sn_trace_access h0[] = {A(slot[0], W | K)};
    call(&f, SN_OP_MEMCPY_H2D, SN_TC_TRANSFER, 1, h0, 1);
    for (int it = 0; it < 6; it++) {
        uint32_t x = slot[it % 2];
        sn_trace_access c1[] = {A(x, R), A(f.w, R), A(f.y, W | K), A(f.ws, R | W | S)};
        call(&f, SN_OP_CONV_FWD, SN_TC_STEP, 3, c1, 4);
        /* the next batch arrives in the other buffer */
        sn_trace_access h[] = {A(slot[(it + 1) % 2], W | K)};
        call(&f, SN_OP_MEMCPY_H2D, SN_TC_TRANSFER, 1, h, 1);
        sn_trace_access c2[] = {A(f.y, R), A(f.z, W | K)};
        call(&f, SN_OP_ACT_FWD, SN_TC_STEP, 2, c2, 2);
        sn_trace_access c3[] = {A(f.z, R), A(f.p, W | K)};
        call(&f, SN_OP_SOFTMAX_FWD, SN_TC_STEP, 2, c3, 2);
        loss_tail(&f, &lt);
        sn_trace_access c4[] = {A(f.p, R), A(f.dz, W | K)};
        call(&f, SN_OP_GEAM, SN_TC_STEP, 1, c4, 2);
        sn_trace_access c5[] = {A(f.z, R), A(f.dz, R), A(f.dy, W | K)};
        call(&f, SN_OP_ACT_BWD, SN_TC_STEP, 2, c5, 3);
        sn_trace_access c6[] = {A(x, R), A(f.dy, R), A(f.dw, W | K), A(f.ws, R | W | S)};
        call(&f, SN_OP_CONV_BWD_FILTER, SN_TC_STEP, 3, c6, 4);
        sn_trace_access c7[] = {A(f.dw, R), A(f.w, R | W)};
        call(&f, SN_OP_AXPY, SN_TC_STEP, 1, c7, 2);
    }
    sn_model m;
    assert_int_equal(sn_model_build(&f.t, &m), 0);
    assert_true(m.found);
    assert_int_equal(m.period, 10);
    assert_int_equal(m.fwd_steps, 6); /* conv, relu, softmax, the loss's tail */
    assert_int_equal(m.bwd_steps, 3); /* the loss's gradient, ReLU's, the filter's */
    assert_int_equal(m.upd_steps, 1);
    assert_int_equal(m.nlayers, 4); /* data, conv, relu, softmax with the loss's tail */
    assert_string_equal(m.layers[0].type, "data");
    assert_int_equal(m.layers[0].nfwd, 0);
    assert_string_equal(m.layers[1].type, "conv");
    assert_int_equal(m.layers[1].nin, 1);
    assert_int_equal(m.edge_layer[m.layers[1].in_begin], 0);
    sn_model_free(&m);
    sn_trace_destroy(&f.t);
}

/* Caffe's loss layer reads three results on the host (a dot, an asum,
 * then a dot of the loss value sent back), and a layer's backward pass
 * reads a constant the host set once, before the log's window (the Scale
 * layer's vector of ones): the pass after such a tail begins with the
 * next batch, not at that first read of the constant, which looks like a
 * batch a prefetch thread sent earlier until a later iteration reads it
 * again without a copy from the host in between. */
static void test_model_constant_read_in_backward(void **state)
{
    (void)state;
    fake f;
    fake_init(&f);
    uint32_t ones = sn_trace_alloc(&f.t, 0x900000, 4096, 1, 1, 0);
    tail_bufs lt = tail_alloc(&f, 0xa00000);
    const uint8_t R = SN_ACC_R, W = SN_ACC_W, K = SN_ACC_KILL, S = SN_ACC_SCRATCH;
    sn_trace_access o[] = {A(ones, W | K)};
    call(&f, SN_OP_MEMCPY_H2D, SN_TC_TRANSFER, 1, o, 1);
    for (int it = 0; it < 6; it++) {
        sn_trace_access a1[] = {A(f.x, W | K)};
        call(&f, SN_OP_MEMCPY_H2D, SN_TC_TRANSFER, 1, a1, 1);
        sn_trace_access a2[] = {A(f.label, W | K)};
        call(&f, SN_OP_MEMCPY_H2D, SN_TC_TRANSFER, 1, a2, 1);
        sn_trace_access c1[] = {A(f.x, R), A(f.w, R), A(f.y, W | K), A(f.ws, R | W | S)};
        call(&f, SN_OP_CONV_FWD, SN_TC_STEP, 3, c1, 4);
        sn_trace_access c2[] = {A(f.y, R), A(f.z, W | K)};
        call(&f, SN_OP_ACT_FWD, SN_TC_STEP, 2, c2, 2);
        sn_trace_access c3[] = {A(f.z, R), A(f.p, W | K)};
        call(&f, SN_OP_SOFTMAX_FWD, SN_TC_STEP, 2, c3, 2);
        loss_tail(&f, &lt);
        /* backward: the gradient of the loss, then a step reading the constant */
        sn_trace_access c4[] = {A(f.p, R), A(f.label, R), A(f.dz, W | K)};
        call(&f, SN_OP_GEAM, SN_TC_STEP, 1, c4, 3);
        sn_trace_access c5[] = {A(f.z, R), A(f.dz, R), A(ones, R), A(f.dy, W | K)};
        call(&f, SN_OP_GEMV, SN_TC_STEP, 1, c5, 4);
        sn_trace_access c6[] = {A(f.x, R), A(f.dy, R), A(f.dw, W | K), A(f.ws, R | W | S)};
        call(&f, SN_OP_CONV_BWD_FILTER, SN_TC_STEP, 3, c6, 4);
        sn_trace_access c7[] = {A(f.dw, R), A(f.w, R | W)};
        call(&f, SN_OP_AXPY, SN_TC_STEP, 1, c7, 2);
    }
    sn_model m;
    assert_int_equal(sn_model_build(&f.t, &m), 0);
    assert_true(m.found);
    assert_int_equal(m.period, 10);
    /* conv, relu, softmax and the three steps of the loss's tail */
    assert_int_equal(m.fwd_steps, 6);
    assert_int_equal(m.bwd_steps, 3);
    assert_int_equal(m.upd_steps, 1);
    assert_int_equal(f.t.calls[m.steps[0].call].op, SN_OP_CONV_FWD);
    sn_model_free(&m);
    sn_trace_destroy(&f.t);
}

static void test_trace_stops_growing_after_profile(void **state)
{
    (void)state;
    fake f;
    sn_trace_init(&f.t, 0);
    f.w = sn_trace_alloc(&f.t, 0x1000, 4096, 1, 1, 0);
    f.ws = sn_trace_alloc(&f.t, 0x3000, 1 << 16, 1, 3, 0);
    f.x = sn_trace_alloc(&f.t, 0x10000, 1 << 20, 1, 1, 0);
    f.label = sn_trace_alloc(&f.t, 0x20000, 64, 1, 1, 0);
    f.dw = sn_trace_alloc(&f.t, 0x30000, 4096, 1, 1, 0);
    uint64_t persistent = f.t.live_bytes, at = 0x1000000;
    for (int it = 0; it < 3; it++)
        dynamic_iteration(&f, it == 0, &at);
    sn_model before;
    assert_int_equal(sn_model_build(&f.t, &before), 0);
    assert_true(before.found && before.iterations == 3);

    /* the profile is complete */
    assert_int_equal(sn_model_follow(&f.t), 0);
    assert_int_equal(f.t.state, SN_TRACE_FOLLOWING);
    size_t ncalls = f.t.ncalls, nacc = f.t.nacc, nshapes = f.t.nshapes, logged = sn_trace_log_bytes(&f.t);
    dynamic_iteration(&f, 0, &at);
    size_t ntensors = f.t.ntensors;
    for (int it = 0; it < 200; it++)
        dynamic_iteration(&f, 0, &at);
    assert_int_equal(f.t.ncalls, ncalls);
    assert_int_equal(f.t.nacc, nacc);
    assert_int_equal(f.t.nshapes, nshapes);
    assert_int_equal(f.t.ntensors, ntensors);
    assert_int_equal(sn_trace_log_bytes(&f.t), logged);
    assert_true(f.t.live_bytes == persistent);
    assert_true(f.t.run.iterations == 204 && f.t.run.off_sequence == 0);
    assert_true(f.t.run.calls == ncalls + 201 * 10);
    assert_true(f.t.run.alloc_count[1] == 4 + 204 * 5);

    /* a step off the sequence, then the run goes on */
    sn_call c;
    sn_call_init(&c, 0, SN_OP_MEMSET, 0, NULL);
    c.params = 12345;
    assert_true(sn_trace_call_add(&f.t, &c, SN_TC_STEP, NULL, 0) == SN_TRACE_UNRECORDED);
    dynamic_iteration(&f, 0, &at);
    assert_true(f.t.run.off_sequence == 1 && f.t.run.iterations == 205);
    /* a step that failed is not a step */
    int64_t ix = sn_trace_call_add(&f.t, &c, SN_TC_STEP, NULL, 0);
    uint64_t steps = f.t.run.steps;
    sn_trace_call_failed(&f.t, ix, SN_TC_STEP);
    assert_true(f.t.run.steps == steps - 1 && f.t.run.failed == 1);

    /* the tables are those of the profile; the totals cover the run */
    sn_model m;
    assert_int_equal(sn_model_build(&f.t, &m), 0);
    assert_true(m.found);
    assert_int_equal(m.period, before.period);
    assert_int_equal(m.nlayers, before.nlayers);
    assert_int_equal(m.ntensors, before.ntensors);
    assert_true(m.budget == before.budget && m.peak_live == before.peak_live);
    assert_int_equal(m.iterations, 205);
    assert_int_equal(m.iterations_recorded, 3);
    assert_true(m.ncalls == f.t.run.calls && m.off_sequence == 2);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    const sn_trace *tp = &f.t;
    sn_report_text(out, &tp, &m, 1, "trace");
    fclose(out);
    assert_non_null(strstr(buf, "iteration    period 7 steps; 205 iterations seen (the first differs)"));
    assert_non_null(strstr(buf, "tables       from iterations 1-3 of 205 (profiled; the rest followed, "
                                "2 steps off the sequence)"));
    free(buf);
    sn_model_free(&m);
    sn_model_free(&before);
    sn_trace_destroy(&f.t);
}

/* Learning anew: a departure shorter than an iteration is only off the
 * sequence; one of two iterations' worth of steps (relearn_iters 2) makes
 * the trace record again. If the learned iteration comes back first, the
 * new recording is dropped and the log is as it was; else the new
 * iteration is learned from the new part of the log and followed. */
static void test_trace_relearns_after_a_batch_change(void **state)
{
    (void)state;
    fake f;
    sn_trace_init(&f.t, 0);
    f.w = sn_trace_alloc(&f.t, 0x1000, 4096, 1, 1, 0);
    f.ws = sn_trace_alloc(&f.t, 0x3000, 1 << 16, 1, 3, 0);
    f.x = sn_trace_alloc(&f.t, 0x10000, 1 << 20, 1, 1, 0);
    f.label = sn_trace_alloc(&f.t, 0x20000, 64, 1, 1, 0);
    f.dw = sn_trace_alloc(&f.t, 0x30000, 4096, 1, 1, 0);
    uint64_t at = 0x1000000;
    fake_batch = 2;
    for (int it = 0; it < 3; it++)
        dynamic_iteration(&f, it == 0, &at);
    assert_int_equal(sn_model_follow(&f.t), 0);
    f.t.relearn_iters = 2;
    size_t ncalls = f.t.ncalls, nacc = f.t.nacc, nshapes = f.t.nshapes, records = f.t.recorded_tensors;
    dynamic_iteration(&f, 0, &at);
    assert_true(f.t.run.iterations == 4 && f.t.run.off_sequence == 0);

    /* one iteration at another batch, then back: off the sequence only */
    fake_batch = 3;
    dynamic_iteration(&f, 0, &at);
    fake_batch = 2;
    dynamic_iteration(&f, 0, &at);
    assert_true(f.t.run.iterations == 5 && f.t.run.off_sequence == 7);
    assert_int_equal(f.t.state, SN_TRACE_FOLLOWING);
    assert_true(f.t.relearn_begun == 0 && f.t.events == 0 && f.t.run.position >= 0);

    /* two iterations' worth of steps at another batch: recording again */
    fake_batch = 3;
    dynamic_iteration(&f, 0, &at);
    dynamic_iteration(&f, 0, &at);
    assert_int_equal(f.t.state, SN_TRACE_RECORDING);
    assert_true(f.t.relearning && f.t.relearn_begun == 1 && (f.t.events & SN_TRACE_EV_RELEARN));
    assert_int_equal(f.t.log_begin, ncalls);
    f.t.events = 0;
    dynamic_iteration(&f, 0, &at);
    assert_true(f.t.ncalls > ncalls && f.t.recorded_tensors > records && f.t.run.position == -1);

    /* the learned iteration comes back first: the log as it was */
    fake_batch = 2;
    dynamic_iteration(&f, 0, &at);
    assert_int_equal(f.t.state, SN_TRACE_FOLLOWING);
    assert_true(!f.t.relearning && (f.t.events & SN_TRACE_EV_RETURNED));
    assert_true(f.t.ncalls == ncalls && f.t.nacc == nacc && f.t.nshapes == nshapes && f.t.log_begin == 0);
    assert_int_equal(f.t.recorded_tensors, records);
    assert_true(f.t.relearn_begun == 1 && f.t.relearned == 0 && f.t.run.iterations == 6);
    f.t.events = 0;
    dynamic_iteration(&f, 0, &at);
    assert_true(f.t.run.iterations == 7 && f.t.run.position >= 0);
    sn_model m;
    assert_int_equal(sn_model_build(&f.t, &m), 0);
    assert_true(m.found && m.period == 7 && m.steps[0].call < ncalls);
    sn_model_free(&m);

    /* the batch changes for good: the new iteration is learned from the
     * new part of the log */
    fake_batch = 3;
    for (int it = 0; it < 6; it++)
        dynamic_iteration(&f, 0, &at);
    assert_true(f.t.relearning && f.t.relearn_begun == 2);
    size_t begin = f.t.log_begin;
    assert_true(begin == ncalls);
    assert_int_equal(sn_model_follow(&f.t), 0);
    assert_true(f.t.state == SN_TRACE_FOLLOWING && !f.t.relearning && f.t.relearned == 1);
    assert_int_equal(sn_model_build(&f.t, &m), 0);
    assert_true(m.found && m.period == 7);
    for (size_t k = 0; k < m.period; k++)
        assert_true(m.steps[k].call >= begin);
    const sn_trace_call *e = &f.t.calls[m.steps[0].call];
    assert_int_equal(f.t.shapes[e->shape_begin].dim[0], 3);
    sn_model_free(&m);
    /* and followed */
    uint64_t iters = f.t.run.iterations, off = f.t.run.off_sequence;
    dynamic_iteration(&f, 0, &at);
    assert_true(f.t.run.iterations == iters + 1 && f.t.run.off_sequence == off && f.t.run.position >= 0);
    fake_batch = 2;
    sn_trace_destroy(&f.t);
}

static void test_trace_cap_without_iteration(void **state)
{
    (void)state;
    /* a program that never repeats: recording stops at the cap, counting
     * goes on, and allocation records are recycled from there */
    sn_trace t;
    sn_trace_init(&t, 0);
    t.max_bytes = 64 << 10;
    uint32_t a = sn_trace_alloc(&t, 0x1000, 100, 1, 1, 0);
    sn_trace_access acc[] = {{a, SN_ACC_W | SN_ACC_KILL}};
    size_t recorded = 0;
    for (int i = 0; i < 20000; i++) {
        uint32_t b = sn_trace_alloc(&t, 0x100000 + (uint64_t)i * 512, 512, 1, 1, 0);
        sn_call c;
        sn_call_init(&c, 0, SN_OP_MEMSET, 0, NULL);
        c.params = (uint64_t)i;
        int64_t ix = sn_trace_call_add(&t, &c, SN_TC_STEP, acc, 1);
        recorded += ix >= 0;
        sn_trace_release(&t, b);
    }
    assert_int_equal(t.state, SN_TRACE_FULL);
    assert_true(sn_trace_log_bytes(&t) <= t.max_bytes);
    assert_int_equal(t.ncalls, recorded);
    assert_true(recorded > 100 && recorded < 20000);
    assert_true(t.ntensors <= t.recorded_tensors + 1);
    assert_true(t.run.calls == 20000 && t.run.steps == 20000 && t.run.alloc_count[1] == 20001);
    assert_true(t.live_bytes == 100 && t.peak_bytes == 612);
    sn_model m;
    assert_int_equal(sn_model_build(&t, &m), 0);
    assert_false(m.found);
    assert_int_equal(m.nsteps_total, 20000);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    const sn_trace *tp = &t;
    sn_report_text(out, &tp, &m, 1, "trace");
    fclose(out);
    char want[128];
    snprintf(want, sizeof want, "no complete iteration seen in the first %zu calls (the call log filled up)",
             recorded);
    assert_non_null(strstr(buf, want));
    free(buf);
    sn_model_free(&m);
    sn_trace_destroy(&t);
}

/* ---- the model's passes on their own ---------------------------------------------- */

/* A model of n layers and nt tensors, zeroed, for a pass to fill in. */
static void small_model(sn_model *m, int nlayers, int ntensors)
{
    memset(m, 0, sizeof *m);
    m->layers = calloc((size_t)nlayers, sizeof *m->layers);
    m->tensors = calloc((size_t)ntensors, sizeof *m->tensors);
    assert_non_null(m->layers);
    assert_non_null(m->tensors);
    m->nlayers = nlayers;
    m->ntensors = ntensors;
}

static void test_pass_link_layers(void **state)
{
    (void)state;
    /* 0 -> 1 -> 2 -> 3, and 1 -> 3 through two tensors: 11, which layer 2
     * reads too (a fork), and 13 */
    const sn_model_edge e[] = {{0, 1, 10}, {1, 2, 11}, {1, 3, 11}, {2, 3, 12}, {1, 3, 13}};
    int map[14];
    for (int i = 0; i < 14; i++)
        map[i] = i >= 10 ? i - 10 : -1;
    sn_model m;
    small_model(&m, 4, 4);
    assert_int_equal(sn_model_link_layers(&m, e, 5, map), 0);
    /* inputs: distinct producers, layer by layer */
    assert_int_equal(m.nedges, 4);
    const int want_in[] = {0, 1, 1, 2};
    for (int i = 0; i < 4; i++)
        assert_int_equal(m.edge_layer[i], want_in[i]);
    const int in_begin[] = {0, 0, 1, 2}, nin[] = {0, 1, 1, 2};
    for (int l = 0; l < 4; l++) {
        assert_int_equal(m.layers[l].in_begin, in_begin[l]);
        assert_int_equal(m.layers[l].nin, nin[l]);
        assert_int_equal(m.layers[l].join, l == 3);
        assert_int_equal(m.layers[l].fork, l == 1);
    }
    assert_int_equal(m.joins, 1);
    assert_int_equal(m.forks, 1);
    /* outputs read by others, and the distinct layers reading them */
    const int nout[] = {1, 2, 1, 0}, consumers[] = {1, 2, 1, 0};
    for (int l = 0; l < 4; l++) {
        assert_int_equal(m.layers[l].nout, nout[l]);
        assert_int_equal(m.layers[l].consumers, consumers[l]);
    }
    const int readers[] = {1, 2, 1, 1};
    for (int i = 0; i < 4; i++)
        assert_int_equal(m.tensors[i].consumers, readers[i]);
    sn_model_free(&m);
}

/* Steps 0..10 of a log whose periodic part is [1, 11), the iteration (3
 * steps) starting at 4: each model step averages its timed repeats at 1,
 * 4, 7 / 2, 5, 8 / 3, 6, 9 and nothing outside. */
static void step_times(sn_model *m, int ref)
{
    static sn_trace_call calls[11];
    static const double ms[11] = {50, 1, 9, 9, 2, 5, 9, 6, 9, 9, 100};
    static const int timed[11] = {1, 1, 0, 0, 1, 1, 0, 1, 0, 0, 1};
    uint64_t step_call[11];
    for (int i = 0; i < 11; i++) {
        memset(&calls[i], 0, sizeof calls[i]);
        calls[i].flags = timed[i] ? SN_TC_TIMED : 0;
        calls[i].dur_ms = ms[i];
        step_call[i] = (uint64_t)i;
    }
    sn_trace t;
    memset(&t, 0, sizeof t);
    t.calls = calls;
    t.ncalls = 11;
    small_model(m, 1, 1);
    m->period = 3;
    m->first_index = 4;
    m->periodic_begin = 1;
    m->periodic_end = 11;
    m->steps = calloc(3, sizeof *m->steps);
    assert_non_null(m->steps);
    const int phase[] = {SN_PHASE_FORWARD, SN_PHASE_BACKWARD, SN_PHASE_UPDATE};
    for (int s = 0; s < 3; s++)
        m->steps[s].phase = phase[s];
    const int layer_of[] = {0, 0, -1};
    sn_model_step_times(m, &t, step_call, layer_of, ref);
}

static void test_pass_step_times(void **state)
{
    (void)state;
    sn_model m;
    step_times(&m, 0);
    assert_true(m.timed);
    assert_float_equal(m.steps[0].ms, 3.0, 1e-12); /* (1 + 2 + 6) / 3 */
    assert_float_equal(m.steps[1].ms, 5.0, 1e-12); /* only 5 was timed */
    assert_float_equal(m.steps[2].ms, -1.0, 0);    /* never timed */
    assert_float_equal(m.iter_ms, 8.0, 1e-12);
    assert_float_equal(m.layers[0].fwd_ms, 3.0, 1e-12);
    assert_float_equal(m.layers[0].bwd_ms, 5.0, 1e-12);
    sn_model_free(&m);
    /* the layers' times are the reference pass's alone */
    step_times(&m, 1);
    assert_float_equal(m.iter_ms, 8.0, 1e-12);
    assert_float_equal(m.layers[0].fwd_ms, 0.0, 0);
    assert_float_equal(m.layers[0].bwd_ms, 0.0, 0);
    sn_model_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_period_with_different_first_iteration),
        cmocka_unit_test(test_period_internal_repetition),
        cmocka_unit_test(test_period_trailing_steps),
        cmocka_unit_test(test_period_none),
        cmocka_unit_test(test_cursor_follows_and_resyncs),
        cmocka_unit_test(test_cursor_repeated_signatures),
        cmocka_unit_test(test_whatif_peaks),
        cmocka_unit_test(test_whatif_reused_buffer),
        cmocka_unit_test(test_whatif_superneurons_within_liveness),
        cmocka_unit_test(test_whatif_handle_memory),
        cmocka_unit_test(test_whatif_lifetime_clipped),
        cmocka_unit_test(test_model_small_network),
        cmocka_unit_test(test_model_handle_memory),
        cmocka_unit_test(test_trace_call_handle_memory),
        cmocka_unit_test(test_model_check_and_phases),
        cmocka_unit_test(test_profile_waits_for_longer_iteration),
        cmocka_unit_test(test_model_no_iteration),
        cmocka_unit_test(test_model_one_iteration_is_none),
        cmocka_unit_test(test_model_failed_first_iteration_is_none),
        cmocka_unit_test(test_model_places_a_three_step_iteration),
        cmocka_unit_test(test_model_prefetch_lands_in_another_pass),
        cmocka_unit_test(test_model_constant_read_in_backward),
        cmocka_unit_test(test_model_batch_read_in_place),
        cmocka_unit_test(test_trace_stops_growing_after_profile),
        cmocka_unit_test(test_trace_cap_without_iteration),
        cmocka_unit_test(test_trace_relearns_after_a_batch_change),
        cmocka_unit_test(test_pass_link_layers),
        cmocka_unit_test(test_pass_step_times),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
