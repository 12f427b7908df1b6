/*
 * sn_core.c — the core behind the wrappers (see sn_core.h): the registry,
 * the per-device call logs, call sites, kernel argument scans and step
 * timing with events on the call's own stream.
 *
 * Locks (sn_lock.h): one for the registry, one per device (its call log,
 * pending timings, spare events) and one for the handle tables (streams,
 * events, kernel layouts), taken in that order. CUDA calls libsn makes for
 * itself (events, its own stream, parameter layouts, capture queries) go to
 * the real functions with no libsn lock held, and with the thread's guard
 * held so nothing of it is traced. A failure
 * of one of those calls is cleared from the runtime's last-error state so
 * the framework never sees an error it did not cause.
 */
#include "core/sn_core.h"

#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "allocator/sn_arena.h"
#include "common/sn_array.h"
#include "common/sn_mangle.h"
#include "core/sn_access.h"
#include "common/sn_capture.h"
#include "core/sn_convsearch.h"
#include "core/sn_graphs.h"
#include "manage/sn_manage.h"
#include "common/sn_hooks.h"
#include "common/sn_lock.h"
#include "common/sn_log.h"
#include "common/sn_options.h"
#include "tracer/sn_output.h"
#include "tracer/sn_period.h"
#include "tracer/sn_trace.h"

static sn_lock sn_reg_lock = SN_LOCK_INITIALIZER(SN_RANK_REGISTRY);
static sn_lock sn_handles_lock = SN_LOCK_INITIALIZER(SN_RANK_HANDLES);
static sn_registry sn_reg;
static int sn_core_ready;

/* ---- per device ----------------------------------------------------------- */

typedef struct sn_pending {
    int64_t index;
    cudaEvent_t start, stop;
    void *stream;
} sn_pending;

#define SN_MAX_PENDING 65536

typedef struct sn_device {
    sn_lock lock;
    sn_trace *trace;
    cudaEvent_t origin;       /* first event recorded on the device: time zero */
    int origin_state;         /* 0 none, 1 recorded, 2 being recorded, -1 timing unavailable */
    sn_pending *pending;
    size_t npending, cap_pending;
    cudaEvent_t *spare;       /* events ready for reuse */
    size_t nspare, cap_spare;
    /* profiling: steps are timed until the iteration has repeated
     * SN_PROFILE_ITERS + 1 times */
    uint64_t *step_sig;
    size_t nsig, cap_sig, next_check;
    int profiled;             /* written under the lock, read atomically outside it; 0 again
                                 while the iteration is learned anew */
    int learned;              /* an iteration has been learned (atomic, as profiled) */
    uint64_t passed, passed_bytes; /* device allocations manage mode left to CUDA (atomic) */
    sn_manager mgr;           /* manage mode's plan and its following (manage/sn_manage.h), under
                                 the lock: its executor's step cursor is advanced in the same hold as
                                 the trace's, so in the same order */
    cudaStream_t own_stream;  /* libsn's non-blocking stream (time zero) */
} sn_device;

#define SN_DEV(i) [i] = {.lock = SN_LOCK_INITIALIZER(SN_RANK_DEVICE0 + (i)), .mgr = {.lock = &sn_devs[i].lock, .dev = (i)}}
_Static_assert(SN_MAX_DEVICES == 16 && SN_RANK_DEVICE0 + SN_MAX_DEVICES <= SN_RANK_HANDLES,
               "one initialiser and one lock rank per device");
static sn_device sn_devs[SN_MAX_DEVICES] = {
    SN_DEV(0), SN_DEV(1), SN_DEV(2),  SN_DEV(3),  SN_DEV(4),  SN_DEV(5),  SN_DEV(6),  SN_DEV(7),
    SN_DEV(8), SN_DEV(9), SN_DEV(10), SN_DEV(11), SN_DEV(12), SN_DEV(13), SN_DEV(14), SN_DEV(15),
};

static sn_trace *sn_trace_create_locked(int dev)
{
    sn_device *d = &sn_devs[dev];
    d->trace = calloc(1, sizeof *d->trace);
    if (d->trace)
        sn_trace_init(d->trace, dev);
    return d->trace;
}

static inline sn_trace *sn_trace_of_locked(int dev)
{
    if (dev < 0 || dev >= SN_MAX_DEVICES)
        return NULL;
    sn_trace *t = sn_devs[dev].trace;
    return __builtin_expect(t != NULL, 1) ? t : sn_trace_create_locked(dev);
}

/* ---- streams and events the framework uses --------------------------------- */

typedef struct sn_stream_info {
    void *stream;
    int nonblocking;
    UT_hash_handle hh;
} sn_stream_info;

typedef struct sn_event_info {
    void *event;
    void *stream;
    UT_hash_handle hh;
} sn_event_info;

static sn_stream_info *sn_streams;
static sn_event_info *sn_events;

void sn_core_stream_destroying(void *stream)
{
    for (int d = 0; d < SN_ARENA_DEVICES; d++) {
        sn_arena *ar = __atomic_load_n(&sn_arena_ready[d], __ATOMIC_ACQUIRE);
        if (ar)
            sn_arena_forget_stream(ar, stream);
    }
}

void sn_core_note_stream(void *stream, int flag)
{
    sn_lock_take(&sn_handles_lock);
    sn_stream_info *s;
    HASH_FIND_PTR(sn_streams, &stream, s);
    if (flag < 0) {
        if (s) {
            HASH_DEL(sn_streams, s);
            free(s);
        }
    } else if (!s && (s = calloc(1, sizeof *s))) {
        s->stream = stream;
        s->nonblocking = flag;
        HASH_ADD_PTR(sn_streams, stream, s);
    }
    sn_lock_give(&sn_handles_lock);
}

void sn_core_note_event(void *event, void *stream)
{
    sn_lock_take(&sn_handles_lock);
    sn_event_info *e;
    HASH_FIND_PTR(sn_events, &event, e);
    if (!e && (e = calloc(1, sizeof *e))) {
        e->event = event;
        HASH_ADD_PTR(sn_events, event, e);
    }
    if (e)
        e->stream = stream;
    sn_lock_give(&sn_handles_lock);
}

static int sn_is_legacy(void *stream)
{
    return stream == NULL || stream == cudaStreamLegacy;
}

/* Whether work on `stream` is complete once the host has synchronised with
 * `synced` (all: the whole device). */
static int sn_covered_locked(void *stream, void *synced, int all)
{
    if (all || stream == synced)
        return 1;
    if (!sn_is_legacy(synced))
        return 0;
    /* The legacy stream waits for every blocking stream. */
    if (sn_is_legacy(stream))
        return 1;
    sn_stream_info *s;
    HASH_FIND_PTR(sn_streams, &stream, s);
    return !(s && s->nonblocking) && stream != cudaStreamPerThread;
}

/* ---- CUDA calls of libsn's own ------------------------------------------------ */

/* A failing call of libsn's own must not leave its error for the framework's
 * cudaGetLastError to find. */
static void sn_quiet(cudaError_t rc)
{
    if (rc != cudaSuccess) {
        sn_real_cudaGetLastError_fn get = SN_REAL(cudaGetLastError);
        if (get)
            get();
    }
}

static cudaEvent_t sn_event_take_locked(sn_device *d)
{
    return d->nspare ? d->spare[--d->nspare] : NULL;
}

static void sn_event_put_locked(sn_device *d, cudaEvent_t e)
{
    if (!e)
        return;
    if (sn_array_room(&d->spare, d->nspare, &d->cap_spare, sizeof *d->spare, 256) != 0)
        return;
    d->spare[d->nspare++] = e;
}

/* A spare event of the device, or a new one. */
static cudaEvent_t sn_event_get(sn_device *d)
{
    sn_lock_take(&d->lock);
    cudaEvent_t e = sn_event_take_locked(d);
    sn_lock_give(&d->lock);
    if (e)
        return e;
    sn_real_cudaEventCreateWithFlags_fn create = SN_REAL(cudaEventCreateWithFlags);
    if (!create)
        return NULL;
    cudaError_t rc = create(&e, cudaEventDefault);
    sn_quiet(rc);
    return rc == cudaSuccess ? e : NULL;
}

/* A non-blocking stream of libsn's own (no lock held; the caller is the one
 * thread setting up the device's time zero). */
static cudaStream_t sn_own_stream_create(void)
{
    sn_real_cudaStreamCreateWithFlags_fn create = SN_REAL(cudaStreamCreateWithFlags);
    cudaStream_t s = NULL;
    if (!create)
        return NULL;
    cudaError_t rc = create(&s, cudaStreamNonBlocking);
    sn_quiet(rc);
    return rc == cudaSuccess ? s : NULL;
}

static int sn_record(cudaEvent_t e, void *stream)
{
    sn_real_cudaEventRecord_fn rec = SN_REAL(cudaEventRecord);
    if (!rec || !e)
        return -1;
    cudaError_t rc = rec(e, (cudaStream_t)stream);
    sn_quiet(rc);
    return rc == cudaSuccess ? 0 : -1;
}

static int sn_elapsed(cudaEvent_t a, cudaEvent_t b, float *ms)
{
    sn_real_cudaEventElapsedTime_fn el = SN_REAL(cudaEventElapsedTime);
    if (!el)
        return -1;
    cudaError_t rc = el(ms, a, b);
    sn_quiet(rc);
    return rc == cudaSuccess ? 0 : -1;
}

/* ---- exit ---------------------------------------------------------------------- */

static void sn_finish(int cuda_usable);

static void sn_finish_at_exit(void)
{
    sn_finish(1);
}

/* Registered after the runtime has done real work, so that it runs before
 * the runtime's own exit handlers tear the device down. */
static void sn_register_exit(void)
{
    static int registered;
    if (!__atomic_load_n(&registered, __ATOMIC_ACQUIRE) && !__atomic_exchange_n(&registered, 1, __ATOMIC_ACQ_REL))
        atexit(sn_finish_at_exit);
}

/* ---- call sites ----------------------------------------------------------------- */

/* libsn's own code, whose frames a call site leaves out (set in
 * sn_core_init, before any other thread gets past initialisation). */
static uintptr_t sn_site_own_lo, sn_site_own_hi;

/* Hash of the return addresses above libsn: identifies where in the
 * framework an allocation was made. unw_backtrace is the fast path (it
 * caches unwind information per thread); under ThreadSanitizer that cache's
 * thread-exit destructor runs after the sanitizer has retired the thread, so
 * TSan builds walk with unw_step instead. */
static uint64_t sn_call_site(void)
{
    /* libsn's own frames (this function, the note, the wrapper) and six of
     * the caller's: deeper frames rarely tell allocations apart and every
     * frame costs an unwind step */
    enum { SN_SITE_FRAMES = 9 };
    int n = 0;
#if defined(__SANITIZE_THREAD__)
    uintptr_t pcs[SN_SITE_FRAMES];
    unw_context_t ctx;
    unw_cursor_t cur;
    if (unw_getcontext(&ctx) != 0 || unw_init_local(&cur, &ctx) != 0)
        return 0;
    while (n < SN_SITE_FRAMES && unw_step(&cur) > 0) {
        unw_word_t pc = 0;
        if (unw_get_reg(&cur, UNW_REG_IP, &pc) != 0)
            break;
        pcs[n++] = (uintptr_t)pc;
    }
#else
    void *pcs[SN_SITE_FRAMES];
    n = unw_backtrace(pcs, SN_SITE_FRAMES);
#endif
    uint64_t h = 0;
    int used = 0;
    uintptr_t own_lo = sn_site_own_lo, own_hi = sn_site_own_hi;
    for (int i = 0; i < n && used < 6; i++) {
        uintptr_t pc = (uintptr_t)pcs[i];
        if (pc - own_lo < own_hi - own_lo)
            continue;
        h = sn_hash_mix(h, (uint64_t)pc);
        used++;
    }
    return h;
}

/* ---- initialisation ------------------------------------------------------------- */

static void sn_on_stale(sn_alloc *a, void *ctx);

void sn_core_init(void)
{
    sn_lock_take(&sn_reg_lock);
    if (!sn_core_ready) {
        sn_reg_init(&sn_reg);
        sn_reg.on_stale = sn_on_stale;
        /* libunwind initialises its globals on first use, unsynchronised
         * (a racy flag and signal mask under its own lock); doing that here,
         * while every other thread waits for initialisation to finish,
         * orders it before any thread's walk. Per-thread caches then keep
         * the walks of different threads apart (libunwind's thread-safe
         * mode). */
        unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
        sn_own_text(&sn_site_own_lo, &sn_site_own_hi);
        (void)sn_call_site();
        sn_core_ready = 1;
    }
    sn_lock_give(&sn_reg_lock);
}

/* ---- allocations ----------------------------------------------------------------- */

/* The tracer forgets an allocation that is gone (registry lock held; takes
 * the device's). */
static void sn_on_stale(sn_alloc *a, void *ctx)
{
    (void)ctx;
    if (a->trace_id == SN_NO_TRACE_ID || a->dev < 0 || a->dev >= SN_MAX_DEVICES)
        return;
    sn_device *d = &sn_devs[a->dev];
    sn_lock_take(&d->lock);
    if (d->trace)
        sn_trace_release(d->trace, a->trace_id);
    sn_lock_give(&d->lock);
}

static int sn_managing(void)
{
    return sn_opt.mode == SN_MODE_MANAGE && sn_core_ready;
}

/* A call on a cuDNN or cuBLAS handle, or a handle's creation, in progress
 * on this thread: the library's allocations inside it belong to the handle
 * (the trace keys them to it) and, in manage mode, stay pinned until the
 * call returns. */
typedef struct sn_lib_traced {
    int dev;
    uint32_t id;
    uint64_t base;
} sn_lib_traced;

typedef struct sn_lib_scope {
    int open;        /* a call on a handle, or a handle's creation, is in progress */
    int active;      /* ... and manage mode pins what the library allocates in it */
    void *handle;    /* NULL while the handle is being created */
    sn_arena *ar;
    int n;
    void *blocks[32];
    /* allocations of a creation, keyed in the trace once the handle is known */
    int ntraced;
    sn_lib_traced traced[32];
} sn_lib_scope;
static __thread sn_lib_scope sn_lib_scope_now __attribute__((tls_model("initial-exec")));

/* Library memory allocated inside a call on a handle, or while one is
 * created (keyed when the creation returns), belongs to that handle. */
static void sn_core_note_lib_alloc_locked(sn_trace *t, uint32_t id, int dev, uint64_t base)
{
    sn_lib_scope *sc = &sn_lib_scope_now;
    if (sc->handle)
        sn_trace_tensor_key(t, id, base, sc->handle);
    else if (sc->ntraced < (int)(sizeof sc->traced / sizeof sc->traced[0]))
        sc->traced[sc->ntraced++] = (sn_lib_traced){dev, id, base};
}

void sn_core_note_alloc(void *p, uint64_t size, int kind, int owner, int dev, sn_arena_alloc *managed)
{
    if (!p || !sn_core_ready)
        return;
    /* The call site tells a recorded iteration's allocations apart for
     * the model; once the learned iteration is followed (the profile
     * complete) nothing asks for it again (the plan binds an iteration's
     * allocations by step and rank), and the walk is most of what an
     * allocation costs libsn. */
    uint64_t site = 0;
    if (kind != SN_KIND_HOST && (owner == SN_OWNER_FRAMEWORK || owner == SN_OWNER_DRIVER) &&
        !(dev >= 0 && dev < SN_MAX_DEVICES && __atomic_load_n(&sn_devs[dev].profiled, __ATOMIC_ACQUIRE)))
        site = sn_call_site();
    sn_register_exit();
    sn_lock_take(&sn_reg_lock);
    sn_alloc *a = sn_reg_add_locked(&sn_reg, (uintptr_t)p, size, kind, owner, dev);
    if (a)
        a->managed = managed;
    if (a && !managed && kind != SN_KIND_HOST && dev >= 0 && dev < SN_MAX_DEVICES && sn_managing()) {
        __atomic_add_fetch(&sn_devs[dev].passed, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&sn_devs[dev].passed_bytes, size, __ATOMIC_RELAXED);
    }
    if (a && kind != SN_KIND_HOST && dev >= 0 && dev < SN_MAX_DEVICES) {
        sn_device *d = &sn_devs[dev];
        sn_lock_take(&d->lock);
        sn_trace *t = sn_trace_of_locked(dev);
        if (t) {
            uint32_t id = sn_trace_alloc(t, (uintptr_t)p, size, kind, owner, site);
            if (id != UINT32_MAX) {
                a->trace_id = id;
                if ((owner == SN_OWNER_CUDNN || owner == SN_OWNER_CUBLAS) && sn_lib_scope_now.open)
                    sn_core_note_lib_alloc_locked(t, id, dev, (uintptr_t)p);
            }
        }
        sn_lock_give(&d->lock);
    }
    sn_lock_give(&sn_reg_lock);
}

/* The record leaves the registry before the real free: once the real free
 * returns, the address may already belong to another thread's new
 * allocation, and a late removal would delete that one's record. */
sn_alloc *sn_core_free_begin(void *p, int kinds)
{
    if (!p || !sn_core_ready)
        return NULL;
    sn_lock_take(&sn_reg_lock);
    sn_alloc *a = sn_reg_exact_locked(&sn_reg, (uintptr_t)p, kinds);
    if (a)
        sn_reg_remove_locked(&sn_reg, a);
    sn_lock_give(&sn_reg_lock);
    return a;
}

void sn_core_free_end(sn_alloc *a, int ok)
{
    if (!a)
        return;
    sn_lock_take(&sn_reg_lock);
    if (ok) {
        sn_on_stale(a, NULL);
        sn_reg_recycle_locked(&sn_reg, a);
    } else {
        /* The free failed, so nobody else can have been given the address:
         * the allocation is still live, as it was. */
        sn_alloc *back = sn_reg_add_locked(&sn_reg, a->base, a->size, a->kind, a->owner, a->dev);
        if (back) {
            back->trace_id = a->trace_id;
            back->managed = a->managed;
        }
        else
            sn_on_stale(a, NULL);
        sn_reg_recycle_locked(&sn_reg, a);
    }
    sn_lock_give(&sn_reg_lock);
}

/* ---- manage mode: allocations ------------------------------------------------------ */

static void sn_core_runtime_nomem(void);

/* The arena's own CUDA calls are libsn's, whichever library the wrapper
 * that led there belongs to: the driver allocations and memory queries the
 * real runtime makes on the arena's behalf must pass straight through (a
 * driver call from inside a cuDNN wrapper would otherwise count as cuDNN's
 * and come back to the arena). */
static int sn_own_work_begin(void)
{
    int lib = sn_thread.lib;
    sn_thread.lib = SN_LIB_NONE;
    return lib;
}

static void sn_own_work_end(int lib)
{
    sn_thread.lib = lib;
}

/* (inline: every call on a handle opens and closes one) */
static inline void sn_lib_scope_open(sn_arena *ar, void *handle)
{
    sn_lib_scope *sc = &sn_lib_scope_now;
    sc->ar = ar;
    sc->open = 1;
    sc->active = ar != NULL;
    sc->handle = handle;
    sc->n = 0;
    sc->ntraced = 0;
}

static __attribute__((noinline)) void sn_lib_scope_unpin(sn_lib_scope *sc, void *handle)
{
    for (int i = 0; i < sc->n; i++)
        sn_arena_scoped_end(sc->ar, sc->blocks[i], handle);
    sc->n = 0;
}

static void sn_lib_scope_key_traced(sn_lib_scope *sc, void *handle);

static inline void sn_lib_scope_close(void *handle)
{
    sn_lib_scope *sc = &sn_lib_scope_now;
    sc->open = 0;
    if (sc->ntraced)
        sn_lib_scope_key_traced(sc, handle);
    if (!sc->active)
        return;
    sc->active = 0;
    if (sc->n)
        sn_lib_scope_unpin(sc, handle);
}

/* The trace's records of what the library allocated while creating
 * handle: the handle's own memory, resident only for calls on it. */
static __attribute__((noinline)) void sn_lib_scope_key_traced(sn_lib_scope *sc, void *handle)
{
    for (int i = 0; handle && i < sc->ntraced; i++) {
        int dev = sc->traced[i].dev;
        sn_device *d = &sn_devs[dev];
        sn_lock_take(&d->lock);
        sn_trace *t = sn_trace_of_locked(dev);
        if (t)
            sn_trace_tensor_key(t, sc->traced[i].id, sc->traced[i].base, handle);
        sn_lock_give(&d->lock);
    }
    sc->ntraced = 0;
}

void sn_core_lib_scope_begin(int dev, void *handle)
{
    sn_lib_scope_open(sn_opt.mode == SN_MODE_MANAGE && sn_core_ready ? sn_arena_peek(dev) : NULL, handle);
}

void sn_core_lib_scope_end(void *handle)
{
    sn_lib_scope_close(handle);
}

static uint64_t sn_round_up_gran(uint64_t v, uint64_t g)
{
    return g ? (v + g - 1) / g * g : v;
}

static void sn_mib(char *out, size_t cap, uint64_t bytes)
{
    snprintf(out, cap, "%.1f MiB", (double)bytes / (1024.0 * 1024.0));
}

int sn_core_alloc(uint64_t size, int kind, int owner, int dev, uintptr_t *addr)
{
    if (!sn_managing() || kind != SN_KIND_DEVICE || !size)
        return SN_CORE_FORWARD;
    sn_arena *ar = sn_arena_of(dev);
    if (!ar)
        return SN_CORE_FORWARD;
    int early = dev >= 0 && dev < SN_MAX_DEVICES && !__atomic_load_n(&sn_devs[dev].learned, __ATOMIC_ACQUIRE);
    sn_arena_alloc *rec = NULL;
    sn_lib_scope *sc = &sn_lib_scope_now;
    if ((owner == SN_OWNER_CUDNN || owner == SN_OWNER_CUBLAS) && sc->open && !sc->ar) {
        /* a handle created before the arena was set up (Caffe creates its
         * cuBLAS handle first of all): the arena exists now */
        sc->ar = ar;
        sc->active = 1;
    }
    int scoped = (owner == SN_OWNER_CUDNN || owner == SN_OWNER_CUBLAS) && sc->active && sc->ar == ar &&
                 sc->n < (int)(sizeof sc->blocks / sizeof sc->blocks[0]);
    int lib = sn_own_work_begin();
    sn_arena_alloc_request rq = {size, owner, early, scoped, scoped ? sc->handle : NULL};
    int rc = sn_arena_alloc_bytes(ar, &rq, addr, &rec);
    sn_own_work_end(lib);
    if (rc == SN_ARENA_OK) {
        if (scoped)
            sc->blocks[sc->n++] = sn_arena_alloc_block(rec);
        sn_core_note_alloc((void *)*addr, size, kind, owner, dev, rec);
        if (owner == SN_OWNER_FRAMEWORK && dev >= 0 && dev < SN_MAX_DEVICES &&
            sn_plan_state_get(&sn_devs[dev].mgr.state) == SN_PLAN_FOLLOWED) {
            sn_lock_take(&sn_devs[dev].lock);
            sn_exec_bind_alloc(&sn_devs[dev].mgr.exec, size, sn_arena_alloc_block(rec));
            sn_lock_give(&sn_devs[dev].lock);
        }
        return SN_CORE_SERVED;
    }
    if (rc == SN_ARENA_PASS)
        return SN_CORE_FORWARD;
    if (owner == SN_OWNER_FRAMEWORK)
        sn_core_runtime_nomem();
    sn_manage_stats st;
    sn_arena_stats(ar, &st);
    char sz[32], bud[32], host[32];
    sn_mib(sz, sizeof sz, size);
    sn_mib(bud, sizeof bud, st.budget);
    sn_mib(host, sizeof host, st.host_limit);
    if (rc == SN_ARENA_NO_VA) {
        /* every size seen keeps its address range for reuse: a program
         * that allocates ever new sizes uses the space up */
        char va[32];
        sn_mib(va, sizeof va, st.va_reserved);
        sn_warn("out of memory: device %d: an allocation of %s needs address space, and the driver reserves no "
                "more (cuMemAddressReserve refused; %s reserved so far for %llu blocks of libsn's)",
                dev, sz, va, (unsigned long long)st.blocks);
        return SN_CORE_NOMEM;
    }
    if (st.pool) {
        sn_warn("out of memory: device %d: an allocation of %s does not fit in libsn's pool (SN_BUDGET %s): "
                "without VMM nothing can leave the device, so a larger budget (or device) is needed",
                dev, sz, bud);
        return SN_CORE_NOMEM;
    }
    if (sn_round_up_gran(size, st.granularity) > st.budget) {
        sn_warn("out of memory: device %d: an allocation of %s is larger than SN_BUDGET (%s): a budget of at "
                "least %s would serve it",
                dev, sz, bud, sz);
        return SN_CORE_NOMEM;
    }
    char held[32];
    sn_mib(held, sizeof held, st.held_now);
    sn_warn("out of memory: device %d: an allocation of %s does not fit: %s allocated already, and everything "
            "allocated must fit SN_BUDGET (%s) plus SN_HOST_LIMIT (%s) of pinned host memory for what leaves "
            "the device; a larger SN_HOST_LIMIT would serve it",
            dev, sz, held, bud, host);
    return SN_CORE_NOMEM;
}

void sn_core_free_served(sn_alloc *a)
{
    int lib = sn_own_work_begin();
    sn_arena_free(a->managed);
    sn_own_work_end(lib);
    a->managed = NULL;
    sn_core_free_end(a, 1);
}

int sn_core_mem_info(int dev, size_t *free_bytes, size_t *total_bytes)
{
    if (!sn_managing())
        return -1;
    sn_arena *ar = sn_arena_of(dev);
    if (!ar)
        return -1;
    sn_arena_mem_info(ar, free_bytes, total_bytes);
    return 0;
}

int sn_core_pointer_kind(const void *p)
{
    if (!p || !sn_core_ready)
        return 0;
    sn_lock_take(&sn_reg_lock);
    sn_alloc *a = sn_reg_find_locked(&sn_reg, (uintptr_t)p);
    int kind = a ? a->kind : 0;
    sn_lock_give(&sn_reg_lock);
    return kind;
}

void sn_core_note_vmm(const sn_vmm_note *n)
{
    switch (n->what) {
    case SN_VMM_CREATE:
    case SN_VMM_RELEASE:
        if (!sn_core_ready)
            return;
        sn_lock_take(&sn_reg_lock);
        if (n->what == SN_VMM_CREATE)
            sn_reg_phys_add_locked(&sn_reg, n->handle, n->size, n->owner, n->dev);
        else
            sn_reg_phys_remove_locked(&sn_reg, n->handle);
        sn_lock_give(&sn_reg_lock);
        return;
    /* Reservations hold no memory; libsn only needs to know they exist
     * when it reserves address space of its own (not in this build). */
    case SN_VMM_RESERVE:
        sn_debug("address range %p + %llu reserved (owner %d)", (void *)n->addr, (unsigned long long)n->size,
                 n->owner);
        return;
    case SN_VMM_RESERVE_FREE:
        sn_debug("address range %p released", (void *)n->addr);
        return;
    }
}

/* Room for one call's resolution: the accesses and arena uses of a call
 * of up to SN_CALL_INLINE_RANGES ranges inline, those of a longer one on
 * the heap in the same proportions (sn_room_free), so that no number of
 * ranges makes a call opaque. Without heap the inline room serves: the
 * resolution is then incomplete and the call opaque, described as more. */
#define SN_ROOM_ACC (SN_CALL_INLINE_RANGES * 2)
#define SN_ROOM_USE (SN_CALL_INLINE_RANGES * 4)
#define SN_ROOM_PEER (SN_CALL_INLINE_RANGES * 2)
typedef struct sn_room {
    sn_trace_access *acc;
    sn_arena_use *use, *peer;
    int cap_acc;
    size_t cap_use, cap_peer;
    void *heap;
    sn_trace_access acc_in[SN_ROOM_ACC];
    sn_arena_use use_in[SN_ROOM_USE];
    sn_arena_use peer_in[SN_ROOM_PEER];
} sn_room;

static __attribute__((noinline)) void sn_room_grow(sn_room *r, size_t nranges)
{
    size_t nacc = nranges * 2, nuse = nranges * 4, npeer = nranges * 2;
    if (nacc > INT_MAX)
        return;
    size_t acc_bytes = (nacc * sizeof *r->acc + _Alignof(sn_arena_use) - 1) / _Alignof(sn_arena_use) *
                       _Alignof(sn_arena_use);
    char *p = malloc(acc_bytes + (nuse + npeer) * sizeof *r->use);
    if (!p)
        return;
    r->heap = p;
    r->acc = (sn_trace_access *)p;
    r->use = (sn_arena_use *)(p + acc_bytes);
    r->peer = r->use + nuse;
    r->cap_acc = (int)nacc;
    r->cap_use = nuse;
    r->cap_peer = npeer;
}

static inline void sn_room_init(sn_room *r, const sn_call *c)
{
    r->acc = r->acc_in;
    r->use = r->use_in;
    r->peer = r->peer_in;
    r->cap_acc = SN_ROOM_ACC;
    r->cap_use = SN_ROOM_USE;
    r->cap_peer = SN_ROOM_PEER;
    r->heap = NULL;
    if (__builtin_expect(c->nranges > SN_CALL_INLINE_RANGES, 0))
        sn_room_grow(r, (size_t)c->nranges);
}

static inline void sn_room_free(sn_room *r)
{
    if (__builtin_expect(r->heap != NULL, 0))
        free(r->heap);
}

/* ---- kernels ---------------------------------------------------------------------- */

/* CUDA passes at most 32764 bytes of parameters to a kernel, so at most
 * that many parameters: a layout is read to its end, however long. */
#define SN_MAX_KPARAMS 32764

typedef struct sn_kernel_layout {
    const void *func;
    int nparams;          /* -1: layout unknown */
    int kind;             /* what its name says it computes (sn_kernel_kind) */
    unsigned char *declared; /* per parameter, SN_DECLARED_IN/OUT from its mangled
                                name, 0 by value; NULL: the name says nothing */
    uint32_t *size;       /* nparams sizes, in order */
    uint32_t *off;        /* ... and offsets in the packed buffer (a driver launch's extra) */
    UT_hash_handle hh;
} sn_kernel_layout;

static sn_kernel_layout *sn_layouts;

/* The kernel's name, NULL when the driver or runtime does not say. A
 * failed name query is cleared from the last-error state like the
 * probe's. */
static const char *sn_kernel_name(const void *func, int driver)
{
    const char *name = NULL;
    if (driver) {
        sn_real_cuFuncGetName_fn get = SN_REAL(cuFuncGetName);
        if (!get || get(&name, (CUfunction)(uintptr_t)func) != CUDA_SUCCESS)
            return NULL;
    } else {
        sn_real_cudaFuncGetName_fn get = SN_REAL(cudaFuncGetName);
        cudaError_t rc = get ? get(&name, func) : cudaErrorNotSupported;
        if (rc != cudaSuccess) {
            sn_quiet(rc);
            return NULL;
        }
    }
    return name;
}

/* What the kernel's mangled name declares of each parameter, when it
 * names as many parameters as the layout has. */
static void sn_kernel_declared(sn_kernel_layout *k, const char *name)
{
    if (k->nparams <= 0 || !name)
        return;
    struct sn_ptype small[64], *sig = k->nparams <= 64 ? small : malloc((size_t)k->nparams * sizeof *sig);
    unsigned char *d = sig ? malloc((size_t)k->nparams) : NULL;
    if (d && sn_mangled_params(name, sig, k->nparams) == k->nparams) {
        for (int i = 0; i < k->nparams; i++)
            d[i] = sig[i].kind == SN_PARAM_IN ? SN_DECLARED_IN : sig[i].kind == SN_PARAM_OUT ? SN_DECLARED_OUT : 0;
        k->declared = d;
        d = NULL;
    }
    free(d);
    if (sig != small)
        free(sig);
}

/* Reads the layout with cudaFuncGetParamInfo; the probe past the last
 * parameter fails, and that failure is cleared from the last-error state.
 * Returns NULL (not cached) when an error the framework has not collected
 * yet is pending: clearing ours would clear theirs too. */
static sn_kernel_layout *sn_kernel_probe(const void *func, int driver)
{
    sn_real_cudaFuncGetParamInfo_fn info = driver ? NULL : SN_REAL(cudaFuncGetParamInfo);
    sn_real_cuFuncGetParamInfo_fn cu_info = driver ? SN_REAL(cuFuncGetParamInfo) : NULL;
    sn_real_cudaPeekAtLastError_fn peek = SN_REAL(cudaPeekAtLastError);
    /* (the driver keeps no last error to disturb) */
    if (!driver && (!peek || peek() != cudaSuccess))
        return NULL;
    sn_kernel_layout *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->func = func;
    k->nparams = -1;
    const char *name = sn_kernel_name(func, driver);
    k->kind = sn_kernel_kind(name);
    if (!info && !cu_info)
        return k;
    int n = 0, cap = 0;
    for (; n < SN_MAX_KPARAMS; n++) {
        size_t off = 0, size = 0;
        int ok = info ? info(func, (size_t)n, &off, &size) == cudaSuccess
                      : cu_info((CUfunction)(uintptr_t)func, (size_t)n, &off, &size) == CUDA_SUCCESS;
        if (!ok) {
            if (info)
                sn_quiet(cudaErrorInvalidValue);
            /* Past the last parameter the probe fails. At index 0 that
             * failure cannot tell a kernel without parameters from one
             * whose layout the runtime does not know (a kernel of a fat
             * binary it has no metadata for), so the layout stays unknown
             * and the launch is opaque: described as more, never less. */
            if (n > 0)
                k->nparams = n;
            else if (sn_mangled_no_params(name))
                k->nparams = 0;
            break;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            uint32_t *grown = realloc(k->size, (size_t)cap * sizeof *grown);
            if (grown)
                k->size = grown;
            uint32_t *grown_off = grown ? realloc(k->off, (size_t)cap * sizeof *grown_off) : NULL;
            if (!grown_off)
                break;  /* (nparams stays unknown: the launch is opaque) */
            k->off = grown_off;
        }
        k->size[n] = (uint32_t)size;
        k->off[n] = (uint32_t)off;
    }
    if (n == SN_MAX_KPARAMS)
        k->nparams = -1;
    sn_kernel_declared(k, name);
    return k;
}

/* Per thread, the layouts of the kernels it launched (layouts are never
 * removed or changed once published, so a pointer stays valid) and the
 * allocations its kernels' argument words were found in, with the
 * registry's generation they hold for: a launch like the ones before
 * takes neither the handle lock nor the registry's. */
#define SN_KCACHE_SLOTS 16
#define SN_WORD_SLOTS 64
typedef struct sn_word_cached {
    uintptr_t word;
    uint64_t gen;            /* 0: empty */
    uintptr_t base;          /* 0: no device allocation holds the word */
    uint64_t size;
    int stored;              /* the allocation holds device addresses (sn_alloc.nstored != 0) */
} sn_word_cached;
static __thread const sn_kernel_layout *sn_kcache[SN_KCACHE_SLOTS] __attribute__((tls_model("initial-exec")));
static __thread sn_word_cached sn_word_cache[SN_WORD_SLOTS] __attribute__((tls_model("initial-exec")));

static inline unsigned sn_ptr_slot(uintptr_t p, unsigned slots)
{
    return (unsigned)(((uint64_t)p * 0x9e3779b97f4a7c15ULL) >> 40) % slots;
}

/* The device allocation holding word v, from this thread's cache while
 * the registry is at generation gen, else looked up under the registry's
 * lock (taken once per launch: *locked). */
static inline __attribute__((always_inline)) sn_word_cached *sn_kernel_word(uintptr_t v, uint64_t gen,
                                                                               int *locked)
{
    sn_word_cached *e = &sn_word_cache[sn_ptr_slot(v, SN_WORD_SLOTS)];
    if (e->word == v && e->gen == gen)
        return e;
    if (!*locked) {
        sn_lock_take(&sn_reg_lock);
        *locked = 1;
    }
    sn_alloc *a = sn_reg_find_locked(&sn_reg, v);
    int dev = a && (a->kind & SN_KIND_ANY_DEVICE);
    e->word = v;
    e->gen = sn_reg.gen;
    e->base = dev ? a->base : 0;
    e->size = dev ? a->size : 0;
    e->stored = dev && a->nstored != 0;
    return e;
}

/* A kernel given memory that holds device addresses may reach what they
 * point to: those allocations too, with mode (the registry's lock is
 * held: *locked). Returns -1, having added nothing, when that memory's
 * addresses are not known (too many to keep, or none copied there from
 * the host). */
static int sn_stored_targets(sn_call *c, uintptr_t base, unsigned mode, uint64_t gen, int *locked)
{
    if (!*locked) {
        sn_lock_take(&sn_reg_lock);
        *locked = 1;
    }
    const sn_alloc *holder = sn_reg_find_locked(&sn_reg, base);
    if (!holder || holder->nstored <= 0)
        return -1;
    int n = holder->nstored;
    for (int i = 0; i < n; i++) {
        const sn_word_cached *t = sn_kernel_word(holder->stored[i], gen, locked);
        int dup = !t->base;
        for (int r = 0; r < c->nranges && !dup; r++) {
            sn_range *g = sn_call_range_at(c, r);
            if (g->addr == t->base) {
                g->mode |= mode;
                dup = 1;
            }
        }
        if (!dup)
            sn_call_range(c, (void *)t->base, t->size, mode);
    }
    return 0;
}

static __attribute__((noinline)) void sn_kernel_stored(sn_call *c, uintptr_t base, uint64_t gen, int *locked)
{
    if (sn_stored_targets(c, base, SN_READ | SN_WRITE, gen, locked) != 0)
        c->flags |= SN_CALL_OPAQUE;
}

int sn_core_describe_stored(sn_call *c, const void *array, unsigned mode)
{
    if (!sn_core_ready)
        return -1;
    int locked = 0;
    int rc = sn_stored_targets(c, (uintptr_t)array, mode, sn_reg_gen(&sn_reg), &locked);
    if (locked)
        sn_lock_give(&sn_reg_lock);
    return rc;
}

/* Host words about to be copied into dst that are addresses inside device
 * allocations: dst's allocation then holds them, and a kernel given it may
 * reach those allocations (sn_kernel_stored). A copy over the whole
 * allocation replaces what was known; a part adds to it. Arrays of
 * pointers are dense with them, data never: a large copy is read on only
 * when one of its first words is such an address, so copying a tensor
 * costs a few dozen lookups, not one per word (docs/libsn.md, "The
 * floor": a pointer first met past them is not seen). */
#define SN_STORED_PROBE_WORDS 64
static int sn_could_be_address(uintptr_t v)
{
    return v >= 65536 && v < ((uintptr_t)1 << 47);
}

/* Adds a's base to d's addresses (not there yet); -1 without memory. */
static int sn_stored_add_locked(sn_alloc *d, uintptr_t base)
{
    for (int k = 0; k < d->nstored; k++)
        if (d->stored[k] == base)
            return 0;
    /* (capacity: 8, then doubled each time it is full) */
    if (!d->stored || (d->nstored >= 8 && !(d->nstored & (d->nstored - 1)))) {
        int cap = d->stored ? 2 * d->nstored : 8;
        uintptr_t *grown = realloc(d->stored, (size_t)cap * sizeof *grown);
        if (!grown)
            return -1;
        d->stored = grown;
    }
    d->stored[d->nstored++] = base;
    return 0;
}

void sn_core_note_stored(const void *dst, const void *host, uint64_t bytes)
{
    if (!sn_core_ready || !host || bytes < sizeof(uintptr_t))
        return;
    const unsigned char *h = host;
    size_t nw = bytes / sizeof(uintptr_t), first = nw;
    for (size_t i = 0; i < nw && first == nw; i++) {
        uintptr_t v;
        memcpy(&v, h + i * sizeof v, sizeof v);
        if (sn_could_be_address(v))
            first = i;
        else if (i >= SN_STORED_PROBE_WORDS)
            break;
    }
    /* (data: nothing to learn, and what dst held is kept: described as
     * more, never less) */
    if (first == nw)
        return;
    sn_lock_take(&sn_reg_lock);
    sn_alloc *d = sn_reg_find_locked(&sn_reg, (uintptr_t)dst);
    if (!d || !(d->kind & SN_KIND_ANY_DEVICE) || d->nstored < 0) {
        sn_lock_give(&sn_reg_lock);
        return;
    }
    int before = d->nstored, found = 0;
    if ((uintptr_t)dst == d->base && bytes >= d->size && d->nstored > 0)
        d->nstored = 0; /* all of it overwritten: what it held is gone */
    for (size_t i = first; i < nw; i++) {
        if (!found && i - first >= SN_STORED_PROBE_WORDS)
            break; /* data, not an array of addresses */
        uintptr_t v;
        memcpy(&v, h + i * sizeof v, sizeof v);
        const sn_alloc *a = sn_could_be_address(v) ? sn_reg_find_locked(&sn_reg, v) : NULL;
        if (!a || !(a->kind & SN_KIND_ANY_DEVICE))
            continue;
        found = 1;
        if (sn_stored_add_locked(d, a->base) != 0) {
            /* out of memory: what it holds is unknown from now on, and
             * a kernel given it is opaque */
            free(d->stored);
            d->stored = NULL;
            d->nstored = -1;
            break;
        }
    }
    if (d->nstored != before)
        sn_reg_touch_locked(&sn_reg);
    sn_lock_give(&sn_reg_lock);
}

/* The layout of func's parameters, from the thread's cache, the shared
 * table or a probe (the runtime's or, for a CUfunction, the driver's); NULL
 * when it cannot be had now. */
static inline __attribute__((always_inline)) const sn_kernel_layout *sn_kernel_layout_of(const void *func,
                                                                                         int driver)
{
    const sn_kernel_layout **slot = &sn_kcache[sn_ptr_slot((uintptr_t)func, SN_KCACHE_SLOTS)];
    const sn_kernel_layout *k = *slot;
    if (!k || k->func != func) {
        sn_lock_take(&sn_handles_lock);
        sn_kernel_layout *found;
        HASH_FIND_PTR(sn_layouts, &func, found);
        sn_lock_give(&sn_handles_lock);
        k = found;
    }
    if (!k) {
        sn_kernel_layout *fresh = sn_kernel_probe(func, driver);
        if (!fresh)
            return NULL;
        sn_lock_take(&sn_handles_lock);
        sn_kernel_layout *other;
        HASH_FIND_PTR(sn_layouts, &func, other);
        if (other) {
            free(fresh->size);
            free(fresh->off);
            free(fresh);
            k = other;
        } else {
            HASH_ADD_PTR(sn_layouts, func, fresh);
            k = fresh;
        }
        sn_lock_give(&sn_handles_lock);
    }
    *slot = k;
    return k;
}

/* Every aligned pointer-sized word of every argument that points into a
 * known device allocation: that whole allocation, read and written. */
static inline __attribute__((always_inline)) void sn_kernel_args(sn_call *c, const sn_kernel_layout *k,
                                                                 void **args)
{
    c->algo = k->kind;
    uint64_t gen = sn_reg_gen(&sn_reg);
    int locked = 0;
    for (int i = 0; i < k->nparams; i++) {
        const unsigned char *arg = args[i];
        if (!arg)
            continue;
        c->params = sn_hash_mix(c->params, k->size[i]);
        unsigned mode = SN_READ | SN_WRITE | (k->declared ? k->declared[i] : 0u);
        for (uint32_t w = 0; w + sizeof(uintptr_t) <= k->size[i]; w += sizeof(uintptr_t)) {
            uintptr_t v;
            memcpy(&v, arg + w, sizeof v);
            const sn_word_cached *a = v ? sn_kernel_word(v, gen, &locked) : NULL;
            if (a && a->base) {
                int dup = 0;
                for (int r = 0; r < c->nranges && !dup; r++) {
                    sn_range *g = sn_call_range_at(c, r);
                    if (g->addr == a->base) {
                        g->mode |= mode;
                        dup = 1;
                    }
                }
                if (!dup)
                    sn_call_range(c, (void *)a->base, a->size, mode);
                if (__builtin_expect(a->stored, 0))
                    sn_kernel_stored(c, a->base, gen, &locked);
            }
        }
    }
    if (locked)
        sn_lock_give(&sn_reg_lock);
}

void sn_core_describe_kernel(sn_call *c, const void *func, void **args)
{
    const sn_kernel_layout *k = sn_kernel_layout_of(func, 0);
    if (!k || k->nparams < 0 || (!args && k->nparams > 0)) {
        c->flags |= SN_CALL_OPAQUE;
        return;
    }
    sn_kernel_args(c, k, args);
}

void sn_core_describe_cu_kernel(sn_call *c, void *f, void **params, void **extra)
{
    const sn_kernel_layout *k = sn_kernel_layout_of(f, 1);
    if (!k || k->nparams < 0) {
        c->flags |= SN_CALL_OPAQUE;
        return;
    }
    if (params || !k->nparams) {
        sn_kernel_args(c, k, params);
        return;
    }
    /* the arguments in one buffer (CU_LAUNCH_PARAM_BUFFER_POINTER), at
     * the layout's offsets */
    const unsigned char *buf = NULL;
    size_t size = 0;
    for (int i = 0; extra && i < 16 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            buf = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1])
            size = *(const size_t *)extra[i + 1];
    }
    void *small[64], **args = k->nparams <= 64 ? small : malloc((size_t)k->nparams * sizeof *args);
    int ok = buf && args;
    for (int i = 0; ok && i < k->nparams; i++) {
        ok = (uint64_t)k->off[i] + k->size[i] <= size;
        args[i] = (void *)(buf + k->off[i]);
    }
    if (ok)
        sn_kernel_args(c, k, args);
    else
        c->flags |= SN_CALL_OPAQUE;
    if (args != small)
        free(args);
}

/* ---- calls -------------------------------------------------------------------------- */

static int sn_is_transfer(int op)
{
    return op == SN_OP_MEMCPY_H2D || op == SN_OP_MEMCPY_D2H;
}

static void sn_profile_reset_locked(sn_device *d)
{
    free(d->step_sig);
    d->step_sig = NULL;
    d->nsig = d->cap_sig = d->next_check = 0;
}

/* Records a step's signature; every time their number doubles (learning
 * anew: more often), looks for the iteration. Once a training iteration
 * (one with backward steps) has repeated SN_PROFILE_ITERS + 1 times, the
 * profile is complete: steps are no longer timed (the per-step times are
 * means over the profiled iterations) and the log stops growing, the trace
 * following the learned iteration with running totals instead. */
static void sn_profile_step_locked(sn_device *d, sn_trace *tr, uint64_t sig)
{
    if (d->profiled)
        return;
    if (sn_array_room(&d->step_sig, d->nsig, &d->cap_sig, sizeof *d->step_sig, 1024) != 0)
        return;
    d->step_sig[d->nsig++] = sig;
    if (!d->next_check)
        d->next_check = 64;
    if (d->nsig < d->next_check)
        return;
    /* Learning anew, demand residency serves every call meanwhile: the
     * sooner the better, so the log is looked at every old period's worth
     * of steps (a new batch keeps the number of steps), then every eighth
     * more as it grows long. At the start, every time it doubles. */
    if (tr->relearning) {
        size_t step = tr->cursor.period > d->nsig / 8 ? tr->cursor.period : d->nsig / 8;
        d->next_check = d->nsig + (step > 64 ? step : 64);
    } else {
        d->next_check *= 2;
    }
    sn_period per;
    size_t want = (size_t)sn_opt.profile_iters + 1;
    sn_period_find(d->step_sig, d->nsig, want, 64, &per);
    if (!per.found || (per.end - per.start) / per.period < want)
        return;
    if (!sn_trace_profile_ready(tr, d->step_sig, d->nsig, &per))
        return;
    int again = tr->relearning;
    if (sn_model_follow(tr) != 0) {
        /* profiling goes on: the next look (twice as many steps) sees the
         * log end at another phase of the iteration */
        sn_info("device %d: an iteration of %zu steps was seen but could not be placed in the log; "
                "profiling goes on",
                tr->dev, per.period);
        return;
    }
    __atomic_store_n(&d->profiled, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&d->learned, 1, __ATOMIC_RELEASE);
    sn_info("device %d: iteration of %zu steps seen %zu times; profile complete%s", tr->dev, per.period,
            (per.end - per.start) / per.period, again ? " (learned anew)" : "");
    if (sn_opt.mode == SN_MODE_MANAGE && sn_opt.policy != SN_POLICY_LRU) {
        sn_manage_want_locked(&d->mgr);
    }
    /* manage mode learns the iteration anew when the run leaves it for
     * good (tracer/sn_trace.h) */
    if (sn_opt.mode == SN_MODE_MANAGE)
        tr->relearn_iters = (uint64_t)sn_opt.relearn;
    sn_profile_reset_locked(d);
}

/* The trace changed state at the latest call (sn_trace_call_add): a
 * re-learning began (profile again: steps timed and their signatures
 * kept; the plan set aside, demand residency meanwhile) or was given up
 * (the learned iteration, and its plan, followed again). Step timings
 * still pending for calls the trace dropped are forgotten. */
static void sn_relearn_events_locked(sn_device *d, sn_trace *tr)
{
    unsigned ev = tr->events;
    tr->events = 0;
    if (ev & SN_TRACE_EV_RELEARN) {
        sn_profile_reset_locked(d);
        __atomic_store_n(&d->profiled, 0, __ATOMIC_RELEASE);
        sn_plan_aside(&d->mgr.state);
    }
    if ((ev & SN_TRACE_EV_RETURNED) && !tr->relearning) {
        sn_profile_reset_locked(d);
        size_t keep = 0;
        for (size_t i = 0; i < d->npending; i++) {
            if (d->pending[i].index < (int64_t)tr->ncalls) {
                d->pending[keep++] = d->pending[i];
            } else {
                sn_event_put_locked(d, d->pending[i].start);
                sn_event_put_locked(d, d->pending[i].stop);
            }
        }
        d->npending = keep;
        __atomic_store_n(&d->profiled, 1, __ATOMIC_RELEASE);
        sn_plan_resume(&d->mgr.state);
    }
}

/* Whether work issued to stream now is captured into a graph rather than
 * run (CUDA graphs' stream capture). Such a call executes later, inside
 * cudaGraphLaunch; libsn must not record events into it (they would
 * become nodes of the program's graph) nor log it as a step that ran.
 * Unknown counts as captured: the runtime cannot answer while the program
 * has an error pending (asking would overwrite the error it has not
 * collected yet), or answers with an error when an implicit capture rule
 * applies. */
enum { SN_CAPTURE_NO, SN_CAPTURE_YES, SN_CAPTURE_UNKNOWN };
static int sn_stream_capturing(void *stream)
{
    void *ev;
    if (sn_capture_active() && sn_capture_event(stream, &ev))
        return SN_CAPTURE_YES;
    sn_real_cudaStreamIsCapturing_fn query = SN_REAL(cudaStreamIsCapturing);
    sn_real_cudaPeekAtLastError_fn peek = SN_REAL(cudaPeekAtLastError);
    if (!query) {
        /* a program of the driver API alone: the driver answers, and
         * keeps no last error to disturb */
        sn_real_cuStreamIsCapturing_fn cu_query = SN_REAL(cuStreamIsCapturing);
        CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
        if (!cu_query)
            return SN_CAPTURE_NO;
        if (cu_query((CUstream)stream, &st) != CUDA_SUCCESS)
            return SN_CAPTURE_UNKNOWN;
        return st != CU_STREAM_CAPTURE_STATUS_NONE ? SN_CAPTURE_YES : SN_CAPTURE_NO;
    }
    if (!peek || peek() != cudaSuccess)
        return SN_CAPTURE_UNKNOWN;
    enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    cudaError_t rc = query((cudaStream_t)stream, &status);
    sn_quiet(rc);
    if (rc != cudaSuccess)
        return SN_CAPTURE_UNKNOWN;
    return status != cudaStreamCaptureStatusNone ? SN_CAPTURE_YES : SN_CAPTURE_NO;
}

/* ---- CUDA graphs ---------------------------------------------------------------------- */

/* Capture start events are given back a while after their capture ends:
 * a fence may have read one from the table and not yet waited on it. */
#define SN_RETIRED_EVENTS 64
static void *sn_retired_events[SN_RETIRED_EVENTS];
static unsigned sn_retired_next;

static void sn_capture_event_retire(void *ev)
{
    if (!ev)
        return;
    unsigned i = __atomic_fetch_add(&sn_retired_next, 1, __ATOMIC_RELAXED) % SN_RETIRED_EVENTS;
    void *old = __atomic_exchange_n(&sn_retired_events[i], ev, __ATOMIC_ACQ_REL);
    if (old) {
        int lib = sn_own_work_begin();
        sn_quiet(SN_REAL(cudaEventDestroy)((cudaEvent_t)old));
        sn_own_work_end(lib);
    }
}

void *sn_core_capture_begin(void *stream)
{
    if (!sn_core_ready || !sn_managing())
        return NULL;
    cudaEvent_t ev = NULL;
    int lib = sn_own_work_begin();
    if (SN_REAL(cudaEventCreateWithFlags)(&ev, cudaEventDisableTiming) != cudaSuccess) {
        sn_quiet(cudaErrorUnknown);
        ev = NULL;
    } else if (SN_REAL(cudaEventRecord)(ev, (cudaStream_t)stream) != cudaSuccess) {
        sn_quiet(cudaErrorUnknown);
        SN_REAL(cudaEventDestroy)(ev);
        ev = NULL;
    }
    sn_own_work_end(lib);
    return ev;
}

static size_t sn_graph_nodes(void *graph)
{
    size_t n = 0;
    sn_real_cudaGraphGetNodes_fn get = SN_REAL(cudaGraphGetNodes);
    if (!get || get((cudaGraph_t)graph, NULL, &n) != cudaSuccess) {
        sn_quiet(cudaErrorUnknown);
        return (size_t)-1;
    }
    return n;
}

void sn_core_note_graph(int what, void *a, void *b, int ok)
{
    switch (what) {
    case SN_GRAPH_BEGUN:
    case SN_GRAPH_BEGUN_INTO:
        if (!ok) {
            sn_capture_event_retire(b);
            return;
        }
        sn_capture_begun(a, b);
        sn_graphs_capture_begun(a);
        if (what == SN_GRAPH_BEGUN_INTO)
            sn_graphs_mark_incomplete(a);
        return;
    case SN_GRAPH_ENDED:
        sn_capture_event_retire(sn_capture_ended(a));
        sn_graphs_capture_ended(a, ok ? b : NULL, ok ? sn_graph_nodes(b) : 0);
        return;
    case SN_GRAPH_INSTANTIATED:
        if (ok)
            sn_graphs_instantiated(a, b, sn_graph_nodes(a));
        return;
    case SN_GRAPH_CHANGED:
        sn_graphs_forget(a);
        return;
    case SN_GRAPH_NODE_CHANGED:
        sn_graphs_node_changed();
        return;
    }
}

int sn_core_describe_graph(sn_call *c, void *exec)
{
    return sn_graphs_describe(c, exec);
}

static const char *const sn_op_names[] = {
#define SN_OP(id, name, phase, layer) name,
#include "common/sn_ops.def"
#undef SN_OP
};

/* A failing runtime call leaves its error as the runtime's last error; a
 * call libsn refuses must too, or a program that checks
 * cudaGetLastError after a kernel launch would go on as if it ran. The
 * real allocator refusing an impossible size sets exactly that error. */
static void sn_core_runtime_nomem(void)
{
    sn_real_cudaMalloc_fn m = SN_REAL(cudaMalloc);
    void *p = NULL;
    if (m)
        m(&p, ~(size_t)0 >> 2);
}

/* Manage mode's half of a call: every managed allocation it may touch
 * resident and current before it is forwarded (all of them for a call
 * libsn cannot see through), with the handle's own memory for a cuDNN or
 * cuBLAS call. The blocks were found with the tracer's accesses, under the
 * registry's lock (blocks outlive allocations, so they stay valid); the
 * arena works with no core lock held. */
/* The memory a call touches on another device (a peer copy): made resident
 * on that device's arena with that device current. The call's stream is on
 * the calling device and cannot wait on the other arena's events, so the
 * host waits for its copies instead, and at the end of the call for the
 * call itself before the blocks may leave (sn_core_call_end). Rare, and
 * peer copies are large: the waits cost little next to them. */
static int sn_core_make_peer_resident(sn_call *c, sn_step_token *t, const sn_access_uses *u)
{
    sn_arena *par = sn_arena_of(u->peer_dev);
    t->peer_need = 0;
    if (!par)
        return 0;
    if (u->more_devices)
        sn_warn_once("device %d: a call touches managed memory on more than two devices; only two are made "
                     "resident", c->dev);
    int lib = sn_own_work_begin();
    int cur = sn_current_device();
    int switched = cur != u->peer_dev && SN_REAL(cudaSetDevice)(u->peer_dev) == cudaSuccess;
    sn_arena_request rq = {.uses = u->peer, .nuses = u->peer_all ? 0 : u->npeer, .all = u->peer_all, .pos = -1};
    int rc = sn_arena_acquire(par, &rq, &t->peer_held, &t->peer_need);
    if (rc == SN_ARENA_OK)
        sn_arena_wait_copies(par);
    else
        t->peer_held.ar = NULL;
    if (switched)
        sn_quiet(SN_REAL(cudaSetDevice)(cur));
    sn_own_work_end(lib);
    return rc == SN_ARENA_OK ? 0 : -1;
}

static int sn_core_nomem(const sn_call *c, sn_arena *ar, uint64_t need, int all);

/* What sn_core_make_resident returns, with quiet, when the stream's
 * scratch asked for is not at hand (nothing was made resident). */
#define SN_CORE_NO_SCRATCH (-1)

static int sn_core_make_resident(sn_call *c, sn_step_token *t, const sn_access_uses *u, int64_t pos,
                                 uint64_t scratch, int quiet)
{
    sn_arena *ar = sn_arena_of(c->dev);
    if (!ar)
        return 0;
    size_t n = u->all ? 0 : u->n;
    int all = u->all;
    const sn_arena_use *uses = u->use;
    uint64_t need = 0;
    int rc = SN_ARENA_OK;
    void *lib_mem = c->lib_memory ? c->lib_handle : NULL;
    if (n || all || lib_mem || scratch) {
        int lib = sn_own_work_begin();
        sn_arena_request rq = {uses, n, all, lib_mem, scratch, c->stream, pos};
        rc = sn_arena_acquire(ar, &rq, &t->held, &need);
        sn_own_work_end(lib);
        if (rc != SN_ARENA_OK)
            t->held.ar = NULL;
        if (rc == SN_ARENA_NO_SCRATCH)
            return SN_CORE_NO_SCRATCH;
    } else {
        sn_arena_note_stream(ar, c->stream);
    }
    if (rc == SN_ARENA_OK && u->peer_dev >= 0 && (u->npeer || u->peer_all)) {
        if (sn_core_make_peer_resident(c, t, u) == 0)
            return 0;
        if (t->held.ar)
            sn_arena_release(&t->held);
        ar = sn_arena_of(u->peer_dev);
        rc = SN_ARENA_NOMEM;
        need = t->peer_need;
    }
    if (rc == SN_ARENA_OK)
        return 0;
    if (quiet)
        return SN_CORE_NOMEM;
    return sn_core_nomem(c, ar, need, all);
}

/* A call that cannot be made resident: says why, as a real call out of
 * memory fails. */
static __attribute__((noinline, cold)) int sn_core_nomem(const sn_call *c, sn_arena *ar, uint64_t need, int all)
{
    sn_manage_stats st;
    sn_arena_stats(ar, &st);
    char ws[32], bud[32];
    sn_mib(ws, sizeof ws, need);
    sn_mib(bud, sizeof bud, st.budget);
    const char *what = c->op >= 0 && c->op < SN_OP_COUNT ? sn_op_names[c->op] : "a call";
    if (need && need <= st.budget && st.host_peak + need >= st.host_limit) {
        /* it would fit: what had to leave to make room had nowhere to go */
        char lim[32], used[32];
        sn_mib(lim, sizeof lim, st.host_limit);
        sn_mib(used, sizeof used, st.host_peak);
        sn_warn("out of memory: device %d: %s needs %s resident at once, which fits SN_BUDGET (%s), but making "
                "room needs pinned host memory for what leaves and SN_HOST_LIMIT (%s) is used up (%s at most); "
                "a larger SN_HOST_LIMIT (or SN_BUDGET) would run it",
                c->dev, what, ws, bud, lim, used);
        if (sn_hook_lib(c->hook) == SN_LIB_CUDART)
            sn_core_runtime_nomem();
        return SN_CORE_NOMEM;
    }
    sn_warn("out of memory: device %d: %s%s needs %s resident at once (the memory it touches and the "
            "libraries' own), more than SN_BUDGET (%s) can hold; SN_BUDGET=%lluM or more would run it",
            c->dev, what, all ? " (which libsn cannot see through, so it needs everything)" : "", ws, bud,
            (unsigned long long)((need + st.granularity + (1u << 20) - 1) >> 20));
    if (sn_hook_lib(c->hook) == SN_LIB_CUDART)
        sn_core_runtime_nomem();
    return SN_CORE_NOMEM;
}

/* A convolution the plan runs with another algorithm than the
 * framework's, or with a workspace libsn supplies (SN_WORKSPACE auto or
 * min): the token says which algorithm, and with whose workspace. An
 * algorithm that needs no more than the framework's buffer runs in it,
 * unless the plan supplies every workspace of the step; otherwise libsn's
 * scratch (or none, for an algorithm that needs none) is made resident
 * with the call's other memory in place of the framework's buffer, which
 * the call then does not touch. When the call cannot fit that way, it runs
 * as the framework asked. Returns what make_resident returns. */
static int sn_core_conv_resident(sn_device *d, sn_call *c, sn_step_token *t, const sn_access_uses *u, int64_t pos,
                                 const sn_plan_due *due)
{
    const int algo = due->conv_choice.algo, supply = due->conv_choice.supply;
    const uint64_t ws = due->conv_choice.ws;
    int changed = algo != c->algo;
    t->conv_pos = pos;
    t->conv.ws_set = 0;
    if (!supply && ws <= c->workspace) {
        t->conv.algo = algo;
        sn_exec_conv_note(&d->mgr.exec, 1, changed, 0);
        return sn_core_make_resident(c, t, u, pos, 0, 0);
    }
    sn_arena *ar = sn_arena_of(c->dev);
    if (ar && !u->all) {
        /* the call's uses without the framework's workspace: those at the
         * tail are cut off (the usual order), unless another use shares
         * their block; otherwise the rest is copied */
        sn_arena_use use_in[SN_ROOM_USE];
        sn_arena_use *use = u->n <= SN_ROOM_USE ? use_in : malloc(u->n * sizeof *use);
        if (!use) {
            sn_exec_conv_note(&d->mgr.exec, 0, changed, 0);
            return sn_core_make_resident(c, t, u, pos, 0, 0);
        }
        sn_access_uses v = *u;
        int tail = u->ws_lo == u->ws_hi || u->ws_hi == u->n;
        for (size_t i = u->ws_lo; i < u->ws_hi && tail; i++)
            for (size_t j = 0; j < u->ws_lo && tail; j++)
                tail = u->use[j].block != u->use[i].block;
        if (tail) {
            v.n = u->ws_lo == u->ws_hi ? u->n : u->ws_lo;
        } else {
            v.use = use;
            v.n = 0;
            for (size_t i = 0; i < u->n; i++) {
                int keep = i < u->ws_lo || i >= u->ws_hi;
                for (size_t j = 0; j < u->n && !keep; j++)
                    keep = (j < u->ws_lo || j >= u->ws_hi) && u->use[j].block == u->use[i].block;
                if (keep)
                    use[v.n++] = u->use[i];
            }
        }
        /* the stream's scratch is looked up in the arena's one hold; the
         * first time (or when it must grow) it is made, and asked again */
        int rc = sn_core_make_resident(c, t, &v, pos, ws, 1);
        if (rc == SN_CORE_NO_SCRATCH) {
            uintptr_t addr = 0;
            int lib = sn_own_work_begin();
            void *blk = sn_arena_scratch(ar, c->stream, ws, 0, &addr);
            sn_own_work_end(lib);
            if (blk)
                rc = sn_core_make_resident(c, t, &v, pos, ws, 1);
        }
        if (use != use_in)
            free(use);
        if (rc == 0) {
            t->conv.algo = algo;
            t->conv.ws_set = 1;
            t->conv.ws = ws ? (void *)t->held.scratch_va : NULL;
            t->conv.ws_bytes = ws;
            sn_exec_conv_note(&d->mgr.exec, 1, changed, ws != 0);
            return 0;
        }
    }
    sn_exec_conv_note(&d->mgr.exec, 0, changed, 0);
    return sn_core_make_resident(c, t, u, pos, 0, 0);
}

/* The plan's algorithm failed where the framework's would run (a call
 * the search did not foresee): the call's own memory, its workspace
 * included, is made resident instead and the plan keeps the framework's
 * algorithm for that step from now on. Returns 0 when the call may be
 * forwarded again as the framework made it. */
static int sn_core_conv_fallback(sn_call *c, sn_step_token *t)
{
    if (t->conv.algo < 0 || !sn_managing() || c->dev < 0 || c->dev >= SN_MAX_DEVICES)
        return -1;
    sn_device *d = &sn_devs[c->dev];
    sn_warn_once("device %d: a convolution failed with the algorithm the plan chose for it; it runs the "
                 "framework's from now on", c->dev);
    sn_lock_take(&d->lock);
    sn_exec_conv_failed(&d->mgr.exec, t->conv_pos);
    sn_lock_give(&d->lock);
    t->conv.algo = -1;
    if (!t->conv.ws_set)
        return 0; /* its memory is resident: the framework's workspace was used */
    t->conv.ws_set = 0;
    t->conv.ws = NULL;
    if (t->held.ar)
        sn_arena_release(&t->held);
    sn_room room;
    sn_room_init(&room, c);
    sn_access_uses uses = {room.use, room.cap_use, 0, (c->flags & SN_CALL_OPAQUE) != 0, -1, 0, 0,
                           room.peer, room.cap_peer, 0, 0, 0};
    sn_lock_take(&sn_reg_lock);
    sn_access_resolve_locked(&sn_reg, c, room.acc, room.cap_acc, &uses);
    sn_lock_give(&sn_reg_lock);
    int rc = sn_core_make_resident(c, t, &uses, t->conv_pos, 0, 0) == 0 ? 0 : -1;
    sn_room_free(&room);
    return rc;
}

int sn_core_search_begin(int dev, void *stream, uint64_t bytes, uintptr_t *addr, sn_arena_ticket *t)
{
    t->ar = NULL;
    *addr = 0;
    sn_arena *ar = sn_managing() ? sn_arena_peek(dev) : NULL;
    if (!ar)
        return -1;
    int lib = sn_own_work_begin();
    void *blk = sn_arena_scratch(ar, stream, bytes, 1, addr);
    uint64_t need = 0;
    sn_arena_use use = {blk, SN_OVERWRITE, 0, UINT64_MAX};
    sn_arena_request rq = {.uses = &use, .nuses = 1, .stream = stream, .pos = -1};
    int rc = blk ? sn_arena_acquire(ar, &rq, t, &need) : SN_ARENA_NOMEM;
    if (rc != SN_ARENA_OK) {
        t->ar = NULL;
        if (blk)
            sn_arena_scratch_drop(ar, stream);
        *addr = 0;
    }
    sn_own_work_end(lib);
    return rc == SN_ARENA_OK ? 0 : -1;
}

uint64_t sn_core_search_room(int dev)
{
    sn_arena *ar = sn_managing() ? sn_arena_peek(dev) : NULL;
    /* auto's searches may evict: its gathered plans map the workspace
     * per stretch (sn_arena_scratch_fit). The seed policies' plans are
     * not gathered, and the scratch their algorithms take stays mapped at
     * its largest, which the timeline does not see: a search within the
     * room free now offers them the algorithms they ran before. */
    return ar ? sn_arena_room(ar, sn_opt.policy == SN_POLICY_AUTO) : 0;
}

void sn_core_search_end(int dev, void *stream, sn_arena_ticket *t)
{
    sn_arena *ar = sn_arena_peek(dev);
    if (!ar || !t->ar)
        return;
    int lib = sn_own_work_begin();
    sn_arena_release(t);
    sn_arena_scratch_drop(ar, stream);
    sn_own_work_end(lib);
}

void sn_core_conv_measured(int dev, uint64_t conf, const sn_trace_algo *a, int n)
{
    if (!sn_core_ready || dev < 0 || dev >= SN_MAX_DEVICES)
        return;
    sn_device *d = &sn_devs[dev];
    sn_lock_take(&d->lock);
    if (d->trace)
        sn_trace_algos_put(d->trace, conf, a, n);
    sn_manage_searched_locked(&d->mgr, n);
    sn_lock_give(&d->lock);
}

static void sn_harvest(int dev, void *stream, int all);

/* ---- plans: made off the framework's thread ---------------------------------------- */

static void sn_harvest(int dev, void *stream, int all);
static void sn_core_plan_install(int dev);

/* The managed allocations of device dev the plan may bind to, by trace
 * id (never NULL but when out of memory). The caller holds the registry's
 * lock. */
static sn_exec_known *sn_core_known_locked(int dev, size_t *n)
{
    sn_exec_known *known = malloc((sn_reg.count + 1) * sizeof *known);
    *n = 0;
    for (size_t i = 0; known && i < sn_reg.count; i++) {
        const sn_alloc *a = sn_reg.sorted[i];
        if (a->managed && a->dev == dev && a->trace_id != SN_NO_TRACE_ID)
            known[(*n)++] = (sn_exec_known){a->trace_id, sn_arena_alloc_block(a->managed)};
    }
    return known;
}

/* The iteration is learned (state MAKING, claimed by this thread): the
 * plan of SN_POLICY for it, under the arena's budget less a twentieth
 * (blocks are whole granules, the plan counts bytes). The step times of
 * the profile are read first (the host waits for the device once), then
 * the manager takes the models under the registry's and the device's
 * locks and hands them to libsn's planning thread; the framework goes on
 * under demand residency until a later call installs the plan
 * (SN_PLAN_WAIT=1: made here, installed at once). */
static void sn_core_plan_claim(int dev)
{
    sn_device *d = &sn_devs[dev];
    sn_arena *ar = sn_arena_of(dev);
    sn_manage_stats st;
    if (ar)
        sn_arena_stats(ar, &st);
    if (!ar || st.pool) {
        sn_plan_installed(&d->mgr.state, SN_PLAN_DEMAND);
        return;
    }
    double t0 = sn_planner_now_ms();
    int lib = sn_own_work_begin();
    uint64_t covered = sn_arena_sync_begin(ar);
    int synced = SN_REAL(cudaDeviceSynchronize)() == cudaSuccess;
    if (synced)
        sn_arena_device_synced(ar, covered);
    sn_own_work_end(lib);
    if (synced)
        sn_harvest(dev, NULL, 1);
    sn_plan_work *stale = NULL;
    sn_lock_take(&sn_reg_lock);
    sn_lock_take(&d->lock);
    const sn_exec_job_cfg cfg = {dev,       sn_opt.policy, sn_opt.workspace, d->mgr.rank, !st.pool,
                                 st.budget - st.budget / 20, st.granularity};
    sn_plan_work *w = sn_manage_prepare_locked(&d->mgr, d->trace, &cfg, &stale);
    d->mgr.blocked_ms += sn_planner_now_ms() - t0;
    sn_lock_give(&d->lock);
    sn_lock_give(&sn_reg_lock);
    sn_plan_work_free(stale);
    if (!w)
        sn_plan_installed(&d->mgr.state, SN_PLAN_DEMAND);
    else if (sn_manage_submit(w))
        sn_core_plan_install(dev);
}

/* A plan made (state READY): bound to the run under the registry's and
 * the device's locks, and followed from the next call. */
static void sn_core_plan_install(int dev)
{
    sn_device *d = &sn_devs[dev];
    if (!sn_plan_take_ready(&d->mgr.state))
        return;
    double t0 = sn_planner_now_ms();
    sn_plan_work *done = NULL;
    sn_lock_take(&sn_reg_lock);
    sn_lock_take(&d->lock);
    size_t nknown = 0;
    sn_exec_known *known = sn_core_known_locked(dev, &nknown);
    int to = sn_manage_install_locked(&d->mgr, d->trace, known, nknown, &done);
    d->mgr.blocked_ms += sn_planner_now_ms() - t0;
    sn_lock_give(&d->lock);
    sn_lock_give(&sn_reg_lock);
    free(known);
    sn_plan_work_free(done);
    /* (a plan asked for meanwhile, WANTED, stays asked for) */
    sn_plan_installed(&d->mgr.state, to);
    if (to == SN_PLAN_WANTED && sn_plan_claim(&d->mgr.state))
        sn_core_plan_claim(dev);
}

/* The plan's moves due at a call at position pos, started (no core lock
 * held while the arena works). */
static void sn_core_plan_moves(int dev, int64_t pos, void *stream, const sn_plan_due *due)
{
    sn_device *d = &sn_devs[dev];
    sn_arena *ar = sn_arena_of(dev);
    if (!ar)
        return;
    if (due->start || due->note) {
        /* once an iteration (or, for SN_PLOT, once a call): the arena's
         * running totals, taken outside the device's lock; the events
         * with none held */
        float ms = -1.0f;
        if (due->start && due->ev_old && due->ev_last && sn_elapsed(due->ev_old, due->ev_last, &ms) != 0)
            ms = -1.0f;
        cudaEvent_t now = due->start ? (due->reuse ? (cudaEvent_t)due->reuse : sn_event_get(d)) : NULL;
        if (now && sn_record(now, stream) != 0) {
            sn_lock_take(&d->lock);
            sn_event_put_locked(d, now);
            sn_lock_give(&d->lock);
            now = NULL;
        }
        sn_manage_stats st;
        sn_arena_stats(ar, &st);
        const sn_manage_totals totals = {st.stall_in_ms + st.stall_out_ms, st.swap_in_bytes, st.swap_out_bytes,
                                         st.resident_now, st.host_pinned};
        sn_lock_take(&d->lock);
        sn_manage_measured_locked(&d->mgr, due, pos, now, ms, &totals);
        sn_lock_give(&d->lock);
    }
    if (!due->mv.nout && !due->mv.nin && !due->sync && (due->gathered || !sn_arena_leaving(ar)))
        return;
    int lib = sn_own_work_begin();
    if (!due->gathered)
        sn_arena_reap(ar, 0);
    if (due->mv.nout)
        sn_arena_offload(ar, due->mv.out, due->mv.drop, due->mv.nout);
    /* a gathered plan's sync step: one wait for the device, then every
     * block that left is unmapped, then the prefetches mapped */
    if (due->sync) {
        sn_arena_reap_all(ar);
        if (sn_opt.workspace != SN_WORKSPACE_KEEP)
            sn_arena_scratch_fit(ar, stream, due->sync_ws);
    }
    if (due->mv.nin)
        sn_arena_prefetch(ar, due->mv.in, due->mv.nin);
    sn_own_work_end(lib);
}

/* One call's way through sn_core_call_begin: its accesses resolved once
 * for the tracer and the arena, logged, made resident, timed. */
typedef struct sn_begin {
    sn_device *d;
    int managing, log, time_it, planned;
    int64_t pos;
    sn_room room;
    sn_access_uses uses;
    sn_access_lookup look;
    sn_plan_due due;
} sn_begin;

static void sn_token_init(const sn_call *c, sn_step_token *t)
{
    t->dev = c->dev;
    t->index = -1;
    t->timed = 0;
    t->held.ar = NULL;
    t->peer_held.ar = NULL;
    t->measure = 0;
    /* (the workspace and position are set, and read, only with an algorithm) */
    t->conv.algo = -1;
}

/* One resolution serves both the tracer and the arena: this thread's memo
 * of it while the registry has not changed (no registry lock), else a pass
 * over the registry under its lock, hand over hand with the device's: the
 * accesses are logged before an allocation can go away. Returns with the
 * device's lock held when the call is logged (b->log). */
static inline __attribute__((always_inline)) void sn_begin_resolve(const sn_call *c, sn_begin *b)
{
    sn_device *d = b->d;
    /* (the arena's blocks only in manage mode) */
    sn_room *room = &b->room;
    if (b->managing)
        b->uses = (sn_access_uses){room->use, room->cap_use, 0, (c->flags & SN_CALL_OPAQUE) != 0, -1,
                                   0, 0, room->peer, room->cap_peer, 0, 0, 0};
    sn_access_lookup *l = &b->look;
    l->cap = room->cap_acc;
    l->acc = room->acc;
    l->accs = room->acc;
    l->uses = b->managing ? &b->uses : NULL;
    l->gen = 0;
    for (;;) {
        int hit = sn_access_recall(&sn_reg, c, l);
        if (!hit) {
            l->accs = room->acc;
            if (b->managing) {
                b->uses.use = room->use;
                b->uses.n = b->uses.npeer = 0;
                b->uses.all = (c->flags & SN_CALL_OPAQUE) != 0;
                b->uses.peer_dev = -1;
                b->uses.peer_all = b->uses.more_devices = 0;
            }
            sn_lock_take(&sn_reg_lock);
            l->res = sn_access_resolve_locked(&sn_reg, c, room->acc, l->cap, l->uses);
            sn_access_remember(c, sn_reg.gen, l);
        }
        if (!b->log) {
            if (!hit)
                sn_lock_give(&sn_reg_lock);
            break;
        }
        sn_lock_take(&d->lock);
        if (!hit) {
            sn_lock_give(&sn_reg_lock);
            break;
        }
        /* the tracer's ids are released only under the device's lock,
         * after their allocation left the registry: with the generation
         * unchanged, every id recalled is still the allocation's */
        if (sn_reg_gen(&sn_reg) == l->gen)
            break;
        sn_lock_give(&d->lock);
    }
}

/* The call in the device's log (its lock held): a step or a transfer,
 * the profile's signature, and, when a plan is followed, what it has due
 * at this call. */
static void sn_begin_log_locked(const sn_call *c, sn_step_token *t, sn_begin *b)
{
    sn_device *d = b->d;
    sn_trace *tr = sn_trace_of_locked(c->dev);
    if (!tr)
        return;
    tr->unknown_ranges += b->look.res.unknown;
    unsigned flags = sn_is_transfer(c->op) ? SN_TC_TRANSFER : SN_TC_STEP;
    if (b->look.res.incomplete)
        flags |= SN_TC_OPAQUE;
    if (c->flags & SN_CALL_HOST_PINNED)
        flags |= SN_TC_HOST_PINNED;
    /* index SN_TRACE_UNRECORDED: counted, not logged (after the profile) */
    t->index = sn_trace_call_add(tr, c, flags, b->look.accs, b->look.res.nacc);
    /* a convolution configuration seen for the first time while
     * profiling: its algorithms are measured once (not for SN_POLICY=lru,
     * which makes no plan to choose them) */
    if (t->index >= 0 && c->conf && b->managing && !d->profiled && sn_opt_chooses_convs())
        t->measure = sn_trace_algos_claim(tr, c->conf);
    if (__builtin_expect(tr->events != 0, 0))
        sn_relearn_events_locked(d, tr);
    if (t->index >= 0 && (flags & SN_TC_STEP) && !d->profiled)
        sn_profile_step_locked(d, tr, tr->calls[t->index].sig);
    b->pos = tr->run.position;
    b->time_it = t->index >= 0 && d->origin_state != -1 && !d->profiled && d->npending < SN_MAX_PENDING;
    /* the plan's step, in the trace's order */
    if (b->managing && sn_plan_state_get(&d->mgr.state) == SN_PLAN_FOLLOWED) {
        sn_manage_due_locked(&d->mgr, b->pos, c, &b->due);
        b->planned = 1;
    }
}

/* Manage mode: the plan's moves due now, then what the call touches,
 * resident before it is forwarded (with no core lock held: the arena
 * moves memory). A call that cannot fit fails, as a real call out of
 * memory does. */
static int sn_begin_manage(sn_call *c, sn_step_token *t, sn_begin *b)
{
    sn_device *d = b->d;
    const sn_plan_due *due = &b->due;
    int ps = sn_plan_state_get(&d->mgr.state);
    if (ps == SN_PLAN_WANTED && sn_plan_claim(&d->mgr.state))
        sn_core_plan_claim(c->dev);
    else if (ps == SN_PLAN_READY)
        sn_core_plan_install(c->dev);
    else if (b->planned && (due->start || due->note || due->mv.nout || due->mv.nin || due->sync ||
                            (!due->gathered && sn_arena_leaving(sn_arena_of(c->dev)))))
        sn_core_plan_moves(c->dev, b->pos, c->stream, due);
    int rc = b->planned && due->conv ? sn_core_conv_resident(d, c, t, &b->uses, b->pos, due)
                                     : sn_core_make_resident(c, t, &b->uses, b->pos, 0, 0);
    if (rc != 0) {
        if (t->index >= 0 || t->index == SN_TRACE_UNRECORDED) {
            sn_lock_take(&d->lock);
            sn_trace_call_failed(d->trace, t->index, sn_is_transfer(c->op) ? SN_TC_TRANSFER : SN_TC_STEP);
            sn_lock_give(&d->lock);
        }
        t->index = -1;
        return SN_CORE_NOMEM;
    }
    if (c->lib_handle)
        sn_lib_scope_open(sn_arena_peek(c->dev), c->lib_handle);
    return 0;
}

/* A step timed while profiling: an event on its stream now, another at
 * its end. Time zero of the device: an event recorded before its first
 * timed step, on a non-blocking stream of libsn's own: on the legacy
 * stream it would synchronise with (and so invalidate) a capture the
 * program has under way on a blocking stream. One thread sets it up
 * (state 2), outside the lock; steps meanwhile go untimed. */
static void sn_begin_time(const sn_call *c, sn_step_token *t, sn_device *d)
{
    sn_lock_take(&d->lock);
    if (d->origin_state == -1 || d->origin_state == 2) {
        sn_lock_give(&d->lock);
        return;
    }
    int setup_origin = d->origin_state == 0;
    if (setup_origin)
        d->origin_state = 2;
    sn_lock_give(&d->lock);
    if (setup_origin) {
        cudaStream_t own = sn_own_stream_create();
        cudaEvent_t origin = own ? sn_event_get(d) : NULL;
        int ok = origin && sn_record(origin, own) == 0;
        sn_lock_take(&d->lock);
        d->own_stream = own;
        d->origin = origin;
        d->origin_state = ok ? 1 : -1;
        sn_lock_give(&d->lock);
        if (!ok) {
            sn_info("device %d: step timing unavailable (cannot record events)", c->dev);
            return;
        }
    }
    t->start = sn_event_get(d);
    t->stop = sn_event_get(d);
    if (t->start && t->stop && sn_record(t->start, c->stream) == 0) {
        t->timed = 1;
        return;
    }
    sn_lock_take(&d->lock);
    sn_event_put_locked(d, t->start);
    sn_event_put_locked(d, t->stop);
    sn_lock_give(&d->lock);
}

int sn_core_call_begin(sn_call *c, sn_step_token *t)
{
    sn_token_init(c, t);
    if (!sn_core_ready || c->dev < 0 || c->dev >= SN_MAX_DEVICES)
        return 0;
    sn_begin b;
    b.d = &sn_devs[c->dev];
    b.managing = sn_managing();
    b.time_it = b.planned = 0;
    b.pos = -1;
    /* While profiling, a step is timed with events on its stream; a call
     * being captured into a graph is neither timed nor logged. After the
     * profile nothing is recorded on the program's streams, and the
     * question is not worth its cost. */
    int profiled = __atomic_load_n(&b.d->profiled, __ATOMIC_ACQUIRE);
    int capturing = (!profiled || sn_capture_active()) ? sn_stream_capturing(c->stream) : SN_CAPTURE_NO;
    if (capturing == SN_CAPTURE_YES || (capturing == SN_CAPTURE_UNKNOWN && sn_capture_active())) {
        /* recorded into a graph, not run (or refused by a capture rule):
         * nothing of it is resident now, nothing is written; a launch
         * of the graph makes what it touches resident */
        sn_graphs_captured(c);
        return 0;
    }
    b.log = profiled || capturing == SN_CAPTURE_NO;
    if (b.log)
        sn_register_exit();
    sn_room_init(&b.room, c);
    sn_begin_resolve(c, &b);
    if (b.log) {
        sn_begin_log_locked(c, t, &b);
        sn_lock_give(&b.d->lock);
    }
    int rc = b.managing && sn_begin_manage(c, t, &b) != 0 ? SN_CORE_NOMEM : 0;
    sn_room_free(&b.room);
    if (rc == 0 && b.time_it)
        sn_begin_time(c, t, b.d);
    return rc;
}

void sn_core_call_end(sn_call *c, sn_step_token *t, int ok)
{
    if (c->lib_handle)
        sn_lib_scope_close(c->lib_handle);
    if (t->held.ar) {
        if (__builtin_expect(!ok, 0))
            sn_arena_call_failed(&t->held);
        sn_arena_release(&t->held);
    }
    if (t->peer_held.ar) {
        int lib = sn_own_work_begin();
        sn_quiet(SN_REAL(cudaStreamSynchronize)((cudaStream_t)c->stream));
        sn_own_work_end(lib);
        sn_arena_release(&t->peer_held);
    }
    /* An untimed step that succeeded is complete as counted. */
    if ((t->index < 0 && t->index != SN_TRACE_UNRECORDED) || (!t->timed && ok))
        return;
    sn_device *d = &sn_devs[t->dev];
    int recorded = t->timed && ok && sn_record(t->stop, c->stream) == 0;
    sn_lock_take(&d->lock);
    if (!ok)
        sn_trace_call_failed(d->trace, t->index, sn_is_transfer(c->op) ? SN_TC_TRANSFER : SN_TC_STEP);
    if (t->timed && recorded &&
        sn_array_room(&d->pending, d->npending, &d->cap_pending, sizeof *d->pending, 1024) != 0)
        recorded = 0;
    if (t->timed && recorded) {
        d->pending[d->npending++] = (sn_pending){t->index, t->start, t->stop, c->stream};
    } else if (t->timed) {
        sn_event_put_locked(d, t->start);
        sn_event_put_locked(d, t->stop);
    }
    sn_lock_give(&d->lock);
}

int sn_core_call(sn_call *c, sn_forward_fn forward, void *args)
{
    sn_step_token t;
    if (sn_core_call_begin(c, &t) != 0)
        return SN_CORE_NOMEM;
    int ok = forward(args, t.conv.algo >= 0 ? &t.conv : NULL);
    if (!ok && t.conv.algo >= 0 && sn_core_conv_fallback(c, &t) == 0)
        ok = forward(args, NULL);
    sn_core_call_end(c, &t, ok);
    if (t.measure)
        sn_conv_search(c, ok);
    return 0;
}

/* Reads the timings of the pending steps the host has waited for: taken
 * out of the pending list under the device's lock, read with no lock held
 * (cudaEventElapsedTime), stored under it again. */
static void sn_harvest(int dev, void *stream, int all)
{
    if (dev < 0 || dev >= SN_MAX_DEVICES)
        return;
    sn_device *d = &sn_devs[dev];
    sn_lock_take(&d->lock);
    size_t keep = 0, ndone = 0;
    sn_pending *done = d->npending ? malloc(d->npending * sizeof *done) : NULL;
    sn_lock_take(&sn_handles_lock);
    for (size_t i = 0; i < d->npending; i++) {
        sn_pending *p = &d->pending[i];
        if (!done || !sn_covered_locked(p->stream, stream, all))
            d->pending[keep++] = *p;
        else
            done[ndone++] = *p;
    }
    sn_lock_give(&sn_handles_lock);
    d->npending = keep;
    cudaEvent_t origin = d->origin;
    sn_lock_give(&d->lock);
    if (!ndone) {
        free(done);
        return;
    }
    float *times = malloc(ndone * 2 * sizeof *times);
    for (size_t i = 0; times && i < ndone; i++)
        if (sn_elapsed(origin, done[i].start, &times[2 * i]) != 0 ||
            sn_elapsed(done[i].start, done[i].stop, &times[2 * i + 1]) != 0)
            times[2 * i] = -1;
    sn_lock_take(&d->lock);
    for (size_t i = 0; i < ndone; i++) {
        if (times && times[2 * i] >= 0)
            sn_trace_call_time(d->trace, done[i].index, times[2 * i], times[2 * i + 1]);
        sn_event_put_locked(d, done[i].start);
        sn_event_put_locked(d, done[i].stop);
    }
    sn_lock_give(&d->lock);
    free(times);
    free(done);
}

/* What the calling thread's device synchronisation in progress covers
 * (sn_core_sync_begin .. sn_core_host_synced). */
static __thread uint64_t sn_sync_covered __attribute__((tls_model("initial-exec")));
static __thread int sn_sync_pending __attribute__((tls_model("initial-exec")));

void sn_core_sync_begin(int dev)
{
    sn_sync_pending = 0;
    if (!sn_core_ready || !sn_managing())
        return;
    sn_arena *ar = sn_arena_peek(dev);
    if (!ar)
        return;
    sn_sync_covered = sn_arena_sync_begin(ar);
    sn_sync_pending = 1;
}

void sn_core_host_synced(int dev, void *stream, int all_streams)
{
    if (!sn_core_ready)
        return;
    if (all_streams && sn_managing() && sn_sync_pending) {
        sn_arena *ar = sn_arena_peek(dev);
        if (ar) {
            sn_arena_device_synced(ar, sn_sync_covered);
            sn_arena_harvest(ar, 0);
        }
    }
    sn_sync_pending = 0;
    sn_harvest(dev, stream, all_streams);
}

void sn_core_event_synced(int dev, void *event)
{
    if (!sn_core_ready)
        return;
    sn_lock_take(&sn_handles_lock);
    sn_event_info *e;
    HASH_FIND_PTR(sn_events, &event, e);
    void *stream = e ? e->stream : (void *)-1;
    sn_lock_give(&sn_handles_lock);
    if (stream != (void *)-1)
        sn_harvest(dev, stream, 0);
}

void sn_core_device_reset(int dev)
{
    if (!sn_core_ready || dev < 0 || dev >= SN_MAX_DEVICES)
        return;
    sn_lock_take(&sn_reg_lock);
    sn_device *d = &sn_devs[dev];
    sn_lock_take(&d->lock);
    /* Events and libsn's stream died with the context. */
    d->npending = 0;
    d->nspare = 0;
    d->origin_state = 0;
    d->own_stream = NULL;
    sn_lock_give(&d->lock);
    sn_alloc *drop[64];
    for (;;) {
        size_t n = 0;
        for (size_t i = 0; i < sn_reg.count && n < 64; i++)
            if (sn_reg.sorted[i]->dev == dev && sn_reg.sorted[i]->kind != SN_KIND_HOST)
                drop[n++] = sn_reg.sorted[i];
        if (!n)
            break;
        for (size_t i = 0; i < n; i++) {
            /* out of the registry first: a call that recalls its accesses
             * trusts their ids while the generation is unchanged */
            sn_reg_remove_locked(&sn_reg, drop[i]);
            sn_on_stale(drop[i], NULL);
            sn_reg_recycle_locked(&sn_reg, drop[i]);
        }
    }
    sn_lock_give(&sn_reg_lock);
}

/* ---- what was not seen ------------------------------------------------------------- */

static const char *const sn_cuda_libs[] = {"libcudart.so", "libcuda.so", "libcudnn.so",
                                           "libcublas.so", "libcublasLt.so", "libcurand.so"};

typedef struct sn_loaded_libs {
    char names[256];
    size_t len;
} sn_loaded_libs;

static int sn_note_cuda_lib(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    sn_loaded_libs *l = data;
    const char *path = info->dlpi_name ? info->dlpi_name : "";
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (size_t i = 0; i < sizeof sn_cuda_libs / sizeof sn_cuda_libs[0]; i++) {
        size_t k = strlen(sn_cuda_libs[i]);
        if (strncmp(base, sn_cuda_libs[i], k) == 0 && (base[k] == '.' || base[k] == 0)) {
            int w = snprintf(l->names + l->len, sizeof l->names - l->len, "%s%s", l->len ? ", " : "",
                             base);
            if (w > 0 && l->len + (size_t)w < sizeof l->names)
                l->len += (size_t)w;
            break;
        }
    }
    return 0;
}

/* Says why libsn saw no device operation, when a CUDA library is loaded;
 * leaves out empty (nothing to say) for a process that never loaded one,
 * such as the shell and tools a training script runs with LD_PRELOAD
 * inherited. */
static void sn_describe_unseen_locked(char *out, size_t cap)
{
    out[0] = 0;
    sn_loaded_libs libs = {{0}, 0};
    dl_iterate_phdr(sn_note_cuda_lib, &libs);
    unsigned long allocs = 0, failed = 0;
    for (int dev = 0; dev < SN_MAX_DEVICES; dev++) {
        const sn_trace *t = sn_devs[dev].trace;
        if (!t)
            continue;
        /* the run's totals, which also cover what was not logged */
        for (size_t o = 0; o < sizeof t->run.alloc_count / sizeof t->run.alloc_count[0]; o++)
            allocs += t->run.alloc_count[o];
        failed += t->run.failed;
    }
    if (!libs.len && !allocs)
        return;
    snprintf(out, cap,
             "no CUDA device operation was seen (CUDA libraries loaded: %s; %lu device allocations "
             "and %lu failed calls seen; %lu runtime/cuDNN/cuBLAS functions reached through dlsym). "
             "libsn follows the CUDA runtime, cuDNN, cuBLAS and the driver's memory, copy and set "
             "functions: kernels launched through the driver API (cuLaunchKernel), or by a "
             "program that failed before its first device operation, are not seen",
             libs.len ? libs.names : "none", allocs, failed, sn_dlsym_wrapped_count());
}

static void sn_finish(int cuda_usable)
{
    static int finished;
    if (__atomic_load_n(&sn_forked_child, __ATOMIC_ACQUIRE) ||
        __atomic_exchange_n(&finished, 1, __ATOMIC_ACQ_REL) || sn_opt.mode == SN_MODE_OFF)
        return;
    /* Nothing libsn calls from here on is the framework's, until the
     * outputs are written: the program's own exit code (destructors of
     * static objects and of libraries unloaded after this handler, such
     * as Caffe's, which destroys its cuBLAS handle and frees its blobs
     * there) still calls CUDA afterwards, and those calls must reach
     * libsn's wrappers: in manage mode the memory they free is libsn's. */
    int depth = sn_thread.depth, lib = sn_thread.lib;
    sn_thread.depth = 1;
    sn_thread.lib = SN_LIB_NONE;
    sn_real_cudaEventSynchronize_fn sync = cuda_usable && sn_core_ready ? SN_REAL(cudaEventSynchronize) : NULL;
    for (int dev = 0; sync && dev < SN_MAX_DEVICES; dev++) {
        sn_device *d = &sn_devs[dev];
        /* The host waits for every pending step (outside the lock); then
         * everything pending is complete. */
        sn_lock_take(&d->lock);
        size_t n = d->npending;
        cudaEvent_t *stops = n ? malloc(n * sizeof *stops) : NULL;
        for (size_t i = 0; stops && i < n; i++)
            stops[i] = d->pending[i].stop;
        sn_lock_give(&d->lock);
        if (!stops)
            continue;
        for (size_t i = 0; i < n; i++)
            sn_quiet(sync(stops[i]));
        free(stops);
        sn_harvest(dev, NULL, 1);
    }
    /* manage mode's stall timings still pending, read while CUDA works */
    for (int dev = 0; sync && sn_opt.mode == SN_MODE_MANAGE && dev < SN_MAX_DEVICES; dev++) {
        sn_arena *ar = sn_arena_peek(dev);
        if (ar)
            sn_arena_harvest(ar, 1);
        /* and the iterations whose time was not known yet when the next
         * one started */
        sn_device *d = &sn_devs[dev];
        int ps = sn_plan_state_get(&d->mgr.state);
        if (ps != SN_PLAN_FOLLOWED && ps != SN_PLAN_ASIDE)
            continue;
        uint64_t it[SN_PLAN_ITER_STATS];
        void *from[SN_PLAN_ITER_STATS], *to[SN_PLAN_ITER_STATS];
        sn_lock_take(&d->lock);
        int k = sn_exec_untimed(&d->mgr.exec, it, from, to);
        sn_lock_give(&d->lock);
        for (int i = 0; i < k; i++) {
            float ms;
            if (sync(to[i]) != cudaSuccess || sn_elapsed(from[i], to[i], &ms) != 0) {
                sn_quiet(cudaErrorUnknown);
                continue;
            }
            sn_lock_take(&d->lock);
            sn_exec_iteration_ms(&d->mgr.exec, it[i], ms);
            sn_lock_give(&d->lock);
        }
    }
    /* Other threads may still be running: every device's log is held
     * still while the outputs are built (no CUDA call from here). */
    for (int dev = 0; dev < SN_MAX_DEVICES; dev++)
        sn_lock_take(&sn_devs[dev].lock);
    sn_trace *traces[SN_MAX_DEVICES];
    int n = 0;
    for (int dev = 0; dev < SN_MAX_DEVICES; dev++)
        if (sn_devs[dev].trace && sn_devs[dev].trace->run.calls) {
            sn_arena *ar = sn_opt.mode == SN_MODE_MANAGE && sn_core_ready ? sn_arena_peek(dev) : NULL;
            if (ar) {
                sn_manage_stats *ms = &sn_devs[dev].trace->manage;
                sn_arena_stats(ar, ms);
                ms->passed = __atomic_load_n(&sn_devs[dev].passed, __ATOMIC_RELAXED);
                ms->passed_bytes = __atomic_load_n(&sn_devs[dev].passed_bytes, __ATOMIC_RELAXED);
                ms->workspace = sn_opt.workspace;
                sn_trace *tr = sn_devs[dev].trace;
                /* a re-learning not complete by now is given up: the report
                 * is of the iteration learned last */
                sn_trace_relearn_abandon(tr);
                sn_relearn_events_locked(&sn_devs[dev], tr);
                sn_manage_report_locked(&sn_devs[dev].mgr, ms);
                ms->plan_off_steps = tr->run.off_sequence;
                ms->relearn_begun = tr->relearn_begun;
                ms->relearned = tr->relearned;
            }
            traces[n++] = sn_devs[dev].trace;
        }
    char unseen[768] = "";
    if (!n)
        sn_describe_unseen_locked(unseen, sizeof unseen);
    sn_output_config cfg = {0};
    cfg.mode_name = sn_option_choice("SN_MODE", sn_opt.mode);
    int report = sn_opt.report.kind;
    if (report == SN_OUT_AUTO)
        report = sn_opt.mode == SN_MODE_TRACE ? SN_OUT_STDERR : SN_OUT_OFF;
    cfg.report_to_stderr = report == SN_OUT_STDERR;
    cfg.report_path = report == SN_OUT_PATH ? sn_opt.report.path : NULL;
    cfg.trace_path = sn_opt.trace.kind == SN_OUT_PATH ? sn_opt.trace.path : NULL;
    cfg.plot_path = sn_opt.plot.kind == SN_OUT_PATH ? sn_opt.plot.path : NULL;
    cfg.unseen = unseen[0] ? unseen : NULL;
    char mode_name[16];
    snprintf(mode_name, sizeof mode_name, "%s", cfg.mode_name ? cfg.mode_name : "?");
    cfg.mode_name = mode_name;
    int outputs = cfg.report_to_stderr || cfg.report_path || cfg.trace_path || cfg.plot_path;
    if (outputs && (n || cfg.unseen))
        sn_outputs_write(traces, n, &cfg);
    else if (cfg.unseen)
        sn_warn("%s", cfg.unseen);
    for (int dev = SN_MAX_DEVICES - 1; dev >= 0; dev--)
        sn_lock_give(&sn_devs[dev].lock);
    sn_thread.depth = depth;
    sn_thread.lib = lib;
}

void sn_core_finish_unloading(void)
{
    sn_finish(0);
}
