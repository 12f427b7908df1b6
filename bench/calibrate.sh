#!/usr/bin/env bash
# calibrate.sh — the simulator's clock against published measurements: runs
# each calibrated workload on the simulated device with compute off, the way
# its source measured it, and writes the table (workload, profile,
# simulated, published, ratio, source) as Markdown.
#
#   bench/calibrate.sh [OUTPUT]     default bench/results/calibration.md
#
# `make bench` regenerates the table; tests/test_sim_calibration.sh runs the
# same rows and fails when one is more than 25% off its published figure.
# The rows, how each is measured and why the model's factors are what they
# are: docs/sim-cudnn.md, "Calibration". Exit status 1 when a workload fails
# to run (then no table is written: OUTPUT is left as it was) or
# (CALIBRATE_CHECK=1) a ratio leaves [0.75, 1.25].
set -u
BUILD=${BUILD:-build}
export LD_LIBRARY_PATH="$PWD/$BUILD/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
SNTRAIN="$PWD/$BUILD/sntrain"
CALIBRATE="$PWD/$BUILD/calibrate"
OUT=${1:-bench/results/calibration.md}
# Time does not depend on the capacity; 64 GiB holds every workload (the
# V100's 16 GB would not hold ResNet-50 at batch 112 in the Caffe style).
export SIMGPU_COMPUTE=0 SIMGPU_MEM=64G
unset SIMGPU_PROFILE SIMGPU_DEVICES SIMGPU_VMM SIMGPU_TF32 NVIDIA_TF32_OVERRIDE SN_MODE LD_PRELOAD

for p in "$SNTRAIN" "$CALIBRATE"; do
    if [ ! -x "$p" ]; then
        echo "calibrate.sh: $p is not built" >&2
        exit 1
    fi
done

JJ_K40="jcjohnson/cnn-benchmarks README.md @0367b1f (Tesla K40c, cuDNN 5005, Torch, Total)"
JJ_TX="jcjohnson/cnn-benchmarks README.md @2ee75e2 (Maxwell Titan X, cuDNN 5.0.05, Torch, Total)"
DB_V100="baidu-research/DeepBench README.md @a5a2b60 (Tesla V100 FP32, Total Time)"
DLE="NVIDIA/DeepLearningExamples PyTorch/Classification/ConvNets/resnet50v1.5/README.md @291f0d0 (DGX-1 V100 16GB, 1 GPU FP32, 367 img/s) and configs.yml @097c7ff (batch 112)"
BWT_TX="conceptacid/HowToUbuntuTensorflowTitanX README.md @3c33172 (GeForce GTX TITAN X, bandwidthTest, 33554432 B)"
BWT_V100="router-gao/cuda-demo cuda-samples/02-cuda-bandwidth.md @8e2367b (Tesla V100-SXM2-16GB, bandwidthTest, 32000000 B)"
BWT_H100="ZiyanIshani/vpbenchmarking results/stream_nvbench/bandwidth_h2d_d2h_20260225_183119.txt @753ce8d (H100 80GB HBM3, bandwidthTest, 32000000 B)"
NVBW="NVIDIA/nvbandwidth README.md @04bf286 (bidirectional example: 11.16 GB/s each way against 12.36 one way)"
FORUM="forums.developer.nvidia.com/t/352186 (A100-SXM4-80GB on PCIe 4.0, nvbandwidth: 24 + 11 GB/s both ways against 24.8 one way)"
H200="bench/results/gpu_h200.md (NVIDIA H200, driver 580.159.04: bench/gpu_run.sh, wall clock, mean of two runs)"
DASK="rapidsai/dask-cuda issue 106 (CuPy alloc_pinned_memory of 32000000 B: 11.6 ms)"

# kind|workload|profile|arguments|published|unit|source
#   net   sntrain ARGS, forward + backward of iteration 2 (ms)
#   step  sntrain ARGS, forward + backward + update of iteration 2 (ms)
#   conv  calibrate conv ARGS, forward + backward data + backward filter (ms)
#   copy  calibrate copy ARGS (GB/s)
#   duplex calibrate duplex ARGS, both ways over one way (x)
#   host  calibrate host ARGS, one call's host time (us); hostms the same in ms
NET16="--batch 16 --iters 2 --workspace-limit 1024 --phase-times"
ROWS=(
    "net|VGG-16 b16 fwd+bwd|k40|--net vgg --depth 16 $NET16|920.21|ms|$JJ_K40"
    "net|VGG-19 b16 fwd+bwd|k40|--net vgg --depth 19 $NET16|1129.65|ms|$JJ_K40"
    "net|ResNet-18 b16 fwd+bwd|k40|--net resnet --depth 18 $NET16|168.30|ms|$JJ_K40"
    "net|ResNet-34 b16 fwd+bwd|k40|--net resnet --depth 34 $NET16|303.80|ms|$JJ_K40"
    "net|ResNet-50 b16 fwd+bwd|k40|--net resnet --depth 50 $NET16|449.90|ms|$JJ_K40"
    "net|ResNet-101 b16 fwd+bwd|k40|--net resnet --depth 101 $NET16|797.89|ms|$JJ_K40"
    "net|ResNet-152 b16 fwd+bwd|k40|--net resnet --depth 152 $NET16|1146.73|ms|$JJ_K40"
    "net|VGG-16 b16 fwd+bwd|titanx|--net vgg --depth 16 $NET16|262.27|ms|$JJ_TX"
    "net|VGG-19 b16 fwd+bwd|titanx|--net vgg --depth 19 $NET16|322.81|ms|$JJ_TX"
    "net|ResNet-18 b16 fwd+bwd|titanx|--net resnet --depth 18 $NET16|54.87|ms|$JJ_TX"
    "net|ResNet-34 b16 fwd+bwd|titanx|--net resnet --depth 34 $NET16|91.98|ms|$JJ_TX"
    "net|ResNet-50 b16 fwd+bwd|titanx|--net resnet --depth 50 $NET16|166.05|ms|$JJ_TX"
    "net|ResNet-101 b16 fwd+bwd|titanx|--net resnet --depth 101 $NET16|260.57|ms|$JJ_TX"
    "net|ResNet-152 b16 fwd+bwd|titanx|--net resnet --depth 152 $NET16|365.03|ms|$JJ_TX"
    "step|ResNet-50 b112 training step|v100|--net resnet --depth 50 --batch 112 --iters 2 --workspace-limit 1024 --phase-times|305.18|ms|$DLE"
    "conv|conv 700x161x1 N32, 5x20 filter, 32, stride 2|v100|700 161 1 32 32 5 20 0 0 2 2|1.53|ms|$DB_V100"
    "conv|conv 54x54x64 N8, 3x3, 64, pad 1|v100|54 54 64 8 64 3 3 1 1 1 1|0.55|ms|$DB_V100"
    "conv|conv 224x224x3 N16, 3x3, 64, pad 1 (conv1_1)|v100|224 224 3 16 64 3 3 1 1 1 1|2.40|ms|$DB_V100"
    "conv|conv 28x28x192 N16, 5x5, 32, pad 2|v100|28 28 192 16 32 5 5 2 2 1 1|0.93|ms|$DB_V100"
    "copy|pinned host to device|titanx|h2d 33554432|12.18|GB/s|$BWT_TX"
    "copy|pinned device to host|titanx|d2h 33554432|12.46|GB/s|$BWT_TX"
    "copy|pinned host to device|v100|h2d 32000000|9.6|GB/s|$BWT_V100"
    "copy|pinned device to host|v100|d2h 32000000|11.4|GB/s|$BWT_V100"
    "copy|pinned host to device|h100|h2d 32000000|54.6|GB/s|$BWT_H100"
    "duplex|both directions at once, PCIe 3|titanx|67108864|1.806|x one way|$NVBW"
    "duplex|both directions at once, PCIe 4 (A100)|h100|67108864|1.411|x one way|$FORUM"
    "duplex|both directions at once, PCIe 5 (H200)|h100|33554432|1.830|x one way|$H200"
    "copy|pinned host to device, PCIe 5 (H200)|h100|h2d 33554432|55.25|GB/s|$H200"
    "host|cudaMalloc, 2 MiB|h100|cudaMalloc 2097152|42.8|us|$H200"
    "host|cudaMalloc, 1 GiB|h100|cudaMalloc 1073741824|103.2|us|$H200"
    "host|cudaFree, 2 MiB, idle device|h100|cudaFree 2097152|43.5|us|$H200"
    "host|cudaFree, 1 GiB, idle device|h100|cudaFree 1073741824|493|us|$H200"
    "host|cuMemCreate, 2 MiB|h100|cuMemCreate 2097152|14.9|us|$H200"
    "host|cuMemCreate, 1 GiB|h100|cuMemCreate 1073741824|37.3|us|$H200"
    "host|cuMemRelease, 2 MiB|h100|cuMemRelease 2097152|15.3|us|$H200"
    "host|cuMemRelease, 1 GiB|h100|cuMemRelease 1073741824|431|us|$H200"
    "host|cuMemMap, 2 MiB|h100|cuMemMap 2097152|2.35|us|$H200"
    "host|cuMemSetAccess, 2 MiB, idle device|h100|cuMemSetAccess 2097152|34.9|us|$H200"
    "host|cuMemSetAccess, 1 GiB, idle device|h100|cuMemSetAccess 1073741824|94.4|us|$H200"
    "host|cuMemUnmap, 2 MiB, idle device|h100|cuMemUnmap 2097152|17.9|us|$H200"
    "host|cuMemUnmap, 1 GiB, idle device|h100|cuMemUnmap 1073741824|30.5|us|$H200"
    "hostms|pinned host allocation, 64 MiB|h100|cudaMallocHost 67108864|25.0|ms|$H200"
    "hostms|pinned host allocation, 1 GiB|h100|cudaMallocHost 1073741824|409.8|ms|$H200"
    "hostms|pinned host allocation, 32 MB|h100|cudaMallocHost 32000000|11.6|ms|$DASK"
)

# measure KIND PROFILE ARGS... -> the simulated figure, or nothing on failure
measure() {
    local kind=$1 prof=$2; shift 2
    case $kind in
    net | step)
        # shellcheck disable=SC2068
        SIMGPU_PROFILE=$prof "$SNTRAIN" $@ 2>/dev/null |
            awk -v k="$kind" '$1 == "phases" && $2 == 2 {
                v = $6 + $8; if (k == "step") v += $10; printf "%.2f\n", v }'
        ;;
    conv)
        # shellcheck disable=SC2068
        SIMGPU_PROFILE=$prof "$CALIBRATE" conv $@ 2>/dev/null | awk '$1 == "conv" { printf "%.3f\n", $9 }'
        ;;
    copy)
        # shellcheck disable=SC2068
        SIMGPU_PROFILE=$prof "$CALIBRATE" copy $@ 2>/dev/null | awk '$1 == "copy" { printf "%.2f\n", $3 }'
        ;;
    duplex)
        # shellcheck disable=SC2068
        SIMGPU_PROFILE=$prof "$CALIBRATE" duplex $@ 2>/dev/null | awk '$1 == "duplex" { printf "%.3f\n", $7 }'
        ;;
    host | hostms)
        # shellcheck disable=SC2068
        SIMGPU_PROFILE=$prof "$CALIBRATE" host $@ 2>/dev/null |
            awk -v k="$kind" '$1 == "host" { v = $3; if (k == "hostms") v /= 1000; printf "%.2f\n", v }'
        ;;
    esac
}

status=0 failed=0
body=""
for row in "${ROWS[@]}"; do
    IFS='|' read -r kind name prof args pub unit src <<<"$row"
    # shellcheck disable=SC2086
    sim=$(measure "$kind" "$prof" $args)
    if [ -z "$sim" ]; then
        echo "calibrate.sh: $name on $prof did not run" >&2
        failed=1
        continue
    fi
    ratio=$(awk -v s="$sim" -v p="$pub" 'BEGIN { printf "%.2f", s / p }')
    if [ "${CALIBRATE_CHECK:-0}" = 1 ] && ! awk -v r="$(awk -v s="$sim" -v p="$pub" 'BEGIN { print s / p }')" \
        'BEGIN { exit !(r >= 0.75 && r <= 1.25) }'; then
        echo "calibrate.sh: $name on $prof: simulated $sim $unit, published $pub $unit (ratio $ratio)" >&2
        status=1
    fi
    body+="| $name | $prof | $sim $unit | $pub $unit | $ratio | $src |"$'\n'
done
if [ $failed -ne 0 ]; then
    echo "calibrate.sh: a workload did not run; no table written" >&2
    exit 1
fi

{
    echo "# Simulated clock against published measurements"
    echo
    echo "Generated by bench/calibrate.sh (\`make bench\`) on the simulated device with"
    echo "compute off. ratio = simulated / published; tests/test_sim_calibration.sh fails"
    echo "when a row leaves [0.75, 1.25]. Whole networks: build/sntrain with"
    echo "--workspace-limit 1024 (the published runs used cuDNN's heuristic with an"
    echo "unlimited workspace), forward + backward of the second iteration as"
    echo "--phase-times reports it (the sources time model:forward + model:backward,"
    echo "no data loading, no update); the training step adds the update. Single"
    echo "convolutions: build/calibrate conv, DeepBench's method (cudnnFind, forward +"
    echo "backward data + backward filter). Copies: build/calibrate copy and duplex,"
    echo "bandwidthTest's and nvbandwidth's methods. Memory management: build/calibrate"
    echo "host, one call's host time on an idle device bracketed by events, the"
    echo "micro-benchmarks' timer around each call; the host costs are the same on every"
    echo "profile. Which cuDNN generation each profile stands for and how the factors"
    echo "were fitted: docs/sim-cudnn.md, \"Calibration\"."
    echo
    echo "| workload | profile | simulated | published | ratio | source |"
    echo "|---|---|---:|---:|---:|---|"
    printf "%s" "$body"
    echo
    # The constants behind the host costs, as docs/sim-runtime.md lists them.
    awk '/^## / { on = ($0 ~ /^## Host-side cost of memory management/) } on' docs/sim-runtime.md
} >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"
exit $status
