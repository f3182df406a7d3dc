#!/usr/bin/env bash
# bench/validate_scale.sh — the cost model against the machine at several rank counts (issue
# 20, item 5): for each N, a calibration of its own (duet-perf --calibrate into a tune file
# for N ranks) and then duet-perf --validate, every algorithm of the six collectives forced,
# and the tuner's own run ("auto", learning on unless DUET_TUNE_LEARN=0 is set).
#
#   bench/validate_scale.sh [--build DIR] [--out DIR] [--rounds R] [--max BYTES] N...
#   scripts/with-mps.sh bench/validate_scale.sh --device [--buffers heap,host] [--rounds 3] N...
#
# Give only rank counts the machine holds without oversubscription (one core per rank).
# Writes OUT/N/{tune.txt,calibrate.txt,validate.txt,validate.csv} and prints, per N, the
# validation's summary lines and from the CSV: cells whose auto run is within 5 % and 10 % of
# the fastest forced algorithm's, and the worst auto / fastest.
# --device: the GPU model instead (duet-perf --calibrate --device into the tune file's "-gpu"
# twin, then --validate --device once per kind of buffers, validate-heap.* / validate-host.*:
# GPU heap and cudaMalloc); ranks share the GPUs (run it under scripts/with-mps.sh).
# Host runs also print the hardware floor before and after (bench/raw_pingpong's round trip
# of a cache line between ranks 0 and 1): a virtual machine can move its vCPUs between
# physical cores mid-run (seen here: 0.135 against 0.54 us, the same processes), and a run
# whose floor moved by more than half is marked "the machine moved": its errors are not the
# model's.
set -euo pipefail

BUILD=build OUT=bench-validate ROUNDS=5 MAX=64M NS=() DEVICE=0 BUFFERS=heap,host
while [ $# -gt 0 ]; do
    case $1 in
        --device) DEVICE=1; shift ;;
        --buffers) BUFFERS="${2:?}"; shift 2 ;;
        --build) BUILD="${2:?}"; shift 2 ;;
        --out) OUT="${2:?}"; shift 2 ;;
        --rounds) ROUNDS="${2:?}"; shift 2 ;;
        --max) MAX="${2:?}"; shift 2 ;;
        [0-9]*) NS+=("$1"); shift ;;
        *) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 2 ;;
    esac
done
[ ${#NS[@]} -gt 0 ] || { echo "validate_scale.sh: give the rank counts" >&2; exit 2; }
run="$BUILD/bin/duetrun" perf="$BUILD/bin/duet-perf"
[ -x "$run" ] && [ -x "$perf" ] || { echo "validate_scale.sh: no $run or $perf (build first)" >&2; exit 2; }
cores=$(nproc)

# the raw round trip of a cache line between ranks 0 and 1 (us), empty without raw_pingpong
floor_us() {
    [ -x "$BUILD/bin/raw_pingpong" ] || return 0
    "$run" -n 2 "$BUILD/bin/raw_pingpong" 100000 2>/dev/null | awk '/bare load loop/ { print $(NF-4); exit }'
}

# auto against the fastest forced algorithm of each (collective, size) cell of a CSV
auto_vs_fastest() {
    awk -F, 'NR > 1 {
        key = $1 SUBSEP $2
        if ($3 == "auto") auto[key] = $5
        else if (!(key in best) || $5 < best[key]) best[key] = $5
    }
    END {
        for (k in auto) {
            if (!(k in best)) continue
            n++; r = auto[k] / best[k]
            if (r <= 1.05) w5++
            if (r <= 1.10) w10++
            if (r > worst) { worst = r; split(k, at, SUBSEP); wat = at[1] " " at[2] " B" }
        }
        printf "auto within 5 %%: %d of %d, within 10 %%: %d of %d, worst auto / fastest %.2fx (%s)\n",
               w5, n, w10, n, worst, wat
    }' "$1"
}

for n in "${NS[@]}"; do
    [ "$DEVICE" = 1 ] || [ "$n" -le "$cores" ] || echo "validate_scale.sh: $n ranks on $cores cores: oversubscribed" >&2
    dir="$OUT/$n"
    mkdir -p "$dir"
    rm -f "$dir/tune.txt" "$dir/tune.txt-gpu"
    export DUET_TUNE_FILE="$dir/tune.txt"
    start=$(date +%s)
    if [ "$DEVICE" = 1 ]; then
        "$run" -n "$n" "$perf" --calibrate --device --rounds "$ROUNDS" >"$dir/calibrate.txt"
        echo "== $n ranks, GPU model ($(date -u +%H:%M) UTC)"
        grep -E "^  [a-z_]+ |fit error" "$dir/calibrate.txt" | sed 's/^/  calibrate: /'
        for b in ${BUFFERS//,/ }; do
            "$run" -n "$n" "$perf" --validate --device --buffers "$b" --rounds "$ROUNDS" -e "$MAX" \
                --csv "$dir/validate-$b.csv" >"$dir/validate-$b.txt"
            echo "  -- buffers $b ($(($(date +%s) - start)) s)"
            grep "^# summary" "$dir/validate-$b.txt"
            auto_vs_fastest "$dir/validate-$b.csv"
        done
        continue
    fi
    f0=$(floor_us)
    "$run" -n "$n" "$perf" --calibrate >"$dir/calibrate.txt"
    "$run" -n "$n" "$perf" --validate --rounds "$ROUNDS" -e "$MAX" --csv "$dir/validate.csv" >"$dir/validate.txt"
    f1=$(floor_us)
    echo "== $n ranks ($(($(date +%s) - start)) s, $(date -u +%H:%M) UTC, load $(cut -d' ' -f1 /proc/loadavg))"
    awk -v a="$f0" -v b="$f1" 'BEGIN {
        if (a == "" || b == "") { print "  floor: raw_pingpong not built"; exit }
        moved = (a > 1.5 * b || b > 1.5 * a) ? ": the machine moved, the errors are not the model'"'"'s" : ""
        printf "  floor (raw round trip, ranks 0-1): %s us before, %s us after%s\n", a, b, moved }'
    grep -E "^  [a-z_]+ |fit error" "$dir/calibrate.txt" | sed 's/^/  calibrate: /'
    grep "^# summary" "$dir/validate.txt"
    auto_vs_fastest "$dir/validate.csv"
done
