# shellcheck shell=bash
# tests/net/ucx_pair.sh — sourced (bash) by the net tests, bench/ucx_floor.sh and bench/net_vs_ucx.sh, inside a
# netns.sh run (DUETNET_SH and DUETNET_PREFIX set). One ucx_perftest measurement between two
# namespaced hosts:
#
#   ucx_pair SERVER CLIENT TEST SIZE ITERS WARMUP LOGDIR
#
# starts ucx_perftest's server on host SERVER, waits until it listens, runs the client on host
# CLIENT against SERVER's address, and prints the client's final line, eight numbers:
#   iterations  lat_p50_us  lat_avg_us  lat_overall_us  bw_avg_MBs  bw_overall_MBs  rate_avg  rate_overall
# (for bandwidth tests the three "latency" columns are the per-message overhead). Returns
# non-zero, with both logs on stderr, when either side fails or the server did not see the
# client come from CLIENT's address (so the bytes crossed the veth link).
#
# UCX settings (exported here, for both sides): UCX_TLS=tcp, UCX_NET_DEVICES=eth0 — TCP over
# the host's one link, never shared memory between the namespaces (which share a kernel, so
# UCX's posix/sysv/cma transports would otherwise bypass the network). UCX_PERFTEST_PORT
# (default 13337) is the out-of-band port; each run has its own network, so parallel runs
# cannot collide. UCX_PAIR_TIMEOUT (default 20) bounds each side in seconds;
# UCX_PAIR_SERVER_ARGS and UCX_PAIR_CLIENT_ARGS add ucx_perftest options (e.g. "-c 0").

export UCX_TLS=${UCX_TLS:-tcp}
export UCX_NET_DEVICES=${UCX_NET_DEVICES:-eth0}
export UCX_WARN_UNUSED_ENV_VARS=n

ucx_pair() {
    local srv=$1 cli=$2 test=$3 size=$4 iters=$5 warm=$6 logs=$7
    local port=${UCX_PERFTEST_PORT:-13337} limit=${UCX_PAIR_TIMEOUT:-20}
    local slog="$logs/$test.$size.server" clog="$logs/$test.$size.client" spid rc src
    # shellcheck disable=SC2086 # the extra arguments are words
    "$DUETNET_SH" exec "$srv" timeout "$limit" ucx_perftest -p "$port" -t "$test" \
        ${UCX_PAIR_SERVER_ARGS:-} >"$slog" 2>&1 &
    spid=$!
    for _ in $(seq 50); do
        "$DUETNET_SH" exec "$srv" ss -Hltn 2>/dev/null | grep -q ":$port " && break
        kill -0 "$spid" 2>/dev/null || break
        sleep 0.1
    done
    "$DUETNET_SH" exec "$cli" timeout "$limit" ucx_perftest "$("$DUETNET_SH" addr "$srv")" -p "$port" \
        -t "$test" -s "$size" -n "$iters" -w "$warm" -f ${UCX_PAIR_CLIENT_ARGS:-} >"$clog" 2>&1
    rc=$?
    wait "$spid"
    local src_rc=$?
    src="Accepted connection from $("$DUETNET_SH" addr "$cli"):"
    if [ "$rc" -ne 0 ] || [ "$src_rc" -ne 0 ] || ! grep -q "$src" "$slog"; then
        {
            echo "ucx_pair: $test $size B: client status $rc, server status $src_rc"
            echo "--- server (host $srv):"; cat "$slog"
            echo "--- client (host $cli):"; cat "$clog"
        } >&2
        return 1
    fi
    # the final line: the one row of numbers the client prints with -f
    awk 'NF == 8 && $1 ~ /^[0-9]+$/ { line = $0 } END { if (line == "") exit 1; $0 = line; print $1, $2, $3, $4, $5, $6, $7, $8 }' "$clog" ||
        { echo "ucx_pair: $test $size B: no result line in the client's output:" >&2; cat "$clog" >&2; return 1; }
}

# The benches' helpers: the median of the numbers on stdin ("nan" when none), and a byte
# count as 8 B, 4 KiB, 1 MiB.
median() {
    sort -g | awk '{ v[NR] = $1 }
        END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
human() {
    local b=$1
    if [ "$b" -ge 1048576 ]; then echo "$((b / 1048576)) MiB"
    elif [ "$b" -ge 1024 ]; then echo "$((b / 1024)) KiB"
    else echo "$b B"; fi
}
