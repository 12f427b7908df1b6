/*
 * test_sn_registry.c — the allocation registry (exact and interior lookups,
 * removal, stale overlapping entries, many allocations in random order) and
 * the extent arithmetic the wrappers describe calls with, and the resolution
 * of a call's ranges into accesses, whose every limit must make the call
 * opaque rather than drop an access, and the per-thread memo of
 * resolutions, which must never outlive a change to the registry.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "common/sn_call.h"
#include "core/sn_access.h"
#include "core/sn_registry.h"

static void test_lookup(void **state)
{
    (void)state;
    sn_registry r;
    sn_reg_init(&r);
    sn_alloc *a = sn_reg_add_locked(&r, 0x10000, 0x1000, SN_KIND_DEVICE, SN_OWNER_FRAMEWORK, 0);
    sn_alloc *b = sn_reg_add_locked(&r, 0x20000, 0x100, SN_KIND_DEVICE, SN_OWNER_CUDNN, 1);
    sn_alloc *h = sn_reg_add_locked(&r, 0x8000, 0x10, SN_KIND_HOST, SN_OWNER_FRAMEWORK, 0);
    assert_non_null(a);
    assert_non_null(b);
    assert_ptr_equal(sn_reg_find_locked(&r, 0x10000), a);
    assert_ptr_equal(sn_reg_find_locked(&r, 0x10fff), a);
    assert_null(sn_reg_find_locked(&r, 0x11000));
    assert_null(sn_reg_find_locked(&r, 0xffff));
    assert_ptr_equal(sn_reg_find_locked(&r, 0x200ff), b);
    assert_ptr_equal(sn_reg_find_locked(&r, 0x8004), h);
    assert_ptr_equal(sn_reg_exact_locked(&r, 0x20000, SN_KIND_ANY_DEVICE), b);
    assert_null(sn_reg_exact_locked(&r, 0x20010, SN_KIND_ANY_DEVICE));
    assert_null(sn_reg_exact_locked(&r, 0x8000, SN_KIND_ANY_DEVICE));

    sn_alloc *hits[4];
    assert_int_equal(sn_reg_overlapping_locked(&r, 0x10800, 0x10000, hits, 4), 2);
    assert_ptr_equal(hits[0], a);
    assert_ptr_equal(hits[1], b);
    assert_int_equal(sn_reg_overlapping_locked(&r, 0x11000, 0x100, hits, 4), 0);

    sn_reg_remove_locked(&r, a);
    sn_reg_release(a);
    assert_null(sn_reg_find_locked(&r, 0x10010));
    sn_reg_destroy(&r);
}

static int stale_count;
static void on_stale(sn_alloc *a, void *ctx)
{
    (void)a;
    (void)ctx;
    stale_count++;
}

static void test_stale_overlap(void **state)
{
    (void)state;
    sn_registry r;
    sn_reg_init(&r);
    r.on_stale = on_stale;
    sn_reg_add_locked(&r, 0x1000, 0x100, SN_KIND_DEVICE, 1, 0);
    sn_reg_add_locked(&r, 0x1100, 0x100, SN_KIND_DEVICE, 1, 0);
    sn_reg_add_locked(&r, 0x1300, 0x100, SN_KIND_DEVICE, 1, 0);
    /* A new allocation over the first two: they were freed unseen. */
    sn_alloc *n = sn_reg_add_locked(&r, 0x1080, 0x100, SN_KIND_DEVICE, 1, 0);
    assert_int_equal(stale_count, 2);
    assert_int_equal(r.count, 2);
    assert_ptr_equal(sn_reg_find_locked(&r, 0x1000 + 0x90), n);
    assert_null(sn_reg_find_locked(&r, 0x1000));
    sn_reg_destroy(&r);
}

static void test_many_random(void **state)
{
    (void)state;
    enum { N = 4000 };
    sn_registry r;
    sn_reg_init(&r);
    static uintptr_t base[N];
    static int live[N];
    srand(7);
    for (int i = 0; i < N; i++)
        base[i] = 0x100000 + (uintptr_t)i * 0x1000;
    /* Insert in a shuffled order, remove every third, check everything. */
    static int order[N];
    for (int i = 0; i < N; i++)
        order[i] = i;
    for (int i = N - 1; i > 0; i--) {
        int j = rand() % (i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int k = 0; k < N; k++) {
        int i = order[k];
        assert_non_null(sn_reg_add_locked(&r, base[i], 0x800, SN_KIND_DEVICE, 1, 0));
        live[i] = 1;
    }
    for (int i = 0; i < N; i += 3) {
        sn_alloc *a = sn_reg_exact_locked(&r, base[i], SN_KIND_ANY);
        assert_non_null(a);
        sn_reg_remove_locked(&r, a);
        sn_reg_release(a);
        live[i] = 0;
    }
    for (int i = 0; i < N; i++) {
        sn_alloc *a = sn_reg_find_locked(&r, base[i] + 0x7ff);
        if (live[i]) {
            assert_non_null(a);
            assert_true(a->base == base[i]);
        } else {
            assert_null(a);
        }
        assert_null(sn_reg_find_locked(&r, base[i] + 0x800));
    }
    for (size_t i = 1; i < r.count; i++)
        assert_true(r.sorted[i - 1]->base < r.sorted[i]->base);
    sn_reg_destroy(&r);
}

static void test_physical(void **state)
{
    (void)state;
    sn_registry r;
    sn_reg_init(&r);
    assert_int_equal(sn_reg_phys_add_locked(&r, 42, 2 << 20, SN_OWNER_DRIVER, 0), 0);
    assert_int_equal(sn_reg_phys_remove_locked(&r, 42), 0);
    assert_int_equal(sn_reg_phys_remove_locked(&r, 42), -1);
    sn_reg_destroy(&r);
}

static void test_extents(void **state)
{
    (void)state;
    int dim[4] = {2, 3, 4, 5}, packed[4] = {60, 20, 5, 1};
    assert_true(sn_extent_strided(4, dim, packed, 4) == 120 * 4);
    assert_true(sn_extent_is_dense(4, dim, packed));
    /* A channel slice of a concatenated tensor: holes between images. */
    int view[4] = {120, 20, 5, 1};
    assert_true(sn_extent_strided(4, dim, view, 4) == (120 + 59 + 1) * 4);
    assert_false(sn_extent_is_dense(4, dim, view));
    int zero[4] = {0, 3, 4, 5};
    assert_true(sn_extent_strided(4, zero, packed, 4) == 0);
    assert_true(sn_extent_matrix(3, 4, 5, 4) == (5 * 3 + 3) * 4);
    assert_true(sn_extent_matrix(3, 4, 2, 4) == 0); /* ld < rows: invalid */
    assert_true(sn_extent_matrix(1, 1, 1, 4) == 4);
    assert_true(sn_extent_vector(10, 1, 4) == 40);
    assert_true(sn_extent_vector(10, -2, 4) == (9 * 2 + 1) * 4);
    assert_true(sn_extent_vector(10, 0, 4) == 0);
    assert_true(sn_extent_vector(0, 1, 4) == 0);
}

static void test_call_ranges(void **state)
{
    (void)state;
    sn_call c;
    sn_call_init(&c, 0, SN_OP_GEMM, 0, NULL);
    sn_call_range(&c, NULL, 16, SN_READ);
    sn_call_range(&c, (void *)0x100, 0, SN_READ);
    assert_int_equal(c.nranges, 0);
    /* past the inline ranges a call spills to the heap, in order, and
     * stays transparent however long it gets */
    int total = SN_CALL_INLINE_RANGES + 200;
    for (int i = 0; i < total; i++)
        sn_call_range(&c, (void *)(uintptr_t)(0x1000 * (i + 1)), 8 + (unsigned)i, SN_WRITE);
    assert_int_equal(c.nranges, total);
    assert_false(c.flags & SN_CALL_OPAQUE);
    assert_non_null(c.spill);
    for (int i = 0; i < total; i++) {
        const sn_range *r = sn_call_range_get(&c, i);
        assert_true(r->addr == (uintptr_t)(0x1000 * (i + 1)));
        assert_true(r->bytes == 8 + (unsigned)i);
        assert_int_equal(r->mode, SN_WRITE);
    }
    sn_call_release(&c);
    assert_null(c.spill);
    assert_int_equal(c.nranges, SN_CALL_INLINE_RANGES);
    int d[7] = {1, 2, 3, 4, 5, 6, 7};
    sn_call_shape(&c, 7, d);
    assert_int_equal(c.shape[0].nd, SN_SHAPE_MAX_DIMS);
    assert_true(sn_hash_mix(0, 1) != sn_hash_mix(0, 2));
}

/* n allocations of 0x1000 bytes back to back from 0x100000, each with a
 * tracer id (trace_id). */
static void add_block(sn_registry *r, int n)
{
    for (int i = 0; i < n; i++) {
        sn_alloc *a = sn_reg_add_locked(r, 0x100000 + 0x1000 * (uintptr_t)i, 0x1000, SN_KIND_MAPPING,
                                        SN_OWNER_FRAMEWORK, 0);
        assert_non_null(a);
        a->trace_id = (uint32_t)i;
    }
}

static void test_access_complete(void **state)
{
    (void)state;
    sn_registry r;
    sn_reg_init(&r);
    add_block(&r, 3);
    sn_call c;
    sn_call_init(&c, 0, 0, 0, NULL);
    /* reads 0 and 1, overwrites all of 2, and a range nobody owns */
    sn_call_range(&c, (void *)0x100800, 0x1000, SN_READ);
    sn_call_range(&c, (void *)0x102000, 0x1000, SN_WRITE | SN_OVERWRITE);
    sn_call_range(&c, (void *)0x900000, 0x10, SN_READ);
    sn_trace_access acc[8];
    sn_access_result res = sn_access_resolve_locked(&r, &c, acc, 8, NULL);
    assert_int_equal(res.nacc, 3);
    assert_false(res.incomplete);
    assert_int_equal(res.unknown, 1);
    assert_int_equal(acc[0].tensor, 0);
    assert_int_equal(acc[0].mode, SN_ACC_R);
    assert_int_equal(acc[2].tensor, 2);
    assert_int_equal(acc[2].mode, SN_ACC_W | SN_ACC_KILL);
    /* read through one range and overwritten through another: not dead */
    sn_call_range(&c, (void *)0x102000, 0x10, SN_READ);
    res = sn_access_resolve_locked(&r, &c, acc, 8, NULL);
    assert_int_equal(acc[2].mode, SN_ACC_R | SN_ACC_W);
    sn_reg_destroy(&r);
}

/* More ranges than a call record holds inline (a kernel with 130 pointer
 * parameters): every one is resolved, the call is not opaque. */
static void test_access_long_call(void **state)
{
    (void)state;
    enum { N = 130 };
    sn_registry r;
    sn_reg_init(&r);
    add_block(&r, N);
    SN_CALL_DECL(c);
    sn_call_init(&c, 0, 0, 0, NULL);
    for (int i = 0; i < N; i++)
        sn_call_range(&c, (void *)(0x100000 + 0x1000 * (uintptr_t)i), 0x1000,
                      i % 2 ? SN_READ : SN_WRITE | SN_OVERWRITE);
    assert_int_equal(c.nranges, N);
    assert_false(c.flags & SN_CALL_OPAQUE);
    sn_trace_access acc[2 * N];
    sn_access_result res = sn_access_resolve_locked(&r, &c, acc, 2 * N, NULL);
    assert_false(res.incomplete);
    assert_int_equal(res.unknown, 0);
    assert_int_equal(res.nacc, N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(acc[i].tensor, i);
        assert_int_equal(acc[i].mode, i % 2 ? SN_ACC_R : SN_ACC_W | SN_ACC_KILL);
    }
    /* a caller's array too small for them still makes it incomplete */
    assert_true(sn_access_resolve_locked(&r, &c, acc, N - 1, NULL).incomplete);
    sn_reg_destroy(&r);
}

/* One range over more allocations than are looked at (a copy across VMM
 * mappings that are contiguous in the address space). */
static void test_access_range_over_many_allocations(void **state)
{
    (void)state;
    sn_registry r;
    sn_reg_init(&r);
    add_block(&r, SN_ACCESS_MAX_PER_RANGE + 1);
    sn_call c;
    sn_call_init(&c, 0, 0, 0, NULL);
    sn_call_range(&c, (void *)0x100000, 0x1000 * SN_ACCESS_MAX_PER_RANGE, SN_READ);
    sn_trace_access acc[64];
    sn_access_result res = sn_access_resolve_locked(&r, &c, acc, 64, NULL);
    assert_int_equal(res.nacc, SN_ACCESS_MAX_PER_RANGE);
    assert_false(res.incomplete);
    c.nranges = 0;
    sn_call_range(&c, (void *)0x100000, 0x1000 * (SN_ACCESS_MAX_PER_RANGE + 1), SN_READ);
    res = sn_access_resolve_locked(&r, &c, acc, 64, NULL);
    assert_true(res.incomplete);
    sn_reg_destroy(&r);
}

/* More accesses than the caller's array holds. */
static void test_access_array_full(void **state)
{
    (void)state;
    sn_registry r;
    sn_reg_init(&r);
    add_block(&r, 5);
    sn_call c;
    sn_call_init(&c, 0, 0, 0, NULL);
    sn_call_range(&c, (void *)0x100000, 0x5000, SN_READ);
    sn_trace_access acc[5];
    assert_false(sn_access_resolve_locked(&r, &c, acc, 5, NULL).incomplete);
    sn_access_result res = sn_access_resolve_locked(&r, &c, acc, 4, NULL);
    assert_int_equal(res.nacc, 4);
    assert_true(res.incomplete);
    sn_reg_destroy(&r);
}

/* An allocation the tracer has no record of. */
static void test_access_allocation_without_record(void **state)
{
    (void)state;
    sn_registry r;
    sn_reg_init(&r);
    add_block(&r, 2);
    sn_reg_find_locked(&r, 0x101000)->trace_id = SN_NO_TRACE_ID;
    sn_call c;
    sn_call_init(&c, 0, 0, 0, NULL);
    sn_call_range(&c, (void *)0x100000, 0x10, SN_READ);
    sn_trace_access acc[4];
    assert_false(sn_access_resolve_locked(&r, &c, acc, 4, NULL).incomplete);
    sn_call_range(&c, (void *)0x101000, 0x10, SN_READ);
    sn_access_result res = sn_access_resolve_locked(&r, &c, acc, 4, NULL);
    assert_int_equal(res.nacc, 1);
    assert_true(res.incomplete);
    sn_reg_destroy(&r);
}

/* Manage mode's uses come from the same pass: the blocks of served
 * allocations (a record's first word), a whole overwrite marked, the part
 * of the allocation each range covers (and whether every byte of it is
 * written without being read), foreign devices' blocks in a list of their
 * own (one other device), unserved memory left out, overflow made
 * "everything". */
static void test_access_arena_uses(void **state)
{
    (void)state;
    sn_registry r;
    sn_reg_init(&r);
    add_block(&r, 3);
    void *blocks[3] = {(void *)0xb0, (void *)0xb1, (void *)0xb2};
    sn_reg_find_locked(&r, 0x100000)->managed = (sn_arena_alloc *)&blocks[0];
    sn_reg_find_locked(&r, 0x101000)->managed = (sn_arena_alloc *)&blocks[1];
    sn_reg_find_locked(&r, 0x102000)->dev = 1;
    sn_reg_find_locked(&r, 0x102000)->managed = (sn_arena_alloc *)&blocks[2];
    sn_call c;
    sn_call_init(&c, 0, 0, 0, NULL);
    sn_call_range(&c, (void *)0x100000, 0x1000, SN_WRITE | SN_OVERWRITE);
    sn_call_range(&c, (void *)0x101800, 0x1000, SN_READ);
    sn_trace_access acc[8];
    sn_arena_use use[4];
    sn_arena_use peer[2];
    sn_access_uses u = {use, 4, 0, 0, -1, 0, 0, peer, 2, 0, 0, 0};
    sn_access_resolve_locked(&r, &c, acc, 8, &u);
    assert_int_equal(u.n, 2);
    assert_false(u.all);
    /* the read reaches into device 1's allocation: a peer use */
    assert_int_equal(u.peer_dev, 1);
    assert_int_equal(u.npeer, 1);
    assert_int_equal(peer[0].mode, SN_READ);
    assert_int_equal(peer[0].off, 0);
    assert_int_equal(peer[0].len, 0x800);
    assert_ptr_equal(use[0].block, blocks[0]);
    assert_int_equal(use[0].mode, SN_WRITE | SN_OVERWRITE | SN_ARENA_DEFINES);
    assert_int_equal(use[0].off, 0);
    assert_int_equal(use[0].len, 0x1000);
    assert_ptr_equal(use[1].block, blocks[1]);
    assert_int_equal(use[1].mode, SN_READ);
    assert_int_equal(use[1].off, 0x800);
    assert_int_equal(use[1].len, 0x800);
    /* a partial overwrite is a write, not an overwrite, of the allocation;
     * the part it covers is written whole */
    sn_call_init(&c, 0, 0, 0, NULL);
    sn_call_range(&c, (void *)0x100800, 0x100, SN_WRITE | SN_OVERWRITE);
    u.n = 0;
    sn_access_resolve_locked(&r, &c, acc, 8, &u);
    assert_int_equal(u.n, 1);
    assert_int_equal(use[0].mode, SN_WRITE | SN_ARENA_DEFINES);
    assert_int_equal(use[0].off, 0x800);
    assert_int_equal(use[0].len, 0x100);
    /* a write that reads (beta != 0) defines nothing */
    sn_call_init(&c, 0, 0, 0, NULL);
    sn_call_range(&c, (void *)0x100800, 0x100, SN_WRITE | SN_READ);
    u.n = 0;
    sn_access_resolve_locked(&r, &c, acc, 8, &u);
    assert_int_equal(use[0].mode, SN_WRITE | SN_READ);
    /* no room for every use: the call needs everything */
    sn_call_init(&c, 0, 0, 0, NULL);
    sn_call_range(&c, (void *)0x100000, 0x2000, SN_READ);
    u.cap = 1;
    u.n = 0;
    sn_access_resolve_locked(&r, &c, acc, 8, &u);
    assert_true(u.all);
    /* a peer copy: device 1's block goes to the peer list, read */
    sn_call_init(&c, 0, 0, 0, NULL);
    sn_call_range(&c, (void *)0x100000, 0x1000, SN_WRITE | SN_OVERWRITE);
    sn_call_range(&c, (void *)0x102000, 0x1000, SN_READ);
    u.cap = 4;
    u.n = 0;
    u.all = 0;
    u.npeer = 0;
    u.peer_dev = -1;
    sn_access_resolve_locked(&r, &c, acc, 8, &u);
    assert_int_equal(u.n, 1);
    assert_int_equal(u.peer_dev, 1);
    assert_int_equal(u.npeer, 1);
    assert_ptr_equal(peer[0].block, blocks[2]);
    assert_int_equal(peer[0].mode, SN_READ);
    assert_false(u.peer_all);
    assert_false(u.more_devices);
    /* memory of a third device is not followed, and said so */
    sn_reg_find_locked(&r, 0x101000)->dev = 2;
    u.n = 0;
    u.npeer = 0;
    u.peer_dev = -1;
    sn_call_init(&c, 0, 0, 0, NULL);
    sn_call_range(&c, (void *)0x101000, 0x2000, SN_READ);
    sn_access_resolve_locked(&r, &c, acc, 8, &u);
    assert_int_equal(u.peer_dev, 2);
    assert_int_equal(u.npeer, 1);
    assert_true(u.more_devices);
    sn_reg_destroy(&r);
}

/* Uses of one block over the same bytes merge into one with every way it
 * is used (two allocations of one shared block, each used whole); uses of
 * different bytes stay apart, so that what a call reads and what it
 * defines are told apart (dropped contents, sn_predict.h). */
static void test_access_uses_merged(void **state)
{
    (void)state;
    sn_registry r;
    sn_reg_init(&r);
    add_block(&r, 3);
    void *blocks[2] = {(void *)0xb0, (void *)0xb1};
    sn_reg_find_locked(&r, 0x100000)->managed = (sn_arena_alloc *)&blocks[0];
    sn_reg_find_locked(&r, 0x101000)->managed = (sn_arena_alloc *)&blocks[1];
    sn_reg_find_locked(&r, 0x102000)->managed = (sn_arena_alloc *)&blocks[1]; /* same block */
    sn_call c;
    sn_call_init(&c, 0, 0, 0, NULL);
    sn_call_range(&c, (void *)0x100000, 0x800, SN_READ);
    sn_call_range(&c, (void *)0x100000, 0x1000, SN_WRITE | SN_OVERWRITE);
    sn_call_range(&c, (void *)0x101000, 0x1000, SN_READ);
    sn_call_range(&c, (void *)0x102000, 0x1000, SN_WRITE | SN_OVERWRITE);
    sn_trace_access acc[8];
    sn_arena_use use[8], peer[2];
    sn_access_uses u = {use, 8, 0, 0, -1, 0, 0, peer, 2, 0, 0, 0};
    sn_access_result res = sn_access_resolve_locked(&r, &c, acc, 8, &u);
    assert_int_equal(res.nacc, 3);
    assert_int_equal(u.n, 3);
    assert_false(u.all);
    assert_ptr_equal(use[0].block, blocks[0]);
    assert_int_equal(use[0].mode, SN_READ);
    assert_int_equal(use[0].len, 0x800);
    assert_ptr_equal(use[1].block, blocks[0]);
    assert_int_equal(use[1].mode, SN_WRITE | SN_OVERWRITE | SN_ARENA_DEFINES);
    assert_int_equal(use[1].len, 0x1000);
    assert_ptr_equal(use[2].block, blocks[1]);
    assert_int_equal(use[2].mode, SN_READ | SN_WRITE | SN_OVERWRITE | SN_ARENA_DEFINES);
    /* one block's uses fit where two would not */
    sn_call_init(&c, 0, 0, 0, NULL);
    sn_call_range(&c, (void *)0x101000, 0x2000, SN_READ);
    u.cap = 1;
    u.n = 0;
    sn_access_resolve_locked(&r, &c, acc, 8, &u);
    assert_false(u.all);
    assert_int_equal(u.n, 1);
    sn_reg_destroy(&r);
}

/* The per-thread memo: a call with the same device, flags and ranges is
 * recalled with the same result while the registry is unchanged, and
 * only then. */
/* The memo's two calls with the test's locals (sn_access_lookup holds
 * them in libsn). Not inlined: a lookup record per call, in scope for the
 * whole call (inlined a dozen times, GCC 12's AddressSanitizer reported a
 * use after scope of one inlined copy inside another's call). */
static __attribute__((noinline)) int recall(const sn_registry *r, const sn_call *c, int cap, sn_access_result *res,
                  const sn_trace_access **got, sn_access_uses *u, uint64_t *gen, sn_access_memo_ref *ref)
{
    sn_access_lookup l = {.cap = cap, .uses = u};
    int hit = sn_access_recall(r, c, &l);
    *ref = l.ref;
    if (hit) {
        *res = l.res;
        *got = l.accs;
        *gen = l.gen;
    }
    return hit;
}

static __attribute__((noinline)) void remember(const sn_access_memo_ref *ref, const sn_call *c, uint64_t gen,
                                               sn_trace_access *acc, int cap, const sn_access_result *res,
                                               sn_access_uses *u)
{
    const sn_access_lookup l = {.cap = cap, .acc = acc, .accs = acc, .res = *res, .uses = u, .ref = *ref};
    sn_access_remember(c, gen, &l);
}

static void test_access_memo(void **state)
{
    (void)state;
    sn_registry r;
    sn_reg_init(&r);
    add_block(&r, 3);
    void *blocks[3] = {(void *)0xc0, (void *)0xc1, (void *)0xc2};
    for (int i = 0; i < 3; i++)
        sn_reg_find_locked(&r, 0x100000 + 0x1000 * (uintptr_t)i)->managed = (sn_arena_alloc *)&blocks[i];
    sn_call c;
    sn_call_init(&c, 0, 0, 0, NULL);
    sn_call_range(&c, (void *)0x100800, 0x1000, SN_READ);
    sn_call_range(&c, (void *)0x102000, 0x1000, SN_WRITE | SN_OVERWRITE);
    sn_trace_access acc[8];
    const sn_trace_access *got = NULL;
    sn_arena_use use[8], peer[2];
    sn_access_uses u = {use, 8, 0, 0, -1, 0, 0, peer, 2, 0, 0, 0};
    sn_access_result res, back;
    sn_access_memo_ref ref;
    uint64_t gen = 0;
    /* a registry this thread has not seen before: nothing to recall, and
     * nothing worth remembering yet */
    assert_false(recall(&r, &c, 8, &back, &got, &u, &gen, &ref));
    assert_false(ref.keep);
    res = sn_access_resolve_locked(&r, &c, acc, 8, &u);
    assert_int_equal(res.nacc, 3);
    assert_int_equal(u.n, 3);
    remember(&ref, &c, r.gen, acc, 8, &res, &u);
    assert_false(recall(&r, &c, 8, &back, &got, &u, &gen, &ref));
    /* unchanged since: remembered, and recalled */
    assert_true(ref.keep);
    assert_true(ref.key == sn_access_key(&c));
    remember(&ref, &c, r.gen, acc, 8, &res, &u);

    sn_access_uses again = {use, 8, 0, 0, -1, 0, 0, peer, 2, 0, 0, 0};
    assert_true(recall(&r, &c, 8, &back, &got, &again, &gen, &ref));
    assert_true(gen == r.gen);
    assert_int_equal(back.nacc, 3);
    assert_int_equal(back.incomplete, res.incomplete);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(got[i].tensor, acc[i].tensor);
        assert_int_equal(got[i].mode, acc[i].mode);
    }
    assert_int_equal(again.n, 3);
    assert_false(again.all);
    assert_ptr_equal(again.use[0].block, blocks[0]);
    assert_ptr_equal(again.use[2].block, blocks[2]);
    assert_int_equal(again.use[2].mode, SN_WRITE | SN_OVERWRITE | SN_ARENA_DEFINES);

    /* another mode, another length, an opaque call, no uses asked, another
     * acc capacity: not the call remembered */
    sn_call d = c;
    d.range[1].mode = SN_WRITE;
    assert_false(recall(&r, &d, 8, &back, &got, &again, &gen, &ref));
    d = c;
    d.range[0].bytes++;
    assert_false(recall(&r, &d, 8, &back, &got, &again, &gen, &ref));
    d = c;
    d.flags |= SN_CALL_OPAQUE;
    assert_false(recall(&r, &d, 8, &back, &got, &again, &gen, &ref));
    assert_false(recall(&r, &c, 8, &back, &got, NULL, &gen, &ref));
    assert_false(recall(&r, &c, 4, &back, &got, &again, &gen, &ref));
    assert_true(recall(&r, &c, 8, &back, &got, &again, &gen, &ref));

    /* any change to the registry (here an allocation the call does not
     * touch) and the call is resolved afresh */
    sn_alloc *x = sn_reg_add_locked(&r, 0x200000, 0x1000, SN_KIND_DEVICE, SN_OWNER_FRAMEWORK, 0);
    assert_false(recall(&r, &c, 8, &back, &got, &again, &gen, &ref));
    assert_false(ref.keep);
    assert_false(recall(&r, &c, 8, &back, &got, &again, &gen, &ref));
    remember(&ref, &c, r.gen, acc, 8, &res, &u);
    assert_true(recall(&r, &c, 8, &back, &got, &again, &gen, &ref));
    /* a change between recall and remember: the resolution is not kept */
    assert_false(recall(&r, &d, 8, &back, &got, &again, &gen, &ref));
    sn_reg_remove_locked(&r, x);
    sn_reg_release(x);
    sn_access_resolve_locked(&r, &d, acc, 8, &u);
    remember(&ref, &d, r.gen, acc, 8, &res, &u);
    assert_false(recall(&r, &d, 8, &back, &got, &again, &gen, &ref));
    assert_false(recall(&r, &d, 8, &back, &got, &again, &gen, &ref));
    assert_false(recall(&r, &c, 8, &back, &got, &again, &gen, &ref));
    sn_reg_destroy(&r);

    /* nor is it taken for another registry's */
    sn_registry other;
    sn_reg_init(&other);
    add_block(&other, 3);
    assert_false(recall(&other, &c, 8, &back, &got, &again, &gen, &ref));
    assert_false(recall(&other, &c, 8, &back, &got, &again, &gen, &ref));
    sn_reg_destroy(&other);
}

/* An iteration longer than the memo's first table: the table grows, and
 * once it has, nearly every call of the iteration is recalled, each with
 * its own accesses. */
static void test_access_memo_grows(void **state)
{
    (void)state;
    enum { N = 1500, ROUNDS = 8 };
    sn_registry r;
    sn_reg_init(&r);
    for (int i = 0; i < N; i++) {
        sn_alloc *a = sn_reg_add_locked(&r, 0x10000000 + 0x10000 * (uintptr_t)i, 0x10000, SN_KIND_DEVICE,
                                        SN_OWNER_FRAMEWORK, 0);
        assert_non_null(a);
        a->trace_id = (uint32_t)i;
    }
    sn_trace_access acc[8];
    const sn_trace_access *got;
    sn_access_result res;
    sn_access_memo_ref ref;
    uint64_t gen;
    sn_call c;
    sn_call_init(&c, 0, 0, 0, NULL);
    recall(&r, &c, 8, &res, &got, NULL, &gen, &ref);
    int hits = 0;
    for (int round = 0; round < ROUNDS; round++) {
        hits = 0;
        for (int i = 0; i < N; i++) {
            sn_call_init(&c, 0, 0, 0, NULL);
            sn_call_range(&c, (void *)(0x10000000 + 0x10000 * (uintptr_t)i), 0x10000, SN_READ);
            if (recall(&r, &c, 8, &res, &got, NULL, &gen, &ref)) {
                assert_int_equal(res.nacc, 1);
                assert_int_equal(got[0].tensor, (uint32_t)i);
                hits++;
                continue;
            }
            res = sn_access_resolve_locked(&r, &c, acc, 8, NULL);
            remember(&ref, &c, r.gen, acc, 8, &res, NULL);
        }
    }
    /* the table grows while more than an eighth of the lookups miss for
     * want of a slot (a first table of 256 would recall 256 of them) */
    assert_true(hits >= N * 7 / 8);
    sn_reg_destroy(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup),      cmocka_unit_test(test_stale_overlap),
        cmocka_unit_test(test_many_random), cmocka_unit_test(test_physical),
        cmocka_unit_test(test_extents),     cmocka_unit_test(test_call_ranges),
        cmocka_unit_test(test_access_complete),
        cmocka_unit_test(test_access_arena_uses),
        cmocka_unit_test(test_access_uses_merged),
        cmocka_unit_test(test_access_memo),
        cmocka_unit_test(test_access_memo_grows),
        cmocka_unit_test(test_access_long_call),
        cmocka_unit_test(test_access_range_over_many_allocations),
        cmocka_unit_test(test_access_array_full),
        cmocka_unit_test(test_access_allocation_without_record),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
