/*
 * sn_period.h — finding the training iteration in a sequence of step
 * signatures, and following it once found.
 *
 * sn_period_find: the smallest period with which the end of the sequence
 * repeats, and how far back the repetition reaches. The first iteration
 * (algorithm search, lazy allocation), set-up and a few trailing steps may
 * differ; they are simply outside the periodic part. Pure, O(n).
 *
 * sn_cursor: after the profile, the iteration is known and libsn no longer
 * keeps the steps, only where it is in the iteration. The cursor expects the
 * iteration's signatures in order: a step that matches advances it, and the
 * last step of the iteration completes one. A step that does not match is
 * off the sequence (a test pass, a changed shape); the cursor then waits
 * for the iteration's first step and follows again from there. This is the
 * position a plan is executed by. Pure, O(1) per step.
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

typedef struct sn_cursor {
    uint64_t *sig;          /* the iteration's step signatures, from its first step */
    size_t period;
    size_t pos;             /* position of the step expected next */
    int synced;             /* 0: off the sequence, waiting for the first step */
    uint64_t iterations;    /* iterations followed in sequence to their last step
                               (the first from the pos given to sn_cursor_init) */
    uint64_t off_sequence;  /* steps that were not the one expected */
    uint64_t since_done;    /* steps since it last completed an iteration (or began) */
} sn_cursor;

/* Starts following the iteration sig[0..period) (copied), expecting the
 * step at position pos next; synced = 0 starts off the sequence, waiting
 * for sig[0]. Returns -1 (c unusable) for an empty period or no memory. */
int sn_cursor_init(sn_cursor *c, const uint64_t *sig, size_t period, size_t pos, int synced);
void sn_cursor_destroy(sn_cursor *c);

/* The next step: returns its position in the iteration, or -1 when it is
 * off the sequence. In sequence, a step that is not the expected one but
 * is the iteration's first step begins the next iteration at once (the
 * interrupted one is not counted as completed); any other unexpected step
 * counts as off the sequence, as does every step after it up to the next
 * first step. *completed (may be NULL) is set to 1 when the step ended an
 * iteration. */
long sn_cursor_step(sn_cursor *c, uint64_t sig, int *completed);

#endif
