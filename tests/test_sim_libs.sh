#!/usr/bin/env bash
# SIMGPU_COMPUTE=libs with kernels nvcc builds (tests/nvcc_libs.cu), which
# have no CPU body on the simulated device: their launches run a
# deterministic stand-in (sim/standin.c) that writes, into the first word
# of every pointer the kernel may write, a value derived from the kernel's
# name, its by-value arguments and the first words of its pointers. The
# program checks the stand-in through every launch path and graph replays;
# here it runs twice (the same words both times: deterministic across
# processes), with compute on (the launches still fail for want of a kernel
# image) and off (they still write nothing), with a value the simulator
# does not know (reported, taken as on), the device time of a launch
# is the nominal one of compute off, and under libsn (trace, and manage,
# where libsn serves the memory from its own arena) the words are the
# same. Skipped, with a note, where nvcc is not installed.
set -u
. "$(dirname "$0")/lib.sh"
NVCC=${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}
if [ ! -x "$NVCC" ]; then
    echo "ok 1 # SKIP $NVCC not found"
    exit 0
fi
cuda_lib=$(dirname "$(dirname "$NVCC")")/lib64
bin="$tmp/nvcc_libs"
"$NVCC" -cudart shared -o "$bin" "$(dirname "$0")/nvcc_libs.cu" -L"$cuda_lib/stubs" -lcuda >"$tmp/nvcc.log" 2>&1
check "nvcc builds tests/nvcc_libs.cu" "[ -x '$bin' ]" || { sed 's/^/# /' "$tmp/nvcc.log"; exit 1; }

# run NAME COMPUTE MODE [ENV...]: the program under SIMGPU_COMPUTE=COMPUTE,
# told MODE; output in $tmp/NAME.out, exit status in $tmp/NAME.rc.
run() {
    local name=$1 compute=$2 mode=$3
    shift 3
    env SIMGPU_COMPUTE="$compute" SIMGPU_HAZARDS=fatal LD_PRELOAD="$SAN_PRELOAD" "$@" "$bin" "$mode" \
        >"$tmp/$name.out" 2>&1
    echo $? >"$tmp/$name.rc"
    sed "s/^/# $name: /" "$tmp/$name.out" | grep -v '^# [a-z0-9-]*: ok '
}
passes() { [ "$(cat "$tmp/$1.rc")" = 0 ] && grep -q '^0 failures$' "$tmp/$1.out" && ! grep -q '^simgpu:' "$tmp/$1.out"; }
words() { grep '^word ' "$tmp/$1.out"; }

run libs libs libs
check "libs: every check passes ($(grep -c '^ok ' "$tmp/libs.out") of them)" "passes libs"
check "libs: words written by the stand-in were seen" "[ \$(words libs | wc -l) -ge 10 ]"
run libs2 libs libs
check "libs, a second run: the same words (deterministic across processes)" \
    "passes libs2 && diff <(words libs) <(words libs2) >/dev/null"
run on 1 on
check "compute on: the launches still fail for want of a kernel image" "passes on"
run off 0 off
check "compute off: the launches are still modelled and write nothing" "passes off"
check "libs: a launch takes the nominal device time of compute off ($(grep '^time' "$tmp/off.out"))" \
    "[ -n \"\$(grep '^time' '$tmp/off.out')\" ] && [ \"\$(grep '^time' '$tmp/libs.out')\" = \"\$(grep '^time' '$tmp/off.out')\" ]"

run bogus bogus on
check "SIMGPU_COMPUTE=bogus: reported, and taken as 1" \
    "grep -q '^simgpu: SIMGPU_COMPUTE=bogus not understood (use 0, 1 or libs); using 1' '$tmp/bogus.out' &&
     [ \"\$(cat '$tmp/bogus.rc')\" = 0 ] && grep -q '^0 failures$' '$tmp/bogus.out'"

if [ -f "$BUILD_DIR/libsn.so" ]; then
    for m in trace manage; do
        SN_MODE=$m SN_REPORT="$tmp/$m.txt" run "sn-$m" libs libs LD_PRELOAD="$SN_PRELOAD"
        check "libs under libsn ($m): every check passes, the same words" \
            "passes sn-$m && diff <(words libs) <(words sn-$m) >/dev/null"
    done
fi
