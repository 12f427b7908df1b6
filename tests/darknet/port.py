#!/usr/bin/env python3
"""Ports a copy of Debian's Darknet source (0.0.0+git20180914) to CUDA 13 and
cuDNN 9 so that tools/darknet.sh can build it with nvcc and run it on the
simulated device. Each substitution names the text it expects and how many
times: a source that differs from the one this was written for stops the
port instead of building something else. docs/darknet.md lists every change
and why.

Usage: port.py SOURCE_DIR   (edits the copy in place)
"""
import pathlib
import re
import sys


def sub(root, path, old, new, count=1, regex=False):
    f = root / path
    text = f.read_text()
    found = len(re.findall(old, text, re.S)) if regex else text.count(old)
    if found != count:
        sys.exit(f"port: {path}: expected {count} of {old!r}, found {found}")
    text = re.sub(old, new, text, flags=re.S) if regex else text.replace(old, new)
    f.write_text(text)
    print(f"port: {path}: {count} substitution(s)")


# cuDNN 8 removed the heuristic queries that take a preference and a
# workspace limit; their _v7 forms return every algorithm ranked. Darknet
# asked for the fastest within 2 GB, so the port takes the first ranked
# algorithm that ran and whose workspace fits that same limit.
ALGO_HELPERS = r'''
/* Port to cuDNN 9: the _v7 queries rank every algorithm; take the first one
 * whose workspace fits the limit darknet asked the removed queries for. */
#define PORT_WS_LIMIT ((size_t)2000000000)
#define PORT_PICK(perf, n, fallback) do { int i_; \
        for (i_ = 0; i_ < (n); ++i_) \
            if ((perf)[i_].status == CUDNN_STATUS_SUCCESS && (perf)[i_].memory <= PORT_WS_LIMIT) \
                return (perf)[i_].algo; \
        return (fallback); } while (0)

static cudnnConvolutionFwdAlgo_t port_fw_algo(layer *l)
{
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int n = 0;
    cudnnGetConvolutionForwardAlgorithm_v7(cudnn_handle(), l->srcTensorDesc, l->weightDesc,
            l->convDesc, l->dstTensorDesc, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf);
    PORT_PICK(perf, n, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
}

static cudnnConvolutionBwdDataAlgo_t port_bd_algo(layer *l)
{
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int n = 0;
    cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnn_handle(), l->weightDesc, l->ddstTensorDesc,
            l->convDesc, l->dsrcTensorDesc, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf);
    PORT_PICK(perf, n, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0);
}

static cudnnConvolutionBwdFilterAlgo_t port_bf_algo(layer *l)
{
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int n = 0;
    cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnn_handle(), l->srcTensorDesc, l->ddstTensorDesc,
            l->convDesc, l->dweightDesc, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf);
    PORT_PICK(perf, n, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0);
}

void cudnn_convolutional_setup(layer *l)
'''

# cuRAND is not part of what the simulated device provides (and darknet
# only uses it to fill dropout masks and crop offsets): the port draws the
# uniform numbers with the C library's generator on the host and copies
# them, so the stream of numbers follows srand like the rest of darknet.
CUDA_RANDOM_OLD = r'''void cuda_random\(float \*x_gpu, size_t n\)
\{.*?\n\}
'''
CUDA_RANDOM_NEW = '''void cuda_random(float *x_gpu, size_t n)
{
    /* Port: host-side uniform numbers instead of cuRAND. */
    float *x = calloc(n, sizeof(float));
    size_t i;
    for(i = 0; i < n; ++i) x[i] = rand_uniform(0, 1);
    cuda_push_array(x_gpu, x, n);
    free(x);
}
'''


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: port.py SOURCE_DIR")
    root = pathlib.Path(sys.argv[1])

    sub(root, "src/convolutional_layer.c", "void cudnn_convolutional_setup(layer *l)\n", ALGO_HELPERS)
    sub(root, "src/convolutional_layer.c",
        r"cudnnGetConvolutionForwardAlgorithm\(cudnn_handle\(\),[^;]*&l->fw_algo\);",
        "l->fw_algo = port_fw_algo(l);", regex=True)
    sub(root, "src/convolutional_layer.c",
        r"cudnnGetConvolutionBackwardDataAlgorithm\(cudnn_handle\(\),[^;]*&l->bd_algo\);",
        "l->bd_algo = port_bd_algo(l);", regex=True)
    sub(root, "src/convolutional_layer.c",
        r"cudnnGetConvolutionBackwardFilterAlgorithm\(cudnn_handle\(\),[^;]*&l->bf_algo\);",
        "l->bf_algo = port_bf_algo(l);", regex=True)

    # CUDA 12 removed the deprecated cudaThread* calls.
    sub(root, "src/gemm.c", "cudaThreadSynchronize();", "cudaDeviceSynchronize();")

    sub(root, "include/darknet.h", '    #include "curand.h"\n', "")
    sub(root, "src/cuda.c", CUDA_RANDOM_OLD, CUDA_RANDOM_NEW, regex=True)

    # A fixed seed where the classifier's training seeds from the clock
    # (weights' initialisation, then the data loader's picks and
    # augmentation), so that two runs do the same work.
    sub(root, "examples/classifier.c",
        r"(void train_classifier\([^)]*\)\n\{(?:(?!\n\}).)*?)srand\(time\(0\)\);"
        r"((?:(?!\n\}).)*?)srand\(time\(0\)\);",
        r"\1srand(0);\2srand(0);", regex=True)
    # Its 32 loader threads share that one generator in whatever order they
    # are scheduled; a single loader thread draws the same picks every run.
    sub(root, "examples/classifier.c",
        r"(void train_classifier\((?:(?!\n\}).)*?)args\.threads = 32;",
        r"\1args.threads = 1;", regex=True)

    # The toolkit wherever CUDA_HOME says; no cuRAND; the driver library is
    # not called directly, so it is not linked either.
    sub(root, "Makefile", "COMMON+= -DGPU -I/usr/local/cuda/include/",
        "CUDA_HOME?=/usr/local/cuda\nCOMMON+= -DGPU -I$(CUDA_HOME)/include/")
    sub(root, "Makefile", "LDFLAGS+= -L/usr/local/cuda/lib64 -lcuda -lcudart -lcublas -lcurand",
        "LDFLAGS+= -L$(CUDA_HOME)/lib64 -lcudart -lcublas")


if __name__ == "__main__":
    main()
