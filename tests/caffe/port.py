#!/usr/bin/env python3
"""Ports a copy of BVLC Caffe (upstream master 9b89154, 2020) to CUDA 13,
cuDNN 9 and protobuf 3.21 so that tools/caffe.sh can build it with nvcc and
run it on the simulated device. Each substitution names the text it expects
and how many times: a source that differs from the one this was written for
stops the port instead of building something else. Running it twice is
harmless: a tree that already carries the port's marker is left alone.
docs/caffe.md lists every change and why.

Usage: port.py SOURCE_DIR   (edits the copy in place)
"""
import pathlib
import re
import sys

MARKER = ".libsn-port"


def sub(root, path, old, new, count=1, regex=False):
    f = root / path
    text = f.read_text()
    found = len(re.findall(old, text, re.S)) if regex else text.count(old)
    if found != count:
        sys.exit(f"port: {path}: expected {count} of {old!r}, found {found}")
    text = re.sub(old, new, text, flags=re.S) if regex else text.replace(old, new)
    f.write_text(text)
    print(f"port: {path}: {count} substitution(s)")


# cuDNN 9 defines CUDNN_VERSION as major*10000 + minor*100 + patch (cuDNN 8
# and earlier: major*1000 + ...); comparing the parts keeps the macro right
# for both encodings.
VERSION_OLD = '''#define CUDNN_VERSION_MIN(major, minor, patch) \\
    (CUDNN_VERSION >= (major * 1000 + minor * 100 + patch))
'''
VERSION_NEW = '''// Port: compares the parts, since cuDNN 9 changed CUDNN_VERSION's encoding.
#define CUDNN_VERSION_MIN(major, minor, patch) \\
    (CUDNN_MAJOR > (major) || (CUDNN_MAJOR == (major) && \\
     (CUDNN_MINOR > (minor) || (CUDNN_MINOR == (minor) && \\
      CUDNN_PATCHLEVEL >= (patch)))))
'''

# cuDNN 8 removed the heuristic queries that took a preference and a
# workspace limit. Their _v7 forms return every algorithm ranked fastest
# first; the first that ran and whose workspace fits the limit Caffe
# computed is what the removed query with SPECIFY_WORKSPACE_LIMIT returned.
# Where none fits, the algorithm that needs no workspace.
ALGO_HELPERS = '''
namespace caffe {
namespace cudnn {

// Port to cuDNN 8+: the removed *_SPECIFY_WORKSPACE_LIMIT queries, rebuilt
// on the ranked _v7 ones.
template <typename Perf, typename Algo>
inline Algo portPick(const Perf* perf, int n, size_t limit, Algo fallback) {
  for (int i = 0; i < n; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= limit)
      return perf[i].algo;
  return fallback;
}

inline cudnnStatus_t portGetConvolutionForwardAlgorithm(cudnnHandle_t h,
    cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
    cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t y,
    size_t limit, cudnnConvolutionFwdAlgo_t* algo) {
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int n = 0;
  cudnnStatus_t s = cudnnGetConvolutionForwardAlgorithm_v7(h, x, w, conv, y,
      CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf);
  if (s == CUDNN_STATUS_SUCCESS)
    *algo = portPick(perf, n, limit, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
  return s;
}

inline cudnnStatus_t portGetConvolutionBackwardFilterAlgorithm(
    cudnnHandle_t h, cudnnTensorDescriptor_t x, cudnnTensorDescriptor_t dy,
    cudnnConvolutionDescriptor_t conv, cudnnFilterDescriptor_t dw,
    size_t limit, cudnnConvolutionBwdFilterAlgo_t* algo) {
  cudnnConvolutionBwdFilterAlgoPerf_t
      perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  int n = 0;
  cudnnStatus_t s = cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, x, dy,
      conv, dw, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf);
  if (s == CUDNN_STATUS_SUCCESS)
    *algo = portPick(perf, n, limit, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0);
  return s;
}

inline cudnnStatus_t portGetConvolutionBackwardDataAlgorithm(
    cudnnHandle_t h, cudnnFilterDescriptor_t w, cudnnTensorDescriptor_t dy,
    cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t dx,
    size_t limit, cudnnConvolutionBwdDataAlgo_t* algo) {
  cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  int n = 0;
  cudnnStatus_t s = cudnnGetConvolutionBackwardDataAlgorithm_v7(h, w, dy,
      conv, dx, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf);
  if (s == CUDNN_STATUS_SUCCESS)
    *algo = portPick(perf, n, limit, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0);
  return s;
}

}  // namespace cudnn
}  // namespace caffe

namespace caffe {

namespace cudnn {
'''

# CUDA 13 removed these three cudaDeviceProp fields; the device attributes
# carry the same values.
PROP_OLD = '''  LOG(INFO) << "Clock rate:                    " << prop.clockRate;
'''
PROP_NEW = '''  // Port: CUDA 13 dropped clockRate, deviceOverlap and
  // kernelExecTimeoutEnabled from cudaDeviceProp; the attributes remain.
  int clock_rate = 0, overlap = 0, timeout = 0;
  cudaDeviceGetAttribute(&clock_rate, cudaDevAttrClockRate, device);
  cudaDeviceGetAttribute(&overlap, cudaDevAttrGpuOverlap, device);
  cudaDeviceGetAttribute(&timeout, cudaDevAttrKernelExecTimeout, device);
  LOG(INFO) << "Clock rate:                    " << clock_rate;
'''


def port(root):
    if (root / MARKER).exists():
        print("port: already ported")
        return
    h = "include/caffe/util/cudnn.hpp"
    sub(root, h, VERSION_OLD, VERSION_NEW)
    # cuDNN has had its own cudnnGetErrorString since v2; Caffe's inline one
    # with the same signature collides with the library's declaration (and
    # names statuses cuDNN 9 no longer has, CUDNN_STATUS_LICENSE_ERROR).
    sub(root, h, r'inline const char\* cudnnGetErrorString\(cudnnStatus_t status\) \{.*?return "Unknown cudnn status";\n\}\n',
        '', regex=True)
    sub(root, h, '\nnamespace caffe {\n\nnamespace cudnn {\n', ALGO_HELPERS)
    for path, n in (("src/caffe/layers/cudnn_conv_layer.cpp", 1),
                    ("src/caffe/layers/cudnn_deconv_layer.cpp", 1)):
        for kind, pref in (("Forward", "FWD"), ("BackwardFilter", "BWD_FILTER"),
                           ("BackwardData", "BWD_DATA")):
            sub(root, path, f"cudnnGetConvolution{kind}Algorithm(",
                f"cudnn::portGetConvolution{kind}Algorithm(", n)
            sub(root, path, rf"CUDNN_CONVOLUTION_{pref}_SPECIFY_WORKSPACE_LIMIT,\s*", "", n, regex=True)
    c = "src/caffe/common.cpp"
    sub(root, c, PROP_OLD, PROP_NEW)
    sub(root, c, "(prop.deviceOverlap ? ", "(overlap ? ")
    sub(root, c, "(prop.kernelExecTimeoutEnabled ? ", "(timeout ? ")
    # protobuf 3.11 dropped the two-argument form (the second was only a
    # warning threshold).
    sub(root, "src/caffe/util/io.cpp", "SetTotalBytesLimit(kProtoReadBytesLimit, 536870912)",
        "SetTotalBytesLimit(kProtoReadBytesLimit)")
    # CUDA's math_functions.h became an internal header (including it is an
    # error from CUDA 12); nvcc makes its functions available anyway.
    sub(root, "src/caffe/util/math_functions.cu",
        "#include <math_functions.h>  // CUDA's, not caffe's, for fabs, signbit\n", "")
    # Compiled by g++, which does not see Thrust (include/cccl in CUDA 13);
    # the file uses nothing of it.
    sub(root, "src/caffe/layers/cudnn_softmax_layer.cpp", '#include "thrust/device_vector.h"\n', "")
    (root / MARKER).write_text("ported by tests/caffe/port.py\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: port.py SOURCE_DIR")
    port(pathlib.Path(sys.argv[1]))
