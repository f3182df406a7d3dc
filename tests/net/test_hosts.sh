#!/usr/bin/env bash
# net.hosts_* — host identity (docs/NETWORK.md 2.2, stage 1) with two ranks of examples/hello
# on two namespace hosts, started by hand as a multi-host launcher would (DUET_RANK,
# DUET_NRANKS, DUET_BOOT_ADDR = host 1's address, one DUET_JOB_SECRET). Run inside a netns.sh
# run of 2 hosts:
#
#   netns.sh run 2 -- test_hosts.sh MODE HELLO
#
#   refused        hosts with their own names and their own /dev/shm: both ranks fail at once
#                  (exit 1, well before any timeout, no signal) with the message that names
#                  the other rank, its host and "a separate /dev/shm", and issue 8's transport
#   same_hostname  the same, but both hosts keep the machine's hostname (DUETNET_UTS=0): a
#                  host name proves nothing, the separate /dev/shm still separates them
#   shared_shm     own names, own networks, but one /dev/shm (DUETNET_PRIVATE=""): one host
#                  by the shm rule, so hello runs and both ranks get their neighbour's value
#
# Exit 0 pass, 1 fail, 2 usage, 77 skipped (from netns.sh: not root, no namespaces).
set -u
mode=${1:-}
hello=${2:-}
fail() { echo "FAIL ($mode): $*" >&2; exit 1; }
[ -n "${DUETNET_SH:-}" ] || { echo "test_hosts.sh: run it under netns.sh run 2 --" >&2; exit 2; }
[ -x "$hello" ] || { echo "test_hosts.sh: '$hello' is not the hello program" >&2; exit 2; }
case "$mode" in
    refused) ;;
    same_hostname) export DUETNET_UTS=0 ;;
    shared_shm) export DUETNET_PRIVATE="" ;;
    *) echo "test_hosts.sh: mode '$mode' is not refused, same_hostname or shared_shm" >&2; exit 2 ;;
esac

logs=$(mktemp -d /tmp/duet-test-hosts.XXXXXX) || exit 1
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
# the machine's /dev/shm is the hosts' in shared_shm: nothing of this job may stay there
prefix=$(DUET_JOB_SECRET=$secret "$(dirname "$hello")/duet-info" --shm-prefix) || fail "duet-info --shm-prefix"
trap 'rm -rf "$logs"; rm -f /dev/shm/"$prefix"* 2>/dev/null' EXIT
port=29611 # host 1's own network: no other run can hold it
addr1=$("$DUETNET_SH" addr 1) || fail "no address for host 1"

start=$(date +%s)
pid=() rc=()
for r in 0 1; do
    # shellcheck disable=SC2016 # expanded on the host
    DUET_RANK=$r DUET_NRANKS=2 DUET_BOOT_ADDR="$addr1:$port" DUET_JOB_SECRET=$secret \
        DUET_BOOTSTRAP_TIMEOUT=15 DUET_SYMMETRIC_SIZE=16M DUET_CUDA=off DUET_DEBUG=WARN \
        "$DUETNET_SH" exec $((r + 1)) sh -c 'echo "$(hostname)" >"$1"; shift; exec "$@"' sh \
        "$logs/host.$r" timeout 30 "$hello" >"$logs/out.$r" 2>&1 &
    pid[r]=$!
done
for r in 0 1; do
    wait "${pid[r]}"
    rc[r]=$?
done
took=$(($(date +%s) - start))
for r in 0 1; do
    echo "--- rank $r on host $((r + 1)) ($(cat "$logs/host.$r" 2>/dev/null)), exit status ${rc[r]}:"
    cat "$logs/out.$r"
done
echo "--- both ended after ${took}s"
host1=$(cat "$logs/host.0")
host2=$(cat "$logs/host.1")

if [ "$mode" = shared_shm ]; then
    [ "$host1" != "$host2" ] || fail "the hosts share the name $host1: the case needs two names"
    if [ "${rc[0]}" -ne 0 ] || [ "${rc[1]}" -ne 0 ]; then
        fail "exit statuses ${rc[0]} and ${rc[1]}: one shared /dev/shm is one host"
    fi
    grep -q "rank 0 of 2 got 101" "$logs/out.0" || fail "rank 0 did not get rank 1's value"
    grep -q "rank 1 of 2 got 100" "$logs/out.1" || fail "rank 1 did not get rank 0's value"
    exit 0
fi

if [ "$mode" = same_hostname ]; then
    [ "$host1" = "$host2" ] || fail "hosts named $host1 and $host2: the case needs one name"
else
    [ "$host1" != "$host2" ] || fail "the hosts share the name $host1"
fi
for r in 0 1; do
    st=${rc[r]}
    other=$((1 - r))
    other_host=$(cat "$logs/host.$other")
    [ "$st" -ne 124 ] || fail "rank $r hung (killed by timeout): the refusal must come at once"
    [ "$st" -lt 128 ] || fail "rank $r crashed (status $st)"
    [ "$st" -eq 1 ] || fail "rank $r exited with $st, want 1 (duet_init refused)"
    out="$logs/out.$r"
    grep -q "rank $other (host $other_host: a separate /dev/shm" "$out" ||
        fail "rank $r's message does not name rank $other, its host $other_host and the separate /dev/shm"
    grep -q "rank $r (host $(cat "$logs/host.$r")) cannot share memory with 1 rank" "$out" ||
        fail "rank $r's message does not name itself and its host"
    grep -q "net transport of issue 8" "$out" || fail "rank $r's message does not point to issue 8"
    grep -q "^duet_init: " "$out" || fail "rank $r: duet_init's error (duet_last_error) is not the message"
done
[ "$took" -lt 10 ] || fail "the refusal took ${took}s: it must not wait for a timeout"
exit 0
