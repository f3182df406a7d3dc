#!/usr/bin/env bash
# bench/ab_latency.sh — two builds side by side: 8-byte allreduce (the latency lane) and
# broadcast (the executor) on 2 ranks, rounds in rotating order of A, B and A again ("A2": the
# spread between A and A2 is the noise of the run). Used for issue 18 item 5 (signatures).
#
#   bench/ab_latency.sh --a BUILD_A --b BUILD_B [--rounds R] [--iters N] [--device]
#                       [--b-env VAR=VALUE]...
#
# --device: the collectives on GPU buffers (duet-perf -G; run it under scripts/with-mps.sh).
# --b-env: B runs with this in its environment (A and A2 do not), e.g. to switch a check off.
#
# Prints per build and collective the median and minimum of duet-perf's time_us over the
# rounds, and per collective the median over rounds of B / A and A2 / A.
set -euo pipefail

A="" B="" ROUNDS=30 ITERS=300000 DEV=() BENV=()
while [ $# -gt 0 ]; do
    case $1 in
        --a) A="${2:?}"; shift 2 ;;
        --b) B="${2:?}"; shift 2 ;;
        --rounds) ROUNDS="${2:?}"; shift 2 ;;
        --iters) ITERS="${2:?}"; shift 2 ;;
        --device) DEV=(-G); shift ;;
        --b-env) BENV+=("${2:?}"); shift 2 ;;
        *) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 2 ;;
    esac
done
[ -n "$A" ] && [ -n "$B" ] || { echo "ab_latency.sh: --a and --b are needed" >&2; exit 2; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for i in $(seq 1 "$ROUNDS"); do
    case $((i % 3)) in 0) order="A B A2" ;; 1) order="B A2 A" ;; *) order="A2 A B" ;; esac
    for t in $order; do
        dir=$A envs=()
        [ "$t" = B ] && dir=$B envs=("${BENV[@]}")
        for m in allreduce broadcast; do
            v=$(env "${envs[@]}" "$dir/bin/duetrun" -n 2 "$dir/bin/duet-perf" "${DEV[@]}" "$m" -b 8 -e 8 -n "$ITERS" 2>&1 |
                awk -v m="$m" '$1 == m { print $7 }')
            echo "$i $t $m $v" >> "$out"
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
for m in ("allreduce", "broadcast"):
    for t in ("B", "A2"):
        r = [p[t] / p["A"] for (i, mm), p in per.items() if mm == m and t in p and "A" in p]
        print("%-9s %s / A: median over rounds %.3f" % (m, t, S.median(r)))
PY
