# fullsize_lib.sh — what the full-size benches on the simulated 12 GB device
# share (bench/policy_fullsize.sh, bench/oversubscription.sh): reading a
# trainer run's steady state and a failed run's reason. Sourced; the caller
# sets $tmp (its scratch folder).

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
