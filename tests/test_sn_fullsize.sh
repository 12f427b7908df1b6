#!/usr/bin/env bash
# test_sn_fullsize.sh — a full-size network on a simulated 12 GB device
# (titanx profile, compute off: only the clock and the checks run), as the
# bench runs it: VGG-16 at batch 256, four times the device, under auto.
#  - The algorithm searches may evict what can leave, so the algorithms
#    with workspaces of gigabytes are timed and the plan runs some of them
#    (libsn's workspace above 1 GiB).
#  - The plan gathers its maps and unmaps at sync steps, and libsn's
#    workspace is mapped at the sync step before the stretch that needs it
#    and unmapped at the next, as the plan's timeline holds it: the
#    measured iteration is within 5% of the prediction (with the workspace
#    left mapped after its step, demand evictions made it 58% slower).
#    Its prediction is within 13% of the bound (4239 ms against 3798;
#    before auto tried its convolutions under workspace ceilings, 17%).
#  - ResNet-50 b256 (4.5 times the device): auto's plan moves memory
#    without sync steps. When a prefetch needs the memory of a tensor the
#    plan is sending away, the arena waits for that tensor's own copy out
#    alone (own_waits), not for the device; the timeline charges no wait
#    for remapping outside sync steps, and the measured iteration is within
#    5% of the prediction (2439 ms against 2368; with every remapping
#    charged a wait, plans without sync steps were predicted up to 50%
#    slower than they ran). The data loader runs in lockstep, so the
#    simulated times do not depend on how fast the build runs the host.
#  - ResNet-50 b32 in the dynamic allocation style at half its peak:
#    auto's best plan keeping the framework's algorithms is predicted
#    ahead of its best choosing them (502 ms against 492-520 for the
#    others), so that model's candidates are measured first and the other
#    model's follow; demand residency, measured last, is the fastest
#    (593 ms against 606 for the best plan) and is kept.
#  - DenseNet-121 b128 (3 times the device): candidates choosing their
#    algorithms are measured, and one predicted behind the first (a seed
#    policy's plan with its own algorithms, 1479 ms predicted) is measured
#    faster and kept (1167 ms against 1213). Demand residency is measured
#    last (3513 ms here). (Before auto tried workspace ceilings, the first
#    candidate here kept the framework's algorithms, as ResNet-50 b32's
#    does above.)
# SN_CANDIDATES=1: auto's first plan is followed alone.
# Prints TAP-like "ok"/"not ok" lines.
set -u
. "$(dirname "$0")/lib.sh"
trainer="$BUILD_DIR/sntrain"
export SIMGPU_PROFILE=titanx SIMGPU_COMPUTE=0 SN_HOST_LIMIT=64G
unset SN_BUDGET SN_POLICY SN_MODE SN_WORKSPACE SIMGPU_MEM SIMGPU_GRANULARITY
if ! command -v python3 >/dev/null; then
    echo "ok - # skip: python3 not installed"
    exit 0
fi

# facts NAME FIELD: from $tmp/NAME.json and .out, the plan's sync steps,
# its prediction, the measured iteration (the mean of the last three), the
# manage section's FIELD and the plan's bound.
facts() { # name field
    python3 - "$tmp/$1.json" "$tmp/$1.out" "$2" <<'PY'
import json, sys
try:
    m = json.load(open(sys.argv[1]))["devices"][0]["manage"]
    p = m["plan"]
    t = [float(l.split()[5]) for l in open(sys.argv[2]) if l.startswith("iter ")]
    print(p["sync_steps"], p["predicted_ms"], sum(t[-3:]) / 3, m[sys.argv[3]], p["bound_ms"])
except Exception:
    print("-1 -1 -1 0 -1")
PY
}

# Every run here makes its plans on the trainer's thread (SN_PLAN_WAIT=1):
# the checks compare the steady state with the prediction and count
# candidates, and on a loaded machine the planning thread's plan came too
# late for the iterations run (the results are the same either way when
# the machine is idle: 4239 ms measured here, 2326 for ResNet-50 b256).
SN_PLAN_WAIT=1 SN_CANDIDATES=1 SN_REPORT="$tmp/vgg.json" LD_PRELOAD="$SN_PRELOAD" "$trainer" --net vgg --depth 16 \
    --batch 256 \
    --iters 10 >"$tmp/vgg.out" 2>"$tmp/vgg.err"
rc=$?
read -r sync predicted measured ws bound <<<"$(facts vgg scratch_peak)"
echo "# VGG-16 b256 in 12 GB: $sync sync steps, predicted $predicted ms, measured $measured ms," \
     "libsn's workspace at most $ws bytes"
check "VGG-16 b256 in 12 GB trains under auto" "[ $rc -eq 0 ]" || sed 's/^/# /' "$tmp/vgg.err" | tail -4
check "the searches time algorithms with large workspaces, and the plan runs some (over 1 GiB)" \
    "[ '$ws' -gt $((1 << 30)) ]"
check "a gathered plan, its workspace mapped per stretch: measured within 5% of the prediction" \
    "[ '$sync' -gt 0 ] && python3 -c 'import sys; p, m = float(sys.argv[1]), float(sys.argv[2]); sys.exit(not (p > 0 and abs(m - p) <= 0.05 * p))' '$predicted' '$measured'"
echo "# VGG-16 b256: the bound (every convolution at its fastest, the copies the budget forces) $bound ms"
check "VGG-16 b256: the plan predicted within 13% of the bound (17% without the workspace ceilings)" \
    "python3 -c 'import sys; p, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(not (b > 0 and b <= p <= 1.13 * b))' '$predicted' '$bound'"

SN_PLAN_WAIT=1 SN_CANDIDATES=1 SN_REPORT="$tmp/r50.json" LD_PRELOAD="$SN_PRELOAD" "$trainer" --net resnet --depth 50 \
    --batch 256 \
    --iters 12 --prefetch lockstep >"$tmp/r50.out" 2>"$tmp/r50.err"
rc=$?
read -r sync predicted measured own _ <<<"$(facts r50 own_waits)"
echo "# ResNet-50 b256 in 12 GB: $sync sync steps, predicted $predicted ms, measured $measured ms," \
     "$own waits for a planned leave's own copy"
check "ResNet-50 b256 in 12 GB trains under auto, dropped contents never read" \
    "[ $rc -eq 0 ] && grep -q '\"dropped_reads\":0,' '$tmp/r50.json'" || sed 's/^/# /' "$tmp/r50.err" | tail -4
check "room is made from planned leaves by waiting for their own copies" "[ '$own' -gt 0 ]"
check "a plan without sync steps: measured within 5% of the prediction" \
    "[ '$sync' = 0 ] && python3 -c 'import sys; p, m = float(sys.argv[1]), float(sys.argv[2]); sys.exit(not (p > 0 and abs(m - p) <= 0.05 * p))' '$predicted' '$measured'"

# (a choice made by measurement, not a question for the sanitizers: under
# ThreadSanitizer this run alone takes minutes)
if [ -n "${SANITIZE:-}" ]; then
    echo "ok $((n + 1)) - # skip: ResNet-50 b32 dynamic's candidates are measured in the plain and debug builds"
    echo "ok $((n + 2)) - # skip: ResNet-50 b32 dynamic's speed against the run without libsn is measured in the plain and debug builds"
    echo "ok $((n + 3)) - # skip: DenseNet-121 b128's candidates are measured in the plain and debug builds"
    exit 0
fi
# the candidates of both models, a half-peak budget
args=(--net resnet --depth 50 --batch 32 --alloc dynamic --prefetch lockstep)
peak=$(peak_of "$trainer" "${args[@]}" --iters 3 2>/dev/null)
if have_bytes "ResNet-50 b32 dynamic at half its peak" "the trace run's peak_bytes" "$peak"; then
    SN_PLAN_WAIT=1 SN_BUDGET=$((peak / 2)) SN_REPORT="$tmp/rd.json" LD_PRELOAD="$SN_PRELOAD" "$trainer" "${args[@]}" \
        --iters 56 >"$tmp/rd.out" 2>"$tmp/rd.err"
    rc=$?
    # Every planned tensor is bound as it is allocated (docs/decisions.md),
    # so a plan measures what it predicts and beats demand residency: kept
    # is the fastest measured, a plan, within 10% of its prediction (503 ms
    # predicted and 503 measured against demand's 593; while the per-
    # iteration allocations were bound to the wrong tensors, every plan
    # measured 20-30% over its prediction and demand was kept).
    read -r models kept fastest close <<<"$(python3 - "$tmp/rd.json" <<'PY'
import json, sys
try:
    p = json.load(open(sys.argv[1]))["devices"][0]["manage"]["plan"]
    c = p["candidates"]
    k = c[p["candidate_kept"]]
    ms = [x["measured_ms"] for x in c]
    best = min((m for m in ms if m > 0), default=-1)
    print(",".join(x["model"] for x in c), k["model"], int(k["measured_ms"] == best),
          int(k["predicted_ms"] > 0 and abs(k["measured_ms"] - k["predicted_ms"]) <= 0.10 * k["predicted_ms"]))
except Exception:
    print("none none -1 -1")
PY
)"
    echo "# ResNet-50 b32 dynamic at half its peak ($peak bytes): candidates measured $models; kept: $kept," \
         "the fastest measured: $fastest, within 10% of its prediction: $close"
    check "ResNet-50 b32 dynamic at half its peak: the framework model's candidates first, the other's after, demand residency last; a plan kept, the fastest, as predicted" \
        "[ $rc -eq 0 ] && [[ '$models' =~ ^framework(,framework)*(,chosen)+,demand$ ]] && [ '$kept' != demand ] &&
         [ '$fastest' = 1 ] && [ '$close' = 1 ]" ||
        sed 's/^/# /' "$tmp/rd.err" | tail -4
    # and it runs within 1.1x of the run without libsn (the simulator's clock is
    # deterministic: every iteration of that run takes the same time). 1.78x
    # while cudaFree waited for libsn's copies of other blocks and blocks were
    # mapped from 2 MiB pieces; 1.06x since.
    "$trainer" "${args[@]}" --iters 3 >"$tmp/rd0.out" 2>/dev/null
    read -r alone managed <<<"$(python3 - "$tmp/rd0.out" "$tmp/rd.out" <<'PY'
import sys
def times(f):
    try:
        return [float(l.split()[5]) for l in open(f) if l.startswith("iter ")]
    except Exception:
        return []
a, m = times(sys.argv[1]), times(sys.argv[2])
print(a[-1] if a else -1, sum(m[-4:]) / 4 if len(m) >= 4 else -1)
PY
)"
    echo "# ResNet-50 b32 dynamic: $alone ms per iteration without libsn, $managed ms at half its peak under auto (mean of the last four)"
    check "ResNet-50 b32 dynamic at half its peak under auto: within 1.1x of the run without libsn" \
        "python3 -c 'import sys; a, m = float(sys.argv[1]), float(sys.argv[2]); sys.exit(not (a > 0 and 0 < m <= 1.1 * a))' '$alone' '$managed'"
fi

SN_PLAN_WAIT=1 SN_REPORT="$tmp/dn.json" LD_PRELOAD="$SN_PRELOAD" "$trainer" --net densenet --depth 121 --batch 128 \
    --iters 44 --prefetch lockstep >"$tmp/dn.out" 2>"$tmp/dn.err"
rc=$?
read -r first kept others demand faster <<<"$(python3 - "$tmp/dn.json" <<'PY'
import json, sys
try:
    p = json.load(open(sys.argv[1]))["devices"][0]["manage"]["plan"]
    c = p["candidates"]
    k = c[p["candidate_kept"]]
    print(c[0]["model"], k["model"], sum(x["model"] == "chosen" for x in c),
          int(c[-1]["model"] == "demand" and c[-1]["measured_ms"] > 0),
          int(0 < k["measured_ms"] < c[0]["measured_ms"]))
except Exception:
    print("none none -1 -1 -1")
PY
)"
echo "# DenseNet-121 b128 in 12 GB: the first candidate's algorithms: $first; $others candidates choosing theirs;" \
     "demand residency measured last: $demand; the one kept: $kept, faster than the first: $faster"
check "DenseNet-121 b128 in 12 GB: candidates choosing their algorithms and demand residency measured, a faster one than the first kept" \
    "[ $rc -eq 0 ] && [ '$others' -ge 2 ] && [ '$demand' = 1 ] && [ '$kept' = chosen ] &&
     [ '$faster' = 1 ]" ||
    sed 's/^/# /' "$tmp/dn.err" | tail -4
