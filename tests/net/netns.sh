#!/usr/bin/env bash
# tests/net/netns.sh — "hosts" made of Linux network namespaces, for the net tests and benches.
#
#   netns.sh run K [--] CMD [ARGS...]  make K hosts, run CMD, remove everything whatever
#                                      happens; exits with CMD's status (77: cannot run here)
#   netns.sh up K                      make K hosts; prints what to eval (DUETNET_PREFIX=...);
#                                      they live until `down` or until the caller ends
#   netns.sh exec I CMD [ARGS...]      run CMD on host I (1..K)
#   netns.sh cut I [--port]            take host I's link down (--port: the bridge's end of
#                                      the cable instead: host I sees no error, only silence)
#   netns.sh heal I                    bring both ends of host I's link up again
#   netns.sh addr I | name I           host I's address | network namespace (= hostname)
#   netns.sh list                      this run's namespaces
#   netns.sh down                      remove everything of this run
#   netns.sh reap                      remove runs whose owner and watchdog are both gone
#
# How a test uses it, so that teardown always happens: either it runs under the wrapper,
#     netns.sh run 2 -- my_test.sh          (my_test.sh calls "$DUETNET_SH" exec 1 ...)
# or it is a bash script that sources this file and calls the same commands as functions
# (duetnet_up 3 || exit $?; duetnet_exec 1 ...; duetnet_cut 2; ...): duetnet_up installs
# EXIT, HUP, INT and TERM traps (replacing the script's own) that call duetnet_down.
# Inside a run, DUETNET_PREFIX names it and DUETNET_SH is this script's path.
#
# The topology, all of it outside the root namespace, whose interfaces and routes are never
# touched:
#
#     ns PREFIX-1          ns PREFIX-2               ns PREFIX-K
#     lo, eth0 SUBNET.1    lo, eth0 SUBNET.2   ...   lo, eth0 SUBNET.K    (/24, veth pairs)
#        |                    |                         |
#     ---h1-------------------h2------------------------hK---   br0 in ns PREFIX-br
#
# PREFIX is duetnet-<pid of the run's owner> (a letter appended if taken), so parallel runs
# never share a name; every command addresses only its own run's namespaces. The run's state
# is in /run/duetnet/PREFIX.
#
# What a command on host I finds (exec):
#   - its own network: lo and eth0 with SUBNET.I, the other hosts on the /24, no route
#     anywhere else;
#   - its own hostname, PREFIX-I (a UTS namespace per exec; DUETNET_UTS=0 keeps the
#     machine's), for messages and name lookups: /etc/hosts (ip netns exec's
#     /etc/netns/NS/hosts) maps every host's name to its address, so
#     getaddrinfo(gethostname()) finds SUBNET.I. Duet does not compare host names (since
#     issue 8's stage 1, docs/NETWORK.md 2.2): its hosts are told apart by /dev/shm, next;
#   - its own /dev/shm: /dev/shm/PREFIX/I/1 bind-mounted there, the same for every exec on
#     host I, so nothing passes between hosts through shared memory, and Duet, which puts
#     ranks on one host when boot id and /dev/shm (device, inode) match, sees separate hosts
#     (with DUETNET_PRIVATE="" the namespaces are one host to it). DUETNET_PRIVATE lists
#     the paths made private so (default "/dev/shm"; "" for none; "/dev/shm /tmp" adds /tmp,
#     where Duet's one-host rendezvous file lives);
#   - DUETNET_HOST=I, DUETNET_ADDR=SUBNET.I, DUETNET_IFACE=eth0 in its environment.
#   What the hosts still share: process ids (pidfds work across them, unlike real hosts),
#   the file system outside the private paths, the CPUs.
#
# Settings: DUETNET_SUBNET (three octets, default 10.213.8; private to the run's namespaces,
# so it cannot clash with the machine's networks), DUETNET_MTU (1500), DUETNET_UTS,
# DUETNET_PRIVATE.
#
# Teardown happens, by preference: through run's or the sourcing script's traps when the
# command ends or is signalled; through a watchdog process (its own session, outside the
# test's process group and tree) that removes the run within a second of its owner's death,
# so that SIGKILL (a ctest timeout) leaves nothing either; through up's reap of runs whose
# owner and watchdog are both dead. Removing a run first ends the processes still inside its
# namespaces (they are the run's own), then deletes the namespaces, /etc/netns/PREFIX-*,
# /dev/shm/PREFIX and its state.
#
# Needs root, iproute2 (ip netns, veth, bridge) and util-linux (unshare, setsid); without
# them run and up exit 77 with the reason.

DUETNET_STATE_ROOT=/run/duetnet
DUETNET_SELF=$(readlink -f "${BASH_SOURCE[0]}")

duetnet__die() { echo "netns.sh: $*" >&2; return 1; }
duetnet__skip() { echo "netns.sh: SKIP: $*" >&2; return 77; }

# a process's start time (clock ticks after boot), to tell a live owner from a reused pid
duetnet__start_time() { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }
duetnet__alive() { [ -n "$1" ] && [ -n "$2" ] && [ "$(duetnet__start_time "$1")" = "$2" ]; }

# A run's private directories (bind-mounted over /dev/shm ...) live in /dev/shm, a tmpfs, so
# that shared memory in them is memory, as on a real host.
duetnet__private() {
    if [ -d /dev/shm ] && [ -w /dev/shm ]; then
        echo "/dev/shm/$1"
    else
        echo "$DUETNET_STATE_ROOT/$1/private"
    fi
}

duetnet__state() { # prints the state directory of this run, or fails
    local p=${DUETNET_PREFIX:-}
    [ -n "$p" ] || { duetnet__die "no run: DUETNET_PREFIX is not set (use run or up)"; return; }
    case "$p" in duetnet-?*) ;; *) duetnet__die "'$p' is not a duetnet run"; return ;; esac
    [ -d "$DUETNET_STATE_ROOT/$p" ] || { duetnet__die "run $p does not exist"; return; }
    echo "$DUETNET_STATE_ROOT/$p"
}

duetnet__host() { # prints I if it is a host of this run, or fails
    local st k
    st=$(duetnet__state) || return
    k=$(cat "$st/hosts")
    case "$1" in ''|*[!0-9]*) duetnet__die "host '$1' is not a number"; return ;; esac
    if [ "$1" -lt 1 ] || [ "$1" -gt "$k" ]; then duetnet__die "host $1 is not in 1..$k"; return; fi
    echo "$1"
}

duetnet_name() { local i; i=$(duetnet__host "${1:-}") || return; echo "$DUETNET_PREFIX-$i"; }
duetnet_addr() {
    local i st
    i=$(duetnet__host "${1:-}") || return
    st=$(duetnet__state) || return
    echo "$(cat "$st/subnet").$i"
}
duetnet__names() { # the network namespaces of run $1 that exist
    ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$1-([0-9]+|br)\$"
}
duetnet_list() { duetnet__state >/dev/null || return; duetnet__names "$DUETNET_PREFIX"; return 0; }

duetnet__check() {
    [ "$(id -u)" = 0 ] || { duetnet__skip "needs root (network namespaces)"; return; }
    command -v ip >/dev/null 2>&1 || { duetnet__skip "ip (iproute2) is not installed"; return; }
    local tool
    for tool in unshare setsid; do
        command -v $tool >/dev/null 2>&1 ||
            { duetnet__skip "$tool (util-linux) is not installed"; return; }
    done
}

# up K: makes a new run (DUETNET_PREFIX, exported) and prints what to eval for it. Its owner,
# whose death ends it, is DUETNET_OWNER if set, else the shell that sourced this file.
duetnet_up() {
    local k=${1:-} owner=${DUETNET_OWNER:-$$} subnet=${DUETNET_SUBNET:-10.213.8}
    local mtu=${DUETNET_MTU:-1500}
    case "$k" in ''|*[!0-9]*) duetnet__die "up: host count '$k' is not a number"; return 2 ;; esac
    if [ "$k" -lt 1 ] || [ "$k" -gt 250 ]; then
        duetnet__die "up: $k hosts: not in 1..250"
        return 2
    fi
    if ! echo "$subnet" | grep -Eq '^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$'; then
        duetnet__die "up: DUETNET_SUBNET '$subnet' is not three octets (like 10.213.8)"
        return 2
    fi
    duetnet__check || return
    duetnet_reap
    mkdir -p "$DUETNET_STATE_ROOT" || return 1
    # duetnet-<owner>, or duetnet-<owner>b ... when the owner has several runs: a letter, so
    # that no run's prefix is another's host name
    local prefix="duetnet-$owner" sfx
    for sfx in "" b c d e f g h i j k l m n o p q r s t u v w x y z FULL; do
        [ "$sfx" != FULL ] || { duetnet__die "up: $owner has too many runs"; return 1; }
        prefix="duetnet-$owner$sfx"
        mkdir "$DUETNET_STATE_ROOT/$prefix" 2>/dev/null && break
    done
    local st="$DUETNET_STATE_ROOT/$prefix"
    echo "$owner $(duetnet__start_time "$owner")" >"$st/owner"
    echo "$k" >"$st/hosts"
    echo "$subnet" >"$st/subnet"
    DUETNET_PREFIX=$prefix
    export DUETNET_PREFIX

    # the watchdog: a grandchild in its own session (its parent exits at once), so that a
    # kill of the test's process group or process tree misses it; it writes its own pid
    (DUETNET_PREFIX=$prefix setsid bash "$DUETNET_SELF" __watch </dev/null >/dev/null 2>&1 &)

    local br="$prefix-br" err="$st/up.err"
    if ! ip netns add "$br" 2>"$err"; then
        local why
        why=$(cat "$err")
        duetnet_down
        duetnet__skip "ip netns add does not work here: $why"
        return
    fi
    if ! {
        ip -n "$br" link set lo up &&
            ip -n "$br" link add br0 type bridge &&
            ip -n "$br" link set br0 mtu "$mtu" up
    } 2>"$err"; then
        duetnet__die "up: bridge: $(cat "$err")"
        duetnet_down
        return 1
    fi
    local i ns
    {
        echo "127.0.0.1 localhost"
        for i in $(seq 1 "$k"); do echo "$subnet.$i $prefix-$i"; done
    } >"$st/etc-hosts"
    for i in $(seq 1 "$k"); do
        ns="$prefix-$i"
        if ! {
            ip netns add "$ns" &&
                ip -n "$ns" link set lo up &&
                ip -n "$ns" link add eth0 mtu "$mtu" type veth peer name "h$i" netns "$br" &&
                ip -n "$br" link set "h$i" mtu "$mtu" master br0 up &&
                ip -n "$ns" addr add "$subnet.$i/24" dev eth0 &&
                ip -n "$ns" link set eth0 up &&
                mkdir -p "/etc/netns/$ns" &&
                cp "$st/etc-hosts" "/etc/netns/$ns/hosts"
        } 2>"$err"; then
            duetnet__die "up: host $i: $(cat "$err")"
            duetnet_down
            return 1
        fi
    done
    if [ -z "${DUETNET_NO_TRAP:-}" ]; then
        # sourced: tear down when the sourcing script ends, however it ends
        trap 'duetnet_down' EXIT
        trap 'duetnet_down; trap - EXIT; exit 129' HUP
        trap 'duetnet_down; trap - EXIT; exit 130' INT
        trap 'duetnet_down; trap - EXIT; exit 143' TERM
    fi
    echo "DUETNET_PREFIX=$prefix; export DUETNET_PREFIX"
}

duetnet_exec() {
    local i st
    i=$(duetnet__host "${1:-}") || return 2
    shift
    [ $# -gt 0 ] || { duetnet__die "exec: no command"; return 2; }
    st=$(duetnet__state) || return 2
    local ns="$DUETNET_PREFIX-$i" hn="" setup="" p d n=0
    [ "${DUETNET_UTS:-1}" = 0 ] || hn=$ns
    for p in ${DUETNET_PRIVATE-/dev/shm}; do
        n=$((n + 1))
        d="$(duetnet__private "$DUETNET_PREFIX")/$i/$n"
        mkdir -p "$d" && chmod 1777 "$d" || return 1
        setup="$setup mount --bind '$d' '$p' || exit 126;"
    done
    # ip netns exec gives the command its own mount namespace (a slave of ours: the binds
    # made in it stay there) with /etc/netns/NS/hosts over /etc/hosts; unshare --uts gives
    # it a hostname of its own
    # shellcheck disable=SC2016,SC2034 # expanded by the inner bash, from its environment
    DUETNET_HN=$hn DUETNET_HOST=$i DUETNET_ADDR="$(cat "$st/subnet").$i" DUETNET_IFACE=eth0 \
        ip netns exec "$ns" unshare ${hn:+--uts} -- bash -c "$setup"'
            if [ -n "$DUETNET_HN" ]; then hostname "$DUETNET_HN" || exit 126; fi
            unset DUETNET_HN
            exec "$@"' bash "$@"
}

duetnet_cut() {
    local i
    i=$(duetnet__host "${1:-}") || return 2
    case "${2:-}" in
        --port) ip -n "$DUETNET_PREFIX-br" link set "h$i" down ;;
        '') ip -n "$DUETNET_PREFIX-$i" link set eth0 down ;;
        *) duetnet__die "cut: unknown option '$2'"; return 2 ;;
    esac
}

duetnet_heal() {
    local i
    i=$(duetnet__host "${1:-}") || return 2
    ip -n "$DUETNET_PREFIX-br" link set "h$i" up && ip -n "$DUETNET_PREFIX-$i" link set eth0 up
}

duetnet__pids() { # the processes in the given namespaces
    local ns
    for ns in "$@"; do ip netns pids "$ns" 2>/dev/null; done
}

# Removes run $1: its processes, namespaces, files. Never fails; quiet about what is gone.
duetnet__remove() {
    local prefix=$1 st="$DUETNET_STATE_ROOT/$1" names pids w
    case "$prefix" in duetnet-?*) ;; *) return 0 ;; esac
    names=$(duetnet__names "$prefix")
    # the processes still in the run's namespaces are the run's own: end them first, or the
    # namespaces (and their veth ends) outlive their names
    # shellcheck disable=SC2086 # lists of words
    if [ -n "$names" ]; then
        pids=$(duetnet__pids $names)
        if [ -n "$pids" ]; then
            kill -s TERM $pids 2>/dev/null
            for _ in 1 2 3 4 5 6 7 8 9 10; do
                [ -n "$(duetnet__pids $names)" ] || break
                sleep 0.2
            done
            pids=$(duetnet__pids $names)
            [ -z "$pids" ] || kill -s KILL $pids 2>/dev/null
        fi
        for w in $names; do ip netns del "$w" 2>/dev/null; done
    fi
    rm -rf "/etc/netns/$prefix"-[0-9]* "$(duetnet__private "$prefix")"
    rmdir /etc/netns 2>/dev/null
    w=$(cat "$st/watchdog" 2>/dev/null)
    [ -z "$w" ] || [ "$w" = "$$" ] || [ "$w" = "${BASHPID:-}" ] || kill "$w" 2>/dev/null
    rm -rf "$st"
    return 0
}

duetnet_down() { [ -z "${DUETNET_PREFIX:-}" ] || duetnet__remove "$DUETNET_PREFIX"; }

# Removes the runs whose owner and watchdog are both dead: nobody else will. A run younger
# than a minute is left alone: it may be one that another `up` is still making.
duetnet_reap() {
    local d owner start w
    for d in "$DUETNET_STATE_ROOT"/duetnet-*; do
        [ -d "$d" ] || continue
        [ -n "$(find "$d" -maxdepth 0 -mmin +1 2>/dev/null)" ] || continue
        read -r owner start <"$d/owner" 2>/dev/null || { owner=""; start=""; }
        duetnet__alive "$owner" "$start" && continue
        w=$(cat "$d/watchdog" 2>/dev/null)
        [ -n "$w" ] && grep -q __watch "/proc/$w/cmdline" 2>/dev/null && continue
        echo "netns.sh: removing ${d##*/} (its owner $owner is gone)" >&2
        duetnet__remove "${d##*/}"
    done
}

duetnet__watch() { # the watchdog: waits for the owner's death, then removes the run
    local st="$DUETNET_STATE_ROOT/$DUETNET_PREFIX" owner start
    read -r owner start <"$st/owner" || exit 0
    echo "$$" >"$st/watchdog"
    while [ -d "$st" ] && duetnet__alive "$owner" "$start"; do sleep 0.5; done
    [ -d "$st" ] && duetnet__remove "$DUETNET_PREFIX"
    exit 0
}

# On a signal, run passes it on (SIGTERM for SIGINT, which background commands of a
# script ignore), gives the command 5 s, and tears down.
duetnet__run_signal() { # signal name, exit status
    local sig=$1
    [ "$sig" = INT ] && sig=TERM
    if [ -n "${duetnet_child:-}" ]; then
        kill -s "$sig" "$duetnet_child" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$duetnet_child" 2>/dev/null || break; sleep 0.1; done
        kill -s KILL "$duetnet_child" 2>/dev/null
    fi
    duetnet_down
    trap - EXIT
    exit "$2"
}

duetnet_run() {
    local k=${1:-} rc
    shift
    [ "${1:-}" != -- ] || shift
    [ $# -gt 0 ] || { duetnet__die "run: no command"; return 2; }
    DUETNET_OWNER=$$ DUETNET_NO_TRAP=1 duetnet_up "$k" >/dev/null || return
    export DUETNET_PREFIX DUETNET_SH="$DUETNET_SELF" DUETNET_HOSTS="$k"
    trap 'duetnet_down' EXIT
    trap 'duetnet__run_signal HUP 129' HUP
    trap 'duetnet__run_signal INT 130' INT
    trap 'duetnet__run_signal TERM 143' TERM
    "$@" &
    duetnet_child=$!
    wait "$duetnet_child"
    rc=$?
    duetnet_down
    trap - EXIT
    return "$rc"
}

duetnet__usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$DUETNET_SELF"
}

duetnet__main() {
    local cmd=${1:-}
    [ $# -eq 0 ] || shift
    case "$cmd" in
        run) duetnet_run "$@" ;;
        up) DUETNET_OWNER=${DUETNET_OWNER:-$PPID} DUETNET_NO_TRAP=1 duetnet_up "$@" ;;
        exec) duetnet_exec "$@" ;;
        cut) duetnet_cut "$@" ;;
        heal) duetnet_heal "$@" ;;
        addr) duetnet_addr "$@" ;;
        name) duetnet_name "$@" ;;
        list) duetnet_list ;;
        down) duetnet_down ;;
        reap) duetnet_reap ;;
        __watch) duetnet__watch ;;
        -h|--help|help) duetnet__usage ;;
        *) duetnet__usage >&2; return 2 ;;
    esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -u
    duetnet__main "$@"
    exit
fi
