/*
 * sn_predict.h — predicted death of a block's contents, learned from the
 * run (pure: no CUDA, unit-tested in tests/test_sn_predict.c).
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
void sn_predict_reset(sn_predict *p);
/* A use at pos (-1: off the sequence); whole: it overwrites every byte
 * without reading. Returns 1 when it reads contents that were dropped as
 * predicted dead (the prediction was wrong), else 0. */
int sn_predict_use(sn_predict *p, int64_t pos, int whole);
/* Whether the contents may be dropped now, after the latest use. */
int sn_predict_dead(const sn_predict *p);

#endif
