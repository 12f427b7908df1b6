# fullsize_lib.sh — what the full-size benches on the simulated 12 GB device
# share (bench/policy_fullsize.sh, bench/oversubscription.sh): the
# environment they run in, reading a trainer run's steady state and a
# failed run's reason. Sourced, then fullsize_setup.

# fullsize_setup SCRIPT: the simulated 12 GB titanx (PCIe 3; compute off)
# with SN_HOST_LIMIT=128G of pinned host memory, as a training server of
# that size would have; plans made on the framework's thread, so that each
# starts at the same call in every run and the tables are reproducible
# (docs/decisions.md); $SNTRAIN and $LIBSN, checked; $tmp, a scratch folder
# removed at exit. fail stops the script, naming it: no table is written.
fullsize_setup() {
    SCRIPT=$1
    export LD_LIBRARY_PATH="$PWD/$BUILD/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export SN_PLAN_WAIT=1
    SNTRAIN="$PWD/$BUILD/sntrain"
    LIBSN="$PWD/$BUILD/libsn.so"
    export SIMGPU_PROFILE=titanx SIMGPU_COMPUTE=0
    unset SIMGPU_MEM SN_BUDGET SN_POLICY SN_MODE SN_WORKSPACE
    export SN_HOST_LIMIT=128G
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    local f
    for f in "$SNTRAIN" "$LIBSN"; do [ -e "$f" ] || fail "$f is missing (make all-targets)"; done
}
fail() { echo "$SCRIPT: $*; no table written" >&2; exit 1; }

# steady-state ms per iteration: the mean of the last three
steady_of() {
    awk '/^iter [0-9]+ loss/ { t[n++] = $6 } END { if (n >= 3) printf "%.3f", (t[n-1]+t[n-2]+t[n-3]) / 3 }' "$1"
}

# What stopped the run whose stderr is $1 (default $tmp/fail.err), in a few
# words, from libsn's error.
why_failed() {
    python3 - "${1:-$tmp/fail.err}" <<'PY'
import re, sys
try:
    text = open(sys.argv[1]).read()
except OSError:
    text = ""
m = re.search(r"libsn: out of memory: device \d+: (.*?) needs [0-9.]+ MiB resident at once, which fits "
              r"SN_BUDGET .*? SN_HOST_LIMIT \(([0-9.]+) MiB\) is used up", text)
if m:
    print("host memory: making room for %s needs more than SN_HOST_LIMIT (%.0f GiB) of pinned memory"
          % (m.group(1), float(m.group(2)) / 1024))
    sys.exit()
m = re.search(r"libsn: out of memory: device \d+: (.*?) needs ([0-9.]+) MiB resident at once", text)
if m:
    print("one step's working set: %s needs %.0f MiB at once" % (m.group(1), float(m.group(2))))
    sys.exit()
m = re.search(r"does not fit: ([0-9.]+) MiB allocated already.*SN_HOST_LIMIT \(([0-9.]+) MiB\)", text)
if m:
    print("host memory: %.0f GiB allocated, more than the budget plus SN_HOST_LIMIT (%.0f GiB)"
          % (float(m.group(1)) / 1024, float(m.group(2)) / 1024))
    sys.exit()
if "needs address space" in text:
    print("address space (cuMemAddressReserve refused)")
    sys.exit()
lines = [l for l in text.splitlines() if "out of memory" in l or "error" in l]
print((lines[0] if lines else "did not finish").replace("|", "/")[:100])
PY
}
