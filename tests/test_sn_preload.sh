#!/usr/bin/env bash
# test_sn_preload.sh — libsn preloaded must not change what a program sees.
# Runs test_sn_passthrough (bad pointers, double frees, calls before
# initialisation, bad handles, the driver reached through dlsym and
# cuGetProcAddress) without libsn and under LD_PRELOAD in every SN_MODE, and
# requires the same return codes and last-error states line for line.
# Prints TAP-like "ok"/"not ok" lines.
set -u
. "$(dirname "$0")/lib.sh"
bin="$BUILD_DIR/tests/test_sn_passthrough"
lib=$SN_PRELOAD

"$bin" >"$tmp/plain.out" 2>"$tmp/plain.err"
rc=$?
grep '^probe' "$tmp/plain.out" >"$tmp/plain.probes"
if [ "$rc" -eq 0 ] && [ -s "$tmp/plain.probes" ]; then echo "ok - without libsn"; else echo "not ok - without libsn (exit $rc)"; fi

for mode in off trace manage; do
    SN_MODE=$mode SN_REPORT=off SN_TEST_EXPECT_LIBSN=1 LD_PRELOAD="$lib" "$bin" >"$tmp/$mode.out" 2>"$tmp/$mode.err"
    rc=$?
    grep '^probe' "$tmp/$mode.out" >"$tmp/$mode.probes"
    if [ "$rc" -ne 0 ]; then
        echo "not ok - SN_MODE=$mode: the program failed (exit $rc)"
        sed 's/^/# /' "$tmp/$mode.out" | tail -20
    elif ! diff -u "$tmp/plain.probes" "$tmp/$mode.probes" >"$tmp/$mode.diff"; then
        echo "not ok - SN_MODE=$mode: return codes differ from the run without libsn"
        sed 's/^/# /' "$tmp/$mode.diff"
    else
        echo "ok - SN_MODE=$mode: same return codes and last errors as without libsn"
    fi
    if grep -q '^libsn: ' "$tmp/$mode.err"; then
        echo "not ok - SN_MODE=$mode: libsn printed something for a clean configuration"
        sed 's/^/# /' "$tmp/$mode.err"
    else
        echo "ok - SN_MODE=$mode: libsn silent"
    fi
done

# A malformed value: one warning naming the variable, the accepted forms and
# the default, and the program behaves as with the default (not strict:
# SN_STRICT=1, as the test runner sets it, would stop the program).
SN_STRICT=0 SN_MODE=tracing SN_REPORT=off LD_PRELOAD="$lib" "$bin" >"$tmp/bad.out" 2>"$tmp/bad.err"
rc=$?
grep '^probe' "$tmp/bad.out" >"$tmp/bad.probes"
n=$(grep -c '^libsn: ' "$tmp/bad.err")
if [ "$rc" -eq 0 ] && [ "$n" -eq 1 ] && grep -q 'SN_MODE=tracing is not valid (accepted: off|trace|manage); using the default, manage' "$tmp/bad.err" &&
   diff -q "$tmp/plain.probes" "$tmp/bad.probes" >/dev/null; then
    echo "ok - malformed SN_MODE: one warning, default used, behaviour unchanged"
else
    echo "not ok - malformed SN_MODE (exit $rc, $n libsn lines)"
    sed 's/^/# /' "$tmp/bad.err"
fi

SN_STRICT=0 SN_PROFILE_ITERS=-3 SN_BUDGET=lots SN_MODE=off LD_PRELOAD="$lib" "$bin" >/dev/null 2>"$tmp/bad2.err"
if [ "$(grep -c '^libsn: ' "$tmp/bad2.err")" -eq 2 ] && grep -q 'SN_PROFILE_ITERS=-3' "$tmp/bad2.err" &&
   grep -q 'SN_BUDGET=lots' "$tmp/bad2.err"; then
    echo "ok - two malformed values: one warning each"
else
    echo "not ok - two malformed values"
    sed 's/^/# /' "$tmp/bad2.err"
fi

SN_STRICT=1 SN_MODE=tracing LD_PRELOAD="$lib" "$bin" >/dev/null 2>"$tmp/strict.err"
rc=$?
if [ "$rc" -eq 2 ] && grep -q '^libsn: error: SN_STRICT=1' "$tmp/strict.err"; then
    echo "ok - SN_STRICT=1 stops on a malformed value"
else
    echo "not ok - SN_STRICT=1 (exit $rc)"
    sed 's/^/# /' "$tmp/strict.err"
fi

SN_HELP=1 SN_MODE=off LD_PRELOAD="$lib" /bin/true 2>"$tmp/help.err"
if grep -q '^libsn:   SN_BUDGET' "$tmp/help.err" && ! grep -qv '^libsn: ' "$tmp/help.err"; then
    echo "ok - SN_HELP=1 prints the option table on stderr"
else
    echo "not ok - SN_HELP=1"
    sed 's/^/# /' "$tmp/help.err"
fi
