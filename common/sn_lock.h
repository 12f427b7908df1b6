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
 * CUDA call libsn makes (sn_witness_cuda, run by every function SN_REAL
 * gives in that build: common/sn_hooks.h), and aborts with the rule broken
 * — jemalloc's "witness" idea. Release builds only take the mutexes.
 */
#ifndef SN_LOCK_H
#define SN_LOCK_H

#include <time.h>

enum {
    SN_RANK_REGISTRY = 0,
    SN_RANK_DEVICE0 = 1,          /* device d: SN_RANK_DEVICE0 + d */
    SN_RANK_CAPTURES = 29,        /* capturing streams (common/sn_capture.c), captured graphs */
    SN_RANK_HANDLES = 30,         /* streams, events, kernel layouts */
    SN_RANK_ARENA = 31,           /* one device's arena (allocator/); never two at once */
};

/*
 * A lock is one word and a futex (Drepper's "Futexes Are Tricky", mutex
 * 2): taken with one compare-and-swap and given back with one exchange
 * when nobody waits; a thread that finds it held spins briefly, then
 * sleeps in the kernel. Every intercepted call takes a device's lock and,
 * in manage mode, the arena's: glibc's mutex cost about 57 instructions a
 * pair there, this one about 8. The atomics order what the lock protects
 * (acquire on taking, release on giving back), which is also what
 * ThreadSanitizer follows.
 */
typedef struct sn_lock {
    int word;  /* 0: free; 1: held; 2: held, and a thread may sleep on it */
    int rank;
} sn_lock;

#define SN_LOCK_INITIALIZER(r) {0, (r)}

/* The contended halves, out of line (sn_lock.c). */
void sn_lock_wait(sn_lock *l);
void sn_lock_wake(sn_lock *l);

static inline void sn_lock_raw_take(sn_lock *l)
{
    int expect = 0;
    if (__builtin_expect(!__atomic_compare_exchange_n(&l->word, &expect, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED),
                         0))
        sn_lock_wait(l);
}

static inline void sn_lock_raw_give(sn_lock *l)
{
    if (__builtin_expect(__atomic_exchange_n(&l->word, 0, __ATOMIC_RELEASE) == 2, 0))
        sn_lock_wake(l);
}

/* A condition to wait for under a lock: a sequence number bumped by every
 * broadcast, and a count of the threads asleep on it so that a broadcast
 * nobody waits for makes no system call. Wake-ups may be spurious: a
 * waiter looks at its condition again. */
typedef struct sn_cond {
    unsigned seq;
    int waiters;
} sn_cond;

/* Gives l back, sleeps until a broadcast (or, when until is not NULL, the
 * CLOCK_REALTIME time until), takes l again; the caller holds l. */
void sn_cond_wait(sn_cond *c, sn_lock *l, const struct timespec *until);
void sn_cond_broadcast(sn_cond *c);

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
    sn_lock_raw_take(l);
}
static inline void sn_lock_give(sn_lock *l)
{
    sn_lock_raw_give(l);
}
static inline void sn_witness_cuda(const char *what)
{
    (void)what;
}
#endif

#endif
