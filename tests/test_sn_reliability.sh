#!/usr/bin/env bash
# test_sn_reliability.sh — libsn under the habits that broke it before:
#  - threads that free and allocate the same addresses concurrently: the
#    registry must never lose a live allocation (the report counts ranges
#    that hit no known allocation: none here);
#  - eight threads through the allocation call-site walk (clean under
#    ThreadSanitizer);
#  - fork while other threads are inside libsn: no child may hang in its
#    exit path, none may write a report (the parent's is the run's), and
#    the report appears once;
#  - CUDA reached through dlopen + dlsym (a C loader, Python ctypes), a
#    driver-only program and one that fails before its first operation:
#    seen, or the report says what was not seen;
#  - a function the loaded library lacks: the program stops as it would
#    without libsn;
#  - a program whose first stream work is captured into a CUDA graph: the
#    same graph and results with libsn.
# Prints TAP-like "ok"/"not ok" lines.
set -u
. "$(dirname "$0")/lib.sh"
prog="$BUILD_DIR/tests/sn_threads"

json_field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@" 2>/dev/null; }

# ---- registry under two threads ------------------------------------------------
for mode in trace manage; do
    SN_MODE=$mode SN_REPORT="$tmp/race-$mode.json" LD_PRELOAD="$SN_PRELOAD" \
        "$prog" race 2 20000 >"$tmp/race.out" 2>"$tmp/race.err"
    rc=$?
    check "race ($mode): two threads allocate, use and free 4 KiB 20000 times each" "[ $rc -eq 0 ]" ||
        sed 's/^/# /' "$tmp/race.out" "$tmp/race.err" | tail -5
    unseen=$(json_field "$tmp/race-$mode.json" "d['devices'][0]['unseen']['ranges']")
    check "race ($mode): no access outside known allocations (registry lost none; got ${unseen:-no report})" \
        "[ '${unseen:-x}' = 0 ]"
done

# Eight threads through the allocation call-site walk (libunwind): under
# ThreadSanitizer (make SANITIZE=thread test) any race it reports fails the
# run (exit status 66); three runs, since a race shows in about half.
for i in 1 2 3; do
    SN_MODE=trace LD_PRELOAD="$SN_PRELOAD" "$prog" race 8 2000 >"$tmp/race8.out" 2>&1
    rc=$?
    check "race: eight threads, run $i${SANITIZE:+ under $SANITIZE sanitizer} (rc $rc)" "[ $rc -eq 0 ]" ||
        grep -A8 'WARNING' "$tmp/race8.out" | head -20 | sed 's/^/# /'
done

# ---- fork while other threads are inside libsn ----------------------------------
for mode in manage trace; do
    # (a child's exit under AddressSanitizer would run the leak checker, whose
    # stop-the-world is not safe in a child forked from a threaded process)
    ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" SN_MODE=$mode LD_PRELOAD="$SN_PRELOAD" \
        timeout 300 "$prog" fork 60 >"$tmp/fork.out" 2>"$tmp/fork.err"
    rc=$?
    check "fork ($mode): 60 children forked while two threads are inside libsn, none hung ($(cat "$tmp/fork.out"))" \
        "[ $rc -eq 0 ]" || sed 's/^/# /' "$tmp/fork.err" | tail -5
done
reports=$(grep -c 'libsn trace report' "$tmp/fork.err")
check "fork (trace): the report is written once, by the parent (got $reports)" "[ '$reports' = 1 ]"

ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" SN_MODE=trace SN_REPORT="$tmp/fork-report.json" \
    LD_PRELOAD="$SN_PRELOAD" timeout 300 "$prog" fork 20 \
    >/dev/null 2>"$tmp/fork2.err"
calls=$(json_field "$tmp/fork-report.json" "d['devices'][0]['calls']")
check "fork (trace, SN_REPORT=file): the file holds the parent's report, not a child's (calls: ${calls:-none})" \
    "[ '${calls:-0}' -gt 100 ]"

# ---- CUDA reached through dlopen + dlsym ---------------------------------------------
dl="$BUILD_DIR/tests/sn_dlopen"
SN_MODE=trace SN_REPORT="$tmp/dl-runtime.json" LD_PRELOAD="$SN_PRELOAD" "$dl" runtime 50 >"$tmp/dl.out" 2>&1
rc=$?
steps=$(json_field "$tmp/dl-runtime.json" "d['devices'][0]['steps']")
check "dlopen+dlsym of the runtime: the program works (rc $rc) and libsn sees its 50 memsets (steps: ${steps:-no report})" \
    "[ $rc -eq 0 ] && [ '${steps:-0}' = 50 ]"

SN_MODE=trace LD_PRELOAD="$SN_PRELOAD" "$dl" which >"$tmp/which.out" 2>/dev/null
check "dlsym in a dlopened runtime, cuDNN and cuBLAS answers with libsn's wrappers" \
    "[ \$(grep -c ' libsn.so\$' '$tmp/which.out') = 3 ]" || sed 's/^/# /' "$tmp/which.out"
SN_MODE=off LD_PRELOAD="$SN_PRELOAD" "$dl" which >"$tmp/which-off.out" 2>/dev/null
"$dl" which >"$tmp/which-plain.out" 2>/dev/null
check "... and with SN_MODE=off too (wrappers pass through), while without libsn the libraries answer" \
    "[ \$(grep -c ' libsn.so\$' '$tmp/which-off.out') = 3 ] && ! grep -q libsn '$tmp/which-plain.out'"

# cuDNN 9's libcudnn.so.9 is a dispatcher: it looks up cudnnCreate and the
# rest in libcudnn_graph.so.9 with dlsym and forwards to them. libsn must
# answer that lookup with the library's own function (the call was seen on
# its way in) and say nothing; only a second copy of the same library,
# whose calls libsn cannot see, deserves the warning.
simdnn=$BUILD_DIR/sim/libcudnn.so.9
mkdir -p "$tmp/graph" "$tmp/copy"
cp "$simdnn" "$tmp/graph/libcudnn_graph.so.9"
cp "$simdnn" "$tmp/copy/libcudnn.so.9"
SN_MODE=trace SN_REPORT=off LD_PRELOAD="$SN_PRELOAD" "$dl" dispatch "$tmp/graph/libcudnn_graph.so.9" \
    >"$tmp/dispatch.out" 2>"$tmp/dispatch.err"
check "dlsym of cudnnCreate in a library of another name (cuDNN 9's dispatch) answers with that library's own, silently" \
    "grep -qx 'cudnnCreate libcudnn_graph.so.9' '$tmp/dispatch.out' && ! grep -q 'second copy' '$tmp/dispatch.err'" ||
    sed 's/^/# /' "$tmp/dispatch.out" "$tmp/dispatch.err" | tail -5
SN_MODE=trace SN_REPORT=off LD_PRELOAD="$SN_PRELOAD" "$dl" dispatch "$tmp/copy/libcudnn.so.9" \
    >"$tmp/copy.out" 2>"$tmp/copy.err"
check "... while a second copy of cuDNN itself is answered with its own and named in one warning" \
    "grep -qx 'cudnnCreate libcudnn.so.9' '$tmp/copy.out' && [ \$(grep -c 'second copy of a CUDA library' '$tmp/copy.err') = 1 ]" ||
    sed 's/^/# /' "$tmp/copy.out" "$tmp/copy.err" | tail -5

if python3 -c 'import ctypes' 2>/dev/null; then
    cat >"$tmp/ctypes_prog.py" <<'PY'
import ctypes
rt = ctypes.CDLL("libcudart.so.13")
p = ctypes.c_void_p()
buf = (ctypes.c_ubyte * 256)()
for i in range(20):
    assert rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(256)) == 0
    assert rt.cudaMemset(p, ctypes.c_int(7), ctypes.c_size_t(256)) == 0
    assert rt.cudaMemcpy(buf, p, ctypes.c_size_t(256), 2) == 0
    assert buf[255] == 7
    assert rt.cudaFree(p) == 0
print("ctypes ok")
PY
    ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" SN_MODE=trace SN_REPORT="$tmp/dl-ctypes.json" \
        LD_PRELOAD="$SN_PRELOAD" python3 "$tmp/ctypes_prog.py" >"$tmp/ctypes.out" 2>&1
    rc=$?
    steps=$(json_field "$tmp/dl-ctypes.json" "d['devices'][0]['steps']")
    check "Python ctypes: libsn sees the runtime opened by ctypes (rc $rc, steps: ${steps:-no report})" \
        "[ $rc -eq 0 ] && [ '${steps:-0}' = 20 ]" || sed 's/^/# /' "$tmp/ctypes.out" | tail -5
fi

for m in driver fail; do
    SN_MODE=trace SN_REPORT="$tmp/dl-$m.txt" LD_PRELOAD="$SN_PRELOAD" "$dl" $m >"$tmp/dl-$m.out" 2>"$tmp/dl-$m.err"
    check "dlopen ($m): nothing traceable, and the report file says so" \
        "grep -q 'no CUDA device operation was seen' '$tmp/dl-$m.txt' 2>/dev/null" ||
        sed 's/^/# /' "$tmp/dl-$m.err" | tail -3
done
SN_MODE=trace LD_PRELOAD="$SN_PRELOAD" "$dl" driver >/dev/null 2>"$tmp/dl-driver-stderr.txt"
check "dlopen (driver), report on stderr: one prefixed explanation" \
    "grep -q '^libsn: .*no CUDA device operation was seen' '$tmp/dl-driver-stderr.txt'"
SN_MODE=manage LD_PRELOAD="$SN_PRELOAD" "$dl" driver >/dev/null 2>"$tmp/dl-driver-manage.txt"
check "dlopen (driver), manage mode without a report: one libsn: line says what was not seen" \
    "[ \$(grep -c 'no CUDA device operation was seen' '$tmp/dl-driver-manage.txt') = 1 ]"
SN_MODE=trace SN_REPORT="$tmp/none.txt" LD_PRELOAD="$SN_PRELOAD" /bin/true 2>"$tmp/none.err"
check "a process that never loads CUDA (a script's tools) writes no report and says nothing" \
    "[ ! -e '$tmp/none.txt' ] && [ ! -s '$tmp/none.err' ]"

# ---- a function the loaded library lacks ------------------------------------------------
miss="$BUILD_DIR/tests/sn_missing"
"$miss" >"$tmp/miss-plain.out" 2>"$tmp/miss-plain.err"; rc_plain=$?
for mode in off trace manage; do
    SN_MODE=$mode LD_PRELOAD="$SN_PRELOAD" "$miss" >"$tmp/miss.out" 2>"$tmp/miss.err"; rc=$?
    check "missing function ($mode): same output and exit status ($rc vs $rc_plain) as without libsn" \
        "[ $rc -eq $rc_plain ] && cmp -s '$tmp/miss-plain.out' '$tmp/miss.out'" ||
        { diff "$tmp/miss-plain.out" "$tmp/miss.out" | sed 's/^/# /'; }
done
check "missing function: libsn says which function and why the program stops" \
    "grep -q 'libsn: error: cublasDgemmBatched: no loaded CUDA library provides' '$tmp/miss.err'"

# ---- a program whose first stream work is captured into a graph ------------------------
cap="$BUILD_DIR/tests/sn_capture"
"$cap" >"$tmp/cap-plain.out" 2>&1; rc_plain=$?
check "graph capture without libsn: the program works (rc $rc_plain)" \
    "[ $rc_plain -eq 0 ] && grep -q 'graph nodes: 2' '$tmp/cap-plain.out'"
for mode in off trace manage; do
    SN_MODE=$mode LD_PRELOAD="$SN_PRELOAD" "$cap" >"$tmp/cap.out" 2>"$tmp/cap.err"; rc=$?
    check "graph capture ($mode): same graph and results as without libsn (rc $rc)" \
        "[ $rc -eq 0 ] && cmp -s '$tmp/cap-plain.out' '$tmp/cap.out'" ||
        diff "$tmp/cap-plain.out" "$tmp/cap.out" | head -6 | sed 's/^/# /'
done
