#!/usr/bin/env bash
# test_sn_memory.sh — libsn's own memory stays flat over a long run. Once
# the profile is complete, libsn keeps running totals and a cursor into the
# learned iteration instead of the call log, and recycles the records of
# allocations a framework makes anew every iteration. So the reference
# trainer (ResNet-8, compute off) under libsn, in trace and in manage mode
# and in every allocation style, must have the same peak resident memory
# after 3000 iterations as after 100, up to a small bound, beyond what the
# trainer without libsn grows by itself. In trace mode the report must
# count all 3000 iterations and say its tables come from the profile.
# The peak comes from sn_peak_rss (the trainer's own ru_maxrss). Under a
# sanitizer, resident memory measures the sanitizer's allocator: there
# only the runs and the report are checked.
# Prints TAP-like "ok"/"not ok" lines.
set -u
. "$(dirname "$0")/lib.sh"
trainer="$BUILD_DIR/sntrain"
if ! command -v python3 >/dev/null; then
    echo "ok - # skip: python3 not installed"
    exit 0
fi
python3 - "$trainer" "$SN_PRELOAD" "$tmp" "${SANITIZE:-}" "$BUILD_DIR/tests/sn_peak_rss" <<'PY'
import os, re, subprocess, sys

trainer, preload, tmp, sanitizer, peak_rss = sys.argv[1:6]
SHORT, LONG = 100, (1000 if sanitizer else 3000)
BOUND = 2 << 20  # bytes
n = 0

def check(ok, desc, detail=""):
    global n
    n += 1
    print(("ok" if ok else "not ok") + " %d - %s" % (n, desc))
    if not ok and detail:
        print("".join("# " + l + "\n" for l in detail.splitlines()[-8:]), end="")

def run(style, iters, env_extra):
    """Exit code, peak resident bytes and stderr of one trainer run."""
    env = dict(os.environ, SIMGPU_COMPUTE="0", **env_extra)
    err_path, peak_path = os.path.join(tmp, "err"), os.path.join(tmp, "peak")
    with open(err_path, "w") as err:
        rc = subprocess.call([peak_rss, peak_path, trainer, "--net", "resnet", "--depth", "8",
                              "--input", "32", "--batch", "2", "--iters", str(iters), "--alloc", style],
                             stdout=subprocess.DEVNULL, stderr=err, env=env)
    with open(err_path) as err:
        text = err.read()
    with open(peak_path) as f:
        peak = int(f.read())
    return rc, peak, text

for style in ("caffe", "darknet", "dynamic"):
    plain = [run(style, it, {}) for it in (SHORT, LONG)]
    plain_growth = plain[1][1] - plain[0][1]
    for mode in ("trace", "manage"):
        env = {"SN_MODE": mode, "LD_PRELOAD": preload}
        short, long_ = run(style, SHORT, env), run(style, LONG, env)
        tag = "%s/%s" % (style, mode)
        if short[0] != 0 or long_[0] != 0:
            check(False, "%s: the trainer failed (exit %d, %d)" % (tag, short[0], long_[0]), long_[2])
            continue
        growth = (long_[1] - short[1]) - plain_growth
        per_iter = growth / (LONG - SHORT)
        desc = ("%s: peak RSS %d KiB after %d iterations, %d KiB after %d (%+.0f B per iteration "
                "beyond the trainer's own %+d KiB)" % (tag, short[1] >> 10, SHORT, long_[1] >> 10, LONG,
                                                      per_iter, plain_growth >> 10))
        if sanitizer:
            print("ok %d - %s # skip bound under a sanitizer" % (n + 1, desc))
            n += 1
        else:
            check(growth < BOUND, desc + ", bound %d KiB" % (BOUND >> 10))
        if mode == "trace":
            text = long_[2]
            m = re.search(r"^libsn: iteration +period \d+ steps; (\d+) iterations seen", text, re.M)
            t = re.search(r"^libsn: tables +from iterations 1-(\d+) of (\d+) \(profiled", text, re.M)
            check(m is not None and int(m.group(1)) == LONG and t is not None and
                  int(t.group(2)) == LONG and 0 < int(t.group(1)) < 20,
                  "%s: the report counts all %d iterations; its tables come from the profile" % (tag, LONG),
                  text)
        else:
            check("trace report" not in long_[2], "%s: no report in manage mode" % tag, long_[2])
PY
