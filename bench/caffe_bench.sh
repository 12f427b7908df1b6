#!/usr/bin/env bash
# caffe_bench.sh — BVLC Caffe (an unmodified framework, built by
# tools/caffe.sh) training full-size networks on the simulated 12 GB
# titanx profile (PCIe 3; compute off), alone and under libsn's manage mode
# with SN_POLICY=auto and the default budget (the device). Writes
# bench/results/caffe.md:
#
#   1. the networks: AlexNet and GoogLeNet from Caffe's model zoo, VGG-16
#      and ResNet-50/101/152 generated (bench/caffe_nets.py), every one
#      reading DummyData;
#   2. the largest batch each trains with, alone and under libsn, and what
#      stops each search;
#   3. the deepest ResNet at batch 16, alone and under libsn, beside
#      SuperNeurons' published figures;
#   4. simulated ms per iteration under auto at a batch that does not fit
#      12 GB alone, against Caffe alone on a device with unlimited memory;
#
# and the notes: every run that failed other than by running out of memory
# (a crash, a hang past the timeout, a simulator fault), every libsn run
# that exited 0 without following a plan, every batch Caffe trains alone
# but not under libsn, with the command that reproduces it.
#
#   bench/caffe_bench.sh                 everything (make bench)
#   bench/caffe_bench.sh one NET BATCH ITERS MODE DIR
#                                        one run, its files kept in DIR
#                                        (NET: alexnet, googlenet, vgg16,
#                                        resnet-D; MODE: none, ideal, auto,
#                                        lru), as the notes' commands do
#
# Where Caffe cannot be built (tools/caffe.sh says "skip: ..."), it says so
# in one line and exits 0, leaving the committed table as it is.
#
# Host memory: SN_HOST_LIMIT keeps its default (half of this machine's
# memory): Caffe allocates every blob of the net at once and keeps it, so
# whatever is not resident needs pinned host memory, and that limit, not
# the device, is what the largest batch and the deepest net under libsn
# run into. The simulator commits no host memory for the pinned buffers
# with compute off, but Caffe's own host copies (the DummyData batch, the
# weights its fillers write) are real memory of this machine: the searches
# are capped at 16 times Caffe's own result.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
OUT=${OUT:-$ROOT/bench/results}
case "$OUT" in /*) ;; *) OUT="$ROOT/$OUT" ;; esac
LIBSN="$BUILD/libsn.so"
export LD_LIBRARY_PATH="$BUILD/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SIMGPU_PROFILE=titanx SIMGPU_COMPUTE=0 SIMGPU_HAZARDS=fatal GLOG_logtostderr=1
unset SIMGPU_MEM SN_BUDGET SN_POLICY SN_MODE SN_WORKSPACE SN_HOST_LIMIT SN_CANDIDATES SN_REPORT
# Plans made on Caffe's thread: a plan is followed from the same call in
# every run, within the few iterations a search run has (docs/decisions.md).
export SN_PLAN_WAIT=1
ITERS_ALONE=${ITERS_ALONE:-3}     # Caffe alone: it allocates everything in iteration 0
ITERS_SN=${ITERS_SN:-10}          # under libsn: profile, plan, then >= 2 iterations under the plan
ITERS_TIME=${ITERS_TIME:-40}      # item 4: auto measures its candidate plans first
TIMEOUT=${TIMEOUT:-900}           # seconds per run
IDEAL_MEM=256G                    # "unlimited" device memory for item 4

fail() { echo "caffe_bench.sh: $*" >&2; exit 1; }

caffe=$("$ROOT/tools/caffe.sh" build 2>/dev/null)
rc=$?
if [ $rc -eq 77 ]; then
    echo "caffe_bench.sh: skipped: Caffe cannot be built here (${caffe#skip: }); $OUT/caffe.md not refreshed"
    exit 0
fi
[ $rc -eq 0 ] && [ -x "$caffe" ] || fail "tools/caffe.sh build failed (exit $rc)"
MODELS="$("$ROOT/tools/caffe.sh" source)/models"
[ -d "$MODELS/bvlc_alexnet" ] || fail "no models/ in Caffe's source ($MODELS)"
[ -e "$LIBSN" ] || fail "$LIBSN is not built (make)"

# one NET BATCH ITERS MODE DIR: a training run; leaves DIR/net.prototxt,
# solver.prototxt, out, err, rc, report.json (under libsn) and cmd (the
# command that reproduces it).
one() {
    local net=$1 batch=$2 iters=$3 mode=$4 dir=$5
    mkdir -p "$dir"
    python3 "$ROOT/bench/caffe_nets.py" "$net" "$batch" --models "$MODELS" >"$dir/net.prototxt" ||
        { echo 99 >"$dir/rc"; return 99; }
    cat >"$dir/solver.prototxt" <<SOLVER
net: "$dir/net.prototxt"
base_lr: 0.01
momentum: 0.9
weight_decay: 0.0005
lr_policy: "fixed"
display: 1
max_iter: $iters
solver_mode: GPU
random_seed: 1
snapshot_after_train: false
SOLVER
    local env=()
    case $mode in
        none) ;;
        ideal) env=(SIMGPU_MEM=$IDEAL_MEM) ;;
        auto | lru) env=(SN_POLICY=$mode SN_REPORT="$dir/report.json" LD_PRELOAD="$LIBSN") ;;
        *) fail "unknown mode $mode" ;;
    esac
    echo "bench/caffe_bench.sh one $net $batch $iters $mode DIR" >"$dir/cmd"
    (cd "$dir" && env "${env[@]}" timeout -k 10 "$TIMEOUT" "$caffe" train \
        --solver="$dir/solver.prototxt" --gpu=0 >"$dir/out" 2>"$dir/err") 2>/dev/null
    local r=$?
    echo $r >"$dir/rc"
    return $r
}

if [ "${1:-}" = one ]; then
    [ $# -eq 6 ] || fail "usage: bench/caffe_bench.sh one NET BATCH ITERS none|ideal|auto|lru DIR"
    dir=$(mkdir -p "$6" && cd "$6" && pwd)
    one "$2" "$3" "$4" "$5" "$dir"
    r=$?
    echo "exit $r; files in $dir (err: Caffe's and libsn's messages; report.json: libsn's report)"
    grep -o '[0-9.e+-]*s/1 iters' "$dir/err" | sed 's#s/1 iters# s#' | tr '\n' ' '
    echo
    exit $r
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log() { echo "caffe_bench: $*" >&2; }

# outcome DIR: ok (trained: exit 0 and "Optimization Done"), oom (Caffe
# stopped on one of its checks for want of memory: the device's
# out-of-memory error, or under libsn any call libsn refused with its
# "libsn: out of memory" message: cudaErrorMemoryAllocation,
# CUDNN_STATUS_ALLOC_FAILED, CUBLAS_STATUS_ALLOC_FAILED), or failed
# (anything else: a crash, the timeout, a simulator fault).
outcome() {
    local d=$1 r
    r=$(cat "$d/rc")
    if [ "$r" = 0 ] && grep -q "Optimization Done" "$d/err" && ! grep -q '^simgpu:' "$d/err"; then
        echo ok
    elif [ "$r" = 134 ] && ! grep -q '^simgpu:' "$d/err" && grep -q "Check failed: " "$d/err" &&
        { grep -q "Check failed: .*out of memory" "$d/err" || grep -q "^libsn: out of memory" "$d/err"; }; then
        echo oom
    else
        echo failed
    fi
}
# The last lines of a failed run's log worth quoting.
quote() {
    grep -E '^(simgpu|libsn)|Check failed|out of memory|rror|Aborted|Segmentation' "$1/err" | grep -v '^I' |
        sed -E 's/^([IWEF])[0-9]+ [0-9:.]+ +[0-9]+ /\1 /' | tail -n 4 | cut -c1-400
    case $(cat "$1/rc") in 124 | 137) echo "(killed by timeout after ${TIMEOUT} s)" ;; esac
}
# note TEXT DIR: a note for the table, with the run's command and log lines.
nnotes=0
note() {
    nnotes=$((nnotes + 1))
    {
        echo "$nnotes. $1"
        echo "   Reproduce: \`$(sed "s#DIR#/tmp/caffe-note$nnotes#" "$2/cmd")\`"
        local q
        q=$(quote "$2")
        [ -n "${3:-}" ] && q="$3"
        if [ -n "$q" ]; then
            echo "   Log:"
            echo
            echo "$q" | sed 's/^/       /'
        fi
        echo
    } >>"$tmp/notes.md"
    log "note $nnotes: $1"
}
# why_oom DIR: what stopped a run that ran out of memory, in a few words.
why_oom() {
    python3 - "$1/err" <<'PY'
import re, sys
t = open(sys.argv[1], errors="replace").read()
m = re.search(r"libsn: out of memory: device \d+: an allocation of ([0-9.]+ MiB) does not fit: ([0-9.]+) MiB "
              r"allocated already.*?SN_BUDGET \(([0-9.]+) MiB\) plus SN_HOST_LIMIT \(([0-9.]+) MiB\)", t)
if m:
    print("host memory: Caffe's blobs (%.1f GiB allocated, and %s more) exceed SN_BUDGET + SN_HOST_LIMIT "
          "(%.1f + %.1f GiB)" % (float(m.group(2)) / 1024, m.group(1), float(m.group(3)) / 1024,
                                 float(m.group(4)) / 1024))
    sys.exit()
m = re.search(r"libsn: out of memory: device \d+: (.*?) needs ([0-9.]+ MiB) resident at once, which fits "
              r"SN_BUDGET .*?SN_HOST_LIMIT \(([0-9.]+) MiB\) is used up", t)
if m:
    print("host memory: making room for %s (%s at once) needs more than SN_HOST_LIMIT (%.1f GiB) of pinned "
          "memory" % (m.group(1), m.group(2), float(m.group(3)) / 1024))
    sys.exit()
m = re.search(r"libsn: out of memory: device \d+: (.*?) needs ([0-9.]+ MiB) resident at once", t)
if m:
    print("one step's working set: %s needs %s at once" % (m.group(1), m.group(2)))
    sys.exit()
m = re.search(r"libsn: out of memory: (.*)", t)
if m:
    print("libsn: " + m.group(1)[:160].replace("|", "/"))
    sys.exit()
m = re.search(r"F\d+ [0-9:.]+ +\d+ ([a-z_]+\.(?:cpp|cu|hpp):\d+)\] Check failed: .*out of memory", t)
req = re.findall(r"Memory required for data: (\d+)", t)
where = m.group(1) if m else "?"
what = "a blob's cudaMalloc, " if where.startswith("syncedmem.cpp") else ""
extra = "; its forward tops alone: %.1f GiB" % (int(req[-1]) / 2**30) if req else ""
print("device memory (%s%s%s)" % (what, where, extra))
PY
}
# ms_of DIR: mean simulated ms of the last three iterations, from Caffe's
# own timer (cudaEventElapsedTime between events on the default stream at
# each iteration's display: the device clock).
ms_of() {
    grep -o '[0-9.e+-]*s/1 iters' "$1/err" | sed 's#s/1 iters##' |
        awk '{ t[n++] = $1 } END { if (n >= 4) printf "%.1f", 1000 * (t[n-1] + t[n-2] + t[n-3]) / 3 }'
}
last_ms_of() {
    grep -o '[0-9.e+-]*s/1 iters' "$1/err" | sed 's#s/1 iters##' | awk '{ t = $1 } END { printf "%.1f", 1000 * t }'
}

# trains NET BATCH MODE: runs it once (ITERS_ALONE iterations alone,
# ITERS_SN under libsn) in $tmp/last; 0 when it trained (a copy kept in
# $tmp/lastok), else 1 (a copy in $tmp/lastbad). A failure other than out
# of memory, and a libsn run that trained without finding the iteration
# or without following a plan for two iterations, is noted.
runs=0
trains() {
    local net=$1 batch=$2 mode=$3 iters=$ITERS_ALONE
    [ "$mode" = none ] || iters=$ITERS_SN
    rm -rf "$tmp/last"
    one "$net" "$batch" "$iters" "$mode" "$tmp/last"
    runs=$((runs + 1))
    local o found followed
    o=$(outcome "$tmp/last")
    log "$net b$batch $mode: $o ($((SECONDS - t0)) s in all)"
    if [ "$o" = ok ]; then
        if [ "$mode" != none ]; then
            read -r found followed < <(plan_of "$tmp/last")
            if [ "$found" != found ] || [ "$followed" -lt 2 ]; then
                note "$net at batch $batch under libsn ($mode) trained, but libsn $([ "$found" = found ] &&
                    echo "followed a plan for $followed of its $iters iterations" ||
                    echo "did not find the iteration ($found)")." "$tmp/last"
            fi
        fi
        rm -rf "$tmp/lastok" && mv "$tmp/last" "$tmp/lastok"
        return 0
    fi
    [ "$o" = oom ] || note "$net at batch $batch ($mode): Caffe did not finish (exit $(cat "$tmp/last/rc")), and not for want of memory." "$tmp/last"
    rm -rf "$tmp/lastbad" && mv "$tmp/last" "$tmp/lastbad"
    return 1
}
# plan_of DIR: "found N" (or not-found, no-report): whether libsn's report
# has the iteration, and the iterations a plan was followed.
plan_of() {
    python3 - "$1/report.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))["devices"][0]
except Exception:
    print("no-report 0"); sys.exit()
p = d.get("manage", {}).get("plan") or {}
print("%s %d" % ("found" if d.get("found") else "not-found", p.get("iterations", 0)))
PY
}
# plan_summary DIR: libsn's plan in a few lines, from its report.
plan_summary() {
    python3 - "$1/report.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))["devices"][0]
    m = d["manage"]
    p = m["plan"] or {}
except Exception:
    print("no report"); sys.exit()
print("libsn report: iteration %s ms as learned (%d steps); budget %.1f GiB, Caffe allocated %.1f GiB, "
      "host peak %.1f GiB of SN_HOST_LIMIT %.1f GiB" % (
          "%.1f" % d["iteration"]["ms"] if d.get("iteration") else "?", d.get("iteration", {}).get("period", 0),
          m["budget"] / 2**30, m["peak_allocated"] / 2**30, m["host_peak"] / 2**30, m["host_limit"] / 2**30))
if p:
    print("plan (%s): predicted %.1f ms, bound %.1f ms; candidates predicted/measured ms: %s; kept %d" % (
        p["policy"], p["predicted_ms"], p["bound_ms"],
        ", ".join("%.0f/%.0f (%s)" % (c["predicted_ms"], c["measured_ms"], c["model"]) for c in p["candidates"]),
        p["candidate_kept"]))
    for h in p["per_iteration"][-3:]:
        print("iteration %d under the plan: %.1f ms, streams stalled %.1f ms, %.2f GB in, %.2f GB out" % (
            h["iteration"], h["ms"], h["stall_ms"], h["in_bytes"] / 1e9, h["out_bytes"] / 1e9))
else:
    print("no plan")
PY
}
# passes_of DIR: the iteration libsn learned, from its report: "STEPS steps:
# F forward / B backward / U update[, E evaluation passes]", then a word
# when it looks wrong for a training run without a test net: "odd" when it
# has evaluation passes or a backward pass under a tenth of the forward.
passes_of() {
    python3 - "$1/report.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))["devices"][0]
    ph, ps, period = d["phases"], d["passes"], d["iteration"]["period"]
except Exception:
    print("no iteration in the report|odd"); sys.exit()
ev = ps.get("evaluation", 0)
text = "%d steps: %d forward / %d backward / %d update" % (period, ph["forward_steps"], ph["backward_steps"],
                                                          ph["update_steps"])
if ev:
    text += ", %d evaluation pass%s" % (ev, "es" if ev > 1 else "")
odd = ev > 0 or ph["backward_steps"] * 10 < ph["forward_steps"]
print(text + ("|odd" if odd else "|"))
PY
}
# alloc_of DIR: GiB Caffe had allocated at the peak, from libsn's report.
alloc_of() {
    python3 -c "
import json, sys
try: print('%.1f' % (json.load(open(sys.argv[1]))['devices'][0]['manage']['peak_allocated'] / 2**30))
except Exception: print('?')" "$1/report.json"
}
stop_why() { # after a search: what stopped the run above the result
    if [ ! -d "$tmp/lastbad" ]; then
        echo "-"
    elif [ "$(outcome "$tmp/lastbad")" = oom ]; then
        why_oom "$tmp/lastbad"
    else
        echo "Caffe failed other than by running out of memory (note $nnotes)"
    fi
}

# largest NET MODE FROM CAP RES: sets FOUND to the largest batch that
# trains: doubled from FROM while it trains (up to CAP), then bisected until
# the gap is at most FOUND/RES (RES 0: exact); FOUND_WHY says what stopped
# it, FOUND_DIR keeps the largest run's files.
largest() {
    local net=$1 mode=$2 lo=0 hi=$3 cap=$4 res=$5
    rm -rf "$tmp/lastbad" "$tmp/lastok"
    FOUND_WHY= FIRST_MS=
    while trains "$net" "$hi" "$mode"; do
        if [ "$lo" = 0 ]; then
            FIRST_MS=$(last_ms_of "$tmp/lastok")
            rm -rf "$tmp/sn-at-alone" && cp -r "$tmp/lastok" "$tmp/sn-at-alone"
        fi
        lo=$hi
        rm -rf "$tmp/found" && cp -r "$tmp/lastok" "$tmp/found"
        if [ "$hi" -ge "$cap" ]; then FOUND_WHY="the search's cap ($cap)"; break; fi
        hi=$((hi * 2))
        [ "$hi" -gt "$cap" ] && hi=$cap
    done
    if [ -z "$FOUND_WHY" ]; then
        while :; do
            local gap=1
            [ "$res" -gt 0 ] && [ $((lo / res)) -gt 1 ] && gap=$((lo / res))
            [ $((hi - lo)) -le $gap ] && break
            local mid=$(((lo + hi) / 2))
            if trains "$net" "$mid" "$mode"; then
                lo=$mid
                rm -rf "$tmp/found" && cp -r "$tmp/lastok" "$tmp/found"
            else
                hi=$mid
                rm -rf "$tmp/above" && cp -r "$tmp/lastbad" "$tmp/above"
            fi
        done
        [ -d "$tmp/above" ] && rm -rf "$tmp/lastbad" && cp -r "$tmp/above" "$tmp/lastbad"
        FOUND_WHY="at $hi: $(stop_why)"
    fi
    rm -rf "$tmp/above"
    FOUND=$lo
}

# deepest MODE FROM CAP RES: the same for ResNet-D at batch 16, D = 3k+2:
# from FROM, D -> 2D-2 while it trains, then bisected in steps of 3 layers
# until the gap is at most D/RES (RES 0: 3 layers).
deepest() {
    local mode=$1 lo=0 hi=$2 cap=$3 res=$4
    rm -rf "$tmp/lastbad" "$tmp/lastok" "$tmp/above"
    FOUND_WHY=
    while trains "resnet-$hi" 16 "$mode"; do
        lo=$hi
        rm -rf "$tmp/found" && cp -r "$tmp/lastok" "$tmp/found"
        if [ "$hi" -ge "$cap" ]; then FOUND_WHY="the search's cap ($cap layers)"; break; fi
        hi=$((hi * 2 - 2))
        [ "$hi" -gt "$cap" ] && hi=$cap
    done
    if [ -z "$FOUND_WHY" ]; then
        [ "$lo" = 0 ] && lo=2  # nothing trained: bisect down towards ResNet-56
        while :; do
            local gap=3
            [ "$res" -gt 0 ] && [ $((lo / res)) -gt 3 ] && gap=$((lo / res))
            [ $((hi - lo)) -le $gap ] && break
            local mid=$((((lo + hi) / 2 - 2) / 3 * 3 + 2))
            [ "$mid" -le "$lo" ] && mid=$((lo + 3))
            [ "$mid" -lt 56 ] && { lo=0; break; }
            if trains "resnet-$mid" 16 "$mode"; then
                lo=$mid
                rm -rf "$tmp/found" && cp -r "$tmp/lastok" "$tmp/found"
            else
                hi=$mid
                rm -rf "$tmp/above" && cp -r "$tmp/lastbad" "$tmp/above"
            fi
        done
        [ "$lo" = 2 ] && lo=0
        [ -d "$tmp/above" ] && rm -rf "$tmp/lastbad" && cp -r "$tmp/above" "$tmp/lastbad"
        FOUND_WHY="at ResNet-$hi: $(stop_why)"
    fi
    rm -rf "$tmp/above"
    FOUND=$lo
}

NETS=(alexnet googlenet vgg16 resnet-50 resnet-101 resnet-152)
[ -n "${BENCH_QUICK:-}" ] && NETS=(googlenet resnet-50) && ITERS_TIME=24
name_of() {
    case $1 in
        alexnet) echo AlexNet ;; googlenet) echo GoogLeNet ;; vgg16) echo VGG-16 ;;
        resnet-*) echo "ResNet-${1#resnet-}" ;;
    esac
}
t0=$SECONDS

# ---- 1. the networks --------------------------------------------------------
{
    echo "| network | prototxt | layers in the training net | learned layers | input |"
    echo "|---|---|---:|---|---|"
    for net in "${NETS[@]}"; do
        python3 "$ROOT/bench/caffe_nets.py" "$net" 1 --models "$MODELS" >"$tmp/desc.prototxt" || fail "caffe_nets.py $net"
        python3 - "$net" "$(name_of "$net")" "$tmp/desc.prototxt" <<'PY'
import re, sys
net, name, path = sys.argv[1:]
t = open(path).read()
blocks = re.split(r"(?m)^layer\s*\{", t)[1:]
train = [b for b in blocks if "phase: TEST" not in b]
types = [re.search(r'^\s*type:\s*"(\w+)"', b, re.M).group(1) for b in train]
conv, fc = types.count("Convolution"), types.count("InnerProduct")
size = re.search(r"shape \{ dim: 1 dim: 3 dim: (\d+) dim: (\d+) \}", t)
src = {"alexnet": "Caffe's models/bvlc_alexnet/train_val.prototxt, its 2 Data layers replaced",
       "googlenet": "Caffe's models/bvlc_googlenet/train_val.prototxt, its 2 Data layers replaced "
                    "(auxiliary losses kept; 6 TEST-phase Accuracy layers left out by Caffe)"}.get(
    net, "generated by bench/caffe_nets.py")
if net.startswith("resnet-"):
    learned = "%d conv + %d fc (+ 4 projection convs), %d BatchNorm + Scale" % (
        conv - 4, fc, types.count("BatchNorm"))
else:
    learned = "%d conv + %d fc" % (conv, fc)
print("| %s | %s | %d | %s | 3x%sx%s |" % (name, src, len(train), learned, size.group(1), size.group(2)))
PY
    done
} >"$tmp/nets.md"

# ---- 2. largest batch -------------------------------------------------------
declare -A ALONE ALONE_WHY SNB SN_WHY SN_PLAN AT_ALONE SN_ALLOC SN_PASSES
for net in "${NETS[@]}"; do
    log "largest batch alone: $net"
    rm -rf "$tmp/found"
    largest "$net" none 16 8192 0
    if [ "$FOUND" = 0 ]; then largest "$net" none 1 16 0; fi
    ALONE[$net]=$FOUND
    ALONE_WHY[$net]=$FOUND_WHY
    alone_ms=$( [ -d "$tmp/found" ] && last_ms_of "$tmp/found")
    [ "$FOUND" -gt 0 ] || { SNB[$net]=0; continue; }
    log "largest batch under libsn: $net"
    rm -rf "$tmp/found" "$tmp/sn-at-alone"
    largest "$net" auto "${ALONE[$net]}" $((16 * ALONE[$net])) 16
    SNB[$net]=$FOUND
    SN_WHY[$net]=$FOUND_WHY
    if [ -d "$tmp/found" ]; then
        read -r _ followed < <(plan_of "$tmp/found")
        SN_PLAN[$net]="$followed of $ITERS_SN"
        SN_ALLOC[$net]="$(alloc_of "$tmp/sn-at-alone") / $(alloc_of "$tmp/found")"
        IFS='|' read -r ptext podd < <(passes_of "$tmp/found")
        SN_PASSES[$net]=$ptext
        if [ -n "$podd" ]; then
            note "$(name_of "$net") at batch $FOUND under libsn: the iteration libsn learned has $ptext (the training net has no test net and one update per iteration)." "$tmp/found" "$(python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))['devices'][0]
for p in d.get('passes', {}).get('list', [])[:4]:
    print('pass: forward steps %s, backward %s, update %s, %s' % (p['forward'], p['backward'], p['update'],
          'training' if p['training'] else 'evaluation'))" "$tmp/found/report.json")"
        fi
    else
        SN_PLAN[$net]="-"
    fi
    # Caffe's own largest batch under libsn: the search's first run.
    if [ "$FOUND" -lt "${ALONE[$net]}" ]; then
        note "$(name_of "$net") trains at batch ${ALONE[$net]} alone but not under libsn (auto)." "$tmp/lastbad"
        AT_ALONE[$net]="$alone_ms / fails"
    else
        AT_ALONE[$net]="$alone_ms / $FIRST_MS"
        if python3 -c "import sys; sys.exit(0 if float('$FIRST_MS') > 1.1 * float('$alone_ms') else 1)"; then
            AT_ALONE[$net]+=" ($(python3 -c "print(f'{$FIRST_MS / $alone_ms:.2f}')")x)"
            note "$(name_of "$net") at batch ${ALONE[$net]}, which fits the device: the last iteration under libsn's plan takes $FIRST_MS ms, $(python3 -c "print(f'{$FIRST_MS / $alone_ms:.2f}')") times Caffe's $alone_ms ms alone." "$tmp/sn-at-alone" "$(plan_summary "$tmp/sn-at-alone")"
        fi
    fi
done

# ---- 3. deepest ResNet at batch 16 ------------------------------------------
log "deepest ResNet alone"
deepest none 56 3002 0
DEEP_ALONE=$FOUND DEEP_ALONE_WHY=$FOUND_WHY
DEEP_SN=- DEEP_SN_WHY=- DEEP_PLAN=-
if [ -n "${BENCH_QUICK:-}" ]; then
    DEEP_SN_WHY="not searched (BENCH_QUICK)"
elif [ "$DEEP_ALONE" -gt 0 ]; then
    log "deepest ResNet under libsn"
    rm -rf "$tmp/found"
    deepest auto "$DEEP_ALONE" $((16 * DEEP_ALONE)) 8
    DEEP_SN=$FOUND DEEP_SN_WHY=$FOUND_WHY
    [ -d "$tmp/found" ] && read -r _ followed < <(plan_of "$tmp/found") && DEEP_PLAN="$followed of $ITERS_SN"
    [ "$DEEP_SN" -lt "$DEEP_ALONE" ] &&
        note "ResNet-$DEEP_ALONE at batch 16 trains alone but not under libsn (auto)." "$tmp/lastbad"
fi

# ---- 4. ms per iteration at a batch that does not fit ----------------------
# The batch: the next power of two above Caffe's largest, or libsn's
# largest where that is smaller (and still above Caffe's).
time_row() { # NET BATCH
    local net=$1 b=$2 d=$tmp/time-$1
    rm -rf "$d"
    log "time: $net b$b ideal"
    one "$net" "$b" 5 ideal "$d/ideal"
    if [ "$(outcome "$d/ideal")" != ok ]; then
        note "$net at batch $b on a device with $IDEAL_MEM: Caffe did not finish (exit $(cat "$d/ideal/rc"))." "$d/ideal"
        echo "| $(name_of "$net") | $b | failed (note $nnotes) | | | | | |"
        return
    fi
    local ideal lru auto
    ideal=$(ms_of "$d/ideal")
    log "time: $net b$b auto ($ITERS_TIME iterations)"
    one "$net" "$b" "$ITERS_TIME" auto "$d/auto"
    if [ "$(outcome "$d/auto")" != ok ]; then
        note "$net at batch $b under libsn (auto, $ITERS_TIME iterations): Caffe did not finish (exit $(cat "$d/auto/rc"))." "$d/auto"
        echo "| $(name_of "$net") | $b | $ideal | failed (note $nnotes) | | | | |"
        return
    fi
    auto=$(ms_of "$d/auto")
    log "time: $net b$b lru"
    one "$net" "$b" 10 lru "$d/lru"
    lru=failed
    [ "$(outcome "$d/lru")" = ok ] && lru=$(ms_of "$d/lru")
    local off
    off=$(python3 - "$d/auto/report.json" <<'PY'
import json, sys
try:
    c = json.load(open(sys.argv[1]))["devices"][0]["manage"]["plan"]["candidates"][0]
    if c["measured_ms"] > 1.25 * c["predicted_ms"] > 0:
        print("%.0f ms, %.2f times the %.0f ms predicted" % (c["measured_ms"], c["measured_ms"] / c["predicted_ms"],
                                                           c["predicted_ms"]))
except Exception:
    pass
PY
)
    [ -n "$off" ] && note "$(name_of "$net") at batch $b under libsn (auto, $ITERS_TIME iterations): auto's own plan measured $off." "$d/auto" "$(plan_summary "$d/auto")"
    python3 - "$(name_of "$net")" "$b" "$ideal" "$auto" "$lru" "$d/auto/report.json" <<'PY'
import json, sys
name, b, ideal, auto, lru, rep = sys.argv[1:]
ideal, auto = float(ideal), float(auto)
lru_s = "%.1f (%.2f)" % (float(lru), ideal / float(lru)) if lru != "failed" else "failed"
try:
    p = json.load(open(rep))["devices"][0]["manage"]["plan"]
except Exception:
    p = None
if not p:
    print("| %s | %d | %.1f | %.1f | **%.2f** | no plan | | | %s |" % (name, int(b), ideal, auto, ideal / auto, lru_s))
    sys.exit()
c = p["candidates"]
k = p["candidate_kept"]
kept = c[k] if 0 <= k < len(c) else None
unmeasured = sum(1 for x in c if x["measured_ms"] < 0)
cands = "; ".join("%s %.0f/%s" % (x["model"], x["predicted_ms"],
                                   "%.0f" % x["measured_ms"] if x["measured_ms"] >= 0 else "-") for x in c)
kept_s = ("%d, %s" % (k, kept["model"])) if kept else str(k)
if unmeasured:
    kept_s += " (%d not measured yet)" % unmeasured
it = p["per_iteration"][-3:]
moved = "%.1f / %.1f" % (sum(h["in_bytes"] for h in it) / len(it) / 1e9,
                         sum(h["out_bytes"] for h in it) / len(it) / 1e9) if it else "-"
stall = "%.0f" % (sum(h["stall_ms"] for h in it) / len(it)) if it else "-"
print("| %s | %d | %.1f | %.1f | **%.2f** | %s | %s | %s ms, %s GB | %.0f (%.2f) | %s |" % (
    name, int(b), ideal, auto, ideal / auto, kept_s, cands, stall, moved, p["bound_ms"], ideal / p["bound_ms"],
    lru_s))
PY
}
: >"$tmp/time.md"
for net in "${NETS[@]}"; do
    a=${ALONE[$net]} s=${SNB[$net]}
    [ "$a" -gt 0 ] && [ "$s" -gt "$a" ] || { echo "| $(name_of "$net") | - | libsn trains no larger batch than Caffe alone | | | | | | | |" >>"$tmp/time.md"; continue; }
    b=1
    while [ $b -le "$a" ]; do b=$((b * 2)); done
    [ $b -gt "$s" ] && b=$s
    time_row "$net" "$b" >>"$tmp/time.md"
done

# ---- the table --------------------------------------------------------------
elapsed=$((SECONDS - t0))
commit=$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown)
(cd "$ROOT" && git diff --quiet HEAD -- . ':!bench/results' 2>/dev/null) || commit+=" (with uncommitted changes)"
host_limit=$(python3 -c "
import json,glob,sys
for f in glob.glob('$tmp/time-*/auto/report.json') + glob.glob('$tmp/found/report.json'):
    try: print('%.1f GiB' % (json.load(open(f))['devices'][0]['manage']['host_limit'] / 2**30)); sys.exit()
    except Exception: pass
print('?')")
{
    echo "# BVLC Caffe on a 12 GB GPU, alone and under libsn"
    echo
    echo "Generated by \`bench/caffe_bench.sh\` (\`make bench\`) on $(date -u +%Y-%m-%d), libsn at commit $commit,"
    echo "BVLC Caffe 9b89154 built by \`tools/caffe.sh\` (docs/caffe.md). Simulated titanx profile"
    echo "(SIMGPU_PROFILE=titanx: a 12 GB Titan X on PCIe 3; SIMGPU_COMPUTE=0: memory, timeline and checks,"
    echo "no arithmetic), \`caffe train --gpu=0\` on a solver with \`display: 1\`. Under libsn: manage mode,"
    echo "SN_POLICY=auto, SN_BUDGET and SN_HOST_LIMIT at their defaults (the device; half of this machine's"
    echo "memory: $host_limit here), SN_PLAN_WAIT=1 (each plan made on Caffe's thread, so that it is"
    echo "followed from the same call in every run). $runs searching runs and the timing runs took"
    echo "$((elapsed / 60)) min $((elapsed % 60)) s on this machine (2 CPU cores shared with other work)."
    echo
    echo "A run *trains* when Caffe exits 0 after its iterations ($ITERS_ALONE alone, where Caffe allocates"
    echo "every blob in the first; $ITERS_SN under libsn: two or three to learn the iteration, the plan,"
    echo "then at least two under it, which each libsn run is checked for). It runs out of memory when"
    echo "Caffe stops on one of its checks for want of memory: alone, \`Check failed: error == cudaSuccess"
    echo "(2 vs. 0) out of memory\`; under libsn, a CUDA, cuDNN or cuBLAS call that libsn refused with its"
    echo "\`libsn: out of memory\` message (cudaErrorMemoryAllocation, CUDNN_STATUS_ALLOC_FAILED, which"
    echo "Caffe prints by its cuDNN 9 name CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,"
    echo "CUBLAS_STATUS_ALLOC_FAILED). Any other end is in the notes, and so is every libsn run that"
    echo "trained without following a plan for two iterations."
    echo
    echo "## 1. The networks"
    echo
    echo "Every net reads DummyData: the batch of 3xSxS images from a uniform filler and the labels"
    echo "(uniform over 1000 classes), filled anew every iteration and copied to the device as a"
    echo "data layer's batch would be. VGG-16: configuration D (13 conv in 5 groups, 2x2 max pooling,"
    echo "fc 4096-4096-1000, ReLU and dropout in place). ResNet: bottleneck blocks of 1x1-3x3-1x1"
    echo "convolutions without bias, each followed by BatchNorm and Scale in place, Eltwise SUM and"
    echo "ReLU; stages {3,4,6,3}, {3,4,23,3}, {3,8,36,3}; deeper ones (item 3) {3,8,k-14,3} for"
    echo "ResNet-(3k+2), the way SuperNeurons deepens ResNet."
    echo
    cat "$tmp/nets.md"
    echo
    echo "## 2. Largest batch in 12 GB"
    echo
    echo "Alone: doubled from 16 (or from 1 where 16 does not train) while it trains, then bisected"
    echo "to the exact batch. Under libsn: doubled from Caffe's own largest, up to 16 times it, then"
    echo "bisected until the gap is at most 1/16 of the batch. *What stops it*: the first batch above"
    echo "that did not train and why, from Caffe's check or libsn's out-of-memory message. *Plan*: the"
    echo "iterations of $ITERS_SN that followed a plan at libsn's largest batch; *libsn's iteration*: the"
    echo "iteration it learned there (its report's period and phases; under a budget the steps include"
    echo "the swaps' synchronisations). *Caffe's GiB*: what Caffe"
    echo "had allocated (libsn's report) at Caffe's own largest batch / at libsn's. Caffe allocates every"
    echo "blob of the net, data and gradient, once and keeps it for the whole run, so under libsn what is"
    echo "not resident needs pinned host memory for its contents: the largest batch under libsn ends where"
    echo "that outgrows SN_BUDGET + SN_HOST_LIMIT ($host_limit here). The last column is Caffe's own"
    echo "largest batch, which fits the device: ms of its last iteration alone / under libsn (the last"
    echo "of $ITERS_SN, under the plan auto follows first; auto would go on to measure its other"
    echo "candidates and the no-plan fallback, as in item 4)."
    echo
    echo "| network | Caffe alone | what stops it | Caffe + libsn (auto) | gain | Caffe's GiB | plan | libsn's iteration | what stops it | ms at Caffe's largest batch, alone / libsn |"
    echo "|---|---:|---|---:|---:|---|---|---|---|---|"
    for net in "${NETS[@]}"; do
        a=${ALONE[$net]} s=${SNB[$net]}
        gain=-
        [ "$a" -gt 0 ] && gain=$(python3 -c "print(f'{$s / $a:.2f}x')")
        echo "| $(name_of "$net") | $a | ${ALONE_WHY[$net]} | $s | $gain | ${SN_ALLOC[$net]:--} | ${SN_PLAN[$net]:--} | ${SN_PASSES[$net]:--} | ${SN_WHY[$net]:--} | ${AT_ALONE[$net]:--} |"
    done
    echo
    echo "## 3. Deepest ResNet at batch 16 in 12 GB"
    echo
    echo "ResNet-(3k+2), stages {3, 8, k-14, 3} (ResNet-152 is k = 50). Alone: doubled from 56"
    echo "(D -> 2D-2) while it trains, then bisected to the exact depth; under libsn: doubled from"
    echo "Caffe's own deepest, then bisected until the gap is at most 1/8 of the depth (each run of a"
    echo "deep net under libsn takes minutes of planning). As with the batch, Caffe's allocations,"
    echo "kept for the whole run, end the search under libsn at SN_BUDGET + SN_HOST_LIMIT. The"
    echo "published figures are SuperNeurons' (Wang et al., \"SuperNeurons: Dynamic GPU Memory"
    echo "Management for Training Deep Neural Networks\", PPoPP 2018), in 12 GB at batch 16: Caffe"
    echo "trained ResNet up to 148 layers, SuperNeurons up to 1920."
    echo
    echo "| | Caffe alone | Caffe + libsn (auto) | published: Caffe | published: SuperNeurons |"
    echo "|---|---:|---:|---:|---:|"
    echo "| deepest ResNet | $DEEP_ALONE | $DEEP_SN | 148 | 1920 |"
    echo "| what stops it | $DEEP_ALONE_WHY | $DEEP_SN_WHY | | |"
    echo "| plan at libsn's deepest | | $DEEP_PLAN iterations | | |"
    echo
    echo "## 4. ms per iteration at a batch that does not fit 12 GB alone"
    echo
    echo "The batch: the next power of two above Caffe's largest (item 2), or libsn's largest where"
    echo "that is smaller. *Unlimited*: Caffe alone on the same profile with SIMGPU_MEM=$IDEAL_MEM, 5"
    echo "iterations. *auto*: Caffe under libsn in 12 GB, $ITERS_TIME iterations (auto follows each"
    echo "candidate plan in turn until its time settles, then keeps the fastest measured). Both: simulated"
    echo "ms per iteration on the device clock, the mean of the last three of Caffe's own iteration"
    echo "timer (cudaEventElapsedTime between events on the default stream at each display), and"
    echo "*ratio* = unlimited / auto (1.00: as fast as unlimited memory). *Candidates*: each plan's"
    echo "predicted / measured ms; *stall, moved*: the streams' wait for copies and GB copied in / out per"
    echo "iteration under the plan kept (the report's last three iterations); *bound*: what no plan can"
    echo "beat in 12 GB by libsn's model (ratio to unlimited); *lru*: demand residency alone, no plan"
    echo "(10 iterations, ratio)."
    echo
    echo "| network | batch | unlimited ms | auto ms | ratio | kept | candidates, predicted / measured ms | stall, moved | bound ms | lru ms |"
    echo "|---|---:|---:|---:|---:|---|---|---|---:|---:|"
    cat "$tmp/time.md"
    echo
    echo "## Notes"
    echo
    if [ -s "$tmp/notes.md" ]; then
        echo "Runs that did not end as expected. The reproducing command runs the same configuration once"
        echo "and keeps its files (net, solver, Caffe's log with libsn's messages, libsn's report)."
        echo
        cat "$tmp/notes.md"
    else
        echo "None: every run trained, or stopped on Caffe's out-of-memory check."
    fi
} >"$tmp/caffe.md"
mkdir -p "$OUT"
cp "$tmp/caffe.md" "$OUT/caffe.md.tmp" && mv "$OUT/caffe.md.tmp" "$OUT/caffe.md" || fail "cannot write $OUT/caffe.md"
echo "wrote $OUT/caffe.md ($runs searching runs and the timing runs: $elapsed s)"
