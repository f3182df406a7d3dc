#!/usr/bin/env bash
# net.ucx_perftest: UCX's own benchmark between two namespaced hosts over the veth link, as
#     netns.sh run 2 -- test_ucx_perftest.sh
# UCP put latency at 8 B and 64 KiB and put bandwidth at 1 MiB over TCP (UCX_TLS=tcp on
# eth0): each must run, come from the other host's address and print sane numbers. The
# floor for issue 8's targets; bench/ucx_floor.sh measures the whole range.
# Exit 0 pass, 1 fail, 77 skipped (ucx_perftest not installed; run's own skips: not root).
set -u
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
if ! command -v ucx_perftest >/dev/null 2>&1; then
    echo "SKIP: ucx_perftest (ucx-utils) is not installed" >&2
    exit 77
fi
[ -n "${DUETNET_SH:-}" ] || fail "run me under tests/net/netns.sh run 2 -- $0"
# shellcheck source=ucx_pair.sh
. "$here/ucx_pair.sh"
logs=$(mktemp -d "${TMPDIR:-/tmp}/duetnet-ucx.XXXXXX") || exit 1
trap 'rm -rf "$logs"' EXIT

# fields: iterations p50 avg overall bw_avg bw_overall rate_avg rate_overall
check() { # name, result line, wanted iterations, awk condition on the fields
    echo "$1: $2"
    local n
    n=$(echo "$2" | awk '{print $1}')
    [ "$n" = "$3" ] || fail "$1: $n iterations, want $3"
    echo "$2" | awk "{ exit !($4) }" || fail "$1: numbers out of range ($4): $2"
}

# Latency is a round trip's half through two kernels' TCP stacks: at least a microsecond
# (less would mean shared memory, not the link), at most 100 ms even on a loaded machine.
r=$(ucx_pair 1 2 ucp_put_lat 8 2000 200 "$logs") || fail "put latency, 8 B"
check "put latency 8 B (us: p50 avg)" "$r" 2000 '$2 >= 1 && $2 < 100000 && $3 > 0'
r=$(ucx_pair 1 2 ucp_put_lat 65536 300 30 "$logs") || fail "put latency, 64 KiB"
check "put latency 64 KiB (us: p50 avg)" "$r" 300 '$2 >= 1 && $2 < 100000 && $3 > 0'
# 1 MiB puts: more than 1 MB/s and less than any memory bus
r=$(ucx_pair 2 1 ucp_put_bw 1048576 100 10 "$logs") || fail "put bandwidth, 1 MiB"
check "put bandwidth 1 MiB (MB/s: avg overall)" "$r" 100 '$5 > 1 && $6 > 1 && $6 < 1000000'
echo PASS
