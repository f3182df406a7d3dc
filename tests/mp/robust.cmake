# robust.cmake — issue 18's robustness tests: heap calls decided by consensus (test_heap_agree),
# the error state of successful calls and exact messages (test_errstate), stale handles
# (test_stale), counts no buffer can hold (test_huge), the bounds-checking mode (test_bounds);
# issue 22's communicator taken down from another thread while calls run on it
# (test_abort_thread). Included by tests/CMakeLists.txt.
duet_mp_test(test_errstate RANKS 1 2 3 5 TIMEOUT 60)
duet_mp_test(test_stale    RANKS 1 2 3 TIMEOUT 60)
duet_mp_test(test_huge     RANKS 1 2 3 4 5 TIMEOUT 30)
duet_mp_test(test_heap_agree RANKS 1 2 3 4 5 TIMEOUT 60)
duet_mp_test(test_abort_thread RANKS 2 3 4 TIMEOUT 120)
# the bounds-checking mode, on (DUET_CHECK_BOUNDS=1) and off: mp.test_bounds.{on,off}.<n>
foreach(mode on off)
  foreach(n 1 2 3)
    add_test(NAME mp.test_bounds.${mode}.${n}
             COMMAND $<TARGET_FILE:duetrun> -n ${n} --timeout 60 $<TARGET_FILE:test_bounds> ${mode})
    set_tests_properties(mp.test_bounds.${mode}.${n} PROPERTIES LABELS mp TIMEOUT 90)
  endforeach()
endforeach()
