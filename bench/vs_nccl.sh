#!/usr/bin/env bash
# bench/vs_nccl.sh — Duet's GPU collectives against NCCL's, side by side, on the GPU machine.
#
#   bench/vs_nccl.sh [--rounds R] [--deadline S] [--out DIR] [--ranks N] [--mps]
#                    [--ops "allreduce broadcast ..."] [--sizes "-b 8 -e 256M -f 4 -n 50"]
#                                                        (BUILD=build ...)
#
# Finds NCCL (NCCL_HOME, else the nvidia-nccl-cu13 or -cu12 Python package that comes with
# PyTorch: include/nccl.h and lib/libnccl.so.2 under its nvidia/nccl/), builds
# bench/nccl_perf.cu with nvcc -arch=sm_90 into $BUILD/bench (again only when the source is
# newer), then for each round and op runs NCCL's nccl_perf and Duet's duet-perf --device OP
# back to back with the same flags, both started by duetrun -n NRANKS (which goes first
# alternates by round), each writing a CSV under DIR/raw. DIR defaults to
# $BUILD/bench/vs_nccl. Then it prints, per (op, bytes), the median over rounds of each
# one's time and busbw and the ratio of the times, and writes the same table as
# DIR/vs_nccl.md.
#
#   --rounds R     rounds [3]
#   --deadline S   start no round that would end past S seconds from the start (the table
#                  then counts the rounds done) [0: none]
#   --out DIR      results [$BUILD/bench/vs_nccl]
#   --ranks N      ranks [the GPUs that nvidia-smi -L lists]; rank r on GPU r % GPUs
#   --mps          run under CUDA MPS (scripts/with-mps.sh): needed for more ranks than GPUs.
#                  NCCL refuses two ranks on one GPU, so then only Duet runs and the NCCL
#                  column says n/a
#   --ops "..."    of allreduce broadcast reduce allgather reducescatter alltoall [all six]
#   --sizes "..."  flags both programs get, as they are ["-b 8 -e 256M -f 4 -n 50"]
#
# Ops, sizes and columns are duet-perf --device's (tools/perf/perf_device_coll.c): float32,
# sum for the reducing ones; bytes = the largest buffer of a rank (allgather: the receive
# buffer, reducescatter: the send buffer, alltoall: each buffer); busbw as nccl-tests'.
# Ratio = time Duet / NCCL (lower is better for Duet). An op duet-perf's --help does not list
# under its device modes gets "n/a" in the Duet column.
#
# Always NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1: never NVLink multicast. A failing run
# (non-zero exit, wrong results, no CSV) prints its log's tail and leaves its rows "failed";
# the script then exits 1 after writing the table.
set -euo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

ALL_OPS="allreduce broadcast reduce allgather reducescatter alltoall"
ROUNDS=3
DEADLINE=0
OUT=""
RANKS=""
MPS=0
OPS="$ALL_OPS"
SIZES="-b 8 -e 256M -f 4 -n 50"
ARGS=("$@")
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS="${2:?--rounds needs a value}"; shift 2 ;;
        --deadline) DEADLINE="${2:?--deadline needs a value}"; shift 2 ;;
        --out) OUT="${2:?--out needs a value}"; shift 2 ;;
        --ranks) RANKS="${2:?--ranks needs a value}"; shift 2 ;;
        --mps) MPS=1; shift ;;
        --ops) OPS="${2:?--ops needs a value}"; shift 2 ;;
        --sizes) SIZES="${2:?--sizes needs a value}"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "vs_nccl.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
case "$ROUNDS" in ''|*[!0-9]*|0) echo "vs_nccl.sh: --rounds needs a positive integer" >&2; exit 2 ;; esac
case "$DEADLINE" in ''|*[!0-9]*) echo "vs_nccl.sh: --deadline needs seconds" >&2; exit 2 ;; esac
case "$RANKS" in *[!0-9]*|0) echo "vs_nccl.sh: --ranks needs a positive integer" >&2; exit 2 ;; esac
# shellcheck disable=SC2206 # space-separated lists
OP_LIST=($OPS)
# shellcheck disable=SC2206
SIZE_FLAGS=($SIZES)
[ ${#OP_LIST[@]} -gt 0 ] || { echo "vs_nccl.sh: --ops needs at least one op" >&2; exit 2; }
for op in "${OP_LIST[@]}"; do
    grep -qw -- "$op" <<<"$ALL_OPS" || { echo "vs_nccl.sh: unknown op '$op' (of: $ALL_OPS)" >&2; exit 2; }
done

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

# Under MPS when asked (once): several processes on one GPU only run concurrently under MPS.
if [ "$MPS" = 1 ] && [ -z "${VS_NCCL_UNDER_MPS:-}" ]; then
    export VS_NCCL_UNDER_MPS=1
    exec "$ROOT/scripts/with-mps.sh" "$0" "${ARGS[@]}"
fi

BUILD="${BUILD:-build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
OUT="${OUT:-$BUILD/bench/vs_nccl}"

die() { echo "vs_nccl.sh: error: $*" >&2; exit 1; }

command -v python3 >/dev/null || die "python3 not found"
NGPUS="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)"
[ -n "$RANKS" ] || RANKS="$NGPUS"
[ "$RANKS" -ge 1 ] || die "no GPU found by nvidia-smi -L (and no --ranks)"
NCCL_RUNS=1
if [ "$RANKS" -gt "$NGPUS" ]; then
    NCCL_RUNS=0
    echo "$RANKS ranks on $NGPUS GPUs: NCCL refuses two ranks on one GPU, so only Duet runs (NCCL: n/a)"
    [ "$MPS" = 1 ] || echo "vs_nccl.sh: warning: more ranks than GPUs without --mps: the ranks of one GPU will not run concurrently" >&2
fi
DUET_PERF="$BUILD/bin/duet-perf"
DUETRUN="$BUILD/bin/duetrun"
NCCL_PERF="$BUILD/bench/nccl_perf"
[ -x "$DUET_PERF" ] || die "$DUET_PERF not found: build Duet with CUDA first"
[ -x "$DUETRUN" ] || die "$DUETRUN not found: build Duet first"
mkdir -p "$BUILD/bench" "$OUT/raw"
OUT="$(cd "$OUT" && pwd)"

# ---- NCCL: headers and library (only when it runs)
NCCL_LIB=""
NCCL_LDP="${LD_LIBRARY_PATH:-}"
if [ "$NCCL_RUNS" = 1 ]; then
    NVCC="$(command -v nvcc || true)"
    if [ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ]; then NVCC=/usr/local/cuda/bin/nvcc; fi
    [ -n "$NVCC" ] || die "nvcc not found"
    if [ -z "${NCCL_HOME:-}" ]; then
        NCCL_HOME="$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null || true)"
    fi
    if [ -z "$NCCL_HOME" ] && command -v pip >/dev/null; then
        for pkg in nvidia-nccl-cu13 nvidia-nccl-cu12; do
            loc="$(pip show "$pkg" 2>/dev/null | awk '/^Location:/ { print $2 }')"
            if [ -n "$loc" ] && [ -f "$loc/nvidia/nccl/include/nccl.h" ]; then NCCL_HOME="$loc/nvidia/nccl"; break; fi
        done
    fi
    if [ -z "$NCCL_HOME" ] || [ ! -f "$NCCL_HOME/include/nccl.h" ]; then
        die "NCCL not found (set NCCL_HOME, or pip install nvidia-nccl-cu13)"
    fi
    for lib in "$NCCL_HOME"/lib/libnccl.so "$NCCL_HOME"/lib/libnccl.so.*; do
        if [ -f "$lib" ]; then NCCL_LIB="$lib"; break; fi
    done
    [ -n "$NCCL_LIB" ] || die "no libnccl.so* in $NCCL_HOME/lib"
    echo "NCCL: $NCCL_HOME (library $(basename "$NCCL_LIB"))"
    NCCL_LDP="$NCCL_HOME/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

    # The package ships libnccl.so.2 only: link through a folder of links with the plain name.
    LINKDIR="$BUILD/bench/nccl-link"
    mkdir -p "$LINKDIR"
    ln -sf "$NCCL_LIB" "$LINKDIR/libnccl.so"
    if [ ! -x "$NCCL_PERF" ] || [ "$ROOT/bench/nccl_perf.cu" -nt "$NCCL_PERF" ]; then
        echo "building $NCCL_PERF"
        # shellcheck disable=SC2054 # -rpath,DIR is one argument
        build=("$NVCC" -O2 -arch=sm_90 -I"$NCCL_HOME/include" -o "$NCCL_PERF" "$ROOT/bench/nccl_perf.cu"
               -L"$LINKDIR" -lnccl -Xlinker -rpath,"$NCCL_HOME/lib")
        "${build[@]}" || die "nvcc failed: ${build[*]}"
    fi
fi

# ---- duet-perf's device modes (from its --help); a missing op leaves its Duet rows n/a
DEVICE_MODES="$("$DUET_PERF" --help 2>/dev/null | awk '/^device modes/ { on = 1; next } on && /^[^ ]/ { on = 0 } on { print $1 }')"
[ -n "$DEVICE_MODES" ] || die "$DUET_PERF lists no device modes: build Duet with CUDA"
echo "duet-perf device modes: $(tr '\n' ' ' <<<"$DEVICE_MODES")"

RUN_TIMEOUT=300 # seconds, per run
CSV_HEADER="op,bytes,count,dtype,redop,algo,time_us,algbw_GBps,busbw_GBps,wrong"
FAILED=0

# run LIB OP ROUND: one run, its CSV at raw/LIB_OP_rROUND.csv, its output beside it; a
# failed run leaves raw/LIB_OP_rROUND.failed
run() {
    local lib="$1" op="$2" round="$3"
    local base="$OUT/raw/${lib}_${op}_r${round}"
    local csv="$base.csv" log="$base.log"
    local -a cmd
    rm -f "$csv" "$base.failed"
    printf '  round %s  %-5s %-13s ' "$round" "$lib" "$op"
    if [ "$lib" = nccl ]; then
        if [ "$NCCL_RUNS" = 0 ]; then
            echo "n/a ($RANKS ranks on $NGPUS GPUs)"
            return
        fi
        cmd=(env LD_LIBRARY_PATH="$NCCL_LDP" "$DUETRUN" -n "$RANKS" "$NCCL_PERF" "$op" "${SIZE_FLAGS[@]}" --csv "$csv")
    else
        if ! grep -qxF -- "$op" <<<"$DEVICE_MODES"; then
            echo "n/a (duet-perf has no --device $op)"
            return
        fi
        cmd=("$DUETRUN" -n "$RANKS" "$DUET_PERF" --device "$op" "${SIZE_FLAGS[@]}" --csv "$csv")
    fi
    local rc=0 t0=$SECONDS
    timeout "$RUN_TIMEOUT" "${cmd[@]}" >"$log" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ] || [ ! -s "$csv" ] || [ "$(head -n1 "$csv")" != "$CSV_HEADER" ]; then
        echo "FAILED (exit $rc)"
        { echo "---- command: ${cmd[*]}"; echo "---- last lines of $log:"; tail -n 30 "$log"; } >&2
        [ -f "$csv" ] && mv "$csv" "$csv.bad"
        touch "$base.failed"
        FAILED=1
        return
    fi
    # rows whose wrong column is neither 0 nor -1 (not checked) fail the run
    if awk -F, 'NR > 1 && $10 != 0 && $10 != -1 { bad = 1 } END { exit !bad }' "$csv"; then
        echo "WRONG RESULTS"
        cat "$csv" >&2
        mv "$csv" "$csv.wrong"
        touch "$base.failed"
        FAILED=1
        return
    fi
    echo "ok ($((SECONDS - t0)) s)"
}

echo "rounds: $ROUNDS, ranks: $RANKS on $NGPUS GPUs$([ "$MPS" = 1 ] && echo " under MPS"), ops: ${OP_LIST[*]}"
echo "flags: ${SIZE_FLAGS[*]}; results in $OUT"
DONE=0
for ((r = 1; r <= ROUNDS; r++)); do
    start=$SECONDS
    for op in "${OP_LIST[@]}"; do
        if ((r % 2)); then
            run nccl "$op" "$r"; run duet "$op" "$r"
        else
            run duet "$op" "$r"; run nccl "$op" "$r"
        fi
    done
    DONE=$r
    if ((DEADLINE && r < ROUNDS && SECONDS + (SECONDS - start) > DEADLINE)); then
        echo "stopping after round $r of $ROUNDS: the next would end past --deadline $DEADLINE s"
        break
    fi
done

# ---- statistics: medians over rounds, ratios; table on stdout and as markdown
NCCL_VERSION="$(grep -ho 'NCCL [0-9][0-9.]*' "$OUT"/raw/nccl_*.log 2>/dev/null | head -n1 || true)"
python3 - "$OUT" "$DONE" "$RANKS" "$NGPUS" "$MPS" "${SIZE_FLAGS[*]}" \
    "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n1)" \
    "${NCCL_VERSION:-NCCL (not run)}${NCCL_LIB:+ from $NCCL_LIB}" "${OP_LIST[@]}" <<'PY'
import csv, datetime, os, platform, statistics, sys

out, rounds, ranks, ngpus, mps, flags, gpu, nccl = sys.argv[1:9]
rounds, ops = int(rounds), sys.argv[9:]
LIBS = ("nccl", "duet")

samples = {}  # (lib, op, bytes) -> [(time_us, busbw)]
failed = set()  # (lib, op): some round failed
for lib in LIBS:
    for op in ops:
        for r in range(1, rounds + 1):
            base = os.path.join(out, "raw", f"{lib}_{op}_r{r}")
            if os.path.exists(base + ".failed"):
                failed.add((lib, op))
            if not os.path.exists(base + ".csv"):
                continue
            with open(base + ".csv", newline="") as f:
                for row in csv.DictReader(f):
                    samples.setdefault((lib, op, int(row["bytes"])), []).append(
                        (float(row["time_us"]), float(row["busbw_GBps"])))

def med(lib, op, b, col):
    v = [s[col] for s in samples.get((lib, op, b), [])]
    if not v:
        return None, 1.0, 0
    return statistics.median(v), (max(v) / min(v) if min(v) > 0 else float("inf")), len(v)

def human(b):
    for unit, s in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
        if b >= unit and b % unit == 0:
            return f"{b // unit}{s}"
    return str(b)

def cell(lib, op, x, spread, k, digits=3):
    if x is None:
        return "failed" if (lib, op) in failed else "n/a"
    return f"{x:.{digits}f}" + (f" ({spread:.2f}, {k})" if k != rounds or spread > 1.1 else "")

rows = []
for op in ops:
    sizes = sorted({b for (lib, o, b) in samples if o == op})
    if not sizes:
        c = ["failed" if (lib, op) in failed else "n/a" for lib in LIBS]
        rows.append((op, "-", c[0], c[1], "n/a", c[0], c[1]))
        continue
    for b in sizes:
        nt, nts, ntk = med("nccl", op, b, 0)
        dt, dts, dtk = med("duet", op, b, 0)
        nb, nbs, nbk = med("nccl", op, b, 1)
        db, dbs, dbk = med("duet", op, b, 1)
        ratio = "n/a" if nt is None or dt is None or nt <= 0 else f"{dt / nt:.3f}"
        rows.append((op, human(b), cell("nccl", op, nt, nts, ntk), cell("duet", op, dt, dts, dtk), ratio,
                     cell("nccl", op, nb, nbs, nbk, 2), cell("duet", op, db, dbs, dbk, 2)))

hdr = ("op", "bytes", "NCCL time_us", "Duet time_us", "Duet/NCCL", "NCCL busbw", "Duet busbw")
w = [max(len(str(r[i])) for r in rows + [hdr]) for i in range(len(hdr))]
setup = f"{ranks} ranks on {ngpus} GPUs" + (" under CUDA MPS" if mps == "1" else "")
print()
print(f"medians over {rounds} rounds, {setup}; ratio = time Duet / NCCL (lower is better); busbw in GB/s")
print("  ".join(str(h).ljust(w[i]) for i, h in enumerate(hdr)))
for r in rows:
    print("  ".join(str(c).ljust(w[i]) for i, c in enumerate(r)))

md = os.path.join(out, "vs_nccl.md")
with open(md, "w") as f:
    f.write("# Duet vs NCCL, GPU collectives side by side\n\n")
    f.write(f"- date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}\n")
    f.write(f"- machine: {platform.node()}, {os.cpu_count()} CPUs, GPU {gpu or 'unknown'}; {nccl}\n")
    f.write(f"- command: `bench/vs_nccl.sh --rounds {rounds} --ranks {ranks}{' --mps' if mps == '1' else ''} "
            f"--sizes \"{flags}\"`; {setup} (duetrun -n {ranks}); nccl_perf OP and duet-perf --device OP "
            f"with the same flags, alternating; medians over {rounds} rounds\n")
    f.write("- float32 (sum for allreduce, reduce, reducescatter); bytes: the largest buffer of a rank; "
            "ratio = time Duet / NCCL (lower is better for Duet); busbw in GB/s (nccl-tests' factors); "
            "(x, k): spread max/min over the rounds and the rounds counted, shown when the spread is "
            "over 1.1 or rounds are missing; NCCL n/a: more ranks than GPUs\n\n")
    f.write("| " + " | ".join(hdr) + " |\n")
    f.write("|---|---:|---:|---:|---:|---:|---:|\n")
    for r in rows:
        f.write("| " + " | ".join(r) + " |\n")
print(f"\nwrote {md}")
PY
exit "$FAILED"
