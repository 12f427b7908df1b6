/*
 * sn_period.h — finding the training iteration in a sequence of step
 * signatures: the smallest period with which the end of the sequence
 * repeats, and how far back the repetition reaches. The first iteration
 * (algorithm search, lazy allocation), set-up and a few trailing steps may
 * differ; they are simply outside the periodic part. Pure, O(n).
 */
#ifndef SN_PERIOD_H
#define SN_PERIOD_H

#include <stddef.h>
#include <stdint.h>

typedef struct sn_period {
    int found;
    size_t period;   /* steps per repetition */
    size_t start;    /* first index of the periodic part */
    size_t end;      /* one past its last index (trailing steps excluded) */
} sn_period;

/* Finds the period of sig[0..n) that covers the most steps with at least
 * min_repeats full repetitions, allowing up to max_trailing non-periodic
 * steps at the end. Returns found = 0 if there is none. */
void sn_period_find(const uint64_t *sig, size_t n, size_t min_repeats, size_t max_trailing,
                    sn_period *out);

#endif
