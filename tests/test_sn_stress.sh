#!/usr/bin/env bash
# test_sn_stress.sh — libsn must never change a byte a program reads back.
# tests/sn_stress does random allocations, frees, sets, copies, cuBLAS,
# cuDNN and kernel calls on several streams (one or two threads, by seed),
# through the runtime and the driver API, kernels given device arrays of
# pointers, captured graphs launched again and again, and calls that fail,
# and compares everything it reads back with a host copy. For each seed:
#  (a) without libsn it completes, and says its peak live bytes and the
#      largest working set of one operation;
#  (b) in trace mode it completes with the same result line;
#  (c) in manage mode, with SN_BUDGET a fraction (1/2, 1/3 or 2/3, by seed)
#      of that peak but at least the working set, so that libsn has to move
#      data out to stay within it, the same; and libsn's report says its
#      physical memory stayed within the budget and that it evicted;
#  (c') on a simulated device smaller than the peak (SN_BUDGET left to the
#      device's free memory), the same;
#  (d) with an injected allocation failure (SIMGPU_FAULT_ALLOC, the point
#      chosen by seed), without libsn and under libsn, it completes or stops
#      with its out-of-memory message and exit status 3: never a mismatch, a
#      crash or another error.
# And the test can fail: a preloaded library that loses some writes
# (tests/sn_stress_break.c) is caught as a mismatch, and one that drops
# stream-event waits as an ordering fault.
# Seeds run two at a time (fewer, and shorter, under a sanitizer). Prints TAP-like "ok"/"not ok" lines; a failure
# shows the command that reproduces it.
set -u
. "$(dirname "$0")/lib.sh"
prog="$BUILD_DIR/tests/sn_stress"
brk="$BUILD_DIR/tests/libsn_stress_break.so"
ops=400
seeds=$(seq 1 20)
if [ -n "${SANITIZE:-}" ]; then
    ops=200
    seeds=$(seq 1 8)
fi
MiB=1048576
# 64 KiB granules (2 MiB on a GPU): the program's allocations are small,
# and libsn rounds what it moves to whole granules
export SIMGPU_GRANULARITY=64K


# run NAME ENV... -- ARGS...: the program's stdout, stderr and status in
# $tmp/NAME.{out,err,rc}, and the command line in $tmp/NAME.cmd.
run() {
    local name=$1 envs=()
    shift
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    echo "env LD_LIBRARY_PATH=$BUILD_DIR/sim ${envs[*]} $prog $*" >"$tmp/$name.cmd"
    # (the group's own stderr keeps the shell's note of a signal quiet)
    { timeout 120 env "${envs[@]}" "$prog" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"; } 2>/dev/null
    echo $? >"$tmp/$name.rc"
}

one_seed() {
    local s=$1
    # live bytes well above what one operation needs, so that a budget
    # below the peak still holds every operation
    local threads=$((1 + s % 2)) streams=$((1 + s % 4)) maxsize=4M maxlive=40M
    [ $((s % 3)) = 0 ] && maxsize=1M maxlive=24M
    local args=(--seed "$s" --ops "$ops" --threads "$threads" --streams "$streams" --max-size "$maxsize"
        --max-live "$maxlive")
    run "$s.a" -- "${args[@]}" --print-peak
    run "$s.b" SN_MODE=trace LD_PRELOAD="$SN_PRELOAD" -- "${args[@]}"
    # peak live bytes, working set, allocations (of the run without libsn)
    read -r peak ws allocs < <(sed -nE 's/^sn_stress: peak live bytes ([0-9]+), working set ([0-9]+), allocations ([0-9]+)$/\1 \2 \3/p' \
        "$tmp/$s.a.out")
    peak=${peak:-0} ws=${ws:-0} allocs=${allocs:-0}
    # cuBLAS's workspace and cuDNN's buffer, per thread, in 2 MiB pages
    local handles=$((threads * 6 * MiB))
    local fr=$((s % 3)) num den
    case $fr in 0) num=1 den=2 ;; 1) num=1 den=3 ;; *) num=2 den=3 ;; esac
    # the device memory the run needs without libsn, a fraction of it, and
    # never less than one operation's allocations with the handles' memory
    # (and a 2 MiB page per thread to round up to)
    local total=$((peak + handles))
    local budget=$((total * num / den)) need=$((ws + handles + threads * 2 * MiB))
    [ $budget -lt $need ] && budget=$need
    echo "$budget $num/$den $total $ws" >"$tmp/$s.budget"
    run "$s.c" SN_MODE=manage SN_BUDGET="$budget" SN_REPORT="$tmp/$s.c.json" SIMGPU_MEM=$((total + 32 * MiB)) LD_PRELOAD="$SN_PRELOAD" \
        -- "${args[@]}"
    run "$s.c2" SN_MODE=manage SIMGPU_MEM="$budget" LD_PRELOAD="$SN_PRELOAD" -- "${args[@]}"
    # fault points: the handles' allocations, one in the middle, from the
    # middle on, and past the program's last
    local count=$((allocs + 2 * threads)) fault
    case $((s % 4)) in
    0) fault=$((1 + s % 3)) ;;
    1) fault=$((1 + (s * 7919) % (count > 0 ? count : 1))) ;;
    2) fault="$((count / 2 + 1))+" ;;
    *) fault=$((count + 5)) ;;
    esac
    echo "$fault" >"$tmp/$s.fault"
    local mode=trace
    [ $((s % 2)) = 0 ] && mode=manage
    run "$s.d" SIMGPU_FAULT_ALLOC="$fault" -- "${args[@]}"
    run "$s.e" SIMGPU_FAULT_ALLOC="$fault" SN_MODE=$mode LD_PRELOAD="$SN_PRELOAD" -- "${args[@]}"
}

jobs_running=0
for s in $seeds; do
    one_seed "$s" &
    jobs_running=$((jobs_running + 1))
    if [ $jobs_running -ge 2 ]; then
        wait -n
        jobs_running=$((jobs_running - 1))
    fi
done
wait

ok_line() { tail -n 1 "$tmp/$1.out" 2>/dev/null | grep -E '^sn_stress: seed [0-9]+: [0-9]+ ops, [0-9]+ bytes checked, OK$'; }
shown=""
show() { # the first failure of a check: how to reproduce it, and its output
    [ -n "$shown" ] && return
    shown=1
    echo "# reproduce: $(cat "$tmp/$1.cmd")"
    tail -q -n 4 "$tmp/$1.out" "$tmp/$1.err" 2>/dev/null | grep -v '^libsn: ' | sed 's/^/# /'
}

bad=""; shown=""
for s in $seeds; do
    if [ "$(cat "$tmp/$s.a.rc")" != 0 ] || ! ok_line "$s.a" >/dev/null ||
        ! grep -q '^sn_stress: peak live bytes [1-9]' "$tmp/$s.a.out"; then
        bad="$bad $s"; show "$s.a"
    fi
done
check "without libsn: every seed completes and every byte read back matches${bad:+; failed:$bad}" "[ -z '$bad' ]"

bad=""; shown=""
for s in $seeds; do
    if [ "$(cat "$tmp/$s.b.rc")" != 0 ] || [ "$(ok_line "$s.b")" != "$(ok_line "$s.a")" ]; then
        bad="$bad $s"; show "$s.b"
    fi
done
check "SN_MODE=trace: every seed completes with the same bytes checked as without libsn${bad:+; failed:$bad}" \
    "[ -z '$bad' ]"

bad=""; shown=""; below=0
for s in $seeds; do
    read -r budget frac total _ <"$tmp/$s.budget"
    [ "$budget" -lt "$total" ] && below=$((below + 1))
    if [ "$(cat "$tmp/$s.c.rc")" != 0 ] || [ "$(ok_line "$s.c")" != "$(ok_line "$s.a")" ]; then
        bad="$bad $s(budget $budget, $frac of $total)"; show "$s.c"
    fi
done
check "SN_MODE=manage, SN_BUDGET 1/3 to 2/3 of the device memory used without libsn ($below of $(echo $seeds | wc -w) seeds below it): same result as without libsn${bad:+; failed:$bad}" \
    "[ -z '$bad' ] && [ $below -gt 0 ]"

# The budget holds: libsn's report says its physical memory never exceeded
# SN_BUDGET, and that it did move memory to stay within it.
bad=""; moved=0
for s in $seeds; do
    read -r budget _ <"$tmp/$s.budget"
    r=$(python3 -c 'import json,sys
m=json.load(open(sys.argv[1]))["devices"][0]["manage"]
print(m["peak_physical"], m["evictions"])' "$tmp/$s.c.json" 2>/dev/null) || { bad="$bad $s(no report)"; continue; }
    read -r peak ev <<<"$r"
    [ "$peak" -le "$budget" ] || bad="$bad $s(peak $peak > budget $budget)"
    [ "$ev" -gt 0 ] && moved=$((moved + 1))
done
check "SN_MODE=manage: physical memory within SN_BUDGET in every seed; $moved seeds evicted to stay within it${bad:+; failed:$bad}" \
    "[ -z '$bad' ] && [ $moved -gt 0 ]"

bad=""; shown=""
for s in $seeds; do
    if [ "$(cat "$tmp/$s.c2.rc")" != 0 ] || [ "$(ok_line "$s.c2")" != "$(ok_line "$s.a")" ]; then
        bad="$bad $s"; show "$s.c2"
    fi
done
check "SN_MODE=manage on a device smaller than the program's peak: same result as without libsn${bad:+; failed:$bad}" \
    "[ -z '$bad' ]"

bad=""; shown=""; oom=0; done_ok=0
for s in $seeds; do
    for r in d e; do
        rc=$(cat "$tmp/$s.$r.rc")
        if [ "$rc" = 3 ] && grep -q '^sn_stress: out of memory: ' "$tmp/$s.$r.err" &&
            ! grep -q MISMATCH "$tmp/$s.$r.out"; then
            oom=$((oom + 1))
        elif [ "$rc" = 0 ] && ok_line "$s.$r" >/dev/null; then
            done_ok=$((done_ok + 1))
        else
            bad="$bad $s$r(SIMGPU_FAULT_ALLOC=$(cat "$tmp/$s.fault") rc $rc)"; show "$s.$r"
        fi
    done
done
check "SIMGPU_FAULT_ALLOC, without libsn and under libsn: $oom runs stop with the out-of-memory message and status 3, $done_ok complete; no mismatch, crash or other error${bad:+; failed:$bad}" \
    "[ -z '$bad' ] && [ $oom -gt 0 ]"

# ---- the test can fail ----------------------------------------------------------
bad=""; shown=""
for s in 1 2 3; do
    run "drop$s" SN_STRESS_BREAK=drop LD_PRELOAD="${SAN_PRELOAD:+$SAN_PRELOAD }$brk" -- --seed "$s" --ops 400 --streams 3
    if [ "$(cat "$tmp/drop$s.rc")" != 1 ] ||
        ! grep -qE "^sn_stress: MISMATCH seed $s op [0-9]+ alloc [0-9]+ offset [0-9]+: got 0x[0-9a-f]{2} want 0x[0-9a-f]{2}$" \
            "$tmp/drop$s.out"; then
        bad="$bad $s"; show "drop$s"
    fi
done
check "lost writes (every 8th cudaMemsetAsync and device-to-device cudaMemcpyAsync dropped) are reported as a mismatch, status 1${bad:+; not caught:$bad}" \
    "[ -z '$bad' ]"

bad=""; shown=""
for s in 1 2 3; do
    run "nowait$s" SN_STRESS_BREAK=nowait LD_PRELOAD="${SAN_PRELOAD:+$SAN_PRELOAD }$brk" -- --seed "$s" --ops 400 --streams 3
    if [ "$(cat "$tmp/nowait$s.rc")" = 0 ] || ! grep -q '^simgpu: ordering hazard' "$tmp/nowait$s.err"; then
        bad="$bad $s"; show "nowait$s"
    fi
done
check "dropped cudaStreamWaitEvent ordering is caught by the simulator's ordering check${bad:+; not caught:$bad}" \
    "[ -z '$bad' ]"
