# net.* — tests across network namespaces (label net; root and iproute2, else skipped with
# exit 77). Each test makes its own "hosts" with tests/net/netns.sh, addresses nothing else
# and removes them whatever happens (netns.sh says how). ucx_perftest comes from ucx-utils.
find_program(DUET_BASH bash)
if(NOT DUET_BASH)
  return()
endif()

# the harness itself: reachability, hostnames, private /dev/shm, cut and heal, teardown
add_test(NAME net.netns COMMAND ${DUET_BASH} ${CMAKE_CURRENT_LIST_DIR}/test_netns.sh)

# UCX's own put latency and bandwidth between two hosts over TCP on the veth link
add_test(NAME net.ucx_perftest
         COMMAND ${DUET_BASH} ${CMAKE_CURRENT_LIST_DIR}/netns.sh run 2 --
                 ${DUET_BASH} ${CMAKE_CURRENT_LIST_DIR}/test_ucx_perftest.sh)

set_tests_properties(net.netns net.ucx_perftest PROPERTIES LABELS net TIMEOUT 60 SKIP_RETURN_CODE 77)
