#!/usr/bin/env bash
# The sample program was linked against the real CUDA import libraries; it
# must resolve them to the simulated ones through LD_LIBRARY_PATH alone, run,
# and show a VMM round trip at a stable address.
. "$(dirname "$0")/lib.sh"
bin="$BUILD_DIR/sim_sample"
check "needs libcudart.so.13 and libcuda.so.1" \
    "readelf -d $bin | grep -q 'libcudart.so.13' && readelf -d $bin | grep -q 'libcuda.so.1'"
check "resolves them to the simulator" "ldd $bin | grep libcudart.so.13 | grep -q '$BUILD_DIR/sim/'"
out=$("$bin" 2>&1); rc=$?
echo "$out"
check "runs to completion" "[ $rc -eq 0 ] && grep -q '^done' <<<\"\$out\""
check "pinned copy runs at the k40's 12.2 GB/s" "grep -q 'pinned 5.519 ms (12.2 GB/s)' <<<\"\$out\""
check "data survives a remap at the same address" "grep -q 'contents \"tensor contents\"' <<<\"\$out\""
# A process fenced into less address space than the simulator's generous
# reservation (ThreadSanitizer's application windows, ulimit -v) still gets a
# device: an 80 GiB one asks for 800 GiB of addresses first. AddressSanitizer
# and ThreadSanitizer reserve terabytes of shadow themselves, so no limit fits.
case "${SANITIZE:-}" in
address | thread) echo "ok $((n += 1)) - an 80 GiB device fits in 300 GiB of address space # skip under a sanitizer's shadow" ;;
*)
    fenced=$( (ulimit -v 314572800 && SIMGPU_MEM=80G "$bin") 2>&1)
    check "an 80 GiB device fits in 300 GiB of address space" "grep -q '^done' <<<\"\$fenced\"" ;;
esac
