#!/usr/bin/env bash
# bench/ucx_floor.sh — the network floor for issue 8: UCX's own ucx_perftest between two hosts
# made of network namespaces (tests/net/netns.sh), over TCP on their veth link.
#
#   bench/ucx_floor.sh [--rounds R] [--out DIR] [--quick]          (as root)
#
# Measures UCP put latency (ucp_put_lat, 8 B .. 1 MiB), get latency (ucp_get, same sizes)
# and put bandwidth (ucp_put_bw, 1 MiB .. 64 MiB), each R times (default 3; --quick: 1 and
# fewer iterations), server on host 1 and client on host 2, and prints the medians over
# rounds as a Markdown table (also written to DIR/ucx_floor.md; DIR defaults to
# build/bench/ucx_floor, the raw logs under DIR/raw). Duet's net transport is compared
# against these numbers later: put latency <= 1.2x, bandwidth >= 0.9x at 1 MiB and up.
#
# UCX settings: UCX_TLS=tcp, UCX_NET_DEVICES=eth0 (tests/net/ucx_pair.sh), overridable from
# the environment. With two or more CPUs the server is pinned to the first and the client to
# the second (ucx_perftest -c): both sides spin, and a latency test loses whole scheduler
# ticks when they share a CPU. UCX_FLOOR_NOPIN=1 leaves them unpinned.
#
# Latency columns are ucx_perftest's median (p50) and mean per operation, in microseconds
# (for put, half a round trip); bandwidth is its overall MB/s (MB = 2^20 bytes).
# Exit 77 where namespaces cannot be made (not root, no ip netns) or ucx_perftest is missing.
set -euo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

ROUNDS=3
OUT=""
QUICK=0
ARGS=("$@")
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS="${2:?--rounds needs a value}"; shift 2 ;;
        --out) OUT="${2:?--out needs a value}"; shift 2 ;;
        --quick) QUICK=1; ROUNDS=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "ucx_floor.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
case "$ROUNDS" in
    ''|*[!0-9]*|0) echo "ucx_floor.sh: --rounds needs a positive integer" >&2; exit 2 ;;
esac

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
NETNS="$ROOT/tests/net/netns.sh"
if ! command -v ucx_perftest >/dev/null 2>&1; then
    echo "ucx_floor.sh: SKIP: ucx_perftest is not installed (ucx-utils: scripts/install-deps.sh)" >&2
    exit 77
fi

# Outside a run: make two hosts and come back inside it; they are removed however we end.
if [ -z "${DUETNET_SH:-}" ]; then
    exec bash "$NETNS" run 2 -- bash "$0" "${ARGS[@]}"
fi

OUT="${OUT:-$ROOT/build/bench/ucx_floor}"
mkdir -p "$OUT/raw"
# shellcheck source=../tests/net/ucx_pair.sh
. "$ROOT/tests/net/ucx_pair.sh"
export UCX_PAIR_TIMEOUT=${UCX_PAIR_TIMEOUT:-120}

SPIN=""
if [ "${UCX_FLOOR_NOPIN:-0}" != 1 ] && [ "$(nproc)" -ge 2 ]; then SPIN=1; fi

# iterations per size: a few seconds at most per measurement at TCP's speeds here
iters_lat() {
    local s=$1 n
    n=$((200000000 / (s + 20000)))
    [ "$QUICK" = 1 ] && n=$((n / 10))
    [ "$n" -gt 20000 ] && n=20000
    [ "$n" -lt 100 ] && n=100
    echo "$n"
}
iters_bw() {
    local s=$1 n
    n=$((512 * 1024 * 1024 / s))
    [ "$QUICK" = 1 ] && n=$((n / 4))
    [ "$n" -lt 8 ] && n=8
    echo "$n"
}

# one measurement; pins the two sides to different CPUs where there are two
measure() { # test size iters round
    local test=$1 size=$2 n=$3 r=$4 w
    w=$((n / 10 + 1))
    mkdir -p "$OUT/raw/$r"
    if [ -n "$SPIN" ]; then
        UCX_PAIR_SERVER_ARGS="-c 0" UCX_PAIR_CLIENT_ARGS="-c 1" \
            ucx_pair 1 2 "$test" "$size" "$n" "$w" "$OUT/raw/$r"
    else
        ucx_pair 1 2 "$test" "$size" "$n" "$w" "$OUT/raw/$r"
    fi
}


LAT_SIZES="8 64 512 4096 32768 262144 1048576"
BW_SIZES="1048576 2097152 4194304 8388608 16777216 33554432 67108864"
results="$OUT/raw/results.txt" # test size round fields...
: >"$results"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq 1 "$ROUNDS"); do
    for s in $LAT_SIZES; do
        for t in ucp_put_lat ucp_get; do
            line=$(measure "$t" "$s" "$(iters_lat "$s")" "$r") ||
                { echo "ucx_floor.sh: $t $s failed" >&2; exit 1; }
            echo "$t $s $r $line" >>"$results"
        done
    done
    for s in $BW_SIZES; do
        line=$(measure ucp_put_bw "$s" "$(iters_bw "$s")" "$r") ||
            { echo "ucx_floor.sh: put_bw $s failed" >&2; exit 1; }
        echo "ucp_put_bw $s $r $line" >>"$results"
    done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

col() { # test size field -> median over rounds of that field (fields: 4 = iterations ...)
    awk -v t="$1" -v s="$2" -v f="$3" '$1 == t && $2 == s { print $f }' "$results" | median
}

ucxver=$(ucx_info -v 2>/dev/null | awk '/# Version/ { print $NF; exit }')
{
    echo "ucx_perftest between two network namespaces (server host 1, client host 2), UCX ${ucxver:-?},"
    echo "$(env | grep '^UCX_' | grep -v '^UCX_WARN_UNUSED_ENV_VARS=\|^UCX_PAIR_' | sort | tr '\n' ' ')MTU ${DUETNET_MTU:-1500},"
    echo "$ROUNDS round(s), medians; $(nproc) CPUs$([ -n "$SPIN" ] && echo ", sides pinned to CPUs 0 and 1");"
    echo "load average before / after: $load0 / $load1"
    echo
    echo "| size | put latency p50 (µs) | put latency mean (µs) | get latency p50 (µs) | get latency mean (µs) |"
    echo "|---:|---:|---:|---:|---:|"
    for s in $LAT_SIZES; do
        printf '| %s | %.2f | %.2f | %.2f | %.2f |\n' "$(human "$s")" \
            "$(col ucp_put_lat "$s" 5)" "$(col ucp_put_lat "$s" 6)" "$(col ucp_get "$s" 5)" "$(col ucp_get "$s" 6)"
    done
    echo
    echo "| size | put bandwidth (MB/s, overall) | put bandwidth (MB/s, mean of reports) |"
    echo "|---:|---:|---:|"
    for s in $BW_SIZES; do
        printf '| %s | %.1f | %.1f |\n' "$(human "$s")" "$(col ucp_put_bw "$s" 9)" "$(col ucp_put_bw "$s" 8)"
    done
} | tee "$OUT/ucx_floor.md"
