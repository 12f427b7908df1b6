/*
 * sn_entry.h — the shim's side of hooks.def: the exported wrappers'
 * prototypes, libsn's lazy initialisation, and the protocol every wrapper
 * follows to enter libsn. Only the shim enters libsn from a framework's
 * call; the layers below see the per-thread state (common/sn_hooks.h) it
 * leaves, never this header.
 *
 * Wrapper protocol (SN_PROLOGUE in sn_wrap.h):
 *     sn_real_X_fn real = SN_REAL(X);
 *     if (!real) return SN_MISSING(LIB, X);       // never call ourselves
 *     SN_SCOPE(SN_LIB_LIB);                       // leaves on every return
 *     if (!sn_scope_.entered) return real(args);  // pass straight through
 *     ... describe the call, forward it, record the result ...
 * sn_enter() initialises libsn on first use, and refuses (pass-through) when
 * libsn is off, while it is initialising, and when the thread is already
 * inside a hooked call: work a hooked library does on the framework's behalf
 * (cuDNN allocating through the driver) is not the framework's own.
 */
#ifndef SN_ENTRY_H
#define SN_ENTRY_H

#include "common/sn_hooks.h"

#define SN_EXPORT __attribute__((visibility("default")))
#define SN_HOOK(lib, ret, name, params, args) SN_EXPORT ret name params;
#include "common/hooks.def"

/* ---- initialisation and entry ---------------------------------------------- */

enum sn_init_state { SN_UNINIT = 0, SN_INITIALISING = 1, SN_READY = 2 };
extern int sn_init_state;
/* Nonzero once initialised with a mode other than off; cleared in a
 * forked child. */
extern int sn_active;

/* Slow path of sn_enter: initialises libsn (once, thread-safely). Returns 1
 * when libsn is ready, 0 when the caller must pass through. */
int sn_init_slow(void);

static inline int sn_ready(void)
{
    if (__builtin_expect(__atomic_load_n(&sn_init_state, __ATOMIC_ACQUIRE) == SN_READY, 1))
        return 1;
    return sn_init_slow();
}

static inline int sn_enter(int lib)
{
    sn_thread_state *t = &sn_thread;
    if (t->depth)
        return 0;
    if (!sn_ready() || !sn_active)
        return 0;
    t->depth = 1;
    t->lib = lib;
    return 1;
}

static inline void sn_leave(void)
{
    sn_thread.depth = 0;
}

/* A wrapper's stay inside libsn, left on every return path by the cleanup
 * attribute (compiler-rt's ScopedInterceptor): no path can forget to leave,
 * and none can leave twice. SN_SCOPE(lib) enters as sn_enter does;
 * SN_SCOPE_LATER() declares a scope that enters only if the wrapper sets
 * sn_scope_.entered itself (the driver's allocation wrappers decide whose
 * allocation it is first). */
typedef struct sn_scope {
    int entered;
} sn_scope;

static inline void sn_scope_exit(sn_scope *s)
{
    if (s->entered)
        sn_leave();
}

#define SN_SCOPE(lib) sn_scope sn_scope_ __attribute__((cleanup(sn_scope_exit))) = {sn_enter(lib)}
#define SN_SCOPE_LATER() sn_scope sn_scope_ __attribute__((cleanup(sn_scope_exit))) = {0}

#endif
