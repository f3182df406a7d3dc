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

# host identity (docs/NETWORK.md 2.2): two ranks of examples/hello on two hosts, started by
# hand; refused at once with the reason where /dev/shm is separate (whatever the host names
# say), accepted as one host where the namespaces share /dev/shm
foreach(mode refused same_hostname shared_shm)
  add_test(NAME net.hosts_${mode}
           COMMAND ${DUET_BASH} ${CMAKE_CURRENT_LIST_DIR}/netns.sh run 2 --
                   ${DUET_BASH} ${CMAKE_CURRENT_LIST_DIR}/test_hosts.sh ${mode} $<TARGET_FILE:hello>)
endforeach()

set_tests_properties(net.netns net.ucx_perftest net.hosts_refused net.hosts_same_hostname net.hosts_shared_shm
                     PROPERTIES LABELS net TIMEOUT 60 SKIP_RETURN_CODE 77)
if(DUET_HAVE_UCX) # with the net transport, only DUET_NET=off still refuses separate hosts
  set_tests_properties(net.hosts_refused net.hosts_same_hostname PROPERTIES ENVIRONMENT "DUET_NET=off")
endif()

# stage 2 (docs/NETWORK.md): the one-sided tests (test_rma, test_amo, test_sync, test_net)
# across namespace hosts over the net transport (UCX on TCP, veth): net.rma.2, one rank on each
# of 2 hosts; net.rma.4, two ranks on each of 2 hosts (shared memory and net peers in one heap);
# net.rma.3, one rank on each of 3 hosts
if(DUET_HAVE_UCX)
  set(onesided $<TARGET_FILE:test_net> $<TARGET_FILE:test_rma> $<TARGET_FILE:test_amo> $<TARGET_FILE:test_sync>)
  foreach(shape "2;1" "2;2" "3;1")
    list(GET shape 0 hosts)
    list(GET shape 1 per_host)
    math(EXPR n "${hosts} * ${per_host}")
    add_test(NAME net.rma.${n}
             COMMAND ${DUET_BASH} ${CMAKE_CURRENT_LIST_DIR}/netns.sh run ${hosts} --
                     ${DUET_BASH} ${CMAKE_CURRENT_LIST_DIR}/run_across_hosts.sh -r ${per_host} ${onesided})
    set_tests_properties(net.rma.${n} PROPERTIES LABELS net TIMEOUT 300 SKIP_RETURN_CODE 77)
  endforeach()
endif()

# stage 5: collectives across namespace hosts (test_coll: every collective, datatype and op
# against a reference, with the tuner's choice; test_coll_lane: the one-shot lane over the
# net): net.coll.4, two ranks on each of 2 hosts (shared memory and net peers in one
# communicator); net.coll.3, one rank on each of 3 hosts
if(DUET_HAVE_UCX)
  foreach(shape "2;2" "3;1")
    list(GET shape 0 hosts)
    list(GET shape 1 per_host)
    math(EXPR n "${hosts} * ${per_host}")
    add_test(NAME net.coll.${n}
             COMMAND ${DUET_BASH} ${CMAKE_CURRENT_LIST_DIR}/netns.sh run ${hosts} --
                     ${DUET_BASH} ${CMAKE_CURRENT_LIST_DIR}/run_across_hosts.sh -r ${per_host}
                     $<TARGET_FILE:test_coll> $<TARGET_FILE:test_coll_lane>)
    set_tests_properties(net.coll.${n} PROPERTIES LABELS net TIMEOUT 400 SKIP_RETURN_CODE 77)
  endforeach()
endif()

# stage 6 (docs/NETWORK.md 2.7): the hierarchical algorithms across namespace hosts, 2 hosts of 2
# ranks (the host map from the real host keys: shared memory inside a host, net between):
# test_coll's allreduce, broadcast and reduce matrices forced to hring / htree (net.coll_hier)
# and to hdbtree (net.coll_hier.dbtree), every element against a reference
if(DUET_HAVE_UCX)
  foreach(variant "coll_hier;allreduce:hring,broadcast:htree,reduce:htree" "coll_hier.dbtree;allreduce:hdbtree")
    list(GET variant 0 name)
    list(GET variant 1 algo)
    add_test(NAME net.${name}
             COMMAND ${DUET_BASH} ${CMAKE_CURRENT_LIST_DIR}/netns.sh run 2 --
                     ${DUET_BASH} ${CMAKE_CURRENT_LIST_DIR}/run_across_hosts.sh -r 2 $<TARGET_FILE:test_coll>)
    set_tests_properties(net.${name} PROPERTIES LABELS net TIMEOUT 300 SKIP_RETURN_CODE 77
                         ENVIRONMENT "DUET_ALGO=${algo}")
  endforeach()
endif()

# stage 7 (docs/NETWORK.md 2.10): failures across hosts, test_ft_detect's scenarios (a rank
# kills itself while the others run allreduces, wait in a barrier, for a signal, in a group, or
# put to it; each survivor checks DUET_ERR_PEER_FAILED naming it within 2 s, then a team of the
# survivors goes on). net.ft_kill.2: one rank on each of 2 hosts (seen through the broken
# connection); net.ft_kill.4: two ranks on each of 2 hosts, the victim sharing its host with a
# survivor; net.ft_stop.2: a rank stopped for 0.3 s is not declared dead; net.ft_cut.3: one rank
# on each of 3 hosts, the victim takes its host's link down first (seen by the heartbeat's
# silence, DUET_FT_NET_TIMEOUT=1)
if(DUET_HAVE_UCX)
  set(kill_scenarios)
  foreach(sc allreduce barrier signal group puts)
    list(APPEND kill_scenarios $<TARGET_FILE:test_ft_detect> ${sc})
  endforeach()
  add_test(NAME net.ft_kill.2
           COMMAND ${DUET_BASH} ${CMAKE_CURRENT_LIST_DIR}/netns.sh run 2 --
                   ${DUET_BASH} ${CMAKE_CURRENT_LIST_DIR}/run_across_hosts.sh -k 1 ${kill_scenarios})
  add_test(NAME net.ft_kill.4
           COMMAND ${DUET_BASH} ${CMAKE_CURRENT_LIST_DIR}/netns.sh run 2 --
                   ${DUET_BASH} ${CMAKE_CURRENT_LIST_DIR}/run_across_hosts.sh -r 2 -k 3 ${kill_scenarios})
  add_test(NAME net.ft_stop.2
           COMMAND ${DUET_BASH} ${CMAKE_CURRENT_LIST_DIR}/netns.sh run 2 --
                   ${DUET_BASH} ${CMAKE_CURRENT_LIST_DIR}/run_across_hosts.sh $<TARGET_FILE:test_ft_detect> sigstop)
  add_test(NAME net.ft_cut.3
           COMMAND ${DUET_BASH} ${CMAKE_CURRENT_LIST_DIR}/netns.sh run 3 --
                   ${DUET_BASH} ${CMAKE_CURRENT_LIST_DIR}/run_across_hosts.sh -k 2 $<TARGET_FILE:test_ft_detect> cut)
  set_tests_properties(net.ft_kill.2 net.ft_kill.4 net.ft_stop.2 net.ft_cut.3 PROPERTIES LABELS net TIMEOUT 300
                       SKIP_RETURN_CODE 77)
  set_tests_properties(net.ft_cut.3 PROPERTIES ENVIRONMENT "DUET_FT_NET_TIMEOUT=1")
endif()

# stage 7, agree and shrink across hosts (duet_comm_ft_net.c, docs/NETWORK.md 2.10), with
# test_ft_ulfm's scenarios checked as on one host: net.ft_ulfm.shrink.4, two ranks on each of 2
# hosts, the last rank dies and the survivors shrink (data kept, puts and allreduces on the new
# communicator); net.ft_ulfm.host.4, both ranks of host 2 die (the second before the agree, during
# it, during a shrink): the survivors on host 1 agree on the same flag and failed set and shrink;
# net.ft_ulfm.3, one rank on each of 3 hosts: a revoke seen by all, then shrink until one is left
if(DUET_HAVE_UCX)
  set(ulfm $<TARGET_FILE:test_ft_ulfm>)
  set(across ${DUET_BASH} ${CMAKE_CURRENT_LIST_DIR}/run_across_hosts.sh)
  add_test(NAME net.ft_ulfm.shrink.4
           COMMAND ${DUET_BASH} ${CMAKE_CURRENT_LIST_DIR}/netns.sh run 2 -- ${across} -r 2 -k 3 ${ulfm} shrink)
  add_test(NAME net.ft_ulfm.host.4
           COMMAND ${DUET_BASH} ${CMAKE_CURRENT_LIST_DIR}/netns.sh run 2 -- ${across} -r 2 -k 2,3
                   ${ulfm} agree-during 7 ${ulfm} agree-during 8 ${ulfm} during 3)
  add_test(NAME net.ft_ulfm.revoke.3
           COMMAND ${DUET_BASH} ${CMAKE_CURRENT_LIST_DIR}/netns.sh run 3 -- ${across} ${ulfm} revoke)
  add_test(NAME net.ft_ulfm.chain.3
           COMMAND ${DUET_BASH} ${CMAKE_CURRENT_LIST_DIR}/netns.sh run 3 -- ${across} -k 1,2 ${ulfm} chain)
  set_tests_properties(net.ft_ulfm.shrink.4 net.ft_ulfm.host.4 net.ft_ulfm.revoke.3 net.ft_ulfm.chain.3
                       PROPERTIES LABELS net TIMEOUT 300 SKIP_RETURN_CODE 77
                       ENVIRONMENT "TEST_FT_QUIET_BEFORE_DEATH=1") # UCX 1.13 over TCP: NETWORK.md 4.12
endif()
