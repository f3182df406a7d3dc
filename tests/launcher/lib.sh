# lib.sh — sourced by the launcher.* test scripts. Each script is run by ctest as
#     sh <script> <path to duetrun>
# and passes or fails by its exit code (0 pass, 1 fail, 77 skipped).
# Gives: $duetrun, a private directory $tmp (removed on exit, whatever happens), fail,
# and a stopwatch (stopwatch_start / elapsed, whole seconds).
set -u
duetrun=${1:?usage: sh $0 <path to duetrun>}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/duetrun-test.XXXXXX") || exit 1
cleanup_extra=:            # a script may set this to more cleanup commands
trap 'eval "$cleanup_extra"; rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM # so that the EXIT trap runs when ctest ends us too

fail() {
    echo "FAIL: $*" >&2
    if [ -s "$tmp/err" ]; then
        echo "--- duetrun's stderr:" >&2
        cat "$tmp/err" >&2
    fi
    exit 1
}

stopwatch_start() { t0=$(date +%s); }
elapsed() { echo $(($(date +%s) - t0)); }
