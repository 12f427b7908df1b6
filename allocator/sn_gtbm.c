/*
 * sn_gtbm.c — GTBM, best-fit and first-fit placement over offsets (see
 * sn_gtbm.h for the layout).
 *
 * Each space keeps its free blocks in two treaps that share the nodes: one
 * by start address, whose nodes also carry the largest block size in their
 * subtree (so "lowest / highest block that fits, within a bound" is one
 * descent), and one by (size, start) for best fit. Every operation is
 * O(log n) in the number of free blocks, expected; a pool that fragments
 * into tens of thousands of holes stays fast. Live blocks are found by
 * offset in a uthash table.
 */
#include "allocator/sn_gtbm.h"

#include <stdlib.h>
#include <string.h>

/* Offsets are multiples of SN_GTBM_ALIGN, whose low bits carry nothing: one
 * multiply spreads them (uthash's default hash costs more than the lookup). */
static inline unsigned gtbm_key_hash(const void *key)
{
    uint64_t k;
    memcpy(&k, key, sizeof k);
    return (unsigned)(((k >> 8) * 0x9e3779b97f4a7c15ULL) >> 32);
}
#define HASH_FUNCTION(keyptr, keylen, hashv) ((void)(keylen), (hashv) = gtbm_key_hash(keyptr))
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

enum { BY_ADDR, BY_SIZE };
enum gtbm_side { SIDE_LOW, SIDE_HIGH, SIDE_INC };

typedef struct sn_gtbm_node {
    uint64_t start, size;
    uint64_t max; /* largest size in this node's by-address subtree */
    uint32_t prio;
    struct sn_gtbm_node *l[2], *r[2];
} node;

struct sn_gtbm_live {
    uint64_t off, size;
    enum gtbm_side side;
    UT_hash_handle hh;
};

static uint64_t align_up(uint64_t v)
{
    return (v + SN_GTBM_ALIGN - 1) & ~(uint64_t)(SN_GTBM_ALIGN - 1);
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/* ---- treaps ------------------------------------------------------------- */

static int key_before(const node *a, const node *b, int t)
{
    if (t == BY_SIZE && a->size != b->size)
        return a->size < b->size;
    return a->start < b->start;
}

static void fix(node *n, int t)
{
    if (t != BY_ADDR)
        return;
    uint64_t m = n->size;
    if (n->l[BY_ADDR])
        m = max_u64(m, n->l[BY_ADDR]->max);
    if (n->r[BY_ADDR])
        m = max_u64(m, n->r[BY_ADDR]->max);
    n->max = m;
}

/* Every key of a precedes every key of b. */
static node *merge(node *a, node *b, int t)
{
    if (!a)
        return b;
    if (!b)
        return a;
    if (a->prio > b->prio) {
        a->r[t] = merge(a->r[t], b, t);
        fix(a, t);
        return a;
    }
    b->l[t] = merge(a, b->l[t], t);
    fix(b, t);
    return b;
}

/* lo: the keys before key's; hi: the rest. */
static void split(node *n, const node *key, int t, node **lo, node **hi)
{
    if (!n) {
        *lo = *hi = NULL;
        return;
    }
    if (key_before(n, key, t)) {
        split(n->r[t], key, t, &n->r[t], hi);
        fix(n, t);
        *lo = n;
    } else {
        split(n->l[t], key, t, lo, &n->l[t]);
        fix(n, t);
        *hi = n;
    }
}

static node *tree_insert(node *n, node *x, int t)
{
    if (!n || x->prio > n->prio) {
        split(n, x, t, &x->l[t], &x->r[t]);
        fix(x, t);
        return x;
    }
    if (key_before(x, n, t))
        n->l[t] = tree_insert(n->l[t], x, t);
    else
        n->r[t] = tree_insert(n->r[t], x, t);
    fix(n, t);
    return n;
}

static node *tree_remove(node *n, const node *x, int t)
{
    if (n == x)
        return merge(n->l[t], n->r[t], t);
    if (key_before(x, n, t))
        n->l[t] = tree_remove(n->l[t], x, t);
    else
        n->r[t] = tree_remove(n->r[t], x, t);
    fix(n, t);
    return n;
}

/* The lowest block of at least need bytes that starts below bound. */
static node *lowest_fit(node *n, uint64_t need, uint64_t bound)
{
    if (!n || n->max < need)
        return NULL;
    node *f = lowest_fit(n->l[BY_ADDR], need, bound);
    if (f)
        return f;
    if (n->start >= bound)
        return NULL;
    if (n->size >= need)
        return n;
    return lowest_fit(n->r[BY_ADDR], need, bound);
}

/* The highest block of at least need bytes that starts above bound. */
static node *highest_fit(node *n, uint64_t need, uint64_t bound)
{
    if (!n || n->max < need)
        return NULL;
    node *f = highest_fit(n->r[BY_ADDR], need, bound);
    if (f)
        return f;
    if (n->start <= bound)
        return NULL;
    if (n->size >= need)
        return n;
    return highest_fit(n->l[BY_ADDR], need, bound);
}

/* The smallest block of at least need bytes, the lowest of equal ones. */
static node *best_fit(node *n, uint64_t need)
{
    node *best = NULL;
    while (n) {
        if (n->size >= need) {
            best = n;
            n = n->l[BY_SIZE];
        } else {
            n = n->r[BY_SIZE];
        }
    }
    return best;
}

static node *find_start(node *n, uint64_t start)
{
    while (n && n->start != start)
        n = start < n->start ? n->l[BY_ADDR] : n->r[BY_ADDR];
    return n;
}

/* The block with the largest start below x, and the one with the smallest
 * start above it. */
static node *pred(node *n, uint64_t x)
{
    node *p = NULL;
    while (n) {
        if (n->start < x) {
            p = n;
            n = n->r[BY_ADDR];
        } else {
            n = n->l[BY_ADDR];
        }
    }
    return p;
}

static node *succ(node *n, uint64_t x)
{
    node *s = NULL;
    while (n) {
        if (n->start > x) {
            s = n;
            n = n->l[BY_ADDR];
        } else {
            n = n->r[BY_ADDR];
        }
    }
    return s;
}

static node *last_node(node *n)
{
    while (n && n->r[BY_ADDR])
        n = n->r[BY_ADDR];
    return n;
}

/* The largest block starting below (above) bound. */
static uint64_t max_below(const node *n, uint64_t bound)
{
    uint64_t m = 0;
    while (n) {
        if (n->start < bound) {
            m = max_u64(m, n->size);
            if (n->l[BY_ADDR])
                m = max_u64(m, n->l[BY_ADDR]->max);
            n = n->r[BY_ADDR];
        } else {
            n = n->l[BY_ADDR];
        }
    }
    return m;
}

static uint64_t max_above(const node *n, uint64_t bound)
{
    uint64_t m = 0;
    while (n) {
        if (n->start > bound) {
            m = max_u64(m, n->size);
            if (n->r[BY_ADDR])
                m = max_u64(m, n->r[BY_ADDR]->max);
            n = n->l[BY_ADDR];
        } else {
            n = n->r[BY_ADDR];
        }
    }
    return m;
}

static void tree_free(node *n)
{
    if (!n)
        return;
    tree_free(n->l[BY_ADDR]);
    tree_free(n->r[BY_ADDR]);
    free(n);
}

/* ---- spaces ------------------------------------------------------------- */

/* Nodes come from the spare list, topped up before an operation starts so
 * that nothing fails halfway through a change. */
static int ensure_spares(sn_gtbm_pool *p, unsigned k)
{
    while (p->nspare < k) {
        node *n = malloc(sizeof *n);
        if (!n)
            return -1;
        n->l[BY_ADDR] = p->spare;
        p->spare = n;
        p->nspare++;
    }
    return 0;
}

static node *node_new(sn_gtbm_pool *p, uint64_t start, uint64_t size)
{
    node *n = p->spare;
    p->spare = n->l[BY_ADDR];
    p->nspare--;
    memset(n, 0, sizeof *n);
    n->start = start;
    n->size = size;
    n->max = size;
    /* xorshift64: treap priorities need only be independent of the keys */
    p->rng ^= p->rng << 13;
    p->rng ^= p->rng >> 7;
    p->rng ^= p->rng << 17;
    n->prio = (uint32_t)(p->rng >> 32);
    return n;
}

static void node_release(sn_gtbm_pool *p, node *n)
{
    n->l[BY_ADDR] = p->spare;
    p->spare = n;
    p->nspare++;
}

static void space_insert(sn_gtbm_space *s, node *n)
{
    n->l[BY_ADDR] = n->r[BY_ADDR] = n->l[BY_SIZE] = n->r[BY_SIZE] = NULL;
    n->max = n->size;
    s->by_addr = tree_insert(s->by_addr, n, BY_ADDR);
    s->by_size = tree_insert(s->by_size, n, BY_SIZE);
    s->nblocks++;
    s->bytes += n->size;
}

static void space_remove(sn_gtbm_space *s, node *n)
{
    s->by_addr = tree_remove(s->by_addr, n, BY_ADDR);
    s->by_size = tree_remove(s->by_size, n, BY_SIZE);
    s->nblocks--;
    s->bytes -= n->size;
}

/* Returns [start, start + size) to the space, merged with the free blocks
 * either side; *lo and *hi get the merged block's bounds. Needs one spare. */
static void space_give(sn_gtbm_pool *p, sn_gtbm_space *s, uint64_t start, uint64_t size,
                       uint64_t *lo, uint64_t *hi)
{
    uint64_t b = start, e = start + size;
    node *before = pred(s->by_addr, start);
    node *after = succ(s->by_addr, start);
    node *keep = NULL;
    if (before && before->start + before->size == b) {
        space_remove(s, before);
        b = before->start;
        keep = before;
    }
    if (after && after->start == e) {
        space_remove(s, after);
        e = after->start + after->size;
        if (keep)
            node_release(p, after);
        else
            keep = after;
    }
    if (!keep)
        keep = node_new(p, b, e - b);
    keep->start = b;
    keep->size = e - b;
    space_insert(s, keep);
    *lo = b;
    *hi = e;
}

/* Carves [at, at + need) out of free block n. Needs one spare. */
static void space_take(sn_gtbm_pool *p, sn_gtbm_space *s, node *n, uint64_t at, uint64_t need)
{
    uint64_t b = n->start, e = n->start + n->size;
    space_remove(s, n);
    int used = 0;
    if (at > b) {
        n->start = b;
        n->size = at - b;
        space_insert(s, n);
        used = 1;
    }
    if (at + need < e) {
        node *r = used ? node_new(p, at + need, e - at - need) : n;
        r->start = at + need;
        r->size = e - at - need;
        space_insert(s, r);
        used = 1;
    }
    if (!used)
        node_release(p, n);
}

/* ---- pool --------------------------------------------------------------- */

int sn_gtbm_init(sn_gtbm_pool *p, uint64_t capacity, enum sn_gtbm_policy policy)
{
    memset(p, 0, sizeof *p);
    capacity &= ~(uint64_t)(SN_GTBM_ALIGN - 1);
    if ((unsigned)policy >= SN_GTBM_POLICY_COUNT || capacity == 0 ||
        capacity > SN_GTBM_NONE / 4)
        return -1;
    p->capacity = capacity;
    p->policy = policy;
    p->high_bottom = capacity;
    p->rng = 0x9e3779b97f4a7c15ULL;
    if (ensure_spares(p, 1) != 0)
        return -1;
    space_insert(&p->main_free, node_new(p, 0, capacity));
    return 0;
}

void sn_gtbm_destroy(sn_gtbm_pool *p)
{
    struct sn_gtbm_live *e, *tmp;
    HASH_ITER(hh, p->live, e, tmp) {
        HASH_DEL(p->live, e);
        free(e);
    }
    tree_free(p->main_free.by_addr);
    tree_free(p->inc_free.by_addr);
    while (p->spare) {
        node *n = p->spare;
        p->spare = n->l[BY_ADDR];
        free(n);
    }
    memset(p, 0, sizeof *p);
}

static uint64_t extent(const sn_gtbm_pool *p)
{
    return p->low_top + (p->capacity - p->high_bottom) + p->inc_size;
}

/* Bytes the gap can still give to either end within the capacity. */
static uint64_t gap_room(const sn_gtbm_pool *p)
{
    return p->capacity - extent(p);
}

/* GTBM's incremental space: best fit, else grow at its top (merging with a
 * free block already there). */
static node *inc_place(sn_gtbm_pool *p, uint64_t need)
{
    node *n = best_fit(p->inc_free.by_size, need);
    if (n)
        return n;
    uint64_t top = p->capacity + p->inc_size;
    node *tail = last_node(p->inc_free.by_addr);
    uint64_t have = tail && tail->start + tail->size == top ? tail->size : 0;
    uint64_t grow = need - have;
    if (grow > gap_room(p))
        return NULL;
    p->inc_size += grow;
    uint64_t lo, hi;
    space_give(p, &p->inc_free, top, grow, &lo, &hi);
    return find_start(p->inc_free.by_addr, lo);
}

uint64_t sn_gtbm_alloc(sn_gtbm_pool *p, uint64_t size, enum sn_gtbm_class cls)
{
    if (size == 0 || size > p->capacity || (unsigned)cls >= SN_CLASS_COUNT) {
        p->nfailed++;
        return SN_GTBM_NONE;
    }
    uint64_t need = align_up(size);
    /* growing the incremental space may take one node, splitting a block
     * another */
    struct sn_gtbm_live *live = malloc(sizeof *live);
    if (!live || ensure_spares(p, 2) != 0) {
        free(live);
        p->nfailed++;
        return SN_GTBM_NONE;
    }

    sn_gtbm_space *space = &p->main_free;
    enum gtbm_side side = SIDE_LOW;
    node *n = NULL;
    uint64_t at = 0;
    switch (p->policy) {
    case SN_GTBM_POLICY_BEST_FIT:
        n = best_fit(p->main_free.by_size, need);
        at = n ? n->start : 0;
        break;
    case SN_GTBM_POLICY_FIRST_FIT:
        n = lowest_fit(p->main_free.by_addr, need, SN_GTBM_NONE);
        at = n ? n->start : 0;
        break;
    default:
        if (cls == SN_CLASS_LONG) {
            space = &p->inc_free;
            side = SIDE_INC;
            n = inc_place(p, need);
            at = n ? n->start : 0;
        } else if (cls == SN_CLASS_MOVABLE) {
            /* a hole among the low blocks, else the bottom of the gap */
            n = lowest_fit(p->main_free.by_addr, need, p->low_top);
            if (n) {
                at = n->start;
            } else if (gap_room(p) >= need) {
                n = find_start(p->main_free.by_addr, p->low_top);
                at = p->low_top;
            }
        } else {
            side = SIDE_HIGH;
            n = highest_fit(p->main_free.by_addr, need, p->low_top);
            if (n) {
                at = n->start + n->size - need;
            } else if (gap_room(p) >= need) {
                n = find_start(p->main_free.by_addr, p->low_top);
                at = p->high_bottom - need;
            }
        }
        break;
    }
    live->off = at;
    live->size = need;
    live->side = side;
    if (n)
        HASH_ADD(hh, p->live, off, sizeof live->off, live);
    if (!n || !live->hh.tbl) {
        /* an incremental space that grew keeps its size: it only grows */
        free(live);
        p->nfailed++;
        return SN_GTBM_NONE;
    }
    space_take(p, space, n, at, need);
    if (side == SIDE_LOW && at + need > p->low_top)
        p->low_top = at + need;
    if (side == SIDE_HIGH && at < p->high_bottom)
        p->high_bottom = at;
    p->live_bytes += need;
    p->live_count++;
    p->nallocs++;
    uint64_t x = extent(p);
    if (x > p->peak_extent) {
        p->peak_extent = x;
        p->frag_at_peak = x - p->live_bytes;
        p->live_at_peak = p->live_bytes;
    }
    return at;
}

int sn_gtbm_free(sn_gtbm_pool *p, uint64_t offset)
{
    struct sn_gtbm_live *live = NULL;
    HASH_FIND(hh, p->live, &offset, sizeof offset, live);
    if (!live || ensure_spares(p, 1) != 0)
        return -1;
    HASH_DEL(p->live, live);
    uint64_t lo, hi;
    if (live->side == SIDE_INC) {
        space_give(p, &p->inc_free, live->off, live->size, &lo, &hi);
    } else {
        space_give(p, &p->main_free, live->off, live->size, &lo, &hi);
        /* The merged block reaching the other side's boundary means nothing
         * of this side is left above (below) it. */
        if (live->side == SIDE_LOW && hi == p->high_bottom)
            p->low_top = lo;
        if (live->side == SIDE_HIGH && lo == p->low_top)
            p->high_bottom = hi;
    }
    p->live_bytes -= live->size;
    p->live_count--;
    p->nfrees++;
    free(live);
    return 0;
}

uint64_t sn_gtbm_size(const sn_gtbm_pool *p, uint64_t offset)
{
    struct sn_gtbm_live *live = NULL;
    HASH_FIND(hh, p->live, &offset, sizeof offset, live);
    return live ? live->size : 0;
}

void sn_gtbm_stats_get(const sn_gtbm_pool *p, sn_gtbm_stats *out)
{
    memset(out, 0, sizeof *out);
    out->capacity = p->capacity;
    out->live_bytes = p->live_bytes;
    out->live_count = p->live_count;
    out->extent = extent(p);
    out->peak_extent = p->peak_extent;
    out->frag_at_peak = p->frag_at_peak;
    out->live_at_peak = p->live_at_peak;
    out->free_in_extent = out->extent - p->live_bytes;
    out->incremental = p->inc_size;
    out->free_blocks = p->main_free.nblocks + p->inc_free.nblocks;
    out->nallocs = p->nallocs;
    out->nfrees = p->nfrees;
    out->nfailed = p->nfailed;
    uint64_t room = gap_room(p);
    /* holes on either side, and what the gap can give to either end */
    uint64_t largest = max_u64(max_below(p->main_free.by_addr, p->low_top),
                               max_above(p->main_free.by_addr, p->low_top));
    largest = max_u64(largest, room);
    if (p->policy == SN_GTBM_POLICY_GTBM) {
        const node *tail = last_node(p->inc_free.by_addr);
        uint64_t top = p->capacity + p->inc_size;
        uint64_t have = tail && tail->start + tail->size == top ? tail->size : 0;
        if (p->inc_free.by_addr)
            largest = max_u64(largest, p->inc_free.by_addr->max);
        largest = max_u64(largest, have + room);
    }
    out->largest_free = largest;
}

uint64_t sn_gtbm_reserve_size(const sn_gtbm_pool *p)
{
    return p->policy == SN_GTBM_POLICY_GTBM ? 2 * p->capacity : p->capacity;
}

/* ---- consistency --------------------------------------------------------- */

typedef struct span {
    uint64_t start, size;
    int free;
} span;

static int span_cmp(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* In-order walk of one index: keys strictly increasing, maxima right.
 * Returns the number of nodes, or -1. */
static long walk(const node *n, int t, const node **prev, span *out, long k)
{
    if (!n)
        return k;
    k = walk(n->l[t], t, prev, out, k);
    if (k < 0)
        return -1;
    if (*prev && !key_before(*prev, n, t))
        return -1;
    if (t == BY_ADDR) {
        uint64_t m = n->size;
        if (n->l[t]) m = max_u64(m, n->l[t]->max);
        if (n->r[t]) m = max_u64(m, n->r[t]->max);
        if (m != n->max)
            return -1;
    }
    *prev = n;
    if (out)
        out[k] = (span){n->start, n->size, 1};
    return walk(n->r[t], t, prev, out, k + 1);
}

static int check_space(const sn_gtbm_pool *p, const sn_gtbm_space *s, uint64_t base,
                       uint64_t size, int inc)
{
    long nlive = 0;
    const struct sn_gtbm_live *l;
    for (l = p->live; l; l = l->hh.next)
        nlive += (l->side == SIDE_INC) == inc;
    span *all = malloc(sizeof *all * (size_t)(s->nblocks + (uint64_t)nlive + 1));
    if (!all)
        return -1;
    const node *prev = NULL;
    long nfree = walk(s->by_addr, BY_ADDR, &prev, all, 0);
    prev = NULL;
    long nsize = walk(s->by_size, BY_SIZE, &prev, NULL, 0);
    int bad = nfree < 0 || nsize != nfree || (uint64_t)nfree != s->nblocks;
    uint64_t free_bytes = 0;
    for (long i = 0; !bad && i < nfree; i++)
        free_bytes += all[i].size;
    bad |= free_bytes != s->bytes;
    long k = nfree;
    for (l = p->live; l && !bad; l = l->hh.next)
        if ((l->side == SIDE_INC) == inc)
            all[k++] = (span){l->off, l->size, 0};
    if (!bad) {
        qsort(all, (size_t)k, sizeof *all, span_cmp);
        uint64_t at = base;
        for (long i = 0; i < k && !bad; i++) {
            bad |= all[i].start != at || all[i].size == 0 || all[i].start % SN_GTBM_ALIGN ||
                   all[i].size % SN_GTBM_ALIGN;
            /* two free blocks side by side should have been merged */
            bad |= i > 0 && all[i].free && all[i - 1].free;
            at = all[i].start + all[i].size;
        }
        bad |= at != base + size;
    }
    free(all);
    return bad ? -1 : 0;
}

int sn_gtbm_check(const sn_gtbm_pool *p)
{
    if (check_space(p, &p->main_free, 0, p->capacity, 0) != 0 ||
        check_space(p, &p->inc_free, p->capacity, p->inc_size, 1) != 0)
        return -1;
    uint64_t live = 0, count = 0, low_top = 0, high_bottom = p->capacity;
    for (const struct sn_gtbm_live *l = p->live; l; l = l->hh.next) {
        live += l->size;
        count++;
        if (l->side == SIDE_LOW)
            low_top = max_u64(low_top, l->off + l->size);
        if (l->side == SIDE_HIGH && l->off < high_bottom)
            high_bottom = l->off;
        if (p->policy != SN_GTBM_POLICY_GTBM && l->side != SIDE_LOW)
            return -1;
    }
    if (live != p->live_bytes || count != p->live_count || low_top != p->low_top ||
        high_bottom != p->high_bottom || low_top > high_bottom || extent(p) > p->capacity ||
        p->peak_extent < extent(p))
        return -1;
    /* the gap is one free block */
    if (low_top < high_bottom) {
        const node *g = find_start(p->main_free.by_addr, low_top);
        if (!g || g->size != high_bottom - low_top)
            return -1;
    }
    return 0;
}

static const char *const policy_names[SN_GTBM_POLICY_COUNT] = {"gtbm", "best-fit", "first-fit"};

const char *sn_gtbm_policy_name(enum sn_gtbm_policy p)
{
    return (unsigned)p < SN_GTBM_POLICY_COUNT ? policy_names[p] : "?";
}

int sn_gtbm_policy_parse(const char *name)
{
    for (int i = 0; i < SN_GTBM_POLICY_COUNT; i++)
        if (strcmp(name, policy_names[i]) == 0)
            return i;
    return -1;
}
