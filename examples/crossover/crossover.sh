#!/usr/bin/env bash
# examples/crossover/crossover.sh — ring against tree for allreduce: where one overtakes the
# other as measured, and where the tuner's model says it does.
#
#   examples/crossover/crossover.sh [-n NP] [-e MAXBYTES] [-i ITERS] [--out DIR] [--plot FILE.png]
#
# 1. Measures allreduce with each algorithm forced (tools/duet-perf-algos.sh: one duet-perf run
#    per algorithm, 8 B .. MAXBYTES by 2, ITERS calls per size, every result checked).
# 2. Asks the tuner's model for both algorithms' times at the same sizes (duet-sim: the alpha and
#    beta this host measured, the same model the tuner picks with).
# 3. Prints both side by side, and the crossover of each: the smallest size from which ring is
#    at least as fast as tree at every larger size of the sweep.
# 4. With --plot (and gnuplot), draws measured points and predicted lines.
# Defaults: NP 3, MAXBYTES 16M, ITERS 200, DIR $BUILD/crossover. Exit 1 when a result was wrong
# or a run failed. BUILD (environment) is the build directory [build].
set -euo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
NP=3 MAX=16M ITERS=200 OUT="" PLOT=""
while [ $# -gt 0 ]; do
    case "$1" in
        -n) NP="${2:?-n needs a value}"; shift 2 ;;
        -e) MAX="${2:?-e needs a value}"; shift 2 ;;
        -i) ITERS="${2:?-i needs a value}"; shift 2 ;;
        --out) OUT="${2:?--out needs a value}"; shift 2 ;;
        --plot) PLOT="${2:?--plot needs a value}"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "crossover.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${BUILD:-build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
export BUILD
OUT="${OUT:-$BUILD/crossover}"
mkdir -p "$OUT"

# 1. measured
"$ROOT/tools/duet-perf-algos.sh" -n "$NP" --out "$OUT" allreduce -a ring,tree -b 8 -e "$MAX" -f 2 -n "$ITERS" \
    >"$OUT/runs.log" 2>&1 || { tail -n 20 "$OUT/runs.log" >&2; echo "crossover.sh: a run failed" >&2; exit 1; }
if awk -F, 'NR > 1 && $10 != 0 { bad = 1 } END { exit !bad }' "$OUT/allreduce.csv"; then
    echo "crossover.sh: wrong results (the wrong column):" >&2
    awk -F, 'NR > 1 && $10 != 0' "$OUT/allreduce.csv" >&2
    exit 1
fi
# 2. predicted
"$BUILD/bin/duet-sim" allreduce -n "$NP" -b 8 -e "$MAX" -f 2 --csv >"$OUT/predicted.csv" 2>"$OUT/sim.log"
model="$(sed -n 's/^duet-sim: model: //p' "$OUT/sim.log" | head -n 1)"

# 3. side by side: bytes, ring and tree measured (duet-perf: algo column ring / tree), predicted
awk -F, '
    FNR == 1 { file++; if (file == 2) for (i = 1; i <= NF; i++) col[$i] = i; next }
    file == 1 { t[$2, $6] = $7; sizes[$2] = 1 }
    file == 2 { pr[$3] = $(col["ring_us"]); pt[$3] = $(col["tree_us"]) }
    END {
        n = 0
        for (s in sizes) list[++n] = s + 0
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (list[j] < list[i]) { x = list[i]; list[i] = list[j]; list[j] = x }
        for (i = 1; i <= n; i++) {
            s = list[i]
            printf "%d %s %s %s %s\n", s, t[s, "ring"], t[s, "tree"], pr[s], pt[s]
        }
    }' "$OUT/allreduce.csv" "$OUT/predicted.csv" >"$OUT/joined.dat"

printf 'allreduce, %s ranks, float32 sum; model: %s\n' "$NP" "${model:-?}"
printf '%10s %12s %12s %12s %12s  %-8s %-8s\n' bytes "ring us" "tree us" "ring model" "tree model" measured model
awk '{ printf "%10d %12.2f %12.2f %12.2f %12.2f  %-8s %-8s\n", $1, $2, $3, $4, $5,
             ($2 <= $3 ? "ring" : "tree"), ($4 <= $5 ? "ring" : "tree") }' "$OUT/joined.dat"
# the crossover: the smallest size from which ring <= tree at it and every larger size
cross() { # column of ring, column of tree
    awk -v r="$1" -v t="$2" '{ s[NR] = $1; ok[NR] = ($r <= $t) } END {
        from = ""; for (i = NR; i >= 1 && ok[i]; i--) from = s[i]
        print (from == "" ? "none" : from) }' "$OUT/joined.dat"
}
measured="$(cross 2 3)" predicted="$(cross 4 5)"
echo "crossover (ring at least as fast as tree from here on): measured ${measured} B, the tuner's model ${predicted} B"

# 4. the picture
if [ -n "$PLOT" ]; then
    if command -v gnuplot >/dev/null; then
        gnuplot <<GP
set terminal png size 900,550 noenhanced
set output '$PLOT'
set logscale xy 2
set xlabel 'bytes per rank'
set ylabel 'us per call'
set key left top
set title 'allreduce, $NP ranks: ring vs tree, measured (points) and the model (lines)'
plot '$OUT/joined.dat' using 1:2 with points pt 7 title 'ring measured', \
     '' using 1:3 with points pt 5 title 'tree measured', \
     '' using 1:4 with lines lw 2 title 'ring model', \
     '' using 1:5 with lines lw 2 title 'tree model'
GP
        echo "plot written to $PLOT"
    else
        echo "crossover.sh: no gnuplot: no plot" >&2
    fi
fi
