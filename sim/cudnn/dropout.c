/*
 * dropout.c — dropout of the simulated cuDNN: the descriptor with its random
 * states in device memory, cudnnDropoutForward (mask drawn from the states,
 * kept in the reserve space) and cudnnDropoutBackward (the same mask).
 *
 * The generator is counter based and lives in the states buffer: the seed and
 * a call counter. cudnnSetDropoutDescriptor initialises it from the seed,
 * every forward call draws element i's number from (seed, counter, i) and
 * advances the counter, so masks differ from call to call but the whole
 * sequence is a function of the seed — the same run gives the same masks.
 */
#include <stdlib.h>
#include <string.h>
#include "sim/cudnn/cudnn_sim.h"

/* One 48-byte XORWOW generator state per resident thread (2048 per SM), the
 * layout of curand's default generator that cuDNN keeps in its states. */
#define STATE_BYTES_PER_THREAD 48
#define THREADS_PER_SM 2048

struct dropout_state {
    uint64_t magic;
    uint64_t seed;
    uint64_t counter;
};
#define DROPOUT_STATE_MAGIC 0x53444e4e44524f50ull

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static size_t states_size(cudnnHandle_t h)
{
    const simgpu_profile *p = simgpu_profile_of(h->device);
    int sms = p && p->sm_count > 0 ? p->sm_count : 1;
    return (size_t)sms * THREADS_PER_SM * STATE_BYTES_PER_THREAD;
}

cudnnStatus_t cudnnCreateDropoutDescriptor(cudnnDropoutDescriptor_t *dropoutDesc)
{
    if (!dropoutDesc)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreateDropoutDescriptor: NULL");
    struct cudnnDropoutStruct *d = calloc(1, sizeof *d);
    if (!d)
        return simdnn_fail(CUDNN_STATUS_ALLOC_FAILED, "cudnnCreateDropoutDescriptor: out of memory");
    d->magic = SIMDNN_MAGIC_DROPOUT;
    *dropoutDesc = d;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyDropoutDescriptor(cudnnDropoutDescriptor_t dropoutDesc)
{
    if (!dropoutDesc)
        return CUDNN_STATUS_SUCCESS;
    if (dropoutDesc->magic != SIMDNN_MAGIC_DROPOUT)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnDestroyDropoutDescriptor: invalid descriptor");
    dropoutDesc->magic = SIMDNN_MAGIC_DEAD;
    free(dropoutDesc);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDropoutGetStatesSize(cudnnHandle_t handle, size_t *sizeInBytes)
{
    cudnnStatus_t st = simdnn_check_handle(handle);
    if (st)
        return st;
    if (!sizeInBytes)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnDropoutGetStatesSize: NULL");
    *sizeInBytes = states_size(handle);
    return CUDNN_STATUS_SUCCESS;
}

/* One mask byte per element, padded to 16 bytes. */
static size_t reserve_size(const struct cudnnTensorStruct *x)
{
    return ((size_t)simdnn_tensor_elems(x) + 15) & ~(size_t)15;
}

cudnnStatus_t cudnnDropoutGetReserveSpaceSize(cudnnTensorDescriptor_t xdesc, size_t *sizeInBytes)
{
    cudnnStatus_t st = simdnn_check_tensor(xdesc, "cudnnDropoutGetReserveSpaceSize");
    if (st)
        return st;
    if (!sizeInBytes)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnDropoutGetReserveSpaceSize: NULL");
    *sizeInBytes = reserve_size(xdesc);
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t set_descriptor(cudnnDropoutDescriptor_t d, cudnnHandle_t handle, float dropout, void *states,
                                    size_t bytes, unsigned long long seed, int initialise, const char *what)
{
    /* Initialising the states is device work; restoring is not. */
    cudnnStatus_t st = initialise && states ? simdnn_check_work(handle) : simdnn_check_handle(handle);
    if (st)
        return st;
    if (!d || d->magic != SIMDNN_MAGIC_DROPOUT)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: invalid dropout descriptor", what);
    if (!(dropout >= 0.0f && dropout <= 1.0f))
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: dropout %g outside [0, 1]", what, dropout);
    if (states && bytes < states_size(handle))
        return simdnn_fail(CUDNN_STATUS_INVALID_VALUE, "%s: %zu bytes of states, %zu needed", what, bytes,
                           states_size(handle));
    d->dropout = dropout;
    d->states = states;
    d->states_bytes = bytes;
    d->seed = seed;
    if (states && initialise) {
        simgpu_check_range(states, bytes, 1, what);
        if (simgpu_compute_enabled()) {
            memset(states, 0, bytes);
            struct dropout_state s = {DROPOUT_STATE_MAGIC, seed, 0};
            memcpy(states, &s, sizeof s);
        }
        simdnn_charge(handle, what, 0, 1.0, (double)bytes, 0);
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetDropoutDescriptor(cudnnDropoutDescriptor_t dropoutDesc, cudnnHandle_t handle, float dropout,
                                        void *states, size_t stateSizeInBytes, unsigned long long seed)
{
    return set_descriptor(dropoutDesc, handle, dropout, states, stateSizeInBytes, seed, 1,
                          "cudnnSetDropoutDescriptor");
}

cudnnStatus_t cudnnRestoreDropoutDescriptor(cudnnDropoutDescriptor_t dropoutDesc, cudnnHandle_t handle,
                                            float dropout, void *states, size_t stateSizeInBytes,
                                            unsigned long long seed)
{
    return set_descriptor(dropoutDesc, handle, dropout, states, stateSizeInBytes, seed, 0,
                          "cudnnRestoreDropoutDescriptor");
}

cudnnStatus_t cudnnGetDropoutDescriptor(cudnnDropoutDescriptor_t dropoutDesc, cudnnHandle_t handle, float *dropout,
                                        void **states, unsigned long long *seed)
{
    cudnnStatus_t st = simdnn_check_handle(handle);
    if (st)
        return st;
    if (!dropoutDesc || dropoutDesc->magic != SIMDNN_MAGIC_DROPOUT || !dropout || !states || !seed)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetDropoutDescriptor: bad arguments");
    *dropout = dropoutDesc->dropout;
    *states = dropoutDesc->states;
    *seed = dropoutDesc->seed;
    return CUDNN_STATUS_SUCCESS;
}

struct drop_ctx {
    float *out;
    const float *in;
    uint8_t *mask;
    int64_t index;          /* running element index in row-major order */
    uint64_t key;           /* per-call key from the states */
    uint32_t threshold;     /* keep when the 24-bit draw is >= threshold */
    float scale;
    int draw;               /* forward draws the mask, backward reads it */
};

static void drop_row(void *vctx, int64_t n, const int64_t *off, const int64_t *inner)
{
    struct drop_ctx *c = vctx;
    float *o = c->out + off[0];
    const float *in = c->in + off[1];
    for (int64_t i = 0; i < n; i++, c->index++) {
        if (c->draw) {
            uint32_t r = (uint32_t)(mix64(c->key ^ ((uint64_t)c->index * 0xd1b54a32d192ed03ull)) >> 40);
            c->mask[c->index] = r >= c->threshold;
        }
        o[i * inner[0]] = c->mask[c->index] ? in[i * inner[1]] * c->scale : 0.0f;
    }
}

static cudnnStatus_t check_call(cudnnHandle_t handle, const struct cudnnDropoutStruct *d,
                                const struct cudnnTensorStruct *in, const void *a, const struct cudnnTensorStruct *out,
                                void *b, void *reserve, size_t reserve_bytes, const char *what)
{
    cudnnStatus_t st;
    if ((st = simdnn_check_work(handle)) || (st = simdnn_check_float_tensor(in, what)) ||
        (st = simdnn_check_float_tensor(out, what)))
        return st;
    if (!d || d->magic != SIMDNN_MAGIC_DROPOUT)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: invalid dropout descriptor", what);
    if (!a || !b || !reserve)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL pointer argument", what);
    if (!simdnn_same_dims(in, out))
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: input and output dimensions differ", what);
    if (reserve_bytes < reserve_size(in))
        return simdnn_fail(CUDNN_STATUS_INVALID_VALUE, "%s: reserve space of %zu bytes, %zu needed", what,
                           reserve_bytes, reserve_size(in));
    return CUDNN_STATUS_SUCCESS;
}

static float keep_scale(float p) { return p < 1.0f ? 1.0f / (1.0f - p) : 0.0f; }

cudnnStatus_t cudnnDropoutForward(cudnnHandle_t handle, const cudnnDropoutDescriptor_t dropoutDesc,
                                  const cudnnTensorDescriptor_t xdesc, const void *x, const cudnnTensorDescriptor_t ydesc,
                                  void *y, void *reserveSpace, size_t reserveSpaceSizeInBytes)
{
    const char *what = "cudnnDropoutForward";
    cudnnStatus_t st = check_call(handle, dropoutDesc, xdesc, x, ydesc, y, reserveSpace, reserveSpaceSizeInBytes, what);
    if (st)
        return st;
    if (!dropoutDesc->states)
        return simdnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: the dropout descriptor has no states", what);
    simdnn_check_tensor_range(xdesc, x, 0, "cudnnDropoutForward x");
    simdnn_check_tensor_range(ydesc, y, 1, "cudnnDropoutForward y");
    simgpu_check_range(reserveSpace, reserve_size(xdesc), 1, "cudnnDropoutForward reserveSpace");
    /* The real kernel reads and advances every thread's generator state. */
    simgpu_check_range(dropoutDesc->states, dropoutDesc->states_bytes, 1, "cudnnDropoutForward states");
    if (simgpu_compute_enabled()) {
        struct dropout_state s;
        memcpy(&s, dropoutDesc->states, sizeof s);
        if (s.magic != DROPOUT_STATE_MAGIC) {
            /* States that were never initialised hold garbage on a GPU too;
             * draw from the descriptor's seed rather than fail mid-call. */
            s = (struct dropout_state){DROPOUT_STATE_MAGIC, dropoutDesc->seed, 0};
        }
        float p = dropoutDesc->dropout;
        struct drop_ctx c = {.out = y, .in = x, .mask = reserveSpace,
                             .key = mix64(s.seed ^ mix64(s.counter + 0x9e3779b97f4a7c15ull)),
                             .threshold = (uint32_t)((double)p * (1u << 24)), .scale = keep_scale(p), .draw = 1};
        if (p >= 1.0f)
            c.threshold = 1u << 24; /* drop everything */
        int64_t str[2][CUDNN_DIM_MAX];
        simdnn_strides64(ydesc, str[0]);
        simdnn_strides64(xdesc, str[1]);
        simdnn_for_each_row(xdesc->nb_dims, xdesc->dim, 2, str, drop_row, &c);
        s.counter++;
        memcpy(dropoutDesc->states, &s, sizeof s);
    }
    double n = (double)simdnn_tensor_elems(xdesc);
    simdnn_charge(handle, what, 4 * n, SIMDNN_ELEMENTWISE_FLOP_EFF, n * (2 * sizeof(float) + 1), 0);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDropoutBackward(cudnnHandle_t handle, const cudnnDropoutDescriptor_t dropoutDesc,
                                   const cudnnTensorDescriptor_t dydesc, const void *dy,
                                   const cudnnTensorDescriptor_t dxdesc, void *dx, void *reserveSpace,
                                   size_t reserveSpaceSizeInBytes)
{
    const char *what = "cudnnDropoutBackward";
    cudnnStatus_t st = check_call(handle, dropoutDesc, dydesc, dy, dxdesc, dx, reserveSpace, reserveSpaceSizeInBytes, what);
    if (st)
        return st;
    simdnn_check_tensor_range(dydesc, dy, 0, "cudnnDropoutBackward dy");
    simdnn_check_tensor_range(dxdesc, dx, 1, "cudnnDropoutBackward dx");
    simgpu_check_range(reserveSpace, reserve_size(dydesc), 0, "cudnnDropoutBackward reserveSpace");
    if (simgpu_compute_enabled()) {
        struct drop_ctx c = {.out = dx, .in = dy, .mask = reserveSpace, .scale = keep_scale(dropoutDesc->dropout)};
        int64_t str[2][CUDNN_DIM_MAX];
        simdnn_strides64(dxdesc, str[0]);
        simdnn_strides64(dydesc, str[1]);
        simdnn_for_each_row(dydesc->nb_dims, dydesc->dim, 2, str, drop_row, &c);
    }
    double n = (double)simdnn_tensor_elems(dydesc);
    simdnn_charge(handle, what, n, SIMDNN_ELEMENTWISE_FLOP_EFF, n * (2 * sizeof(float) + 1), 0);
    return CUDNN_STATUS_SUCCESS;
}
