#!/usr/bin/env bash
# demo.sh — what `make demo` runs: the reference trainer on the simulated
# device, showing what libsn is for.
#
#  1. A small ResNet learns (the loss falls) with Caffe-style allocation,
#     and Darknet-style and per-iteration (dynamic) allocation learn exactly
#     the same weights (same checksum).
#  2. VGG-16 at batch 256, full size, on a simulated 12 GB Tesla K40 with
#     compute off: out of memory, as in Caffe.
#  3. When libsn has been built ($BUILD/libsn.so), the same runs under it:
#     trace mode explains where the memory goes (the small ResNet, and
#     VGG-16 at batch 256 on a K40 with room to spare: what each memory
#     technique would save, SuperNeurons' bound, the lower bound of what
#     libsn needs and the smallest budget it expects to need), and the small
#     run's weights are bit-identical with and without libsn.
#  4. The point of libsn: the small ResNet on a simulated device of 16 MiB,
#     about half of what it allocates. Without libsn it runs out of memory;
#     under libsn (manage mode, the default) it trains to the same checksum
#     as on a big device, and the report says what moved.
#  5. Where BVLC Caffe can be built (its source in ../shared/third_party/ or
#     CAFFE_SRC; tools/caffe.sh, docs/caffe.md): `caffe train` on a nine-layer
#     net (16 MiB at its peak) on a 14 MiB device. Caffe alone stops on its
#     own out-of-memory check; under libsn it trains and saves the same
#     snapshot bytes as on a big device. The simulator computes cuDNN,
#     cuBLAS and cuRAND for real and stands in for Caffe's own kernels
#     (SIMGPU_COMPUTE=libs, docs/sim-runtime.md), so the weights depend on
#     every byte libsn moved. The first build of Caffe takes a
#     quarter of an hour on two cores (cached per machine after);
#     DEMO_CAFFE=0 leaves this part out.
set -u
BUILD=${BUILD:-build}
export LD_LIBRARY_PATH="$PWD/$BUILD/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
SNTRAIN="$PWD/$BUILD/sntrain"
LIBSN="$PWD/$BUILD/libsn.so"
SMALL=(--net resnet --depth 14 --input 32 --width 8 --batch 16 --iters 8 --lr 0.1 --seed 3)
status=0

say() { printf '\n== %s\n' "$*"; }
# tiny_net DIR: the nine-layer Caffe net of tests/test_caffe.sh and its
# solver (six iterations, a snapshot at the end) in DIR.
tiny_net() {
    cat >"$1/net.prototxt" <<'NET'
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
    cat >"$1/solver.prototxt" <<SOLVER
net: "$1/net.prototxt"
base_lr: 0.01 momentum: 0.9 weight_decay: 0.0005 lr_policy: "fixed"
display: 1 max_iter: 6
snapshot_prefix: "snap"
solver_mode: GPU random_seed: 1
SOLVER
}
checksum_of() { awk '$1 == "checksum" { print $2 }'; }

say "1. ResNet-14 (CIFAR size, width 8) learns on the simulated device"
"$SNTRAIN" "${SMALL[@]}" --alloc caffe | tee /tmp/sntrain-demo-caffe.$$ || status=1
ref=$(checksum_of </tmp/sntrain-demo-caffe.$$)
for style in darknet dynamic; do
    sum=$("$SNTRAIN" "${SMALL[@]}" --alloc "$style" 2>/dev/null | checksum_of)
    if [ "$sum" = "$ref" ]; then
        echo "   $style allocation: checksum $sum (identical)"
    else
        echo "   $style allocation: checksum $sum DIFFERS from $ref"
        status=1
    fi
done
rm -f /tmp/sntrain-demo-caffe.$$

say "2. VGG-16, batch 256, 224x224, on a 12 GB K40 (compute off: memory and time only)"
SIMGPU_PROFILE=k40 SIMGPU_COMPUTE=0 "$SNTRAIN" --net vgg --depth 16 --batch 256 --iters 2
rc=$?
echo "   exit status $rc (3 = out of device memory)"
[ "$rc" -eq 3 ] || status=1
echo "   The same network on an 80 GB H100:"
SIMGPU_PROFILE=h100 SIMGPU_COMPUTE=0 "$SNTRAIN" --net vgg --depth 16 --batch 256 --iters 2 \
    2>/dev/null | sed 's/^/   /'

if [ -f "$LIBSN" ]; then
    say "3a. libsn in trace mode on the small ResNet (the iteration it found, and its what-if peaks)"
    report=$(mktemp)
    SN_MODE=trace SN_REPORT="$report" LD_PRELOAD="$LIBSN" "$SNTRAIN" "${SMALL[@]}" --alloc caffe \
        >/dev/null 2>&1 || status=1
    grep -E '^(iteration|phases|passes|layers|graph) ' "$report" | sed 's/^/   /'
    sed -n '/^what-if peaks/,$p' "$report" | sed 's/^/   /'
    rm -f "$report"
    say "3b. VGG-16 at batch 256 in trace mode: where the 31 GB go (K40 timing, 64 GiB device)"
    report=$(mktemp)
    SIMGPU_PROFILE=k40 SIMGPU_MEM=64G SIMGPU_COMPUTE=0 SN_MODE=trace SN_REPORT="$report" \
        LD_PRELOAD="$LIBSN" "$SNTRAIN" --net vgg --depth 16 --batch 256 --iters 3 >/dev/null 2>&1 || status=1
    sed -n '/^what-if peaks/,$p' "$report" | sed 's/^/   /'
    rm -f "$report"
    say "3c. bit-identical learning under libsn"
    sum=$(LD_PRELOAD="$LIBSN" "$SNTRAIN" "${SMALL[@]}" --alloc caffe 2>/dev/null | checksum_of)
    if [ "$sum" = "$ref" ]; then
        echo "   checksum $sum with libsn = $ref without"
    else
        echo "   checksum $sum with libsn DIFFERS from $ref without"
        status=1
    fi
    say "4. The small ResNet on a 16 MiB device (it allocates about 30 MiB)"
    echo "   without libsn:"
    SIMGPU_MEM=16M "$SNTRAIN" "${SMALL[@]}" --alloc caffe 2>&1 | grep -E 'out of memory' | sed 's/^/   /'
    rc=${PIPESTATUS[0]}
    echo "   exit status $rc (3 = out of device memory)"
    [ "$rc" -eq 3 ] || status=1
    echo "   with libsn (SN_MODE=manage, the default; budget: the device's free memory):"
    report=$(mktemp)
    out=$(SIMGPU_MEM=16M SN_REPORT="$report" LD_PRELOAD="$LIBSN" "$SNTRAIN" "${SMALL[@]}" --alloc caffe 2>&1)
    rc=$?
    echo "$out" | grep -E '^(iter [0-9]+ loss|checksum|sntrain: [0-9]+ iterations)' | sed 's/^/   /'
    sum=$(echo "$out" | checksum_of)
    if [ "$rc" -eq 0 ] && [ "$sum" = "$ref" ]; then
        echo "   exit status 0; checksum $sum = $ref on a big device without libsn"
    else
        echo "   exit status $rc; checksum $sum DIFFERS from $ref"
        status=1
    fi
    echo "   what libsn did (its report):"
    sed -n '/^manage /,/^  out of memory/p' "$report" | sed 's/^/   /'
    rm -f "$report"
else
    say "3. ($LIBSN not built: the runs under libsn are skipped)"
fi

if [ "${DEMO_CAFFE:-1}" != 0 ] && [ -f "$LIBSN" ]; then
    say "5. BVLC Caffe: caffe train on a 14 MiB device (its nine-layer net needs 16 MiB)"
    caffe=$(tools/caffe.sh build 2>/dev/null)
    rc=$?
    if [ "$rc" -eq 77 ]; then
        echo "   (${caffe#skip: })"
    elif [ "$rc" -ne 0 ]; then
        echo "   tools/caffe.sh build failed (exit $rc)"
        status=1
    else
        dir=$(mktemp -d)
        tiny_net "$dir"
        run() {  # run NAME MEM [libsn]: caffe train in $dir/NAME on a device of MEM
            mkdir -p "$dir/$1"
            (cd "$dir/$1" && env GLOG_logtostderr=1 SIMGPU_COMPUTE=libs SIMGPU_MEM="$2" \
                ${3:+SIMGPU_GRANULARITY=64K SN_REPORT="$dir/$1.report" LD_PRELOAD="$LIBSN"} \
                "$caffe" train --solver="$dir/solver.prototxt" --gpu=0 >"$dir/$1.out" 2>&1)
        }
        run big 1G
        echo "   without libsn:"
        { run alone 14M; } 2>/dev/null
        rc=$?
        grep -m1 'Check failed' "$dir/alone.out" | sed -E 's/^F[0-9]+ [0-9:.]+ +[0-9]+ /   /'
        echo "   exit status $rc (Caffe aborts on its own out-of-memory check)"
        [ "$rc" -ne 0 ] || status=1
        echo "   with libsn (manage mode, the default):"
        run libsn 14M yes
        rc=$?
        grep -E '\] Iteration [0-9]+.*, loss = ' "$dir/libsn.out" |
            sed -E 's/^I[0-9]+ [0-9:.]+ +[0-9]+ [^]]*\] /   /; s/ \([^)]*\)//'
        same=1
        for f in snap_iter_6.caffemodel snap_iter_6.solverstate; do
            cmp -s "$dir/big/$f" "$dir/libsn/$f" || same=0
        done
        if [ "$rc" -eq 0 ] && [ $same -eq 1 ]; then
            echo "   exit status 0; snapshot (.caffemodel, .solverstate) byte-identical to a 1 GiB device without libsn"
        else
            echo "   exit status $rc; snapshot identical: $same"
            status=1
        fi
        sed -n '/^manage /,/^  out of memory/p' "$dir/libsn.report" | sed 's/^/   /'
        rm -rf "$dir"
    fi
fi
exit $status
