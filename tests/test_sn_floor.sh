#!/usr/bin/env bash
# test_sn_floor.sh — calls that write but do not run must not lose a byte
# under libsn. tests/sn_floor_rt.c overwrites whole buffers, just moved off
# the device, with a copy the runtime rejects, a memset captured into a
# graph (run only at the graph's launches, while another stream's work
# makes buffers come and go) and a memset a capture rule refuses. Its
# output (every buffer's checksum after every step, every status) must be
# the same with libsn as without: in manage mode at a third of the
# program's peak, where the first and last overwrites would otherwise
# leave fresh memory where the old contents were and the capture would be
# broken by libsn's own waits and events, and in trace mode, where the
# graph's launch is described by what its captured nodes touch rather
# than counted as opaque, until the program updates the executable graph. tests/sn_ptrarray.c's kernels reach buffers only
# through an array of device addresses the program copied to the device:
# libsn must make those buffers resident too (it reads the addresses as
# they are copied), at a third of the peak, byte for byte. Prints TAP-like
# "ok"/"not ok" lines.
set -u
. "$(dirname "$0")/lib.sh"
prog="$BUILD_DIR/tests/sn_floor_rt"
unset SN_BUDGET SN_MODE SN_POLICY
export SIMGPU_COMPUTE=1

json() { # FILE KEY.PATH
    python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
for k in sys.argv[2].split("."):
    d = d.get(k, "") if isinstance(d, dict) else ""
print(d)
PY
}

"$prog" >"$tmp/plain.out" 2>&1 || { echo "not ok 1 - sn_floor_rt without libsn failed"; cat "$tmp/plain.out"; exit 1; }
peak=$(peak_of "$prog")
have_bytes "sn_floor_rt's peak" peak_bytes "$peak" || exit 1
budget=$((peak / 3))

SN_MODE=manage SN_BUDGET=$budget SN_REPORT="$tmp/manage.json" LD_PRELOAD="$SN_PRELOAD" "$prog" \
    >"$tmp/manage.out" 2>"$tmp/manage.err"
check "manage mode at a third of the peak ($budget bytes): the same statuses and contents as without libsn" \
    "cmp -s '$tmp/plain.out' '$tmp/manage.out'" || diff "$tmp/plain.out" "$tmp/manage.out" | head -8 | sed 's/^/# /'
check "... where memory moved (evictions: $(json "$tmp/manage.json" manage.evictions))" \
    "[ \"\$(json '$tmp/manage.json' manage.evictions)\" -gt 0 ]"
check "... and the rejected copy's block, loaded empty, got its contents back (restored: $(json "$tmp/manage.json" manage.restored_loads))" \
    "[ \"\$(json '$tmp/manage.json' manage.restored_loads)\" -ge 1 ]"

"$prog" update >"$tmp/plain-update.out" 2>&1
SN_MODE=trace SN_REPORT="$tmp/trace.json" LD_PRELOAD="$SN_PRELOAD" "$prog" update >"$tmp/trace.out" 2>"$tmp/trace.err"
check "trace mode: the same output as without libsn" "cmp -s '$tmp/plain-update.out' '$tmp/trace.out'"
check "trace mode: the captured graph's launches are not opaque but the one after cudaGraphExecUpdate (opaque calls: $(json "$tmp/trace.json" run.opaque_calls))" \
    "[ \"\$(json '$tmp/trace.json' run.opaque_calls)\" = 1 ]"

# pointers stored in device memory
ptrs="$BUILD_DIR/tests/sn_ptrarray"
"$ptrs" >"$tmp/ptrs.out" 2>&1 || { echo "not ok - sn_ptrarray without libsn failed"; exit 1; }
peak=$(peak_of "$ptrs")
have_bytes "sn_ptrarray's peak" peak_bytes "$peak" || exit 1
budget=$((peak / 3))
SN_MODE=manage SN_BUDGET=$budget SN_REPORT="$tmp/ptrs.json" LD_PRELOAD="$SN_PRELOAD" "$ptrs" \
    >"$tmp/ptrs-manage.out" 2>"$tmp/ptrs-manage.err"
check "kernels through a device array of pointers, manage mode at a third of the peak ($budget bytes): the same results" \
    "cmp -s '$tmp/ptrs.out' '$tmp/ptrs-manage.out'" || sed 's/^/# /' "$tmp/ptrs-manage.err" | head -4
check "... where the listed buffers had left the device (evictions: $(json "$tmp/ptrs.json" manage.evictions))" \
    "[ \"\$(json '$tmp/ptrs.json' manage.evictions)\" -gt 0 ]"
SN_MODE=trace SN_REPORT="$tmp/ptrs-trace.json" LD_PRELOAD="$SN_PRELOAD" "$ptrs" >"$tmp/ptrs-trace.out" 2>&1
check "... and in trace mode not opaque (opaque calls: $(json "$tmp/ptrs-trace.json" run.opaque_calls))" \
    "[ \"\$(json '$tmp/ptrs-trace.json' run.opaque_calls)\" = 0 ] && cmp -s '$tmp/ptrs.out' '$tmp/ptrs-trace.out'"
"$ptrs" many >"$tmp/many.out" 2>&1
SN_MODE=trace SN_REPORT="$tmp/many-trace.json" LD_PRELOAD="$SN_PRELOAD" "$ptrs" many >"$tmp/many-trace.out" 2>&1
check "one kernel through an array of 600 addresses: not opaque (opaque calls: $(json "$tmp/many-trace.json" run.opaque_calls)), the same sum" \
    "[ \"\$(json '$tmp/many-trace.json' run.opaque_calls)\" = 0 ] && cmp -s '$tmp/many.out' '$tmp/many-trace.out' &&
     grep -q '^many: launch 0' '$tmp/many.out'"
