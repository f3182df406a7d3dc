# pinned_model.sh — sourced by the tools tests that compare the tuner with itself:
#     name=NAME; . "$(dirname "$0")/pinned_model.sh"
# makes $tmp (removed at exit), fail() (a message, exit 1), and pins the tuner's model for
# every process started after it: a tune file of its own (alpha 0.3 us, 6 GB/s; a line without
# a key holds on any machine), no settings that would override it, no forced algorithm.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/duet-${name:?pinned_model.sh: set name first}.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
fail() { echo "FAIL: $*" >&2; exit 1; }
printf 'alpha_us=0.3 beta_gbps=6\n' >"$tmp/tune.txt"
export DUET_TUNE_FILE="$tmp/tune.txt"
unset DUET_TUNE_ALPHA_US DUET_TUNE_BETA_GBPS DUET_ALGO
