#!/usr/bin/env bash
# Makes sure the Debian packages libsn builds and tests with are installed:
# installs the missing ones with apt-get when run as root, otherwise prints
# the command to run and fails. The CUDA 13 and cuDNN 9 headers are expected
# under $CUDA_HOME (default /usr/local/cuda); they are not Debian packages.
# Darknet's source (tests/test_darknet.sh) is optional: tools/darknet.sh
# fetches it with apt-get source, adding the deb-src entry and dpkg-dev it
# needs when run as root, and the test is skipped where it cannot.
set -euo pipefail
PACKAGES=(gcc make pkg-config uthash-dev libunwind-dev libopenblas-dev libcmocka-dev libzstd-dev liblz4-dev python3
          valgrind)
missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
        echo "installing: ${missing[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
    else
        echo "missing Debian packages: ${missing[*]}" >&2
        echo "run: sudo apt-get install ${missing[*]}" >&2
        exit 1
    fi
fi
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
for h in cuda_runtime_api.h cuda.h cudnn.h cublas_v2.h; do
    if [ ! -f "$CUDA_HOME/include/$h" ]; then
        echo "missing $CUDA_HOME/include/$h: libsn needs the CUDA 13 toolkit and cuDNN 9 headers" >&2
        exit 1
    fi
done
