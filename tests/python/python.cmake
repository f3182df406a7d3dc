# python.cmake — the Python module (python/duet) and its example, under duetrun, mpirun and a
# torchrun environment (tests/python/run.sh; exit 77 = skipped: no python3 with numpy).
add_test(NAME python.duet
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run.sh $<TARGET_FILE:duetrun> $<TARGET_FILE:duet> ${PROJECT_SOURCE_DIR})
set_tests_properties(python.duet PROPERTIES LABELS mp TIMEOUT 600 SKIP_RETURN_CODE 77)
