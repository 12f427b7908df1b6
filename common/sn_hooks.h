/*
 * sn_hooks.h — what hooks.def generates for every layer, and the real
 * functions behind libsn's wrappers.
 *
 * For each entry of hooks.def: an id (SN_HOOK_ID_name), the type of the real
 * function (sn_real_name_fn) and a slot holding its address once resolved.
 * SN_REAL(name) yields the typed real function (resolving it late if it was
 * not available at initialisation; NULL if it does not exist). Resolution
 * lives here, below every other layer, so that the allocator, the core and
 * the unit tests that link them need nothing of the shim: the wrappers, their
 * prototypes and the entry protocol they follow are the shim's own
 * (shim/sn_entry.h).
 *
 * The per-thread state is here too: the core reads which library the thread
 * is inside and its current device; the shim's entry protocol writes them.
 */
#ifndef SN_HOOKS_H
#define SN_HOOKS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <cublas_v2.h>
#include <curand.h>

/* cuda.h maps the old name to the _v2 one; libsn must define both. */
#undef cuGetProcAddress

/* The libraries a hook belongs to. */
enum sn_lib { SN_LIB_NONE = 0, SN_LIB_CUDART, SN_LIB_CUDNN, SN_LIB_CUBLAS, SN_LIB_CUDA, SN_LIB_CURAND, SN_LIB_COUNT };

enum sn_hook_id {
#define SN_HOOK(lib, ret, name, params, args) SN_HOOK_ID_##name,
#define SN_REAL_ONLY(lib, ret, name, params, args) SN_HOOK_ID_##name,
#include "common/hooks.def"
    SN_HOOK_COUNT
};

#define SN_HOOK(lib, ret, name, params, args) typedef ret (*sn_real_##name##_fn) params;
#define SN_REAL_ONLY(lib, ret, name, params, args) typedef ret (*sn_real_##name##_fn) params;
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

/*
 * SN_REAL(name): the real function, to be called. In the debug build
 * (SN_DEBUG) it is a stand-in generated from hooks.def that runs the lock
 * witness (sn_witness_cuda, common/sn_lock.h) with the hook's name and then
 * forwards: "no CUDA call under a libsn lock" is checked at the call
 * itself, where the lock state matters, even when the pointer was fetched
 * earlier (fetched once and called in a loop, a lock taken or given back
 * between the two), and no call can be missed by forgetting a hand-written
 * witness. NULL stays NULL, so "if (!real)" behaves as in release.
 *
 * What is not a call must not use it: SN_REAL_PTR(name) is the real
 * function's own address, never the stand-in (to compare addresses or ask
 * dladdr which library holds it), and SN_REAL_EXISTS(name) says whether a
 * library provides it.
 */
#define SN_REAL_PTR(name) ((sn_real_##name##_fn)sn_real_get(SN_HOOK_ID_##name))
#define SN_REAL_EXISTS(name) (sn_real_get(SN_HOOK_ID_##name) != NULL)
#ifdef SN_DEBUG
/* The stand-ins, by hook id (sn_resolve.c). */
extern void *const sn_real_witnessed[SN_HOOK_COUNT];
static inline void *sn_real_get_witnessed(int id)
{
    return sn_real_get(id) ? sn_real_witnessed[id] : NULL;
}
#define SN_REAL(name) ((sn_real_##name##_fn)sn_real_get_witnessed(SN_HOOK_ID_##name))
#else
#define SN_REAL(name) SN_REAL_PTR(name)
#endif

/* When the real function does not exist: stops the program as the dynamic
 * loader would have at that call (exit status 127); never returns. */
_Noreturn cudaError_t sn_missing_CUDART(int id);
_Noreturn cudnnStatus_t sn_missing_CUDNN(int id);
_Noreturn cublasStatus_t sn_missing_CUBLAS(int id);
_Noreturn CUresult sn_missing_CUDA(int id);
_Noreturn curandStatus_t sn_missing_CURAND(int id);
#define SN_MISSING(lib, name) sn_missing_##lib(SN_HOOK_ID_##name)

/* Name and library of a hook id. */
const char *sn_hook_name(int id);
int sn_hook_lib(int id);
/* Hook id of an exact exported name, or -1. */
int sn_hook_find(const char *name);
/* Resolves every hook (at initialisation). Returns how many were found. */
int sn_resolve_all(void);
/* Loads lib (an SN_LIB_*) when the program has not, and resolves its
 * entries that are still missing from it; the library stays loaded.
 * Returns how many were found. For libsn's own work in a process that
 * reaches the device without that library (the driver API alone, a
 * statically linked runtime, cuBLAS alone). */
int sn_resolve_load(int lib);
/* 1 if p lies inside libsn's own code. */
int sn_is_own_address(const void *p);
/* The bounds [lo, hi) of libsn's code, for loops that test many addresses. */
void sn_own_text(uintptr_t *lo, uintptr_t *hi);

/* ---- the real dlsym -------------------------------------------------------- */

/* dlsym is called by sanitizer runtimes while they initialise, before their
 * shadow memory exists: what the interposed dlsym runs must not be
 * instrumented. */
#define SN_UNINSTRUMENTED __attribute__((no_sanitize("address", "thread", "undefined")))

typedef void *(*sn_dlsym_fn)(void *, const char *);
/* The C library's dlsym, never the interposed one (the shim exports dlsym):
 * dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34"), else "GLIBC_2.2.5". NULL if
 * neither exists. */
SN_UNINSTRUMENTED sn_dlsym_fn sn_real_dlsym_get(void);
void *sn_real_dlsym(void *handle, const char *name);

/* How many runtime, cuDNN and cuBLAS functions dlsym answered with
 * libsn's wrappers (libraries the program opened with dlopen): the shim
 * counts, the report reads. */
void sn_dlsym_wrapped_note(void);
unsigned long sn_dlsym_wrapped_count(void);

/* ---- per-thread state ------------------------------------------------------ */

typedef struct sn_thread_state {
    int depth;     /* 1 while inside a hooked call being handled by libsn */
    int lib;       /* the library of that call (enum sn_lib) */
    int device;    /* current device, as cudaSetDevice left it */
    int initialising;
} sn_thread_state;

extern __thread sn_thread_state sn_thread __attribute__((tls_model("initial-exec")));

/* Nonzero in a child forked from a process that had loaded libsn. */
extern int sn_forked_child;

/* Current device of the calling thread. */
static inline int sn_current_device(void)
{
    return sn_thread.device;
}

#define SN_MAX_DEVICES 16

#endif
