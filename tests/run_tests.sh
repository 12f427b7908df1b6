#!/usr/bin/env bash
# Runs every test binary and test script given on the command line against
# the simulated device, sums the cmocka verdicts of each binary and prints one
# closing line, "N passed, N failed, N skipped", that CI reads. A binary that
# dies before printing its own summary counts as one failure. A script's
# "ok N - ... # SKIP reason" line (TAP's directive, any case) is a skip, not
# a pass, and its reason is printed. Exit status is non-zero if anything
# failed.
#
# Tests run SN_TEST_JOBS at a time (default: one per CPU). Each test is one
# single-threaded process chain over the simulator (its BLAS is pinned to one
# thread) and writes only under its own mktemp directory, so two run side by
# side on a two-core machine in about half the time. They start in the order
# given (tests/tests.mk lists the longest first, so the workers finish
# together) and are reported as they finish. SN_TEST_JOBS=1 gives the old
# one-at-a-time run, for a timing-sensitive investigation.
set -u
BUILD=${BUILD:-build}
export LD_LIBRARY_PATH="$PWD/$BUILD/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SN_TEST_BUILD="$PWD/$BUILD"
jobs=${SN_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "run_tests.sh: SN_TEST_JOBS must be a positive integer, not '$jobs'" >&2; exit 2; }
# Tests must not inherit a user's simulated-device or libsn settings.
for v in $(env | grep -oE '^(SIMGPU|SN)_[A-Z0-9_]+' | grep -v '^SN_TEST_'); do unset "$v"; done
# Plans are made on the framework's thread (SN_PLAN_WAIT=1): each then starts at the
# same call in every run, so the simulated timings tests compare are
# reproducible. tests/test_sn_planning.sh runs the default, a planning thread.
export SN_PLAN_WAIT=1
# A malformed SN_* value a test passes by mistake would otherwise be one
# warning and the default, and the test could pass on a run that never
# used the value it names: strict, it stops the run (exit status 2). The
# tests of libsn's warnings set SN_STRICT=0 for the runs that pass a bad
# value on purpose.
export SN_STRICT=1

# Some tests expect a process to die of SIGSEGV (an illegal address): the
# sanitizers must leave that signal alone.
export ASAN_OPTIONS="handle_segv=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="handle_segv=0:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export TSAN_OPTIONS="handle_segv=0${TSAN_OPTIONS:+:$TSAN_OPTIONS}"

passed=0; failed=0; skipped=0; failed_names=()
logdir="$BUILD/test-logs"; mkdir -p "$logdir"

# Runs one test in the background; its exit status and wall time land in
# $log.status, which report() reads once the job is reaped.
start_test() {
    local t=$1 name log
    name=$(basename "$t"); log="$logdir/$name.log"
    rm -f "$log.status"
    (
        start=$(date +%s)
        # Its own process group, so that an interrupted run stops the
        # programs a script started as well as the script.
        if [[ "$t" == *.sh ]]; then setsid bash "$t" >"$log" 2>&1 & else setsid "$t" >"$log" 2>&1 & fi
        child=$!
        trap 'kill -TERM -- -$child 2>/dev/null; exit 143' TERM
        wait $child; rc=$?
        echo "$rc $(( $(date +%s) - start ))" >"$log.status"
    ) &
    job_test[$!]=$t
}

report() {
    local t=$1 name log rc secs p f s
    name=$(basename "$t"); log="$logdir/$name.log"
    read -r rc secs <"$log.status" 2>/dev/null || { rc=1; secs=0; echo "  (the runner lost $name's status)" >>"$log"; }
    rm -f "$log.status"
    p=$(grep -aoE '^\[  PASSED  \] [0-9]+ test' "$log" | grep -oE '[0-9]+' | awk '{s+=$1} END {print s+0}')
    f=$(grep -aoE '^\[  FAILED  \] [0-9]+ test' "$log" | grep -oE '[0-9]+' | awk '{s+=$1} END {print s+0}')
    s=$(grep -aoE '^\[  SKIPPED \] [0-9]+ test' "$log" | grep -oE '[0-9]+' | awk '{s+=$1} END {print s+0}')
    if [[ "$t" == *.sh ]]; then
        # Scripts report "ok"/"not ok" lines (TAP-like); each counts, and an
        # "ok" with a SKIP directive counts as a skip.
        s=$(grep -aciE '^ok [^#]*# *skip' "$log")
        p=$(( $(grep -acE '^ok ' "$log") - s )); f=$(grep -acE '^not ok ' "$log")
    fi
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    if [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$s" -eq 0 ]; then f=1; echo "  (no verdict from $name)" >>"$log"; fi
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    if [ "$f" -ne 0 ]; then
        failed_names+=("$name")
        printf 'FAIL %-28s %3d passed %3d failed  %ds  (log: %s)\n' "$name" "$p" "$f" "$secs" "$log"
        tail -n 30 "$log" | sed 's/^/    | /'
    else
        printf 'ok   %-28s %3d passed  %ds%s\n' "$name" "$p" "$secs" "$([ "$s" -gt 0 ] && echo "  ($s skipped)")"
    fi
    if [ "$s" -gt 0 ]; then
        { grep -aiE '^ok [^#]*# *skip' "$log"; grep -aE '^\[  SKIPPED \]' "$log"; } | sed 's/^/    skip: /'
    fi
}

# Reaps one finished test and reports it. `wait -n -p` names the job that
# ended (bash 5.1); an older bash waits for the running test with the
# lowest process id instead, which keeps the count right at some cost in
# overlap.
reap_one() {
    local pid=
    if (( BASH_VERSINFO[0] > 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] >= 1) )); then
        wait -n -p pid
    else
        pid=$(printf '%s\n' "${!job_test[@]}" | sort -n | head -n 1)
        wait "$pid"
    fi
    report "${job_test[$pid]}"
    unset "job_test[$pid]"
}

declare -A job_test=()
# An interrupted run (CI's time limit, ^C) takes its running tests with it.
trap 'kill ${!job_test[*]} 2>/dev/null; exit 130' INT TERM
for t in "$@"; do
    while [ ${#job_test[@]} -ge "$jobs" ]; do reap_one; done
    start_test "$t"
done
while [ ${#job_test[@]} -gt 0 ]; do reap_one; done
echo
[ ${#failed_names[@]} -eq 0 ] || echo "failed: ${failed_names[*]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
