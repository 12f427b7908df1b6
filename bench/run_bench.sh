#!/usr/bin/env bash
# run_bench.sh — what `make bench` runs: the reference trainer's full-size
# networks on the simulated device with compute off (memory and time are
# modelled, no arithmetic), written as Markdown tables to bench/results/.
#
#   trainer_baseline.md   peak device memory, simulated ms per iteration and
#                         images/s of each network and allocation style, on
#                         the K40 timing profile with unlimited memory, and
#                         whether it fits the real 12 GB K40
#   trainer_max_batch.md  the largest batch (power of two, then bisected)
#                         each network trains with on the 12 GB K40, per
#                         style, and under libsn when $BUILD/libsn.so exists
#   calibration.md        the simulated clock against published measurements
#                         (bench/calibrate.sh)
#   gtbm.md               GTBM placement against best fit on the dynamic
#                         style's allocation traces (bench/gtbm_bench.sh)
#   libsn_overhead.md     instructions libsn adds per call (bench/sn_overhead.sh)
#   manage.md             manage mode's cost and demand swapping (bench/manage_bench.sh)
#   policies.md           the SN_POLICY policies side by side (bench/policy_bench.sh)
#   policies_12gb.md      networks larger than a 12 GB GPU under every policy, against
#                         unlimited memory; largest batch, deepest ResNet
#                         (bench/policy_fullsize.sh)
#   oversubscription.md   four networks at 2 to 12 times the batch that fits 12 GB:
#                         ideal, bound, auto, the best seed policy, demand residency
#                         (bench/oversubscription.sh)
#   planning.md           how long planning holds the framework, on libsn's thread
#                         and with SN_PLAN_WAIT=1 (bench/planning_bench.sh)
#   caffe.md              BVLC Caffe on full-size nets in 12 GB, alone and under libsn:
#                         largest batch, deepest ResNet, ms per iteration against
#                         unlimited memory (bench/caffe_bench.sh; a line says why
#                         where Caffe cannot be built)
#
# BENCH_QUICK=1 runs a reduced set (used to check the script itself).
# A table whose measurements failed is not written (the committed one is
# left as it was), and the script then exits non-zero.
set -u
BUILD=${BUILD:-build}
export LD_LIBRARY_PATH="$PWD/$BUILD/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
SNTRAIN="$PWD/$BUILD/sntrain"
LIBSN="$PWD/$BUILD/libsn.so"
OUT=bench/results
mkdir -p "$OUT"
export SIMGPU_COMPUTE=0
unset SIMGPU_MEM SIMGPU_PROFILE SIMGPU_DEVICES SIMGPU_VMM SN_MODE SN_BUDGET SN_POLICY

if [ ! -x "$SNTRAIN" ]; then
    echo "run_bench.sh: $SNTRAIN is not built" >&2
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
# publish NAME: moves the table made in $tmp/NAME into $OUT, unless a
# measurement for it failed (the flag $tmp/NAME.failed, set from subshells too)
publish() {
    if [ -e "$tmp/$1.failed" ]; then
        echo "run_bench.sh: a measurement for $1 failed; $OUT/$1 not refreshed" >&2
        status=1
    else
        mv "$tmp/$1" "$OUT/$1" && echo "wrote $OUT/$1"
    fi
}

# "name|sntrain options" of the full-size workloads.
NETS=(
    "AlexNet b128|--net alexnet --batch 128"
    "VGG-16 b64|--net vgg --depth 16 --batch 64"
    "VGG-16 b256|--net vgg --depth 16 --batch 256"
    "VGG-116 b32|--net vgg --depth 116 --batch 32"
    "ResNet-50 b32|--net resnet --depth 50 --batch 32"
    "ResNet-152 b64|--net resnet --depth 152 --batch 64"
    "Inception-v4 b32|--net inception --batch 32"
    "DenseNet-121 b32|--net densenet --depth 121 --batch 32"
)
MAXB_NETS=(
    "AlexNet|--net alexnet"
    "VGG-16|--net vgg --depth 16"
    "ResNet-50|--net resnet --depth 50"
    "ResNet-152|--net resnet --depth 152"
    "Inception-v4|--net inception"
    "DenseNet-121|--net densenet --depth 121"
)
STYLES=(caffe darknet dynamic)
ITERS=3
if [ "${BENCH_QUICK:-0}" = 1 ]; then
    NETS=("ResNet-50 b32|--net resnet --depth 50 --batch 32")
    MAXB_NETS=("ResNet-50|--net resnet --depth 50")
    ITERS=2
fi
# The simulated K40's capacity (sim/device.c, profile k40: 11,996,954,624 bytes).
K40_MIB=11441

field() { awk -v k="$1" '$1 == k { print $2 }'; }
last_ms() { awk '$1 == "iter" { t = $6 } END { print t }'; }

# run_one PRELOAD ARGS... -> prints "rc peak ms rate"
run_one() {
    local preload=$1; shift
    local out rc
    if [ -n "$preload" ]; then
        out=$(LD_PRELOAD="$preload" "$SNTRAIN" "$@" --prefetch lockstep 2>/dev/null); rc=$?
    else
        out=$("$SNTRAIN" "$@" --prefetch lockstep 2>/dev/null); rc=$?
    fi
    echo "$rc $(echo "$out" | field peak) $(echo "$out" | last_ms) $(echo "$out" | field images/s)"
}

# The clock first: the tables below are only as good as it is.
if BUILD=$BUILD bench/calibrate.sh "$OUT/calibration.md"; then
    echo "wrote $OUT/calibration.md"
else
    echo "run_bench.sh: calibration.md failed (see above)" >&2
    status=1
fi

started=$(date +%s)
{
    echo "# sntrain baseline: full-size networks, compute off"
    echo
    echo "Simulated Tesla K40 timing with unlimited memory (SIMGPU_PROFILE=k40"
    echo "SIMGPU_MEM=1024G SIMGPU_COMPUTE=0), $ITERS iterations, time of the last one."
    echo "\"fits K40\": the peak is within the K40's $K40_MIB MiB. Generated by"
    echo "bench/run_bench.sh on $(date -u +%Y-%m-%d)."
    echo
    echo "| network | style | peak MiB | ms / iteration | images/s | fits K40 |"
    echo "|---|---|---:|---:|---:|---|"
    for entry in "${NETS[@]}"; do
        name=${entry%%|*}; args=${entry#*|}
        for style in "${STYLES[@]}"; do
            # shellcheck disable=SC2086
            read -r rc peak ms rate < <(SIMGPU_PROFILE=k40 SIMGPU_MEM=1024G run_one "" \
                $args --alloc "$style" --iters $ITERS)
            if [ "$rc" -ne 0 ]; then
                echo "run_bench.sh: $name, $style: the trainer failed (exit $rc)" >&2
                touch "$tmp/trainer_baseline.md.failed"
                continue
            fi
            fits=no
            [ "$peak" -le $K40_MIB ] && fits=yes
            echo "| $name | $style | $peak | $ms | $rate | $fits |"
        done
    done
} >"$tmp/trainer_baseline.md"
publish trainer_baseline.md

# largest_batch PRELOAD ARGS... : largest batch that trains on the K40
largest_batch() {
    local preload=$1; shift
    local lo=0 hi=1 rc
    while :; do
        read -r rc _ < <(SIMGPU_PROFILE=k40 run_one "$preload" "$@" --batch $hi --iters 2)
        [ "$rc" -eq 0 ] || break
        lo=$hi; hi=$((hi * 2))
        [ $hi -gt 4096 ] && { echo ">=$lo"; return; }
    done
    if [ "$rc" -ne 3 ]; then
        echo "run_bench.sh: largest batch of $*: a run failed (exit $rc)" >&2
        touch "$tmp/trainer_max_batch.md.failed"
        echo "error $rc"
        return
    fi
    while [ $((hi - lo)) -gt 1 ] && [ $((hi - lo)) -gt $((lo / 16)) ]; do
        local mid=$(((lo + hi) / 2))
        read -r rc _ < <(SIMGPU_PROFILE=k40 run_one "$preload" "$@" --batch $mid --iters 2)
        if [ "$rc" -eq 0 ]; then lo=$mid; else hi=$mid; fi
    done
    echo "$lo"
}

{
    echo "# Largest batch on a 12 GB Tesla K40"
    echo
    echo "SIMGPU_PROFILE=k40 SIMGPU_COMPUTE=0; doubling then bisection to within"
    echo "1/16 (the value shown trains; the next step up runs out of memory)."
    if [ -f "$LIBSN" ]; then
        echo "\"+ libsn\": libsn.so preloaded in its default mode (SN_MODE=manage). Its memory"
        echo "manager is not built yet, so that mode only observes: equal numbers show that"
        echo "libsn takes no device memory of its own."
    fi
    echo
    header="| network |"; rule="|---|"
    for style in "${STYLES[@]}"; do header+=" $style |"; rule+="---:|"; done
    if [ -f "$LIBSN" ]; then
        for style in "${STYLES[@]}"; do header+=" $style + libsn |"; rule+="---:|"; done
    fi
    echo "$header"; echo "$rule"
    for entry in "${MAXB_NETS[@]}"; do
        name=${entry%%|*}; args=${entry#*|}
        row="| $name |"
        for style in "${STYLES[@]}"; do
            # shellcheck disable=SC2086
            row+=" $(largest_batch "" $args --alloc "$style") |"
        done
        if [ -f "$LIBSN" ]; then
            for style in "${STYLES[@]}"; do
                # shellcheck disable=SC2086
                row+=" $(largest_batch "$LIBSN" $args --alloc "$style") |"
            done
        fi
        echo "$row"
    done
} >"$tmp/trainer_max_batch.md"
publish trainer_max_batch.md
echo "($(($(date +%s) - started)) s)"

# Placement policies on recorded allocation sequences (no device time).
if ! BUILD=$BUILD bench/gtbm_bench.sh "$OUT/gtbm.md"; then
    echo "run_bench.sh: gtbm.md not refreshed (see above)" >&2
    status=1
fi

# Instructions per intercepted call, pass-through and trace mode (callgrind).
if [ -x "$PWD/$BUILD/sn_overhead" ] && command -v valgrind >/dev/null; then
    BUILD=$BUILD bench/sn_overhead.sh && echo "wrote $OUT/libsn_overhead.md" || status=1
else
    echo "run_bench.sh: valgrind or $BUILD/sn_overhead missing; libsn_overhead.md not refreshed" >&2
fi

# Manage mode: cost with nothing to move, demand swapping below the peak.
if [ -f "$PWD/$BUILD/libsn.so" ]; then
    BUILD=$BUILD OUT=$OUT bench/manage_bench.sh >/dev/null && echo "wrote $OUT/manage.md" || status=1
fi

# Manage mode's policies side by side at half the peak (bench/policy_bench.sh).
if [ -f "$PWD/$BUILD/libsn.so" ]; then
    BUILD=$BUILD OUT=$OUT bench/policy_bench.sh >/dev/null && echo "wrote $OUT/policies.md" || status=1
    BUILD=$BUILD OUT=$OUT bench/policy_fullsize.sh >/dev/null && echo "wrote $OUT/policies_12gb.md" || status=1
    BUILD=$BUILD bench/oversubscription.sh "$OUT/oversubscription.md" >/dev/null &&
        echo "wrote $OUT/oversubscription.md" || status=1
fi

# Planning off the framework's thread: how long it holds the framework.
if [ -f "$PWD/$BUILD/libsn.so" ]; then
    BUILD=$BUILD bench/planning_bench.sh "$OUT/planning.md" && echo "wrote $OUT/planning.md" || status=1
fi

# BVLC Caffe, an unmodified framework, alone and under libsn (about half an
# hour on two shared cores; skipped with a line where Caffe cannot be built).
if [ -f "$PWD/$BUILD/libsn.so" ]; then
    BUILD=$BUILD OUT=$OUT bench/caffe_bench.sh || status=1
fi
exit $status
