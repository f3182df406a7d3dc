# many_comms.cmake — what independent communicators cost on a GPU (test_gpu_many_comms.c: 32
# of them, idle and after use, and after destroying them), at 2 and 3 ranks. Included by
# tests/CMakeLists.txt only when the CUDA backend is built.
add_executable(test_gpu_many_comms ${CMAKE_CURRENT_LIST_DIR}/test_gpu_many_comms.c)
target_link_libraries(test_gpu_many_comms PRIVATE duet_static)
target_include_directories(test_gpu_many_comms PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
duet_gpu_test(test_gpu_many_comms RANKS 2 3 TIMEOUT 240)
