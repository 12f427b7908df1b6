/*
 * hooks_plain.c — the generated wrappers of hooks.def's SN_HOOK_PLAIN
 * entries: calls that touch no framework tensor (handle management,
 * algorithm queries, event queries) but inside which a library may allocate
 * on its own. The wrapper marks the thread as inside that library, so the
 * driver hooks account such allocations to the library, and forwards.
 */
#include "shim/sn_entry.h"

#define SN_HOOK(lib, ret, name, params, args)
#define SN_HOOK_PLAIN(lib, ret, name, params, args)                            \
    SN_EXPORT ret name params                                                  \
    {                                                                          \
        sn_real_##name##_fn real = SN_REAL(name);                              \
        if (__builtin_expect(!real, 0))                                        \
            return SN_MISSING(lib, name);                                      \
        SN_SCOPE(SN_LIB_##lib);                                                \
        return real args;                                                      \
    }
#include "common/hooks.def"
