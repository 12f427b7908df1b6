#!/usr/bin/env bash
# test_sn_limits.sh — when manage mode cannot serve an allocation, libsn's
# error names what ran out, so that a user knows which knob (if any) helps:
#  - SN_BUDGET, for an allocation larger than the budget itself;
#  - SN_HOST_LIMIT, when what leaves the device has no pinned host memory
#    left to go to;
#  - address space, when the driver reserves no more (SIMGPU_VA shrinks the
#    simulated driver's space to a size a run uses up).
# And the simulated driver's default space is large enough for a run that
# needs several times the device's memory in address space: ResNet-50 at
# batch 512 on a 12 GB device (libsn keeps a range for every size it has
# served, so the iteration's allocations take more than the 8 times the
# capacity the simulator used to offer).
# Each failing run must end as a clean out-of-memory of the trainer (exit
# 3), never a crash. Prints TAP-like "ok"/"not ok" lines.
set -u
. "$(dirname "$0")/lib.sh"
trainer="$BUILD_DIR/sntrain"
export SIMGPU_PROFILE=titanx SIMGPU_COMPUTE=0
unset SN_BUDGET SN_HOST_LIMIT SN_POLICY SN_MODE SIMGPU_VA SIMGPU_MEM
r50=(--net resnet --depth 50 --alloc dynamic --iters 3)

run() { # NAME ENV... -- TRAINER-ARGS...: exit code in $tmp/NAME.rc, stderr in $tmp/NAME.err
    local name=$1
    shift
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    env "${envs[@]}" SN_REPORT=off LD_PRELOAD="$SN_PRELOAD" "$trainer" "$@" >/dev/null 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}
said() { grep -q -- "$2" "$tmp/$1.err"; }
rc_of() { cat "$tmp/$1.rc"; }

run big SN_HOST_LIMIT=64G -- "${r50[@]}" --batch 512
check "ResNet-50 b512 in 12 GB trains: the simulated driver has the address space a real one has" \
    "[ $(rc_of big) -eq 0 ]" || sed 's/^/# /' "$tmp/big.err" | tail -4

run va SN_HOST_LIMIT=64G SIMGPU_VA=20G -- "${r50[@]}" --batch 512
check "no address space left: a clean out of memory that says so" \
    "[ $(rc_of va) -eq 3 ] && said va 'needs address space, and the driver reserves no more'" ||
    sed 's/^/# /' "$tmp/va.err" | tail -4

run host SN_HOST_LIMIT=1G -- "${r50[@]}" --batch 256
check "no pinned host memory left: a clean out of memory that names SN_HOST_LIMIT" \
    "[ $(rc_of host) -eq 3 ] && said host 'a larger SN_HOST_LIMIT would serve it'" ||
    sed 's/^/# /' "$tmp/host.err" | tail -4

run budget SN_BUDGET=256M -- "${r50[@]}" --batch 128
check "an allocation larger than the budget: a clean out of memory that names SN_BUDGET" \
    "[ $(rc_of budget) -eq 3 ] && said budget 'is larger than SN_BUDGET (256.0 MiB): a budget of at least'" ||
    sed 's/^/# /' "$tmp/budget.err" | tail -4
