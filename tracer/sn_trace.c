/*
 * sn_trace.c — appending to the call log, counting, and following the
 * iteration once the log stops (see sn_trace.h).
 */
#include "tracer/sn_trace.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <uthash.h>

#include "common/sn_log.h"

#define SN_NO_TENSOR UINT32_MAX

struct sn_trace_algos {
    uint64_t conf;
    int n;                   /* -1: being measured */
    sn_trace_algo *a;
    UT_hash_handle hh;
};

void sn_trace_init(sn_trace *t, int dev)
{
    memset(t, 0, sizeof *t);
    t->dev = dev;
    t->state = SN_TRACE_RECORDING;
    t->max_bytes = SN_TRACE_MAX_BYTES;
    t->free_tensor = SN_NO_TENSOR;
}

/* The arrays of the log grow to hundreds of megabytes on long runs: they
 * are mapped directly and grown with mremap, which moves pages instead of
 * copying them and never holds the old and the new copy at once. */
static size_t sn_map_bytes(size_t cap, size_t elem)
{
    size_t page = 4096;
    return (cap * elem + page - 1) / page * page;
}

static void sn_unmap(void *p, size_t cap, size_t elem)
{
    if (p)
        munmap(p, sn_map_bytes(cap, elem));
}

void sn_trace_destroy(sn_trace *t)
{
    sn_unmap(t->tensors, t->cap_tensors, sizeof *t->tensors);
    sn_unmap(t->calls, t->cap_calls, sizeof *t->calls);
    sn_unmap(t->acc, t->cap_acc, sizeof *t->acc);
    sn_unmap(t->shapes, t->cap_shapes, sizeof *t->shapes);
    sn_cursor_destroy(&t->cursor);
    sn_trace_algos *e, *tmp;
    HASH_ITER(hh, t->algos, e, tmp) {
        HASH_DEL(t->algos, e);
        free(e->a);
        free(e);
    }
    memset(t, 0, sizeof *t);
}

int sn_trace_algos_claim(sn_trace *t, uint64_t conf)
{
    if (!conf || t->state != SN_TRACE_RECORDING)
        return 0;
    sn_trace_algos *e;
    HASH_FIND(hh, t->algos, &conf, sizeof conf, e);
    if (e || !(e = calloc(1, sizeof *e)))
        return 0;
    e->conf = conf;
    e->n = -1;
    HASH_ADD(hh, t->algos, conf, sizeof e->conf, e);
    return 1;
}

void sn_trace_algos_put(sn_trace *t, uint64_t conf, const sn_trace_algo *a, int n)
{
    sn_trace_algos *e;
    HASH_FIND(hh, t->algos, &conf, sizeof conf, e);
    if (n < 0) {
        if (e && e->n < 0) {
            HASH_DEL(t->algos, e);
            free(e->a);
            free(e);
        }
        return;
    }
    if (!e) {
        if (!(e = calloc(1, sizeof *e)))
            return;
        e->conf = conf;
        HASH_ADD(hh, t->algos, conf, sizeof e->conf, e);
    } else if (e->n >= 0) {
        return; /* measured already: the first measurement stands */
    }
    e->a = n ? malloc((size_t)n * sizeof *e->a) : NULL;
    e->n = e->a ? n : 0;
    if (e->a)
        memcpy(e->a, a, (size_t)n * sizeof *a);
    t->nconf++;
}

const sn_trace_algo *sn_trace_algos_get(const sn_trace *t, uint64_t conf, int *n)
{
    sn_trace_algos *e = NULL;
    *n = 0;
    if (conf)
        HASH_FIND(hh, t->algos, &conf, sizeof conf, e);
    if (!e || e->n <= 0)
        return NULL;
    *n = e->n;
    return e->a;
}

static int sn_grow_mapped(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 1024;
    while (c < need)
        c *= 2;
    void *q = *p ? mremap(*p, sn_map_bytes(*cap, elem), sn_map_bytes(c, elem), MREMAP_MAYMOVE)
                 : mmap(NULL, sn_map_bytes(c, elem), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q == MAP_FAILED)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

size_t sn_trace_log_bytes(const sn_trace *t)
{
    return t->ncalls * sizeof *t->calls + t->nacc * sizeof *t->acc + t->nshapes * sizeof *t->shapes +
           t->recorded_tensors * sizeof *t->tensors;
}

/* The log would pass max_bytes: stop recording, once, and say so. While
 * learning anew, the iteration learned last is kept (and no re-learning
 * is tried again). */
static int sn_trace_over_cap(sn_trace *t, size_t more)
{
    if (sn_trace_log_bytes(t) + more <= t->max_bytes)
        return 0;
    if (t->relearning) {
        sn_info("device %d: the call log reached %.1f MiB before the new iteration was learned; the one "
                "learned before is followed again, and no iteration is learned anew from now on",
                t->dev, (double)t->max_bytes / 1048576.0);
        sn_trace_relearn_abandon(t);
        t->relearn_iters = 0;
        return 1;
    }
    t->state = SN_TRACE_FULL;
    sn_warn("device %d: the call log reached %.1f MiB before a training iteration repeated; recording "
            "stops after %zu calls (the report's tables cover those, its totals the whole run)",
            t->dev, (double)t->max_bytes / 1048576.0, t->ncalls);
    return 1;
}

void sn_trace_tensor_key(sn_trace *t, uint32_t tensor, uint64_t base, const void *key)
{
    if (tensor < t->ntensors && !t->tensors[tensor].freed && t->tensors[tensor].base == base)
        t->tensors[tensor].lib_key = key;
}

uint32_t sn_trace_alloc(sn_trace *t, uint64_t base, uint64_t bytes, int kind, int owner, uint64_t site)
{
    if (owner >= 0 && owner < SN_OWNER_COUNT) {
        t->run.alloc_count[owner]++;
        t->run.alloc_bytes[owner] += bytes;
    }
    if (t->state == SN_TRACE_RECORDING)
        sn_trace_over_cap(t, sizeof *t->tensors);
    uint32_t id;
    if (t->state != SN_TRACE_RECORDING && t->free_tensor != SN_NO_TENSOR) {
        id = t->free_tensor;
        t->free_tensor = t->tensors[id].next_free;
    } else {
        if (t->ntensors >= SN_NO_TENSOR - 1 ||
            sn_grow_mapped((void **)&t->tensors, &t->cap_tensors, t->ntensors + 1, sizeof *t->tensors))
            return SN_NO_TENSOR;
        id = (uint32_t)t->ntensors++;
        if (t->state == SN_TRACE_RECORDING)
            t->recorded_tensors = t->ntensors;
    }
    sn_trace_tensor *x = &t->tensors[id];
    x->base = base;
    x->bytes = bytes;
    x->kind = kind;
    x->owner = owner;
    x->site = site;
    x->lib_key = NULL;
    x->alloc_call = t->ncalls;
    x->free_call = SN_NO_CALL;
    x->freed = 0;
    x->next_free = SN_NO_TENSOR;
    if (sn_trace_counts_memory(kind)) {
        t->live_bytes += bytes;
        if (t->live_bytes > t->peak_bytes)
            t->peak_bytes = t->live_bytes;
    }
    return id;
}

void sn_trace_release(sn_trace *t, uint32_t tensor)
{
    if (tensor >= t->ntensors)
        return;
    sn_trace_tensor *x = &t->tensors[tensor];
    if (x->freed)
        return;
    x->freed = 1;
    x->free_call = t->ncalls;
    if (sn_trace_counts_memory(x->kind))
        t->live_bytes -= x->bytes;
    /* The log never names a live-only record: it can serve the next
     * allocation. */
    if (tensor >= t->recorded_tensors) {
        x->next_free = t->free_tensor;
        t->free_tensor = tensor;
    }
}

uint64_t sn_trace_signature(const sn_call *c)
{
    uint64_t h = sn_hash_mix(0, ((uint64_t)c->op << 16) | (uint64_t)c->hook);
    return sn_hash_mix(sn_hash_mix(h, c->shape_hash), c->params);
}

int sn_trace_follow(sn_trace *t, const uint64_t *sig, size_t period, size_t pos, int synced,
                    uint64_t iterations)
{
    sn_cursor fresh;
    if (t->state != SN_TRACE_RECORDING || sn_cursor_init(&fresh, sig, period, pos, synced) != 0)
        return -1;
    sn_cursor_destroy(&t->cursor);
    t->cursor = fresh;
    t->state = SN_TRACE_FOLLOWING;
    t->recorded_tensors = t->ntensors;
    if (t->relearning) {
        /* the run's count goes on: the iterations of the new recording */
        t->relearning = 0;
        t->relearned++;
        t->run.iterations += iterations;
    } else {
        t->run.iterations = iterations;
    }
    return 0;
}

/* The run has been off the learned iteration for relearn_iters
 * iterations' worth of steps: recording again, from the next call. The
 * records made while following (live-only) join the log as allocated
 * before it resumes; the free list of such records is forgotten (they are
 * the log's now, and never recycled). */
static void sn_trace_relearn_begin(sn_trace *t)
{
    t->prev_log_begin = t->log_begin;
    t->log_begin = t->ncalls;
    t->relearn_acc = t->nacc;
    t->relearn_shapes = t->nshapes;
    t->relearn_tensors = t->recorded_tensors;
    for (size_t i = t->recorded_tensors; i < t->ntensors; i++) {
        sn_trace_tensor *x = &t->tensors[i];
        x->alloc_call = t->ncalls;
        if (x->freed)
            x->free_call = t->ncalls;
        x->next_free = SN_NO_TENSOR;
    }
    t->free_tensor = SN_NO_TENSOR;
    t->recorded_tensors = t->ntensors;
    t->state = SN_TRACE_RECORDING;
    t->relearning = 1;
    t->relearn_begun++;
    t->events |= SN_TRACE_EV_RELEARN;
    sn_info("device %d: %llu steps without a complete iteration of the learned one: learning the "
            "iteration anew", t->dev, (unsigned long long)t->cursor.since_done);
}

void sn_trace_relearn_abandon(sn_trace *t)
{
    if (!t->relearning)
        return;
    t->ncalls = t->log_begin;
    t->nacc = t->relearn_acc;
    t->nshapes = t->relearn_shapes;
    t->log_begin = t->prev_log_begin;
    /* records made since serve only to account live memory again */
    t->recorded_tensors = t->relearn_tensors;
    t->free_tensor = SN_NO_TENSOR;
    for (size_t i = t->recorded_tensors; i < t->ntensors; i++)
        if (t->tensors[i].freed) {
            t->tensors[i].next_free = t->free_tensor;
            t->free_tensor = (uint32_t)i;
        }
    t->state = SN_TRACE_FOLLOWING;
    t->relearning = 0;
    t->events |= SN_TRACE_EV_RETURNED;
}

int64_t sn_trace_call_add(sn_trace *t, const sn_call *c, unsigned flags, const sn_trace_access *acc,
                          int nacc)
{
    t->run.calls++;
    t->run.steps += (flags & SN_TC_STEP) != 0;
    t->run.transfers += (flags & SN_TC_TRANSFER) != 0;
    t->run.opaque += (flags & SN_TC_OPAQUE) != 0;
    if (__builtin_expect(t->state == SN_TRACE_FOLLOWING, 1)) {
        if (flags & SN_TC_STEP) {
            int done;
            long at = sn_cursor_step(&t->cursor, sn_trace_signature(c), &done);
            t->run.iterations += (uint64_t)done;
            t->run.off_sequence += at < 0;
            t->run.position = at >= 0 ? 2 * (int64_t)at : -1;
            if (at < 0 && t->relearn_iters && t->cursor.since_done >= t->relearn_iters * t->cursor.period)
                sn_trace_relearn_begin(t);
        } else {
            t->run.position = t->cursor.synced ? 2 * (int64_t)t->cursor.pos + 1 : -1;
        }
        return SN_TRACE_UNRECORDED;
    }
    t->run.position = -1;
    if (t->relearning && (flags & SN_TC_STEP)) {
        /* the learned iteration, followed underneath: a whole one of it
         * means the departure is over */
        int done;
        long at = sn_cursor_step(&t->cursor, sn_trace_signature(c), &done);
        t->run.off_sequence += at < 0;
        if (done) {
            t->run.iterations++;
            sn_info("device %d: the learned iteration is back; learning it anew is given up", t->dev);
            sn_trace_relearn_abandon(t);
            return SN_TRACE_UNRECORDED;
        }
    }
    int nshapes = c->nshapes;
    if (t->state != SN_TRACE_RECORDING ||
        sn_trace_over_cap(t, sizeof *t->calls + (size_t)nacc * sizeof *t->acc +
                                 (size_t)nshapes * sizeof *t->shapes))
        return SN_TRACE_UNRECORDED;
    if (__builtin_expect(t->ncalls >= t->cap_calls || t->nacc + (size_t)nacc > t->cap_acc ||
                             t->nshapes + (size_t)nshapes > t->cap_shapes,
                         0) &&
        (sn_grow_mapped((void **)&t->calls, &t->cap_calls, t->ncalls + 1, sizeof *t->calls) ||
         sn_grow_mapped((void **)&t->acc, &t->cap_acc, t->nacc + (size_t)nacc, sizeof *t->acc) ||
         sn_grow_mapped((void **)&t->shapes, &t->cap_shapes, t->nshapes + (size_t)nshapes,
                        sizeof *t->shapes)))
        return SN_TRACE_UNRECORDED;
    sn_trace_call *e = &t->calls[t->ncalls];
    *e = (sn_trace_call){
        .op = (uint16_t)c->op,
        .hook = (uint16_t)c->hook,
        .flags = (uint8_t)flags,
        .nshapes = (uint8_t)nshapes,
        .nacc = (uint16_t)nacc,
        .acc_begin = (uint32_t)t->nacc,
        .shape_begin = (uint32_t)t->nshapes,
        .algo = c->algo,
        .sig = sn_trace_signature(c),
        .conf = c->conf,
        .workspace = c->workspace,
        .live_bytes = t->live_bytes,
        .stream = c->stream,
        .lib_key = c->lib_memory ? c->lib_handle : NULL,
        .start_ms = -1,
        .dur_ms = -1,
    };
    /* a handful of entries each: plain loops beat calls to memcpy */
    sn_trace_access *a = &t->acc[t->nacc];
    for (int i = 0; i < nacc; i++)
        a[i] = acc[i];
    t->nacc += (size_t)nacc;
    sn_shape *sh = &t->shapes[t->nshapes];
    for (int i = 0; i < nshapes; i++)
        sh[i] = c->shape[i];
    t->nshapes += (size_t)nshapes;
    return (int64_t)t->ncalls++;
}

void sn_trace_call_failed(sn_trace *t, int64_t index, unsigned flags)
{
    if (index < 0 && index != SN_TRACE_UNRECORDED)
        return;
    t->run.failed++;
    t->run.steps -= (flags & SN_TC_STEP) != 0;
    t->run.transfers -= (flags & SN_TC_TRANSFER) != 0;
    if (index >= 0 && (size_t)index < t->ncalls)
        t->calls[index].flags |= SN_TC_FAILED;
}

void sn_trace_call_time(sn_trace *t, int64_t index, double start_ms, double dur_ms)
{
    if (index < 0 || (size_t)index >= t->ncalls)
        return;
    t->calls[index].start_ms = start_ms;
    t->calls[index].dur_ms = dur_ms;
    t->calls[index].flags |= SN_TC_TIMED;
}

int sn_trace_has_backward(const sn_trace *t, size_t from, size_t to)
{
    static const char phase[SN_OP_COUNT] = {
#define SN_OP(id, name, ph, layer) [SN_OP_##id] = #ph[0],
#include "common/sn_ops.def"
#undef SN_OP
    };
    /* the steps are the most recent ones: walk back from the end */
    size_t step = 0, total = 0;
    int seen_f = 0, seen_b = 0;
    for (size_t i = t->log_begin; i < t->ncalls; i++)
        total += (t->calls[i].flags & SN_TC_STEP) != 0;
    for (size_t i = t->ncalls; i-- > t->log_begin;) {
        if (!(t->calls[i].flags & SN_TC_STEP))
            continue;
        size_t k = total - 1 - step++;
        if (k < from)
            break;
        if (k < to && phase[t->calls[i].op] == 'B')
            seen_b = 1;
        if (k < to && phase[t->calls[i].op] == 'F')
            seen_f = 1;
    }
    return seen_f && seen_b;
}

int sn_trace_profile_ready(const sn_trace *t, const uint64_t *sig, size_t n, const sn_period *per)
{
    if (!per->found || per->period == 0 || per->end < per->period || per->end > n)
        return 0;
    for (size_t i = per->end; i < n; i++)
        if (sig[i] != sig[i - per->period])
            return 0;
    return sn_trace_has_backward(t, per->end - per->period, per->end);
}
