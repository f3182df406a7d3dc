#!/bin/sh
# Rank 0 SIGKILLed inside duet_init once it listens (DUET_TEST_BOOT_ROOT_DIE=1; issue 18 item
# 10): with 2, 3 and 4 ranks, under duetrun --ft (the others are not ended by duetrun) and
# with the rendezvous file of an mpirun-style environment, every other rank's duet_init fails
# naming rank 0 within 5 s (the bootstrap timeout is 60 s: the old code waited all of it).
#   sh boot_root_death.sh <duetrun> <boot_root_death>
. "$(dirname "$0")/lib.sh"
prog=${2:?usage: sh $0 <duetrun> <boot_root_death>}
clean_env="env -u DUET_RANK -u DUET_NRANKS -u DUET_LOCAL_RANK -u DUET_LOCAL_SIZE -u DUET_BOOT_ADDR -u DUET_JOB_SECRET -u DUET_BOOT_LISTEN_FD -u DUET_BOOT_LISTENING -u OMPI_COMM_WORLD_SIZE -u SLURM_NTASKS -u WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT DUET_BOOTSTRAP_TIMEOUT=60"
mkdir -m 700 "$tmp/xdg"
bound=5

for n in 2 3 4; do
    $clean_env "$duetrun" -n $n --ft --timeout 60 -x DUET_TEST_BOOT_ROOT_DIE=1 "$prog" $bound \
        >"$tmp/duetrun.$n.out" 2>&1 || { cat "$tmp/duetrun.$n.out" >&2; fail "duetrun --ft, $n ranks: a survivor failed"; }
    echo "duetrun --ft: $n ranks ok"

    # the others start first (as under mpirun, before rank 0 can publish), then rank 0
    pids="" r=$((n - 1))
    while [ $r -ge 0 ]; do
        die=0
        [ $r -eq 0 ] && die=1
        $clean_env OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=$n OMPI_COMM_WORLD_LOCAL_RANK=$r \
            OMPI_COMM_WORLD_LOCAL_SIZE=$n PMIX_NAMESPACE=duet-death-$$-$n XDG_RUNTIME_DIR="$tmp/xdg" \
            DUET_JOB_SECRET=00112233445566778899aabbccddeeff DUET_TEST_BOOT_ROOT_DIE=$die \
            timeout 60 "$prog" $bound >"$tmp/file.$n.$r.out" 2>&1 &
        pids="$! $pids"
        r=$((r - 1))
    done
    r=0
    for p in $pids; do
        wait "$p"
        rc=$?
        if [ $r -eq 0 ]; then
            [ $rc -eq 137 ] || { cat "$tmp/file.$n.0.out" >&2; fail "rendezvous file, $n ranks: rank 0 exited $rc, not killed"; }
        else
            [ $rc -eq 0 ] || { cat "$tmp/file.$n.$r.out" >&2; fail "rendezvous file, $n ranks: rank $r failed"; }
        fi
        r=$((r + 1))
    done
    echo "rendezvous file: $n ranks ok"
done
exit 0
