#!/usr/bin/env bash
# test_sn_gemm_ex.sh — the GEMMs frameworks call (cublasGemmEx,
# GemmStridedBatchedEx, GemmBatchedEx, SgemmBatched) under libsn. The probe
# (tests/sn_gemm_probe.c) prints a checksum of every output; under
# SN_MODE=off, trace and manage — the last with a budget of the rest of its
# peak plus a third of its data, under two policies — the output must equal
# the run without libsn byte for byte. An operand libsn does not make
# resident is an illegal address in the simulator (the run dies); an output
# written while resident but not marked dirty is lost at eviction (a
# checksum differs); so is a cublasSetWorkspace buffer libsn let go while
# the handle uses it. In trace mode the strided and plain GEMMs must be seen
# through: every GEMM is a step, none opaque (the pointer-array batches'
# matrices are found from the addresses the program copied into the
# arrays), and no range is unknown (a workspace the program freed after cublasSetStream
# would be).
# Prints TAP-like "ok"/"not ok" lines.
set -u
. "$(dirname "$0")/lib.sh"
probe="$BUILD_DIR/tests/sn_gemm_probe"
export SIMGPU_GRANULARITY=64K

"$probe" >"$tmp/plain.out" 2>"$tmp/plain.err"
check "the probe runs without libsn" "[ $? -eq 0 ] && grep -q '^done$' '$tmp/plain.out'" ||
    sed 's/^/# /' "$tmp/plain.err" | tail -4
live=$(awk '/^live_bytes/ {print $2}' "$tmp/plain.out")

same_as_plain() { # DESC FILE RC
    check "$1: same checksums as without libsn (exit $3)" "[ $3 -eq 0 ] && cmp -s '$tmp/plain.out' '$2'" ||
        { diff "$tmp/plain.out" "$2" | sed 's/^/# /' | head -4; tail -3 "$2.err" | sed 's/^/# /'; }
}

SN_MODE=off LD_PRELOAD="$SN_PRELOAD" "$probe" >"$tmp/off.out" 2>"$tmp/off.out.err"
same_as_plain "SN_MODE=off" "$tmp/off.out" $?

SN_MODE=trace SN_REPORT="$tmp/trace.json" SN_TRACE="$tmp/timeline.json" LD_PRELOAD="$SN_PRELOAD" "$probe" \
    >"$tmp/trace.out" 2>"$tmp/trace.out.err"
same_as_plain "SN_MODE=trace" "$tmp/trace.out" $?
read -r gemm batched opaque unknown peak < <(python3 - "$tmp/trace.json" "$tmp/timeline.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
t = json.load(open(sys.argv[2]))
ev = t["traceEvents"] if isinstance(t, dict) else t
steps = [e.get("name") for e in ev if e.get("ph") == "X" and e.get("cat") == "step"]
print(steps.count("gemm"), steps.count("gemm_batched"), d["run"]["opaque_calls"], d["run"]["unknown_ranges"],
      d["run"]["peak_bytes"])
PY
)
# 2 rounds of 40 FP32 and 8 FP16 GemmEx; 2 rounds of 4 strided batches,
# then one GemmBatchedEx and one SgemmBatched
check "trace: every GemmEx is a gemm step (${gemm:-none} of 96)" "[ '${gemm:-}' = 96 ]"
check "trace: every batched call is a gemm_batched step (${batched:-none} of 10)" "[ '${batched:-}' = 10 ]"
check "trace: no call opaque, the pointer-array batches included (${opaque:-none}), no unknown ranges (${unknown:-none})" \
    "[ '${opaque:-}' = 0 ] && [ '${unknown:-}' = 0 ]"

have_bytes "manage" "live_bytes" "${live:-}" && have_bytes "manage" "peak_bytes" "${peak:-}" && {
    budget=$((peak - live * 2 / 3))
    for policy in auto lru; do
        SN_MODE=manage SN_POLICY=$policy SN_BUDGET=$budget SN_REPORT="$tmp/manage.json" LD_PRELOAD="$SN_PRELOAD" \
            "$probe" >"$tmp/manage.out" 2>"$tmp/manage.out.err"
        same_as_plain "SN_MODE=manage SN_POLICY=$policy SN_BUDGET=$budget (data $live, peak $peak)" \
            "$tmp/manage.out" $?
        swapped=$(python3 -c 'import json,sys
print(json.load(open(sys.argv[1]))["devices"][0]["manage"]["swap_in_bytes"])' "$tmp/manage.json" 2>/dev/null)
        # the budget must have made outputs leave and come back
        check "manage ($policy): outputs were swapped out and back in (${swapped:-none} bytes in, data $live)" \
            "[ '${swapped:-0}' -gt '$live' ]"
    done
}
