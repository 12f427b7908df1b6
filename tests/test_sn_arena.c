/*
 * test_sn_arena.c — the arena's residency phases (allocator/sn_arena.c)
 * without CUDA: the real-function table is filled with a fake driver, so
 * that demand residency, eviction under the budget, planned offload and
 * prefetch, the cache of free handles and a device short of memory can be
 * driven call by call and checked byte by byte.
 *
 * The fake device: address space is host memory reserved with
 * mmap(PROT_NONE); mapping a handle opens its range, unmapping closes it
 * and throws its bytes away (so contents survive an eviction only through
 * the arena's host copy, as on a GPU whose handle goes to another block);
 * copies are synchronous memcpy; events and streams are tokens. Every fake
 * driver function counts the calls made while the arena's lock is held
 * (DESIGN.md: never a CUDA call under a libsn lock).
 *
 * The arena's source is included rather than linked, so that the tests
 * reach its named phases and its state; realloc is routed through a seam
 * that can refuse the growth of the cache of free handles. The fake
 * driver is installed in common/'s real-function table (sn_real_slot):
 * the program loads no CUDA library, so nothing else resolves.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <cmocka.h>

static void *sn_test_realloc(void *p, size_t size);
#define realloc sn_test_realloc
#include "allocator/sn_arena.c"
#undef realloc

/* Arenas are never taken down (libsn keeps one per device for the life of
 * the process): each test's stays, and LeakSanitizer would call it lost. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "detect_leaks=0";
}


/* ---- the fake device ------------------------------------------------------ */

enum { GRAN = 64 << 10, TOTAL = 64 << 20, RESERVE = 256 << 20, MAX_HANDLES = 4096 };

static struct {
    sn_arena *ar;              /* whose lock the fakes look at */
    uint64_t handle_size[MAX_HANDLES + 1];  /* 0: not live */
    int creates, create_fails, releases, maps, unmaps;
    int copies_d2h, copies_h2d;
    int under_lock;            /* driver calls made with the arena's lock held */
    int fail_creates;          /* cuMemCreate answers out of memory */
    int fail_creates_n;        /* ... the next n times only (another thread's memory on its way back) */
    uint64_t phys_at_release;  /* the arena's account when the last release was made */
    cudaStream_t waited_stream;
    cudaEvent_t waited_event;
    int stream_waits;          /* cudaStreamWaitEvent on a stream other than libsn's */
    int refuse_hcache_growth;  /* the seam: the cache of free handles cannot grow */
    int device_syncs;          /* cudaDeviceSynchronize */
    unsigned streams_synced;   /* cudaStreamSynchronize: a bit per token (stream_bit) */
    cudaEvent_t synced_event;  /* the latest cudaEventSynchronize */
} fake;

static char stream_tokens[5];
#define TEST_STREAM ((cudaStream_t)(void *)&stream_tokens[3])
#define OTHER_STREAM ((cudaStream_t)(void *)&stream_tokens[4])

static unsigned stream_bit(cudaStream_t s)
{
    ptrdiff_t i = (const char *)(const void *)s - stream_tokens;
    return i >= 0 && i < (ptrdiff_t)sizeof stream_tokens ? 1u << i : 1u << 31;
}

static void note_call(void)
{
    if (fake.ar && __atomic_load_n(&fake.ar->lock.word, __ATOMIC_RELAXED) != 0)
        fake.under_lock++;
}

static void *sn_test_realloc(void *p, size_t size)
{
    if (fake.refuse_hcache_growth && fake.ar && p == fake.ar->hcache &&
        size == (fake.ar->cap_h ? fake.ar->cap_h * 2 : 64) * sizeof(sn_hcache))
        return NULL;
    return realloc(p, size);
}

static CUresult fake_cuMemCreate(CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *prop,
                                 unsigned long long flags)
{
    (void)prop;
    (void)flags;
    note_call();
    if (fake.fail_creates || fake.fail_creates_n > 0 || size % GRAN) {
        if (fake.fail_creates_n > 0)
            fake.fail_creates_n--;
        fake.create_fails++;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (int i = 1; i <= MAX_HANDLES; i++)
        if (!fake.handle_size[i]) {
            fake.handle_size[i] = size;
            *h = (CUmemGenericAllocationHandle)i;
            fake.creates++;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult fake_cuMemRelease(CUmemGenericAllocationHandle h)
{
    note_call();
    if (!h || h > MAX_HANDLES || !fake.handle_size[h])
        return CUDA_ERROR_INVALID_VALUE;
    fake.handle_size[h] = 0;
    fake.releases++;
    fake.phys_at_release = fake.ar ? fake.ar->phys_bytes : 0;
    return CUDA_SUCCESS;
}

static CUresult fake_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle h,
                              unsigned long long flags)
{
    (void)flags;
    note_call();
    if (!h || h > MAX_HANDLES || fake.handle_size[h] != size || offset)
        return CUDA_ERROR_INVALID_VALUE;
    if (mprotect((void *)ptr, size, PROT_READ | PROT_WRITE) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    fake.maps++;
    return CUDA_SUCCESS;
}

static CUresult fake_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    note_call();
    /* the bytes are gone: what comes back must come from a copy */
    madvise((void *)ptr, size, MADV_DONTNEED);
    mprotect((void *)ptr, size, PROT_NONE);
    fake.unmaps++;
    return CUDA_SUCCESS;
}

static CUresult fake_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    (void)ptr;
    (void)size;
    (void)desc;
    (void)count;
    note_call();
    return CUDA_SUCCESS;
}

static CUresult fake_cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t align, CUdeviceptr addr,
                                         unsigned long long flags)
{
    (void)align;
    (void)addr;
    (void)flags;
    note_call();
    /* the arena asks for gigabytes and the tests use a few of its first
     * megabytes: only those are reserved (light on sanitizers' shadow) */
    size_t real = size < RESERVE ? size : RESERVE;
    void *p = mmap(NULL, real, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ptr = (CUdeviceptr)p;
    return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice dev)
{
    (void)dev;
    note_call();
    *v = a == CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED;
    return CUDA_SUCCESS;
}

static CUresult fake_cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *prop,
                                                   CUmemAllocationGranularity_flags o)
{
    (void)prop;
    (void)o;
    note_call();
    *g = GRAN;
    return CUDA_SUCCESS;
}

static CUresult fake_cuInit(unsigned int flags)
{
    (void)flags;
    note_call();
    return CUDA_SUCCESS;
}

static cudaError_t fake_cudaMemGetInfo(size_t *fr, size_t *total)
{
    note_call();
    *fr = TOTAL;
    *total = TOTAL;
    return cudaSuccess;
}

static cudaError_t fake_cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
    (void)flags;
    note_call();
    static int next;
    *s = (cudaStream_t)(void *)&stream_tokens[next++ % 3];
    return cudaSuccess;
}

static cudaError_t fake_cudaStreamDestroy(cudaStream_t s)
{
    (void)s;
    note_call();
    return cudaSuccess;
}

static cudaError_t fake_cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags)
{
    (void)flags;
    note_call();
    *e = (cudaEvent_t)malloc(1);
    return *e ? cudaSuccess : cudaErrorMemoryAllocation;
}

static cudaError_t fake_cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    (void)e;
    (void)s;
    note_call();
    return cudaSuccess;
}

static cudaError_t fake_cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags)
{
    (void)flags;
    note_call();
    if (s == TEST_STREAM) {
        fake.stream_waits++;
        fake.waited_stream = s;
        fake.waited_event = e;
    }
    return cudaSuccess;
}

static cudaError_t fake_cudaEventSynchronize(cudaEvent_t e)
{
    note_call();
    fake.synced_event = e;
    return cudaSuccess;
}

static cudaError_t fake_cudaEventQuery(cudaEvent_t e)
{
    (void)e;
    note_call();
    return cudaSuccess;
}

static cudaError_t fake_cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    (void)a;
    (void)b;
    note_call();
    *ms = 0.5f;
    return cudaSuccess;
}

static cudaError_t fake_cudaStreamSynchronize(cudaStream_t s)
{
    note_call();
    fake.streams_synced |= stream_bit(s);
    return cudaSuccess;
}

static cudaError_t fake_cudaDeviceSynchronize(void)
{
    note_call();
    fake.device_syncs++;
    return cudaSuccess;
}

static cudaError_t fake_cudaGetLastError(void)
{
    return cudaSuccess;
}

static cudaError_t fake_cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                                        cudaStream_t s)
{
    (void)s;
    note_call();
    memcpy(dst, src, n);
    if (kind == cudaMemcpyDeviceToHost)
        fake.copies_d2h++;
    else if (kind == cudaMemcpyHostToDevice)
        fake.copies_h2d++;
    return cudaSuccess;
}

static cudaError_t fake_cudaHostAlloc(void **p, size_t n, unsigned int flags)
{
    (void)flags;
    note_call();
    *p = malloc(n);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

static cudaError_t fake_cudaFreeHost(void *p)
{
    note_call();
    free(p);
    return cudaSuccess;
}

#define FAKE(name)                                   \
    do {                                             \
        sn_real_##name##_fn f_ = fake_##name;        \
        sn_real_slot[SN_HOOK_ID_##name] = (void *)f_; \
    } while (0)

/* A fresh arena over a fresh fake device, with a budget of budget_granules. */
static int setup(void **state)
{
    memset(&fake, 0, sizeof fake);
    FAKE(cuMemCreate);
    FAKE(cuMemRelease);
    FAKE(cuMemMap);
    FAKE(cuMemUnmap);
    FAKE(cuMemSetAccess);
    FAKE(cuMemAddressReserve);
    FAKE(cuDeviceGetAttribute);
    FAKE(cuMemGetAllocationGranularity);
    FAKE(cuInit);
    FAKE(cudaMemGetInfo);
    FAKE(cudaStreamCreateWithFlags);
    FAKE(cudaStreamDestroy);
    FAKE(cudaEventCreateWithFlags);
    FAKE(cudaEventRecord);
    FAKE(cudaStreamWaitEvent);
    FAKE(cudaEventSynchronize);
    FAKE(cudaEventQuery);
    FAKE(cudaEventElapsedTime);
    FAKE(cudaStreamSynchronize);
    FAKE(cudaDeviceSynchronize);
    FAKE(cudaGetLastError);
    FAKE(cudaMemcpyAsync);
    FAKE(cudaHostAlloc);
    FAKE(cudaFreeHost);
    sn_options_load();
    sn_opt.budget.kind = SN_SIZE_BYTES;
    sn_opt.budget.bytes = 4 * GRAN;
    sn_arena *ar = sn_arena_create(0);
    assert_non_null(ar);
    assert_int_equal(ar->pool, 0);
    assert_int_equal(ar->budget, 4 * GRAN);
    fake.ar = ar;
    *state = ar;
    return 0;
}

/* ---- helpers ---------------------------------------------------------------- */

/* A framework allocation of granules whole granules: its block. */
static sn_block *alloc_block(sn_arena *ar, int granules)
{
    uintptr_t addr = 0;
    sn_arena_alloc *rec = NULL;
    sn_arena_alloc_request rq = {.size = (uint64_t)granules * GRAN, .owner = SN_OWNER_FRAMEWORK, .early = 1};
    assert_int_equal(sn_arena_alloc_bytes(ar, &rq, &addr, &rec), SN_ARENA_OK);
    sn_block *b = sn_arena_alloc_block(rec);
    assert_int_equal(b->va, addr);
    return b;
}

/* A call on TEST_STREAM that uses b with mode; returns acquire's answer
 * (the ticket released again on success). */
static int use_block(sn_arena *ar, sn_block *b, unsigned mode, uint64_t *need)
{
    sn_arena_use u = {b, mode, 0, UINT64_MAX};
    sn_arena_request rq = {.uses = &u, .nuses = 1, .stream = TEST_STREAM, .pos = -1};
    sn_arena_ticket t;
    uint64_t n = 0;
    int rc = sn_arena_acquire(ar, &rq, &t, need ? need : &n);
    if (rc == SN_ARENA_OK)
        sn_arena_release(&t);
    return rc;
}

/* Writes pattern into every byte of b (resident, so mapped), as a kernel
 * of the framework would. */
static void fill(sn_arena *ar, sn_block *b, unsigned char pattern)
{
    assert_int_equal(use_block(ar, b, SN_WRITE | SN_OVERWRITE, NULL), SN_ARENA_OK);
    memset((void *)b->va, pattern, b->size);
}

static int all_bytes(const void *p, unsigned char v, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i] != v)
            return 0;
    return 1;
}

/* ---- tests ---------------------------------------------------------------------- */

/* A new allocation has addresses only; the first call that uses it
 * creates one handle of its size and maps it. */
static void test_acquire_maps_missing_block(void **state)
{
    sn_arena *ar = *state;
    sn_block *b = alloc_block(ar, 2);
    assert_int_equal(fake.maps, 0);
    assert_false(b->resident);
    uint64_t need = 0;
    assert_int_equal(use_block(ar, b, SN_WRITE | SN_OVERWRITE, &need), SN_ARENA_OK);
    assert_int_equal(need, 2 * GRAN);
    assert_true(b->resident);
    assert_int_equal(fake.creates, 1);
    assert_int_equal(fake.maps, 1);
    assert_int_equal(ar->phys_bytes, 2 * GRAN);
    assert_int_equal(ar->resident_bytes, 2 * GRAN);
    assert_int_equal(sn_pins(b), 0);
    /* the range is really open: a write does not fault */
    memset((void *)b->va, 0x5a, b->size);
    /* a second call finds it there: nothing created or mapped */
    assert_int_equal(use_block(ar, b, SN_READ, NULL), SN_ARENA_OK);
    assert_int_equal(fake.creates, 1);
    assert_int_equal(fake.maps, 1);
    assert_int_equal(fake.under_lock, 0);
}

/* Over the budget, the least recently used block leaves: copied out to
 * pinned host memory, then unmapped, its handle going straight to the
 * block that needs it; a later use brings it back with its contents. */
static void test_eviction_copies_out_then_unmaps(void **state)
{
    sn_arena *ar = *state;
    sn_block *a = alloc_block(ar, 2), *b = alloc_block(ar, 2), *c = alloc_block(ar, 2);
    fill(ar, a, 0xa1);
    fill(ar, b, 0xb2);
    assert_int_equal(fake.creates, 2);
    fill(ar, c, 0xc3);
    /* a was least recently used */
    assert_false(a->resident);
    assert_true(b->resident);
    assert_true(c->resident);
    assert_true(a->host_valid);
    assert_non_null(a->host);
    assert_true(all_bytes(a->host, 0xa1, a->size));
    assert_int_equal(fake.copies_d2h, 1);
    assert_int_equal(fake.unmaps, 1);
    /* a's handle served c: nothing created, nothing released */
    assert_int_equal(fake.creates, 2);
    assert_int_equal(fake.releases, 0);
    assert_true(ar->phys_bytes <= ar->budget);
    assert_int_equal(ar->st.evictions, 1);
    /* a comes back (b leaves): the bytes are a's, from the host copy */
    assert_int_equal(use_block(ar, a, SN_READ, NULL), SN_ARENA_OK);
    assert_true(a->resident);
    assert_false(b->resident);
    assert_int_equal(fake.copies_h2d, 1);
    assert_true(all_bytes((void *)a->va, 0xa1, a->size));
    assert_true(ar->phys_bytes <= ar->budget);
    assert_int_equal(fake.under_lock, 0);
}

/* A call whose working set is larger than the budget fails at once,
 * saying what it needs, with nothing pinned, mapped or left busy. */
static void test_working_set_over_budget_fails_cleanly(void **state)
{
    sn_arena *ar = *state;
    sn_block *a = alloc_block(ar, 3), *b = alloc_block(ar, 2);
    sn_arena_use u[2] = {{a, SN_READ, 0, UINT64_MAX}, {b, SN_READ, 0, UINT64_MAX}};
    sn_arena_request rq = {.uses = u, .nuses = 2, .stream = TEST_STREAM, .pos = -1};
    sn_arena_ticket t;
    uint64_t need = 0;
    assert_int_equal(sn_arena_acquire(ar, &rq, &t, &need), SN_ARENA_NOMEM);
    assert_int_equal(need, 5 * GRAN);
    assert_int_equal(sn_pins(a) + sn_pins(b), 0);
    assert_false(a->busy || b->busy);
    assert_int_equal(fake.maps, 0);
    assert_int_equal(ar->phys_bytes, 0);
    assert_int_equal(ar->st.oom_calls, 1);
    /* the in-progress slot was given back */
    assert_int_equal(__atomic_load_n(&ar->inflight_mask, __ATOMIC_RELAXED), 0);
    /* each alone still fits */
    assert_int_equal(use_block(ar, a, SN_READ, NULL), SN_ARENA_OK);
    assert_int_equal(fake.under_lock, 0);
}

/* The plan sends a block away (offload: copy out, then reap: unmap, the
 * handle kept in the cache) and brings it back (prefetch: the cached
 * handle mapped again, the contents copied in); the first call on a
 * stream waits for that copy once. */
static void test_offload_reap_prefetch(void **state)
{
    sn_arena *ar = *state;
    sn_block *a = alloc_block(ar, 2);
    fill(ar, a, 0x3c);
    void *blocks[1] = {a};
    int drop[1] = {0};
    assert_int_equal(sn_arena_offload(ar, blocks, drop, 1), 1);
    assert_true(a->leaving);
    assert_true(a->resident);
    assert_int_equal(fake.copies_d2h, 1);
    assert_true(sn_arena_leaving(ar));
    sn_arena_reap(ar, 1);
    assert_false(a->resident);
    assert_false(a->leaving);
    assert_int_equal(fake.unmaps, 1);
    /* kept for reuse, still counted */
    assert_int_equal(ar->nh, 1);
    assert_int_equal(ar->phys_bytes, 2 * GRAN);
    assert_int_equal(ar->resident_bytes, 0);
    assert_int_equal(fake.releases, 0);

    assert_int_equal(sn_arena_prefetch(ar, blocks, 1), 1);
    assert_true(a->resident);
    assert_int_equal(ar->nh, 0);
    assert_int_equal(fake.creates, 1);
    assert_int_equal(fake.copies_h2d, 1);
    assert_true(all_bytes((void *)a->va, 0x3c, a->size));
    cudaEvent_t load = a->load_ev;
    assert_non_null(load);
    /* the first call on TEST_STREAM waits for the prefetch's copy ... */
    int waits = fake.stream_waits;
    assert_int_equal(use_block(ar, a, SN_READ, NULL), SN_ARENA_OK);
    assert_int_equal(fake.stream_waits, waits + 1);
    assert_ptr_equal(fake.waited_event, load);
    /* ... once */
    assert_int_equal(use_block(ar, a, SN_READ, NULL), SN_ARENA_OK);
    assert_int_equal(fake.stream_waits, waits + 1);
    assert_int_equal(fake.copies_h2d, 1);
    assert_int_equal(fake.under_lock, 0);
}

/* A handle the cache of free handles cannot take (its array would not
 * grow) is released only after the arena's lock is given back, and its
 * bytes leave the account only once it has been. */
static void test_pieces_cache_release_outside_lock(void **state)
{
    sn_arena *ar = *state;
    sn_block *a = alloc_block(ar, 2);
    fill(ar, a, 0x11);
    void *blocks[1] = {a};
    int drop[1] = {0};
    assert_int_equal(sn_arena_offload(ar, blocks, drop, 1), 1);
    fake.refuse_hcache_growth = 1;
    sn_arena_reap(ar, 1);
    fake.refuse_hcache_growth = 0;
    assert_false(a->resident);
    assert_int_equal(ar->nh, 0);
    assert_int_equal(fake.releases, 1);
    assert_int_equal(fake.under_lock, 0);
    /* counted while the release was under way, out of the account after */
    assert_int_equal(fake.phys_at_release, 2 * GRAN);
    assert_int_equal(ar->phys_bytes, 0);
    /* the contents are on the host: a use brings them back on a new handle */
    assert_int_equal(use_block(ar, a, SN_READ, NULL), SN_ARENA_OK);
    assert_int_equal(fake.creates, 2);
    assert_true(all_bytes((void *)a->va, 0x11, a->size));
    assert_int_equal(fake.under_lock, 0);
}

/* The device has less free memory than the budget says: cuMemCreate
 * fails. The budget shrinks to what the arena holds, and the call is
 * served within it by evicting (the victim's handle reused), its
 * contents kept on the host. */
static void test_failing_create_lowers_budget(void **state)
{
    sn_arena *ar = *state;
    sn_block *a = alloc_block(ar, 2), *b = alloc_block(ar, 2);
    fill(ar, a, 0x77);
    fake.fail_creates = 1;
    assert_int_equal(use_block(ar, b, SN_WRITE | SN_OVERWRITE, NULL), SN_ARENA_OK);
    assert_true(fake.create_fails >= 1);
    /* (tried again ten times first: the shortage lasted) */
    assert_int_equal(ar->st.create_retries, 10);
    assert_int_equal(ar->budget, 2 * GRAN);
    assert_int_equal(ar->st.budget, 2 * GRAN);
    assert_true(b->resident);
    assert_false(a->resident);
    assert_true(all_bytes(a->host, 0x77, a->size));
    assert_int_equal(ar->phys_bytes, 2 * GRAN);
    assert_int_equal(fake.creates, 1);
    /* a block larger than what can be had fails cleanly */
    sn_block *big = alloc_block(ar, 1);
    sn_arena_use u[2] = {{b, SN_READ, 0, UINT64_MAX}, {big, SN_READ, 0, UINT64_MAX}};
    sn_arena_request rq = {.uses = u, .nuses = 2, .stream = TEST_STREAM, .pos = -1};
    sn_arena_ticket t;
    uint64_t need = 0;
    assert_int_equal(sn_arena_acquire(ar, &rq, &t, &need), SN_ARENA_NOMEM);
    assert_int_equal(sn_pins(b) + sn_pins(big), 0);
    /* memory comes back: a returns with its contents */
    fake.fail_creates = 0;
    assert_int_equal(use_block(ar, a, SN_READ, NULL), SN_ARENA_OK);
    assert_true(all_bytes((void *)a->va, 0x77, a->size));
    assert_int_equal(fake.under_lock, 0);
}

/* cuMemCreate fails twice, then succeeds: memory another thread counted as
 * given back was still on its way to the driver. The call waits and tries
 * again; the budget stays as it was. */
static void test_transient_create_failure_keeps_budget(void **state)
{
    sn_arena *ar = *state;
    sn_block *a = alloc_block(ar, 2), *b = alloc_block(ar, 2);
    fill(ar, a, 0x31);
    uint64_t budget = ar->budget;
    fake.fail_creates_n = 2;
    assert_int_equal(use_block(ar, b, SN_WRITE | SN_OVERWRITE, NULL), SN_ARENA_OK);
    assert_int_equal(fake.create_fails, 2);
    assert_int_equal(ar->st.create_retries, 2);
    assert_int_equal(ar->budget, budget);
    assert_true(b->resident);
    assert_true(a->resident);
    assert_true(all_bytes((void *)a->va, 0x31, a->size));
    assert_int_equal(fake.under_lock, 0);
}

/* Phase 1 of acquire on its own: a block another thread is moving makes
 * the collection stop (the caller waits and collects afresh); a shared
 * block's overwrite of one allocation does not overwrite the others. */
static void test_collect_phase(void **state)
{
    sn_arena *ar = *state;
    sn_block *a = alloc_block(ar, 1), *b = alloc_block(ar, 1);
    size_t cap = sizeof ((sn_arena_ticket *)0)->small / sizeof(void *);
    sn_arena_ticket t = {.blocks = NULL};
    t.blocks = t.small;
    sn_arena_use u[2] = {{a, SN_READ, 0, UINT64_MAX}, {b, SN_WRITE | SN_OVERWRITE, 0, UINT64_MAX}};
    sn_arena_request rq = {.uses = u, .nuses = 2, .pos = -1};
    sn_lock_take(&ar->lock);
    ar->clock++;
    assert_int_equal(sn_acquire_collect_locked(ar, &rq, &t, &cap), SN_COLLECT_OK);
    assert_int_equal(t.nblocks, 2);
    assert_int_equal(b->call_mode, SN_WRITE | SN_OVERWRITE);
    b->busy = 1;
    ar->clock++;
    assert_int_equal(sn_acquire_collect_locked(ar, &rq, &t, &cap), SN_COLLECT_BUSY);
    b->busy = 0;
    /* two small allocations in one shared block */
    uintptr_t x = 0, y = 0;
    sn_arena_alloc *rx = NULL, *ry = NULL;
    sn_arena_alloc_request small = {.size = 4096, .owner = SN_OWNER_FRAMEWORK, .early = 1};
    sn_lock_give(&ar->lock);
    assert_int_equal(sn_arena_alloc_bytes(ar, &small, &x, &rx), SN_ARENA_OK);
    assert_int_equal(sn_arena_alloc_bytes(ar, &small, &y, &ry), SN_ARENA_OK);
    sn_block *s = sn_arena_alloc_block(rx);
    assert_ptr_equal(s, sn_arena_alloc_block(ry));
    assert_true(s->shared);
    sn_arena_use su = {s, SN_WRITE | SN_OVERWRITE, 0, 4096};
    sn_arena_request srq = {.uses = &su, .nuses = 1, .pos = -1};
    sn_lock_take(&ar->lock);
    ar->clock++;
    assert_int_equal(sn_acquire_collect_locked(ar, &srq, &t, &cap), SN_COLLECT_OK);
    assert_int_equal(s->call_mode, SN_WRITE);
    sn_lock_give(&ar->lock);
    sn_ticket_free(&t);
    assert_int_equal(fake.under_lock, 0);
}

/* A call that libsn cannot see through (all) makes every live block
 * resident, libsn's scratch excepted. */
static void test_all_makes_everything_resident(void **state)
{
    sn_arena *ar = *state;
    sn_block *a = alloc_block(ar, 1), *b = alloc_block(ar, 2);
    uintptr_t sva = 0;
    sn_block *scr = sn_arena_scratch(ar, TEST_STREAM, GRAN, 0, &sva);
    assert_non_null(scr);
    sn_arena_request rq = {.all = 1, .stream = TEST_STREAM, .pos = -1};
    sn_arena_ticket t;
    uint64_t need = 0;
    assert_int_equal(sn_arena_acquire(ar, &rq, &t, &need), SN_ARENA_OK);
    assert_int_equal(t.nblocks, 2);
    assert_true(a->resident && b->resident);
    assert_false(scr->resident);
    assert_int_equal(need, 3 * GRAN);
    assert_int_equal(sn_pins(a), 1);
    sn_arena_release(&t);
    assert_int_equal(sn_pins(a), 0);
    /* the stream's scratch, asked for by size, joins a call's blocks */
    sn_arena_request srq = {.scratch = GRAN, .stream = TEST_STREAM, .pos = -1};
    assert_int_equal(sn_arena_acquire(ar, &srq, &t, &need), SN_ARENA_OK);
    assert_int_equal(t.scratch_va, sva);
    assert_true(scr->resident);
    sn_arena_release(&t);
    /* a larger one the stream does not have is refused, nothing done */
    srq.scratch = 2 * GRAN;
    assert_int_equal(sn_arena_acquire(ar, &srq, &t, &need), SN_ARENA_NO_SCRATCH);
    assert_int_equal(fake.under_lock, 0);
}

/* A framework allocation of granules whole granules: its record. */
static sn_arena_alloc *alloc_rec(sn_arena *ar, int granules)
{
    uintptr_t addr = 0;
    sn_arena_alloc *rec = NULL;
    sn_arena_alloc_request rq = {.size = (uint64_t)granules * GRAN, .owner = SN_OWNER_FRAMEWORK, .early = 1};
    assert_int_equal(sn_arena_alloc_bytes(ar, &rq, &addr, &rec), SN_ARENA_OK);
    return rec;
}

/* cudaFree waits for the program's streams (those of calls that needed
 * nothing resident too) and for the freed block's own copy out, not for
 * the whole device, where libsn's copies of other blocks run. The next
 * allocation of its size gets the block, and the leave that was under
 * way does not take its memory from under it. */
static void test_free_waits_program_streams_and_own_copy(void **state)
{
    sn_arena *ar = *state;
    sn_arena_alloc *rec = alloc_rec(ar, 2);
    sn_block *a = sn_arena_alloc_block(rec);
    fill(ar, a, 0x42);
    sn_arena_note_stream(ar, OTHER_STREAM);
    void *blocks[1] = {a};
    int drop[1] = {0};
    assert_int_equal(sn_arena_offload(ar, blocks, drop, 1), 1);
    assert_true(a->leaving);
    cudaEvent_t leave = a->leave_ev;
    assert_non_null(leave);
    fake.streams_synced = 0;
    fake.synced_event = NULL;
    sn_arena_free(rec);
    assert_int_equal(fake.device_syncs, 0);
    assert_int_equal(fake.streams_synced, stream_bit(TEST_STREAM) | stream_bit(OTHER_STREAM));
    assert_ptr_equal(fake.synced_event, leave);
    sn_arena_alloc *again = alloc_rec(ar, 2);
    assert_ptr_equal(sn_arena_alloc_block(again), a);
    fill(ar, a, 0x99);
    assert_false(a->leaving);
    sn_arena_reap(ar, 1);
    assert_true(a->resident);
    assert_true(all_bytes((void *)a->va, 0x99, a->size));
    assert_int_equal(fake.under_lock, 0);
}

/* A stream the program destroys is not waited for by name again (its
 * handle may be invalid, or another stream's by then): the next free
 * waits for the whole device instead, as work may still be queued on it. */
static void test_free_after_stream_destroyed_waits_device(void **state)
{
    sn_arena *ar = *state;
    sn_arena_alloc *rec = alloc_rec(ar, 1);
    fill(ar, sn_arena_alloc_block(rec), 0x21);
    sn_arena_note_stream(ar, OTHER_STREAM);
    sn_arena_forget_stream(ar, TEST_STREAM);
    fake.streams_synced = 0;
    sn_arena_free(rec);
    assert_int_equal(fake.device_syncs, 1);
    assert_int_equal(fake.streams_synced & stream_bit(TEST_STREAM), 0);
    /* the device synchronisation covered it: the next free names streams again */
    sn_arena_alloc *again = alloc_rec(ar, 1);
    fill(ar, sn_arena_alloc_block(again), 0x22);
    fake.streams_synced = 0;
    sn_arena_free(again);
    assert_int_equal(fake.device_syncs, 1);
    assert_int_equal(fake.streams_synced, stream_bit(TEST_STREAM));
    assert_int_equal(fake.under_lock, 0);
}

/* A free does not synchronise a stream that is capturing into a graph
 * (that would invalidate the program's capture): it waits for the event
 * recorded there before the capture began, which covers all that can run. */
static void test_free_leaves_capturing_stream(void **state)
{
    sn_arena *ar = *state;
    sn_arena_alloc *rec = alloc_rec(ar, 1);
    fill(ar, sn_arena_alloc_block(rec), 0x31);
    static char before_capture;
    sn_capture_begun(TEST_STREAM, &before_capture);
    fake.streams_synced = 0;
    fake.synced_event = NULL;
    sn_arena_free(rec);
    assert_ptr_equal(sn_capture_ended(TEST_STREAM), &before_capture);
    assert_int_equal(fake.streams_synced & stream_bit(TEST_STREAM), 0);
    assert_ptr_equal(fake.synced_event, (cudaEvent_t)(void *)&before_capture);
    assert_int_equal(fake.device_syncs, 0);
    assert_int_equal(fake.under_lock, 0);
}

/* The same for a copy in: a block the plan is bringing back is freed; the
 * free waits for that copy, which would otherwise land on the next
 * allocation's contents. */
static void test_free_waits_own_copy_in(void **state)
{
    sn_arena *ar = *state;
    sn_arena_alloc *rec = alloc_rec(ar, 2);
    sn_block *a = sn_arena_alloc_block(rec);
    fill(ar, a, 0x17);
    void *blocks[1] = {a};
    int drop[1] = {0};
    assert_int_equal(sn_arena_offload(ar, blocks, drop, 1), 1);
    sn_arena_reap(ar, 1);
    assert_false(a->resident);
    assert_int_equal(sn_arena_prefetch(ar, blocks, 1), 1);
    cudaEvent_t load = a->load_ev;
    assert_non_null(load);
    fake.synced_event = NULL;
    sn_arena_free(rec);
    assert_ptr_equal(fake.synced_event, load);
    assert_int_equal(fake.device_syncs, 0);
    assert_int_equal(fake.under_lock, 0);
}

/* A load takes a handle that completes it, never small ones that do not:
 * each piece would be one more mapping every time the block comes back.
 * Two freed one-granule blocks make room for a two-granule one: their
 * handles are released and one of its size is made. */
static void test_load_makes_one_handle_over_small_pieces(void **state)
{
    sn_arena *ar = *state;
    sn_arena_alloc *ra = alloc_rec(ar, 1), *rb = alloc_rec(ar, 1);
    sn_block *a = sn_arena_alloc_block(ra), *b = sn_arena_alloc_block(rb), *d = alloc_block(ar, 2);
    fill(ar, a, 1);
    fill(ar, b, 2);
    fill(ar, d, 3);
    assert_int_equal(fake.creates, 3);
    sn_arena_free(ra);
    sn_arena_free(rb);
    sn_block *c = alloc_block(ar, 2);
    fill(ar, c, 4);
    assert_true(c->resident);
    assert_int_equal(c->bk.n, 1);
    assert_int_equal(fake.creates, 4);
    assert_int_equal(fake.releases, 2);
    assert_true(ar->phys_bytes <= ar->budget);
    assert_true(all_bytes((void *)d->va, 3, d->size));
    assert_int_equal(fake.under_lock, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_acquire_maps_missing_block, setup),
        cmocka_unit_test_setup(test_free_waits_program_streams_and_own_copy, setup),
        cmocka_unit_test_setup(test_free_waits_own_copy_in, setup),
        cmocka_unit_test_setup(test_free_leaves_capturing_stream, setup),
        cmocka_unit_test_setup(test_free_after_stream_destroyed_waits_device, setup),
        cmocka_unit_test_setup(test_load_makes_one_handle_over_small_pieces, setup),
        cmocka_unit_test_setup(test_eviction_copies_out_then_unmaps, setup),
        cmocka_unit_test_setup(test_working_set_over_budget_fails_cleanly, setup),
        cmocka_unit_test_setup(test_offload_reap_prefetch, setup),
        cmocka_unit_test_setup(test_pieces_cache_release_outside_lock, setup),
        cmocka_unit_test_setup(test_transient_create_failure_keeps_budget, setup),
        cmocka_unit_test_setup(test_failing_create_lowers_budget, setup),
        cmocka_unit_test_setup(test_collect_phase, setup),
        cmocka_unit_test_setup(test_all_makes_everything_resident, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
