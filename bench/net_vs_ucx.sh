#!/usr/bin/env bash
# bench/net_vs_ucx.sh — issue 8's network benchmark: Duet's net transport against UCX's own
# ucx_perftest, in one run, on the same link between two hosts made of network namespaces
# (tests/net/netns.sh), over TCP on their veth link (UCX_TLS=tcp, UCX_NET_DEVICES=eth0 on
# both sides).
#
#   bench/net_vs_ucx.sh [--rounds R] [--out DIR] [--build DIR] [--quick]        (as root)
#
# Rows (medians over R rounds, default 3; --quick: 1 round, fewer iterations):
#   put latency     ucx_perftest -t ucp_put_lat -s 8 (half a round trip of a put that the
#                   other side polls for) against duet-perf pingpong (duet_p + wait_until,
#                   8 bytes; its round trip halved). Target: Duet <= 1.2x.
#   put bandwidth   ucx_perftest -t ucp_put_bw at 1, 4 and 16 MiB against duet-perf put (a
#                   window of 64 duet_put_nbi, then duet_quiet). Target: Duet >= 0.9x.
#   get             duet-perf get (window of duet_get_nbi, quiet) at 1 and 16 MiB, and its
#                   latency at 8 bytes (window 1); ucx_perftest -t ucp_get for reference (its
#                   server sleeps, so its gets wait for the server's wakeup).
#   allreduce       duet-perf allreduce, 2 ranks, 8 B .. 16 MiB (no UCX counterpart: shown
#                   against 2x the put latency floor for small sizes).
# The two sides of every measurement are pinned to CPUs 0 and 1 (as bench/ucx_floor.sh).
# Prints a Markdown table (also DIR/net_vs_ucx.md; DIR defaults to BUILD/bench/net_vs_ucx,
# raw logs under DIR/raw). Exit 77 where namespaces cannot be made or ucx_perftest is missing.
set -euo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

ROUNDS=3
OUT=""
BUILD=""
QUICK=0
ARGS=("$@")
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS="${2:?--rounds needs a value}"; shift 2 ;;
        --out) OUT="${2:?--out needs a value}"; shift 2 ;;
        --build) BUILD="${2:?--build needs a value}"; shift 2 ;;
        --quick) QUICK=1; ROUNDS=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "net_vs_ucx.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$(cd "${BUILD:-$ROOT/build}" && pwd)"
PERF="$BUILD/bin/duet-perf"
[ -x "$PERF" ] || { echo "net_vs_ucx.sh: no $PERF (build first: make -C $BUILD duet-perf)" >&2; exit 2; }
command -v ucx_perftest >/dev/null 2>&1 ||
    { echo "net_vs_ucx.sh: SKIP: ucx_perftest is not installed (ucx-utils)" >&2; exit 77; }
if [ -z "${DUETNET_SH:-}" ]; then
    exec bash "$ROOT/tests/net/netns.sh" run 2 -- bash "$0" "${ARGS[@]}"
fi

OUT="${OUT:-$BUILD/bench/net_vs_ucx}"
mkdir -p "$OUT/raw"
# shellcheck source=../tests/net/ucx_pair.sh
. "$ROOT/tests/net/ucx_pair.sh"
export UCX_PAIR_TIMEOUT=${UCX_PAIR_TIMEOUT:-120}
export UCX_PAIR_SERVER_ARGS="-c 0" UCX_PAIR_CLIENT_ARGS="-c 1"


# duet-perf as 2 ranks, rank r on host r+1 pinned to CPU r, started as a multi-host launcher
# would; prints rank 0's rows (op bytes ... time_us algbw busbw wrong)
port=29700
duet_pair() { # log, then duet-perf arguments
    local log=$1 secret pid0 pid1 rc0 rc1
    shift
    secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    port=$((port + 1))
    for r in 0 1; do
        DUET_RANK=$r DUET_NRANKS=2 DUET_BOOT_ADDR="$("$DUETNET_SH" addr 1):$port" \
            DUET_BOOTSTRAP_IFADDR="$("$DUETNET_SH" addr $((r + 1)))" DUET_JOB_SECRET=$secret DUET_CUDA=off \
            "$DUETNET_SH" exec $((r + 1)) timeout 300 taskset -c "$r" "$PERF" "$@" >"$log.$r" 2>&1 &
        eval "pid$r=\$!"
    done
    rc0=0 rc1=0
    wait "$pid0" || rc0=$?
    wait "$pid1" || rc1=$?
    if [ "$rc0" -ne 0 ] || [ "$rc1" -ne 0 ]; then
        echo "net_vs_ucx.sh: duet-perf $* failed ($rc0, $rc1):" >&2
        tail -5 "$log.0" "$log.1" >&2
        return 1
    fi
    awk '!/^#/ && NF >= 10 { print }' "$log.0"
}

results="$OUT/raw/results.txt" # name size round value
: >"$results"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
lat_n=$([ "$QUICK" = 1 ] && echo 2000 || echo 20000)
for r in $(seq 1 "$ROUNDS"); do
    raw="$OUT/raw/$r"
    mkdir -p "$raw"
    # UCX
    line=$(ucx_pair 1 2 ucp_put_lat 8 "$lat_n" $((lat_n / 10)) "$raw") || exit 1
    echo "ucx_put_lat 8 $r $(echo "$line" | awk '{ print $2 }')" >>"$results"
    line=$(ucx_pair 1 2 ucp_get 8 $((lat_n / 10)) 10 "$raw") || exit 1
    echo "ucx_get_lat 8 $r $(echo "$line" | awk '{ print $2 }')" >>"$results"
    for s in 1048576 4194304 16777216; do
        n=$((512 * 1024 * 1024 / s))
        [ "$QUICK" = 1 ] && n=$((n / 4))
        line=$(ucx_pair 1 2 ucp_put_bw "$s" "$n" $((n / 10 + 1)) "$raw") || exit 1
        echo "ucx_put_bw $s $r $(echo "$line" | awk '{ print $6 }')" >>"$results"
    done
    # Duet
    duet_pair "$raw/pingpong" pingpong -n "$lat_n" -w $((lat_n / 10)) |
        awk -v r="$r" '{ printf "duet_put_lat %s %s %.3f\n", $2, r, $7 / 2 }' >>"$results"
    duet_pair "$raw/put" put -b 1M -e 16M -f 4 -n $([ "$QUICK" = 1 ] && echo 4 || echo 16) |
        awk -v r="$r" '{ printf "duet_put_bw %s %s %.1f\n", $2, r, $8 * 1e9 / 1048576 }' >>"$results"
    duet_pair "$raw/get" get -b 1M -e 16M -f 16 -n $([ "$QUICK" = 1 ] && echo 4 || echo 16) |
        awk -v r="$r" '{ printf "duet_get_bw %s %s %.1f\n", $2, r, $8 * 1e9 / 1048576 }' >>"$results"
    duet_pair "$raw/get1" get -b 8 -e 8 -W 1 -n $((lat_n / 4)) |
        awk -v r="$r" '{ printf "duet_get_lat %s %s %.3f\n", $2, r, $7 }' >>"$results"
    duet_pair "$raw/allreduce" allreduce -b 8 -e 16M -f 16 -n $([ "$QUICK" = 1 ] && echo 50 || echo 500) |
        awk -v r="$r" '{ printf "duet_allreduce %s %s %.3f\n", $2, r, $7 }' >>"$results"
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

val() { awk -v t="$1" -v s="$2" '$1 == t && $2 == s { print $4 }' "$results" | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
verdict() { # ratio, op (le|ge), bound
    awk -v x="$1" -v op="$2" -v b="$3" 'BEGIN { if (x == "-") print "-"; else if ((op == "le" && x <= b) || (op == "ge" && x >= b)) print "met"; else print "MISSED" }'
}

ucxver=$(ucx_info -v 2>/dev/null | awk '/# Version/ { print $NF; exit }')
{
    echo "Duet's net transport against ucx_perftest, two network namespaces (rank 0 / server on host 1"
    echo "pinned to CPU 0, rank 1 / client on host 2 pinned to CPU 1), UCX ${ucxver:-?}, UCX_TLS=$UCX_TLS"
    echo "UCX_NET_DEVICES=$UCX_NET_DEVICES, MTU ${DUETNET_MTU:-1500}, $ROUNDS round(s), medians, $(nproc) CPUs;"
    echo "load average before / after: $load0 / $load1"
    echo
    echo "| measure | size | ucx_perftest | Duet | Duet / UCX | target |"
    echo "|---|---:|---:|---:|---:|---|"
    u=$(val ucx_put_lat 8) d=$(val duet_put_lat 8) x=$(ratio "$d" "$u")
    echo "| put latency (µs, half round trip) | 8 B | $u | $d | $x | ≤ 1.2×: $(verdict "$x" le 1.2) |"
    for s in 1048576 4194304 16777216; do
        u=$(val ucx_put_bw "$s") d=$(val duet_put_bw "$s") x=$(ratio "$d" "$u")
        echo "| put bandwidth (MB/s) | $(human "$s") | $u | $d | $x | ≥ 0.9×: $(verdict "$x" ge 0.9) |"
    done
    echo "| get latency (µs) | 8 B | $(val ucx_get_lat 8) (server asleep) | $(val duet_get_lat 8) | - | - |"
    for s in 1048576 16777216; do
        echo "| get bandwidth (MB/s) | $(human "$s") | - | $(val duet_get_bw "$s") | - | - |"
    done
    for s in 8 128 2048 32768 524288 8388608; do
        echo "| allreduce, 2 ranks (µs) | $(human "$s") | - | $(val duet_allreduce "$s") | - | - |"
    done
} | tee "$OUT/net_vs_ucx.md"
