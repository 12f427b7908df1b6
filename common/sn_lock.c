/*
 * sn_lock.c — the slow paths of libsn's locks and conditions (a thread
 * that must wait sleeps on a futex), and the debug build's lock witness
 * (see sn_lock.h): a per-thread mask of the ranks held, checked when a
 * lock is taken and when libsn is about to call CUDA. A broken rule is a bug in libsn, reported with the
 * rank involved, and ends the process at once (abort), where a debugger or
 * the sanitizers' stack trace shows the path.
 */
#include "common/sn_lock.h"

#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

static void sn_futex(int *addr, int op, int val, const struct timespec *until, int val3)
{
    /* (an error, EAGAIN when the word changed meanwhile or EINTR, is a
     * wake-up: every caller looks at its word again) */
    (void)syscall(SYS_futex, addr, op, val, until, NULL, val3);
}

void sn_lock_wait(sn_lock *l)
{
    /* the holder is usually about to give it back: look a few times
     * before sleeping */
    for (int i = 0; i < 64; i++) {
        int expect = 0;
        if (__atomic_load_n(&l->word, __ATOMIC_RELAXED) == 0 &&
            __atomic_compare_exchange_n(&l->word, &expect, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            return;
    }
    /* 2 from here: whoever gives it back wakes a sleeper */
    while (__atomic_exchange_n(&l->word, 2, __ATOMIC_ACQUIRE) != 0)
        sn_futex(&l->word, FUTEX_WAIT_PRIVATE, 2, NULL, 0);
}

void sn_lock_wake(sn_lock *l)
{
    sn_futex(&l->word, FUTEX_WAKE_PRIVATE, 1, NULL, 0);
}

void sn_cond_wait(sn_cond *c, sn_lock *l, const struct timespec *until)
{
    /* the sequence is read under the lock: a broadcast after the lock is
     * given back changes it, and the futex then does not sleep */
    int seq = (int)__atomic_load_n(&c->seq, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&c->waiters, 1, __ATOMIC_SEQ_CST);
    sn_lock_raw_give(l);
    if (until)
        sn_futex((int *)&c->seq, FUTEX_WAIT_BITSET_PRIVATE | FUTEX_CLOCK_REALTIME, seq, until,
                 FUTEX_BITSET_MATCH_ANY);
    else
        sn_futex((int *)&c->seq, FUTEX_WAIT_PRIVATE, seq, NULL, 0);
    /* taken as contended: other sleepers may be behind it */
    while (__atomic_exchange_n(&l->word, 2, __ATOMIC_ACQUIRE) != 0)
        sn_futex(&l->word, FUTEX_WAIT_PRIVATE, 2, NULL, 0);
    __atomic_sub_fetch(&c->waiters, 1, __ATOMIC_SEQ_CST);
}

void sn_cond_broadcast(sn_cond *c)
{
    __atomic_add_fetch(&c->seq, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&c->waiters, __ATOMIC_SEQ_CST))
        sn_futex((int *)&c->seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, 0);
}

#ifdef SN_DEBUG
#include <stdlib.h>

#include "common/sn_log.h"

static __thread unsigned sn_held __attribute__((tls_model("initial-exec")));

static _Noreturn void sn_witness_fail(const char *msg, int a, int b)
{
    sn_error("internal error: %s (%d, %d)", msg, a, b);
    abort();
}

void sn_lock_take(sn_lock *l)
{
    unsigned mine = 1u << l->rank;
    if (sn_held & mine)
        sn_witness_fail("lock taken twice by one thread: rank", l->rank, l->rank);
    /* every rank held must be lower than the one taken */
    if (sn_held & ~(mine - 1u))
        sn_witness_fail("locks taken out of rank order: taking rank, while holding mask", l->rank,
                        (int)sn_held);
    sn_lock_raw_take(l);
    sn_held |= mine;
}

void sn_lock_give(sn_lock *l)
{
    unsigned mine = 1u << l->rank;
    if (!(sn_held & mine))
        sn_witness_fail("lock released that the thread does not hold: rank", l->rank, 0);
    sn_held &= ~mine;
    sn_lock_raw_give(l);
}

void sn_witness_cuda(const char *what)
{
    if (sn_held) {
        sn_error("internal error: %s called with libsn locks held (mask %#x)", what, sn_held);
        abort();
    }
}

unsigned sn_lock_held_mask(void)
{
    return sn_held;
}
#endif
