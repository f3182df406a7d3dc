#!/usr/bin/env bash
# bench/vs_oshmem_reduce.sh — OpenSHMEM float-sum reductions, Duet against Open MPI's oshmem,
# 2 PEs (issue 21, item 4): bench/shmem_reduce_perf.c built with Duet's duetcc and with oshcc,
# run alternately for R rounds; prints per (form, bytes) the median over rounds of each and
# duet / oshmem (time: lower is better for Duet). oshmem (1.4) has only shmem_float_sum_to_all;
# Duet's team reduction (1.5) is set against that too. Target: <= 1.0 at 64 KiB .. 1 MiB.
#
#   bench/vs_oshmem_reduce.sh [--rounds R] [-b MIN] [-e MAX]      (BUILD=build by default)
set -euo pipefail
ROUNDS=5 MINB=1024 MAXB=1048576
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS="${2:?}"; shift 2 ;;
        -b) MINB="${2:?}"; shift 2 ;;
        -e) MAXB="${2:?}"; shift 2 ;;
        *) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 2 ;;
    esac
done
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BUILD:-build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
command -v oshcc >/dev/null && command -v oshrun >/dev/null || { echo "vs_oshmem_reduce.sh: no oshcc / oshrun" >&2; exit 1; }
out=$(mktemp -d "${TMPDIR:-/tmp}/vs_oshmem_reduce.XXXXXX")
trap 'rm -rf "$out"' EXIT; [ -n "${KEEP:-}" ] && trap - EXIT
oshcc -O2 -o "$out/osh" "$ROOT/bench/shmem_reduce_perf.c"
"$BUILD/bin/duetcc" -O2 -o "$out/duet" "$ROOT/bench/shmem_reduce_perf.c"
OSHRUN=(oshrun --mca osc ^rdma -np 2)
[ "$(id -u)" = 0 ] && OSHRUN+=(--allow-run-as-root)
for r in $(seq "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then order="duet osh"; else order="osh duet"; fi
    for lib in $order; do
        if [ "$lib" = osh ]; then "${OSHRUN[@]}" "$out/osh" -b "$MINB" -e "$MAXB" >"$out/osh.$r" 2>"$out/osh.$r.err"
        else "$BUILD/bin/duetrun" -n 2 "$out/duet" -b "$MINB" -e "$MAXB" >"$out/duet.$r"; fi
    done
done
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $ROUNDS rounds, median us over rounds"
printf '%-8s %9s %10s %10s %8s\n' form bytes duet_us oshmem_us ratio
awk '
    FNR == 1 { lib = (FILENAME ~ /\/osh\./) ? "osh" : "duet" }
    { t[lib, $1, $2] = t[lib, $1, $2] " " $3; if (!((lib $1 $2) in seen)) { seen[lib $1 $2] = 1 }
      if (lib == "duet") { key[$1 " " $2] = 1 } }
    function med(s,   a, n, i, j, x) { n = split(s, a, " ")
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { x = a[i]; a[i] = a[j]; a[j] = x }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    END { for (k in key) { split(k, f, " "); d = med(t["duet", f[1], f[2]]); o = med(t["osh", "to_all", f[2]])
            printf "%-8s %9d %10.2f %10.2f %8.2f\n", f[1], f[2], d, o, (o > 0 ? d / o : 0) } }
' "$out"/duet.* "$out"/osh.[0-9]* | sort -k1,1 -k2,2n
