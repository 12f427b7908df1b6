/*
 * test_sn_mangle.c — sn_mangled_no_params (common/sn_mangle.h): the
 * mangled names that say "no parameters" are recognised, and every other
 * shape (parameters, pointers to void, template instances, qualifiers,
 * substitutions, extern "C" names, cut or malformed names) is left unknown.
 * Names as nvcc 13 registers kernels (Caffe's among them).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/sn_mangle.h"

static void test_no_params(void **state)
{
    (void)state;
    assert_int_equal(sn_mangled_no_params("_ZN5caffe16sync_conv_groupsEv"), 1);
    assert_int_equal(sn_mangled_no_params("_ZN5caffe18sync_deconv_groupsEv"), 1);
    assert_int_equal(sn_mangled_no_params("_Z5emptyv"), 1);
    assert_int_equal(sn_mangled_no_params("_ZN12_GLOBAL__N_15inner3twoEv"), 1);
}

/* What a framework kernel's name says it computes: Caffe's and Darknet's
 * names, mangled or not; a name saying nothing is no kind. */
static void test_kernel_kinds(void **state)
{
    (void)state;
    assert_int_equal(sn_kernel_kind("_ZN5caffe14MaxPoolForwardIfEEviPKT_iiiiiiiiiiiiPS1_PiS4_"), SN_KK_MAXPOOL);
    assert_int_equal(sn_kernel_kind("_ZN5caffe15AvePoolBackwardIfEEviPKT_iiiiiiiiiiiiPS1_"), SN_KK_AVGPOOL);
    assert_int_equal(sn_kernel_kind("forward_maxpool_layer_kernel"), SN_KK_MAXPOOL);
    assert_int_equal(sn_kernel_kind("_ZN5caffe14DropoutForwardIfEEviPKT_PKjjfPS1_"), SN_KK_DROPOUT);
    assert_int_equal(sn_kernel_kind("_ZN5caffe21SoftmaxLossForwardGPUIfEEviPKT_S3_PS1_iiibiS4_"), SN_KK_LOSS);
    assert_int_equal(sn_kernel_kind("_ZN5caffe11ReLUForwardIfEEviPKT_PS1_S1_"), SN_KK_RELU);
    assert_int_equal(sn_kernel_kind("_ZN5caffe16LRNComputeOutputIfEEviPKT_S3_S1_PS1_"), SN_KK_LRN);
    assert_string_equal(sn_kernel_kind_name(SN_KK_MAXPOOL), "maxpool");
    assert_int_equal(sn_kernel_kind("_ZN5caffe17im2col_gpu_kernelIfEEviPKT_iiiiiiiiiiiiPS1_"), SN_KK_NONE);
    assert_int_equal(sn_kernel_kind("_ZN5caffe16ScaleBiasForwardIfEEviPKT_S3_S3_iiPS1_"), SN_KK_SCALE);
    assert_int_equal(sn_kernel_kind("_ZN5caffe12ScaleForwardIfEEviPKT_S3_iiPS1_"), SN_KK_SCALE);
    assert_int_equal(sn_kernel_kind("scale_bias_kernel"), SN_KK_NONE);
    assert_int_equal(sn_kernel_kind(NULL), SN_KK_NONE);
    assert_string_equal(sn_kernel_kind_name(SN_KK_NONE), "kernel");
}

static void test_params_or_unknown(void **state)
{
    (void)state;
    /* parameters, a pointer to void among them */
    assert_int_equal(sn_mangled_no_params("_Z5emptyPv"), 0);
    assert_int_equal(sn_mangled_no_params("_Z1fiPv"), 0);
    assert_int_equal(sn_mangled_no_params("_ZN5caffe17im2col_gpu_kernelIfEEviPKT_iiiiiiiiiiiiPS1_"), 0);
    /* a template instance without parameters: the return type comes first;
     * left unknown rather than parsed */
    assert_int_equal(sn_mangled_no_params("_ZN5caffe4syncIfEEvv"), 0);
    assert_int_equal(sn_mangled_no_params("_Z4syncIfEvv"), 0);
    /* qualifiers, std:: substitutions, local names */
    assert_int_equal(sn_mangled_no_params("_ZNK1a1fEv"), 0);
    assert_int_equal(sn_mangled_no_params("_ZNSt3foo3barEv"), 0);
    assert_int_equal(sn_mangled_no_params("_ZZ4mainE1fv"), 0);
    /* extern "C" and other unmangled names carry no signature */
    assert_int_equal(sn_mangled_no_params("sync_conv_groups"), 0);
    assert_int_equal(sn_mangled_no_params("v"), 0);
    assert_int_equal(sn_mangled_no_params(""), 0);
    assert_int_equal(sn_mangled_no_params(NULL), 0);
    /* cut, padded or malformed */
    assert_int_equal(sn_mangled_no_params("_Z"), 0);
    assert_int_equal(sn_mangled_no_params("_Zv"), 0);
    assert_int_equal(sn_mangled_no_params("_Z5emptv"), 0);
    assert_int_equal(sn_mangled_no_params("_Z9empty"), 0);
    assert_int_equal(sn_mangled_no_params("_ZN5caffe16sync_conv_groupsv"), 0);
    assert_int_equal(sn_mangled_no_params("_ZN5caffe16sync_conv_groupsEvv"), 0);
    assert_int_equal(sn_mangled_no_params("_ZN5caffe16sync_conv_groupsEv "), 0);
    assert_int_equal(sn_mangled_no_params("_ZNEv"), 0);
    assert_int_equal(sn_mangled_no_params("_Z05emptyv"), 0);
    assert_int_equal(sn_mangled_no_params("_Z99999999999999999999emptyv"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_params),
        cmocka_unit_test(test_params_or_unknown),
        cmocka_unit_test(test_kernel_kinds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
