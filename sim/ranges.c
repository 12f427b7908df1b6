/*
 * ranges.c — sorted-array bookkeeping of address ranges for the simulated
 * driver: free segments (a first-fit allocator that coalesces on free) and
 * live extents (interior-pointer lookup by binary search). Arrays rather than
 * trees because a device holds at most some tens of thousands of ranges and
 * lookups dominate.
 */
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "sim/simint.h"

static void *grow(void *v, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return v;
    size_t nc = *cap ? *cap * 2 : 64;
    while (nc < need)
        nc *= 2;
    void *nv = realloc(v, nc * elem);
    if (!nv)
        abort();
    *cap = nc;
    return nv;
}

void sim_rangeset_init(struct sim_rangeset *rs, uintptr_t base, size_t size)
{
    rs->n = 0;
    rs->v = grow(rs->v, &rs->cap, 1, sizeof *rs->v);
    rs->v[0] = (struct sim_range){base, size};
    rs->n = 1;
}

static void rs_insert_at(struct sim_rangeset *rs, size_t i, uintptr_t base, size_t size)
{
    /* Free segments never overlap: a double free would break that. */
    SIM_ASSERT(i == 0 || rs->v[i - 1].base + rs->v[i - 1].size <= base);
    SIM_ASSERT(i == rs->n || base + size <= rs->v[i].base);
    rs->v = grow(rs->v, &rs->cap, rs->n + 1, sizeof *rs->v);
    memmove(&rs->v[i + 1], &rs->v[i], (rs->n - i) * sizeof *rs->v);
    rs->v[i] = (struct sim_range){base, size};
    rs->n++;
}

static void rs_remove_at(struct sim_rangeset *rs, size_t i)
{
    memmove(&rs->v[i], &rs->v[i + 1], (rs->n - i - 1) * sizeof *rs->v);
    rs->n--;
}

/* Removes [a, a+size) from free segment i, which must contain it. */
static void rs_carve(struct sim_rangeset *rs, size_t i, uintptr_t a, size_t size)
{
    struct sim_range r = rs->v[i];
    uintptr_t end = r.base + r.size;
    rs_remove_at(rs, i);
    if (a + size < end)
        rs_insert_at(rs, i, a + size, end - (a + size));
    if (a > r.base)
        rs_insert_at(rs, i, r.base, a - r.base);
}

/* Segments never start at 0, so 0 can mean "no room". */
uintptr_t sim_rangeset_alloc(struct sim_rangeset *rs, size_t size, size_t align)
{
    for (size_t i = 0; i < rs->n; i++) {
        uintptr_t a = (rs->v[i].base + align - 1) / align * align;
        if (a + size >= a && a + size <= rs->v[i].base + rs->v[i].size) {
            rs_carve(rs, i, a, size);
            return a;
        }
    }
    return 0;
}

int sim_rangeset_take(struct sim_rangeset *rs, uintptr_t base, size_t size)
{
    for (size_t i = 0; i < rs->n; i++)
        if (base >= rs->v[i].base && base + size <= rs->v[i].base + rs->v[i].size) {
            rs_carve(rs, i, base, size);
            return 0;
        }
    return -1;
}

void sim_rangeset_free(struct sim_rangeset *rs, uintptr_t base, size_t size)
{
    size_t lo = 0, hi = rs->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (rs->v[mid].base < base)
            lo = mid + 1;
        else
            hi = mid;
    }
    rs_insert_at(rs, lo, base, size);
    if (lo + 1 < rs->n && rs->v[lo].base + rs->v[lo].size == rs->v[lo + 1].base) {
        rs->v[lo].size += rs->v[lo + 1].size;
        rs_remove_at(rs, lo + 1);
    }
    if (lo > 0 && rs->v[lo - 1].base + rs->v[lo - 1].size == rs->v[lo].base) {
        rs->v[lo - 1].size += rs->v[lo].size;
        rs_remove_at(rs, lo);
    }
}

int sim_rangeset_containing(const struct sim_rangeset *rs, uintptr_t a, uintptr_t *base, size_t *size)
{
    for (size_t i = 0; i < rs->n; i++)
        if (a >= rs->v[i].base && a < rs->v[i].base + rs->v[i].size) {
            *base = rs->v[i].base;
            *size = rs->v[i].size;
            return 1;
        }
    return 0;
}

static size_t ext_lower_bound(const struct sim_extset *s, uintptr_t a)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->v[mid].base <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo; /* first index with base > a */
}

struct sim_extent *sim_extset_find(const struct sim_extset *s, uintptr_t a)
{
    size_t i = ext_lower_bound(s, a);
    if (i == 0)
        return NULL;
    struct sim_extent *e = &s->v[i - 1];
    return (a < e->base + e->size) ? e : NULL;
}

void sim_extset_insert(struct sim_extset *s, uintptr_t base, size_t size, int kind, int prot, void *data)
{
    size_t i = ext_lower_bound(s, base);
    SIM_ASSERT(i == 0 || s->v[i - 1].base + s->v[i - 1].size <= base);
    SIM_ASSERT(i == s->n || base + size <= s->v[i].base);
    s->v = grow(s->v, &s->cap, s->n + 1, sizeof *s->v);
    memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof *s->v);
    s->v[i] = (struct sim_extent){base, size, kind, prot, data};
    s->n++;
}

void sim_extset_remove(struct sim_extset *s, uintptr_t base)
{
    size_t i = ext_lower_bound(s, base);
    if (i == 0 || s->v[i - 1].base != base)
        return;
    i--;
    memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof *s->v);
    s->n--;
}

struct sim_handle { const void *key; UT_hash_handle hh; };

void sim_handle_add(struct sim_handle **set, const void *p)
{
    struct sim_handle *h = calloc(1, sizeof *h);
    if (!h)
        abort();
    h->key = p;
    HASH_ADD_PTR(*set, key, h);
}

int sim_handle_has(struct sim_handle **set, const void *p)
{
    struct sim_handle *h;
    HASH_FIND_PTR(*set, &p, h);
    return h != NULL;
}

int sim_handle_del(struct sim_handle **set, const void *p)
{
    struct sim_handle *h;
    HASH_FIND_PTR(*set, &p, h);
    if (!h)
        return -1;
    HASH_DEL(*set, h);
    free(h);
    return 0;
}
