#!/bin/sh
# shmem_ft.sh DUETRUN PROGRAM NPES MODE EXPECTED BOUND_S REGEX [duetrun options...]
# Runs `DUETRUN -n NPES [options] PROGRAM MODE` and checks that it ended (not by duetrun's
# --timeout), within BOUND_S seconds, with at least EXPECTED lines of stdout+stderr matching
# the extended REGEX (one per PE that waited), and that no PE's wait returned.
duetrun=$1 prog=$2 n=$3 mode=$4 want=$5 bound=$6 regex=$7
shift 7
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
t0=$(date +%s%N)
"$duetrun" -n "$n" --timeout 60 "$@" "$prog" "$mode" >"$out" 2>&1
rc=$?
t1=$(date +%s%N)
ms=$(( (t1 - t0) / 1000000 ))
cat "$out"
got=$(grep -Ec -- "$regex" "$out")
echo "shmem_ft.sh: $mode at $n PEs: exit $rc after $ms ms, $got of $want PEs said /$regex/"
fail=0
[ "$rc" = 124 ] && { echo "FAIL: duetrun's timeout ended it (a hang)"; fail=1; }
[ "$rc" = 0 ] && { echo "FAIL: the job succeeded"; fail=1; }
[ "$got" -ge "$want" ] || { echo "FAIL: want $want matching lines"; fail=1; }
[ "$ms" -le $((bound * 1000)) ] || { echo "FAIL: took more than $bound s"; fail=1; }
grep -q "the wait returned" "$out" && { echo "FAIL: a wait returned"; fail=1; }
exit $fail
