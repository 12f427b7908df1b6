#!/usr/bin/env bash
# test_sn_trainer.sh — libsn on the reference trainer, every network and
# every allocation style:
#  - preloaded in SN_MODE=off and SN_MODE=trace, the trainer's losses and
#    learned weights (checksum) are bit-identical to the run without libsn;
#  - in trace mode, libsn's report states the trainer's own facts, taken
#    from its --dump-graph file: layers per type, forward/backward layers
#    and steps, update steps, forks, joins, the iteration period and the
#    number of iterations;
#  - the model's invariants hold (the report's "checks" line);
#  - with an evaluation pass every two iterations, the iteration learned
#    is two training passes and one evaluation pass.
# Prints TAP-like "ok"/"not ok" lines.
set -u
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
trainer="$BUILD_DIR/sntrain"
lib=$SN_PRELOAD
iters=4

# What must not change: every loss and the checksum of the weights.
learned() { grep -E '^(iter [0-9]+ loss|checksum)' "$1" | sed -E 's/ time .*//'; }

run_case() {
    local name="$1" style="$2" kernels="$3"; shift 3
    local args=(--batch 2 --width 4 --iters $iters --alloc "$style" "$@")
    local tag="$name/$style${kernels:+/kernels}"
    "$trainer" "${args[@]}" --dump-graph "$tmp/graph" >"$tmp/plain.out" 2>&1 || {
        echo "not ok - $tag: the trainer fails without libsn"; sed 's/^/# /' "$tmp/plain.out" | tail -5; return; }
    learned "$tmp/plain.out" >"$tmp/plain.learned"
    for mode in off trace; do
        SN_MODE=$mode SN_REPORT="$tmp/report.$mode" LD_PRELOAD="$lib" "$trainer" "${args[@]}" \
            >"$tmp/$mode.out" 2>"$tmp/$mode.err"
        local rc=$?
        learned "$tmp/$mode.out" >"$tmp/$mode.learned"
        if [ $rc -ne 0 ]; then
            echo "not ok - $tag: SN_MODE=$mode: the trainer failed (exit $rc)"
            sed 's/^/# /' "$tmp/$mode.err" | tail -5
        elif ! diff -q "$tmp/plain.learned" "$tmp/$mode.learned" >/dev/null; then
            echo "not ok - $tag: SN_MODE=$mode: losses or weights differ"
            diff "$tmp/plain.learned" "$tmp/$mode.learned" | sed 's/^/# /' | head -6
        else
            echo "ok - $tag: SN_MODE=$mode: bit-identical losses and weights"
        fi
    done
    awk -f "$here/test_sn_expect_graph.awk" "$tmp/graph" >"$tmp/expected"
    echo "iterations $iters" >>"$tmp/expected"
    sort -o "$tmp/expected" "$tmp/expected"
    awk -f "$here/test_sn_report_facts.awk" "$tmp/report.trace" | sort >"$tmp/reported"
    if [ -s "$tmp/reported" ] && diff -q "$tmp/expected" "$tmp/reported" >/dev/null; then
        echo "ok - $tag: report matches --dump-graph ($(grep -c '^type' "$tmp/expected") layer types, $(grep '^period' "$tmp/expected"))"
    else
        echo "not ok - $tag: report differs from --dump-graph (< expected, > reported)"
        diff "$tmp/expected" "$tmp/reported" | sed 's/^/# /' | head -20
    fi
    if grep -qE '^(libsn: )?checks +all invariants hold$' "$tmp/report.trace"; then
        echo "ok - $tag: the model's invariants hold"
    else
        echo "not ok - $tag: the model breaks an invariant"
        grep -E '^(libsn: )?checks' "$tmp/report.trace" | sed 's/^/# /'
    fi
}

for style in caffe darknet dynamic; do
    run_case alexnet "$style" "" --net alexnet --input 67
    run_case vgg "$style" "" --net vgg --input 32
    run_case resnet "$style" "" --net resnet --input 32
    run_case inception "$style" "" --net inception --depth 3 --input 32
    run_case densenet "$style" "" --net densenet --depth 10 --input 32
done
# Kernel launches of host functions instead of cuBLAS for the update and
# the loss gradient: kernel-launch interception on the same networks.
run_case resnet dynamic 1 --net resnet --input 32 --kernels
run_case inception caffe 1 --net inception --depth 3 --input 32 --kernels

# Evaluation passes (--eval-every 2, forward only) recur within the
# profile: the iteration learned holds two training passes and one
# evaluation pass, and the evaluation losses stay bit-identical too.
args=(--net resnet --depth 8 --input 16 --width 4 --batch 8 --iters 10 --eval-every 2 --alloc caffe)
"$trainer" "${args[@]}" >"$tmp/eval.plain" 2>&1
SN_MODE=trace SN_REPORT="$tmp/eval.json" LD_PRELOAD="$lib" "$trainer" "${args[@]}" >"$tmp/eval.out" 2>&1
passes=$(python3 -c 'import json,sys
p = json.load(open(sys.argv[1]))["devices"][0]["passes"]
print(p["training"], p["evaluation"], p["updates"])' "$tmp/eval.json" 2>/dev/null)
if [ "$passes" = "2 1 2" ] && [ "$(grep -c '^eval ' "$tmp/eval.out")" -eq 5 ] &&
   diff -q <(grep -E '^(iter|eval|checksum)' "$tmp/eval.plain" | sed -E 's/ time .*//') \
           <(grep -E '^(iter|eval|checksum)' "$tmp/eval.out" | sed -E 's/ time .*//') >/dev/null; then
    echo "ok - resnet/caffe, --eval-every 2: an iteration of 2 training passes and 1 evaluation pass, bit-identical"
else
    echo "not ok - resnet/caffe, --eval-every 2: passes (training evaluation updates) '$passes', want '2 1 2'"
fi

# No complete iteration: a run of one iteration, and a run that runs out of
# device memory inside its first. The repeated blocks of a single pass are
# not an iteration: the report says none was seen, gives the allocations it
# saw, and no layers, what-if peaks or SN_BUDGET.
no_iteration_case() {
    local tag="$1" want_rc="$2" mem="$3" iters="$4"
    local args=(--net resnet --input 32 --batch 2 --width 4 --alloc dynamic --iters "$iters")
    local rc ok=1
    for out in txt json; do
        SIMGPU_MEM=$mem SN_MODE=trace SN_REPORT="$tmp/none.$out" LD_PRELOAD="$lib" "$trainer" "${args[@]}" \
            >"$tmp/none.out" 2>&1
        rc=$?
        [ $rc -eq "$want_rc" ] || ok=0
    done
    [ "$want_rc" -eq 0 ] || grep -q 'out of memory: .* in iteration 1;' "$tmp/none.out" || ok=0
    grep -q '^iteration    no complete iteration seen' "$tmp/none.txt" || ok=0
    grep -qE '^allocations  runtime [1-9]' "$tmp/none.txt" || ok=0
    ! grep -qE 'SN_BUDGET|layer table|what-if' "$tmp/none.txt" || ok=0
    grep -q '"found":false' "$tmp/none.json" || ok=0
    grep -qE '"runtime":\{"count":[1-9]' "$tmp/none.json" || ok=0
    ! grep -qE '"whatif"|"budget"|"layers"' "$tmp/none.json" || ok=0
    if [ $ok -eq 1 ]; then
        echo "ok - $tag: no complete iteration seen, allocations reported, no budget"
    else
        echo "not ok - $tag: the report must say no complete iteration was seen (exit $rc, want $want_rc)"
        grep -E 'out of memory|^(iteration|allocations|phases|layers)|SN_BUDGET' "$tmp/none.out" "$tmp/none.txt" |
            sed 's/^/# /' | head -8
        cut -c1-300 "$tmp/none.json" | sed 's/^/# /'
    fi
}
no_iteration_case "resnet/one iteration" 0 12G 1
no_iteration_case "resnet/out of memory in iteration 1" 3 7M 2
