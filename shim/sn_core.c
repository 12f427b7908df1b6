/*
 * sn_core.c — the core behind the wrappers (see sn_core.h): the registry,
 * the per-device call logs, call sites, kernel argument scans and step
 * timing with events on the call's own stream.
 *
 * One lock serialises the registry and the logs. CUDA calls libsn makes for
 * itself (events, parameter layouts) go to the real functions, outside the
 * lock, with the thread's guard held so nothing of it is traced. A failure
 * of one of those calls is cleared from the runtime's last-error state so
 * the framework never sees an error it did not cause.
 */
#include "shim/sn_core.h"

#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "shim/sn_hooks.h"
#include "shim/sn_log.h"
#include "shim/sn_options.h"
#include "tracer/sn_output.h"
#include "tracer/sn_period.h"
#include "tracer/sn_trace.h"

static pthread_mutex_t sn_lock = PTHREAD_MUTEX_INITIALIZER;
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
    sn_trace *trace;
    cudaEvent_t origin;       /* first event recorded on the device: time zero */
    int origin_state;         /* 0 none, 1 recorded, -1 timing unavailable */
    sn_pending *pending;
    size_t npending, cap_pending;
    cudaEvent_t *spare;       /* events ready for reuse */
    size_t nspare, cap_spare;
    /* profiling: steps are timed until the iteration has repeated
     * SN_PROFILE_ITERS + 1 times */
    uint64_t *step_sig;
    size_t nsig, cap_sig, next_check;
    int profiled;
} sn_device;

static sn_device sn_devs[SN_MAX_DEVICES];

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

void sn_core_note_stream(void *stream, int flag)
{
    pthread_mutex_lock(&sn_lock);
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
    pthread_mutex_unlock(&sn_lock);
}

void sn_core_note_event(void *event, void *stream)
{
    pthread_mutex_lock(&sn_lock);
    sn_event_info *e;
    HASH_FIND_PTR(sn_events, &event, e);
    if (!e && (e = calloc(1, sizeof *e))) {
        e->event = event;
        HASH_ADD_PTR(sn_events, event, e);
    }
    if (e)
        e->stream = stream;
    pthread_mutex_unlock(&sn_lock);
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

static cudaEvent_t sn_event_get(sn_device *d)
{
    if (d->nspare)
        return d->spare[--d->nspare];
    sn_real_cudaEventCreateWithFlags_fn create = SN_REAL(cudaEventCreateWithFlags);
    cudaEvent_t e = NULL;
    if (!create)
        return NULL;
    cudaError_t rc = create(&e, cudaEventDefault);
    sn_quiet(rc);
    return rc == cudaSuccess ? e : NULL;
}

static void sn_event_put(sn_device *d, cudaEvent_t e)
{
    if (!e)
        return;
    if (d->nspare == d->cap_spare) {
        size_t cap = d->cap_spare ? d->cap_spare * 2 : 256;
        cudaEvent_t *s = realloc(d->spare, cap * sizeof *s);
        if (!s)
            return;
        d->spare = s;
        d->cap_spare = cap;
    }
    d->spare[d->nspare++] = e;
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

static void sn_finish_at_exit(void)
{
    sn_core_finish();
}

/* Registered after the runtime has done real work, so that it runs before
 * the runtime's own exit handlers tear the device down. */
static void sn_register_exit_locked(void)
{
    static int registered;
    if (!registered) {
        registered = 1;
        atexit(sn_finish_at_exit);
    }
}

/* ---- call sites ----------------------------------------------------------------- */

static uintptr_t sn_own_lo, sn_own_hi;

static int sn_find_own_range(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uintptr_t probe = (uintptr_t)data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (probe >= lo && probe < hi) {
            sn_own_lo = lo;
            sn_own_hi = hi;
            return 1;
        }
    }
    return 0;
}

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
    for (int i = 0; i < n && used < 6; i++) {
        uintptr_t pc = (uintptr_t)pcs[i];
        if (pc - sn_own_lo < sn_own_hi - sn_own_lo)
            continue;
        h = sn_hash_mix(h, (uint64_t)pc);
        used++;
    }
    return h;
}

/* ---- initialisation ------------------------------------------------------------- */

void sn_core_init(void)
{
    pthread_mutex_lock(&sn_lock);
    if (!sn_core_ready) {
        sn_reg_init(&sn_reg);
        dl_iterate_phdr(sn_find_own_range, (void *)(uintptr_t)sn_core_init);
        /* libunwind initialises its globals on first use, unsynchronised
         * (a racy flag and signal mask under its own lock); doing that here,
         * while every other thread waits for initialisation to finish,
         * orders it before any thread's walk. Per-thread caches then keep
         * the walks of different threads apart (libunwind's thread-safe
         * mode). */
        unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
        (void)sn_call_site();
        sn_core_ready = 1;
        if (sn_opt.mode == SN_MODE_MANAGE)
            sn_info("SN_MODE=manage: memory management is not part of this build; observing only");
    }
    pthread_mutex_unlock(&sn_lock);
}

/* ---- allocations ----------------------------------------------------------------- */

static void sn_on_stale(sn_alloc *a, void *ctx)
{
    (void)ctx;
    if (a->user && a->dev >= 0 && a->dev < SN_MAX_DEVICES && sn_devs[a->dev].trace)
        sn_trace_release(sn_devs[a->dev].trace, (uint32_t)((uintptr_t)a->user - 1));
}

void sn_core_note_alloc(void *p, uint64_t size, int kind, int owner, int dev)
{
    if (!p || !sn_core_ready)
        return;
    uint64_t site = 0;
    if (kind != SN_KIND_HOST && (owner == SN_OWNER_FRAMEWORK || owner == SN_OWNER_DRIVER))
        site = sn_call_site();
    pthread_mutex_lock(&sn_lock);
    sn_register_exit_locked();
    sn_alloc *a = sn_reg_add_locked(&sn_reg, (uintptr_t)p, size, kind, owner, dev, sn_on_stale, NULL);
    if (a && kind != SN_KIND_HOST) {
        sn_trace *t = sn_trace_of_locked(dev);
        if (t) {
            uint32_t id = sn_trace_alloc(t, (uintptr_t)p, size, kind, owner, site);
            if (id != UINT32_MAX)
                a->user = (void *)(uintptr_t)(id + 1);
        }
    }
    pthread_mutex_unlock(&sn_lock);
}

/* The record leaves the registry before the real free: once the real free
 * returns, the address may already belong to another thread's new
 * allocation, and a late removal would delete that one's record. */
sn_alloc *sn_core_free_begin(void *p, int kinds)
{
    if (!p || !sn_core_ready)
        return NULL;
    pthread_mutex_lock(&sn_lock);
    sn_alloc *a = sn_reg_exact_locked(&sn_reg, (uintptr_t)p, kinds);
    if (a)
        sn_reg_remove_locked(&sn_reg, a);
    pthread_mutex_unlock(&sn_lock);
    return a;
}

void sn_core_free_end(sn_alloc *a, int ok)
{
    if (!a)
        return;
    pthread_mutex_lock(&sn_lock);
    if (ok) {
        sn_on_stale(a, NULL);
        sn_reg_recycle_locked(&sn_reg, a);
    } else {
        /* The free failed, so nobody else can have been given the address:
         * the allocation is still live, as it was. */
        sn_alloc *back = sn_reg_add_locked(&sn_reg, a->base, a->size, a->kind, a->owner, a->dev,
                                           sn_on_stale, NULL);
        if (back)
            back->user = a->user;
        else
            sn_on_stale(a, NULL);
        sn_reg_recycle_locked(&sn_reg, a);
    }
    pthread_mutex_unlock(&sn_lock);
}

int sn_core_pointer_kind(const void *p)
{
    if (!p || !sn_core_ready)
        return 0;
    pthread_mutex_lock(&sn_lock);
    sn_alloc *a = sn_reg_find_locked(&sn_reg, (uintptr_t)p);
    int kind = a ? a->kind : 0;
    pthread_mutex_unlock(&sn_lock);
    return kind;
}

void sn_core_note_physical(uint64_t handle, uint64_t size, int owner, int dev)
{
    if (!sn_core_ready)
        return;
    pthread_mutex_lock(&sn_lock);
    sn_reg_phys_add_locked(&sn_reg, handle, size, owner, dev);
    pthread_mutex_unlock(&sn_lock);
}

void sn_core_note_physical_release(uint64_t handle)
{
    if (!sn_core_ready)
        return;
    pthread_mutex_lock(&sn_lock);
    sn_reg_phys_remove_locked(&sn_reg, handle);
    pthread_mutex_unlock(&sn_lock);
}

/* Reservations hold no memory; libsn only needs to know they exist when it
 * reserves address space of its own (not in this build). */
void sn_core_note_reserve(void *p, uint64_t size, int owner)
{
    sn_debug("address range %p + %llu reserved (owner %d)", p, (unsigned long long)size, owner);
}

void sn_core_note_reserve_free(void *p)
{
    sn_debug("address range %p released", p);
}

/* ---- kernels ---------------------------------------------------------------------- */

#define SN_MAX_KPARAMS 64

typedef struct sn_kernel_layout {
    const void *func;
    int nparams;          /* -1: layout unknown */
    uint32_t off[SN_MAX_KPARAMS], size[SN_MAX_KPARAMS];
    UT_hash_handle hh;
} sn_kernel_layout;

static sn_kernel_layout *sn_layouts;

/* Reads the layout with cudaFuncGetParamInfo; the probe past the last
 * parameter fails, and that failure is cleared from the last-error state.
 * Returns NULL (not cached) when an error the framework has not collected
 * yet is pending: clearing ours would clear theirs too. */
static sn_kernel_layout *sn_kernel_probe(const void *func)
{
    sn_real_cudaFuncGetParamInfo_fn info = SN_REAL(cudaFuncGetParamInfo);
    sn_real_cudaPeekAtLastError_fn peek = SN_REAL(cudaPeekAtLastError);
    if (!peek || peek() != cudaSuccess)
        return NULL;
    sn_kernel_layout *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->func = func;
    k->nparams = -1;
    if (!info)
        return k;
    int n = 0;
    for (; n < SN_MAX_KPARAMS; n++) {
        size_t off = 0, size = 0;
        cudaError_t rc = info(func, (size_t)n, &off, &size);
        if (rc != cudaSuccess) {
            sn_quiet(rc);
            /* Index 0 failing with "invalid value" means no parameters;
             * anything else means the runtime does not know the layout. */
            if (n > 0 || rc == cudaErrorInvalidValue)
                k->nparams = n;
            break;
        }
        k->off[n] = (uint32_t)off;
        k->size[n] = (uint32_t)size;
    }
    if (n == SN_MAX_KPARAMS)
        k->nparams = -1;
    return k;
}

void sn_core_describe_kernel(sn_call *c, const void *func, void **args)
{
    /* Layouts are never removed: the lock taken for the lookup is kept for
     * the scan. */
    pthread_mutex_lock(&sn_lock);
    sn_kernel_layout *k;
    HASH_FIND_PTR(sn_layouts, &func, k);
    if (!k) {
        pthread_mutex_unlock(&sn_lock);
        k = sn_kernel_probe(func);
        if (!k) {
            c->flags |= SN_CALL_OPAQUE;
            return;
        }
        pthread_mutex_lock(&sn_lock);
        sn_kernel_layout *other;
        HASH_FIND_PTR(sn_layouts, &func, other);
        if (other) {
            free(k);
            k = other;
        } else {
            HASH_ADD_PTR(sn_layouts, func, k);
        }
    }
    if (k->nparams < 0 || (!args && k->nparams > 0)) {
        pthread_mutex_unlock(&sn_lock);
        c->flags |= SN_CALL_OPAQUE;
        return;
    }
    /* Every aligned pointer-sized word of every argument that points into a
     * known device allocation: that whole allocation, read and written. */
    for (int i = 0; i < k->nparams; i++) {
        const unsigned char *arg = args[i];
        if (!arg)
            continue;
        c->params = sn_hash_mix(c->params, k->size[i]);
        for (uint32_t w = 0; w + sizeof(uintptr_t) <= k->size[i]; w += sizeof(uintptr_t)) {
            uintptr_t v;
            memcpy(&v, arg + w, sizeof v);
            sn_alloc *a = v ? sn_reg_find_locked(&sn_reg, v) : NULL;
            if (a && (a->kind & SN_KIND_ANY_DEVICE)) {
                int dup = 0;
                for (int r = 0; r < c->nranges; r++)
                    dup |= c->range[r].addr == a->base;
                if (!dup)
                    sn_call_range(c, (void *)a->base, a->size, SN_READ | SN_WRITE);
            }
        }
    }
    pthread_mutex_unlock(&sn_lock);
}

/* ---- calls -------------------------------------------------------------------------- */

/* A range's read, write and scratch bits are the access bits of the same
 * name; only overwriting needs the range to cover the whole tensor. */
_Static_assert((int)SN_READ == (int)SN_ACC_R && (int)SN_WRITE == (int)SN_ACC_W &&
                   (int)SN_SCRATCH == (int)SN_ACC_SCRATCH,
               "access modes of ranges and of tensors differ");

static int sn_is_transfer(int op)
{
    return op == SN_OP_MEMCPY_H2D || op == SN_OP_MEMCPY_D2H;
}

/* Records a step's signature; every time their number doubles, looks for
 * the iteration. Once a training iteration (one with backward steps) has
 * repeated SN_PROFILE_ITERS + 1 times, the profile is complete: steps are
 * no longer timed (the per-step times are means over the profiled
 * iterations) and the log stops growing, the trace following the learned
 * iteration with running totals instead. */
static void sn_profile_step_locked(sn_device *d, sn_trace *tr, uint64_t sig)
{
    if (d->profiled)
        return;
    if (d->nsig == d->cap_sig) {
        size_t cap = d->cap_sig ? d->cap_sig * 2 : 1024;
        uint64_t *p = realloc(d->step_sig, cap * sizeof *p);
        if (!p)
            return;
        d->step_sig = p;
        d->cap_sig = cap;
    }
    d->step_sig[d->nsig++] = sig;
    if (!d->next_check)
        d->next_check = 64;
    if (d->nsig < d->next_check)
        return;
    d->next_check *= 2;
    sn_period per;
    size_t want = (size_t)sn_opt.profile_iters + 1;
    sn_period_find(d->step_sig, d->nsig, want, 64, &per);
    if (!per.found || (per.end - per.start) / per.period < want)
        return;
    if (!sn_trace_profile_ready(tr, d->step_sig, d->nsig, &per))
        return;
    d->profiled = 1;
    sn_info("device %d: iteration of %zu steps seen %zu times; profile complete", tr->dev, per.period,
            (per.end - per.start) / per.period);
    if (sn_model_follow(tr) != 0)
        sn_info("device %d: the iteration could not be placed in the log; recording goes on", tr->dev);
    free(d->step_sig);
    d->step_sig = NULL;
    d->nsig = d->cap_sig = 0;
}

void sn_core_call_begin(sn_call *c, sn_step_token *t)
{
    t->dev = c->dev;
    t->index = -1;
    t->timed = 0;
    if (!sn_core_ready || c->dev < 0 || c->dev >= SN_MAX_DEVICES)
        return;
    sn_trace_access acc[SN_CALL_MAX_RANGES * 2];
    int nacc = 0;
    pthread_mutex_lock(&sn_lock);
    sn_register_exit_locked();
    sn_trace *tr = sn_trace_of_locked(c->dev);
    if (!tr) {
        pthread_mutex_unlock(&sn_lock);
        return;
    }
    for (int i = 0; i < c->nranges; i++) {
        const sn_range *r = &c->range[i];
        sn_alloc *hit[4];
        size_t n = sn_reg_overlapping_locked(&sn_reg, r->addr, r->bytes, hit, 4);
        if (n == 0)
            tr->unknown_ranges++;
        for (size_t j = 0; j < n && j < 4; j++) {
            sn_alloc *a = hit[j];
            if (!a->user)
                continue;
            uint32_t id = (uint32_t)((uintptr_t)a->user - 1);
            uint8_t mode = (uint8_t)(r->mode & (SN_READ | SN_WRITE | SN_SCRATCH));
            if ((r->mode & SN_OVERWRITE) && r->addr <= a->base && r->addr + r->bytes >= a->base + a->size)
                mode |= SN_ACC_KILL;
            int k = 0;
            while (k < nacc && acc[k].tensor != id)
                k++;
            if (k == nacc) {
                if (nacc == (int)(sizeof acc / sizeof acc[0]))
                    continue;
                acc[nacc].tensor = id;
                acc[nacc++].mode = mode;
            } else {
                /* Read through one range and overwritten through another:
                 * the old contents are still needed. */
                uint8_t m = acc[k].mode | mode;
                if ((m & SN_ACC_R) && (m & SN_ACC_KILL))
                    m &= (uint8_t)~SN_ACC_KILL;
                acc[k].mode = m;
            }
        }
    }
    unsigned flags = sn_is_transfer(c->op) ? SN_TC_TRANSFER : SN_TC_STEP;
    if (c->flags & SN_CALL_OPAQUE)
        flags |= SN_TC_OPAQUE;
    /* index SN_TRACE_UNRECORDED: counted, not logged (after the profile) */
    t->index = sn_trace_call_add(tr, c, flags, acc, nacc);
    sn_device *d = &sn_devs[c->dev];
    if (t->index >= 0 && (flags & SN_TC_STEP) && !d->profiled)
        sn_profile_step_locked(d, tr, tr->calls[t->index].sig);
    if (t->index < 0 || d->origin_state < 0 || d->profiled || d->npending >= SN_MAX_PENDING) {
        pthread_mutex_unlock(&sn_lock);
        return;
    }
    /* Time zero of the device: an event on the legacy stream before its
     * first timed step. */
    if (d->origin_state == 0) {
        d->origin = sn_event_get(d);
        d->origin_state = d->origin && sn_record(d->origin, NULL) == 0 ? 1 : -1;
        if (d->origin_state < 0) {
            sn_info("device %d: step timing unavailable (cannot record events)", c->dev);
            pthread_mutex_unlock(&sn_lock);
            return;
        }
    }
    t->start = sn_event_get(d);
    t->stop = sn_event_get(d);
    pthread_mutex_unlock(&sn_lock);
    if (t->start && t->stop && sn_record(t->start, c->stream) == 0) {
        t->timed = 1;
        return;
    }
    pthread_mutex_lock(&sn_lock);
    sn_event_put(d, t->start);
    sn_event_put(d, t->stop);
    pthread_mutex_unlock(&sn_lock);
}

void sn_core_call_end(sn_call *c, sn_step_token *t, int ok)
{
    /* An untimed step that succeeded is complete as counted. */
    if ((t->index < 0 && t->index != SN_TRACE_UNRECORDED) || (!t->timed && ok))
        return;
    sn_device *d = &sn_devs[t->dev];
    int recorded = t->timed && ok && sn_record(t->stop, c->stream) == 0;
    pthread_mutex_lock(&sn_lock);
    if (!ok)
        sn_trace_call_failed(d->trace, t->index, sn_is_transfer(c->op) ? SN_TC_TRANSFER : SN_TC_STEP);
    if (t->timed && recorded && d->npending == d->cap_pending) {
        size_t cap = d->cap_pending ? d->cap_pending * 2 : 1024;
        sn_pending *p = realloc(d->pending, cap * sizeof *p);
        if (p) {
            d->pending = p;
            d->cap_pending = cap;
        } else {
            recorded = 0;
        }
    }
    if (t->timed && recorded) {
        d->pending[d->npending++] = (sn_pending){t->index, t->start, t->stop, c->stream};
    } else if (t->timed) {
        sn_event_put(d, t->start);
        sn_event_put(d, t->stop);
    }
    pthread_mutex_unlock(&sn_lock);
}

/* Reads the timings of the pending steps the host has waited for. */
static void sn_harvest(int dev, void *stream, int all)
{
    if (dev < 0 || dev >= SN_MAX_DEVICES)
        return;
    sn_device *d = &sn_devs[dev];
    pthread_mutex_lock(&sn_lock);
    size_t keep = 0;
    for (size_t i = 0; i < d->npending; i++) {
        sn_pending *p = &d->pending[i];
        if (!sn_covered_locked(p->stream, stream, all)) {
            d->pending[keep++] = *p;
            continue;
        }
        float start = 0, dur = 0;
        if (sn_elapsed(d->origin, p->start, &start) == 0 && sn_elapsed(p->start, p->stop, &dur) == 0)
            sn_trace_call_time(d->trace, p->index, start, dur);
        sn_event_put(d, p->start);
        sn_event_put(d, p->stop);
    }
    d->npending = keep;
    pthread_mutex_unlock(&sn_lock);
}

void sn_core_host_synced(int dev, void *stream, int all_streams)
{
    if (sn_core_ready)
        sn_harvest(dev, stream, all_streams);
}

void sn_core_event_synced(int dev, void *event)
{
    if (!sn_core_ready)
        return;
    pthread_mutex_lock(&sn_lock);
    sn_event_info *e;
    HASH_FIND_PTR(sn_events, &event, e);
    void *stream = e ? e->stream : (void *)-1;
    pthread_mutex_unlock(&sn_lock);
    if (stream != (void *)-1)
        sn_harvest(dev, stream, 0);
}

void sn_core_device_reset(int dev)
{
    if (!sn_core_ready || dev < 0 || dev >= SN_MAX_DEVICES)
        return;
    pthread_mutex_lock(&sn_lock);
    sn_device *d = &sn_devs[dev];
    /* Events died with the context. */
    d->npending = 0;
    d->nspare = 0;
    d->origin_state = 0;
    sn_alloc *drop[64];
    for (;;) {
        size_t n = 0;
        for (size_t i = 0; i < sn_reg.count && n < 64; i++)
            if (sn_reg.sorted[i]->dev == dev && sn_reg.sorted[i]->kind != SN_KIND_HOST)
                drop[n++] = sn_reg.sorted[i];
        if (!n)
            break;
        for (size_t i = 0; i < n; i++) {
            sn_on_stale(drop[i], NULL);
            sn_reg_remove_locked(&sn_reg, drop[i]);
            sn_reg_recycle_locked(&sn_reg, drop[i]);
        }
    }
    pthread_mutex_unlock(&sn_lock);
}

/* ---- what was not seen ------------------------------------------------------------- */

static const char *const sn_cuda_libs[] = {"libcudart.so", "libcuda.so", "libcudnn.so",
                                           "libcublas.so", "libcublasLt.so"};

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
        allocs += t->ntensors;
        for (size_t i = 0; i < t->ncalls; i++)
            failed += (t->calls[i].flags & SN_TC_FAILED) != 0;
    }
    if (!libs.len && !allocs)
        return;
    snprintf(out, cap,
             "no CUDA device operation was seen (CUDA libraries loaded: %s; %lu device allocations "
             "and %lu failed calls seen; %lu runtime/cuDNN/cuBLAS functions reached through dlsym). "
             "libsn follows the CUDA runtime, cuDNN, cuBLAS and the driver's memory functions: "
             "kernels and copies made through the driver API (cuLaunchKernel, cuMemcpy*), or by a "
             "program that failed before its first device operation, are not seen",
             libs.len ? libs.names : "none", allocs, failed, sn_dlsym_wrapped_count());
}

static void sn_finish(int cuda_usable)
{
    static int finished;
    if (__atomic_load_n(&sn_forked_child, __ATOMIC_ACQUIRE) ||
        __atomic_exchange_n(&finished, 1, __ATOMIC_ACQ_REL) || sn_opt.mode == SN_MODE_OFF)
        return;
    /* Nothing libsn calls from here on is the framework's. */
    sn_thread.depth = 1;
    sn_thread.lib = SN_LIB_NONE;
    sn_real_cudaEventSynchronize_fn sync = cuda_usable && sn_core_ready ? SN_REAL(cudaEventSynchronize) : NULL;
    for (int dev = 0; dev < SN_MAX_DEVICES; dev++) {
        sn_device *d = &sn_devs[dev];
        if (!d->npending || !sync)
            continue;
        /* The host waits for the last pending step of each stream; then
         * everything pending is complete. */
        for (size_t i = 0; i < d->npending; i++)
            sn_quiet(sync(d->pending[i].stop));
        sn_harvest(dev, NULL, 1);
    }
    pthread_mutex_lock(&sn_lock);
    sn_trace *traces[SN_MAX_DEVICES];
    int n = 0;
    for (int dev = 0; dev < SN_MAX_DEVICES; dev++)
        if (sn_devs[dev].trace && sn_devs[dev].trace->run.calls)
            traces[n++] = sn_devs[dev].trace;
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
    pthread_mutex_unlock(&sn_lock);
}

void sn_core_finish(void)
{
    sn_finish(1);
}

void sn_core_finish_unloading(void)
{
    sn_finish(0);
}
