# OpenSHMEM conformance tests (label compat): tests/compat/shmem_*.c, OpenSHMEM programs run
# under duetrun as compat.<program>.<PEs>. Included by compat/shmem/CMakeLists.txt. Rank
# counts are sampled: every program at 2 PEs (the common case) plus the counts where its
# algorithm changes shape (1 PE, odd counts, 8 PEs for collectives and contention).
set(DUET_SHMEM_TEST_DIR ${CMAKE_SOURCE_DIR}/tests/compat)

# duet_shmem_test(<program> RANKS <n>... [TIMEOUT s] [DUETCC])
#   DUETCC: build it with build/bin/duetcc instead of CMake's own rules (proves the wrapper)
function(duet_shmem_test prog)
  cmake_parse_arguments(T "DUETCC" "TIMEOUT" "RANKS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 60)
  endif()
  set(src ${DUET_SHMEM_TEST_DIR}/${prog}.c)
  if(T_DUETCC)
    set(exe ${CMAKE_CURRENT_BINARY_DIR}/${prog})
    add_custom_command(OUTPUT ${exe}
      COMMAND ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/duetcc -O2 -g -Wall -Wextra -Wshadow -Werror
              -I${DUET_SHMEM_TEST_DIR} -o ${exe} ${src}
      DEPENDS ${src} ${DUET_SHMEM_TEST_DIR}/shmem_test.h duet_shmem duet
              ${CMAKE_SOURCE_DIR}/compat/shmem/duetcc.in
      COMMENT "duetcc ${prog}.c")
    add_custom_target(${prog} ALL DEPENDS ${exe})
  else()
    add_executable(${prog} ${src})
    target_link_libraries(${prog} PRIVATE duet_shmem)
    target_include_directories(${prog} PRIVATE ${DUET_SHMEM_TEST_DIR})
    set(exe $<TARGET_FILE:${prog}>)
  endif()
  foreach(n ${T_RANKS})
    add_test(NAME compat.${prog}.${n}
             COMMAND $<TARGET_FILE:duetrun> -n ${n} --timeout ${T_TIMEOUT} ${exe})
    math(EXPR ctest_timeout "${T_TIMEOUT} + 30")
    set_tests_properties(compat.${prog}.${n} PROPERTIES LABELS compat TIMEOUT ${ctest_timeout})
  endforeach()
endfunction()

duet_shmem_test(shmem_setup RANKS 1 3 DUETCC)       # setup, memory, shmem_ptr, static data
duet_shmem_test(shmem_thread RANKS 4)               # shmem_init_thread: each level as asked
duet_shmem_test(shmem_shared RANKS 1 3)             # SHMEM_TEAM_SHARED: the PEs shmem_ptr reaches
if(DUET_HAVE_UCX) # every other PE over the network: the shared team is part of the world
  add_test(NAME net.force.shmem_shared.4 COMMAND $<TARGET_FILE:duetrun> -n 4 --timeout 60 $<TARGET_FILE:shmem_shared>)
  set_tests_properties(net.force.shmem_shared.4 PROPERTIES LABELS net TIMEOUT 90
                       ENVIRONMENT "DUET_NET=force;UCX_TLS=tcp")
endif()
duet_shmem_test(shmem_static_hosts RANKS 2)         # globals: shmem_ptr and a put on one host
if(DUET_HAVE_UCX) # ... and as across hosts: refused with a message
  add_test(NAME net.force.shmem_static_hosts.2
           COMMAND sh ${DUET_SHMEM_TEST_DIR}/shmem_static_hosts.sh $<TARGET_FILE:duetrun> $<TARGET_FILE:shmem_static_hosts>)
  set_tests_properties(net.force.shmem_static_hosts.2 PROPERTIES LABELS net TIMEOUT 90)
endif()
duet_shmem_test(shmem_rma   RANKS 1 2 5)            # every RMA form, heap and static
duet_shmem_test(shmem_amo   RANKS 2 3 8 TIMEOUT 90) # every AMO; PEs x threads contention, locks
duet_shmem_test(shmem_sync  RANKS 1 2 4)            # wait/test forms, signals, fence
duet_shmem_test(shmem_coll  RANKS 1 2 3 8 TIMEOUT 90) # teams, contexts, team collectives, reductions
duet_shmem_test(shmem_deprecated RANKS 1 3 6 9)     # 1.3 calls, pSync active sets (world, strides 2, 4, 8)

# loud failures: the message names the call; the job ends non-zero
add_executable(shmem_fail ${DUET_SHMEM_TEST_DIR}/shmem_fail.c)
target_link_libraries(shmem_fail PRIVATE duet_shmem)
target_include_directories(shmem_fail PRIVATE ${DUET_SHMEM_TEST_DIR})
function(duet_shmem_fail_test mode regex)
  add_test(NAME compat.shmem_fail.${mode}.2
           COMMAND $<TARGET_FILE:duetrun> -n 2 --timeout 30 $<TARGET_FILE:shmem_fail> ${mode})
  set_tests_properties(compat.shmem_fail.${mode}.2 PROPERTIES LABELS compat TIMEOUT 60
                       PASS_REGULAR_EXPRESSION "${regex}")
endfunction()
duet_shmem_fail_test(stack "shmem_long_put: .*not inside the symmetric heap")
duet_shmem_fail_test(pe "shmem_long_p: .*PE 2 is out of range")
duet_shmem_fail_test(exit "rank [01] .*exited with status 3") # every PE leaves with 3

# shmem.h compiles as C++ (overloads instead of _Generic)
find_program(DUET_SHMEM_CXX NAMES c++ g++ clang++)
if(DUET_SHMEM_CXX)
  add_test(NAME compat.shmem_cxx_header
           COMMAND ${DUET_SHMEM_CXX} -fsyntax-only -Wall -Wextra -Werror
                   -I${CMAKE_SOURCE_DIR}/compat/shmem/include -x c++ ${DUET_SHMEM_TEST_DIR}/shmem_cxx.cc)
  set_tests_properties(compat.shmem_cxx_header PROPERTIES LABELS compat TIMEOUT 60)
  # ... and the same program built by duetcc as C++ (DUETCC_CC) and run: every result checked
  set(cxx_exe ${CMAKE_CURRENT_BINARY_DIR}/shmem_cxx)
  add_custom_command(OUTPUT ${cxx_exe}
    COMMAND ${CMAKE_COMMAND} -E env DUETCC_CC=${DUET_SHMEM_CXX} ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/duetcc
            -O2 -g -Wall -Wextra -Werror -o ${cxx_exe} ${DUET_SHMEM_TEST_DIR}/shmem_cxx.cc
    DEPENDS ${DUET_SHMEM_TEST_DIR}/shmem_cxx.cc duet_shmem duet ${CMAKE_SOURCE_DIR}/compat/shmem/duetcc.in
            ${CMAKE_SOURCE_DIR}/compat/shmem/include/shmem.h ${CMAKE_SOURCE_DIR}/compat/shmem/include/shmem_generic.h
    COMMENT "duetcc (C++) shmem_cxx.cc")
  add_custom_target(shmem_cxx ALL DEPENDS ${cxx_exe})
  foreach(n 1 3)
    add_test(NAME compat.shmem_cxx.${n} COMMAND $<TARGET_FILE:duetrun> -n ${n} --timeout 60 ${cxx_exe})
    set_tests_properties(compat.shmem_cxx.${n} PROPERTIES LABELS compat TIMEOUT 90)
  endforeach()
endif()

# no wait hangs (shmem_ft.c, checked by shmem_ft.sh: every waiting PE prints one line naming
# the call, the address and the cause, within a bound): a PE SIGKILLed under duetrun --ft while
# the others wait on static data and on the heap; a revoked world; DUET_WAIT_TIMEOUT=1
add_executable(shmem_ft ${DUET_SHMEM_TEST_DIR}/shmem_ft.c)
target_link_libraries(shmem_ft PRIVATE duet_shmem)
target_include_directories(shmem_ft PRIVATE ${DUET_SHMEM_TEST_DIR})
# duet_shmem_ft_test(<mode> <PEs> <lines wanted> <regex> [duetrun options...])
function(duet_shmem_ft_test mode n want regex)
  add_test(NAME compat.shmem_ft.${mode}.${n}
           COMMAND sh ${DUET_SHMEM_TEST_DIR}/shmem_ft.sh $<TARGET_FILE:duetrun> $<TARGET_FILE:shmem_ft>
                   ${n} ${mode} ${want} 10 "${regex}" ${ARGN})
  set_tests_properties(compat.shmem_ft.${mode}.${n} PROPERTIES LABELS compat TIMEOUT 60)
  if(mode MATCHES "^timeout")
    set_tests_properties(compat.shmem_ft.${mode}.${n} PROPERTIES ENVIRONMENT "DUET_WAIT_TIMEOUT=1")
  endif()
  if(mode MATCHES "^hang")
    set_tests_properties(compat.shmem_ft.${mode}.${n} PROPERTIES ENVIRONMENT "DUET_WAIT_TIMEOUT=1;DUET_HANG_REPORT_S=0.3")
  endif()
endfunction()
set(died "duet shmem: PE [0-9]+: shmem_long_wait_until[_a-z]*: waiting for .* \\((static data|symmetric heap)\\) .*PEs?( [0-9]+,)* 3 died")
duet_shmem_ft_test(static 4 3 "${died}" --ft)
duet_shmem_ft_test(heap 4 3 "${died}" --ft)
duet_shmem_ft_test(revoke 3 3 "duet shmem: PE [0-9]+: shmem_long_wait_until[_a-z]*: waiting for .*revoked by rank 0.*DUET_ERR_REVOKED" --ft)
duet_shmem_ft_test(timeout 1 1 "duet shmem: PE 0: shmem_long_wait_until: timed out after 1\\.[0-9] s .*waiting for the long at 0x[0-9a-f]+ \\(static data\\) to become == 1")
duet_shmem_ft_test(timeout-heap 1 1 "duet shmem: PE 0: shmem_long_wait_until: waiting for the long at 0x[0-9a-f]+ \\(symmetric heap\\) to become == 1: timed out after 1\\.[0-9] s")
# waits on static data and locks are Duet's own wait loop: the hang report (DUET_HANG_REPORT_S=0.3)
# names them before DUET_WAIT_TIMEOUT=1 ends them
duet_shmem_ft_test(hang-static 1 1 "hang report: the long at 0x[0-9a-f]+ \\(static data\\) to become == 1: waiting")
duet_shmem_ft_test(hang-lock 3 2 "hang report: the lock at 0x[0-9a-f]+ \\(static data, PE 0's copy\\) to serve ticket [12]: waiting")

# corners: shmem_realloc into a full heap (a 4 MiB heap, filled), the 1.3 waits on static ivars
duet_shmem_test(shmem_corners RANKS 1 3)
foreach(n 1 3)
  set_tests_properties(compat.shmem_corners.${n} PROPERTIES ENVIRONMENT "DUET_SYMMETRIC_SIZE=4M")
endforeach()

# ending without shmem_finalize (shmem_init and start_pes programs): prompt, the program's own
# status, nothing left in /dev/shm (shmem_nofinal.sh)
add_executable(shmem_nofinal ${DUET_SHMEM_TEST_DIR}/shmem_nofinal.c)
target_link_libraries(shmem_nofinal PRIVATE duet_shmem)
target_include_directories(shmem_nofinal PRIVATE ${DUET_SHMEM_TEST_DIR})
add_test(NAME compat.shmem_nofinal
         COMMAND sh ${DUET_SHMEM_TEST_DIR}/shmem_nofinal.sh $<TARGET_FILE:duetrun> $<TARGET_FILE:shmem_nofinal>)
set_tests_properties(compat.shmem_nofinal PROPERTIES LABELS compat TIMEOUT 120)

# third-party style: classic OpenSHMEM programs (tests/compat/shmem_thirdparty/, written from
# scratch against the plain 1.3/1.4 API, as published tests and benchmarks are), built with
# build/bin/duetcc exactly as a user would (no flags of ours) and run under duetrun; each
# checks its own results and exits non-zero on an error.
foreach(prog hello pingpong coll_loop atomic_inc)
  set(src ${DUET_SHMEM_TEST_DIR}/shmem_thirdparty/${prog}.c)
  set(exe ${CMAKE_CURRENT_BINARY_DIR}/shmem_thirdparty_${prog})
  add_custom_command(OUTPUT ${exe}
    COMMAND ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/duetcc -O2 -o ${exe} ${src}
    DEPENDS ${src} duet_shmem duet ${CMAKE_SOURCE_DIR}/compat/shmem/duetcc.in
    COMMENT "duetcc shmem_thirdparty/${prog}.c")
  add_custom_target(shmem_thirdparty_${prog} ALL DEPENDS ${exe})
  foreach(n 2 4)
    add_test(NAME compat.shmem_thirdparty.${prog}.${n} COMMAND $<TARGET_FILE:duetrun> -n ${n} --timeout 60 ${exe})
    set_tests_properties(compat.shmem_thirdparty.${prog}.${n} PROPERTIES LABELS compat TIMEOUT 90)
  endforeach()
endforeach()
