/*
 * sn_stage.c — pinned host slabs for non-resident contents (sn_stage.h).
 *
 * Slabs are 64 MiB or the copy's size if larger, pinned with the real
 * cudaHostAlloc (portable, so any device's copy engine can use them).
 * Inside a slab, copies are placed first fit in a sorted list of holes;
 * blocks come in few sizes, so holes are reused exactly most of the time.
 */
#include "allocator/sn_stage.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/sn_array.h"
#include "common/sn_hooks.h"
#include "common/sn_log.h"
#include "common/sn_options.h"

#define SN_STAGE_SLAB (64ULL << 20)
#define SN_STAGE_ALIGN 4096ULL

static uint64_t sn_stage_round(uint64_t v)
{
    return (v + SN_STAGE_ALIGN - 1) / SN_STAGE_ALIGN * SN_STAGE_ALIGN;
}

void sn_stage_init(sn_stage *s)
{
    memset(s, 0, sizeof *s);
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    uint64_t ram = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : (8ULL << 30);
    const sn_size_opt *o = &sn_opt.host_limit;
    if (o->kind == SN_SIZE_BYTES)
        s->limit = o->bytes;
    else if (o->kind == SN_SIZE_PERCENT)
        s->limit = (uint64_t)((double)ram * o->percent / 100.0);
    else
        s->limit = ram / 2;
}

int sn_stage_reserve_locked(sn_stage *s, uint64_t size)
{
    size = sn_stage_round(size);
    if (s->reserved + size > s->limit)
        return -1;
    s->reserved += size;
    if (s->reserved > s->peak)
        s->peak = s->reserved;
    return 0;
}

void sn_stage_unreserve_locked(sn_stage *s, uint64_t size)
{
    size = sn_stage_round(size);
    s->reserved = s->reserved >= size ? s->reserved - size : 0;
}

int sn_stage_slab_take(sn_stage_slab *sl, uint64_t size, uint64_t *off)
{
    size = sn_stage_round(size);
    for (size_t i = 0; i < sl->nholes; i++) {
        sn_stage_hole *h = &sl->holes[i];
        if (h->len < size)
            continue;
        *off = h->off;
        h->off += size;
        h->len -= size;
        if (!h->len) {
            memmove(h, h + 1, (sl->nholes - i - 1) * sizeof *h);
            sl->nholes--;
        }
        return 0;
    }
    return -1;
}

int sn_stage_slab_give(sn_stage_slab *sl, uint64_t off, uint64_t size)
{
    size = sn_stage_round(size);
    size_t i = 0;
    while (i < sl->nholes && sl->holes[i].off < off)
        i++;
    int left = i > 0 && sl->holes[i - 1].off + sl->holes[i - 1].len == off;
    int right = i < sl->nholes && off + size == sl->holes[i].off;
    if (left && right) {
        sl->holes[i - 1].len += size + sl->holes[i].len;
        memmove(&sl->holes[i], &sl->holes[i + 1], (sl->nholes - i - 1) * sizeof sl->holes[0]);
        sl->nholes--;
    } else if (left) {
        sl->holes[i - 1].len += size;
    } else if (right) {
        sl->holes[i].off = off;
        sl->holes[i].len += size;
    } else {
        if (sn_array_room(&sl->holes, sl->nholes, &sl->cap_holes, sizeof *sl->holes, 8) != 0)
            return -1;  /* the range is lost to this run, not corrupted */
        memmove(&sl->holes[i + 1], &sl->holes[i], (sl->nholes - i) * sizeof sl->holes[0]);
        sl->holes[i] = (sn_stage_hole){off, size};
        sl->nholes++;
    }
    return 0;
}

void *sn_stage_take_locked(sn_stage *s, uint64_t size)
{
    for (size_t i = 0; i < s->nslabs; i++) {
        uint64_t off;
        if (sn_stage_slab_take(&s->slabs[i], size, &off) == 0)
            return s->slabs[i].base + off;
    }
    return NULL;
}

void *sn_stage_grow(sn_stage *s, sn_lock *lock, uint64_t size)
{
    uint64_t bytes = sn_stage_round(size) > SN_STAGE_SLAB ? sn_stage_round(size) : SN_STAGE_SLAB;
    void *p = NULL;
    sn_real_cudaHostAlloc_fn halloc = SN_REAL(cudaHostAlloc);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cudaError_t rc = halloc ? halloc(&p, bytes, cudaHostAllocPortable) : cudaErrorNotSupported;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rc != cudaSuccess || !p) {
        sn_real_cudaGetLastError_fn get = SN_REAL(cudaGetLastError);
        if (get)
            get();
        return NULL;
    }
    sn_lock_take(lock);
    void *out = NULL;
    int kept = sn_array_room(&s->slabs, s->nslabs, &s->cap_slabs, sizeof *s->slabs, 8) == 0;
    if (kept) {
        sn_stage_slab *sl = &s->slabs[s->nslabs++];
        memset(sl, 0, sizeof *sl);
        sl->base = p;
        sl->size = bytes;
        s->pinned += bytes;
        s->pin_ns += (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
        sn_stage_slab_give(sl, 0, bytes);
        uint64_t off;
        if (sn_stage_slab_take(sl, size, &off) == 0)
            out = sl->base + off;
    }
    sn_lock_give(lock);
    if (!kept) {
        /* no record to keep it in: unpinned again rather than lost */
        sn_real_cudaFreeHost_fn fr = SN_REAL(cudaFreeHost);
        if (fr)
            fr(p);
    }
    return out;
}

void sn_stage_free_locked(sn_stage *s, void *p, uint64_t size)
{
    for (size_t i = 0; i < s->nslabs; i++) {
        sn_stage_slab *sl = &s->slabs[i];
        if ((char *)p >= sl->base && (char *)p < sl->base + sl->size) {
            sn_stage_slab_give(sl, (uint64_t)((char *)p - sl->base), size);
            break;
        }
    }
    sn_stage_unreserve_locked(s, size);
}
