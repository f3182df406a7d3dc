#!/usr/bin/env bash
# examples/run-gpu.sh — runs the GPU variant of every example once with its default sizes, as
# the READMEs show them (on a GPU machine; several ranks on one GPU need CUDA MPS:
# scripts/with-mps.sh examples/run-gpu.sh). Plots go to DIR (default: the current directory;
# a .gp script where gnuplot is missing).
#
#   examples/run-gpu.sh [DIR]        BUILD=build by default
# The exit status is 1 when any run failed (each checks its own result).
set -uo pipefail
B="${BUILD:-build}"
DIR="${1:-.}"
mkdir -p "$DIR"
failed=0
run() {
    echo "\$ $*"
    "$@"
    local rc=$?
    [ $rc -eq 0 ] || { echo "(exit status $rc)"; failed=1; }
    echo
}
R="$B/bin/duetrun --timeout 300"
run $R -n 2 "$B/bin/stencil_gpu"
run $R -n 3 "$B/bin/stencil_gpu"
run $R -n 2 "$B/bin/stencil_gpu" -n 1024
run $R -n 2 "$B/bin/devput_gpu" --plot "$DIR/devput-2ranks.png"
run $R -n 2 "$B/bin/devput_gpu" -B 16
run $R -n 2 "$B/bin/oneshot_gpu" --plot "$DIR/oneshot_gpu-2ranks.png"
run $R -n 4 "$B/bin/oneshot_gpu"
run $R -n 2 -x DUET_CUDA_HEAP_SIZE=6G "$B/bin/moe_gpu"
run $R -n 4 -x DUET_CUDA_HEAP_SIZE=6G "$B/bin/moe_gpu"
run env BUILD="$(cd "$B" && pwd)" "$(dirname "$0")/crossover/crossover.sh" --device -n 2 --plot "$DIR/crossover-gpu-2ranks.png"
exit $failed
