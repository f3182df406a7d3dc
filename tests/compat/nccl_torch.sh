#!/bin/sh
# tests/compat/nccl_torch.sh — PyTorch (torch.distributed, backend "nccl") on Duet's libnccl.so.2:
# runs tests/compat/nccl_torch.py under torchrun (python3 -m torch.distributed.run) with
# LD_PRELOAD of our library, at 2 and 4 processes on one or two GPUs, and checks that every
# rank passed, tore down, and that Duet's library (not PyTorch's bundled NCCL) served the calls:
# NCCL_DEBUG=VERSION makes ours print "NCCL version 2.28.9 (Duet ...)", and
# each rank checks (dladdr) that the NCCL calls resolve to ours (DUET_NCCL_TORCH_LIB).
#
#   usage: nccl_torch.sh PATH/TO/libnccl.so.2      (ctest: gpu.nccl_torch; exit 77 = skipped)
#
# Skips (exit 77, with the reason) without python3, without an importable torch, without
# torch.distributed's NCCL backend, or without a visible GPU. Several ranks share a GPU in some
# runs: start CUDA MPS first (scripts/with-mps.sh ctest ...) for speed. Settings:
#   NCCL_TORCH_TIMEOUT   seconds per torchrun (default 600)
#   NCCL_TORCH_RUNS      the runs, "procs:gpus[:bind]" separated by spaces (default below)
set -u
lib=${1:-}
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "$lib" ] || [ ! -e "$lib" ]; then
    echo "usage: $0 PATH/TO/libnccl.so.2 (got '${lib}')" >&2
    exit 2
fi
lib=$(readlink -f "$lib")
skip() {
    echo "nccl_torch: SKIP: $*"
    exit 77
}
command -v python3 >/dev/null 2>&1 || skip "no python3"
# asked without our library loaded: these only look at torch and the GPUs
python3 -c 'import torch' >/dev/null 2>&1 || skip "python3 cannot import torch (pip install torch on the GPU machine)"
python3 -c 'import sys, torch.distributed as d; sys.exit(0 if d.is_available() and d.is_nccl_available() else 1)' \
    >/dev/null 2>&1 || skip "this torch has no torch.distributed NCCL backend"
ngpu=$(python3 -c 'import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)' 2>/dev/null)
[ "${ngpu:-0}" -ge 1 ] 2>/dev/null || skip "no GPU visible to torch (torch.cuda.is_available() is False)"

# the GPUs: the first one or two visible
first=$(python3 -c 'import os; v=os.environ.get("CUDA_VISIBLE_DEVICES"); print(v.split(",")[0] if v else 0)')
second=$(python3 -c 'import os; v=os.environ.get("CUDA_VISIBLE_DEVICES"); print(v.split(",")[1] if v and len(v.split(","))>1 else 1)')
if [ "$ngpu" -ge 2 ]; then
    runs=${NCCL_TORCH_RUNS:-"2:2 4:2:bind 4:1 2:1:bind"}
else
    runs=${NCCL_TORCH_RUNS:-"2:1 4:1:bind"}
fi
if [ -z "${CUDA_MPS_PIPE_DIRECTORY:-}" ]; then
    echo "nccl_torch: note: no CUDA MPS (CUDA_MPS_PIPE_DIRECTORY unset): ranks sharing a GPU time-slice it" \
         "(slow); scripts/with-mps.sh runs MPS"
fi
timeout_s=${NCCL_TORCH_TIMEOUT:-600}
log_dir=$(mktemp -d "${TMPDIR:-/tmp}/nccl_torch.XXXXXX")
status=0
for run in $runs; do
    procs=${run%%:*}
    rest=${run#*:}
    gpus=${rest%%:*}
    bind=
    case $run in *:bind) bind=--bind-device ;; esac
    if [ "$gpus" -ge 2 ] && [ "$ngpu" -ge 2 ]; then devs="$first,$second"; else devs=$first; gpus=1; fi
    log=$log_dir/run-$procs-$gpus${bind:+-bind}.log
    echo "nccl_torch: $procs processes on GPU(s) $devs ${bind}"
    CUDA_VISIBLE_DEVICES=$devs LD_PRELOAD=$lib NCCL_DEBUG=VERSION DUET_NCCL_TORCH_LIB=$lib \
        NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=1 \
        timeout -k 10 "$timeout_s" python3 -m torch.distributed.run --standalone --nproc_per_node="$procs" \
        "$here/nccl_torch.py" $bind >"$log" 2>&1
    rc=$?
    duet=$(grep -c "NCCL version .*(Duet " "$log")
    pass=$(grep -o "nccl_torch: rank [0-9]*: PASS" "$log" | wc -l)
    gone=$(grep -o "nccl_torch: rank [0-9]*: destroyed" "$log" | wc -l)
    grep "nccl_torch: torch \|libnccl serving this process\|NCCL version .*(Duet " "$log" | head -3 | sed 's/^/    /'
    why=
    [ "$rc" -eq 0 ] || why="torchrun exited $rc$( [ "$rc" -eq 124 ] && echo " (timed out after ${timeout_s} s)");"
    [ "$duet" -ge 1 ] || why="$why no 'NCCL version ... (Duet' line: Duet's libnccl did not serve the calls;"
    [ "$pass" -eq "$procs" ] || why="$why $pass of $procs ranks passed their checks;"
    [ "$gone" -eq "$procs" ] || why="$why $gone of $procs ranks finished destroy_process_group;"
    if [ -n "$why" ]; then
        echo "nccl_torch: FAIL ($procs processes, GPU(s) $devs ${bind}):$why"
        echo "---- the last lines of $log:"
        tail -n 60 "$log"
        echo "----"
        status=1
    else
        echo "nccl_torch: ok ($procs processes, GPU(s) $devs ${bind}): $pass ranks passed, served by $lib"
    fi
done
[ "$status" -eq 0 ] && rm -rf "$log_dir"
exit $status
