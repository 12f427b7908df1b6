/*
 * hooks_curand.c — wrappers of cuRAND's generate calls. Each one is a
 * described step that overwrites exactly its n output elements; the kernel
 * cuRAND launches through the driver inside the call passes straight
 * through libsn (the thread is inside this call), so the step is counted
 * once and is never opaque.
 *
 * cuRAND has no curandGetStream: the generator's stream is remembered here
 * from curandSetStream (a generator never given one uses the legacy
 * default stream) and forgotten when the generator is destroyed, so that
 * a new generator at the same address starts on the default stream.
 */
#include "common/sn_lock.h"
#include "shim/sn_wrap.h"

/* Programs hold a handful of generators; past this many, a generator
 * whose stream was not kept is described as opaque rather than placed on
 * the wrong stream. */
#define SN_RAND_GENERATORS 64

static struct {
    sn_lock lock;
    int overflowed;
    struct {
        curandGenerator_t gen;
        void *stream;
    } slot[SN_RAND_GENERATORS];
} sn_rand = {.lock = SN_LOCK_INITIALIZER(SN_RANK_HANDLES)};

/* The generator's stream; *known 0 when it may have been lost. */
static void *sn_rand_stream(curandGenerator_t gen, int *known)
{
    void *s = NULL;
    *known = 1;
    sn_lock_take(&sn_rand.lock);
    int i = 0;
    for (; i < SN_RAND_GENERATORS; i++)
        if (sn_rand.slot[i].gen == gen) {
            s = sn_rand.slot[i].stream;
            break;
        }
    if (i == SN_RAND_GENERATORS && sn_rand.overflowed)
        *known = 0;
    sn_lock_give(&sn_rand.lock);
    return s;
}

/* stream NULL with forget set: the generator is gone. */
static void sn_rand_note(curandGenerator_t gen, void *stream, int forget)
{
    sn_lock_take(&sn_rand.lock);
    int i = 0, free_slot = -1;
    for (; i < SN_RAND_GENERATORS; i++) {
        if (sn_rand.slot[i].gen == gen)
            break;
        if (!sn_rand.slot[i].gen && free_slot < 0)
            free_slot = i;
    }
    if (i == SN_RAND_GENERATORS)
        i = forget ? -1 : free_slot;
    if (i >= 0) {
        sn_rand.slot[i].gen = forget ? NULL : gen;
        sn_rand.slot[i].stream = forget ? NULL : stream;
    } else if (!forget) {
        sn_rand.overflowed = 1;
    }
    sn_lock_give(&sn_rand.lock);
}

SN_EXPORT curandStatus_t curandSetStream(curandGenerator_t generator, cudaStream_t stream)
{
    SN_PROLOGUE(CURAND, curandSetStream, (generator, stream))
    curandStatus_t rc = real(generator, stream);
    if (rc == CURAND_STATUS_SUCCESS)
        sn_rand_note(generator, stream, 0);
    return rc;
}

SN_EXPORT curandStatus_t curandDestroyGenerator(curandGenerator_t generator)
{
    SN_PROLOGUE(CURAND, curandDestroyGenerator, (generator))
    curandStatus_t rc = real(generator);
    if (rc == CURAND_STATUS_SUCCESS)
        sn_rand_note(generator, NULL, 1);
    return rc;
}

/* A generate call of n elements of esize bytes at out: the kernel writes
 * every one of them whatever was there before. A call cuRAND will refuse
 * for its arguments (ok 0) writes nothing, so its range is a plain write:
 * resident with its contents kept. */
#define SN_RAND_BEGIN(name, gen, out, n, esize, ok, args)                      \
    SN_PROLOGUE(CURAND, name, args)                                            \
    SN_CALL_DECL(c);                                                           \
    int known_;                                                                \
    void *stream_ = sn_rand_stream((gen), &known_);                            \
    sn_call_init(&c, SN_HOOK_ID_##name, SN_OP_RNG, sn_current_device(), stream_); \
    c.lib_handle = (void *)(gen);                                              \
    if (!known_)                                                               \
        c.flags |= SN_CALL_OPAQUE;                                             \
    if ((out) && (n) > 0)                                                      \
        sn_call_range(&c, (out), (uint64_t)(n) * (esize), SN_WRITE | ((ok) ? SN_OVERWRITE : 0)); \
    {                                                                          \
        int shape_[1] = {(n) > 0x7fffffff ? 0x7fffffff : (int)(n)};          \
        sn_call_shape(&c, 1, shape_);                                          \
    }

#define SN_RAND_END(args) SN_FORWARD_STEP(&c, curandStatus_t, CURAND_STATUS_SUCCESS, CURAND_STATUS_ALLOCATION_FAILED, args)

SN_EXPORT curandStatus_t curandGenerate(curandGenerator_t generator, unsigned int *outputPtr, size_t num)
{
    SN_RAND_BEGIN(curandGenerate, generator, outputPtr, num, sizeof *outputPtr, 1, (generator, outputPtr, num))
    SN_RAND_END((generator, outputPtr, num));
}

SN_EXPORT curandStatus_t curandGenerateUniform(curandGenerator_t generator, float *outputPtr, size_t num)
{
    SN_RAND_BEGIN(curandGenerateUniform, generator, outputPtr, num, sizeof *outputPtr, 1, (generator, outputPtr, num))
    SN_RAND_END((generator, outputPtr, num));
}

SN_EXPORT curandStatus_t curandGenerateUniformDouble(curandGenerator_t generator, double *outputPtr, size_t num)
{
    SN_RAND_BEGIN(curandGenerateUniformDouble, generator, outputPtr, num, sizeof *outputPtr, 1,
                  (generator, outputPtr, num))
    SN_RAND_END((generator, outputPtr, num));
}

SN_EXPORT curandStatus_t curandGenerateNormal(curandGenerator_t generator, float *outputPtr, size_t n, float mean,
                                              float stddev)
{
    SN_RAND_BEGIN(curandGenerateNormal, generator, outputPtr, n, sizeof *outputPtr, n % 2 == 0,
                  (generator, outputPtr, n, mean, stddev))
    SN_RAND_END((generator, outputPtr, n, mean, stddev));
}

SN_EXPORT curandStatus_t curandGenerateNormalDouble(curandGenerator_t generator, double *outputPtr, size_t n,
                                                    double mean, double stddev)
{
    SN_RAND_BEGIN(curandGenerateNormalDouble, generator, outputPtr, n, sizeof *outputPtr, n % 2 == 0,
                  (generator, outputPtr, n, mean, stddev))
    SN_RAND_END((generator, outputPtr, n, mean, stddev));
}

SN_EXPORT curandStatus_t curandGenerateLogNormal(curandGenerator_t generator, float *outputPtr, size_t n,
                                                 float mean, float stddev)
{
    SN_RAND_BEGIN(curandGenerateLogNormal, generator, outputPtr, n, sizeof *outputPtr, n % 2 == 0,
                  (generator, outputPtr, n, mean, stddev))
    SN_RAND_END((generator, outputPtr, n, mean, stddev));
}

SN_EXPORT curandStatus_t curandGenerateLogNormalDouble(curandGenerator_t generator, double *outputPtr, size_t n,
                                                       double mean, double stddev)
{
    SN_RAND_BEGIN(curandGenerateLogNormalDouble, generator, outputPtr, n, sizeof *outputPtr, n % 2 == 0,
                  (generator, outputPtr, n, mean, stddev))
    SN_RAND_END((generator, outputPtr, n, mean, stddev));
}

SN_EXPORT curandStatus_t curandGeneratePoisson(curandGenerator_t generator, unsigned int *outputPtr, size_t n,
                                               double lambda)
{
    SN_RAND_BEGIN(curandGeneratePoisson, generator, outputPtr, n, sizeof *outputPtr, lambda > 0.0 && lambda <= 400000.0,
                  (generator, outputPtr, n, lambda))
    SN_RAND_END((generator, outputPtr, n, lambda));
}
