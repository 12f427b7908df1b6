# norandom.sh — sourced first by the bench scripts: runs the script again
# with the address space's randomisation off (setarch -R), where the
# system allows it. The simulated time of a run under libsn depends on
# where things land in memory: with randomisation on, the same run varied
# by up to 8% from one time to the next (ResNet-50 b32 under auto at half
# its peak: 305 to 330 ms an iteration). With it off, a command run again with
# the same environment gives the same times; the report's path, which
# each run of a script takes from mktemp, still moves a cell of the tables
# by up to about 1%, for a reason not yet found (docs/decisions.md). Where
# setarch is missing or refused (a container without the personality
# call), the script runs as it is.
if [ -z "${BENCH_FIXED_ADDRESSES:-}" ] && command -v setarch >/dev/null 2>&1 && setarch -R true 2>/dev/null; then
    export BENCH_FIXED_ADDRESSES=1
    exec setarch -R bash "$0" "$@"
fi
