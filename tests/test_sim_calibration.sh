#!/usr/bin/env bash
# test_sim_calibration.sh — every row of the simulator's calibration table
# (bench/results/calibration.md) recomputed by bench/calibrate.sh, the same
# script `make bench` runs, and held within 25% of its published figure; the
# committed table must list the same workloads, profiles, figures and sources.
set -u
. tests/lib.sh

out="$tmp/calibration.md"
BUILD=${BUILD:-build} CALIBRATE_CHECK=1 bench/calibrate.sh "$out" 2>"$tmp/err"
rc=$?
check "bench/calibrate.sh runs every workload within 25% (exit $rc)" "[ $rc -eq 0 ]" ||
    sed 's/^/# /' "$tmp/err"

# The rows of the first table (the one headed "| workload"); the table of
# host-cost constants after it is documentation.
# rows FILE: "workload|profile|published|source" of each table row
rows() { awk -F' \\| ' '/^\| workload/ { t = 1; next } t && !/^\|/ { exit }
    t && /^\| / { sub(/^\| /, ""); sub(/ \|$/, ""); print $1 "|" $2 "|" $4 "|" $6 }' "$1"; }
# ratios FILE: "workload on profile: ratio"
ratios() { awk -F' \\| ' '/^\| workload/ { t = 1; next } t && !/^\|/ { exit }
    t && /^\| / && $5 != "" { sub(/^\| /, ""); print $1 " on " $2 ": " $5 }' "$1"; }

total=$(rows "$out" | wc -l)
check "the table has rows ($total)" "[ $total -ge 20 ]"
while IFS= read -r line; do
    r=${line##*: }
    check "$line" "awk -v r='$r' 'BEGIN { exit !(r >= 0.75 && r <= 1.25) }'"
done < <(ratios "$out")
rows "$out" >"$tmp/now"
rows bench/results/calibration.md >"$tmp/committed"
check "bench/results/calibration.md lists the same rows (make bench regenerates it)" \
    "diff -u '$tmp/committed' '$tmp/now' >'$tmp/diff'" || sed 's/^/# /' "$tmp/diff"

# The host-cost constants follow the table: the same text as docs/sim-runtime.md's.
hostcost() { awk '/^## / { on = ($0 ~ /^## Host-side cost of memory management/) } on' "$1"; }
hostcost docs/sim-runtime.md >"$tmp/doc_costs"
hostcost bench/results/calibration.md >"$tmp/committed_costs"
check "the host-cost constants are documented ($(wc -l <"$tmp/doc_costs") lines)" "grep -q '^| .cuMemSetAccess' '$tmp/doc_costs'"
check "bench/results/calibration.md carries docs/sim-runtime.md's host-cost table" \
    "diff -u '$tmp/doc_costs' '$tmp/committed_costs' >'$tmp/cdiff'" || sed 's/^/# /' "$tmp/cdiff"
