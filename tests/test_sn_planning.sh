#!/usr/bin/env bash
# test_sn_planning.sh — manage mode makes its plans on a thread of libsn's
# (the default, SN_PLAN_WAIT=0) while the framework runs on under demand
# residency: the run learns the same weights as without libsn, the plan is
# followed once it is ready, and the report says how long planning took
# and how little of it the framework waited for. With SN_PLAN_WAIT=1 the
# framework's thread makes the plan and the report says it waited for all
# of it. A run that ends while its plan is still being made exits as
# usual and says so. (The other tests run with SN_PLAN_WAIT=1, see
# tests/run_tests.sh; this one unsets it.)
# Prints TAP-like "ok"/"not ok" lines.
set -u
. "$(dirname "$0")/lib.sh"
unset SN_PLAN_WAIT
trainer="$BUILD_DIR/sntrain"
small=(--net resnet --depth 14 --input 32 --width 8 --batch 16 --lr 0.1 --seed 3 --iters 40 --prefetch lockstep)

checksum_of() { awk '$1 == "checksum" { print $2 }' "$1"; }
# planning FIELD REPORT: the report's manage.planning.FIELD (true/false as 1/0)
planning() {
    python3 - "$2" "$1" <<'PY' 2>/dev/null
import json, sys
m = json.load(open(sys.argv[1]))["devices"][0]["manage"]
v = m["planning"][sys.argv[2]] if sys.argv[2] != "plan_iterations" else (m.get("plan") or {}).get("iterations", 0)
print(int(v) if isinstance(v, bool) else v)
PY
}
# ratio A B: A / B with three decimals (B > 0), empty otherwise
ratio() { python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(f"{a / b:.3f}" if b > 0 else "")' "$1" "$2" 2>/dev/null; }

"$trainer" "${small[@]}" >"$tmp/ref.out" 2>&1
ref=$(checksum_of "$tmp/ref.out")
check "the run without libsn prints its checksum" '[ -n "$ref" ]' || exit 1

# 1. the default: planning on libsn's thread, at about half the peak
SIMGPU_MEM=16M SN_REPORT="$tmp/async.json" LD_PRELOAD="$SN_PRELOAD" "$trainer" "${small[@]}" >"$tmp/async.out" 2>&1
rc=$?
check "planning on libsn's thread: the run trains (exit $rc)" '[ $rc -eq 0 ]'
check "planning on libsn's thread: same weights as without libsn" '[ "$(checksum_of "$tmp/async.out")" = "$ref" ]'
host=$(planning host_ms "$tmp/async.json")
blocked=$(planning blocked_ms "$tmp/async.json")
check "planning on libsn's thread: the report has planning's host time ($host ms) and the framework's share ($blocked ms)" \
    '[ -n "$host" ] && [ -n "$blocked" ]' || exit 1
check "planning on libsn's thread: the report says the framework did not wait for it" \
    '[ "$(planning waited "$tmp/async.json")" = 0 ] && [ "$(planning unfinished "$tmp/async.json")" = 0 ]'
check "planning on libsn's thread: the plan was ready in time and followed ($(planning plan_iterations "$tmp/async.json") iterations)" \
    '[ "$(planning plan_iterations "$tmp/async.json")" -gt 0 ]'
# taking the model and installing the plan stay on the framework's
# thread: a small fraction of a plan's making (ResNet-101 b128 in 12 GB:
# 0.1%, bench/results/planning.md); this network is small enough that
# its plan is cheap, hence the looser bar
share=$(ratio "$blocked" "$host")
check "planning on libsn's thread: the framework was held for $share of planning's host time (< 0.1)" \
    '[ -n "$share" ] && python3 -c "import sys; sys.exit(0 if $share < 0.1 else 1)"'

# 2. SN_PLAN_WAIT=1: the framework makes the plan and waits for it
SIMGPU_MEM=16M SN_PLAN_WAIT=1 SN_REPORT="$tmp/wait.json" LD_PRELOAD="$SN_PRELOAD" "$trainer" "${small[@]}" \
    >"$tmp/wait.out" 2>&1
rc=$?
check "SN_PLAN_WAIT=1: the run trains to the same weights (exit $rc)" \
    '[ $rc -eq 0 ] && [ "$(checksum_of "$tmp/wait.out")" = "$ref" ]'
host=$(planning host_ms "$tmp/wait.json")
blocked=$(planning blocked_ms "$tmp/wait.json")
share=$(ratio "$blocked" "$host")
check "SN_PLAN_WAIT=1: the report says the framework waited for all of planning ($blocked of $host ms)" \
    '[ "$(planning waited "$tmp/wait.json")" = 1 ] && [ -n "$share" ] && python3 -c "import sys; sys.exit(0 if $share >= 1 else 1)"'
check "SN_PLAN_WAIT=1: the plan was followed" '[ "$(planning plan_iterations "$tmp/wait.json")" -gt 0 ]'

# 3. a run shorter than planning: ResNet-50 with compute off runs ten
# iterations in a fraction of the second its plans take; the exit while
# the planning thread works is an ordinary one, and the text report says
# planning was under way
big=(--net resnet --depth 50 --batch 8 --iters 10 --prefetch lockstep)
SIMGPU_PROFILE=titanx SIMGPU_COMPUTE=0 "$trainer" "${big[@]}" >"$tmp/bigref.out" 2>&1
SIMGPU_PROFILE=titanx SIMGPU_COMPUTE=0 SN_BUDGET=1000M SN_REPORT="$tmp/big.txt" LD_PRELOAD="$SN_PRELOAD" \
    "$trainer" "${big[@]}" >"$tmp/big.out" 2>&1
rc=$?
check "a run that ends while its plan is made exits as usual (exit $rc), same weights" \
    '[ $rc -eq 0 ] && [ -n "$(checksum_of "$tmp/bigref.out")" ] && [ "$(checksum_of "$tmp/big.out")" = "$(checksum_of "$tmp/bigref.out")" ]'
check "its text report has the planning line" 'grep -qE "^  planning +[0-9]+ ms of host time" "$tmp/big.txt"'
