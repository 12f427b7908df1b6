#!/usr/bin/env bash
# test_sn_faults.sh — injected allocation failures under libsn. The
# simulator's SIMGPU_FAULT_ALLOC=N makes the Nth device allocation of the
# process fail with out of memory (N+: that one and every later one). For
# a small training run in each allocation style, every N from the first
# allocation to past the last (a stride after the first few, wider under a
# sanitizer), libsn in off, trace and manage mode must give the same exit
# status, the same stdout and the same stderr (less libsn's own lines) as
# the run without libsn: an out-of-memory reported the way the program
# reports it, never a crash, a hang or different numbers. In manage mode
# libsn serves the trainer's allocations from its own arena, so the Nth
# real allocation is one of libsn's (a physical handle, a pinned slab, a
# stream) rather than the trainer's: there every run must either train to
# exactly the result of the run without faults, or end with the trainer's
# clean out-of-memory (exit status 3). Prints TAP-like
# "ok"/"not ok" lines, one per style and mode. Simulated times are masked:
# the trainer's data-loader thread issues copies concurrently with the
# compute thread, so device time varies from run to run with or without
# libsn; losses and checksums do not.
set -u
. "$(dirname "$0")/lib.sh"
trainer="$BUILD_DIR/sntrain"
args=(--net resnet --depth 8 --input 16 --batch 2 --iters 2 --width 4)
stride=4
[ -n "${SANITIZE:-}" ] && stride=16

# what must not change: every loss and the weights' checksum (manage mode
# reports device memory as its budget, so memory lines differ)
learned() { grep -E '^(iter [0-9]+ loss|checksum)' "$1" | sed -E 's/ time .*//'; }

run() { # out-prefix fault preload... -> files $1.out $1.err $1.rc
    local out=$1 fault=$2; shift 2
    SIMGPU_FAULT_ALLOC=$fault timeout 120 env "$@" "$trainer" "${args[@]}" --alloc "$style" \
        >"$out.raw" 2>"$out.err"
    echo $? >"$out.rc"
    mask_trainer_times <"$out.raw" >"$out.out"
    grep -v '^libsn: ' "$out.err" | mask_trainer_times >"$out.err.f"
}

for style in caffe darknet dynamic; do
    faults=()
    k=1
    # every N up to the first that no longer fails
    while :; do
        run "$tmp/plain-$k" "$k"
        faults+=("$k")
        [ "$(cat "$tmp/plain-$k.rc")" = 0 ] && break
        [ $k -ge 2000 ] && break
        if [ $k -lt 8 ]; then k=$((k + 1)); else k=$((k + stride)); fi
    done
    for f in 3+ 40+; do run "$tmp/plain-$f" "$f"; faults+=("$f"); done
    clean="$tmp/plain-$k"   # the first N that did not fail: the whole run
    for mode in off trace manage; do
        bad=""
        for f in "${faults[@]}"; do
            run "$tmp/sn-$f" "$f" SN_MODE=$mode LD_PRELOAD="$SN_PRELOAD"
            if [ $mode = manage ]; then
                local_rc=$(cat "$tmp/sn-$f.rc")
                if { [ "$local_rc" = 0 ] && cmp -s <(learned "$clean.out") <(learned "$tmp/sn-$f.out"); } ||
                    { [ "$local_rc" = 3 ] && grep -q 'out of memory' "$tmp/sn-$f.err"; }; then
                    continue
                fi
                bad="$bad $f(rc $local_rc)"
                continue
            fi
            if ! cmp -s "$tmp/plain-$f.rc" "$tmp/sn-$f.rc" || ! cmp -s "$tmp/plain-$f.out" "$tmp/sn-$f.out" ||
                ! cmp -s "$tmp/plain-$f.err.f" "$tmp/sn-$f.err.f"; then
                bad="$bad $f(rc $(cat "$tmp/plain-$f.rc")/$(cat "$tmp/sn-$f.rc"))"
                [ -z "${first_diff:-}" ] && first_diff="$f" &&
                    diff "$tmp/plain-$f.out" "$tmp/sn-$f.out" | head -5 | sed 's/^/# /' &&
                    diff "$tmp/plain-$f.err.f" "$tmp/sn-$f.err.f" | head -5 | sed 's/^/# /'
            fi
        done
        what="same status and output as without libsn"
        [ $mode = manage ] && what="the fault-free result or a clean out-of-memory"
        check "fault injection, $style allocation, SN_MODE=$mode: ${#faults[@]} failure points, $what${bad:+; differ at$bad}" \
            "[ -z '$bad' ]"
    done
done
