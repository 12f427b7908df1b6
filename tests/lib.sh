# tests/lib.sh — common set-up of the shell tests, sourced by them: where the
# build is, the simulated libraries on LD_LIBRARY_PATH, a scratch folder
# removed at exit, and what to preload. Under a sanitizer its runtime must be
# loaded first: SAN_PRELOAD is that runtime alone (for a program built
# without the sanitizer that loads the instrumented simulated libraries),
# SN_PRELOAD is the runtime followed by libsn. check DESC CONDITION prints
# one TAP line for a condition evaluated as shell code; mask_trainer_times
# filters the trainer's timings out of its output; peak_of runs a program
# under trace mode for its peak; have_bytes fails a test whose report lacks
# a size it needs.
BUILD_DIR=${SN_TEST_BUILD:-$PWD/${BUILD:-build}}
export LD_LIBRARY_PATH="$BUILD_DIR/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
SAN_PRELOAD=""
case "${SANITIZE:-}" in
address) SAN_PRELOAD="$(gcc -print-file-name=libasan.so)" ;;
thread) SAN_PRELOAD="$(gcc -print-file-name=libtsan.so)" ;;
undefined) SAN_PRELOAD="$(gcc -print-file-name=libubsan.so)" ;;
esac
SN_PRELOAD="${SAN_PRELOAD:+$SAN_PRELOAD }$BUILD_DIR/libsn.so"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
# The reference trainer's simulated timings (per iteration, per run,
# images/s) masked on stdin: they vary with libsn's timing events and with
# the trainer's data-loader thread, while losses and checksums must not.
mask_trainer_times() { sed -E 's/[0-9]+\.[0-9]+ ms/T ms/g; s/^images\/s .*/images\/s (masked)/'; }
# peak_of PROG ARGS...: bytes of the run's peak as allocated, from a
# trace-mode report of PROG run with ARGS ($tmp/peak.json)
peak_of() {
    SN_MODE=trace SN_REPORT="$tmp/peak.json" LD_PRELOAD="$SN_PRELOAD" "$@" >/dev/null 2>&1
    python3 - "$tmp/peak.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
d = r["devices"][0] if "devices" in r else r
print(int(d["run"]["peak_bytes"]))
PY
}
# have_bytes DESC NAME VALUE: whether VALUE, read from a report, is a whole
# positive number of bytes; if not, prints "not ok - DESC: NAME missing
# from the report" and fails. A test must not run on with a default in its
# place: libsn takes an empty or malformed budget as the whole device, and
# the run would pass without testing the budget it names.
have_bytes() {
    [[ "$3" =~ ^[1-9][0-9]*$ ]] && return 0
    n=$((n + 1))
    echo "not ok $n - $1: $2 missing from the report${3:+ (got '$3')}"
    return 1
}
check() { n=$((n + 1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; return 1; fi; }
