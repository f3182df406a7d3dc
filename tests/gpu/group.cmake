# group.cmake — duet_group_start/end with GPU buffers (test_gpu_group.c: ring exchanges larger
# than the executor's inboxes, all-to-all by send/recv with unequal sizes, self send/recv,
# groups back to back on one and two streams, allreduces inside a group, mixed host / GPU
# groups refused), at 2, 3 and 4 ranks, with the VMM heap and the cudaIpc fallback
# (DUET_CUDA=ipc). Included by tests/CMakeLists.txt only when the CUDA backend is built.
add_executable(test_gpu_group ${CMAKE_CURRENT_LIST_DIR}/test_gpu_group.c)
target_link_libraries(test_gpu_group PRIVATE duet_static)
target_include_directories(test_gpu_group PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
duet_gpu_test(test_gpu_group RANKS 2 3 4 TIMEOUT 240)
duet_gpu_test(test_gpu_group RANKS 2 3 4 TIMEOUT 240 NAME ipc ENV DUET_CUDA=ipc)
