/*
 * module.c — the simulated driver's kernels: modules (cuModuleLoadData,
 * cuModuleLoadFatBinary, cuLibraryLoadData), their functions, and kernel
 * launches (cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel),
 * with cuFuncGetParamInfo and cuFuncGetName.
 *
 * This is the one registry of launchable functions: the runtime registers
 * nvcc's kernels (__cudaRegisterFatBinary / __cudaRegisterFunction) and the
 * host kernels of sim/simgpu.h here through simgpu_func_* (sim/kernels.c),
 * and launches them through cuLaunchKernel, so the driver and the runtime
 * see the same functions and an interposer sees the nested driver launch as
 * on real CUDA. A CUfunction, a CUkernel and the runtime's cudaKernel_t are
 * all an entry of this registry.
 *
 * Images: a simgpu_host_module (sim/simgpu.h), whose kernels are host
 * functions run in stream order on the CPU; an nvcc fat binary, a bare cubin
 * (ELF) or PTX text, whose kernels have no body: with SIMGPU_COMPUTE=0 their
 * launches are modelled with a nominal duration, with compute on they fail
 * as CUDA does for a missing kernel image, and with SIMGPU_COMPUTE=libs a
 * deterministic stand-in runs in their place for the same nominal
 * duration (sim/standin.c). Their parameter layouts come from the image's
 * metadata (sim/fatbin.c), their parameter types, for the stand-in, from
 * their mangled names (common/sn_mangle.c). A module's functions stay allocated
 * after cuModuleUnload (the handles are refused, but a graph that captured a
 * launch still holds its node).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <fatbinary_section.h>
#include <uthash.h>

#include "sim/fatbin.h"
#include "common/sn_mangle.h"
#include "sim/simgpu.h"
#include "sim/simgraph.h"
#include "sim/simint.h"

/* Nominal duration of a modelled kernel whose work is unknown. */
#define SIM_KERNEL_NS 10000.0
#define SIM_MAX_PARAMS 64
#define SIM_MAX_PARAM_BYTES 32764u  /* CUDA's limit on a kernel's parameter block */

enum { FUNC_FATBIN = 1, FUNC_HOST = 2 };

/* nparams of a fat-binary kernel before its layout has been looked up, and
 * when its image says nothing readable about it. */
#define LAYOUT_UNREAD (-2)
#define LAYOUT_UNKNOWN (-1)

#define FB_MAGIC 0xBA55ED50u

struct CUmod_st {
    struct CUmod_st *self;        /* key of g_mods */
    int host;                     /* a simgpu_host_module */
    int library;                  /* loaded as a CUlibrary */
    const void *wrapper;          /* what simfb_load reads */
    __fatBinC_Wrapper_t own;      /* ... when the module owns its image */
    unsigned char *image;         /* the driver's copy of a loaded image */
    int read;
    simfb *meta;                  /* NULL: nothing readable */
    struct CUfunc_st **funcs;     /* handed out, for lookup by name */
    size_t nfuncs, cap;
    UT_hash_handle hh;
};

struct CUfunc_st {
    struct CUfunc_st *self;       /* key of g_funcs: the live handles */
    struct CUfunc_st *dead_next;  /* g_dead: refused handles, kept allocated */
    int on_dead;                  /* on g_dead (once, however often it dies) */
    const void *key;              /* runtime: host stub or host function */
    int kind;
    simgpu_host_kernel_fn fn;
    char name[128];               /* label on the timeline */
    char *symbol;                 /* the device symbol, whole */
    struct CUmod_st *mod;         /* where its layout comes from, while loaded */
    int nparams;
    struct simfb_param *params;
    /* What the mangled name says of the parameters, read for the stand-in
     * of SIMGPU_COMPUTE=libs: nsig of them (LAYOUT_UNREAD before it is
     * read, LAYOUT_UNKNOWN when the name does not match the layout). */
    int nsig;
    struct sn_ptype *sig;
    UT_hash_handle hh;            /* g_funcs */
    UT_hash_handle hk;            /* g_keys */
};

static struct CUmod_st *g_mods;
static struct CUfunc_st *g_funcs, *g_keys;
/* Functions of unloaded modules: refused as handles, but a captured graph
 * may still hold one, so they stay allocated (and reachable from here). */
static struct CUfunc_st *g_dead;
/* Guards the registry and layout reading (never held while a body runs). */
static pthread_mutex_t g_mlock = PTHREAD_MUTEX_INITIALIZER;

#define NEED(check)                         \
    do {                                    \
        CUresult need_ = (check);           \
        if (need_ != CUDA_SUCCESS)          \
            return need_;                   \
    } while (0)

static struct CUfunc_st *func_live_locked(const void *h)
{
    struct CUfunc_st *f;
    HASH_FIND_PTR(g_funcs, &h, f);
    return f;
}

static struct CUmod_st *mod_live_locked(const void *h)
{
    struct CUmod_st *m;
    HASH_FIND_PTR(g_mods, &h, m);
    return m;
}

static struct CUfunc_st *func_new_locked(const char *symbol, int kind)
{
    struct CUfunc_st *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->self = f;
    f->kind = kind;
    f->nparams = LAYOUT_UNKNOWN;
    f->nsig = LAYOUT_UNREAD;
    if (symbol && !(f->symbol = strdup(symbol))) {
        free(f);
        return NULL;
    }
    strncpy(f->name, symbol ? symbol : "?", sizeof f->name - 1);
    HASH_ADD_PTR(g_funcs, self, f);
    return f;
}

static int mod_keep_locked(struct CUmod_st *m, struct CUfunc_st *f)
{
    if (m->nfuncs == m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 8;
        struct CUfunc_st **nv = realloc(m->funcs, nc * sizeof *nv);
        if (!nv)
            return -1;
        m->funcs = nv;
        m->cap = nc;
    }
    m->funcs[m->nfuncs++] = f;
    f->mod = m;
    return 0;
}

/* Natural alignment, as the CUDA ABI lays out a parameter block. */
static struct simfb_param *natural_layout(int nparams, const size_t *sizes)
{
    struct simfb_param *p = nparams ? calloc((size_t)nparams, sizeof *p) : NULL;
    if (nparams && !p)
        return NULL;
    size_t off = 0;
    for (int i = 0; i < nparams; i++) {
        size_t a = sizes[i] >= 8 ? 8 : sizes[i] >= 4 ? 4 : sizes[i] >= 2 ? 2 : 1;
        off = (off + a - 1) / a * a;
        p[i].offset = (uint32_t)off;
        p[i].size = (uint32_t)sizes[i];
        off += sizes[i];
    }
    return p;
}

static int sizes_ok(int nparams, const size_t *sizes)
{
    if (nparams < 0 || nparams > SIM_MAX_PARAMS || (nparams && !sizes))
        return 0;
    size_t total = 0;
    for (int i = 0; i < nparams; i++) {
        if (sizes[i] == 0 || sizes[i] > SIM_MAX_PARAM_BYTES)
            return 0;
        total += sizes[i] + 8;
    }
    return total <= SIM_MAX_PARAM_BYTES + 8u * (size_t)nparams;
}

/* Reads a fat-binary kernel's layout on first use (parsing, and for
 * compressed entries decompressing, is paid by programs that ask). */
static void read_layout_locked(struct CUfunc_st *f)
{
    if (f->nparams != LAYOUT_UNREAD)
        return;
    struct CUmod_st *m = f->mod;
    if (!m->read) {
        m->read = 1;
        m->meta = simfb_load(m->wrapper);
    }
    f->nparams = m->meta && f->symbol ? simfb_params(m->meta, f->symbol, &f->params) : LAYOUT_UNKNOWN;
}

/* Reads what a kernel's mangled name says of its parameters, once, after
 * its layout; kept only when it names as many parameters as the layout
 * has, with every pointer 8 bytes wide. */
static void read_sig_locked(struct CUfunc_st *f)
{
    if (f->nsig != LAYOUT_UNREAD)
        return;
    f->nsig = LAYOUT_UNKNOWN;
    if (!f->symbol || f->nparams <= 0)
        return;
    struct sn_ptype *sig = calloc((size_t)f->nparams, sizeof *sig);
    if (!sig)
        return;
    int n = sn_mangled_params(f->symbol, sig, f->nparams);
    for (int i = 0; n == f->nparams && i < n; i++)
        if (sig[i].kind != SN_PARAM_VALUE && f->params[i].size != sizeof(void *))
            n = LAYOUT_UNKNOWN;
    if (n != f->nparams) {
        free(sig);
        return;
    }
    f->sig = sig;
    f->nsig = n;
}

/* ---- what the runtime registers (sim/kernels.c) ----------------------------- */

void *simgpu_fatbin_register(const void *wrapper)
{
    struct CUmod_st *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->self = m;
    m->wrapper = wrapper;
    pthread_mutex_lock(&g_mlock);
    HASH_ADD_PTR(g_mods, self, m);
    pthread_mutex_unlock(&g_mlock);
    return m;
}

static void mod_free_locked(struct CUmod_st *m, int kill_funcs)
{
    HASH_DEL(g_mods, m);
    for (size_t i = 0; i < m->nfuncs; i++) {
        struct CUfunc_st *f = m->funcs[i];
        f->mod = NULL;
        /* A layout already read stays; the others have nothing left to
         * read it from. */
        if (f->nparams == LAYOUT_UNREAD)
            f->nparams = LAYOUT_UNKNOWN;
        if (kill_funcs && func_live_locked(f)) {
            HASH_DEL(g_funcs, f);
            if (!f->on_dead) {
                f->on_dead = 1;
                f->dead_next = g_dead;
                g_dead = f;
            }
        }
    }
    simfb_free(m->meta);
    free(m->funcs);
    free(m->image);
    free(m);
}

void simgpu_fatbin_unregister(void *mod)
{
    pthread_mutex_lock(&g_mlock);
    struct CUmod_st *m = mod_live_locked(mod);
    /* The runtime's functions stay launchable by their stubs: a stale
     * stub still finds its entry, as before the library was unloaded. */
    if (m)
        mod_free_locked(m, 0);
    pthread_mutex_unlock(&g_mlock);
}

/* The entry of key, created or started over (a function registered again,
 * by a library loaded anew, starts over). */
static struct CUfunc_st *key_entry_locked(const void *key, int kind, const char *name)
{
    struct CUfunc_st *f;
    HASH_FIND(hk, g_keys, &key, sizeof key, f);
    if (!f) {
        if (!(f = func_new_locked(NULL, kind)))
            return NULL;
        f->key = key;
        HASH_ADD(hk, g_keys, key, sizeof f->key, f);
    } else if (!func_live_locked(f)) {
        HASH_ADD_PTR(g_funcs, self, f);
    }
    if (f->mod) {
        struct CUmod_st *m = f->mod;
        for (size_t i = 0; i < m->nfuncs; i++)
            if (m->funcs[i] == f)
                m->funcs[i] = m->funcs[--m->nfuncs];
        f->mod = NULL;
    }
    f->kind = kind;
    memset(f->name, 0, sizeof f->name);
    strncpy(f->name, name ? name : "?", sizeof f->name - 1);
    free(f->symbol);
    f->symbol = NULL;
    free(f->params);
    f->params = NULL;
    f->nparams = LAYOUT_UNKNOWN;
    free(f->sig);
    f->sig = NULL;
    f->nsig = LAYOUT_UNREAD;
    f->fn = NULL;
    return f;
}

CUfunction simgpu_func_register_stub(const void *stub, void *mod, const char *symbol, const char *name)
{
    pthread_mutex_lock(&g_mlock);
    struct CUfunc_st *f = key_entry_locked(stub, FUNC_FATBIN, name);
    if (f) {
        f->symbol = symbol ? strdup(symbol) : NULL;
        struct CUmod_st *m = mod_live_locked(mod);
        if (m && f->symbol && mod_keep_locked(m, f) == 0)
            f->nparams = LAYOUT_UNREAD;
    }
    pthread_mutex_unlock(&g_mlock);
    return f;
}

int simgpu_func_register_host(const void *fn, const char *name, int nparams, const size_t *sizes)
{
    if (!fn || !sizes_ok(nparams, sizes))
        return -1;
    struct simfb_param *params = natural_layout(nparams, sizes);
    if (nparams && !params)
        return -1;
    pthread_mutex_lock(&g_mlock);
    struct CUfunc_st *f = key_entry_locked(fn, FUNC_HOST, name);
    if (f) {
        f->fn = (simgpu_host_kernel_fn)fn;
        f->symbol = strdup(f->name);
        f->params = params;
        f->nparams = nparams;
    }
    pthread_mutex_unlock(&g_mlock);
    if (!f)
        free(params);
    return f ? 0 : -1;
}

CUfunction simgpu_func_lookup(const void *key)
{
    struct CUfunc_st *f;
    pthread_mutex_lock(&g_mlock);
    HASH_FIND(hk, g_keys, &key, sizeof key, f);
    if (!f)
        f = func_live_locked(key); /* a cudaKernel_t is the entry itself */
    pthread_mutex_unlock(&g_mlock);
    return f;
}

int simgpu_func_has_body(CUfunction f) { return f && f->kind == FUNC_HOST; }

/* ---- modules ---------------------------------------------------------------- */

static uint16_t rd16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint32_t rd32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t rd64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* A copy of a bare image (a cubin or PTX) wrapped in a one-entry fat
 * binary, so that sim/fatbin.c reads it as it reads nvcc's. */
static unsigned char *wrap_entry(const void *img, size_t len, unsigned kind)
{
    unsigned char *b = calloc(1, 16 + 64 + len);
    if (!b)
        return NULL;
    uint32_t magic = FB_MAGIC, hs32 = 64;
    uint16_t ver = 1, hs = 16, k = (uint16_t)kind;
    uint64_t size = 64 + len, plen = len;
    memcpy(b, &magic, 4);
    memcpy(b + 4, &ver, 2);
    memcpy(b + 6, &hs, 2);
    memcpy(b + 8, &size, 8);
    memcpy(b + 16, &k, 2);
    memcpy(b + 20, &hs32, 4);
    memcpy(b + 24, &plen, 8);
    memcpy(b + 80, img, len);
    return b;
}

/* The extent of an ELF image: its section headers are last, or its
 * sections are. 0 when it is not a 64-bit ELF. */
static size_t elf_extent(const unsigned char *p)
{
    if (memcmp(p, "\177ELF", 4) != 0 || p[4] != 2)
        return 0;
    uint64_t shoff = rd64(p + 0x28);
    uint16_t shentsize = rd16(p + 0x3a), shnum = rd16(p + 0x3c);
    if (shentsize < 64 || shnum == 0 || shoff > ((uint64_t)1 << 30))
        return 0;
    uint64_t end = shoff + (uint64_t)shentsize * shnum;
    for (uint16_t i = 0; i < shnum; i++) {
        const unsigned char *sh = p + shoff + (size_t)i * shentsize;
        uint32_t type = rd32(sh + 4);
        uint64_t e = rd64(sh + 0x18) + rd64(sh + 0x20);
        if (type != 8 /* SHT_NOBITS */ && e > end && e < ((uint64_t)1 << 30))
            end = e;
    }
    return (size_t)end;
}

/* Fills m from image: CUDA_SUCCESS, or CUDA_ERROR_INVALID_IMAGE. */
static CUresult mod_from_image_locked(struct CUmod_st *m, const void *image)
{
    const unsigned char *p = image;
    if (rd64(p) == SIMGPU_HOST_MODULE_MAGIC) {
        const simgpu_host_module *hm = image;
        if (hm->nkernels < 0 || (hm->nkernels && !hm->kernels))
            return CUDA_ERROR_INVALID_IMAGE;
        for (int i = 0; i < hm->nkernels; i++) {
            const simgpu_host_module_kernel *k = &hm->kernels[i];
            if (!k->name || !*k->name || !k->fn || !sizes_ok(k->nparams, k->param_sizes))
                return CUDA_ERROR_INVALID_IMAGE;
        }
        m->host = 1;
        for (int i = 0; i < hm->nkernels; i++) {
            const simgpu_host_module_kernel *k = &hm->kernels[i];
            struct CUfunc_st *f = func_new_locked(k->name, FUNC_HOST);
            if (!f)
                return CUDA_ERROR_OUT_OF_MEMORY;
            f->fn = k->fn;
            f->params = natural_layout(k->nparams, k->param_sizes);
            f->nparams = k->nparams;
            if ((k->nparams && !f->params) || mod_keep_locked(m, f) != 0) {
                HASH_DEL(g_funcs, f);
                free(f->symbol);
                free(f);
                return CUDA_ERROR_OUT_OF_MEMORY;
            }
        }
        return CUDA_SUCCESS;
    }
    size_t len;
    if (rd32(p) == FATBINC_MAGIC) {
        /* A __fatBinC_Wrapper_t, as nvcc embeds it. */
        return mod_from_image_locked(m, ((const __fatBinC_Wrapper_t *)image)->data);
    } else if (rd32(p) == FB_MAGIC && rd16(p + 4) == 1 && rd16(p + 6) >= 16) {
        len = rd16(p + 6) + rd64(p + 8);
        if (len > ((size_t)1 << 31) || !(m->image = malloc(len)))
            return CUDA_ERROR_INVALID_IMAGE;
        memcpy(m->image, p, len);
    } else if ((len = elf_extent(p)) != 0) {
        m->image = wrap_entry(p, len, 2);
    } else if ((p[0] == '/' || p[0] == '.' || p[0] == ' ' || p[0] == '\t' || p[0] == '\n') &&
               strstr((const char *)p, ".version")) {
        /* PTX text, NUL-terminated as cuModuleLoadData requires. */
        m->image = wrap_entry(p, strlen((const char *)p), 1);
    } else {
        return CUDA_ERROR_INVALID_IMAGE;
    }
    if (!m->image)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->own.magic = FATBINC_MAGIC;
    m->own.version = 1;
    m->own.data = (const unsigned long long *)m->image;
    m->wrapper = &m->own;
    return CUDA_SUCCESS;
}

static CUresult load(struct CUmod_st **out, const void *image, int library)
{
    NEED(sim_need_ctx());
    if (!out || !image)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUmod_st *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->self = m;
    m->library = library;
    pthread_mutex_lock(&g_mlock);
    HASH_ADD_PTR(g_mods, self, m);
    CUresult rc = mod_from_image_locked(m, image);
    if (rc != CUDA_SUCCESS)
        mod_free_locked(m, 1);
    pthread_mutex_unlock(&g_mlock);
    if (rc == CUDA_SUCCESS)
        *out = m;
    return rc;
}

/* Options are accepted and ignored: nothing is compiled. */
static CUresult options_ok(unsigned n, const void *keys, void **values)
{
    return n && (!keys || !values) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *m, const void *image) { return load(m, image, 0); }

CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned int n, CUjit_option *opts, void **vals)
{
    NEED(options_ok(n, opts, vals));
    return load(m, image, 0);
}

CUresult cuModuleLoadFatBinary(CUmodule *m, const void *fatCubin) { return load(m, fatCubin, 0); }

static CUresult unload(void *h, int library)
{
    NEED(sim_need_init());
    pthread_mutex_lock(&g_mlock);
    struct CUmod_st *m = mod_live_locked(h);
    CUresult rc = m && m->library == library && (m->image || m->host) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
    if (rc == CUDA_SUCCESS)
        mod_free_locked(m, 1);
    pthread_mutex_unlock(&g_mlock);
    return rc;
}

CUresult cuModuleUnload(CUmodule m) { return unload(m, 0); }

static CUresult get_function(struct CUfunc_st **out, void *h, const char *name, int library)
{
    NEED(library ? sim_need_init() : sim_need_ctx());
    if (!out || !name)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_mlock);
    struct CUmod_st *m = mod_live_locked(h);
    CUresult rc = CUDA_ERROR_NOT_FOUND;
    struct CUfunc_st *f = NULL;
    if (!m || m->library != library || !(m->image || m->host)) {
        rc = CUDA_ERROR_INVALID_HANDLE;
        goto out;
    }
    for (size_t i = 0; i < m->nfuncs && !f; i++)
        if (m->funcs[i]->symbol && strcmp(m->funcs[i]->symbol, name) == 0)
            f = m->funcs[i];
    if (!f && !m->host) {
        if (!m->read) {
            m->read = 1;
            m->meta = simfb_load(m->wrapper);
        }
        struct simfb_param *params = NULL;
        int n = m->meta ? simfb_params(m->meta, name, &params) : -1;
        if (n >= 0) {
            f = func_new_locked(name, FUNC_FATBIN);
            if (!f || mod_keep_locked(m, f) != 0) {
                free(params);
                rc = CUDA_ERROR_OUT_OF_MEMORY;
                goto out;
            }
            f->nparams = n;
            f->params = params;
        }
    }
    if (f) {
        *out = f;
        rc = CUDA_SUCCESS;
    }
out:
    pthread_mutex_unlock(&g_mlock);
    return rc;
}

CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) { return get_function(f, m, name, 0); }

/* A library is a module not tied to a context: its kernels are the
 * module's functions, usable as CUfunction directly (as CUDA allows). */
CUresult cuLibraryLoadData(CUlibrary *lib, const void *code, CUjit_option *jit, void **jitv, unsigned int njit,
                           CUlibraryOption *opts, void **optv, unsigned int nopts)
{
    NEED(sim_need_init());
    NEED(options_ok(njit, jit, jitv));
    NEED(options_ok(nopts, opts, optv));
    if (!lib || !code)
        return CUDA_ERROR_INVALID_VALUE;
    /* Loading needs no context here; the real driver loads lazily. */
    struct CUmod_st *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->self = m;
    m->library = 1;
    pthread_mutex_lock(&g_mlock);
    HASH_ADD_PTR(g_mods, self, m);
    CUresult rc = mod_from_image_locked(m, code);
    if (rc != CUDA_SUCCESS)
        mod_free_locked(m, 1);
    pthread_mutex_unlock(&g_mlock);
    if (rc == CUDA_SUCCESS)
        *lib = (CUlibrary)m;
    return rc;
}

CUresult cuLibraryUnload(CUlibrary lib) { return unload(lib, 1); }

CUresult cuLibraryGetKernel(CUkernel *k, CUlibrary lib, const char *name)
{
    return get_function((struct CUfunc_st **)k, lib, name, 1);
}

CUresult cuKernelGetFunction(CUfunction *out, CUkernel k)
{
    NEED(sim_need_ctx());
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_mlock);
    struct CUfunc_st *f = func_live_locked(k);
    pthread_mutex_unlock(&g_mlock);
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    *out = f;
    return CUDA_SUCCESS;
}

/* ---- functions ---------------------------------------------------------------- */

CUresult cuFuncGetParamInfo(CUfunction func, size_t index, size_t *offset, size_t *size)
{
    NEED(sim_need_init());
    if (!offset || !size)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_mlock);
    struct CUfunc_st *f = func_live_locked(func);
    CUresult rc = f ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
    if (f) {
        read_layout_locked(f);
        /* A kernel whose metadata could not be read answers as for an index
         * past its last parameter: callers must not take that for "no
         * parameters" (libsn does not). */
        if (f->nparams >= 0 && index < (size_t)f->nparams) {
            *offset = f->params[index].offset;
            *size = f->params[index].size;
            rc = CUDA_SUCCESS;
        }
    }
    pthread_mutex_unlock(&g_mlock);
    return rc;
}

CUresult cuFuncGetName(const char **name, CUfunction func)
{
    NEED(sim_need_init());
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_mlock);
    struct CUfunc_st *f = func_live_locked(func);
    if (f)
        *name = f->symbol ? f->symbol : f->name;
    pthread_mutex_unlock(&g_mlock);
    return f ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* ---- launches ----------------------------------------------------------------- */

/* What a launch needs of its function besides the handle, read under
 * g_mlock when the launch is issued. */
struct launch_desc {
    const char *symbol;                 /* the mangled name the stand-in hashes */
    int nparams;                        /* 0 also when the layout is unknown */
    const struct simfb_param *layout;
    const struct sn_ptype *sig;        /* NULL: the name says nothing usable */
};

/* SIMGPU_COMPUTE=libs gives a kernel without a body a stand-in. */
static int stands_in(const struct CUfunc_st *f) { return f->kind == FUNC_FATBIN && simgpu_kernel_standin(); }

static void run_func(const struct CUfunc_st *f, const struct launch_desc *d, dim3 grid, dim3 block, void **args,
                     CUstream s)
{
    /* Before the enqueue, which checks the accesses it declares. */
    if (stands_in(f))
        sim_standin_run(d->symbol ? d->symbol : f->name, f->name, d->nparams, d->layout, d->sig, args);
    simgpu_enqueue(s, SIMGPU_COMPUTE, SIM_KERNEL_NS, f->name);
    if (f->kind == FUNC_HOST && simgpu_compute_enabled())
        f->fn(args, grid, block);
}

/* A launch captured into a graph keeps a copy of its arguments, as CUDA
 * does: the caller's argument buffers may be gone by the time the graph
 * runs. A kernel without a body needs none, unless it has a stand-in,
 * which also keeps a copy of the layout, the signature and the name (a
 * function registered again frees its own). data holds the arguments at
 * their offsets, then argv, the layout, the signature and the name. */
struct launch_node {
    const struct CUfunc_st *f;
    dim3 grid, block;
    struct launch_desc d;
    void **argv;
    _Alignas(16) unsigned char data[];
};

static void run_launch_node(void *payload, CUstream s)
{
    struct launch_node *n = payload;
    run_func(n->f, &n->d, n->grid, n->block, n->argv, s);
}

static size_t round8(size_t v) { return (v + 7) & ~(size_t)7; }

static CUresult capture_launch(const struct CUfunc_st *f, const struct launch_desc *d, dim3 grid, dim3 block,
                               void **args, CUstream s)
{
    size_t np = (size_t)d->nparams;
    int copy = (f->kind == FUNC_HOST || stands_in(f)) && args && np > 0;
    size_t argv_at = 0, layout_at = 0, sig_at = 0, name_at = 0;
    if (copy) {
        argv_at = round8((size_t)d->layout[np - 1].offset + d->layout[np - 1].size);
        layout_at = argv_at + np * sizeof(void *);
        sig_at = layout_at + np * sizeof *d->layout;
        name_at = sig_at + (d->sig ? np * sizeof *d->sig : 0);
    }
    size_t name_len = stands_in(f) && d->symbol ? strlen(d->symbol) + 1 : 0;
    size_t bytes = name_at + name_len;
    struct launch_node *n = calloc(1, sizeof *n + bytes);
    if (!n)
        return CUDA_ERROR_OUT_OF_MEMORY;
    n->f = f;
    n->grid = grid;
    n->block = block;
    if (copy) {
        struct simfb_param *layout = (struct simfb_param *)(void *)(n->data + layout_at);
        memcpy(layout, d->layout, np * sizeof *layout);
        n->argv = (void **)(void *)(n->data + argv_at);
        for (size_t i = 0; i < np; i++) {
            memcpy(n->data + layout[i].offset, args[i], layout[i].size);
            n->argv[i] = n->data + layout[i].offset;
        }
        n->d.nparams = d->nparams;
        n->d.layout = layout;
        if (d->sig) {
            memcpy(n->data + sig_at, d->sig, np * sizeof *d->sig);
            n->d.sig = (const struct sn_ptype *)(void *)(n->data + sig_at);
        }
    }
    if (name_len) {
        memcpy(n->data + name_at, d->symbol, name_len);
        n->d.symbol = (const char *)(n->data + name_at);
    }
    return simgpu_capture_callback(s, run_launch_node, n, free, f->name);
}

/* The arguments of `extra`: pointers into the caller's parameter buffer at
 * the kernel's offsets, in argv (nparams of them). */
static CUresult args_from_extra(void **extra, int nparams, const struct simfb_param *params, void **argv)
{
    unsigned char *buf = NULL;
    size_t *size = NULL;
    for (size_t i = 0;; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_END)
            break;
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            buf = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
            size = extra[i + 1];
        else
            return CUDA_ERROR_INVALID_VALUE;
    }
    if (!buf || !size)
        return CUDA_ERROR_INVALID_VALUE;
    if (nparams > 0 && *size < (size_t)params[nparams - 1].offset + params[nparams - 1].size)
        return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < nparams; i++)
        argv[i] = buf + params[i].offset;
    return CUDA_SUCCESS;
}

/* The launch's checks after its arguments are known, then the work (or its
 * node, on a capturing stream). */
static CUresult issue(struct CUfunc_st *f, const struct launch_desc *d, dim3 grid, dim3 block, void **args,
                      CUstream s, int cooperative)
{
    if (simgpu_stream_check(s) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_HANDLE;
    if (cooperative) {
        /* Every block must be resident at once: at most 2048 threads and
         * 32 blocks per multiprocessor (an upper bound; the real limit also
         * depends on the kernel's registers and shared memory). */
        unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
        unsigned long long per_sm = 2048 / ((threads + 31) / 32 * 32);
        if (per_sm > 32)
            per_sm = 32;
        unsigned long long max = per_sm * (unsigned long long)simgpu_profile_of(simgpu_stream_device(s))->sm_count;
        if ((unsigned long long)grid.x * grid.y * grid.z > max)
            return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    }
    if (f->kind == FUNC_FATBIN && simgpu_compute_enabled() && !simgpu_kernel_standin())
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    int record;
    CUresult rc = simgpu_capture_check(s, &record);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (record)
        return capture_launch(f, d, grid, block, args, s);
    run_func(f, d, grid, block, args, s);
    return CUDA_SUCCESS;
}

static CUresult launch(CUfunction func, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                       unsigned bz, CUstream s, void **params, void **extra, int cooperative)
{
    NEED(sim_need_ctx_for_stream(s));
    pthread_mutex_lock(&g_mlock);
    struct CUfunc_st *f = func_live_locked(func);
    struct launch_desc d = {NULL, 0, NULL, NULL};
    if (f) {
        /* A fat-binary kernel's layout is read only when the launch needs
         * it (for `extra`, for the stand-in), as cudaFuncGetParamInfo
         * reads it only when asked. */
        if (extra || stands_in(f))
            read_layout_locked(f);
        if (stands_in(f))
            read_sig_locked(f);
        d.symbol = f->symbol;
        d.nparams = f->nparams > 0 ? f->nparams : 0;
        d.layout = f->params;
        d.sig = f->nsig > 0 ? f->sig : NULL;
    }
    pthread_mutex_unlock(&g_mlock);
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || gy > 65535 || gz > 65535 ||
        bx > 1024 || by > 1024 || bz > 64 || (unsigned long long)bx * by * bz > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    if (params && extra)
        return CUDA_ERROR_INVALID_VALUE;
    dim3 grid = {gx, gy, gz}, block = {bx, by, bz};
    if (!extra) {
        /* A kernel that runs something must be given its arguments. */
        if (!params && (f->kind == FUNC_HOST || stands_in(f)) && d.nparams > 0)
            return CUDA_ERROR_INVALID_VALUE;
        return issue(f, &d, grid, block, params, s, cooperative);
    }
    /* A fat-binary layout may have more parameters than a host kernel can. */
    void *stack_argv[SIM_MAX_PARAMS];
    void **argv = d.nparams <= SIM_MAX_PARAMS ? stack_argv : malloc((size_t)d.nparams * sizeof *argv);
    if (!argv)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = args_from_extra(extra, d.nparams, d.layout, argv);
    if (rc == CUDA_SUCCESS)
        rc = issue(f, &d, grid, block, argv, s, cooperative);
    if (argv != stack_argv)
        free(argv);
    return rc;
}

#define PTSZ(s) ((s) ? (s) : CU_STREAM_PER_THREAD)

CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                        unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params,
                        void **extra)
{
    (void)shmem; /* shared memory is not modelled */
    return launch(f, gx, gy, gz, bx, by, bz, s, params, extra, 0);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                             unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params,
                             void **extra);
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                             unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params,
                             void **extra)
{
    (void)shmem;
    return launch(f, gx, gy, gz, bx, by, bz, PTSZ(s), params, extra, 0);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                   unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
                                   CUstream s, void **params)
{
    (void)shmem;
    return launch(f, gx, gy, gz, bx, by, bz, s, params, NULL, 1);
}

CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                        unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
                                        CUstream s, void **params);
CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                        unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
                                        CUstream s, void **params)
{
    (void)shmem;
    return launch(f, gx, gy, gz, bx, by, bz, PTSZ(s), params, NULL, 1);
}

/* Attributes are validated (known ids) but not modelled, but for
 * cooperative, which adds the residency check. */
static CUresult launch_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra, int ptsz)
{
    if (!c || (c->numAttrs && !c->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    int coop = 0;
    for (unsigned i = 0; i < c->numAttrs; i++) {
        if ((unsigned)c->attrs[i].id > (unsigned)CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING)
            return CUDA_ERROR_INVALID_VALUE;
        if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && c->attrs[i].value.cooperative)
            coop = 1;
    }
    CUstream s = ptsz ? PTSZ(c->hStream) : c->hStream;
    return launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ, s, params,
                  extra, coop);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
    return launch_ex(c, f, params, extra, 0);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **params, void **extra);
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
    return launch_ex(c, f, params, extra, 1);
}
