#!/usr/bin/env bash
# tools/run-main.sh — the main job (`make run`): the allreduce sweep 8 B .. 64 MiB on the
# default backend, once per allreduce algorithm (ring tree dbtree rd rhd oneshot twoshot:
# every one duet-perf --list-algos allreduce names), then the alpha-beta fit per algorithm,
# the crossovers, and the plot.
#
#   tools/run-main.sh [BUILD [NP]]          (defaults: build, 2 ranks; env BUILD / NP too)
#
# Writes, under BUILD: perf/allreduce-ALGO.csv (one run each), perf/allreduce.csv (joined),
# perf-allreduce-fit.txt (the fit report) and perf-allreduce.png (time and busbw against
# size, with the fits); with a GPU (duet-info: cuda available) the same for GPU buffers under
# perf-gpu/ and perf-gpu-allreduce*. Runtime on the 2-core machine: about a minute. A run that fails
# does not stop the others; the script then exits 1 at the end. DUET_WAIT_TIMEOUT is 30 s
# here unless set, so a hang costs 30 s, not 300.
# -n 1000 iterations per size, capped at 512 MiB moved per size (-V): the large sizes run
# a handful of iterations.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-${BUILD:-build}}"
NP="${2:-${NP:-2}}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
export BUILD
export DUET_WAIT_TIMEOUT="${DUET_WAIT_TIMEOUT:-30}"

start=$(date +%s)
"$BUILD/bin/duet-info" | head -8 || true # (head may close the pipe early)
rc=0
"$ROOT/tools/duet-perf-algos.sh" -n "$NP" --out "$BUILD/perf" --plot "$BUILD/perf-allreduce.png" \
    allreduce -a all -b 8 -e 64M -f 2 -n 1000 -V 512M || rc=$?
# the fit, kept beside the plot
"$BUILD/bin/duet-perf" --fit "$BUILD/perf/allreduce.csv" | tee "$BUILD/perf-allreduce-fit.txt" || rc=1
# With a GPU: the same on GPU buffers (duet-perf --device), the one-shot and two-shot allreduce up
# to 1 MiB (two-shot on these symmetric heap buffers runs the direct kernel from 64 KiB); ranks
# share the GPU under CUDA MPS.
info="$("$BUILD/bin/duet-info" 2>/dev/null || true)" # (not piped into grep -q: pipefail + SIGPIPE)
if grep -q '^ *cuda *available' <<<"$info"; then
    mps=()
    command -v nvidia-cuda-mps-control >/dev/null && mps=("$ROOT/scripts/with-mps.sh")
    "${mps[@]}" "$ROOT/tools/duet-perf-algos.sh" -n "$NP" --out "$BUILD/perf-gpu" \
        --plot "$BUILD/perf-gpu-allreduce.png" allreduce --device -a oneshot,twoshot -b 8 -e 1M -f 2 -n 1000 ||
        rc=$?
    "$BUILD/bin/duet-perf" --fit "$BUILD/perf-gpu/allreduce.csv" | tee "$BUILD/perf-gpu-allreduce-fit.txt" || rc=1
fi
echo "run-main: $(( $(date +%s) - start )) s; results: $BUILD/perf/allreduce.csv, $BUILD/perf-allreduce-fit.txt, $BUILD/perf-allreduce.png"
exit "$rc"
