# gpu.cmake — crossover.sh --device: ring against tree for allreduce on GPU buffers (duet-perf
# --device, each algorithm forced, so the GPU executor runs it), against the GPU executor's model
# (its alpha and beta from the TUNE log, duet-sim at the executor's chunk); README.md, "On the
# GPU". Included by examples/CMakeLists.txt when the CUDA backend is built; the test runs on the
# GPU machine (label gpu): 2 ranks, 8 B .. 256 KiB, every measured result checked. The script
# launches duetrun itself, so it is registered with add_test, not duet_gpu_test.
if(BUILD_TESTING)
  add_test(NAME gpu.crossover.2
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/crossover.sh --device -n 2 -e 256K -i 20
           --out ${CMAKE_BINARY_DIR}/crossover-gpu-test)
  set_tests_properties(gpu.crossover.2 PROPERTIES LABELS gpu TIMEOUT 300 ENVIRONMENT "BUILD=${CMAKE_BINARY_DIR}")
endif()
