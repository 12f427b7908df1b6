/*
 * gtbm_replay.c — replays a recorded allocation trace through the placement
 * engine (allocator/sn_gtbm.c) under each policy and prints the pool each
 * one needs: the peak extent, the free space inside it at that moment
 * (fragmentation) and, with --min-pool, the smallest pool the whole trace
 * runs in. No device is involved; bench/gtbm_bench.sh feeds it the
 * reference trainer's --log-allocs traces.
 *
 * Trace lines ('#' starts a comment):
 *   alloc <id> <bytes> <class>                       class: long, movable, temp
 *   alloc <id> <bytes> <role> <consumers> <join> <accumulated> [name...]
 *   free <id>
 *   iter <i>
 * The id is any token, unique among the live allocations (the trainer
 * writes device addresses, which come back after a free). The second form
 * is sntrain's: the class comes from sn_gtbm_classify with the facts on the
 * line plus two the trace itself shows: made before the first iter line,
 * and still live at the next iter line (or at the end of the trace).
 * That second fact is known only once the allocation is freed; the replay
 * reads it ahead, as an allocator does from the iteration it profiled.
 *
 * Output, one "key value..." record per line (stable: the bench script
 * parses it):
 *   trace <path> allocs <n> frees <n> iterations <n>
 *   live-peak <bytes>                   largest sum of live (aligned) sizes
 *   class <name> allocs <n> bytes <n>   per class, as placed under gtbm
 *   policy <name> peak <bytes> frag <bytes> live <bytes> [min-pool <bytes>] [failed <event>]
 * Exit status: 0, 1 on a malformed trace, 2 on bad usage, 3 when a replay
 * at the given --capacity ran out of room.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "allocator/sn_gtbm.h"

enum ev_kind { EV_ALLOC, EV_FREE, EV_ITER };

typedef struct event {
    enum ev_kind kind;
    long alloc; /* EV_ALLOC, EV_FREE: index into the allocation table */
} event;

typedef struct allocation {
    uint64_t size;
    int explicit_class; /* -1: from the facts */
    sn_gtbm_facts facts;
    enum sn_gtbm_class cls;
} allocation;

typedef struct trace {
    event *ev;
    long nev, cap_ev;
    allocation *al;
    long nal, cap_al;
    long nfree, niter;
} trace;

/* live ids while reading */
typedef struct id_entry {
    char *id;
    long alloc;
    UT_hash_handle hh;
} id_entry;

static int grow(void **p, long *cap, long need, size_t elem)
{
    if (need <= *cap)
        return 0;
    long n = *cap ? *cap * 2 : 1024;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, (size_t)n * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || end == s || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

static int class_by_name(const char *s)
{
    for (int c = 0; c < SN_CLASS_COUNT; c++)
        if (strcmp(s, sn_gtbm_class_name((enum sn_gtbm_class)c)) == 0)
            return c;
    return -1;
}

static int read_trace(const char *path, trace *t)
{
    memset(t, 0, sizeof *t);
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (!f) {
        perror(path);
        return -1;
    }
    id_entry *live = NULL, *e, *tmp;
    char line[4096];
    long lineno = 0;
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char *tok[8];
        int nt = 0;
        for (char *s = strtok(line, " \t\r\n"); s && nt < 8; s = strtok(NULL, " \t\r\n"))
            tok[nt++] = s;
        if (nt == 0)
            continue;
        if (grow((void **)&t->ev, &t->cap_ev, t->nev + 1, sizeof *t->ev) != 0) {
            rc = -1;
            fprintf(stderr, "gtbm_replay: out of memory\n");
            break;
        }
        event *ev = &t->ev[t->nev];
        ev->alloc = -1;
        if (strcmp(tok[0], "iter") == 0 && nt == 2) {
            ev->kind = EV_ITER;
            /* everything live now outlives an iteration boundary */
            HASH_ITER(hh, live, e, tmp) t->al[e->alloc].facts.crosses_iteration = 1;
            t->niter++;
        } else if (strcmp(tok[0], "alloc") == 0 && (nt == 4 || nt >= 7)) {
            uint64_t size, consumers = 0, join = 0, accum = 0;
            int cls = nt == 4 ? class_by_name(tok[3]) : -1;
            if (parse_u64(tok[2], &size) != 0 || size == 0 || (nt == 4 && cls < 0) ||
                (nt >= 7 && (parse_u64(tok[4], &consumers) || parse_u64(tok[5], &join) ||
                             parse_u64(tok[6], &accum) || consumers > 1000000))) {
                fprintf(stderr, "gtbm_replay: %s:%ld: malformed alloc line\n", path, lineno);
                rc = -1;
                break;
            }
            HASH_FIND_STR(live, tok[1], e);
            if (e) {
                fprintf(stderr, "gtbm_replay: %s:%ld: %s allocated twice\n", path, lineno, tok[1]);
                rc = -1;
                break;
            }
            if (grow((void **)&t->al, &t->cap_al, t->nal + 1, sizeof *t->al) != 0 ||
                !(e = calloc(1, sizeof *e)) || !(e->id = strdup(tok[1]))) {
                free(e);
                fprintf(stderr, "gtbm_replay: out of memory\n");
                rc = -1;
                break;
            }
            allocation *a = &t->al[t->nal];
            memset(a, 0, sizeof *a);
            a->size = size;
            a->explicit_class = cls;
            a->facts.size = size;
            a->facts.before_iteration = t->niter == 0;
            a->facts.consumers = (int)consumers;
            a->facts.fork_join = join != 0;
            a->facts.accumulated = accum != 0;
            e->alloc = t->nal;
            HASH_ADD_KEYPTR(hh, live, e->id, strlen(e->id), e);
            ev->kind = EV_ALLOC;
            ev->alloc = t->nal++;
        } else if (strcmp(tok[0], "free") == 0 && nt == 2) {
            HASH_FIND_STR(live, tok[1], e);
            if (!e) {
                fprintf(stderr, "gtbm_replay: %s:%ld: free of %s, which is not live\n", path,
                        lineno, tok[1]);
                rc = -1;
                break;
            }
            ev->kind = EV_FREE;
            ev->alloc = e->alloc;
            HASH_DEL(live, e);
            free(e->id);
            free(e);
            t->nfree++;
        } else {
            fprintf(stderr, "gtbm_replay: %s:%ld: unknown line '%s'\n", path, lineno, tok[0]);
            rc = -1;
            break;
        }
        t->nev++;
    }
    /* what the trace never frees outlives it */
    HASH_ITER(hh, live, e, tmp) {
        t->al[e->alloc].facts.crosses_iteration = 1;
        HASH_DEL(live, e);
        free(e->id);
        free(e);
    }
    if (f != stdin)
        fclose(f);
    if (rc == 0 && t->nal == 0) {
        fprintf(stderr, "gtbm_replay: %s has no allocations\n", path);
        rc = -1;
    }
    /* a trace without iteration lines says nothing about "before" */
    for (long i = 0; rc == 0 && i < t->nal; i++) {
        allocation *a = &t->al[i];
        if (t->niter == 0)
            a->facts.before_iteration = 0;
        a->cls = a->explicit_class >= 0 ? (enum sn_gtbm_class)a->explicit_class
                                        : sn_gtbm_classify(&a->facts);
    }
    return rc;
}

typedef struct result {
    int ok;
    long failed_event; /* 1-based, when !ok */
    sn_gtbm_stats st;
} result;

static result replay(const trace *t, enum sn_gtbm_policy policy, uint64_t capacity,
                     uint64_t *offsets)
{
    result r = {0};
    sn_gtbm_pool p;
    if (sn_gtbm_init(&p, capacity, policy) != 0) {
        r.failed_event = 1;
        return r;
    }
    r.ok = 1;
    for (long i = 0; i < t->nev; i++) {
        const event *ev = &t->ev[i];
        if (ev->kind == EV_ALLOC) {
            const allocation *a = &t->al[ev->alloc];
            offsets[ev->alloc] = sn_gtbm_alloc(&p, a->size, a->cls);
            if (offsets[ev->alloc] == SN_GTBM_NONE) {
                r.ok = 0;
                r.failed_event = i + 1;
                break;
            }
        } else if (ev->kind == EV_FREE) {
            if (sn_gtbm_free(&p, offsets[ev->alloc]) != 0) {
                r.ok = 0;
                r.failed_event = i + 1;
                break;
            }
        }
    }
    sn_gtbm_stats_get(&p, &r.st);
    sn_gtbm_destroy(&p);
    return r;
}

static uint64_t live_peak(const trace *t)
{
    uint64_t live = 0, peak = 0;
    for (long i = 0; i < t->nev; i++) {
        const event *ev = &t->ev[i];
        if (ev->kind == EV_ITER)
            continue;
        uint64_t sz = (t->al[ev->alloc].size + SN_GTBM_ALIGN - 1) / SN_GTBM_ALIGN * SN_GTBM_ALIGN;
        if (ev->kind == EV_ALLOC)
            live += sz;
        else if (ev->kind == EV_FREE)
            live -= sz;
        if (live > peak)
            peak = live;
    }
    return peak;
}

/* The smallest capacity (a multiple of SN_GTBM_ALIGN) the trace replays in,
 * by bisection between the live peak, which no placement beats, and a
 * capacity that works. Placement decisions depend on the capacity only
 * through what is left to grow into, so success is monotone in practice;
 * the answer is the smallest capacity seen to succeed. */
static uint64_t min_pool(const trace *t, enum sn_gtbm_policy policy, uint64_t known_ok,
                         uint64_t *offsets)
{
    uint64_t lo = live_peak(t), hi = known_ok;
    if (lo > 0)
        lo -= SN_GTBM_ALIGN; /* lo fails, hi succeeds */
    while (!replay(t, policy, hi, offsets).ok) {
        if (hi >= (uint64_t)1 << 50)
            return 0;
        hi += (hi / 16 + SN_GTBM_ALIGN) / SN_GTBM_ALIGN * SN_GTBM_ALIGN;
    }
    while (hi - lo > SN_GTBM_ALIGN) {
        uint64_t mid = lo + (hi - lo) / 2 / SN_GTBM_ALIGN * SN_GTBM_ALIGN;
        if (mid <= lo)
            mid = lo + SN_GTBM_ALIGN;
        if (replay(t, policy, mid, offsets).ok)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: gtbm_replay [--policy gtbm|best-fit|first-fit]... [--capacity BYTES]\n"
               "                   [--min-pool] TRACE|-\n"
               "\n"
               "Replays an allocation trace (sntrain --log-allocs, or alloc/free lines with a\n"
               "class) through the placement engine under each policy (all three by default)\n"
               "and prints the peak extent, the free space inside it at the peak, and with\n"
               "--min-pool the smallest pool the trace runs in. Without --capacity the pool is\n"
               "unbounded (1 PiB).\n");
}

int main(int argc, char **argv)
{
    int policies[SN_GTBM_POLICY_COUNT], npol = 0, want_min = 0;
    uint64_t capacity = (uint64_t)1 << 50;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--policy") == 0 && i + 1 < argc) {
            int p = sn_gtbm_policy_parse(argv[++i]);
            if (p < 0 || npol == SN_GTBM_POLICY_COUNT) {
                fprintf(stderr, "gtbm_replay: --policy expects gtbm, best-fit or first-fit\n");
                return 2;
            }
            policies[npol++] = p;
        } else if (strcmp(argv[i], "--capacity") == 0 && i + 1 < argc) {
            if (parse_u64(argv[++i], &capacity) != 0 || capacity < SN_GTBM_ALIGN ||
                capacity > (uint64_t)1 << 60) {
                fprintf(stderr, "gtbm_replay: --capacity expects a number of bytes\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--min-pool") == 0) {
            want_min = 1;
        } else if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1] != 0) {
            usage(stderr);
            return 2;
        } else if (!path) {
            path = argv[i];
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (!path) {
        usage(stderr);
        return 2;
    }
    if (npol == 0)
        for (int p = 0; p < SN_GTBM_POLICY_COUNT; p++)
            policies[npol++] = p;

    trace t;
    if (read_trace(path, &t) != 0) {
        free(t.ev);
        free(t.al);
        return 1;
    }
    uint64_t *offsets = malloc(sizeof *offsets * (size_t)t.nal);
    if (!offsets) {
        fprintf(stderr, "gtbm_replay: out of memory\n");
        free(t.ev);
        free(t.al);
        return 1;
    }
    printf("trace %s allocs %ld frees %ld iterations %ld\n", path, t.nal, t.nfree, t.niter);
    printf("live-peak %" PRIu64 "\n", live_peak(&t));
    uint64_t cls_n[SN_CLASS_COUNT] = {0}, cls_b[SN_CLASS_COUNT] = {0};
    for (long i = 0; i < t.nal; i++) {
        cls_n[t.al[i].cls]++;
        cls_b[t.al[i].cls] += t.al[i].size;
    }
    for (int c = 0; c < SN_CLASS_COUNT; c++)
        printf("class %s allocs %" PRIu64 " bytes %" PRIu64 "\n",
               sn_gtbm_class_name((enum sn_gtbm_class)c), cls_n[c], cls_b[c]);
    int status = 0;
    for (int k = 0; k < npol; k++) {
        enum sn_gtbm_policy pol = (enum sn_gtbm_policy)policies[k];
        result r = replay(&t, pol, capacity, offsets);
        printf("policy %s peak %" PRIu64 " frag %" PRIu64 " live %" PRIu64,
               sn_gtbm_policy_name(pol), r.st.peak_extent, r.st.frag_at_peak, r.st.live_at_peak);
        if (!r.ok) {
            printf(" failed %ld\n", r.failed_event);
            status = 3;
            continue;
        }
        if (want_min)
            printf(" min-pool %" PRIu64, min_pool(&t, pol, r.st.peak_extent, offsets));
        printf("\n");
    }
    free(offsets);
    free(t.ev);
    free(t.al);
    return status;
}
