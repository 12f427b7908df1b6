// nvcc_params.cu — kernels of varied signatures, built by nvcc, whose
// parameter layouts cudaFuncGetParamInfo must report as the CUDA ABI lays
// them out. The truth is computed independently: each kernel's parameters
// are mirrored by a host struct with the same members in the same order,
// and the host compiler's offsetof/sizeof give each parameter's offset and
// size (kernel parameters are laid out like the members of such a struct).
// Index past the last parameter must fail with cudaErrorInvalidValue.
// Prints "ok NAME" or "FAIL NAME: ..." per kernel and exits non-zero on any
// failure. tests/test_sim_nvcc.sh builds it in several ways (cubin, PTX
// only, compressed entries, relocatable device code) and runs it.
#include <cstddef>
#include <cstdio>
#include <initializer_list>

struct Small { int a; char b; float c; };       // 12 bytes, 4-aligned
struct Mixed { char c; double d; };             // 16 bytes, 8-aligned
struct Big { float w[1024]; };                  // 4 KiB
struct Huge { char x[20000]; };                 // over 16 KiB: the cubin's second record form

__global__ void k_ptrs(float *a, const double *b, int *c) { if (a) a[0] = (float)(b[0] + c[0]); }
struct A_ptrs { float *a; const double *b; int *c; };

__global__ void k_scalars(int i, float f, double d, char c, short s, long long ll, unsigned char uc) {}
struct A_scalars { int i; float f; double d; char c; short s; long long ll; unsigned char uc; };

__global__ void k_struct(char c, Small s, Mixed m, int n) {}
struct A_struct { char c; Small s; Mixed m; int n; };

__global__ void k_vec(char c, float4 v, float2 w, double2 x, int3 y) {}
struct A_vec { char c; float4 v; float2 w; double2 x; int3 y; };

__global__ void k_big(Big b, int n) {}
struct A_big { Big b; int n; };

__global__ void k_huge(int n, Huge h, float *p) {}
struct A_huge { int n; Huge h; float *p; };

__global__ void k_restrict(float *__restrict__ out, const float *__restrict__ in, size_t n) {}
struct A_restrict { float *out; const float *in; size_t n; };

__global__ void k_grid_constant(const __grid_constant__ Small s, bool flag, float *o) {}
struct A_grid_constant { Small s; bool flag; float *o; };

extern "C" __global__ void k_c_linkage(unsigned short h, int *p) {}
struct A_c_linkage { unsigned short h; int *p; };

__global__ void k_none() {}

// A mangled name far longer than 128 characters.
namespace a_rather_long_namespace_name_that_makes_the_mangled_symbol_long {
template <typename T, int N> struct Holder { T v[N]; };
template <typename T, int N>
__global__ void k_template(Holder<T, N> h, T scale, const Holder<T, N> *in, Holder<T, N> *out) {}
}  // namespace a_rather_long_namespace_name_that_makes_the_mangled_symbol_long
namespace lns = a_rather_long_namespace_name_that_makes_the_mangled_symbol_long;
struct A_template { lns::Holder<double, 3> h; double scale; const lns::Holder<double, 3> *in; lns::Holder<double, 3> *out; };

#define F(S, m) Param{offsetof(S, m), sizeof(((S *)0)->m)}
struct Param { size_t off, size; };

static int failures;

static void check(const char *name, const void *fn, std::initializer_list<Param> want)
{
    size_t i = 0;
    for (const Param &p : want) {
        size_t off = 12345, size = 12345;
        cudaError_t rc = cudaFuncGetParamInfo(fn, i, &off, &size);
        if (rc != cudaSuccess || off != p.off || size != p.size) {
            printf("FAIL %s: parameter %zu: %s offset %zu size %zu, want offset %zu size %zu\n", name, i,
                   cudaGetErrorName(rc), off, size, p.off, p.size);
            failures++;
            return;
        }
        i++;
    }
    size_t off, size;
    cudaError_t rc = cudaFuncGetParamInfo(fn, i, &off, &size);
    cudaGetLastError();
    if (rc != cudaErrorInvalidValue) {
        printf("FAIL %s: index %zu (past the last) gave %s, want cudaErrorInvalidValue\n", name, i,
               cudaGetErrorName(rc));
        failures++;
        return;
    }
    printf("ok %s (%zu parameters)\n", name, want.size());
}

int main()
{
    check("k_ptrs", (const void *)k_ptrs, {F(A_ptrs, a), F(A_ptrs, b), F(A_ptrs, c)});
    check("k_scalars", (const void *)k_scalars,
          {F(A_scalars, i), F(A_scalars, f), F(A_scalars, d), F(A_scalars, c), F(A_scalars, s), F(A_scalars, ll),
           F(A_scalars, uc)});
    check("k_struct", (const void *)k_struct, {F(A_struct, c), F(A_struct, s), F(A_struct, m), F(A_struct, n)});
    check("k_vec", (const void *)k_vec, {F(A_vec, c), F(A_vec, v), F(A_vec, w), F(A_vec, x), F(A_vec, y)});
    check("k_big", (const void *)k_big, {F(A_big, b), F(A_big, n)});
    check("k_huge", (const void *)k_huge, {F(A_huge, n), F(A_huge, h), F(A_huge, p)});
    check("k_restrict", (const void *)k_restrict, {F(A_restrict, out), F(A_restrict, in), F(A_restrict, n)});
    check("k_grid_constant", (const void *)k_grid_constant,
          {F(A_grid_constant, s), F(A_grid_constant, flag), F(A_grid_constant, o)});
    check("k_c_linkage", (const void *)k_c_linkage, {F(A_c_linkage, h), F(A_c_linkage, p)});
    check("k_template", (const void *)lns::k_template<double, 3>,
          {F(A_template, h), F(A_template, scale), F(A_template, in), F(A_template, out)});
    check("k_none", (const void *)k_none, {});
    printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
