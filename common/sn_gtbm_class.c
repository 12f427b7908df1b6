/*
 * sn_gtbm_class.c — the one GTBM classifier (sn_gtbm_class.h), used by the
 * planner for the class a plan hands to the allocator and by the allocator
 * and the replay bench for allocations a plan does not cover.
 */
#include "common/sn_gtbm_class.h"

enum sn_gtbm_class sn_gtbm_classify(const sn_gtbm_facts *f)
{
    if (f->before_iteration || f->crosses_iteration || f->size < SN_GTBM_SMALL)
        return SN_CLASS_LONG;
    /* a workspace is reused by the next call that needs one: readers the
     * model saw across calls do not make it held longer */
    if (f->scratch)
        return SN_CLASS_MOVABLE;
    if (f->consumers > 1 || f->fork_join || f->accumulated)
        return SN_CLASS_TEMP;
    return SN_CLASS_MOVABLE;
}

const char *sn_gtbm_class_name(enum sn_gtbm_class c)
{
    switch (c) {
    case SN_CLASS_LONG: return "long";
    case SN_CLASS_MOVABLE: return "movable";
    case SN_CLASS_TEMP: return "temp";
    case SN_CLASS_COUNT: break;
    }
    return "?";
}
