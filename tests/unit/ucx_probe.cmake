# unit.duet_ucx_probe — UCX initializes here (context, worker, address) and a put, a fetch-add
# and a flush between two workers of one process land as expected (tools/duet-ucx-probe.c).
# Registered only when CMake found UCX (DUET_HAVE_UCX); passes or fails by exit code.
if(NOT TARGET duet-ucx-probe)
  return()
endif()
add_test(NAME unit.duet_ucx_probe COMMAND $<TARGET_FILE:duet-ucx-probe> --loopback)
set_tests_properties(unit.duet_ucx_probe PROPERTIES LABELS unit TIMEOUT 60)

# the same over UCX's TCP transport only: the path the net tests take between namespace
# hosts (RMA emulated with active messages, so the target's progress matters)
add_test(NAME unit.duet_ucx_probe_tcp COMMAND $<TARGET_FILE:duet-ucx-probe> --loopback)
set_tests_properties(unit.duet_ucx_probe_tcp PROPERTIES LABELS unit TIMEOUT 60 ENVIRONMENT UCX_TLS=tcp)
