#!/usr/bin/env bash
# test_sn_manage.sh — manage mode keeps training bit-identical while it
# moves memory. For every network and allocation style of the reference
# trainer, the losses and learned weights under SN_MODE=manage equal the
# run without libsn:
#  - with an ample budget (nothing needs to move);
#  - with half the run's peak as allocated (measured in trace mode);
#  - on a simulated device of one third of that peak, where the run
#    without libsn runs out of memory.
# The simulator's granule is 64 KiB here (SIMGPU_GRANULARITY), so that the
# small test networks have tensors that move one by one; a touched range
# that is not mapped is an illegal address (the run dies), and the hazard
# checker is fatal, so a residency bug cannot pass as a mere difference.
# Prints TAP-like "ok"/"not ok" lines.
set -u
. "$(dirname "$0")/lib.sh"
trainer="$BUILD_DIR/sntrain"
export SIMGPU_GRANULARITY=64K
learned() { grep -E '^(iter [0-9]+ loss|checksum)' "$1" | sed -E 's/ time .*//'; }

# bytes of the run's peak as allocated, from the trace report
peak_of() {
    SN_MODE=trace SN_REPORT="$tmp/peak.json" LD_PRELOAD="$SN_PRELOAD" "$trainer" "$@" >/dev/null 2>&1
    python3 - "$tmp/peak.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
d = r["devices"][0] if "devices" in r else r
print(int(d["run"]["peak_bytes"]))
PY
}

run_case() {
    local tag="$1"; shift
    local args=(--iters 4 "$@")
    "$trainer" "${args[@]}" >"$tmp/plain.out" 2>&1 || {
        echo "not ok - $tag: the trainer fails without libsn"; return; }
    learned "$tmp/plain.out" >"$tmp/plain.learned"
    local peak
    peak=$(peak_of "${args[@]}") || { echo "not ok - $tag: no peak in the trace report"; return; }
    local lib_mem=$((6 << 20))
    for budget in ample half third; do
        local env=()
        case $budget in
        ample) env=(SN_BUDGET=free) ;;
        half) env=(SN_BUDGET=$((peak / 2 + lib_mem))) ;;
        third) env=(SIMGPU_MEM=$((peak / 3 + lib_mem)) SN_BUDGET=free) ;;
        esac
        env "${env[@]}" SN_MODE=manage SN_REPORT="$tmp/report.$budget" LD_PRELOAD="$SN_PRELOAD" \
            "$trainer" "${args[@]}" >"$tmp/$budget.out" 2>"$tmp/$budget.err"
        local rc=$?
        learned "$tmp/$budget.out" >"$tmp/$budget.learned"
        if [ $rc -ne 0 ]; then
            echo "not ok - $tag: $budget budget (${env[*]}): the trainer failed (exit $rc)"
            grep -v '^sntrain: [a-z]' "$tmp/$budget.err" | sed 's/^/# /' | tail -4
        elif ! diff -q "$tmp/plain.learned" "$tmp/$budget.learned" >/dev/null; then
            echo "not ok - $tag: $budget budget (${env[*]}): losses or weights differ"
            diff "$tmp/plain.learned" "$tmp/$budget.learned" | sed 's/^/# /' | head -4
        else
            echo "ok - $tag: $budget budget (${env[*]}): bit-identical"
        fi
    done
    # the device of one third: without libsn the trainer runs out of memory
    SIMGPU_MEM=$((peak / 3 + lib_mem)) "$trainer" "${args[@]}" >"$tmp/small.out" 2>&1
    check "$tag: without libsn, a device of a third of the peak is too small (exit 3)" "[ $? -eq 3 ]"
}

for style in caffe darknet dynamic; do
    run_case "resnet/$style" --net resnet --input 32 --batch 8 --width 8 --alloc $style
    run_case "vgg/$style" --net vgg --input 32 --batch 8 --width 8 --alloc $style
    run_case "alexnet/$style" --net alexnet --input 67 --batch 4 --width 8 --alloc $style
    run_case "inception/$style" --net inception --depth 3 --input 32 --batch 4 --width 8 --alloc $style
    run_case "densenet/$style" --net densenet --depth 10 --input 32 --batch 8 --width 8 --alloc $style
done
run_case "resnet/dynamic/kernels" --net resnet --input 32 --batch 8 --width 8 --alloc dynamic --kernels
