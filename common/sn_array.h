/*
 * sn_array.h — growing an array by doubling, the one way libsn does it.
 * Records kept in arrays (spare events, blocks, free lists, host slabs'
 * holes) grow one element at a time and are never shrunk.
 */
#ifndef SN_ARRAY_H
#define SN_ARRAY_H

#include <stdlib.h>
#include <string.h>

/* Room for one more element in the array *arrp (any element type: arrp
 * is the address of the array's pointer), which holds n elements of elem
 * bytes in a capacity of *cap: doubles it, or makes it first when empty.
 * Returns 0, or -1 when out of memory (the array is left as it was). */
static inline int sn_array_room(void *arrp, size_t n, size_t *cap, size_t elem, size_t first)
{
    if (n < *cap)
        return 0;
    void *old;
    memcpy(&old, arrp, sizeof old);
    size_t c = *cap ? *cap * 2 : first;
    void *p = realloc(old, c * elem);
    if (!p)
        return -1;
    memcpy(arrp, &p, sizeof p);
    *cap = c;
    return 0;
}

#endif
