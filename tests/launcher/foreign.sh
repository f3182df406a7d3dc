#!/bin/sh
# Ranks started by other launchers' environments join one world: torchrun's (RANK,
# WORLD_SIZE, MASTER_ADDR, MASTER_PORT), Slurm's (SLURM_PROCID, SLURM_NTASKS, a rendezvous
# file named by SLURM_JOB_ID) and, when installed, Open MPI's real mpirun.
#   sh foreign.sh <duetrun> <ring_check>
. "$(dirname "$0")/lib.sh"
ring=${2:?usage: sh $0 <duetrun> <ring_check>}
n=3
clean_env="env -u DUET_RANK -u DUET_NRANKS -u DUET_LOCAL_RANK -u DUET_LOCAL_SIZE -u DUET_BOOT_ADDR -u DUET_JOB_SECRET -u DUET_BOOT_LISTEN_FD -u DUET_BOOT_LISTENING -u OMPI_COMM_WORLD_SIZE -u SLURM_NTASKS -u WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT"

# start n ranks with "$@" as per-rank environment builder; wait for each, bounded
run_ranks() { # $1: label; $2: function printing the env assignments for rank $r
    label=$1 envfn=$2 pids=""
    r=0
    while [ $r -lt $n ]; do
        # shellcheck disable=SC2046
        $clean_env $($envfn $r) timeout 60 "$ring" $n >"$tmp/$label.$r.out" 2>&1 &
        pids="$pids $!"
        r=$((r + 1))
    done
    r=0
    for p in $pids; do
        wait "$p" || { cat "$tmp/$label.$r.out" >&2; fail "$label: rank $r failed"; }
        r=$((r + 1))
    done
    echo "$label: $n ranks ok"
}

# a port below the kernel's ephemeral range, so that no live connection of another test holds it
low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
[ "$low" -gt 12000 ] 2>/dev/null || low=32768
port=$((10000 + $$ % (low - 12000)))
torch_env() { echo "RANK=$1 WORLD_SIZE=$n LOCAL_RANK=$1 LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port TORCHELASTIC_RUN_ID=duet-test-$$"; }
run_ranks torchrun torch_env

mkdir -m 700 "$tmp/xdg"
slurm_env() { echo "SLURM_PROCID=$1 SLURM_NTASKS=$n SLURM_LOCALID=$1 SLURM_JOB_ID=duet-test-$$ SLURM_STEP_ID=0 XDG_RUNTIME_DIR=$tmp/xdg"; }
run_ranks srun slurm_env
[ -d "$tmp/xdg/duet" ] || fail "srun: no rendezvous directory in \$XDG_RUNTIME_DIR"
[ ! -e "$tmp/xdg/duet/rdv-duet-test-$$.0" ] || fail "srun: the rendezvous file was left behind"

if command -v mpirun >/dev/null 2>&1; then
    $clean_env timeout 120 mpirun --allow-run-as-root --oversubscribe -np $n "$ring" $n >"$tmp/mpi.out" 2>&1 ||
        { cat "$tmp/mpi.out" >&2; fail "mpirun: the job failed"; }
    echo "mpirun: $n ranks ok"
else
    echo "mpirun not installed: skipped that part"
fi
exit 0
