#!/usr/bin/env bash
# test_gpu_scripts.sh — the GPU measurement scripts, without a GPU:
#  - bench/gpu_table.sh rebuilds the generated part of
#    bench/results/gpu_h200.md from the summaries kept beside it, so the
#    committed tables are what the measurements say;
#  - build/calibrate busy tells a call that waits for the device from one
#    that does not, on the simulator as on the GPU (cudaFree waits,
#    cuMemUnmap and cuMemSetAccess do not: measured on an H200);
#  - build/calibrate pieces maps a range from 2 MiB handles;
#  - bench/gpu_run.sh past its deadline skips what is left and still
#    writes its summary and archive.
# Prints TAP-like "ok"/"not ok" lines.
set -u
. "$(dirname "$0")/lib.sh"
if ! command -v python3 >/dev/null; then
    echo "ok - # skip: python3 not installed"
    exit 0
fi
res=bench/results/gpu_h200
device=$(head -1 bench/results/gpu_h200.md | sed 's/^# Measured on a GPU: //')
bash bench/gpu_table.sh "$res/run1.tsv,$res/run2.tsv" "$res/sim.tsv" "$device" "$tmp/table.md"
awk '/^## Run 3:/ { exit } { print }' bench/results/gpu_h200.md | sed '$ { /^$/d }' >"$tmp/committed.md"
check "bench/gpu_table.sh rebuilds bench/results/gpu_h200.md's tables from the summaries beside it" \
    'diff -q "$tmp/committed.md" "$tmp/table.md" >/dev/null || { diff "$tmp/committed.md" "$tmp/table.md" | head -6 >&2; false; }'

cal="$BUILD_DIR/calibrate"
for op in cuMemUnmap cuMemSetAccess cuMemMap cudaMalloc; do
    SIMGPU_COMPUTE=0 "$cal" busy $op 2097152 >"$tmp/busy.$op" 2>&1
done
for op in cudaFree cudaFreeHost; do
    SIMGPU_COMPUTE=0 "$cal" busy $op 2097152 >"$tmp/busy.$op" 2>&1
done
check "calibrate busy: cuMemUnmap, cuMemSetAccess, cuMemMap and cudaMalloc return with the device still busy" \
    '[ "$(cat "$tmp"/busy.cuMem* "$tmp"/busy.cudaMalloc | awk "\$1 == \"busy\" && \$10 == 1" | wc -l)" = 4 ]' ||
    cat "$tmp"/busy.* | sed 's/^/# /'
check "calibrate busy: cudaFree and cudaFreeHost wait for it" \
    '[ "$(cat "$tmp"/busy.cudaFree "$tmp"/busy.cudaFreeHost | awk "\$1 == \"busy\" && \$10 == 0" | wc -l)" = 2 ]'
SIMGPU_COMPUTE=0 "$cal" pieces 67108864 >"$tmp/pieces" 2>&1
check "calibrate pieces: 64 MiB from 32 handles of 2 MiB, access set and unmapped" \
    'grep -Eq "^pieces 32 access [0-9.]+ us unmap_each [0-9.]+ us$" "$tmp/pieces"' || sed 's/^/# /' "$tmp/pieces"
SIMGPU_COMPUTE=0 "$cal" pieces 1000 >/dev/null 2>&1
prc=$?
check "calibrate pieces refuses a size that is not whole granules (exit 2)" '[ $prc -eq 2 ]'

mkdir -p "$tmp/bin"
cp "$BUILD_DIR/libsn.so" "$BUILD_DIR/sntrain" "$cal" "$tmp/bin/"
GPU_SIM=1 GPU_LIBS="$BUILD_DIR/sim" GPU_DEADLINE=0 bash bench/gpu_run.sh "$tmp/bin" "$tmp/out" >"$tmp/run.log" 2>&1
rc=$?
check "bench/gpu_run.sh past its deadline: exit 0, every part skipped and said so, summary and archive written" \
    '[ $rc -eq 0 ] && grep -q "^skipped	host cudaMalloc" "$tmp/out/summary.tsv" &&
     grep -q "^skipped	policies r50" "$tmp/out/summary.tsv" && grep -q "^elapsed	" "$tmp/out/summary.tsv" &&
     [ -s "$tmp/out/runs.tar.gz" ] && [ -s "$tmp/out/env.txt" ]' || sed 's/^/# /' "$tmp/run.log" | tail -5
