#!/usr/bin/env bash
# test_sn_paths.sh — libsn's output paths and messages on a real program
# (tests/sn_chdir_sample.c and the reference trainer), preloaded:
#  - SN_REPORT=/dev/stdout is refused: the program's stdout is unchanged;
#  - a FIFO without a reader is refused: the program exits promptly;
#  - a relative path is fixed when libsn loads, whatever chdir() comes later;
#  - one path for report, trace and plot: the report keeps it, two warnings;
#  - an unwritable directory is reported when libsn loads, before the
#    program's first line, even by a program that makes no CUDA call;
#  - a symbolic link is refused and its target left untouched;
#  - the file stdout is redirected to is not replaced;
#  - SN_STRICT=1 stops on a refused path; off mode checks nothing;
#  - a value with a newline and an escape sequence gives one escaped line;
#  - values follow one grammar (no white space, decimal digits only);
#  - manage mode writes a report only where SN_REPORT asks for one.
# Prints TAP-like "ok"/"not ok" lines.
set -u
. "$(dirname "$0")/lib.sh"
# Nearly every run here passes a refused path or a malformed value on
# purpose, to test what libsn does with it when not strict; the one test
# of SN_STRICT=1 sets it itself.
export SN_STRICT=0
sample="$BUILD_DIR/tests/sn_chdir_sample"
trainer="$BUILD_DIR/sntrain"
targs=(--net resnet --depth 8 --batch 2 --input 16 --width 4 --iters 3)
fail=0
t() { check "$@" && return 0; fail=1; return 1; }
show() { sed 's/^/# /' "$1" | head -"${2:-10}"; }
run() { LD_PRELOAD="$SN_PRELOAD" "$@"; }

# --- the report never reaches stdout ------------------------------------------------------
"$sample" >"$tmp/plain.out" 2>/dev/null
SN_MODE=trace SN_REPORT=/dev/stdout run "$sample" >"$tmp/stdout.out" 2>"$tmp/stdout.err"
rc=$?
t "SN_REPORT=/dev/stdout: the program's stdout is what it is without libsn" \
  '[ $rc -eq 0 ] && [ -s "$tmp/plain.out" ] && cmp -s "$tmp/plain.out" "$tmp/stdout.out"' || show "$tmp/stdout.out"
t "SN_REPORT=/dev/stdout: one warning on stderr naming the variable and why" \
  '[ "$(grep -c "^libsn: " "$tmp/stdout.err")" -eq 1 ] &&
   grep -q "^libsn: SN_REPORT=/dev/stdout cannot be used: it is a symbolic link" "$tmp/stdout.err"' || show "$tmp/stdout.err"
# The trainer prints timings, which trace mode's timing events change: masked.
"$trainer" "${targs[@]}" 2>/dev/null | mask_trainer_times >"$tmp/tplain.out"
SN_MODE=trace SN_REPORT=/dev/fd/1 run "$trainer" "${targs[@]}" 2>"$tmp/tstdout.err" | mask_trainer_times >"$tmp/tstdout.out"
t "SN_REPORT=/dev/fd/1 under the trainer: its stdout unchanged (timings masked), one warning" \
  '[ -s "$tmp/tplain.out" ] && cmp -s "$tmp/tplain.out" "$tmp/tstdout.out" && [ "$(grep -c "^libsn: " "$tmp/tstdout.err")" -eq 1 ] &&
   grep -q "^libsn: SN_REPORT=/dev/fd/1 cannot be used: it is a symbolic link" "$tmp/tstdout.err"' ||
  { diff "$tmp/tplain.out" "$tmp/tstdout.out" | show /dev/stdin; show "$tmp/tstdout.err"; }

# --- a FIFO without a reader ---------------------------------------------------------------
mkfifo "$tmp/fifo"
SN_MODE=trace SN_REPORT="$tmp/fifo" timeout 20 env LD_PRELOAD="$SN_PRELOAD" "$sample" >"$tmp/fifo.out" 2>"$tmp/fifo.err"
rc=$?
t "SN_REPORT=FIFO without a reader: the program exits promptly and normally" \
  '[ $rc -eq 0 ] && grep -q "^sample done" "$tmp/fifo.out"' || { echo "# exit $rc"; show "$tmp/fifo.err"; }
t "SN_REPORT=FIFO: one warning saying it is a FIFO" \
  '[ "$(grep -c "^libsn: " "$tmp/fifo.err")" -eq 1 ] && grep -q "SN_REPORT=$tmp/fifo cannot be used: it is a FIFO" "$tmp/fifo.err"' ||
  show "$tmp/fifo.err"

# --- a relative path and a later chdir() ---------------------------------------------------
mkdir -p "$tmp/start" "$tmp/elsewhere"
(cd "$tmp/start" && SN_MODE=trace SN_REPORT=rel.txt SN_TRACE=sub/../rel.json run "$sample" --chdir "$tmp/elsewhere" \
    >"$tmp/rel.out" 2>"$tmp/rel.err")
rc=$?
t "relative SN_REPORT: written where the program started, not where it chdir()ed to" \
  '[ $rc -eq 0 ] && grep -q "^libsn trace report" "$tmp/start/rel.txt" && [ -z "$(ls -A "$tmp/elsewhere")" ]' || { echo "# exit $rc"; ls -la "$tmp/start" "$tmp/elsewhere" | show /dev/stdin 20; show "$tmp/rel.err"; }
# (sub/ does not exist: the directory named must exist)
t "relative SN_TRACE through a missing directory: refused at load" \
  'grep -q "^libsn: SN_TRACE=sub/../rel.json cannot be used: the directory sub/.. does not exist" "$tmp/rel.err" ||
   grep -q "^libsn: SN_TRACE=sub/../rel.json cannot be used: the directory sub/.. cannot be resolved" "$tmp/rel.err"' ||
  show "$tmp/rel.err"
mkdir -p "$tmp/start/sub"
(cd "$tmp/start" && rm -f rel.txt rel.json && SN_MODE=trace SN_REPORT=rel.txt SN_TRACE=sub/../rel.json \
    run "$sample" --chdir "$tmp/elsewhere" >/dev/null 2>"$tmp/rel2.err")
t "relative paths through an existing directory: both written, no warning" \
  'grep -q "^libsn trace report" "$tmp/start/rel.txt" && grep -q traceEvents "$tmp/start/rel.json" &&
   ! grep -q "^libsn: " "$tmp/rel2.err" && [ -z "$(ls -A "$tmp/elsewhere")" ]' || show "$tmp/rel2.err"

# --- the same file for every output --------------------------------------------------------
SN_MODE=trace SN_REPORT="$tmp/same.txt" SN_TRACE="$tmp/same.txt" SN_PLOT="$tmp/./same.txt" \
    run "$trainer" "${targs[@]}" >/dev/null 2>"$tmp/same.err"
rc=$?
t "one path for SN_REPORT, SN_TRACE and SN_PLOT: the report keeps it" \
  '[ $rc -eq 0 ] && head -1 "$tmp/same.txt" | grep -q "^libsn trace report"' || head -c 300 "$tmp/same.txt" | show /dev/stdin
t "one path for three outputs: one warning for SN_TRACE, one for SN_PLOT" \
  '[ "$(grep -c "^libsn: " "$tmp/same.err")" -eq 2 ] &&
   grep -q "^libsn: SN_TRACE=$tmp/same.txt cannot be used: it is the same file as SN_REPORT" "$tmp/same.err" &&
   grep -q "^libsn: SN_PLOT=$tmp/./same.txt cannot be used: it is the same file as SN_REPORT" "$tmp/same.err"' ||
  show "$tmp/same.err"

# --- an unwritable directory, reported when libsn loads ---------------------------------------
# root ignores mode bits: then take a directory nobody can create files in.
mkdir "$tmp/ro" && chmod 555 "$tmp/ro"
ro=""
for d in "$tmp/ro" /proc/self /sys; do
    if ! (: >"$d/.sn_probe") 2>/dev/null; then ro=$d; break; fi
    rm -f "$d/.sn_probe"
done
if [ -z "$ro" ]; then
    echo "ok - # skip unwritable directory: none found"
else
    SN_MODE=trace SN_REPORT="$ro/r.txt" run "$sample" >"$tmp/ro.all" 2>&1
    rc=$?
    t "unwritable directory: warned before the program's first line, run unchanged" \
      '[ $rc -eq 0 ] && head -1 "$tmp/ro.all" | grep -q "^libsn: SN_REPORT=$ro/r.txt cannot be used: no file can be created in" &&
       [ "$(grep -c "^libsn: " "$tmp/ro.all")" -eq 1 ] && sed -n 2p "$tmp/ro.all" | grep -q "^sample start"' || show "$tmp/ro.all"
    SN_MODE=trace SN_PLOT="$ro/p.svg" run "$sample" --no-cuda >"$tmp/ro2.all" 2>&1
    t "unwritable directory: warned even when the program makes no CUDA call" \
      'head -1 "$tmp/ro2.all" | grep -q "^libsn: SN_PLOT=$ro/p.svg cannot be used" && grep -q "^sample done" "$tmp/ro2.all"' ||
      show "$tmp/ro2.all"
fi

# --- a symbolic link ----------------------------------------------------------------------------
printf 'keep me\n' >"$tmp/victim.txt"
ln -s victim.txt "$tmp/link.txt"
SN_MODE=trace SN_REPORT="$tmp/link.txt" run "$sample" >/dev/null 2>"$tmp/link.err"
rc=$?
t "symbolic link as SN_REPORT: refused, its target untouched, the link still a link" \
  '[ $rc -eq 0 ] && [ "$(cat "$tmp/victim.txt")" = "keep me" ] && [ -L "$tmp/link.txt" ] &&
   [ "$(grep -c "^libsn: " "$tmp/link.err")" -eq 1 ] &&
   grep -q "^libsn: SN_REPORT=$tmp/link.txt cannot be used: it is a symbolic link" "$tmp/link.err"' || show "$tmp/link.err"

# --- the file stdout goes to ---------------------------------------------------------------------
SN_MODE=trace SN_REPORT="$tmp/out.txt" run "$sample" >"$tmp/out.txt" 2>"$tmp/out.err"
t "SN_REPORT naming the file stdout is redirected to: refused, the program's output kept" \
  '[ "$(cat "$tmp/out.txt")" = "$(printf "sample start\nsample read back 7\nsample done")" ] &&
   grep -q "^libsn: SN_REPORT=$tmp/out.txt cannot be used: it is the file the program.s standard output goes to" "$tmp/out.err"' ||
  { show "$tmp/out.txt"; show "$tmp/out.err"; }

# --- SN_STRICT and off mode ----------------------------------------------------------------------
SN_STRICT=1 SN_MODE=trace SN_REPORT=/dev/stdout run "$sample" >"$tmp/strict.out" 2>"$tmp/strict.err"
rc=$?
t "SN_STRICT=1 and a refused path: exit status 2 before the program runs" \
  '[ $rc -eq 2 ] && [ ! -s "$tmp/strict.out" ] && grep -q "^libsn: error: SN_REPORT=/dev/stdout cannot be used" "$tmp/strict.err" &&
   grep -q "^libsn: error: SN_STRICT=1" "$tmp/strict.err"' || { echo "# exit $rc"; show "$tmp/strict.err"; }
SN_MODE=off SN_REPORT=/dev/stdout SN_TRACE="$tmp/nodir/t.json" run "$sample" >/dev/null 2>"$tmp/off.err"
t "off mode writes nothing and checks no path: silent" '! grep -q "^libsn: " "$tmp/off.err"' || show "$tmp/off.err"

# --- control characters in a value ----------------------------------------------------------------
esc=$(printf '\033')
SN_MODE="trace
libsn: forged${esc}[31m" run "$sample" >/dev/null 2>"$tmp/ctl.err"
t "a value with a newline and ESC: one escaped warning, no forged line, no raw escape" \
  '[ "$(wc -l <"$tmp/ctl.err")" -eq 1 ] && ! grep -q "^libsn: forged" "$tmp/ctl.err" && ! grep -q "$esc" "$tmp/ctl.err" &&
   grep -qF "libsn: SN_MODE=trace\nlibsn: forged\x1b[31m is not valid (accepted: off|trace|manage); using the default, manage" "$tmp/ctl.err"' ||
  show "$tmp/ctl.err"
SN_MODE=manage SN_REPORT="$tmp/a${esc}[2Jb
c" run "$sample" >/dev/null 2>"$tmp/ctl2.err"
t "a path with control characters: refused, shown escaped on one line" \
  '[ "$(wc -l <"$tmp/ctl2.err")" -eq 1 ] && ! grep -q "$esc" "$tmp/ctl2.err" && grep -qF "a\x1b[2Jb\nc is not valid" "$tmp/ctl2.err" &&
   [ -z "$(find "$tmp" -name "a*b*")" ]' || show "$tmp/ctl2.err"

# --- one grammar ---------------------------------------------------------------------------------
SN_MODE=trace SN_BUDGET=0x10 SN_PROFILE_ITERS=" 3" SN_POLICY=LRU SN_REPORT=off run "$sample" >/dev/null 2>"$tmp/gram.err"
t "SN_BUDGET=0x10, SN_PROFILE_ITERS=' 3', SN_POLICY=LRU: each one warning" \
  '[ "$(grep -c "^libsn: " "$tmp/gram.err")" -eq 3 ] && grep -q "^libsn: SN_BUDGET=0x10 is not valid" "$tmp/gram.err" &&
   grep -q "^libsn: SN_PROFILE_ITERS= 3 is not valid" "$tmp/gram.err" && grep -q "^libsn: SN_POLICY=LRU is not valid" "$tmp/gram.err"' ||
  show "$tmp/gram.err"

# --- reports in manage mode ------------------------------------------------------------------------
SN_MODE=manage run "$sample" >/dev/null 2>"$tmp/manage.err"
SN_MODE=manage SN_REPORT="$tmp/manage.txt" run "$sample" >/dev/null 2>"$tmp/manage2.err"
t "manage mode: no report with SN_REPORT=auto, a report where SN_REPORT names one" \
  '! grep -q "^libsn: " "$tmp/manage.err" && grep -q "^libsn trace report (SN_MODE=manage)" "$tmp/manage.txt" &&
   ! grep -q "^libsn: " "$tmp/manage2.err"' || { show "$tmp/manage.err"; show "$tmp/manage2.err"; }

# nothing left behind: no probe, no temporary
t "no probe or temporary file left in any output directory" \
  '[ -z "$(find "$tmp" -name ".*sn-*")" ]' || find "$tmp" -name ".*sn-*" | show /dev/stdin
exit $fail
