#!/usr/bin/env bash
# The test runner itself (tests/run_tests.sh), on small stand-in tests: with
# two workers two tests run at once (each waits to see the other started,
# which one at a time never can); verdicts are summed as before (a "not ok",
# a test that dies without one, a SKIP directive) and a failure makes the
# exit status non-zero; an interrupted run stops what the tests started;
# a bad SN_TEST_JOBS is refused.
set -u
. "$(dirname "$0")/lib.sh"
runner="$PWD/tests/run_tests.sh"
t="$tmp/t"; mkdir -p "$t"

# meet.sh NAME OTHER: says it started, then waits up to 5 s for OTHER.
cat >"$t/meet.sh" <<'EOF'
touch "$MEET_DIR/$1.started"
for _ in $(seq 50); do [ -e "$MEET_DIR/$2.started" ] && { echo "ok 1 - $1 met $2"; exit 0; }; sleep 0.1; done
echo "not ok 1 - $1 never met $2"
EOF
printf 'bash "%s" a b\n' "$t/meet.sh" >"$t/a.sh"
printf 'bash "%s" b a\n' "$t/meet.sh" >"$t/b.sh"

rm -f "$t"/*.started
MEET_DIR=$t SN_TEST_JOBS=2 BUILD="$tmp/b2" "$runner" "$t/a.sh" "$t/b.sh" >"$tmp/two.out" 2>&1
rc=$?
check "SN_TEST_JOBS=2: two tests run side by side (rc $rc, $(tail -n 1 "$tmp/two.out"))" \
    "[ $rc -eq 0 ] && [ \"\$(tail -n 1 '$tmp/two.out')\" = '2 passed, 0 failed, 0 skipped' ]" ||
    sed 's/^/# /' "$tmp/two.out"
rm -f "$t"/*.started
MEET_DIR=$t SN_TEST_JOBS=1 BUILD="$tmp/b1" "$runner" "$t/a.sh" "$t/b.sh" >"$tmp/one.out" 2>&1
rc=$?
check "SN_TEST_JOBS=1: one at a time, so the first never meets the second (rc $rc)" \
    "[ $rc -ne 0 ] && grep -q '^FAIL a.sh' '$tmp/one.out' && grep -q '^ok   b.sh' '$tmp/one.out'" ||
    sed 's/^/# /' "$tmp/one.out"

printf 'echo "ok 1 - fine"\necho "not ok 2 - broken"\n' >"$t/fails.sh"
printf 'echo "ok 1 - fine"\nexit 3\n' >"$t/dies.sh"
printf 'exit 0\n' >"$t/silent.sh"
printf 'echo "ok 1 - absent # SKIP nothing to test here"\necho "ok 2 - fine"\n' >"$t/skips.sh"
BUILD="$tmp/bv" "$runner" "$t/fails.sh" "$t/dies.sh" "$t/silent.sh" "$t/skips.sh" >"$tmp/verdicts.out" 2>&1
rc=$?
check "verdicts: not ok, a non-zero exit and no verdict fail, a SKIP is a skip (rc $rc, $(tail -n 1 "$tmp/verdicts.out"))" \
    "[ $rc -ne 0 ] && [ \"\$(tail -n 1 '$tmp/verdicts.out')\" = '3 passed, 3 failed, 1 skipped' ] &&
     grep -q '^failed: .*fails.sh' '$tmp/verdicts.out' && grep -q 'skip: ok 1 - absent # SKIP nothing' '$tmp/verdicts.out'" ||
    sed 's/^/# /' "$tmp/verdicts.out"

# A test that starts a long-lived program and waits for it: interrupting
# the runner must not leave the program running.
cat >"$t/hangs.sh" <<EOF
sleep 300 &
echo \$! >"$t/hangs.pid"
wait
EOF
BUILD="$tmp/bi" "$runner" "$t/hangs.sh" >"$tmp/int.out" 2>&1 &
rpid=$!
for _ in $(seq 100); do [ -s "$t/hangs.pid" ] && break; sleep 0.1; done
kill -TERM "$rpid"
wait "$rpid"
rc=$?
child=$(cat "$t/hangs.pid" 2>/dev/null)
for _ in $(seq 50); do kill -0 "${child:-0}" 2>/dev/null || break; sleep 0.1; done
check "interrupted (rc $rc): the program a test started is stopped too" \
    "[ -n '$child' ] && [ $rc -ne 0 ] && ! kill -0 '$child' 2>/dev/null"
kill "${child:-0}" 2>/dev/null

SN_TEST_JOBS=two BUILD="$tmp/bj" "$runner" "$t/skips.sh" >"$tmp/jobs.out" 2>&1
rc=$?
check "SN_TEST_JOBS=two is refused with exit 2 and a message" \
    "[ $rc -eq 2 ] && grep -q 'SN_TEST_JOBS must be a positive integer' '$tmp/jobs.out'"
