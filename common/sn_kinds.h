/*
 * sn_kinds.h — what kind of memory an allocation is and on whose behalf it
 * was made. Shared by every layer (core's registry, the tracer's tensor
 * table, the allocator's placement), so that none of them spells a kind as
 * a bare number.
 */
#ifndef SN_KINDS_H
#define SN_KINDS_H

enum sn_alloc_kind {
    SN_KIND_DEVICE = 1,   /* cudaMalloc, cuMemAlloc, pitched, async */
    SN_KIND_MANAGED = 2,  /* cudaMallocManaged */
    SN_KIND_HOST = 4,     /* pinned host memory */
    SN_KIND_MAPPING = 8,  /* a VMM range mapped with cuMemMap */
};
#define SN_KIND_ANY_DEVICE (SN_KIND_DEVICE | SN_KIND_MANAGED | SN_KIND_MAPPING)
#define SN_KIND_ANY (SN_KIND_ANY_DEVICE | SN_KIND_HOST)

enum sn_owner {
    SN_OWNER_NONE = 0,
    SN_OWNER_FRAMEWORK = 1,  /* through the runtime API */
    SN_OWNER_DRIVER = 2,     /* through the driver API (or a static runtime) */
    SN_OWNER_CUDNN = 3,      /* inside cuDNN, on its own behalf */
    SN_OWNER_CUBLAS = 4,     /* inside cuBLAS, on its own behalf */
    SN_OWNER_COUNT
};

#endif
