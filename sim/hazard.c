/*
 * hazard.c — ordering checks: an op must not read bytes whose last write has
 * not completed when the op starts, nor write bytes an earlier op is still
 * reading or writing.
 *
 * The simulator does every op's work the moment it is issued, so a missing
 * dependency (a prefetch on a copy stream without cudaStreamWaitEvent before
 * the layer that reads it, an offload still reading a buffer the next layer
 * overwrites) would compute the right numbers here and wrong ones on a GPU.
 * These checks make such bugs fail here too. They work on simulated time:
 * each library declares the device ranges of an op with simgpu_check_range
 * before charging it with simgpu_enqueue; once the op's start and end are
 * known, every declared range is compared with the completion times recorded
 * for the bytes it covers, then those times are updated. Per-device state is
 * a sorted array of disjoint byte intervals; intervals whose accesses ended
 * before the host clock can no longer conflict with anything and are pruned.
 *
 * SIMGPU_HAZARDS=fatal (default) reports and kills the process with SIGSEGV
 * like an illegal address; warn reports only; off disables the checks.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "sim/simint.h"

struct pending { uintptr_t p; size_t bytes; int write; const char *what; };
static __thread struct pending *t_pend;
static __thread size_t t_npend, t_cappend;

/* The pending list of a thread is freed when the thread ends. */
static pthread_key_t g_pend_key;
static pthread_once_t g_pend_once = PTHREAD_ONCE_INIT;
static void pend_key_create(void) { pthread_key_create(&g_pend_key, free); }

void sim_hazard_note(const void *p, size_t bytes, int write, const char *what)
{
    if (!g_sim.hazards || bytes == 0)
        return;
    if (t_npend == t_cappend) {
        size_t nc = t_cappend ? t_cappend * 2 : 16;
        struct pending *np = realloc(t_pend, nc * sizeof *np);
        if (!np)
            return; /* losing a check is better than failing the op */
        t_pend = np;
        t_cappend = nc;
        pthread_once(&g_pend_once, pend_key_create);
        pthread_setspecific(g_pend_key, np);
    }
    t_pend[t_npend++] = (struct pending){(uintptr_t)p, bytes, write, what};
}

static void hz_grow(struct sim_hzset *s, size_t need)
{
    if (need <= s->cap)
        return;
    size_t nc = s->cap ? s->cap * 2 : 64;
    while (nc < need)
        nc *= 2;
    struct sim_hz *nv = realloc(s->v, nc * sizeof *nv);
    if (!nv)
        abort();
    s->v = nv;
    s->cap = nc;
}

static void hz_insert(struct sim_hzset *s, size_t i, struct sim_hz h)
{
    SIM_ASSERT(h.size > 0);
    SIM_ASSERT(i == 0 || s->v[i - 1].base + s->v[i - 1].size <= h.base);
    SIM_ASSERT(i == s->n || h.base + h.size <= s->v[i].base);
    hz_grow(s, s->n + 1);
    if (i < s->n)
        memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof *s->v);
    s->v[i] = h;
    s->n++;
}

/* First interval that ends after a. */
static size_t hz_first(const struct sim_hzset *s, uintptr_t a)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->v[mid].base + s->v[mid].size <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Splits the interval containing a (if any) so that one starts at a. */
static void hz_split(struct sim_hzset *s, uintptr_t a)
{
    size_t i = hz_first(s, a);
    if (i < s->n && s->v[i].base < a) {
        struct sim_hz tail = s->v[i];
        tail.size = s->v[i].base + s->v[i].size - a;
        tail.base = a;
        s->v[i].size = a - s->v[i].base;
        hz_insert(s, i + 1, tail);
    }
}

/* SIMGPU_HAZARDS=fatal: the process ends as an illegal address ends it. */
static void hz_fatal(void)
{
    if (g_sim.hazards >= 2) {
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
        abort();
    }
}

/* cuMemUnmap of [base, base + size) at the host's present: the real driver
 * does not wait for work still using the range (PyTorch's expandable
 * segments synchronise their stream before unmapping for that reason, and
 * a manager unmapping a block a queued kernel still reads faulted on an
 * H200 with "unspecified launch failure"). Work that completes after the
 * host's present is in flight, and on a GPU it would touch an unmapped
 * range: reported like an illegal address. */
void sim_hazard_unmap_locked(struct simgpu_device *d, uintptr_t base, size_t size)
{
    if (!g_sim.hazards)
        return;
    const struct sim_hzset *s = &d->hz;
    uint64_t now = g_sim.host_now;
    for (size_t i = hz_first(s, base); i < s->n && s->v[i].base < base + size; i++) {
        uint64_t end = s->v[i].w_end > s->v[i].r_end ? s->v[i].w_end : s->v[i].r_end;
        if (end <= now)
            continue;
        simgpu_log("illegal address: cuMemUnmap of [%p, +%zu) at %.6f ms, but work that %s [%p, +%zu) "
                   "completes at %.6f ms (the driver does not wait for it: synchronise with that work "
                   "before unmapping)",
                   (void *)base, size, now / 1e6, s->v[i].w_end > now ? "writes" : "reads",
                   (void *)s->v[i].base, s->v[i].size, end / 1e6);
        hz_fatal();
        break;
    }
}

void sim_hazard_forget_locked(struct simgpu_device *d, uintptr_t base, size_t size)
{
    struct sim_hzset *s = &d->hz;
    hz_split(s, base);
    hz_split(s, base + size);
    size_t i = hz_first(s, base), j = i;
    while (j < s->n && s->v[j].base < base + size)
        j++;
    if (j > i) {
        memmove(&s->v[i], &s->v[j], (s->n - j) * sizeof *s->v);
        s->n -= j - i;
    }
}

static void hz_prune(struct sim_hzset *s, uint64_t now)
{
    size_t o = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].w_end > now || s->v[i].r_end > now)
            s->v[o++] = s->v[i];
    s->n = o;
}

static void report(const char *op, const struct pending *a, const struct sim_hz *h, uint64_t start, int war)
{
    simgpu_log("ordering hazard: %s %s %s [%p, +%zu) starting at %.6f ms, but %s of [%p, +%zu) "
               "completes at %.6f ms (missing stream or event dependency)",
               op ? op : "an op", a->write ? "writes" : "reads", a->what ? a->what : "", (void *)a->p, a->bytes,
               start / 1e6, war ? "an earlier read" : "an earlier write", (void *)h->base, h->size,
               (war ? h->r_end : h->w_end) / 1e6);
    hz_fatal();
}

/* Checks one access of an op starting at start against earlier ops. */
static void hz_check(struct simgpu_device *d, const char *op, const struct pending *a, uint64_t start)
{
    struct sim_hzset *s = &d->hz;
    uintptr_t lo = a->p, hi = a->p + a->bytes;
    for (size_t i = hz_first(s, lo); i < s->n && s->v[i].base < hi; i++) {
        if (s->v[i].w_end > start) {
            report(op, a, &s->v[i], start, 0);
            break;
        }
        if (a->write && s->v[i].r_end > start) {
            report(op, a, &s->v[i], start, 1);
            break;
        }
    }
}

/* Records one access over [start, end). */
static void hz_apply(struct simgpu_device *d, const struct pending *a, uint64_t end)
{
    struct sim_hzset *s = &d->hz;
    uintptr_t lo = a->p, hi = a->p + a->bytes;
    hz_split(s, lo);
    hz_split(s, hi);
    /* Walk [lo, hi): update covered intervals, fill the gaps. */
    size_t i = hz_first(s, lo);
    uintptr_t cur = lo;
    while (cur < hi) {
        if (i < s->n && s->v[i].base == cur) {
            if (a->write)
                s->v[i].w_end = end;
            else if (end > s->v[i].r_end)
                s->v[i].r_end = end;
            cur += s->v[i].size;
            i++;
        } else {
            uintptr_t gap_end = (i < s->n && s->v[i].base < hi) ? s->v[i].base : hi;
            struct sim_hz h = {cur, gap_end - cur, a->write ? end : 0, a->write ? 0 : end};
            hz_insert(s, i, h);
            i++;
            cur = gap_end;
        }
    }
}

void sim_hazard_commit_locked(const char *op, uint64_t start, uint64_t end)
{
    if (!g_sim.hazards) {
        t_npend = 0;
        return;
    }
    /* All of the op's accesses are checked before any is recorded: an op may
     * read and write the same bytes (in-place operations). */
    for (size_t k = 0; k < t_npend; k++) {
        struct simgpu_device *d = sim_device_of_locked(t_pend[k].p);
        if (d)
            hz_check(d, op, &t_pend[k], start);
    }
    for (size_t k = 0; k < t_npend; k++) {
        struct simgpu_device *d = sim_device_of_locked(t_pend[k].p);
        if (!d)
            continue;
        if (d->hz.n > 4096)
            hz_prune(&d->hz, g_sim.host_now);
        hz_apply(d, &t_pend[k], end);
    }
    t_npend = 0;
}
