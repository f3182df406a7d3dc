# runtime.cmake — rank counts and timeouts of the runtime tests (heap, teams, stress,
# errors, shared-memory cleanup, bootstrap failures). Included by tests/CMakeLists.txt.
duet_mp_test(test_heap   RANKS 1 2 3 4 5 8 TIMEOUT 60)
duet_mp_test(test_comm   RANKS 1 2 3 4 5 8 TIMEOUT 60)
# duet_ext_group_unique_id: ids for groups of ranks whose secret every member derives (ncclCommSplit's)
duet_mp_test(test_group_id RANKS 1 2 3 5 TIMEOUT 60)
# duet_ext_group_add: a layer's calls in the one group queue (the NCCL API's groups)
duet_mp_test(test_group_layer RANKS 1 2 3 4 TIMEOUT 60)
duet_mp_test(test_stress RANKS 1 2 3 4 5 8 TIMEOUT 60)
duet_mp_test(test_errors RANKS 1 2 3 4 5 8 TIMEOUT 60)
add_test(NAME mp.test_errors.timeouts COMMAND test_errors timeouts) # one process, no launcher
set_tests_properties(mp.test_errors.timeouts PROPERTIES LABELS mp TIMEOUT 60)
duet_mp_test(test_shm_cleanup RANKS 1 2 3 4 5 8 TIMEOUT 30 ARGS normal)

# test_shm_cleanup as a driver: runs its own jobs under duetrun (normal, killed ranks).
add_test(NAME mp.test_shm_cleanup.jobs
         COMMAND test_shm_cleanup --duetrun $<TARGET_FILE:duetrun>)
set_tests_properties(mp.test_shm_cleanup.jobs PROPERTIES LABELS mp TIMEOUT 150)

# names others can list reveal no secret (issue 18 item 3): inotify on /dev/shm during a job
add_test(NAME mp.test_shm_names.jobs
         COMMAND test_shm_names --duetrun $<TARGET_FILE:duetrun>)
set_tests_properties(mp.test_shm_names.jobs PROPERTIES LABELS mp TIMEOUT 120)

# names of a job whose duetrun was SIGKILLed in set-up are removed by the next job; a live
# job's and another user's stay (issue 18 item 13)
add_test(NAME mp.test_shm_reclaim.jobs
         COMMAND test_shm_reclaim --duetrun $<TARGET_FILE:duetrun>)
set_tests_properties(mp.test_shm_reclaim.jobs PROPERTIES LABELS mp TIMEOUT 150)

# the same three, and the heap's and the collectives' tests, with segments made the way
# /dev/shm without O_TMPFILE makes them (by shm_open, named from the start)
foreach(t shm_cleanup shm_names shm_reclaim)
  add_test(NAME mp.test_${t}.named COMMAND test_${t} --duetrun $<TARGET_FILE:duetrun>)
  set_tests_properties(mp.test_${t}.named PROPERTIES LABELS mp TIMEOUT 150 ENVIRONMENT DUET_TEST_SHM_NAMED=1)
endforeach()
foreach(prog test_heap test_coll)
  add_test(NAME mp.${prog}.named.3 COMMAND $<TARGET_FILE:duetrun> -n 3 --timeout 120 $<TARGET_FILE:${prog}>)
  set_tests_properties(mp.${prog}.named.3 PROPERTIES LABELS mp TIMEOUT 150 ENVIRONMENT DUET_TEST_SHM_NAMED=1)
endforeach()

# test_boot forks its own ranks (bootstrap failure modes): a plain process, no duetrun.
add_test(NAME mp.test_boot COMMAND test_boot)
set_tests_properties(mp.test_boot PROPERTIES LABELS mp TIMEOUT 60)

# test_boot_sec forks its own ranks and plays the attacker (issue 18: fake roots, planted
# rendezvous files, fake and idle ranks, a recording relay); a plain process, no duetrun.
add_test(NAME mp.test_boot_sec COMMAND test_boot_sec)
set_tests_properties(mp.test_boot_sec PROPERTIES LABELS mp TIMEOUT 120)
# a group whose set-up fails after its first member listened leaves no socket (DUET_TEST_SPLIT_FAIL)
foreach(n 1 2 3 4)
  add_test(NAME mp.test_split_fail.${n}
           COMMAND $<TARGET_FILE:duetrun> -n ${n} --timeout 60 -x DUET_TEST_SPLIT_FAIL=1 $<TARGET_FILE:test_split_fail>)
  set_tests_properties(mp.test_split_fail.${n} PROPERTIES LABELS mp TIMEOUT 90)
endforeach()
