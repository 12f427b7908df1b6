#!/usr/bin/env bash
# test_sn_corpus.sh — libsn's model of programs it was not written for. Each
# program in tests/corpus imitates one framework's habits (Caffe, Darknet,
# an eager framework allocating every tensor anew, an encoder-decoder with
# transposed convolutions, an evaluation pass every few iterations, data
# loading and a branch on a second stream); its
# expected model is written down in tests/corpus/<name>.expect (the format
# is described in tests/corpus/expect.py). For every program:
#  - its output is the same without libsn, with SN_MODE=off and in trace
#    mode, and in manage mode at half its peak and at the smallest budget
#    manage mode's report measured as feasible;
#  - in trace mode, the JSON report's model matches the expectation;
#  - the what-if peaks keep their invariants: liveness at or below the
#    memory as allocated (at every step and at the peak), the offloading
#    and SuperNeurons peaks at or below liveness, the lower bound at or
#    below all of them, the budget between the lower bound and the run's
#    peak as allocated, and the model's own check says so ("check": "ok").
# And: the Perfetto timeline labels the phase of every step of the
# profiled iterations when the run goes on past the profile.
# Prints TAP-like "ok"/"not ok" lines.
set -u
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
corpus="$BUILD_DIR/tests/corpus"

if ! command -v python3 >/dev/null; then
    echo "ok - corpus models # SKIP python3 not installed"
    exit 0
fi

for expect in "$here"/corpus/*.expect; do
    name=$(basename "$expect" .expect)
    prog="$corpus/$name"
    "$prog" >"$tmp/$name.plain" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "not ok - $name: the program fails without libsn (exit $rc)"
        sed 's/^/# /' "$tmp/$name.plain" | tail -5
        continue
    fi
    same=1
    for mode in off trace; do
        SN_MODE=$mode SN_REPORT="$tmp/$name.json" LD_PRELOAD="$SN_PRELOAD" "$prog" >"$tmp/$name.$mode" 2>"$tmp/$name.$mode.err" ||
            same=0
        cmp -s "$tmp/$name.plain" "$tmp/$name.$mode" || same=0
    done
    check "$name: same output without libsn, with SN_MODE=off and in trace mode" '[ $same -eq 1 ]'
    # Manage mode below the peak (64 KiB granules so that these small
    # programs' tensors move one by one): half of the peak as allocated
    # (the libraries' memory included: it moves too, between the calls on
    # its handle), or the lower bound if that is more (the largest step's
    # working set or allocation with the libraries' memory of no known
    # handle); then the smallest budget that run's report measured as
    # feasible.
    budgets=$(python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))["devices"][0]; w=d["whatif"]
print(max(d["run"]["peak_bytes"] // 2, w["lower_bound"]) + (1 << 20))' "$tmp/$name.json" 2>/dev/null)
    for which in half smallest; do
        if [ $which = smallest ]; then
            budgets=$(python3 -c 'import json,sys
print(json.load(open(sys.argv[1]))["devices"][0]["manage"]["smallest_budget"])' "$tmp/$name.half.json" 2>/dev/null)
        fi
        SIMGPU_GRANULARITY=64K SN_MODE=manage SN_BUDGET="$budgets" SN_REPORT="$tmp/$name.$which.json" \
            LD_PRELOAD="$SN_PRELOAD" "$prog" >"$tmp/$name.$which" 2>"$tmp/$name.$which.err"
        rc=$?
        moved=$(python3 -c 'import json,sys
print(json.load(open(sys.argv[1]))["devices"][0]["manage"]["evictions"])' "$tmp/$name.$which.json" 2>/dev/null)
        check "$name: manage mode at the $which budget (SN_BUDGET=$budgets, ${moved:-?} evictions): same output" \
            "[ -n '$budgets' ] && [ $rc -eq 0 ] && cmp -s '$tmp/$name.plain' '$tmp/$name.$which'" ||
            { diff "$tmp/$name.plain" "$tmp/$name.$which" | head -5; grep libsn "$tmp/$name.$which.err" | head -3; } | sed 's/^/# /'
    done
    if python3 - "$tmp/$name.json" >"$tmp/$name.inv" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
w = d["whatif"]
bad = []
def need(ok, what):
    if not ok:
        bad.append(what)
need(w["liveness"] <= w["asis_iteration"] <= w["asis"], "liveness <= as allocated")
need(all(s["liveness"] <= s["asis"] for s in d["memory_per_step"]), "liveness <= as allocated at every step")
need(w["conv_offload"] <= w["liveness"] and w["all_offload"] <= w["liveness"], "offloading <= liveness")
need(w.get("superneurons", 0) <= w["liveness"], "SuperNeurons <= liveness")
need(w["lower_bound"] <= min(w["all_offload"], w["conv_offload"], w["liveness"], w.get("superneurons", w["liveness"])),
     "lower bound <= every what-if")
need(w["lower_bound"] <= w["budget"] <= w["asis"], "lower bound <= budget <= peak as allocated")
need(d.get("check") == "ok", "the model's check: %s" % d.get("check"))
print("; ".join(bad) if bad else "all hold")
sys.exit(1 if bad else 0)
PY
    then
        echo "ok - $name: invariants of the what-if peaks hold"
    else
        echo "not ok - $name: invariants broken: $(cat "$tmp/$name.inv")"
    fi
    if python3 "$here/corpus/expect.py" "$expect" "$tmp/$name.json" >"$tmp/$name.check" 2>&1; then
        echo "ok - $name: the model matches $(basename "$expect") ($(tail -1 "$tmp/$name.check"))"
    else
        echo "not ok - $name: the model differs from $(basename "$expect")"
        sed 's/^/# /' "$tmp/$name.check" | head -30
    fi
done

# Phase labels in the timeline of a run longer than its profile: the
# calls are recorded for the profiled iterations only, and every step of
# the periodic part of them carries its phase.
SN_MODE=trace SN_REPORT="$tmp/long.json" SN_TRACE="$tmp/long.trace.json" LD_PRELOAD="$SN_PRELOAD" \
    "$corpus/encdec" >/dev/null 2>&1
if python3 - "$tmp/long.json" "$tmp/long.trace.json" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))["devices"][0]
tr = json.load(open(sys.argv[2]))
assert rep["recorded"]["log"] == "following", rep["recorded"]
steps = [e for e in tr["traceEvents"] if e["ph"] == "X" and e["cat"] == "step"]
labelled = [e for e in steps if "phase" in e["args"]]
phases = {e["args"]["phase"] for e in labelled}
period = rep["iteration"]["period"]
# every recorded iteration but the first (it holds set-up steps) is labelled
assert len(labelled) >= period * (rep["recorded"]["iterations"] - 1), (len(labelled), period)
assert phases == {"forward", "backward", "update"}, phases
PY
then
    echo "ok - timeline: the phase of every step of the profiled iterations, past the profile"
else
    echo "not ok - timeline: steps of the profiled iterations without their phase"
fi
