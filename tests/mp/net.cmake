# The one-sided tests again with DUET_NET=force (every other rank over the net transport, UCX
# on TCP loopback: docs/NETWORK.md stages 2 and 5), as net.force.<test>.<n>, label net (no root
# needed). Only in builds with UCX: elsewhere DUET_NET=force is refused at init. The
# collectives over net channels: test_coll with the tuner's choice and with each algorithm
# forced (3 ranks: not a power of two), in the heap (nothing may go by reference to a net
# peer), test_coll_group, test_coll_lane (also forced onto the lane at 4), test_coll_mismatch, test_comm (several
# heaps in turn: each wait progresses every heap's worker), test_stress; the hierarchical
# algorithms on faked hosts (DUET_COLL_RANKS_PER_HOST).
if(NOT DUET_HAVE_UCX)
  return()
endif()
foreach(prog test_rma test_amo test_sync test_net)
  foreach(n 2 3)
    add_test(NAME net.force.${prog}.${n}
             COMMAND $<TARGET_FILE:duetrun> -n ${n} --timeout 120 $<TARGET_FILE:${prog}>)
    set_tests_properties(net.force.${prog}.${n} PROPERTIES LABELS net TIMEOUT 150
                         ENVIRONMENT "DUET_NET=force;UCX_TLS=tcp")
  endforeach()
endforeach()
function(duet_net_force_test_ name prog n)
  cmake_parse_arguments(T "" "" "ENV" ${ARGN})
  add_test(NAME net.force.${name}.${n}
           COMMAND $<TARGET_FILE:duetrun> -n ${n} --timeout 200 -x DUET_WAIT_TIMEOUT=60 $<TARGET_FILE:${prog}>)
  set_tests_properties(net.force.${name}.${n} PROPERTIES LABELS net TIMEOUT 230
                       ENVIRONMENT "DUET_NET=force;UCX_TLS=tcp;${T_ENV}")
endfunction()
foreach(n 2 3 5)
  duet_net_force_test_(test_coll.tuned test_coll ${n})
endforeach()
foreach(algo allreduce:ring allreduce:tree allreduce:dbtree allreduce:rd allreduce:rhd allreduce:oneshot
             allreduce:twoshot broadcast:chain broadcast:tree reduce:chain reduce:tree allgather:ring
             allgather:rd allgather:direct reducescatter:ring reducescatter:rhd reducescatter:direct
             alltoall:pairwise)
  string(REPLACE ":" "-" tag ${algo})
  duet_net_force_test_(test_coll.${tag} test_coll 3 ENV DUET_ALGO=${algo})
endforeach()
duet_net_force_test_(test_coll.heap test_coll 3 ENV TEST_COLL_HEAP=1)
# the hierarchical algorithms over the net transport, hosts of 2 ranks faked for the
# collectives (DUET_COLL_RANKS_PER_HOST): 4 ranks (2 + 2) and 3 (2 + 1, uneven)
foreach(algo allreduce:hring allreduce:hdbtree broadcast:htree reduce:htree)
  string(REPLACE ":" "-" tag ${algo})
  duet_net_force_test_(test_coll.hosts2-${tag} test_coll 4 ENV DUET_ALGO=${algo} DUET_COLL_RANKS_PER_HOST=2)
endforeach()
duet_net_force_test_(test_coll.hosts2-hier test_coll 3 ENV DUET_ALGO=allreduce:hring,broadcast:htree,reduce:htree
                     DUET_COLL_RANKS_PER_HOST=2)
duet_net_force_test_(test_coll_group test_coll_group 3)
duet_net_force_test_(test_coll_lane test_coll_lane 3)
duet_net_force_test_(test_coll_lane.oneshot test_coll_lane 4 ENV DUET_ALGO=allreduce:oneshot)
# mismatched calls with every other rank over the net: caught by the messages' signatures (a
# mismatch that sends a net peer nothing ends at DUET_WAIT_TIMEOUT: test_coll_mismatch's
# cases all send to every rank they involve)
duet_net_force_test_(test_coll_mismatch test_coll_mismatch 2)
duet_net_force_test_(test_coll_mismatch test_coll_mismatch 3)
duet_net_force_test_(test_comm test_comm 3)
duet_net_force_test_(test_stress test_stress 3)
# revoke, agree and shrink with every member over the net transport (duet_comm_ft_net.c's
# consensus, docs/NETWORK.md 2.10): test_ft_ulfm's scenarios under duetrun --ft, ranks that
# really die (SIGKILL) included, one of them during the shrink or the agree; a victim's puts
# complete before it dies (TEST_FT_QUIET_BEFORE_DEATH: UCX 1.13 over TCP, NETWORK.md 4.12)
function(duet_net_force_ft_ name n)
  add_test(NAME net.force.test_ft_ulfm.${name}.${n}
           COMMAND $<TARGET_FILE:duetrun> -n ${n} --ft --timeout 60 $<TARGET_FILE:test_ft_ulfm> ${ARGN})
  set_tests_properties(net.force.test_ft_ulfm.${name}.${n} PROPERTIES LABELS net TIMEOUT 90
                       ENVIRONMENT "DUET_NET=force;UCX_TLS=tcp;TEST_FT_QUIET_BEFORE_DEATH=1")
endfunction()
duet_net_force_ft_(revoke 3 revoke)
duet_net_force_ft_(shrink 4 shrink)
duet_net_force_ft_(chain 4 chain)
duet_net_force_ft_(during 4 during 5)
duet_net_force_ft_(agree-during-before 4 agree-during 7)
duet_net_force_ft_(agree-during-in 4 agree-during 8)
