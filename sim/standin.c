/*
 * standin.c — what SIMGPU_COMPUTE=libs runs in place of a kernel without a
 * CPU body (an nvcc-built kernel: the simulator has its image's metadata,
 * never its code).
 *
 * The point is to make byte identity between runs meaningful for a program
 * whose own kernels cannot run here: data written by a kernel must depend
 * on the data the kernel was given, so that a memory manager that loses a
 * write-back or serves a stale copy changes the bytes a later cuDNN or
 * cuBLAS call (which compute for real) reads, and with them the program's
 * results. The stand-in is deterministic:
 *
 *  - from every pointer parameter that points into mapped device memory it
 *    reads a fixed 4-byte prefix (fewer where the mapping ends sooner; a
 *    pointer into nothing mapped is skipped, as a kernel may be handed a
 *    pointer it never touches);
 *  - it hashes (64-bit FNV-1a, finished with the splitmix64 mixer) the
 *    kernel's mangled name, its by-value parameter bytes and the prefixes,
 *    in parameter order;
 *  - it writes a value derived from the hash and the parameter's index
 *    into the prefix of every pointer parameter the kernel may write: the
 *    non-const pointers of its mangled name (common/sn_mangle.c), or, when the
 *    name says nothing (extern "C", a form the parser refuses), every
 *    8-byte parameter whose value is a device address.
 *
 * The prefix is fixed-size on purpose: a memory manager may place an
 * allocation inside a larger mapping of its own, so "to the end of the
 * allocation" as the simulator sees it would take in other tensors' bytes
 * and differ between runs with and without the manager. For the same
 * reason pointer values never enter the hash (a manager serves other
 * addresses), nor do device addresses inside a by-value struct.
 *
 * The value written must keep the data finite: NaN would spread through
 * every later computation and make all runs alike. A pointer to an integer
 * type gets a small non-negative integer (0..255; 0 or 1 for bool). Any
 * other gets a float in [-1, 1) with mantissa bit 14 clear, which is
 * finite read as a float, as the low word of a double, and as two halves
 * or two bfloat16s (bit 14 is the top bit of the low half's exponent).
 *
 * The accesses are declared to the ordering checks (sim/hazard.c) like any
 * library's: reads of the prefixes, writes of those written.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/fatbin.h"
#include "common/sn_mangle.h"
#include "sim/simint.h"

#define PREFIX 4

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

/* How many bytes from p, up to PREFIX, the device can read (write): fewer
 * where the mapping ends, 0 when p is not mapped device memory. */
static size_t prefix_len(const void *p, int write)
{
    for (size_t n = PREFIX; n > 0; n--)
        if (simgpu_range_ok(p, n, write))
            return n;
    return 0;
}

/* A by-value parameter's bytes, each 8-byte word that holds a device
 * address hashed as a marker instead: a struct carrying a pointer must
 * hash alike wherever the memory manager put the buffer. */
static uint64_t hash_value(uint64_t h, const unsigned char *b, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        if (w && simgpu_device_of((const void *)(uintptr_t)w) >= 0)
            h = fnv(h, "@addr@@", 8);
        else
            h = fnv(h, b + i, 8);
    }
    return fnv(h, b + i, n - i);
}

/* The 4 bytes written through output i. */
static void stand_in_value(uint64_t h, int i, unsigned elem, unsigned char out[PREFIX])
{
    uint64_t v = mix64(h + 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1));
    if (elem == SN_ELEM_INT) {
        uint32_t x = (uint32_t)(v & 0xff);
        memcpy(out, &x, PREFIX);
    } else if (elem == SN_ELEM_BOOL) {
        for (int k = 0; k < PREFIX; k++)
            out[k] = (unsigned char)((v >> k) & 1);
    } else {
        /* A signed 24-bit integer over 2^23: exactly a float in [-1, 1). */
        int32_t q = (int32_t)(uint32_t)(v >> 40) - (1 << 23);
        float f = (float)q / 8388608.0f;
        uint32_t bits;
        memcpy(&bits, &f, 4);
        bits &= ~(uint32_t)(1u << 14);
        memcpy(out, &bits, PREFIX);
    }
}

struct slot {
    void *p;              /* the pointer, or NULL for a by-value parameter */
    size_t rd, wr;        /* prefix bytes read, bytes it may write */
    unsigned char elem;
};

/* Whether parameter i is a pointer the stand-in reads, and may write. */
static int classify(const struct sn_ptype *sig, int i, const struct simfb_param *l, void *arg, void **p)
{
    *p = NULL;
    if (l->size != sizeof(void *))
        return SN_PARAM_VALUE;
    memcpy(p, arg, sizeof *p);
    if (sig)
        return sig[i].kind;
    return *p && simgpu_device_of(*p) >= 0 ? SN_PARAM_OUT : SN_PARAM_VALUE;
}

void sim_standin_run(const char *symbol, const char *label, int nparams, const struct simfb_param *layout,
                     const struct sn_ptype *sig, void **args)
{
    struct slot stack[64];
    struct slot *sl = nparams <= 64 ? stack : malloc((size_t)nparams * sizeof *sl);
    if (!sl)
        return; /* no memory for the bookkeeping: the launch is only timed */
    uint64_t h = fnv(0xcbf29ce484222325ull, symbol, strlen(symbol) + 1);
    for (int i = 0; i < nparams; i++) {
        struct slot *s = &sl[i];
        const unsigned char *arg = args ? args[i] : NULL;
        memset(s, 0, sizeof *s);
        h = fnv(h, &i, sizeof i);
        if (!arg)
            continue;
        int kind = classify(sig, i, &layout[i], args[i], &s->p);
        if (kind == SN_PARAM_VALUE) {
            s->p = NULL;
            h = fnv(h, "v", 1);
            h = hash_value(h, arg, layout[i].size);
            continue;
        }
        unsigned char prefix[PREFIX];
        s->rd = prefix_len(s->p, 0);
        s->wr = kind == SN_PARAM_OUT ? prefix_len(s->p, 1) : 0;
        s->elem = sig ? sig[i].elem : SN_ELEM_OTHER;
        if (s->rd) /* (s->p may be NULL: memcpy must not see it even for 0 bytes) */
            memcpy(prefix, s->p, s->rd);
        h = fnv(h, s->rd ? "p" : "n", 1);
        h = fnv(h, &s->rd, sizeof s->rd);
        h = fnv(h, prefix, s->rd);
        simgpu_check_range(s->p, s->rd, 0, label);
        simgpu_check_range(s->p, s->wr, 1, label);
    }
    h = mix64(h);
    /* Every read is done before the first write, so that a pointer passed
     * twice hashes the same as two pointers to equal data. */
    for (int i = 0; i < nparams; i++) {
        if (!sl[i].wr)
            continue;
        unsigned char v[PREFIX];
        stand_in_value(h, i, sl[i].elem, v);
        memcpy(sl[i].p, v, sl[i].wr);
    }
    if (sl != stack)
        free(sl);
}
