#!/usr/bin/env bash
# test_sn_workspace.sh — convolution algorithms under SN_WORKSPACE in manage
# mode, on the reference trainer's VGG (simulated k40; the simulator's
# algorithms all compute the same bits, so every run must be bit-identical
# to the run without libsn, while the hazard checker stays fatal):
#  - the trainer limited to algorithms without workspace (--workspace-limit
#    0), at an ample budget: keep changes nothing and searches nothing;
#    auto measures each configuration once, upgrades convolutions to
#    faster algorithms with workspace from libsn's scratch, and the steady
#    iteration is faster;
#  - the trainer's own choice (up to 8 MiB per layer, Caffe's default) at a
#    budget well below its peak (12 MiB of 80, below what any plan fits):
#    auto downgrades convolutions to smaller workspaces and beats keep; min
#    runs every convolution with its smallest workspace, which beats keep
#    too;
#  - min at the ample budget runs only smaller workspaces than the
#    trainer's choice (slower than it, and the text report says so).
# Prints TAP-like "ok"/"not ok" lines.
set -u
. "$(dirname "$0")/lib.sh"
trainer="$BUILD_DIR/sntrain"
learned() { grep -E '^(iter [0-9]+ loss|checksum)' "$1" | sed -E 's/ time .*//'; }
# the mean device time of the last two iterations (the plan is made after
# the third and followed from the fifth on)
steady() { awk '/^iter [0-9]+ loss/ { t[n++] = $6 } END { printf "%.3f", (t[n-1] + t[n-2]) / 2 }' "$1"; }
m() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["devices"][0]["manage"][sys.argv[2]])' "$@"; }
plan() { python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["devices"][0]["manage"]["plan"]; print(p and p[sys.argv[2]])' "$@"; }
faster() { python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))' "$1" "$2"; }

net=(--iters 8 --net vgg --input 32 --batch 16 --width 16)

# run TAG SN_WORKSPACE SN_BUDGET trainer-args...: output in $tmp/TAG.out,
# report in $tmp/TAG.json, exit status in $tmp/TAG.rc
run() {
    local tag=$1 ws=$2 budget=$3
    shift 3
    SN_WORKSPACE=$ws SN_BUDGET=$budget SN_REPORT="$tmp/$tag.json" LD_PRELOAD="$SN_PRELOAD" "$trainer" "$@" \
        >"$tmp/$tag.out" 2>&1
    echo $? >"$tmp/$tag.rc"
    learned "$tmp/$tag.out" >"$tmp/$tag.learned"
}
same() { [ "$(cat "$tmp/$2.rc")" = 0 ] && diff -q "$tmp/$1.learned" "$tmp/$2.learned" >/dev/null; }
say() { echo "# $1: $(steady "$tmp/$1.out") ms per iteration; $(plan "$tmp/$1.json" algo_up) faster and" \
             "$(plan "$tmp/$1.json" algo_down) smaller algorithms on $(plan "$tmp/$1.json" algo_steps) steps with a" \
             "choice, $(plan "$tmp/$1.json" algo_calls) calls changed, $(plan "$tmp/$1.json" algo_scratch_calls) with" \
             "libsn's workspace (at most $(m "$tmp/$1.json" scratch_peak) bytes);" \
             "$(m "$tmp/$1.json" algo_searches) configurations searched"; }

# ---- the trainer limited to zero workspace, ample budget -------------------
"$trainer" "${net[@]}" --workspace-limit 0 >"$tmp/plain0.out" 2>&1
learned "$tmp/plain0.out" >"$tmp/plain0.learned"
run keep0 keep free "${net[@]}" --workspace-limit 0
run auto0 auto free "${net[@]}" --workspace-limit 0
say keep0
say auto0
check "keep, ample: bit-identical, nothing searched, no algorithm changed, no scratch" \
    "same plain0 keep0 && [ \"\$(m '$tmp/keep0.json' algo_searches)\" = 0 ] &&
     [ \"\$(plan '$tmp/keep0.json' algo_up)\" = 0 ] && [ \"\$(plan '$tmp/keep0.json' algo_down)\" = 0 ] &&
     [ \"\$(plan '$tmp/keep0.json' algo_calls)\" = 0 ] && [ \"\$(m '$tmp/keep0.json' scratch_peak)\" = 0 ]"
check "auto, ample: bit-identical; configurations searched; faster algorithms with libsn's workspace" \
    "same plain0 auto0 && [ \"\$(m '$tmp/auto0.json' algo_searches)\" -gt 0 ] &&
     [ \"\$(m '$tmp/auto0.json' algo_search_failed)\" = 0 ] &&
     [ \"\$(plan '$tmp/auto0.json' algo_up)\" -gt 0 ] && [ \"\$(plan '$tmp/auto0.json' algo_down)\" = 0 ] &&
     [ \"\$(plan '$tmp/auto0.json' algo_calls)\" -gt 0 ] && [ \"\$(plan '$tmp/auto0.json' algo_kept)\" = 0 ] &&
     [ \"\$(plan '$tmp/auto0.json' algo_scratch_calls)\" -gt 0 ] && [ \"\$(m '$tmp/auto0.json' scratch_peak)\" -gt 0 ]"
check "auto, ample: the steady iteration is faster than keep's" \
    "faster \"\$(steady '$tmp/auto0.out')\" \"\$(steady '$tmp/keep0.out')\""

# ---- the trainer's own choice, a tight budget ------------------------------
"$trainer" "${net[@]}" >"$tmp/plain.out" 2>&1
learned "$tmp/plain.out" >"$tmp/plain.learned"
for ws in keep auto min; do
    run "$ws" "$ws" 12M "${net[@]}"
    say "$ws"
done
check "12 MiB: keep, auto and min bit-identical" "same plain keep && same plain auto && same plain min"
check "12 MiB: keep changes no algorithm" \
    "[ \"\$(plan '$tmp/keep.json' algo_up)\" = 0 ] && [ \"\$(plan '$tmp/keep.json' algo_down)\" = 0 ] &&
     [ \"\$(plan '$tmp/keep.json' algo_calls)\" = 0 ]"
check "12 MiB: auto downgrades convolutions and beats keep" \
    "[ \"\$(plan '$tmp/auto.json' algo_down)\" -gt 0 ] && [ \"\$(plan '$tmp/auto.json' algo_calls)\" -gt 0 ] &&
     faster \"\$(steady '$tmp/auto.out')\" \"\$(steady '$tmp/keep.out')\""
check "12 MiB: min runs the smallest workspaces only and beats keep" \
    "[ \"\$(plan '$tmp/min.json' algo_down)\" -gt 0 ] && [ \"\$(plan '$tmp/min.json' algo_up)\" = 0 ] &&
     faster \"\$(steady '$tmp/min.out')\" \"\$(steady '$tmp/keep.out')\""

# ---- min at the ample budget, text report -----------------------------------------
SN_WORKSPACE=min SN_REPORT="$tmp/minfree.txt" LD_PRELOAD="$SN_PRELOAD" "$trainer" "${net[@]}" >"$tmp/minfree.out" 2>&1
learned "$tmp/minfree.out" >"$tmp/minfree.learned"
grep -E '^  (algorithms|planned algorithms)' "$tmp/minfree.txt" | sed 's/^/# /'
check "min, ample: bit-identical, only smaller workspaces, slower than the trainer's own choice" \
    "diff -q '$tmp/plain.learned' '$tmp/minfree.learned' >/dev/null &&
     grep -q '^  planned algorithms [1-9][0-9]* of [1-9][0-9]* .*: 0 faster, [1-9][0-9]* with less workspace' '$tmp/minfree.txt' &&
     grep -q '^  algorithms  *SN_WORKSPACE=min; [1-9][0-9]* convolution configurations searched (0 found nothing)' '$tmp/minfree.txt' &&
     faster \"\$(steady '$tmp/plain.out')\" \"\$(steady '$tmp/minfree.out')\""

