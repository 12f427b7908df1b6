#!/usr/bin/env bash
# gpu_run.sh — the measurements only a real GPU can give, in one short run:
# the host latency of the allocation and VMM calls per size (which set the
# simulator's host costs), whether each waits for work in flight, what
# setting access costs per mapping, pinned copy bandwidth one way and both
# ways, the
# reference trainer under manage mode at half, a third and the smallest
# feasible budget of its own peak with losses and weights compared to the
# run without libsn, and a few policy rows at half the peak with measured
# time next to the plan's prediction. The same script runs on the
# simulator (GPU_SIM=1: build/sim, h100 profile, compute off), which gives
# the simulated side of the comparison.
#
#   bench/gpu_run.sh BINDIR OUTDIR
#
# BINDIR holds libsn.so, sntrain and calibrate built here, and the shared
# libraries libsn needs that a bare GPU machine may lack (libunwind.so.8);
# the CUDA runtime, cuDNN and cuBLAS are the machine's own, found under
# /usr/local/cuda or in the Python packages that carry them (GPU_LIBS
# overrides the search). OUTDIR receives summary.tsv (one line per
# measurement: section, name, fields), env.txt and runs.tar.gz (every run's
# output, libsn's log and its JSON report). GPU_DEADLINE (seconds, default
# 270) skips what is left once passed, so a slow machine still returns
# what it measured. bench/gpu_table.sh turns the summaries (GPU and
# simulator) into bench/results/gpu_h200.md.
set -u
BIN=$(cd "$1" && pwd) || exit 2
OUTD=$2
mkdir -p "$OUTD/runs" || exit 2
OUTD=$(cd "$OUTD" && pwd)
DEADLINE=${GPU_DEADLINE:-270}
SUM=$OUTD/summary.tsv
: >"$SUM"

if [ -n "${GPU_SIM:-}" ]; then
    export LD_LIBRARY_PATH="$GPU_LIBS:$BIN" SIMGPU_PROFILE=${SIMGPU_PROFILE:-h100} SIMGPU_COMPUTE=0
    export SIMGPU_MEM=${SIMGPU_MEM:-140G}
else
    libs=${GPU_LIBS:-}
    if [ -z "$libs" ]; then
        for name in libcudart.so.13 libcublas.so.13 libcudnn.so.9; do
            f=$(ls /usr/local/cuda/lib64/$name /usr/local/cuda/lib/$name /usr/lib/x86_64-linux-gnu/$name 2>/dev/null | head -1)
            [ -z "$f" ] && f=$(find /usr /opt -name "$name" 2>/dev/null | head -1)
            [ -n "$f" ] && libs="$libs:$(dirname "$f")"
        done
    fi
    export LD_LIBRARY_PATH="${libs#:}:$BIN"
fi
unset SN_MODE SN_BUDGET SN_POLICY SN_WORKSPACE LD_PRELOAD

{
    date -u
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    nvidia-smi --query-gpu=name,memory.total,driver_version,pcie.link.gen.max,pcie.link.width.max --format=csv 2>&1
    nvidia-smi 2>&1 | head -20
    ldd "$BIN/sntrain" "$BIN/libsn.so" 2>&1
    for d in ${LD_LIBRARY_PATH//:/ }; do ls -l "$d/" 2>&1 | grep -E 'libcud|libcublas|libunwind'; done
} >"$OUTD/env.txt" 2>&1

# late WHAT: true (and noted) once the deadline has passed or two runs hung
HUNG=0
late() { { [ "$SECONDS" -ge "$DEADLINE" ] || [ "$HUNG" -ge 2 ]; } && echo "gpu_run: deadline passed or runs hung, skipping $1" >&2 && printf 'skipped\t%s\n' "$1" >>"$SUM"; }

# --- host latency of allocation and VMM calls, per size (summary: host, op,
# --- bytes, event-bracketed us, wall-clock us) --------------------------------
SIZES=2097152,67108864,1073741824
for op in cudaMalloc cudaFree cudaMallocHost cudaFreeHost cuMemAddressReserve cuMemAddressFree \
          cuMemCreate cuMemRelease cuMemMap cuMemSetAccess cuMemUnmap; do
    late "host $op" && break
    timeout 60 "$BIN/calibrate" host $op $SIZES 2>&1 |
        awk '$1 == "host" { printf "host\t%s\t%s\t%s\t%s\n", $2, $9, $3, $6; next } { print "host-error\t" $0 }' >>"$SUM"
done
# whether each call waits for work in flight, and what mappings cost
for op in cuMemUnmap cuMemSetAccess cuMemMap cuMemCreate cuMemRelease cudaMalloc cudaFree cudaMallocHost cudaFreeHost; do
    late "busy $op" && break
    timeout 60 "$BIN/calibrate" busy $op 2097152 2>&1 |
        awk '$1 == "busy" { printf "busy\t%s\t%s\t%s\t%s\n", $2, $4, $7, $10; next } { print "busy-error\t" $0 }' >>"$SUM"
done
for bytes in 2097152 67108864 1073741824; do
    late "pieces $bytes" && break
    timeout 60 "$BIN/calibrate" pieces $bytes 2>&1 |
        awk '$1 == "pieces" { printf "pieces\t%s\t%s\t%s\n", $2, $4, $7; next } { print "pieces-error\t" $0 }' >>"$SUM"
done
for args in "copy h2d 33554432" "copy d2h 33554432" "copy h2d 268435456" "copy d2h 268435456" "duplex 33554432"; do
    late "$args" && break
    printf 'copy\t%s\t%s\n' "$args" "$(timeout 60 "$BIN/calibrate" $args 2>&1 | tr '\n' ' ')" >>"$SUM"
done

# --- one run of the trainer ----------------------------------------------------
# run NAME [VAR=VALUE...] -- ARGS...: stdout, stderr and report under runs/;
# appends "run NAME rc wall_s steady_ms iters checksum peak_mib median_ms" to
# the summary (steady: the mean of the last four iterations; median: of the
# last five, which one slow iteration does not move);
# a run past RUN_TIMEOUT seconds (default 60) is killed and counts as hung.
run() {
    local name=$1 envs=() t0 rc
    late "run $name" && return
    shift
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    t0=$EPOCHREALTIME
    env "${envs[@]}" SN_REPORT="$OUTD/runs/$name.json" SN_LOG=${SN_LOG:-info} \
        timeout "${RUN_TIMEOUT:-60}" "$BIN/sntrain" "$@" >"$OUTD/runs/$name.out" 2>"$OUTD/runs/$name.err"
    rc=$?
    [ $rc -eq 124 ] && HUNG=$((HUNG + 1))
    awk -v n="$name" -v rc=$rc -v w="$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')" '
        /^iter [0-9]+ loss/ { t[k++] = $6 } /^checksum/ { c = $2 } /^peak/ { p = $2 }
        END { s = k >= 4 ? (t[k-1]+t[k-2]+t[k-3]+t[k-4]) / 4 : -1
              m = -1
              if (k >= 5) {
                  for (i = 0; i < 5; i++) v[i] = t[k-5+i]
                  for (i = 0; i < 5; i++) for (j = i + 1; j < 5; j++) if (v[j] < v[i]) { x = v[i]; v[i] = v[j]; v[j] = x }
                  m = v[2]
              }
              printf "run\t%s\t%d\t%.1f\t%.3f\t%d\t%s\t%s\t%.3f\n", n, rc, w, s, k, c, p, m }' "$OUTD/runs/$name.out" >>"$SUM"
    grep -E '^(iter [0-9]+ loss|checksum)' "$OUTD/runs/$name.out" | sed -E 's/ time .*//' >"$OUTD/runs/$name.learned"
}
same() { # A B: the losses and the checksum agree
    if [ ! -s "$OUTD/runs/$1.learned" ] || [ ! -e "$OUTD/runs/$2.learned" ]; then
        printf 'same\t%s\t%s\tmissing\n' "$1" "$2" >>"$SUM"
    elif [ -s "$OUTD/runs/$1.learned" ] && cmp -s "$OUTD/runs/$1.learned" "$OUTD/runs/$2.learned"; then
        printf 'same\t%s\t%s\tidentical\n' "$1" "$2" >>"$SUM"
    else
        printf 'same\t%s\t%s\tDIFFERENT\n' "$1" "$2" >>"$SUM"
    fi
}
json() { # FILE key...: a value of devices[0]
    python3 - "$@" <<'PY' 2>/dev/null
import json, sys
try:
    v = json.load(open(sys.argv[1]))["devices"][0]
    for k in sys.argv[2:]:
        v = v[k]
    print(v)
except Exception:
    print("")
PY
}
LIBSN="LD_PRELOAD=$BIN/libsn.so"

# --- bit-identity at reduced budgets (SN_WORKSPACE=keep: the framework's
# --- algorithms, the only setting that keeps a GPU's rounding) ----------------
# --workspace-limit 1024 for every style: at the caffe style's own 8 MiB no
# deterministic algorithm fits 66 of ResNet-50's convolution passes on an
# H200 (sntrain says so), and two runs without libsn already differ.
ID="--net resnet --depth 50 --batch 32 --iters 10 --workspace-limit 1024"
for style in caffe darknet dynamic; do
    late "identity $style" && break
    run "id-$style-base" -- $ID --alloc $style
    run "id-$style-trace" SN_MODE=trace "$LIBSN" -- $ID --alloc $style
    peak=$(json "$OUTD/runs/id-$style-trace.json" run peak_bytes)
    [ -z "$peak" ] && continue
    printf 'peak\tid-%s\t%s\n' "$style" "$peak" >>"$SUM"
    if [ $style = caffe ]; then
        run "id-$style-base2" -- $ID --alloc $style
        same "id-$style-base" "id-$style-base2"
        run "id-$style-ample" SN_WORKSPACE=keep "$LIBSN" -- $ID --alloc $style
        same "id-$style-base" "id-$style-ample"
    fi
    run "id-$style-half" SN_WORKSPACE=keep SN_BUDGET=$((peak / 2)) "$LIBSN" -- $ID --alloc $style
    same "id-$style-base" "id-$style-half"
    if [ $style = caffe ]; then
        run "id-$style-third" SN_WORKSPACE=keep SN_BUDGET=$((peak / 3)) "$LIBSN" -- $ID --alloc $style
        same "id-$style-base" "id-$style-third"
        small=$(json "$OUTD/runs/id-$style-half.json" manage smallest_budget)
        if [ -n "$small" ]; then
            printf 'smallest\tid-%s\t%s\n' "$style" "$small" >>"$SUM"
            run "id-$style-smallest" SN_WORKSPACE=keep SN_BUDGET="$small" "$LIBSN" -- $ID --alloc $style
            same "id-$style-base" "id-$style-smallest"
        fi
    fi
done

# --- policy rows at half the peak: measured next to the plan's prediction ----
for row in "r50|--net resnet --depth 50 --batch 32" "vgg16|--net vgg --depth 16 --batch 32"; do
    tag=${row%%|*}
    read -r -a args <<<"${row#*|} --iters 20 --prefetch lockstep"
    late "policies $tag" && break
    run "p-$tag-base" -- "${args[@]}"
    run "p-$tag-trace" SN_MODE=trace "$LIBSN" -- "${args[@]}"
    peak=$(json "$OUTD/runs/p-$tag-trace.json" run peak_bytes)
    [ -z "$peak" ] && continue
    printf 'peak\tp-%s\t%s\n' "$tag" "$peak" >>"$SUM"
    run "p-$tag-ample" "$LIBSN" -- "${args[@]}"
    for p in auto lru vdnn-all vdnn-conv superneurons; do
        late "policy $tag $p" && break
        run "p-$tag-$p" SN_POLICY=$p SN_BUDGET=$((peak / 2)) "$LIBSN" -- "${args[@]}"
        printf 'plan\tp-%s-%s\t%s\t%s\n' "$tag" "$p" "$(json "$OUTD/runs/p-$tag-$p.json" manage plan predicted_ms)" \
            "$(json "$OUTD/runs/p-$tag-$p.json" manage swap_in_bytes)" >>"$SUM"
    done
done

printf 'elapsed\t%d\n' "$SECONDS" >>"$SUM"
tar -C "$OUTD" -czf "$OUTD/runs.tar.gz" runs && rm -rf "$OUTD/runs"
cat "$SUM"
