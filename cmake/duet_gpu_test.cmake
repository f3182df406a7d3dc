# duet_gpu_test — registers a GPU test (label gpu: `make test-gpu`); used by tests/gpu/*.cmake
# and the examples' GPU variants.
# duet_gpu_test(<program> RANKS <n>... [FT] [TIMEOUT s] [NAME suffix] [ENV VAR=value...] [ARGS ...])
# registers gpu.<program>[.<suffix>].<n> running `duetrun -n <n> --timeout <s> <program> <args>`
# (with FT: `duetrun --ft`, a rank may die and the others go on).
function(duet_gpu_test prog)
  cmake_parse_arguments(T "FT" "TIMEOUT;NAME" "RANKS;ARGS;ENV" ${ARGN})
  set(ft_flag)
  if(T_FT)
    set(ft_flag --ft)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  set(base gpu.${prog})
  if(T_NAME)
    set(base ${base}.${T_NAME})
  endif()
  foreach(n ${T_RANKS})
    add_test(NAME ${base}.${n}
             COMMAND $<TARGET_FILE:duetrun> -n ${n} ${ft_flag} --timeout ${T_TIMEOUT} $<TARGET_FILE:${prog}> ${T_ARGS})
    math(EXPR ctest_timeout "${T_TIMEOUT} + 30")
    set_tests_properties(${base}.${n} PROPERTIES LABELS gpu TIMEOUT ${ctest_timeout})
    if(T_ENV)
      set_tests_properties(${base}.${n} PROPERTIES ENVIRONMENT "${T_ENV}")
    endif()
  endforeach()
endfunction()
