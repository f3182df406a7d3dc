#!/bin/sh
# tests/python/run.sh — the Python module's tests: tests/python/test_duet.py under duetrun
# (1, 2 and 3 ranks), under Open MPI's mpirun when installed, and under a torchrun
# environment (RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT: torchrun itself when torch is
# importable, else the same variables set per rank), and examples/python/bandwidth.py on 2
# ranks (a short sweep: its fit line must be printed). The interpreter is the first of
# python3, /usr/bin/python3 that imports numpy (Debian's python3-numpy: scripts/install-deps.sh);
# exit 77 (skipped) when none does.
#     sh run.sh <duetrun> <libduet.so.0> <source dir>
set -u
duetrun=${1:?usage: sh $0 <duetrun> <libduet> <source dir>}
lib=$(readlink -f "${2:?}")
src=$(cd "${3:?}" && pwd)
py=
for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import numpy' >/dev/null 2>&1; then py=$(command -v "$p"); break; fi
done
[ -n "$py" ] || { echo "python: SKIP: no python3 that imports numpy (apt-get install python3-numpy)"; exit 77; }
if readelf -d "$lib" 2>/dev/null | grep -q libasan; then
    echo "python: SKIP: a sanitized libduet (make asan) cannot load into python3, which is not"
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/duet-python.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export DUET_LIB="$lib" PYTHONPATH="$src/python${PYTHONPATH:+:$PYTHONPATH}"
test_py=$src/tests/python/test_duet.py

passed() { # $1: log, $2: ranks
    [ "$(grep -o 'test_duet: rank [0-9]*: PASS' "$1" | wc -l)" -eq "$2" ] || { cat "$1" >&2; return 1; }
}
for n in 1 2 3; do
    "$duetrun" -n $n --timeout 120 "$py" "$test_py" >"$tmp/duetrun.$n" 2>&1 && passed "$tmp/duetrun.$n" $n ||
        fail "under duetrun -n $n"
    echo "python: duetrun -n $n ok ($py)"
done

clean_env="env -u DUET_RANK -u DUET_NRANKS -u DUET_LOCAL_RANK -u DUET_LOCAL_SIZE -u DUET_BOOT_ADDR -u DUET_JOB_SECRET -u DUET_BOOT_LISTEN_FD -u DUET_BOOT_LISTENING -u OMPI_COMM_WORLD_SIZE -u SLURM_NTASKS -u WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT"
if command -v mpirun >/dev/null 2>&1; then
    $clean_env timeout 150 mpirun --allow-run-as-root --oversubscribe -np 2 -x DUET_LIB -x PYTHONPATH "$py" "$test_py" \
        >"$tmp/mpirun" 2>&1 && passed "$tmp/mpirun" 2 || fail "under mpirun -np 2"
    echo "python: mpirun -np 2 ok"
else
    echo "python: mpirun not installed: skipped that part"
fi

low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
[ "$low" -gt 12000 ] 2>/dev/null || low=32768
port=$((10000 + ($$ + 7) % (low - 12000)))
if "$py" -c 'import torch.distributed.run' >/dev/null 2>&1; then
    $clean_env timeout 150 "$py" -m torch.distributed.run --standalone --nproc_per_node=2 "$test_py" \
        >"$tmp/torchrun" 2>&1 && passed "$tmp/torchrun" 2 || fail "under torchrun"
    echo "python: torchrun --nproc_per_node=2 ok"
else
    pids=""
    for r in 0 1; do
        $clean_env RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
            TORCHELASTIC_RUN_ID=duet-python-$$ timeout 150 "$py" "$test_py" >"$tmp/torch.$r" 2>&1 &
        pids="$pids $!"
    done
    for p in $pids; do wait "$p" || { cat "$tmp"/torch.* >&2; fail "under a torchrun environment"; }; done
    cat "$tmp"/torch.* >"$tmp/torchrun"
    passed "$tmp/torchrun" 2 || fail "under a torchrun environment"
    echo "python: a torchrun environment (RANK, WORLD_SIZE, MASTER_ADDR/PORT) on 2 ranks ok (no torch here)"
fi

"$duetrun" -n 2 --timeout 120 "$py" "$src/examples/python/bandwidth.py" -b 8 -e 1M -f 4 -n 10 >"$tmp/bw" 2>&1 ||
    { cat "$tmp/bw" >&2; fail "examples/python/bandwidth.py"; }
grep -q "^# fit T(n) = alpha + n / beta: alpha" "$tmp/bw" || { cat "$tmp/bw" >&2; fail "bandwidth.py printed no fit"; }
echo "python: examples/python/bandwidth.py ok: $(grep '^# fit' "$tmp/bw")"
