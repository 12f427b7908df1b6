/*
 * curand.c — the simulated cuRAND host API (libcurand.so.10): generators,
 * their seed, offset and stream, and the generate calls.
 *
 * Like the real library, every device write is a kernel launched through
 * the driver: the generator dlopens libcuda.so.1, takes cuModuleLoadData,
 * cuModuleGetFunction and cuLaunchKernel through cuGetProcAddress_v2, loads
 * a host module (sim/simgpu.h) holding one CPU-bodied kernel per output
 * kind, and each curandGenerate* is one cuLaunchKernel on the generator's
 * stream. An interposer at the driver therefore sees exactly what it sees
 * with NVIDIA's cuRAND: a module load at creation, one launch per call.
 *
 * The numbers are not NVIDIA's. Element i of a call is the value at
 * position offset + i of an infinite sequence defined by the seed alone
 * (Philox4x32-10 keyed by the seed, counted by the position; XORWOW is the
 * same construction with another tag), and every call advances the
 * position by its length, so results do not depend on how the output is
 * split across calls (docs/sim-curand.md).
 */
#include <curand.h>

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/drvproc.h"
#include "sim/simcore.h"
#include "sim/simgpu.h"

/* ---- the sequence ------------------------------------------------------- */

/* Philox4x32-10 (Salmon et al., SC'11): ten rounds of multiply-xor over a
 * 128-bit counter under a 64-bit key. */
static void philox(uint32_t ctr[4], uint32_t k0, uint32_t k1)
{
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * ctr[0], p1 = (uint64_t)0xCD9E8D57u * ctr[2];
        uint32_t c0 = (uint32_t)(p1 >> 32) ^ ctr[1] ^ k0, c2 = (uint32_t)(p0 >> 32) ^ ctr[3] ^ k1;
        ctr[1] = (uint32_t)p1;
        ctr[3] = (uint32_t)p0;
        ctr[0] = c0;
        ctr[2] = c2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
}

/* The j-th 64-bit draw belonging to position pos of the sequence of
 * (seed, tag): a pure function, so any split of the output agrees. */
static uint64_t draw(uint64_t seed, uint32_t tag, uint64_t pos, uint32_t j)
{
    uint32_t c[4] = {(uint32_t)pos, (uint32_t)(pos >> 32), j, tag};
    philox(c, (uint32_t)seed, (uint32_t)(seed >> 32));
    return (uint64_t)c[0] | (uint64_t)c[1] << 32;
}

/* In (0, 1], as cuRAND's uniform: never 0, may be 1. */
static double unit53(uint64_t r) { return (double)((r >> 11) + 1) * 0x1p-53; }
static float unit32(uint64_t r) { return (float)((double)((uint32_t)r + 1ull) * 0x1p-32); }

/* Box-Muller on the pair holding position pos: both members of a pair
 * come from the same two draws, whichever call produces them. */
static double normal_at(uint64_t seed, uint32_t tag, uint64_t pos)
{
    uint64_t pair = pos >> 1;
    double u1 = unit53(draw(seed, tag, pair, 1)), u2 = unit53(draw(seed, tag, pair, 2));
    double r = sqrt(-2.0 * log(u1)), t = 2.0 * M_PI * u2;
    return (pos & 1) ? r * sin(t) : r * cos(t);
}

/* Small lambda: Knuth's product of uniforms; large: the normal
 * approximation, rounded (documented as a simplification). */
static unsigned poisson_at(uint64_t seed, uint32_t tag, uint64_t pos, double lambda)
{
    if (lambda < 64.0) {
        double limit = exp(-lambda), prod = 1.0;
        unsigned k = 0;
        for (uint32_t j = 3;; j++) {
            prod *= unit53(draw(seed, tag, pos, j));
            if (prod <= limit)
                return k;
            k++;
        }
    }
    double v = floor(lambda + sqrt(lambda) * normal_at(seed, tag ^ 0x50000000u, pos) + 0.5);
    return v < 0 ? 0u : (unsigned)v;
}

/* ---- the kernels -------------------------------------------------------- */

/* Every kernel takes (out, n, seed, pos, tag, a, b); a and b are the
 * distribution's parameters (mean and stddev, or lambda). */
struct kargs {
    void *out;
    size_t n;
    uint64_t seed, pos;
    uint32_t tag;
    double a, b;
};

static struct kargs kargs_of(void **args)
{
    struct kargs k;
    k.out = *(void **)args[0];
    k.n = *(const size_t *)args[1];
    k.seed = *(const uint64_t *)args[2];
    k.pos = *(const uint64_t *)args[3];
    k.tag = *(const uint32_t *)args[4];
    k.a = *(const double *)args[5];
    k.b = *(const double *)args[6];
    return k;
}

#define KERNEL(kname, type, expr)                                              \
    static void kname(void **args, dim3 grid, dim3 block)                      \
    {                                                                          \
        (void)grid;                                                            \
        (void)block;                                                           \
        struct kargs k = kargs_of(args);                                       \
        type *o = k.out;                                                       \
        for (size_t i = 0; i < k.n; i++) {                                     \
            uint64_t p = k.pos + i;                                            \
            o[i] = (expr);                                                     \
        }                                                                      \
    }

KERNEL(k_u32, unsigned, (unsigned)draw(k.seed, k.tag, p, 0))
KERNEL(k_uniform, float, unit32(draw(k.seed, k.tag, p, 0)))
KERNEL(k_uniform_double, double, unit53(draw(k.seed, k.tag, p, 0)))
KERNEL(k_normal, float, (float)(k.a + k.b * normal_at(k.seed, k.tag, p)))
KERNEL(k_normal_double, double, k.a + k.b * normal_at(k.seed, k.tag, p))
KERNEL(k_lognormal, float, (float)exp(k.a + k.b * normal_at(k.seed, k.tag, p)))
KERNEL(k_lognormal_double, double, exp(k.a + k.b * normal_at(k.seed, k.tag, p)))
KERNEL(k_poisson, unsigned, poisson_at(k.seed, k.tag, p, k.a))

enum kind { K_U32, K_UNIFORM, K_UNIFORM_D, K_NORMAL, K_NORMAL_D, K_LOGNORMAL, K_LOGNORMAL_D, K_POISSON, K_COUNT };

static const size_t k_sizes[7] = {sizeof(void *), sizeof(size_t), sizeof(uint64_t), sizeof(uint64_t),
                                  sizeof(uint32_t), sizeof(double), sizeof(double)};
static const simgpu_host_module_kernel k_table[K_COUNT] = {
    [K_U32] = {"curand_gen_u32", k_u32, 7, k_sizes},
    [K_UNIFORM] = {"curand_gen_uniform", k_uniform, 7, k_sizes},
    [K_UNIFORM_D] = {"curand_gen_uniform_double", k_uniform_double, 7, k_sizes},
    [K_NORMAL] = {"curand_gen_normal", k_normal, 7, k_sizes},
    [K_NORMAL_D] = {"curand_gen_normal_double", k_normal_double, 7, k_sizes},
    [K_LOGNORMAL] = {"curand_gen_lognormal", k_lognormal, 7, k_sizes},
    [K_LOGNORMAL_D] = {"curand_gen_lognormal_double", k_lognormal_double, 7, k_sizes},
    [K_POISSON] = {"curand_gen_poisson", k_poisson, 7, k_sizes},
};
static const simgpu_host_module k_image = {SIMGPU_HOST_MODULE_MAGIC, K_COUNT, k_table};

/* ---- driver entry points, reached the way the real library reaches them --- */

typedef CUresult (*cu_module_load_data_fn)(CUmodule *, const void *);
typedef CUresult (*cu_module_unload_fn)(CUmodule);
typedef CUresult (*cu_module_get_function_fn)(CUfunction *, CUmodule, const char *);
typedef CUresult (*cu_launch_kernel_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, CUstream, void **, void **);

static struct {
    cu_module_load_data_fn module_load_data;
    cu_module_unload_fn module_unload;
    cu_module_get_function_fn module_get_function;
    cu_launch_kernel_fn launch_kernel;
} g_drv;
static pthread_once_t g_drv_once = PTHREAD_ONCE_INIT;

static void resolve_driver(void)
{
    g_drv.module_load_data = (cu_module_load_data_fn)simgpu_driver_proc("cuModuleLoadData");
    g_drv.module_unload = (cu_module_unload_fn)simgpu_driver_proc("cuModuleUnload");
    g_drv.module_get_function = (cu_module_get_function_fn)simgpu_driver_proc("cuModuleGetFunction");
    g_drv.launch_kernel = (cu_launch_kernel_fn)simgpu_driver_proc("cuLaunchKernel");
}

/* What the library's static cudart does on first use: initialise the driver
 * and make the current device's primary context current if none is. */
static int driver_ready(int dev)
{
    pthread_once(&g_drv_once, resolve_driver);
    return g_drv.module_load_data && g_drv.module_get_function && g_drv.launch_kernel &&
           simgpu_driver_context_ready(dev);
}

/* ---- generators --------------------------------------------------------- */

#define SIMRAND_MAGIC 0x444e41524d4953ULL /* "SIMRAND" */

struct curandGenerator_st {
    uint64_t magic;
    curandRngType_t type;
    uint64_t seed;
    uint64_t pos;      /* the offset, advanced by every generate call */
    CUstream stream;
    CUmodule module;
    CUfunction fn[K_COUNT];
};

/* The two pseudo-random kinds have distinct sequences for one seed. */
static uint32_t type_tag(curandRngType_t t) { return t == CURAND_RNG_PSEUDO_PHILOX4_32_10 ? 0x50484c58u : 0x58525757u; }

/* The live generators: a destroyed one must answer NOT_INITIALIZED
 * without its freed memory being read. */
static pthread_mutex_t g_live_lock = PTHREAD_MUTEX_INITIALIZER;
static curandGenerator_t *g_live;
static size_t g_nlive, g_caplive;

static int live_add(curandGenerator_t g)
{
    pthread_mutex_lock(&g_live_lock);
    int ok = 1;
    if (g_nlive == g_caplive) {
        size_t cap = g_caplive ? 2 * g_caplive : 16;
        curandGenerator_t *grown = realloc(g_live, cap * sizeof *grown);
        if (grown) {
            g_live = grown;
            g_caplive = cap;
        } else {
            ok = 0;
        }
    }
    if (ok)
        g_live[g_nlive++] = g;
    pthread_mutex_unlock(&g_live_lock);
    return ok;
}

/* Removes g when remove is set; returns whether it was live. */
static int live_find(curandGenerator_t g, int remove)
{
    pthread_mutex_lock(&g_live_lock);
    int found = 0;
    for (size_t i = 0; i < g_nlive && !found; i++) {
        if (g_live[i] == g) {
            found = 1;
            if (remove)
                g_live[i] = g_live[--g_nlive];
        }
    }
    pthread_mutex_unlock(&g_live_lock);
    return found;
}

static int gen_ok(curandGenerator_t g) { return g && live_find(g, 0) && g->magic == SIMRAND_MAGIC; }

curandStatus_t curandCreateGenerator(curandGenerator_t *generator, curandRngType_t rng_type)
{
    if (!generator)
        return CURAND_STATUS_NOT_INITIALIZED;
    if (rng_type == CURAND_RNG_PSEUDO_DEFAULT)
        rng_type = CURAND_RNG_PSEUDO_XORWOW;
    /* The other generators (MRG32k3a, the Mersenne twisters, Sobol) are
     * not simulated: refused as a type this library does not offer. */
    if (rng_type != CURAND_RNG_PSEUDO_XORWOW && rng_type != CURAND_RNG_PSEUDO_PHILOX4_32_10)
        return CURAND_STATUS_TYPE_ERROR;
    simgpu_init();
    if (!driver_ready(simgpu_current_device()))
        return CURAND_STATUS_INITIALIZATION_FAILED;
    struct curandGenerator_st *g = calloc(1, sizeof *g);
    if (!g)
        return CURAND_STATUS_ALLOCATION_FAILED;
    if (g_drv.module_load_data(&g->module, &k_image) != CUDA_SUCCESS) {
        free(g);
        return CURAND_STATUS_INITIALIZATION_FAILED;
    }
    for (int i = 0; i < K_COUNT; i++) {
        if (g_drv.module_get_function(&g->fn[i], g->module, k_table[i].name) != CUDA_SUCCESS) {
            if (g_drv.module_unload)
                g_drv.module_unload(g->module);
            free(g);
            return CURAND_STATUS_INITIALIZATION_FAILED;
        }
    }
    g->magic = SIMRAND_MAGIC;
    g->type = rng_type;
    if (!live_add(g)) {
        if (g_drv.module_unload)
            g_drv.module_unload(g->module);
        free(g);
        return CURAND_STATUS_ALLOCATION_FAILED;
    }
    /* cuRAND's documented defaults: seed 0, offset 0 (calloc). */
    *generator = g;
    return CURAND_STATUS_SUCCESS;
}

/* Host generators would need the host-side generation path; not simulated. */
curandStatus_t curandCreateGeneratorHost(curandGenerator_t *generator, curandRngType_t rng_type)
{
    (void)generator;
    (void)rng_type;
    return CURAND_STATUS_TYPE_ERROR;
}

curandStatus_t curandDestroyGenerator(curandGenerator_t g)
{
    if (!g || !live_find(g, 1))
        return CURAND_STATUS_NOT_INITIALIZED;
    g->magic = 0;
    if (g_drv.module_unload)
        g_drv.module_unload(g->module);
    free(g);
    return CURAND_STATUS_SUCCESS;
}

curandStatus_t curandGetVersion(int *version)
{
    if (!version)
        return CURAND_STATUS_OUT_OF_RANGE;
    *version = CURAND_VERSION;
    return CURAND_STATUS_SUCCESS;
}

curandStatus_t curandGetProperty(libraryPropertyType type, int *value)
{
    if (!value)
        return CURAND_STATUS_OUT_OF_RANGE;
    switch (type) {
    case MAJOR_VERSION: *value = CURAND_VER_MAJOR; return CURAND_STATUS_SUCCESS;
    case MINOR_VERSION: *value = CURAND_VER_MINOR; return CURAND_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = CURAND_VER_PATCH; return CURAND_STATUS_SUCCESS;
    default: return CURAND_STATUS_OUT_OF_RANGE;
    }
}

curandStatus_t curandSetStream(curandGenerator_t g, cudaStream_t stream)
{
    if (!gen_ok(g))
        return CURAND_STATUS_NOT_INITIALIZED;
    g->stream = (CUstream)stream;
    return CURAND_STATUS_SUCCESS;
}

curandStatus_t curandSetPseudoRandomGeneratorSeed(curandGenerator_t g, unsigned long long seed)
{
    if (!gen_ok(g))
        return CURAND_STATUS_NOT_INITIALIZED;
    g->seed = seed;
    /* The position is kept: the new seed's sequence continues at the
     * generator's offset. */
    return CURAND_STATUS_SUCCESS;
}

curandStatus_t curandSetGeneratorOffset(curandGenerator_t g, unsigned long long offset)
{
    if (!gen_ok(g))
        return CURAND_STATUS_NOT_INITIALIZED;
    g->pos = offset;
    return CURAND_STATUS_SUCCESS;
}

curandStatus_t curandSetGeneratorOrdering(curandGenerator_t g, curandOrdering_t order)
{
    if (!gen_ok(g))
        return CURAND_STATUS_NOT_INITIALIZED;
    /* One ordering exists here; every pseudo-random ordering names it. */
    if (order != CURAND_ORDERING_PSEUDO_DEFAULT && order != CURAND_ORDERING_PSEUDO_BEST &&
        order != CURAND_ORDERING_PSEUDO_SEEDED && order != CURAND_ORDERING_PSEUDO_LEGACY &&
        order != CURAND_ORDERING_PSEUDO_DYNAMIC)
        return CURAND_STATUS_OUT_OF_RANGE;
    return CURAND_STATUS_SUCCESS;
}

/* The generator's state lives on the host, so there is nothing to seed. */
curandStatus_t curandGenerateSeeds(curandGenerator_t g)
{
    return gen_ok(g) ? CURAND_STATUS_SUCCESS : CURAND_STATUS_NOT_INITIALIZED;
}

/* One launch of kernel `kind` writing n elements of esize bytes at out, on
 * the generator's stream; the position advances by n on success. */
static curandStatus_t generate(curandGenerator_t g, enum kind kind, void *out, size_t n, size_t esize, double a,
                               double b)
{
    if (!gen_ok(g))
        return CURAND_STATUS_NOT_INITIALIZED;
    if (n == 0)
        return CURAND_STATUS_SUCCESS;
    if (simgpu_stream_check(g->stream) != CUDA_SUCCESS)
        return CURAND_STATUS_LAUNCH_FAILURE;
    /* The kernel writes every element: an address outside device memory is
     * the illegal access it would be on the GPU. */
    simgpu_check_range(out, n * esize, 1, "curandGenerate");
    uint32_t tag = type_tag(g->type);
    void *params[7] = {&out, &n, &g->seed, &g->pos, &tag, &a, &b};
    CUresult rc = g_drv.launch_kernel(g->fn[kind], 1, 1, 1, 1, 1, 1, 0, g->stream, params, NULL);
    if (rc != CUDA_SUCCESS)
        return CURAND_STATUS_LAUNCH_FAILURE;
    g->pos += n;
    return CURAND_STATUS_SUCCESS;
}

curandStatus_t curandGenerate(curandGenerator_t g, unsigned int *outputPtr, size_t num)
{
    return generate(g, K_U32, outputPtr, num, sizeof *outputPtr, 0, 0);
}

curandStatus_t curandGenerateUniform(curandGenerator_t g, float *outputPtr, size_t num)
{
    return generate(g, K_UNIFORM, outputPtr, num, sizeof *outputPtr, 0, 0);
}

curandStatus_t curandGenerateUniformDouble(curandGenerator_t g, double *outputPtr, size_t num)
{
    return generate(g, K_UNIFORM_D, outputPtr, num, sizeof *outputPtr, 0, 0);
}

/* Box-Muller makes values in pairs: pseudo-random generators require an
 * even count. */
static curandStatus_t normal(curandGenerator_t g, enum kind kind, void *out, size_t n, size_t esize, double mean,
                             double stddev)
{
    if (!gen_ok(g))
        return CURAND_STATUS_NOT_INITIALIZED;
    if (n % 2)
        return CURAND_STATUS_LENGTH_NOT_MULTIPLE;
    return generate(g, kind, out, n, esize, mean, stddev);
}

curandStatus_t curandGenerateNormal(curandGenerator_t g, float *outputPtr, size_t n, float mean, float stddev)
{
    return normal(g, K_NORMAL, outputPtr, n, sizeof *outputPtr, mean, stddev);
}

curandStatus_t curandGenerateNormalDouble(curandGenerator_t g, double *outputPtr, size_t n, double mean,
                                          double stddev)
{
    return normal(g, K_NORMAL_D, outputPtr, n, sizeof *outputPtr, mean, stddev);
}

curandStatus_t curandGenerateLogNormal(curandGenerator_t g, float *outputPtr, size_t n, float mean, float stddev)
{
    return normal(g, K_LOGNORMAL, outputPtr, n, sizeof *outputPtr, mean, stddev);
}

curandStatus_t curandGenerateLogNormalDouble(curandGenerator_t g, double *outputPtr, size_t n, double mean,
                                             double stddev)
{
    return normal(g, K_LOGNORMAL_D, outputPtr, n, sizeof *outputPtr, mean, stddev);
}

curandStatus_t curandGeneratePoisson(curandGenerator_t g, unsigned int *outputPtr, size_t n, double lambda)
{
    if (!gen_ok(g))
        return CURAND_STATUS_NOT_INITIALIZED;
    if (!(lambda > 0.0) || lambda > 400000.0)
        return CURAND_STATUS_OUT_OF_RANGE;
    return generate(g, K_POISSON, outputPtr, n, sizeof *outputPtr, lambda, 0);
}
