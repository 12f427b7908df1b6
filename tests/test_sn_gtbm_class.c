/*
 * test_sn_gtbm_class.c — the one GTBM classifier (common/sn_gtbm_class.c)
 * that the planner and the allocator share: each rule, the order in which
 * they apply, and the facts the planner derives from a tensor's role. It
 * links nothing but that object: common/ stands on its own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/sn_gtbm_class.h"

#define BIG ((uint64_t)64 << 20)

static enum sn_gtbm_class cls(sn_gtbm_facts f)
{
    return sn_gtbm_classify(&f);
}

static void test_long(void **state)
{
    (void)state;
    assert_int_equal(cls((sn_gtbm_facts){.size = BIG, .before_iteration = 1}), SN_CLASS_LONG);
    assert_int_equal(cls((sn_gtbm_facts){.size = BIG, .crosses_iteration = 1}), SN_CLASS_LONG);
    assert_int_equal(cls((sn_gtbm_facts){.size = SN_GTBM_SMALL - 1}), SN_CLASS_LONG);
    assert_int_equal(cls((sn_gtbm_facts){.size = 0}), SN_CLASS_LONG);
    /* the threshold itself is main space */
    assert_int_equal(cls((sn_gtbm_facts){.size = SN_GTBM_SMALL}), SN_CLASS_MOVABLE);
}

static void test_temp(void **state)
{
    (void)state;
    assert_int_equal(cls((sn_gtbm_facts){.size = BIG, .consumers = 2}), SN_CLASS_TEMP);
    assert_int_equal(cls((sn_gtbm_facts){.size = BIG, .consumers = 1, .fork_join = 1}), SN_CLASS_TEMP);
    assert_int_equal(cls((sn_gtbm_facts){.size = BIG, .accumulated = 1}), SN_CLASS_TEMP);
    assert_int_equal(cls((sn_gtbm_facts){.size = BIG, .consumers = 1}), SN_CLASS_MOVABLE);
    assert_int_equal(cls((sn_gtbm_facts){.size = BIG}), SN_CLASS_MOVABLE);
}

/* Living long or being small wins over everything; scratch wins over what
 * would make a tensor TEMP. */
static void test_order(void **state)
{
    (void)state;
    assert_int_equal(cls((sn_gtbm_facts){.size = BIG, .crosses_iteration = 1, .scratch = 1}), SN_CLASS_LONG);
    assert_int_equal(cls((sn_gtbm_facts){.size = SN_GTBM_SMALL / 2, .scratch = 1}), SN_CLASS_LONG);
    assert_int_equal(cls((sn_gtbm_facts){.size = SN_GTBM_SMALL / 2, .consumers = 5, .accumulated = 1}),
                     SN_CLASS_LONG);
    assert_int_equal(cls((sn_gtbm_facts){.size = BIG, .scratch = 1, .consumers = 3, .accumulated = 1,
                                         .fork_join = 1}),
                     SN_CLASS_MOVABLE);
    assert_int_equal(cls((sn_gtbm_facts){.size = BIG, .before_iteration = 1, .consumers = 3}), SN_CLASS_LONG);
}

/* The facts the planner gives for each role (policy/sn_policy_util.c):
 * its plans' classes are what test_sn_policies checks on whole models. */
static void test_planner_roles(void **state)
{
    (void)state;
    /* a weight, pinned memory, optimizer state: lives throughout */
    assert_int_equal(cls((sn_gtbm_facts){.size = BIG, .crosses_iteration = 1, .consumers = 4}), SN_CLASS_LONG);
    /* a feature map read by two layers (a fork) */
    assert_int_equal(cls((sn_gtbm_facts){.size = BIG, .consumers = 2}), SN_CLASS_TEMP);
    /* a gradient added into by two layers, read by one */
    assert_int_equal(cls((sn_gtbm_facts){.size = BIG, .consumers = 1, .accumulated = 1}), SN_CLASS_TEMP);
    /* a workspace several steps use */
    assert_int_equal(cls((sn_gtbm_facts){.size = BIG, .scratch = 1, .consumers = 7}), SN_CLASS_MOVABLE);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(sn_gtbm_class_name(SN_CLASS_LONG), "long");
    assert_string_equal(sn_gtbm_class_name(SN_CLASS_MOVABLE), "movable");
    assert_string_equal(sn_gtbm_class_name(SN_CLASS_TEMP), "temp");
    assert_string_equal(sn_gtbm_class_name(SN_CLASS_COUNT), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_long),          cmocka_unit_test(test_temp),
        cmocka_unit_test(test_order),         cmocka_unit_test(test_planner_roles),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
