#!/usr/bin/env bash
# test_sn_broken.sh — the simulator catches manage mode's residency bugs.
# SN_DEBUG_BREAK breaks libsn on purpose, once per run:
#  - skip-swap-in: a block that must come back is left unmapped; the next
#    call touching it is an illegal address, and the run dies;
#  - early-swap-out: the most recently used block is copied out without
#    waiting for the work before it; the hazard checker reports the race.
# And without the switch the same run is clean and bit-identical, so the
# failures are the switch's, not the test's.
# Prints TAP-like "ok"/"not ok" lines.
set -u
. "$(dirname "$0")/lib.sh"
trainer="$BUILD_DIR/sntrain"
export SIMGPU_GRANULARITY=64K SIMGPU_HAZARDS=fatal
args=(--iters 3 --net resnet --input 32 --batch 8 --width 8 --alloc caffe)
learned() { grep -E '^(iter [0-9]+ loss|checksum)' "$1" | sed -E 's/ time .*//'; }

"$trainer" "${args[@]}" >"$tmp/plain.out" 2>&1
SN_BUDGET=16M LD_PRELOAD="$SN_PRELOAD" "$trainer" "${args[@]}" >"$tmp/good.out" 2>"$tmp/good.err"
rc=$?
check "unbroken at a 16M budget: exits 0, no simulator complaint, bit-identical" \
    "[ $rc -eq 0 ] && ! grep -q '^simgpu:' '$tmp/good.err' && diff -q <(learned '$tmp/plain.out') <(learned '$tmp/good.out')"

SN_DEBUG_BREAK=skip-swap-in SN_BUDGET=16M LD_PRELOAD="$SN_PRELOAD" "$trainer" "${args[@]}" \
    >"$tmp/skip.out" 2>"$tmp/skip.err"
rc=$?
grep -E '^(simgpu|libsn):' "$tmp/skip.err" | head -3 | sed 's/^/# /'
check "skip-swap-in: the run dies (exit $rc) of an illegal address on the unmapped block" \
    "[ $rc -ne 0 ] && grep -q 'illegal address.*reserved but not mapped' '$tmp/skip.err'"

SN_DEBUG_BREAK=early-swap-out SN_BUDGET=16M LD_PRELOAD="$SN_PRELOAD" "$trainer" "${args[@]}" \
    >"$tmp/early.out" 2>"$tmp/early.err"
rc=$?
grep -E '^(simgpu|libsn):' "$tmp/early.err" | head -3 | sed 's/^/# /'
check "early-swap-out: the run dies (exit $rc) of an ordering hazard on the copy out" \
    "[ $rc -ne 0 ] && grep -q 'ordering hazard: memcpyDtoH' '$tmp/early.err'"
