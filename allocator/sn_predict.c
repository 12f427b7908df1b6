/*
 * sn_predict.c — predicted death of a block's contents (sn_predict.h).
 */
#include "allocator/sn_predict.h"

void sn_predict_reset(sn_predict *p)
{
    p->last_pos = p->pred_pos = -1;
    p->pred_count = 0;
    p->dropped = 0;
    p->def_lo = p->def_hi = 0;
}

void sn_predict_dropped(sn_predict *p)
{
    p->dropped = 1;
    p->def_lo = p->def_hi = 0;
}

int sn_predict_reads_dropped(const sn_predict *p, uint64_t off, uint64_t len)
{
    if (!p->dropped || len == 0)
        return 0;
    /* (written so that off + len cannot overflow: len may be "all of it") */
    return !(off >= p->def_lo && off <= p->def_hi && len <= p->def_hi - off);
}

void sn_predict_extend(uint64_t *lo, uint64_t *hi, uint64_t off, uint64_t len)
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

int sn_predict_use(sn_predict *p, int64_t pos, int whole, int reads_dropped, uint64_t def_off, uint64_t def_len)
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

int sn_predict_dead(const sn_predict *p)
{
    return p->last_pos >= 0 && p->pred_pos == p->last_pos && p->pred_count >= SN_PREDICT_AFTER;
}
