#!/bin/sh
# tools.install: Duet installs like a library its users know (issue 21, item 1). Installs the
# build into a temporary prefix (cmake --install), moves the prefix elsewhere (relocatable),
# then, from the moved prefix alone:
#   - the files are where docs/ARCHITECTURE.md's list puts them; libduet.so and
#     libduet_shmem.so have versioned sonames; libnccl.so.2 is in lib/duet-nccl/, not lib/;
#   - no installed text file names the build tree or the source tree;
#   - a project outside the tree (tests/tools/install_consumer) builds three ways —
#     find_package(Duet), pkg-config (duet, duet-shmem; and libduet.a with --static), and the
#     installed duetcc — and each program runs under the installed duetrun on 2 ranks and
#     passes its checks, on the installed library;
#   - the Python module runs from the prefix (PYTHONPATH=PREFIX/lib/python, no DUET_LIB), when a
#     python3 with numpy is here;
#   - duet-info and duet-perf run from the prefix.
#     sh install.sh <build dir> <source dir> <C compiler>
set -u
build=$(cd "${1:?usage: sh $0 <build dir> <source dir> <cc>}" && pwd)
src=$(cd "${2:?}" && pwd)
cc=${3:?}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/duet-install.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/first" >"$tmp/install.log" 2>&1 ||
    fail "cmake --install: $(tail -5 "$tmp/install.log")"
mv "$tmp/first" "$tmp/moved" || fail "cannot move the prefix"
p=$tmp/moved
lib=$(cd "$p" && ls -d lib64 lib/*-linux-gnu lib 2>/dev/null | while read -r d; do
    [ -e "$p/$d/libduet.so" ] && { echo "$d"; break; }; done)
[ -n "$lib" ] || fail "no libduet.so under $p/lib*: $(cd "$p" && find . | head -30)"

# where things are
for f in include/duet/duet.h include/duet/duet_cuda.h include/duet/duet_device.cuh include/shmem.h \
         include/duet-nccl/nccl.h "$lib/libduet.a" "$lib/libduet.so.0" "$lib/libduet_shmem.so.1" \
         "$lib/duet-nccl/libnccl.so.2" "$lib/pkgconfig/duet.pc" "$lib/pkgconfig/duet-shmem.pc" \
         "$lib/cmake/Duet/DuetConfig.cmake" "$lib/cmake/Duet/DuetConfigVersion.cmake" \
         bin/duetrun bin/duetcc bin/duet-perf bin/duet-info bin/duet-sim; do
    [ -e "$p/$f" ] || fail "not installed: $f"
done
[ ! -e "$p/$lib/libnccl.so.2" ] || fail "libnccl.so.2 is in $lib/, where it would shadow NVIDIA's"
[ ! -e "$p/include/nccl.h" ] || fail "nccl.h is in include/, where it would shadow NVIDIA's"
for so in libduet.so:libduet.so.0 libduet_shmem.so:libduet_shmem.so.1 duet-nccl/libnccl.so.2:libnccl.so.2; do
    file=${so%%:*} want=${so#*:}
    got=$(readelf -d "$p/$lib/$file" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
    [ "$got" = "$want" ] || fail "$lib/$file: soname '$got', want $want"
done

# a sanitized build (make asan): its programs must be sanitized too (ASan's runtime first)
san=
readelf -d "$p/$lib/libduet.so.0" 2>/dev/null | grep -q "libasan" && san="-fsanitize=address,undefined"

# nothing installed points back at the build or the source tree
leaks=$(grep -rlI -e "$build" -e "$src" "$p" 2>/dev/null)
[ -z "$leaks" ] || fail "installed files name the build or source tree: $leaks"

# 1. find_package(Duet)
cmake -S "$src/tests/tools/install_consumer" -B "$tmp/cm" -DCMAKE_PREFIX_PATH="$p" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_C_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san" >"$tmp/cm.log" 2>&1 || fail "configuring the consumer with find_package(Duet): $(tail -15 "$tmp/cm.log")"
cmake --build "$tmp/cm" >"$tmp/cmb.log" 2>&1 || fail "building the consumer (find_package): $(tail -15 "$tmp/cmb.log")"
# 2. pkg-config, as a Makefile would use it
pc() { PKG_CONFIG_PATH="$p/$lib/pkgconfig" pkg-config "$@"; }
pc --exists duet duet-shmem || fail "pkg-config does not find duet / duet-shmem in $p/$lib/pkgconfig"
[ "$(pc --modversion duet)" = "$(sed -n 's/^project(duet VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")" ] ||
    fail "pkg-config --modversion duet: $(pc --modversion duet)"
mkdir -p "$tmp/pc"
# shellcheck disable=SC2046
"$cc" $san -o "$tmp/pc/consumer" "$src/tests/tools/install_consumer/consumer.c" $(pc --cflags --libs duet) \
    -Wl,-rpath,"$(pc --variable=libdir duet)" 2>"$tmp/pc.log" || fail "cc with pkg-config duet: $(tail -20 "$tmp/pc.log")"
# shellcheck disable=SC2046
"$cc" $san -o "$tmp/pc/consumer_shmem" "$src/tests/tools/install_consumer/consumer_shmem.c" \
    $(pc --cflags --libs duet-shmem) -Wl,-rpath,"$(pc --variable=libdir duet)" 2>"$tmp/pcs.log" ||
    fail "cc with pkg-config duet-shmem: $(tail -20 "$tmp/pcs.log")"
# and the static library, with what pkg-config --static says it needs
libs=$(pc --static --libs duet | sed 's/\(^\| \)-lduet\( \|$\)/ -Wl,-Bstatic -lduet -Wl,-Bdynamic /')
# shellcheck disable=SC2046,SC2086
"$cc" $san -o "$tmp/pc/consumer_static" "$src/tests/tools/install_consumer/consumer.c" $(pc --cflags duet) $libs \
    2>"$tmp/pca.log" || fail "cc with libduet.a and pkg-config --static duet: $(tail -20 "$tmp/pca.log")"
LD_TRACE_LOADED_OBJECTS=1 "$tmp/pc/consumer_static" 2>/dev/null | grep -q "libduet.so" &&
    fail "the program linked with libduet.a still loads libduet.so"
# 3. duetcc from the prefix
mkdir -p "$tmp/cc"
env -u DUETCC_CC "$p/bin/duetcc" -o "$tmp/cc/consumer_shmem" "$src/tests/tools/install_consumer/consumer_shmem.c" \
    2>"$tmp/cc.log" || fail "duetcc (its own compiler): $(tail -20 "$tmp/cc.log")"
"$p/bin/duetcc" --showme | grep -q -e "$build" -e "$src" && fail "duetcc --showme names the build tree"

# every program under the installed duetrun, 2 ranks
for prog in cm/consumer cm/consumer_shmem pc/consumer pc/consumer_shmem pc/consumer_static cc/consumer_shmem; do
    out=$("$p/bin/duetrun" -n 2 --timeout 60 "$tmp/$prog" 2>&1) || fail "$prog under duetrun: $out"
    echo "$out" | grep -q ": ok (2 " || fail "$prog: no ok line: $out"
    # it ran on the installed library, not the build's
    [ "$prog" = pc/consumer_static ] && continue
    where=$(LD_TRACE_LOADED_OBJECTS=1 "$tmp/$prog" 2>/dev/null | grep "libduet.so" | sed 's/.*=> \([^ ]*\).*/\1/')
    case "$where" in "$p"/*) ;; *) fail "$prog loads libduet from '$where', not from $p" ;; esac
done

# the Python module from the prefix, finding the prefix's libduet by itself (not in a
# sanitized build: python itself is not)
for py in python3 /usr/bin/python3; do
    [ -z "$san" ] || break
    command -v "$py" >/dev/null 2>&1 && "$py" -c 'import numpy' >/dev/null 2>&1 || continue
    out=$(env -u DUET_LIB PYTHONPATH="$p/$lib/python" "$p/bin/duetrun" -n 2 --timeout 120 "$py" \
          "$src/tests/python/test_duet.py" 2>&1) || fail "the installed Python module: $out"
    [ "$(echo "$out" | grep -o 'test_duet: rank [0-9]*: PASS' | wc -l)" -eq 2 ] || fail "the installed Python module: $out"
    break
done

# the tools from the prefix
"$p/bin/duet-info" >"$tmp/info" 2>&1 || fail "duet-info from the prefix: $(tail -5 "$tmp/info")"
"$p/bin/duetrun" -n 2 --timeout 60 "$p/bin/duet-perf" allreduce -b 8 -e 64 -n 5 >"$tmp/perf" 2>&1 ||
    fail "duet-perf from the prefix: $(tail -5 "$tmp/perf")"
grep -q "allreduce" "$tmp/perf" || fail "duet-perf from the prefix printed no row: $(cat "$tmp/perf")"
echo "install: ok (prefix moved, $lib; find_package, pkg-config, duetcc)"
