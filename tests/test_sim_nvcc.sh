#!/usr/bin/env bash
# An nvcc-built program (-cudart shared, with a device kernel of its own)
# loads and runs on the simulated device: with SIMGPU_COMPUTE=0 its launch is
# modelled, with compute on it fails with cudaErrorNoKernelImageForDevice,
# and under libsn the launch (nvcc 13's __cudaLaunchKernel path) is seen and
# its arguments read through the layout the fat binary gives.
# Then kernels of varied signatures (tests/nvcc_params.cu), built the ways
# nvcc lays out fat binaries (a cubin; compressed with zstd or LZ4; PTX
# only; relocatable device code), must report through cudaFuncGetParamInfo
# the offsets and sizes the host compiler's offsetof/sizeof give.
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
    # Its layout is known, so the launch is not opaque: libsn reads the
    # pointer argument and finds the allocation.
    SIMGPU_COMPUTE=0 SN_MODE=trace SN_REPORT="$tmp/report.json" LD_PRELOAD="$SN_PRELOAD" "$bin" >/dev/null 2>&1
    check "libsn sees through the nvcc kernel's arguments (no opaque call)" \
        "grep -q '\"opaque_calls\":0,' '$tmp/report.json'"
fi

# name|nvcc options: each builds a fat binary of another shape (CUDA 13.0).
variants=(
    "cubin (sm_75) and zstd-compressed PTX, nvcc's default|"
    "cubin compressed with zstd|-Xfatbin -compress-all"
    "cubin compressed with LZ4|-Xfatbin -compress-all -Xfatbin -compress-mode=speed"
    "PTX only, compressed with zstd|-arch=compute_90"
    "PTX only, compressed with LZ4|-arch=compute_90 -Xfatbin -compress-mode=speed"
    "relocatable device code, the linked cubin|-rdc=true"
)
src="$(dirname "$0")/nvcc_params.cu"
for v in "${variants[@]}"; do
    name=${v%%|*}; opts=${v#*|}
    pbin="$tmp/nvcc_params"
    rm -f "$pbin"
    # shellcheck disable=SC2086 # the options are words
    if ! "$NVCC" -cudart shared $opts -o "$pbin" "$src" >"$tmp/nvcc.log" 2>&1; then
        check "$name: nvcc builds tests/nvcc_params.cu" false
        sed 's/^/# /' "$tmp/nvcc.log"
        continue
    fi
    out=$(SIMGPU_COMPUTE=0 LD_PRELOAD="$SAN_PRELOAD" "$pbin" 2>&1); rc=$?
    echo "$out" | sed "s/^/# $name: /"
    check "$name: 11 kernels' parameter layouts are the ABI's, index past the last fails" \
        "[ $rc -eq 0 ] && [ \$(grep -c '^ok ' <<<\"\$out\") -eq 11 ]"
done
