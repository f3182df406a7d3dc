#!/usr/bin/env bash
# bench/ab_latency.sh — two builds side by side: 8-byte allreduce (the latency lane) and
# broadcast (the executor) on 2 ranks, rounds in rotating order of A, B and A again ("A2": the
# spread between A and A2 is the noise of the run). Used for issue 18 item 5 (signatures).
#
#   bench/ab_latency.sh --a BUILD_A --b BUILD_B [--rounds R] [--iters N] [--device]
#                       [--b-env VAR=VALUE]... [--case NAME=DUET_PERF_ARGS]...
#
# --device: the collectives on GPU buffers (duet-perf -G; run it under scripts/with-mps.sh).
# --b-env: B runs with this in its environment (A and A2 do not), e.g. to switch a check off.
# --case: measure this instead of the two defaults (allreduce and broadcast, -b 8 -e 8 -n N);
#         e.g. --case "pingpong=pingpong -b 8 -e 8 -n 200000" --case "ar8M=allreduce -b 8M -e 8M -n 30"
#         (the row's time_us is taken; give -n in the args, else -n N is added).
#
# Prints per build and collective the median and minimum of duet-perf's time_us over the
# rounds, and per collective the median over rounds of B / A and A2 / A.
set -euo pipefail

A="" B="" ROUNDS=30 ITERS=300000 DEV=() BENV=() CASES=()
while [ $# -gt 0 ]; do
    case $1 in
        --a) A="${2:?}"; shift 2 ;;
        --b) B="${2:?}"; shift 2 ;;
        --rounds) ROUNDS="${2:?}"; shift 2 ;;
        --iters) ITERS="${2:?}"; shift 2 ;;
        --device) DEV=(-G); shift ;;
        --b-env) BENV+=("${2:?}"); shift 2 ;;
        --case) CASES+=("${2:?}"); shift 2 ;;
        *) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 2 ;;
    esac
done
[ -n "$A" ] && [ -n "$B" ] || { echo "ab_latency.sh: --a and --b are needed" >&2; exit 2; }
[ ${#CASES[@]} -gt 0 ] || CASES=("allreduce=allreduce -b 8 -e 8" "broadcast=broadcast -b 8 -e 8")
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for i in $(seq 1 "$ROUNDS"); do
    case $((i % 3)) in 0) order="A B A2" ;; 1) order="B A2 A" ;; *) order="A2 A B" ;; esac
    for t in $order; do
        dir=$A envs=()
        [ "$t" = B ] && dir=$B envs=("${BENV[@]}")
        for cs in "${CASES[@]}"; do
            name=${cs%%=*} args=${cs#*=}
            case " $args " in *" -n "*) ;; *) args="$args -n $ITERS" ;; esac
            # shellcheck disable=SC2086
            v=$(env "${envs[@]}" "$dir/bin/duetrun" -n 2 "$dir/bin/duet-perf" "${DEV[@]}" $args 2>&1 |
                awk '/^  / && $7 ~ /^[0-9.]+$/ { v = $7 } END { print v }')
            echo "$i $t $name $v" >> "$out"
        done
    done
done
python3 - "$out" <<'PY'
import statistics as S, sys
d, per = {}, {}
for line in open(sys.argv[1]):
    i, t, m, v = line.split()
    d.setdefault((t, m), []).append(float(v))
    per.setdefault((i, m), {})[t] = float(v)
for k in sorted(d):
    print("%-3s %-9s median %.4f us  min %.4f us  (%d rounds)" % (k[0], k[1], S.median(d[k]), min(d[k]), len(d[k])))
for m in sorted({k[1] for k in d}):
    for t in ("B", "A2"):
        r = [p[t] / p["A"] for (i, mm), p in per.items() if mm == m and t in p and "A" in p]
        print("%-9s %s / A: median over rounds %.3f" % (m, t, S.median(r)))
PY
