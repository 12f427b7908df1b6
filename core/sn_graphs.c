/*
 * sn_graphs.c — what the CUDA graphs libsn saw captured touch.
 *
 * A call issued to a capturing stream does not run: it becomes a node of
 * the graph being captured and runs at each launch of that graph. The core
 * forwards such a call untouched (sn_core_call_begin) and hands its ranges
 * here, where they join the capture's record. At the end of the capture
 * the record becomes the graph's; an instantiation of the graph copies it
 * to the executable graph; a launch of that is then described by exactly
 * those ranges (sn_core_describe_graph) instead of as a call that needs
 * every allocation resident. The ranges lose their "overwrites it whole"
 * mark on the way: the order of the graph's nodes is not kept, so a launch
 * never drops contents as dead on arrival.
 *
 * A record is trusted only while nothing libsn did not see may have
 * changed the graph: a captured call libsn could not see through, a call
 * on a stream that joined the capture without beginning it (its record is
 * unknown: every capture under way is marked), a graph whose node count
 * changed between the end of its capture and its instantiation (nodes
 * added by the explicit graph API), and an executable graph updated in
 * place (cudaGraphExecUpdate and the node parameter setters) all fall back
 * to the opaque launch.
 */
#include "core/sn_graphs.h"

#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "common/sn_lock.h"

typedef struct sn_graph_rec {
    void *key;               /* the capturing stream, the graph, or the executable graph */
    sn_range *range;
    size_t n, cap;
    int incomplete;          /* something it touches is unknown: launch it opaque */
    size_t nodes;            /* graphs: the node count at the end of the capture */
    uint64_t epoch;          /* graphs: sn_node_epoch then */
    UT_hash_handle hh;
} sn_graph_rec;

static sn_graph_rec *sn_capturing, *sn_graphs, *sn_execs;
/* bumped by every change of a node in place: the node's graph is not
 * known, so no graph captured before it is trusted at instantiation */
static uint64_t sn_node_epoch;
static sn_lock sn_graphs_lock = SN_LOCK_INITIALIZER(SN_RANK_CAPTURES);

static void sn_rec_free(sn_graph_rec *r)
{
    if (r) {
        free(r->range);
        free(r);
    }
}

static sn_graph_rec *sn_rec_new(void *key)
{
    sn_graph_rec *r = calloc(1, sizeof *r);
    if (r)
        r->key = key;
    return r;
}

/* Adds [addr, addr + bytes) with mode; a range already there (the same
 * buffer used again, the common case of a replayed iteration) only widens
 * its mode. Returns -1 when memory runs out (the record is then
 * incomplete). */
static int sn_rec_add_locked(sn_graph_rec *r, uintptr_t addr, uint64_t bytes, unsigned mode)
{
    for (size_t i = 0; i < r->n; i++) {
        if (r->range[i].addr == addr && r->range[i].bytes == bytes) {
            r->range[i].mode |= mode;
            return 0;
        }
    }
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        sn_range *g = realloc(r->range, cap * sizeof *g);
        if (!g)
            return -1;
        r->range = g;
        r->cap = cap;
    }
    r->range[r->n++] = (sn_range){addr, bytes, mode & ~(unsigned)SN_OVERWRITE};
    return 0;
}

void sn_graphs_captured(const sn_call *c)
{
    sn_lock_take(&sn_graphs_lock);
    sn_graph_rec *r = NULL;
    HASH_FIND_PTR(sn_capturing, &c->stream, r);
    if (!r) {
        /* a stream that joined a capture (or one begun where libsn could
         * not see it): which capture it belongs to is unknown */
        for (sn_graph_rec *q = sn_capturing; q; q = q->hh.next)
            q->incomplete = 1;
    } else if (c->flags & SN_CALL_OPAQUE) {
        r->incomplete = 1;
    } else {
        for (int i = 0; i < c->nranges && !r->incomplete; i++) {
            const sn_range *g = sn_call_range_get(c, i);
            if (sn_rec_add_locked(r, g->addr, g->bytes, g->mode) != 0)
                r->incomplete = 1;
        }
    }
    sn_lock_give(&sn_graphs_lock);
}

/* Replaces what table holds under key by r (NULL: removes it). */
static void sn_table_put_locked(sn_graph_rec **table, void *key, sn_graph_rec *r)
{
    sn_graph_rec *old = NULL;
    HASH_FIND_PTR(*table, &key, old);
    if (old) {
        HASH_DEL(*table, old);
        sn_rec_free(old);
    }
    if (r) {
        r->key = key;
        HASH_ADD_PTR(*table, key, r);
    }
}

void sn_graphs_capture_begun(void *stream)
{
    sn_graph_rec *r = sn_rec_new(stream);
    sn_lock_take(&sn_graphs_lock);
    if (r)
        sn_table_put_locked(&sn_capturing, stream, r);
    sn_lock_give(&sn_graphs_lock);
}

void sn_graphs_capture_ended(void *stream, void *graph, size_t nodes)
{
    sn_lock_take(&sn_graphs_lock);
    sn_graph_rec *r = NULL;
    HASH_FIND_PTR(sn_capturing, &stream, r);
    if (r)
        HASH_DEL(sn_capturing, r);
    if (graph) {
        if (r) {
            r->nodes = nodes;
            r->epoch = sn_node_epoch;
        }
        /* a graph captured where libsn did not see the capture begin
         * has no record: it launches opaque */
        sn_table_put_locked(&sn_graphs, graph, r);
    } else {
        sn_rec_free(r);
    }
    sn_lock_give(&sn_graphs_lock);
}

void sn_graphs_instantiated(void *graph, void *exec, size_t nodes)
{
    sn_lock_take(&sn_graphs_lock);
    sn_graph_rec *g = NULL, *x = NULL;
    HASH_FIND_PTR(sn_graphs, &graph, g);
    if (g && !g->incomplete && g->nodes == nodes && g->epoch == sn_node_epoch && (x = sn_rec_new(exec)) != NULL) {
        x->range = g->n ? malloc(g->n * sizeof *x->range) : NULL;
        if (g->n && !x->range) {
            sn_rec_free(x);
            x = NULL;
        } else {
            if (g->n)
                memcpy(x->range, g->range, g->n * sizeof *x->range);
            x->n = x->cap = g->n;
        }
    }
    sn_table_put_locked(&sn_execs, exec, x);
    sn_lock_give(&sn_graphs_lock);
}

void sn_graphs_node_changed(void)
{
    sn_lock_take(&sn_graphs_lock);
    sn_node_epoch++;
    sn_lock_give(&sn_graphs_lock);
}

void sn_graphs_mark_incomplete(void *stream)
{
    sn_lock_take(&sn_graphs_lock);
    sn_graph_rec *r = NULL;
    HASH_FIND_PTR(sn_capturing, &stream, r);
    if (r)
        r->incomplete = 1;
    sn_lock_give(&sn_graphs_lock);
}

void sn_graphs_forget(void *graph_or_exec)
{
    sn_lock_take(&sn_graphs_lock);
    sn_table_put_locked(&sn_graphs, graph_or_exec, NULL);
    sn_table_put_locked(&sn_execs, graph_or_exec, NULL);
    sn_lock_give(&sn_graphs_lock);
}

int sn_graphs_describe(sn_call *c, void *exec)
{
    int known = 0;
    sn_lock_take(&sn_graphs_lock);
    sn_graph_rec *x = NULL;
    HASH_FIND_PTR(sn_execs, &exec, x);
    if (x) {
        known = 1;
        for (size_t i = 0; i < x->n; i++)
            sn_call_range(c, (const void *)x->range[i].addr, x->range[i].bytes, x->range[i].mode);
    }
    sn_lock_give(&sn_graphs_lock);
    return known;
}
