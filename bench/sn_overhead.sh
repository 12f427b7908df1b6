#!/usr/bin/env bash
# sn_overhead.sh — instructions libsn adds to one intercepted call, measured
# with callgrind on the simulated device. For each kind of call the program
# sn_overhead makes it N1 and N2 times, without libsn and under LD_PRELOAD in
# SN_MODE=off (pass-through) and SN_MODE=trace; the added instructions per
# call are ((I_libsn(N2) - I_libsn(N1)) - (I_plain(N2) - I_plain(N1))) / (N2 - N1),
# which cancels start-up and initialisation. The steady column compares with
# the plain program run after the same warm-up loop: the simulated libraries'
# own cost per call differs after it. Writes the table to
# bench/results/libsn_overhead.md (or $1).
set -eu
BUILD=${BUILD:-build}
out=${1:-bench/results/libsn_overhead.md}
export LD_LIBRARY_PATH="$PWD/$BUILD/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SIMGPU_COMPUTE=0
# valgrind cannot reserve the address space of a full-size simulated device
export SIMGPU_MEM=1G
bin="$PWD/$BUILD/sn_overhead"
lib="$PWD/$BUILD/libsn.so"
N1=1000
N2=3000
command -v valgrind >/dev/null || { echo "sn_overhead.sh: valgrind is not installed" >&2; exit 1; }

ir() { # mode call n [warm]
    local mode=$1 call=$2 n=$3 warm=${4:-} pre=""
    [ "$mode" != plain ] && pre="$lib"
    local log
    if ! log=$(SN_MODE=${mode/plain/off} SN_REPORT=off LD_PRELOAD=$pre \
        valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$call" "$n" $warm 2>&1); then
        echo "sn_overhead.sh: $call ($mode, $n calls) failed:" >&2
        echo "$log" | grep -v '^==' >&2
        exit 1
    fi
    echo "$log" | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

{
    echo "# libsn: instructions added per intercepted call"
    echo
    echo "Measured with callgrind (valgrind $(valgrind --version | sed 's/valgrind-//')) on the simulated"
    echo "device (SIMGPU_COMPUTE=0), $(date -u +%Y-%m-%d), by bench/sn_overhead.sh: the marginal"
    echo "instructions of one more call with libsn preloaded, minus the same without libsn"
    echo "(calls $N1 and $N2 times; start-up and initialisation cancel out)."
    echo "Goals: pass-through <= 150, trace mode and manage mode with nothing moving <= 1500."
    echo
    echo "Trace mode has two regimes. While it profiles (until the training iteration"
    echo "has repeated SN_PROFILE_ITERS + 1 times) every step is also timed with two"
    echo "events on its stream, and libsn first asks whether the stream is being"
    echo "captured into a graph (cudaPeekAtLastError + cudaStreamIsCapturing); the"
    echo "simulated runtime's event and query calls cost several hundred instructions"
    echo "each, so that column is dominated by them. After the profile (\"steady\":"
    echo "the program first runs a short training loop) steps are no longer timed:"
    echo "libsn describes each call from its per-thread caches of descriptors and"
    echo "handles, recalls the accesses it resolved for the same ranges from its"
    echo "per-thread memo (no registry lock while no allocation was made or freed"
    echo "since) and records the call under its device's lock (this program's"
    echo "two-step loop is not an iteration the model can place, so its calls are"
    echo "still appended to the log; a run that follows its learned iteration only"
    echo "moves a cursor). That column is compared with the program run without"
    echo "libsn after the same loop, since the simulated libraries' own cost per"
    echo "call changes after it (by up to about 160 instructions; the first column"
    echo "is without the loop). Manage mode (steady, the default budget: nothing"
    echo "moves) adds the residency check to the trace mode's work: under the"
    echo "arena's lock, the blocks the call touches (recalled with its accesses,"
    echo "each block once) and its handle's own memory are collected, then one pass"
    echo "over them pins them, marks them used, counts the use towards the"
    echo "prediction of dead contents and finds them resident; when the call"
    echo "returns they are unpinned without the lock."
    echo "Its cudaMalloc and cudaFree are served by the arena (a freed block is"
    echo "handed to the next allocation of its size), and its cudaFree waits for the"
    echo "device as the real one does."
    echo
    echo "| call | without libsn | SN_MODE=off (added) | trace, steady (added) | trace, profiling (added) | manage, steady (added) |"
    echo "|---|---:|---:|---:|---:|---:|"
} >"$out.tmp"
for call in memset saxpy sgemm addtensor conv launch malloc; do
    declare -A per
    for mode in plain plainwarm off trace steady manage; do
        m=$mode warm=""
        [ $mode = plainwarm ] && m=plain warm=warm
        [ $mode = steady ] && m=trace warm=warm
        [ $mode = manage ] && warm=warm
        a=$(ir $m $call $N1 $warm)
        b=$(ir $m $call $N2 $warm)
        per[$mode]=$(( (b - a) / (N2 - N1) ))
    done
    off=$(( per[off] - per[plain] ))
    trace=$(( per[trace] - per[plain] ))
    steady=$(( per[steady] - per[plainwarm] ))
    manage=$(( per[manage] - per[plainwarm] ))
    desc=$call
    case $call in
    memset) desc="cudaMemsetAsync" ;;
    saxpy) desc="cublasSaxpy" ;;
    sgemm) desc="cublasSgemm" ;;
    addtensor) desc="cudnnAddTensor" ;;
    conv) desc="cudnnConvolutionForward" ;;
    launch) desc="cudaLaunchKernel (host kernel)" ;;
    malloc) desc="cudaMalloc + cudaFree (2 calls)" ;;
    esac
    echo "| $desc | ${per[plain]} | $off | $steady | $trace | $manage |" >>"$out.tmp"
    echo "$desc: plain ${per[plain]}, off +$off, steady +$steady, profiling +$trace, manage +$manage" >&2
done
mv "$out.tmp" "$out"
echo "sn_overhead.sh: wrote $out" >&2
