/*
 * test_sn_lock.c — the lock witness of the debug build (common/sn_lock.h):
 * locks taken in rank order pass and are tracked; a lock taken out of
 * order, twice, or a CUDA call made with a lock held ends the process with
 * SIGABRT and a libsn line naming the broken rule. Each violation runs in a
 * forked child. In a release build the witness is compiled out and these
 * tests are skipped (CI runs the debug build too).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/sn_lock.h"

#ifdef SN_DEBUG
static sn_lock reg = SN_LOCK_INITIALIZER(SN_RANK_REGISTRY);
static sn_lock dev0 = SN_LOCK_INITIALIZER(SN_RANK_DEVICE0);
static sn_lock dev1 = SN_LOCK_INITIALIZER(SN_RANK_DEVICE0 + 1);
static sn_lock handles = SN_LOCK_INITIALIZER(SN_RANK_HANDLES);

/* Runs f in a child with stderr silenced; returns the signal that ended it
 * (0 if it exited). */
static int child_signal(void (*f)(void))
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int null = open("/dev/null", 1);
        if (null >= 0)
            dup2(null, 2);
        f();
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

static void in_order(void)
{
    sn_lock_take(&reg);
    sn_lock_take(&dev0);
    sn_lock_take(&dev1);
    sn_lock_take(&handles);
    sn_lock_give(&handles);
    sn_lock_give(&dev1);
    sn_lock_give(&dev0);
    sn_lock_give(&reg);
    sn_witness_cuda("cudaEventRecord");
}

static void device_then_registry(void)
{
    sn_lock_take(&dev0);
    sn_lock_take(&reg);
}

static void twice(void)
{
    sn_lock_take(&dev1);
    sn_lock_take(&dev1);
}

static void cuda_under_lock(void)
{
    sn_lock_take(&handles);
    sn_witness_cuda("cudaEventRecord");
}
#endif

static void test_rank_order(void **state)
{
    (void)state;
#ifdef SN_DEBUG
    sn_lock_take(&reg);
    sn_lock_take(&dev1);
    assert_int_equal(sn_lock_held_mask(), (1u << SN_RANK_REGISTRY) | (1u << (SN_RANK_DEVICE0 + 1)));
    sn_lock_give(&reg); /* releasing out of order is allowed */
    sn_lock_give(&dev1);
    assert_int_equal(sn_lock_held_mask(), 0);
    assert_int_equal(child_signal(in_order), 0);
    assert_int_equal(child_signal(device_then_registry), SIGABRT);
    assert_int_equal(child_signal(twice), SIGABRT);
#else
    skip();
#endif
}

static void test_no_cuda_under_lock(void **state)
{
    (void)state;
#ifdef SN_DEBUG
    assert_int_equal(child_signal(cuda_under_lock), SIGABRT);
#else
    skip();
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rank_order),
        cmocka_unit_test(test_no_cuda_under_lock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
