// nvcc_libs.cu — kernels nvcc builds, which have no CPU body on the
// simulated device, launched under SIMGPU_COMPUTE=libs, where a
// deterministic stand-in runs in their place (sim/standin.c): it reads the
// first 4 bytes of every pointer argument, hashes them with the kernel's
// name and its by-value arguments, and writes a finite value derived from
// the hash into the first 4 bytes of every pointer the kernel may write
// (the non-const ones of its mangled name). Checked here, through the
// stubs nvcc writes (__cudaLaunchKernel), cudaLaunchKernel, the driver's
// cuLaunchKernel (kernelParams and extra) and cuLaunchKernelEx, and graph
// replays: what is written and what is not, that equal inputs give equal
// outputs wherever they live, and that any input the stand-in reads
// changes the output. The program is told the mode it runs under:
//   libs  every check above;
//   on    (SIMGPU_COMPUTE=1) the launches fail as for a missing kernel image;
//   off   (SIMGPU_COMPUTE=0) the launches succeed and write nothing.
// It prints "ok NAME" or "FAIL NAME: ...", "word NAME HEX" lines with the
// words it saw (tests/test_sim_libs.sh compares them between runs), and
// "time US" for one launch's device time; exit status 1 on a failure.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda.h>
#include <cuda_runtime.h>

// The bodies never run on the simulator; they say what the kernels are for.
__global__ void k_mix(float *out, const float *in, int n, float a)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = out[i] * a + in[i];
}
__global__ void k_double(double *d, const int *idx) { d[0] += idx[0]; }
__global__ void k_index(int *o, const float *in) { o[0] = (int)in[0]; }
extern "C" __global__ void k_c(float *x, float *y, int n) { if (n) x[0] = y[0]; }
__global__ void k_two(float *a, float *b) { a[0] = b[0]; }

static int failures;

#define CHECK(name, cond, ...)                     \
    do {                                           \
        if (cond) {                                \
            printf("ok %s\n", name);               \
        } else {                                   \
            printf("FAIL %s: ", name);             \
            printf(__VA_ARGS__);                   \
            printf("\n");                          \
            failures++;                            \
        }                                          \
    } while (0)

static uint32_t bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

static void word(const char *name, const void *p)
{
    uint32_t w;
    memcpy(&w, p, 4);
    printf("word %s %08x\n", name, w);
}

static int small_float(float f) { return std::isfinite(f) && f >= -1.0f && f < 1.0f; }

static float *g_out, *g_in;  // managed: the host reads and writes them in every mode

static void reset()
{
    for (int i = 0; i < 256; i++) {
        g_out[i] = 0.25f;
        g_in[i] = (float)(i + 1);
    }
}

// k_mix through nvcc's stub on the legacy stream; the output's first word.
static float mix(float a = 2.0f)
{
    k_mix<<<1, 32>>>(g_out, g_in, 256, a);
    cudaError_t rc = cudaGetLastError();
    cudaDeviceSynchronize();
    if (rc != cudaSuccess)
        printf("# k_mix: %s\n", cudaGetErrorName(rc));
    return g_out[0];
}

static void check_stub(float *o1)
{
    reset();
    k_mix<<<1, 32>>>(g_out, g_in, 256, 2.0f);
    cudaError_t rc = cudaGetLastError();
    cudaDeviceSynchronize();
    CHECK("the stub's launch (__cudaLaunchKernel) succeeds", rc == cudaSuccess, "%s", cudaGetErrorName(rc));
    *o1 = g_out[0];
    word("stub", g_out);
    CHECK("the output's first word changes", bits(*o1) != bits(0.25f), "still %08x", bits(*o1));
    CHECK("the value written is a float in [-1, 1)", small_float(*o1), "%g", *o1);
    CHECK("past the output's first word nothing changes", g_out[1] == 0.25f && g_out[255] == 0.25f, "%g %g",
          g_out[1], g_out[255]);
    CHECK("the const input is left as it was", g_in[0] == 1.0f && g_in[1] == 2.0f, "%g %g", g_in[0], g_in[1]);
    reset();
    CHECK("the same inputs give the same output", bits(mix()) == bits(*o1), "%08x, first %08x", bits(g_out[0]),
          bits(*o1));
    reset();
    g_in[0] = 3.0f;
    float o = mix();
    word("in0", &o);
    CHECK("another first word of the input gives another output", bits(o) != bits(*o1), "%08x", bits(o));
    reset();
    g_in[1] = 7.0f;
    o = mix();
    CHECK("the input past its first word is not read (a 4-byte prefix)", bits(o) == bits(*o1), "%08x", bits(o));
    reset();
    o = mix(3.0f);
    word("byvalue", &o);
    CHECK("another by-value argument gives another output", bits(o) != bits(*o1), "%08x", bits(o));
    reset();
    g_out[0] = 0.5f;
    o = mix();
    word("stale", &o);
    CHECK("another first word of the output itself gives another output", bits(o) != bits(*o1), "%08x", bits(o));
}

static void check_entry_points(float o1)
{
    float *out = g_out, *in = g_in, a = 2.0f;
    int n = 256;
    void *args[] = {&out, &in, &n, &a};
    reset();
    cudaError_t rc = cudaLaunchKernel((const void *)k_mix, dim3(1), dim3(32), args, 0, 0);
    cudaDeviceSynchronize();
    CHECK("cudaLaunchKernel: the stub's result", rc == cudaSuccess && bits(g_out[0]) == bits(o1), "%s %08x",
          cudaGetErrorName(rc), bits(g_out[0]));

    cudaFunction_t fn;
    rc = cudaGetFuncBySymbol(&fn, (const void *)k_mix);
    CUfunction f = (CUfunction)fn;
    reset();
    CUresult r = cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, args, nullptr);
    cuCtxSynchronize();
    CHECK("cuLaunchKernel with kernelParams: the stub's result", r == CUDA_SUCCESS && bits(g_out[0]) == bits(o1),
          "%d %08x", (int)r, bits(g_out[0]));

    // The parameter buffer laid out as cudaFuncGetParamInfo says.
    unsigned char buf[64] = {0};
    size_t off[4], size[4];
    for (int i = 0; i < 4; i++)
        cudaFuncGetParamInfo((const void *)k_mix, i, &off[i], &size[i]);
    for (int i = 0; i < 4; i++)
        memcpy(buf + off[i], args[i], size[i]);
    size_t len = off[3] + size[3];
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &len, CU_LAUNCH_PARAM_END};
    reset();
    r = cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, nullptr, extra);
    cuCtxSynchronize();
    CHECK("cuLaunchKernel with extra: the stub's result", r == CUDA_SUCCESS && bits(g_out[0]) == bits(o1), "%d %08x",
          (int)r, bits(g_out[0]));

    CUlaunchConfig cfg = {};
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = 32;
    cfg.blockDimY = cfg.blockDimZ = 1;
    reset();
    r = cuLaunchKernelEx(&cfg, f, args, nullptr);
    cuCtxSynchronize();
    CHECK("cuLaunchKernelEx: the stub's result", r == CUDA_SUCCESS && bits(g_out[0]) == bits(o1), "%d %08x", (int)r,
          bits(g_out[0]));
}

static void check_graph(float o1)
{
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    float *out = g_out, *in = g_in, a = 2.0f;
    int n = 256;
    void *args[] = {&out, &in, &n, &a};
    reset();
    cudaGraph_t g;
    cudaGraphExec_t e;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    cudaLaunchKernel((const void *)k_mix, dim3(1), dim3(32), args, 0, s);
    cudaError_t rc = cudaStreamEndCapture(s, &g);
    CHECK("capture: nothing runs", rc == cudaSuccess && g_out[0] == 0.25f, "%s %g", cudaGetErrorName(rc), g_out[0]);
    // The graph has its own copy of the arguments.
    a = 5.0f;
    n = 1;
    cudaGraphInstantiate(&e, g, 0);
    rc = cudaGraphLaunch(e, s);
    cudaStreamSynchronize(s);
    CHECK("a replay runs the stand-in on the arguments of the capture", rc == cudaSuccess && bits(g_out[0]) == bits(o1),
          "%s %08x", cudaGetErrorName(rc), bits(g_out[0]));
    cudaGraphLaunch(e, s);
    cudaStreamSynchronize(s);
    float r2 = g_out[0];
    word("replay2", &r2);
    reset();
    g_out[0] = o1;
    float direct = mix();
    CHECK("a second replay reads what the first wrote", bits(r2) == bits(direct) && bits(r2) != bits(o1),
          "%08x, direct %08x", bits(r2), bits(direct));
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    cudaStreamDestroy(s);
}

static void check_types()
{
    double *d;
    int *idx, *io;
    cudaMallocManaged(&d, 2 * sizeof *d);
    cudaMallocManaged(&idx, sizeof *idx);
    cudaMallocManaged(&io, 2 * sizeof *io);
    d[0] = 1.5;
    d[1] = 2.5;
    idx[0] = 5;
    uint32_t hi_before;
    memcpy(&hi_before, (const char *)d + 4, 4);
    k_double<<<1, 1>>>(d, idx);
    cudaDeviceSynchronize();
    uint32_t hi_after;
    memcpy(&hi_after, (const char *)d + 4, 4);
    word("double", d);
    CHECK("double: only the low word of the first element changes, and it stays finite",
          d[0] != 1.5 && hi_after == hi_before && std::isfinite(d[0]) && d[1] == 2.5 && idx[0] == 5, "%g %g %d",
          d[0], d[1], idx[0]);
    io[0] = 1000;
    io[1] = 1000;
    reset();
    k_index<<<1, 1>>>(io, g_in);
    cudaDeviceSynchronize();
    word("index", io);
    CHECK("an int output gets a small non-negative integer", io[0] >= 0 && io[0] <= 255 && io[1] == 1000, "%d %d",
          io[0], io[1]);
    float *x = g_out, *y = g_out + 128;
    reset();
    k_c<<<1, 1>>>(x, y, 1);
    cudaDeviceSynchronize();
    word("extern_c_x", x);
    word("extern_c_y", y);
    CHECK("an extern \"C\" name says nothing: every pointer may be written",
          x[0] != 0.25f && y[0] != 0.25f && small_float(x[0]) && small_float(y[0]) && x[0] != y[0], "%g %g", x[0],
          y[0]);
    cudaFree(d);
    cudaFree(idx);
    cudaFree(io);
}

// Addresses do not enter the hash: the same data in other buffers gives
// the same output (what a memory manager that moves tensors relies on).
static void check_addresses(float o1)
{
    float *out, *in;
    cudaMalloc(&out, 1024 * sizeof(float));
    cudaMalloc(&in, 1024 * sizeof(float));
    static float h_out[256], h_in[256];
    for (int i = 0; i < 256; i++) {
        h_out[i] = 0.25f;
        h_in[i] = (float)(i + 1);
    }
    cudaMemcpy(out + 512, h_out, sizeof h_out, cudaMemcpyHostToDevice);
    cudaMemcpy(in + 256, h_in, sizeof h_in, cudaMemcpyHostToDevice);
    k_mix<<<1, 32>>>(out + 512, in + 256, 256, 2.0f);
    float o[2];
    cudaMemcpy(o, out + 512, sizeof o, cudaMemcpyDeviceToHost);
    CHECK("the same data elsewhere (cudaMalloc, interior pointers) gives the same output",
          bits(o[0]) == bits(o1) && o[1] == 0.25f, "%08x %g", bits(o[0]), o[1]);
    cudaFree(out);
    cudaFree(in);
}

// Pointers into nothing mapped are skipped, and the prefix stops where a
// mapping ends.
static void check_unmapped()
{
    static float host[4] = {0.25f, 0.25f, 0.25f, 0.25f};
    k_two<<<1, 1>>>(nullptr, host);
    cudaError_t rc = cudaDeviceSynchronize();
    CHECK("a null pointer and a host pointer are skipped", rc == cudaSuccess && host[0] == 0.25f, "%s %g",
          cudaGetErrorName(rc), host[0]);

    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    CUdeviceptr base;
    CUmemGenericAllocationHandle h;
    CUmemAccessDesc acc = {};
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CUresult r = cuMemAddressReserve(&base, 2 * gran, 0, 0, 0);
    if (r == CUDA_SUCCESS)
        r = cuMemCreate(&h, gran, &prop, 0);
    if (r == CUDA_SUCCESS)
        r = cuMemMap(base, gran, 0, h, 0);
    if (r == CUDA_SUCCESS)
        r = cuMemSetAccess(base, gran, &acc, 1);
    if (r != CUDA_SUCCESS) {
        CHECK("VMM set-up", 0, "%d", (int)r);
        return;
    }
    cuMemsetD8(base + gran - 4, 0x11, 4);
    float *end = (float *)(base + gran - 2);       // 2 bytes left in the mapping
    float *unmapped = (float *)(base + gran + 64); // reserved, not mapped
    k_two<<<1, 1>>>(end, unmapped);
    rc = cudaDeviceSynchronize();
    unsigned char b[4];
    cudaMemcpy(b, (void *)(base + gran - 4), 4, cudaMemcpyDeviceToHost);
    printf("word vmm_end %02x%02x%02x%02x\n", b[0], b[1], b[2], b[3]);
    CHECK("at a mapping's end only the bytes before it are written; an unmapped pointer is skipped",
          rc == cudaSuccess && b[0] == 0x11 && b[1] == 0x11 && (b[2] != 0x11 || b[3] != 0x11), "%s %02x%02x%02x%02x",
          cudaGetErrorName(rc), b[0], b[1], b[2], b[3]);
    cuMemUnmap(base, gran);
    cuMemRelease(h);
    cuMemAddressFree(base, 2 * gran);
}

// The device time of one launch, which the stand-in leaves nominal.
static void print_time()
{
    cudaStream_t s;
    cudaEvent_t e0, e1;
    cudaStreamCreate(&s);
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    cudaEventRecord(e0, s);
    k_mix<<<1, 32, 0, s>>>(g_out, g_in, 256, 2.0f);
    cudaEventRecord(e1, s);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    printf("time %.3f us\n", ms * 1000.0);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaStreamDestroy(s);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "libs";
    cudaMallocManaged(&g_out, 256 * sizeof(float));
    cudaMallocManaged(&g_in, 256 * sizeof(float));
    if (!strcmp(mode, "on")) {
        reset();
        k_mix<<<1, 32>>>(g_out, g_in, 256, 2.0f);
        cudaError_t rc = cudaGetLastError();
        CHECK("compute on: the stub's launch fails for want of a kernel image",
              rc == cudaErrorNoKernelImageForDevice && g_out[0] == 0.25f, "%s", cudaGetErrorName(rc));
        cudaFunction_t fn;
        cudaGetFuncBySymbol(&fn, (const void *)k_mix);
        float *out = g_out, *in = g_in, a = 2.0f;
        int n = 256;
        void *args[] = {&out, &in, &n, &a};
        CUresult r = cuLaunchKernel((CUfunction)fn, 1, 1, 1, 32, 1, 1, 0, 0, args, nullptr);
        CHECK("compute on: cuLaunchKernel fails with no binary for the GPU", r == CUDA_ERROR_NO_BINARY_FOR_GPU,
              "%d", (int)r);
    } else if (!strcmp(mode, "off")) {
        reset();
        float o = mix();
        CHECK("compute off: the launch is modelled and writes nothing", cudaGetLastError() == cudaSuccess &&
              o == 0.25f && g_in[0] == 1.0f, "%g", o);
        print_time();
    } else {
        float o1;
        check_stub(&o1);
        check_entry_points(o1);
        check_graph(o1);
        check_types();
        check_addresses(o1);
        check_unmapped();
        print_time();
    }
    cudaFree(g_out);
    cudaFree(g_in);
    printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
