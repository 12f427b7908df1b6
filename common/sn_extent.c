/*
 * sn_extent.c — how many bytes a strided tensor spans (a BLAS matrix's or
 * vector's: inline in sn_call.h, computed on every cuBLAS call). Pure
 * arithmetic, shared by the wrappers and unit-tested on its own; overflow
 * and nonsense arguments give 0 (nothing described) rather than a huge
 * range.
 */
#include "common/sn_call.h"

uint64_t sn_extent_strided(int nd, const int *dim, const int *stride, unsigned elem_bytes)
{
    if (nd <= 0 || !dim || !stride || !elem_bytes)
        return 0;
    unsigned __int128 last = 0;
    for (int i = 0; i < nd; i++) {
        if (dim[i] <= 0 || stride[i] < 0)
            return 0;
        last += (unsigned __int128)(unsigned)(dim[i] - 1) * (unsigned)stride[i];
    }
    unsigned __int128 bytes = (last + 1) * elem_bytes;
    return bytes > UINT64_MAX / 2 ? 0 : (uint64_t)bytes;
}

int sn_extent_is_dense(int nd, const int *dim, const int *stride)
{
    if (nd <= 0)
        return 0;
    unsigned __int128 count = 1, last = 0;
    for (int i = 0; i < nd; i++) {
        if (dim[i] <= 0 || stride[i] < 0)
            return 0;
        count *= (unsigned)dim[i];
        last += (unsigned __int128)(unsigned)(dim[i] - 1) * (unsigned)stride[i];
    }
    /* Every element distinct and the span has no holes. Distinctness holds
     * for the layouts cuDNN accepts (no zero strides on dims > 1). */
    for (int i = 0; i < nd; i++)
        if (dim[i] > 1 && stride[i] == 0)
            return 0;
    return last + 1 == count;
}
