#!/bin/sh
# tools.doc_blocks: every fenced block of README.md and docs/*.md is accounted for: its
# commands are run here as written, or it is the source of an example a test builds (the
# README's first program: example.readme; docs/FAULT_TOLERANCE.md's: example.ft_guide),
# or it is named below with the reason it cannot run here (several hosts, a GPU, a diagram).
# A block that is none of these fails the test, so a new doc example gets a test or a reason.
#
#     sh doc_blocks.sh <source dir> <build dir>
#
# The commands run in a scratch directory that looks like the checkout (every top-level entry
# of the source linked, build -> the build dir), with HOME a scratch directory too, so
# `make install PREFIX=$HOME/duet` and the programs written by the blocks touch neither the
# tree nor the user's home. Each document's "prog.c" is a program of the kind it speaks of.
# Lines that need a launcher this machine lacks (mpirun, srun, torchrun, numpy) are named as
# skipped, not passed.
set -u
src=$(cd "${1:?usage: sh $0 <source dir> <build dir>}" && pwd)
bld=$(cd "${2:?usage: sh $0 <source dir> <build dir>}" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/duet-docs.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

# ---- the blocks: one file each, listed as "doc<TAB>n<TAB>first line"
mkdir -p "$tmp/blocks"
d=0
for doc in README.md docs/*.md; do
    d=$((d + 1))
    (cd "$src" && awk -v doc="$doc" -v out="$tmp/blocks/$d" '
        /^```/ { if (!inb) { inb = 1; n++; first = ""; f = out "_" n; printf "" > f; next }
                 inb = 0; close(f); printf "%s\t%s\t%s\n", doc, f, first; next }
        inb { if (first == "") first = $0; print >> f }' "$doc")
done >"$tmp/index"
[ -s "$tmp/index" ] || { bad "no fenced block found"; exit 1; }

# ---- what each block is: run (the document's commands), example, or skip: why
kind_of() { # doc, first line
    case "$1|$2" in
    "README.md|make run"*) echo "skip: the two set-up commands; CI runs both on every change" ;;
    "README.md|#include <stdio.h>") echo "example: example.readme (it is examples/hello.c)" ;;
    "README.md|cc -Iinclude hello.c"* | "README.md|make install PREFIX"* | "README.md|cc prog.c"* | \
    "README.md|DUET_LIB="* | "README.md|DUET_DEBUG=INFO"* | "README.md|build/bin/duet-sim"*) echo run ;;
    "docs/FAULT_TOLERANCE.md|/* ft_survive.c"*) echo "example: example.ft_guide (it is examples/ft_survive.c)" ;;
    "docs/LAUNCHING.md|build/bin/duetrun -n 4 ./prog"*) echo run ;;
    "docs/MIGRATING_OPENSHMEM.md|cmake -S . -B build"*) echo run ;;
    "docs/MIGRATING_NCCL.md|"*) echo "skip: NCCL programs need a GPU: the gpu label runs nccl_api_test_gpu and nccl_torch" ;;
    "docs/MIGRATING_NVSHMEM.md|"*) echo "skip: NVSHMEM programs need a GPU: the gpu label runs the nvshmem tests" ;;
    "docs/CLUSTER.md|"*) echo "skip: several hosts: net.netns runs two namespace hosts, net.force the net transport" ;;
    "docs/PERF.md|"*) echo "skip: benchmarks whose runs PERF.md records" ;;
    "docs/ARCHITECTURE.md|"* | "docs/NETWORK.md|"*) echo "skip: a diagram or a log excerpt, not a command" ;;
    *) echo "unknown" ;;
    esac
}

# ---- the scratch checkout, and the programs the documents call prog.c
work=$tmp/work
mkdir -p "$work" "$tmp/home"
for e in "$src"/* "$src"/.ci; do
    [ -e "$e" ] || continue
    name=$(basename "$e")
    [ "$name" = build ] || ln -s "$e" "$work/$name"
done
ln -s "$bld" "$work/build"
awk '/^```c$/ { f = 1; next } /^```$/ { if (f) exit } f' "$src/README.md" >"$work/hello.c"
cat >"$tmp/prog_duet.c" <<'EOF'
/* the README's "prog": a program with a collective, so the TUNE log has a line for it */
#include <stdio.h>
#include <duet/duet.h>
int main(void)
{
    if (duet_init() != DUET_OK) { fprintf(stderr, "%s\n", duet_last_error()); return 1; }
    int me = duet_my_pe(), n = duet_n_pes();
    int x = me + 1, sum = 0;
    duet_status_t st = duet_allreduce(&x, &sum, 1, DUET_INT32, DUET_SUM, duet_comm_world(), NULL);
    int ok = st == DUET_OK && sum == n * (n + 1) / 2;
    if (!ok) fprintf(stderr, "rank %d: allreduce %s, sum %d\n", me, duet_status_str(st), sum);
    if (me == 0 && ok) printf("prog: allreduce of %d ranks: %d\n", n, sum);
    return duet_finalize() == DUET_OK && ok ? 0 : 1;
}
EOF
cat >"$tmp/prog_shmem.c" <<'EOF'
/* MIGRATING_OPENSHMEM's "prog.c": an OpenSHMEM program */
#include <stdio.h>
#include <shmem.h>
int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    static long box;
    shmem_long_p(&box, 100 + me, (me + 1) % n);
    shmem_barrier_all();
    int ok = box == 100 + (me + n - 1) % n;
    if (me == 0 && ok) printf("prog: OpenSHMEM ring of %d PEs\n", n);
    shmem_finalize();
    return ok ? 0 : 1;
}
EOF
cat >"$work/my_program.py" <<'EOF'
# the README's installed-Python "my_program.py"
import numpy as np
import duet
duet.init()
w = duet.world()
x = np.full(4, w.rank + 1, dtype=np.int32)
y = np.zeros(4, dtype=np.int32)
w.allreduce(x, y)
assert (y == w.size * (w.size + 1) // 2).all(), y
duet.finalize()
EOF

have() { command -v "$1" >/dev/null 2>&1; }
has_numpy() { python3 -c 'import numpy' >/dev/null 2>&1; }

# A line the environment cannot run: the reason, else nothing.
line_skip() {
    case "$1" in
    cmake\ -S\ .\ -B\ build*) echo "configures the build the tests run in (make test did)" ;;
    mpirun*openssl*) { have mpirun && have openssl; } || echo "no mpirun or no openssl here" ;;
    mpirun*) have mpirun || echo "no mpirun here" ;;
    srun*) have srun || echo "no srun here" ;;
    torchrun*) echo "prog.py: a Python program under torchrun needs PyTorch (python.duet runs a torchrun environment)" ;;
    *python3*) has_numpy || echo "no numpy here (python3-numpy)" ;;
    esac
}

# Runs a block's lines one by one in the scratch checkout, as written (comments and blank
# lines aside); every line must succeed. $2: the prog.c of its document.
run_block() {
    doc=$1 prog=$2 file=$3
    [ -n "$prog" ] && cp "$prog" "$work/prog.c"
    while IFS= read -r line || [ -n "$line" ]; do
        cmd=$(printf '%s' "$line" | sed 's/[[:space:]]#.*$//')
        case "$cmd" in '' | '#'*) continue ;; esac
        why=$(line_skip "$cmd")
        if [ -n "$why" ]; then
            echo "  skipped: $cmd  ($why)"
            continue
        fi
        out=$(cd "$work" && HOME="$tmp/home" PKG_CONFIG_PATH="$tmp/home/duet/lib/pkgconfig" \
              OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
              DUET_WAIT_TIMEOUT=60 \
              timeout 240 sh -c "$cmd" 2>&1 </dev/null)
        rc=$?
        if [ $rc -ne 0 ]; then
            bad "$doc: \`$cmd\` exited $rc:"
            printf '%s\n' "$out" | tail -15 >&2
            continue
        fi
        echo "  ran: $cmd"
        case "$cmd" in # what the line must have shown
        *duetrun*./hello*) printf '%s' "$out" | grep -q "got" || bad "$doc: hello printed no result: $out" ;;
        DUET_DEBUG=INFO*) printf '%s' "$out" | grep -q "\[TUNE\] allreduce 4 bytes int32, 4 ranks.*->" ||
                              bad "$doc: no TUNE line for the allreduce: $(printf '%s' "$out" | head -5)" ;;
        *duet-sim*) printf '%s' "$out" | grep -q "1048576" || bad "$doc: duet-sim printed no million-rank rows" ;;
        *./prog*) printf '%s' "$out" | grep -q "^prog: " || bad "$doc: prog printed no result: $out" ;;
        esac
    done <"$file"
}

# ---- every block: the README's and LAUNCHING's in the order a reader meets them
tab=$(printf '\t')
while IFS="$tab" read -r doc file first; do
    kind=$(kind_of "$doc" "$first")
    case "$kind" in
    run)
        printf "%s: %s\n" "$doc" "$first"
        case "$doc" in
        docs/MIGRATING_OPENSHMEM.md) prog=$tmp/prog_shmem.c ;;
        *) prog=$tmp/prog_duet.c ;;
        esac
        run_block "$doc" "$prog" "$file" ;;
    unknown) bad "$doc: a block neither run, an example, nor skipped with a reason: \"$first\"" ;;
    *) printf "%s: %s  [%s]\n" "$doc" "$first" "$kind" ;;
    esac
done <"$tmp/index"

# the examples named above exist as tests (a rename would leave this script vouching for nothing)
for t in example.readme example.ft_guide; do
    grep -Eq "NAME $t( |$)" "$src/examples/CMakeLists.txt" || bad "no test $t in examples/CMakeLists.txt"
done
[ $fail -eq 0 ] && echo "doc_blocks: every block accounted for"
exit $fail
