#!/bin/sh
# Re-init after finalize (issue 18 item 11) and bound listeners (item 2) under every way a
# world can start on one host: duetrun (the inherited listener), an mpirun-style environment
# (the rendezvous file), torchrun's MASTER_ADDR/MASTER_PORT and a user's DUET_BOOT_ADDR (rank 0
# binds the named port itself). 3 cycles of duet_init .. duet_finalize with 1-4 ranks; every
# listener of rank 0 (world, split, shrink) must be bound to 127.0.0.1.
#   sh boot_cycles.sh <duetrun> <boot_cycles>
. "$(dirname "$0")/lib.sh"
prog=${2:?usage: sh $0 <duetrun> <boot_cycles>}
clean_env="env -u DUET_RANK -u DUET_NRANKS -u DUET_LOCAL_RANK -u DUET_LOCAL_SIZE -u DUET_BOOT_ADDR -u DUET_JOB_SECRET -u DUET_BOOT_LISTEN_FD -u DUET_BOOT_LISTENING -u OMPI_COMM_WORLD_SIZE -u SLURM_NTASKS -u WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT -u DUET_SOCKET_IFNAME -u DUET_BOOTSTRAP_IFADDR"
mkdir -m 700 "$tmp/xdg"
secret=0123456789abcdef0123456789abcdef

# a port below the kernel's ephemeral range, so that no live connection of another test holds it
low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
[ "$low" -gt 12000 ] 2>/dev/null || low=32768
port=$((10000 + ($$ + 977) % (low - 12000)))

run_ranks() { # $1: label; $2: n; $3: function printing the env assignments for rank $r of $n
    label=$1 n=$2 envfn=$3 pids=""
    r=0
    while [ $r -lt "$n" ]; do
        # shellcheck disable=SC2046
        $clean_env $($envfn $r "$n") timeout 60 "$prog" 3 "$n" 127.0.0.1 >"$tmp/$label.$n.$r.out" 2>&1 &
        pids="$pids $!"
        r=$((r + 1))
    done
    r=0
    for p in $pids; do
        wait "$p" || { cat "$tmp/$label.$n.$r.out" >&2; fail "$label, $n ranks: rank $r failed"; }
        r=$((r + 1))
    done
    echo "$label: $n ranks, 3 cycles ok"
}

mpi_env() { echo "OMPI_COMM_WORLD_RANK=$1 OMPI_COMM_WORLD_SIZE=$2 OMPI_COMM_WORLD_LOCAL_RANK=$1 OMPI_COMM_WORLD_LOCAL_SIZE=$2 PMIX_NAMESPACE=duet-cycles-$$-$2 XDG_RUNTIME_DIR=$tmp/xdg DUET_JOB_SECRET=$secret"; }
torch_env() { echo "RANK=$1 WORLD_SIZE=$2 LOCAL_RANK=$1 LOCAL_WORLD_SIZE=$2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port TORCHELASTIC_RUN_ID=duet-cycles-$$"; }
addr_env() { echo "OMPI_COMM_WORLD_RANK=$1 OMPI_COMM_WORLD_SIZE=$2 OMPI_COMM_WORLD_LOCAL_RANK=$1 OMPI_COMM_WORLD_LOCAL_SIZE=$2 DUET_BOOT_ADDR=127.0.0.1:$((port + 3)) DUET_JOB_SECRET=$secret"; }

for n in 1 2 3 4; do
    $clean_env "$duetrun" -n $n --timeout 60 "$prog" 3 $n 127.0.0.1 >"$tmp/duetrun.$n.out" 2>&1 ||
        { cat "$tmp/duetrun.$n.out" >&2; fail "duetrun, $n ranks: the job failed"; }
    echo "duetrun: $n ranks, 3 cycles ok"
    run_ranks mpirun-file $n mpi_env
    [ -z "$(ls "$tmp/xdg/duet")" ] || fail "mpirun-file: rendezvous files left behind: $(ls "$tmp/xdg/duet")"
    run_ranks torchrun $n torch_env
    run_ranks boot-addr $n addr_env
done
exit 0
