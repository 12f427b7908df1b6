#!/usr/bin/env bash
# test_sn_longcall.sh — a call with more ranges than a call record holds
# inline is seen whole, never opaque: tests/sn_longcall.c launches kernels
# with 30 pointer parameters and with 130 pointers in one parameter passed
# by value (multi-tensor apply). Under SN_MODE=trace no call is opaque and
# no range unknown; under SN_MODE=manage with a budget that holds one
# launch's buffers but not all of them (the 130-pointer launch touches
# 16.25 MiB of the 60 MiB), the buffers are swapped and the checksums equal
# the run without libsn byte for byte. An opaque launch would need every
# buffer resident at once and fail for want of memory. Prints TAP-like
# "ok"/"not ok" lines.
set -u
. "$(dirname "$0")/lib.sh"
prog="$BUILD_DIR/tests/sn_longcall"
export SIMGPU_GRANULARITY=64K

"$prog" >"$tmp/plain.out" 2>"$tmp/plain.err"
rc=$?
check "the program runs without libsn" "[ $rc -eq 0 ] && grep -q '^launches 24 ' '$tmp/plain.out'" || {
    sed 's/^/# /' "$tmp/plain.err" | tail -4; exit 1; }

report_value() {
    python3 - "$@" <<'PY' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
for k in sys.argv[2:]:
    d = d[k]
print(d)
PY
}

run() { # TAG ENV...: runs the program under libsn, checks its output
    local tag=$1; shift
    env "$@" SN_REPORT="$tmp/$tag.json" LD_PRELOAD="$SN_PRELOAD" "$prog" >"$tmp/$tag.out" 2>"$tmp/$tag.err"
    local rc=$?
    if [ $rc -ne 0 ]; then
        n=$((n + 1)); echo "not ok $n - $tag ($*): the program failed (exit $rc)"
        sed 's/^/# /' "$tmp/$tag.err" | tail -3
    else
        check "$tag ($*): output byte-identical to the run without libsn" "cmp -s '$tmp/plain.out' '$tmp/$tag.out'"
    fi
}

run trace SN_MODE=trace
check "trace: no call opaque, no range unknown" \
    "[ '$(report_value "$tmp/trace.json" run opaque_calls) $(report_value "$tmp/trace.json" run unknown_ranges)' = '0 0' ]"
check "trace: the 480 buffers are the runtime's allocations" \
    "[ '$(report_value "$tmp/trace.json" allocations runtime count)' = 480 ]"

run manage SN_MODE=manage SN_BUDGET=24M
check "manage: buffers were swapped out and back, no call ran out of memory" \
    "[ '$(report_value "$tmp/manage.json" manage swap_in)' -gt 0 ] &&
     [ '$(report_value "$tmp/manage.json" manage evictions)' -gt 0 ] &&
     [ '$(report_value "$tmp/manage.json" manage oom_calls)' = 0 ]"
