# tools.* — tests of the tools' command lines (POSIX sh scripts under tests/tools/, each
# passing or failing by its exit code).
# The layers hold: no #include between folders of src/ against the layer order, public headers
# and compat/ on public headers only (beyond the edges tests/tools/layers_known.txt lists)
add_test(NAME unit.layers COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/layers.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(unit.layers PROPERTIES LABELS unit TIMEOUT 60)

if(NOT TARGET duet-sim)
  return()
endif()

# duet-sim on its own: no ranks are started
add_test(NAME tools.duet_sim COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/duet_sim.sh $<TARGET_FILE:duet-sim>)
set_tests_properties(tools.duet_sim PROPERTIES LABELS unit TIMEOUT 60)

# duet-sim against the tuner itself: the same candidates, times and pick as the TUNE log of
# a real run on 2 and 4 ranks
add_test(NAME tools.duet_sim_tuner
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/duet_sim_tuner.sh $<TARGET_FILE:duet-sim> $<TARGET_FILE:duetrun>
                 $<TARGET_FILE:duet-perf>)
set_tests_properties(tools.duet_sim_tuner PROPERTIES LABELS mp TIMEOUT 120)

# duet-perf --validate: every algorithm forced in one process, predictions beside the medians
add_test(NAME tools.perf_validate
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/perf_validate.sh $<TARGET_FILE:duetrun> $<TARGET_FILE:duet-perf>)
set_tests_properties(tools.perf_validate PROPERTIES LABELS mp TIMEOUT 120)
add_test(NAME tools.perf_calibrate
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/perf_calibrate.sh $<TARGET_FILE:duetrun> $<TARGET_FILE:duet-perf>
                 $<TARGET_FILE:duet-sim>)
set_tests_properties(tools.perf_calibrate PROPERTIES LABELS mp TIMEOUT 150)

# every fenced block of README.md and docs/: its commands run as written, or the example a test
# builds, or a named reason it cannot run here (not in a sanitized build: the documents'
# commands build programs without the sanitizer, which its runtime refuses)
if(NOT DUET_SANITIZE)
  add_test(NAME tools.doc_blocks COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/doc_blocks.sh ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR})
  set_tests_properties(tools.doc_blocks PROPERTIES LABELS mp TIMEOUT 300)
endif()

# the GPU model against an H200's recorded measurements (bench/gpu_model_refit: no GPU needed)
if(TARGET gpu_model_refit)
  add_test(NAME tools.gpu_model_refit
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/gpu_model_refit.sh $<TARGET_FILE:gpu_model_refit> ${PROJECT_SOURCE_DIR})
  set_tests_properties(tools.gpu_model_refit PROPERTIES LABELS unit TIMEOUT 60)
endif()

# make install: into a temporary prefix, moved, then a project outside the tree built against
# it three ways (find_package, pkg-config, duetcc) and run under the installed duetrun
add_test(NAME tools.install
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/install.sh ${CMAKE_BINARY_DIR} ${PROJECT_SOURCE_DIR} ${CMAKE_C_COMPILER})
set_tests_properties(tools.install PROPERTIES LABELS mp TIMEOUT 300)
