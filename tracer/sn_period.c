/*
 * sn_period.c — period detection (see sn_period.h).
 *
 * Reading the sequence backwards from its end, the smallest period of the
 * first L reversed elements is L - pi(L), pi being the KMP prefix function.
 * That period never decreases with L, so the longest L that still holds
 * min_repeats full periods gives both the iteration length and where the
 * regular part begins.
 */
#include "tracer/sn_period.h"

#include <stdlib.h>
#include <string.h>

/* Longest periodic suffix of sig[0..n): returns its length, sets *period. */
static size_t sn_periodic_suffix(const uint64_t *sig, size_t n, size_t min_repeats, size_t *period,
                                 size_t *pi)
{
    size_t best_len = 0, best_p = 0;
    if (n == 0)
        return 0;
    pi[0] = 0;
    for (size_t i = 1; i < n; i++) {
        size_t k = pi[i - 1];
        while (k > 0 && sig[n - 1 - i] != sig[n - 1 - k])
            k = pi[k - 1];
        if (sig[n - 1 - i] == sig[n - 1 - k])
            k++;
        pi[i] = k;
    }
    for (size_t len = 1; len <= n; len++) {
        size_t p = len - pi[len - 1];
        if (len >= min_repeats * p) {
            best_len = len;
            best_p = p;
        }
    }
    *period = best_p;
    return best_len;
}

void sn_period_find(const uint64_t *sig, size_t n, size_t min_repeats, size_t max_trailing,
                    sn_period *out)
{
    out->found = 0;
    out->period = out->start = out->end = 0;
    if (min_repeats < 2)
        min_repeats = 2;
    if (n < min_repeats)
        return;
    size_t *pi = malloc(n * sizeof *pi);
    if (!pi)
        return;
    size_t best_cover = 0;
    for (size_t trail = 0; trail <= max_trailing && trail + min_repeats <= n; trail++) {
        size_t p = 0, len = sn_periodic_suffix(sig, n - trail, min_repeats, &p, pi);
        /* A period of one repeated step is a run, not an iteration, unless
         * it is all there is. */
        if (len > best_cover && p > 0) {
            best_cover = len;
            out->found = 1;
            out->period = p;
            out->end = n - trail;
            out->start = n - trail - len;
        }
        if (trail == 0 && len * 2 >= n)
            break; /* the end is regular: no need to look past trailing steps */
    }
    free(pi);
}

int sn_cursor_init(sn_cursor *c, const uint64_t *sig, size_t period, size_t pos, int synced)
{
    memset(c, 0, sizeof *c);
    if (!sig || period == 0 || !(c->sig = malloc(period * sizeof *c->sig)))
        return -1;
    memcpy(c->sig, sig, period * sizeof *c->sig);
    c->period = period;
    c->pos = pos % period;
    c->synced = synced != 0;
    return 0;
}

void sn_cursor_destroy(sn_cursor *c)
{
    free(c->sig);
    memset(c, 0, sizeof *c);
}

long sn_cursor_step(sn_cursor *c, uint64_t sig, int *completed)
{
    if (completed)
        *completed = 0;
    if (!c->period)
        return -1;
    c->since_done++;
    if (!c->synced || sig != c->sig[c->pos]) {
        /* Only the iteration's first step brings the cursor back: the
         * rest of an interrupted iteration cannot be placed reliably. */
        if (sig != c->sig[0]) {
            c->synced = 0;
            c->off_sequence++;
            return -1;
        }
        c->synced = 1;
        c->pos = 0;
    }
    long at = (long)c->pos;
    if (++c->pos == c->period) {
        c->pos = 0;
        c->iterations++;
        c->since_done = 0;
        if (completed)
            *completed = 1;
    }
    return at;
}
