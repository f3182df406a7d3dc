#!/usr/bin/env bash
# bench/shmem_rate.sh — 8-byte one-sided rates of an OpenSHMEM program on Duet's OpenSHMEM
# (compat/shmem) against Open MPI's oshmem, 2 PEs: bench/shmem_perf.c (put, get, atomic) and
# bench/shmem_amo_perf.c (heap against static-data atomics), each built with duetcc and with
# oshcc, runs alternating so both see the same machine.
#
#   bench/shmem_rate.sh [--rounds R] [--before LIBDIR] [--out DIR]     (BUILD=build by default)
#
# --before LIBDIR also runs the Duet binaries on an older build's libraries (LD_LIBRARY_PATH
# at LIBDIR, e.g. a worktree's build/lib): "before" beside "after". Prints one line per run:
# `MODE ROUND before after oshmem` in ns per operation (before "-" without --before), then
# shmem_amo_perf's lines; the CSVs stay in DIR (default $BUILD/bench/shmem_rate).
set -euo pipefail
ROUNDS=5 BEFORE="" OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS="${2:?}"; shift 2 ;;
        --before) BEFORE="${2:?}"; shift 2 ;;
        --out) OUT="${2:?}"; shift 2 ;;
        *) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 2 ;;
    esac
done
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BUILD:-build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
OUT="${OUT:-$BUILD/bench/shmem_rate}"
command -v oshcc >/dev/null || { echo "shmem_rate.sh: no oshcc (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 2; }
mkdir -p "$OUT"
for p in shmem_perf shmem_amo_perf; do
    "$BUILD/bin/duetcc" -O2 "$ROOT/bench/$p.c" -o "$OUT/${p}_duet"
    oshcc -O2 "$ROOT/bench/$p.c" -o "$OUT/${p}_osh"
done
run=("$BUILD/bin/duetrun" -n 2) osh=(oshrun --mca osc ^rdma -np 2)
[ "$(id -u)" = 0 ] && osh=(oshrun --allow-run-as-root --mca osc ^rdma -np 2)
ns() { tail -n 1 "$1" | cut -d, -f7 | awk '{ printf "%.1f", $1 * 1000 }'; }
for mode in put get atomic; do
    for i in $(seq "$ROUNDS"); do
        b=-
        if [ -n "$BEFORE" ]; then
            LD_LIBRARY_PATH="$BEFORE" "${run[@]}" "$OUT/shmem_perf_duet" $mode -b 8 -e 8 -n 200000 \
                --csv "$OUT/before-$mode-$i.csv" >/dev/null
            b=$(ns "$OUT/before-$mode-$i.csv")
        fi
        "${run[@]}" "$OUT/shmem_perf_duet" $mode -b 8 -e 8 -n 200000 --csv "$OUT/after-$mode-$i.csv" >/dev/null
        "${osh[@]}" "$OUT/shmem_perf_osh" $mode -b 8 -e 8 -n 200000 --csv "$OUT/osh-$mode-$i.csv" >/dev/null
        echo "$mode $i $b $(ns "$OUT/after-$mode-$i.csv") $(ns "$OUT/osh-$mode-$i.csv")"
    done
done
for i in $(seq "$ROUNDS"); do
    [ -z "$BEFORE" ] || echo "amo before $(LD_LIBRARY_PATH="$BEFORE" "${run[@]}" "$OUT/shmem_amo_perf_duet" -r 1 | tail -n 1)"
    echo "amo after $("${run[@]}" "$OUT/shmem_amo_perf_duet" -r 1 | tail -n 1)"
    echo "amo oshmem $("${osh[@]}" "$OUT/shmem_amo_perf_osh" -r 1 | tail -n 1)"
done
