/*
 * sn_mangle.h — what a kernel's mangled name says of its parameters, for
 * the one case the runtime's layout query cannot answer: a kernel without
 * parameters. cudaFuncGetParamInfo fails at index 0 both for such a kernel
 * and for one whose metadata the runtime lacks, so libsn would count every
 * launch of, say, Caffe's empty `sync_conv_groups()` as opaque (everything
 * resident before it, everything dirty after). Its Itanium C++ ABI name,
 * `_ZN5caffe16sync_conv_groupsEv`, says "no parameters" by itself.
 * The name also says what a framework's own kernel does, which the trace
 * report uses to name the layer it makes (Caffe's `MaxPoolForward` is max
 * pooling, Darknet's `forward_maxpool_layer_kernel` too): sn_kernel_kind.
 * And it says which pointer parameters a kernel only reads: `PK...` (a
 * pointer to const) is read-only, `P...` may be written (sn_mangled_params,
 * common/sn_mangle.c). The fat binary's metadata gives offsets and sizes
 * but no types. Two users: the simulator's stand-in for a kernel without a
 * CPU body (SIMGPU_COMPUTE=libs writes only through what the kernel may
 * write) and libsn's trace model (an in-place kernel layer, such as
 * Caffe's dropout, produces the buffer it writes). libsn never moves less
 * memory because of it: a kernel's ranges stay read and written for the
 * manager.
 * Pure, no state: common/ vocabulary, which the simulator may share since
 * it holds nothing of libsn's behaviour.
 */
#ifndef SN_MANGLE_H
#define SN_MANGLE_H

#include <stddef.h>
#include <strings.h>

enum sn_pkind {
    SN_PARAM_VALUE = 0,  /* passed by value (a scalar, a struct, an enum) */
    SN_PARAM_IN = 1,     /* pointer to const: the kernel only reads through it */
    SN_PARAM_OUT = 2,    /* pointer the kernel may write through */
};

/* What a pointer points to, as far as a value written through it must
 * care: an integer element gets a small integer, anything else a float. */
enum sn_pelem { SN_ELEM_OTHER = 0, SN_ELEM_INT = 1, SN_ELEM_BOOL = 2 };

struct sn_ptype {
    unsigned char kind;   /* enum sn_pkind */
    unsigned char elem;   /* enum sn_pelem, for pointers */
};

/* Parses the parameter list of the function whose mangled name is NAME
 * ("_Z..."): the number of parameters, their types in out[0..n), or -1
 * when the name is not a mangled function name this parser understands
 * (an extern "C" name, a local or lambda type, an expression in a template
 * argument, a parameter pack, more than max parameters). Never a guess:
 * -1 means every pointer must be taken as written. */
int sn_mangled_params(const char *name, struct sn_ptype *out, int max);

/* What a kernel's name says it computes, for naming layers only: never
 * used to describe what the kernel touches. 0: nothing known. */
enum sn_kernel_kind {
    SN_KK_NONE = 0,
    SN_KK_MAXPOOL,
    SN_KK_AVGPOOL,
    SN_KK_DROPOUT,
    SN_KK_LRN,
    SN_KK_RELU,
    SN_KK_LOSS,
    SN_KK_SOFTMAX,
    SN_KK_BATCHNORM,
    SN_KK_CONCAT,
    SN_KK_ELTWISE,
    SN_KK_SCALE,
    SN_KK_COUNT
};

/* The layer type a kind names (the trace report's vocabulary). */
static inline const char *sn_kernel_kind_name(int kind)
{
    static const char *const names[SN_KK_COUNT] = {
        "kernel", "maxpool", "avgpool", "dropout", "lrn", "relu", "loss", "softmax", "batchnorm", "concat", "eltwise", "scale"};
    return kind > 0 && kind < SN_KK_COUNT ? names[kind] : "kernel";
}

/* The kind of the kernel called NAME (mangled or not), from words its
 * identifier holds, case ignored; the first of the list that matches, so
 * a softmax loss is a loss and an average pooling's backward pass is still
 * pooling. Caffe's and Darknet's kernel names are the model. */
static inline int sn_kernel_kind(const char *name)
{
    static const struct {
        const char *word;
        int kind;
    } words[] = {
        {"maxpool", SN_KK_MAXPOOL}, {"max_pool", SN_KK_MAXPOOL}, {"avepool", SN_KK_AVGPOOL},
        {"avgpool", SN_KK_AVGPOOL}, {"avg_pool", SN_KK_AVGPOOL}, {"ave_pool", SN_KK_AVGPOOL},
        {"stopool", SN_KK_AVGPOOL}, {"dropout", SN_KK_DROPOUT}, {"lrn", SN_KK_LRN},
        {"loss", SN_KK_LOSS},       {"relu", SN_KK_RELU},       {"softmax", SN_KK_SOFTMAX},
        {"batchnorm", SN_KK_BATCHNORM}, {"concat", SN_KK_CONCAT}, {"eltwise", SN_KK_ELTWISE},
        /* Caffe's Scale layer (ScaleForward, ScaleBiasForward); not
         * "scale", which Darknet's batch normalisation kernels inside a
         * convolutional layer carry (scale_bias_kernel) */
        {"scaleforward", SN_KK_SCALE}, {"scalebias", SN_KK_SCALE},
    };
    if (!name)
        return SN_KK_NONE;
    for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
        size_t len = 0;
        while (words[w].word[len])
            len++;
        for (const char *p = name; *p; p++)
            if (strncasecmp(p, words[w].word, len) == 0)
                return words[w].kind;
    }
    return SN_KK_NONE;
}

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
