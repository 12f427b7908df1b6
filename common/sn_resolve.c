/*
 * sn_resolve.c — finding the real functions behind libsn's wrappers.
 *
 * Every entry of hooks.def is looked up with dlsym(RTLD_NEXT, name), i.e. in
 * the objects loaded after libsn; if that fails (the library was dlopened
 * privately, or is not loaded yet) the library is looked up by its SONAME
 * without loading it. A lookup that lands inside libsn itself is refused:
 * calling it would recurse. Entries missing at initialisation are retried
 * when first called, so libraries loaded later are still found.
 *
 * The C library's own dlsym is found here too (the shim exports an
 * interposing dlsym, which every lookup of libsn's must bypass), as are the
 * per-thread state and the counters the shim keeps for the report: the
 * layers above read them without linking the shim.
 */
#include "common/sn_hooks.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "common/sn_lock.h"
#include "common/sn_log.h"

void *sn_real_slot[SN_HOOK_COUNT];

__thread sn_thread_state sn_thread __attribute__((tls_model("initial-exec")));
int sn_forked_child;

/* (the wrappers are the shim's: it keeps its own table of them) */
typedef struct sn_hook_info {
    const char *name;
    int lib;
} sn_hook_info;

static const sn_hook_info sn_hook_table[SN_HOOK_COUNT] = {
#define SN_HOOK(lib, ret, name, params, args) [SN_HOOK_ID_##name] = {#name, SN_LIB_##lib},
#define SN_REAL_ONLY(lib, ret, name, params, args) [SN_HOOK_ID_##name] = {#name, SN_LIB_##lib},
#include "common/hooks.def"
};

static const char *const sn_lib_soname[SN_LIB_COUNT] = {
    [SN_LIB_CUDART] = "libcudart.so.13",
    [SN_LIB_CUDNN] = "libcudnn.so.9",
    [SN_LIB_CUBLAS] = "libcublas.so.13",
    [SN_LIB_CUDA] = "libcuda.so.1",
    [SN_LIB_CURAND] = "libcurand.so.10",
};

const char *sn_hook_name(int id)
{
    return id >= 0 && id < SN_HOOK_COUNT ? sn_hook_table[id].name : "?";
}

int sn_hook_lib(int id)
{
    return id >= 0 && id < SN_HOOK_COUNT ? sn_hook_table[id].lib : SN_LIB_NONE;
}

int sn_hook_find(const char *name)
{
    for (int i = 0; i < SN_HOOK_COUNT; i++)
        if (strcmp(sn_hook_table[i].name, name) == 0)
            return i;
    return -1;
}

#ifdef SN_DEBUG
/* SN_REAL's stand-ins in the debug build (sn_hooks.h): the witness, then
 * the real function. Reached only once the real one was found. */
#define SN_HOOK(lib, ret, name, params, args)                                  \
    static ret sn_witnessed_##name params                                      \
    {                                                                          \
        sn_witness_cuda(#name);                                                \
        return SN_REAL_PTR(name) args;                                         \
    }
#define SN_REAL_ONLY SN_HOOK
#include "common/hooks.def"

void *const sn_real_witnessed[SN_HOOK_COUNT] = {
#define SN_HOOK(lib, ret, name, params, args) [SN_HOOK_ID_##name] = (void *)sn_witnessed_##name,
#define SN_REAL_ONLY SN_HOOK
#include "common/hooks.def"
};
#endif

/* ---- the real dlsym ------------------------------------------------------------- */

static sn_dlsym_fn sn_dlsym_real;

SN_UNINSTRUMENTED sn_dlsym_fn sn_real_dlsym_get(void)
{
    sn_dlsym_fn f = __atomic_load_n(&sn_dlsym_real, __ATOMIC_ACQUIRE);
    if (f)
        return f;
    f = (sn_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!f)
        f = (sn_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    __atomic_store_n(&sn_dlsym_real, f, __ATOMIC_RELEASE);
    return f;
}

void *sn_real_dlsym(void *handle, const char *name)
{
    sn_dlsym_fn f = sn_real_dlsym_get();
    return f ? f(handle, name) : NULL;
}

static unsigned long sn_dlsym_wrapped;

void sn_dlsym_wrapped_note(void)
{
    __atomic_add_fetch(&sn_dlsym_wrapped, 1, __ATOMIC_RELAXED);
}

unsigned long sn_dlsym_wrapped_count(void)
{
    return __atomic_load_n(&sn_dlsym_wrapped, __ATOMIC_RELAXED);
}

/* ---- libsn's own code ------------------------------------------------------------ */

/* libsn's own code: the loaded segment that holds this function. Found
 * once; wrappers, trampolines and every libsn frame lie inside it. */
static uintptr_t sn_text_lo, sn_text_hi;
static pthread_once_t sn_text_once = PTHREAD_ONCE_INIT;

static int sn_find_own_text(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uintptr_t probe = (uintptr_t)data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (probe >= lo && probe < hi) {
            sn_text_lo = lo;
            sn_text_hi = hi;
            return 1;
        }
    }
    return 0;
}

static void sn_own_text_init(void)
{
    dl_iterate_phdr(sn_find_own_text, (void *)(uintptr_t)sn_own_text);
}

void sn_own_text(uintptr_t *lo, uintptr_t *hi)
{
    pthread_once(&sn_text_once, sn_own_text_init);
    *lo = sn_text_lo;
    *hi = sn_text_hi;
}

int sn_is_own_address(const void *p)
{
    uintptr_t lo, hi;
    sn_own_text(&lo, &hi);
    return (uintptr_t)p - lo < hi - lo;
}

static void *sn_lookup(int id)
{
    const sn_hook_info *h = &sn_hook_table[id];
    void *p = sn_real_dlsym(RTLD_NEXT, h->name);
    if (p && sn_is_own_address(p))
        p = NULL;
    if (!p && sn_lib_soname[h->lib]) {
        void *lib = dlopen(sn_lib_soname[h->lib], RTLD_LAZY | RTLD_NOLOAD);
        if (lib) {
            p = sn_real_dlsym(lib, h->name);
            if (p && sn_is_own_address(p))
                p = NULL;
            dlclose(lib);
        }
    }
    return p;
}

void *sn_resolve_late(int id)
{
    void *p = sn_lookup(id);
    if (p) {
        void *expected = NULL;
        if (!__atomic_compare_exchange_n(&sn_real_slot[id], &expected, p, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE))
            p = expected;
    }
    return p;
}

int sn_resolve_load(int lib)
{
    if (lib < 0 || lib >= SN_LIB_COUNT || !sn_lib_soname[lib])
        return 0;
    void *h = dlopen(sn_lib_soname[lib], RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return 0;
    int found = 0;
    for (int id = 0; id < SN_HOOK_COUNT; id++) {
        if (sn_hook_table[id].lib != lib || __atomic_load_n(&sn_real_slot[id], __ATOMIC_ACQUIRE))
            continue;
        void *p = sn_real_dlsym(h, sn_hook_table[id].name);
        void *expected = NULL;
        if (p && !sn_is_own_address(p) &&
            __atomic_compare_exchange_n(&sn_real_slot[id], &expected, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            found++;
    }
    return found;
}

int sn_resolve_all(void)
{
    int found = 0;
    for (int id = 0; id < SN_HOOK_COUNT; id++)
        if (__atomic_load_n(&sn_real_slot[id], __ATOMIC_ACQUIRE) || sn_resolve_late(id))
            found++;
    return found;
}

/* A wrapper whose real function no loaded library provides stands for a
 * symbol the program could not have bound without libsn: with lazy binding
 * the loader stops the program at its first call ("symbol lookup error",
 * exit status 127), with immediate binding it would not have started.
 * libsn does what the loader would have done at that call, rather than
 * invent an error code the library never returns (and that its last-error
 * state would not agree with). */
static _Noreturn void sn_missing(int id)
{
    sn_error("%s: no loaded CUDA library provides this function; without libsn the program stops "
             "here with \"symbol lookup error: undefined symbol: %s\"",
             sn_hook_name(id), sn_hook_name(id));
    _exit(127);
}

cudaError_t sn_missing_CUDART(int id)
{
    sn_missing(id);
}

cudnnStatus_t sn_missing_CUDNN(int id)
{
    sn_missing(id);
}

cublasStatus_t sn_missing_CUBLAS(int id)
{
    sn_missing(id);
}

CUresult sn_missing_CUDA(int id)
{
    sn_missing(id);
}

curandStatus_t sn_missing_CURAND(int id)
{
    sn_missing(id);
}
