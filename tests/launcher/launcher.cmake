# launcher.* — tests of duetrun itself (label mp). Each is a POSIX sh script under
# tests/launcher/ (or env_check under duetrun) and passes or fails by its exit code.
if(NOT TARGET duetrun)
  return()
endif()

# Both programs use tests/duet_test.h (its reports show duet_last_error(): Duet is linked).
add_executable(launcher_env_check ${CMAKE_CURRENT_LIST_DIR}/env_check.c)
target_link_libraries(launcher_env_check PRIVATE duet_static)
target_include_directories(launcher_env_check PRIVATE ${CMAKE_CURRENT_LIST_DIR}/..)

# env: what every rank finds in its environment, and the rendezvous over the inherited socket.
# DUET_BOOT_LISTEN_FD in duetrun's own environment must not leak to ranks other than 0.
foreach(n 1 5)
  add_test(NAME launcher.env.${n}
           COMMAND $<TARGET_FILE:duetrun> -np ${n} --timeout 30
                   -x DUET_TEST_SET=a=b -x DUET_TEST_PASSED -x DUET_TEST_EMPTY=
                   $<TARGET_FILE:launcher_env_check> ${n}
                   DUET_TEST_SET=a=b DUET_TEST_PASSED=from-launcher DUET_TEST_EMPTY=)
  set_tests_properties(launcher.env.${n} PROPERTIES LABELS mp TIMEOUT 60
                       ENVIRONMENT "DUET_TEST_PASSED=from-launcher;DUET_BOOT_LISTEN_FD=99")
endforeach()

foreach(t usage fail_exit fail_signal timeout signal_forward tag_output shm_cleanup exec_fail)
  add_test(NAME launcher.${t}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/${t}.sh $<TARGET_FILE:duetrun>)
  set_tests_properties(launcher.${t} PROPERTIES LABELS mp TIMEOUT 60 SKIP_RETURN_CODE 77)
endforeach()

# foreign launchers: torchrun- and Slurm-style environments, and Open MPI's mpirun if present
add_executable(launcher_ring_check ${CMAKE_CURRENT_LIST_DIR}/ring_check.c)
target_link_libraries(launcher_ring_check PRIVATE duet_static)
target_include_directories(launcher_ring_check PRIVATE ${CMAKE_CURRENT_LIST_DIR}/..)
add_test(NAME launcher.foreign
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/foreign.sh $<TARGET_FILE:duetrun> $<TARGET_FILE:launcher_ring_check>)
set_tests_properties(launcher.foreign PROPERTIES LABELS mp TIMEOUT 300)

# issue 18: re-init after finalize and bound listeners under each launcher path (items 11, 2);
# rank 0 dying inside duet_init (item 10)
foreach(prog boot_cycles boot_root_death)
  add_executable(launcher_${prog} ${CMAKE_CURRENT_LIST_DIR}/${prog}.c)
  target_link_libraries(launcher_${prog} PRIVATE duet_static)
  target_include_directories(launcher_${prog} PRIVATE ${CMAKE_CURRENT_LIST_DIR}/..)
endforeach()
add_test(NAME launcher.boot_cycles
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/boot_cycles.sh $<TARGET_FILE:duetrun> $<TARGET_FILE:launcher_boot_cycles>)
set_tests_properties(launcher.boot_cycles PROPERTIES LABELS "mp;launcher" TIMEOUT 300)
add_test(NAME launcher.boot_root_death
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/boot_root_death.sh $<TARGET_FILE:duetrun>
                 $<TARGET_FILE:launcher_boot_root_death>)
set_tests_properties(launcher.boot_root_death PROPERTIES LABELS "ft;launcher" TIMEOUT 200)
