/*
 * sn_lock.h — libsn's locks and the two rules they obey:
 *
 *  1. A thread takes locks only in increasing rank (registry, then device 0,
 *     1, ..., then the handle tables), so no two threads can wait for each
 *     other.
 *  2. No CUDA call is made while any libsn lock is held: a real call can
 *     block (a synchronising cuMemUnmap, an event on a busy stream), and a
 *     lock held across it would serialise every thread and device behind
 *     one call.
 *
 * The debug build (SN_DEBUG) checks both on every acquisition and at every
 * CUDA call libsn makes for itself (sn_witness_cuda), and aborts with the
 * rule broken — jemalloc's "witness" idea. Release builds only take the
 * mutexes.
 */
#ifndef SN_LOCK_H
#define SN_LOCK_H

#include <pthread.h>

enum {
    SN_RANK_REGISTRY = 0,
    SN_RANK_DEVICE0 = 1,          /* device d: SN_RANK_DEVICE0 + d */
    SN_RANK_HANDLES = 30,         /* streams, events, kernel layouts */
    SN_RANK_ARENA = 31,           /* one device's arena (allocator/); never two at once */
};

typedef struct sn_lock {
    pthread_mutex_t mutex;
    int rank;
} sn_lock;

#define SN_LOCK_INITIALIZER(r) {PTHREAD_MUTEX_INITIALIZER, (r)}

#ifdef SN_DEBUG
void sn_lock_take(sn_lock *l);
void sn_lock_give(sn_lock *l);
/* Aborts if the calling thread holds any libsn lock; what names the call. */
void sn_witness_cuda(const char *what);
/* Ranks the calling thread holds, as a bit mask (for tests). */
unsigned sn_lock_held_mask(void);
#else
static inline void sn_lock_take(sn_lock *l)
{
    pthread_mutex_lock(&l->mutex);
}
static inline void sn_lock_give(sn_lock *l)
{
    pthread_mutex_unlock(&l->mutex);
}
static inline void sn_witness_cuda(const char *what)
{
    (void)what;
}
#endif

#endif
