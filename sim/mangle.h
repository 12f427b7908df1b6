/*
 * mangle.h — what an nvcc kernel's Itanium-mangled name says of its
 * parameters: which are pointers, and whether they point to const.
 *
 * SIMGPU_COMPUTE=libs replaces a kernel without a CPU body by a stand-in
 * (sim/standin.c) that writes only through the pointers the kernel may
 * write. The fat binary gives offsets and sizes but no types, so the types
 * come from the name: `PK...` (pointer to const) is read-only, `P...` may
 * be written, anything else is passed by value. Pure and stateless; the
 * simulator keeps its own parser because it must not depend on libsn.
 */
#ifndef SIMGPU_MANGLE_H
#define SIMGPU_MANGLE_H

enum sim_pkind {
    SIM_PARAM_VALUE = 0,  /* passed by value (a scalar, a struct, an enum) */
    SIM_PARAM_IN = 1,     /* pointer to const: the kernel only reads through it */
    SIM_PARAM_OUT = 2,    /* pointer the kernel may write through */
};

/* What a pointer points to, as far as the value written through it must
 * care: an integer element gets a small integer, anything else a float. */
enum sim_pelem { SIM_ELEM_OTHER = 0, SIM_ELEM_INT = 1, SIM_ELEM_BOOL = 2 };

struct sim_ptype {
    unsigned char kind;   /* enum sim_pkind */
    unsigned char elem;   /* enum sim_pelem, for pointers */
};

/* Parses the parameter list of the function whose mangled name is NAME
 * ("_Z..."): the number of parameters, their types in out[0..n), or -1
 * when the name is not a mangled function name this parser understands
 * (an extern "C" name, a local or lambda type, an expression in a template
 * argument, a parameter pack, more than max parameters). Never a guess:
 * -1 means every pointer must be taken as written. */
int sim_mangled_params(const char *name, struct sim_ptype *out, int max);

#endif
