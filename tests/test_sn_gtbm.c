/*
 * test_sn_gtbm.c — the placement engine (allocator/sn_gtbm.c) on hand-built
 * sequences whose outcome is worked out by hand: GTBM's low and high ends
 * and incremental space, merging on free, failure when full, best fit's and
 * first fit's choices, a sequence where best fit fragments and GTBM does not
 * (peaks pinned), the statistics, the class helper, and long random
 * sequences checked against the engine's invariants.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "allocator/sn_gtbm.h"

#define MiB ((uint64_t)1 << 20)
#define GiB ((uint64_t)1 << 30)

static uint64_t A(sn_gtbm_pool *p, uint64_t size, enum sn_gtbm_class c)
{
    uint64_t off = sn_gtbm_alloc(p, size, c);
    assert_int_equal(sn_gtbm_check(p), 0);
    return off;
}

static void F(sn_gtbm_pool *p, uint64_t off)
{
    assert_int_equal(sn_gtbm_free(p, off), 0);
    assert_int_equal(sn_gtbm_check(p), 0);
}

static sn_gtbm_stats S(const sn_gtbm_pool *p)
{
    sn_gtbm_stats s;
    sn_gtbm_stats_get(p, &s);
    return s;
}

static void test_init(void **state)
{
    (void)state;
    sn_gtbm_pool p;
    assert_int_equal(sn_gtbm_init(&p, 0, SN_GTBM_POLICY_BEST_FIT), -1);
    assert_int_equal(sn_gtbm_init(&p, 100, SN_GTBM_POLICY_BEST_FIT), -1); /* below one unit */
    assert_int_equal(sn_gtbm_init(&p, MiB, (enum sn_gtbm_policy)7), -1);
    assert_int_equal(sn_gtbm_init(&p, 10 * MiB + 100, SN_GTBM_POLICY_GTBM), 0);
    sn_gtbm_stats s = S(&p);
    assert_int_equal(s.capacity, 10 * MiB);
    assert_int_equal(s.extent, 0);
    assert_int_equal(s.peak_extent, 0);
    assert_int_equal(s.largest_free, 10 * MiB);
    assert_int_equal(s.free_blocks, 1);
    assert_int_equal(sn_gtbm_reserve_size(&p), 20 * MiB);
    assert_int_equal(sn_gtbm_check(&p), 0);
    sn_gtbm_destroy(&p);
    assert_int_equal(sn_gtbm_init(&p, 10 * MiB, SN_GTBM_POLICY_BEST_FIT), 0);
    assert_int_equal(sn_gtbm_reserve_size(&p), 10 * MiB);
    sn_gtbm_destroy(&p);
}

static void test_alignment(void **state)
{
    (void)state;
    sn_gtbm_pool p;
    assert_int_equal(sn_gtbm_init(&p, MiB, SN_GTBM_POLICY_BEST_FIT), 0);
    uint64_t a = A(&p, 1, SN_CLASS_MOVABLE);
    uint64_t b = A(&p, 300, SN_CLASS_MOVABLE);
    uint64_t c = A(&p, 256, SN_CLASS_MOVABLE);
    assert_int_equal(a, 0);
    assert_int_equal(b, 256);
    assert_int_equal(c, 768);
    assert_int_equal(sn_gtbm_size(&p, a), 256);
    assert_int_equal(sn_gtbm_size(&p, b), 512);
    assert_int_equal(sn_gtbm_size(&p, 1), 0);
    assert_int_equal(S(&p).live_bytes, 1024);
    assert_int_equal(A(&p, 0, SN_CLASS_MOVABLE), SN_GTBM_NONE);
    assert_int_equal(A(&p, MiB + 1, SN_CLASS_MOVABLE), SN_GTBM_NONE);
    assert_int_equal(S(&p).nfailed, 2);
    sn_gtbm_destroy(&p);
}

/* Movable from the bottom, temporary from the top, holes reused on their
 * own side only. */
static void test_gtbm_ends(void **state)
{
    (void)state;
    sn_gtbm_pool p;
    assert_int_equal(sn_gtbm_init(&p, 100 * MiB, SN_GTBM_POLICY_GTBM), 0);
    uint64_t m1 = A(&p, 10 * MiB, SN_CLASS_MOVABLE);
    uint64_t m2 = A(&p, 5 * MiB, SN_CLASS_MOVABLE);
    uint64_t t1 = A(&p, 20 * MiB, SN_CLASS_TEMP);
    uint64_t t2 = A(&p, 10 * MiB, SN_CLASS_TEMP);
    assert_int_equal(m1, 0);
    assert_int_equal(m2, 10 * MiB);
    assert_int_equal(t1, 80 * MiB);
    assert_int_equal(t2, 70 * MiB);
    assert_int_equal(S(&p).extent, 45 * MiB);

    F(&p, m1);
    uint64_t m3 = A(&p, 4 * MiB, SN_CLASS_MOVABLE); /* the hole m1 left */
    uint64_t m4 = A(&p, 8 * MiB, SN_CLASS_MOVABLE); /* 6 MiB left there: the gap */
    assert_int_equal(m3, 0);
    assert_int_equal(m4, 15 * MiB);
    assert_int_equal(S(&p).extent, 53 * MiB);

    F(&p, t1);
    uint64_t t3 = A(&p, 5 * MiB, SN_CLASS_TEMP);  /* top of t1's hole */
    uint64_t t4 = A(&p, 30 * MiB, SN_CLASS_TEMP); /* 15 MiB left there: the gap */
    assert_int_equal(t3, 95 * MiB);
    assert_int_equal(t4, 40 * MiB);
    assert_int_equal(S(&p).extent, 83 * MiB);
    assert_int_equal(S(&p).peak_extent, 83 * MiB);

    /* Freeing the top low block lowers the low end down to the next live
     * one, holes included; the same for the high end. */
    F(&p, m2);
    assert_int_equal(S(&p).extent, 83 * MiB);
    F(&p, m4);
    assert_int_equal(S(&p).extent, 64 * MiB);
    F(&p, t4);
    sn_gtbm_stats s = S(&p);
    assert_int_equal(s.extent, 34 * MiB);
    assert_int_equal(s.peak_extent, 83 * MiB);
    assert_int_equal(s.live_bytes, 19 * MiB);
    assert_int_equal(s.free_in_extent, 15 * MiB); /* t1's hole, [80, 95) */
    assert_int_equal(s.largest_free, 66 * MiB);   /* the gap [4, 70) */
    assert_int_equal(s.free_blocks, 2);

    /* Full: the gap goes to one end; a hole on the other side is not used. */
    assert_int_equal(A(&p, 67 * MiB, SN_CLASS_MOVABLE), SN_GTBM_NONE);
    uint64_t t5 = A(&p, 66 * MiB, SN_CLASS_TEMP);
    assert_int_equal(t5, 4 * MiB);
    assert_int_equal(S(&p).extent, 100 * MiB);
    assert_int_equal(A(&p, MiB, SN_CLASS_LONG), SN_GTBM_NONE);
    assert_int_equal(A(&p, MiB, SN_CLASS_MOVABLE), SN_GTBM_NONE);
    assert_int_equal(A(&p, MiB, SN_CLASS_TEMP), 94 * MiB);
    assert_int_equal(S(&p).nfailed, 3);
    sn_gtbm_destroy(&p);
}

/* The incremental space: its own range above the capacity, best fit
 * inside, grows at its top, never shrinks, and takes its size out of what
 * the main space may use. */
static void test_incremental(void **state)
{
    (void)state;
    sn_gtbm_pool p;
    const uint64_t C = 100 * MiB;
    assert_int_equal(sn_gtbm_init(&p, C, SN_GTBM_POLICY_GTBM), 0);
    uint64_t a = A(&p, MiB, SN_CLASS_LONG);
    uint64_t b = A(&p, 2 * MiB, SN_CLASS_LONG);
    uint64_t c = A(&p, 1000, SN_CLASS_LONG);
    assert_int_equal(a, C);
    assert_int_equal(b, C + MiB);
    assert_int_equal(c, C + 3 * MiB);
    assert_int_equal(S(&p).incremental, 3 * MiB + 1024);

    F(&p, a);
    uint64_t d = A(&p, MiB / 2, SN_CLASS_LONG); /* a's hole, no growth */
    assert_int_equal(d, C);
    assert_int_equal(S(&p).incremental, 3 * MiB + 1024);

    /* c's block is free at the top: growing merges with it */
    F(&p, c);
    uint64_t e = A(&p, 2 * MiB, SN_CLASS_LONG);
    assert_int_equal(e, C + 3 * MiB);
    assert_int_equal(S(&p).incremental, 5 * MiB);
    assert_int_equal(S(&p).extent, 5 * MiB);

    F(&p, b);
    F(&p, d);
    F(&p, e);
    sn_gtbm_stats s = S(&p);
    assert_int_equal(s.incremental, 5 * MiB); /* only grows */
    assert_int_equal(s.extent, 5 * MiB);
    assert_int_equal(s.live_bytes, 0);
    uint64_t f = A(&p, 5 * MiB, SN_CLASS_LONG);
    assert_int_equal(f, C);
    assert_int_equal(S(&p).incremental, 5 * MiB);

    /* the main space gets what the incremental space leaves */
    assert_int_equal(A(&p, 96 * MiB, SN_CLASS_MOVABLE), SN_GTBM_NONE);
    uint64_t m = A(&p, 95 * MiB, SN_CLASS_MOVABLE);
    assert_int_equal(m, 0);
    F(&p, f);
    assert_int_equal(A(&p, 6 * MiB, SN_CLASS_LONG), SN_GTBM_NONE);
    assert_int_equal(S(&p).incremental, 5 * MiB);
    F(&p, m);
    assert_int_equal(A(&p, 6 * MiB, SN_CLASS_LONG), C);
    assert_int_equal(S(&p).incremental, 6 * MiB);
    sn_gtbm_destroy(&p);
}

/* The class is ignored by the single-list policies. */
static void test_single_list_ignores_class(void **state)
{
    (void)state;
    sn_gtbm_pool p;
    assert_int_equal(sn_gtbm_init(&p, 16 * MiB, SN_GTBM_POLICY_BEST_FIT), 0);
    assert_int_equal(A(&p, MiB, SN_CLASS_TEMP), 0);
    assert_int_equal(A(&p, MiB, SN_CLASS_LONG), MiB);
    assert_int_equal(A(&p, MiB, SN_CLASS_MOVABLE), 2 * MiB);
    assert_int_equal(S(&p).incremental, 0);
    sn_gtbm_destroy(&p);
}

static void test_coalesce(void **state)
{
    (void)state;
    sn_gtbm_pool p;
    assert_int_equal(sn_gtbm_init(&p, 16 * MiB, SN_GTBM_POLICY_BEST_FIT), 0);
    uint64_t a = A(&p, MiB, SN_CLASS_MOVABLE);
    uint64_t b = A(&p, MiB, SN_CLASS_MOVABLE);
    uint64_t c = A(&p, MiB, SN_CLASS_MOVABLE);
    assert_int_equal(S(&p).free_blocks, 1);
    F(&p, a);
    assert_int_equal(S(&p).free_blocks, 2);
    F(&p, c); /* merges with the tail */
    assert_int_equal(S(&p).free_blocks, 2);
    assert_int_equal(S(&p).extent, 2 * MiB);
    F(&p, b); /* merges with both neighbours */
    sn_gtbm_stats s = S(&p);
    assert_int_equal(s.free_blocks, 1);
    assert_int_equal(s.extent, 0);
    assert_int_equal(s.largest_free, 16 * MiB);
    assert_int_equal(A(&p, 16 * MiB, SN_CLASS_MOVABLE), 0);
    sn_gtbm_destroy(&p);
}

static void test_full(void **state)
{
    (void)state;
    sn_gtbm_pool p;
    assert_int_equal(sn_gtbm_init(&p, 4 * MiB, SN_GTBM_POLICY_BEST_FIT), 0);
    uint64_t a = A(&p, 4 * MiB, SN_CLASS_MOVABLE);
    assert_int_equal(a, 0);
    assert_int_equal(A(&p, 1, SN_CLASS_MOVABLE), SN_GTBM_NONE);
    sn_gtbm_stats s = S(&p);
    assert_int_equal(s.nfailed, 1);
    assert_int_equal(s.largest_free, 0);
    assert_int_equal(s.free_blocks, 0);
    F(&p, a);
    assert_int_equal(A(&p, 4 * MiB, SN_CLASS_MOVABLE), 0);
    sn_gtbm_destroy(&p);

    /* GTBM: the two ends meet */
    assert_int_equal(sn_gtbm_init(&p, 4 * MiB, SN_GTBM_POLICY_GTBM), 0);
    assert_int_equal(A(&p, 3 * MiB, SN_CLASS_MOVABLE), 0);
    assert_int_equal(A(&p, 2 * MiB, SN_CLASS_TEMP), SN_GTBM_NONE);
    assert_int_equal(A(&p, MiB, SN_CLASS_TEMP), 3 * MiB);
    assert_int_equal(A(&p, 256, SN_CLASS_MOVABLE), SN_GTBM_NONE);
    assert_int_equal(A(&p, 256, SN_CLASS_LONG), SN_GTBM_NONE);
    assert_int_equal(S(&p).extent, 4 * MiB);
    sn_gtbm_destroy(&p);
}

/* Holes of 3, 1, 2 and 2 MiB between live 1 MiB blocks, then the tail. */
static void holes_layout(sn_gtbm_pool *p, enum sn_gtbm_policy policy)
{
    assert_int_equal(sn_gtbm_init(p, 64 * MiB, policy), 0);
    static const uint64_t hole[] = {3, 1, 2, 2};
    uint64_t h[4];
    for (int i = 0; i < 4; i++) {
        h[i] = A(p, hole[i] * MiB, SN_CLASS_MOVABLE);
        A(p, MiB, SN_CLASS_MOVABLE);
    }
    for (int i = 0; i < 4; i++)
        F(p, h[i]);
    assert_int_equal(S(p).free_blocks, 5);
}

static void test_best_fit_choice(void **state)
{
    (void)state;
    sn_gtbm_pool p;
    holes_layout(&p, SN_GTBM_POLICY_BEST_FIT); /* holes at 0, 4, 6 and 9 MiB */
    assert_int_equal(A(&p, 2 * MiB, SN_CLASS_MOVABLE), 6 * MiB); /* smallest, lowest of equals */
    assert_int_equal(A(&p, 2 * MiB, SN_CLASS_MOVABLE), 9 * MiB);
    assert_int_equal(A(&p, MiB, SN_CLASS_MOVABLE), 4 * MiB);
    assert_int_equal(A(&p, 2 * MiB, SN_CLASS_MOVABLE), 0);     /* the 3 MiB hole */
    assert_int_equal(A(&p, 2 * MiB, SN_CLASS_MOVABLE), 12 * MiB); /* 1 MiB left there */
    assert_int_equal(A(&p, MiB, SN_CLASS_MOVABLE), 2 * MiB);
    sn_gtbm_destroy(&p);

    holes_layout(&p, SN_GTBM_POLICY_FIRST_FIT);
    assert_int_equal(A(&p, 2 * MiB, SN_CLASS_MOVABLE), 0); /* lowest that fits */
    assert_int_equal(A(&p, 2 * MiB, SN_CLASS_MOVABLE), 6 * MiB);
    assert_int_equal(A(&p, MiB, SN_CLASS_MOVABLE), 2 * MiB);
    assert_int_equal(A(&p, 3 * MiB, SN_CLASS_MOVABLE), 12 * MiB);
    sn_gtbm_destroy(&p);
}

/* Feature maps that grow from layer to layer, each followed by a tensor
 * held for longer: under best fit (and first fit) every held tensor lands
 * just above the feature map and pins the hole below it, too small for the
 * next one; GTBM keeps the held tensors at the top and reuses the bottom. */
static void fork_sequence(sn_gtbm_pool *p, uint64_t *failed_at)
{
    uint64_t sizes[] = {4, 5, 6};
    *failed_at = 0;
    for (int i = 0; i < 3; i++) {
        uint64_t x = sn_gtbm_alloc(p, sizes[i] * MiB, SN_CLASS_MOVABLE);
        uint64_t t = sn_gtbm_alloc(p, sizes[i] * MiB, SN_CLASS_TEMP);
        if (x == SN_GTBM_NONE || t == SN_GTBM_NONE) {
            *failed_at = (uint64_t)i + 1;
            return;
        }
        F(p, x);
    }
}

static void test_best_fit_fragments_gtbm_does_not(void **state)
{
    (void)state;
    sn_gtbm_pool p;
    uint64_t failed;
    static const enum sn_gtbm_policy single[] = {SN_GTBM_POLICY_BEST_FIT,
                                                 SN_GTBM_POLICY_FIRST_FIT};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(sn_gtbm_init(&p, GiB, single[i]), 0);
        fork_sequence(&p, &failed);
        assert_int_equal(failed, 0);
        sn_gtbm_stats s = S(&p);
        /* 4 | 4 | 5 | 5 | 6 | 6: the peak when the last held tensor came,
         * with the 4 and 5 MiB holes below it unusable */
        assert_int_equal(s.peak_extent, 30 * MiB);
        assert_int_equal(s.live_at_peak, 21 * MiB);
        assert_int_equal(s.frag_at_peak, 9 * MiB);
        assert_int_equal(s.extent, 30 * MiB);
        assert_int_equal(s.free_in_extent, 15 * MiB);
        sn_gtbm_destroy(&p);
    }
    assert_int_equal(sn_gtbm_init(&p, GiB, SN_GTBM_POLICY_GTBM), 0);
    fork_sequence(&p, &failed);
    assert_int_equal(failed, 0);
    sn_gtbm_stats s = S(&p);
    assert_int_equal(s.peak_extent, 21 * MiB);
    assert_int_equal(s.frag_at_peak, 0);
    assert_int_equal(s.extent, 15 * MiB);
    assert_int_equal(s.free_in_extent, 0);
    sn_gtbm_destroy(&p);

    /* The peaks are what a pool of that size needs: GTBM runs in 21 MiB,
     * best fit runs out at the third feature map. */
    assert_int_equal(sn_gtbm_init(&p, 21 * MiB, SN_GTBM_POLICY_GTBM), 0);
    fork_sequence(&p, &failed);
    assert_int_equal(failed, 0);
    sn_gtbm_destroy(&p);
    assert_int_equal(sn_gtbm_init(&p, 21 * MiB, SN_GTBM_POLICY_BEST_FIT), 0);
    fork_sequence(&p, &failed);
    assert_int_equal(failed, 3);
    sn_gtbm_destroy(&p);
}

static void test_free_errors(void **state)
{
    (void)state;
    sn_gtbm_pool p;
    assert_int_equal(sn_gtbm_init(&p, 16 * MiB, SN_GTBM_POLICY_GTBM), 0);
    uint64_t a = A(&p, MiB, SN_CLASS_MOVABLE);
    uint64_t b = A(&p, 2 * MiB, SN_CLASS_LONG);
    assert_int_equal(sn_gtbm_free(&p, a + 256), -1); /* inside a block */
    assert_int_equal(sn_gtbm_free(&p, 5 * MiB), -1); /* free space */
    F(&p, a);
    assert_int_equal(sn_gtbm_free(&p, a), -1); /* twice */
    sn_gtbm_stats s = S(&p);
    assert_int_equal(s.nfrees, 1);
    assert_int_equal(s.nallocs, 2);
    assert_int_equal(s.live_count, 1);
    assert_int_equal(s.live_bytes, 2 * MiB);
    assert_int_equal(sn_gtbm_size(&p, b), 2 * MiB);
    assert_int_equal(sn_gtbm_check(&p), 0);
    sn_gtbm_destroy(&p);
}

static void test_classify(void **state)
{
    (void)state;
    const uint64_t big = 64 * MiB;
    struct {
        sn_gtbm_facts f;
        enum sn_gtbm_class want;
    } cases[] = {
        {{.size = big, .before_iteration = 1, .consumers = 1}, SN_CLASS_LONG},   /* weights */
        {{.size = big, .crosses_iteration = 1, .consumers = 1}, SN_CLASS_LONG},  /* momentum */
        {{.size = SN_GTBM_SMALL - 1, .consumers = 1}, SN_CLASS_LONG},            /* small */
        {{.size = SN_GTBM_SMALL - 1, .consumers = 3}, SN_CLASS_LONG},
        {{.size = big, .consumers = 2}, SN_CLASS_TEMP},                          /* fork */
        {{.size = big, .consumers = 1, .fork_join = 1}, SN_CLASS_TEMP},          /* join */
        {{.size = big, .consumers = 1, .accumulated = 1}, SN_CLASS_TEMP},        /* summed grad */
        {{.size = big, .consumers = 1}, SN_CLASS_MOVABLE},                       /* feature map */
        {{.size = big}, SN_CLASS_MOVABLE},                                       /* unknown */
        {{.size = SN_GTBM_SMALL, .consumers = 1}, SN_CLASS_MOVABLE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(sn_gtbm_classify(&cases[i].f), cases[i].want);
}

static void test_names(void **state)
{
    (void)state;
    for (int i = 0; i < SN_GTBM_POLICY_COUNT; i++)
        assert_int_equal(sn_gtbm_policy_parse(sn_gtbm_policy_name((enum sn_gtbm_policy)i)), i);
    assert_int_equal(sn_gtbm_policy_parse("best-fit"), SN_GTBM_POLICY_BEST_FIT);
    assert_int_equal(sn_gtbm_policy_parse("worst-fit"), -1);
    assert_string_equal(sn_gtbm_class_name(SN_CLASS_LONG), "long");
    assert_string_equal(sn_gtbm_class_name(SN_CLASS_MOVABLE), "movable");
    assert_string_equal(sn_gtbm_class_name(SN_CLASS_TEMP), "temp");
}

/* 100,000 single-unit blocks, every other one freed: 50,000 holes that the
 * next 50,000 requests (two units each) cannot use. Every request walks
 * past all the holes if the free list is scanned; the treaps do not. */
static void test_many_holes(void **state)
{
    (void)state;
    enum { N = 100000 };
    static uint64_t off[N];
    static const enum sn_gtbm_policy all[] = {SN_GTBM_POLICY_BEST_FIT, SN_GTBM_POLICY_FIRST_FIT,
                                              SN_GTBM_POLICY_GTBM};
    for (int k = 0; k < 3; k++) {
        sn_gtbm_pool p;
        assert_int_equal(sn_gtbm_init(&p, GiB, all[k]), 0);
        for (int i = 0; i < N; i++) {
            off[i] = sn_gtbm_alloc(&p, 256, SN_CLASS_MOVABLE);
            assert_int_equal(off[i], (uint64_t)i * 256);
        }
        for (int i = 0; i < N; i += 2)
            assert_int_equal(sn_gtbm_free(&p, off[i]), 0);
        for (int i = 0; i < N / 2; i++)
            assert_int_equal(sn_gtbm_alloc(&p, 512, SN_CLASS_MOVABLE),
                             (uint64_t)N * 256 + (uint64_t)i * 512);
        sn_gtbm_stats s = S(&p);
        assert_int_equal(s.peak_extent, (uint64_t)N * 256 + (uint64_t)N / 2 * 512);
        assert_int_equal(s.frag_at_peak, (uint64_t)N / 2 * 256);
        assert_int_equal(s.free_blocks, N / 2 + 1);
        assert_int_equal(sn_gtbm_check(&p), 0);
        /* the holes still take what fits */
        assert_int_equal(sn_gtbm_alloc(&p, 200, SN_CLASS_MOVABLE), 0);
        sn_gtbm_destroy(&p);
    }
}

/* Random sizes, classes and lifetimes; the invariants hold after every
 * step and every block comes back. */
static void test_random(void **state)
{
    (void)state;
    enum { OPS = 100000, MAXLIVE = 3000 };
    static uint64_t live[MAXLIVE];
    static uint64_t want[MAXLIVE];
    for (int pol = 0; pol < SN_GTBM_POLICY_COUNT; pol++) {
        sn_gtbm_pool p;
        const uint64_t C = 2 * GiB;
        assert_int_equal(sn_gtbm_init(&p, C, (enum sn_gtbm_policy)pol), 0);
        int n = 0;
        uint64_t held = 0, fails = 0;
        srand(11 + pol);
        for (int op = 0; op < OPS; op++) {
            if (n < MAXLIVE && (n == 0 || rand() % 3 != 0)) {
                /* mostly small, some feature-map sized */
                uint64_t size = rand() % 8 == 0 ? (uint64_t)(rand() % 2048) * 1024 + 1
                                                : (uint64_t)(rand() % 4096) + 1;
                enum sn_gtbm_class c = (enum sn_gtbm_class)(rand() % SN_CLASS_COUNT);
                uint64_t o = sn_gtbm_alloc(&p, size, c);
                if (o == SN_GTBM_NONE) {
                    fails++;
                } else {
                    assert_int_equal(o % SN_GTBM_ALIGN, 0);
                    if (pol == SN_GTBM_POLICY_GTBM)
                        assert_true((c == SN_CLASS_LONG) == (o >= C));
                    else
                        assert_true(o < C);
                    live[n] = o;
                    want[n] = (size + SN_GTBM_ALIGN - 1) / SN_GTBM_ALIGN * SN_GTBM_ALIGN;
                    held += want[n];
                    n++;
                }
            } else {
                int i = rand() % n;
                assert_int_equal(sn_gtbm_size(&p, live[i]), want[i]);
                assert_int_equal(sn_gtbm_free(&p, live[i]), 0);
                held -= want[i];
                live[i] = live[--n];
                want[i] = want[n];
            }
            if (op % 997 == 0)
                assert_int_equal(sn_gtbm_check(&p), 0);
            assert_int_equal(S(&p).live_bytes, held);
        }
        assert_int_equal(fails, 0); /* 2 GiB holds 3000 blocks, one in eight up to 2 MiB */
        while (n > 0)
            assert_int_equal(sn_gtbm_free(&p, live[--n]), 0);
        sn_gtbm_stats s = S(&p);
        assert_int_equal(s.live_bytes, 0);
        assert_int_equal(s.extent, s.incremental);
        assert_true(s.peak_extent >= s.live_at_peak);
        assert_int_equal(sn_gtbm_check(&p), 0);
        sn_gtbm_destroy(&p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init),
        cmocka_unit_test(test_alignment),
        cmocka_unit_test(test_gtbm_ends),
        cmocka_unit_test(test_incremental),
        cmocka_unit_test(test_single_list_ignores_class),
        cmocka_unit_test(test_coalesce),
        cmocka_unit_test(test_full),
        cmocka_unit_test(test_best_fit_choice),
        cmocka_unit_test(test_best_fit_fragments_gtbm_does_not),
        cmocka_unit_test(test_free_errors),
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_many_holes),
        cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
