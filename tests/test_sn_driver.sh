#!/usr/bin/env bash
# test_sn_driver.sh — copies and sets made through the CUDA driver API are
# seen: the probe (tests/sn_drvprobe.c) writes, overwrites and copies 24
# buffers with cuMemcpy*/cuMemset* only. Under SN_MODE=trace its output
# equals the run without libsn and the report counts every copy and set
# it made (host<->device copies as transfers), none opaque, none on an
# unknown range. Under SN_MODE=manage at a third of its live bytes, blocks
# are swapped out and back and its output is still byte-identical, both for
# the probe alone (which loads no CUDA runtime: libsn loads it for its own
# copies and events) and for the probe with the runtime linked in. The
# simulator's granule is 64 KiB so that buffers move one by one; a copy
# into an arena block libsn did not make resident is an illegal address.
# tests/sn_drvlaunch.c launches kernels of a module through the driver
# (cuLaunchKernel with kernelParams and with a packed buffer,
# cuLaunchKernelEx, a graph captured on a stream and replayed with
# cuGraphLaunch): each launch is a described call, none opaque, and at a
# third of its peak the results are the same. Prints TAP-like "ok"/"not
# ok" lines.
set -u
. "$(dirname "$0")/lib.sh"
probe="$BUILD_DIR/tests/sn_drvprobe"
probe_rt="$BUILD_DIR/tests/sn_drvprobe_rt"
export SIMGPU_GRANULARITY=64K

"$probe" >"$tmp/plain.out" 2>"$tmp/plain.err"
rc=$?
check "the probe runs without libsn" "[ $rc -eq 0 ] && grep -q '^calls ' '$tmp/plain.out'" || {
    sed 's/^/# /' "$tmp/plain.err" | tail -4; exit 1; }
read -r calls transfers < <(sed -n 's/^calls \([0-9]*\) transfers \([0-9]*\)$/\1 \2/p' "$tmp/plain.out")

# same_output TAG OUT ERR RC: the run succeeded and printed what the run without libsn printed
same_output() {
    if [ "$4" -ne 0 ]; then
        n=$((n + 1)); echo "not ok $n - $1: the probe failed (exit $4)"; sed 's/^/# /' "$3" | tail -4
    else
        check "$1: output byte-identical to the run without libsn" "cmp -s '$tmp/plain.out' '$2'" ||
            diff "$tmp/plain.out" "$2" | sed 's/^/# /' | head -6
    fi
}

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

SN_MODE=trace SN_REPORT="$tmp/trace.json" LD_PRELOAD="$SN_PRELOAD" "$probe" >"$tmp/trace.out" 2>"$tmp/trace.err"
same_output "trace" "$tmp/trace.out" "$tmp/trace.err" $?
check "trace: every copy and set is a call of the report ($calls)" \
    "[ '$(report_value "$tmp/trace.json" calls)' = '$calls' ]"
check "trace: every host<->device copy is a transfer ($transfers)" \
    "[ '$(report_value "$tmp/trace.json" transfers)' = '$transfers' ]"
check "trace: no call opaque, no range unknown" \
    "[ '$(report_value "$tmp/trace.json" run opaque_calls) $(report_value "$tmp/trace.json" run unknown_ranges)' = '0 0' ]"
check "trace: the 24 buffers are the driver's allocations" \
    "[ '$(report_value "$tmp/trace.json" allocations driver count)' = 24 ]"

# a third of the probe's live bytes (the sum of its buffers, as it prints them)
live=$(awk '$1 == "buffer" { s += $3 } END { print s + 0 }' "$tmp/plain.out")
budget=$((live / 3))
SN_MODE=manage SN_BUDGET=$budget SN_REPORT="$tmp/manage_drv.json" LD_PRELOAD="$SN_PRELOAD" "$probe" \
    >"$tmp/manage.out" 2>"$tmp/manage.err"
same_output "manage, driver API alone, at a third of the live bytes" "$tmp/manage.out" "$tmp/manage.err" $?
check "manage, driver API alone: the arena served and swapped the buffers" \
    "[ '$(report_value "$tmp/manage_drv.json" manage backing)' = 'VMM arena' ] &&
     [ '$(report_value "$tmp/manage_drv.json" manage evictions)' -gt 0 ] &&
     [ '$(report_value "$tmp/manage_drv.json" manage oom_calls)' = 0 ]"
SN_MODE=manage SN_BUDGET=$budget SN_REPORT="$tmp/manage.json" LD_PRELOAD="$SN_PRELOAD" "$probe_rt" \
    >"$tmp/manage_rt.out" 2>"$tmp/manage_rt.err"
same_output "manage at a third of the live bytes (SN_BUDGET=$budget)" "$tmp/manage_rt.out" "$tmp/manage_rt.err" $?
check "manage: the arena served the buffers and swapped them (evictions, loads)" \
    "[ '$(report_value "$tmp/manage.json" manage backing)' = 'VMM arena' ] &&
     [ '$(report_value "$tmp/manage.json" manage allocs)' = 24 ] &&
     [ '$(report_value "$tmp/manage.json" manage swap_in)' -gt 0 ] &&
     [ '$(report_value "$tmp/manage.json" manage evictions)' -gt 0 ]"
check "manage: no call ran out of memory" "[ '$(report_value "$tmp/manage.json" manage oom_calls)' = 0 ]"

# kernels and graphs launched through the driver (tests/sn_drvlaunch.c)
dl="$BUILD_DIR/tests/sn_drvlaunch"
"$dl" >"$tmp/dl.out" 2>&1
rc=$?
if [ $rc -eq 77 ]; then
    n=$((n + 1)); echo "ok $n - driver launches # SKIP host modules need the simulated device"
else
    dl_calls=$(sed -n 's/^calls //p' "$tmp/dl.out")
    SN_MODE=trace SN_REPORT="$tmp/dl-trace.json" LD_PRELOAD="$SN_PRELOAD" "$dl" >"$tmp/dl-trace.out" 2>&1
    check "driver launches, trace: the same output; every launch and copy a call ($dl_calls), none opaque" \
        "[ $rc -eq 0 ] && cmp -s '$tmp/dl.out' '$tmp/dl-trace.out' &&
         [ '$(report_value "$tmp/dl-trace.json" calls)' = '$dl_calls' ] &&
         [ '$(report_value "$tmp/dl-trace.json" run opaque_calls)' = 0 ]"
    dl_peak=$(peak_of "$dl")
    have_bytes "sn_drvlaunch's peak" peak_bytes "$dl_peak" && {
        SN_MODE=manage SN_BUDGET=$((dl_peak / 3)) SN_REPORT="$tmp/dl-manage.json" LD_PRELOAD="$SN_PRELOAD" "$dl" \
            >"$tmp/dl-manage.out" 2>"$tmp/dl-manage.err"
        check "driver launches and a driver-captured graph, manage at a third of the peak: the same output, memory moved" \
            "cmp -s '$tmp/dl.out' '$tmp/dl-manage.out' &&
             [ '$(report_value "$tmp/dl-manage.json" manage evictions)' -gt 0 ]" ||
            sed 's/^/# /' "$tmp/dl-manage.err" | head -4
    }
fi
