/*
 * test_sn_predict.c — the arena's pure parts: predicted death of a block's
 * contents (allocator/sn_predict.h) and the hole list of a pinned host
 * slab (allocator/sn_stage.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "allocator/sn_predict.h"
#include "allocator/sn_stage.h"

/* A use as the arena reports it: whole overwrite, or a read of all of it
 * (checked against the contents before the call). */
static int use_whole(sn_predict *p, int64_t pos)
{
    return sn_predict_use(p, pos, 1, 0, 0, 0);
}

static int use_read(sn_predict *p, int64_t pos)
{
    return sn_predict_use(p, pos, 0, sn_predict_reads_dropped(p, 0, UINT64_MAX), 0, 0);
}

/* A call that reads [roff, roff + rlen) (rlen 0: nothing) and writes every
 * byte of [woff, woff + wlen) without reading it, not the whole block. */
static int use_part(sn_predict *p, int64_t pos, uint64_t roff, uint64_t rlen, uint64_t woff, uint64_t wlen)
{
    return sn_predict_use(p, pos, 0, sn_predict_reads_dropped(p, roff, rlen), woff, wlen);
}

/* One iteration of a block used at positions 10 (read), 20 (read), and
 * overwritten whole at 4 of the next iteration. */
static int iteration(sn_predict *p)
{
    int wrong = use_whole(p, 4);
    wrong |= use_read(p, 10);
    wrong |= use_read(p, 20);
    return wrong;
}

static void test_learns_after_agreeing_iterations(void **state)
{
    (void)state;
    sn_predict p;
    sn_predict_reset(&p);
    assert_false(iteration(&p));
    /* after the first iteration nothing is known of position 20 */
    assert_false(sn_predict_dead(&p));
    assert_false(iteration(&p)); /* 20 -> overwrite at 4: once */
    assert_false(sn_predict_dead(&p));
    assert_false(iteration(&p)); /* twice: predicted from now on */
    assert_true(sn_predict_dead(&p));
    /* not after a use at another position */
    use_whole(&p, 4);
    assert_false(sn_predict_dead(&p));
}

static void test_one_read_rules_the_position_out(void **state)
{
    (void)state;
    sn_predict p;
    sn_predict_reset(&p);
    for (int i = 0; i < 4; i++)
        iteration(&p);
    assert_true(sn_predict_dead(&p));
    /* an evaluation pass reads after 20 instead of overwriting */
    assert_false(use_read(&p, 7));
    for (int i = 0; i < 6; i++)
        iteration(&p);
    assert_false(sn_predict_dead(&p));
}

static void test_off_sequence_teaches_nothing(void **state)
{
    (void)state;
    sn_predict p;
    sn_predict_reset(&p);
    for (int i = 0; i < 5; i++) {
        use_whole(&p, -1);
        use_read(&p, -1);
    }
    assert_false(sn_predict_dead(&p));
    for (int i = 0; i < 3; i++)
        iteration(&p);
    assert_true(sn_predict_dead(&p));
    /* after a use off the sequence, no prediction */
    use_read(&p, -1);
    assert_false(sn_predict_dead(&p));
}

static void test_reading_dropped_contents_is_reported(void **state)
{
    (void)state;
    sn_predict p;
    sn_predict_reset(&p);
    for (int i = 0; i < 3; i++)
        iteration(&p);
    assert_true(sn_predict_dead(&p));
    sn_predict_dropped(&p);           /* evicted without write-back */
    assert_true(use_read(&p, 10));    /* read: the prediction was wrong */
    assert_false(p.dropped);          /* said once */
    /* a whole overwrite of dropped contents is what was predicted */
    for (int i = 0; i < 3; i++)
        iteration(&p);
    sn_predict_dropped(&p);
    assert_false(use_whole(&p, 4));
    assert_false(p.dropped);
    assert_false(use_read(&p, 10));
}

/* A smaller batch off the sequence: a call writes the front of a block
 * whose contents were dropped, then the front is read. Writing into
 * dropped contents is not reading them; reading what was written is fine;
 * reading the rest, never written since the drop, is the error. */
static void test_partial_write_of_dropped_contents(void **state)
{
    (void)state;
    sn_predict p;
    sn_predict_reset(&p);
    for (int i = 0; i < 3; i++)
        iteration(&p);
    sn_predict_dropped(&p);
    assert_false(use_part(&p, -1, 0, 0, 0, 4096));  /* writes the first half */
    assert_true(p.dropped);                          /* the rest is still gone */
    assert_false(sn_predict_reads_dropped(&p, 0, 4096));
    assert_false(sn_predict_reads_dropped(&p, 1024, 1024));
    assert_true(sn_predict_reads_dropped(&p, 4000, 200));
    assert_true(sn_predict_reads_dropped(&p, 0, UINT64_MAX));
    assert_false(use_part(&p, -1, 0, 4096, 0, 0));   /* the next layer reads it */
    /* a write next to it extends the part defined; one over it too */
    assert_false(use_part(&p, -1, 0, 0, 4096, 1024));
    assert_false(sn_predict_reads_dropped(&p, 0, 5120));
    assert_false(use_part(&p, -1, 0, 0, 2048, 4096));
    assert_false(sn_predict_reads_dropped(&p, 0, 6144));
    /* a write apart from it, smaller, is not taken for more than it is */
    assert_false(use_part(&p, -1, 0, 0, 9000, 100));
    assert_true(sn_predict_reads_dropped(&p, 6144, 100));
    /* reading past what was written: reported, once */
    assert_true(use_part(&p, -1, 0, 8192, 0, 0));
    assert_false(p.dropped);
    assert_false(use_read(&p, 10));
    /* a call that reads the undefined part and writes it in one go read it
     * first: reported */
    sn_predict_dropped(&p);
    assert_true(use_part(&p, -1, 0, 4096, 0, 4096));
    /* the next training iteration overwrites it whole: all defined again */
    sn_predict_dropped(&p);
    assert_false(use_part(&p, -1, 0, 0, 0, 2048));
    assert_false(use_whole(&p, 4));
    assert_false(p.dropped);
    assert_false(use_read(&p, 10));
}

/* A genuine read of dropped contents is still reported however the call
 * describes it: a read of part of them, or a call that cannot be seen
 * through (all of the block read). */
static void test_dropped_read_still_reported(void **state)
{
    (void)state;
    sn_predict p;
    sn_predict_reset(&p);
    sn_predict_dropped(&p);
    assert_true(use_part(&p, 12, 100, 8, 0, 0));
    sn_predict_dropped(&p);
    assert_true(use_read(&p, -1));
    /* nothing read (a write-only call that is not whole): not an error */
    sn_predict_dropped(&p);
    assert_false(use_part(&p, 12, 0, 0, 0, 0));
    assert_true(p.dropped);
    assert_true(use_part(&p, 13, 0, 1, 0, 0));
}

static void test_stage_holes(void **state)
{
    (void)state;
    sn_stage_slab sl = {0};
    sl.size = 1 << 20;
    assert_int_equal(sn_stage_slab_give(&sl, 0, 1 << 20), 0);
    uint64_t a, b, c;
    assert_int_equal(sn_stage_slab_take(&sl, 100, &a), 0);      /* rounded to 4 KiB */
    assert_int_equal(sn_stage_slab_take(&sl, 8192, &b), 0);
    assert_int_equal(sn_stage_slab_take(&sl, 4096, &c), 0);
    assert_int_equal(a, 0);
    assert_int_equal(b, 4096);
    assert_int_equal(c, 12288);
    /* freeing the middle, then its left neighbour, merges them */
    sn_stage_slab_give(&sl, b, 8192);
    sn_stage_slab_give(&sl, a, 100);
    assert_int_equal(sl.nholes, 2);
    assert_int_equal(sl.holes[0].off, 0);
    assert_int_equal(sl.holes[0].len, 12288);
    /* and the right one joins all three to the tail */
    sn_stage_slab_give(&sl, c, 4096);
    assert_int_equal(sl.nholes, 1);
    assert_int_equal(sl.holes[0].len, 1 << 20);
    /* more than the slab holds does not fit */
    assert_int_not_equal(sn_stage_slab_take(&sl, (1 << 20) + 1, &a), 0);
    free(sl.holes);
}

static void test_stage_limit(void **state)
{
    (void)state;
    sn_stage s = {0};
    s.limit = 3 * 4096;
    assert_int_equal(sn_stage_reserve_locked(&s, 4096), 0);
    assert_int_equal(sn_stage_reserve_locked(&s, 2 * 4096), 0);
    assert_int_not_equal(sn_stage_reserve_locked(&s, 1), 0);  /* rounded up: over the limit */
    sn_stage_unreserve_locked(&s, 4096);
    assert_int_equal(sn_stage_reserve_locked(&s, 1), 0);
    assert_int_equal(s.peak, 3 * 4096);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_learns_after_agreeing_iterations),
        cmocka_unit_test(test_one_read_rules_the_position_out),
        cmocka_unit_test(test_off_sequence_teaches_nothing),
        cmocka_unit_test(test_reading_dropped_contents_is_reported),
        cmocka_unit_test(test_partial_write_of_dropped_contents),
        cmocka_unit_test(test_dropped_read_still_reported),
        cmocka_unit_test(test_stage_holes),
        cmocka_unit_test(test_stage_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
