#!/usr/bin/env bash
# bench/vs_nvshmem.sh — Duet against NVSHMEM, device and host modes, 2 ranks on the GPU machine.
#
#   bench/vs_nvshmem.sh [--rounds R] [--deadline S] [--out DIR] [--no-mps]   (BUILD=build ...)
#
# Finds NVSHMEM (NVSHMEM_HOME, else the nvidia-nvshmem-cu13 Python package: include/ and lib/
# under its nvidia/nvshmem/), builds bench/nvshmem_perf.cu with nvcc -arch=sm_90 -rdc=true into
# $BUILD/bench (again only when the source is newer), then, under CUDA MPS (scripts/with-mps.sh;
# --no-mps when MPS is already up), for each round and mode runs NVSHMEM's nvshmem_perf and
# Duet's duet-perf --device back to back with the same flags, both started by duetrun -n 2
# (which goes first alternates by round), each writing a CSV under DIR/raw. DIR defaults to
# $BUILD/bench/vs_nvshmem. --deadline S: start no round that would end past S seconds from
# the start (the table then counts the rounds done). Then it prints, per (mode, bytes), the median over rounds of each,
# their ratio and the target, and writes the same table as DIR/vs_nvshmem.md.
#
# Modes: pingpong (device p + wait_until round trip), put (device putmem_nbi_block, 16 B ..
# 256 MiB by 16), barrier (host barrier_all) and pquiet (host p + quiet). duet-perf's device
# modes are read from its --help; a mode it lacks gets "n/a" in the Duet column.
# Ratios: time Duet / NVSHMEM (lower is better) for latency rows and puts below 1 MiB;
# bandwidth Duet / NVSHMEM (higher is better) for puts of 1 MiB and more.
# Targets (issue 4 item 7): pingpong <= 0.65, put 256 MiB >= 1.15, barrier <= 0.5,
# pquiet <= 0.6.
#
# Always NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1: never NVLink multicast. A failing run
# (non-zero exit, wrong results, no CSV) prints its log and leaves its row "failed"; the
# script then exits 1 after writing the table.
set -euo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

ROUNDS=5
DEADLINE=0
OUT=""
MPS=1
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS="${2:?--rounds needs a value}"; shift 2 ;;
        --deadline) DEADLINE="${2:?--deadline needs a value}"; shift 2 ;;
        --out) OUT="${2:?--out needs a value}"; shift 2 ;;
        --no-mps) MPS=0; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "vs_nvshmem.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
case "$ROUNDS" in ''|*[!0-9]*|0) echo "vs_nvshmem.sh: --rounds needs a positive integer" >&2; exit 2 ;; esac
case "$DEADLINE" in ''|*[!0-9]*) echo "vs_nvshmem.sh: --deadline needs seconds" >&2; exit 2 ;; esac

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

# Under MPS, unless asked not to (or already re-run under it): several processes on one GPU
# only run concurrently under MPS.
if [ "$MPS" = 1 ] && [ -z "${VS_NVSHMEM_UNDER_MPS:-}" ]; then
    export VS_NVSHMEM_UNDER_MPS=1
    exec "$ROOT/scripts/with-mps.sh" "$0" --rounds "$ROUNDS" --deadline "$DEADLINE" ${OUT:+--out "$OUT"}
fi

BUILD="${BUILD:-build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
OUT="${OUT:-$BUILD/bench/vs_nvshmem}"

die() { echo "vs_nvshmem.sh: error: $*" >&2; exit 1; }

command -v python3 >/dev/null || die "python3 not found"
NVCC="$(command -v nvcc || true)"
if [ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ]; then NVCC=/usr/local/cuda/bin/nvcc; fi
[ -n "$NVCC" ] || die "nvcc not found"
DUET_PERF="$BUILD/bin/duet-perf"
DUETRUN="$BUILD/bin/duetrun"
NVSHMEM_PERF="$BUILD/bench/nvshmem_perf"
[ -x "$DUET_PERF" ] || die "$DUET_PERF not found: build Duet with CUDA first"
[ -x "$DUETRUN" ] || die "$DUETRUN not found: build Duet first"
mkdir -p "$BUILD/bench" "$OUT/raw"
OUT="$(cd "$OUT" && pwd)"

# ---- NVSHMEM: headers, host library, device library, bootstrap plugin
if [ -z "${NVSHMEM_HOME:-}" ]; then
    NVSHMEM_HOME="$(python3 -c 'import nvidia.nvshmem as m, os; print(list(m.__path__)[0])' 2>/dev/null || true)"
fi
if [ -z "$NVSHMEM_HOME" ] && command -v pip >/dev/null; then
    loc="$(pip show nvidia-nvshmem-cu13 2>/dev/null | awk '/^Location:/ { print $2 }')"
    [ -n "$loc" ] && NVSHMEM_HOME="$loc/nvidia/nvshmem"
fi
if [ -z "$NVSHMEM_HOME" ] || [ ! -f "$NVSHMEM_HOME/include/nvshmem.h" ]; then
    die "NVSHMEM not found (set NVSHMEM_HOME, or pip install nvidia-nvshmem-cu13)"
fi
NVLIB="$NVSHMEM_HOME/lib"
HOSTLIB="$(ls "$NVLIB"/libnvshmem_host.so "$NVLIB"/libnvshmem_host.so.* 2>/dev/null | head -n1 || true)"
DEVLIB="$NVLIB/libnvshmem_device.a"
[ -n "$HOSTLIB" ] || die "no libnvshmem_host.so* in $NVLIB"
[ -f "$DEVLIB" ] || die "no libnvshmem_device.a in $NVLIB"
UIDPLUGIN="$(ls "$NVLIB"/nvshmem_bootstrap_uid.so* 2>/dev/null | head -n1 || true)"
[ -n "$UIDPLUGIN" ] || die "no nvshmem_bootstrap_uid.so* in $NVLIB (the unique-id bootstrap plugin)"
export NVSHMEM_BOOTSTRAP_UID_PLUGIN="${NVSHMEM_BOOTSTRAP_UID_PLUGIN:-$UIDPLUGIN}"
export NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME="${NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME:-lo}"
export NVSHMEM_SYMMETRIC_SIZE="${NVSHMEM_SYMMETRIC_SIZE:-1G}"
echo "NVSHMEM: $NVSHMEM_HOME (host library $(basename "$HOSTLIB"), plugin $(basename "$UIDPLUGIN"))"

# The package ships libnvshmem_host.so.3 only: link through a folder of links with the plain names.
LINKDIR="$BUILD/bench/nvshmem-link"
mkdir -p "$LINKDIR"
ln -sf "$HOSTLIB" "$LINKDIR/libnvshmem_host.so"
ln -sf "$DEVLIB" "$LINKDIR/libnvshmem_device.a"
if [ ! -x "$NVSHMEM_PERF" ] || [ "$ROOT/bench/nvshmem_perf.cu" -nt "$NVSHMEM_PERF" ]; then
    echo "building $NVSHMEM_PERF"
    # shellcheck disable=SC2054 # -rpath,DIR is one argument
    build=("$NVCC" -O2 -arch=sm_90 -rdc=true -I"$NVSHMEM_HOME/include" -o "$NVSHMEM_PERF"
           "$ROOT/bench/nvshmem_perf.cu" -L"$LINKDIR" -lnvshmem_host -lnvshmem_device
           -Xlinker -rpath,"$NVLIB")
    if ! "${build[@]}"; then
        echo "vs_nvshmem.sh: retrying with -lcuda -lnvidia-ml" >&2
        "${build[@]}" -L"$(dirname "$NVCC")/../lib64/stubs" -lcuda -lnvidia-ml || die "nvcc failed: ${build[*]}"
    fi
fi
# libraries that nvshmem_perf needs and the loader does not find: look under the Python
# packages beside NVSHMEM's (nvidia/*/lib)
LDP="$NVLIB"
for lib in $(ldd "$NVSHMEM_PERF" 2>/dev/null | awk '/not found/ { print $1 }'); do
    dir="$(dirname "$(ls "$NVSHMEM_HOME"/../*/lib/"$lib" 2>/dev/null | head -n1)" 2>/dev/null || true)"
    [ -n "$dir" ] && [ "$dir" != . ] && LDP="$LDP:$dir"
done
NV_LDP="$LDP${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# ---- duet-perf's device modes (from its --help); a missing mode leaves its Duet rows n/a
DEVICE_MODES="$("$DUET_PERF" --help 2>/dev/null | awk '/^device modes/ { on = 1; next } on && /^[^ ]/ { on = 0 } on { print $1 }')"
duet_mode() { # our mode name -> duet-perf's device mode name, or nothing
    local m
    case "$1" in
        pquiet)
            for m in pquiet p+quiet p_quiet p-quiet pq; do
                grep -qxF -- "$m" <<<"$DEVICE_MODES" && { echo "$m"; return; }
            done
            grep -m1 quiet <<<"$DEVICE_MODES" || true ;;
        *) if grep -qxF -- "$1" <<<"$DEVICE_MODES"; then echo "$1"; fi ;;
    esac
}
echo "duet-perf device modes: $(tr '\n' ' ' <<<"$DEVICE_MODES")"

RUN_TIMEOUT=300 # seconds, per run
MODES=(pingpong put barrier pquiet)
declare -A FLAGS=([pingpong]="-n 10000" [put]="-b 16 -e 256M -f 16 -n 100" [barrier]="-n 10000"
                  [pquiet]="-n 10000")
CSV_HEADER="op,bytes,count,dtype,redop,algo,time_us,algbw_GBps,busbw_GBps,wrong"
FAILED=0

# run LIB MODE ROUND: one run, its CSV at raw/LIB_MODE_rROUND.csv, its output beside it
run() {
    local lib="$1" mode="$2" round="$3"
    local csv="$OUT/raw/${lib}_${mode}_r${round}.csv" log="$OUT/raw/${lib}_${mode}_r${round}.log"
    local -a cmd
    # shellcheck disable=SC2206 # the flags are meant to split
    local -a flags=(${FLAGS[$mode]})
    rm -f "$csv"
    printf '  round %s  %-7s %-9s ' "$round" "$lib" "$mode"
    if [ "$lib" = nvshmem ]; then
        if [ "$NV_OK" = 0 ]; then
            echo "n/a (nvshmem_perf does not start here: see raw/probe*.log)"
            return
        fi
        cmd=(env LD_LIBRARY_PATH="$NV_LDP" "$DUETRUN" -n 2 "$NVSHMEM_PERF" "$mode" "${flags[@]}" --csv "$csv")
    else
        local dm
        dm="$(duet_mode "$mode")"
        if [ -z "$dm" ]; then
            echo "n/a (duet-perf has no --device $mode)"
            return
        fi
        cmd=("$DUETRUN" -n 2 "$DUET_PERF" --device "$dm" "${flags[@]}" --csv "$csv")
    fi
    local rc=0
    timeout "$RUN_TIMEOUT" "${cmd[@]}" >"$log" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ] || [ ! -s "$csv" ] || [ "$(head -n1 "$csv")" != "$CSV_HEADER" ]; then
        echo "FAILED (exit $rc)"
        { echo "---- command: ${cmd[*]}"; echo "---- last lines of $log:"; tail -n 30 "$log"; } >&2
        rm -f "$csv"
        FAILED=1
        return
    fi
    # rows whose wrong column is neither 0 nor -1 (not checked: a mode without a check) fail
    if awk -F, 'NR > 1 && $10 != 0 && $10 != -1 { bad = 1 } END { exit !bad }' "$csv"; then
        echo "WRONG RESULTS"
        cat "$csv" >&2
        mv "$csv" "$csv.wrong"
        FAILED=1
        return
    fi
    echo "ok"
}

# ---- a probe: does NVSHMEM start? The unique-id bootstrap's socket goes over lo unless
# NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME says otherwise; failing that, NVSHMEM's own choice.
probe() {
    env LD_LIBRARY_PATH="$NV_LDP" timeout 120 "$DUETRUN" -n 2 "$NVSHMEM_PERF" pingpong -n 100 -w 5 \
        >"$OUT/raw/$1.log" 2>&1
}
NV_OK=1
if ! probe probe; then
    echo "nvshmem_perf probe failed (NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=${NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME:-}):" >&2
    tail -n 20 "$OUT/raw/probe.log" >&2
    unset NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME
    if ! probe probe2; then
        echo "nvshmem_perf probe failed again (interface left to NVSHMEM); with NVSHMEM_DEBUG=INFO:" >&2
        NVSHMEM_DEBUG=INFO probe probe3 || true
        tail -n 60 "$OUT/raw/probe3.log" >&2
        NV_OK=0
        FAILED=1
    fi
fi
[ "$NV_OK" = 1 ] && echo "nvshmem_perf starts: $(grep -h "^ *pingpong" "$OUT/raw/probe"*.log | tail -n1)"

echo "rounds: $ROUNDS, results in $OUT"
DONE=0
for ((r = 1; r <= ROUNDS; r++)); do
    start=$SECONDS
    for mode in "${MODES[@]}"; do
        if ((r % 2)); then
            run nvshmem "$mode" "$r"; run duet "$mode" "$r"
        else
            run duet "$mode" "$r"; run nvshmem "$mode" "$r"
        fi
    done
    DONE=$r
    if ((DEADLINE && r < ROUNDS && SECONDS + (SECONDS - start) > DEADLINE)); then
        echo "stopping after round $r of $ROUNDS: the next would end past --deadline $DEADLINE s"
        break
    fi
done

# ---- statistics: medians over rounds, ratios, targets; table on stdout and as markdown
python3 - "$OUT" "$DONE" "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n1)" \
    "$(basename "$(dirname "$HOSTLIB")")/$(basename "$HOSTLIB")" "${MODES[@]}" <<'PY'
import csv, datetime, os, platform, statistics, sys

out, rounds, gpu, nvlib, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
MIB = 1 << 20
LATENCY = {"pingpong", "barrier", "pquiet"}
TARGET = {("pingpong", 8): ("<=", 0.65), ("put", 256 * MIB): (">=", 1.15),
          ("barrier", 0): ("<=", 0.5), ("pquiet", 8): ("<=", 0.6)}

samples = {}  # (lib, mode, bytes) -> [(time_us, algbw)]
for lib in ("nvshmem", "duet"):
    for mode in modes:
        for r in range(1, rounds + 1):
            path = os.path.join(out, "raw", f"{lib}_{mode}_r{r}.csv")
            if not os.path.exists(path):
                continue
            with open(path, newline="") as f:
                for row in csv.DictReader(f):
                    samples.setdefault((lib, mode, int(row["bytes"])), []).append(
                        (float(row["time_us"]), float(row["algbw_GBps"])))

def stats(lib, mode, b, col):
    v = [s[col] for s in samples.get((lib, mode, b), [])]
    if not v:
        return None, None, 0
    return statistics.median(v), (max(v) / min(v) if min(v) > 0 else float("inf")), len(v)

def human(b):
    for unit, s in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
        if b >= unit and b % unit == 0:
            return f"{b // unit}{s}"
    return str(b)

rows = []
for mode in modes:
    sizes = sorted({b for (lib, m, b) in samples if m == mode} | {b for (m, b) in TARGET if m == mode})
    for b in sizes:
        by_bw = mode not in LATENCY and b >= MIB
        col = 1 if by_bw else 0
        n, ns, nn = stats("nvshmem", mode, b, col)
        d, ds, dn = stats("duet", mode, b, col)
        ratio = d / n if (n and d is not None) else None
        op, goal = TARGET.get((mode, b), (None, None))
        if goal is None:
            verdict, tgt = "", ""
        elif ratio is None:
            verdict, tgt = "n/a", f"{op} {goal}"
        else:
            ok = ratio <= goal if op == "<=" else ratio >= goal
            verdict, tgt = ("PASS" if ok else "MISS"), f"{op} {goal}"
        fmt = lambda x, s, k: "n/a" if x is None else (f"{x:.3f}" + (f" ({s:.2f}, {k})" if k != rounds or s > 1.1 else ""))
        rows.append((mode, human(b), "GB/s" if by_bw else "time_us", fmt(n, ns, nn), fmt(d, ds, dn),
                     "n/a" if ratio is None else f"{ratio:.3f}", tgt, verdict))

hdr = ("mode", "bytes", "metric", "NVSHMEM", "Duet", "ratio", "target", "result")
w = [max(len(str(r[i])) for r in rows + [hdr]) for i in range(len(hdr))]
print()
print(f"medians over {rounds} rounds, 2 ranks on one GPU under MPS; ratio = Duet / NVSHMEM")
print("  ".join(str(h).ljust(w[i]) for i, h in enumerate(hdr)))
for r in rows:
    print("  ".join(str(c).ljust(w[i]) for i, c in enumerate(r)))

md = os.path.join(out, "vs_nvshmem.md")
with open(md, "w") as f:
    f.write("# Duet vs NVSHMEM, side by side (issue 4, item 7)\n\n")
    f.write(f"- date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}\n")
    f.write(f"- machine: {platform.node()}, {os.cpu_count()} CPUs, GPU {gpu or 'unknown'}; "
            f"NVSHMEM {nvlib}\n")
    f.write(f"- command: `bench/vs_nvshmem.sh --rounds {rounds}`; 2 ranks (duetrun -n 2) on one GPU "
            f"under CUDA MPS; medians over {rounds} rounds, NVSHMEM and Duet alternating\n")
    f.write("- ratio = Duet / NVSHMEM: time for latency rows and puts below 1 MiB (lower is better), "
            "bandwidth (GB/s) for puts of 1 MiB and more (higher is better); "
            "(x, k): spread max/min over the rounds and the rounds counted, shown when the spread "
            "is over 1.1 or rounds are missing\n\n")
    f.write("| " + " | ".join(hdr) + " |\n")
    f.write("|---|---:|---|---:|---:|---:|---|---|\n")
    for r in rows:
        f.write("| " + " | ".join(r) + " |\n")
print(f"\nwrote {md}")
PY
exit "$FAILED"
