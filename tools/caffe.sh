#!/usr/bin/env bash
# BVLC Caffe, a second real framework, for tests/test_caffe.sh: unpacks its
# source (the trimmed upstream tarball in ../shared/third_party/, or the
# checkout CAFFE_SRC names) into a per-machine cache, ports a copy to CUDA
# 13, cuDNN 9 and protobuf 3.21 (tests/caffe/port.py, docs/caffe.md) and
# builds it with its own Makefile there, linked against the CUDA import
# libraries so that LD_LIBRARY_PATH=build/sim runs it on the simulated
# device. The cache (CAFFE_CACHE, default ~/.cache/libsn/caffe) is outside
# the checkout so that every clone and worktree on the machine, and every
# CI run, shares one build: a clean clone does not pay for it again.
#
#   tools/caffe.sh source   the unpacked source tree's path
#   tools/caffe.sh build    unpack, port and build; prints the caffe binary
#
# Both are cached, keyed by hashes of the tarball (or of the checkout's
# files), the port script, this script and nvcc's version: a second call
# does nothing. Where the source is missing, nvcc is missing, or Caffe's
# Debian build dependencies are missing and cannot be installed (not root,
# no network), the script prints "skip: REASON" and exits 77, which the
# test turns into a skip.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARBALL=${CAFFE_TARBALL:-$ROOT/../shared/third_party/caffe-bvlc-9b89154.tar.gz}
CACHE=${CAFFE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/libsn/caffe}
OUT=${CAFFE_BUILD:-$CACHE/build}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
JOBS=${CAFFE_JOBS:-2}
# One architecture keeps nvcc's share of the build short; the simulator
# reads the kernels' parameter layouts from its cubin.
ARCH=${CAFFE_ARCH:--gencode arch=compute_90,code=sm_90}
SKIP=77
# Caffe's build dependencies with OpenCV and Python off (Makefile.config
# below), as Debian names them.
PACKAGES=(g++ libprotobuf-dev protobuf-compiler libgoogle-glog-dev libgflags-dev libhdf5-dev liblmdb-dev
          libleveldb-dev libsnappy-dev libboost-system-dev libboost-filesystem-dev libboost-thread-dev
          libopenblas-dev)

skip() { echo "skip: $*"; exit $SKIP; }
note() { echo "caffe: $*" >&2; }

# One unpack or build at a time per folder: two test runs started together
# must not write under each other.
lock() {
    mkdir -p "$(dirname "$1")"
    exec {fd}>"$1.lock"
    flock "$fd"
}

# Installs the missing build dependencies when root (as .ci/run is), else
# skips with the command to run.
packages() {
    local missing=() p
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    command -v apt-get >/dev/null || skip "Caffe's build dependencies are missing (${missing[*]}) and there is no apt-get"
    [ "$(id -u)" -eq 0 ] || skip "Caffe's build dependencies are missing; run: sudo apt-get install ${missing[*]}"
    note "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 ||
        { apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2; } ||
        skip "could not install Caffe's build dependencies (${missing[*]}; no network?)"
}

# A short hash naming the source: the tarball's, or that of every file of
# the checkout CAFFE_SRC names (its .git and build outputs left out).
source_key() {
    if [ -n "${CAFFE_SRC:-}" ]; then
        (cd "$CAFFE_SRC" && find . \( -name .git -o -name build -o -name .build_release -o -name distribute \) -prune \
            -o -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-16
    else
        sha256sum "$TARBALL" | cut -c1-16
    fi
}

# Prints the pristine source tree: CAFFE_SRC itself, or the tarball
# unpacked in the cache under its hash.
source_dir() {
    if [ -n "${CAFFE_SRC:-}" ]; then
        if [ ! -f "$CAFFE_SRC/Makefile" ] || [ ! -d "$CAFFE_SRC/src/caffe" ]; then
            skip "CAFFE_SRC=$CAFFE_SRC is not a Caffe source tree"
        fi
        (cd "$CAFFE_SRC" && pwd)
        return 0
    fi
    [ -f "$TARBALL" ] || skip "no Caffe source: $TARBALL is missing (set CAFFE_SRC to a checkout of BVLC Caffe 9b89154)"
    local key dir
    key=$(source_key)
    dir="$CACHE/$key"
    if [ ! -f "$dir/caffe/Makefile" ]; then
        lock "$CACHE"
        if [ ! -f "$dir/caffe/Makefile" ]; then
            # Unpacked in a scratch folder first so that an interrupted run
            # never leaves a tree that looks complete.
            local part="$CACHE/.part.$$"
            rm -rf "$part" "$dir"; mkdir -p "$part"
            tar -xzf "$TARBALL" -C "$part"
            [ -f "$part/caffe/Makefile" ] || { rm -rf "$part"; echo "caffe: $TARBALL holds no caffe/Makefile" >&2; exit 1; }
            mv "$part" "$dir"
        fi
    fi
    echo "$dir/caffe"
}

# sync_tree FROM TO: makes TO's files those of FROM, leaving Caffe's build
# outputs in TO alone; a file whose bytes are the same keeps its time, so
# make does not rebuild it, and one that differs gets the present time.
sync_tree() {
    python3 - "$1" "$2" <<'PY'
import filecmp, os, shutil, sys
src, dst = sys.argv[1], sys.argv[2]
keep = {"build", ".build_release", ".build_debug", "distribute"}
def files(root):
    out = set()
    for d, dirs, names in os.walk(root):
        if d == root:
            dirs[:] = [x for x in dirs if x not in keep]
        out.update(os.path.relpath(os.path.join(d, n), root) for n in names)
    return out
want = files(src)
if os.path.isdir(dst):
    for f in files(dst) - want:
        os.remove(os.path.join(dst, f))
for f in sorted(want):
    a, b = os.path.join(src, f), os.path.join(dst, f)
    same = (not os.path.islink(a) and not os.path.islink(b) and os.path.isfile(b)
            and filecmp.cmp(a, b, shallow=False))
    if not same:
        os.makedirs(os.path.dirname(b), exist_ok=True)
        if os.path.lexists(b):
            os.remove(b)
        shutil.copy(a, b, follow_symlinks=False)
PY
}

build() {
    [ -x "$NVCC" ] || skip "$NVCC not found"
    local src port key stamp bin rc
    # A skip inside the command substitution prints its reason there.
    src=$(source_dir) || { rc=$?; echo "$src"; exit $rc; }
    packages
    port="$ROOT/tests/caffe/port.py"
    bin="$OUT/src/build/tools/caffe.bin"
    stamp="$OUT/.stamp"
    lock "$OUT"
    key=$( { source_key; cat "$port" "$0" | sha256sum; echo "$ARCH"; "$NVCC" --version | tail -n 2; } | sha256sum | cut -c1-16)
    if [ -x "$bin" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$key" ]; then
        echo "$bin"
        return 0
    fi
    note "porting and building Caffe into $OUT (nvcc, $JOBS jobs; several minutes from scratch)"
    rm -f "$stamp"
    mkdir -p "$OUT"
    # The port is applied to a fresh copy, which then replaces only the
    # files that differ in the tree built before: Caffe's Makefile keeps
    # its objects and dependency files, so a changed port or source
    # rebuilds what it touches instead of the whole library (a quarter of
    # an hour on two busy cores).
    rm -rf "$OUT/stage"
    cp -a "$src" "$OUT/stage"
    rm -rf "$OUT/stage/.git" "$OUT/stage/build" "$OUT/stage/.build_release" "$OUT/stage/distribute"
    python3 "$port" "$OUT/stage" >&2
    # Caffe's Makefile knobs: cuDNN on; OpenCV, Python and NCCL off (the
    # test's nets use DummyData); OpenBLAS; Debian's serial HDF5 lives in
    # its own folder; the toolkit's headers and import libraries (the
    # simulated libraries replace them at run time).
    cat >"$OUT/stage/Makefile.config" <<CONFIG
# Written by tools/caffe.sh.
USE_CUDNN := 1
USE_OPENCV := 0
USE_LEVELDB := 1
USE_LMDB := 1
USE_HDF5 := 1
CUDA_DIR := $CUDA_HOME
CUDA_ARCH := $ARCH
BLAS := open
INCLUDE_DIRS := /usr/include/hdf5/serial
LIBRARY_DIRS := /usr/lib/$(gcc -print-multiarch)/hdf5/serial
BUILD_DIR := build
DISTRIBUTE_DIR := distribute
CONFIG
    sync_tree "$OUT/stage" "$OUT/src"
    rm -rf "$OUT/stage"
    local start=$SECONDS
    # Run from this project's make (make test), the outer command line
    # would reach Caffe's Makefile through MAKEFLAGS (DEBUG=1, CC=...).
    if ! env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -C "$OUT/src" -j"$JOBS" all tools \
            >"$OUT/build.log" 2>&1; then
        tail -n 40 "$OUT/build.log" >&2
        echo "caffe: build failed (log: $OUT/build.log)" >&2
        exit 1
    fi
    [ -x "$bin" ] || { echo "caffe: the build left no $bin" >&2; exit 1; }
    echo "$((SECONDS - start))" >"$OUT/build-seconds"
    note "built in $((SECONDS - start)) s"
    echo "$key" >"$stamp"
    echo "$bin"
}

case "${1:-}" in
source) source_dir ;;
build) build ;;
*) echo "usage: $0 source|build" >&2; exit 2 ;;
esac
