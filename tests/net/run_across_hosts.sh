#!/usr/bin/env bash
# net.rma.*, net.coll.* — test programs across namespace hosts over the net transport
# (docs/NETWORK.md stages 2 and 5). Each program given runs as HOSTS x RANKS_PER_HOST ranks, ranks r*R .. r*R+R-1 on
# host r+1 (so peers on one host use shared memory and the others the net transport, in one
# heap), started by hand as a multi-host launcher would (DUET_RANK, DUET_NRANKS, DUET_BOOT_ADDR =
# host 1's address, each rank binding and advertising its own host's address with
# DUET_BOOTSTRAP_IFADDR, one DUET_JOB_SECRET), UCX on TCP, with the environment the caller
# gives (DUET_ALGO, ...). The programs check their own results against references. Run inside:
#
#   netns.sh run HOSTS -- run_across_hosts.sh [-r RANKS_PER_HOST] [-k RANK[,RANK...]] PROGRAM [ARGS...]...
#
# -k RANK[,RANK...]: those ranks are expected to die by SIGKILL (fault-tolerance tests: they kill themselves);
# every other rank must exit 0. A program's arguments follow it (up to the next executable):
#   run_across_hosts.sh -k 1 bin/test_ft_detect allreduce bin/test_ft_detect barrier
#
# HOSTS is taken from the run (netns.sh list, less its bridge). Exit 0 pass, 1 fail, 2 usage, 77 skipped (from
# netns.sh: not root, no namespaces).
set -u
[ -n "${DUETNET_SH:-}" ] || { echo "run_across_hosts.sh: run it under netns.sh run HOSTS --" >&2; exit 2; }
per_host=1 victims=
while [ $# -gt 0 ]; do
    case $1 in
        -r) per_host=${2:-}; shift 2 || true ;;
        -k) victims=${2:-}; shift 2 || true ;;
        *) break ;;
    esac
done
[ "$per_host" -ge 1 ] 2>/dev/null && [[ "$victims" =~ ^([0-9]+(,[0-9]+)*)?$ ]] && [ -x "${1:-}" ] ||
    { echo "usage: run_across_hosts.sh [-r RANKS_PER_HOST] [-k RANK[,RANK...]] PROGRAM [ARGS...] [-- PROGRAM ...]..." >&2; exit 2; }
hosts=$("$DUETNET_SH" list | grep -c -- "-[0-9]*$")
[ "$hosts" -ge 1 ] || { echo "FAIL: netns.sh list gives no hosts" >&2; exit 1; }
nranks=$((hosts * per_host))
logs=$(mktemp -d /tmp/duet-across-hosts.XXXXXX) || exit 1
trap 'rm -rf "$logs"' EXIT
addr1=$("$DUETNET_SH" addr 1) || { echo "FAIL: no address for host 1" >&2; exit 1; }
port=29613
failed=0
# the programs: each word that is an executable file starts one, the words after it are its
# arguments ("--" between them is optional)
progs=()
for w in "$@"; do
    [ "$w" = -- ] && continue
    if [ -f "$w" ] && [ -x "$w" ]; then progs+=("$w"); else progs[${#progs[@]} - 1]+=" $w"; fi
done
for cmd in "${progs[@]}"; do
    read -r -a argv <<<"$cmd"
    prog=${argv[0]}
    name=$(basename "$prog")${argv[1]:+-${argv[1]}}
    secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    start=$(date +%s)
    pid=() rc=()
    for ((r = 0; r < nranks; r++)); do
        h=$((r / per_host + 1))
        # each rank binds and advertises its own host's address (a team's leader listens too)
        ifaddr=$("$DUETNET_SH" addr $h) || { echo "FAIL: no address for host $h" >&2; exit 1; }
        DUET_RANK=$r DUET_NRANKS=$nranks DUET_BOOT_ADDR="$addr1:$port" DUET_BOOTSTRAP_IFADDR="$ifaddr" \
            DUET_JOB_SECRET=$secret DUET_BOOTSTRAP_TIMEOUT=20 DUET_SYMMETRIC_SIZE=64M DUET_CUDA=off \
            DUET_DEBUG=WARN UCX_TLS=tcp DUET_TEST_RANKS_PER_HOST=$per_host \
            "$DUETNET_SH" exec $h timeout 120 "${argv[@]}" >"$logs/$name.$r" 2>&1 &
        pid[r]=$!
    done
    bad=0
    for ((r = 0; r < nranks; r++)); do
        wait "${pid[r]}"
        rc[r]=$?
        if [[ ",$victims," == *",$r,"* ]]; then
            [ "${rc[r]}" -eq 137 ] || bad=1 # killed by SIGKILL, as it meant to be
        else
            [ "${rc[r]}" -eq 0 ] || bad=1
        fi
    done
    took=$(($(date +%s) - start))
    if [ $bad -ne 0 ]; then
        echo "FAIL: $name: exit statuses ${rc[*]} (ranks 0..$((nranks - 1)); ${victims:+rank(s) $victims: 137 expected}) after ${took}s"
        for ((r = 0; r < nranks; r++)); do echo "--- rank $r:"; grep -m3 -E "has died|failed:" "$logs/$name.$r"; tail -20 "$logs/$name.$r"; done
        failed=1
    else
        echo "ok: $name, $nranks ranks on $hosts hosts, in ${took}s ($(grep -h -m1 -E 'passed|PEs|detected' "$logs/$name.0" | tail -1))"
    fi
    port=$((port + 1)) # a fresh port: the last run's may linger in TIME_WAIT
done
exit $failed
