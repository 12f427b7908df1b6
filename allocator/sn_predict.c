/*
 * sn_predict.c — predicted death of a block's contents (sn_predict.h).
 */
#include "allocator/sn_predict.h"

void sn_predict_reset(sn_predict *p)
{
    p->last_pos = p->pred_pos = -1;
    p->pred_count = 0;
    p->dropped = 0;
}

int sn_predict_use(sn_predict *p, int64_t pos, int whole)
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

int sn_predict_dead(const sn_predict *p)
{
    return p->last_pos >= 0 && p->pred_pos == p->last_pos && p->pred_count >= SN_PREDICT_AFTER;
}
