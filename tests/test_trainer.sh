#!/usr/bin/env bash
# test_trainer.sh — the reference trainer on the simulated device.
#
# Small versions of every network train a few iterations in each allocation
# style with the loss falling; the three styles give identical losses and
# weights; full-size networks run with compute off on a large simulated
# device and report their memory peak and time; the 12 GB K40 profile ends
# VGG-16 at batch 256 and ResNet-152 at batch 64 with a clean out-of-memory;
# --kernels runs on the simulation and is refused on the real libraries;
# --log-allocs records the allocations with their roles; --eval-every adds
# evaluation passes that change nothing learned; --rebatch changes the
# batch midway, reallocating as each style's framework does.
# Prints TAP-like "ok N - ..." / "not ok N - ..." lines.
set -u
BUILD=${BUILD:-build}
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-$PWD/$BUILD/sim}
SNTRAIN="$PWD/$BUILD/sntrain"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
n=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
    n=$((n + 1)); echo "not ok $n - $1"
    shift
    for f in "$@"; do [ -f "$f" ] && sed 's/^/#   /' "$f" | tail -n 15; done
}
check() { # check DESC CONDITION-STATUS [FILES TO SHOW ON FAILURE...]
    local desc=$1 status=$2; shift 2
    if [ "$status" -eq 0 ]; then ok "$desc"; else not_ok "$desc" "$@"; fi
}

# run TAG ARGS... : stdout in $TMP/TAG.out, stderr in $TMP/TAG.err, status in $TMP/TAG.rc
run() {
    local tag=$1; shift
    "$SNTRAIN" "$@" >"$TMP/$tag.out" 2>"$TMP/$tag.err"
    echo $? >"$TMP/$tag.rc"
}
rc_of() { cat "$TMP/$1.rc"; }
losses() { awk '$1 == "iter" && $3 == "loss" { print $4 }' "$TMP/$1.out"; }
field() { awk -v k="$2" '$1 == k { print $2 }' "$TMP/$1.out"; }

# The well-formed output of a run of I iterations, with the loss falling.
check_training() {
    local tag=$1 iters=$2 desc=$3
    local rc lines first last
    rc=$(rc_of "$tag")
    lines=$(grep -cE '^iter [0-9]+ loss [-0-9.naif]+ time [0-9.]+ ms$' "$TMP/$tag.out")
    first=$(losses "$tag" | head -n 1)
    last=$(losses "$tag" | tail -n 1)
    local good=1
    [ "$rc" -eq 0 ] && [ "$lines" -eq "$iters" ] || good=0
    grep -qE '^checksum [0-9a-f]{16}$' "$TMP/$tag.out" || good=0
    grep -qE '^peak [0-9]+ MiB$' "$TMP/$tag.out" || good=0
    grep -qE '^images/s [0-9.]+$' "$TMP/$tag.out" || good=0
    [ "$good" -eq 1 ] && awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' || good=0
    check "$desc (loss $first -> $last)" $((1 - good)) "$TMP/$tag.out" "$TMP/$tag.err"
}

# Small versions, and learning rates at which the loss falls within ITERS
# iterations for every seed tried (1-10); the nets without batch norm
# (AlexNet, VGG) learn more slowly and noisily and need the larger batches.
declare -A SMALL=(
    [alexnet]="--input 67 --width 8 --classes 10 --batch 32 --lr 0.05"
    [vgg]="--depth 11 --input 32 --width 8 --batch 32 --lr 0.02"
    [resnet]="--depth 8 --input 16 --width 4 --batch 16 --lr 0.1"
    [inception]="--depth 3 --input 16 --width 2 --batch 16 --lr 0.1"
    [densenet]="--depth 10 --input 16 --width 4 --batch 16 --lr 0.1"
)
ITERS=6

if [ ! -x "$SNTRAIN" ]; then
    not_ok "sntrain is built ($SNTRAIN)"
    exit 1
fi

# 1. Every network in every allocation style learns; styles agree bit for bit.
for net in alexnet vgg resnet inception densenet; do
    for alloc in caffe darknet dynamic; do
        # shellcheck disable=SC2086
        run "$net-$alloc" --net "$net" ${SMALL[$net]} --iters $ITERS --alloc "$alloc" --seed 7
        check_training "$net-$alloc" $ITERS "$net trains with $alloc allocation"
    done
    same=0
    for alloc in darknet dynamic; do
        cmp -s <(losses "$net-caffe"; field "$net-caffe" checksum) \
               <(losses "$net-$alloc"; field "$net-$alloc" checksum) || same=1
    done
    check "$net: caffe, darknet and dynamic allocation give identical losses and weights" $same \
        "$TMP/$net-caffe.out" "$TMP/$net-darknet.out" "$TMP/$net-dynamic.out"
done

# 1b. The prefetch thread in lockstep learns the same weights as free-running.
run resnet-lockstep --net resnet ${SMALL[resnet]} --iters $ITERS --alloc caffe --seed 7 --prefetch lockstep
[ "$(rc_of resnet-lockstep)" -eq 0 ] &&
    cmp -s <(losses resnet-caffe; field resnet-caffe checksum) <(losses resnet-lockstep; field resnet-lockstep checksum)
check "resnet: --prefetch lockstep gives the losses and weights of the free-running thread" $? \
    "$TMP/resnet-lockstep.out"

# 2. A different seed learns different weights (the checksum sees them).
run seed8 --net resnet ${SMALL[resnet]} --iters 2 --seed 8
run seed7 --net resnet ${SMALL[resnet]} --iters 2 --seed 7
[ "$(rc_of seed8)" -eq 0 ] && [ "$(field seed8 checksum)" != "$(field seed7 checksum)" ]
check "the checksum depends on the learned weights" $? "$TMP/seed8.out" "$TMP/seed7.out"

# 3. The allocation styles differ where they should: the dynamic style frees
#    activations early, darknet holds everything from the start.
pd=$(field resnet-dynamic peak); pk=$(field resnet-darknet peak)
[ -n "$pd" ] && [ -n "$pk" ] && [ "$pd" -le "$pk" ]
check "dynamic allocation peaks no higher than darknet's ($pd vs $pk MiB)" $?

# 4. --dump-graph lists the layers the trainer runs.
run dump --net densenet ${SMALL[densenet]} --iters 1 --dump-graph "$TMP/graph.txt"
layers=$(grep -c '^layer ' "$TMP/graph.txt" 2>/dev/null || echo 0)
concats=$(grep -c '^layer [0-9]* concat ' "$TMP/graph.txt" 2>/dev/null || echo 0)
[ "$(rc_of dump)" -eq 0 ] && [ "$layers" -gt 20 ] && [ "$concats" -ge 3 ] &&
    grep -q '^net densenet ' "$TMP/graph.txt"
check "--dump-graph writes the layer list ($layers layers, $concats joins)" $? "$TMP/dump.err"

# 4b. --log-allocs: every allocation and free the trainer makes, with the
#     buffer's role and facts, and the iterations between them; logging
#     changes nothing else.
run logged --net resnet ${SMALL[resnet]} --iters $ITERS --alloc dynamic --seed 7 \
    --log-allocs "$TMP/allocs.log"
run graph-r --net resnet ${SMALL[resnet]} --iters 1 --dump-graph "$TMP/graph-r.txt"
params=$(awk '$1 == "counts" { print $7 }' "$TMP/graph-r.txt")
peak_b=$(( $(field logged peak) * 1048576 ))
awk -v iters=$ITERS -v params="$params" -v peak="$peak_b" '
    /^#/ { next }
    $1 == "iter" {
        if ($2 != ++it) bad = bad " iter-order"
        live_at[it] = nlive
        next
    }
    $1 == "alloc" {
        if (NF < 8 || $3 !~ /^[0-9]+$/) bad = bad " format"
        if ($2 in size) bad = bad " realloc:" $2
        size[$2] = $3; nlive++; bytes += $3
        if (bytes > most) most = bytes
        role[$4]++
        if (it == 0 && $4 != "weight" && $4 != "state" && $4 != "constant") bad = bad " setup:" $4
        if (it == 0 && $4 == "weight") weights++
        if ($5 > 1) fork++
        if ($6 == 1) join++
        if ($7 == 1) accum++
        next
    }
    $1 == "free" {
        if (!($2 in size)) { bad = bad " free:" $2; next }
        if (it == 0) bad = bad " setup-free"
        bytes -= size[$2]; nlive--; delete size[$2]
        next
    }
    { bad = bad " line:" $1 }
    END {
        if (it != iters) bad = bad " iters=" it
        if (weights != params) bad = bad " weights=" weights "/" params
        # per-iteration buffers all go within their iteration; momentum
        # comes in the first update and stays
        for (k = 3; k <= it; k++) if (live_at[k] != live_at[2]) bad = bad " unsteady:" k
        if (nlive != live_at[2]) bad = bad " end-live"
        split("input activation gradient weight-grad momentum saved", need, " ")
        for (k in need) if (!role[need[k]]) bad = bad " no-" need[k]
        if (!fork || !join || !accum) bad = bad " facts:" fork "/" join "/" accum
        if (most > peak) bad = bad " live>" peak
        if (bad != "") { print "log:" bad > "/dev/stderr"; exit 1 }
    }' "$TMP/allocs.log" 2>"$TMP/logcheck.err" &&
    cmp -s <(losses logged; field logged checksum) <(losses resnet-dynamic; field resnet-dynamic checksum)
check "--log-allocs records every allocation and free with its role, per iteration" $? \
    "$TMP/logcheck.err" "$TMP/logged.err"
run logged-dk --net resnet ${SMALL[resnet]} --iters 2 --alloc darknet --log-allocs "$TMP/dk.log"
awk '$1 == "iter" { it = 1 } $1 == "alloc" && it { bad = 1 } $1 == "free" { bad = 1 }
     END { exit bad || !it }' "$TMP/dk.log" && [ "$(rc_of logged-dk)" -eq 0 ]
check "--log-allocs under darknet allocation: everything at setup, nothing freed" $? "$TMP/dk.log"
run log-bad --net resnet ${SMALL[resnet]} --iters 1 --log-allocs "$TMP/no/such/dir/log"
[ "$(rc_of log-bad)" -eq 2 ] && grep -q 'no/such/dir' "$TMP/log-bad.err"
check "--log-allocs to an unwritable path exits 2" $? "$TMP/log-bad.err"

# 4c. --eval-every: a forward-only pass over the held-out batch after every
#     N-th iteration, at the training batch or at its own; what is learned
#     is the run's without it, and every style evaluates alike.
evals() { awk '$1 == "eval" { print $2, $4, $6 }' "$TMP/$1.out"; }
for alloc in caffe darknet dynamic; do
    run "eval-$alloc" --net resnet ${SMALL[resnet]} --iters $ITERS --alloc "$alloc" --seed 7 --eval-every 2
    run "evalb-$alloc" --net resnet ${SMALL[resnet]} --iters $ITERS --alloc "$alloc" --seed 7 --eval-every 2 \
        --eval-batch 8
done
lines=$(grep -cE '^eval [0-9]+ loss [0-9.]+ accuracy [0-9.]+ time [0-9.]+ ms$' "$TMP/eval-caffe.out")
[ "$(rc_of eval-caffe)" -eq 0 ] && [ "$lines" -eq 3 ] && [ "$(evals eval-caffe | cut -d' ' -f1 | tr '\n' ' ')" = "2 4 6 " ] &&
    [ "$(evals eval-caffe | cut -d' ' -f2 | sort -u | wc -l)" -eq 3 ] &&
    cmp -s <(losses eval-caffe; field eval-caffe checksum) <(losses resnet-caffe; field resnet-caffe checksum)
check "--eval-every 2: an eval line after iterations 2, 4, 6; losses and weights as without it" $? \
    "$TMP/eval-caffe.out" "$TMP/eval-caffe.err"
same=0
for alloc in darknet dynamic; do
    for t in eval evalb; do
        [ "$(rc_of "$t-$alloc")" -eq 0 ] || same=1
        cmp -s <(evals "$t-caffe"; losses "$t-caffe"; field "$t-caffe" checksum) \
               <(evals "$t-$alloc"; losses "$t-$alloc"; field "$t-$alloc" checksum) || same=1
    done
done
check "--eval-every: the three styles evaluate and learn alike, at either evaluation batch" $same \
    "$TMP/eval-darknet.out" "$TMP/evalb-dynamic.out"
[ "$(rc_of evalb-caffe)" -eq 0 ] && [ "$(evals evalb-caffe | wc -l)" -eq 3 ] &&
    ! cmp -s <(evals evalb-caffe) <(evals eval-caffe) &&
    cmp -s <(losses evalb-caffe; field evalb-caffe checksum) <(losses resnet-caffe; field resnet-caffe checksum)
check "--eval-batch 8: other evaluation losses, the same training" $? "$TMP/evalb-caffe.out"

# 4d. --rebatch AT:B: the losses change from iteration AT on, alike in
#     every style, to a smaller and a larger batch; the styles reallocate
#     as their frameworks do (--log-allocs, iteration AT): caffe only when
#     the batch grows, darknet every batch-sized buffer at once, dynamic at
#     the new sizes; the same batch again changes nothing.
for b in 8 24; do
    for alloc in caffe darknet dynamic; do
        run "rb$b-$alloc" --net resnet ${SMALL[resnet]} --iters $ITERS --alloc "$alloc" --seed 7 \
            --rebatch "4:$b" --log-allocs "$TMP/rb$b-$alloc.log"
    done
done
good=0
for b in 8 24; do
    [ "$(rc_of "rb$b-caffe")" -eq 0 ] &&
        cmp -s <(losses "rb$b-caffe" | head -3) <(losses resnet-caffe | head -3) &&
        [ "$(paste <(losses "rb$b-caffe" | tail -3) <(losses resnet-caffe | tail -3) | awk '$1 != $2' | wc -l)" -eq 3 ] &&
        [ "$(field "rb$b-caffe" checksum)" != "$(field resnet-caffe checksum)" ] || good=1
    for alloc in darknet dynamic; do
        cmp -s <(losses "rb$b-caffe"; field "rb$b-caffe" checksum) \
               <(losses "rb$b-$alloc"; field "rb$b-$alloc" checksum) || good=1
    done
done
check "--rebatch 4:8 and 4:24: losses as before until iteration 4, different from it, alike in every style" $good \
    "$TMP/rb8-caffe.out" "$TMP/rb24-darknet.out"
# allocations and frees the trainer makes in iteration 4 (before its eval
# or the next iteration), and the bytes of activations allocated in it
in_iter() { awk -v k="$2" '$1 == "iter" { it = $2; next } it == k && $1 == "alloc" { a++; if ($4 == "activation") b += $3 }
                          it == k && $1 == "free" { f++ } END { print a + 0, f + 0, b + 0 }' "$TMP/$1.log"; }
read -r a8c f8c _ <<<"$(in_iter rb8-caffe 4)"
read -r a24c f24c _ <<<"$(in_iter rb24-caffe 4)"
read -r a8d f8d _ <<<"$(in_iter rb8-darknet 4)"
read -r a3d f3d _ <<<"$(in_iter rb8-darknet 3)"
read -r _ _ b3y <<<"$(in_iter rb24-dynamic 3)"
read -r _ _ b4y <<<"$(in_iter rb24-dynamic 4)"
[ "$a8c" -eq 0 ] && [ "$f8c" -eq 0 ] && [ "$a24c" -gt 0 ] && [ "$f24c" -gt 0 ] &&
    [ "$a8d" -gt 0 ] && [ "$a8d" -eq "$f8d" ] && [ "$a3d" -eq 0 ] && [ "$f3d" -eq 0 ] &&
    [ "$b4y" -eq $((b3y * 3 / 2)) ]
check "--rebatch reallocates per style: caffe keeps buffers for 8 ($a8c/$f8c) and grows them for 24 ($a24c/$f24c), darknet reallocates ($a8d/$f8d), dynamic allocates 1.5x the maps" $? \
    "$TMP/rb8-caffe.log"
run rb16 --net resnet ${SMALL[resnet]} --iters $ITERS --alloc caffe --seed 7 --rebatch 4:16
cmp -s <(losses rb16; field rb16 checksum) <(losses resnet-caffe; field resnet-caffe checksum)
check "--rebatch to the same batch changes nothing" $? "$TMP/rb16.out"

# 5. Kernel launches of host functions: the loss still falls.
run kernels --net resnet ${SMALL[resnet]} --iters $ITERS --kernels --seed 7
check_training kernels $ITERS "--kernels trains through host-function kernel launches"
# On the real CUDA libraries (no GPU needed to get this far) it is refused.
if [ -e /usr/local/cuda/lib64/libcudart.so.13 ] && [ -e /usr/local/cuda/lib64/libcudnn.so.9 ]; then
    LD_LIBRARY_PATH=/usr/local/cuda/lib64 "$SNTRAIN" --net resnet ${SMALL[resnet]} --kernels \
        >"$TMP/real.out" 2>"$TMP/real.err"
    rc=$?
    [ "$rc" -eq 2 ] && grep -q 'needs the simulated device' "$TMP/real.err"
    check "--kernels on the real libraries exits 2 with a message (rc $rc)" $? "$TMP/real.err"
fi

# 6. Full-size networks with compute off on a large device: memory and time.
export SIMGPU_COMPUTE=0
for spec in "vgg --depth 16 --batch 32" "resnet --depth 50 --batch 32"; do
    tag=full-${spec%% *}
    # shellcheck disable=SC2086
    SIMGPU_PROFILE=h100 run "$tag" --net $spec --iters 2
    peak=$(field "$tag" peak)
    ms=$(awk '$1 == "iter" && $2 == 2 { print $6 }' "$TMP/$tag.out")
    [ "$(rc_of "$tag")" -eq 0 ] && [ "${peak:-0}" -gt 1024 ] &&
        awk -v t="${ms:-0}" 'BEGIN { exit !(t > 1) }'
    check "full-size $spec, compute off on h100: peak $peak MiB, $ms ms per iteration" $? \
        "$TMP/$tag.out" "$TMP/$tag.err"
done

# --phase-times: each iteration's data, forward, backward and update times
# follow its line and add up to the iteration's time.
SIMGPU_PROFILE=titanx run phases --net resnet --depth 50 --batch 16 --iters 2 --phase-times
awk '$1 == "iter" { t[$2] = $6 }
     $1 == "phases" { n++; s = $4 + $6 + $8 + $10
                      if ($4 <= 0 || $6 <= 0 || $8 <= 0 || $10 <= 0 || s < t[$2] - 0.01 || s > t[$2] + 0.01) bad++ }
     END { exit !(n == 2 && !bad) }' "$TMP/phases.out" && [ "$(rc_of phases)" -eq 0 ]
check "--phase-times: data, forward, backward and update add up to each iteration's time" $? "$TMP/phases.out"

# 7. Out of memory on the 12 GB K40 where Caffe runs out too.
for spec in "vgg --depth 16 --batch 256" "resnet --depth 152 --batch 64"; do
    tag=oom-${spec%% *}
    # shellcheck disable=SC2086
    SIMGPU_PROFILE=k40 run "$tag" --net $spec --iters 1
    rc=$(rc_of "$tag")
    [ "$rc" -eq 3 ] && grep -qE 'out of memory: cudaMalloc of [0-9]+ bytes .* for .* MiB in use' \
        "$TMP/$tag.err" && ! grep -q '^checksum' "$TMP/$tag.out"
    check "$spec on k40 ends with a clean out-of-memory (rc $rc)" $? "$TMP/$tag.err"
done
# ...and the same network fits where the device is big enough.
SIMGPU_PROFILE=k40 run fits-k40 --net vgg --depth 16 --batch 32 --iters 1
[ "$(rc_of fits-k40)" -eq 0 ]
check "vgg-16 at batch 32 fits the k40" $? "$TMP/fits-k40.err"
unset SIMGPU_COMPUTE

# 8. Bad usage is refused with exit status 2.
"$SNTRAIN" --net lenet >/dev/null 2>&1; r1=$?
"$SNTRAIN" --net resnet --alloc pool >/dev/null 2>&1; r2=$?
"$SNTRAIN" --help | grep -q -- '--dump-graph' && "$SNTRAIN" --help | grep -q -- '--log-allocs' &&
    "$SNTRAIN" --help | grep -q -- '--eval-every' && "$SNTRAIN" --help | grep -q -- '--rebatch AT:B' &&
    "$SNTRAIN" --help | grep -q -- '--prefetch MODE'
r3=$?
"$SNTRAIN" --net resnet --rebatch 4 >/dev/null 2>&1; r4=$?
"$SNTRAIN" --net resnet --eval-batch 4 >/dev/null 2>&1; r5=$?
"$SNTRAIN" --net resnet --eval-every 0 >/dev/null 2>&1; r6=$?
"$SNTRAIN" --net resnet --prefetch sync >/dev/null 2>&1; r7=$?
[ "$r1" -eq 2 ] && [ "$r2" -eq 2 ] && [ "$r3" -eq 0 ] && [ "$r4" -eq 2 ] && [ "$r5" -eq 2 ] && [ "$r6" -eq 2 ] &&
    [ "$r7" -eq 2 ]
check "unknown network, style or prefetch mode, --rebatch without AT:B, --eval-batch alone or --eval-every 0 exit 2; --help lists the options" $?

echo "1..$n"
