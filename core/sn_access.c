/*
 * sn_access.c — ranges to per-allocation accesses, and the per-thread memo
 * of resolved calls (see sn_access.h).
 */
#include "core/sn_access.h"

#include <pthread.h>
#include <stdlib.h>

_Static_assert((int)SN_READ == (int)SN_ACC_R && (int)SN_WRITE == (int)SN_ACC_W &&
                   (int)SN_SCRATCH == (int)SN_ACC_SCRATCH,
               "access modes of ranges and of tensors differ");

/* One more use of block with mode m: merged into the block's use when it
 * has one already (a call reading and writing the same buffer, several
 * small allocations of one shared block), so the arena sees each block
 * once; all when there is no room. */
static inline void sn_access_use(sn_access_uses *uses, int peer, void *block, unsigned m, uint64_t off, uint64_t len)
{
    sn_arena_use *use = peer ? uses->peer : uses->use;
    size_t *n = peer ? &uses->npeer : &uses->n;
    size_t cap = peer ? uses->cap_peer : uses->cap;
    int *all = peer ? &uses->peer_all : &uses->all;
    /* only a use of the same bytes merges: what a use reads and what it
     * defines are told apart by its range (dropped contents) */
    for (size_t k = 0; k < *n; k++)
        if (use[k].block == block && use[k].off == off && use[k].len == len) {
            use[k].mode |= m;
            return;
        }
    if (*n == cap)
        *all = 1;
    else
        use[(*n)++] = (sn_arena_use){block, m, off, len};
}

sn_access_result sn_access_resolve_locked(sn_registry *reg, const sn_call *c, sn_trace_access *acc,
                                          int cap, sn_access_uses *uses)
{
    sn_access_result res = {0, (c->flags & SN_CALL_OPAQUE) != 0, 0};
    for (int i = 0; i < c->nranges; i++) {
        const sn_range *r = sn_call_range_get(c, i);
        sn_alloc *hit[SN_ACCESS_MAX_PER_RANGE];
        size_t n = sn_reg_overlapping_locked(reg, r->addr, r->bytes, hit, SN_ACCESS_MAX_PER_RANGE);
        if (n == 0)
            res.unknown++;
        if (n > SN_ACCESS_MAX_PER_RANGE) {
            res.incomplete = 1;
            n = SN_ACCESS_MAX_PER_RANGE;
            if (uses)
                uses->all = 1;
        }
        size_t first = uses ? uses->n : 0;
        for (size_t j = 0; j < n; j++) {
            sn_alloc *a = hit[j];
            if (uses && a->managed) {
                unsigned m = r->mode & (SN_READ | SN_WRITE);
                int whole = r->addr <= a->base && r->addr + r->bytes >= a->base + a->size;
                if (r->mode & SN_SCRATCH)
                    /* a workspace's contents mean nothing before the call:
                     * all of one allocation needs no copy in */
                    m = whole ? SN_WRITE | SN_OVERWRITE : m | SN_WRITE;
                if ((r->mode & SN_OVERWRITE) && whole)
                    m |= SN_OVERWRITE;
                if ((r->mode & SN_OVERWRITE) && !(r->mode & SN_READ))
                    m |= SN_ARENA_DEFINES;
                /* the part of the allocation the range covers */
                uint64_t lo = r->addr > a->base ? r->addr - a->base : 0;
                uint64_t end = r->addr + r->bytes, a_end = a->base + a->size;
                uint64_t hi = (end < a_end ? end : a_end) - a->base;
                void *block = sn_arena_alloc_block(a->managed);
                if (a->dev == c->dev) {
                    sn_access_use(uses, 0, block, m, lo, hi > lo ? hi - lo : 0);
                } else if (uses->peer_dev < 0 || uses->peer_dev == a->dev) {
                    uses->peer_dev = a->dev;
                    sn_access_use(uses, 1, block, m, lo, hi > lo ? hi - lo : 0);
                } else {
                    uses->more_devices = 1;
                }
            }
            if (a->trace_id == SN_NO_TRACE_ID) {
                res.incomplete = 1;
                continue;
            }
            uint32_t id = a->trace_id;
            uint8_t mode = (uint8_t)(r->mode & (SN_READ | SN_WRITE | SN_SCRATCH | SN_DECLARED_IN | SN_DECLARED_OUT));
            if ((r->mode & SN_OVERWRITE) && r->addr <= a->base && r->addr + r->bytes >= a->base + a->size)
                mode |= SN_ACC_KILL;
            int k = 0;
            while (k < res.nacc && acc[k].tensor != id)
                k++;
            if (k == res.nacc) {
                if (res.nacc == cap) {
                    res.incomplete = 1;
                    continue;
                }
                acc[k].tensor = id;
                acc[k].mode = mode;
                res.nacc++;
            } else {
                /* Read through one range and overwritten through another:
                 * the old contents are still needed. */
                uint8_t m = acc[k].mode | mode;
                if ((m & SN_ACC_R) && (m & SN_ACC_KILL))
                    m &= (uint8_t)~SN_ACC_KILL;
                acc[k].mode = m;
            }
        }
        if (uses && (r->mode & SN_SCRATCH)) {
            uses->ws_lo = first;
            uses->ws_hi = uses->n;
        }
    }
    return res;
}

/* ---- the memo ------------------------------------------------------------------ */

/* Entries hold small results only: what most calls have (a few tensors,
 * each in its own block or a shared one). A range's mode rides in the top
 * byte of its length. */
#define SN_MEMO_ACC 8
#define SN_MEMO_USES 8
#define SN_MEMO_MODE_SHIFT 56

/* A call may sit in one of two neighbouring slots, and an entry still
 * valid is never pushed out by another call (in a training iteration
 * longer than the table, the calls that have slots keep hitting rather
 * than all of them missing in turn). The table starts small and doubles,
 * up to SN_MEMO_MAX_SLOTS (about 1.5 MiB a thread), while more than an
 * eighth of a table's worth of lookups find both slots held by other
 * calls. */
#define SN_MEMO_MIN_SLOTS 256
#define SN_MEMO_MAX_SLOTS 4096

typedef struct sn_memo_range {
    uintptr_t addr;
    uint64_t bytes_mode;
} sn_memo_range;

typedef struct sn_memo_entry {
    uint64_t key;
    uint64_t gen;            /* the registry's generation it holds for; 0: empty */
    uint64_t tag;            /* sn_memo_tag: what else must be the same */
    uint8_t nuses, all;
    uint8_t ws_lo, ws_hi;    /* sn_access_uses' workspace uses */
    sn_access_result res;
    sn_memo_range range[SN_ACCESS_MEMO_RANGES];
    sn_trace_access acc[SN_MEMO_ACC];
    sn_arena_use use[SN_MEMO_USES];
} sn_memo_entry;

typedef struct sn_memo {
    size_t slots;            /* a power of two */
    size_t lookups, taken;   /* since it was made: lookups, and those whose slot another call held */
    sn_memo_entry entry[];
} sn_memo;

/* initial-exec: read on every call; the table itself is allocated on the
 * thread's first call and freed when the thread exits */
static __thread sn_memo *sn_memo_now __attribute__((tls_model("initial-exec")));
/* the registry's generation at this thread's latest recall */
static __thread uint64_t sn_memo_seen __attribute__((tls_model("initial-exec")));
static pthread_key_t sn_memo_key;
static pthread_once_t sn_memo_once = PTHREAD_ONCE_INIT;

static void sn_memo_free(void *p)
{
    sn_memo_now = NULL;
    free(p);
}

static void sn_memo_key_create(void)
{
    if (pthread_key_create(&sn_memo_key, sn_memo_free) != 0)
        sn_memo_key = (pthread_key_t)-1;
}

/* A new, empty table of slots entries in place of the thread's (freed);
 * NULL when none can be had (the old one stays). */
static sn_memo *sn_memo_make(size_t slots)
{
    pthread_once(&sn_memo_once, sn_memo_key_create);
    if (sn_memo_key == (pthread_key_t)-1)
        return NULL;
    sn_memo *m = calloc(1, sizeof *m + slots * sizeof m->entry[0]);
    if (!m)
        return NULL;
    m->slots = slots;
    if (pthread_setspecific(sn_memo_key, m) != 0) {
        free(m);
        return NULL;
    }
    free(sn_memo_now);
    sn_memo_now = m;
    return m;
}

/* Only picks the slot, so it hashes little: the call's kind and device,
 * its first range and where its last begins (calls of one kind on the
 * same first and last tensors are the same call, or nearly). A collision
 * only costs a miss: entries are compared whole. */
static inline uint64_t sn_memo_key_of(const sn_call *c)
{
    uint64_t h = (uint64_t)(unsigned)c->hook << 40 ^ (uint64_t)(unsigned)c->dev << 32 ^
                 (uint64_t)(c->flags & SN_CALL_OPAQUE) << 24 ^ (uint64_t)c->nranges;
    if (c->nranges > 0) {
        h = (h ^ c->range[0].addr ^ c->range[0].bytes << 40) * 0x9e3779b97f4a7c15ULL;
        h = (h ^ sn_call_range_get(c, c->nranges - 1)->addr) * 0xbf58476d1ce4e5b9ULL;
    }
    return h ^ h >> 29 ^ h >> 47;
}

uint64_t sn_access_key(const sn_call *c)
{
    return sn_memo_key_of(c);
}

/* Everything besides the ranges a resolution depends on, in one word: the
 * device, the number of ranges, whether the call is opaque, the capacity
 * of the accesses and of the uses (0: resolved without uses). */
static inline uint64_t sn_memo_tag(const sn_call *c, int cap, int use_cap)
{
    return (uint64_t)(uint16_t)c->dev | (uint64_t)(uint8_t)c->nranges << 16 |
           (uint64_t)(c->flags & SN_CALL_OPAQUE) << 24 | (uint64_t)(uint16_t)cap << 32 |
           (uint64_t)(uint16_t)use_cap << 48;
}

/* (only calls of at most SN_ACCESS_MEMO_RANGES ranges, all inline, get here) */
static inline int sn_memo_same(const sn_memo_entry *e, const sn_call *c, uint64_t key, uint64_t tag)
{
    if (e->key != key || e->tag != tag)
        return 0;
    for (int i = 0; i < c->nranges; i++)
        if (e->range[i].addr != c->range[i].addr ||
            e->range[i].bytes_mode != (c->range[i].bytes | (uint64_t)c->range[i].mode << SN_MEMO_MODE_SHIFT))
            return 0;
    return 1;
}

int sn_access_recall(const sn_registry *reg, const sn_call *c, sn_access_lookup *l)
{
    sn_access_memo_ref *ref = &l->ref;
    sn_access_uses *uses = l->uses;
    uint64_t now = sn_reg_gen(reg);
    ref->keep = 0;
    if (now != sn_memo_seen) {
        /* the registry changed since this thread's previous call: every
         * entry is older than it (generations only grow) */
        sn_memo_seen = now;
        return 0;
    }
    if (c->nranges > SN_ACCESS_MEMO_RANGES)
        return 0;
    uint64_t key = sn_memo_key_of(c);
    ref->key = key;
    ref->keep = 1;
    sn_memo *m = sn_memo_now;
    if (!m) {
        ref->slot = 0;  /* chosen when the table is made */
        return 0;
    }
    m->lookups++;
    size_t i = key & (m->slots - 1);
    uint64_t tag = sn_memo_tag(c, l->cap, uses ? (int)uses->cap : 0);
    sn_memo_entry *e = &m->entry[i];
    if (e->gen != now) {
        /* free (or stale): the call goes here */
        ref->slot = i;
        return 0;
    }
    if (!sn_memo_same(e, c, key, tag)) {
        e = &m->entry[i ^ 1];
        if (e->gen != now) {
            ref->slot = i ^ 1;
            return 0;
        }
        if (!sn_memo_same(e, c, key, tag)) {
            /* other calls hold both slots, and keep them */
            m->taken++;
            ref->keep = 0;
            return 0;
        }
    }
    l->res = e->res;
    l->accs = e->acc;
    if (uses) {
        uses->use = e->use;
        uses->n = e->nuses;
        uses->all = e->all;
        uses->ws_lo = e->ws_lo;
        uses->ws_hi = e->ws_hi;
    }
    l->gen = now;
    return 1;
}

void sn_access_remember(const sn_call *c, uint64_t gen, const sn_access_lookup *l)
{
    const sn_access_memo_ref *ref = &l->ref;
    const sn_access_result *res = &l->res;
    const sn_access_uses *uses = l->uses;
    const sn_trace_access *acc = l->acc;
    const int cap = l->cap;
    sn_memo *m = sn_memo_now;
    if (m && m->lookups >= m->slots) {
        /* a table's worth of lookups: too many found their slot taken, and
         * the next table is twice the size */
        if (m->taken * 8 > m->lookups && m->slots < SN_MEMO_MAX_SLOTS && sn_memo_make(m->slots * 2))
            return;  /* (the slot found is in the old table) */
        m->lookups = m->taken = 0;
    }
    if (!ref->keep || gen != sn_memo_seen || c->nranges > SN_ACCESS_MEMO_RANGES || res->nacc > SN_MEMO_ACC ||
        cap < 0 || cap > UINT16_MAX || c->dev < 0 || c->dev > UINT16_MAX ||
        (uses && (uses->cap > UINT16_MAX || uses->n > SN_MEMO_USES || uses->peer_dev >= 0 || uses->more_devices)))
        return;
    for (int i = 0; i < c->nranges; i++)
        if (c->range[i].bytes >> SN_MEMO_MODE_SHIFT || c->range[i].mode >> 8)
            return;
    size_t slot = ref->slot;
    if (!m) {
        if (!(m = sn_memo_make(SN_MEMO_MIN_SLOTS)))
            return;
        slot = ref->key & (m->slots - 1);
    }
    uint64_t key = ref->key;
    sn_memo_entry *e = &m->entry[slot];
    e->key = key;
    e->gen = gen;
    e->tag = sn_memo_tag(c, cap, uses ? (int)uses->cap : 0);
    for (int i = 0; i < c->nranges; i++) {
        e->range[i].addr = c->range[i].addr;
        e->range[i].bytes_mode = c->range[i].bytes | (uint64_t)c->range[i].mode << SN_MEMO_MODE_SHIFT;
    }
    e->res = *res;
    for (int i = 0; i < res->nacc; i++)
        e->acc[i] = acc[i];
    e->nuses = uses ? (uint8_t)uses->n : 0;
    e->all = uses ? (uint8_t)(uses->all != 0) : 0;
    e->ws_lo = uses ? (uint8_t)uses->ws_lo : 0;
    e->ws_hi = uses ? (uint8_t)uses->ws_hi : 0;
    for (int i = 0; i < e->nuses; i++)
        e->use[i] = uses->use[i];
}
