/*
 * test_sim_mangle.c — the simulator's reading of kernels' mangled names
 * (sim/mangle.c), which tells SIMGPU_COMPUTE=libs's stand-in which pointer
 * parameters a kernel may write. The names are real: Darknet's and BVLC
 * Caffe's kernels as nvcc 13 registers them, and kernels of CUB and Thrust
 * and of a test program built with nvcc 13.0, whose substitutions (S_,
 * S0_, ...) and template parameters (T_) must be counted exactly as a
 * demangler counts them; each expectation was checked against c++filt.
 * Names the parser does not understand must be refused, never guessed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/sn_mangle.h"

/* One letter per parameter: v by value, i pointer to const, o pointer that
 * may be written; NULL: refused. */
struct named { const char *name, *want; };

static void expect(const char *name, const char *want)
{
    struct sn_ptype p[64];
    int n = sn_mangled_params(name, p, 64);
    if (!want) {
        if (n != -1)
            fail_msg("%s: %d parameters, want refused", name, n);
        return;
    }
    char got[65] = {0};
    for (int i = 0; i < n && i < 64; i++)
        got[i] = "vio"[p[i].kind];
    if (n != (int)strlen(want) || strcmp(got, want) != 0)
        fail_msg("%s: %d parameters \"%s\", want \"%s\"", name, n, got, want);
}

static void expect_all(const struct named *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        expect(t[i].name, t[i].want);
}

/* Darknet declares no pointer const: every pointer may be written. */
static void test_darknet(void **state)
{
    (void)state;
    static const struct named t[] = {
        {"_Z11axpy_kernelifPfiiS_ii", "vvovvovv"},
        {"_Z15add_bias_kernelPfS_iii", "oovvv"},
        {"_Z15shortcut_kerneliiiiiiiiiiPfiiiffS_", "vvvvvvvvvvovvvvvo"},
        {"_Z15upsample_kernelmPfiiiiiifS_", "vovvvvvvvo"},
        {"_Z11adam_kerneliPfS_S_ffffi", "vooovvvvv"},
        {"_Z14softmax_kernelPfiiiiiifS_", "ovvvvvvvo"},
    };
    expect_all(t, sizeof t / sizeof t[0]);
}

/* Caffe's kernels are templates in namespace caffe: the return type comes
 * first, T_ is the element type, S<n>_ name earlier pointer types. */
static void test_caffe(void **state)
{
    (void)state;
    static const struct named t[] = {
        {"_ZN5caffe9SGDUpdateIfEEviPT_S2_S1_S1_", "voovv"},
        {"_ZN5caffe10AdamUpdateIdEEviPT_S2_S2_S1_S1_S1_S1_", "vooovvvv"},
        {"_ZN5caffe10BRBackwardIfEEviiPKT_S3_S3_S3_PS1_", "vviiiio"},
        {"_ZN5caffe10MaxForwardIfEEviPKT_S3_iPS1_Pi", "viivoo"},
        {"_ZN5caffe10set_kernelIiEEviT_PS1_", "vvo"},
        {"_ZN5caffe11CLLBackwardIfEEviiT_bS1_PKS1_S3_S3_PS1_", "vvvvviiio"},
        {"_ZN5caffe11ClipForwardEiPKfPfff", "viovv"},
        {"_ZN5caffe11MaxBackwardIfEEviPKT_iPKiPS1_", "vivio"},
        {"_ZN5caffe14DropoutForwardIfEEviPKT_PKjjfPS1_", "viivvo"},
        {"_ZN5caffe14MaxPoolForwardIfEEviPKT_iiiiiiiiiiiiPS1_PiS4_", "vivvvvvvvvvvvvooo"},
        {"_ZN5caffe16sync_conv_groupsEv", ""},
        {"_ZN3cub17CUB_300001_SM_9006detail11EmptyKernelIvEEvv", ""},
    };
    expect_all(t, sizeof t / sizeof t[0]);
}

/* Built with nvcc 13.0 from kernels written for the purpose (a template
 * over two types with class templates of them, a pointer to an array, an
 * enum, halves, volatile, a functor, anonymous and static kernels). */
static void test_nvcc_forms(void **state)
{
    (void)state;
    static const struct named t[] = {
        /* k1<float, double>(const T*, U*, ns::V<T,3>, const ns::V<U,2>*, T* const*, const T**) */
        {"_Z2k1IfdEvPKT_PT0_N2ns1VIS0_Li3EEEPKNS6_IS3_Li2EEEPKPS0_PS2_", "ioviio"},
        /* k2<3>(float (*)[4], ns::E, double*, const double*) */
        {"_Z2k2ILi3EEvPA4_fN2ns1EEPdPKd", "ovoi"},
        /* k3(half*, const __half2*, unsigned char*, bool*, long long*, volatile float*) */
        {"_Z2k3P6__halfPK7__half2PhPbPxPVf", "oioooo"},
        {"_Z2k4I3FunEvT_Pf", "vo"},
        {"_Z2k7PKiPi", "io"},
        {"_ZN36_GLOBAL__N__af57d49c_4_t_cu_90e5c3562k6EPf", "o"},
        /* tests/nvcc_params.cu: restrict and __grid_constant__ leave no trace */
        {"_Z10k_restrictPfPKfm", "oiv"},
        {"_Z15k_grid_constant5SmallbPf", "vvo"},
        {"_Z6k_ptrsPfPKdPi", "oio"},
        {"_Z5k_vecc6float46float27double24int3", "vvvvv"},
        /* CUB's radix sort and reduce kernels, as thrust::sort and
         * thrust::reduce instantiate them */
        {"_ZN3cub17CUB_300001_SM_9006detail10radix_sort30DeviceRadixSortHistogramKernelINS1_5radix10policy_hubIfN"
         "S0_8NullTypeEyE10Policy1000ELNS0_9SortOrderE0EfyNS1_21identity_decomposer_tEEEvPT2_PKT1_SB_iiT3_",
         "oivvvv"},
        {"_ZN3cub17CUB_300001_SM_9006detail10radix_sort31DeviceRadixSortSingleTileKernelINS1_5radix10policy_hubIf"
         "NS0_8NullTypeEyE10Policy1000ELNS0_9SortOrderE0EfS6_yNS1_21identity_decomposer_tEEEvPKT1_PSB_PKT2_"
         "PSF_T3_iiT4_",
         "ioiovvvv"},
        {"_ZN3cub17CUB_300001_SM_9006detail6reduce28DeviceReduceSingleTileKernelINS2_10policy_hubIfjN4cuda3std3"
         "__44plusIfEEE10Policy1000EN6thrust23THRUST_300001_SM_900_NS6detail15normal_iteratorINSD_10device_ptrIf"
         "EEEEPfjS9_ffNS7_10__identityEEEvT0_T1_T2_T3_T4_T6_",
         "vovvvv"},
        {"_ZN3cub17CUB_300001_SM_9006detail6reduce28DeviceReduceSingleTileKernelINS2_10policy_hubIfjN4cuda3std3"
         "__44plusIfEEE10Policy1000EPfSC_iS9_ffNS7_10__identityEEEvT0_T1_T2_T3_T4_T6_",
         "oovvvv"},
        {"_ZN3cub17CUB_300001_SM_9006detail8for_each13static_kernelINS2_12policy_hub_t12policy_500_tEmN6thrust23T"
         "HRUST_300001_SM_900_NS8cuda_cub20__uninitialized_fill7functorINS7_10device_ptrIfEEfEEEEvT0_T1_",
         "vv"},
        /* std:: names, abbreviations and their candidates */
        {"_Z1fSt6vectorIiSaIiEEPS1_PS2_", "voo"},
        {"_Z1fPSsPKSs", "oi"},
    };
    expect_all(t, sizeof t / sizeof t[0]);
}

/* What the pointee is decides the value written through it. */
static void test_pointee(void **state)
{
    (void)state;
    struct sn_ptype p[8];
    assert_int_equal(sn_mangled_params("_Z1fPiPKjPbPfPdPPiPx", p, 8), 7);
    static const unsigned char want[] = {SN_ELEM_INT, SN_ELEM_INT,   SN_ELEM_BOOL, SN_ELEM_OTHER,
                                         SN_ELEM_OTHER, SN_ELEM_OTHER, SN_ELEM_INT};
    for (int i = 0; i < 7; i++)
        assert_int_equal(p[i].elem, want[i]);
    /* A template parameter carries its argument's type. */
    assert_int_equal(sn_mangled_params("_ZN5caffe10set_kernelIiEEviT_PS1_", p, 8), 3);
    assert_int_equal(p[2].elem, SN_ELEM_INT);
    assert_int_equal(sn_mangled_params("_ZN5caffe10set_kernelIfEEviT_PS1_", p, 8), 3);
    assert_int_equal(p[2].elem, SN_ELEM_OTHER);
}

/* Refused: no signature, forms outside the parser, damage, too many. */
static void test_refused(void **state)
{
    (void)state;
    static const struct named t[] = {
        {"k_c_linkage", NULL},
        {"", NULL},
        {"_Z", NULL},
        {"_Z3foo", NULL},                                 /* a variable's name */
        {"_ZN5caffe9SGDUpdateIfEE", NULL},                /* no signature */
        {"_Z2k4IZ4mainEUlfE_EvT_Pf", NULL},               /* a lambda's type */
        {"_Z2k5IJifPfEEvDpT_", NULL},                     /* a pack expansion */
        {"_Z1fIiEvDTplfp_fp0_E", NULL},                   /* decltype */
        /* tests/nvcc_params.cu: an expression (N) in a template argument */
        {"_ZN63a_rather_long_namespace_name_that_makes_the_mangled_symbol_long10k_templateIdLi3EEEvNS_6HolderIT_"
         "XT0_EEES2_PKS3_PS3_", NULL},
        {"_Z3fooPfS0_", NULL},                            /* a substitution not yet made */
        {"_Z3fooPT_", NULL},                              /* T_ outside a template */
        {"_Z3fooP", NULL},                                /* cut */
        {"_Z10add_kerne", NULL},                          /* a name longer than the text */
        {"_Z3fooPfILi1EE", NULL},                         /* arguments after a parameter */
        {"_ZN3fooE", NULL},
    };
    expect_all(t, sizeof t / sizeof t[0]);
    struct sn_ptype p[2];
    assert_int_equal(sn_mangled_params("_Z3fooPfS_S_", p, 2), -1);
    assert_int_equal(sn_mangled_params("_Z3fooPfS_", p, 2), 2);
    assert_int_equal(sn_mangled_params(NULL, p, 2), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_darknet),
        cmocka_unit_test(test_caffe),
        cmocka_unit_test(test_nvcc_forms),
        cmocka_unit_test(test_pointee),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
