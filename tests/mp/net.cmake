# The one-sided tests again with DUET_NET=force (every other rank over the net transport, UCX
# on TCP loopback: docs/NETWORK.md stage 2), as net.force.<test>.<n>, label net (no root
# needed). Only in builds with UCX: elsewhere DUET_NET=force is refused at init. Collectives
# are refused over net peers until stage 5, so the collective tests are not run this way.
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
