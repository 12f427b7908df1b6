#!/usr/bin/env bash
# policy_fullsize.sh — networks larger than the GPU, trained under every
# SN_POLICY on the simulated 12 GB titanx profile (PCIe 3; compute off,
# full-size networks), against the ideal: the same run on a device with
# unlimited memory, without libsn, with the fastest convolution algorithms
# whatever their workspace (a 4 GiB cap made VGG-16's ideal slower than
# what auto runs in 12 GB). Per row and policy: steady-state simulated ms
# per iteration (the mean of the last three of ITERS), its ratio to the
# ideal (1.00: as fast as unlimited memory), and the bytes copied each way
# per iteration. Then the largest batch each network trains with, and the
# deepest ResNet at batch 16, without libsn and under auto, in the dynamic
# allocation style (every activation allocated when needed and freed after
# its last use, as the frameworks the seed systems were built in did; the
# Caffe style's buffers for everything, at once, outgrow any host first).
# Writes bench/results/policies_12gb.md.
#
# The simulated host has 128 GiB of pinned memory for what does not fit the
# 12 GB device (SN_HOST_LIMIT=128G), as a training server of that size
# would; the largest-batch and deepest-network searches end where it, the
# device or the address space runs out, and the table says which. (With
# 64 GiB, Inception-v4 stopped at batch 464 for want of host memory.)
set -u
BUILD=${BUILD:-build}
OUT=${OUT:-bench/results}
export LD_LIBRARY_PATH="$PWD/$BUILD/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Plans made on the framework's thread, so that each starts at the same
# call in every run and the tables are reproducible (docs/decisions.md).
export SN_PLAN_WAIT=1
SNTRAIN="$PWD/$BUILD/sntrain"
LIBSN="$PWD/$BUILD/libsn.so"
export SIMGPU_PROFILE=titanx SIMGPU_COMPUTE=0
unset SIMGPU_MEM SN_BUDGET SN_POLICY SN_MODE SN_WORKSPACE
export SN_HOST_LIMIT=128G
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/fullsize_lib.sh"
# A run that fails other than by running out of memory (the trainer's exit
# status 3, a result here) stops the script: no table is written.
fail() { echo "policy_fullsize.sh: $*; no table written" >&2; exit 1; }
for f in "$SNTRAIN" "$LIBSN"; do [ -e "$f" ] || fail "$f is missing (make all-targets)"; done
ITERS=${ITERS:-40}
# auto measures up to eight candidate plans first, about five iterations
# each: its runs are longer, so that the three measured are its steady state
ITERS_AUTO=${ITERS_AUTO:-56}
POLICIES=(lru auto vdnn-all vdnn-conv vdnn-dyn superneurons modnn pooch dymem)
rows=(
    "VGG-16 b64|--net vgg --depth 16 --batch 64|"
    "VGG-16 b128|--net vgg --depth 16 --batch 128|"
    "VGG-16 b256|--net vgg --depth 16 --batch 256|vDNN-dyn 0.82 of ideal (Titan X, 12 GB)"
    "ResNet-50 b128|--net resnet --depth 50 --batch 128|"
    "ResNet-50 b256|--net resnet --depth 50 --batch 256|PoocH 0.62-0.87 at b256-512 (V100)"
    "ResNet-101 b128|--net resnet --depth 101 --batch 128|"
    "ResNet-152 b128|--net resnet --depth 152 --batch 128|"
    "Inception-v4 b128|--net inception --batch 128|"
    "DenseNet-121 b128|--net densenet --depth 121 --batch 128|"
)
MAXB_POLICIES=(auto)
maxb_nets=(
    "ResNet-50|--net resnet --depth 50|768|SuperNeurons 384"
    "VGG-16|--net vgg --depth 16|448|SuperNeurons 224"
    "Inception-v4|--net inception|480|SuperNeurons 240"
)
if [ -n "${BENCH_QUICK:-}" ]; then
    rows=("${rows[0]}")
    POLICIES=(lru auto)
    MAXB_POLICIES=(auto)
    maxb_nets=("${maxb_nets[0]}")
fi

# GB copied in and out per iteration, from the report's latest iterations
moved_of() {
    python3 - "$1" <<'PY'
import json, sys
try:
    p = json.load(open(sys.argv[1]))["devices"][0]["manage"]["plan"]
    it = [h for h in p["per_iteration"]][-3:]
    print("%.1f/%.1f GB" % (sum(h["in_bytes"] for h in it) / len(it) / 1e9,
                            sum(h["out_bytes"] for h in it) / len(it) / 1e9))
except Exception:
    print("no plan")
PY
}
# The row of the bound table: what no plan can beat under auto's budget
# (the report's plan.bound_*), auto's prediction split into its steps'
# time and its stall, and auto's measured time against the bound.
bound_row() { # name ideal measured report.json
    python3 - "$@" <<'PY'
import json, sys
name, ideal, measured = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
try:
    p = json.load(open(sys.argv[4]))["devices"][0]["manage"]["plan"]
    b = p["bound_ms"]
    if b <= 0:
        raise ValueError
except Exception:
    print("| %s | %.3f | no plan made | | | | | |" % (name, ideal))
    sys.exit()
pred, stall = p["predicted_ms"], p["predicted_stall_ms"]
plan = "%.0f + %.0f stalled" % (pred - stall, stall) if pred > 0 and stall >= 0 else "not feasible as made"
w = p["bound_window"]
stall = "%.0f (steps %d-%d)" % (p["bound_stall_ms"], w[0], w[1]) if p["bound_stall_ms"] > 0 else "0"
print("| %s | %.3f | %.3f (%.3f) | %.3f (%.3f unlimited) | %s | %.1f GB, %.0f ms | %s | %.3f (%.2f) |"
      % (name, ideal, b, ideal / b, p["bound_compute_ms"], p["unlimited_ms"], stall,
         p["bound_offdevice_bytes"] / 1e9, p["bound_transfer_ms"], plan, measured, b / measured))
PY
}
trains() { # args...: 0 when the run completes (a failure's stderr kept in fail.err)
    SN_REPORT=off LD_PRELOAD="$LIBSN" "$SNTRAIN" "$@" --alloc dynamic --iters 3 >/dev/null 2>"$tmp/run.err" && return 0
    cp "$tmp/run.err" "$tmp/fail.err"
    return 1
}
{
    echo "# Manage mode: networks larger than a 12 GB GPU, every policy"
    echo
    echo "Simulated titanx profile (12 GB, PCIe 3; compute off), $ITERS iterations ($ITERS_AUTO under auto), generated by"
    echo "\`bench/policy_fullsize.sh\` (\`make bench\`). The ideal is the same run on unlimited"
    echo "memory without libsn and with the fastest convolution algorithms, whatever their workspace. Each cell:"
    echo "steady-state ms per iteration (mean of the last three), its ratio to the ideal"
    echo "(higher is better, 1.00 = no cost), and GB copied in/out per iteration (\"no plan\": lru,"
    echo "or no plan made). The first iterations are the profile and the prediction's warm-up"
    echo "(drops of dead contents need iterations in a row that agree), and under auto the"
    echo "measurement of its candidate plans, each followed in turn (SN_CANDIDATES): the steady"
    echo "state comes later."
    echo "Without libsn none of these rows trains on the 12 GB device."
    echo
    printf '| run | ideal ms (peak) |'
    for p in "${POLICIES[@]}"; do printf ' %s |' "$p"; done
    echo ' published |'
    printf '|---|---|'
    for p in "${POLICIES[@]}"; do printf -- '---|'; done
    echo '---|'
} >"$tmp/table.md"
for row in "${rows[@]}"; do
    IFS='|' read -r name opts published <<<"$row"
    read -r -a args <<<"$opts --iters $ITERS --prefetch lockstep"
    echo "policy_fullsize: $name: ideal" >&2
    SIMGPU_MEM=256G "$SNTRAIN" "${args[@]}" --workspace-limit 1048576 >"$tmp/ideal.out" 2>&1 ||
        fail "$name on an ideal device failed (exit $?)"
    ideal=$(steady_of "$tmp/ideal.out")
    peak=$(awk '/^peak/ { print $2 }' "$tmp/ideal.out")
    [ -n "$ideal" ] && [ -n "$peak" ] || fail "$name on an ideal device: no iteration times or peak"
    "$SNTRAIN" "${args[@]}" >"$tmp/plain.out" 2>&1
    plain_rc=$?
    [ "$plain_rc" = 0 ] || [ "$plain_rc" = 3 ] || fail "$name without libsn failed (exit $plain_rc)"
    line="| $name | $ideal ($peak MiB) |"
    for p in "${POLICIES[@]}"; do
        echo "policy_fullsize: $name: SN_POLICY=$p" >&2
        more=()
        [ "$p" = auto ] && more=(--iters "$ITERS_AUTO")
        SN_POLICY=$p SN_REPORT="$tmp/$p.json" LD_PRELOAD="$LIBSN" "$SNTRAIN" "${args[@]}" "${more[@]}" >"$tmp/$p.out" 2>&1
        rc=$?
        t=$(steady_of "$tmp/$p.out")
        if [ $rc -eq 3 ]; then
            line+=" fails |"
            continue
        fi
        [ $rc -eq 0 ] && [ -n "$t" ] || fail "$name under SN_POLICY=$p failed (exit $rc)"
        line+=" $t ($(python3 -c "print(f'{$ideal/$t:.2f}')"); $(moved_of "$tmp/$p.json")) |"
        [ "$p" = auto ] && bound_row "$name" "$ideal" "$t" "$tmp/$p.json" >>"$tmp/bound.md"
    done
    [ "$plain_rc" = 0 ] && line+=" (fits without libsn)"
    line+=" $published |"
    echo "$line" >>"$tmp/table.md"
done

{
    echo
    echo "## What no plan can beat in 12 GB"
    echo
    echo "From the model auto planned with (policy/sn_plan_bound.c; the report's \"bound\" line),"
    echo "under the same budget. Every step needs what it touches resident at once, beside the"
    echo "tensors that never leave and the libraries' memory; its fastest algorithm whose"
    echo "workspace fits in the rest is the fastest it can run (the steps' compute; with memory"
    echo "unlimited, the fastest of the algorithms measured, which on the 12 GB device are"
    echo "those whose workspace it could hold). Contents still needed later that cannot stay"
    echo "on the device beside a step's own memory must come back before they are read (GB and"
    echo "the time of copying them in), and no sooner than the step where they are away has ended;"
    echo "and what was written since an earlier step and is away must leave after it: where the"
    echo "steps between take less time than those copies, the device waits (the stall no plan"
    echo "avoids, with its window). The bound is the steps' compute plus that stall, or the copies"
    echo "in alone when larger: the best ratio to the ideal any plan can reach is in its brackets."
    echo "Auto's prediction is its chosen"
    echo "algorithms' time plus the stall the timeline predicts (\"not feasible as made\": the plan"
    echo "kept is a seed policy's that fits only with the workspace held for its step, as made"
    echo "alone, measured among auto's candidates: demand residency makes up the rest); the"
    echo "last column is auto's measured time and how close it comes to the bound (1.00: as"
    echo "fast as the bound)."
    echo
    echo "| run | ideal ms | bound ms (best ratio) | steps' compute, ms | stall no plan avoids, ms | must come back | auto predicted, ms | auto measured (to bound) |"
    echo "|---|---|---|---|---|---|---|---|"
    cat "$tmp/bound.md" 2>/dev/null
} >>"$tmp/table.md"

# The largest batch: doubled from 16 while it trains, then bisected
# between the last that trained and the first that did not (to 16).
largest() { # policy opts...
    local p=$1
    shift
    local lo=0 hi=16
    rm -f "$tmp/fail.err"
    while SN_POLICY=$p trains "$@" --batch $hi; do
        lo=$hi
        hi=$((hi * 2))
        [ $hi -gt 4096 ] && break
    done
    while [ $((hi - lo)) -gt 16 ]; do
        local mid=$(((lo + hi) / 32 * 16))
        if SN_POLICY=$p trains "$@" --batch $mid; then lo=$mid; else hi=$mid; fi
    done
    echo "$lo"
    [ "$p" = off ] || echo "at $hi, $(why_failed)" >"$tmp/why"
}
{
    echo
    echo "## Largest batch in 12 GB"
    echo
    echo "Dynamic allocation style; doubled from 16 while three iterations train, then bisected"
    echo "to a multiple of 16. The last column: what stops the smallest batch that does not"
    echo "train under ${MAXB_POLICIES[-1]}, from libsn's error. A step's working set must be"
    echo "resident at once, so some batches no policy can train: VGG-16's first pooling"
    echo "layer's backward reads x, y and dy and writes dx (cuDNN's max pooling), 30.6 MiB per"
    echo "image, 401 images in the whole 12 GB device with nothing else on it, so 448 is out"
    echo "of reach; its first ReLU's backward reads y and dy and writes a dx of its own in this"
    echo "trainer (36.75 MiB per image: 334 at most), which stops it at 320."
    echo
    printf '| network | without libsn |'
    for p in "${MAXB_POLICIES[@]}"; do printf ' %s |' "$p"; done
    echo ' target | published | the next batch |'
    printf '|---|---|'
    for p in "${MAXB_POLICIES[@]}"; do printf -- '---|'; done
    echo '---|---|---|'
} >>"$tmp/table.md"
for row in "${maxb_nets[@]}"; do
    IFS='|' read -r name opts target published <<<"$row"
    read -r -a args <<<"$opts --prefetch lockstep"
    echo "policy_fullsize: largest batch: $name" >&2
    line="| $name | $(SN_MODE=off largest off "${args[@]}") |"
    for p in "${MAXB_POLICIES[@]}"; do line+=" $(largest "$p" "${args[@]}") |"; done
    echo "$line >= $target | $published | $(cat "$tmp/why") |" >>"$tmp/table.md"
done

# The deepest ResNet at batch 16: depth 3k+2 doubled from 56, then
# bisected (to 48 layers).
deepest() { # policy
    local p=$1 lo=0 hi=56
    rm -f "$tmp/fail.err"
    while SN_POLICY=$p trains --net resnet --depth $hi --batch 16; do
        lo=$hi
        hi=$((hi * 2 - 2))
        [ $hi -gt 8000 ] && break
    done
    while [ $((hi - lo)) -gt 48 ]; do
        local mid=$(((lo + hi) / 6 * 3 + 2))
        if SN_POLICY=$p trains --net resnet --depth $mid --batch 16; then lo=$mid; else hi=$mid; fi
    done
    echo "$lo"
    [ "$p" = off ] || echo "at depth $hi, $(why_failed)" >"$tmp/why"
}
{
    echo
    echo "## Deepest ResNet at batch 16 in 12 GB"
    echo
    echo "Dynamic allocation style; depth doubled from 56 while three iterations train, then"
    echo "bisected to within 48 layers. The last column: what stops the shallowest depth that"
    echo "does not train under ${MAXB_POLICIES[-1]}."
    echo
    printf '| without libsn |'
    for p in "${MAXB_POLICIES[@]}"; do printf ' %s |' "$p"; done
    echo ' target | published | the next depth |'
    printf '|---|'
    for p in "${MAXB_POLICIES[@]}"; do printf -- '---|'; done
    echo '---|---|---|'
    line="| $(SN_MODE=off deepest off) |"
    for p in "${MAXB_POLICIES[@]}"; do
        echo "policy_fullsize: deepest ResNet: $p" >&2
        line+=" $(deepest "$p") |"
    done
    echo "$line >= 2500 | SuperNeurons 1920 | $(cat "$tmp/why") |"
} >>"$tmp/table.md"
mkdir -p "$OUT"
# (a copy beside it, then a rename: an interrupted copy leaves no half table)
cp "$tmp/table.md" "$OUT/policies_12gb.md.tmp" && mv "$OUT/policies_12gb.md.tmp" "$OUT/policies_12gb.md" ||
    fail "cannot write $OUT/policies_12gb.md"
cat "$OUT/policies_12gb.md"
