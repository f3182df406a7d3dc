#!/usr/bin/env bash
# bench/sim_vs_measured.sh — duet-sim's predicted times against measured ones.
#
#   bench/sim_vs_measured.sh [--ranks "2 3 4 5 6 7 8"] [--wide-ranks "2 4"]
#                            [--sizes "8 64K 1M 16M"] [--buffers "heap host"] [--rounds R]
#                            [--calibrate] [--out DIR] [--report-only]
#                                                     (BUILD=build-perf to pick a build)
#
# For each rank count N of --ranks, allreduce with each of its algorithms forced in turn
# (duet-perf -a NAME), and for the rank counts of --wide-ranks also broadcast and
# allgather, at each size (duet-perf's size convention: a rank's largest buffer); then the
# same calls in duet-sim -n N, which costs them as the tuner does, under the same alpha-beta
# model: the tune file (DUET_TUNE_FILE, else the host's ~/.cache/duet/tune-<host>.txt).
# --calibrate measures it anew first (duetrun -n 2 duet-perf --calibrate) into DIR/tune.txt
# (unless DUET_TUNE_FILE names a file), so that the host's own file, which other runs use,
# stays as it is. DUET_TUNE_ALPHA_US and DUET_TUNE_BETA_GBPS, if set, apply to both. Forced
# calls that an algorithm cannot run (rd allgather on 3 ranks) are left out.
#
# Measured: duet-perf's time (each rank's average over its timed loop, mean over ranks),
# the median over --rounds runs; iterations per size: 64 MiB / size, between 20 and 2000
# (a tenth more as warm-up), no verification (-c 0). Each row is its own duetrun job, once
# per kind of buffer in --buffers (duet-perf --buffers: heap, the default, where messages of
# 4 KiB or more move with one copy; host, malloc'd, two copies — what the model assumes).
# Sizes where the call has no element (allgather of 8 B on 4 ranks) are left out.
#
# Prints (and writes DIR/sim_vs_measured.md; raw CSVs in DIR/raw, DIR defaults to
# $BUILD/bench/sim_vs_measured) a markdown table
#   | ranks | collective | algo | bytes | predicted us | <buffers> us | error % | ... | pick |
# error = (predicted - measured) / measured; pick: "tuner" on the algorithm duet-sim (the
# tuner) picks, "best" on the one measured fastest (with the first kind of buffers). Then,
# per rank count and kind of buffers, the median and largest |error|, and per (collective,
# size) how much slower the tuner's pick measured than the fastest algorithm. The machine's
# load average is printed before and after: the numbers mean little on a busy machine.
# --report-only prints the tables again from DIR/raw's measurements without measuring, with
# the predictions of the duet-sim built now (under the run's tune file).
set -euo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

RANKS="2 3 4 5 6 7 8"
WIDE="2 4"
SIZES="8 64K 1M 16M"
BUFFERS="heap"
ROUNDS=1
CALIBRATE=0
REPORT_ONLY=0
OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --ranks) RANKS="${2:?--ranks needs a value}"; shift 2 ;;
        --wide-ranks) WIDE="${2?--wide-ranks needs a value}"; shift 2 ;;
        --sizes) SIZES="${2:?--sizes needs a value}"; shift 2 ;;
        --buffers) BUFFERS="${2:?--buffers needs a value}"; shift 2 ;;
        --rounds) ROUNDS="${2:?--rounds needs a value}"; shift 2 ;;
        --calibrate) CALIBRATE=1; shift ;;
        --report-only) REPORT_ONLY=1; shift ;;
        --out) OUT="${2:?--out needs a value}"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "sim_vs_measured.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
case "$ROUNDS" in ''|*[!0-9]*|0) echo "sim_vs_measured.sh: --rounds needs a positive integer" >&2; exit 2 ;; esac
for b in $BUFFERS; do
    case "$b" in heap|host) ;; *) echo "sim_vs_measured.sh: --buffers takes heap and/or host (got '$b')" >&2; exit 2 ;; esac
done
for n in $RANKS $WIDE; do
    case "$n" in ''|*[!0-9]*|0|1) echo "sim_vs_measured.sh: rank counts must be integers >= 2 (got '$n')" >&2; exit 2 ;; esac
done

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BUILD:-build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
OUT="${OUT:-$BUILD/bench/sim_vs_measured}"
PERF="$BUILD/bin/duet-perf"
SIM="$BUILD/bin/duet-sim"
DUETRUN="$BUILD/bin/duetrun"
die() { echo "sim_vs_measured.sh: error: $*" >&2; exit 1; }
for x in "$PERF" "$SIM" "$DUETRUN"; do [ -x "$x" ] || die "$x not found: build Duet first (make, or cmake --build $BUILD)"; done
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
CALLS="$OUT/raw/calls.txt"

# bytes of a size like 64K
bytes_of() {
    awk -v s="$1" 'BEGIN { m = 1; u = toupper(substr(s, length(s))); if (u == "K") m = 1024; else if (u == "M") m = 1048576;
        else if (u == "G") m = 1073741824; if (m > 1) s = substr(s, 1, length(s) - 1); printf "%d\n", s * m }'
}

# The calls, with duet-sim's prediction of each (under DUET_TUNE_FILE, or the host's tune
# file): "ranks coll algo bytes predicted pick(1/0)", one line each.
predict_calls() {
    : >"$CALLS"
    for n in $RANKS; do
        colls="allreduce"
        for w in $WIDE; do [ "$w" = "$n" ] && colls="allreduce broadcast allgather"; done
        for coll in $colls; do
            algos=$("$PERF" --list-algos "$coll")
            for size in $SIZES; do
                bytes=$(bytes_of "$size")
                # the tuner's numbers for this call: one CSV row, a column per algorithm
                sim_csv="$OUT/raw/sim-$coll-$n-$bytes.csv"
                "$SIM" "$coll" -n "$n" -b "$bytes" -e "$bytes" --csv >"$sim_csv"
                [ "$(awk -F, 'NR == 2 { print $4 }' "$sim_csv")" != 0 ] || continue # no element
                for algo in $algos; do # (an algorithm that cannot run the call has an empty cell)
                    awk -F, -v algo="$algo" -v n="$n" -v coll="$coll" -v bytes="$bytes" '
                        NR == 1 { for (i = 9; i < NF; i++) if ($i == algo "_us") col = i; next }
                        NR == 2 && col && $col != "" { print n, coll, algo, bytes, $col, ($NF == algo) }' "$sim_csv" >>"$CALLS"
                done
            done
        done
    done
}

if [ "$REPORT_ONLY" = 1 ]; then
    [ -s "$OUT/raw/meta.sh" ] && [ -s "$CALLS" ] || die "no earlier run in $OUT/raw to report"
    # shellcheck disable=SC1091 # written by the measuring run, below
    . "$OUT/raw/meta.sh"
    # the same calls, predicted again by this duet-sim under the run's model
    [ -z "$TUNE_FILE" ] || export DUET_TUNE_FILE="$TUNE_FILE"
    predict_calls
else
    mkdir -p "$OUT/raw"
    rm -f "$OUT"/raw/*.csv "$OUT"/raw/*.txt "$OUT"/raw/meta.sh

    if [ "$CALIBRATE" = 1 ]; then
        export DUET_TUNE_FILE="${DUET_TUNE_FILE:-$OUT/tune.txt}"
        "$DUETRUN" -n 2 --timeout 120 "$PERF" --calibrate >&2 || die "calibration failed"
    fi

    LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
    START=$(date -u '+%Y-%m-%d %H:%M UTC')
    MODEL=$("$SIM" allreduce -n 2 -b 8 -e 8 | grep '^# model:' | sed 's/^# model: //')

    # One duet-perf job: prints the measured time in us, or nothing if the algorithm cannot run it.
    measure() { # measure <ranks> <collective> <algo> <bytes> <buffers> <round>
        local n=$1 coll=$2 algo=$3 bytes=$4 bufs=$5 round=$6
        local iters=$((67108864 / (bytes > 0 ? bytes : 1)))
        [ "$iters" -gt 2000 ] && iters=2000
        [ "$iters" -lt 20 ] && iters=20
        local warm=$((iters / 10 > 3 ? iters / 10 : 3))
        local csv="$OUT/raw/$coll-$n-$algo-$bytes-$bufs-$round.csv"
        "$DUETRUN" -n "$n" --timeout 600 "$PERF" "$coll" -b "$bytes" -e "$bytes" -n "$iters" -w "$warm" -c 0 \
            -a "$algo" -V 0 --buffers "$bufs" --csv "$csv" </dev/null >"$OUT/raw/last.log" 2>&1 ||
            die "duet-perf $coll -a $algo -b $bytes on $n ranks failed: $(tail -5 "$OUT/raw/last.log")"
        # op,bytes,count,dtype,redop,algo,time_us,...: the one row, if the algorithm could run it
        awk -F, 'NR > 1 && $1 != "" { print $7; exit }' "$csv"
    }

    predict_calls

    # Rounds outermost, so that a burst of other work on the machine spoils one round of many
    # calls rather than every round of a few: the median then leaves it out.
    for r in $(seq 1 "$ROUNDS"); do
        while read -r n coll algo bytes _; do
            for bufs in $BUFFERS; do
                t=$(measure "$n" "$coll" "$algo" "$bytes" "$bufs" "$r")
                echo "$t" >>"$OUT/raw/times-$coll-$n-$algo-$bytes-$bufs.txt"
                echo "  round $r: $n ranks $coll $algo $bytes B, $bufs buffers: ${t:-cannot run} us" >&2
            done
        done <"$CALLS"
    done

    LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
    COMMAND="BUILD=${BUILD#"$ROOT"/} bench/sim_vs_measured.sh --ranks \"$RANKS\" --wide-ranks \"$WIDE\" --sizes \"$SIZES\" --buffers \"$BUFFERS\" --rounds $ROUNDS$([ "$CALIBRATE" = 0 ] || echo " --calibrate")"
    TUNE_FILE="${DUET_TUNE_FILE:-}"
    for v in START LOAD_BEFORE LOAD_AFTER MODEL COMMAND RANKS WIDE SIZES BUFFERS TUNE_FILE; do
        printf '%s=%q\n' "$v" "${!v}"
    done >"$OUT/raw/meta.sh"
fi

# rows: ranks coll algo bytes predicted pick(1/0) measured-per-kind-of-buffers...
ROWS="$OUT/raw/rows.txt"
: >"$ROWS"
while read -r n coll algo bytes pred pick; do
    row="$n $coll $algo $bytes $pred $pick"
    for bufs in $BUFFERS; do
        m=$(tr '\n' ' ' <"$OUT/raw/times-$coll-$n-$algo-$bytes-$bufs.txt" | median)
        row="$row ${m:-NA}"
    done
    echo "$row" >>"$ROWS"
done <"$CALLS"

{
    echo "- date: $START; load average (1, 5, 15 min) before: $LOAD_BEFORE, after: $LOAD_AFTER"
    echo "- model (duet-sim and the tuner): $MODEL"
    echo "- command: $COMMAND"
    echo
    awk -v kinds="$BUFFERS" '
        { row[NR] = $0; key = $1 " " $2 " " $4; if ($7 != "NA" && (!(key in best) || $7 < best[key])) best[key] = $7 }
        END {
            nk = split(kinds, kind, " ")
            printf "| ranks | collective | algo | bytes | predicted us |"
            for (k = 1; k <= nk; k++) printf " %s buffers us | error %% |", kind[k]
            print " pick |"
            printf "|---:|---|---|---:|---:|"
            for (k = 1; k <= nk; k++) printf "---:|---:|"
            print "---|"
            for (i = 1; i <= NR; i++) {
                split(row[i], f, " "); key = f[1] " " f[2] " " f[4]
                printf "| %d | %s | %s | %d | %.2f |", f[1], f[2], f[3], f[4], f[5]
                for (k = 1; k <= nk; k++) {
                    m = f[6 + k]
                    if (m == "NA") printf " - | - |"
                    else printf " %.2f | %+.0f |", m, 100 * (f[5] - m) / m
                }
                mark = f[6] == 1 ? "tuner" : ""
                if (f[7] != "NA" && f[7] == best[key]) mark = mark (mark != "" ? ", " : "") "best"
                print " " mark " |"
            }
        }' "$ROWS"
    echo
    echo "| ranks | buffers | rows | median abs error % | largest abs error % | rows within 25% |"
    echo "|---:|---|---:|---:|---:|---:|"
    for n in $RANKS; do
        k=0
        for bufs in $BUFFERS; do
            k=$((k + 1))
            awk -v n="$n" -v c=$((6 + k)) '$1 == n && $c != "NA" { e = 100 * ($5 - $c) / $c; if (e < 0) e = -e; print e }' "$ROWS" |
                sort -g | awk -v n="$n" -v b="$bufs" '{ v[NR] = $1; if ($1 <= 25) ok++ }
                    END { if (NR) printf "| %d | %s | %d | %.0f | %.0f | %d |\n", n, b, NR,
                          (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, v[NR], ok }'
        done
    done
    echo
    awk -v kinds="$BUFFERS" '
        { key = $1 " " $2 " " $4
          if (!(key in seen)) { seen[key] = 1; keys[++k] = key }
          for (c = 7; c <= NF; c++) if ($c != "NA") {
              if (!((key, c) in best) || $c < best[key, c]) { best[key, c] = $c; fast[key, c] = $3 }
              if ($6 == 1) pt[key, c] = $c }
          if ($6 == 1) pick[key] = $3 }
        END {
            nk = split(kinds, kind, " ")
            printf "| ranks | collective | bytes | tuner'"'"'s pick |"
            for (j = 1; j <= nk; j++) printf " fastest, %s | pick / fastest |", kind[j]
            printf "\n|---:|---|---:|---|"
            for (j = 1; j <= nk; j++) printf "---|---:|"
            printf "\n"
            for (i = 1; i <= k; i++) {
                key = keys[i]; split(key, f, " ")
                printf "| %d | %s | %d | %s |", f[1], f[2], f[3], (key in pick) ? pick[key] : "?"
                for (j = 1; j <= nk; j++) {
                    c = 6 + j
                    if ((key, c) in best && (key, c) in pt) printf " %s | %.2f |", fast[key, c], pt[key, c] / best[key, c]
                    else printf " - | - |"
                }
                printf "\n"
            }
        }' "$ROWS"
} | tee "$OUT/sim_vs_measured.md"
