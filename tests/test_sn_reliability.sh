#!/usr/bin/env bash
# test_sn_reliability.sh — libsn under the habits that broke it before:
#  - threads that free and allocate the same addresses concurrently: the
#    registry must never lose a live allocation (the report counts ranges
#    that hit no known allocation: none here);
#  - fork while other threads are inside libsn: no child may hang in its
#    exit path, none may write a report (the parent's is the run's), and
#    the report appears once;
# Prints TAP-like "ok"/"not ok" lines.
set -u
. "$(dirname "$0")/lib.sh"
prog="$BUILD_DIR/tests/sn_threads"

json_field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@" 2>/dev/null; }

# ---- registry under two threads ------------------------------------------------
for mode in trace manage; do
    SN_MODE=$mode SN_REPORT="$tmp/race-$mode.json" LD_PRELOAD="$SN_PRELOAD" \
        "$prog" race 2 20000 >"$tmp/race.out" 2>"$tmp/race.err"
    rc=$?
    check "race ($mode): two threads allocate, use and free 4 KiB 20000 times each" "[ $rc -eq 0 ]" ||
        sed 's/^/# /' "$tmp/race.out" "$tmp/race.err" | tail -5
    unseen=$(json_field "$tmp/race-$mode.json" "d['devices'][0]['unseen']['ranges']")
    check "race ($mode): no access outside known allocations (registry lost none; got ${unseen:-no report})" \
        "[ '${unseen:-x}' = 0 ]"
done

# ---- fork while other threads are inside libsn ----------------------------------
for mode in manage trace; do
    SN_MODE=$mode LD_PRELOAD="$SN_PRELOAD" timeout 300 "$prog" fork 60 >"$tmp/fork.out" 2>"$tmp/fork.err"
    rc=$?
    check "fork ($mode): 60 children forked while two threads are inside libsn, none hung ($(cat "$tmp/fork.out"))" \
        "[ $rc -eq 0 ]" || sed 's/^/# /' "$tmp/fork.err" | tail -5
done
reports=$(grep -c 'libsn trace report' "$tmp/fork.err")
check "fork (trace): the report is written once, by the parent (got $reports)" "[ '$reports' = 1 ]"

SN_MODE=trace SN_REPORT="$tmp/fork-report.json" LD_PRELOAD="$SN_PRELOAD" timeout 300 "$prog" fork 20 \
    >/dev/null 2>"$tmp/fork2.err"
calls=$(json_field "$tmp/fork-report.json" "d['devices'][0]['calls']")
check "fork (trace, SN_REPORT=file): the file holds the parent's report, not a child's (calls: ${calls:-none})" \
    "[ '${calls:-0}' -gt 100 ]"
