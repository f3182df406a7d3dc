#!/usr/bin/env bash
# bench/vs_mpi.sh — Duet's collectives against Open MPI's, side by side.
#
#   bench/vs_mpi.sh [--rounds R] [--ranks "2 4"] [--out DIR] [--mpi-only]
#                                                        (BUILD=build-perf to pick a build)
#
# Builds bench/mpi_coll_perf.c with mpicc into $BUILD/bench, then for each rank count, each
# round and each mode (allreduce, broadcast, allgather, reducescatter) runs MPI's
# mpi_coll_perf and Duet's duet-perf back to back with the same flags (so that both see
# the same machine load; which goes first alternates by round), each writing a CSV under
# DIR/raw. DIR defaults to $BUILD/bench/vs_mpi. Then it prints, per (ranks, mode, bytes),
# the median over rounds of time and algbw for each and their ratios, checks the targets,
# and writes the same table as DIR/vs_mpi.md. --mpi-only skips Duet (no targets).
#
# Both programs get: MODE -b 8 -e 64M -f 4 -n 1000 -w 100 -V 512M -d float
# [-o sum] --csv FILE (sizes 8 B .. 32 MiB; nccl-tests' size conventions: allgather's bytes
# are the total received, reducescatter's the total sent; -V caps a size's timed loop at
# 512 MiB moved: at R=3, ranks 2 and 4 on the 2-core machine the MPI half alone took 2m09s
# with a load average of 4 to 11 from other work (2026-11-29); the whole script takes about
# twice that, less on an idle machine).
# Duet: $BUILD/bin/duetrun -n N $BUILD/bin/duet-perf ...; MPI: mpirun -np N, bound like
# duetrun binds (rank r on CPU r while ranks <= CPUs: --bind-to core; else --bind-to none,
# with --oversubscribe). duet-perf -h must list the four modes, or the script stops.
#
# Ratios are duet/mpi: time (lower is better for Duet) and algbw (higher is better).
# Targets, per rank count:
#   allreduce 8 B time ratio <= 0.5;
#   algbw ratio at >= 8 MiB (median over those sizes of the per-size ratio of medians):
#   allreduce >= 2, reducescatter >= 2, broadcast >= 1.2, allgather >= 1.2.
#
# Any failing run (non-zero exit, wrong results, missing CSV) stops the script with its log.
set -euo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

ROUNDS=3
RANKS="2 4"
OUT=""
MPI_ONLY=0
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS="${2:?--rounds needs a value}"; shift 2 ;;
        --ranks) RANKS="${2:?--ranks needs a value}"; shift 2 ;;
        --out) OUT="${2:?--out needs a value}"; shift 2 ;;
        --mpi-only) MPI_ONLY=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "vs_mpi.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
case "$ROUNDS" in ''|*[!0-9]*|0) echo "vs_mpi.sh: --rounds needs a positive integer" >&2; exit 2 ;; esac
# shellcheck disable=SC2206 # a space-separated list
RANK_LIST=($RANKS)
[ ${#RANK_LIST[@]} -gt 0 ] || { echo "vs_mpi.sh: --ranks needs at least one rank count" >&2; exit 2; }
for n in "${RANK_LIST[@]}"; do
    case "$n" in ''|*[!0-9]*|0|1) echo "vs_mpi.sh: rank counts must be integers >= 2 (got '$n')" >&2; exit 2 ;; esac
done

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BUILD:-build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
OUT="${OUT:-$BUILD/bench/vs_mpi}"

die() { echo "vs_mpi.sh: error: $*" >&2; exit 1; }

command -v mpicc >/dev/null || die "mpicc not found (install Open MPI)"
command -v mpirun >/dev/null || die "mpirun not found"
command -v python3 >/dev/null || die "python3 not found"
MPI_PERF="$BUILD/bench/mpi_coll_perf"
DUET_PERF="$BUILD/bin/duet-perf"
DUETRUN="$BUILD/bin/duetrun"
MODES=(allreduce broadcast allgather reducescatter)
if [ "$MPI_ONLY" = 0 ]; then
    [ -x "$DUET_PERF" ] || die "$DUET_PERF not found: build Duet first (make, or cmake --build $BUILD)"
    [ -x "$DUETRUN" ] || die "$DUETRUN not found: build Duet first (make, or cmake --build $BUILD)"
    # duet-perf -h runs without a launcher and lists its modes, one per line
    for mode in "${MODES[@]}"; do
        "$DUET_PERF" -h 2>&1 | grep -Eq "^[[:space:]]+$mode([[:space:]]|\$)" ||
            die "$DUET_PERF has no '$mode' mode (yet?); rebuild Duet, or run with --mpi-only"
    done
fi
mkdir -p "$BUILD/bench" "$OUT/raw"
OUT="$(cd "$OUT" && pwd)"
echo "building $MPI_PERF"
mpicc -O2 -o "$MPI_PERF" "$ROOT/bench/mpi_coll_perf.c" || die "mpicc failed"

NCPU="$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc)"
RUN_TIMEOUT=600 # seconds, per run

# the flags both programs get; reducing modes add -o sum
COMMON_FLAGS=(-b 8 -e 64M -f 4 -n 1000 -w 100 -V 512M -d float)
declare -A MODE_FLAGS=([allreduce]="-o sum" [broadcast]="" [allgather]="" [reducescatter]="-o sum")

CSV_HEADER="op,bytes,count,dtype,redop,algo,time_us,algbw_GBps,busbw_GBps,wrong"

# run LIB RANKS MODE ROUND: one run, its CSV at raw/LIB_nRANKS_MODE_rROUND.csv, its output beside it
run() {
    local lib="$1" n="$2" mode="$3" round="$4"
    local base="$OUT/raw/${lib}_n${n}_${mode}_r${round}"
    local csv="$base.csv" log="$base.log"
    local -a cmd mpirun_cmd
    # shellcheck disable=SC2206 # the flags are meant to split
    local -a flags=("$mode" "${COMMON_FLAGS[@]}" ${MODE_FLAGS[$mode]} --csv "$csv")
    if [ "$lib" = mpi ]; then
        mpirun_cmd=(mpirun -np "$n")
        [ "$(id -u)" = 0 ] && mpirun_cmd+=(--allow-run-as-root)
        # bind as duetrun does: rank r on CPU r while ranks <= CPUs, unbound otherwise
        if [ "$n" -le "$NCPU" ]; then mpirun_cmd+=(--bind-to core)
        else mpirun_cmd+=(--oversubscribe --bind-to none); fi
        cmd=("${mpirun_cmd[@]}" "$MPI_PERF" "${flags[@]}")
    else
        cmd=("$DUETRUN" -n "$n" "$DUET_PERF" "${flags[@]}")
    fi
    rm -f "$csv"
    printf '  ranks %s  round %s  %-4s %-13s ' "$n" "$round" "$lib" "$mode"
    local rc=0 t0=$SECONDS
    timeout "$RUN_TIMEOUT" "${cmd[@]}" >"$log" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ] || [ ! -s "$csv" ] || [ "$(head -n1 "$csv")" != "$CSV_HEADER" ]; then
        echo "FAILED"
        echo "---- command: ${cmd[*]}" >&2
        echo "---- exit status $rc; last lines of $log:" >&2
        tail -n 30 "$log" >&2
        [ -s "$csv" ] && { echo "---- $csv:" >&2; cat "$csv" >&2; }
        die "$lib $mode on $n ranks (round $round) failed"
    fi
    # rows whose wrong column is not 0 fail the run too
    if awk -F, 'NR > 1 && $10 != 0 { bad = 1 } END { exit !bad }' "$csv"; then
        echo "WRONG RESULTS"
        cat "$csv" >&2
        die "$lib $mode on $n ranks (round $round) reported wrong results"
    fi
    echo "ok ($((SECONDS - t0)) s)"
}

LIBS=(mpi duet)
[ "$MPI_ONLY" = 1 ] && LIBS=(mpi)
LOAD_START="$(cut -d" " -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
echo "rounds: $ROUNDS, ranks: ${RANK_LIST[*]}, libraries: ${LIBS[*]}, results in $OUT"
echo "load average at start: $LOAD_START (other work on the machine skews both sides)"
# Odd rounds run MPI first, even rounds Duet first: on the 2-core machine whichever runs
# second in a pair was measured up to 30% slower for small operations (vs_oshmem.sh), so a
# fixed order would bias the ratio.
for n in "${RANK_LIST[@]}"; do
    for ((r = 1; r <= ROUNDS; r++)); do
        for mode in "${MODES[@]}"; do
            if [ "$MPI_ONLY" = 1 ]; then
                run mpi "$n" "$mode" "$r"
            elif ((r % 2)); then
                run mpi "$n" "$mode" "$r"; run duet "$n" "$mode" "$r"
            else
                run duet "$n" "$mode" "$r"; run mpi "$n" "$mode" "$r"
            fi
        done
    done
done

# ---- statistics: medians over rounds, ratios, targets; table on stdout and as markdown
CMDLINE="bench/vs_mpi.sh --rounds $ROUNDS --ranks \"${RANK_LIST[*]}\""
[ "$MPI_ONLY" = 1 ] && CMDLINE+=" --mpi-only"
python3 - "$OUT" "$ROUNDS" "$MPI_ONLY" "$CMDLINE" "${COMMON_FLAGS[*]}" "${RANK_LIST[*]}" \
    "$LOAD_START" "${MODES[@]}" <<'PY'
import csv, datetime, math, os, platform, statistics, sys

out, rounds, mpi_only, cmdline, flags = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", \
    sys.argv[4], sys.argv[5]
ranks = [int(n) for n in sys.argv[6].split()]
load_start = sys.argv[7]
modes = sys.argv[8:]
libs = ("mpi",) if mpi_only else ("mpi", "duet")
MIB = 1 << 20
BIG = 8 * MIB
NAN = float("nan")

# samples[(lib, ranks, mode, bytes)] = list of (time_us, algbw) over rounds (a size that
# nccl-tests' rounding maps twice onto the same bytes contributes twice per round)
samples = {}
for lib in libs:
    for n in ranks:
        for mode in modes:
            for r in range(1, rounds + 1):
                path = os.path.join(out, "raw", f"{lib}_n{n}_{mode}_r{r}.csv")
                with open(path, newline="") as f:
                    for row in csv.DictReader(f):
                        key = (lib, n, mode, int(row["bytes"]))
                        samples.setdefault(key, []).append(
                            (float(row["time_us"]), float(row["algbw_GBps"])))

def stats(lib, n, mode, b):
    """(median time, median algbw, max/min of time) over the rounds."""
    vals = samples.get((lib, n, mode, b))
    if not vals or len(vals) < rounds:
        sys.exit(f"vs_mpi.sh: {lib} {mode} {b} B on {n} ranks has {len(vals or [])} of "
                 f"{rounds} rounds")
    t = [v[0] for v in vals]
    return (statistics.median(t), statistics.median(v[1] for v in vals),
            max(t) / min(t) if min(t) > 0 else NAN)

def ratio(a, b):
    return a / b if b > 0 else NAN

rows, unmatched = [], []
big_bw = {}  # (n, mode) -> per-size algbw ratios at >= 8 MiB
lat8 = {}    # n -> allreduce 8 B time ratio
for n in ranks:
    for mode in modes:
        sizes = {lib: {b for (l, k, m, b) in samples if (l, k, m) == (lib, n, mode)}
                 for lib in libs}
        common = sorted(set.intersection(*sizes.values()))
        for lib in libs:
            extra = sorted(sizes[lib] - set(common))
            if extra:
                unmatched.append(f"{n} ranks {mode}: sizes only {lib} reported: {extra}")
        for b in common:
            mt, mbw, ms = stats("mpi", n, mode, b)
            if mpi_only:
                rows.append((n, mode, b, mt, ms, NAN, NAN, NAN, mbw, NAN, NAN))
                continue
            dt, dbw, ds = stats("duet", n, mode, b)
            tr, br = ratio(dt, mt), ratio(dbw, mbw)
            rows.append((n, mode, b, mt, ms, dt, ds, tr, mbw, dbw, br))
            if b >= BIG:
                big_bw.setdefault((n, mode), []).append(br)
            if mode == "allreduce" and b == 8:
                lat8[n] = tr

targets = []  # (ranks, name, value, op, goal)
if not mpi_only:
    for n in ranks:
        targets.append((n, "allreduce 8 B time ratio", lat8.get(n, NAN), "<=", 0.5))
        for mode, goal in (("allreduce", 2.0), ("reducescatter", 2.0), ("broadcast", 1.2),
                           ("allgather", 1.2)):
            v = big_bw.get((n, mode))
            targets.append((n, f"{mode} algbw ratio at >= 8 MiB", statistics.median(v)
                            if v else NAN, ">=", goal))

def verdict(v, op, goal):
    if math.isnan(v):
        return "MISS (no data)"
    return "PASS" if (v <= goal if op == "<=" else v >= goal) else "MISS"

def human(b):
    for unit, s in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
        if b >= unit and b % unit == 0:
            return f"{b // unit}{s}"
    return str(b)

def num(v, digits=3):
    return "-" if math.isnan(v) else f"{v:.{digits}f}"

hdr = ("ranks", "mode", "bytes", "mpi us", "max/min", "duet us", "max/min", "time ratio",
       "mpi GB/s", "duet GB/s", "bw ratio")
fmt = "{:>5} {:<13} {:>6} {:>11} {:>7} {:>11} {:>7} {:>10} {:>9} {:>9} {:>8}"
def cells(r):
    n, mode, b, mt, ms, dt, ds, tr, mbw, dbw, br = r
    return (str(n), mode, human(b), num(mt), num(ms, 2), num(dt), num(ds, 2), num(tr),
            num(mbw), num(dbw), num(br))

print()
print(f"medians over {rounds} rounds; ratios are duet/mpi (time: lower is better for Duet, "
      "bw: higher); max/min = spread of time over the rounds")
print(fmt.format(*hdr))
for r in rows:
    print(fmt.format(*cells(r)))
for u in unmatched:
    print(f"warning: {u}")
if targets:
    print()
    print("targets:")
    for n, name, v, op, goal in targets:
        print(f"  {verdict(v, op, goal):<5} {n} ranks: {name} = {num(v)} (target {op} {goal})")

try:
    load_end = " ".join(open("/proc/loadavg").read().split()[:3])
except OSError:
    load_end = "unknown"
print(f"load average at end: {load_end}")
try:
    cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
except (OSError, StopIteration):
    cpu = platform.processor() or "unknown"
path = os.path.join(out, "vs_mpi.md")
with open(path, "w") as f:
    f.write("# Duet vs Open MPI, collectives\n\n" if not mpi_only else
            "# Open MPI collectives (Duet not run: --mpi-only)\n\n")
    f.write(f"- date: {datetime.datetime.now().isoformat(timespec='seconds')}\n")
    f.write(f"- machine: {platform.node()}, {os.cpu_count()} CPUs, {cpu}\n")
    f.write(f"- load average (1, 5, 15 min) at start: {load_start}; at end: {load_end}\n")
    f.write(f"- command: `{cmdline}`; ranks {', '.join(map(str, ranks))}; medians over "
            f"{rounds} rounds" + ("" if mpi_only else ", MPI and Duet alternating") + "\n")
    f.write(f"- both programs: `MODE {flags} [-o sum]`; bytes as nccl-tests: allgather = total "
            "received, reducescatter = total sent\n")
    f.write("- ratios = duet/mpi: time (lower is better for Duet), algbw (higher is better); "
            "max/min = spread of time over the rounds\n\n")
    f.write("| " + " | ".join(hdr) + " |\n")
    f.write("|" + "|".join(["---:", "---", "---:"] + ["---:"] * 8) + "|\n")
    for r in rows:
        f.write("| " + " | ".join(cells(r)) + " |\n")
    for u in unmatched:
        f.write(f"\nwarning: {u}\n")
    if targets:
        f.write("\n## Targets\n\n| ranks | target | value | goal | result |\n"
                "|---:|---|---:|---|---|\n")
        for n, name, v, op, goal in targets:
            f.write(f"| {n} | {name} | {num(v)} | {op} {goal} | {verdict(v, op, goal)} |\n")
print(f"\nwrote {path}")
PY
