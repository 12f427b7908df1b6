#!/usr/bin/env bash
# sn_overhead.sh — instructions libsn itself spends on one intercepted call,
# measured with callgrind on the simulated device. Collection is toggled on
# the intercepted function's name (--collect-atstart=no --toggle-collect):
# under LD_PRELOAD it switches on when libsn's wrapper is entered, off while
# the real (simulated) function it forwards to runs, and back on until the
# wrapper returns, so the count is the wrapper's own work, with the
# locks, allocations and CUDA calls libsn makes for it (an event recorded,
# a stream wait) and without the work of the call itself. Without libsn
# the same toggle counts the simulated library's cost of the call.
#
# Each program runs twice with different numbers of calls and the
# difference per extra call is reported, which cancels start-up and
# learning. The steady columns run the calls inside a learned training
# iteration (sn_overhead N K: N iterations with K calls each) and also
# subtract two values of K, so that what libsn does once an iteration
# (planned moves, timing the iteration) cancels wherever the iteration
# begins. Writes the table to bench/results/libsn_overhead.md (or $1), and
# only if every measurement succeeded: a failed one stops the script with a
# non-zero status and leaves the table as it was.
set -eu
# a measurement that fails inside a command substitution stops the script
shopt -s inherit_errexit
BUILD=${BUILD:-build}
out=${1:-bench/results/libsn_overhead.md}
case $BUILD in /*) ;; *) BUILD="$PWD/$BUILD" ;; esac
export LD_LIBRARY_PATH="$BUILD/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Plans made on the framework's thread, so that each starts at the same
# call in every run and the tables are reproducible (docs/decisions.md).
export SN_PLAN_WAIT=1
export SIMGPU_COMPUTE=0
# valgrind cannot reserve the address space of a full-size simulated device
export SIMGPU_MEM=1G
bin="$BUILD/sn_overhead"
lib="$BUILD/libsn.so"
N1=1000 N2=3000   # calls in a row, or iterations
K1=1 K2=3         # calls per iteration
command -v valgrind >/dev/null || { echo "sn_overhead.sh: valgrind is not installed" >&2; exit 1; }
for f in "$bin" "$lib"; do
    [ -e "$f" ] || { echo "sn_overhead.sh: $f is missing (make all-targets); no table written" >&2; exit 1; }
done
trap 'rm -f "$out.tmp"' EXIT

ir() { # mode call toggles args...
    local mode=$1 call=$2 toggles=$3 pre="" log t
    shift 3
    [ "$mode" != plain ] && pre="$lib"
    local opts=(--tool=callgrind --callgrind-out-file=/dev/null --collect-atstart=no)
    for t in $toggles; do opts+=("--toggle-collect=$t"); done
    local policy=auto workspace=auto
    [ "$mode" = demand ] && mode=manage policy=lru
    [ "$call" = convkeep ] && call=conv workspace=keep
    if ! log=$(SN_MODE=${mode/plain/off} SN_POLICY=$policy SN_WORKSPACE=$workspace SN_REPORT=off LD_PRELOAD=$pre \
        valgrind "${opts[@]}" "$bin" "$call" "$@" 2>&1); then
        echo "sn_overhead.sh: $call ($mode, $*) failed:" >&2
        echo "$log" | grep -v '^==' >&2
        exit 1
    fi
    log=$(echo "$log" | sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
    [[ "$log" =~ ^[0-9]+$ ]] || { echo "sn_overhead.sh: $call ($mode, $*): no instruction count from callgrind" >&2; exit 1; }
    echo "$log"
}

in_a_row() { # mode call toggles: per extra call
    local a b
    a=$(ir "$1" "$2" "$3" $N1)
    b=$(ir "$1" "$2" "$3" $N2)
    echo $(( (b - a) / (N2 - N1) ))
}

in_iterations() { # mode call toggles: per extra call inside a learned iteration
    local a1 b1 a2 b2
    a1=$(ir "$1" "$2" "$3" $N1 $K1)
    b1=$(ir "$1" "$2" "$3" $N2 $K1)
    a2=$(ir "$1" "$2" "$3" $N1 $K2)
    b2=$(ir "$1" "$2" "$3" $N2 $K2)
    echo $(( ((b2 - a2) - (b1 - a1)) / ((N2 - N1) * (K2 - K1)) ))
}

{
    echo "# libsn: instructions per intercepted call"
    echo
    echo "Measured with callgrind (valgrind $(valgrind --version | sed 's/valgrind-//')) on the simulated"
    echo "device (SIMGPU_COMPUTE=0), $(date -u +%Y-%m-%d), by bench/sn_overhead.sh. Collection is"
    echo "switched on and off at the intercepted function's name, so the libsn columns count"
    echo "libsn's wrapper alone (with the locks, allocations and CUDA calls it makes for the"
    echo "call), never the simulated library's work of the call, which is the first column."
    echo "Each figure is the difference per extra call between runs with $N1 and $N2 calls"
    echo "(start-up and initialisation cancel out)."
    echo "Goals: pass-through <= 150, trace mode and manage mode with nothing moving <= 1500."
    echo
    echo "Trace mode has two regimes. While it profiles (the calls made in a row: no"
    echo "iteration is ever learned) every step is also timed with two events on its"
    echo "stream, and libsn first asks whether the stream is being captured into a graph"
    echo "(cudaPeekAtLastError + cudaStreamIsCapturing); the simulated runtime's event and"
    echo "query calls cost several hundred instructions each, so that column is dominated"
    echo "by them. The steady columns are the regime of a training run after its"
    echo "profile: the calls are made inside a tiny training loop (activation forward,"
    echo "the loss read by the host, activation backward, then the calls) that libsn has"
    echo "learned as the iteration, $N1 and $N2 iterations with $K1 and $K2 calls each;"
    echo "the difference in both cancels what libsn does once an iteration (the plan's"
    echo "moves due at its start, the events that time it), leaving one more call."
    echo "In trace mode the call's signature advances the learned iteration's cursor"
    echo "and its accesses are recalled from the thread's memo (no registry lock while"
    echo "no allocation was made or freed since). In manage mode (the default budget:"
    echo "nothing moves) the plan made for the iteration is followed: the moves due"
    echo "at the call's step are looked up, and under the arena's lock the blocks the"
    echo "call touches and its handle's own memory are pinned, marked used, counted"
    echo "towards the prediction of dead contents and found resident; when the call"
    echo "returns they are unpinned without the lock. A convolution also gets the"
    echo "plan's algorithm, with its workspace from the arena's scratch: the wrapper"
    echo "hands its arguments in a record, with a function that makes the real call,"
    echo "to libsn, which calls it with the algorithm to run (one crossing each way;"
    echo "about 65 instructions more than a wrapper making the call itself,"
    echo "docs/decisions.md); where libsn never changes a convolution (trace mode,"
    echo "SN_WORKSPACE=keep, SN_POLICY=lru) the wrapper makes the call itself."
    echo "Without a plan (SN_POLICY=lru: demand residency) the"
    echo "same check runs without the plan's lookups."
    echo "A kernel launched through the driver (cuLaunchKernel) is described"
    echo "from cuFuncGetParamInfo's layout as a runtime launch is; let by"
    echo "(SN_MODE=off) it costs the few instructions more of passing eleven"
    echo "arguments on instead of seven."
    echo "Its cudaMalloc and cudaFree are served by the arena (a freed block is"
    echo "handed to the next allocation of its size), and its cudaFree waits for the"
    echo "device as the real one does."
    echo
    echo "| call | without libsn (the call's own) | SN_MODE=off | trace, profiling | trace, steady | manage, steady | manage, steady, SN_POLICY=lru |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
} >"$out.tmp"
for call in memset saxpy sgemm addtensor conv convkeep launch culaunch malloc; do
    case $call in
    memset) desc="cudaMemsetAsync" tg=cudaMemsetAsync ;;
    saxpy) desc="cublasSaxpy" tg=cublasSaxpy_v2 ;;
    sgemm) desc="cublasSgemm" tg=cublasSgemm_v2 ;;
    addtensor) desc="cudnnAddTensor" tg=cudnnAddTensor ;;
    conv) desc="cudnnConvolutionForward" tg=cudnnConvolutionForward ;;
    convkeep) desc="cudnnConvolutionForward, SN_WORKSPACE=keep" tg=cudnnConvolutionForward ;;
    launch) desc="cudaLaunchKernel (host kernel)" tg=cudaLaunchKernel ;;
    culaunch) desc="cuLaunchKernel (the same kernel, through the driver)" tg=cuLaunchKernel ;;
    malloc) desc="cudaMalloc + cudaFree (2 calls)" tg="cudaMalloc cudaFree" ;;
    esac
    plain=$(in_a_row plain $call "$tg")
    off=$(in_a_row off $call "$tg")
    trace=$(in_a_row trace $call "$tg")
    steady=$(in_iterations trace $call "$tg")
    manage=$(in_iterations manage $call "$tg")
    demand=$(in_iterations demand $call "$tg")
    echo "| $desc | $plain | $off | $trace | $steady | $manage | $demand |" >>"$out.tmp"
    echo "$desc: plain $plain, off $off, profiling $trace, steady $steady, manage $manage, lru $demand" >&2
done
mv "$out.tmp" "$out"
echo "sn_overhead.sh: wrote $out" >&2
