#!/usr/bin/env bash
# test_code_shape.sh — the shape the tree promises a reader (docs/DESIGN.md),
# held by grep-level checks so that it cannot drift:
#  1. Layers include only what lies below them: shim -> core -> manage ->
#     tracer -> policy -> allocator -> common, with policy/ pure (policy
#     and common only: the vocabulary it shares with the allocator lives in
#     common/), tracer/ above policy only, and the wrappers (shim/) seeing
#     the core and the common vocabulary alone. No file outside shim/
#     includes a shim header (tests and benches included).
#  2. Each of common/, allocator/, policy/ and tracer/ links into a unit
#     test of its own with no shim/ object (and no stand-in for the shim).
#  3. No function of libsn is longer than 150 lines (from its opening brace
#     to the closing one at column 0) or takes more than 6 parameters. The
#     exported wrappers are exempt: their parameters are the CUDA, cuDNN
#     and cuBLAS signatures they stand in for (common/hooks.def lists
#     them).
# Prints TAP-like "ok"/"not ok" lines.
set -u
cd "$(dirname "$0")/.." || exit 1
n=0
check() { n=$((n + 1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; return 1; fi; }

python3 - <<'PY' >"${TMPDIR:-/tmp}/sn_shape.$$" 2>&1
import glob, os, re, sys
allowed = {
    "common": {"common"},
    "allocator": {"allocator", "common"},
    "policy": {"policy", "common"},
    "tracer": {"tracer", "policy", "common"},
    "manage": {"manage", "tracer", "policy", "allocator", "common"},
    "core": {"core", "manage", "tracer", "policy", "allocator", "common"},
    "shim": {"shim", "core", "common"},
}
bad = []
for layer, ok in allowed.items():
    for f in sorted(glob.glob(layer + "/*.[ch]")):
        for i, line in enumerate(open(f), 1):
            m = re.match(r'\s*#\s*include\s+"([a-z]+)/', line)
            if m and m.group(1) not in ok:
                bad.append(f"{f}:{i}: {layer}/ includes {m.group(1)}/")
for f in sorted(glob.glob("**/*.[ch]", recursive=True)):
    if f.startswith(("shim/", "build")) or "/build" in f:
        continue
    for i, line in enumerate(open(f, errors="replace"), 1):
        if re.match(r'\s*#\s*include\s+"shim/', line):
            bad.append(f"{f}:{i}: includes a shim/ header outside shim/")
print("LAYERS", len(bad))
for b in bad:
    print("  " + b)

# unit tests' prerequisites, from the make fragments (continuations joined)
layer_vars = {"POLICY_OBJS": "policy", "TRACER_SRC": "tracer"}
alone = {layer: [] for layer in ("common", "allocator", "policy", "tracer")}
for mk in sorted(glob.glob("*/*.mk")):
    text = open(mk).read().replace("\\\n", " ")
    for m in re.finditer(r"^\$\(BUILD\)/tests/(test_\w+):([^\n]*)", text, re.M):
        name, prereq = m.group(1), m.group(2)
        if "shim/" in prereq or "LIBSN" in prereq or "ALL_TARGETS" in prereq:
            continue
        layers = set(re.findall(r"\$\(BUILD\)/([a-z]+)/", prereq)) | {v for k, v in layer_vars.items() if k in prereq}
        for layer in alone:
            if layer in layers:
                alone[layer].append(name)
unlinked = [layer for layer, tests in alone.items() if not tests]
# a test that defines the real-function table or its resolution stands in
# for what common/ should provide
for f in sorted(glob.glob("tests/*.c")):
    if re.search(r"^\s*void\s*\*\s*(sn_real_slot\s*\[|sn_resolve_late\s*\()", open(f).read(), re.M):
        unlinked.append(f + " (defines the real-function table)")
print("ALONE", len(unlinked))
for layer in unlinked:
    print("  " + layer + "/: no unit test links it without shim/")
for layer, tests in alone.items():
    print(f"  {layer}/: {', '.join(tests[:4])}")

hooks = set(re.findall(r'SN_HOOK\(\s*\w+\s*,\s*[^,]+,\s*(\w+)\s*,', open("common/hooks.def").read()))
long_fns = []
for layer in allowed:
    for f in sorted(glob.glob(layer + "/*.c")):
        lines = open(f).read().split("\n")
        i = 0
        while i < len(lines):
            if lines[i] == "{" and i > 0:
                j = i - 1
                while j > 0 and lines[j - 1].strip() and not lines[j - 1].rstrip().endswith((";", "}", "*/")) \
                        and not lines[j - 1].startswith(("#", "/*", " *", "//")):
                    j -= 1
                sig = " ".join(x.strip() for x in lines[j:i])
                k = i + 1
                while k < len(lines) and lines[k] != "}":
                    k += 1
                m = re.search(r"(\w+)\s*\((.*)\)\s*$", sig)
                if m and "=" not in sig.split("(")[0] and m.group(1) not in hooks:
                    params = re.sub(r"\([^()]*\)", "", m.group(2))  # function-pointer parameters count once
                    np = 0 if params.strip() in ("", "void") else params.count(",") + 1
                    if k - i + 1 > 150 or np > 6:
                        long_fns.append(f"{f}: {m.group(1)}: {k - i + 1} lines, {np} parameters")
                i = k
            i += 1
print("SHAPE", len(long_fns))
for b in long_fns:
    print("  " + b)
PY
out="${TMPDIR:-/tmp}/sn_shape.$$"
layers=$(awk '$1 == "LAYERS" { print $2 }' "$out")
shape=$(awk '$1 == "SHAPE" { print $2 }' "$out")
check "layers include only the layers below them, and nothing outside shim/ includes shim/ ($layers found)" \
    '[ "$layers" = 0 ] || { sed -n "/^LAYERS/,/^SHAPE/p" "$out" | head -20 >&2; false; }'
alone=$(awk '$1 == "ALONE" { print $2 }' "$out")
check "common/, allocator/, policy/ and tracer/ each link into a unit test without shim/ ($alone lacking)" \
    '[ "$alone" = 0 ] || { sed -n "/^ALONE/,/^SHAPE/p" "$out" | head -12 >&2; false; }'
check "no function of libsn over 150 lines or 6 parameters but the wrappers ($shape found)" \
    '[ "$shape" = 0 ] || { sed -n "/^SHAPE/,\$p" "$out" | head -20 >&2; false; }'
rm -f "$out"
