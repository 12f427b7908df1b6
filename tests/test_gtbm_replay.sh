#!/usr/bin/env bash
# test_gtbm_replay.sh — the trace replay of the placement engine
# (build/gtbm_replay): peaks, fragmentation and smallest pools of a
# hand-written trace worked out by hand, classes derived from sntrain-style
# facts, malformed traces refused, a pool too small reported, and a real
# trainer log replayed.
set -u
. "$(dirname "$0")/lib.sh"
REPLAY="$BUILD_DIR/gtbm_replay"
SNTRAIN="$BUILD_DIR/sntrain"
MiB=1048576

# Feature maps of 4, 5 and 6 MiB, each followed by a tensor held longer (the
# sequence of tests/test_sn_gtbm.c): best fit pins a hole below every held
# tensor, GTBM keeps them at the top.
cat >"$tmp/fork.trace" <<'EOF'
# growing feature maps, each followed by a longer-held tensor
alloc x1 4194304 movable
alloc t1 4194304 temp
free x1
alloc x2 5242880 movable
alloc t2 5242880 temp
free x2
alloc x3 6291456 movable
alloc t3 6291456 temp
free x3
EOF
"$REPLAY" --min-pool "$tmp/fork.trace" >"$tmp/fork.out" 2>&1
rc=$?
check "a hand-written trace replays (rc $rc)" '[ $rc -eq 0 ]'
check "best fit: peak 30 MiB, 9 MiB of holes at the peak, needs a 30 MiB pool" \
    "grep -qx 'policy best-fit peak $((30 * MiB)) frag $((9 * MiB)) live $((21 * MiB)) min-pool $((30 * MiB))' '$tmp/fork.out'"
check "GTBM: peak 21 MiB = the live peak, no holes, runs in a 21 MiB pool" \
    "grep -qx 'policy gtbm peak $((21 * MiB)) frag 0 live $((21 * MiB)) min-pool $((21 * MiB))' '$tmp/fork.out' &&
     grep -qx 'live-peak $((21 * MiB))' '$tmp/fork.out'"
"$REPLAY" --policy best-fit --capacity $((21 * MiB)) "$tmp/fork.trace" >"$tmp/small.out" 2>&1
rc=$?
check "best fit in a 21 MiB pool fails at the 7th event and exits 3 (rc $rc)" \
    "[ $rc -eq 3 ] && grep -q '^policy best-fit .* failed 7$' '$tmp/small.out'"

# sntrain's form: the class follows from the facts on the line and from
# where the iteration lines fall.
cat >"$tmp/facts.trace" <<'EOF'
alloc 0x100 4194304 weight 1 0 0 conv.weight
iter 1
alloc 0x200 2097152 activation 1 0 0 conv.data
alloc 0x300 2097152 activation 2 0 0 fork.data
alloc 0x400 2097152 activation 1 1 0 join.data
alloc 0x500 2097152 gradient 1 0 1 fork.diff
alloc 0x600 1024 activation 1 0 0 fc.data
alloc 0x700 2097152 momentum 1 0 0 conv.weight.momentum
free 0x200
free 0x300
free 0x400
free 0x500
free 0x600
alloc 0x200 2097152 workspace 1 0 0 conv.workspace
free 0x200
iter 2
EOF
"$REPLAY" "$tmp/facts.trace" >"$tmp/facts.out" 2>&1
rc=$?
check "classes from facts: weight, momentum, small -> long; fork, join, summed gradient -> temp; the rest movable" \
    "[ $rc -eq 0 ] && grep -qx 'class long allocs 3 bytes 6292480' '$tmp/facts.out' &&
     grep -qx 'class movable allocs 2 bytes 4194304' '$tmp/facts.out' &&
     grep -qx 'class temp allocs 3 bytes 6291456' '$tmp/facts.out' &&
     grep -qx 'trace $tmp/facts.trace allocs 8 frees 6 iterations 2' '$tmp/facts.out'"

printf 'alloc a 1024 movable\nfree b\n' >"$tmp/bad1.trace"
printf 'alloc a 1024 sideways\n' >"$tmp/bad2.trace"
printf 'alloc a 1024 movable\nalloc a 1024 movable\n' >"$tmp/bad3.trace"
"$REPLAY" "$tmp/bad1.trace" >/dev/null 2>"$tmp/bad1.err"; r1=$?
"$REPLAY" "$tmp/bad2.trace" >/dev/null 2>"$tmp/bad2.err"; r2=$?
"$REPLAY" "$tmp/bad3.trace" >/dev/null 2>"$tmp/bad3.err"; r3=$?
"$REPLAY" --policy worst-fit "$tmp/fork.trace" >/dev/null 2>&1; r4=$?
check "malformed traces exit 1 naming the line, bad usage exits 2 ($r1 $r2 $r3 $r4)" \
    "[ $r1 -eq 1 ] && [ $r2 -eq 1 ] && [ $r3 -eq 1 ] && [ $r4 -eq 2 ] &&
     grep -q ':2: free of b' '$tmp/bad1.err' && grep -q ':1: malformed' '$tmp/bad2.err' &&
     grep -q ':2: a allocated twice' '$tmp/bad3.err'"

# A real log: the trainer's per-iteration allocator on a small ResNet.
SIMGPU_COMPUTE=0 "$SNTRAIN" --net resnet --depth 20 --input 32 --width 16 --batch 32 --iters 2 \
    --alloc dynamic --log-allocs "$tmp/r20.log" >"$tmp/r20.train" 2>&1
rc=$?
"$REPLAY" --min-pool "$tmp/r20.log" >"$tmp/r20.out" 2>&1
rrc=$?
peak=$(awk '$1 == "peak" { print $2 * 1048576 }' "$tmp/r20.train")
check "a trainer log replays: every policy's pool at least the live peak, which is within sntrain's (rc $rc/$rrc)" \
    "[ $rc -eq 0 ] && [ $rrc -eq 0 ] && awk -v peak='$peak' '
        \$1 == \"trace\" { ok = \$8 == 2 }
        \$1 == \"live-peak\" { live = \$2 }
        \$1 == \"class\" && \$4 > 0 { classes++ }
        \$1 == \"policy\" { n++; if (\$9 != \"min-pool\" || \$10 < live || \$4 < \$8) bad = 1 }
        END { exit !(ok && n == 3 && !bad && classes == 3 && live > 0 && live <= peak) }' '$tmp/r20.out'"

echo "1..$n"
