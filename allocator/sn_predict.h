/*
 * sn_predict.h — predicted death of a block's contents, learned from the
 * run (pure: no CUDA, unit-tested in tests/test_sn_predict.c). Inline: the
 * arena learns from every block of every call.
 *
 * Once the tracer follows the learned iteration, every call has a
 * position in it. For a block, what matters at eviction is whether its
 * next use overwrites it whole without reading it: then the contents need
 * not be written back. Each use is one observation for the position of
 * the use before it; after SN_PREDICT_AFTER agreeing observations in a row
 * (and none against) the contents after a use at that position are
 * predicted dead. One disagreeing observation rules the position out for
 * good.
 *
 * Contents dropped on a prediction and then read are a prediction gone
 * wrong: sn_predict_use reports it, so the caller can say so loudly. Only
 * a read of dropped bytes is: a call that writes part of a dropped block
 * without reading it (a smaller batch filling the front of a feature map)
 * defines that part again, and reading it later is fine; reading the rest,
 * still undefined, is the error. The part rewritten is kept as one byte
 * interval (a write next to or over it extends it; a write apart from it
 * replaces it when larger), so it never claims more than was written.
 */
#ifndef SN_PREDICT_H
#define SN_PREDICT_H

#include <stdint.h>

#define SN_PREDICT_AFTER 2

typedef struct sn_predict {
    int64_t last_pos;   /* position of the latest use; -1 off the sequence (or none) */
    int64_t pred_pos;   /* the position learned */
    int pred_count;     /* agreeing observations in a row; -1: ruled out */
    int dropped;        /* contents were dropped on the prediction ... */
    uint64_t def_lo, def_hi;  /* ... except [def_lo, def_hi), written since */
} sn_predict;

/* A block with no history (new, or handed to a new allocation). */
static inline void sn_predict_reset(sn_predict *p)
{
    p->last_pos = p->pred_pos = -1;
    p->pred_count = 0;
    p->dropped = 0;
    p->def_lo = p->def_hi = 0;
}

/* Its contents were dropped as predicted dead: every byte undefined. */
static inline void sn_predict_dropped(sn_predict *p)
{
    p->dropped = 1;
    p->def_lo = p->def_hi = 0;
}

/* Whether reading the bytes [off, off + len) of the block reads contents
 * dropped as predicted dead (not written since). */
static inline int sn_predict_reads_dropped(const sn_predict *p, uint64_t off, uint64_t len)
{
    if (!p->dropped || len == 0)
        return 0;
    /* (written so that off + len cannot overflow: len may be "all of it") */
    return !(off >= p->def_lo && off <= p->def_hi && len <= p->def_hi - off);
}

/* Adds the bytes [off, off + len) to the interval [*lo, *hi) as the part
 * rewritten is kept (see above). */
static inline void sn_predict_extend(uint64_t *lo, uint64_t *hi, uint64_t off, uint64_t len)
{
    if (!len)
        return;
    uint64_t end = len > UINT64_MAX - off ? UINT64_MAX : off + len;
    if (*hi == *lo) {
        *lo = off;
        *hi = end;
    } else if (off <= *hi && end >= *lo) {
        /* over or next to it: one interval */
        if (off < *lo)
            *lo = off;
        if (end > *hi)
            *hi = end;
    } else if (end - off > *hi - *lo) {
        /* apart from it: the larger is kept (claiming less than was
         * written, never more) */
        *lo = off;
        *hi = end;
    }
}

/* A use at pos (-1: off the sequence). whole: it overwrites every byte
 * without reading; reads_dropped: it reads bytes sn_predict_reads_dropped
 * called dropped before it; [def_off, def_off + def_len): bytes it
 * overwrites without reading (def_len 0: none). Returns 1 when it reads
 * contents that were dropped as predicted dead (the prediction was wrong;
 * said once: the contents count as defined from then on), else 0. Inline:
 * every block of every call is one use. */
static inline int sn_predict_use(sn_predict *p, int64_t pos, int whole, int reads_dropped, uint64_t def_off,
                                 uint64_t def_len)
{
    int wrong = p->dropped && reads_dropped;
    if (wrong || whole)
        p->dropped = 0;
    else if (p->dropped)
        sn_predict_extend(&p->def_lo, &p->def_hi, def_off, def_len);
    if (p->last_pos >= 0 && pos >= 0) {
        if (p->pred_pos == p->last_pos) {
            if (!whole)
                p->pred_count = -1;
            else if (p->pred_count >= 0 && p->pred_count < 1000000)
                p->pred_count++;
        } else if (whole && p->pred_count >= 0) {
            /* a new position to learn; a position ruled out stays ruled
             * out only while it is the one remembered */
            p->pred_pos = p->last_pos;
            p->pred_count = 1;
        }
    }
    if (wrong) {
        /* what followed this position is not known after all */
        p->pred_count = -1;
    }
    p->last_pos = pos;
    return wrong;
}

/* Whether the contents may be dropped now, after the latest use. */
static inline int sn_predict_dead(const sn_predict *p)
{
    return p->last_pos >= 0 && p->pred_pos == p->last_pos && p->pred_count >= SN_PREDICT_AFTER;
}

#endif
