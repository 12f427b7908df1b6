/*
 * sn_hooks.h — what hooks.def generates, and the protocol every wrapper
 * follows.
 *
 * For each entry of hooks.def: an id (SN_HOOK_ID_name), the type of the real
 * function (sn_real_name_fn), a slot holding its address once resolved, and
 * for intercepted entries the exported wrapper's prototype. SN_REAL(name)
 * yields the typed real function (resolving it late if it was not available
 * at initialisation; NULL if it does not exist).
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
#ifndef SN_HOOKS_H
#define SN_HOOKS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <cublas_v2.h>

/* cuda.h maps the old name to the _v2 one; libsn must define both. */
#undef cuGetProcAddress

/* The libraries a hook belongs to. */
enum sn_lib { SN_LIB_NONE = 0, SN_LIB_CUDART, SN_LIB_CUDNN, SN_LIB_CUBLAS, SN_LIB_CUDA, SN_LIB_COUNT };

enum sn_hook_id {
#define SN_HOOK(lib, ret, name, params, args) SN_HOOK_ID_##name,
#define SN_REAL_ONLY(lib, ret, name, params, args) SN_HOOK_ID_##name,
#include "common/hooks.def"
    SN_HOOK_COUNT
};

#define SN_HOOK(lib, ret, name, params, args) typedef ret (*sn_real_##name##_fn) params;
#define SN_REAL_ONLY(lib, ret, name, params, args) typedef ret (*sn_real_##name##_fn) params;
#include "common/hooks.def"

#define SN_EXPORT __attribute__((visibility("default")))
#define SN_HOOK(lib, ret, name, params, args) SN_EXPORT ret name params;
#include "common/hooks.def"

/* ---- real functions ------------------------------------------------------- */

extern void *sn_real_slot[SN_HOOK_COUNT];

/* Resolves hook id now; NULL if no library provides it (or only libsn). */
void *sn_resolve_late(int id);

static inline void *sn_real_get(int id)
{
    void *p = __atomic_load_n(&sn_real_slot[id], __ATOMIC_ACQUIRE);
    return __builtin_expect(p != NULL, 1) ? p : sn_resolve_late(id);
}

#define SN_REAL(name) ((sn_real_##name##_fn)sn_real_get(SN_HOOK_ID_##name))

/* When the real function does not exist: stops the program as the dynamic
 * loader would have at that call (exit status 127); never returns. */
_Noreturn cudaError_t sn_missing_CUDART(int id);
_Noreturn cudnnStatus_t sn_missing_CUDNN(int id);
_Noreturn cublasStatus_t sn_missing_CUBLAS(int id);
_Noreturn CUresult sn_missing_CUDA(int id);
#define SN_MISSING(lib, name) sn_missing_##lib(SN_HOOK_ID_##name)

/* Name, library and wrapper of a hook id (wrapper NULL for SN_REAL_ONLY). */
const char *sn_hook_name(int id);
int sn_hook_lib(int id);
void *sn_hook_wrapper(int id);
/* Hook id of an exact exported name, or -1. */
int sn_hook_find(const char *name);
/* Resolves every hook (at initialisation). Returns how many were found. */
int sn_resolve_all(void);
/* 1 if p lies inside libsn's own code. */
int sn_is_own_address(const void *p);
/* The bounds [lo, hi) of libsn's code, for loops that test many addresses. */
void sn_own_text(uintptr_t *lo, uintptr_t *hi);

/* The real dlsym/dlopen, never the interposed ones. */
void *sn_real_dlsym(void *handle, const char *name);
/* How many runtime, cuDNN and cuBLAS functions dlsym answered with
 * libsn's wrappers (libraries the program opened with dlopen). */
unsigned long sn_dlsym_wrapped_count(void);

/* ---- per-thread state and the entry protocol ------------------------------ */

typedef struct sn_thread_state {
    int depth;     /* 1 while inside a hooked call being handled by libsn */
    int lib;       /* the library of that call (enum sn_lib) */
    int device;    /* current device, as cudaSetDevice left it */
    int initialising;
} sn_thread_state;

extern __thread sn_thread_state sn_thread __attribute__((tls_model("initial-exec")));

enum sn_init_state { SN_UNINIT = 0, SN_INITIALISING = 1, SN_READY = 2 };
extern int sn_init_state;
/* Nonzero once initialised with a mode other than off; cleared in a
 * forked child. */
extern int sn_active;
/* Nonzero in a child forked from a process that had loaded libsn. */
extern int sn_forked_child;

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

/* Current device of the calling thread. */
static inline int sn_current_device(void)
{
    return sn_thread.device;
}

#define SN_MAX_DEVICES 16

#endif
