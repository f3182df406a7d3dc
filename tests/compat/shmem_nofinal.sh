#!/bin/sh
# shmem_nofinal.sh DUETRUN PROGRAM — programs ending without shmem_finalize end promptly, with
# their own status, and leave nothing in /dev/shm (see shmem_nofinal.c):
#   duetrun -n 3 PROGRAM init / start_pes     exit 0
#   duetrun -n 3 PROGRAM error                exit 1 (a PE left with 3), not a hang
#   PROGRAM init, no launcher (one PE), DUET_JOB_SECRET set: nothing named after it is left
duetrun=$1 prog=$2
fail=0
check() { # want_rc bound_s command...
    want=$1 bound=$2
    shift 2
    t0=$(date +%s%N)
    "$@"
    rc=$?
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    echo "shmem_nofinal.sh: '$*': exit $rc after $ms ms"
    [ "$rc" = "$want" ] || { echo "FAIL: want exit $want"; fail=1; }
    [ "$ms" -le $((bound * 1000)) ] || { echo "FAIL: took more than $bound s"; fail=1; }
}
check 0 20 "$duetrun" -n 3 --timeout 30 "$prog" init
check 0 20 "$duetrun" -n 3 --timeout 30 "$prog" start_pes
check 1 20 "$duetrun" -n 3 --timeout 30 "$prog" error
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
prefix=$(DUET_JOB_SECRET=$secret "$(dirname "$duetrun")/duet-info" --shm-prefix) || { echo "FAIL: duet-info --shm-prefix"; fail=1; }
DUET_JOB_SECRET=$secret check 0 20 "$prog" init
left=$(ls /dev/shm 2>/dev/null | grep -c "^$prefix")
echo "shmem_nofinal.sh: $left name(s) of the one-PE run left in /dev/shm"
[ "$left" = 0 ] || { ls -l /dev/shm | grep "$prefix"; fail=1; }
exit $fail
