# The GPU proxy's message boxes on the CPU (test_proxy_inbox.c, src/proxy/duet_proxy_inbox.c):
# mp.test_proxy_inbox.<n> over shared memory; net.force.test_proxy_inbox.<n> over the net
# transport (UCX on TCP loopback, label net), only in builds with UCX.
duet_mp_test(test_proxy_inbox RANKS 2 3 5 TIMEOUT 90)
if(DUET_HAVE_UCX)
  foreach(n 2 3)
    add_test(NAME net.force.test_proxy_inbox.${n}
             COMMAND $<TARGET_FILE:duetrun> -n ${n} --timeout 120 $<TARGET_FILE:test_proxy_inbox>)
    set_tests_properties(net.force.test_proxy_inbox.${n} PROPERTIES LABELS net TIMEOUT 150
                         ENVIRONMENT "DUET_NET=force;UCX_TLS=tcp")
  endforeach()
endif()
