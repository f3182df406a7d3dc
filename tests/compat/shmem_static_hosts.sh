#!/bin/sh
# net.force.shmem_static_hosts.2: shmem_static_hosts under DUET_NET=force (every other PE as
# if on another host) must fail, at the put on a global aimed at the other PE, with a message
# that says the global cannot reach a PE on another host — after the heap put and the
# shmem_ptr / shmem_addr_accessible checks passed.
#     sh shmem_static_hosts.sh <duetrun> <shmem_static_hosts>
set -u
out=$(DUET_NET=force UCX_TLS=tcp "${1:?}" -n 2 --timeout 60 "${2:?}" 2>&1)
rc=$?
fail() { echo "FAIL: $*" >&2; echo "$out" >&2; exit 1; }
[ "$rc" -ne 0 ] || fail "the put on a global across hosts did not fail"
echo "$out" | grep -q "shmem_static_hosts: the other PE is not on this host" || fail "the checks before the put did not pass"
echo "$out" | grep -q "static data is shared only between the PEs of one host" || fail "no message saying why"
echo "$out" | grep -q "FAIL" && fail "a check failed"
echo "shmem_static_hosts: refused across hosts, with its message"
