#!/usr/bin/env bash
# scripts/with-mps.sh — runs a command with the CUDA MPS daemon up, and takes it down after,
# whatever the command's fate (several ranks on one GPU only run concurrently under MPS;
# DESIGN.md "The GPU machine").
#
#   scripts/with-mps.sh make test-gpu
#   scripts/with-mps.sh build/bin/duetrun -n 2 build/bin/duet-perf pingpong --device
#
# Also sets what the GPU machine asks of every run: no NVLink multicast, anywhere.
# The exit status is the command's.
set -uo pipefail

export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export CUDA_MPS_PIPE_DIRECTORY="${CUDA_MPS_PIPE_DIRECTORY:-/tmp/mps_pipe}"
export CUDA_MPS_LOG_DIRECTORY="${CUDA_MPS_LOG_DIRECTORY:-/tmp/mps_log}"

if [ $# -eq 0 ]; then
    echo "usage: $0 COMMAND [ARGS...]" >&2
    exit 2
fi
if ! command -v nvidia-cuda-mps-control >/dev/null; then
    echo "with-mps: nvidia-cuda-mps-control not found (no CUDA driver here?)" >&2
    exit 2
fi
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
started=0
if nvidia-cuda-mps-control -d; then
    started=1
else
    echo "with-mps: could not start the MPS daemon (already running?); going on" >&2
fi
stop() { [ "$started" = 1 ] && echo quit | nvidia-cuda-mps-control; }
trap stop EXIT
"$@"
