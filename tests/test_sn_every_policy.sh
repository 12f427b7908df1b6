#!/usr/bin/env bash
# test_sn_every_policy.sh — every SN_POLICY keeps training bit-identical,
# on the programs manage mode's own tests run under auto:
#  - the reference trainer in each allocation style (Caffe's buffers for
#    everything, Darknet's, and a tensor allocated when needed and freed
#    after its last use), at an ample budget, at half the run's peak and
#    at the smallest budget the half-budget run's report measured as
#    feasible: the losses and learned weights equal the run without libsn;
#  - the programs that mimic other frameworks' habits (tests/corpus), at
#    half their peak and at the smallest feasible budget: the same output;
#  - Darknet (where tools/darknet.sh could build it) at half its peak: the
#    same output.
# The trainer (ResNet-20) runs 8 iterations, so that each policy's plan
# (made after the profile) is followed for four, and auto's trials switch
# plans.
# The simulator's granule is 64 KiB (small tensors move one by one), a
# touched range that is not mapped is an illegal address and the hazard
# checker is fatal: a residency bug ends the run. Under a sanitizer (five
# to ten times slower) three policies (demand residency, the most moves,
# GTBM's placement), two styles and no ample budget.
# Prints TAP-like "ok"/"not ok" lines.
set -u
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
trainer="$BUILD_DIR/sntrain"
corpus="$BUILD_DIR/tests/corpus"
export SIMGPU_GRANULARITY=64K SIMGPU_HAZARDS=fatal
unset SN_BUDGET SN_POLICY SN_MODE SN_WORKSPACE SIMGPU_MEM
if ! command -v python3 >/dev/null; then
    echo "ok - every policy # SKIP python3 not installed"
    exit 0
fi

policies=(lru auto vdnn-all vdnn-conv vdnn-dyn superneurons modnn pooch dymem)
styles=(caffe darknet dynamic)
budgets=(ample half smallest)
if [ -n "${SANITIZE:-}" ]; then
    policies=(lru vdnn-all dymem)
    styles=(caffe dynamic)
    budgets=(half smallest)
fi

learned() { grep -E '^(iter [0-9]+ loss|checksum)' "$1" | sed -E 's/ time .*//'; }
field() { # report key: the device's run or manage field
    python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))["devices"][0]
print(d["run"][sys.argv[2]] if sys.argv[2] in d["run"] else d["manage"][sys.argv[2]])' "$@" 2>/dev/null
}

# same NAME EXPECTED POLICY BUDGET CMD...: CMD under manage mode with
# POLICY at BUDGET, its output (through $filter) compared with the file
# EXPECTED; the report is left in $tmp/<NAME with dots>.json
same() {
    local name=$1 expected=$2 pol=$3 budget=$4
    shift 4
    local f="$tmp/${name//\//.}"
    SN_POLICY=$pol SN_BUDGET=$budget SN_REPORT="$f.json" LD_PRELOAD="$SN_PRELOAD" "$@" >"$f.out" 2>"$f.err"
    local rc=$?
    $filter "$f.out" >"$f.cmp"
    if [ $rc -ne 0 ]; then
        echo "not ok - $name (SN_BUDGET=$budget): exit $rc"
        grep -a 'libsn\|simgpu' "$f.err" | head -3 | sed 's/^/# /'
    elif ! cmp -s "$expected" "$f.cmp"; then
        echo "not ok - $name (SN_BUDGET=$budget): the output differs"
        diff "$expected" "$f.cmp" | head -4 | sed 's/^/# /'
    else
        echo "ok - $name (SN_BUDGET=$budget): bit-identical"
    fi
}

# the budget of a run: ample, half the peak (the libraries' memory beside
# it), or the smallest the half-budget run's report (its NAME) measured
budget_of() { # which peak half-name
    case $1 in
    ample) echo free ;;
    half) echo $(($2 / 2 + (6 << 20))) ;;
    smallest) field "$tmp/${3//\//.}.json" smallest_budget ;;
    esac
}
# run_at NAME EXPECTED POLICY WHICH PEAK CMD...: same, at the budget WHICH
# of budget_of; a smallest budget missing from the half-budget run's
# report fails the case instead of running it at another budget
run_at() {
    local name=$1 expected=$2 pol=$3 which=$4 peak=$5 budget
    shift 5
    budget=$(budget_of "$which" "$peak" "${name%/*}/half")
    if [ "$which" = smallest ]; then
        have_bytes "$name" "the half-budget run's smallest_budget" "$budget" || return
    fi
    same "$name" "$expected" "$pol" "$budget" "$@"
}

# the reference trainer, in each allocation style
filter=learned
for style in "${styles[@]}"; do
    args=(--iters 8 --net resnet --depth 20 --input 32 --batch 8 --width 8 --alloc "$style")
    "$trainer" "${args[@]}" >"$tmp/plain.out" 2>&1 || { echo "not ok - trainer/$style fails without libsn"; continue; }
    learned "$tmp/plain.out" >"$tmp/plain.learned"
    peak=$(peak_of "$trainer" "${args[@]}" 2>/dev/null)
    have_bytes "trainer/$style" "the trace run's peak_bytes" "$peak" || continue
    for pol in "${policies[@]}"; do
        for b in "${budgets[@]}"; do
            run_at "trainer/$style/$pol/$b" "$tmp/plain.learned" "$pol" "$b" "$peak" "$trainer" "${args[@]}"
        done
    done
done

echo "# the trainer: $SECONDS s"
# the programs that mimic other frameworks' habits
filter=cat
for expect in "$here"/corpus/*.expect; do
    name=$(basename "$expect" .expect)
    prog="$corpus/$name"
    "$prog" >"$tmp/$name.plain" 2>&1 || { echo "not ok - $name fails without libsn"; continue; }
    peak=$(peak_of "$prog" 2>/dev/null)
    have_bytes "$name" "the trace run's peak_bytes" "$peak" || continue
    for pol in "${policies[@]}"; do
        for b in half smallest; do
            run_at "$name/$pol/$b" "$tmp/$name.plain" "$pol" "$b" "$peak" "$prog"
        done
    done
done

echo "# the corpus: $SECONDS s"
# Darknet, where it can be built (tests/test_darknet.sh says why not), at
# half its peak or its lower bound if that is more, as test_darknet.sh
# runs it under auto; its output (wall-clock seconds masked) and weights
darknet=$("$here/../tools/darknet.sh" build 2>/dev/null)
if [ $? -ne 0 ] || [ ! -x "$darknet" ]; then
    echo "ok - Darknet under every policy # SKIP Darknet could not be built here (tools/darknet.sh build)"
    exit 0
fi
cfg="$here/darknet/tiny.cfg"
python3 "$here/darknet/make_data.py" "$tmp/data" 8
export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
masked() { sed -E 's/[0-9]+\.[0-9]+ seconds/T seconds/g' "$@"; }
run_darknet() { # name [env...]
    local name=$1
    shift
    mkdir -p "$tmp/$name/backup"
    (cd "$tmp/$name" && env SIMGPU_COMPUTE=0 SIMGPU_HAZARDS=fatal "$@" "$darknet" classifier train \
        "$tmp/data/tiny.data" "$cfg" >"$tmp/$name.out" 2>&1)
}
run_darknet none LD_PRELOAD="$SAN_PRELOAD"
masked "$tmp/none.out" >"$tmp/none.masked"
run_darknet trace SN_MODE=trace SN_REPORT="$tmp/dn.trace.json" LD_PRELOAD="$SN_PRELOAD"
half=$(python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))["devices"][0]
print(max(d["run"]["peak_bytes"] // 2, d["whatif"]["lower_bound"] + (1 << 20)))' "$tmp/dn.trace.json" 2>/dev/null)
have_bytes "darknet" "the trace run's peak_bytes or whatif.lower_bound" "$half" || exit 1
for pol in "${policies[@]}"; do
    run_darknet "dn.$pol" SN_POLICY="$pol" SN_BUDGET="$half" SN_REPORT="$tmp/dn.$pol.json" \
        LD_PRELOAD="$SN_PRELOAD"
    rc=$?
    check "darknet/$pol/half (SN_BUDGET=$half): exits 0, the same output and weights" \
        "[ $rc -eq 0 ] && diff <(masked '$tmp/none.out') <(masked '$tmp/dn.$pol.out') >/dev/null &&
         cmp -s '$tmp/none/backup/tiny.weights' '$tmp/dn.$pol/backup/tiny.weights'" ||
        { diff <(masked "$tmp/none.out") <(masked "$tmp/dn.$pol.out") | head -4; grep -a 'libsn' "$tmp/dn.$pol.out" | head -3; } |
        sed 's/^/# /'
done
echo "# Darknet: $SECONDS s"
