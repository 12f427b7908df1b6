#!/usr/bin/env bash
# test_sn_sim_apis.sh — libsn's wrappers of the runtime entry points beyond
# cudaMalloc/cudaMemcpy (pitched and managed allocation, 2-D sets,
# stream-ordered allocation, peer copies, events recorded with flags, graph
# launch, and their _ptds/_ptsz twins), exercised on the simulator. Runs
# test_sn_sim_apis on two simulated devices without libsn and under
# LD_PRELOAD in every SN_MODE: each run must pass its own checks and print
# the same probe lines (return codes and last-error states) as the run
# without libsn. Prints TAP-like "ok"/"not ok" lines.
set -u
. "$(dirname "$0")/lib.sh"
bin="$BUILD_DIR/tests/test_sn_sim_apis"
export SIMGPU_DEVICES=2

"$bin" >"$tmp/plain.out" 2>"$tmp/plain.err"
rc=$?
grep '^probe' "$tmp/plain.out" >"$tmp/plain.probes"
check "without libsn: the program passes (exit $rc)" "[ $rc -eq 0 ] && [ -s \"$tmp/plain.probes\" ]"
check "without libsn: the peer copies cross two devices" "grep -q '^probe peer between devices 0 and 1' \"$tmp/plain.probes\""

for mode in off trace manage; do
    SN_MODE=$mode SN_REPORT="$tmp/$mode.json" LD_PRELOAD="$SN_PRELOAD" "$bin" >"$tmp/$mode.out" 2>"$tmp/$mode.err"
    rc=$?
    grep '^probe' "$tmp/$mode.out" >"$tmp/$mode.probes"
    if ! check "SN_MODE=$mode: the program passes under libsn (exit $rc)" "[ $rc -eq 0 ]"; then
        sed 's/^/# /' "$tmp/$mode.out" | grep -v '^# probe' | tail -20
        sed 's/^/# /' "$tmp/$mode.err" | tail -10
    fi
    if ! check "SN_MODE=$mode: same return codes and last errors as without libsn" \
        "diff -u \"$tmp/plain.probes\" \"$tmp/$mode.probes\" >\"$tmp/$mode.diff\""; then
        sed 's/^/# /' "$tmp/$mode.diff"
    fi
    if ! check "SN_MODE=$mode: libsn silent" "! grep -q '^libsn: ' \"$tmp/$mode.err\""; then
        sed 's/^/# /' "$tmp/$mode.err" | head -20
    fi
done

# Manage mode serves the pitched allocation from its arena and leaves to CUDA
# only what keeps its own rules: on device 0 one managed allocation and three
# stream-ordered ones of 1 MiB each.
check "SN_MODE=manage: pitched memory served, only managed and stream-ordered memory left to CUDA" \
    "python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))[\"devices\"][0][\"manage\"]; sys.exit(not (m[\"passed\"] == 4 and m[\"passed_bytes\"] == 4 << 20))' \"$tmp/manage.json\""

# Peer copies read another device's memory: under a budget that holds two of
# device 1's six 8 MiB buffers, manage mode must bring each back on device 1
# for a copy made on device 0 (the simulator faults on an unmapped source).
peer="$BUILD_DIR/tests/sn_peer"
out=$("$peer" 2>&1)
check "peer copies without libsn" "grep -q '^peer copies: 0 of 6 buffers wrong' <<<\"\$out\""
out=$(SN_MODE=manage SN_BUDGET=20M SN_REPORT=off LD_PRELOAD="$SN_PRELOAD" "$peer" 2>&1)
if ! check "peer copies under manage mode at a budget below their sources" \
    "grep -q '^peer copies: 0 of 6 buffers wrong' <<<\"\$out\""; then
    sed 's/^/# /' <<<"$out" | tail -5
fi
