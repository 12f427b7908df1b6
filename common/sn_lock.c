/*
 * sn_lock.c — the debug build's lock witness (see sn_lock.h): a per-thread
 * mask of the ranks held, checked when a lock is taken and when libsn is
 * about to call CUDA. A broken rule is a bug in libsn, reported with the
 * rank involved, and ends the process at once (abort), where a debugger or
 * the sanitizers' stack trace shows the path.
 */
#include "common/sn_lock.h"

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
    pthread_mutex_lock(&l->mutex);
    sn_held |= mine;
}

void sn_lock_give(sn_lock *l)
{
    unsigned mine = 1u << l->rank;
    if (!(sn_held & mine))
        sn_witness_fail("lock released that the thread does not hold: rank", l->rank, 0);
    sn_held &= ~mine;
    pthread_mutex_unlock(&l->mutex);
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
