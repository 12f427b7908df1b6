#!/usr/bin/env bash
# Darknet, a real framework built with nvcc (Debian's source, ported to
# CUDA 13 / cuDNN 9 by tools/darknet.sh; docs/darknet.md), trains a small
# classifier (tests/darknet/tiny.cfg) on a synthetic image set
# (tests/darknet/make_data.py) on the simulated device with
# SIMGPU_COMPUTE=libs: cuDNN, cuBLAS and cuRAND compute for real and each
# of darknet's own kernels, which have no CPU body, runs a deterministic
# stand-in that writes into the first word of its outputs a value derived
# from its arguments and the first words of its inputs (docs/sim-runtime.md).
# The weights saved therefore depend on the bytes every step read: a write
# lost or a stale copy served by libsn changes them. Checked: alone it
# exits 0 after the configured iterations, without a simulator fault, and
# its losses are not all zero (data flowed); under libsn in trace mode its
# output is the same (seconds masked), the report finds the iteration, and
# every launch of darknet's kernels is seen through the layout the fat
# binary gives; in manage mode, at the default budget and at half the
# peak, the output and the weights are the same again. Skipped, with the
# reason, where the source cannot be fetched (not root and no deb-src
# entry, no network) or nvcc is missing.
set -u
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)

build=$("$here/../tools/darknet.sh" build 2>"$tmp/build.err"); rc=$?
if [ "$rc" -eq 77 ]; then
    echo "ok 1 # SKIP Darknet: ${build#skip: }"
    exit 0
fi
check "Darknet is fetched, ported and built (tools/darknet.sh build)" "[ $rc -eq 0 ] && [ -x '$build' ]" ||
    { sed 's/^/# /' "$tmp/build.err"; exit 1; }
darknet=$build
[ -f "$(dirname "$darknet")/build-seconds" ] && echo "# built in $(cat "$(dirname "$darknet")/build-seconds") s"

cfg="$here/darknet/tiny.cfg"
iters=$(sed -n 's/^max_batches=//p' "$cfg")
python3 "$here/darknet/make_data.py" "$tmp/data" 8

# Darknet's own leaks are not this project's: the sanitizer's leak check
# stays for the instrumented libraries' tests.
export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"

# run_darknet MODE [BUDGET]: one training run, MODE none (no libsn), trace
# or manage; BUDGET, if given, is SN_BUDGET. The run is named MODE, or
# MODE-BUDGET with a budget; it leaves $tmp/NAME.out, .err, .rc, the report
# $tmp/NAME.json and the weights in $tmp/NAME/backup/.
run_darknet() {
    local mode=$1 budget=${2:-}
    local name=$mode${budget:+-$budget}
    local dir="$tmp/$name"
    mkdir -p "$dir/backup"
    local env=(SIMGPU_COMPUTE=libs SIMGPU_HAZARDS=fatal)
    if [ "$mode" = none ]; then
        env+=(LD_PRELOAD="$SAN_PRELOAD")
    else
        env+=(SN_MODE="$mode" SN_REPORT="$tmp/$name.json" LD_PRELOAD="$SN_PRELOAD")
        [ -n "$budget" ] && env+=(SN_BUDGET="$budget")
    fi
    local start=$SECONDS
    (cd "$dir" && env "${env[@]}" "$darknet" classifier train "$tmp/data/tiny.data" "$cfg" \
        >"$tmp/$name.out" 2>"$tmp/$name.err")
    echo $? >"$tmp/$name.rc"
    echo "# $name: exit $(cat "$tmp/$name.rc") in $((SECONDS - start)) s"
}

# Darknet prints wall-clock seconds (loading, each iteration); nothing else
# in its output depends on time.
masked() { cat "$tmp/$1.out" "$tmp/$1.err" | sed -E 's/[0-9]+\.[0-9]+ seconds/T seconds/g'; }
# One "N, EPOCH: LOSS, AVG avg, RATE rate, ..." line per iteration.
iterations() { grep -cE '^[0-9]+, [0-9.]+: .* avg, .* rate' "$tmp/$1.out"; }
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["devices"][0]
for k in sys.argv[2].split("."): d=d[k]
print(str(d).lower())' "$tmp/$1.json" "$2" 2>/dev/null; }

run_darknet none
sed -n '/^layer /,/softmax/p' "$tmp/none.err" | sed 's/^/# /'
check "alone: exits 0" "[ \$(cat '$tmp/none.rc') -eq 0 ]" || sed 's/^/# /' "$tmp/none.err" | tail -n 20
check "alone: $iters iterations, the last numbered $iters" \
    "[ \$(iterations none) -eq $iters ] && grep -q '^$iters, ' '$tmp/none.out'"
check "alone: no simulator fault or warning" "! grep -q '^simgpu:' '$tmp/none.err'"
check "alone: the final weights are saved" "[ -s '$tmp/none/backup/tiny.weights' ]"
# Under SIMGPU_COMPUTE=0 every loss read back is 0; the stand-ins and the
# libraries' arithmetic make them differ from it and from one another.
losses() { grep -E '^[0-9]+, ' "$tmp/$1.out" | cut -d, -f3 | cut -d: -f2 | sort -u; }
check "alone: the losses are computed (not all 0, not all alike: $(losses none | wc -l) distinct)" \
    "[ \$(losses none | wc -l) -ge 2 ] && [ -n \"\$(losses none | grep -v '^ *0\.000000$')\" ]"

run_darknet trace
check "trace: exits 0" "[ \$(cat '$tmp/trace.rc') -eq 0 ]" || sed 's/^/# /' "$tmp/trace.err" | tail -n 20
check "trace: output identical to the run without libsn (seconds masked)" \
    "diff <(masked none) <(masked trace) >'$tmp/trace.diff'" || sed 's/^/# /' "$tmp/trace.diff" | head -n 20
check "trace: the same weights are saved" "cmp -s '$tmp/none/backup/tiny.weights' '$tmp/trace/backup/tiny.weights'"
echo "# trace: $(json trace calls) calls, $(json trace steps) steps; period $(json trace iteration.period) steps," \
     "$(json trace iteration.iterations) iterations; opaque calls $(json trace run.opaque_calls)," \
     "steps not seen through $(json trace unseen.opaque_steps), ranges outside allocations $(json trace unseen.ranges)"
check "trace: the report finds the iteration, $iters of them" \
    "[ \"\$(json trace found)\" = true ] && [ \"\$(json trace iteration.iterations)\" = $iters ]"
# Darknet's kernels are launched through nvcc's stubs; the simulator reads
# their parameter layouts from the fat binary, so libsn sees every pointer
# argument and no launch is opaque.
check "trace: no opaque call, no step left unseen, no range outside an allocation" \
    "[ \"\$(json trace run.opaque_calls)\" = 0 ] && [ \"\$(json trace unseen.opaque_steps)\" = 0 ] &&
     [ \"\$(json trace unseen.ranges)\" = 0 ]"

run_darknet manage
check "manage (default budget): exits 0" "[ \$(cat '$tmp/manage.rc') -eq 0 ]" ||
    sed 's/^/# /' "$tmp/manage.err" | tail -n 20
check "manage (default budget): output identical to the run without libsn" \
    "diff <(masked none) <(masked manage) >'$tmp/manage.diff'" || sed 's/^/# /' "$tmp/manage.diff" | head -n 20
check "manage (default budget): the same weights are saved" "cmp -s '$tmp/none/backup/tiny.weights' '$tmp/manage/backup/tiny.weights'"

# Half of the peak the trace saw, or the trace's lower bound (the largest
# step's working set, here a convolution with Darknet's one big workspace,
# plus the libraries' memory) if that is more: libsn must move memory (64
# KiB granules, so that this small network's tensors can leave one by one),
# and Darknet must neither fault nor notice.
peak=$(json trace run.peak_bytes)
lower=$(json trace whatif.lower_bound)
echo "# peak $peak bytes, lower bound $lower bytes"
have_bytes "manage below the peak" "run.peak_bytes" "$peak" || exit 1
have_bytes "manage below the peak" "whatif.lower_bound" "$lower" || exit 1
half=$((peak / 2))
lower=$((lower + (1 << 20)))
[ $lower -gt $half ] && half=$lower
export SIMGPU_GRANULARITY=64K
run_darknet manage "$half"
check "manage at $half bytes (peak $(json trace run.peak_bytes)): exits 0" "[ \$(cat '$tmp/manage-$half.rc') -eq 0 ]" ||
    sed 's/^/# /' "$tmp/manage-$half.err" | tail -n 20
check "manage below the peak: output identical to the run without libsn" \
    "diff <(masked none) <(masked manage-$half) >'$tmp/manage-half.diff'" ||
    sed 's/^/# /' "$tmp/manage-half.diff" | head -n 20
check "manage below the peak: the same weights are saved" \
    "cmp -s '$tmp/none/backup/tiny.weights' '$tmp/manage-$half/backup/tiny.weights'"
echo "# manage below the peak: swapped in $(json manage-$half manage.swap_in_bytes) bytes," \
     "out $(json manage-$half manage.swap_out_bytes) bytes; evictions $(json manage-$half manage.evictions)"
check "manage below the peak: memory moved (evictions counted in the report)" \
    "[ \"\$(json manage-$half manage.evictions)\" -gt 0 ]"
