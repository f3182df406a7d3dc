#!/usr/bin/env bash
# bench/ft_bench.sh — what failures cost, over rank counts (issue 5, item 9).
#
#   bench/ft_bench.sh [--ranks "2 4 8"] [--rounds R] [--out DIR]      (BUILD=build ...)
#
# For each rank count and round, runs `duetrun -n N --ft build/bin/ft_perf` (bench/ft_perf.c:
# the last rank dies; every survivor measures detection, a revoke's reach, agree and shrink),
# then prints per quantity and rank count the median and the maximum over every survivor of
# every round, in microseconds, and writes the same table as DIR/ft_bench.md (DIR defaults to
# $BUILD/bench/ft). Targets (one host, default settings): detection median <= 100 ms, shrink
# <= 20 ms at 8 ranks.
set -euo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
RANKS="2 4 8"
ROUNDS=10
OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --ranks) RANKS="${2:?--ranks needs a value}"; shift 2 ;;
        --rounds) ROUNDS="${2:?--rounds needs a value}"; shift 2 ;;
        --out) OUT="${2:?--out needs a value}"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "ft_bench.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
case "$ROUNDS" in ''|*[!0-9]*|0) echo "ft_bench.sh: --rounds needs a positive integer" >&2; exit 2 ;; esac

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BUILD:-build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
OUT="${OUT:-$BUILD/bench/ft}"
mkdir -p "$OUT"
[ -x "$BUILD/bin/ft_perf" ] || { echo "ft_bench.sh: $BUILD/bin/ft_perf not found: build first" >&2; exit 1; }

RAW="$OUT/raw.csv"
: >"$RAW"
FAILED=0
for n in $RANKS; do
    for r in $(seq 1 "$ROUNDS"); do
        if ! timeout 120 "$BUILD/bin/duetrun" -n "$n" --ft "$BUILD/bin/ft_perf" >>"$RAW" 2>"$OUT/last.log"; then
            echo "ft_bench.sh: $n ranks, round $r failed:" >&2
            tail -n 5 "$OUT/last.log" >&2
            FAILED=1
        fi
    done
done

TABLE="$OUT/ft_bench.md"
{
    echo "# What failures cost ($(date -u +%Y-%m-%d), $(nproc) CPUs, $(uname -r))"
    echo
    echo "bench/ft_bench.sh --ranks \"$RANKS\" --rounds $ROUNDS; microseconds over every survivor of every round"
    echo
    echo "| what | ranks | samples | median us | max us |"
    echo "|---|---:|---:|---:|---:|"
    for what in detect revoke agree shrink; do
        for n in $RANKS; do
            awk -F, -v w="$what" -v n="$n" '$1 == w && $2 == n { print $4 }' "$RAW" | sort -g |
                awk -v w="$what" -v n="$n" '{ v[NR] = $1 } END {
                    if (NR == 0) { printf "| %s | %s | 0 | - | - |\n", w, n; exit }
                    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                    printf "| %s | %s | %d | %.1f | %.1f |\n", w, n, NR, m, v[NR] }'
        done
    done
} >"$TABLE"
cat "$TABLE"
exit "$FAILED"
