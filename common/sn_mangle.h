/*
 * sn_mangle.h — what a kernel's mangled name says of its parameters, for
 * the one case the runtime's layout query cannot answer: a kernel without
 * parameters. cudaFuncGetParamInfo fails at index 0 both for such a kernel
 * and for one whose metadata the runtime lacks, so libsn would count every
 * launch of, say, Caffe's empty `sync_conv_groups()` as opaque (everything
 * resident before it, everything dirty after). Its Itanium C++ ABI name,
 * `_ZN5caffe16sync_conv_groupsEv`, says "no parameters" by itself.
 * Pure, no state: common/ vocabulary.
 */
#ifndef SN_MANGLE_H
#define SN_MANGLE_H

#include <stddef.h>

/* Whether NAME declares a function without parameters: "_Z", then a plain
 * name (one source name "<length><identifier>", or "N", source names only,
 * "E"), then "v" and nothing more. Anything else (template instances,
 * whose return type comes first, operators, substitutions, local names,
 * qualifiers, an extern "C" name, which carries no signature) answers 0:
 * unknown, never "none" by guess, since a launch described as touching
 * nothing would let libsn move memory the kernel reads. */
static inline int sn_mangled_no_params(const char *name)
{
    if (!name || name[0] != '_' || name[1] != 'Z')
        return 0;
    const char *p = name + 2;
    int nested = *p == 'N';
    if (nested)
        p++;
    int names = 0;
    while (*p >= '1' && *p <= '9') {
        size_t len = 0;
        while (*p >= '0' && *p <= '9') {
            len = len * 10 + (size_t)(*p - '0');
            if (len > 4096)
                return 0;
            p++;
        }
        for (size_t i = 0; i < len; i++)
            if (!p[i])
                return 0;
        p += len;
        names++;
        if (!nested)
            break;
    }
    if (!names)
        return 0;
    if (nested && *p++ != 'E')
        return 0;
    return p[0] == 'v' && p[1] == '\0';
}

#endif
