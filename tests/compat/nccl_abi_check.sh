#!/bin/sh
# nccl_abi_check.sh LIBNCCL — Duet's libnccl.so.2 looks to the loader as NVIDIA's does: SONAME
# libnccl.so.2, no symbol versions defined, and only nccl* / pnccl* functions exported.
set -eu
lib=$1
fail() { echo "nccl_abi_check: FAIL $*" >&2; exit 1; }
readelf -d "$lib" | grep -q 'SONAME.*\[libnccl\.so\.2\]' || fail "SONAME is not libnccl.so.2"
if readelf -S -W "$lib" | grep -q '\.gnu\.version_d'; then fail "the library defines symbol versions"; fi
exports=$(readelf --dyn-syms -W "$lib" | awk '$7 != "UND" && ($4 == "FUNC" || $4 == "OBJECT") && $5 != "LOCAL" {print $8}')
[ -n "$exports" ] || fail "no exports"
bad=$(printf '%s\n' "$exports" | grep -v -E '^p?nccl' || true)
[ -z "$bad" ] || fail "exports outside NCCL's names: $(echo $bad | head -c 300)"
if printf '%s\n' "$exports" | grep -q '@'; then fail "versioned exports"; fi
echo "nccl_abi_check: $(printf '%s\n' "$exports" | wc -l) exports, SONAME libnccl.so.2, unversioned"
