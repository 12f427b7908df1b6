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
 * good. Contents dropped on a prediction and then read are a prediction
 * gone wrong: sn_predict_use reports it, so the caller can say so loudly.
 */
#ifndef SN_PREDICT_H
#define SN_PREDICT_H

#include <stdint.h>

#define SN_PREDICT_AFTER 2

typedef struct sn_predict {
    int64_t last_pos;   /* position of the latest use; -1 off the sequence (or none) */
    int64_t pred_pos;   /* the position learned */
    int pred_count;     /* agreeing observations in a row; -1: ruled out */
    int dropped;        /* contents were dropped on the prediction */
} sn_predict;

/* A block with no history (new, or handed to a new allocation). */
static inline void sn_predict_reset(sn_predict *p)
{
    p->last_pos = p->pred_pos = -1;
    p->pred_count = 0;
    p->dropped = 0;
}

/* A use at pos (-1: off the sequence); whole: it overwrites every byte
 * without reading. Returns 1 when it reads contents that were dropped as
 * predicted dead (the prediction was wrong), else 0. Inline: every block
 * of every call is one use. */
static inline int sn_predict_use(sn_predict *p, int64_t pos, int whole)
{
    int wrong = p->dropped && !whole;
    p->dropped = 0;
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
