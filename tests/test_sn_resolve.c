/*
 * test_sn_resolve.c — finding the real functions (common/sn_resolve.c)
 * with nothing of the shim linked: the hook table's names and libraries,
 * the C library's own dlsym, late resolution of a function no library
 * provides, the slot SN_REAL reads, and the counter the shim keeps for the
 * report. In the debug build, the function SN_REAL gives runs the lock
 * witness at the call: a call made with a libsn lock held ends the process
 * (SIGABRT, in a forked child), whenever the pointer was fetched.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/sn_hooks.h"
#include "common/sn_lock.h"
#include "tests/child_signal.h"

static int fake_calls;

static cudaError_t fake_get_last_error(void)
{
    fake_calls++;
    return cudaErrorInvalidValue;
}

static int setup_fake(void **state)
{
    (void)state;
    fake_calls = 0;
    __atomic_store_n(&sn_real_slot[SN_HOOK_ID_cudaGetLastError], (void *)fake_get_last_error, __ATOMIC_RELEASE);
    return 0;
}

static void test_names(void **state)
{
    (void)state;
    int id = sn_hook_find("cudaMalloc");
    assert_int_equal(id, SN_HOOK_ID_cudaMalloc);
    assert_string_equal(sn_hook_name(id), "cudaMalloc");
    assert_int_equal(sn_hook_lib(id), SN_LIB_CUDART);
    assert_int_equal(sn_hook_lib(SN_HOOK_ID_cuMemCreate), SN_LIB_CUDA);
    assert_int_equal(sn_hook_find("cudaNoSuchFunction"), -1);
    assert_string_equal(sn_hook_name(-1), "?");
    assert_int_equal(sn_hook_lib(SN_HOOK_COUNT), SN_LIB_NONE);
}

static void test_real_dlsym(void **state)
{
    (void)state;
    assert_non_null(sn_real_dlsym_get());
    void *mine = sn_real_dlsym(RTLD_DEFAULT, "getpid");
    assert_non_null(mine);
    assert_ptr_equal(mine, dlsym(RTLD_DEFAULT, "getpid"));
    assert_null(sn_real_dlsym(RTLD_DEFAULT, "sn_no_such_symbol_anywhere"));
}

/* No CUDA library is loaded in this program: nothing resolves, late or
 * all at once, and the slot stays empty. */
static void test_missing(void **state)
{
    (void)state;
    assert_null(SN_REAL(cudnnCreate));
    assert_false(SN_REAL_EXISTS(cudnnCreate));
    assert_null(sn_resolve_late(SN_HOOK_ID_cuMemCreate));
    assert_null(sn_real_slot[SN_HOOK_ID_cuMemCreate]);
    assert_int_equal(sn_resolve_all(), 1); /* the fake of setup_fake only */
}

static void test_slot(void **state)
{
    (void)state;
    assert_true(SN_REAL_EXISTS(cudaGetLastError));
    assert_ptr_equal((void *)SN_REAL_PTR(cudaGetLastError), (void *)fake_get_last_error);
    sn_real_cudaGetLastError_fn get = SN_REAL(cudaGetLastError);
    assert_non_null(get);
#ifdef SN_DEBUG
    /* the witnessing stand-in, never the function itself */
    assert_ptr_not_equal((void *)get, (void *)fake_get_last_error);
#else
    assert_ptr_equal((void *)get, (void *)fake_get_last_error);
#endif
    assert_int_equal(get(), cudaErrorInvalidValue);
    assert_int_equal(fake_calls, 1);
}

static void test_wrapped_count(void **state)
{
    (void)state;
    unsigned long before = sn_dlsym_wrapped_count();
    sn_dlsym_wrapped_note();
    sn_dlsym_wrapped_note();
    assert_int_equal(sn_dlsym_wrapped_count(), before + 2);
}

#ifdef SN_DEBUG
static sn_lock dev0 = SN_LOCK_INITIALIZER(SN_RANK_DEVICE0);

static void call_under_lock(void)
{
    sn_lock_take(&dev0);
    SN_REAL(cudaGetLastError)();
    sn_lock_give(&dev0);
}

static void fetched_before_called_under(void)
{
    sn_real_cudaGetLastError_fn get = SN_REAL(cudaGetLastError);
    sn_lock_take(&dev0);
    get();
    sn_lock_give(&dev0);
}

static void fetched_under_called_after(void)
{
    sn_lock_take(&dev0);
    sn_real_cudaGetLastError_fn get = SN_REAL(cudaGetLastError);
    sn_lock_give(&dev0);
    get();
}

/* Looking at the pointer is no call: no witness. */
static void ptr_under_lock(void)
{
    sn_lock_take(&dev0);
    int ok = SN_REAL_EXISTS(cudaGetLastError) && SN_REAL_PTR(cudaGetLastError) != NULL;
    sn_lock_give(&dev0);
    _exit(ok ? 0 : 3);
}

static void test_witness(void **state)
{
    (void)state;
    assert_int_equal(child_signal(call_under_lock), SIGABRT);
    assert_int_equal(child_signal(fetched_before_called_under), SIGABRT);
    assert_int_equal(child_signal(fetched_under_called_after), 0);
    assert_int_equal(child_signal(ptr_under_lock), 0);
}
#else
static void test_witness(void **state)
{
    (void)state;
    skip();
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_real_dlsym),
        cmocka_unit_test_setup(test_missing, setup_fake),
        cmocka_unit_test_setup(test_slot, setup_fake),
        cmocka_unit_test(test_wrapped_count),
        cmocka_unit_test_setup(test_witness, setup_fake),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
