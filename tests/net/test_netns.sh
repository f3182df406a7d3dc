#!/usr/bin/env bash
# net.netns: the namespace harness itself (tests/net/netns.sh), sourced as a test would.
# Three hosts reach each other by address and by name, each with its own hostname and
# /dev/shm; a cut host is unreachable until healed (both kinds of cut); down removes the
# namespaces, their processes and files. Then the `run` wrapper: the command's exit status
# comes back, and its run is gone after a normal end, after SIGTERM (the traps) and after
# SIGKILL (the watchdog). Exit 0 pass, 1 fail, 77 skipped (not root, no ip netns).
set -u
here=$(cd "$(dirname "$0")" && pwd)
netns="$here/netns.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
if ! command -v ping >/dev/null 2>&1; then
    echo "SKIP: ping (iputils-ping) is not installed" >&2
    exit 77
fi

# shellcheck source=netns.sh
. "$netns"
duetnet_up 3 >/dev/null || exit $?
prefix=$DUETNET_PREFIX
echo "run $prefix"
x() { timeout 10 bash "$netns" exec "$@"; } # every command on a host is bounded
reach() { x "$1" ping -c 1 -W 2 -q "$(duetnet_addr "$2")" >/dev/null 2>&1; }
# reachable again after a heal: the first ping may go before the link (and ARP) are back
reach_soon() { for _ in 1 2 3 4 5; do reach "$@" && return 0; sleep 0.3; done; return 1; }

# every host reaches every other, by address; names resolve to the hosts' addresses
for i in 1 2 3; do
    for j in 1 2 3; do
        reach $i $j || fail "host $i cannot reach host $j ($(duetnet_addr $j))"
    done
    got=$(x $i hostname)
    [ "$got" = "$prefix-$i" ] || fail "host $i's hostname is '$got', want $prefix-$i"
    next=$((i % 3 + 1))
    got=$(x $i getent hosts "$prefix-$next" | awk '{print $1}')
    [ "$got" = "$(duetnet_addr $next)" ] || fail "host $i resolves $prefix-$next to '$got'"
    # shellcheck disable=SC2016 # expanded on the host
    got=$(x $i sh -c 'echo $DUETNET_HOST $DUETNET_ADDR')
    [ "$got" = "$i $(duetnet_addr $i)" ] || fail "host $i's environment: $got"
    # nothing but lo and eth0, and no route off the subnet
    [ "$(x $i ip -o link | wc -l)" -eq 2 ] || fail "host $i has other links: $(x $i ip -o link)"
    x $i ip route get 8.8.8.8 >/dev/null 2>&1 && fail "host $i has a route off its subnet"
done
[ "$(hostname)" != "$prefix-1" ] || fail "the machine's hostname changed"

# /dev/shm is the host's own: shared by two commands on host 1, unseen on host 2 and outside
x 1 sh -c 'echo hi >/dev/shm/duetnet-probe' || fail "cannot write host 1's /dev/shm"
[ "$(x 1 cat /dev/shm/duetnet-probe)" = hi ] || fail "host 1's /dev/shm changed between commands"
x 2 test -e /dev/shm/duetnet-probe && fail "host 2 sees host 1's /dev/shm"
[ -e /dev/shm/duetnet-probe ] && fail "the machine's /dev/shm sees host 1's"

# a cut of host 2's own link: nobody reaches it, the others still reach each other
duetnet_cut 2 || fail "cut 2"
reach 1 2 && fail "host 1 reaches host 2 through a cut link"
reach 2 3 && fail "host 2 reaches host 3 through a cut link"
reach 1 3 || fail "host 1 cannot reach host 3 while host 2 is cut"
duetnet_heal 2 || fail "heal 2"
reach_soon 1 2 || fail "host 1 cannot reach host 2 after the heal"
reach_soon 2 3 || fail "host 2 cannot reach host 3 after the heal"

# a cut at the bridge's port: host 3 keeps its address and routes, its packets vanish
duetnet_cut 3 --port || fail "cut 3 --port"
got=$(x 3 ip -o -4 addr show dev eth0 | awk '{print $4}')
[ "$got" = "$(duetnet_addr 3)/24" ] || fail "host 3 lost its address: '$got'"
reach 3 1 && fail "host 3 reaches host 1 through a cut port"
reach 2 3 && fail "host 2 reaches host 3 through a cut port"
duetnet_heal 3 || fail "heal 3"
reach_soon 3 1 || fail "host 3 cannot reach host 1 after the heal"

# down: a process still running on a host is ended, nothing of the run is left
timeout 30 bash "$netns" exec 1 sleep 30 &
sleeper=$!
sleep 0.3
duetnet_down
wait "$sleeper" 2>/dev/null
left() { # what is left of run $1
    ip netns list | awk '{print $1}' | grep -E "^$1-([0-9]+|br)\$"
    ls -d "/run/duetnet/$1" "/etc/netns/$1"-* "/dev/shm/$1" 2>/dev/null
}
[ -z "$(left "$prefix")" ] || fail "down left: $(left "$prefix")"
trap - EXIT HUP INT TERM
kill -0 "$sleeper" 2>/dev/null && fail "the process on host 1 outlived down"
echo "sourced: ok"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/duetnet-test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
gone_within() { # prefix seconds: wait until nothing of the run is left
    local t=0
    while [ -n "$(left "$1")" ]; do
        [ "$t" -lt $(($2 * 10)) ] || return 1
        sleep 0.1
        t=$((t + 1))
    done
}
started() { # file: wait until the run's command has written its prefix there
    for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done
    return 1
}

# run: the command's status comes back, the hosts are there while it runs and gone after
# shellcheck disable=SC2016 # the commands' own variables, from run
timeout 30 bash "$netns" run 2 -- bash -c 'echo "$DUETNET_PREFIX" >"$1"
    "$DUETNET_SH" exec 2 ping -c 1 -W 2 -q "$("$DUETNET_SH" addr 1)" >/dev/null || exit 9
    exit 3' sh "$tmp/p1"
rc=$?
[ "$rc" -eq 3 ] || fail "run returned $rc, want the command's 3"
p=$(cat "$tmp/p1")
{ [ -n "$p" ] && [ "$p" != "$prefix" ]; } || fail "run's prefix '$p'"
[ -z "$(left "$p")" ] || fail "run left: $(left "$p")"
echo "run, normal end: ok"

# SIGTERM to run: its traps end the command and tear down
# shellcheck disable=SC2016
timeout 30 bash "$netns" run 2 -- bash -c 'echo "$DUETNET_PREFIX" >"$1"; exec sleep 20' \
    sh "$tmp/p2" &
runner=$!
started "$tmp/p2" || fail "run (SIGTERM case) did not start"
kill -TERM "$runner"
wait "$runner"
rc=$?
[ "$rc" -eq 143 ] || fail "run returned $rc after SIGTERM, want 143"
gone_within "$(cat "$tmp/p2")" 5 || fail "left after SIGTERM: $(left "$(cat "$tmp/p2")")"
echo "run, SIGTERM: ok"

# SIGKILL to run and its command (a ctest timeout): the watchdog tears down within seconds
# shellcheck disable=SC2016
bash "$netns" run 2 -- bash -c 'echo "$DUETNET_PREFIX" >"$1"; "$DUETNET_SH" exec 1 sleep 20' \
    sh "$tmp/p3" &
runner=$!
started "$tmp/p3" || fail "run (SIGKILL case) did not start"
p=$(cat "$tmp/p3")
child=$(pgrep -P "$runner")
kill -KILL "$runner" "$child"
wait "$runner" 2>/dev/null
gone_within "$p" 10 || fail "left 10 s after SIGKILL: $(left "$p")"
echo "run, SIGKILL: ok"

# not root: skipped with a reason
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
if command -v setpriv >/dev/null 2>&1 && nobody test -r "$netns" 2>/dev/null; then
    nobody bash "$netns" run 1 -- true 2>"$tmp/err"
    rc=$?
    if [ "$rc" -ne 77 ] || ! grep -q root "$tmp/err"; then
        fail "not root: status $rc ($(cat "$tmp/err")), want 77"
    fi
    echo "not root: skipped: ok"
fi
echo PASS
