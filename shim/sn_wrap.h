/*
 * sn_wrap.h — the common shape of a hand-written wrapper.
 *
 *   SN_PROLOGUE(LIB, name, (args))   real pointer, missing symbol, the scoped
 *                                    entry (left on every return path),
 *                                    pass-through
 *   SN_FORWARD_STEP(&call, status_type, success, nomem, (args))
 *                                    makes its memory resident (manage mode)
 *                                    and records the call around the real
 *                                    one, returns its status (nomem when
 *                                    its working set does not fit)
 */
#ifndef SN_WRAP_H
#define SN_WRAP_H

#include "core/sn_core.h"
#include "shim/sn_entry.h"

#define SN_PROLOGUE(lib, name, args)                                           \
    sn_real_##name##_fn real = SN_REAL(name);                                  \
    if (__builtin_expect(!real, 0))                                            \
        return SN_MISSING(lib, name);                                          \
    SN_SCOPE(SN_LIB_##lib);                                                    \
    if (!sn_scope_.entered)                                                    \
        return real args;

/* SN_FORWARD_STEP for a call the host may wait for (sync): once it has
 * returned, libsn knows the work before it on the stream is done. */
#define SN_FORWARD_STEP_SYNC(callp, type, success, nomem, sync, args)          \
    do {                                                                       \
        sn_step_token tok_;                                                    \
        if (sn_core_call_begin((callp), &tok_) != 0)                           \
            return (nomem);                                                    \
        type rc_ = real args;                                                  \
        sn_core_call_end((callp), &tok_, rc_ == (success));                    \
        if ((sync) && rc_ == (success))                                        \
            sn_core_host_synced((callp)->dev, (callp)->stream, 0);             \
        return rc_;                                                            \
    } while (0)

#define SN_FORWARD_STEP(callp, type, success, nomem, args)                     \
    do {                                                                       \
        sn_step_token tok_;                                                    \
        if (sn_core_call_begin((callp), &tok_) != 0)                           \
            return (nomem);                                                    \
        type rc_ = real args;                                                  \
        sn_core_call_end((callp), &tok_, rc_ == (success));                    \
        return rc_;                                                            \
    } while (0)

/* Who an allocation made through the driver now belongs to (enum sn_owner);
 * SN_OWNER_NONE: not libsn's to record (libsn off, or the runtime wrapper
 * around it records it). Sets *entered when it entered libsn: the caller's
 * scope (SN_SCOPE_LATER) then leaves. */
int sn_driver_owner(int *entered);

#endif
