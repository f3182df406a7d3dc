#!/usr/bin/env bash
# examples/crossover/crossover.sh — ring against tree for allreduce: where one overtakes the
# other as measured, and where the tuner's model says it does.
#
#   examples/crossover/crossover.sh [--device] [-n NP] [-e MAXBYTES] [-i ITERS] [--out DIR] [--plot FILE.png]
#
# 1. Measures allreduce with each algorithm forced (tools/duet-perf-algos.sh: one duet-perf run
#    per algorithm, 8 B .. MAXBYTES by 2, ITERS calls per size, every result checked).
# 2. Asks the tuner's model for both algorithms' times at the same sizes (duet-sim: the alpha and
#    beta this host measured, the same model the tuner picks with).
# 3. Prints both side by side, and the crossover of each: the smallest size from which ring is
#    at least as fast as tree at every larger size of the sweep.
# 4. With --plot (and gnuplot), draws measured points and predicted lines.
# --device: the same on GPU buffers (duet-perf --device allreduce: duet_malloc_device buffers, the
#    calls on one stream; a forced ring or tree runs the GPU executor, never the direct or one-shot
#    kernels), against the GPU executor's model: its alpha and beta read from the TUNE log of a
#    probe run (one call per size and algorithm, which also logs the library's own prediction,
#    compared with duet-sim's), and duet-sim run per size with the executor's chunk.
# Defaults: NP 3 (--device: 2), MAXBYTES 16M, ITERS 200, DIR $BUILD/crossover (--device:
# $BUILD/crossover-gpu). Exit 1 when a result was wrong or a run failed. BUILD (environment) is
# the build directory [build].
set -euo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
NP="" MAX=16M ITERS=200 OUT="" PLOT="" DEVICE=0
while [ $# -gt 0 ]; do
    case "$1" in
        -G|--device) DEVICE=1; shift ;;
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
if [ "$DEVICE" = 1 ]; then
    NP="${NP:-2}" OUT="${OUT:-$BUILD/crossover-gpu}" PERFDEV=(-G) WHERE="on the GPU, "
else
    NP="${NP:-3}" OUT="${OUT:-$BUILD/crossover}" PERFDEV=() WHERE=""
fi
mkdir -p "$OUT"

# 0. (--device) the GPU executor's model, as the tuner has it: one call per size and algorithm
# with the TUNE log on ("gpu model: alpha A us per message, beta B GB/s", and per call the
# library's own prediction of the forced algorithm). The first GPU collective on a host without
# a GPU tune file measures the model and writes the file: here, not inside the timed sweep.
if [ "$DEVICE" = 1 ]; then
    for algo in ring tree; do
        DUET_DEBUG=INFO DUET_DEBUG_SUBSYS=TUNE "$BUILD/bin/duetrun" -n "$NP" "$BUILD/bin/duet-perf" allreduce -G \
            -a "$algo" -b 8 -e "$MAX" -f 2 -n 1 -w 0 -c 0 >"$OUT/probe-$algo.log" 2>&1 ||
            { tail -n 20 "$OUT/probe-$algo.log" >&2; echo "crossover.sh: the --device probe run ($algo) failed" >&2; exit 1; }
    done
    read -r ALPHA BETA < <(sed -n 's/.*\[TUNE\] gpu model: alpha \([0-9.e+-]*\) us per message, beta \([0-9.e+-]*\) GB\/s.*/\1 \2/p' \
        "$OUT/probe-ring.log" | head -n 1) || true
    [ -n "${ALPHA:-}" ] && [ -n "${BETA:-}" ] ||
        { echo "crossover.sh: no 'gpu model' line in the TUNE log ($OUT/probe-ring.log)" >&2; exit 1; }
    # a size whose call did not go through the tuner with the forced algorithm (a direct or
    # one-shot kernel instead): the measured column would not be that algorithm
    for algo in ring tree; do
        sed -n "s/.*\[TUNE\] allreduce \([0-9]*\) bytes [a-z0-9]*, $NP ranks, gpu, [a-z -]*: $algo=\([0-9.]*\)us -> $algo (forced by DUET_ALGO).*/\1 \2/p" \
            "$OUT/probe-$algo.log" | sort -n -u -k1,1 >"$OUT/library-$algo.dat"
        if grep -q 'kernel' "$OUT/probe-$algo.log" || [ ! -s "$OUT/library-$algo.dat" ]; then
            echo "crossover.sh: warning: -a $algo did not run the executor at every size (see $OUT/probe-$algo.log)" >&2
        fi
    done
fi

# 1. measured
"$ROOT/tools/duet-perf-algos.sh" -n "$NP" --out "$OUT" allreduce -a ring,tree ${PERFDEV[@]+"${PERFDEV[@]}"} -b 8 -e "$MAX" -f 2 -n "$ITERS" \
    >"$OUT/runs.log" 2>&1 || { tail -n 20 "$OUT/runs.log" >&2; echo "crossover.sh: a run failed" >&2; exit 1; }
if awk -F, 'NR > 1 && $10 != 0 { bad = 1 } END { exit !bad }' "$OUT/allreduce.csv"; then
    echo "crossover.sh: wrong results (the wrong column):" >&2
    awk -F, 'NR > 1 && $10 != 0' "$OUT/allreduce.csv" >&2
    exit 1
fi
# 2. predicted
if [ "$DEVICE" = 0 ]; then
    "$BUILD/bin/duet-sim" allreduce -n "$NP" -b 8 -e "$MAX" -f 2 --csv >"$OUT/predicted.csv" 2>"$OUT/sim.log"
    model="$(sed -n 's/^duet-sim: model: //p' "$OUT/sim.log" | head -n 1)"
else
    # The GPU tuner costs a call with the GPU model and the executor's chunk, which grows with
    # the call: one channel per 256 KiB (src/cuda/duet_cuda_exec.c: CHANNEL_BYTES), at most
    # min(64, 64 MiB / (n x 4 slots x 128 KiB)) channels, a chunk of channels x (128 KiB - 64)
    # (duet_cuda_exec_kern.h). duet-sim takes the chunk from DUET_COLL_CHUNK: one run per size.
    : >"$OUT/predicted.csv" ; : >"$OUT/sim.log"
    for s in $(awk -F, 'NR > 1 { print $2 }' "$OUT/allreduce.csv" | sort -n -u); do
        chunk="$(awk -v s="$s" -v n="$NP" 'BEGIN { c = int((s + 262143) / 262144); if (c < 1) c = 1
            m = int(67108864 / (n * 4 * 131072)); if (m > 64) m = 64; if (m < 1) m = 1; if (c > m) c = m
            printf "%d", c * (131072 - 64) }')"
        DUET_COLL_CHUNK="$chunk" "$BUILD/bin/duet-sim" allreduce -n "$NP" -b "$s" -e "$s" --alpha "$ALPHA" --beta "$BETA" \
            --csv >"$OUT/predicted-1.csv" 2>>"$OUT/sim.log"
        if [ -s "$OUT/predicted.csv" ]; then tail -n +2 "$OUT/predicted-1.csv" >>"$OUT/predicted.csv"
        else cat "$OUT/predicted-1.csv" >"$OUT/predicted.csv"; fi
    done
    rm -f "$OUT/predicted-1.csv"
    model="GPU executor: alpha $ALPHA us per message, beta $BETA GB/s (the TUNE log of a device run; duet-sim at the executor's chunk)"
fi

# 3. side by side: bytes, ring and tree measured (duet-perf: algo column ring / tree), predicted
awk -F, '
    FNR == 1 { file++; if (file == 2) for (i = 1; i <= NF; i++) col[$i] = i; next }
    file == 1 { a = $6; sub(/^gpu:/, "", a); t[$2, a] = $7; sizes[$2] = 1 }
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

printf 'allreduce, %s%s ranks, float32 sum; model: %s\n' "$WHERE" "$NP" "${model:-?}"
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
if [ "$DEVICE" = 1 ]; then
    # duet-sim's columns against what the library itself predicted for the forced calls (TUNE
    # log, 2 decimals): they should agree; a gap means the script's chunk is not the executor's
    awk 'FILENAME ~ /library-ring/ { lr[$1] = $2; next } FILENAME ~ /library-tree/ { lt[$1] = $2; next }
        { for (k = 0; k < 2; k++) { lib = k ? lt[$1] : lr[$1]; sim = k ? $5 : $4
              if (lib == "") { miss++; continue }
              d = (sim > lib ? sim - lib : lib - sim) / (lib > 0.01 ? lib : 0.01); if (d > worst) { worst = d; at = $1 } } }
        END { printf "the library'"'"'s own GPU predictions (TUNE log of the probe runs) against duet-sim'"'"'s: "
              if (miss) printf "%d sizes missing from the log; ", miss
              printf "largest difference %.1f%% (at %s B)\n", 100 * worst, at == "" ? "-" : at }' \
        "$OUT/library-ring.dat" "$OUT/library-tree.dat" "$OUT/joined.dat"
fi

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
set title 'allreduce, ${WHERE}$NP ranks: ring vs tree, measured (points) and the model (lines)'
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
