#!/usr/bin/env bash
# An nvcc-built program (-cudart shared, with a device kernel of its own)
# loads and runs on the simulated device: with SIMGPU_COMPUTE=0 its launch is
# modelled, with compute on it fails with cudaErrorNoKernelImageForDevice,
# and under libsn the launch (nvcc 13's __cudaLaunchKernel path) is seen.
# Skipped, with a note, where nvcc is not installed.
set -u
. "$(dirname "$0")/lib.sh"
NVCC=${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}
if [ ! -x "$NVCC" ]; then
    echo "ok 1 # SKIP $NVCC not found"
    exit 0
fi
bin="$tmp/nvcc_sample"
"$NVCC" -cudart shared -o "$bin" "$(dirname "$0")/nvcc_sample.cu" >"$tmp/nvcc.log" 2>&1
check "nvcc builds the sample" "[ -x '$bin' ]" || { cat "$tmp/nvcc.log"; exit 0; }
check "it needs the shared runtime, libcudart.so.13" "readelf -d '$bin' | grep -q 'libcudart.so.13'"
off=$(SIMGPU_COMPUTE=0 LD_PRELOAD="$SAN_PRELOAD" "$bin" 2>&1)
echo "$off" | sed 's/^/# compute off: /'
check "compute off: the launch is modelled" "grep -q '^launch cudaSuccess' <<<\"\$off\" && grep -q '^sync cudaSuccess' <<<\"\$off\""
on=$(LD_PRELOAD="$SAN_PRELOAD" "$bin" 2>&1)
echo "$on" | sed 's/^/# compute on: /'
check "compute on: no kernel image" "grep -q '^launch cudaErrorNoKernelImageForDevice' <<<\"\$on\""
if [ -f "$BUILD_DIR/libsn.so" ]; then
    SIMGPU_COMPUTE=0 SN_MODE=trace SN_REPORT="$tmp/report.txt" LD_PRELOAD="$SN_PRELOAD" "$bin" >/dev/null 2>&1
    check "libsn sees the launch as a step" "grep -q 'calls *1 intercepted: 1 steps' '$tmp/report.txt'"
fi
