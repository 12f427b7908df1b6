#!/usr/bin/env bash
# test_sn_repro.sh — a run under libsn is reproducible: the same program
# making the same calls in the same order gets the same plan and the same
# simulated times, wherever its memory lands (address randomisation stays
# on) and whatever the report's path. The reference trainer's prefetch
# thread runs in lockstep (--prefetch lockstep): free-running, as Caffe's,
# its two copies a batch fall among the training thread's calls wherever
# the scheduler puts them, which is another program each time (the bench
# tables run it in lockstep for that reason; docs/decisions.md).
# ResNet-50 at batch 8 under auto at half its peak, compute off: three
# runs, with no report and with two report paths of different lengths,
# must print the same iteration lines, times included, and their reports
# the same plan prediction.
# Prints TAP-like "ok"/"not ok" lines.
set -u
. "$(dirname "$0")/lib.sh"
trainer="$BUILD_DIR/sntrain"
export SIMGPU_PROFILE=titanx SIMGPU_COMPUTE=0
args=(--net resnet --depth 50 --batch 8 --iters 10 --prefetch lockstep)

peak=$(peak_of "$trainer" "${args[@]}" 2>/dev/null)
check "the trace run reports a peak" '[ -n "$peak" ]' || exit 1

mkdir -p "$tmp/a" "$tmp/a-much-longer-folder-name"
reports=(off "$tmp/a/r.json" "$tmp/a-much-longer-folder-name/r.json")
for i in 0 1 2; do
    SN_POLICY=auto SN_BUDGET=$((peak / 2)) SN_REPORT="${reports[$i]}" LD_PRELOAD="$SN_PRELOAD" \
        "$trainer" "${args[@]}" >"$tmp/run$i.out" 2>"$tmp/run$i.err"
    echo $? >"$tmp/run$i.rc"
done
check "every run trains" '[ "$(cat "$tmp"/run*.rc)" = "$(printf "0\n0\n0")" ]'
grep -E '^iter [0-9]+ loss' "$tmp/run0.out" >"$tmp/iters0"
check "the runs print their iterations with times" '[ "$(grep -c " ms$" "$tmp/iters0")" -eq 10 ]'
for i in 1 2; do
    grep -E '^iter [0-9]+ loss' "$tmp/run$i.out" >"$tmp/iters$i"
    check "run $i gives the same simulated times as run 0 (report: ${reports[$i]##*/})" \
        'cmp -s "$tmp/iters0" "$tmp/iters$i" || { diff "$tmp/iters0" "$tmp/iters$i" | head -6 >&2; false; }'
done
predicted() {
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["devices"][0]["manage"]["plan"]["predicted_ms"])' \
        "$1" 2>/dev/null
}
p1=$(predicted "$tmp/a/r.json")
p2=$(predicted "$tmp/a-much-longer-folder-name/r.json")
check "both reports carry the plan's prediction" '[ -n "$p1" ] && [ -n "$p2" ]'
check "the same plan is predicted ($p1 and $p2 ms)" '[ "$p1" = "$p2" ]'
