/*
 * sn_access.c — ranges to per-allocation accesses (see sn_access.h).
 */
#include "core/sn_access.h"

_Static_assert((int)SN_READ == (int)SN_ACC_R && (int)SN_WRITE == (int)SN_ACC_W &&
                   (int)SN_SCRATCH == (int)SN_ACC_SCRATCH,
               "access modes of ranges and of tensors differ");

sn_access_result sn_access_resolve_locked(sn_registry *reg, const sn_call *c, sn_trace_access *acc,
                                          int cap, sn_access_uses *uses)
{
    sn_access_result res = {0, (c->flags & SN_CALL_OPAQUE) != 0, 0};
    for (int i = 0; i < c->nranges; i++) {
        const sn_range *r = &c->range[i];
        sn_alloc *hit[SN_ACCESS_MAX_PER_RANGE];
        size_t n = sn_reg_overlapping_locked(reg, r->addr, r->bytes, hit, SN_ACCESS_MAX_PER_RANGE);
        if (n == 0)
            res.unknown++;
        if (n > SN_ACCESS_MAX_PER_RANGE) {
            res.incomplete = 1;
            n = SN_ACCESS_MAX_PER_RANGE;
            if (uses)
                uses->all = 1;
        }
        size_t first = uses ? uses->n : 0;
        for (size_t j = 0; j < n; j++) {
            sn_alloc *a = hit[j];
            if (uses && a->managed) {
                unsigned m = r->mode & (SN_READ | SN_WRITE);
                int whole = r->addr <= a->base && r->addr + r->bytes >= a->base + a->size;
                if (r->mode & SN_SCRATCH)
                    /* a workspace's contents mean nothing before the call:
                     * all of one allocation needs no copy in */
                    m = whole ? SN_WRITE | SN_OVERWRITE : m | SN_WRITE;
                if ((r->mode & SN_OVERWRITE) && whole)
                    m |= SN_OVERWRITE;
                if ((r->mode & SN_OVERWRITE) && !(r->mode & SN_READ))
                    m |= SN_ARENA_DEFINES;
                /* the part of the allocation the range covers */
                uint64_t lo = r->addr > a->base ? r->addr - a->base : 0;
                uint64_t end = r->addr + r->bytes, a_end = a->base + a->size;
                uint64_t hi = (end < a_end ? end : a_end) - a->base;
                sn_arena_use u = {sn_arena_alloc_block(a->managed), m, lo, hi > lo ? hi - lo : 0};
                if (a->dev == c->dev) {
                    if (uses->n == uses->cap)
                        uses->all = 1;
                    else
                        uses->use[uses->n++] = u;
                } else if (uses->peer_dev < 0 || uses->peer_dev == a->dev) {
                    uses->peer_dev = a->dev;
                    if (uses->npeer == uses->cap_peer)
                        uses->peer_all = 1;
                    else
                        uses->peer[uses->npeer++] = u;
                } else {
                    uses->more_devices = 1;
                }
            }
            if (a->trace_id == SN_NO_TRACE_ID) {
                res.incomplete = 1;
                continue;
            }
            uint32_t id = a->trace_id;
            uint8_t mode = (uint8_t)(r->mode & (SN_READ | SN_WRITE | SN_SCRATCH));
            if ((r->mode & SN_OVERWRITE) && r->addr <= a->base && r->addr + r->bytes >= a->base + a->size)
                mode |= SN_ACC_KILL;
            int k = 0;
            while (k < res.nacc && acc[k].tensor != id)
                k++;
            if (k == res.nacc) {
                if (res.nacc == cap) {
                    res.incomplete = 1;
                    continue;
                }
                acc[k].tensor = id;
                acc[k].mode = mode;
                res.nacc++;
            } else {
                /* Read through one range and overwritten through another:
                 * the old contents are still needed. */
                uint8_t m = acc[k].mode | mode;
                if ((m & SN_ACC_R) && (m & SN_ACC_KILL))
                    m &= (uint8_t)~SN_ACC_KILL;
                acc[k].mode = m;
            }
        }
        if (uses && (r->mode & SN_SCRATCH)) {
            uses->ws_lo = first;
            uses->ws_hi = uses->n;
        }
    }
    return res;
}
