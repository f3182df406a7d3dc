# gpu.cmake — oneshot_gpu: the one-shot allreduce of oneshot.c written as a kernel with the device
# API, against duet_allreduce on device buffers of both kinds, symmetric (duet_malloc_device) and
# cudaMalloc (README.md, "On the GPU"). Included by examples/CMakeLists.txt when the CUDA backend
# is built; the test runs on the GPU machine (label gpu): 2 and 3 ranks, 8 B .. 128 KiB, every size
# checked bit for bit (128 KiB: the library's direct kernel on the symmetric buffers).
add_executable(oneshot_gpu ${CMAKE_CURRENT_LIST_DIR}/oneshot_gpu.cu)
target_link_libraries(oneshot_gpu PRIVATE duet)
target_include_directories(oneshot_gpu PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/bench)
target_compile_features(oneshot_gpu PRIVATE cuda_std_17)
if(BUILD_TESTING)
  duet_gpu_test(oneshot_gpu RANKS 2 3 TIMEOUT 120 ARGS -b 8 -e 128K -f 4 -i 20)
endif()
