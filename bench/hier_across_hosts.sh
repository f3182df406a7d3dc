#!/usr/bin/env bash
# bench/hier_across_hosts.sh — flat against hierarchical allreduce across two hosts made of
# network namespaces (tests/net/netns.sh; TCP over their veth link, UCX_TLS=tcp), two ranks
# on each: duet-perf allreduce with each algorithm forced (DUET_ALGO=allreduce:ALGO), and the
# tuner's own choice ("tuned"), 8 B .. 2 MiB.
#
#   bench/hier_across_hosts.sh [--build DIR] [--iters N]                          (as root)
#
# Prints, per algorithm, the time per call at each size (µs: duet-perf's time_us, the mean over
# the ranks), and the tuner's picks. Exit 77 where namespaces cannot be made.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$ROOT/build"
ITERS=30
while [ $# -gt 0 ]; do
    case $1 in
        --build) BUILD="${2:?--build needs a value}"; shift 2 ;;
        --iters) ITERS="${2:?--iters needs a value}"; shift 2 ;;
        *) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 2 ;;
    esac
done
PERF="$(cd "$BUILD" && pwd)/bin/duet-perf"
[ -x "$PERF" ] || { echo "hier_across_hosts.sh: no $PERF (build first)" >&2; exit 2; }

if [ -z "${DUETNET_SH:-}" ]; then # not yet inside the hosts: make them, run again inside
    exec bash "$ROOT/tests/net/netns.sh" run 2 -- bash "$0" --build "$BUILD" --iters "$ITERS"
fi

logs=$(mktemp -d /tmp/duet-hier-bench.XXXXXX)
trap 'rm -rf "$logs"' EXIT
addr1=$("$DUETNET_SH" addr 1)
port=30713
printf "%-8s" "algo"; for s in 8 64 512 4K 32K 256K 2M; do printf " %9s" "$s"; done; echo " (µs)"
for algo in ring hring dbtree hdbtree tuned; do
    secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    port=$((port + 1))
    pids=()
    for r in 0 1 2 3; do
        h=$((r / 2 + 1))
        force=()
        [ "$algo" = tuned ] || force=(DUET_ALGO="allreduce:$algo")
        env "${force[@]}" DUET_RANK=$r DUET_NRANKS=4 DUET_BOOT_ADDR="$addr1:$port" \
            DUET_BOOTSTRAP_IFADDR="$("$DUETNET_SH" addr $h)" DUET_JOB_SECRET="$secret" DUET_CUDA=off UCX_TLS=tcp \
            "$DUETNET_SH" exec $h timeout 300 "$PERF" allreduce -b 8 -e 2M -f 8 -n "$ITERS" >"$logs/$algo.$r" 2>&1 &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || { echo "hier_across_hosts.sh: $algo failed:" >&2; tail -3 "$logs/$algo".*; exit 1; }; done
    printf "%-8s" "$algo"
    awk '!/^#/ && NF >= 10 { printf " %9.1f", $7 }' "$logs/$algo.0"
    echo
done
printf "%-8s" "picks"
awk '!/^#/ && NF >= 10 { sub(/^auto:/, "", $6); printf " %9s", $6 }' "$logs/tuned.0"
echo
