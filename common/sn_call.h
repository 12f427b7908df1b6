/*
 * sn_call.h — an intercepted call described as what it does to device
 * memory: the ranges it reads and writes, the stream it runs on, its shapes
 * and parameters. Wrappers fill one on the stack; the tracer (and later the
 * memory manager) consume it. Extents are exact where the library's
 * arguments say them (cuDNN descriptors, cuBLAS dimensions and leading
 * dimensions, memcpy/memset sizes) and conservative for kernels.
 */
#ifndef SN_CALL_H
#define SN_CALL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* How a call touches a range. */
enum sn_access_mode {
    SN_READ = 1,
    SN_WRITE = 2,
    SN_OVERWRITE = 4,  /* writes every byte of the range without reading it */
    SN_SCRATCH = 8,    /* workspace: contents meaningless before and after */
    /* A kernel's pointer parameter whose declared type (its mangled name,
     * common/sn_mangle.h) is a pointer to const (IN) or one it may write
     * through (OUT). For the trace model only: the range stays read and
     * written, so the manager moves what it would without them. */
    SN_DECLARED_IN = 16,
    SN_DECLARED_OUT = 32,
};

enum sn_op {
#define SN_OP(id, name, phase, layer) SN_OP_##id,
#include "common/sn_ops.def"
#undef SN_OP
    SN_OP_COUNT
};

/* A convolution's cuDNN handle and descriptors (defined where cuDNN's
 * types are known: core/sn_convsearch.h). */
typedef struct sn_conv_geom sn_conv_geom;

typedef struct sn_range {
    uintptr_t addr;
    uint64_t bytes;
    unsigned mode;
} sn_range;

#define SN_SHAPE_MAX_DIMS 5
typedef struct sn_shape {
    int nd;
    int dim[SN_SHAPE_MAX_DIMS];
} sn_shape;

/* Flags of a call. */
enum sn_call_flags {
    SN_CALL_OPAQUE = 1,     /* libsn cannot see what it touches */
    SN_CALL_HOST_SYNC = 2,  /* the host waits for it (synchronous copy) */
    SN_CALL_HOST_PINNED = 4, /* a host<->device copy whose host side is pinned
                                memory: its rate is the one libsn's own copies get */
};

/* Ranges a call holds in itself; one with more (a kernel with many
 * pointer parameters, a multi-tensor apply) spills the rest to an array
 * on the heap that the call owns (sn_call_release frees it). No number of
 * ranges makes a call opaque. */
#define SN_CALL_INLINE_RANGES 24
#define SN_CALL_MAX_SHAPES 4

typedef struct sn_call {
    int hook;                /* SN_HOOK_ID_* of the wrapper */
    int op;                  /* enum sn_op */
    int dev;                 /* device the call runs on */
    void *stream;            /* cudaStream_t it is ordered on */
    unsigned flags;
    int nranges;
    sn_range range[SN_CALL_INLINE_RANGES]; /* the first ranges: sn_call_range_at reads any */
    sn_range *spill;         /* ranges SN_CALL_INLINE_RANGES.., NULL while none */
    int cap_spill;
    int nshapes;
    sn_shape shape[SN_CALL_MAX_SHAPES];
    uint64_t params;         /* hash of the parameters that are not shapes */
    uint64_t shape_hash;     /* hash of the shapes, built by sn_call_shape */
    int algo;                /* convolution algorithm, a kernel's kind (sn_kernel_kind), -1 if none */
    uint64_t workspace;      /* workspace bytes given to the call */
    uint64_t conf;           /* convolution configuration (direction, descriptors), 0 if none:
                                what the algorithms measured for it are cached under */
    double flops;            /* arithmetic, when known (for reports) */
    void *lib_handle;        /* the cuDNN or cuBLAS handle the call is on, NULL if none */
    int lib_memory;          /* whether the call may use the handle's own memory (its default
                                workspace, its state): every call on a handle but cuBLAS's
                                element-wise vector routines. 1 unless a hook says otherwise,
                                so a hook that does not say keeps the memory resident */
    const sn_conv_geom *geom; /* a convolution's handle and descriptors (core/sn_convsearch.h), else NULL */
} sn_call;

/* One step of the hashes of parameters and signatures: cheap (a multiply
 * and a rotation per value, a dozen times on every intercepted call) and
 * well mixed: the multiply carries each bit upwards, the rotation brings
 * the well-mixed high half down to where the next multiply spreads it. */
static inline uint64_t sn_hash_mix(uint64_t h, uint64_t v)
{
    h = (h ^ v ^ 0x9e3779b97f4a7c15ULL) * 0xbf58476d1ce4e5b9ULL;
    return h << 33 | h >> 31;
}

static inline void sn_call_init(sn_call *c, int hook, int op, int dev, void *stream)
{
    c->hook = hook;
    c->op = op;
    c->dev = dev;
    c->stream = stream;
    c->flags = 0;
    c->nranges = 0;
    c->spill = NULL;
    c->nshapes = 0;
    c->params = 0;
    c->shape_hash = 0;
    c->algo = -1;
    c->workspace = 0;
    c->conf = 0;
    c->flops = 0;
    c->lib_handle = NULL;
    c->lib_memory = 1;
    c->geom = NULL;
}

/* Range i of a call (i < nranges). */
static inline sn_range *sn_call_range_at(sn_call *c, int i)
{
    return __builtin_expect(i < SN_CALL_INLINE_RANGES, 1) ? &c->range[i]
                                                          : &c->spill[i - SN_CALL_INLINE_RANGES];
}

static inline const sn_range *sn_call_range_get(const sn_call *c, int i)
{
    return __builtin_expect(i < SN_CALL_INLINE_RANGES, 1) ? &c->range[i]
                                                          : &c->spill[i - SN_CALL_INLINE_RANGES];
}

/* Frees what a call spilled; the call stays valid with its inline ranges
 * only (and may grow again). */
static inline void sn_call_release(sn_call *c)
{
    if (__builtin_expect(c->spill != NULL, 0)) {
        free(c->spill);
        c->spill = NULL;
        if (c->nranges > SN_CALL_INLINE_RANGES)
            c->nranges = SN_CALL_INLINE_RANGES;
    }
}

/* A call on the stack whose spilled ranges are freed on every way out of
 * its scope (before sn_call_init, too). */
#define SN_CALL_DECL(c)                                                        \
    sn_call c __attribute__((cleanup(sn_call_release)));                       \
    c.spill = NULL; c.nranges = 0

/* Adds a range past the inline ones, to the heap array (grown as
 * needed); without heap the call becomes opaque: described as more,
 * never less. Out of line: the common call never gets here, and its
 * inline path stays what it was before calls could grow. */
__attribute__((noinline, unused)) static void sn_call_range_spill(sn_call *c, const void *p, uint64_t bytes,
                                                                  unsigned mode)
{
    int i = c->nranges - SN_CALL_INLINE_RANGES;
    if (!c->spill || i >= c->cap_spill) {
        int cap = c->spill ? c->cap_spill * 2 : 64;
        sn_range *grown = cap > 0 ? realloc(c->spill, (size_t)cap * sizeof *grown) : NULL;
        if (!grown) {
            c->flags |= SN_CALL_OPAQUE;
            return;
        }
        c->spill = grown;
        c->cap_spill = cap;
    }
    c->spill[i] = (sn_range){(uintptr_t)p, bytes, mode};
    c->nranges++;
}

/* Adds a range; empty ranges and NULL pointers are ignored. */
static inline void sn_call_range(sn_call *c, const void *p, uint64_t bytes, unsigned mode)
{
    if (!p || !bytes)
        return;
    if (__builtin_expect(c->nranges >= SN_CALL_INLINE_RANGES, 0)) {
        sn_call_range_spill(c, p, bytes, mode);
        return;
    }
    sn_range *r = &c->range[c->nranges++];
    r->addr = (uintptr_t)p;
    r->bytes = bytes;
    r->mode = mode;
}

/* Adds a shape; hash is the shape's own hash when the caller has it
 * already (descriptors cache theirs), 0 to compute it here. */
static inline void sn_call_shape_hashed(sn_call *c, int nd, const int *dim, uint64_t hash)
{
    if (nd > SN_SHAPE_MAX_DIMS)
        nd = SN_SHAPE_MAX_DIMS;
    if (nd < 0)
        nd = 0;
    if (!hash) {
        hash = (uint64_t)nd + 1;
        for (int i = 0; i < nd; i++)
            hash = sn_hash_mix(hash, (uint64_t)(unsigned)dim[i]);
    }
    c->shape_hash = sn_hash_mix(c->shape_hash, hash);
    if (c->nshapes >= SN_CALL_MAX_SHAPES)
        return;
    sn_shape *s = &c->shape[c->nshapes++];
    s->nd = nd;
    for (int i = 0; i < nd; i++)
        s->dim[i] = dim[i];
}

/* Adds a shape kept ready by the caller (nd already within
 * SN_SHAPE_MAX_DIMS) with its hash: descriptor caches keep theirs. */
static inline void sn_call_shape_ready(sn_call *c, const sn_shape *s, uint64_t hash)
{
    c->shape_hash = sn_hash_mix(c->shape_hash, hash);
    if (c->nshapes < SN_CALL_MAX_SHAPES)
        c->shape[c->nshapes++] = *s;
}

static inline void sn_call_shape(sn_call *c, int nd, const int *dim)
{
    sn_call_shape_hashed(c, nd, dim, 0);
}

/* ---- pure extent arithmetic (unit-tested without CUDA) ------------------- */

/* Bytes spanned by a strided tensor: (sum (dim_i - 1) * stride_i + 1) * elem.
 * 0 if any dimension is 0 or the arguments are invalid. */
uint64_t sn_extent_strided(int nd, const int *dim, const int *stride, unsigned elem_bytes);
/* 1 if the strided tensor covers its extent with no gaps (every byte written). */
int sn_extent_is_dense(int nd, const int *dim, const int *stride);
/* Bytes spanned by a column-major rows x cols matrix with leading dimension
 * ld (inline: every cuBLAS call computes its matrices' extents). */
static inline uint64_t sn_extent_matrix(long rows, long cols, long ld, unsigned elem_bytes)
{
    if (rows <= 0 || cols <= 0 || ld < rows || !elem_bytes)
        return 0;
    unsigned __int128 span = (unsigned __int128)(unsigned long)ld * (unsigned long)(cols - 1) +
                             (unsigned long)rows;
    span *= elem_bytes;
    return span > UINT64_MAX / 2 ? 0 : (uint64_t)span;
}

/* Bytes spanned by a vector of n elements with increment inc. */
static inline uint64_t sn_extent_vector(long n, long inc, unsigned elem_bytes)
{
    if (n <= 0 || inc == 0 || !elem_bytes)
        return 0;
    unsigned long a = (unsigned long)(inc < 0 ? -inc : inc);
    unsigned __int128 span = ((unsigned __int128)a * (unsigned long)(n - 1) + 1) * elem_bytes;
    return span > UINT64_MAX / 2 ? 0 : (uint64_t)span;
}

#endif
