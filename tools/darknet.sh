#!/usr/bin/env bash
# Darknet, a real framework, for tests/test_darknet.sh: fetches its source
# with Debian's own tools (apt-get source darknet) into cache/darknet/, ports
# a copy to CUDA 13 / cuDNN 9 (tests/darknet/port.py, docs/darknet.md) and
# builds it with nvcc into build/darknet/, linked against the CUDA import
# libraries so that LD_LIBRARY_PATH=build/sim runs it on the simulated device.
#
#   tools/darknet.sh fetch   the Debian source package, unpacked in the cache
#   tools/darknet.sh build   fetch, port and build; prints the binary's path
#
# Both are cached: a second call with the same source, port script and
# compiler does nothing. Where the source cannot be had (not root and no
# deb-src configured, no network) or nvcc is missing, the script prints
# "skip: REASON" and exits 77, which the test turns into a skip.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${DARKNET_CACHE:-$ROOT/cache/darknet}
OUT=${DARKNET_BUILD:-$ROOT/build/darknet}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
JOBS=${DARKNET_JOBS:-2}
SKIP=77

skip() { echo "skip: $*"; exit $SKIP; }
note() { echo "darknet: $*" >&2; }

# The unpacked source tree, if the cache holds one.
source_dir() {
    local d
    for d in "$CACHE"/darknet-*/; do
        [ -f "$d/Makefile" ] && { echo "${d%/}"; return 0; }
    done
    return 1
}

# True when apt knows some source index (a deb-src entry is configured).
have_deb_src() {
    # shellcheck disable=SC2016 # $(IDENTIFIER) is apt's placeholder
    apt-get indextargets --format '$(IDENTIFIER)' 2>/dev/null | grep -qx Sources
}

# deb-src entries mirroring the configured binary ones, in deb822 form:
# every stanza of /etc/apt/sources.list.d/*.sources whose Types include
# "deb", and every one-line "deb" entry of the .list files, with the same
# URIs, suites, components and signing key.
deb_src_stanzas() {
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk '
            function flush() {
                if (is_deb && body != "") print "Types: deb-src\n" body
                body = ""; is_deb = 0
            }
            /^[ \t]*#/ { next }
            /^[ \t]*$/ { flush(); next }
            /^Types:/ { for (i = 2; i <= NF; i++) if ($i == "deb") is_deb = 1; next }
            /^Enabled:[ \t]*no/ { is_deb = 0; body = body "Enabled: no\n"; next }
            { body = body $0 "\n" }
            END { flush() }
        ' "$f"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        awk '
            $1 != "deb" { next }
            {
                opts = ""; i = 2
                if ($2 ~ /^\[/) {
                    while (i <= NF) { opts = opts " " $i; if ($i ~ /\]$/) { i++; break } i++ }
                }
                uri = $i; suite = $(i + 1); comps = ""
                for (j = i + 2; j <= NF; j++) comps = comps (comps == "" ? "" : " ") $j
                print "Types: deb-src\nURIs: " uri "\nSuites: " suite "\nComponents: " comps
                if (match(opts, /signed-by=[^ \]]+/))
                    print "Signed-By: " substr(opts, RSTART + 10, RLENGTH - 10)
                print ""
            }
        ' "$f"
    done
}

# One fetch or build at a time per cache and build folder: two test runs
# started together must not unpack or rebuild under each other.
lock() {
    mkdir -p "$(dirname "$1")"
    exec {fd}>"$1.lock"
    flock "$fd"
}

fetch() {
    if source_dir >/dev/null; then
        return 0
    fi
    lock "$CACHE"
    source_dir >/dev/null && return 0
    command -v apt-get >/dev/null || skip "no apt-get: Darknet's source comes from Debian (apt-get source darknet)"
    export DEBIAN_FRONTEND=noninteractive
    if ! have_deb_src; then
        [ "$(id -u)" -eq 0 ] || skip "no deb-src entry configured and not root to add one (see docs/darknet.md)"
        local list=/etc/apt/sources.list.d/debian-src.sources stanzas
        stanzas=$(deb_src_stanzas)
        [ -n "$stanzas" ] || skip "no Debian 'deb' entry in /etc/apt to mirror as deb-src"
        note "adding $list"
        printf '# Source entries mirroring the binary ones, added for apt-get source.\n%s\n' "$stanzas" >"$list"
        apt-get update -qq >&2 || { rm -f "$list"; skip "apt-get update failed (no network?)"; }
    fi
    if ! dpkg-query -W -f='${Status}' dpkg-dev 2>/dev/null | grep -q "install ok installed"; then
        [ "$(id -u)" -eq 0 ] || skip "dpkg-dev (dpkg-source) is not installed and not root to install it"
        apt-get install -y -qq --no-install-recommends dpkg-dev >&2 || skip "could not install dpkg-dev (no network?)"
    fi
    mkdir -p "$CACHE"
    # Unpacked in a scratch folder first so that an interrupted download
    # never leaves a tree that looks complete.
    local part="$CACHE/.part.$$"
    rm -rf "$part"; mkdir -p "$part"
    # As root, apt would hand the download to its _apt user, who may not
    # reach this tree; the files land in a folder of ours anyway.
    local opts=()
    [ "$(id -u)" -eq 0 ] && opts=(-o APT::Sandbox::User=root)
    if ! (cd "$part" && apt-get source -qq "${opts[@]}" darknet >&2); then
        # Once more after apt-get update, in case the lists were stale.
        if [ "$(id -u)" -ne 0 ] || ! apt-get update -qq >&2 ||
                ! (cd "$part" && apt-get source -qq "${opts[@]}" darknet >&2); then
            rm -rf "$part"
            skip "apt-get source darknet failed (no network?)"
        fi
    fi
    local d
    for d in "$part"/darknet-*/; do
        [ -f "$d/Makefile" ] && mv "${d%/}" "$CACHE/"
    done
    mv "$part"/darknet_* "$CACHE/" 2>/dev/null || true
    rm -rf "$part"
    source_dir >/dev/null || { echo "darknet: apt-get source darknet left no source tree" >&2; exit 1; }
}

build() {
    [ -x "$NVCC" ] || skip "$NVCC not found"
    fetch
    local src port key stamp bin
    src=$(source_dir)
    port="$ROOT/tests/darknet/port.py"
    bin="$OUT/darknet"
    stamp="$OUT/.stamp"
    lock "$OUT"
    key=$( { basename "$src"; sha256sum "$port" "$0"; "$NVCC" --version | tail -n 2; } | sha256sum | cut -c1-16)
    if [ -x "$bin" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$key" ]; then
        echo "$bin"
        return 0
    fi
    note "porting and building $(basename "$src") into $OUT (nvcc, $JOBS jobs)"
    rm -rf "$OUT"
    mkdir -p "$OUT"
    cp -a "$src" "$OUT/src"
    python3 "$port" "$OUT/src" >&2
    mkdir -p "$OUT/src/obj"
    local start=$SECONDS
    # Darknet's own Makefile with its knobs set: GPU and cuDNN on, OpenCV
    # and OpenMP off, sm_90, the shared CUDA runtime, and the import
    # libraries of the toolkit (the simulated ones replace them at run time).
    # Run from this project's make (make test), the outer command line
    # would reach darknet's Makefile through MAKEFLAGS (DEBUG=1, CC=...).
    if ! env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -C "$OUT/src" -j"$JOBS" GPU=1 CUDNN=1 OPENCV=0 OPENMP=0 DEBUG=0 \
            NVCC="$NVCC -cudart shared" ARCH="-arch=sm_90" \
            CUDA_HOME="$CUDA_HOME" darknet >"$OUT/build.log" 2>&1; then
        tail -n 40 "$OUT/build.log" >&2
        echo "darknet: build failed (log: $OUT/build.log)" >&2
        exit 1
    fi
    cp "$OUT/src/darknet" "$bin"
    echo "$((SECONDS - start))" >"$OUT/build-seconds"
    note "built in $((SECONDS - start)) s"
    echo "$key" >"$stamp"
    echo "$bin"
}

case "${1:-}" in
fetch) fetch; source_dir ;;
build) build ;;
*) echo "usage: $0 fetch|build" >&2; exit 2 ;;
esac
