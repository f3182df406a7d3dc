#!/usr/bin/env bash
# tools/duet-perf-algos.sh — one duet-perf sweep per algorithm of a collective, joined.
#
#   tools/duet-perf-algos.sh [-n NP] [--out DIR] [--fit] [--plot FILE.png] COLLECTIVE [duet-perf flags]
#
# duet-perf -a forces one algorithm per run, because the library reads its settings
# (DUET_ALGO) once per process. This script runs, for each algorithm,
#     duetrun -n NP duet-perf COLLECTIVE -a ALGO [flags] --csv DIR/COLLECTIVE-ALGO.csv
# where the algorithms are those of `-a LIST` among the flags (comma separated), or every
# algorithm of the collective (duet-perf --list-algos) for `-a all` or no -a. Then it joins
# the CSVs into DIR/COLLECTIVE.csv (one header) and, with --fit and/or --plot, runs
#     duet-perf --fit --plot FILE.png DIR/COLLECTIVE.csv
# (alpha-beta fit per algorithm, crossovers, the fastest per size; see duet-perf -h).
#
# BUILD (environment, default build) is the build directory, relative to the repository
# root unless absolute; DIR defaults to $BUILD/perf. Every run is attempted; the exit
# status is 1 if any failed (its output says why), 0 otherwise.
set -euo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
die() { echo "duet-perf-algos.sh: $*" >&2; exit 2; }

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BUILD:-build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
NP=2 OUT="" FIT=0 PLOT=""
while [ $# -gt 0 ]; do
    case "$1" in
        -n) NP="${2:?-n needs a value}"; shift 2 ;;
        --out) OUT="${2:?--out needs a value}"; shift 2 ;;
        --fit) FIT=1; shift ;;
        --plot) PLOT="${2:?--plot needs a value}"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        -*) die "unknown option '$1' before the collective (try -h)" ;;
        *) break ;;
    esac
done
[ $# -ge 1 ] || { usage >&2; exit 2; }
COLL="$1"; shift
OUT="${OUT:-$BUILD/perf}"
PERF="$BUILD/bin/duet-perf" DUETRUN="$BUILD/bin/duetrun"
[ -x "$PERF" ] && [ -x "$DUETRUN" ] || die "$PERF or $DUETRUN not found: build first (make)"

# the flags, without -a / --algo (ours to loop over) and --csv (ours to name)
ALGOS="all"
FLAGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        -a|--algo) ALGOS="${2:?$1 needs a value}"; shift 2 ;;
        -a*) ALGOS="${1#-a}"; shift ;;
        --algo=*) ALGOS="${1#--algo=}"; shift ;;
        --csv|--fit|--plot) die "$1 belongs before the collective (the per-algorithm CSVs are named by the script)" ;;
        *) FLAGS+=("$1"); shift ;;
    esac
done
KNOWN="$("$PERF" --list-algos "$COLL")" || die "'$COLL' is not a collective with algorithms"
[ -n "$KNOWN" ] || die "$COLL has no algorithms to choose from"
if [ "$ALGOS" = all ]; then ALGOS="$(echo $KNOWN | tr ' ' ',')"; fi

mkdir -p "$OUT"
JOINED="$OUT/$COLL.csv"
: > "$JOINED"
failed=()
IFS=, read -r -a LIST <<< "$ALGOS"
for algo in "${LIST[@]}"; do
    csv="$OUT/$COLL-$algo.csv"
    rm -f "$csv"
    echo "== $COLL -a $algo: $DUETRUN -n $NP $PERF $COLL -a $algo ${FLAGS[*]} --csv $csv"
    if ! "$DUETRUN" -n "$NP" "$PERF" "$COLL" -a "$algo" "${FLAGS[@]}" --csv "$csv"; then
        failed+=("$algo")
    fi
    if [ -s "$csv" ]; then # join: the first file's header, every file's rows
        if [ -s "$JOINED" ]; then tail -n +2 "$csv" >> "$JOINED"; else cat "$csv" > "$JOINED"; fi
    fi
done
echo "== joined: $JOINED"
rc=0
if [ "${#failed[@]}" -gt 0 ]; then
    echo "duet-perf-algos.sh: failed: ${failed[*]}" >&2
    rc=1
fi
if [ "$FIT" = 1 ] || [ -n "$PLOT" ]; then
    args=()
    [ "$FIT" = 1 ] && args+=(--fit)
    [ -n "$PLOT" ] && args+=(--plot "$PLOT")
    [ -s "$JOINED" ] || die "no rows to analyze in $JOINED"
    "$PERF" "${args[@]}" "$JOINED" || rc=1
fi
exit "$rc"
