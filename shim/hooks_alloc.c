/*
 * hooks_alloc.c — the generated wrappers of every allocation and free entry
 * point in hooks.def (SN_HOOK_ALLOC, SN_HOOK_FREE): the runtime's cudaMalloc
 * family, pinned host memory, and the driver's cuMemAlloc family that
 * libraries with a static runtime (cuDNN, cuBLAS) and static-runtime
 * programs reach through cuGetProcAddress.
 *
 * Whose allocation it is decides whether libsn records it: the runtime
 * wrappers record the framework's own; a driver call made from inside a
 * runtime wrapper is the runtime's (already recorded), one from inside cuDNN
 * or cuBLAS is that library's workspace, and one from outside any wrapper
 * is the framework's, made through the driver API. A free takes its record
 * out of the registry before the real call (sn_core_free_begin), so that a
 * racing allocation of the same address keeps its own.
 *
 * In manage mode a device allocation first goes to the core
 * (sn_core_alloc), which serves it from libsn's arena or says it does not
 * fit; only what the arena does not take reaches the real function. A free
 * of memory the arena served never reaches the real function either.
 *
 * Pitched allocations are served too: the arena picks the pitch (each row
 * rounded up to SN_PITCH_ALIGN bytes, what CUDA returns on the GPUs we have
 * measured; the API promises only that rows are aligned for coalescing, and
 * a program must use the pitch it is given). Managed, pinned host and
 * stream-ordered memory (cudaMallocAsync, cuMemAllocAsync) always reach the
 * real functions: managed memory pages itself, pinned memory is the host's,
 * and stream-ordered memory lives in the driver's pools, whose reuse follows
 * the stream order of its frees; those allocations are recorded and seen by
 * the tracer, and count against SN_BUDGET only through what the device
 * reports free.
 */
#include "shim/sn_wrap.h"

#define SN_PITCH_ALIGN 512u

/* The bytes a pitched allocation takes when the arena serves it, storing the
 * pitch it will have; 0 (forward to the real function, which checks the
 * arguments and answers) for arguments CUDA would refuse or round oddly. */
static inline size_t sn_pitch_want(size_t *pitch, size_t width, size_t height, unsigned elem)
{
    if (!pitch || !width || !height || width > 2147483647u || (elem != 4 && elem != 8 && elem != 16))
        return 0;
    size_t row = (width + SN_PITCH_ALIGN - 1) / SN_PITCH_ALIGN * SN_PITCH_ALIGN, bytes;
    if (__builtin_mul_overflow(row, height, &bytes))
        return 0;
    *pitch = row;
    return bytes;
}

int sn_driver_owner(int *entered)
{
    *entered = 0;
    sn_thread_state *t = &sn_thread;
    if (t->depth) {
        switch (t->lib) {
        case SN_LIB_CUDNN: return SN_OWNER_CUDNN;
        case SN_LIB_CUBLAS: return SN_OWNER_CUBLAS;
        default: return SN_OWNER_NONE;
        }
    }
    if (!sn_enter(SN_LIB_CUDA))
        return SN_OWNER_NONE;
    *entered = 1;
    return SN_OWNER_DRIVER;
}

/* The runtime's allocations are the framework's, when libsn takes them at all. */
static inline int sn_runtime_owner(int *entered)
{
    *entered = sn_enter(SN_LIB_CUDART);
    return *entered ? SN_OWNER_FRAMEWORK : SN_OWNER_NONE;
}

#define SN_OWNER_OF_CUDART(entered) sn_runtime_owner(entered)
#define SN_OWNER_OF_CUDA(entered) sn_driver_owner(entered)
#define SN_SUCCESS_CUDART cudaSuccess
#define SN_SUCCESS_CUDA CUDA_SUCCESS

#define SN_NOMEM_CUDART cudaErrorMemoryAllocation
#define SN_NOMEM_CUDA CUDA_ERROR_OUT_OF_MEMORY

#define SN_HOOK(lib, ret, name, params, args)
#define SN_HOOK_PLAIN(lib, ret, name, params, args)
#define SN_HOOK_ALLOC(lib, ret, name, params, args, out, bytes, kind, want)               \
    SN_EXPORT ret name params                                                            \
    {                                                                                    \
        sn_real_##name##_fn real = SN_REAL(name);                                        \
        if (__builtin_expect(!real, 0))                                                  \
            return SN_MISSING(lib, name);                                                \
        SN_SCOPE_LATER();                                                                \
        int owner = SN_OWNER_OF_##lib(&sn_scope_.entered);                               \
        if (owner == SN_OWNER_NONE)                                                      \
            return real args;                                                            \
        if ((want) && (out)) {                                                           \
            uintptr_t served = 0;                                                        \
            int how = sn_core_alloc((want), (kind), owner, sn_current_device(), &served); \
            if (how == SN_CORE_SERVED) {                                                 \
                *(out) = (__typeof__(*(out)))served;                                     \
                return SN_SUCCESS_##lib;                                                 \
            }                                                                            \
            if (how == SN_CORE_NOMEM)                                                    \
                return SN_NOMEM_##lib;                                                   \
        }                                                                                \
        ret rc = real args;                                                              \
        if (rc == SN_SUCCESS_##lib && (out))                                             \
            sn_core_note_alloc((void *)(uintptr_t) * (out), (bytes), (kind), owner,      \
                               sn_current_device(), NULL);                               \
        return rc;                                                                       \
    }
#define SN_HOOK_FREE(lib, ret, name, params, args, ptr, kinds)                           \
    SN_EXPORT ret name params                                                            \
    {                                                                                    \
        sn_real_##name##_fn real = SN_REAL(name);                                        \
        if (__builtin_expect(!real, 0))                                                  \
            return SN_MISSING(lib, name);                                                \
        SN_SCOPE_LATER();                                                                \
        if (SN_OWNER_OF_##lib(&sn_scope_.entered) == SN_OWNER_NONE)                      \
            return real args;                                                            \
        sn_alloc *rec = sn_core_free_begin((void *)(uintptr_t)(ptr), (kinds));           \
        if (rec && rec->managed) {                                                       \
            sn_core_free_served(rec);                                                    \
            return SN_SUCCESS_##lib;                                                     \
        }                                                                                \
        ret rc = real args;                                                              \
        sn_core_free_end(rec, rc == SN_SUCCESS_##lib);                                   \
        return rc;                                                                       \
    }
#include "common/hooks.def"
