#!/usr/bin/env bash
# test_sn_curand.sh — cuRAND's generate calls are described steps. The
# probe (tests/sn_curand.c) does no device work but cuRAND's: 24 buffers
# from cuMemAlloc and cudaMalloc, refilled by every curandGenerate* kind
# from a generator on its own stream and one on the default stream. Under
# SN_MODE=trace its output equals the run without libsn; the report counts
# each generate call once (an "rng" step on its generator's stream, the
# kernel cuRAND launches inside it not counted again) and each copy, none
# opaque. Under SN_MODE=manage at a third of its peak its output is
# byte-identical and buffers were evicted; SN_MODE=off changes nothing.
# Prints TAP-like "ok"/"not ok" lines.
set -u
. "$(dirname "$0")/lib.sh"
probe="$BUILD_DIR/tests/sn_curand"
export SIMGPU_GRANULARITY=64K

"$probe" >"$tmp/plain.out" 2>"$tmp/plain.err"
rc=$?
check "the probe runs without libsn" "[ $rc -eq 0 ] && grep -q '^generate ' '$tmp/plain.out'" || {
    sed 's/^/# /' "$tmp/plain.err" | tail -4; exit 1; }
read -r gens copies < <(sed -n 's/^generate \([0-9]*\) copies \([0-9]*\)$/\1 \2/p' "$tmp/plain.out")

# report_value FILE KEY...: one value of device 0's report
report_value() {
    python3 - "$@" <<'PY' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
for k in sys.argv[2:]:
    d = d[k]
print(d)
PY
}

SN_MODE=off LD_PRELOAD="$SN_PRELOAD" "$probe" >"$tmp/off.out" 2>"$tmp/off.err"
check "off: output byte-identical to the run without libsn" "[ $? -eq 0 ] && cmp -s '$tmp/plain.out' '$tmp/off.out'"

SN_MODE=trace SN_REPORT="$tmp/trace.json" SN_TRACE="$tmp/trace.trace" LD_PRELOAD="$SN_PRELOAD" "$probe" \
    >"$tmp/trace.out" 2>"$tmp/trace.err"
rc=$?
check "trace: output byte-identical to the run without libsn" "[ $rc -eq 0 ] && cmp -s '$tmp/plain.out' '$tmp/trace.out'" ||
    sed 's/^/# /' "$tmp/trace.err" | tail -4
check "trace: the calls are the generate calls and the copies ($gens + $copies), the steps the generate calls" \
    "[ '$(report_value "$tmp/trace.json" calls)' = '$((gens + copies))' ] &&
     [ '$(report_value "$tmp/trace.json" steps)' = '$gens' ]"
check "trace: no call opaque, no range unknown" \
    "[ '$(report_value "$tmp/trace.json" run opaque_calls) $(report_value "$tmp/trace.json" run unknown_ranges)' = '0 0' ]"
# The timeline names each step by its operation and stream: every step is
# an rng step (none a kernel: cuRAND's own launch is inside the call), on
# both the generator's stream and the default stream.
rng_steps=$(grep -c '"name":"rng","cat":"step"' "$tmp/trace.trace")
other_steps=$(grep '"cat":"step"' "$tmp/trace.trace" | grep -vc '"name":"rng"')
rng_streams=$(grep '"name":"rng","cat":"step"' "$tmp/trace.trace" | sed -n 's/.*"tid":\([0-9]*\).*/\1/p' | sort -u | wc -l)
check "trace: $gens rng steps, no other step, on 2 streams (got $rng_steps, $other_steps, $rng_streams)" \
    "[ '$rng_steps' = '$gens' ] && [ '$other_steps' = 0 ] && [ '$rng_streams' = 2 ]"

peak=$(peak_of "$probe")
have_bytes "sn_curand's peak" peak_bytes "$peak" && {
    budget=$((peak / 3))
    SN_MODE=manage SN_BUDGET=$budget SN_REPORT="$tmp/manage.json" LD_PRELOAD="$SN_PRELOAD" "$probe" \
        >"$tmp/manage.out" 2>"$tmp/manage.err"
    rc=$?
    check "manage at a third of the peak (SN_BUDGET=$budget): output byte-identical" \
        "[ $rc -eq 0 ] && cmp -s '$tmp/plain.out' '$tmp/manage.out'" ||
        { diff "$tmp/plain.out" "$tmp/manage.out" | sed 's/^/# /' | head -6; sed 's/^/# /' "$tmp/manage.err" | tail -4; }
    check "manage: buffers were evicted and loaded back, no call ran out of memory" \
        "[ '$(report_value "$tmp/manage.json" manage evictions)' -gt 0 ] &&
         [ '$(report_value "$tmp/manage.json" manage swap_in)' -gt 0 ] &&
         [ '$(report_value "$tmp/manage.json" manage oom_calls)' = 0 ]"
}
