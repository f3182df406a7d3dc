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
duet_shmem_test(shmem_rma   RANKS 1 2 5)            # every RMA form, heap and static
duet_shmem_test(shmem_amo   RANKS 2 3 8 TIMEOUT 90) # every AMO; PEs x threads contention, locks
duet_shmem_test(shmem_sync  RANKS 1 2 4)            # wait/test forms, signals, fence
duet_shmem_test(shmem_coll  RANKS 1 2 3 8 TIMEOUT 90) # teams, contexts, team collectives, reductions
duet_shmem_test(shmem_deprecated RANKS 1 3 6)       # 1.3 calls, pSync active sets (world, strided)

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
endif()
