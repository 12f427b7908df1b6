/*
 * sn_mangle.c — the parameter types of a kernel from its Itanium C++ ABI
 * mangled name (common/sn_mangle.h): for the simulator's stand-in kernels
 * of SIMGPU_COMPUTE=libs and libsn's trace model.
 *
 * Only as much of the grammar as kernels use: plain, nested and `std::`
 * names, template arguments (types, literals, packs), the builtin types,
 * qualifiers, pointers, references, arrays, function and member types,
 * template parameters (T_) and substitutions (S_). A substitution names an
 * earlier component by its position, so every component the ABI makes a
 * candidate must be counted exactly as a demangler counts it (libiberty's
 * cp-demangle.c was the reference for the cases the ABI text leaves to
 * the reader: `St` and the `Sa`-style abbreviations, a template name
 * before its arguments, one entry for a run of qualifiers). Each entry
 * keeps only what the caller needs: pointer or not, pointee const or not,
 * pointee an integer or not. Anything else (local names, lambdas,
 * operators, expressions, pack expansions) refuses the whole name.
 */
#include "common/sn_mangle.h"

#include <string.h>

#define SUBS_MAX 512
#define TARGS_MAX 64

struct ty {
    unsigned char ptr;     /* a pointer (or reference) */
    unsigned char pconst;  /* ... to a const-qualified type */
    unsigned char cnst;    /* this type is const-qualified */
    unsigned char elem;    /* enum sn_pelem of this type, as a pointee */
};

struct mp {
    const char *s;
    int depth;             /* 0 while in the function's own name, whose
                              template arguments T_ refers to */
    int nsubs, ntargs;
    struct ty subs[SUBS_MAX];
    struct ty targs[TARGS_MAX];
};

#define TRY(x)               \
    do {                     \
        if ((x) < 0)         \
            return -1;       \
    } while (0)

static const struct ty k_value;

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_upper(char c) { return c >= 'A' && c <= 'Z'; }

static int add_sub(struct mp *m, struct ty t)
{
    if (m->nsubs >= SUBS_MAX)
        return -1;
    m->subs[m->nsubs++] = t;
    return 0;
}

static int type(struct mp *m, struct ty *t);

/* <source-name> ::= <length> <identifier> */
static int source_name(struct mp *m)
{
    if (*m->s < '1' || *m->s > '9')
        return -1;
    size_t len = 0;
    while (is_digit(*m->s)) {
        len = len * 10 + (size_t)(*m->s - '0');
        if (len > 4096)
            return -1;
        m->s++;
    }
    for (size_t i = 0; i < len; i++)
        if (!m->s[i])
            return -1;
    m->s += len;
    return 0;
}

/* A source name, after GCC's `L` for internal linkage, with its ABI tags
 * (`B5cxx11`). Operators, constructors and unnamed types are refused. */
static int unqualified_name(struct mp *m)
{
    if (*m->s == 'L')
        m->s++;
    TRY(source_name(m));
    while (*m->s == 'B') {
        m->s++;
        TRY(source_name(m));
    }
    return 0;
}

/* S_ is 0, S<base 36>_ is that plus 1; the `S` is consumed. */
static int subst_index(struct mp *m, int *idx)
{
    long v = 0;
    int any = 0;
    while (is_digit(*m->s) || is_upper(*m->s)) {
        v = v * 36 + (is_digit(*m->s) ? *m->s - '0' : *m->s - 'A' + 10);
        if (v > SUBS_MAX)
            return -1;
        any = 1;
        m->s++;
    }
    if (*m->s++ != '_')
        return -1;
    *idx = any ? (int)v + 1 : 0;
    return *idx < m->nsubs ? 0 : -1;
}

/* <substitution> other than St: an earlier component, or one of the
 * standard abbreviations (Sa, Sb, Ss, Si, So, Sd), which are class names. */
static int substitution(struct mp *m, struct ty *t)
{
    m->s++;
    char c = *m->s;
    if (c == '_' || is_digit(c) || is_upper(c)) {
        int idx;
        TRY(subst_index(m, &idx));
        *t = m->subs[idx];
        return 0;
    }
    if (c && strchr("absiod", c)) {
        m->s++;
        *t = k_value;
        return 0;
    }
    return -1;
}

/* T_ is the first template argument, T<n>_ the (n+2)th. */
static int template_param(struct mp *m, struct ty *t)
{
    m->s++;
    long v = 0;
    int any = 0;
    while (is_digit(*m->s)) {
        v = v * 10 + (*m->s - '0');
        if (v > TARGS_MAX)
            return -1;
        any = 1;
        m->s++;
    }
    if (*m->s++ != '_')
        return -1;
    int idx = any ? (int)v + 1 : 0;
    if (idx >= m->ntargs)
        return -1;
    *t = m->targs[idx];
    return 0;
}

static int template_arg(struct mp *m, struct ty *t);

/* I <template-arg>+ E; record: they are the function's (T_ refers to them). */
static int template_args(struct mp *m, int record)
{
    struct ty args[TARGS_MAX];
    int n = 0;
    m->s++;
    m->depth++;
    while (*m->s != 'E') {
        struct ty t;
        TRY(template_arg(m, &t));
        if (n >= TARGS_MAX)
            return -1;
        args[n++] = t;
    }
    m->depth--;
    m->s++;
    if (record) {
        memcpy(m->targs, args, (size_t)n * sizeof *args);
        m->ntargs = n;
    }
    return 0;
}

/* A type, a literal (L <type> <value> E; not a symbol's address), or an
 * argument pack (J ... E). Expressions are refused. */
static int template_arg(struct mp *m, struct ty *t)
{
    *t = k_value;
    switch (*m->s) {
    case 'L': {
        m->s++;
        if (*m->s == '_')
            return -1;
        struct ty lt;
        TRY(type(m, &lt));
        while (*m->s && *m->s != 'E')
            m->s++;
        if (*m->s != 'E')
            return -1;
        m->s++;
        return 0;
    }
    case 'J':
        m->s++;
        while (*m->s != 'E') {
            struct ty x;
            TRY(template_arg(m, &x));
        }
        m->s++;
        return 0;
    case 'X':
    case '\0':
        return -1;
    default:
        return type(m, t);
    }
}

/* N [qualifiers] <prefix components> E. Every prefix but the whole name is
 * a substitution candidate, a component that is itself a substitution
 * excepted; *tmpl: the last component is template arguments. */
static int nested_name(struct mp *m, int *tmpl)
{
    m->s++;
    while (*m->s == 'r' || *m->s == 'V' || *m->s == 'K')
        m->s++;
    if (*m->s == 'R' || *m->s == 'O')
        m->s++;
    int any = 0;
    for (;;) {
        char c = *m->s;
        if (c == 'E') {
            m->s++;
            return any ? 0 : -1;
        }
        *tmpl = 0;
        if (c == 'S') {
            if (any)
                return -1;
            if (m->s[1] == 't') {
                m->s += 2;
            } else {
                struct ty t;
                TRY(substitution(m, &t));
            }
            any = 1;
            continue;
        }
        if (c == 'I') {
            if (!any)
                return -1;
            TRY(template_args(m, m->depth == 0));
            *tmpl = 1;
        } else if (c == 'T') {
            struct ty t;
            TRY(template_param(m, &t));
        } else if (is_digit(c) || c == 'L') {
            TRY(unqualified_name(m));
        } else if (c == 'M' && any) {
            m->s++;
            continue;
        } else {
            return -1;
        }
        any = 1;
        if (*m->s != 'E')
            TRY(add_sub(m, k_value));
    }
}

/* <name>: nested, `St` + a name, a substitution (followed by template
 * arguments), or a plain name; a template name before its arguments is a
 * candidate. Local names are refused. */
static int name(struct mp *m, int *tmpl)
{
    *tmpl = 0;
    int record = m->depth == 0;
    if (*m->s == 'N')
        return nested_name(m, tmpl);
    if (*m->s == 'S' && m->s[1] != 't') {
        struct ty t;
        TRY(substitution(m, &t));
    } else {
        if (*m->s == 'S')
            m->s += 2;
        TRY(unqualified_name(m));
        if (*m->s == 'I')
            TRY(add_sub(m, k_value));
    }
    if (*m->s == 'I') {
        TRY(template_args(m, record));
        *tmpl = 1;
    }
    return 0;
}

/* The builtin types, none of them a candidate: 1 and *t set, or 0. */
static int builtin(struct mp *m, struct ty *t)
{
    char c = *m->s;
    *t = k_value;
    if (c == 'b') {
        t->elem = SN_ELEM_BOOL;
    } else if (c && strchr("cahstijlmxynow", c)) {
        t->elem = SN_ELEM_INT;
    } else if (c && strchr("vfdegz", c)) {
        /* void, floating point, ellipsis */
    } else if (c == 'D' && m->s[1] && strchr("isu", m->s[1])) {
        t->elem = SN_ELEM_INT;  /* char32_t, char16_t, char8_t */
        m->s++;
    } else if (c == 'D' && m->s[1] && strchr("hfdeacn", m->s[1])) {
        m->s++;  /* half, decimal floats, auto, decltype(auto), nullptr_t */
    } else if (c == 'D' && m->s[1] == 'F') {
        /* _FloatN: DF <n> _, DF <n> x, DF16b (bfloat16) */
        m->s += 2;
        if (!is_digit(*m->s))
            return -1;
        while (is_digit(*m->s))
            m->s++;
        if (*m->s != '_' && *m->s != 'x' && *m->s != 'b')
            return -1;
    } else {
        return 0;
    }
    m->s++;
    return 1;
}

static int type(struct mp *m, struct ty *t)
{
    int b = builtin(m, t);
    if (b)
        return b < 0 ? -1 : 0;
    struct ty in;
    char c = *m->s;
    switch (c) {
    case 'u':  /* vendor extended type */
        m->s++;
        TRY(source_name(m));
        *t = k_value;
        return add_sub(m, *t);
    case 'r':
    case 'V':
    case 'K': {
        /* One candidate for the run of qualifiers, after the type's own. */
        int k = 0;
        while (*m->s == 'r' || *m->s == 'V' || *m->s == 'K')
            k |= *m->s++ == 'K';
        if (*m->s == 'F')
            return -1;
        TRY(type(m, &in));
        *t = in;
        t->cnst |= (unsigned char)k;
        return add_sub(m, *t);
    }
    case 'P':
    case 'R':
    case 'O':
        m->s++;
        TRY(type(m, &in));
        *t = (struct ty){.ptr = 1, .pconst = in.cnst, .elem = in.ptr ? SN_ELEM_OTHER : in.elem};
        return add_sub(m, *t);
    case 'C':
    case 'G':  /* complex, imaginary */
        m->s++;
        TRY(type(m, &in));
        *t = k_value;
        return add_sub(m, *t);
    case 'F':  /* function type: F [Y] <return> <params> [R|O] E */
        m->s++;
        if (*m->s == 'Y')
            m->s++;
        while (*m->s != 'E') {
            if ((*m->s == 'R' || *m->s == 'O') && m->s[1] == 'E') {
                m->s++;
                continue;
            }
            TRY(type(m, &in));
        }
        m->s++;
        *t = k_value;
        return add_sub(m, *t);
    case 'A':  /* array: A [<bound>] _ <type> */
        m->s++;
        while (is_digit(*m->s))
            m->s++;
        if (*m->s++ != '_')
            return -1;
        TRY(type(m, &in));
        *t = k_value;
        return add_sub(m, *t);
    case 'M':  /* pointer to member: M <class> <member type> */
        m->s++;
        TRY(type(m, &in));
        TRY(type(m, &in));
        *t = k_value;
        return add_sub(m, *t);
    case 'T':
        if (m->s[1] == 's' || m->s[1] == 'u' || m->s[1] == 'e')
            return -1;
        TRY(template_param(m, t));
        TRY(add_sub(m, *t));
        if (*m->s == 'I') {
            TRY(template_args(m, 0));
            *t = k_value;
            TRY(add_sub(m, *t));
        }
        return 0;
    case 'D':  /* Dv <n> _ <type>: a vector; other D types are refused */
        if (m->s[1] != 'v' || !is_digit(m->s[2]))
            return -1;
        m->s += 2;
        while (is_digit(*m->s))
            m->s++;
        if (*m->s++ != '_')
            return -1;
        TRY(type(m, &in));
        *t = k_value;
        return add_sub(m, *t);
    case 'S': {
        char n = m->s[1];
        if (n == '_' || is_digit(n) || is_upper(n)) {
            /* A candidate again only with template arguments after it. */
            TRY(substitution(m, t));
            if (*m->s == 'I') {
                TRY(template_args(m, 0));
                *t = k_value;
                return add_sub(m, *t);
            }
            return 0;
        }
        /* std::name is a candidate; an abbreviation (Ss) alone is not. */
        int tmpl;
        TRY(name(m, &tmpl));
        *t = k_value;
        return n == 't' || tmpl ? add_sub(m, *t) : 0;
    }
    default:
        if (c == 'N' || is_digit(c)) {
            int tmpl;
            TRY(name(m, &tmpl));
            *t = k_value;
            return add_sub(m, *t);
        }
        return -1;
    }
}

int sn_mangled_params(const char *fname, struct sn_ptype *out, int max)
{
    if (!fname || fname[0] != '_' || fname[1] != 'Z' || max < 0)
        return -1;
    struct mp m;
    m.s = fname + 2;
    m.depth = 0;
    m.nsubs = m.ntargs = 0;
    int tmpl;
    if (name(&m, &tmpl) < 0 || !*m.s)
        return -1;  /* not understood, or a variable's name */
    m.depth = 1;
    /* A function template's encoding gives its return type first. */
    struct ty t;
    if (tmpl && type(&m, &t) < 0)
        return -1;
    if (m.s[0] == 'v' && m.s[1] == '\0')
        return 0;
    int n = 0;
    while (*m.s) {
        if (type(&m, &t) < 0 || n >= max)
            return -1;
        out[n].kind = (unsigned char)(t.ptr ? (t.pconst ? SN_PARAM_IN : SN_PARAM_OUT) : SN_PARAM_VALUE);
        out[n].elem = t.ptr ? t.elem : SN_ELEM_OTHER;
        n++;
    }
    return n;
}
