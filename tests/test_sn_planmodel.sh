#!/usr/bin/env bash
# test_sn_planmodel.sh — the plan model (tracer/sn_planmodel.h) of real
# runs of the reference trainer, from trace mode's JSON report:
#  - it agrees with the model's own tables: one compute step per step of
#    the iteration, as many convolutions as the memory table's convolution
#    steps, the model's tensors plus the allocations no call names, the
#    library memory the what-if counts, nothing untimed or unseen;
#  - the text report shows it;
#  - copy bandwidth is measured from the trainer's copies from pinned host
#    memory (Caffe's allocation style) at the simulated profile's pinned
#    rate (README, "Device profiles": k40 12.18 GB/s, h100 54.6 GB/s, less
#    each copy's fixed cost), and copies from pageable memory (Darknet's
#    style, 6 GB/s on the k40) are not taken for it: the default instead.
#    The trainer's prefetch thread makes those copies while the main
#    thread issues its own calls, which hold some copies up by a varying
#    amount: the bandwidth is the fastest copy's, so it is the same in
#    every run, and a rate off the profile's still fails.
# Prints TAP-like "ok"/"not ok" lines.
set -u
. "$(dirname "$0")/lib.sh"
trainer="$BUILD_DIR/sntrain"

if ! command -v python3 >/dev/null; then
    echo "ok - plan model checks # SKIP python3 not installed"
    exit 0
fi

report() { # NAME PROFILE ARGS...: trace-mode JSON report of a trainer run
    local name="$1" profile="$2"; shift 2
    SIMGPU_PROFILE=$profile SN_MODE=trace SN_REPORT="$tmp/$name.json" LD_PRELOAD="$SN_PRELOAD" \
        "$trainer" --width 4 --iters 4 "$@" >"$tmp/$name.out" 2>&1 ||
        { echo "not ok - $name: the trainer failed"; tail -5 "$tmp/$name.out" | sed 's/^/# /'; }
}

# The model's tables and the plan model agree.
for style in caffe dynamic; do
    report "resnet-$style" k40 --net resnet --input 32 --batch 2 --alloc "$style"
    if python3 - "$tmp/resnet-$style.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
p = d["plan_model"]
conv_ops = {"conv_fwd", "conv_bias_act_fwd", "conv_bwd_data", "conv_bwd_filter"}
steps = d["memory_per_step"]
assert p["compute_steps"] == d["iteration"]["period"] == len(steps), p
assert p["steps"] >= p["compute_steps"], p
assert p["convolutions"] == sum(s["op"] in conv_ops for s in steps) > 0, p
assert p["tensors"] == len(d["tensors"]) + p["unnamed"], p
lib = [t for t in d["tensors"] if t["owner"] in ("cudnn", "cublas")]
assert p["pinned"] >= len(lib), p
# (the whatif's library is what belongs to no known handle; library_keyed
# what belongs to one: the plan model keeps both resident throughout)
w = d["whatif"]
assert p["fixed_bytes"] == w["library"] + w["library_keyed"] - sum(t["bytes"] for t in lib) > 0, p
assert w["library_keyed"] > 0, w
# a step's position is at or after its index: the calls before it count too
bwd = d["passes"]["list"][0]["backward"][0]
assert bwd <= p["backward_start"] <= bwd + p["steps"] - p["compute_steps"], (bwd, p)
assert p["untimed_steps"] == 0 and p["opaque_steps"] == 0, p
assert p["ms"] >= d["iteration"]["ms"] > 0, (p["ms"], d["iteration"])
assert p["accesses"] >= p["tensors"] - p["unnamed"], p
assert p["duplex"] == 1.6 and p["copy_ms"] == 0.01, p
PY
    then
        echo "ok - resnet/$style: the plan model agrees with the model's tables"
    else
        echo "not ok - resnet/$style: the plan model disagrees with the model's tables"
    fi
done

SIMGPU_PROFILE=k40 SN_MODE=trace SN_REPORT="$tmp/report.txt" LD_PRELOAD="$SN_PRELOAD" \
    "$trainer" --net resnet --input 32 --batch 2 --width 4 --iters 4 --alloc caffe >/dev/null 2>&1
check "the text report shows the plan model" \
    "grep -q '^plan model' '$tmp/report.txt' && grep -qE '^  steps +[0-9]+: [0-9]+ compute steps' '$tmp/report.txt' &&
     grep -qE '^  copies +to the device [0-9.]+ GB/s \((measured|default)\)' '$tmp/report.txt'"

# Bandwidth: a 64-image AlexNet batch is a 3.4 MB copy.
bandwidth() { # NAME: "source gbps copies" of the H2D figure
    python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["devices"][0]["plan_model"]; print(p["h2d_source"], p["h2d_gbps"], p["h2d_copies"])' "$tmp/$1.json"
}
in_range() { awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x >= lo && x <= hi) }'; }
for case in "k40 12.18" "h100 54.6"; do
    set -- $case
    report "alexnet-caffe-$1" "$1" --net alexnet --input 67 --batch 64 --alloc caffe
    read -r src gbps copies < <(bandwidth "alexnet-caffe-$1")
    check "$1: host-to-device bandwidth measured on pinned copies ($src, $gbps GB/s of $2, $copies copies)" \
        "[ '$src' = measured ] && [ '$copies' -ge 1 ] && in_range '$gbps' \$(awk 'BEGIN { print 0.85 * $2 }') '$2'"
done
report alexnet-darknet k40 --net alexnet --input 67 --batch 64 --alloc darknet
read -r src gbps copies < <(bandwidth alexnet-darknet)
check "pageable copies are not the pinned bandwidth ($src, $gbps GB/s)" \
    "[ '$src' = default ] && [ '$copies' = 0 ] && in_range '$gbps' 12 12"
