/*
 * test_sn_plan_timeline.c — the timeline (policy/sn_plan_timeline.c) on
 * small models whose steady-state iteration is worked out by hand. Copy
 * bandwidths are 1 GB/s, i.e. 1e6 bytes per ms, so a tensor of N MB takes
 * N ms to copy alone; each test's comment gives the schedule its numbers
 * come from. Covered: no actions, an offload hidden behind compute, late
 * prefetches (with the fixed copy cost and a prefetch waiting for its own
 * tensor's offload), first-in-first-out copies, duplex contention, waits for
 * memory, infeasible plans of every kind, drops, wrapped prefetches,
 * algorithm choice, bounded lifetimes, the start-of-iteration residency,
 * invalid input, the plan bookkeeping, and invariants over random plans.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy/sn_plan.h"
#include "policy/sn_plan_int.h"

#define MB 1000000ull
#define NOLIMIT UINT64_MAX
#define R SN_PLAN_R
#define WK (SN_PLAN_W | SN_PLAN_KILL)
#define SCR (SN_PLAN_R | SN_PLAN_W | SN_PLAN_SCRATCH)
#define PF(t, s, n) {SN_PLAN_PREFETCH, (t), (s), (n)}
#define OFF(t, s) {SN_PLAN_OFFLOAD, (t), (s), 0}
#define DROP(t, s) {SN_PLAN_DROP, (t), (s), 0}
#define NA(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void near(double got, double want)
{
    if (fabs(got - want) > 1e-9)
        fail_msg("got %.12g, want %.12g", got, want);
}

static void near_all(const double *got, const double *want, int n)
{
    for (int i = 0; i < n; i++)
        if (fabs(got[i] - want[i]) > 1e-9)
            fail_msg("[%d]: got %.12g, want %.12g", i, got[i], want[i]);
}

static void mem_all(const uint64_t *got, const uint64_t *want, int n)
{
    for (int i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("[%d]: got %llu, want %llu", i, (unsigned long long)got[i],
                     (unsigned long long)want[i]);
}

/* Steps of the given times, no algorithm choice. */
static void steps(sn_plan_step *st, int n, const double *ms)
{
    for (int i = 0; i < n; i++)
        st[i] = (sn_plan_step){.ms = ms[i], .layer = -1};
}

static sn_plan_tensor T(uint64_t bytes, int naccess, const sn_plan_access *acc)
{
    return (sn_plan_tensor){.bytes = bytes, .role = SN_PLAN_FEATURE, .naccess = naccess,
                            .access = acc};
}

static sn_plan_tensor Tb(uint64_t bytes, int alloc, int freed, int naccess, const sn_plan_access *acc)
{
    sn_plan_tensor t = T(bytes, naccess, acc);
    t.bounded = 1;
    t.alloc_step = alloc;
    t.free_step = freed;
    return t;
}

static sn_plan_model M(int nsteps, const sn_plan_step *st, int nt, const sn_plan_tensor *t)
{
    return (sn_plan_model){.nsteps = nsteps, .step = st, .ntensors = nt, .tensor = t,
                           .h2d_gbps = 1.0, .d2h_gbps = 1.0, .duplex = 2.0};
}

static sn_plan P(uint64_t budget, int na, sn_plan_action *a)
{
    return (sn_plan){.budget = budget, .nactions = na, .actions = a};
}

static sn_plan_timeline sim(const sn_plan_model *m, const sn_plan *p, double *start, uint64_t *mem)
{
    sn_plan_timeline tl;
    assert_int_equal(sn_plan_simulate(m, p, &tl, start, mem), 0);
    return tl;
}

static void feasible(const sn_plan_timeline *tl)
{
    if (!tl->feasible)
        fail_msg("infeasible at step %d, tensor %d: %s", tl->bad_step, tl->bad_tensor,
                 tl->why ? tl->why : "?");
    assert_int_equal(tl->bad_step, -1);
    assert_int_equal(tl->bad_tensor, -1);
    assert_null(tl->why);
}

static void infeasible(const sn_plan_timeline *tl, int step, int tensor, const char *why)
{
    assert_int_equal(tl->feasible, 0);
    assert_int_equal(tl->bad_step, step);
    assert_int_equal(tl->bad_tensor, tensor);
    assert_non_null(tl->why);
    if (why)
        assert_string_equal(tl->why, why);
    near(tl->iter_ms, 0);
    assert_int_equal(tl->peak_bytes, 0);
}

/* Nothing moves: the steps back to back, everything resident with the
 * library's own memory. A budget one byte short fails at the start. */
static void test_no_actions(void **state)
{
    (void)state;
    sn_plan_step st[3];
    steps(st, 3, (double[]){1, 2, 3});
    static const sn_plan_access a[] = {{0, R}}, b[] = {{1, WK}, {2, R}};
    sn_plan_tensor t[] = {T(10 * MB, 1, a), T(20 * MB, 2, b)};
    sn_plan_model m = M(3, st, 2, t);
    m.fixed_bytes = 5 * MB;
    sn_plan p = P(NOLIMIT, 0, NULL);
    double start[3];
    uint64_t mem[3];
    sn_plan_timeline tl = sim(&m, &p, start, mem);
    feasible(&tl);
    near(tl.iter_ms, 6);
    near(tl.compute_ms, 6);
    near(tl.stall_ms, 0);
    assert_int_equal(tl.peak_bytes, 35 * MB);
    assert_int_equal(tl.peak_step, 0);
    assert_int_equal(tl.h2d_bytes, 0);
    assert_int_equal(tl.d2h_bytes, 0);
    near_all(start, (double[]){0, 1, 3}, 3);
    mem_all(mem, (uint64_t[]){35 * MB, 35 * MB, 35 * MB}, 3);

    p.budget = 35 * MB;
    tl = sim(&m, &p, NULL, NULL);
    feasible(&tl);
    p.budget = 35 * MB - 1;
    tl = sim(&m, &p, start, mem);
    infeasible(&tl, 0, -1, NULL);
    near(tl.compute_ms, 6);
    mem_all(mem, (uint64_t[]){0, 0, 0}, 3);
}

/* Four 2 ms steps; A (2 MB) is written at 0 and read at 3. Offloaded after
 * 0 it copies out during step 1 (2..4 ms) and holds its memory until then,
 * so step 1 sees A and B (1 MB, alive in step 1 only); prefetched at 2 it
 * copies in during step 2 (4..6) and step 3 does not wait. */
static void test_offload_hidden(void **state)
{
    (void)state;
    sn_plan_step st[4];
    steps(st, 4, (double[]){2, 2, 2, 2});
    static const sn_plan_access a[] = {{0, WK}, {3, R}}, b[] = {{1, WK}};
    sn_plan_tensor t[] = {T(2 * MB, 2, a), Tb(1 * MB, 1, 1, 1, b)};
    sn_plan_model m = M(4, st, 2, t);
    sn_plan_action act[] = {OFF(0, 0), PF(0, 2, 3)};
    sn_plan p = P(NOLIMIT, NA(act), act);
    double start[4];
    uint64_t mem[4];
    sn_plan_timeline tl = sim(&m, &p, start, mem);
    feasible(&tl);
    near(tl.iter_ms, 8);
    near(tl.compute_ms, 8);
    near(tl.stall_ms, 0);
    assert_int_equal(tl.h2d_bytes, 2 * MB);
    assert_int_equal(tl.d2h_bytes, 2 * MB);
    assert_int_equal(tl.peak_bytes, 3 * MB);
    assert_int_equal(tl.peak_step, 1);
    near_all(start, (double[]){0, 2, 4, 6}, 4);
    mem_all(mem, (uint64_t[]){2 * MB, 3 * MB, 2 * MB, 2 * MB}, 4);
}

/* Remapping costs host time with the device idle. test_offload_hidden's
 * plan with unmap_ms 0.25 and map_ms 0.5: step 0 ends at 2, A's unmap
 * takes the host to 2.25 (its copy out running meanwhile, 2..4); step 1
 * 2.25..4.25; the prefetch at step 2 maps first (4.25..4.75) and then
 * copies 4.75..6.75 while step 2 runs 4.75..6.75; step 3 6.75..8.75: 0.75
 * ms of stall. Dropped after step 0 and written whole at step 3 instead,
 * A pays the unmap after 0 and the map at 3: the same 0.75. */
static void test_remap_cost(void **state)
{
    (void)state;
    sn_plan_step st[4];
    steps(st, 4, (double[]){2, 2, 2, 2});
    static const sn_plan_access a[] = {{0, WK}, {3, R}}, b[] = {{1, WK}};
    sn_plan_tensor t[] = {T(2 * MB, 2, a), Tb(1 * MB, 1, 1, 1, b)};
    sn_plan_model m = M(4, st, 2, t);
    m.unmap_ms = 0.25;
    m.map_ms = 0.5;
    sn_plan_action act[] = {OFF(0, 0), PF(0, 2, 3)};
    sn_plan p = P(NOLIMIT, NA(act), act);
    double start[4];
    sn_plan_timeline tl = sim(&m, &p, start, NULL);
    feasible(&tl);
    near(tl.iter_ms, 8.75);
    near(tl.compute_ms, 8);
    near(tl.stall_ms, 0.75);
    near_all(start, (double[]){0, 2.25, 4.75, 6.75}, 4);

    static const sn_plan_access k[] = {{0, WK}, {1, R}, {3, WK}};
    sn_plan_tensor tk[] = {T(2 * MB, 3, k)};
    m = M(4, st, 1, tk);
    m.unmap_ms = 0.25;
    m.map_ms = 0.5;
    sn_plan_action drop[] = {DROP(0, 1)};
    p = P(NOLIMIT, NA(drop), drop);
    tl = sim(&m, &p, start, NULL);
    feasible(&tl);
    near(tl.iter_ms, 8.75);
    near_all(start, (double[]){0, 2, 4.25, 6.75}, 4);
    /* nothing moved, nothing paid */
    p = P(NOLIMIT, 0, NULL);
    tl = sim(&m, &p, NULL, NULL);
    near(tl.iter_ms, 8);
}

/* remap_drains (a VMM arena). Four 2 ms steps; C (4 MB) is written whole
 * at 0 and offloaded after it (copy 2..6), A (2 MB) written at 0, dropped
 * after it and written whole again at 2. Without sync steps nothing waits
 * for the copies in flight: the driver's unmapping and mapping do not, and
 * the arena waits for a planned leave's own copy only when it needs the
 * memory (here it never does): A is unmapped at step 1, mapped afresh at
 * step 2, C unmapped at step 3 once its copy is done, 8 ms as without
 * remap_drains (12 when every remapping waited for the device, as the
 * arena's fences and drains once made it). Gathered at step 0 alone, A is
 * never unmapped (its fresh write at 2 finds it still mapped) and C is
 * unmapped at the next step 0, its copy long done: 8 ms again, the same
 * 6 MB at the peak. Gathered at step 1 instead, that sync step waits for
 * every copy in flight before it unmaps A and C: C's until 6, so step 1
 * runs 6..8 and the iteration takes 12 ms. */
static void test_remap_drains(void **state)
{
    (void)state;
    sn_plan_step st[4];
    steps(st, 4, (double[]){2, 2, 2, 2});
    static const sn_plan_access c[] = {{0, WK}}, a[] = {{0, WK}, {2, WK}};
    sn_plan_tensor t[] = {T(4 * MB, 1, c), T(2 * MB, 2, a)};
    sn_plan_model m = M(4, st, 2, t);
    sn_plan_action act[] = {OFF(0, 0), DROP(1, 0)};
    sn_plan p = P(NOLIMIT, NA(act), act);
    double start[4];
    sn_plan_timeline tl = sim(&m, &p, start, NULL);
    feasible(&tl);
    near(tl.iter_ms, 8);
    m.remap_drains = 1;
    tl = sim(&m, &p, start, NULL);
    feasible(&tl);
    near(tl.iter_ms, 8);
    near(tl.stall_ms, 0);
    near_all(start, (double[]){0, 2, 4, 6}, 4);
    assert_int_equal(tl.peak_bytes, 6 * MB);
    /* remap_wait_all (what auto searches gathered recipes on): A's
     * unmapping at step 1 waits for C's copy until 6, as every remapping
     * once did: 12 ms */
    m.remap_wait_all = 1;
    tl = sim(&m, &p, start, NULL);
    feasible(&tl);
    near(tl.iter_ms, 12);
    near(tl.stall_ms, 4);
    near_all(start, (double[]){0, 6, 8, 10}, 4);
    m.remap_wait_all = 0;

    uint8_t sync[4] = {1, 0, 0, 0};
    p.sync = sync;
    tl = sim(&m, &p, start, NULL);
    feasible(&tl);
    near(tl.iter_ms, 8);
    near_all(start, (double[]){0, 2, 4, 6}, 4);
    assert_int_equal(tl.peak_bytes, 6 * MB);
    uint8_t late[4] = {0, 1, 0, 0};
    p.sync = late;
    tl = sim(&m, &p, start, NULL);
    feasible(&tl);
    near(tl.iter_ms, 12);
    near(tl.stall_ms, 4);
    near_all(start, (double[]){0, 6, 8, 10}, 4);
    p.sync = sync;
    /* a budget under that peak: A's memory, held until step 0, is missing
     * when C comes back there */
    p.budget = 6 * MB - 1;
    tl = sim(&m, &p, NULL, NULL);
    assert_int_equal(tl.feasible, 0);
    /* without remap_drains the sync steps change nothing */
    m.remap_drains = 0;
    p.budget = NOLIMIT;
    tl = sim(&m, &p, NULL, NULL);
    near(tl.iter_ms, 8);
}

/* free_drains: freeing a tensor the iteration allocates waits for the
 * device, as cudaFree does. test_offload_hidden's A with B (1 MB) alive in
 * step 0 only: after step 0 A's copy out starts (2..4) and B's free waits
 * for it, so step 1 runs 4..6, the prefetch at step 2 copies 6..8 beside
 * it and step 3 runs 8..10: 2 ms of stall (none without the wait). */
static void test_free_drains(void **state)
{
    (void)state;
    sn_plan_step st[4];
    steps(st, 4, (double[]){2, 2, 2, 2});
    static const sn_plan_access a[] = {{0, WK}, {3, R}}, b[] = {{0, WK}};
    sn_plan_tensor t[] = {T(2 * MB, 2, a), Tb(1 * MB, 0, 0, 1, b)};
    sn_plan_model m = M(4, st, 2, t);
    sn_plan_action act[] = {OFF(0, 0), PF(0, 2, 3)};
    sn_plan p = P(NOLIMIT, NA(act), act);
    double start[4];
    sn_plan_timeline tl = sim(&m, &p, start, NULL);
    feasible(&tl);
    near(tl.iter_ms, 8);
    m.free_drains = 1;
    tl = sim(&m, &p, start, NULL);
    feasible(&tl);
    near(tl.iter_ms, 10);
    near(tl.stall_ms, 2);
    near_all(start, (double[]){0, 4, 6, 8}, 4);
}

/* At a gathered plan's sync step the prefetches are all mapped before any
 * of them copies: the step waits for the copies in flight, and a copy
 * started between two mappings would be waited for. Steps of 10, 2 and 10
 * ms; A and B (2 MB each) are read at step 1, offloaded after it and
 * prefetched at step 0 for it, step 0 the sync step. At step 0 both copies
 * are long done: both are unmapped, both mapped, then copied 0..2 and 2..4
 * while step 0 runs 0..10: 22 ms, no stall (mapping B after A's copy had
 * started would have waited until 2: 24). */
static void test_remap_maps_before_copies(void **state)
{
    (void)state;
    sn_plan_step st[3];
    steps(st, 3, (double[]){10, 2, 10});
    static const sn_plan_access a[] = {{1, R}}, b[] = {{1, R}};
    sn_plan_tensor t[] = {T(2 * MB, 1, a), T(2 * MB, 1, b)};
    sn_plan_model m = M(3, st, 2, t);
    m.remap_drains = 1;
    sn_plan_action act[] = {PF(0, 0, 1), PF(1, 0, 1), OFF(0, 1), OFF(1, 1)};
    sn_plan p = P(NOLIMIT, NA(act), act);
    uint8_t sync[3] = {1, 0, 0};
    p.sync = sync;
    double start[3];
    sn_plan_timeline tl = sim(&m, &p, start, NULL);
    feasible(&tl);
    near(tl.iter_ms, 22);
    near(tl.stall_ms, 0);
    near_all(start, (double[]){0, 10, 12}, 3);
    assert_int_equal(tl.h2d_bytes, 4 * MB);
    assert_int_equal(tl.d2h_bytes, 4 * MB);
}

/* The same A with a fixed copy cost of 0.5 ms. The offload after step 0
 * runs 2..4.5 (0.5 fixed, 2 moving). Prefetched at step 3 itself, A copies
 * 6..8.5 and step 3 starts at 8.5: 2.5 ms stall. Prefetched at step 2 (host
 * at 4 ms), it must first wait for its own offload (done at 4.5): it copies
 * 4.5..7, step 3 starts at 7: 1 ms stall. */
static void test_late_prefetch(void **state)
{
    (void)state;
    sn_plan_step st[4];
    steps(st, 4, (double[]){2, 2, 2, 2});
    static const sn_plan_access a[] = {{0, WK}, {3, R}};
    sn_plan_tensor t[] = {T(2 * MB, 2, a)};
    sn_plan_model m = M(4, st, 1, t);
    m.copy_ms = 0.5;
    sn_plan_action late[] = {OFF(0, 0), PF(0, 3, 3)};
    sn_plan p = P(NOLIMIT, NA(late), late);
    double start[4];
    sn_plan_timeline tl = sim(&m, &p, start, NULL);
    feasible(&tl);
    near(tl.iter_ms, 10.5);
    near(tl.compute_ms, 8);
    near(tl.stall_ms, 2.5);
    near_all(start, (double[]){0, 2, 4, 8.5}, 4);
    assert_int_equal(tl.h2d_bytes, 2 * MB);

    sn_plan_action early[] = {OFF(0, 0), PF(0, 2, 3)};
    p = P(NOLIMIT, NA(early), early);
    tl = sim(&m, &p, start, NULL);
    feasible(&tl);
    near(tl.iter_ms, 9);
    near(tl.stall_ms, 1);
    near_all(start, (double[]){0, 2, 4, 7}, 4);
}

/* Copies in one direction run in issue order. Steps 1, 10, 1, 1 ms; A
 * (2 MB) and B (3 MB) are read at 0, B again at 2 and A at 3. Both copy out
 * after step 0 and back at step 2 (host at 11 ms). A first: A 11..13,
 * B 13..16, step 2 at 16, step 3 at 17: 5 ms stall. B first: B 11..14,
 * A 14..16, step 2 at 14, step 3 at 16: 4 ms. */
static void test_fifo(void **state)
{
    (void)state;
    sn_plan_step st[4];
    steps(st, 4, (double[]){1, 10, 1, 1});
    static const sn_plan_access a[] = {{0, R}, {3, R}}, b[] = {{0, R}, {2, R}};
    sn_plan_tensor t[] = {T(2 * MB, 2, a), T(3 * MB, 2, b)};
    sn_plan_model m = M(4, st, 2, t);
    sn_plan_action a_first[] = {OFF(0, 0), OFF(1, 0), PF(0, 2, 3), PF(1, 2, 2)};
    sn_plan p = P(NOLIMIT, NA(a_first), a_first);
    double start[4];
    sn_plan_timeline tl = sim(&m, &p, start, NULL);
    feasible(&tl);
    near(tl.iter_ms, 18);
    near(tl.compute_ms, 13);
    near(tl.stall_ms, 5);
    near_all(start, (double[]){0, 1, 16, 17}, 4);
    assert_int_equal(tl.h2d_bytes, 5 * MB);
    assert_int_equal(tl.d2h_bytes, 5 * MB);
    assert_int_equal(tl.peak_bytes, 5 * MB);
    assert_int_equal(tl.peak_step, 0);

    sn_plan_action b_first[] = {OFF(0, 0), OFF(1, 0), PF(1, 2, 2), PF(0, 2, 3)};
    p = P(NOLIMIT, NA(b_first), b_first);
    tl = sim(&m, &p, start, NULL);
    feasible(&tl);
    near(tl.iter_ms, 17);
    near(tl.stall_ms, 4);
    near_all(start, (double[]){0, 1, 14, 16}, 4);
}

/* Both directions at once. Four 1 ms steps; A (4 MB) read at 0, offloaded
 * after 0 and prefetched at 3 for step 0 of the next iteration; B (2 MB)
 * prefetched at 1 for 2 and offloaded after 2. A's prefetch waits for A's
 * offload. With duplex 1.6 each direction moves 0.8 MB/ms while both move.
 *   warm-up: A out and B in from 1 ms: B done 3.5 (A has 2 MB left, alone:
 *   done 5.5); step 2 3.5..4.5; B out queued behind A; A in waits for A
 *   out; step 3 4.5..5.5. At 5.5 B out and A in start together: B done 8,
 *   A has 2 MB left: done 10.
 *   reported (from 5.5): step 0 waits for A: 10..11; A out and B in from 11:
 *   B done 13.5, A out 15.5; step 2 13.5..14.5; step 3 14.5..15.5.
 * iter 10, stall 6; starts 4.5, 5.5, 8, 9 after 5.5. At step 3 A's old
 * memory (still copying out), B's (copying out) and A's new one: 10 MB. */
static void run_duplex(double duplex, double iter, const double *want_start)
{
    sn_plan_step st[4];
    steps(st, 4, (double[]){1, 1, 1, 1});
    static const sn_plan_access a[] = {{0, R}}, b[] = {{2, R}};
    sn_plan_tensor t[] = {T(4 * MB, 1, a), T(2 * MB, 1, b)};
    sn_plan_model m = M(4, st, 2, t);
    m.duplex = duplex;
    sn_plan_action act[] = {OFF(0, 0), PF(1, 1, 2), OFF(1, 2), PF(0, 3, 0)};
    sn_plan p = P(NOLIMIT, NA(act), act);
    double start[4];
    uint64_t mem[4];
    sn_plan_timeline tl = sim(&m, &p, start, mem);
    feasible(&tl);
    near(tl.iter_ms, iter);
    near(tl.compute_ms, 4);
    near(tl.stall_ms, iter - 4);
    near_all(start, want_start, 4);
    assert_int_equal(tl.h2d_bytes, 6 * MB);
    assert_int_equal(tl.d2h_bytes, 6 * MB);
    assert_int_equal(tl.peak_bytes, 10 * MB);
    assert_int_equal(tl.peak_step, 3);
    mem_all(mem, (uint64_t[]){4 * MB, 6 * MB, 6 * MB, 10 * MB}, 4);
    /* exactly the peak is enough */
    p.budget = 10 * MB;
    tl = sim(&m, &p, NULL, NULL);
    feasible(&tl);
    near(tl.iter_ms, iter);
}

static void test_duplex_contention(void **state)
{
    (void)state;
    run_duplex(1.6, 10, (double[]){4.5, 5.5, 8, 9});
}

/* With duplex 2 the directions do not slow each other: warm-up B in 1..3,
 * A out 1..5, step 2 3..4, step 3 4..5, then B out 5..7 and A in 5..9.
 * Reported from 5: step 0 9..10, B in 10..12, A out 10..14, step 2 12..13,
 * step 3 13..14: iter 9. More than 2 is no faster than 2. */
static void test_duplex_none(void **state)
{
    (void)state;
    run_duplex(2.0, 9, (double[]){4, 5, 7, 8});
    run_duplex(3.0, 9, (double[]){4, 5, 7, 8});
}

/* Steps 1, 1, 10 ms; A (4 MB) read at 0, offloaded after 0 (copying 1..5)
 * and prefetched at 2 for the next iteration; C (4 MB) lives in step 1
 * only. Under a 4 MB budget step 1 waits for A's offload: starts at 5, not
 * 1: 4 ms stall. With 8 MB it does not wait. */
static void test_budget_wait(void **state)
{
    (void)state;
    sn_plan_step st[3];
    steps(st, 3, (double[]){1, 1, 10});
    static const sn_plan_access a[] = {{0, R}}, c[] = {{1, WK}};
    sn_plan_tensor t[] = {T(4 * MB, 1, a), Tb(4 * MB, 1, 1, 1, c)};
    sn_plan_model m = M(3, st, 2, t);
    sn_plan_action act[] = {OFF(0, 0), PF(0, 2, 0)};
    sn_plan p = P(4 * MB, NA(act), act);
    double start[3];
    uint64_t mem[3];
    sn_plan_timeline tl = sim(&m, &p, start, mem);
    feasible(&tl);
    near(tl.iter_ms, 16);
    near(tl.compute_ms, 12);
    near(tl.stall_ms, 4);
    near_all(start, (double[]){0, 5, 6}, 3);
    mem_all(mem, (uint64_t[]){4 * MB, 4 * MB, 4 * MB}, 3);
    assert_int_equal(tl.peak_bytes, 4 * MB);
    assert_int_equal(tl.peak_step, 0);
    assert_int_equal(tl.h2d_bytes, 4 * MB);
    assert_int_equal(tl.d2h_bytes, 4 * MB);

    p.budget = 8 * MB;
    tl = sim(&m, &p, start, mem);
    feasible(&tl);
    near(tl.iter_ms, 12);
    near(tl.stall_ms, 0);
    /* step 2: A's new memory while its old one still copies out */
    mem_all(mem, (uint64_t[]){4 * MB, 8 * MB, 8 * MB}, 3);
    assert_int_equal(tl.peak_bytes, 8 * MB);
    assert_int_equal(tl.peak_step, 1);
}

/* A prefetch that waits for memory. Three 1 ms steps; A (4 MB) read at 0
 * stays; B (3 MB) is prefetched at 0 for 1 and offloaded after 1. Budget
 * 7 MB: in the reported iteration (from 5 ms) B's prefetch must wait for
 * B's previous offload (copying 4..7): B in 7..10, step 0 7..8, step 1
 * 10..11, step 2 11..12: iter 7, stall 4. At 6 MB it never fits. */
static void test_budget_prefetch_wait(void **state)
{
    (void)state;
    sn_plan_step st[3];
    steps(st, 3, (double[]){1, 1, 1});
    static const sn_plan_access a[] = {{0, R}}, b[] = {{1, R}};
    sn_plan_tensor t[] = {T(4 * MB, 1, a), T(3 * MB, 1, b)};
    sn_plan_model m = M(3, st, 2, t);
    sn_plan_action act[] = {PF(1, 0, 1), OFF(1, 1)};
    sn_plan p = P(7 * MB, NA(act), act);
    double start[3];
    sn_plan_timeline tl = sim(&m, &p, start, NULL);
    feasible(&tl);
    near(tl.iter_ms, 7);
    near(tl.stall_ms, 4);
    near_all(start, (double[]){2, 5, 6}, 3);
    assert_int_equal(tl.peak_bytes, 7 * MB);
    assert_int_equal(tl.peak_step, 0);

    p.budget = 6 * MB;
    tl = sim(&m, &p, start, NULL);
    infeasible(&tl, 0, 1, "a prefetch exceeds the budget");
    near(tl.compute_ms, 3);
}

/* The budget test's model with C at 5 MB under 4 MB: even after A's
 * offload has completed, step 1's own memory does not fit. */
static void test_infeasible_budget(void **state)
{
    (void)state;
    sn_plan_step st[3];
    steps(st, 3, (double[]){1, 1, 10});
    static const sn_plan_access a[] = {{0, R}}, c[] = {{1, WK}};
    sn_plan_tensor t[] = {T(4 * MB, 1, a), Tb(5 * MB, 1, 1, 1, c)};
    sn_plan_model m = M(3, st, 2, t);
    sn_plan_action act[] = {OFF(0, 0), PF(0, 2, 0)};
    sn_plan p = P(4 * MB, NA(act), act);
    sn_plan_timeline tl = sim(&m, &p, NULL, NULL);
    infeasible(&tl, 1, -1, "the step's own memory exceeds the budget");
    near(tl.compute_ms, 12);
    p.budget = 5 * MB;
    tl = sim(&m, &p, NULL, NULL);
    feasible(&tl);
    near(tl.iter_ms, 16);
}

/* Residency violations, each at the step and tensor where it happens.
 * Four 1 ms steps; A (2 MB) written whole at 0, read at 2. */
static void test_nonresident(void **state)
{
    (void)state;
    sn_plan_step st[4];
    steps(st, 4, (double[]){1, 1, 1, 1});
    static const sn_plan_access a[] = {{0, WK}, {2, R}}, b[] = {{0, R}};
    sn_plan_tensor t[] = {T(2 * MB, 2, a), T(1 * MB, 1, b)};
    sn_plan_model m = M(4, st, 2, t);

    sn_plan_action no_prefetch[] = {OFF(0, 1)};
    sn_plan p = P(NOLIMIT, NA(no_prefetch), no_prefetch);
    sn_plan_timeline tl = sim(&m, &p, NULL, NULL);
    infeasible(&tl, 2, 0, "reads a tensor that is not on the device");
    near(tl.compute_ms, 4);

    sn_plan_action needed_later[] = {OFF(0, 0), PF(0, 1, 3)};
    p = P(NOLIMIT, NA(needed_later), needed_later);
    tl = sim(&m, &p, NULL, NULL);
    infeasible(&tl, 2, 0, "accesses a tensor whose prefetch is needed later");

    sn_plan_action needed_there[] = {OFF(0, 0), PF(0, 1, 2)};
    p = P(NOLIMIT, NA(needed_there), needed_there);
    tl = sim(&m, &p, NULL, NULL);
    feasible(&tl);

    sn_plan_action twice[] = {OFF(0, 1), OFF(0, 1)};
    p = P(NOLIMIT, NA(twice), twice);
    tl = sim(&m, &p, NULL, NULL);
    infeasible(&tl, 1, 0, "offloads a tensor that is not on the device");

    sn_plan_action resident[] = {PF(1, 2, 3)};
    p = P(NOLIMIT, NA(resident), resident);
    tl = sim(&m, &p, NULL, NULL);
    infeasible(&tl, 2, 1, "prefetches a tensor already on the device");

    t[1].pinned = 1;
    sn_plan_action pinned[] = {OFF(1, 0), PF(1, 3, 0)};
    p = P(NOLIMIT, NA(pinned), pinned);
    tl = sim(&m, &p, NULL, NULL);
    infeasible(&tl, 0, 1, "offloads a pinned tensor");
}

/* Dropped contents read again: with or without a prefetch (which has
 * nothing to copy), the read at step 2 fails. */
static void test_drop_then_read(void **state)
{
    (void)state;
    sn_plan_step st[4];
    steps(st, 4, (double[]){1, 1, 1, 1});
    static const sn_plan_access a[] = {{0, WK}, {2, R}};
    sn_plan_tensor t[] = {T(2 * MB, 2, a)};
    sn_plan_model m = M(4, st, 1, t);
    sn_plan_action with_prefetch[] = {DROP(0, 1), PF(0, 2, 2)};
    sn_plan p = P(NOLIMIT, NA(with_prefetch), with_prefetch);
    sn_plan_timeline tl = sim(&m, &p, NULL, NULL);
    infeasible(&tl, 2, 0, "reads dropped contents");
    sn_plan_action alone[] = {DROP(0, 1)};
    p = P(NOLIMIT, NA(alone), alone);
    tl = sim(&m, &p, NULL, NULL);
    infeasible(&tl, 2, 0, "reads dropped contents");
}

/* Five 1 ms steps; A (4 MB) written whole at 0 and 3, read at 1 and 4,
 * dropped after 1. Step 3 maps it fresh (memory 0 in step 2); a prefetch
 * at 2 for 3 only maps it (no bytes, no time, even with no host-to-device
 * bandwidth). A workspace (SCRATCH uses) dropped between uses is the same. */
static void test_drop_then_kill(void **state)
{
    (void)state;
    sn_plan_step st[5];
    steps(st, 5, (double[]){1, 1, 1, 1, 1});
    static const sn_plan_access a[] = {{0, WK}, {1, R}, {3, WK}, {4, R}};
    sn_plan_tensor t[] = {T(4 * MB, 4, a)};
    sn_plan_model m = M(5, st, 1, t);
    sn_plan_action drop[] = {DROP(0, 1)};
    sn_plan p = P(NOLIMIT, NA(drop), drop);
    double start[5];
    uint64_t mem[5];
    sn_plan_timeline tl = sim(&m, &p, start, mem);
    feasible(&tl);
    near(tl.iter_ms, 5);
    near(tl.stall_ms, 0);
    assert_int_equal(tl.h2d_bytes, 0);
    assert_int_equal(tl.d2h_bytes, 0);
    assert_int_equal(tl.peak_bytes, 4 * MB);
    assert_int_equal(tl.peak_step, 0);
    mem_all(mem, (uint64_t[]){4 * MB, 4 * MB, 0, 4 * MB, 4 * MB}, 5);
    /* the memory comes back at step 3: a budget of A alone is enough */
    p.budget = 4 * MB;
    tl = sim(&m, &p, NULL, NULL);
    feasible(&tl);

    sn_plan_action map[] = {DROP(0, 1), PF(0, 2, 3)};
    p = P(NOLIMIT, NA(map), map);
    m.h2d_gbps = 0;
    tl = sim(&m, &p, start, mem);
    feasible(&tl);
    near(tl.iter_ms, 5);
    assert_int_equal(tl.h2d_bytes, 0);
    mem_all(mem, (uint64_t[]){4 * MB, 4 * MB, 4 * MB, 4 * MB, 4 * MB}, 5);
    near_all(start, (double[]){0, 1, 2, 3, 4}, 5);

    static const sn_plan_access w[] = {{1, SCR}, {3, SCR}};
    sn_plan_tensor ws[] = {T(1 * MB, 2, w)};
    ws[0].role = SN_PLAN_WORKSPACE;
    m = M(5, st, 1, ws);
    p = P(NOLIMIT, NA(drop), drop);
    tl = sim(&m, &p, NULL, mem);
    feasible(&tl);
    mem_all(mem, (uint64_t[]){1 * MB, 1 * MB, 0, 1 * MB, 1 * MB}, 5);
}

/* A prefetch serves the tensor's next access, in the next iteration when
 * there is none after the step it is needed at: A (2 MB) and B (3 MB) are
 * used at 0 and 1, offloaded after 1 and prefetched at 2 for 3. A's next
 * use (step 0) writes it whole: it is only mapped; B's reads it: copied. */
static void test_dead_prefetch_wraps(void **state)
{
    (void)state;
    sn_plan_step st[4];
    steps(st, 4, (double[]){1, 1, 1, 1});
    static const sn_plan_access a[] = {{0, WK}, {1, R}}, b[] = {{0, R}, {1, R}};
    sn_plan_tensor t[] = {T(2 * MB, 2, a), T(3 * MB, 2, b)};
    sn_plan_model m = M(4, st, 2, t);
    sn_plan_action act[] = {OFF(0, 1), OFF(1, 1), PF(0, 2, 3), PF(1, 2, 3)};
    sn_plan p = P(NOLIMIT, NA(act), act);
    sn_plan_timeline tl = sim(&m, &p, NULL, NULL);
    feasible(&tl);
    assert_int_equal(tl.d2h_bytes, 5 * MB);
    assert_int_equal(tl.h2d_bytes, 3 * MB);
    /* A out 2..4, B out 4..7, B in (after its own offload) 7..10: step 3
     * starts at 10 instead of 3 */
    near(tl.iter_ms, 11);
    near(tl.stall_ms, 7);
}

/* Steps 1, 5, 1 ms; A (3 MB) read at 0, offloaded after 0 (1..4 in the
 * warm-up) and prefetched at 2 for step 0 of the next iteration (6..9).
 * The reported iteration starts at 7 when the warm-up ends; step 0 waits
 * until 9: iter 9 (2 ms stall), starts 2, 3, 8. */
static void test_wrap_prefetch(void **state)
{
    (void)state;
    sn_plan_step st[3];
    steps(st, 3, (double[]){1, 5, 1});
    static const sn_plan_access a[] = {{0, R}};
    sn_plan_tensor t[] = {T(3 * MB, 1, a)};
    sn_plan_model m = M(3, st, 1, t);
    sn_plan_action act[] = {OFF(0, 0), PF(0, 2, 0)};
    sn_plan p = P(NOLIMIT, NA(act), act);
    double start[3];
    uint64_t mem[3];
    sn_plan_timeline tl = sim(&m, &p, start, mem);
    feasible(&tl);
    near(tl.iter_ms, 9);
    near(tl.compute_ms, 7);
    near(tl.stall_ms, 2);
    near_all(start, (double[]){2, 3, 8}, 3);
    mem_all(mem, (uint64_t[]){3 * MB, 3 * MB, 3 * MB}, 3);
    assert_int_equal(tl.h2d_bytes, 3 * MB);
    assert_int_equal(tl.d2h_bytes, 3 * MB);
    assert_int_equal(tl.peak_bytes, 3 * MB);
    assert_int_equal(tl.peak_step, 0);

    /* issued one step earlier (at 1, host at 8 ms: A in 11..14 after its
     * offload 8..11) it is there in time: no stall */
    sn_plan_action early[] = {OFF(0, 0), PF(0, 1, 0)};
    p = P(NOLIMIT, NA(early), early);
    tl = sim(&m, &p, start, NULL);
    feasible(&tl);
    near(tl.iter_ms, 7);
    near(tl.stall_ms, 0);
    near_all(start, (double[]){0, 1, 6}, 3);
}

/* Step 1 is a convolution with two algorithms: 5 ms without workspace (the
 * framework's) or 2 ms with 6 MB. A (4 MB) is resident throughout. */
static sn_plan_model conv_model(sn_plan_step st[3], sn_plan_tensor t[1])
{
    static const sn_plan_algo algos[] = {{0, 5.0, 0}, {1, 2.0, 6 * MB}};
    static const sn_plan_access a[] = {{0, R}, {2, R}};
    steps(st, 3, (double[]){1, 5, 1});
    st[1].conv = 1;
    st[1].nalgo = 2;
    st[1].algo = algos;
    st[1].framework_algo = 0;
    t[0] = (sn_plan_tensor)T(4 * MB, 2, a);
    return (sn_plan_model)M(3, st, 1, t);
}

static void test_algorithm(void **state)
{
    (void)state;
    sn_plan_step st[3];
    sn_plan_tensor t[1];
    sn_plan_model m = conv_model(st, t);
    sn_plan p = P(NOLIMIT, 0, NULL);
    uint64_t mem[3];
    sn_plan_timeline tl = sim(&m, &p, NULL, mem);
    feasible(&tl);
    near(tl.iter_ms, 7);
    near(tl.compute_ms, 7);
    assert_int_equal(tl.peak_bytes, 4 * MB);
    near(sn_plan_step_ms(&m, &p, 1), 5);

    int fast[] = {-1, 1, -1};
    p.algo = fast;
    tl = sim(&m, &p, NULL, mem);
    feasible(&tl);
    near(tl.iter_ms, 4);
    near(tl.compute_ms, 4);
    near(tl.stall_ms, 0);
    assert_int_equal(tl.peak_bytes, 10 * MB);
    assert_int_equal(tl.peak_step, 1);
    mem_all(mem, (uint64_t[]){4 * MB, 10 * MB, 4 * MB}, 3);
    near(sn_plan_step_ms(&m, &p, 1), 2);
    near(sn_plan_step_ms(&m, &p, 0), 1);
    p.budget = 10 * MB - 1;
    tl = sim(&m, &p, NULL, NULL);
    infeasible(&tl, 1, -1, NULL);
    near(tl.compute_ms, 4);

    int none[] = {-1, -1, -1};
    p = P(NOLIMIT, 0, NULL);
    p.algo = none;
    tl = sim(&m, &p, NULL, NULL);
    near(tl.iter_ms, 7);
    assert_int_equal(tl.peak_bytes, 4 * MB);

    /* no plan choice: the framework's, whichever it is */
    st[1].framework_algo = 1;
    p.algo = NULL;
    tl = sim(&m, &p, NULL, NULL);
    near(tl.iter_ms, 4);
    assert_int_equal(tl.peak_bytes, 10 * MB);
    near(sn_plan_step_ms(&m, NULL, 1), 2);

    /* the step names a 4 MB buffer of its own (the framework's workspace):
     * the 6 MB algorithm takes only 2 MB more */
    st[1].own_workspace = 4 * MB;
    tl = sim(&m, &p, NULL, mem);
    feasible(&tl);
    assert_int_equal(tl.peak_bytes, 6 * MB);
    mem_all(mem, (uint64_t[]){4 * MB, 6 * MB, 4 * MB}, 3);
    st[1].own_workspace = 8 * MB;
    tl = sim(&m, &p, NULL, NULL);
    assert_int_equal(tl.peak_bytes, 4 * MB);
}

/* On a VMM arena the manager's workspace is not unmapped after each step
 * (that would wait for the device): test_algorithm's model (A, 4 MB,
 * throughout; step 1's fast algorithm takes 6 MB). Ungathered, the scratch
 * holds the iteration's largest workspace throughout (scratch_held: 10,
 * 10, 10 MB; without, during step 1 only: 4, 10, 4). A gathered plan maps
 * it at a sync step for its whole stretch and unmaps it at the next:
 * synced at step 0 alone, held in every step; synced at 0 and 2, in steps
 * 0 and 1 (the stretch of step 2 needs none): 10, 10, 4. */
static void test_gathered_workspace(void **state)
{
    (void)state;
    sn_plan_step st[3];
    sn_plan_tensor t[1];
    sn_plan_model m = conv_model(st, t);
    int fast[] = {-1, 1, -1};
    sn_plan p = P(NOLIMIT, 0, NULL);
    p.algo = fast;
    uint64_t mem[3];
    sn_plan_timeline tl = sim(&m, &p, NULL, mem);
    feasible(&tl);
    mem_all(mem, (uint64_t[]){4 * MB, 10 * MB, 4 * MB}, 3);
    m.remap_drains = 1;
    m.scratch_held = 1;
    tl = sim(&m, &p, NULL, mem);
    feasible(&tl);
    near(tl.iter_ms, 4);
    mem_all(mem, (uint64_t[]){10 * MB, 10 * MB, 10 * MB}, 3);

    uint8_t once[3] = {1, 0, 0};
    p.sync = once;
    assert_int_equal(sn_plan_stretch_workspace(&m, &p, 0), 6 * MB);
    tl = sim(&m, &p, NULL, mem);
    feasible(&tl);
    near(tl.iter_ms, 4);
    mem_all(mem, (uint64_t[]){10 * MB, 10 * MB, 10 * MB}, 3);
    assert_int_equal(tl.peak_bytes, 10 * MB);

    uint8_t twice[3] = {1, 0, 1};
    p.sync = twice;
    assert_int_equal(sn_plan_stretch_workspace(&m, &p, 0), 6 * MB);
    assert_int_equal(sn_plan_stretch_workspace(&m, &p, 2), 0);
    tl = sim(&m, &p, NULL, mem);
    feasible(&tl);
    mem_all(mem, (uint64_t[]){10 * MB, 10 * MB, 4 * MB}, 3);
    p.budget = 10 * MB;
    tl = sim(&m, &p, NULL, NULL);
    feasible(&tl);
    p.budget = 10 * MB - 1;
    tl = sim(&m, &p, NULL, NULL);
    assert_int_equal(tl.feasible, 0);
}

/* Bounded tensors hold memory only from their first to their last step:
 * A (1 MB) always, B (5 MB) in steps 1-2, C (2 MB) in step 3. Moving B
 * within its life (1 MB, steps 1-3 of five): out after 1 (2..3), in at 2
 * once that is done (3..4), step 3 waits 1 ms. */
static void test_bounded(void **state)
{
    (void)state;
    sn_plan_step st[4];
    steps(st, 4, (double[]){1, 1, 1, 1});
    static const sn_plan_access a[] = {{0, R}, {3, R}}, b[] = {{1, WK}, {2, R}},
                                c[] = {{3, WK}};
    sn_plan_tensor t[] = {T(1 * MB, 2, a), Tb(5 * MB, 1, 2, 2, b), Tb(2 * MB, 3, 3, 1, c)};
    sn_plan_model m = M(4, st, 3, t);
    sn_plan p = P(NOLIMIT, 0, NULL);
    uint64_t mem[5]; /* the second model has five steps */
    sn_plan_timeline tl = sim(&m, &p, NULL, mem);
    feasible(&tl);
    near(tl.iter_ms, 4);
    assert_int_equal(tl.peak_bytes, 6 * MB);
    assert_int_equal(tl.peak_step, 1);
    mem_all(mem, (uint64_t[]){1 * MB, 6 * MB, 6 * MB, 3 * MB}, 4);
    p.budget = 6 * MB;
    tl = sim(&m, &p, NULL, NULL);
    feasible(&tl);

    sn_plan_action before[] = {OFF(1, 0)};
    p = P(NOLIMIT, NA(before), before);
    tl = sim(&m, &p, NULL, NULL);
    infeasible(&tl, 0, 1, "offloads a tensor that is not on the device");
    sn_plan_action at_alloc[] = {PF(2, 3, 3)};
    p = P(NOLIMIT, NA(at_alloc), at_alloc);
    tl = sim(&m, &p, NULL, NULL);
    infeasible(&tl, 3, 2, "prefetches a tensor outside its lifetime");

    static const sn_plan_access b2[] = {{1, WK}, {3, R}};
    sn_plan_tensor t2[] = {Tb(1 * MB, 1, 3, 2, b2)};
    sn_plan_model m2 = M(5, (sn_plan_step[]){{.ms = 1}, {.ms = 1}, {.ms = 1}, {.ms = 1}, {.ms = 1}},
                         1, t2);
    sn_plan_action move[] = {OFF(0, 1), PF(0, 2, 3)};
    p = P(NOLIMIT, NA(move), move);
    double start[5];
    tl = sim(&m2, &p, start, mem);
    feasible(&tl);
    near(tl.iter_ms, 6);
    near(tl.stall_ms, 1);
    near_all(start, (double[]){0, 1, 2, 4, 5}, 5);
    assert_int_equal(tl.h2d_bytes, 1 * MB);
    assert_int_equal(tl.d2h_bytes, 1 * MB);
    /* at step 2 B's old memory still copies out while its new one is taken */
    mem_all(mem, (uint64_t[]){0, 1 * MB, 2 * MB, 1 * MB, 0}, 5);
    assert_int_equal(tl.peak_bytes, 2 * MB);
    assert_int_equal(tl.peak_step, 2);
}

/* The residency an iteration starts with, tensor by tensor. */
static void test_initial_residency(void **state)
{
    (void)state;
    sn_plan_step st[4];
    steps(st, 4, (double[]){1, 1, 1, 1});
    static const sn_plan_access r0[] = {{0, R}}, kill2[] = {{0, R}, {2, WK}},
                                kill0[] = {{0, WK}, {3, R}};
    sn_plan_tensor t[] = {
        T(1, 1, r0),          /* 0: no action: on */
        T(1, 1, r0),          /* 1: out after 1: off */
        T(1, 1, r0),          /* 2: out after 0, in at 3: on */
        T(1, 1, r0),          /* 3: in at 1, out after 1: off */
        T(1, 2, kill2),       /* 4: dropped after 1, written whole at 2: on */
        T(1, 2, kill0),       /* 5: dropped after 3: off, dropped */
        T(1, 1, r0),          /* 6: pinned */
        Tb(1, 0, 0, 1, r0),   /* 7: bounded */
    };
    t[6].pinned = 1;
    sn_plan_model m = M(4, st, NA(t), t);
    sn_plan_action act[] = {OFF(1, 1), OFF(2, 0), PF(2, 3, 0), PF(3, 1, 1), OFF(3, 1),
                            DROP(4, 1), DROP(5, 3), OFF(6, 2)};
    sn_plan p = P(NOLIMIT, NA(act), act);
    assert_int_equal(sn_plan_check(&m, &p), 0);
    uint8_t res[8], dropped[8];
    assert_int_equal(sn_plan_initial_residency(&m, &p, res, dropped), 0);
    const uint8_t want_res[8] = {1, 0, 1, 0, 1, 0, 1, 0};
    const uint8_t want_dropped[8] = {0, 0, 0, 0, 0, 1, 0, 0};
    assert_memory_equal(res, want_res, 8);
    assert_memory_equal(dropped, want_dropped, 8);
}

/* Malformed models and plans are refused, as are copies a direction
 * cannot make. */
static void test_invalid(void **state)
{
    (void)state;
    sn_plan_step st[2];
    steps(st, 2, (double[]){1, 1});
    sn_plan_access a[] = {{0, R}, {0, R}, {1, R}};
    sn_plan_tensor t[] = {T(MB, 3, a)};
    sn_plan_model m = M(2, st, 1, t);
    sn_plan_action act[] = {OFF(0, 0), PF(0, 1, 1)};
    sn_plan p = P(NOLIMIT, NA(act), act);
    sn_plan_timeline tl;
    assert_int_equal(sn_plan_simulate(&m, &p, &tl, NULL, NULL), 0);
    feasible(&tl);

    assert_int_equal(sn_plan_simulate(NULL, &p, &tl, NULL, NULL), -1);
    assert_int_equal(tl.feasible, 0);
    assert_int_equal(tl.bad_step, -1);
    assert_int_equal(sn_plan_simulate(&m, NULL, &tl, NULL, NULL), -1);
    assert_int_equal(sn_plan_simulate(&m, &p, NULL, NULL, NULL), -1);
#define BAD(field, value)                                                                  \
    do {                                                                                   \
        __typeof__(field) keep_ = (field);                                                 \
        (field) = (value);                                                                 \
        assert_int_equal(sn_plan_simulate(&m, &p, &tl, NULL, NULL), -1);                   \
        (field) = keep_;                                                                   \
        assert_int_equal(sn_plan_simulate(&m, &p, &tl, NULL, NULL), 0);                    \
    } while (0)
    BAD(m.nsteps, 0);
    BAD(m.nsteps, -1);
    BAD(m.ntensors, -1);
    BAD(m.copy_ms, -1.0);
    BAD(m.h2d_gbps, 0.0);
    BAD(m.d2h_gbps, -1.0);
    BAD(m.duplex, 0.0);
    BAD(st[0].ms, -1.0);
    BAD(act[0].tensor, 1);
    BAD(act[0].tensor, -1);
    BAD(act[0].step, 2);
    BAD(act[0].op, 7);
    BAD(act[1].need, 2);
    BAD(act[1].need, -1);
    BAD(p.nactions, -1);
    BAD(a[2].step, 2);
    BAD(a[0].step, 1);      /* out of step order */
    BAD(t[0].bounded, 1);   /* alloc_step 0, free_step 0: access at 1 outside */
    int algo[] = {0, -1};
    p.algo = algo;          /* index 0 of a step with no choice */
    assert_int_equal(sn_plan_simulate(&m, &p, &tl, NULL, NULL), -1);
    p.algo = NULL;
#undef BAD
}

static unsigned lcg(unsigned *x)
{
    *x = *x * 1103515245u + 12345u;
    return (*x >> 16) & 0x7fff;
}

/* Random small models and plans, most of them infeasible: every run ends,
 * and what is reported holds together: a feasible plan never goes above
 * its budget, no step starts before the one before it has had its time,
 * the iteration is at least its compute, the peak is the largest step
 * memory or more, and no more is copied than the plan moves. */
static void test_random_invariants(void **state)
{
    (void)state;
    unsigned seed = 12345;
    int feasible_runs = 0;
    for (int run = 0; run < 3000; run++) {
        enum { NS = 6, NT = 5, NACT = 6 };
        sn_plan_step st[NS];
        for (int s = 0; s < NS; s++)
            st[s] = (sn_plan_step){.ms = 1 + lcg(&seed) % 4, .layer = -1};
        sn_plan_access acc[NT][3];
        sn_plan_tensor t[NT];
        for (int i = 0; i < NT; i++) {
            int n = 1 + lcg(&seed) % 3, s0 = 0;
            for (int j = 0; j < n; j++) {
                s0 += lcg(&seed) % 3;
                acc[i][j] = (sn_plan_access){s0 < NS ? s0 : NS - 1, lcg(&seed) % 2 ? R : WK};
                s0 = acc[i][j].step;
            }
            t[i] = T((1 + lcg(&seed) % 4) * MB, n, acc[i]);
            if (lcg(&seed) % 4 == 0) {
                t[i].bounded = 1;
                t[i].alloc_step = acc[i][0].step;
                t[i].free_step = acc[i][n - 1].step;
            }
        }
        sn_plan_model m = M(NS, st, NT, t);
        m.duplex = 1.6;
        m.copy_ms = (lcg(&seed) % 2) * 0.25;
        sn_plan_action act[NACT];
        int na = lcg(&seed) % (NACT + 1);
        uint64_t moved = 0;
        for (int k = 0; k < na; k++) {
            int op = lcg(&seed) % 3, tt = lcg(&seed) % NT;
            act[k] = (sn_plan_action){op, tt, (int)(lcg(&seed) % NS), (int)(lcg(&seed) % NS)};
            moved += op == SN_PLAN_DROP ? 0 : t[tt].bytes;
        }
        sn_plan p = P(lcg(&seed) % 2 ? NOLIMIT : (8 + lcg(&seed) % 8) * MB, na, act);
        double start[NS];
        uint64_t mem[NS];
        sn_plan_timeline tl = sim(&m, &p, start, mem);
        double compute = 0;
        for (int s = 0; s < NS; s++)
            compute += st[s].ms;
        near(tl.compute_ms, compute);
        if (!tl.feasible) {
            assert_in_range(tl.bad_step, 0, NS - 1);
            assert_in_range(tl.bad_tensor + 1, 0, NT);
            assert_non_null(tl.why);
            continue;
        }
        feasible_runs++;
        assert_true(tl.peak_bytes <= p.budget);
        assert_true(tl.iter_ms >= compute - 1e-9);
        near(tl.stall_ms, tl.iter_ms - compute);
        assert_true(tl.h2d_bytes + tl.d2h_bytes <= moved);
        assert_true(start[0] >= 0);
        for (int s = 0; s < NS; s++) {
            assert_true(mem[s] <= tl.peak_bytes);
            if (s > 0)
                assert_true(start[s] >= start[s - 1] + st[s - 1].ms - 1e-9);
        }
        assert_true(tl.iter_ms >= start[NS - 1] + st[NS - 1].ms - 1e-9);
        assert_in_range(tl.peak_step, 0, NS - 1);
    }
    /* the sample is not all failures */
    assert_true(feasible_runs > 300);
}

/* The plan's arrays are freed and the plan emptied; step_ms out of range
 * is 0. */
static void test_free_and_step_ms(void **state)
{
    (void)state;
    sn_plan p = P(123, 2, calloc(2, sizeof(sn_plan_action)));
    p.algo = calloc(3, sizeof(int));
    p.gtbm_class = calloc(3, sizeof(int));
    p.predicted.feasible = 1;
    assert_non_null(p.actions);
    sn_plan_free(&p);
    assert_null(p.actions);
    assert_null(p.algo);
    assert_null(p.gtbm_class);
    assert_int_equal(p.nactions, 0);
    assert_int_equal(p.budget, 0);
    assert_int_equal(p.predicted.feasible, 0);
    sn_plan_free(&p);
    sn_plan_free(NULL);

    sn_plan_step st[2];
    steps(st, 2, (double[]){1.5, 2.5});
    sn_plan_model m = M(2, st, 0, NULL);
    near(sn_plan_step_ms(&m, NULL, 1), 2.5);
    near(sn_plan_step_ms(&m, NULL, 2), 0);
    near(sn_plan_step_ms(&m, NULL, -1), 0);
    near(sn_plan_step_ms(NULL, NULL, 0), 0);
}

/* The bound of m under budget (it must be computable). */
static sn_plan_bound bound_of(const sn_plan_model *m, uint64_t budget)
{
    sn_plan_bound b;
    assert_int_equal(sn_plan_bound_of(m, budget, &b), 0);
    return b;
}

/* The bound (sn_plan_bound.c) on four steps of 1, 2, 3, 2 ms, 1 GB/s:
 *   A 10 MB  written whole at 0, read at 2      -> needed (off its steps) at 1
 *   B 20 MB  written whole at 1, read at 3      -> needed at 2
 *   W  5 MB  read at 0, read and written at 3   -> needed at 1, 2 (and over
 *            the wrap from 3 to 0 there is no step)
 *   P  3 MB  pinned; 1 MB fixed
 * Step 1 may run in 1 ms with 50 MB of workspace instead of its 2 ms.
 * Own memory: 4 + (15, 20, 10, 25) = 19, 24, 14, 29 MB; with what is
 * needed off its steps 19, 39, 39, 29 MB. */
static void test_bound(void **state)
{
    (void)state;
    static const sn_plan_access aa[] = {{0, WK}, {2, R}}, ab[] = {{1, WK}, {3, R}},
                                aw[] = {{0, R}, {3, R | SN_PLAN_W}}, ap[] = {{2, R}};
    static const sn_plan_algo fast[] = {{1, 1.0, 50 * MB}, {0, 2.0, 0}};
    sn_plan_step st[4];
    steps(st, 4, (double[]){1, 2, 3, 2});
    st[1].conv = 1;
    st[1].nalgo = 2;
    st[1].algo = fast;
    st[1].framework_algo = 1;
    sn_plan_tensor t[4] = {T(10 * MB, 2, aa), T(20 * MB, 2, ab), T(5 * MB, 2, aw), T(3 * MB, 1, ap)};
    t[2].role = SN_PLAN_WEIGHT;
    t[3].pinned = 1;
    sn_plan_model m = M(4, st, 4, t);
    m.fixed_bytes = 1 * MB;
    sn_plan_bound b;

    /* 100 MB: the fast algorithm fits beside step 1's 24 MB; nothing must leave */
    b = bound_of(&m, 100 * MB);
    assert_int_equal(b.feasible, 1);
    near(b.compute_ms, 7);
    near(b.unlimited_ms, 7);
    assert_int_equal(b.offdevice_bytes, 0);
    assert_int_equal(b.offdevice_step, -1);
    near(b.transfer_ms, 0);
    near(b.stall_ms, 0);
    assert_int_equal(b.window_from, -1);
    near(b.ms, 7);

    /* 74 MB is just enough for it, 73 not */
    b = bound_of(&m, 74 * MB);
    near(b.compute_ms, 7);
    b = bound_of(&m, 73 * MB);
    near(b.compute_ms, 8);
    near(b.unlimited_ms, 7);

    /* 30 MB: 9 MB of what steps 1 and 2 still need is on the host (9 ms
     * of copies in, more than the 8 ms of compute). When: at step 2 the 9
     * MB away are of B and W, both read at step 3, so they come back
     * between the two with the device idle: 8 + 9 ms. (At step 1, 4 of
     * the 9 MB are A's, read at 2 at once after; all 9 by step 3, with
     * step 2's 3 ms between: 4 and 6 ms of stall.) */
    b = bound_of(&m, 30 * MB);
    assert_int_equal(b.feasible, 1);
    near(b.compute_ms, 8);
    assert_int_equal(b.offdevice_bytes, 9 * MB);
    assert_int_equal(b.offdevice_step, 1);
    near(b.transfer_ms, 9);
    near(b.stall_ms, 9);
    assert_int_equal(b.window_from, 2);
    assert_int_equal(b.window_to, 3);
    near(b.ms, 17);
    /* 36 MB: 3 MB away at steps 1 and 2; at 2 they are read at 3 at once */
    b = bound_of(&m, 36 * MB);
    near(b.stall_ms, 3);
    near(b.ms, 11);

    /* step 3's own 29 MB does not fit 28 */
    b = bound_of(&m, 28 * MB);
    assert_int_equal(b.feasible, 0);

    /* over the wrap: three steps; X (10 MB) is read and written at 1 only,
     * Y (5 MB) written whole at 0 and read at 2. X's contents are needed
     * from 1 to 1 of the next iteration: at 2 and 0, so 15 MB at every
     * step, 5 off the device at 10 MB, first at step 0, where X is read
     * at once after: 5 ms of stall */
    static const sn_plan_access ax[] = {{1, R | SN_PLAN_W}}, axk[] = {{1, WK}}, ay[] = {{0, WK}, {2, R}};
    sn_plan_step st3[3];
    steps(st3, 3, (double[]){1, 1, 1});
    sn_plan_tensor t3[2] = {T(10 * MB, 1, ax), T(5 * MB, 2, ay)};
    sn_plan_model m3 = M(3, st3, 2, t3);
    b = bound_of(&m3, 10 * MB);
    assert_int_equal(b.offdevice_bytes, 5 * MB);
    assert_int_equal(b.offdevice_step, 0);
    near(b.stall_ms, 5);
    near(b.ms, 8);
    /* living within the iteration only (bounded), or overwritten whole,
     * X is needed at no other step: only Y waits, at step 1 */
    t3[0] = Tb(10 * MB, 1, 1, 1, ax);
    b = bound_of(&m3, 10 * MB);
    assert_int_equal(b.offdevice_bytes, 5 * MB);
    assert_int_equal(b.offdevice_step, 1);
    t3[0] = T(10 * MB, 1, axk);
    b = bound_of(&m3, 10 * MB);
    assert_int_equal(b.offdevice_step, 1);
    near(b.compute_ms, 3);
    assert_int_equal(b.window_from, 1);
    assert_int_equal(b.window_to, 2);
    near(b.ms, 8);
    /* a fourth step of 1 ms, Y read there instead: coming back, a step
     * between hides 1 ms of its 5; but it must also leave, written at 0
     * and away at 1, with no step between: 5 ms */
    static const sn_plan_access ay4[] = {{0, WK}, {3, R}};
    sn_plan_step st4[4];
    steps(st4, 4, (double[]){1, 1, 1, 1});
    sn_plan_tensor t4[2] = {T(10 * MB, 1, axk), T(5 * MB, 2, ay4)};
    sn_plan_model m4 = M(4, st4, 2, t4);
    b = bound_of(&m4, 10 * MB);
    assert_int_equal(b.offdevice_step, 1);
    near(b.stall_ms, 5);
    assert_int_equal(b.window_from, 0);
    assert_int_equal(b.window_to, 1);
    near(b.ms, 9);
    /* with Y's contents never written on the device (a host copy stays
     * current: only reads), nothing leaves by copy, and the way back
     * decides: 4 ms */
    static const sn_plan_access ay4r[] = {{0, R}, {3, R}};
    t4[1] = T(5 * MB, 2, ay4r);
    b = bound_of(&m4, 10 * MB);
    near(b.stall_ms, 4);
    assert_int_equal(b.window_from, 1);
    assert_int_equal(b.window_to, 3);
    near(b.ms, 8);

    assert_int_equal(sn_plan_bound_of(&(sn_plan_model){0}, 30 * MB, &b), -1);
    near(b.ms, 0);
    assert_int_equal(b.window_from, -1);
    assert_int_equal(b.window_to, -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_actions),
        cmocka_unit_test(test_offload_hidden), cmocka_unit_test(test_remap_cost),
        cmocka_unit_test(test_remap_drains), cmocka_unit_test(test_remap_maps_before_copies),
        cmocka_unit_test(test_free_drains),
        cmocka_unit_test(test_late_prefetch),
        cmocka_unit_test(test_fifo),
        cmocka_unit_test(test_duplex_contention),
        cmocka_unit_test(test_duplex_none),
        cmocka_unit_test(test_budget_wait),
        cmocka_unit_test(test_budget_prefetch_wait),
        cmocka_unit_test(test_infeasible_budget),
        cmocka_unit_test(test_nonresident),
        cmocka_unit_test(test_drop_then_read),
        cmocka_unit_test(test_drop_then_kill),
        cmocka_unit_test(test_dead_prefetch_wraps),
        cmocka_unit_test(test_wrap_prefetch),
        cmocka_unit_test(test_algorithm), cmocka_unit_test(test_gathered_workspace),
        cmocka_unit_test(test_bounded),
        cmocka_unit_test(test_initial_residency),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_random_invariants),
        cmocka_unit_test(test_free_and_step_ms),
        cmocka_unit_test(test_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
