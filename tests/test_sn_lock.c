/*
 * test_sn_lock.c — libsn's locks (common/sn_lock.h): mutual exclusion and
 * the condition's wake-ups under contention from several threads, a timed
 * wait that ends at its time; and the lock witness of the debug build:
 * locks taken in rank order pass and are tracked; a lock taken out of
 * order, twice, or a CUDA call made with a lock held ends the process with
 * SIGABRT and a libsn line naming the broken rule. Each violation runs in a
 * forked child. In a release build the witness is compiled out and those
 * tests are skipped (CI runs the debug build too).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/sn_lock.h"
#include "tests/child_signal.h"

#ifdef SN_DEBUG
static sn_lock reg = SN_LOCK_INITIALIZER(SN_RANK_REGISTRY);
static sn_lock dev0 = SN_LOCK_INITIALIZER(SN_RANK_DEVICE0);
static sn_lock dev1 = SN_LOCK_INITIALIZER(SN_RANK_DEVICE0 + 1);
static sn_lock handles = SN_LOCK_INITIALIZER(SN_RANK_HANDLES);

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

/* ---- exclusion and conditions, in every build ---------------------------- */

enum { THREADS = 4, ROUNDS = 1000000 };
static sn_lock counted = SN_LOCK_INITIALIZER(SN_RANK_HANDLES);
static pthread_barrier_t start_together;
/* a plain (not atomic) pair: only the lock keeps them equal */
static volatile long count_a, count_b;

static void *count_up(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start_together);
    for (int i = 0; i < ROUNDS; i++) {
        sn_lock_take(&counted);
        long a = count_a;
        /* (a moment inside, so that the others arrive while it is held) */
        for (volatile int k = 0; k < 8; k++)
            ;
        count_a = a + 1;
        count_b = count_b + 1;
        sn_lock_give(&counted);
    }
    return NULL;
}

static void test_exclusion(void **state)
{
    (void)state;
    pthread_t th[THREADS];
    assert_int_equal(pthread_barrier_init(&start_together, NULL, THREADS), 0);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, count_up, NULL), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start_together);
    assert_int_equal(count_a, (long)THREADS * ROUNDS);
    assert_int_equal(count_b, (long)THREADS * ROUNDS);
    /* given back: taken again at once */
    sn_lock_take(&counted);
    sn_lock_give(&counted);
}

/* A relay: each waiter waits for its turn, takes it, passes it on and
 * broadcasts; a lost wake-up leaves the relay stuck (the test times out). */
static sn_lock relay_lock = SN_LOCK_INITIALIZER(SN_RANK_HANDLES);
static sn_cond relay_cond;
static int relay_turn, relay_done;
enum { RELAY_ROUNDS = 2000 };

static void *relay(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (int r = 0; r < RELAY_ROUNDS; r++) {
        sn_lock_take(&relay_lock);
        while (relay_turn % THREADS != me)
            sn_cond_wait(&relay_cond, &relay_lock, NULL);
        relay_turn++;
        relay_done++;
        sn_cond_broadcast(&relay_cond);
        sn_lock_give(&relay_lock);
    }
    return NULL;
}

static void test_condition(void **state)
{
    (void)state;
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, relay, (void *)(intptr_t)i), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(relay_done, THREADS * RELAY_ROUNDS);
    assert_int_equal(relay_cond.waiters, 0);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void test_timed_wait(void **state)
{
    (void)state;
    static sn_lock l = SN_LOCK_INITIALIZER(SN_RANK_HANDLES);
    static sn_cond c;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 20 * 1000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    double t0 = now_s();
    sn_lock_take(&l);
    /* nobody broadcasts: it ends at its time (or early, spuriously, never
     * much later), with the lock held again */
    sn_cond_wait(&c, &l, &until);
    double waited = now_s() - t0;
    assert_int_equal(l.word != 0, 1);
    sn_lock_give(&l);
    assert_int_equal(l.word, 0);
    assert_true(waited < 5.0);
    assert_int_equal(c.waiters, 0);
}

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
        cmocka_unit_test(test_exclusion),
        cmocka_unit_test(test_condition),
        cmocka_unit_test(test_timed_wait),
        cmocka_unit_test(test_rank_order),
        cmocka_unit_test(test_no_cuda_under_lock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
