# tests/lib.sh — common set-up of the shell tests, sourced by them: where the
# build is, the simulated libraries on LD_LIBRARY_PATH, the LD_PRELOAD value
# that loads libsn (under a sanitizer its runtime must be loaded first, before
# libsn), and a scratch folder removed at exit.
BUILD_DIR=${SN_TEST_BUILD:-$PWD/${BUILD:-build}}
export LD_LIBRARY_PATH="$BUILD_DIR/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
SN_PRELOAD="$BUILD_DIR/libsn.so"
case "${SANITIZE:-}" in
address) SN_PRELOAD="$(gcc -print-file-name=libasan.so) $SN_PRELOAD" ;;
thread) SN_PRELOAD="$(gcc -print-file-name=libtsan.so) $SN_PRELOAD" ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
