#!/usr/bin/env bash
# test_bench_scripts.sh — a bench script whose measurements fail writes no
# table: bench/sn_overhead.sh run with a build folder that holds none of
# its programs, and with one whose program fails under valgrind, exits
# non-zero and leaves the table it was pointed at as it was (a copy here,
# never the committed bench/results/libsn_overhead.md), with no temporary
# file beside it. The committed table is checked unchanged too.
# Prints TAP-like "ok"/"not ok" lines.
set -u
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
script="$here/../bench/sn_overhead.sh"
committed="$here/../bench/results/libsn_overhead.md"
sum_before=$(sha256sum "$committed" | cut -d' ' -f1)

# overhead NAME BUILD: runs the script on BUILD with the table at
# $tmp/NAME.md (a copy of the committed one); its status in $rc
overhead() {
    cp "$committed" "$tmp/$1.md"
    (cd "$here/.." && BUILD="$2" timeout 300 bash "$script" "$tmp/$1.md") >"$tmp/$1.out" 2>"$tmp/$1.err"
    rc=$?
}
untouched() { cmp -s "$committed" "$tmp/$1.md" && [ ! -e "$tmp/$1.md.tmp" ]; }

mkdir -p "$tmp/empty"
overhead empty "$tmp/empty"
check "sn_overhead.sh with an empty build folder: exits non-zero (rc $rc)" "[ $rc -ne 0 ]" ||
    sed 's/^/# /' "$tmp/empty.err" | tail -4
check "sn_overhead.sh with an empty build folder: the table is left as it was, nothing on stdout" \
    "untouched empty && [ ! -s '$tmp/empty.out' ]"

if ! command -v valgrind >/dev/null; then
    echo "ok - sn_overhead.sh with a failing program # SKIP valgrind is not installed"
else
    # The programs are there, but the measured one fails: the first
    # measurement fails, and no table of zeros follows.
    mkdir -p "$tmp/failing"
    printf '#!/bin/sh\nexit 1\n' >"$tmp/failing/sn_overhead"
    chmod +x "$tmp/failing/sn_overhead"
    cp "$BUILD_DIR/libsn.so" "$tmp/failing/libsn.so"
    overhead failing "$tmp/failing"
    check "sn_overhead.sh whose measurement fails: exits non-zero (rc $rc), says which failed" \
        "[ $rc -ne 0 ] && grep -q '^sn_overhead.sh: memset (plain, 1000) failed' '$tmp/failing.err'" ||
        sed 's/^/# /' "$tmp/failing.err" | tail -4
    check "sn_overhead.sh whose measurement fails: the table is left as it was" "untouched failing"
fi

check "the committed table is unchanged" "[ \"\$(sha256sum '$committed' | cut -d' ' -f1)\" = '$sum_before' ]"
