/*
 * hooks_driver.c — the driver layer: an interposed dlsym, cuGetProcAddress
 * and the virtual memory management entry points (the driver's plain
 * allocations are generated in hooks_alloc.c).
 *
 * The runtime (and the static runtime inside cuDNN and cuBLAS) never calls
 * the driver by name: it dlopens libcuda.so.1, asks dlsym for
 * cuGetProcAddress_v2 and then asks that for every entry point. So libsn
 * interposes dlsym itself, hands back its own cuGetProcAddress for the
 * driver's, and from there its own wrappers for the driver functions it
 * hooks. A wrapper is handed back only when the address the driver returned
 * is exactly the real function libsn wraps (same name and ABI version).
 *
 * dlsym(RTLD_NEXT, ...) answers relative to its caller, found from the
 * return address. dlsym below is therefore a tail-jumping trampoline: it asks
 * sn_dlsym_route which function should answer, then jumps there with the
 * original arguments and return address, so the real dlsym still sees the
 * original caller. Only names of functions libsn wraps are redirected. The
 * C library's own dlsym, which every lookup of libsn's uses, is found below
 * the shim (common/sn_resolve.c).
 *
 * Accounting: an allocation made while the thread is inside a runtime hook is
 * the runtime's own (already recorded by the runtime wrapper); inside a cuDNN
 * or cuBLAS hook it is that library's workspace; outside any hook it is the
 * framework's, made through the driver API or a statically linked runtime.
 */
#include "shim/sn_entry.h"

#include <dlfcn.h>
#include <string.h>

#include "core/sn_core.h"
#include "shim/sn_wrap.h"
#include "common/sn_log.h"

/* ---- the wrappers ----------------------------------------------------------------- */

/* The wrapper of each hook id (NULL for SN_REAL_ONLY): what dlsym and
 * cuGetProcAddress hand back instead of the real function. */
static void *const sn_hook_wrappers[SN_HOOK_COUNT] = {
#define SN_HOOK(lib, ret, name, params, args) [SN_HOOK_ID_##name] = (void *)name,
#include "common/hooks.def"
};

static void *sn_hook_wrapper(int id)
{
    return id >= 0 && id < SN_HOOK_COUNT ? sn_hook_wrappers[id] : NULL;
}

/* ---- redirection ------------------------------------------------------------------ */

/* Every hooked name starts with "cu" (cuda*, cudnn*, cublas*, cu[A-Z]*): a
 * cheap filter before the table is searched. */
SN_UNINSTRUMENTED static int sn_maybe_hooked_name(const char *name)
{
    return name && name[0] == 'c' && name[1] == 'u';
}

SN_UNINSTRUMENTED static int sn_is_driver_name(const char *name)
{
    return sn_maybe_hooked_name(name) && name[2] >= 'A' && name[2] <= 'Z';
}

/* The hook id of a name libsn wraps, or -1. */
static int sn_wrapped_hook_id(const char *name)
{
    if (!sn_maybe_hooked_name(name))
        return -1;
    int id = sn_hook_find(name);
    return id >= 0 && sn_hook_wrapper(id) ? id : -1;
}

/* The driver's handle, as the program or runtime opened it. */
static void *sn_libcuda_handle;

/* Whether a and b lie in files of the same name (two copies of one
 * library), as opposed to two libraries that export the same function. */
static int sn_same_library_name(const void *a, const void *b)
{
    Dl_info ia, ib;
    if (!dladdr(a, &ia) || !dladdr(b, &ib) || !ia.dli_fname || !ib.dli_fname)
        return 1;
    const char *na = strrchr(ia.dli_fname, '/'), *nb = strrchr(ib.dli_fname, '/');
    return !strcmp(na ? na + 1 : ia.dli_fname, nb ? nb + 1 : ib.dli_fname);
}

/* dlsym(handle, name) for a name libsn wraps: look up the real function in
 * that handle, remember it, answer with the wrapper. A name the library
 * lacks stays missing (NULL), as without libsn. A second, different copy of
 * a function libsn already wraps is answered with itself: the wrapper can
 * forward to one real function only. That is a library's own dispatch when
 * the copy lives in a library of another name (cuDNN 9's libcudnn.so.9
 * looks up cudnnCreate and the rest in libcudnn_graph.so.9 and forwards
 * to them: the call was already seen on its way in), and a warning only
 * when it is another copy of the same library (a second cuDNN from another
 * directory, whose calls libsn never sees). */
__attribute__((visibility("hidden"))) void *sn_dlsym_hooked(void *handle, const char *name)
{
    void *real = sn_real_dlsym(handle, name);
    if (!real || sn_is_own_address(real))
        return real;
    int id = sn_wrapped_hook_id(name);
    if (id < 0)
        return real;
    void *expected = NULL;
    if (!__atomic_compare_exchange_n(&sn_real_slot[id], &expected, real, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE) &&
        expected != real) {
        if (sn_same_library_name(expected, real))
            sn_warn_once("dlsym(%s): a second copy of a CUDA library is loaded; its calls are not seen",
                         name);
        else
            sn_debug("dlsym(%s): another library's own (its dispatch); left alone", name);
        return real;
    }
    if (sn_hook_lib(id) == SN_LIB_CUDA) {
        if (handle != RTLD_NEXT && handle != RTLD_DEFAULT)
            __atomic_store_n(&sn_libcuda_handle, handle, __ATOMIC_RELEASE);
    } else {
        /* for the report: programs that dlopen the runtime, cuDNN or
         * cuBLAS (Python ctypes, plugin loaders) */
        sn_dlsym_wrapped_note();
    }
    sn_debug("dlsym(%s): answering with libsn's wrapper", name);
    return sn_hook_wrapper(id);
}

/* dlsym(RTLD_DEFAULT, name) of a name libsn exports finds libsn's wrapper
 * first; that is right only if a real function stands behind it. Without
 * one (a program probing whether its runtime is new enough) the answer
 * must be NULL, as it would be without libsn. */
__attribute__((visibility("hidden"))) void *sn_dlsym_default(void *handle, const char *name)
{
    void *p = sn_real_dlsym(handle, name);
    if (!p || !sn_is_own_address(p))
        return p;
    int id = sn_hook_find(name);
    return id < 0 || sn_real_get(id) ? p : NULL;
}

/* Chooses who answers dlsym(handle, name): returns the function to jump to.
 * dlsym(RTLD_NEXT, ...) of a non-driver name is left alone: the answer
 * depends on the caller (another interposer looking below itself), and
 * libsn cannot ask on its behalf. */
SN_UNINSTRUMENTED __attribute__((visibility("hidden"), used)) void *sn_dlsym_route(void *handle, const char *name)
{
    if (!sn_maybe_hooked_name(name))
        return (void *)sn_real_dlsym_get();
    if (sn_wrapped_hook_id(name) >= 0) {
        if (handle == RTLD_DEFAULT)
            return (void *)sn_dlsym_default;
        if (handle != RTLD_NEXT || sn_is_driver_name(name))
            return (void *)sn_dlsym_hooked;
    }
    return (void *)sn_real_dlsym_get();
}

#if defined(__x86_64__)
/* void *dlsym(void *handle, const char *name): preserve the arguments across
 * the routing call, keep the stack 16-byte aligned, then tail-jump. */
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
        ".cfi_startproc\n"
        "    pushq %rdi\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    pushq %rsi\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    subq $8, %rsp\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    call sn_dlsym_route\n"
        "    addq $8, %rsp\n"
        ".cfi_adjust_cfa_offset -8\n"
        "    popq %rsi\n"
        ".cfi_adjust_cfa_offset -8\n"
        "    popq %rdi\n"
        ".cfi_adjust_cfa_offset -8\n"
        "    jmp *%rax\n"
        ".cfi_endproc\n"
        ".size dlsym, .-dlsym\n");
#else
#error "libsn's dlsym trampoline is written for x86-64"
#endif

/* ---- cuGetProcAddress -------------------------------------------------------------- */

/* Makes sure the real address of every wrapped driver function is known,
 * looked up in the library that provides gpa_real. */
static void sn_driver_resolve(void *gpa_real)
{
    static int done;
    if (__atomic_load_n(&done, __ATOMIC_ACQUIRE))
        return;
    void *lib = __atomic_load_n(&sn_libcuda_handle, __ATOMIC_ACQUIRE);
    void *opened = NULL;
    if (!lib) {
        Dl_info info;
        if (gpa_real && dladdr(gpa_real, &info) && info.dli_fname)
            lib = opened = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    }
    for (int id = 0; id < SN_HOOK_COUNT; id++) {
        if (sn_hook_lib(id) != SN_LIB_CUDA || __atomic_load_n(&sn_real_slot[id], __ATOMIC_ACQUIRE))
            continue;
        void *p = lib ? sn_real_dlsym(lib, sn_hook_name(id)) : NULL;
        if (p && !sn_is_own_address(p)) {
            void *expected = NULL;
            __atomic_compare_exchange_n(&sn_real_slot[id], &expected, p, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE);
        }
    }
    if (opened)
        dlclose(opened);
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
}

/* The wrapper standing for the real driver function fn, or fn itself. */
static void *sn_driver_substitute(void *fn)
{
    if (!fn)
        return fn;
    for (int id = 0; id < SN_HOOK_COUNT; id++) {
        if (sn_hook_lib(id) != SN_LIB_CUDA || !sn_hook_wrapper(id))
            continue;
        if (__atomic_load_n(&sn_real_slot[id], __ATOMIC_ACQUIRE) == fn)
            return sn_hook_wrapper(id);
    }
    return fn;
}

SN_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                       cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
    sn_real_cuGetProcAddress_v2_fn real = SN_REAL(cuGetProcAddress_v2);
    if (!real)
        return SN_MISSING(CUDA, cuGetProcAddress_v2);
    CUresult rc = real(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (rc == CUDA_SUCCESS && pfn && *pfn) {
        /* dladdr of the real function, not the debug build's stand-in */
        sn_driver_resolve((void *)SN_REAL_PTR(cuGetProcAddress_v2));
        *pfn = sn_driver_substitute(*pfn);
    }
    return rc;
}

SN_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    sn_real_cuGetProcAddress_fn real = SN_REAL(cuGetProcAddress);
    if (!real)
        return SN_MISSING(CUDA, cuGetProcAddress);
    CUresult rc = real(symbol, pfn, cudaVersion, flags);
    if (rc == CUDA_SUCCESS && pfn && *pfn) {
        sn_driver_resolve((void *)SN_REAL_PTR(cuGetProcAddress));
        *pfn = sn_driver_substitute(*pfn);
    }
    return rc;
}

/* ---- allocation entry points -------------------------------------------------------- */

/* cuMemAlloc*, cuMemFree* and their async twins are generated from hooks.def
 * (hooks_alloc.c); sn_driver_owner, shared with the VMM wrappers below, is
 * there too. */

/* ---- virtual memory management: physical handles and mappings --------------------- */

SN_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                               const CUmemAllocationProp *prop, unsigned long long flags)
{
    sn_real_cuMemCreate_fn real = SN_REAL(cuMemCreate);
    if (!real)
        return SN_MISSING(CUDA, cuMemCreate);
    SN_SCOPE_LATER();
    int owner = sn_driver_owner(&sn_scope_.entered);
    CUresult rc = real(handle, size, prop, flags);
    if (owner != SN_OWNER_NONE && rc == CUDA_SUCCESS && handle)
        sn_core_note_vmm(&(const sn_vmm_note){.what = SN_VMM_CREATE, .handle = *handle, .size = size, .owner = owner,
                                              .dev = prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE
                                                         ? prop->location.id
                                                         : sn_current_device()});
    return rc;
}

SN_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    sn_real_cuMemRelease_fn real = SN_REAL(cuMemRelease);
    if (!real)
        return SN_MISSING(CUDA, cuMemRelease);
    SN_SCOPE_LATER();
    int owner = sn_driver_owner(&sn_scope_.entered);
    CUresult rc = real(handle);
    if (owner != SN_OWNER_NONE && rc == CUDA_SUCCESS)
        sn_core_note_vmm(&(const sn_vmm_note){.what = SN_VMM_RELEASE, .handle = handle});
    return rc;
}

SN_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                            CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    sn_real_cuMemMap_fn real = SN_REAL(cuMemMap);
    if (!real)
        return SN_MISSING(CUDA, cuMemMap);
    SN_SCOPE_LATER();
    int owner = sn_driver_owner(&sn_scope_.entered);
    CUresult rc = real(ptr, size, offset, handle, flags);
    if (owner != SN_OWNER_NONE && rc == CUDA_SUCCESS)
        sn_core_note_alloc((void *)(uintptr_t)ptr, size, SN_KIND_MAPPING, owner, sn_current_device(), NULL);
    return rc;
}

SN_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    sn_real_cuMemUnmap_fn real = SN_REAL(cuMemUnmap);
    if (!real)
        return SN_MISSING(CUDA, cuMemUnmap);
    SN_SCOPE_LATER();
    int owner = sn_driver_owner(&sn_scope_.entered);
    sn_alloc *rec = owner != SN_OWNER_NONE ? sn_core_free_begin((void *)(uintptr_t)ptr, SN_KIND_MAPPING)
                                           : NULL;
    CUresult rc = real(ptr, size);
    sn_core_free_end(rec, rc == CUDA_SUCCESS);
    return rc;
}

SN_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                       CUdeviceptr addr, unsigned long long flags)
{
    sn_real_cuMemAddressReserve_fn real = SN_REAL(cuMemAddressReserve);
    if (!real)
        return SN_MISSING(CUDA, cuMemAddressReserve);
    SN_SCOPE_LATER();
    int owner = sn_driver_owner(&sn_scope_.entered);
    CUresult rc = real(ptr, size, alignment, addr, flags);
    if (owner != SN_OWNER_NONE && rc == CUDA_SUCCESS && ptr)
        sn_core_note_vmm(&(const sn_vmm_note){.what = SN_VMM_RESERVE, .addr = (uintptr_t)*ptr, .size = size,
                                              .owner = owner});
    return rc;
}

SN_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    sn_real_cuMemAddressFree_fn real = SN_REAL(cuMemAddressFree);
    if (!real)
        return SN_MISSING(CUDA, cuMemAddressFree);
    SN_SCOPE_LATER();
    int owner = sn_driver_owner(&sn_scope_.entered);
    CUresult rc = real(ptr, size);
    if (owner != SN_OWNER_NONE && rc == CUDA_SUCCESS)
        sn_core_note_vmm(&(const sn_vmm_note){.what = SN_VMM_RESERVE_FREE, .addr = (uintptr_t)ptr});
    return rc;
}

/* Free and total memory: in manage mode the budget's view (see
 * sn_core_mem_info), for programs that size themselves by it. */
SN_EXPORT CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    sn_real_cuMemGetInfo_v2_fn real = SN_REAL(cuMemGetInfo_v2);
    if (!real)
        return SN_MISSING(CUDA, cuMemGetInfo_v2);
    SN_SCOPE_LATER();
    if (sn_driver_owner(&sn_scope_.entered) != SN_OWNER_NONE &&
        sn_core_mem_info(sn_current_device(), free, total) == 0)
        return CUDA_SUCCESS;
    return real(free, total);
}
